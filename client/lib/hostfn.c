/*
 * client/lib/hostfn.c — host functions in stream order
 * (rdev_launch_host_func): a HostFunc request whose FINAL reply says the
 * stream reached it. The session's host-call thread (started with the
 * first one) runs the functions in the order their replies came, so that
 * they may call the session's functions, which the receiver may not; a
 * blocking call's stream goes on when rdev_host_call_done sends the
 * HostFuncDone call (a unary call of its own, which never waits behind the
 * session's requests). Owns s->host and the call records; calls submit.c,
 * info.c (the unary call), stream.c (stream handles) and error.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

struct rdev_host_call {
  rdev_session_t *s;
  uint64_t seq, stream; /* the HostFunc request, its stream's server handle */
  bool block;
  int status; /* its reply's, or why none came */
  rdev_host_fn fn;
  void *user;
  struct rdev_host_call *qnext;       /* s->host.head: reached, to run */
  struct rdev_host_call *prev, *next; /* s->host.calls: not yet done */
};

/* Under s->mu: the reply came (or the call ended): the thread runs it. */
static void reached_locked(rdev_session_t *s, void *arg, int status) {
  rdev_host_call_t *c = arg;
  c->status = status;
  if (s->host.tail)
    s->host.tail->qnext = c;
  else
    s->host.head = c;
  s->host.tail = c;
  pthread_cond_signal(&s->host.cv);
}

static void *host_thread(void *arg) {
  rdev_session_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->host.head && !s->host.stop) pthread_cond_wait(&s->host.cv, &s->mu);
    rdev_host_call_t *c = s->host.head;
    if (!c) break; /* stopping, and nothing left to run */
    s->host.head = c->qnext;
    if (!s->host.head) s->host.tail = NULL;
    pthread_mutex_unlock(&s->mu);
    c->fn(c, c->user, c->status);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Takes c out of the session's calls and frees it. */
static void call_free(rdev_session_t *s, rdev_host_call_t *c) {
  pthread_mutex_lock(&s->mu);
  if (c->prev)
    c->prev->next = c->next;
  else
    s->host.calls = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_unlock(&s->mu);
  free(c);
}

int rdev_launch_host_func(rdev_stream_t *stream, int block, rdev_host_fn fn, void *user) {
  rdev_session_t *s = cl_stream_session(stream);
  if (!s || !fn) return cl_error(RDEV_INVALID_PARAM, "stream or fn is NULL");
  uint64_t h;
  int rc = cl_stream_handle(s, stream, &h);
  if (rc) return rc;
  if (block && (rc = cl_poll_wait_open(s, NULL))) return rc; /* its key came with the open's answer */
  if (block && !s->host.key[0])                              /* an older server: nothing could release the stream */
    return cl_error(RDEV_API_NOT_SUPPORT, "this rdevd offers no blocking host functions");
  rdev_host_call_t *c = calloc(1, sizeof *c);
  if (!c) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  *c = (rdev_host_call_t){.s = s, .stream = h, .block = block != 0, .fn = fn, .user = user};
  pthread_mutex_lock(&s->mu);
  if (!s->host.started) {
    if (pthread_create(&s->host.thread, NULL, host_thread, s) != 0) {
      pthread_mutex_unlock(&s->mu);
      free(c);
      return cl_error(RDEV_BAD_ALLOC, "cannot start the host-call thread");
    }
    s->host.started = true;
  }
  c->next = s->host.calls;
  if (c->next) c->next->prev = c;
  s->host.calls = c;
  pthread_mutex_unlock(&s->mu);

  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_host_func_tag;
  req.op.host_func.stream = h;
  req.op.host_func.block = c->block;
  req.seq = c->seq = cl_seq_reserve(s, 1);
  cl_pending_t *e = cl_expect_final(c->seq, h, reached_locked, c);
  rc = e ? cl_send_expect(s, &req, e) : cl_error(RDEV_BAD_ALLOC, "out of host memory");
  if (rc) { /* not queued: no reply will come, and fn never runs */
    call_free(s, c);
  }
  return cl_stream_sent(stream, rc);
}

void rdev_host_call_done(rdev_host_call_t *c) {
  if (!c) return;
  rdev_session_t *s = c->s;
  if (c->block && c->status == RDEV_OK) {
    rdev_v1_HostFuncDoneRequest q = rdev_v1_HostFuncDoneRequest_init_zero;
    snprintf(q.session, sizeof q.session, "%s", s->host.key);
    q.stream = c->stream;
    q.seq = c->seq;
    /* Until it got through (cl_unary tries again while the session may
     * resume): a stream left waiting would hang every later synchronize
     * of it. NOT_FOUND: the session ended meanwhile, its stream with it. */
    rdev_v1_HostFuncDoneReply r = rdev_v1_HostFuncDoneReply_init_zero;
    (void)cl_unary(s, RDEV_WIRE_METHOD_HOST_FUNC_DONE, rdev_v1_HostFuncDoneRequest_fields, &q,
                   rdev_v1_HostFuncDoneReply_fields, &r);
  }
  call_free(s, c);
}

void cl_host_init(rdev_session_t *s) { pthread_cond_init(&s->host.cv, NULL); }

void cl_host_close(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  bool started = s->host.started;
  s->host.stop = true;
  pthread_cond_signal(&s->host.cv);
  pthread_mutex_unlock(&s->mu);
  if (started) pthread_join(s->host.thread, NULL);
  while (s->host.calls) { /* never done: nothing will use them now */
    rdev_host_call_t *n = s->host.calls->next;
    free(s->host.calls);
    s->host.calls = n;
  }
  pthread_cond_destroy(&s->host.cv);
}
