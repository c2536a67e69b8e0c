/*
 * runtime/engine_event.c — the engine's events, the same on every backend:
 * generation counters under one lock per device. A record is a task on a
 * stream (engine.c's worker completes it with eng_event_complete);
 * synchronize, query, timestamps and elapsed time read the counters here.
 * Times are the host's CLOCK_MONOTONIC when the worker reached the record.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdev/clock.h"
#include "rt_engine.h"

void eng_event_unref(eng_event_t *e) {
  if (atomic_fetch_sub(&e->refs, 1) != 1) return;
  rt_engine_t *eng = e->base.rt->eng;
  pthread_mutex_lock(&eng->mu);
  if (e->prev)
    e->prev->next = e->next;
  else
    eng->events = e->next;
  if (e->next) e->next->prev = e->prev;
  pthread_mutex_unlock(&eng->mu);
  free(e);
}

int rt_engine_event_create(rt_engine_t *eng, int dev, rdev_rt_event_t **out) {
  eng_dev_t *d = &eng->devs[dev];
  if (atomic_fetch_add(&d->nevents, 1) >= RDEV_RT_MAX_EVENTS_PER_DEVICE) {
    atomic_fetch_sub(&d->nevents, 1);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "device %d has its maximum of %d events", dev,
                   RDEV_RT_MAX_EVENTS_PER_DEVICE);
  }
  eng_event_t *e = calloc(1, sizeof *e);
  if (!e) {
    atomic_fetch_sub(&d->nevents, 1);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  e->base.rt = eng->rt;
  e->base.dev = dev;
  e->dev = d;
  atomic_init(&e->refs, 1);
  pthread_mutex_lock(&eng->mu);
  e->next = eng->events;
  if (e->next) e->next->prev = e;
  eng->events = e;
  pthread_mutex_unlock(&eng->mu);
  *out = &e->base;
  return RDEV_OK;
}

int rt_engine_event_destroy(rdev_rt_event_t *ev) {
  eng_event_t *e = (eng_event_t *)ev;
  atomic_fetch_sub(&e->dev->nevents, 1);
  eng_event_unref(e);
  return RDEV_OK;
}

/* Marks record `gen` of e complete (never moves backwards). */
void eng_event_complete(eng_event_t *e, uint64_t gen) {
  pthread_mutex_lock(&e->dev->ev_mu);
  if (gen > e->completed) {
    e->completed = gen;
    clock_gettime(CLOCK_MONOTONIC, &e->when);
  }
  pthread_cond_broadcast(&e->dev->ev_cv);
  pthread_mutex_unlock(&e->dev->ev_mu);
}

int rt_engine_event_sync(rdev_rt_event_t *ev, int32_t timeout_ms) {
  eng_event_t *e = (eng_event_t *)ev;
  struct timespec dl;
  if (timeout_ms >= 0) dl = rdev_clock_deadline_ns((uint64_t)timeout_ms * 1000000u);
  int rc = RDEV_OK;
  pthread_mutex_lock(&e->dev->ev_mu);
  uint64_t target = e->recorded;
  while (e->completed < target) {
    if (eng_cond_wait_until(&e->dev->ev_cv, &e->dev->ev_mu, timeout_ms >= 0 ? &dl : NULL) == ETIMEDOUT) {
      if (e->completed < target) rc = rt_fail(RDEV_RT_WAIT_TIMEOUT, "event not complete after %d ms", (int)timeout_ms);
      break;
    }
  }
  pthread_mutex_unlock(&e->dev->ev_mu);
  return rc;
}

int rt_engine_event_query(rdev_rt_event_t *ev, int *done) {
  eng_event_t *e = (eng_event_t *)ev;
  pthread_mutex_lock(&e->dev->ev_mu);
  *done = e->completed >= e->recorded;
  pthread_mutex_unlock(&e->dev->ev_mu);
  return RDEV_OK;
}

int rt_engine_event_timestamp(rdev_rt_event_t *ev, uint64_t *ns) {
  eng_event_t *e = (eng_event_t *)ev;
  pthread_mutex_lock(&e->dev->ev_mu);
  int ok = e->recorded > 0 && e->completed >= e->recorded;
  struct timespec t = e->when;
  pthread_mutex_unlock(&e->dev->ev_mu);
  if (!ok) return rt_fail(RDEV_INVALID_PARAM, "the event must be recorded and complete");
  *ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
  return RDEV_OK;
}

int rt_engine_event_elapsed(float *ms, rdev_rt_event_t *a, rdev_rt_event_t *b) {
  eng_event_t *x = (eng_event_t *)a, *y = (eng_event_t *)b;
  int ok = 1;
  struct timespec tx, ty;
  /* events of one runtime may sit on different devices: take each lock alone */
  pthread_mutex_lock(&x->dev->ev_mu);
  ok &= x->recorded > 0 && x->completed >= x->recorded;
  tx = x->when;
  pthread_mutex_unlock(&x->dev->ev_mu);
  pthread_mutex_lock(&y->dev->ev_mu);
  ok &= y->recorded > 0 && y->completed >= y->recorded;
  ty = y->when;
  pthread_mutex_unlock(&y->dev->ev_mu);
  if (!ok) return rt_fail(RDEV_INVALID_PARAM, "both events must be recorded and complete");
  *ms = (float)((double)(ty.tv_sec - tx.tv_sec) * 1e3 + (double)(ty.tv_nsec - tx.tv_nsec) / 1e6);
  return RDEV_OK;
}
