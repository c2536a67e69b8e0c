/*
 * tests/integration/test_session.c — sessions, server info, devices and
 * memory accounting, against a real rdevd (2 sim devices of 64 MiB each).
 */
#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

START_TEST(test_session_open_close) {
  rdev_session_t *s = NULL;
  FX_OK(rdev_session_open(fx_srv.target, NULL, &s));
  ck_assert_ptr_nonnull(s);
  rdev_session_close(s);
  /* a second session after the first one ended */
  s = fx_open();
  size_t fr, total;
  FX_OK(rdev_mem_info(s, &fr, &total));
  rdev_session_close(s);
  rdev_session_close(NULL); /* a no-op */
}
END_TEST

START_TEST(test_session_open_bad_arguments) {
  rdev_session_t *s = (rdev_session_t *)1;
  FX_EXPECT(rdev_session_open("", NULL, &s), RDEV_INVALID_PARAM);
  ck_assert_ptr_null(s);
  FX_EXPECT(rdev_session_open(NULL, NULL, &s), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_session_open(fx_srv.target, NULL, NULL), RDEV_INVALID_PARAM);
  ck_assert_str_ne(rdev_session_last_error(), "");
}
END_TEST

START_TEST(test_server_info) {
  rdev_session_t *s = fx_open();
  rdev_server_info_t info;
  memset(&info, 0x7f, sizeof info);
  FX_OK(rdev_server_info(s, &info));
  ck_assert_str_eq(info.backend, fx_on_acl() ? "acl" : "sim");
  ck_assert_int_eq(info.device_count, 2);
  ck_assert_uint_gt(strlen(info.version), 0);
  ck_assert_uint_lt(strlen(info.version), sizeof info.version);
  ck_assert_uint_lt(strlen(info.identity), sizeof info.identity);
  ck_assert_uint_ge(info.max_chunk, 4096);
  ck_assert_int_eq(info.tls, RDEV_TLS_NONE);
  rdev_session_close(s);
}
END_TEST

/* Over TLS, the process's second session with a server resumes the TLS
 * session of its first (no certificates again), and works as any; a
 * session with other credentials (here a client certificate too) never
 * resumes one of another identity's, but its own. */
START_TEST(test_tls_session_resumed) {
  char dir[] = "/tmp/rdev-tls-XXXXXX", cert[64], key[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/key.pem", dir);
  const char *mk[] = {"/usr/bin/openssl",
                      "req",
                      "-x509",
                      "-newkey",
                      "ec",
                      "-pkeyopt",
                      "ec_paramgen_curve:P-256",
                      "-nodes",
                      "-keyout",
                      key,
                      "-out",
                      cert,
                      "-days",
                      "1",
                      "-subj",
                      "/CN=localhost",
                      "-addext",
                      "subjectAltName=IP:127.0.0.1",
                      NULL};
  char *out = NULL;
  int st = fx_run(mk, 30, &out, NULL);
  ck_assert_msg(st == 0, "openssl: %s", out ? out : "");
  free(out);
  fx_server_t srv;
  char err[256];
  const char *extra[] = {"--tls-cert", cert, "--tls-key", key, NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "%s", err);
  rdev_options_t o = {.ca_file = cert};
  int want[] = {RDEV_TLS_FULL, RDEV_TLS_RESUMED, RDEV_TLS_FULL, RDEV_TLS_RESUMED, RDEV_TLS_RESUMED};
  for (int i = 0; i < 5; i++) {
    if (i == 2) o.cert_file = cert, o.key_file = key; /* another identity */
    if (i == 4) o.cert_file = o.key_file = NULL;      /* the first again */
    rdev_session_t *s = NULL;
    FX_OK(rdev_session_open(srv.target, &o, &s));
    rdev_server_info_t info;
    FX_OK(rdev_server_info(s, &info));
    ck_assert_msg(info.tls == want[i], "session %d: tls %d, want %d", i, info.tls, want[i]);
    size_t fr = 0, total = 0;
    FX_OK(rdev_mem_info(s, &fr, &total));
    ck_assert_uint_gt(total, 0);
    rdev_session_close(s);
  }
  fx_server_stop(&srv);
  unlink(cert);
  unlink(key);
  rmdir(dir);
}
END_TEST

/* rdev_server_kernels: the signatures rdev_launch is checked against. */
START_TEST(test_server_kernels) {
  rdev_session_t *s = fx_open();
  int n = -1;
  FX_OK(rdev_server_kernels(s, NULL, 0, &n));
  ck_assert_int_gt(n, 2);
  rdev_kernel_info_t k[2];
  memset(k, 0x7f, sizeof k);
  int n2 = -1;
  FX_OK(rdev_server_kernels(s, k, 2, &n2)); /* fewer slots than kernels: the count is still all of them */
  ck_assert_int_eq(n2, n);
  rdev_kernel_info_t *all = calloc((size_t)n, sizeof *all);
  ck_assert_ptr_nonnull(all);
  FX_OK(rdev_server_kernels(s, all, n, &n2));
  ck_assert_mem_eq(&all[0], &k[0], sizeof k);
  int found = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(all[i].name, "square_f32")) continue;
    found = 1;
    ck_assert_int_eq(all[i].nparams, 3);
    ck_assert_str_eq(all[i].params[0].name, "in");
    ck_assert_int_eq(all[i].params[0].type, RDEV_ARG_PTR);
    ck_assert_int_eq(all[i].params[1].type, RDEV_ARG_PTR);
    ck_assert_str_eq(all[i].params[2].name, "n");
    ck_assert_int_eq(all[i].params[2].type, RDEV_ARG_U32);
    ck_assert_uint_gt(strlen(all[i].doc), 0);
  }
  ck_assert_msg(found, "square_f32 is not listed");
  free(all);
  FX_EXPECT(rdev_server_kernels(s, NULL, 1, &n), RDEV_INVALID_PARAM);
  FX_EXPECT(rdev_server_kernels(s, k, -1, &n), RDEV_INVALID_PARAM);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_device_count_and_info) {
  rdev_session_t *s = fx_open();
  int n = -1;
  FX_OK(rdev_device_count(s, &n));
  ck_assert_int_eq(n, 2);
  for (int d = 0; d < n; d++) {
    rdev_device_info_t di;
    memset(&di, 0, sizeof di);
    FX_OK(rdev_device_info(s, d, &di));
    ck_assert_uint_gt(strlen(di.name), 0);
    ck_assert_uint_eq(di.total_bytes, FX_SIM_MEM);
    ck_assert_uint_eq(di.free_bytes, FX_SIM_MEM);
  }
  rdev_session_close(s);
}
END_TEST

/* A device's name and memory come with the open's answer: asked while
 * rdevd is frozen, they still come (a call would wait for it). */
START_TEST(test_device_props_without_a_call) {
  rdev_session_t *s = fx_open();
  int n = -1;
  FX_OK(rdev_device_count(s, &n)); /* the open's answer is in */
  ck_assert_int_eq(n, 2);
  rdev_device_info_t di[2];
  for (int d = 0; d < n; d++) FX_OK(rdev_device_info(s, d, &di[d])); /* what ListDevices says */
  ck_assert_int_eq(fx_server_freeze(&fx_srv, 10), 0);
  for (int d = 0; d < n; d++) {
    rdev_device_props_t p;
    memset(&p, 0xa5, sizeof p);
    FX_OK(rdev_device_props(s, d, &p));
    ck_assert_uint_gt(strlen(p.name), 0);
    ck_assert_str_eq(p.name, di[d].name);
    ck_assert_uint_eq(p.total_bytes, di[d].total_bytes);
    ck_assert_uint_eq(p.total_bytes, FX_SIM_MEM);
  }
  rdev_device_props_t p;
  FX_EXPECT(rdev_device_props(s, 2, &p), RDEV_RT_INVALID_DEVICEID);
  FX_EXPECT(rdev_device_props(s, -1, &p), RDEV_RT_INVALID_DEVICEID);
  FX_EXPECT(rdev_device_props(s, 0, NULL), RDEV_INVALID_PARAM);
  ck_assert_int_eq(kill(fx_srv.pid, SIGCONT), 0);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_device_info_invalid_device) {
  rdev_session_t *s = fx_open();
  rdev_device_info_t di;
  FX_EXPECT(rdev_device_info(s, 2, &di), RDEV_RT_INVALID_DEVICEID);
  FX_EXPECT(rdev_device_info(s, -1, &di), RDEV_RT_INVALID_DEVICEID);
  FX_EXPECT(rdev_device_info(s, 1000, &di), RDEV_RT_INVALID_DEVICEID);
  ck_assert_str_ne(rdev_session_last_error(), "");
  rdev_session_close(s);
}
END_TEST

START_TEST(test_device_set_get) {
  rdev_session_t *s = fx_open();
  int d = -1;
  FX_OK(rdev_device_get(s, &d));
  ck_assert_int_eq(d, 0); /* the current device of a new session */
  FX_OK(rdev_device_set(s, 1));
  FX_OK(rdev_device_get(s, &d));
  ck_assert_int_eq(d, 1);
  FX_OK(rdev_device_set(s, 0));
  FX_OK(rdev_device_get(s, &d));
  ck_assert_int_eq(d, 0);
  rdev_session_close(s);
}
END_TEST

START_TEST(test_device_set_invalid_device) {
  rdev_session_t *s = fx_open();
  FX_OK(rdev_device_set(s, 1));
  FX_EXPECT(rdev_device_set(s, 2), RDEV_RT_INVALID_DEVICEID);
  FX_EXPECT(rdev_device_set(s, -1), RDEV_RT_INVALID_DEVICEID);
  FX_EXPECT(rdev_device_set(s, 64), RDEV_RT_INVALID_DEVICEID);
  int d = -1;
  FX_OK(rdev_device_get(s, &d));
  ck_assert_int_eq(d, 1); /* unchanged by the refused sets */
  rdev_session_close(s);
}
END_TEST

/* mem info is the current device's: a malloc after set_device(1) takes from
 * device 1 only. */
START_TEST(test_device_set_selects_malloc_device) {
  rdev_session_t *s = fx_open();
  size_t fr, total;
  FX_OK(rdev_device_set(s, 1));
  void *p = NULL;
  FX_OK(rdev_malloc(s, &p, FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_mem_info(s, &fr, &total));
  ck_assert_uint_eq(total, FX_SIM_MEM);
  ck_assert_uint_eq(fr, FX_SIM_MEM - fx_reserved(FX_MiB));
  rdev_device_info_t d0, d1;
  FX_OK(rdev_device_info(s, 0, &d0));
  FX_OK(rdev_device_info(s, 1, &d1));
  ck_assert_uint_eq(d0.free_bytes, FX_SIM_MEM);
  ck_assert_uint_eq(d1.free_bytes, FX_SIM_MEM - fx_reserved(FX_MiB));
  FX_OK(rdev_device_set(s, 0));
  FX_OK(rdev_mem_info(s, &fr, &total));
  ck_assert_uint_eq(fr, FX_SIM_MEM);
  /* a buffer of device 1 stays usable with device 0 current */
  uint8_t in[4096], out[4096];
  fx_fill_random(in, sizeof in, 11);
  FX_OK(rdev_memcpy(s, p, FX_MiB, in, sizeof in, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, out, sizeof out, p, sizeof out, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(out, in, sizeof in, "device 1 buffer");
  FX_OK(rdev_free(s, p));
  FX_OK(rdev_device_set(s, 1));
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  rdev_session_close(s);
}
END_TEST

/* Free memory drops by exactly the reservation (round up to 32, +32, round up
 * to 64) and comes back after free (deferred on the server until the
 * session's streams passed their queued work: polled). */
START_TEST(test_mem_info_tracks_malloc_and_free) {
  static const size_t sizes[] = {1, 31, 32, 33, 64, 100, 4096, 1000003, 5 * FX_MiB + 3};
  rdev_session_t *s = fx_open();
  size_t free0, total;
  FX_OK(rdev_mem_info(s, &free0, &total));
  ck_assert_uint_eq(total, FX_SIM_MEM);
  ck_assert_uint_eq(free0, FX_SIM_MEM);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *p = NULL;
    size_t fr;
    FX_OK(rdev_malloc(s, &p, sizes[i], RDEV_MEM_MALLOC_HUGE_FIRST));
    FX_OK(rdev_mem_info(s, &fr, &total));
    ck_assert_msg(fr == free0 - fx_reserved(sizes[i]), "malloc(%zu): free %zu, want %zu - %zu", sizes[i], fr, free0,
                  fx_reserved(sizes[i]));
    FX_OK(rdev_free(s, p));
    fr = fx_wait_free(s, free0, 5);
    ck_assert_msg(fr == free0, "after free(%zu): free %zu, want %zu", sizes[i], fr, free0);
  }
  /* several at once add up */
  void *ps[4];
  size_t want = free0, fr;
  for (int i = 0; i < 4; i++) {
    FX_OK(rdev_malloc(s, &ps[i], 1000 * (size_t)(i + 1), RDEV_MEM_MALLOC_NORMAL_ONLY));
    want -= fx_reserved(1000 * (size_t)(i + 1));
  }
  FX_OK(rdev_mem_info(s, &fr, &total));
  ck_assert_uint_eq(fr, want);
  for (int i = 0; i < 4; i++) FX_OK(rdev_free(s, ps[i]));
  ck_assert_uint_eq(fx_wait_free(s, free0, 5), free0);
  rdev_session_close(s);
}
END_TEST

/* Closing a session releases what it still held. */
START_TEST(test_session_close_releases_memory) {
  rdev_session_t *watch = fx_open();
  rdev_session_t *s = fx_open();
  void *p = NULL, *q = NULL;
  FX_OK(rdev_malloc(s, &p, 8 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_device_set(s, 1));
  FX_OK(rdev_malloc(s, &q, 4 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_event_t *ev = NULL;
  FX_OK(rdev_event_create(s, &ev));
  size_t fr, total;
  FX_OK(rdev_mem_info(watch, &fr, &total));
  ck_assert_uint_eq(fr, FX_SIM_MEM - fx_reserved(8 * FX_MiB));
  rdev_session_close(s); /* frees the stream and event objects too */
  ck_assert_uint_eq(fx_wait_free(watch, FX_SIM_MEM, 10), FX_SIM_MEM);
  FX_OK(rdev_device_set(watch, 1));
  ck_assert_uint_eq(fx_wait_free(watch, FX_SIM_MEM, 10), FX_SIM_MEM);
  rdev_session_close(watch);
}
END_TEST

/* ---- tokens and tenants ---------------------------------------------------------- */

START_TEST(test_token_new_and_hash) {
  char a[44], b[44], h[72];
  FX_OK(rdev_token_new(a, sizeof a));
  FX_OK(rdev_token_new(b, sizeof b));
  ck_assert_uint_eq(strlen(a), 43);
  for (int i = 0; i < 43; i++)
    ck_assert_msg(isalnum((unsigned char)a[i]) || a[i] == '-' || a[i] == '_', "token char 0x%02x", a[i]);
  ck_assert_str_ne(a, b);
  FX_EXPECT(rdev_token_new(a, 43), RDEV_INVALID_PARAM);
  FX_OK(rdev_token_hash("foo", h, sizeof h));
  ck_assert_str_eq(h, "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae");
  FX_EXPECT(rdev_token_hash("foo", h, 71), RDEV_INVALID_PARAM);
}
END_TEST

/* A server with a tenants file: the token decides, the tenant sees only its
 * device (as device 0) and its memory quota. */
START_TEST(test_tenant_token_devices_and_quota) {
  char token[44];
  fx_server_t srv;
  fx_tenant_server_start(&srv, token, "devices = 1\nmem_quota = 1M\n", NULL);

  rdev_session_t *s = NULL;
  rdev_options_t o = {.connect_timeout_ms = 20000};
  /* refused every time, never a session that is already over: the open
   * rides with the first requests, so the refusal is the answer of the
   * first call that waits, and of every later one */
  int wrong = 0, first = RDEV_UNAUTHENTICATED;
  for (int i = 0; i < 100; i++) {
    o.token = i % 2 ? "not-the-token" : NULL;
    int rc = rdev_session_open(srv.target, &o, &s), later = RDEV_UNAUTHENTICATED;
    if (rc == RDEV_OK) {
      size_t fr, total;
      rdev_stream_t *st = NULL;
      rc = rdev_mem_info(s, &fr, &total);
      later = rdev_stream_create(s, &st);
      if (i == 0) ck_assert_ptr_nonnull(strstr(rdev_session_last_error(), "refused"));
      rdev_session_close(s);
    }
    if (rc != RDEV_UNAUTHENTICATED || later != RDEV_UNAUTHENTICATED) {
      if (!wrong++) first = rc != RDEV_UNAUTHENTICATED ? rc : later;
    }
    s = NULL;
  }
  ck_assert_msg(wrong == 0,
                "%d of 100 sessions without the token were not refused with RDEV_UNAUTHENTICATED (first: %d %s)", wrong,
                first, rdev_status_name(first));
  o.token = token;
  FX_OK(rdev_session_open(srv.target, &o, &s));
  int n = -1;
  FX_OK(rdev_device_count(s, &n));
  ck_assert_int_eq(n, 1);
  FX_EXPECT(rdev_device_set(s, 1), RDEV_RT_INVALID_DEVICEID);
  void *p = NULL, *q = NULL;
  FX_EXPECT(rdev_malloc(s, &p, 2 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_QUOTA_EXCEEDED);
  FX_OK(rdev_malloc(s, &p, 512 * 1024, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t in[4096], out[4096];
  fx_fill_random(in, sizeof in, 77);
  FX_OK(rdev_memcpy(s, p, 512 * 1024, in, sizeof in, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, out, sizeof out, p, sizeof out, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(out, in, sizeof in, "tenant buffer");
  FX_EXPECT(rdev_malloc(s, &q, 600 * 1024, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_QUOTA_EXCEEDED);
  FX_OK(rdev_free(s, p));
  rdev_session_close(s);
  fx_server_stop(&srv);
}
END_TEST

Suite *suite_session(void) {
  Suite *su = suite_create("session");
  TCase *tc = fx_tcase("session");
  tcase_add_test(tc, test_session_open_close);
  tcase_add_test(tc, test_session_open_bad_arguments);
  tcase_add_test(tc, test_server_info);
  tcase_add_test(tc, test_tls_session_resumed);
  tcase_add_test(tc, test_server_kernels);
  tcase_add_test(tc, test_device_count_and_info);
  tcase_add_test(tc, test_device_props_without_a_call);
  tcase_add_test(tc, test_device_info_invalid_device);
  tcase_add_test(tc, test_device_set_get);
  tcase_add_test(tc, test_device_set_invalid_device);
  tcase_add_test(tc, test_device_set_selects_malloc_device);
  tcase_add_test(tc, test_mem_info_tracks_malloc_and_free);
  tcase_add_test(tc, test_session_close_releases_memory);
  tcase_add_test(tc, test_token_new_and_hash);
  suite_add_tcase(su, tc);
  tc = tcase_create("tenants"); /* starts its own server */
  tcase_set_timeout(tc, FX_TEST_TIMEOUT);
  tcase_add_test(tc, test_tenant_token_devices_and_quota);
  suite_add_tcase(su, tc);
  return su;
}
