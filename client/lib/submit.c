/*
 * client/lib/submit.c — the submit API: how the library's API files put a
 * request on the session call, one function per mode (synchronous calls,
 * fire-and-forget stream work, Writes of the caller's memory, Reads into the
 * caller's buffers, and groups of them that one caller waits for). Each
 * mode picks what the request expects back (pending.c), queues it
 * (send.c) and waits or wakes the receiver (poll.c). Also the tracking of
 * caller memory lent to gRPC as zero-copy payload. Owns cl_group_t and
 * the payload tracks; calls poll.c, send.c, pending.c, error.c and the wire
 * codec.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "client.h"
#include "rdev/clock.h"

/* ---- payload slices over user memory ---------------------------------------- */

/* Tracks user memory lent to gRPC as zero-copy payload slices: a
 * synchronous Write returns only once gRPC let go of every slice, so the
 * caller may reuse its buffer. Refcounted (the owner plus one per slice):
 * when the session died, gRPC may keep a slice until the call is destroyed
 * (it no longer reads it), and the owner stops waiting. */
typedef struct cl_payload_track {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
  size_t bytes; /* the session's copies tracker: their bytes */
} cl_payload_track_t;

static cl_payload_track_t *track_new(void) {
  cl_payload_track_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  pthread_mutex_init(&t->mu, NULL);
  rdev_clock_cond_init(&t->cv);
  t->refs = 1;
  return t;
}

static void track_unref_locked(cl_payload_track_t *t) {
  bool last = --t->refs == 0;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  if (last) {
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
  }
}

/* Whether t still holds more than `keep` bytes (t->mu held); keep
 * SIZE_MAX: whether any slice of it is out. */
static bool track_holds(const cl_payload_track_t *t, size_t keep) {
  return keep == SIZE_MAX ? t->refs > 1 : t->bytes > keep;
}

/* Waits until gRPC released t's slices (keep SIZE_MAX: every one; else
 * until at most keep bytes are out) or the session ended. t->mu is held on
 * return. */
static void track_wait_locked(rdev_session_t *s, cl_payload_track_t *t, size_t keep) {
  bool counted = track_holds(t, keep);
  if (counted) {
    /* gRPC lets go of a slice as it finishes writing it, in whichever
     * thread polls: the receiver polls while this waits. */
    pthread_mutex_unlock(&t->mu);
    cl_poll_release_begin(s);
    pthread_mutex_lock(&t->mu);
  }
  while (track_holds(t, keep)) {
    struct timespec dl;
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_nsec += 20 * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
    if (pthread_cond_timedwait(&t->cv, &t->mu, &dl) == ETIMEDOUT && track_holds(t, keep)) {
      pthread_mutex_unlock(&t->mu);
      bool dead = cl_poll_dead(s, NULL, 0);
      pthread_mutex_lock(&t->mu);
      if (dead) break;
    }
  }
  if (counted) {
    pthread_mutex_unlock(&t->mu);
    cl_poll_release_end(s);
    pthread_mutex_lock(&t->mu);
  }
}

/* Waits until gRPC released every slice of t or the session ended, then
 * drops the owner's reference. */
static void track_release_wait(rdev_session_t *s, cl_payload_track_t *t) {
  pthread_mutex_lock(&t->mu);
  track_wait_locked(s, t, SIZE_MAX);
  track_unref_locked(t);
}

static void track_release(void *user) {
  cl_payload_track_t *t = user;
  RDEV_HANDOFF_TAKE(t);
  pthread_mutex_lock(&t->mu);
  track_unref_locked(t);
}

/* A copied payload: its tracker and size, its bytes after it. */
typedef struct {
  cl_payload_track_t *t;
  size_t n;
} copy_t;

static void copy_release(void *user) {
  copy_t *c = user;
  RDEV_HANDOFF_TAKE(c); /* from copy_slice, through gRPC */
  cl_payload_track_t *t = c->t;
  pthread_mutex_lock(&t->mu);
  t->bytes -= c->n;
  free(c);
  track_unref_locked(t);
}

int cl_copies_open(rdev_session_t *s) {
  s->send.copies = track_new();
  return s->send.copies ? RDEV_OK : cl_error(RDEV_BAD_ALLOC, "out of host memory");
}

void cl_copies_close(rdev_session_t *s) {
  cl_payload_track_t *t = s->send.copies;
  if (!t) return;
  s->send.copies = NULL;
  pthread_mutex_lock(&t->mu);
  track_unref_locked(t); /* the copies still out keep it */
}

/* A slice holding a copy of len bytes at p, counted in the session's
 * copies; waits first while they hold CL_COPIES_MAX (the server not
 * reading: its backpressure reaches the caller here). Empty on no memory. */
static grpc_slice copy_slice(rdev_session_t *s, const void *p, size_t len) {
  cl_payload_track_t *t = s->send.copies;
  copy_t *c = malloc(sizeof *c + len);
  if (!c) return grpc_empty_slice();
  memcpy(c + 1, p, len);
  c->t = t;
  c->n = len;
  pthread_mutex_lock(&t->mu);
  track_wait_locked(s, t, CL_COPIES_MAX - len);
  t->refs++;
  t->bytes += len;
  pthread_mutex_unlock(&t->mu);
  RDEV_HANDOFF_GIVE(c);
  return grpc_slice_new_with_user_data(c + 1, len, copy_release, c);
}

/* A slice over len bytes at p, not copied; t counts it. */
static grpc_slice payload_slice(const void *p, size_t len, cl_payload_track_t *t) {
  pthread_mutex_lock(&t->mu);
  t->refs++;
  pthread_mutex_unlock(&t->mu);
  RDEV_HANDOFF_GIVE(t);
  return grpc_slice_new_with_user_data((void *)p, len, track_release, t);
}

/* ---- submitting ------------------------------------------------------------------ */

static uint64_t seq_of(rdev_session_t *s, rdev_v1_Request *req) {
  if (!req->seq) req->seq = cl_seq_reserve(s, 1);
  return req->seq;
}

/* Encodes req (its seq assigned) with an optional payload, queues it and
 * registers e (may be NULL: no reply expected). caller_waits: a caller
 * waits for e and polls for itself; else the receiver is woken for what
 * must progress without one (a queued request, a payload being written, an
 * asynchronous Read's data). On error nothing was registered (e freed). */
static int submit(rdev_session_t *s, rdev_v1_Request *req, const grpc_slice *payload, cl_pending_t *e,
                  bool caller_waits) {
  uint8_t enc[RDEV_WIRE_MAX_REQUEST_FIELDS];
  size_t len = 0;
  grpc_byte_buffer *bb = NULL;
  if (payload)
    bb = rdev_wire_encode(rdev_v1_Request_fields, req, payload);
  else
    len = rdev_wire_encode_request(req, enc, sizeof enc);
  if (payload ? !bb : !len) {
    cl_pending_discard(e);
    return cl_error(RDEV_INTERNAL_ERROR, "cannot encode request");
  }
  size_t xfer = req->which_op == rdev_v1_Request_read_tag ? (size_t)req->op.read.count : 0;
  bool queued = false;
  pthread_mutex_lock(&s->mu);
  int rc = cl_poll_check_open_locked(s);
  if (!rc) rc = bb ? cl_send_message_locked(s, bb, &queued) : cl_send_small_locked(s, enc, len, xfer, &queued);
  if (rc) {
    pthread_mutex_unlock(&s->mu);
    if (bb) grpc_byte_buffer_destroy(bb);
    cl_pending_discard(e);
    return rc;
  }
  if (e) cl_pending_put_locked(s, e);
  if (!caller_waits && (queued || payload || e)) cl_poll_wake_locked(s);
  pthread_mutex_unlock(&s->mu);
  return RDEV_OK;
}

static int no_memory(void) { return cl_error(RDEV_BAD_ALLOC, "out of host memory"); }

/* Submits req expecting one reply that completes a new waiter, and waits
 * for it. RDEV_OK: *out is the completed waiter (the caller frees it);
 * else the submit's error, or timeout_status with the waiter abandoned. */
static int call_wait(rdev_session_t *s, rdev_v1_Request *req, const grpc_slice *payload, int32_t timeout_ms,
                     int timeout_status, uint64_t sync_stream, cl_waiter_t **out) {
  cl_waiter_t *w = cl_waiter_new(sync_stream);
  if (!w) return no_memory();
  cl_pending_t *e = cl_expect_reply(seq_of(s, req), w, false);
  int rc = e ? submit(s, req, payload, e, true) : no_memory();
  if (rc) {
    cl_waiter_free(w);
    return rc;
  }
  rc = cl_wait(s, w, timeout_ms < 0 ? -1 : timeout_ms, timeout_status);
  if (rc) return rc; /* w abandoned: its late reply's handler frees it */
  *out = w;
  return RDEV_OK;
}

/* call_wait, then the waiter's result into res. */
static int call_result(rdev_session_t *s, rdev_v1_Request *req, const grpc_slice *payload, int32_t timeout_ms,
                       int timeout_status, cl_result_t *res) {
  cl_waiter_t *w;
  int rc = call_wait(s, req, payload, timeout_ms, timeout_status, 0, &w);
  if (rc) return rc;
  rc = cl_waiter_result(w, res);
  cl_waiter_free(w);
  return rc;
}

/* ---- the modes -------------------------------------------------------------------- */

int cl_call(rdev_session_t *s, rdev_v1_Request *req, cl_result_t *res) {
  return cl_call_timeout(s, req, -1, RDEV_OK, res);
}

int cl_call_timeout(rdev_session_t *s, rdev_v1_Request *req, int32_t timeout_ms, int timeout_status, cl_result_t *res) {
  return call_result(s, req, NULL, timeout_ms, timeout_status, res);
}

int cl_call_with(rdev_session_t *s, rdev_v1_Request *req, const void *data, size_t n, cl_result_t *res) {
  grpc_slice payload = grpc_slice_from_copied_buffer(data, n);
  int rc = call_result(s, req, &payload, -1, RDEV_OK, res);
  grpc_slice_unref(payload);
  return rc;
}

int cl_send_async_with(rdev_session_t *s, rdev_v1_Request *req, const void *data, size_t n) {
  seq_of(s, req);
  grpc_slice payload = grpc_slice_from_copied_buffer(data, n);
  int rc = submit(s, req, &payload, NULL, false);
  grpc_slice_unref(payload);
  return rc;
}

int cl_call_stream_sync(rdev_session_t *s, rdev_v1_Request *req, int32_t timeout_ms, bool session_errors,
                        bool *answered) {
  uint64_t stream = req->op.stream_sync.stream;
  cl_waiter_t *w;
  *answered = false;
  int rc = call_wait(s, req, NULL, timeout_ms, RDEV_RT_STREAM_SYNC_TIMEOUT, stream, &w);
  if (rc) return rc;                                         /* a late error reply goes sticky (pending.c) */
  *answered = cl_waiter_result(w, NULL) != RDEV_UNAVAILABLE; /* not the call's end */
  /* The stream's refused async requests come before the sync's own
   * answer; the session's refused quiet requests after it (a sync that
   * failed leaves them to the next). */
  char msg[CL_MSG_MAX];
  int sticky = cl_sticky_take(s, stream, msg);
  if (sticky)
    rc = cl_error_msg(sticky, msg);
  else if ((rc = cl_waiter_result(w, NULL)) == RDEV_OK && session_errors && (sticky = cl_sticky_take(s, 0, msg)))
    rc = cl_error_msg(sticky, msg);
  cl_waiter_free(w);
  return rc;
}

int cl_send_async(rdev_session_t *s, rdev_v1_Request *req) {
  seq_of(s, req);
  return submit(s, req, NULL, NULL, false);
}

/* A Write asked for with bulk: queued, then its bytes sent as a DATA
 * message, under the bulk send lock (so DATA messages keep the Writes'
 * order). The receiver is woken whether or not a caller waits: the
 * queued Writes must go out while this thread may block in the send. */
static int write_bulk(rdev_session_t *s, rdev_v1_Request *req, cl_pending_t *e, const void *src, size_t n) {
  cl_bulk_send_lock(s);
  bool on = cl_bulk_ready(s);                           /* it and the connection change together, under the send lock */
  req->op.write.bulk_conn = cl_bulk_conn_locked(s);     /* the connection its DATA goes on */
  if (!cl_bulk_data_keep_locked(s, req->seq, src, n)) { /* kept before the Write goes, for a next connection */
    cl_bulk_send_unlock(s);
    cl_pending_discard(e);
    return no_memory();
  }
  int rc = submit(s, req, NULL, e, false);
  /* Failing, or lost since the caller chose it: a resumable session sends
   * it on the next connection (bulk_data.c), in another the server fails
   * the Write (its bytes come on no connection; a synchronous copy runs
   * again) */
  if (!rc)
    cl_bulk_send_data(s, req->seq, src, n, on);
  else
    cl_bulk_data_unkeep_locked(s);
  cl_bulk_send_unlock(s);
  return rc;
}

int cl_write_async(rdev_session_t *s, rdev_v1_Request *req, const void *src, size_t n) {
  seq_of(s, req);
  if (req->op.write.bulk) return write_bulk(s, req, NULL, src, n);
  /* copied: the caller may reuse src once this returns (rdev.h) */
  grpc_slice payload = copy_slice(s, src, n);
  if (GRPC_SLICE_IS_EMPTY(payload) && n) return no_memory();
  int rc = submit(s, req, &payload, NULL, false);
  grpc_slice_unref(payload);
  return rc;
}

int cl_send_expect(rdev_session_t *s, rdev_v1_Request *req, cl_pending_t *e) { return submit(s, req, NULL, e, false); }

int cl_read_into_async(rdev_session_t *s, rdev_v1_Request *req, void *dst) {
  cl_pending_t *e = cl_expect_async_read(seq_of(s, req), req->op.read.stream, dst, (size_t)req->op.read.count);
  if (!e) return no_memory();
  return submit(s, req, NULL, e, false);
}

/* ---- groups ----------------------------------------------------------------------- */

int cl_group_begin(cl_group_t *g, rdev_session_t *s, uint64_t nwrites) {
  g->s = s;
  g->w = cl_waiter_new(0);
  g->track = nwrites ? track_new() : NULL;
  if (!g->w || (nwrites && !g->track)) {
    cl_waiter_free(g->w);
    free(g->track);
    return no_memory();
  }
  /* The Writes' seqs, reserved: those of the quiet ones are forgotten at
   * the end. */
  g->first = g->next = nwrites ? cl_seq_reserve(s, nwrites) : 0;
  g->end = g->first + nwrites;
  return RDEV_OK;
}

int cl_write(cl_group_t *g, rdev_v1_Request *req, const void *src, size_t n) {
  req->seq = g->next++;
  req->op.write.quiet = g->next < g->end;
  cl_pending_t *e = cl_expect_reply(req->seq, g->w, req->op.write.quiet);
  if (req->op.write.bulk) return e ? write_bulk(g->s, req, e, src, n) : no_memory();
  grpc_slice payload = payload_slice(src, n, g->track);
  int rc = e ? submit(g->s, req, &payload, e, true) : no_memory();
  grpc_slice_unref(payload);
  return rc;
}

int cl_read_into(cl_group_t *g, rdev_v1_Request *req, void *dst) {
  cl_pending_t *e = cl_expect_read(seq_of(g->s, req), g->w, dst, (size_t)req->op.read.count);
  if (!e) return no_memory();
  return submit(g->s, req, NULL, e, true);
}

int cl_group_call(cl_group_t *g, rdev_v1_Request *req, const void *data, size_t n) {
  cl_pending_t *e = cl_expect_reply(seq_of(g->s, req), g->w, false);
  if (!e) return no_memory();
  if (!data) return submit(g->s, req, NULL, e, true);
  grpc_slice payload = grpc_slice_from_copied_buffer(data, n);
  int rc = submit(g->s, req, &payload, e, true);
  grpc_slice_unref(payload);
  return rc;
}

int cl_group_end(cl_group_t *g, int rc, cl_result_t *res) {
  cl_wait(g->s, g->w, -1, 0);
  if (g->end > g->first) cl_pending_forget(g->s, g->first, g->end - g->first); /* the quiet ones that succeeded */
  if (!rc) rc = cl_waiter_result(g->w, res);
  cl_waiter_free(g->w);
  /* gRPC may hold the caller's bytes a moment after the server answered. */
  if (g->track) track_release_wait(g->s, g->track);
  return rc;
}
