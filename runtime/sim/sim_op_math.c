/*
 * runtime/sim/sim_op_math.c — the sim's elementwise operators: arithmetic
 * (Add, Adds, Sub, Mul, Muls, Div) and the unary functions (Neg ... Tanh),
 * over any strides and with numpy's broadcasting. Each computes in the
 * type torch's promotion gives (floating types in double, rounded to that
 * type when out's type differs; integer types in int64, wrapping), then
 * converts to out's type. Contiguous float32 arithmetic has a fast path.
 * out may be an input's own view (in place); other overlaps go through a
 * temporary (sim_out_begin).
 */
#include <math.h>

#include "sim_ops.h"

typedef enum { BOP_ADD, BOP_MUL, BOP_DIV } bop_t;

static int64_t wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static bool same_dims(const rdev_tensor_t *a, const rdev_tensor_t *b) {
  if (a->ndim != b->ndim) return false;
  for (int d = 0; d < a->ndim; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

/* Contiguous float32 operands of out's shape: out = a + alpha * b, a * b or a / b. */
static bool fast_f32(const rdev_tensor_t *a, const rdev_tensor_t *b, const rdev_tensor_t *o, bop_t op, double alpha) {
  const rdev_tensor_t *ts[3] = {a, b, o};
  for (int i = 0; i < 3; i++)
    if (ts[i]->dtype != RDEV_DT_FLOAT || !same_dims(ts[i], o) || !sim_contiguous(ts[i])) return false;
  const float *x = (const float *)(uintptr_t)a->addr + a->offset, *y = (const float *)(uintptr_t)b->addr + b->offset;
  float *z = (float *)(uintptr_t)o->addr + o->offset;
  int64_t n = rdev_tensor_numel(o);
  /* float32 sums, products and quotients are correctly rounded: as computing in double and rounding once */
  if (op == BOP_ADD && alpha == 1.0)
    for (int64_t i = 0; i < n; i++) z[i] = x[i] + y[i];
  else if (op == BOP_ADD)
    for (int64_t i = 0; i < n; i++) z[i] = (float)((double)x[i] + alpha * (double)y[i]);
  else if (op == BOP_MUL)
    for (int64_t i = 0; i < n; i++) z[i] = x[i] * y[i];
  else
    for (int64_t i = 0; i < n; i++) z[i] = x[i] / y[i];
  return true;
}

/* out = a op b in compute type ct, b times alpha for BOP_ADD (alpha NULL: 1). */
static int binary(const rdev_tensor_t *a, const rdev_tensor_t *b, const rdev_tensor_t *out, int ct, bop_t op,
                  const rdev_op_arg_t *alpha, double sign) {
  const rdev_tensor_t *ins[2] = {a, b};
  sim_out_t o;
  int rc = sim_out_begin(&o, out, ins, 2, true);
  if (rc) return rc;
  const rdev_tensor_t *ts[3] = {&o.t, a, b};
  sim_iter_t it;
  sim_iter_init(&it, out->ndim, out->dims, ts, 3);
  if (it.left > 0 && sim_is_float(ct)) {
    double fa = sign * (alpha ? rdev_op_scalar_f64(alpha) : 1.0);
    if (!(ct == RDEV_DT_FLOAT && fast_f32(a, b, &o.t, op, fa))) {
      bool ra = a->dtype != ct, rb = b->dtype != ct, ro = o.t.dtype != ct;
      do {
        double x = sim_ld(a, it.off[1]), y = sim_ld(b, it.off[2]), v;
        if (ra) x = sim_round(ct, x);
        if (rb) y = sim_round(ct, y);
        v = op == BOP_ADD ? x + fa * y : op == BOP_MUL ? x * y : x / y;
        sim_st(&o.t, it.off[0], ro ? sim_round(ct, v) : v);
      } while (sim_iter_next(&it));
    }
  } else if (it.left > 0) {
    int64_t ia = (int64_t)sign * (alpha ? rdev_op_scalar_i64(alpha) : 1);
    do {
      int64_t x = sim_ldi(a, it.off[1]), y = sim_ldi(b, it.off[2]);
      sim_sti(&o.t, it.off[0], op == BOP_ADD ? wrap_add(x, wrap_mul(ia, y)) : wrap_mul(x, y));
    } while (sim_iter_next(&it));
  }
  sim_out_end(&o);
  return RDEV_OK;
}

int sim_op_add(const rdev_op_call_t *c) {
  const rdev_tensor_t *a = c->args[0].v.t, *b = c->args[1].v.t;
  return binary(a, b, c->args[3].v.t, op_promote(a->dtype, b->dtype), BOP_ADD, &c->args[2], 1.0);
}

int sim_op_sub(const rdev_op_call_t *c) {
  const rdev_tensor_t *a = c->args[0].v.t, *b = c->args[1].v.t;
  return binary(a, b, c->args[3].v.t, op_promote(a->dtype, b->dtype), BOP_ADD, &c->args[2], -1.0);
}

int sim_op_mul(const rdev_op_call_t *c) {
  const rdev_tensor_t *a = c->args[0].v.t, *b = c->args[1].v.t;
  return binary(a, b, c->args[2].v.t, op_promote(a->dtype, b->dtype), BOP_MUL, NULL, 1.0);
}

int sim_op_div(const rdev_op_call_t *c) {
  const rdev_tensor_t *a = c->args[0].v.t, *b = c->args[1].v.t;
  int ct = op_promote(a->dtype, b->dtype);
  return binary(a, b, c->args[2].v.t, op_is_float(ct) ? ct : RDEV_DT_FLOAT, BOP_DIV, NULL, 1.0);
}

/* self op scalar, the scalar held in a 0-d float64 or int64 tensor (a
 * floating one rounds to the compute type first, as numpy's does). */
static int with_scalar(const rdev_op_call_t *c, int out, bop_t op, const rdev_op_arg_t *alpha) {
  const rdev_tensor_t *a = c->args[0].v.t;
  int64_t cell;
  rdev_tensor_t b = sim_scalar_tensor(&c->args[1], &cell);
  int ct = op_promote_scalar(a->dtype, c->args[1].v.scalar.dtype);
  return binary(a, &b, c->args[out].v.t, ct, op, alpha, 1.0);
}

int sim_op_adds(const rdev_op_call_t *c) { return with_scalar(c, 3, BOP_ADD, &c->args[2]); }

int sim_op_muls(const rdev_op_call_t *c) { return with_scalar(c, 2, BOP_MUL, NULL); }

/* ---- unary --------------------------------------------------------------------- */

/* out = f(self) in compute type ct: ff for a floating ct, fi for an integer one. */
static int unary(const rdev_op_call_t *c, int ct, double (*ff)(double), int64_t (*fi)(int64_t)) {
  const rdev_tensor_t *x = c->args[0].v.t, *ins[1] = {x};
  sim_out_t o;
  int rc = sim_out_begin(&o, c->args[1].v.t, ins, 1, true);
  if (rc) return rc;
  const rdev_tensor_t *ts[2] = {&o.t, x};
  sim_iter_t it;
  sim_iter_init(&it, o.t.ndim, o.t.dims, ts, 2);
  if (it.left > 0 && sim_is_float(ct)) {
    bool rx = x->dtype != ct, ro = o.t.dtype != ct;
    do {
      double v = sim_ld(x, it.off[1]);
      v = ff(rx ? sim_round(ct, v) : v);
      sim_st(&o.t, it.off[0], ro ? sim_round(ct, v) : v);
    } while (sim_iter_next(&it));
  } else if (it.left > 0) {
    do sim_sti(&o.t, it.off[0], fi(sim_ldi(x, it.off[1])));
    while (sim_iter_next(&it));
  }
  sim_out_end(&o);
  return RDEV_OK;
}

/* The type Exp, Log, ... compute in: self's floating type, or float32. */
static int float_of(const rdev_op_call_t *c) {
  int dt = c->args[0].v.t->dtype;
  return sim_is_float(dt) ? dt : RDEV_DT_FLOAT;
}

static double f_neg(double x) { return -x; }
static int64_t i_neg(int64_t x) { return (int64_t)(0u - (uint64_t)x); }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static double f_relu(double x) { return x > 0 || x != x ? x : 0.0; }
static int64_t i_relu(int64_t x) { return x > 0 ? x : 0; }
static double f_gelu(double x) { /* the tanh approximation */
  return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_silu(double x) { return x / (1.0 + exp(-x)); }

int sim_op_neg(const rdev_op_call_t *c) { return unary(c, c->args[0].v.t->dtype, f_neg, i_neg); }
int sim_op_abs(const rdev_op_call_t *c) { return unary(c, c->args[0].v.t->dtype, fabs, i_abs); }
int sim_op_relu(const rdev_op_call_t *c) { return unary(c, c->args[0].v.t->dtype, f_relu, i_relu); }
int sim_op_exp(const rdev_op_call_t *c) { return unary(c, float_of(c), exp, NULL); }
int sim_op_log(const rdev_op_call_t *c) { return unary(c, float_of(c), log, NULL); }
int sim_op_sqrt(const rdev_op_call_t *c) { return unary(c, float_of(c), sqrt, NULL); }
int sim_op_sigmoid(const rdev_op_call_t *c) { return unary(c, float_of(c), f_sigmoid, NULL); }
int sim_op_tanh(const rdev_op_call_t *c) { return unary(c, float_of(c), tanh, NULL); }
int sim_op_gelu(const rdev_op_call_t *c) { return unary(c, float_of(c), f_gelu, NULL); }
int sim_op_silu(const rdev_op_call_t *c) { return unary(c, float_of(c), f_silu, NULL); }
