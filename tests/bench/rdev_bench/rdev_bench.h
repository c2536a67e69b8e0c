/*
 * tests/bench/rdev_bench/rdev_bench.h — the named interface between the
 * parts of rdev_bench (what the program measures: main.c's header):
 *   - the configuration, from the command line (options.c);
 *   - the state one run shares (bench_t: made by main.c, passed to every
 *     phase; there are no mutable globals shared between files);
 *   - the phases, each a function that measures and returns its results:
 *     server memory (phase_memory.c), copies against the baselines
 *     (phase_copies.c), latency and pipelined small ops (phase_latency.c),
 *     concurrent sessions (phase_sessions.c), the same-host fast path
 *     (phase_same_host.c), operators (phase_operators.c, on oper.h's problem);
 *   - the report (report.c): the table and the key=value summary line;
 *   - the targets and the guard's floors, test policy in one table
 *     (targets.c).
 * Every rdev figure of the C API is measured through rdev/rdev.h only, the
 * ACL library's and the Python package's through their own APIs (behind
 * clients.h); the baselines are behind baseline.h.
 */
#ifndef RDEV_BENCH_H
#define RDEV_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "baseline.h"
#include "clients.h"
#include "common.h"
#include "rdev/rdev.h"

#define MAX_SIZES 24
#define MAX_REPS 15
#define KMAX 1000000L       /* most transfers in one sample */
#define BIG_SIZE (64 * MiB) /* the headline ratios are taken from this size on */
/* D2H into fresh memory runs above this size only: glibc's malloc maps
 * every block this large anew (its mmap threshold grows no further), while
 * it hands back kept, touched memory for smaller ones. */
#define FRESH_MIN (32 * MiB)

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
  int guard;              /* --guard: a bulk ratio below its floor (targets.c) fails the run */
  const char *python_dir; /* --python-path: where the `rdev` package is; NULL: ../python next to this binary */
  int big_reps;           /* reps, sample time and budget from the headline size on (main.c's big) */
  double big_sample_s, big_budget_s;
  /* the operators phase */
  size_t oper_add_bytes; /* each of Add's three vectors */
  int64_t oper_mm_dim;   /* Matmul: two oper_mm_dim x oper_mm_dim matrices into a third */
  int oper_reps;         /* reps per problem (fewer, down to 3, past oper_budget_s) */
  double oper_sample_s, oper_budget_s;
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
  cl_acl_t *acl;     /* the ACL library, its own session */
  cl_py_t *py;       /* the Python package's child; NULL when there is none: */
  char py_note[512]; /* why (its figures are then "na") */
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

/* The methods: rdev's four through the C API, the baselines over the
 * network, the ACL library's and the Python package's copies, D2H into fresh
 * memory and its local baseline, then the runtime's two (phase_copies
 * relies on them being last). */
enum {
  M_H2D,
  M_H2D_ASYNC,
  M_D2H,
  M_D2H_ASYNC,
  M_TCP,
  M_GRPC_UP,
  M_GRPC_DOWN,
  M_ACL_H2D,
  M_ACL_D2H,
  M_PY_H2D,
  M_PY_D2H,
  M_D2H_FRESH,    /* rdev_memcpy D2H into a buffer just malloc'd, freed after */
  M_MEMCPY_FRESH, /* memcpy from the warm source into a buffer just malloc'd */
  M_RT_H2D,
  M_RT_D2H,
  NM
};

/* The paired ratios (numerator method / denominator method of the same
 * rep; phase_copies.c's kRatios). */
enum {
  R_H2D_TCP,
  R_D2H_TCP,
  R_H2D_GRPC,
  R_D2H_GRPC,
  R_H2DA_TCP,
  R_D2HA_TCP,
  R_H2DA_GRPC,
  R_D2HA_GRPC,
  R_ACL_H2D_TCP,
  R_ACL_D2H_TCP,
  R_PY_H2D_TCP,
  R_PY_D2H_TCP,
  R_FRESH_MEMCPY, /* d2h_fresh / memcpy_fresh */
  NR
};

typedef struct {
  size_t size;
  int reps;
  double gbps[NM];  /* medians; NAN where the method did not run */
  double ratio[NR]; /* median paired ratios; NAN where either method did not run */
} size_row_t;

typedef struct {
  int nrows;
  size_row_t rows[MAX_SIZES];
  /* pooled over the reps of sizes >= the headline size: medians */
  double pr[NR]; /* paired ratios */
  double pg[NM]; /* GB/s */
} copies_result_t;

/* Measures every size of the configuration; on_row (may be NULL) gets each
 * size's row as soon as it is done. big: the headline size. */
copies_result_t phase_copies(bench_t *b, size_t big, void (*on_row)(const bench_t *, const size_row_t *));

/* ---- 3. latency, 4. pipelined small ops (phase_latency.c) ----------------------------- */

typedef struct {
  double rtt_us, rtt_p99, unary_us, unary_p99, call_us, call_p99;
  double helper_us, helper_p99; /* the unary call from the client helper process */
  double rtt_ratio;             /* median of rtt[i] / unary[i] */
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

/* ---- 6. the same-host fast path (phase_same_host.c) ------------------------------------- */

typedef struct {
  int measured; /* 0: not run (against --target) */
  size_t size;  /* the headline size */
  int reps;
  pid_t pid;                              /* the second rdevd, stopped when the phase returns */
  char addr[256];                         /* unix:PATH it listened on */
  double h2d_gbps, d2h_gbps, memcpy_gbps; /* medians */
  double ratio;                           /* median over reps of min(h2d, d2h) / memcpy of the same rep */
  int server_bad;                         /* the second rdevd did not exit cleanly (rdevd_stop_one) */
} same_host_result_t;

/* Own rdevd only: starts a second rdevd on a unix socket in a new
 * temporary folder, measures sync rdev_memcpy H2D and D2H of big bytes
 * between the device and rdev_malloc_host memory (shared with rdevd) on a
 * session opened there, against memcpy of big bytes between b->src and
 * b->dst (which it overwrites), then stops that rdevd and removes the
 * folder. Dies when the session has no bulk connection. */
same_host_result_t phase_same_host(bench_t *b, size_t big);

/* ---- 7. operators (phase_operators.c) ---------------------------------------------------- */

/* The methods, each launch + synchronize with the data on the device: the
 * in-process runtime's operator (the baseline), the C API's, the ACL
 * library's (aclnn), the Python package's (rdev.ops); for Add also the
 * sim's built-in kernel add_f32, remote (rdev_launch) and in-process
 * (rdev_rt_launch, its baseline). */
enum { OM_RT, OM_OP, OM_ACL, OM_PY, OM_KERNEL, OM_RT_KERNEL, NOM };

typedef struct {
  int reps;
  long k, k_kernel;    /* launch + synchronize pairs per sample: the operators', the kernels' (0: none ran) */
  int ran[NOM];        /* 0: the method was not offered (note says why) or does not apply */
  char note[NOM][256]; /* why a method that applies did not run */
  double ms[NOM];      /* median ms per launch + synchronize; NAN where it did not run */
  double ratio[NOM];   /* median over reps of the method's sample / its baseline's (OM_RT; OM_RT_KERNEL for
                              OM_KERNEL) of the same rep; NAN where either did not run, or for a baseline */
} oper_row_t;

typedef struct {
  oper_shape_t shape;
  oper_row_t row[OPER_NPROBLEMS]; /* OPER_ADD, OPER_MATMUL */
} opers_result_t;

/* Both problems of the configuration's shape, their methods' samples
 * interleaved in each rep (a random order per rep); then every method
 * that ran is verified (oper_check). Uses b->s and b->st for the C API,
 * the ACL library's session (b->acl must be open) and b->py's child. */
opers_result_t phase_opers(bench_t *b);
/* The shape the configuration asks for. */
oper_shape_t opers_shape(const cfg_t *c);

/* ---- the report (report.c) ------------------------------------------------------------------ */

void report_start(const bench_t *b, const rdev_server_info_t *info, size_t max_size);
void report_memory(const cfg_t *c, const rss_result_t *r);
void report_copies_start(const bench_t *b, size_t big);
void report_copies_row(const bench_t *b, const size_row_t *row);
void report_copies_end(void);
void report_latency(const cfg_t *c, const lat_result_t *r);
void report_ops(const cfg_t *c, const ops_result_t *r);
void report_sessions(const cfg_t *c, const sessions_result_t *r);
void report_same_host(const same_host_result_t *r);
void report_opers(const cfg_t *c, const opers_result_t *r);

/* The Clients table: the ACL library, the Python package and fresh memory
 * per size, from the rows phase_copies returned. */
void report_clients(const bench_t *b, const copies_result_t *cp);

/* One figure of the summary line: key=value, value printed with fmt (or
 * str); "na" when not present (the targets on it then do not count). */
typedef struct {
  const char *key, *fmt, *str;
  double v;
  int present;
} figure_t;

typedef struct {
  figure_t f[112];
  int n;
  int own_rdevd; /* the bench started rdevd (no --target): the guard expects its figures */
} summary_t;

/* Every figure of the summary line, in its order (targets_met comes last). */
summary_t summary_make(const cfg_t *c, size_t big, const rss_result_t *rss, const copies_result_t *cp,
                       const lat_result_t *lat, const ops_result_t *ops, const sessions_result_t *ss, int have_py,
                       const same_host_result_t *sh, const opers_result_t *op);
/* The figure named key; dies when there is none (a target naming an unknown key). */
const figure_t *summary_find(const summary_t *s, const char *key);
/* The end: the targets, the guard (when guard is set), the run time and
 * the summary line. Returns the number of figures below the guard's floors
 * (0 without guard). */
int report_end(const summary_t *s, size_t big, double run_s, int guard);

/* ---- the targets (targets.c) --------------------------------------------------------------- */

/* Prints the Targets block (each met, MISSED or n/a) and counts them. */
void targets_report(const summary_t *s, int *met, int *counted);
/* The comparison and threshold of the target on key, e.g. ">= 0.90". */
const char *target_text(const char *key, char *buf, size_t len);
/* Prints the Guard block: each guarded ratio against its floor (half its
 * target: half a speed's threshold, twice a time's), ok or FAILED ("na"
 * fails, but where targets.c skips it), then which failed. Returns how many. */
int guard_report(const summary_t *s);

#endif
