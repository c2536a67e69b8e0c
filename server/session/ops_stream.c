/*
 * server/session/ops_stream.c — the stream and event requests: streams in the
 * session's scheduling group within the tenant's caps, their failure mode,
 * destroy (a busy stream finishes first), synchronize (a short watch, else
 * a callback), and events.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/clock.h"
#include "session.h"

void srv_streams_give(srv_session_t *s, int dev) {
  if (s->own_caps) atomic_fetch_sub(&s->dev_streams[dev], 1);
  srv_tenant_give(s->tenant, SRV_Q_STREAMS, dev, 1);
}

/* Takes a stream on device dev for x's session: the tenant's stream quota
 * and cap per device, and in open mode the session's own cap. */
static int streams_take(srv_req_t *x, int dev) {
  srv_session_t *s = x->s;
  if (s->own_caps && atomic_fetch_add(&s->dev_streams[dev], 1) >= SRV_DEV_STREAMS_DEFAULT) {
    atomic_fetch_sub(&s->dev_streams[dev], 1);
    srv_fail(x, RDEV_QUOTA_EXCEEDED, "stream cap of session %llu on device %d: %d streams open",
             (unsigned long long)s->id, dev, SRV_DEV_STREAMS_DEFAULT);
    srv_audit(SRV_LOG_WARN, "cap refused", s->tenant->name, s->peer, "reason=%s", x->r.message);
    return RDEV_QUOTA_EXCEEDED;
  }
  if (srv_tenant_take(s->tenant, SRV_Q_STREAMS, dev, 1, s->peer, x->r.message, sizeof x->r.message)) {
    if (s->own_caps) atomic_fetch_sub(&s->dev_streams[dev], 1);
    return RDEV_QUOTA_EXCEEDED;
  }
  return RDEV_OK;
}

/* StreamSync, StreamDestroy and EventSync answer here, in stream order;
 * discarded by an abort (StreamAbort), they answer that. */
static void sync_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    int err = c->st ? rdev_rt_stream_take_error(c->st) : RDEV_OK;
    if (!c->quiet) srv_send_status(c->s, c->seq, 0, err, err ? rdev_rt_last_error() : "");
  } else if (!c->quiet) {
    srv_send_status(c->s, c->seq, 0, RDEV_RT_STREAM_ABORT, "the stream was aborted before it got here");
  }
  srv_cb_done(c);
}

int srv_op_stream_abort(srv_req_t *x) {
  srv_handle_t *e;
  int rc = srv_find_stream(x, x->q->op.stream_abort.stream, &e);
  if (rc) return rc;
  rc = rdev_rt_stream_discard(e->ptr);
  return rc ? srv_rt_failed(x, rc) : RDEV_OK;
}

int srv_op_stream_create(srv_req_t *x) {
  const rdev_v1_StreamCreate *m = &x->q->op.stream_create;
  rdev_rt_stream_t *st = NULL;
  int dev, rc = srv_check_device(x, m->device, &dev);
  if (rc || (rc = srv_client_handle_check(x, m->handle, "stream create")) || (rc = streams_take(x, dev))) return rc;
  rc = rdev_rt_stream_create(x->s->srv->rt, dev, &st);
  if (rc) {
    srv_streams_give(x->s, dev);
    return srv_rt_failed(x, rc);
  }
  int device_slots = x->s->srv->cfg.sim_slots;
  pthread_mutex_lock(&x->s->tenant->mu);
  uint32_t weight = (uint32_t)x->s->tenant->weight;
  int cap = !x->s->own_caps && x->s->tenant->max_slots ? x->s->tenant->max_slots : srv_slots_default(device_slots);
  pthread_mutex_unlock(&x->s->tenant->mu);
  /* the tenant's weight and cap as they are now (a reload may change them) */
  rdev_rt_stream_set_group(st, x->s->group, weight, device_slots ? (uint32_t)cap : 0);
  uint64_t h = srv_handle_enter(x->s, m->handle, SRV_H_STREAM, dev, st, 0, NULL);
  if (!h) {
    rdev_rt_stream_destroy_force(st);
    srv_streams_give(x->s, dev);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.handle = h;
  return m->quiet ? SRV_LATER : RDEV_OK;
}

void srv_reap_dead(srv_session_t *s) {
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
  if (!c->quota_back) srv_streams_give(c->s, rdev_rt_stream_device(c->st));
  sync_cb(c, status);
}

int srv_op_stream_failure_mode(srv_req_t *x) {
  srv_handle_t *e;
  int rc = srv_find_stream(x, x->q->op.stream_failure_mode.stream, &e);
  if (rc) return rc;
  rc = rdev_rt_stream_set_failure_mode(e->ptr, x->q->op.stream_failure_mode.stop);
  return rc ? srv_rt_failed(x, rc) : RDEV_OK;
}

int srv_op_stream_destroy(srv_req_t *x) {
  const rdev_v1_StreamDestroy *m = &x->q->op.stream_destroy;
  srv_handle_t *e;
  int rc = srv_find_stream(x, m->stream, &e);
  if (rc) return m->quiet ? SRV_LATER : rc; /* quiet: its create was refused, and said so */
  rdev_rt_stream_t *st = e->ptr;
  int dev = rdev_rt_stream_device(st), done = 0;
  rdev_rt_stream_idle(st, &done); /* a running callback too: it may be a fence */
  /* busy: it finishes its work first, as a dead stream (a fence in that
   * work may wait on this thread's sends: never wait for it here) */
  dead_stream_t *d = done ? NULL : malloc(sizeof *d);
  if (!done && !d) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  srv_zc_views_drop(e->ext);
  srv_handles_del(&x->s->handles, m->stream);
  if (done) {
    x->used = NULL; /* gone: nothing to watch */
    rc = rdev_rt_stream_destroy(st);
    srv_streams_give(x->s, dev);
    if (m->quiet) return SRV_LATER; /* its stream's errors go with it */
    return rc ? srv_rt_failed(x, rc) : RDEV_OK;
  }
  d->st = st;
  d->next = x->s->dead;
  x->s->dead = d;
  /* All its work done, only a host callback still running that ends
   * promptly (a synchronize's, whose answer may have brought this destroy;
   * not a blocking host function, held as long as the client likes): its
   * quota is free now, for a create right behind it. */
  int finishing = 0;
  if (rdev_rt_stream_query(st, &finishing) != RDEV_OK || srv_gates_holding(x->s, m->stream)) finishing = 0;
  cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, NULL, 0);
  if (c) {
    c->quiet = m->quiet;
    c->quota_back = finishing;
  }
  rc = srv_queue_callback(x, st, destroy_cb, c); /* frees c when it fails */
  if (rc != SRV_LATER || finishing) srv_streams_give(x->s, dev);
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
  uint64_t t0 = rdev_clock_now_ns();
  for (;;) {
    int idle = 0;
    if (rdev_rt_stream_idle(st, &idle) != RDEV_OK || idle) return idle;
    if (rdev_clock_now_ns() - t0 >= ns) return 0;
    sched_yield();
  }
}

int srv_op_stream_sync(srv_req_t *x) {
  /* No fence (srv_get_stream): a synchronize changes no memory that Reads
   * before it show, and the client takes their data before this answer
   * (replies complete in order). So it waits for none of their bytes to
   * leave, and their kept bulk frames stay uncopied (bulk.c). */
  srv_handle_t *e;
  int rc = srv_find_stream(x, x->q->op.stream_sync.stream, &e);
  if (rc) return rc;
  rdev_rt_stream_t *st = e->ptr;
  /* Launches it ran lately within the watch's time run here, at once: the
   * worker's wake-up is most of a small launch's cost. Else a stream idle
   * now or soon answers at once. */
  rdev_rt_stream_run_quick(st, SYNC_WATCH_NS, NULL);
  if (idle_within(st, SYNC_WATCH_NS)) {
    int err = rdev_rt_stream_take_error(st);
    return err ? srv_rt_failed(x, err) : RDEV_OK;
  }
  return srv_queue_callback(x, st, sync_cb, srv_cb_new(x->s, x->q->seq, st, NULL, 0));
}

int srv_op_stream_query(srv_req_t *x) {
  srv_handle_t *e;
  int done = 0, rc = srv_find_stream(x, x->q->op.stream_query.stream, &e);
  if (rc) return rc;
  if ((rc = rdev_rt_stream_query(e->ptr, &done))) return srv_rt_failed(x, rc);
  x->r.value = (uint64_t)done;
  return RDEV_OK;
}

int srv_op_event_create(srv_req_t *x) {
  const rdev_v1_EventCreate *m = &x->q->op.event_create;
  rdev_rt_event_t *ev;
  int dev, rc = srv_check_device(x, m->device, &dev);
  if (rc || (rc = srv_client_handle_check(x, m->handle, "event create"))) return rc;
  rc = rdev_rt_event_create(x->s->srv->rt, dev, &ev);
  if (rc) return srv_rt_failed(x, rc);
  uint64_t h = srv_handle_enter(x->s, m->handle, SRV_H_EVENT, dev, ev, 0, NULL);
  if (!h) {
    rdev_rt_event_destroy(ev);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.handle = h;
  return m->quiet ? SRV_LATER : RDEV_OK;
}

int srv_op_event_destroy(srv_req_t *x) {
  const rdev_v1_EventDestroy *m = &x->q->op.event_destroy;
  srv_handle_t *e;
  int rc = srv_get_event(x, m->event, &e);
  if (rc) return m->quiet ? SRV_LATER : rc; /* quiet: its create was refused, and said so */
  rdev_rt_event_destroy(e->ptr);
  srv_handles_del(&x->s->handles, m->event);
  return m->quiet ? SRV_LATER : RDEV_OK;
}

int srv_op_event_record(srv_req_t *x) {
  const rdev_v1_EventRecord *m = &x->q->op.event_record;
  rdev_rt_stream_t *st = NULL;
  srv_handle_t *e;
  int rc = srv_get_stream(x, m->stream, &st);
  if (rc || (rc = srv_get_event(x, m->event, &e))) return rc;
  rc = rdev_rt_event_record(e->ptr, st);
  return rc ? srv_rt_failed(x, rc) : SRV_LATER;
}

int srv_op_stream_wait_event(srv_req_t *x) {
  const rdev_v1_StreamWaitEvent *m = &x->q->op.stream_wait_event;
  rdev_rt_stream_t *st = NULL;
  srv_handle_t *e;
  int rc = srv_get_stream(x, m->stream, &st);
  if (rc || (rc = srv_get_event(x, m->event, &e))) return rc;
  rc = rdev_rt_stream_wait_event(st, e->ptr);
  return rc ? srv_rt_failed(x, rc) : SRV_LATER;
}

int srv_op_event_sync(srv_req_t *x) {
  srv_handle_t *e;
  int rc = srv_get_event(x, x->q->op.event_sync.event, &e);
  if (rc) return rc;
  rdev_rt_stream_t **ss = &x->s->sync_streams[e->dev];
  if (!*ss) { /* counted like any stream (it only waits, so it never takes a slot) */
    if ((rc = streams_take(x, e->dev))) return rc;
    if ((rc = rdev_rt_stream_create(x->s->srv->rt, e->dev, ss))) {
      srv_streams_give(x->s, e->dev);
      return srv_rt_failed(x, rc);
    }
  }
  x->used = *ss;
  if ((rc = rdev_rt_stream_wait_event(*ss, e->ptr))) return srv_rt_failed(x, rc);
  return srv_queue_callback(x, *ss, sync_cb, srv_cb_new(x->s, x->q->seq, NULL, NULL, 0));
}

int srv_op_event_query(srv_req_t *x) {
  srv_handle_t *e;
  int done = 0, rc = srv_get_event(x, x->q->op.event_query.event, &e);
  if (rc) return rc;
  if ((rc = rdev_rt_event_query(e->ptr, &done))) return srv_rt_failed(x, rc);
  x->r.value = (uint64_t)done;
  uint64_t ns = 0;
  if (done && rdev_rt_event_timestamp(e->ptr, &ns) == RDEV_OK) x->r.value2 = ns; /* 0: never recorded */
  return RDEV_OK;
}

int srv_op_event_elapsed(srv_req_t *x) {
  srv_handle_t *a, *b;
  int rc = srv_get_event(x, x->q->op.event_elapsed.start, &a);
  if (rc || (rc = srv_get_event(x, x->q->op.event_elapsed.end, &b))) return rc;
  if ((rc = rdev_rt_event_elapsed_ms(&x->r.elapsed_ms, a->ptr, b->ptr))) return srv_rt_failed(x, rc);
  return RDEV_OK;
}
