/*
 * tests/integration/test_deferred.c — the calls that return before the
 * server answered (stream and event create and destroy, free of a known
 * allocation) and where their refusals surface: a stream's create at that
 * stream's next synchronize, the others at the next synchronize of any
 * stream, each once, with its code; work on other streams unaffected,
 * quotas and memory given back in the session's order.
 */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* Writes value into a fresh buffer on st and reads it back: 0 when it
 * worked, else the first failing status. */
static int stream_roundtrip(rdev_session_t *s, rdev_stream_t *st, int32_t value) {
  void *d = NULL;
  int32_t got = 0;
  int rc = rdev_malloc(s, &d, 64, RDEV_MEM_MALLOC_HUGE_FIRST);
  if (rc) return rc;
  rdev_arg_t a[2] = {fx_ptr(d), fx_i32(value)};
  if (!(rc = rdev_launch(st, "write_i32", 1, a, 2)) &&
      !(rc = rdev_memcpy_async(s, &got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST, st)))
    rc = rdev_stream_synchronize(st);
  if (!rc) ck_assert_int_eq(got, value);
  FX_OK(rdev_free(s, d));
  return rc;
}

/* A stream over the tenant's quota is created at once; its create's refusal
 * is its next synchronize's answer (with the quota's code), its work fails,
 * the other streams run as ever, and destroying it is no error anywhere. */
START_TEST(test_refused_stream_create_fails_at_its_synchronize) {
  fx_server_t srv;
  char token[44];
  fx_tenant_server_start(&srv, token, "max_streams = 2\n", NULL);
  rdev_options_t o = {.token = token};
  rdev_session_t *s = NULL;
  FX_OK(rdev_session_open(srv.target, &o, &s));
  rdev_stream_t *a = NULL, *b = NULL, *over = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  FX_OK(rdev_stream_create(s, &over)); /* returns before the server refuses it */
  ck_assert_ptr_nonnull(over);
  ck_assert_int_eq(stream_roundtrip(s, over, 7), RDEV_QUOTA_EXCEEDED);
  ck_assert_msg(strstr(rdev_session_last_error(), "stream") != NULL, "message: %s", rdev_session_last_error());
  /* reported once: its later work fails as work on no stream does */
  int rc = stream_roundtrip(s, over, 8);
  ck_assert_msg(rc != RDEV_OK && rc != RDEV_QUOTA_EXCEEDED, "second round trip on the refused stream: %d", rc);
  ck_assert_int_eq(stream_roundtrip(s, a, 1), RDEV_OK);
  ck_assert_int_eq(stream_roundtrip(s, b, 2), RDEV_OK);
  FX_OK(rdev_stream_destroy(over));
  FX_OK(rdev_stream_synchronize(a)); /* the refused stream's destroy left nothing behind */
  /* a destroy gives its quota back in order: a stream made right after runs */
  FX_OK(rdev_stream_destroy(b));
  FX_OK(rdev_stream_create(s, &b));
  ck_assert_int_eq(stream_roundtrip(s, b, 3), RDEV_OK);
  /* refused, work queued on it, no synchronize: its destroy says why */
  rdev_stream_t *over2 = NULL;
  FX_OK(rdev_stream_create(s, &over2));
  FX_OK(rdev_launch(over2, "write_i32", 1, (rdev_arg_t[]){fx_ptr(NULL), fx_i32(1)}, 0));
  ck_assert_int_eq(rdev_stream_destroy(over2), RDEV_QUOTA_EXCEEDED);
  FX_OK(rdev_stream_synchronize(a)); /* reported once, by the destroy */
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
  rdev_session_close(s);
  fx_server_stop(&srv);
}
END_TEST

/* A kernel's fault that no synchronize reported is the answer of the
 * stream's destroy, whatever queries found meanwhile. */
START_TEST(test_destroy_reports_unsynchronized_work_error) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL, *other = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_stream_create(s, &other));
  FX_OK(rdev_launch(st, "trap", 1, NULL, 0));
  int done = 0;
  for (int i = 0; i < 5000 && !done; i++) {
    FX_OK(rdev_stream_query(st, &done));
    if (!done) fx_sleep_ms(1);
  }
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_stream_destroy(st), RDEV_RT_AICORE_EXCEPTION);
  FX_OK(rdev_stream_synchronize(other)); /* it went with its stream */
  FX_OK(rdev_stream_destroy(other));
  rdev_session_close(s);
}
END_TEST

/* An event over the device's event limit is created at once; the refusal
 * is reported by the next synchronize of any stream, once, and records on
 * it fail on their own stream. */
START_TEST(test_refused_event_create_fails_at_next_synchronize) {
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL, *other = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_stream_create(s, &other));
  enum { LIMIT = 65536 }; /* RDEV_RT_MAX_EVENTS_PER_DEVICE */
  rdev_event_t **evs = fx_xmalloc((LIMIT + 1) * sizeof *evs);
  for (int i = 0; i <= LIMIT; i++) FX_OK(rdev_event_create(s, &evs[i]));
  ck_assert_int_eq(rdev_stream_synchronize(st), RDEV_STORAGE_OVER_LIMIT);
  ck_assert_msg(strstr(rdev_session_last_error(), "events") != NULL, "message: %s", rdev_session_last_error());
  FX_OK(rdev_stream_synchronize(other)); /* reported once */
  FX_OK(rdev_event_record(evs[LIMIT], other));
  ck_assert_int_eq(rdev_stream_synchronize(other), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(stream_roundtrip(s, other, 5), RDEV_OK);
  /* every event made is usable */
  FX_OK(rdev_event_record(evs[LIMIT - 1], st));
  FX_OK(rdev_event_synchronize(evs[LIMIT - 1], -1));
  for (int i = 0; i <= LIMIT; i++) FX_OK(rdev_event_destroy(evs[i]));
  free(evs);
  /* the destroys gave the device's events back, in order */
  rdev_event_t *e = NULL;
  FX_OK(rdev_event_create(s, &e));
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_event_record(e, st));
  FX_OK(rdev_event_synchronize(e, -1));
  FX_OK(rdev_event_destroy(e));
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_stream_destroy(other));
  rdev_session_close(s);
}
END_TEST

/* Frees return at once and take effect in the session's order: memory
 * freed is free for the next malloc, mem_info shows it, a freed address is
 * refused (by the server: the library no longer knows it). */
START_TEST(test_free_takes_effect_in_order) {
  rdev_session_t *s = fx_open();
  size_t f0, total, f1;
  FX_OK(rdev_mem_info(s, &f0, &total));
  void *p = NULL, *q = NULL;
  size_t n = f0 / 2 + f0 / 4; /* two of them do not fit at once */
  for (int i = 0; i < 50; i++) {
    FX_OK(rdev_malloc(s, &p, n, RDEV_MEM_MALLOC_HUGE_FIRST));
    FX_OK(rdev_free(s, p));
  }
  FX_OK(rdev_mem_info(s, &f1, &total));
  ck_assert_uint_eq(f1, f0);
  FX_OK(rdev_malloc(s, &p, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_EXPECT(rdev_malloc(s, &q, n, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_DEVICE_OOM);
  FX_OK(rdev_free(s, p));
  FX_EXPECT(rdev_free(s, p), RDEV_INVALID_PARAM);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  ck_assert_int_eq(stream_roundtrip(s, st, 9), RDEV_OK); /* no refusal went sticky */
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

/* Streams made and destroyed in a loop without waiting: each is usable,
 * and the session's stream cap is never reached (the destroys went first). */
START_TEST(test_stream_create_destroy_in_a_loop) {
  rdev_session_t *s = fx_open();
  for (int i = 0; i < 2000; i++) {
    rdev_stream_t *st = NULL;
    FX_OK(rdev_stream_create(s, &st));
    if (i % 250 == 0) ck_assert_int_eq(stream_roundtrip(s, st, i), RDEV_OK);
    FX_OK(rdev_stream_destroy(st));
  }
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  ck_assert_int_eq(stream_roundtrip(s, st, 42), RDEV_OK);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
}
END_TEST

Suite *suite_deferred(void) {
  Suite *su = suite_create("deferred");
  TCase *tc = fx_tcase("deferred");
  tcase_add_test(tc, test_refused_stream_create_fails_at_its_synchronize);
  tcase_add_test(tc, test_refused_event_create_fails_at_next_synchronize);
  tcase_add_test(tc, test_destroy_reports_unsynchronized_work_error);
  tcase_add_test(tc, test_free_takes_effect_in_order);
  tcase_add_test(tc, test_stream_create_destroy_in_a_loop);
  suite_add_tcase(su, tc);
  return su;
}
