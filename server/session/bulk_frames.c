/*
 * server/session/bulk_frames.c — the frames rdevd sends on a session's
 * bulk connection (rdev/wire.h, "The bulk connection"; the connection
 * itself is bulk.c's): the writer thread, which sends each Read's data as
 * a frame, straight from the reply's slice (device memory where
 * zerocopy.h shows it), and the frames a resumable session keeps for its
 * client's next connection until the client counts them.
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
 * calls srv_bulk_unpin), or its connection is lost while one does: then a
 * copy takes its place, so that no work ever waits for the client. A
 * session that does not resume keeps nothing: a lost connection's frames
 * are dropped, and their Reads fail on the client, which knows them by
 * connection number (Reply.bulk_conn).
 *
 * The other way, it sends a resumable session's client RECEIPTs of the
 * DATA messages that came (the client keeps their bytes until then), and
 * it ends the session when a Write waited for DATA lost with a
 * connection while the client stayed away for the resume window.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "bulk_conn.h"
#include "rdev/clock.h"

/* Bytes of sent Read frames a session keeps for its client's next
 * connection: past it the oldest go (their Reads then fail if that
 * connection breaks). A client acknowledges as frames land, so it keeps
 * about what the network holds in flight. */
#define KEPT_MAX ((size_t)128 << 20)

/* Sends the frame's header and bytes; 0, or -1 when the connection failed. */
static int send_frame(int fd, uint64_t seq, grpc_slice data) {
  uint8_t hdr[RDEV_WIRE_BULK_HEADER];
  uint64_t len = GRPC_SLICE_LENGTH(data);
  rdev_wire_le_put(hdr, seq, 8);
  rdev_wire_le_put(hdr + 8, len, 8);
  struct iovec iov[2] = {{hdr, sizeof hdr}, {GRPC_SLICE_START_PTR(data), (size_t)len}};
  return rdev_wire_send_all(fd, iov, 2);
}

/* Frees the frames of list (unlinked from their connection), and what they count. */
void srv_bulk_frames_free(srv_session_t *s, bulk_frame_t *list) {
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
 * kept (not the one being sent), unlinked, for srv_bulk_frames_free. */
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
void srv_bulk_unpin(void *arg) {
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

/* c->mu held, f a RECEIPT about to go: it carries the count now. */
static void receipt_fill_locked(struct srv_bulk_conn *c, bulk_frame_t *f) {
  uint8_t *b = GRPC_SLICE_START_PTR(f->data); /* the frame's own (grpc_slice_malloc) */
  rdev_wire_bulk_header_put(b, RDEV_WIRE_BULK_RECEIPT, 0, c->data_in);
  c->data_told = c->data_in;
  c->receipt_queued = 0;
}

/* c->mu held: waits for the writer's next event. A resumable session
 * whose reader stopped while a Write waits for its DATA waits at most
 * the resume window for the client's next connection, as a broken call
 * does: 1 when it passed, and the session must end. */
static int writer_wait_locked(srv_session_t *s, struct srv_bulk_conn *c) {
  if (!(c->keep && c->in_dead && c->resume && c->lost_ns && !c->gave_up)) {
    pthread_cond_wait(&c->cv, &c->mu);
    return 0;
  }
  uint64_t until = c->lost_ns + (uint64_t)s->srv->cfg.resume_ms * 1000000u, now = rdev_clock_now_ns();
  if (now < until) {
    struct timespec dl = rdev_clock_deadline_ns(until - now);
    pthread_cond_timedwait(&c->cv, &c->mu, &dl);
    return 0;
  }
  c->gave_up = 1;
  return 1;
}

/* Sends c's frames in order on the connection attached. A resumable
 * session's Read frames are kept once sent until the client counts them,
 * and wait for the next connection after a loss (readopt has them sent
 * again); other frames go once sent, and those of a lost connection are
 * dropped (their Reads fail on the client, which knows them by number). */
void *srv_bulk_writer_main(void *arg) {
  srv_session_t *s = arg;
  struct srv_bulk_conn *c = s->bulk;
  pthread_mutex_lock(&c->mu);
  for (;;) {
    while (!c->closing && !(c->cursor && (!c->keep || (!c->failed && !c->retire)))) {
      if (!writer_wait_locked(s, c)) continue;
      pthread_mutex_unlock(&c->mu);
      srv_log(SRV_LOG_INFO, "session %llu: a write waited for its bytes longer than the resume window; ending it",
              (unsigned long long)s->id);
      srv_session_end(s, "bulk connection lost", GRPC_STATUS_UNAVAILABLE,
                      "the bulk connection was lost before a write's data arrived, for longer than the resume window");
      pthread_mutex_lock(&c->mu);
    }
    if (c->closing) break;
    bulk_frame_t *f = c->busy = c->cursor;
    c->cursor = f->next;
    int send = !c->failed && !c->retire && (c->keep || f->conn == c->conn);
    int keep = send && c->keep && f->seq, first = f->queued, fd = c->fd;
    uint32_t conn = c->conn;
    c->sending = send;
    if (f->receipt) receipt_fill_locked(c, f);
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
    srv_bulk_frames_free(s, over);
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
    srv_bulk_frames_free(s, gone);
    grpc_slice_unref(old);
    if (lost && c->keep && srv_zc_waiting(s->zc)) srv_bulk_unpin(s); /* what it waits for waits for a connection now */
    pthread_mutex_lock(&c->mu);
  }
  bulk_frame_t *rest = c->head;
  c->head = c->tail = c->cursor = NULL;
  c->kept = 0;
  pthread_mutex_unlock(&c->mu);
  srv_bulk_frames_free(s, rest);
  srv_session_unref(s); /* the writer's; the connection goes with the session */
  return NULL;
}

/* The client has the first n Read frames sent on this connection: the kept
 * ones among them go. 0 when it claims frames not sent (malformed). */
int srv_bulk_frames_acked(srv_session_t *s, struct srv_bulk_conn *c, uint64_t n) {
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
  srv_bulk_frames_free(s, done);
  return ok;
}

/* Queues data (its reference taken) as frame seq on s's connection c,
 * a RECEIPT if receipt: the connection's number, or 0 when c takes no
 * more frames (data still the caller's). */
static uint32_t queue_frame(srv_session_t *s, struct srv_bulk_conn *c, uint64_t seq, grpc_slice data, int shown,
                            int receipt) {
  bulk_frame_t *f = malloc(sizeof *f);
  if (!f) return 0;
  *f = (bulk_frame_t){.seq = seq, .shown = shown, .queued = 1, .receipt = receipt, .data = data};
  size_t len = GRPC_SLICE_LENGTH(data);
  srv_inflight_add(s, len);
  pthread_mutex_lock(&c->mu);
  uint32_t ok = !c->closing && !c->failed && !c->retire ? c->conn : 0;
  f->conn = ok;
  if (ok && receipt && c->cursor) { /* the next to go: not behind Read frames (the client copies what waits) */
    bulk_frame_t **pp = &c->head;
    while (*pp != c->cursor) pp = &(*pp)->next;
    f->next = c->cursor;
    *pp = f;
    c->cursor = f;
    pthread_cond_signal(&c->cv);
  } else if (ok) {
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

uint32_t srv_bulk_queue_frame(srv_session_t *s, struct srv_bulk_conn *c, uint64_t seq, grpc_slice data, int shown) {
  return queue_frame(s, c, seq, data, shown, 0);
}

void srv_bulk_receipt(srv_session_t *s, struct srv_bulk_conn *c) {
  pthread_mutex_lock(&c->mu);
  int due = !c->receipt_queued && c->data_in > c->data_told;
  if (due) c->receipt_queued = 1;
  pthread_mutex_unlock(&c->mu);
  if (!due) return;
  grpc_slice sl = grpc_slice_malloc(RDEV_WIRE_BULK_HEADER); /* filled in as it goes */
  if (queue_frame(s, c, 0, sl, 0, 1)) return;
  grpc_slice_unref(sl);
  pthread_mutex_lock(&c->mu);
  c->receipt_queued = 0; /* no connection takes it: the next answer carries the count */
  pthread_mutex_unlock(&c->mu);
}

int srv_bulk_send(srv_session_t *s, uint64_t seq, grpc_slice data, int shown) {
  pthread_mutex_lock(&s->mu);
  struct srv_bulk_conn *c = s->bulk;
  pthread_mutex_unlock(&s->mu);
  uint32_t conn = c ? srv_bulk_queue_frame(s, c, seq, data, shown) : 0;
  if (!conn) return 0;
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  r.bulk = true;
  r.bulk_conn = conn;
  srv_send_reply(s, &r, NULL);
  return 1;
}

bulk_frame_t *srv_bulk_frames_again_locked(struct srv_bulk_conn *c) {
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
  return control;
}

void srv_send_read(srv_session_t *s, uint64_t seq, grpc_slice data, int flags) {
  if (!(flags & SRV_READ_BULK) || !srv_bulk_send(s, seq, data, (flags & SRV_READ_SHOWN) != 0))
    srv_send_data(s, seq, data);
}
