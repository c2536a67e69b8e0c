/*
 * tests/unit/test_runtime_copies.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): copies and memset:
 * rdev_rt_memcpy in every direction (sync and async), the gather copy, kind
 * inference, bounds, NULL, wrong-kind, unaligned and overlapping cases,
 * rdev_rt_memset (sync and async). Suite "copies".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

START_TEST(test_memcpy_sync_h2d_d2h_round_trip) {
  rdev_rt_t *rt = open_small();
  enum { N = 100000 };
  unsigned char *src = malloc(N), *dst = calloc(1, N);
  fill_random(src, N);
  void *d = dmalloc(rt, 0, N);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, N, src, N, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, dst, N, d, N, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_mem_eq(src, dst, N);
  free(src);
  free(dst);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_sync_d2d_round_trip_across_devices) {
  rdev_rt_t *rt = open_small();
  enum { N = 50000 };
  unsigned char *src = malloc(N), *dst = calloc(1, N);
  fill_random(src, N);
  void *a = dmalloc(rt, 0, N), *b = dmalloc(rt, 0, N), *c = dmalloc(rt, 1, N);
  h2d(rt, a, src, N);
  ck_assert_int_eq(rdev_rt_memcpy(rt, b, N, a, N, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, c, N, b, N, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
  d2h(rt, dst, c, N);
  ck_assert_mem_eq(src, dst, N);
  free(src);
  free(dst);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_sync_h2h_copies) {
  rdev_rt_t *rt = open_small();
  enum { N = 3000 };
  unsigned char src[N], dst[N];
  fill_random(src, N);
  memset(dst, 0, N);
  ck_assert_int_eq(rdev_rt_memcpy(rt, dst, N, src, N, RDEV_MEMCPY_HOST_TO_HOST), RDEV_OK);
  ck_assert_mem_eq(src, dst, N);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_async_round_trip_all_kinds) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 65536 };
  unsigned char *src = malloc(N), *mid = calloc(1, N), *dst = calloc(1, N);
  fill_random(src, N);
  void *a = dmalloc(rt, 0, N), *b = dmalloc(rt, 0, N);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, mid, N, src, N, RDEV_MEMCPY_HOST_TO_HOST, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, a, N, mid, N, RDEV_MEMCPY_HOST_TO_DEVICE, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, b, N, a, N, RDEV_MEMCPY_DEVICE_TO_DEVICE, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, dst, N, b, N, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_mem_eq(src, mid, N);
  ck_assert_mem_eq(src, dst, N);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  free(src);
  free(mid);
  free(dst);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_gather_async_lands_pieces_end_to_end) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 40000 };
  unsigned char *src = malloc(N), *dst = calloc(1, N + 64);
  fill_random(src, N);
  /* uneven pieces, a 1-byte and an empty one among them */
  rdev_rt_iov_t iov[] = {{src, 17}, {src + 17, 1}, {src + 18, 0}, {src + 18, 20000}, {src + 20018, N - 20018}};
  unsigned char *d = dmalloc(rt, 0, N + 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, N + 64, 0x5a, N + 64), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d + 32, N, iov, 5, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, dst, d, N + 64);
  ck_assert_mem_eq(dst + 32, src, N);
  for (int i = 0; i < 32; i++) ck_assert_int_eq(dst[i], 0x5a);          /* nothing before... */
  for (int i = N + 32; i < N + 64; i++) ck_assert_int_eq(dst[i], 0x5a); /* ...or after */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  free(src);
  free(dst);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_gather_async_checks_like_memcpy) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  unsigned char h[256];
  memset(h, 1, sizeof h);
  unsigned char *d = dmalloc(rt, 0, 100), *d2 = dmalloc(rt, 0, 100);
  rdev_rt_iov_t two[] = {{h, 60}, {h + 60, 41}};
  /* the sum runs past the allocation, or past destMax */
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 1000, two, 2, s), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 100, two, 2, s), RDEV_RT_PARAM_INVALID);
  /* a piece that is device memory; a NULL piece; sizes that overflow */
  rdev_rt_iov_t dev_piece[] = {{h, 10}, {d2, 10}};
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 100, dev_piece, 2, s), RDEV_INVALID_PARAM);
  rdev_rt_iov_t null_piece[] = {{h, 10}, {NULL, 10}};
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 100, null_piece, 2, s), RDEV_INVALID_PARAM);
  rdev_rt_iov_t huge[] = {{h, SIZE_MAX - 5}, {h, 10}};
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, SIZE_MAX, huge, 2, s), RDEV_RT_PARAM_INVALID);
  /* dst not device memory; bad counts; no stream */
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, h + 128, 100, two, 1, s), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 100, two, -1, s), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 100, NULL, 2, s), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, d, 100, two, 1, NULL), RDEV_INVALID_RESOURCE_HANDLE);
  /* nothing was queued by the refused calls; zero pieces are a no-op */
  ck_assert_int_eq(rdev_rt_memcpy_gather_async(rt, NULL, 0, NULL, 0, s), RDEV_OK);
  size_t pending = 1;
  ck_assert_int_eq(rdev_rt_stream_pending(s, &pending), RDEV_OK);
  ck_assert_uint_eq(pending, 0);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_default_kind_infers_direction) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 4096 };
  unsigned char src[N], mid[N], dst[N], dst2[N];
  fill_random(src, N);
  memset(mid, 0, N);
  memset(dst, 0, N);
  memset(dst2, 0, N);
  void *a = dmalloc(rt, 0, N), *b = dmalloc(rt, 1, N);
  ck_assert_int_eq(rdev_rt_memcpy(rt, mid, N, src, N, RDEV_MEMCPY_DEFAULT), RDEV_OK); /* H2H */
  ck_assert_int_eq(rdev_rt_memcpy(rt, a, N, mid, N, RDEV_MEMCPY_DEFAULT), RDEV_OK);   /* H2D */
  ck_assert_int_eq(rdev_rt_memcpy(rt, b, N, a, N, RDEV_MEMCPY_DEFAULT), RDEV_OK);     /* D2D */
  ck_assert_int_eq(rdev_rt_memcpy(rt, dst, N, b, N, RDEV_MEMCPY_DEFAULT), RDEV_OK);   /* D2H */
  ck_assert_mem_eq(src, mid, N);
  ck_assert_mem_eq(src, dst, N);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, dst2, N, a, N, RDEV_MEMCPY_DEFAULT, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_mem_eq(src, dst2, N);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_count_over_dest_max_is_rt_param_invalid) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 1000);
  unsigned char h[1000] = {0};
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 99, h, 100, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_RT_PARAM_INVALID);
  ck_assert_int_eq(RDEV_RT_PARAM_INVALID, 107000);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 99, d, 100, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_RT_PARAM_INVALID);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, d, 0, h, 1, RDEV_MEMCPY_HOST_TO_DEVICE, s), RDEV_RT_PARAM_INVALID);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 10, 0, 11), RDEV_RT_PARAM_INVALID);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 10, 0, 11, s), RDEV_RT_PARAM_INVALID);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_count_zero_is_noop_even_with_null_pointers) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_memcpy(rt, NULL, 0, NULL, 0, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, NULL, 0, NULL, 0, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, NULL, 100, NULL, 0, RDEV_MEMCPY_DEFAULT), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, NULL, 0, NULL, 0, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset(rt, NULL, 0, 7, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, NULL, 0, 7, 0, s), RDEV_OK);
  int done = 0;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  /* a count-0 copy leaves the destination alone */
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0x11, 64), RDEV_OK);
  unsigned char h[64];
  memset(h, 0x22, sizeof h);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 64, h, 0, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  d2h(rt, h, d, 64);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(h[i], 0x11);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_null_pointer_with_count_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  void *d = dmalloc(rt, 0, 64);
  unsigned char h[64];
  ck_assert_int_eq(rdev_rt_memcpy(rt, NULL, 64, h, 64, RDEV_MEMCPY_HOST_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 64, NULL, 64, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memset(rt, NULL, 64, 0, 64), RDEV_INVALID_PARAM);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_past_end_of_device_buffer_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 100); /* reserves 192: padding is not part of it */
  void *d2 = dmalloc(rt, 0, 100);
  unsigned char h[1000];
  memset(h, 0, sizeof h);
  /* destination side */
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 1000, h, 101, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)d + 50, 1000, h, 51, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)d + 50, 1000, h, 50, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, d, 1000, h, 101, RDEV_MEMCPY_HOST_TO_DEVICE, s), RDEV_INVALID_PARAM);
  /* source side */
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 1000, d, 101, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 1000, (char *)d + 99, 2, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 1000, (char *)d + 99, 1, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 1000, d, 101, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_INVALID_PARAM);
  /* D2D, either side */
  void *big = dmalloc(rt, 0, 1000);
  ck_assert_int_eq(rdev_rt_memcpy(rt, big, 1000, d, 128, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d2, 1000, big, 128, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d2, 1000, d, 100, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_wrong_kind_for_pointers_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 256), *d2 = dmalloc(rt, 0, 256);
  unsigned char h[256] = {0}, h2[256] = {0};
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 256, h2, 256, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 256, d2, 256, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 256, h2, 256, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 256, d2, 256, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 256, d, 256, RDEV_MEMCPY_HOST_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 256, h, 256, RDEV_MEMCPY_HOST_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 256, h, 256, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 256, d, 256, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 256, h, 256, (rdev_memcpy_kind_t)5), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 256, h2, 256, RDEV_MEMCPY_HOST_TO_DEVICE, s), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_d2d_unaligned_is_memory_address_unaligned) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *a = dmalloc(rt, 0, 1024), *b = dmalloc(rt, 0, 1024);
  ck_assert_int_eq(rdev_rt_memcpy(rt, b, 1024, (char *)a + 1, 16, RDEV_MEMCPY_DEVICE_TO_DEVICE),
                   RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)b + 32, 1024, a, 16, RDEV_MEMCPY_DEVICE_TO_DEVICE),
                   RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, (char *)b + 8, 1024, a, 16, RDEV_MEMCPY_DEVICE_TO_DEVICE, s),
                   RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(rdev_rt_memcpy(rt, b, 1024, (char *)a + 1, 16, RDEV_MEMCPY_DEFAULT), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)b + 64, 960, (char *)a + 128, 16, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
  /* H2D and D2H do not need alignment */
  unsigned char h[16] = {1, 2, 3};
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)a + 3, 16, h, 16, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 16, (char *)a + 5, 16, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memcpy_d2d_overlapping_within_one_buffer) {
  rdev_rt_t *rt = open_small();
  enum { N = 1024 };
  unsigned char src[N], out[N];
  for (int i = 0; i < N; i++) src[i] = (unsigned char)i;
  void *d = dmalloc(rt, 0, N);
  h2d(rt, d, src, N);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)d + 64, N - 64, d, 512, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
  d2h(rt, out, d, N);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(out[i], (unsigned char)i);
  for (int i = 0; i < 512; i++) ck_assert_int_eq(out[64 + i], (unsigned char)i);
  for (int i = 576; i < N; i++) ck_assert_int_eq(out[i], (unsigned char)i);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memset_sets_low_byte_of_value) {
  rdev_rt_t *rt = open_small();
  enum { N = 1000 };
  unsigned char h[N];
  void *d = dmalloc(rt, 0, N);
  ck_assert_int_eq(rdev_rt_memset(rt, d, N, 0, N), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset(rt, (char *)d + 10, N - 10, 0x1234, 500), RDEV_OK);
  d2h(rt, h, d, N);
  for (int i = 0; i < N; i++) ck_assert_int_eq(h[i], (i >= 10 && i < 510) ? 0x34 : 0);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memset_async_applies_after_sync) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 1);
  enum { N = 4096 };
  unsigned char h[N];
  void *d = dmalloc(rt, 1, N);
  ck_assert_int_eq(rdev_rt_memset(rt, d, N, 0, N), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, N, 0xab, N / 2, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, (char *)d + N / 2, N / 2, 0xcd, N / 2, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, h, d, N);
  for (int i = 0; i < N; i++) ck_assert_int_eq(h[i], i < N / 2 ? 0xab : 0xcd);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_memset_past_end_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 100);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 1000, 0, 101), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memset(rt, (char *)d + 60, 1000, 0, 41), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memset(rt, (char *)d + 100, 1000, 0, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 1000, 0, 101, s), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memset(rt, (char *)d + 60, 1000, 0, 40), RDEV_OK);
  unsigned char h[16];
  ck_assert_int_eq(rdev_rt_memset(rt, h, 16, 0, 16), RDEV_INVALID_PARAM); /* host memory */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

static Suite *copy_suite(void) {
  Suite *s = suite_create("copies");
  TCase *tc = tcase("copies");
  tcase_add_test(tc, test_memcpy_sync_h2d_d2h_round_trip);
  tcase_add_test(tc, test_memcpy_sync_d2d_round_trip_across_devices);
  tcase_add_test(tc, test_memcpy_sync_h2h_copies);
  tcase_add_test(tc, test_memcpy_async_round_trip_all_kinds);
  tcase_add_test(tc, test_memcpy_gather_async_lands_pieces_end_to_end);
  tcase_add_test(tc, test_memcpy_gather_async_checks_like_memcpy);
  tcase_add_test(tc, test_memcpy_default_kind_infers_direction);
  tcase_add_test(tc, test_memcpy_count_over_dest_max_is_rt_param_invalid);
  tcase_add_test(tc, test_memcpy_count_zero_is_noop_even_with_null_pointers);
  tcase_add_test(tc, test_memcpy_null_pointer_with_count_is_invalid_param);
  tcase_add_test(tc, test_memcpy_past_end_of_device_buffer_is_invalid_param);
  tcase_add_test(tc, test_memcpy_wrong_kind_for_pointers_is_invalid_param);
  tcase_add_test(tc, test_memcpy_d2d_unaligned_is_memory_address_unaligned);
  tcase_add_test(tc, test_memcpy_d2d_overlapping_within_one_buffer);
  tcase_add_test(tc, test_memset_sets_low_byte_of_value);
  tcase_add_test(tc, test_memset_async_applies_after_sync);
  tcase_add_test(tc, test_memset_past_end_is_invalid_param);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(copy_suite(), (Suite *)NULL); }
