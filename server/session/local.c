/*
 * server/session/local.c — in-process sessions: a session without a call, for
 * tests and the fuzz harnesses. Messages are fed in, replies handed to the
 * owner's function; everything else is the served path itself.
 */
#include <unistd.h>

#include "rdev/clock.h"
#include "session.h"

srv_session_t *srv_session_open_local(srv_t *srv, srv_tenant_t *tenant, srv_reply_fn fn, void *user) {
  char msg[256];
  srv_session_t *s = srv_session_new(srv, NULL, gpr_inf_future(GPR_CLOCK_MONOTONIC), tenant, NULL, msg, sizeof msg);
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
  srv_session_ref(s); /* as a receive holds one */
  if (srv_handle_message(s, bb)) {
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
