/*
 * client/lib/addr.c — the session's device addresses: this library places
 * every allocation itself, in the session's window of each device
 * (rdev.proto, Malloc.addr), so that a malloc waits for no reply, and
 * keeps the session's use of each device against the limits the open's
 * answer gave. A per-session map (tsearch tree over ranges; overlapping
 * ranges compare equal) finds the allocation holding any interior
 * pointer, so that a copy's direction can be inferred and a range that
 * runs past its allocation refused before anything is sent. The server
 * checks every address again, against what the session really holds.
 * Owns s->addr_map and s->space; calls error.c.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

struct cl_extent {
  uint64_t at, len;
};

static int range_cmp(const void *a, const void *b) {
  const cl_alloc_t *x = a, *y = b;
  if (x->base + x->size <= y->base) return -1;
  if (y->base + y->size <= x->base) return 1;
  return 0;
}

/* Under s->mu. */
static cl_alloc_t *lookup_locked(rdev_session_t *s, uint64_t addr) {
  cl_alloc_t key = {.base = addr, .size = 1};
  void *node = tfind(&key, &s->addr_map, range_cmp);
  return node ? *(cl_alloc_t **)node : NULL;
}

/* ---- windows: first fit over sorted free ranges ------------------------------- */

void cl_addr_init(rdev_session_t *s) {
  /* Sessions of one process take windows in turn from a start of the
   * process's own, so that their addresses seldom coincide. */
  static atomic_uint next;
  static atomic_flag seeded = ATOMIC_FLAG_INIT;
  if (!atomic_flag_test_and_set(&seeded)) atomic_store(&next, (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL));
  s->space.tag = atomic_fetch_add(&next, 1) % RDEV_WIRE_VA_TAGS;
}

uint64_t cl_addr_total_locked(rdev_session_t *s, int dev) {
  return dev >= 0 && dev < RDEV_WIRE_MAX_DEVICES ? s->space.win[dev].total : 0;
}

void cl_addr_limits_locked(rdev_session_t *s, grpc_slice v) {
  const char *p = (const char *)GRPC_SLICE_START_PTR(v), *end = p + GRPC_SLICE_LENGTH(v);
  for (int dev = 0; p < end && dev < RDEV_WIRE_MAX_DEVICES; dev++) {
    uint64_t n[2] = {0, 0};
    for (int k = 0; k < 2; k++) { /* "quota/total"; a malformed entry ends the list */
      const char *start = p;
      while (p < end && *p >= '0' && *p <= '9' && n[k] <= (UINT64_MAX - 9) / 10)
        n[k] = n[k] * 10 + (uint64_t)(*p++ - '0');
      if (p == start || (k == 0 && (p == end || *p++ != '/'))) return;
    }
    s->space.win[dev].quota = n[0];
    s->space.win[dev].total = n[1];
    if (p < end && *p++ != ',') return;
  }
}

/* Takes len bytes (a multiple of RDEV_MEM_ALIGN) from the lowest free
 * range that holds them: 0 with *at, or -1 when none does. */
static int window_take(cl_window_t *w, uint64_t base, uint64_t len, uint64_t *at) {
  if (!w->free) {
    if (!(w->free = malloc(8 * sizeof *w->free))) return -1;
    w->free[0] = (struct cl_extent){base, RDEV_WIRE_VA_WINDOW};
    w->n = 1;
    w->cap = 8;
  }
  for (size_t i = 0; i < w->n; i++) {
    struct cl_extent *e = &w->free[i];
    if (e->len < len) continue;
    *at = e->at;
    e->at += len;
    if ((e->len -= len) == 0) memmove(e, e + 1, (--w->n - i) * sizeof *e);
    return 0;
  }
  return -1;
}

/* Gives [at, at+len) back, merged with its free neighbours. Out of host
 * memory for a new range, the range stays taken (the window is 1 TiB). */
static void window_give(cl_window_t *w, uint64_t at, uint64_t len) {
  size_t lo = 0, hi = w->n; /* the first free range above at */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (w->free[mid].at < at)
      lo = mid + 1;
    else
      hi = mid;
  }
  bool prev = lo > 0 && w->free[lo - 1].at + w->free[lo - 1].len == at;
  bool next = lo < w->n && at + len == w->free[lo].at;
  if (prev && next) {
    w->free[lo - 1].len += len + w->free[lo].len;
    memmove(&w->free[lo], &w->free[lo + 1], (--w->n - lo) * sizeof *w->free);
  } else if (prev) {
    w->free[lo - 1].len += len;
  } else if (next) {
    w->free[lo].at = at;
    w->free[lo].len += len;
  } else {
    if (w->n == w->cap) {
      struct cl_extent *f = realloc(w->free, 2 * w->cap * sizeof *f);
      if (!f) return;
      w->free = f;
      w->cap *= 2;
    }
    memmove(&w->free[lo + 1], &w->free[lo], (w->n++ - lo) * sizeof *w->free);
    w->free[lo] = (struct cl_extent){at, len};
  }
}

int cl_addr_place(rdev_session_t *s, int dev, size_t size, uint64_t seq, cl_alloc_t **out, bool *fits) {
  *out = NULL;
  *fits = true;
  uint64_t reserved = rdev_mem_reserved_size(size);
  if (!reserved) return cl_error(RDEV_RT_DEVICE_OOM, "size %zu overflows", size);
  cl_alloc_t *a = malloc(sizeof *a);
  if (!a) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  pthread_mutex_lock(&s->mu);
  cl_window_t *w = &s->space.win[dev];
  int rc = RDEV_OK;
  /* the session's own use alone (what other sessions of the tenant hold,
   * the server counts) */
  *fits = !(w->quota && (reserved > w->quota || w->used > w->quota - reserved)) &&
          !(w->total && (reserved > w->total || w->used > w->total - reserved));
  if (window_take(w, rdev_wire_va_window(s->space.tag, dev), reserved, &a->base) != 0)
    rc = cl_error(RDEV_RT_DEVICE_OOM, "device %d: no room for %llu bytes in the session's address window", dev,
                  (unsigned long long)reserved);
  if (!rc) {
    a->size = size;
    a->reserved = reserved;
    a->seq = seq;
    a->device = dev;
    a->failed = false;
    if (tsearch(a, &s->addr_map, range_cmp)) {
      w->used += reserved;
      *out = a;
    } else {
      window_give(w, a->base, reserved);
      rc = cl_error(RDEV_BAD_ALLOC, "out of host memory");
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (rc) free(a);
  return rc;
}

void cl_addr_refused_locked(rdev_session_t *s, uint64_t base, uint64_t seq) {
  cl_alloc_t *a = lookup_locked(s, base);
  if (!a || a->base != base || a->seq != seq || a->failed) return; /* freed, the range placed again */
  a->failed = true;
  s->space.win[a->device].used -= a->reserved;
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

void cl_addr_unplace(rdev_session_t *s, cl_alloc_t *a, bool freed) {
  if (freed) {
    pthread_mutex_lock(&s->mu);
    cl_window_t *w = &s->space.win[a->device];
    if (!a->failed) w->used -= a->reserved;
    window_give(w, a->base, a->reserved);
    pthread_mutex_unlock(&s->mu);
  }
  free(a);
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
  for (int d = 0; d < RDEV_WIRE_MAX_DEVICES; d++) free(s->space.win[d].free);
}
