/*
 * tests/bench/rdev_bench/common.c — the helpers every part of rdev_bench
 * uses (common.h): failing, statistics, size labels, host buffers, paths
 * next to the binary, the data pattern, the seeded shuffle and
 * byte-for-byte checks.
 */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdev/rdev.h"
#include "rdevd.h"

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rdev_bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stdout);
  rdevd_kill_now();
  _exit(1);
}

void check_fail(const char *call, int rc, int line) {
  die("line %d: %s failed: %s (%d %s)%s%s", line, call, rdev_strerror(rc), rc, rdev_status_name(rc),
      *rdev_session_last_error() ? ": " : "", rdev_session_last_error());
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double pct(const double *sorted, int n, double p) {
  int i = (int)ceil(p * n) - 1;
  return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

void size_label(size_t n, char *buf, size_t len) {
  if (n >= (size_t)1 << 30 && n % ((size_t)1 << 30) == 0)
    snprintf(buf, len, "%zu GiB", n >> 30);
  else if (n >= MiB && n % MiB == 0)
    snprintf(buf, len, "%zu MiB", n >> 20);
  else if (n >= 1024 && n % 1024 == 0)
    snprintf(buf, len, "%zu KiB", n >> 10);
  else
    snprintf(buf, len, "%zu B", n);
}

void *xalloc(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("cannot map %zu host bytes: %s", n, strerror(errno));
  return p;
}

void exe_relative(const char *rel, char *out, size_t len) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) die("cannot read /proc/self/exe to find %s next to this program", rel);
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  if ((size_t)snprintf(out, len, "%s/%s", exe, rel) >= len) die("path too long: %s/%s", exe, rel);
}

void fill_pattern(uint8_t *p, size_t n, uint64_t seed) {
  uint64_t x = (seed + 1) * 0xd1342543de82ef95ull;
  size_t words = n / 8;
  uint64_t *w = (uint64_t *)p;
  for (size_t i = 0; i < words; i++) w[i] = x ^ (i * 0x9e3779b97f4a7c15ull);
  for (size_t i = words * 8; i < n; i++) p[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
}

void shuffle(int *a, int n, uint64_t *state) {
  for (int i = n - 1; i > 0; i--) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    int j = (int)(z % (uint64_t)(i + 1));
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

void expect_same(const uint8_t *want, const uint8_t *got, size_t n, const char *what) {
  if (memcmp(want, got, n) == 0) return;
  size_t i = 0;
  while (want[i] == got[i]) i++;
  die("%s: data differ at byte %zu of %zu (sent 0x%02x, got 0x%02x)", what, i, n, want[i], got[i]);
}
