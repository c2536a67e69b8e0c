/*
 * tests/integration/test_metrics.c — what rdevd tells its operator: the
 * Prometheus metrics (--metrics-listen 127.0.0.1:0, scraped with libcurl)
 * count exactly the bytes and requests two tenants' workloads moved, the
 * errors by code of a bad request, and a wrong token's authentication
 * failure; the gRPC health check says NOT_SERVING during a drain while
 * the sessions open may still finish, and new sessions are refused.
 */
#include <curl/curl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

typedef struct {
  char *p;
  size_t len;
} body_t;

static size_t on_body(char *data, size_t size, size_t n, void *user) {
  body_t *b = user;
  char *p = realloc(b->p, b->len + size * n + 1);
  if (!p) return 0;
  memcpy(p + b->len, data, size * n);
  b->p = p;
  b->len += size * n;
  b->p[b->len] = '\0';
  return size * n;
}

/* GET http://127.0.0.1:port/path: the body (caller frees), the HTTP code in *code. */
static char *http_get(int port, const char *path, long *code) {
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  body_t b = {0};
  CURL *c = curl_easy_init();
  ck_assert_ptr_nonnull(c);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
  CURLcode rc = curl_easy_perform(c);
  ck_assert_msg(rc == CURLE_OK, "GET %s: %s", url, curl_easy_strerror(rc));
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
  curl_easy_cleanup(c);
  return b.p ? b.p : strdup("");
}

static char *scrape(int port) {
  long code = 0;
  char *text = http_get(port, "/metrics", &code);
  ck_assert_int_eq(code, 200);
  return text;
}

/* The value of the sample whose name and labels are exactly series
 * ("name{a=\"x\",b=\"y\"}"), or -1 when the scrape has none. */
static double sample(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
    if (!strncmp(p, series, n) && p[n] == ' ') return strtod(p + n + 1, NULL);
  return -1;
}

#define ASSERT_SAMPLE(text, want, ...) \
  do { \
    char series_[256]; \
    snprintf(series_, sizeof series_, __VA_ARGS__); \
    double got_ = sample(text, series_); \
    ck_assert_msg(got_ == (double)(want), "%s is %.0f, want %.0f", series_, got_, (double)(want)); \
  } while (0)

/* The metrics port rdevd printed ("rdevd metrics on port N"), from its stdout file. */
static int metrics_port(const fx_server_t *srv) {
  char out[1024];
  ssize_t n = pread(srv->out_fd, out, sizeof out - 1, 0);
  ck_assert_int_gt(n, 0);
  out[n] = '\0';
  const char *at = strstr(out, "rdevd metrics on port ");
  ck_assert_msg(at != NULL, "rdevd did not print its metrics port: '%s'", out);
  int port = atoi(at + strlen("rdevd metrics on port "));
  ck_assert_int_gt(port, 0);
  return port;
}

/* Starts rdevd with metrics and two tenants, alpha and beta (tokens into ta and tb). */
static void start_two_tenants(fx_server_t *srv, char ta[44], char tb[44], const char *drain_ms) {
  char ha[72], hb[72], path[] = "/tmp/rdev-itest-metrics-XXXXXX";
  FX_OK(rdev_token_new(ta, 44));
  FX_OK(rdev_token_new(tb, 44));
  FX_OK(rdev_token_hash(ta, ha, sizeof ha));
  FX_OK(rdev_token_hash(tb, hb, sizeof hb));
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  char text[512];
  int len =
      snprintf(text, sizeof text, "[tenant alpha]\ntoken = %s\n[tenant beta]\ntoken = %s\nmem_quota = 16M\n", ha, hb);
  ck_assert_int_eq(write(fd, text, (size_t)len), len);
  close(fd);
  const char *extra[] = {"--tenants",   path,         "--log-level", "error", "--metrics-listen",
                         "127.0.0.1:0", "--drain-ms", drain_ms,      NULL};
  char err[512];
  int started = fx_server_start(srv, extra, err, sizeof err);
  unlink(path);
  ck_assert_msg(started == 0, "cannot start rdevd: %s", err);
}

static rdev_session_t *open_as(const fx_server_t *srv, const char *token) {
  rdev_options_t o;
  memset(&o, 0, sizeof o);
  o.token = token;
  rdev_session_t *s = NULL;
  FX_OK(rdev_session_open(srv->target, &o, &s));
  return s;
}

/* One tenant's workload on device dev: h2d bytes in writes of the sizes
 * given (a sync and an async one), d2h bytes back, d2d bytes copied. */
static void workload(rdev_session_t *s, int dev, size_t h2d_sync, size_t h2d_async, size_t d2h, size_t d2d) {
  FX_OK(rdev_device_set(s, dev));
  size_t size = 1 << 20;
  void *a = NULL, *b = NULL;
  FX_OK(rdev_malloc(s, &a, size, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_malloc(s, &b, size, RDEV_MEM_MALLOC_HUGE_FIRST));
  char *host = fx_xmalloc(size);
  fx_fill_random(host, size, 7);
  FX_OK(rdev_memcpy(s, a, size, host, h2d_sync, RDEV_MEMCPY_HOST_TO_DEVICE));
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_memcpy_async(s, (char *)a + 65536 * 4, size - 65536 * 4, host, h2d_async, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s, b, size, a, d2d, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  char *back = fx_xmalloc(size);
  FX_OK(rdev_memcpy(s, back, size, b, d2h, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, host, d2h < d2d ? d2h : d2d, "d2h after d2d");
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, b));
  size_t fr, total;
  FX_OK(rdev_mem_info(s, &fr, &total)); /* a round trip: whatever waited to be sent went with it */
  free(host);
  free(back);
}

START_TEST(test_metrics_count_two_tenants) {
  fx_server_t srv;
  char ta[44], tb[44];
  start_two_tenants(&srv, ta, tb, "5000");
  int port = metrics_port(&srv);
  curl_global_init(CURL_GLOBAL_DEFAULT);

  long code = 0;
  free(http_get(port, "/nope", &code));
  ck_assert_int_eq(code, 404);

  rdev_session_t *a = open_as(&srv, ta), *b = open_as(&srv, tb);
  workload(a, 0, 300000, 100000, 200000, 8192);
  workload(b, 1, 1000, 5000, 777, 64);
  /* one bad request of beta's: a kernel the server does not have */
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(b, &st));
  int rc = rdev_launch(st, "no_such_kernel", 1, NULL, 0);
  if (rc == RDEV_OK) rc = rdev_stream_synchronize(st);
  ck_assert_int_eq(rc, RDEV_UNKNOWN_KERNEL);
  /* a wrong token: refused at the call */
  rdev_session_t *w = open_as(&srv, "not-a-token-of-anyone");
  size_t fr, total;
  FX_EXPECT(rdev_mem_info(w, &fr, &total), RDEV_UNAUTHENTICATED);
  rdev_session_close(w);

  char *m = scrape(port);
  ASSERT_SAMPLE(m, 300000 + 100000, "rdev_copy_bytes_total{tenant=\"alpha\",device=\"0\",direction=\"h2d\"}");
  ASSERT_SAMPLE(m, 200000, "rdev_copy_bytes_total{tenant=\"alpha\",device=\"0\",direction=\"d2h\"}");
  ASSERT_SAMPLE(m, 8192, "rdev_copy_bytes_total{tenant=\"alpha\",device=\"0\",direction=\"d2d\"}");
  ASSERT_SAMPLE(m, 0, "rdev_copy_bytes_total{tenant=\"alpha\",device=\"1\",direction=\"h2d\"}");
  ASSERT_SAMPLE(m, 1000 + 5000, "rdev_copy_bytes_total{tenant=\"beta\",device=\"1\",direction=\"h2d\"}");
  ASSERT_SAMPLE(m, 777, "rdev_copy_bytes_total{tenant=\"beta\",device=\"1\",direction=\"d2h\"}");
  ASSERT_SAMPLE(m, 64, "rdev_copy_bytes_total{tenant=\"beta\",device=\"1\",direction=\"d2d\"}");
  ASSERT_SAMPLE(m, 0, "rdev_copy_bytes_total{tenant=\"beta\",device=\"0\",direction=\"h2d\"}");
  for (int i = 0; i < 2; i++) {
    const char *t = i ? "beta" : "alpha";
    ASSERT_SAMPLE(m, 2, "rdev_requests_total{tenant=\"%s\",kind=\"malloc\"}", t);
    ASSERT_SAMPLE(m, 1, "rdev_requests_total{tenant=\"%s\",kind=\"free\"}", t);
    ASSERT_SAMPLE(m, 2, "rdev_requests_total{tenant=\"%s\",kind=\"write\"}", t);
    ASSERT_SAMPLE(m, 1, "rdev_requests_total{tenant=\"%s\",kind=\"read\"}", t);
    ASSERT_SAMPLE(m, 1, "rdev_requests_total{tenant=\"%s\",kind=\"copy\"}", t);
    ASSERT_SAMPLE(m, 1, "rdev_requests_total{tenant=\"%s\",kind=\"stream_destroy\"}", t);
  }
  ASSERT_SAMPLE(m, 1, "rdev_requests_total{tenant=\"alpha\",kind=\"stream_create\"}");
  ASSERT_SAMPLE(m, 2, "rdev_requests_total{tenant=\"beta\",kind=\"stream_create\"}");
  ASSERT_SAMPLE(m, 1, "rdev_requests_total{tenant=\"beta\",kind=\"launch\"}");
  ASSERT_SAMPLE(m, 1, "rdev_errors_total{tenant=\"beta\",code=\"900007\",name=\"UNKNOWN_KERNEL\"}");
  ck_assert_ptr_null(strstr(m, "rdev_errors_total{tenant=\"alpha\""));
  ASSERT_SAMPLE(m, 1, "rdev_auth_failures_total{reason=\"unknown_token\"}");
  ASSERT_SAMPLE(m, 0, "rdev_auth_failures_total{reason=\"no_token\"}");
  /* gauges, at scrape time: beta's session holds its stream and a buffer */
  ASSERT_SAMPLE(m, 1, "rdev_sessions{tenant=\"alpha\"}");
  ASSERT_SAMPLE(m, 1, "rdev_streams{tenant=\"beta\",device=\"1\"}");
  ASSERT_SAMPLE(m, 0, "rdev_streams{tenant=\"alpha\",device=\"0\"}");
  ASSERT_SAMPLE(m, fx_reserved(1 << 20), "rdev_device_memory_used_bytes{tenant=\"beta\",device=\"1\"}");
  ASSERT_SAMPLE(m, 16 << 20, "rdev_device_memory_quota_bytes{tenant=\"beta\",device=\"0\"}");
  ck_assert_ptr_nonnull(strstr(m, "rdev_device_memory_quota_bytes{tenant=\"alpha\",device=\"0\"} +Inf\n"));
  /* device time was charged to each tenant on its own device */
  char series[160];
  snprintf(series, sizeof series, "rdev_device_busy_seconds_total{tenant=\"alpha\",device=\"0\",work=\"copy\"}");
  ck_assert_msg(sample(m, series) > 0, "%s: %f", series, sample(m, series));
  snprintf(series, sizeof series, "rdev_device_busy_seconds_total{tenant=\"alpha\",device=\"1\",work=\"copy\"}");
  ck_assert_msg(sample(m, series) == 0, "%s: %f", series, sample(m, series));
  /* work on streams waited for a slot (beta: its async write, on device 1 alone) */
  ASSERT_SAMPLE(m, 1, "rdev_slot_wait_seconds_count{tenant=\"beta\",device=\"1\"}");
  ASSERT_SAMPLE(m, 0, "rdev_slot_wait_seconds_count{tenant=\"beta\",device=\"0\"}");
  ck_assert_msg(sample(m, "process_resident_memory_bytes") > (1 << 20), "resident memory");
  ck_assert_msg(sample(m, "process_open_fds") > 3, "open fds");
  ck_assert_msg(sample(m, "process_cpu_seconds_total") > 0, "cpu seconds");
  ck_assert_msg(sample(m, "process_start_time_seconds") > 1.6e9, "start time");
  ck_assert_ptr_nonnull(strstr(m, "# TYPE rdev_copy_bytes_total counter\n"));
  ck_assert_ptr_nonnull(strstr(m, "# TYPE rdev_slot_wait_seconds histogram\n"));
  free(m);

  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(a);
  rdev_session_close(b);
  m = scrape(port); /* what the sessions held went with them; counters stay */
  ASSERT_SAMPLE(m, 0, "rdev_sessions{tenant=\"beta\"}");
  ASSERT_SAMPLE(m, 0, "rdev_device_memory_used_bytes{tenant=\"beta\",device=\"1\"}");
  ASSERT_SAMPLE(m, 777, "rdev_copy_bytes_total{tenant=\"beta\",device=\"1\",direction=\"d2h\"}");
  free(m);
  curl_global_cleanup();
  fx_server_stop(&srv);
}
END_TEST

static rdev_health_t health(const char *target, const char *service, int *rc) {
  rdev_health_t h = RDEV_HEALTH_UNKNOWN;
  rdev_options_t o;
  memset(&o, 0, sizeof o);
  o.connect_timeout_ms = 3000;
  *rc = rdev_health_check(target, service, &o, &h);
  return h;
}

START_TEST(test_health_not_serving_during_drain) {
  fx_server_t srv;
  char ta[44], tb[44];
  start_two_tenants(&srv, ta, tb, "20000");
  int rc, port = metrics_port(&srv);
  ck_assert_int_eq(health(srv.target, "", &rc), RDEV_HEALTH_SERVING);
  FX_OK(rc);
  ck_assert_int_eq(health(srv.target, "rdev.v1.Device", &rc), RDEV_HEALTH_SERVING);
  ck_assert_int_eq(health(srv.target, "no.such.Service", &rc), RDEV_HEALTH_UNKNOWN);
  ck_assert_int_ne(rc, RDEV_OK);
  /* the rdev tool says so too, as a probe would */
  char *out = NULL;
  const char *argv_ok[] = {fx_rdev_path, "--target", srv.target, "health", NULL};
  int st = fx_run(argv_ok, 30, &out, NULL);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0 && strstr(out, "SERVING"), "rdev health: %s", out);
  free(out);

  rdev_session_t *a = open_as(&srv, ta); /* holds the drain open */
  void *d = NULL;
  size_t free_b, total_b;
  FX_OK(rdev_malloc(a, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_mem_info(a, &free_b, &total_b)); /* a call that waits: the session is open, the memory held */
  ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
  double deadline = fx_now() + 10;
  while (health(srv.target, "", &rc) != RDEV_HEALTH_NOT_SERVING) {
    ck_assert_msg(fx_now() < deadline, "health still not NOT_SERVING 10 s into the drain (rc %d)", rc);
    fx_sleep_ms(20);
  }
  ck_assert_int_eq(health(srv.target, "rdev.v1.Device", &rc), RDEV_HEALTH_NOT_SERVING);
  const char *argv_svc[] = {fx_rdev_path, "health", "--target", srv.target, "--service", "rdev.v1.Device", NULL};
  st = fx_run(argv_svc, 30, &out, NULL);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1 && strstr(out, "NOT_SERVING"), "rdev health: %s", out);
  free(out);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *m = scrape(port);
  ASSERT_SAMPLE(m, 0, "rdev_serving");
  free(m);
  curl_global_cleanup();
  /* the session open goes on; a new one is refused */
  size_t fr, total;
  FX_OK(rdev_memset(a, d, 4096, 1, 4096));
  rdev_session_t *late = open_as(&srv, tb);
  FX_EXPECT(rdev_mem_info(late, &fr, &total), RDEV_UNAVAILABLE);
  rdev_session_close(late);
  rdev_session_close(a); /* the last session: the drain ends */
  st = fx_server_wait(&srv, 15);
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "rdevd did not end the drain when its sessions did");
  /* gone: a probe says so */
  const char *argv_gone[] = {fx_rdev_path, "--target", srv.target, "health", "--timeout", "500", NULL};
  st = fx_run(argv_gone, 30, &out, NULL);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "rdev health of a stopped server: %s", out);
  free(out);
}
END_TEST

Suite *suite_metrics(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tcase_create("metrics");
  tcase_set_timeout(tc, FX_TEST_TIMEOUT);
  tcase_add_test(tc, test_metrics_count_two_tenants);
  tcase_add_test(tc, test_health_not_serving_during_drain);
  suite_add_tcase(s, tc);
  return s;
}
