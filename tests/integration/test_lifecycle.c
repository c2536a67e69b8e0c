/*
 * tests/integration/test_lifecycle.c — several sessions and threads at once,
 * and the ways a session ends: a client killed mid-transfer (its memory comes
 * back), the server draining on SIGTERM (a pending synchronize fails, the
 * server exits 0), and a dead server (calls fail with RDEV_UNAVAILABLE).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

/* ---- concurrency ---------------------------------------------------------------- */

typedef struct {
  rdev_session_t *s;  /* shared session, or NULL: open one */
  const char *target; /* where to open it (NULL: the fixture's server) */
  int id;
  int failures;
  char msg[512];
} worker_t;

#define WORKER_FAIL(w, ...) \
  do { \
    if (!(w)->failures++) snprintf((w)->msg, sizeof(w)->msg, __VA_ARGS__); \
  } while (0)

#define WORKER_OK(w, call) \
  do { \
    int rc_ = (call); \
    if (rc_) \
      WORKER_FAIL(w, "worker %d: %s = %d %s (%s)", (w)->id, #call, rc_, rdev_status_name(rc_), \
                  rdev_session_last_error()); \
  } while (0)

/* Round trips of distinct random data, alternating sync and async copies on
 * the worker's own stream. */
static void *worker_main(void *arg) {
  worker_t *w = arg;
  rdev_session_t *s = w->s;
  if (!s) {
    rdev_options_t o = {.connect_timeout_ms = 20000};
    int rc = rdev_session_open(w->target ? w->target : fx_srv.target, &o, &s);
    if (rc) {
      WORKER_FAIL(w, "worker %d: session open = %d (%s)", w->id, rc, rdev_session_last_error());
      return NULL;
    }
  }
  const size_t n = FX_MiB + 1000 * (size_t)w->id + 3;
  uint8_t *src = malloc(n), *back = malloc(n);
  void *d = NULL;
  rdev_stream_t *st = NULL;
  WORKER_OK(w, rdev_stream_create(s, &st));
  WORKER_OK(w, rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  for (int r = 0; r < 8 && !w->failures && src && back; r++) {
    fx_fill_random(src, n, (uint64_t)w->id * 1000 + (uint64_t)r);
    memset(back, 0, n);
    if (r % 2) {
      WORKER_OK(w, rdev_memcpy(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
      WORKER_OK(w, rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    } else {
      WORKER_OK(w, rdev_memcpy_async(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
      WORKER_OK(w, rdev_memcpy_async(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
      WORKER_OK(w, rdev_stream_synchronize(st));
    }
    size_t i = fx_first_diff(back, src, n);
    if (i != n) WORKER_FAIL(w, "worker %d round %d: byte %zu of %zu differs", w->id, r, i, n);
    size_t fr, total;
    WORKER_OK(w, rdev_mem_info(s, &fr, &total));
  }
  if (d) WORKER_OK(w, rdev_free(s, d));
  if (st) WORKER_OK(w, rdev_stream_destroy(st));
  free(src);
  free(back);
  if (!w->s) rdev_session_close(s);
  return NULL;
}

static void run_workers_at(const char *target, rdev_session_t *shared, int nthreads) {
  pthread_t th[8];
  worker_t w[8];
  for (int i = 0; i < nthreads; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].s = shared;
    w[i].target = target;
    w[i].id = i;
    ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < nthreads; i++) ck_assert_msg(w[i].failures == 0, "%s", w[i].msg);
}

static void run_workers(rdev_session_t *shared, int nthreads) { run_workers_at(NULL, shared, nthreads); }

START_TEST(test_concurrent_sessions) {
  run_workers(NULL, 4);
  rdev_session_t *s = fx_open();
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  rdev_session_close(s);
}
END_TEST

/* Sessions spread over several completion-queue shards (--threads 3), each
 * session's batches completing on its own shard's thread. */
START_TEST(test_concurrent_sessions_on_three_shards) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--threads", "3", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  run_workers_at(srv.target, NULL, 6);
  rdev_session_t *s = fx_open_target(srv.target);
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  rdev_session_close(s);
  fx_server_stop(&srv);
}
END_TEST

START_TEST(test_threads_share_one_session) {
  rdev_session_t *s = fx_open();
  run_workers(s, 4);
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  rdev_session_close(s);
}
END_TEST

/* Back-to-back synchronous calls (launch + synchronize, a small D2H copy,
 * mem_info) on the worker's own stream of a shared session: a waiting
 * caller polls the session itself while no one else does, so polling keeps
 * passing between these threads and the receiver; each call must still get
 * its own answer. */
static void *sync_caller_main(void *arg) {
  worker_t *w = arg;
  rdev_stream_t *st = NULL;
  void *d = NULL;
  WORKER_OK(w, rdev_stream_create(w->s, &st));
  WORKER_OK(w, rdev_malloc(w->s, &d, sizeof(int32_t), RDEV_MEM_MALLOC_HUGE_FIRST));
  for (int i = 0; i < 300 && !w->failures; i++) {
    int32_t v = w->id * 100000 + i, got = -1;
    rdev_arg_t a[2] = {fx_ptr(d), fx_i32(v)};
    WORKER_OK(w, rdev_launch(st, "write_i32", 1, a, 2));
    WORKER_OK(w, rdev_stream_synchronize(st));
    WORKER_OK(w, rdev_memcpy(w->s, &got, sizeof got, d, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
    if (got != v) WORKER_FAIL(w, "worker %d call %d: read %d, wrote %d", w->id, i, (int)got, (int)v);
    size_t fr, total;
    WORKER_OK(w, rdev_mem_info(w->s, &fr, &total));
  }
  if (d) WORKER_OK(w, rdev_free(w->s, d));
  if (st) WORKER_OK(w, rdev_stream_destroy(st));
  return NULL;
}

START_TEST(test_threads_make_sync_calls_on_one_session) {
  rdev_session_t *s = fx_open();
  fx_capture_t cap;
  fx_capture_init(&cap);
  rdev_session_set_print_fn(s, fx_capture_fn, &cap);
  pthread_t th[4];
  worker_t w[4];
  for (int i = 0; i < 4; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].s = s;
    w[i].id = i + 1;
    ck_assert_int_eq(pthread_create(&th[i], NULL, sync_caller_main, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) ck_assert_msg(w[i].failures == 0, "%s", w[i].msg);
  ck_assert_uint_eq(fx_wait_free(s, FX_SIM_MEM, 5), FX_SIM_MEM);
  rdev_session_close(s);
}
END_TEST

/* ---- a client killed mid-transfer -------------------------------------------------- */

#define CHILD_ALLOC (24 * FX_MiB)

/* The child: a session holding 24 MiB, then big async H2D copies forever. */
static int disconnect_child(const char *target, int ready_fd) {
  rdev_session_t *s = NULL;
  rdev_options_t o = {.connect_timeout_ms = 20000};
  if (rdev_session_open(target, &o, &s)) return 10;
  void *d = NULL, *h = NULL;
  rdev_stream_t *st = NULL;
  if (rdev_malloc(s, &d, CHILD_ALLOC, RDEV_MEM_MALLOC_HUGE_FIRST)) return 11;
  if (rdev_stream_create(s, &st)) return 12;
  if (rdev_malloc_host(s, &h, CHILD_ALLOC)) return 13;
  memset(h, 0xA5, CHILD_ALLOC);
  if (rdev_memcpy_async(s, d, CHILD_ALLOC, h, CHILD_ALLOC, RDEV_MEMCPY_HOST_TO_DEVICE, st)) return 14;
  if (write(ready_fd, "r", 1) != 1) return 15;
  for (;;) {
    if (rdev_memcpy_async(s, d, CHILD_ALLOC, h, CHILD_ALLOC, RDEV_MEMCPY_HOST_TO_DEVICE, st)) return 16;
    if (rdev_memcpy_async(s, d, CHILD_ALLOC, h, CHILD_ALLOC, RDEV_MEMCPY_HOST_TO_DEVICE, st)) return 17;
    if (rdev_stream_synchronize(st)) return 18;
  }
}

START_TEST(test_killed_client_memory_is_released) {
  int go[2], ready[2];
  ck_assert_int_eq(pipe(go), 0);
  ck_assert_int_eq(pipe(ready), 0);
  /* Fork before this process initializes gRPC (its first session). */
  pid_t parent = getpid();
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(go[1]);
    close(ready[0]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(2);
    _exit(disconnect_child(fx_srv.target, ready[1]));
  }
  close(go[0]);
  close(ready[1]);
  rdev_session_t *s = fx_open();
  size_t free0, fr, total;
  FX_OK(rdev_mem_info(s, &free0, &total));
  ck_assert_uint_eq(free0, FX_SIM_MEM);
  ck_assert_int_eq(write(go[1], "g", 1), 1);
  struct pollfd pf = {ready[0], POLLIN, 0};
  int pr = poll(&pf, 1, 30000);
  char c = 0;
  int got = pr == 1 ? (int)read(ready[0], &c, 1) : -1;
  if (got != 1) {
    kill(child, SIGKILL);
    int st = 0;
    waitpid(child, &st, 0);
    char buf[64];
    ck_abort_msg("the child did not get ready (%s)", fx_describe_status(st, buf, sizeof buf));
  }
  FX_OK(rdev_mem_info(s, &fr, &total));
  ck_assert_msg(fr <= free0 - CHILD_ALLOC, "free %zu with the child's 24 MiB allocated, started at %zu", fr, free0);
  fx_sleep_ms(300); /* well into the transfers */
  ck_assert_int_eq(kill(child, SIGKILL), 0);
  int st = 0;
  ck_assert_int_eq(waitpid(child, &st, 0), child);
  ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child ended otherwise: 0x%x", st);
  double t0 = fx_now();
  fr = fx_wait_free(s, free0, 10);
  ck_assert_msg(fr == free0, "free memory %zu, %.1f s after the client died; want %zu back", fr, fx_now() - t0, free0);
  close(go[1]);
  close(ready[0]);
  rdev_session_close(s);
}
END_TEST

/* ---- drain on SIGTERM ---------------------------------------------------------------- */

typedef struct {
  rdev_stream_t *st;
  int rc;
  double done_at;
} sync_arg_t;

static void *sync_thread(void *p) {
  sync_arg_t *a = p;
  a->rc = rdev_stream_synchronize(a->st);
  a->done_at = fx_now();
  return NULL;
}

START_TEST(test_sigterm_drains_pending_synchronize) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--drain-ms", "300", "--log-level", "error", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  rdev_arg_t delay = fx_u32(30000000); /* 30 s */
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  sync_arg_t a = {st, -1, 0};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, sync_thread, &a), 0);
  fx_sleep_ms(300); /* the synchronize is at the server */
  double t0 = fx_now();
  ck_assert_int_eq(kill(srv.pid, SIGTERM), 0);
  pthread_join(th, NULL);
  ck_assert_msg(a.done_at - t0 < 10, "synchronize returned %.2f s after SIGTERM", a.done_at - t0);
  ck_assert_msg(a.rc == RDEV_UNAVAILABLE, "synchronize during drain = %d %s, want RDEV_UNAVAILABLE", a.rc,
                rdev_status_name(a.rc));
  int status = fx_server_wait(&srv, 20);
  double t1 = fx_now();
  char buf[64];
  if (status == -1) {
    kill(srv.pid, SIGKILL);
    fx_server_wait(&srv, 10);
  }
  ck_assert_msg(status != -1, "rdevd still running 20 s after SIGTERM with --drain-ms 300");
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "rdevd ended with %s after SIGTERM, want exit 0",
                fx_describe_status(status, buf, sizeof buf));
  ck_assert_msg(t1 - t0 < 10, "rdevd took %.2f s to drain with --drain-ms 300", t1 - t0);
  /* the session is over: calls fail, close returns */
  size_t fr, total;
  FX_EXPECT(rdev_mem_info(s, &fr, &total), RDEV_UNAVAILABLE);
  rdev_session_close(s);
}
END_TEST

/* With no session left, SIGTERM ends the server within the drain time (plus
 * slack), however much data the finished sessions moved. */
START_TEST(test_sigterm_exits_promptly_after_large_transfers) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--drain-ms", "300", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  const size_t n = 16 * FX_MiB;
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, n, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(n);
  fx_fill_random(src, n, 8000);
  FX_OK(rdev_memcpy(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  for (int i = 0; i < 3; i++) {
    memset(back, 0, n);
    FX_OK(rdev_memcpy(s, back, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, src, n, "D2H %d", i);
  }
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
  free(src);
  free(back);
  double t0 = fx_now();
  fx_server_stop(&srv);
  double t1 = fx_now();
  ck_assert_msg(t1 - t0 < 5, "rdevd took %.2f s to exit after SIGTERM (--drain-ms 300, no session open)", t1 - t0);
}
END_TEST

/* ---- backpressure ---------------------------------------------------------------------- */

/* With --max-inflight 4M the server stops reading a session that queued more
 * than that; the client keeps queueing (HTTP/2 flow control), nothing
 * deadlocks and every byte arrives. */
START_TEST(test_async_copies_beyond_max_inflight) {
  fx_server_t srv;
  char err[512];
  const char *extra[] = {"--max-inflight", "4M", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  enum { PIECES = 16 };
  const size_t piece = 2 * FX_MiB + 64, total = PIECES * piece;
  void *d = NULL;
  FX_OK(rdev_malloc(s, &d, total, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t *src = fx_xmalloc(total), *back = fx_xmalloc(total);
  fx_fill_random(src, total, 7000);
  memset(back, 0, total);
  rdev_arg_t delay = fx_u32(200000); /* the writes pile up behind it */
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  for (int i = 0; i < PIECES; i++)
    FX_OK(
        rdev_memcpy_async(s, (uint8_t *)d + i * piece, piece, src + i * piece, piece, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  for (int i = 0; i < PIECES; i++)
    FX_OK(
        rdev_memcpy_async(s, back + i * piece, piece, (uint8_t *)d + i * piece, piece, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(back, src, total, "%d async pieces through a 4 MiB window", PIECES);
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, d));
  rdev_session_close(s);
  free(src);
  free(back);
  fx_server_stop(&srv);
}
END_TEST

/* Closing a session with work still queued, a synchronize that timed out
 * and an async D2H not yet synchronized: close returns, the library writes
 * nothing after it, the server carries on (and exits 0 at teardown). */
START_TEST(test_close_with_pending_work) {
  rdev_session_t *watch = fx_open();
  rdev_session_t *s = fx_open();
  rdev_stream_t *st = NULL;
  void *d = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, &d, 4 * FX_MiB, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_arg_t delay = fx_u32(500000);
  FX_OK(rdev_launch(st, "delay_us", 1, &delay, 1));
  FX_EXPECT(rdev_stream_synchronize_timeout(st, 1), RDEV_RT_STREAM_SYNC_TIMEOUT);
  uint8_t *host = fx_xmalloc(4 * FX_MiB);
  FX_OK(rdev_memcpy_async(s, host, 4 * FX_MiB, d, 4 * FX_MiB, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  rdev_session_close(s);
  free(host); /* ASan would catch a late write */
  ck_assert_uint_eq(fx_wait_free(watch, FX_SIM_MEM, 10), FX_SIM_MEM);
  rdev_session_close(watch);
}
END_TEST

/* ---- a dead server ----------------------------------------------------------------------- */

START_TEST(test_calls_fail_unavailable_after_server_killed) {
  rdev_session_t *s = fx_open();
  void *d = NULL;
  rdev_stream_t *st = NULL;
  rdev_event_t *ev = NULL;
  FX_OK(rdev_malloc(s, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_event_create(s, &ev));
  int status = fx_server_signal_wait(&fx_srv, SIGKILL, 10);
  ck_assert_msg(status != -1 && WIFSIGNALED(status), "rdevd did not die of SIGKILL");
  uint8_t h[4096] = {0};
  size_t fr, total;
  double t0 = fx_now();
  FX_EXPECT(rdev_mem_info(s, &fr, &total), RDEV_UNAVAILABLE);
  FX_EXPECT(rdev_memcpy(s, d, sizeof h, h, sizeof h, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_UNAVAILABLE);
  FX_EXPECT(rdev_memcpy(s, h, sizeof h, d, sizeof h, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_UNAVAILABLE);
  void *p = NULL;
  FX_EXPECT(rdev_malloc(s, &p, 64, RDEV_MEM_MALLOC_HUGE_FIRST), RDEV_UNAVAILABLE);
  ck_assert_ptr_null(p);
  rdev_stream_t *st2 = NULL;
  FX_EXPECT(rdev_stream_create(s, &st2), RDEV_UNAVAILABLE);
  int rc = rdev_memcpy_async(s, h, sizeof h, d, sizeof h, RDEV_MEMCPY_DEVICE_TO_HOST, st);
  ck_assert_msg(rc == RDEV_OK || rc == RDEV_UNAVAILABLE, "memcpy_async = %d %s", rc, rdev_status_name(rc));
  FX_EXPECT(rdev_stream_synchronize(st), RDEV_UNAVAILABLE);
  FX_EXPECT(rdev_event_synchronize(ev, -1), RDEV_UNAVAILABLE);
  FX_EXPECT(rdev_free(s, d), RDEV_UNAVAILABLE);
  ck_assert_msg(fx_now() - t0 < 10, "failing calls took %.2f s", fx_now() - t0);
  rdev_session_close(s);
}
END_TEST

/* The unary calls (server info, device list) of a session whose server died
 * fail as promptly as the session's own calls do. */
START_TEST(test_unary_calls_fail_fast_after_server_killed) {
  rdev_session_t *s = fx_open();
  rdev_server_info_t info;
  FX_OK(rdev_server_info(s, &info));
  int status = fx_server_signal_wait(&fx_srv, SIGKILL, 10);
  ck_assert_msg(status != -1 && WIFSIGNALED(status), "rdevd did not die of SIGKILL");
  size_t fr, total;
  FX_EXPECT(rdev_mem_info(s, &fr, &total), RDEV_UNAVAILABLE); /* the session knows */
  double t0 = fx_now();
  FX_EXPECT(rdev_server_info(s, &info), RDEV_UNAVAILABLE);
  double t1 = fx_now();
  rdev_session_close(s);
  /* rdev_device_count and rdev_device_info take the same path (ListDevices) */
  ck_assert_msg(t1 - t0 < 5, "rdev_server_info took %.2f s to fail on a dead server", t1 - t0);
}
END_TEST

/* A server that stops answering (frozen by SIGSTOP; a network gone
 * without a word looks the same) is found by the keepalive pings: the call
 * waiting on it and those after fail with RDEV_UNAVAILABLE within a few
 * keepalive periods, and none hangs. Once it runs again it serves new
 * sessions. */
START_TEST(test_calls_fail_unavailable_when_server_freezes) {
  fx_server_t srv;
  char err[512];
  ck_assert_msg(fx_server_start(&srv, NULL, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_options_t o = {.keepalive_ms = 1000};
  rdev_session_t *s = NULL;
  FX_OK(rdev_session_open(srv.target, &o, &s));
  rdev_stream_t *st = NULL;
  void *d = NULL;
  FX_OK(rdev_stream_create(s, &st));
  FX_OK(rdev_malloc(s, &d, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  uint8_t h[4096] = {0};
  FX_OK(rdev_memcpy(s, h, sizeof h, d, sizeof h, RDEV_MEMCPY_DEVICE_TO_HOST));
  /* kill() returns before the server's threads stop: one could still answer */
  ck_assert_msg(fx_server_freeze(&srv, 10) == 0, "rdevd did not stop on SIGSTOP");
  double t0 = fx_now();
  /* results checked once rdevd runs again: a failed check must not leave it stopped */
  int rc1 = rdev_memcpy(s, h, sizeof h, d, sizeof h, RDEV_MEMCPY_DEVICE_TO_HOST);
  double t1 = fx_now();
  int rc2 = rdev_stream_synchronize(st);
  int rc3 = rdev_memcpy(s, d, sizeof h, h, sizeof h, RDEV_MEMCPY_HOST_TO_DEVICE);
  rdev_session_close(s);
  double t2 = fx_now();
  ck_assert_int_eq(kill(srv.pid, SIGCONT), 0);
  ck_assert_msg(rc1 == RDEV_UNAVAILABLE && rc2 == RDEV_UNAVAILABLE && rc3 == RDEV_UNAVAILABLE,
                "on a frozen server: D2H %d, synchronize %d, H2D %d; want %d each", rc1, rc2, rc3, RDEV_UNAVAILABLE);
  ck_assert_msg(t1 - t0 < 8, "the call waiting on a frozen server failed after %.2f s (keepalive 1 s)", t1 - t0);
  ck_assert_msg(t2 - t1 < 4, "the later calls and the close took %.2f s", t2 - t1);
  rdev_session_t *s2 = fx_open_target(srv.target);
  size_t fr, total;
  FX_OK(rdev_mem_info(s2, &fr, &total));
  rdev_session_close(s2);
  fx_server_stop(&srv);
}
END_TEST

START_TEST(test_open_on_dead_port_fails_unavailable) {
  char target[sizeof fx_srv.target];
  snprintf(target, sizeof target, "%s", fx_srv.target);
  int status = fx_server_signal_wait(&fx_srv, SIGKILL, 10);
  ck_assert_msg(status != -1 && WIFSIGNALED(status), "rdevd did not die of SIGKILL");
  rdev_session_t *s = (rdev_session_t *)1;
  rdev_options_t o = {.connect_timeout_ms = 500};
  double t0 = fx_now();
  FX_EXPECT(rdev_session_open(target, &o, &s), RDEV_UNAVAILABLE);
  double t1 = fx_now();
  ck_assert_ptr_null(s);
  ck_assert_str_ne(rdev_session_last_error(), "");
  ck_assert_msg(t1 - t0 < 10, "open gave up after %.2f s with a 500 ms timeout", t1 - t0);
}
END_TEST

Suite *suite_lifecycle(void) {
  Suite *su = suite_create("lifecycle");
  TCase *tc = fx_tcase("concurrency");
  tcase_add_test(tc, test_concurrent_sessions);
  tcase_add_test(tc, test_concurrent_sessions_on_three_shards);
  tcase_add_test(tc, test_threads_share_one_session);
  tcase_add_test(tc, test_threads_make_sync_calls_on_one_session);
  suite_add_tcase(su, tc);
  tc = fx_tcase("ending");
  tcase_add_test(tc, test_killed_client_memory_is_released);
  tcase_add_test(tc, test_close_with_pending_work);
  tcase_add_test(tc, test_calls_fail_unavailable_after_server_killed);
  tcase_add_test(tc, test_unary_calls_fail_fast_after_server_killed);
  tcase_add_test(tc, test_open_on_dead_port_fails_unavailable);
  suite_add_tcase(su, tc);
  tc = tcase_create("own_server"); /* each test starts a server with its own flags */
  tcase_set_timeout(tc, FX_TEST_TIMEOUT);
  tcase_add_test(tc, test_sigterm_drains_pending_synchronize);
  tcase_add_test(tc, test_async_copies_beyond_max_inflight);
  tcase_add_test(tc, test_sigterm_exits_promptly_after_large_transfers);
  tcase_add_test(tc, test_calls_fail_unavailable_when_server_freezes);
  suite_add_tcase(su, tc);
  return su;
}
