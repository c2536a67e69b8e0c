/*
 * client/lib/addr.c — the session's allocations as this library knows
 * them: device addresses are the server's (Malloc returns one in the
 * session's own range), and a per-session map (tsearch tree over ranges;
 * overlapping ranges compare equal) finds the allocation holding any
 * interior pointer, so that a copy's direction can be inferred and a range
 * that runs past its allocation refused before anything is sent. The
 * server checks every address again, against what the session really
 * holds. Owns s->addr_map; calls nothing of the library.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdlib.h>

#include "client.h"

static int range_cmp(const void *a, const void *b) {
  const cl_alloc_t *x = a, *y = b;
  if (x->base + x->size <= y->base) return -1;
  if (y->base + y->size <= x->base) return 1;
  return 0;
}

/* Under s->mu. */
static cl_alloc_t *lookup_locked(rdev_session_t *s, uint64_t addr) {
  cl_alloc_t key = {addr, 1, 0};
  void *node = tfind(&key, &s->addr_map, range_cmp);
  return node ? *(cl_alloc_t **)node : NULL;
}

bool cl_addr_insert(rdev_session_t *s, cl_alloc_t *a) {
  pthread_mutex_lock(&s->mu);
  void *node = tsearch(a, &s->addr_map, range_cmp);
  pthread_mutex_unlock(&s->mu);
  return node != NULL;
}

cl_alloc_t *cl_addr_remove(rdev_session_t *s, uint64_t base) {
  pthread_mutex_lock(&s->mu);
  cl_alloc_t *a = lookup_locked(s, base);
  if (a && a->base == base)
    tdelete(a, &s->addr_map, range_cmp);
  else
    a = NULL;
  pthread_mutex_unlock(&s->mu);
  return a;
}

bool cl_addr_known(rdev_session_t *s, const void *p, size_t len, bool *fits) {
  uint64_t addr = (uint64_t)(uintptr_t)p;
  pthread_mutex_lock(&s->mu);
  cl_alloc_t *a = lookup_locked(s, addr);
  if (a && fits) *fits = len <= a->size - (addr - a->base);
  pthread_mutex_unlock(&s->mu);
  return a != NULL;
}

void cl_addr_map_destroy(rdev_session_t *s) {
  tdestroy(s->addr_map, free);
  s->addr_map = NULL;
}
