/*
 * tests/bench/rdev_bench/baseline_rt_ops.c — the operators phase's baseline:
 * what the device itself takes, no network. A sim runtime of its own
 * (rdev/runtime.h, one device) runs the Add and Matmul operators
 * (rdev_rt_op_launch) and the built-in kernel add_f32 (rdev_rt_launch) on
 * device buffers holding oper.h's inputs, each followed by
 * rdev_rt_stream_synchronize.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "common.h"
#include "rdev/runtime.h"

struct bl_rt_ops {
  rdev_rt_t *rt;
  rdev_rt_stream_t *st;
  oper_shape_t shape;
  void *buf[OPER_NPROBLEMS][3]; /* self, other, out */
  size_t bytes[OPER_NPROBLEMS][3];
  uint8_t blob[OPER_NPROBLEMS][RDEV_OP_MAX_BLOB]; /* the encoded call; len 0: none (note says why) */
  size_t blob_len[OPER_NPROBLEMS];
  char note[OPER_NPROBLEMS][256];
};

static int rt_fail(const char *what, int rc) {
  return bl_fail("runtime: %s: %s (%d %s): %s", what, rdev_strerror(rc), rc, rdev_status_name(rc),
                 rdev_rt_last_error());
}

int bl_rt_ops_open(bl_rt_ops_t **out, const oper_shape_t *s) {
  *out = NULL;
  bl_rt_ops_t *r = calloc(1, sizeof *r);
  if (!r) return bl_fail("runtime: out of memory");
  r->shape = *s;
  size_t add = s->add_n * sizeof(float);
  size_t mm[3] = {(size_t)(s->mm_m * s->mm_k) * sizeof(float), (size_t)(s->mm_k * s->mm_n) * sizeof(float),
                  (size_t)(s->mm_m * s->mm_n) * sizeof(float)};
  size_t arena = 16 * MiB;
  for (int i = 0; i < 3; i++) {
    r->bytes[OPER_ADD][i] = add;
    r->bytes[OPER_MATMUL][i] = mm[i];
    arena += add + mm[i] + 2 * MiB;
  }
  rdev_rt_config_t cfg = {.backend = "sim", .sim_devices = 1, .sim_mem_bytes = arena};
  int rc = rdev_rt_open(&cfg, &r->rt);
  if (rc) {
    free(r);
    return rt_fail("open", rc);
  }
  if ((rc = rdev_rt_stream_create(r->rt, 0, &r->st))) {
    bl_rt_ops_close(r);
    return rt_fail("stream create", rc);
  }
  for (int p = 0; p < OPER_NPROBLEMS; p++) {
    for (int i = 0; i < 3; i++) {
      size_t n = r->bytes[p][i];
      float *host = malloc(n);
      if (!host) {
        bl_rt_ops_close(r);
        return bl_fail("runtime: cannot allocate %zu host bytes", n);
      }
      if (i < 2)
        oper_fill(host, n / sizeof(float), i);
      else
        memset(host, 0, n);
      rc = rdev_rt_malloc(r->rt, 0, &r->buf[p][i], n, RDEV_MEM_MALLOC_HUGE_FIRST);
      if (!rc) rc = rdev_rt_memcpy(r->rt, r->buf[p][i], n, host, n, RDEV_MEMCPY_HOST_TO_DEVICE);
      free(host);
      if (rc) {
        bl_rt_ops_close(r);
        return rt_fail("malloc and upload", rc);
      }
    }
    oper_call_t c;
    if (oper_call(&c, p, s, (uint64_t)(uintptr_t)r->buf[p][0], (uint64_t)(uintptr_t)r->buf[p][1],
                  (uint64_t)(uintptr_t)r->buf[p][2], r->note[p], sizeof r->note[p]))
      continue;
    if (!rdev_rt_op_offered(r->rt, oper_name(p))) {
      snprintf(r->note[p], sizeof r->note[p], "the in-process runtime (%s) does not offer aclnn%s",
               rdev_rt_backend_name(r->rt), oper_name(p));
      continue;
    }
    if ((rc = rdev_op_encode(&c.call, r->blob[p], sizeof r->blob[p], &r->blob_len[p]))) {
      bl_rt_ops_close(r);
      return bl_fail("runtime: rdev_op_encode of %s: %s (%d)", oper_name(p), rdev_strerror(rc), rc);
    }
  }
  *out = r;
  return 0;
}

int bl_rt_ops_offered(bl_rt_ops_t *r, int p, int kernel, char *note, size_t note_len) {
  if (kernel) {
    if (p == OPER_ADD && rdev_rt_kernel_offered(r->rt, "add_f32")) return 1;
    snprintf(note, note_len, "no built-in kernel for %s in the in-process runtime", oper_name(p));
    return 0;
  }
  if (r->blob_len[p]) return 1;
  snprintf(note, note_len, "%s", r->note[p]);
  return 0;
}

/* Queues problem p once (operator or kernel) on r->st. */
static int queue(bl_rt_ops_t *r, int p, int kernel) {
  int rc;
  if (kernel) {
    rdev_kernel_arg_t args[4] = {
        {.type = RDEV_ARG_PTR, .v.ptr = {r->buf[p][0], 0}},
        {.type = RDEV_ARG_PTR, .v.ptr = {r->buf[p][1], 0}},
        {.type = RDEV_ARG_PTR, .v.ptr = {r->buf[p][2], 0}},
        {.type = RDEV_ARG_U32, .v.u32 = (uint32_t)r->shape.add_n},
    };
    if ((rc = rdev_rt_launch(r->st, "add_f32", OPER_KERNEL_BLOCKS, args, 4, NULL, NULL)))
      return rt_fail("launch add_f32", rc);
    return 0;
  }
  rdev_op_call_t *c = NULL;
  char msg[256];
  if ((rc = rdev_op_decode(r->blob[p], r->blob_len[p], &c, msg, sizeof msg)))
    return bl_fail("runtime: rdev_op_decode of %s: %s (%d): %s", oper_name(p), rdev_strerror(rc), rc, msg);
  if ((rc = rdev_rt_op_launch(r->st, c))) return rt_fail(p == OPER_ADD ? "op launch Add" : "op launch Matmul", rc);
  return 0;
}

int bl_rt_ops_run(bl_rt_ops_t *r, int p, int kernel, long k, double *secs) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    if (queue(r, p, kernel)) return -1;
    int rc = rdev_rt_stream_synchronize(r->st);
    if (rc) return rt_fail("stream synchronize", rc);
  }
  *secs = now_s() - t0;
  return 0;
}

int bl_rt_ops_verify(bl_rt_ops_t *r, int p, int kernel) {
  size_t n = r->bytes[p][2];
  float *host = malloc(n);
  if (!host) return bl_fail("runtime: cannot allocate %zu host bytes", n);
  int rc = rdev_rt_memset(r->rt, r->buf[p][2], n, 0xff, n); /* NaN */
  if (rc) {
    free(host);
    return rt_fail("memset", rc);
  }
  if (queue(r, p, kernel)) {
    free(host);
    return -1;
  }
  if (!(rc = rdev_rt_stream_synchronize(r->st)))
    rc = rdev_rt_memcpy(r->rt, host, n, r->buf[p][2], n, RDEV_MEMCPY_DEVICE_TO_HOST);
  if (rc) {
    free(host);
    return rt_fail("synchronize and read back", rc);
  }
  char msg[256];
  int bad = oper_check(p, &r->shape, host, kernel ? "in-process add_f32" : "in-process operator", msg, sizeof msg);
  free(host);
  return bad ? bl_fail("%s", msg) : 0;
}

void bl_rt_ops_close(bl_rt_ops_t *r) {
  if (!r) return;
  if (r->st) rdev_rt_stream_destroy(r->st);
  for (int p = 0; p < OPER_NPROBLEMS; p++)
    for (int i = 0; i < 3; i++)
      if (r->buf[p][i]) rdev_rt_free(r->rt, r->buf[p][i]);
  rdev_rt_close(r->rt);
  free(r);
}
