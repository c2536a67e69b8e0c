/*
 * tests/bench/rdev_bench/rdev_bench.h — the named interface between the
 * parts of rdev_bench (what the program measures: main.c's header):
 *   - the configuration, from the command line (options.c);
 *   - the state one run shares (bench_t: made by main.c, passed to every
 *     phase; there are no mutable globals shared between files);
 *   - the phases, each a function that measures and returns its results:
 *     server memory (phase_memory.c), copies against the baselines
 *     (phase_copies.c), latency and pipelined small ops (phase_latency.c),
 *     concurrent sessions (phase_sessions.c);
 *   - the report (report.c): the table and the key=value summary line;
 *   - the targets, test policy in one table (targets.c).
 * Every rdev figure is measured through rdev/rdev.h only; the baselines are
 * behind baseline.h.
 */
#ifndef RDEV_BENCH_H
#define RDEV_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "baseline.h"
#include "common.h"
#include "rdev/rdev.h"

#define MAX_SIZES 24
#define MAX_REPS 15
#define KMAX 1000000L       /* most transfers in one sample */
#define BIG_SIZE (64 * MiB) /* the headline ratios are taken from this size on */

/* ---- configuration (options.c) ----------------------------------------------------- */

typedef struct {
  int quick;
  const char *target; /* NULL: start rdevd */
  const char *rdevd;
  char addr[256]; /* what the run talks to (main.c fills it in) */
  size_t sizes[MAX_SIZES];
  int nsizes, reps;
  double sample_s;
  long rtt_n, ops_n;
  int ops_reps;
  size_t rss_buf, rss_total;
  double rss_max_s;     /* the memory phase stops early after this long */
  double size_budget_s; /* fewer reps (down to 3) for a size whose reps would take longer */
  size_t sess_buf;
  double sess_s; /* each concurrent-sessions sample lasts this long */
  int sess_reps;
  int malloc_tune;
} cfg_t;

/* Fills c from argv[0..argc) (the arguments after the program name) and
 * the mode's defaults. 0: run; -1: --help was printed (exit 0); 2: bad
 * usage, said on stderr. */
int bench_parse_args(cfg_t *c, int argc, char **argv);

/* ---- the state of a run (main.c) --------------------------------------------------- */

typedef struct {
  const cfg_t *cfg;
  size_t chunk;       /* rdev's wire chunk (InfoReply.max_chunk); the baselines use it too */
  size_t host_len;    /* src and dst hold this many bytes */
  uint8_t *src, *dst; /* host buffers (MAP_SHARED), every page touched */
  pid_t server_pid;   /* the rdevd the bench started, 0 against --target */
  rdev_session_t *s;  /* the main session */
  rdev_stream_t *st;
  void *dev; /* device buffer of the largest size */
  bl_tcp_t *tcp;
  bl_grpc_t *grpc;
  bl_rt_t *rt;
} bench_t;

/* A new session with b->cfg->addr; dies on failure. */
rdev_session_t *bench_open_session(const bench_t *b);

/* ---- 1. server memory (phase_memory.c) ---------------------------------------------- */

typedef struct {
  int measured;
  double base_mib, peak_mib, beyond_mib, after_mib, gbps;
  long samples;
  int hwm_used;
  size_t moved;
} rss_result_t;

/* Own rdevd only (b->server_pid), on the fresh server. */
rss_result_t phase_memory(bench_t *b);

/* ---- 2. copies (phase_copies.c) ------------------------------------------------------ */

/* The network methods, then the runtime's two (phase_copies relies on it). */
enum { M_H2D, M_H2D_ASYNC, M_D2H, M_D2H_ASYNC, M_TCP, M_GRPC_UP, M_GRPC_DOWN, M_RT_H2D, M_RT_D2H, NM };

/* Figures pooled over the reps of sizes >= the headline size: paired
 * ratios, then raw GB/s. */
enum {
  P_H2D_TCP,
  P_D2H_TCP,
  P_H2D_GRPC,
  P_D2H_GRPC,
  P_H2DA_TCP,
  P_D2HA_TCP,
  P_H2DA_GRPC,
  P_D2HA_GRPC,
  P_H2D,
  P_D2H,
  P_H2DA,
  P_D2HA,
  P_TCP,
  P_GRPC_UP,
  P_GRPC_DOWN,
  P_RT_H2D,
  P_RT_D2H,
  NPOOLS
};

typedef struct {
  size_t size;
  int reps;
  double gbps[NM]; /* medians; NAN where the method did not run */
  double ratio[4]; /* median paired ratios h2d/tcp, d2h/tcp, h2d/grpc, d2h/grpc; NAN without TCP */
} size_row_t;

typedef struct {
  int nrows;
  size_row_t rows[MAX_SIZES];
  double pm[NPOOLS]; /* medians of the pools */
} copies_result_t;

/* Measures every size of the configuration; on_row (may be NULL) gets each
 * size's row as soon as it is done. big: the headline size. */
copies_result_t phase_copies(bench_t *b, size_t big, void (*on_row)(const bench_t *, const size_row_t *));

/* ---- 3. latency, 4. pipelined small ops (phase_latency.c) ----------------------------- */

typedef struct {
  double rtt_us, rtt_p99, unary_us, unary_p99, call_us, call_p99;
  double rtt_ratio; /* median of rtt[i] / unary[i] */
  long prints;
} lat_result_t;

typedef struct {
  double ops_per_s, submit_s, total_s;
} ops_result_t;

/* small: a device buffer of 4096 bytes in b->s. */
lat_result_t phase_latency(bench_t *b, void *small);
ops_result_t phase_ops(bench_t *b, void *small);

/* ---- 5. concurrent sessions (phase_sessions.c) ------------------------------------------ */

typedef struct {
  double agg[3];   /* median GB/s with 1, 2 and 4 sessions */
  double scale[2]; /* median over reps of the 2- and 4-session figures over the same rep's 1-session one */
} sessions_result_t;

sessions_result_t phase_sessions(bench_t *b);

/* ---- the report (report.c) ------------------------------------------------------------------ */

void report_start(const bench_t *b, const rdev_server_info_t *info, size_t max_size);
void report_memory(const cfg_t *c, const rss_result_t *r);
void report_copies_start(const bench_t *b);
void report_copies_row(const bench_t *b, const size_row_t *row);
void report_copies_end(void);
void report_latency(const cfg_t *c, const lat_result_t *r);
void report_ops(const cfg_t *c, const ops_result_t *r);
void report_sessions(const cfg_t *c, const sessions_result_t *r);

/* One figure of the summary line: key=value, value printed with fmt (or
 * str); "na" when not present (the targets on it then do not count). */
typedef struct {
  const char *key, *fmt, *str;
  double v;
  int present;
} figure_t;

typedef struct {
  figure_t f[64];
  int n;
} summary_t;

/* Every figure of the summary line, in its order (targets_met comes last). */
summary_t summary_make(const cfg_t *c, size_t big, const rss_result_t *rss, const copies_result_t *cp,
                       const lat_result_t *lat, const ops_result_t *ops, const sessions_result_t *ss);
/* The figure named key; dies when there is none (a target naming an unknown key). */
const figure_t *summary_find(const summary_t *s, const char *key);
/* The end: the targets, the run time and the summary line. */
void report_end(const summary_t *s, size_t big, double run_s);

/* ---- the targets (targets.c) --------------------------------------------------------------- */

/* Prints the Targets block (each met, MISSED or n/a) and counts them. */
void targets_report(const summary_t *s, int *met, int *counted);
/* The comparison and threshold of the target on key, e.g. ">= 0.75". */
const char *target_text(const char *key, char *buf, size_t len);

#endif
