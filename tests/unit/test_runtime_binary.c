/*
 * tests/unit/test_runtime_binary.c — Check unit tests of kernel binaries in
 * the rdev sim binary format (runtime/binary.c): parsing and every refusal
 * (not the format, unknown kernels, layouts that differ from the kernel's
 * signature, no layout), functions by name and entry, the AscendC layout
 * rule of argument blobs, and launches from a blob with their bounds
 * checks; plus the CANN samples' kernels. Suite "binary".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

static const char k_samples[] =
    "rdev-sim-binary 1\n"
    "# the CANN samples' kernels\n"
    "kernel DeviceWrite write_i32 entry=0x100\n"
    "  arg ptr devPtr reach=blocks*4 writes\n"
    "  arg i32 value\n"
    "kernel DeviceRead read_i32 entry=0x101\n"
    "  arg ptr devPtr reach=blocks*4\n"
    "kernel Easy inc_u32\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "kernel Error trap\n"
    "  noargs\n"
    "kernel Print hello\n"
    "  noargs\n"
    "kernel Axpy axpy_f32\n"
    "  arg f32 alpha\n"
    "  arg ptr x reach=arg3*4\n"
    "  arg ptr y reach=arg3*4 writes\n"
    "  arg u32 n\n"
    "kernel NoLayout write_i32\n";

static rdev_rt_binary_t *load(rdev_rt_t *rt, const char *text) {
  rdev_rt_binary_t *b = NULL;
  ck_assert_int_eq(rdev_rt_binary_load(rt, text, strlen(text), &b), RDEV_OK);
  ck_assert_ptr_nonnull(b);
  return b;
}

static int load_rc(rdev_rt_t *rt, const char *text) {
  rdev_rt_binary_t *b = (rdev_rt_binary_t *)1;
  int rc = rdev_rt_binary_load(rt, text, strlen(text), &b);
  if (rc == RDEV_OK)
    rdev_rt_binary_unload(b);
  else
    ck_assert_ptr_null(b);
  return rc;
}

START_TEST(test_binary_functions_by_name_and_entry) {
  rdev_rt_t *rt = open_small();
  rdev_rt_binary_t *b = load(rt, k_samples);
  const rdev_rt_function_t *f = NULL, *g = NULL;
  ck_assert_int_eq(rdev_rt_binary_function(b, "DeviceWrite", &f), RDEV_OK);
  ck_assert_int_eq(rdev_rt_binary_function_by_entry(b, 0x100, &g), RDEV_OK);
  ck_assert_ptr_eq(f, g);
  ck_assert_str_eq(rdev_rt_function_name(f), "DeviceWrite");
  ck_assert_str_eq(rdev_rt_function_sig(f)->name, "write_i32");
  ck_assert_int_eq(rdev_rt_binary_function_by_entry(b, 2, &g), RDEV_OK); /* default entry: its index */
  ck_assert_str_eq(rdev_rt_function_name(g), "Easy");
  ck_assert_int_eq(rdev_rt_binary_function(b, "Nope", &g), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(rdev_rt_binary_function_by_entry(b, 77, &g), RDEV_UNKNOWN_KERNEL);
  rdev_rt_binary_unload(b);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_binary_refusals) {
  rdev_rt_t *rt = open_small();
  ck_assert_int_eq(load_rc(rt, ""), RDEV_INVALID_PARAM);
  ck_assert_int_eq(load_rc(rt,
                           "\x7f"
                           "ELF\x02\x01\x01"),
                   RDEV_INVALID_PARAM);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 2\nkernel A hello\nnoargs\n"), RDEV_INVALID_PARAM);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\n"), RDEV_INVALID_PARAM); /* no kernel */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A no_such_kernel\nnoargs\n"), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\narg ptr x\n"), RDEV_INVALID_PARAM);
  /* layouts that are not the kernel's */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A write_i32\narg i32 v\narg ptr p reach=blocks*4 writes\n"),
                   RDEV_KERNEL_ARGS);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A write_i32\narg ptr p reach=blocks*8 writes\narg i32 v\n"),
                   RDEV_KERNEL_ARGS); /* a reach wider than the kernel's */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A write_i32\narg ptr p reach=blocks*4\narg i32 v\n"),
                   RDEV_KERNEL_ARGS); /* writes through it, undeclared */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A write_i32\narg ptr p writes\narg i32 v\n"),
                   RDEV_KERNEL_ARGS); /* no reach */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A write_i32\narg ptr p reach=blocks*4 writes\n"),
                   RDEV_KERNEL_ARGS); /* one argument short */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello\narg i32 v\n"), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello\nnoargs\nkernel A hello\nnoargs\n"),
                   RDEV_INVALID_PARAM); /* a name twice */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello entry=5\nnoargs\nkernel B hello entry=5\nnoargs\n"),
                   RDEV_INVALID_PARAM); /* an entry twice */
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello entry=x\nnoargs\n"), RDEV_INVALID_PARAM);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello entry=-1\nnoargs\n"), RDEV_INVALID_PARAM);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello entry=+1\nnoargs\n"), RDEV_INVALID_PARAM);
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello entry=0x\nnoargs\n"), RDEV_INVALID_PARAM);
  {
    rdev_rt_binary_t *e =
        load(rt, "rdev-sim-binary 1\nkernel A hello entry=010\nnoargs\nkernel B hello entry=0x1f\nnoargs\n");
    const rdev_rt_function_t *fa = NULL, *fb = NULL;
    ck_assert_int_eq(rdev_rt_binary_function_by_entry(e, 10, &fa), RDEV_OK); /* decimal, not octal */
    ck_assert_int_eq(rdev_rt_binary_function_by_entry(e, 31, &fb), RDEV_OK);
    ck_assert_str_eq(rdev_rt_function_name(fa), "A");
    ck_assert_str_eq(rdev_rt_function_name(fb), "B");
    rdev_rt_binary_unload(e);
  }
  ck_assert_int_eq(load_rc(rt, "rdev-sim-binary 1\nkernel A hello\nnoargs\nbogus\n"), RDEV_INVALID_PARAM);
  char nul[] = "rdev-sim-binary 1\nkernel A hello\nno\0args\n";
  rdev_rt_binary_t *b = NULL;
  ck_assert_int_eq(rdev_rt_binary_load(rt, nul, sizeof nul - 1, &b), RDEV_INVALID_PARAM);
  ck_assert_str_ne(rdev_rt_last_error(), "");
  /* random bytes never crash the parser */
  unsigned char junk[4096];
  for (int round = 0; round < 200; round++) {
    size_t n = 1 + (size_t)(rng_next() % sizeof junk);
    fill_random(junk, n);
    memcpy(junk, "rdev-sim-binary 1\nkernel A ", round % 2 ? 27 : 0);
    if (rdev_rt_binary_load(rt, junk, n, &b) == RDEV_OK) rdev_rt_binary_unload(b);
  }
  rdev_rt_close(rt);
}
END_TEST

/* The AscendC host stub layout: each field aligned to its size (at least
 * 4), pointers 8 bytes. */
START_TEST(test_blob_layout_and_launch) {
  rdev_rt_t *rt = open_small();
  rdev_rt_binary_t *b = load(rt, k_samples);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  enum { N = 16 };
  float x[N], y[N], back[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
  float *dx = dmalloc(rt, 0, sizeof x), *dy = dmalloc(rt, 0, sizeof y);
  h2d(rt, dx, x, sizeof x);
  h2d(rt, dy, y, sizeof y);
  const rdev_rt_function_t *axpy = NULL;
  ck_assert_int_eq(rdev_rt_binary_function(b, "Axpy", &axpy), RDEV_OK);
  struct {
    float alpha; /* offset 0 */
    uint32_t pad;
    uint64_t x, y; /* 8, 16 */
    uint32_t n;    /* 24 */
  } blob = {2.0f, 0xdeadbeef, (uint64_t)(uintptr_t)dx, (uint64_t)(uintptr_t)dy, N};
  rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS];
  int n = 0;
  ck_assert_int_eq(rdev_rt_function_args(axpy, &blob, 28, args, &n), RDEV_OK);
  ck_assert_int_eq(n, 4);
  ck_assert(args[0].v.f32 == 2.0f);
  ck_assert_ptr_eq(args[1].v.ptr.base, dx);
  ck_assert_ptr_eq(args[2].v.ptr.base, dy);
  ck_assert_uint_eq(args[3].v.u32, N);
  ck_assert_int_eq(rdev_rt_function_args(axpy, &blob, 27, args, &n), RDEV_KERNEL_ARGS); /* too short */
  ck_assert_int_eq(rdev_rt_launch_function(s, axpy, 2, &blob, sizeof blob, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, back, dy, sizeof back);
  for (int i = 0; i < N; i++) ck_assert(back[i] == 2.0f * (float)i + 1.0f);
  /* bounds: n past the buffers, a pointer that is no allocation */
  blob.n = N + 1;
  ck_assert_int_eq(rdev_rt_launch_function(s, axpy, 2, &blob, sizeof blob, NULL, NULL), RDEV_INVALID_PARAM);
  blob.n = N;
  blob.y = 0x1234;
  ck_assert_int_eq(rdev_rt_launch_function(s, axpy, 2, &blob, sizeof blob, NULL, NULL), RDEV_INVALID_PARAM);
  /* no layout: never launched */
  const rdev_rt_function_t *none = NULL;
  ck_assert_int_eq(rdev_rt_binary_function(b, "NoLayout", &none), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_function(s, none, 1, &blob, sizeof blob, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert_ptr_nonnull(strstr(rdev_rt_last_error(), "no argument layout"));
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_binary_unload(b);
  rdev_rt_close(rt);
}
END_TEST

/* The samples' kernels: write and read with their prints, increment,
 * double, long, trap, hello. */
START_TEST(test_sample_kernels) {
  rdev_rt_t *rt = open_small();
  rdev_rt_binary_t *b = load(rt, k_samples);
  rdev_rt_stream_t *s = mkstream(rt, 0);
  int32_t *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  const rdev_rt_function_t *wr = NULL, *rd = NULL, *easy = NULL, *err = NULL, *pr = NULL;
  ck_assert_int_eq(rdev_rt_binary_function_by_entry(b, 0x100, &wr), RDEV_OK);
  ck_assert_int_eq(rdev_rt_binary_function_by_entry(b, 0x101, &rd), RDEV_OK);
  ck_assert_int_eq(rdev_rt_binary_function(b, "Easy", &easy), RDEV_OK);
  ck_assert_int_eq(rdev_rt_binary_function(b, "Error", &err), RDEV_OK);
  ck_assert_int_eq(rdev_rt_binary_function(b, "Print", &pr), RDEV_OK);
  struct {
    uint64_t p;
    int32_t v;
  } w = {(uint64_t)(uintptr_t)d, 123};
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(rdev_rt_launch_function(s, wr, 2, &w, 12, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_function(s, rd, 2, &w, 8, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch_function(s, pr, 1, NULL, 0, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_ptr_nonnull(pc.text);
  ck_assert_str_eq(pc.text, printed("Source data: 123\nSource data: 123\nDestination data: 123\nDestination data: "
                                    "123\nHello World\n"));
  ck_assert_int_eq(rdev_rt_launch_function(s, easy, 2, &w, 8, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch(s, "double_u32", 1, (rdev_kernel_arg_t[]){a_ptr(d, 0)}, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t h[2];
  d2h(rt, h, d, sizeof h);
  ck_assert_int_eq(h[0], 248);
  ck_assert_int_eq(h[1], 124);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_launch(s, "long_inc_u32", 1, (rdev_kernel_arg_t[]){a_ptr(d, 0)}, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert(now_ms() - t0 >= 450);
  d2h(rt, h, d, sizeof h);
  ck_assert_int_eq(h[0], 249);
  ck_assert_int_eq(rdev_rt_launch_function(s, err, 1, NULL, 0, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_RT_AICORE_EXCEPTION);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  printcap_fini(&pc);
  rdev_rt_binary_unload(b);
  rdev_rt_close(rt);
}
END_TEST

static Suite *binary_suite(void) {
  Suite *s = suite_create("binary");
  TCase *tc = tcase("binary");
  tcase_add_test(tc, test_binary_functions_by_name_and_entry);
  tcase_add_test(tc, test_binary_refusals);
  tcase_add_test(tc, test_blob_layout_and_launch);
  tcase_add_test(tc, test_sample_kernels);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(binary_suite(), (Suite *)NULL); }
