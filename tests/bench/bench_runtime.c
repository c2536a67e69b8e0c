/*
 * tests/bench/bench_runtime.c — throughput and latency benchmark of the
 * device runtime (rdev/runtime.h) on the in-process sim backend. This file
 * owns the benchmark only; it links rdev_runtime and changes nothing in it.
 *
 * Usage: bench_runtime [--quick]
 *   default   sizes 4 KiB .. 256 MiB, ~0.4 s per measured cell (~40 s in all)
 *   --quick   sizes 4 KiB .. 16 MiB, short cells and op counts (< 10 s; CI smoke)
 * Exit status: 0 on success; 1 when any runtime call fails or a copy's
 * result is wrong (the failing call and rdev_rt_last_error() go to stderr).
 * Missing a target is reported, not an error.
 *
 * What is measured (times from clock_gettime(CLOCK_MONOTONIC); 1 GB = 1e9 B):
 * 1. Copies, per size and direction (H2D host->device, D2H, D2D). Host side:
 *    rdev_rt_malloc_host buffers; device side: rdev_rt_malloc buffers; all
 *    pages touched before timing. One sample is a batch of k copies:
 *      async  = k x rdev_rt_memcpy_async on one stream, then one
 *               rdev_rt_stream_synchronize (the time includes the sync);
 *      sync   = k x rdev_rt_memcpy;
 *      memcpy = k x libc memcpy between the very same two buffers (the sim
 *               backend's device addresses are host memory, so this is the
 *               cost of the bytes alone; only valid on "sim").
 *    k is chosen per method (at least 32 MiB per batch) so that a cell (all
 *    samples of one method) takes ~0.4 s (--quick: 0.03 s); samples of the
 *    three methods are interleaved, and each GB/s column is the median over
 *    the samples (5..11, --quick 3..5; "reps" column). ratio = runtime speed
 *    / memcpy speed, as the median over reps of the ratio of each runtime
 *    sample to the memcpy sample of the same rep (taken next to it, so the
 *    VM's slow drifts cancel): 1.00 means no runtime overhead. Small sizes
 *    are dominated by per-call overhead, so their ratios are expected to be
 *    low. On a noisy VM expect +-10..30% between runs at big sizes; the
 *    sync/memcpy ratios (ideally 1.00) show the noise floor of a run.
 * 2. Small-op rate: N async ops on one stream then one synchronize;
 *    ops/s = N / (submit + sync time). Done for 64-byte memsets, 4-byte H2D
 *    copies and write_i32 launches (blocks=1, print_fn NULL). "submit" is the
 *    part of the time spent before the synchronize call.
 * 3. Latency: rdev_rt_stream_synchronize on an idle stream, each call timed
 *    alone (median, p99, max in microseconds); and the round trip of one
 *    64-byte memset_async + synchronize on an idle stream.
 *
 * The last line of output is one machine-readable summary of key=value
 * pairs: copy_vs_memcpy_min (min async ratio over sizes >= 4 MiB and all
 * three directions) and copy_vs_memcpy_median (their median), ops_per_s (64-byte memset rate), idle_sync_us and
 * idle_sync_p99_us, then further figures; targets_met=1 when copies >= 4 MiB
 * reach 0.9x memcpy, ops_per_s >= 500000 and idle_sync_us < 20.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdev/runtime.h"

/* ---- helpers --------------------------------------------------------------- */

static void fail_call(const char *what, int rc, const char *file, int line) {
  char detail[256];
  snprintf(detail, sizeof detail, "%s", rdev_rt_last_error());
  fprintf(stderr, "bench_runtime: %s:%d: %s failed: %s (%d, %s)%s%s\n", file, line, what, rdev_status_name(rc), rc,
          rdev_strerror(rc), detail[0] ? ": " : "", detail);
  exit(1);
}

#define CHECK(call) \
  do { \
    int check_rc_ = (call); \
    if (check_rc_ != RDEV_OK) fail_call(#call, check_rc_, __FILE__, __LINE__); \
  } while (0)

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Through a volatile pointer so the compiler cannot merge or drop the
 * repeated identical copies of a batch. */
static void *(*volatile plain_memcpy)(void *, const void *, size_t) = memcpy;

/* ---- configuration ----------------------------------------------------------- */

typedef struct {
  int quick;
  double cell_s; /* target time of one (size, direction, method) cell */
  int max_reps, min_reps;
  long small_ops;  /* N of the small-op rate runs */
  long sync_calls; /* idle synchronize samples */
  long rtt_calls;  /* round-trip samples */
} bench_cfg_t;

static const size_t kSizes[] = {4u << 10, 64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20};
#define NSIZES ((int)(sizeof kSizes / sizeof kSizes[0]))
#define BIG_SIZE ((size_t)4 << 20) /* the targets apply from this size on */
#define MIN_BATCH_BYTES ((size_t)32 << 20)

enum { DIR_H2D, DIR_D2H, DIR_D2D, NDIRS };
enum { M_ASYNC, M_SYNC, M_MEMCPY, NMETHODS };
static const char *const kDirKey[NDIRS] = {"h2d", "d2h", "d2d"};

typedef struct {
  rdev_rt_t *rt;
  rdev_rt_stream_t *s;
  void *host_a, *host_b; /* host buffers (H2D source, D2H destination) */
  void *dev_x, *dev_y;   /* device buffers */
} bench_t;

typedef struct {
  void *dst;
  const void *src;
  size_t n;
  rdev_memcpy_kind_t kind;
  void *hdst;       /* the same memory as host addresses (the sim's host view), */
  const void *hsrc; /* for the plain memcpy baseline */
} copy_case_t;

/* The host address of p: p itself, or the sim's view of device memory. */
static const void *host_of(const bench_t *b, const void *p, size_t n) {
  const void *v = rdev_rt_host_view(b->rt, p, n);
  return v ? v : p;
}

static copy_case_t copy_case(const bench_t *b, int dir, size_t n) {
  copy_case_t c = {.n = n};
  switch (dir) {
    case DIR_H2D:
      c.dst = b->dev_x;
      c.src = b->host_a;
      c.kind = RDEV_MEMCPY_HOST_TO_DEVICE;
      break;
    case DIR_D2H:
      c.dst = b->host_b;
      c.src = b->dev_x;
      c.kind = RDEV_MEMCPY_DEVICE_TO_HOST;
      break;
    default:
      c.dst = b->dev_y;
      c.src = b->dev_x;
      c.kind = RDEV_MEMCPY_DEVICE_TO_DEVICE;
      break;
  }
  c.hdst = (void *)host_of(b, c.dst, n);
  c.hsrc = host_of(b, c.src, n);
  return c;
}

/* Seconds per copy over a batch of k copies by method m. */
static double run_batch(const bench_t *b, const copy_case_t *c, int m, long k) {
  uint64_t t0 = now_ns();
  switch (m) {
    case M_ASYNC:
      for (long i = 0; i < k; i++) CHECK(rdev_rt_memcpy_async(b->rt, c->dst, c->n, c->src, c->n, c->kind, b->s));
      CHECK(rdev_rt_stream_synchronize(b->s));
      break;
    case M_SYNC:
      for (long i = 0; i < k; i++) CHECK(rdev_rt_memcpy(b->rt, c->dst, c->n, c->src, c->n, c->kind));
      break;
    default:
      for (long i = 0; i < k; i++) plain_memcpy(c->hdst, c->hsrc, c->n);
      break;
  }
  return (double)(now_ns() - t0) / 1e9 / (double)k;
}

/* Estimated seconds per copy: doubles the batch from kmin until it takes
 * >= 2 ms, then runs that batch once more and keeps the faster of the two,
 * so one stall of the VM cannot shrink k to a latency measurement. */
static double calibrate(const bench_t *b, const copy_case_t *c, int m, long kmin) {
  long k = kmin;
  for (;;) {
    double per = run_batch(b, c, m, k);
    if (per * (double)k >= 2e-3 || k >= (1L << 22)) {
      double again = run_batch(b, c, m, k);
      return again < per ? again : per;
    }
    k *= 2;
  }
}

typedef struct {
  double gbps[NMETHODS];  /* median over the samples */
  double ratio[NMETHODS]; /* median over reps of memcpy time / method time, same rep */
  int reps;
} cell_t;

static void bench_copy(const bench_t *b, const bench_cfg_t *cfg, int dir, size_t n, cell_t *out) {
  copy_case_t c = copy_case(b, dir, n);
  /* a batch moves at least 32 MiB, so small sizes measure streaming, not one round trip */
  long kmin = n >= MIN_BATCH_BYTES ? 1 : (long)(MIN_BATCH_BYTES / n);
  double est[NMETHODS], worst = 0;
  for (int m = 0; m < NMETHODS; m++) {
    est[m] = calibrate(b, &c, m, kmin);
    if (est[m] > worst) worst = est[m];
  }
  int reps = (int)(cfg->cell_s / worst);
  if (reps > cfg->max_reps) reps = cfg->max_reps;
  if (reps < cfg->min_reps) reps = cfg->min_reps;
  long k[NMETHODS];
  for (int m = 0; m < NMETHODS; m++) {
    double kk = cfg->cell_s / ((double)reps * est[m]);
    k[m] = kk < (double)kmin ? kmin : kk > 1e7 ? 10000000L : (long)kk;
  }
  double samples[NMETHODS][32];
  for (int r = 0; r < reps; r++)
    for (int j = 0; j < NMETHODS; j++) { /* rotate the order so no method always goes first */
      int m = (r + j) % NMETHODS;
      samples[m][r] = run_batch(b, &c, m, k[m]);
    }
  /* ratios pair each sample with the memcpy sample of the same rep (taken
   * next to it), so slow drifts of the VM's speed cancel out */
  for (int m = 0; m < NMETHODS; m++) {
    double q[32];
    for (int r = 0; r < reps; r++) q[r] = samples[M_MEMCPY][r] / samples[m][r];
    out->ratio[m] = median(q, reps);
  }
  for (int m = 0; m < NMETHODS; m++) out->gbps[m] = (double)n / median(samples[m], reps) / 1e9;
  out->reps = reps;
}

/* One async H2D -> D2D -> D2H round of n bytes, checked byte for byte. */
static void verify_copies(const bench_t *b, size_t n, int pattern) {
  for (size_t i = 0; i < n; i += 4096) ((unsigned char *)b->host_a)[i] = (unsigned char)(pattern + i / 4096);
  ((unsigned char *)b->host_a)[n - 1] = (unsigned char)~pattern;
  memset(b->host_b, 0, n);
  CHECK(rdev_rt_memcpy_async(b->rt, b->dev_x, n, b->host_a, n, RDEV_MEMCPY_HOST_TO_DEVICE, b->s));
  CHECK(rdev_rt_memcpy_async(b->rt, b->dev_y, n, b->dev_x, n, RDEV_MEMCPY_DEVICE_TO_DEVICE, b->s));
  CHECK(rdev_rt_memcpy_async(b->rt, b->host_b, n, b->dev_y, n, RDEV_MEMCPY_DEVICE_TO_HOST, b->s));
  CHECK(rdev_rt_stream_synchronize(b->s));
  if (memcmp(b->host_a, b->host_b, n) != 0) {
    fprintf(stderr, "bench_runtime: H2D->D2D->D2H round of %zu bytes returned wrong data\n", n);
    exit(1);
  }
}

static void size_label(size_t n, char *buf, size_t cap) {
  if (n >= (1u << 20))
    snprintf(buf, cap, "%zu MiB", n >> 20);
  else
    snprintf(buf, cap, "%zu KiB", n >> 10);
}

/* ---- small ops -------------------------------------------------------------- */

enum { OP_MEMSET, OP_H2D4, OP_LAUNCH, NOPS };
static const char *const kOpName[NOPS] = {"memset_async 64 B", "memcpy_async H2D 4 B", "launch write_i32 blocks=1"};

typedef struct {
  double ops_per_s, submit_s, total_s;
} rate_t;

static void submit_op(const bench_t *b, int op, void *dev_small, void *host_small, const rdev_kernel_arg_t *args) {
  switch (op) {
    case OP_MEMSET: CHECK(rdev_rt_memset_async(b->rt, dev_small, 64, 0x5a, 64, b->s)); break;
    case OP_H2D4:
      CHECK(rdev_rt_memcpy_async(b->rt, dev_small, 4, host_small, 4, RDEV_MEMCPY_HOST_TO_DEVICE, b->s));
      break;
    default: CHECK(rdev_rt_launch(b->s, "write_i32", 1, args, 2, NULL, NULL)); break;
  }
}

static rate_t bench_rate(const bench_t *b, int op, long n, void *dev_small, void *host_small) {
  rdev_kernel_arg_t args[2] = {{.type = RDEV_ARG_PTR}, {.type = RDEV_ARG_I32}};
  args[0].v.ptr.base = dev_small;
  args[0].v.ptr.offset = 0;
  args[1].v.i32 = 42;
  for (int i = 0; i < 1000; i++) submit_op(b, op, dev_small, host_small, args); /* warm up */
  CHECK(rdev_rt_stream_synchronize(b->s));
  uint64_t t0 = now_ns();
  for (long i = 0; i < n; i++) submit_op(b, op, dev_small, host_small, args);
  uint64_t t1 = now_ns();
  CHECK(rdev_rt_stream_synchronize(b->s));
  uint64_t t2 = now_ns();
  rate_t r = {.submit_s = (double)(t1 - t0) / 1e9, .total_s = (double)(t2 - t0) / 1e9};
  r.ops_per_s = (double)n / r.total_s;
  return r;
}

typedef struct {
  double median_us, p99_us, max_us;
} lat_t;

static lat_t latency_stats(uint64_t *v, long n) {
  qsort(v, (size_t)n, sizeof *v, cmp_u64);
  lat_t l = {.median_us = (double)v[n / 2] / 1e3,
             .p99_us = (double)v[(long)((double)n * 0.99)] / 1e3,
             .max_us = (double)v[n - 1] / 1e3};
  return l;
}

/* idle = 1: synchronize alone on an idle stream; else memset_async 64 B + synchronize. */
static lat_t bench_latency(const bench_t *b, long n, int idle, void *dev_small) {
  uint64_t *v = malloc((size_t)n * sizeof *v);
  if (!v) {
    fprintf(stderr, "bench_runtime: out of memory\n");
    exit(1);
  }
  CHECK(rdev_rt_stream_synchronize(b->s));
  for (long i = -1000; i < n; i++) { /* the first 1000 are warm-up */
    uint64_t t0 = now_ns();
    if (!idle) CHECK(rdev_rt_memset_async(b->rt, dev_small, 64, 1, 64, b->s));
    CHECK(rdev_rt_stream_synchronize(b->s));
    uint64_t t1 = now_ns();
    if (i >= 0) v[i] = t1 - t0;
  }
  lat_t l = latency_stats(v, n);
  free(v);
  return l;
}

/* ---- main ------------------------------------------------------------------- */

int main(int argc, char **argv) {
  bench_cfg_t cfg = {
      .cell_s = 0.4, .max_reps = 11, .min_reps = 5, .small_ops = 1000000, .sync_calls = 100000, .rtt_calls = 20000};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) {
      cfg.quick = 1;
      cfg.cell_s = 0.03;
      cfg.max_reps = 5;
      cfg.min_reps = 3;
      cfg.small_ops = 100000;
      cfg.sync_calls = 20000;
      cfg.rtt_calls = 2000;
    } else {
      fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
      return 2;
    }
  }
  int nsizes = 0;
  while (nsizes < NSIZES && (!cfg.quick || kSizes[nsizes] <= ((size_t)16 << 20))) nsizes++;
  size_t max_n = kSizes[nsizes - 1];
  uint64_t t_start = now_ns();

  bench_t b = {0};
  rdev_rt_config_t rc_cfg = {.backend = "sim", .sim_devices = 1, .sim_mem_bytes = (size_t)1 << 30};
  CHECK(rdev_rt_open(&rc_cfg, &b.rt));
  CHECK(rdev_rt_stream_create(b.rt, 0, &b.s));
  CHECK(rdev_rt_malloc_host(b.rt, &b.host_a, max_n));
  CHECK(rdev_rt_malloc_host(b.rt, &b.host_b, max_n));
  CHECK(rdev_rt_malloc(b.rt, 0, &b.dev_x, max_n, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_rt_malloc(b.rt, 0, &b.dev_y, max_n, RDEV_MEM_MALLOC_HUGE_FIRST));
  /* touch every page so no timed copy takes a page fault */
  memset(b.host_a, 0x11, max_n);
  memset(b.host_b, 0x22, max_n);
  CHECK(rdev_rt_memset(b.rt, b.dev_x, max_n, 0x33, max_n));
  CHECK(rdev_rt_memset(b.rt, b.dev_y, max_n, 0x44, max_n));

  printf("bench_runtime (%s): backend %s, 1 device, 1 stream, sizes 4 KiB..%zu MiB\n", cfg.quick ? "quick" : "full",
         rdev_rt_backend_name(b.rt), max_n >> 20);
  printf(
      "\nCopies, GB/s (1e9 B/s). async = memcpy_async x k + 1 synchronize; memcpy = libc memcpy,\n"
      "same buffers; ratio = async / memcpy, paired per rep (target >= 0.90 from 4 MiB). Medians of <reps>.\n");
  printf("%8s | %-23s | %-23s | %-20s | %4s\n", "", "   async (runtime)", "   memcpy (baseline)",
         "   ratio async/memcpy", "");
  printf("%8s | %7s %7s %7s | %7s %7s %7s | %6s %6s %6s | %4s\n", "size", "H2D", "D2H", "D2D", "H2D", "D2H", "D2D",
         "H2D", "D2H", "D2D", "reps");
  cell_t cells[NSIZES][NDIRS];
  for (int si = 0; si < nsizes; si++) {
    size_t n = kSizes[si];
    verify_copies(&b, n, si + 1);
    for (int d = 0; d < NDIRS; d++) bench_copy(&b, &cfg, d, n, &cells[si][d]);
    char lbl[32];
    size_label(n, lbl, sizeof lbl);
    int reps = cells[si][0].reps;
    for (int d = 1; d < NDIRS; d++)
      if (cells[si][d].reps < reps) reps = cells[si][d].reps;
    printf("%8s | %7.2f %7.2f %7.2f | %7.2f %7.2f %7.2f | %6.2f %6.2f %6.2f | %4d\n", lbl, cells[si][0].gbps[M_ASYNC],
           cells[si][1].gbps[M_ASYNC], cells[si][2].gbps[M_ASYNC], cells[si][0].gbps[M_MEMCPY],
           cells[si][1].gbps[M_MEMCPY], cells[si][2].gbps[M_MEMCPY], cells[si][0].ratio[M_ASYNC],
           cells[si][1].ratio[M_ASYNC], cells[si][2].ratio[M_ASYNC], reps);
    fflush(stdout);
  }
  printf("\nSync copies (rdev_rt_memcpy on the calling thread), GB/s and ratio sync / memcpy:\n");
  printf("%8s | %7s %7s %7s | %6s %6s %6s\n", "size", "H2D", "D2H", "D2D", "H2D", "D2H", "D2D");
  for (int si = 0; si < nsizes; si++) {
    char lbl[32];
    size_label(kSizes[si], lbl, sizeof lbl);
    printf("%8s | %7.2f %7.2f %7.2f | %6.2f %6.2f %6.2f\n", lbl, cells[si][0].gbps[M_SYNC], cells[si][1].gbps[M_SYNC],
           cells[si][2].gbps[M_SYNC], cells[si][0].ratio[M_SYNC], cells[si][1].ratio[M_SYNC],
           cells[si][2].ratio[M_SYNC]);
  }
  /* min is what the target names; the median says what a noisy VM's min hides */
  double min_async = 1e30, min_sync = 1e30, big[64];
  int nbig = 0;
  for (int si = 0; si < nsizes; si++) {
    if (kSizes[si] < BIG_SIZE) continue;
    for (int d = 0; d < NDIRS; d++) {
      double ra = cells[si][d].ratio[M_ASYNC], rs = cells[si][d].ratio[M_SYNC];
      if (ra < min_async) min_async = ra;
      if (rs < min_sync) min_sync = rs;
      if (nbig < 64) big[nbig++] = ra;
    }
  }
  qsort(big, (size_t)nbig, sizeof big[0], cmp_double);
  double median_async = nbig ? big[nbig / 2] : 0;

  /* small ops */
  void *dev_small, *host_small;
  CHECK(rdev_rt_malloc(b.rt, 0, &dev_small, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_rt_malloc_host(b.rt, &host_small, 64));
  memset(host_small, 7, 64);
  printf("\nSmall async ops: N = %ld on one stream, then one synchronize (target >= 500000 ops/s)\n", cfg.small_ops);
  rate_t rates[NOPS];
  for (int op = 0; op < NOPS; op++) {
    rates[op] = bench_rate(&b, op, cfg.small_ops, dev_small, host_small);
    printf("  %-26s %10.0f ops/s  (submit %.3f s, total %.3f s, %.2f us/op)\n", kOpName[op], rates[op].ops_per_s,
           rates[op].submit_s, rates[op].total_s, rates[op].total_s * 1e6 / (double)cfg.small_ops);
    fflush(stdout);
  }
  int32_t got = 0;
  CHECK(rdev_rt_memcpy(b.rt, &got, sizeof got, dev_small, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
  if (got != 42) {
    fprintf(stderr, "bench_runtime: write_i32 wrote %d, expected 42\n", (int)got);
    return 1;
  }

  /* latency */
  lat_t idle = bench_latency(&b, cfg.sync_calls, 1, dev_small);
  lat_t rtt = bench_latency(&b, cfg.rtt_calls, 0, dev_small);
  printf("\nLatency (us), each call timed alone:\n");
  printf("  idle stream_synchronize     median %7.2f  p99 %7.2f  max %8.1f  (N = %ld; target median < 20)\n",
         idle.median_us, idle.p99_us, idle.max_us, cfg.sync_calls);
  printf("  memset_async 64 B + sync    median %7.2f  p99 %7.2f  max %8.1f  (N = %ld)\n", rtt.median_us, rtt.p99_us,
         rtt.max_us, cfg.rtt_calls);

  CHECK(rdev_rt_free(b.rt, dev_small));
  CHECK(rdev_rt_free_host(b.rt, host_small));
  CHECK(rdev_rt_free(b.rt, b.dev_x));
  CHECK(rdev_rt_free(b.rt, b.dev_y));
  CHECK(rdev_rt_free_host(b.rt, b.host_a));
  CHECK(rdev_rt_free_host(b.rt, b.host_b));
  CHECK(rdev_rt_stream_destroy(b.s));
  rdev_rt_close(b.rt);

  int met = min_async >= 0.9 && rates[OP_MEMSET].ops_per_s >= 500000 && idle.median_us < 20;
  printf(
      "\nTargets: copies >= 4 MiB >= 0.90x memcpy: %s (min %.2f); small ops >= 500000/s: %s; "
      "idle sync < 20 us: %s. Run time %.1f s.\n",
      min_async >= 0.9 ? "met" : "MISSED", min_async, rates[OP_MEMSET].ops_per_s >= 500000 ? "met" : "MISSED",
      idle.median_us < 20 ? "met" : "MISSED", (double)(now_ns() - t_start) / 1e9);

  char lbl[32];
  snprintf(lbl, sizeof lbl, "%zum", max_n >> 20);
  const cell_t *last = cells[nsizes - 1];
  printf(
      "copy_vs_memcpy_min=%.2f copy_vs_memcpy_median=%.2f ops_per_s=%.0f idle_sync_us=%.1f idle_sync_p99_us=%.1f "
      "sync_copy_vs_memcpy_min=%.2f h2d4_ops_per_s=%.0f launch_ops_per_s=%.0f rtt_us=%.1f",
      min_async, median_async, rates[OP_MEMSET].ops_per_s, idle.median_us, idle.p99_us, min_sync,
      rates[OP_H2D4].ops_per_s, rates[OP_LAUNCH].ops_per_s, rtt.median_us);
  for (int d = 0; d < NDIRS; d++) printf(" %s_%s_gbps=%.2f", kDirKey[d], lbl, last[d].gbps[M_ASYNC]);
  printf(" memcpy_%s_gbps=%.2f mode=%s targets_met=%d\n", lbl, last[DIR_H2D].gbps[M_MEMCPY],
         cfg.quick ? "quick" : "full", met);
  return 0;
}
