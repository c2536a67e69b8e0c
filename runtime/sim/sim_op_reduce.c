/*
 * runtime/sim/sim_op_reduce.c — the sim's reductions: ReduceSum, Mean and
 * Amax over any set of dims (none named: all). Each output element gathers
 * in a temporary accumulator (double for floating results, int64 for
 * integer ones) while self is walked once; out is written only after
 * every element of self is read, so out may overlap self.
 */
#include <math.h>

#include "sim_ops.h"

typedef enum { RED_SUM, RED_MEAN, RED_MAX } red_t;

/* self reduced over the dims of argument dims_at into out (argument out_at),
 * elements converted to type dt first (as torch's dtype argument does). */
static int reduce(const rdev_op_call_t *c, int dims_at, int out_at, int dt, red_t kind) {
  const rdev_tensor_t *s = c->args[0].v.t, *out = c->args[out_at].v.t;
  bool keep = c->args[dims_at + 1].v.i64 != 0, fl = sim_is_float(dt);
  uint32_t mask;
  op_dims_mask("", "", &c->args[dims_at], s->ndim, true, &mask, NULL, 0);
  /* kept: self's shape with the reduced dims 1; acc: a contiguous tensor of
   * that shape; ov: out seen with that shape (0 strides on reduced dims) */
  rdev_tensor_t acc = {.dtype = fl ? RDEV_DT_DOUBLE : RDEV_DT_INT64, .ndim = s->ndim}, ov = *out;
  ov.ndim = s->ndim;
  int64_t n = 1, count = 1;
  for (int i = s->ndim - 1, j = out->ndim - 1; i >= 0; i--) {
    bool red = mask & (1u << i);
    acc.dims[i] = ov.dims[i] = red ? 1 : s->dims[i];
    acc.strides[i] = n;
    n *= acc.dims[i];
    if (red) count *= s->dims[i];
    ov.strides[i] = red && !keep ? 0 : out->strides[j--];
  }
  void *mem = sim_op_temp((size_t)n, 8, "a reduction's accumulators");
  if (!mem) return RDEV_BAD_ALLOC;
  acc.addr = (uint64_t)(uintptr_t)mem;
  double *fa = mem;
  int64_t *ia = mem;
  for (int64_t i = 0; i < n; i++) {
    if (fl)
      fa[i] = kind == RED_MAX ? -INFINITY : 0.0;
    else
      ia[i] = kind == RED_MAX ? INT64_MIN : 0;
  }
  const rdev_tensor_t *ts[2] = {s, &acc};
  sim_iter_t it;
  sim_iter_init(&it, s->ndim, s->dims, ts, 2);
  bool rnd = s->dtype != dt;
  if (it.left > 0 && fl) do {
      double v = sim_ld(s, it.off[0]), *a = &fa[it.off[1]];
      if (rnd) v = sim_round(dt, v);
      if (kind != RED_MAX)
        *a += v;
      else if (v > *a || v != v)
        *a = v; /* a nan, once in, stays: nothing compares greater */
    } while (sim_iter_next(&it));
  else if (it.left > 0)
    do {
      int64_t v = sim_ldi(s, it.off[0]), *a = &ia[it.off[1]];
      if (dt == RDEV_DT_BOOL) v = v != 0;
      if (kind != RED_MAX)
        *a = (int64_t)((uint64_t)*a + (uint64_t)v);
      else if (v > *a)
        *a = v;
    } while (sim_iter_next(&it));
  if (kind == RED_MEAN)
    for (int64_t i = 0; i < n; i++) fa[i] /= (double)count;
  const rdev_tensor_t *ws[2] = {&ov, &acc};
  sim_iter_init(&it, s->ndim, acc.dims, ws, 2);
  if (it.left > 0) do {
      if (fl)
        sim_st(&ov, it.off[0], fa[it.off[1]]);
      else
        sim_sti(&ov, it.off[0], ia[it.off[1]]);
    } while (sim_iter_next(&it));
  free(mem);
  return RDEV_OK;
}

int sim_op_reduce_sum(const rdev_op_call_t *c) { return reduce(c, 1, 4, c->args[3].v.dtype, RED_SUM); }
int sim_op_mean(const rdev_op_call_t *c) { return reduce(c, 1, 4, c->args[3].v.dtype, RED_MEAN); }
int sim_op_amax(const rdev_op_call_t *c) { return reduce(c, 1, 3, c->args[0].v.t->dtype, RED_MAX); }
