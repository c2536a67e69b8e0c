/*
 * tests/bench/rdev_bench/latency.c — rdev_latency: what a network's round
 * trip costs rdev's users. It starts an rdevd (sim, with its bulk port, as
 * by default) and, for each added round trip (default 0, 1, 10 and 30 ms),
 * a delaying proxy (tests/chaos/chaos_proxy.h) in front of it, with a
 * route for the session call and one for the bulk connection (every byte
 * crosses the delayed link), then
 * runs whole programs against the proxy, each a fresh process as a user
 * runs it, connection included:
 *   seed-c    the seed's D2H program on the C API (client/examples/d2h_async)
 *   seed-acl  the same program compiled against the ACL library
 *             (tests/acl/sample_d2h_async; RDEV_TARGET set, and
 *             LD_LIBRARY_PATH to the build's libascendcl.so)
 *   ping      `rdev ping -n 1`: open a session, one round trip
 *   py-step   a notebook-style step in one session of the Python package
 *             (py_step.py: upload 1 MiB, three kernels, download 1 MiB),
 *             timed by the script itself, without the connection
 * Each is run R times per delay (5; --quick 3) in turns; the table shows
 * median wall times and, for each delay, the round trips the program
 * costs beyond its run without delay: (t(d) - t(0)) / d. The last line is
 * key=value pairs (seed_c_rtts_10ms, seed_acl_rtts_10ms, ping_rtts_10ms,
 * and each program's ms at each delay) and targets_met=M/N: at 10 ms the
 * seed program costs at most 4 round trips more than without delay (C API
 * and ACL library). Targets are reported (met/MISSED), never fatal.
 *
 *   rdev_latency [--quick] [--rtts LIST_MS] [--reps R]
 *
 * Exit status 0; 1 when a program fails or rdevd does; 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "chaos_proxy.h"
#include "rdevd.h"

#define MAX_RTTS 8
#define MAX_REPS 15
#define TARGET_EXTRA_RTTS 4.0
#define TARGET_STEP_RTTS 1.1
#define NPROG 4
#define PROXY_HOST "127.0.0.2" /* another loopback address: see main */

typedef struct {
  const char *name;
  char path[4096];
  const char *args[6]; /* after the path; "@" = the address */
  double target;       /* at most this many round trips more at 10 ms (0: none) */
  char libdir[4096];   /* LD_LIBRARY_PATH, or "" (the ACL sample is built as against CANN: no rpath) */
  int reported;        /* prints "step_ms=X", the time it measured itself ("na ...": cannot run); 2: absent */
  char argbuf[2][4096];
} prog_t;

/* A reported program's "step_ms=X" from its output at fd: X / 1000 in
 * seconds, or -1 for "na". Dies on anything else. */
static double read_report(const prog_t *g, int fd) {
  char buf[256];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) n += (size_t)r;
  buf[n] = '\0';
  const char *v = strstr(buf, "step_ms=");
  if (v) return strtod(v + 8, NULL) / 1e3;
  if (!strncmp(buf, "na", 2)) return -1;
  die("%s printed no step time: '%s'", g->name, buf);
  return -1;
}

/* Runs prog against addr, output discarded; its wall time in seconds (a
 * reported program's own figure; -1: it cannot run here). Dies when it
 * fails or outlives 120 s. */
static double run_prog(const prog_t *g, const char *addr) {
  if (g->reported == 2) return -1;
  const char *argv[8] = {g->path};
  int n = 1;
  for (int i = 0; g->args[i]; i++) argv[n++] = strcmp(g->args[i], "@") ? g->args[i] : addr;
  argv[n] = NULL;
  int out[2] = {-1, -1};
  if (g->reported && pipe(out)) die("pipe: %s", strerror(errno));
  double t0 = now_s();
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (g->reported ? dup2(out[1], STDOUT_FILENO) < 0 : !freopen("/dev/null", "w", stdout)) _exit(127);
    setenv("RDEV_TARGET", addr, 1);
    if (g->libdir[0]) setenv("LD_LIBRARY_PATH", g->libdir, 1);
    alarm(120);
    execv(g->path, (char *const *)argv);
    _exit(127);
  }
  double reported = 0;
  if (g->reported) {
    close(out[1]);
    reported = read_report(g, out[0]);
    close(out[0]);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) die("waitpid: %s", strerror(errno));
  double t = g->reported ? reported : now_s() - t0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    die("%s against %s failed (%s %d)", g->name, addr, WIFEXITED(st) ? "exit" : "signal",
        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  return t;
}

static int parse_list(const char *s, int *out, int max) {
  int n = 0;
  char *end;
  for (;;) {
    long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v > 1000 || n == max) return -1;
    out[n++] = (int)v;
    if (*end == '\0') return n;
    if (*end != ',') return -1;
    s = end + 1;
  }
}

static void usage(void) {
  fprintf(stderr,
          "usage: rdev_latency [--quick] [--rtts LIST_MS] [--reps R]\n"
          "  --rtts LIST  added round trips in ms (default 0,1,10,30; 0 is always measured)\n"
          "  --reps R     runs per program and delay (1..15; default 5, --quick 3)\n");
  exit(2);
}

int main(int argc, char **argv) {
  int rtts[MAX_RTTS] = {0, 1, 10, 30}, nrtt = 4, reps = 0, quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--rtts") && i + 1 < argc)
      nrtt = parse_list(argv[++i], rtts, MAX_RTTS);
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else
      usage();
  }
  if (nrtt <= 0 || rtts[0] != 0) usage(); /* the first is the run without delay */
  if (!reps) reps = quick ? 3 : 5;
  if (reps < 1 || reps > MAX_REPS) usage();
  signal(SIGPIPE, SIG_IGN);

  static prog_t progs[NPROG] = {
      {.name = "seed-c", .args = {"@", NULL}, .target = TARGET_EXTRA_RTTS},
      {.name = "seed-acl", .args = {NULL}, .target = TARGET_EXTRA_RTTS},
      {.name = "ping", .args = {"--target", "@", "ping", "-n", "1", NULL}},
      {.name = "py-step", .path = "/usr/bin/python3", .target = TARGET_STEP_RTTS, .reported = 1},
  };
  exe_relative("../client/d2h_async", progs[0].path, sizeof progs[0].path);
  exe_relative("acl/sample_d2h_async", progs[1].path, sizeof progs[1].path);
  exe_relative("../client/rdev", progs[2].path, sizeof progs[2].path);
  exe_relative("../client/cann", progs[1].libdir, sizeof progs[1].libdir);
  prog_t *py = &progs[3]; /* Debian's python3, whose numpy the build's package is for */
  exe_relative("rdev_latency_py_step.py", py->argbuf[0], sizeof py->argbuf[0]);
  exe_relative("../python", py->argbuf[1], sizeof py->argbuf[1]);
  py->args[0] = py->argbuf[0];
  py->args[1] = py->argbuf[1];
  py->args[2] = "@";
  py->args[3] = quick ? "5" : "20"; /* timed steps */
  py->args[4] = NULL;
  for (int g = 0; g < NPROG; g++)
    if (access(progs[g].path, X_OK)) {
      if (!progs[g].reported) die("cannot run %s at %s: %s", progs[g].name, progs[g].path, strerror(errno));
      progs[g].reported = 2; /* no python3 here: no figure */
    }

  /* rdevd's bulk port B on 127.0.0.1; the proxies on PROXY_HOST, the bulk
   * one on the same port number: a client that reached the session's proxy
   * attaches its bulk connection to PROXY_HOST:B, through the delay too. */
  char rdevd[4096], addr[256], bulk_listen[64], bulk_up[64];
  int bulk_port = chaos_proxy_free_port(PROXY_HOST);
  if (bulk_port < 0) die("no port free on both 127.0.0.1 and %s", PROXY_HOST);
  snprintf(bulk_listen, sizeof bulk_listen, "%s:%d", PROXY_HOST, bulk_port);
  snprintf(bulk_up, sizeof bulk_up, "127.0.0.1:%d", bulk_port);
  rdevd_default_path(rdevd, sizeof rdevd);
  rdevd_start(rdevd, "127.0.0.1:0", bulk_up, 64u << 20, addr, sizeof addr);

  double ms[MAX_RTTS][NPROG];
  for (int d = 0; d < nrtt; d++) {
    char paddr[64], baddr[64];
    uint64_t one_way_us = (uint64_t)rtts[d] * 500u;
    char err[256];
    chaos_proxy_t *p = chaos_proxy_new();
    if (!p) die("cannot start a proxy: %s", strerror(errno));
    chaos_proxy_delay(p, one_way_us);
    if (chaos_proxy_listen(p, PROXY_HOST ":0", addr, paddr, sizeof paddr, err, sizeof err) < 0 ||
        chaos_proxy_listen(p, bulk_listen, bulk_up, baddr, sizeof baddr, err, sizeof err) < 0)
      die("proxy: %s", err);
    double t[NPROG][MAX_REPS];
    for (int r = 0; r < reps; r++)
      for (int g = 0; g < NPROG; g++) t[g][r] = run_prog(&progs[g], paddr);
    chaos_proxy_free(p);
    for (int g = 0; g < NPROG; g++) ms[d][g] = t[g][0] < 0 ? NAN : median(t[g], reps) * 1e3; /* NAN: cannot run */
  }
  if (rdevd_stop()) die("rdevd did not exit cleanly");

  printf(
      "Round trips (rdevd sim on loopback behind a proxy adding each RTT, its bulk connections too; "
      "medians of %d fresh processes, connection included; py-step: the median step in one session, "
      "nan: no numpy or package here):\n",
      reps);
  printf("  %-9s", "RTT ms");
  for (int g = 0; g < NPROG; g++) printf(" | %9s ms %6s", progs[g].name, "RTTs");
  printf("\n");
  for (int d = 0; d < nrtt; d++) {
    printf("  %-9d", rtts[d]);
    for (int g = 0; g < NPROG; g++)
      if (rtts[d])
        printf(" | %12.1f %6.1f", ms[d][g], (ms[d][g] - ms[0][g]) / rtts[d]);
      else
        printf(" | %12.1f %6s", ms[d][g], "-");
    printf("\n");
  }
  int met = 0, total = 0, at10 = -1;
  for (int d = 0; d < nrtt; d++)
    if (rtts[d] == 10) at10 = d;
  printf("Targets (at 10 ms RTT):\n");
  for (int g = 0; g < NPROG && at10 >= 0; g++) {
    if (!progs[g].target || isnan(ms[0][g])) continue;
    double extra = (ms[at10][g] - ms[0][g]) / 10.0;
    total++;
    met += extra <= progs[g].target;
    printf("  %-9s <= %.1f RTTs more than direct   %-6s  %.1f\n", progs[g].name, progs[g].target,
           extra <= progs[g].target ? "met" : "MISSED", extra);
  }
  for (int g = 0; g < NPROG; g++) {
    char key[32];
    snprintf(key, sizeof key, "%s", progs[g].name);
    for (char *c = key; *c; c++)
      if (*c == '-') *c = '_';
    if (at10 >= 0) printf("%s_rtts_10ms=%.2f ", key, (ms[at10][g] - ms[0][g]) / 10.0);
    for (int d = 0; d < nrtt; d++) printf("%s_ms_%d=%.1f ", key, rtts[d], ms[d][g]);
  }
  printf("targets_met=%d/%d\n", met, total);
  return 0;
}
