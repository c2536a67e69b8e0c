/*
 * tests/bench/rdev_bench/report.c — what rdev_bench prints: the title, each
 * phase's part of the table (from the results the phases return; the
 * copies in two tables: the C API against the baselines, then the other
 * clients and fresh memory), and the end: the Targets block and, with
 * --guard, the Guard block (targets.c), the run time and, last, the one
 * summary line of key=value figures, whose keys and order scripts rely on
 * (new keys are added at the end, before guard and targets_met).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rdev_bench.h"

void report_start(const bench_t *b, const rdev_server_info_t *info, size_t max_size) {
  const cfg_t *c = b->cfg;
  char maxl[32];
  size_label(max_size, maxl, sizeof maxl);
  char pidl[32] = "?";
  if (!c->target) snprintf(pidl, sizeof pidl, "%d", (int)b->server_pid);
  printf(
      "rdev bench (%s): %s rdevd %s (%s backend, pid %s) at %s; sizes up to %s; %ld CPUs online\n"
      "rdev client in this process with %s; bare gRPC tuned (BDP probe off, malloc kept), its server and\n"
      "client in two helper processes\n",
      c->quick ? "quick" : "full", c->target ? "running" : "own", info->version, info->backend, pidl, c->addr, maxl,
      sysconf(_SC_NPROCESSORS_ONLN), c->malloc_tune ? "malloc tuned (--malloc-tune)" : "glibc malloc defaults");
  fflush(stdout);
}

void report_memory(const cfg_t *c, const rss_result_t *r) {
  char bl[32], tl[32], tt[32];
  size_label(c->rss_buf, bl, sizeof bl);
  size_label(r->moved, tl, sizeof tl);
  printf(
      "\nServer memory (rdevd VmRSS): %.1f MiB after malloc+memset of a %s buffer (baseline); "
      "peak %.1f MiB while %s passed%s\n(H2D+D2H, sync and async rounds, %.2f GB/s; %ld samples%s): "
      "%.1f MiB beyond the arena (target %s). After the session closed: %.1f MiB.\n",
      r->base_mib, bl, r->peak_mib, tl, r->moved < c->rss_total ? " (stopped at the time cap)" : "", r->gbps,
      r->samples, r->hwm_used ? " + VmHWM" : "", r->beyond_mib, target_text("server_rss_mib", tt, sizeof tt),
      r->after_mib);
  fflush(stdout);
}

void report_copies_start(const bench_t *b, size_t big) {
  const cfg_t *c = b->cfg;
  char chl[32], t_tcp[32], t_grpc[32], each[64], bigl[32];
  size_label(b->chunk, chl, sizeof chl);
  size_label(big, bigl, sizeof bigl);
  if (c->big_sample_s != c->sample_s)
    snprintf(each, sizeof each, "~%.2f s each, ~%.2f s from %s", c->sample_s, c->big_sample_s, bigl);
  else
    snprintf(each, sizeof each, "~%.2f s each", c->sample_s);
  printf(
      "\nCopies, GB/s (medians of <reps> samples; %s). Sync = rdev_memcpy; async = k x "
      "rdev_memcpy_async + synchronize;\n"
      "tcp/grpc = raw TCP and bare gRPC (%s writes/messages, rdev's chunk, from %s on); rt = rdev_rt_memcpy "
      "in-process (no network).\n"
      "Ratios: rdev sync / baseline, paired per sample (target: %s x tcp, %s x grpc).\n",
      each, chl, chl, target_text("h2d_vs_tcp", t_tcp, sizeof t_tcp),
      target_text("h2d_vs_grpc", t_grpc, sizeof t_grpc));
  printf("%8s | %6s %6s %6s %6s | %6s %6s %6s | %6s %6s | %7s %7s %8s %8s | %4s\n", "size", "h2d", "h2d-a", "d2h",
         "d2h-a", "tcp", "grpc-u", "grpc-d", "rt-h2d", "rt-d2h", "h2d/tcp", "d2h/tcp", "h2d/grpc", "d2h/grpc", "reps");
}

void report_copies_row(const bench_t *b, const size_row_t *row) {
  (void)b;
  char lbl[32];
  size_label(row->size, lbl, sizeof lbl);
  char cells[NM][16], rc[NR][16];
  for (int m = 0; m < NM; m++) {
    if (isnan(row->gbps[m]))
      snprintf(cells[m], sizeof cells[m], "-");
    else
      snprintf(cells[m], sizeof cells[m], "%.2f", row->gbps[m]);
  }
  for (int i = 0; i < NR; i++) {
    if (isnan(row->ratio[i]))
      snprintf(rc[i], sizeof rc[i], "-");
    else
      snprintf(rc[i], sizeof rc[i], "%.2f", row->ratio[i]);
  }
  printf("%8s | %6s %6s %6s %6s | %6s %6s %6s | %6s %6s | %7s %7s %8s %8s | %4d\n", lbl, cells[M_H2D],
         cells[M_H2D_ASYNC], cells[M_D2H], cells[M_D2H_ASYNC], cells[M_TCP], cells[M_GRPC_UP], cells[M_GRPC_DOWN],
         cells[M_RT_H2D], cells[M_RT_D2H], rc[0], rc[1], rc[2], rc[3], row->reps);
  fflush(stdout);
}

void report_copies_end(void) {
  printf(
      "Every size verified byte for byte: rdev sync and async H2D+D2H, D2H into fresh memory, the ACL library,\n"
      "the Python package, runtime, TCP, gRPC up and down.\n");
}

/* "%.2f" of v, or "-" */
static void cell(char *buf, size_t len, double v) {
  if (isnan(v))
    snprintf(buf, len, "-");
  else
    snprintf(buf, len, "%.2f", v);
}

void report_clients(const bench_t *b, const copies_result_t *cp) {
  char t_tcp[32], t_fresh[32];
  printf(
      "\nClients, GB/s (the same reps; ratios paired with the same rep's sample, medians): acl = aclrtMemcpy through\n"
      "rdev's libascendcl.so (its own session); py = the Python package's d.set(a) / d.get(out=a) (a python3 child,\n"
      "its own session); d2h-fr = rdev_memcpy D2H into a buffer just malloc'd, mcpy-fr = memcpy from a warm buffer\n"
      "into one (one buffer per transfer, freed after; from the headline size on, above 32 MiB). Targets: %s x tcp,\n"
      "fresh %s.\n",
      target_text("acl_h2d_vs_tcp", t_tcp, sizeof t_tcp),
      target_text("d2h_fresh_vs_memcpy_fresh", t_fresh, sizeof t_fresh));
  if (!b->py) printf("Python package: na (%s)\n", b->py_note);
  printf("%8s | %7s %7s %6s %6s | %6s | %6s %7s | %7s %7s %6s %6s %7s\n", "size", "acl-h2d", "acl-d2h", "py-h2d",
         "py-d2h", "tcp", "d2h-fr", "mcpy-fr", "acl-h/t", "acl-d/t", "py-h/t", "py-d/t", "fr/mcpy");
  for (int i = 0; i < cp->nrows; i++) {
    const size_row_t *row = &cp->rows[i];
    if (row->size < b->chunk) continue;
    char lbl[32], c[7][16], r[5][16];
    size_label(row->size, lbl, sizeof lbl);
    static const int kM[] = {M_ACL_H2D, M_ACL_D2H, M_PY_H2D, M_PY_D2H, M_TCP, M_D2H_FRESH, M_MEMCPY_FRESH};
    static const int kR[] = {R_ACL_H2D_TCP, R_ACL_D2H_TCP, R_PY_H2D_TCP, R_PY_D2H_TCP, R_FRESH_MEMCPY};
    for (int j = 0; j < 7; j++) cell(c[j], sizeof c[j], row->gbps[kM[j]]);
    for (int j = 0; j < 5; j++) cell(r[j], sizeof r[j], row->ratio[kR[j]]);
    printf("%8s | %7s %7s %6s %6s | %6s | %6s %7s | %7s %7s %6s %6s %7s\n", lbl, c[0], c[1], c[2], c[3], c[4], c[5],
           c[6], r[0], r[1], r[2], r[3], r[4]);
  }
  fflush(stdout);
}

void report_latency(const cfg_t *c, const lat_result_t *r) {
  char tt[32];
  printf("\nLatency, us (median / p99 of %ld, interleaved):\n", c->rtt_n);
  printf("  write_i32 launch (1 block) + stream_synchronize  %8.1f / %8.1f   (%ld prints received)\n", r->rtt_us,
         r->rtt_p99, r->prints);
  printf("  bare gRPC empty unary call, same thread          %8.1f / %8.1f\n", r->unary_us, r->unary_p99);
  printf("  the same from the client helper process          %8.1f / %8.1f\n", r->helper_us, r->helper_p99);
  printf("  rdev synchronous call (rdev_mem_info)            %8.1f / %8.1f\n", r->call_us, r->call_p99);
  printf("  launch+sync / gRPC unary = %.2f, median of paired samples (target %s); ratio of the medians %.2f\n",
         r->rtt_ratio, target_text("rtt_vs_grpc_unary", tt, sizeof tt), r->rtt_us / r->unary_us);
  fflush(stdout);
}

void report_ops(const cfg_t *c, const ops_result_t *r) {
  char tt[32];
  printf(
      "\nPipelined small ops: %ld x 64-byte rdev_memset_async on one stream + 1 synchronize: %.0f ops/s "
      "(submit %.3f s, total %.3f s; median of %d; target %s)\n",
      c->ops_n, r->ops_per_s, r->submit_s, r->total_s, c->ops_reps, target_text("ops_per_s", tt, sizeof tt));
  fflush(stdout);
}

void report_sessions(const cfg_t *c, const sessions_result_t *r) {
  char sl[32], tt[32];
  size_label(c->sess_buf, sl, sizeof sl);
  printf(
      "\nConcurrent sessions (each a thread with its own session and %s buffer, sync H2D for %.1f s; "
      "medians of %d;\n  x = median of the ratios to 1 session in the same rep):\n"
      "  1: %.2f GB/s   2: %.2f GB/s (x%.2f)   4: %.2f GB/s (x%.2f; target %s)\n",
      sl, c->sess_s, c->sess_reps, r->agg[0], r->agg[1], r->scale[0], r->agg[2], r->scale[1],
      target_text("scale_4_sessions", tt, sizeof tt));
  fflush(stdout);
}

void report_same_host(const same_host_result_t *r) {
  char sl[32], tt[32];
  size_label(r->size, sl, sizeof sl);
  printf(
      "\nSame host, GB/s (medians of %d): a second rdevd on %s, a session there with its bulk\n"
      "connection; host memory from rdev_malloc_host, a memfd shared with rdevd: no byte crosses a socket.\n"
      "  sync rdev_memcpy of %s: H2D %.2f  D2H %.2f   local memcpy of %s between warm buffers: %.2f\n"
      "  min(H2D, D2H) / memcpy = %.2f, median of paired samples (target %s)\n",
      r->reps, r->addr, sl, r->h2d_gbps, r->d2h_gbps, sl, r->memcpy_gbps, r->ratio,
      target_text("same_host_vs_memcpy", tt, sizeof tt));
  fflush(stdout);
}

void report_opers(const cfg_t *c, const opers_result_t *r) {
  (void)c;
  char al[32], tadd[32], tmm[32];
  const oper_shape_t *s = &r->shape;
  size_label(s->add_n * sizeof(float), al, sizeof al);
  printf(
      "\nOperators, ms per launch + synchronize, the data on the device (medians of <reps> samples of k each, the\n"
      "methods in a random order in each rep): rt = the in-process runtime (rdev_rt_op_launch on a sim of its own:\n"
      "what the device itself takes, the baseline); op = the C API (rdev_op_launch); acl = aclnn through rdev's\n"
      "libopapi.so (aclnn<Op>GetWorkspaceSize + aclnn<Op> + aclrtSynchronizeStream); py = rdev.ops.<op>(a, b, out=c)\n"
      "+ synchronize (a python3 child); kernel = the sim's add_f32 through rdev_launch, rt-kern the same in-process\n"
      "(rdev_rt_launch). Ratios against rt (kernel against rt-kern), paired per rep, medians (targets %s, %s).\n",
      target_text("op_add_vs_rt", tadd, sizeof tadd), target_text("op_matmul_vs_rt", tmm, sizeof tmm));
  printf("%-30s | %7s %7s %7s %7s | %7s %7s | %5s %6s %5s %8s | %4s %s\n", "problem", "rt", "op", "acl", "py", "kernel",
         "rt-kern", "op/rt", "acl/rt", "py/rt", "kern/r-k", "reps", "k");
  for (int p = 0; p < OPER_NPROBLEMS; p++) {
    const oper_row_t *row = &r->row[p];
    char lbl[64], ms[NOM][16], ra[NOM][16];
    if (p == OPER_ADD)
      snprintf(lbl, sizeof lbl, "Add, 3 x %s float32", al);
    else
      snprintf(lbl, sizeof lbl, "Matmul %lldx%lld @ %lldx%lld", (long long)s->mm_m, (long long)s->mm_k,
               (long long)s->mm_k, (long long)s->mm_n);
    for (int m = 0; m < NOM; m++) {
      if (p != OPER_ADD && m >= OM_KERNEL)
        snprintf(ms[m], sizeof ms[m], " ");
      else if (!row->ran[m])
        snprintf(ms[m], sizeof ms[m], "na");
      else
        snprintf(ms[m], sizeof ms[m], "%.2f", row->ms[m]);
      if (isnan(row->ratio[m]))
        snprintf(ra[m], sizeof ra[m], p != OPER_ADD && m >= OM_KERNEL ? " " : "-");
      else
        snprintf(ra[m], sizeof ra[m], "%.3f", row->ratio[m]);
    }
    char kl[32];
    if (row->k_kernel)
      snprintf(kl, sizeof kl, "%ld, kernels %ld", row->k, row->k_kernel);
    else
      snprintf(kl, sizeof kl, "%ld", row->k);
    printf("%-30s | %7s %7s %7s %7s | %7s %7s | %5s %6s %5s %8s | %4d %s\n", lbl, ms[OM_RT], ms[OM_OP], ms[OM_ACL],
           ms[OM_PY], ms[OM_KERNEL], ms[OM_RT_KERNEL], ra[OM_OP], ra[OM_ACL], ra[OM_PY], ra[OM_KERNEL], row->reps, kl);
  }
  static const char *const kName[NOM] = {"rt", "op", "acl", "py", "kernel", "rt-kern"};
  for (int p = 0; p < OPER_NPROBLEMS; p++) {
    const oper_row_t *row = &r->row[p];
    if (row->ran[OM_RT]) {
      double secs = row->ms[OM_RT] / 1e3;
      if (p == OPER_ADD)
        printf("  %s on the device (rt): %.2f GB/s moved (2 read, 1 written)", oper_name(p),
               3.0 * (double)(s->add_n * sizeof(float)) / secs / 1e9);
      else
        printf("  %s on the device (rt): %.2f GFLOP/s", oper_name(p),
               2.0 * (double)s->mm_m * (double)s->mm_k * (double)s->mm_n / secs / 1e9);
      if (p == OPER_ADD && row->ran[OM_RT_KERNEL])
        printf("; add_f32 in-process %.2f GB/s",
               3.0 * (double)(s->add_n * sizeof(float)) / (row->ms[OM_RT_KERNEL] / 1e3) / 1e9);
      printf("\n");
    }
    for (int m = 0; m < NOM; m++)
      if (row->note[m][0]) printf("  %s %s: na (%s)\n", oper_name(p), kName[m], row->note[m]);
  }
  printf(
      "Every method that ran verified after its reps, onto an output set to NaN: Add every element, Matmul a grid of\n"
      "16 x 16 elements (integer inputs: exact in float32).\n");
  fflush(stdout);
}

/* ---- the summary line ------------------------------------------------------------------ */

static void add(summary_t *s, const char *key, const char *fmt, double v) {
  if (s->n == (int)(sizeof s->f / sizeof s->f[0])) die("too many summary figures");
  s->f[s->n++] = (figure_t){.key = key, .fmt = fmt, .v = v, .present = 1};
}

/* A figure of the server-memory phase: "na" when that did not run. */
static void add_rss(summary_t *s, const char *key, const char *fmt, const rss_result_t *rss, double v) {
  add(s, key, fmt, rss->measured ? v : NAN);
  s->f[s->n - 1].present = rss->measured;
}

static void add_str(summary_t *s, const char *key, const char *str) {
  add(s, key, NULL, NAN);
  s->f[s->n - 1].str = str;
}

/* A figure that may be missing ("na"): the Python package's when there is
 * none, D2H into fresh memory when no size was large enough, the same-host
 * phase's against --target. */
static void add_if(summary_t *s, const char *key, const char *fmt, int present, double v) {
  add(s, key, fmt, present ? v : NAN);
  s->f[s->n - 1].present = present;
}

summary_t summary_make(const cfg_t *c, size_t big, const rss_result_t *rss, const copies_result_t *cp,
                       const lat_result_t *lat, const ops_result_t *ops, const sessions_result_t *ss, int have_py,
                       const same_host_result_t *sh, const opers_result_t *op) {
  summary_t s;
  memset(&s, 0, sizeof s);
  s.own_rdevd = !c->target;
  const double *pr = cp->pr, *pg = cp->pg;
  add(&s, "h2d_vs_tcp", "%.3f", pr[R_H2D_TCP]);
  add(&s, "d2h_vs_tcp", "%.3f", pr[R_D2H_TCP]);
  add(&s, "h2d_vs_grpc", "%.3f", pr[R_H2D_GRPC]);
  add(&s, "d2h_vs_grpc", "%.3f", pr[R_D2H_GRPC]);
  add(&s, "rtt_vs_grpc_unary", "%.3f", lat->rtt_ratio);
  add(&s, "ops_per_s", "%.0f", ops->ops_per_s);
  add_rss(&s, "server_rss_mib", "%.1f", rss, rss->beyond_mib);
  add(&s, "scale_4_sessions", "%.3f", ss->scale[1]);
  add(&s, "h2d_gbps", "%.3f", pg[M_H2D]);
  add(&s, "d2h_gbps", "%.3f", pg[M_D2H]);
  add(&s, "h2d_async_gbps", "%.3f", pg[M_H2D_ASYNC]);
  add(&s, "d2h_async_gbps", "%.3f", pg[M_D2H_ASYNC]);
  add(&s, "tcp_gbps", "%.3f", pg[M_TCP]);
  add(&s, "grpc_gbps", "%.3f", pg[M_GRPC_UP]);
  add(&s, "grpc_down_gbps", "%.3f", pg[M_GRPC_DOWN]);
  add(&s, "rt_h2d_gbps", "%.3f", pg[M_RT_H2D]);
  add(&s, "rt_d2h_gbps", "%.3f", pg[M_RT_D2H]);
  add(&s, "h2d_async_vs_tcp", "%.3f", pr[R_H2DA_TCP]);
  add(&s, "d2h_async_vs_tcp", "%.3f", pr[R_D2HA_TCP]);
  add(&s, "h2d_async_vs_grpc", "%.3f", pr[R_H2DA_GRPC]);
  add(&s, "d2h_async_vs_grpc", "%.3f", pr[R_D2HA_GRPC]);
  add(&s, "rtt_us", "%.1f", lat->rtt_us);
  add(&s, "rtt_p99_us", "%.1f", lat->rtt_p99);
  add(&s, "grpc_unary_us", "%.1f", lat->unary_us);
  add(&s, "grpc_unary_helper_us", "%.1f", lat->helper_us);
  add(&s, "sync_call_us", "%.1f", lat->call_us);
  add(&s, "rtt_medians_ratio", "%.3f", lat->rtt_us / lat->unary_us);
  add(&s, "sessions_1_gbps", "%.3f", ss->agg[0]);
  add(&s, "sessions_2_gbps", "%.3f", ss->agg[1]);
  add(&s, "sessions_4_gbps", "%.3f", ss->agg[2]);
  add_rss(&s, "server_rss_base_mib", "%.1f", rss, rss->base_mib);
  add_rss(&s, "server_rss_peak_mib", "%.1f", rss, rss->peak_mib);
  add_rss(&s, "rss_phase_gbps", "%.3f", rss, rss->gbps);
  add(&s, "rss_phase_mib", "%.0f", (double)(rss->moved >> 20));
  add(&s, "ratio_sizes_from_mib", "%.0f", (double)(big >> 20));
  add_str(&s, "client_malloc", c->malloc_tune ? "tuned" : "default");
  add_str(&s, "mode", c->quick ? "quick" : "full");
  /* the other clients and fresh memory */
  add(&s, "acl_h2d_vs_tcp", "%.3f", pr[R_ACL_H2D_TCP]);
  add(&s, "acl_d2h_vs_tcp", "%.3f", pr[R_ACL_D2H_TCP]);
  add_if(&s, "py_h2d_vs_tcp", "%.3f", have_py, pr[R_PY_H2D_TCP]);
  add_if(&s, "py_d2h_vs_tcp", "%.3f", have_py, pr[R_PY_D2H_TCP]);
  int fresh = !isnan(pg[M_D2H_FRESH]);
  add_if(&s, "d2h_fresh_vs_memcpy_fresh", "%.3f", fresh, pr[R_FRESH_MEMCPY]);
  add(&s, "acl_h2d_gbps", "%.3f", pg[M_ACL_H2D]);
  add(&s, "acl_d2h_gbps", "%.3f", pg[M_ACL_D2H]);
  add_if(&s, "py_h2d_gbps", "%.3f", have_py, pg[M_PY_H2D]);
  add_if(&s, "py_d2h_gbps", "%.3f", have_py, pg[M_PY_D2H]);
  add_if(&s, "d2h_fresh_gbps", "%.3f", fresh, pg[M_D2H_FRESH]);
  add_if(&s, "memcpy_fresh_gbps", "%.3f", fresh, pg[M_MEMCPY_FRESH]);
  /* the same-host fast path ("na" against --target) */
  add_if(&s, "same_host_vs_memcpy", "%.3f", sh->measured, sh->ratio);
  add_if(&s, "same_host_h2d_gbps", "%.3f", sh->measured, sh->h2d_gbps);
  add_if(&s, "same_host_d2h_gbps", "%.3f", sh->measured, sh->d2h_gbps);
  add_if(&s, "same_host_memcpy_gbps", "%.3f", sh->measured, sh->memcpy_gbps);
  /* the operators ("na" where a method was not offered) */
  static const struct {
    const char *key;
    int p, m;
  } kRatios[] = {{"op_add_vs_rt", OPER_ADD, OM_OP},       {"acl_add_vs_rt", OPER_ADD, OM_ACL},
                 {"py_add_vs_rt", OPER_ADD, OM_PY},       {"kernel_add_vs_rt_kernel", OPER_ADD, OM_KERNEL},
                 {"op_matmul_vs_rt", OPER_MATMUL, OM_OP}, {"acl_matmul_vs_rt", OPER_MATMUL, OM_ACL},
                 {"py_matmul_vs_rt", OPER_MATMUL, OM_PY}},
    kMs[] = {{"rt_add_ms", OPER_ADD, OM_RT},         {"op_add_ms", OPER_ADD, OM_OP},
             {"acl_add_ms", OPER_ADD, OM_ACL},       {"py_add_ms", OPER_ADD, OM_PY},
             {"kernel_add_ms", OPER_ADD, OM_KERNEL}, {"rt_kernel_add_ms", OPER_ADD, OM_RT_KERNEL},
             {"rt_matmul_ms", OPER_MATMUL, OM_RT},   {"op_matmul_ms", OPER_MATMUL, OM_OP},
             {"acl_matmul_ms", OPER_MATMUL, OM_ACL}, {"py_matmul_ms", OPER_MATMUL, OM_PY}};
  for (size_t i = 0; i < sizeof kRatios / sizeof kRatios[0]; i++) {
    const oper_row_t *row = &op->row[kRatios[i].p];
    add_if(&s, kRatios[i].key, "%.3f", !isnan(row->ratio[kRatios[i].m]), row->ratio[kRatios[i].m]);
  }
  for (size_t i = 0; i < sizeof kMs / sizeof kMs[0]; i++) {
    const oper_row_t *row = &op->row[kMs[i].p];
    add_if(&s, kMs[i].key, "%.3f", row->ran[kMs[i].m], row->ms[kMs[i].m]);
  }
  add(&s, "oper_add_mib", "%.0f", (double)(op->shape.add_n * sizeof(float)) / (double)MiB);
  add(&s, "oper_matmul_dim", "%.0f", (double)op->shape.mm_m);
  return s;
}

const figure_t *summary_find(const summary_t *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->f[i].key, key) == 0) return &s->f[i];
  die("no summary figure '%s'", key);
}

int report_end(const summary_t *s, size_t big, double run_s, int guard) {
  char bigl[32];
  size_label(big, bigl, sizeof bigl);
  printf("\nTargets (copies from %s; medians of paired ratios):\n", bigl);
  int met, counted;
  targets_report(s, &met, &counted);
  int below = guard ? guard_report(s) : 0;
  printf("Run time %.1f s.\n", run_s);
  for (int i = 0; i < s->n; i++) {
    const figure_t *f = &s->f[i];
    printf("%s=", f->key);
    if (f->str)
      printf("%s", f->str);
    else if (!f->present)
      printf("na");
    else
      printf(f->fmt, f->v);
    putchar(' ');
  }
  printf("guard=%s targets_met=%d/%d\n", !guard ? "off" : below ? "FAILED" : "ok", met, counted);
  fflush(stdout);
  return below;
}
