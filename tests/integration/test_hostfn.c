/*
 * tests/integration/test_hostfn.c — host functions on a real rdevd
 * (rdev_launch_host_func): they run on the client in stream order, a
 * blocking one holds its stream (and only it: no execution slot) until
 * rdev_host_call_done, and every call runs exactly once, with an error
 * when the stream will never reach it. Suite "hostfn".
 */
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "fixture.h"

/* What a host function saw: the first byte of the device buffer. */
typedef struct {
  rdev_session_t *s;
  void *dev;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int started, ran, status, release; /* release: a blocked function may return */
  uint8_t first, again;              /* at its start, and after waiting */
  int wait_ms;                       /* block this long (or until release, when < 0) */
  double t_done;                     /* when it called rdev_host_call_done */
} probe_t;

static void probe_init(probe_t *p, rdev_session_t *s, void *dev, int wait_ms) {
  memset(p, 0, sizeof *p);
  p->s = s;
  p->dev = dev;
  p->wait_ms = wait_ms;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
}

static void probe_fn(rdev_host_call_t *call, void *user, int status) {
  probe_t *p = user;
  uint8_t b = 0;
  if (status == RDEV_OK && p->dev) rdev_memcpy(p->s, &b, 1, p->dev, 1, RDEV_MEMCPY_DEVICE_TO_HOST);
  pthread_mutex_lock(&p->mu);
  p->started = 1;
  p->first = b;
  p->status = status;
  if (p->wait_ms > 0) {
    pthread_mutex_unlock(&p->mu);
    fx_sleep_ms(p->wait_ms);
    pthread_mutex_lock(&p->mu);
  } else if (p->wait_ms < 0) {
    while (!p->release) pthread_cond_wait(&p->cv, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  if (status == RDEV_OK && p->dev) rdev_memcpy(p->s, &b, 1, p->dev, 1, RDEV_MEMCPY_DEVICE_TO_HOST);
  pthread_mutex_lock(&p->mu);
  p->again = b;
  p->t_done = fx_now();
  pthread_mutex_unlock(&p->mu);
  rdev_host_call_done(call);
  pthread_mutex_lock(&p->mu);
  p->ran++;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static int probe_ran(probe_t *p) {
  pthread_mutex_lock(&p->mu);
  int r = p->ran;
  pthread_mutex_unlock(&p->mu);
  return r;
}

/* Waits up to timeout_s for the function to have returned. */
static int probe_wait_ran(probe_t *p, double timeout_s) {
  double end = fx_now() + timeout_s;
  while (probe_ran(p) == 0 && fx_now() < end) fx_sleep_ms(2);
  return probe_ran(p);
}

static void probe_release(probe_t *p) {
  pthread_mutex_lock(&p->mu);
  p->release = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static void probe_wait_started(probe_t *p, double timeout_s) {
  double end = fx_now() + timeout_s;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int started = p->started;
    pthread_mutex_unlock(&p->mu);
    if (started) return;
    ck_assert_msg(fx_now() < end, "host function did not start");
    fx_sleep_ms(5);
  }
}

/* A blocking host function sees the work queued before it done and the
 * work queued after it not started, for as long as it runs; a non-blocking
 * one after it sees that later work. */
START_TEST(test_host_funcs_run_in_stream_order_and_block_their_stream) {
  rdev_session_t *s = fx_open();
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  probe_t a, b;
  probe_init(&a, s, d, 300);
  probe_init(&b, s, d, 0);
  FX_OK(rdev_memset_async(s, d, 4096, 0x11, 4096, st));
  FX_OK(rdev_launch_host_func(st, 1, probe_fn, &a));
  FX_OK(rdev_memset_async(s, d, 4096, 0x22, 4096, st));
  FX_OK(rdev_launch_host_func(st, 0, probe_fn, &b));
  FX_OK(rdev_stream_synchronize(st));
  /* a blocked the stream: it was done before the synchronize answered; b
   * did not block it, and may still be running */
  ck_assert(a.t_done > 0);
  ck_assert_int_eq(probe_wait_ran(&a, 10), 1);
  ck_assert_int_eq(probe_wait_ran(&b, 10), 1);
  ck_assert_int_eq(a.status, RDEV_OK);
  ck_assert_int_eq(a.first, 0x11);
  ck_assert_int_eq(a.again, 0x11); /* 300 ms later: the stream still waited */
  ck_assert_int_eq(b.first, 0x22);
  ck_assert(b.t_done >= a.t_done);
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

/* On a device with one execution slot, a stream held by a blocking host
 * function holds no slot: another stream's work runs and completes. */
START_TEST(test_blocked_stream_holds_no_slot) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--sim-slots", "1", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *held = NULL, *other = NULL;
  FX_OK(rdev_stream_create(s, &held));
  FX_OK(rdev_stream_create(s, &other));
  probe_t p;
  probe_init(&p, s, NULL, -1);
  FX_OK(rdev_launch_host_func(held, 1, probe_fn, &p));
  FX_OK(rdev_memset_async(s, d, 4096, 0x33, 4096, held));
  rdev_arg_t args[2] = {fx_ptr(d), fx_i32(0x01020304)};
  FX_OK(rdev_launch(other, "write_i32", 1, args, 2));
  FX_OK(rdev_stream_synchronize(other));
  int32_t v = 0;
  FX_OK(rdev_memcpy(s, &v, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(v, 0x01020304); /* ran; and held's memset has not */
  int done = 1;
  FX_OK(rdev_stream_query(held, &done));
  ck_assert_int_eq(done, 0);
  probe_wait_started(&p, 10);
  probe_release(&p);
  FX_OK(rdev_stream_synchronize(held));
  uint8_t b = 0;
  FX_OK(rdev_memcpy(s, &b, 1, d, 1, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(b, 0x33);
  ck_assert_int_eq(probe_wait_ran(&p, 10), 1);
  FX_OK(rdev_stream_destroy(held));
  FX_OK(rdev_stream_destroy(other));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
  fx_server_stop(&srv);
}
END_TEST

/* Many blocking host functions queued back to back, with work between
 * them: each runs once, in order, and the stream drains. */
typedef struct {
  pthread_mutex_t mu;
  int next, bad;
} order_t;
typedef struct {
  order_t *o;
  int index;
} order_arg_t;

static void order_fn(rdev_host_call_t *call, void *user, int status) {
  order_arg_t *a = user;
  pthread_mutex_lock(&a->o->mu);
  if (status != RDEV_OK || a->index != a->o->next) a->o->bad++;
  a->o->next++;
  pthread_mutex_unlock(&a->o->mu);
  rdev_host_call_done(call);
}

START_TEST(test_many_blocking_host_funcs_run_once_in_order) {
  rdev_session_t *s = fx_open();
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  enum { N = 600 }; /* past the server's half stream depth: its backpressure must not wait on them */
  static order_arg_t args[N];
  order_t o = {.next = 0, .bad = 0};
  pthread_mutex_init(&o.mu, NULL);
  for (int i = 0; i < N; i++) {
    args[i] = (order_arg_t){&o, i};
    FX_OK(rdev_memset_async(s, d, 64, i & 0xff, 64, st));
    FX_OK(rdev_launch_host_func(st, i % 2, order_fn, &args[i]));
  }
  FX_OK(rdev_stream_synchronize(st));
  double end = fx_now() + 10; /* the last one does not block: it may still be running */
  for (;;) {
    pthread_mutex_lock(&o.mu);
    int next = o.next;
    pthread_mutex_unlock(&o.mu);
    if (next == N || fx_now() > end) break;
    fx_sleep_ms(2);
  }
  ck_assert_int_eq(o.next, N);
  ck_assert_int_eq(o.bad, 0);
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

/* When the server goes away while a host function holds its stream, the
 * functions queued behind it still run exactly once, with an error. */
START_TEST(test_host_funcs_never_reached_run_with_an_error) {
  fx_server_t srv;
  char err[512];
  ck_assert_msg(fx_server_start(&srv, NULL, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  probe_t first, behind;
  probe_init(&first, s, NULL, -1);
  probe_init(&behind, s, NULL, 0);
  FX_OK(rdev_launch_host_func(st, 1, probe_fn, &first));
  FX_OK(rdev_launch_host_func(st, 1, probe_fn, &behind));
  probe_wait_started(&first, 10);
  ck_assert_int_eq(first.status, RDEV_OK);
  fx_sleep_ms(50);
  ck_assert_int_eq(probe_ran(&behind), 0);
  ck_assert_int_eq(fx_server_signal_wait(&srv, SIGKILL, 10) >= 0, 1);
  probe_release(&first); /* its done finds no server: fine */
  double end = fx_now() + 20;
  while (probe_ran(&behind) == 0 && fx_now() < end) fx_sleep_ms(10);
  ck_assert_int_eq(probe_ran(&first), 1);
  ck_assert_int_eq(probe_ran(&behind), 1);
  ck_assert_int_eq(behind.status, RDEV_UNAVAILABLE);
  rdev_session_close(s);
}
END_TEST

/* Bad arguments are refused at once. */
START_TEST(test_launch_host_func_bad_arguments) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_EXPECT(rdev_launch_host_func(NULL, 1, probe_fn, NULL), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_launch_host_func(st, 1, NULL, NULL), RDEV_INVALID_PARAM);
  rdev_host_call_done(NULL);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

Suite *suite_hostfn(void) {
  Suite *su = suite_create("hostfn");
  TCase *tc = fx_tcase("hostfn");
  tcase_add_test(tc, test_host_funcs_run_in_stream_order_and_block_their_stream);
  tcase_add_test(tc, test_blocked_stream_holds_no_slot);
  tcase_add_test(tc, test_many_blocking_host_funcs_run_once_in_order);
  tcase_add_test(tc, test_host_funcs_never_reached_run_with_an_error);
  tcase_add_test(tc, test_launch_host_func_bad_arguments);
  suite_add_tcase(su, tc);
  return su;
}
