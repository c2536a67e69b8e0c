/*
 * tests/acl_double/test_acl_ops.c — operators on the acl backend over the
 * ACL test double (runtime/acl/acl_ops.c): in-process, rdev_rt_open on
 * acl with the double as the CANN runtime and as the operator library.
 * What the backend called is read back from the double's log
 * ($ACL_DOUBLE_OPLOG, acl_double.h): the operator, every argument's
 * rendering, the workspace. Operators of rdev's table go through
 * rdev_rt_op_launch, in stream order; the generic path is also driven
 * directly (acl_op_call, a private entry of the backend) with CANN's
 * signatures of operators the table may lack, so that every argument kind
 * crosses libffi. Check forks each test: each has its own double.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl_internal.h"
#include "rdev/ops.h"
#include "rdev/runtime.h"
#include "rdev/status.h"

#define MIB ((size_t)1 << 20)

static char log_path[64];
static rdev_rt_t *rt;
static rdev_rt_stream_t *st;

/* The double's controls (acl_double.h), found in the loaded library. */
static int (*op_workspace)(const char *op, int64_t bytes);
static int (*op_fail)(const char *op, int32_t phase, int32_t code);
static int64_t (*op_objects)(void);

static void setup(void) {
  snprintf(log_path, sizeof log_path, "/tmp/acl_ops_log_XXXXXX");
  int fd = mkstemp(log_path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  setenv("ACL_DOUBLE_OPLOG", log_path, 1);
  rdev_rt_config_t cfg = {.backend = "acl", .acl_lib = ACL_DOUBLE_LIB, .sim_devices = 2, .sim_mem_bytes = 64 * MIB};
  ck_assert_msg(rdev_rt_open(&cfg, &rt) == RDEV_OK, "%s", rdev_rt_last_error());
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &st), RDEV_OK);
  void *h = dlopen(ACL_DOUBLE_LIB, RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(h);
  *(void **)&op_workspace = dlsym(h, "acldoubleOpWorkspace");
  *(void **)&op_fail = dlsym(h, "acldoubleOpFail");
  *(void **)&op_objects = dlsym(h, "acldoubleOpObjects");
  dlclose(h);
  ck_assert(op_workspace && op_fail && op_objects);
}

static void teardown(void) {
  ck_assert_int_eq(rdev_rt_stream_destroy(st), RDEV_OK);
  rdev_rt_close(rt);
  unlink(log_path);
}

/* The log so far (static buffer), and its lines that start with prefix. */
static const char *oplog(void) {
  static char buf[1 << 16];
  FILE *f = fopen(log_path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* Asserts the log holds exactly line (a whole line). */
static void assert_logged(const char *line) {
  const char *log = oplog();
  size_t n = strlen(line);
  for (const char *p = log; (p = strstr(p, line)); p++)
    if ((p == log || p[-1] == '\n') && p[n] == '\n') return;
  ck_abort_msg("the double's log lacks\n  %s\nlog:\n%s", line, log);
}

static void assert_no_violation(void) {
  const char *log = oplog();
  ck_assert_msg(!strstr(log, "VIOLATION"), "the double saw a broken rule:\n%s", log);
  ck_assert_int_eq(op_objects(), 0); /* every object destroyed, every executor run */
}

static void *dmalloc(int dev, size_t n) {
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, dev, &p, n, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  return p;
}

/* A contiguous float32 (or dtype) tensor at p with dims d[0..n). */
static rdev_tensor_t tensor(int dtype, void *p, int n, const int64_t *d) {
  rdev_tensor_t t = {.dtype = dtype, .format = 2 /* ND */, .ndim = n, .storage_ndim = 1, .addr = (uintptr_t)p};
  int64_t step = 1;
  for (int i = n - 1; i >= 0; i--) {
    t.dims[i] = d[i];
    t.strides[i] = step;
    step *= d[i];
  }
  t.storage_dims[0] = step;
  return t;
}

/* "T(float32 dims=[2,3] strides=[3,1] offset=0 format=2 storage=[6] addr=0x...)" of t. */
static const char *rendered(const rdev_tensor_t *t) {
  static char bufs[8][512];
  static int k;
  char *b = bufs[k++ % 8];
  size_t len = 0;
#define ADD(...) len += (size_t)snprintf(b + len, 512 - len, __VA_ARGS__)
#define INTS(v, n) \
  do { \
    ADD("["); \
    for (int i_ = 0; i_ < (n); i_++) ADD("%s%lld", i_ ? "," : "", (long long)(v)[i_]); \
    ADD("]"); \
  } while (0)
  ADD("T(%s dims=", rdev_dtype_name(t->dtype));
  INTS(t->dims, t->ndim);
  ADD(" strides=");
  INTS(t->strides, t->ndim);
  ADD(" offset=%lld format=%d storage=", (long long)t->offset, t->format);
  INTS(t->storage_dims, t->storage_ndim);
  ADD(" addr=0x%llx)", (unsigned long long)t->addr);
  return b;
}

static rdev_op_call_t *new_call(const char *op) {
  rdev_op_call_t *c = calloc(1, sizeof *c + 16 * sizeof(rdev_tensor_t));
  const rdev_op_sig_t *sig = rdev_op_find(op);
  int count;
  ck_assert_ptr_nonnull(sig);
  c->op = (int)(sig - rdev_op_table(&count));
  return c;
}

/* An Add call out = self + alpha * other, float32 [2,3]; other a broadcast
 * row [3] (stride 0, no storage dims: the backend makes them). The call owns
 * its tensors (one allocation, as the runtime's task wants). */
static rdev_op_call_t *add_call(void *self, void *other, void *out, double alpha) {
  rdev_op_call_t *c = new_call("Add");
  rdev_tensor_t *t = (rdev_tensor_t *)(c + 1);
  const int64_t d[] = {2, 3};
  t[0] = tensor(RDEV_DT_FLOAT, self, 2, d);
  t[1] = tensor(RDEV_DT_FLOAT, other, 2, d);
  t[1].strides[0] = 0;
  t[1].storage_ndim = 0;
  t[2] = tensor(RDEV_DT_FLOAT, out, 2, d);
  c->nargs = 4;
  c->args[0] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .n = 1, .v.t = &t[0]};
  c->args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .n = 1, .v.t = &t[1]};
  c->args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 1};
  c->args[2].v.scalar.dtype = RDEV_DT_FLOAT;
  c->args[2].v.scalar.v.f = alpha;
  c->args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .n = 1, .v.t = &t[2]};
  return c;
}

/* Device buffers for Add with known contents. */
static void add_buffers(void **self, void **other, void **out) {
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  *self = dmalloc(0, sizeof a);
  *other = dmalloc(0, sizeof b);
  *out = dmalloc(0, sizeof a);
  ck_assert_int_eq(rdev_rt_memcpy(rt, *self, sizeof a, a, sizeof a, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, *other, sizeof b, b, sizeof b, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
}

static void assert_add_result(void *out, float alpha) {
  float r[6];
  ck_assert_int_eq(rdev_rt_memcpy(rt, r, sizeof r, out, sizeof r, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  for (int i = 0; i < 6; i++) ck_assert_float_eq(r[i], a[i] + alpha * b[i % 3]);
}

/* ---- through rdev_rt_op_launch ------------------------------------------------ */

START_TEST(add_runs_with_its_arguments) {
  void *self, *other, *out;
  add_buffers(&self, &other, &out);
  rdev_op_call_t *c = add_call(self, other, out, 2.5);
  char want[2048];
  snprintf(want, sizeof want, "aclnnAddGetWorkspaceSize self=%s other=%s alpha=S(float32:2.5) out=%s -> workspace=0",
           rendered(c->args[0].v.t), rendered(c->args[1].v.t), rendered(c->args[2 + 1].v.t));
  /* the backend gives CANN storage dims where the call has none: the row's 3 elements */
  char *row = strstr(want, "storage=[]");
  ck_assert_ptr_nonnull(row);
  memmove(row + 11, row + 10, strlen(row + 10) + 1);
  memcpy(row, "storage=[3]", 11);
  ck_assert_int_eq(rdev_rt_op_launch(st, c), RDEV_OK);
  ck_assert_msg(rdev_rt_stream_synchronize(st) == RDEV_OK, "%s", rdev_rt_last_error());
  assert_logged(want);
  assert_logged("aclnnAdd workspace=0");
  assert_add_result(out, 2.5f);
  assert_no_violation();
}
END_TEST

START_TEST(add_runs_in_stream_order) {
  void *self, *other, *out;
  add_buffers(&self, &other, &out);
  /* out = self + other, then self' = out + 2 * other, queued back to back */
  ck_assert_int_eq(rdev_rt_op_launch(st, add_call(self, other, out, 1.0)), RDEV_OK);
  ck_assert_int_eq(rdev_rt_op_launch(st, add_call(out, other, self, 2.0)), RDEV_OK);
  ck_assert_msg(rdev_rt_stream_synchronize(st) == RDEV_OK, "%s", rdev_rt_last_error());
  float r[6];
  ck_assert_int_eq(rdev_rt_memcpy(rt, r, sizeof r, self, sizeof r, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
  for (int i = 0; i < 6; i++) ck_assert_float_eq(r[i], a[i] + 3 * b[i % 3]);
  assert_no_violation();
}
END_TEST

START_TEST(workspace_is_device_memory_of_its_size_freed_after) {
  void *self, *other, *out;
  add_buffers(&self, &other, &out);
  size_t free0, free1, total;
  ck_assert_int_eq(rdev_rt_mem_info(rt, 0, &free0, &total), RDEV_OK);
  ck_assert_int_eq(op_workspace("Add", 1 << 20), 0);
  ck_assert_int_eq(rdev_rt_op_launch(st, add_call(self, other, out, -1.0)), RDEV_OK);
  ck_assert_msg(rdev_rt_stream_synchronize(st) == RDEV_OK, "%s", rdev_rt_last_error());
  assert_logged("aclnnAdd workspace=1048576");
  assert_add_result(out, -1.0f);
  ck_assert_int_eq(rdev_rt_mem_info(rt, 0, &free1, &total), RDEV_OK);
  ck_assert_uint_eq(free1, free0); /* the workspace went back */
  assert_no_violation();
}
END_TEST

START_TEST(first_phase_error_surfaces_at_synchronize) {
  void *self, *other, *out;
  add_buffers(&self, &other, &out);
  ck_assert_int_eq(op_fail("Add", 1, RDEV_OP_PARAM_INVALID), 0);
  ck_assert_int_eq(rdev_rt_op_launch(st, add_call(self, other, out, 1.0)), RDEV_OK); /* queued */
  ck_assert_int_eq(rdev_rt_stream_synchronize(st), RDEV_OP_PARAM_INVALID);
  const char *e = rdev_rt_last_error();
  ck_assert_msg(strstr(e, "aclnnAddGetWorkspaceSize") && strstr(e, "injected"), "%s", e);
  ck_assert_ptr_null(strstr(oplog(), "aclnnAdd workspace")); /* the run never came */
  /* the stream goes on */
  ck_assert_int_eq(rdev_rt_op_launch(st, add_call(self, other, out, 1.0)), RDEV_OK);
  ck_assert_msg(rdev_rt_stream_synchronize(st) == RDEV_OK, "%s", rdev_rt_last_error());
  assert_add_result(out, 1.0f);
  assert_no_violation();
}
END_TEST

START_TEST(run_error_surfaces_at_synchronize) {
  void *self, *other, *out;
  add_buffers(&self, &other, &out);
  ck_assert_int_eq(op_workspace("Add", 4096), 0);
  ck_assert_int_eq(op_fail("Add", 2, 561002), 0);
  ck_assert_int_eq(rdev_rt_op_launch(st, add_call(self, other, out, 1.0)), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(st), 561002);
  ck_assert_msg(strstr(rdev_rt_last_error(), "aclnnAdd failed (561002)"), "%s", rdev_rt_last_error());
  assert_no_violation();
}
END_TEST

START_TEST(tensor_outside_device_memory_is_refused) {
  void *self, *other, *out;
  add_buffers(&self, &other, &out);
  size_t before = strlen(oplog());
  /* out reaches past its 24 bytes */
  rdev_op_call_t *c = add_call(self, other, out, 1.0);
  void *small = dmalloc(0, 8);
  c->args[3].v.t->addr = (uintptr_t)small;
  ck_assert_int_eq(rdev_rt_op_launch(st, c), RDEV_INVALID_PARAM);
  /* an address no allocation holds */
  c = add_call(self, other, out, 1.0);
  c->args[0].v.t->addr = 0x1000;
  ck_assert_int_eq(rdev_rt_op_launch(st, c), RDEV_INVALID_PARAM);
  /* memory of the other device */
  c = add_call(self, other, out, 1.0);
  c->args[1].v.t->addr = (uintptr_t)dmalloc(1, 64);
  ck_assert_int_eq(rdev_rt_op_launch(st, c), RDEV_INVALID_PARAM);
  ck_assert_msg(strstr(rdev_rt_last_error(), "device 1"), "%s", rdev_rt_last_error());
  ck_assert_int_eq(rdev_rt_stream_synchronize(st), RDEV_OK);
  ck_assert_uint_eq(strlen(oplog()), before); /* nothing reached the library */
}
END_TEST

START_TEST(offered_are_those_the_library_has) {
  void *h = dlopen(ACL_DOUBLE_LIB, RTLD_NOW | RTLD_NOLOAD);
  int count;
  const rdev_op_sig_t *sigs = rdev_op_table(&count);
  for (int i = 0; i < count; i++) {
    char name[128];
    snprintf(name, sizeof name, "aclnn%sGetWorkspaceSize", sigs[i].name);
    ck_assert_msg(rdev_rt_op_offered(rt, sigs[i].name) == (dlsym(h, name) != NULL), "%s", sigs[i].name);
  }
  dlclose(h);
  ck_assert(rdev_rt_op_offered(rt, "Add"));
}
END_TEST

/* ---- the library's place ---------------------------------------------------- */

START_TEST(opapi_given_must_load) {
  rdev_rt_t *r2 = NULL;
  rdev_rt_config_t cfg = {.backend = "acl", .acl_lib = ACL_DOUBLE_LIB, .acl_opapi = "/nonexistent/libopapi.so"};
  ck_assert_int_eq(rdev_rt_open(&cfg, &r2), RDEV_API_NOT_SUPPORT);
  ck_assert_msg(strstr(rdev_rt_last_error(), "--acl-opapi") && strstr(rdev_rt_last_error(), "/nonexistent"), "%s",
                rdev_rt_last_error());
  cfg.acl_opapi = "/tmp"; /* a directory without libnnopbase.so */
  ck_assert_int_eq(rdev_rt_open(&cfg, &r2), RDEV_API_NOT_SUPPORT);
  ck_assert_msg(strstr(rdev_rt_last_error(), "/tmp/libnnopbase.so"), "%s", rdev_rt_last_error());
}
END_TEST

START_TEST(opapi_refuses_rdevs_client_library) {
#ifdef __SANITIZE_THREAD__
  /* the refused library (and the gRPC and abseil it pulls in) is unloaded
   * again, which TSan reports for the abseil libraries its suppressions
   * name (tests/tsan.supp) */
  return;
#endif
  rdev_rt_t *r2 = NULL;
  rdev_rt_config_t cfg = {.backend = "acl", .acl_lib = ACL_DOUBLE_LIB, .acl_opapi = CLIENT_CANN_DIR};
  ck_assert_int_eq(rdev_rt_open(&cfg, &r2), RDEV_API_NOT_SUPPORT);
  ck_assert_msg(strstr(rdev_rt_last_error(), "rdev's own client library"), "%s", rdev_rt_last_error());
}
END_TEST

START_TEST(opapi_given_as_a_file) {
  rdev_rt_t *r2 = NULL; /* a second runtime on the same CANN runtime */
  rdev_rt_config_t cfg = {.backend = "acl", .acl_lib = ACL_DOUBLE_LIB, .acl_opapi = ACL_DOUBLE_LIB};
  ck_assert_msg(rdev_rt_open(&cfg, &r2) == RDEV_OK, "%s", rdev_rt_last_error());
  ck_assert(rdev_rt_op_offered(r2, "Add"));
  rdev_rt_close(r2);
}
END_TEST

/* ---- the generic path, every kind --------------------------------------------- */

/* Runs call c of signature sig through the backend's generic path on st. */
static int call_sig(const rdev_op_sig_t *sig, rdev_op_call_t *c) {
  acl_t *a = rt->impl;
  acl_opfn_t *f = acl_opfn_bind(a->nnop, sig);
  int rc = acl_op_call(a, st, sig, f, c);
  acl_opfn_free(f);
  return rc;
}

#define PT(n) \
  { #n, RDEV_OPK_TENSOR, RDEV_OPF_IN }
#define PTO(n) \
  { #n, RDEV_OPK_TENSOR, RDEV_OPF_IN | RDEV_OPF_OPT }
#define PK(n, k) \
  { #n, RDEV_OPK_##k, 0 }

static rdev_op_arg_t targ(rdev_tensor_t *t) {
  return (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 1, .n = 1, .v.t = t};
}

START_TEST(matmul_int8_and_workspace) {
  static const rdev_op_sig_t sig = {"Matmul", 4, {PT(self), PT(mat2), PT(out), PK(cubeMathType, INT8)}, NULL};
  const int64_t d[] = {2, 2};
  rdev_tensor_t t[3];
  for (int i = 0; i < 3; i++) t[i] = tensor(RDEV_DT_FLOAT16, dmalloc(0, 8), 2, d);
  t[1].strides[0] = 1; /* mat2 transposed */
  t[1].strides[1] = 2;
  rdev_op_call_t c = {.nargs = 4};
  for (int i = 0; i < 3; i++) c.args[i] = targ(&t[i]);
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_INT8, .present = 1, .v.i64 = 3};
  ck_assert_msg(call_sig(&sig, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  char want[2048];
  snprintf(want, sizeof want, "aclnnMatmulGetWorkspaceSize self=%s mat2=%s out=%s cubeMathType=3 -> workspace=8192",
           rendered(&t[0]), rendered(&t[1]), rendered(&t[2]));
  assert_logged(want);
  assert_logged("aclnnMatmul workspace=8192");
  assert_no_violation();
}
END_TEST

START_TEST(softmax_int64_cast_dtype) {
  static const rdev_op_sig_t softmax = {"Softmax", 3, {PT(self), PK(dim, INT64), PT(out)}, NULL};
  static const rdev_op_sig_t cast = {"Cast", 3, {PT(self), PK(dtype, DTYPE), PT(out)}, NULL};
  const int64_t d[] = {4, 5};
  rdev_tensor_t x = tensor(RDEV_DT_BF16, dmalloc(0, 40), 2, d), y = tensor(RDEV_DT_INT32, dmalloc(0, 80), 2, d);
  y.offset = 0;
  rdev_op_call_t c = {.nargs = 3};
  c.args[0] = targ(&x);
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_INT64, .present = 1, .v.i64 = -2};
  c.args[2] = targ(&x);
  ck_assert_msg(call_sig(&softmax, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_DTYPE, .present = 1, .v.dtype = RDEV_DT_INT32};
  c.args[2] = targ(&y);
  ck_assert_msg(call_sig(&cast, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  char want[2048];
  snprintf(want, sizeof want, "aclnnSoftmaxGetWorkspaceSize self=%s dim=-2 out=%s -> workspace=0", rendered(&x),
           rendered(&x));
  assert_logged(want);
  snprintf(want, sizeof want, "aclnnCastGetWorkspaceSize self=%s dtype=int32 out=%s -> workspace=0", rendered(&x),
           rendered(&y));
  assert_logged(want);
  assert_no_violation();
}
END_TEST

START_TEST(cat_takes_a_tensor_list) {
  static const rdev_op_sig_t sig = {
      "Cat", 3, {{"tensors", RDEV_OPK_TENSOR_LIST, RDEV_OPF_IN}, PK(dim, INT64), PT(out)}, NULL};
  const int64_t d1[] = {1, 3}, d2[] = {2, 3}, d3[] = {3, 3};
  rdev_tensor_t in[2] = {tensor(RDEV_DT_INT64, dmalloc(0, 24), 2, d1), tensor(RDEV_DT_INT64, dmalloc(0, 48), 2, d2)};
  in[1].offset = 0;
  rdev_tensor_t out = tensor(RDEV_DT_INT64, dmalloc(0, 72), 2, d3);
  rdev_op_call_t c = {.nargs = 3};
  c.args[0] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR_LIST, .present = 1, .n = 2, .v.t = in};
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_INT64, .present = 1, .v.i64 = 0};
  c.args[2] = targ(&out);
  ck_assert_msg(call_sig(&sig, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  char want[2048];
  snprintf(want, sizeof want, "aclnnCatGetWorkspaceSize tensors=L[%s,%s] dim=0 out=%s -> workspace=0", rendered(&in[0]),
           rendered(&in[1]), rendered(&out));
  assert_logged(want);
  assert_no_violation(); /* the list took its members: only it was destroyed */
}
END_TEST

START_TEST(layer_norm_int_array_double_optional_nulls) {
  static const rdev_op_sig_t sig = {"LayerNorm",
                                    8,
                                    {PT(input),
                                     PK(normalizedShape, INT_ARRAY),
                                     PTO(weightOptional),
                                     PTO(biasOptional),
                                     PK(eps, DOUBLE),
                                     {"out", RDEV_OPK_TENSOR, RDEV_OPF_OUT},
                                     {"meanOutOptional", RDEV_OPK_TENSOR, RDEV_OPF_OUT | RDEV_OPF_OPT},
                                     {"rstdOutOptional", RDEV_OPK_TENSOR, RDEV_OPF_OUT | RDEV_OPF_OPT}},
                                    NULL};
  const int64_t d[] = {2, 3, 4}, w[] = {3, 4}, shape[] = {3, 4};
  rdev_tensor_t x = tensor(RDEV_DT_FLOAT, dmalloc(0, 96), 3, d), y = tensor(RDEV_DT_FLOAT, dmalloc(0, 96), 3, d);
  rdev_tensor_t weight = tensor(RDEV_DT_FLOAT, dmalloc(0, 48), 2, w);
  rdev_op_call_t c = {.nargs = 8};
  c.args[0] = targ(&x);
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_INT_ARRAY, .present = 1, .n = 2, .v.ints = shape};
  c.args[2] = targ(&weight);
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 0};
  c.args[4] = (rdev_op_arg_t){.kind = RDEV_OPK_DOUBLE, .present = 1, .v.f64 = 1e-5};
  c.args[5] = targ(&y);
  c.args[6] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 0};
  c.args[7] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 0};
  ck_assert_msg(call_sig(&sig, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  char want[2048];
  snprintf(want, sizeof want,
           "aclnnLayerNormGetWorkspaceSize input=%s normalizedShape=I[3,4] weightOptional=%s biasOptional=null "
           "eps=1.0000000000000001e-05 out=%s meanOutOptional=null rstdOutOptional=null -> workspace=2048",
           rendered(&x), rendered(&weight), rendered(&y));
  assert_logged(want);
  assert_logged("aclnnLayerNorm workspace=2048");
  assert_no_violation();
}
END_TEST

START_TEST(reduce_sum_bool_and_dtype) {
  static const rdev_op_sig_t sig = {
      "ReduceSum", 5, {PT(self), PK(dim, INT_ARRAY), PK(keepDims, BOOL), PK(dtype, DTYPE), PT(out)}, NULL};
  const int64_t d[] = {3, 4}, r[] = {1, 4}, dims[] = {0};
  rdev_tensor_t x = tensor(RDEV_DT_INT32, dmalloc(0, 48), 2, d), y = tensor(RDEV_DT_INT64, dmalloc(0, 32), 2, r);
  rdev_op_call_t c = {.nargs = 5};
  c.args[0] = targ(&x);
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_INT_ARRAY, .present = 1, .n = 1, .v.ints = dims};
  c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_BOOL, .present = 1, .v.i64 = 1};
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_DTYPE, .present = 1, .v.dtype = RDEV_DT_INT64};
  c.args[4] = targ(&y);
  ck_assert_msg(call_sig(&sig, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  char want[2048];
  snprintf(want, sizeof want,
           "aclnnReduceSumGetWorkspaceSize self=%s dim=I[0] keepDims=true dtype=int64 out=%s -> workspace=0",
           rendered(&x), rendered(&y));
  assert_logged(want);
  assert_no_violation();
}
END_TEST

START_TEST(fill_scalar_in_its_data_type) {
  static const rdev_op_sig_t sig = {
      "InplaceFillScalar", 2, {{"selfRef", RDEV_OPK_TENSOR, RDEV_OPF_IN | RDEV_OPF_OUT}, PK(value, SCALAR)}, NULL};
  static const struct {
    int dtype;
    double f;
    int64_t i;
    uint64_t u;
    const char *shown;
  } cases[] = {
      {RDEV_DT_FLOAT16, 1.5, 0, 0, "float16:1.5"},
      {RDEV_DT_BF16, -3.25, 0, 0, "bfloat16:-3.25"},
      {RDEV_DT_FLOAT, 0.1, 0, 0, "float32:0.10000000149011612"},
      {RDEV_DT_DOUBLE, 0.1, 0, 0, "float64:0.10000000000000001"},
      {RDEV_DT_INT8, 0, -7, 0, "int8:-7"},
      {RDEV_DT_INT64, 0, INT64_MIN, 0, "int64:-9223372036854775808"},
      {RDEV_DT_UINT64, 0, 0, UINT64_MAX, "uint64:18446744073709551615"},
      {RDEV_DT_BOOL, 0, 1, 0, "bool:true"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const int64_t d[] = {4};
    rdev_tensor_t t = tensor(cases[k].dtype, dmalloc(0, 64), 1, d);
    rdev_op_call_t c = {.nargs = 2};
    c.args[0] = targ(&t);
    c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 1};
    c.args[1].v.scalar.dtype = cases[k].dtype;
    if (cases[k].dtype == RDEV_DT_UINT64)
      c.args[1].v.scalar.v.u = cases[k].u;
    else if (cases[k].f != 0)
      c.args[1].v.scalar.v.f = cases[k].f;
    else
      c.args[1].v.scalar.v.i = cases[k].i;
    ck_assert_msg(call_sig(&sig, &c) == RDEV_OK, "%s", rdev_rt_last_error());
    char want[1024];
    snprintf(want, sizeof want, "aclnnInplaceFillScalarGetWorkspaceSize selfRef=%s value=S(%s) -> workspace=0",
             rendered(&t), cases[k].shown);
    assert_logged(want);
  }
  assert_no_violation();
}
END_TEST

START_TEST(probe_every_kind) {
  static const rdev_op_sig_t sig = {"DoubleProbe",
                                    12,
                                    {PTO(self),
                                     PK(flags, BOOL_ARRAY),
                                     PK(weights, FLOAT_ARRAY),
                                     PK(eps, DOUBLE),
                                     PK(dim, INT64),
                                     PK(mode, INT8),
                                     PK(keep, BOOL),
                                     PK(dtype, DTYPE),
                                     {"value", RDEV_OPK_SCALAR, RDEV_OPF_OPT},
                                     {"tensors", RDEV_OPK_TENSOR_LIST, RDEV_OPF_IN},
                                     {"sizes", RDEV_OPK_INT_ARRAY, RDEV_OPF_OPT},
                                     PT(out)},
                                    NULL};
  const int64_t d[] = {2};
  const uint8_t flags[] = {1, 0, 7}; /* any nonzero byte is true */
  const float weights[] = {0.5f, -2.0f};
  rdev_tensor_t self = tensor(RDEV_DT_UINT8, dmalloc(0, 2), 1, d), out = tensor(RDEV_DT_INT16, dmalloc(0, 4), 1, d);
  rdev_op_call_t c = {.nargs = 12};
  c.args[0] = targ(&self);
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_BOOL_ARRAY, .present = 1, .n = 3, .v.bools = flags};
  c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_FLOAT_ARRAY, .present = 1, .n = 2, .v.floats = weights};
  c.args[3] = (rdev_op_arg_t){.kind = RDEV_OPK_DOUBLE, .present = 1, .v.f64 = -0.25};
  c.args[4] = (rdev_op_arg_t){.kind = RDEV_OPK_INT64, .present = 1, .v.i64 = INT64_MAX};
  c.args[5] = (rdev_op_arg_t){.kind = RDEV_OPK_INT8, .present = 1, .v.i64 = 127};
  c.args[6] = (rdev_op_arg_t){.kind = RDEV_OPK_BOOL, .present = 1, .v.i64 = 0};
  c.args[7] = (rdev_op_arg_t){.kind = RDEV_OPK_DTYPE, .present = 1, .v.dtype = RDEV_DT_FLOAT16};
  c.args[8] = (rdev_op_arg_t){.kind = RDEV_OPK_SCALAR, .present = 0};
  c.args[9] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR_LIST, .present = 1, .n = 0};
  c.args[10] = (rdev_op_arg_t){.kind = RDEV_OPK_INT_ARRAY, .present = 0};
  c.args[11] = targ(&out);
  ck_assert_msg(call_sig(&sig, &c) == RDEV_OK, "%s", rdev_rt_last_error());
  char want[2048];
  snprintf(want, sizeof want,
           "aclnnDoubleProbeGetWorkspaceSize self=%s flags=B[true,false,true] weights=F[0.5,-2] eps=-0.25 "
           "dim=9223372036854775807 mode=127 keep=false dtype=float16 value=null tensors=L[] sizes=null out=%s "
           "-> workspace=512",
           rendered(&self), rendered(&out));
  assert_logged(want);
  assert_logged("aclnnDoubleProbe workspace=512");
  assert_no_violation();
}
END_TEST

START_TEST(required_null_is_161001_from_the_library) {
  static const rdev_op_sig_t sig = {"Softmax", 3, {PT(self), PK(dim, INT64), PT(out)}, NULL};
  const int64_t d[] = {4};
  rdev_tensor_t x = tensor(RDEV_DT_FLOAT, dmalloc(0, 16), 1, d);
  rdev_op_call_t c = {.nargs = 3};
  c.args[0] = targ(&x);
  c.args[1] = (rdev_op_arg_t){.kind = RDEV_OPK_INT64, .present = 1, .v.i64 = 0};
  c.args[2] = (rdev_op_arg_t){.kind = RDEV_OPK_TENSOR, .present = 0};
  ck_assert_int_eq(call_sig(&sig, &c), RDEV_OP_PARAM_NULLPTR);
  ck_assert_msg(strstr(rdev_rt_last_error(), "aclnnSoftmaxGetWorkspaceSize failed (161001)") &&
                    strstr(rdev_rt_last_error(), "out is NULL"),
                "%s", rdev_rt_last_error());
  assert_no_violation();
}
END_TEST

START_TEST(operator_the_library_lacks_is_unknown) {
  static const rdev_op_sig_t sig = {"NoSuchOp", 1, {PT(self)}, NULL};
  const int64_t d[] = {4};
  rdev_tensor_t x = tensor(RDEV_DT_FLOAT, dmalloc(0, 16), 1, d);
  rdev_op_call_t c = {.nargs = 1};
  c.args[0] = targ(&x);
  ck_assert_int_eq(call_sig(&sig, &c), RDEV_UNKNOWN_KERNEL);
  ck_assert_msg(strstr(rdev_rt_last_error(), "operator aclnnNoSuchOp is not offered by the acl backend"), "%s",
                rdev_rt_last_error());
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("acl_ops");
  TCase *tc = tcase_create("ops");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, add_runs_with_its_arguments);
  tcase_add_test(tc, add_runs_in_stream_order);
  tcase_add_test(tc, workspace_is_device_memory_of_its_size_freed_after);
  tcase_add_test(tc, first_phase_error_surfaces_at_synchronize);
  tcase_add_test(tc, run_error_surfaces_at_synchronize);
  tcase_add_test(tc, tensor_outside_device_memory_is_refused);
  tcase_add_test(tc, offered_are_those_the_library_has);
  tcase_add_test(tc, opapi_given_must_load);
  tcase_add_test(tc, opapi_refuses_rdevs_client_library);
  tcase_add_test(tc, opapi_given_as_a_file);
  tcase_add_test(tc, matmul_int8_and_workspace);
  tcase_add_test(tc, softmax_int64_cast_dtype);
  tcase_add_test(tc, cat_takes_a_tensor_list);
  tcase_add_test(tc, layer_norm_int_array_double_optional_nulls);
  tcase_add_test(tc, reduce_sum_bool_and_dtype);
  tcase_add_test(tc, fill_scalar_in_its_data_type);
  tcase_add_test(tc, probe_every_kind);
  tcase_add_test(tc, required_null_is_161001_from_the_library);
  tcase_add_test(tc, operator_the_library_lacks_is_unknown);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
