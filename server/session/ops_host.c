/*
 * server/session/ops_host.c — host functions (aclrtLaunchCallback,
 * aclrtLaunchHostFunc), which run on the client: a HostFunc request queues
 * a callback on its stream that, when the stream reaches it, tells the
 * client (a FINAL reply to the request's seq). A blocking one then holds
 * its stream, waiting on the stream's own worker in that callback (so it
 * holds no execution slot and no other stream waits), until the client's
 * HostFuncDone call (a unary call of its own, server.c) opens its gate, or
 * until the session ends.
 */
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* One queued host function of a session (s->gates, under s->mu). */
struct srv_gate {
  srv_session_t *s;
  uint64_t seq;
  uint64_t stream; /* the client's handle, for replies */
  int block, open;
  srv_gate_t *prev, *next;
};

static void unlink_locked(srv_gate_t *g) {
  srv_session_t *s = g->s;
  if (g->prev)
    g->prev->next = g->next;
  else
    s->gates = g->next;
  if (g->next) g->next->prev = g->prev;
}

/* On the stream's worker when the stream reached the host function, or with
 * RDEV_CANCELLED when its stream was discarded (the client then hears of
 * it from the session's end). */
static void gate_cb(void *user, int status) {
  srv_gate_t *g = user;
  srv_session_t *s = g->s;
  srv_send_status(s, g->seq, 0, status == RDEV_OK ? RDEV_OK : RDEV_RT_STREAM_ABORT,
                  status == RDEV_OK ? "" : "the stream was aborted before this host function");
  pthread_mutex_lock(&s->mu);
  while (status == RDEV_OK && g->block && !g->open && !s->released) pthread_cond_wait(&s->gate_cv, &s->mu);
  unlink_locked(g);
  pthread_mutex_unlock(&s->mu);
  free(g);
  srv_session_unref(s);
}

int srv_op_host_func(srv_req_t *x) {
  const rdev_v1_HostFunc *h = &x->q->op.host_func;
  rdev_rt_stream_t *st;
  int rc = srv_get_stream(x, h->stream, &st);
  if (rc) return rc;
  srv_gate_t *g = calloc(1, sizeof *g);
  if (!g) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  *g = (srv_gate_t){.s = x->s, .seq = x->q->seq, .stream = h->stream, .block = h->block};
  srv_session_ref(x->s);
  pthread_mutex_lock(&x->s->mu);
  g->next = x->s->gates;
  if (g->next) g->next->prev = g;
  x->s->gates = g;
  pthread_mutex_unlock(&x->s->mu);
  if ((rc = rdev_rt_launch_callback(st, gate_cb, g)) != RDEV_OK) {
    pthread_mutex_lock(&x->s->mu);
    unlink_locked(g);
    pthread_mutex_unlock(&x->s->mu);
    free(g);
    srv_session_unref(x->s);
    return srv_rt_failed(x, rc);
  }
  return SRV_LATER; /* the callback answers */
}

bool srv_gates_holding(srv_session_t *s, uint64_t stream) {
  bool held = false;
  pthread_mutex_lock(&s->mu);
  for (srv_gate_t *g = s->gates; g && !held; g = g->next) held = g->stream == stream && g->block && !g->open;
  pthread_mutex_unlock(&s->mu);
  return held;
}

int srv_host_func_done(srv_t *srv, srv_tenant_t *t, const char *job, const char *key, uint64_t stream, uint64_t seq) {
  srv_session_t *s = srv_session_find(srv, key, t);
  if (!s) return -1;
  if (strcmp(s->grant.job, job) != 0) { /* a job token answers its own job's sessions only (set at open) */
    srv_session_unref(s);
    return -1;
  }
  pthread_mutex_lock(&s->mu);
  srv_gate_t *g = s->gates;
  while (g && !(g->seq == seq && g->stream == stream && g->block && !g->open)) g = g->next;
  if (g) {
    g->open = 1;
    pthread_cond_broadcast(&s->gate_cv);
  }
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
  return g ? 0 : -1;
}
