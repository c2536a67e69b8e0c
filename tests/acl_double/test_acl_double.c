/*
 * tests/acl_double/test_acl_double.c — Check tests of libacl_double.so,
 * dlopened (never linked) from ACL_DOUBLE_LIB as rdevd opens it: CANN's
 * rules, each with its exact code (calls before aclInit, no current
 * context, device addresses and copy kinds, async copies from
 * aclrtMallocHost memory only, streams of another device, kernels from the
 * builtin binary, each fault kind, ACL_DOUBLE_FAIL_DEVICE, contexts
 * destroyed under another thread, aclFinalize/aclInit again, bad handles,
 * many threads at once), and that builtin/rdev_builtin.o declares every
 * registry kernel (loaded by the test's own copy of the runtime, which
 * coexists with the double's private one). Each test runs in its own
 * forked process: a fresh double. Suite "acl_double".
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acl/acl.h"
#include "acl_double.h"
#include "rdev/runtime.h"

/* Every call of the double, through a pointer dlsym gave: d_aclInit, ... */
/* clang-format off */
#define DBL_CALLS(X)                                                                                             \
  X(aclInit) X(aclFinalize) X(aclGetRecentErrMsg) X(aclrtGetSocName) X(aclrtGetDeviceCount)                     \
  X(aclrtCreateContext) X(aclrtDestroyContext) X(aclrtSetCurrentContext)                                        \
  X(aclrtMalloc) X(aclrtFree) X(aclrtMallocHost) X(aclrtFreeHost) X(aclrtGetMemInfo)                            \
  X(aclrtMemcpy) X(aclrtMemcpyAsync) X(aclrtMemset) X(aclrtMemsetAsync)                                         \
  X(aclrtCreateStream) X(aclrtDestroyStream) X(aclrtSynchronizeStream) X(aclrtSynchronizeStreamWithTimeout)     \
  X(aclrtStreamAbort) X(aclrtBinaryLoadFromData) X(aclrtBinaryUnLoad) X(aclrtBinaryGetFunction)                 \
  X(aclrtBinaryGetFunctionByEntry) X(aclrtLaunchKernelWithHostArgs) X(acldoubleConfigure) X(acldoubleFaultInject)
/* clang-format on */
#define DECLARE(f) static __typeof__(f) *d_##f;
DBL_CALLS(DECLARE)
static void *g_lib;

#define H2D ACL_MEMCPY_HOST_TO_DEVICE
#define D2H ACL_MEMCPY_DEVICE_TO_HOST
#define D2D ACL_MEMCPY_DEVICE_TO_DEVICE
#define H2H ACL_MEMCPY_HOST_TO_HOST
#define POLICY ACL_MEM_MALLOC_HUGE_FIRST

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void init(void) { ck_assert_int_eq(d_aclInit(NULL), ACL_SUCCESS); }

static aclrtContext ctx_on(int32_t dev) {
  aclrtContext c = NULL;
  ck_assert_int_eq(d_aclrtCreateContext(&c, dev), ACL_SUCCESS);
  ck_assert_ptr_nonnull(c);
  return c;
}

static aclrtStream new_stream(void) {
  aclrtStream s = NULL;
  ck_assert_int_eq(d_aclrtCreateStream(&s), ACL_SUCCESS);
  return s;
}

static void *dev_alloc(size_t n) {
  void *p = NULL;
  ck_assert_int_eq(d_aclrtMalloc(&p, n, POLICY), ACL_SUCCESS);
  ck_assert_uint_ge((uintptr_t)p, (uintptr_t)1 << 60); /* the sim's, never a host address */
  ck_assert_uint_eq((uintptr_t)p % 64, 0);
  return p;
}

static void *pinned(size_t n) {
  void *p = NULL;
  ck_assert_int_eq(d_aclrtMallocHost(&p, n), ACL_SUCCESS);
  ck_assert_uint_eq((uintptr_t)p % 4096, 0);
  return p;
}

/* The thread's failure text, which must contain want. */
static void msg_has(const char *want) {
  const char *m = d_aclGetRecentErrMsg();
  ck_assert_ptr_nonnull(m);
  ck_assert_msg(strstr(m, want), "message '%s' lacks '%s'", m, want);
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  static char buf[16384];
  *len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  ck_assert_uint_gt(*len, 0);
  return buf;
}

static aclrtBinHandle load_builtin(void) {
  size_t len;
  const char *data = read_file(ACL_DOUBLE_BUILTIN, &len);
  aclrtBinHandle b = NULL;
  ck_assert_int_eq(d_aclrtBinaryLoadFromData(data, len, NULL, &b), ACL_SUCCESS);
  return b;
}

/* write_i32's blob: the pointer at 0, the value at 8 (docs/sim-binary.md). */
static void write_blob(unsigned char blob[12], void *out, int32_t value) {
  uint64_t a = (uint64_t)(uintptr_t)out;
  memcpy(blob, &a, 8);
  memcpy(blob + 8, &value, 4);
}

START_TEST(test_calls_before_init) {
  size_t free_b, total;
  void *p = NULL;
  aclrtContext c = NULL;
  aclrtStream s = NULL;
  uint32_t n = 0;
  ck_assert_ptr_null(d_aclrtGetSocName());
  ck_assert_str_eq(d_aclGetRecentErrMsg(), ""); /* none yet */
  ck_assert_int_eq(d_aclFinalize(), ACL_ERROR_UNINITIALIZE);
  msg_has("aclInit");
  ck_assert_str_eq(d_aclGetRecentErrMsg(), ""); /* obtained and cleared */
  ck_assert_int_eq(d_aclrtGetDeviceCount(&n), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtCreateContext(&c, 0), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtSetCurrentContext((aclrtContext)0x1), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtMalloc(&p, 64, POLICY), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtMallocHost(&p, 64), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtCreateStream(&s), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclrtMemcpy(&n, 4, &n, 4, H2H), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_acldoubleFaultInject(0, 1, 1, 0), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclInit("/nonexistent/acl.json"), ACL_ERROR_INVALID_FILE);

  init();
  ck_assert_str_eq(d_aclrtGetSocName(), "Ascend910B-double");
  ck_assert_int_eq(d_aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
  ck_assert_int_eq(d_acldoubleConfigure(3, 0), ACL_ERROR_REPEAT_INITIALIZE);
  ck_assert_int_eq(d_aclrtGetDeviceCount(&n), ACL_SUCCESS);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
  ck_assert_ptr_null(d_aclrtGetSocName());
  ck_assert_int_eq(d_aclrtMalloc(&p, 64, POLICY), ACL_ERROR_UNINITIALIZE);
  ck_assert_int_eq(d_aclFinalize(), ACL_ERROR_UNINITIALIZE);

  /* aclInit again after aclFinalize, with the devices configured in between */
  ck_assert_int_eq(d_acldoubleConfigure(-1, 0), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_acldoubleConfigure(3, 1 << 20), ACL_SUCCESS);
  init();
  ck_assert_int_eq(d_aclrtGetDeviceCount(&n), ACL_SUCCESS);
  ck_assert_uint_eq(n, 3);
  ctx_on(2);
  ck_assert_int_eq(d_aclrtGetMemInfo(ACL_HBM_MEM, &free_b, &total), ACL_SUCCESS);
  ck_assert_uint_eq(total, 1 << 20);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_no_current_context) {
  init();
  void *p = NULL;
  aclrtStream s = NULL;
  aclrtBinHandle b = NULL;
  size_t f, t;
  char h[8];
  ck_assert_int_eq(d_aclrtMalloc(&p, 64, POLICY), ACL_ERROR_RT_CONTEXT_NULL);
  msg_has("no current context");
  ck_assert_int_eq(d_aclrtMallocHost(&p, 64), ACL_ERROR_RT_CONTEXT_NULL);
  ck_assert_int_eq(d_aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
  ck_assert_int_eq(d_aclrtMemcpy(h, 8, h, 8, H2H), ACL_ERROR_RT_CONTEXT_NULL);
  ck_assert_int_eq(d_aclrtGetMemInfo(ACL_HBM_MEM, &f, &t), ACL_ERROR_RT_CONTEXT_NULL);
  ck_assert_int_eq(d_aclrtBinaryLoadFromData("x", 1, NULL, &b), ACL_ERROR_RT_CONTEXT_NULL);
  ck_assert_int_eq(d_aclrtSynchronizeStream((aclrtStream)0x1), ACL_ERROR_RT_CONTEXT_NULL);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_device_memory_and_copy_kinds) {
  init();
  aclrtContext c1 = ctx_on(1);
  void *p1 = dev_alloc(256);
  aclrtContext c0 = ctx_on(0); /* current now */
  void *p = dev_alloc(256), *q = dev_alloc(256);
  unsigned char in[256], out[256], host[256];
  for (int i = 0; i < 256; i++) in[i] = (unsigned char)(i * 7 + 1);
  ck_assert_int_eq(d_aclrtMemcpy(p, 256, in, 256, H2D), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpy(q, 256, p, 256, D2D), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpy(out, 256, q, 256, D2H), ACL_SUCCESS);
  ck_assert_mem_eq(in, out, 256);
  ck_assert_int_eq(d_aclrtMemcpy(host, 256, in, 256, H2H), ACL_SUCCESS);
  ck_assert_mem_eq(in, host, 256);

  /* the kind must match the pointers */
  ck_assert_int_eq(d_aclrtMemcpy(out, 256, p, 256, H2D), ACL_ERROR_INVALID_PARAM);
  msg_has("H2D copy");
  ck_assert_int_eq(d_aclrtMemcpy(p, 256, in, 256, D2H), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpy(p, 256, in, 256, D2D), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpy(out, 256, p, 256, H2H), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpy(p, 256, in, 256, (aclrtMemcpyKind)9), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpy(p, 128, in, 256, H2D), ACL_ERROR_RT_PARAM_INVALID);
  ck_assert_int_eq(d_aclrtMemcpy(p, 512, in, 512, H2D), ACL_ERROR_INVALID_PARAM); /* past the allocation */

  /* memory of device 1 while device 0's context is current */
  ck_assert_int_eq(d_aclrtMemcpy(out, 256, p1, 256, D2H), ACL_ERROR_RT_PARAM_INVALID);
  msg_has("device 1");
  ck_assert_int_eq(d_aclrtMemcpy(p1, 256, in, 256, H2D), ACL_ERROR_RT_PARAM_INVALID);
  ck_assert_int_eq(d_aclrtMemset(p1, 256, 0, 256), ACL_ERROR_RT_PARAM_INVALID);
  ck_assert_int_eq(d_aclrtFree(p1), ACL_ERROR_RT_PARAM_INVALID);

  /* memset, then read back */
  ck_assert_int_eq(d_aclrtMemset(p, 256, 0xab, 100), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpy(out, 256, p, 256, D2H), ACL_SUCCESS);
  for (int i = 0; i < 256; i++) ck_assert_uint_eq(out[i], i < 100 ? 0xab : in[i]);
  ck_assert_int_eq(d_aclrtMemset(in, 256, 0, 4), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemset(p, 4, 0, 8), ACL_ERROR_RT_PARAM_INVALID);

  /* allocation rules */
  void *z = NULL;
  ck_assert_int_eq(d_aclrtMalloc(&z, 0, POLICY), ACL_ERROR_INVALID_PARAM);
  msg_has("size 0"); /* the runtime's detail */
  ck_assert_int_eq(d_aclrtMalloc(&z, (size_t)1 << 40, POLICY), ACL_ERROR_RT_DEVICE_OOM);
  ck_assert_int_eq(d_aclrtMalloc(&z, 64, (aclrtMemMallocPolicy)0x77), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtFree((char *)p + 64), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtFree(in), ACL_ERROR_INVALID_PARAM);
  size_t f0, t0, f1, t1;
  ck_assert_int_eq(d_aclrtGetMemInfo(ACL_HBM_MEM, &f0, &t0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtGetMemInfo(ACL_DDR_MEM, &f1, &t1), ACL_SUCCESS);
  ck_assert_uint_eq(t0, (size_t)256 << 20);
  ck_assert_uint_eq(t1, t0);
  ck_assert_uint_lt(f0, t0);
  ck_assert_int_eq(d_aclrtFree(q), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtGetMemInfo(ACL_HBM_MEM, &f1, &t1), ACL_SUCCESS);
  ck_assert_uint_gt(f1, f0);
  ck_assert_int_eq(d_aclrtFree(q), ACL_ERROR_INVALID_PARAM); /* twice */

  ck_assert_int_eq(d_aclrtSetCurrentContext(c1), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtFree(p1), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtFree(p), ACL_ERROR_RT_PARAM_INVALID);
  ck_assert_int_eq(d_aclrtDestroyContext(c1), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtDestroyContext(c0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS); /* frees p */
}
END_TEST

START_TEST(test_async_copies_need_mallochost_memory) {
  init();
  ctx_on(0);
  aclrtStream s = new_stream();
  enum { N = 4096 };
  void *d = dev_alloc(N);
  unsigned char *plain = malloc(N);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, N, plain, N, H2D, s), ACL_ERROR_INVALID_PARAM);
  msg_has("the host side of an async copy must be aclrtMallocHost memory");
  ck_assert_int_eq(d_aclrtMemcpyAsync(plain, N, d, N, D2H, s), ACL_ERROR_INVALID_PARAM);
  msg_has("the host side of an async copy must be aclrtMallocHost memory");

  unsigned char *a = pinned(N), *b = pinned(N);
  for (int i = 0; i < N; i++) a[i] = (unsigned char)(i * 31 + 5);
  memset(b, 0, N);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, N, a, N, H2D, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpyAsync(b, N, d, N, D2H, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_SUCCESS);
  ck_assert_mem_eq(a, b, N);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, N, a + N - 100, 200, H2D, s), ACL_ERROR_INVALID_PARAM); /* leaves the block */
  ck_assert_int_eq(d_aclrtMemcpyAsync(b, N, plain, N, H2H, s), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpyAsync(b, N, a, N, H2H, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, N, b, N, D2H, s), ACL_ERROR_INVALID_PARAM); /* the kind, async too */
  ck_assert_int_eq(d_aclrtMemsetAsync(d, N, 0x5a, 16, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpyAsync(b, N, d, N, D2H, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_SUCCESS);
  for (int i = 0; i < N; i++) ck_assert_uint_eq(b[i], i < 16 ? 0x5a : a[i]);
  ck_assert_int_eq(d_aclrtMemsetAsync(plain, N, 0, 16, s), ACL_ERROR_INVALID_PARAM);

  ck_assert_int_eq(d_aclrtFreeHost(a + 1), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtFreeHost(plain), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtFreeHost(a), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtFreeHost(a), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, N, b, N, H2D, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtDestroyStream(s), ACL_SUCCESS);
  free(plain);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS); /* frees b and d */
}
END_TEST

START_TEST(test_stream_of_another_device) {
  init();
  aclrtContext c0 = ctx_on(0);
  aclrtStream s0 = new_stream();
  void *d0 = dev_alloc(64);
  unsigned char *h = pinned(64);
  ctx_on(1); /* current now: device 1 */
  ck_assert_int_eq(d_aclrtMemcpyAsync(d0, 64, h, 64, H2D, s0), ACL_ERROR_RT_STREAM_CONTEXT);
  msg_has("device 0");
  ck_assert_int_eq(d_aclrtMemsetAsync(d0, 64, 0, 64, s0), ACL_ERROR_RT_STREAM_CONTEXT);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s0), ACL_ERROR_RT_STREAM_CONTEXT);
  ck_assert_int_eq(d_aclrtSynchronizeStreamWithTimeout(s0, 10), ACL_ERROR_RT_STREAM_CONTEXT);
  ck_assert_int_eq(d_aclrtStreamAbort(s0), ACL_ERROR_RT_STREAM_CONTEXT);
  ck_assert_int_eq(d_aclrtDestroyStream(s0), ACL_ERROR_RT_STREAM_CONTEXT);
  aclrtStream s1 = new_stream();
  ck_assert_int_eq(d_aclrtMemcpyAsync(d0, 64, h, 64, H2D, s1), ACL_ERROR_RT_PARAM_INVALID); /* d0 is device 0's */
  ck_assert_int_eq(d_aclrtSetCurrentContext(c0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d0, 64, h, 64, H2D, s1), ACL_ERROR_RT_STREAM_CONTEXT);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d0, 64, h, 64, H2D, s0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtDestroyStream(s0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_kernel_from_builtin_binary) {
  init();
  ctx_on(0);
  aclrtStream s = new_stream();
  aclrtBinHandle bin = load_builtin();
  aclrtFuncHandle f = NULL, f2 = NULL;
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", &f), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtBinaryGetFunctionByEntry(bin, 0, &f2), ACL_SUCCESS);
  ck_assert_ptr_eq(f, f2);
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "no_such_kernel", &f2), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(d_aclrtBinaryGetFunctionByEntry(bin, 99, &f2), RDEV_UNKNOWN_KERNEL);

  int32_t *out = dev_alloc(4 * sizeof(int32_t)), got[4] = {0};
  unsigned char blob[12];
  write_blob(blob, out, 1234);
  /* kernel print goes to the process's stdout: catch it in a file */
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  FILE *cap = tmpfile();
  ck_assert_ptr_nonnull(cap);
  dup2(fileno(cap), STDOUT_FILENO);
  aclError launched = d_aclrtLaunchKernelWithHostArgs(f, 4, s, NULL, blob, sizeof blob, NULL, 0);
  aclError synced = d_aclrtSynchronizeStream(s);
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  ck_assert_int_eq(launched, ACL_SUCCESS);
  ck_assert_int_eq(synced, ACL_SUCCESS);
  char text[1024] = {0};
  rewind(cap);
  ck_assert_uint_gt(fread(text, 1, sizeof text - 1, cap), 0);
  fclose(cap);
  ck_assert_msg(strstr(text, "Source data: 1234"), "kernel print: '%s'", text);
  ck_assert_int_eq(d_aclrtMemcpy(got, sizeof got, out, sizeof got, D2H), ACL_SUCCESS);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(got[i], 1234);

  aclrtPlaceHolderInfo ph = {0, 0};
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 4, s, NULL, blob, sizeof blob, &ph, 1),
                   ACL_ERROR_FEATURE_UNSUPPORTED);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 4, s, NULL, blob, 8, NULL, 0), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 5, s, NULL, blob, sizeof blob, NULL, 0),
                   ACL_ERROR_INVALID_PARAM); /* 5 blocks reach past 16 bytes */
  write_blob(blob, got, 1);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, blob, sizeof blob, NULL, 0),
                   ACL_ERROR_INVALID_PARAM); /* a host pointer */
  aclrtLaunchKernelCfg cfg = {NULL, 0};
  write_blob(blob, out, 7);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, s, &cfg, blob, sizeof blob, NULL, 0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_SUCCESS);

  /* a binary loaded on device 0, launched where device 1's context is current */
  ctx_on(1);
  aclrtStream s1 = new_stream();
  int32_t *out1 = dev_alloc(16);
  write_blob(blob, out1, 3);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, s1, NULL, blob, sizeof blob, NULL, 0),
                   ACL_ERROR_RT_PARAM_INVALID);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, blob, sizeof blob, NULL, 0),
                   ACL_ERROR_RT_PARAM_INVALID);
  aclrtBinHandle bin1 = load_builtin();
  ck_assert_ptr_ne(bin1, bin);
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin1, "write_i32", &f2), ACL_SUCCESS);
  ck_assert_ptr_ne(f2, f);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f2, 1, s, NULL, blob, sizeof blob, NULL, 0),
                   ACL_ERROR_RT_STREAM_CONTEXT);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f2, 1, s1, NULL, blob, sizeof blob, NULL, 0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s1), ACL_SUCCESS);

  /* unloaded: its functions are gone */
  ck_assert_int_eq(d_aclrtBinaryUnLoad(bin), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtBinaryUnLoad(bin), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", &f2), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, blob, sizeof blob, NULL, 0), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS); /* unloads bin1 */
}
END_TEST

START_TEST(test_fault_kinds) {
  init();
  ctx_on(0);
  aclrtStream s = new_stream();
  void *p = NULL;
  /* 1: the nth allocation fails */
  ck_assert_int_eq(d_acldoubleFaultInject(0, 1, 2, 0), ACL_SUCCESS);
  void *a = dev_alloc(64);
  ck_assert_int_eq(d_aclrtMalloc(&p, 64, POLICY), ACL_ERROR_RT_DEVICE_OOM);
  void *b = dev_alloc(64);
  ck_assert_ptr_ne(a, b);

  /* 2: a kernel faults, reported by the next synchronize, once */
  aclrtBinHandle bin = load_builtin();
  aclrtFuncHandle f = NULL;
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", &f), ACL_SUCCESS);
  unsigned char blob[12];
  write_blob(blob, a, 5);
  ck_assert_int_eq(d_acldoubleFaultInject(0, 2, 1, 0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, s, NULL, blob, sizeof blob, NULL, 0), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_SUCCESS);

  /* 3: a task hangs; a shorter synchronize times out; abort ends it */
  ck_assert_int_eq(d_acldoubleFaultInject(0, 3, 1, 20000), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemsetAsync(a, 64, 1, 64, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemsetAsync(b, 64, 2, 64, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStreamWithTimeout(s, 100), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  double t0 = now_s();
  ck_assert_int_eq(d_aclrtStreamAbort(s), ACL_SUCCESS);
  aclError rc = d_aclrtSynchronizeStream(s);
  ck_assert_msg(rc == ACL_SUCCESS || rc == ACL_ERROR_RT_STREAM_ABORT, "sync after abort: %d", rc);
  ck_assert_double_lt(now_s() - t0, 10.0);
  ck_assert_int_eq(d_aclrtMemsetAsync(a, 64, 3, 64, s), ACL_SUCCESS); /* the stream stays usable */
  ck_assert_int_eq(d_aclrtSynchronizeStreamWithTimeout(s, -1), ACL_SUCCESS);

  ck_assert_int_eq(d_acldoubleFaultInject(0, 9, 1, 0), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_acldoubleFaultInject(7, 1, 1, 0), ACL_ERROR_RT_INVALID_DEVICEID);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_fail_device_env) {
  setenv(ACL_DOUBLE_FAIL_DEVICE_ENV, "1", 1);
  init();
  aclrtContext c = NULL;
  ck_assert_int_eq(d_aclrtCreateContext(&c, 1), ACL_ERROR_RT_DEV_SETUP_ERROR);
  msg_has("ACL_DOUBLE_FAIL_DEVICE");
  ck_assert_int_eq(d_aclrtCreateContext(&c, 2), ACL_ERROR_RT_INVALID_DEVICEID);
  ck_assert_int_eq(d_aclrtCreateContext(&c, -1), ACL_ERROR_RT_INVALID_DEVICEID);
  ctx_on(0);
  setenv(ACL_DOUBLE_FAIL_DEVICE_ENV, "all", 1);
  ck_assert_int_eq(d_aclrtCreateContext(&c, 0), ACL_ERROR_RT_DEV_SETUP_ERROR);
  unsetenv(ACL_DOUBLE_FAIL_DEVICE_ENV);
  ctx_on(1);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

static pthread_barrier_t g_bar;

static void *use_then_lose_context(void *ctx) {
  void *p = NULL;
  intptr_t bad = 0;
  bad |= d_aclrtSetCurrentContext(ctx) != ACL_SUCCESS;
  bad |= d_aclrtMalloc(&p, 64, POLICY) != ACL_SUCCESS;
  pthread_barrier_wait(&g_bar); /* the main thread destroys ctx */
  pthread_barrier_wait(&g_bar);
  bad |= (d_aclrtMalloc(&p, 64, POLICY) != ACL_ERROR_RT_CONTEXT_NULL) << 1;
  bad |= (strstr(d_aclGetRecentErrMsg(), "destroyed") == NULL) << 2;
  return (void *)bad;
}

START_TEST(test_context_destroyed_under_another_thread) {
  init();
  aclrtContext c = ctx_on(0);
  pthread_t t;
  pthread_barrier_init(&g_bar, NULL, 2);
  ck_assert_int_eq(pthread_create(&t, NULL, use_then_lose_context, c), 0);
  pthread_barrier_wait(&g_bar);
  ck_assert_int_eq(d_aclrtDestroyContext(c), ACL_SUCCESS);
  pthread_barrier_wait(&g_bar);
  void *bad;
  pthread_join(t, &bad);
  pthread_barrier_destroy(&g_bar);
  ck_assert_int_eq((intptr_t)bad, 0);
  void *p = NULL;
  ck_assert_int_eq(d_aclrtMalloc(&p, 64, POLICY), ACL_ERROR_RT_CONTEXT_NULL); /* it was this thread's too */
  ck_assert_int_eq(d_aclrtSetCurrentContext(c), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtDestroyContext(c), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

static void *sync_forever(void *s) { return (void *)(intptr_t)d_aclrtSynchronizeStream(s); }

START_TEST(test_finalize_with_everything_live_then_init) {
  init();
  aclrtContext c = ctx_on(0);
  aclrtStream s = new_stream(), hung = new_stream();
  void *d = dev_alloc(4096);
  void *h = pinned(4096);
  aclrtBinHandle bin = load_builtin();
  aclrtFuncHandle f = NULL;
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", &f), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, 4096, h, 4096, H2D, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_SUCCESS);
  /* a thread waits on a hung stream: aclFinalize cuts it off and waits for it */
  ck_assert_int_eq(d_acldoubleFaultInject(0, 3, 1, 60000), ACL_SUCCESS);
  void *d2 = dev_alloc(4096);                                                  /* not d: s copies into it */
  ck_assert_int_eq(d_aclrtMemsetAsync(d2, 4096, 0, 4096, hung), ACL_SUCCESS);  /* the first task since: it hangs */
  ck_assert_int_eq(d_aclrtMemcpyAsync(d, 4096, h, 4096, H2D, s), ACL_SUCCESS); /* maybe still queued at aclFinalize */
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, sync_forever, hung), 0);
  usleep(100 * 1000);
  double t0 = now_s();
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
  ck_assert_double_lt(now_s() - t0, 10.0);
  void *rc;
  pthread_join(t, &rc);
  ck_assert_int_ne((intptr_t)rc, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);

  init();
  void *p = NULL;
  ck_assert_int_eq(d_aclrtMalloc(&p, 64, POLICY), ACL_ERROR_RT_CONTEXT_NULL); /* the old context is gone */
  ck_assert_int_eq(d_aclrtSetCurrentContext(c), ACL_ERROR_INVALID_PARAM);
  ctx_on(0);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM); /* and every old handle */
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", &f), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtFreeHost(h), ACL_ERROR_INVALID_PARAM);
  s = new_stream();
  d = dev_alloc(64);
  ck_assert_int_eq(d_aclrtMemsetAsync(d, 64, 0, 64, s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

START_TEST(test_bad_handles) {
  init();
  aclrtContext c = ctx_on(0);
  void *bogus = (void *)(uintptr_t)0x1234, *p = dev_alloc(64);
  unsigned char *h = pinned(64);
  ck_assert_int_eq(d_aclrtSynchronizeStream(bogus), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtSynchronizeStream(NULL), ACL_ERROR_INVALID_PARAM); /* no default stream */
  ck_assert_int_eq(d_aclrtSynchronizeStreamWithTimeout(bogus, 10), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtStreamAbort(bogus), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtDestroyStream(bogus), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemcpyAsync(p, 64, h, 64, H2D, bogus), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMemsetAsync(p, 64, 0, 64, c), ACL_ERROR_INVALID_PARAM); /* a context is no stream */
  ck_assert_int_eq(d_aclrtDestroyContext(bogus), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtSetCurrentContext(bogus), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryUnLoad(bogus), ACL_ERROR_INVALID_PARAM);
  aclrtFuncHandle f = NULL;
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bogus, "write_i32", &f), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryGetFunctionByEntry(bogus, 0, &f), ACL_ERROR_INVALID_PARAM);
  aclrtStream s = new_stream();
  unsigned char blob[12];
  write_blob(blob, p, 1);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(bogus, 1, s, NULL, blob, 12, NULL, 0), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(s, 1, s, NULL, blob, 12, NULL, 0), ACL_ERROR_INVALID_PARAM);
  aclrtBinHandle bin = load_builtin();
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, NULL, &f), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", NULL), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryGetFunction(bin, "write_i32", &f), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtLaunchKernelWithHostArgs(f, 1, bogus, NULL, blob, 12, NULL, 0), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryUnLoad(f), ACL_ERROR_INVALID_PARAM); /* a function is no binary */
  ck_assert_int_eq(d_aclrtDestroyStream(s), ACL_SUCCESS);
  ck_assert_int_eq(d_aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM); /* destroyed */
  ck_assert_int_eq(d_aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM);

  aclrtBinHandle b2 = NULL;
  const char junk[] = "not a binary\n", unknown[] = "rdev-sim-binary 1\nkernel K no_such_kernel\n  noargs\n";
  ck_assert_int_eq(d_aclrtBinaryLoadFromData(junk, sizeof junk - 1, NULL, &b2), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtBinaryLoadFromData(unknown, sizeof unknown - 1, NULL, &b2), RDEV_UNKNOWN_KERNEL);
  aclrtBinaryLoadOptions opts = {NULL, 1};
  ck_assert_int_eq(d_aclrtBinaryLoadFromData(unknown, sizeof unknown - 1, &opts, &b2), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMalloc(NULL, 64, POLICY), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtMallocHost(NULL, 64), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

/* ---- many threads at once ----------------------------------------------- */

static void *worker(void *arg) {
  intptr_t id = (intptr_t)arg, bad = 0;
  aclrtContext c = NULL;
  aclrtStream s = NULL;
  void *d = NULL;
  unsigned char *a = NULL, *b = NULL;
  enum { N = 8192 };
  bad |= d_aclrtCreateContext(&c, (int32_t)(id % 2)) != ACL_SUCCESS;
  bad |= d_aclrtCreateStream(&s) != ACL_SUCCESS;
  bad |= d_aclrtMalloc(&d, N, POLICY) != ACL_SUCCESS;
  bad |= d_aclrtMallocHost((void **)&a, N) != ACL_SUCCESS;
  bad |= d_aclrtMallocHost((void **)&b, N) != ACL_SUCCESS;
  for (int it = 0; it < 100 && !bad; it++) {
    for (int i = 0; i < N; i++) a[i] = (unsigned char)(i + it + id);
    bad |= d_aclrtMemcpyAsync(d, N, a, N, H2D, s) != ACL_SUCCESS;
    bad |= d_aclrtMemcpyAsync(b, N, d, N, D2H, s) != ACL_SUCCESS;
    bad |= d_aclrtSynchronizeStream(s) != ACL_SUCCESS;
    bad |= memcmp(a, b, N) != 0;
    if (it % 20 == 0) { /* streams come and go meanwhile */
      aclrtStream t = NULL;
      bad |= d_aclrtCreateStream(&t) != ACL_SUCCESS;
      bad |= d_aclrtDestroyStream(t) != ACL_SUCCESS;
    }
  }
  bad |= d_aclrtDestroyStream(s) != ACL_SUCCESS;
  bad |= d_aclrtFree(d) != ACL_SUCCESS;
  bad |= d_aclrtFreeHost(a) != ACL_SUCCESS;
  bad |= d_aclrtFreeHost(b) != ACL_SUCCESS;
  bad |= d_aclrtDestroyContext(c) != ACL_SUCCESS;
  return (void *)bad;
}

START_TEST(test_many_threads) {
  init();
  enum { T = 8 };
  pthread_t t[T];
  for (intptr_t i = 0; i < T; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, worker, (void *)i), 0);
  for (int i = 0; i < T; i++) {
    void *bad;
    pthread_join(t[i], &bad);
    ck_assert_int_eq((intptr_t)bad, 0);
  }
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

/* ---- the builtin binary, by the test's own runtime ---------------------- */

START_TEST(test_builtin_binary_declares_every_kernel) {
  ck_assert_ptr_null(dlsym(g_lib, "rdev_rt_open")); /* the double's runtime is private */
  ck_assert_ptr_null(dlsym(g_lib, "rdev_rt_binary_load"));
  init(); /* both runtimes in one process, both in use */
  ctx_on(0);
  void *d = dev_alloc(64);
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 << 20};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  size_t len;
  const char *data = read_file(ACL_DOUBLE_BUILTIN, &len);
  rdev_rt_binary_t *b = NULL;
  ck_assert_int_eq(rdev_rt_binary_load(rt, data, len, &b), RDEV_OK);
  int n;
  const rdev_kernel_sig_t *k = rdev_rt_kernels(&n);
  ck_assert_int_eq(n, 12);
  for (int i = 0; i < n; i++) {
    const rdev_rt_function_t *f = NULL, *e = NULL;
    ck_assert_int_eq(rdev_rt_binary_function(b, k[i].name, &f), RDEV_OK);
    ck_assert_ptr_eq(rdev_rt_function_sig(f), &k[i]);
    ck_assert_int_eq(rdev_rt_binary_function_by_entry(b, (uint64_t)i, &e), RDEV_OK);
    ck_assert_ptr_eq(e, f);
    rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS];
    unsigned char blob[64] = {0};
    int nargs = -1;
    ck_assert_int_eq(rdev_rt_function_args(f, blob, sizeof blob, args, &nargs), RDEV_OK); /* has a layout */
    ck_assert_int_eq(nargs, k[i].nparams);
  }
  rdev_rt_binary_unload(b);
  rdev_rt_close(rt);
  int32_t v = 0;
  ck_assert_int_eq(d_aclrtMemcpy(d, 64, &v, 4, H2D), ACL_SUCCESS);
  ck_assert_int_eq(d_aclFinalize(), ACL_SUCCESS);
}
END_TEST

/* After each test, passed or not: the double as dlopen left it (for CK_FORK=no runs). */
static void reset_double(void) {
  d_aclFinalize();
  d_acldoubleConfigure(0, 0);
  unsetenv(ACL_DOUBLE_FAIL_DEVICE_ENV);
  d_aclGetRecentErrMsg();
}

static Suite *acl_double_suite(void) {
  Suite *s = suite_create("acl_double");
  TCase *tc = tcase_create("rules");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, NULL, reset_double);
  tcase_add_test(tc, test_calls_before_init);
  tcase_add_test(tc, test_no_current_context);
  tcase_add_test(tc, test_device_memory_and_copy_kinds);
  tcase_add_test(tc, test_async_copies_need_mallochost_memory);
  tcase_add_test(tc, test_stream_of_another_device);
  tcase_add_test(tc, test_kernel_from_builtin_binary);
  tcase_add_test(tc, test_fault_kinds);
  tcase_add_test(tc, test_fail_device_env);
  tcase_add_test(tc, test_context_destroyed_under_another_thread);
  tcase_add_test(tc, test_finalize_with_everything_live_then_init);
  tcase_add_test(tc, test_bad_handles);
  tcase_add_test(tc, test_many_threads);
  tcase_add_test(tc, test_builtin_binary_declares_every_kernel);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  g_lib = dlopen(ACL_DOUBLE_LIB, RTLD_NOW | RTLD_LOCAL);
  if (!g_lib) {
    fprintf(stderr, "cannot open %s: %s\n", ACL_DOUBLE_LIB, dlerror());
    return EXIT_FAILURE;
  }
#define RESOLVE(f) \
  if (!(d_##f = (__typeof__(f) *)dlsym(g_lib, #f))) { \
    fprintf(stderr, "%s does not export %s\n", ACL_DOUBLE_LIB, #f); \
    return EXIT_FAILURE; \
  }
  DBL_CALLS(RESOLVE)
  SRunner *sr = srunner_create(acl_double_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
