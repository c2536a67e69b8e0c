/*
 * proto/bulk.c — what both ends of a bulk connection (rdev/wire.h, "The
 * bulk connection") do alike: the little-endian fields of its headers,
 * sending and receiving a message whole, and the socket options that let a connection
 * to a peer gone silent fail instead of hanging.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "rdev/wire.h"

void rdev_wire_le_put(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void rdev_wire_bulk_header_put(uint8_t hdr[RDEV_WIRE_BULK_HEADER], uint32_t kind, uint32_t id, uint64_t size) {
  rdev_wire_le_put(hdr, kind, 4);
  rdev_wire_le_put(hdr + 4, id, 4);
  rdev_wire_le_put(hdr + 8, size, 8);
}

uint64_t rdev_wire_le_get(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

int rdev_wire_send_all(int fd, struct iovec *iov, int n) {
  struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  while (m.msg_iovlen) {
    ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    while (m.msg_iovlen && (size_t)k >= m.msg_iov->iov_len) {
      k -= (ssize_t)m.msg_iov->iov_len;
      m.msg_iov++;
      m.msg_iovlen--;
    }
    if (m.msg_iovlen) {
      m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + k;
      m.msg_iov->iov_len -= (size_t)k;
    }
  }
  return 0;
}

bool rdev_wire_recv_all(int fd, void *buf, size_t len) {
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

bool rdev_wire_drain(int fd, uint64_t len) {
  uint8_t scratch[16384];
  while (len) {
    size_t n = len < sizeof scratch ? (size_t)len : sizeof scratch;
    if (!rdev_wire_recv_all(fd, scratch, n)) return false;
    len -= n;
  }
  return true;
}

void rdev_wire_bulk_sockopts(int fd) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0 || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
    return;                                   /* a unix socket: its peer's end is seen at once */
  int one = 1, idle = 10, intvl = 5, cnt = 3; /* gone: 10 s idle, then 3 probes 5 s apart */
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}
