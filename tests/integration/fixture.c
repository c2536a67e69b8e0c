/*
 * tests/integration/fixture.c — the integration tests' fixture: starting and
 * stopping a real rdevd per test, running the built programs with captured
 * output, and small helpers (random data, byte comparison, polling free
 * memory, kernel print capture). See fixture.h.
 */
#define _GNU_SOURCE
#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *fx_rdevd_path;
const char *fx_d2h_path;
const char *fx_square_path;
const char *fx_rdev_path;

fx_server_t fx_srv = {.pid = -1, .out_fd = -1};

double fx_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void fx_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

void *fx_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  ck_assert_msg(p != NULL, "out of host memory (%zu bytes)", n);
  return p;
}

void fx_fill_random(void *buf, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  uint8_t *p = buf;
  size_t i = 0;
  while (i < n) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    uint64_t v = x * 0x2545F4914F6CDD1Dull;
    for (int k = 0; k < 8 && i < n; k++, i++) p[i] = (uint8_t)(v >> (8 * k));
  }
}

size_t fx_first_diff(const void *a, const void *b, size_t n) {
  if (memcmp(a, b, n) == 0) return n;
  const uint8_t *x = a, *y = b;
  size_t i = 0;
  while (x[i] == y[i]) i++;
  return i;
}

size_t fx_reserved(size_t size) {
  size_t r = ((size + 31) & ~(size_t)31) + 32;
  return (r + 63) & ~(size_t)63;
}

const char *fx_describe_status(int status, char *buf, size_t len) {
  if (status == -1)
    snprintf(buf, len, "still running");
  else if (WIFEXITED(status))
    snprintf(buf, len, "exit %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(buf, len, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    snprintf(buf, len, "wait status 0x%x", status);
  return buf;
}

/* ---- the server ------------------------------------------------------------ */

int fx_on_acl(void) {
  const char *a = getenv("RDEV_TEST_RDEVD_ARGS");
  return a && strstr(a, "--backend acl") != NULL;
}

const char *fx_printed(const char *sim_text) { return fx_on_acl() ? "" : sim_text; }

int fx_server_start(fx_server_t *srv, const char *const *extra, char *err, size_t errlen) {
  memset(srv, 0, sizeof *srv);
  srv->pid = -1;
  srv->out_fd = -1;
  if (!fx_rdevd_path) return snprintf(err, errlen, "no rdevd path given"), -1;
  const char *argv[40];
  int n = 0;
  argv[n++] = fx_rdevd_path;
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  argv[n++] = "--sim-mem";
  argv[n++] = "64M";
  /* a broken session waits 3 s for its client (not 60): what a killed
   * client or server leaves is gone soon (a test may ask for more) */
  argv[n++] = "--resume-ms";
  argv[n++] = "3000";
  argv[n++] = "--log-level";
  /* RDEV_ITEST_LOG_LEVEL=debug shows the servers' logs when a test needs looking into */
  argv[n++] = getenv("RDEV_ITEST_LOG_LEVEL") ? getenv("RDEV_ITEST_LOG_LEVEL") : "warn";
  /* RDEV_TEST_RDEVD_ARGS: the backend under test (tests/CMakeLists.txt runs
   * every suite on the sim and on acl over the ACL test double) */
  static char backend_args[1024];
  snprintf(backend_args, sizeof backend_args, "%s",
           getenv("RDEV_TEST_RDEVD_ARGS") ? getenv("RDEV_TEST_RDEVD_ARGS") : "");
  char *save = NULL;
  for (char *w = strtok_r(backend_args, " ", &save); w && n < 30; w = strtok_r(NULL, " ", &save)) argv[n++] = w;
  for (int i = 0; extra && extra[i] && n < 39; i++) argv[n++] = extra[i];
  argv[n] = NULL;

  /* rdevd's stdout is an unlinked file, not a pipe: what it prints there
   * (kernel print on acl, which CANN writes to the process's stdout) can
   * never fill a pipe and stall it, and no thread has to read it (tests
   * fork, and a forked child of a threaded process may not make threads) */
  char path[] = "/tmp/rdevd-stdout-XXXXXX";
  int p[2] = {-1, mkostemp(path, O_CLOEXEC)};
  if (p[1] >= 0) p[0] = open(path, O_RDONLY | O_CLOEXEC);
  if (p[1] >= 0) unlink(path);
  if (p[0] < 0) {
    if (p[1] >= 0) close(p[1]);
    return snprintf(err, errlen, "stdout file: %s", strerror(errno)), -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return snprintf(err, errlen, "fork: %s", strerror(errno)), -1;
  }
  if (pid == 0) {
    /* Dies with the test process, whatever way that goes. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    if (dup2(p[1], STDOUT_FILENO) < 0) _exit(127);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(p[1]);
  srv->pid = pid;
  srv->out_fd = p[0];

  /* The first line: "rdevd listening on 127.0.0.1:PORT". */
  char line[256];
  size_t len = 0;
  double deadline = fx_now() + 30;
  while (len < sizeof line - 1 && !memchr(line, '\n', len)) {
    if (fx_now() > deadline) {
      snprintf(err, errlen, "rdevd printed no address within 30 s");
      goto fail;
    }
    ssize_t r = read(srv->out_fd, line + len, sizeof line - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      snprintf(err, errlen, "reading rdevd's stdout: %s", strerror(errno));
      goto fail;
    }
    if (r == 0) { /* nothing more yet: unless rdevd has ended, wait for it */
      if (waitpid(srv->pid, &srv->status, WNOHANG) == srv->pid) {
        srv->reaped = 1;
        srv->pid = -1;
        snprintf(err, errlen, "rdevd ended before printing its address");
        return -1;
      }
      fx_sleep_ms(5);
      continue;
    }
    len += (size_t)r;
    line[len] = '\0';
  }
  line[len] = '\0';
  int port = 0;
  char sock[100];
  if (sscanf(line, "rdevd listening on unix:%99s", sock) == 1) { /* --listen unix:PATH */
    srv->port = 0;
    snprintf(srv->target, sizeof srv->target, "unix:%s", sock);
    return 0;
  }
  if (sscanf(line, "rdevd listening on 127.0.0.1:%d", &port) != 1 || port <= 0 || port > 65535) {
    snprintf(err, errlen, "unexpected first line from rdevd: '%s'", line);
    goto fail;
  }
  srv->port = port;
  snprintf(srv->target, sizeof srv->target, "127.0.0.1:%d", port);
  return 0;

fail:
  kill(srv->pid, SIGKILL);
  fx_server_wait(srv, 10);
  return -1;
}

/* Records the exit of srv (wait status st) and returns st. */
static int server_reaped(fx_server_t *srv, int st) {
  srv->reaped = 1;
  srv->status = st;
  srv->pid = -1;
  if (srv->out_fd >= 0) close(srv->out_fd);
  srv->out_fd = -1;
  return st;
}

int fx_server_wait(fx_server_t *srv, double timeout_s) {
  if (srv->reaped) return srv->status;
  if (srv->pid <= 0) return -1;
  double deadline = fx_now() + timeout_s;
  for (;;) {
    int st = 0;
    pid_t r = waitpid(srv->pid, &st, WNOHANG);
    if (r == srv->pid) return server_reaped(srv, st);
    if (r < 0 && errno != EINTR) return -1;
    if (fx_now() > deadline) return -1;
    fx_sleep_ms(10);
  }
}

int fx_server_signal_wait(fx_server_t *srv, int sig, double timeout_s) {
  if (srv->reaped) return srv->status;
  if (srv->pid <= 0) return -1;
  kill(srv->pid, sig);
  int st = fx_server_wait(srv, timeout_s);
  if (st == -1 && srv->pid > 0) {
    kill(srv->pid, SIGKILL);
    fx_server_wait(srv, 10);
    return -1;
  }
  return st;
}

int fx_server_freeze(fx_server_t *srv, double timeout_s) {
  if (srv->reaped || srv->pid <= 0) return -1;
  if (kill(srv->pid, SIGSTOP) != 0) return -1;
  double deadline = fx_now() + timeout_s;
  for (;;) {
    int st = 0;
    pid_t r = waitpid(srv->pid, &st, WNOHANG | WUNTRACED);
    if (r == srv->pid && WIFSTOPPED(st)) return 0;
    if (r == srv->pid) return server_reaped(srv, st), -1; /* it died instead */
    if (r < 0 && errno != EINTR) return -1;
    if (fx_now() > deadline) return -1;
    fx_sleep_ms(1);
  }
}

void fx_setup(void) {
  char err[512];
  int rc = fx_server_start(&fx_srv, NULL, err, sizeof err);
  ck_assert_msg(rc == 0, "cannot start rdevd: %s", err);
}

void fx_tenant_server_start(fx_server_t *srv, char token[44], const char *settings, const char *const *extra_args) {
  char hash[72], path[] = "/tmp/rdev-itest-tenants-XXXXXX";
  FX_OK(rdev_token_new(token, 44));
  FX_OK(rdev_token_hash(token, hash, sizeof hash));
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  char text[1024];
  int len = snprintf(text, sizeof text, "[tenant itest]\ntoken = %s\n%s", hash, settings);
  ck_assert(len > 0 && (size_t)len < sizeof text);
  ck_assert_int_eq(write(fd, text, (size_t)len), len);
  close(fd);
  char err[512];
  const char *extra[16] = {"--tenants", path, "--log-level", "error"};
  for (int i = 0; extra_args && extra_args[i] && i < 11; i++) extra[4 + i] = extra_args[i];
  int started = fx_server_start(srv, extra, err, sizeof err);
  unlink(path);
  ck_assert_msg(started == 0, "cannot start rdevd: %s", err);
}

void fx_server_stop(fx_server_t *srv) {
  int st = fx_server_signal_wait(srv, SIGTERM, 30);
  char buf[64];
  ck_assert_msg(st != -1, "rdevd did not exit within 30 s of SIGTERM (killed)");
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rdevd ended with %s after SIGTERM, want exit 0",
                fx_describe_status(st, buf, sizeof buf));
}

void fx_teardown(void) {
  if (fx_srv.reaped || fx_srv.pid <= 0) return; /* the test stopped it itself */
  fx_server_stop(&fx_srv);
}

TCase *fx_tcase(const char *name) {
  TCase *tc = tcase_create(name);
  tcase_add_checked_fixture(tc, fx_setup, fx_teardown);
  tcase_set_timeout(tc, FX_TEST_TIMEOUT);
  return tc;
}

/* ---- programs ---------------------------------------------------------------- */

int fx_run(const char *const argv[], double timeout_s, char **out, size_t *outlen) {
  *out = NULL;
  if (outlen) *outlen = 0;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    errno = rc;
    return -1;
  }
  size_t cap = 65536, len = 0;
  char *buf = fx_xmalloc(cap);
  double deadline = fx_now() + timeout_s;
  for (;;) {
    int left = (int)((deadline - fx_now()) * 1000);
    if (left <= 0) break;
    struct pollfd pf = {p[0], POLLIN, 0};
    int pr = poll(&pf, 1, left);
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) break;
    if (len + 4096 + 1 > cap) {
      cap *= 2;
      char *nb = realloc(buf, cap);
      ck_assert_msg(nb != NULL, "out of host memory");
      buf = nb;
    }
    ssize_t r = read(p[0], buf + len, cap - len - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  buf[len] = '\0';
  close(p[0]);
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (fx_now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      st = -1;
      break;
    }
    fx_sleep_ms(10);
  }
  *out = buf;
  if (outlen) *outlen = len;
  return st;
}

/* ---- sessions ------------------------------------------------------------------ */

static void discard_print(void *user, const char *text, size_t len) {
  (void)user;
  (void)text;
  (void)len;
}

rdev_session_t *fx_open_target(const char *target) {
  rdev_session_t *s = NULL;
  rdev_options_t o = {.connect_timeout_ms = 20000};
  FX_OK(rdev_session_open(target, &o, &s));
  ck_assert_ptr_nonnull(s);
  rdev_session_set_print_fn(s, discard_print, NULL); /* kernel prints: tests capture their own */
  return s;
}

rdev_session_t *fx_open(void) { return fx_open_target(fx_srv.target); }

size_t fx_wait_free(rdev_session_t *s, size_t want, double timeout_s) {
  double deadline = fx_now() + timeout_s;
  size_t fr = 0, total = 0;
  for (;;) {
    FX_OK(rdev_mem_info(s, &fr, &total));
    if (fr == want || fx_now() > deadline) return fr;
    fx_sleep_ms(20);
  }
}

/* ---- kernel print capture ------------------------------------------------------ */

void fx_capture_init(fx_capture_t *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
}

void fx_capture_fn(void *user, const char *text, size_t len) {
  fx_capture_t *c = user;
  pthread_mutex_lock(&c->mu);
  size_t room = sizeof c->text - 1 - c->len;
  if (len > room) len = room;
  memcpy(c->text + c->len, text, len);
  c->len += len;
  c->text[c->len] = '\0';
  c->calls++;
  pthread_mutex_unlock(&c->mu);
}

void fx_capture_get(fx_capture_t *c, char *buf, size_t len) {
  pthread_mutex_lock(&c->mu);
  snprintf(buf, len, "%s", c->text);
  pthread_mutex_unlock(&c->mu);
}
