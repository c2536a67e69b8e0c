/*
 * client/lib/bulk_send.c — what this process writes on the session's bulk
 * connection (rdev/wire.h, "The bulk connection"), one writer at a time
 * under send_mu: bulk Writes' DATA messages (from the caller's thread),
 * REGISTER and UNREGISTER messages (bulk.c's), and the ACKs of the Read
 * frames bulk.c's reader counts, which that reader never waits to send.
 * Calls nothing above it; bulk.c (the connection) and bulk_data.c (DATA
 * kept for the next connection) call it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "client.h"

/* ACK messages: the reader counts the Read frames that landed
 * (s->bulk.frames) and tells rdevd, which drops its copies of them. The
 * reader never waits for that: it sends only if no sender holds send_mu,
 * and without blocking (a Write's bytes may fill the socket while rdevd
 * holds them back until work that needs nothing from here is done); what
 * it could not send, whoever holds send_mu next sends first. */

/* With send_mu held: writes out the rest of the ACK begun (flags:
 * MSG_DONTWAIT, or 0 to wait); false when some is left (it would block). */
static bool ack_rest_locked(rdev_session_t *s, int flags) {
  while (s->bulk.ack_off < s->bulk.ack_len) {
    ssize_t n = send(s->bulk.fd, s->bulk.ack_out + s->bulk.ack_off, (size_t)(s->bulk.ack_len - s->bulk.ack_off),
                     MSG_NOSIGNAL | flags);
    if (n > 0) {
      s->bulk.ack_off += (int)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return false;
    } else {
      shutdown(s->bulk.fd, SHUT_RDWR); /* a header cut short must not run into the next message */
      break;                           /* the connection failed: the count goes with it */
    }
  }
  s->bulk.ack_off = s->bulk.ack_len = 0;
  return true;
}

/* With send_mu held: begins (and sends what it can of) an ACK of the
 * frames counted, if more than rdevd was told. */
static void acks_send_locked(rdev_session_t *s, int flags) {
  if (s->bulk.fd < 0 || !ack_rest_locked(s, flags)) return;
  uint64_t n = atomic_load(&s->bulk.frames);
  if (n <= atomic_load(&s->bulk.frames_told)) return;
  rdev_wire_bulk_header_put(s->bulk.ack_out, RDEV_WIRE_BULK_ACK, 0, n);
  s->bulk.ack_off = 0;
  s->bulk.ack_len = RDEV_WIRE_BULK_HEADER;
  atomic_store(&s->bulk.frames_told, n);
  ack_rest_locked(s, flags);
}

void cl_bulk_acks_flush(rdev_session_t *s) {
  if (atomic_load(&s->bulk.frames) <= atomic_load(&s->bulk.frames_told)) return;
  if (pthread_mutex_trylock(&s->bulk.send_mu) != 0) return; /* its holder sends it */
  acks_send_locked(s, MSG_DONTWAIT);
  pthread_mutex_unlock(&s->bulk.send_mu);
}

bool cl_bulk_send_message(int sock, uint32_t kind, uint32_t id, uint64_t size, int fd) {
  uint8_t hdr[RDEV_WIRE_BULK_HEADER];
  rdev_wire_bulk_header_put(hdr, kind, id, size);
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {hdr, sizeof hdr};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    m.msg_control = ctl.b;
    m.msg_controllen = sizeof ctl.b;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do n = sendmsg(sock, &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof hdr;
}

void cl_bulk_send_lock(rdev_session_t *s) {
  pthread_mutex_lock(&s->bulk.send_mu);
  if (s->bulk.fd >= 0) ack_rest_locked(s, 0); /* an ACK begun goes out whole first */
}

void cl_bulk_send_unlock(rdev_session_t *s) {
  acks_send_locked(s, 0); /* rdevd hears of frames first */
  pthread_mutex_unlock(&s->bulk.send_mu);
  cl_bulk_acks_flush(s); /* a count the reader left while this thread held the lock */
}

uint32_t cl_bulk_conn_locked(rdev_session_t *s) { return s->bulk.conn; }

void cl_bulk_data_header(uint8_t hdr[RDEV_WIRE_BULK_HEADER + 8], uint64_t seq, size_t n) {
  rdev_wire_bulk_header_put(hdr, RDEV_WIRE_BULK_DATA, 0, n);
  rdev_wire_le_put(hdr + RDEV_WIRE_BULK_HEADER, seq, 8);
}

bool cl_bulk_send_data(rdev_session_t *s, uint64_t seq, const void *src, size_t n, bool on) {
  if (!on) return false;
  uint8_t hdr[RDEV_WIRE_BULK_HEADER + 8];
  cl_bulk_data_header(hdr, seq, n);
  struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)src, n}};
  int sock = s->bulk.fd; /* set before ready, changed only under the send lock */
  if (rdev_wire_send_all(sock, iov, 2) == 0) return true;
  atomic_store(&s->bulk.ready, false);
  atomic_store(&s->bulk.asked, false);
  shutdown(sock, SHUT_RDWR);
  return false;
}

void cl_bulk_send_unregisters_locked(rdev_session_t *s, int fd) {
  pthread_mutex_lock(&s->mu);
  uint32_t *ids = s->bulk.unreg;
  int n = s->bulk.nunreg;
  s->bulk.unreg = NULL;
  s->bulk.nunreg = 0;
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < n; i++) cl_bulk_send_message(fd, RDEV_WIRE_REGION_UNREGISTER, ids[i], 0, -1);
  free(ids);
}
