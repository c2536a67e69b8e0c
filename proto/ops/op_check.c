/*
 * proto/ops/op_check.c — the operators' data type and shape rules
 * (rdev_op_check_<name>, named in the generated table), and what they
 * share: type promotion, broadcasting and the error sentence. They run on
 * the client (aclnn's first phase), in rdevd and in the runtime; a call
 * reaches them with its argument kinds and tensor descriptions checked.
 */
#include "op_check.h"

#include <stdarg.h>
#include <stdio.h>

int op_invalid(char *msg, size_t cap, const char *fmt, ...) {
  if (msg && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
  }
  return RDEV_OP_PARAM_INVALID;
}

bool op_is_float(int dt) {
  return dt == RDEV_DT_FLOAT || dt == RDEV_DT_FLOAT16 || dt == RDEV_DT_BF16 || dt == RDEV_DT_DOUBLE;
}

bool op_is_int(int dt) {
  return dt == RDEV_DT_INT8 || dt == RDEV_DT_UINT8 || dt == RDEV_DT_INT16 || dt == RDEV_DT_UINT16 ||
         dt == RDEV_DT_INT32 || dt == RDEV_DT_UINT32 || dt == RDEV_DT_INT64 || dt == RDEV_DT_UINT64;
}

/* Rank of a type in promotion: bool < integers by width < float16/bfloat16 < float32 < float64. */
static int rank(int dt) {
  switch (dt) {
    case RDEV_DT_BOOL: return 0;
    case RDEV_DT_UINT8:
    case RDEV_DT_INT8: return 1;
    case RDEV_DT_INT16:
    case RDEV_DT_UINT16: return 2;
    case RDEV_DT_INT32:
    case RDEV_DT_UINT32: return 3;
    case RDEV_DT_INT64:
    case RDEV_DT_UINT64: return 4;
    case RDEV_DT_FLOAT16:
    case RDEV_DT_BF16: return 5;
    case RDEV_DT_FLOAT: return 6;
    case RDEV_DT_DOUBLE: return 7;
    default: return -1;
  }
}

int op_promote(int a, int b) {
  if (a == b) return a;
  if ((a == RDEV_DT_FLOAT16 && b == RDEV_DT_BF16) || (a == RDEV_DT_BF16 && b == RDEV_DT_FLOAT16)) return RDEV_DT_FLOAT;
  if ((a == RDEV_DT_INT8 && b == RDEV_DT_UINT8) || (a == RDEV_DT_UINT8 && b == RDEV_DT_INT8)) return RDEV_DT_INT16;
  return rank(a) >= rank(b) ? a : b;
}

bool op_can_cast(int from, int to) {
  if (from == to) return true;
  if (op_is_float(from)) return op_is_float(to); /* no float to integer or bool */
  if (op_is_int(from)) return op_is_float(to) || op_is_int(to);
  return true; /* bool to anything */
}

bool op_same_shape(const rdev_tensor_t *a, const rdev_tensor_t *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool op_broadcast(const rdev_tensor_t *a, const rdev_tensor_t *b, int *ndim, int64_t *dims) {
  int n = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int i = 0; i < n; i++) { /* aligned from the last dimension */
    int ia = a->ndim - n + i, ib = b->ndim - n + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    dims[i] = da == 1 ? db : da;
  }
  *ndim = n;
  return true;
}

bool op_has_shape(const rdev_tensor_t *t, int ndim, const int64_t *dims) {
  if (t->ndim != ndim) return false;
  for (int i = 0; i < ndim; i++)
    if (t->dims[i] != dims[i]) return false;
  return true;
}

void op_shape_text(const rdev_tensor_t *t, char *buf, size_t cap) {
  size_t at = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < t->ndim && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, i ? ", %lld" : "%lld", (long long)t->dims[i]);
  if (at < cap) snprintf(buf + at, cap - at, "]");
}

bool op_dtype_in(int dt, const int *set, int n) {
  for (int i = 0; i < n; i++)
    if (set[i] == dt) return true;
  return false;
}

const int op_num_types[] = {RDEV_DT_FLOAT, RDEV_DT_FLOAT16, RDEV_DT_BF16, RDEV_DT_DOUBLE, RDEV_DT_INT32,
                            RDEV_DT_INT64, RDEV_DT_INT16,   RDEV_DT_INT8, RDEV_DT_UINT8,  RDEV_DT_BOOL};
const int op_num_count = (int)(sizeof op_num_types / sizeof op_num_types[0]);
const int op_float_types[] = {RDEV_DT_FLOAT, RDEV_DT_FLOAT16, RDEV_DT_BF16, RDEV_DT_DOUBLE};
const int op_float_count = (int)(sizeof op_float_types / sizeof op_float_types[0]);

int op_promote_scalar(int tensor_dt, int scalar_dt) {
  if (op_is_float(tensor_dt)) return tensor_dt;
  if (op_is_float(scalar_dt)) return RDEV_DT_FLOAT;
  if (tensor_dt == RDEV_DT_BOOL && scalar_dt != RDEV_DT_BOOL) return RDEV_DT_INT64;
  return tensor_dt;
}

bool op_wrap_dim(int64_t dim, int ndim, int *out) {
  int n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n) return false;
  *out = (int)(dim < 0 ? dim + n : dim);
  return true;
}

int op_dims_mask(const char *name, const char *param, const rdev_op_arg_t *a, int ndim, bool empty_all, uint32_t *mask,
                 char *msg, size_t cap) {
  *mask = 0;
  if (a->n == 0 && empty_all) {
    *mask = ndim > 0 ? (1u << ndim) - 1 : 0;
    return RDEV_OK;
  }
  for (uint32_t i = 0; i < a->n; i++) {
    int d;
    if (!op_wrap_dim(a->v.ints[i], ndim, &d))
      return op_invalid(msg, cap, "aclnn%s: %s names dimension %lld of a %d-dimensional tensor", name, param,
                        (long long)a->v.ints[i], ndim);
    if (ndim == 0) continue; /* a 0-d tensor's dimension 0 is no dimension */
    if (*mask & (1u << d)) return op_invalid(msg, cap, "aclnn%s: %s names dimension %d twice", name, param, d);
    *mask |= 1u << d;
  }
  return RDEV_OK;
}

/* ---- arithmetic ---------------------------------------------------------------- */

/* self op other (+ alpha) into out: numeric types, out the broadcast shape,
 * the promoted type castable to out's. */
int op_check_binary(const char *name, const rdev_op_call_t *c, int self, int other, int out, char *msg, size_t cap) {
  const rdev_tensor_t *a = c->args[self].v.t, *b = c->args[other].v.t, *o = c->args[out].v.t;
  for (int i = 0; i < 3; i++) {
    const rdev_tensor_t *t = i == 0 ? a : i == 1 ? b : o;
    if (!op_dtype_in(t->dtype, op_num_types, op_num_count))
      return op_invalid(msg, cap, "aclnn%s: data type %s is not supported", name, rdev_dtype_name(t->dtype));
  }
  int nd;
  int64_t dims[RDEV_OP_MAX_DIMS];
  char sa[128], sb[128], so[128];
  op_shape_text(a, sa, sizeof sa);
  op_shape_text(b, sb, sizeof sb);
  op_shape_text(o, so, sizeof so);
  if (!op_broadcast(a, b, &nd, dims))
    return op_invalid(msg, cap, "aclnn%s: shapes %s and %s do not broadcast", name, sa, sb);
  if (!op_has_shape(o, nd, dims))
    return op_invalid(msg, cap, "aclnn%s: out has shape %s, the broadcast of %s and %s is not it", name, so, sa, sb);
  int pt = op_promote(a->dtype, b->dtype);
  if (!op_can_cast(pt, o->dtype))
    return op_invalid(msg, cap, "aclnn%s: the result, %s, cannot be cast to out's %s", name, rdev_dtype_name(pt),
                      rdev_dtype_name(o->dtype));
  return RDEV_OK;
}

int op_check_alpha(const char *name, int result_dt, const rdev_op_arg_t *alpha, char *msg, size_t cap) {
  if (!op_is_float(result_dt) && op_is_float(alpha->v.scalar.dtype))
    return op_invalid(msg, cap, "aclnn%s: alpha is %s, an integral result takes an integral alpha", name,
                      rdev_dtype_name(alpha->v.scalar.dtype));
  return RDEV_OK;
}

int rdev_op_check_add(const rdev_op_call_t *c, char *msg, size_t cap) {
  int rc = op_check_binary("Add", c, 0, 1, 3, msg, cap);
  return rc ? rc
            : op_check_alpha("Add", op_promote(c->args[0].v.t->dtype, c->args[1].v.t->dtype), &c->args[2], msg, cap);
}
