/*
 * tests/bench/rdev_bench/targets.c — the targets: test policy, in one table
 * (the figures, by their key on the summary line; the comparison; the
 * threshold; whether the guard watches it), and how each shows in the
 * Targets block. A target counts as met when every figure it names meets
 * it; a figure that is "na" (the server memory and the same-host fast path
 * against --target, the Python package's when there is none, D2H into fresh
 * memory when no size was above 32 MiB, an operator's where it is not
 * offered) leaves its target uncounted; a NAN figure misses. Targets are
 * reported, never fatal: targets_met=M/N on the summary line. The guard
 * (--guard; ctest's rdev_bench_quick) is the fatal part: each figure of a
 * guarded target (a bulk ratio, or an operator's time against the
 * in-process runtime's) must reach half the target, its floor: half the
 * threshold of a ratio that must be high enough (a speed), twice that of
 * one that must stay low enough (a time: half the speed); one beyond its
 * floor, NAN or "na" fails the run, except a figure only the bench's own
 * rdevd gives (own_rdevd) against --target, and an operator's or kernel's
 * that was not offered (offered_only), which the guard skips.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rdev_bench.h"

typedef enum { GE, LE, LT } cmp_t;

typedef struct {
  /* policy */
  const char *keys[4]; /* the figures that must meet it (one to four) */
  cmp_t cmp;
  double threshold;
  int guarded; /* a bulk ratio: --guard fails the run when a figure is below threshold / 2 */
  /* how it shows: "<subject> <cmp> <threshold><unit>", then the detail, whose
   * printf conversions take the detail_keys' figures in turn */
  const char *thr_fmt, *subject, *unit, *detail;
  const char *detail_keys[4];
  const char *na_note; /* shown when a figure is "na" */
  int own_rdevd;       /* measured on an rdevd the bench starts only: "na", and not guarded, against --target */
  int offered_only;    /* an operator's or kernel's: "na", and not guarded, where it is not offered */
} target_t;

/* clang-format off */
static const target_t kTargets[] = {
    /* Guarded: every bulk ratio (copies of each client against raw TCP,
     * D2H into fresh memory against memcpy into fresh memory, same-host
     * copies through shared memory against memcpy). */
    {{"h2d_vs_tcp", "h2d_async_vs_tcp"}, GE, 0.90, 1,
     "%.2f", "C API H2D", " x raw TCP", "sync %.2f  async %.2f",
     {"h2d_vs_tcp", "h2d_async_vs_tcp"}, NULL, 0, 0},
    {{"d2h_vs_tcp", "d2h_async_vs_tcp"}, GE, 0.90, 1,
     "%.2f", "C API D2H", " x raw TCP", "sync %.2f  async %.2f",
     {"d2h_vs_tcp", "d2h_async_vs_tcp"}, NULL, 0, 0},
    {{"acl_h2d_vs_tcp", "acl_d2h_vs_tcp"}, GE, 0.90, 1,
     "%.2f", "ACL H2D, D2H", " x raw TCP", "h2d %.2f  d2h %.2f",
     {"acl_h2d_vs_tcp", "acl_d2h_vs_tcp"}, NULL, 0, 0},
    {{"py_h2d_vs_tcp", "py_d2h_vs_tcp"}, GE, 0.90, 0,
     "%.2f", "Python H2D, D2H", " x raw TCP", "h2d %.2f  d2h %.2f",
     {"py_h2d_vs_tcp", "py_d2h_vs_tcp"}, "(no Python package: see Clients)", 0, 0},
    {{"d2h_fresh_vs_memcpy_fresh"}, GE, 0.80, 1,
     "%.2f", "D2H fresh", " x memcpy fresh", "%.2f  (%.2f against %.2f GB/s)",
     {"d2h_fresh_vs_memcpy_fresh", "d2h_fresh_gbps", "memcpy_fresh_gbps"}, "(no size above 32 MiB)", 0, 0},
    {{"same_host_vs_memcpy"}, GE, 0.80, 1,
     "%.2f", "same-host H2D, D2H", " x memcpy", "%.2f  (h2d %.2f, d2h %.2f against %.2f GB/s)",
     {"same_host_vs_memcpy", "same_host_h2d_gbps", "same_host_d2h_gbps", "same_host_memcpy_gbps"},
     "(rdevd not started by the bench)", 1, 0},
    {{"h2d_vs_grpc", "d2h_vs_grpc"}, GE, 1.00, 0,
     "%.2f", "C API H2D, D2H", " x bare gRPC", "h2d %.2f  d2h %.2f  (async: %.2f, %.2f)",
     {"h2d_vs_grpc", "d2h_vs_grpc", "h2d_async_vs_grpc", "d2h_async_vs_grpc"}, NULL, 0, 0},
    {{"rtt_vs_grpc_unary"}, LE, 1.00, 0,
     "%.2f", "launch+sync", " x gRPC unary", "%.2f", {"rtt_vs_grpc_unary"}, NULL, 0, 0},
    {{"ops_per_s"}, GE, 1000000, 0,
     "%.0f", "small async ops", "/s", "%.0f", {"ops_per_s"}, NULL, 0, 0},
    {{"server_rss_mib"}, LT, 128, 0,
     "%.0f", "server RSS beyond arena", " MiB", "%.1f MiB", {"server_rss_mib"},
     "(rdevd not started by the bench)", 1, 0},
    {{"scale_4_sessions"}, GE, 0.90, 0,
     "%.2f", "4 sessions", " x 1 session", "%.2f", {"scale_4_sessions"}, NULL, 0, 0},
    /* Operators: remote launch + synchronize against the in-process
     * runtime's (the wire adds one message and a round trip to work that
     * takes milliseconds). Guarded, but for Python's. */
    {{"op_add_vs_rt", "acl_add_vs_rt"}, LE, 1.25, 1,
     "%.2f", "Add: C API, aclnn", " x rt", "op %.2f  acl %.2f  (rt %.2f ms)",
     {"op_add_vs_rt", "acl_add_vs_rt", "rt_add_ms"}, "(not offered: see Operators)", 0, 1},
    {{"kernel_add_vs_rt_kernel"}, LE, 1.25, 1,
     "%.2f", "add_f32 kernel", " x rt kernel", "%.2f  (rt %.2f ms)",
     {"kernel_add_vs_rt_kernel", "rt_kernel_add_ms"}, "(not offered: see Operators)", 0, 1},
    {{"op_matmul_vs_rt", "acl_matmul_vs_rt"}, LE, 1.10, 1,
     "%.2f", "Matmul: C API, aclnn", " x rt", "op %.2f  acl %.2f  (rt %.2f ms)",
     {"op_matmul_vs_rt", "acl_matmul_vs_rt", "rt_matmul_ms"}, "(not offered: see Operators)", 0, 1},
    {{"py_add_vs_rt"}, LE, 1.25, 0,
     "%.2f", "Add: Python rdev.ops", " x rt", "%.2f", {"py_add_vs_rt"}, "(no rdev.ops or no Add: see Operators)", 0, 1},
    {{"py_matmul_vs_rt"}, LE, 1.10, 0,
     "%.2f", "Matmul: Python rdev.ops", " x rt", "%.2f", {"py_matmul_vs_rt"},
     "(no rdev.ops or no Matmul: see Operators)", 0, 1},
};
/* clang-format on */
#define NTARGETS (int)(sizeof kTargets / sizeof kTargets[0])

static const char *const kCmp[] = {[GE] = ">=", [LE] = "<=", [LT] = "<"};

static int meets(cmp_t cmp, double v, double threshold) {
  switch (cmp) {
    case GE: return v >= threshold;
    case LE: return v <= threshold;
    case LT: return v < threshold;
  }
  return 0;
}

/* "<cmp> <threshold>" of t. */
static void threshold_text(const target_t *t, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s ", kCmp[t->cmp]);
  if (n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, t->thr_fmt, t->threshold);
}

const char *target_text(const char *key, char *buf, size_t len) {
  for (int i = 0; i < NTARGETS; i++)
    for (int k = 0; k < 4 && kTargets[i].keys[k]; k++)
      if (strcmp(kTargets[i].keys[k], key) == 0) {
        threshold_text(&kTargets[i], buf, len);
        return buf;
      }
  die("no target on '%s'", key);
}

/* t->detail with each conversion filled with the next detail_keys figure. */
static void detail_text(const target_t *t, const summary_t *s, char *buf, size_t len) {
  size_t o = 0;
  int next = 0;
  buf[0] = '\0';
  for (const char *p = t->detail; *p && o + 1 < len;) {
    if (*p != '%') {
      buf[o++] = *p++;
      buf[o] = '\0';
      continue;
    }
    size_t sl = strcspn(p + 1, "fgeG") + 2; /* "%...f" */
    char spec[16];
    snprintf(spec, sizeof spec, "%.*s", (int)sl, p);
    double v = next < 4 && t->detail_keys[next] ? summary_find(s, t->detail_keys[next])->v : NAN;
    next++;
    int n = snprintf(buf + o, len - o, spec, v);
    if (n > 0) o += (size_t)n < len - o ? (size_t)n : len - o - 1;
    p += sl;
  }
}

void targets_report(const summary_t *s, int *met, int *counted) {
  *met = *counted = 0;
  for (int i = 0; i < NTARGETS; i++) {
    const target_t *t = &kTargets[i];
    char label[64], thr[32], detail[128];
    threshold_text(t, thr, sizeof thr);
    snprintf(label, sizeof label, "%s %s%s", t->subject, thr, t->unit);
    int present = 1, ok = 1;
    for (int k = 0; k < 4 && t->keys[k]; k++) {
      const figure_t *f = summary_find(s, t->keys[k]);
      if (!f->present)
        present = 0;
      else if (!meets(t->cmp, f->v, t->threshold))
        ok = 0;
    }
    if (!present) {
      printf("  %-38s%-6s  %s\n", label, "n/a", t->na_note ? t->na_note : "");
      continue;
    }
    ++*counted;
    if (ok) ++*met;
    detail_text(t, s, detail, sizeof detail);
    printf("  %-38s%-6s  %s\n", label, ok ? "met" : "MISSED", detail);
  }
}

/* The guard's floor of t: half the target (a speed at half, a time at twice). */
static double floor_of(const target_t *t) { return t->cmp == GE ? t->threshold / 2 : t->threshold * 2; }

int guard_report(const summary_t *s) {
  const char *failed[16];
  int nfailed = 0, compared = 0;
  printf(
      "\nGuard (--guard): each guarded ratio against its floor, half its target (half the threshold of a speed ratio,\n"
      "twice that of a time ratio); one beyond it fails the run:\n");
  for (int i = 0; i < NTARGETS; i++) {
    const target_t *t = &kTargets[i];
    if (!t->guarded) continue;
    double floor_v = floor_of(t);
    for (int k = 0; k < 4 && t->keys[k]; k++) {
      const figure_t *f = summary_find(s, t->keys[k]);
      if (!f->present && ((t->own_rdevd && !s->own_rdevd) || t->offered_only)) {
        printf("  guard %-26s %8s %s %.2f  skipped %s\n", f->key, "na", kCmp[t->cmp], floor_v, t->na_note);
        continue;
      }
      int ok = f->present && meets(t->cmp, f->v, floor_v);
      char val[32];
      if (f->present)
        snprintf(val, sizeof val, "%.3f", f->v);
      else
        snprintf(val, sizeof val, "na");
      printf("  guard %-26s %8s %s %.2f  %s\n", f->key, val, kCmp[t->cmp], floor_v,
             ok           ? "ok"
             : f->present ? "FAILED"
                          : "FAILED (no figure)");
      compared++;
      if (!ok && nfailed < 16) failed[nfailed++] = f->key;
    }
  }
  if (!nfailed) {
    printf("Guard passed: %d ratios compared, none beyond its floor.\n", compared);
    return 0;
  }
  printf("Guard FAILED: %d of %d ratios beyond their floors:", nfailed, compared);
  for (int i = 0; i < nfailed; i++) printf(" %s", failed[i]);
  printf("\n");
  return nfailed;
}
