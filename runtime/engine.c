/*
 * runtime/engine.c — the stream engine (rt_engine.h), the same on every
 * backend: each stream's worker thread draining its bounded ring of tasks
 * in order (or a synchronizing thread running short launches itself, as
 * the worker would: rt_engine_stream_run_here), synchronize, abort,
 * discard and destroy. Host callbacks, event records and waits and value
 * waits run here; device tasks go to the backend's exec, each in an
 * execution slot of engine_sched.c's. Events are engine_event.c's.
 *
 * Errors of async work are kept on the stream (first one wins) and handed
 * to the next synchronize, which clears them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdev/clock.h"
#include "rt_engine.h"

/* ---- stream worker ------------------------------------------------------- */

int rt_engine_cut_off(rdev_rt_stream_t *st) { return eng_cut_off((eng_stream_t *)st); }

int rt_engine_sleep(rdev_rt_stream_t *st, uint64_t ns) {
  eng_stream_t *s = (eng_stream_t *)st;
  struct timespec dl = rdev_clock_deadline_ns(ns);
  pthread_mutex_lock(&s->mu);
  while (!eng_cut_off(s) && pthread_cond_timedwait(&s->cv_work, &s->mu, &dl) != ETIMEDOUT) {}
  int aborted = eng_cut_off(s);
  pthread_mutex_unlock(&s->mu);
  return aborted;
}

/* Whether value v meets the condition of RT_TASK_VALUE_WAIT t. */
static int value_met(const rt_task_t *t, uint64_t v) {
  uint64_t w = t->u.value.value;
  switch (t->u.value.cond) {
    case RDEV_VALUE_GEQ: return v >= w;
    case RDEV_VALUE_EQ: return v == w;
    case RDEV_VALUE_AND: return (v & w) != 0;
    default: return ~(v | w) != 0;
  }
}

/* Runs one task on the worker; returns its error (RDEV_OK normally). */
static int exec_task(eng_stream_t *s, rt_task_t *t) {
  const rt_backend_t *be = s->base.rt->be;
  switch (t->op) {
    case RT_TASK_CALLBACK: t->u.cb.fn(t->u.cb.user, RDEV_OK); return RDEV_OK;
    case RT_TASK_EVENT_RECORD:
      eng_event_complete((eng_event_t *)t->u.event.ev, t->u.event.gen);
      eng_event_unref((eng_event_t *)t->u.event.ev);
      return RDEV_OK;
    case RT_TASK_EVENT_WAIT: {
      eng_event_t *e = (eng_event_t *)t->u.event.ev;
      pthread_mutex_lock(&s->dev->ev_mu);
      while (e->completed < t->u.event.gen && !eng_cut_off(s)) pthread_cond_wait(&s->dev->ev_cv, &s->dev->ev_mu);
      pthread_mutex_unlock(&s->dev->ev_mu);
      eng_event_unref(e);
      return RDEV_OK;
    }
    case RT_TASK_VALUE_WAIT: { /* polls, backing off to 1 ms, as a device's wait would */
      uint64_t end = t->u.value.timeout_ms ? rdev_clock_now_ns() + (uint64_t)t->u.value.timeout_ms * 1000000u : 0;
      for (uint64_t ns = 2000;; ns = ns < 1000000 ? ns * 2 : ns) {
        uint64_t v = 0;
        int rc = be->load_value(&s->base, t->u.value.addr, &v);
        if (rc != RDEV_OK) return rc;
        if (value_met(t, v) || rt_engine_sleep(&s->base, ns)) return RDEV_OK;
        if (end && rdev_clock_now_ns() >= end)
          return rt_fail(RDEV_RT_WAIT_TIMEOUT, "value wait: not met within %u ms", t->u.value.timeout_ms);
      }
    }
    default: return be->exec(&s->base, t);
  }
}

/* Skips device work of a stream stopped by a failure: a copy to host
 * memory leaves zeros there, never bytes that were there before (a reused
 * staging buffer may hold another session's). */
static void skip_task(rt_task_t *t) {
  if (t->op == RT_TASK_COPY &&
      (t->u.mem.kind == RDEV_MEMCPY_DEVICE_TO_HOST || t->u.mem.kind == RDEV_MEMCPY_HOST_TO_HOST))
    memset(t->u.mem.dst, 0, t->u.mem.n);
  if (t->op == RT_TASK_KERNEL && t->u.kernel.print_fn) t->u.kernel.print_fn(t->u.kernel.print_user, "", 0);
}

/* Discards a task of a force-destroyed stream, releasing what it holds.
 * A discarded record completes its event so no waiter is left hanging. */
static void discard_task(rt_task_t *t) {
  switch (t->op) {
    case RT_TASK_CALLBACK: t->u.cb.fn(t->u.cb.user, RDEV_CANCELLED); break;
    case RT_TASK_KERNEL:
      if (t->u.kernel.print_fn) t->u.kernel.print_fn(t->u.kernel.print_user, "", 0);
      break;
    case RT_TASK_EVENT_RECORD:
      eng_event_complete((eng_event_t *)t->u.event.ev, t->u.event.gen);
      eng_event_unref((eng_event_t *)t->u.event.ev);
      break;
    case RT_TASK_EVENT_WAIT: eng_event_unref((eng_event_t *)t->u.event.ev); break;
    default: break;
  }
}

/* Releases what a task held once it ran, was skipped or was discarded. */
static void task_done(rt_task_t *t) {
  if (t->op == RT_TASK_KERNEL && t->u.kernel.fn) rt_function_release(t->u.kernel.fn);
  if (t->op == RT_TASK_OP) free(t->u.op.call);
}

/* Whether t is device work (it takes an execution slot). */
static int on_device(const rt_task_t *t) {
  return t->op == RT_TASK_COPY || t->op == RT_TASK_GATHER || t->op == RT_TASK_MEMSET || t->op == RT_TASK_KERNEL ||
         t->op == RT_TASK_VALUE_WRITE || t->op == RT_TASK_OP;
}

/* Device tasks a worker runs per taking of its lock: submitters and the
 * worker would otherwise meet on the lock for every small task. */
#define RUN_MAX 64

/* The end of the run of tasks from head the worker runs before it takes
 * the lock again: a task that is not device work runs alone (a callback is
 * seen running by rt_engine_stream_pending; an event wait may block), else
 * the device tasks that follow it, at most RUN_MAX. s->mu held. */
static uint64_t run_end(const eng_stream_t *s, uint64_t head) {
  uint64_t end = head + 1;
  if (!on_device(&s->ring[head % s->cap])) return end;
  while (end < s->tail && end - head < RUN_MAX && on_device(&s->ring[end % s->cap])) end++;
  return end;
}

/* Wakes the submitters and synchronizers head's progress concerns (a
 * wake per task would cost more than a small task itself). s->mu held. */
static void notify_progress(eng_stream_t *s) {
  uint64_t head = atomic_load(&s->head);
  if (atomic_load(&s->space_waiters) && s->tail - head <= s->cap / 2) pthread_cond_signal(&s->cv_space);
  if (head >= atomic_load(&s->wake_at)) {
    atomic_store(&s->wake_at, UINT64_MAX);
    pthread_cond_broadcast(&s->cv_done);
  }
}

/* Runs tasks [head, end) of s, in order, on whichever thread owns the run
 * (the worker, or a thread that claimed the stream: here), each in an
 * execution slot when it is device work, skipped or discarded as the
 * stream's state says. Returns where it stopped: end, or (here) the first
 * task for which the device had no slot free at once. Publishes head past
 * each task run but the last: the caller moves it to the returned index
 * under s->mu. */
static uint64_t run_tasks(eng_stream_t *s, uint64_t head, uint64_t end, int here) {
  for (; head < end; head++) {
    rt_task_t *t = &s->ring[head % s->cap];
    int aborted = eng_cut_off(s);
    /* stopped by an earlier failure (an abort is none: the stream goes on);
     * read for each task, as a failure mode set or an error taken while
     * the run goes on applies to the tasks after it */
    int err = atomic_load_explicit(&s->err, memory_order_relaxed);
    int skip = atomic_load_explicit(&s->stop_on_failure, memory_order_relaxed) && err != RDEV_OK &&
               err != RDEV_RT_STREAM_ABORT && on_device(t);
    int rc = RDEV_OK, device = !aborted && !skip && on_device(t), waited = 0;
    uint64_t t0 = 0, t1 = 0, tw = 0; /* waiting for a slot from tw, running from t0 to t1 */
    void (*observe)(void *, int, uint32_t, int, uint64_t, uint64_t) = s->eng->task_done;
    if (observe && device) tw = rdev_clock_now_ns();
    int held = device ? eng_slot_acquire(s, &waited, here) : 0; /* an execution slot? */
    if (held == ENG_SLOT_BUSY) return head;
    if (skip && !aborted) {
      eng_slot_forget(s); /* it may have queued for this task when it released its last slot */
      skip_task(t);
    } else if (aborted || held < 0) {
      eng_slot_forget(s);
      discard_task(t);
      held = 0;
    } else {
      int kernel = t->op == RT_TASK_KERNEL || t->op == RT_TASK_OP;
      int kept = eng_quick_kept(s, t), timed = held || tw || kept; /* a clock read costs a small memset's time */
      if (timed) t0 = tw && !waited ? tw : rdev_clock_now_ns();
      rc = exec_task(s, t);
      if (timed) t1 = rdev_clock_now_ns();
      /* a run a discard cut short (a delay's sleep ends early) says nothing */
      if (kept && rc == RDEV_OK && !eng_cut_off(s)) eng_quick_note(s, t, t1 - t0);
      if (tw)
        observe(s->eng->task_done_user, s->dev->index, atomic_load_explicit(&s->group_id, memory_order_relaxed), kernel,
                held ? t0 - tw : 0, t1 - t0);
    }
    if (rc != RDEV_OK) { /* kept at once: a synchronize or a vacancy check sees it with the head */
      pthread_mutex_lock(&s->mu);
      if (s->err == RDEV_OK) {
        s->err = rc;
        snprintf(s->err_msg, sizeof s->err_msg, "%s", rdev_rt_last_error()); /* before task_done's calls */
      }
      pthread_mutex_unlock(&s->mu);
    }
    task_done(t);
    /* if the next task needs the device too, stay in line for it */
    if (held) eng_slot_release(s, t1 - t0, head + 1 < end);
    if (head + 1 == end) break; /* the last one is passed under the lock, with in_callback */
    atomic_store_explicit(&s->head, head + 1, memory_order_release);
    if (atomic_load_explicit(&s->space_waiters, memory_order_relaxed)) {
      pthread_mutex_lock(&s->mu); /* a submitter waits for room: tell it now, not at the run's end */
      notify_progress(s);
      pthread_mutex_unlock(&s->mu);
    }
  }
  return end;
}

static void *stream_worker(void *arg) {
  eng_stream_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    uint64_t head; /* its own to move, unless a synchronizer claimed the stream */
    while (s->claimed || ((head = atomic_load_explicit(&s->head, memory_order_relaxed)) == s->tail && !s->stop)) {
      s->worker_idle = 1;
      pthread_cond_wait(&s->cv_work, &s->mu);
      s->worker_idle = 0;
    }
    if (head == s->tail) break;      /* stopped and drained */
    uint64_t end = run_end(s, head); /* tasks [head, end) stay in the ring until head passes them */
    s->in_callback = s->ring[head % s->cap].op == RT_TASK_CALLBACK;
    pthread_mutex_unlock(&s->mu);
    run_tasks(s, head, end, 0);
    pthread_mutex_lock(&s->mu);
    s->in_callback = 0;
    atomic_store_explicit(&s->head, end, memory_order_release);
    notify_progress(s);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int rt_engine_stream_run_here(rdev_rt_stream_t *st, uint64_t budget_ns) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  uint64_t head = atomic_load_explicit(&s->head, memory_order_relaxed), end = s->tail, guess = 0;
  /* only a stream whose worker waits for work (none runs, none is
   * claimed), and only launches it ran lately within the budget in all */
  int ok = s->worker_idle && !s->claimed && !s->stop && !eng_cut_off(s) && head < end && end - head <= RUN_MAX;
  for (uint64_t i = head; ok && i < end; i++) {
    const rt_task_t *t = &s->ring[i % s->cap];
    uint64_t ns = eng_quick_kept(s, t) ? eng_quick_guess(s, t) : UINT64_MAX;
    ok = ns <= budget_ns - guess;
    if (ok) guess += ns;
  }
  if (!ok) {
    pthread_mutex_unlock(&s->mu);
    return 0;
  }
  s->claimed = 1;
  pthread_mutex_unlock(&s->mu);
  uint64_t reached = run_tasks(s, head, end, 1);
  pthread_mutex_lock(&s->mu);
  s->claimed = 0;
  atomic_store_explicit(&s->head, reached, memory_order_release);
  notify_progress(s);
  /* what is left, came meanwhile, or a destroy is the worker's again */
  if (reached != s->tail || s->stop) pthread_cond_signal(&s->cv_work);
  pthread_mutex_unlock(&s->mu);
  return reached == end;
}

/* ---- streams ------------------------------------------------------------- */

/* Reports code, the error asynchronous work raised, with its detail. */
static int fail_async(int code, const char *detail) {
  return rt_fail(code, "asynchronous work on the stream failed: %s", detail[0] ? detail : rdev_strerror(code));
}

int rt_engine_stream_create(rt_engine_t *eng, int dev, rdev_rt_stream_t **out) {
  eng_dev_t *d = &eng->devs[dev];
  const rt_backend_t *be = eng->rt->be;
  if (atomic_fetch_add(&d->nstreams, 1) >= RDEV_RT_MAX_STREAMS_PER_DEVICE) {
    atomic_fetch_sub(&d->nstreams, 1);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "device %d has its maximum of %d streams", dev,
                   RDEV_RT_MAX_STREAMS_PER_DEVICE);
  }
  eng_stream_t *s = calloc(1, sizeof *s);
  rt_task_t *ring = s ? calloc(eng->depth, sizeof *ring) : NULL;
  if (!ring) {
    free(s);
    atomic_fetch_sub(&d->nstreams, 1);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  s->base.rt = eng->rt;
  s->base.dev = dev;
  s->eng = eng;
  s->dev = d;
  s->ring = ring;
  s->cap = eng->depth;
  s->wake_at = UINT64_MAX;
  atomic_init(&s->refs, 1);
  pthread_mutex_init(&s->mu, NULL);
  rdev_clock_cond_init(&s->cv_work);
  rdev_clock_cond_init(&s->cv_space);
  rdev_clock_cond_init(&s->cv_done);
  int rc = be->stream_open ? be->stream_open(&s->base) : RDEV_OK;
  if (rc == RDEV_OK) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int err = pthread_create(&s->thread, &attr, stream_worker, s);
    pthread_attr_destroy(&attr);
    if (err) {
      rc = rt_fail(RDEV_STORAGE_OVER_LIMIT, "cannot start a stream worker (errno %d)", err);
      if (be->stream_close) be->stream_close(&s->base);
    }
  }
  if (rc != RDEV_OK) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_space);
    pthread_cond_destroy(&s->cv_done);
    free(ring);
    free(s);
    atomic_fetch_sub(&d->nstreams, 1);
    return rc;
  }
  pthread_mutex_lock(&eng->mu);
  s->next = eng->streams;
  if (s->next) s->next->prev = s;
  eng->streams = s;
  pthread_mutex_unlock(&eng->mu);
  *out = &s->base;
  return RDEV_OK;
}

/* Wakes whatever the worker may wait in: work, space, an event, a slot,
 * and interrupts the device task it runs where the backend can. */
static void wake_worker(eng_stream_t *s) {
  pthread_cond_broadcast(&s->cv_work);
  pthread_cond_broadcast(&s->cv_space);
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&s->dev->ev_mu);
  pthread_cond_broadcast(&s->dev->ev_cv);
  pthread_mutex_unlock(&s->dev->ev_mu);
  pthread_mutex_lock(&s->dev->sched_mu);
  pthread_cond_broadcast(&s->dev->sched_cv);
  pthread_mutex_unlock(&s->dev->sched_mu);
  if (s->base.rt->be->interrupt) s->base.rt->be->interrupt(&s->base);
}

int rt_engine_stream_discard(rdev_rt_stream_t *st) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->discard_to, s->tail);
  if (s->head < s->tail && s->err == RDEV_OK) {
    s->err = RDEV_RT_STREAM_ABORT;
    snprintf(s->err_msg, sizeof s->err_msg, "the stream was aborted: work queued on it was discarded");
  }
  wake_worker(s); /* unlocks s->mu */
  return RDEV_OK;
}

int rt_engine_stream_abort(rdev_rt_stream_t *st) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->abort, 1);
  wake_worker(s); /* unlocks s->mu */
  return RDEV_OK;
}

/* Frees s once the last reference went (its destroy's, or a batch's). */
static void stream_unref(eng_stream_t *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv_work);
  pthread_cond_destroy(&s->cv_space);
  pthread_cond_destroy(&s->cv_done);
  free(s);
}

int rt_engine_stream_destroy(rdev_rt_stream_t *st, int force) {
  eng_stream_t *s = (eng_stream_t *)st;
  rt_engine_t *eng = s->eng;
  rt_engine_batch_flush(); /* its worker drains what is queued, which may wait for others */
  if (force) rt_engine_stream_abort(st);
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv_work);
  pthread_cond_broadcast(&s->cv_space);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  eng_sched_leave(s);
  int rc = s->err;
  pthread_mutex_lock(&eng->mu);
  if (s->prev)
    s->prev->next = s->next;
  else
    eng->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&eng->mu);
  if (eng->rt->be->stream_close) eng->rt->be->stream_close(&s->base);
  atomic_fetch_sub(&s->dev->nstreams, 1);
  if (rc != RDEV_OK) fail_async(rc, s->err_msg);
  free(s->ring);
  s->ring = NULL;
  stream_unref(s); /* a batch of another thread may still hold it: it finds it drained */
  return rc;
}

int rt_engine_stream_sync(rdev_rt_stream_t *st, int32_t timeout_ms) {
  eng_stream_t *s = (eng_stream_t *)st;
  rt_engine_batch_flush();
  struct timespec dl;
  if (timeout_ms >= 0) dl = rdev_clock_deadline_ns((uint64_t)timeout_ms * 1000000u);
  pthread_mutex_lock(&s->mu);
  uint64_t target = s->tail;
  int timed_out = 0;
  while (s->head < target && !timed_out) {
    if (target < s->wake_at) atomic_store(&s->wake_at, target);
    timed_out = eng_cond_wait_until(&s->cv_done, &s->mu, timeout_ms >= 0 ? &dl : NULL) == ETIMEDOUT && s->head < target;
  }
  int rc = RDEV_OK;
  if (timed_out) {
    rc = rt_fail(RDEV_RT_STREAM_SYNC_TIMEOUT, "stream still busy after %d ms", (int)timeout_ms);
  } else if (s->err != RDEV_OK) {
    rc = fail_async(s->err, s->err_msg);
    s->err = RDEV_OK;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int rt_engine_stream_pending(rdev_rt_stream_t *st, size_t *tasks, int *in_callback, int *err) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  *tasks = (size_t)(s->tail - s->head);
  *in_callback = s->in_callback;
  *err = s->err;
  pthread_mutex_unlock(&s->mu);
  return RDEV_OK;
}

int rt_engine_stream_set_failure_mode(rdev_rt_stream_t *st, int stop) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  s->stop_on_failure = stop != 0;
  pthread_mutex_unlock(&s->mu);
  return RDEV_OK;
}

int rt_engine_stream_take_error(rdev_rt_stream_t *st) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  int rc = s->err;
  if (rc != RDEV_OK) fail_async(rc, s->err_msg);
  s->err = RDEV_OK;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* ---- batched wakes ------------------------------------------------------- */

/* A wake per small task costs more than the task (futex calls, a context
 * switch each: profiled, a third of rdevd's time under pipelined memsets).
 * A thread that queues a batch of tasks (rdevd, a message's requests)
 * holds back the wakes of idle workers and gives each one wake at the
 * end. At most BATCH_MAX streams per thread; more wake at once. */
#define BATCH_MAX 8
static _Thread_local struct {
  int depth, n;
  eng_stream_t *held[BATCH_MAX]; /* each with a reference */
} batch;

void rt_engine_batch_flush(void) {
  for (int i = 0; i < batch.n; i++) {
    eng_stream_t *s = batch.held[i];
    pthread_mutex_lock(&s->mu);
    int wake = s->worker_idle && s->head != s->tail; /* destroyed meanwhile: drained, no wake */
    pthread_mutex_unlock(&s->mu);
    if (wake) pthread_cond_signal(&s->cv_work);
    stream_unref(s);
  }
  batch.n = 0;
}

void rt_engine_batch(int on) {
  if (on)
    batch.depth++;
  else if (batch.depth && --batch.depth == 0)
    rt_engine_batch_flush();
}

/* s->mu held: whether this thread's batch holds s's wake back. */
static int batch_hold(eng_stream_t *s) {
  if (!batch.depth) return 0;
  for (int i = 0; i < batch.n; i++)
    if (batch.held[i] == s) return 1;
  if (batch.n == BATCH_MAX) return 0;
  atomic_fetch_add(&s->refs, 1);
  batch.held[batch.n++] = s;
  return 1;
}

int rt_engine_submit(rdev_rt_stream_t *st, const rt_task_t *t) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  /* room is checked against the head last loaded: loading it for every
   * task would pull its cache line from the worker each time */
  if (s->tail - s->seen_head == s->cap && s->tail - (s->seen_head = atomic_load(&s->head)) == s->cap) {
    if (batch.n) { /* about to wait for the workers: wake them first */
      pthread_mutex_unlock(&s->mu);
      rt_engine_batch_flush();
      pthread_mutex_lock(&s->mu);
    }
    while (s->tail - (s->seen_head = atomic_load(&s->head)) == s->cap && !s->stop) {
      atomic_fetch_add(&s->space_waiters, 1);
      pthread_cond_wait(&s->cv_space, &s->mu);
      atomic_fetch_sub(&s->space_waiters, 1);
    }
  }
  if (s->stop) {
    pthread_mutex_unlock(&s->mu);
    return rt_fail(RDEV_INVALID_RESOURCE_HANDLE, "stream is being destroyed");
  }
  rt_task_t *slot = &s->ring[s->tail % s->cap];
  *slot = *t;
  if (s->base.rt->be->prepare) s->base.rt->be->prepare(s->base.rt->impl, slot);
  if (t->op == RT_TASK_EVENT_RECORD || t->op == RT_TASK_EVENT_WAIT) {
    eng_event_t *e = (eng_event_t *)t->u.event.ev;
    atomic_fetch_add(&e->refs, 1);
    pthread_mutex_lock(&s->dev->ev_mu);
    slot->u.event.gen = t->op == RT_TASK_EVENT_RECORD ? ++e->recorded : e->recorded;
    pthread_mutex_unlock(&s->dev->ev_mu);
  }
  s->tail++;
  int wake = s->worker_idle && !batch_hold(s);
  pthread_mutex_unlock(&s->mu);
  /* signalled after unlocking: woken inside the lock, the worker would
   * only block on it again (a second futex round trip, seen in strace) */
  if (wake) pthread_cond_signal(&s->cv_work);
  return RDEV_OK;
}

/* ---- the engine ---------------------------------------------------------- */

int rt_engine_open(rdev_rt_t *rt, int ndev, unsigned depth, unsigned slots, rt_engine_t **out) {
  rt_engine_t *e = calloc(1, sizeof *e);
  eng_dev_t *devs = e ? calloc((size_t)ndev, sizeof *devs) : NULL;
  if (!devs) {
    free(e);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  e->rt = rt;
  e->ndev = ndev;
  e->devs = devs;
  e->depth = depth ? depth : 1024;
  pthread_mutex_init(&e->mu, NULL);
  for (int i = 0; i < ndev; i++) {
    eng_dev_t *d = &devs[i];
    d->index = i;
    d->slots = slots;
    pthread_mutex_init(&d->ev_mu, NULL);
    rdev_clock_cond_init(&d->ev_cv);
    pthread_mutex_init(&d->sched_mu, NULL);
    pthread_cond_init(&d->sched_cv, NULL);
  }
  *out = e;
  return RDEV_OK;
}

void rt_engine_stop(rt_engine_t *e) {
  for (;;) { /* each destroy unlinks its stream */
    pthread_mutex_lock(&e->mu);
    eng_stream_t *s = e->streams;
    pthread_mutex_unlock(&e->mu);
    if (!s) break;
    rt_engine_stream_destroy(&s->base, 1);
  }
}

void rt_engine_close(rt_engine_t *e) {
  rt_engine_stop(e);
  for (eng_event_t *ev = e->events, *n; ev; ev = n) { /* no stream holds refs any more */
    n = ev->next;
    free(ev);
  }
  for (int i = 0; i < e->ndev; i++) {
    eng_dev_t *d = &e->devs[i];
    pthread_mutex_destroy(&d->ev_mu);
    pthread_cond_destroy(&d->ev_cv);
    pthread_mutex_destroy(&d->sched_mu);
    pthread_cond_destroy(&d->sched_cv);
    while (d->groups) {
      eng_group_t *n = d->groups->next;
      free(d->groups);
      d->groups = n;
    }
  }
  free(e->devs);
  pthread_mutex_destroy(&e->mu);
  free(e);
}
