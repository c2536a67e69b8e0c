/*
 * tests/unit/test_runtime_quick.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h): rdev_rt_stream_run_quick, running a
 * stream's queued work on the calling thread: it runs launches of built-in
 * kernels the stream ran lately (same kernel, blocks and pointers; scalars
 * by sign and bit length, floats by sign and exponent) whose last run times
 * fit the budget all together, when the worker waits for work, on the
 * calling thread, with their errors left for the next synchronize; it
 * leaves everything else (an unknown launch, another magnitude, a memset
 * or callback in the queue, a busy worker or device, budget 0, discarded
 * work) to the worker untouched; bad handles; and its ordering with the
 * worker (many rounds, another thread submitting, destroy, discard, abort).
 * On acl it never runs anything (a device may hang): that alone is checked
 * there. Runs cut short by a discard are not learned.
 * Work is queued inside rdev_rt_batch_begin/_end, which holds back the
 * worker's wake, so that run_quick finds it queued with an idle worker.
 * Suite "quick".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

/* Generous: the launches below take microseconds (delays aside). */
#define BIG_BUDGET_NS (50ull * 1000 * 1000)

/* run_quick on s, which must succeed; *ran as it says. */
static int quick(rdev_rt_stream_t *s, uint64_t budget_ns) {
  int ran = 42;
  ck_assert_int_eq(rdev_rt_stream_run_quick(s, budget_ns, &ran), RDEV_OK);
  ck_assert_msg(ran == 0 || ran == 1, "ran = %d", ran);
  return ran;
}

static int query_done(rdev_rt_stream_t *s) {
  int done = -1;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  return done;
}

static int32_t read_i32(rdev_rt_t *rt, const void *d) {
  int32_t v = 0;
  d2h(rt, &v, d, sizeof v);
  return v;
}

static uint32_t read_u32(rdev_rt_t *rt, const void *d) {
  uint32_t v = 0;
  d2h(rt, &v, d, sizeof v);
  return v;
}

static int launch_inc(rdev_rt_stream_t *s, void *x) {
  rdev_kernel_arg_t a = a_ptr(x, 0);
  return rdev_rt_launch(s, "inc_u32", 1, &a, 1, NULL, NULL);
}

static int launch_axpy(rdev_rt_stream_t *s, float alpha, void *x, void *y, uint32_t n) {
  rdev_kernel_arg_t a[4] = {a_f32(alpha), a_ptr(x, 0), a_ptr(y, 0), a_u32(n)};
  return rdev_rt_launch(s, "axpy_f32", 1, a, 4, NULL, NULL);
}

/* Runs write_i32(d, value) on s's worker, so that s knows the launch. */
static void learn_write(rdev_rt_stream_t *s, void *d, int32_t value) {
  ck_assert_int_eq(launch_write(s, d, 1, value, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
}

/* run_quick declines what is queued: ran 0 and nothing of it ran (the
 * batch still holds the worker's wake back). */
static void expect_declined(rdev_rt_stream_t *s, uint64_t budget_ns) {
  ck_assert_int_eq(quick(s, budget_ns), 0);
  ck_assert_int_eq(query_done(s), 0);
}

/* What a print callback saw: the thread it ran on. */
typedef struct {
  atomic_int calls;
  pthread_t thread;
  char text[64];
} print_seen_t;

static void print_where(void *user, const char *text, size_t len) {
  print_seen_t *p = user;
  p->thread = pthread_self();
  snprintf(p->text, sizeof p->text, "%.*s", (int)len, text);
  atomic_fetch_add(&p->calls, 1);
}

/* Teaches s another launch (other(s, arg), run by the worker) and inc_u32
 * on a cell of c that the other does not displace from what s keeps (the
 * launches are kept in a few places by hash); returns that cell, zeroed. */
static uint32_t *learn_with_inc(rdev_rt_t *rt, rdev_rt_stream_t *s, uint32_t *c,
                                int (*other)(rdev_rt_stream_t *, void *), void *arg) {
  for (int k = 0; k < 16; k++) {
    ck_assert_int_eq(launch_inc(s, c + k), RDEV_OK);
    ck_assert_int_eq(other(s, arg), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
    rdev_rt_batch_begin();
    ck_assert_int_eq(launch_inc(s, c + k), RDEV_OK);
    int ran = quick(s, BIG_BUDGET_NS);
    rdev_rt_batch_end();
    ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
    if (ran) {
      ck_assert_int_eq(rdev_rt_memset(rt, c + k, 4, 0, 4), RDEV_OK);
      return c + k;
    }
  }
  ck_abort_msg("no cell's inc_u32 stayed known beside the other launch");
  return NULL;
}

static int write_64(rdev_rt_stream_t *s, void *w) { return launch_write(s, w, 1, 64, NULL, NULL); }

/* delay_us(33000): bit length 16, as 50000 */
static int delay_33ms(rdev_rt_stream_t *s, void *unused) {
  (void)unused;
  return launch_delay(s, 33000);
}

/* ---- what it runs ---------------------------------------------------------- */

START_TEST(test_quick_runs_a_learned_launch_on_the_calling_thread) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  print_seen_t first = {0}, here = {0};
  ck_assert_int_eq(launch_write(s, d, 1, 5, print_where, &first), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(atomic_load(&first.calls), 1);
  ck_assert_msg(!pthread_equal(first.thread, pthread_self()), "a plain launch ran on the submitting thread");

  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, print_where, &here), RDEV_OK); /* 6: bit length 3, as 5 */
  ck_assert_int_eq(query_done(s), 0);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  /* all of it ran, before the batch's end could wake the worker */
  ck_assert_int_eq(query_done(s), 1);
  size_t pending = 9;
  ck_assert_int_eq(rdev_rt_stream_pending(s, &pending), RDEV_OK);
  ck_assert_uint_eq(pending, 0);
  ck_assert_int_eq(read_i32(rt, d), 6);
  ck_assert_int_eq(atomic_load(&here.calls), 1);
  ck_assert_msg(pthread_equal(here.thread, pthread_self()), "run_quick ran the launch on another thread");
  ck_assert_str_eq(here.text, printed("Source data: 6\n"));
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 6);
  ck_assert_int_eq(atomic_load(&here.calls), 1);

  /* again, each value of bit length 3, and several launches at once */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 4, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(read_i32(rt, d), 4);
  for (int v = 4; v <= 7; v++) ck_assert_int_eq(launch_write(s, d, 1, v, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(query_done(s), 1);
  ck_assert_int_eq(read_i32(rt, d), 7);
  /* nothing queued: nothing to run */
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_on_an_empty_stream_runs_nothing) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_int_eq(query_done(s), 1);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_keys_floats_by_sign_and_exponent) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 16 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = (float)(i + 1);
  float *dx = dmalloc(rt, 0, sizeof x), *dy = dmalloc(rt, 0, sizeof y);
  h2d(rt, dx, x, sizeof x);
  ck_assert_int_eq(rdev_rt_memset(rt, dy, sizeof y, 0, sizeof y), RDEV_OK);
  ck_assert_int_eq(launch_axpy(s, 1.5f, dx, dy, N), RDEV_OK); /* y = 1.5x */
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_axpy(s, 1.75f, dx, dy, N), RDEV_OK); /* exponent 0, as 1.5: y = 3.25x */
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  d2h(rt, y, dy, sizeof y);
  for (int i = 0; i < N; i++) ck_assert_float_eq(y[i], 3.25f * x[i]);
  ck_assert_int_eq(launch_axpy(s, 3.0f, dx, dy, N), RDEV_OK); /* exponent 1 */
  expect_declined(s, BIG_BUDGET_NS);
  d2h(rt, y, dy, sizeof y);
  for (int i = 0; i < N; i++) ck_assert_float_eq(y[i], 3.25f * x[i]);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* y = 6.25x */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_axpy(s, -1.5f, dx, dy, N), RDEV_OK); /* the other sign */
  expect_declined(s, BIG_BUDGET_NS);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* y = 4.75x */
  d2h(rt, y, dy, sizeof y);
  for (int i = 0; i < N; i++) ck_assert_float_eq(y[i], 4.75f * x[i]);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ---- what it leaves to the worker ----------------------------------------- */

START_TEST(test_quick_declines_a_launch_never_run) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  /* the worker runs something (no launch) and goes idle */
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0, 64, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 5, NULL, NULL), RDEV_OK);
  expect_declined(s, BIG_BUDGET_NS);
  ck_assert_int_eq(read_i32(rt, d), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 5);
  /* what s knows, another stream does not: each learns from its own runs */
  rdev_rt_stream_t *t = mkstream(rt, 0);
  learn_write(s, d + 1, 5);
  ck_assert_int_eq(rdev_rt_memset_async(rt, d + 2, 4, 0, 4, t), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(t), RDEV_OK);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(t, d + 1, 1, 6, NULL, NULL), RDEV_OK);
  expect_declined(t, BIG_BUDGET_NS);
  ck_assert_int_eq(read_i32(rt, d + 1), 5);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(t), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d + 1), 6);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(t, d + 1, 1, 7, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(t, BIG_BUDGET_NS), 1); /* now t ran it itself */
  ck_assert_int_eq(read_i32(rt, d + 1), 7);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(t), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(t), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_declines_a_scalar_of_another_magnitude) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  static const int32_t other[] = {1000, -5, 8, 3, 0};
  int32_t last = 5;
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    rdev_rt_batch_begin();
    ck_assert_int_eq(launch_write(s, d, 1, other[i], NULL, NULL), RDEV_OK);
    expect_declined(s, BIG_BUDGET_NS);
    ck_assert_int_eq(read_i32(rt, d), last);
    rdev_rt_batch_end();
    ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
    ck_assert_int_eq(read_i32(rt, d), other[i]);
    last = other[i];
  }
  /* the worker's run taught s 0 (bit length 0) */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 0, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(read_i32(rt, d), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_declines_other_blocks_or_pointers) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, d, 64, 0, 64), RDEV_OK);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 2, 6, NULL, NULL), RDEV_OK); /* 2 blocks */
  expect_declined(s, BIG_BUDGET_NS);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d + 1), 6);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d + 4, 1, 6, NULL, NULL), RDEV_OK); /* another pointer */
  expect_declined(s, BIG_BUDGET_NS);
  ck_assert_int_eq(read_i32(rt, d + 4), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d + 4), 6);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_declines_a_queue_with_anything_else) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  uint32_t *c = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, c, 64, 0, 64), RDEV_OK);
  learn_write(s, d, 5);
  /* a known launch, then a memset */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, c, 4, 0x11, 4, s), RDEV_OK);
  expect_declined(s, BIG_BUDGET_NS);
  ck_assert_int_eq(read_i32(rt, d), 5); /* all or nothing: not even the launch */
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 6);
  ck_assert_uint_eq(read_u32(rt, c), 0x11111111u);
  /* a memset, then a known launch */
  rdev_rt_batch_begin();
  ck_assert_int_eq(rdev_rt_memset_async(rt, c, 4, 0x22, 4, s), RDEV_OK);
  ck_assert_int_eq(launch_write(s, d, 1, 7, NULL, NULL), RDEV_OK);
  expect_declined(s, BIG_BUDGET_NS);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 7);
  ck_assert_uint_eq(read_u32(rt, c), 0x22222222u);
  /* a known launch, then a host callback */
  cblog_t *log = cblog_new();
  cbarg_t cb = {.log = log, .tag = 1};
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 4, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb), RDEV_OK);
  expect_declined(s, BIG_BUDGET_NS);
  ck_assert_int_eq(read_i32(rt, d), 7);
  ck_assert_int_eq(atomic_load(&cb.calls), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 4);
  ck_assert_int_eq(atomic_load(&cb.calls), 1);
  ck_assert_msg(!pthread_equal(log->thread[0], pthread_self()), "the callback ran on the submitting thread");
  cblog_free(log);
  /* a known launch, then one never run */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 5, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(launch_inc(s, c + 1), RDEV_OK);
  expect_declined(s, BIG_BUDGET_NS);
  ck_assert_int_eq(read_i32(rt, d), 4);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 5);
  ck_assert_uint_eq(read_u32(rt, c + 1), 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_with_budget_zero_runs_nothing) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  expect_declined(s, 0);
  ck_assert_int_eq(read_i32(rt, d), 5);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1); /* it was known: the budget decided */
  ck_assert_int_eq(read_i32(rt, d), 6);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* A delay whose last run took longer than the budget is declined; within
 * a budget it runs here, blocking for its time; the budget bounds the sum. */
START_TEST(test_quick_budget_bounds_the_launches_last_times) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK); /* 20 ms */
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  double t0 = now_ms();
  expect_declined(s, 1000000); /* 1 ms */
  ck_assert_msg(now_ms() - t0 < 10.0, "a declined run_quick took %.1f ms", now_ms() - t0);
  ck_assert_int_eq(query_done(s), 0);
  t0 = now_ms();
  ck_assert_int_eq(quick(s, 1000000000ull), 1); /* 1 s */
  double took = now_ms() - t0;
  ck_assert_msg(took >= 19.0, "a 20 ms delay run here took %.1f ms", took);
  ck_assert_int_eq(query_done(s), 1);
  /* the last run took <= took: two of them do not fit in that, each would */
  uint64_t budget = (uint64_t)(took * 1e6) + 2000;
  if (budget >= 40000000ull) budget = 39999000ull; /* two take 40 ms at least */
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  expect_declined(s, budget);
  rdev_rt_batch_end();
  t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_msg(now_ms() - t0 >= 35.0, "the worker ran two 20 ms delays in %.1f ms", now_ms() - t0);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 20000), RDEV_OK);
  t0 = now_ms();
  ck_assert_int_eq(quick(s, 1000000000ull), 1);
  ck_assert_msg(now_ms() - t0 >= 38.0, "two 20 ms delays run here took %.1f ms", now_ms() - t0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* The worker runs a launch s knows (a delay): run_quick declines at once,
 * never running that launch (nor what follows it) a second time. */
START_TEST(test_quick_declines_while_the_worker_runs) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  uint32_t *c = learn_with_inc(rt, s, dmalloc(rt, 0, 64), delay_33ms, NULL);
  ck_assert_int_eq(launch_delay(s, 50000), RDEV_OK); /* not batched: the worker runs it */
  sleep_ms(10);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(quick(s, 1000000000ull), 0);
  ck_assert_msg(now_ms() - t0 < 20.0, "run_quick waited for the worker (%.1f ms)", now_ms() - t0);
  ck_assert_uint_eq(read_u32(rt, c), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_uint_eq(read_u32(rt, c), 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

typedef struct {
  rdev_rt_t *rt;
  rdev_rt_stream_t *s;
  void *m;
  atomic_int go;
  double submitted; /* now_ms() after the submit */
  int rc;
} late_submit_t;

static void *late_submit_thread(void *arg) {
  late_submit_t *l = arg;
  while (!atomic_load(&l->go)) usleep(100);
  sleep_ms(15);
  l->rc = rdev_rt_memset_async(l->rt, l->m, 4, 0x5a, 4, l->s);
  l->submitted = now_ms();
  return NULL;
}

/* Work another thread queues while run_quick runs s's work is the
 * worker's once run_quick returns, with no other call to wake it; the
 * worker, woken meanwhile, ran none of what run_quick ran. */
START_TEST(test_quick_hands_work_queued_meanwhile_to_the_worker) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  uint32_t *c = learn_with_inc(rt, s, dmalloc(rt, 0, 64), delay_33ms, NULL);
  uint32_t *m = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, m, 64, 0, 64), RDEV_OK);
  late_submit_t l = {.rt = rt, .s = s, .m = m};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, late_submit_thread, &l), 0);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_delay(s, 50000), RDEV_OK);
  ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
  atomic_store(&l.go, 1);
  double t0 = now_ms();
  ck_assert_int_eq(quick(s, 1000000000ull), 1);
  double t1 = now_ms();
  ck_assert_msg(t1 - t0 >= 45.0, "a 50 ms delay run here took %.1f ms", t1 - t0);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(l.rc, RDEV_OK);
  ck_assert_msg(l.submitted < t1, "the memset came %.1f ms after run_quick returned", l.submitted - t1);
  /* still in the batch, nothing else called on s: the worker runs it */
  int done = 0;
  for (int i = 0; i < 200 && !(done = query_done(s)); i++) sleep_ms(5);
  ck_assert_msg(done, "the memset queued during run_quick was left queued");
  ck_assert_uint_eq(read_u32(rt, m), 0x5a5a5a5au);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_uint_eq(read_u32(rt, c), 1); /* run once */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* On a device with one execution slot that another stream holds, the
 * launch is left to the worker at once: run_quick never waits for a slot. */
START_TEST(test_quick_declines_when_the_device_has_no_free_slot) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 4 * MIB, .slots = 1};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *s = mkstream(rt, 0), *busy = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  ck_assert_int_eq(launch_delay(busy, 150000), RDEV_OK);
  sleep_ms(20); /* it holds the slot */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_msg(now_ms() - t0 < 50.0, "run_quick waited for a slot (%.1f ms)", now_ms() - t0);
  /* handed to the worker, which waits for the slot (d is not read: the
   * worker may write it any time now) */
  ck_assert_int_eq(query_done(s), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 6);
  /* with the slot free, it runs here */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 7, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(read_i32(rt, d), 7);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(busy), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ---- errors and bad input ------------------------------------------------- */

START_TEST(test_quick_launch_error_goes_to_the_next_synchronize) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1); /* it ran (and faulted) */
  ck_assert_int_eq(query_done(s), 1);
  rdev_rt_batch_end();
  ck_assert_int_eq(read_i32(rt, d), 5); /* the faulted kernel wrote nothing */
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* said once */
  /* the stream goes on, and still knows the launch */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 7, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 7);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* In stop-on-failure mode the launches after a failed one are skipped, as
 * the worker would skip them. */
START_TEST(test_quick_keeps_the_failure_mode) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  uint32_t *c = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, c, 64, 0, 64), RDEV_OK);
  ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_uint_eq(read_u32(rt, c), 1);
  ck_assert_int_eq(rdev_rt_stream_set_failure_mode(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 2, 0), RDEV_OK);
  rdev_rt_batch_begin();
  for (int i = 0; i < 4; i++) ck_assert_int_eq(launch_inc(s, c), RDEV_OK); /* the 2nd faults */
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(query_done(s), 1);
  ck_assert_uint_eq(read_u32(rt, c), 2); /* the 1st ran, the 3rd and 4th were skipped */
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_uint_eq(read_u32(rt, c), 2);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_null_stream_is_invalid_resource_handle) {
  int ran = 7;
  ck_assert_int_eq(rdev_rt_stream_run_quick(NULL, BIG_BUDGET_NS, &ran), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(ran, 0);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_stream_run_quick(NULL, BIG_BUDGET_NS, NULL), RDEV_INVALID_RESOURCE_HANDLE);
}
END_TEST

START_TEST(test_quick_ran_may_be_null) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_run_quick(s, BIG_BUDGET_NS, NULL), RDEV_OK);
  ck_assert_int_eq(query_done(s), 1);
  ck_assert_int_eq(read_i32(rt, d), 6);
  ck_assert_int_eq(launch_write(s, d, 1, 1000, NULL, NULL), RDEV_OK); /* declined */
  ck_assert_int_eq(rdev_rt_stream_run_quick(s, BIG_BUDGET_NS, NULL), RDEV_OK);
  ck_assert_int_eq(query_done(s), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 1000);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ---- ordering with the worker ---------------------------------------------- */

START_TEST(test_quick_rounds_interleaved_with_the_worker_keep_submission_order) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *w = dmalloc(rt, 0, 64);
  uint32_t *c = learn_with_inc(rt, s, dmalloc(rt, 0, 64), write_64, w);
  enum { ROUNDS = 200 };
  uint32_t incs = 0;
  int32_t last = 64;
  /* idle: nothing queued or running as of the last synchronize. Such a
   * round is declined only when the worker wakes meanwhile for a signal it
   * had been sent before (run_quick ran the work it was signalled for and
   * the worker was slow to wake): rare. */
  int idle = 1, idle_rounds = 0, idle_declined = 0, quick_runs = 0;
  for (int i = 0; i < ROUNDS; i++) {
    rdev_rt_batch_begin();
    for (int j = 0; j <= i % 3; j++) {
      last = 64 + (i * 3 + j) % 64; /* bit length 7 */
      ck_assert_int_eq(launch_write(s, w, 1, last, NULL, NULL), RDEV_OK);
      ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
      incs++;
    }
    int ran = quick(s, BIG_BUDGET_NS);
    idle_rounds += idle;
    idle_declined += idle && !ran;
    if (ran) {
      /* all queued so far has run, in order */
      quick_runs++;
      ck_assert_int_eq(query_done(s), 1);
      ck_assert_uint_eq(read_u32(rt, c), incs);
      ck_assert_int_eq(read_i32(rt, w), last);
    }
    rdev_rt_batch_end();
    /* the worker's turn: plain launches, sometimes waited for */
    switch (i % 4) {
      case 0:
        ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
        incs++;
        break;
      case 1:
        last = 64 + i % 64;
        ck_assert_int_eq(launch_write(s, w, 1, last, NULL, NULL), RDEV_OK);
        ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
        incs++;
        break;
      default: break;
    }
    idle = i % 4 != 1;
    if (idle) {
      ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
      ck_assert_uint_eq(read_u32(rt, c), incs);
      ck_assert_int_eq(read_i32(rt, w), last);
    }
  }
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  ck_assert_uint_eq(read_u32(rt, c), incs);
  ck_assert_int_eq(read_i32(rt, w), last);
  ck_assert_int_ge(quick_runs, ROUNDS / 2);
  ck_assert_msg(idle_declined * 4 <= idle_rounds, "%d of %d idle rounds declined", idle_declined, idle_rounds);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

typedef struct {
  rdev_rt_stream_t *s;
  uint32_t *c;
  int n, failures;
} incer_t;

static void *inc_thread(void *arg) {
  incer_t *j = arg;
  for (int i = 0; i < j->n; i++) {
    if (launch_inc(j->s, j->c) != RDEV_OK) j->failures++;
    if (i % 8 == 0) usleep(100);
  }
  return NULL;
}

/* Another thread submits to the stream meanwhile: its work is never lost
 * nor run twice, whoever runs it. */
START_TEST(test_quick_with_another_thread_submitting) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *w = dmalloc(rt, 0, 64);
  uint32_t *c = learn_with_inc(rt, s, dmalloc(rt, 0, 64), write_64, w);
  enum { ROUNDS = 300, OTHER = 600 };
  incer_t job = {.s = s, .c = c, .n = OTHER};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, inc_thread, &job), 0);
  uint32_t incs = 0;
  int32_t last = 64;
  for (int i = 0; i < ROUNDS; i++) {
    rdev_rt_batch_begin();
    last = 64 + i % 64;
    ck_assert_int_eq(launch_write(s, w, 1, last, NULL, NULL), RDEV_OK);
    ck_assert_int_eq(launch_inc(s, c), RDEV_OK);
    incs++;
    (void)quick(s, BIG_BUDGET_NS);
    rdev_rt_batch_end();
    if (i % 16 == 0) ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  }
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_int_eq(job.failures, 0);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  ck_assert_uint_eq(read_u32(rt, c), incs + OTHER);
  ck_assert_int_eq(read_i32(rt, w), last);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_then_destroy) {
  rdev_rt_t *rt = open_small();
  int32_t *d = dmalloc(rt, 0, 64);
  /* destroyed in the batch, after run_quick ran the work */
  rdev_rt_stream_t *s = mkstream(rt, 0);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_batch_end();
  ck_assert_int_eq(read_i32(rt, d), 6);
  /* after it declined: the destroy runs the work */
  s = mkstream(rt, 0);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(launch_write(s, d + 1, 1, 1000, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_batch_end();
  ck_assert_int_eq(read_i32(rt, d), 6);
  ck_assert_int_eq(read_i32(rt, d + 1), 1000);
  /* after the batch's end, with a fault: the destroy reports it */
  s = mkstream(rt, 0);
  learn_write(s, d, 5);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 7, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(read_i32(rt, d), 5);
  rdev_rt_close(rt);
}
END_TEST

/* Work queued before a discard is discarded, not run here; the stream
 * reports the abort once and goes on. */
START_TEST(test_quick_never_runs_discarded_work) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_discard(s), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_int_eq(read_i32(rt, d), 5);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_STREAM_ABORT);
  ck_assert_int_eq(read_i32(rt, d), 5);
  /* what comes after runs, here too */
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 7, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 1);
  ck_assert_int_eq(read_i32(rt, d), 7);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* said once */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_quick_never_runs_work_of_an_aborted_stream) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  cblog_t *log = cblog_new();
  cbarg_t cb = {.log = log, .tag = 1};
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_abort(s), RDEV_OK);
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_int_eq(launch_write(s, d, 1, 7, NULL, NULL), RDEV_OK); /* after the abort: discarded too */
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_int_eq(rdev_rt_launch_callback(s, cb_log, &cb), RDEV_OK);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 5);
  ck_assert_int_eq(cblog_count(log), 1);
  ck_assert_int_eq(log->status[0], RDEV_CANCELLED);
  cblog_free(log);
  rdev_rt_close(rt);
}
END_TEST

/* A launch a discard cut short is not learned: its short run says nothing
 * of the next (a delay of 35 minutes, ended after 20 ms, must not run on
 * the synchronizing thread next time). */
START_TEST(test_quick_does_not_learn_a_run_cut_short) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(launch_delay(s, 0x80000000u), RDEV_OK);
  usleep(20000);
  ck_assert_int_eq(rdev_rt_stream_discard(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_STREAM_ABORT);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_delay(s, 0x80000000u), RDEV_OK);
  double t0 = now_ms();
  ck_assert_int_eq(quick(s, BIG_BUDGET_NS), 0);
  ck_assert_msg(now_ms() - t0 < 1000.0, "run_quick held the caller %.0f ms", now_ms() - t0);
  ck_assert_int_eq(query_done(s), 0);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_discard(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_STREAM_ABORT);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* acl never runs launches on the caller (a device may hang): a learned
 * launch stays the worker's, and runs there. */
START_TEST(test_quick_never_runs_on_acl) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 64);
  learn_write(s, d, 5);
  learn_write(s, d, 5);
  rdev_rt_batch_begin();
  ck_assert_int_eq(launch_write(s, d, 1, 6, NULL, NULL), RDEV_OK);
  expect_declined(s, BIG_BUDGET_NS);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(read_i32(rt, d), 6);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

static Suite *quick_suite(void) {
  Suite *s = suite_create("quick");
  TCase *tc = tcase("quick");
  if (on_acl()) { /* the sim's alone */
    tcase_add_test(tc, test_quick_never_runs_on_acl);
    tcase_add_test(tc, test_quick_null_stream_is_invalid_resource_handle);
    suite_add_tcase(s, tc);
    return s;
  }
  tcase_add_test(tc, test_quick_does_not_learn_a_run_cut_short);
  tcase_add_test(tc, test_quick_runs_a_learned_launch_on_the_calling_thread);
  tcase_add_test(tc, test_quick_on_an_empty_stream_runs_nothing);
  tcase_add_test(tc, test_quick_keys_floats_by_sign_and_exponent);
  tcase_add_test(tc, test_quick_declines_a_launch_never_run);
  tcase_add_test(tc, test_quick_declines_a_scalar_of_another_magnitude);
  tcase_add_test(tc, test_quick_declines_other_blocks_or_pointers);
  tcase_add_test(tc, test_quick_declines_a_queue_with_anything_else);
  tcase_add_test(tc, test_quick_with_budget_zero_runs_nothing);
  tcase_add_test(tc, test_quick_budget_bounds_the_launches_last_times);
  tcase_add_test(tc, test_quick_declines_while_the_worker_runs);
  tcase_add_test(tc, test_quick_hands_work_queued_meanwhile_to_the_worker);
  tcase_add_test(tc, test_quick_declines_when_the_device_has_no_free_slot);
  tcase_add_test(tc, test_quick_launch_error_goes_to_the_next_synchronize);
  tcase_add_test(tc, test_quick_keeps_the_failure_mode);
  tcase_add_test(tc, test_quick_null_stream_is_invalid_resource_handle);
  tcase_add_test(tc, test_quick_ran_may_be_null);
  tcase_add_test(tc, test_quick_rounds_interleaved_with_the_worker_keep_submission_order);
  tcase_add_test(tc, test_quick_with_another_thread_submitting);
  tcase_add_test(tc, test_quick_then_destroy);
  tcase_add_test(tc, test_quick_never_runs_discarded_work);
  tcase_add_test(tc, test_quick_never_runs_work_of_an_aborted_stream);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(quick_suite(), (Suite *)NULL); }
