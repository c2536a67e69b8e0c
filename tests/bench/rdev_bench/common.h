/*
 * tests/bench/rdev_bench/common.h — what every part of rdev_bench shares:
 * failing (die, CHECK for rdev calls, BL for baseline calls, CL for the
 * other clients' calls), the clock, statistics (median, percentile), size
 * labels, host buffers, paths next to the binary and the data pattern, the
 * seeded shuffle, and byte-for-byte comparison. Implemented in
 * common.c. No state: a failure ends the process (stopping the rdevd the
 * bench started, through rdevd.h).
 */
#ifndef RDEV_BENCH_COMMON_H
#define RDEV_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define MiB ((size_t)1 << 20)

/* Prints "rdev_bench: ..." on stderr, stops the rdevd the bench started and
 * ends the process with status 1 (from any thread). */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* die() with an rdev status: what failed, its status and the session's last error. */
void check_fail(const char *call, int rc, int line) __attribute__((noreturn));

/* An rdev call that must return RDEV_OK. */
#define CHECK(call) \
  do { \
    int check_rc_ = (call); \
    if (check_rc_ != 0) check_fail(#call, check_rc_, __LINE__); \
  } while (0)

/* A baseline call (baseline.h) that must return 0. */
#define BL(call) \
  do { \
    if ((call) != 0) die("line %d: baseline %s failed: %s", __LINE__, #call, bl_error()); \
  } while (0)

/* A call of another client (clients.h) that must return 0. */
#define CL(call) \
  do { \
    if ((call) != 0) die("line %d: %s failed: %s", __LINE__, #call, bl_error()); \
  } while (0)

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Median of v[0..n) (sorts v); NAN when n is 0. */
double median(double *v, int n);
/* The p-quantile (0..1) of sorted[0..n). */
double pct(const double *sorted, int n, double p);
/* "4 KiB", "64 MiB", "1 GiB", "100 B". */
void size_label(size_t n, char *buf, size_t len);
/* n bytes of MAP_SHARED anonymous memory (the bare-gRPC helper processes
 * see it at the same address); dies when there is none. */
void *xalloc(size_t n);
/* rel resolved against the folder of this program's binary (e.g.
 * "../server/rdevd") into out; dies if it cannot tell. */
void exe_relative(const char *rel, char *out, size_t len);
/* A pattern that differs per seed and per 8-byte word. */
void fill_pattern(uint8_t *p, size_t n, uint64_t seed);
/* Puts a[0..n) in a random order (Fisher-Yates; splitmix64 on *state). */
void shuffle(int *a, int n, uint64_t *state);
/* Dies naming `what` and the first differing byte unless want == got. */
void expect_same(const uint8_t *want, const uint8_t *got, size_t n, const char *what);

#endif
