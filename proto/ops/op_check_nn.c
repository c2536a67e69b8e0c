/*
 * proto/ops/op_check_nn.c — the rules of the network operators: Softmax,
 * LayerNorm and the matrix products (Matmul with torch.matmul's shapes,
 * Mm, BatchMatMul). They take the floating types CANN's take: float32,
 * float16 and bfloat16 (Softmax and LayerNorm float64 too).
 */
#include "op_check.h"

static const int mm_types[] = {RDEV_DT_FLOAT, RDEV_DT_FLOAT16, RDEV_DT_BF16};

int rdev_op_check_softmax(const rdev_op_call_t *c, char *msg, size_t cap) {
  const rdev_tensor_t *s = c->args[0].v.t, *o = c->args[2].v.t;
  if (!op_dtype_in(s->dtype, op_float_types, op_float_count) || !op_dtype_in(o->dtype, op_float_types, op_float_count))
    return op_invalid(msg, cap, "aclnnSoftmax: self and out must be of a floating type, not %s and %s",
                      rdev_dtype_name(s->dtype), rdev_dtype_name(o->dtype));
  if (!op_same_shape(s, o)) return op_invalid(msg, cap, "aclnnSoftmax: out's shape is not self's");
  int d;
  if (!op_wrap_dim(c->args[1].v.i64, s->ndim, &d))
    return op_invalid(msg, cap, "aclnnSoftmax: dim %lld is out of range for a %d-dimensional tensor",
                      (long long)c->args[1].v.i64, s->ndim);
  return RDEV_OK;
}

/* The product's shape (torch.matmul's rule): a 1-d operand is a row
 * (self) or a column (mat2) whose dimension the result drops; the dims
 * before the last two broadcast. */
static int matmul_shape(const char *name, const rdev_tensor_t *a, const rdev_tensor_t *b, int *nd, int64_t *dims,
                        char *msg, size_t cap) {
  if (a->ndim < 1 || b->ndim < 1) return op_invalid(msg, cap, "aclnn%s: self and mat2 must have a dimension", name);
  int64_t k1 = a->dims[a->ndim - 1], k2 = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
  if (k1 != k2) {
    char sa[128], sb[128];
    op_shape_text(a, sa, sizeof sa);
    op_shape_text(b, sb, sizeof sb);
    return op_invalid(msg, cap, "aclnn%s: self %s and mat2 %s cannot be multiplied (%lld != %lld)", name, sa, sb,
                      (long long)k1, (long long)k2);
  }
  rdev_tensor_t ba = *a, bb = *b; /* the batch dims */
  ba.ndim = a->ndim > 2 ? a->ndim - 2 : 0;
  bb.ndim = b->ndim > 2 ? b->ndim - 2 : 0;
  if (!op_broadcast(&ba, &bb, nd, dims)) return op_invalid(msg, cap, "aclnn%s: the batch dims do not broadcast", name);
  if (a->ndim > 1) dims[(*nd)++] = a->dims[a->ndim - 2];
  if (b->ndim > 1) dims[(*nd)++] = b->dims[b->ndim - 1];
  return RDEV_OK;
}

/* Arguments self, mat2, out, cubeMathType; want_ndim 0 for any (Matmul). */
static int check_mm(const char *name, const rdev_op_call_t *c, int want_ndim, char *msg, size_t cap) {
  const rdev_tensor_t *a = c->args[0].v.t, *b = c->args[1].v.t, *o = c->args[2].v.t;
  for (int i = 0; i < 3; i++) {
    const rdev_tensor_t *t = c->args[i].v.t;
    if (!op_dtype_in(t->dtype, mm_types, 3))
      return op_invalid(msg, cap, "aclnn%s: %s's data type %s is not supported (float32, float16, bfloat16)", name,
                        i == 0   ? "self"
                        : i == 1 ? "mat2"
                                 : "out",
                        rdev_dtype_name(t->dtype));
  }
  if (c->args[3].v.i64 < 0 || c->args[3].v.i64 > 3)
    return op_invalid(msg, cap, "aclnn%s: cubeMathType %lld is not 0, 1, 2 or 3", name, (long long)c->args[3].v.i64);
  if (want_ndim && (a->ndim != want_ndim || b->ndim != want_ndim))
    return op_invalid(msg, cap, "aclnn%s: self and mat2 must be %d-dimensional, not %d and %d", name, want_ndim,
                      a->ndim, b->ndim);
  if (want_ndim == 3 && a->dims[0] != b->dims[0])
    return op_invalid(msg, cap, "aclnn%s: self's batch %lld is not mat2's %lld", name, (long long)a->dims[0],
                      (long long)b->dims[0]);
  int nd, rc;
  int64_t dims[RDEV_OP_MAX_DIMS + 2];
  if ((rc = matmul_shape(name, a, b, &nd, dims, msg, cap))) return rc;
  if (!op_has_shape(o, nd, dims)) {
    char so[128];
    op_shape_text(o, so, sizeof so);
    return op_invalid(msg, cap, "aclnn%s: out has shape %s, not the product's", name, so);
  }
  return RDEV_OK;
}

int rdev_op_check_matmul(const rdev_op_call_t *c, char *msg, size_t cap) { return check_mm("Matmul", c, 0, msg, cap); }

int rdev_op_check_mm(const rdev_op_call_t *c, char *msg, size_t cap) { return check_mm("Mm", c, 2, msg, cap); }

int rdev_op_check_batch_mat_mul(const rdev_op_call_t *c, char *msg, size_t cap) {
  return check_mm("BatchMatMul", c, 3, msg, cap);
}
