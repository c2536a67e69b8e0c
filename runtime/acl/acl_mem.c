/*
 * runtime/acl/acl_mem.c — the acl backend's memory: device allocations
 * (aclrtMalloc) and pinned host buffers (aclrtMallocHost) kept in address
 * range tables, so that any interior address resolves to its allocation;
 * address spaces as sets of allocations (CANN chooses device addresses, so
 * a space is no range here); synchronous copies and memsets. Device memory
 * is never host-mapped: every byte crosses through aclrtMemcpy.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

/* ---- range tables ---------------------------------------------------------- */

/* Ranges overlap = equal: a probe of [p, p + 1) finds the block holding p. */
static int range_cmp(const void *x, const void *y) {
  const acl_block_t *a = x, *b = y;
  size_t an = a->size ? a->size : 1, bn = b->size ? b->size : 1;
  if (a->addr + an <= b->addr) return -1;
  if (b->addr + bn <= a->addr) return 1;
  return 0;
}

void acl_table_init(acl_table_t *t) {
  t->root = NULL;
  pthread_mutex_init(&t->mu, NULL);
}

static int table_add(acl_table_t *t, const acl_block_t *b) {
  acl_block_t *n = malloc(sizeof *n);
  if (!n) return 0;
  *n = *b;
  pthread_mutex_lock(&t->mu);
  void *node = tsearch(n, &t->root, range_cmp);
  int added = node && *(acl_block_t **)node == n; /* else out of memory, or CANN gave an address twice */
  pthread_mutex_unlock(&t->mu);
  if (!added) free(n);
  return added;
}

int acl_table_find(acl_table_t *t, const void *p, size_t n, acl_block_t *out) {
  acl_block_t probe = {.addr = (uintptr_t)p, .size = 1};
  pthread_mutex_lock(&t->mu);
  void *node = tfind(&probe, &t->root, range_cmp);
  if (node) *out = **(acl_block_t **)node;
  pthread_mutex_unlock(&t->mu);
  return node && (uintptr_t)p - out->addr <= out->size && n <= out->size - ((uintptr_t)p - out->addr);
}

/* Removes the block that starts at p into *out; 0 when none does. */
static int table_remove(acl_table_t *t, const void *p, acl_block_t *out) {
  acl_block_t probe = {.addr = (uintptr_t)p, .size = 1};
  pthread_mutex_lock(&t->mu);
  void *node = tfind(&probe, &t->root, range_cmp);
  acl_block_t *b = node ? *(acl_block_t **)node : NULL;
  if (b && b->addr == (uintptr_t)p) {
    tdelete(b, &t->root, range_cmp);
    *out = *b;
    free(b);
  } else {
    b = NULL;
  }
  pthread_mutex_unlock(&t->mu);
  return b != NULL;
}

/* ---- spaces ------------------------------------------------------------------ */

/* Drops one reference: the last unlinks the space and frees it. */
static void space_unref(acl_t *a, acl_space_t *sp) {
  if (atomic_fetch_sub(&sp->refs, 1) != 1) return;
  pthread_mutex_lock(&a->spaces_mu);
  if (sp->prev)
    sp->prev->next = sp->next;
  else
    a->spaces = sp->next;
  if (sp->next) sp->next->prev = sp->prev;
  pthread_mutex_unlock(&a->spaces_mu);
  free(sp);
}

int acl_space_create(void *impl, rdev_rt_space_t **out) {
  acl_t *a = impl;
  if (atomic_fetch_add(&a->nspaces, 1) >= RDEV_RT_MAX_SPACES) {
    atomic_fetch_sub(&a->nspaces, 1);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "all %d address spaces are in use", RDEV_RT_MAX_SPACES);
  }
  acl_space_t *sp = calloc(1, sizeof *sp);
  if (!sp) {
    atomic_fetch_sub(&a->nspaces, 1);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  sp->base.rt = a->rt;
  atomic_init(&sp->refs, 1);
  pthread_mutex_lock(&a->spaces_mu);
  sp->next = a->spaces;
  if (sp->next) sp->next->prev = sp;
  a->spaces = sp;
  pthread_mutex_unlock(&a->spaces_mu);
  *out = &sp->base;
  return RDEV_OK;
}

void acl_space_destroy(rdev_rt_space_t *sp) {
  acl_t *a = sp->rt->impl;
  atomic_fetch_sub(&a->nspaces, 1);
  space_unref(a, (acl_space_t *)sp);
}

/* ---- device memory --------------------------------------------------------- */

int acl_malloc(void *impl, rdev_rt_space_t *space, int dev, void **dptr, size_t size, size_t reserved) {
  acl_t *a = impl;
  int rc = acl_enter(a, dev);
  if (rc) return rc;
  /* the policy is CANN's own enum, and HUGE_FIRST is what every caller
   * gets; the generic layer has checked it */
  void *p = NULL;
  int e = a->api->rtMalloc(&p, size, 0);
  if (e) return acl_fail(a, e, "aclrtMalloc");
  if ((uintptr_t)p % RDEV_RT_MEM_ALIGN) {
    a->api->rtFree(p);
    return rt_fail(RDEV_INTERNAL_ERROR, "aclrtMalloc returned %p, not %d-byte aligned", p, RDEV_RT_MEM_ALIGN);
  }
  acl_space_t *sp = space ? (acl_space_t *)space : &a->own;
  acl_block_t b = {.addr = (uintptr_t)p, .size = size, .reserved = reserved, .dev = dev, .sp = sp};
  if (sp != &a->own) atomic_fetch_add(&sp->refs, 1); /* the runtime's own is not counted */
  if (!table_add(&a->dmem, &b)) {
    if (sp != &a->own) space_unref(a, sp);
    a->api->rtFree(p);
    return rt_fail(RDEV_BAD_ALLOC, "cannot record the allocation at %p", p);
  }
  *dptr = p;
  return RDEV_OK;
}

int acl_free(void *impl, void *dptr) {
  acl_t *a = impl;
  acl_block_t b;
  if (!table_remove(&a->dmem, dptr, &b))
    return rt_fail(RDEV_INVALID_PARAM, "%p is not the start of a live device allocation", dptr);
  int rc = acl_enter(a, b.dev), e = rc ? 0 : a->api->rtFree(dptr);
  if (!rc && e) rc = acl_fail(a, e, "aclrtFree");
  if (rc) { /* still CANN's: keep it where close frees it */
    table_add(&a->dmem, &b);
    return rc;
  }
  if (b.sp != &a->own) space_unref(a, b.sp);
  return RDEV_OK;
}

int acl_lookup(void *impl, const void *p, void **base, size_t *size, int *dev) {
  acl_block_t b;
  if (!acl_table_find(&((acl_t *)impl)->dmem, p, 0, &b) || (uintptr_t)p - b.addr >= b.size) return RDEV_INVALID_PARAM;
  *base = (void *)b.addr;
  *size = b.size;
  *dev = b.dev;
  return RDEV_OK;
}

/* ---- pinned host memory ---------------------------------------------------- */

int acl_malloc_host(void *impl, void **p, size_t size) {
  acl_t *a = impl;
  int rc = acl_enter(a, 0); /* CANN pins host memory for the current context */
  if (rc) return rc;
  void *m = NULL;
  int e = a->api->rtMallocHost(&m, size);
  if (e) return acl_fail(a, e, "aclrtMallocHost");
  acl_block_t b = {.addr = (uintptr_t)m, .size = size, .dev = -1};
  if (!table_add(&a->hmem, &b)) {
    a->api->rtFreeHost(m);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  *p = m;
  return RDEV_OK;
}

int acl_free_host(void *impl, void *p) {
  acl_t *a = impl;
  acl_block_t b;
  if (!table_remove(&a->hmem, p, &b)) return rt_fail(RDEV_INVALID_PARAM, "%p was not allocated by malloc_host", p);
  int rc = acl_enter(a, 0);
  int e = rc ? 0 : a->api->rtFreeHost(p);
  return rc ? rc : e ? acl_fail(a, e, "aclrtFreeHost") : RDEV_OK;
}

static acl_t *freeing; /* acl_mem_free_all's instance (close is single-threaded) */

static void free_dev_node(void *n) {
  acl_block_t *b = n;
  if (acl_enter(freeing, b->dev) == RDEV_OK) freeing->api->rtFree((void *)b->addr);
  free(b);
}

static void free_host_node(void *n) {
  acl_block_t *b = n;
  if (acl_enter(freeing, 0) == RDEV_OK) freeing->api->rtFreeHost((void *)b->addr);
  free(b);
}

void acl_mem_free_all(acl_t *a) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  freeing = a;
  tdestroy(a->dmem.root, free_dev_node);
  tdestroy(a->hmem.root, free_host_node);
  a->dmem.root = a->hmem.root = NULL;
  freeing = NULL;
  pthread_mutex_unlock(&mu);
  for (acl_space_t *sp = a->spaces, *n; sp; sp = n) { /* whatever owners and allocations left */
    n = sp->next;
    free(sp);
  }
  a->spaces = NULL;
}

/* ---- synchronous copies and memsets --------------------------------------- */

int acl_dev_of(acl_t *a, const void *p) {
  acl_block_t b;
  return acl_table_find(&a->dmem, p, 0, &b) ? b.dev : -1;
}

int acl_copy(void *impl, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind) {
  acl_t *a = impl;
  if (kind == RDEV_MEMCPY_HOST_TO_HOST) {
    memmove(dst, src, n);
    return RDEV_OK;
  }
  int sdev = kind == RDEV_MEMCPY_HOST_TO_DEVICE ? -1 : acl_dev_of(a, src);
  int ddev = kind == RDEV_MEMCPY_DEVICE_TO_HOST ? -1 : acl_dev_of(a, dst);
  if (sdev >= 0 && ddev >= 0 && sdev != ddev) { /* across devices: through the host, a chunk at a time */
    size_t chunk = n < RDEV_RT_STAGING_CHUNK ? n : RDEV_RT_STAGING_CHUNK;
    char *tmp = malloc(chunk);
    if (!tmp) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
    int rc = RDEV_OK;
    for (size_t off = 0; off < n && !rc; off += chunk) {
      size_t k = n - off < chunk ? n - off : chunk;
      rc = acl_copy(a, tmp, (const char *)src + off, k, RDEV_MEMCPY_DEVICE_TO_HOST);
      if (!rc) rc = acl_copy(a, (char *)dst + off, tmp, k, RDEV_MEMCPY_HOST_TO_DEVICE);
    }
    free(tmp);
    return rc;
  }
  int dev = ddev >= 0 ? ddev : sdev, rc;
  if (dev < 0)
    return rt_fail(RDEV_INVALID_PARAM, "%s copy names no device memory",
                   kind == RDEV_MEMCPY_HOST_TO_DEVICE ? "H2D" : "D2H/D2D");
  if ((rc = acl_enter(a, dev))) return rc;
  int e = a->api->rtMemcpy(dst, n, src, n, (int)kind);
  return e ? acl_fail(a, e, "aclrtMemcpy") : RDEV_OK;
}

int acl_memset(void *impl, void *dst, int value, size_t n) {
  acl_t *a = impl;
  int dev = acl_dev_of(a, dst), rc;
  if (dev < 0) return rt_fail(RDEV_INVALID_PARAM, "%p is not device memory", dst);
  if ((rc = acl_enter(a, dev))) return rc;
  int e = a->api->rtMemset(dst, n, value, n);
  return e ? acl_fail(a, e, "aclrtMemset") : RDEV_OK;
}
