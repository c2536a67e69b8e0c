/*
 * runtime/staging.c — host staging buffers: the host memory that device
 * data passes through on its way to or from the network. They come from
 * the backend's host memory (malloc_host: plain memory on the sim, pinned
 * memory for DMA on a real NPU) and are pooled: a buffer of up to
 * RDEV_RT_STAGING_CHUNK bytes goes back to a free list that keeps at most
 * RT_STAGING_KEEP bytes idle, so that a steady stream of chunks reuses
 * memory instead of mapping and faulting in fresh pages (or pinning them,
 * which costs far more) for each one.
 */
#include <stdlib.h>

#include "rt_internal.h"

#define RT_STAGING_KEEP ((size_t)32 << 20)
#define HEAD 64 /* before the data: keeps it 64-byte aligned */

typedef union rt_staging_head {
  struct {
    union rt_staging_head *next; /* while idle */
    rdev_rt_t *rt;
    size_t cap;
  } h;
  char pad[HEAD];
} head_t;

_Static_assert(sizeof(head_t) == HEAD, "staging head");

void rt_staging_init(rdev_rt_t *rt) { pthread_mutex_init(&rt->staging.mu, NULL); }

void *rdev_rt_staging_get(rdev_rt_t *rt, size_t n) {
  rt_clear_error();
  if (!rt) return NULL;
  size_t cap = n <= RDEV_RT_STAGING_CHUNK ? RDEV_RT_STAGING_CHUNK : n;
  if (cap > SIZE_MAX - HEAD) return NULL;
  rt_staging_t *st = &rt->staging;
  head_t *b = NULL;
  pthread_mutex_lock(&st->mu);
  if (cap == RDEV_RT_STAGING_CHUNK && (b = st->idle)) {
    st->idle = b->h.next;
    st->nidle--;
  }
  st->lent++;
  pthread_mutex_unlock(&st->mu);
  if (!b && rt->be->malloc_host(rt->impl, (void **)&b, HEAD + cap) != RDEV_OK) {
    pthread_mutex_lock(&st->mu);
    st->lent--;
    pthread_mutex_unlock(&st->mu);
    return NULL;
  }
  b->h.rt = rt;
  b->h.cap = cap;
  return b->pad + HEAD;
}

void rdev_rt_staging_put(void *p) {
  if (!p) return;
  head_t *b = (head_t *)((char *)p - HEAD);
  rdev_rt_t *rt = b->h.rt;
  rt_staging_t *st = &rt->staging;
  pthread_mutex_lock(&st->mu);
  int keep = b->h.cap == RDEV_RT_STAGING_CHUNK && (size_t)(st->nidle + 1) * RDEV_RT_STAGING_CHUNK <= RT_STAGING_KEEP;
  if (keep) {
    b->h.next = st->idle;
    st->idle = b;
    st->nidle++;
  }
  pthread_mutex_unlock(&st->mu);
  if (!keep) rt->be->free_host(rt->impl, b);
  pthread_mutex_lock(&st->mu);
  st->lent--; /* last: rdev_rt_close may go on once it reads 0 */
  pthread_mutex_unlock(&st->mu);
}

size_t rdev_rt_staging_lent(rdev_rt_t *rt) {
  if (!rt) return 0;
  pthread_mutex_lock(&rt->staging.mu);
  size_t n = rt->staging.lent;
  pthread_mutex_unlock(&rt->staging.mu);
  return n;
}

void rt_staging_close(rdev_rt_t *rt) {
  rt_staging_t *st = &rt->staging;
  pthread_mutex_lock(&st->mu);
  while (st->idle) {
    head_t *b = st->idle;
    st->idle = b->h.next;
    rt->be->free_host(rt->impl, b);
  }
  st->nidle = 0;
  pthread_mutex_unlock(&st->mu);
  pthread_mutex_destroy(&st->mu);
}
