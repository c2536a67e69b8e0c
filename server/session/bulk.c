/*
 * server/session/bulk.c — the sessions' bulk connections (rdev/wire.h, "The
 * bulk connection"), once bulk_listen.c handed one to the session whose
 * key it presented: per session the writer thread
 * that sends Read data on it as frames, straight from the reply's slice
 * (device memory where zerocopy.h shows it). The client reads each frame
 * straight into the Read's destination: no gRPC framing, no message
 * buffers, no fresh pages.
 *
 * The Read is answered in-band where its data reply would have been
 * queued, with Reply.bulk and no data, so that replies keep their order
 * (a stream's synchronize never overtakes its Reads); the client's
 * handling of that reply waits for the frame. A frame holds its slice
 * until it is sent, so everything that waits for gRPC to let go of a
 * shown reply (fences, the pause of a later Write) waits for the frame
 * likewise; queued frames count toward the session's inflight bytes, so a
 * client that stops reading its bulk connection stops being read.
 *
 * The Read frames it sends, and those it keeps for the client's next
 * connection, are bulk_frames.c's.
 *
 * Its reader thread takes what the client sends: the bytes of bulk Writes
 * (DATA frames), each read into a staging buffer and kept by seq until
 * its Write runs (a Write whose frame is not in yet pauses its message
 * until it is: srv_bulk_pause); on a unix socket also the memfds of its
 * host memory regions (regions.c), each answered with a control frame
 * (seq 0) once mapped. Frames kept count against IN_MAX, not the
 * session's inflight bytes (which pause the reading of the very requests
 * that take them): past it the reader stops, and TCP stops the client.
 *
 * Nothing of the protocol depends on it: a Read without the bulk flag, a
 * session without a connection, and every Read while its connection is
 * lost go in-band.
 *
 * A client that lost its connection connects a new one with a higher
 * number (rdev/wire.h), also while the session's call is broken: it
 * replaces the last (readopt), whose threads are shut out of it first;
 * the writer stays and sends the frames not acknowledged again, in order,
 * and a new reader starts. Writes name the connection their bytes come
 * on, so that in a session that does not resume one whose connection went
 * fails instead of waiting for bytes that come on no connection. A
 * resumable session's client sends the DATA messages lost with a
 * connection again on its next one (from the count the answer gives), so
 * its Writes wait for them, and the session ends when none came for the
 * resume window (bulk_frames.c).
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
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bulk_conn.h"
#include "rdev/clock.h"

/* Bytes of bulk Writes' frames kept waiting for their Writes. */
#define IN_MAX ((size_t)32 << 20)
/* How long the reader holds a DATA message whose Write has not been seen
 * yet (it is usually on its way in-band): seen, it may take the bytes
 * straight into device memory; not, they are staged. */
#define EXPECT_WAIT_NS 2000000u

/* A bulk Write's bytes, in before its Write ran. */
struct bulk_in {
  struct bulk_in *next;
  uint64_t seq;
  void *buf; /* a runtime staging buffer; NULL: received into the Write's destination */
  size_t len;
  size_t charge; /* what it counts against IN_MAX: the buffer's size */
};

/* c->mu held: no Write waits for its frame with a destination any more. */
static void expect_clear_locked(struct srv_bulk_conn *c) {
  c->expect_seq = 0;
  c->expect_dst = NULL;
  c->expect_len = 0;
}

static struct srv_bulk_conn *conn_of(srv_session_t *s) {
  pthread_mutex_lock(&s->mu);
  struct srv_bulk_conn *c = s->bulk;
  pthread_mutex_unlock(&s->mu);
  return c;
}

/* c->mu held: the resume waiting for a frame, taken (NULL: none). */
static void (*take_resume_locked(struct srv_bulk_conn *c, void **arg))(void *) {
  void (*fn)(void *) = c->resume;
  *arg = c->resume_arg;
  c->resume = NULL;
  return fn;
}

void srv_bulk_end(srv_session_t *s) {
  struct srv_bulk_conn *c = conn_of(s);
  if (!c) return;
  void *arg;
  pthread_mutex_lock(&c->mu);
  c->closing = 1;
  pthread_cond_signal(&c->cv);
  pthread_cond_broadcast(&c->in_cv);
  expect_clear_locked(c);
  void (*fn)(void *) = take_resume_locked(c, &arg);
  shutdown(c->fd, SHUT_RDWR); /* a send blocked on a client that stopped reading returns */
  /* device memory being received into is freed next: wait */
  while (c->direct) pthread_cond_wait(&c->in_cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  if (fn) fn(arg); /* the paused message runs out: the session is released */
}

/* Frees c: its session's last reference went (its threads are gone). */
static void conn_free(struct srv_bulk_conn *c) {
  close(c->fd);
  while (c->in) {
    bulk_in_t *f = c->in;
    c->in = f->next;
    if (f->buf) rdev_rt_staging_put(f->buf);
    free(f);
  }
  pthread_cond_destroy(&c->cv);
  pthread_cond_destroy(&c->in_cv);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

/* c->mu held: frame seq's entry, unlinked when take (NULL: not in). */
static bulk_in_t *find_in_locked(struct srv_bulk_conn *c, uint64_t seq, int take) {
  for (bulk_in_t **pp = &c->in; *pp; pp = &(*pp)->next)
    if ((*pp)->seq == seq) {
      bulk_in_t *f = *pp;
      if (take) {
        *pp = f->next;
        c->in_bytes -= f->charge;
        pthread_cond_broadcast(&c->in_cv);
      }
      return f;
    }
  return NULL;
}

/* c->mu held: whether a frame the client sends on connection conn (0: the
 * one attached) can still come: in a resumable session on a later
 * connection too (bulk_frames.c ends a session whose client stays away
 * for the resume window meanwhile). */
static int may_come_locked(const struct srv_bulk_conn *c, uint32_t conn) {
  if (c->closing) return 0;
  if (c->keep) return 1;
  return !c->in_dead && !c->retire && (!conn || conn == c->conn);
}

int srv_bulk_frame(srv_session_t *s, uint64_t seq, uint32_t conn) {
  struct srv_bulk_conn *c = conn_of(s);
  if (!c) return -1;
  pthread_mutex_lock(&c->mu);
  int st = find_in_locked(c, seq, 0) ? 1 : may_come_locked(c, conn) ? 0 : -1;
  pthread_mutex_unlock(&c->mu);
  return st;
}

int srv_bulk_take(srv_session_t *s, uint64_t seq, void **buf, size_t *len) {
  struct srv_bulk_conn *c = conn_of(s);
  if (!c) return 0;
  pthread_mutex_lock(&c->mu);
  bulk_in_t *f = find_in_locked(c, seq, 1);
  if (c->expect_seq == seq) expect_clear_locked(c); /* the Write goes on: no destination any more */
  if (!f) c->gone[c->ngone++ % GONE_MAX] = seq;
  pthread_mutex_unlock(&c->mu);
  if (!f) return 0;
  *buf = f->buf;
  *len = f->len;
  free(f);
  return 1;
}

void srv_bulk_drop(srv_session_t *s, uint64_t seq) {
  void *buf;
  size_t len;
  if (srv_bulk_take(s, seq, &buf, &len) && buf) rdev_rt_staging_put(buf);
}

void srv_bulk_expect(srv_session_t *s, uint64_t seq, void *dst, size_t len) {
  struct srv_bulk_conn *c = conn_of(s);
  if (!c) return;
  pthread_mutex_lock(&c->mu);
  int ok = !find_in_locked(c, seq, 0) && may_come_locked(c, 0);
  if (ok) {
    c->expect_seq = seq;
    c->expect_dst = dst;
    c->expect_len = len;
    pthread_cond_broadcast(&c->in_cv); /* the reader may hold its frame for it */
  }
  pthread_mutex_unlock(&c->mu);
}

int srv_bulk_pause(srv_session_t *s, uint64_t seq, uint32_t conn, void (*resume)(void *), void *arg) {
  struct srv_bulk_conn *c = conn_of(s);
  if (!c) return 1;
  pthread_mutex_lock(&c->mu);
  int now = find_in_locked(c, seq, 0) || !may_come_locked(c, conn);
  if (!now) {
    c->wait_seq = seq;
    c->resume = resume;
    c->resume_arg = arg;
    if (c->in_dead) pthread_cond_signal(&c->cv); /* the writer times the wait for a next connection */
  }
  pthread_mutex_unlock(&c->mu);
  return now;
}

/* c->mu held: a DATA message arrived whole (kept, taken, or dropped). */
static void data_counted_locked(struct srv_bulk_conn *c) { c->data_in++; }

/* A DATA frame of len bytes (its seq follows the header) on connection
 * fd: kept for its Write; 0 when the connection failed or is replaced. */
static int take_data(srv_session_t *s, struct srv_bulk_conn *c, int fd, uint64_t len) {
  uint8_t sb[8];
  if (recv(fd, sb, sizeof sb, MSG_WAITALL) != (ssize_t)sizeof sb) return 0;
  uint64_t seq = rdev_wire_le_get(sb, 8);
  if (!seq) { /* no request has seq 0 */
    srv_log(SRV_LOG_INFO, "session %llu: bulk connection: DATA for seq 0; closed", (unsigned long long)s->id);
    return 0;
  }
  /* charged what it holds: a staging buffer is a chunk at least */
  size_t charge = len < RDEV_WIRE_MAX_CHUNK ? RDEV_WIRE_MAX_CHUNK : (size_t)len;
  pthread_mutex_lock(&c->mu);
  for (unsigned i = 0; i < GONE_MAX; i++)
    if (c->gone[i] == seq) { /* its Write ran already (its bytes came late, on a connection it gave up) */
      pthread_mutex_unlock(&c->mu);
      /* Dropped once they are all in: cut short, they come again (a
       * resumable session's client), and are dropped then. */
      if (!rdev_wire_drain(fd, len)) return 0;
      pthread_mutex_lock(&c->mu);
      if (c->gone[i] == seq) c->gone[i] = 0;
      data_counted_locked(c);
      pthread_mutex_unlock(&c->mu);
      return 1;
    }
  /* Its Write not seen yet (none waits, or an earlier one): a moment for it */
  struct timespec dl = rdev_clock_deadline_ns(EXPECT_WAIT_NS);
  while (!c->closing && c->expect_seq < seq && pthread_cond_timedwait(&c->in_cv, &c->mu, &dl) == 0) {}
  /* Its Write waits for it with a destination: received there, no copy
   * after (what a staged frame costs: a third copy of every byte). */
  char *direct = NULL;
  if (c->expect_seq == seq) { /* one frame of that seq is taken so, whatever its length */
    /* ...and none if one is in already (a duplicate: the Write takes that one) */
    direct = c->expect_len == len && !c->closing && !find_in_locked(c, seq, 0) ? c->expect_dst : NULL;
    expect_clear_locked(c);
  }
  if (direct) c->direct = 1, charge = 0;
  /* room first: the Writes that take frames are read meanwhile */
  while (!direct && c->in_bytes && c->in_bytes + charge > IN_MAX && !c->closing && !c->retire)
    pthread_cond_wait(&c->in_cv, &c->mu);
  int closing = c->closing || c->retire;
  pthread_mutex_unlock(&c->mu);
  bulk_in_t *f = closing && !direct ? NULL : malloc(sizeof *f);
  char *buf = !f ? NULL : direct ? direct : rdev_rt_staging_get(s->srv->rt, len ? (size_t)len : 1);
  size_t got = 0;
  while (buf && got < len) {
    ssize_t n = recv(fd, buf + got, (size_t)len - got, MSG_WAITALL);
    if (n <= 0 && !(n < 0 && errno == EINTR)) break;
    if (n > 0) got += (size_t)n;
  }
  if (direct) {
    pthread_mutex_lock(&c->mu);
    c->direct = 0;
    pthread_cond_broadcast(&c->in_cv); /* srv_bulk_end may wait for it */
    pthread_mutex_unlock(&c->mu);
  }
  if (!buf || got < len) {
    if (buf && !direct) rdev_rt_staging_put(buf);
    free(f);
    return 0;
  }
  *f = (bulk_in_t){.seq = seq, .buf = direct ? NULL : buf, .len = (size_t)len, .charge = charge};
  void *arg = NULL;
  void (*fn)(void *) = NULL;
  pthread_mutex_lock(&c->mu);
  bulk_in_t **pp = &c->in;
  while (*pp) pp = &(*pp)->next;
  *pp = f;
  c->in_bytes += f->charge;
  data_counted_locked(c);
  if (c->expect_seq == seq) expect_clear_locked(c); /* staged: the Write takes it from here */
  if (c->resume && c->wait_seq == seq) fn = take_resume_locked(c, &arg);
  pthread_mutex_unlock(&c->mu);
  if (fn) fn(arg); /* the paused message goes on, on this thread */
  return 1;
}

/* Answers a REGISTER: a control frame (seq 0) with the id and status. */
static void answer(srv_session_t *s, struct srv_bulk_conn *c, uint32_t id, int32_t status) {
  uint8_t b[RDEV_WIRE_BULK_HEADER];
  rdev_wire_bulk_header_put(b, RDEV_WIRE_REGION_REGISTER, id, (uint64_t)(int64_t)status);
  grpc_slice sl = grpc_slice_from_copied_buffer((const char *)b, sizeof b);
  if (!srv_bulk_queue_frame(s, c, 0, sl, 0)) grpc_slice_unref(sl);
}

/* A resumable session's client hears of the DATA messages that came (it
 * keeps their bytes until then) every few of them, and when no more came
 * for a moment: so it keeps about what is in flight, and a stream of
 * them costs a RECEIPT (two thread wakes) per RECEIPT_EVERY only. */
#define RECEIPT_EVERY 4u
#define RECEIPT_QUIET_MS 1

/* After a DATA message (sock: -1), or before the reader waits for the
 * next message on sock. */
static void data_receipt(srv_session_t *s, struct srv_bulk_conn *c, int sock) {
  if (!c->keep) return;
  pthread_mutex_lock(&c->mu);
  uint64_t untold = c->data_in - c->data_told;
  pthread_mutex_unlock(&c->mu);
  if (!untold || (sock < 0 && untold < RECEIPT_EVERY)) return;
  struct pollfd p = {.fd = sock, .events = POLLIN};
  if (sock < 0 || poll(&p, 1, RECEIPT_QUIET_MS) == 0) srv_bulk_receipt(s, c);
}

/* Receives one client message: 1 with *fd the descriptor it carried (-1:
 * none), 0 at the end of the connection or on a malformed message. */
static int recv_message(int sock, uint8_t hdr[RDEV_WIRE_BULK_HEADER], int *fd) {
  size_t got = 0;
  *fd = -1;
  while (got < RDEV_WIRE_BULK_HEADER) {
    union {
      struct cmsghdr h;
      char b[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct iovec iov = {hdr + got, RDEV_WIRE_BULK_HEADER - got};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
    ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    for (struct cmsghdr *h = n > 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h))
      if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
        int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int fds[4];
        memcpy(fds, CMSG_DATA(h), (size_t)(k < 4 ? k : 4) * sizeof(int));
        for (int i = 0; i < k && i < 4; i++) {
          if (*fd < 0)
            *fd = fds[i];
          else
            close(fds[i]); /* one per message */
        }
      }
    if (n <= 0 || (m.msg_flags & MSG_CTRUNC)) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
      return 0;
    }
    got += (size_t)n;
  }
  return 1;
}

static void *reader_main(void *arg) {
  srv_session_t *s = arg;
  struct srv_bulk_conn *c = s->bulk;
  uint8_t hdr[RDEV_WIRE_BULK_HEADER];
  int fd;
  pthread_mutex_lock(&c->mu);
  int sock = c->fd; /* its own until reader_on goes */
  pthread_mutex_unlock(&c->mu);
  for (;;) {
    data_receipt(s, c, sock);
    if (!recv_message(sock, hdr, &fd)) break;
    uint32_t kind = (uint32_t)rdev_wire_le_get(hdr, 4), id = (uint32_t)rdev_wire_le_get(hdr + 4, 4);
    uint64_t size = rdev_wire_le_get(hdr + 8, 8);
    if (kind == RDEV_WIRE_BULK_DATA && fd < 0 && !id && size <= RDEV_WIRE_MAX_CHUNK) {
      if (!take_data(s, c, sock, size)) break;
      data_receipt(s, c, -1);
    } else if (kind == RDEV_WIRE_REGION_REGISTER && fd >= 0 && c->local) {
      const char *why;
      int rc = srv_region_add(s, id, fd, size, &why);
      if (rc) srv_log(SRV_LOG_INFO, "session %llu: host region %u refused: %s", (unsigned long long)s->id, id, why);
      answer(s, c, id, rc);
    } else if (kind == RDEV_WIRE_REGION_UNREGISTER && fd < 0) {
      srv_region_remove(s, id);
    } else if (kind == RDEV_WIRE_BULK_ACK && fd < 0 && !id && srv_bulk_frames_acked(s, c, size)) {
      /* the client has the first `size` Read frames of this connection */
    } else {
      if (fd >= 0) close(fd);
      srv_log(SRV_LOG_INFO, "session %llu: bulk connection: malformed message; closed", (unsigned long long)s->id);
      break;
    }
  }
  shutdown(sock, SHUT_RDWR); /* the writer stops sending to a client that left */
  void *rarg = NULL;
  void (*fn)(void *) = NULL;
  pthread_mutex_lock(&c->mu);
  c->in_dead = 1;
  c->reader_on = 0;
  if (c->keep) { /* a Write waiting for its frame waits for the client's next connection (bulk_frames.c times it) */
    c->lost_ns = rdev_clock_now_ns();
    pthread_cond_signal(&c->cv);
  } else {
    fn = take_resume_locked(c, &rarg);
  }
  pthread_mutex_unlock(&c->mu);
  if (fn) fn(rarg); /* its Write fails: its frame cannot come */
  srv_session_unref(s);
  return NULL;
}

int srv_bulk_attach(srv_t *srv, int fd, const char *key, uint32_t conn, int local) {
  srv_session_t *s = srv_session_find(srv, key, NULL);
  if (!s) return -1;
  int rc = !s->call ? -1 : srv_bulk_adopt(s, fd, conn, local);
  srv_session_unref(s);
  return rc;
}

/* Makes fd blocking, with the bulk options, and answers its hello with
 * the DATA messages counted and the flags: 0, or -1 when it failed.
 * Nothing else writes on fd yet. */
static int greet(int fd, uint64_t data_in, int keep) {
  uint8_t a[RDEV_WIRE_BULK_ANSWER];
  memcpy(a, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN);
  rdev_wire_le_put(a + RDEV_WIRE_BULK_MAGIC_LEN, data_in, 8);
  rdev_wire_le_put(a + RDEV_WIRE_BULK_MAGIC_LEN + 8, keep ? RDEV_WIRE_BULK_KEEPS : 0, 4);
  rdev_wire_bulk_sockopts(fd);
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 &&
                 send(fd, a, sizeof a, MSG_NOSIGNAL) == (ssize_t)sizeof a
             ? 0
             : -1;
}

/* Starts c's reader on its connection (c->reader_on set): 0, or -1. */
static int start_reader(srv_session_t *s, struct srv_bulk_conn *c) {
  srv_session_ref(s); /* the reader's */
  if (pthread_create(&c->reader, NULL, reader_main, s) == 0) {
    pthread_detach(c->reader);
    return 0;
  }
  atomic_fetch_sub(&s->refs, 1); /* the caller holds one more: never the last */
  pthread_mutex_lock(&c->mu);
  c->in_dead = 1; /* no reader: no DATA comes (on this connection) */
  c->reader_on = 0;
  c->lost_ns = rdev_clock_now_ns();
  pthread_cond_signal(&c->cv); /* the writer times a Write's wait */
  pthread_mutex_unlock(&c->mu);
  return -1;
}

/* A connection numbered conn replaces c's (the client lost that one, or
 * thinks so: a connection that merely stalled is cut now). Frames the
 * client did not acknowledge go again on the new one; Writes whose frames
 * were to come on the old one fail, but in a resumable session, whose
 * client sends them again on the new one. It
 * never waits (one listener serves every session): the old connection is
 * shut down, and until its threads let go of it (moments, unless its
 * reader runs a long message it resumed) the new one is refused, and the
 * client tries again. */
static int readopt(srv_session_t *s, struct srv_bulk_conn *c, int fd, uint32_t conn, int local) {
  pthread_mutex_lock(&c->mu);
  if (c->closing || conn <= c->conn || local != c->local) { /* an old number */
    pthread_mutex_unlock(&c->mu);
    return -1;
  }
  if (!c->retire) { /* from now on nothing is queued on it, nor taken from it */
    c->retire = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_cond_broadcast(&c->in_cv);
    shutdown(c->fd, SHUT_RDWR); /* its reader and a blocked send return */
  }
  if (c->reader_on || c->sending || c->busy) { /* busy: the writer drops a frame of it (no resume) */
    pthread_mutex_unlock(&c->mu);
    if (c->keep && srv_zc_waiting(s->zc)) srv_bulk_unpin(s); /* what a fence waits for waits for a connection now */
    srv_log(SRV_LOG_DEBUG, "session %llu: bulk connection %u refused: the last still lets go",
            (unsigned long long)s->id, conn);
    return -1;
  }
  close(c->fd); /* fd is c's from here on */
  c->fd = fd;
  c->conn = conn;
  c->failed = 1; /* nothing goes on it before its answer */
  bulk_frame_t *control = srv_bulk_frames_again_locked(c);
  c->in_dead = 0;
  c->retire = 0;
  c->reader_on = 1;
  c->receipt_queued = 0; /* dropped with the control frames: the answer carries the count */
  c->data_told = c->data_in;
  c->lost_ns = 0;
  c->gave_up = 0;
  if (!c->keep) expect_clear_locked(c); /* a Write waiting for the old one fails by number */
  uint64_t data_in = c->data_in;        /* final: the last reader is gone */
  pthread_mutex_unlock(&c->mu);
  srv_bulk_frames_free(s, control);
  int ok = greet(fd, data_in, c->keep) == 0;
  pthread_mutex_lock(&c->mu);
  if (ok) c->failed = 0;
  pthread_cond_signal(&c->cv); /* the writer: frames to send again */
  pthread_mutex_unlock(&c->mu);
  start_reader(s, c); /* failed to answer: it finds the connection gone */
  srv_log(SRV_LOG_INFO, "session %llu: bulk connection %u attached in place of the last", (unsigned long long)s->id,
          conn);
  return 0;
}

int srv_bulk_adopt(srv_session_t *s, int fd, uint32_t conn, int local) {
  if (!conn) return -1;
  pthread_mutex_lock(&s->mu);
  int live = !s->released && !s->broken && !s->cancelled;
  /* a session whose call broke takes a new connection too: what it owes
   * the client on it (frames not acknowledged) may be what the client
   * waits for before it can resume */
  int kept = live || (s->detached && !s->released);
  struct srv_bulk_conn *c = live && !s->bulk ? calloc(1, sizeof *c) : NULL, *old = kept ? s->bulk : NULL;
  int rc = -1;
  if (c) {
    c->fd = fd;
    c->conn = conn;
    c->local = local;
    c->keep = s->resumable; /* a client that resumes waits for what a lost connection carried */
    c->reader_on = 1;
    pthread_mutex_init(&c->mu, NULL);
    rdev_clock_cond_init(&c->cv); /* their waits are timed */
    rdev_clock_cond_init(&c->in_cv);
    /* The answer goes before any frame: the socket's buffer is empty. */
    if (greet(fd, 0, c->keep) == 0) {
      s->bulk = c;
      s->bulk_free = conn_free;
      srv_session_ref(s); /* the writer's */
      if (pthread_create(&c->thread, NULL, srv_bulk_writer_main, s) == 0) {
        pthread_detach(c->thread);
        srv_zc_session_unpin_fn(s->zc, srv_bulk_unpin, s);
        rc = 0;
      } else {
        s->bulk = NULL;
        atomic_fetch_sub(&s->refs, 1); /* we hold one more: never the last */
      }
    }
    if (rc) {
      pthread_cond_destroy(&c->cv);
      pthread_cond_destroy(&c->in_cv);
      pthread_mutex_destroy(&c->mu);
      free(c);
    }
  }
  pthread_mutex_unlock(&s->mu);
  if (!c) return old ? readopt(s, old, fd, conn, local) : -1;
  if (rc == 0) {
    start_reader(s, c);
    srv_log(SRV_LOG_DEBUG, "session %llu: bulk connection attached", (unsigned long long)s->id);
  }
  return rc;
}
