/*
 * tests/integration/test_ops.c — operators (OpRun) against a real rdevd,
 * as a hostile or careless client sends them: a tensor naming another
 * session's memory, or reaching past its own allocation, is refused and
 * the other session's bytes stay; malformed and unknown calls get their
 * codes; and the session serves on. Both backends: the refusals come
 * before any backend runs anything.
 */
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "rdev/clock.h"

/* A float32 vector tensor of n elements at addr. */
static rdev_tensor_t vec(void *addr, int64_t n) {
  rdev_tensor_t t = {.dtype = RDEV_DT_FLOAT, .format = 2, .ndim = 1};
  t.dims[0] = n;
  t.strides[0] = 1;
  t.addr = (uint64_t)(uintptr_t)addr;
  return t;
}

/* Add(self, other, alpha 1, out) on st. */
static int add(rdev_stream_t *st, rdev_tensor_t *self, rdev_tensor_t *other, rdev_tensor_t *out) {
  rdev_op_call_t c = {.op = (int)(rdev_op_find("Add") - rdev_op_table(NULL)), .nargs = 4};
  c.args[0] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = self};
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = other};
  c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 1};
  c.args[2].v.scalar.dtype = RDEV_DT_FLOAT;
  c.args[2].v.scalar.v.f = 1;
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = out};
  return rdev_op_launch(st, &c);
}

START_TEST(test_op_other_sessions_memory_refused) {
  rdev_session_t *a = fx_open(), *s = fx_open();
  float *theirs = NULL, *mine = NULL, fill[16];
  for (int i = 0; i < 16; i++) fill[i] = 7;
  FX_OK(rdev_malloc(a, (void **)&theirs, sizeof fill, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(a, theirs, sizeof fill, fill, sizeof fill, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_malloc(s, (void **)&mine, sizeof fill, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_tensor_t t_mine = vec(mine, 16), t_theirs = vec(theirs, 16);
  FX_OK(add(st, &t_mine, &t_mine, &t_theirs)); /* writing theirs */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "not inside an allocation of this session"));
  FX_OK(add(st, &t_theirs, &t_mine, &t_mine)); /* reading theirs */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  rdev_tensor_t past = vec(mine, 17); /* one element past its own allocation */
  FX_OK(add(st, &past, &past, &past));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  rdev_tensor_t wide = vec(mine, 16); /* a stride that walks out of it */
  wide.strides[0] = 2;
  FX_OK(add(st, &wide, &wide, &wide));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  rdev_tensor_t before = vec(mine, 4); /* a negative stride from its start: before it */
  before.strides[0] = -1;
  FX_EXPECT(add(st, &before, &before, &before), RDEV_OP_PARAM_INVALID);
  before.offset = 3; /* from its fourth element back to its first: inside */
  FX_OK(add(st, &before, &before, &before));
  int rc = rdev_stream_synchronize(st); /* passes the reach checks (an acl server without operators stops later) */
  ck_assert_msg(rc == RDEV_OK || (fx_on_acl() && rc == RDEV_UNKNOWN_KERNEL), "%d: %s", rc, rdev_session_last_error());
  float back[16];
  FX_OK(rdev_memcpy(a, back, sizeof back, theirs, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 16; i++) ck_assert_float_eq(back[i], 7);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  rdev_session_close(a);
}
END_TEST

START_TEST(test_op_malformed_calls_refused) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  float *buf = NULL;
  FX_OK(rdev_malloc(s, (void **)&buf, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  static const unsigned char garbage[] = {3, 'A', 'd', 'd', 4, 1, 1, 0xff};
  FX_OK(rdev_op_launch_encoded(st, garbage, sizeof garbage));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  static const unsigned char unknown[] = {7, 'N', 'o', 'S', 'u', 'c', 'h', 'O', 0};
  FX_OK(rdev_op_launch_encoded(st, unknown, sizeof unknown));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "aclnnNoSuchO"));
  /* the client refuses what it can check itself: a NULL input, a shape that does not broadcast */
  rdev_tensor_t v4 = vec(buf, 4), v3 = vec(buf, 3);
  rdev_op_call_t c = {.op = (int)(rdev_op_find("Add") - rdev_op_table(NULL)), .nargs = 4};
  c.args[0] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 0};
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = &v4};
  c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 1};
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = &v4};
  FX_EXPECT(rdev_op_launch(st, &c), RDEV_OP_PARAM_NULLPTR);
  FX_EXPECT(add(st, &v4, &v3, &v4), RDEV_OP_PARAM_INVALID);
  /* and rdevd refuses them too when a client does not: the same call encoded by hand */
  unsigned char blob[1024];
  size_t len;
  c.args[0] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = &v3};
  FX_OK(rdev_op_encode(&c, blob, sizeof blob, &len));
  FX_OK(rdev_op_launch_encoded(st, blob, len));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_OP_PARAM_INVALID);
  FX_OK(rdev_stream_synchronize(st)); /* reported once: the session serves on */
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Views whose arithmetic wraps, and storage that starts outside the
 * session while the view lies inside: each could once reach any memory of
 * rdevd. The client refuses what it can see; rdevd refuses them all when a
 * client sends them anyway. */
START_TEST(test_op_wrapping_views_refused) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  float *mine = NULL;
  FX_OK(rdev_malloc(s, (void **)&mine, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_tensor_t ok = vec(mine, 2);
  const int64_t m = 1 << 20;
  rdev_tensor_t wrap = vec(mine, 2); /* view end wraps past 2^64 to inside a 1-element storage */
  wrap.strides[0] = m;
  wrap.offset = ((int64_t)1 << 62) - m;
  wrap.storage_ndim = 1;
  wrap.storage_dims[0] = 1;
  rdev_tensor_t steps = {.dtype = RDEV_DT_INT8, .format = 2, .ndim = 5}; /* strides summing past 2^63 */
  for (int i = 0; i < 5; i++) steps.dims[i] = 2, steps.strides[i] = i == 4 ? 1 : (int64_t)1 << 62;
  steps.addr = (uint64_t)(uintptr_t)mine;
  rdev_tensor_t outside = vec(NULL, 4); /* storage at 0, the view at mine */
  outside.offset = (int64_t)((uint64_t)(uintptr_t)mine / 4);
  rdev_tensor_t *bad[] = {&wrap, &steps, &outside};
  for (int k = 0; k < 3; k++) {
    rdev_tensor_t *t = bad[k];
    rdev_tensor_t *o = t == &steps ? t : &ok;
    int rc = add(st, t, t, o == &ok && t != &steps ? t : o);
    ck_assert_msg(rc == RDEV_OK || rc == RDEV_OP_PARAM_INVALID, "case %d: %d", k, rc);
    if (rc == RDEV_OK) ck_assert_int_ne(rdev_stream_synchronize(st), RDEV_OK);
    unsigned char blob[1024]; /* and sent by a client that does not check */
    size_t len;
    rdev_op_call_t c = {.op = (int)(rdev_op_find("Add") - rdev_op_table(NULL)), .nargs = 4};
    c.args[0] = c.args[1] = c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = t};
    c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 1};
    FX_OK(rdev_op_encode(&c, blob, sizeof blob, &len));
    FX_OK(rdev_op_launch_encoded(st, blob, len));
    rc = rdev_stream_synchronize(st);
    ck_assert_msg(rc == RDEV_OP_PARAM_INVALID || rc == RDEV_INVALID_PARAM, "case %d: rdevd answered %d", k, rc);
  }
  FX_OK(add(st, &ok, &ok, &ok)); /* rdevd is alive and the session serves on */
  int rc = rdev_stream_synchronize(st);
  ck_assert_msg(rc == RDEV_OK || (fx_on_acl() && rc == RDEV_UNKNOWN_KERNEL), "%d", rc);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* An operator of hours' work (stride-0 views: 16 products of 4096 x 4096
 * matrices from one element) stops when its session ends: rdevd serves
 * another session at once. */
START_TEST(test_op_endless_operator_ends_with_its_session) {
  if (fx_on_acl()) return; /* the acl backend's operators are CANN's (over the double, a few small ones) */
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  float *one = NULL, *res = NULL;
  FX_OK(rdev_malloc(s, (void **)&one, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, (void **)&res, 64, RDEV_MEM_MALLOC_HUGE_FIRST)); /* out apart: no temporary for it */
  rdev_tensor_t big = vec(one, 1), out;
  big.ndim = 3;
  big.dims[0] = 16, big.dims[1] = big.dims[2] = 4096;
  big.strides[0] = big.strides[1] = big.strides[2] = 0;
  out = big;
  out.addr = (uint64_t)(uintptr_t)res;
  rdev_op_call_t c = {.op = (int)(rdev_op_find("BatchMatMul") - rdev_op_table(NULL)), .nargs = 4};
  c.args[0] = c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = &big};
  c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = &out};
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_INT8, .present = 1};
  FX_OK(rdev_op_launch(st, &c));
  usleep(300 * 1000); /* it runs: packing, then products */
  int done = 1;
  FX_OK(rdev_stream_query(st, &done));
  ck_assert_msg(done == 0, "the operator is over at once: %d (%s)", rdev_stream_synchronize(st),
                rdev_session_last_error());
  uint64_t t0 = rdev_clock_now_ns();
  rdev_session_close(s); /* without a synchronize */
  rdev_session_t *b = fx_open();
  char in[4096], back[4096];
  for (size_t i = 0; i < sizeof in; i++) in[i] = (char)(i * 7);
  void *d = NULL;
  FX_OK(rdev_malloc(b, &d, sizeof in, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(b, d, sizeof in, in, sizeof in, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(b, back, sizeof back, d, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(memcmp(in, back, sizeof in), 0);
  rdev_session_close(b);
  double secs = (double)(rdev_clock_now_ns() - t0) / 1e9;
  /* about 0.5 s here: the close's grace for queued work, then its cancel cuts the operator off
   * (sanitizers and load stretch it; without the cut-off rdevd takes no session at all) */
  ck_assert_msg(secs < 30, "rdevd took %.1f s to serve another session", secs);
}
END_TEST

Suite *suite_ops(void) {
  Suite *su = suite_create("ops");
  TCase *tc = fx_tcase("ops");
  tcase_add_test(tc, test_op_other_sessions_memory_refused);
  tcase_add_test(tc, test_op_malformed_calls_refused);
  tcase_add_test(tc, test_op_wrapping_views_refused);
  tcase_add_test(tc, test_op_endless_operator_ends_with_its_session);
  suite_add_tcase(su, tc);
  return su;
}
