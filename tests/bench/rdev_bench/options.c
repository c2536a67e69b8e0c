/*
 * tests/bench/rdev_bench/options.c — rdev_bench's command line: its usage
 * text, parsing, and the figures of each mode (full, --quick).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev_bench.h"

static const size_t kDefaultSizes[] = {4u << 10, 64u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20};

static void usage(FILE *f) {
  fprintf(f,
          "usage: rdev_bench [--target ADDR] [--rdevd PATH] [--quick] [--sizes LIST] [--reps N]\n"
          "                  [--malloc-tune] [--python-path DIR] [--guard]\n"
          "       rdev [--target ADDR] bench [OPTIONS]   (the same: rdev runs this program)\n"
          "  --target ADDR  measure the rdevd at ADDR (no server-memory, no same-host figures);\n"
          "                 default: start one (and a second on a unix socket for the same-host figures)\n"
          "  --rdevd PATH   the rdevd to start (default: ../server/rdevd next to this binary)\n"
          "  --quick        sizes up to 64 MiB, 256 MiB in the memory phase, smaller operators, few reps\n"
          "                 (~30 s; CI)\n"
          "  --sizes LIST   copy sizes, e.g. 4K,1M,64M (suffixes K, M, G; at most 1G each)\n"
          "  --reps N       samples per size and method (1..15; default 9, --quick 3, and 7 from 64 MiB)\n"
          "  --malloc-tune  keep freed memory in this process's heap (mallopt), as the bare-gRPC\n"
          "                 helper always does: shows what glibc's trimming costs the rdev client\n"
          "  --python-path DIR  where the `rdev` Python package is (default: ../python next to this\n"
          "                 binary, the build's); python3 is /usr/bin/python3, else the first on PATH\n"
          "  --guard        fail (exit 3) when a bulk ratio is below half its target, or missing\n"
          "Prints a table and, last, one line of key=value figures. Exit 1 on any error.\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *s == '-') return -1;
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      end++;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      end++;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      end++;
      break;
    default: break;
  }
  if (*end == 'i' || *end == 'B') end++;
  if (*end == 'B') end++;
  if (*end || v == 0 || v > ((unsigned long long)1 << 30)) return -1;
  *out = (size_t)v;
  return 0;
}

int bench_parse_args(cfg_t *c, int argc, char **argv) {
  const char *sizes = NULL;
  int reps = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--quick")) {
      c->quick = 1;
    } else if (!strcmp(a, "--malloc-tune")) {
      c->malloc_tune = 1;
    } else if (!strcmp(a, "--guard")) {
      c->guard = 1;
    } else if (!strcmp(a, "--python-path") && i + 1 < argc) {
      c->python_dir = argv[++i];
    } else if (!strncmp(a, "--python-path=", 14)) {
      c->python_dir = a + 14;
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
        fprintf(stderr, "rdev_bench: --reps wants 1..%d\n", MAX_REPS);
        return 2;
      }
      reps = (int)r;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return -1;
    } else {
      fprintf(stderr, "rdev_bench: unknown argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  c->reps = c->quick ? 3 : 9;
  c->sample_s = c->quick ? 0.02 : 0.1;
  /* from the headline size on (the targets' and the guard's sizes): more
   * and longer samples in quick mode, so that noise cannot fail --guard */
  c->big_reps = c->quick ? 7 : 9;
  c->big_sample_s = c->quick ? 0.05 : 0.1;
  c->big_budget_s = 15;
  c->rtt_n = c->quick ? 200 : 2000;
  c->ops_n = c->quick ? 50000 : 100000; /* 20,000 (15 ms) swung by 2x with the VM's scheduling */
  c->ops_reps = 3;                      /* one sample of 20 ms is a coin toss on a VM */
  c->rss_buf = c->quick ? 64 * MiB : 256 * MiB;
  c->rss_total = c->quick ? 256 * MiB : (size_t)4 << 30;
  c->rss_max_s = c->quick ? 8 : 60;
  c->size_budget_s = c->quick ? 1.5 : 15;
  c->sess_buf = c->quick ? 16 * MiB : 64 * MiB;
  c->sess_s = c->quick ? 0.2 : 1.0;
  c->sess_reps = c->quick ? 2 : 7;
  c->oper_add_bytes = c->quick ? 8 * MiB : 64 * MiB;
  c->oper_mm_dim = c->quick ? 512 : 2048;
  c->oper_reps = c->quick ? 7 : 9;
  c->oper_sample_s = c->quick ? 0.05 : 0.1;
  c->oper_budget_s = c->quick ? 2.5 : 30;
  if (reps) c->reps = c->big_reps = reps;
  if (sizes) {
    char *dup = strdup(sizes), *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (c->nsizes == MAX_SIZES || parse_size(t, &c->sizes[c->nsizes])) {
        fprintf(stderr, "rdev_bench: --sizes: bad size '%s' (or more than %d)\n", t, MAX_SIZES);
        free(dup);
        return 2;
      }
      c->nsizes++;
    }
    free(dup);
    if (!c->nsizes) {
      fprintf(stderr, "rdev_bench: --sizes: empty list\n");
      return 2;
    }
  } else {
    for (size_t i = 0; i < sizeof kDefaultSizes / sizeof kDefaultSizes[0]; i++)
      if (!c->quick || kDefaultSizes[i] <= 64 * MiB) c->sizes[c->nsizes++] = kDefaultSizes[i];
  }
  return 0;
}
