/*
 * runtime/sim/sim.c — the sim backend: a CPU device that behaves like an
 * Ascend NPU seen through the CANN runtime. This file: devices and their
 * memory, host memory, fault injection, and the device tasks the stream
 * engine (runtime/engine.c) hands over; sim_backend.c: the backend table,
 * opening and closing. Each device has its own arena (sim_arena.c); device
 * addresses become arena addresses when a task is queued (sim_prepare), so
 * a task runs as plain memory work on its stream's worker.
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
#include "sim_ops.h"

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

/* ---- device tasks -------------------------------------------------------- */

void sim_prepare(void *impl, rt_task_t *t) {
  sim_t *sim = impl;
  switch (t->op) { /* device addresses become the arena's host addresses */
    case RT_TASK_COPY:
      t->u.mem.dst = sim_host_addr(sim, t->u.mem.dst);
      t->u.mem.src = sim_host_addr(sim, t->u.mem.src);
      break;
    case RT_TASK_MEMSET: t->u.mem.dst = sim_host_addr(sim, t->u.mem.dst); break;
    case RT_TASK_GATHER: t->u.gather.dst = sim_host_addr(sim, t->u.gather.dst); break;
    case RT_TASK_VALUE_WRITE:
    case RT_TASK_VALUE_WAIT: t->u.value.addr = sim_host_addr(sim, t->u.value.addr); break;
    case RT_TASK_KERNEL:
      for (int i = 0; i < RDEV_RT_MAX_KERNEL_ARGS; i++)
        if (t->u.kernel.args[i].type == RDEV_ARG_PTR)
          t->u.kernel.args[i].v.ptr.base = sim_host_addr(sim, t->u.kernel.args[i].v.ptr.base);
      break;
    case RT_TASK_OP: /* every tensor's storage address (an empty one's may be anything: it is not read) */
      for (int i = 0; i < t->u.op.call->nargs; i++) {
        rdev_op_arg_t *a = &t->u.op.call->args[i];
        if (!a->present || (a->kind != RDEV_OPK_TENSOR && a->kind != RDEV_OPK_TENSOR_LIST)) continue;
        for (uint32_t k = 0; k < (a->kind == RDEV_OPK_TENSOR ? 1 : a->n); k++)
          if (rdev_tensor_numel(&a->v.t[k]) > 0)
            a->v.t[k].addr = (uint64_t)(uintptr_t)sim_host_addr(sim, (void *)(uintptr_t)a->v.t[k].addr);
      }
      break;
    default: break;
  }
}

int sim_exec(rdev_rt_stream_t *s, rt_task_t *t) {
  sim_dev_t *d = &((sim_t *)s->rt->impl)->devs[s->dev];
  if (sim_fault_fires(&d->fault_hang)) rt_engine_sleep(s, (uint64_t)atomic_load(&d->hang_ms) * 1000000u);
  switch (t->op) {
    case RT_TASK_COPY: memmove(t->u.mem.dst, t->u.mem.src, t->u.mem.n); return RDEV_OK;
    case RT_TASK_GATHER: {
      char *dst = t->u.gather.dst;
      for (int i = 0; i < t->u.gather.n; dst += t->u.gather.iov[i].len, i++)
        memcpy(dst, t->u.gather.iov[i].base, t->u.gather.iov[i].len);
      return RDEV_OK;
    }
    case RT_TASK_MEMSET: memset(t->u.mem.dst, t->u.mem.value, t->u.mem.n); return RDEV_OK;
    case RT_TASK_KERNEL: {
      sim_kctx_t ctx = {.blocks = t->u.kernel.blocks, .stream = s};
      int rc = sim_fault_fires(&d->fault_kernel)
                   ? rt_fail(RDEV_RT_AICORE_EXCEPTION, "injected kernel fault on device %d", d->index)
                   : sim_kernel_fns[t->u.kernel.index](&ctx, t->u.kernel.args);
      if (t->u.kernel.print_fn)
        t->u.kernel.print_fn(t->u.kernel.print_user, ctx.print.data ? ctx.print.data : "", ctx.print.len);
      rt_print_release(&ctx.print);
      return rc;
    }
    case RT_TASK_VALUE_WRITE:
      __atomic_store_n((uint64_t *)t->u.value.addr, t->u.value.value, __ATOMIC_RELEASE);
      return RDEV_OK;
    case RT_TASK_OP: return sim_op_run(s, t->u.op.call);
    default: return rt_fail(RDEV_INTERNAL_ERROR, "the sim runs no task of op %d", t->op);
  }
}

int sim_load_value(rdev_rt_stream_t *s, const void *addr, uint64_t *v) {
  (void)s;
  *v = __atomic_load_n((const uint64_t *)addr, __ATOMIC_ACQUIRE);
  return RDEV_OK;
}

static void free_host_node(void *p) { free(p); }

void sim_host_free_all(sim_t *sim) {
  tdestroy(sim->host, free_host_node);
  sim->host = NULL;
}
