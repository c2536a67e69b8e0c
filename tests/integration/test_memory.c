/*
 * tests/integration/test_memory.c — device and host memory through a real
 * rdevd: malloc/free rules, sync and async copies of every kind at sizes
 * that cross the wire's chunking (1 B .. 5 MiB + 3) and at interior offsets,
 * memset, and the destMax/count/range rules. Data is random and checked byte
 * for byte, including the bytes around each copy that must stay untouched.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"

#define PAD 64    /* guard bytes checked after each copied range */
#define FILL 0x5A /* what the guard bytes hold */

static const size_t k_sizes[] = {1, 4096, FX_MiB, FX_MiB + 1, 5 * FX_MiB + 3};
static const size_t k_offsets[] = {0, 1, 4097};
/* On-chip D2D copies need 64-byte-aligned addresses (CANN): D2D offsets. */
static const size_t k_d2d_offsets[] = {0, 64, 4096 + 64};
#define NSIZES (sizeof k_sizes / sizeof k_sizes[0])
#define NOFFS (sizeof k_offsets / sizeof k_offsets[0])
#define CAP (5 * FX_MiB + 3 + 8192 + PAD) /* room for every (size, offset) */

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* Reads dev[0, win) back and checks it is FILL except data at [k, k+n). */
static void check_window(rdev_session_t *s, void *dev, size_t cap, size_t k, const uint8_t *data, size_t n,
                         const char *what) {
  size_t win = min_sz(cap, k + n + PAD);
  uint8_t *back = fx_xmalloc(win), *want = fx_xmalloc(win);
  memset(back, 0, win);
  memset(want, FILL, win);
  memcpy(want + k, data, n);
  FX_OK(rdev_memcpy(s, back, win, dev, win, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, win, "%s: %zu bytes at offset %zu", what, n, k);
  free(back);
  free(want);
}

/* ---- malloc, free, host memory ------------------------------------------------- */

START_TEST(test_malloc_size_zero_is_invalid_param) {
  rdev_session_t *s = fx_open();
  void *p = (void *)1;
  FX_EXPECT(rdev_malloc(s, &p, 0, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_INVALID_PARAM);
  ck_assert_ptr_null(p);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_malloc_out_of_memory) {
  rdev_session_t *s = fx_open();
  void *p = (void *)1, *big = NULL, *q = NULL;
  int n;
  FX_OK(rdev_device_count(s, &n)); /* the open's answer, with the device's memory, is in */
  FX_EXPECT(rdev_malloc(s, &p, FX_SIM_MEM + 1, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_ptr_null(p);
  FX_EXPECT(rdev_malloc(s, &p, (size_t)1 << 40, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  /* exhaustion by earlier allocations, then room again after a free */
  FX_OK(rdev_malloc(s, &big, 40 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_EXPECT(rdev_malloc(s, &q, 30 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  FX_OK(rdev_free(s, big));
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  FX_OK(rdev_malloc(s, &q, 30 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_free(s, q));
  rdev_session_close(s);
}
END_TEST

/* A malloc waits for no reply: the client places it and checks what the
 * session alone holds. What only the server can know (here, memory
 * another session holds) fails later: the work that names the memory
 * fails with the allocation's 207001, so does the next synchronize of
 * the session, once, and the free is fine. */
START_TEST(test_malloc_refused_later_fails_the_next_synchronize) {
  rdev_session_t *a = fx_open(), *b = fx_open();
  void *big = NULL, *q = NULL;
  size_t free_b, total;
  FX_OK(rdev_malloc(a, &big, 40 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_mem_info(a, &free_b, &total)); /* a's allocation is made */
  ck_assert_uint_le(free_b, FX_SIM_MEM - 40 * FX_MiB);
  int n;
  FX_OK(rdev_device_count(b, &n));
  FX_OK(rdev_malloc(b, &q, 30 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST)); /* b alone is within the device */
  ck_assert_ptr_nonnull(q);
  ck_assert_int_eq(rdev_ptr_on_device(b, q), 1);
  rdev_stream_t *st;
  FX_OK(rdev_stream_create(b, &st));
  FX_OK(rdev_memset_async(b, q, 30 * FX_MiB, 7, 4096, st));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_RT_MEMORY_ALLOCATION); /* the memset's */
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "failed"));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_RT_MEMORY_ALLOCATION); /* the malloc's */
  FX_OK(rdev_stream_synchronize(st));
  /* synchronous memsets and small H2D copies wait for no reply either */
  char host[4096] = {1};
  FX_OK(rdev_memset(b, q, 30 * FX_MiB, 7, 4096));
  FX_OK(rdev_memcpy(b, q, 30 * FX_MiB, host, sizeof host, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_RT_MEMORY_ALLOCATION); /* the memset's, the first */
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_free(b, q));
  FX_OK(rdev_stream_synchronize(st));
  /* the range is b's again: a new allocation there works once a frees */
  FX_OK(rdev_free(a, big));
  ck_assert_uint_eq(fx_wait_free(a, FX_SIM_MEM, 5), FX_SIM_MEM);
  FX_OK(rdev_malloc(b, &q, 30 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset_async(b, q, 30 * FX_MiB, 7, 4096, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_free(b, q));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(b);
  rdev_session_close(a);
}
END_TEST

START_TEST(test_malloc_returns_distinct_aligned_pointers) {
  rdev_session_t *s = fx_open();
  void *p[8];
  for (int i = 0; i < 8; i++) {
    FX_OK(rdev_malloc(s, &p[i], 100 + (size_t)i * 333, RDEV_MEM_MALLOC_HUGE_FIRST));
    ck_assert_uint_eq((uintptr_t)p[i] % 64, 0);
    for (int j = 0; j < i; j++) ck_assert_ptr_ne(p[i], p[j]);
  }
  for (int i = 0; i < 8; i++) FX_OK(rdev_free(s, p[i]));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_free_rejects_foreign_interior_and_double) {
  rdev_session_t *s = fx_open();
  void *p = NULL;
  uint8_t host[64];
  FX_OK(rdev_malloc(s, &p, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_EXPECT(rdev_free(s, (uint8_t *)p + 64), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_free(s, host), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_free(s, NULL), RDEV_INVALID_PARAM);
  FX_OK(rdev_free(s, p));
  FX_EXPECT(rdev_free(s, p), RDEV_INVALID_PARAM);
  /* a freed buffer is no longer device memory */
  FX_EXPECT(rdev_memcpy(s, host, sizeof host, p, sizeof host, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_malloc_host_free_host) {
  rdev_session_t *s = fx_open();
  void *h = NULL;
  FX_OK(rdev_malloc_host(s, &h, 3 * FX_MiB + 5));
  ck_assert_ptr_nonnull(h);
  ck_assert_uint_eq((uintptr_t)h % 64, 0);
  memset(h, 0xEE, 3 * FX_MiB + 5); /* all of it writable */
  /* usable for transfers */
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 3 * FX_MiB + 5, RDEV_MEM_MALLOC_HUGE_FIRST));
  fx_fill_random(h, 3 * FX_MiB + 5, 5);
  uint8_t *copy = fx_xmalloc(3 * FX_MiB + 5);
  memcpy(copy, h, 3 * FX_MiB + 5);
  FX_OK(rdev_memcpy(s, d, 3 * FX_MiB + 5, h, 3 * FX_MiB + 5, RDEV_MEMCPY_HOST_TO_DEVICE));
  memset(h, 0, 3 * FX_MiB + 5);
  FX_OK(rdev_memcpy(s, h, 3 * FX_MiB + 5, d, 3 * FX_MiB + 5, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(h, copy, 3 * FX_MiB + 5, "malloc_host buffer round trip");
  FX_OK(rdev_free_host(s, h));
  FX_OK(rdev_free(s, d));
  void *z = (void *)1;
  FX_EXPECT(rdev_malloc_host(s, &z, 0), RDEV_INVALID_PARAM);
  ck_assert_ptr_null(z);
  FX_EXPECT(rdev_free_host(s, NULL), RDEV_INVALID_PARAM);
  free(copy);
  rdev_session_close(s);
}
END_TEST

/* rdev_malloc_host memory is resident on return (as CANN's pinned memory),
 * huge-page aligned from 2 MiB, and rdev_free_host refuses memory it did
 * not make. */
START_TEST(test_malloc_host_resident_and_owned) {
  rdev_session_t *s = fx_open();
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  const size_t sizes[] = {100, 64 * 1024 + 3, 2 * FX_MiB, 5 * FX_MiB + 1};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    void *h = NULL;
    FX_OK(rdev_malloc_host(s, &h, sizes[k]));
    ck_assert_uint_eq((uintptr_t)h % (sizes[k] >= 2 * FX_MiB ? 2 * FX_MiB : pg), 0);
    size_t npages = (sizes[k] + pg - 1) / pg;
    unsigned char *vec = fx_xmalloc(npages);
    ck_assert_int_eq(mincore(h, npages * pg, vec), 0);
    for (size_t i = 0; i < npages; i++) ck_assert_msg(vec[i] & 1, "size %zu: page %zu not resident", sizes[k], i);
    free(vec);
    memset(h, 0x5A, sizes[k]);
    FX_OK(rdev_free_host(s, h));
  }
  void *m = fx_xmalloc(4096);
  memset(m, 0, 4096);
  FX_EXPECT(rdev_free_host(s, (char *)m + 64), RDEV_INVALID_PARAM);
  free(m);
  rdev_session_close(s);
}
END_TEST

/* D2H into memory just malloc'd (faulted in ahead of the copies) and, after
 * the session has been idle long enough for the library to let go of the
 * messages it held, again: byte for byte both times. */
START_TEST(test_d2h_fresh_memory_and_after_idle) {
  rdev_session_t *s = fx_open();
  const size_t n = 24 * FX_MiB + 77;
  uint8_t *src = fx_xmalloc(n);
  fx_fill_random(src, n, 11);
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  for (int round = 0; round < 2; round++) {
    uint8_t *fresh = malloc(n);
    ck_assert_ptr_nonnull(fresh);
    FX_OK(rdev_memcpy(s, fresh + 0, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(fresh, src, n, "D2H into fresh memory");
    free(fresh);
    usleep(1300 * 1000); /* past the held messages' idle time */
  }
  FX_OK(rdev_free(s, d));
  free(src);
  rdev_session_close(s);
}
END_TEST

/* ---- synchronous copies ----------------------------------------------------------- */

START_TEST(test_memcpy_h2d_d2h_sizes_and_offsets) {
  rdev_session_t *s = fx_open();
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(CAP), *back = fx_xmalloc(CAP);
  uint64_t seed = 100;
  for (size_t i = 0; i < NSIZES; i++) {
    for (size_t j = 0; j < NOFFS; j++) {
      size_t n = k_sizes[i], k = k_offsets[j];
      FX_OK(rdev_memset(s, d, CAP, FILL, CAP));
      fx_fill_random(src, n, seed++);
      FX_OK(rdev_memcpy(s, (uint8_t *)d + k, CAP - k, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
      check_window(s, d, CAP, k, src, n, "H2D");
      /* D2H from the interior pointer, exactly n bytes */
      memset(back, 0, n + PAD);
      FX_OK(rdev_memcpy(s, back, n, (uint8_t *)d + k, n, RDEV_MEMCPY_DEVICE_TO_HOST));
      FX_ASSERT_BYTES(back, src, n, "D2H of %zu bytes at offset %zu", n, k);
      for (size_t g = 0; g < PAD; g++) ck_assert_uint_eq(back[n + g], 0); /* nothing past count */
    }
  }
  FX_OK(rdev_free(s, d));
  free(src);
  free(back);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_memcpy_d2d_sizes_and_offsets) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(CAP);
  fx_fill_random(src, CAP, 200);
  FX_OK(rdev_memcpy(s, a, CAP, src, CAP, RDEV_MEMCPY_HOST_TO_DEVICE));
  for (size_t i = 0; i < NSIZES; i++) {
    for (size_t j = 0; j < NOFFS; j++) {
      size_t n = k_sizes[i], dk = k_d2d_offsets[j], sk = k_d2d_offsets[(j + 1) % NOFFS];
      FX_OK(rdev_memset(s, b, CAP, FILL, CAP));
      FX_OK(rdev_memcpy(s, (uint8_t *)b + dk, CAP - dk, (uint8_t *)a + sk, n, RDEV_MEMCPY_DEVICE_TO_DEVICE));
      check_window(s, b, CAP, dk, src + sk, n, "D2D");
    }
  }
  /* within one buffer, disjoint ranges */
  FX_OK(rdev_memcpy(s, (uint8_t *)a + 3 * FX_MiB, 2 * FX_MiB, a, 2 * FX_MiB, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  uint8_t *back = fx_xmalloc(2 * FX_MiB);
  FX_OK(rdev_memcpy(s, back, 2 * FX_MiB, (uint8_t *)a + 3 * FX_MiB, 2 * FX_MiB, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, src, 2 * FX_MiB, "D2D within one buffer");
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  free(src);
  free(back);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_memcpy_d2d_across_devices) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  size_t n = 2 * FX_MiB + 7;
  FX_OK(rdev_malloc(s, &a, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_device_set(s, 1));
  FX_OK(rdev_malloc(s, &b, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(src, n, 300);
  FX_OK(rdev_memcpy(s, a, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, b, n, a, n, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  memset(back, 0, n);
  FX_OK(rdev_memcpy(s, back, n, b, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, src, n, "D2D device 0 to device 1");
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  free(src);
  free(back);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_memcpy_h2h) {
  rdev_session_t *s = fx_open();
  uint8_t *src = fx_xmalloc(CAP), *dst = fx_xmalloc(CAP), *want = fx_xmalloc(CAP);
  for (size_t i = 0; i < NSIZES; i++) {
    for (size_t j = 0; j < NOFFS; j++) {
      size_t n = k_sizes[i], k = k_offsets[j];
      fx_fill_random(src, n, 400 + i * 10 + j);
      memset(dst, FILL, k + n + PAD);
      memset(want, FILL, k + n + PAD);
      memcpy(want + k, src, n);
      FX_OK(rdev_memcpy(s, dst + k, CAP - k, src, n, RDEV_MEMCPY_HOST_TO_HOST));
      FX_ASSERT_BYTES(dst, want, k + n + PAD, "H2H %zu bytes at offset %zu", n, k);
    }
  }
  free(src);
  free(dst);
  free(want);
  rdev_session_close(s);
}
END_TEST

/* RDEV_MEMCPY_DEFAULT infers the direction from the addresses. */
START_TEST(test_memcpy_default_infers_direction) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(CAP), *back = fx_xmalloc(CAP), *h2 = fx_xmalloc(CAP);
  for (size_t i = 0; i < NSIZES; i++) {
    size_t n = k_sizes[i], k = k_d2d_offsets[i % NOFFS];
    fx_fill_random(src, n, 500 + i);
    FX_OK(rdev_memset(s, a, CAP, FILL, CAP));
    FX_OK(rdev_memset(s, b, CAP, FILL, CAP));
    FX_OK(rdev_memcpy(s, (uint8_t *)a + k, CAP - k, src, n, RDEV_MEMCPY_DEFAULT)); /* H2D */
    check_window(s, a, CAP, k, src, n, "DEFAULT as H2D");
    FX_OK(rdev_memcpy(s, (uint8_t *)b + k, CAP - k, (uint8_t *)a + k, n, RDEV_MEMCPY_DEFAULT)); /* D2D */
    check_window(s, b, CAP, k, src, n, "DEFAULT as D2D");
    memset(back, 0, n);
    FX_OK(rdev_memcpy(s, back, n, (uint8_t *)b + k, n, RDEV_MEMCPY_DEFAULT)); /* D2H */
    FX_ASSERT_BYTES(back, src, n, "DEFAULT as D2H, %zu bytes", n);
    memset(h2, 0, n);
    FX_OK(rdev_memcpy(s, h2, n, back, n, RDEV_MEMCPY_DEFAULT)); /* H2H */
    FX_ASSERT_BYTES(h2, src, n, "DEFAULT as H2H, %zu bytes", n);
  }
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  free(src);
  free(back);
  free(h2);
  rdev_session_close(s);
}
END_TEST

/* D2D needs 64-byte-aligned addresses: RDEV_MEMORY_ADDRESS_UNALIGNED, at once
 * for a sync copy and at the next synchronize for an async one; nothing copied. */
START_TEST(test_memcpy_d2d_unaligned) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, a, 4096, 0x11, 4096));
  FX_OK(rdev_memset(s, b, 4096, FILL, 4096));
  FX_EXPECT(rdev_memcpy(s, (uint8_t *)b + 1, 100, a, 100, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_MEMORY_ADDRESS_UNALIGNED);
  FX_EXPECT(rdev_memcpy(s, b, 100, (uint8_t *)a + 32, 100, RDEV_MEMCPY_DEVICE_TO_DEVICE),
            RDEV_MEMORY_ADDRESS_UNALIGNED);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_memcpy_async(s, (uint8_t *)b + 3, 100, a, 100, RDEV_MEMCPY_DEVICE_TO_DEVICE, st));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_MEMORY_ADDRESS_UNALIGNED);
  FX_OK(rdev_stream_synchronize(st));
  uint8_t back[4096], want[4096];
  memset(want, FILL, sizeof want);
  FX_OK(rdev_memcpy(s, back, sizeof back, b, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, sizeof back, "destination of refused D2D copies");
  /* aligned interior addresses are fine, any length */
  FX_OK(rdev_memcpy(s, (uint8_t *)b + 64, 101, (uint8_t *)a + 128, 101, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  memset(want + 64, 0x11, 101);
  FX_OK(rdev_memcpy(s, back, sizeof back, b, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, sizeof back, "aligned D2D");
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  rdev_session_close(s);
}
END_TEST

/* A kind that does not match the pointers is refused, nothing copied. */
START_TEST(test_memcpy_kind_mismatch_is_invalid_param) {
  rdev_session_t *s = fx_open();
  void *d = NULL;
  uint8_t h[256], h2[256];
  FX_OK(rdev_malloc(s, &d, 256, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_EXPECT(rdev_memcpy(s, h, sizeof h, h2, 16, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, h, sizeof h, h2, 16, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, h, sizeof h, d, 16, RDEV_MEMCPY_HOST_TO_HOST), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, d, 256, h, 16, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, d, 256, h, 16, (rdev_memcpy_kind_t)7), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, NULL, 256, h, 16, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

/* count > destMax is RDEV_RT_PARAM_INVALID (107000) for every kind, and
 * nothing is written. */
START_TEST(test_memcpy_count_over_dest_max) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, a, 4096, FILL, 4096));
  uint8_t src[4096], dst[4096], want[4096];
  fx_fill_random(src, sizeof src, 600);
  memset(dst, FILL, sizeof dst);
  memset(want, FILL, sizeof want);
  FX_EXPECT(rdev_memcpy(s, a, 100, src, 101, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memcpy(s, dst, 100, a, 101, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memcpy(s, b, 100, a, 101, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memcpy(s, dst, 100, src, 101, RDEV_MEMCPY_HOST_TO_HOST), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memcpy(s, a, 0, src, 1, RDEV_MEMCPY_DEFAULT), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memset(s, a, 10, 0xAB, 11), RDEV_RT_PARAM_INVALID);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_EXPECT(rdev_memcpy_async(s, a, 100, src, 101, RDEV_MEMCPY_HOST_TO_DEVICE, st), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memcpy_async(s, dst, 100, a, 101, RDEV_MEMCPY_DEVICE_TO_HOST, st), RDEV_RT_PARAM_INVALID);
  FX_EXPECT(rdev_memset_async(s, a, 10, 0xAB, 11, st), RDEV_RT_PARAM_INVALID);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  ck_assert_int_eq(memcmp(dst, want, sizeof dst), 0);
  uint8_t back[4096];
  FX_OK(rdev_memcpy(s, back, sizeof back, a, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, sizeof back, "device buffer after refused copies");
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  rdev_session_close(s);
}
END_TEST

/* count 0 is a no-op success for every kind, sync and async. */
START_TEST(test_memcpy_count_zero_is_noop) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, a, 64, FILL, 64));
  uint8_t h[64], want[64];
  memset(h, 0x11, sizeof h);
  memset(want, 0x11, sizeof want);
  FX_OK(rdev_memcpy(s, a, 64, h, 0, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, h, 64, a, 0, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_OK(rdev_memcpy(s, b, 64, a, 0, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  FX_OK(rdev_memcpy(s, h, 64, want, 0, RDEV_MEMCPY_HOST_TO_HOST));
  FX_OK(rdev_memcpy(s, a, 0, h, 0, RDEV_MEMCPY_DEFAULT));
  FX_OK(rdev_memset(s, a, 64, 0, 0));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_memcpy_async(s, a, 64, h, 0, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  FX_OK(rdev_memcpy_async(s, h, 64, a, 0, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_memset_async(s, a, 64, 0, 0, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  ck_assert_int_eq(memcmp(h, want, sizeof h), 0);
  uint8_t back[64], fill[64];
  memset(fill, FILL, sizeof fill);
  FX_OK(rdev_memcpy(s, back, 64, a, 64, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, fill, 64, "device buffer after count-0 copies");
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  rdev_session_close(s);
}
END_TEST

/* A range that runs past the end of its allocation is RDEV_INVALID_PARAM,
 * and nothing is written. */
START_TEST(test_memcpy_past_end_is_invalid_param) {
  rdev_session_t *s = fx_open();
  const size_t n = 1000;
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, a, n, FILL, n));
  FX_OK(rdev_memset(s, b, n, FILL, n));
  uint8_t src[2 * 1000], dst[2 * 1000];
  fx_fill_random(src, sizeof src, 700);
  uint8_t *ea = (uint8_t *)a + n - 5;
  FX_EXPECT(rdev_memcpy(s, ea, 6, src, 6, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, a, sizeof src, src, n + 1, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, dst, sizeof dst, ea, 6, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, b, n, ea, 6, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(s, (uint8_t *)b + n - 5, 6, a, 6, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memset(s, ea, 6, 0xAB, 6), RDEV_INVALID_PARAM);
  /* just past the end is not device memory at all */
  FX_EXPECT(rdev_memcpy(s, (uint8_t *)a + n, 1, src, 1, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_EXPECT(rdev_memcpy_async(s, ea, 6, src, 6, RDEV_MEMCPY_HOST_TO_DEVICE, st), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy_async(s, dst, 6, ea, 6, RDEV_MEMCPY_DEVICE_TO_HOST, st), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memset_async(s, ea, 6, 0xAB, 6, st), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  /* the last 5 bytes exactly fit */
  FX_OK(rdev_memcpy(s, ea, 5, src, 5, RDEV_MEMCPY_HOST_TO_DEVICE));
  uint8_t back[1000], want[1000];
  memset(want, FILL, n);
  memcpy(want + n - 5, src, 5);
  FX_OK(rdev_memcpy(s, back, n, a, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, n, "buffer a after refused copies");
  memset(want, FILL, n);
  FX_OK(rdev_memcpy(s, back, n, b, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, n, "buffer b after refused copies");
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  rdev_session_close(s);
}
END_TEST

/* ---- memset ------------------------------------------------------------------------- */

START_TEST(test_memset_sets_exact_range) {
  rdev_session_t *s = fx_open();
  const size_t n = 3 * FX_MiB + 17;
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *data = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(data, n, 800);
  FX_OK(rdev_memcpy(s, d, n, data, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memset(s, (uint8_t *)d + 10, 100, 0xAB, 100));
  memset(data + 10, 0xAB, 100);
  FX_OK(rdev_memset(s, (uint8_t *)d + FX_MiB - 3, 2 * FX_MiB + 1, 0x00, 2 * FX_MiB + 1));
  memset(data + FX_MiB - 3, 0x00, 2 * FX_MiB + 1);
  FX_OK(rdev_memset(s, (uint8_t *)d + n - 1, 1, 0x7F, 1));
  data[n - 1] = 0x7F;
  FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, data, n, "after memsets");
  FX_OK(rdev_free(s, d));
  free(data);
  free(back);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_memset_async_then_synchronize) {
  rdev_session_t *s = fx_open();
  const size_t n = 2 * FX_MiB + 9;
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  uint8_t *want = fx_xmalloc(n), *back = fx_xmalloc(n);
  FX_OK(rdev_memset_async(s, d, n, 0x01, n, st));
  FX_OK(rdev_memset_async(s, (uint8_t *)d + 4097, n - 4097, 0xC3, FX_MiB, st));
  memset(want, 0x01, n);
  memset(want + 4097, 0xC3, FX_MiB);
  memset(back, 0, n);
  FX_OK(rdev_memcpy_async(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(back, want, n, "after async memsets");
  FX_EXPECT(rdev_memset_async(s, d, n, 0, n, NULL), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  free(want);
  free(back);
  rdev_session_close(s);
}
END_TEST

/* ---- asynchronous copies ----------------------------------------------------------- */

/* Every size and offset queued at once (H2D then D2H into distinct host
 * buffers), one synchronize, then every result checked. */
START_TEST(test_memcpy_async_h2d_d2h) {
  rdev_session_t *s = fx_open();
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  uint8_t *src[NSIZES][NOFFS], *back[NSIZES][NOFFS];
  for (size_t i = 0; i < NSIZES; i++) {
    for (size_t j = 0; j < NOFFS; j++) {
      size_t n = k_sizes[i], k = k_offsets[j];
      src[i][j] = fx_xmalloc(n);
      back[i][j] = fx_xmalloc(n);
      fx_fill_random(src[i][j], n, 900 + i * 10 + j);
      memset(back[i][j], 0, n);
      FX_OK(rdev_memcpy_async(s, (uint8_t *)d + k, CAP - k, src[i][j], n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
      FX_OK(rdev_memcpy_async(s, back[i][j], n, (uint8_t *)d + k, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
    }
  }
  FX_OK(rdev_stream_synchronize(st));
  for (size_t i = 0; i < NSIZES; i++) {
    for (size_t j = 0; j < NOFFS; j++) {
      FX_ASSERT_BYTES(back[i][j], src[i][j], k_sizes[i], "async round trip of %zu bytes at offset %zu", k_sizes[i],
                      k_offsets[j]);
      free(src[i][j]);
      free(back[i][j]);
    }
  }
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

/* An async H2D copy takes src's bytes before it returns (rdev.h): one
 * buffer refilled between copies queued behind a delay, in a request (4 KiB)
 * and on the bulk connection (1 MiB); each copy lands what src held then. */
START_TEST(test_memcpy_async_h2d_src_reusable_at_return) {
  rdev_session_t *s = fx_open();
  for (int i = 0; i < 500 && !rdev_session_bulk(s); i++) fx_sleep_ms(10); /* the 1 MiB case goes on it */
  ck_assert_msg(rdev_session_bulk(s), "no bulk connection 5 s after the open");
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const size_t sizes[] = {4096, (size_t)1 << 20};
  enum { COPIES = 6 };
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i];
    void *d = NULL;
    FX_OK(rdev_malloc(s, &d, n * COPIES, RDEV_MEM_MALLOC_HUGE_FIRST));
    uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(n * COPIES), *want = fx_xmalloc(n * COPIES);
    rdev_arg_t delay = fx_u32(100000); /* the copies run after the refills */
    FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
    for (int c = 0; c < COPIES; c++) {
      fx_fill_random(src, n, 4200 + i * 10 + (size_t)c);
      memcpy(want + (size_t)c * n, src, n);
      FX_OK(rdev_memcpy_async(s, (uint8_t *)d + (size_t)c * n, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
    }
    memset(src, 0xee, n);
    FX_OK(rdev_stream_synchronize(st));
    FX_OK(rdev_memcpy(s, back, n * COPIES, d, n * COPIES, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, want, n * COPIES, "%d async copies of %zu bytes from one reused buffer", COPIES, n);
    free(src);
    free(back);
    free(want);
    FX_OK(rdev_free(s, d));
  }
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_memcpy_async_d2d) {
  rdev_session_t *s = fx_open();
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, CAP, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  uint8_t *src = fx_xmalloc(CAP), *back = fx_xmalloc(CAP);
  for (size_t i = 0; i < NSIZES; i++) {
    size_t n = k_sizes[i], sk = k_d2d_offsets[i % NOFFS], dk = k_d2d_offsets[(i + 1) % NOFFS];
    fx_fill_random(src, n, 1000 + i);
    memset(back, 0, n);
    FX_OK(rdev_memcpy_async(s, (uint8_t *)a + sk, CAP - sk, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
    FX_OK(rdev_memcpy_async(s, (uint8_t *)b + dk, CAP - dk, (uint8_t *)a + sk, n, RDEV_MEMCPY_DEVICE_TO_DEVICE, st));
    FX_OK(rdev_memcpy_async(s, back, n, (uint8_t *)b + dk, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
    FX_OK(rdev_stream_synchronize(st));
    FX_ASSERT_BYTES(back, src, n, "async D2D of %zu bytes (%zu -> %zu)", n, sk, dk);
  }
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, a));
  FX_OK(rdev_free(s, b));
  free(src);
  free(back);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_memcpy_async_needs_own_stream) {
  rdev_session_t *s = fx_open(), *other = fx_open();
  void *d = NULL;
  uint8_t h[16] = {0};
  FX_OK(rdev_malloc(s, &d, 16, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_EXPECT(rdev_memcpy_async(s, d, 16, h, 16, RDEV_MEMCPY_HOST_TO_DEVICE, NULL), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy_async(s, h, 16, d, 16, RDEV_MEMCPY_DEVICE_TO_HOST, NULL), RDEV_INVALID_PARAM);
  rdev_stream_t *foreign = NULL;
  FX_OK(rdev_stream_create(other, &foreign));
  FX_EXPECT(rdev_memcpy_async(s, d, 16, h, 16, RDEV_MEMCPY_HOST_TO_DEVICE, foreign), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memset_async(s, d, 16, 0, 16, foreign), RDEV_INVALID_PARAM);
  /* a buffer of one session is not device memory of another */
  FX_EXPECT(rdev_memcpy(other, h, 16, d, 16, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_synchronize(foreign));
  FX_OK(rdev_stream_destroy(foreign));
  FX_OK(rdev_free(s, d));
  rdev_session_close(other);
  rdev_session_close(s);
}
END_TEST

/* A buffer freed while async work on it is queued stays valid for that work
 * (the free is deferred until the stream passed it). */
START_TEST(test_free_waits_for_queued_work) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const size_t n = FX_MiB;
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(src, n, 1100);
  memset(back, 0, n);
  rdev_arg_t delay = fx_u32(1000000); /* 1 s: the mem info below runs well within it */
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_memcpy_async(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  FX_OK(rdev_memcpy_async(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_free(s, d));
  size_t fr, total;
  FX_OK(rdev_mem_info(s, &fr, &total));
  ck_assert_uint_eq(fr, FX_SIM_MEM - fx_reserved(n)); /* still held: the stream is busy */
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(back, src, n, "copies queued before the free");
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  FX_OK(rdev_stream_destroy(st));
  free(src);
  free(back);
  rdev_session_close(s);
}
END_TEST

/* Device addresses are in each session's own space, and the library and
 * the server resolve every address against the session's own
 * allocations: session B holding A's addresses reaches nothing of A's, by
 * any call, synchronous or queued, and A's bytes stay as they were (the
 * server's own check of the same: python_hostile and fuzz_session). */
START_TEST(test_other_sessions_addresses_are_unreachable) {
  rdev_session_t *a = fx_open(), *b = fx_open();
  const size_t n = 4096;
  void *pa = NULL, *pb = NULL;
  FX_OK(rdev_malloc(a, &pa, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(b, &pb, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  ck_assert_ptr_ne(pa, pb);
  uint8_t secret[4096], host[4096], back[4096];
  fx_fill_random(secret, n, 1801);
  FX_OK(rdev_memcpy(a, pa, n, secret, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  memset(host, 0x5a, n);
  uint8_t *inner = (uint8_t *)pa + 64;
  FX_EXPECT(rdev_memcpy(b, pa, n, host, n, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(b, back, n, inner, 64, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(b, pb, n, pa, n, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(b, pa, n, pb, n, RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memset(b, inner, 64, 0, 64), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_free(b, pa), RDEV_INVALID_PARAM);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(b, &st));
  /* queued calls are refused at once too: the library knows the session's memory */
  FX_EXPECT(rdev_memcpy_async(b, pa, n, host, n, RDEV_MEMCPY_HOST_TO_DEVICE, st), RDEV_INVALID_PARAM);
  memset(back, 0, n);
  FX_EXPECT(rdev_memcpy_async(b, back, n, pa, n, RDEV_MEMCPY_DEVICE_TO_HOST, st), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memset_async(b, pa, n, 0, n, st), RDEV_INVALID_PARAM);
  rdev_arg_t args[2] = {fx_ptr(inner), fx_i32(7)};
  FX_EXPECT(rdev_launch(st, "write_i32", 1, args, 2), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_synchronize(st));
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(back[i], 0);
  FX_OK(rdev_stream_destroy(st));
  /* A's bytes are untouched, and A reaches them */
  FX_OK(rdev_memcpy(a, back, n, pa, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, secret, n, "A's buffer after B's attempts");
  /* once A freed it, the address is nobody's: refused for A as for B */
  FX_OK(rdev_free(a, pa));
  FX_EXPECT(rdev_memcpy(a, back, n, pa, n, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_memcpy(b, back, n, pa, n, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  FX_OK(rdev_free(b, pb));
  rdev_session_close(a);
  rdev_session_close(b);
}
END_TEST

Suite *suite_memory(void) {
  Suite *su = suite_create("memory");
  TCase *tc = fx_tcase("alloc");
  tcase_add_test(tc, test_malloc_size_zero_is_invalid_param);
  tcase_add_test(tc, test_malloc_out_of_memory);
  tcase_add_test(tc, test_malloc_refused_later_fails_the_next_synchronize);
  tcase_add_test(tc, test_malloc_returns_distinct_aligned_pointers);
  tcase_add_test(tc, test_free_rejects_foreign_interior_and_double);
  tcase_add_test(tc, test_other_sessions_addresses_are_unreachable);
  tcase_add_test(tc, test_malloc_host_free_host);
  tcase_add_test(tc, test_malloc_host_resident_and_owned);
  tcase_add_test(tc, test_d2h_fresh_memory_and_after_idle);
  tcase_add_test(tc, test_free_waits_for_queued_work);
  suite_add_tcase(su, tc);
  tc = fx_tcase("copy");
  tcase_add_test(tc, test_memcpy_h2d_d2h_sizes_and_offsets);
  tcase_add_test(tc, test_memcpy_d2d_sizes_and_offsets);
  tcase_add_test(tc, test_memcpy_d2d_across_devices);
  tcase_add_test(tc, test_memcpy_d2d_unaligned);
  tcase_add_test(tc, test_memcpy_h2h);
  tcase_add_test(tc, test_memcpy_default_infers_direction);
  tcase_add_test(tc, test_memcpy_kind_mismatch_is_invalid_param);
  tcase_add_test(tc, test_memcpy_count_over_dest_max);
  tcase_add_test(tc, test_memcpy_count_zero_is_noop);
  tcase_add_test(tc, test_memcpy_past_end_is_invalid_param);
  tcase_add_test(tc, test_memset_sets_exact_range);
  tcase_add_test(tc, test_memset_async_then_synchronize);
  tcase_add_test(tc, test_memcpy_async_h2d_d2h);
  tcase_add_test(tc, test_memcpy_async_h2d_src_reusable_at_return);
  tcase_add_test(tc, test_memcpy_async_d2d);
  tcase_add_test(tc, test_memcpy_async_needs_own_stream);
  suite_add_tcase(su, tc);
  return su;
}
