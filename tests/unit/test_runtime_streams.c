/*
 * tests/unit/test_runtime_streams.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): streams: ownership checks,
 * ordering, concurrency between streams, async launch, pending/idle/query,
 * sync timeouts, queue depth back-pressure, the per-device stream limit,
 * destroy (waiting, force, abort), close with queued work, submission from
 * many threads, host views of device memory, and rdev_rt_stream_take_error.
 * Batches (rdev_rt_batch_begin/_end): work queued in one waits for the
 * outermost end, or for a wait of the batching thread (synchronize, an
 * event's, destroy, a full queue), never deadlocks it; past 8 streams and
 * across a destroy by another thread.
 * Value writes and waits (aclrtValueWrite/Wait). Suite "streams".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

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
    ck_assert_int_eq(
        rdev_rt_memcpy_async(rt, (char *)slots + (size_t)i * 64, 64, scratch, 64, RDEV_MEMCPY_DEVICE_TO_DEVICE, s),
        RDEV_OK);
  }
  unsigned char *h = malloc((size_t)N * 64);
  ck_assert_int_eq(rdev_rt_memcpy_async(rt, h, (size_t)N * 64, slots, (size_t)N * 64, RDEV_MEMCPY_DEVICE_TO_HOST, s),
                   RDEV_OK);
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
  if (on_acl()) { /* device memory of an NPU is never host-mapped */
    ck_assert_ptr_null(v);
    rdev_rt_close(rt);
    return;
  }
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
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(s, 200000), RDEV_OK);                   /* slot 1 (running) */
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
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
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
  ck_assert_int_eq(rdev_rt_event_destroy(ev2), RDEV_OK);       /* still referenced by a's queue */
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
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
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

/* ---- suites --------------------------------------------------------------- */

/* ---- value write and wait ---- */

START_TEST(test_value_wait_holds_its_stream_until_another_writes) {
  rdev_rt_config_t cfg = {.sim_devices = 2, .sim_mem_bytes = 16 * MIB, .slots = 1};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  uint64_t *flag = dmalloc(rt, 0, 64);
  unsigned char *buf = dmalloc(rt, 0, 256);
  ck_assert_int_eq(rdev_rt_memset(rt, flag, 64, 0, 64), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset(rt, buf, 256, 0, 256), RDEV_OK);
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_value_wait(a, flag, 5, RDEV_VALUE_EQ, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset_async(rt, buf, 256, 0x11, 256, a), RDEV_OK);
  /* the wait holds no slot: b's work runs on the one-slot device meanwhile */
  ck_assert_int_eq(rdev_rt_memset_async(rt, buf + 128, 128, 0x22, 128, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_value_write(b, flag, 4), RDEV_OK); /* not yet */
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  usleep(20000);
  int done = 1;
  ck_assert_int_eq(rdev_rt_stream_query(a, &done), RDEV_OK);
  ck_assert_int_eq(done, 0);
  unsigned char back[256];
  ck_assert_int_eq(rdev_rt_memcpy(rt, back, 256, buf, 256, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_int_eq(back[0], 0);
  ck_assert_int_eq(back[200], 0x22);
  ck_assert_int_eq(rdev_rt_value_write(b, flag, 5), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(rt, back, 256, buf, 256, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_int_eq(back[0], 0x11);
  ck_assert_int_eq(back[255], 0x11);
  uint64_t v = 0;
  ck_assert_int_eq(rdev_rt_memcpy(rt, &v, 8, flag, 8, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_uint_eq(v, 5);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_value_wait_conditions) {
  rdev_rt_t *rt = open_small();
  uint64_t *flag = dmalloc(rt, 0, 64);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  uint64_t v = 0x0f0;
  ck_assert_int_eq(rdev_rt_memcpy(rt, flag, 8, &v, 8, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  /* each met at once: the stream drains */
  ck_assert_int_eq(rdev_rt_value_wait(s, flag, 0x0f0, RDEV_VALUE_GEQ, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_value_wait(s, flag, 0x001, RDEV_VALUE_GEQ, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_value_wait(s, flag, 0x0f0, RDEV_VALUE_EQ, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_value_wait(s, flag, 0x010, RDEV_VALUE_AND, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_value_wait(s, flag, 0x00f, RDEV_VALUE_NOR, 0), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  /* each unmet: the stream waits until a force destroy ends it */
  static const struct {
    uint64_t value;
    rdev_value_cond_t cond;
  } unmet[] = {
      {0x0f1, RDEV_VALUE_GEQ}, {0x0f1, RDEV_VALUE_EQ}, {0x00f, RDEV_VALUE_AND}, {~(uint64_t)0, RDEV_VALUE_NOR}};
  for (size_t i = 0; i < sizeof unmet / sizeof unmet[0]; i++) {
    rdev_rt_stream_t *w = mkstream(rt, 0);
    ck_assert_int_eq(rdev_rt_value_wait(w, flag, unmet[i].value, unmet[i].cond, 0), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(w, 30), RDEV_RT_STREAM_SYNC_TIMEOUT);
    double t0 = now_ms();
    ck_assert_int_eq(rdev_rt_stream_destroy_force(w), RDEV_OK);
    ck_assert(now_ms() - t0 < 1000);
  }
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_value_ops_check_their_arguments) {
  rdev_rt_t *rt = open_small();
  char *buf = dmalloc(rt, 0, 64);
  char *other = dmalloc(rt, 1, 64);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_value_write(s, buf + 4, 1), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(rdev_rt_value_write(s, buf + 64, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_value_write(s, buf + 60, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_value_wait(s, other, 1, RDEV_VALUE_EQ, 0), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_value_wait(s, buf, 1, (rdev_value_cond_t)4, 0), RDEV_INVALID_PARAM);
  uint64_t host = 0;
  ck_assert_int_eq(rdev_rt_value_write(s, &host, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_value_write(NULL, buf, 1), RDEV_INVALID_RESOURCE_HANDLE);
  ck_assert_int_eq(rdev_rt_value_write(s, buf + 56, 7), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  uint64_t v = 0;
  ck_assert_int_eq(rdev_rt_memcpy(rt, &v, 8, buf + 56, 8, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_uint_eq(v, 7);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* Abort (rdev_rt_stream_discard): what was queued and not started is
 * discarded (callbacks cancelled), a running delay is cut short, the next
 * synchronize says so once, and the stream runs what comes after. */
static void count_cb(void *user, int status) {
  atomic_int *a = user;
  atomic_fetch_add(a, status == RDEV_OK ? 1 : 100);
}

START_TEST(test_stream_discard_then_go_on) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  uint32_t *x = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, x, 64, 0, 64), RDEV_OK);
  rdev_kernel_arg_t arg = a_ptr(x, 0);
  double t0 = now_ms();
  ck_assert_int_eq(launch_delay(s, 5000000), RDEV_OK); /* 5 s, cut short */
  ck_assert_int_eq(rdev_rt_launch(s, "inc_u32", 1, &arg, 1, NULL, NULL), RDEV_OK);
  atomic_int calls = 0;
  ck_assert_int_eq(rdev_rt_launch_callback(s, count_cb, &calls), RDEV_OK);
  sleep_ms(20);
  ck_assert_int_eq(rdev_rt_stream_discard(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_STREAM_ABORT);
  ck_assert(now_ms() - t0 < 2000);
  ck_assert_int_eq(atomic_load(&calls), 100); /* ran, cancelled */
  uint32_t v = 9;
  d2h(rt, &v, x, 4);
  ck_assert_uint_eq(v, 0);
  ck_assert_int_eq(rdev_rt_launch(s, "inc_u32", 1, &arg, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_callback(s, count_cb, &calls), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK); /* said once */
  ck_assert_int_eq(atomic_load(&calls), 101);
  d2h(rt, &v, x, 4);
  ck_assert_uint_eq(v, 1);
  ck_assert_int_eq(rdev_rt_stream_discard(s), RDEV_OK); /* nothing queued: nothing to say */
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_discard(NULL), RDEV_INVALID_RESOURCE_HANDLE);
  /* an abort is no failure: a stream in stop-on-failure mode runs what comes after it */
  ck_assert_int_eq(rdev_rt_stream_set_failure_mode(s, 1), RDEV_OK);
  ck_assert_int_eq(launch_delay(s, 5000000), RDEV_OK);
  sleep_ms(20);
  ck_assert_int_eq(rdev_rt_stream_discard(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch(s, "inc_u32", 1, &arg, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_STREAM_ABORT);
  d2h(rt, &v, x, 4);
  ck_assert_uint_eq(v, 2);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

/* Whether s has run all it was given within ms milliseconds, looking
 * every millisecond. A test that expects "not yet" gives a moment; one
 * that expects "done" gives seconds, since a loaded machine may take a
 * while to schedule the worker. */
static int ran_within(rdev_rt_stream_t *s, int ms) {
  int done = 0;
  for (int i = 0; i <= ms && !done; i++) {
    if (i) sleep_ms(1);
    ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  }
  return done;
}

static void check_bytes(rdev_rt_t *rt, const void *d, int value, size_t n) {
  unsigned char h[256];
  ck_assert_uint_le(n, sizeof h);
  d2h(rt, h, d, n);
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(h[i], value);
}

START_TEST(test_batch_starts_its_work_at_the_outermost_end) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 64);
  /* once this returns the worker waits for work: a batch holds back only
   * the wake of an idle worker */
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0, 64, s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  rdev_rt_batch_begin();
  rdev_rt_batch_begin();
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x5a, 64, s), RDEV_OK);
  rdev_rt_batch_end();
  ck_assert_msg(!ran_within(s, 30), "a nested end started the batch's work");
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  check_bytes(rt, d, 0x5a, 64);
  rdev_rt_batch_end();                                                     /* one end too many: nothing */
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 0x11, 64, s), RDEV_OK); /* not batched: runs */
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s, 5000), RDEV_OK);
  check_bytes(rt, d, 0x11, 64);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_batch_wakes_what_its_thread_waits_for) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 4 * MIB, .stream_depth = 2};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *a = mkstream(rt, 0), *b = mkstream(rt, 0), *c = mkstream(rt, 0);
  rdev_rt_event_t *ev = mkevent(rt, 0);
  void *d = dmalloc(rt, 0, 256);
  rdev_rt_batch_begin();
  /* a synchronize */
  ck_assert_int_eq(rdev_rt_memset_async(rt, d, 64, 1, 64, a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(a, 5000), RDEV_OK);
  check_bytes(rt, d, 1, 64);
  /* an event's synchronize, the event recorded on another stream held back */
  ck_assert_int_eq(rdev_rt_memset_async(rt, (char *)d + 64, 64, 2, 64, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_synchronize(ev, 5000), RDEV_OK);
  check_bytes(rt, (char *)d + 64, 2, 64);
  /* a full queue (depth 2): the third waits for room, after waking it */
  for (int i = 0; i < 6; i++) ck_assert_int_eq(rdev_rt_memset_async(rt, (char *)d + 128, 64, 3 + i, 64, c), RDEV_OK);
  /* a destroy, its stream's work waiting for an event recorded on one held back */
  ck_assert_int_eq(rdev_rt_memset_async(rt, (char *)d + 192, 64, 9, 64, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_event_record(ev, b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_wait_event(a, ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(a), RDEV_OK);
  rdev_rt_batch_end();
  ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(c, 5000), RDEV_OK);
  check_bytes(rt, (char *)d + 128, 8, 64);
  check_bytes(rt, (char *)d + 192, 9, 64);
  ck_assert_int_eq(rdev_rt_event_destroy(ev), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(c), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

static void *destroy_thread(void *arg) {
  ck_assert_int_eq(rdev_rt_stream_destroy(arg), RDEV_OK);
  return NULL;
}

START_TEST(test_batch_of_many_streams_and_a_stream_destroyed_under_it) {
  enum { N = 12 };
  rdev_rt_t *rt = open_rt(1, 16 * MIB);
  rdev_rt_stream_t *s[N];
  void *d = dmalloc(rt, 0, N * 64);
  for (int i = 0; i < N; i++) s[i] = mkstream(rt, 0);
  rdev_rt_batch_begin();
  for (int i = 0; i < N; i++)
    ck_assert_int_eq(rdev_rt_memset_async(rt, (char *)d + i * 64, 64, 0x20 + i, 64, s[i]), RDEV_OK);
  ck_assert_msg(ran_within(s[N - 1], 5000), "a stream past the batch's 8 was held back");
  /* another thread destroys a stream this batch holds back: it runs its
   * work and goes; the batch's end finds it drained */
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, destroy_thread, s[0]), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  rdev_rt_batch_end();
  for (int i = 1; i < N; i++) {
    ck_assert_int_eq(rdev_rt_stream_synchronize_timeout(s[i], 5000), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_destroy(s[i]), RDEV_OK);
  }
  for (int i = 0; i < N; i++) check_bytes(rt, (char *)d + i * 64, 0x20 + i, 64);
  rdev_rt_close(rt);
}
END_TEST

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
  tcase_add_test(tc, test_value_wait_holds_its_stream_until_another_writes);
  tcase_add_test(tc, test_value_wait_conditions);
  tcase_add_test(tc, test_value_ops_check_their_arguments);
  tcase_add_test(tc, test_stream_discard_then_go_on);
  tcase_add_test(tc, test_batch_starts_its_work_at_the_outermost_end);
  tcase_add_test(tc, test_batch_wakes_what_its_thread_waits_for);
  tcase_add_test(tc, test_batch_of_many_streams_and_a_stream_destroyed_under_it);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(stream_suite(), (Suite *)NULL); }
