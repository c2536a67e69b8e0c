/*
 * tests/bench/bench_fair.c — fair sharing of a device between tenants,
 * measured on a real rdevd through the public client API.
 *
 * Usage: bench_fair RDEVD_BINARY [--quick]
 *
 * It writes a tenants file with four tenants (light, heavy, a and b, all
 * weight 1), starts rdevd on 127.0.0.1:0 with it and --sim-slots 2, and runs
 * the same phases twice: once with the scheduler (slots 2) and, as the
 * baseline, once without it (--sim-slots 0: every stream runs whenever its
 * thread does). The device work is the delay_us kernel, which holds a device
 * slot for a set time without using the CPU, so what is measured is the
 * device scheduler rather than this 2-core machine's CPU contention.
 *
 * 1. latency: the light tenant runs launch(delay_us 200) + synchronize in a
 *    closed loop, alone, then while the heavy tenant submits 10x the light
 *    tenant's rate (measured alone) of the same kernel over 4 streams.
 *    light_latency_ratio = median latency under load / median alone
 *    (target <= 2).
 * 2. shares: tenants a (4 streams) and b (2 streams) both keep their streams
 *    full of delay_us(500) for a while; share_a = a's completed kernels /
 *    both. Equal weights: the target is 0.45..0.55 (within 10%).
 *
 * Output: a table, then one summary line of key=value pairs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdev/rdev.h"

#define CHECK(call) \
  do { \
    int rc_ = (call); \
    if (rc_ != RDEV_OK) { \
      fprintf(stderr, "bench_fair: %s: %s (%d): %s\n", #call, rdev_strerror(rc_), rc_, rdev_session_last_error()); \
      exit(1); \
    } \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char *names[] = {"light", "heavy", "a", "b"};
static char tokens[4][64];
static char addr[128];

static rdev_session_t *open_as(int tenant) {
  rdev_options_t o = {.token = tokens[tenant]};
  rdev_session_t *s;
  CHECK(rdev_session_open(addr, &o, &s));
  return s;
}

static void launch_delay(rdev_stream_t *st, uint32_t us) {
  rdev_arg_t a = {.type = RDEV_ARG_U32, .v.u32 = us};
  CHECK(rdev_launch(st, "delay_us", 1, &a, 1));
}

/* ---- phase 1: latency of a light tenant ----------------------------------- */

static double light_latency_us(rdev_session_t *s, rdev_stream_t *st, double seconds, double *rate) {
  static double lat[200000];
  int n = 0;
  double t_end = now_s() + seconds, t0 = now_s();
  while (now_s() < t_end && n < (int)(sizeof lat / sizeof lat[0])) {
    double t = now_s();
    launch_delay(st, 200);
    CHECK(rdev_stream_synchronize(st));
    lat[n++] = (now_s() - t) * 1e6;
  }
  (void)s;
  *rate = n / (now_s() - t0);
  qsort(lat, (size_t)n, sizeof lat[0], cmp_double);
  return lat[n / 2];
}

typedef struct {
  double rate; /* kernels per second to submit */
  atomic_int stop;
  long submitted;
} heavy_t;

static void *heavy_main(void *arg) {
  heavy_t *h = arg;
  rdev_session_t *s = open_as(1);
  rdev_stream_t *st[4];
  for (int i = 0; i < 4; i++) CHECK(rdev_stream_create(s, &st[i]));
  double t0 = now_s();
  long k = 0;
  while (!atomic_load(&h->stop)) {
    double due = t0 + (double)k / h->rate;
    double wait = due - now_s();
    if (wait > 0) usleep((useconds_t)(wait * 1e6));
    launch_delay(st[k % 4], 200);
    k++;
    if (k % 64 == 0) /* keep the queues short: this is load, not a backlog */
      for (int i = 0; i < 4; i++) CHECK(rdev_stream_synchronize(st[i]));
  }
  for (int i = 0; i < 4; i++) {
    CHECK(rdev_stream_synchronize(st[i]));
    CHECK(rdev_stream_destroy(st[i]));
  }
  h->submitted = k;
  rdev_session_close(s);
  return NULL;
}

/* ---- phase 2: throughput shares ------------------------------------------- */

typedef struct {
  int tenant, nstreams;
  atomic_int *stop;
  long done;
} flood_t;

static void *flood_main(void *arg) {
  flood_t *f = arg;
  rdev_session_t *s = open_as(f->tenant);
  rdev_stream_t *st[8];
  for (int i = 0; i < f->nstreams; i++) CHECK(rdev_stream_create(s, &st[i]));
  const int batch = 8;
  while (!atomic_load(f->stop)) {
    for (int i = 0; i < f->nstreams; i++)
      for (int b = 0; b < batch; b++) launch_delay(st[i], 500);
    for (int i = 0; i < f->nstreams; i++) CHECK(rdev_stream_synchronize(st[i]));
    f->done += (long)batch * f->nstreams;
  }
  for (int i = 0; i < f->nstreams; i++) CHECK(rdev_stream_destroy(st[i]));
  rdev_session_close(s);
  return NULL;
}

/* ---- server --------------------------------------------------------------- */

static pid_t start_rdevd(const char *bin, const char *tenants, const char *slots) {
  int fd[2];
  if (pipe(fd)) exit(1);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    execl(bin, bin, "--listen", "127.0.0.1:0", "--tenants", tenants, "--sim-slots", slots, "--sim-mem", "64M",
          "--log-level", "error", (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  FILE *f = fdopen(fd[0], "r");
  char line[256] = "";
  if (!f || !fgets(line, sizeof line, f) || sscanf(line, "rdevd listening on %127s", addr) != 1) {
    fprintf(stderr, "bench_fair: rdevd did not start\n");
    exit(1);
  }
  fclose(f);
  return pid;
}

static void stop_rdevd(pid_t pid) {
  int st;
  kill(pid, SIGTERM);
  waitpid(pid, &st, 0);
}

typedef struct {
  double alone_us, loaded_us, light_rate, heavy_rate, share_a;
  long done_a, done_b;
} result_t;

static result_t run(const char *bin, const char *tenants, const char *slots, double secs) {
  result_t r = {0};
  pid_t pid = start_rdevd(bin, tenants, slots);
  rdev_session_t *s = open_as(0);
  rdev_stream_t *st;
  CHECK(rdev_stream_create(s, &st));
  light_latency_us(s, st, 0.3, &r.light_rate); /* warm up */
  r.alone_us = light_latency_us(s, st, secs, &r.light_rate);
  heavy_t h = {.rate = 10 * r.light_rate};
  pthread_t ht;
  pthread_create(&ht, NULL, heavy_main, &h);
  usleep(300 * 1000);
  double lr;
  r.loaded_us = light_latency_us(s, st, secs, &lr);
  atomic_store(&h.stop, 1);
  pthread_join(ht, NULL);
  r.heavy_rate = h.submitted / (secs + 0.3);
  CHECK(rdev_stream_destroy(st));
  rdev_session_close(s);

  atomic_int stop = 0;
  flood_t fa = {.tenant = 2, .nstreams = 4, .stop = &stop}, fb = {.tenant = 3, .nstreams = 2, .stop = &stop};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, flood_main, &fa);
  pthread_create(&tb, NULL, flood_main, &fb);
  usleep((useconds_t)(secs * 2 * 1e6));
  atomic_store(&stop, 1);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  r.done_a = fa.done;
  r.done_b = fb.done;
  r.share_a = (double)fa.done / (double)(fa.done + fb.done);
  stop_rdevd(pid);
  return r;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_fair RDEVD_BINARY [--quick]\n");
    return 2;
  }
  double secs = argc > 2 && !strcmp(argv[2], "--quick") ? 0.5 : 3.0;
  char tenants[] = "/tmp/rdev-bench-fair-XXXXXX";
  int fd = mkstemp(tenants);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) return 1;
  for (int i = 0; i < 4; i++) {
    char hash[80];
    CHECK(rdev_token_new(tokens[i], sizeof tokens[i]));
    CHECK(rdev_token_hash(tokens[i], hash, sizeof hash));
    fprintf(f, "[tenant %s]\ntoken = %s\nweight = 1\n\n", names[i], hash);
  }
  fclose(f);

  result_t fair = run(argv[1], tenants, "2", secs);
  result_t none = run(argv[1], tenants, "0", secs);
  unlink(tenants);

  printf("Fair sharing of one sim device (delay_us kernels; 2 vCPU VM; all tenants weight 1)\n");
  printf("%-34s %14s %14s\n", "", "slots=2 (WFQ)", "slots=0 (none)");
  printf("%-34s %14.1f %14.1f\n", "light alone: launch+sync median us", fair.alone_us, none.alone_us);
  printf("%-34s %14.1f %14.1f\n", "light under 10x heavy: median us", fair.loaded_us, none.loaded_us);
  printf("%-34s %14.2f %14.2f\n", "  ratio (target <= 2)", fair.loaded_us / fair.alone_us,
         none.loaded_us / none.alone_us);
  printf("%-34s %14.0f %14.0f\n", "light ops/s alone", fair.light_rate, none.light_rate);
  printf("%-34s %14.0f %14.0f\n", "heavy kernels/s submitted", fair.heavy_rate, none.heavy_rate);
  printf("%-34s %14ld %14ld\n", "a (4 streams) kernels done", fair.done_a, none.done_a);
  printf("%-34s %14ld %14ld\n", "b (2 streams) kernels done", fair.done_b, none.done_b);
  printf("%-34s %14.3f %14.3f\n", "  share of a (target 0.45..0.55)", fair.share_a, none.share_a);
  printf(
      "light_latency_ratio=%.2f share_a=%.3f share_gap=%.3f baseline_light_latency_ratio=%.2f "
      "baseline_share_a=%.3f light_alone_us=%.1f light_loaded_us=%.1f\n",
      fair.loaded_us / fair.alone_us, fair.share_a, fair.share_a - (1 - fair.share_a), none.loaded_us / none.alone_us,
      none.share_a, fair.alone_us, fair.loaded_us);
  return 0;
}
