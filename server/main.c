/*
 * server/main.c — rdevd's entry point: command-line flags (config.c reads
 * them and the config file), the open-mode address check, and signals.
 * SIGTERM and SIGINT drain the server and exit 0; the address actually bound
 * is printed on stdout as "rdevd listening on ADDR" so that scripts and tests
 * can use --listen 127.0.0.1:0.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

/* Open mode (no tenants file) is for loopback and unix sockets only. */
static int listen_is_local(const char *addr) {
  if (!strncmp(addr, "unix:", 5) || !strncmp(addr, "unix-abstract:", 14)) return 1;
  if (!strncmp(addr, "ipv4:", 5)) addr += 5;
  if (!strncmp(addr, "ipv6:", 5)) addr += 5;
  return !strncmp(addr, "127.", 4) || !strncmp(addr, "localhost:", 10) || !strncmp(addr, "[::1]:", 6);
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
