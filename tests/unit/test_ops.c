/*
 * tests/unit/test_ops.c — the operators (rdev/ops.h) on the sim: each one
 * launched in-process through rdev_rt_op_launch on small tensors, against
 * values worked out by hand or by an obviously correct loop here
 * (broadcasting, negative dims, strided views, float16/bfloat16, int32 and
 * int64); each rule's refusals through rdev_op_check; and the call blob
 * (every launch here goes encode, decode, re-encode, so each operator's
 * blob round-trips; garbage and truncated blobs are refused).
 */
#include <stdbool.h>

#include "rdev/ops.h"
#include "rt_helpers.h"

/* The sim's conversions (runtime/sim/sim_op_util.c, in rdev_runtime), checked
 * against known bit patterns below and then used to make test inputs. */
float sim_half_to_float(uint16_t h);
uint16_t sim_float_to_half(float f);
float sim_bf16_to_float(uint16_t h);
uint16_t sim_float_to_bf16(float f);

enum {
  F32 = RDEV_DT_FLOAT,
  F16 = RDEV_DT_FLOAT16,
  BF16 = RDEV_DT_BF16,
  F64 = RDEV_DT_DOUBLE,
  I32 = RDEV_DT_INT32,
  I64 = RDEV_DT_INT64,
  I8 = RDEV_DT_INT8,
  U8 = RDEV_DT_UINT8,
  BOOL = RDEV_DT_BOOL
};

/* ---- a runtime, device tensors ------------------------------------------------ */

static rdev_rt_t *RT;
static rdev_rt_stream_t *S;

static void setup(void) {
  RT = open_rt(1, 256 * MIB);
  S = mkstream(RT, 0);
}

static void teardown(void) {
  rdev_rt_stream_destroy(S);
  rdev_rt_close(RT);
}

static void to_bytes(int dt, double v, void *p) {
  switch (dt) {
    case F32: *(float *)p = (float)v; break;
    case F16: *(uint16_t *)p = sim_float_to_half((float)v); break;
    case BF16: *(uint16_t *)p = sim_float_to_bf16((float)v); break;
    case F64: *(double *)p = v; break;
    case I32: *(int32_t *)p = (int32_t)v; break;
    case I64: *(int64_t *)p = (int64_t)v; break;
    case I8: *(int8_t *)p = (int8_t)v; break;
    case U8: *(uint8_t *)p = (uint8_t)v; break;
    case BOOL: *(uint8_t *)p = v != 0; break;
    default: ck_abort_msg("dtype %d", dt);
  }
}

static double from_bytes(int dt, const void *p) {
  switch (dt) {
    case F32: return *(const float *)p;
    case F16: return sim_half_to_float(*(const uint16_t *)p);
    case BF16: return sim_bf16_to_float(*(const uint16_t *)p);
    case F64: return *(const double *)p;
    case I32: return *(const int32_t *)p;
    case I64: return (double)*(const int64_t *)p;
    case I8: return *(const int8_t *)p;
    case U8: return *(const uint8_t *)p;
    case BOOL: return *(const uint8_t *)p;
    default: ck_abort_msg("dtype %d", dt);
  }
  return 0;
}

/* A contiguous tensor of shape dims over n elements of fresh device memory
 * (n at least the shape's; vals, when given, are its first n elements). */
static rdev_tensor_t dev_n(int dt, int ndim, const int64_t *dims, int64_t n, const double *vals) {
  rdev_tensor_t t = {.dtype = dt, .format = 2, .ndim = ndim};
  int64_t st = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    t.dims[d] = dims[d];
    t.strides[d] = st;
    st *= dims[d];
  }
  if (n < st) n = st;
  size_t esz = rdev_dtype_size(dt), bytes = (size_t)(n ? n : 1) * esz;
  unsigned char *h = calloc(1, bytes);
  for (int64_t i = 0; vals && i < n; i++) to_bytes(dt, vals[i], h + i * (int64_t)esz);
  void *d = dmalloc(RT, 0, bytes);
  h2d(RT, d, h, bytes);
  free(h);
  t.addr = (uint64_t)(uintptr_t)d;
  return t;
}

static rdev_tensor_t dev(int dt, int ndim, const int64_t *dims, const double *vals) {
  return dev_n(dt, ndim, dims, 0, vals);
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define VALS(...) ((const double[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
/* dev(dt, shape, values): T(F32, DIMS(2, 3), VALS(...)) */
#define T(dt, dims, vals) dev(dt, (int)(sizeof(dims) / sizeof(int64_t)), dims, vals)
#define Z(dt, dims) dev(dt, (int)(sizeof(dims) / sizeof(int64_t)), dims, NULL)

/* The n elements of t's storage from its offset on, as doubles. */
static void get(const rdev_tensor_t *t, double *vals, int64_t n) {
  size_t esz = rdev_dtype_size(t->dtype);
  unsigned char *h = malloc((size_t)n * esz + 1);
  d2h(RT, h, (const char *)(uintptr_t)t->addr + t->offset * (int64_t)esz, (size_t)n * esz);
  for (int64_t i = 0; i < n; i++) vals[i] = from_bytes(t->dtype, h + i * (int64_t)esz);
  free(h);
}

/* t's elements (contiguous) equal want's n values within tol (relative and absolute). */
static void expect_near(const rdev_tensor_t *t, const double *want, int64_t n, double tol) {
  double *got = malloc(sizeof(double) * (size_t)(n ? n : 1));
  get(t, got, n);
  for (int64_t i = 0; i < n; i++) {
    bool ok =
        got[i] == want[i] || (isnan(got[i]) && isnan(want[i])) || fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]));
    ck_assert_msg(ok, "element %lld: got %.9g, want %.9g", (long long)i, got[i], want[i]);
  }
  free(got);
}

#define EXPECT(t, tol, ...) \
  expect_near(&(t), (const double[]){__VA_ARGS__}, (int64_t)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double)), \
              tol)

/* ---- calls ---------------------------------------------------------------------- */

static rdev_op_arg_t at(rdev_tensor_t *t) { return (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = t}; }
static rdev_op_arg_t anull(void) { return (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 0}; }
__attribute__((unused)) static rdev_op_arg_t alist(rdev_tensor_t *t, uint32_t n) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR_LIST, .present = 1, .n = n, .v.t = t};
}
static rdev_op_arg_t asf(int dt, double v) {
  rdev_op_arg_t a = {.kind = RDEV_OPK_SCALAR, .present = 1};
  a.v.scalar.dtype = dt;
  a.v.scalar.v.f = v;
  return a;
}
static rdev_op_arg_t asi(int dt, int64_t v) {
  rdev_op_arg_t a = {.kind = RDEV_OPK_SCALAR, .present = 1};
  a.v.scalar.dtype = dt;
  a.v.scalar.v.i = v;
  return a;
}
__attribute__((unused)) static rdev_op_arg_t aia(const int64_t *v, uint32_t n) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_INT_ARRAY, .present = 1, .n = n, .v.ints = v};
}
static rdev_op_arg_t ai64(int64_t v) { return (rdev_op_arg_t){.kind = RDEV_OPK_INT64, .present = 1, .v.i64 = v}; }
static rdev_op_arg_t ai8(int64_t v) { return (rdev_op_arg_t){.kind = RDEV_OPK_INT8, .present = 1, .v.i64 = v}; }
__attribute__((unused)) static rdev_op_arg_t ab(bool v) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_BOOL, .present = 1, .v.i64 = v};
}
__attribute__((unused)) static rdev_op_arg_t af64(double v) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_DOUBLE, .present = 1, .v.f64 = v};
}
__attribute__((unused)) static rdev_op_arg_t adt(int v) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_DTYPE, .present = 1, .v.dtype = v};
}
#define IA(...) \
  aia((const int64_t[]){__VA_ARGS__}, (uint32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define IA0() aia(NULL, 0)

static rdev_op_call_t mk(const char *name, const rdev_op_arg_t *args, int n) {
  int count;
  const rdev_op_sig_t *all = rdev_op_table(&count), *sig = rdev_op_find(name);
  ck_assert_msg(sig != NULL, "operator %s", name);
  rdev_op_call_t c = {.op = (int)(sig - all), .nargs = n};
  for (int i = 0; i < n; i++) c.args[i] = args[i];
  return c;
}
#define CALL(name, ...) \
  mk(name, (const rdev_op_arg_t[]){__VA_ARGS__}, \
     (int)(sizeof((const rdev_op_arg_t[]){__VA_ARGS__}) / sizeof(rdev_op_arg_t)))

static char MSG[512];

/* rdev_op_check's verdict on c; MSG gets its sentence. */
static int check(rdev_op_call_t c) {
  MSG[0] = 0;
  return rdev_op_check(&c, MSG, sizeof MSG);
}

/* Encodes c, decodes the blob (which must round-trip: re-encoding gives
 * the same bytes), launches the call and synchronizes: the launch's code,
 * else the synchronize's. */
static int run(rdev_op_call_t c) {
  static unsigned char blob[RDEV_OP_MAX_BLOB], again[RDEV_OP_MAX_BLOB];
  size_t len, len2;
  ck_assert_int_eq(rdev_op_encode(&c, blob, sizeof blob, &len), RDEV_OK);
  rdev_op_call_t *d = NULL;
  int rc = rdev_op_decode(blob, len, &d, MSG, sizeof MSG);
  if (rc) return rc;
  ck_assert_int_eq(rdev_op_encode(d, again, sizeof again, &len2), RDEV_OK);
  ck_assert_uint_eq(len, len2);
  ck_assert_int_eq(memcmp(blob, again, len), 0);
  rc = rdev_rt_op_launch(S, d);
  if (rc) return rc;
  return rdev_rt_stream_synchronize(S);
}
#define RUN_OK(...) ck_assert_msg(run(CALL(__VA_ARGS__)) == RDEV_OK, "%s / %s", MSG, rdev_rt_last_error())
#define REFUSED(code, ...) \
  do { \
    int rc_ = check(CALL(__VA_ARGS__)); \
    ck_assert_msg(rc_ == (code), "rc %d, want %d (%s)", rc_, (int)(code), MSG); \
    ck_assert_msg(strstr(MSG, "aclnn") != NULL, "sentence without the operator: %s", MSG); \
  } while (0)

/* ---- conversions ---------------------------------------------------------------- */

START_TEST(test_half_and_bf16_conversions_round_to_nearest_even) {
  ck_assert_uint_eq(sim_float_to_half(1.0f), 0x3c00);
  ck_assert_uint_eq(sim_float_to_half(-2.0f), 0xc000);
  ck_assert_uint_eq(sim_float_to_half(1.0f / 3), 0x3555);
  ck_assert_uint_eq(sim_float_to_half(65504.0f), 0x7bff);
  ck_assert_uint_eq(sim_float_to_half(1e6f), 0x7c00);
  ck_assert_uint_eq(sim_float_to_half(1.0f + 1.0f / 2048), 0x3c00); /* a tie: to even */
  ck_assert_uint_eq(sim_float_to_half(1.0f + 3.0f / 2048), 0x3c02); /* a tie: to even */
  ck_assert_uint_eq(sim_float_to_half(5.9604645e-8f), 0x0001);      /* the smallest subnormal */
  ck_assert(sim_half_to_float(0x3555) == 0.333251953125f);
  ck_assert(sim_half_to_float(0x0001) == 5.9604645e-8f);
  ck_assert_uint_eq(sim_float_to_bf16(1.0f / 3), 0x3eab);
  ck_assert_uint_eq(sim_float_to_bf16(1.0f + 1.0f / 256), 0x3f80); /* a tie: to even */
  ck_assert_uint_eq(sim_float_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  ck_assert(sim_bf16_to_float(0x3eab) == 0.333984375f);
}
END_TEST

/* ---- elementwise arithmetic ------------------------------------------------------ */

START_TEST(test_add_broadcasts_with_alpha) {
  rdev_tensor_t a = T(F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), b = T(F32, DIMS(3), VALS(10, 20, 30));
  rdev_tensor_t o = Z(F32, DIMS(2, 3));
  RUN_OK("Add", at(&a), at(&b), asf(F32, 0.5), at(&o));
  EXPECT(o, 0, 6, 12, 18, 9, 15, 21);
}
END_TEST

START_TEST(test_adds_and_muls_take_a_scalar) {
  rdev_tensor_t a = T(F32, DIMS(4), VALS(1, -2, 3.5, 0)), o = Z(F32, DIMS(4));
  RUN_OK("Adds", at(&a), asf(F64, 1.5), asi(I64, 2), at(&o));
  EXPECT(o, 0, 4, 1, 6.5, 3);
  RUN_OK("Muls", at(&a), asf(F32, -2), at(&o));
  EXPECT(o, 0, -2, 4, -7, 0);
  /* an int32 tensor with an int scalar stays int32; with a float scalar it is float32 */
  rdev_tensor_t i = T(I32, DIMS(3), VALS(1, 2, 3)), oi = Z(I32, DIMS(3)), of = Z(F32, DIMS(3));
  RUN_OK("Adds", at(&i), asi(I64, 5), asi(I64, 3), at(&oi));
  EXPECT(oi, 0, 16, 17, 18);
  RUN_OK("Muls", at(&i), asf(F64, 0.5), at(&of));
  EXPECT(of, 0, 0.5, 1, 1.5);
  REFUSED(RDEV_OP_PARAM_INVALID, "Muls", at(&i), asf(F64, 0.5), at(&oi)); /* float32 into int32 */
}
END_TEST

START_TEST(test_sub_is_self_minus_alpha_other) {
  rdev_tensor_t a = T(F32, DIMS(2, 2), VALS(1, 2, 3, 4)), b = T(F32, DIMS(2, 1), VALS(1, 10));
  rdev_tensor_t o = Z(F32, DIMS(2, 2));
  RUN_OK("Sub", at(&a), at(&b), asf(F32, 2), at(&o));
  EXPECT(o, 0, -1, 0, -17, -16);
  rdev_tensor_t x = T(I64, DIMS(3), VALS(5, 6, 7)), y = T(I64, DIMS(1), VALS(1)), oi = Z(I64, DIMS(3));
  RUN_OK("Sub", at(&x), at(&y), asi(I64, 1), at(&oi));
  EXPECT(oi, 0, 4, 5, 6);
}
END_TEST

START_TEST(test_mul_broadcasts_both_ways_and_promotes) {
  rdev_tensor_t a = T(F32, DIMS(3, 1), VALS(1, 2, 3)), b = T(I32, DIMS(1, 2), VALS(10, -1));
  rdev_tensor_t o = Z(F32, DIMS(3, 2));
  RUN_OK("Mul", at(&a), at(&b), at(&o));
  EXPECT(o, 0, 10, -1, 20, -2, 30, -3);
  rdev_tensor_t x = T(I32, DIMS(2), VALS(3, -4)), y = T(I32, DIMS(2), VALS(5, 6)), oi = Z(I32, DIMS(2));
  RUN_OK("Mul", at(&x), at(&y), at(&oi));
  EXPECT(oi, 0, 15, -24);
}
END_TEST

START_TEST(test_div_is_true_division) {
  rdev_tensor_t a = T(I32, DIMS(3), VALS(7, -7, 1)), b = T(I32, DIMS(3), VALS(2, 2, 3)), o = Z(F32, DIMS(3));
  RUN_OK("Div", at(&a), at(&b), at(&o));
  EXPECT(o, 0, 3.5, -3.5, (float)(1.0 / 3));
  rdev_tensor_t x = T(F32, DIMS(3), VALS(1, -1, 0)), z = T(F32, DIMS(1), VALS(0)), of = Z(F32, DIMS(3));
  RUN_OK("Div", at(&x), at(&z), at(&of));
  EXPECT(of, 0, INFINITY, -INFINITY, NAN);
  rdev_tensor_t oi = Z(I32, DIMS(3));
  REFUSED(RDEV_OP_PARAM_INVALID, "Div", at(&a), at(&b), at(&oi)); /* int / int is float32 */
}
END_TEST

START_TEST(test_float16_and_bfloat16_arithmetic_rounds_once) {
  rdev_tensor_t a = T(F16, DIMS(3), VALS(1, 0.5, 1000)), b = T(F16, DIMS(3), VALS(0.0009765625, 0.25, 0.25));
  rdev_tensor_t o = Z(F16, DIMS(3)), of = Z(F32, DIMS(3));
  RUN_OK("Add", at(&a), at(&b), asf(F32, 1), at(&o));
  EXPECT(o, 0, 1.0009765625, 0.75, 1000); /* 1000.25 rounds to 1000 in float16 */
  RUN_OK("Add", at(&a), at(&b), asf(F32, 1), at(&of));
  EXPECT(of, 0, 1.0009765625, 0.75, 1000); /* computed in float16, then widened (torch's rule) */
  rdev_tensor_t x = T(BF16, DIMS(2), VALS(1, 3)), y = T(BF16, DIMS(2), VALS(3, 7)), ob = Z(BF16, DIMS(2));
  RUN_OK("Div", at(&x), at(&y), at(&ob));
  EXPECT(ob, 0, 0.333984375, 0.427734375); /* 1/3 and 3/7 to 8 bits */
  /* float16 with bfloat16 computes in float32 */
  rdev_tensor_t h = T(F16, DIMS(1), VALS(1)), bb = T(BF16, DIMS(1), VALS(3)), o32 = Z(F32, DIMS(1));
  RUN_OK("Div", at(&h), at(&bb), at(&o32));
  EXPECT(o32, 0, (float)(1.0 / 3));
}
END_TEST

START_TEST(test_elementwise_reads_a_transposed_view) {
  rdev_tensor_t base = T(F32, DIMS(3, 2), VALS(1, 2, 3, 4, 5, 6));
  rdev_tensor_t tr = base; /* [2, 3], the transpose */
  tr.dims[0] = 2, tr.dims[1] = 3, tr.strides[0] = 1, tr.strides[1] = 2;
  rdev_tensor_t b = T(F32, DIMS(2, 3), VALS(0, 0, 0, 100, 100, 100)), o = Z(F32, DIMS(2, 3));
  RUN_OK("Add", at(&tr), at(&b), asf(F32, 1), at(&o));
  EXPECT(o, 0, 1, 3, 5, 102, 104, 106);
  /* and writes into one: out[j][i] = (i, j) */
  rdev_tensor_t ob = Z(F32, DIMS(3, 2)), ot = ob;
  ot.dims[0] = 2, ot.dims[1] = 3, ot.strides[0] = 1, ot.strides[1] = 2;
  RUN_OK("Neg", at(&b), at(&ot));
  EXPECT(ob, 0, 0, -100, 0, -100, 0, -100);
}
END_TEST

START_TEST(test_in_place_and_overlapping_outputs) {
  rdev_tensor_t a = T(F32, DIMS(4), VALS(1, 2, 3, 4)), b = T(F32, DIMS(4), VALS(10, 20, 30, 40));
  RUN_OK("Add", at(&a), at(&b), asf(F32, 1), at(&a)); /* out == self */
  EXPECT(a, 0, 11, 22, 33, 44);
  RUN_OK("Mul", at(&a), at(&a), at(&a));
  EXPECT(a, 0, 121, 484, 1089, 1936);
  /* out is self shifted by one element: computed as if from a copy */
  rdev_tensor_t x = dev_n(F32, 1, DIMS(3), 4, VALS(1, 2, 3, 4)), sh = x;
  sh.offset = 1;
  RUN_OK("Muls", at(&x), asf(F32, 10), at(&sh));
  expect_near(&x, VALS(1, 10, 20, 30), 4, 0);
  /* out overlaps a broadcast operand */
  rdev_tensor_t r = dev_n(F32, 1, DIMS(2), 4, VALS(1, 2, 0, 0)), m = r;
  rdev_tensor_t q = T(F32, DIMS(2, 2), VALS(10, 20, 30, 40));
  m.ndim = 2, m.dims[0] = 2, m.dims[1] = 2, m.strides[0] = 2, m.strides[1] = 1;
  RUN_OK("Add", at(&r), at(&q), asf(F32, 1), at(&m)); /* row 1 must still add r as it was */
  expect_near(&r, VALS(11, 22, 31, 42), 4, 0);
}
END_TEST

START_TEST(test_large_contiguous_add_takes_the_fast_path) {
  int64_t n = 1 << 20;
  double *v = malloc(sizeof(double) * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(i % 1000) * 0.25;
  rdev_tensor_t a = dev(F32, 1, &n, v), o = dev(F32, 1, &n, NULL);
  RUN_OK("Add", at(&a), at(&a), asf(F32, 1), at(&o));
  for (int64_t i = 0; i < n; i++) w[i] = 2 * v[i];
  expect_near(&o, w, n, 0);
  free(v), free(w);
}
END_TEST

START_TEST(test_elementwise_refusals) {
  rdev_tensor_t a = Z(F32, DIMS(2, 3)), b = Z(F32, DIMS(4)), o = Z(F32, DIMS(2, 3)), o2 = Z(F32, DIMS(3, 2));
  rdev_tensor_t bl = Z(BOOL, DIMS(2, 3)), i = Z(I32, DIMS(2, 3)), u16 = Z(RDEV_DT_UINT16, DIMS(2, 3));
  REFUSED(RDEV_OP_PARAM_INVALID, "Mul", at(&a), at(&b), at(&o));               /* do not broadcast */
  REFUSED(RDEV_OP_PARAM_INVALID, "Sub", at(&a), at(&a), asf(F32, 1), at(&o2)); /* out's shape */
  REFUSED(RDEV_OP_PARAM_INVALID, "Sub", at(&bl), at(&bl), asi(I64, 1), at(&bl));
  REFUSED(RDEV_OP_PARAM_INVALID, "Mul", at(&a), at(&a), at(&i));   /* float32 into int32 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Mul", at(&u16), at(&a), at(&o)); /* uint16 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Adds", at(&a), asf(F32, 1), asf(F32, 1), at(&o2));
  REFUSED(RDEV_OP_PARAM_INVALID, "Neg", at(&bl), at(&bl));
  REFUSED(RDEV_OP_PARAM_INVALID, "Exp", at(&i), at(&i)); /* float32 into int32 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Gelu", at(&i), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Relu", at(&a), at(&o2));
  ck_assert_int_eq(check(CALL("Mul", at(&a), anull(), at(&o))), RDEV_OP_PARAM_NULLPTR);
  ck_assert_int_eq(check(CALL("Div", at(&a), at(&a), anull())), RDEV_OP_PARAM_NULLPTR);
  ck_assert_int_eq(check(CALL("Mul", at(&a), at(&a), at(&o))), RDEV_OK);
  ck_assert_int_eq(check(CALL("Exp", at(&i), at(&o))), RDEV_OK); /* int32 gives float32 */
}
END_TEST

/* ---- unary functions ------------------------------------------------------------- */

static const double XS[6] = {-3, -0.5, 0, 0.25, 1, 2.5};

static double ref_gelu(double x) {
  return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_silu(double x) { return x * ref_sigmoid(x); }
static double ref_neg(double x) { return -x; }
static double ref_relu(double x) { return x > 0 ? x : 0; }

static void check_unary(const char *name, double (*f)(double), int dt, double tol) {
  rdev_tensor_t x = dev(dt, 2, DIMS(2, 3), XS), o = dev(dt, 2, DIMS(2, 3), NULL);
  RUN_OK(name, at(&x), at(&o));
  double want[6];
  for (int i = 0; i < 6; i++) want[i] = f(XS[i]);
  expect_near(&o, want, 6, tol);
}

START_TEST(test_unary_functions_float32) {
  check_unary("Neg", ref_neg, F32, 0);
  check_unary("Abs", fabs, F32, 0);
  check_unary("Relu", ref_relu, F32, 0);
  check_unary("Gelu", ref_gelu, F32, 1e-7);
  check_unary("Silu", ref_silu, F32, 1e-7);
  check_unary("Sigmoid", ref_sigmoid, F32, 1e-7);
  check_unary("Tanh", tanh, F32, 1e-7);
  check_unary("Exp", exp, F32, 1e-7);
  check_unary("Gelu", ref_gelu, F16, 1e-3);
  check_unary("Silu", ref_silu, BF16, 8e-3);
  check_unary("Sigmoid", ref_sigmoid, F64, 1e-15);
  rdev_tensor_t x = T(F32, DIMS(4), VALS(1, 4, 0, -1)), o = Z(F32, DIMS(4));
  RUN_OK("Sqrt", at(&x), at(&o));
  EXPECT(o, 0, 1, 2, 0, NAN);
  RUN_OK("Log", at(&x), at(&o));
  EXPECT(o, 1e-7, 0, log(4), -INFINITY, NAN);
}
END_TEST

START_TEST(test_unary_functions_on_integers) {
  rdev_tensor_t i = T(I32, DIMS(4), VALS(-3, 0, 2, 7)), oi = Z(I32, DIMS(4)), of = Z(F32, DIMS(4));
  RUN_OK("Neg", at(&i), at(&oi));
  EXPECT(oi, 0, 3, 0, -2, -7);
  RUN_OK("Abs", at(&i), at(&oi));
  EXPECT(oi, 0, 3, 0, 2, 7);
  RUN_OK("Relu", at(&i), at(&i)); /* in place */
  EXPECT(i, 0, 0, 0, 2, 7);
  rdev_tensor_t l = T(I64, DIMS(3), VALS(0, 1, 4)), ol = Z(F32, DIMS(3));
  RUN_OK("Exp", at(&l), at(&ol));
  EXPECT(ol, 1e-7, 1, exp(1), exp(4));
  RUN_OK("Sqrt", at(&l), at(&ol));
  EXPECT(ol, 0, 0, 1, 2);
  RUN_OK("Sigmoid", at(&oi), at(&of));
  EXPECT(of, 1e-7, ref_sigmoid(3), 0.5, ref_sigmoid(2), ref_sigmoid(7));
}
END_TEST

/* ---- softmax --------------------------------------------------------------------- */

static void ref_softmax(const double *x, double *y, int n, int stride) {
  double mx = -INFINITY, s = 0;
  for (int j = 0; j < n; j++) mx = fmax(mx, x[j * stride]);
  for (int j = 0; j < n; j++) s += exp(x[j * stride] - mx);
  for (int j = 0; j < n; j++) y[j * stride] = exp(x[j * stride] - mx) / s;
}

START_TEST(test_softmax_over_each_dim) {
  const double xv[6] = {1, 2, 3, 1000, 1001, 1002}; /* the second row is stable only with the max taken out */
  rdev_tensor_t x = T(F32, DIMS(2, 3), xv), o = Z(F32, DIMS(2, 3));
  double want[6];
  RUN_OK("Softmax", at(&x), ai64(-1), at(&o));
  ref_softmax(xv, want, 3, 1);
  ref_softmax(xv + 3, want + 3, 3, 1);
  expect_near(&o, want, 6, 1e-7);
  RUN_OK("Softmax", at(&x), ai64(0), at(&o));
  for (int j = 0; j < 3; j++) ref_softmax(xv + j, want + j, 2, 3);
  expect_near(&o, want, 6, 1e-7);
  RUN_OK("Softmax", at(&x), ai64(1), at(&x)); /* in place */
  ref_softmax(xv, want, 3, 1);
  ref_softmax(xv + 3, want + 3, 3, 1);
  expect_near(&x, want, 6, 1e-7);
  rdev_tensor_t h = T(F16, DIMS(4), VALS(0, 1, 2, 3)), oh = Z(F16, DIMS(4));
  RUN_OK("Softmax", at(&h), ai64(0), at(&oh));
  ref_softmax(VALS(0, 1, 2, 3), want, 4, 1);
  expect_near(&oh, want, 4, 1e-3);
  rdev_tensor_t i = Z(I32, DIMS(2, 3));
  REFUSED(RDEV_OP_PARAM_INVALID, "Softmax", at(&x), ai64(2), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Softmax", at(&x), ai64(-3), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Softmax", at(&i), ai64(0), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Softmax", at(&x), ai64(0), at(&oh));
}
END_TEST

/* ---- matrix products ------------------------------------------------------------- */

/* C[n x m] = A[n x k] B[k x m], row-major doubles. */
static void ref_mm(const double *A, const double *B, double *C, int n, int k, int m) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      double s = 0;
      for (int t = 0; t < k; t++) s += A[i * k + t] * B[t * m + j];
      C[i * m + j] = s;
    }
}

START_TEST(test_mm_by_hand_and_strided) {
  rdev_tensor_t a = T(F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), b = T(F32, DIMS(3, 2), VALS(7, 8, 9, 10, 11, 12));
  rdev_tensor_t o = Z(F32, DIMS(2, 2));
  RUN_OK("Mm", at(&a), at(&b), at(&o), ai8(0));
  EXPECT(o, 0, 58, 64, 139, 154);
  /* a^T (a [3,2] view of a) times a: [3,2] x [2,3] */
  rdev_tensor_t at_ = a, o3 = Z(F32, DIMS(3, 3));
  at_.dims[0] = 3, at_.dims[1] = 2, at_.strides[0] = 1, at_.strides[1] = 3;
  RUN_OK("Mm", at(&at_), at(&a), at(&o3), ai8(1));
  EXPECT(o3, 0, 17, 22, 27, 22, 29, 36, 27, 36, 45);
  rdev_tensor_t h = T(F16, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), hb = T(BF16, DIMS(3, 2), VALS(7, 8, 9, 10, 11, 12));
  rdev_tensor_t oh = Z(F16, DIMS(2, 2));
  RUN_OK("Mm", at(&h), at(&hb), at(&oh), ai8(2));
  EXPECT(oh, 0, 58, 64, 139, 154);
}
END_TEST

START_TEST(test_matmul_shapes_follow_torch) {
  rdev_tensor_t v = T(F32, DIMS(3), VALS(1, 2, 3)), w = T(F32, DIMS(3), VALS(4, 5, 6)), s = Z(F32, DIMS(1));
  s.ndim = 0; /* a 0-d result */
  RUN_OK("Matmul", at(&v), at(&w), at(&s), ai8(0));
  EXPECT(s, 0, 32);
  rdev_tensor_t m = T(F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6)), o2 = Z(F32, DIMS(2));
  RUN_OK("Matmul", at(&m), at(&v), at(&o2), ai8(0)); /* [2,3] x [3] = [2] */
  EXPECT(o2, 0, 14, 32);
  rdev_tensor_t u = T(F32, DIMS(2), VALS(1, -1)), o3 = Z(F32, DIMS(3));
  RUN_OK("Matmul", at(&u), at(&m), at(&o3), ai8(0)); /* [2] x [2,3] = [3] */
  EXPECT(o3, 0, -3, -3, -3);
  /* batch broadcast: [2,1,2,3] x [3,3,2] = [2,3,2,2] */
  double av[12], bv[18], want[24];
  for (int i = 0; i < 12; i++) av[i] = i - 5;
  for (int i = 0; i < 18; i++) bv[i] = (i * 7 % 11) - 4;
  rdev_tensor_t A = T(F32, DIMS(2, 1, 2, 3), av), B = T(F32, DIMS(3, 3, 2), bv), O = Z(F32, DIMS(2, 3, 2, 2));
  RUN_OK("Matmul", at(&A), at(&B), at(&O), ai8(0));
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < 3; q++) ref_mm(av + p * 6, bv + q * 6, want + (p * 3 + q) * 4, 2, 3, 2);
  expect_near(&O, want, 24, 0);
  /* BatchMatMul: [2,2,3] x [2,3,2] */
  rdev_tensor_t X = T(F32, DIMS(2, 2, 3), av), Y = T(F32, DIMS(2, 3, 2), bv), OB = Z(F32, DIMS(2, 2, 2));
  RUN_OK("BatchMatMul", at(&X), at(&Y), at(&OB), ai8(3));
  for (int p = 0; p < 2; p++) ref_mm(av + p * 6, bv + p * 6, want + p * 4, 2, 3, 2);
  expect_near(&OB, want, 8, 0);
  /* k = 0 gives zeros */
  rdev_tensor_t e1 = Z(F32, DIMS(2, 0)), e2 = Z(F32, DIMS(0, 2)), oz = T(F32, DIMS(2, 2), VALS(9, 9, 9, 9));
  RUN_OK("Mm", at(&e1), at(&e2), at(&oz), ai8(0));
  EXPECT(oz, 0, 0, 0, 0, 0);
}
END_TEST

START_TEST(test_matmul_out_overlapping_an_operand) {
  rdev_tensor_t a = T(F32, DIMS(2, 2), VALS(1, 2, 3, 4)), b = T(F32, DIMS(2, 2), VALS(5, 6, 7, 8));
  RUN_OK("Mm", at(&a), at(&b), at(&a), ai8(0)); /* out == self: computed through a temporary */
  EXPECT(a, 0, 19, 22, 43, 50);
}
END_TEST

START_TEST(test_matmul_larger_against_reference) {
  int n = 67, k = 300, m = 130; /* past one block of k and of columns */
  double *A = malloc(sizeof(double) * (size_t)(n * k)), *B = malloc(sizeof(double) * (size_t)(k * m));
  double *C = malloc(sizeof(double) * (size_t)(n * m));
  for (int i = 0; i < n * k; i++) A[i] = rand_float();
  for (int i = 0; i < k * m; i++) B[i] = rand_float();
  for (int i = 0; i < n * k; i++) A[i] = (float)A[i];
  for (int i = 0; i < k * m; i++) B[i] = (float)B[i];
  ref_mm(A, B, C, n, k, m);
  rdev_tensor_t ta = dev(F32, 2, DIMS(67, 300), A), tb = dev(F32, 2, DIMS(300, 130), B);
  rdev_tensor_t to = dev(F32, 2, DIMS(67, 130), NULL);
  RUN_OK("Matmul", at(&ta), at(&tb), at(&to), ai8(1));
  double *got = malloc(sizeof(double) * (size_t)(n * m));
  get(&to, got, n * m);
  for (int i = 0; i < n * m; i++)
    ck_assert_msg(fabs(got[i] - C[i]) <= 1e-6 * (1 + fabs(C[i])), "%d: %g %g", i, got[i], C[i]);
  free(A), free(B), free(C), free(got);
}
END_TEST

START_TEST(test_matmul_refusals) {
  rdev_tensor_t a = Z(F32, DIMS(2, 3)), b = Z(F32, DIMS(4, 2)), o = Z(F32, DIMS(2, 2)), i = Z(I32, DIMS(3, 2));
  rdev_tensor_t b3 = Z(F32, DIMS(3, 2)), a3 = Z(F32, DIMS(2, 2, 3)), c3 = Z(F32, DIMS(3, 3, 2));
  rdev_tensor_t o3 = Z(F32, DIMS(2, 2, 2)), d = Z(F64, DIMS(3, 2));
  REFUSED(RDEV_OP_PARAM_INVALID, "Matmul", at(&a), at(&b), at(&o), ai8(0));   /* 3 != 4 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Matmul", at(&a), at(&i), at(&o), ai8(0));   /* int32 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Matmul", at(&a), at(&d), at(&o), ai8(0));   /* float64 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Matmul", at(&a), at(&b3), at(&o), ai8(4));  /* cubeMathType */
  REFUSED(RDEV_OP_PARAM_INVALID, "Matmul", at(&a), at(&b3), at(&o3), ai8(0)); /* out's shape */
  REFUSED(RDEV_OP_PARAM_INVALID, "Mm", at(&a3), at(&b3), at(&o3), ai8(0));
  REFUSED(RDEV_OP_PARAM_INVALID, "BatchMatMul", at(&a3), at(&c3), at(&o3), ai8(0)); /* batch 2 != 3 */
  REFUSED(RDEV_OP_PARAM_INVALID, "BatchMatMul", at(&a), at(&b3), at(&o), ai8(0));
  ck_assert_int_eq(check(CALL("Mm", at(&a), at(&b3), at(&o), ai8(-1))), RDEV_OP_PARAM_INVALID);
  ck_assert_int_eq(check(CALL("Mm", anull(), at(&b3), at(&o), ai8(0))), RDEV_OP_PARAM_NULLPTR);
  ck_assert_int_eq(check(CALL("Mm", at(&a), at(&b3), at(&o), ai8(0))), RDEV_OK);
}
END_TEST

/* ---- the blob ---------------------------------------------------------------------- */

START_TEST(test_garbage_and_truncated_blobs_are_refused) {
  rdev_tensor_t a = Z(F32, DIMS(2, 3)), b = Z(F32, DIMS(3)), o = Z(F32, DIMS(2, 3));
  rdev_tensor_t l[2] = {a, o};
  rdev_op_call_t calls[3] = {CALL("Add", at(&a), at(&b), asf(F32, 1), at(&o)),
                             CALL("Softmax", at(&a), ai64(-1), at(&o)), CALL("Mm", at(&a), at(&b), at(&o), ai8(0))};
  (void)l;
  unsigned char blob[4096], bad[4096];
  for (int k = 0; k < 3; k++) {
    size_t len;
    ck_assert_int_eq(rdev_op_encode(&calls[k], blob, sizeof blob, &len), RDEV_OK);
    rdev_op_call_t *d = NULL;
    for (size_t cut = 0; cut < len; cut++) { /* every truncation */
      ck_assert_int_ne(rdev_op_decode(blob, cut, &d, MSG, sizeof MSG), RDEV_OK);
      ck_assert_ptr_null(d);
    }
    for (size_t at_ = 0; at_ < len; at_++) /* every byte changed: refused or still a sound call */
      for (int v = 0; v < 256; v += 51) {
        memcpy(bad, blob, len);
        bad[at_] = (unsigned char)(bad[at_] ^ (v | 1));
        if (rdev_op_decode(bad, len, &d, MSG, sizeof MSG) == RDEV_OK) {
          ck_assert_int_eq(rdev_op_check(d, MSG, sizeof MSG), RDEV_OK);
          free(d);
        }
        d = NULL;
      }
    for (int r = 0; r < 2000; r++) { /* random bytes behind a valid name */
      size_t n = 1 + rng_next() % 300;
      fill_random(bad, n);
      memcpy(bad, blob, len < n ? len / 2 : n / 2);
      if (rdev_op_decode(bad, n, &d, MSG, sizeof MSG) == RDEV_OK) free(d);
      d = NULL;
    }
  }
  ck_assert_int_eq(rdev_op_decode(blob, 0, &(rdev_op_call_t *){NULL}, MSG, sizeof MSG), RDEV_INVALID_PARAM);
}
END_TEST

START_TEST(test_every_operator_has_a_rule) {
  int count;
  const rdev_op_sig_t *all = rdev_op_table(&count);
  ck_assert_int_ge(count, 1);
  for (int i = 0; i < count; i++) ck_assert_msg(all[i].check != NULL, "%s has no rule", all[i].name);
}
END_TEST

/* ---- suites -------------------------------------------------------------------- */

static TCase *fixture(const char *name) {
  TCase *tc = tcase(name);
  tcase_add_checked_fixture(tc, setup, teardown);
  return tc;
}

static Suite *ops_suite(void) {
  Suite *s = suite_create("ops");
  TCase *tc = fixture("elementwise");
  tcase_add_test(tc, test_half_and_bf16_conversions_round_to_nearest_even);
  tcase_add_test(tc, test_add_broadcasts_with_alpha);
  tcase_add_test(tc, test_adds_and_muls_take_a_scalar);
  tcase_add_test(tc, test_sub_is_self_minus_alpha_other);
  tcase_add_test(tc, test_mul_broadcasts_both_ways_and_promotes);
  tcase_add_test(tc, test_div_is_true_division);
  tcase_add_test(tc, test_float16_and_bfloat16_arithmetic_rounds_once);
  tcase_add_test(tc, test_elementwise_reads_a_transposed_view);
  tcase_add_test(tc, test_in_place_and_overlapping_outputs);
  tcase_add_test(tc, test_large_contiguous_add_takes_the_fast_path);
  tcase_add_test(tc, test_elementwise_refusals);
  tcase_add_test(tc, test_unary_functions_float32);
  tcase_add_test(tc, test_unary_functions_on_integers);
  suite_add_tcase(s, tc);
  tc = fixture("nn");
  tcase_add_test(tc, test_softmax_over_each_dim);
  tcase_add_test(tc, test_mm_by_hand_and_strided);
  tcase_add_test(tc, test_matmul_shapes_follow_torch);
  tcase_add_test(tc, test_matmul_out_overlapping_an_operand);
  tcase_add_test(tc, test_matmul_larger_against_reference);
  tcase_add_test(tc, test_matmul_refusals);
  suite_add_tcase(s, tc);
  tc = fixture("blob");
  tcase_add_test(tc, test_garbage_and_truncated_blobs_are_refused);
  tcase_add_test(tc, test_every_operator_has_a_rule);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(ops_suite(), (Suite *)NULL); }
