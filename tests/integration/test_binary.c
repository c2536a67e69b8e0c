/*
 * tests/integration/test_binary.c — kernel binaries on a real rdevd through
 * the C API (rdev_binary_*, rdev_launch_function): load, functions by name
 * and entry, launches from argument blobs with their print output, and
 * every refusal: not the format, unknown kernels, a pointer into another
 * session's memory or past an allocation, a binary with no layout, a
 * short blob; loads and lookups that do not wait (their refusals at the
 * launches' synchronize). Suite "binary".
 */
#include <string.h>

#include "fixture.h"

static const char k_bin[] =
    "rdev-sim-binary 1\n"
    "kernel DeviceWrite write_i32 entry=7\n"
    "  arg ptr devPtr reach=blocks*4 writes\n"
    "  arg i32 value\n"
    "kernel DeviceRead read_i32\n"
    "  arg ptr devPtr reach=blocks*4\n"
    "kernel Bare write_i32\n";

typedef struct {
  uint64_t ptr;
  int32_t value;
} write_args_t; /* the AscendC host stub layout: 8 + 4 */

START_TEST(test_binary_launch_writes_and_prints) {
  rdev_session_t *s = fx_open();
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  rdev_binary_t *b = NULL;
  FX_OK(rdev_binary_load(s, k_bin, sizeof k_bin - 1, &b));
  rdev_function_t *wr = NULL, *rd = NULL;
  FX_OK(rdev_binary_function_by_entry(b, 7, &wr));
  FX_OK(rdev_binary_function(b, "DeviceRead", &rd));
  int32_t *d = NULL;
  FX_OK(rdev_malloc(s, (void **)&d, 8, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  write_args_t w = {(uint64_t)(uintptr_t)d, 123};
  FX_OK(rdev_launch_function(st, wr, 2, &w, 12));
  w.value = 999; /* the blob was copied at the call */
  FX_OK(rdev_launch_function(st, rd, 2, &w, 8));
  FX_OK(rdev_stream_synchronize(st));
  char text[256];
  fx_capture_get(&cap, text, sizeof text);
  ck_assert_str_eq(text,
                   fx_printed("Source data: 123\nSource data: 123\nDestination data: 123\nDestination data: 123\n"));
  int32_t h[2] = {0, 0};
  FX_OK(rdev_memcpy(s, h, 8, d, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(h[0], 123);
  ck_assert_int_eq(h[1], 123);
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_binary_unload(b));
  rdev_session_close(s);
}
END_TEST

START_TEST(test_binary_refusals) {
  rdev_session_t *a = fx_open(), *s = fx_open();
  rdev_binary_t *b = NULL;
  FX_EXPECT(rdev_binary_load(s,
                             "\x7f"
                             "ELF",
                             4, &b),
            RDEV_INVALID_PARAM);
  ck_assert_ptr_null(b);
  const char *unknown = "rdev-sim-binary 1\nkernel K nope\nnoargs\n";
  const char *wrong = "rdev-sim-binary 1\nkernel K write_i32\narg i32 v\narg i32 w\n";
  FX_EXPECT(rdev_binary_load(s, unknown, strlen(unknown), &b), RDEV_UNKNOWN_KERNEL);
  FX_EXPECT(rdev_binary_load(s, wrong, strlen(wrong), &b), RDEV_KERNEL_ARGS);
  FX_EXPECT(rdev_binary_load(s, k_bin, 0, &b), RDEV_INVALID_PARAM);
  FX_OK(rdev_binary_load(s, k_bin, sizeof k_bin - 1, &b));
  rdev_function_t *wr = NULL, *bare = NULL, *none = NULL;
  FX_OK(rdev_binary_function(b, "DeviceWrite", &wr));
  FX_OK(rdev_binary_function(b, "Bare", &bare));
  FX_EXPECT(rdev_binary_function(b, "Nope", &none), RDEV_UNKNOWN_KERNEL);
  FX_EXPECT(rdev_binary_function_by_entry(b, 99, &none), RDEV_UNKNOWN_KERNEL);
  /* session a's memory, with a secret */
  int32_t *theirs = NULL, *mine = NULL;
  FX_OK(rdev_malloc(a, (void **)&theirs, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memset(a, theirs, 64, 0x5a, 64));
  FX_OK(rdev_malloc(s, (void **)&mine, 8, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  write_args_t w = {(uint64_t)(uintptr_t)theirs, 1};
  FX_OK(rdev_launch_function(st, wr, 1, &w, sizeof w));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM); /* another session's */
  w.ptr = (uint64_t)(uintptr_t)mine;
  FX_OK(rdev_launch_function(st, wr, 3, &w, sizeof w)); /* 3 blocks reach 12 bytes of an 8-byte allocation */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  w.ptr = (uint64_t)(uintptr_t)mine + 8; /* just past it */
  FX_OK(rdev_launch_function(st, wr, 1, &w, sizeof w));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_INVALID_PARAM);
  w.ptr = (uint64_t)(uintptr_t)mine;
  FX_OK(rdev_launch_function(st, bare, 1, &w, sizeof w)); /* no layout declared */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "no argument layout"));
  FX_OK(rdev_launch_function(st, wr, 1, &w, 11)); /* shorter than the layout */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_KERNEL_ARGS);
  FX_EXPECT(rdev_launch_function(st, NULL, 1, &w, sizeof w), RDEV_INVALID_PARAM);
  /* a's bytes stayed */
  uint8_t back[64];
  FX_OK(rdev_memcpy(a, back, 64, theirs, 64, RDEV_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < 64; i++) ck_assert_int_eq(back[i], 0x5a);
  FX_OK(rdev_launch_function(st, wr, 2, &w, sizeof w)); /* and the stream works */
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_binary_unload(b));
  rdev_session_close(s);
  rdev_session_close(a);
}
END_TEST

/* Loaded by many sessions of one tenant, the binary is parsed once; each
 * session still gets its own handles, and unload in one leaves the others. */
START_TEST(test_binary_shared_by_sessions) {
  rdev_session_t *s1 = fx_open(), *s2 = fx_open();
  rdev_binary_t *b1 = NULL, *b2 = NULL;
  FX_OK(rdev_binary_load(s1, k_bin, sizeof k_bin - 1, &b1));
  FX_OK(rdev_binary_load(s2, k_bin, sizeof k_bin - 1, &b2));
  rdev_function_t *f2 = NULL;
  FX_OK(rdev_binary_function(b2, "DeviceWrite", &f2));
  FX_OK(rdev_binary_unload(b1));
  int32_t *d = NULL;
  FX_OK(rdev_malloc(s2, (void **)&d, 4, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s2, &st));
  write_args_t w = {(uint64_t)(uintptr_t)d, 42};
  FX_OK(rdev_launch_function(st, f2, 1, &w, sizeof w));
  FX_OK(rdev_stream_synchronize(st));
  int32_t v = 0;
  FX_OK(rdev_memcpy(s2, &v, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(v, 42);
  /* the same bytes twice in one session: unloading one handle leaves the
   * other's functions */
  rdev_binary_t *c1 = NULL, *c2 = NULL;
  rdev_function_t *g1 = NULL;
  FX_OK(rdev_binary_load(s2, k_bin, sizeof k_bin - 1, &c1));
  FX_OK(rdev_binary_load(s2, k_bin, sizeof k_bin - 1, &c2));
  FX_OK(rdev_binary_function(c1, "DeviceWrite", &g1));
  FX_OK(rdev_binary_unload(c2));
  w.value = 43;
  FX_OK(rdev_launch_function(st, g1, 1, &w, sizeof w));
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s2, &v, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(v, 43);
  /* a session holds at most 64 binaries (each costs the server memory) */
  rdev_binary_t *many[64];
  int loaded = 0, rc = RDEV_OK;
  while (loaded < 64 && (rc = rdev_binary_load(s1, k_bin, sizeof k_bin - 1, &many[loaded])) == RDEV_OK) loaded++;
  ck_assert_int_eq(loaded, 64); /* s1 unloaded its first */
  rdev_binary_t *one_more = NULL;
  FX_EXPECT(rdev_binary_load(s1, k_bin, sizeof k_bin - 1, &one_more), RDEV_QUOTA_EXCEEDED);
  FX_OK(rdev_binary_unload(many[0]));
  FX_OK(rdev_binary_load(s1, k_bin, sizeof k_bin - 1, &many[0]));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s1);
  rdev_session_close(s2); /* b2 and c1 still loaded: the session's end frees them */
}
END_TEST

/* A binary and one of its functions without a round trip: usable at once.
 * A refusal of the load or of the lookup is the error of the function's
 * launches, with its code and words, at their stream's synchronize, once;
 * the work queued behind runs; the refused load unloads OK. */
START_TEST(test_binary_load_function_together) {
  rdev_session_t *s = fx_open();
  rdev_binary_t *b = NULL, *b2 = NULL;
  rdev_function_t *wr = NULL, *by_entry = NULL;
  FX_OK(rdev_binary_load_function(s, k_bin, sizeof k_bin - 1, "DeviceWrite", 0, &b, &wr));
  FX_OK(rdev_binary_load_function(s, k_bin, sizeof k_bin - 1, NULL, 7, &b2, &by_entry));
  int32_t *d = NULL;
  FX_OK(rdev_malloc(s, (void **)&d, 8, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  write_args_t w = {(uint64_t)(uintptr_t)d, 77};
  FX_OK(rdev_launch_function(st, wr, 1, &w, 12));
  w.ptr += 4;
  w.value = 78;
  FX_OK(rdev_launch_function(st, by_entry, 1, &w, 12));
  FX_OK(rdev_stream_synchronize(st));
  int32_t h[2] = {0, 0};
  FX_OK(rdev_memcpy(s, h, 8, d, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(h[0], 77);
  ck_assert_int_eq(h[1], 78);
  FX_OK(rdev_binary_unload(b));
  FX_OK(rdev_binary_unload(b2));
  /* a load refused: its launches fail with its code, later work runs */
  const char *unknown = "rdev-sim-binary 1\nkernel K nope\nnoargs\n";
  FX_OK(rdev_binary_load_function(s, unknown, strlen(unknown), "K", 0, &b, &wr));
  ck_assert_ptr_nonnull(b);
  ck_assert_ptr_nonnull(wr);
  FX_OK(rdev_launch_function(st, wr, 1, NULL, 0));
  FX_OK(rdev_memset_async(s, d, 8, 0x11, 8, st));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "nope"));
  FX_OK(rdev_memcpy(s, h, 8, d, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(h[1], 0x11111111);
  FX_OK(rdev_stream_synchronize(st)); /* reported once */
  FX_OK(rdev_binary_unload(b));
  /* lookups refused, by name and by entry: each launch says so */
  FX_OK(rdev_binary_load_function(s, k_bin, sizeof k_bin - 1, "Nope", 0, &b, &wr));
  FX_OK(rdev_binary_load_function(s, k_bin, sizeof k_bin - 1, NULL, 99, &b2, &by_entry));
  FX_OK(rdev_launch_function(st, wr, 1, &w, 12));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "Nope"));
  FX_OK(rdev_launch_function(st, by_entry, 1, &w, 12));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  FX_OK(rdev_binary_unload(b)); /* the loads themselves went through */
  FX_OK(rdev_binary_unload(b2));
  FX_EXPECT(rdev_binary_load_function(s, k_bin, 0, "DeviceWrite", 0, &b, &wr), RDEV_INVALID_PARAM);
  /* the session's binaries at their cap: the load's quota refusal */
  rdev_binary_t *many[64];
  for (int i = 0; i < 64; i++) FX_OK(rdev_binary_load(s, k_bin, sizeof k_bin - 1, &many[i]));
  FX_OK(rdev_binary_load_function(s, k_bin, sizeof k_bin - 1, "DeviceWrite", 0, &b, &wr));
  FX_OK(rdev_launch_function(st, wr, 1, &w, 12));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_QUOTA_EXCEEDED);
  FX_OK(rdev_binary_unload(b));
  FX_OK(rdev_binary_unload(many[0]));
  FX_OK(rdev_stream_synchronize(st)); /* nothing else went sticky */
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

/* A lookup of a loaded binary without a round trip: usable at once, by
 * name and by entry; one the server refuses (a kernel the binary lacks)
 * fails each launch of it at its stream's synchronize with the refusal's
 * code and words, the work behind it runs, and the waiting lookup of the
 * same kernel still fails at once. Local checks fail the call itself. */
START_TEST(test_binary_function_async) {
  rdev_session_t *s = fx_open();
  rdev_binary_t *b = NULL;
  FX_OK(rdev_binary_load(s, k_bin, sizeof k_bin - 1, &b));
  rdev_function_t *wr = NULL, *by_entry = NULL, *nope = NULL, *far = NULL;
  FX_OK(rdev_binary_function_async(b, "DeviceWrite", 0, &wr));
  FX_OK(rdev_binary_function_async(b, NULL, 7, &by_entry));
  FX_OK(rdev_binary_function_async(b, "Nope", 0, &nope));
  FX_OK(rdev_binary_function_async(b, NULL, 99, &far));
  ck_assert_ptr_nonnull(nope);
  int32_t *d = NULL;
  FX_OK(rdev_malloc(s, (void **)&d, 8, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  write_args_t w = {(uint64_t)(uintptr_t)d, 31};
  FX_OK(rdev_launch_function(st, wr, 1, &w, 12));
  w.ptr += 4;
  w.value = 32;
  FX_OK(rdev_launch_function(st, by_entry, 1, &w, 12));
  FX_OK(rdev_stream_synchronize(st));
  int32_t h[2] = {0, 0};
  FX_OK(rdev_memcpy(s, h, 8, d, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(h[0], 31);
  ck_assert_int_eq(h[1], 32);
  FX_OK(rdev_launch_function(st, nope, 1, &w, 12));
  FX_OK(rdev_memset_async(s, d, 8, 0x22, 8, st));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "Nope"));
  FX_OK(rdev_memcpy(s, h, 8, d, 8, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_int_eq(h[0], 0x22222222); /* the work behind the refused launch ran */
  FX_OK(rdev_stream_synchronize(st)); /* reported once */
  FX_OK(rdev_launch_function(st, far, 1, &w, 12));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNKNOWN_KERNEL);
  rdev_function_t *f = NULL;
  FX_EXPECT(rdev_binary_function(b, "Nope", &f), RDEV_UNKNOWN_KERNEL);
  ck_assert_ptr_null(f);
  FX_EXPECT(rdev_binary_function_async(NULL, "DeviceWrite", 0, &f), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_binary_function_async(b, "DeviceWrite", 0, NULL), RDEV_INVALID_PARAM);
  char longname[300];
  memset(longname, 'k', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  FX_EXPECT(rdev_binary_function_async(b, longname, 0, &f), RDEV_UNKNOWN_KERNEL);
  FX_OK(rdev_binary_unload(b)); /* its functions go with it */
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
}
END_TEST

Suite *suite_binary(void) {
  Suite *su = suite_create("binary");
  TCase *tc = fx_tcase("binary");
  tcase_add_test(tc, test_binary_launch_writes_and_prints);
  tcase_add_test(tc, test_binary_refusals);
  tcase_add_test(tc, test_binary_shared_by_sessions);
  tcase_add_test(tc, test_binary_load_function_together);
  tcase_add_test(tc, test_binary_function_async);
  suite_add_tcase(su, tc);
  return su;
}
