/*
 * tests/chaos/chaos_proxy_main.c — `chaos_proxy`, the chaos proxy
 * (chaos_proxy.h) as a program: routes from the command line, a random
 * schedule of faults drawn from a seed, and commands on standard input.
 * It prints each route's address on stdout ("route N LISTEN -> UPSTREAM"),
 * each fault it fires and a counters line every --report seconds on
 * stderr, and the counters at the end (after --duration, SIGINT,
 * SIGTERM or "quit"; an end of input leaves the schedule running).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chaos_proxy.h"

static volatile sig_atomic_t g_stop;

/* SIGINT, SIGTERM: stop. */
static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* CLOCK_MONOTONIC in seconds. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* splitmix64: the next number of *state. */
static uint64_t rnd(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* An interval around mean_ms, uniform in [mean/2, 3*mean/2], in seconds. */
static double interval(uint64_t *state, int mean_ms) {
  return (mean_ms / 2 + (double)(rnd(state) % (uint64_t)(mean_ms + 1))) / 1e3;
}

/* Prints the usage and exits 2. */
static void usage(void) {
  fprintf(stderr,
          "usage: chaos_proxy --route LISTEN=UPSTREAM [--route ...] [options]\n"
          "       chaos_proxy --free-port HOST\n"
          "  --route L=U          listen on L (IPv4 HOST:PORT, port 0: any), carry to U; up to %d\n"
          "  --delay-ms N         hold every byte N ms, each way\n"
          "  --throttle BPS       each direction of each connection at most BPS bytes/s\n"
          "  --seed S             the random schedule's seed (default 1)\n"
          "  --cut-every MS       cut all connections every MS ms on average (uniform 0.5..1.5 x)\n"
          "  --refuse-ms MS       after each cut, refuse new connections for MS ms\n"
          "  --how fin|rst|mixed  how cuts close (default mixed: a coin per cut)\n"
          "  --stall-every MS     stall every MS ms on average ...\n"
          "  --stall-ms MS        ... for MS ms (default 500)\n"
          "  --random-cut LO:HI[:PERMILLE]  cut connections after LO..HI bytes (of PERMILLE per 1000, default all)\n"
          "  --duration S         stop after S seconds (default: on SIGINT/SIGTERM or 'quit')\n"
          "  --report S           counters on stderr every S seconds (default 10; 0: none)\n"
          "Commands on standard input, one a line:\n"
          "  cut [fin|rst] [REFUSE_MS] [ROUTE] | stall MS | throttle BPS | delay MS\n"
          "  random LO HI PERMILLE [fin|rst] | stats | quit\n"
          "rdevd's bulk connection: run rdevd with --bulk-listen 127.0.0.1:B, where B is what\n"
          "`chaos_proxy --free-port 127.0.0.2` printed, and give two routes:\n"
          "  --route 127.0.0.2:0=127.0.0.1:P --route 127.0.0.2:B=127.0.0.1:B\n"
          "(clients attach their bulk connection to port B of the host they reached).\n",
          CHAOS_MAX_ROUTES);
  exit(2);
}

/* The counters of all routes, one line on stderr. */
static void print_counters(chaos_proxy_t *p, const char *when) {
  chaos_counters_t c = chaos_proxy_counters(p, CHAOS_ALL_ROUTES);
  fprintf(stderr,
          "chaos_proxy: %s: accepted=%" PRIu64 " refused=%" PRIu64 " upstream_failed=%" PRIu64 " live=%" PRIu64
          " bytes_up=%" PRIu64 " bytes_down=%" PRIu64 " cuts=%" PRIu64 " random_cuts=%" PRIu64 "\n",
          when, c.accepted, c.refused, c.upstream_failed, c.live, c.bytes_up, c.bytes_down, c.cuts, c.random_cuts);
}

/* Runs one command line; 1 on "quit". */
static int command(chaos_proxy_t *p, char *line) {
  char w[5][32] = {{0}};
  int n = sscanf(line, "%31s %31s %31s %31s %31s", w[0], w[1], w[2], w[3], w[4]);
  if (n <= 0) return 0;
  if (!strcmp(w[0], "quit")) return 1;
  if (!strcmp(w[0], "stats")) {
    print_counters(p, "stats");
  } else if (!strcmp(w[0], "cut")) {
    chaos_how_t how = n > 1 && !strcmp(w[1], "rst") ? CHAOS_RST : CHAOS_FIN;
    int k = chaos_proxy_cut(p, n > 3 ? atoi(w[3]) : CHAOS_ALL_ROUTES, how, n > 2 ? atoi(w[2]) : 0);
    fprintf(stderr, "chaos_proxy: cut %d connections (%s)\n", k, how == CHAOS_RST ? "rst" : "fin");
  } else if (!strcmp(w[0], "stall") && n > 1) {
    chaos_proxy_stall(p, atoi(w[1]));
  } else if (!strcmp(w[0], "throttle") && n > 1) {
    chaos_proxy_throttle(p, strtoull(w[1], NULL, 10));
  } else if (!strcmp(w[0], "delay") && n > 1) {
    chaos_proxy_delay(p, strtoull(w[1], NULL, 10) * 1000);
  } else if (!strcmp(w[0], "random") && n > 3) {
    chaos_proxy_random_cut(p, CHAOS_ALL_ROUTES, strtoull(w[1], NULL, 10), strtoull(w[2], NULL, 10), atoi(w[3]),
                           (uint64_t)time(NULL), n > 4 && !strcmp(w[4], "rst") ? CHAOS_RST : CHAOS_FIN);
  } else {
    fprintf(stderr, "chaos_proxy: unknown command: %s\n", line);
  }
  return 0;
}

/* Arguments, routes, then the schedule and the commands until the end. */
int main(int argc, char **argv) {
  const char *routes[CHAOS_MAX_ROUTES];
  int nroutes = 0, delay_ms = 0, cut_every = 0, refuse_ms = 0, stall_every = 0, stall_ms = 500, report = 10;
  int how = -1, permille = 1000;
  uint64_t seed = 1, throttle = 0, rlo = 0, rhi = 0;
  double duration = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--free-port") && v) {
      int port = chaos_proxy_free_port(v);
      if (port < 0) return fprintf(stderr, "chaos_proxy: no port free on both %s and 127.0.0.1\n", v), 1;
      printf("%d\n", port);
      return 0;
    }
    if (!v || a[0] != '-') usage();
    i++;
    if (!strcmp(a, "--route") && nroutes < CHAOS_MAX_ROUTES && strchr(v, '='))
      routes[nroutes++] = v;
    else if (!strcmp(a, "--delay-ms"))
      delay_ms = atoi(v);
    else if (!strcmp(a, "--throttle"))
      throttle = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--seed"))
      seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--cut-every"))
      cut_every = atoi(v);
    else if (!strcmp(a, "--refuse-ms"))
      refuse_ms = atoi(v);
    else if (!strcmp(a, "--how"))
      how = !strcmp(v, "fin") ? CHAOS_FIN : !strcmp(v, "rst") ? CHAOS_RST : !strcmp(v, "mixed") ? -1 : (usage(), 0);
    else if (!strcmp(a, "--stall-every"))
      stall_every = atoi(v);
    else if (!strcmp(a, "--stall-ms"))
      stall_ms = atoi(v);
    else if (!strcmp(a, "--random-cut")) {
      unsigned long long lo = 0, hi = 0;
      int pm = 1000, got = sscanf(v, "%llu:%llu:%d", &lo, &hi, &pm);
      if (got < 2 || lo < 1 || hi < lo) usage();
      rlo = lo, rhi = hi, permille = pm;
    } else if (!strcmp(a, "--duration"))
      duration = atof(v);
    else if (!strcmp(a, "--report"))
      report = atoi(v);
    else
      usage();
  }
  if (!nroutes || delay_ms < 0 || cut_every < 0 || stall_every < 0 || stall_ms < 0 || report < 0) usage();

  signal(SIGPIPE, SIG_IGN);
  sigset_t block, none;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigprocmask(SIG_BLOCK, &block, &none); /* delivered only inside ppoll below */
  struct sigaction sa = {.sa_handler = on_signal};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  chaos_proxy_t *p = chaos_proxy_new();
  if (!p) return fprintf(stderr, "chaos_proxy: %s\n", strerror(errno)), 1;
  chaos_proxy_delay(p, (uint64_t)delay_ms * 1000);
  chaos_proxy_throttle(p, throttle);
  if (rlo)
    chaos_proxy_random_cut(p, CHAOS_ALL_ROUTES, rlo, rhi, permille, seed, how == CHAOS_RST ? CHAOS_RST : CHAOS_FIN);
  for (int i = 0; i < nroutes; i++) {
    char listen_on[128], addr[64], err[256];
    snprintf(listen_on, sizeof listen_on, "%s", routes[i]);
    char *up = strchr(listen_on, '=');
    *up++ = '\0';
    if (chaos_proxy_listen(p, listen_on, up, addr, sizeof addr, err, sizeof err) < 0) {
      fprintf(stderr, "chaos_proxy: %s\n", err);
      chaos_proxy_free(p);
      return 1;
    }
    printf("route %d %s -> %s\n", i, addr, up);
  }
  fflush(stdout);

  uint64_t state = seed ^ 0x5DEECE66Dull;
  double t0 = now_s(), next_cut = cut_every ? t0 + interval(&state, cut_every) : 0;
  double next_stall = stall_every ? t0 + interval(&state, stall_every) : 0, next_report = report ? t0 + report : 0;
  char line[256];
  size_t len = 0;
  int input = 1;
  while (!g_stop) {
    double t = now_s(), wake = duration > 0 ? t0 + duration : t + 3600;
    if (duration > 0 && t >= t0 + duration) break;
    if (next_cut && t >= next_cut) {
      chaos_how_t h = how >= 0 ? (chaos_how_t)how : (chaos_how_t)(rnd(&state) & 1);
      int k = chaos_proxy_cut(p, CHAOS_ALL_ROUTES, h, refuse_ms);
      fprintf(stderr, "chaos_proxy: %.3f s: cut %d connections (%s), refusing %d ms\n", t - t0, k,
              h == CHAOS_RST ? "rst" : "fin", refuse_ms);
      next_cut = t + interval(&state, cut_every);
    }
    if (next_stall && t >= next_stall) {
      chaos_proxy_stall(p, stall_ms);
      fprintf(stderr, "chaos_proxy: %.3f s: stall %d ms\n", t - t0, stall_ms);
      next_stall = t + stall_ms / 1e3 + interval(&state, stall_every);
    }
    if (next_report && t >= next_report) {
      print_counters(p, "report");
      next_report = t + report;
    }
    if (next_cut && next_cut < wake) wake = next_cut;
    if (next_stall && next_stall < wake) wake = next_stall;
    if (next_report && next_report < wake) wake = next_report;
    double left = wake - now_s();
    if (left < 0) left = 0;
    struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
    struct pollfd pf = {.fd = input ? STDIN_FILENO : -1, .events = POLLIN};
    if (ppoll(&pf, 1, &ts, &none) <= 0) continue;
    ssize_t r = read(STDIN_FILENO, line + len, sizeof line - 1 - len);
    if (r <= 0) { /* no more input: the schedule goes on */
      input = 0;
      continue;
    }
    len += (size_t)r;
    line[len] = '\0';
    char *nl;
    int quit = 0;
    while (!quit && (nl = strchr(line, '\n'))) {
      *nl = '\0';
      quit = command(p, line);
      memmove(line, nl + 1, len - (size_t)(nl + 1 - line) + 1);
      len -= (size_t)(nl + 1 - line);
    }
    if (quit) break;
    if (len == sizeof line - 1) len = 0; /* an overlong line is dropped */
  }
  print_counters(p, "end");
  chaos_proxy_free(p);
  return 0;
}
