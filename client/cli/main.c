/*
 * client/cli/main.c — the `rdev` tool's entry point: its command line, and
 * the commands that look at an rdevd and exercise it from a shell; detached
 * jobs are job.c's (`rdev job`). Built only on the public API (rdev/rdev.h,
 * rdev/job.h), as curl's tool is on libcurl.
 *
 *   rdev [--target ADDR] devices | info | health [--service NAME] | ping [-n N] | roundtrip FILE | token | bench [...]
 *                        | job submit|status|watch|cancel|list|fetch ... | help
 *
 * The target defaults to $RDEV_TARGET, else 127.0.0.1:50051. `rdev bench`
 * runs the benchmark program, rdev_bench (tests/bench/rdev_bench/), which
 * is not built into this tool: its baselines measure below the public API.
 */
#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "job_yaml.h"
#include "rdev/job_token.h"
#include "rdev/rdev.h"

#define DEFAULT_TARGET "127.0.0.1:50051"

static const char *g_target;
static int g_target_set; /* --target given: passed on to rdev_bench (it starts its own rdevd otherwise) */

static void usage(FILE *f) {
  fprintf(f,
          "usage: rdev [--target ADDR] <command>\n"
          "\n"
          "commands:\n"
          "  devices          list the server's devices (index, name, total and free MiB)\n"
          "  info             server version, backend, identity, device count, max chunk\n"
          "  health [--service NAME] [--timeout MS]\n"
          "                   the gRPC health check (NAME: \"\" the server, the default, or\n"
          "                   rdev.v1.Device): prints SERVING or NOT_SERVING (starting, draining);\n"
          "                   exits 0 serving, 1 not serving, 2 unreachable or any other error\n"
          "  ping [-n N]      N session round trips (default 10): min/median/max microseconds\n"
          "  roundtrip FILE   send FILE to device memory and back; compare; MB/s each way\n"
          "  bench [OPTIONS]  data-plane benchmark against raw TCP, bare gRPC and the in-process\n"
          "                   runtime; starts its own rdevd unless --target is given. Runs the\n"
          "                   rdev_bench program: $RDEV_BENCH, else rdev_bench next to this binary\n"
          "                   or in ../tests/ (rdev bench --help for its options)\n"
          "  token            make a new bearer token; prints it and the line that admits it\n"
          "                   in rdevd's tenants file (only the hash goes there)\n"
          "  token key        make a new signing key for a tenant's job tokens: the tenants\n"
          "                   file's line (signing_key = hex:...); keep it secret\n"
          "  token mint --key-file F --tenant T --job ID --servers S1[,S2...] --devices D[,D...][/D...]\n"
          "             (--ttl SECONDS | --expires UNIX_SECONDS)\n"
          "                   a job token (docs/operations.md): the tenant's devices D on the\n"
          "                   servers named (rdevd --server-name) until it expires; one group of\n"
          "                   devices for every server, or one per server in their order ('/'\n"
          "                   between groups: --servers a,b --devices 0,1/3); F holds the\n"
          "                   signing_key line or its hex:... value\n"
          "  job submit SPEC [--wait]\n"
          "                   queue the job a YAML or JSON SPEC file describes; prints its id\n"
          "                   and webhook secret; --wait: then watch it\n"
          "  job status ID    a job's state, progress, times, webhooks and kept outputs\n"
          "  job watch ID [--reconnect S]\n"
          "                   follow a job until it is final, across an rdevd restart (trying\n"
          "                   for S seconds, default 60, to watch again)\n"
          "  job cancel ID    cancel a job\n"
          "  job list         the tenant's jobs: ID STATE NAME\n"
          "  job fetch ID OUTPUT FILE\n"
          "                   save an output the job kept into FILE (- = stdout)\n"
          "                   (rdev job help: the spec format. Job commands exit 1 when the job\n"
          "                   watched failed or was cancelled, 2 on any other error)\n"
          "  help             this text\n"
          "\n"
          "ADDR is host:port or unix:/path; default $RDEV_TARGET, else " DEFAULT_TARGET
          ".\n"
          "Credentials come from the environment: RDEV_TOKEN (bearer token), RDEV_CA (CA of the\n"
          "server's certificate: TLS), RDEV_CERT and RDEV_KEY (client certificate: mutual TLS).\n");
}

static int fail(const char *what, int rc);

/* `rdev health`: a probe's exit code (0 serving, 1 not, 2 no answer). */
static int cmd_health(int argc, char **argv) {
  const char *service = "";
  rdev_options_t opts;
  memset(&opts, 0, sizeof opts);
  for (int i = 0; i < argc; i++) {
    if ((!strcmp(argv[i], "--service") || !strcmp(argv[i], "-s")) && i + 1 < argc) {
      service = argv[++i];
    } else if (!strncmp(argv[i], "--service=", 10)) {
      service = argv[i] + 10;
    } else if ((!strcmp(argv[i], "--target") || !strcmp(argv[i], "-t")) && i + 1 < argc) {
      g_target = argv[++i];
    } else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
      opts.connect_timeout_ms = atoll(argv[++i]);
    } else {
      fprintf(stderr, "rdev: health: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  rdev_health_t st;
  int rc = rdev_health_check(g_target, service, &opts, &st);
  if (rc) {
    const char *detail = rdev_session_last_error();
    fprintf(stderr, "rdev: health of %s%s%s: %s (%d %s)%s%s\n", g_target, *service ? " service " : "", service,
            rdev_strerror(rc), rc, rdev_status_name(rc), detail && *detail ? ": " : "", detail ? detail : "");
    printf("UNKNOWN\n");
    return 2;
  }
  printf("%s\n", st == RDEV_HEALTH_SERVING ? "SERVING" : st == RDEV_HEALTH_NOT_SERVING ? "NOT_SERVING" : "UNKNOWN");
  return st == RDEV_HEALTH_SERVING ? 0 : st == RDEV_HEALTH_NOT_SERVING ? 1 : 2;
}

static int cmd_token(void) {
  char token[64], hash[80];
  int rc = rdev_token_new(token, sizeof token);
  if (rc || (rc = rdev_token_hash(token, hash, sizeof hash))) return fail("token", rc);
  printf("token: %s\n", token);
  printf("tenants file line: token = %s\n", hash);
  return 0;
}

static int cmd_token_key(void) {
  uint8_t key[RDEV_JOB_KEY_LEN];
  if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
    fprintf(stderr, "rdev: token key: no randomness: %s\n", strerror(errno));
    return 1;
  }
  printf("signing_key = hex:");
  for (size_t i = 0; i < sizeof key; i++) printf("%02x", key[i]);
  printf("\n");
  return 0;
}

/* A signing key from a file holding "hex:<64 hex digits>", with or
 * without "signing_key =" before it: 0, or -1 with the reason printed. */
static int read_key_file(const char *path, uint8_t key[RDEV_JOB_KEY_LEN]) {
  FILE *f = fopen(path, "r");
  char line[256] = "";
  struct stat st;
  if (!f || !fgets(line, sizeof line, f)) {
    fprintf(stderr, "rdev: token mint: cannot read %s: %s\n", path, f ? "empty" : strerror(errno));
    if (f) fclose(f);
    return -1;
  }
  if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077))
    fprintf(stderr, "rdev: token mint: warning: %s may be read by others (mode %03o): chmod 600 it\n", path,
            (unsigned)(st.st_mode & 0777));
  fclose(f);
  const char *h = strstr(line, "hex:");
  size_t n = h ? strspn(h + 4, "0123456789abcdefABCDEF") : 0;
  if (n != 2 * RDEV_JOB_KEY_LEN) {
    fprintf(stderr, "rdev: token mint: %s: expected hex:<64 hex digits>\n", path);
    OPENSSL_cleanse(line, sizeof line);
    return -1;
  }
  for (int i = 0; i < RDEV_JOB_KEY_LEN; i++) {
    unsigned v;
    sscanf(h + 4 + 2 * i, "%2x", &v);
    key[i] = (uint8_t)v;
  }
  OPENSSL_cleanse(line, sizeof line);
  return 0;
}

/* Splits list at commas into at most max names of a claims array. */
static int split_names(const char *list, char (*out)[RDEV_JOB_TOKEN_NAME_MAX], int max) {
  int n = 0;
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, ",");
    if (n == max || len == 0 || len >= RDEV_JOB_TOKEN_NAME_MAX) return -1;
    memcpy(out[n], s, len);
    out[n++][len] = '\0';
    s += len;
    if (*s == ',') s++;
  }
  return n;
}

/* --devices "0,1" (every server's) or "0,1/3" (one group per server, in
 * their order) into c's device groups; -1 when malformed. */
static int device_groups(const char *v, rdev_job_claims_t *c) {
  memset(c->devices, 0, sizeof c->devices);
  c->ngroups = 0;
  for (const char *g = v;; g++) {
    size_t len = strcspn(g, "/");
    char group[256], names[64][RDEV_JOB_TOKEN_NAME_MAX];
    if (len >= sizeof group || c->ngroups == RDEV_JOB_TOKEN_SERVERS_MAX) return -1;
    memcpy(group, g, len);
    group[len] = '\0';
    int n = split_names(group, names, 64);
    if (n <= 0) return -1;
    for (int k = 0; k < n; k++) {
      char *end;
      long d = strtol(names[k], &end, 10);
      if (*end || end == names[k] || d < 0 || d > 63) return -1;
      c->devices[c->ngroups] |= 1ull << d;
    }
    c->ngroups++;
    g += len;
    if (!*g) return 0;
  }
}

/* A whole number 0..max from v, or -1. */
static long long whole(const char *v, long long max) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  return errno || end == v || *end || n < 0 || n > max ? -1 : n;
}

static int cmd_token_mint(int argc, char **argv) {
  rdev_job_claims_t c = {0};
  const char *key_file = NULL;
  long long ttl = -1, expires = -1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "rdev: token mint: %s wants a value\n", a);
      return 2;
    }
    if ((!strcmp(a, "--tenant") || !strcmp(a, "--job")) && strlen(v) >= RDEV_JOB_TOKEN_NAME_MAX) {
      fprintf(stderr, "rdev: token mint: %s: at most %d characters\n", a, RDEV_JOB_TOKEN_NAME_MAX - 1);
      return 2;
    }
    if (!strcmp(a, "--key-file"))
      key_file = v;
    else if (!strcmp(a, "--tenant"))
      snprintf(c.tenant, sizeof c.tenant, "%s", v);
    else if (!strcmp(a, "--job"))
      snprintf(c.job, sizeof c.job, "%s", v);
    else if (!strcmp(a, "--servers"))
      c.nservers = split_names(v, c.servers, RDEV_JOB_TOKEN_SERVERS_MAX);
    else if (!strcmp(a, "--devices")) {
      if (device_groups(v, &c)) {
        fprintf(stderr,
                "rdev: token mint: --devices: D[,D...] (0..63) for every server, or one such group per "
                "server, '/' between groups\n");
        return 2;
      }
    } else if (!strcmp(a, "--ttl")) {
      if ((ttl = whole(v, 100LL * 365 * 86400)) < 0) {
        fprintf(stderr, "rdev: token mint: --ttl: seconds, 0..3153600000\n");
        return 2;
      }
    } else if (!strcmp(a, "--expires")) {
      if ((expires = whole(v, 999999999999LL)) < 0) {
        fprintf(stderr, "rdev: token mint: --expires: Unix seconds (at most 12 digits)\n");
        return 2;
      }
    } else {
      fprintf(stderr, "rdev: token mint: unknown option '%s'\n", a);
      return 2;
    }
    i++;
  }
  if (!key_file || (ttl < 0) == (expires < 0)) {
    fprintf(stderr, "rdev: token mint: --key-file and one of --ttl or --expires are required (rdev help)\n");
    return 2;
  }
  c.exp = expires >= 0 ? expires : (long long)time(NULL) + ttl;
  uint8_t key[RDEV_JOB_KEY_LEN];
  if (read_key_file(key_file, key)) return 2;
  char tok[RDEV_JOB_TOKEN_MAX], msg[160];
  int rc = rdev_job_token_mint(&c, key, tok, sizeof tok, msg, sizeof msg);
  OPENSSL_cleanse(key, sizeof key);
  if (rc) {
    fprintf(stderr, "rdev: token mint: %s\n", msg);
    return 2;
  }
  printf("%s\n", tok);
  return 0;
}

/* Prints "rdev: what: message (code NAME): detail" and returns 1. */
static int fail(const char *what, int rc) {
  const char *detail = rdev_session_last_error();
  fprintf(stderr, "rdev: %s: %s (%d %s)%s%s\n", what, rdev_strerror(rc), rc, rdev_status_name(rc),
          detail && *detail ? ": " : "", detail ? detail : "");
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_session(rdev_session_t **s) {
  int rc = rdev_session_open(g_target, NULL, s);
  if (rc) {
    char what[300];
    snprintf(what, sizeof what, "cannot open a session with %s", g_target);
    return fail(what, rc);
  }
  return 0;
}

static int cmd_devices(void) {
  rdev_session_t *s;
  if (open_session(&s)) return 1;
  int n = 0, rc = rdev_device_count(s, &n);
  if (rc) {
    fail("device count", rc);
    rdev_session_close(s);
    return 1;
  }
  printf("%-5s  %-24s  %12s  %12s\n", "INDEX", "NAME", "TOTAL MiB", "FREE MiB");
  int ret = 0;
  for (int i = 0; i < n; i++) {
    rdev_device_info_t d;
    rc = rdev_device_info(s, i, &d);
    if (rc) {
      ret = fail("device info", rc);
      break;
    }
    printf("%-5d  %-24s  %12.1f  %12.1f\n", i, d.name, (double)d.total_bytes / (1 << 20),
           (double)d.free_bytes / (1 << 20));
  }
  rdev_session_close(s);
  return ret;
}

static int cmd_info(void) {
  rdev_session_t *s;
  if (open_session(&s)) return 1;
  rdev_server_info_t info;
  int rc = rdev_server_info(s, &info);
  rdev_session_close(s);
  if (rc) return fail("server info", rc);
  printf("target:       %s\n", g_target);
  printf("version:      %s\n", info.version);
  printf("backend:      %s\n", info.backend);
  printf("identity:     %s\n", info.identity);
  printf("devices:      %d\n", info.device_count);
  printf("max chunk:    %u bytes\n", info.max_chunk);
  printf("transport:    %s\n", info.tls == RDEV_TLS_RESUMED ? "TLS (session resumed)"
                               : info.tls == RDEV_TLS_FULL  ? "TLS"
                                                            : "plaintext");
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmd_ping(int argc, char **argv) {
  long n = 10;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
      char *end;
      n = strtol(argv[++i], &end, 10);
      if (*end || n < 1 || n > 10000000) {
        fprintf(stderr, "rdev: ping: -n wants a count from 1 to 10000000\n");
        return 2;
      }
    } else {
      fprintf(stderr, "rdev: ping: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  rdev_session_t *s;
  if (open_session(&s)) return 1;
  double *us = malloc((size_t)n * sizeof *us);
  if (!us) {
    rdev_session_close(s);
    fprintf(stderr, "rdev: ping: out of memory\n");
    return 1;
  }
  int ret = 0;
  for (long i = 0; i < n; i++) {
    size_t fr, total;
    double t0 = now_s();
    int rc = rdev_mem_info(s, &fr, &total);
    us[i] = (now_s() - t0) * 1e6;
    if (rc) {
      ret = fail("ping (mem info)", rc);
      break;
    }
  }
  rdev_session_close(s);
  if (!ret) {
    qsort(us, (size_t)n, sizeof *us, cmp_double);
    double med = n % 2 ? us[n / 2] : (us[n / 2 - 1] + us[n / 2]) / 2;
    printf("%ld round trips to %s: min %.1f us, median %.1f us, max %.1f us\n", n, g_target, us[0], med, us[n - 1]);
  }
  free(us);
  return ret;
}

static int cmd_roundtrip(int argc, char **argv) {
  if (argc != 1) {
    fprintf(stderr, "rdev: roundtrip wants one FILE\n");
    return 2;
  }
  size_t len = 0;
  unsigned char *data = (unsigned char *)rdev_cli_read_file(argv[0], SIZE_MAX, &len);
  if (!data) {
    fprintf(stderr, "rdev: roundtrip: cannot read %s: %s\n", argv[0], strerror(errno));
    return 1;
  }
  if (len == 0) {
    fprintf(stderr, "rdev: roundtrip: %s is empty\n", argv[0]);
    free(data);
    return 1;
  }
  unsigned char *back = malloc(len);
  if (!back) {
    fprintf(stderr, "rdev: roundtrip: out of memory\n");
    free(data);
    return 1;
  }
  memset(back, 0, len);
  rdev_session_t *s;
  if (open_session(&s)) {
    free(data);
    free(back);
    return 1;
  }
  int ret = 0;
  void *dev = NULL;
  int rc = rdev_malloc(s, &dev, len, RDEV_MEM_MALLOC_HUGE_FIRST);
  if (rc) {
    ret = fail("device malloc", rc);
    goto out;
  }
  double t0 = now_s();
  rc = rdev_memcpy(s, dev, len, data, len, RDEV_MEMCPY_HOST_TO_DEVICE);
  double t1 = now_s();
  if (rc) {
    ret = fail("memcpy host to device", rc);
    goto out;
  }
  rc = rdev_memcpy(s, back, len, dev, len, RDEV_MEMCPY_DEVICE_TO_HOST);
  double t2 = now_s();
  if (rc) {
    ret = fail("memcpy device to host", rc);
    goto out;
  }
  printf("%s: %zu bytes\n", argv[0], len);
  printf("H2D: %zu bytes in %.3f ms, %.1f MB/s\n", len, (t1 - t0) * 1e3, (double)len / 1e6 / (t1 - t0));
  printf("D2H: %zu bytes in %.3f ms, %.1f MB/s\n", len, (t2 - t1) * 1e3, (double)len / 1e6 / (t2 - t1));
  if (memcmp(data, back, len) != 0) {
    size_t i = 0;
    while (data[i] == back[i]) i++;
    fprintf(stderr, "rdev: roundtrip: MISMATCH at byte %zu (sent 0x%02x, got 0x%02x)\n", i, data[i], back[i]);
    ret = 1;
  } else {
    printf("OK\n");
  }
out:
  if (dev) {
    rc = rdev_free(s, dev);
    if (rc && !ret) ret = fail("device free", rc);
  }
  rdev_session_close(s);
  free(data);
  free(back);
  return ret;
}

/* Whether path names an executable file; if so, copies it to out. */
static int found_at(const char *path, char *out, size_t len) {
  errno = 0;
  if (access(path, X_OK) != 0 || strlen(path) >= len) return 0;
  snprintf(out, len, "%s", path);
  return 1;
}

/* `rdev bench [OPTIONS]`: execs rdev_bench with OPTIONS (after --target ADDR
 * when rdev was given one). It is looked for at $RDEV_BENCH, else next to
 * this binary (an installed layout), else at ../tests/rdev_bench (the build
 * tree: build/client/rdev, build/tests/rdev_bench). Returns only on failure. */
static int cmd_bench(int argc, char **argv) {
  char path[PATH_MAX], exe[PATH_MAX], a[PATH_MAX + 32], b[PATH_MAX + 32];
  const char *env = getenv("RDEV_BENCH");
  if (env && *env) {
    if (!found_at(env, path, sizeof path)) {
      fprintf(stderr, "rdev: bench: cannot run RDEV_BENCH=%s: %s\n", env, strerror(errno ? errno : ENAMETOOLONG));
      return 1;
    }
  } else {
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
      fprintf(stderr,
              "rdev: bench: cannot find this binary (/proc/self/exe: %s); set RDEV_BENCH to the "
              "rdev_bench program\n",
              strerror(errno));
      return 1;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(a, sizeof a, "%s/rdev_bench", exe);
    snprintf(b, sizeof b, "%s/../tests/rdev_bench", exe);
    if (!found_at(a, path, sizeof path) && !found_at(b, path, sizeof path)) {
      fprintf(stderr,
              "rdev: bench: the benchmark is a program of its own, rdev_bench, and it is not at %s\n"
              "  nor at %s; build it (cmake --build BUILD --target rdev_bench) or set RDEV_BENCH to its path\n",
              a, b);
      return 1;
    }
  }
  char **av = calloc((size_t)argc + 4, sizeof *av);
  if (!av) {
    fprintf(stderr, "rdev: bench: out of memory\n");
    return 1;
  }
  int k = 0;
  av[k++] = path;
  if (g_target_set) {
    av[k++] = "--target";
    av[k++] = (char *)g_target;
  }
  for (int i = 0; i < argc; i++) av[k++] = argv[i];
  av[k] = NULL;
  fflush(NULL);
  execv(path, av);
  fprintf(stderr, "rdev: bench: cannot run %s: %s\n", path, strerror(errno));
  free(av);
  return 1;
}

int main(int argc, char **argv) {
  g_target = getenv("RDEV_TARGET");
  if (!g_target || !*g_target) g_target = DEFAULT_TARGET;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if ((strcmp(argv[i], "--target") == 0 || strcmp(argv[i], "-t") == 0) && i + 1 < argc) {
      g_target = argv[++i];
      g_target_set = 1;
    } else if (strncmp(argv[i], "--target=", 9) == 0) {
      g_target = argv[i] + 9;
      g_target_set = 1;
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "rdev: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (i >= argc) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[i++];
  int rest = argc - i;
  char **rargv = argv + i;
  if (strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "devices") == 0 && rest == 0) return cmd_devices();
  if (strcmp(cmd, "info") == 0 && rest == 0) return cmd_info();
  if (strcmp(cmd, "health") == 0) return cmd_health(rest, rargv);
  if (strcmp(cmd, "ping") == 0) return cmd_ping(rest, rargv);
  if (strcmp(cmd, "roundtrip") == 0) return cmd_roundtrip(rest, rargv);
  if (strcmp(cmd, "token") == 0 && rest == 0) return cmd_token();
  if (strcmp(cmd, "token") == 0 && rest == 1 && strcmp(rargv[0], "key") == 0) return cmd_token_key();
  if (strcmp(cmd, "token") == 0 && rest >= 1 && strcmp(rargv[0], "mint") == 0)
    return cmd_token_mint(rest - 1, rargv + 1);
  if (strcmp(cmd, "bench") == 0) return cmd_bench(rest, rargv);
  if (strcmp(cmd, "job") == 0) return rdev_cli_job(g_target, rest, rargv);
  fprintf(stderr, "rdev: unknown command or arguments: %s\n", cmd);
  usage(stderr);
  return 2;
}
