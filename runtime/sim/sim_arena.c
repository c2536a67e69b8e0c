/*
 * runtime/sim/sim_arena.c — the sim device's memory allocator (see sim.h).
 * The arena is one anonymous mapping per device (pages are committed only
 * when touched). Blocks are address-ordered in a doubly linked list so a
 * freed block merges with free neighbours in O(1); free blocks are binned by
 * floor(log2(size)); allocated blocks live in a glibc tsearch tree (a
 * red-black tree) whose comparator orders disjoint ranges, so looking up an
 * interior offset is O(log n). Each allocated block remembers the address
 * space it was made in: a lookup through another space finds nothing.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sim.h"

struct sim_block {
  size_t off, len;            /* within the arena; len is a multiple of 64 */
  size_t req;                 /* requested size; 0 when free */
  uint32_t slot;              /* the address space it was allocated in */
  sim_block_t *prev, *next;   /* address order */
  sim_block_t *fprev, *fnext; /* bin list, when free */
  int bin;                    /* -1 when allocated */
};

static int bin_of(size_t len) { return 63 - __builtin_clzll((unsigned long long)len); }

static void bin_insert(sim_arena_t *a, sim_block_t *b) {
  b->bin = bin_of(b->len);
  b->fprev = NULL;
  b->fnext = a->bins[b->bin];
  if (b->fnext) b->fnext->fprev = b;
  a->bins[b->bin] = b;
}

static void bin_remove(sim_arena_t *a, sim_block_t *b) {
  if (b->fprev)
    b->fprev->fnext = b->fnext;
  else
    a->bins[b->bin] = b->fnext;
  if (b->fnext) b->fnext->fprev = b->fprev;
  b->fprev = b->fnext = NULL;
  b->bin = -1;
}

/* Orders disjoint [off, off+len) ranges; overlapping ranges compare equal,
 * which is how a one-byte probe finds the block that holds it. */
static int range_cmp(const void *x, const void *y) {
  const sim_block_t *a = x, *b = y;
  if (a->off + a->len <= b->off) return -1;
  if (b->off + b->len <= a->off) return 1;
  return 0;
}

int sim_arena_init(sim_arena_t *a, size_t size) {
  memset(a, 0, sizeof *a);
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return rt_fail(RDEV_BAD_ALLOC, "cannot map a %zu-byte device arena", size);
  sim_block_t *b = calloc(1, sizeof *b);
  if (!b) {
    munmap(p, size);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  a->base = p;
  a->size = size;
  a->head = b;
  b->len = size;
  pthread_mutex_init(&a->mu, NULL);
  bin_insert(a, b);
  return RDEV_OK;
}

static void tree_node_keep(void *p) { (void)p; /* blocks are freed via the address list */ }

void sim_arena_destroy(sim_arena_t *a) {
  if (!a->base) return;
  tdestroy(a->tree, tree_node_keep);
  for (sim_block_t *b = a->head, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  pthread_mutex_destroy(&a->mu);
  munmap(a->base, a->size);
  memset(a, 0, sizeof *a);
}

/* Best fit among the first few blocks of the request's own class, else the
 * first block of any larger class (all of which fit), else any fitting block
 * further down the own class: out of memory only when nothing fits. */
static sim_block_t *find_fit(sim_arena_t *a, size_t len) {
  int c = bin_of(len);
  sim_block_t *best = NULL, *b = a->bins[c];
  for (int scanned = 0; b && scanned < 64; b = b->fnext, scanned++)
    if (b->len >= len && (!best || b->len < best->len)) {
      best = b;
      if (b->len == len) break;
    }
  if (best) return best;
  for (int i = c + 1; i < 64; i++)
    if (a->bins[i]) return a->bins[i];
  for (; b; b = b->fnext)
    if (b->len >= len) return b;
  return NULL;
}

size_t sim_arena_alloc(sim_arena_t *a, size_t size, size_t reserved, uint32_t slot) {
  pthread_mutex_lock(&a->mu);
  sim_block_t *b = find_fit(a, reserved);
  if (!b) {
    pthread_mutex_unlock(&a->mu);
    return SIM_NO_BLOCK;
  }
  bin_remove(a, b);
  if (b->len > reserved) { /* split: the tail stays free */
    sim_block_t *t = calloc(1, sizeof *t);
    if (!t) {
      bin_insert(a, b);
      pthread_mutex_unlock(&a->mu);
      return SIM_NO_BLOCK;
    }
    t->off = b->off + reserved;
    t->len = b->len - reserved;
    t->prev = b;
    t->next = b->next;
    if (t->next) t->next->prev = t;
    b->next = t;
    b->len = reserved;
    bin_insert(a, t);
  }
  b->req = size;
  b->slot = slot;
  if (!tsearch(b, &a->tree, range_cmp)) { /* tree node allocation failed: undo */
    b->req = 0;
    bin_insert(a, b);
    pthread_mutex_unlock(&a->mu);
    return SIM_NO_BLOCK;
  }
  a->used += b->len;
  a->nallocs++;
  pthread_mutex_unlock(&a->mu);
  return b->off;
}

/* The live block of space `slot` whose range holds off, or NULL. Caller
 * holds a->mu. */
static sim_block_t *find_live(sim_arena_t *a, size_t off, uint32_t slot) {
  if (off >= a->size) return NULL;
  sim_block_t probe = {.off = off, .len = 1};
  sim_block_t **hit = tfind(&probe, &a->tree, range_cmp);
  return hit && (*hit)->slot == slot ? *hit : NULL;
}

/* Merges b with its free successor n (both out of the bins). */
static void merge_next(sim_arena_t *a, sim_block_t *b) {
  sim_block_t *n = b->next;
  (void)a;
  b->len += n->len;
  b->next = n->next;
  if (b->next) b->next->prev = b;
  free(n);
}

int sim_arena_free(sim_arena_t *a, size_t off, uint32_t slot) {
  pthread_mutex_lock(&a->mu);
  sim_block_t *b = find_live(a, off, slot);
  if (!b || b->off != off) {
    pthread_mutex_unlock(&a->mu);
    return RDEV_INVALID_PARAM;
  }
  tdelete(b, &a->tree, range_cmp);
  a->used -= b->len;
  a->nallocs--;
  b->req = 0;
  if (b->next && b->next->bin >= 0) {
    bin_remove(a, b->next);
    merge_next(a, b);
  }
  if (b->prev && b->prev->bin >= 0) {
    sim_block_t *pv = b->prev;
    bin_remove(a, pv);
    merge_next(a, pv);
    b = pv;
  }
  bin_insert(a, b);
  pthread_mutex_unlock(&a->mu);
  return RDEV_OK;
}

int sim_arena_lookup(sim_arena_t *a, size_t off, uint32_t slot, size_t *base, size_t *size) {
  if (off >= a->size) return RDEV_INVALID_PARAM; /* no lock: fixed range */
  pthread_mutex_lock(&a->mu);
  sim_block_t *b = find_live(a, off, slot);
  int rc = RDEV_INVALID_PARAM;
  if (b && off - b->off < b->req) {
    *base = b->off;
    *size = b->req;
    rc = RDEV_OK;
  }
  pthread_mutex_unlock(&a->mu);
  return rc;
}

size_t sim_arena_free_bytes(sim_arena_t *a) {
  pthread_mutex_lock(&a->mu);
  size_t f = a->size - a->used;
  pthread_mutex_unlock(&a->mu);
  return f;
}
