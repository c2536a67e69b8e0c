/*
 * server/session/session.c — the session object: opening it (for a call or
 * in-process) in the server's list, the references that keep it, why it
 * ended (the audit line), and ending sessions from the server's side
 * (tenant removed, drain).
 * See session.h for how the session's files divide the work.
 */
#include <grpc/support/alloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>

#include "rdev/clock.h"
#include "session.h"

void srv_session_closed(srv_session_t *s, const char *why) {
  pthread_mutex_lock(&s->mu);
  size_t nbuf = s->buffers_freed;
  pthread_mutex_unlock(&s->mu);
  srv_audit(SRV_LOG_INFO, "session closed", s->tenant->name, s->peer, "session=%llu reason=%s buffers_freed=%zu%s%s",
            (unsigned long long)s->id, why, nbuf, s->grant.job[0] ? " job=" : "", s->grant.job);
}

/* A cancel this close to the deadline is the deadline (srv_end_reason). */
#define DEADLINE_SLACK_MS 250

int srv_deadline_passed(const srv_session_t *s) {
  /* The client's copy of the deadline is earlier than ours by the time the
   * call's start took to arrive, and its cancel arrives as ours is due:
   * a cancel this close to the deadline is the deadline. */
  gpr_timespec slack = gpr_time_from_millis(DEADLINE_SLACK_MS, GPR_TIMESPAN);
  return gpr_time_cmp(gpr_time_add(gpr_now(s->deadline.clock_type), slack), s->deadline) >= 0;
}

const char *srv_end_reason(srv_session_t *s) {
  pthread_mutex_lock(&s->mu);
  const char *why = s->end_why;
  int deadline = srv_deadline_passed(s);
  pthread_mutex_unlock(&s->mu);
  return why ? why : deadline ? "deadline" : "cancelled";
}

void srv_session_end(srv_session_t *s, const char *why, grpc_status_code code, const char *details) {
  pthread_mutex_lock(&s->mu);
  if (!s->end_why) s->end_why = why;
  grpc_call *call = s->call; /* a resume may replace it: ours to cancel, referenced */
  if (call) grpc_call_ref(call);
  pthread_mutex_unlock(&s->mu);
  if (call) {
    grpc_call_cancel_with_status(call, code, details, NULL);
    grpc_call_unref(call);
  }
}

void srv_session_ref(srv_session_t *s) { atomic_fetch_add(&s->refs, 1); }

srv_session_t *srv_session_find(srv_t *srv, const char *key, const srv_tenant_t *t) {
  if (strlen(key) != RDEV_WIRE_SESSION_KEY_LEN) return NULL;
  srv_session_t *s;
  pthread_mutex_lock(&srv->mu);
  for (s = srv->sessions; s; s = s->next)
    if ((!t || s->tenant == t) && CRYPTO_memcmp(s->key, key, RDEV_WIRE_SESSION_KEY_LEN) == 0) break;
  if (s && !srv_session_ref_live(s)) s = NULL;
  pthread_mutex_unlock(&srv->mu);
  return s;
}

int srv_session_ref_live(srv_session_t *s) {
  int r = atomic_load(&s->refs);
  while (r > 0 && !atomic_compare_exchange_weak(&s->refs, &r, r + 1)) {}
  return r > 0;
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
  pthread_mutex_unlock(&srv->mu);
  srv_tenant_give(s->tenant, SRV_Q_SESSIONS, 0, 1);
  if (s->call) grpc_call_unref(s->call);
  grpc_metadata_array_destroy(&s->recv_md);
  srv_handles_free(&s->handles);
  srv_handles_free(&s->buffers);
  rdev_rt_space_destroy(s->space); /* the range goes once its last buffer is freed */
  free(s->sync_streams);
  free(s->dev_streams);
  free(s->held);
  if (s->peer) gpr_free(s->peer);
  pthread_cond_destroy(&s->local_cv);
  pthread_cond_destroy(&s->gate_cv);
  pthread_mutex_destroy(&s->mu);
  pthread_mutex_destroy(&s->req_mu);
  srv_zc_session_free(s->zc);
  if (s->bulk) s->bulk_free(s->bulk); /* its threads are gone: they held references */
  free(s);
  /* Counted out last: the thread that drops the last reference (a bulk
   * writer, which nobody joins) may be the one freeing it, and srv_stop
   * closes the runtime once the count is 0. */
  pthread_mutex_lock(&srv->mu);
  srv->nsessions--;
  pthread_cond_broadcast(&srv->cv);
  pthread_mutex_unlock(&srv->mu);
}

srv_session_t *srv_session_new(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                               const srv_grant_t *grant, char *msg, size_t msglen) {
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
  srv_zc_session_t *zc = srv_zc_session_new(srv->zc);
  rdev_rt_space_t *space = NULL;
  int rc = rdev_rt_space_create(srv->rt, &space);
  uint8_t raw[RDEV_WIRE_SESSION_KEY_LEN / 2];
  if (!rc && getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) rc = RDEV_INTERNAL_ERROR;
  if (!s || !ss || !ds || !zc || rc) {
    free(s);
    free(ss);
    free(ds);
    if (zc) srv_zc_session_free(zc);
    rdev_rt_space_destroy(space);
    gpr_free(peer);
    srv_tenant_give(tenant, SRV_Q_SESSIONS, 0, 1);
    snprintf(msg, msglen, "%s",
             rc == RDEV_INTERNAL_ERROR ? "no random source"
             : rc                      ? rdev_rt_last_error()
                                       : "out of server memory");
    return NULL;
  }
  s->space = space;
  for (size_t i = 0; i < sizeof raw; i++) snprintf(s->key + 2 * i, 3, "%02x", raw[i]);
  s->srv = srv;
  s->call = call;
  s->sync_streams = ss;
  s->zc = zc;
  s->id = atomic_fetch_add(&srv->next_session_id, 1);
  s->tenant = tenant;
  s->deadline = deadline;
  s->dev_streams = ds;
  s->own_caps = !srv->cfg.tenants[0];
  pthread_mutex_lock(&tenant->mu);
  s->max_inflight = tenant->max_inflight < srv->cfg.max_inflight ? tenant->max_inflight : srv->cfg.max_inflight;
  s->max_unacked = tenant->max_unacked;
  pthread_mutex_unlock(&tenant->mu);

  /* open mode: a group of its own (tenant ids count up from 1, far below) */
  s->group = s->own_caps ? 0x80000000u | (uint32_t)(s->id & 0x7fffffff) : tenant->id;
  s->peer = peer;
  s->grant = grant ? *grant : (srv_grant_t){.devices = ~0ULL};
  atomic_init(&s->refs, 1);
  pthread_mutex_init(&s->mu, NULL);
  pthread_mutex_init(&s->req_mu, NULL);
  rdev_clock_cond_init(&s->local_cv);
  pthread_cond_init(&s->gate_cv, NULL);
  grpc_metadata_array_init(&s->recv_md);
  pthread_mutex_lock(&srv->mu);
  srv->nsessions++;
  s->next = srv->sessions;
  if (s->next) s->next->prev = s;
  srv->sessions = s;
  pthread_mutex_lock(&tenant->mu);
  int removed = tenant->removed; /* a reload may have removed it since authentication */
  pthread_mutex_unlock(&tenant->mu);
  const char *why = NULL;
  int invalid = srv_grant_valid(tenant, &s->grant, &why) != 0; /* or changed its key */
  srv_audit(SRV_LOG_INFO, "session opened", s->tenant->name, s->peer, "session=%llu%s%s", (unsigned long long)s->id,
            s->grant.job[0] ? " job=" : "", s->grant.job);
  if (removed) srv_session_end(s, "tenant removed", GRPC_STATUS_PERMISSION_DENIED, "tenant removed");
  if (invalid && !removed) srv_session_end(s, why, GRPC_STATUS_UNAUTHENTICATED, why);
  pthread_mutex_unlock(&srv->mu);
  return s;
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
    if (!ending) srv_session_end(s, "drain", GRPC_STATUS_UNAVAILABLE, RDEV_WIRE_DRAIN_DETAILS);
  }
  pthread_mutex_unlock(&srv->mu);
}
