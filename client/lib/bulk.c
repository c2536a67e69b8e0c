/*
 * client/lib/bulk.c — the session's bulk connection (rdev/wire.h, "The bulk
 * connection"): a plain TCP connection beside the gRPC call on which the
 * server sends large Reads' bytes, read by a thread of this file straight
 * into each Read's destination (pending.c hands it over and completes the
 * Read when its in-band reply came too). No gRPC framing and no message
 * buffers stand between the socket and the caller's memory, so a D2H copy
 * runs at the speed of the connection, into memory the process already
 * has. Owns s->bulk; calls pending.c and nothing above it.
 *
 * Connecting is best effort, in the background: until the server answered
 * the hello, and for good after the connection failed, Reads go in-band.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grpc/support/alloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

#define CONNECT_MS 2000 /* to connect and be answered */
#define STEP_MS 50      /* how often a wait looks at stop */

/* Waits until fd is ready for events, or the time ran out, or the session
 * closes: true when ready. */
static bool wait_fd(rdev_session_t *s, int fd, short events, int ms) {
  for (int left = ms; left > 0 && !atomic_load(&s->bulk.stop); left -= STEP_MS) {
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, left < STEP_MS ? left : STEP_MS);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
  return false;
}

/* Reads exactly len bytes into buf (blocking); false on EOF or error. */
static bool recv_all(int fd, void *buf, size_t len) {
  uint8_t *p = buf;
  while (len) {
    ssize_t n = recv(fd, p, len, MSG_WAITALL);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
    } else if (n == 0 || errno != EINTR) {
      return false;
    }
  }
  return true;
}

/* Reads and drops len bytes (a frame nothing waits for). */
static bool drain(int fd, uint64_t len) {
  uint8_t scratch[16384];
  while (len) {
    size_t n = len < sizeof scratch ? (size_t)len : sizeof scratch;
    if (!recv_all(fd, scratch, n)) return false;
    len -= n;
  }
  return true;
}

/* Connects to the server's bulk port and attaches: the connected socket
 * (blocking), published in s->bulk.fd, or -1. */
static int attach(rdev_session_t *s) {
  char port[16];
  snprintf(port, sizeof port, "%d", s->bulk.port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res;
  if (getaddrinfo(s->bulk.host, port, &hints, &res) != 0) return -1;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    pthread_mutex_lock(&s->mu);
    if (atomic_load(&s->bulk.stop)) {
      close(fd);
      fd = -1;
    } else {
      s->bulk.fd = fd;
    }
    pthread_mutex_unlock(&s->mu);
  }
  bool ok = fd >= 0;
  if (ok && connect(fd, res->ai_addr, res->ai_addrlen) != 0)
    ok = errno == EINPROGRESS && wait_fd(s, fd, POLLOUT, CONNECT_MS);
  freeaddrinfo(res);
  int err = 0;
  socklen_t el = sizeof err;
  ok = ok && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0;
  char hello[RDEV_WIRE_BULK_HELLO], answer[RDEV_WIRE_BULK_MAGIC_LEN];
  memcpy(hello, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN);
  memcpy(hello + RDEV_WIRE_BULK_MAGIC_LEN, s->host.key, RDEV_WIRE_SESSION_KEY_LEN);
  ok = ok && send(fd, hello, sizeof hello, MSG_NOSIGNAL) == (ssize_t)sizeof hello;
  int fl = ok ? fcntl(fd, F_GETFL) : -1;
  ok = ok && fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
  ok = ok && wait_fd(s, fd, POLLIN, CONNECT_MS) && recv_all(fd, answer, sizeof answer) &&
       memcmp(answer, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN) == 0;
  return ok ? fd : -1;
}

static void *reader_main(void *arg) {
  rdev_session_t *s = arg;
  int fd = attach(s);
  if (fd >= 0) {
    atomic_store(&s->bulk.ready, true);
    uint8_t hdr[RDEV_WIRE_BULK_HEADER];
    while (recv_all(fd, hdr, sizeof hdr)) {
      uint64_t seq = 0, len = 0;
      for (int i = 7; i >= 0; i--) {
        seq = seq << 8 | hdr[i];
        len = len << 8 | hdr[8 + i];
      }
      void *dst = cl_pending_bulk_begin(s, seq, len);
      bool ok = dst ? recv_all(fd, dst, (size_t)len) : drain(fd, len);
      if (dst) cl_pending_bulk_end(s, seq, ok);
      if (!ok) break;
    }
    atomic_store(&s->bulk.ready, false);
  }
  cl_pending_bulk_lost(s);
  pthread_mutex_lock(&s->mu);
  if (s->bulk.fd >= 0) close(s->bulk.fd);
  s->bulk.fd = -1;
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* The host of a call's peer ("ipv4:10.0.0.1:50051", "ipv6:[::1]:50051")
 * into host; false for any other kind (a unix socket). */
static bool peer_host(const char *peer, char *host, size_t len) {
  if (strncmp(peer, "ipv4:", 5) && strncmp(peer, "ipv6:", 5)) return false;
  const char *a = peer + 5, *colon = strrchr(a, ':');
  if (!colon) return false;
  size_t n = (size_t)(colon - a);
  if (n >= 2 && a[0] == '[' && a[n - 1] == ']') a++, n -= 2;
  if (n == 0 || n >= len) return false;
  memcpy(host, a, n);
  host[n] = '\0';
  return true;
}

void cl_bulk_init(rdev_session_t *s) { s->bulk.fd = -1; }

void cl_bulk_start(rdev_session_t *s, int port) {
  const char *env = getenv("RDEV_BULK");
  if (port <= 0 || port > 65535 || (env && !strcmp(env, "off"))) return;
  char *peer = grpc_call_get_peer(s->call);
  bool tcp = peer && peer_host(peer, s->bulk.host, sizeof s->bulk.host);
  gpr_free(peer);
  if (!tcp) return;
  s->bulk.port = port;
  s->bulk.started = pthread_create(&s->bulk.thread, NULL, reader_main, s) == 0;
}

bool cl_bulk_ready(rdev_session_t *s) { return atomic_load(&s->bulk.ready); }

int rdev_session_bulk(rdev_session_t *s) { return s && cl_bulk_ready(s); }

void cl_bulk_abort_locked(rdev_session_t *s) {
  atomic_store(&s->bulk.ready, false);
  if (s->bulk.fd >= 0) shutdown(s->bulk.fd, SHUT_RDWR);
}

void cl_bulk_stop(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->bulk.stop, true);
  cl_bulk_abort_locked(s);
  pthread_mutex_unlock(&s->mu);
  if (s->bulk.started) pthread_join(s->bulk.thread, NULL);
  s->bulk.started = false;
}
