/*
 * client/lib/pending.c — what the session expects back: the table of
 * requests awaiting their FINAL reply (keyed by seq), the waiters their
 * synchronous callers block on, the handling of each reply (payload straight
 * into a Read's destination, kernel print output, waiter completion), and
 * the sticky errors of streams (the first error of their asynchronous work
 * since their last synchronize) and of the session (of quiet requests that
 * name no stream). Owns s->pend and the waiter and pending
 * entry objects; calls only error.c and the wire codec.
 *
 * A Read whose bytes come on the bulk connection (bulk.c) completes in two
 * parts: its frame, which bulk.c's thread reads straight into the
 * destination, and its in-band reply, which may come first. The reply
 * waits for the frame, so replies still complete in the server's order
 * (a stream's synchronize never before its Reads' bytes landed), and an
 * entry is never freed while the reader writes into its destination. A
 * frame lost with its connection comes again on the next (rdevd keeps it
 * until bulk.c acknowledges it), and one that comes twice is written once:
 * the second finds its entry done or gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pb_decode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "rdev/clock.h"

#define PRINT_MAX (1u << 20)

/* A thread blocked in a synchronous call. */
struct cl_waiter {
  pthread_cond_t cv;
  int remaining; /* replies still expected */
  int status;    /* first error among the replies */
  char msg[CL_MSG_MAX];
  uint64_t handle, addr, value, value2;
  float elapsed_ms;
  bool abandoned;       /* the caller gave up (timeout); the reply frees it */
  bool blocked;         /* counted in s->pend.nblocked */
  uint64_t sync_stream; /* StreamSync: server stream handle (sticky on late error) */
};

/* One request awaiting its FINAL reply, keyed by seq. */
struct cl_pending {
  uint64_t seq;
  struct cl_pending *next;
  cl_waiter_t *w;       /* NULL: asynchronous Read */
  uint8_t *dst;         /* Read: where the payload goes */
  size_t count;         /* Read: payload length expected */
  size_t got;           /* Read: payload length received */
  uint64_t stream;      /* asynchronous Read: server stream handle */
  cl_final_fn on_final; /* else: told the reply's status (or the call's end) */
  void *final_arg;
  bool quiet;   /* quiet Write: a reply comes only on error, and
                          * does not count toward w->remaining */
  uint8_t bulk; /* Read: BULK_* of its frame */
};

enum { BULK_NONE, BULK_BUSY, BULK_DONE };

static void default_print(void *user, const char *text, size_t len) {
  (void)user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
}

void cl_pending_init(rdev_session_t *s) {
  atomic_init(&s->pend.next_seq, 1);
  rdev_clock_cond_init(&s->pend.bulk_cv); /* its waits are timed */
  s->pend.print_fn = default_print;
}

void cl_session_set_print_fn(rdev_session_t *s, rdev_print_fn fn, void *user) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->pend.print_fn = fn ? fn : default_print;
  s->pend.print_user = fn ? user : NULL;
  pthread_mutex_unlock(&s->mu);
}

uint64_t cl_seq_reserve(rdev_session_t *s, uint64_t n) { return atomic_fetch_add(&s->pend.next_seq, n); }

/* ---- sticky stream errors ---------------------------------------------------- */

void cl_sticky_register_locked(rdev_session_t *s, cl_sticky_t *st, uint64_t handle) {
  st->handle = handle;
  st->prev = NULL;
  st->next = s->pend.sticky;
  if (s->pend.sticky) s->pend.sticky->prev = st;
  s->pend.sticky = st;
}

void cl_sticky_unregister_locked(rdev_session_t *s, cl_sticky_t *st) {
  if (st->prev)
    st->prev->next = st->next;
  else
    s->pend.sticky = st->next;
  if (st->next) st->next->prev = st->prev;
  st->prev = st->next = NULL;
}

/* Handle 0 is the session's own. */
static cl_sticky_t *sticky_find_locked(rdev_session_t *s, uint64_t handle) {
  if (!handle) return &s->pend.session;
  for (cl_sticky_t *st = s->pend.sticky; st; st = st->next)
    if (st->handle == handle) return st;
  return NULL;
}

/* Under s->mu: records the error as the sticky error of the stream with that
 * handle, or of the session for handle 0 (first error wins); a stream no
 * longer open: dropped (its errors went with it). */
static void sticky_set_locked(rdev_session_t *s, uint64_t handle, int status, const char *msg) {
  if (!status) return;
  cl_sticky_t *st = sticky_find_locked(s, handle);
  if (st && !st->status) {
    st->status = status;
    snprintf(st->msg, sizeof st->msg, "%s", msg && *msg ? msg : rdev_strerror(status));
  }
}

int cl_sticky_take(rdev_session_t *s, uint64_t handle, char msg[CL_MSG_MAX]) {
  pthread_mutex_lock(&s->mu);
  cl_sticky_t *st = sticky_find_locked(s, handle);
  int status = st ? st->status : 0;
  if (status) {
    memcpy(msg, st->msg, CL_MSG_MAX);
    st->status = 0;
    st->msg[0] = '\0';
  }
  pthread_mutex_unlock(&s->mu);
  return status;
}

/* ---- waiters ------------------------------------------------------------------ */

cl_waiter_t *cl_waiter_new(uint64_t sync_stream) {
  cl_waiter_t *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  rdev_clock_cond_init(&w->cv);
  w->sync_stream = sync_stream;
  return w;
}

void cl_waiter_free(cl_waiter_t *w) {
  if (!w) return;
  pthread_cond_destroy(&w->cv);
  free(w);
}

int cl_waiter_result(const cl_waiter_t *w, cl_result_t *res) {
  if (res) {
    res->handle = w->handle;
    res->addr = w->addr;
    res->value = w->value;
    res->value2 = w->value2;
    res->elapsed_ms = w->elapsed_ms;
  }
  if (!w->status) return RDEV_OK;
  return cl_error_msg(w->status, w->msg);
}

bool cl_waiter_expecting_locked(const cl_waiter_t *w) { return w->remaining > 0; }

void cl_waiter_block_locked(rdev_session_t *s, cl_waiter_t *w) {
  if (w->remaining > 0) {
    w->blocked = true;
    s->pend.nblocked++;
  }
}

void cl_waiter_unblock_locked(rdev_session_t *s, cl_waiter_t *w) {
  if (w->blocked) {
    w->blocked = false;
    s->pend.nblocked--;
  }
}

int cl_waiter_sleep_locked(rdev_session_t *s, cl_waiter_t *w, const struct timespec *deadline) {
  if (!deadline) return pthread_cond_wait(&w->cv, &s->mu);
  return pthread_cond_timedwait(&w->cv, &s->mu, deadline);
}

void cl_waiter_abandon_locked(cl_waiter_t *w) { w->abandoned = true; }

/* One reply (or the end of the call) for pending entry e's waiter: its
 * first error is kept; it counts unless e is quiet. Under s->mu. */
static void waiter_complete_locked(rdev_session_t *s, const cl_pending_t *e, int status, const char *msg) {
  cl_waiter_t *w = e->w;
  if (status && !w->status) {
    w->status = status;
    snprintf(w->msg, sizeof w->msg, "%s", msg ? msg : "");
  }
  if (e->quiet || --w->remaining > 0) return;
  s->pend.completed = true;
  if (w->blocked) {
    w->blocked = false;
    s->pend.nblocked--;
  }
  if (w->abandoned) {
    /* A late StreamSync answer must not lose the stream's error. */
    if (w->sync_stream && w->status) sticky_set_locked(s, w->sync_stream, w->status, w->msg);
    cl_waiter_free(w);
  } else {
    pthread_cond_signal(&w->cv);
  }
}

/* ---- the pending table ---------------------------------------------------------- */

static cl_pending_t *expect(uint64_t seq, cl_waiter_t *w, bool quiet, void *dst, size_t count, uint64_t stream) {
  cl_pending_t *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->seq = seq;
  e->w = w;
  e->quiet = quiet;
  e->dst = dst;
  e->count = count;
  e->stream = stream;
  return e;
}

cl_pending_t *cl_expect_reply(uint64_t seq, cl_waiter_t *w, bool quiet) { return expect(seq, w, quiet, NULL, 0, 0); }

cl_pending_t *cl_expect_read(uint64_t seq, cl_waiter_t *w, void *dst, size_t count) {
  return expect(seq, w, false, dst, count, 0);
}

cl_pending_t *cl_expect_async_read(uint64_t seq, uint64_t stream, void *dst, size_t count) {
  return expect(seq, NULL, false, dst, count, stream);
}

cl_pending_t *cl_expect_final(uint64_t seq, uint64_t stream, cl_final_fn fn, void *arg) {
  cl_pending_t *e = expect(seq, NULL, false, NULL, 0, stream);
  if (e) {
    e->on_final = fn;
    e->final_arg = arg;
  }
  return e;
}

void cl_pending_discard(cl_pending_t *e) { free(e); }

void cl_pending_put_locked(rdev_session_t *s, cl_pending_t *e) {
  size_t b = e->seq & (CL_PENDING_BUCKETS - 1);
  e->next = s->pend.buckets[b];
  s->pend.buckets[b] = e;
  s->pend.n++;
  if (!e->w)
    s->pend.nasync++;
  else if (!e->quiet)
    e->w->remaining++;
}

static cl_pending_t *pending_find_locked(rdev_session_t *s, uint64_t seq) {
  for (cl_pending_t *e = s->pend.buckets[seq & (CL_PENDING_BUCKETS - 1)]; e; e = e->next)
    if (e->seq == seq) return e;
  return NULL;
}

static cl_pending_t *pending_take_locked(rdev_session_t *s, uint64_t seq) {
  cl_pending_t **pp = &s->pend.buckets[seq & (CL_PENDING_BUCKETS - 1)];
  for (; *pp; pp = &(*pp)->next) {
    if ((*pp)->seq == seq) {
      cl_pending_t *e = *pp;
      *pp = e->next;
      s->pend.n--;
      if (!e->w) s->pend.nasync--;
      return e;
    }
  }
  return NULL;
}

void cl_pending_forget(rdev_session_t *s, uint64_t first, uint64_t n) {
  pthread_mutex_lock(&s->mu);
  for (uint64_t i = 0; i < n; i++) free(pending_take_locked(s, first + i));
  pthread_mutex_unlock(&s->mu);
}

void cl_pending_fail_all_locked(rdev_session_t *s, int code, const char *msg) {
  while (s->pend.bulk_busy) pthread_cond_wait(&s->pend.bulk_cv, &s->mu);
  for (size_t b = 0; b < CL_PENDING_BUCKETS; b++) {
    cl_pending_t *e = s->pend.buckets[b];
    s->pend.buckets[b] = NULL;
    while (e) {
      cl_pending_t *next = e->next;
      if (e->w)
        waiter_complete_locked(s, e, code, msg);
      else
        sticky_set_locked(s, e->stream, code, msg);
      if (e->on_final) e->on_final(s, e->final_arg, code);
      free(e);
      e = next;
    }
  }
  s->pend.n = 0;
  s->pend.nasync = 0;
}

bool cl_pending_background_locked(rdev_session_t *s) { return s->pend.nblocked > 0 || s->pend.nasync > 0; }

bool cl_pending_take_completed_locked(rdev_session_t *s) {
  bool c = s->pend.completed;
  s->pend.completed = false;
  return c;
}

/* ---- bulk frames ---------------------------------------------------------------- */

void *cl_pending_bulk_begin(rdev_session_t *s, uint64_t seq, uint64_t len) {
  pthread_mutex_lock(&s->mu);
  cl_pending_t *e = pending_find_locked(s, seq);
  void *dst = NULL;
  if (e && e->dst && e->bulk == BULK_NONE && len == e->count) {
    e->bulk = BULK_BUSY;
    s->pend.bulk_busy++;
    dst = e->dst;
  }
  pthread_mutex_unlock(&s->mu);
  return dst;
}

void cl_pending_bulk_end(rdev_session_t *s, uint64_t seq, bool ok) {
  pthread_mutex_lock(&s->mu);
  cl_pending_t *e = pending_find_locked(s, seq); /* BUSY entries stay */
  if (e) {
    e->bulk = ok ? BULK_DONE : BULK_NONE; /* cut short: rdevd sends it whole again */
    if (ok) e->got = e->count;
  }
  s->pend.bulk_busy--;
  pthread_cond_broadcast(&s->pend.bulk_cv);
  pthread_mutex_unlock(&s->mu);
}

void cl_pending_bulk_conn(rdev_session_t *s, uint32_t conn, bool lost) {
  pthread_mutex_lock(&s->mu);
  if (!lost)
    s->pend.bulk_conn = conn;
  else if (s->pend.bulk_conn == conn)
    s->pend.bulk_conn = 0;
  pthread_cond_broadcast(&s->pend.bulk_cv);
  pthread_mutex_unlock(&s->mu);
}

/* Under s->mu: until the bulk reader is out of e's destination. */
static void bulk_wait_idle_locked(rdev_session_t *s, cl_pending_t *e) {
  while (e->bulk == BULK_BUSY) pthread_cond_wait(&s->pend.bulk_cv, &s->mu);
}

/* Under s->mu: a reply says seq's bytes went ahead as a frame on bulk
 * connection conn (0: the server did not say): until the frame landed.
 * While conn is the connection in, the frame comes on it. Once conn is
 * lost: in a session that resumes, rdevd sends a frame it was not told of
 * again on a next connection, so this waits for it, but no longer than
 * the resume window from the reply (rdevd keeps KEPT_MAX bytes of frames
 * at most) and not once the bulk reader stopped; in one that does not,
 * rdevd dropped it, and this waits no more. */
static void bulk_wait_frame_locked(rdev_session_t *s, uint64_t seq, uint32_t conn) {
  cl_pending_t *e = pending_find_locked(s, seq);
  bool resumes = s->poll.resume_ms > 0;
  struct timespec dl = rdev_clock_deadline_ns((uint64_t)(resumes ? s->poll.resume_ms : 0) * 1000000u);
  while (e && e->bulk != BULK_DONE) {
    bool in = s->pend.bulk_conn && (!conn || conn == s->pend.bulk_conn);
    if (e->bulk == BULK_BUSY || in) {
      pthread_cond_wait(&s->pend.bulk_cv, &s->mu);
    } else if (!resumes || s->bulk.dead || pthread_cond_timedwait(&s->pend.bulk_cv, &s->mu, &dl) == ETIMEDOUT) {
      break;
    }
  }
}

/* ---- replies -------------------------------------------------------------------- */

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
  cl_pending_t *e = pending_find_locked(c->s, c->reply->seq);
  if (e) bulk_wait_idle_locked(c->s, e); /* a frame the server could not finish */
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
  rdev_print_fn fn = s->pend.print_fn;
  void *user = s->pend.print_user;
  pthread_mutex_unlock(&s->mu);
  fn(user, (const char *)text->data, text->len);
}

bool cl_reply_handle(rdev_session_t *s, grpc_byte_buffer *bb, uint64_t *acked, char *why, size_t why_len) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  rx_ctx_t ctx = {s, &r};
  r.data.funcs.decode = data_decode;
  r.data.arg = &ctx;
  rdev_wire_bytes_t text = {.data = NULL, .len = 0, .max = PRINT_MAX};
  rdev_wire_bytes_decoder(&r.print, &text);
  const char *err = NULL;
  if (!rdev_wire_decode(bb, rdev_v1_Reply_fields, &r, &err)) {
    free(text.data);
    snprintf(why, why_len, "rdev client: malformed reply from server (%s)", err ? err : "?");
    return false;
  }
  deliver_print(s, &text); /* before the reply completes anything */
  free(text.data);
  *acked = r.acked;
  if (r.kind == rdev_v1_ReplyKind_PRINT || r.kind == rdev_v1_ReplyKind_ACK) return true;

  pthread_mutex_lock(&s->mu);
  if (r.bulk) bulk_wait_frame_locked(s, r.seq, r.bulk_conn);
  cl_pending_t *e = pending_take_locked(s, r.seq);
  if (e) {
    int st = r.status;
    const char *msg = r.message;
    char buf[96];
    if (!st && r.bulk && e->dst && e->bulk != BULK_DONE) {
      st = RDEV_UNAVAILABLE;
      msg = "the bulk connection was lost before the read's data arrived";
    } else if (!st && e->dst && e->got != e->count) {
      snprintf(buf, sizeof buf, "read reply carried %zu bytes, expected %zu", e->got, e->count);
      st = RDEV_PROTOCOL;
      msg = buf;
    }
    if (e->w) {
      e->w->handle = r.handle;
      e->w->addr = r.addr;
      e->w->value = r.value;
      e->w->value2 = r.value2;
      e->w->elapsed_ms = r.elapsed_ms;
      waiter_complete_locked(s, e, st, msg);
    } else if (st) {
      sticky_set_locked(s, e->stream ? e->stream : r.stream, st, msg);
    }
    if (e->on_final) e->on_final(s, e->final_arg, st);
    free(e);
  } else if (r.status) {
    /* A refused asynchronous or quiet request: reported at the next sync
     * of the stream it names, or of any stream when it names none. A
     * refused placement (addr set) no longer counts against the limits. */
    if (r.addr) cl_addr_refused_locked(s, r.addr, r.seq);
    sticky_set_locked(s, r.stream, r.status, r.message);
  }
  pthread_mutex_unlock(&s->mu);
  return true;
}
