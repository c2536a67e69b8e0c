/*
 * proto/ops/op_check_shape.c — the rules of the operators that move
 * elements: Permute (dims a permutation, negatives wrapped) and Cat
 * (along one dim; 1-d tensors of shape [0] are skipped, torch's legacy).
 */
#include "op_check.h"

int rdev_op_check_permute(const rdev_op_call_t *c, char *msg, size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *o = c->args[2].v.t;
  const rdev_op_arg_t *dims = &c->args[1];
  if ((int)dims->n != s->ndim)
    return op_invalid(msg, cap, "aclnnPermute: dims has %u entries for a %d-dimensional self", dims->n, s->ndim);
  uint32_t mask;
  int rc = op_dims_mask("Permute", "dims", dims, s->ndim, false, &mask, msg, cap);
  if (rc) return rc;
  if (o->dtype != s->dtype)
    return op_invalid(msg, cap, "aclnnPermute: out is %s, self is %s", rdev_dtype_name(o->dtype),
                      rdev_dtype_name(s->dtype));
  int64_t want[RDEV_OP_MAX_DIMS];
  for (int i = 0; i < s->ndim; i++) {
    int d;
    op_wrap_dim(dims->v.ints[i], s->ndim, &d);
    want[i] = s->dims[d];
  }
  if (!op_has_shape(o, s->ndim, want)) return op_invalid(msg, cap, "aclnnPermute: out's shape is not self's permuted");
  return RDEV_OK;
}

static bool skipped(const rdev_tensor_t *t) { return t->ndim == 1 && t->dims[0] == 0; }

int rdev_op_check_cat(const rdev_op_call_t *c, char *msg, size_t cap) {
  const rdev_op_arg_t *l = &c->args[0];
  const rdev_tensor_t *o = c->args[2].v.t, *ref = NULL;
  if (l->n == 0) return op_invalid(msg, cap, "aclnnCat: tensors is empty");
  int pt = l->v.t[0].dtype;
  for (uint32_t i = 0; i < l->n; i++) {
    const rdev_tensor_t *t = &l->v.t[i];
    if (!op_dtype_in(t->dtype, op_num_types, op_num_count))
      return op_invalid(msg, cap, "aclnnCat: tensors[%u]'s data type %s is not supported", i,
                        rdev_dtype_name(t->dtype));
    pt = op_promote(pt, t->dtype);
    if (!ref && !skipped(t)) ref = t;
  }
  if (!ref) ref = &l->v.t[0]; /* all [0]: the result is [0] */
  int d;
  if (!op_wrap_dim(c->args[1].v.i64, ref->ndim, &d) || ref->ndim == 0)
    return op_invalid(msg, cap, "aclnnCat: dim %lld is out of range for %d-dimensional tensors",
                      (long long)c->args[1].v.i64, ref->ndim);
  int64_t want[RDEV_OP_MAX_DIMS], sum = 0;
  for (uint32_t i = 0; i < l->n; i++) {
    const rdev_tensor_t *t = &l->v.t[i];
    if (skipped(t) && t != ref) continue;
    if (t->ndim != ref->ndim)
      return op_invalid(msg, cap, "aclnnCat: tensors[%u] has %d dimensions, not %d", i, t->ndim, ref->ndim);
    for (int k = 0; k < t->ndim; k++)
      if (k != d && t->dims[k] != ref->dims[k])
        return op_invalid(msg, cap, "aclnnCat: tensors[%u]'s size %lld in dimension %d is not %lld", i,
                          (long long)t->dims[k], k, (long long)ref->dims[k]);
    sum += t->dims[d];
  }
  for (int k = 0; k < ref->ndim; k++) want[k] = k == d ? sum : ref->dims[k];
  if (!op_has_shape(o, ref->ndim, want)) {
    char so[128];
    op_shape_text(o, so, sizeof so);
    return op_invalid(msg, cap, "aclnnCat: out has shape %s, not the tensors' joined along dim %d", so, d);
  }
  if (!op_dtype_in(o->dtype, op_num_types, op_num_count) || !op_can_cast(pt, o->dtype))
    return op_invalid(msg, cap, "aclnnCat: the result, %s, cannot be cast to out's %s", rdev_dtype_name(pt),
                      rdev_dtype_name(o->dtype));
  return RDEV_OK;
}
