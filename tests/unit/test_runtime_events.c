/*
 * tests/unit/test_runtime_events.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): events: record, query,
 * synchronize (and its timeout), elapsed time, never-recorded and incomplete
 * events, cross-stream waits, destroy while referenced, re-recording, device
 * mismatch, NULL handles and the per-device event limit. Suite "events".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

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
  for (int i = 0; i < RDEV_RT_MAX_EVENTS_PER_DEVICE / 2; i++) ck_assert_int_eq(rdev_rt_event_destroy(evs[i]), RDEV_OK);
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

/* ---- suites --------------------------------------------------------------- */

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

int main(void) { return rt_run_suites(event_suite(), (Suite *)NULL); }
