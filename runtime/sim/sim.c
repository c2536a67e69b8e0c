/*
 * runtime/sim/sim.c — the sim backend: a CPU device that behaves like an
 * Ascend NPU seen through the CANN runtime. This file: devices and their
 * memory, host memory, fault injection; sim_backend.c: the backend table,
 * opening and closing; sim_stream.c: streams, their workers and execution
 * slots; sim_event.c: events. Each device has its own arena
 * (sim_arena.c); each stream has its own worker thread draining a bounded
 * ring of validated tasks in order, so async calls really return before
 * their work runs and separate streams really run concurrently. Events are
 * generation counters guarded by one mutex and condition variable per
 * device; stream waits, event synchronize and abort wake-ups all use it.
 *
 * Errors of async work are kept on the stream (first one wins) and handed to
 * the next synchronize, which clears them.
 *
 * Execution slots (config sim_slots > 0): a device then runs at most that
 * many copies, memsets and kernels at once, and when streams wait for a slot
 * it goes to the scheduling group (tenant) with the least weighted device
 * time used: start-time fair queuing, where a group's virtual time advances
 * by task time / weight, and a group that was idle rejoins at the device's
 * current virtual time instead of cashing in its idle time. A group may
 * have a cap on the slots it holds at once: at its cap, its streams wait
 * for its own slots and are passed over in the choice, so that one tenant
 * cannot take a device's every slot with long kernels. Host callbacks and
 * event waits never take a slot. With sim_slots 0 every stream runs
 * whenever its worker thread does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdev/clock.h"
#include "sim.h"

/* ---- faults -------------------------------------------------------------- */

int sim_fault_inject(void *impl, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms) {
  sim_dev_t *d = &((sim_t *)impl)->devs[dev];
  switch (kind) {
    case RDEV_FAULT_ALLOC: atomic_store(&d->fault_alloc, nth); break;
    case RDEV_FAULT_KERNEL: atomic_store(&d->fault_kernel, nth); break;
    case RDEV_FAULT_HANG:
      atomic_store(&d->hang_ms, hang_ms);
      atomic_store(&d->fault_hang, nth);
      break;
  }
  return RDEV_OK;
}

/* ---- devices and memory -------------------------------------------------- */

int sim_device_count(void *impl) { return ((sim_t *)impl)->ndev; }

int sim_device_info(void *impl, int dev, rdev_rt_device_info_t *info) {
  sim_dev_t *d = &((sim_t *)impl)->devs[dev];
  memset(info, 0, sizeof *info);
  strcpy(info->name, "sim");
  info->total_bytes = d->arena.size;
  info->free_bytes = sim_arena_free_bytes(&d->arena);
  return RDEV_OK;
}

/* ---- address spaces ------------------------------------------------------ */

static void space_unref(sim_space_t *sp) {
  if (atomic_fetch_sub(&sp->refs, 1) != 1) return;
  sim_t *sim = sp->sim;
  pthread_mutex_lock(&sim->mu);
  sim->spaces[sp->slot] = NULL;
  pthread_mutex_unlock(&sim->mu);
  free(sp);
}

int sim_space_create(void *impl, rdev_rt_space_t **out) {
  sim_t *sim = impl;
  sim_space_t *sp = calloc(1, sizeof *sp);
  if (!sp) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  sp->base.rt = sim->rt;
  sp->sim = sim;
  atomic_init(&sp->refs, 1);
  pthread_mutex_lock(&sim->mu);
  /* next fit from past the last slot given: a slot freed is taken again
   * only after every other one, so that a stale address stays unknown */
  uint32_t slot = 0;
  for (uint32_t i = 0; i < RDEV_RT_MAX_SPACES && !slot; i++) {
    uint32_t c = 1 + (sim->space_next + i) % RDEV_RT_MAX_SPACES;
    if (!sim->spaces[c]) slot = c;
  }
  if (slot) {
    sp->slot = slot;
    sim->spaces[slot] = sp;
    sim->space_next = slot; /* next search starts at slot + 1 */
  }
  pthread_mutex_unlock(&sim->mu);
  if (!slot) {
    free(sp);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "all %d address spaces are in use", RDEV_RT_MAX_SPACES);
  }
  *out = &sp->base;
  return RDEV_OK;
}

void sim_space_destroy(rdev_rt_space_t *sp) { space_unref((sim_space_t *)sp); }

void sim_space_range(const rdev_rt_space_t *sp, int dev, uint64_t *base, uint64_t *size) {
  const sim_space_t *s = (const sim_space_t *)sp;
  *base = sim_va(s->slot, dev, 0);
  *size = s->sim->devs[dev].arena.size;
}

void sim_spaces_free_all(sim_t *sim) {
  if (!sim->spaces) return;
  for (uint32_t i = 0; i < SIM_SLOTS; i++) free(sim->spaces[i]);
  free(sim->spaces);
  sim->spaces = NULL;
}

/* ---- device memory ------------------------------------------------------- */

int sim_malloc(void *impl, rdev_rt_space_t *space, int dev, void **dptr, size_t size, size_t reserved) {
  sim_t *sim = impl;
  sim_space_t *sp = space ? (sim_space_t *)space : sim->spaces[0];
  sim_dev_t *d = &sim->devs[dev];
  if (sim_fault_fires(&d->fault_alloc))
    return rt_fail(RDEV_RT_DEVICE_OOM, "injected allocation fault on device %d", dev);
  atomic_fetch_add(&sp->refs, 1); /* the allocation's */
  size_t off = sim_arena_alloc(&d->arena, size, reserved, sp->slot);
  if (off == SIM_NO_BLOCK) {
    space_unref(sp);
    return rt_fail(RDEV_RT_DEVICE_OOM, "device %d has no free block of %zu bytes (%zu free in all)", dev, reserved,
                   sim_arena_free_bytes(&d->arena));
  }
  *dptr = (void *)(uintptr_t)sim_va(sp->slot, dev, off);
  return RDEV_OK;
}

/* The device, arena offset and space slot of device address p; NULL when
 * p is not on one of the sim's devices. */
static sim_dev_t *split(sim_t *sim, const void *p, size_t *off, uint32_t *slot) {
  int dev;
  if (!sim_va_split(p, slot, &dev, off) || dev >= sim->ndev || *off >= sim->devs[dev].arena.size) return NULL;
  return &sim->devs[dev];
}

int sim_free(void *impl, void *dptr) {
  sim_t *sim = impl;
  size_t off;
  uint32_t slot;
  sim_dev_t *d = split(sim, dptr, &off, &slot);
  if (!d || sim_arena_free(&d->arena, off, slot) != RDEV_OK)
    return rt_fail(RDEV_INVALID_PARAM, "%p is not the start of a live device allocation", dptr);
  pthread_mutex_lock(&sim->mu);
  sim_space_t *sp = sim->spaces[slot]; /* alive: the allocation held it */
  pthread_mutex_unlock(&sim->mu);
  space_unref(sp);
  return RDEV_OK;
}

int sim_lookup(void *impl, const void *p, void **base, size_t *size, int *dev) {
  size_t off, b;
  uint32_t slot;
  sim_dev_t *d = split(impl, p, &off, &slot);
  if (!d || sim_arena_lookup(&d->arena, off, slot, &b, size) != RDEV_OK) return RDEV_INVALID_PARAM;
  *base = (void *)(uintptr_t)sim_va(slot, d->index, b);
  *dev = d->index;
  return RDEV_OK;
}

void *sim_host_addr(sim_t *sim, const void *p) {
  size_t off;
  uint32_t slot;
  sim_dev_t *d = split(sim, p, &off, &slot);
  return d ? d->arena.base + off : (void *)p;
}

static int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y ? -1 : x > y;
}

int sim_malloc_host(void *impl, void **p, size_t size) {
  sim_t *sim = impl;
  void *m = NULL;
  if (posix_memalign(&m, 4096, size) != 0) return rt_fail(RDEV_BAD_ALLOC, "no host memory for %zu bytes", size);
  pthread_mutex_lock(&sim->mu);
  void *node = tsearch(m, &sim->host, ptr_cmp);
  pthread_mutex_unlock(&sim->mu);
  if (!node) {
    free(m);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  *p = m;
  return RDEV_OK;
}

int sim_free_host(void *impl, void *p) {
  sim_t *sim = impl;
  pthread_mutex_lock(&sim->mu);
  void *node = tfind(p, &sim->host, ptr_cmp);
  if (node) tdelete(p, &sim->host, ptr_cmp);
  pthread_mutex_unlock(&sim->mu);
  if (!node) return rt_fail(RDEV_INVALID_PARAM, "%p was not allocated by malloc_host", p);
  free(p);
  return RDEV_OK;
}

/* Device memory is host memory in the sim: a copy is a memmove between
 * host addresses, which keeps overlapping D2D copies within one buffer
 * well defined. */
int sim_copy(void *impl, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind) {
  (void)kind;
  memmove(sim_host_addr(impl, dst), sim_host_addr(impl, src), n);
  return RDEV_OK;
}

/* Sim device memory is host memory, shown unless the sim plays a device
 * whose memory is not host-mapped. */
const void *sim_host_view(void *impl, const void *dptr, size_t n) {
  sim_t *sim = impl;
  (void)n;
  return sim->unmapped ? NULL : sim_host_addr(sim, dptr);
}

int sim_memset(void *impl, void *dst, int value, size_t n) {
  memset(sim_host_addr(impl, dst), value, n);
  return RDEV_OK;
}

static void free_host_node(void *p) { free(p); }

void sim_host_free_all(sim_t *sim) {
  tdestroy(sim->host, free_host_node);
  sim->host = NULL;
}
