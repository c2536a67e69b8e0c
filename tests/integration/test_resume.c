/*
 * tests/integration/test_resume.c — a session outlives its connection
 * (rdev.proto, "Resume"): the connection is cut under pipelined work,
 * copies both ways, a host function and kernel print output; each
 * completes after the library reconnected, byte for byte and exactly
 * once. A break longer than rdevd's window ends the session with
 * RDEV_UNAVAILABLE, and rdevd frees what it held.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chaos_proxy.h"
#include "fixture.h"

/* A proxy in front of an rdevd's gRPC port (tests/chaos/chaos_proxy.h):
 * sessions open to its target, and a cut there is a network's. Listening
 * on 127.0.0.1 as rdevd does, it leaves the bulk connection alone (the
 * client attaches it to rdevd's port on the host its call reached); with
 * bulk_port, a second route on 127.0.0.2 carries that too (rdevd then
 * listens for it on 127.0.0.1:bulk_port, which the client finds on
 * 127.0.0.2). */
typedef struct {
  chaos_proxy_t *p;
  char target[64];
} via_t;

static void via_open(via_t *v, const char *upstream, int bulk_port) {
  char err[256] = "", bulk_up[64], bulk_on[64];
  v->p = chaos_proxy_new();
  ck_assert_ptr_nonnull(v->p);
  char on[64];
  snprintf(on, sizeof on, "%s:0", bulk_port ? "127.0.0.2" : "127.0.0.1");
  ck_assert_msg(chaos_proxy_listen(v->p, on, upstream, v->target, sizeof v->target, err, sizeof err) == 0, "proxy: %s",
                err);
  if (!bulk_port) return;
  snprintf(bulk_on, sizeof bulk_on, "127.0.0.2:%d", bulk_port);
  snprintf(bulk_up, sizeof bulk_up, "127.0.0.1:%d", bulk_port);
  ck_assert_msg(chaos_proxy_listen(v->p, bulk_on, bulk_up, NULL, 0, err, sizeof err) == 1, "bulk route: %s", err);
}

static int some_live(const chaos_counters_t *c, void *arg) {
  (void)arg;
  return c->live > 0;
}

/* Cuts every connection the proxy carries (resets), once it carries one
 * (the session may still be resuming from the last cut), and refuses new
 * ones for refuse_ms. */
static void cut(via_t *v, int refuse_ms) {
  ck_assert_msg(chaos_proxy_wait(v->p, CHAOS_ALL_ROUTES, some_live, NULL, 20000) == 0, "no connection to cut");
  chaos_proxy_cut(v->p, CHAOS_ALL_ROUTES, CHAOS_RST, refuse_ms);
}

/* A session through the proxy, once rdevd answered its open: before that
 * it has no key to resume with (docs/reliability.md), and a cut under a
 * loaded machine could come first. */
static rdev_session_t *open_via(via_t *v) {
  rdev_session_t *s = fx_open_target(v->target);
  int ndev = 0;
  FX_OK(rdev_device_count(s, &ndev));
  return s;
}

/* x = 1; then for each op i: bit i of the pattern says x += 1, else x *= 2
 * (mod 2^32): a lost, repeated or reordered op changes the result. */
static uint32_t model(uint64_t pattern, int n) {
  uint32_t x = 1;
  for (int i = 0; i < n; i++) x = pattern >> (i % 64) & 1 ? x + 1 : x * 2;
  return x;
}

static void queue_ops(rdev_stream_t *st, uint32_t *d, uint64_t pattern, int from, int to) {
  rdev_arg_t a = fx_ptr(d);
  for (int i = from; i < to; i++) FX_OK(rdev_launch(st, pattern >> (i % 64) & 1 ? "inc_u32" : "double_u32", 1, &a, 1));
}

/* 10,000 pipelined kernel launches with the connection cut three times
 * among them: after the synchronize the counter shows each ran once, in
 * order. */
START_TEST(test_pipelined_ops_survive_cuts) {
  via_t v;
  via_open(&v, fx_srv.target, 0);
  rdev_session_t *s = open_via(&v);
  rdev_stream_t *st = NULL;
  uint32_t *d = NULL, one = 1, got = 0;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, (void **)&d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, 4, &one, 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  const uint64_t pattern = 0x9e3779b97f4a7c15ull;
  const int n = 10000;
  for (int part = 0; part < 4; part++) {
    queue_ops(st, d, pattern, part * n / 4, (part + 1) * n / 4);
    if (part < 3) cut(&v, 0);
  }
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_uint_eq(got, model(pattern, n));
  FX_OK(rdev_free(s, d));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  ck_assert_uint_ge(chaos_proxy_counters(v.p, CHAOS_ALL_ROUTES).cuts, 3);
  chaos_proxy_free(v.p);
}
END_TEST

/* Synchronous copies of 32 MiB each way with the connection cut while
 * they run (a thread cuts; bulk: the bulk connection too): both complete,
 * byte for byte. */
typedef struct {
  via_t *v;
  int delay_ms;
} cutter_t;

static void *cutter(void *arg) {
  cutter_t *c = arg;
  fx_sleep_ms(c->delay_ms);
  cut(c->v, 0);
  return NULL;
}

/* back holds what h holds: else where they first differ. */
static void check_same(const uint8_t *h, const uint8_t *back, size_t n, const char *what, int delay_ms) {
  size_t i = fx_first_diff(h, back, n);
  ck_assert_msg(i == n, "%s through a cut (after %d ms) differs from byte %zu of %zu (MiB %zu: %d, not %d)", what,
                delay_ms, i, n, i >> 20, i < n ? back[i] : 0, i < n ? h[i] : 0);
}

/* An H2D with a cut (checked by a D2H without), then a D2H with one. */
static void copy_with_cut(via_t *v, rdev_session_t *s, void *d, uint8_t *h, uint8_t *back, size_t n, int delay_ms) {
  cutter_t c = {v, delay_ms};
  pthread_t t;
  memset(back, 0, n);
  FX_OK(rdev_memcpy(s, d, n, back, n, RDEV_MEMCPY_HOST_TO_DEVICE)); /* zeroes first */
  ck_assert_int_eq(pthread_create(&t, NULL, cutter, &c), 0);
  FX_OK(rdev_memcpy(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  pthread_join(t, NULL);
  FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  check_same(h, back, n, "an H2D", delay_ms);
  memset(back, 0, n);
  ck_assert_int_eq(pthread_create(&t, NULL, cutter, &c), 0);
  FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  pthread_join(t, NULL);
  check_same(h, back, n, "a D2H", delay_ms);
}

/* Through a proxy in front of target (bulk_port: carrying the bulk
 * connection too), copies with cuts at 0, 10 and 20 ms. */
static void copies_with_cuts(const char *target, int bulk_port) {
  via_t v;
  via_open(&v, target, bulk_port);
  rdev_session_t *s = open_via(&v);
  const size_t n = (size_t)32 << 20;
  void *d = NULL;
  uint8_t *h = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(h, n, 7);
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  for (int delay = 0; delay <= 20; delay += 10) copy_with_cut(&v, s, d, h, back, n, delay);
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
  chaos_proxy_free(v.p);
  free(h);
  free(back);
}

START_TEST(test_copies_survive_a_cut) { copies_with_cuts(fx_srv.target, 0); }
END_TEST

/* Starts an rdevd of this test's whose bulk port a proxy may take on
 * 127.0.0.2 (via_open), with more options (an option and its value, or
 * NULL): that port. */
static int server_with_bulk_port_and(fx_server_t *srv, const char *opt, const char *value) {
  int port = chaos_proxy_free_port("127.0.0.2");
  ck_assert_int_gt(port, 0);
  char bulk[32], err[512];
  snprintf(bulk, sizeof bulk, "127.0.0.1:%d", port);
  const char *extra[] = {"--bulk-listen", bulk, opt, value, NULL};
  ck_assert_msg(fx_server_start(srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  return port;
}

static int server_with_bulk_port(fx_server_t *srv) { return server_with_bulk_port_and(srv, NULL, NULL); }

/* The same with the bulk connection cut as well: the bytes a copy lost
 * with it go again on the next one (D2H frames from rdevd, H2D DATA from
 * the client), and the copies after go on the next bulk connection, or
 * in-band until it is in. */
START_TEST(test_copies_survive_a_bulk_cut) {
  fx_server_t srv;
  int port = server_with_bulk_port(&srv);
  copies_with_cuts(srv.target, port);
  fx_server_stop(&srv);
}
END_TEST

/* The end of a test whose session rdevd ended: s closed, the proxy gone,
 * rdevd's device memory back to fr0 bytes free within timeout_s (rdevd
 * freed the session), and rdevd stopped. */
static void freed_then_stop(fx_server_t *srv, via_t *v, rdev_session_t *s, size_t fr0, double timeout_s) {
  rdev_session_close(s);
  chaos_proxy_free(v->p);
  rdev_session_t *s2 = fx_open_target(srv->target);
  ck_assert_uint_eq(fx_wait_free(s2, fr0, timeout_s), fr0);
  rdev_session_close(s2);
  fx_server_stop(srv);
}

/* Until s's bulk connection is in (1), or 10 s passed (0); with v, one
 * that came through v's bulk route after its first `since` connections. */
static int bulk_in(rdev_session_t *s, via_t *v, uint64_t since) {
  double until = fx_now() + 10;
  while (v && chaos_proxy_counters(v->p, 1).accepted <= since && fx_now() < until) fx_sleep_ms(5);
  while (!rdev_session_bulk(s) && fx_now() < until) fx_sleep_ms(5);
  return rdev_session_bulk(s) && (!v || chaos_proxy_counters(v->p, 1).accepted > since);
}

/* Copies of 256 MiB (64 under TSan) with a cut inside: a synchronous H2D
 * and D2H each with the bulk connection reset a quarter to three quarters
 * in, then an async H2D and D2H on one stream with every connection cut
 * 30 ms in (the call's too: a resume). Each lands byte for byte, once. */
START_TEST(test_large_copies_survive_cuts) {
  fx_server_t srv;
  int port = server_with_bulk_port_and(&srv, "--sim-mem", "320M");
  via_t v;
  via_open(&v, srv.target, port);
  rdev_session_t *s = open_via(&v);
#ifdef __SANITIZE_THREAD__
  const size_t n = (size_t)64 << 20; /* what races there are do not need the size; TSan's copies are 10x slower */
#else
  const size_t n = (size_t)256 << 20;
#endif
  uint8_t *h = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(h, n, 43);
  void *d = NULL;
  rdev_stream_t *st = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_stream_create(s, &st));
  ck_assert_msg(bulk_in(s, NULL, 0), "no bulk connection at first");
  for (int i = 0; i < 2; i++) { /* 0: H2D, 1: D2H, each with the bulk connection reset inside */
    uint64_t cuts = chaos_proxy_counters(v.p, 1).random_cuts;
    memset(back, 0, n);
    if (i == 0) FX_OK(rdev_memset(s, d, n, 0, n));
    ck_assert_msg(bulk_in(s, NULL, 0), "%d: no bulk connection", i);
    chaos_proxy_random_cut(v.p, 1, n / 4, 3 * (n / 4), 1000, 50 + (uint64_t)i, CHAOS_RST);
    FX_OK(i == 0 ? rdev_memcpy(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE)
                 : rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    chaos_proxy_random_cut(v.p, 1, 1, 1, 0, 0, CHAOS_RST);
    ck_assert_msg(chaos_proxy_counters(v.p, 1).random_cuts > cuts, "%d: the copy was not cut", i);
    if (i == 0) FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, h, n, "%s of %zu MiB through a bulk cut", i == 0 ? "sync H2D" : "sync D2H", n >> 20);
  }
  FX_OK(rdev_memset(s, d, n, 0, n));
  memset(back, 0, n);
  ck_assert_msg(bulk_in(s, NULL, 0), "no bulk connection for the async copies");
  cutter_t c = {&v, 30};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, cutter, &c), 0);
  FX_OK(rdev_memcpy_async(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  FX_OK(rdev_memcpy_async(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  pthread_join(t, NULL);
  FX_ASSERT_BYTES(back, h, n, "async H2D then D2H of %zu MiB through a cut of every connection", n >> 20);
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
  chaos_proxy_free(v.p);
  fx_server_stop(&srv);
  free(h);
  free(back);
}
END_TEST

/* A session's 16 MiB: random bytes h (from seed) copied to d on the
 * device, a stream, and back to read them into. */
typedef struct {
  size_t n;
  uint8_t *h, *back;
  void *d;
  rdev_stream_t *st;
} bufs_t;

static void bufs_make(rdev_session_t *s, bufs_t *b, uint64_t seed) {
  *b = (bufs_t){.n = (size_t)16 << 20};
  b->h = fx_xmalloc(b->n);
  b->back = fx_xmalloc(b->n);
  fx_fill_random(b->h, b->n, seed);
  FX_OK(rdev_malloc(s, &b->d, b->n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_stream_create(s, &b->st));
  FX_OK(rdev_memcpy(s, b->d, b->n, b->h, b->n, RDEV_MEMCPY_HOST_TO_DEVICE));
}

static void bufs_free(rdev_session_t *s, bufs_t *b) {
  FX_OK(rdev_stream_destroy(b->st));
  FX_OK(rdev_free(s, b->d));
  free(b->h);
  free(b->back);
}

/* 8 async copies on b's stream with v's bulk route reset inside them
 * (drawn by seed); returns once it was. D2H: of b->d into b->back (zeroed
 * first). H2D: of b->h into b->d (zeroed first) through one buffer of the
 * size of a copy, overwritten as each call returns: the source is the
 * caller's again then, so that what the bulk connection lost must come
 * from a copy the library made. */
static void copies_cut_inside(via_t *v, rdev_session_t *s, bufs_t *b, uint64_t seed, rdev_memcpy_kind_t kind) {
  size_t n = b->n, k = n / 8;
  uint64_t cuts = chaos_proxy_counters(v->p, 1).random_cuts;
  uint8_t *src = NULL;
  if (kind == RDEV_MEMCPY_HOST_TO_DEVICE) {
    src = fx_xmalloc(k);
    FX_OK(rdev_memset(s, b->d, n, 0, n));
  }
  chaos_proxy_random_cut(v->p, 1, n / 4, n / 2, 1000, seed, CHAOS_RST);
  memset(b->back, 0, n);
  for (int i = 0; i < 8; i++) {
    uint8_t *dev = (uint8_t *)b->d + i * k;
    if (!src) {
      FX_OK(rdev_memcpy_async(s, b->back + i * k, k, dev, k, RDEV_MEMCPY_DEVICE_TO_HOST, b->st));
      continue;
    }
    memcpy(src, b->h + i * k, k);
    FX_OK(rdev_memcpy_async(s, dev, k, src, k, RDEV_MEMCPY_HOST_TO_DEVICE, b->st));
    memset(src, 0xee, k); /* the caller's again */
  }
  free(src);
  double until = fx_now() + 10;
  while (chaos_proxy_counters(v->p, 1).random_cuts == cuts && fx_now() < until) fx_sleep_ms(1);
  ck_assert_msg(chaos_proxy_counters(v->p, 1).random_cuts > cuts, "the copies were not cut");
  chaos_proxy_random_cut(v->p, 1, 1, 1, 0, 0, CHAOS_RST);
}

/* A lost bulk connection comes back: cut alone, then with the session's
 * call (a resume), then each way again under async D2H copies, then under
 * async H2D copies. Each time the client connects a new one and copies
 * after go on it again (the proxy's bulk route carries their bytes), byte
 * for byte; the async copies caught by the cut complete too, byte for
 * byte: rdevd sends the frames the client did not acknowledge again on
 * the new connection, and the client the DATA rdevd had not counted. */
START_TEST(test_bulk_connection_comes_back) {
  fx_server_t srv;
  int port = server_with_bulk_port(&srv);
  via_t v;
  via_open(&v, srv.target, port);
  rdev_session_t *s = open_via(&v);
  bufs_t b;
  bufs_make(s, &b, 23);
  const size_t n = b.n;
  uint8_t *h = b.h, *back = b.back;
  void *d = b.d;
  ck_assert_msg(bulk_in(s, NULL, 0), "no bulk connection at first");
  for (int round = 0; round < 6; round++) {
    int async = round >= 2, all = round % 2, writes = round >= 4;
    uint64_t since = chaos_proxy_counters(v.p, 1).accepted;
    if (async) { /* async copies on it when it goes (d holds h) */
      copies_cut_inside(&v, s, &b, (uint64_t)round, writes ? RDEV_MEMCPY_HOST_TO_DEVICE : RDEV_MEMCPY_DEVICE_TO_HOST);
      if (all) chaos_proxy_cut(v.p, CHAOS_ALL_ROUTES, CHAOS_RST, 0); /* and the call with it */
    } else {
      chaos_proxy_cut(v.p, all ? CHAOS_ALL_ROUTES : 1, CHAOS_RST, 0);
    }
    if (async) {
      FX_OK(rdev_stream_synchronize(b.st));
      if (writes) FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
      FX_ASSERT_BYTES(back, h, n, "round %d: async %s through the cut", round, writes ? "H2D" : "D2H");
    }
    ck_assert_msg(bulk_in(s, &v, since), "round %d: the bulk connection did not come back", round);
    uint64_t before = chaos_proxy_counters(v.p, 1).bytes_down + chaos_proxy_counters(v.p, 1).bytes_up;
    memset(back, 0, n);
    FX_OK(rdev_memcpy(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE));
    FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, h, n, "round %d", round);
    uint64_t after = chaos_proxy_counters(v.p, 1).bytes_down + chaos_proxy_counters(v.p, 1).bytes_up;
    ck_assert_msg(after - before >= 2 * n - (n / 8), "round %d: only %llu bytes on the bulk route", round,
                  (unsigned long long)(after - before));
  }
  bufs_free(s, &b);
  rdev_session_close(s);
  chaos_proxy_free(v.p);
  fx_server_stop(&srv);
}
END_TEST

/* Cuts route 1 (the bulk connection) once bytes went up it, and refuses
 * its new connections for refuse_ms. */
typedef struct {
  via_t *v;
  uint64_t bytes;
  int refuse_ms;
} bytes_cutter_t;

static int bytes_up_past(const chaos_counters_t *c, void *arg) { return c->bytes_up >= *(const uint64_t *)arg; }

static void *bytes_cutter(void *arg) {
  bytes_cutter_t *c = arg;
  if (chaos_proxy_wait(c->v->p, 1, bytes_up_past, &c->bytes, 20000) == 0)
    chaos_proxy_cut(c->v->p, 1, CHAOS_RST, c->refuse_ms);
  return NULL;
}

/* Async H2D copies whose bytes were on a bulk connection that broke, and
 * no next one for longer than rdevd's resume window (the route refuses
 * it) while the session's call is fine: rdevd ends the session rather
 * than hold its requests for ever, the synchronize fails with
 * RDEV_UNAVAILABLE within moments of the window, and the session's
 * memory is freed. */
START_TEST(test_bulk_away_past_the_window_ends_the_session) {
  fx_server_t srv;
  int port = server_with_bulk_port_and(&srv, "--resume-ms", "1500");
  rdev_session_t *probe = fx_open_target(srv.target);
  size_t fr0, total;
  FX_OK(rdev_mem_info(probe, &fr0, &total));
  rdev_session_close(probe);
  via_t v;
  via_open(&v, srv.target, port);
  rdev_session_t *s = open_via(&v);
  bufs_t b;
  bufs_make(s, &b, 31);
  ck_assert_msg(bulk_in(s, NULL, 0), "no bulk connection at first");
  size_t k = b.n / 8;
  bytes_cutter_t c = {&v, chaos_proxy_counters(v.p, 1).bytes_up + b.n / 4, 8000};
  pthread_t t;
  chaos_proxy_throttle(v.p, (uint64_t)32 << 20); /* 0.5 s for the copies: the cut lands inside them */
  ck_assert_int_eq(pthread_create(&t, NULL, bytes_cutter, &c), 0);
  for (int i = 0; i < 8; i++)
    FX_OK(rdev_memcpy_async(s, (uint8_t *)b.d + i * k, k, b.h + i * k, k, RDEV_MEMCPY_HOST_TO_DEVICE, b.st));
  pthread_join(t, NULL);
  chaos_proxy_throttle(v.p, 0);
  ck_assert_uint_eq(chaos_proxy_counters(v.p, 1).cuts, 1);
  double t0 = fx_now();
  int rc = rdev_stream_synchronize(b.st);
  double waited = fx_now() - t0;
  ck_assert_msg(rc == RDEV_UNAVAILABLE, "async H2D with no bulk connection past the window: %d, not UNAVAILABLE", rc);
  ck_assert_msg(waited < 7, "the synchronize took %.1f s (window 1.5 s)", waited);
  rdev_stream_destroy(b.st); /* the session is over: only the handles go */
  free(b.h);
  free(b.back);
  freed_then_stop(&srv, &v, s, fr0, 5);
}
END_TEST

/* A session that does not resume keeps nothing of a lost bulk connection:
 * async D2H copies whose frames were on it when it broke fail their
 * synchronize with RDEV_UNAVAILABLE at once, even when their in-band
 * answers come after the client connected its next one (the call is
 * slowed by a second proxy for that), and the next copies go on that one
 * byte for byte. */
START_TEST(test_bulk_cut_without_resume_fails_at_once) {
  fx_server_t srv;
  int port = server_with_bulk_port(&srv);
  via_t v;
  via_open(&v, srv.target, port);
  chaos_proxy_t *slow = chaos_proxy_new(); /* 127.0.0.2: the client's bulk connection goes to v's bulk route */
  char target[64], err[256] = "";
  ck_assert_ptr_nonnull(slow);
  ck_assert_msg(chaos_proxy_listen(slow, "127.0.0.2:0", v.target, target, sizeof target, err, sizeof err) == 0,
                "proxy: %s", err);
  rdev_options_t o = {.connect_timeout_ms = 20000, .resume_ms = -1};
  rdev_session_t *s = NULL;
  FX_OK(rdev_session_open(target, &o, &s));
  bufs_t b;
  bufs_make(s, &b, 29);
  ck_assert_msg(bulk_in(s, &v, 0), "no bulk connection at first");
  uint64_t since = chaos_proxy_counters(v.p, 1).accepted;
  chaos_proxy_delay(slow, 150000); /* the call's answers come late */
  double t0 = fx_now();
  copies_cut_inside(&v, s, &b, 7, RDEV_MEMCPY_DEVICE_TO_HOST);
  int rc = rdev_stream_synchronize(b.st);
  ck_assert_msg(rc == RDEV_UNAVAILABLE, "async D2H through a bulk cut without resume: %d, not UNAVAILABLE", rc);
  ck_assert_msg(fx_now() - t0 < 5, "the copies and their synchronize took %.1f s", fx_now() - t0);
  chaos_proxy_delay(slow, 0);
  ck_assert_msg(bulk_in(s, &v, since), "the bulk connection did not come back");
  memset(b.back, 0, b.n);
  FX_OK(rdev_memcpy(s, b.back, b.n, b.d, b.n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(b.back, b.h, b.n, "D2H after the cut");
  bufs_free(s, &b);
  rdev_session_close(s);
  chaos_proxy_free(slow);
  chaos_proxy_free(v.p);
  fx_server_stop(&srv);
}
END_TEST

/* Async D2H copies in-band (the session has no bulk connection) with a
 * cut among them: each lands once, byte for byte. */
START_TEST(test_async_reads_survive_a_cut) {
  via_t v;
  via_open(&v, fx_srv.target, 0);
  setenv("RDEV_BULK", "off", 1); /* this test's process only (Check forks one per test) */
  rdev_session_t *s = open_via(&v);
  const size_t chunk = (size_t)64 << 10, n = 64 * chunk;
  uint8_t *h = fx_xmalloc(n), *back = fx_xmalloc(n);
  void *d = NULL;
  rdev_stream_t *st = NULL;
  fx_fill_random(h, n, 11);
  memset(back, 0, n);
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, n, h, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  for (size_t off = 0; off < n; off += chunk) {
    FX_OK(rdev_memcpy_async(s, back + off, chunk, (char *)d + off, chunk, RDEV_MEMCPY_DEVICE_TO_HOST, st));
    if (off == n / 2) cut(&v, 0);
  }
  FX_OK(rdev_stream_synchronize(st));
  check_same(h, back, n, "async D2H", 0);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  chaos_proxy_free(v.p);
  free(h);
  free(back);
}
END_TEST

/* A blocking host function holds its stream while the connection is cut
 * twice: it runs once, and the kernel queued behind it runs once, after it. */
typedef struct {
  pthread_mutex_t mu;
  int runs;
  int release;
} hold_t;

static void hold_fn(rdev_host_call_t *call, void *user, int status) {
  hold_t *h = user;
  pthread_mutex_lock(&h->mu);
  h->runs += status == RDEV_OK;
  pthread_mutex_unlock(&h->mu);
  for (;;) {
    pthread_mutex_lock(&h->mu);
    int go = h->release;
    pthread_mutex_unlock(&h->mu);
    if (go) break;
    fx_sleep_ms(2);
  }
  rdev_host_call_done(call);
}

static int hold_runs(hold_t *h) {
  pthread_mutex_lock(&h->mu);
  int r = h->runs;
  pthread_mutex_unlock(&h->mu);
  return r;
}

START_TEST(test_host_function_survives_a_cut) {
  via_t v;
  via_open(&v, fx_srv.target, 0);
  rdev_session_t *s = open_via(&v);
  rdev_stream_t *st = NULL;
  uint32_t *d = NULL, zero = 0, got = 7;
  hold_t h = {.mu = PTHREAD_MUTEX_INITIALIZER};
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, (void **)&d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, 4, &zero, 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_launch_host_func(st, 1, hold_fn, &h));
  rdev_arg_t a = fx_ptr(d);
  FX_OK(rdev_launch(st, "inc_u32", 1, &a, 1));
  double end = fx_now() + 10;
  while (hold_runs(&h) == 0 && fx_now() < end) fx_sleep_ms(2);
  ck_assert_int_eq(hold_runs(&h), 1);
  cut(&v, 0);
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST)); /* resumed; the stream still held */
  ck_assert_uint_eq(got, 0);
  cut(&v, 0);
  pthread_mutex_lock(&h.mu);
  h.release = 1;
  pthread_mutex_unlock(&h.mu);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_uint_eq(got, 1);
  ck_assert_int_eq(hold_runs(&h), 1);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  chaos_proxy_free(v.p);
}
END_TEST

/* Kernel print output of launches on both sides of a cut arrives once
 * each. */
START_TEST(test_kernel_print_survives_a_cut) {
  via_t v;
  via_open(&v, fx_srv.target, 0);
  rdev_session_t *s = open_via(&v);
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  for (int i = 0; i < 20; i++) {
    FX_OK(rdev_launch(st, "hello", 2, NULL, 0));
    if (i % 5 == 4) {
      FX_OK(rdev_stream_synchronize(st));
      cut(&v, 0);
    }
  }
  FX_OK(rdev_stream_synchronize(st));
  char text[sizeof cap.text];
  fx_capture_get(&cap, text, sizeof text);
  int lines = 0;
  for (const char *p = text; (p = strstr(p, "Hello World")); p++) lines++;
  int want = fx_on_acl() ? 0 : 40; /* acl: the print is on rdevd's stdout */
  ck_assert_msg(lines == want, "%d lines of kernel print output, want %d (20 launches of 2 blocks)", lines, want);
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  chaos_proxy_free(v.p);
}
END_TEST

/* An rdevd of this test's with resume window resume_ms (ms), a proxy in
 * front of it, and a session through the proxy whose pings (every 1 s)
 * take a silent connection for broken within 2 s. */
static rdev_session_t *session_with_window(fx_server_t *srv, via_t *v, const char *resume_ms) {
  char err[512];
  const char *extra[] = {"--resume-ms", resume_ms, NULL};
  ck_assert_msg(fx_server_start(srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  via_open(v, srv->target, 0);
  rdev_options_t o = {.keepalive_ms = 1000, .connect_timeout_ms = 20000};
  rdev_session_t *s = NULL;
  FX_OK(rdev_session_open(v->target, &o, &s));
  return s;
}

/* A stall longer than the keepalive's patience (1 s pings, 1 s for an
 * answer): the client takes the connection for broken, and once the
 * network moves again resumes the session; the work queued before and
 * after completes once each. */
START_TEST(test_stall_past_the_keepalive_resumes) {
  fx_server_t srv;
  via_t v;
  rdev_session_t *s = session_with_window(&srv, &v, "20000");
  rdev_stream_t *st = NULL;
  uint32_t *d = NULL, one = 1, got = 0;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, (void **)&d, 64, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, d, 4, &one, 4, RDEV_MEMCPY_HOST_TO_DEVICE));
  int ndev;
  FX_OK(rdev_device_count(s, &ndev)); /* rdevd answered the open: the session may resume */
  const uint64_t pattern = 0x2545f4914f6cdd1dull;
  queue_ops(st, d, pattern, 0, 500);
  chaos_proxy_stall(v.p, 3500);
  queue_ops(st, d, pattern, 500, 1000);
  FX_OK(rdev_stream_synchronize(st));
  FX_OK(rdev_memcpy(s, &got, 4, d, 4, RDEV_MEMCPY_DEVICE_TO_HOST));
  ck_assert_uint_eq(got, model(pattern, 1000));
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  chaos_proxy_free(v.p);
  fx_server_stop(&srv);
}
END_TEST

/* A break longer than rdevd's window (0.5 s here: the proxy refuses the
 * client for 1.5 s): the session ends with RDEV_UNAVAILABLE, and rdevd
 * gives its memory back. */
START_TEST(test_break_past_the_window_ends_the_session) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--resume-ms", "500", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  via_t v;
  via_open(&v, srv.target, 0);
  rdev_session_t *s = open_via(&v);
  void *d = NULL;
  size_t fr0, fr, total;
  FX_OK(rdev_mem_info(s, &fr0, &total));
  FX_OK(rdev_malloc(s, &d, (size_t)16 << 20, RDEV_MEM_MALLOC_HUGE_FIRST));
  double t0 = fx_now();
  cut(&v, 1500);
  FX_EXPECT(rdev_mem_info(s, &fr, &total), RDEV_UNAVAILABLE);
  ck_assert_msg(fx_now() - t0 < 10, "the session took %.1f s to end", fx_now() - t0);
  freed_then_stop(&srv, &v, s, fr0, 5);
}
END_TEST

/* A stall longer than the window (the proxy holds every byte, new
 * connections too): the client's pings find the call dead, its tries to
 * resume get no answer, and once the window passed every call fails with
 * RDEV_UNAVAILABLE; rdevd, which hears of the break only when the stall
 * ends, frees the session's memory a window after. */
START_TEST(test_stall_past_the_window_ends_the_session) {
  fx_server_t srv;
  via_t v;
  rdev_session_t *s = session_with_window(&srv, &v, "1000");
  size_t fr0, fr, total;
  FX_OK(rdev_mem_info(s, &fr0, &total)); /* rdevd answered the open: the session may resume */
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, (size_t)16 << 20, RDEV_MEM_MALLOC_HUGE_FIRST));
  chaos_proxy_stall(v.p, 12000);
  double t0 = fx_now();
  FX_EXPECT(rdev_mem_info(s, &fr, &total), RDEV_UNAVAILABLE);
  double waited = fx_now() - t0;
  ck_assert_msg(waited < 11, "the call failed after %.1f s, not before the stall (12 s) ended", waited);
  chaos_proxy_stall(v.p, 0);
  freed_then_stop(&srv, &v, s, fr0, 10);
}
END_TEST

/* Replies kept for a resume count to the tenant's max_unacked: a session
 * whose client is away while 2 MiB of its async reads complete passes the
 * tenant's 1 MiB and ends at once, long before its window (60 s) would. */
START_TEST(test_unacknowledged_replies_past_the_cap_end_the_session) {
  fx_server_t srv;
  char token[44];
  const char *window[] = {"--resume-ms", "60000", NULL};
  fx_tenant_server_start(&srv, token, "max_unacked = 1M\n", window);
  via_t v;
  via_open(&v, srv.target, 0);
  rdev_options_t o = {.token = token, .connect_timeout_ms = 20000};
  rdev_session_t *s = NULL, *s2 = NULL;
  FX_OK(rdev_session_open(v.target, &o, &s));
  const size_t chunk = (size_t)64 << 10, n = 32 * chunk;
  uint8_t *back = fx_xmalloc(n);
  void *d = NULL;
  rdev_stream_t *st = NULL;
  size_t fr0, fr, total;
  FX_OK(rdev_mem_info(s, &fr0, &total));
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_arg_t a = fx_ptr(d);
  FX_OK(rdev_launch(st, "long_inc_u32", 1, &a, 1)); /* 500 ms: the reads complete once the client is away */
  for (size_t off = 0; off < n; off += chunk)
    FX_OK(rdev_memcpy_async(s, back + off, chunk, (char *)d + off, chunk, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_mem_info(s, &fr, &total)); /* all of it is at rdevd */
  double t0 = fx_now();
  cut(&v, 30000);
  FX_OK(rdev_session_open(srv.target, &o, &s2)); /* beside the proxy */
  ck_assert_uint_eq(fx_wait_free(s2, fr0, 10), fr0);
  ck_assert_msg(fx_now() - t0 < 10, "the session held its memory for %.1f s", fx_now() - t0);
  rdev_session_close(s2);
  chaos_proxy_cut(v.p, CHAOS_ALL_ROUTES, CHAOS_RST, 0); /* let the client in: rdevd says the session is gone */
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNAVAILABLE);
  rdev_session_close(s);
  chaos_proxy_free(v.p);
  free(back);
  fx_server_stop(&srv);
}
END_TEST

Suite *suite_resume(void) {
  Suite *su = suite_create("resume");
  TCase *tc = fx_tcase("resume");
  tcase_add_test(tc, test_pipelined_ops_survive_cuts);
  tcase_add_test(tc, test_copies_survive_a_cut);
  tcase_add_test(tc, test_copies_survive_a_bulk_cut);
  tcase_add_test(tc, test_bulk_connection_comes_back);
  tcase_add_test(tc, test_large_copies_survive_cuts);
  tcase_add_test(tc, test_bulk_cut_without_resume_fails_at_once);
  tcase_add_test(tc, test_bulk_away_past_the_window_ends_the_session);
  tcase_add_test(tc, test_async_reads_survive_a_cut);
  tcase_add_test(tc, test_host_function_survives_a_cut);
  tcase_add_test(tc, test_kernel_print_survives_a_cut);
  tcase_add_test(tc, test_stall_past_the_keepalive_resumes);
  tcase_add_test(tc, test_break_past_the_window_ends_the_session);
  tcase_add_test(tc, test_stall_past_the_window_ends_the_session);
  tcase_add_test(tc, test_unacknowledged_replies_past_the_cap_end_the_session);
  suite_add_tcase(su, tc);
  return su;
}
