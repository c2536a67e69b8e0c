/*
 * client/cli/bench.c — `rdev bench`: the data-plane benchmark of rdev. Every
 * rdev figure is measured through the public API (rdev/rdev.h) only; the
 * baselines it is compared with (raw TCP, bare gRPC, the in-process runtime)
 * live in bench_baseline.c, the one part of the tool not built on rdev.h.
 *
 *   rdev [--target ADDR] bench [--target ADDR] [--rdevd PATH] [--quick]
 *                              [--sizes LIST] [--reps N] [--malloc-tune]
 *
 * Without --target the bench starts its own rdevd on 127.0.0.1:0 (the binary
 * from --rdevd, else ../server/rdevd next to the rdev binary; 1 sim device)
 * and stops it at the end; only then can it measure the server's memory.
 * $RDEV_TARGET is not used here: measuring a server someone else runs must
 * be asked for. The rdev client runs in this process with glibc's malloc
 * defaults, as in a user's program (--malloc-tune: keep freed memory, to
 * see what trimming costs the client); the bare-gRPC baseline's server and
 * client run in two forked helper processes, tuned (bench_baseline.c says
 * how and why).
 *
 * What one run measures (clock_gettime(CLOCK_MONOTONIC); 1 GB = 1e9 bytes;
 * copies move chunks of the server's max_chunk (1 MiB), as rdev's wire does,
 * and so do the baselines' writes and messages; --quick values in []):
 * 1. Server memory (own rdevd only, first, on the fresh server): rdevd's
 *    VmRSS after a session allocated a 256 MiB [64 MiB] buffer and memset it
 *    (the arena pages are touched: the baseline), then the peak while the
 *    session moves 4 GiB [256 MiB] through it (at most 60 s [8 s]), rounds
 *    alternating sync memcpy H2D+D2H and async H2D+D2H+synchronize. Peak =
 *    max(VmRSS sampled every 2 ms, VmHWM reset via /proc/PID/clear_refs at
 *    the baseline); server_rss_mib = peak - baseline.
 * 2. Copies per size (4 KiB..256 MiB [..16 MiB]). Methods: rdev_memcpy H2D
 *    and D2H (sync; the headline figures); k x rdev_memcpy_async + one
 *    rdev_stream_synchronize ("-a"); raw TCP; bare gRPC upload and download
 *    on one long-lived stream (TCP and gRPC from one chunk on: below it they
 *    measure something else than rdev's round trips); rdev_rt_memcpy
 *    in-process ("rt"). Each method is calibrated (k doubled) so that a
 *    sample takes ~0.1 s [0.02 s]; the methods' samples are interleaved in
 *    each of 9 [3] reps (fewer, down to 3, when a size's reps would take over
 *    15 s [1.5 s]). A rep runs the network methods in a random order, then
 *    the two runtime copies: those move the most memory, and on this VM
 *    whichever method ran right after them was 25-40% slower at 256 MiB.
 *    So the method that opens a rep (right after the runtime copies of the
 *    rep before, or of calibration) takes turns: none opens more than
 *    ceil(reps / 7) reps (ceil(reps / 4) below one chunk, where TCP and
 *    gRPC do not run). The table shows medians. A ratio (e.g. h2d/tcp) is
 *    the median over reps of the ratio of the two samples of the same rep,
 *    so slow drifts of the VM cancel. Every size is then verified byte for
 *    byte: rdev sync and async H2D+D2H, and the runtime, TCP and gRPC
 *    paths.
 * 3. Latency: write_i32 launch (blocks=1) + rdev_stream_synchronize, a bare
 *    gRPC empty unary call and a synchronous rdev call (rdev_mem_info),
 *    sampled interleaved; medians and p99 of 2000 [200]. rtt_vs_grpc_unary
 *    is, like the copy ratios, the median of the paired ratios (launch+sync
 *    sample i / unary sample i, taken back to back); rtt_medians_ratio is
 *    the ratio of the two medians.
 * 4. Pipelined small ops: 100000 [20000] 64-byte rdev_memset_async on one
 *    stream, then one synchronize; ops/s = N / total, median of 3 [1] runs;
 *    the device bytes are checked.
 * 5. Concurrent sessions: 1, 2 and 4 threads, each with its own session and
 *    64 MiB [16 MiB] device buffer, doing sync H2D of it for 1 s [0.2 s]
 *    from one barrier; aggregate GB/s = all bytes / (last end - first
 *    start); 7 [2] reps, each running the three counts in a random order;
 *    the table shows medians, and scale_4_sessions is, like the copy
 *    ratios, the median of the paired ratios (4 sessions / 1 session of the
 *    same rep); read back and checked.
 *
 * The last line is one summary of key=value pairs: the ratios h2d_vs_tcp,
 * d2h_vs_tcp, h2d_vs_grpc, d2h_vs_grpc (sizes >= 64 MiB, or the largest size
 * when all are smaller: ratio_sizes_from_mib), rtt_vs_grpc_unary,
 * ops_per_s, server_rss_mib ("na" against --target), scale_4_sessions, the
 * raw figures behind them and targets_met=M/N. Targets are reported
 * (met/MISSED), never fatal. Exit status: 0; 1 when any rdev or baseline
 * call fails, data differ, or the rdevd the bench started died or did not
 * exit cleanly; 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "rdev/rdev.h"

#define MiB ((size_t)1 << 20)
/* rdev's wire chunk, as the server says (InfoReply.max_chunk); the
 * baselines use the same message/write size */
static size_t g_chunk = (size_t)1 << 20;
#define BIG_SIZE (64 * MiB)      /* the headline ratios are taken from this size on */
#define MAX_SIZES 24
#define MAX_REPS 15
#define KMAX 1000000L

/* ---- failing ------------------------------------------------------------------ */

static pid_t g_child; /* the rdevd we started, 0 if none */

static void child_kill_now(void) {
  if (g_child > 0) {
    kill(g_child, SIGKILL);
    waitpid(g_child, NULL, 0);
    g_child = 0;
  }
}

/* Any failure ends the run at once (from any thread). */
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rdev bench: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stdout);
  child_kill_now();
  _exit(1);
}

static void check_fail(const char *call, int rc, int line) {
  die("line %d: %s failed: %s (%d %s)%s%s", line, call, rdev_strerror(rc), rc, rdev_status_name(rc),
      *rdev_session_last_error() ? ": " : "", rdev_session_last_error());
}

#define CHECK(call)                                           \
  do {                                                        \
    int check_rc_ = (call);                                   \
    if (check_rc_ != RDEV_OK) check_fail(#call, check_rc_, __LINE__); \
  } while (0)

#define BL(call)                                                          \
  do {                                                                    \
    if ((call) != 0) die("line %d: baseline %s failed: %s", __LINE__, #call, bl_error()); \
  } while (0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (sorts v); NAN when n is 0. */
static double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double pct(double *sorted, int n, double p) {
  int i = (int)ceil(p * n) - 1;
  return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void size_label(size_t n, char *buf, size_t len) {
  if (n >= (size_t)1 << 30 && n % ((size_t)1 << 30) == 0) snprintf(buf, len, "%zu GiB", n >> 30);
  else if (n >= MiB && n % MiB == 0) snprintf(buf, len, "%zu MiB", n >> 20);
  else if (n >= 1024 && n % 1024 == 0) snprintf(buf, len, "%zu KiB", n >> 10);
  else snprintf(buf, len, "%zu B", n);
}

/* Host buffers are MAP_SHARED: the bare-gRPC helper processes use them too. */
static void *xalloc(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) die("cannot map %zu host bytes: %s", n, strerror(errno));
  return p;
}

/* A pattern that differs per seed and per 8-byte word. */
static void fill_pattern(uint8_t *p, size_t n, uint64_t seed) {
  uint64_t x = (seed + 1) * 0xd1342543de82ef95ull;
  size_t words = n / 8;
  uint64_t *w = (uint64_t *)p;
  for (size_t i = 0; i < words; i++) w[i] = x ^ (i * 0x9e3779b97f4a7c15ull);
  for (size_t i = words * 8; i < n; i++) p[i] = (uint8_t)(x >> (i % 8 * 8)) ^ (uint8_t)i;
}

/* Puts a[0..n) in a random order (Fisher-Yates; splitmix64 on *state). */
static void shuffle(int *a, int n, uint64_t *state) {
  for (int i = n - 1; i > 0; i--) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    int j = (int)(z % (uint64_t)(i + 1));
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}

static void expect_same(const uint8_t *want, const uint8_t *got, size_t n, const char *what) {
  if (memcmp(want, got, n) == 0) return;
  size_t i = 0;
  while (want[i] == got[i]) i++;
  die("%s: data differ at byte %zu of %zu (sent 0x%02x, got 0x%02x)", what, i, n, want[i], got[i]);
}

/* ---- the rdevd we start ---------------------------------------------------------- */

static void child_atexit(void) { child_kill_now(); }

/* Starts path on 127.0.0.1:0 and reads its "rdevd listening on ADDR" line. */
static void spawn_rdevd(const char *path, size_t arena, char *addr, size_t addrlen) {
  if (access(path, X_OK) != 0)
    die("cannot run rdevd at %s: %s (give --rdevd PATH, or --target ADDR for a running one)", path,
        strerror(errno));
  int p[2];
  if (pipe2(p, O_CLOEXEC)) die("pipe: %s", strerror(errno));
  char mem[32];
  snprintf(mem, sizeof mem, "%zuM", arena >> 20);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
    if (getppid() != parent) _exit(127);
    dup2(p[1], STDOUT_FILENO);
    execl(path, path, "--listen", "127.0.0.1:0", "--sim-devices", "1", "--sim-mem", mem, "--drain-ms",
          "1000", "--log-level", "warn", (char *)NULL);
    _exit(127);
  }
  g_child = pid;
  close(p[1]);
  char line[256];
  size_t len = 0;
  double deadline = now_s() + 20;
  while (len < sizeof line - 1 && !memchr(line, '\n', len)) {
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int left = (int)((deadline - now_s()) * 1000);
    if (left <= 0 || poll(&pf, 1, left) <= 0) die("rdevd at %s did not report its address in 20 s", path);
    ssize_t n = read(p[0], line + len, sizeof line - 1 - len);
    if (n <= 0) die("rdevd at %s exited before listening (see its messages above)", path);
    len += (size_t)n;
  }
  close(p[0]); /* rdevd prints nothing else on stdout; it ignores SIGPIPE */
  line[len] = '\0';
  static const char kPrefix[] = "rdevd listening on ";
  char *nl = strchr(line, '\n');
  if (nl) *nl = '\0';
  if (strncmp(line, kPrefix, sizeof kPrefix - 1) != 0) die("rdevd said '%s', not its address", line);
  snprintf(addr, addrlen, "%s", line + sizeof kPrefix - 1);
}

/* SIGTERM, then wait (SIGKILL after 10 s). Returns 0 when it exited with 0. */
static int stop_rdevd(void) {
  if (g_child <= 0) return 0;
  pid_t pid = g_child;
  int st = 0;
  pid_t w = waitpid(pid, &st, WNOHANG);
  if (w == pid) {
    g_child = 0;
    fprintf(stderr, "rdev bench: rdevd (pid %d) had died during the run (status 0x%x)\n", (int)pid, st);
    return 1;
  }
  kill(pid, SIGTERM);
  double deadline = now_s() + 10;
  while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now_s() < deadline) usleep(10000);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    g_child = 0;
    fprintf(stderr, "rdev bench: rdevd (pid %d) did not stop within 10 s of SIGTERM\n", (int)pid);
    return 1;
  }
  g_child = 0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "rdev bench: rdevd (pid %d) ended with status 0x%x on SIGTERM\n", (int)pid, st);
    return 1;
  }
  return 0;
}

/* The value in kB of "key:" in /proc/pid/status, or -1. */
static long proc_status_kb(pid_t pid, const char *key) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  size_t kl = strlen(key);
  for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
    if (strncmp(l, key, kl) == 0 && l[kl] == ':') return strtol(l + kl + 1, NULL, 10);
  return -1;
}

/* Resets VmHWM to the current VmRSS (Linux >= 4.0). 0 on success. */
static int reset_hwm(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok ? 0 : -1;
}

/* ---- configuration ------------------------------------------------------------------- */

typedef struct {
  int quick;
  const char *target; /* NULL: start rdevd */
  const char *rdevd;
  char addr[256];
  size_t sizes[MAX_SIZES];
  int nsizes, reps;
  double sample_s;
  long rtt_n, ops_n;
  int ops_reps;
  size_t rss_buf, rss_total;
  double rss_max_s;   /* the memory phase stops early after this long */
  double size_budget_s; /* fewer reps (down to 3) for a size whose reps would take longer */
  size_t sess_buf;
  double sess_s;      /* each concurrent-sessions sample lasts this long */
  int sess_reps;
  int malloc_tune;
} cfg_t;

static const size_t kDefaultSizes[] = {4u << 10, 64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20};

static void usage(FILE *f) {
  fprintf(f,
          "usage: rdev bench [--target ADDR] [--rdevd PATH] [--quick] [--sizes LIST] [--reps N]\n"
          "                  [--malloc-tune]\n"
          "  --target ADDR  measure the rdevd at ADDR (no server-memory figure); default: start one\n"
          "  --rdevd PATH   the rdevd to start (default: ../server/rdevd next to this rdev binary)\n"
          "  --quick        sizes up to 16 MiB, 256 MiB in the memory phase, few reps (~20 s; CI)\n"
          "  --sizes LIST   copy sizes, e.g. 4K,1M,64M (suffixes K, M, G; at most 1G each)\n"
          "  --reps N       samples per size and method (1..15; default 9, --quick 3)\n"
          "  --malloc-tune  keep freed memory in this process's heap (mallopt), as the bare-gRPC\n"
          "                 helper always does: shows what glibc's trimming costs the rdev client\n"
          "Prints a table and, last, one line of key=value figures. Exit 1 on any error.\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *s == '-') return -1;
  switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
  }
  if (*end == 'i' || *end == 'B') end++;
  if (*end == 'B') end++;
  if (*end || v == 0 || v > ((unsigned long long)1 << 30)) return -1;
  *out = (size_t)v;
  return 0;
}

static int parse_args(cfg_t *c, int argc, char **argv) {
  const char *sizes = NULL;
  int reps = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      c->quick = 1;
    } else if (!strcmp(a, "--malloc-tune")) {
      c->malloc_tune = 1;
    } else if (!strcmp(a, "--target") && i + 1 < argc) {
      c->target = argv[++i];
    } else if (!strncmp(a, "--target=", 9)) {
      c->target = a + 9;
    } else if (!strcmp(a, "--rdevd") && i + 1 < argc) {
      c->rdevd = argv[++i];
    } else if (!strncmp(a, "--rdevd=", 8)) {
      c->rdevd = a + 8;
    } else if (!strcmp(a, "--sizes") && i + 1 < argc) {
      sizes = argv[++i];
    } else if (!strncmp(a, "--sizes=", 8)) {
      sizes = a + 8;
    } else if (!strcmp(a, "--reps") && i + 1 < argc) {
      char *end;
      long r = strtol(argv[++i], &end, 10);
      if (*end || r < 1 || r > MAX_REPS) {
        fprintf(stderr, "rdev bench: --reps wants 1..%d\n", MAX_REPS);
        return 2;
      }
      reps = (int)r;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return -1;
    } else {
      fprintf(stderr, "rdev bench: unknown argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  c->reps = c->quick ? 3 : 9;
  c->sample_s = c->quick ? 0.02 : 0.1;
  c->rtt_n = c->quick ? 200 : 2000;
  c->ops_n = c->quick ? 20000 : 100000;
  c->ops_reps = c->quick ? 1 : 3;
  c->rss_buf = c->quick ? 64 * MiB : 256 * MiB;
  c->rss_total = c->quick ? 256 * MiB : (size_t)4 << 30;
  c->rss_max_s = c->quick ? 8 : 60;
  c->size_budget_s = c->quick ? 1.5 : 15;
  c->sess_buf = c->quick ? 16 * MiB : 64 * MiB;
  c->sess_s = c->quick ? 0.2 : 1.0;
  c->sess_reps = c->quick ? 2 : 7;
  if (reps) c->reps = reps;
  if (sizes) {
    char *dup = strdup(sizes), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (c->nsizes == MAX_SIZES || parse_size(t, &c->sizes[c->nsizes])) {
        fprintf(stderr, "rdev bench: --sizes: bad size '%s' (or more than %d)\n", t, MAX_SIZES);
        free(dup);
        return 2;
      }
      c->nsizes++;
    }
    free(dup);
    if (!c->nsizes) {
      fprintf(stderr, "rdev bench: --sizes: empty list\n");
      return 2;
    }
  } else {
    for (size_t i = 0; i < sizeof kDefaultSizes / sizeof kDefaultSizes[0]; i++)
      if (!c->quick || kDefaultSizes[i] <= 16 * MiB) c->sizes[c->nsizes++] = kDefaultSizes[i];
  }
  return 0;
}

/* ---- shared state ---------------------------------------------------------------------- */

typedef struct {
  cfg_t *cfg;
  size_t host_len;      /* src and dst hold this many bytes */
  uint8_t *src, *dst;   /* host buffers, every page touched */
  rdev_session_t *s;    /* the main session */
  rdev_stream_t *st;
  void *dev;            /* device buffer of the largest size */
  bl_tcp_t *tcp;
  bl_grpc_t *grpc;
  bl_rt_t *rt;
} bench_t;

static void noop_print(void *user, const char *text, size_t len) {
  (void)text;
  (void)len;
  atomic_fetch_add((atomic_long *)user, 1);
}

static rdev_session_t *open_session(const bench_t *b) {
  rdev_session_t *s = NULL;
  int rc = rdev_session_open(b->cfg->addr, NULL, &s);
  if (rc) check_fail("rdev_session_open", rc, __LINE__);
  return s;
}

/* ---- 1. server memory ------------------------------------------------------------------------ */

typedef struct {
  pid_t pid;
  atomic_int stop;
  long max_kb;
  long samples;
} rss_sampler_t;

static void *rss_sampler(void *arg) {
  rss_sampler_t *r = arg;
  while (!atomic_load(&r->stop)) {
    long kb = proc_status_kb(r->pid, "VmRSS");
    if (kb > r->max_kb) r->max_kb = kb;
    r->samples++;
    usleep(2000);
  }
  return NULL;
}

typedef struct {
  int measured;
  double base_mib, peak_mib, beyond_mib, after_mib, gbps;
  long samples;
  int hwm_used;
  size_t moved;
} rss_result_t;

static rss_result_t phase_rss(bench_t *b) {
  rss_result_t r = {0};
  cfg_t *c = b->cfg;
  size_t buf = c->rss_buf;
  rdev_session_t *s = open_session(b);
  rdev_stream_t *st;
  void *dev;
  CHECK(rdev_stream_create(s, &st));
  CHECK(rdev_malloc(s, &dev, buf, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_memset(s, dev, buf, 0x11, buf)); /* touches the arena pages */
  fill_pattern(b->src, buf, 0x555);
  usleep(200000);
  long base = proc_status_kb(g_child, "VmRSS");
  if (base < 0) die("cannot read /proc/%d/status", (int)g_child);
  r.hwm_used = reset_hwm(g_child) == 0;
  rss_sampler_t smp = {.pid = g_child, .max_kb = base};
  pthread_t th;
  if (pthread_create(&th, NULL, rss_sampler, &smp)) die("cannot start a thread");
  double t0 = now_s();
  size_t moved = 0;
  for (int round = 0; moved < c->rss_total && now_s() - t0 < c->rss_max_s; round++) {
    if (round % 2 == 0) {
      CHECK(rdev_memcpy(s, dev, buf, b->src, buf, RDEV_MEMCPY_HOST_TO_DEVICE));
      CHECK(rdev_memcpy(s, b->dst, buf, dev, buf, RDEV_MEMCPY_DEVICE_TO_HOST));
    } else {
      CHECK(rdev_memcpy_async(s, dev, buf, b->src, buf, RDEV_MEMCPY_HOST_TO_DEVICE, st));
      CHECK(rdev_memcpy_async(s, b->dst, buf, dev, buf, RDEV_MEMCPY_DEVICE_TO_HOST, st));
      CHECK(rdev_stream_synchronize(st));
    }
    moved += 2 * buf;
  }
  double secs = now_s() - t0;
  atomic_store(&smp.stop, 1);
  pthread_join(th, NULL);
  long hwm = r.hwm_used ? proc_status_kb(g_child, "VmHWM") : -1;
  long peak = smp.max_kb > hwm ? smp.max_kb : hwm;
  expect_same(b->src, b->dst, buf, "server-memory phase (H2D+D2H)");
  CHECK(rdev_free(s, dev));
  CHECK(rdev_stream_destroy(st));
  rdev_session_close(s);
  usleep(200000);
  long after = proc_status_kb(g_child, "VmRSS");
  r.measured = 1;
  r.base_mib = base / 1024.0;
  r.peak_mib = peak / 1024.0;
  r.beyond_mib = (peak - base) / 1024.0;
  r.after_mib = after / 1024.0;
  r.samples = smp.samples;
  r.gbps = (double)moved / secs / 1e9;
  r.moved = moved;
  return r;
}

/* ---- 2. copies ---------------------------------------------------------------------------------- */

/* The network methods, then the runtime's two (phase_copies relies on it). */
enum { M_H2D, M_H2D_ASYNC, M_D2H, M_D2H_ASYNC, M_TCP, M_GRPC_UP, M_GRPC_DOWN, M_RT_H2D, M_RT_D2H, NM };

static int method_on(int m, size_t n) {
  return !(m == M_TCP || m == M_GRPC_UP || m == M_GRPC_DOWN) || n >= g_chunk;
}

/* One sample: k transfers of n bytes; returns seconds. */
static double run_method(bench_t *b, int m, size_t n, long k) {
  double secs = 0, t0 = now_s();
  switch (m) {
    case M_H2D:
      for (long i = 0; i < k; i++) CHECK(rdev_memcpy(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
      break;
    case M_H2D_ASYNC:
      for (long i = 0; i < k; i++)
        CHECK(rdev_memcpy_async(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE, b->st));
      CHECK(rdev_stream_synchronize(b->st));
      break;
    case M_D2H:
      for (long i = 0; i < k; i++) CHECK(rdev_memcpy(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
      break;
    case M_D2H_ASYNC:
      for (long i = 0; i < k; i++)
        CHECK(rdev_memcpy_async(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST, b->st));
      CHECK(rdev_stream_synchronize(b->st));
      break;
    case M_TCP: BL(bl_tcp_move(b->tcp, b->src, b->dst, n, k, g_chunk, &secs)); return secs;
    case M_GRPC_UP: BL(bl_grpc_upload(b->grpc, b->src, n, k, g_chunk, &secs)); return secs;
    case M_GRPC_DOWN: BL(bl_grpc_download(b->grpc, b->dst, n, k, g_chunk, &secs)); return secs;
    case M_RT_H2D: BL(bl_rt_copy(b->rt, 1, b->src, n, k, &secs)); return secs;
    case M_RT_D2H: BL(bl_rt_copy(b->rt, 0, b->dst, n, k, &secs)); return secs;
    default: break;
  }
  return now_s() - t0;
}

/* Doubles k until a sample takes a quarter of the target, then scales;
 * *est gets the expected seconds of a sample with the k returned. A first
 * untimed transfer warms the path up: timed cold, a 64 MiB raw TCP
 * transfer took long enough to leave k at 1, samples of ~15 ms. */
static long calibrate(bench_t *b, int m, size_t n, double *est) {
  double target = b->cfg->sample_s;
  long k = 1;
  double t;
  run_method(b, m, n, 1);
  for (;;) {
    t = run_method(b, m, n, k);
    if (t >= target / 4 || k >= KMAX) break;
    k *= t < target / 64 ? 8 : 2;
  }
  double per = (t > 1e-9 ? t : 1e-9) / (double)k;
  double kk = target / per;
  long kr = kk < 1 ? 1 : kk > KMAX ? KMAX : (long)kk;
  *est = per * (double)kr;
  return kr;
}

/* Byte-for-byte checks of every path at size n. */
static void verify_size(bench_t *b, size_t n) {
  char what[96], lbl[32];
  size_label(n, lbl, sizeof lbl);
  /* rdev sync */
  CHECK(rdev_memset(b->s, b->dev, n, 0xa5, n));
  CHECK(rdev_memcpy(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  memset(b->dst, 0x5a, n);
  CHECK(rdev_memcpy(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  snprintf(what, sizeof what, "rdev sync H2D+D2H of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  /* rdev async */
  CHECK(rdev_memset(b->s, b->dev, n, 0xa5, n));
  memset(b->dst, 0x5a, n);
  CHECK(rdev_memcpy_async(b->s, b->dev, n, b->src, n, RDEV_MEMCPY_HOST_TO_DEVICE, b->st));
  CHECK(rdev_memcpy_async(b->s, b->dst, n, b->dev, n, RDEV_MEMCPY_DEVICE_TO_HOST, b->st));
  CHECK(rdev_stream_synchronize(b->st));
  snprintf(what, sizeof what, "rdev async H2D+D2H of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  /* baselines */
  double secs;
  memset(b->dst, 0x5a, n);
  BL(bl_rt_copy(b->rt, 1, b->src, n, 1, &secs));
  BL(bl_rt_copy(b->rt, 0, b->dst, n, 1, &secs));
  snprintf(what, sizeof what, "in-process runtime H2D+D2H of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  if (n < g_chunk) return;
  memset(b->dst, 0x5a, n);
  BL(bl_tcp_move(b->tcp, b->src, b->dst, n, 1, g_chunk, &secs));
  snprintf(what, sizeof what, "raw TCP of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  memset(b->dst, 0x5a, n);
  BL(bl_grpc_upload(b->grpc, b->src, n, 1, g_chunk, &secs)); /* lands at dst[0..n) */
  snprintf(what, sizeof what, "bare gRPC upload of %s", lbl);
  expect_same(b->src, b->dst, n, what);
  memset(b->dst, 0x5a, n);
  BL(bl_grpc_download(b->grpc, b->dst, n, 1, g_chunk, &secs));
  snprintf(what, sizeof what, "bare gRPC download of %s", lbl);
  expect_same(b->src, b->dst, n, what);
}

typedef struct {
  int reps;
  double gbps[NM];          /* medians */
  double r_tcp[2], r_grpc[2], r_async_tcp[2]; /* [0] h2d, [1] d2h: median paired ratios */
} size_row_t;

/* Per-rep paired ratios of sizes >= the headline size, pooled. */
typedef struct {
  double v[MAX_SIZES * MAX_REPS];
  int n;
} pool_t;

static void pool_add(pool_t *p, double x) {
  if (p->n < MAX_SIZES * MAX_REPS && isfinite(x)) p->v[p->n++] = x;
}

enum { P_H2D_TCP, P_D2H_TCP, P_H2D_GRPC, P_D2H_GRPC, P_H2DA_TCP, P_D2HA_TCP, P_H2DA_GRPC, P_D2HA_GRPC,
       P_H2D, P_D2H, P_H2DA, P_D2HA, P_TCP, P_GRPC_UP, P_GRPC_DOWN, P_RT_H2D, P_RT_D2H, NPOOLS };

static void phase_copies(bench_t *b, size_row_t *rows, pool_t *pools, size_t big) {
  cfg_t *c = b->cfg;
  char chl[32];
  size_label(g_chunk, chl, sizeof chl);
  printf("\nCopies, GB/s (medians of <reps> samples; ~%.2f s each). Sync = rdev_memcpy; async = k x "
         "rdev_memcpy_async + synchronize;\n"
         "tcp/grpc = raw TCP and bare gRPC (%s writes/messages, rdev's chunk, from %s on); rt = rdev_rt_memcpy "
         "in-process (no network).\n"
         "Ratios: rdev sync / baseline, paired per sample (target: >= 0.75 x tcp, >= 1.00 x grpc).\n",
         c->sample_s, chl, chl);
  printf("%8s | %6s %6s %6s %6s | %6s %6s %6s | %6s %6s | %7s %7s %8s %8s | %4s\n", "size", "h2d", "h2d-a",
         "d2h", "d2h-a", "tcp", "grpc-u", "grpc-d", "rt-h2d", "rt-d2h", "h2d/tcp", "d2h/tcp", "h2d/grpc",
         "d2h/grpc", "reps");
  for (int si = 0; si < c->nsizes; si++) {
    size_t n = c->sizes[si];
    fill_pattern(b->src, n, 1000 + (uint64_t)si);
    long k[NM];
    double rep_s = 0, est;
    for (int m = 0; m < NM; m++) {
      k[m] = method_on(m, n) ? calibrate(b, m, n, &est) : 0;
      if (k[m]) rep_s += est;
    }
    int reps = c->reps;
    while (reps > 3 && reps * rep_s > c->size_budget_s) reps--; /* slow sizes: fewer reps */
    double g[NM][MAX_REPS];
    double rt[8][MAX_REPS];
    /* The order of each rep, as the header says; fixed seeds, so that
     * runs repeat. */
    uint64_t rng = 0x5eed0000u + (uint64_t)si;
    int lead[NM], nlead = 0;
    for (int m = 0; m < M_RT_H2D; m++)
      if (k[m]) lead[nlead++] = m;
    shuffle(lead, nlead, &rng);
    for (int r = 0; r < reps; r++) {
      int order[NM], n_on = 0;
      for (int m = 0; m < NM; m++)
        if (!k[m]) g[m][r] = NAN;
      order[n_on++] = lead[r % nlead];
      for (int m = 0; m < M_RT_H2D; m++)
        if (k[m] && m != order[0]) order[n_on++] = m;
      shuffle(order + 1, n_on - 1, &rng);
      for (int i = 0; i < 2; i++) {
        int m = (i + r) % 2 ? M_RT_D2H : M_RT_H2D;
        if (k[m]) order[n_on++] = m;
      }
      for (int mi = 0; mi < n_on; mi++) {
        int m = order[mi];
        double t = run_method(b, m, n, k[m]);
        g[m][r] = (double)n * (double)k[m] / t / 1e9;
      }
      rt[0][r] = g[M_H2D][r] / g[M_TCP][r];
      rt[1][r] = g[M_D2H][r] / g[M_TCP][r];
      rt[2][r] = g[M_H2D][r] / g[M_GRPC_UP][r];
      rt[3][r] = g[M_D2H][r] / g[M_GRPC_DOWN][r];
      rt[4][r] = g[M_H2D_ASYNC][r] / g[M_TCP][r];
      rt[5][r] = g[M_D2H_ASYNC][r] / g[M_TCP][r];
      rt[6][r] = g[M_H2D_ASYNC][r] / g[M_GRPC_UP][r];
      rt[7][r] = g[M_D2H_ASYNC][r] / g[M_GRPC_DOWN][r];
      if (n >= big) {
        for (int i = 0; i < 8; i++) pool_add(&pools[P_H2D_TCP + i], rt[i][r]);
        static const int kRaw[] = {M_H2D, M_D2H, M_H2D_ASYNC, M_D2H_ASYNC, M_TCP, M_GRPC_UP, M_GRPC_DOWN, M_RT_H2D, M_RT_D2H};
        for (int i = 0; i < 9; i++) pool_add(&pools[P_H2D + i], g[kRaw[i]][r]);
      }
    }
    verify_size(b, n);
    size_row_t *row = &rows[si];
    row->reps = reps;
    for (int m = 0; m < NM; m++) row->gbps[m] = k[m] ? median(g[m], reps) : NAN;
    double med[8];
    for (int i = 0; i < 8; i++) med[i] = k[M_TCP] ? median(rt[i], reps) : NAN;
    char lbl[32];
    size_label(n, lbl, sizeof lbl);
    char cells[NM][16], rc[4][16];
    for (int m = 0; m < NM; m++) {
      if (isnan(row->gbps[m])) snprintf(cells[m], sizeof cells[m], "-");
      else snprintf(cells[m], sizeof cells[m], "%.2f", row->gbps[m]);
    }
    for (int i = 0; i < 4; i++) {
      if (isnan(med[i])) snprintf(rc[i], sizeof rc[i], "-");
      else snprintf(rc[i], sizeof rc[i], "%.2f", med[i]);
    }
    printf("%8s | %6s %6s %6s %6s | %6s %6s %6s | %6s %6s | %7s %7s %8s %8s | %4d\n", lbl, cells[M_H2D],
           cells[M_H2D_ASYNC], cells[M_D2H], cells[M_D2H_ASYNC], cells[M_TCP], cells[M_GRPC_UP],
           cells[M_GRPC_DOWN], cells[M_RT_H2D], cells[M_RT_D2H], rc[0], rc[1], rc[2], rc[3], reps);
    fflush(stdout);
  }
  printf("Every size verified byte for byte: rdev sync and async H2D+D2H, runtime, TCP, gRPC up and down.\n");
}

/* ---- 3. latency ---------------------------------------------------------------------------------- */

typedef struct {
  double rtt_us, rtt_p99, unary_us, unary_p99, call_us, call_p99;
  double rtt_ratio; /* median of rtt[i] / unary[i] */
  long prints;
} lat_result_t;

static lat_result_t phase_latency(bench_t *b, void *small) {
  long n = b->cfg->rtt_n;
  lat_result_t r = {0};
  double *rtt = malloc((size_t)n * sizeof *rtt), *un = malloc((size_t)n * sizeof *un),
         *call = malloc((size_t)n * sizeof *call), *ratio = malloc((size_t)n * sizeof *ratio);
  if (!rtt || !un || !call || !ratio) die("out of memory");
  static atomic_long prints; /* the print function may run after this returns */
  atomic_store(&prints, 0);
  rdev_session_set_print_fn(b->s, noop_print, &prints);
  rdev_arg_t args[2] = {{.type = RDEV_ARG_PTR, .v.ptr = small}, {.type = RDEV_ARG_I32}};
  size_t fr, tot;
  for (int i = 0; i < 20; i++) { /* warm-up */
    args[1].v.i32 = -1 - i;
    CHECK(rdev_launch(b->st, "write_i32", 1, args, 2));
    CHECK(rdev_stream_synchronize(b->st));
    double us;
    BL(bl_grpc_unary(b->grpc, &us));
    CHECK(rdev_mem_info(b->s, &fr, &tot));
  }
  for (long i = 0; i < n; i++) {
    args[1].v.i32 = (int32_t)i;
    double t0 = now_s();
    CHECK(rdev_launch(b->st, "write_i32", 1, args, 2));
    CHECK(rdev_stream_synchronize(b->st));
    rtt[i] = (now_s() - t0) * 1e6;
    BL(bl_grpc_unary(b->grpc, &un[i]));
    t0 = now_s();
    CHECK(rdev_mem_info(b->s, &fr, &tot));
    call[i] = (now_s() - t0) * 1e6;
    ratio[i] = rtt[i] / un[i];
  }
  int32_t got = 0;
  CHECK(rdev_memcpy(b->s, &got, sizeof got, small, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
  if (got != (int32_t)(n - 1)) die("write_i32 left %d on the device, expected %ld", (int)got, n - 1);
  r.prints = atomic_load(&prints);
  r.rtt_us = median(rtt, (int)n);
  r.rtt_p99 = pct(rtt, (int)n, 0.99);
  r.unary_us = median(un, (int)n);
  r.unary_p99 = pct(un, (int)n, 0.99);
  r.call_us = median(call, (int)n);
  r.call_p99 = pct(call, (int)n, 0.99);
  r.rtt_ratio = median(ratio, (int)n);
  free(ratio);
  free(rtt);
  free(un);
  free(call);
  return r;
}

/* ---- 4. pipelined small ops ------------------------------------------------------------------------ */

typedef struct {
  double ops_per_s, submit_s, total_s;
} ops_result_t;

static ops_result_t phase_ops(bench_t *b, void *small) {
  long n = b->cfg->ops_n;
  int reps = b->cfg->ops_reps;
  double rate[MAX_REPS], sub[MAX_REPS], tot[MAX_REPS];
  uint8_t host[4096];
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    for (long i = 0; i < n; i++)
      CHECK(rdev_memset_async(b->s, (uint8_t *)small + (i % 64) * 64, 64, (int)((i * 7 + r) & 0xff), 64, b->st));
    double t1 = now_s();
    CHECK(rdev_stream_synchronize(b->st));
    double t2 = now_s();
    rate[r] = (double)n / (t2 - t0);
    sub[r] = t1 - t0;
    tot[r] = t2 - t0;
    CHECK(rdev_memcpy(b->s, host, sizeof host, small, sizeof host, RDEV_MEMCPY_DEVICE_TO_HOST));
    for (long reg = 0; reg < 64 && reg < n; reg++) {
      long last = reg + 64 * ((n - 1 - reg) / 64);
      uint8_t want = (uint8_t)((last * 7 + r) & 0xff);
      for (int j = 0; j < 64; j++)
        if (host[reg * 64 + j] != want)
          die("memset_async: byte %ld holds 0x%02x, expected 0x%02x", reg * 64 + j, host[reg * 64 + j], want);
    }
  }
  ops_result_t o = {median(rate, reps), median(sub, reps), median(tot, reps)};
  return o;
}

/* ---- 5. concurrent sessions ------------------------------------------------------------------------- */

typedef struct {
  rdev_session_t *s;
  void *dev;
  const uint8_t *src;
  size_t buf;
  double dur;   /* copy until this long after the barrier (at least once) */
  pthread_barrier_t *bar;
  double t0, t1;
  long copies;
} sess_t;

static void *sess_main(void *arg) {
  sess_t *x = arg;
  pthread_barrier_wait(x->bar);
  x->t0 = now_s();
  x->copies = 0;
  do {
    CHECK(rdev_memcpy(x->s, x->dev, x->buf, x->src, x->buf, RDEV_MEMCPY_HOST_TO_DEVICE));
    x->copies++;
  } while (now_s() - x->t0 < x->dur);
  x->t1 = now_s();
  return NULL;
}

/* n sessions copy at once; aggregate GB/s = all bytes / (last end - first start). */
static double sessions_sample(sess_t *ss, int n, double dur) {
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)n);
  pthread_t th[4];
  for (int i = 0; i < n; i++) {
    ss[i].bar = &bar;
    ss[i].dur = dur;
    if (pthread_create(&th[i], NULL, sess_main, &ss[i])) die("cannot start a thread");
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  double t0 = ss[0].t0, t1 = ss[0].t1, bytes = 0;
  for (int i = 0; i < n; i++) {
    if (ss[i].t0 < t0) t0 = ss[i].t0;
    if (ss[i].t1 > t1) t1 = ss[i].t1;
    bytes += (double)ss[i].copies * (double)ss[i].buf;
  }
  return bytes / (t1 - t0) / 1e9;
}

/* agg: median GB/s with 1, 2 and 4 sessions; scale: median over reps of
 * the 2- and 4-session figures over the same rep's 1-session one. */
static void phase_sessions(bench_t *b, double agg[3], double scale[2]) {
  cfg_t *c = b->cfg;
  static const int kCounts[3] = {1, 2, 4};
  sess_t ss[4];
  fill_pattern(b->src, c->sess_buf, 0x5e55);
  for (int i = 0; i < 4; i++) {
    ss[i] = (sess_t){.s = open_session(b), .src = b->src, .buf = c->sess_buf};
    CHECK(rdev_malloc(ss[i].s, &ss[i].dev, c->sess_buf, RDEV_MEM_MALLOC_HUGE_FIRST));
    CHECK(rdev_memset(ss[i].s, ss[i].dev, c->sess_buf, 0, c->sess_buf));
  }
  sessions_sample(ss, 4, 0); /* warm-up: one copy each */
  double v[3][MAX_REPS], ratio[2][MAX_REPS];
  uint64_t rng = 0x5e550000u;
  for (int r = 0; r < c->sess_reps; r++) {
    int order[3] = {0, 1, 2};
    shuffle(order, 3, &rng);
    for (int i = 0; i < 3; i++) v[order[i]][r] = sessions_sample(ss, kCounts[order[i]], c->sess_s);
    ratio[0][r] = v[1][r] / v[0][r];
    ratio[1][r] = v[2][r] / v[0][r];
  }
  for (int j = 0; j < 3; j++) agg[j] = median(v[j], c->sess_reps);
  for (int j = 0; j < 2; j++) scale[j] = median(ratio[j], c->sess_reps);
  for (int i = 0; i < 4; i++) {
    memset(b->dst, 0x5a, c->sess_buf);
    CHECK(rdev_memcpy(ss[i].s, b->dst, c->sess_buf, ss[i].dev, c->sess_buf, RDEV_MEMCPY_DEVICE_TO_HOST));
    expect_same(b->src, b->dst, c->sess_buf, "concurrent sessions (H2D, read back)");
    CHECK(rdev_free(ss[i].s, ss[i].dev));
    rdev_session_close(ss[i].s);
  }
}

/* ---- main ---------------------------------------------------------------------------------------------- */

static const char *fmt_num(char *buf, size_t len, const char *fmt, double v) {
  if (isnan(v)) snprintf(buf, len, "na");
  else snprintf(buf, len, fmt, v);
  return buf;
}

static const char *met(int ok) { return ok ? "met" : "MISSED"; }

static void default_rdevd(char *out, size_t len) {
  char exe[PATH_MAX - 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) die("cannot read /proc/self/exe: give --rdevd PATH");
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  if ((size_t)snprintf(out, len, "%s/../server/rdevd", exe) >= len) die("path too long: give --rdevd PATH");
}

int bench_main(const char *target, int argc, char **argv) {
  cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.target = target;
  int prc = parse_args(&cfg, argc, argv);
  if (prc) return prc < 0 ? 0 : prc;
  double t_start = now_s();
  size_t max_size = 0;
  for (int i = 0; i < cfg.nsizes; i++)
    if (cfg.sizes[i] > max_size) max_size = cfg.sizes[i];
  size_t big = BIG_SIZE <= max_size ? BIG_SIZE : max_size;
  size_t host_len = max_size;
  if (cfg.rss_buf > host_len) host_len = cfg.rss_buf;
  if (cfg.sess_buf > host_len) host_len = cfg.sess_buf;

  if (cfg.malloc_tune) {
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  }
  bench_t b = {.cfg = &cfg, .host_len = host_len};
  b.src = xalloc(host_len);
  b.dst = xalloc(host_len);
  memset(b.src, 0x11, host_len);
  memset(b.dst, 0x22, host_len);
  /* both forks before this process has threads */
  BL(bl_grpc_start(&b.grpc, b.dst, host_len, b.src, host_len));

  char rdevd[PATH_MAX];
  if (!cfg.target) {
    if (cfg.rdevd) snprintf(rdevd, sizeof rdevd, "%s", cfg.rdevd);
    else default_rdevd(rdevd, sizeof rdevd);
    size_t arena = (size_t)1 << 30;
    size_t need = 2 * max_size + 4 * cfg.sess_buf + cfg.rss_buf + 64 * MiB;
    if (need > arena) arena = need;
    atexit(child_atexit);
    spawn_rdevd(rdevd, arena, cfg.addr, sizeof cfg.addr);
  } else {
    snprintf(cfg.addr, sizeof cfg.addr, "%s", cfg.target);
  }

  /* what we talk to */
  rdev_server_info_t info;
  {
    rdev_session_t *s = open_session(&b);
    CHECK(rdev_server_info(s, &info));
    rdev_session_close(s);
  }
  if (info.max_chunk) g_chunk = info.max_chunk;
  char maxl[32];
  size_label(max_size, maxl, sizeof maxl);
  char pidl[32] = "?";
  if (!cfg.target) snprintf(pidl, sizeof pidl, "%d", (int)g_child);
  printf("rdev bench (%s): %s rdevd %s (%s backend, pid %s) at %s; sizes up to %s; %ld CPUs online\n"
         "rdev client in this process with %s; bare gRPC tuned (BDP probe off, malloc kept), its server and\n"
         "client in two helper processes\n",
         cfg.quick ? "quick" : "full", cfg.target ? "running" : "own", info.version, info.backend, pidl,
         cfg.addr, maxl, sysconf(_SC_NPROCESSORS_ONLN),
         cfg.malloc_tune ? "malloc tuned (--malloc-tune)" : "glibc malloc defaults");
  fflush(stdout);

  /* 1. server memory, on the fresh server */
  rss_result_t rss = {0};
  if (!cfg.target) {
    rss = phase_rss(&b);
    char bl[32], tl[32];
    size_label(cfg.rss_buf, bl, sizeof bl);
    size_label(cfg.rss_total, tl, sizeof tl);
    size_label(rss.moved, tl, sizeof tl);
    printf("\nServer memory (rdevd VmRSS): %.1f MiB after malloc+memset of a %s buffer (baseline); "
           "peak %.1f MiB while %s passed%s\n(H2D+D2H, sync and async rounds, %.2f GB/s; %ld samples%s): "
           "%.1f MiB beyond the arena (target < 128). After the session closed: %.1f MiB.\n",
           rss.base_mib, bl, rss.peak_mib, tl, rss.moved < cfg.rss_total ? " (stopped at the time cap)" : "",
           rss.gbps, rss.samples, rss.hwm_used ? " + VmHWM" : "", rss.beyond_mib, rss.after_mib);
    fflush(stdout);
  }

  /* baselines and the main session */
  BL(bl_tcp_open(&b.tcp));
  BL(bl_rt_open(&b.rt, max_size));
  b.s = open_session(&b);
  CHECK(rdev_stream_create(b.s, &b.st));
  CHECK(rdev_malloc(b.s, &b.dev, max_size, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_memset(b.s, b.dev, max_size, 0x33, max_size));

  /* 2. copies */
  size_row_t rows[MAX_SIZES];
  pool_t *pools = calloc(NPOOLS, sizeof *pools);
  if (!pools) die("out of memory");
  phase_copies(&b, rows, pools, big);
  double pm[NPOOLS];
  for (int i = 0; i < NPOOLS; i++) pm[i] = median(pools[i].v, pools[i].n);
  free(pools);

  /* 3. latency, 4. small ops */
  void *small;
  CHECK(rdev_malloc(b.s, &small, 4096, RDEV_MEM_MALLOC_HUGE_FIRST));
  lat_result_t lat = phase_latency(&b, small);
  double rtt_ratio = lat.rtt_ratio;
  printf("\nLatency, us (median / p99 of %ld, interleaved):\n", cfg.rtt_n);
  printf("  write_i32 launch (1 block) + stream_synchronize  %8.1f / %8.1f   (%ld prints received)\n",
         lat.rtt_us, lat.rtt_p99, lat.prints);
  printf("  bare gRPC empty unary call                       %8.1f / %8.1f\n", lat.unary_us, lat.unary_p99);
  printf("  rdev synchronous call (rdev_mem_info)            %8.1f / %8.1f\n", lat.call_us, lat.call_p99);
  printf("  launch+sync / gRPC unary = %.2f, median of paired samples (target <= 1.30); ratio of the medians %.2f\n",
         rtt_ratio, lat.rtt_us / lat.unary_us);
  fflush(stdout);
  ops_result_t ops = phase_ops(&b, small);
  printf("\nPipelined small ops: %ld x 64-byte rdev_memset_async on one stream + 1 synchronize: %.0f ops/s "
         "(submit %.3f s, total %.3f s; median of %d; target >= 50000)\n",
         cfg.ops_n, ops.ops_per_s, ops.submit_s, ops.total_s, cfg.ops_reps);
  fflush(stdout);
  CHECK(rdev_free(b.s, small));

  /* 5. sessions */
  double agg[3], scale[2];
  phase_sessions(&b, agg, scale);
  double scale4 = scale[1];
  char sl[32];
  size_label(cfg.sess_buf, sl, sizeof sl);
  printf("\nConcurrent sessions (each a thread with its own session and %s buffer, sync H2D for %.1f s; "
         "medians of %d;\n  x = median of the ratios to 1 session in the same rep):\n"
         "  1: %.2f GB/s   2: %.2f GB/s (x%.2f)   4: %.2f GB/s (x%.2f; target >= 0.90)\n",
         sl, cfg.sess_s, cfg.sess_reps, agg[0], agg[1], scale[0], agg[2], scale4);
  fflush(stdout);

  /* teardown */
  CHECK(rdev_free(b.s, b.dev));
  CHECK(rdev_stream_destroy(b.st));
  rdev_session_close(b.s);
  bl_rt_close(b.rt);
  BL(bl_grpc_stop(b.grpc));
  bl_tcp_close(b.tcp);
  int server_bad = stop_rdevd();
  munmap(b.src, host_len);
  munmap(b.dst, host_len);

  /* targets */
  char bigl[32];
  size_label(big, bigl, sizeof bigl);
  int tmet = 0, tn = 0;
#define TARGET(cond) (tn++, (cond) ? (tmet++, 1) : 0)
  int t1 = TARGET(pm[P_H2D_TCP] >= 0.75 && pm[P_D2H_TCP] >= 0.75);
  int t2 = TARGET(pm[P_H2D_GRPC] >= 1.0 && pm[P_D2H_GRPC] >= 1.0);
  int t3 = TARGET(rtt_ratio <= 1.3);
  int t4 = TARGET(ops.ops_per_s >= 50000);
  int t5 = rss.measured ? TARGET(rss.beyond_mib < 128) : -1;
  int t6 = TARGET(scale4 >= 0.9);
#undef TARGET
  printf("\nTargets (copies from %s; medians of paired ratios):\n", bigl);
  printf("  H2D, D2H >= 0.75 x raw TCP        %-6s  h2d %.2f  d2h %.2f  (async: %.2f, %.2f)\n", met(t1),
         pm[P_H2D_TCP], pm[P_D2H_TCP], pm[P_H2DA_TCP], pm[P_D2HA_TCP]);
  printf("  H2D, D2H >= 1.00 x bare gRPC      %-6s  h2d %.2f  d2h %.2f  (async: %.2f, %.2f)\n", met(t2),
         pm[P_H2D_GRPC], pm[P_D2H_GRPC], pm[P_H2DA_GRPC], pm[P_D2HA_GRPC]);
  printf("  launch+sync <= 1.30 x gRPC unary  %-6s  %.2f\n", met(t3), rtt_ratio);
  printf("  small async ops >= 50000/s        %-6s  %.0f\n", met(t4), ops.ops_per_s);
  if (t5 >= 0) printf("  server RSS beyond arena < 128 MiB %-6s  %.1f MiB\n", met(t5), rss.beyond_mib);
  else printf("  server RSS beyond arena < 128 MiB n/a     (rdevd not started by the bench)\n");
  printf("  4 sessions >= 0.90 x 1 session    %-6s  %.2f\n", met(t6), scale4);
  printf("Run time %.1f s.\n", now_s() - t_start);

  char rss_beyond[32], rss_base[32], rss_peak[32], rss_gbps[32];
  fmt_num(rss_beyond, sizeof rss_beyond, "%.1f", rss.measured ? rss.beyond_mib : NAN);
  fmt_num(rss_base, sizeof rss_base, "%.1f", rss.measured ? rss.base_mib : NAN);
  fmt_num(rss_peak, sizeof rss_peak, "%.1f", rss.measured ? rss.peak_mib : NAN);
  fmt_num(rss_gbps, sizeof rss_gbps, "%.3f", rss.measured ? rss.gbps : NAN);
  printf("h2d_vs_tcp=%.3f d2h_vs_tcp=%.3f h2d_vs_grpc=%.3f d2h_vs_grpc=%.3f rtt_vs_grpc_unary=%.3f "
         "ops_per_s=%.0f server_rss_mib=%s scale_4_sessions=%.3f "
         "h2d_gbps=%.3f d2h_gbps=%.3f h2d_async_gbps=%.3f d2h_async_gbps=%.3f tcp_gbps=%.3f grpc_gbps=%.3f "
         "grpc_down_gbps=%.3f rt_h2d_gbps=%.3f rt_d2h_gbps=%.3f "
         "h2d_async_vs_tcp=%.3f d2h_async_vs_tcp=%.3f h2d_async_vs_grpc=%.3f d2h_async_vs_grpc=%.3f "
         "rtt_us=%.1f rtt_p99_us=%.1f grpc_unary_us=%.1f sync_call_us=%.1f rtt_medians_ratio=%.3f "
         "sessions_1_gbps=%.3f sessions_2_gbps=%.3f sessions_4_gbps=%.3f "
         "server_rss_base_mib=%s server_rss_peak_mib=%s rss_phase_gbps=%s rss_phase_mib=%zu "
         "ratio_sizes_from_mib=%zu client_malloc=%s mode=%s targets_met=%d/%d\n",
         pm[P_H2D_TCP], pm[P_D2H_TCP], pm[P_H2D_GRPC], pm[P_D2H_GRPC], rtt_ratio, ops.ops_per_s, rss_beyond,
         scale4, pm[P_H2D], pm[P_D2H], pm[P_H2DA], pm[P_D2HA], pm[P_TCP], pm[P_GRPC_UP], pm[P_GRPC_DOWN],
         pm[P_RT_H2D], pm[P_RT_D2H], pm[P_H2DA_TCP], pm[P_D2HA_TCP], pm[P_H2DA_GRPC], pm[P_D2HA_GRPC],
         lat.rtt_us, lat.rtt_p99, lat.unary_us, lat.call_us, lat.rtt_us / lat.unary_us, agg[0], agg[1], agg[2], rss_base, rss_peak,
         rss_gbps, rss.moved >> 20, big >> 20, cfg.malloc_tune ? "tuned" : "default", cfg.quick ? "quick" : "full",
         tmet, tn);
  fflush(stdout);
  return server_bad ? 1 : 0;
}
