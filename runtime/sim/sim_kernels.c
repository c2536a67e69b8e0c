/*
 * runtime/sim/sim_kernels.c — C bodies of the built-in kernels for the sim
 * device, in the order of the registry (runtime/kernels.c). Arguments arrive
 * validated: pointer extents were checked against their buffers, so a body
 * may touch exactly the elements its signature declares. Elementwise kernels
 * split [0, n) into `blocks` contiguous parts, one per block, as a device
 * would spread them over cores.
 */
#include <string.h>

#include "sim.h"

#define PTR(i, T) ((T *)args[i].v.ptr.base)

/* The part of [0, n) that block b of blocks covers. */
static void block_range(uint32_t n, uint32_t b, uint32_t blocks, uint32_t *lo, uint32_t *hi) {
  *lo = (uint32_t)((uint64_t)n * b / blocks);
  *hi = (uint32_t)((uint64_t)n * (b + 1) / blocks);
}

static int k_write_i32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  int32_t *out = PTR(0, int32_t);
  int32_t value = args[1].v.i32;
  for (uint32_t b = 0; b < ctx->blocks; b++) {
    out[b] = value;
    rt_print(&ctx->print, "Source data: %d\n", value);
  }
  return RDEV_OK;
}

static int k_square_f32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  const float *in = PTR(0, const float);
  float *out = PTR(1, float);
  uint32_t n = args[2].v.u32, lo, hi;
  for (uint32_t b = 0; b < ctx->blocks; b++) {
    block_range(n, b, ctx->blocks, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++) out[i] = in[i] * in[i];
  }
  return RDEV_OK;
}

static int k_add_f32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  const float *x = PTR(0, const float), *y = PTR(1, const float);
  float *out = PTR(2, float);
  uint32_t n = args[3].v.u32, lo, hi;
  for (uint32_t b = 0; b < ctx->blocks; b++) {
    block_range(n, b, ctx->blocks, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++) out[i] = x[i] + y[i];
  }
  return RDEV_OK;
}

static int k_axpy_f32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  float alpha = args[0].v.f32;
  const float *x = PTR(1, const float);
  float *y = PTR(2, float);
  uint32_t n = args[3].v.u32, lo, hi;
  for (uint32_t b = 0; b < ctx->blocks; b++) {
    block_range(n, b, ctx->blocks, &lo, &hi);
    for (uint32_t i = lo; i < hi; i++) y[i] = alpha * x[i] + y[i];
  }
  return RDEV_OK;
}

/* Pairwise-free but double-accumulated: each block sums its part, then the
 * block sums are added in order, so the result does not depend on timing. */
static int k_reduce_sum_f32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  const float *in = PTR(0, const float);
  float *out = PTR(1, float);
  uint32_t n = args[2].v.u32, lo, hi;
  double total = 0;
  for (uint32_t b = 0; b < ctx->blocks; b++) {
    block_range(n, b, ctx->blocks, &lo, &hi);
    double part = 0;
    for (uint32_t i = lo; i < hi; i++) part += in[i];
    total += part;
  }
  *out = (float)total;
  return RDEV_OK;
}

static int k_delay_us(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  rt_engine_sleep(ctx->stream, (uint64_t)args[0].v.u32 * 1000u);
  return RDEV_OK;
}

static int k_read_i32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  const int32_t *in = PTR(0, const int32_t);
  for (uint32_t b = 0; b < ctx->blocks; b++) rt_print(&ctx->print, "Destination data: %d\n", in[b]);
  return RDEV_OK;
}

static int k_inc_u32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  uint32_t *x = PTR(0, uint32_t);
  for (uint32_t b = 0; b < ctx->blocks; b++) x[b] += 1;
  return RDEV_OK;
}

static int k_long_inc_u32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  if (rt_engine_sleep(ctx->stream, 500000000u)) return RDEV_OK; /* force-destroyed meanwhile */
  return k_inc_u32(ctx, args);
}

static int k_double_u32(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  uint32_t *x = PTR(0, uint32_t);
  for (uint32_t b = 0; b < ctx->blocks; b++) x[b] *= 2;
  return RDEV_OK;
}

static int k_trap(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  (void)ctx, (void)args;
  return rt_fail(RDEV_RT_AICORE_EXCEPTION, "kernel trap: the AI Core raised an exception");
}

static int k_hello(sim_kctx_t *ctx, const rdev_kernel_arg_t *args) {
  (void)args;
  for (uint32_t b = 0; b < ctx->blocks; b++) rt_print(&ctx->print, "Hello World\n");
  return RDEV_OK;
}

const sim_kernel_fn sim_kernel_fns[] = {k_write_i32,      k_square_f32, k_add_f32,  k_axpy_f32,
                                        k_reduce_sum_f32, k_delay_us,   k_read_i32, k_inc_u32,
                                        k_long_inc_u32,   k_double_u32, k_trap,     k_hello};
const char *const sim_kernel_names[] = {"write_i32",      "square_f32", "add_f32",  "axpy_f32",
                                        "reduce_sum_f32", "delay_us",   "read_i32", "inc_u32",
                                        "long_inc_u32",   "double_u32", "trap",     "hello"};
const int sim_kernel_count = (int)(sizeof sim_kernel_fns / sizeof sim_kernel_fns[0]);
