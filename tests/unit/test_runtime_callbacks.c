/*
 * tests/unit/test_runtime_callbacks.c — Check unit tests of the device
 * runtime (rdev/runtime.h, rdev/status.h, sim backend): host callbacks
 * (rdev_rt_launch_callback): order with the stream's other work, running
 * after preceding delays, on a thread other than the submitter's, exactly
 * once, NULL fn. Suite "callbacks".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

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

/* ---- suites --------------------------------------------------------------- */

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

int main(void) { return rt_run_suites(callback_suite(), (Suite *)NULL); }
