/*
 * tests/unit/test_runtime_faults.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): fault injection
 * (rdev_rt_fault_inject): failed allocations, per-device faults, re-arming,
 * bad arguments, kernel faults surfacing at the next sync, and hangs
 * (stalling, interrupted by a force destroy). Suite "faults".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

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

/* ---- suites --------------------------------------------------------------- */

/* Stop on failure: after a kernel fault, the stream's later device work is
 * skipped (a copy to host leaves zeros, never old bytes) until the
 * synchronize that reports the fault; callbacks still run in order. In
 * continue mode (the default) the same work runs. */
static void ran_cb(void *user, int status) {
  atomic_int *a = user;
  atomic_store(a, status == RDEV_OK ? 1 : -1);
}

START_TEST(test_failure_mode_stop_skips_device_work_until_sync) {
  rdev_rt_t *rt = open_small();
  for (int stop = 0; stop <= 1; stop++) {
    rdev_rt_stream_t *s = mkstream(rt, 0);
    ck_assert_int_eq(rdev_rt_stream_set_failure_mode(s, stop), RDEV_OK);
    enum { N = 64 };
    void *din = dmalloc(rt, 0, N * 4), *dout = dmalloc(rt, 0, N * 4);
    unsigned char *buf = dmalloc(rt, 0, 256);
    ck_assert_int_eq(rdev_rt_memset(rt, buf, 256, 0x11, 256), RDEV_OK);
    ck_assert_int_eq(rdev_rt_memset(rt, din, N * 4, 0, N * 4), RDEV_OK);
    ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 1, 0), RDEV_OK);
    ck_assert_int_eq(launch_square(s, 2, din, 0, dout, 0, N), RDEV_OK);
    ck_assert_int_eq(rdev_rt_memset_async(rt, buf, 256, 0x22, 128, s), RDEV_OK);
    unsigned char host[256];
    memset(host, 0xaa, sizeof host);
    ck_assert_int_eq(rdev_rt_memcpy_async(rt, host, 256, buf, 256, RDEV_MEMCPY_DEVICE_TO_HOST, s), RDEV_OK);
    atomic_int ran = 0;
    ck_assert_int_eq(rdev_rt_launch_callback(s, ran_cb, &ran), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
    ck_assert_int_eq(atomic_load(&ran), 1);
    if (stop) {
      for (int i = 0; i < 256; i++) ck_assert_int_eq(host[i], 0);
    } else {
      ck_assert_int_eq(host[0], 0x22);
      ck_assert_int_eq(host[255], 0x11);
    }
    unsigned char back[256];
    d2h(rt, back, buf, 256);
    ck_assert_int_eq(back[0], stop ? 0x11 : 0x22);
    /* reported: the stream runs its work again */
    ck_assert_int_eq(rdev_rt_memset_async(rt, buf, 256, 0x33, 256, s), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
    d2h(rt, back, buf, 256);
    ck_assert_int_eq(back[255], 0x33);
    ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  }
  ck_assert_int_eq(rdev_rt_stream_set_failure_mode(NULL, 1), RDEV_INVALID_RESOURCE_HANDLE);
  rdev_rt_close(rt);
}
END_TEST

/* A stream stopped by a failure on a device with execution slots, then
 * destroyed: it must not stay queued for a slot (a use after free once
 * another stream schedules). */
/* The failure mode set while the stream's worker is already running the
 * queued tasks applies to those that run after it: the worker reads it for
 * each task, not once for the tasks it took together. */
START_TEST(test_failure_mode_set_while_tasks_run_applies_to_the_rest) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 64 };
  void *din = dmalloc(rt, 0, N * 4), *dout = dmalloc(rt, 0, N * 4);
  unsigned char *buf = dmalloc(rt, 0, 256);
  ck_assert_int_eq(rdev_rt_memset(rt, buf, 256, 0x11, 256), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memset(rt, din, N * 4, 0, N * 4), RDEV_OK);
  ck_assert_int_eq(rdev_rt_fault_inject(rt, 0, RDEV_FAULT_KERNEL, 2, 0), RDEV_OK); /* the square, after the delay */
  ck_assert_int_eq(launch_delay(s, 200 * 1000), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 2, din, 0, dout, 0, N), RDEV_OK);
  for (int i = 0; i < 8; i++) ck_assert_int_eq(rdev_rt_memset_async(rt, buf, 256, 0x22 + i, 256, s), RDEV_OK);
  usleep(50 * 1000); /* the worker is in the delay */
  size_t pending;
  ck_assert_int_eq(rdev_rt_stream_pending(s, &pending), RDEV_OK);
  ck_assert_uint_eq(pending, 10);
  ck_assert_int_eq(rdev_rt_stream_set_failure_mode(s, 1), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  unsigned char back[256];
  d2h(rt, back, buf, 256);
  ck_assert_int_eq(back[0], 0x11); /* every memset after the fault skipped */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_failure_mode_stop_with_slots_then_destroy) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 16 * MIB, .slots = 1};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  uint32_t *x = dmalloc(rt, 0, 64);
  ck_assert_int_eq(rdev_rt_memset(rt, x, 64, 0, 64), RDEV_OK);
  rdev_rt_stream_t *a = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_stream_set_failure_mode(a, 1), RDEV_OK);
  rdev_kernel_arg_t arg = a_ptr(x, 0);
  ck_assert_int_eq(rdev_rt_launch(a, "inc_u32", 1, &arg, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch(a, "trap", 1, NULL, 0, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch(a, "inc_u32", 1, &arg, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_RT_AICORE_EXCEPTION);
  rdev_rt_stream_t *b = mkstream(rt, 0);
  ck_assert_int_eq(rdev_rt_stream_destroy_force(a), RDEV_OK);
  for (int i = 0; i < 20; i++) ck_assert_int_eq(rdev_rt_launch(b, "inc_u32", 1, &arg, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  uint32_t v = 0;
  d2h(rt, &v, x, 4);
  ck_assert_uint_eq(v, 21); /* 1 before the trap, none after it, 20 on b */
  ck_assert_int_eq(rdev_rt_stream_destroy(b), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

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
  tcase_add_test(tc, test_failure_mode_stop_skips_device_work_until_sync);
  tcase_add_test(tc, test_failure_mode_stop_with_slots_then_destroy);
  tcase_add_test(tc, test_failure_mode_set_while_tasks_run_applies_to_the_rest);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(fault_suite(), (Suite *)NULL); }
