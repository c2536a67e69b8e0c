/*
 * server/session/call.c — a Session call's events: accepting it
 * (srv_session_start), each received message handed to dispatch.c (the
 * next receive posted late after small ones), and the call's end, which
 * releases the session and writes its audit line, or detaches a
 * resumable one; a new call taking a detached session over
 * (srv_session_resume), and the reaper that ends those whose resume
 * window passed, and any whose job token expired or whose tenant's
 * signing key changed.
 */
#include <grpc/support/alloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/clock.h"
#include "session.h"

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

static void on_recv(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, recv_op));
  grpc_byte_buffer *bb = s->recv_bb;
  s->recv_bb = NULL;
  /* The receive counts as the call's until what it got is counted (a
   * call that takes the session over reads the count once none is). */
  pthread_mutex_lock(&s->mu);
  int bye = s->bye;
  /* Messages that end without the client's bye: the call broke (a cut
   * call's receive may end "fine"); on_close says whether the session
   * waits for another. */
  int broke = (!ok || !bb) && s->resumable && !bye;
  grpc_call *cut = NULL; /* messages that ended cleanly without a bye: the call is cut here */
  if (broke) {
    s->recv_wanted = 1;
    if (ok) grpc_call_ref(cut = s->call);
  }
  if (ok && bb && s->resumable) s->rx_msgs++; /* before it runs: its replies acknowledge it */
  atomic_fetch_sub(&s->call_ops, 1);
  pthread_mutex_unlock(&s->mu);
  if (broke) {
    if (bb) grpc_byte_buffer_destroy(bb);
    if (cut) {
      grpc_call_cancel_with_status(cut, GRPC_STATUS_UNAVAILABLE, "the session's messages ended without a bye", NULL);
      grpc_call_unref(cut);
    }
    srv_session_unref(s);
    return;
  }
  if (!ok || !bb) { /* client half-closed, or the call is gone */
    if (bb) grpc_byte_buffer_destroy(bb);
    pthread_mutex_lock(&s->mu);
    s->half_closed = 1;
    pthread_mutex_unlock(&s->mu);
    srv_session_release(s);
    pthread_mutex_lock(&s->mu);
    srv_maybe_send_status(s);
    pthread_mutex_unlock(&s->mu);
    srv_session_unref(s);
    return;
  }
  size_t len = grpc_byte_buffer_length(bb);
  int paused = srv_handle_message(s, bb);
  srv_maybe_ack(s, len);
  if (paused) { /* the resumer goes on, and receives next */
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

static void on_close(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, close_op));
  (void)ok;
  atomic_fetch_sub(&s->call_ops, 1);
  pthread_mutex_lock(&s->mu);
  /* A call that ended before its session did (no bye from the client,
   * not ended by rdevd: it broke, whatever gRPC says of it) leaves its
   * session waiting for a call that resumes it, with this batch's
   * reference; the reaper ends it once its window passed. */
  int detach = s->resumable && !s->end_why && !s->bye && !s->released && !atomic_load(&s->srv->draining) &&
               !srv_deadline_passed(s);
  if (detach) {
    s->detached = 1;
    s->broken = 1;
    s->detached_until = (int64_t)rdev_clock_now_ns() + (int64_t)s->srv->cfg.resume_ms * 1000000;
    srv_unacked_to_tenant_locked(s, 1);
    /* said before mu goes: from then on the reaper may end it, and a
     * resume change its peer */
    srv_audit(SRV_LOG_INFO, "session detached", s->tenant->name, s->peer, "session=%llu reason=cancelled resume_ms=%d",
              (unsigned long long)s->id, s->srv->cfg.resume_ms);
  }
  pthread_mutex_unlock(&s->mu);
  if (detach) return;
  if (s->cancelled) srv_session_release(s);
  srv_session_closed(s, s->cancelled ? srv_end_reason(s) : "closed by client");
  pthread_mutex_lock(&s->mu);
  s->broken = 1;
  srv_drop_queue(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
}

/* The "accepted" mark and the server's batch limit: constant, shared. */
static char batch_xfer_str[24];

static void open_md_init(void) { snprintf(batch_xfer_str, sizeof batch_xfer_str, "%u", RDEV_WIRE_MAX_BATCH_XFER); }

/* Per device of the session, the tenant's quota there (0: none) and the
 * device's memory, as "quota/total" (RDEV_WIRE_MEM_LIMITS_KEY), and its
 * name (RDEV_WIRE_DEVICE_NAMES_KEY). */
static void devices_fill(srv_session_t *s, int ndev) {
  srv_tenant_t *t = s->tenant;
  pthread_mutex_lock(&t->mu);
  size_t quota = t->mem_quota;
  pthread_mutex_unlock(&t->mu);
  char *at = s->mem_limits_str, *end = at + sizeof s->mem_limits_str;
  char *nat = s->device_names_str, *nend = nat + sizeof s->device_names_str;
  *at = *nat = '\0';
  for (int i = 0, d; (d = srv_tenant_device(t, s->grant.devices, ndev, i)) >= 0 && i < RDEV_WIRE_MAX_DEVICES; i++) {
    size_t free_bytes = 0, total = 0;
    rdev_rt_mem_info(s->srv->rt, d, &free_bytes, &total);
    at += snprintf(at, (size_t)(end - at), "%s%zu/%zu", i ? "," : "", quota == SIZE_MAX ? 0 : quota, total);
    rdev_rt_device_info_t info = {.name = ""};
    rdev_rt_device_info(s->srv->rt, d, &info);
    char *name = nat + (i ? 1 : 0);
    nat += snprintf(nat, (size_t)(nend - nat), "%s%.31s", i ? "," : "", info.name);
    for (char *c = name; c < nat; c++)
      if (*c == ',') *c = '_';
  }
}

/* The open metadata: static strings, but the key and the device count,
 * which the session holds (it outlives the start batch, which holds a
 * reference). */
static size_t open_md_fill(srv_session_t *s) {
  grpc_metadata *md = s->open_md;
  int ndev = 0;
  rdev_rt_device_count(s->srv->rt, &ndev);
  snprintf(s->devices_str, sizeof s->devices_str, "%d", srv_tenant_device_count(s->tenant, s->grant.devices, ndev));
  devices_fill(s, ndev);
  md[0].key = grpc_slice_from_static_string(RDEV_WIRE_SESSION_OPEN_KEY);
  md[0].value = grpc_slice_from_static_string("open");
  md[1].key = grpc_slice_from_static_string(RDEV_WIRE_BATCH_XFER_KEY);
  md[1].value = grpc_slice_from_static_string(batch_xfer_str);
  md[2].key = grpc_slice_from_static_string(RDEV_WIRE_SESSION_KEY_KEY);
  md[2].value = grpc_slice_from_static_string(s->key);
  md[3].key = grpc_slice_from_static_string(RDEV_WIRE_DEVICES_KEY);
  md[3].value = grpc_slice_from_static_string(s->devices_str);
  int local = s->srv->bulk_path[0] != '\0';
  md[4].key = grpc_slice_from_static_string(local ? RDEV_WIRE_BULK_PATH_KEY : RDEV_WIRE_BULK_PORT_KEY);
  md[4].value = grpc_slice_from_static_string(local ? s->srv->bulk_path : s->srv->bulk_port_str);
  size_t n = local || s->srv->bulk_port > 0 ? 5 : 4;
  md[n].key = grpc_slice_from_static_string(RDEV_WIRE_MEM_LIMITS_KEY);
  md[n++].value = grpc_slice_from_static_string(s->mem_limits_str);
  md[n].key = grpc_slice_from_static_string(RDEV_WIRE_DEVICE_NAMES_KEY);
  md[n++].value = grpc_slice_from_static_string(s->device_names_str);
  if (!s->resumable) return n;
  md[n].key = grpc_slice_from_static_string(RDEV_WIRE_RESUME_MS_KEY);
  md[n].value = grpc_slice_from_static_string(s->srv->resume_ms_str);
  return n + 1;
}

/* A metadata value of md by key: its slice, or NULL. */
static const grpc_slice *md_value(const grpc_metadata_array *md, const char *key) {
  for (size_t i = 0; i < md->count; i++)
    if (grpc_slice_str_cmp(md->metadata[i].key, key) == 0) return &md->metadata[i].value;
  return NULL;
}

/* Watches s's call for its end (on_close), with the reference the session
 * holds for it. */
static void watch_close(srv_session_t *s) {
  grpc_op close_op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};
  close_op.data.recv_close_on_server.cancelled = &s->cancelled;
  atomic_fetch_add(&s->call_ops, 1);
  RDEV_HANDOFF_GIVE(&s->close_op);
  if (grpc_call_start_batch(s->call, &close_op, 1, &s->close_op, NULL) != GRPC_CALL_OK) {
    atomic_fetch_sub(&s->call_ops, 1);
    srv_log(SRV_LOG_ERROR, "session %llu: cannot watch for close", (unsigned long long)s->id);
  }
}

int srv_session_start(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                      const srv_grant_t *grant, const grpc_metadata_array *md, char *msg, size_t msglen) {
  srv_session_t *s = srv_session_new(srv, call, deadline, tenant, grant, msg, msglen);
  if (!s) return -1;
  /* kept through breaks when its client asks for it (it then says bye
   * before its half-close) and this server keeps sessions at all */
  const grpc_slice *want = md_value(md, RDEV_WIRE_RESUMABLE_KEY);
  s->resumable = srv->cfg.resume_ms > 0 && want && grpc_slice_str_cmp(*want, "1") == 0;
  srv_flow_init(s);
  s->recv_op.done = on_recv;
  s->close_op.done = on_close;
  watch_close(s);
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, open_md_init);
  grpc_op start = {.op = GRPC_OP_SEND_INITIAL_METADATA};
  start.data.send_initial_metadata.count = open_md_fill(s);
  start.data.send_initial_metadata.metadata = s->open_md;
  pthread_mutex_lock(&s->mu);
  srv_start_batch(s, &start, 1, &s->start_op);
  srv_post_recv(s);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int srv_session_resume(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                       const srv_grant_t *grant, const grpc_metadata_array *md) {
  const grpc_slice *kv = md_value(md, RDEV_WIRE_RESUME_KEY), *av = md_value(md, RDEV_WIRE_RESUME_ACKED_KEY);
  if (!kv) return 0;
  char key[RDEV_WIRE_SESSION_KEY_LEN + 1] = "", num[24] = "";
  if (GRPC_SLICE_LENGTH(*kv) == RDEV_WIRE_SESSION_KEY_LEN) memcpy(key, GRPC_SLICE_START_PTR(*kv), sizeof key - 1);
  if (av && GRPC_SLICE_LENGTH(*av) < sizeof num) memcpy(num, GRPC_SLICE_START_PTR(*av), GRPC_SLICE_LENGTH(*av));
  char *end;
  unsigned long long acked = strtoull(num, &end, 10);
  if (num[0] < '0' || num[0] > '9' || *end) {
    srv_call_respond(call, NULL, GRPC_STATUS_INVALID_ARGUMENT, "resume: " RDEV_WIRE_RESUME_ACKED_KEY " is not a count");
    return 1;
  }
  srv_session_t *s = srv_session_find(srv, key, NULL);
  if (s && (s->tenant != tenant || strcmp(s->grant.job, grant->job) != 0 || s->grant.devices != grant->devices)) {
    /* another tenant's or job's credentials, or a token of other devices: the session is not theirs */
    char *peer = grpc_call_get_peer(call);
    srv_audit(SRV_LOG_WARN, "resume refused", tenant->name, peer, "session=%llu reason=%s", (unsigned long long)s->id,
              s->tenant != tenant                     ? "another tenant's session"
              : strcmp(s->grant.job, grant->job) != 0 ? "another job's session"
                                                      : "a job token for other devices");
    gpr_free(peer);
    srv_session_unref(s);
    srv_call_respond(call, NULL, GRPC_STATUS_PERMISSION_DENIED, "resume: the session is another tenant's");
    return 1;
  }
  if (s && grant->job[0]) { /* the resuming token's expiry and key from now on (same job, same devices) */
    pthread_mutex_lock(&s->mu);
    s->grant.expires_ms = grant->expires_ms;
    s->grant.key_gen = grant->key_gen;
    pthread_mutex_unlock(&s->mu);
  }
  grpc_call *old = NULL;
  int busy = 0;
  if (s) {
    pthread_mutex_lock(&s->mu);
    if (s->released || !s->resumable || s->end_why) { /* ending: the reaper frees it */
      old = NULL;
    } else if (!s->detached || atomic_load(&s->call_ops) > 0) {
      /* its old call is not over here yet (its connection may look alive
       * from here, or half gone): cut it, the client tries again */
      busy = 1;
      if (!s->detached) old = s->call, grpc_call_ref(old);
    } else {
      old = s->call; /* taken over: the new call's state, before its close is watched */
      s->call = call;
      s->deadline = deadline;
      s->detached = 0;
      s->cancelled = 0;
      s->broken = 1; /* no reply goes out before the kept ones are queued first (reattach) */
      s->status_started = 0;
      s->send_busy = 0;
      srv_unacked_to_tenant_locked(s, 0);
      s->over_cap = 0;
    }
    pthread_mutex_unlock(&s->mu);
  }
  if (!s || (!busy && !old)) {
    if (s) srv_session_unref(s);
    srv_call_respond(call, NULL, GRPC_STATUS_NOT_FOUND,
                     "resume: no such session here (it ended, or its resume window passed)");
    return 1;
  }
  if (busy) {
    if (old) {
      grpc_call_cancel_with_status(old, GRPC_STATUS_UNAVAILABLE, "the session is resumed on another call", NULL);
      grpc_call_unref(old);
    }
    srv_session_unref(s);
    srv_call_respond(call, NULL, GRPC_STATUS_UNAVAILABLE, "resume: the session's broken call is still ending; retry");
    return 1;
  }
  grpc_call_unref(old);
  char *peer = grpc_call_get_peer(call);
  pthread_mutex_lock(&s->mu);
  srv_audit(SRV_LOG_INFO, "session resumed", s->tenant->name, peer, "session=%llu acked=%llu received=%llu sent=%llu",
            (unsigned long long)s->id, acked, (unsigned long long)s->rx_msgs, (unsigned long long)s->tx_msgs);
  gpr_free(s->peer);
  s->peer = peer;
  pthread_mutex_unlock(&s->mu);
  watch_close(s); /* with the detached state's reference */
  pthread_mutex_lock(&s->mu);
  size_t n = open_md_fill(s);
  snprintf(s->received_str, sizeof s->received_str, "%llu", (unsigned long long)s->rx_msgs);
  s->open_md[0].value = grpc_slice_from_static_string("resumed");
  s->open_md[n].key = grpc_slice_from_static_string(RDEV_WIRE_RESUME_RECEIVED_KEY);
  s->open_md[n].value = grpc_slice_from_static_string(s->received_str);
  grpc_op start = {.op = GRPC_OP_SEND_INITIAL_METADATA};
  start.data.send_initial_metadata.count = n + 1;
  start.data.send_initial_metadata.metadata = s->open_md;
  srv_start_batch(s, &start, 1, &s->start_op);
  srv_flow_reattach_locked(s, acked);
  if (s->recv_wanted) {
    s->recv_wanted = 0;
    srv_post_next_recv(s);
  }
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
  return 1;
}

/* ---- the resume window ------------------------------------------------------ */

/* A detached session whose window passed (or whose server drains, or
 * whose tenant passed its cap on unacknowledged replies) ends: released,
 * its audit line written, its kept replies dropped. */
static void expire(srv_session_t *s) {
  srv_session_release(s);
  pthread_mutex_lock(&s->mu);
  const char *why = s->end_why; /* a job token's end, say */
  pthread_mutex_unlock(&s->mu);
  srv_session_closed(s, why                ? why
                        : s->expiring == 2 ? "unacknowledged replies over the tenant's cap"
                                           : "resume window passed");
  pthread_mutex_lock(&s->mu);
  srv_drop_queue(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s); /* the detached state's (its last call's close batch's) */
}

#define REAP_EVERY_MS 100

static void *reaper_main(void *arg) {
  srv_t *srv = arg;
  pthread_mutex_lock(&srv->mu);
  while (!srv->reaper_stop) {
    struct timespec dl = rdev_clock_deadline_ns((uint64_t)REAP_EVERY_MS * 1000000u);
    pthread_cond_timedwait(&srv->reaper_cv, &srv->mu, &dl);
    int64_t now = (int64_t)rdev_clock_now_ns();
    int draining = atomic_load(&srv->draining);
    srv_session_t *due = NULL;
    for (srv_session_t *s = srv->sessions; s; s = s->next) {
      const char *why;
      pthread_mutex_lock(&s->mu);
      srv_grant_t g = s->grant;
      int ending = s->end_why != NULL || s->released;
      pthread_mutex_unlock(&s->mu);
      if (g.job[0] && !ending && srv_grant_valid(s->tenant, &g, &why) != 0) /* a job token's end */
        srv_session_end(s, why, GRPC_STATUS_UNAUTHENTICATED, why);
      pthread_mutex_lock(&s->mu);
      int go =
          s->detached && (now >= s->detached_until || draining || s->over_cap || s->end_why) && srv_session_ref_live(s);
      if (go) { /* no call takes it over from now on */
        s->detached = 0;
        s->expiring = s->over_cap == SRV_OVER_TENANT ? 2 : 1;
        srv_unacked_to_tenant_locked(s, 0);
      }
      pthread_mutex_unlock(&s->mu);
      if (go) {
        s->reap_next = due;
        due = s;
      }
    }
    pthread_mutex_unlock(&srv->mu);
    while (due) {
      srv_session_t *s = due;
      due = s->reap_next;
      expire(s);
      srv_session_unref(s);
    }
    pthread_mutex_lock(&srv->mu);
  }
  pthread_mutex_unlock(&srv->mu);
  return NULL;
}

int srv_resume_start(srv_t *srv) {
  rdev_clock_cond_init(&srv->reaper_cv);
  srv->reaper_stop = 0;
  if (pthread_create(&srv->reaper, NULL, reaper_main, srv) != 0) {
    srv_log(SRV_LOG_ERROR, "cannot start the resume window's thread");
    pthread_cond_destroy(&srv->reaper_cv);
    return -1;
  }
  srv->reaper_started = 1;
  return 0;
}

void srv_resume_stop(srv_t *srv) {
  if (!srv->reaper_started) return;
  pthread_mutex_lock(&srv->mu);
  srv->reaper_stop = 1;
  pthread_cond_broadcast(&srv->reaper_cv);
  pthread_mutex_unlock(&srv->mu);
  pthread_join(srv->reaper, NULL);
  pthread_cond_destroy(&srv->reaper_cv);
  srv->reaper_started = 0;
}
