/*
 * tests/unit/test_runtime_staging.c — the runtime's data path for every
 * backend: host staging buffers (rdev_rt_staging_get/put: aligned, pooled,
 * counted), the synchronous gather (rdev_rt_memcpy_gather: checked whole
 * before a byte moves), and a sim without host view, as a real NPU.
 */
#include "rt_helpers.h"

START_TEST(test_staging_buffers_are_aligned_writable_and_counted) {
  rdev_rt_t *rt = open_small();
  ck_assert_uint_eq(rdev_rt_staging_lent(rt), 0);
  size_t sizes[] = {1, 4096, RDEV_RT_STAGING_CHUNK, RDEV_RT_STAGING_CHUNK + 1, 3 * MIB};
  unsigned char *b[5];
  for (int i = 0; i < 5; i++) {
    b[i] = rdev_rt_staging_get(rt, sizes[i]);
    ck_assert_ptr_nonnull(b[i]);
    ck_assert_uint_eq((uintptr_t)b[i] % 64, 0);
    memset(b[i], i + 1, sizes[i]); /* all of it is writable (ASan checks) */
    ck_assert_uint_eq(rdev_rt_staging_lent(rt), (size_t)i + 1);
  }
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(b[i][sizes[i] - 1], i + 1); /* buffers do not overlap */
    rdev_rt_staging_put(b[i]);
  }
  ck_assert_uint_eq(rdev_rt_staging_lent(rt), 0);
  rdev_rt_staging_put(NULL);
  ck_assert_ptr_null(rdev_rt_staging_get(NULL, 1));
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_staging_chunks_are_reused) {
  rdev_rt_t *rt = open_small();
  void *a = rdev_rt_staging_get(rt, 100);
  rdev_rt_staging_put(a);
  void *b = rdev_rt_staging_get(rt, RDEV_RT_STAGING_CHUNK); /* the same chunk comes back */
  ck_assert_ptr_eq(a, b);
  /* more than the pool keeps idle: the rest goes back to the host */
  enum { N = 48 };
  void *many[N];
  for (int i = 0; i < N; i++) ck_assert_ptr_nonnull(many[i] = rdev_rt_staging_get(rt, 1));
  for (int i = 0; i < N; i++) rdev_rt_staging_put(many[i]);
  rdev_rt_staging_put(b);
  ck_assert_uint_eq(rdev_rt_staging_lent(rt), 0);
  rdev_rt_close(rt); /* frees what is idle: a leak check sees the rest gone */
}
END_TEST

static void *put_many(void *arg) {
  rdev_rt_t *rt = arg;
  for (int i = 0; i < 2000; i++) {
    unsigned char *p = rdev_rt_staging_get(rt, (size_t)(i % 7) * 1000 + 1);
    ck_assert_ptr_nonnull(p);
    p[0] = (unsigned char)i;
    rdev_rt_staging_put(p);
  }
  return NULL;
}

START_TEST(test_staging_from_many_threads) {
  rdev_rt_t *rt = open_small();
  pthread_t t[4];
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&t[i], NULL, put_many, rt), 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  ck_assert_uint_eq(rdev_rt_staging_lent(rt), 0);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_gather_lands_pieces_end_to_end) {
  rdev_rt_t *rt = open_small();
  enum { N = 50000 };
  unsigned char *src = malloc(N), *dst = calloc(1, N + 64);
  fill_random(src, N);
  rdev_rt_iov_t iov[] = {{src, 1}, {src + 1, 0}, {src + 1, 30000}, {src + 30001, N - 30001}};
  unsigned char *d = dmalloc(rt, 0, N + 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, N + 64, 0x5a, N + 64), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d + 32, N, iov, 4), RDEV_OK); /* done when it returns */
  d2h(rt, dst, d, N + 64);
  ck_assert_mem_eq(dst + 32, src, N);
  for (int i = 0; i < 32; i++) ck_assert_int_eq(dst[i], 0x5a);
  for (int i = N + 32; i < N + 64; i++) ck_assert_int_eq(dst[i], 0x5a);
  free(src);
  free(dst);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_gather_is_checked_before_a_byte_moves) {
  rdev_rt_t *rt = open_small();
  unsigned char h[256], back[100];
  memset(h, 1, sizeof h);
  unsigned char *d = dmalloc(rt, 0, 100), *d2 = dmalloc(rt, 0, 100);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 100, 0, 100), RDEV_OK);
  rdev_rt_iov_t two[] = {{h, 60}, {h + 60, 41}};
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, 1000, two, 2), RDEV_INVALID_PARAM);   /* past the allocation */
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, 100, two, 2), RDEV_RT_PARAM_INVALID); /* past destMax */
  rdev_rt_iov_t dev_piece[] = {{h, 10}, {d2, 10}};
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, 100, dev_piece, 2), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("device memory"));
  rdev_rt_iov_t null_piece[] = {{h, 10}, {NULL, 10}};
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, 100, null_piece, 2), RDEV_INVALID_PARAM);
  rdev_rt_iov_t huge[] = {{h, SIZE_MAX - 5}, {h, 10}};
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, SIZE_MAX, huge, 2), RDEV_RT_PARAM_INVALID);
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, h + 128, 100, two, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, 100, two, -1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather(NULL, d, 100, two, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, NULL, 0, NULL, 0), RDEV_OK); /* nothing: a no-op */
  /* the refused gathers wrote nothing, not even their first pieces */
  d2h(rt, back, d, 100);
  for (int i = 0; i < 100; i++) ck_assert_int_eq(back[i], 0);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_unmapped_sim_shows_no_memory_and_still_copies) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 16 * MIB, .sim_unmapped = 1};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  unsigned char *d = dmalloc(rt, 0, 4096);
  ck_assert_ptr_null(rdev_rt_host_view(rt, d, 1)); /* never host-mapped */
  /* the staged path: data through a staging buffer, both ways */
  unsigned char *st = rdev_rt_staging_get(rt, 4096);
  fill_random(st, 4096);
  rdev_rt_iov_t one = {st, 4096};
  ck_assert_int_eq(rdev_rt_memcpy_gather(rt, d, 4096, &one, 1), RDEV_OK);
  unsigned char *back = rdev_rt_staging_get(rt, 4096);
  ck_assert_int_eq(rdev_rt_memcpy(rt, back, 4096, d, 4096, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_mem_eq(back, st, 4096);
  rdev_rt_staging_put(st);
  rdev_rt_staging_put(back);
  rdev_rt_close(rt);
  /* the default sim shows its memory: a host address, not the device's;
   * acl never does */
  rt = open_small();
  d = dmalloc(rt, 0, 64);
  unsigned char *view = (unsigned char *)rdev_rt_host_view(rt, d, 64);
  if (on_acl()) {
    ck_assert_ptr_null(view);
    rdev_rt_close(rt);
    return;
  }
  ck_assert_ptr_nonnull(view);
  ck_assert_ptr_ne(view, d);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0x5c, 64), RDEV_OK);
  ck_assert_int_eq(view[0], 0x5c);
  ck_assert_int_eq(view[63], 0x5c);
  rdev_rt_close(rt);
}
END_TEST

static Suite *staging_suite(void) {
  Suite *s = suite_create("staging");
  TCase *tc = tcase("staging");
  tcase_add_test(tc, test_staging_buffers_are_aligned_writable_and_counted);
  tcase_add_test(tc, test_staging_chunks_are_reused);
  tcase_add_test(tc, test_staging_from_many_threads);
  tcase_add_test(tc, test_memcpy_gather_lands_pieces_end_to_end);
  tcase_add_test(tc, test_memcpy_gather_is_checked_before_a_byte_moves);
  tcase_add_test(tc, test_unmapped_sim_shows_no_memory_and_still_copies);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(staging_suite(), (Suite *)NULL); }
