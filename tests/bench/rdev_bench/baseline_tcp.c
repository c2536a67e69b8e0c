/*
 * tests/bench/rdev_bench/baseline_tcp.c — the raw-TCP baseline: one loopback
 * connection (TCP_NODELAY, as gRPC sets); per sample a sender thread writes
 * the bytes (writes of the chunk size) and a receiver thread reads them into
 * a destination buffer, as recv() must.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "baseline.h"
#include "common.h"

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

struct bl_tcp {
  int snd, rcv;
};

int bl_tcp_open(bl_tcp_t **out) {
  *out = NULL;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) return bl_fail("tcp: socket: %s", strerror(errno));
  if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &alen)) {
    int e = errno;
    close(ls);
    return bl_fail("tcp: listen on 127.0.0.1:0: %s", strerror(e));
  }
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a)) {
    int e = errno;
    if (c >= 0) close(c);
    close(ls);
    return bl_fail("tcp: connect: %s", strerror(e));
  }
  int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
  int e = errno;
  close(ls);
  if (s < 0) {
    close(c);
    return bl_fail("tcp: accept: %s", strerror(e));
  }
  int one = 1; /* as gRPC sets on its sockets */
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  bl_tcp_t *t = malloc(sizeof *t);
  if (!t) {
    close(c);
    close(s);
    return bl_fail("tcp: out of memory");
  }
  t->snd = c;
  t->rcv = s;
  *out = t;
  return 0;
}

typedef struct {
  int fd;
  const uint8_t *src;
  uint8_t *dst;
  size_t size, wsize;
  long k;
  int err; /* errno, or -1 for EOF */
} tcp_job_t;

static void *tcp_sender(void *arg) {
  tcp_job_t *j = arg;
  for (long r = 0; r < j->k; r++) {
    for (size_t off = 0; off < j->size;) {
      ssize_t n = send(j->fd, j->src + off, min_sz(j->wsize, j->size - off), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        j->err = errno;
        return NULL;
      }
      off += (size_t)n;
    }
  }
  return NULL;
}

static void *tcp_receiver(void *arg) {
  tcp_job_t *j = arg;
  size_t total = j->size * (size_t)j->k, got = 0, pos = 0;
  while (got < total) {
    ssize_t n = recv(j->fd, j->dst + pos, j->size - pos, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      j->err = n == 0 ? -1 : errno;
      return NULL;
    }
    got += (size_t)n;
    pos += (size_t)n;
    if (pos == j->size) pos = 0;
  }
  return NULL;
}

int bl_tcp_move(bl_tcp_t *t, const void *src, void *dst, size_t size, long k, size_t wsize, double *secs) {
  tcp_job_t sj = {.fd = t->snd, .src = src, .size = size, .wsize = wsize, .k = k};
  tcp_job_t rj = {.fd = t->rcv, .dst = dst, .size = size, .wsize = wsize, .k = k};
  pthread_t st, rt;
  double t0 = now_s();
  if (pthread_create(&rt, NULL, tcp_receiver, &rj)) return bl_fail("tcp: cannot start a thread");
  if (pthread_create(&st, NULL, tcp_sender, &sj)) {
    shutdown(t->rcv, SHUT_RD);
    pthread_join(rt, NULL);
    return bl_fail("tcp: cannot start a thread");
  }
  pthread_join(rt, NULL);
  *secs = now_s() - t0;
  pthread_join(st, NULL);
  if (sj.err) return bl_fail("tcp: send: %s", strerror(sj.err));
  if (rj.err) return bl_fail("tcp: recv: %s", rj.err < 0 ? "connection closed" : strerror(rj.err));
  return 0;
}

void bl_tcp_close(bl_tcp_t *t) {
  if (!t) return;
  close(t->snd);
  close(t->rcv);
  free(t);
}
