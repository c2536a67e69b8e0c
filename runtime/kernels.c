/*
 * runtime/kernels.c — the registry of built-in kernels: names and typed
 * signatures, shared by every backend. Each pointer parameter declares its
 * extent (element size times one, the block count, or an integer argument),
 * so a launch is bound-checked (rdev_rt_launch, here) before any backend
 * runs it.
 * The sim backend's C bodies are in sim/sim_kernels.c, in the same order.
 * Kernel binaries (binary.c) name these kernels.
 */
#include <string.h>

#include "rt_engine.h"

#define PTR_IN(nm, esz, ext, carg) \
  { nm, RDEV_ARG_PTR, 0, esz, ext, carg }
#define PTR_OUT(nm, esz, ext, carg) \
  { nm, RDEV_ARG_PTR, 1, esz, ext, carg }
#define SCALAR(nm, t) \
  { nm, t, 0, 0, 0, 0 }

static const rdev_kernel_sig_t rt_kernels[] = {
    {"write_i32",
     "out[b] = value for each block b; prints 'Source data: <value>' per block",
     2,
     {PTR_OUT("out", 4, RDEV_EXTENT_BLOCKS, 0), SCALAR("value", RDEV_ARG_I32)}},
    {"square_f32",
     "out[i] = in[i] * in[i] for i < n",
     3,
     {PTR_IN("in", 4, RDEV_EXTENT_ARG, 2), PTR_OUT("out", 4, RDEV_EXTENT_ARG, 2), SCALAR("n", RDEV_ARG_U32)}},
    {"add_f32",
     "out[i] = a[i] + b[i] for i < n",
     4,
     {PTR_IN("a", 4, RDEV_EXTENT_ARG, 3), PTR_IN("b", 4, RDEV_EXTENT_ARG, 3), PTR_OUT("out", 4, RDEV_EXTENT_ARG, 3),
      SCALAR("n", RDEV_ARG_U32)}},
    {"axpy_f32",
     "y[i] = alpha * x[i] + y[i] for i < n",
     4,
     {SCALAR("alpha", RDEV_ARG_F32), PTR_IN("x", 4, RDEV_EXTENT_ARG, 3), PTR_OUT("y", 4, RDEV_EXTENT_ARG, 3),
      SCALAR("n", RDEV_ARG_U32)}},
    {"reduce_sum_f32",
     "out[0] = sum of in[i] for i < n",
     3,
     {PTR_IN("in", 4, RDEV_EXTENT_ARG, 2), PTR_OUT("out", 4, RDEV_EXTENT_ONE, 0), SCALAR("n", RDEV_ARG_U32)}},
    {"delay_us", "occupies the stream for us microseconds", 1, {SCALAR("us", RDEV_ARG_U32)}},
    /* the CANN runtime samples' kernels (example/kernel_func/) */
    {"read_i32", "prints 'Destination data: <in[b]>' for each block b", 1, {PTR_IN("in", 4, RDEV_EXTENT_BLOCKS, 0)}},
    {"inc_u32", "x[b] += 1 for each block b", 1, {PTR_OUT("x", 4, RDEV_EXTENT_BLOCKS, 0)}},
    {"long_inc_u32", "runs for 500 ms, then x[b] += 1 for each block b", 1, {PTR_OUT("x", 4, RDEV_EXTENT_BLOCKS, 0)}},
    {"double_u32", "x[b] *= 2 for each block b", 1, {PTR_OUT("x", 4, RDEV_EXTENT_BLOCKS, 0)}},
    {"trap", "faults: an AI Core exception (507015) at the next synchronize", 0, {{0}}},
    {"hello", "prints 'Hello World' per block", 0, {{0}}},
};

const rdev_kernel_sig_t *rdev_rt_kernels(int *count) {
  if (count) *count = (int)(sizeof rt_kernels / sizeof rt_kernels[0]);
  return rt_kernels;
}

const rdev_kernel_sig_t *rdev_rt_kernel_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof rt_kernels / sizeof rt_kernels[0]; i++)
    if (strcmp(rt_kernels[i].name, name) == 0) return &rt_kernels[i];
  return NULL;
}

/* ---- launches ------------------------------------------------------------- */

/* The element count an integer argument stands for; -1 if negative. */
static int64_t arg_count(const rdev_kernel_arg_t *a) {
  switch (a->type) {
    case RDEV_ARG_I32: return a->v.i32 < 0 ? -1 : a->v.i32;
    case RDEV_ARG_U32: return a->v.u32;
    case RDEV_ARG_I64: return a->v.i64 < 0 ? -1 : a->v.i64;
    case RDEV_ARG_U64: return a->v.u64 > INT64_MAX ? INT64_MAX : (int64_t)a->v.u64;
    default: return -1;
  }
}

/* Resolves pointer argument i of kernel sig against the allocation its base
 * is in; on success *out holds the address the kernel may use. */
static int check_ptr_arg(rdev_rt_stream_t *s, const rdev_kernel_sig_t *sig, int i, uint32_t blocks,
                         const rdev_kernel_arg_t *args, rdev_kernel_arg_t *out) {
  const rdev_kernel_param_t *p = &sig->params[i];
  uint64_t count = 1;
  if (p->extent == RDEV_EXTENT_BLOCKS) count = blocks;
  if (p->extent == RDEV_EXTENT_ARG) {
    int64_t c = arg_count(&args[p->count_arg]);
    if (c < 0)
      return rt_fail(RDEV_KERNEL_ARGS, "%s: argument '%s' must not be negative", sig->name,
                     sig->params[p->count_arg].name);
    count = (uint64_t)c;
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(count, (uint64_t)p->elem_size, &bytes))
    return rt_fail(RDEV_INVALID_PARAM, "%s: argument '%s' extent overflows", sig->name, p->name);
  void *base;
  size_t size;
  int dev;
  const void *b = args[i].v.ptr.base;
  if (s->rt->be->lookup(s->rt->impl, b, &base, &size, &dev) != RDEV_OK)
    return rt_fail(RDEV_INVALID_PARAM, "%s: argument '%s' (%p) is not device memory", sig->name, p->name, b);
  if (dev != s->dev)
    return rt_fail(RDEV_INVALID_PARAM, "%s: argument '%s' is memory of device %d, stream is on device %d", sig->name,
                   p->name, dev, s->dev);
  uint64_t at = (uint64_t)((const char *)b - (const char *)base), off, end;
  if (__builtin_add_overflow(at, args[i].v.ptr.offset, &off) || off > size ||
      __builtin_add_overflow(off, bytes, &end) || end > size)
    return rt_fail(RDEV_INVALID_PARAM, "%s: argument '%s' needs %llu bytes at offset %llu%s of a %zu-byte buffer",
                   sig->name, p->name, (unsigned long long)bytes, (unsigned long long)at,
                   args[i].v.ptr.offset ? " (plus its offset)" : "", size);
  char *addr = (char *)base + off;
  if ((uintptr_t)addr % p->elem_size)
    return rt_fail(RDEV_MEMORY_ADDRESS_UNALIGNED, "%s: argument '%s' is not %u-byte aligned", sig->name, p->name,
                   p->elem_size);
  out->type = RDEV_ARG_PTR;
  out->v.ptr.base = addr;
  out->v.ptr.offset = 0;
  return RDEV_OK;
}

int rt_launch(rdev_rt_stream_t *s, const rdev_kernel_sig_t *sig, const rdev_rt_function_t *fn, uint32_t blocks,
              const rdev_kernel_arg_t *args, int nargs, rdev_rt_print_fn print_fn, void *print_user) {
  int nk, rc;
  const rdev_kernel_sig_t *all = rdev_rt_kernels(&nk);
  int index = (int)(sig - all);
  if (!fn && s->rt->be->kernel_offered && !s->rt->be->kernel_offered(s->rt->impl, index))
    return rt_fail(RDEV_UNKNOWN_KERNEL, "kernel '%s' is not offered by the %s backend", sig->name, s->rt->be->name);
  if (blocks < 1 || blocks > RDEV_RT_MAX_KERNEL_BLOCKS)
    return rt_fail(RDEV_INVALID_PARAM, "%s: blocks must be 1..%d, got %u", sig->name, RDEV_RT_MAX_KERNEL_BLOCKS,
                   blocks);
  if (nargs != sig->nparams)
    return rt_fail(RDEV_KERNEL_ARGS, "%s takes %d arguments, got %d", sig->name, sig->nparams, nargs);
  if (nargs > 0 && !args) return rt_fail(RDEV_INVALID_PARAM, "args is NULL");
  for (int i = 0; i < nargs; i++)
    if (args[i].type != sig->params[i].type)
      return rt_fail(RDEV_KERNEL_ARGS, "%s: argument %d '%s' must be %s, got %s", sig->name, i, sig->params[i].name,
                     rdev_arg_type_name(sig->params[i].type), rdev_arg_type_name(args[i].type));
  rt_task_t t = {.op = RT_TASK_KERNEL};
  t.u.kernel.index = index;
  t.u.kernel.fn = fn;
  t.u.kernel.blocks = blocks;
  t.u.kernel.print_fn = print_fn;
  t.u.kernel.print_user = print_user;
  for (int i = 0; i < nargs; i++) {
    t.u.kernel.args[i] = args[i];
    if (args[i].type == RDEV_ARG_PTR && (rc = check_ptr_arg(s, sig, i, blocks, args, &t.u.kernel.args[i]))) return rc;
  }
  return rt_engine_submit(s, &t);
}

int rdev_rt_launch(rdev_rt_stream_t *s, const char *name, uint32_t blocks, const rdev_kernel_arg_t *args, int nargs,
                   rdev_rt_print_fn print_fn, void *print_user) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  if (!name) return rt_fail(RDEV_INVALID_PARAM, "kernel name is NULL");
  const rdev_kernel_sig_t *sig = rdev_rt_kernel_find(name);
  if (!sig) return rt_fail(RDEV_UNKNOWN_KERNEL, "unknown kernel '%.64s'", name);
  return rt_launch(s, sig, NULL, blocks, args, nargs, print_fn, print_user);
}

int rdev_rt_kernel_offered(rdev_rt_t *rt, const char *name) {
  int nk;
  const rdev_kernel_sig_t *all = rdev_rt_kernels(&nk), *sig = rdev_rt_kernel_find(name);
  if (!rt || !sig) return 0;
  return !rt->be->kernel_offered || rt->be->kernel_offered(rt->impl, (int)(sig - all));
}

int rdev_rt_kernels_confined(rdev_rt_t *rt) { return rt && rt->be->confined; }
