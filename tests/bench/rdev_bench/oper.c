/*
 * tests/bench/rdev_bench/oper.c — the operators phase's problem (oper.h):
 * the inputs, Add's and Matmul's calls from the operator table, and the
 * checks of an output.
 */
#include "oper.h"

#include <stdio.h>
#include <string.h>

#define ACL_FORMAT_ND 2 /* aclFormat's ND */

void oper_fill(float *p, size_t n, int which) {
  for (size_t i = 0; i < n; i++) p[i] = oper_input(which, i);
}

const char *oper_name(int p) { return p == OPER_ADD ? "Add" : "Matmul"; }

size_t oper_out_bytes(int p, const oper_shape_t *s) {
  return p == OPER_ADD ? s->add_n * sizeof(float) : (size_t)(s->mm_m * s->mm_n) * sizeof(float);
}

/* A contiguous float32 tensor of ndim dims at addr. */
static void tensor(rdev_tensor_t *t, uint64_t addr, int ndim, int64_t d0, int64_t d1) {
  memset(t, 0, sizeof *t);
  t->dtype = RDEV_DT_FLOAT;
  t->format = ACL_FORMAT_ND;
  t->ndim = t->storage_ndim = ndim;
  t->dims[0] = t->storage_dims[0] = d0;
  if (ndim == 2) {
    t->dims[1] = t->storage_dims[1] = d1;
    t->strides[0] = d1;
    t->strides[1] = 1;
  } else {
    t->strides[0] = 1;
  }
  t->addr = addr;
}

/* 0 when sig's parameters are, in order, the kinds of want (n of them). */
static int params_are(const rdev_op_sig_t *sig, const uint8_t *want, int n) {
  if (sig->nparams != n) return -1;
  for (int i = 0; i < n; i++)
    if (sig->params[i].kind != want[i]) return -1;
  return 0;
}

int oper_call(oper_call_t *c, int p, const oper_shape_t *s, uint64_t self, uint64_t other, uint64_t out, char *note,
              size_t note_len) {
  memset(c, 0, sizeof *c);
  const char *name = oper_name(p);
  const rdev_op_sig_t *sig = rdev_op_find(name);
  if (!sig) {
    snprintf(note, note_len, "this build's operator table has no %s (proto/ops/ops.def)", name);
    return -1;
  }
  c->call.op = (int)(sig - rdev_op_table(NULL));
  rdev_op_arg_t *a = c->call.args;
  if (p == OPER_ADD) {
    static const uint8_t kAdd[] = {RDEV_OPK_TENSOR, RDEV_OPK_TENSOR, RDEV_OPK_SCALAR, RDEV_OPK_TENSOR};
    if (params_are(sig, kAdd, 4)) {
      snprintf(note, note_len, "aclnnAdd's parameters are not (self, other, alpha, out) in this build");
      return -1;
    }
    for (int i = 0; i < 3; i++) tensor(&c->t[i], i == 0 ? self : i == 1 ? other : out, 1, (int64_t)s->add_n, 0);
    a[2].v.scalar.dtype = RDEV_DT_FLOAT;
    a[2].v.scalar.v.f = 1.0;
    a[0].v.t = &c->t[0];
    a[1].v.t = &c->t[1];
    a[3].v.t = &c->t[2];
  } else {
    static const uint8_t kMatmul[] = {RDEV_OPK_TENSOR, RDEV_OPK_TENSOR, RDEV_OPK_TENSOR, RDEV_OPK_INT8};
    if (params_are(sig, kMatmul, 4)) {
      snprintf(note, note_len, "aclnnMatmul's parameters are not (self, mat2, out, cubeMathType) in this build");
      return -1;
    }
    tensor(&c->t[0], self, 2, s->mm_m, s->mm_k);
    tensor(&c->t[1], other, 2, s->mm_k, s->mm_n);
    tensor(&c->t[2], out, 2, s->mm_m, s->mm_n);
    a[0].v.t = &c->t[0];
    a[1].v.t = &c->t[1];
    a[2].v.t = &c->t[2];
    a[3].v.i64 = 0; /* KEEP_DTYPE */
  }
  c->call.nargs = 4;
  for (int i = 0; i < 4; i++) {
    a[i].kind = sig->params[i].kind;
    a[i].present = 1;
  }
  return 0;
}

int oper_check(int p, const oper_shape_t *s, const float *out, const char *what, char *msg, size_t msg_len) {
  if (p == OPER_ADD) {
    for (size_t i = 0; i < s->add_n; i++) {
      float want = oper_input(0, i) + oper_input(1, i);
      if (out[i] != want) {
        snprintf(msg, msg_len, "%s: Add of %zu float32: out[%zu] is %g, not %g", what, s->add_n, i, (double)out[i],
                 (double)want);
        return -1;
      }
    }
    return 0;
  }
  int64_t m = s->mm_m, k = s->mm_k, n = s->mm_n;
  for (int ri = 0; ri < 16; ri++) {
    int64_t r = m > 1 ? ri * (m - 1) / 15 : 0;
    for (int ci = 0; ci < 16; ci++) {
      int64_t col = n > 1 ? ci * (n - 1) / 15 : 0;
      int64_t want = 0;
      for (int64_t j = 0; j < k; j++)
        want += (int64_t)oper_input(0, (uint64_t)(r * k + j)) * (int64_t)oper_input(1, (uint64_t)(j * n + col));
      float got = out[r * n + col];
      if (got != (float)want) {
        snprintf(msg, msg_len, "%s: Matmul %lldx%lld @ %lldx%lld: out[%lld][%lld] is %g, not %lld", what, (long long)m,
                 (long long)k, (long long)k, (long long)n, (long long)r, (long long)col, (double)got, (long long)want);
        return -1;
      }
    }
  }
  return 0;
}
