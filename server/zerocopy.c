/*
 * server/zerocopy.c — Read replies that show device memory itself: the
 * slice's pin (pin_t) that keeps the buffer's memory until gRPC lets go,
 * the per-stream and per-session counts of such replies (views_t) and the
 * fence that makes later work on a stream wait for them, so that what a
 * reply shows cannot change under it.
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

#include "session.h"

static void pins_free(pins_t *p) {
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* The session ends: its pins go with its last slice (or now). */
void srv_pins_orphan(pins_t *p) {
  pthread_mutex_lock(&p->mu);
  p->orphan = 1;
  int done = p->n == 0;
  pthread_mutex_unlock(&p->mu);
  if (done) pins_free(p);
}

/* gRPC let go of a zero-copy reply's slice. */
static void unpin(void *user) {
  pin_t *pin = user;
  RDEV_HANDOFF_TAKE(pin);
  views_t *v = pin->v;
  pins_t *p = v->pins;
  srv_t *srv = p->srv;
  pthread_mutex_lock(&p->mu);
  pin->mem->shown -= pin->sync;
  int wake = 0;
  if (--v->n == 0) {
    pthread_cond_broadcast(&p->cv); /* fences */
    wake = v->resume;
  }
  int gone = --v->refs == 0;
  int done = --p->n == 0 && p->orphan;
  pthread_mutex_unlock(&p->mu);
  srv_mem_unref(pin->mem);
  free(pin);
  if (gone) free(v);
  if (done) pins_free(p);
  if (wake) srv_resumer_wake(srv);
  atomic_fetch_sub(&srv->pinned, 1);
}

/* A zero-copy reply's slice over len bytes of device memory at view, of
 * buffer memory mem, counted in v (its stream's, or the session's
 * synchronous Reads' when sync): that memory is not given back, nor changed
 * by work that waits for v (or, when sync, for mem->shown), until gRPC let
 * go of it. pin: allocated by the caller, it goes with the slice. */
grpc_slice srv_pinned_slice(pin_t *pin, views_t *v, mem_t *mem, int sync, const void *view, size_t len) {
  pin->v = v;
  pin->mem = srv_mem_ref(mem);
  pin->sync = sync;
  pthread_mutex_lock(&v->pins->mu);
  mem->shown += sync;
  v->pins->n++;
  v->n++;
  v->refs++;
  pthread_mutex_unlock(&v->pins->mu);
  atomic_fetch_add(&v->pins->srv->pinned, 1);
  RDEV_HANDOFF_GIVE(pin); /* gRPC lets go of it, maybe on another thread */
  return grpc_slice_new_with_user_data((void *)view, len, unpin, pin);
}

views_t *srv_views_new(pins_t *p) {
  views_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->pins = p;
  v->refs = 1; /* its owner's */
  return v;
}

views_t *srv_views_ref(views_t *v) {
  pthread_mutex_lock(&v->pins->mu);
  v->refs++;
  pthread_mutex_unlock(&v->pins->mu);
  return v;
}

void srv_views_unref(views_t *v) {
  pthread_mutex_lock(&v->pins->mu);
  int gone = --v->refs == 0;
  pthread_mutex_unlock(&v->pins->mu);
  if (gone) free(v);
}

/* On the stream: waits until the replies of the async view reads queued
 * before it left (or the session is being released). */
static void fence_cb(void *user, int status) {
  views_t *v = user;
  pins_t *p = v->pins;
  pthread_mutex_lock(&p->mu);
  while (status == RDEV_OK && v->n > 0 && !p->closing) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  srv_views_unref(v);
}

/* Queues a fence on e's stream if async view reads were queued since the
 * last one: work queued after it cannot change what their replies show,
 * nor see the copy incomplete. req_mu held. */
int srv_views_fence(srv_handle_t *e) {
  views_t *v = e->views;
  if (!v || !v->unfenced) return RDEV_OK;
  int rc = rdev_rt_launch_callback(e->ptr, fence_cb, srv_views_ref(v));
  if (rc != RDEV_OK) {
    srv_views_unref(v);
    return rc;
  }
  v->unfenced = 0;
  return RDEV_OK;
}

/* Sends an async Read's data straight from device memory once its stream
 * reached it. */
void srv_read_view_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    srv_send_data(c->s, c->seq, srv_pinned_slice(c->pin, c->views, c->mem, 0, c->buf, c->len));
    c->pin = NULL;
  }
  srv_cb_done(c);
}
