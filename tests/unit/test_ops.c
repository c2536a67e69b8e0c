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

#include "rdev/clock.h"
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
static rdev_op_arg_t alist(rdev_tensor_t *t, uint32_t n) {
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
static rdev_op_arg_t aia(const int64_t *v, uint32_t n) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_INT_ARRAY, .present = 1, .n = n, .v.ints = v};
}
static rdev_op_arg_t ai64(int64_t v) { return (rdev_op_arg_t){.kind = RDEV_OPK_INT64, .present = 1, .v.i64 = v}; }
static rdev_op_arg_t ai8(int64_t v) { return (rdev_op_arg_t){.kind = RDEV_OPK_INT8, .present = 1, .v.i64 = v}; }
static rdev_op_arg_t ab(bool v) { return (rdev_op_arg_t){.kind = RDEV_OPK_BOOL, .present = 1, .v.i64 = v}; }
static rdev_op_arg_t af64(double v) { return (rdev_op_arg_t){.kind = RDEV_OPK_DOUBLE, .present = 1, .v.f64 = v}; }
static rdev_op_arg_t adt(int v) { return (rdev_op_arg_t){.kind = RDEV_OPK_DTYPE, .present = 1, .v.dtype = v}; }
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
 * the same bytes) and launches the decoded call on s (which owns it then). */
static int launch(rdev_rt_stream_t *s, rdev_op_call_t c) {
  static unsigned char blob[RDEV_OP_MAX_BLOB], again[RDEV_OP_MAX_BLOB];
  size_t len, len2;
  ck_assert_int_eq(rdev_op_encode(&c, blob, sizeof blob, &len), RDEV_OK);
  rdev_op_call_t *d = NULL;
  int rc = rdev_op_decode(blob, len, &d, MSG, sizeof MSG);
  if (rc) return rc;
  ck_assert_int_eq(rdev_op_encode(d, again, sizeof again, &len2), RDEV_OK);
  ck_assert_uint_eq(len, len2);
  ck_assert_int_eq(memcmp(blob, again, len), 0);
  return rdev_rt_op_launch(s, d);
}

/* launch on S and synchronize: the launch's code, else the synchronize's. */
static int run(rdev_op_call_t c) {
  int rc = launch(S, c);
  return rc ? rc : rdev_rt_stream_synchronize(S);
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

/* Integer results wrap as torch's do; a float stored into an integer type
 * saturates; float16 rounds once from the double a value is computed in. */
START_TEST(test_integers_wrap_floats_saturate_halves_round_once) {
  rdev_tensor_t a = T(I32, DIMS(3), VALS(2147483647, -2147483647 - 1.0, 7)), b = T(I32, DIMS(3), VALS(1, -1, 1));
  rdev_tensor_t oi = Z(I32, DIMS(3));
  RUN_OK("Add", at(&a), at(&b), asi(I64, 1), at(&oi));
  EXPECT(oi, 0, -2147483647 - 1.0, 2147483647, 8);
  RUN_OK("Mul", at(&a), at(&b), at(&oi));
  EXPECT(oi, 0, 2147483647, -2147483647 - 1.0, 7);
  rdev_tensor_t w = T(I64, DIMS(2), VALS(4294967296.0 + 5, 2147483648.0)), o2 = Z(I32, DIMS(2));
  RUN_OK("Cast", at(&w), adt(I32), at(&o2)); /* the low 32 bits, as torch's .to(int32) */
  EXPECT(o2, 0, 5, -2147483647 - 1.0);
  rdev_tensor_t f = T(F32, DIMS(4), VALS(1e10, -1e10, -3.7, 300)), o4 = Z(I32, DIMS(4)), u = Z(U8, DIMS(4));
  RUN_OK("Cast", at(&f), adt(I32), at(&o4));
  EXPECT(o4, 0, 2147483647, -2147483647 - 1.0, -3, 300);
  RUN_OK("Cast", at(&f), adt(U8), at(&u));
  EXPECT(u, 0, 255, 0, 0, 255);
  /* 1 + 1 * alpha with alpha = 2^-11 + 2^-40: through float it would be the
   * tie 1 + 2^-11 and round to 1; rounded once it is 1 + 2^-10 */
  rdev_tensor_t h1 = T(F16, DIMS(1), VALS(1)), h2 = T(F16, DIMS(1), VALS(1)), ho = Z(F16, DIMS(1));
  RUN_OK("Add", at(&h1), at(&h2), asf(F64, 1.0 / 2048 + 1.0 / 1099511627776.0), at(&ho));
  EXPECT(ho, 0, 1 + 1.0 / 1024);
  rdev_tensor_t g1 = T(BF16, DIMS(1), VALS(1)), g2 = T(BF16, DIMS(1), VALS(1)), go = Z(BF16, DIMS(1));
  RUN_OK("Add", at(&g1), at(&g2), asf(F64, 1.0 / 256 + 1.0 / 1099511627776.0), at(&go));
  EXPECT(go, 0, 1 + 1.0 / 128);
}
END_TEST

/* Saturation at the 64-bit ends, whose tops no double holds; uint64 loads
 * past 2^63 keep their value. */
START_TEST(test_64_bit_integers_saturate_at_their_ends) {
  rdev_tensor_t f = T(F64, DIMS(4), VALS(INFINITY, 9223372036854775808.0, -INFINITY, 1e30)), o = Z(I64, DIMS(4));
  RUN_OK("Cast", at(&f), adt(I64), at(&o));
  int64_t got[4];
  d2h(RT, got, (const void *)(uintptr_t)o.addr, sizeof got);
  ck_assert(got[0] == INT64_MAX && got[1] == INT64_MAX && got[2] == INT64_MIN && got[3] == INT64_MAX);
  rdev_tensor_t u = o;
  u.dtype = RDEV_DT_UINT64;
  RUN_OK("Cast", at(&f), adt(RDEV_DT_UINT64), at(&u));
  uint64_t ug[4];
  d2h(RT, ug, (const void *)(uintptr_t)u.addr, sizeof ug);
  ck_assert(ug[0] == UINT64_MAX && ug[1] == (uint64_t)1 << 63 && ug[2] == 0 && ug[3] == UINT64_MAX);
  uint64_t big = ((uint64_t)1 << 63) + 4096;
  h2d(RT, (void *)(uintptr_t)u.addr, &big, sizeof big);
  rdev_tensor_t one = u, back = Z(F64, DIMS(1));
  one.dims[0] = 1;
  RUN_OK("Cast", at(&one), adt(F64), at(&back));
  EXPECT(back, 0, 9223372036854779904.0);
}
END_TEST

/* torch refuses a floating alpha with an integral result. */
START_TEST(test_float_alpha_with_integers_is_refused) {
  rdev_tensor_t a = T(I32, DIMS(2), VALS(1, 2)), o = Z(I32, DIMS(2)), of = Z(F32, DIMS(2));
  rdev_tensor_t f = T(F32, DIMS(2), VALS(1, 2));
  REFUSED(RDEV_OP_PARAM_INVALID, "Add", at(&a), at(&a), asf(F32, 0.5), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Add", at(&a), at(&a), asf(F64, 2), at(&of)); /* integral even into float32 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Sub", at(&a), at(&a), asf(F64, 1), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Adds", at(&a), asi(I64, 1), asf(F64, 1.5), at(&o));
  RUN_OK("Adds", at(&a), asf(F64, 1), asf(F64, 1.5), at(&of)); /* a float scalar makes the result float */
  EXPECT(of, 0, 2.5, 3.5);
  RUN_OK("Add", at(&a), at(&f), asf(F64, 0.5), at(&of)); /* int32 + float32 is float32 */
  EXPECT(of, 0, 1.5, 3);
}
END_TEST

/* An operator of enormous work (stride-0 views of one element name 2^28)
 * stops when its stream is destroyed by force; beyond the sim's bound on
 * temporaries it is refused. */
START_TEST(test_a_long_operator_is_cut_off_and_temporaries_are_bounded) {
  rdev_tensor_t a = T(F32, DIMS(1), VALS(1)), o = Z(F32, DIMS(1));
  rdev_tensor_t big = a, bo = o;
  big.ndim = bo.ndim = 3;
  big.dims[0] = bo.dims[0] = 16; /* 16 products of 4096 x 4096 matrices: 2^40 multiply-adds, hours on the sim */
  big.dims[1] = big.dims[2] = bo.dims[1] = bo.dims[2] = 4096;
  for (int d = 0; d < 3; d++) big.strides[d] = bo.strides[d] = 0;
  rdev_op_call_t c = CALL("BatchMatMul", at(&big), at(&big), at(&bo), ai8(0));
  ck_assert_int_eq(check(c), RDEV_OK);
  rdev_rt_stream_t *s2 = mkstream(RT, 0);
  ck_assert_int_eq(launch(s2, c), RDEV_OK);
  usleep(200 * 1000); /* let it start */
  uint64_t t0 = rdev_clock_now_ns();
  rdev_rt_stream_destroy_force(s2);
  double secs = (double)(rdev_clock_now_ns() - t0) / 1e9;
  ck_assert_msg(secs < 10, "the forced destroy took %.1f s", secs);
  /* one softmax row of 2^28 elements (a walk the iterator never counts) stops too */
  rdev_tensor_t row = a, ro = o;
  row.ndim = ro.ndim = 1;
  row.dims[0] = ro.dims[0] = (int64_t)1 << 28;
  row.strides[0] = ro.strides[0] = 0;
  s2 = mkstream(RT, 0);
  ck_assert_int_eq(launch(s2, CALL("Softmax", at(&row), ai64(0), at(&ro))), RDEV_OK);
  usleep(200 * 1000);
  t0 = rdev_clock_now_ns();
  rdev_rt_stream_destroy_force(s2);
  secs = (double)(rdev_clock_now_ns() - t0) / 1e9;
  ck_assert_msg(secs < 5, "the forced destroy of a softmax took %.1f s", secs); /* hours without the cut-off */
  big.ndim = bo.ndim = 2;
  big.dims[0] = big.dims[1] = bo.dims[0] = bo.dims[1] = 8192; /* 3 x 2^26 doubles packed: 1.5 GiB */
  ck_assert_int_eq(run(CALL("Mm", at(&big), at(&big), at(&bo), ai8(0))), RDEV_BAD_ALLOC);
  ck_assert_ptr_nonnull(strstr(rdev_rt_last_error(), "at most"));
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

/* ---- layer norm ------------------------------------------------------------------ */

START_TEST(test_layer_norm_with_and_without_affine) {
  const double xv[6] = {1, 2, 3, 4, 6, 11};
  rdev_tensor_t x = T(F32, DIMS(2, 3), xv), o = Z(F32, DIMS(2, 3));
  rdev_tensor_t w = T(F32, DIMS(3), VALS(1, 2, -1)), b = T(F32, DIMS(3), VALS(0, 0.5, 1));
  rdev_tensor_t mean = Z(F32, DIMS(2, 1)), rstd = Z(F32, DIMS(2, 1));
  double want[6], mu[2], rs[2];
  for (int r = 0; r < 2; r++) {
    const double *v = xv + 3 * r;
    mu[r] = (v[0] + v[1] + v[2]) / 3;
    double var = 0;
    for (int j = 0; j < 3; j++) var += (v[j] - mu[r]) * (v[j] - mu[r]) / 3;
    rs[r] = 1 / sqrt(var + 1e-5);
    for (int j = 0; j < 3; j++) want[3 * r + j] = (v[j] - mu[r]) * rs[r];
  }
  RUN_OK("LayerNorm", at(&x), IA(3), anull(), anull(), af64(1e-5), at(&o), at(&mean), at(&rstd));
  expect_near(&o, want, 6, 1e-6);
  expect_near(&mean, mu, 2, 1e-7);
  expect_near(&rstd, rs, 2, 1e-6);
  const double wv[3] = {1, 2, -1}, bv[3] = {0, 0.5, 1};
  for (int i = 0; i < 6; i++) want[i] = want[i] * wv[i % 3] + bv[i % 3];
  RUN_OK("LayerNorm", at(&x), IA(3), at(&w), at(&b), af64(1e-5), at(&x), anull(), anull()); /* in place */
  expect_near(&x, want, 6, 1e-6);
  /* normalized over two dims: [2, 2, 2] with normalizedShape [2, 2] */
  rdev_tensor_t y = T(F32, DIMS(2, 2, 2), VALS(0, 1, 2, 3, 4, 4, 4, 4)), oy = Z(F32, DIMS(2, 2, 2));
  rdev_tensor_t my = Z(F32, DIMS(2, 1, 1));
  RUN_OK("LayerNorm", at(&y), IA(2, 2), anull(), anull(), af64(0), at(&oy), at(&my), anull());
  double s = 1 / sqrt(1.25);
  EXPECT(oy, 1e-6, -1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s, NAN, NAN, NAN, NAN); /* var 0, eps 0: 0/0 */
  EXPECT(my, 0, 1.5, 4);
  rdev_tensor_t w2 = Z(F32, DIMS(2)), i = Z(I32, DIMS(2, 3)), m3 = Z(F32, DIMS(2));
  REFUSED(RDEV_OP_PARAM_INVALID, "LayerNorm", at(&x), IA(2), anull(), anull(), af64(0), at(&o), anull(), anull());
  REFUSED(RDEV_OP_PARAM_INVALID, "LayerNorm", at(&x), IA(2, 3, 1), anull(), anull(), af64(0), at(&o), anull(), anull());
  REFUSED(RDEV_OP_PARAM_INVALID, "LayerNorm", at(&x), IA(3), at(&w2), anull(), af64(0), at(&o), anull(), anull());
  REFUSED(RDEV_OP_PARAM_INVALID, "LayerNorm", at(&i), IA(3), anull(), anull(), af64(0), at(&o), anull(), anull());
  REFUSED(RDEV_OP_PARAM_INVALID, "LayerNorm", at(&x), IA(3), anull(), anull(), af64(0), at(&o), at(&m3), anull());
  ck_assert_int_eq(check(CALL("LayerNorm", at(&x), IA(3), anull(), anull(), af64(0), anull(), anull(), anull())),
                   RDEV_OP_PARAM_NULLPTR);
}
END_TEST

/* ---- reductions ------------------------------------------------------------------ */

START_TEST(test_reduce_sum_dims_keepdim_and_dtype) {
  rdev_tensor_t x = T(F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 6));
  rdev_tensor_t o3 = Z(F32, DIMS(3)), o2k = Z(F32, DIMS(2, 1)), o0 = Z(F32, DIMS(1)), o64 = Z(F64, DIMS(1, 1));
  o0.ndim = 0;
  RUN_OK("ReduceSum", at(&x), IA(0), ab(false), adt(F32), at(&o3));
  EXPECT(o3, 0, 5, 7, 9);
  RUN_OK("ReduceSum", at(&x), IA(-1), ab(true), adt(F32), at(&o2k));
  EXPECT(o2k, 0, 6, 15);
  RUN_OK("ReduceSum", at(&x), IA0(), ab(false), adt(F32), at(&o0)); /* empty dims: all */
  EXPECT(o0, 0, 21);
  RUN_OK("ReduceSum", at(&x), IA(1, 0), ab(true), adt(F64), at(&o64));
  EXPECT(o64, 0, 21);
  /* int32 summed as int64; a transposed view; 3-d over the middle dim */
  rdev_tensor_t i = T(I32, DIMS(2, 2), VALS(2000000000, 2000000000, 1, -1)), oi = Z(I64, DIMS(2));
  RUN_OK("ReduceSum", at(&i), IA(1), ab(false), adt(I64), at(&oi));
  EXPECT(oi, 0, 4000000000.0, 0);
  rdev_tensor_t tr = x; /* [3, 2] view: the transpose */
  tr.dims[0] = 3, tr.dims[1] = 2, tr.strides[0] = 1, tr.strides[1] = 3;
  rdev_tensor_t ot = Z(F32, DIMS(3));
  RUN_OK("ReduceSum", at(&tr), IA(1), ab(false), adt(F32), at(&ot));
  EXPECT(ot, 0, 5, 7, 9);
  double v[24];
  for (int k = 0; k < 24; k++) v[k] = k;
  rdev_tensor_t c3 = T(BF16, DIMS(2, 3, 4), v), om = Z(F32, DIMS(2, 4));
  RUN_OK("ReduceSum", at(&c3), IA(-2), ab(false), adt(F32), at(&om));
  EXPECT(om, 0, 12, 15, 18, 21, 48, 51, 54, 57);
  rdev_tensor_t of = Z(F16, DIMS(3));
  REFUSED(RDEV_OP_PARAM_INVALID, "ReduceSum", at(&x), IA(0, 0), ab(false), adt(F32), at(&o3));  /* twice */
  REFUSED(RDEV_OP_PARAM_INVALID, "ReduceSum", at(&x), IA(0, -2), ab(false), adt(F32), at(&o3)); /* twice */
  REFUSED(RDEV_OP_PARAM_INVALID, "ReduceSum", at(&x), IA(2), ab(false), adt(F32), at(&o3));
  REFUSED(RDEV_OP_PARAM_INVALID, "ReduceSum", at(&x), IA(0), ab(false), adt(F32), at(&of)); /* dtype != out's */
  REFUSED(RDEV_OP_PARAM_INVALID, "ReduceSum", at(&x), IA(0), ab(true), adt(F32), at(&o3));  /* keepDim's shape */
  REFUSED(RDEV_OP_PARAM_INVALID, "ReduceSum", at(&x), IA(0), ab(false), adt(I32), at(&oi)); /* float to int */
}
END_TEST

START_TEST(test_mean_and_amax) {
  rdev_tensor_t x = T(F32, DIMS(2, 3), VALS(1, 2, 3, 4, 5, 9)), o2 = Z(F32, DIMS(2)), o3k = Z(F32, DIMS(1, 3));
  RUN_OK("Mean", at(&x), IA(-1), ab(false), adt(F32), at(&o2));
  EXPECT(o2, 0, 2, 6);
  RUN_OK("Amax", at(&x), IA(0), ab(true), at(&o3k));
  EXPECT(o3k, 0, 4, 5, 9);
  rdev_tensor_t i = T(I64, DIMS(4), VALS(1, 2, 4, -7)), oh = Z(F16, DIMS(1)), oi = Z(I64, DIMS(1));
  oh.ndim = oi.ndim = 0;
  RUN_OK("Mean", at(&i), IA0(), ab(false), adt(F16), at(&oh)); /* ints: a floating dtype */
  EXPECT(oh, 0, 0);
  RUN_OK("Amax", at(&i), IA0(), ab(false), at(&oi));
  EXPECT(oi, 0, 4);
  rdev_tensor_t n = T(F32, DIMS(2, 2), VALS(1, NAN, -INFINITY, -5)), on = Z(F32, DIMS(2));
  RUN_OK("Amax", at(&n), IA(1), ab(false), at(&on));
  EXPECT(on, 0, NAN, -5);
  rdev_tensor_t e = Z(F32, DIMS(2, 0)), oe = Z(F32, DIMS(2)), oi2 = Z(I64, DIMS(2));
  RUN_OK("Mean", at(&e), IA(1), ab(false), adt(F32), at(&oe)); /* over no elements: nan */
  EXPECT(oe, 0, NAN, NAN);
  RUN_OK("ReduceSum", at(&e), IA(1), ab(false), adt(F32), at(&oe));
  EXPECT(oe, 0, 0, 0);
  REFUSED(RDEV_OP_PARAM_INVALID, "Amax", at(&e), IA(1), ab(false), at(&oe));           /* max of nothing */
  REFUSED(RDEV_OP_PARAM_INVALID, "Mean", at(&i), IA0(), ab(false), adt(I64), at(&oi)); /* mean of ints as int */
  REFUSED(RDEV_OP_PARAM_INVALID, "Amax", at(&x), IA(0), ab(false), at(&oi2));          /* out's type */
  REFUSED(RDEV_OP_PARAM_INVALID, "Amax", at(&x), IA(1, 1), ab(false), at(&o2));
  ck_assert_int_eq(check(CALL("Amax", at(&x), IA(1), ab(false), at(&o2))), RDEV_OK);
}
END_TEST

/* ---- casts, copies, fills -------------------------------------------------------- */

START_TEST(test_cast_between_types) {
  rdev_tensor_t x = T(F32, DIMS(5), VALS(1.5, -2.7, 0.1, 70000, 0)), i = Z(I32, DIMS(5)), h = Z(F16, DIMS(5));
  rdev_tensor_t bl = Z(BOOL, DIMS(5)), bf = Z(BF16, DIMS(5));
  RUN_OK("Cast", at(&x), adt(I32), at(&i));
  EXPECT(i, 0, 1, -2, 0, 70000, 0); /* toward zero */
  RUN_OK("Cast", at(&x), adt(F16), at(&h));
  EXPECT(h, 0, 1.5, -2.69921875, 0.0999755859375, INFINITY, 0);
  RUN_OK("Cast", at(&x), adt(BOOL), at(&bl));
  EXPECT(bl, 0, 1, 1, 1, 1, 0);
  RUN_OK("Cast", at(&x), adt(BF16), at(&bf));
  EXPECT(bf, 0, 1.5, -2.703125, 0.10009765625, 70144, 0);
  rdev_tensor_t l = T(I64, DIMS(2), VALS(9007199254740993.0, -3)), l2 = Z(I64, DIMS(2)), i2 = Z(I32, DIMS(2));
  RUN_OK("Cast", at(&l), adt(I64), at(&l2));
  int64_t got[2];
  d2h(RT, got, (void *)(uintptr_t)l2.addr, 16);
  ck_assert_int_eq(got[1], -3);
  RUN_OK("Cast", at(&l), adt(I32), at(&i2));
  REFUSED(RDEV_OP_PARAM_INVALID, "Cast", at(&x), adt(I32), at(&h));  /* out is not dtype */
  REFUSED(RDEV_OP_PARAM_INVALID, "Cast", at(&x), adt(I32), at(&i2)); /* shape */
  REFUSED(RDEV_OP_PARAM_INVALID, "Cast", at(&x), adt(1234), at(&i));
}
END_TEST

START_TEST(test_inplace_copy_broadcasts_and_converts) {
  rdev_tensor_t d = Z(I32, DIMS(2, 3)), s = T(F32, DIMS(3), VALS(1.9, -1.9, 7));
  RUN_OK("InplaceCopy", at(&d), at(&s));
  EXPECT(d, 0, 1, -1, 7, 1, -1, 7);
  rdev_tensor_t h = Z(F16, DIMS(2, 2)), col = T(F64, DIMS(2, 1), VALS(0.5, 3));
  RUN_OK("InplaceCopy", at(&h), at(&col));
  EXPECT(h, 0, 0.5, 0.5, 3, 3);
  /* overlapping: copy a[0:3] onto a[1:4] */
  rdev_tensor_t a = T(F32, DIMS(4), VALS(1, 2, 3, 4)), lo = a, hi = a;
  lo.dims[0] = hi.dims[0] = 3;
  hi.offset = 1;
  RUN_OK("InplaceCopy", at(&hi), at(&lo));
  EXPECT(a, 0, 1, 1, 2, 3);
  rdev_tensor_t big = Z(F32, DIMS(4));
  REFUSED(RDEV_OP_PARAM_INVALID, "InplaceCopy", at(&s), at(&big));
  REFUSED(RDEV_OP_PARAM_INVALID, "InplaceCopy", at(&s), at(&d)); /* [2,3] does not go into [3] */
  ck_assert_int_eq(check(CALL("InplaceCopy", at(&d), anull())), RDEV_OP_PARAM_NULLPTR);
}
END_TEST

START_TEST(test_inplace_fill_scalar) {
  rdev_tensor_t f = Z(F32, DIMS(2, 2)), i = Z(I64, DIMS(3)), h = Z(BF16, DIMS(2));
  RUN_OK("InplaceFillScalar", at(&f), asf(F64, 2.5));
  EXPECT(f, 0, 2.5, 2.5, 2.5, 2.5);
  RUN_OK("InplaceFillScalar", at(&i), asi(I64, -9000000000));
  EXPECT(i, 0, -9000000000.0, -9000000000.0, -9000000000.0);
  RUN_OK("InplaceFillScalar", at(&h), asi(I32, 3));
  EXPECT(h, 0, 3, 3);
  /* a strided view: every other element */
  rdev_tensor_t g = T(F32, DIMS(4), VALS(1, 2, 3, 4)), ev = g;
  ev.dims[0] = 2, ev.strides[0] = 2;
  RUN_OK("InplaceFillScalar", at(&ev), asf(F32, 0));
  EXPECT(g, 0, 0, 2, 0, 4);
}
END_TEST

/* ---- permute and cat ------------------------------------------------------------- */

START_TEST(test_permute) {
  double v[24];
  for (int k = 0; k < 24; k++) v[k] = k;
  rdev_tensor_t x = T(F32, DIMS(2, 3, 4), v), o = Z(F32, DIMS(4, 2, 3));
  RUN_OK("Permute", at(&x), IA(-1, 0, 1), at(&o));
  double want[24];
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 3; c++) want[(a * 2 + b) * 3 + c] = v[(b * 3 + c) * 4 + a];
  expect_near(&o, want, 24, 0);
  rdev_tensor_t l = T(I64, DIMS(2, 2), VALS(1, 2, 3, 4));
  RUN_OK("Permute", at(&l), IA(1, 0), at(&l)); /* in place: through a temporary */
  EXPECT(l, 0, 1, 3, 2, 4);
  rdev_tensor_t bad = Z(F32, DIMS(2, 3, 4)), oi = Z(I32, DIMS(4, 2, 3));
  REFUSED(RDEV_OP_PARAM_INVALID, "Permute", at(&x), IA(0, 0, 1), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Permute", at(&x), IA(0, 1), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Permute", at(&x), IA(0, 1, 3), at(&o));
  REFUSED(RDEV_OP_PARAM_INVALID, "Permute", at(&x), IA(2, 0, 1), at(&bad));
  REFUSED(RDEV_OP_PARAM_INVALID, "Permute", at(&x), IA(2, 0, 1), at(&oi));
}
END_TEST

START_TEST(test_cat) {
  rdev_tensor_t l[4];
  l[0] = T(F32, DIMS(2, 1), VALS(1, 2));
  l[1] = T(F32, DIMS(0), VALS(0)); /* skipped: torch's legacy */
  l[2] = T(I32, DIMS(2, 2), VALS(3, 4, 5, 6));
  l[3] = T(F16, DIMS(2, 0), NULL);
  rdev_tensor_t o = Z(F32, DIMS(2, 3));
  RUN_OK("Cat", alist(l, 4), ai64(-1), at(&o));
  EXPECT(o, 0, 1, 3, 4, 2, 5, 6);
  rdev_tensor_t r[2] = {T(I64, DIMS(1, 2), VALS(1, 2)), T(I64, DIMS(2, 2), VALS(3, 4, 5, 6))}, oi = Z(I64, DIMS(3, 2));
  RUN_OK("Cat", alist(r, 2), ai64(0), at(&oi));
  EXPECT(oi, 0, 1, 2, 3, 4, 5, 6);
  rdev_tensor_t bad = Z(F32, DIMS(3, 2)), o2 = Z(F32, DIMS(2, 4)), i2 = Z(I32, DIMS(2, 3));
  REFUSED(RDEV_OP_PARAM_INVALID, "Cat", alist(l, 4), ai64(1), at(&o2));  /* out's shape */
  REFUSED(RDEV_OP_PARAM_INVALID, "Cat", alist(l, 4), ai64(0), at(&o));   /* sizes differ in dim 1 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Cat", alist(l, 4), ai64(2), at(&o));   /* dim */
  REFUSED(RDEV_OP_PARAM_INVALID, "Cat", alist(l, 4), ai64(1), at(&i2));  /* float32 into int32 */
  REFUSED(RDEV_OP_PARAM_INVALID, "Cat", alist(l, 0), ai64(0), at(&bad)); /* no tensors */
  rdev_tensor_t m[2] = {Z(F32, DIMS(2, 2)), Z(F32, DIMS(2, 2, 1))};
  REFUSED(RDEV_OP_PARAM_INVALID, "Cat", alist(m, 2), ai64(0), at(&bad)); /* ndim differs */
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
  tcase_add_test(tc, test_integers_wrap_floats_saturate_halves_round_once);
  tcase_add_test(tc, test_float_alpha_with_integers_is_refused);
  tcase_add_test(tc, test_64_bit_integers_saturate_at_their_ends);
  tcase_add_test(tc, test_a_long_operator_is_cut_off_and_temporaries_are_bounded);
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
  tcase_add_test(tc, test_layer_norm_with_and_without_affine);
  suite_add_tcase(s, tc);
  tc = fixture("reduce");
  tcase_add_test(tc, test_reduce_sum_dims_keepdim_and_dtype);
  tcase_add_test(tc, test_mean_and_amax);
  suite_add_tcase(s, tc);
  tc = fixture("shape");
  tcase_add_test(tc, test_cast_between_types);
  tcase_add_test(tc, test_inplace_copy_broadcasts_and_converts);
  tcase_add_test(tc, test_inplace_fill_scalar);
  tcase_add_test(tc, test_permute);
  tcase_add_test(tc, test_cat);
  suite_add_tcase(s, tc);
  tc = fixture("blob");
  tcase_add_test(tc, test_garbage_and_truncated_blobs_are_refused);
  tcase_add_test(tc, test_every_operator_has_a_rule);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(ops_suite(), (Suite *)NULL); }
