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
 * A resumable session keeps each Read frame it sent until the client
 * counts it (ACK messages, as frames land), to send it again on the
 * client's next connection if this one breaks (at most KEPT_MAX bytes:
 * past it the oldest go). A kept frame goes on showing device memory, at
 * no cost, unless a fence or pause waits for that memory (zerocopy.h
 * calls unpin), or its connection is lost while one does: then a copy
 * takes its place, so that no work ever waits for the client. A session
 * that does not resume keeps nothing: a lost connection's frames are
 * dropped, and their Reads fail on the client, which knows them by
 * connection number (Reply.bulk_conn).
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
 * on, so one whose connection went fails instead of waiting for bytes
 * that come on no connection.
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

#include "rdev/clock.h"
#include "session.h"

/* Bulk Writes that ran without their frame, remembered so that their
 * frame is dropped if it comes after all. */
#define GONE_MAX 64u
/* Bytes of sent Read frames a session keeps for its client's next
 * connection: past it the oldest go (their Reads then fail if that
 * connection breaks). A client acknowledges as frames land, so it keeps
 * about what the network holds in flight. */
#define KEPT_MAX ((size_t)128 << 20)
/* Bytes of bulk Writes' frames kept waiting for their Writes. */
#define IN_MAX ((size_t)32 << 20)
/* How long the reader holds a DATA message whose Write has not been seen
 * yet (it is usually on its way in-band): seen, it may take the bytes
 * straight into device memory; not, they are staged. */
#define EXPECT_WAIT_NS 2000000u

/* ---- a session's connection and its writer -------------------------------------- */

typedef struct bulk_frame {
  struct bulk_frame *next;
  uint64_t seq;  /* 0: a control frame, freed once sent (or lost) */
  int shown;     /* data shows device memory (zerocopy.h) */
  int sent;      /* sent (or being sent) on the connection attached now */
  uint64_t nth;  /* a Read frame sent: which of the connection's (from 1), the client's count of it */
  int acked;     /* acknowledged while the writer sent it: the writer frees it */
  int queued;    /* its bytes count toward the session's inflight (until first sent) */
  int kept;      /* sent, kept for the client's next connection (counted in c->kept) */
  uint32_t conn; /* the connection it was queued for (a session that does not resume sends it on that one only) */
  grpc_slice data;
} bulk_frame_t;

/* A bulk Write's bytes, in before its Write ran. */
typedef struct bulk_in {
  struct bulk_in *next;
  uint64_t seq;
  void *buf; /* a runtime staging buffer; NULL: received into the Write's destination */
  size_t len;
  size_t charge; /* what it counts against IN_MAX: the buffer's size */
} bulk_in_t;

struct srv_bulk_conn {
  int fd;             /* mu; a thread that uses it holds it (reader_on, sending) */
  uint32_t conn;      /* its number, the client's: a higher one replaces it */
  int local;          /* a unix socket: regions may be registered */
  pthread_t thread;   /* the writer, for the session's life */
  pthread_t reader;   /* what the client sends, one per connection */
  pthread_mutex_t mu; /* the queues and the flags */
  pthread_cond_t cv;  /* the writer's: frames queued, or closing */
  /* Frames the client has not acknowledged, in queue order (which is the
   * order they go in on each connection), and the next to send (NULL: all
   * sent); busy: the one the writer sends now. A resumable session keeps
   * a Read's frame once sent until the client acknowledges it, as a copy
   * when it showed device memory (the memory is free to change once sent,
   * as an in-band reply's); others go once sent. */
  bulk_frame_t *head, *tail, *cursor, *busy;
  int keep;             /* the session is resumable: sent Read frames are kept */
  size_t kept;          /* their bytes, at most about KEPT_MAX */
  uint64_t sent, acked; /* Read frames sent on this connection, and acknowledged */
  int closing;          /* the session ends: drop what is queued */
  int failed;           /* a send failed: no more frames */
  int retire;           /* a newer connection takes its place: its threads let go of fd */
  int reader_on;        /* the reader runs */
  int sending;          /* the writer is in a send on fd */
  /* The latest bulk Writes that ran without their frame (it could not
   * come, or they were refused): a DATA of theirs that comes after all is
   * dropped, not kept for a Write that will never take it. (Not a seq
   * high-water mark: threads sharing a session send Writes out of seq
   * order.) */
  uint64_t gone[GONE_MAX];
  unsigned ngone; /* the next slot, round */
  /* Bulk Writes' frames (the reader's side). */
  bulk_in_t *in;        /* kept, in arrival order */
  size_t in_bytes;      /* their bytes, at most about IN_MAX */
  int in_dead;          /* the reader stopped: no frame comes any more */
  pthread_cond_t in_cv; /* the reader waits here for room */
  uint64_t wait_seq;    /* the frame a paused message waits for... */
  void (*resume)(void *);
  void *resume_arg; /* ...and what runs once it is in (or cannot come) */
  /* The Write waiting for its frame (srv_bulk_expect), and where its
   * bytes may go straight: */
  uint64_t expect_seq; /* 0: none */
  void *expect_dst;    /* NULL: staged */
  size_t expect_len;
  int direct; /* the reader is receiving into such a destination now */
};

/* c->mu held: no Write waits for its frame with a destination any more. */
static void expect_clear_locked(struct srv_bulk_conn *c) {
  c->expect_seq = 0;
  c->expect_dst = NULL;
  c->expect_len = 0;
}

/* Sends the frame's header and bytes; 0, or -1 when the connection failed. */
static int send_frame(int fd, uint64_t seq, grpc_slice data) {
  uint8_t hdr[RDEV_WIRE_BULK_HEADER];
  uint64_t len = GRPC_SLICE_LENGTH(data);
  rdev_wire_le_put(hdr, seq, 8);
  rdev_wire_le_put(hdr + 8, len, 8);
  struct iovec iov[2] = {{hdr, sizeof hdr}, {GRPC_SLICE_START_PTR(data), (size_t)len}};
  return rdev_wire_send_all(fd, iov, 2);
}

/* Frees the frames of list (unlinked from c), and what they count. */
static void frames_free(srv_session_t *s, bulk_frame_t *list) {
  while (list) {
    bulk_frame_t *f = list;
    list = f->next;
    if (f->queued) srv_inflight_sub(s, GRPC_SLICE_LENGTH(f->data));
    grpc_slice_unref(f->data); /* a shown reply lets go: its fence may open */
    free(f);
  }
}

/* c->mu held: unlinks f (not the one being sent) from c's frames. */
static void frame_unlink_locked(struct srv_bulk_conn *c, bulk_frame_t *f) {
  bulk_frame_t **pp = &c->head, *prev = NULL;
  while (*pp != f) prev = *pp, pp = &(*pp)->next;
  *pp = f->next;
  if (c->tail == f) c->tail = prev;
  if (c->cursor == f) c->cursor = f->next;
  f->next = NULL;
  if (f->kept) c->kept -= GRPC_SLICE_LENGTH(f->data);
  f->kept = 0;
}

/* c->mu held: the oldest kept frames while more than KEPT_MAX bytes are
 * kept (not the one being sent), unlinked, for frames_free. */
static bulk_frame_t *kept_over_locked(struct srv_bulk_conn *c) {
  bulk_frame_t *out = NULL;
  while (c->kept > KEPT_MAX) {
    bulk_frame_t *f = c->head;
    while (f && (!f->kept || f == c->busy)) f = f->next;
    if (!f) break;
    frame_unlink_locked(c, f);
    f->next = out;
    out = f;
  }
  return out;
}

/* c->mu held, f not being sent: a copy of what f shows takes its place
 * (what a next connection gets), so that the device memory is free to
 * change; *old is the slice to let go of once c->mu is (its fence opens).
 * 0 when out of memory: f stays as it was. */
static int frame_copy_locked(srv_session_t *s, bulk_frame_t *f, grpc_slice *old) {
  size_t len = GRPC_SLICE_LENGTH(f->data);
  void *buf = rdev_rt_staging_get(s->srv->rt, len); /* pooled: no fresh pages */
  if (!buf) return 0;
  memcpy(buf, GRPC_SLICE_START_PTR(f->data), len);
  *old = f->data;
  f->data = grpc_slice_new(buf, len, rdev_rt_staging_put);
  f->shown = 0;
  return 1;
}

/* A fence or a pause is about to wait for shown replies (zerocopy.h): the
 * sent frames kept for the client that show device memory take a copy
 * instead, as do the unsent ones while no connection is in, and the
 * writer copies what it sends while one waits (srv_zc_waiting). So a
 * fence waits for sends at most, never for the client's acknowledgement
 * (which may be held up behind work the fence holds back), and a frame
 * not kept costs no copy. */
static void unpin(void *arg) {
  srv_session_t *s = arg;
  pthread_mutex_lock(&s->mu);
  struct srv_bulk_conn *c = s->bulk; /* the session's for its life once set */
  pthread_mutex_unlock(&s->mu);
  for (; c;) {
    grpc_slice old;
    pthread_mutex_lock(&c->mu);
    int lost = c->failed || c->retire;
    bulk_frame_t *f = c->head;
    while (f && (!f->shown || f == c->busy || !(f->sent || lost))) f = f->next;
    int copied = f && frame_copy_locked(s, f, &old);
    pthread_mutex_unlock(&c->mu);
    if (!copied) return;
    grpc_slice_unref(old);
  }
}

/* Sends c's frames in order on the connection attached. A resumable
 * session's Read frames are kept once sent until the client counts them,
 * and wait for the next connection after a loss (readopt has them sent
 * again); other frames go once sent, and those of a lost connection are
 * dropped (their Reads fail on the client, which knows them by number). */
static void *writer_main(void *arg) {
  srv_session_t *s = arg;
  struct srv_bulk_conn *c = s->bulk;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!c->closing && !(c->cursor && (!c->keep || (!c->failed && !c->retire)))) pthread_cond_wait(&c->cv, &c->mu);
    if (c->closing) break;
    bulk_frame_t *f = c->busy = c->cursor;
    c->cursor = f->next;
    int send = !c->failed && !c->retire && (c->keep || f->conn == c->conn);
    int keep = send && c->keep && f->seq, first = f->queued, fd = c->fd;
    uint32_t conn = c->conn;
    c->sending = send;
    if (send) {
      f->sent = 1;
      if (f->seq) f->nth = ++c->sent; /* before the send: its count may come before this thread looks again */
    }
    if (keep && !f->kept) {
      f->kept = 1;
      c->kept += GRPC_SLICE_LENGTH(f->data);
    }
    bulk_frame_t *over = keep ? kept_over_locked(c) : NULL;
    pthread_mutex_unlock(&c->mu);
    if (over)
      srv_log(SRV_LOG_INFO, "session %llu: its client does not count bulk frames; the oldest kept are dropped",
              (unsigned long long)s->id);
    frames_free(s, over);
    int rc = send ? send_frame(fd, f->seq, f->data) : 0;
    if (rc != 0)
      srv_log(SRV_LOG_INFO, "session %llu: bulk connection %u lost (%s)%s", (unsigned long long)s->id, conn,
              strerror(errno), keep ? "; its frames wait for the next" : "");
    if (first) {
      f->queued = 0;
      srv_inflight_sub(s, GRPC_SLICE_LENGTH(f->data));
    }
    pthread_mutex_lock(&c->mu);
    c->sending = 0;
    c->busy = NULL;
    int lost = rc != 0 && !c->failed;
    if (lost) {
      c->failed = 1;
      shutdown(fd, SHUT_RDWR);
    }
    grpc_slice old = grpc_empty_slice();
    bulk_frame_t *gone = NULL;
    if (!keep || f->acked) {
      frame_unlink_locked(c, f);
      gone = f;
    } else if (f->shown && srv_zc_waiting(s->zc)) { /* a fence waits: kept, it would wait for the client */
      frame_copy_locked(s, f, &old);
    }
    pthread_mutex_unlock(&c->mu);
    frames_free(s, gone);
    grpc_slice_unref(old);
    if (lost && c->keep && srv_zc_waiting(s->zc)) unpin(s); /* what it waits for waits for a connection now */
    pthread_mutex_lock(&c->mu);
  }
  bulk_frame_t *rest = c->head;
  c->head = c->tail = c->cursor = NULL;
  c->kept = 0;
  pthread_mutex_unlock(&c->mu);
  frames_free(s, rest);
  srv_session_unref(s); /* the writer's; the connection goes with the session */
  return NULL;
}

/* The client has the first n Read frames sent on this connection: the kept
 * ones among them go. 0 when it claims frames not sent (malformed). */
static int frames_acked(srv_session_t *s, struct srv_bulk_conn *c, uint64_t n) {
  bulk_frame_t *done = NULL;
  pthread_mutex_lock(&c->mu);
  int ok = n >= c->acked && n <= c->sent;
  if (ok) {
    c->acked = n;
    /* sent frames come first, in the order sent (some may have gone:
     * KEPT_MAX); a control frame there is the writer's (it frees it) */
    for (bulk_frame_t *f = c->head, *next; f && f->sent; f = next) {
      next = f->next;
      if (!f->seq) continue;
      if (f->nth > n) break;
      if (f == c->busy) {
        f->acked = 1; /* the writer frees it */
      } else {
        frame_unlink_locked(c, f);
        f->next = done;
        done = f;
      }
    }
  }
  pthread_mutex_unlock(&c->mu);
  frames_free(s, done);
  return ok;
}

/* Queues data (its reference taken) as frame seq on s's connection c: the
 * connection's number, or 0 when c takes no more frames (data still the
 * caller's). */
static uint32_t queue_frame(srv_session_t *s, struct srv_bulk_conn *c, uint64_t seq, grpc_slice data, int shown) {
  bulk_frame_t *f = malloc(sizeof *f);
  if (!f) return 0;
  *f = (bulk_frame_t){.seq = seq, .shown = shown, .queued = 1, .data = data};
  size_t len = GRPC_SLICE_LENGTH(data);
  srv_inflight_add(s, len);
  pthread_mutex_lock(&c->mu);
  uint32_t ok = !c->closing && !c->failed && !c->retire ? c->conn : 0;
  f->conn = ok;
  if (ok) {
    if (c->tail)
      c->tail->next = f;
    else
      c->head = f;
    c->tail = f;
    if (!c->cursor) c->cursor = f;
    pthread_cond_signal(&c->cv);
  }
  pthread_mutex_unlock(&c->mu);
  if (!ok) {
    srv_inflight_sub(s, len);
    free(f);
  }
  return ok;
}

int srv_bulk_send(srv_session_t *s, uint64_t seq, grpc_slice data, int shown) {
  pthread_mutex_lock(&s->mu);
  struct srv_bulk_conn *c = s->bulk;
  pthread_mutex_unlock(&s->mu);
  uint32_t conn = c ? queue_frame(s, c, seq, data, shown) : 0;
  if (!conn) return 0;
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  r.bulk = true;
  r.bulk_conn = conn;
  srv_send_reply(s, &r, NULL);
  return 1;
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

void srv_send_read(srv_session_t *s, uint64_t seq, grpc_slice data, int flags) {
  if (!(flags & SRV_READ_BULK) || !srv_bulk_send(s, seq, data, (flags & SRV_READ_SHOWN) != 0))
    srv_send_data(s, seq, data);
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
 * one attached) can still come. */
static int may_come_locked(const struct srv_bulk_conn *c, uint32_t conn) {
  return !c->in_dead && !c->closing && !c->retire && (!conn || conn == c->conn);
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
  }
  pthread_mutex_unlock(&c->mu);
  return now;
}

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
      c->gone[i] = 0;
      pthread_mutex_unlock(&c->mu);
      return rdev_wire_drain(fd, len);
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
  if (c->expect_seq == seq) expect_clear_locked(c); /* staged: the Write takes it from here */
  if (c->resume && c->wait_seq == seq) fn = take_resume_locked(c, &arg);
  pthread_mutex_unlock(&c->mu);
  if (fn) fn(arg); /* the paused message goes on, on this thread */
  return 1;
}

/* Answers a REGISTER: a control frame (seq 0) with the id and status. */
static void answer(srv_session_t *s, struct srv_bulk_conn *c, uint32_t id, int32_t status) {
  uint8_t b[8];
  rdev_wire_le_put(b, id, 4);
  rdev_wire_le_put(b + 4, (uint32_t)status, 4);
  grpc_slice sl = grpc_slice_from_copied_buffer((const char *)b, sizeof b);
  if (!queue_frame(s, c, 0, sl, 0)) grpc_slice_unref(sl);
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
  while (recv_message(sock, hdr, &fd)) {
    uint32_t kind = (uint32_t)rdev_wire_le_get(hdr, 4), id = (uint32_t)rdev_wire_le_get(hdr + 4, 4);
    uint64_t size = rdev_wire_le_get(hdr + 8, 8);
    if (kind == RDEV_WIRE_BULK_DATA && fd < 0 && !id && size <= RDEV_WIRE_MAX_CHUNK) {
      if (!take_data(s, c, sock, size)) break;
    } else if (kind == RDEV_WIRE_REGION_REGISTER && fd >= 0 && c->local) {
      const char *why;
      int rc = srv_region_add(s, id, fd, size, &why);
      if (rc) srv_log(SRV_LOG_INFO, "session %llu: host region %u refused: %s", (unsigned long long)s->id, id, why);
      answer(s, c, id, rc);
    } else if (kind == RDEV_WIRE_REGION_UNREGISTER && fd < 0) {
      srv_region_remove(s, id);
    } else if (kind == RDEV_WIRE_BULK_ACK && fd < 0 && !id && frames_acked(s, c, size)) {
      /* the client has the first `size` Read frames of this connection */
    } else {
      if (fd >= 0) close(fd);
      srv_log(SRV_LOG_INFO, "session %llu: bulk connection: malformed message; closed", (unsigned long long)s->id);
      break;
    }
  }
  shutdown(sock, SHUT_RDWR); /* the writer stops sending to a client that left */
  void *rarg;
  pthread_mutex_lock(&c->mu);
  c->in_dead = 1;
  c->reader_on = 0;
  void (*fn)(void *) = take_resume_locked(c, &rarg);
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

/* Makes fd blocking, with the bulk options, and answers its hello: 0, or
 * -1 when it failed. Nothing else writes on fd yet. */
static int greet(int fd) {
  rdev_wire_bulk_sockopts(fd);
  int fl = fcntl(fd, F_GETFL);
  return fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 &&
                 send(fd, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN, MSG_NOSIGNAL) == RDEV_WIRE_BULK_MAGIC_LEN
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
  c->in_dead = 1; /* no reader: no DATA comes */
  c->reader_on = 0;
  pthread_mutex_unlock(&c->mu);
  return -1;
}

/* A connection numbered conn replaces c's (the client lost that one, or
 * thinks so: a connection that merely stalled is cut now). Frames the
 * client did not acknowledge go again on the new one; Writes whose frames
 * were to come on the old one fail. It
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
    if (c->keep && srv_zc_waiting(s->zc)) unpin(s); /* what a fence waits for waits for a connection now */
    srv_log(SRV_LOG_DEBUG, "session %llu: bulk connection %u refused: the last still lets go",
            (unsigned long long)s->id, conn);
    return -1;
  }
  close(c->fd); /* fd is c's from here on */
  c->fd = fd;
  c->conn = conn;
  c->failed = 1; /* nothing goes on it before its answer */
  /* Every frame the client did not acknowledge goes again, in order, on
   * this one (the client writes each once); control frames do not: what
   * they answered was lost with the last. */
  bulk_frame_t *control = NULL;
  c->sent = c->acked = 0;
  for (bulk_frame_t *f = c->head, *next; f; f = next) {
    next = f->next;
    f->sent = 0;
    if (f->seq == 0) {
      frame_unlink_locked(c, f);
      f->next = control;
      control = f;
    }
  }
  c->cursor = c->head;
  c->in_dead = 0;
  c->retire = 0;
  c->reader_on = 1;
  expect_clear_locked(c); /* a Write waiting for the old one fails by number */
  pthread_mutex_unlock(&c->mu);
  frames_free(s, control);
  int ok = greet(fd) == 0;
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
    pthread_cond_init(&c->cv, NULL);
    rdev_clock_cond_init(&c->in_cv); /* its waits are timed */
    /* The answer goes before any frame: the socket's buffer is empty. */
    if (greet(fd) == 0) {
      s->bulk = c;
      s->bulk_free = conn_free;
      srv_session_ref(s); /* the writer's */
      if (pthread_create(&c->thread, NULL, writer_main, s) == 0) {
        pthread_detach(c->thread);
        srv_zc_session_unpin_fn(s->zc, unpin, s);
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
