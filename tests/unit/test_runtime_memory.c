/*
 * tests/unit/test_runtime_memory.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): device and host memory: the
 * reserved-size formula, rdev_rt_malloc's checks, alignment and accounting,
 * OOM, fragmentation and coalescing, bad frees, rdev_rt_mem_lookup, host
 * allocations, what rdev_rt_close releases, and address spaces. Suite
 * "memory".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

START_TEST(test_mem_reserved_size_formula) {
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(1), 64);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(31), 64);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(32), 64);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(33), 128);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(64), 128);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(96), 128);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(97), 192);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(100), 192);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(4096), 4160);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(4064), 4096);
  /* general rule, checked against an independent computation */
  for (size_t n = 1; n < 5000; n++) {
    size_t r = ((n + 31) / 32) * 32 + 32;
    r = ((r + 63) / 64) * 64;
    ck_assert_uint_eq(rdev_rt_mem_reserved_size(n), r);
  }
}
END_TEST

START_TEST(test_mem_reserved_size_zero_and_overflow_are_zero) {
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(0), 0);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(SIZE_MAX), 0);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(SIZE_MAX - 40), 0);
}
END_TEST

START_TEST(test_malloc_returns_64_byte_aligned_addresses) {
  rdev_rt_t *rt = open_small();
  void *ps[200];
  for (int i = 0; i < 200; i++) {
    ps[i] = dmalloc(rt, i % 2, (size_t)(i * 37 % 300) + 1);
    ck_assert_uint_eq((uintptr_t)ps[i] % RDEV_RT_MEM_ALIGN, 0);
  }
  for (int i = 0; i < 200; i++) ck_assert_int_eq(rdev_rt_free(rt, ps[i]), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_size_zero_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  void *p = (void *)0x1;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 0, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_INVALID_PARAM);
  ck_assert_ptr_null(p);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_null_out_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, NULL, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_INVALID_PARAM);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_bad_policy_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 64, (rdev_mem_policy_t)6), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 64, (rdev_mem_policy_t)-1), RDEV_INVALID_PARAM);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  /* every defined policy is accepted */
  for (int pol = RDEV_MEM_MALLOC_HUGE_FIRST; pol <= RDEV_MEM_MALLOC_NORMAL_ONLY_P2P; pol++) {
    ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 64, (rdev_mem_policy_t)pol), RDEV_OK);
    ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  }
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_free_bytes_drop_by_reserved_size_and_return_after_free) {
  rdev_rt_t *rt = open_small();
  size_t total = total_of(rt, 0);
  ck_assert_uint_eq(free_of(rt, 0), total);
  size_t sizes[] = {1, 32, 33, 64, 100, 4096, 12345, 1 * MIB};
  enum { N = sizeof sizes / sizeof sizes[0] };
  void *ps[N];
  size_t expect = total;
  for (int i = 0; i < N; i++) {
    ps[i] = dmalloc(rt, 0, sizes[i]);
    expect -= rdev_rt_mem_reserved_size(sizes[i]);
    ck_assert_uint_eq(free_of(rt, 0), expect);
    ck_assert_uint_eq(free_of(rt, 1), total); /* other device untouched */
  }
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(rdev_rt_free(rt, ps[i]), RDEV_OK);
    expect += rdev_rt_mem_reserved_size(sizes[i]);
    ck_assert_uint_eq(free_of(rt, 0), expect);
  }
  ck_assert_uint_eq(free_of(rt, 0), total);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_too_large_is_device_oom) {
  rdev_rt_t *rt = open_small();
  void *p = (void *)0x1;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 16 * MIB, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_ptr_null(p);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, SIZE_MAX, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, SIZE_MAX / 2, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_oom_when_arena_exhausted) {
  rdev_rt_t *rt = open_small();
  /* 65504 bytes reserve exactly 64 KiB: 256 of them fill 16 MiB */
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(65504), 65536);
  void *ps[256];
  for (int i = 0; i < 256; i++) ps[i] = dmalloc(rt, 0, 65504);
  ck_assert_uint_eq(free_of(rt, 0), 0);
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 1, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_int_eq(rdev_rt_free(rt, ps[100]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 65504, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_ptr_eq(p, ps[100]);
  for (int i = 0; i < 256; i++) ck_assert_int_eq(rdev_rt_free(rt, ps[i]), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fragmentation_oom_then_coalescing_restores_whole_arena) {
  rdev_rt_t *rt = open_small();
  size_t total = total_of(rt, 0);
  enum { NB = 256 };
  void *ps[NB];
  for (int i = 0; i < NB; i++) ps[i] = dmalloc(rt, 0, 65504); /* 64 KiB reserved each */
  ck_assert_uint_eq(free_of(rt, 0), 0);
  for (int i = 0; i < NB; i += 2) ck_assert_int_eq(rdev_rt_free(rt, ps[i]), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), total / 2);
  /* 128 KiB fits nowhere: the largest hole is 64 KiB though 8 MiB are free */
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 131040, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 65505, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_uint_eq(free_of(rt, 0), total / 2);
  /* a hole-sized block still fits */
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 65504, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  for (int i = 1; i < NB; i += 2) ck_assert_int_eq(rdev_rt_free(rt, ps[i]), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), total);
  /* everything merged back into one block: the whole arena in one allocation */
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(total - 32), total);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, total - 32, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), 0);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), total);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_coalescing_merges_with_both_neighbours) {
  rdev_rt_t *rt = open_rt(1, 4 * MIB);
  size_t total = total_of(rt, 0);
  void *a = dmalloc(rt, 0, 1 * MIB - 32);
  void *b = dmalloc(rt, 0, 1 * MIB - 32);
  void *c = dmalloc(rt, 0, 1 * MIB - 32);
  void *d = dmalloc(rt, 0, 1 * MIB - 32);
  ck_assert_uint_eq(free_of(rt, 0), 0);
  ck_assert_int_eq(rdev_rt_free(rt, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, c), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, b), RDEV_OK); /* merges with a (before) and c (after) */
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 3 * MIB - 32, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, d), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), total);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, total - 32, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* "no room is RDEV_RT_DEVICE_OOM": a request that fits a free block must not
 * fail, however many smaller free blocks of the same size class precede it. */
START_TEST(test_malloc_finds_fitting_block_behind_many_smaller_free_blocks) {
  rdev_rt_t *rt = open_rt(1, 16 * MIB);
  enum { NSMALL = 80 };
  /* big: reserves 7936 bytes (size class [4096, 8192)) */
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(7904), 7936);
  ck_assert_uint_eq(rdev_rt_mem_reserved_size(4064), 4096);
  void *big = dmalloc(rt, 0, 7904);
  void *sep0 = dmalloc(rt, 0, 32);
  void *small[NSMALL], *sep[NSMALL];
  for (int i = 0; i < NSMALL; i++) {
    small[i] = dmalloc(rt, 0, 4064); /* same size class as big, but too small for it */
    sep[i] = dmalloc(rt, 0, 32);     /* keeps free blocks from merging */
  }
  size_t rest = free_of(rt, 0);
  void *filler = dmalloc(rt, 0, rest - 32); /* no larger free block anywhere */
  ck_assert_uint_eq(free_of(rt, 0), 0);
  ck_assert_int_eq(rdev_rt_free(rt, big), RDEV_OK);
  for (int i = 0; i < NSMALL; i++) ck_assert_int_eq(rdev_rt_free(rt, small[i]), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), 7936 + (size_t)NSMALL * 4096);
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 7904, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_ptr_eq(p, big);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, sep0), RDEV_OK);
  for (int i = 0; i < NSMALL; i++) ck_assert_int_eq(rdev_rt_free(rt, sep[i]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, filler), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_double_free_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  void *p = dmalloc(rt, 0, 1000);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_INVALID_PARAM);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_free_interior_pointer_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  void *p = dmalloc(rt, 0, 1000);
  size_t after = free_of(rt, 0);
  ck_assert_int_eq(rdev_rt_free(rt, (char *)p + 64), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free(rt, (char *)p + 1), RDEV_INVALID_PARAM);
  ck_assert_uint_eq(free_of(rt, 0), after);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_free_host_or_null_pointer_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  int local = 0;
  ck_assert_int_eq(rdev_rt_free(rt, &local), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free(rt, NULL), RDEV_INVALID_PARAM);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_mem_lookup_interior_pointer_finds_allocation) {
  rdev_rt_t *rt = open_small();
  void *p = dmalloc(rt, 1, 100);
  void *base = NULL;
  size_t size = 0;
  int dev = -1;
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, p, &base, &size, &dev), RDEV_OK);
  ck_assert_ptr_eq(base, p);
  ck_assert_uint_eq(size, 100);
  ck_assert_int_eq(dev, 1);
  base = NULL;
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, (char *)p + 50, &base, &size, &dev), RDEV_OK);
  ck_assert_ptr_eq(base, p);
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, (char *)p + 99, &base, &size, &dev), RDEV_OK);
  ck_assert_ptr_eq(base, p);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_mem_lookup_padding_past_requested_size_not_found) {
  rdev_rt_t *rt = open_small();
  void *p = dmalloc(rt, 0, 100); /* reserves 192 */
  void *base;
  size_t size;
  int dev;
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, (char *)p + 100, &base, &size, &dev), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, (char *)p + 191, &base, &size, &dev), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_mem_lookup_host_and_freed_memory_not_found) {
  rdev_rt_t *rt = open_small();
  void *base;
  size_t size;
  int dev;
  int local = 0;
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, &local, &base, &size, &dev), RDEV_INVALID_PARAM);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, NULL, &base, &size, &dev), RDEV_INVALID_PARAM);
  void *h = NULL;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, 100), RDEV_OK);
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, h, &base, &size, &dev), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free_host(rt, h), RDEV_OK);
  void *p = dmalloc(rt, 0, 100);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, p, &base, &size, &dev), RDEV_INVALID_PARAM);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_host_is_page_aligned_and_writable) {
  rdev_rt_t *rt = open_small();
  size_t sizes[] = {1, 100, 4096, 10000, 1 * MIB};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *h = NULL;
    ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, sizes[i]), RDEV_OK);
    ck_assert_ptr_nonnull(h);
    ck_assert_uint_eq((uintptr_t)h % 4096, 0);
    memset(h, 0x5a, sizes[i]);
    ck_assert_int_eq(((unsigned char *)h)[sizes[i] - 1], 0x5a);
    ck_assert_int_eq(rdev_rt_free_host(rt, h), RDEV_OK);
  }
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB); /* host memory is not device memory */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_malloc_host_size_zero_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  void *h = (void *)0x1;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, 0), RDEV_INVALID_PARAM);
  ck_assert_ptr_null(h);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_free_host_unknown_pointer_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  int local;
  ck_assert_int_eq(rdev_rt_free_host(rt, &local), RDEV_INVALID_PARAM);
  void *m = malloc(64);
  ck_assert_int_eq(rdev_rt_free_host(rt, m), RDEV_INVALID_PARAM);
  free(m);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_free_host(rt, d), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free(rt, d), RDEV_OK);
  void *h = NULL;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, 64), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free_host(rt, h), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free_host(rt, h), RDEV_INVALID_PARAM); /* double free */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_close_releases_unfreed_device_and_host_memory) {
  /* LeakSanitizer (ASan build) reports anything close leaves behind */
  rdev_rt_t *rt = open_small();
  for (int i = 0; i < 50; i++) (void)dmalloc(rt, i % 2, 1000 + (size_t)i);
  void *h = NULL;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, 5000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, 7), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

/* ---- address spaces ---- */

static int in_range(const void *p, uint64_t base, uint64_t size) {
  uint64_t v = (uint64_t)(uintptr_t)p;
  return v >= base && v - base < size;
}

START_TEST(test_spaces_have_disjoint_ranges_and_malloc_in_lands_in_its_own) {
  rdev_rt_t *rt = open_small();
  rdev_rt_space_t *a, *b;
  ck_assert_int_eq(rdev_rt_space_create(rt, &a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_space_create(rt, &b), RDEV_OK);
  if (on_acl()) { /* CANN picks device addresses: a space is a set of allocations, no range */
    uint64_t x, y;
    ck_assert_int_eq(rdev_rt_space_range(a, 0, &x, &y), RDEV_API_NOT_SUPPORT);
    rdev_rt_space_destroy(a);
    rdev_rt_space_destroy(b);
    rdev_rt_close(rt);
    return;
  }
  uint64_t ab[2], as[2], bb[2], bs[2];
  for (int d = 0; d < 2; d++) {
    ck_assert_int_eq(rdev_rt_space_range(a, d, &ab[d], &as[d]), RDEV_OK);
    ck_assert_int_eq(rdev_rt_space_range(b, d, &bb[d], &bs[d]), RDEV_OK);
    ck_assert_uint_eq(as[d], 16 * MIB);
  }
  /* four ranges, pairwise disjoint, none of them host-looking (below 2^57) */
  uint64_t lo[4] = {ab[0], ab[1], bb[0], bb[1]}, sz[4] = {as[0], as[1], bs[0], bs[1]};
  for (int i = 0; i < 4; i++) {
    ck_assert_uint_ge(lo[i], (uint64_t)1 << 57);
    for (int j = i + 1; j < 4; j++) ck_assert(lo[i] + sz[i] <= lo[j] || lo[j] + sz[j] <= lo[i]);
  }
  uint64_t x, y;
  ck_assert_int_eq(rdev_rt_space_range(a, 2, &x, &y), RDEV_RT_INVALID_DEVICEID);
  void *pa, *pb, *pr;
  ck_assert_int_eq(rdev_rt_malloc_in(a, 1, &pa, 1000, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc_in(b, 1, &pb, 1000, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc(rt, 1, &pr, 1000, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert(in_range(pa, ab[1], as[1]));
  ck_assert(in_range(pb, bb[1], bs[1]));
  ck_assert(!in_range(pr, ab[1], as[1]) && !in_range(pr, bb[1], bs[1]));
  void *base;
  size_t size;
  int dev;
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, (char *)pa + 999, &base, &size, &dev), RDEV_OK);
  ck_assert_ptr_eq(base, pa);
  ck_assert_uint_eq(size, 1000);
  ck_assert_int_eq(dev, 1);
  /* pa's offset seen through b's range is not an allocation: spaces do not
   * share blocks even where the arena offsets match */
  void *forged = (void *)(uintptr_t)(bb[1] + ((uint64_t)(uintptr_t)pa - ab[1]));
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, forged, &base, &size, &dev), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free(rt, forged), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memset(rt, forged, 8, 0, 8), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free(rt, pa), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, pb), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, pr), RDEV_OK);
  rdev_rt_space_destroy(a);
  rdev_rt_space_destroy(b);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_space_destroyed_keeps_its_allocations_until_freed_and_is_not_reused_at_once) {
  rdev_rt_t *rt = open_small();
  rdev_rt_space_t *a, *b;
  ck_assert_int_eq(rdev_rt_space_create(rt, &a), RDEV_OK);
  uint64_t abase = 0, asize, bbase = 0, bsize;
  if (!on_acl()) ck_assert_int_eq(rdev_rt_space_range(a, 0, &abase, &asize), RDEV_OK); /* acl: no ranges */
  void *p;
  ck_assert_int_eq(rdev_rt_malloc_in(a, 0, &p, 256, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  rdev_rt_space_destroy(a);
  /* still valid: work queued before the owner went may still use it */
  unsigned char buf[256], back[256];
  for (int i = 0; i < 256; i++) buf[i] = (unsigned char)i;
  ck_assert_int_eq(rdev_rt_memcpy(rt, p, 256, buf, 256, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, back, 256, p, 256, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_mem_eq(back, buf, 256);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  /* a freed address of a given-up space resolves to nothing */
  void *base;
  size_t size;
  int dev;
  ck_assert_int_eq(rdev_rt_mem_lookup(rt, p, &base, &size, &dev), RDEV_INVALID_PARAM);
  /* the next space gets another range */
  ck_assert_int_eq(rdev_rt_space_create(rt, &b), RDEV_OK);
  if (!on_acl()) {
    ck_assert_int_eq(rdev_rt_space_range(b, 0, &bbase, &bsize), RDEV_OK);
    ck_assert_uint_ne(bbase, abase);
  }
  rdev_rt_space_destroy(b);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_spaces_are_limited_and_come_back) {
  rdev_rt_t *rt = open_rt(1, 1 * MIB);
  rdev_rt_space_t **sp = calloc(RDEV_RT_MAX_SPACES, sizeof *sp);
  ck_assert_ptr_nonnull(sp);
  for (int i = 0; i < RDEV_RT_MAX_SPACES; i++) ck_assert_int_eq(rdev_rt_space_create(rt, &sp[i]), RDEV_OK);
  rdev_rt_space_t *more;
  ck_assert_int_eq(rdev_rt_space_create(rt, &more), RDEV_STORAGE_OVER_LIMIT);
  ck_assert_str_ne(rdev_rt_last_error(), "");
  rdev_rt_space_destroy(sp[7]);
  ck_assert_int_eq(rdev_rt_space_create(rt, &sp[7]), RDEV_OK);
  for (int i = 0; i < RDEV_RT_MAX_SPACES; i++) rdev_rt_space_destroy(sp[i]);
  free(sp);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_close_frees_spaces_left_with_allocations) {
  rdev_rt_t *rt = open_small();
  rdev_rt_space_t *a;
  ck_assert_int_eq(rdev_rt_space_create(rt, &a), RDEV_OK);
  void *p;
  ck_assert_int_eq(rdev_rt_malloc_in(a, 0, &p, 4096, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  rdev_rt_space_t *b;
  ck_assert_int_eq(rdev_rt_space_create(rt, &b), RDEV_OK);
  rdev_rt_space_destroy(a); /* p keeps a; b is never given up: close frees both (ASan checks) */
  rdev_rt_close(rt);
}
END_TEST

static Suite *memory_suite(void) {
  Suite *s = suite_create("memory");
  TCase *tc = tcase("memory");
  tcase_add_test(tc, test_mem_reserved_size_formula);
  tcase_add_test(tc, test_mem_reserved_size_zero_and_overflow_are_zero);
  tcase_add_test(tc, test_malloc_returns_64_byte_aligned_addresses);
  tcase_add_test(tc, test_malloc_size_zero_is_invalid_param);
  tcase_add_test(tc, test_malloc_null_out_is_invalid_param);
  tcase_add_test(tc, test_malloc_bad_policy_is_invalid_param);
  tcase_add_test(tc, test_free_bytes_drop_by_reserved_size_and_return_after_free);
  tcase_add_test(tc, test_malloc_too_large_is_device_oom);
  tcase_add_test(tc, test_malloc_oom_when_arena_exhausted);
  tcase_add_test(tc, test_fragmentation_oom_then_coalescing_restores_whole_arena);
  tcase_add_test(tc, test_coalescing_merges_with_both_neighbours);
  tcase_add_test(tc, test_malloc_finds_fitting_block_behind_many_smaller_free_blocks);
  tcase_add_test(tc, test_double_free_is_invalid_param);
  tcase_add_test(tc, test_free_interior_pointer_is_invalid_param);
  tcase_add_test(tc, test_free_host_or_null_pointer_is_invalid_param);
  tcase_add_test(tc, test_mem_lookup_interior_pointer_finds_allocation);
  tcase_add_test(tc, test_mem_lookup_padding_past_requested_size_not_found);
  tcase_add_test(tc, test_mem_lookup_host_and_freed_memory_not_found);
  tcase_add_test(tc, test_malloc_host_is_page_aligned_and_writable);
  tcase_add_test(tc, test_malloc_host_size_zero_is_invalid_param);
  tcase_add_test(tc, test_free_host_unknown_pointer_is_invalid_param);
  tcase_add_test(tc, test_close_releases_unfreed_device_and_host_memory);
  tcase_add_test(tc, test_spaces_have_disjoint_ranges_and_malloc_in_lands_in_its_own);
  tcase_add_test(tc, test_space_destroyed_keeps_its_allocations_until_freed_and_is_not_reused_at_once);
  tcase_add_test(tc, test_spaces_are_limited_and_come_back);
  tcase_add_test(tc, test_close_frees_spaces_left_with_allocations);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(memory_suite(), (Suite *)NULL); }
