/*
 * tests/unit/rt_helpers.h — what the runtime's unit tests (test_runtime_*.c)
 * share: opening small runtimes, memory and stream/event shorthands, a
 * deterministic random source, kernel argument builders, a host-callback
 * log and a kernel-print capture. Static inline only: each test program
 * includes it and links nothing more than rdev_runtime and Check.
 *
 * Every test opens its own runtime (small arenas unless the defaults are
 * what is checked) and closes it, so sanitizer builds see each test's
 * resources released. Timing bounds are generous: the sim's delays sleep.
 */
#ifndef RDEV_TESTS_RT_HELPERS_H
#define RDEV_TESTS_RT_HELPERS_H

#include <check.h>
#include <math.h>
#include <stdarg.h>
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

/* ---- the backend under test ----------------------------------------------- */

/* Each program runs once per backend (tests/unit/CMakeLists.txt): the sim,
 * and acl over the ACL test double, named by $RDEV_TEST_BACKEND,
 * $RDEV_TEST_ACL_LIB and $RDEV_TEST_ACL_KERNELS. A test of what one backend
 * alone promises (the sim's host view, its address ranges, kernel print
 * capture) checks on_acl(). */
static inline const char *test_backend(void) {
  const char *b = getenv("RDEV_TEST_BACKEND");
  return b && *b ? b : "sim";
}

static inline int on_acl(void) { return strcmp(test_backend(), "acl") == 0; }

/* What a launch's print_fn receives for kernel output sim_text: the sim
 * captures it per launch; on acl the kernel prints on the device, and CANN
 * shows it on the host process's stdout, never per launch, so print_fn gets
 * "" (docs/acl-backend.md). */
static inline const char *printed(const char *sim_text) { return on_acl() ? "" : sim_text; }

/* rdev_rt_open on the backend under test, unless cfg names one. */
static inline int test_rt_open(rdev_rt_config_t *cfg, rdev_rt_t **rt) {
  if (!cfg->backend) {
    cfg->backend = test_backend();
    cfg->acl_lib = getenv("RDEV_TEST_ACL_LIB");
    cfg->acl_kernels = getenv("RDEV_TEST_ACL_KERNELS");
  }
  return rdev_rt_open(cfg, rt);
}

/* ---- helpers ------------------------------------------------------------- */

static inline rdev_rt_t *open_rt(int ndev, size_t mem) {
  rdev_rt_config_t cfg = {.sim_devices = ndev, .sim_mem_bytes = mem};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  ck_assert_ptr_nonnull(rt);
  return rt;
}

static inline rdev_rt_t *open_small(void) { return open_rt(2, 16 * MIB); }

static inline double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static inline void sleep_ms(int ms) {
  struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {}
}

static inline size_t free_of(rdev_rt_t *rt, int dev) {
  size_t f = 0, t = 0;
  ck_assert_int_eq(rdev_rt_mem_info(rt, dev, &f, &t), RDEV_OK);
  return f;
}

static inline size_t total_of(rdev_rt_t *rt, int dev) {
  size_t f = 0, t = 0;
  ck_assert_int_eq(rdev_rt_mem_info(rt, dev, &f, &t), RDEV_OK);
  return t;
}

static inline void *dmalloc(rdev_rt_t *rt, int dev, size_t size) {
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, dev, &p, size, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_OK);
  ck_assert_ptr_nonnull(p);
  return p;
}

static inline rdev_rt_stream_t *mkstream(rdev_rt_t *rt, int dev) {
  rdev_rt_stream_t *s = NULL;
  ck_assert_int_eq(rdev_rt_stream_create(rt, dev, &s), RDEV_OK);
  ck_assert_ptr_nonnull(s);
  return s;
}

static inline rdev_rt_event_t *mkevent(rdev_rt_t *rt, int dev) {
  rdev_rt_event_t *e = NULL;
  ck_assert_int_eq(rdev_rt_event_create(rt, dev, &e), RDEV_OK);
  ck_assert_ptr_nonnull(e);
  return e;
}

/* xorshift64: fixed seed, so each test (a forked child) sees the same data. */
static inline uint64_t rng_next(void) {
  static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static inline void fill_random(void *p, size_t n) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = (unsigned char)(rng_next() >> 56);
}

/* A float in [-8, 8) with few enough mantissa bits to be interesting but finite. */
static inline float rand_float(void) { return (float)((double)(rng_next() >> 11) / 9007199254740992.0 * 16.0 - 8.0); }

static inline rdev_kernel_arg_t a_ptr(void *base, uint64_t off) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_PTR;
  a.v.ptr.base = base;
  a.v.ptr.offset = off;
  return a;
}

static inline rdev_kernel_arg_t a_u32(uint32_t v) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_U32;
  a.v.u32 = v;
  return a;
}

static inline rdev_kernel_arg_t a_i32(int32_t v) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_I32;
  a.v.i32 = v;
  return a;
}

static inline rdev_kernel_arg_t a_f32(float v) {
  rdev_kernel_arg_t a;
  memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_F32;
  a.v.f32 = v;
  return a;
}

static inline int launch_delay(rdev_rt_stream_t *s, uint32_t us) {
  rdev_kernel_arg_t a = a_u32(us);
  return rdev_rt_launch(s, "delay_us", 1, &a, 1, NULL, NULL);
}

static inline int launch_write(rdev_rt_stream_t *s, void *out, uint32_t blocks, int32_t value, rdev_rt_print_fn fn,
                               void *user) {
  rdev_kernel_arg_t a[2] = {a_ptr(out, 0), a_i32(value)};
  return rdev_rt_launch(s, "write_i32", blocks, a, 2, fn, user);
}

static inline int launch_square(rdev_rt_stream_t *s, uint32_t blocks, void *in, uint64_t in_off, void *out,
                                uint64_t out_off, uint32_t n) {
  rdev_kernel_arg_t a[3] = {a_ptr(in, in_off), a_ptr(out, out_off), a_u32(n)};
  return rdev_rt_launch(s, "square_f32", blocks, a, 3, NULL, NULL);
}

static inline void h2d(rdev_rt_t *rt, void *d, const void *h, size_t n) {
  ck_assert_int_eq(rdev_rt_memcpy(rt, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
}

static inline void d2h(rdev_rt_t *rt, void *h, const void *d, size_t n) {
  ck_assert_int_eq(rdev_rt_memcpy(rt, h, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
}

static inline int last_error_has(const char *needle) { return strstr(rdev_rt_last_error(), needle) != NULL; }

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
  int sleep_ms;    /* sleep inside the callback before logging */
  int *host_cell;  /* optional: value to read / write */
  int write_value; /* write this into host_cell when nonzero */
  int seen_value;  /* what host_cell held when the callback ran */
} cbarg_t;

static inline cblog_t *cblog_new(void) {
  cblog_t *l = calloc(1, sizeof *l);
  ck_assert_ptr_nonnull(l);
  pthread_mutex_init(&l->mu, NULL);
  return l;
}

static inline void cblog_free(cblog_t *l) {
  pthread_mutex_destroy(&l->mu);
  free(l);
}

static inline int cblog_count(cblog_t *l) {
  pthread_mutex_lock(&l->mu);
  int n = l->n;
  pthread_mutex_unlock(&l->mu);
  return n;
}

static inline void cb_log(void *user, int status) {
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

static inline void printcap_init(printcap_t *p) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
}

static inline void printcap_fini(printcap_t *p) {
  free(p->text);
  pthread_mutex_destroy(&p->mu);
}

static inline void print_capture(void *user, const char *text, size_t len) {
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

/* A test case with the runtime tests' timeout (the sim's delays sleep). */
static inline TCase *tcase(const char *name) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 120);
  return tc;
}

/* Runs the given suites (CK_RUN_SUITE selects one by name); the exit status. */
static inline int rt_run_suites(Suite *first, ...) {
  SRunner *sr = srunner_create(first);
  va_list ap;
  va_start(ap, first);
  for (Suite *s; (s = va_arg(ap, Suite *)) != NULL;) srunner_add_suite(sr, s);
  va_end(ap);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
