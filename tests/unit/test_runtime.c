/*
 * tests/unit/test_runtime.c — Check unit tests for the device runtime
 * (rdev/runtime.h, rdev/status.h) on the sim backend: opening, devices,
 * memory and its accounting, copies, streams, host callbacks, events,
 * kernels, fault injection and concurrent use. One behaviour per test.
 *
 * Every test opens its own runtime (small arenas unless the defaults are
 * what is checked) and closes it, so sanitizer builds see each test's
 * resources released. Timing bounds are generous: the sim's delays sleep.
 */
#define _GNU_SOURCE
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdev/runtime.h"
#include "rdev/status.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* ---- helpers ------------------------------------------------------------- */

static rdev_rt_t *open_rt(int ndev, size_t mem) {
  rdev_rt_config_t cfg = {.sim_devices = ndev, .sim_mem_bytes = mem};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  ck_assert_ptr_nonnull(rt);
  return rt;
}

static rdev_rt_t *open_small(void) { return open_rt(2, 16 * MIB); }

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

static size_t free_of(rdev_rt_t *rt, int dev) {
  size_t f = 0, t = 0;
  ck_assert_int_eq(rdev_rt_mem_info(rt, dev, &f, &t), RDEV_OK);
  return f;
}

static size_t total_of(rdev_rt_t *rt, int dev) {
  size_t f = 0, t = 0;
  ck_assert_int_eq(rdev_rt_mem_info(rt, dev, &f, &t), RDEV_OK);
  return t;
}

static void *dmalloc(rdev_rt_t *rt, int dev, size_t size) {
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, dev, &p, size, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_ptr_nonnull(p);
  return p;
}

static rdev_rt_stream_t *mkstream(rdev_rt_t *rt, int dev) {
  rdev_rt_stream_t *s = NULL;
  ck_assert_int_eq(rdev_rt_stream_create(rt, dev, &s), RDEV_OK);
  ck_assert_ptr_nonnull(s);
  return s;
}

static rdev_rt_event_t *mkevent(rdev_rt_t *rt, int dev) {
  rdev_rt_event_t *e = NULL;
  ck_assert_int_eq(rdev_rt_event_create(rt, dev, &e), RDEV_OK);
  ck_assert_ptr_nonnull(e);
  return e;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static void fill_random(void *p, size_t n) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = (unsigned char)(rng_next() >> 56);
}

/* A float in [-8, 8) with few enough mantissa bits to be interesting but finite. */
static float rand_float(void) { return (float)((double)(rng_next() >> 11) / 9007199254740992.0 * 16.0 - 8.0); }

static rdev_kernel_arg_t a_ptr(void *base, uint64_t off) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_PTR;
  a.v.ptr.base = base;
  a.v.ptr.offset = off;
  return a;
}

static rdev_kernel_arg_t a_u32(uint32_t v) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_U32;
  a.v.u32 = v;
  return a;
}

static rdev_kernel_arg_t a_i32(int32_t v) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_I32;
  a.v.i32 = v;
  return a;
}

static rdev_kernel_arg_t a_f32(float v) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_F32;
  a.v.f32 = v;
  return a;
}

static int launch_delay(rdev_rt_stream_t *s, uint32_t us) {
  rdev_kernel_arg_t a = a_u32(us);
  return rdev_rt_launch(s, "delay_us", 1, &a, 1, NULL, NULL);
}

static int launch_write(rdev_rt_stream_t *s, void *out, uint32_t blocks, int32_t value,
                        rdev_rt_print_fn fn, void *user) {
  rdev_kernel_arg_t a[2] = {a_ptr(out, 0), a_i32(value)};
  return rdev_rt_launch(s, "write_i32", blocks, a, 2, fn, user);
}

static int launch_square(rdev_rt_stream_t *s, uint32_t blocks, void *in, uint64_t in_off, void *out,
                         uint64_t out_off, uint32_t n) {
  rdev_kernel_arg_t a[3] = {a_ptr(in, in_off), a_ptr(out, out_off), a_u32(n)};
  return rdev_rt_launch(s, "square_f32", blocks, a, 3, NULL, NULL);
}

static void h2d(rdev_rt_t *rt, void *d, const void *h, size_t n) {
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
}

static void d2h(rdev_rt_t *rt, void *h, const void *d, size_t n) {
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
}

static int last_error_has(const char *needle) { return strstr(rdev_rt_last_error(), needle) != NULL; }

/* Host callback log: every call appends (tag, status, thread). */
#define CBLOG_MAX 4096
typedef struct {
  pthread_mutex_t mu;
  int n;
  int tag[CBLOG_MAX];
  int status[CBLOG_MAX];
  pthread_t thread[CBLOG_MAX];
  double when[CBLOG_MAX];
} cblog_t;

typedef struct {
  cblog_t *log;
  int tag;
  atomic_int calls;
  int sleep_ms;          /* sleep inside the callback before logging */
  int *host_cell;        /* optional: value to read / write */
  int write_value;       /* write this into host_cell when nonzero */
  int seen_value;        /* what host_cell held when the callback ran */
} cbarg_t;

static cblog_t *cblog_new(void) {
  cblog_t *l = calloc(1, sizeof *l);
  ck_assert_ptr_nonnull(l);
  pthread_mutex_init(&l->mu, NULL);
  return l;
}

static void cblog_free(cblog_t *l) {
  pthread_mutex_destroy(&l->mu);
  free(l);
}

static int cblog_count(cblog_t *l) {
  pthread_mutex_lock(&l->mu);
  int n = l->n;
  pthread_mutex_unlock(&l->mu);
  return n;
}

static void cb_log(void *user, int status) {
  cbarg_t *a = user;
  if (a->sleep_ms) sleep_ms(a->sleep_ms);
  atomic_fetch_add(&a->calls, 1);
  pthread_mutex_lock(&a->log->mu);
  if (a->host_cell) {
    a->seen_value = *a->host_cell;
    if (a->write_value) *a->host_cell = a->write_value;
  }
  int i = a->log->n++;
  if (i < CBLOG_MAX) {
    a->log->tag[i] = a->tag;
    a->log->status[i] = status;
    a->log->thread[i] = pthread_self();
    a->log->when[i] = now_ms();
  }
  pthread_mutex_unlock(&a->log->mu);
}

/* Kernel print capture. */
typedef struct {
  pthread_mutex_t mu;
  int calls;
  char *text;
  size_t len;
} printcap_t;

static void printcap_init(printcap_t *p) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
}

static void printcap_fini(printcap_t *p) {
  free(p->text);
  pthread_mutex_destroy(&p->mu);
}

static void print_capture(void *user, const char *text, size_t len) {
  printcap_t *p = user;
  pthread_mutex_lock(&p->mu);
  p->calls++;
  char *t = realloc(p->text, p->len + len + 1);
  if (t) {
    memcpy(t + p->len, text, len);
    p->len += len;
    t[p->len] = '\0';
    p->text = t;
  }
  pthread_mutex_unlock(&p->mu);
}

/* ======================================================================== */
/* open / close / status                                                    */
/* ======================================================================== */

START_TEST(test_open_null_config_gives_two_sim_devices_of_1gib) {
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(NULL, &rt), RDEV_OK);
  ck_assert_ptr_nonnull(rt);
  ck_assert_str_eq(rdev_rt_backend_name(rt), "sim");
  int n = -1;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 2);
  for (int d = 0; d < 2; d++) {
    rdev_rt_device_info_t info;
    memset(&info, 0xff, sizeof info);
    ck_assert_int_eq(rdev_rt_device_info(rt, d, &info), RDEV_OK);
    ck_assert_str_eq(info.name, "sim");
    ck_assert_uint_eq(info.total_bytes, GIB);
    ck_assert_uint_eq(info.free_bytes, GIB);
  }
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_open_zeroed_config_uses_defaults) {
  rdev_rt_config_t cfg = {0};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  int n = -1;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 2);
  ck_assert_uint_eq(total_of(rt, 0), GIB);
  ck_assert_uint_eq(total_of(rt, 1), GIB);
  ck_assert_str_eq(rdev_rt_backend_name(rt), "sim");
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_open_custom_device_count_and_memory) {
  rdev_rt_config_t cfg = {.backend = "sim", .sim_devices = 3, .sim_mem_bytes = 32 * MIB};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  int n = -1;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 3);
  for (int d = 0; d < 3; d++) {
    size_t f = 0, t = 0;
    ck_assert_int_eq(rdev_rt_mem_info(rt, d, &f, &t), RDEV_OK);
    ck_assert_uint_eq(t, 32 * MIB);
    ck_assert_uint_eq(f, 32 * MIB);
  }
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_open_unknown_backend_is_api_not_support) {
  rdev_rt_config_t cfg = {.backend = "cuda"};
  rdev_rt_t *rt = (rdev_rt_t *)0x1;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_API_NOT_SUPPORT);
  ck_assert_ptr_null(rt);
  ck_assert_int_ne((int)strlen(rdev_rt_last_error()), 0);
  ck_assert(last_error_has("cuda"));
}
END_TEST

START_TEST(test_open_null_out_is_invalid_param) {
  ck_assert_int_eq(rdev_rt_open(NULL, NULL), RDEV_INVALID_PARAM);
}
END_TEST

START_TEST(test_close_null_is_harmless) { rdev_rt_close(NULL); }
END_TEST

START_TEST(test_strerror_known_and_unknown_codes) {
  ck_assert_str_eq(rdev_strerror(RDEV_OK), "success");
  ck_assert_str_eq(rdev_strerror(RDEV_RT_DEVICE_OOM), "device out of memory");
  ck_assert_str_eq(rdev_strerror(RDEV_RT_STREAM_SYNC_TIMEOUT), "stream synchronize timed out");
  ck_assert_str_eq(rdev_strerror(RDEV_KERNEL_ARGS), "kernel arguments do not match its signature");
  ck_assert_str_eq(rdev_strerror(12345), "unknown error");
  ck_assert_str_eq(rdev_strerror(-1), "unknown error");
}
END_TEST

START_TEST(test_status_name_known_and_unknown_codes) {
  ck_assert_str_eq(rdev_status_name(RDEV_OK), "OK");
  ck_assert_str_eq(rdev_status_name(207018), "RT_DEVICE_OOM");
  ck_assert_str_eq(rdev_status_name(107000), "RT_PARAM_INVALID");
  ck_assert_str_eq(rdev_status_name(900001), "CANCELLED");
  ck_assert_str_eq(rdev_status_name(12345), "UNKNOWN");
  ck_assert_str_eq(rdev_status_name(-7), "UNKNOWN");
}
END_TEST

START_TEST(test_status_codes_have_cann_numbers) {
  ck_assert_int_eq(RDEV_INVALID_PARAM, 100000);
  ck_assert_int_eq(RDEV_RT_PARAM_INVALID, 107000);
  ck_assert_int_eq(RDEV_RT_INVALID_DEVICEID, 107001);
  ck_assert_int_eq(RDEV_RT_WAIT_TIMEOUT, 107019);
  ck_assert_int_eq(RDEV_MEMORY_ADDRESS_UNALIGNED, 200003);
  ck_assert_int_eq(RDEV_RT_DEVICE_OOM, 207018);
  ck_assert_int_eq(RDEV_RT_AICORE_EXCEPTION, 507015);
  ck_assert_int_eq(RDEV_RT_STREAM_SYNC_TIMEOUT, 507046);
}
END_TEST

START_TEST(test_last_error_set_after_failure_and_cleared_by_success) {
  rdev_rt_t *rt = open_small();
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 0, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_INVALID_PARAM);
  ck_assert_ptr_nonnull(rdev_rt_last_error());
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  int n;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_str_eq(rdev_rt_last_error(), "");
  rdev_rt_close(rt);
}
END_TEST

/* ======================================================================== */
/* devices                                                                   */
/* ======================================================================== */

START_TEST(test_device_count_matches_config) {
  rdev_rt_t *rt = open_rt(5, 4 * MIB);
  int n = 0;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 5);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_device_info_reports_name_and_memory) {
  rdev_rt_t *rt = open_small();
  rdev_rt_device_info_t info;
  ck_assert_int_eq(rdev_rt_device_info(rt, 1, &info), RDEV_OK);
  ck_assert_str_eq(info.name, "sim");
  ck_assert_uint_eq(info.total_bytes, 16 * MIB);
  ck_assert_uint_eq(info.free_bytes, 16 * MIB);
  void *p = dmalloc(rt, 1, 1000);
  ck_assert_int_eq(rdev_rt_device_info(rt, 1, &info), RDEV_OK);
  ck_assert_uint_eq(info.free_bytes, 16 * MIB - rdev_rt_mem_reserved_size(1000));
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_device_info_invalid_ids_are_invalid_deviceid) {
  rdev_rt_t *rt = open_small();
  rdev_rt_device_info_t info;
  ck_assert_int_eq(rdev_rt_device_info(rt, -1, &info), RDEV_RT_INVALID_DEVICEID);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_device_info(rt, 2, &info), RDEV_RT_INVALID_DEVICEID);
  size_t f, t;
  ck_assert_int_eq(rdev_rt_mem_info(rt, -1, &f, &t), RDEV_RT_INVALID_DEVICEID);
  ck_assert_int_eq(rdev_rt_mem_info(rt, 2, &f, &t), RDEV_RT_INVALID_DEVICEID);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_device_scoped_calls_reject_invalid_ids) {
  rdev_rt_t *rt = open_small();
  void *p = NULL;
  rdev_rt_stream_t *s = NULL;
  rdev_rt_event_t *e = NULL;
  int bad[] = {-1, 2, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(rdev_rt_malloc(rt, bad[i], &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST),
                     RDEV_RT_INVALID_DEVICEID);
    ck_assert_int_eq(rdev_rt_stream_create(rt, bad[i], &s), RDEV_RT_INVALID_DEVICEID);
    ck_assert_int_eq(rdev_rt_event_create(rt, bad[i], &e), RDEV_RT_INVALID_DEVICEID);
    ck_assert_int_eq(rdev_rt_fault_inject(rt, bad[i], RDEV_FAULT_ALLOC, 1, 0),
                     RDEV_RT_INVALID_DEVICEID);
  }
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

/* ======================================================================== */
/* memory                                                                    */
/* ======================================================================== */

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

/* ======================================================================== */
/* copies and memset                                                         */
/* ======================================================================== */

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
  for (int i = 0; i < 32; i++) ck_assert_int_eq(dst[i], 0x5a); /* nothing before... */
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
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, d, 0, h, 1, RDEV_MEMCPY_HOST_TO_DEVICE, s),
                   RDEV_RT_PARAM_INVALID);
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
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)d + 50, 1000, h, 51, RDEV_MEMCPY_HOST_TO_DEVICE),
                   RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)d + 50, 1000, h, 50, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, d, 1000, h, 101, RDEV_MEMCPY_HOST_TO_DEVICE, s),
                   RDEV_INVALID_PARAM);
  /* source side */
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 1000, d, 101, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 1000, (char *)d + 99, 2, RDEV_MEMCPY_DEVICE_TO_HOST),
                   RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, 1000, (char *)d + 99, 1, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 1000, d, 101, RDEV_MEMCPY_DEVICE_TO_HOST, s),
                   RDEV_INVALID_PARAM);
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
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 256, h2, 256, RDEV_MEMCPY_HOST_TO_DEVICE, s),
                   RDEV_INVALID_PARAM);
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
  ck_assert_int_eq(rdev_rt_memcpy(rt, b, 1024, (char *)a + 1, 16, RDEV_MEMCPY_DEFAULT),
                   RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(rdev_rt_memcpy(rt, (char *)b + 64, 960, (char *)a + 128, 16,
                                  RDEV_MEMCPY_DEVICE_TO_DEVICE), RDEV_OK);
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

/* ======================================================================== */
/* streams                                                                   */
/* ======================================================================== */

START_TEST(test_stream_device_reports_its_device) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s0 = mkstream(rt, 0), *s1 = mkstream(rt, 1);
  ck_assert_int_eq(rdev_rt_stream_device(s0), 0);
  ck_assert_int_eq(rdev_rt_stream_device(s1), 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s1), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_null_handle_is_invalid_resource_handle) {
  int done;
  ck_assert_int_eq(rdev_rt_stream_destroy(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_destroy_force(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_synchronize(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_query(NULL, &done), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(launch_delay(NULL, 1), RDEV_INVALID_RESOURCE_HANDLE);
}
END_TEST

START_TEST(test_stream_of_another_runtime_is_invalid_resource_handle) {
  rdev_rt_t *rt1 = open_small(), *rt2 = open_small();
  rdev_rt_stream_t *s2 = mkstream(rt2, 0);
  void *d = dmalloc(rt1, 0, 64);
  ck_assert_int_eq(rdev_rt_memset_async(rt1, d, 64, 0, 64, s2), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_destroy(s2), RDEV_OK);
  rdev_rt_close(rt2);
  rdev_rt_close(rt1);
}
END_TEST

START_TEST(test_stream_runs_work_in_submission_order) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 300 };
  void *scratch = dmalloc(rt, 0, 64);
  void *slots = dmalloc(rt, 0, (size_t)N * 64);
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK); /* everything below queues behind it */
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(rdev_rt_memset_async(rt, scratch, 64, i & 0xff, 64, s), RDEV_OK);
    ck_assert_int_eq(rdev_rt_memcpy_async(rt, (char *)slots + (size_t)i * 64, 64, scratch, 64,
                                          RDEV_MEMCPY_DEVICE_TO_DEVICE, s), RDEV_OK);
  }
  unsigned char *h = malloc((size_t)N * 64);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, (size_t)N * 64, slots, (size_t)N * 64,
                                        RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < 64; j++) ck_assert_int_eq(h[i * 64 + j], i & 0xff);
  free(h);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_streams_run_concurrently) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0);
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(a, 200000), RDEV_OK);
  ck_assert_int_eq(launch_delay(b, 200000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  double dt = now_ms() - t0;
  ck_assert_msg(dt >= 190.0, "two 200 ms delays finished in %.1f ms", dt);
  ck_assert_msg(dt < 380.0, "two 200 ms delays on two streams took %.1f ms (serialized?)", dt);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_sync_does_not_wait_for_other_stream) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(launch_delay(a, 400000), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 1, 64, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  double dt = now_ms() - t0;
  ck_assert_msg(dt < 150.0, "sync of stream b took %.1f ms while a was busy", dt);
  int done = 1;
  ck_assert_int_eq(rdev_rt_stream_query(a, &done), RDEV_OK);
  ck_assert_int_eq(done, 0);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_async_launch_returns_before_completion) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(s, 100000), RDEV_OK);
  double dt = now_ms() - t0;
  ck_assert_msg(dt < 50.0, "async launch took %.1f ms", dt);
  int done = 1;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 0);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_msg(now_ms() - t0 >= 95.0, "synchronize returned before the delay ran");
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* A host callback that holds until released. */
typedef struct {
  atomic_int entered, release;
} hold_t;

static void cb_hold(void *user, int status) {
  hold_t *h = user;
  (void)status;
  atomic_store(&h->entered, 1);
  while (!atomic_load(&h->release)) usleep(1000);
}

START_TEST(test_stream_idle_counts_a_running_callback) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int idle = 0, done = 0;
  ck_assert_int_eq(rdev_rt_stream_idle(s, &idle), RDEV_OK);
  ck_assert_int_eq(idle, 1);
  hold_t h;
  atomic_init(&h.entered, 0);
  atomic_init(&h.release, 0);
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_hold, &h), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_idle(s, &idle), RDEV_OK);
  ck_assert_int_eq(idle, 0);
  while (!atomic_load(&h.entered)) usleep(1000);
  /* the work before the callback is done (query), but the callback runs (idle) */
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_stream_idle(s, &idle), RDEV_OK);
  ck_assert_int_eq(idle, 0);
  atomic_store(&h.release, 1);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_idle(s, &idle), RDEV_OK);
  ck_assert_int_eq(idle, 1);
  ck_assert_int_eq(rdev_rt_stream_idle(s, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_idle(NULL, &idle), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_host_view_shows_device_memory_in_range_only) {
  rdev_rt_t *rt = open_small();
  unsigned char *d = dmalloc(rt, 0, 256), h[256];
  for (int i = 0; i < 256; i++) h[i] = (unsigned char)(i * 3);
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, 256, h, 256, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  const unsigned char *v = rdev_rt_host_view(rt, d + 10, 246);
  ck_assert_ptr_nonnull(v);
  ck_assert_int_eq(memcmp(v, h + 10, 246), 0);
  ck_assert_ptr_null(rdev_rt_host_view(rt, d + 10, 247)); /* past the end */
  ck_assert_ptr_null(rdev_rt_host_view(rt, d, 0));
  ck_assert_ptr_null(rdev_rt_host_view(rt, h, 1)); /* not device memory */
  ck_assert_ptr_null(rdev_rt_host_view(NULL, d, 1));
  ck_assert_int_eq(rdev_rt_free(rt, d), RDEV_OK);
  ck_assert_ptr_null(rdev_rt_host_view(rt, d, 1)); /* freed */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_pending_counts_unfinished_tasks) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s;
  void *d;
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  rdev_kernel_arg_t us = {.type = RDEV_ARG_U32, .v.u32 = 100000};
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, i, 64, s), RDEV_OK);
  size_t n = 0;
  ck_assert_int_eq(rdev_rt_stream_pending(s, &n), RDEV_OK);
  ck_assert_uint_eq(n, 4);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_pending(s, &n), RDEV_OK);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(rdev_rt_stream_pending(NULL, &n), RDEV_INVALID_RESOURCE_HANDLE);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_query_on_idle_stream_is_done) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int done = 0;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_stream_query(s, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_sync_timeout_returns_timeout_and_work_continues) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0, 64), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 300000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x77, 64, s), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 50), RDEV_RT_STREAM_SYNC_TIMEOUT);
  ck_assert_int_eq(RDEV_RT_STREAM_SYNC_TIMEOUT, 507046);
  double dt = now_ms() - t0;
  ck_assert_msg(dt >= 45.0 && dt < 250.0, "timed-out sync took %.1f ms", dt);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 0), RDEV_RT_STREAM_SYNC_TIMEOUT);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, -1), RDEV_OK);
  unsigned char h[64];
  d2h(rt, h, d, 64);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(h[i], 0x77);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 10), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_sync_negative_timeout_below_minus_one_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, -2), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_depth_blocks_submitter_when_full) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 4 * MIB, .stream_depth = 2};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(s, 200000), RDEV_OK);              /* slot 1 (running) */
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 1, 64, s), RDEV_OK); /* slot 2 */
  ck_assert_msg(now_ms() - t0 < 100.0, "submits into free slots blocked");
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 2, 64, s), RDEV_OK); /* waits for a slot */
  double dt = now_ms() - t0;
  ck_assert_msg(dt >= 150.0, "third submit on a depth-2 stream returned after %.1f ms", dt);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  unsigned char h[64];
  d2h(rt, h, d, 64);
  ck_assert_int_eq(h[0], 2);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_limit_per_device_is_storage_over_limit) {
  /* depth 1 keeps each stream's ring small; workers have 256 KiB stacks */
  rdev_rt_config_t cfg = {.sim_devices = 2, .sim_mem_bytes = 4 * MIB, .stream_depth = 1};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t **ss = calloc(RDEV_RT_MAX_STREAMS_PER_DEVICE, sizeof *ss);
  for (int i = 0; i < RDEV_RT_MAX_STREAMS_PER_DEVICE; i++) {
    int rc = rdev_rt_stream_create(rt, 0, &ss[i]);
    ck_assert_msg(rc == RDEV_OK, "stream %d: %d (%s)", i, rc, rdev_rt_last_error());
  }
  rdev_rt_stream_t *extra = NULL;
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &extra), RDEV_STORAGE_OVER_LIMIT);
  ck_assert_ptr_null(extra);
  /* the limit is per device */
  ck_assert_int_eq(rdev_rt_stream_create(rt, 1, &extra), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(extra), RDEV_OK);
  /* a destroyed stream frees its place */
  ck_assert_int_eq(rdev_rt_stream_destroy(ss[7]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &ss[7]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &extra), RDEV_STORAGE_OVER_LIMIT);
  /* the streams work */
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 9, 64, ss[RDEV_RT_MAX_STREAMS_PER_DEVICE - 1]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(ss[RDEV_RT_MAX_STREAMS_PER_DEVICE - 1]), RDEV_OK);
  free(ss);
  rdev_rt_close(rt); /* destroys all of them */
}
END_TEST

START_TEST(test_stream_destroy_waits_for_queued_work) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  cbarg_t cb = {.log = log, .tag = 1};
  void *d = dmalloc(rt, 0, 64);
  unsigned char h[64];
  memset(h, 0, sizeof h);
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(s, 100000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x3c, 64, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 64, d, 64, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  ck_assert_msg(now_ms() - t0 >= 95.0, "destroy returned before the queued delay ran");
  ck_assert_int_eq(atomic_load(&cb.calls), 1);
  ck_assert_int_eq(cblog_count(log), 1);
  ck_assert_int_eq(log->status[0], RDEV_OK);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(h[i], 0x3c);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_destroy_returns_pending_async_error) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_RT_AICORE_EXCEPTION);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_destroy_force_cancels_queued_callbacks_quickly) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  enum { NCB = 10 };
  cbarg_t cb[NCB];
  memset(cb, 0, sizeof cb);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0, 64), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 10000000), RDEV_OK); /* 10 s */
  for (int i = 0; i < NCB; i++) {
    cb[i].log = log;
    cb[i].tag = i;
    ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb[i]), RDEV_OK);
    ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0xee, 64, s), RDEV_OK);
  }
  sleep_ms(50); /* the delay is running */
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  double dt = now_ms() - t0;
  ck_assert_msg(dt < 1000.0, "force destroy took %.1f ms (did not interrupt the delay)", dt);
  ck_assert_int_eq(cblog_count(log), NCB);
  for (int i = 0; i < NCB; i++) {
    ck_assert_int_eq(atomic_load(&cb[i].calls), 1);
    ck_assert_int_eq(log->status[i], RDEV_CANCELLED);
    ck_assert_int_eq(log->tag[i], i);
  }
  /* discarded memsets did not run */
  unsigned char h[64];
  d2h(rt, h, d, 64);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(h[i], 0);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

/* Abort returns while a callback still runs; what was queued behind it, or
 * comes after, is discarded once it returns. */
START_TEST(test_stream_abort_returns_at_once_and_discards_what_follows) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  cbarg_t cb[2];
  memset(cb, 0, sizeof cb);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0, 64), RDEV_OK);
  hold_t gate = {0, 0};
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_hold, &gate), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0xee, 64, s), RDEV_OK);
  cb[0].log = log;
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb[0]), RDEV_OK);
  for (int i = 0; i < 5000 && !atomic_load(&gate.entered); i++) sleep_ms(1);
  ck_assert_msg(atomic_load(&gate.entered), "the gate callback did not start");
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_abort(s), RDEV_OK);
  ck_assert_msg(now_ms() - t0 < 500.0, "abort waited for the running callback");
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0xdd, 64, s), RDEV_OK);
  cb[1].log = log;
  cb[1].tag = 1;
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb[1]), RDEV_OK);
  atomic_store(&gate.release, 1);
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  ck_assert_int_eq(cblog_count(log), 2);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(log->status[i], RDEV_CANCELLED);
  unsigned char h[64];
  d2h(rt, h, d, 64);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(h[i], 0);
  ck_assert_int_eq(rdev_rt_stream_abort(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_destroy_force_on_idle_stream_is_ok) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_close_with_queued_work_does_not_hang) {
  rdev_rt_t *rt = open_small();
  cblog_t *log = cblog_new();
  enum { NCB = 8 };
  cbarg_t cb[NCB];
  memset(cb, 0, sizeof cb);
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0), *c = mkstream(rt, 1);
  rdev_rt_event_t *ev = mkevent(rt, 0), *ev2 = mkevent(rt, 0);
  void *d = dmalloc(rt, 0, 4096);
  void *h = NULL;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &h, 4096), RDEV_OK);
  ck_assert_int_eq(launch_delay(a, 10000000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 4096, d, 4096, RDEV_MEMCPY_DEVICE_TO_HOST, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev2, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(ev2), RDEV_OK); /* still referenced by a's queue */
  ck_assert_int_eq(rdev_rt_stream_wait_event(b, ev), RDEV_OK); /* b blocks on a */
  for (int i = 0; i < NCB; i++) {
    cb[i].log = log;
    cb[i].tag = i;
    ck_assert_int_eq(rdev_rt_launch_callback(i % 2 ? a : b, cb_log, &cb[i]), RDEV_OK);
  }
  ck_assert_int_eq(launch_delay(c, 10000000), RDEV_OK);
  sleep_ms(30);
  double t0 = now_ms();
  rdev_rt_close(rt);
  double dt = now_ms() - t0;
  ck_assert_msg(dt < 1500.0, "close took %.1f ms", dt);
  ck_assert_int_eq(cblog_count(log), NCB);
  for (int i = 0; i < NCB; i++) {
    ck_assert_int_eq(atomic_load(&cb[i].calls), 1);
    ck_assert_int_eq(log->status[i], RDEV_CANCELLED);
  }
  cblog_free(log);
}
END_TEST

START_TEST(test_stream_take_error_returns_and_clears_pending_error) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  ck_assert_int_eq(rdev_rt_stream_take_error(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, -1), RDEV_OK); /* the kernel ran, no stream sync */
  ck_assert_int_eq(rdev_rt_stream_take_error(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(rdev_rt_stream_take_error(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* already taken */
  ck_assert_int_eq(rdev_rt_stream_take_error(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

typedef struct {
  rdev_rt_stream_t *s;
  atomic_int calls;
  int taken;
} take_arg_t;

static void cb_take_error(void *user, int status) {
  take_arg_t *a = user;
  a->taken = status == RDEV_OK ? rdev_rt_stream_take_error(a->s) : -1;
  atomic_fetch_add(&a->calls, 1);
}

START_TEST(test_stream_take_error_in_callback_covers_work_queued_before_it) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  take_arg_t first = {.s = s}, second = {.s = s};
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 2, 0), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1000), RDEV_OK); /* kernel run 1: fine */
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_take_error, &first), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1000), RDEV_OK); /* kernel run 2: faults */
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_take_error, &second), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* the callback took it */
  ck_assert_int_eq(atomic_load(&first.calls), 1);
  ck_assert_int_eq(atomic_load(&second.calls), 1);
  ck_assert_int_eq(first.taken, RDEV_OK);
  ck_assert_int_eq(second.taken, RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

struct submit_job {
  rdev_rt_stream_t *s;
  cbarg_t *cb;
  int n;
  int failures;
};

static void *submit_thread(void *arg) {
  struct submit_job *j = arg;
  for (int i = 0; i < j->n; i++)
    if (rdev_rt_launch_callback(j->s, cb_log, &j->cb[i]) != RDEV_OK) j->failures++;
  return NULL;
}

START_TEST(test_submit_from_many_threads_to_one_stream) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 4 * MIB, .stream_depth = 8};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  enum { NT = 4, PER = 200 };
  cbarg_t *cb = calloc(NT * PER, sizeof *cb);
  for (int i = 0; i < NT * PER; i++) {
    cb[i].log = log;
    cb[i].tag = i;
  }
  struct submit_job jobs[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    jobs[t] = (struct submit_job){.s = s, .cb = cb + t * PER, .n = PER};
    ck_assert_int_eq(pthread_create(&th[t], NULL, submit_thread, &jobs[t]), 0);
  }
  for (int t = 0; t < NT; t++) {
    pthread_join(th[t], NULL);
    ck_assert_int_eq(jobs[t].failures, 0);
  }
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(cblog_count(log), NT * PER);
  for (int i = 0; i < NT * PER; i++) ck_assert_int_eq(atomic_load(&cb[i].calls), 1);
  /* each submitter's callbacks ran in its own submission order */
  int last[NT];
  for (int t = 0; t < NT; t++) last[t] = -1;
  for (int k = 0; k < NT * PER; k++) {
    int tag = log->tag[k], t = tag / PER;
    ck_assert_int_gt(tag, last[t]);
    last[t] = tag;
    ck_assert_int_eq(log->status[k], RDEV_OK);
  }
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  free(cb);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

/* ======================================================================== */
/* host callbacks                                                            */
/* ======================================================================== */

START_TEST(test_callbacks_run_in_order_with_stream_work) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  void *d = dmalloc(rt, 0, 64), *d2 = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d2, 64, 0, 64), RDEV_OK);
  int32_t cell = 0, out = 0;
  cbarg_t a = {.log = log, .tag = 1, .sleep_ms = 50, .host_cell = &cell, .write_value = 7};
  cbarg_t b = {.log = log, .tag = 2};
  ck_assert_int_eq(launch_delay(s, 30000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x42, 4, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, &cell, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
  /* a sees what the copy before it wrote; the copy after it sees what a wrote */
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, d2, 4, &cell, 4, RDEV_MEMCPY_HOST_TO_DEVICE, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, &out, 4, d2, 4, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(a.seen_value, 0x42424242);
  ck_assert_int_eq(out, 7);
  ck_assert_int_eq(cblog_count(log), 2);
  ck_assert_int_eq(log->tag[0], 1);
  ck_assert_int_eq(log->tag[1], 2);
  ck_assert_int_eq(log->status[0], RDEV_OK);
  ck_assert_int_eq(log->status[1], RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_callback_runs_after_preceding_delay) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  cbarg_t a = {.log = log, .tag = 1};
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(s, 100000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(cblog_count(log), 1);
  ck_assert_msg(log->when[0] - t0 >= 95.0, "callback ran %.1f ms after submit", log->when[0] - t0);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_callback_runs_on_a_thread_other_than_submitter) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  cbarg_t a = {.log = log, .tag = 1};
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(cblog_count(log), 1);
  ck_assert(!pthread_equal(log->thread[0], pthread_self()));
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_callbacks_called_exactly_once) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  cblog_t *log = cblog_new();
  enum { N = 500 };
  cbarg_t *cb = calloc(N, sizeof *cb);
  for (int i = 0; i < N; i++) {
    cb[i].log = log;
    cb[i].tag = i;
    ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb[i]), RDEV_OK);
  }
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  ck_assert_int_eq(cblog_count(log), N);
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(atomic_load(&cb[i].calls), 1);
    ck_assert_int_eq(log->tag[i], i);
    ck_assert_int_eq(log->status[i], RDEV_OK);
  }
  free(cb);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_callback_null_fn_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_launch_callback(s, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch_callback(NULL, cb_log, NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ======================================================================== */
/* events                                                                    */
/* ======================================================================== */

START_TEST(test_event_record_query_and_synchronize) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  ck_assert_int_eq(launch_delay(s, 100000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, s), RDEV_OK);
  int done = 1;
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 0);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, -1), RDEV_OK);
  ck_assert_msg(now_ms() - t0 >= 80.0, "event sync returned before the record ran");
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_never_recorded_is_complete) {
  rdev_rt_t *rt = open_small();
  rdev_rt_event_t *ev = mkevent(rt, 1);
  int done = 0;
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, -1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, 0), RDEV_OK);
  ck_assert(now_ms() - t0 < 100.0);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_elapsed_ms_measures_delay) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *e1 = mkevent(rt, 0), *e2 = mkevent(rt, 0);
  ck_assert_int_eq(rdev_rt_event_record(e1, s), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(e2, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  float ms = -1;
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e1, e2), RDEV_OK);
  ck_assert_msg(ms >= 19.0f && ms < 1000.0f, "elapsed %.3f ms around a 20 ms delay", (double)ms);
  float back = 0;
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&back, e2, e1), RDEV_OK);
  ck_assert_float_eq_tol(back, -ms, 0.001f);
  ck_assert_int_eq(rdev_rt_event_destroy(e1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(e2), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_elapsed_on_unrecorded_event_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *e1 = mkevent(rt, 0), *e2 = mkevent(rt, 0);
  float ms = 0;
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e1, e2), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_event_record(e1, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e1, e2), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e2, e1), RDEV_INVALID_PARAM);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(NULL, e1, e1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e1, e1), RDEV_OK);
  ck_assert_float_eq_tol(ms, 0.0f, 0.0001f);
  ck_assert_int_eq(rdev_rt_event_destroy(e1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(e2), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_elapsed_on_incomplete_event_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *e1 = mkevent(rt, 0), *e2 = mkevent(rt, 0);
  ck_assert_int_eq(rdev_rt_event_record(e1, s), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 200000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(e2, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_synchronize(e1, -1), RDEV_OK);
  float ms = 0;
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e1, e2), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, e1, e2), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(e1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(e2), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_wait_event_orders_work_across_streams) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  void *d = dmalloc(rt, 0, 16);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 16, 0, 16), RDEV_OK);
  int32_t out[4] = {0};
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(a, 100000), RDEV_OK);
  ck_assert_int_eq(launch_write(a, d, 4, 4242, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_wait_event(b, ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, out, sizeof out, d, 16, RDEV_MEMCPY_DEVICE_TO_HOST, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_msg(now_ms() - t0 >= 90.0, "b did not wait for a's event");
  for (int i = 0; i < 4; i++) ck_assert_int_eq(out[i], 4242);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_stream_wait_on_never_recorded_event_does_not_block) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_stream_wait_event(s, ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 5, 64, s), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 2000), RDEV_OK);
  ck_assert(now_ms() - t0 < 500.0);
  unsigned char h[64];
  d2h(rt, h, d, 64);
  ck_assert_int_eq(h[63], 5);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_synchronize_timeout_is_wait_timeout) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  ck_assert_int_eq(launch_delay(s, 300000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, s), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, 50), RDEV_RT_WAIT_TIMEOUT);
  ck_assert_int_eq(RDEV_RT_WAIT_TIMEOUT, 107019);
  double dt = now_ms() - t0;
  ck_assert_msg(dt >= 45.0 && dt < 250.0, "event sync with 50 ms timeout took %.1f ms", dt);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, -2), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, -1), RDEV_OK);
  int done = 0;
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_destroy_while_queued_task_references_it_is_safe) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0, 64), RDEV_OK);
  ck_assert_int_eq(launch_delay(a, 100000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x66, 64, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_wait_event(b, ev), RDEV_OK);
  unsigned char h[64];
  memset(h, 0, sizeof h);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, 64, d, 64, RDEV_MEMCPY_DEVICE_TO_HOST, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK); /* record and wait still queued */
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(h[i], 0x66);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_rerecord_replaces_previous_record) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  ck_assert_int_eq(rdev_rt_event_record(ev, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  int done = 0;
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(launch_delay(b, 200000), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 0);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, 20), RDEV_RT_WAIT_TIMEOUT);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, -1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_query(ev, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_on_stream_of_other_device_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s1 = mkstream(rt, 1);
  rdev_rt_event_t *ev0 = mkevent(rt, 0);
  ck_assert_int_eq(rdev_rt_event_record(ev0, s1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_wait_event(s1, ev0), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_event_destroy(ev0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s1), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_event_limit_per_device_is_storage_over_limit) {
  rdev_rt_t *rt = open_rt(2, 4 * MIB);
  rdev_rt_event_t **evs = calloc(RDEV_RT_MAX_EVENTS_PER_DEVICE, sizeof *evs);
  for (int i = 0; i < RDEV_RT_MAX_EVENTS_PER_DEVICE; i++) {
    int rc = rdev_rt_event_create(rt, 0, &evs[i]);
    ck_assert_msg(rc == RDEV_OK, "event %d: %d", i, rc);
  }
  rdev_rt_event_t *extra = NULL;
  ck_assert_int_eq(rdev_rt_event_create(rt, 0, &extra), RDEV_STORAGE_OVER_LIMIT);
  ck_assert_ptr_null(extra);
  ck_assert_int_eq(rdev_rt_event_create(rt, 1, &extra), RDEV_OK); /* per device */
  ck_assert_int_eq(rdev_rt_event_destroy(extra), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_destroy(evs[0]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_create(rt, 0, &evs[0]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_create(rt, 0, &extra), RDEV_STORAGE_OVER_LIMIT);
  for (int i = 0; i < RDEV_RT_MAX_EVENTS_PER_DEVICE / 2; i++)
    ck_assert_int_eq(rdev_rt_event_destroy(evs[i]), RDEV_OK);
  free(evs);
  rdev_rt_close(rt); /* releases the rest */
}
END_TEST

START_TEST(test_event_null_handle_is_invalid_resource_handle) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int done;
  float ms;
  ck_assert_int_eq(rdev_rt_event_destroy(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_event_record(NULL, s), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_wait_event(s, NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_event_synchronize(NULL, -1), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_event_query(NULL, &done), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_event_elapsed_ms(&ms, NULL, NULL), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ======================================================================== */
/* kernels                                                                   */
/* ======================================================================== */

START_TEST(test_kernel_registry_lists_exactly_the_builtin_kernels) {
  static const char *want[] = {"write_i32", "square_f32", "add_f32", "axpy_f32", "reduce_sum_f32", "delay_us"};
  int n = -1;
  const rdev_kernel_sig_t *k = rdev_rt_kernels(&n);
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(n, 6);
  for (int i = 0; i < 6; i++) {
    ck_assert_str_eq(k[i].name, want[i]);
    ck_assert_ptr_nonnull(k[i].doc);
    ck_assert_ptr_eq(rdev_rt_kernel_find(want[i]), &k[i]);
  }
  ck_assert_int_eq(rdev_rt_kernel_find("square_f32")->nparams, 3);
  ck_assert_int_eq(rdev_rt_kernel_find("delay_us")->params[0].type, RDEV_ARG_U32);
  ck_assert_ptr_null(rdev_rt_kernel_find("nope"));
  ck_assert_ptr_null(rdev_rt_kernel_find(NULL));
  ck_assert_ptr_null(rdev_rt_kernel_find("square_f3"));
}
END_TEST

START_TEST(test_write_i32_writes_each_block_and_prints_once_per_launch) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 8 * sizeof(int32_t));
  ck_assert_int_eq(rdev_rt_memset(rt, d, 32, 0, 32), RDEV_OK);
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_write(s, d, 4, 123, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t h[8];
  d2h(rt, h, d, sizeof h);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(h[i], 123);
  for (int i = 4; i < 8; i++) ck_assert_int_eq(h[i], 0);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  ck_assert_uint_eq(pc.len, 4 * strlen("Source data: 123\n"));
  ck_assert_str_eq(pc.text, "Source data: 123\nSource data: 123\nSource data: 123\nSource data: 123\n");
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_write_i32_without_print_fn_still_writes) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 1);
  void *d = dmalloc(rt, 1, 3 * sizeof(int32_t));
  ck_assert_int_eq(launch_write(s, d, 3, -5, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t h[3];
  d2h(rt, h, d, sizeof h);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(h[i], -5);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_write_i32_extent_is_one_element_per_block) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  ck_assert_int_eq(launch_write(s, d, 5, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_write(s, d, 4, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(launch_write(s, (char *)d + 4, 4, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

static void run_square(uint32_t blocks, uint32_t n) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  size_t bytes = (size_t)n * sizeof(float);
  float *in = malloc(bytes), *out = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) in[i] = rand_float();
  void *din = dmalloc(rt, 0, bytes), *dout = dmalloc(rt, 0, bytes);
  h2d(rt, din, in, bytes);
  ck_assert_int_eq(rdev_rt_memset(rt, dout, bytes, 0xff, bytes), RDEV_OK);
  ck_assert_int_eq(launch_square(s, blocks, din, 0, dout, 0, n), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, bytes);
  for (uint32_t i = 0; i < n; i++) {
    float want = in[i] * in[i];
    ck_assert_msg(out[i] == want, "blocks %u: out[%u] = %a, want %a", blocks, i, (double)out[i], (double)want);
  }
  free(in);
  free(out);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_square_f32_matches_host_one_block) { run_square(1, 1000); }
END_TEST

START_TEST(test_square_f32_matches_host_several_blocks) {
  run_square(7, 1000);
  run_square(64, 1001);
  run_square(2000, 1000); /* more blocks than elements */
}
END_TEST

START_TEST(test_square_f32_only_touches_n_elements) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  float in[16], out[16];
  for (int i = 0; i < 16; i++) in[i] = (float)i;
  void *din = dmalloc(rt, 0, sizeof in), *dout = dmalloc(rt, 0, sizeof out);
  h2d(rt, din, in, sizeof in);
  ck_assert_int_eq(rdev_rt_memset(rt, dout, sizeof out, 0, sizeof out), RDEV_OK);
  /* square elements 4..9 via offsets on both pointers */
  ck_assert_int_eq(launch_square(s, 3, din, 16, dout, 16, 6), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, sizeof out);
  for (int i = 0; i < 16; i++) ck_assert(out[i] == ((i >= 4 && i < 10) ? (float)(i * i) : 0.0f));
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

static void run_add(uint32_t blocks, uint32_t n) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 1);
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = rand_float();
    y[i] = rand_float();
  }
  void *dx = dmalloc(rt, 1, bytes), *dy = dmalloc(rt, 1, bytes), *dout = dmalloc(rt, 1, bytes);
  h2d(rt, dx, x, bytes);
  h2d(rt, dy, y, bytes);
  rdev_kernel_arg_t a[4] = {a_ptr(dx, 0), a_ptr(dy, 0), a_ptr(dout, 0), a_u32(n)};
  ck_assert_int_eq(rdev_rt_launch(s, "add_f32", blocks, a, 4, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, bytes);
  for (uint32_t i = 0; i < n; i++) {
    float want = x[i] + y[i];
    ck_assert_msg(out[i] == want, "blocks %u: out[%u] = %a, want %a", blocks, i, (double)out[i], (double)want);
  }
  free(x);
  free(y);
  free(out);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_add_f32_matches_host_one_block) { run_add(1, 4096); }
END_TEST

START_TEST(test_add_f32_matches_host_several_blocks) {
  run_add(5, 4096);
  run_add(48, 777);
}
END_TEST

static void run_axpy(uint32_t blocks, uint32_t n, float alpha) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = rand_float();
    y[i] = rand_float();
  }
  void *dx = dmalloc(rt, 0, bytes), *dy = dmalloc(rt, 0, bytes);
  h2d(rt, dx, x, bytes);
  h2d(rt, dy, y, bytes);
  rdev_kernel_arg_t a[4] = {a_f32(alpha), a_ptr(dx, 0), a_ptr(dy, 0), a_u32(n)};
  ck_assert_int_eq(rdev_rt_launch(s, "axpy_f32", blocks, a, 4, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dy, bytes);
  for (uint32_t i = 0; i < n; i++) {
    volatile float ax = alpha * x[i]; /* no contraction into an FMA */
    float want = ax + y[i];
    ck_assert_msg(out[i] == want, "blocks %u: y[%u] = %a, want %a", blocks, i, (double)out[i], (double)want);
  }
  free(x);
  free(y);
  free(out);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_axpy_f32_matches_host_one_block) { run_axpy(1, 3000, 2.5f); }
END_TEST

START_TEST(test_axpy_f32_matches_host_several_blocks) {
  run_axpy(9, 3000, -0.375f);
  run_axpy(100, 101, 3.1f);
}
END_TEST

static void run_reduce(uint32_t blocks, uint32_t n) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  size_t bytes = (size_t)n * sizeof(float);
  float *in = malloc(bytes);
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    in[i] = (float)((double)(rng_next() >> 11) / 9007199254740992.0); /* [0, 1) */
    sum += in[i];
  }
  void *din = dmalloc(rt, 0, bytes), *dout = dmalloc(rt, 0, sizeof(float));
  h2d(rt, din, in, bytes);
  rdev_kernel_arg_t a[3] = {a_ptr(din, 0), a_ptr(dout, 0), a_u32(n)};
  ck_assert_int_eq(rdev_rt_launch(s, "reduce_sum_f32", blocks, a, 3, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  float out = 0;
  d2h(rt, &out, dout, sizeof out);
  ck_assert_msg(fabs((double)out - sum) <= 1e-5 * sum + 1e-6, "blocks %u: sum %.9g, want %.9g", blocks,
                (double)out, sum);
  free(in);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_reduce_sum_f32_matches_host_one_block) { run_reduce(1, 100000); }
END_TEST

START_TEST(test_reduce_sum_f32_matches_host_several_blocks) {
  run_reduce(13, 100000);
  run_reduce(256, 1000);
}
END_TEST

START_TEST(test_reduce_sum_f32_of_zero_elements_is_zero) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 64), *dout = dmalloc(rt, 0, sizeof(float));
  float junk = 99.0f;
  h2d(rt, dout, &junk, sizeof junk);
  rdev_kernel_arg_t a[3] = {a_ptr(din, 0), a_ptr(dout, 0), a_u32(0)};
  ck_assert_int_eq(rdev_rt_launch(s, "reduce_sum_f32", 4, a, 3, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  float out = -1;
  d2h(rt, &out, dout, sizeof out);
  ck_assert(out == 0.0f);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_unknown_kernel_is_unknown_kernel) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_kernel_arg_t a = a_u32(1);
  ck_assert_int_eq(rdev_rt_launch(s, "cube_f32", 1, &a, 1, NULL, NULL), RDEV_UNKNOWN_KERNEL);
  ck_assert(last_error_has("cube_f32"));
  ck_assert_int_eq(rdev_rt_launch(s, "", 1, &a, 1, NULL, NULL), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(rdev_rt_launch(s, NULL, 1, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  int done = 0;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1); /* nothing was queued */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_wrong_arg_count_is_kernel_args) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 64), *dout = dmalloc(rt, 0, 64);
  rdev_kernel_arg_t a[4] = {a_ptr(din, 0), a_ptr(dout, 0), a_u32(4), a_u32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 2, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("square_f32"));
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 4, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 1, NULL, 0, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 3, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_wrong_arg_type_is_kernel_args_naming_argument) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 64), *dout = dmalloc(rt, 0, 64);
  rdev_kernel_arg_t a[3] = {a_ptr(din, 0), a_ptr(dout, 0), a_i32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 3, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("'n'"));
  rdev_kernel_arg_t b[3] = {a_u32(0), a_ptr(dout, 0), a_u32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, b, 3, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("'in'"));
  rdev_kernel_arg_t c[4] = {a_u32(1), a_ptr(din, 0), a_ptr(dout, 0), a_u32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "axpy_f32", 1, c, 4, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("'alpha'"));
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_extent_past_end_via_n_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 100 * sizeof(float)), *dout = dmalloc(rt, 0, 200 * sizeof(float));
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, 101), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, dout, 0, din, 0, 101), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, UINT32_MAX), RDEV_INVALID_PARAM);
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, 100), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_extent_past_end_via_offset_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 100 * sizeof(float)), *dout = dmalloc(rt, 0, 100 * sizeof(float));
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 8, 99), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, din, 4, dout, 0, 100), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, din, 400, dout, 0, 1), RDEV_INVALID_PARAM);
  /* interior base plus offset counts from the allocation start */
  ck_assert_int_eq(launch_square(s, 1, (char *)din + 200, 196, dout, 0, 1), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 1, (char *)din + 200, 200, dout, 0, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(launch_square(s, 1, din, 4, dout, 4, 99), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_offset_overflow_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 256), *dout = dmalloc(rt, 0, 256);
  ck_assert_int_eq(launch_square(s, 1, din, UINT64_MAX, dout, 0, 1), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, (char *)din + 64, UINT64_MAX - 3, dout, 0, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, UINT64_MAX - 63, 1), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  int done = 0;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_blocks_out_of_range_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_kernel_arg_t a = a_u32(1);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 0, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", RDEV_RT_MAX_KERNEL_BLOCKS + 1, &a, 1, NULL, NULL),
                   RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", UINT32_MAX, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", RDEV_RT_MAX_KERNEL_BLOCKS, &a, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_host_pointer_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  float host[64];
  memset(host, 0, sizeof host);
  void *dout = dmalloc(rt, 0, sizeof host);
  ck_assert_int_eq(launch_square(s, 1, host, 0, dout, 0, 64), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  void *pinned = NULL;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &pinned, 4096), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 1, dout, 0, pinned, 0, 64), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, NULL, 0, dout, 0, 0), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free_host(rt, pinned), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_pointer_on_other_device_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d0 = dmalloc(rt, 0, 256), *d1 = dmalloc(rt, 1, 256);
  ck_assert_int_eq(launch_square(s, 1, d1, 0, d0, 0, 16), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, d0, 0, d1, 0, 16), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, d0, 0, d0, 0, 16), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_pointer_into_freed_memory_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 256), *dout = dmalloc(rt, 0, 256);
  ck_assert_int_eq(rdev_rt_free(rt, din), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, 16), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_misaligned_float_pointer_is_unaligned) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 256), *dout = dmalloc(rt, 0, 256);
  ck_assert_int_eq(launch_square(s, 1, din, 2, dout, 0, 16), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, din, 0, (char *)dout + 1, 0, 16), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_write(s, (char *)dout + 6, 1, 0, NULL, NULL), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(launch_square(s, 1, din, 4, dout, 8, 16), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_kernel_print_truncated_at_print_limit) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  const uint32_t blocks = RDEV_RT_MAX_KERNEL_BLOCKS;
  size_t bytes = (size_t)blocks * sizeof(int32_t);
  void *d = dmalloc(rt, 0, bytes);
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_write(s, d, blocks, 7, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t *h = malloc(bytes);
  d2h(rt, h, d, bytes);
  for (uint32_t i = 0; i < blocks; i++) ck_assert_int_eq(h[i], 7); /* all blocks ran */
  free(h);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  static const char line[] = "Source data: 7\n";
  const size_t ll = sizeof line - 1;
  ck_assert_uint_lt(pc.len, (size_t)blocks * ll); /* far less than everything */
  /* the kept text: whole lines up to the limit, then one truncation note */
  size_t kept = 0;
  while (kept + ll <= pc.len && memcmp(pc.text + kept, line, ll) == 0) kept += ll;
  ck_assert_uint_le(kept, RDEV_RT_PRINT_LIMIT);
  ck_assert_uint_gt(kept + ll, RDEV_RT_PRINT_LIMIT); /* nothing that fit was dropped */
  const char *note = pc.text + kept;
  size_t note_len = pc.len - kept;
  ck_assert_uint_gt(note_len, 0);
  ck_assert_uint_lt(note_len, 200);
  ck_assert_msg(memmem(note, note_len, "truncated", 9) != NULL, "no truncation note: '%.*s'", (int)note_len,
                note);
  ck_assert_int_eq(note[note_len - 1], '\n');
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_called_once_with_empty_text_when_kernel_prints_nothing) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  printcap_t pc;
  printcap_init(&pc);
  rdev_kernel_arg_t a = a_u32(10);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 3, &a, 1, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  ck_assert_uint_eq(pc.len, 0);
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_not_called_when_launch_fails) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_write(s, d, 5, 1, print_capture, &pc), RDEV_INVALID_PARAM); /* extent */
  ck_assert_int_eq(launch_write(s, d, 0, 1, print_capture, &pc), RDEV_INVALID_PARAM); /* blocks */
  rdev_kernel_arg_t bad[2] = {a_ptr(d, 0), a_u32(1)};
  ck_assert_int_eq(rdev_rt_launch(s, "write_i32", 1, bad, 2, print_capture, &pc), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(rdev_rt_launch(s, "nope", 1, bad, 2, print_capture, &pc), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 0);
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_called_once_with_empty_text_for_discarded_launch) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  ck_assert_int_eq(rdev_rt_memset(rt, d, 16, 0, 16), RDEV_OK);
  enum { NL = 5 };
  printcap_t pc[NL];
  ck_assert_int_eq(launch_delay(s, 10000000), RDEV_OK);
  for (int i = 0; i < NL; i++) {
    printcap_init(&pc[i]);
    ck_assert_int_eq(launch_write(s, d, 4, 9, print_capture, &pc[i]), RDEV_OK);
  }
  sleep_ms(30);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  ck_assert(now_ms() - t0 < 1000.0);
  for (int i = 0; i < NL; i++) {
    pthread_mutex_lock(&pc[i].mu);
    ck_assert_int_eq(pc[i].calls, 1);
    ck_assert_uint_eq(pc[i].len, 0);
    pthread_mutex_unlock(&pc[i].mu);
    printcap_fini(&pc[i]);
  }
  int32_t h[4];
  d2h(rt, h, d, sizeof h);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(h[i], 0); /* discarded kernels did not run */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_called_once_for_launches_discarded_by_close) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_delay(s, 10000000), RDEV_OK);
  ck_assert_int_eq(launch_write(s, d, 4, 9, print_capture, &pc), RDEV_OK);
  sleep_ms(30);
  rdev_rt_close(rt);
  ck_assert_int_eq(pc.calls, 1);
  ck_assert_uint_eq(pc.len, 0);
  printcap_fini(&pc);
}
END_TEST

/* ======================================================================== */
/* fault injection                                                           */
/* ======================================================================== */

START_TEST(test_fault_alloc_fails_only_the_nth_malloc) {
  rdev_rt_t *rt = open_small();
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_ALLOC, 2, 0), RDEV_OK);
  void *p1 = NULL, *p2 = (void *)0x1, *p3 = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p1, 100, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  size_t f = free_of(rt, 0);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p2, 100, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_ptr_null(p2);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_uint_eq(free_of(rt, 0), f);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p3, 100, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  void *p4 = dmalloc(rt, 0, 100);
  ck_assert_int_eq(rdev_rt_free(rt, p1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p3), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p4), RDEV_OK);
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_is_per_device) {
  rdev_rt_t *rt = open_small();
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 1, RDEV_FAULT_ALLOC, 1, 0), RDEV_OK);
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc(rt, 1, &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_int_eq(rdev_rt_malloc(rt, 1, &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_rearm_replaces_previous) {
  rdev_rt_t *rt = open_small();
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_ALLOC, 1, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_ALLOC, 3, 0), RDEV_OK);
  void *p[3] = {NULL, NULL, NULL};
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p[0], 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p[1], 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p[2], 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  ck_assert_int_eq(rdev_rt_free(rt, p[0]), RDEV_OK);
  ck_assert_int_eq(rdev_rt_free(rt, p[1]), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_inject_bad_kind_or_nth_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, (rdev_fault_kind_t)0, 1, 0), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, (rdev_fault_kind_t)4, 1, 0), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_ALLOC, 0, 0), RDEV_INVALID_PARAM);
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK); /* nothing armed */
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_kernel_surfaces_at_next_sync_then_clears) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 64 };
  float in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = (float)i - 10.0f;
  void *din = dmalloc(rt, 0, sizeof in), *dout = dmalloc(rt, 0, sizeof out);
  h2d(rt, din, in, sizeof in);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 2, din, 0, dout, 0, N), RDEV_OK); /* launch itself is fine */
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(RDEV_RT_AICORE_EXCEPTION, 507015);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* cleared */
  /* the stream still works */
  ck_assert_int_eq(rdev_rt_memset(rt, dout, sizeof out, 0, sizeof out), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 2, din, 0, dout, 0, N), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, sizeof out);
  for (int i = 0; i < N; i++) ck_assert(out[i] == in[i] * in[i]);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_kernel_still_calls_print_fn_once) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
  ck_assert_int_eq(launch_write(s, d, 4, 3, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_kernel_nth_counts_kernel_runs) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 2, 0), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(launch_delay(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_hang_stalls_next_task) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0, 64), RDEV_OK);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_HANG, 1, 300), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x21, 64, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 50), RDEV_RT_STREAM_SYNC_TIMEOUT);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  double dt = now_ms() - t0;
  ck_assert_msg(dt >= 280.0, "hang of 300 ms ended after %.1f ms", dt);
  unsigned char h[64];
  d2h(rt, h, d, 64);
  ck_assert_int_eq(h[0], 0x21);
  /* fired once: the next task runs at once */
  t0 = now_ms();
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x22, 64, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert(now_ms() - t0 < 200.0);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_fault_hang_interrupted_by_force_destroy) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_HANG, 1, 10000), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 1), RDEV_OK);
  sleep_ms(30);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  ck_assert(now_ms() - t0 < 1000.0);
  rdev_rt_close(rt);
}
END_TEST

/* ======================================================================== */
/* concurrency                                                               */
/* ======================================================================== */

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

/* ======================================================================== */
/* suites                                                                    */
/* ======================================================================== */

static TCase *tcase(const char *name) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 120);
  return tc;
}

/* ---- scheduling -------------------------------------------------------------- */

/* Runs nstreams[g] streams per group g (weights w[g]) on one device with one
 * execution slot, each queueing 1 ms delay kernels, for ~400 ms; returns the
 * kernels each group completed. */
static void run_groups(int ngroups, const int *nstreams, const uint32_t *w, size_t *done) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 * MIB, .sim_slots = 1};
  rdev_rt_t *rt;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *st[16];
  int owner[16], n = 0;
  const int per_stream = 1000;
  for (int g = 0; g < ngroups; g++)
    for (int k = 0; k < nstreams[g]; k++, n++) {
      ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &st[n]), RDEV_OK);
      ck_assert_int_eq(rdev_rt_stream_set_group(st[n], (uint32_t)g + 1, w[g], 0), RDEV_OK);
      owner[n] = g;
    }
  rdev_kernel_arg_t us = {.type = RDEV_ARG_U32, .v.u32 = 1000};
  for (int i = 0; i < per_stream; i++)
    for (int k = 0; k < n; k++) ck_assert_int_eq(rdev_rt_launch(st[k], "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  usleep(400 * 1000);
  for (int g = 0; g < ngroups; g++) done[g] = 0;
  for (int k = 0; k < n; k++) {
    size_t pending;
    ck_assert_int_eq(rdev_rt_stream_pending(st[k], &pending), RDEV_OK);
    done[owner[k]] += per_stream - pending;
  }
  double t0 = now_ms();
  rdev_rt_close(rt); /* force-destroys streams, including workers waiting for the slot */
  ck_assert_double_lt(now_ms() - t0, 1000);
}

START_TEST(test_slots_share_device_time_equally_between_groups_not_streams) {
  int nstreams[2] = {3, 1};
  uint32_t w[2] = {1, 1};
  size_t done[2];
  run_groups(2, nstreams, w, done);
  double share = (double)done[0] / (double)(done[0] + done[1]);
  ck_assert_uint_gt(done[0] + done[1], 100);
  ck_assert_msg(share > 0.38 && share < 0.62, "group with 3 streams got %.2f of the device (%zu vs %zu)", share,
                done[0], done[1]);
}
END_TEST

START_TEST(test_slots_share_device_time_by_weight) {
  int nstreams[2] = {1, 1};
  uint32_t w[2] = {3, 1};
  size_t done[2];
  run_groups(2, nstreams, w, done);
  double share = (double)done[0] / (double)(done[0] + done[1]);
  ck_assert_msg(share > 0.65 && share < 0.85, "weight-3 group got %.2f of the device (%zu vs %zu)", share, done[0],
                done[1]);
}
END_TEST

START_TEST(test_group_at_its_slot_cap_waits_for_its_own_slots) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 * MIB, .sim_slots = 2};
  rdev_rt_t *rt;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *a[3], *b;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &a[i]), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_set_group(a[i], 1, 1, 1), RDEV_OK); /* group 1: one slot at most */
  }
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_set_group(b, 2, 1, 1), RDEV_OK);
  rdev_kernel_arg_t long_us = {.type = RDEV_ARG_U32, .v.u32 = 400000}, short_us = {.type = RDEV_ARG_U32, .v.u32 = 1000};
  for (int i = 0; i < 3; i++) ck_assert_int_eq(rdev_rt_launch(a[i], "delay_us", 1, &long_us, 1, NULL, NULL), RDEV_OK);
  usleep(50 * 1000); /* one of group 1's kernels runs, two wait for its one slot */
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_launch(b, "delay_us", 1, &short_us, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_double_lt(now_ms() - t0, 250); /* the free slot went to group 2, not to group 1's waiters */
  int idle = 0, running = 0;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(rdev_rt_stream_query(a[i], &idle), RDEV_OK);
    running += !idle;
  }
  ck_assert_int_eq(running, 3); /* one runs, two still wait */
  t0 = now_ms();
  for (int i = 0; i < 3; i++) ck_assert_int_eq(rdev_rt_stream_synchronize(a[i]), RDEV_OK);
  ck_assert_double_ge(now_ms() - t0, 600); /* one at a time: about 3 x 400 ms less the 50 + b's */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_slots_limit_concurrent_kernels) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 * MIB, .sim_slots = 1};
  rdev_rt_t *rt;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *a, *b;
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &b), RDEV_OK);
  rdev_kernel_arg_t us = {.type = RDEV_ARG_U32, .v.u32 = 100000};
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_launch(a, "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch(b, "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_double_ge(now_ms() - t0, 195); /* one slot: one after the other */
  ck_assert_int_eq(rdev_rt_stream_set_group(a, 1, 0, 0), RDEV_INVALID_PARAM);
  rdev_rt_close(rt);
}
END_TEST

static Suite *open_suite(void) {
  Suite *s = suite_create("open");
  TCase *tc = tcase("open");
  tcase_add_test(tc, test_open_null_config_gives_two_sim_devices_of_1gib);
  tcase_add_test(tc, test_open_zeroed_config_uses_defaults);
  tcase_add_test(tc, test_open_custom_device_count_and_memory);
  tcase_add_test(tc, test_open_unknown_backend_is_api_not_support);
  tcase_add_test(tc, test_open_null_out_is_invalid_param);
  tcase_add_test(tc, test_close_null_is_harmless);
  tcase_add_test(tc, test_strerror_known_and_unknown_codes);
  tcase_add_test(tc, test_status_name_known_and_unknown_codes);
  tcase_add_test(tc, test_status_codes_have_cann_numbers);
  tcase_add_test(tc, test_last_error_set_after_failure_and_cleared_by_success);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *device_suite(void) {
  Suite *s = suite_create("devices");
  TCase *tc = tcase("devices");
  tcase_add_test(tc, test_device_count_matches_config);
  tcase_add_test(tc, test_device_info_reports_name_and_memory);
  tcase_add_test(tc, test_device_info_invalid_ids_are_invalid_deviceid);
  tcase_add_test(tc, test_device_scoped_calls_reject_invalid_ids);
  suite_add_tcase(s, tc);
  return s;
}

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
  suite_add_tcase(s, tc);
  return s;
}

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

static Suite *stream_suite(void) {
  Suite *s = suite_create("streams");
  TCase *tc = tcase("streams");
  tcase_add_test(tc, test_stream_device_reports_its_device);
  tcase_add_test(tc, test_stream_null_handle_is_invalid_resource_handle);
  tcase_add_test(tc, test_stream_of_another_runtime_is_invalid_resource_handle);
  tcase_add_test(tc, test_stream_runs_work_in_submission_order);
  tcase_add_test(tc, test_streams_run_concurrently);
  tcase_add_test(tc, test_stream_sync_does_not_wait_for_other_stream);
  tcase_add_test(tc, test_async_launch_returns_before_completion);
  tcase_add_test(tc, test_stream_pending_counts_unfinished_tasks);
  tcase_add_test(tc, test_stream_idle_counts_a_running_callback);
  tcase_add_test(tc, test_host_view_shows_device_memory_in_range_only);
  tcase_add_test(tc, test_stream_query_on_idle_stream_is_done);
  tcase_add_test(tc, test_stream_sync_timeout_returns_timeout_and_work_continues);
  tcase_add_test(tc, test_stream_sync_negative_timeout_below_minus_one_is_invalid_param);
  tcase_add_test(tc, test_stream_depth_blocks_submitter_when_full);
  tcase_add_test(tc, test_stream_limit_per_device_is_storage_over_limit);
  tcase_add_test(tc, test_stream_destroy_waits_for_queued_work);
  tcase_add_test(tc, test_stream_destroy_returns_pending_async_error);
  tcase_add_test(tc, test_stream_destroy_force_cancels_queued_callbacks_quickly);
  tcase_add_test(tc, test_stream_abort_returns_at_once_and_discards_what_follows);
  tcase_add_test(tc, test_stream_destroy_force_on_idle_stream_is_ok);
  tcase_add_test(tc, test_close_with_queued_work_does_not_hang);
  tcase_add_test(tc, test_submit_from_many_threads_to_one_stream);
  tcase_add_test(tc, test_stream_take_error_returns_and_clears_pending_error);
  tcase_add_test(tc, test_stream_take_error_in_callback_covers_work_queued_before_it);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *callback_suite(void) {
  Suite *s = suite_create("callbacks");
  TCase *tc = tcase("callbacks");
  tcase_add_test(tc, test_callbacks_run_in_order_with_stream_work);
  tcase_add_test(tc, test_callback_runs_after_preceding_delay);
  tcase_add_test(tc, test_callback_runs_on_a_thread_other_than_submitter);
  tcase_add_test(tc, test_callbacks_called_exactly_once);
  tcase_add_test(tc, test_launch_callback_null_fn_is_invalid_param);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *event_suite(void) {
  Suite *s = suite_create("events");
  TCase *tc = tcase("events");
  tcase_add_test(tc, test_event_record_query_and_synchronize);
  tcase_add_test(tc, test_event_never_recorded_is_complete);
  tcase_add_test(tc, test_event_elapsed_ms_measures_delay);
  tcase_add_test(tc, test_event_elapsed_on_unrecorded_event_is_invalid_param);
  tcase_add_test(tc, test_event_elapsed_on_incomplete_event_is_invalid_param);
  tcase_add_test(tc, test_stream_wait_event_orders_work_across_streams);
  tcase_add_test(tc, test_stream_wait_on_never_recorded_event_does_not_block);
  tcase_add_test(tc, test_event_synchronize_timeout_is_wait_timeout);
  tcase_add_test(tc, test_event_destroy_while_queued_task_references_it_is_safe);
  tcase_add_test(tc, test_event_rerecord_replaces_previous_record);
  tcase_add_test(tc, test_event_on_stream_of_other_device_is_invalid_param);
  tcase_add_test(tc, test_event_null_handle_is_invalid_resource_handle);
  tcase_add_test(tc, test_event_limit_per_device_is_storage_over_limit);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *kernel_suite(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tcase("kernels");
  tcase_add_test(tc, test_kernel_registry_lists_exactly_the_builtin_kernels);
  tcase_add_test(tc, test_write_i32_writes_each_block_and_prints_once_per_launch);
  tcase_add_test(tc, test_write_i32_without_print_fn_still_writes);
  tcase_add_test(tc, test_write_i32_extent_is_one_element_per_block);
  tcase_add_test(tc, test_square_f32_matches_host_one_block);
  tcase_add_test(tc, test_square_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_square_f32_only_touches_n_elements);
  tcase_add_test(tc, test_add_f32_matches_host_one_block);
  tcase_add_test(tc, test_add_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_axpy_f32_matches_host_one_block);
  tcase_add_test(tc, test_axpy_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_reduce_sum_f32_matches_host_one_block);
  tcase_add_test(tc, test_reduce_sum_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_reduce_sum_f32_of_zero_elements_is_zero);
  tcase_add_test(tc, test_launch_unknown_kernel_is_unknown_kernel);
  tcase_add_test(tc, test_launch_wrong_arg_count_is_kernel_args);
  tcase_add_test(tc, test_launch_wrong_arg_type_is_kernel_args_naming_argument);
  tcase_add_test(tc, test_launch_extent_past_end_via_n_is_invalid_param);
  tcase_add_test(tc, test_launch_extent_past_end_via_offset_is_invalid_param);
  tcase_add_test(tc, test_launch_offset_overflow_is_invalid_param);
  tcase_add_test(tc, test_launch_blocks_out_of_range_is_invalid_param);
  tcase_add_test(tc, test_launch_host_pointer_is_invalid_param);
  tcase_add_test(tc, test_launch_pointer_on_other_device_is_invalid_param);
  tcase_add_test(tc, test_launch_pointer_into_freed_memory_is_invalid_param);
  tcase_add_test(tc, test_launch_misaligned_float_pointer_is_unaligned);
  tcase_add_test(tc, test_kernel_print_truncated_at_print_limit);
  tcase_add_test(tc, test_print_fn_called_once_with_empty_text_when_kernel_prints_nothing);
  tcase_add_test(tc, test_print_fn_not_called_when_launch_fails);
  tcase_add_test(tc, test_print_fn_called_once_with_empty_text_for_discarded_launch);
  tcase_add_test(tc, test_print_fn_called_once_for_launches_discarded_by_close);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *fault_suite(void) {
  Suite *s = suite_create("faults");
  TCase *tc = tcase("faults");
  tcase_add_test(tc, test_fault_alloc_fails_only_the_nth_malloc);
  tcase_add_test(tc, test_fault_is_per_device);
  tcase_add_test(tc, test_fault_rearm_replaces_previous);
  tcase_add_test(tc, test_fault_inject_bad_kind_or_nth_is_invalid_param);
  tcase_add_test(tc, test_fault_kernel_surfaces_at_next_sync_then_clears);
  tcase_add_test(tc, test_fault_kernel_nth_counts_kernel_runs);
  tcase_add_test(tc, test_fault_kernel_still_calls_print_fn_once);
  tcase_add_test(tc, test_fault_hang_stalls_next_task);
  tcase_add_test(tc, test_fault_hang_interrupted_by_force_destroy);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *sched_suite(void) {
  Suite *s = suite_create("scheduling");
  TCase *tc = tcase_create("slots");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_slots_limit_concurrent_kernels);
  tcase_add_test(tc, test_group_at_its_slot_cap_waits_for_its_own_slots);
  tcase_add_test(tc, test_slots_share_device_time_equally_between_groups_not_streams);
  tcase_add_test(tc, test_slots_share_device_time_by_weight);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *concurrency_suite(void) {
  Suite *s = suite_create("concurrency");
  TCase *tc = tcase("concurrency");
  tcase_add_test(tc, test_concurrent_malloc_free_keeps_exact_accounting);
  tcase_add_test(tc, test_concurrent_streams_on_both_devices_compute_correctly);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(open_suite());
  srunner_add_suite(sr, device_suite());
  srunner_add_suite(sr, memory_suite());
  srunner_add_suite(sr, copy_suite());
  srunner_add_suite(sr, stream_suite());
  srunner_add_suite(sr, callback_suite());
  srunner_add_suite(sr, event_suite());
  srunner_add_suite(sr, kernel_suite());
  srunner_add_suite(sr, fault_suite());
  srunner_add_suite(sr, concurrency_suite());
  srunner_add_suite(sr, sched_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
