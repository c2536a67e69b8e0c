/*
 * tests/bench/bench_acl.c — aclrtMemcpy through rdev's ACL library
 * (libascendcl.so) against rdev_memcpy through the C client library, in the
 * same run, on the same rdevd: the library must cost nothing measurable
 * (target: at least 0.95x rdev_memcpy for H2D and D2H at 64 MiB and more).
 *
 *   bench_acl [--quick]       (the rdevd at $RDEV_TARGET)
 *
 * Each side has its own session. Per size and direction, 9 reps (--quick:
 * 3 reps at 16 MiB only) alternate the two methods, the first one taking
 * turns; a sample is one copy of the whole size. The table shows medians
 * in GB/s (1e9 bytes) and the ratio acl/rdev as the median of the paired
 * per-rep ratios. Every copy is checked byte for byte at the end of its
 * size. Exit 1 when a call fails or data differ; a missed target is
 * reported, not an error.
 *
 * Then kernel launches: a launch of inc_u32 (no print output) from a sim
 * kernel binary plus
 * a synchronize of its stream, through aclrtLaunchKernelWithHostArgs and
 * aclrtSynchronizeStream against rdev_launch_function and
 * rdev_stream_synchronize, in rounds that alternate the two (target: at
 * most 1.1x the C API's time per launch and synchronize).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "rdev/clock.h"
#include "rdev/rdev.h"

#define REPS 9

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char k_binary[] =
    "rdev-sim-binary 1\n"
    "kernel Inc inc_u32 entry=1\n"
    "  arg ptr x reach=blocks*4 writes\n";

/* inc_u32's arguments as the AscendC layout packs them. */
typedef struct {
  uint64_t x;
} inc_args_t;

static void die(const char *what, int rc) {
  const char *m = aclGetRecentErrMsg();
  fprintf(stderr, "bench_acl: %s failed: %d %s %s\n", what, rc, m ? m : "", rdev_session_last_error());
  exit(1);
}

int main(int argc, char **argv) {
  const char *target = getenv("RDEV_TARGET");
  if (!target || (argc > 1 && strcmp(argv[1], "--quick"))) {
    fprintf(stderr, "usage: RDEV_TARGET=ADDR bench_acl [--quick]\n");
    return 2;
  }
  int quick = argc > 1;
  int rc;
  rdev_session_t *s = NULL;
  if ((rc = rdev_session_open(target, NULL, &s))) die("rdev_session_open", rc);
  if ((rc = aclInit(NULL))) die("aclInit", rc);
  if ((rc = aclrtSetDevice(0))) die("aclrtSetDevice", rc);
  size_t sizes[] = {(size_t)64 << 20, (size_t)256 << 20}, quick_sizes[] = {(size_t)16 << 20};
  size_t *sz = quick ? quick_sizes : sizes;
  int nsizes = quick ? 1 : 2, reps = quick ? 3 : REPS, met = 1;
  size_t max = sz[nsizes - 1];
  unsigned char *src = malloc(max), *back = malloc(max);
  void *rdev_dev = NULL, *acl_dev = NULL;
  if (!src || !back) die("malloc", -1);
  for (size_t i = 0; i < max; i++) src[i] = (unsigned char)(i * 2654435761u >> 13);
  if ((rc = rdev_malloc(s, &rdev_dev, max, RDEV_MEM_MALLOC_HUGE_FIRST))) die("rdev_malloc", rc);
  if ((rc = aclrtMalloc(&acl_dev, max, ACL_MEM_MALLOC_HUGE_FIRST))) die("aclrtMalloc", rc);
  printf(
      "aclrtMemcpy (libascendcl.so) against rdev_memcpy, GB/s, medians of %d reps; ratio = median of paired acl/rdev\n",
      reps);
  printf("    size |  rdev-h2d  acl-h2d  ratio |  rdev-d2h  acl-d2h  ratio\n");
  for (int z = 0; z < nsizes; z++) {
    size_t n = sz[z];
    double g[2][2][REPS], r[2][REPS]; /* [direction][method][rep] */
    for (int rep = 0; rep < reps; rep++) {
      for (int dir = 0; dir < 2; dir++) {
        for (int k = 0; k < 2; k++) {
          int m = (rep + k) % 2;            /* 0 rdev, 1 acl; the first takes turns */
          if (dir == 1) memset(back, 0, n); /* a D2H that moved nothing fails the check */
          uint64_t t0 = rdev_clock_now_ns();
          if (dir == 0)
            rc = m ? aclrtMemcpy(acl_dev, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE)
                   : rdev_memcpy(s, rdev_dev, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE);
          else
            rc = m ? aclrtMemcpy(back, n, acl_dev, n, ACL_MEMCPY_DEVICE_TO_HOST)
                   : rdev_memcpy(s, back, n, rdev_dev, n, RDEV_MEMCPY_DEVICE_TO_HOST);
          if (rc) die(m ? "aclrtMemcpy" : "rdev_memcpy", rc);
          g[dir][m][rep] = (double)n / (double)(rdev_clock_now_ns() - t0);
          if (dir == 1 && memcmp(back, src, n) != 0) {
            fprintf(stderr, "bench_acl: %s D2H of %zu bytes: data differ\n", m ? "acl" : "rdev", n);
            return 1;
          }
        }
        r[dir][rep] = g[dir][1][rep] / g[dir][0][rep];
      }
    }
    double ratio[2];
    printf("%5zu MiB |", n >> 20);
    for (int dir = 0; dir < 2; dir++) {
      ratio[dir] = median(r[dir], reps);
      printf("  %8.2f %8.2f %6.3f %s", median(g[dir][0], reps), median(g[dir][1], reps), ratio[dir],
             dir == 0 ? "|" : "\n");
      if (n >= ((size_t)64 << 20) && ratio[dir] < 0.95) met = 0;
    }
  }
  if (!quick) printf("target: acl >= 0.95 x rdev at 64 MiB and more: %s\n", met ? "met" : "MISSED");

  /* kernel launch + synchronize */
  rdev_binary_t *rb = NULL;
  rdev_function_t *rf = NULL;
  rdev_stream_t *rs = NULL;
  aclrtBinHandle ab = NULL;
  aclrtFuncHandle af = NULL;
  aclrtStream as = NULL;
  if ((rc = rdev_binary_load(s, k_binary, sizeof k_binary - 1, &rb))) die("rdev_binary_load", rc);
  if ((rc = rdev_binary_function(rb, "Inc", &rf))) die("rdev_binary_function", rc);
  if ((rc = rdev_stream_create(s, &rs))) die("rdev_stream_create", rc);
  if ((rc = aclrtBinaryLoadFromData(k_binary, sizeof k_binary - 1, NULL, &ab))) die("aclrtBinaryLoadFromData", rc);
  if ((rc = aclrtBinaryGetFunction(ab, "Inc", &af))) die("aclrtBinaryGetFunction", rc);
  if ((rc = aclrtCreateStream(&as))) die("aclrtCreateStream", rc);
  inc_args_t ra = {(uint64_t)(uintptr_t)rdev_dev}, aa = {(uint64_t)(uintptr_t)acl_dev};
  int rounds = quick ? 3 : 15, per = quick ? 50 : 300;
  double us[2][15], lr[15];
  for (int round = 0; round < rounds; round++) {
    for (int k = 0; k < 2; k++) {
      int m = (round + k) % 2;
      uint64_t t0 = rdev_clock_now_ns();
      for (int i = 0; i < per; i++) {
        if (m) {
          if ((rc = aclrtLaunchKernelWithHostArgs(af, 1, as, NULL, &aa, sizeof aa, NULL, 0))) die("launch", rc);
          if ((rc = aclrtSynchronizeStream(as))) die("aclrtSynchronizeStream", rc);
        } else {
          if ((rc = rdev_launch_function(rs, rf, 1, &ra, sizeof ra))) die("rdev_launch_function", rc);
          if ((rc = rdev_stream_synchronize(rs))) die("rdev_stream_synchronize", rc);
        }
      }
      us[m][round] = (double)(rdev_clock_now_ns() - t0) / 1e3 / per;
    }
    lr[round] = us[1][round] / us[0][round];
  }
  double lratio = median(lr, rounds);
  printf("launch + synchronize, us, medians of %d rounds of %d; ratio = median of paired acl/rdev\n", rounds, per);
  printf("  rdev %7.1f   acl %7.1f   ratio %6.3f\n", median(us[0], rounds), median(us[1], rounds), lratio);
  if (!quick) printf("target: acl <= 1.1 x rdev per launch and synchronize: %s\n", lratio <= 1.1 ? "met" : "MISSED");
  aclrtDestroyStream(as);
  aclrtBinaryUnLoad(ab);
  rdev_stream_destroy(rs);
  rdev_binary_unload(rb);
  aclrtFree(acl_dev);
  aclFinalize();
  rdev_free(s, rdev_dev);
  rdev_session_close(s);
  free(src);
  free(back);
  return 0;
}
