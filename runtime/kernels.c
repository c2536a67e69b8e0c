/*
 * runtime/kernels.c — the registry of built-in kernels: names and typed
 * signatures, shared by every backend. Each pointer parameter declares its
 * extent (element size times one, the block count, or an integer argument),
 * so the generic layer can bound-check a launch before any backend runs it.
 * The sim backend's C bodies are in sim/sim_kernels.c, in the same order.
 * Kernel binaries (binary.c) name these kernels.
 */
#include <string.h>

#include "rt_internal.h"

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
