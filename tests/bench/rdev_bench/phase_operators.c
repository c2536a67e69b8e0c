/*
 * tests/bench/rdev_bench/phase_operators.c — phase 7, operators: Add of two
 * float32 vectors into a third and Matmul of two float32 matrices into a
 * third (oper.h's problem, the same inputs for every method), each timed
 * as launch + synchronize with the data already on the device, through
 * the in-process runtime (the baseline: what the device itself takes; its
 * own sim, baseline_rt_ops.c), the C API (rdev_op_launch on the main
 * session, here), the ACL library's aclnn (client_aclnn.c) and the Python
 * package's rdev.ops (client_py.c); Add also as the sim's built-in kernel
 * add_f32, remote (rdev_launch, here) and in-process. Each method runs
 * once first: one that is not offered (an operator this build's table
 * lacks, one rdevd's backend answers RDEV_UNKNOWN_KERNEL to, no Python
 * package or no rdev.ops) gets a note and no figures. Per problem, every
 * sample is k pairs (k from the method's baseline's first run, so that a
 * sample takes about the configuration's sample time; a method and its
 * baseline do the same number), the methods interleaved
 * in a random order in each rep; fewer reps (down to 3) when they would
 * take longer than the budget. After the reps every method that ran is
 * run once more onto an output set to NaN, read back and checked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev_bench.h"

typedef struct {
  bench_t *b;
  oper_shape_t shape;
  bl_rt_ops_t *rt;
  cl_aclnn_t *acl;
  int py_ops; /* the child has rdev.ops and its arrays */
  char py_note[256];
  /* the C API's: device buffers (self, other, out) and calls */
  void *buf[OPER_NPROBLEMS][3];
  size_t bytes[OPER_NPROBLEMS][3];
  oper_call_t call[OPER_NPROBLEMS];
  char call_note[OPER_NPROBLEMS][256]; /* empty: the call was built */
} octx_t;

oper_shape_t opers_shape(const cfg_t *c) {
  return (oper_shape_t){.add_n = c->oper_add_bytes / sizeof(float),
                        .mm_m = c->oper_mm_dim,
                        .mm_k = c->oper_mm_dim,
                        .mm_n = c->oper_mm_dim};
}

static int applies(int p, int m) { return m < OM_KERNEL || p == OPER_ADD; }
static int baseline_of(int m) { return m == OM_KERNEL || m == OM_RT_KERNEL ? OM_RT_KERNEL : OM_RT; }

/* ---- the C API ---- */

static void capi_open(octx_t *x) {
  bench_t *b = x->b;
  const oper_shape_t *s = &x->shape;
  size_t add = s->add_n * sizeof(float);
  size_t mm[3] = {(size_t)(s->mm_m * s->mm_k) * sizeof(float), (size_t)(s->mm_k * s->mm_n) * sizeof(float),
                  (size_t)(s->mm_m * s->mm_n) * sizeof(float)};
  for (int p = 0; p < OPER_NPROBLEMS; p++) {
    for (int i = 0; i < 3; i++) {
      size_t n = x->bytes[p][i] = p == OPER_ADD ? add : mm[i];
      float *host = malloc(n);
      if (!host) die("cannot allocate %zu host bytes", n);
      if (i < 2)
        oper_fill(host, n / sizeof(float), i);
      else
        memset(host, 0, n);
      CHECK(rdev_malloc(b->s, &x->buf[p][i], n, RDEV_MEM_MALLOC_HUGE_FIRST));
      CHECK(rdev_memcpy(b->s, x->buf[p][i], n, host, n, RDEV_MEMCPY_HOST_TO_DEVICE));
      free(host);
    }
    oper_call(&x->call[p], p, s, (uint64_t)(uintptr_t)x->buf[p][0], (uint64_t)(uintptr_t)x->buf[p][1],
              (uint64_t)(uintptr_t)x->buf[p][2], x->call_note[p], sizeof x->call_note[p]);
  }
}

static void capi_close(octx_t *x) {
  for (int p = 0; p < OPER_NPROBLEMS; p++)
    for (int i = 0; i < 3; i++) CHECK(rdev_free(x->b->s, x->buf[p][i]));
}

/* Queues problem p once on the main stream: the operator, or (kernel) add_f32. */
static void capi_queue(octx_t *x, int p, int kernel) {
  if (kernel) {
    rdev_arg_t args[4] = {
        {.type = RDEV_ARG_PTR, .v.ptr = x->buf[p][0]},
        {.type = RDEV_ARG_PTR, .v.ptr = x->buf[p][1]},
        {.type = RDEV_ARG_PTR, .v.ptr = x->buf[p][2]},
        {.type = RDEV_ARG_U32, .v.u32 = (uint32_t)x->shape.add_n},
    };
    CHECK(rdev_launch(x->b->st, "add_f32", OPER_KERNEL_BLOCKS, args, 4));
  } else {
    CHECK(rdev_op_launch(x->b->st, &x->call[p].call));
  }
}

static void capi_run(octx_t *x, int p, int kernel, long k, double *secs) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    capi_queue(x, p, kernel);
    CHECK(rdev_stream_synchronize(x->b->st));
  }
  *secs = now_s() - t0;
}

/* 1 when it ran once; 0 with a note when it is not offered. */
static int capi_probe(octx_t *x, int p, int kernel, char *note, size_t len) {
  if (!kernel && x->call_note[p][0]) {
    snprintf(note, len, "%s", x->call_note[p]);
    return 0;
  }
  capi_queue(x, p, kernel);
  int rc = rdev_stream_synchronize(x->b->st);
  if (rc == RDEV_UNKNOWN_KERNEL) {
    snprintf(note, len, "rdevd does not offer %s%s (%s)", kernel ? "the kernel " : "aclnn",
             kernel ? "add_f32" : oper_name(p), rdev_session_last_error());
    return 0;
  }
  if (rc) check_fail("rdev_stream_synchronize after the first launch", rc, __LINE__);
  return 1;
}

static void capi_verify(octx_t *x, int p, int kernel) {
  size_t n = x->bytes[p][2];
  float *host = malloc(n);
  if (!host) die("cannot allocate %zu host bytes", n);
  CHECK(rdev_memset(x->b->s, x->buf[p][2], n, 0xff, n)); /* NaN */
  capi_queue(x, p, kernel);
  CHECK(rdev_stream_synchronize(x->b->st));
  CHECK(rdev_memcpy(x->b->s, host, n, x->buf[p][2], n, RDEV_MEMCPY_DEVICE_TO_HOST));
  char msg[256];
  if (oper_check(p, &x->shape, host, kernel ? "add_f32 through rdev_launch" : "rdev_op_launch", msg, sizeof msg))
    die("%s", msg);
  free(host);
}

/* ---- every method ---- */

/* 1 when method m of problem p ran once; 0 with a note when it is not offered. */
static int probe(octx_t *x, int p, int m, char *note, size_t len) {
  int r;
  switch (m) {
    case OM_RT:
    case OM_RT_KERNEL: {
      int kernel = m == OM_RT_KERNEL;
      if (!bl_rt_ops_offered(x->rt, p, kernel, note, len)) return 0;
      double secs;
      BL(bl_rt_ops_run(x->rt, p, kernel, 1, &secs));
      return 1;
    }
    case OM_OP: return capi_probe(x, p, 0, note, len);
    case OM_KERNEL: return capi_probe(x, p, 1, note, len);
    case OM_ACL: CL((r = cl_aclnn_probe(x->acl, p, note, len)) < 0); return r;
    case OM_PY:
      if (!x->b->py) {
        snprintf(note, len, "no Python package: %.200s", x->b->py_note);
        return 0;
      }
      if (!x->py_ops) {
        snprintf(note, len, "%s", x->py_note);
        return 0;
      }
      CL((r = cl_py_op_probe(x->b->py, p, note, len)) < 0);
      return r;
  }
  return 0;
}

static double run(octx_t *x, int p, int m, long k) {
  double secs = NAN;
  switch (m) {
    case OM_RT: BL(bl_rt_ops_run(x->rt, p, 0, k, &secs)); break;
    case OM_RT_KERNEL: BL(bl_rt_ops_run(x->rt, p, 1, k, &secs)); break;
    case OM_OP: capi_run(x, p, 0, k, &secs); break;
    case OM_KERNEL: capi_run(x, p, 1, k, &secs); break;
    case OM_ACL: CL(cl_aclnn_run(x->acl, p, k, &secs)); break;
    case OM_PY: CL(cl_py_op_run(x->b->py, p, k, &secs)); break;
  }
  return secs;
}

static void verify(octx_t *x, int p, int m) {
  switch (m) {
    case OM_RT: BL(bl_rt_ops_verify(x->rt, p, 0)); break;
    case OM_RT_KERNEL: BL(bl_rt_ops_verify(x->rt, p, 1)); break;
    case OM_OP: capi_verify(x, p, 0); break;
    case OM_KERNEL: capi_verify(x, p, 1); break;
    case OM_ACL: CL(cl_aclnn_verify(x->acl, p)); break;
    case OM_PY: CL(cl_py_op_verify(x->b->py, p)); break;
  }
}

static oper_row_t measure(octx_t *x, int p) {
  const cfg_t *c = x->b->cfg;
  oper_row_t row;
  memset(&row, 0, sizeof row);
  int ms[NOM], nm = 0;
  double est[NOM], slowest = 0;
  for (int m = 0; m < NOM; m++) {
    row.ms[m] = row.ratio[m] = NAN;
    if (!applies(p, m)) continue;
    double t0 = now_s();
    row.ran[m] = probe(x, p, m, row.note[m], sizeof row.note[m]);
    if (!row.ran[m]) continue;
    ms[nm++] = m;
    /* the calibration: the first run's time where it is long (a sample
     * is then one pair), else one run more (short ones: the best of 3) */
    est[m] = now_s() - t0;
    if (est[m] < c->oper_sample_s) est[m] = run(x, p, m, 1);
    for (int i = 0; i < 2 && est[m] < c->oper_sample_s / 4; i++) {
      double again = run(x, p, m, 1);
      if (again < est[m]) est[m] = again;
    }
    if (est[m] > slowest) slowest = est[m];
  }
  if (!nm) return row;
  /* k per baseline: the operators' from OM_RT's first run, the kernels'
   * from OM_RT_KERNEL's (where a baseline did not run, the slowest). */
  long k[NOM];
  double rep_s = 0;
  for (int i = 0; i < nm; i++) {
    int m = ms[i], base = baseline_of(m);
    double unit = row.ran[base] ? est[base] : slowest;
    k[m] = (long)ceil(c->oper_sample_s / unit);
    if (k[m] < 1) k[m] = 1;
    rep_s += (double)k[m] * est[m];
  }
  row.k = row.ran[OM_RT] ? k[OM_RT] : 0;
  row.k_kernel = row.ran[OM_RT_KERNEL] ? k[OM_RT_KERNEL] : 0;
  row.reps = c->oper_reps;
  while (row.reps > 3 && row.reps * rep_s > c->oper_budget_s) row.reps--;
  double t[NOM][MAX_REPS], v[MAX_REPS];
  uint64_t rng = 0x0be7a7035u + (uint64_t)p;
  for (int r = 0; r < row.reps; r++) {
    int order[NOM];
    memcpy(order, ms, sizeof order);
    shuffle(order, nm, &rng);
    for (int i = 0; i < nm; i++) {
      int m = order[i];
      /* untimed first: after another method this one's data is cold in
       * the caches (the methods' buffers are apart: the in-process sim's,
       * the C API's, aclnn's, Python's), and its first runs measure the
       * switch (up to 2.5x a run here), not the method */
      run(x, p, m, (k[m] + 7) / 8);
      t[m][r] = run(x, p, m, k[m]) / (double)k[m];
    }
  }
  for (int i = 0; i < nm; i++) {
    int m = ms[i], base = baseline_of(m);
    memcpy(v, t[m], sizeof(double) * (size_t)row.reps);
    row.ms[m] = median(v, row.reps) * 1e3;
    if (m == base || !row.ran[base]) continue;
    for (int r = 0; r < row.reps; r++) v[r] = t[m][r] / t[base][r];
    row.ratio[m] = median(v, row.reps);
  }
  for (int i = 0; i < nm; i++) verify(x, p, ms[i]);
  return row;
}

opers_result_t phase_opers(bench_t *b) {
  opers_result_t res;
  memset(&res, 0, sizeof res);
  octx_t x;
  memset(&x, 0, sizeof x);
  x.b = b;
  x.shape = res.shape = opers_shape(b->cfg);
  BL(bl_rt_ops_open(&x.rt, &x.shape));
  capi_open(&x);
  CL(cl_aclnn_open(&x.acl, &x.shape));
  if (b->py) {
    int r;
    CL((r = cl_py_ops_open(b->py, &x.shape, x.py_note, sizeof x.py_note)) < 0);
    x.py_ops = r;
  }
  for (int p = 0; p < OPER_NPROBLEMS; p++) res.row[p] = measure(&x, p);
  CL(cl_aclnn_close(x.acl));
  capi_close(&x);
  bl_rt_ops_close(x.rt);
  return res;
}
