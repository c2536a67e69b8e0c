/*
 * tests/integration/test_resume.c — a session outlives its connection
 * (rdev.proto, "Resume"): the connection is cut under pipelined work,
 * copies both ways, a host function and kernel print output; each
 * completes after the library reconnected, byte for byte and exactly
 * once. A break longer than rdevd's window ends the session with
 * RDEV_UNAVAILABLE, and rdevd frees what it held.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

/* Cuts every TCP connection to port on loopback (the session's gRPC
 * connection; the bulk connection has a port of its own). */
static void cut(int port) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "ss -K dst 127.0.0.1 dport = :%d >/dev/null 2>&1", port);
  ck_assert_int_eq(system(cmd), 0);
}

static int port_of(const char *target) { return atoi(strrchr(target, ':') + 1); }

/* x = 1; then for each op i: bit i of the pattern says x += 1, else x *= 2
 * (mod 2^32): a lost, repeated or reordered op changes the result. */
static uint32_t model(uint64_t pattern, int n) {
  uint32_t x = 1;
  for (int i = 0; i < n; i++) x = pattern >> (i % 64) & 1 ? x + 1 : x * 2;
  return x;
}

static void queue_ops(rdev_stream_t *st, uint32_t *d, uint64_t pattern, int from, int to) {
  rdev_arg_t a = fx_ptr(d);
  for (int i = from; i < to; i++) FX_OK(rdev_launch(st, pattern >> (i % 64) & 1 ? "inc_u32" : "double_u32", 1, &a, 1));
}

/* 10,000 pipelined kernel launches with the connection cut three times
 * among them: after the synchronize the counter shows each ran once, in
 * order. */
START_TEST(test_pipelined_ops_survive_cuts) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  uint32_t *d = NULL, one = 1, got = 0;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, (void **)&d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, 4, &one, 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  const uint64_t pattern = 0x9e3779b97f4a7c15ull;
  const int n = 10000;
  for (int part = 0; part < 4; part++) {
    queue_ops(st, d, pattern, part * n / 4, (part + 1) * n / 4);
    if (part < 3) cut(port_of(fx_srv.target));
  }
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_uint_eq(got, model(pattern, n));
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Synchronous copies of 64 MiB each way with a cut in the middle of each
 * (a thread cuts while the copy runs): both complete, byte for byte. */
typedef struct {
  int port, delay_ms;
} cutter_t;

static void *cutter(void *arg) {
  cutter_t *c = arg;
  fx_sleep_ms(c->delay_ms);
  cut(c->port);
  return NULL;
}

/* back holds what h holds: else where they first differ. */
static void check_same(const uint8_t *h, const uint8_t *back, size_t n, const char *what, int delay_ms) {
  size_t i = fx_first_diff(h, back, n);
  ck_assert_msg(i == n, "%s through a cut (after %d ms) differs from byte %zu of %zu (MiB %zu: %d, not %d)", what,
                delay_ms, i, n, i >> 20, i < n ? back[i] : 0, i < n ? h[i] : 0);
}

/* An H2D with a cut (checked by a D2H without), then a D2H with one. */
static void copy_with_cut(rdev_session_t *s, void *d, uint8_t *h, uint8_t *back, size_t n, int delay_ms) {
  cutter_t c = {port_of(fx_srv.target), delay_ms};
  pthread_t t;
  memset(back, 0, n);
  FX_OK(rdev_memcpy(s, d, n, back, n, RDEV_MEMCPY_HOST_TO_DEVICE)); /* zeroes first */
  ck_assert_int_eq(pthread_create(&t, NULL, cutter, &c), 0);
  FX_OK(rdev_memcpy(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  pthread_join(t, NULL);
  FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  check_same(h, back, n, "an H2D", delay_ms);
  memset(back, 0, n);
  ck_assert_int_eq(pthread_create(&t, NULL, cutter, &c), 0);
  FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  pthread_join(t, NULL);
  check_same(h, back, n, "a D2H", delay_ms);
}

START_TEST(test_copies_survive_a_cut) {
  rdev_session_t *s = fx_open();
  const size_t n = (size_t)32 << 20;
  void *d = NULL;
  uint8_t *h = malloc(n), *back = malloc(n);
  ck_assert_ptr_nonnull(h);
  ck_assert_ptr_nonnull(back);
  fx_fill_random(h, n, 7);
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  for (int delay = 0; delay <= 20; delay += 10) copy_with_cut(s, d, h, back, n, delay);
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
  free(h);
  free(back);
}
END_TEST

/* Async D2H copies in-band (64 KiB each: below the bulk connection's
 * size) with a cut among them: each lands once, byte for byte. */
START_TEST(test_async_reads_survive_a_cut) {
  rdev_session_t *s = fx_open();
  const size_t chunk = (size_t)64 << 10, n = 64 * chunk;
  uint8_t *h = fx_xmalloc(n), *back = fx_xmalloc(n);
  void *d = NULL;
  rdev_stream_t *st = NULL;
  fx_fill_random(h, n, 11);
  memset(back, 0, n);
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  for (size_t off = 0; off < n; off += chunk) {
    FX_OK(rdev_memcpy_async(s, back + off, chunk, (char *)d + off, chunk, RDEV_MEMCPY_DEVICE_TO_HOST, st));
    if (off == n / 2) cut(port_of(fx_srv.target));
  }
  FX_OK(rdev_stream_synchronize(st));
  check_same(h, back, n, "async D2H", 0);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  free(h);
  free(back);
}
END_TEST

/* A blocking host function holds its stream while the connection is cut
 * twice: it runs once, and the kernel queued behind it runs once, after it. */
typedef struct {
  pthread_mutex_t mu;
  int runs;
  int release;
} hold_t;

static void hold_fn(rdev_host_call_t *call, void *user, int status) {
  hold_t *h = user;
  pthread_mutex_lock(&h->mu);
  h->runs += status == RDEV_OK;
  pthread_mutex_unlock(&h->mu);
  for (;;) {
    pthread_mutex_lock(&h->mu);
    int go = h->release;
    pthread_mutex_unlock(&h->mu);
    if (go) break;
    fx_sleep_ms(2);
  }
  rdev_host_call_done(call);
}

static int hold_runs(hold_t *h) {
  pthread_mutex_lock(&h->mu);
  int r = h->runs;
  pthread_mutex_unlock(&h->mu);
  return r;
}

START_TEST(test_host_function_survives_a_cut) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  uint32_t *d = NULL, zero = 0, got = 7;
  hold_t h = {.mu = PTHREAD_MUTEX_INITIALIZER};
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, (void **)&d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, 4, &zero, 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_launch_host_func(st, 1, hold_fn, &h));
  rdev_arg_t a = fx_ptr(d);
  FX_OK(rdev_launch(st, "inc_u32", 1, &a, 1));
  double end = fx_now() + 10;
  while (hold_runs(&h) == 0 && fx_now() < end) fx_sleep_ms(2);
  ck_assert_int_eq(hold_runs(&h), 1);
  cut(port_of(fx_srv.target));
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST)); /* resumed; the stream still held */
  ck_assert_uint_eq(got, 0);
  cut(port_of(fx_srv.target));
  pthread_mutex_lock(&h.mu);
  h.release = 1;
  pthread_mutex_unlock(&h.mu);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_uint_eq(got, 1);
  ck_assert_int_eq(hold_runs(&h), 1);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Kernel print output of launches on both sides of a cut arrives once
 * each. */
START_TEST(test_kernel_print_survives_a_cut) {
  rdev_session_t *s = fx_open();
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  for (int i = 0; i < 20; i++) {
    FX_OK(rdev_launch(st, "hello", 2, NULL, 0));
    if (i % 5 == 4) {
      FX_OK(rdev_stream_synchronize(st));
      cut(port_of(fx_srv.target));
    }
  }
  FX_OK(rdev_stream_synchronize(st));
  char text[sizeof cap.text];
  fx_capture_get(&cap, text, sizeof text);
  int lines = 0;
  for (const char *p = text; (p = strstr(p, "Hello World")); p++) lines++;
  int want = fx_on_acl() ? 0 : 40; /* acl: the print is on rdevd's stdout */
  ck_assert_msg(lines == want, "%d lines of kernel print output, want %d (20 launches of 2 blocks)", lines, want);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* A break longer than rdevd's window (3 s here): the session ends with
 * RDEV_UNAVAILABLE, and rdevd gives its memory back. */
START_TEST(test_break_past_the_window_ends_the_session) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--resume-ms", "500", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  void *d = NULL;
  size_t fr0, fr, total;
  FX_OK(rdev_mem_info(s, &fr0, &total));
  FX_OK(rdev_malloc(s, &d, (size_t)16 << 20, RDEV_MEM_MALLOC_HUGE_FIRST));
  ck_assert_int_eq(fx_server_freeze(&srv, 10), 0); /* nothing answers: the break lasts */
  cut(port_of(srv.target));
  double t0 = fx_now();
  fx_sleep_ms(1500);
  ck_assert_int_eq(kill(srv.pid, SIGCONT), 0);
  FX_EXPECT(rdev_mem_info(s, &fr, &total), RDEV_UNAVAILABLE);
  ck_assert_msg(fx_now() - t0 < 10, "the session took %.1f s to end", fx_now() - t0);
  rdev_session_close(s);
  rdev_session_t *s2 = fx_open_target(srv.target);
  ck_assert_uint_eq(fx_wait_free(s2, fr0, 5), fr0);
  rdev_session_close(s2);
  fx_server_stop(&srv);
}
END_TEST

Suite *suite_resume(void) {
  Suite *su = suite_create("resume");
  TCase *tc = fx_tcase("resume");
  tcase_add_test(tc, test_pipelined_ops_survive_cuts);
  tcase_add_test(tc, test_copies_survive_a_cut);
  tcase_add_test(tc, test_async_reads_survive_a_cut);
  tcase_add_test(tc, test_host_function_survives_a_cut);
  tcase_add_test(tc, test_kernel_print_survives_a_cut);
  tcase_add_test(tc, test_break_past_the_window_ends_the_session);
  suite_add_tcase(su, tc);
  return su;
}
