/*
 * server/metrics/metrics_http.c — the metrics endpoint: `--metrics-listen`
 * parsed ("PORT" and ":PORT" are loopback, "HOST:PORT", "[V6]:PORT"),
 * bound with libmicrohttpd in its own polling thread, answering GET (and
 * HEAD) /metrics with metrics.c's exposition; anything else is 404, or
 * 405 for another method. Scrapes never touch the data plane's locks
 * beyond the tenants' own (metrics.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "metrics/metrics.h"

/* addr into a socket address: 0, or -1 with why. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, char *why, size_t len) {
  char host[256] = "127.0.0.1";
  const char *port = addr;
  if (addr[0] == '[') {
    const char *end = strchr(addr, ']');
    if (!end || end[1] != ':' || (size_t)(end - addr - 1) >= sizeof host)
      return snprintf(why, len, "expected [V6]:PORT"), -1;
    snprintf(host, sizeof host, "%.*s", (int)(end - addr - 1), addr + 1);
    port = end + 2;
  } else if (strchr(addr, ':')) {
    const char *colon = strrchr(addr, ':');
    if ((size_t)(colon - addr) >= sizeof host) return snprintf(why, len, "host too long"), -1;
    if (colon > addr) snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    port = colon + 1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535) return snprintf(why, len, "bad port '%s'", port), -1;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc) return snprintf(why, len, "%s: %s", host, gai_strerror(rc)), -1;
  memset(ss, 0, sizeof *ss);
  memcpy(ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_len, void **state) {
  srv_t *srv = cls;
  (void)version, (void)upload, (void)upload_len, (void)state;
  int get = !strcmp(method, "GET"), head = !strcmp(method, "HEAD");
  const char *msg = NULL;
  unsigned code = MHD_HTTP_OK;
  char *text = NULL;
  size_t len = 0;
  if (strcmp(url, "/metrics") != 0)
    code = MHD_HTTP_NOT_FOUND, msg = "not found: the metrics are at /metrics\n";
  else if (!get && !head)
    code = MHD_HTTP_METHOD_NOT_ALLOWED, msg = "only GET\n";
  else if (srv_metrics_render(srv, &text, &len) != 0)
    code = MHD_HTTP_INTERNAL_SERVER_ERROR, msg = "out of memory\n";
  struct MHD_Response *r = text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE)
                                : MHD_create_response_from_buffer(strlen(msg), (void *)msg, MHD_RESPMEM_PERSISTENT);
  if (!r) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                          text ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8");
  if (code == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && line[n - 1] == '\n') line[--n] = '\0';
  srv_log(SRV_LOG_WARN, "metrics: %s", line);
}

int srv_metrics_start(srv_t *srv) {
  if (!srv->cfg.metrics_listen[0]) return 0;
  struct sockaddr_storage ss;
  char why[300];
  if (parse_addr(srv->cfg.metrics_listen, &ss, why, sizeof why) != 0) {
    srv_log(SRV_LOG_ERROR, "metrics-listen %s: %s", srv->cfg.metrics_listen, why);
    return -1;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_AUTO;
  if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  struct MHD_Daemon *d =
      MHD_start_daemon(flags, 0, NULL, NULL, answer, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
                       MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 64u,
                       MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
  if (!d) {
    srv_log(SRV_LOG_ERROR, "cannot serve metrics on %s", srv->cfg.metrics_listen);
    return -1;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  srv->metrics_port = info ? info->port : 0;
  srv->metrics_http = d;
  srv_log(SRV_LOG_INFO, "metrics on %s port %d (GET /metrics)", srv->cfg.metrics_listen, srv->metrics_port);
  return 0;
}

void srv_metrics_stop(srv_t *srv) {
  if (!srv->metrics_http) return;
  MHD_stop_daemon(srv->metrics_http);
  srv->metrics_http = NULL;
}
