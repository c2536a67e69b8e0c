/*
 * runtime/sim/sim_op_nn.c — the sim's network operators: Softmax and
 * LayerNorm, row by row in double. Each row is read whole before it is
 * written, so out may be self's own view; other overlaps go through a
 * temporary (sim_out_begin).
 */
#include <math.h>

#include "sim_ops.h"

/* At every 65536th step j of a plain loop of n steps: counts the next
 * steps as work and says whether the operator was cut off. */
static bool cut_at(int64_t j, int64_t n) { return !(j & 0xffff) && sim_op_tick(n - j < 0x10000 ? n - j : 0x10000); }

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
  bool cut = false;
  do {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < len && !(cut = cut || cut_at(j, len)); j++) {
      double v = sim_ld(x, it.off[1] + j * sx);
      if (v > mx || v != v) mx = v;
    }
    for (int64_t j = 0; j < len && !(cut = cut || cut_at(j, len)); j++) sum += exp(sim_ld(x, it.off[1] + j * sx) - mx);
    for (int64_t j = 0; j < len && !(cut = cut || cut_at(j, len)); j++)
      sim_st(&o.t, it.off[0] + j * so, exp(sim_ld(x, it.off[1] + j * sx) - mx) / sum);
  } while (!cut && sim_iter_next(&it));
  sim_out_end(&o);
  return RDEV_OK;
}

/* out = (x - mean) * rstd * weight + bias over each row of the normalized
 * dims, rstd = 1 / sqrt(biased variance + eps). */
int sim_op_layer_norm(const rdev_op_call_t *c) {
  const rdev_tensor_t *x = c->args[0].v.t;
  const rdev_tensor_t *w = c->args[2].present ? c->args[2].v.t : NULL, *b = c->args[3].present ? c->args[3].v.t : NULL;
  const rdev_tensor_t *ins[3] = {x, w, b};
  int r = (int)c->args[1].n, a = x->ndim - r;
  double eps = c->args[4].v.f64;
  sim_out_t o[3] = {{.mem = NULL}, {.mem = NULL}, {.mem = NULL}};
  int rc = RDEV_OK;
  for (int i = 0; i < 3 && !rc; i++) /* out may be input's own view: a row is read before it is written */
    if (c->args[5 + i].present) rc = sim_out_begin(&o[i], c->args[5 + i].v.t, ins, 3, i == 0);
  int64_t R = 1, outer[RDEV_OP_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) {
    outer[i] = i < a ? x->dims[i] : 1;
    if (i >= a) R *= x->dims[i];
  }
  double *row = rc ? NULL : sim_op_temp((size_t)R + 1, sizeof(double), "aclnnLayerNorm's row");
  if (!rc && !row) rc = RDEV_BAD_ALLOC;
  if (rc) {
    for (int i = 0; i < 3; i++) free(o[i].mem);
    return rc;
  }
  const rdev_tensor_t *mean = c->args[6].present ? &o[1].t : NULL, *rstd = c->args[7].present ? &o[2].t : NULL;
  const rdev_tensor_t *ts[4] = {x, &o[0].t, mean ? mean : x, rstd ? rstd : x};
  sim_iter_t it;
  sim_iter_init(&it, x->ndim, outer, ts, 4);
  bool cut = false;
  if (it.left > 0) do {
      /* the row's views: the normalized dims of input and out at this row */
      rdev_tensor_t xs = *x, os = o[0].t;
      xs.ndim = os.ndim = r;
      for (int i = 0; i < r; i++) {
        xs.dims[i] = os.dims[i] = x->dims[a + i];
        xs.strides[i] = x->strides[a + i];
        os.strides[i] = o[0].t.strides[a + i];
      }
      xs.offset = it.off[0];
      os.offset = it.off[1];
      const rdev_tensor_t *rs[4] = {&xs, &os, w ? w : &xs, b ? b : &xs};
      sim_iter_t in;
      double sum = 0, var = 0;
      int64_t j = 0;
      sim_iter_init(&in, r, xs.dims, rs, 4);
      if (in.left > 0) do
          sum += row[j++] = sim_ld(x, in.off[0]);
        while (sim_iter_next(&in));
      double mu = sum / (double)R;
      for (j = 0; j < R && !(cut = cut || cut_at(j, R)); j++) var += (row[j] - mu) * (row[j] - mu);
      double rs_ = 1.0 / sqrt(var / (double)R + eps);
      j = 0;
      sim_iter_init(&in, r, xs.dims, rs, 4);
      if (in.left > 0) do {
          double v = (row[j++] - mu) * rs_;
          if (w) v *= sim_ld(w, in.off[2]);
          if (b) v += sim_ld(b, in.off[3]);
          sim_st(&os, in.off[1], v);
        } while (sim_iter_next(&in));
      if (mean) sim_st(mean, it.off[2], mu);
      if (rstd) sim_st(rstd, it.off[3], rs_);
    } while (!cut && !sim_op_cut() && sim_iter_next(&it));
  free(row);
  for (int i = 0; i < 3; i++)
    if (c->args[5 + i].present) sim_out_end(&o[i]);
  return RDEV_OK;
}
