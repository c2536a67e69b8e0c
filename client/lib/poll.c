/*
 * client/lib/poll.c — who polls the session call, and the call's end.
 *
 * One thread at a time polls the call's completion queue and handles what
 * it yields: the receiver thread, or a caller waiting in cl_wait. A caller
 * that finds no one polling polls for itself, so its reply (and the send
 * completions before it) cost no hand-off between threads, each of which is
 * a wake-up (~20 us on the 2-vCPU VM rdev bench runs on). The receiver
 * thread polls whenever no caller does, except that after it completed a
 * caller's wait it parks for RX_PARK_NS, betting that the caller comes back
 * and polls for itself. Whoever adds work that must progress without a
 * waiting caller (background_locked) un-parks it (cl_poll_wake_locked); it
 * also polls again when the park ends (server pings, the call's end,
 * unsolicited print output).
 *
 * A completion is handed to its owner: a reply to pending.c, a finished
 * send to send.c; the call's status ends the session (every pending request
 * fails, the send queue is dropped). Owns s->poll; calls send.c, pending.c
 * and error.c.
 *
 * Held messages. gRPC reads each message into fresh 64 KiB slices from
 * malloc. Destroyed as soon as it is handled, a message's slices often end
 * on top of the heap, which glibc then gives back to the kernel (its trim
 * threshold is 128 KiB unless the process tunes it); the next message's
 * slices are faulted in anew, page by page, which holds D2H to a tenth
 * of the network's speed. So the poller keeps the latest large messages alive,
 * up to CL_HELD_BYTES, and destroys the oldest as new ones come, except the
 * one that reaches highest in its heap (it likely borders the top): what
 * it frees lies below memory still in use, stays mapped, and is what the
 * next messages are read into. The process's allocator is left as it is.
 * The receiver lets them all go once the session has received nothing for
 * HELD_IDLE_NS, and the session's end does. This is a measured remedy
 * (docs/performance.md, "Memory"), not a guarantee: reading bulk data
 * straight into the caller's memory needs a data path of rdev's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "rdev/clock.h"

/* Who polls the call's completion queue. */
enum { POLL_NONE, POLL_RX, POLL_CALLER };

#define RX_PARK_NS (20 * 1000000LL)

/* Held messages (above): how many bytes, which messages, and how long. */
#define CL_HELD_BYTES (16u << 20)
#define HELD_MIN_BYTES (64u << 10)
#define HELD_IDLE_NS (1000 * 1000000LL)

static bool past(const struct timespec *dl) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec > dl->tv_sec || (now.tv_sec == dl->tv_sec && now.tv_nsec >= dl->tv_nsec);
}

/* ---- setup and state ------------------------------------------------------------ */

void cl_poll_init(rdev_session_t *s) {
  rdev_clock_cond_init(&s->poll.dead_cv);
  rdev_clock_cond_init(&s->poll.rx_cv);
  grpc_metadata_array_init(&s->poll.trailing_md);
  s->poll.status_details = grpc_empty_slice();
}

/* The highest address a message's bytes reach (0 when it has none). */
static uintptr_t bb_top(grpc_byte_buffer *bb) {
  uintptr_t top = 0;
  grpc_slice_buffer *sb = &bb->data.raw.slice_buffer;
  for (size_t i = 0; i < sb->count; i++) {
    uintptr_t e = (uintptr_t)GRPC_SLICE_START_PTR(sb->slices[i]) + GRPC_SLICE_LENGTH(sb->slices[i]);
    if (e > top) top = e;
  }
  return top;
}

/* Whether held message i reaches highest among the held ones of its heap
 * (a glibc heap is at most 64 MiB): its memory likely borders the heap's
 * top, where freeing it would let glibc trim. */
static bool held_topmost(cl_poll_state_t *p, int i) {
  uintptr_t t = p->held_top[i];
  for (int j = 0; j < p->held_n; j++)
    if (j != i && p->held_top[j] >> 26 == t >> 26 && p->held_top[j] > t) return false;
  return true;
}

/* Destroys held message i. */
static void held_drop(cl_poll_state_t *p, int i) {
  p->held_bytes -= grpc_byte_buffer_length(p->held[i]);
  grpc_byte_buffer_destroy(p->held[i]);
  for (int j = i + 1; j < p->held_n; j++) {
    p->held[j - 1] = p->held[j];
    p->held_top[j - 1] = p->held_top[j];
  }
  p->held_n--;
}

/* Destroys the oldest held message that does not border its heap's top
 * (or the oldest, when each does). */
static void held_drop_oldest(cl_poll_state_t *p) {
  int i = 0;
  while (i < p->held_n && held_topmost(p, i)) i++;
  held_drop(p, i < p->held_n ? i : 0);
}

/* Keeps bb (handled) alive among the held messages, or destroys it when it
 * is small. Only the poller touches them (or, under s->mu, the receiver
 * when no one polls), so they need no lock of their own. */
static void held_put(cl_poll_state_t *p, grpc_byte_buffer *bb) {
  size_t n = grpc_byte_buffer_length(bb);
  if (n < HELD_MIN_BYTES || n > CL_HELD_BYTES || bb->type != GRPC_BB_RAW) {
    grpc_byte_buffer_destroy(bb);
    return;
  }
  while (p->held_n == CL_HELD_MAX || (p->held_n && p->held_bytes + n > CL_HELD_BYTES)) held_drop_oldest(p);
  p->held[p->held_n] = bb;
  p->held_top[p->held_n] = bb_top(bb);
  p->held_n++;
  p->held_bytes += n;
  p->held_at = (int64_t)rdev_clock_now_ns();
}

static void held_drop_all(cl_poll_state_t *p) {
  while (p->held_n) held_drop(p, p->held_n - 1);
}

void cl_poll_destroy(rdev_session_t *s) {
  held_drop_all(&s->poll);
  grpc_metadata_array_destroy(&s->poll.trailing_md);
  grpc_slice_unref(s->poll.status_details);
  if (s->poll.recv_bb) grpc_byte_buffer_destroy(s->poll.recv_bb);
  pthread_cond_destroy(&s->poll.dead_cv);
  pthread_cond_destroy(&s->poll.rx_cv);
}

grpc_call_error cl_poll_watch_end(rdev_session_t *s) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  op.data.recv_status_on_client.trailing_metadata = &s->poll.trailing_md;
  op.data.recv_status_on_client.status = &s->poll.status;
  op.data.recv_status_on_client.status_details = &s->poll.status_details;
  return grpc_call_start_batch(s->call, &op, 1, CL_TAG(CL_TAG_STATUS), NULL);
}

grpc_status_code cl_poll_end_status(rdev_session_t *s, char **details) {
  *details = grpc_slice_to_c_string(s->poll.status_details);
  return s->poll.status;
}

bool cl_poll_dead(rdev_session_t *s, char *why, size_t why_len) {
  pthread_mutex_lock(&s->mu);
  bool dead = s->poll.dead;
  if (why) snprintf(why, why_len, "%s", s->poll.dead_msg);
  pthread_mutex_unlock(&s->mu);
  return dead;
}

int cl_poll_check_open_locked(rdev_session_t *s) {
  if (!s->poll.dead && !cl_send_closing_locked(s)) return RDEV_OK;
  return cl_error(s->poll.dead ? s->poll.dead_code : RDEV_UNAVAILABLE, "%s",
                  s->poll.dead ? s->poll.dead_msg : "session is closing");
}

int cl_poll_wait_open(rdev_session_t *s, const struct timespec *deadline) {
  pthread_mutex_lock(&s->mu);
  bool timed_out = false;
  /* a refusal's status follows its (unmarked) answer: wait for it too */
  while (!timed_out && (s->poll.opened == 0 || (s->poll.opened < 0 && !s->poll.dead))) {
    cl_poll_wake_locked(s); /* the receiver polls for it */
    if (deadline)
      timed_out = pthread_cond_timedwait(&s->poll.dead_cv, &s->mu, deadline) == ETIMEDOUT;
    else
      pthread_cond_wait(&s->poll.dead_cv, &s->mu);
  }
  int rc = s->poll.opened > 0 ? RDEV_OK
           : s->poll.dead     ? cl_error(s->poll.dead_code, "%s", s->poll.dead_msg)
                              : cl_error(RDEV_UNAVAILABLE, "no answer from rdevd in time");
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* Under s->mu: whether something must progress with no caller polling:
 * callers blocked in cl_wait (one may be the poller), callers waiting for
 * gRPC to let go of their memory, queued or unfinished sends, asynchronous
 * Reads, the session's end. */
static bool background_locked(rdev_session_t *s) {
  return cl_pending_background_locked(s) || s->poll.nreleasing > 0 || cl_send_busy_locked(s) ||
         cl_send_closing_locked(s) || s->poll.dead || s->poll.opened == 0 || s->poll.resuming;
}

void cl_poll_wake_locked(rdev_session_t *s) {
  if (!background_locked(s)) return;
  s->poll.park_until = 0;
  if (s->poll.rx_idle) pthread_cond_signal(&s->poll.rx_cv);
}

/* Under s->mu: a caller's wait ended; it polled for itself (polled) or
 * was woken by whoever polled. What is left goes to the receiver; else a
 * caller that polls for itself keeps the receiver parked. */
static void caller_done_locked(rdev_session_t *s, bool polled) {
  if (polled && !background_locked(s))
    s->poll.park_until = (int64_t)rdev_clock_now_ns() + RX_PARK_NS;
  else
    cl_poll_wake_locked(s);
}

void cl_poll_release_begin(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  s->poll.nreleasing++;
  cl_poll_wake_locked(s);
  pthread_mutex_unlock(&s->mu);
}

void cl_poll_release_end(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  s->poll.nreleasing--;
  pthread_mutex_unlock(&s->mu);
}

/* ---- completions ------------------------------------------------------------------ */

/* Under s->mu: posts the call's one RECV_MESSAGE unless it is out (or the
 * call is over). Every poll starts with it; it is not reposted right after
 * a reply, because posting it makes gRPC announce the consumed window at
 * once, a write of its own (and a wake-up of rdevd) that a caller would
 * pay before returning with its reply. */
static void post_recv_locked(rdev_session_t *s) {
  if (s->poll.recv_posted || s->poll.recv_ended || s->poll.dead || s->poll.resuming) return;
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = &s->poll.recv_bb;
  s->poll.recv_posted = true;
  if (grpc_call_start_batch(s->call, &op, 1, CL_TAG(CL_TAG_RECV), NULL) != GRPC_CALL_OK) {
    s->poll.recv_posted = false;
    s->poll.recv_ended = true;
    grpc_call_cancel_with_status(s->call, GRPC_STATUS_INTERNAL, "rdev client: recv refused", NULL);
  }
}

/* Under s->mu: the session ended with code and msg: every waiter fails,
 * later calls fail, with msg after the server's address (so that a
 * session over several servers names the one that went). */
static void end_locked(rdev_session_t *s, int code, const char *msg) {
  s->poll.dead = true;
  s->poll.resuming = false;
  s->poll.dead_code = code;
  char why[256]; /* with the address (at most 64 bytes of it), within CL_MSG_MAX */
  snprintf(why, sizeof why, "%s", msg);
  snprintf(s->poll.dead_msg, sizeof s->poll.dead_msg, "rdevd at %.64s: %s", s->target, why);
  cl_bulk_abort_locked(s); /* a frame being read fails now */
  cl_pending_fail_all_locked(s, s->poll.dead_code, s->poll.dead_msg);
  cl_send_end_locked(s);
  pthread_cond_broadcast(&s->poll.dead_cv);
}

/* ---- resume ------------------------------------------------------------------------- */

#define RETRY_FIRST_MS 50
#define RETRY_MAX_MS 1000

static int64_t now_ns(void) { return (int64_t)rdev_clock_now_ns(); }

/* Under s->mu: whether the end of an accepted call is a break the session
 * may come through: the connection failed (not a half-close, not rdevd
 * ending the session, not a draining rdevd), the caller is not closing it,
 * and rdevd keeps broken sessions. */
static bool resumable_end_locked(rdev_session_t *s, const char *details) {
  grpc_status_code st = s->poll.status;
  return s->poll.resume_ms > 0 && s->poll.opened > 0 && !cl_send_closing_locked(s) && s->host.key[0] &&
         (st == GRPC_STATUS_UNAVAILABLE || st == GRPC_STATUS_UNKNOWN) && strcmp(details, RDEV_WIRE_DRAIN_DETAILS) != 0;
}

/* Under s->mu: a try to resume ended before it was taken (its status, code,
 * details): another one after a backoff, unless rdevd said the session is
 * gone (or not the caller's), or time is up. */
static void attempt_failed_locked(rdev_session_t *s, const char *details) {
  cl_poll_state_t *p = &s->poll;
  p->attempt = false;
  grpc_status_code st = p->status;
  /* Nothing listens where rdevd was: it is gone, and its sessions with it
   * (a restarted rdevd holds none of them). A network that is down fails
   * otherwise (unreachable, timed out), and is tried again. */
  bool gone = st == GRPC_STATUS_UNAVAILABLE && strstr(details, "Connection refused");
  if (gone || st == GRPC_STATUS_NOT_FOUND || st == GRPC_STATUS_PERMISSION_DENIED || st == GRPC_STATUS_UNAUTHENTICATED ||
      st == GRPC_STATUS_INVALID_ARGUMENT || st == GRPC_STATUS_DEADLINE_EXCEEDED) {
    char msg[CL_MSG_MAX];
    snprintf(msg, sizeof msg, "session ended: its connection broke and it could not be resumed: %s (gRPC status %d)",
             *details ? details : "no detail", (int)st);
    end_locked(s, RDEV_UNAVAILABLE, msg);
    return;
  }
  int64_t wait = (int64_t)RETRY_FIRST_MS << (p->attempts < 5 ? p->attempts : 5);
  p->retry_at = now_ns() + (wait < RETRY_MAX_MS ? wait : RETRY_MAX_MS) * 1000000LL;
}

/* Under s->mu: the call broke: the session is resumed on a new one. */
static void break_locked(rdev_session_t *s) {
  cl_poll_state_t *p = &s->poll;
  p->resuming = true;
  p->attempts = 0;
  p->retry_at = 0;
  p->resume_until = now_ns() + p->resume_ms * 1000000LL;
  cl_send_pause_locked(s);
}

/* Under s->mu, by the poller: starts a try to resume when one is due and
 * the old call's completions are all in; gives up past the window or when
 * the caller closes. */
static void resume_step_locked(rdev_session_t *s) {
  cl_poll_state_t *p = &s->poll;
  int64_t now = now_ns();
  if (p->resuming && p->attempt_open && now >= p->resume_until && !p->attempt_cancelled) {
    p->attempt_cancelled = true; /* its status follows, and the window is over */
    grpc_call_cancel(s->call, NULL);
  }
  if (!p->resuming || p->attempt || p->attempt_open || p->dead || p->recv_posted || cl_send_in_flight_locked(s)) return;
  if (now >= p->resume_until || cl_send_closing_locked(s)) {
    end_locked(s, RDEV_UNAVAILABLE,
               cl_send_closing_locked(s) ? "session closed while its connection was broken"
                                         : "session ended: its connection broke and did not come back within the "
                                           "resume window");
    return;
  }
  if (now < p->retry_at) return;
  /* the old call is over: a new one on the same channel, which reconnects */
  grpc_call_unref(s->call);
  /* no deadline: it is the session's call once taken (an open not
   * answered within the window is cancelled then) */
  s->call = grpc_channel_create_call(s->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                     grpc_slice_from_static_string(RDEV_WIRE_METHOD_SESSION), NULL,
                                     gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  grpc_metadata_array_destroy(&s->init_md);
  grpc_metadata_array_init(&s->init_md);
  grpc_metadata_array_destroy(&p->trailing_md);
  grpc_metadata_array_init(&p->trailing_md);
  grpc_slice_unref(p->status_details);
  p->status_details = grpc_empty_slice();
  size_t n = 0;
  if (s->auth.n) p->resume_md[n++] = s->auth.md;
  snprintf(p->rx_str, sizeof p->rx_str, "%llu", (unsigned long long)p->rx);
  p->resume_md[n].key = grpc_slice_from_static_string(RDEV_WIRE_RESUME_KEY);
  p->resume_md[n++].value = grpc_slice_from_static_string(s->host.key);
  p->resume_md[n].key = grpc_slice_from_static_string(RDEV_WIRE_RESUME_ACKED_KEY);
  p->resume_md[n++].value = grpc_slice_from_static_string(p->rx_str);
  grpc_op ops[2];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  /* not WAIT_FOR_READY: a try while the channel cannot connect fails at
   * once, saying why (attempt_failed_locked), and is tried again */
  ops[0].data.send_initial_metadata.count = n;
  ops[0].data.send_initial_metadata.metadata = p->resume_md;
  ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[1].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
  p->attempts++;
  if (!s->call || grpc_call_start_batch(s->call, ops, 2, CL_TAG(CL_TAG_OPEN), NULL) != GRPC_CALL_OK) {
    end_locked(s, RDEV_UNAVAILABLE, "session ended: its connection broke and no call could be made to resume it");
    return;
  }
  p->attempt_open = true;
  p->attempt_cancelled = false;
  p->attempt = cl_poll_watch_end(s) == GRPC_CALL_OK;
  if (!p->attempt) grpc_call_cancel(s->call, NULL); /* its open completes; then the window decides */
}

/* Under s->mu: the open of a try came (ok: its metadata is in s->init_md):
 * taken when rdevd marked it resumed; else its status follows. */
static void attempt_opened_locked(rdev_session_t *s, bool ok) {
  cl_poll_state_t *p = &s->poll;
  p->attempt_open = false;
  if (!ok || !p->attempt) return;
  bool resumed = false;
  unsigned long long received = 0;
  for (size_t i = 0; i < s->init_md.count; i++) {
    const grpc_metadata *m = &s->init_md.metadata[i];
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_SESSION_OPEN_KEY) == 0)
      resumed = grpc_slice_str_cmp(m->value, "resumed") == 0;
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_MEM_LIMITS_KEY) == 0)
      cl_addr_limits_locked(s, m->value); /* as they are now */
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_RESUME_RECEIVED_KEY) == 0) {
      char buf[24] = "";
      size_t len = GRPC_SLICE_LENGTH(m->value);
      if (len < sizeof buf) memcpy(buf, GRPC_SLICE_START_PTR(m->value), len);
      received = strtoull(buf, NULL, 10);
    }
  }
  if (!resumed) return;
  p->resuming = false;
  p->attempt = false; /* the session's call from now on: its status is a break, or the end */
  p->recv_ended = false;
  if (!cl_send_resume_locked(s, received)) { /* the session cannot be made whole: end it */
    p->resume_ms = 0;
    grpc_call_cancel_with_status(s->call, GRPC_STATUS_DATA_LOSS, "rdev client: a request was not kept for resending",
                                 NULL);
  }
  pthread_cond_broadcast(&p->dead_cv);
}

void cl_poll_resumable(rdev_session_t *s, int64_t ms) {
  pthread_mutex_lock(&s->mu);
  cl_send_keep_locked(s, ms > 0, ms > 0); /* rdevd keeps what it sent until acknowledged: acknowledge it */
  int64_t lim = s->poll.resume_limit;     /* the open did not ask for it when < 0 */
  if (lim > 0 && lim < ms) ms = lim;
  s->poll.resume_ms = ms;
  pthread_mutex_unlock(&s->mu);
}

/* The call ended: a break the session comes through, a try to resume
 * that failed, or the session's end (every waiter fails, later calls
 * fail). */
static void on_status(rdev_session_t *s) {
  char *details = grpc_slice_to_c_string(s->poll.status_details);
  pthread_mutex_lock(&s->mu);
  if (s->poll.resuming) { /* a try's */
    attempt_failed_locked(s, details);
    pthread_mutex_unlock(&s->mu);
    gpr_free(details);
    return;
  }
  if (resumable_end_locked(s, details)) {
    break_locked(s);
    pthread_mutex_unlock(&s->mu);
    gpr_free(details);
    return;
  }
  s->poll.dead = true;
  s->poll.dead_code = RDEV_UNAVAILABLE;
  if (s->poll.opened <= 0) { /* never accepted: refused, or never answered */
    int code = cl_grpc_status(s->poll.status);
    s->poll.dead_code = code == RDEV_OK ? RDEV_UNAVAILABLE : code;
    s->poll.opened = -1;
    bool refused = s->poll.status == GRPC_STATUS_UNAUTHENTICATED || s->poll.status == GRPC_STATUS_PERMISSION_DENIED ||
                   s->poll.status == GRPC_STATUS_RESOURCE_EXHAUSTED;
    snprintf(s->poll.dead_msg, sizeof s->poll.dead_msg, "%s: %s (gRPC status %d)",
             refused ? "rdevd refused the session" : "the session ended before rdevd answered its open",
             *details ? details : "no detail", (int)s->poll.status);
  } else if (s->poll.status == GRPC_STATUS_OK) {
    snprintf(s->poll.dead_msg, sizeof s->poll.dead_msg, "session ended%s%s", *details ? ": " : "", details);
  } else {
    snprintf(s->poll.dead_msg, sizeof s->poll.dead_msg, "session ended: %s (gRPC status %d)",
             *details ? details : "connection lost", (int)s->poll.status);
  }
  end_locked(s, s->poll.dead_code, s->poll.dead_msg);
  pthread_mutex_unlock(&s->mu);
  gpr_free(details);
}

/* One completion of the call. */
static void dispatch(rdev_session_t *s, grpc_event ev) {
  switch ((uintptr_t)ev.tag) {
    case CL_TAG_RECV: {
      grpc_byte_buffer *bb = s->poll.recv_bb;
      s->poll.recv_bb = NULL;
      pthread_mutex_lock(&s->mu);
      s->poll.recv_posted = false;
      s->poll.recv_ended = !ev.success || !bb; /* the call is over */
      pthread_mutex_unlock(&s->mu);
      if (bb) {
        char why[160];
        uint64_t acked = 0;
        if (ev.success && !cl_reply_handle(s, bb, &acked, why, sizeof why))
          grpc_call_cancel_with_status(s->call, GRPC_STATUS_INTERNAL, why, NULL);
        pthread_mutex_lock(&s->mu);
        cl_send_acked_locked(s, acked); /* what rdevd received is no longer kept */
        cl_send_received_locked(s, ++s->poll.rx, grpc_byte_buffer_length(bb));
        pthread_mutex_unlock(&s->mu);
        held_put(&s->poll, bb);
      }
      break;
    }
    case CL_TAG_SEND: cl_send_done(s, ev.success != 0); break;
    case CL_TAG_STATUS: on_status(s); break;
    case CL_TAG_OPEN: {
      pthread_mutex_lock(&s->mu);
      bool resuming = s->poll.resuming;
      if (resuming) attempt_opened_locked(s, ev.success != 0);
      pthread_mutex_unlock(&s->mu);
      if (resuming) break;
      bool accepted = s->poll.on_open(s, ev.success != 0); /* the metadata is this thread's until opened is set */
      pthread_mutex_lock(&s->mu);
      if (s->poll.opened == 0) s->poll.opened = accepted ? 1 : -1; /* the end may have come first */
      pthread_cond_broadcast(&s->poll.dead_cv);
      pthread_mutex_unlock(&s->mu);
      break;
    }
    default: break; /* CL_TAG_CLOSE */
  }
}

/* Under s->mu, with no one polling: waits up to deadline for one
 * completion and handles it (with s->mu released); returns with s->mu
 * held. Handling stays inside the poller's turn, so completions are
 * handled one at a time, in order, as by a single receiver. */
static grpc_completion_type poll_once_locked(rdev_session_t *s, int who, gpr_timespec deadline) {
  s->poll.poller = who;
  post_recv_locked(s);
  /* While the open's answer is awaited, its deadline bounds the poll too:
   * past it, the call is cancelled, which ends the session */
  bool open_due = s->poll.opened == 0 && !s->poll.open_cancelled && gpr_time_cmp(s->poll.open_deadline, deadline) < 0;
  gpr_timespec dl = open_due ? s->poll.open_deadline : deadline;
  /* and a resume's next try (or its end) */
  bool retry_due = false;
  if (s->poll.resuming) { /* the next try, or the window's end */
    int64_t at = s->poll.attempt || s->poll.retry_at > s->poll.resume_until ? s->poll.resume_until : s->poll.retry_at;
    gpr_timespec r = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(at - now_ns(), GPR_TIMESPAN));
    if (gpr_time_cmp(r, dl) < 0) dl = r, retry_due = true;
  }
  pthread_mutex_unlock(&s->mu);
  grpc_event ev = grpc_completion_queue_next(s->cq, dl, NULL);
  if (ev.type == GRPC_OP_COMPLETE) dispatch(s, ev);
  pthread_mutex_lock(&s->mu);
  s->poll.poller = POLL_NONE;
  resume_step_locked(s);
  if (ev.type == GRPC_QUEUE_TIMEOUT && retry_due) return GRPC_OP_COMPLETE; /* not the caller's deadline */
  if (ev.type == GRPC_QUEUE_TIMEOUT && open_due) {
    if (s->poll.opened == 0 && !s->poll.open_cancelled) {
      s->poll.open_cancelled = true;
      pthread_mutex_unlock(&s->mu);
      grpc_call_cancel_with_status(s->call, GRPC_STATUS_UNAVAILABLE,
                                   "no answer from rdevd to the session's open in time", NULL);
      pthread_mutex_lock(&s->mu);
    }
    return GRPC_OP_COMPLETE; /* not the caller's deadline: look again */
  }
  return ev.type;
}

/* ---- waiting ------------------------------------------------------------------------ */

int cl_wait(rdev_session_t *s, cl_waiter_t *w, int32_t timeout_ms, int timeout_status) {
  struct timespec dl;
  gpr_timespec poll_dl = gpr_inf_future(GPR_CLOCK_MONOTONIC);
  if (timeout_ms >= 0) {
    dl = rdev_clock_deadline_ns((uint64_t)timeout_ms * 1000000u);
    poll_dl = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
  }
  bool timed_out = false, polled = false, shut = false;
  pthread_mutex_lock(&s->mu);
  cl_waiter_block_locked(s, w);
  while (cl_waiter_expecting_locked(w) && !timed_out) {
    if (s->poll.poller == POLL_NONE && !s->poll.dead && !shut) { /* no one polls: do it here, no hand-off */
      polled = true;
      grpc_completion_type type = poll_once_locked(s, POLL_CALLER, poll_dl);
      shut = type == GRPC_QUEUE_SHUTDOWN; /* only if misused during close */
      /* other threads' completions may keep coming: the deadline holds */
      timed_out = cl_waiter_expecting_locked(w) && (type == GRPC_QUEUE_TIMEOUT || (timeout_ms >= 0 && past(&dl)));
    } else if (timeout_ms < 0) {
      cl_waiter_sleep_locked(s, w, NULL);
    } else {
      timed_out = cl_waiter_sleep_locked(s, w, &dl) == ETIMEDOUT && cl_waiter_expecting_locked(w);
    }
  }
  cl_waiter_unblock_locked(s, w);
  if (timed_out) cl_waiter_abandon_locked(w); /* the reply's handler frees it */
  caller_done_locked(s, polled);
  pthread_mutex_unlock(&s->mu);
  if (timed_out) return cl_error(timeout_status, "%s after %d ms", rdev_strerror(timeout_status), (int)timeout_ms);
  return RDEV_OK;
}

/* ---- the receiver thread -------------------------------------------------------------- */

static void *rx_main(void *arg) {
  rdev_session_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    for (;;) {
      int64_t now = (int64_t)rdev_clock_now_ns();
      if (s->poll.poller == POLL_NONE && (now >= s->poll.park_until || background_locked(s))) break;
      /* A caller polls (look again within a park's time), or parked. */
      int64_t until = s->poll.poller == POLL_NONE ? s->poll.park_until : now + RX_PARK_NS;
      struct timespec dl = {(time_t)(until / 1000000000LL), (long)(until % 1000000000LL)};
      s->poll.rx_idle = true;
      pthread_cond_timedwait(&s->poll.rx_cv, &s->mu, &dl);
      s->poll.rx_idle = false;
    }
    s->poll.park_until = 0;
    cl_pending_take_completed_locked(s); /* count this poll's completions only */
    /* While messages are held, poll only until they have been held idle
     * long enough, then let them go. */
    gpr_timespec dl = gpr_inf_future(GPR_CLOCK_MONOTONIC);
    if (s->poll.held_n) {
      int64_t left = s->poll.held_at + HELD_IDLE_NS - (int64_t)rdev_clock_now_ns();
      dl = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_nanos(left > 0 ? left : 0, GPR_TIMESPAN));
    }
    grpc_completion_type type = poll_once_locked(s, POLL_RX, dl);
    if (type == GRPC_QUEUE_SHUTDOWN) break;
    if (type == GRPC_QUEUE_TIMEOUT && s->poll.held_n && (int64_t)rdev_clock_now_ns() - s->poll.held_at >= HELD_IDLE_NS)
      held_drop_all(&s->poll); /* under s->mu no one polls: they are no poller's */
    /* A caller just got its reply here: it may well call again soon. */
    if (cl_pending_take_completed_locked(s) && !background_locked(s))
      s->poll.park_until = (int64_t)rdev_clock_now_ns() + RX_PARK_NS;
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int cl_poll_start(rdev_session_t *s, bool (*on_open)(rdev_session_t *s, bool ok), gpr_timespec open_deadline) {
  s->poll.on_open = on_open;
  s->poll.open_deadline = open_deadline;
  pthread_mutex_lock(&s->mu);
  post_recv_locked(s);
  pthread_mutex_unlock(&s->mu);
  if (pthread_create(&s->poll.rx_thread, NULL, rx_main, s) != 0) {
    grpc_call_cancel(s->call, NULL);
    /* Drain by hand: the open, the status and the posted recv. */
    bool op = false, st = false, rx = !s->poll.recv_posted;
    while (!op || !st || !rx) {
      grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
      if (ev.tag == CL_TAG(CL_TAG_OPEN)) op = true;
      if (ev.tag == CL_TAG(CL_TAG_STATUS)) st = true;
      if (ev.tag == CL_TAG(CL_TAG_RECV)) rx = true;
    }
    return cl_error(RDEV_INTERNAL_ERROR, "cannot start the receiver thread");
  }
  s->poll.rx_started = true;
  return RDEV_OK;
}

void cl_poll_close(rdev_session_t *s, int grace_ms) {
  pthread_mutex_lock(&s->mu);
  cl_send_close_locked(s);
  cl_poll_wake_locked(s); /* the close asked for: work for it */
  struct timespec dl = rdev_clock_deadline_ns((uint64_t)grace_ms * 1000000u);
  bool cancelled = false;
  while (!s->poll.dead) {
    if (cancelled) {
      pthread_cond_wait(&s->poll.dead_cv, &s->mu);
    } else if (pthread_cond_timedwait(&s->poll.dead_cv, &s->mu, &dl) == ETIMEDOUT && !s->poll.dead) {
      grpc_call *call = s->call; /* the poller may replace it (resume): ours to cancel, referenced */
      grpc_call_ref(call);
      s->poll.resume_ms = 0; /* no resume of what we cancel */
      pthread_mutex_unlock(&s->mu);
      grpc_call_cancel(call, NULL);
      grpc_call_unref(call);
      pthread_mutex_lock(&s->mu);
      cancelled = true;
    }
  }
  pthread_mutex_unlock(&s->mu);
  /* The call ended and no new operation starts on it: the queue drains. */
  grpc_completion_queue_shutdown(s->cq);
  if (s->poll.rx_started) pthread_join(s->poll.rx_thread, NULL);
}
