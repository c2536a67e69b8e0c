/*
 * tests/unit/test_job_http.c — server/jobs/job_http*.c against tests/jobs/httpd.py
 * (started here, on loopback): fetches of several bodies at once checked
 * byte for byte and by SHA-256, size limits, retries of 503s and of bodies
 * cut short (resumed by Range, or skipped when the server ignores it), the
 * allow list on URLs, redirect targets and connected addresses (a name
 * resolving to loopback), redirect limits, cancel and the deadline,
 * PUT/POST deliveries (and a 307 for PUT), and signed webhooks, their
 * signatures recomputed with OpenSSL's HMAC directly.
 */
#define _GNU_SOURCE /* pipe2 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobs/job_http.h"
#include "rdev/status.h"

#define MIB (1u << 20)

static pid_t httpd_pid;
static int httpd_in = -1, port;

static void httpd_start(void) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || (httpd_pid = fork()) < 0) {
    perror("starting tests/jobs/httpd.py");
    exit(EXIT_FAILURE);
  }
  if (!httpd_pid) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    execlp("python3", "python3", RDEV_SRC_DIR "/tests/jobs/httpd.py", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  httpd_in = in[1];
  FILE *f = fdopen(out[0], "r");
  char line[32] = "";
  if (!f || !fgets(line, sizeof line, f) || (port = atoi(line)) <= 0) {
    fprintf(stderr, "tests/jobs/httpd.py did not start\n");
    exit(EXIT_FAILURE);
  }
  fclose(f);
}

static void httpd_stop(void) {
  close(httpd_in);
  kill(httpd_pid, SIGTERM);
  waitpid(httpd_pid, NULL, 0);
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* "http://127.0.0.1:PORT" + the formatted path, in a rotating buffer. */
static const char *url(const char *fmt, ...) {
  static char bufs[8][1024];
  static int next;
  char *b = bufs[next++ % 8];
  int n = snprintf(b, 1024, "http://127.0.0.1:%d", port);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b + n, 1024 - (size_t)n, fmt, ap);
  va_end(ap);
  return b;
}

/* s percent-encoded for a query value. */
static const char *quote(const char *s) {
  static char bufs[4][2048];
  static int next;
  char *b = bufs[next++ % 4], *o = b;
  for (; *s; s++)
    if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("-._~", *s))
      *o++ = *s;
    else
      o += sprintf(o, "%%%02X", (unsigned char)*s);
  *o = 0;
  return b;
}

/* ---- the httpd's /data stream, made here independently ------------------------------ */

static uint8_t blk[MIB];
static int64_t blk_seed = -1;

static void stream(uint32_t seed, uint64_t off, uint8_t *out, size_t n) {
  if (blk_seed != seed) {
    for (uint64_t i = 0; i < MIB / 8; i++) {
      uint64_t z = (((uint64_t)seed << 32) + i + 1) * 0x9E3779B97F4A7C15ull;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      z ^= z >> 31;
      for (int b = 0; b < 8; b++) blk[8 * i + b] = (uint8_t)(z >> (8 * b));
    }
    blk_seed = seed;
  }
  while (n) {
    size_t at = (size_t)(off % MIB), k = MIB - at < n ? MIB - at : n;
    memcpy(out, blk + at, k);
    out += k, off += k, n -= k;
  }
}

static void stream_sha(uint32_t seed, uint64_t n, uint8_t sha[32]) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  uint8_t *buf = malloc(MIB);
  EVP_DigestInit_ex(c, EVP_sha256(), NULL);
  for (uint64_t off = 0; off < n; off += MIB) {
    size_t k = n - off < MIB ? (size_t)(n - off) : MIB;
    stream(seed, off, buf, k);
    EVP_DigestUpdate(c, buf, k);
  }
  EVP_DigestFinal_ex(c, sha, NULL);
  EVP_MD_CTX_free(c);
  free(buf);
}

static void hex_of(const uint8_t *b, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

/* ---- a plain client for the httpd's bookkeeping endpoints ------------------------------ */

typedef struct {
  char *b;
  size_t n, cap;
} text_t;

static size_t text_write(char *d, size_t size, size_t n, void *u) {
  text_t *t = u;
  size_t len = size * n, k = len < t->cap - 1 - t->n ? len : t->cap - 1 - t->n;
  memcpy(t->b + t->n, d, k);
  t->n += k;
  t->b[t->n] = 0;
  return len;
}

/* GETs path from the httpd into a malloc'd string; returns the HTTP code. */
static long get_text(const char *path, char **out) {
  text_t t = {malloc(4 * MIB), 0, 4 * MIB};
  t.b[0] = 0;
  CURL *e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, url("%s", path));
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, text_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  long code = 0;
  ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(e);
  *out = t.b;
  return code;
}

static long requests(void) {
  char *t;
  ck_assert_int_eq(get_text("/count", &t), 200);
  char *p = strstr(t, "\"requests\": ");
  ck_assert_ptr_nonnull(p);
  long n = atol(p + 12);
  free(t);
  return n;
}

/* The string value of "key" at or after *at in JSON text; moves *at past
 * it. 1, or 0 when there is none. */
static int json_str(const char **at, const char *key, char *out, size_t n) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": \"", key);
  const char *p = strstr(*at, pat);
  if (!p) return 0;
  p += strlen(pat);
  const char *q = strchr(p, '"');
  ck_assert_ptr_nonnull(q);
  snprintf(out, n, "%.*s", (int)(q - p), p);
  *at = q;
  return 1;
}

/* /uploaded/name/sha256 against seed's first n stream bytes and method. */
static void check_uploaded(const char *name, uint32_t seed, uint64_t n, const char *method) {
  char path[256], *t, hex[65], got[80];
  uint8_t sha[32];
  snprintf(path, sizeof path, "/uploaded/%s/sha256", name);
  ck_assert_int_eq(get_text(path, &t), 200);
  stream_sha(seed, n, sha);
  hex_of(sha, 32, hex);
  const char *at = t;
  ck_assert(json_str(&at, "sha256", got, sizeof got));
  ck_assert_str_eq(got, hex);
  char len[64];
  snprintf(len, sizeof len, "\"length\": %llu,", (unsigned long long)n);
  ck_assert_msg(strstr(t, len), "%s: %s", name, t);
  ck_assert(json_str(&at, "method", got, sizeof got));
  ck_assert_str_eq(got, method);
  free(t);
}

/* ---- options, sinks and sources ----------------------------------------------------- */

typedef struct {
  srv_http_opts_t o;
  srv_allow_t *allow;
  atomic_int cancel;
} env_t;

static void env_init(env_t *v, const char *const *prefixes) {
  memset(v, 0, sizeof *v);
  char why[256];
  for (; prefixes && *prefixes; prefixes++)
    ck_assert_msg(srv_allow_add(&v->allow, *prefixes, why, sizeof why) == 0, "%s", why);
  v->o.allow = v->allow;
  v->o.cancel = &v->cancel;
}

static void env_loopback(env_t *v) { env_init(v, (const char *const[]){url("/"), NULL}); }

/* A sink checking each byte against a seed's stream. */
typedef struct {
  uint32_t seed;
  uint64_t pos, total;
  int calls, bad, totals_varied;
} check_t;

static int check_sink(void *user, const void *data, size_t len, uint64_t total) {
  check_t *c = user;
  uint8_t buf[64 << 10];
  for (size_t done = 0; done < len;) {
    size_t k = len - done < sizeof buf ? len - done : sizeof buf;
    stream(c->seed, c->pos + done, buf, k);
    if (memcmp(buf, (const uint8_t *)data + done, k)) c->bad++;
    done += k;
  }
  if (c->calls++ && total != c->total) c->totals_varied++;
  c->total = total;
  c->pos += len;
  return RDEV_OK;
}

static int refuse_sink(void *user, const void *data, size_t len, uint64_t total) {
  ++*(int *)user;
  return RDEV_FAILURE;
}

static void get_init(srv_http_get_t *g, const char *u, uint64_t max, check_t *c, uint32_t seed) {
  memset(g, 0, sizeof *g);
  memset(c, 0, sizeof *c);
  c->seed = seed;
  g->url = u;
  g->max_bytes = max;
  g->sink = check_sink;
  g->user = c;
}

/* g fetched seed's first n bytes whole and right. */
static void assert_body(const srv_http_get_t *g, const check_t *c, uint64_t n) {
  uint8_t sha[32];
  ck_assert_msg(g->status == RDEV_OK, "%s: status %d: %s", g->url, g->status, g->error);
  ck_assert_str_eq(g->error, "");
  ck_assert_uint_eq(g->received, n);
  ck_assert_uint_eq(c->pos, n);
  ck_assert_int_eq(c->bad, 0);
  ck_assert_int_eq(c->totals_varied, 0);
  if (n) ck_assert_uint_eq(c->total, n);
  stream_sha(c->seed, n, sha);
  ck_assert_mem_eq(g->sha256, sha, 32);
}

static int fetch1(env_t *v, srv_http_get_t *g) { return srv_http_fetch(g, 1, &v->o); }

/* ---- fetch ----------------------------------------------------------------------- */

START_TEST(test_fetch_many) {
  env_t v;
  env_loopback(&v);
  static const struct {
    uint64_t n;
    uint32_t seed;
  } bodies[] = {{3000000, 11}, {1, 12}, {0, 13}, {64ull << 20, 14}, {MIB, 15}};
  enum { N = sizeof bodies / sizeof bodies[0] };
  srv_http_get_t g[N];
  check_t c[N];
  for (int i = 0; i < N; i++)
    get_init(&g[i], url("/data/%llu?seed=%u", (unsigned long long)bodies[i].n, bodies[i].seed), 1ull << 40, &c[i],
             bodies[i].seed);
  ck_assert_int_eq(srv_http_fetch(g, N, &v.o), RDEV_OK);
  for (int i = 0; i < N; i++) {
    assert_body(&g[i], &c[i], bodies[i].n);
    ck_assert_int_eq(g[i].tries, 1);
    ck_assert_int_eq(g[i].http_status, 200);
  }
  ck_assert_int_eq(srv_http_fetch(g, 0, &v.o), RDEV_OK);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_fetch_at_once) {
  /* four bodies of three 300 ms pieces each: about 0.9 s together, 3.6 s one after another */
  env_t v;
  env_loopback(&v);
  srv_http_get_t g[4];
  check_t c[4];
  for (int i = 0; i < 4; i++) get_init(&g[i], url("/slow/300/data/196608?seed=%d", 17 + i), 196608, &c[i], 17 + i);
  uint64_t t0 = mono_ms();
  ck_assert_int_eq(srv_http_fetch(g, 4, &v.o), RDEV_OK);
  uint64_t took = mono_ms() - t0;
  /* one after another takes at least 3.6 s: any bound below that shows overlap, and
   * 3 s leaves room for a loaded machine (2040 ms seen with the test suite at -j2) */
  ck_assert_msg(took < 3000, "%llu ms: the fetches did not overlap", (unsigned long long)took);
  for (int i = 0; i < 4; i++) assert_body(&g[i], &c[i], 196608);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_one_failure_stops_the_rest) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 3;
  srv_http_get_t g[2];
  check_t c[2];
  get_init(&g[0], url("/slow/200/data/20000000?seed=16"), 1ull << 40, &c[0], 16);
  get_init(&g[1], url("/status/404"), 1ull << 40, &c[1], 0);
  uint64_t t0 = mono_ms();
  ck_assert_int_eq(srv_http_fetch(g, 2, &v.o), RDEV_TRANSFER);
  ck_assert_uint_lt(mono_ms() - t0, 2000);
  ck_assert_int_eq(g[1].status, RDEV_TRANSFER);
  ck_assert_int_eq(g[1].tries, 1); /* a 404 is not retried */
  ck_assert_int_eq(g[1].http_status, 404);
  ck_assert_msg(strstr(g[1].error, "404"), "%s", g[1].error);
  ck_assert_int_eq(g[0].status, RDEV_CANCELLED);
  ck_assert_int_eq(c[0].bad, 0);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_max_bytes) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 2;
  srv_http_get_t g;
  check_t c;
  get_init(&g, url("/data/1000?seed=1"), 999, &c, 1); /* known from Content-Length */
  ck_assert_int_eq(fetch1(&v, &g), RDEV_STORAGE_OVER_LIMIT);
  ck_assert_int_eq(c.calls, 0);
  ck_assert_uint_eq(g.received, 0);
  ck_assert_int_eq(g.tries, 1);
  ck_assert_msg(strstr(g.error, "limit"), "%s", g.error);
  get_init(&g, url("/data/1000?seed=1"), 1000, &c, 1);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 1000);
  get_init(&g, url("/data/3000000?seed=2&nolength=1"), 1000000, &c, 2); /* found while counting */
  ck_assert_int_eq(fetch1(&v, &g), RDEV_STORAGE_OVER_LIMIT);
  ck_assert_uint_le(g.received, 1000000);
  ck_assert_uint_eq(c.pos, g.received);
  ck_assert_uint_eq(c.total, 0); /* the size was not known */
  ck_assert_int_eq(c.bad, 0);
  ck_assert_int_eq(g.tries, 1);
  get_init(&g, url("/data/300000?seed=2&nolength=1"), 300000, &c, 2);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  ck_assert_uint_eq(g.received, 300000);
  ck_assert_int_eq(c.bad, 0);
  /* a sink's own failure ends the fetch, unretried */
  int calls = 0;
  get_init(&g, url("/data/1000?seed=3"), 1000, &c, 3);
  g.sink = refuse_sink;
  g.user = &calls;
  ck_assert_int_eq(fetch1(&v, &g), RDEV_FAILURE);
  ck_assert_int_eq(calls, 1);
  ck_assert_int_eq(g.tries, 1);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_retries) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 3;
  srv_http_get_t g;
  check_t c;
  get_init(&g, url("/flaky/2/data/5000?seed=21"), 1ull << 30, &c, 21);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 5000);
  ck_assert_int_eq(g.tries, 3);
  v.o.retries = 1;
  get_init(&g, url("/flaky/5/data/10?seed=22"), 1ull << 30, &c, 22);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_int_eq(g.tries, 2);
  ck_assert_int_eq(g.http_status, 503);
  ck_assert_int_eq(c.calls, 0);
  get_init(&g, url("/status/404"), 1ull << 30, &c, 0);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_int_eq(g.tries, 1);
  ck_assert_int_eq(g.http_status, 404);
  get_init(&g, url("/status/429"), 1ull << 30, &c, 0);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_int_eq(g.tries, 2);
  /* nobody listening: a connect error, retried */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  ck_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0);
  char dead[64], prefix[64];
  snprintf(prefix, sizeof prefix, "http://127.0.0.1:%d/", ntohs(a.sin_port));
  snprintf(dead, sizeof dead, "http://127.0.0.1:%d/x", ntohs(a.sin_port));
  env_t d;
  env_init(&d, (const char *const[]){prefix, NULL});
  d.o.retries = 1;
  get_init(&g, dead, 100, &c, 0);
  ck_assert_int_eq(fetch1(&d, &g), RDEV_TRANSFER);
  ck_assert_int_eq(g.tries, 2);
  ck_assert_int_eq(g.http_status, 0);
  close(fd);
  srv_allow_free(d.allow);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_resume) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 2;
  srv_http_get_t g;
  check_t c;
  /* cut after 100000 bytes: the rest asked for by Range, answered 206 */
  get_init(&g, url("/cut/100000/data/3000000?seed=31"), 3000000, &c, 31);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 3000000);
  ck_assert_int_eq(g.tries, 2);
  ck_assert_int_eq(g.http_status, 206);
  char *log;
  ck_assert_int_eq(get_text("/log", &log), 200);
  ck_assert_msg(strstr(log, "\"/cut/100000/data/3000000?seed=31\", \"range\": \"bytes=100000-\""), "%s", log);
  free(log);
  /* a server that ignores Range: the whole body again, the first part skipped */
  get_init(&g, url("/cut/123457/data/2000000?seed=32&norange=1"), 2000000, &c, 32);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 2000000);
  ck_assert_int_eq(g.tries, 2);
  ck_assert_int_eq(g.http_status, 200);
  /* without retries a cut body fails */
  v.o.retries = 0;
  get_init(&g, url("/cut/1000/data/5000?seed=33"), 5000, &c, 33);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_uint_eq(g.received, 1000);
  ck_assert_int_eq(c.bad, 0);
  srv_allow_free(v.allow);
}
END_TEST

/* ---- the allow list ----------------------------------------------------------------- */

static int count_source(void *user, uint64_t off, void *buf, size_t cap, size_t *got) {
  ++*(int *)user;
  memset(buf, 'x', cap);
  *got = cap;
  return RDEV_OK;
}

START_TEST(test_refused_urls) {
  env_t v;
  env_init(&v, (const char *const[]){url("/data/"), NULL});
  srv_http_get_t g[2];
  check_t c[2];
  long before = requests();
  get_init(&g[0], url("/file/x?token=hush"), 100, &c[0], 0);
  ck_assert_int_eq(fetch1(&v, &g[0]), RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(c[0].calls, 0);
  ck_assert_int_eq(g[0].tries, 0);
  ck_assert_msg(strstr(g[0].error, "/file/x") && !strstr(g[0].error, "hush"), "%s", g[0].error);
  /* one refused URL of two: nothing at all is fetched */
  get_init(&g[0], url("/data/10?seed=1"), 100, &c[0], 1);
  get_init(&g[1], url("/status/200"), 100, &c[1], 0);
  ck_assert_int_eq(srv_http_fetch(g, 2, &v.o), RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(g[1].status, RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(g[0].status, RDEV_CANCELLED);
  ck_assert_int_eq(c[0].calls, 0);
  char u[256];
  snprintf(u, sizeof u, "http://user:pw@127.0.0.1:%d/data/10", port);
  get_init(&g[0], u, 100, &c[0], 0);
  ck_assert_int_eq(fetch1(&v, &g[0]), RDEV_PERMISSION_DENIED);
  ck_assert_msg(!strstr(g[0].error, "pw"), "%s", g[0].error);
  snprintf(u, sizeof u, "ftp://127.0.0.1:%d/data/10", port);
  get_init(&g[0], u, 100, &c[0], 0);
  ck_assert_int_eq(fetch1(&v, &g[0]), RDEV_INVALID_PARAM);
  get_init(&g[0], "not a url", 100, &c[0], 0);
  ck_assert_int_eq(fetch1(&v, &g[0]), RDEV_INVALID_PARAM);
  /* the empty list allows nothing */
  env_t none;
  env_init(&none, NULL);
  get_init(&g[0], url("/data/10?seed=1"), 100, &c[0], 1);
  ck_assert_int_eq(fetch1(&none, &g[0]), RDEV_PERMISSION_DENIED);
  int reads = 0;
  srv_http_put_t p = {
      .url = url("/upload/refused"), .method = "PUT", .size = 10, .source = count_source, .user = &reads};
  ck_assert_int_eq(srv_http_deliver(&p, &v.o), RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(reads, 0);
  srv_http_hook_t h;
  ck_assert_int_eq(srv_http_hook(url("/hook/refused"), "k", "{}", 2, &v.o, &h), RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(h.tries, 0);
  ck_assert_int_eq(requests(), before);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_redirects) {
  env_t v;
  env_init(&v, (const char *const[]){url("/redirect/"), url("/data/"), NULL});
  v.o.max_redirects = 1;
  srv_http_get_t g;
  check_t c;
  get_init(&g, url("/redirect/302?to=%s", quote(url("/data/100?seed=41"))), 100, &c, 41);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 100);
  ck_assert_int_eq(g.tries, 1);
  get_init(&g, url("/redirect/301?to=%s", quote("/data/200?seed=42")), 200, &c, 42); /* a relative Location */
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 200);
  /* a target outside the list: refused, never requested */
  long before = requests();
  get_init(&g, url("/redirect/302?to=%s", quote(url("/status/200"))), 100, &c, 0);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_PERMISSION_DENIED);
  ck_assert_msg(strstr(g.error, "/status/200"), "%s", g.error);
  ck_assert_int_eq(requests(), before + 1);
  char other[128];
  snprintf(other, sizeof other, "http://localhost:%d/data/1", port);
  get_init(&g, url("/redirect/307?to=%s", quote(other)), 100, &c, 0);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_PERMISSION_DENIED);
  get_init(&g, url("/redirect/302?to=%s", quote("file:///etc/passwd")), 100, &c, 0);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_PERMISSION_DENIED);
  /* two hops: over a limit of 1, within one of 2 */
  const char *two = url("/redirect/302?to=%s", quote(url("/redirect/303?to=%s", quote(url("/data/10?seed=43")))));
  get_init(&g, two, 100, &c, 43);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_msg(strstr(g.error, "redirects"), "%s", g.error);
  ck_assert_int_eq(g.http_status, 303);
  v.o.max_redirects = 2;
  get_init(&g, two, 100, &c, 43);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 10);
  v.o.max_redirects = 0;
  get_init(&g, url("/redirect/302?to=%s", quote(url("/data/10?seed=43"))), 100, &c, 43);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_int_eq(g.http_status, 302);
  ck_assert_int_eq(c.calls, 0);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_name_resolving_to_loopback) {
  char prefix[128], resolve[128], u[128];
  snprintf(prefix, sizeof prefix, "http://allowed.example:%d/", port);
  snprintf(resolve, sizeof resolve, "allowed.example:%d:127.0.0.1", port);
  env_t v;
  env_init(&v, (const char *const[]){prefix, NULL});
  v.o.resolve = resolve;
  v.o.retries = 2;
  long before = requests();
  srv_http_get_t g;
  check_t c;
  snprintf(u, sizeof u, "http://allowed.example:%d/data/10?seed=1", port);
  get_init(&g, u, 100, &c, 1);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_PERMISSION_DENIED);
  ck_assert_msg(strstr(g.error, "loopback"), "%s", g.error);
  ck_assert_int_eq(g.tries, 1);
  ck_assert_int_eq(c.calls, 0);
  int reads = 0;
  snprintf(u, sizeof u, "http://allowed.example:%d/upload/rebound", port);
  srv_http_put_t p = {.url = u, .method = "PUT", .size = 10, .source = count_source, .user = &reads};
  ck_assert_int_eq(srv_http_deliver(&p, &v.o), RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(reads, 0);
  srv_http_hook_t h;
  snprintf(u, sizeof u, "http://allowed.example:%d/hook/rebound", port);
  ck_assert_int_eq(srv_http_hook(u, "k", "{}", 2, &v.o, &h), RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(requests(), before);
  /* naming the address itself allows it */
  env_t w;
  env_init(&w, (const char *const[]){prefix, url("/nothing-here/"), NULL});
  w.o.resolve = resolve;
  snprintf(u, sizeof u, "http://allowed.example:%d/data/10?seed=1", port);
  get_init(&g, u, 100, &c, 1);
  ck_assert_int_eq(fetch1(&w, &g), RDEV_OK);
  assert_body(&g, &c, 10);
  srv_allow_free(w.allow);
  srv_allow_free(v.allow);
}
END_TEST

/* ---- cancel, deadline, stall --------------------------------------------------------- */

typedef struct {
  atomic_int *flag;
  int after_ms;
  uint64_t at;
} canceller_t;

static void *cancel_later(void *arg) {
  canceller_t *k = arg;
  usleep((useconds_t)k->after_ms * 1000);
  k->at = mono_ms();
  atomic_store(k->flag, 1);
  return NULL;
}

START_TEST(test_cancel) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 10;
  srv_http_get_t g;
  check_t c;
  const char *paths[] = {"/slow/100/data/50000000?seed=51", "/status/503"}; /* in a body; in the backoff */
  for (int i = 0; i < 2; i++) {
    atomic_store(&v.cancel, 0);
    get_init(&g, url("%s", paths[i]), 1ull << 30, &c, 51);
    canceller_t k = {&v.cancel, 400, 0};
    pthread_t t;
    pthread_create(&t, NULL, cancel_later, &k);
    ck_assert_int_eq(fetch1(&v, &g), RDEV_CANCELLED);
    uint64_t late = mono_ms() - k.at;
    pthread_join(t, NULL);
    ck_assert_msg(late < 1000, "%s: cancel took %llu ms", paths[i], (unsigned long long)late);
    ck_assert_int_eq(c.bad, 0);
  }
  /* cancelled before it starts: nothing is requested */
  long before = requests();
  get_init(&g, url("/data/10?seed=1"), 100, &c, 1);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_CANCELLED);
  ck_assert_int_eq(requests(), before);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_deadline_and_stall) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 10;
  srv_http_get_t g;
  check_t c;
  const char *paths[] = {"/slow/100/data/50000000?seed=52", "/status/503"};
  for (int i = 0; i < 2; i++) {
    get_init(&g, url("%s", paths[i]), 1ull << 30, &c, 52);
    uint64_t t0 = mono_ms();
    v.o.deadline_ms = t0 + 600;
    ck_assert_int_eq(fetch1(&v, &g), RDEV_RT_WAIT_TIMEOUT);
    uint64_t took = mono_ms() - t0;
    ck_assert_msg(took >= 590 && took < 1500, "%s: %llu ms", paths[i], (unsigned long long)took);
  }
  /* a body that stops moving fails after stall_s (transient) */
  v.o.deadline_ms = 0;
  v.o.retries = 0;
  v.o.stall_s = 1;
  get_init(&g, url("/slow/4000/data/200000?seed=53"), 1ull << 30, &c, 53);
  uint64_t t0 = mono_ms();
  ck_assert_int_eq(fetch1(&v, &g), RDEV_TRANSFER);
  ck_assert_uint_lt(mono_ms() - t0, 3500);
  ck_assert_int_eq(g.tries, 1);
  srv_allow_free(v.allow);
}
END_TEST

/* ---- deliver ----------------------------------------------------------------------- */

typedef struct {
  uint32_t seed;
  uint64_t size;
  int calls;
  uint64_t fail_at; /* 0: never */
} src_t;

static int stream_source(void *user, uint64_t off, void *buf, size_t cap, size_t *got) {
  src_t *s = user;
  s->calls++;
  if (s->fail_at && off >= s->fail_at) return RDEV_FAILURE;
  ck_assert_uint_lt(off, s->size);
  size_t k = s->size - off < cap ? (size_t)(s->size - off) : cap;
  stream(s->seed, off, buf, k);
  *got = k;
  return RDEV_OK;
}

static int deliver(env_t *v, const char *u, const char *method, src_t *s, srv_http_put_t *p) {
  *p = (srv_http_put_t){.url = u, .method = method, .size = s->size, .source = stream_source, .user = s};
  return srv_http_deliver(p, &v->o);
}

START_TEST(test_deliver) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 2;
  srv_http_put_t p;
  src_t s = {.seed = 61, .size = 3000000};
  ck_assert_int_eq(deliver(&v, url("/upload/put1"), "PUT", &s, &p), RDEV_OK);
  ck_assert_msg(p.status == RDEV_OK && !p.error[0], "%s", p.error);
  ck_assert_int_eq(p.http_status, 201);
  ck_assert_uint_eq(p.sent, s.size);
  ck_assert_int_eq(p.tries, 1);
  check_uploaded("put1", 61, s.size, "PUT");
  s = (src_t){.seed = 62, .size = 1500001};
  ck_assert_int_eq(deliver(&v, url("/upload/post1"), "POST", &s, &p), RDEV_OK);
  ck_assert_int_eq(p.http_status, 200);
  check_uploaded("post1", 62, s.size, "POST");
  s = (src_t){.seed = 63, .size = 0};
  ck_assert_int_eq(deliver(&v, url("/upload/empty"), "PUT", &s, &p), RDEV_OK);
  check_uploaded("empty", 63, 0, "PUT");
  /* the round trip: what was PUT comes back from /file */
  srv_http_get_t g;
  check_t c;
  get_init(&g, url("/file/put1"), 3000000, &c, 61);
  ck_assert_int_eq(fetch1(&v, &g), RDEV_OK);
  assert_body(&g, &c, 3000000);
  /* a retried delivery sends the body again from 0 */
  s = (src_t){.seed = 64, .size = 200000};
  ck_assert_int_eq(deliver(&v, url("/flaky/1/upload/flaky1"), "PUT", &s, &p), RDEV_OK);
  ck_assert_int_eq(p.tries, 2);
  check_uploaded("flaky1", 64, s.size, "PUT");
  /* the source's failure ends it, unretried */
  s = (src_t){.seed = 65, .size = 500000, .fail_at = 100000};
  ck_assert_int_eq(deliver(&v, url("/upload/broken"), "PUT", &s, &p), RDEV_FAILURE);
  ck_assert_int_eq(p.tries, 1);
  ck_assert_uint_le(p.sent, 100000 + 65536);
  ck_assert_int_eq(deliver(&v, url("/upload/x"), "GET", &s, &p), RDEV_INVALID_PARAM);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_deliver_redirects) {
  env_t v;
  env_loopback(&v);
  v.o.max_redirects = 1;
  srv_http_put_t p;
  src_t s = {.seed = 71, .size = 1000000};
  ck_assert_int_eq(deliver(&v, url("/redirect/307?to=%s", quote(url("/upload/r307"))), "PUT", &s, &p), RDEV_OK);
  ck_assert_int_eq(p.http_status, 201);
  ck_assert_uint_eq(p.sent, s.size);
  check_uploaded("r307", 71, s.size, "PUT");
  s = (src_t){.seed = 72, .size = 70000};
  ck_assert_int_eq(deliver(&v, url("/redirect/308?to=%s", quote("/upload/r308")), "POST", &s, &p), RDEV_OK);
  check_uploaded("r308", 72, s.size, "POST");
  /* 302 changes the method: not followed for a body */
  s = (src_t){.seed = 73, .size = 1000};
  ck_assert_int_eq(deliver(&v, url("/redirect/302?to=%s", quote(url("/upload/r302"))), "PUT", &s, &p), RDEV_TRANSFER);
  ck_assert_int_eq(p.http_status, 302);
  char *t;
  ck_assert_int_eq(get_text("/uploaded/r302/sha256", &t), 404);
  free(t);
  /* a 307 to a target outside the list */
  env_t w;
  env_init(&w, (const char *const[]){url("/redirect/"), NULL});
  w.o.max_redirects = 3;
  ck_assert_int_eq(deliver(&w, url("/redirect/307?to=%s", quote(url("/upload/r307b"))), "PUT", &s, &p),
                   RDEV_PERMISSION_DENIED);
  ck_assert_int_eq(get_text("/uploaded/r307b/sha256", &t), 404);
  free(t);
  srv_allow_free(w.allow);
  srv_allow_free(v.allow);
}
END_TEST

/* ---- webhooks ---------------------------------------------------------------------- */

static void hmac_hex(const char *secret, const char *ts, const char *body, size_t len, char hex[65]) {
  size_t tl = strlen(ts);
  unsigned char *msg = malloc(tl + 1 + len + 1), mac[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  memcpy(msg, ts, tl);
  msg[tl] = '.';
  memcpy(msg + tl + 1, body, len);
  ck_assert_ptr_nonnull(HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, tl + 1 + len, mac, &ml));
  ck_assert_uint_eq(ml, 32);
  hex_of(mac, 32, hex);
  free(msg);
}

/* Checks the records at /hooks/name: n of them, each body and signature right. */
static void check_hooks(const char *name, int n, const char *secret, const char *body, long long lo, long long hi) {
  char path[128], *t, ts[32], sig[80], ctype[64], bhex[1024], want_hex[1024], mine[65], theirs[65];
  snprintf(path, sizeof path, "/hooks/%s", name);
  ck_assert_int_eq(get_text(path, &t), 200);
  const char *at = t;
  int seen = 0;
  hex_of((const uint8_t *)body, strlen(body), want_hex);
  while (json_str(&at, "timestamp", ts, sizeof ts)) {
    seen++;
    ck_assert(json_str(&at, "signature", sig, sizeof sig));
    ck_assert(json_str(&at, "content_type", ctype, sizeof ctype));
    ck_assert(json_str(&at, "body_hex", bhex, sizeof bhex));
    ck_assert_str_eq(ctype, "application/json");
    ck_assert_str_eq(bhex, want_hex);
    long long when = atoll(ts);
    ck_assert(when >= lo && when <= hi);
    srv_http_sign(secret, when, body, strlen(body), mine);
    hmac_hex(secret, ts, body, strlen(body), theirs);
    ck_assert_str_eq(mine, theirs);
    ck_assert_int_eq(strncmp(sig, "v1=", 3), 0);
    ck_assert_str_eq(sig + 3, theirs);
  }
  ck_assert_int_eq(seen, n);
  free(t);
}

START_TEST(test_hooks) {
  env_t v;
  env_loopback(&v);
  v.o.retries = 3;
  const char *secret = "s3cret-Key", *body = "{\"job\":\"j-1\",\"state\":\"done\",\"n\":\"\\u00e9\"}";
  srv_http_hook_t h;
  long long t0 = (long long)time(NULL);
  ck_assert_int_eq(srv_http_hook(url("/hook/h1"), secret, body, strlen(body), &v.o, &h), RDEV_OK);
  long long t1 = (long long)time(NULL);
  ck_assert_msg(!h.error[0], "%s", h.error);
  ck_assert_int_eq(h.http_status, 200);
  ck_assert_int_eq(h.tries, 1);
  ck_assert(h.at_ms >= t0 * 1000 && h.at_ms <= (t1 + 1) * 1000);
  check_hooks("h1", 1, secret, body, t0, t1);
  /* two 500s, then recorded; every try signed afresh */
  ck_assert_int_eq(srv_http_hook(url("/hookfail/2/h2"), secret, body, strlen(body), &v.o, &h), RDEV_OK);
  ck_assert_int_eq(h.tries, 3);
  check_hooks("h2", 1, secret, body, t0, (long long)time(NULL));
  v.o.retries = 1;
  ck_assert_int_eq(srv_http_hook(url("/hookfail/5/h3"), secret, body, strlen(body), &v.o, &h), RDEV_TRANSFER);
  ck_assert_int_eq(h.tries, 2);
  ck_assert_int_eq(h.http_status, 500);
  ck_assert(h.error[0]);
  check_hooks("h3", 0, secret, body, 0, 0);
  /* no redirect is followed, whatever max_redirects says */
  v.o.max_redirects = 5;
  ck_assert_int_eq(srv_http_hook(url("/redirect/307?to=%s", quote("/hook/h4")), secret, body, strlen(body), &v.o, &h),
                   RDEV_TRANSFER);
  ck_assert_int_eq(h.tries, 1);
  ck_assert_int_eq(h.http_status, 307);
  check_hooks("h4", 0, secret, body, 0, 0);
  srv_allow_free(v.allow);
}
END_TEST

START_TEST(test_sign) {
  const struct {
    const char *secret, *body;
    long long ts;
  } cases[] = {{"k", "", 0},
               {"s3cret", "{\"a\":1}", 1700000000},
               {"", "x", -5},
               {"a key longer than the sixty-four bytes of a SHA-256 block, so that HMAC hashes it first", "{}", 42}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char ts[32], mine[65], theirs[65];
    snprintf(ts, sizeof ts, "%lld", cases[i].ts);
    srv_http_sign(cases[i].secret, cases[i].ts, cases[i].body, strlen(cases[i].body), mine);
    hmac_hex(cases[i].secret, ts, cases[i].body, strlen(cases[i].body), theirs);
    ck_assert_str_eq(mine, theirs);
    ck_assert_uint_eq(strlen(mine), 64);
  }
  /* a fixed vector: HMAC-SHA256("key", "0.The quick brown fox jumps over the lazy dog") */
  char hex[65];
  const char *fox = "The quick brown fox jumps over the lazy dog";
  srv_http_sign("key", 0, fox, strlen(fox), hex);
  char want[65];
  hmac_hex("key", "0", fox, strlen(fox), want);
  ck_assert_str_eq(hex, want);
}
END_TEST

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  httpd_start();
  Suite *s = suite_create("job_http");
  TCase *tc = tcase_create("job_http");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fetch_many);
  tcase_add_test(tc, test_fetch_at_once);
  tcase_add_test(tc, test_one_failure_stops_the_rest);
  tcase_add_test(tc, test_max_bytes);
  tcase_add_test(tc, test_retries);
  tcase_add_test(tc, test_resume);
  tcase_add_test(tc, test_refused_urls);
  tcase_add_test(tc, test_redirects);
  tcase_add_test(tc, test_name_resolving_to_loopback);
  tcase_add_test(tc, test_cancel);
  tcase_add_test(tc, test_deadline_and_stall);
  tcase_add_test(tc, test_deliver);
  tcase_add_test(tc, test_deliver_redirects);
  tcase_add_test(tc, test_hooks);
  tcase_add_test(tc, test_sign);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  httpd_stop();
  curl_global_cleanup();
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
