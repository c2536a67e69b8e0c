/*
 * tests/bench/rdev_bench/latency.c — rdev_latency: what a network's round
 * trip costs rdev's users. It starts an rdevd (sim, with its bulk port, as
 * by default) and, for each added round trip (default 0, 1, 10 and 30 ms),
 * delay_proxy.c proxies in front of it, for the session call and for the
 * bulk connection (every byte crosses the delayed link), then
 * runs whole programs against the proxy, each a fresh process as a user
 * runs it, connection included:
 *   seed-c    the seed's D2H program on the C API (client/examples/d2h_async)
 *   seed-acl  the same program compiled against the ACL library
 *             (tests/acl/sample_d2h_async; RDEV_TARGET set, and
 *             LD_LIBRARY_PATH to the build's libascendcl.so)
 *   ping      `rdev ping -n 1`: open a session, one round trip
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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "delay_proxy.h"
#include "rdevd.h"

#define MAX_RTTS 8
#define MAX_REPS 15
#define TARGET_EXTRA_RTTS 4.0
#define PROXY_HOST "127.0.0.2" /* another loopback address: see main */

typedef struct {
  const char *name;
  char path[4096];
  const char *args[6]; /* after the path; "@" = the address */
  int target_rtts;     /* has the 4-RTT target */
  char libdir[4096];   /* LD_LIBRARY_PATH, or "" (the ACL sample is built as against CANN: no rpath) */
} prog_t;

/* Runs prog against addr, output discarded; its wall time in seconds. Dies
 * when it fails or outlives 120 s. */
static double run_prog(const prog_t *g, const char *addr) {
  const char *argv[8] = {g->path};
  int n = 1;
  for (int i = 0; g->args[i]; i++) argv[n++] = strcmp(g->args[i], "@") ? g->args[i] : addr;
  argv[n] = NULL;
  double t0 = now_s();
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    setenv("RDEV_TARGET", addr, 1);
    if (g->libdir[0]) setenv("LD_LIBRARY_PATH", g->libdir, 1);
    alarm(120);
    execv(g->path, (char *const *)argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) die("waitpid: %s", strerror(errno));
  double t = now_s() - t0;
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

  prog_t progs[3] = {{"seed-c", "", {"@", NULL}, 1, ""},
                     {"seed-acl", "", {NULL}, 1, ""},
                     {"ping", "", {"--target", "@", "ping", "-n", "1", NULL}, 0, ""}};
  exe_relative("../client/d2h_async", progs[0].path, sizeof progs[0].path);
  exe_relative("acl/sample_d2h_async", progs[1].path, sizeof progs[1].path);
  exe_relative("../client/rdev", progs[2].path, sizeof progs[2].path);
  exe_relative("../client/cann", progs[1].libdir, sizeof progs[1].libdir);
  for (int g = 0; g < 3; g++)
    if (access(progs[g].path, X_OK)) die("cannot run %s at %s: %s", progs[g].name, progs[g].path, strerror(errno));

  /* rdevd's bulk port B on 127.0.0.1; the proxies on PROXY_HOST, the bulk
   * one on the same port number: a client that reached the session's proxy
   * attaches its bulk connection to PROXY_HOST:B, through the delay too. */
  char rdevd[4096], addr[256], bulk_listen[64], bulk_up[64];
  int bulk_port = delay_proxy_free_port(PROXY_HOST);
  snprintf(bulk_listen, sizeof bulk_listen, "%s:%d", PROXY_HOST, bulk_port);
  snprintf(bulk_up, sizeof bulk_up, "127.0.0.1:%d", bulk_port);
  rdevd_default_path(rdevd, sizeof rdevd);
  rdevd_start(rdevd, "127.0.0.1:0", bulk_up, 64u << 20, addr, sizeof addr);

  double ms[MAX_RTTS][3];
  for (int d = 0; d < nrtt; d++) {
    char paddr[64], baddr[64];
    uint64_t one_way_us = (uint64_t)rtts[d] * 500u;
    delay_proxy_t *p = delay_proxy_start(PROXY_HOST ":0", addr, one_way_us, paddr, sizeof paddr);
    delay_proxy_t *bp = delay_proxy_start(bulk_listen, bulk_up, one_way_us, baddr, sizeof baddr);
    double t[3][MAX_REPS];
    for (int r = 0; r < reps; r++)
      for (int g = 0; g < 3; g++) t[g][r] = run_prog(&progs[g], paddr);
    delay_proxy_stop(bp);
    delay_proxy_stop(p);
    for (int g = 0; g < 3; g++) ms[d][g] = median(t[g], reps) * 1e3;
  }
  if (rdevd_stop()) die("rdevd did not exit cleanly");

  printf(
      "Round trips (rdevd sim on loopback behind a proxy adding each RTT, its bulk connections too; "
      "medians of %d fresh processes, connection included):\n",
      reps);
  printf("  %-9s", "RTT ms");
  for (int g = 0; g < 3; g++) printf(" | %9s ms %6s", progs[g].name, "RTTs");
  printf("\n");
  for (int d = 0; d < nrtt; d++) {
    printf("  %-9d", rtts[d]);
    for (int g = 0; g < 3; g++)
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
  for (int g = 0; g < 3 && at10 >= 0; g++) {
    if (!progs[g].target_rtts) continue;
    double extra = (ms[at10][g] - ms[0][g]) / 10.0;
    total++;
    met += extra <= TARGET_EXTRA_RTTS;
    printf("  %-9s <= %.0f RTTs more than direct   %-6s  %.1f\n", progs[g].name, TARGET_EXTRA_RTTS,
           extra <= TARGET_EXTRA_RTTS ? "met" : "MISSED", extra);
  }
  for (int g = 0; g < 3; g++) {
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
