/*
 * tests/integration/test_ops_acl.c — operators through the C API
 * (rdev_op_launch) against rdevd on the acl backend over the ACL test
 * double, which is also the operator library there: the double's log
 * ($ACL_DOUBLE_OPLOG, set for the rdevd the test starts) shows which
 * operator rdevd called with which arguments and workspace; the result is
 * computed; a tensor in another session's memory is refused before it
 * reaches the library; errors of the library's first phase surface at the
 * stream's synchronize with CANN's message. Suite "acl_ops", registered
 * only with the acl arguments (ctest integration_acl_ops); on the sim it
 * checks nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "rdev/ops.h"

static char log_path[64];

/* Starts rdevd on acl (RDEV_TEST_RDEVD_ARGS) with the double's log, and
 * the double's environment controls env ("NAME=VALUE", or NULL); 0 when
 * the servers are not acl ones (the suite then checks nothing). */
static int start(const char *env) {
  if (!fx_on_acl()) return 0;
  snprintf(log_path, sizeof log_path, "/tmp/rdevd-oplog-XXXXXX");
  int fd = mkstemp(log_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  setenv("ACL_DOUBLE_OPLOG", log_path, 1);
  if (env) putenv((char *)env);
  char err[256];
  ck_assert_msg(fx_server_start(&fx_srv, NULL, err, sizeof err) == 0, "%s", err);
  return 1;
}

static void stop(void) {
  fx_server_stop(&fx_srv);
  unlink(log_path);
}

static const char *oplog(void) {
  static char buf[1 << 16];
  FILE *f = fopen(log_path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* out = self + alpha * other over float32 [n], each contiguous. */
static void add_call(rdev_op_call_t *c, rdev_tensor_t t[3], void *self, void *other, void *out, int64_t n,
                     double alpha) {
  memset(c, 0, sizeof *c);
  void *p[3] = {self, other, out};
  for (int i = 0; i < 3; i++) {
    t[i] = (rdev_tensor_t){.dtype = RDEV_DT_FLOAT, .format = 2, .ndim = 1, .storage_ndim = 1};
    t[i].dims[0] = t[i].storage_dims[0] = n;
    t[i].strides[0] = 1;
    t[i].addr = (uint64_t)(uintptr_t)p[i];
  }
  const rdev_op_sig_t *sig = rdev_op_find("Add");
  int count;
  ck_assert_ptr_nonnull(sig);
  c->op = (int)(sig - rdev_op_table(&count));
  c->nargs = 4;
  for (int i = 0; i < 3; i++)
    c->args[i == 2 ? 3 : i] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .v.t = &t[i]};
  c->args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 1};
  c->args[2].v.scalar.dtype = RDEV_DT_FLOAT;
  c->args[2].v.scalar.v.f = alpha;
}

/* Session s's three float32 buffers of n elements: 1..n, 100, 200, ... */
static void buffers(rdev_session_t *s, int n, float **self, float **other, float **out) {
  float *a = fx_xmalloc((size_t)n * 4), *b = fx_xmalloc((size_t)n * 4);
  for (int i = 0; i < n; i++) a[i] = (float)(i + 1), b[i] = 100.0f * (float)(i + 1);
  FX_OK(rdev_malloc(s, (void **)self, (size_t)n * 4, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, (void **)other, (size_t)n * 4, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, (void **)out, (size_t)n * 4, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, *self, (size_t)n * 4, a, (size_t)n * 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, *other, (size_t)n * 4, b, (size_t)n * 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  free(a);
  free(b);
}

START_TEST(test_acl_ops_add_reaches_the_library) {
  if (!start("ACL_DOUBLE_OP_WORKSPACE=Add:65536")) return;
  rdev_session_t *s = fx_open();
  float *self, *other, *out;
  buffers(s, 1000, &self, &other, &out);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_op_call_t c;
  rdev_tensor_t t[3];
  add_call(&c, t, self, other, out, 1000, 0.5);
  FX_OK(rdev_op_launch(st, &c));
  FX_OK(rdev_stream_synchronize(st));
  float r[1000];
  FX_OK(rdev_memcpy(s, r, sizeof r, out, sizeof r, RDEV_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 1000; i++) ck_assert_float_eq(r[i], (float)(i + 1) + 50.0f * (float)(i + 1));
  /* The library sees the device addresses behind the session's own: three
   * distinct ones, none of them the program's (rdev.proto, device memory). */
  const char *log = oplog();
  char seen[512];
  unsigned long long addr[3];
  int n = 0;
  size_t o = 0;
  for (const char *p = log; *p && o + 1 < sizeof seen;) {
    if (!strncmp(p, "addr=0x", 7) && n < 3) {
      addr[n++] = strtoull(p + 7, (char **)&p, 16);
      o += (size_t)snprintf(seen + o, sizeof seen - o, "addr=D");
    } else {
      seen[o++] = *p++;
    }
  }
  seen[o] = '\0';
  ck_assert_str_eq(
      seen,
      "aclnnAddGetWorkspaceSize self=T(float32 dims=[1000] strides=[1] offset=0 format=2 storage=[1000] "
      "addr=D) other=T(float32 dims=[1000] strides=[1] offset=0 format=2 storage=[1000] addr=D) "
      "alpha=S(float32:0.5) out=T(float32 dims=[1000] strides=[1] offset=0 format=2 storage=[1000] addr=D) "
      "-> workspace=65536\naclnnAdd workspace=65536\n");
  ck_assert_int_eq(n, 3);
  ck_assert(addr[0] != addr[1] && addr[1] != addr[2] && addr[0] != addr[2]);
  for (int i = 0; i < 3; i++)
    ck_assert(addr[i] != (uintptr_t)self && addr[i] != (uintptr_t)other && addr[i] != (uintptr_t)out);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  stop();
}
END_TEST

START_TEST(test_acl_ops_other_sessions_memory_is_refused) {
  if (!start(NULL)) return;
  rdev_session_t *a = fx_open(), *s = fx_open();
  float *self, *other, *out, *mine;
  buffers(a, 16, &self, &other, &out);
  FX_OK(rdev_malloc(s, (void **)&mine, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_op_call_t c;
  rdev_tensor_t t[3];
  add_call(&c, t, mine, other, mine, 16, 1.0); /* other: a's */
  FX_OK(rdev_op_launch(st, &c));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  ck_assert_msg(strstr(rdev_session_last_error(), "not inside an allocation of this session"), "%s",
                rdev_session_last_error());
  add_call(&c, t, mine, mine, out, 16, 1.0); /* out: a's */
  FX_OK(rdev_op_launch(st, &c));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  ck_assert_str_eq(oplog(), ""); /* neither reached the library */
  add_call(&c, t, mine, mine, mine, 16, 1.0);
  FX_OK(rdev_op_launch(st, &c));
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_ptr_nonnull(strstr(oplog(), "aclnnAdd workspace=0\n"));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  rdev_session_close(a);
  stop();
}
END_TEST

START_TEST(test_acl_ops_first_phase_error_at_synchronize) {
  if (!start("ACL_DOUBLE_OP_FAIL=Add:1:161002")) return;
  rdev_session_t *s = fx_open();
  float *self, *other, *out;
  buffers(s, 8, &self, &other, &out);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_op_call_t c;
  rdev_tensor_t t[3];
  add_call(&c, t, self, other, out, 8, 1.0);
  FX_OK(rdev_op_launch(st, &c)); /* async: the error comes at the synchronize */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_OP_PARAM_INVALID);
  const char *e = rdev_session_last_error();
  ck_assert_msg(strstr(e, "aclnnAddGetWorkspaceSize failed (161002)") && strstr(e, "injected"), "%s", e);
  ck_assert_ptr_null(strstr(oplog(), "aclnnAdd workspace"));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  stop();
}
END_TEST

Suite *suite_acl_ops(void) {
  Suite *s = suite_create("acl_ops");
  TCase *tc = tcase_create("acl_ops");
  tcase_set_timeout(tc, FX_TEST_TIMEOUT);
  tcase_add_test(tc, test_acl_ops_add_reaches_the_library);
  tcase_add_test(tc, test_acl_ops_other_sessions_memory_is_refused);
  tcase_add_test(tc, test_acl_ops_first_phase_error_at_synchronize);
  suite_add_tcase(s, tc);
  return s;
}
