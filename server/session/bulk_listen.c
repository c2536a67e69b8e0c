/*
 * server/session/bulk_listen.c — where sessions' bulk connections come in
 * (rdev/wire.h, "The bulk connection"): the TCP port or unix socket
 * cfg.bulk_listen names, and the thread that accepts connections, reads
 * each one's hello (bounded: HELLO_MAX at once, HELLO_MS each) and hands
 * it to its session (srv_bulk_attach, bulk.c), or closes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rdev/clock.h"
#include "session.h"

/* Connections still saying hello: at most this many at once, each for at
 * most HELLO_MS. */
#define HELLO_MAX 64
#define HELLO_MS 2000

/* ---- the listener ------------------------------------------------------------------ */

struct srv_bulk {
  srv_t *srv;
  int lfd;
  int local;   /* a unix socket, at srv->bulk_path */
  int wake[2]; /* a byte on it stops the thread */
  pthread_t thread;
};

typedef struct {
  int fd;
  int64_t until;
  size_t got;
  char buf[RDEV_WIRE_BULK_HELLO];
} hello_t;

/* Reads what the connection sent of its hello: 1 while incomplete, 0 when
 * it is done (attached, or refused and closed), the entry free again. */
static int hello_read(struct srv_bulk *b, hello_t *h) {
  ssize_t n = recv(h->fd, h->buf + h->got, sizeof h->buf - h->got, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 1;
  if (n > 0) h->got += (size_t)n;
  if (n > 0 && h->got < sizeof h->buf) return 1;
  char key[RDEV_WIRE_SESSION_KEY_LEN + 1] = {0};
  int ok = h->got == sizeof h->buf && memcmp(h->buf, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN) == 0;
  uint32_t conn = 0;
  if (ok) {
    memcpy(key, h->buf + RDEV_WIRE_BULK_MAGIC_LEN, RDEV_WIRE_SESSION_KEY_LEN);
    conn =
        (uint32_t)rdev_wire_le_get((const uint8_t *)h->buf + RDEV_WIRE_BULK_MAGIC_LEN + RDEV_WIRE_SESSION_KEY_LEN, 4);
  }
  if (!ok || srv_bulk_attach(b->srv, h->fd, key, conn, b->local) != 0) {
    srv_log(SRV_LOG_INFO, "bulk connection refused: %s", ok ? "its key names no session that takes one" : "bad hello");
    close(h->fd);
  }
  h->fd = -1;
  return 0;
}

static void *listener_main(void *arg) {
  struct srv_bulk *b = arg;
  hello_t hs[HELLO_MAX];
  int nh = 0;
  for (;;) {
    struct pollfd p[2 + HELLO_MAX];
    p[0] = (struct pollfd){.fd = b->wake[0], .events = POLLIN};
    p[1] = (struct pollfd){.fd = nh < HELLO_MAX ? b->lfd : -1, .events = POLLIN};
    int64_t now = (int64_t)rdev_clock_now_ns(), wait_ms = -1;
    for (int i = 0; i < nh; i++) {
      p[2 + i] = (struct pollfd){.fd = hs[i].fd, .events = POLLIN};
      int64_t left = hs[i].until > now ? (hs[i].until - now) / 1000000 + 1 : 0; /* one overdue: at once */
      if (wait_ms < 0 || left < wait_ms) wait_ms = left;
    }
    if (poll(p, (nfds_t)(2 + nh), (int)wait_ms) < 0 && errno != EINTR) break;
    if (p[0].revents) break;
    now = (int64_t)rdev_clock_now_ns();
    int k = 0;
    for (int i = 0; i < nh; i++) { /* p[2 + i] is hs[i] as polled */
      int open = 1;
      if (p[2 + i].revents)
        open = hello_read(b, &hs[i]);
      else if (now >= hs[i].until) {
        close(hs[i].fd);
        open = 0;
      }
      if (open) hs[k++] = hs[i];
    }
    nh = k;
    if (p[1].revents & POLLIN) {
      int fd = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd >= 0) hs[nh++] = (hello_t){.fd = fd, .until = now + (int64_t)HELLO_MS * 1000000};
    }
  }
  for (int i = 0; i < nh; i++) close(hs[i].fd);
  return NULL;
}

/* Where bulk connections attach, from the config: a unix socket's path
 * into path (1), or a TCP host and port into host/port (0); -1 when there
 * is none (off, TLS, an abstract socket, a path too long). */
static int bulk_addr(const srv_config_t *cfg, char *host, size_t hlen, char *port, size_t plen, char *path,
                     size_t pathlen) {
  const char *a = cfg->bulk_listen;
  int autom = !strcmp(a, "auto");
  path[0] = '\0';
  if (!strcmp(a, "off") || cfg->tls_cert[0]) return -1;
  if (autom) a = cfg->listen;
  if (!strncmp(a, "unix-abstract:", 14)) return -1;
  if (!strncmp(a, "unix:", 5)) { /* auto: beside the session socket */
    int n = snprintf(path, pathlen, "%s%s", a + 5, autom ? ".bulk" : "");
    return n > 0 && (size_t)n < pathlen ? 1 : -1;
  }
  if (!strncmp(a, "ipv4:", 5) || !strncmp(a, "ipv6:", 5)) a += 5;
  const char *colon = strrchr(a, ':');
  if (!colon) return -1;
  size_t n = (size_t)(colon - a);
  if (n >= 2 && a[0] == '[' && a[n - 1] == ']') a++, n -= 2; /* [v6]:port */
  if (n >= hlen) return -1;
  memcpy(host, a, n);
  host[n] = '\0';
  snprintf(port, plen, "%s", autom ? "0" : colon + 1);
  return 0;
}

static int listen_tcp(const char *host, const char *port, int *bound) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res;
  if (getaddrinfo(*host ? host : NULL, port, &hints, &res) != 0) return -1;
  int fd = -1;
  for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (fd >= 0 && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
  return fd;
}

/* A listening unix socket at path (a stale socket file there replaced). */
static int listen_unix(const char *path) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) return -1;
  memcpy(a.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int srv_bulk_start(srv_t *srv) {
  char host[256], port[16], where[300];
  int kind = bulk_addr(&srv->cfg, host, sizeof host, port, sizeof port, srv->bulk_path, sizeof srv->bulk_path);
  int given = strcmp(srv->cfg.bulk_listen, "auto") != 0 && strcmp(srv->cfg.bulk_listen, "off") != 0;
  if (kind < 0) {
    srv->bulk_path[0] = '\0';
    if (given) srv_log(SRV_LOG_WARN, "bulk-listen %s: not with TLS; Reads go in-band", srv->cfg.bulk_listen);
    return 0;
  }
  struct srv_bulk *b = calloc(1, sizeof *b);
  if (!b) return -1;
  b->srv = srv;
  b->local = kind == 1;
  b->wake[0] = b->wake[1] = -1;
  b->lfd = b->local ? listen_unix(srv->bulk_path) : listen_tcp(host, port, &srv->bulk_port);
  if (b->local)
    snprintf(where, sizeof where, "unix:%s", srv->bulk_path);
  else
    snprintf(where, sizeof where, "%s:%s", *host ? host : "*", port);
  if (b->lfd < 0 || pipe2(b->wake, O_CLOEXEC) != 0 || pthread_create(&b->thread, NULL, listener_main, b) != 0) {
    srv_log(given ? SRV_LOG_ERROR : SRV_LOG_WARN, "cannot listen for bulk connections on %s%s", where,
            given ? "" : "; Reads go in-band");
    if (b->lfd >= 0) close(b->lfd);
    if (b->wake[0] >= 0) close(b->wake[0]), close(b->wake[1]);
    if (b->local && b->lfd >= 0) unlink(srv->bulk_path);
    free(b);
    srv->bulk_port = 0;
    srv->bulk_path[0] = '\0';
    return given ? -1 : 0;
  }
  srv->bulk = b;
  if (b->local) {
    srv_log(SRV_LOG_INFO, "bulk connections on %s", where);
  } else {
    snprintf(srv->bulk_port_str, sizeof srv->bulk_port_str, "%d", srv->bulk_port);
    srv_log(SRV_LOG_INFO, "bulk connections on %s port %d", *host ? host : "*", srv->bulk_port);
  }
  return 0;
}

void srv_bulk_stop(srv_t *srv) {
  struct srv_bulk *b = srv->bulk;
  if (!b) return;
  if (write(b->wake[1], "", 1) != 1) srv_log(SRV_LOG_ERROR, "cannot stop the bulk listener");
  pthread_join(b->thread, NULL);
  close(b->lfd);
  close(b->wake[0]);
  close(b->wake[1]);
  if (b->local) unlink(srv->bulk_path);
  free(b);
  srv->bulk = NULL;
  /* bulk_port and bulk_path stay: a session the completion-queue threads
   * open while rdevd drains still reads them (its client then finds no
   * listener there and moves its bytes in-band) */
}
