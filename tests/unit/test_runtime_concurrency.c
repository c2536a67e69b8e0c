/*
 * tests/unit/test_runtime_concurrency.c — Check unit tests of the device
 * runtime (rdev/runtime.h, rdev/status.h, sim backend): concurrent use: exact
 * memory accounting under malloc/free from many threads, and kernels on both
 * devices from many threads computing correct results. Suite "concurrency".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

struct alloc_job {
  rdev_rt_t *rt;
  int id;
  int iters;
  int failures;
};

static void *alloc_thread(void *arg) {
  struct alloc_job *j = arg;
  enum { LIVE = 8 };
  void *p[LIVE] = {0};
  size_t sz[LIVE] = {0};
  unsigned char tag[LIVE] = {0};
  uint64_t r = 0x1234567ull * (uint64_t)(j->id + 1);
  unsigned char *buf = malloc(20000);
  for (int it = 0; it < j->iters; it++) {
    r ^= r << 13;
    r ^= r >> 7;
    r ^= r << 17;
    int k = (int)(r % LIVE);
    if (p[k]) { /* verify nobody else wrote into it, then free */
      if (rdev_rt_memcpy(j->rt, buf, 20000, p[k], sz[k], RDEV_MEMCPY_DEVICE_TO_HOST) != RDEV_OK) j->failures++;
      for (size_t i = 0; i < sz[k]; i++)
        if (buf[i] != tag[k]) {
          j->failures++;
          break;
        }
      if (rdev_rt_free(j->rt, p[k]) != RDEV_OK) j->failures++;
      p[k] = NULL;
    } else {
      sz[k] = 1 + (size_t)(r >> 20) % 20000;
      tag[k] = (unsigned char)(j->id * 31 + it);
      if (rdev_rt_malloc(j->rt, 0, &p[k], sz[k], RDEV_MEM_MALLOC_HUGE_FIRST) != RDEV_OK) {
        j->failures++;
        p[k] = NULL;
        continue;
      }
      if (rdev_rt_memset(j->rt, p[k], sz[k], tag[k], sz[k]) != RDEV_OK) j->failures++;
    }
  }
  for (int k = 0; k < LIVE; k++)
    if (p[k] && rdev_rt_free(j->rt, p[k]) != RDEV_OK) j->failures++;
  free(buf);
  return NULL;
}

START_TEST(test_concurrent_malloc_free_keeps_exact_accounting) {
  rdev_rt_t *rt = open_rt(1, 32 * MIB);
  enum { NT = 4 };
  struct alloc_job jobs[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    jobs[t] = (struct alloc_job){.rt = rt, .id = t, .iters = 3000};
    ck_assert_int_eq(pthread_create(&th[t], NULL, alloc_thread, &jobs[t]), 0);
  }
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < NT; t++) ck_assert_int_eq(jobs[t].failures, 0);
  ck_assert_uint_eq(free_of(rt, 0), 32 * MIB);
  void *p = NULL; /* and it all merged back */
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 32 * MIB - 32, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

struct kernel_job {
  rdev_rt_t *rt;
  int dev;
  int failures;
};

static void *kernel_thread(void *arg) {
  struct kernel_job *j = arg;
  enum { N = 2048 };
  float in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (float)(i % 97) * 0.5f + (float)j->dev;
  rdev_rt_stream_t *s = NULL;
  void *din = NULL, *dout = NULL;
  if (rdev_rt_stream_create(j->rt, j->dev, &s) != RDEV_OK ||
      rdev_rt_malloc(j->rt, j->dev, &din, sizeof in, RDEV_MEM_MALLOC_HUGE_FIRST) != RDEV_OK ||
      rdev_rt_malloc(j->rt, j->dev, &dout, sizeof out, RDEV_MEM_MALLOC_HUGE_FIRST) != RDEV_OK) {
    j->failures++;
    return NULL;
  }
  for (int round = 0; round < 20; round++) {
    memset(out, 0, sizeof out);
    if (rdev_rt_memcpy_async(j->rt, din, sizeof in, in, sizeof in, RDEV_MEMCPY_HOST_TO_DEVICE, s) ||
        launch_square(s, 4, din, 0, dout, 0, N) ||
        rdev_rt_memcpy_async(j->rt, out, sizeof out, dout, sizeof out, RDEV_MEMCPY_DEVICE_TO_HOST, s) ||
        rdev_rt_stream_synchronize(s)) {
      j->failures++;
      continue;
    }
    for (int i = 0; i < N; i++)
      if (out[i] != in[i] * in[i]) {
        j->failures++;
        break;
      }
  }
  if (rdev_rt_stream_destroy(s) || rdev_rt_free(j->rt, din) || rdev_rt_free(j->rt, dout)) j->failures++;
  return NULL;
}

START_TEST(test_concurrent_streams_on_both_devices_compute_correctly) {
  rdev_rt_t *rt = open_small();
  enum { NT = 6 };
  struct kernel_job jobs[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    jobs[t] = (struct kernel_job){.rt = rt, .dev = t % 2};
    ck_assert_int_eq(pthread_create(&th[t], NULL, kernel_thread, &jobs[t]), 0);
  }
  for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < NT; t++) ck_assert_int_eq(jobs[t].failures, 0);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  ck_assert_uint_eq(free_of(rt, 1), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

static Suite *concurrency_suite(void) {
  Suite *s = suite_create("concurrency");
  TCase *tc = tcase("concurrency");
  tcase_add_test(tc, test_concurrent_malloc_free_keeps_exact_accounting);
  tcase_add_test(tc, test_concurrent_streams_on_both_devices_compute_correctly);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(concurrency_suite(), (Suite *)NULL); }
