/*
 * client/lib/session.c — the session: one bidirectional gRPC call to rdevd,
 * its send queue (gRPC allows one SEND_MESSAGE in flight per call), the
 * table of requests awaiting replies, and who polls the call: a caller
 * waiting for its reply polls for itself when no one else does, else the
 * receiver thread does (see "polling"). Polling turns replies into
 * completed waiters, D2H bytes in the caller's buffers, sticky stream
 * errors and kernel print output. Also the thread's last error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pb_decode.h>
#include <stdarg.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"

enum { TAG_OPEN = 1, TAG_STATUS, TAG_RECV, TAG_SEND, TAG_CLOSE };
#define TAG(x) ((void *)(uintptr_t)(x))

#define CLOSE_GRACE_MS 10000 /* half-close to end of call before we cancel */
#define PRINT_MAX (1u << 20)

/* ---- last error ----------------------------------------------------------- */

static _Thread_local char tl_err[512];

const char *rdev_session_last_error(void) { return tl_err; }

int cl_error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_err, sizeof tl_err, fmt, ap);
  va_end(ap);
  return status;
}

int cl_error_msg(int status, const char *msg) {
  snprintf(tl_err, sizeof tl_err, "%s", msg && *msg ? msg : rdev_strerror(status));
  return status;
}

int cl_grpc_status(grpc_status_code code) {
  switch (code) {
    case GRPC_STATUS_OK: return RDEV_OK;
    case GRPC_STATUS_UNAUTHENTICATED: return RDEV_UNAUTHENTICATED;
    case GRPC_STATUS_PERMISSION_DENIED: return RDEV_PERMISSION_DENIED;
    case GRPC_STATUS_RESOURCE_EXHAUSTED: return RDEV_QUOTA_EXCEEDED;
    case GRPC_STATUS_UNIMPLEMENTED: return RDEV_API_NOT_SUPPORT;
    case GRPC_STATUS_INVALID_ARGUMENT: return RDEV_INVALID_PARAM;
    case GRPC_STATUS_INTERNAL: return RDEV_INTERNAL_ERROR;
    default: return RDEV_UNAVAILABLE;
  }
}

/* Who polls the call's completion queue (see "polling" below). */
enum { POLL_NONE, POLL_RX, POLL_CALLER };
static grpc_completion_type poll_once_locked(rdev_session_t *s, int who, gpr_timespec deadline);
static void rx_wake_locked(rdev_session_t *s);
static void caller_done_locked(rdev_session_t *s, bool polled);

/* ---- payload slices over user memory ---------------------------------------- */

cl_payload_track_t *cl_track_new(void) {
  cl_payload_track_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  pthread_mutex_init(&t->mu, NULL);
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&t->cv, &a);
  pthread_condattr_destroy(&a);
  t->refs = 1;
  return t;
}

static void track_unref_locked(cl_payload_track_t *t) {
  bool last = --t->refs == 0;
  if (t->refs == 1) pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  if (last) {
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
  }
}

static bool session_dead(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  bool dead = s->dead;
  pthread_mutex_unlock(&s->mu);
  return dead;
}

void cl_track_release_wait(rdev_session_t *s, cl_payload_track_t *t) {
  pthread_mutex_lock(&t->mu);
  bool counted = t->refs > 1;
  if (counted) {
    /* gRPC lets go of a slice as it finishes writing it, in whichever
     * thread polls: the receiver polls while this waits. */
    pthread_mutex_unlock(&t->mu);
    pthread_mutex_lock(&s->mu);
    s->nreleasing++;
    rx_wake_locked(s);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&t->mu);
  }
  while (t->refs > 1) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += 20 * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
    if (pthread_cond_timedwait(&t->cv, &t->mu, &dl) == ETIMEDOUT && t->refs > 1) {
      pthread_mutex_unlock(&t->mu);
      bool dead = session_dead(s);
      pthread_mutex_lock(&t->mu);
      if (dead) break;
    }
  }
  track_unref_locked(t);
  if (counted) {
    pthread_mutex_lock(&s->mu);
    s->nreleasing--;
    pthread_mutex_unlock(&s->mu);
  }
}

static void track_release(void *user) {
  cl_payload_track_t *t = user;
  RDEV_HANDOFF_TAKE(t);
  pthread_mutex_lock(&t->mu);
  track_unref_locked(t);
}

static void untracked_release(void *user) { (void)user; }

grpc_slice cl_payload_slice(const void *p, size_t len, cl_payload_track_t *t) {
  if (!t) return grpc_slice_new_with_user_data((void *)p, len, untracked_release, NULL);
  pthread_mutex_lock(&t->mu);
  t->refs++;
  pthread_mutex_unlock(&t->mu);
  RDEV_HANDOFF_GIVE(t);
  return grpc_slice_new_with_user_data((void *)p, len, track_release, t);
}

/* ---- waiters and the pending table ------------------------------------------ */

cl_waiter_t *cl_waiter_new(void) {
  cl_waiter_t *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, &a);
  pthread_condattr_destroy(&a);
  return w;
}

void cl_waiter_free(cl_waiter_t *w) {
  if (!w) return;
  pthread_cond_destroy(&w->cv);
  free(w);
}

static void pending_put(rdev_session_t *s, cl_pending_t *e) {
  size_t b = e->seq & (CL_PENDING_BUCKETS - 1);
  e->next = s->pending[b];
  s->pending[b] = e;
  s->npending++;
  if (!e->w) s->nasync++;
}

static cl_pending_t *pending_find(rdev_session_t *s, uint64_t seq) {
  for (cl_pending_t *e = s->pending[seq & (CL_PENDING_BUCKETS - 1)]; e; e = e->next)
    if (e->seq == seq) return e;
  return NULL;
}

static cl_pending_t *pending_take(rdev_session_t *s, uint64_t seq) {
  cl_pending_t **pp = &s->pending[seq & (CL_PENDING_BUCKETS - 1)];
  for (; *pp; pp = &(*pp)->next) {
    if ((*pp)->seq == seq) {
      cl_pending_t *e = *pp;
      *pp = e->next;
      s->npending--;
      if (!e->w) s->nasync--;
      return e;
    }
  }
  return NULL;
}

uint64_t cl_seq_reserve(rdev_session_t *s, uint64_t n) { return atomic_fetch_add(&s->next_seq, n); }

void cl_pending_forget(rdev_session_t *s, uint64_t first, uint64_t n) {
  pthread_mutex_lock(&s->mu);
  for (uint64_t i = 0; i < n; i++) free(pending_take(s, first + i));
  pthread_mutex_unlock(&s->mu);
}

void cl_stream_set_sticky_locked(rdev_session_t *s, uint64_t handle, int status, const char *msg) {
  if (!status || !handle) return;
  for (rdev_stream_t *st = s->streams; st; st = st->next) {
    if (st->handle != handle) continue;
    if (!st->sticky) {
      st->sticky = status;
      snprintf(st->sticky_msg, sizeof st->sticky_msg, "%s", msg && *msg ? msg : rdev_strerror(status));
    }
    return;
  }
}

/* One reply (or the end of the call) for pending entry e's waiter: its
 * first error is kept; it counts unless e is quiet. Under s->mu. */
static void waiter_complete_locked(rdev_session_t *s, const cl_pending_t *e, int status, const char *msg) {
  cl_waiter_t *w = e->w;
  if (status && !w->status) {
    w->status = status;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
  }
  if (e->quiet || --w->remaining > 0) return;
  s->completed = true;
  if (w->blocked) {
    w->blocked = false;
    s->nblocked--;
  }
  if (w->abandoned) {
    /* A late StreamSync answer must not lose the stream's error. */
    if (w->sync_stream && w->status) cl_stream_set_sticky_locked(s, w->sync_stream, w->status, w->msg);
    cl_waiter_free(w);
  } else {
    pthread_cond_signal(&w->cv);
  }
}

/* ---- sending ------------------------------------------------------------------ */

static void send_close_locked(rdev_session_t *s) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  s->close_sent = true;
  if (grpc_call_start_batch(s->call, &op, 1, TAG(TAG_CLOSE), NULL) != GRPC_CALL_OK)
    grpc_call_cancel(s->call, NULL);
}

static void send_start_locked(rdev_session_t *s, grpc_byte_buffer *bb) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = bb;
  /* No GRPC_WRITE_BUFFER_HINT: chttp2 completes a hinted send only once
   * its bytes were written, and a small one is not written until the next
   * unhinted send, which we start only after this one completed. */
  s->sending = bb;
  if (grpc_call_start_batch(s->call, &op, 1, TAG(TAG_SEND), NULL) != GRPC_CALL_OK) {
    /* Cannot happen with one send in flight; end the call rather than hang. */
    s->sending = NULL;
    grpc_byte_buffer_destroy(bb);
    grpc_call_cancel_with_status(s->call, GRPC_STATUS_INTERNAL, "rdev client: send refused", NULL);
  }
}

/* Batches stay well inside the server's message limit. */
#define BATCH_BYTES (48u << 10)

/* Under s->mu: takes the head of the send queue, together with the
 * batchable requests right behind a batchable head, within the batch
 * limits (count, Read bytes, size); returns the message to send. */
static grpc_byte_buffer *take_next_locked(rdev_session_t *s) {
  grpc_byte_buffer *msgs[RDEV_WIRE_MAX_BATCH];
  size_t n = 0, xfer = 0, bytes = 0;
  for (cl_send_t *q = s->sq_head; q && q->batchable && n < RDEV_WIRE_MAX_BATCH; q = q->next) {
    size_t framed = q->len + 12; /* field tag and length */
    if (xfer + q->xfer > s->batch_xfer || bytes + framed > BATCH_BYTES) break;
    xfer += q->xfer;
    bytes += framed;
    msgs[n++] = q->bb;
  }
  grpc_byte_buffer *bb = n > 1 ? rdev_wire_batch(msgs, n) : NULL;
  if (!bb) n = 1; /* alone (or no memory to batch: one at a time) */
  else for (size_t i = 0; i < n; i++) grpc_byte_buffer_destroy(msgs[i]);
  for (size_t i = 0; i < n; i++) {
    cl_send_t *q = s->sq_head;
    s->sq_head = q->next;
    if (!bb) bb = q->bb;
    free(q);
  }
  if (!s->sq_head) s->sq_tail = NULL;
  return bb;
}

static void send_done(rdev_session_t *s, bool ok) {
  pthread_mutex_lock(&s->mu);
  if (s->sending) grpc_byte_buffer_destroy(s->sending);
  s->sending = NULL;
  if (ok && !s->dead && s->sq_head) send_start_locked(s, take_next_locked(s));
  if (!s->sending && !s->sq_head && s->close_requested && !s->close_sent && !s->dead)
    send_close_locked(s);
  pthread_mutex_unlock(&s->mu);
}

static int dead_error_locked(rdev_session_t *s) {
  return cl_error(RDEV_UNAVAILABLE, "%s", s->dead ? s->dead_msg : "session is closing");
}

int cl_submit(rdev_session_t *s, rdev_v1_Request *req, const grpc_slice *payload, cl_waiter_t *w,
              void *dst, size_t count, uint64_t async_stream) {
  if (!req->seq) req->seq = atomic_fetch_add(&s->next_seq, 1);
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, req, payload);
  if (!bb) return cl_error(RDEV_INTERNAL_ERROR, "cannot encode request");
  cl_pending_t *e = NULL;
  cl_send_t *it = NULL;
  if (w || dst) {
    e = calloc(1, sizeof *e);
    if (!e) {
      grpc_byte_buffer_destroy(bb);
      return cl_error(RDEV_BAD_ALLOC, "out of host memory");
    }
    e->seq = req->seq;
    e->w = w;
    e->dst = dst;
    e->count = count;
    e->stream = async_stream;
    e->quiet = req->which_op == rdev_v1_Request_write_tag && req->op.write.quiet;
  }
  pthread_mutex_lock(&s->mu);
  if (s->dead || s->close_requested) {
    int rc = dead_error_locked(s);
    pthread_mutex_unlock(&s->mu);
    grpc_byte_buffer_destroy(bb);
    free(e);
    return rc;
  }
  if (s->sending) {
    it = malloc(sizeof *it);
    if (!it) {
      pthread_mutex_unlock(&s->mu);
      grpc_byte_buffer_destroy(bb);
      free(e);
      return cl_error(RDEV_BAD_ALLOC, "out of host memory");
    }
  }
  if (e) {
    pending_put(s, e);
    if (w && !e->quiet) w->remaining++;
  }
  if (!s->sending) {
    send_start_locked(s, bb);
  } else {
    it->bb = bb;
    it->len = grpc_byte_buffer_length(bb);
    it->xfer = req->which_op == rdev_v1_Request_read_tag ? (size_t)req->op.read.count : 0;
    it->batchable = payload == NULL;
    it->next = NULL;
    if (s->sq_tail) s->sq_tail->next = it;
    else s->sq_head = it;
    s->sq_tail = it;
  }
  /* A caller that waits polls for itself; without one, a queued request, a
   * payload still being written or an asynchronous Read's data needs the
   * receiver thread to make progress. */
  if (!w && (it || dst || payload)) rx_wake_locked(s);
  pthread_mutex_unlock(&s->mu);
  return RDEV_OK;
}

static bool past(const struct timespec *dl) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec > dl->tv_sec || (now.tv_sec == dl->tv_sec && now.tv_nsec >= dl->tv_nsec);
}

int cl_wait(rdev_session_t *s, cl_waiter_t *w, int32_t timeout_ms, int timeout_status) {
  struct timespec dl;
  gpr_timespec poll_dl = gpr_inf_future(GPR_CLOCK_MONOTONIC);
  if (timeout_ms >= 0) {
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
    poll_dl = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
  }
  bool timed_out = false, polled = false, shut = false;
  pthread_mutex_lock(&s->mu);
  if (w->remaining > 0) {
    w->blocked = true;
    s->nblocked++;
  }
  while (w->remaining > 0 && !timed_out) {
    if (s->poller == POLL_NONE && !s->dead && !shut) { /* no one polls: do it here, no hand-off */
      polled = true;
      grpc_completion_type type = poll_once_locked(s, POLL_CALLER, poll_dl);
      shut = type == GRPC_QUEUE_SHUTDOWN; /* only if misused during close */
      /* other threads' completions may keep coming: the deadline holds */
      timed_out = w->remaining > 0 && (type == GRPC_QUEUE_TIMEOUT || (timeout_ms >= 0 && past(&dl)));
    } else if (timeout_ms < 0) {
      pthread_cond_wait(&w->cv, &s->mu);
    } else {
      timed_out = pthread_cond_timedwait(&w->cv, &s->mu, &dl) == ETIMEDOUT && w->remaining > 0;
    }
  }
  if (w->blocked) {
    w->blocked = false;
    s->nblocked--;
  }
  if (timed_out) w->abandoned = true; /* the reply's handler frees it */
  caller_done_locked(s, polled);
  pthread_mutex_unlock(&s->mu);
  if (timed_out) return cl_error(timeout_status, "%s after %d ms", rdev_strerror(timeout_status), (int)timeout_ms);
  return RDEV_OK;
}

int cl_waiter_result(rdev_session_t *s, cl_waiter_t *w) {
  (void)s;
  if (!w->status) return RDEV_OK;
  return cl_error_msg(w->status, w->msg);
}

int cl_call(rdev_session_t *s, rdev_v1_Request *req, cl_result_t *res) {
  cl_waiter_t *w = cl_waiter_new();
  if (!w) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  int rc = cl_submit(s, req, NULL, w, NULL, 0, 0);
  if (rc) {
    cl_waiter_free(w);
    return rc;
  }
  cl_wait(s, w, -1, 0);
  rc = cl_waiter_result(s, w);
  if (res) {
    res->handle = w->handle;
    res->value = w->value;
    res->value2 = w->value2;
    res->elapsed_ms = w->elapsed_ms;
  }
  cl_waiter_free(w);
  return rc;
}

/* ---- receiving -------------------------------------------------------------- */

typedef struct {
  rdev_session_t *s;
  const rdev_v1_Reply *reply;
} rx_ctx_t;

/* Reply.data: straight into the destination its Read named (seq precedes
 * the payload on the wire); skipped when nothing waits for it. */
static bool data_decode(pb_istream_t *is, const pb_field_t *field, void **arg) {
  (void)field;
  rx_ctx_t *c = *arg;
  size_t n = is->bytes_left;
  uint8_t *dst = NULL;
  pthread_mutex_lock(&c->s->mu);
  cl_pending_t *e = pending_find(c->s, c->reply->seq);
  if (e && e->dst) {
    /* Only the polling thread removes Read entries: e stays valid unlocked. */
    e->got = n;
    if (n <= e->count) dst = e->dst;
  }
  pthread_mutex_unlock(&c->s->mu);
  return pb_read(is, dst, n);
}

static void deliver_print(rdev_session_t *s, const rdev_wire_bytes_t *text) {
  if (!text->data || !text->len) return;
  pthread_mutex_lock(&s->mu);
  rdev_print_fn fn = s->print_fn;
  void *user = s->print_user;
  pthread_mutex_unlock(&s->mu);
  fn(user, (const char *)text->data, text->len);
}

static void handle_reply(rdev_session_t *s, grpc_byte_buffer *bb) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  rx_ctx_t ctx = {s, &r};
  r.data.funcs.decode = data_decode;
  r.data.arg = &ctx;
  rdev_wire_bytes_t text = {.data = NULL, .len = 0, .max = PRINT_MAX};
  rdev_wire_bytes_decoder(&r.print, &text);
  const char *err = NULL;
  if (!rdev_wire_decode(bb, rdev_v1_Reply_fields, &r, &err)) {
    free(text.data);
    char why[160];
    snprintf(why, sizeof why, "rdev client: malformed reply from server (%s)", err ? err : "?");
    grpc_call_cancel_with_status(s->call, GRPC_STATUS_INTERNAL, why, NULL);
    return;
  }
  deliver_print(s, &text); /* before the reply completes anything */
  free(text.data);
  if (r.kind == rdev_v1_ReplyKind_PRINT) return;

  pthread_mutex_lock(&s->mu);
  cl_pending_t *e = pending_take(s, r.seq);
  if (e) {
    int st = r.status;
    const char *msg = r.message;
    char buf[96];
    if (!st && e->dst && e->got != e->count) {
      snprintf(buf, sizeof buf, "read reply carried %zu bytes, expected %zu", e->got, e->count);
      st = RDEV_PROTOCOL;
      msg = buf;
    }
    if (e->w) {
      e->w->handle = r.handle;
      e->w->value = r.value;
      e->w->value2 = r.value2;
      e->w->elapsed_ms = r.elapsed_ms;
      waiter_complete_locked(s, e, st, msg);
    } else if (st) {
      cl_stream_set_sticky_locked(s, e->stream ? e->stream : r.stream, st, msg);
    }
    free(e);
  } else if (r.status && r.stream) {
    /* A refused asynchronous request: reported at the stream's next sync. */
    cl_stream_set_sticky_locked(s, r.stream, r.status, r.message);
  }
  pthread_mutex_unlock(&s->mu);
}

/* Under s->mu: posts the call's one RECV_MESSAGE unless it is out (or the
 * call is over). Every poll starts with it; it is not reposted right after
 * a reply, because posting it makes gRPC announce the consumed window at
 * once, a write of its own (and a wake-up of rdevd) that a caller would
 * pay before returning with its reply. */
static void post_recv_locked(rdev_session_t *s) {
  if (s->recv_posted || s->recv_ended || s->dead) return;
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = &s->recv_bb;
  s->recv_posted = true;
  if (grpc_call_start_batch(s->call, &op, 1, TAG(TAG_RECV), NULL) != GRPC_CALL_OK) {
    s->recv_posted = false;
    s->recv_ended = true;
    grpc_call_cancel_with_status(s->call, GRPC_STATUS_INTERNAL, "rdev client: recv refused", NULL);
  }
}

/* The call ended: every waiter fails, later calls fail. */
static void on_status(rdev_session_t *s) {
  char *details = grpc_slice_to_c_string(s->status_details);
  pthread_mutex_lock(&s->mu);
  s->dead = true;
  if (s->status == GRPC_STATUS_OK)
    snprintf(s->dead_msg, sizeof s->dead_msg, "session ended%s%s", *details ? ": " : "", details);
  else
    snprintf(s->dead_msg, sizeof s->dead_msg, "session ended: %s (gRPC status %d)",
             *details ? details : "connection lost", (int)s->status);
  for (size_t b = 0; b < CL_PENDING_BUCKETS; b++) {
    cl_pending_t *e = s->pending[b];
    s->pending[b] = NULL;
    while (e) {
      cl_pending_t *next = e->next;
      if (e->w) waiter_complete_locked(s, e, RDEV_UNAVAILABLE, s->dead_msg);
      else cl_stream_set_sticky_locked(s, e->stream, RDEV_UNAVAILABLE, s->dead_msg);
      free(e);
      e = next;
    }
  }
  s->npending = 0;
  s->nasync = 0;
  while (s->sq_head) {
    cl_send_t *it = s->sq_head;
    s->sq_head = it->next;
    grpc_byte_buffer_destroy(it->bb);
    free(it);
  }
  s->sq_tail = NULL;
  pthread_cond_broadcast(&s->dead_cv);
  pthread_mutex_unlock(&s->mu);
  gpr_free(details);
}

/* ---- polling ----------------------------------------------------------------
 *
 * One thread at a time polls the call's completion queue and handles what
 * it yields: the receiver thread, or a caller waiting in cl_wait. A caller
 * that finds no one polling polls for itself, so its reply (and the send
 * completions before it) cost no hand-off between threads, each of which is
 * a wake-up (~20 us on the 2-vCPU VM rdev bench runs on). The receiver
 * thread polls whenever no caller does, except that after it completed a
 * caller's wait it parks for RX_PARK_NS, betting that the caller comes back
 * and polls for itself. Whoever adds work that must progress without a
 * waiting caller (background_locked) un-parks it (rx_wake_locked); it also
 * polls again when the park ends (server pings, the call's end, unsolicited
 * print output).
 */

#define RX_PARK_NS (20 * 1000000LL)

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One completion of the call. */
static void dispatch(rdev_session_t *s, grpc_event ev) {
  switch ((uintptr_t)ev.tag) {
    case TAG_RECV: {
      grpc_byte_buffer *bb = s->recv_bb;
      s->recv_bb = NULL;
      pthread_mutex_lock(&s->mu);
      s->recv_posted = false;
      s->recv_ended = !ev.success || !bb; /* the call is over */
      pthread_mutex_unlock(&s->mu);
      if (bb) {
        if (ev.success) handle_reply(s, bb);
        grpc_byte_buffer_destroy(bb);
      }
      break;
    }
    case TAG_SEND: send_done(s, ev.success != 0); break;
    case TAG_STATUS: on_status(s); break;
    default: break; /* TAG_CLOSE */
  }
}

/* Under s->mu, with no one polling: waits up to deadline for one
 * completion and handles it (with s->mu released); returns with s->mu
 * held. Handling stays inside the poller's turn, so completions are
 * handled one at a time, in order, as by a single receiver. */
static grpc_completion_type poll_once_locked(rdev_session_t *s, int who, gpr_timespec deadline) {
  s->poller = who;
  post_recv_locked(s);
  pthread_mutex_unlock(&s->mu);
  grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);
  if (ev.type == GRPC_OP_COMPLETE) dispatch(s, ev);
  pthread_mutex_lock(&s->mu);
  s->poller = POLL_NONE;
  return ev.type;
}

/* Under s->mu: whether something must progress with no caller polling:
 * callers blocked in cl_wait (one may be the poller), callers waiting for
 * gRPC to let go of their memory, queued or unfinished sends, asynchronous
 * Reads, the session's end. */
static bool background_locked(rdev_session_t *s) {
  return s->nblocked > 0 || s->nreleasing > 0 || s->sq_head || s->sending || s->nasync > 0 ||
         s->close_requested || s->dead;
}

/* Under s->mu: if there is work for it, the receiver polls as soon as no
 * caller does. */
static void rx_wake_locked(rdev_session_t *s) {
  if (!background_locked(s)) return;
  s->park_until = 0;
  if (s->rx_idle) pthread_cond_signal(&s->rx_cv);
}

/* Under s->mu: a caller's wait ended; it polled for itself (polled) or
 * was woken by whoever polled. What is left goes to the receiver; else a
 * caller that polls for itself keeps the receiver parked. */
static void caller_done_locked(rdev_session_t *s, bool polled) {
  if (polled && !background_locked(s)) s->park_until = now_ns() + RX_PARK_NS;
  else rx_wake_locked(s);
}

static void *rx_main(void *arg) {
  rdev_session_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    for (;;) {
      int64_t now = now_ns();
      if (s->poller == POLL_NONE && (now >= s->park_until || background_locked(s))) break;
      /* A caller polls (look again within a park's time), or parked. */
      int64_t until = s->poller == POLL_NONE ? s->park_until : now + RX_PARK_NS;
      struct timespec dl = {(time_t)(until / 1000000000LL), (long)(until % 1000000000LL)};
      s->rx_idle = true;
      pthread_cond_timedwait(&s->rx_cv, &s->mu, &dl);
      s->rx_idle = false;
    }
    s->park_until = 0;
    s->completed = false;
    if (poll_once_locked(s, POLL_RX, gpr_inf_future(GPR_CLOCK_MONOTONIC)) == GRPC_QUEUE_SHUTDOWN) break;
    /* A caller just got its reply here: it may well call again soon. */
    if (s->completed && !background_locked(s)) s->park_until = now_ns() + RX_PARK_NS;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- open and close --------------------------------------------------------- */

static void default_print(void *user, const char *text, size_t len) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
}

void rdev_session_set_print_fn(rdev_session_t *s, rdev_print_fn fn, void *user) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->print_fn = fn ? fn : default_print;
  s->print_user = fn ? user : NULL;
  pthread_mutex_unlock(&s->mu);
}

/* Frees what open made once nothing is in flight on the call. */
static void session_free(rdev_session_t *s) {
  if (s->call) grpc_call_unref(s->call);
  if (s->cq) {
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(s->cq);
  }
  if (s->channel) grpc_channel_destroy(s->channel);
  if (s->nauth_md) {
    grpc_slice_unref(s->auth_md.key);
    grpc_slice_unref(s->auth_md.value);
  }
  grpc_metadata_array_destroy(&s->init_md);
  grpc_metadata_array_destroy(&s->trailing_md);
  grpc_slice_unref(s->status_details);
  if (s->recv_bb) grpc_byte_buffer_destroy(s->recv_bb);
  pthread_cond_destroy(&s->dead_cv);
  pthread_cond_destroy(&s->rx_cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
  grpc_shutdown();
}

static gpr_timespec ms_from_now(int64_t ms) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* glibc gives every freed block of a received MiB back to the kernel (trim,
 * munmap), and the page faults and TLB shootdowns that follow bound D2H at a
 * tenth of what the wire carries (profiled with rdev bench). Once per
 * process, unless the program set glibc's own knobs or RDEV_MALLOC_DEFAULTS. */
static void tune_malloc_once(void) {
  if (getenv("RDEV_MALLOC_DEFAULTS") || getenv("MALLOC_TRIM_THRESHOLD_") || getenv("MALLOC_MMAP_THRESHOLD_") ||
      getenv("GLIBC_TUNABLES"))
    return;
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

/* The server's batch limit from its open metadata: between one chunk (what
 * servers without the key take) and this client's own limit. */
static size_t batch_xfer_of(grpc_slice v) {
  char buf[24];
  size_t n = GRPC_SLICE_LENGTH(v) < sizeof buf - 1 ? GRPC_SLICE_LENGTH(v) : sizeof buf - 1;
  memcpy(buf, GRPC_SLICE_START_PTR(v), n);
  buf[n] = '\0';
  unsigned long long x = strtoull(buf, NULL, 10);
  if (x < RDEV_WIRE_MAX_CHUNK) return RDEV_WIRE_MAX_CHUNK;
  return x > RDEV_WIRE_MAX_BATCH_XFER ? RDEV_WIRE_MAX_BATCH_XFER : (size_t)x;
}

int rdev_session_open(const char *target, const rdev_options_t *opts, rdev_session_t **out) {
  static pthread_once_t tuned = PTHREAD_ONCE_INIT;
  pthread_once(&tuned, tune_malloc_once);
  if (!out) return cl_error(RDEV_INVALID_PARAM, "out is NULL");
  *out = NULL;
  if (!target || !*target) return cl_error(RDEV_INVALID_PARAM, "no target");
  int64_t timeout_ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 10000;

  rdev_session_t *s = calloc(1, sizeof *s);
  if (!s) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  grpc_init();
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->dead_cv, &ca);
  pthread_cond_init(&s->rx_cv, &ca);
  pthread_condattr_destroy(&ca);
  atomic_init(&s->next_seq, 1);
  atomic_init(&s->device, 0);
  atomic_init(&s->device_count, -1);
  s->batch_xfer = RDEV_WIRE_MAX_CHUNK; /* until the server says more */
  s->print_fn = default_print;
  grpc_metadata_array_init(&s->init_md);
  grpc_metadata_array_init(&s->trailing_md);
  s->status_details = grpc_empty_slice();

  /* Messages up to a chunk plus framing; reconnect quickly to a server that
   * is just starting (the session waits for it up to the connect timeout);
   * no transparent retries of the session call; a connection of its own. */
  struct {
    const char *key;
    int value;
  } iargs[] = {
      {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (int)RDEV_WIRE_MAX_MESSAGE},
      {GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, (int)RDEV_WIRE_MAX_MESSAGE},
      {GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100},
      {GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100},
      {GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000},
      {GRPC_ARG_ENABLE_RETRIES, 0},
      {GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1},
      {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20}, /* fixed window: see server.c */
      {GRPC_ARG_HTTP2_BDP_PROBE, 0},
  };
  enum { NARGS = sizeof iargs / sizeof iargs[0] };
  grpc_arg args[NARGS];
  memset(args, 0, sizeof args);
  for (int i = 0; i < NARGS; i++) {
    args[i].type = GRPC_ARG_INTEGER;
    args[i].key = (char *)iargs[i].key;
    args[i].value.integer = iargs[i].value;
  }
  grpc_channel_args chargs = {NARGS, args};
  grpc_channel_credentials *creds;
  int arc = cl_auth_setup(s, opts, &creds);
  if (arc) {
    session_free(s);
    return arc;
  }
  s->channel = grpc_channel_create(target, creds, &chargs);
  grpc_channel_credentials_release(creds);
  s->cq = grpc_completion_queue_create_for_next(NULL);
  s->call = grpc_channel_create_call(s->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                     grpc_slice_from_static_string(RDEV_WIRE_METHOD_SESSION), NULL,
                                     gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  if (!s->call) {
    session_free(s);
    return cl_error(RDEV_UNAVAILABLE, "cannot create a call to %s", target);
  }

  grpc_op ops[2];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY | GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
  ops[0].data.send_initial_metadata.count = s->nauth_md;
  ops[0].data.send_initial_metadata.metadata = &s->auth_md;
  ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[1].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
  grpc_call_error ce = grpc_call_start_batch(s->call, ops, 2, TAG(TAG_OPEN), NULL);
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  ops[0].data.recv_status_on_client.trailing_metadata = &s->trailing_md;
  ops[0].data.recv_status_on_client.status = &s->status;
  ops[0].data.recv_status_on_client.status_details = &s->status_details;
  grpc_call_error ce2 = grpc_call_start_batch(s->call, ops, 1, TAG(TAG_STATUS), NULL);
  if (ce != GRPC_CALL_OK || ce2 != GRPC_CALL_OK) {
    /* Nothing we can wait for reliably: cancel and drain what was started. */
    grpc_call_cancel(s->call, NULL);
    grpc_call_unref(s->call);
    s->call = NULL;
    session_free(s);
    return cl_error(RDEV_INTERNAL_ERROR, "cannot start the session call (%d/%d)", ce, ce2);
  }

  /* Wait for the server's initial metadata (it accepted the session). */
  gpr_timespec deadline = ms_from_now(timeout_ms);
  bool opened = false, open_ok = false, got_status = false, cancelled = false, timed_out = false;
  while (!opened && !got_status) {
    grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT) {
      timed_out = true;
      break;
    }
    if (ev.type != GRPC_OP_COMPLETE) continue;
    if (ev.tag == TAG(TAG_OPEN)) {
      opened = true;
      open_ok = ev.success != 0;
    } else if (ev.tag == TAG(TAG_STATUS)) {
      got_status = true;
    }
  }
  if (opened && open_ok && !got_status) {
    /* Accepted only with the server's mark; a refusal's status follows its
     * (unmarked) initial metadata: wait for it. */
    bool marked = false;
    for (size_t i = 0; i < s->init_md.count; i++) {
      const grpc_metadata *m = &s->init_md.metadata[i];
      marked |= grpc_slice_str_cmp(m->key, RDEV_WIRE_SESSION_OPEN_KEY) == 0;
      if (grpc_slice_str_cmp(m->key, RDEV_WIRE_BATCH_XFER_KEY) == 0) s->batch_xfer = batch_xfer_of(m->value);
    }
    while (!marked && !got_status) {
      grpc_event ev = grpc_completion_queue_next(s->cq, deadline, NULL);
      if (ev.type == GRPC_QUEUE_TIMEOUT) {
        timed_out = true;
        break;
      }
      if (ev.type == GRPC_OP_COMPLETE && ev.tag == TAG(TAG_STATUS)) got_status = true;
    }
    if (!marked && !got_status) open_ok = false;
  }
  if (opened && open_ok && !got_status) {
    pthread_mutex_lock(&s->mu);
    post_recv_locked(s);
    pthread_mutex_unlock(&s->mu);
    if (pthread_create(&s->rx_thread, NULL, rx_main, s) != 0) {
      grpc_call_cancel(s->call, NULL);
      /* Drain by hand: the status and the posted recv. */
      bool st = false, rx = !s->recv_posted;
      while (!st || !rx) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.tag == TAG(TAG_STATUS)) st = true;
        if (ev.tag == TAG(TAG_RECV)) rx = true;
      }
      session_free(s);
      return cl_error(RDEV_INTERNAL_ERROR, "cannot start the receiver thread");
    }
    s->rx_started = true;
    *out = s;
    return RDEV_OK;
  }

  /* Failed: end the call and collect both batches before freeing. */
  if (!got_status) {
    grpc_call_cancel(s->call, NULL);
    cancelled = true;
  }
  while (!opened || !got_status) {
    grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    if (ev.type != GRPC_OP_COMPLETE) continue;
    if (ev.tag == TAG(TAG_OPEN)) opened = true;
    if (ev.tag == TAG(TAG_STATUS)) got_status = true;
  }
  int rc;
  if (timed_out) {
    rc = cl_error(RDEV_UNAVAILABLE, "cannot reach rdevd at %s within %lld ms", target,
                  (long long)timeout_ms);
  } else {
    char *details = grpc_slice_to_c_string(s->status_details);
    rc = cl_grpc_status(s->status);
    if (rc == RDEV_OK) rc = RDEV_UNAVAILABLE;
    cl_error(rc, "rdevd at %s refused the session: %s (gRPC status %d)", target,
             *details ? details : (cancelled ? "cancelled" : "no detail"), (int)s->status);
    gpr_free(details);
  }
  session_free(s);
  return rc;
}

void rdev_session_close(rdev_session_t *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->close_requested = true;
  if (!s->dead && !s->sending && !s->sq_head && !s->close_sent) send_close_locked(s);
  rx_wake_locked(s); /* close_requested: work for it */
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  dl.tv_sec += CLOSE_GRACE_MS / 1000;
  bool cancelled = false;
  while (!s->dead) {
    if (cancelled) {
      pthread_cond_wait(&s->dead_cv, &s->mu);
    } else if (pthread_cond_timedwait(&s->dead_cv, &s->mu, &dl) == ETIMEDOUT && !s->dead) {
      pthread_mutex_unlock(&s->mu);
      grpc_call_cancel(s->call, NULL);
      pthread_mutex_lock(&s->mu);
      cancelled = true;
    }
  }
  pthread_mutex_unlock(&s->mu);
  /* The call ended and no new operation starts on it: the queue drains. */
  grpc_completion_queue_shutdown(s->cq);
  if (s->rx_started) pthread_join(s->rx_thread, NULL);
  grpc_completion_queue_destroy(s->cq);
  s->cq = NULL;
  cl_free_streams_events(s);
  cl_addr_map_destroy(s);
  session_free(s);
}
