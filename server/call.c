/*
 * server/call.c — a session's gRPC call: the receive (one outstanding,
 * posted late after small requests), the send queue (one SEND_MESSAGE at a
 * time), backpressure on inflight bytes and on full device streams, the
 * end of the call (status, cancel), and accepting a Session call
 * (srv_session_start). In-process sessions have no call: their replies go
 * to the session's function and "receiving" is being ready for the next
 * message.
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

#include "session.h"

void srv_session_ref(srv_session_t *s) { atomic_fetch_add(&s->refs, 1); }

static void start_batch(srv_session_t *s, const grpc_op *ops, size_t n, srv_op_t *tag) {
  srv_session_ref(s);
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
  if (s->recv_paused && s->inflight < s->max_inflight && !s->streams_full && !s->released && !s->half_closed) {
    s->recv_paused = 0;
    post_recv(s);
  }
}

void srv_inflight_add(srv_session_t *s, size_t n) {
  pthread_mutex_lock(&s->mu);
  s->inflight += n;
  pthread_mutex_unlock(&s->mu);
}

void srv_inflight_sub(srv_session_t *s, size_t n) {
  pthread_mutex_lock(&s->mu);
  s->inflight -= n;
  maybe_resume_recv(s);
  pthread_mutex_unlock(&s->mu);
}

bool srv_encode_text(pb_ostream_t *os, const pb_field_t *f, void *const *arg) {
  const text_t *t = *arg;
  return pb_encode_tag_for_field(os, f) && pb_encode_string(os, (const pb_byte_t *)t->text, t->len);
}

/* Encodes r with an optional payload and queues it to be sent; it counts
 * toward inflight until sent. Held print output rides along in r.print.
 * Dropped once the call is ending. r.message is made valid UTF-8 here (it
 * may quote what a client sent, or be cut inside a character); held print
 * output was made so when it was held. */
void srv_send_reply(srv_session_t *s, rdev_v1_Reply *r, const grpc_slice *payload) {
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
    r->print.funcs.encode = srv_encode_text;
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

void srv_send_status(srv_session_t *s, uint64_t seq, uint64_t stream, int status, const char *msg) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  r.status = status;
  r.stream = stream;
  snprintf(r.message, sizeof r.message, "%s", msg ? msg : "");
  srv_send_reply(s, &r, NULL);
}

static void on_start(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, start_op));
  (void)ok;
  srv_session_unref(s);
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
void srv_post_next_recv(srv_session_t *s) {
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
    srv_session_release(s);
    pthread_mutex_lock(&s->mu);
    maybe_send_status(s);
    pthread_mutex_unlock(&s->mu);
    srv_session_unref(s);
    return;
  }
  size_t len = grpc_byte_buffer_length(bb);
  batch_t b = {.s = s};
  if (srv_handle_message(s, bb, &b)) { /* paused: the resumer goes on, and receives next */
    srv_session_unref(s);
    return;
  }
  grpc_byte_buffer_destroy(bb);
  if (len < DEFER_RECV_BELOW) { /* the recv batch's reference stays until then */
    s->defer_next = t_deferred;
    t_deferred = s;
    return;
  }
  pthread_mutex_lock(&s->mu);
  srv_post_next_recv(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
}

void srv_sessions_post_deferred(void) {
  while (t_deferred) {
    srv_session_t *s = t_deferred;
    t_deferred = s->defer_next;
    pthread_mutex_lock(&s->mu);
    srv_post_next_recv(s);
    pthread_mutex_unlock(&s->mu);
    srv_session_unref(s);
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
  srv_session_unref(s);
}

static void on_status(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, status_op));
  (void)ok;
  srv_session_unref(s);
}

static void on_close(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, close_op));
  (void)ok;
  if (s->cancelled) srv_session_release(s);
  srv_session_closed(s, s->cancelled ? srv_end_reason(s) : "closed by client");
  pthread_mutex_lock(&s->mu);
  s->broken = 1;
  drop_queue(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
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

void srv_session_start(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant) {
  char msg[256];
  srv_session_t *s = srv_session_new(srv, call, deadline, tenant, msg, sizeof msg);
  if (!s) {
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
    return;
  }
  s->start_op.done = on_start;
  s->recv_op.done = on_recv;
  s->send_op.done = on_send;
  s->status_op.done = on_status;
  s->close_op.done = on_close;
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

/* A Read's answer: data, whose reference it takes. */
void srv_send_data(srv_session_t *s, uint64_t seq, grpc_slice data) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  srv_send_reply(s, &r, &data);
  grpc_slice_unref(data);
}

/* A stream's queue drained to where room_cb was queued: reading may go on. */
static void room_cb(void *user, int status) {
  cb_ctx_t *c = user;
  (void)status;
  pthread_mutex_lock(&c->s->mu);
  c->s->streams_full--;
  maybe_resume_recv(c->s);
  pthread_mutex_unlock(&c->s->mu);
  srv_cb_done(c);
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
void srv_check_room(srv_session_t *s, rdev_rt_stream_t *st) {
  size_t pending = 0;
  if (rdev_rt_stream_pending(st, &pending) != RDEV_OK || pending < ROOM_AT) return;
  cb_ctx_t *c = srv_cb_new(s, 0, st, NULL, 0);
  if (!c) return;
  pthread_mutex_lock(&s->mu);
  s->streams_full++;
  pthread_mutex_unlock(&s->mu);
  if (rdev_rt_launch_callback(st, room_cb, c) != RDEV_OK) room_cb(c, RDEV_CANCELLED);
}
