/*
 * proto/ops/op_check_math.c — the rules of the elementwise operators:
 * arithmetic with a tensor or a scalar (Adds, Sub, Mul, Muls, Div), the
 * unary functions (Neg ... Tanh), and the type-converting copies (Cast,
 * InplaceCopy, InplaceFillScalar). Types promote as torch's do.
 */
#include "op_check.h"

/* The numeric types but bool (Neg, Abs, Relu refuse bool as torch does). */
static const int signed_types[] = {RDEV_DT_FLOAT, RDEV_DT_FLOAT16, RDEV_DT_BF16, RDEV_DT_DOUBLE, RDEV_DT_INT32,
                                   RDEV_DT_INT64, RDEV_DT_INT16,   RDEV_DT_INT8, RDEV_DT_UINT8};
#define NSIGNED ((int)(sizeof signed_types / sizeof signed_types[0]))

static int bad_type(const char *name, const char *param, int dt, char *msg, size_t cap) {
  return op_invalid(msg, cap, "aclnn%s: %s's data type %s is not supported", name, param, rdev_dtype_name(dt));
}

static int bad_shape(const char *name, const rdev_tensor_t *want, const rdev_tensor_t *out, char *msg, size_t cap) {
  char sw[128], so[128];
  op_shape_text(want, sw, sizeof sw);
  op_shape_text(out, so, sizeof so);
  return op_invalid(msg, cap, "aclnn%s: out has shape %s, self's is %s", name, so, sw);
}

static int bad_cast(const char *name, int from, int to, char *msg, size_t cap) {
  return op_invalid(msg, cap, "aclnn%s: the result, %s, cannot be cast to out's %s", name, rdev_dtype_name(from),
                    rdev_dtype_name(to));
}

/* self into out of the same shape: self of the types ok[0..n), out numeric,
 * the result (self's type, or float32 for an integer or bool self when
 * to_float) castable to out's type. */
static int unary(const char *name, const rdev_op_call_t *c, const int *ok, int n, bool to_float, char *msg,
                 size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *o = c->args[1].v.t;
  if (!op_dtype_in(s->dtype, ok, n)) return bad_type(name, "self", s->dtype, msg, cap);
  if (!op_dtype_in(o->dtype, op_num_types, op_num_count)) return bad_type(name, "out", o->dtype, msg, cap);
  if (!op_same_shape(s, o)) return bad_shape(name, s, o, msg, cap);
  int rt = to_float && !op_is_float(s->dtype) ? RDEV_DT_FLOAT : s->dtype;
  if (!op_can_cast(rt, o->dtype)) return bad_cast(name, rt, o->dtype, msg, cap);
  return RDEV_OK;
}

/* self (tensor) with a scalar into out of self's shape. */
static int with_scalar(const char *name, const rdev_op_call_t *c, int self, int scalar, int out, char *msg,
                       size_t cap) {
  const rdev_tensor_t *s = c->args[self].v.t, *o = c->args[out].v.t;
  if (!op_dtype_in(s->dtype, op_num_types, op_num_count)) return bad_type(name, "self", s->dtype, msg, cap);
  if (!op_dtype_in(o->dtype, op_num_types, op_num_count)) return bad_type(name, "out", o->dtype, msg, cap);
  if (!op_same_shape(s, o)) return bad_shape(name, s, o, msg, cap);
  int rt = op_promote_scalar(s->dtype, c->args[scalar].v.scalar.dtype);
  if (!op_can_cast(rt, o->dtype)) return bad_cast(name, rt, o->dtype, msg, cap);
  return RDEV_OK;
}

int rdev_op_check_adds(const rdev_op_call_t *c, char *msg, size_t cap) {
  int rc = with_scalar("Adds", c, 0, 1, 3, msg, cap);
  return rc ? rc
            : op_check_alpha("Adds", op_promote_scalar(c->args[0].v.t->dtype, c->args[1].v.scalar.dtype), &c->args[2],
                             msg, cap);
}

int rdev_op_check_sub(const rdev_op_call_t *c, char *msg, size_t cap) {
  int rc = op_check_binary("Sub", c, 0, 1, 3, msg, cap);
  if (rc) return rc;
  if (c->args[0].v.t->dtype == RDEV_DT_BOOL || c->args[1].v.t->dtype == RDEV_DT_BOOL)
    return op_invalid(msg, cap, "aclnnSub: subtraction of a bool tensor is not supported");
  return op_check_alpha("Sub", op_promote(c->args[0].v.t->dtype, c->args[1].v.t->dtype), &c->args[2], msg, cap);
}

int rdev_op_check_mul(const rdev_op_call_t *c, char *msg, size_t cap) {
  return op_check_binary("Mul", c, 0, 1, 2, msg, cap);
}

int rdev_op_check_muls(const rdev_op_call_t *c, char *msg, size_t cap) {
  return with_scalar("Muls", c, 0, 1, 2, msg, cap);
}

/* True division: integer and bool operands divide as float32. */
int rdev_op_check_div(const rdev_op_call_t *c, char *msg, size_t cap) {
  int rc = op_check_binary("Div", c, 0, 1, 2, msg, cap);
  if (rc) return rc;
  int rt = op_promote(c->args[0].v.t->dtype, c->args[1].v.t->dtype);
  if (!op_is_float(rt)) rt = RDEV_DT_FLOAT;
  if (!op_can_cast(rt, c->args[2].v.t->dtype)) return bad_cast("Div", rt, c->args[2].v.t->dtype, msg, cap);
  return RDEV_OK;
}

int rdev_op_check_neg(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Neg", c, signed_types, NSIGNED, false, msg, cap);
}

int rdev_op_check_abs(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Abs", c, signed_types, NSIGNED, false, msg, cap);
}

int rdev_op_check_relu(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Relu", c, signed_types, NSIGNED, false, msg, cap);
}

/* Exp, Log, Sqrt, Sigmoid, Tanh take integers too, and give float32 for them. */
int rdev_op_check_exp(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Exp", c, op_num_types, op_num_count, true, msg, cap);
}

int rdev_op_check_log(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Log", c, op_num_types, op_num_count, true, msg, cap);
}

int rdev_op_check_sqrt(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Sqrt", c, op_num_types, op_num_count, true, msg, cap);
}

int rdev_op_check_sigmoid(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Sigmoid", c, op_num_types, op_num_count, true, msg, cap);
}

int rdev_op_check_tanh(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Tanh", c, op_num_types, op_num_count, true, msg, cap);
}

/* Gelu and Silu: floating types only. */
int rdev_op_check_gelu(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Gelu", c, op_float_types, op_float_count, false, msg, cap);
}

int rdev_op_check_silu(const rdev_op_call_t *c, char *msg, size_t cap) {
  return unary("Silu", c, op_float_types, op_float_count, false, msg, cap);
}

/* ---- type-converting copies ------------------------------------------------------ */

int rdev_op_check_cast(const rdev_op_call_t *c, char *msg, size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *o = c->args[2].v.t;
  int dt = c->args[1].v.dtype;
  if (!rdev_dtype_size(dt)) return op_invalid(msg, cap, "aclnnCast: dtype %d is not a data type rdev knows", dt);
  if (o->dtype != dt)
    return op_invalid(msg, cap, "aclnnCast: out is %s, dtype is %s", rdev_dtype_name(o->dtype), rdev_dtype_name(dt));
  if (!op_same_shape(s, o)) return bad_shape("Cast", s, o, msg, cap);
  return RDEV_OK;
}

/* src, broadcast to selfRef's shape and converted to its type, into selfRef. */
int rdev_op_check_inplace_copy(const rdev_op_call_t *c, char *msg, size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *src = c->args[1].v.t;
  int nd;
  int64_t dims[RDEV_OP_MAX_DIMS];
  if (!op_broadcast(s, src, &nd, dims) || !op_has_shape(s, nd, dims)) {
    char ss[128], sr[128];
    op_shape_text(s, ss, sizeof ss);
    op_shape_text(src, sr, sizeof sr);
    return op_invalid(msg, cap, "aclnnInplaceCopy: src %s does not broadcast to selfRef %s", sr, ss);
  }
  return RDEV_OK;
}

int rdev_op_check_inplace_fill_scalar(const rdev_op_call_t *c, char *msg, size_t cap) {
  (void)c, (void)msg, (void)cap; /* any tensor takes any scalar, converted */
  return RDEV_OK;
}
