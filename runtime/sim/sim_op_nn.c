/*
 * runtime/sim/sim_op_nn.c — the sim's network operators: Softmax and
 * LayerNorm, row by row in double. Each row is read whole before it is
 * written, so out may be self's own view; other overlaps go through a
 * temporary (sim_out_begin).
 */
#include <math.h>

#include "sim_ops.h"

int sim_op_softmax(const rdev_op_call_t *c) {
  const rdev_tensor_t *x = c->args[0].v.t, *out = c->args[2].v.t, *ins[1] = {x};
  if (rdev_tensor_numel(x) == 0) return RDEV_OK;
  int d;
  op_wrap_dim(c->args[1].v.i64, x->ndim, &d);
  sim_out_t o;
  int rc = sim_out_begin(&o, out, ins, 1, true);
  if (rc) return rc;
  int64_t rows[RDEV_OP_MAX_DIMS], len = x->ndim ? x->dims[d] : 1;
  int64_t sx = x->ndim ? x->strides[d] : 0, so = x->ndim ? o.t.strides[d] : 0;
  for (int i = 0; i < x->ndim; i++) rows[i] = i == d ? 1 : x->dims[i];
  const rdev_tensor_t *ts[2] = {&o.t, x};
  sim_iter_t it;
  sim_iter_init(&it, x->ndim, rows, ts, 2);
  do {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < len; j++) {
      double v = sim_ld(x, it.off[1] + j * sx);
      if (v > mx || v != v) mx = v;
    }
    for (int64_t j = 0; j < len; j++) sum += exp(sim_ld(x, it.off[1] + j * sx) - mx);
    for (int64_t j = 0; j < len; j++) sim_st(&o.t, it.off[0] + j * so, exp(sim_ld(x, it.off[1] + j * sx) - mx) / sum);
  } while (sim_iter_next(&it));
  sim_out_end(&o);
  return RDEV_OK;
}
