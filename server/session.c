/*
 * server/session.c — a session's lifecycle: opening it (for a call or
 * in-process), the references that keep it, releasing everything it made
 * when it ends for any reason, why it ended (the audit line), and ending
 * sessions from the server's side (tenant removed, drain).
 * See session.h for how the session's files divide the work.
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

#include "rdev/clock.h"
#include "session.h"

static void abort_stream_entry(srv_handle_t *e, void *arg) {
  (void)arg;
  rdev_rt_stream_abort(e->ptr);
}

static void destroy_stream_entry(srv_handle_t *e, void *arg) {
  rdev_rt_stream_destroy_force(e->ptr);
  if (e->views) srv_views_unref(e->views);
  srv_streams_give(arg, e->dev);
}
static void destroy_event_entry(srv_handle_t *e, void *arg) {
  (void)arg;
  rdev_rt_event_destroy(e->ptr);
}

static void free_buffer_entry(srv_handle_t *e, void *arg) { srv_release_buffer(arg, e); }

/* Releases everything the session made; the first caller does it. Streams go
 * first, so that no queued work still uses the buffers freed after them.
 * Why the session ended is known only once its call ended (on_close):
 * the audit line waits for it (session_closed). */
void srv_session_release(srv_session_t *s) {
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
  srv_resumer_wake(s->srv); /* a paused message of the session goes on, to nothing */
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
      srv_streams_give(s, d);
    }
  srv_handles_each(&h, SRV_H_EVENT, destroy_event_entry, NULL);
  srv_handles_each(&h, SRV_H_BUF, free_buffer_entry, s);
  srv_handles_free(&h);
  pthread_mutex_lock(&s->mu);
  s->buffers_freed = nbuf;
  pthread_mutex_unlock(&s->mu);
}

/* The audit line of a session that ended, for why. */
void srv_session_closed(srv_session_t *s, const char *why) {
  pthread_mutex_lock(&s->mu);
  size_t nbuf = s->buffers_freed;
  pthread_mutex_unlock(&s->mu);
  srv_audit(SRV_LOG_INFO, "session closed", s->tenant->name, s->peer, "session=%llu reason=%s buffers_freed=%zu",
            (unsigned long long)s->id, why, nbuf);
}

/* Why a call that ended without the client's half-close ended: what the
 * server said when it ended it, else its deadline if passed, else the
 * client cancelled (or vanished). */
#define DEADLINE_SLACK_MS 250

const char *srv_end_reason(srv_session_t *s) {
  pthread_mutex_lock(&s->mu);
  const char *why = s->end_why;
  pthread_mutex_unlock(&s->mu);
  if (why) return why;
  /* The client's copy of the deadline is earlier than ours by the time the
   * call's start took to arrive, and its cancel arrives as ours is due:
   * a cancel this close to the deadline is the deadline. */
  gpr_timespec slack = gpr_time_from_millis(DEADLINE_SLACK_MS, GPR_TIMESPAN);
  if (gpr_time_cmp(gpr_time_add(gpr_now(s->deadline.clock_type), slack), s->deadline) >= 0) return "deadline";
  return "cancelled";
}

/* The server ends s (its lock order: srv->mu may be held). */
void srv_session_end(srv_session_t *s, const char *why, grpc_status_code code, const char *details) {
  pthread_mutex_lock(&s->mu);
  if (!s->end_why) s->end_why = why;
  pthread_mutex_unlock(&s->mu);
  if (s->call) grpc_call_cancel_with_status(s->call, code, details, NULL);
}

void srv_session_unref(srv_session_t *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  srv_t *srv = s->srv;
  pthread_mutex_lock(&srv->mu);
  if (s->prev)
    s->prev->next = s->next;
  else
    srv->sessions = s->next;
  if (s->next) s->next->prev = s->prev;
  srv->nsessions--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
  srv_tenant_give(s->tenant, SRV_Q_SESSIONS, 0, 1);
  if (s->call) grpc_call_unref(s->call);
  grpc_metadata_array_destroy(&s->recv_md);
  srv_handles_free(&s->handles);
  if (s->sync_views) srv_views_unref(s->sync_views);
  free(s->sync_streams);
  free(s->dev_streams);
  free(s->held);
  if (s->peer) gpr_free(s->peer);
  pthread_cond_destroy(&s->local_cv);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->req_mu);
  srv_pins_orphan(s->pins);
  free(s);
}

/* A new session of tenant on call (NULL: in-process), holding one
 * reference (the close batch's, or the in-process owner's) and a session
 * of the tenant's quota; NULL with msg when it cannot be opened. */
srv_session_t *srv_session_new(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant, char *msg,
                               size_t msglen) {
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
  rdev_clock_cond_init(&s->local_cv);
  pthread_mutex_init(&s->pins->mu, NULL);
  pthread_cond_init(&s->pins->cv, NULL);
  s->pins->srv = srv;
  grpc_metadata_array_init(&s->recv_md);
  pthread_mutex_lock(&srv->mu);
  srv->nsessions++;
  s->next = srv->sessions;
  if (s->next) s->next->prev = s;
  srv->sessions = s;
  pthread_mutex_lock(&tenant->mu);
  int removed = tenant->removed; /* a reload may have removed it since authentication */
  pthread_mutex_unlock(&tenant->mu);
  srv_audit(SRV_LOG_INFO, "session opened", s->tenant->name, s->peer, "session=%llu", (unsigned long long)s->id);
  if (removed) srv_session_end(s, "tenant removed", GRPC_STATUS_PERMISSION_DENIED, "tenant removed");
  pthread_mutex_unlock(&srv->mu);
  return s;
}

srv_session_t *srv_session_open_local(srv_t *srv, srv_tenant_t *tenant, srv_reply_fn fn, void *user) {
  char msg[256];
  srv_session_t *s = srv_session_new(srv, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), tenant, msg, sizeof msg);
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
  srv_session_ref(s); /* as a receive holds one */
  if (srv_handle_message(s, bb, &b)) {
    srv_session_unref(s);
    return 1;
  }
  grpc_byte_buffer_destroy(bb);
  pthread_mutex_lock(&s->mu);
  srv_post_next_recv(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
  return 0;
}

int srv_session_wait_ready(srv_session_t *s, int timeout_ms) {
  struct timespec dl = rdev_clock_deadline_ns((uint64_t)timeout_ms * 1000000u);
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  while (!s->local_ready && rc == 0) rc = pthread_cond_timedwait(&s->local_cv, &s->mu, &dl);
  int ready = s->local_ready;
  pthread_mutex_unlock(&s->mu);
  return ready ? 0 : -1;
}

void srv_session_close_local(srv_session_t *s) {
  srv_session_release(s);
  srv_session_closed(s, "closed in-process");
  /* What still holds the session (stream callbacks being cancelled, the
   * resumer finishing a paused message) lets go soon after the release. */
  while (atomic_load(&s->refs) > 1) usleep(200);
  srv_session_unref(s);
}

void srv_sessions_end_removed(srv_t *srv) {
  pthread_mutex_lock(&srv->mu);
  for (srv_session_t *s = srv->sessions; s; s = s->next) {
    pthread_mutex_lock(&s->tenant->mu);
    int removed = s->tenant->removed;
    pthread_mutex_unlock(&s->tenant->mu);
    if (removed) srv_session_end(s, "tenant removed", GRPC_STATUS_PERMISSION_DENIED, "tenant removed");
  }
  pthread_mutex_unlock(&srv->mu);
}

void srv_sessions_end_all(srv_t *srv) {
  pthread_mutex_lock(&srv->mu);
  for (srv_session_t *s = srv->sessions; s; s = s->next) {
    pthread_mutex_lock(&s->mu);
    int ending = s->released || s->cancelled;
    pthread_mutex_unlock(&s->mu);
    if (!ending) srv_session_end(s, "drain", GRPC_STATUS_UNAVAILABLE, "server draining");
  }
  pthread_mutex_unlock(&srv->mu);
}
