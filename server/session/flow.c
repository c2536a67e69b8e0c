/*
 * server/session/flow.c — a session's flow over its call: the send queue (one
 * SEND_MESSAGE at a time, replies encoded with held print output), the
 * receives (one outstanding; an in-process session is "ready" instead),
 * backpressure on inflight bytes and on full device streams, and the
 * call's OK status once the client half-closed and everything is out.
 */
#include <grpc/byte_buffer_reader.h>
#include <pb_encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "session.h"

void srv_start_batch(srv_session_t *s, const grpc_op *ops, size_t n, srv_op_t *tag) {
  srv_session_ref(s);
  atomic_fetch_add(&s->call_ops, 1);
  RDEV_HANDOFF_GIVE(tag);
  grpc_call_error e = grpc_call_start_batch(s->call, ops, n, tag, NULL);
  if (e != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "session %llu: start_batch failed (%d)", (unsigned long long)s->id, e);
    atomic_fetch_sub(&s->call_ops, 1);
    atomic_fetch_sub(&s->refs, 1); /* the close batch still holds one: never the last */
  }
}

void srv_post_recv(srv_session_t *s) {
  if (!s->call) {
    s->local_ready = 1;
    pthread_cond_broadcast(&s->local_cv);
    return;
  }
  if (s->detached) { /* the call that takes it over receives */
    s->recv_wanted = 1;
    return;
  }
  grpc_op op = {.op = GRPC_OP_RECV_MESSAGE};
  op.data.recv_message.recv_message = &s->recv_bb;
  srv_start_batch(s, &op, 1, &s->recv_op);
}

/* mu held: n more bytes of replies not acknowledged (resume). A detached
 * session's count to its tenant, and past the tenant's cap the session
 * ends; a connected one's client acknowledges every RDEV_WIRE_ACK_BYTES,
 * and past UNACKED_MAX it does not and the session ends
 * (srv_flow_check_cap, once mu is let go). */
#define UNACKED_MAX (16 * RDEV_WIRE_ACK_BYTES)

static void unacked_add(srv_session_t *s, size_t n) {
  s->unacked += n;
  if (s->unacked_tenant) {
    if (atomic_fetch_add(&s->tenant->unacked, n) + n > s->max_unacked) s->over_cap = SRV_OVER_TENANT;
  } else if (s->unacked > UNACKED_MAX + s->max_inflight) { /* the queue's max_inflight, then the log's */
    s->over_cap = SRV_OVER_SESSION;
  }
}

static void unacked_sub(srv_session_t *s, size_t n) {
  s->unacked -= n;
  if (s->unacked_tenant) atomic_fetch_sub(&s->tenant->unacked, n);
}

void srv_unacked_to_tenant_locked(srv_session_t *s, int on) {
  if (on == s->unacked_tenant) return;
  s->unacked_tenant = on;
  if (!on) {
    atomic_fetch_sub(&s->tenant->unacked, s->unacked);
  } else if (atomic_fetch_add(&s->tenant->unacked, s->unacked) + s->unacked > s->max_unacked) {
    s->over_cap = SRV_OVER_TENANT;
  }
}

static void node_free(srv_session_t *s, reply_node_t *n) {
  if (s->resumable) unacked_sub(s, n->bytes);
  grpc_byte_buffer_destroy(n->bb);
  free(n);
}

/* A reply sent is kept until the client acknowledges it, as one flat
 * copy: it shows no device memory from then on (zerocopy.h: requests that
 * change shown memory wait for gRPC to let go of it, not for the client). */
static void flatten(reply_node_t *n) {
  if (n->bb->type != GRPC_BB_RAW || n->bb->data.raw.slice_buffer.count < 2) return;
  grpc_byte_buffer_reader rd;
  if (!grpc_byte_buffer_reader_init(&rd, n->bb)) return;
  grpc_slice flat = grpc_byte_buffer_reader_readall(&rd);
  grpc_byte_buffer_reader_destroy(&rd);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&flat, 1);
  grpc_slice_unref(flat);
  grpc_byte_buffer_destroy(n->bb);
  n->bb = bb;
}

/* mu held: the call ended (or the session resumed): the call's send state goes. */
static int call_usable(const srv_session_t *s) { return !s->broken && !s->cancelled && !s->detached; }

/* mu held */
static void start_send(srv_session_t *s) {
  grpc_op op = {.op = GRPC_OP_SEND_MESSAGE};
  /* gRPC takes the slices out of what it sends: a reply kept for a
   * resume is sent as a second byte buffer over the same slices */
  grpc_byte_buffer *bb = s->sq_head->bb;
  if (s->resumable && !(bb = s->sending_copy = grpc_byte_buffer_copy(bb))) bb = s->sq_head->bb;
  op.data.send_message.send_message = bb;
  s->send_busy = 1;
  srv_start_batch(s, &op, 1, &s->send_op);
}

void srv_maybe_send_status(srv_session_t *s) {
  if (!s->call || !s->half_closed || !s->released || s->send_busy || s->status_started || s->broken) return;
  s->status_started = 1;
  grpc_op op = {.op = GRPC_OP_SEND_STATUS_FROM_SERVER};
  op.data.send_status_from_server.status = GRPC_STATUS_OK;
  srv_start_batch(s, &op, 1, &s->status_op);
}

/* mu held */
static void maybe_resume_recv(srv_session_t *s) {
  if (s->recv_paused && s->inflight < s->max_inflight && !s->streams_full && !s->released && !s->half_closed) {
    s->recv_paused = 0;
    srv_post_recv(s);
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

void srv_send_reply(srv_session_t *s, rdev_v1_Reply *r, const grpc_slice *payload) {
  if (r->status) srv_metrics_error(s->tenant->metrics, r->status);
  reply_node_t *n = malloc(sizeof *n);
  rdev_wire_utf8_fix(r->message, strlen(r->message));
  pthread_mutex_lock(&s->mu);
  /* a broken call's replies wait for the call that resumes the session */
  int keep = s->resumable && !s->released;
  if (!n || s->status_started || (!call_usable(s) && !keep)) {
    pthread_mutex_unlock(&s->mu);
    free(n);
    return;
  }
  r->acked = s->rx_msgs;
  s->rx_told = s->rx_msgs;
  s->rx_untold = 0;
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
  /* The client acts on what it reads: a request received after this
   * reply may follow from it (a read after the synchronize that reported
   * a stream's copies done). That order runs through the client, out of
   * ThreadSanitizer's sight, and gRPC may write the reply from another
   * thread: given here, taken with the next receive's tag. */
  RDEV_HANDOFF_GIVE(&s->recv_op);
  n->next = NULL;
  n->bb = bb;
  n->bytes = 64 + grpc_byte_buffer_length(bb); /* what it holds, payload and print included */
  n->num = ++s->tx_msgs;
  if (s->sq_tail)
    s->sq_tail->next = n;
  else
    s->sq_head = n;
  s->sq_tail = n;
  s->inflight += n->bytes;
  if (s->resumable) unacked_add(s, n->bytes);
  if (!s->send_busy && call_usable(s)) start_send(s);
  int over = s->over_cap;
  pthread_mutex_unlock(&s->mu);
  if (over) srv_flow_check_cap(s);
}

void srv_flow_check_cap(srv_session_t *s) {
  pthread_mutex_lock(&s->mu);
  int end = s->over_cap && !s->detached && !s->released;
  pthread_mutex_unlock(&s->mu);
  /* a detached one: the reaper ends it */
  if (end)
    srv_session_end(s, "unacknowledged replies", GRPC_STATUS_RESOURCE_EXHAUSTED,
                    "the client did not acknowledge the session's replies (16 x 4 MiB)");
}

void srv_acked_locked(srv_session_t *s, uint64_t n) {
  if (n > s->tx_msgs) n = s->tx_msgs; /* a client cannot acknowledge what was not sent */
  if (n <= s->tx_acked) return;
  s->tx_acked = n;
  while (s->log_head && s->log_head->num <= n) {
    reply_node_t *x = s->log_head;
    s->log_head = x->next;
    if (!s->log_head) s->log_tail = NULL;
    node_free(s, x);
  }
}

void srv_maybe_ack(srv_session_t *s, size_t len) {
  pthread_mutex_lock(&s->mu);
  s->rx_untold += len;
  int due = s->resumable && call_usable(s) &&
            (s->rx_msgs - s->rx_told >= RDEV_WIRE_ACK_EVERY || s->rx_untold >= RDEV_WIRE_ACK_BYTES);
  pthread_mutex_unlock(&s->mu);
  if (!due) return;
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.kind = rdev_v1_ReplyKind_ACK;
  srv_send_reply(s, &r, NULL);
}

void srv_flow_reattach_locked(srv_session_t *s, uint64_t acked) {
  srv_acked_locked(s, acked);
  while (s->sq_head && s->sq_head->num <= s->tx_acked) { /* a failed send the client had after all */
    reply_node_t *x = s->sq_head;
    s->sq_head = x->next;
    if (!s->sq_head) s->sq_tail = NULL;
    s->inflight -= x->bytes;
    node_free(s, x);
  }
  /* what the client did not get goes again, first: the kept replies
   * after its count, then the queue (none of it in flight: the old call's
   * batches are over) */
  for (reply_node_t *x = s->log_head; x; x = x->next) s->inflight += x->bytes;
  if (s->log_tail) {
    s->log_tail->next = s->sq_head;
    if (!s->sq_tail) s->sq_tail = s->log_tail;
    s->sq_head = s->log_head;
  }
  s->log_head = s->log_tail = NULL;
  s->broken = 0; /* the call is usable from here: replies go in number order */
  if (s->sq_head) start_send(s);
}

void srv_drop_queue(srv_session_t *s) {
  reply_node_t *n = s->send_busy ? s->sq_head->next : s->sq_head;
  if (s->send_busy)
    s->sq_head->next = NULL, s->sq_tail = s->sq_head;
  else
    s->sq_head = s->sq_tail = NULL;
  while (n) {
    reply_node_t *next = n->next;
    s->inflight -= n->bytes;
    node_free(s, n);
    n = next;
  }
  while (s->log_head) {
    reply_node_t *x = s->log_head;
    s->log_head = x->next;
    node_free(s, x);
  }
  s->log_tail = NULL;
}

void srv_send_status(srv_session_t *s, uint64_t seq, uint64_t stream, int status, const char *msg) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  r.status = status;
  r.stream = stream;
  snprintf(r.message, sizeof r.message, "%s", msg ? msg : "");
  srv_send_reply(s, &r, NULL);
}

void srv_post_next_recv(srv_session_t *s) {
  if (s->released || s->half_closed) return;
  if (s->inflight >= s->max_inflight || s->streams_full)
    s->recv_paused = 1;
  else
    srv_post_recv(s);
}

static void on_start(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, start_op));
  (void)ok;
  atomic_fetch_sub(&s->call_ops, 1);
  srv_session_unref(s);
}

static void on_send(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, send_op));
  pthread_mutex_lock(&s->mu);
  if (s->sending_copy) grpc_byte_buffer_destroy(s->sending_copy);
  s->sending_copy = NULL;
  reply_node_t *n = s->sq_head;
  s->sq_head = n->next;
  if (!s->sq_head) s->sq_tail = NULL;
  s->inflight -= n->bytes;
  s->send_busy = 0;
  int keep = s->resumable && !s->released;
  if (!ok) {
    s->broken = 1;
    if (!keep) {
      srv_drop_queue(s);
    } else if (n->num > s->tx_acked) { /* it may not have arrived: the call that resumes sends it again */
      n->next = s->sq_head;
      s->sq_head = n;
      if (!s->sq_tail) s->sq_tail = n;
      s->inflight += n->bytes;
      n = NULL;
    } /* else the client has it: freed below */
  } else if (s->sq_head && call_usable(s)) {
    start_send(s);
  }
  srv_maybe_send_status(s);
  maybe_resume_recv(s);
  pthread_mutex_unlock(&s->mu);
  if (n && ok && keep) flatten(n); /* kept until the client acknowledges it */
  pthread_mutex_lock(&s->mu);
  if (n && ok && keep && n->num > s->tx_acked && !s->released) {
    /* in number order (another thread's send may have been logged first) */
    reply_node_t **pp = s->log_tail && s->log_tail->num > n->num ? &s->log_head
                        : s->log_tail                            ? &s->log_tail->next
                                                                 : &s->log_head;
    while (*pp && (*pp)->num < n->num) pp = &(*pp)->next;
    n->next = *pp;
    *pp = n;
    if (!n->next) s->log_tail = n;
    n = NULL;
  }
  if (n) node_free(s, n);
  /* the send is the call's until its reply is where a call that takes the
   * session over finds it */
  atomic_fetch_sub(&s->call_ops, 1);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
}

static void on_status(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, status_op));
  (void)ok;
  atomic_fetch_sub(&s->call_ops, 1);
  srv_session_unref(s);
}

void srv_send_data(srv_session_t *s, uint64_t seq, grpc_slice data) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  r.seq = seq;
  srv_send_reply(s, &r, &data);
  grpc_slice_unref(data);
}

/* A stream's queue drained to where room_cb was queued: reading may go on. */
static void room_cb(void *user, int status) {
  srv_session_t *s = user;
  (void)status;
  pthread_mutex_lock(&s->mu);
  s->streams_full--;
  maybe_resume_recv(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
}

/* At most what one request queues on a stream: a fence, a gather, its
 * callback and a room_cb (an async Write after a shown Read). What one
 * message may queue past the receive pause must fit in the rest of the
 * ring: the completion-queue thread (or the resumer) must never wait in a
 * submit (a fence may hold the stream until this very thread sent
 * replies). */
#define TASKS_PER_REQUEST 4
#define ROOM_AT ((size_t)SRV_STREAM_DEPTH - (size_t)(RDEV_WIRE_MAX_BATCH + 1) * TASKS_PER_REQUEST)
_Static_assert(ROOM_AT >= SRV_STREAM_DEPTH / 4, "a stream's ring too small for a full batch past the pause");

void srv_check_room(srv_session_t *s, rdev_rt_stream_t *st) {
  size_t pending = 0;
  if (rdev_rt_stream_pending(st, &pending) != RDEV_OK || pending < ROOM_AT) return;
  srv_session_ref(s);
  pthread_mutex_lock(&s->mu);
  s->streams_full++;
  pthread_mutex_unlock(&s->mu);
  if (rdev_rt_launch_callback(st, room_cb, s) != RDEV_OK) room_cb(s, RDEV_CANCELLED);
}

void srv_flow_init(srv_session_t *s) {
  s->start_op.done = on_start;
  s->send_op.done = on_send;
  s->status_op.done = on_status;
}
