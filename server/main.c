/*
 * server/main.c — rdevd's entry point: command-line flags and the config
 * file (the same keys, "key = value" per line), logging, and signals.
 * SIGTERM and SIGINT drain the server and exit 0; the address actually bound
 * is printed on stdout as "rdevd listening on ADDR" so that scripts and tests
 * can use --listen 127.0.0.1:0.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <malloc.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "srv.h"

int srv_log_level = SRV_LOG_INFO;

void srv_log(int level, const char *fmt, ...) {
  if (level > srv_log_level) return;
  static const char *names[] = {"error", "warn", "info", "debug"};
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char line[1024];
  int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ rdevd %s: ", tm.tm_year + 1900,
                   tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
                   names[level]);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s\n", line);
}

void srv_config_defaults(srv_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1:50051");
  snprintf(cfg->backend, sizeof cfg->backend, "sim");
  cfg->sim_devices = 2;
  cfg->sim_mem_bytes = (size_t)1 << 30;
  cfg->sim_slots = 4;
  cfg->max_inflight = (size_t)32 << 20;
  cfg->threads = 1;
  cfg->drain_ms = 5000;
  cfg->log_level = SRV_LOG_INFO;
}

int srv_parse_size(const char *v, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno || end == v || *v == '-') return -1;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; end++; break;
    case 'M': shift = 20; end++; break;
    case 'G': shift = 30; end++; break;
    case '\0': break;
    default: return -1;
  }
  if (toupper((unsigned char)*end) == 'B' || toupper((unsigned char)*end) == 'I') end++;
  if (*end || (shift && n > (~0ULL >> shift))) return -1;
  *out = (size_t)(n << shift);
  return 0;
}

static int parse_int(const char *v, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi) return -1;
  *out = (int)n;
  return 0;
}

int srv_config_set(srv_config_t *cfg, const char *key, const char *v, const char **err) {
  *err = NULL;
  if (!strcmp(key, "listen")) {
    if (!*v || strlen(v) >= sizeof cfg->listen) return *err = "listen: empty or too long", -1;
    snprintf(cfg->listen, sizeof cfg->listen, "%s", v);
  } else if (!strcmp(key, "backend")) {
    if (!*v || strlen(v) >= sizeof cfg->backend) return *err = "backend: empty or too long", -1;
    snprintf(cfg->backend, sizeof cfg->backend, "%s", v);
  } else if (!strcmp(key, "sim-devices")) {
    if (parse_int(v, 1, 64, &cfg->sim_devices)) return *err = "sim-devices: 1..64", -1;
  } else if (!strcmp(key, "sim-mem")) {
    if (srv_parse_size(v, &cfg->sim_mem_bytes) || cfg->sim_mem_bytes < 4096)
      return *err = "sim-mem: a size such as 1G, 256M (at least 4K)", -1;
  } else if (!strcmp(key, "sim-slots")) {
    if (parse_int(v, 0, 1024, &cfg->sim_slots)) return *err = "sim-slots: 0..1024", -1;
  } else if (!strcmp(key, "max-inflight")) {
    if (srv_parse_size(v, &cfg->max_inflight) || cfg->max_inflight < 4096)
      return *err = "max-inflight: a size such as 64M (at least 4K)", -1;
  } else if (!strcmp(key, "threads")) {
    if (parse_int(v, 1, 64, &cfg->threads)) return *err = "threads: 1..64", -1;
  } else if (!strcmp(key, "drain-ms")) {
    if (parse_int(v, 0, 3600000, &cfg->drain_ms)) return *err = "drain-ms: 0..3600000", -1;
  } else if (!strcmp(key, "log-level")) {
    static const char *lv[] = {"error", "warn", "info", "debug"};
    int i;
    for (i = 0; i < 4 && strcmp(v, lv[i]); i++) {
    }
    if (i == 4) return *err = "log-level: error, warn, info or debug", -1;
    cfg->log_level = i;
  } else if (!strcmp(key, "tenants") || !strcmp(key, "tls-cert") || !strcmp(key, "tls-key") ||
             !strcmp(key, "tls-client-ca")) {
    char *dst = !strcmp(key, "tenants") ? cfg->tenants
                : !strcmp(key, "tls-cert") ? cfg->tls_cert
                : !strcmp(key, "tls-key") ? cfg->tls_key
                                          : cfg->tls_client_ca;
    if (!*v || strlen(v) >= sizeof cfg->tenants) return *err = "a path, not empty, under 256 bytes", -1;
    snprintf(dst, sizeof cfg->tenants, "%s", v);
  } else if (!strcmp(key, "allow-open")) {
    if (strcmp(v, "yes") && strcmp(v, "no")) return *err = "allow-open: yes or no", -1;
    cfg->allow_open = !strcmp(v, "yes");
  } else {
    return *err = "unknown setting", -1;
  }
  return 0;
}

/* Open mode (no tenants file) is for loopback and unix sockets only. */
static int listen_is_local(const char *addr) {
  if (!strncmp(addr, "unix:", 5) || !strncmp(addr, "unix-abstract:", 14)) return 1;
  if (!strncmp(addr, "ipv4:", 5)) addr += 5;
  if (!strncmp(addr, "ipv6:", 5)) addr += 5;
  return !strncmp(addr, "127.", 4) || !strncmp(addr, "localhost:", 10) || !strncmp(addr, "[::1]:", 6);
}

char *srv_trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

int srv_config_load(srv_config_t *cfg, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  char line[1024];
  int lineno = 0, rc = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *s = srv_trim(line);
    if (!*s) continue;
    char *eq = strchr(s, '=');
    const char *why;
    if (!eq) {
      snprintf(err, errlen, "%s:%d: expected key = value", path, lineno);
      rc = -1;
      break;
    }
    *eq = '\0';
    if (srv_config_set(cfg, srv_trim(s), srv_trim(eq + 1), &why)) {
      snprintf(err, errlen, "%s:%d: %s: %s", path, lineno, srv_trim(s), why);
      rc = -1;
      break;
    }
  }
  fclose(f);
  return rc;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: rdevd [options]\n"
          "  --listen ADDR        host:port or unix:/path (default 127.0.0.1:50051; port 0 picks one)\n"
          "  --config FILE        read settings from FILE (key = value, same names as the flags)\n"
          "  --backend NAME       device backend (default sim)\n"
          "  --sim-devices N      sim: number of devices (default 2)\n"
          "  --sim-mem SIZE       sim: memory per device (default 1G)\n"
          "  --sim-slots N        sim: kernels/copies a device runs at once; contended slots go\n"
          "                       to tenants by weight (default 4; 0 = no limit, no scheduling)\n"
          "  --max-inflight SIZE  per session: bytes held on the server before it stops reading\n"
          "                       the session's requests (default 32M)\n"
          "  --threads N          completion-queue threads, one queue each (default 1: gRPC's\n"
          "                       poller hands events between threads, and each hand-off is a\n"
          "                       wake-up; raise it for many busy sessions on many cores)\n"
          "  --drain-ms N         on SIGTERM/SIGINT, time sessions get to finish (default 5000)\n"
          "  --log-level LEVEL    error, warn, info or debug (default info)\n"
          "  --tenants FILE       tenants, tokens and quotas (see deploy/tenants.example); SIGHUP\n"
          "                       reloads it. Without it rdevd serves anyone, on loopback or a\n"
          "                       unix socket only...\n"
          "  --allow-open         ...unless this is given\n"
          "  --tls-cert FILE      serve TLS with this certificate chain (PEM)...\n"
          "  --tls-key FILE       ...and its private key (PEM)\n"
          "  --tls-client-ca FILE require client certificates signed by this CA (mutual TLS)\n");
}

int main(int argc, char **argv) {
  srv_t srv;
  memset(&srv, 0, sizeof srv);
  srv_config_defaults(&srv.cfg);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--allow-open")) {
      srv.cfg.allow_open = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0 || i + 1 >= argc) {
      fprintf(stderr, "rdevd: bad argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
    const char *key = a + 2, *val = argv[++i], *why;
    if (!strcmp(key, "config")) {
      char err[512];
      if (srv_config_load(&srv.cfg, val, err, sizeof err)) {
        fprintf(stderr, "rdevd: %s\n", err);
        return 2;
      }
    } else if (srv_config_set(&srv.cfg, key, val, &why)) {
      fprintf(stderr, "rdevd: --%s %s: %s\n", key, val, why);
      return 2;
    }
  }
  srv_log_level = srv.cfg.log_level;
  if (!srv.cfg.tenants[0] && !srv.cfg.allow_open && !listen_is_local(srv.cfg.listen)) {
    fprintf(stderr, "rdevd: refusing to serve %s without --tenants: anyone could use the devices.\n"
                    "       Give --tenants FILE, listen on loopback or a unix socket, or pass --allow-open.\n",
            srv.cfg.listen);
    return 2;
  }
  if (!srv.cfg.tls_cert[0] != !srv.cfg.tls_key[0] || (srv.cfg.tls_client_ca[0] && !srv.cfg.tls_cert[0])) {
    fprintf(stderr, "rdevd: --tls-cert and --tls-key go together, and --tls-client-ca needs them\n");
    return 2;
  }

  /* Signals are taken by sigwait below; every thread inherits this mask. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* Chunk-sized blocks from the heap, kept when freed: glibc would otherwise
   * map and unmap each one, and page faults and TLB shootdowns cost more than
   * the copies (profiled with rdev bench). */
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);

  if (srv_start(&srv) != 0) return 1;
  if (!strncmp(srv.cfg.listen, "unix:", 5)) {
    printf("rdevd listening on %s\n", srv.cfg.listen);
  } else {
    const char *colon = strrchr(srv.cfg.listen, ':');
    int hostlen = colon ? (int)(colon - srv.cfg.listen) : (int)strlen(srv.cfg.listen);
    printf("rdevd listening on %.*s:%d\n", hostlen, srv.cfg.listen, srv.port);
  }
  fflush(stdout);
  srv_log(SRV_LOG_INFO, "serving %s backend, %d device(s); max-inflight %zu bytes per session",
          srv.cfg.backend, srv.cfg.sim_devices, srv.cfg.max_inflight);

  for (;;) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGHUP) {
      char err[512];
      if (!srv.cfg.tenants[0])
        srv_log(SRV_LOG_INFO, "SIGHUP: no tenants file to reload");
      else if (srv_tenants_reload(&srv, err, sizeof err) == 0)
        srv_sessions_end_removed(&srv);
      continue;
    }
    srv_log(SRV_LOG_INFO, "%s: draining (up to %d ms)", sig == SIGTERM ? "SIGTERM" : "SIGINT",
            srv.cfg.drain_ms);
    break;
  }
  srv_stop(&srv);
  srv_log(SRV_LOG_INFO, "stopped");
  return 0;
}
