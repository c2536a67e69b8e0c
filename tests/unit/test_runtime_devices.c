/*
 * tests/unit/test_runtime_devices.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): opening and closing the
 * runtime (rdev_rt_open's config and defaults, unknown backends, NULL
 * arguments), the status codes (rdev_rt_strerror, names, CANN numbers),
 * rdev_rt_last_error, and the device queries (count, info, invalid device ids
 * on device-scoped calls). Suites "open" and "devices".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

/* ---- open / close / status --------------------------------------------------- */

START_TEST(test_open_null_config_gives_two_sim_devices_of_1gib) {
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(rdev_rt_open(NULL, &rt), RDEV_OK);
  ck_assert_ptr_nonnull(rt);
  ck_assert_str_eq(rdev_rt_backend_name(rt), "sim");
  int n = -1;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 2);
  for (int d = 0; d < 2; d++) {
    rdev_rt_device_info_t info;
    memset(&info, 0xff, sizeof info);
    ck_assert_int_eq(rdev_rt_device_info(rt, d, &info), RDEV_OK);
    ck_assert_str_eq(info.name, "sim");
    ck_assert_uint_eq(info.total_bytes, GIB);
    ck_assert_uint_eq(info.free_bytes, GIB);
  }
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_open_zeroed_config_uses_defaults) {
  rdev_rt_config_t cfg = {0};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  int n = -1;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 2);
  if (!on_acl()) { /* acl: the device's own memory */
    ck_assert_uint_eq(total_of(rt, 0), GIB);
    ck_assert_uint_eq(total_of(rt, 1), GIB);
  }
  ck_assert_str_eq(rdev_rt_backend_name(rt), test_backend());
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_open_custom_device_count_and_memory) {
  rdev_rt_config_t cfg = {.backend = "sim", .sim_devices = 3, .sim_mem_bytes = 32 * MIB};
  rdev_rt_t *rt = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  int n = -1;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 3);
  for (int d = 0; d < 3; d++) {
    size_t f = 0, t = 0;
    ck_assert_int_eq(rdev_rt_mem_info(rt, d, &f, &t), RDEV_OK);
    ck_assert_uint_eq(t, 32 * MIB);
    ck_assert_uint_eq(f, 32 * MIB);
  }
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_open_unknown_backend_is_api_not_support) {
  rdev_rt_config_t cfg = {.backend = "cuda"};
  rdev_rt_t *rt = (rdev_rt_t *)0x1;
  ck_assert_int_eq(rdev_rt_open(&cfg, &rt), RDEV_API_NOT_SUPPORT);
  ck_assert_ptr_null(rt);
  ck_assert_int_ne((int)strlen(rdev_rt_last_error()), 0);
  ck_assert(last_error_has("cuda"));
}
END_TEST

START_TEST(test_open_null_out_is_invalid_param) { ck_assert_int_eq(rdev_rt_open(NULL, NULL), RDEV_INVALID_PARAM); }
END_TEST

START_TEST(test_close_null_is_harmless) { rdev_rt_close(NULL); }
END_TEST

START_TEST(test_strerror_known_and_unknown_codes) {
  ck_assert_str_eq(rdev_strerror(RDEV_OK), "success");
  ck_assert_str_eq(rdev_strerror(RDEV_RT_DEVICE_OOM), "device out of memory");
  ck_assert_str_eq(rdev_strerror(RDEV_RT_STREAM_SYNC_TIMEOUT), "stream synchronize timed out");
  ck_assert_str_eq(rdev_strerror(RDEV_KERNEL_ARGS), "kernel arguments do not match its signature");
  ck_assert_str_eq(rdev_strerror(12345), "unknown error");
  ck_assert_str_eq(rdev_strerror(-1), "unknown error");
}
END_TEST

START_TEST(test_status_name_known_and_unknown_codes) {
  ck_assert_str_eq(rdev_status_name(RDEV_OK), "OK");
  ck_assert_str_eq(rdev_status_name(207018), "RT_DEVICE_OOM");
  ck_assert_str_eq(rdev_status_name(107000), "RT_PARAM_INVALID");
  ck_assert_str_eq(rdev_status_name(900001), "CANCELLED");
  ck_assert_str_eq(rdev_status_name(12345), "UNKNOWN");
  ck_assert_str_eq(rdev_status_name(-7), "UNKNOWN");
}
END_TEST

START_TEST(test_status_codes_have_cann_numbers) {
  ck_assert_int_eq(RDEV_INVALID_PARAM, 100000);
  ck_assert_int_eq(RDEV_RT_PARAM_INVALID, 107000);
  ck_assert_int_eq(RDEV_RT_INVALID_DEVICEID, 107001);
  ck_assert_int_eq(RDEV_RT_WAIT_TIMEOUT, 107019);
  ck_assert_int_eq(RDEV_MEMORY_ADDRESS_UNALIGNED, 200003);
  ck_assert_int_eq(RDEV_RT_DEVICE_OOM, 207018);
  ck_assert_int_eq(RDEV_RT_AICORE_EXCEPTION, 507015);
  ck_assert_int_eq(RDEV_RT_STREAM_SYNC_TIMEOUT, 507046);
}
END_TEST

START_TEST(test_last_error_set_after_failure_and_cleared_by_success) {
  rdev_rt_t *rt = open_small();
  void *p = NULL;
  ck_assert_int_eq(rdev_rt_malloc(rt, 0, &p, 0, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_INVALID_PARAM);
  ck_assert_ptr_nonnull(rdev_rt_last_error());
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  int n;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_str_eq(rdev_rt_last_error(), "");
  rdev_rt_close(rt);
}
END_TEST

/* ---- devices ----------------------------------------------------------------- */

START_TEST(test_device_count_matches_config) {
  rdev_rt_t *rt = open_rt(5, 4 * MIB);
  int n = 0;
  ck_assert_int_eq(rdev_rt_device_count(rt, &n), RDEV_OK);
  ck_assert_int_eq(n, 5);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_device_info_reports_name_and_memory) {
  rdev_rt_t *rt = open_small();
  rdev_rt_device_info_t info;
  ck_assert_int_eq(rdev_rt_device_info(rt, 1, &info), RDEV_OK);
  if (on_acl())
    ck_assert_str_ne(info.name, ""); /* the SoC's name */
  else
    ck_assert_str_eq(info.name, "sim");
  ck_assert_uint_eq(info.total_bytes, 16 * MIB);
  ck_assert_uint_eq(info.free_bytes, 16 * MIB);
  void *p = dmalloc(rt, 1, 1000);
  ck_assert_int_eq(rdev_rt_device_info(rt, 1, &info), RDEV_OK);
  ck_assert_uint_eq(info.free_bytes, 16 * MIB - rdev_rt_mem_reserved_size(1000));
  ck_assert_int_eq(rdev_rt_free(rt, p), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_device_info_invalid_ids_are_invalid_deviceid) {
  rdev_rt_t *rt = open_small();
  rdev_rt_device_info_t info;
  ck_assert_int_eq(rdev_rt_device_info(rt, -1, &info), RDEV_RT_INVALID_DEVICEID);
  ck_assert_int_gt((int)strlen(rdev_rt_last_error()), 0);
  ck_assert_int_eq(rdev_rt_device_info(rt, 2, &info), RDEV_RT_INVALID_DEVICEID);
  size_t f, t;
  ck_assert_int_eq(rdev_rt_mem_info(rt, -1, &f, &t), RDEV_RT_INVALID_DEVICEID);
  ck_assert_int_eq(rdev_rt_mem_info(rt, 2, &f, &t), RDEV_RT_INVALID_DEVICEID);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_device_scoped_calls_reject_invalid_ids) {
  rdev_rt_t *rt = open_small();
  void *p = NULL;
  rdev_rt_stream_t *s = NULL;
  rdev_rt_event_t *e = NULL;
  int bad[] = {-1, 2, 1000};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(rdev_rt_malloc(rt, bad[i], &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_RT_INVALID_DEVICEID);
    ck_assert_int_eq(rdev_rt_stream_create(rt, bad[i], &s), RDEV_RT_INVALID_DEVICEID);
    ck_assert_int_eq(rdev_rt_event_create(rt, bad[i], &e), RDEV_RT_INVALID_DEVICEID);
    ck_assert_int_eq(rdev_rt_fault_inject(rt, bad[i], RDEV_FAULT_ALLOC, 1, 0), RDEV_RT_INVALID_DEVICEID);
  }
  ck_assert_uint_eq(free_of(rt, 0), 16 * MIB);
  rdev_rt_close(rt);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

/* acl: a runtime whose device fails to come up (the double's
 * ACL_DOUBLE_FAIL_DEVICE) fails to open with CANN's code, and a runtime
 * already open keeps working on the same thread (its context stays the
 * thread's, though the failed open made others current meanwhile). */
START_TEST(test_acl_open_failing_device_leaves_others_working) {
  rdev_rt_t *a = open_small();
  void *p = dmalloc(a, 1, 256);
  setenv("ACL_DOUBLE_FAIL_DEVICE", "1", 1);
  rdev_rt_config_t cfg = {.sim_devices = 2, .sim_mem_bytes = 16 * MIB};
  rdev_rt_t *b = NULL;
  ck_assert_int_eq(test_rt_open(&cfg, &b), 507033);
  ck_assert_ptr_null(b);
  ck_assert_ptr_nonnull(strstr(rdev_rt_last_error(), "device 1"));
  unsetenv("ACL_DOUBLE_FAIL_DEVICE");
  unsigned char h[256], back[256];
  fill_random(h, sizeof h);
  ck_assert_int_eq(rdev_rt_memcpy(a, p, 256, h, 256, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_OK);
  ck_assert_int_eq(rdev_rt_memcpy(a, back, 256, p, 256, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_OK);
  ck_assert_mem_eq(back, h, 256);
  ck_assert_int_eq(rdev_rt_free(a, p), RDEV_OK);
  rdev_rt_close(a);
}
END_TEST

static Suite *open_suite(void) {
  Suite *s = suite_create("open");
  TCase *tc = tcase("open");
  tcase_add_test(tc, test_open_null_config_gives_two_sim_devices_of_1gib);
  tcase_add_test(tc, test_open_zeroed_config_uses_defaults);
  tcase_add_test(tc, test_open_custom_device_count_and_memory);
  tcase_add_test(tc, test_open_unknown_backend_is_api_not_support);
  tcase_add_test(tc, test_open_null_out_is_invalid_param);
  tcase_add_test(tc, test_close_null_is_harmless);
  if (on_acl()) tcase_add_test(tc, test_acl_open_failing_device_leaves_others_working);
  tcase_add_test(tc, test_strerror_known_and_unknown_codes);
  tcase_add_test(tc, test_status_name_known_and_unknown_codes);
  tcase_add_test(tc, test_status_codes_have_cann_numbers);
  tcase_add_test(tc, test_last_error_set_after_failure_and_cleared_by_success);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *device_suite(void) {
  Suite *s = suite_create("devices");
  TCase *tc = tcase("devices");
  tcase_add_test(tc, test_device_count_matches_config);
  tcase_add_test(tc, test_device_info_reports_name_and_memory);
  tcase_add_test(tc, test_device_info_invalid_ids_are_invalid_deviceid);
  tcase_add_test(tc, test_device_scoped_calls_reject_invalid_ids);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(open_suite(), device_suite(), (Suite *)NULL); }
