/*
 * tests/bench/rdev_bench/targets.c — the targets: test policy, in one table
 * (the figures, by their key on the summary line; the comparison; the
 * threshold), and how each shows in the Targets block. A target counts as
 * met when every figure it names meets it; a figure that is "na" (the server
 * memory against --target) leaves its target uncounted; a NAN figure misses.
 * Targets are reported, never fatal: targets_met=M/N on the summary line.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rdev_bench.h"

typedef enum { GE, LE, LT } cmp_t;

typedef struct {
  /* policy */
  const char *keys[2]; /* the figures that must meet it (one or two) */
  cmp_t cmp;
  double threshold;
  /* how it shows: "<subject> <cmp> <threshold><unit>", then the detail, whose
   * printf conversions take the detail_keys' figures in turn */
  const char *thr_fmt, *subject, *unit, *detail;
  const char *detail_keys[4];
  const char *na_note; /* shown when a figure is "na" */
} target_t;

static const target_t kTargets[] = {
    {{"h2d_vs_tcp", "d2h_vs_tcp"},
     GE,
     0.75,
     "%.2f",
     "H2D, D2H",
     " x raw TCP",
     "h2d %.2f  d2h %.2f  (async: %.2f, %.2f)",
     {"h2d_vs_tcp", "d2h_vs_tcp", "h2d_async_vs_tcp", "d2h_async_vs_tcp"},
     NULL},
    {{"h2d_vs_grpc", "d2h_vs_grpc"},
     GE,
     1.00,
     "%.2f",
     "H2D, D2H",
     " x bare gRPC",
     "h2d %.2f  d2h %.2f  (async: %.2f, %.2f)",
     {"h2d_vs_grpc", "d2h_vs_grpc", "h2d_async_vs_grpc", "d2h_async_vs_grpc"},
     NULL},
    {{"rtt_vs_grpc_unary"}, LE, 1.30, "%.2f", "launch+sync", " x gRPC unary", "%.2f", {"rtt_vs_grpc_unary"}, NULL},
    {{"ops_per_s"}, GE, 50000, "%.0f", "small async ops", "/s", "%.0f", {"ops_per_s"}, NULL},
    {{"server_rss_mib"},
     LT,
     128,
     "%.0f",
     "server RSS beyond arena",
     " MiB",
     "%.1f MiB",
     {"server_rss_mib"},
     "(rdevd not started by the bench)"},
    {{"scale_4_sessions"}, GE, 0.90, "%.2f", "4 sessions", " x 1 session", "%.2f", {"scale_4_sessions"}, NULL},
};
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
    for (int k = 0; k < 2 && kTargets[i].keys[k]; k++)
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
    for (int k = 0; k < 2 && t->keys[k]; k++) {
      const figure_t *f = summary_find(s, t->keys[k]);
      if (!f->present)
        present = 0;
      else if (!meets(t->cmp, f->v, t->threshold))
        ok = 0;
    }
    if (!present) {
      printf("  %-34s%-6s  %s\n", label, "n/a", t->na_note ? t->na_note : "");
      continue;
    }
    ++*counted;
    if (ok) ++*met;
    detail_text(t, s, detail, sizeof detail);
    printf("  %-34s%-6s  %s\n", label, ok ? "met" : "MISSED", detail);
  }
}
