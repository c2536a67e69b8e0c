/*
 * server/main.c — rdevd's entry point: command-line flags (config.c reads
 * them and the config file), the open-mode address check, and signals.
 * SIGTERM and SIGINT drain the server and exit 0; the address actually bound
 * is printed on stdout as "rdevd listening on ADDR" so that scripts and tests
 * can use --listen 127.0.0.1:0, and the metrics port, with --metrics-listen,
 * as "rdevd metrics on port PORT".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "notify.h"
#include "srv.h"

/* Whether a resolved address is a loopback one (127/8, ::1, or 127/8
 * mapped into IPv6). */
static int is_loopback(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family != AF_INET6) return 0;
  const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

/* Whether one "host:port" ("[v6]:port") resolves only to loopback
 * addresses (numeric: no name lookup); else 0 with why. */
static int host_is_local(const char *hostport, int numeric, char *why, size_t len) {
  char host[256];
  const char *end;
  int bracketed = *hostport == '[';
  if (bracketed) {
    hostport++;
    end = strchr(hostport, ']');
  } else {
    end = strrchr(hostport, ':');
  }
  if (!end) end = hostport + strlen(hostport);
  if ((size_t)(end - hostport) >= sizeof host) return snprintf(why, len, "address too long"), 0;
  memcpy(host, hostport, (size_t)(end - hostport));
  host[end - hostport] = '\0';
  if (!*host) return snprintf(why, len, "no host: every interface"), 0;
  if (!bracketed && strchr(host, ':')) /* gRPC would read it as a host without a port */
    return snprintf(why, len, "an IPv6 address needs brackets: [%s]:port", host), 0;
  struct addrinfo hints = {.ai_family = AF_UNSPEC,
                           .ai_socktype = SOCK_STREAM,
                           .ai_flags = numeric ? AI_NUMERICHOST : 0},
                  *res = NULL;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc) return snprintf(why, len, "%s does not resolve: %s", host, gai_strerror(rc)), 0;
  int local = 1;
  for (struct addrinfo *a = res; a && local; a = a->ai_next) local = is_loopback(a->ai_addr);
  freeaddrinfo(res);
  if (!local) snprintf(why, len, "%s resolves to an address that is not loopback", host);
  return local;
}

/* Open mode (no tenants file) is for loopback and unix sockets only: the
 * listen address qualifies when every address it names, after resolution,
 * is a loopback one (gRPC's ipv4:/ipv6: lists each address; dns: and a
 * plain host:port are looked up). */
static int listen_is_local(const char *addr, char *why, size_t len) {
  if (!strncmp(addr, "unix:", 5) || !strncmp(addr, "unix-abstract:", 14)) return 1;
  int numeric = !strncmp(addr, "ipv4:", 5) || !strncmp(addr, "ipv6:", 5);
  if (numeric)
    addr += 5;
  else if (!strncmp(addr, "dns:///", 7))
    addr += 7;
  else if (!strncmp(addr, "dns:", 4))
    addr += 4;
  char list[sizeof((srv_config_t *)0)->listen];
  if (strlen(addr) >= sizeof list) return snprintf(why, len, "address too long"), 0;
  memcpy(list, addr, strlen(addr) + 1);
  char *save = NULL;
  for (char *one = strtok_r(list, ",", &save); one; one = strtok_r(NULL, ",", &save))
    if (!host_is_local(one, numeric, why, len)) return 0;
  return 1;
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: rdevd [options]\n"
          "  --listen ADDR        host:port or unix:/path (default 127.0.0.1:50051; port 0 picks one)\n"
          "  --bulk-listen ADDR   where sessions attach their bulk connection for large copies: auto (the\n"
          "                       default: the listen host, a port the system picks), off, or\n"
          "                       host:port, or unix:/path. None with TLS. Beside a unix --listen,\n"
          "                       auto is PATH.bulk, where local clients also share host memory\n"
          "  --config FILE        read settings from FILE (key = value, same names as the flags)\n"
          "  --backend NAME       device backend: sim (the default, a CPU-simulated device) or acl\n"
          "                       (Ascend NPUs through the CANN runtime, loaded at start-up)\n"
          "  --sim-devices N      sim: number of devices (default 2)\n"
          "  --sim-mem SIZE       sim: memory per device (default 1G)\n"
          "  --acl-lib PATH       acl: the CANN runtime library (default libascendcl.so or\n"
          "                       libacl_rt.so in $ASCEND_HOME_PATH/lib64, else the loader's path)\n"
          "  --acl-kernels DIR    acl: kernel binaries holding the built-in kernels (built from\n"
          "                       runtime/acl/kernels with CANN); without it acl offers none\n"
          "  --acl-opapi PATH     acl: CANN's operator library, a directory holding libnnopbase.so and\n"
          "                       libopapi.so, or one library (default: beside the CANN runtime, then\n"
          "                       $ASCEND_HOME_PATH/lib64, the loader's path; none: no operators)\n"
          "  --allow-uploaded-kernels  acl: take kernel binaries from clients. Off by default: on\n"
          "                       an NPU a kernel can reach any device memory of the server's\n"
          "                       context, other sessions' included\n"
          "  --sim-slots N        kernels/copies a device runs at once (sim and acl); contended slots go\n"
          "                       to tenants by weight (default 4; 0 = no limit, no scheduling)\n"
          "  --sim-host-view on|off  sim: device memory is host-mapped (on, the default), or not,\n"
          "                       as on a real NPU (off; default from $RDEV_SIM_HOST_VIEW)\n"
          "  --max-inflight SIZE  per session: bytes held on the server before it stops reading\n"
          "                       the session's requests (default 32M)\n"
          "  --threads N          completion-queue threads, one queue each (default 1: gRPC's\n"
          "                       poller hands events between threads, and each hand-off is a\n"
          "                       wake-up; raise it for many busy sessions on many cores)\n"
          "  --drain-ms N         on SIGTERM/SIGINT, time sessions get to finish (default 5000)\n"
          "  --resume-ms N        how long a session whose connection broke waits for its\n"
          "                       client to resume it (default 60000; 0: it ends at once)\n"
          "  --log-level LEVEL    error, warn, info or debug (default info)\n"
          "  --server-name NAME   the name job tokens must list for this server (default: the\n"
          "                       host's name)\n"
          "  --log-format F       text (the default), logfmt or json: every log and audit line\n"
          "  --metrics-listen ADDR  serve Prometheus metrics at http://ADDR/metrics: PORT or :PORT\n"
          "                       (loopback), HOST:PORT, [V6]:PORT; port 0 picks one. Off by default\n"
          "  --tenants FILE       tenants, tokens and quotas (see deploy/tenants.example); SIGHUP\n"
          "                       reloads it. Without it rdevd serves anyone, on loopback or a\n"
          "                       unix socket only...\n"
          "  --allow-open         ...unless this is given\n"
          "  --tls-cert FILE      serve TLS with this certificate chain (PEM)...\n"
          "  --tls-key FILE       ...and its private key (PEM)\n"
          "  --tls-client-ca FILE require client certificates signed by this CA (mutual TLS)\n"
          "  --job-dir DIR        keep detached jobs (rdev job): their records and kept outputs live\n"
          "                       in DIR (made if missing); without it job calls are refused\n"
          "  --job-keep SECONDS   how long kept outputs stay (default 86400)\n"
          "  --job-runners N      jobs running at once, all tenants together (default 4)\n"
          "  --job-timeout SECONDS  a job's run time when its spec sets none (default 3600)\n"
          "  --job-retries N      tries after the first per transfer when a spec sets none (default 3)\n"
          "  --job-allow PREFIXES without --tenants: URL prefixes jobs may reach, separated by\n"
          "                       spaces (with tenants: each tenant's `allow` lines)\n"
          "  --job-resolve H:P:A  tests only: job transfers resolve host H port P to address A\n");
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
    if (!strcmp(a, "--allow-uploaded-kernels")) {
      srv.cfg.allow_uploaded = 1;
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
  srv_log_format = srv.cfg.log_format;
  char why[320] = "";
  if (!srv.cfg.tenants[0] && !srv.cfg.allow_open && !listen_is_local(srv.cfg.listen, why, sizeof why)) {
    fprintf(stderr,
            "rdevd: refusing to serve %s without --tenants (%s): anyone could use the devices.\n"
            "       Give --tenants FILE, listen on loopback or a unix socket, or pass --allow-open.\n",
            srv.cfg.listen, why);
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
  if (srv.metrics_http) printf("rdevd metrics on port %d\n", srv.metrics_port);
  fflush(stdout);
  srv_log(SRV_LOG_INFO, "serving %s backend, %d device(s); max-inflight %zu bytes per session", srv.cfg.backend,
          srv.cfg.sim_devices, srv.cfg.max_inflight);
  srv_notify("READY=1");

  for (;;) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGHUP) {
      char err[512];
      srv_notify_reloading();
      if (!srv.cfg.tenants[0])
        srv_log(SRV_LOG_INFO, "SIGHUP: no tenants file to reload");
      else if (srv_tenants_reload(&srv, err, sizeof err) == 0)
        srv_sessions_end_removed(&srv), srv_jobs_end_removed(&srv);
      srv_notify("READY=1");
      continue;
    }
    srv_log(SRV_LOG_INFO, "%s: draining (up to %d ms)", sig == SIGTERM ? "SIGTERM" : "SIGINT", srv.cfg.drain_ms);
    break;
  }
  srv_notify("STOPPING=1");
  srv_stop(&srv);
  srv_log(SRV_LOG_INFO, "stopped");
  return 0;
}
