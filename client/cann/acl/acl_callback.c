/*
 * client/cann/acl/acl_callback.c — host callbacks in stream order, as CANN
 * runs them: aclrtLaunchCallback queues a report that a thread the program
 * subscribed to the stream (aclrtSubscribeReport) runs in
 * aclrtProcessReport; aclrtLaunchHostFunc runs its function on the thread
 * subscribed to the stream for host functions (aclrtSubscribeHostFunc), in
 * its aclrtProcessHostFunc, or else on rdev's host-call thread. The two
 * kinds of subscription are the same machinery, apart: a stream may have
 * one of each, and a thread takes each kind only in its own Process call.
 * All stand on rdev_launch_host_func: with ACL_CALLBACK_BLOCK (and for host
 * functions) the stream waits until the function returned, holding no
 * device slot.
 *
 * Its own lock (cb_mu), never the library's: rdev's host-call thread takes
 * it. aclFinalize waits (acl_callbacks_end) until no callback runs before
 * the session closes, and is refused inside one.
 *
 * Everything here is keyed by rdev streams: the calls that name an
 * aclrtStream resolve it first (acl_callback_stream.c), and a stream's
 * destroy (acl_stream.c) ends its subscription here.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "acl/acl.h"
#include "acl_lib.h"
#include "rdev/clock.h"

/* A reached aclrtLaunchCallback waiting for its thread's ProcessReport. */
typedef struct report {
  aclrtCallback fn;
  void *user;
  int block;              /* ACL_CALLBACK_BLOCK (always, for a host function) */
  acl_sub_kind_t kind;    /* whose: aclrtProcessReport's or aclrtProcessHostFunc's */
  rdev_host_call_t *call; /* reached and blocking: done once fn returned */
  uint64_t thread;
  struct report *next;
} report_t;

/* A subscribed thread (of one kind): its reports, and the streams
 * subscribed to it. */
typedef struct sub_thread {
  uint64_t id;
  acl_sub_kind_t kind;
  report_t *head, *tail;
  int nstreams, waiters; /* freed once neither: unsubscribed and not waited on */
  int gone;              /* unsubscribed from its last stream (or finalize) */
  pthread_cond_t cv;
  struct sub_thread *next;
} sub_thread_t;

typedef struct sub {
  rdev_stream_t *st;
  acl_sub_kind_t kind;
  sub_thread_t *t;
  struct sub *next;
} sub_t;

static pthread_mutex_t cb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_idle = PTHREAD_COND_INITIALIZER; /* running reached 0 */
static sub_t *subs;
static sub_thread_t *threads;
static int running;                   /* callbacks and host functions running now */
static _Thread_local int in_callback; /* this thread runs one */

/* A callback or host function starts / ends running. */
static void run_begin(void) {
  pthread_mutex_lock(&cb_mu);
  running++;
  pthread_mutex_unlock(&cb_mu);
  in_callback++;
}

static void run_end(void) {
  in_callback--;
  pthread_mutex_lock(&cb_mu);
  if (--running == 0) pthread_cond_broadcast(&cb_idle);
  pthread_mutex_unlock(&cb_mu);
}

int acl_in_callback(void) { return in_callback > 0; }

static sub_thread_t *thread_find(uint64_t id, acl_sub_kind_t kind) {
  sub_thread_t *t = threads;
  while (t && (t->id != id || t->kind != kind || t->gone)) t = t->next;
  return t;
}

/* cb_mu held: the subscription of st of that kind, or NULL. */
static sub_t *sub_find(const rdev_stream_t *st, acl_sub_kind_t kind) {
  sub_t *s = subs;
  while (s && (s->st != st || s->kind != kind)) s = s->next;
  return s;
}

static void thread_maybe_free(sub_thread_t *t) {
  if (!t->gone || t->waiters) return;
  sub_thread_t **pp = &threads;
  while (*pp != t) pp = &(*pp)->next;
  *pp = t->next;
  pthread_cond_destroy(&t->cv);
  free(t);
}

/* Reports never processed: their blocking calls let their streams go. */
static void drop_reports(report_t *r) {
  while (r) {
    report_t *n = r->next;
    if (r->call) rdev_host_call_done(r->call);
    free(r);
    r = n;
  }
}

/* cb_mu held: the thread leaves; its reports are handed back to drop. */
static report_t *thread_gone(sub_thread_t *t) {
  report_t *r = t->head;
  t->head = t->tail = NULL;
  t->gone = 1;
  pthread_cond_broadcast(&t->cv);
  thread_maybe_free(t);
  return r;
}

aclError acl_callbacks_subscribe(uint64_t threadId, rdev_stream_t *st, acl_sub_kind_t kind) {
  aclError rc = ACL_SUCCESS;
  pthread_mutex_lock(&cb_mu);
  sub_t *s = sub_find(st, kind);
  sub_thread_t *t = thread_find(threadId, kind);
  int fresh = !t;
  sub_t *n = s ? NULL : malloc(sizeof *n);
  if (s) {
    rc = acl_fail(ACL_ERROR_REPEAT_SUBSCRIBE, "stream %p is subscribed already (%s)", (void *)st,
                  kind == ACL_SUB_HOST_FUNC ? "aclrtSubscribeHostFunc" : "aclrtSubscribeReport");
  } else if (!n || (fresh && !(t = calloc(1, sizeof *t)))) {
    free(n);
    rc = acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  } else {
    if (fresh) {
      t->id = threadId;
      t->kind = kind;
      rdev_clock_cond_init(&t->cv);
      t->next = threads;
      threads = t;
    }
    t->nstreams++;
    *n = (sub_t){st, kind, t, subs};
    subs = n;
  }
  pthread_mutex_unlock(&cb_mu);
  return rc;
}

aclError acl_callbacks_unsubscribe(uint64_t threadId, rdev_stream_t *st, acl_sub_kind_t kind) {
  aclError rc = ACL_SUCCESS;
  report_t *drop = NULL;
  pthread_mutex_lock(&cb_mu);
  sub_t **pp = &subs;
  while (*pp && !((*pp)->st == st && (*pp)->kind == kind && (*pp)->t->id == threadId)) pp = &(*pp)->next;
  if (!*pp) {
    rc = acl_fail(ACL_ERROR_STREAM_NOT_SUBSCRIBE, "stream %p is not subscribed to thread %llu", (void *)st,
                  (unsigned long long)threadId);
  } else {
    sub_t *s = *pp;
    *pp = s->next;
    if (--s->t->nstreams == 0) drop = thread_gone(s->t);
    free(s);
  }
  pthread_mutex_unlock(&cb_mu);
  drop_reports(drop);
  return rc;
}

/* On rdev's host-call thread: the stream reached an aclrtLaunchCallback,
 * or a host function for a subscribed thread. */
static void report_reached(rdev_host_call_t *call, void *user, int status) {
  report_t *r = user;
  if (status != RDEV_OK) { /* it never will: the callback does not run */
    rdev_host_call_done(call);
    free(r);
    return;
  }
  if (r->block)
    r->call = call;
  else
    rdev_host_call_done(call); /* ACL_CALLBACK_NO_BLOCK: the stream goes on now */
  pthread_mutex_lock(&cb_mu);
  sub_thread_t *t = thread_find(r->thread, r->kind);
  if (t) {
    r->next = NULL;
    if (t->tail)
      t->tail->next = r;
    else
      t->head = r;
    t->tail = r;
    pthread_cond_signal(&t->cv);
    r = NULL;
  }
  pthread_mutex_unlock(&cb_mu);
  if (r) drop_reports(r); /* its thread unsubscribed meanwhile */
}

aclError acl_callbacks_launch(rdev_stream_t *st, aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType) {
  report_t *r = calloc(1, sizeof *r);
  if (!r) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  r->fn = fn;
  r->user = userData;
  pthread_mutex_lock(&cb_mu);
  sub_t *s = sub_find(st, ACL_SUB_REPORT);
  if (s) r->thread = s->t->id;
  pthread_mutex_unlock(&cb_mu);
  if (!s) {
    free(r);
    return acl_fail(ACL_ERROR_STREAM_NOT_SUBSCRIBE, "stream %p has no thread subscribed (aclrtSubscribeReport)",
                    (void *)st);
  }
  r->block = blockType == ACL_CALLBACK_BLOCK;
  aclError rc = acl_result(rdev_launch_host_func(st, r->block, report_reached, r), "aclrtLaunchCallback");
  if (rc) free(r);
  return rc;
}

/* aclrtProcessReport and aclrtProcessHostFunc: the calling thread runs
 * the next function of its subscription of that kind, waiting up to
 * timeout ms (-1: for ever) for one. */
static aclError process(acl_sub_kind_t kind, int32_t timeout) {
  const char *sub_call = kind == ACL_SUB_HOST_FUNC ? "aclrtSubscribeHostFunc" : "aclrtSubscribeReport";
  if (timeout < -1 || timeout == 0)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "timeout %d: -1 (forever) or milliseconds above 0", (int)timeout);
  uint64_t self = (uint64_t)pthread_self();
  struct timespec end = rdev_clock_deadline_ns(timeout > 0 ? (uint64_t)timeout * 1000000u : 0);
  pthread_mutex_lock(&cb_mu);
  sub_thread_t *t = thread_find(self, kind);
  if (!t) {
    pthread_mutex_unlock(&cb_mu);
    return acl_fail(ACL_ERROR_THREAD_NOT_SUBSCRIBE, "no stream is subscribed to this thread (%s)", sub_call);
  }
  t->waiters++;
  int timed_out = 0;
  while (!t->head && !t->gone && !timed_out)
    if (timeout < 0)
      pthread_cond_wait(&t->cv, &cb_mu);
    else
      timed_out = pthread_cond_timedwait(&t->cv, &cb_mu, &end) != 0 && !t->head;
  report_t *r = t->head;
  if (r) {
    t->head = r->next;
    if (!t->head) t->tail = NULL;
    running++; /* taken under the same lock: aclFinalize sees it */
    in_callback++;
  }
  int gone = t->gone;
  t->waiters--;
  thread_maybe_free(t);
  pthread_mutex_unlock(&cb_mu);
  if (!r) {
    if (gone) return acl_fail(ACL_ERROR_THREAD_NOT_SUBSCRIBE, "this thread was unsubscribed while it waited");
    return acl_fail(ACL_ERROR_RT_REPORT_TIMEOUT, "no %s came within %d ms",
                    kind == ACL_SUB_HOST_FUNC ? "host function" : "callback", (int)timeout);
  }
  r->fn(r->user);
  if (r->call) rdev_host_call_done(r->call); /* the stream goes on */
  free(r);
  run_end();
  return ACL_SUCCESS;
}

aclError aclrtProcessReport(int32_t timeout) { return process(ACL_SUB_REPORT, timeout); }

aclError aclrtProcessHostFunc(int32_t timeout) { return process(ACL_SUB_HOST_FUNC, timeout); }

/* aclrtLaunchHostFunc: runs on rdev's host-call thread, its stream waiting. */
typedef struct {
  aclrtHostFunc fn;
  void *args;
} host_fn_t;

static void host_fn_reached(rdev_host_call_t *call, void *user, int status) {
  host_fn_t *h = user;
  run_begin();
  if (status == RDEV_OK) h->fn(h->args);
  rdev_host_call_done(call);
  free(h);
  run_end();
}

aclError acl_callbacks_launch_host_func(rdev_stream_t *st, aclrtHostFunc fn, void *args) {
  pthread_mutex_lock(&cb_mu);
  sub_t *s = sub_find(st, ACL_SUB_HOST_FUNC);
  uint64_t thread = s ? s->t->id : 0;
  pthread_mutex_unlock(&cb_mu);
  if (s) { /* the subscribed thread runs it, in its aclrtProcessHostFunc; the stream waits for it */
    report_t *r = calloc(1, sizeof *r);
    if (!r) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
    *r = (report_t){.fn = fn, .user = args, .block = 1, .kind = ACL_SUB_HOST_FUNC, .thread = thread};
    aclError rc = acl_result(rdev_launch_host_func(st, 1, report_reached, r), "aclrtLaunchHostFunc");
    if (rc) free(r);
    return rc;
  }
  host_fn_t *h = malloc(sizeof *h);
  if (!h) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  *h = (host_fn_t){fn, args};
  aclError rc = acl_result(rdev_launch_host_func(st, 1, host_fn_reached, h), "aclrtLaunchHostFunc");
  if (rc) free(h);
  return rc;
}

void *acl_callbacks_stream_detach(rdev_stream_t *st) {
  pthread_mutex_lock(&cb_mu);
  sub_t **pp = &subs, *out = NULL;
  while (*pp) {
    if ((*pp)->st != st) {
      pp = &(*pp)->next;
      continue;
    }
    sub_t *s = *pp; /* out of the list: no launch or subscription finds it; its thread still takes reports */
    *pp = s->next;
    s->next = out;
    out = s;
  }
  pthread_mutex_unlock(&cb_mu);
  return out;
}

void acl_callbacks_stream_gone(void *detached) {
  report_t *drop = NULL;
  pthread_mutex_lock(&cb_mu);
  for (sub_t *s = detached, *n; s; s = n) { /* a report subscription and a host function one, at most */
    n = s->next;
    report_t *r = --s->t->nstreams == 0 ? thread_gone(s->t) : NULL;
    while (r) {
      report_t *rn = r->next;
      r->next = drop;
      drop = r;
      r = rn;
    }
    free(s);
  }
  pthread_mutex_unlock(&cb_mu);
  drop_reports(drop);
}

void acl_callbacks_end(void) {
  report_t *drop = NULL;
  pthread_mutex_lock(&cb_mu);
  while (running) pthread_cond_wait(&cb_idle, &cb_mu); /* their calls must be done before the session closes */
  while (subs) {
    sub_t *n = subs->next;
    free(subs);
    subs = n;
  }
  for (sub_thread_t *t = threads, *n; t; t = n) {
    n = t->next;
    t->nstreams = 0;
    report_t *r = thread_gone(t);
    while (r) {
      report_t *rn = r->next;
      r->next = drop;
      drop = r;
      r = rn;
    }
  }
  pthread_mutex_unlock(&cb_mu);
  drop_reports(drop);
}
