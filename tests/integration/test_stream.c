/*
 * tests/integration/test_stream.c — streams, kernel launches and events
 * through a real rdevd: every built-in kernel with its result checked on the
 * host, launch refusals surfacing at the next synchronize (the stream usable
 * after), synchronize timeouts, queries, event timing and cross-stream
 * ordering. Timing asserts are lower bounds (a delay cannot finish early) or
 * wide upper bounds: the machine is noisy.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

/* Writes value with write_i32 (1 block) into dev and reads it back through
 * the stream: the stream works. */
static void check_stream_usable(rdev_session_t *s, rdev_stream_t *st, int32_t value) {
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_arg_t a[2] = {fx_ptr(d), fx_i32(value)};
  int32_t got = 0;
  FX_OK(rdev_launch(st, "write_i32", 1, a, 2));
  FX_OK(rdev_memcpy_async(s, &got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_int_eq(got, value);
  FX_OK(rdev_free(s, d));
}

static float small_int_float(uint32_t r) { return (float)((int)(r % 2001) - 1000); }

/* ---- streams ---------------------------------------------------------------------- */

START_TEST(test_stream_create_destroy) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st[16];
  for (int i = 0; i < 16; i++) {
    st[i] = NULL;
    FX_OK(rdev_stream_create(s, &st[i]));
    ck_assert_ptr_nonnull(st[i]);
  }
  for (int i = 0; i < 16; i++) FX_OK(rdev_stream_synchronize(st[i]));
  for (int i = 0; i < 16; i++) FX_OK(rdev_stream_destroy(st[i]));
  FX_EXPECT(rdev_stream_destroy(NULL), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_stream_create(s, NULL), RDEV_INVALID_PARAM);
  /* streams on device 1 */
  FX_OK(rdev_device_set(s, 1));
  rdev_stream_t *s1 = NULL;
  FX_OK(rdev_stream_create(s, &s1));
  check_stream_usable(s, s1, 31);
  FX_OK(rdev_stream_destroy(s1));
  rdev_session_close(s);
}
END_TEST

/* aclrtDestroyStream waits for the work queued on it. */
START_TEST(test_stream_destroy_runs_queued_work) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, d, 64, 0, 64));
  rdev_arg_t delay = fx_u32(200000);
  rdev_arg_t w[2] = {fx_ptr(d), fx_i32(0x5eed)};
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_launch(st, "write_i32", 1, w, 2));
  FX_OK(rdev_stream_destroy(st));
  int32_t got = 0;
  FX_OK(rdev_memcpy(s, &got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(got, 0x5eed);
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_stream_query) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  int done = -1;
  FX_OK(rdev_stream_query(st, &done));
  ck_assert_int_eq(done, 1);
  rdev_arg_t delay = fx_u32(1000000); /* 1 s: the query runs well within it */
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_stream_query(st, &done));
  ck_assert_int_eq(done, 0);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_query(st, &done));
  ck_assert_int_eq(done, 1);
  FX_EXPECT(rdev_stream_query(st, NULL), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Once synchronize returned, the stream is idle: a query says done, every
 * time (aclrtSynchronizeStream then aclrtStreamQuery). */
START_TEST(test_stream_query_done_after_synchronize) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  int busy = 0;
  for (int i = 0; i < 300; i++) {
    FX_OK(rdev_memset_async(s, d, 64, i, 64, st));
    FX_OK(rdev_stream_synchronize(st));
    int done = -1;
    FX_OK(rdev_stream_query(st, &done));
    if (!done) busy++;
  }
  ck_assert_msg(busy == 0, "stream query said busy right after a synchronize %d times of 300", busy);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_stream_synchronize_timeout) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_stream_synchronize_timeout(st, 5000)); /* idle: OK (50 ms could pass in the round trip under TSan) */
  rdev_arg_t delay = fx_u32(300000);
  double t0 = fx_now();
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_EXPECT(rdev_stream_synchronize_timeout(st, 50), RDEV_RT_STREAM_SYNC_TIMEOUT);
  double t1 = fx_now();
  ck_assert_msg(t1 - t0 >= 0.045, "timed out after %.3f s, before 50 ms", t1 - t0);
  FX_OK(rdev_stream_synchronize(st)); /* the work stayed queued; a later sync is fine */
  double t2 = fx_now();
  ck_assert_msg(t2 - t0 >= 0.29, "a 300 ms delay synchronized after %.3f s", t2 - t0);
  ck_assert_msg(t2 - t0 < 20, "synchronize took %.3f s", t2 - t0);
  /* again, with the later sync bounded too */
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_EXPECT(rdev_stream_synchronize_timeout(st, 0), RDEV_RT_STREAM_SYNC_TIMEOUT);
  FX_OK(rdev_stream_synchronize_timeout(st, 20000));
  check_stream_usable(s, st, 7);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* An error of work queued before a timed-out synchronize is not lost: the
 * next synchronize reports it. */
/* Another thread's synchronous calls, back to back on the same session. */
typedef struct {
  rdev_session_t *s;
  atomic_int stop;
  int calls, rc;
} busy_t;

static void *busy_main(void *arg) {
  busy_t *b = arg;
  size_t fr, total;
  while (!atomic_load(&b->stop) && !b->rc) {
    b->rc = rdev_mem_info(b->s, &fr, &total);
    b->calls++;
  }
  return NULL;
}

/* A timed synchronize keeps its deadline while it polls the session and
 * other threads' replies keep coming in. */
START_TEST(test_synchronize_timeout_holds_while_others_call) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_arg_t delay = fx_u32(3000000);
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  busy_t b = {.s = s};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, busy_main, &b), 0);
  usleep(20000);
  double t0 = fx_now();
  FX_EXPECT(rdev_stream_synchronize_timeout(st, 50), RDEV_RT_STREAM_SYNC_TIMEOUT);
  double took = fx_now() - t0;
  atomic_store(&b.stop, 1);
  pthread_join(th, NULL);
  ck_assert_msg(b.rc == RDEV_OK, "the other thread's call failed: %d", b.rc);
  ck_assert_msg(b.calls > 0, "the other thread made no call");
  ck_assert_msg(took >= 0.045 && took < 1.0, "a 50 ms timeout took %.3f s (the kernel runs 3 s)", took);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_stream_synchronize_timeout_keeps_errors_pending) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_arg_t delay = fx_u32(300000);
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_launch(st, "no_such_kernel", 1, NULL, 0));
  FX_EXPECT(rdev_stream_synchronize_timeout(st, 20), RDEV_RT_STREAM_SYNC_TIMEOUT);
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Work on one stream runs in order: each D2H sees the write before it. */
START_TEST(test_stream_runs_in_order) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 16 * sizeof(int32_t), RDEV_MEM_MALLOC_HUGE_FIRST));
  int32_t got[20][16];
  memset(got, 0, sizeof got);
  for (int i = 0; i < 20; i++) {
    rdev_arg_t a[2] = {fx_ptr(d), fx_i32(1000 + i)};
    FX_OK(rdev_launch(st, "write_i32", 16, a, 2));
    FX_OK(rdev_memcpy_async(s, got[i], sizeof got[i], d, sizeof got[i], RDEV_MEMCPY_DEVICE_TO_HOST, st));
  }
  FX_OK(rdev_stream_synchronize(st));
  for (int i = 0; i < 20; i++)
    for (int b = 0; b < 16; b++) ck_assert_int_eq(got[i][b], 1000 + i);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* An async D2H copy is complete before its stream, or a stream waiting for
 * an event recorded after it, moves on: work queued behind it cannot change
 * what it copies, however many chunks it takes. */
START_TEST(test_async_d2h_is_complete_before_the_stream_moves_on) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *a = NULL, *b = NULL;
  rdev_event_t *ev = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  FX_OK(rdev_event_create(s, &ev));
  const size_t n = 8 * FX_MiB;
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(n), *back2 = fx_xmalloc(n), *want = fx_xmalloc(n);
  for (int round = 0; round < 4; round++) {
    fx_fill_random(src, n, 1300 + (uint64_t)round);
    memset(back, 0, n);
    memset(back2, 0, n);
    FX_OK(rdev_memcpy(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
    FX_OK(rdev_memcpy_async(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, a));
    FX_OK(rdev_memset_async(s, d, n, 0xa5, n / 2, a)); /* the same stream, right behind */
    FX_OK(rdev_memcpy_async(s, back2, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, a));
    FX_OK(rdev_event_record(ev, a));
    FX_OK(rdev_stream_wait_event(b, ev));
    FX_OK(rdev_memset_async(s, d, n, 0x5a, n, b)); /* another stream, after the event */
    FX_OK(rdev_stream_synchronize(b));
    FX_OK(rdev_stream_synchronize(a));
    FX_ASSERT_BYTES(back, src, n, "round %d: D2H before the memset", round);
    memset(want, 0xa5, n / 2);
    memcpy(want + n / 2, src + n / 2, n - n / 2);
    FX_ASSERT_BYTES(back2, want, n, "round %d: D2H between the memsets", round);
  }
  FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  memset(want, 0x5a, n);
  FX_ASSERT_BYTES(back, want, n, "the last memset");
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_event_destroy(ev));
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
  free(src);
  free(back);
  free(back2);
  free(want);
  rdev_session_close(s);
}
END_TEST

/* Different streams run concurrently: a short job on B finishes while A is
 * still in a long delay. */
START_TEST(test_streams_run_concurrently) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *a = NULL, *b = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  rdev_arg_t delay = fx_u32(3000000);
  FX_OK(rdev_launch(a, "delay_us", 1, &delay, 1));
  check_stream_usable(s, b, 99);
  int done = -1;
  FX_OK(rdev_stream_query(a, &done));
  ck_assert_int_eq(done, 0);
  FX_OK(rdev_stream_synchronize(a));
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
  rdev_session_close(s);
}
END_TEST

/* ---- kernels --------------------------------------------------------------------- */

START_TEST(test_launch_write_i32_prints) {
  rdev_session_t *s = fx_open();
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 8 * sizeof(int32_t), RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, d, 8 * sizeof(int32_t), 0xFF, 8 * sizeof(int32_t)));
  rdev_arg_t a[2] = {fx_ptr(d), fx_i32(77)};
  FX_OK(rdev_launch(st, "write_i32", 3, a, 2));
  int32_t got[8];
  memset(got, 0, sizeof got);
  FX_OK(rdev_memcpy_async(s, got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  for (int i = 0; i < 3; i++) ck_assert_int_eq(got[i], 77);
  for (int i = 3; i < 8; i++) ck_assert_int_eq(got[i], -1); /* blocks 0..2 only */
  char text[sizeof cap.text];
  fx_capture_get(&cap, text, sizeof text);
  ck_assert_str_eq(text, fx_printed("Source data: 77\nSource data: 77\nSource data: 77\n"));
  /* a negative value, one block, at an interior pointer */
  rdev_arg_t b[2] = {fx_ptr((int32_t *)d + 5), fx_i32(-123456)};
  FX_OK(rdev_launch(st, "write_i32", 1, b, 2));
  FX_OK(rdev_memcpy_async(s, got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_int_eq(got[5], -123456);
  ck_assert_int_eq(got[4], -1);
  ck_assert_int_eq(got[6], -1);
  fx_capture_get(&cap, text, sizeof text);
  ck_assert_str_eq(text, fx_printed("Source data: 77\nSource data: 77\nSource data: 77\nSource data: -123456\n"));
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* A launch then a synchronize, again and again (a notebook's loop): rdevd
 * runs a launch its stream ran lately on the thread that synchronizes
 * instead of waking the stream's worker (rdev_rt_stream_run_quick). Each
 * launch runs once and in order, its print arrives with its own
 * synchronize, a refused launch in between fails its own synchronize and
 * nothing after it, and a launch queued behind a long one still waits
 * its turn. */
START_TEST(test_repeated_launch_and_synchronize) {
  rdev_session_t *s = fx_open();
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  int32_t *d = NULL;
  FX_OK(rdev_malloc(s, (void **)&d, 2 * sizeof(int32_t), RDEV_MEM_MALLOC_HUGE_FIRST));
  static char want[8192], text[sizeof cap.text];
  size_t wlen = 0;
  want[0] = 0;
  for (int i = 0; i < 120; i++) {
    int32_t v = 64 + i % 64; /* one magnitude: the same launch to rdevd's timing */
    rdev_arg_t a[2] = {fx_ptr(d + i % 2), fx_i32(v)};
    FX_OK(rdev_launch(st, "write_i32", 1, a, 2));
    if (i % 30 == 29) { /* 16 bytes into 8: refused when it runs */
      rdev_arg_t over[2] = {fx_ptr(d), fx_i32(v)};
      FX_OK(rdev_launch(st, "write_i32", 4, over, 2));
      FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
    } else {
      FX_OK(rdev_stream_synchronize(st));
    }
    wlen += (size_t)snprintf(want + wlen, sizeof want - wlen, "Source data: %d\n", (int)v);
    fx_capture_get(&cap, text, sizeof text);
    ck_assert_msg(strcmp(text, fx_printed(want)) == 0, "launch %d: printed %zu bytes, want %zu", i, strlen(text),
                  strlen(fx_printed(want)));
    if (i % 10 == 9) {
      int32_t got[2] = {0, 0};
      FX_OK(rdev_memcpy(s, got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
      ck_assert_int_eq(got[i % 2], v);
      ck_assert_int_eq(got[(i + 1) % 2], 64 + (i - 1) % 64);
    }
  }
  /* behind a 100 ms delay, the same launch waits for it */
  rdev_arg_t delay[1] = {fx_u32(100000)};
  rdev_arg_t a[2] = {fx_ptr(d), fx_i32(100)};
  FX_OK(rdev_launch(st, "delay_us", 1, delay, 1));
  FX_OK(rdev_launch(st, "write_i32", 1, a, 2));
  double t0 = fx_now();
  FX_OK(rdev_stream_synchronize(st));
  double took = fx_now() - t0;
  ck_assert_msg(took >= 0.095, "the synchronize took %.1f ms, under the delay", took * 1e3);
  int32_t got = 0;
  FX_OK(rdev_memcpy(s, &got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(got, 100);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Set by a host function: the stream got past what was queued before it. */
static void flag_done(rdev_host_call_t *call, void *user, int status) {
  (void)status;
  __atomic_store_n((int *)user, 1, __ATOMIC_RELEASE);
  rdev_host_call_done(call);
}

/* Async work moves on while the caller makes no call. A synchronous call
 * first (the receiver thread then stands back, betting the caller comes
 * back and polls for itself), then queued H2D chunks, a kernel and D2H
 * reads: the first read's reply brings the kernel's output, and it must
 * arrive with no further call. On acl, whose kernel print stays on the
 * server, a host function queued after them must run with no further call. */
START_TEST(test_async_work_progresses_without_a_caller) {
  rdev_session_t *s = fx_open();
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const size_t n = 8 * FX_MiB;
  uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(src, n, 4242);
  memset(back, 0, n);
  void *d = NULL, *out = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &out, sizeof(int32_t), RDEV_MEM_MALLOC_HUGE_FIRST));
  size_t fr, total;
  FX_OK(rdev_mem_info(s, &fr, &total));
  FX_OK(rdev_memcpy_async(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  rdev_arg_t a[2] = {fx_ptr(out), fx_i32(4242)};
  FX_OK(rdev_launch(st, "write_i32", 1, a, 2));
  FX_OK(rdev_memcpy_async(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  int ran = 0;
  if (fx_on_acl()) FX_OK(rdev_launch_host_func(st, 0, flag_done, &ran));
  char text[64] = "";
  for (int i = 0; i < 3000 && !text[0] && !__atomic_load_n(&ran, __ATOMIC_ACQUIRE); i++) { /* 30 s: a hang guard */
    usleep(10000);
    fx_capture_get(&cap, text, sizeof text);
  }
  ck_assert_str_eq(text, fx_printed("Source data: 4242\n"));
  if (fx_on_acl()) ck_assert_int_eq(__atomic_load_n(&ran, __ATOMIC_ACQUIRE), 1);
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(back, src, n, "D2H after H2D");
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_free(s, out));
  FX_OK(rdev_stream_destroy(st));
  free(src);
  free(back);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_launch_square_f32) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const uint32_t n = 100003;
  const size_t bytes = n * sizeof(float);
  float *in = fx_xmalloc(bytes), *out = fx_xmalloc(bytes), *want = fx_xmalloc(bytes);
  uint32_t *r = fx_xmalloc(bytes);
  fx_fill_random(r, bytes, 1200);
  for (uint32_t i = 0; i < n; i++) {
    in[i] = (float)(r[i] >> 8) / (float)(1u << 24) * 200.0f - 100.0f;
    want[i] = in[i] * in[i];
  }
  void *din = NULL, *dout = NULL;
  FX_OK(rdev_malloc(s, &din, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &dout, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy_async(s, din, bytes, in, bytes, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  rdev_arg_t a[3] = {fx_ptr(din), fx_ptr(dout), fx_u32(n)};
  FX_OK(rdev_launch(st, "square_f32", 7, a, 3));
  memset(out, 0, bytes);
  FX_OK(rdev_memcpy_async(s, out, bytes, dout, bytes, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(out, want, bytes, "square_f32 results");
  FX_OK(rdev_free(s, din));
  FX_OK(rdev_free(s, dout));
  FX_OK(rdev_stream_destroy(st));
  free(in);
  free(out);
  free(want);
  free(r);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_launch_add_f32) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const uint32_t n = 65537;
  const size_t bytes = n * sizeof(float);
  float *x = fx_xmalloc(bytes), *y = fx_xmalloc(bytes), *out = fx_xmalloc(bytes), *want = fx_xmalloc(bytes);
  uint32_t *r = fx_xmalloc(2 * bytes);
  fx_fill_random(r, 2 * bytes, 1300);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = (float)(r[i] >> 8) / (float)(1u << 24) * 10.0f - 5.0f;
    y[i] = (float)(r[n + i] >> 8) / (float)(1u << 20) - 8.0f;
    want[i] = x[i] + y[i];
  }
  void *dx = NULL, *dy = NULL, *dout = NULL;
  FX_OK(rdev_malloc(s, &dx, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &dy, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &dout, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, dx, bytes, x, bytes, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, dy, bytes, y, bytes, RDEV_MEMCPY_HOST_TO_DEVICE));
  rdev_arg_t a[4] = {fx_ptr(dx), fx_ptr(dy), fx_ptr(dout), fx_u32(n)};
  FX_OK(rdev_launch(st, "add_f32", 5, a, 4));
  FX_OK(rdev_stream_synchronize(st));
  memset(out, 0, bytes);
  FX_OK(rdev_memcpy(s, out, bytes, dout, bytes, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(out, want, bytes, "add_f32 results");
  FX_OK(rdev_free(s, dx));
  FX_OK(rdev_free(s, dy));
  FX_OK(rdev_free(s, dout));
  FX_OK(rdev_stream_destroy(st));
  free(x);
  free(y);
  free(out);
  free(want);
  free(r);
  rdev_session_close(s);
}
END_TEST

/* alpha * x + y on small integers and alpha = 2.5: exact whether or not
 * either side fuses the multiply-add. */
START_TEST(test_launch_axpy_f32) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const uint32_t n = 50001;
  const size_t bytes = n * sizeof(float);
  const float alpha = 2.5f;
  float *x = fx_xmalloc(bytes), *y = fx_xmalloc(bytes), *out = fx_xmalloc(bytes), *want = fx_xmalloc(bytes);
  uint32_t *r = fx_xmalloc(2 * bytes);
  fx_fill_random(r, 2 * bytes, 1400);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = small_int_float(r[i]);
    y[i] = small_int_float(r[n + i]);
    want[i] = alpha * x[i] + y[i];
  }
  void *dx = NULL, *dy = NULL;
  FX_OK(rdev_malloc(s, &dx, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &dy, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy_async(s, dx, bytes, x, bytes, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  FX_OK(rdev_memcpy_async(s, dy, bytes, y, bytes, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  rdev_arg_t a[4] = {fx_f32(alpha), fx_ptr(dx), fx_ptr(dy), fx_u32(n)};
  FX_OK(rdev_launch(st, "axpy_f32", 3, a, 4));
  memset(out, 0, bytes);
  FX_OK(rdev_memcpy_async(s, out, bytes, dy, bytes, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(out, want, bytes, "axpy_f32 results");
  FX_OK(rdev_free(s, dx));
  FX_OK(rdev_free(s, dy));
  FX_OK(rdev_stream_destroy(st));
  free(x);
  free(y);
  free(out);
  free(want);
  free(r);
  rdev_session_close(s);
}
END_TEST

/* A sum of small integers is exact in double whatever the order. */
START_TEST(test_launch_reduce_sum_f32) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  const uint32_t n = 200000;
  const size_t bytes = n * sizeof(float);
  float *in = fx_xmalloc(bytes);
  uint32_t *r = fx_xmalloc(bytes);
  fx_fill_random(r, bytes, 1500);
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    in[i] = small_int_float(r[i]);
    sum += in[i];
  }
  void *din = NULL, *dout = NULL;
  FX_OK(rdev_malloc(s, &din, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &dout, sizeof(float), RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, dout, sizeof(float), 0x55, sizeof(float)));
  FX_OK(rdev_memcpy(s, din, bytes, in, bytes, RDEV_MEMCPY_HOST_TO_DEVICE));
  float got = -1;
  for (uint32_t blocks = 1; blocks <= 8; blocks += 7) {
    rdev_arg_t a[3] = {fx_ptr(din), fx_ptr(dout), fx_u32(n)};
    FX_OK(rdev_launch(st, "reduce_sum_f32", blocks, a, 3));
    FX_OK(rdev_memcpy_async(s, &got, sizeof got, dout, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, st));
    FX_OK(rdev_stream_synchronize(st));
    ck_assert_msg(got == (float)sum, "reduce_sum_f32 with %u blocks: %.1f, want %.1f", blocks, (double)got, sum);
  }
  /* a prefix */
  double part = 0;
  for (uint32_t i = 0; i < 1000; i++) part += in[i];
  rdev_arg_t a[3] = {fx_ptr(din), fx_ptr(dout), fx_u32(1000)};
  FX_OK(rdev_launch(st, "reduce_sum_f32", 2, a, 3));
  FX_OK(rdev_memcpy_async(s, &got, sizeof got, dout, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_msg(got == (float)part, "reduce_sum_f32 of 1000: %.1f, want %.1f", (double)got, part);
  FX_OK(rdev_free(s, din));
  FX_OK(rdev_free(s, dout));
  FX_OK(rdev_stream_destroy(st));
  free(in);
  free(r);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_launch_delay_us) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_arg_t delay = fx_u32(500000);
  double t0 = fx_now();
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  int done = -1;
  FX_OK(rdev_stream_query(st, &done));
  ck_assert_int_eq(done, 0); /* the launch returned before the kernel ran out */
  FX_OK(rdev_stream_synchronize(st));
  double t2 = fx_now();
  ck_assert_msg(t2 - t0 >= 0.495, "a 500 ms delay synchronized after %.3f s", t2 - t0);
  ck_assert_msg(t2 - t0 < 20, "a 500 ms delay took %.3f s", t2 - t0);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* ---- launch refusals ------------------------------------------------------------------ */

START_TEST(test_launch_unknown_kernel_fails_at_synchronize) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_launch(st, "no_such_kernel", 1, NULL, 0));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  ck_assert_str_ne(rdev_session_last_error(), "");
  FX_OK(rdev_stream_synchronize(st)); /* reported once */
  /* the first error since the last synchronize wins */
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_arg_t one[1] = {fx_ptr(d)};
  FX_OK(rdev_launch(st, "no_such_kernel", 1, NULL, 0));
  FX_OK(rdev_launch(st, "write_i32", 1, one, 1));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  check_stream_usable(s, st, 4711);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Requests queued behind the one in flight travel in batches: hundreds of
 * async memsets, a refused launch among them and async reads of each step
 * keep their order and the refusal still surfaces at the synchronize. */
START_TEST(test_pipelined_requests_keep_order_and_errors) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  enum { N = 600 };
  uint8_t *d = NULL;
  FX_OK(rdev_malloc(s, (void **)&d, N, RDEV_MEM_MALLOC_HUGE_FIRST));
  static uint8_t got[N][N / 8];
  memset(got, 0, sizeof got);
  for (int i = 0; i < N; i++) {
    FX_OK(rdev_memset_async(s, d + i, 1, (i * 7 + 1) & 0xff, 1, st));
    if (i == N / 2) FX_OK(rdev_launch(st, "no_such_kernel", 1, NULL, 0));
    if (i % 8 == 7) /* the first i+1 bytes so far, as step i left them */
      FX_OK(rdev_memcpy_async(s, got[i / 8], N / 8, d + i - 7, 8, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  }
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  for (int k = 0; k < N / 8; k++)
    for (int j = 0; j < 8; j++) ck_assert_int_eq(got[k][j], ((k * 8 + j) * 7 + 1) & 0xff);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_launch_wrong_args_fails_at_synchronize) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL, *e = NULL;
  FX_OK(rdev_malloc(s, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &e, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_arg_t too_few[1] = {fx_ptr(d)};
  FX_OK(rdev_launch(st, "write_i32", 1, too_few, 1));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  rdev_arg_t wrong_type[2] = {fx_ptr(d), fx_f32(1.0f)};
  FX_OK(rdev_launch(st, "write_i32", 1, wrong_type, 2));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  rdev_arg_t scalar_for_ptr[2] = {fx_i32(5), fx_i32(5)};
  FX_OK(rdev_launch(st, "write_i32", 1, scalar_for_ptr, 2));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  rdev_arg_t too_many[4] = {fx_ptr(d), fx_ptr(e), fx_u32(4), fx_u32(4)};
  FX_OK(rdev_launch(st, "square_f32", 1, too_many, 4));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  FX_OK(rdev_launch(st, "delay_us", 1, NULL, 0));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  check_stream_usable(s, st, -5);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_free(s, e));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* A pointer whose derived extent runs past its buffer is refused before the
 * kernel runs: the buffer is untouched. */
START_TEST(test_launch_extent_past_buffer_fails_at_synchronize) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *small = NULL, *big = NULL;
  FX_OK(rdev_malloc(s, &small, 8, RDEV_MEM_MALLOC_HUGE_FIRST)); /* two int32 */
  FX_OK(rdev_malloc(s, &big, 400, RDEV_MEM_MALLOC_HUGE_FIRST)); /* 100 floats */
  FX_OK(rdev_memset(s, small, 8, 0x11, 8));
  FX_OK(rdev_memset(s, big, 400, 0x22, 400));
  rdev_arg_t w4[2] = {fx_ptr(small), fx_i32(9)};
  FX_OK(rdev_launch(st, "write_i32", 4, w4, 2)); /* 16 bytes into 8 */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  rdev_arg_t w2[2] = {fx_ptr((uint8_t *)small + 4), fx_i32(9)};
  FX_OK(rdev_launch(st, "write_i32", 2, w2, 2)); /* 8 bytes at offset 4 of 8 */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  rdev_arg_t sq[3] = {fx_ptr(big), fx_ptr(big), fx_u32(101)};
  FX_OK(rdev_launch(st, "square_f32", 1, sq, 3));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  rdev_arg_t red[3] = {fx_ptr(big), fx_ptr((uint8_t *)small + 8 - 2), fx_u32(10)};
  FX_OK(rdev_launch(st, "reduce_sum_f32", 1, red, 3)); /* out: 4 bytes at offset 6 of 8 */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  uint8_t back[400], want[400];
  memset(want, 0x11, 8);
  FX_OK(rdev_memcpy(s, back, 8, small, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, 8, "small buffer after refused launches");
  memset(want, 0x22, 400);
  FX_OK(rdev_memcpy(s, back, 400, big, 400, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, 400, "big buffer after refused launches");
  /* exactly fitting is fine */
  rdev_arg_t fit[2] = {fx_ptr(small), fx_i32(9)};
  FX_OK(rdev_launch(st, "write_i32", 2, fit, 2));
  FX_OK(rdev_stream_synchronize(st));
  check_stream_usable(s, st, 12);
  FX_OK(rdev_free(s, small));
  FX_OK(rdev_free(s, big));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* A pointer that is not device memory of the session (here a host
 * address) is refused at once by the library, which placed all of the
 * session's memory (the server's own check: python_hostile), and nothing
 * is written; so are NULL and malformed calls. */
START_TEST(test_launch_host_pointer_is_invalid_param) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  int32_t host = 0;
  rdev_arg_t a[2] = {fx_ptr(&host), fx_i32(1)};
  FX_EXPECT(rdev_launch(st, "write_i32", 1, a, 2), RDEV_INVALID_PARAM);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "not inside an allocation of this session"));
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_int_eq(host, 0);
  rdev_arg_t b[2] = {fx_ptr(NULL), fx_i32(1)};
  FX_EXPECT(rdev_launch(st, "write_i32", 1, b, 2), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_launch(st, "write_i32", 1, NULL, 2), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_launch(st, "write_i32", 1, a, RDEV_MAX_KERNEL_ARGS + 1), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_launch(NULL, "write_i32", 1, a, 2), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_int_eq(host, 0);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* ---- events ---------------------------------------------------------------------------- */

START_TEST(test_event_record_query_synchronize) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  rdev_event_t *ev = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_event_create(s, &ev));
  int done = -1;
  FX_OK(rdev_event_record(ev, st));
  FX_OK(rdev_event_synchronize(ev, -1));
  FX_OK(rdev_event_query(ev, &done));
  ck_assert_int_eq(done, 1);
  rdev_arg_t delay = fx_u32(1000000);
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_event_record(ev, st));
  FX_OK(rdev_event_query(ev, &done));
  ck_assert_int_eq(done, 0); /* the latest record is behind a 1 s delay */
  FX_OK(rdev_event_synchronize(ev, -1));
  FX_OK(rdev_event_query(ev, &done));
  ck_assert_int_eq(done, 1);
  /* and again, many times: done right after each synchronize */
  int busy = 0;
  for (int i = 0; i < 200; i++) {
    FX_OK(rdev_event_record(ev, st));
    FX_OK(rdev_event_synchronize(ev, -1));
    FX_OK(rdev_event_query(ev, &done));
    if (!done) busy++;
  }
  ck_assert_msg(busy == 0, "event query said not done right after its synchronize %d times of 200", busy);
  FX_OK(rdev_event_destroy(ev));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_event_synchronize_timeout) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  rdev_event_t *ev = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_event_create(s, &ev));
  rdev_arg_t delay = fx_u32(500000);
  double t0 = fx_now();
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_event_record(ev, st));
  FX_EXPECT(rdev_event_synchronize(ev, 50), RDEV_RT_WAIT_TIMEOUT);
  ck_assert_msg(fx_now() - t0 >= 0.045, "event wait timed out after %.3f s, before 50 ms", fx_now() - t0);
  FX_OK(rdev_event_synchronize(ev, 20000));
  ck_assert_msg(fx_now() - t0 >= 0.49, "a 500 ms delay's event completed after %.3f s", fx_now() - t0);
  FX_OK(rdev_event_destroy(ev));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_event_elapsed_ms) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  rdev_event_t *e0 = NULL, *e1 = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_event_create(s, &e0));
  FX_OK(rdev_event_create(s, &e1));
  rdev_arg_t delay = fx_u32(150000);
  FX_OK(rdev_event_record(e0, st));
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_OK(rdev_event_record(e1, st));
  FX_OK(rdev_event_synchronize(e1, -1));
  float ms = -1;
  FX_OK(rdev_event_elapsed_ms(&ms, e0, e1));
  ck_assert_msg(ms >= 149.0f && ms < 20000.0f, "elapsed %.3f ms around a 150 ms delay", (double)ms);
  FX_OK(rdev_event_destroy(e0));
  FX_OK(rdev_event_destroy(e1));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Stream A: delay 200 ms, then write a value, then record. Stream B waits for
 * the event, then copies the value back: B sees A's value. */
START_TEST(test_stream_wait_event_orders_streams) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *a = NULL, *b = NULL;
  rdev_event_t *ev = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  FX_OK(rdev_event_create(s, &ev));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 4 * sizeof(int32_t), RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, d, 4 * sizeof(int32_t), 0, 4 * sizeof(int32_t)));
  rdev_arg_t delay = fx_u32(200000);
  rdev_arg_t w[2] = {fx_ptr(d), fx_i32(4242)};
  double t0 = fx_now();
  FX_OK(rdev_launch(a, "delay_us", 1, &delay, 1));
  FX_OK(rdev_launch(a, "write_i32", 4, w, 2));
  FX_OK(rdev_event_record(ev, a));
  int32_t got[4] = {0, 0, 0, 0};
  FX_OK(rdev_stream_wait_event(b, ev));
  FX_OK(rdev_memcpy_async(s, got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, b));
  FX_OK(rdev_stream_synchronize(b));
  double t1 = fx_now();
  for (int i = 0; i < 4; i++) ck_assert_int_eq(got[i], 4242);
  ck_assert_msg(t1 - t0 >= 0.195, "B finished %.3f s after A's 200 ms delay began", t1 - t0);
  FX_OK(rdev_stream_synchronize(a));
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_event_destroy(ev));
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
  rdev_session_close(s);
}
END_TEST

/* aclrtValueWrite / aclrtValueWait: one stream waits, holding back the
 * work behind it, until another writes the value; bad addresses are
 * refused by the server at the stream's next synchronize. */
START_TEST(test_value_write_releases_value_wait) {
  rdev_session_t *s = fx_open();
  void *flag = NULL, *buf = NULL;
  FX_OK(rdev_malloc(s, &flag, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &buf, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, buf, 4096, 0, 4096));
  rdev_stream_t *a = NULL, *b = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  FX_OK(rdev_value_wait(a, flag, 3, RDEV_VALUE_WAIT_GEQ, 0));
  FX_OK(rdev_memset_async(s, buf, 4096, 0x5a, 4096, a));
  FX_EXPECT(rdev_stream_synchronize_timeout(a, 100), RDEV_RT_STREAM_SYNC_TIMEOUT);
  uint8_t b0 = 1;
  FX_OK(rdev_memcpy(s, &b0, 1, buf, 1, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(b0, 0);
  FX_OK(rdev_value_write(b, flag, 2));
  FX_OK(rdev_stream_synchronize(b));
  FX_EXPECT(rdev_stream_synchronize_timeout(a, 50), RDEV_RT_STREAM_SYNC_TIMEOUT);
  FX_OK(rdev_value_write(b, flag, 3));
  FX_OK(rdev_stream_synchronize(a));
  FX_OK(rdev_memcpy(s, &b0, 1, (uint8_t *)buf + 4095, 1, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(b0, 0x5a);
  uint64_t v = 0;
  FX_OK(rdev_memcpy(s, &v, 8, flag, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_uint_eq(v, 3);
  /* refusals */
  FX_OK(rdev_value_write(b, (uint8_t *)flag + 4, 1));
  FX_EXPECT(rdev_stream_synchronize(b), RDEV_MEMORY_ADDRESS_UNALIGNED);
  FX_OK(rdev_value_write(b, (uint8_t *)flag + 64, 1));
  FX_EXPECT(rdev_stream_synchronize(b), RDEV_INVALID_PARAM);
  uint64_t host = 0;
  FX_OK(rdev_value_wait(b, &host, 1, RDEV_VALUE_WAIT_EQ, 0));
  FX_EXPECT(rdev_stream_synchronize(b), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_value_wait(b, flag, 1, (rdev_value_wait_t)9, 0), RDEV_INVALID_PARAM);
  /* a wait with a timeout gives up, and the work behind it runs */
  FX_OK(rdev_value_wait(b, flag, 99, RDEV_VALUE_WAIT_EQ, 50));
  FX_OK(rdev_memset_async(s, buf, 4096, 0x6b, 1, b));
  FX_EXPECT(rdev_stream_synchronize(b), RDEV_RT_WAIT_TIMEOUT);
  FX_OK(rdev_memcpy(s, &b0, 1, buf, 1, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(b0, 0x6b);
  FX_EXPECT(rdev_value_write(NULL, flag, 1), RDEV_INVALID_PARAM);
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
  FX_OK(rdev_free(s, flag));
  FX_OK(rdev_free(s, buf));
  rdev_session_close(s);
}
END_TEST

/* aclrtSetStreamFailureMode over the wire: accepted in both modes (the
 * runtime's tests prove what stop does: no fault can be raised remotely),
 * work runs as before, and a stream of another session is refused. */
START_TEST(test_stream_failure_mode) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 256, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_stream_set_failure_mode(st, 1));
  FX_OK(rdev_memset_async(s, d, 256, 0x42, 256, st));
  FX_OK(rdev_stream_synchronize(st));
  uint8_t b = 0;
  FX_OK(rdev_memcpy(s, &b, 1, (uint8_t *)d + 255, 1, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(b, 0x42);
  FX_OK(rdev_stream_set_failure_mode(st, 0));
  FX_EXPECT(rdev_stream_set_failure_mode(NULL, 1), RDEV_INVALID_PARAM);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* rdev_stream_abort: queued work is dropped, what waited for it hears so
 * (the async read's synchronize, a host function), and the stream goes on. */
static void abort_host_fn(rdev_host_call_t *call, void *user, int status) {
  __atomic_store_n((int *)user, status == RDEV_OK ? 1 : status, __ATOMIC_RELEASE);
  rdev_host_call_done(call);
}

START_TEST(test_stream_abort) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(s, d, 4096, 0x3c, 4096));
  rdev_arg_t delay = fx_u32(5000000);
  double t0 = fx_now();
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  uint8_t back[4096];
  memset(back, 0, sizeof back);
  FX_OK(rdev_memcpy_async(s, back, sizeof back, d, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  int hf = 0;
  FX_OK(rdev_launch_host_func(st, 1, abort_host_fn, &hf));
  fx_sleep_ms(50);
  FX_OK(rdev_stream_abort(st));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_RT_STREAM_ABORT);
  ck_assert(fx_now() - t0 < 3.0); /* the delay was cut short */
  ck_assert_int_eq(back[0], 0);   /* the read never ran */
  for (int i = 0; i < 200 && !__atomic_load_n(&hf, __ATOMIC_ACQUIRE); i++) fx_sleep_ms(5);
  ck_assert_int_eq(hf, RDEV_RT_STREAM_ABORT);
  FX_OK(rdev_memcpy_async(s, back, sizeof back, d, sizeof back, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  ck_assert_int_eq(back[4095], 0x3c);
  FX_EXPECT(rdev_stream_abort(NULL), RDEV_INVALID_PARAM);
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

Suite *suite_stream(void) {
  Suite *su = suite_create("stream");
  TCase *tc = fx_tcase("stream");
  tcase_add_test(tc, test_stream_create_destroy);
  tcase_add_test(tc, test_repeated_launch_and_synchronize);
  tcase_add_test(tc, test_value_write_releases_value_wait);
  tcase_add_test(tc, test_stream_failure_mode);
  tcase_add_test(tc, test_stream_abort);
  tcase_add_test(tc, test_stream_destroy_runs_queued_work);
  tcase_add_test(tc, test_stream_query);
  tcase_add_test(tc, test_stream_query_done_after_synchronize);
  tcase_add_test(tc, test_stream_synchronize_timeout);
  tcase_add_test(tc, test_stream_synchronize_timeout_keeps_errors_pending);
  tcase_add_test(tc, test_synchronize_timeout_holds_while_others_call);
  tcase_add_test(tc, test_stream_runs_in_order);
  tcase_add_test(tc, test_async_d2h_is_complete_before_the_stream_moves_on);
  tcase_add_test(tc, test_streams_run_concurrently);
  suite_add_tcase(su, tc);
  tc = fx_tcase("kernel");
  tcase_add_test(tc, test_launch_write_i32_prints);
  tcase_add_test(tc, test_async_work_progresses_without_a_caller);
  tcase_add_test(tc, test_launch_square_f32);
  tcase_add_test(tc, test_launch_add_f32);
  tcase_add_test(tc, test_launch_axpy_f32);
  tcase_add_test(tc, test_launch_reduce_sum_f32);
  tcase_add_test(tc, test_launch_delay_us);
  tcase_add_test(tc, test_launch_unknown_kernel_fails_at_synchronize);
  tcase_add_test(tc, test_pipelined_requests_keep_order_and_errors);
  tcase_add_test(tc, test_launch_wrong_args_fails_at_synchronize);
  tcase_add_test(tc, test_launch_extent_past_buffer_fails_at_synchronize);
  tcase_add_test(tc, test_launch_host_pointer_is_invalid_param);
  suite_add_tcase(su, tc);
  tc = fx_tcase("event");
  tcase_add_test(tc, test_event_record_query_synchronize);
  tcase_add_test(tc, test_event_synchronize_timeout);
  tcase_add_test(tc, test_event_elapsed_ms);
  tcase_add_test(tc, test_stream_wait_event_orders_streams);
  suite_add_tcase(su, tc);
  return su;
}
