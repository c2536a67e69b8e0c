/*
 * tests/bench/rdev_bench/phase_copies.c — phase 2, copies per size: rdev's
 * four ways through the C API (rdev_memcpy H2D and D2H, the headline
 * figures; k x rdev_memcpy_async + one synchronize, "-a"), the ACL
 * library's aclrtMemcpy and the Python package's d.set(a) and d.get(out=a)
 * (clients.h), against the baselines (raw TCP; bare gRPC upload and
 * download on one long-lived stream, these from one chunk on: below it they
 * measure something else than rdev's round trips; rdev_rt_memcpy
 * in-process, "rt"); and, from the headline size on (above FRESH_MIN),
 * rdev_memcpy D2H into fresh memory against a local memcpy into fresh
 * memory. Interleaved so that the VM's drift cancels in the paired ratios;
 * then every path verified byte for byte. How samples are sized and
 * ordered: main.c's header.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev_bench.h"

/* Which methods run at size n (big: the headline size). */
static int method_on(const bench_t *b, int m, size_t n, size_t big) {
  switch (m) {
    case M_TCP:
    case M_GRPC_UP:
    case M_GRPC_DOWN:
    case M_ACL_H2D:
    case M_ACL_D2H: return n >= b->chunk;
    case M_PY_H2D:
    case M_PY_D2H: return b->py && n >= b->chunk;
    case M_D2H_FRESH:
    case M_MEMCPY_FRESH: return n >= big && n > FRESH_MIN;
    default: return 1;
  }
}

/* k transfers of n bytes into a buffer malloc'd for each and freed after
 * (by rdev_memcpy D2H, or memcpy from the warm source); the seconds of the
 * copies alone. */
static double fresh_copies(bench_t *b, int rdev, size_t n, long k) {
  double secs = 0;
  for (long i = 0; i < k; i++) {
    uint8_t *p = malloc(n);
    if (!p) die("cannot allocate %zu host bytes", n);
    double t0 = now_s();
    if (rdev)
      CHECK(rdev_memcpy(b->s, p, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    else
      memcpy(p, b->src, n);
    __asm__ volatile("" : : "r"(p) : "memory"); /* the copy is not dead: p is "read" */
    secs += now_s() - t0;
    free(p);
  }
  return secs;
}

/* One sample: k transfers of n bytes; returns seconds. */
static double run_method(bench_t *b, int m, size_t n, long k) {
  double secs = 0, t0 = now_s();
  switch (m) {
    case M_H2D:
      for (long i = 0; i < k; i++) CHECK(rdev_memcpy(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
      break;
    case M_H2D_ASYNC:
      for (long i = 0; i < k; i++)
        CHECK(rdev_memcpy_async(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE, b->st));
      CHECK(rdev_stream_synchronize(b->st));
      break;
    case M_D2H:
      for (long i = 0; i < k; i++) CHECK(rdev_memcpy(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
      break;
    case M_D2H_ASYNC:
      for (long i = 0; i < k; i++)
        CHECK(rdev_memcpy_async(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST, b->st));
      CHECK(rdev_stream_synchronize(b->st));
      break;
    case M_TCP: BL(bl_tcp_move(b->tcp, b->src, b->dst, n, k, b->chunk, &secs)); return secs;
    case M_GRPC_UP: BL(bl_grpc_upload(b->grpc, b->src, n, k, b->chunk, &secs)); return secs;
    case M_GRPC_DOWN: BL(bl_grpc_download(b->grpc, b->dst, n, k, b->chunk, &secs)); return secs;
    case M_ACL_H2D: CL(cl_acl_copy(b->acl, 1, n, k, &secs)); return secs;
    case M_ACL_D2H: CL(cl_acl_copy(b->acl, 0, n, k, &secs)); return secs;
    case M_PY_H2D: CL(cl_py_copy(b->py, 1, n, k, &secs)); return secs;
    case M_PY_D2H: CL(cl_py_copy(b->py, 0, n, k, &secs)); return secs;
    case M_D2H_FRESH: return fresh_copies(b, 1, n, k);
    case M_MEMCPY_FRESH: return fresh_copies(b, 0, n, k);
    case M_RT_H2D: BL(bl_rt_copy(b->rt, 1, b->src, n, k, &secs)); return secs;
    case M_RT_D2H: BL(bl_rt_copy(b->rt, 0, b->dst, n, k, &secs)); return secs;
    default: break;
  }
  return now_s() - t0;
}

/* Doubles k until a sample takes a quarter of the target (seconds), then scales;
 * *est gets the expected seconds of a sample with the k returned. A first
 * untimed transfer warms the path up: timed cold, a 64 MiB raw TCP
 * transfer took long enough to leave k at 1, samples of ~15 ms. */
static long calibrate(bench_t *b, int m, size_t n, double target, double *est) {
  long k = 1;
  double t;
  run_method(b, m, n, 1);
  for (;;) {
    t = run_method(b, m, n, k);
    if (t >= target / 4 || k >= KMAX) break;
    k *= t < target / 64 ? 8 : 2;
  }
  double per = (t > 1e-9 ? t : 1e-9) / (double)k;
  double kk = target / per;
  long kr = kk < 1 ? 1 : kk > KMAX ? KMAX : (long)kk;
  *est = per * (double)kr;
  return kr;
}

/* Byte-for-byte checks of every path that ran at size n (k: which). */
static void verify_size(bench_t *b, size_t n, const long *k, uint64_t seed) {
  char what[96], lbl[32];
  size_label(n, lbl, sizeof lbl);
  /* rdev sync */
  CHECK(rdev_memset(b->s, b->dev, n, 0xa5, n));
  CHECK(rdev_memcpy(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  memset(b->dst, 0x5a, n);
  CHECK(rdev_memcpy(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  snprintf(what, sizeof what, "rdev sync H2D+D2H of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  /* rdev sync D2H into fresh memory (the device holds src), and its baseline */
  if (k[M_D2H_FRESH]) {
    uint8_t *p = malloc(n);
    if (!p) die("cannot allocate %zu host bytes", n);
    CHECK(rdev_memcpy(b->s, p, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    snprintf(what, sizeof what, "rdev sync D2H of %s into fresh memory", lbl);
    expect_same(b->src, p, n, what);
    free(p);
    p = malloc(n);
    if (!p) die("cannot allocate %zu host bytes", n);
    memcpy(p, b->src, n);
    snprintf(what, sizeof what, "memcpy of %s into fresh memory", lbl);
    expect_same(b->src, p, n, what);
    free(p);
  }
  /* rdev async */
  CHECK(rdev_memset(b->s, b->dev, n, 0xa5, n));
  memset(b->dst, 0x5a, n);
  CHECK(rdev_memcpy_async(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE, b->st));
  CHECK(rdev_memcpy_async(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST, b->st));
  CHECK(rdev_stream_synchronize(b->st));
  snprintf(what, sizeof what, "rdev async H2D+D2H of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  /* the other clients (each checks its own bytes) */
  if (k[M_ACL_H2D]) CL(cl_acl_verify(b->acl, n, seed));
  if (k[M_PY_H2D]) CL(cl_py_verify(b->py, n));
  /* baselines */
  double secs;
  memset(b->dst, 0x5a, n);
  BL(bl_rt_copy(b->rt, 1, b->src, n, 1, &secs));
  BL(bl_rt_copy(b->rt, 0, b->dst, n, 1, &secs));
  snprintf(what, sizeof what, "in-process runtime H2D+D2H of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  if (n < b->chunk) return;
  memset(b->dst, 0x5a, n);
  BL(bl_tcp_move(b->tcp, b->src, b->dst, n, 1, b->chunk, &secs));
  snprintf(what, sizeof what, "raw TCP of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  memset(b->dst, 0x5a, n);
  BL(bl_grpc_upload(b->grpc, b->src, n, 1, b->chunk, &secs)); /* lands at dst[0..n) */
  snprintf(what, sizeof what, "bare gRPC upload of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  memset(b->dst, 0x5a, n);
  BL(bl_grpc_download(b->grpc, b->dst, n, 1, b->chunk, &secs));
  snprintf(what, sizeof what, "bare gRPC download of %s", lbl);
  expect_same(b->src, b->dst, n, what);
}

/* numerator / denominator of each paired ratio (R_*) */
static const struct {
  int num, den;
} kRatios[NR] = {
    [R_H2D_TCP] = {M_H2D, M_TCP},
    [R_D2H_TCP] = {M_D2H, M_TCP},
    [R_H2D_GRPC] = {M_H2D, M_GRPC_UP},
    [R_D2H_GRPC] = {M_D2H, M_GRPC_DOWN},
    [R_H2DA_TCP] = {M_H2D_ASYNC, M_TCP},
    [R_D2HA_TCP] = {M_D2H_ASYNC, M_TCP},
    [R_H2DA_GRPC] = {M_H2D_ASYNC, M_GRPC_UP},
    [R_D2HA_GRPC] = {M_D2H_ASYNC, M_GRPC_DOWN},
    [R_ACL_H2D_TCP] = {M_ACL_H2D, M_TCP},
    [R_ACL_D2H_TCP] = {M_ACL_D2H, M_TCP},
    [R_PY_H2D_TCP] = {M_PY_H2D, M_TCP},
    [R_PY_D2H_TCP] = {M_PY_D2H, M_TCP},
    [R_FRESH_MEMCPY] = {M_D2H_FRESH, M_MEMCPY_FRESH},
};

/* Per-rep paired ratios of sizes >= the headline size, pooled. */
typedef struct {
  double v[MAX_SIZES * MAX_REPS];
  int n;
} pool_t;

static void pool_add(pool_t *p, double x) {
  if (p->n < MAX_SIZES * MAX_REPS && isfinite(x)) p->v[p->n++] = x;
}

copies_result_t phase_copies(bench_t *b, size_t big, void (*on_row)(const bench_t *, const size_row_t *)) {
  const cfg_t *c = b->cfg;
  copies_result_t out;
  memset(&out, 0, sizeof out);
  pool_t *pools = calloc(NR + NM, sizeof *pools); /* the ratios, then each method's GB/s */
  if (!pools) die("out of memory");
  for (int si = 0; si < c->nsizes; si++) {
    size_t n = c->sizes[si];
    int at_big = n >= big;
    double sample_s = at_big ? c->big_sample_s : c->sample_s;
    fill_pattern(b->src, n, 1000 + (uint64_t)si);
    long k[NM];
    double rep_s = 0, est;
    for (int m = 0; m < NM; m++) {
      k[m] = method_on(b, m, n, big) ? calibrate(b, m, n, sample_s, &est) : 0;
      if (k[m]) rep_s += est;
    }
    int reps = at_big ? c->big_reps : c->reps;
    double budget = at_big ? c->big_budget_s : c->size_budget_s;
    while (reps > 3 && reps * rep_s > budget) reps--; /* slow sizes: fewer reps */
    double g[NM][MAX_REPS];
    double rt[NR][MAX_REPS];
    /* The order of each rep, as main.c's header says; fixed seeds, so that
     * runs repeat. */
    uint64_t rng = 0x5eed0000u + (uint64_t)si;
    int lead[NM], nlead = 0;
    for (int m = 0; m < M_RT_H2D; m++)
      if (k[m]) lead[nlead++] = m;
    shuffle(lead, nlead, &rng);
    for (int r = 0; r < reps; r++) {
      int order[NM], n_on = 0;
      for (int m = 0; m < NM; m++)
        if (!k[m]) g[m][r] = NAN;
      order[n_on++] = lead[r % nlead];
      for (int m = 0; m < M_RT_H2D; m++)
        if (k[m] && m != order[0]) order[n_on++] = m;
      shuffle(order + 1, n_on - 1, &rng);
      for (int i = 0; i < 2; i++) {
        int m = (i + r) % 2 ? M_RT_D2H : M_RT_H2D;
        if (k[m]) order[n_on++] = m;
      }
      for (int mi = 0; mi < n_on; mi++) {
        int m = order[mi];
        double t = run_method(b, m, n, k[m]);
        g[m][r] = (double)n * (double)k[m] / t / 1e9;
      }
      for (int i = 0; i < NR; i++) rt[i][r] = g[kRatios[i].num][r] / g[kRatios[i].den][r];
      if (at_big) {
        for (int i = 0; i < NR; i++) pool_add(&pools[i], rt[i][r]);
        for (int m = 0; m < NM; m++) pool_add(&pools[NR + m], g[m][r]);
      }
    }
    verify_size(b, n, k, 1000 + (uint64_t)si);
    size_row_t *row = &out.rows[out.nrows++];
    row->size = n;
    row->reps = reps;
    for (int m = 0; m < NM; m++) row->gbps[m] = k[m] ? median(g[m], reps) : NAN;
    for (int i = 0; i < NR; i++) row->ratio[i] = k[kRatios[i].num] && k[kRatios[i].den] ? median(rt[i], reps) : NAN;
    if (on_row) on_row(b, row);
  }
  for (int i = 0; i < NR; i++) out.pr[i] = median(pools[i].v, pools[i].n);
  for (int m = 0; m < NM; m++) out.pg[m] = median(pools[NR + m].v, pools[NR + m].n);
  free(pools);
  return out;
}
