/*
 * tests/bench/python/pybench_peer.c — pybench_peer, the C-client side of
 * tests/bench/python/bench_python.py: the rdev_memcpy and launch figures the
 * Python package is compared with, measured in the same run against the
 * same rdevd. It owns one session, one stream, a page-touched host buffer
 * pair and, per command, one device buffer (allocated for the command and
 * freed after it, so that the bench's Python side can use the rest of the
 * sim's arena between commands; h2dm makes one per copy, freeing the last).
 *
 *   pybench_peer --target ADDR
 *
 * then one command per line on stdin, one answer line each on stdout:
 *   h2d SIZE REPS        median seconds of REPS rdev_memcpy host-to-device of SIZE bytes
 *   d2h SIZE REPS        the same device-to-host (the device filled from a known pattern first)
 *   h2da SIZE REPS CHUNK the same H2D as the package does it: rdev_memcpy_async of CHUNK-byte
 *   d2ha SIZE REPS CHUNK pieces, each followed by rdev_stream_synchronize (diagnosis)
 *   h2dm SIZE REPS       rdev_malloc + rdev_memcpy H2D per copy: rdev.asarray's work (diagnosis)
 *   d2hm SIZE REPS       a fresh host buffer (mmap, MADV_HUGEPAGE as numpy asks) + rdev_memcpy
 *                        D2H + munmap per copy: d.get()'s work (diagnosis)
 *   launch REPS          median seconds of rdev_launch(inc_u32, 1 block) + rdev_stream_synchronize
 *   quit                 answers "ok" and exits 0
 * Every command's bytes are verified once (the device's contents read back
 * or the host buffer compared with the pattern; inc_u32's counter read
 * back). An rdev failure answers "error CODE MESSAGE" and exits 1; a bad
 * command answers "error -1 MESSAGE" and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "rdev/rdev.h"

static rdev_session_t *sess;
static rdev_stream_t *strm;
static uint8_t *src, *dst; /* host buffers of host_len bytes, pages touched */
static size_t host_len;
static uint64_t seed; /* a new pattern per command */

static void fail_line(int code, const char *what, const char *detail) {
  printf("error %d %s%s%s\n", code, what, detail && *detail ? ": " : "", detail ? detail : "");
  fflush(stdout);
  exit(1);
}

static void check_fail(const char *call, int rc, int line) {
  char what[256];
  snprintf(what, sizeof what, "line %d: %s failed (%s)", line, call, rdev_status_name(rc));
  const char *detail = rdev_session_last_error();
  fail_line(rc, what, detail && *detail ? detail : rdev_strerror(rc));
}

#define CHECK(call) \
  do { \
    int check_rc_ = (call); \
    if (check_rc_ != 0) check_fail(#call, check_rc_, __LINE__); \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fill_pattern(uint8_t *p, size_t n, uint64_t s) {
  uint64_t x = (s + 1) * 0xd1342543de82ef95ull;
  uint64_t *w = (uint64_t *)p;
  for (size_t i = 0; i < n / 8; i++) w[i] = x ^ (i * 0x9e3779b97f4a7c15ull);
  for (size_t i = n / 8 * 8; i < n; i++) p[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
}

static void expect_same(const uint8_t *want, const uint8_t *got, size_t n, const char *what) {
  if (memcmp(want, got, n) == 0) return;
  size_t i = 0;
  while (want[i] == got[i]) i++;
  char msg[160];
  snprintf(msg, sizeof msg, "data differ at byte %zu of %zu (sent 0x%02x, got 0x%02x)", i, n, want[i], got[i]);
  fail_line(RDEV_INVALID_PARAM, what, msg);
}

/* Makes the host buffers at least n bytes, their pages touched. */
static void host_reserve(size_t n) {
  if (n <= host_len) return;
  if (src) munmap(src, host_len);
  if (dst) munmap(dst, host_len);
  src = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  dst = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (src == MAP_FAILED || dst == MAP_FAILED) fail_line(-1, "cannot map host buffers", strerror(errno));
  memset(src, 0x11, n);
  memset(dst, 0x22, n);
  host_len = n;
}

static double *samples(long reps) {
  double *t = malloc((size_t)reps * sizeof *t);
  if (!t) fail_line(-1, "out of memory", NULL);
  return t;
}

/* How a command copies: rdev_memcpy; async pieces each synchronized; or
 * into a fresh buffer per copy (the device's for H2D, the host's for D2H). */
typedef enum { SYNC, PIECES, FRESH } copy_mode_t;

/* One copy of n bytes, synchronous or (chunk > 0) in async pieces each synchronized. */
static void copy(void *to, const void *from, size_t n, rdev_memcpy_kind_t kind, size_t chunk) {
  if (!chunk) {
    CHECK(rdev_memcpy(sess, to, n, from, n, kind));
    return;
  }
  for (size_t done = 0; done < n; done += chunk) {
    size_t k = n - done < chunk ? n - done : chunk;
    CHECK(rdev_memcpy_async(sess, (uint8_t *)to + done, k, (const uint8_t *)from + done, k, kind, strm));
    CHECK(rdev_stream_synchronize(strm));
  }
}

/* A fresh host buffer as numpy makes a large one: its own mapping, huge
 * pages asked for, no page touched. */
static uint8_t *fresh_host(size_t n) {
  uint8_t *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail_line(-1, "cannot map a host buffer", strerror(errno));
  madvise(p, n, MADV_HUGEPAGE);
  return p;
}

/* h2d / d2h: median seconds of reps copies of size bytes; verified once.
 * FRESH H2D times rdev_malloc + rdev_memcpy (rdev.asarray's work; each
 * buffer freed before the next, untimed); FRESH D2H times a new host
 * mapping + rdev_memcpy + munmap (d.get()'s work). */
static double cmd_copy(int h2d, size_t size, long reps, copy_mode_t mode, size_t chunk) {
  host_reserve(size);
  void *dev = NULL;
  CHECK(rdev_malloc(sess, &dev, size, RDEV_MEM_MALLOC_HUGE_FIRST));
  fill_pattern(src, size, ++seed);
  if (!h2d) CHECK(rdev_memcpy(sess, dev, size, src, size, RDEV_MEMCPY_HOST_TO_DEVICE));
  double *t = samples(reps);
  for (long i = 0; i < reps; i++) {
    if (mode == FRESH && h2d) {
      CHECK(rdev_free(sess, dev));
      double t0 = now_s();
      CHECK(rdev_malloc(sess, &dev, size, RDEV_MEM_MALLOC_HUGE_FIRST));
      copy(dev, src, size, RDEV_MEMCPY_HOST_TO_DEVICE, 0);
      t[i] = now_s() - t0;
    } else if (mode == FRESH) {
      double t0 = now_s();
      uint8_t *to = fresh_host(size);
      copy(to, dev, size, RDEV_MEMCPY_DEVICE_TO_HOST, 0);
      double t1 = now_s();
      if (i == 0) expect_same(src, to, size, "d2h into a fresh buffer");
      double t2 = now_s();
      munmap(to, size);
      t[i] = t1 - t0 + now_s() - t2;
    } else {
      double t0 = now_s();
      if (h2d)
        copy(dev, src, size, RDEV_MEMCPY_HOST_TO_DEVICE, chunk);
      else
        copy(dst, dev, size, RDEV_MEMCPY_DEVICE_TO_HOST, chunk);
      t[i] = now_s() - t0;
    }
  }
  if (h2d || mode != FRESH) {
    if (h2d) CHECK(rdev_memcpy(sess, dst, size, dev, size, RDEV_MEMCPY_DEVICE_TO_HOST));
    expect_same(src, dst, size, h2d ? "h2d (read back)" : "d2h");
    memset(dst, 0x22, size); /* the next check cannot pass on stale bytes */
  }
  CHECK(rdev_free(sess, dev));
  double m = median(t, reps);
  free(t);
  return m;
}

/* launch: median seconds of reps inc_u32 (1 block) + synchronize; the counter checked. */
static double cmd_launch(long reps) {
  void *x = NULL;
  CHECK(rdev_malloc(sess, &x, 4, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_arg_t arg = {.type = RDEV_ARG_PTR, .v.ptr = x};
  double *t = samples(reps);
  for (long i = 0; i < reps; i++) {
    double t0 = now_s();
    CHECK(rdev_launch(strm, "inc_u32", 1, &arg, 1));
    CHECK(rdev_stream_synchronize(strm));
    t[i] = now_s() - t0;
  }
  uint32_t got = 0;
  CHECK(rdev_memcpy(sess, &got, sizeof got, x, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
  if (got != (uint32_t)reps) {
    char msg[96];
    snprintf(msg, sizeof msg, "inc_u32 left %u, expected %u", got, (uint32_t)reps);
    fail_line(RDEV_INVALID_PARAM, "launch", msg);
  }
  CHECK(rdev_free(sess, x));
  double m = median(t, reps);
  free(t);
  return m;
}

/* Kernel print (none expected) must not mix into the answers. */
static void print_to_stderr(void *user, const char *text, size_t len) {
  (void)user;
  fwrite(text, 1, len, stderr);
}

int main(int argc, char **argv) {
  const char *target = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--target") && i + 1 < argc)
      target = argv[++i];
    else {
      fprintf(stderr, "usage: pybench_peer --target ADDR (commands on stdin)\n");
      return 2;
    }
  }
  if (!target) {
    fprintf(stderr, "usage: pybench_peer --target ADDR (commands on stdin)\n");
    return 2;
  }
  CHECK(rdev_session_open(target, NULL, &sess));
  rdev_session_set_print_fn(sess, print_to_stderr, NULL);
  CHECK(rdev_stream_create(sess, &strm));
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[16];
    unsigned long long size = 0, chunk = 0;
    long reps = 0;
    int n = sscanf(line, "%15s %llu %ld %llu", cmd, &size, &reps, &chunk);
    double m;
    if (n < 1) continue;
    if (!strcmp(cmd, "quit")) {
      printf("ok\n");
      break;
    } else if ((!strcmp(cmd, "h2d") || !strcmp(cmd, "d2h")) && n == 3 && size > 0 && reps > 0) {
      m = cmd_copy(cmd[0] == 'h', (size_t)size, reps, SYNC, 0);
    } else if ((!strcmp(cmd, "h2da") || !strcmp(cmd, "d2ha")) && n == 4 && size > 0 && reps > 0 && chunk > 0) {
      m = cmd_copy(cmd[0] == 'h', (size_t)size, reps, PIECES, (size_t)chunk);
    } else if ((!strcmp(cmd, "h2dm") || !strcmp(cmd, "d2hm")) && n == 3 && size > 0 && reps > 0) {
      m = cmd_copy(cmd[0] == 'h', (size_t)size, reps, FRESH, 0);
    } else if (!strcmp(cmd, "launch") && sscanf(line, "%15s %ld", cmd, &reps) == 2 && reps > 0) {
      m = cmd_launch(reps);
    } else {
      line[strcspn(line, "\n")] = 0;
      fail_line(-1, "bad command", line);
    }
    printf("%.9f\n", m);
    fflush(stdout);
  }
  fflush(stdout);
  CHECK(rdev_stream_destroy(strm));
  rdev_session_close(sess);
  return 0;
}
