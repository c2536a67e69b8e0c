/*
 * proto/ops/op_check_reduce.c — the rules of the reductions: ReduceSum,
 * Mean and Amax. Their dims may be negative; an empty list reduces over
 * every dimension; a dimension named twice is refused. out has self's
 * shape less the reduced dims (or with them as 1, keepDim).
 */
#include "op_check.h"

/* self's shape with the dims of mask removed (or 1 when keep) into out's. */
static int check_out_shape(const char *name, const rdev_tensor_t *s, const rdev_tensor_t *o, uint32_t mask, bool keep,
                           char *msg, size_t cap) {
  int nd = 0;
  int64_t dims[RDEV_OP_MAX_DIMS];
  for (int i = 0; i < s->ndim; i++)
    if (!(mask & (1u << i)))
      dims[nd++] = s->dims[i];
    else if (keep)
      dims[nd++] = 1;
  if (!op_has_shape(o, nd, dims)) {
    char so[128], ss[128];
    op_shape_text(o, so, sizeof so);
    op_shape_text(s, ss, sizeof ss);
    return op_invalid(msg, cap, "aclnn%s: out has shape %s, not that of self %s reduced", name, so, ss);
  }
  return RDEV_OK;
}

/* Arguments self, dims, keepDim, dtype, out. */
static int check_sum(const char *name, const rdev_op_call_t *c, bool want_float, char *msg, size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *o = c->args[4].v.t;
  int dt = c->args[3].v.dtype, rc;
  if (!op_dtype_in(s->dtype, op_num_types, op_num_count))
    return op_invalid(msg, cap, "aclnn%s: self's data type %s is not supported", name, rdev_dtype_name(s->dtype));
  if (!op_dtype_in(dt, op_num_types, op_num_count) || (want_float && !op_is_float(dt)))
    return op_invalid(msg, cap, "aclnn%s: dtype %s is not supported%s", name, rdev_dtype_name(dt),
                      want_float ? " (a floating type is)" : "");
  if (o->dtype != dt)
    return op_invalid(msg, cap, "aclnn%s: out is %s, dtype is %s", name, rdev_dtype_name(o->dtype),
                      rdev_dtype_name(dt));
  if (!op_can_cast(s->dtype, dt))
    return op_invalid(msg, cap, "aclnn%s: self's %s cannot be cast to dtype %s", name, rdev_dtype_name(s->dtype),
                      rdev_dtype_name(dt));
  uint32_t mask;
  if ((rc = op_dims_mask(name, "dim", &c->args[1], s->ndim, true, &mask, msg, cap))) return rc;
  return check_out_shape(name, s, o, mask, c->args[2].v.i64 != 0, msg, cap);
}

int rdev_op_check_reduce_sum(const rdev_op_call_t *c, char *msg, size_t cap) {
  return check_sum("ReduceSum", c, false, msg, cap);
}

int rdev_op_check_mean(const rdev_op_call_t *c, char *msg, size_t cap) { return check_sum("Mean", c, true, msg, cap); }

int rdev_op_check_amax(const rdev_op_call_t *c, char *msg, size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *o = c->args[3].v.t;
  int rc;
  if (!op_dtype_in(s->dtype, op_num_types, op_num_count))
    return op_invalid(msg, cap, "aclnnAmax: self's data type %s is not supported", rdev_dtype_name(s->dtype));
  if (o->dtype != s->dtype)
    return op_invalid(msg, cap, "aclnnAmax: out is %s, self is %s", rdev_dtype_name(o->dtype),
                      rdev_dtype_name(s->dtype));
  uint32_t mask;
  if ((rc = op_dims_mask("Amax", "dim", &c->args[1], s->ndim, true, &mask, msg, cap))) return rc;
  for (int i = 0; i < s->ndim; i++)
    if ((mask & (1u << i)) && s->dims[i] == 0)
      return op_invalid(msg, cap, "aclnnAmax: dimension %d, which it reduces, has no elements", i);
  return check_out_shape("Amax", s, o, mask, c->args[2].v.i64 != 0, msg, cap);
}
