/*
 * tests/unit/test_runtime_kernels.c — Check unit tests of the device runtime
 * (rdev/runtime.h, rdev/status.h, sim backend): the built-in kernels: the
 * registry, write_i32 and its prints, square/add/axpy/reduce_sum against host
 * results, launch argument checking (unknown kernel, count, types, extents,
 * offsets, blocks, host/other-device/freed/misaligned pointers) and the print
 * callback's once-per-launch contract. Suite "kernels".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

START_TEST(test_kernel_registry_lists_exactly_the_builtin_kernels) {
  static const char *want[] = {"write_i32", "square_f32", "add_f32",      "axpy_f32",   "reduce_sum_f32", "delay_us",
                               "read_i32",  "inc_u32",    "long_inc_u32", "double_u32", "trap",           "hello"};
  int n = -1;
  const rdev_kernel_sig_t *k = rdev_rt_kernels(&n);
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(n, 12);
  for (int i = 0; i < 12; i++) {
    ck_assert_str_eq(k[i].name, want[i]);
    ck_assert_ptr_nonnull(k[i].doc);
    ck_assert_ptr_eq(rdev_rt_kernel_find(want[i]), &k[i]);
  }
  ck_assert_int_eq(rdev_rt_kernel_find("square_f32")->nparams, 3);
  ck_assert_int_eq(rdev_rt_kernel_find("delay_us")->params[0].type, RDEV_ARG_U32);
  ck_assert_ptr_null(rdev_rt_kernel_find("nope"));
  ck_assert_ptr_null(rdev_rt_kernel_find(NULL));
  ck_assert_ptr_null(rdev_rt_kernel_find("square_f3"));
}
END_TEST

START_TEST(test_write_i32_writes_each_block_and_prints_once_per_launch) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 8 * sizeof(int32_t));
  ck_assert_int_eq(rdev_rt_memset(rt, d, 32, 0, 32), RDEV_OK);
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_write(s, d, 4, 123, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t h[8];
  d2h(rt, h, d, sizeof h);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(h[i], 123);
  for (int i = 4; i < 8; i++) ck_assert_int_eq(h[i], 0);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  const char *want = printed("Source data: 123\nSource data: 123\nSource data: 123\nSource data: 123\n");
  ck_assert_uint_eq(pc.len, strlen(want));
  ck_assert_str_eq(pc.text ? pc.text : "", want);
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_write_i32_without_print_fn_still_writes) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 1);
  void *d = dmalloc(rt, 1, 3 * sizeof(int32_t));
  ck_assert_int_eq(launch_write(s, d, 3, -5, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t h[3];
  d2h(rt, h, d, sizeof h);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(h[i], -5);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_write_i32_extent_is_one_element_per_block) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  ck_assert_int_eq(launch_write(s, d, 5, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_write(s, d, 4, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(launch_write(s, (char *)d + 4, 4, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

static void run_square(uint32_t blocks, uint32_t n) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  size_t bytes = (size_t)n * sizeof(float);
  float *in = malloc(bytes), *out = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) in[i] = rand_float();
  void *din = dmalloc(rt, 0, bytes), *dout = dmalloc(rt, 0, bytes);
  h2d(rt, din, in, bytes);
  ck_assert_int_eq(rdev_rt_memset(rt, dout, bytes, 0xff, bytes), RDEV_OK);
  ck_assert_int_eq(launch_square(s, blocks, din, 0, dout, 0, n), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, bytes);
  for (uint32_t i = 0; i < n; i++) {
    float want = in[i] * in[i];
    ck_assert_msg(out[i] == want, "blocks %u: out[%u] = %a, want %a", blocks, i, (double)out[i], (double)want);
  }
  free(in);
  free(out);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_square_f32_matches_host_one_block) { run_square(1, 1000); }
END_TEST

START_TEST(test_square_f32_matches_host_several_blocks) {
  run_square(7, 1000);
  run_square(64, 1001);
  run_square(2000, 1000); /* more blocks than elements */
}
END_TEST

START_TEST(test_square_f32_only_touches_n_elements) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  float in[16], out[16];
  for (int i = 0; i < 16; i++) in[i] = (float)i;
  void *din = dmalloc(rt, 0, sizeof in), *dout = dmalloc(rt, 0, sizeof out);
  h2d(rt, din, in, sizeof in);
  ck_assert_int_eq(rdev_rt_memset(rt, dout, sizeof out, 0, sizeof out), RDEV_OK);
  /* square elements 4..9 via offsets on both pointers */
  ck_assert_int_eq(launch_square(s, 3, din, 16, dout, 16, 6), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, sizeof out);
  for (int i = 0; i < 16; i++) ck_assert(out[i] == ((i >= 4 && i < 10) ? (float)(i * i) : 0.0f));
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

static void run_add(uint32_t blocks, uint32_t n) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 1);
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = rand_float();
    y[i] = rand_float();
  }
  void *dx = dmalloc(rt, 1, bytes), *dy = dmalloc(rt, 1, bytes), *dout = dmalloc(rt, 1, bytes);
  h2d(rt, dx, x, bytes);
  h2d(rt, dy, y, bytes);
  rdev_kernel_arg_t a[4] = {a_ptr(dx, 0), a_ptr(dy, 0), a_ptr(dout, 0), a_u32(n)};
  ck_assert_int_eq(rdev_rt_launch(s, "add_f32", blocks, a, 4, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dout, bytes);
  for (uint32_t i = 0; i < n; i++) {
    float want = x[i] + y[i];
    ck_assert_msg(out[i] == want, "blocks %u: out[%u] = %a, want %a", blocks, i, (double)out[i], (double)want);
  }
  free(x);
  free(y);
  free(out);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_add_f32_matches_host_one_block) { run_add(1, 4096); }
END_TEST

START_TEST(test_add_f32_matches_host_several_blocks) {
  run_add(5, 4096);
  run_add(48, 777);
}
END_TEST

static void run_axpy(uint32_t blocks, uint32_t n, float alpha) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = rand_float();
    y[i] = rand_float();
  }
  void *dx = dmalloc(rt, 0, bytes), *dy = dmalloc(rt, 0, bytes);
  h2d(rt, dx, x, bytes);
  h2d(rt, dy, y, bytes);
  rdev_kernel_arg_t a[4] = {a_f32(alpha), a_ptr(dx, 0), a_ptr(dy, 0), a_u32(n)};
  ck_assert_int_eq(rdev_rt_launch(s, "axpy_f32", blocks, a, 4, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  d2h(rt, out, dy, bytes);
  for (uint32_t i = 0; i < n; i++) {
    volatile float ax = alpha * x[i]; /* no contraction into an FMA */
    float want = ax + y[i];
    ck_assert_msg(out[i] == want, "blocks %u: y[%u] = %a, want %a", blocks, i, (double)out[i], (double)want);
  }
  free(x);
  free(y);
  free(out);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_axpy_f32_matches_host_one_block) { run_axpy(1, 3000, 2.5f); }
END_TEST

START_TEST(test_axpy_f32_matches_host_several_blocks) {
  run_axpy(9, 3000, -0.375f);
  run_axpy(100, 101, 3.1f);
}
END_TEST

static void run_reduce(uint32_t blocks, uint32_t n) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  size_t bytes = (size_t)n * sizeof(float);
  float *in = malloc(bytes);
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    in[i] = (float)((double)(rng_next() >> 11) / 9007199254740992.0); /* [0, 1) */
    sum += in[i];
  }
  void *din = dmalloc(rt, 0, bytes), *dout = dmalloc(rt, 0, sizeof(float));
  h2d(rt, din, in, bytes);
  rdev_kernel_arg_t a[3] = {a_ptr(din, 0), a_ptr(dout, 0), a_u32(n)};
  ck_assert_int_eq(rdev_rt_launch(s, "reduce_sum_f32", blocks, a, 3, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  float out = 0;
  d2h(rt, &out, dout, sizeof out);
  ck_assert_msg(fabs((double)out - sum) <= 1e-5 * sum + 1e-6, "blocks %u: sum %.9g, want %.9g", blocks, (double)out,
                sum);
  free(in);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}

START_TEST(test_reduce_sum_f32_matches_host_one_block) { run_reduce(1, 100000); }
END_TEST

START_TEST(test_reduce_sum_f32_matches_host_several_blocks) {
  run_reduce(13, 100000);
  run_reduce(256, 1000);
}
END_TEST

START_TEST(test_reduce_sum_f32_of_zero_elements_is_zero) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 64), *dout = dmalloc(rt, 0, sizeof(float));
  float junk = 99.0f;
  h2d(rt, dout, &junk, sizeof junk);
  rdev_kernel_arg_t a[3] = {a_ptr(din, 0), a_ptr(dout, 0), a_u32(0)};
  ck_assert_int_eq(rdev_rt_launch(s, "reduce_sum_f32", 4, a, 3, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  float out = -1;
  d2h(rt, &out, dout, sizeof out);
  ck_assert(out == 0.0f);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_unknown_kernel_is_unknown_kernel) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_kernel_arg_t a = a_u32(1);
  ck_assert_int_eq(rdev_rt_launch(s, "cube_f32", 1, &a, 1, NULL, NULL), RDEV_UNKNOWN_KERNEL);
  ck_assert(last_error_has("cube_f32"));
  ck_assert_int_eq(rdev_rt_launch(s, "", 1, &a, 1, NULL, NULL), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(rdev_rt_launch(s, NULL, 1, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  int done = 0;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1); /* nothing was queued */
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_wrong_arg_count_is_kernel_args) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 64), *dout = dmalloc(rt, 0, 64);
  rdev_kernel_arg_t a[4] = {a_ptr(din, 0), a_ptr(dout, 0), a_u32(4), a_u32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 2, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("square_f32"));
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 4, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 1, NULL, 0, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 3, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_wrong_arg_type_is_kernel_args_naming_argument) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 64), *dout = dmalloc(rt, 0, 64);
  rdev_kernel_arg_t a[3] = {a_ptr(din, 0), a_ptr(dout, 0), a_i32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, a, 3, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("'n'"));
  rdev_kernel_arg_t b[3] = {a_u32(0), a_ptr(dout, 0), a_u32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "square_f32", 1, b, 3, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("'in'"));
  rdev_kernel_arg_t c[4] = {a_u32(1), a_ptr(din, 0), a_ptr(dout, 0), a_u32(4)};
  ck_assert_int_eq(rdev_rt_launch(s, "axpy_f32", 1, c, 4, NULL, NULL), RDEV_KERNEL_ARGS);
  ck_assert(last_error_has("'alpha'"));
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_extent_past_end_via_n_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 100 * sizeof(float)), *dout = dmalloc(rt, 0, 200 * sizeof(float));
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, 101), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, dout, 0, din, 0, 101), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, UINT32_MAX), RDEV_INVALID_PARAM);
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, 100), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_extent_past_end_via_offset_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 100 * sizeof(float)), *dout = dmalloc(rt, 0, 100 * sizeof(float));
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 8, 99), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, din, 4, dout, 0, 100), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, din, 400, dout, 0, 1), RDEV_INVALID_PARAM);
  /* interior base plus offset counts from the allocation start */
  ck_assert_int_eq(launch_square(s, 1, (char *)din + 200, 196, dout, 0, 1), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 1, (char *)din + 200, 200, dout, 0, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(launch_square(s, 1, din, 4, dout, 4, 99), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_offset_overflow_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 256), *dout = dmalloc(rt, 0, 256);
  ck_assert_int_eq(launch_square(s, 1, din, UINT64_MAX, dout, 0, 1), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, (char *)din + 64, UINT64_MAX - 3, dout, 0, 1), RDEV_INVALID_PARAM);
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, UINT64_MAX - 63, 1), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  int done = 0;
  ck_assert_int_eq(rdev_rt_stream_query(s, &done), RDEV_OK);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_blocks_out_of_range_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  rdev_kernel_arg_t a = a_u32(1);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 0, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", RDEV_RT_MAX_KERNEL_BLOCKS + 1, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", UINT32_MAX, &a, 1, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", RDEV_RT_MAX_KERNEL_BLOCKS, &a, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_host_pointer_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  float host[64];
  memset(host, 0, sizeof host);
  void *dout = dmalloc(rt, 0, sizeof host);
  ck_assert_int_eq(launch_square(s, 1, host, 0, dout, 0, 64), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  void *pinned = NULL;
  ck_assert_int_eq(rdev_rt_malloc_host(rt, &pinned, 4096), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 1, dout, 0, pinned, 0, 64), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, NULL, 0, dout, 0, 0), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_free_host(rt, pinned), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_pointer_on_other_device_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d0 = dmalloc(rt, 0, 256), *d1 = dmalloc(rt, 1, 256);
  ck_assert_int_eq(launch_square(s, 1, d1, 0, d0, 0, 16), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, d0, 0, d1, 0, 16), RDEV_INVALID_PARAM);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_square(s, 1, d0, 0, d0, 0, 16), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_pointer_into_freed_memory_is_invalid_param) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 256), *dout = dmalloc(rt, 0, 256);
  ck_assert_int_eq(rdev_rt_free(rt, din), RDEV_OK);
  ck_assert_int_eq(launch_square(s, 1, din, 0, dout, 0, 16), RDEV_INVALID_PARAM);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_launch_misaligned_float_pointer_is_unaligned) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *din = dmalloc(rt, 0, 256), *dout = dmalloc(rt, 0, 256);
  ck_assert_int_eq(launch_square(s, 1, din, 2, dout, 0, 16), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert(last_error_has("'in'"));
  ck_assert_int_eq(launch_square(s, 1, din, 0, (char *)dout + 1, 0, 16), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert(last_error_has("'out'"));
  ck_assert_int_eq(launch_write(s, (char *)dout + 6, 1, 0, NULL, NULL), RDEV_MEMORY_ADDRESS_UNALIGNED);
  ck_assert_int_eq(launch_square(s, 1, din, 4, dout, 8, 16), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_kernel_print_truncated_at_print_limit) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  const uint32_t blocks = RDEV_RT_MAX_KERNEL_BLOCKS;
  size_t bytes = (size_t)blocks * sizeof(int32_t);
  void *d = dmalloc(rt, 0, bytes);
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_write(s, d, blocks, 7, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  int32_t *h = malloc(bytes);
  d2h(rt, h, d, bytes);
  for (uint32_t i = 0; i < blocks; i++) ck_assert_int_eq(h[i], 7); /* all blocks ran */
  free(h);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  if (on_acl()) ck_assert_uint_eq(pc.len, 0); /* nothing captured: see printed() */
  static const char line[] = "Source data: 7\n";
  if (on_acl()) goto done;
  const size_t ll = sizeof line - 1;
  ck_assert_uint_lt(pc.len, (size_t)blocks * ll); /* far less than everything */
  /* the kept text: whole lines up to the limit, then one truncation note */
  size_t kept = 0;
  while (kept + ll <= pc.len && memcmp(pc.text + kept, line, ll) == 0) kept += ll;
  ck_assert_uint_le(kept, RDEV_RT_PRINT_LIMIT);
  ck_assert_uint_gt(kept + ll, RDEV_RT_PRINT_LIMIT); /* nothing that fit was dropped */
  const char *note = pc.text + kept;
  size_t note_len = pc.len - kept;
  ck_assert_uint_gt(note_len, 0);
  ck_assert_uint_lt(note_len, 200);
  ck_assert_msg(memmem(note, note_len, "truncated", 9) != NULL, "no truncation note: '%.*s'", (int)note_len, note);
  ck_assert_int_eq(note[note_len - 1], '\n');
done:
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_called_once_with_empty_text_when_kernel_prints_nothing) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  printcap_t pc;
  printcap_init(&pc);
  rdev_kernel_arg_t a = a_u32(10);
  ck_assert_int_eq(rdev_rt_launch(s, "delay_us", 3, &a, 1, print_capture, &pc), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 1);
  ck_assert_uint_eq(pc.len, 0);
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_not_called_when_launch_fails) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_write(s, d, 5, 1, print_capture, &pc), RDEV_INVALID_PARAM); /* extent */
  ck_assert_int_eq(launch_write(s, d, 0, 1, print_capture, &pc), RDEV_INVALID_PARAM); /* blocks */
  rdev_kernel_arg_t bad[2] = {a_ptr(d, 0), a_u32(1)};
  ck_assert_int_eq(rdev_rt_launch(s, "write_i32", 1, bad, 2, print_capture, &pc), RDEV_KERNEL_ARGS);
  ck_assert_int_eq(rdev_rt_launch(s, "nope", 1, bad, 2, print_capture, &pc), RDEV_UNKNOWN_KERNEL);
  ck_assert_int_eq(rdev_rt_stream_synchronize(s), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_destroy(s), RDEV_OK);
  pthread_mutex_lock(&pc.mu);
  ck_assert_int_eq(pc.calls, 0);
  pthread_mutex_unlock(&pc.mu);
  printcap_fini(&pc);
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_called_once_with_empty_text_for_discarded_launch) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  ck_assert_int_eq(rdev_rt_memset(rt, d, 16, 0, 16), RDEV_OK);
  enum { NL = 5 };
  printcap_t pc[NL];
  ck_assert_int_eq(launch_delay(s, 10000000), RDEV_OK);
  for (int i = 0; i < NL; i++) {
    printcap_init(&pc[i]);
    ck_assert_int_eq(launch_write(s, d, 4, 9, print_capture, &pc[i]), RDEV_OK);
  }
  sleep_ms(30);
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_stream_destroy_force(s), RDEV_OK);
  ck_assert(now_ms() - t0 < 1000.0);
  for (int i = 0; i < NL; i++) {
    pthread_mutex_lock(&pc[i].mu);
    ck_assert_int_eq(pc[i].calls, 1);
    ck_assert_uint_eq(pc[i].len, 0);
    pthread_mutex_unlock(&pc[i].mu);
    printcap_fini(&pc[i]);
  }
  int32_t h[4];
  d2h(rt, h, d, sizeof h);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(h[i], 0); /* discarded kernels did not run */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_print_fn_called_once_for_launches_discarded_by_close) {
  rdev_rt_t *rt = open_small();
  rdev_rt_stream_t *s = mkstream(rt, 0);
  void *d = dmalloc(rt, 0, 4 * sizeof(int32_t));
  printcap_t pc;
  printcap_init(&pc);
  ck_assert_int_eq(launch_delay(s, 10000000), RDEV_OK);
  ck_assert_int_eq(launch_write(s, d, 4, 9, print_capture, &pc), RDEV_OK);
  sleep_ms(30);
  rdev_rt_close(rt);
  ck_assert_int_eq(pc.calls, 1);
  ck_assert_uint_eq(pc.len, 0);
  printcap_fini(&pc);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

static Suite *kernel_suite(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tcase("kernels");
  tcase_add_test(tc, test_kernel_registry_lists_exactly_the_builtin_kernels);
  tcase_add_test(tc, test_write_i32_writes_each_block_and_prints_once_per_launch);
  tcase_add_test(tc, test_write_i32_without_print_fn_still_writes);
  tcase_add_test(tc, test_write_i32_extent_is_one_element_per_block);
  tcase_add_test(tc, test_square_f32_matches_host_one_block);
  tcase_add_test(tc, test_square_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_square_f32_only_touches_n_elements);
  tcase_add_test(tc, test_add_f32_matches_host_one_block);
  tcase_add_test(tc, test_add_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_axpy_f32_matches_host_one_block);
  tcase_add_test(tc, test_axpy_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_reduce_sum_f32_matches_host_one_block);
  tcase_add_test(tc, test_reduce_sum_f32_matches_host_several_blocks);
  tcase_add_test(tc, test_reduce_sum_f32_of_zero_elements_is_zero);
  tcase_add_test(tc, test_launch_unknown_kernel_is_unknown_kernel);
  tcase_add_test(tc, test_launch_wrong_arg_count_is_kernel_args);
  tcase_add_test(tc, test_launch_wrong_arg_type_is_kernel_args_naming_argument);
  tcase_add_test(tc, test_launch_extent_past_end_via_n_is_invalid_param);
  tcase_add_test(tc, test_launch_extent_past_end_via_offset_is_invalid_param);
  tcase_add_test(tc, test_launch_offset_overflow_is_invalid_param);
  tcase_add_test(tc, test_launch_blocks_out_of_range_is_invalid_param);
  tcase_add_test(tc, test_launch_host_pointer_is_invalid_param);
  tcase_add_test(tc, test_launch_pointer_on_other_device_is_invalid_param);
  tcase_add_test(tc, test_launch_pointer_into_freed_memory_is_invalid_param);
  tcase_add_test(tc, test_launch_misaligned_float_pointer_is_unaligned);
  tcase_add_test(tc, test_kernel_print_truncated_at_print_limit);
  tcase_add_test(tc, test_print_fn_called_once_with_empty_text_when_kernel_prints_nothing);
  tcase_add_test(tc, test_print_fn_not_called_when_launch_fails);
  tcase_add_test(tc, test_print_fn_called_once_with_empty_text_for_discarded_launch);
  tcase_add_test(tc, test_print_fn_called_once_for_launches_discarded_by_close);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(kernel_suite(), (Suite *)NULL); }
