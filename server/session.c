/*
 * server/session.c — one Session call: the lifecycle of a client's session
 * and its request handlers.
 *
 * Lifecycle. A session holds one reference for its RECV_CLOSE_ON_SERVER
 * batch (which completes last, on a normal end or a cancel) and one for each
 * outstanding batch and each runtime callback that may still reply. One
 * RECV_MESSAGE is outstanding at a time, so a session's requests are handled
 * in order, one after another; after a small request the next one is posted
 * late (see DEFER_RECV_BELOW), the receive's reference kept meanwhile.
 * Replies go through a FIFO send queue with at most one SEND_MESSAGE
 * outstanding (gRPC's rule). When the client
 * half-closes, or the call is cancelled (client crash, network loss,
 * deadline, server drain), everything the session made is released: streams
 * are force-destroyed (queued work discarded, their callbacks run with
 * RDEV_CANCELLED), events destroyed, buffers freed.
 *
 * Backpressure. `inflight` counts bytes the session holds on the server:
 * async Write payloads until the device copied them, Read staging and
 * every queued reply until gRPC sent it. While it is at or over
 * cfg.max_inflight the session stops reading requests; gRPC flow control
 * then stops the client. So neither a client that sends without reading nor
 * a slow reader can grow the server's memory past about max_inflight plus
 * one message per session (a batch may ask for RDEV_WIRE_MAX_BATCH_XFER).
 * Likewise a session whose device stream has half its queue depth of tasks
 * waiting stops being read until the stream worked that off, so a
 * completion-queue thread never blocks on a full stream.
 *
 * Device work never blocks a completion-queue thread on the device: stream
 * and event synchronization, stream destruction and async reads complete
 * from host callbacks queued on the device streams, which send the reply.
 * (A stream synchronize first watches a busy stream for up to
 * SYNC_WATCH_NS, so that a small kernel's synchronize is answered at once.)
 *
 * Zero-copy Reads. Where the device shows its memory to the host (the sim
 * backend), Read replies carry device memory itself, pinned until gRPC lets
 * go (pin_t): a buffer the client frees meanwhile goes back only after
 * (mem_t; an async Read counts from when it is queued), other buffers at
 * once. An async Read is sent when its stream reaches it, and work queued
 * on the stream after it first waits for those replies to have left
 * (views_t, fence_cb), so that what they show cannot change under them:
 * the copy is complete, as a CANN D2H copy is, before the stream moves on.
 * The wait depends on the client reading, so the completion-queue thread
 * never waits for a stream that may hold one, and a session's end first
 * makes every stream discard its queue, then lets the fences go.
 * A synchronous Read's reply shows device memory as well: a later request
 * of the session that may change a buffer such a reply shows (Write,
 * Memset, Copy, Launch) waits until gRPC let go of the session's
 * synchronous Read replies (must_wait). Handling, and receiving, pause
 * before it, even mid-batch; the server's resumer thread handles the
 * message's rest once they left (pause_message).
 * The client's synchronous copies rarely wait: they return once every
 * reply arrived, by which time gRPC has mostly let go.
 */
#define _GNU_SOURCE
#include <grpc/support/alloc.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "srv.h"

typedef struct reply_node {
  struct reply_node *next;
  grpc_byte_buffer *bb;
  size_t bytes;
} reply_node_t;

typedef struct dead_stream { /* destroyed by the client, waiting for its queued work */
  struct dead_stream *next;
  rdev_rt_stream_t *st;
} dead_stream_t;

/* Where handling of one received message stands: a batch may hold at most
 * RDEV_WIRE_MAX_BATCH requests, and the message move at most
 * RDEV_WIRE_MAX_BATCH_XFER bytes of Read and Write data in all, which
 * bounds what one message may add to the session's inflight bytes
 * (backpressure acts between messages). A message whose handling paused
 * (must_wait) resumes past the requests it handled (walk.skip). */
typedef struct {
  srv_session_t *s;
  int count;   /* batch requests run so far (the limits) */
  size_t xfer; /* the Read and Write bytes of the requests run so far */
  rdev_wire_walk_t walk;
} batch_t;

struct srv_session {
  srv_t *srv;
  grpc_call *call;
  uint64_t id;
  srv_tenant_t *tenant; /* who it is: quotas, devices */
  char *peer;
  gpr_timespec deadline; /* the call's */
  const char *end_why;   /* why the server ends it (tenant removed, drain): mu */
  size_t buffers_freed;  /* by its release: mu */
  /* Its caps: the tenant's in tenants mode; its own in open mode, where
   * every session is the tenant "anonymous" (own_caps). */
  int own_caps;
  uint32_t group;          /* its scheduling group on the devices */
  atomic_int *dev_streams; /* own_caps: its streams per device */
  size_t max_inflight;
  atomic_int refs;
  srv_session_t *prev, *next; /* srv->sessions */

  pthread_mutex_t req_mu; /* request handling vs release: handles, streams below */
  srv_handles_t handles;
  rdev_rt_stream_t **sync_streams; /* per device, for EventSync; lazily made */
  dead_stream_t *dead;

  pthread_mutex_t mu; /* from here to `pins` */
  srv_op_t start_op, recv_op, send_op, status_op, close_op;
  grpc_byte_buffer *recv_bb;
  grpc_metadata_array recv_md;
  int cancelled; /* written by gRPC for close_op */
  reply_node_t *sq_head, *sq_tail;
  int send_busy, recv_paused, half_closed, released, status_started, broken;
  int streams_full; /* streams at half depth, each with a room_cb queued */
  size_t inflight;
  char *held;       /* kernel print output not sent yet (at most HOLD_MAX) */
  size_t held_len, held_cap;
  struct pins *pins; /* zero-copy replies gRPC still holds */
  struct srv_views *sync_views; /* of them, synchronous Reads' (lazily made; req_mu) */
  grpc_byte_buffer *paused;     /* a message whose handling paused, and where (pause_message) */
  batch_t paused_at;
  srv_session_t *paused_next;   /* srv->paused, under srv->paused_mu */
  srv_session_t *defer_next; /* not under mu: its CQ thread's deferred list */
  /* In-process sessions (call == NULL): replies go to local_fn, and
   * local_ready says the session takes its next message (mu). */
  srv_reply_fn local_fn;
  void *local_user;
  int local_ready;
  pthread_cond_t local_cv;
};

/* The zero-copy Read replies of a session that gRPC still holds, and the
 * lock and condition their views_t counts use. Apart from the session:
 * gRPC may keep a reply's slice until the call is destroyed, which is at
 * the session's end, so a slice must not keep the session; this outlives
 * it if need be. Its own lock: gRPC may let go of a slice inside a call we
 * make with s->mu held. */
typedef struct pins {
  pthread_mutex_t mu;
  pthread_cond_t cv;            /* a views_t's n dropped to 0, or closing was set */
  srv_t *srv;                   /* srv->pinned counts slices server-wide */
  int n;       /* slices held */
  int orphan;  /* the session is gone: the last slice frees this */
  int closing; /* the session is being released: fences stop waiting */
} pins_t;

/* Zero-copy Read replies that gRPC still holds, of one stream (its async
 * Reads) or of the session (its synchronous ones), each also counted in
 * the session's pins_t. Counts under pins->mu; freed with the last of its
 * references: its owner's (the stream's handle entry, or the session),
 * each slice, each queued read or fence. */
typedef struct srv_views {
  pins_t *pins;
  int n;        /* slices held */
  int refs;
  int unfenced; /* reads queued since the last fence: req_mu */
  int resume;   /* a paused message waits for n to drop to 0 */
} views_t;

/* A buffer's device memory, given back once nothing may still touch it:
 * `refs` counts its handle entry until the client frees it (or the session
 * ends), each stream with work queued before that free, each zero-copy
 * reply that shows it and each async Read queued to make one. So nothing
 * of this session touches memory handed on to another. */
typedef struct srv_mem {
  rdev_rt_t *rt;
  void *ptr;
  srv_tenant_t *tenant;
  int dev;
  size_t reserved; /* charged to the tenant */
  atomic_int refs;
  int shown;       /* synchronous Read replies gRPC holds that show it: pins->mu */
} mem_t;

static mem_t *mem_ref(mem_t *m) {
  atomic_fetch_add(&m->refs, 1);
  return m;
}

static void mem_unref(mem_t *m) {
  if (atomic_fetch_sub(&m->refs, 1) != 1) return;
  rdev_rt_free(m->rt, m->ptr);
  srv_tenant_give(m->tenant, SRV_Q_MEMORY, m->dev, m->reserved);
  free(m);
}

/* Kernel print output waits for the session's next reply and rides in it
 * (CANN shows device printf output at synchronization); this much at most,
 * past which it goes out at once as a PRINT reply. */
#define HOLD_MAX ((size_t)64 << 10)

static void session_unref(srv_session_t *s);
static void pins_orphan(struct pins *p);
static void resumer_wake(srv_t *srv);

/* ---- references, sending, receiving --------------------------------------- */

static void session_ref(srv_session_t *s) { atomic_fetch_add(&s->refs, 1); }

static void start_batch(srv_session_t *s, const grpc_op *ops, size_t n, srv_op_t *tag) {
  session_ref(s);
  RDEV_HANDOFF_GIVE(tag);
  grpc_call_error e = grpc_call_start_batch(s->call, ops, n, tag, NULL);
  if (e != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "session %llu: start_batch failed (%d)", (unsigned long long)s->id, e);
    atomic_fetch_sub(&s->refs, 1); /* the close batch still holds one: never the last */
  }
}

/* mu held. An in-process session is ready for its next message instead. */
static void post_recv(srv_session_t *s) {
  if (!s->call) {
    s->local_ready = 1;
    pthread_cond_broadcast(&s->local_cv);
    return;
  }
  grpc_op op = {.op = GRPC_OP_RECV_MESSAGE};
  op.data.recv_message.recv_message = &s->recv_bb;
  start_batch(s, &op, 1, &s->recv_op);
}

/* mu held */
static void start_send(srv_session_t *s) {
  grpc_op op = {.op = GRPC_OP_SEND_MESSAGE};
  op.data.send_message.send_message = s->sq_head->bb;
  s->send_busy = 1;
  start_batch(s, &op, 1, &s->send_op);
}

/* mu held: after the client half-closed and resources are released, once the
 * queued replies are out, end the call with OK. */
static void maybe_send_status(srv_session_t *s) {
  if (!s->call || !s->half_closed || !s->released || s->send_busy || s->status_started || s->broken) return;
  s->status_started = 1;
  grpc_op op = {.op = GRPC_OP_SEND_STATUS_FROM_SERVER};
  op.data.send_status_from_server.status = GRPC_STATUS_OK;
  start_batch(s, &op, 1, &s->status_op);
}

/* mu held */
static void maybe_resume_recv(srv_session_t *s) {
  if (s->recv_paused && s->inflight < s->max_inflight && !s->streams_full && !s->released &&
      !s->half_closed) {
    s->recv_paused = 0;
    post_recv(s);
  }
}

static void inflight_add(srv_session_t *s, size_t n) {
  pthread_mutex_lock(&s->mu);
  s->inflight += n;
  pthread_mutex_unlock(&s->mu);
}

static void inflight_sub(srv_session_t *s, size_t n) {
  pthread_mutex_lock(&s->mu);
  s->inflight -= n;
  maybe_resume_recv(s);
  pthread_mutex_unlock(&s->mu);
}

/* Reply.print from a (pointer, length) pair. */
typedef struct {
  const char *text;
  size_t len;
} text_t;

static bool encode_text(pb_ostream_t *os, const pb_field_t *f, void *const *arg) {
  const text_t *t = *arg;
  return pb_encode_tag_for_field(os, f) && pb_encode_string(os, (const pb_byte_t *)t->text, t->len);
}

/* Encodes r with an optional payload and queues it to be sent; it counts
 * toward inflight until sent. Held print output rides along in r.print.
 * Dropped once the call is ending. r.message is made valid UTF-8 here (it
 * may quote what a client sent, or be cut inside a character); held print
 * output was made so when it was held. */
static void send_reply(srv_session_t *s, rdev_v1_Reply *r, const grpc_slice *payload) {
  reply_node_t *n = malloc(sizeof *n);
  rdev_wire_utf8_fix(r->message, strlen(r->message));
  pthread_mutex_lock(&s->mu);
  if (!n || s->status_started || s->broken || s->cancelled) {
    pthread_mutex_unlock(&s->mu);
    free(n);
    return;
  }
  text_t held = {s->held, r->print.funcs.encode ? 0 : s->held_len};
  if (held.len) {
    r->print.funcs.encode = encode_text;
    r->print.arg = &held;
  }
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Reply_fields, r, payload);
  if (!bb) {
    pthread_mutex_unlock(&s->mu);
    free(n);
    srv_log(SRV_LOG_ERROR, "session %llu: cannot encode a reply", (unsigned long long)s->id);
    return;
  }
  s->held_len = 0;
  if (!s->call) { /* in-process: handed over, in the order encoded */
    s->local_fn(s->local_user, bb);
    pthread_mutex_unlock(&s->mu);
    free(n);
    return;
  }
  n->next = NULL;
  n->bb = bb;
  n->bytes = 64 + grpc_byte_buffer_length(bb); /* what it holds, payload and print included */
  if (s->sq_tail)
    s->sq_tail->next = n;
  else
    s->sq_head = n;
  s->sq_tail = n;
  s->inflight += n->bytes;
  if (!s->send_busy) start_send(s);
  pthread_mutex_unlock(&s->mu);
}

/* mu held: forget unsent replies (the call is broken or cancelled). */
static void drop_queue(srv_session_t *s) {
  reply_node_t *n = s->send_busy ? s->sq_head->next : s->sq_head;
  if (s->send_busy)
    s->sq_head->next = NULL, s->sq_tail = s->sq_head;
  else
    s->sq_head = s->sq_tail = NULL;
  while (n) {
    reply_node_t *next = n->next;
    s->inflight -= n->bytes;
    grpc_byte_buffer_destroy(n->bb);
    free(n);
    n = next;
  }
}

static void send_status(srv_session_t *s, uint64_t seq, uint64_t stream, int status, const char *msg) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  r.status = status;
  r.stream = stream;
  snprintf(r.message, sizeof r.message, "%s", msg ? msg : "");
  send_reply(s, &r, NULL);
}

/* ---- release ---------------------------------------------------------------- */

/* Gives back a stream s had on device dev: to the tenant's quota and cap,
 * and in open mode to the session's own cap (streams_take). */
static void streams_give(srv_session_t *s, int dev) {
  if (s->own_caps) atomic_fetch_sub(&s->dev_streams[dev], 1);
  srv_tenant_give(s->tenant, SRV_Q_STREAMS, dev, 1);
}

static void views_unref(views_t *v);

static void abort_stream_entry(srv_handle_t *e, void *arg) {
  (void)arg;
  rdev_rt_stream_abort(e->ptr);
}

static void destroy_stream_entry(srv_handle_t *e, void *arg) {
  rdev_rt_stream_destroy_force(e->ptr);
  if (e->views) views_unref(e->views);
  streams_give(arg, e->dev);
}
static void destroy_event_entry(srv_handle_t *e, void *arg) {
  (void)arg;
  rdev_rt_event_destroy(e->ptr);
}
static void release_buffer(srv_session_t *s, const srv_handle_t *e);

static void free_buffer_entry(srv_handle_t *e, void *arg) { release_buffer(arg, e); }

/* Releases everything the session made; the first caller does it. Streams go
 * first, so that no queued work still uses the buffers freed after them.
 * Why the session ended is known only once its call ended (on_close):
 * the audit line waits for it (session_closed). */
static void session_release(srv_session_t *s) {
  pthread_mutex_lock(&s->req_mu);
  pthread_mutex_lock(&s->mu);
  int already = s->released;
  s->released = 1;
  pthread_mutex_unlock(&s->mu);
  if (already) {
    pthread_mutex_unlock(&s->req_mu);
    return;
  }
  srv_handles_t h = s->handles;
  memset(&s->handles, 0, sizeof s->handles);
  dead_stream_t *dead = s->dead;
  s->dead = NULL;
  pthread_mutex_unlock(&s->req_mu);

  size_t nbuf = 0;
  for (size_t i = 0; i < h.cap; i++) nbuf += h.slots[i].h > 1 && h.slots[i].type == SRV_H_BUF;
  /* A fence must not hold up the streams' end (its replies may never
   * leave), nor let work behind it run: every stream discards its queue
   * before any fence lets go. */
  srv_handles_each(&h, SRV_H_STREAM, abort_stream_entry, NULL);
  for (dead_stream_t *d = dead; d; d = d->next) rdev_rt_stream_abort(d->st);
  pthread_mutex_lock(&s->pins->mu);
  s->pins->closing = 1;
  pthread_cond_broadcast(&s->pins->cv);
  pthread_mutex_unlock(&s->pins->mu);
  resumer_wake(s->srv); /* a paused message of the session goes on, to nothing */
  srv_handles_each(&h, SRV_H_STREAM, destroy_stream_entry, s);
  while (dead) {
    dead_stream_t *n = dead->next;
    rdev_rt_stream_destroy_force(dead->st);
    free(dead);
    dead = n;
  }
  int ndev = 0;
  rdev_rt_device_count(s->srv->rt, &ndev);
  for (int d = 0; d < ndev; d++)
    if (s->sync_streams[d]) {
      rdev_rt_stream_destroy_force(s->sync_streams[d]);
      streams_give(s, d);
    }
  srv_handles_each(&h, SRV_H_EVENT, destroy_event_entry, NULL);
  srv_handles_each(&h, SRV_H_BUF, free_buffer_entry, s);
  srv_handles_free(&h);
  pthread_mutex_lock(&s->mu);
  s->buffers_freed = nbuf;
  pthread_mutex_unlock(&s->mu);
}

/* The audit line of a session that ended, for why. */
static void session_closed(srv_session_t *s, const char *why) {
  pthread_mutex_lock(&s->mu);
  size_t nbuf = s->buffers_freed;
  pthread_mutex_unlock(&s->mu);
  srv_log(SRV_LOG_INFO, "audit: session closed: tenant=%s peer=%s session=%llu reason=%s buffers_freed=%zu",
          s->tenant->name, s->peer ? s->peer : "in-process", (unsigned long long)s->id, why, nbuf);
}

/* Why a call that ended without the client's half-close ended: what the
 * server said when it ended it, else its deadline if passed, else the
 * client cancelled (or vanished). */
static const char *end_reason(srv_session_t *s) {
  pthread_mutex_lock(&s->mu);
  const char *why = s->end_why;
  pthread_mutex_unlock(&s->mu);
  if (why) return why;
  if (gpr_time_cmp(gpr_now(s->deadline.clock_type), s->deadline) >= 0) return "deadline";
  return "cancelled";
}

/* The server ends s (its lock order: srv->mu may be held). */
static void session_end(srv_session_t *s, const char *why, grpc_status_code code, const char *details) {
  pthread_mutex_lock(&s->mu);
  if (!s->end_why) s->end_why = why;
  pthread_mutex_unlock(&s->mu);
  if (s->call) grpc_call_cancel_with_status(s->call, code, details, NULL);
}

/* ---- completion handlers ------------------------------------------------------ */

static int handle_message(srv_session_t *s, grpc_byte_buffer *bb, batch_t *b);

static void on_start(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, start_op));
  (void)ok;
  session_unref(s);
}

/* After a small request the session's next receive is posted only once its
 * completion-queue thread has no event ready (srv_sessions_post_deferred).
 * gRPC 1.51 answers a receive posted after consumed data with a
 * WINDOW_UPDATE of its own: a write, and a wake-up of the client, that sat
 * between a request and the next one already on its way (a launch and its
 * synchronize: 13 us of 72 in a trace). Posted late, the next request is
 * usually in already and the update rides with the reply. After a bulk
 * Write it is posted at once: deferring it cost sync H2D 5%. */
#define DEFER_RECV_BELOW ((size_t)64 << 10)
static _Thread_local srv_session_t *t_deferred;

/* mu held: the next receive, unless the session holds too much (reading
 * pauses until it drained) or is ending. */
static void post_next_recv(srv_session_t *s) {
  if (s->released || s->half_closed) return;
  if (s->inflight >= s->max_inflight || s->streams_full)
    s->recv_paused = 1;
  else
    post_recv(s);
}

static void on_recv(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, recv_op));
  grpc_byte_buffer *bb = s->recv_bb;
  s->recv_bb = NULL;
  if (!ok || !bb) { /* client half-closed, or the call is gone */
    if (bb) grpc_byte_buffer_destroy(bb);
    pthread_mutex_lock(&s->mu);
    s->half_closed = 1;
    pthread_mutex_unlock(&s->mu);
    session_release(s);
    pthread_mutex_lock(&s->mu);
    maybe_send_status(s);
    pthread_mutex_unlock(&s->mu);
    session_unref(s);
    return;
  }
  size_t len = grpc_byte_buffer_length(bb);
  batch_t b = {.s = s};
  if (handle_message(s, bb, &b)) { /* paused: the resumer goes on, and receives next */
    session_unref(s);
    return;
  }
  grpc_byte_buffer_destroy(bb);
  if (len < DEFER_RECV_BELOW) { /* the recv batch's reference stays until then */
    s->defer_next = t_deferred;
    t_deferred = s;
    return;
  }
  pthread_mutex_lock(&s->mu);
  post_next_recv(s);
  pthread_mutex_unlock(&s->mu);
  session_unref(s);
}

void srv_sessions_post_deferred(void) {
  while (t_deferred) {
    srv_session_t *s = t_deferred;
    t_deferred = s->defer_next;
    pthread_mutex_lock(&s->mu);
    post_next_recv(s);
    pthread_mutex_unlock(&s->mu);
    session_unref(s);
  }
}

static void on_send(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, send_op));
  pthread_mutex_lock(&s->mu);
  reply_node_t *n = s->sq_head;
  s->sq_head = n->next;
  if (!s->sq_head) s->sq_tail = NULL;
  s->inflight -= n->bytes;
  s->send_busy = 0;
  if (!ok) {
    s->broken = 1;
    drop_queue(s);
  } else if (s->sq_head) {
    start_send(s);
  }
  maybe_send_status(s);
  maybe_resume_recv(s);
  pthread_mutex_unlock(&s->mu);
  grpc_byte_buffer_destroy(n->bb);
  free(n);
  session_unref(s);
}

static void on_status(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, status_op));
  (void)ok;
  session_unref(s);
}

static void on_close(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, close_op));
  (void)ok;
  if (s->cancelled) session_release(s);
  session_closed(s, s->cancelled ? end_reason(s) : "closed by client");
  pthread_mutex_lock(&s->mu);
  s->broken = 1;
  drop_queue(s);
  pthread_mutex_unlock(&s->mu);
  session_unref(s);
}

static void session_unref(srv_session_t *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  srv_t *srv = s->srv;
  pthread_mutex_lock(&srv->mu);
  if (s->prev) s->prev->next = s->next;
  else srv->sessions = s->next;
  if (s->next) s->next->prev = s->prev;
  srv->nsessions--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
  srv_tenant_give(s->tenant, SRV_Q_SESSIONS, 0, 1);
  if (s->call) grpc_call_unref(s->call);
  grpc_metadata_array_destroy(&s->recv_md);
  srv_handles_free(&s->handles);
  if (s->sync_views) views_unref(s->sync_views);
  free(s->sync_streams);
  free(s->dev_streams);
  free(s->held);
  if (s->peer) gpr_free(s->peer);
  pthread_cond_destroy(&s->local_cv);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->req_mu);
  pins_orphan(s->pins);
  free(s);
}

/* The "accepted" mark and the server's batch limit: constant, shared. */
static grpc_metadata open_md[2];
static char batch_xfer_str[24];

static void open_md_init(void) {
  snprintf(batch_xfer_str, sizeof batch_xfer_str, "%u", RDEV_WIRE_MAX_BATCH_XFER);
  open_md[0].key = grpc_slice_from_static_string(RDEV_WIRE_SESSION_OPEN_KEY);
  open_md[0].value = grpc_slice_from_static_string("open");
  open_md[1].key = grpc_slice_from_static_string(RDEV_WIRE_BATCH_XFER_KEY);
  open_md[1].value = grpc_slice_from_static_string(batch_xfer_str);
}

/* A new session of tenant on call (NULL: in-process), holding one
 * reference (the close batch's, or the in-process owner's) and a session
 * of the tenant's quota; NULL with msg when it cannot be opened. */
static srv_session_t *session_new(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                                  char *msg, size_t msglen) {
  char *peer = call ? grpc_call_get_peer(call) : NULL;
  if (srv_tenant_take(tenant, SRV_Q_SESSIONS, 0, 1, peer, msg, msglen) != 0) {
    gpr_free(peer);
    return NULL;
  }
  int ndev = 0;
  rdev_rt_device_count(srv->rt, &ndev);
  srv_session_t *s = calloc(1, sizeof *s);
  rdev_rt_stream_t **ss = calloc((size_t)ndev + 1, sizeof *ss);
  atomic_int *ds = calloc((size_t)ndev + 1, sizeof *ds);
  pins_t *pins = calloc(1, sizeof *pins);
  if (!s || !ss || !ds || !pins) {
    free(s);
    free(ss);
    free(ds);
    free(pins);
    gpr_free(peer);
    srv_tenant_give(tenant, SRV_Q_SESSIONS, 0, 1);
    snprintf(msg, msglen, "out of server memory");
    return NULL;
  }
  s->srv = srv;
  s->call = call;
  s->sync_streams = ss;
  s->pins = pins;
  s->id = atomic_fetch_add(&srv->next_session_id, 1);
  s->tenant = tenant;
  s->deadline = deadline;
  s->dev_streams = ds;
  s->own_caps = !srv->cfg.tenants[0];
  pthread_mutex_lock(&tenant->mu);
  s->max_inflight = tenant->max_inflight < srv->cfg.max_inflight ? tenant->max_inflight : srv->cfg.max_inflight;
  pthread_mutex_unlock(&tenant->mu);
  /* open mode: a group of its own (tenant ids count up from 1, far below) */
  s->group = s->own_caps ? 0x80000000u | (uint32_t)(s->id & 0x7fffffff) : tenant->id;
  s->peer = peer;
  atomic_init(&s->refs, 1);
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->req_mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->local_cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&s->pins->mu, NULL);
  pthread_cond_init(&s->pins->cv, NULL);
  s->pins->srv = srv;
  grpc_metadata_array_init(&s->recv_md);
  s->start_op.done = on_start;
  s->recv_op.done = on_recv;
  s->send_op.done = on_send;
  s->status_op.done = on_status;
  s->close_op.done = on_close;
  pthread_mutex_lock(&srv->mu);
  srv->nsessions++;
  s->next = srv->sessions;
  if (s->next) s->next->prev = s;
  srv->sessions = s;
  pthread_mutex_lock(&tenant->mu);
  int removed = tenant->removed; /* a reload may have removed it since authentication */
  pthread_mutex_unlock(&tenant->mu);
  srv_log(SRV_LOG_INFO, "audit: session opened: tenant=%s peer=%s session=%llu", s->tenant->name,
          s->peer ? s->peer : "in-process", (unsigned long long)s->id);
  if (removed) session_end(s, "tenant removed", GRPC_STATUS_PERMISSION_DENIED, "tenant removed");
  pthread_mutex_unlock(&srv->mu);
  return s;
}

void srv_session_start(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant) {
  char msg[256];
  srv_session_t *s = session_new(srv, call, deadline, tenant, msg, sizeof msg);
  if (!s) {
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
    return;
  }
  grpc_op close_op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};
  close_op.data.recv_close_on_server.cancelled = &s->cancelled;
  RDEV_HANDOFF_GIVE(&s->close_op);
  if (grpc_call_start_batch(call, &close_op, 1, &s->close_op, NULL) != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "session %llu: cannot watch for close", (unsigned long long)s->id);
  }
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, open_md_init);
  grpc_op start = {.op = GRPC_OP_SEND_INITIAL_METADATA};
  start.data.send_initial_metadata.count = 2;
  start.data.send_initial_metadata.metadata = open_md;
  pthread_mutex_lock(&s->mu);
  start_batch(s, &start, 1, &s->start_op);
  post_recv(s);
  pthread_mutex_unlock(&s->mu);
}

/* ---- in-process sessions --------------------------------------------------------- */

srv_session_t *srv_session_open_local(srv_t *srv, srv_tenant_t *tenant, srv_reply_fn fn, void *user) {
  char msg[256];
  srv_session_t *s = session_new(srv, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), tenant, msg, sizeof msg);
  if (!s) return NULL;
  s->local_fn = fn;
  s->local_user = user;
  s->local_ready = 1;
  return s;
}

int srv_session_feed(srv_session_t *s, grpc_byte_buffer *bb) {
  pthread_mutex_lock(&s->mu);
  int ready = s->local_ready && !s->released;
  s->local_ready = 0;
  pthread_mutex_unlock(&s->mu);
  if (!ready) return -1;
  batch_t b = {.s = s};
  session_ref(s); /* as a receive holds one */
  if (handle_message(s, bb, &b)) {
    session_unref(s);
    return 1;
  }
  grpc_byte_buffer_destroy(bb);
  pthread_mutex_lock(&s->mu);
  post_next_recv(s);
  pthread_mutex_unlock(&s->mu);
  session_unref(s);
  return 0;
}

int srv_session_wait_ready(srv_session_t *s, int timeout_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  while (!s->local_ready && rc == 0) rc = pthread_cond_timedwait(&s->local_cv, &s->mu, &dl);
  int ready = s->local_ready;
  pthread_mutex_unlock(&s->mu);
  return ready ? 0 : -1;
}

void srv_session_close_local(srv_session_t *s) {
  session_release(s);
  session_closed(s, "closed in-process");
  /* What still holds the session (stream callbacks being cancelled, the
   * resumer finishing a paused message) lets go soon after the release. */
  while (atomic_load(&s->refs) > 1) usleep(200);
  session_unref(s);
}

void srv_sessions_end_removed(srv_t *srv) {
  pthread_mutex_lock(&srv->mu);
  for (srv_session_t *s = srv->sessions; s; s = s->next) {
    pthread_mutex_lock(&s->tenant->mu);
    int removed = s->tenant->removed;
    pthread_mutex_unlock(&s->tenant->mu);
    if (removed) session_end(s, "tenant removed", GRPC_STATUS_PERMISSION_DENIED, "tenant removed");
  }
  pthread_mutex_unlock(&srv->mu);
}

void srv_sessions_end_all(srv_t *srv) {
  pthread_mutex_lock(&srv->mu);
  for (srv_session_t *s = srv->sessions; s; s = s->next) {
    pthread_mutex_lock(&s->mu);
    int ending = s->released || s->cancelled;
    pthread_mutex_unlock(&s->mu);
    if (!ending) session_end(s, "drain", GRPC_STATUS_UNAVAILABLE, "server draining");
  }
  pthread_mutex_unlock(&srv->mu);
}

/* ---- request handling ------------------------------------------------------------ */

/* A request being handled: handlers fill `r` and return a status, or
 * SRV_LATER when a runtime callback will answer (or, for async requests,
 * nothing needs to). */
#define SRV_LATER (-1)

typedef struct {
  srv_session_t *s;
  const rdev_v1_Request *q;
  const rdev_wire_request_t *w; /* q as decoded, with the Launch name and arguments */
  rdev_wire_payload_t *data; /* Write payload: references to the received slices */
  rdev_v1_Reply r;
  grpc_slice payload;
  int has_payload;
  uint64_t stream; /* async requests: the stream, named in an error reply (request_stream) */
  rdev_rt_stream_t *used; /* the device stream the request may have queued work on */
} srv_req_t;

static int fail(srv_req_t *x, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(srv_req_t *x, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->r.message, sizeof x->r.message, fmt, ap);
  va_end(ap);
  return code;
}

/* A runtime failure: its own detail. */
static int rt_failed(srv_req_t *x, int rc) { return fail(x, rc, "%s", rdev_rt_last_error()); }

static srv_handle_t *get_handle(srv_req_t *x, uint64_t h, int type) {
  return srv_handles_get(&x->s->handles, h, type);
}

/* Stream handle h's entry in *e. */
static int find_stream(srv_req_t *x, uint64_t h, srv_handle_t **e) {
  *e = get_handle(x, h, SRV_H_STREAM);
  if (!*e) return fail(x, RDEV_INVALID_RESOURCE_HANDLE, "stream 0x%llx is not a stream of this session",
                       (unsigned long long)h);
  x->used = (*e)->ptr;
  return RDEV_OK;
}

static int views_fence(srv_handle_t *e);

/* The stream behind h, in *st, for work the caller queues on it: behind a
 * fence if async view reads went before (views_fence). */
static int get_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st) {
  srv_handle_t *e;
  int rc = find_stream(x, h, &e);
  if (rc) return rc;
  *st = e->ptr;
  return (rc = views_fence(e)) ? rt_failed(x, rc) : RDEV_OK;
}

static int get_event(srv_req_t *x, uint64_t h, srv_handle_t **e) {
  *e = get_handle(x, h, SRV_H_EVENT);
  if (!*e) return fail(x, RDEV_INVALID_RESOURCE_HANDLE, "event 0x%llx is not an event of this session",
                       (unsigned long long)h);
  return RDEV_OK;
}

/* count bytes at offset of buffer h, checked without overflow; *addr gets
 * the device address, *mem (if asked) the buffer's memory. */
static int buf_range(srv_req_t *x, const char *what, uint64_t h, uint64_t off, uint64_t count,
                     char **addr, mem_t **mem) {
  srv_handle_t *e = get_handle(x, h, SRV_H_BUF);
  if (!e) return fail(x, RDEV_INVALID_RESOURCE_HANDLE, "%s: 0x%llx is not a buffer of this session",
                      what, (unsigned long long)h);
  if (off > e->size || count > e->size - off)
    return fail(x, RDEV_INVALID_PARAM, "%s: %llu bytes at offset %llu exceed the %zu-byte buffer", what,
                (unsigned long long)count, (unsigned long long)off, e->size);
  *addr = (char *)e->ptr + off;
  if (mem) *mem = e->mem;
  return RDEV_OK;
}

/* The device behind the tenant's device number `local`, in *dev. A tenant
 * sees only its devices; others do not exist for it. */
static int check_device(srv_req_t *x, int local, int *dev) {
  int n = 0;
  rdev_rt_device_count(x->s->srv->rt, &n);
  *dev = srv_tenant_device(x->s->tenant, n, local);
  if (*dev < 0)
    return fail(x, RDEV_RT_INVALID_DEVICEID, "device %d does not exist (this tenant has %d)", local,
                srv_tenant_device_count(x->s->tenant, n));
  return RDEV_OK;
}

static int check_count(srv_req_t *x, uint64_t count, uint64_t dest_max) {
  if (count > dest_max)
    return fail(x, RDEV_RT_PARAM_INVALID, "count %llu exceeds destMax %llu", (unsigned long long)count,
                (unsigned long long)dest_max);
  return RDEV_OK;
}

#define STREAM_FAILED "asynchronous work on the stream failed"

/* Runtime callbacks that answer later carry this. */
typedef struct {
  srv_session_t *s;
  uint64_t seq;
  rdev_rt_stream_t *st; /* the stream whose errors a sync takes */
  void *buf;            /* async read staging or view / held async Write payload */
  size_t len;
  views_t *views;       /* an async view read: its stream's, one reference; */
  mem_t *mem;           /* its buffer's memory, one reference; */
  struct pin *pin;      /* and what its reply's slice will hold */
} cb_ctx_t;

static cb_ctx_t *cb_new(srv_session_t *s, uint64_t seq, rdev_rt_stream_t *st, void *buf, size_t len) {
  cb_ctx_t *c = malloc(sizeof *c);
  if (!c) return NULL;
  session_ref(s);
  *c = (cb_ctx_t){s, seq, st, buf, len, NULL, NULL, NULL};
  return c;
}

static void cb_done(cb_ctx_t *c) {
  if (c->views) views_unref(c->views);
  if (c->mem) mem_unref(c->mem);
  free(c->pin);
  session_unref(c->s);
  free(c);
}

/* Queues fn(c) on st; on failure releases c and returns the error. */
static int queue_callback(srv_req_t *x, rdev_rt_stream_t *st, rdev_rt_host_fn fn, cb_ctx_t *c) {
  if (!c) return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  int rc = rdev_rt_launch_callback(st, fn, c);
  if (rc != RDEV_OK) {
    cb_done(c);
    return rt_failed(x, rc);
  }
  return SRV_LATER;
}

/* StreamSync, StreamDestroy and EventSync answer here, in stream order. */
static void sync_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    int err = c->st ? rdev_rt_stream_take_error(c->st) : RDEV_OK;
    send_status(c->s, c->seq, 0, err, err ? STREAM_FAILED : "");
  }
  cb_done(c);
}

/* An async Write's payload, held until the device copied it: the request's
 * references to the received slices and the gather list over them, or,
 * below HOLD_COPY_BELOW, a copy of its own behind a one-piece list (a
 * reference keeps gRPC's whole read buffer, which inflight would not
 * count). The list points into this copy of the slices, never the
 * request's: a short slice keeps its bytes inline, in the grpc_slice. */
#define HOLD_COPY_BELOW ((size_t)64 << 10)
typedef struct {
  rdev_wire_payload_t data; /* no parts when copied */
  int niov;
  rdev_rt_iov_t iov[]; /* niov pieces; a copy's bytes follow them */
} held_write_t;

static held_write_t *held_write_new(rdev_wire_payload_t *p) {
  int copy = p->len < HOLD_COPY_BELOW, niov = copy ? 1 : p->nparts;
  held_write_t *h = malloc(sizeof *h + (size_t)niov * sizeof h->iov[0] + (copy ? p->len : 0));
  if (!h) return NULL;
  h->niov = niov;
  if (copy) {
    char *c = (char *)&h->iov[1];
    h->data.nparts = 0;
    h->iov[0] = (rdev_rt_iov_t){c, p->len};
    for (int i = 0; i < p->nparts; c += GRPC_SLICE_LENGTH(p->parts[i]), i++)
      memcpy(c, GRPC_SLICE_START_PTR(p->parts[i]), GRPC_SLICE_LENGTH(p->parts[i]));
    return h;
  }
  h->data = *p; /* the references move here */
  p->nparts = 0;
  for (int i = 0; i < niov; i++)
    h->iov[i] = (rdev_rt_iov_t){GRPC_SLICE_START_PTR(h->data.parts[i]), GRPC_SLICE_LENGTH(h->data.parts[i])};
  return h;
}

static void held_write_free(held_write_t *h) {
  rdev_wire_payload_release(&h->data);
  free(h);
}

static void write_done_cb(void *user, int status) {
  cb_ctx_t *c = user;
  (void)status;
  held_write_free(c->buf);
  inflight_sub(c->s, c->len);
  cb_done(c);
}

/* A Read's answer: data, whose reference it takes. */
static void send_data(srv_session_t *s, uint64_t seq, grpc_slice data) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  send_reply(s, &r, &data);
  grpc_slice_unref(data);
}

/* Sends an async Read's data once the device copied it to staging. */
static void read_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) send_data(c->s, c->seq, srv_buf_slice(c->buf, c->len));
  else srv_buf_put(c->buf);
  inflight_sub(c->s, c->len);
  cb_done(c);
}

static void mem_unref_cb(void *user, int status) {
  (void)status;
  mem_unref(user);
}

/* A buffer freed now must outlast the work queued on st so far. */
static void defer_on(mem_t *m, rdev_rt_stream_t *st) {
  int done = 1;
  if (rdev_rt_stream_query(st, &done) == RDEV_OK && !done) {
    mem_ref(m);
    if (rdev_rt_launch_callback(st, mem_unref_cb, m) != RDEV_OK) mem_unref(m);
  }
}

static void defer_on_entry(srv_handle_t *e, void *arg) { defer_on(arg, e->ptr); }

/* ---- handlers ------------------------------------------------------------------ */

/* Memory is charged to the tenant at the size the device really reserves,
 * and zeroed before the tenant can read it: nothing another tenant left in
 * it is ever visible. */
static int op_malloc(srv_req_t *x) {
  const rdev_v1_Malloc *m = &x->q->op.malloc;
  srv_tenant_t *t = x->s->tenant;
  void *p = NULL;
  int dev, rc = check_device(x, m->device, &dev);
  if (rc) return rc;
  size_t size = (size_t)m->size, reserved = rdev_rt_mem_reserved_size(size);
  if (size && !reserved) return fail(x, RDEV_RT_DEVICE_OOM, "size %zu overflows", size);
  mem_t *mem = malloc(sizeof *mem);
  if (!mem) return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  if (reserved && srv_tenant_take(t, SRV_Q_MEMORY, dev, reserved, x->s->peer, x->r.message, sizeof x->r.message)) {
    free(mem);
    return RDEV_QUOTA_EXCEEDED;
  }
  rc = rdev_rt_malloc(x->s->srv->rt, dev, &p, size, (rdev_mem_policy_t)m->policy);
  if (!rc) rc = rdev_rt_memset(x->s->srv->rt, p, size, 0, size);
  uint64_t h = rc ? 0 : srv_handles_add(&x->s->handles, SRV_H_BUF, dev, p, size);
  if (!h) {
    rc = rc ? rt_failed(x, rc) : fail(x, RDEV_BAD_ALLOC, "out of server memory");
    if (reserved) srv_tenant_give(t, SRV_Q_MEMORY, dev, reserved);
    if (p) rdev_rt_free(x->s->srv->rt, p);
    free(mem);
    return rc;
  }
  mem->rt = x->s->srv->rt;
  mem->ptr = p;
  mem->tenant = t;
  mem->dev = dev;
  mem->reserved = reserved;
  atomic_init(&mem->refs, 1); /* the handle entry's */
  mem->shown = 0;
  srv_handles_get(&x->s->handles, h, SRV_H_BUF)->mem = mem;
  x->r.handle = h;
  return RDEV_OK;
}

/* Gives buffer entry e back: its memory goes once every stream of the
 * session has passed the work queued so far and no zero-copy reply shows
 * it any more (mem_t). req_mu held or the session released. */
static void release_buffer(srv_session_t *s, const srv_handle_t *e) {
  srv_handles_each(&s->handles, SRV_H_STREAM, defer_on_entry, e->mem);
  for (dead_stream_t *ds = s->dead; ds; ds = ds->next) defer_on(e->mem, ds->st);
  mem_unref(e->mem);
}

static void pins_free(pins_t *p) {
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* The session ends: its pins go with its last slice (or now). */
static void pins_orphan(pins_t *p) {
  pthread_mutex_lock(&p->mu);
  p->orphan = 1;
  int done = p->n == 0;
  pthread_mutex_unlock(&p->mu);
  if (done) pins_free(p);
}

/* What a zero-copy reply's slice holds until gRPC lets go of it: a count
 * in its views (v->n: fences and paused messages wait for it), and a reference
 * to the memory it shows. */
typedef struct pin {
  views_t *v;
  mem_t *mem;
  int sync; /* a synchronous Read's: counts in mem->shown too */
} pin_t;

/* gRPC let go of a zero-copy reply's slice. */
static void unpin(void *user) {
  pin_t *pin = user;
  RDEV_HANDOFF_TAKE(pin);
  views_t *v = pin->v;
  pins_t *p = v->pins;
  srv_t *srv = p->srv;
  pthread_mutex_lock(&p->mu);
  pin->mem->shown -= pin->sync;
  int wake = 0;
  if (--v->n == 0) {
    pthread_cond_broadcast(&p->cv); /* fences */
    wake = v->resume;
  }
  int gone = --v->refs == 0;
  int done = --p->n == 0 && p->orphan;
  pthread_mutex_unlock(&p->mu);
  mem_unref(pin->mem);
  free(pin);
  if (gone) free(v);
  if (done) pins_free(p);
  if (wake) resumer_wake(srv);
  atomic_fetch_sub(&srv->pinned, 1);
}

/* A zero-copy reply's slice over len bytes of device memory at view, of
 * buffer memory mem, counted in v (its stream's, or the session's
 * synchronous Reads' when sync): that memory is not given back, nor changed
 * by work that waits for v (or, when sync, for mem->shown), until gRPC let
 * go of it. pin: allocated by the caller, it goes with the slice. */
static grpc_slice pinned_slice(pin_t *pin, views_t *v, mem_t *mem, int sync, const void *view, size_t len) {
  pin->v = v;
  pin->mem = mem_ref(mem);
  pin->sync = sync;
  pthread_mutex_lock(&v->pins->mu);
  mem->shown += sync;
  v->pins->n++;
  v->n++;
  v->refs++;
  pthread_mutex_unlock(&v->pins->mu);
  atomic_fetch_add(&v->pins->srv->pinned, 1);
  RDEV_HANDOFF_GIVE(pin); /* gRPC lets go of it, maybe on another thread */
  return grpc_slice_new_with_user_data((void *)view, len, unpin, pin);
}

static views_t *views_new(pins_t *p) {
  views_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->pins = p;
  v->refs = 1; /* its owner's */
  return v;
}

static views_t *views_ref(views_t *v) {
  pthread_mutex_lock(&v->pins->mu);
  v->refs++;
  pthread_mutex_unlock(&v->pins->mu);
  return v;
}

static void views_unref(views_t *v) {
  pthread_mutex_lock(&v->pins->mu);
  int gone = --v->refs == 0;
  pthread_mutex_unlock(&v->pins->mu);
  if (gone) free(v);
}

/* On the stream: waits until the replies of the async view reads queued
 * before it left (or the session is being released). */
static void fence_cb(void *user, int status) {
  views_t *v = user;
  pins_t *p = v->pins;
  pthread_mutex_lock(&p->mu);
  while (status == RDEV_OK && v->n > 0 && !p->closing) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  views_unref(v);
}

/* Queues a fence on e's stream if async view reads were queued since the
 * last one: work queued after it cannot change what their replies show,
 * nor see the copy incomplete. req_mu held. */
static int views_fence(srv_handle_t *e) {
  views_t *v = e->views;
  if (!v || !v->unfenced) return RDEV_OK;
  int rc = rdev_rt_launch_callback(e->ptr, fence_cb, views_ref(v));
  if (rc != RDEV_OK) {
    views_unref(v);
    return rc;
  }
  v->unfenced = 0;
  return RDEV_OK;
}

/* Sends an async Read's data straight from device memory once its stream
 * reached it. */
static void read_view_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    send_data(c->s, c->seq, pinned_slice(c->pin, c->views, c->mem, 0, c->buf, c->len));
    c->pin = NULL;
  }
  cb_done(c);
}

static void check_room(srv_session_t *s, rdev_rt_stream_t *st);
static void check_room_entry(srv_handle_t *e, void *arg) { check_room(arg, e->ptr); }

/* aclrtFree returns at once; the memory goes back later (release_buffer). */
static int op_free(srv_req_t *x) {
  uint64_t h = x->q->op.free.buf;
  srv_handle_t *e = get_handle(x, h, SRV_H_BUF);
  if (!e) return fail(x, RDEV_INVALID_RESOURCE_HANDLE, "0x%llx is not a buffer of this session",
                      (unsigned long long)h);
  release_buffer(x->s, e);
  srv_handles_del(&x->s->handles, h);
  /* it queued a callback on each busy stream: mind their depth */
  srv_handles_each(&x->s->handles, SRV_H_STREAM, check_room_entry, x->s);
  for (dead_stream_t *d = x->s->dead; d; d = d->next) check_room(x->s, d->st);
  return RDEV_OK;
}

/* Takes a stream on device dev for x's session: the tenant's stream quota
 * and cap per device, and in open mode the session's own cap. */
static int streams_take(srv_req_t *x, int dev) {
  srv_session_t *s = x->s;
  if (s->own_caps && atomic_fetch_add(&s->dev_streams[dev], 1) >= SRV_DEV_STREAMS_DEFAULT) {
    atomic_fetch_sub(&s->dev_streams[dev], 1);
    fail(x, RDEV_QUOTA_EXCEEDED, "stream cap of session %llu on device %d: %d streams open",
         (unsigned long long)s->id, dev, SRV_DEV_STREAMS_DEFAULT);
    srv_log(SRV_LOG_WARN, "audit: cap refused: tenant=%s peer=%s reason=%s", s->tenant->name,
            s->peer ? s->peer : "in-process", x->r.message);
    return RDEV_QUOTA_EXCEEDED;
  }
  if (srv_tenant_take(s->tenant, SRV_Q_STREAMS, dev, 1, s->peer, x->r.message, sizeof x->r.message)) {
    if (s->own_caps) atomic_fetch_sub(&s->dev_streams[dev], 1);
    return RDEV_QUOTA_EXCEEDED;
  }
  return RDEV_OK;
}

/* A stream in the session's scheduling group: its tenant's share of the
 * device by weight, and at most its cap of the device's slots at once. */
static int op_stream_create(srv_req_t *x) {
  rdev_rt_stream_t *st = NULL;
  int dev, rc = check_device(x, x->q->op.stream_create.device, &dev);
  if (rc || (rc = streams_take(x, dev))) return rc;
  rc = rdev_rt_stream_create(x->s->srv->rt, dev, &st);
  if (rc) {
    streams_give(x->s, dev);
    return rt_failed(x, rc);
  }
  int device_slots = x->s->srv->cfg.sim_slots;
  pthread_mutex_lock(&x->s->tenant->mu);
  uint32_t weight = (uint32_t)x->s->tenant->weight;
  int cap = !x->s->own_caps && x->s->tenant->max_slots ? x->s->tenant->max_slots : srv_slots_default(device_slots);
  pthread_mutex_unlock(&x->s->tenant->mu);
  /* the tenant's weight and cap as they are now (a reload may change them) */
  rdev_rt_stream_set_group(st, x->s->group, weight, device_slots ? (uint32_t)cap : 0);
  uint64_t h = srv_handles_add(&x->s->handles, SRV_H_STREAM, dev, st, 0);
  if (!h) {
    rdev_rt_stream_destroy_force(st);
    streams_give(x->s, dev);
    return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.handle = h;
  return RDEV_OK;
}

/* Streams the client destroyed while work was queued finish that work first
 * (aclrtDestroyStream); they are reaped here once idle. req_mu held. */
static void reap_dead(srv_session_t *s) {
  for (dead_stream_t **pp = &s->dead; *pp;) {
    int done = 0;
    rdev_rt_stream_idle((*pp)->st, &done);
    if (!done) {
      pp = &(*pp)->next;
      continue;
    }
    dead_stream_t *d = *pp;
    *pp = d->next;
    rdev_rt_stream_destroy_force(d->st);
    free(d);
  }
}

/* A busy stream the client destroyed answers, and leaves the tenant's stream
 * quota, only once its queued work ran (or was discarded): until then its
 * worker still exists. */
static void destroy_cb(void *user, int status) {
  cb_ctx_t *c = user;
  streams_give(c->s, rdev_rt_stream_device(c->st));
  sync_cb(c, status);
}

static int op_stream_destroy(srv_req_t *x) {
  srv_handle_t *e;
  int rc = find_stream(x, x->q->op.stream_destroy.stream, &e);
  if (rc) return rc;
  rdev_rt_stream_t *st = e->ptr;
  int dev = rdev_rt_stream_device(st), done = 0;
  rdev_rt_stream_idle(st, &done); /* a running callback too: it may be a fence */
  /* busy: it finishes its work first, as a dead stream (a fence in that
   * work may wait on this thread's sends: never wait for it here) */
  dead_stream_t *d = done ? NULL : malloc(sizeof *d);
  if (!done && !d) return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  if (e->views) views_unref(e->views);
  srv_handles_del(&x->s->handles, x->q->op.stream_destroy.stream);
  if (done) {
    x->used = NULL; /* gone: nothing to watch */
    rc = rdev_rt_stream_destroy(st);
    streams_give(x->s, dev);
    return rc ? fail(x, rc, STREAM_FAILED) : RDEV_OK;
  }
  d->st = st;
  d->next = x->s->dead;
  x->s->dead = d;
  rc = queue_callback(x, st, destroy_cb, cb_new(x->s, x->q->seq, st, NULL, 0));
  if (rc != SRV_LATER) streams_give(x->s, dev);
  return rc;
}

/* How long a synchronize watches a busy stream before it leaves the answer
 * to a callback on the stream. A small kernel finishes within it, and
 * answering here saves the callback's trip through the stream's worker and
 * the reply's hand-off from there, each a wake-up of tens of microseconds on
 * a paravirtualised VM (CUDA's synchronize likewise spins before it blocks).
 * It bounds what the completion-queue thread's other sessions may wait. */
#define SYNC_WATCH_NS 50000u

/* 1 once st is idle, 0 if it is still busy after ns, or at once when more
 * than two tasks wait (a queue of copies does not drain that soon). Yields
 * between looks: a worker woken onto this CPU runs only once this thread
 * lets it. */
static int idle_within(rdev_rt_stream_t *st, uint64_t ns) {
  size_t pending = 0;
  if (rdev_rt_stream_pending(st, &pending) != RDEV_OK || pending > 2) return 0;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int idle = 0;
    if (rdev_rt_stream_idle(st, &idle) != RDEV_OK || idle) return idle;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t.tv_nsec - (uint64_t)t0.tv_nsec >= ns) return 0;
    sched_yield();
  }
}

static int op_stream_sync(srv_req_t *x) {
  rdev_rt_stream_t *st = NULL;
  int rc = get_stream(x, x->q->op.stream_sync.stream, &st);
  if (rc) return rc;
  /* A stream idle now or soon answers at once. */
  if (idle_within(st, SYNC_WATCH_NS)) {
    int err = rdev_rt_stream_take_error(st);
    return err ? fail(x, err, STREAM_FAILED) : RDEV_OK;
  }
  return queue_callback(x, st, sync_cb, cb_new(x->s, x->q->seq, st, NULL, 0));
}

static int op_stream_query(srv_req_t *x) {
  srv_handle_t *e;
  int done = 0, rc = find_stream(x, x->q->op.stream_query.stream, &e);
  if (rc) return rc;
  if ((rc = rdev_rt_stream_query(e->ptr, &done))) return rt_failed(x, rc);
  x->r.value = (uint64_t)done;
  return RDEV_OK;
}

/* Looks up the stream of an async request (0 = synchronous: *st = NULL). */
static int opt_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st) {
  *st = NULL;
  return h ? get_stream(x, h, st) : RDEV_OK;
}

static int op_write(srv_req_t *x) {
  const rdev_v1_Write *w = &x->q->op.write;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  size_t n = x->data->len;
  int rc = opt_stream(x, w->stream, &st);
  if (rc || (rc = check_count(x, n, w->dest_max)) ||
      (rc = buf_range(x, "write", w->buf, w->offset, n, &dst, NULL)))
    return rc;
  if (n == 0) return st || w->quiet ? SRV_LATER : RDEV_OK;
  rdev_wire_payload_t *p = x->data;
  if (!st) { /* synchronous: copied now, so that later requests see it */
    for (int i = 0; i < p->nparts; i++) {
      size_t k = GRPC_SLICE_LENGTH(p->parts[i]);
      rc = rdev_rt_memcpy(x->s->srv->rt, dst, k, GRPC_SLICE_START_PTR(p->parts[i]), k, RDEV_MEMCPY_HOST_TO_DEVICE);
      if (rc) return rt_failed(x, rc);
      dst += k;
    }
    return w->quiet ? SRV_LATER : RDEV_OK; /* quiet: no news is good news */
  }
  /* async: the stream copies out of the held payload when its turn comes */
  held_write_t *h = held_write_new(p);
  cb_ctx_t *c = h ? cb_new(x->s, x->q->seq, st, h, n) : NULL;
  if (!c) {
    if (h) held_write_free(h);
    return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if ((rc = rdev_rt_memcpy_gather_async(x->s->srv->rt, dst, n, h->iov, h->niov, st))) {
    cb_done(c);
    held_write_free(h);
    return rt_failed(x, rc);
  }
  if (rdev_rt_launch_callback(st, write_done_cb, c) != RDEV_OK) {
    rdev_rt_stream_synchronize(st); /* cannot happen on a live stream: hold the slices until copied */
    held_write_free(h);
    cb_done(c);
    return SRV_LATER;
  }
  inflight_add(x->s, n);
  return SRV_LATER;
}

/* Sent straight from device memory where the device shows it: now, or for
 * an async Read when its stream reaches it (read_view_cb); else through a
 * staging buffer. */
static int op_read(srv_req_t *x) {
  const rdev_v1_Read *rd = &x->q->op.read;
  srv_handle_t *se = NULL;
  char *src = NULL;
  mem_t *mem = NULL;
  int rc = rd->stream ? find_stream(x, rd->stream, &se) : RDEV_OK; /* no fence: reads go on */
  if (rc || (rc = check_count(x, rd->count, rd->dest_max))) return rc;
  if (rd->count > RDEV_WIRE_MAX_CHUNK)
    return fail(x, RDEV_INVALID_PARAM, "read of %llu bytes exceeds the %u-byte chunk limit",
                (unsigned long long)rd->count, RDEV_WIRE_MAX_CHUNK);
  if ((rc = buf_range(x, "read", rd->buf, rd->offset, rd->count, &src, &mem))) return rc;
  rdev_rt_stream_t *st = se ? se->ptr : NULL;
  size_t n = (size_t)rd->count;
  const void *view = rdev_rt_host_view(x->s->srv->rt, src, n);
  views_t **vs = !view ? NULL : st ? &se->views : &x->s->sync_views;
  pin_t *pin = vs && (*vs || (*vs = views_new(x->s->pins))) ? malloc(sizeof *pin) : NULL;
  if (pin && !st) {
    x->payload = pinned_slice(pin, *vs, mem, 1, view, n); /* later changes wait: must_wait */
    x->has_payload = 1;
    return RDEV_OK;
  }
  if (pin) {
    cb_ctx_t *c = cb_new(x->s, x->q->seq, st, (void *)view, n);
    if (c) {
      c->views = views_ref(*vs);
      c->mem = mem_ref(mem);
      c->pin = pin;
    } else {
      free(pin);
    }
    if ((rc = queue_callback(x, st, read_view_cb, c)) == SRV_LATER) se->views->unfenced = 1;
    return rc;
  }
  void *staging = srv_buf_get(n);
  if (!staging) return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  if (!st) {
    rc = n ? rdev_rt_memcpy(x->s->srv->rt, staging, n, src, n, RDEV_MEMCPY_DEVICE_TO_HOST) : RDEV_OK;
    if (rc) {
      srv_buf_put(staging);
      return rt_failed(x, rc);
    }
    x->payload = srv_buf_slice(staging, n);
    x->has_payload = 1;
    return RDEV_OK;
  }
  cb_ctx_t *c = cb_new(x->s, x->q->seq, st, staging, n);
  if (!c) {
    srv_buf_put(staging);
    return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if (n && (rc = rdev_rt_memcpy_async(x->s->srv->rt, staging, n, src, n, RDEV_MEMCPY_DEVICE_TO_HOST, st))) {
    cb_done(c);
    srv_buf_put(staging);
    return rt_failed(x, rc);
  }
  inflight_add(x->s, n);
  rc = rdev_rt_launch_callback(st, read_cb, c);
  if (rc) {
    rdev_rt_stream_synchronize(st);
    read_cb(c, RDEV_CANCELLED);
    return rt_failed(x, rc);
  }
  return SRV_LATER;
}

static int op_copy(srv_req_t *x) {
  const rdev_v1_Copy *cp = &x->q->op.copy;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL, *src = NULL;
  int rc = opt_stream(x, cp->stream, &st);
  if (rc || (rc = check_count(x, cp->count, cp->dest_max)) ||
      (rc = buf_range(x, "copy dst", cp->dst, cp->dst_offset, cp->count, &dst, NULL)) ||
      (rc = buf_range(x, "copy src", cp->src, cp->src_offset, cp->count, &src, NULL)))
    return rc;
  /* buffers start 64-byte aligned: said in the client's terms, offsets */
  if (cp->count && (cp->dst_offset | cp->src_offset) % RDEV_RT_MEM_ALIGN)
    return fail(x, RDEV_MEMORY_ADDRESS_UNALIGNED,
                "copy: device-to-device copies need %d-byte-aligned offsets (dst %llu, src %llu)", RDEV_RT_MEM_ALIGN,
                (unsigned long long)cp->dst_offset, (unsigned long long)cp->src_offset);
  size_t n = (size_t)cp->count;
  rc = st ? rdev_rt_memcpy_async(x->s->srv->rt, dst, n, src, n, RDEV_MEMCPY_DEVICE_TO_DEVICE, st)
          : rdev_rt_memcpy(x->s->srv->rt, dst, n, src, n, RDEV_MEMCPY_DEVICE_TO_DEVICE);
  if (rc) return rt_failed(x, rc);
  return st ? SRV_LATER : RDEV_OK;
}

static int op_memset(srv_req_t *x) {
  const rdev_v1_Memset *m = &x->q->op.memset;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  int rc = opt_stream(x, m->stream, &st);
  if (rc || (rc = check_count(x, m->count, m->dest_max)) ||
      (rc = buf_range(x, "memset", m->buf, m->offset, m->count, &dst, NULL)))
    return rc;
  size_t n = (size_t)m->count;
  rc = st ? rdev_rt_memset_async(x->s->srv->rt, dst, n, m->value, n, st)
          : rdev_rt_memset(x->s->srv->rt, dst, n, m->value, n);
  if (rc) return rt_failed(x, rc);
  return st ? SRV_LATER : RDEV_OK;
}

/* Kernel print output is held for the session's next reply (send_reply);
 * when it would not fit, what is held goes out now as a PRINT reply. */
static bool hold_text(srv_session_t *s, const char *text, size_t len) {
  pthread_mutex_lock(&s->mu);
  bool ok = s->held_len + len <= HOLD_MAX;
  if (ok && s->held_len + len > s->held_cap) {
    size_t cap = s->held_cap ? s->held_cap : 256;
    while (cap < s->held_len + len) cap *= 2;
    if (cap > HOLD_MAX) cap = HOLD_MAX;
    char *p = realloc(s->held, cap);
    if (p) s->held = p, s->held_cap = cap;
    else ok = false;
  }
  if (ok) {
    memcpy(s->held + s->held_len, text, len);
    rdev_wire_utf8_fix(s->held + s->held_len, len); /* Reply.print is a string */
    s->held_len += len;
  }
  pthread_mutex_unlock(&s->mu);
  return ok;
}

static void print_cb(void *user, const char *text, size_t len) {
  cb_ctx_t *c = user;
  if (len && !hold_text(c->s, text, len)) {
    rdev_v1_Reply r = rdev_v1_Reply_init_zero;
    r.kind = rdev_v1_ReplyKind_PRINT;
    send_reply(c->s, &r, NULL); /* flushes what was held */
    char *copy = hold_text(c->s, text, len) ? NULL : malloc(len);
    if (copy) { /* over HOLD_MAX alone (else out of memory: dropped) */
      memcpy(copy, text, len);
      rdev_wire_utf8_fix(copy, len);
      text_t t = {copy, len};
      r.print.funcs.encode = encode_text;
      r.print.arg = &t;
      send_reply(c->s, &r, NULL);
      free(copy);
    }
  }
  cb_done(c);
}

static int op_launch(srv_req_t *x) {
  const rdev_v1_Launch *l = &x->q->op.launch;
  const rdev_wire_request_t *w = x->w;
  rdev_rt_stream_t *st = NULL;
  int rc = get_stream(x, l->stream, &st);
  if (rc) return rc;
  if (w->kernel_len > RDEV_WIRE_MAX_KERNEL_NAME)
    return fail(x, RDEV_UNKNOWN_KERNEL, "kernel name of %zu bytes exceeds the %d-byte limit", w->kernel_len,
                RDEV_WIRE_MAX_KERNEL_NAME);
  if (w->kernel_nul) return fail(x, RDEV_UNKNOWN_KERNEL, "kernel name holds a NUL byte");
  if (w->nargs > RDEV_WIRE_MAX_ARGS)
    return fail(x, RDEV_KERNEL_ARGS, "%s: %d arguments exceed the limit of %d", w->kernel, w->nargs,
                RDEV_WIRE_MAX_ARGS);
  rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS];
  _Static_assert(RDEV_WIRE_MAX_ARGS <= RDEV_RT_MAX_KERNEL_ARGS, "the wire allows more arguments than kernels take");
  for (int i = 0; i < w->nargs; i++) {
    const rdev_v1_Arg *a = &w->args[i];
    rdev_kernel_arg_t *k = &args[i];
    switch (a->which_v) {
      case rdev_v1_Arg_ptr_tag: {
        srv_handle_t *e = get_handle(x, a->v.ptr.buf, SRV_H_BUF);
        if (!e) return fail(x, RDEV_INVALID_RESOURCE_HANDLE, "%s: argument %d: 0x%llx is not a buffer of this session",
                            w->kernel, i, (unsigned long long)a->v.ptr.buf);
        k->type = RDEV_ARG_PTR;
        k->v.ptr.base = e->ptr;
        k->v.ptr.offset = a->v.ptr.offset;
        break;
      }
      case rdev_v1_Arg_i32_tag: k->type = RDEV_ARG_I32; k->v.i32 = a->v.i32; break;
      case rdev_v1_Arg_u32_tag: k->type = RDEV_ARG_U32; k->v.u32 = a->v.u32; break;
      case rdev_v1_Arg_i64_tag: k->type = RDEV_ARG_I64; k->v.i64 = a->v.i64; break;
      case rdev_v1_Arg_u64_tag: k->type = RDEV_ARG_U64; k->v.u64 = a->v.u64; break;
      case rdev_v1_Arg_f32_tag: k->type = RDEV_ARG_F32; k->v.f32 = a->v.f32; break;
      case rdev_v1_Arg_f64_tag: k->type = RDEV_ARG_F64; k->v.f64 = a->v.f64; break;
      default: return fail(x, RDEV_KERNEL_ARGS, "%s: argument %d has no value", w->kernel, i);
    }
  }
  cb_ctx_t *c = cb_new(x->s, x->q->seq, st, NULL, 0);
  if (!c) return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  rc = rdev_rt_launch(st, w->kernel, l->blocks, args, w->nargs, print_cb, c);
  if (rc) {
    cb_done(c);
    return rt_failed(x, rc);
  }
  return SRV_LATER;
}

static int op_event_create(srv_req_t *x) {
  rdev_rt_event_t *ev;
  int dev, rc = check_device(x, x->q->op.event_create.device, &dev);
  if (rc) return rc;
  rc = rdev_rt_event_create(x->s->srv->rt, dev, &ev);
  if (rc) return rt_failed(x, rc);
  uint64_t h = srv_handles_add(&x->s->handles, SRV_H_EVENT, dev, ev, 0);
  if (!h) {
    rdev_rt_event_destroy(ev);
    return fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.handle = h;
  return RDEV_OK;
}

static int op_event_destroy(srv_req_t *x) {
  srv_handle_t *e;
  int rc = get_event(x, x->q->op.event_destroy.event, &e);
  if (rc) return rc;
  rdev_rt_event_destroy(e->ptr);
  srv_handles_del(&x->s->handles, x->q->op.event_destroy.event);
  return RDEV_OK;
}

static int op_event_record(srv_req_t *x) {
  const rdev_v1_EventRecord *m = &x->q->op.event_record;
  rdev_rt_stream_t *st = NULL;
  srv_handle_t *e;
  int rc = get_stream(x, m->stream, &st);
  if (rc || (rc = get_event(x, m->event, &e))) return rc;
  rc = rdev_rt_event_record(e->ptr, st);
  return rc ? rt_failed(x, rc) : SRV_LATER;
}

static int op_stream_wait_event(srv_req_t *x) {
  const rdev_v1_StreamWaitEvent *m = &x->q->op.stream_wait_event;
  rdev_rt_stream_t *st = NULL;
  srv_handle_t *e;
  int rc = get_stream(x, m->stream, &st);
  if (rc || (rc = get_event(x, m->event, &e))) return rc;
  rc = rdev_rt_stream_wait_event(st, e->ptr);
  return rc ? rt_failed(x, rc) : SRV_LATER;
}

/* EventSync waits on a session-internal stream of the event's device: the
 * stream waits for the event, then a callback answers. */
static int op_event_sync(srv_req_t *x) {
  srv_handle_t *e;
  int rc = get_event(x, x->q->op.event_sync.event, &e);
  if (rc) return rc;
  rdev_rt_stream_t **ss = &x->s->sync_streams[e->dev];
  if (!*ss) { /* counted like any stream (it only waits, so it never takes a slot) */
    if ((rc = streams_take(x, e->dev))) return rc;
    if ((rc = rdev_rt_stream_create(x->s->srv->rt, e->dev, ss))) {
      streams_give(x->s, e->dev);
      return rt_failed(x, rc);
    }
  }
  x->used = *ss;
  if ((rc = rdev_rt_stream_wait_event(*ss, e->ptr))) return rt_failed(x, rc);
  return queue_callback(x, *ss, sync_cb, cb_new(x->s, x->q->seq, NULL, NULL, 0));
}

static int op_event_query(srv_req_t *x) {
  srv_handle_t *e;
  int done = 0, rc = get_event(x, x->q->op.event_query.event, &e);
  if (rc) return rc;
  if ((rc = rdev_rt_event_query(e->ptr, &done))) return rt_failed(x, rc);
  x->r.value = (uint64_t)done;
  return RDEV_OK;
}

static int op_event_elapsed(srv_req_t *x) {
  srv_handle_t *a, *b;
  int rc = get_event(x, x->q->op.event_elapsed.start, &a);
  if (rc || (rc = get_event(x, x->q->op.event_elapsed.end, &b))) return rc;
  if ((rc = rdev_rt_event_elapsed_ms(&x->r.elapsed_ms, a->ptr, b->ptr))) return rt_failed(x, rc);
  return RDEV_OK;
}

static int op_mem_info(srv_req_t *x) {
  size_t f, t;
  int dev, rc = check_device(x, x->q->op.mem_info.device, &dev);
  if (rc) return rc;
  rc = rdev_rt_mem_info(x->s->srv->rt, dev, &f, &t);
  if (rc) return rt_failed(x, rc);
  x->r.value = f;
  x->r.value2 = t;
  return RDEV_OK;
}

typedef int (*op_fn)(srv_req_t *x);

static op_fn op_for(pb_size_t which) {
  switch (which) {
    case rdev_v1_Request_malloc_tag: return op_malloc;
    case rdev_v1_Request_free_tag: return op_free;
    case rdev_v1_Request_stream_create_tag: return op_stream_create;
    case rdev_v1_Request_stream_destroy_tag: return op_stream_destroy;
    case rdev_v1_Request_stream_sync_tag: return op_stream_sync;
    case rdev_v1_Request_stream_query_tag: return op_stream_query;
    case rdev_v1_Request_write_tag: return op_write;
    case rdev_v1_Request_read_tag: return op_read;
    case rdev_v1_Request_copy_tag: return op_copy;
    case rdev_v1_Request_memset_tag: return op_memset;
    case rdev_v1_Request_launch_tag: return op_launch;
    case rdev_v1_Request_event_create_tag: return op_event_create;
    case rdev_v1_Request_event_destroy_tag: return op_event_destroy;
    case rdev_v1_Request_event_record_tag: return op_event_record;
    case rdev_v1_Request_stream_wait_event_tag: return op_stream_wait_event;
    case rdev_v1_Request_event_sync_tag: return op_event_sync;
    case rdev_v1_Request_event_query_tag: return op_event_query;
    case rdev_v1_Request_event_elapsed_tag: return op_event_elapsed;
    case rdev_v1_Request_mem_info_tag: return op_mem_info;
  }
  return NULL;
}

/* A stream's queue drained to where room_cb was queued: reading may go on. */
static void room_cb(void *user, int status) {
  cb_ctx_t *c = user;
  (void)status;
  pthread_mutex_lock(&c->s->mu);
  c->s->streams_full--;
  maybe_resume_recv(c->s);
  pthread_mutex_unlock(&c->s->mu);
  cb_done(c);
}

/* At most what one request queues on a stream: fence, gather, its
 * callback and a room_cb (an async Write after a view Read). What one
 * message may queue past the receive pause must fit in the rest of the
 * ring: the completion-queue thread (or the resumer) must never wait in a
 * submit (a fence may hold the stream until this very thread sent
 * replies). */
#define TASKS_PER_REQUEST 4
#define ROOM_AT ((size_t)SRV_STREAM_DEPTH - (size_t)(RDEV_WIRE_MAX_BATCH + 1) * TASKS_PER_REQUEST)
_Static_assert(ROOM_AT >= SRV_STREAM_DEPTH / 4, "a stream's ring too small for a full batch past the pause");

/* After queueing work on st: past ROOM_AT tasks (about half depth), stop
 * reading until it drained. req_mu held. */
static void check_room(srv_session_t *s, rdev_rt_stream_t *st) {
  size_t pending = 0;
  if (rdev_rt_stream_pending(st, &pending) != RDEV_OK || pending < ROOM_AT) return;
  cb_ctx_t *c = cb_new(s, 0, st, NULL, 0);
  if (!c) return;
  pthread_mutex_lock(&s->mu);
  s->streams_full++;
  pthread_mutex_unlock(&s->mu);
  if (rdev_rt_launch_callback(st, room_cb, c) != RDEV_OK) room_cb(c, RDEV_CANCELLED);
}

/* The stream an asynchronous request names (0: none or synchronous). */
static uint64_t request_stream(const rdev_v1_Request *q) {
  switch (q->which_op) {
    case rdev_v1_Request_write_tag: return q->op.write.stream;
    case rdev_v1_Request_read_tag: return q->op.read.stream;
    case rdev_v1_Request_copy_tag: return q->op.copy.stream;
    case rdev_v1_Request_memset_tag: return q->op.memset.stream;
    case rdev_v1_Request_launch_tag: return q->op.launch.stream;
    case rdev_v1_Request_event_record_tag: return q->op.event_record.stream;
    case rdev_v1_Request_stream_wait_event_tag: return q->op.stream_wait_event.stream;
  }
  return 0;
}

/* Whether buffer h of s is shown by a synchronous Read reply gRPC still
 * holds. req_mu and pins->mu held. */
static int shown(srv_session_t *s, uint64_t h) {
  srv_handle_t *e = srv_handles_get(&s->handles, h, SRV_H_BUF);
  return e && e->mem->shown > 0;
}

/* Whether r must wait before it runs: it may change the memory of a buffer
 * (now, or on a stream that may run it at once) that a synchronous Read
 * reply gRPC still holds shows. Run now, it could change what that reply
 * shows: a session's requests run as if each waited for the one before.
 * req_mu held. */
static int must_wait(srv_session_t *s, const rdev_wire_request_t *r) {
  const rdev_v1_Request *q = &r->q;
  pins_t *p = s->pins;
  int wait = 0;
  pthread_mutex_lock(&p->mu);
  if (s->sync_views && s->sync_views->n > 0) {
    switch (q->which_op) {
      case rdev_v1_Request_write_tag: wait = shown(s, q->op.write.buf); break;
      case rdev_v1_Request_memset_tag: wait = shown(s, q->op.memset.buf); break;
      case rdev_v1_Request_copy_tag: wait = shown(s, q->op.copy.dst); break;
      case rdev_v1_Request_launch_tag: /* any buffer it is given */
        for (int i = 0; i < r->nargs && i < RDEV_WIRE_MAX_ARGS && !wait; i++)
          wait = r->args[i].which_v == rdev_v1_Arg_ptr_tag && shown(s, r->args[i].v.ptr.buf);
        break;
      default: break;
    }
  }
  pthread_mutex_unlock(&p->mu);
  return wait;
}

/* The Read and Write bytes r moves (a Read over the chunk limit is refused
 * by its handler and moves nothing). */
static size_t request_xfer(const rdev_wire_request_t *r) {
  if (r->q.which_op == rdev_v1_Request_write_tag) return r->data.len;
  if (r->q.which_op == rdev_v1_Request_read_tag && r->q.op.read.count <= RDEV_WIRE_MAX_CHUNK)
    return (size_t)r->q.op.read.count;
  return 0;
}

/* Runs one request of a message (index: in its batch, -1 for its own;
 * err: why it is malformed, or NULL) and answers it. Returns RDEV_WIRE_STOP,
 * having done nothing, when it must wait (must_wait); RDEV_WIRE_CUT when
 * it was one past the batch limit, which ends the batch (so that one
 * message cannot make more than RDEV_WIRE_MAX_BATCH + 2 replies). */
static int run_request(srv_session_t *s, rdev_wire_request_t *r, int index, const char *err, batch_t *b) {
  const rdev_v1_Request *q = &r->q;
  srv_req_t x = {.s = s, .q = q, .w = r, .data = &r->data, .r = rdev_v1_Reply_init_zero};
  size_t xfer = request_xfer(r);
  int rc, wait = 0, cut = 0;
  x.stream = request_stream(q);
  if (index >= 0 && ++b->count > RDEV_WIRE_MAX_BATCH) { /* malformed ones count too */
    rc = fail(&x, RDEV_INVALID_PARAM, "a batch holds at most %d requests: this one and the rest are not run",
              RDEV_WIRE_MAX_BATCH);
    cut = 1;
  } else if (err) {
    rc = fail(&x, RDEV_PROTOCOL, "malformed request: %s", err);
  } else if (r->data.oversize) {
    rc = fail(&x, RDEV_INVALID_PARAM, "payload exceeds the %u-byte chunk limit", RDEV_WIRE_MAX_CHUNK);
  } else if (xfer > RDEV_WIRE_MAX_BATCH_XFER - b->xfer) {
    rc = fail(&x, RDEV_INVALID_PARAM, "a message moves at most %u bytes of Read and Write data",
              RDEV_WIRE_MAX_BATCH_XFER);
  } else {
    b->xfer += xfer;
    op_fn fn = op_for(q->which_op);
    pthread_mutex_lock(&s->req_mu);
    if (s->released)
      rc = SRV_LATER; /* the session is ending: nothing to answer to */
    else if (!fn)
      rc = fail(&x, RDEV_PROTOCOL, "request without a known operation");
    else if ((wait = must_wait(s, r)))
      rc = SRV_LATER;
    else {
      reap_dead(s);
      rc = fn(&x);
      if (x.used) check_room(s, x.used);
    }
    pthread_mutex_unlock(&s->req_mu);
    if (wait) b->count -= index >= 0, b->xfer -= xfer; /* counted again when it runs */
  }
  if (rc != SRV_LATER) {
    x.r.seq = q->seq;
    x.r.status = rc;
    if (rc != RDEV_OK) {
      x.r.stream = x.stream;
      srv_log(SRV_LOG_DEBUG, "session %llu seq %llu: %s (%d): %s", (unsigned long long)s->id,
              (unsigned long long)q->seq, rdev_status_name(rc), rc, x.r.message);
    }
    send_reply(s, &x.r, x.has_payload ? &x.payload : NULL);
  }
  if (x.has_payload) grpc_slice_unref(x.payload);
  return wait ? RDEV_WIRE_STOP : cut ? RDEV_WIRE_CUT : 0;
}

static int visit_request(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  batch_t *b = arg;
  return run_request(b->s, r, index, err, b);
}

static int pause_message(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b);

/* Handles one received message: its batch's requests, run as they are
 * decoded, then its own (rdev_wire_walk); from b->walk.skip on when
 * resumed. Returns 1 when a request must wait: the rest of the message,
 * and bb with it, then belongs to pause_message. */
static int handle_message(srv_session_t *s, grpc_byte_buffer *bb, batch_t *b) {
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &b->walk, visit_request, b);
  return b->walk.stopped ? pause_message(s, bb, b) : 0;
}

/* ---- paused sessions ------------------------------------------------------------- */

/* Whether a paused session may go on: gRPC let go of its synchronous Read
 * replies, or it is ending. srv->paused_mu held. */
static int may_resume(srv_session_t *s) {
  pins_t *p = s->pins;
  pthread_mutex_lock(&p->mu);
  int go = s->sync_views->n == 0 || p->closing;
  if (go) s->sync_views->resume = 0;
  pthread_mutex_unlock(&p->mu);
  return go;
}

static void resumer_wake(srv_t *srv) {
  pthread_mutex_lock(&srv->paused_mu);
  pthread_cond_broadcast(&srv->paused_cv);
  pthread_mutex_unlock(&srv->paused_mu);
}

/* Handles the rest of s's paused message, then receives the next one
 * (unless it paused again). */
static void resume_message(srv_session_t *s) {
  grpc_byte_buffer *bb = s->paused;
  batch_t b = s->paused_at;
  s->paused = NULL;
  if (!handle_message(s, bb, &b)) {
    grpc_byte_buffer_destroy(bb);
    pthread_mutex_lock(&s->mu);
    post_next_recv(s);
    pthread_mutex_unlock(&s->mu);
  }
  session_unref(s); /* pause_message's */
}

/* The resumer: one thread for the server, since pauses are rare; it
 * waits so that no completion-queue thread ever does. */
static void *resumer_main(void *arg) {
  srv_t *srv = arg;
  pthread_mutex_lock(&srv->paused_mu);
  for (;;) {
    srv_session_t **pp = &srv->paused;
    while (*pp && !may_resume(*pp)) pp = &(*pp)->paused_next;
    srv_session_t *s = *pp;
    if (s) {
      *pp = s->paused_next;
      pthread_mutex_unlock(&srv->paused_mu);
      resume_message(s);
      pthread_mutex_lock(&srv->paused_mu);
    } else if (srv->resumer_stop) {
      break;
    } else {
      pthread_cond_wait(&srv->paused_cv, &srv->paused_mu);
    }
  }
  pthread_mutex_unlock(&srv->paused_mu);
  return NULL;
}

void srv_sessions_init(srv_t *srv) {
  pthread_mutex_init(&srv->paused_mu, NULL);
  pthread_cond_init(&srv->paused_cv, NULL);
  srv->paused = NULL;
  srv->resumer_started = srv->resumer_stop = 0;
}

void srv_sessions_stop(srv_t *srv) {
  pthread_mutex_lock(&srv->paused_mu);
  srv->resumer_stop = 1;
  pthread_cond_broadcast(&srv->paused_cv);
  int started = srv->resumer_started;
  pthread_mutex_unlock(&srv->paused_mu);
  if (started) pthread_join(srv->resumer, NULL);
}

/* The session stops handling requests, and receiving, until gRPC let go
 * of its synchronous Read replies: then the resumer goes on with bb past
 * what b handled. Returns 1; 0 when the session is ending (nothing more
 * to answer). */
static int pause_message(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b) {
  pthread_mutex_lock(&s->req_mu);
  int ok = !s->released;
  if (ok) {
    s->paused = bb;
    s->paused_at = *b;
    s->paused_at.walk.skip = b->walk.seen;
    pthread_mutex_lock(&s->pins->mu);
    s->sync_views->resume = 1;
    pthread_mutex_unlock(&s->pins->mu);
  }
  pthread_mutex_unlock(&s->req_mu);
  if (!ok) return 0;
  srv_t *srv = s->srv;
  session_ref(s);
  pthread_mutex_lock(&srv->paused_mu);
  if (!srv->resumer_started && pthread_create(&srv->resumer, NULL, resumer_main, srv) == 0)
    srv->resumer_started = 1;
  ok = srv->resumer_started;
  if (ok) {
    s->paused_next = srv->paused;
    srv->paused = s;
    pthread_cond_broadcast(&srv->paused_cv);
  }
  pthread_mutex_unlock(&srv->paused_mu);
  if (ok) return 1;
  /* No thread to wait on, and this one must not: end the session rather
   * than run the request out of order. */
  s->paused = NULL;
  pthread_mutex_lock(&s->pins->mu);
  s->sync_views->resume = 0;
  pthread_mutex_unlock(&s->pins->mu);
  atomic_fetch_sub(&s->refs, 1); /* the caller holds one: never the last */
  srv_log(SRV_LOG_ERROR, "session %llu: cannot start the resumer thread; ending it", (unsigned long long)s->id);
  if (s->call) session_end(s, "out of server resources", GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server resources");
  else session_release(s); /* its owner's srv_session_close_local says it ended */
  return 0;
}
