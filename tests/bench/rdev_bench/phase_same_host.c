/*
 * tests/bench/rdev_bench/phase_same_host.c — phase 6, the same-host fast
 * path (own rdevd only): a second rdevd listening on a unix socket in a
 * fresh temporary folder, a session opened on it (its bulk connection,
 * PATH.bulk, attached before the open returns: rdev_session_bulk must be 1,
 * else the bench dies), host memory from rdev_malloc_host (a memfd shared
 * with rdevd), so that sync rdev_memcpy H2D and D2H of the headline size
 * carry no bytes over any socket: rdevd copies between the device and that
 * memory itself. The baseline is a local memcpy of the same size between
 * two warm host buffers of this process (b->src to b->dst), measured in the
 * same reps. Each rep runs the three interleaved (H2D always before D2H,
 * memcpy first, between or last in turn), each sample calibrated like the
 * copies' from the headline size on; the source holds a new pattern each
 * rep and the D2H destination is set to other bytes first, so that every
 * rep checks H2D and D2H byte for byte. same_host_vs_memcpy is the median
 * over reps of min(h2d, d2h) / memcpy of the same rep.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdev_bench.h"
#include "rdevd.h"

enum { S_H2D, S_D2H, S_MEMCPY, NS };

typedef struct {
  rdev_session_t *s;
  void *dev;
  uint8_t *hsrc, *hdst; /* rdev_malloc_host: shared with the second rdevd */
  uint8_t *msrc, *mdst; /* the memcpy baseline's buffers (b->src, b->dst) */
  size_t n;
} sh_t;

/* One sample: k transfers of n bytes; returns seconds. */
static double sh_run(const sh_t *x, int m, long k) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    if (m == S_H2D) {
      CHECK(rdev_memcpy(x->s, x->dev, x->n, x->hsrc, x->n, RDEV_MEMCPY_HOST_TO_DEVICE));
    } else if (m == S_D2H) {
      CHECK(rdev_memcpy(x->s, x->hdst, x->n, x->dev, x->n, RDEV_MEMCPY_DEVICE_TO_HOST));
    } else {
      memcpy(x->mdst, x->msrc, x->n);
      __asm__ volatile("" : : "r"(x->mdst) : "memory"); /* the copy is not dead: mdst is "read" */
    }
  }
  return now_s() - t0;
}

/* k so that a sample takes about target seconds (as phase_copies
 * calibrates); *est: the expected seconds of that sample. */
static long sh_calibrate(const sh_t *x, int m, double target, double *est) {
  long k = 1;
  double t;
  for (;;) {
    t = sh_run(x, m, k);
    if (t >= target / 4 || k >= KMAX) break;
    k *= t < target / 64 ? 8 : 2;
  }
  double per = (t > 1e-9 ? t : 1e-9) / (double)k;
  double kk = target / per;
  long kr = kk < 1 ? 1 : kk > KMAX ? KMAX : (long)kk;
  *est = per * (double)kr;
  return kr;
}

/* Removes the folder dir and what the rdevd that listened on sock left in
 * it (a clean exit removes its sockets; a killed one does not). */
static void remove_dir(const char *dir, const char *sock) {
  char bulk[160];
  snprintf(bulk, sizeof bulk, "%s.bulk", sock);
  unlink(bulk);
  unlink(sock);
  if (rmdir(dir)) fprintf(stderr, "rdev_bench: same-host: cannot remove %s: %s\n", dir, strerror(errno));
}

same_host_result_t phase_same_host(bench_t *b, size_t big) {
  const cfg_t *c = b->cfg;
  same_host_result_t out = {0};
  out.size = big;

  /* the second rdevd, on a unix socket of its own */
  char rdevd[PATH_MAX], dir[] = "/tmp/rdev_bench.XXXXXX", listen[256], addr[sizeof b->cfg->addr], sock[128];
  if (c->rdevd)
    snprintf(rdevd, sizeof rdevd, "%s", c->rdevd);
  else
    rdevd_default_path(rdevd, sizeof rdevd);
  if (!mkdtemp(dir)) die("same-host: mkdtemp %s: %s", dir, strerror(errno));
  snprintf(sock, sizeof sock, "%s/rdevd.sock", dir);
  snprintf(listen, sizeof listen, "unix:%s", sock);
  size_t arena = big + 64 * MiB;
  if (arena < 256 * MiB) arena = 256 * MiB;
  pid_t pid = rdevd_start(rdevd, listen, NULL, arena, addr, sizeof addr);
  out.pid = pid;
  snprintf(out.addr, sizeof out.addr, "%s", addr);

  sh_t x = {.n = big, .msrc = b->src, .mdst = b->dst};
  int rc = rdev_session_open(addr, NULL, &x.s);
  if (rc) check_fail("rdev_session_open (same-host rdevd)", rc, __LINE__);
  int bulk = rdev_session_bulk(x.s);
  if (bulk != 1) {
    rdev_session_close(x.s);
    rdevd_stop_one(pid);
    remove_dir(dir, sock);
    die("same-host: a session opened on %s has no bulk connection (rdev_session_bulk is %d): rdevd should offer "
        "%s.bulk and the client attach it before rdev_session_open returns; a bug",
        addr, bulk, sock);
  }
  CHECK(rdev_malloc_host(x.s, (void **)&x.hsrc, big));
  CHECK(rdev_malloc_host(x.s, (void **)&x.hdst, big));
  CHECK(rdev_malloc(x.s, &x.dev, big, RDEV_MEM_MALLOC_HUGE_FIRST));
  fill_pattern(x.hsrc, big, 6000);
  memset(x.hdst, 0x5a, big);
  /* warm up: every path once, checked */
  sh_run(&x, S_H2D, 1);
  sh_run(&x, S_D2H, 1);
  sh_run(&x, S_MEMCPY, 1);
  expect_same(x.hsrc, x.hdst, big, "same-host H2D+D2H (warm-up)");
  expect_same(x.msrc, x.mdst, big, "same-host baseline memcpy (warm-up)");

  long k[NS];
  double rep_s = 0, est;
  for (int m = 0; m < NS; m++) {
    k[m] = sh_calibrate(&x, m, c->big_sample_s, &est);
    rep_s += est;
  }
  int reps = c->big_reps;
  while (reps > 3 && reps * rep_s > c->big_budget_s) reps--; /* as phase_copies' slow sizes */
  out.reps = reps;

  /* H2D before D2H in every rep (D2H reads back what this rep's H2D wrote);
   * memcpy first, between or last in turn. */
  static const int kOrders[3][NS] = {{S_H2D, S_D2H, S_MEMCPY}, {S_MEMCPY, S_H2D, S_D2H}, {S_H2D, S_MEMCPY, S_D2H}};
  double g[NS][MAX_REPS], ratio[MAX_REPS];
  for (int r = 0; r < reps; r++) {
    fill_pattern(x.hsrc, big, 6001 + (uint64_t)r);
    memset(x.hdst, 0x5a, big);
    for (int i = 0; i < NS; i++) {
      int m = kOrders[r % 3][i];
      g[m][r] = (double)big * (double)k[m] / sh_run(&x, m, k[m]) / 1e9;
    }
    char what[96];
    snprintf(what, sizeof what, "same-host H2D+D2H of rep %d", r + 1);
    expect_same(x.hsrc, x.hdst, big, what);
    double lo = g[S_H2D][r] < g[S_D2H][r] ? g[S_H2D][r] : g[S_D2H][r];
    ratio[r] = lo / g[S_MEMCPY][r];
  }
  expect_same(x.msrc, x.mdst, big, "same-host baseline memcpy");
  out.h2d_gbps = median(g[S_H2D], reps);
  out.d2h_gbps = median(g[S_D2H], reps);
  out.memcpy_gbps = median(g[S_MEMCPY], reps);
  out.ratio = median(ratio, reps);
  out.measured = 1;

  CHECK(rdev_free(x.s, x.dev));
  CHECK(rdev_free_host(x.s, x.hdst));
  CHECK(rdev_free_host(x.s, x.hsrc));
  rdev_session_close(x.s);
  out.server_bad = rdevd_stop_one(pid);
  remove_dir(dir, sock);
  return out;
}
