/*
 * server/pool.c — staging buffers for Read data on its way out (async
 * Reads, and synchronous ones the device cannot show in place). A
 * chunk-sized buffer is reused from a small free list instead of being
 * mapped and faulted in afresh for every chunk (glibc hands out blocks this
 * large with mmap, and touching fresh pages costs more than the copy
 * itself). The list keeps at most SRV_POOL_KEEP buffers, so idle
 * memory stays bounded.
 */
#include <stdlib.h>

#include "srv.h"

#define SRV_POOL_KEEP ((int)((32u << 20) / RDEV_WIRE_MAX_CHUNK)) /* idle buffers kept: 32 MiB */
#define HEAD 64                                                  /* keeps the data 64-byte aligned */

typedef union pool_buf {
  union pool_buf *next; /* while idle */
  size_t cap;           /* while lent */
  char pad[HEAD];
} pool_head_t;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_head_t *pool_idle;
static int pool_nidle;

void *srv_buf_get(size_t n) {
  size_t cap = n <= RDEV_WIRE_MAX_CHUNK ? RDEV_WIRE_MAX_CHUNK : n;
  pool_head_t *h = NULL;
  if (cap == RDEV_WIRE_MAX_CHUNK) {
    pthread_mutex_lock(&pool_mu);
    if ((h = pool_idle)) {
      pool_idle = h->next;
      pool_nidle--;
    }
    pthread_mutex_unlock(&pool_mu);
  }
  if (!h && posix_memalign((void **)&h, HEAD, HEAD + cap) != 0) return NULL;
  h->cap = cap;
  return (char *)h + HEAD;
}

grpc_slice srv_buf_slice(void *p, size_t n) {
  RDEV_HANDOFF_GIVE((char *)p - HEAD); /* gRPC gives it back, maybe on another thread */
  return grpc_slice_new(p, n, srv_buf_put);
}

void srv_buf_put(void *p) {
  if (!p) return;
  pool_head_t *h = (pool_head_t *)((char *)p - HEAD);
  RDEV_HANDOFF_TAKE(h);
  if (h->cap == RDEV_WIRE_MAX_CHUNK) {
    pthread_mutex_lock(&pool_mu);
    if (pool_nidle < SRV_POOL_KEEP) {
      h->next = pool_idle;
      pool_idle = h;
      pool_nidle++;
      h = NULL;
    }
    pthread_mutex_unlock(&pool_mu);
  }
  free(h);
}

void srv_buf_pool_drain(void) {
  pthread_mutex_lock(&pool_mu);
  while (pool_idle) {
    pool_head_t *n = pool_idle->next;
    free(pool_idle);
    pool_idle = n;
  }
  pool_nidle = 0;
  pthread_mutex_unlock(&pool_mu);
}
