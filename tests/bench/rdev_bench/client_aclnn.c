/*
 * tests/bench/rdev_bench/client_aclnn.c — CANN's operator library (aclnn)
 * as rdev_bench drives it (clients.h): rdev's libopapi.so and
 * libnnopbase.so, next to libascendcl.so, in this process, on the ACL
 * library's session (client_acl.c's aclInit). As a CANN program calls an
 * operator: tensors made once (aclCreateTensor) over device buffers
 * holding oper.h's inputs, then per call aclnn<Op>GetWorkspaceSize (a new
 * executor), aclnn<Op> and aclrtSynchronizeStream. aclnnMatmul is called
 * where this build's generated headers declare it (aclnnop/aclnn_matmul.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"
#include "baseline.h"
#include "clients.h"
#include "common.h"
#include "rdev/status.h"
#if defined(__has_include)
#if __has_include("aclnnop/aclnn_matmul.h")
#include "aclnnop/aclnn_matmul.h"
#define BENCH_ACLNN_MATMUL 1
#endif
#endif

struct cl_aclnn {
  oper_shape_t shape;
  aclrtStream stream;
  void *buf[OPER_NPROBLEMS][3]; /* self, other, out */
  size_t bytes[OPER_NPROBLEMS][3];
  aclTensor *t[OPER_NPROBLEMS][3];
  aclScalar *alpha;
  void *ws; /* the largest workspace an operator asked for */
  uint64_t ws_size;
};

static int failed(const char *what, int rc) {
  const char *m = aclGetRecentErrMsg();
  return bl_fail("aclnn: %s: error %d%s%s", what, rc, m ? ": " : "", m ? m : "");
}

int cl_aclnn_open(cl_aclnn_t **out, const oper_shape_t *s) {
  *out = NULL;
  cl_aclnn_t *a = calloc(1, sizeof *a);
  if (!a) return bl_fail("aclnn: out of memory");
  a->shape = *s;
  int64_t dims[OPER_NPROBLEMS][3][2] = {{{(int64_t)s->add_n, 1}, {(int64_t)s->add_n, 1}, {(int64_t)s->add_n, 1}},
                                        {{s->mm_m, s->mm_k}, {s->mm_k, s->mm_n}, {s->mm_m, s->mm_n}}};
  aclError rc = aclrtCreateStream(&a->stream);
  if (rc) {
    free(a);
    return failed("aclrtCreateStream", rc);
  }
  for (int p = 0; p < OPER_NPROBLEMS; p++) {
    uint64_t nd = p == OPER_ADD ? 1 : 2;
    for (int i = 0; i < 3; i++) {
      int64_t *d = dims[p][i], strides[2] = {nd == 2 ? d[1] : 1, 1};
      size_t n = (size_t)(d[0] * d[1]) * sizeof(float);
      a->bytes[p][i] = n;
      float *host = malloc(n);
      if (!host) {
        cl_aclnn_close(a);
        return bl_fail("aclnn: cannot allocate %zu host bytes", n);
      }
      if (i < 2)
        oper_fill(host, n / sizeof(float), i);
      else
        memset(host, 0, n);
      const char *what = NULL;
      if ((rc = aclrtMalloc(&a->buf[p][i], n, ACL_MEM_MALLOC_HUGE_FIRST)))
        what = "aclrtMalloc";
      else if ((rc = aclrtMemcpy(a->buf[p][i], n, host, n, ACL_MEMCPY_HOST_TO_DEVICE)))
        what = "aclrtMemcpy host to device";
      free(host);
      if (what) {
        int r = failed(what, rc);
        cl_aclnn_close(a);
        return r;
      }
      a->t[p][i] = aclCreateTensor(d, nd, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, d, nd, a->buf[p][i]);
      if (!a->t[p][i]) {
        cl_aclnn_close(a);
        return bl_fail("aclnn: aclCreateTensor returned NULL");
      }
    }
  }
  float one = 1.0f;
  if (!(a->alpha = aclCreateScalar(&one, ACL_FLOAT))) {
    cl_aclnn_close(a);
    return bl_fail("aclnn: aclCreateScalar returned NULL");
  }
  *out = a;
  return 0;
}

/* Queues problem p once: aclnn<Op>GetWorkspaceSize, a workspace when it
 * needs a larger one than it has (aclrtMalloc: the first call only),
 * aclnn<Op>. */
static int queue(cl_aclnn_t *a, int p) {
  uint64_t ws = 0;
  aclOpExecutor *ex = NULL;
  aclnnStatus rc;
  if (p == OPER_ADD) {
    if ((rc = aclnnAddGetWorkspaceSize(a->t[p][0], a->t[p][1], a->alpha, a->t[p][2], &ws, &ex)))
      return failed("aclnnAddGetWorkspaceSize", rc);
  } else {
#ifdef BENCH_ACLNN_MATMUL
    if ((rc = aclnnMatmulGetWorkspaceSize(a->t[p][0], a->t[p][1], a->t[p][2], 0, &ws, &ex)))
      return failed("aclnnMatmulGetWorkspaceSize", rc);
#else
    return bl_fail("aclnn: this build has no aclnnMatmul");
#endif
  }
  if (ws > a->ws_size) {
    if (a->ws) aclrtFree(a->ws);
    a->ws = NULL;
    a->ws_size = 0;
    aclError e = aclrtMalloc(&a->ws, ws, ACL_MEM_MALLOC_HUGE_FIRST);
    if (e) return failed("aclrtMalloc (workspace)", e);
    a->ws_size = ws;
  }
  if (p == OPER_ADD) {
    if ((rc = aclnnAdd(a->ws, ws, ex, a->stream))) return failed("aclnnAdd", rc);
  } else {
#ifdef BENCH_ACLNN_MATMUL
    if ((rc = aclnnMatmul(a->ws, ws, ex, a->stream))) return failed("aclnnMatmul", rc);
#endif
  }
  return 0;
}

int cl_aclnn_probe(cl_aclnn_t *a, int p, char *note, size_t note_len) {
#ifndef BENCH_ACLNN_MATMUL
  if (p == OPER_MATMUL) {
    snprintf(note, note_len, "this build's aclnn headers declare no aclnnMatmul (aclnnop/aclnn_matmul.h)");
    return 0;
  }
#endif
  if (queue(a, p)) return -1;
  aclError rc = aclrtSynchronizeStream(a->stream);
  if (rc == RDEV_UNKNOWN_KERNEL) {
    const char *m = aclGetRecentErrMsg();
    snprintf(note, note_len, "rdevd does not offer aclnn%s (%s)", oper_name(p), m ? m : "unknown operator");
    return 0;
  }
  if (rc) return failed("aclrtSynchronizeStream", rc);
  return 1;
}

int cl_aclnn_run(cl_aclnn_t *a, int p, long k, double *secs) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    if (queue(a, p)) return -1;
    aclError rc = aclrtSynchronizeStream(a->stream);
    if (rc) return failed("aclrtSynchronizeStream", rc);
  }
  *secs = now_s() - t0;
  return 0;
}

int cl_aclnn_verify(cl_aclnn_t *a, int p) {
  size_t n = a->bytes[p][2];
  float *host = malloc(n);
  if (!host) return bl_fail("aclnn: cannot allocate %zu host bytes", n);
  const char *what = NULL;
  aclError rc;
  if ((rc = aclrtMemset(a->buf[p][2], n, 0xff, n))) /* NaN */
    what = "aclrtMemset";
  else if (queue(a, p)) {
    free(host);
    return -1;
  } else if ((rc = aclrtSynchronizeStream(a->stream)))
    what = "aclrtSynchronizeStream";
  else if ((rc = aclrtMemcpy(host, n, a->buf[p][2], n, ACL_MEMCPY_DEVICE_TO_HOST)))
    what = "aclrtMemcpy device to host";
  if (what) {
    free(host);
    return failed(what, rc);
  }
  char msg[256];
  int bad = oper_check(p, &a->shape, host, "aclnn", msg, sizeof msg);
  free(host);
  return bad ? bl_fail("%s", msg) : 0;
}

int cl_aclnn_close(cl_aclnn_t *a) {
  if (!a) return 0;
  int first = 0;
  const char *what = NULL;
  if (a->alpha) aclDestroyScalar(a->alpha);
  for (int p = 0; p < OPER_NPROBLEMS; p++)
    for (int i = 0; i < 3; i++) {
      if (a->t[p][i]) aclDestroyTensor(a->t[p][i]);
      aclError rc = a->buf[p][i] ? aclrtFree(a->buf[p][i]) : 0;
      if (rc && !first) first = rc, what = "aclrtFree";
    }
  aclError rc = a->ws ? aclrtFree(a->ws) : 0;
  if (rc && !first) first = rc, what = "aclrtFree (workspace)";
  rc = a->stream ? aclrtDestroyStream(a->stream) : 0;
  if (rc && !first) first = rc, what = "aclrtDestroyStream";
  free(a);
  return first ? failed(what, first) : 0;
}
