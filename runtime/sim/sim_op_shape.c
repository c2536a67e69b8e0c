/*
 * runtime/sim/sim_op_shape.c — the sim's operators that move elements:
 * Permute (a copy of self's permuted view) and Cat (each tensor copied into
 * its slice of out, converted to out's type). out overlapping an input is
 * written through a temporary (sim_out_begin).
 */
#include "sim_ops.h"

int sim_op_permute(const rdev_op_call_t *c) {
  const rdev_tensor_t *s = c->args[0].v.t, *ins[1] = {s};
  rdev_tensor_t v = *s;
  for (int i = 0; i < s->ndim; i++) {
    int d;
    op_wrap_dim(c->args[1].v.ints[i], s->ndim, &d);
    v.dims[i] = s->dims[d];
    v.strides[i] = s->strides[d];
  }
  sim_out_t o;
  int rc = sim_out_begin(&o, c->args[2].v.t, ins, 1, false);
  if (rc) return rc;
  sim_copy_cast(&o.t, &v);
  sim_out_end(&o);
  return RDEV_OK;
}

int sim_op_cat(const rdev_op_call_t *c) {
  const rdev_op_arg_t *l = &c->args[0];
  const rdev_tensor_t *ins[RDEV_OP_MAX_LIST], *ref = NULL;
  for (uint32_t i = 0; i < l->n; i++) {
    ins[i] = &l->v.t[i];
    if (!ref && !(ins[i]->ndim == 1 && ins[i]->dims[0] == 0)) ref = ins[i];
  }
  if (!ref) return RDEV_OK; /* all [0]: nothing to copy */
  int d;
  op_wrap_dim(c->args[1].v.i64, ref->ndim, &d);
  sim_out_t o;
  int rc = sim_out_begin(&o, c->args[2].v.t, ins, (int)l->n, false);
  if (rc) return rc;
  int64_t at = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    const rdev_tensor_t *t = ins[i];
    if (t->ndim == 1 && t->dims[0] == 0) continue;
    rdev_tensor_t slice = o.t;
    slice.dims[d] = t->dims[d];
    slice.offset += at * o.t.strides[d];
    at += t->dims[d];
    sim_copy_cast(&slice, t);
  }
  sim_out_end(&o);
  return RDEV_OK;
}
