/*
 * tests/bench/soak.c — a soak of a real rdevd under mixed load: many sessions
 * of several tenants open, work and close for a set time, every result is
 * verified, and the server is watched for growth. Public client API only.
 *
 * Usage: soak RDEVD [--seconds N] [--sessions N] [--tenants N] [--report S]
 *   (defaults: 60 s, 8 sessions at once, 3 tenants, a row every 10 s)
 *
 * It starts RDEVD on 127.0.0.1:0 with a tenants file of its own (one token
 * per tenant), --sim-mem sized to the sessions and --log-level warn, and
 * faults in all device memory once (so that RSS shows rdevd's own). One
 * worker thread per session slot, of tenant slot % tenants, loops until the
 * deadline: open a session, pick a device, make a stream, an event and a
 * 4 MiB device buffer, run 10-100 operations chosen at random, release it
 * all and close (session churn). The operations, each checked:
 *   copy     H2D then D2H of 1 B .. 4 MiB (sync, or async + synchronize),
 *            compared byte for byte
 *   kernel   async H2D of up to 64Ki u32, inc_u32, async D2H, synchronize:
 *            every u32 one more
 *   memsets  100 pipelined rdev_memset_async, synchronize, D2H of them all
 *   event    record, event synchronize, event query: done; stream
 *            synchronize, stream query: idle
 *   malloc   1-4 small allocations, each read back zeroed, then freed
 *   meminfo  rdev_mem_info: free <= total
 * Every synchronous round trip's wall time goes into a latency histogram.
 * The main thread prints a row per report interval (operations, API calls,
 * errors, p50/p99 latency, rdevd's VmRSS and open descriptors), then the
 * verdicts: no errors; RSS flat after warm-up (the first row at 20 % of
 * the run against the last under load); descriptors back to their
 * count before the first session once all are closed; rdevd exits 0 after
 * SIGTERM (an ASan rdevd reports leaks at exit, which fails that). Exit 0
 * only if all hold. ctest runs it for one minute (soak_1min).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdev/rdev.h"

#define DEV_BYTES ((size_t)4 << 20) /* each session's device buffer; copies go up to all of it */
#define BURST 100                   /* memsets pipelined per memsets operation, 64 bytes each */
#define SYNC_MS 30000               /* a synchronize waiting longer than this is an error, not a hang */
#define MAX_ERRORS_SHOWN 10
#define HB 16 /* latency histogram: buckets per doubling (4.4 % wide), from 1 us */
#define NB (HB * 32)

enum { OP_COPY, OP_KERNEL, OP_MEMSETS, OP_EVENT, OP_MALLOC, OP_MEMINFO, NOPS };
static const char *const op_names[NOPS] = {"copy", "kernel", "memsets", "event", "malloc", "meminfo"};
static const int op_weight[NOPS] = {30, 20, 15, 15, 10, 10}; /* percent */

static char addr[128];
static double deadline;
static atomic_int stop, running;
static atomic_ullong n_ops[NOPS], n_calls, n_errors, n_bytes, n_sessions;
static atomic_ullong hist[NB];

typedef struct {
  int id;
  const char *token;
  uint64_t seed;
  uint8_t *src, *dst; /* DEV_BYTES each */
} worker_t;

typedef struct {
  rdev_session_t *s;
  rdev_stream_t *st;
  rdev_event_t *ev;
  uint8_t *dev;
} sess_t;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int over(void) { return atomic_load(&stop) || now() >= deadline; }

static uint64_t rnd(worker_t *w) {
  uint64_t x = w->seed;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return w->seed = x;
}

static void fill(worker_t *w, uint8_t *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rnd(w);
    memcpy(p + i, &v, 8);
  }
  for (; i < n; i++) p[i] = (uint8_t)rnd(w);
}

/* ---- errors and latency ---------------------------------------------------- */

/* Counts an error, shows the first few; returns -1 (the session ends). */
static int fail(worker_t *w, const char *what, int rc, const char *detail) {
  if (atomic_fetch_add(&n_errors, 1) < MAX_ERRORS_SHOWN)
    fprintf(stderr, "soak: worker %d: %s: %s (%d): %s\n", w->id, what, rc ? rdev_strerror(rc) : "mismatch", rc, detail);
  return -1;
}

static void lat_add(double secs) {
  double us = secs * 1e6;
  int b = us < 1 ? 0 : (int)(log2(us) * HB);
  atomic_fetch_add(&hist[b < NB ? b : NB - 1], 1);
}

/* The value below which fraction q of the histogram h lies (bucket middle). */
static double percentile(const unsigned long long *h, double q) {
  unsigned long long total = 0, sum = 0;
  for (int b = 0; b < NB; b++) total += h[b];
  if (!total) return 0;
  for (int b = 0; b < NB; b++)
    if ((sum += h[b]) >= q * (double)total) return exp2((b + 0.5) / HB);
  return exp2((double)NB / HB);
}

/* CALL: one API call, counted; RT: a synchronous round trip, also timed.
 * Either returns from the operation on failure. */
#define CALL(w, call) \
  do { \
    int rc_ = (call); \
    atomic_fetch_add(&n_calls, 1); \
    if (rc_ != RDEV_OK) return fail(w, #call, rc_, rdev_session_last_error()); \
  } while (0)
#define RT(w, call) \
  do { \
    double t_ = now(); \
    int rc_ = (call); \
    lat_add(now() - t_); \
    atomic_fetch_add(&n_calls, 1); \
    if (rc_ != RDEV_OK) return fail(w, #call, rc_, rdev_session_last_error()); \
  } while (0)

/* ---- the operations ---------------------------------------------------------- */

/* 1 B .. DEV_BYTES, as many of each power of two (small copies are common). */
static size_t rand_size(worker_t *w, size_t max) {
  size_t n = (size_t)1 << (rnd(w) % 23);
  n += rnd(w) % n;
  return n < max ? n : max;
}

static int op_copy(worker_t *w, sess_t *x) {
  size_t n = rand_size(w, DEV_BYTES), off = rnd(w) % (DEV_BYTES - n + 1);
  int sync = rnd(w) & 1;
  fill(w, w->src, n);
  memset(w->dst, 0xA5, n);
  if (sync) {
    RT(w, rdev_memcpy(x->s, x->dev + off, n, w->src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
    RT(w, rdev_memcpy(x->s, w->dst, n, x->dev + off, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  } else {
    CALL(w, rdev_memcpy_async(x->s, x->dev + off, n, w->src, n, RDEV_MEMCPY_HOST_TO_DEVICE, x->st));
    CALL(w, rdev_memcpy_async(x->s, w->dst, n, x->dev + off, n, RDEV_MEMCPY_DEVICE_TO_HOST, x->st));
    RT(w, rdev_stream_synchronize_timeout(x->st, SYNC_MS));
  }
  if (memcmp(w->src, w->dst, n) != 0) {
    char d[96];
    snprintf(d, sizeof d, "%s copy of %zu bytes at offset %zu came back different", sync ? "sync" : "async", n, off);
    return fail(w, "copy", 0, d);
  }
  atomic_fetch_add(&n_bytes, 2 * (unsigned long long)n);
  return 0;
}

static int op_kernel(worker_t *w, sess_t *x) {
  uint32_t k = 1 + (uint32_t)(rnd(w) % 65535); /* u32 words, one block each */
  size_t n = (size_t)k * 4, off = (rnd(w) % ((DEV_BYTES - n) / 4 + 1)) * 4;
  rdev_arg_t arg = {.type = RDEV_ARG_PTR, .v.ptr = x->dev + off};
  fill(w, w->src, n);
  CALL(w, rdev_memcpy_async(x->s, x->dev + off, n, w->src, n, RDEV_MEMCPY_HOST_TO_DEVICE, x->st));
  CALL(w, rdev_launch(x->st, "inc_u32", k, &arg, 1));
  CALL(w, rdev_memcpy_async(x->s, w->dst, n, x->dev + off, n, RDEV_MEMCPY_DEVICE_TO_HOST, x->st));
  RT(w, rdev_stream_synchronize_timeout(x->st, SYNC_MS));
  const uint32_t *a = (const uint32_t *)w->src, *b = (const uint32_t *)w->dst;
  for (uint32_t i = 0; i < k; i++)
    if (b[i] != a[i] + 1) {
      char d[96];
      snprintf(d, sizeof d, "inc_u32 over %u words: word %u is %u, want %u", k, i, b[i], a[i] + 1);
      return fail(w, "kernel", 0, d);
    }
  return 0;
}

static int op_memsets(worker_t *w, sess_t *x) {
  size_t off = (rnd(w) % ((DEV_BYTES - BURST * 64) / 64 + 1)) * 64;
  int v0 = (int)(rnd(w) & 0xff);
  for (int i = 0; i < BURST; i++)
    CALL(w, rdev_memset_async(x->s, x->dev + off + i * 64, 64, (v0 + i) & 0xff, 64, x->st));
  RT(w, rdev_stream_synchronize_timeout(x->st, SYNC_MS));
  RT(w, rdev_memcpy(x->s, w->dst, BURST * 64, x->dev + off, BURST * 64, RDEV_MEMCPY_DEVICE_TO_HOST));
  for (int i = 0; i < BURST * 64; i++)
    if (w->dst[i] != ((v0 + i / 64) & 0xff)) {
      char d[96];
      snprintf(d, sizeof d, "byte %d after %d memsets is %u, want %d", i, BURST, w->dst[i], (v0 + i / 64) & 0xff);
      return fail(w, "memsets", 0, d);
    }
  return 0;
}

static int op_event(worker_t *w, sess_t *x) {
  int ev_done = 0, st_done = 0;
  CALL(w, rdev_event_record(x->ev, x->st));
  RT(w, rdev_event_synchronize(x->ev, SYNC_MS));
  RT(w, rdev_event_query(x->ev, &ev_done));
  /* The stream is queried after its own synchronize: right after the
   * event's, rdevd may still count the record as queued (its worker
   * completes the event before it moves past the task), about 1 in 10^4. */
  RT(w, rdev_stream_synchronize_timeout(x->st, SYNC_MS));
  RT(w, rdev_stream_query(x->st, &st_done));
  if (!ev_done || !st_done) {
    char d[96];
    snprintf(d, sizeof d, "after synchronizes: event done %d, stream idle %d", ev_done, st_done);
    return fail(w, "event", 0, d);
  }
  return 0;
}

static int op_malloc(worker_t *w, sess_t *x) {
  for (int i = 1 + (int)(rnd(w) % 4); i > 0; i--) {
    void *p = NULL;
    size_t n = 1 + rnd(w) % 65536, m = n < 64 ? n : 64;
    RT(w, rdev_malloc(x->s, &p, n, RDEV_MEM_MALLOC_HUGE_FIRST));
    memset(w->dst, 0xA5, m);
    int rc = rdev_memcpy(x->s, w->dst, m, p, m, RDEV_MEMCPY_DEVICE_TO_HOST);
    atomic_fetch_add(&n_calls, 1);
    if (rc == RDEV_OK)
      for (size_t j = 0; j < m; j++)
        if (w->dst[j]) rc = -1;
    CALL(w, rdev_free(x->s, p));
    if (rc > 0) return fail(w, "rdev_memcpy of a new allocation", rc, rdev_session_last_error());
    if (rc < 0) return fail(w, "malloc", 0, "a new allocation is not zeroed");
  }
  return 0;
}

static int op_meminfo(worker_t *w, sess_t *x) {
  size_t free_b = 0, total = 0;
  RT(w, rdev_mem_info(x->s, &free_b, &total));
  if (!total || free_b > total) {
    char d[96];
    snprintf(d, sizeof d, "free %zu of total %zu", free_b, total);
    return fail(w, "meminfo", 0, d);
  }
  return 0;
}

static int (*const ops[NOPS])(worker_t *, sess_t *) = {op_copy, op_kernel, op_memsets, op_event, op_malloc, op_meminfo};

/* ---- sessions and workers ------------------------------------------------------ */

/* Sets the session up and runs its rounds; -1 at the first error. */
static int session_work(worker_t *w, sess_t *x) {
  rdev_options_t o = {.token = w->token};
  int ndev = 0;
  CALL(w, rdev_session_open(addr, &o, &x->s));
  atomic_fetch_add(&n_sessions, 1);
  CALL(w, rdev_device_count(x->s, &ndev));
  CALL(w, rdev_device_set(x->s, (int)(rnd(w) % (uint64_t)ndev)));
  CALL(w, rdev_stream_create(x->s, &x->st));
  CALL(w, rdev_event_create(x->s, &x->ev));
  RT(w, rdev_malloc(x->s, (void **)&x->dev, DEV_BYTES, RDEV_MEM_MALLOC_HUGE_FIRST));
  for (int r = 10 + (int)(rnd(w) % 91); r > 0 && !over(); r--) {
    int pick = (int)(rnd(w) % 100), op = 0;
    while (pick >= op_weight[op]) pick -= op_weight[op++];
    if (ops[op](w, x)) return -1;
    atomic_fetch_add(&n_ops[op], 1);
  }
  return 0;
}

/* Releases what session_work made, each release checked; closes. */
static int session_end(worker_t *w, sess_t *x) {
  if (x->ev) CALL(w, rdev_event_destroy(x->ev));
  if (x->dev) CALL(w, rdev_free(x->s, x->dev));
  if (x->st) CALL(w, rdev_stream_destroy(x->st));
  return 0;
}

static void *worker_main(void *arg) {
  worker_t *w = arg;
  while (!over()) {
    sess_t x = {0};
    int bad = session_work(w, &x);
    if (x.s) {
      if (session_end(w, &x)) bad = -1;
      rdev_session_close(x.s);
    }
    if (bad) usleep(10000); /* a server refusing everything is not spun on */
  }
  atomic_fetch_sub(&running, 1);
  return NULL;
}

/* ---- rdevd ------------------------------------------------------------------------ */

static long rdevd_rss_kib(pid_t pid) {
  char path[64], line[256];
  long kib = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

static int rdevd_fds(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(path);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return d ? n : -1;
}

/* Waits up to secs for pid to exit: its wait status, or -1 (still running). */
static int wait_exit(pid_t pid, double secs) {
  int st;
  for (double end = now() + secs; now() < end; usleep(20000))
    if (waitpid(pid, &st, WNOHANG) == pid) return st;
  return -1;
}

/* Starts rdevd with stdout into out_path; fills addr. Its pid, or -1. */
static pid_t rdevd_start(const char *rdevd, const char *tenants, const char *out_path, int sessions) {
  char mem[32];
  snprintf(mem, sizeof mem, "%dM", 32 + 6 * sessions); /* every session's buffers on one device, and room */
  int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlives the soak */
    dup2(out, STDOUT_FILENO);
    execl(rdevd, rdevd, "--listen", "127.0.0.1:0", "--tenants", tenants, "--sim-mem", mem, "--log-level", "warn",
          (char *)NULL);
    _exit(127);
  }
  close(out);
  /* The first line: "rdevd listening on 127.0.0.1:PORT". */
  for (double end = now() + 30; pid > 0 && now() < end; usleep(20000)) {
    FILE *f = fopen(out_path, "r");
    char line[256] = "";
    int got =
        f && fgets(line, sizeof line, f) && strchr(line, '\n') && sscanf(line, "rdevd listening on %127s", addr) == 1;
    if (f) fclose(f);
    if (got) return pid;
    if (waitpid(pid, NULL, WNOHANG) == pid) return -1;
  }
  if (pid > 0) kill(pid, SIGKILL), waitpid(pid, NULL, 0);
  return -1;
}

/* Touches all of every device's memory once (malloc all that is free,
 * memset, free): the sim's device memory is host memory that becomes
 * resident page by page as allocations first land on it, which would
 * creep up through the run towards --sim-mem per device. Done before the
 * run, RSS under load shows rdevd's own memory only. */
static int prefault(const char *token) {
  rdev_session_t *s = NULL;
  rdev_options_t o = {.token = token};
  int ndev = 0, rc = rdev_session_open(addr, &o, &s);
  if (!rc) rc = rdev_device_count(s, &ndev);
  for (int dev = 0; !rc && dev < ndev; dev++) {
    size_t free_b = 0, total = 0, n;
    void *p = NULL;
    if ((rc = rdev_device_set(s, dev)) || (rc = rdev_mem_info(s, &free_b, &total))) break;
    n = free_b - (free_b >> 6); /* some slack for the allocator's rounding */
    if (!(rc = rdev_malloc(s, &p, n, RDEV_MEM_MALLOC_HUGE_FIRST))) {
      rc = rdev_memset(s, p, n, 0, n);
      int frc = rdev_free(s, p);
      rc = rc ? rc : frc;
    }
  }
  if (rc) fprintf(stderr, "soak: prefault: %s (%d): %s\n", rdev_strerror(rc), rc, rdev_session_last_error());
  if (s) rdev_session_close(s);
  return rc;
}

/* ---- main: arguments, tenants, workers, the monitor, verdicts ------------------------ */

static int usage(void) {
  fprintf(stderr, "usage: soak RDEVD [--seconds N (60)] [--sessions N (8)] [--tenants N (3)] [--report S (10)]\n");
  return 2;
}

int main(int argc, char **argv) {
  int seconds = 60, nsess = 8, ntenants = 3, report = 10;
  if (argc < 2 || argv[1][0] == '-') return usage();
  for (int i = 2; i < argc; i += 2) {
    int *v = !strcmp(argv[i], "--seconds")    ? &seconds
             : !strcmp(argv[i], "--sessions") ? &nsess
             : !strcmp(argv[i], "--tenants")  ? &ntenants
             : !strcmp(argv[i], "--report")   ? &report
                                              : NULL;
    if (!v || i + 1 >= argc) return usage();
    *v = atoi(argv[i + 1]);
  }
  if (seconds < 1 || nsess < 1 || nsess > 256 || ntenants < 1 || ntenants > 64 || report < 1) return usage();

  /* A tenants file with one fresh token per tenant, in a directory of our own. */
  char dir[] = "/tmp/rdev-soak-XXXXXX", tenants[64], out_path[64];
  static char tokens[64][44];
  if (!mkdtemp(dir)) return perror("soak: mkdtemp"), 1;
  snprintf(tenants, sizeof tenants, "%s/tenants", dir);
  snprintf(out_path, sizeof out_path, "%s/rdevd.out", dir);
  FILE *tf = fopen(tenants, "w");
  for (int t = 0; tf && t < ntenants; t++) {
    char hash[72];
    if (rdev_token_new(tokens[t], sizeof tokens[t]) || rdev_token_hash(tokens[t], hash, sizeof hash)) return 1;
    fprintf(tf, "[tenant soak%d]\ntoken = %s\nmax_sessions = %d\n\n", t, hash, nsess);
  }
  if (!tf || fclose(tf)) return perror("soak: tenants file"), 1;
  pid_t pid = rdevd_start(argv[1], tenants, out_path, nsess);
  unlink(tenants);
  if (pid < 0) {
    fprintf(stderr, "soak: rdevd did not start (%s)\n", argv[1]);
    unlink(out_path), rmdir(dir);
    return 1;
  }
  int fds0 = rdevd_fds(pid); /* before any session */
  long rss0 = rdevd_rss_kib(pid), rss_dev = 0;
  if (prefault(tokens[0])) {
    kill(pid, SIGKILL), waitpid(pid, NULL, 0);
    unlink(out_path), rmdir(dir);
    return 1;
  }
  rss_dev = rdevd_rss_kib(pid) - rss0;
  printf(
      "soak: rdevd %d at %s, %d sessions of %d tenants, %d s; before any session %d descriptors, %.1f MiB;"
      " device memory faulted in: +%.1f MiB\n",
      (int)pid, addr, nsess, ntenants, seconds, fds0, (double)rss0 / 1024, (double)rss_dev / 1024);

  double t0 = now();
  deadline = t0 + seconds;
  worker_t *ws = calloc((size_t)nsess, sizeof *ws);
  pthread_t *th = calloc((size_t)nsess, sizeof *th);
  atomic_store(&running, nsess);
  for (int i = 0; i < nsess; i++) {
    ws[i] = (worker_t){i, tokens[i % ntenants], 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1), malloc(DEV_BYTES),
                       malloc(DEV_BYTES)};
    if (!ws[i].src || !ws[i].dst) return fprintf(stderr, "soak: out of host memory\n"), 1;
    pthread_create(&th[i], NULL, worker_main, &ws[i]);
  }

  /* The monitor: a row per interval until the deadline. Warm-up ends at
   * the first row at or past 20 % of the run; its RSS is the reference. */
  printf("%6s %9s %8s %8s %6s %8s %8s %8s %5s %8s\n", "t_s", "ops", "ops/s", "calls/s", "errors", "p50_us", "p99_us",
         "rss_MiB", "fds", "sessions");
  unsigned long long prev_ops = 0, prev_calls = 0, prev_h[NB] = {0}, all_h[NB];
  long rss_warm = -1, rss_last = -1;
  double t_warm = 0, t_prev = t0;
  int server_died = 0, reaped = 0;
  for (int row = 1; !server_died; row++) {
    double t = t0 + (double)row * report < deadline ? t0 + (double)row * report : deadline;
    struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) {}
    unsigned long long o = 0, c = atomic_load(&n_calls), h[NB];
    for (int i = 0; i < NOPS; i++) o += atomic_load(&n_ops[i]);
    for (int b = 0; b < NB; b++) {
      all_h[b] = atomic_load(&hist[b]);
      h[b] = all_h[b] - prev_h[b];
      prev_h[b] = all_h[b];
    }
    rss_last = rdevd_rss_kib(pid);
    reaped = waitpid(pid, NULL, WNOHANG) == pid;
    server_died = reaped || rss_last < 0;
    if (server_died) atomic_store(&stop, 1);
    if (rss_warm < 0 && t - t0 >= 0.2 * seconds - 1e-6) rss_warm = rss_last, t_warm = t - t0;
    printf("%6.0f %9llu %8.0f %8.0f %6llu %8.0f %8.0f %8.1f %5d %8llu\n", t - t0, o - prev_ops,
           (double)(o - prev_ops) / (t - t_prev), (double)(c - prev_calls) / (t - t_prev), atomic_load(&n_errors),
           percentile(h, 0.5), percentile(h, 0.99), (double)rss_last / 1024, rdevd_fds(pid), atomic_load(&n_sessions));
    fflush(stdout);
    prev_ops = o, prev_calls = c, t_prev = t;
    if (t >= deadline) break;
  }

  /* Workers end their session at the deadline; one stuck in a call for a
   * minute past it is a failure, and killing rdevd frees it. */
  int stuck = 0;
  for (double end = now() + 60; atomic_load(&running) > 0 && now() < end;) usleep(20000);
  if (atomic_load(&running) > 0) {
    stuck = atomic_load(&running);
    fprintf(stderr, "soak: %d workers still in a call 60 s past the deadline: killing rdevd\n", stuck);
    kill(pid, SIGKILL);
  }
  for (int i = 0; i < nsess; i++) pthread_join(th[i], NULL), free(ws[i].src), free(ws[i].dst);
  free(ws);
  free(th);

  /* Descriptors back to their count before any session: the server closes
   * a session's connections moments after the client did. */
  int fds_end = rdevd_fds(pid);
  for (double end = now() + 2; fds_end != fds0 && now() < end; fds_end = rdevd_fds(pid)) usleep(20000);
  long rss_end = rdevd_rss_kib(pid);

  /* SIGTERM: rdevd drains (up to --drain-ms, 5 s) and exits 0. */
  int st = -1;
  if (!server_died && !stuck) {
    kill(pid, SIGTERM);
    st = wait_exit(pid, 60);
  }
  if (st == -1 && !reaped) kill(pid, SIGKILL), waitpid(pid, NULL, 0);
  unlink(out_path);
  rmdir(dir);

  double secs = now() - t0;
  unsigned long long ops_total = 0, errors = atomic_load(&n_errors);
  printf("\nsoak: %.0f s, %llu sessions opened and closed, %llu API calls, %.2f GiB copied and verified\n", secs,
         atomic_load(&n_sessions), atomic_load(&n_calls), (double)atomic_load(&n_bytes) / (1 << 30));
  printf("soak: operations:");
  for (int i = 0; i < NOPS; i++) {
    ops_total += atomic_load(&n_ops[i]);
    printf(" %s %llu%s", op_names[i], atomic_load(&n_ops[i]), i + 1 < NOPS ? "," : "");
  }
  printf("; %.0f ops/s, round trips p50 %.0f us, p99 %.0f us\n", (double)ops_total / seconds, percentile(all_h, 0.5),
         percentile(all_h, 0.99));
  printf("soak: rdevd after all sessions closed: %.1f MiB, %d descriptors\n\n", (double)rss_end / 1024, fds_end);

  /* Verdicts. The RSS tolerance: 16 MiB + 10 % of rdevd's own memory at
   * the end of warm-up (its RSS less the device memory faulted in before
   * the run). Without any leak RSS moves by a few MiB between intervals:
   * glibc's per-thread arenas keep freed chunks and trim them lazily, and
   * the copies' buffers (chunks of up to 4 MiB, 32 MiB in flight per
   * session at most) come and go with the load; under ASan its quarantine
   * of freed memory adds more. A leak of 8 KiB per session, at the
   * thousands of sessions a minute this opens, passes the tolerance within
   * the default run, and a smaller one over a longer run. */
  long tol = 16 * 1024 + (rss_warm - rss_dev) / 10;
  int ok_err = errors == 0 && !stuck && !server_died;
  int ok_rss = rss_warm > 0 && rss_last > 0 && rss_last <= rss_warm + tol;
  int ok_fds = fds0 > 0 && fds_end == fds0;
  int ok_exit = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  printf("%s errors: %llu in %llu operations%s%s\n", ok_err ? "PASS" : "FAIL", errors, ops_total,
         stuck ? ", workers stuck" : "", server_died ? ", rdevd died during the run" : "");
  printf("%s rss: %.1f MiB at the end of the load vs %.1f MiB after warm-up (t=%.0f s), allowed +%.1f MiB\n",
         ok_rss ? "PASS" : "FAIL", (double)rss_last / 1024, (double)rss_warm / 1024, t_warm, (double)tol / 1024);
  printf("%s fds: %d after all sessions closed vs %d before any opened\n", ok_fds ? "PASS" : "FAIL", fds_end, fds0);
  if (st == -1)
    printf("FAIL rdevd exit: %s\n", server_died || stuck ? "not stopped by SIGTERM" : "no exit within 60 s of SIGTERM");
  else if (WIFEXITED(st))
    printf("%s rdevd exit: status %d after SIGTERM\n", ok_exit ? "PASS" : "FAIL", WEXITSTATUS(st));
  else
    printf("FAIL rdevd exit: signal %d after SIGTERM\n", WTERMSIG(st));
  int ok = ok_err && ok_rss && ok_fds && ok_exit;
  printf("soak: %s\n", ok ? "PASS" : "FAIL");
  printf(
      "result=%s seconds=%d sessions=%d tenants=%d ops=%llu ops_per_s=%.0f errors=%llu p50_us=%.0f p99_us=%.0f"
      " rss_warm_mib=%.1f rss_end_mib=%.1f fds_before=%d fds_after=%d sessions_opened=%llu\n",
      ok ? "PASS" : "FAIL", seconds, nsess, ntenants, ops_total, (double)ops_total / seconds, errors,
      percentile(all_h, 0.5), percentile(all_h, 0.99), (double)rss_warm / 1024, (double)rss_last / 1024, fds0, fds_end,
      atomic_load(&n_sessions));
  return !ok;
}
