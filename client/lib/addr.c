/*
 * client/lib/addr.c — device addresses. The library hands out its own device
 * addresses, never server handles: each allocation takes a fresh, never
 * reused, 4 KiB-aligned range of a process-wide 64-bit address space (with
 * a gap after it), and a per-session map (tsearch tree over ranges;
 * overlapping ranges compare equal) resolves any interior pointer to
 * (server buffer handle, offset). Owns the address counter and s->addr_map;
 * calls nothing of the library.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdlib.h>

#include "client.h"

#define ADDR_BASE 0x100000000000ull /* first device address handed out */
#define ADDR_LIMIT 0x7fff000000000000ull
#define ADDR_ALIGN 4096ull
#define ADDR_GAP 4096ull

static atomic_uint_fast64_t g_next_addr = ADDR_BASE;

static int range_cmp(const void *a, const void *b) {
  const cl_alloc_t *x = a, *y = b;
  if (x->base + x->size <= y->base) return -1;
  if (y->base + y->size <= x->base) return 1;
  return 0;
}

uint64_t cl_addr_reserve(uint64_t size) {
  if (size > ADDR_LIMIT - ADDR_BASE) return 0;
  uint64_t span = ((size + ADDR_ALIGN - 1) & ~(ADDR_ALIGN - 1)) + ADDR_GAP;
  uint64_t base = atomic_fetch_add(&g_next_addr, span);
  if (base > ADDR_LIMIT - span) return 0;
  return base;
}

/* Under s->mu. */
static cl_alloc_t *lookup_locked(rdev_session_t *s, uint64_t addr) {
  cl_alloc_t key = {addr, 1, 0, 0};
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

bool cl_resolve(rdev_session_t *s, const void *p, size_t len, uint64_t *handle, uint64_t *offset, bool *fits) {
  uint64_t addr = (uint64_t)(uintptr_t)p;
  pthread_mutex_lock(&s->mu);
  cl_alloc_t *a = lookup_locked(s, addr);
  if (a) {
    uint64_t off = addr - a->base;
    if (handle) *handle = a->handle;
    if (offset) *offset = off;
    if (fits) *fits = len <= a->size - off;
  }
  pthread_mutex_unlock(&s->mu);
  return a != NULL;
}

void cl_addr_map_destroy(rdev_session_t *s) {
  tdestroy(s->addr_map, free);
  s->addr_map = NULL;
}
