/*
 * runtime/sim/sim.c — the sim backend: a CPU device that behaves like an
 * Ascend NPU seen through the CANN runtime. Each device has its own arena
 * (sim_arena.c); each stream has its own worker thread draining a bounded
 * ring of validated tasks in order, so async calls really return before
 * their work runs and separate streams really run concurrently. Events are
 * generation counters guarded by one mutex and condition variable per
 * device; stream waits, event synchronize and abort wake-ups all use it.
 *
 * Errors of async work are kept on the stream (first one wins) and handed to
 * the next synchronize, which clears them.
 *
 * Execution slots (config sim_slots > 0): a device then runs at most that
 * many copies, memsets and kernels at once, and when streams wait for a slot
 * it goes to the scheduling group (tenant) with the least weighted device
 * time used: start-time fair queuing, where a group's virtual time advances
 * by task time / weight, and a group that was idle rejoins at the device's
 * current virtual time instead of cashing in its idle time. A group may
 * have a cap on the slots it holds at once: at its cap, its streams wait
 * for its own slots and are passed over in the choice, so that one tenant
 * cannot take a device's every slot with long kernels. Host callbacks and
 * event waits never take a slot. With sim_slots 0 every stream runs
 * whenever its worker thread does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdev/clock.h"
#include "sim.h"

typedef struct sim sim_t;

typedef struct sim_group { /* a scheduling group on one device */
  uint32_t id, weight;
  uint32_t cap, busy; /* slots it may hold at once (0 = no cap), and holds */
  int streams;        /* streams in it: the group goes with its last one */
  uint64_t vtime; /* ns of device time used / weight */
  struct sim_group *next;
} sim_group_t;

typedef struct {
  int index;
  sim_arena_t arena;
  unsigned slots, busy;    /* execution slots (0 = unscheduled) and those in use */
  struct sim_stream *waitq;/* streams waiting for a slot */
  uint64_t vclock;         /* virtual time of the latest grant */
  sim_group_t *groups;
  pthread_mutex_t sched_mu;
  pthread_cond_t sched_cv;
  atomic_int nstreams, nevents;
  atomic_uint fault_alloc, fault_kernel, fault_hang; /* countdowns; 0 = unarmed */
  atomic_uint hang_ms;
  pthread_mutex_t ev_mu; /* guards every event of this device */
  pthread_cond_t ev_cv;  /* an event completed, or a stream is aborting */
} sim_dev_t;

typedef struct sim_stream {
  rdev_rt_stream_t base;
  sim_t *sim;
  sim_dev_t *dev;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv_work;  /* worker: tasks arrived, or stop/abort */
  pthread_cond_t cv_space; /* submitters: a slot freed */
  pthread_cond_t cv_done;  /* synchronizers: a task finished */
  rt_task_t *ring;
  unsigned cap;
  uint64_t head, tail; /* tasks [head, tail) are queued; ring[head % cap] runs */
  int worker_idle, space_waiters;
  int in_callback;     /* the task running is a host callback */
  uint64_t wake_at;    /* lowest head a synchronizer waits for; UINT64_MAX = none */
  int err;             /* first error since the last synchronize */
  int stop;            /* destroy: run what is queued, then exit */
  atomic_int abort;    /* force destroy: discard what is queued */
  sim_group_t *group;  /* scheduling group (under dev->sched_mu) */
  sim_group_t *held;   /* the group charged for the slot it holds, or NULL */
  struct sim_stream *wnext; /* dev->waitq link (under dev->sched_mu) */
  struct sim_stream *prev, *next;
} sim_stream_t;

typedef struct sim_event {
  rdev_rt_event_t base;
  sim_dev_t *dev;
  atomic_int refs;     /* the creator's, plus one per queued task naming it */
  uint64_t recorded;   /* generation of the latest record call */
  uint64_t completed;  /* highest generation that has run */
  struct timespec when;/* when `completed` ran */
  struct sim_event *prev, *next;
} sim_event_t;

struct sim {
  rdev_rt_t *rt;
  int ndev;
  sim_dev_t *devs;
  unsigned depth;
  pthread_mutex_t mu; /* streams and events lists, host allocations */
  sim_stream_t *streams;
  sim_event_t *events;
  void *host; /* tsearch set of malloc_host pointers */
};

/* ---- time ---------------------------------------------------------------- */

/* Waits on cv until woken or the deadline (NULL = none); ETIMEDOUT at the deadline. */
static int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *dl) {
  return dl ? pthread_cond_timedwait(cv, mu, dl) : pthread_cond_wait(cv, mu);
}

/* ---- faults -------------------------------------------------------------- */

/* Counts one matching occurrence down; true on the one the fault was armed for. */
static int fault_fires(atomic_uint *c) {
  unsigned v = atomic_load(c);
  while (v) {
    if (atomic_compare_exchange_weak(c, &v, v - 1)) return v == 1;
  }
  return 0;
}

static int sim_fault_inject(void *impl, int dev, rdev_fault_kind_t kind, uint32_t nth,
                            uint32_t hang_ms) {
  sim_dev_t *d = &((sim_t *)impl)->devs[dev];
  switch (kind) {
    case RDEV_FAULT_ALLOC: atomic_store(&d->fault_alloc, nth); break;
    case RDEV_FAULT_KERNEL: atomic_store(&d->fault_kernel, nth); break;
    case RDEV_FAULT_HANG:
      atomic_store(&d->hang_ms, hang_ms);
      atomic_store(&d->fault_hang, nth);
      break;
  }
  return RDEV_OK;
}

/* ---- devices and memory -------------------------------------------------- */

static int sim_device_count(void *impl) { return ((sim_t *)impl)->ndev; }

static int sim_device_info(void *impl, int dev, rdev_rt_device_info_t *info) {
  sim_dev_t *d = &((sim_t *)impl)->devs[dev];
  memset(info, 0, sizeof *info);
  strcpy(info->name, "sim");
  info->total_bytes = d->arena.size;
  info->free_bytes = sim_arena_free_bytes(&d->arena);
  return RDEV_OK;
}

static int sim_malloc(void *impl, int dev, void **dptr, size_t size, size_t reserved) {
  sim_dev_t *d = &((sim_t *)impl)->devs[dev];
  if (fault_fires(&d->fault_alloc))
    return rt_fail(RDEV_RT_DEVICE_OOM, "injected allocation fault on device %d", dev);
  void *p = sim_arena_alloc(&d->arena, size, reserved);
  if (!p)
    return rt_fail(RDEV_RT_DEVICE_OOM, "device %d has no free block of %zu bytes (%zu free in all)",
                   dev, reserved, sim_arena_free_bytes(&d->arena));
  *dptr = p;
  return RDEV_OK;
}

static sim_dev_t *dev_of(sim_t *sim, const void *p) {
  for (int i = 0; i < sim->ndev; i++) {
    sim_arena_t *a = &sim->devs[i].arena;
    if ((const char *)p >= a->base && (const char *)p < a->base + a->size) return &sim->devs[i];
  }
  return NULL;
}

static int sim_free(void *impl, void *dptr) {
  sim_dev_t *d = dev_of(impl, dptr);
  if (!d) return rt_fail(RDEV_INVALID_PARAM, "%p is not device memory", dptr);
  return sim_arena_free(&d->arena, dptr);
}

static int sim_lookup(void *impl, const void *p, void **base, size_t *size, int *dev) {
  sim_dev_t *d = dev_of(impl, p);
  if (!d || sim_arena_lookup(&d->arena, p, base, size) != RDEV_OK) return RDEV_INVALID_PARAM;
  *dev = d->index;
  return RDEV_OK;
}

static int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y ? -1 : x > y;
}

static int sim_malloc_host(void *impl, void **p, size_t size) {
  sim_t *sim = impl;
  void *m = NULL;
  if (posix_memalign(&m, 4096, size) != 0)
    return rt_fail(RDEV_BAD_ALLOC, "no host memory for %zu bytes", size);
  pthread_mutex_lock(&sim->mu);
  void *node = tsearch(m, &sim->host, ptr_cmp);
  pthread_mutex_unlock(&sim->mu);
  if (!node) {
    free(m);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  *p = m;
  return RDEV_OK;
}

static int sim_free_host(void *impl, void *p) {
  sim_t *sim = impl;
  pthread_mutex_lock(&sim->mu);
  void *node = tfind(p, &sim->host, ptr_cmp);
  if (node) tdelete(p, &sim->host, ptr_cmp);
  pthread_mutex_unlock(&sim->mu);
  if (!node) return rt_fail(RDEV_INVALID_PARAM, "%p was not allocated by malloc_host", p);
  free(p);
  return RDEV_OK;
}

/* Device and host memory are both host-addressable in the sim; memmove keeps
 * overlapping D2D copies within one buffer well defined. */
static int sim_copy(void *impl, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind) {
  (void)impl;
  if (kind == RDEV_MEMCPY_DEVICE_TO_DEVICE)
    memmove(dst, src, n);
  else
    memcpy(dst, src, n);
  return RDEV_OK;
}

/* Sim device memory is host memory. */
static const void *sim_host_view(void *impl, const void *dptr, size_t n) {
  (void)impl, (void)n;
  return dptr;
}

static int sim_memset(void *impl, void *dst, int value, size_t n) {
  (void)impl;
  memset(dst, value, n);
  return RDEV_OK;
}

/* ---- events -------------------------------------------------------------- */

static void event_unref(sim_event_t *e) {
  if (atomic_fetch_sub(&e->refs, 1) != 1) return;
  sim_t *sim = (sim_t *)e->base.rt->impl;
  pthread_mutex_lock(&sim->mu);
  if (e->prev) e->prev->next = e->next;
  else sim->events = e->next;
  if (e->next) e->next->prev = e->prev;
  pthread_mutex_unlock(&sim->mu);
  free(e);
}

static int sim_event_create(void *impl, int dev, rdev_rt_event_t **out) {
  sim_t *sim = impl;
  sim_dev_t *d = &sim->devs[dev];
  if (atomic_fetch_add(&d->nevents, 1) >= RDEV_RT_MAX_EVENTS_PER_DEVICE) {
    atomic_fetch_sub(&d->nevents, 1);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "device %d has its maximum of %d events", dev,
                   RDEV_RT_MAX_EVENTS_PER_DEVICE);
  }
  sim_event_t *e = calloc(1, sizeof *e);
  if (!e) {
    atomic_fetch_sub(&d->nevents, 1);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  e->base.rt = sim->rt;
  e->base.dev = dev;
  e->dev = d;
  atomic_init(&e->refs, 1);
  pthread_mutex_lock(&sim->mu);
  e->next = sim->events;
  if (e->next) e->next->prev = e;
  sim->events = e;
  pthread_mutex_unlock(&sim->mu);
  *out = &e->base;
  return RDEV_OK;
}

static int sim_event_destroy(rdev_rt_event_t *ev) {
  sim_event_t *e = (sim_event_t *)ev;
  atomic_fetch_sub(&e->dev->nevents, 1);
  event_unref(e);
  return RDEV_OK;
}

/* Marks record `gen` of e complete (never moves backwards). */
static void event_complete(sim_event_t *e, uint64_t gen) {
  pthread_mutex_lock(&e->dev->ev_mu);
  if (gen > e->completed) {
    e->completed = gen;
    clock_gettime(CLOCK_MONOTONIC, &e->when);
  }
  pthread_cond_broadcast(&e->dev->ev_cv);
  pthread_mutex_unlock(&e->dev->ev_mu);
}

static int sim_event_sync(rdev_rt_event_t *ev, int32_t timeout_ms) {
  sim_event_t *e = (sim_event_t *)ev;
  struct timespec dl;
  if (timeout_ms >= 0) dl = rdev_clock_deadline_ns((uint64_t)timeout_ms * 1000000u);
  int rc = RDEV_OK;
  pthread_mutex_lock(&e->dev->ev_mu);
  uint64_t target = e->recorded;
  while (e->completed < target) {
    if (cond_wait_until(&e->dev->ev_cv, &e->dev->ev_mu, timeout_ms >= 0 ? &dl : NULL) ==
        ETIMEDOUT) {
      if (e->completed < target)
        rc = rt_fail(RDEV_RT_WAIT_TIMEOUT, "event not complete after %d ms", (int)timeout_ms);
      break;
    }
  }
  pthread_mutex_unlock(&e->dev->ev_mu);
  return rc;
}

static int sim_event_query(rdev_rt_event_t *ev, int *done) {
  sim_event_t *e = (sim_event_t *)ev;
  pthread_mutex_lock(&e->dev->ev_mu);
  *done = e->completed >= e->recorded;
  pthread_mutex_unlock(&e->dev->ev_mu);
  return RDEV_OK;
}

static int sim_event_elapsed(float *ms, rdev_rt_event_t *a, rdev_rt_event_t *b) {
  sim_event_t *x = (sim_event_t *)a, *y = (sim_event_t *)b;
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

/* ---- execution slots -------------------------------------------------------- */

/* The group `id` of device d, made on first use. sched_mu held. */
static sim_group_t *group_get(sim_dev_t *d, uint32_t id) {
  sim_group_t *g;
  for (g = d->groups; g && g->id != id; g = g->next) {
  }
  if (!g && (g = calloc(1, sizeof *g))) {
    g->id = id;
    g->weight = 1;
    g->vtime = d->vclock;
    g->next = d->groups;
    d->groups = g;
  }
  return g;
}

/* Frees g once no stream is in it and it holds no slot (a group that
 * comes back rejoins at the device's virtual time, as an idle one does),
 * so that groups made per session do not pile up. sched_mu held. */
static void group_drop_if_unused(sim_dev_t *d, sim_group_t *g) {
  if (g->streams > 0 || g->busy > 0) return;
  for (sim_group_t **pp = &d->groups; *pp; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      free(g);
      return;
    }
}

/* s leaves its group. sched_mu held. */
static void group_leave(sim_stream_t *s) {
  sim_group_t *g = s->group;
  s->group = NULL;
  if (g) {
    g->streams--;
    group_drop_if_unused(s->dev, g);
  }
}

static int sim_stream_set_group(rdev_rt_stream_t *st, uint32_t group, uint32_t weight, uint32_t max_slots) {
  sim_stream_t *s = (sim_stream_t *)st;
  pthread_mutex_lock(&s->dev->sched_mu);
  sim_group_t *g = group_get(s->dev, group);
  if (g && g != s->group) {
    g->streams++;
    group_leave(s);
  }
  if (g) {
    g->weight = weight;
    g->cap = max_slots;
    s->group = g;
    pthread_cond_broadcast(&s->dev->sched_cv); /* a cap may have changed */
  }
  pthread_mutex_unlock(&s->dev->sched_mu);
  return g ? RDEV_OK : rt_fail(RDEV_BAD_ALLOC, "out of host memory");
}

/* Whether g may take one more slot. sched_mu held. */
static int under_cap(const sim_group_t *g) { return !g->cap || g->busy < g->cap; }

/* Whether waiting stream s is next: its group is under its cap and no
 * other waiter's group that is has used less weighted time (ties go to the
 * earlier waiter). sched_mu held. */
static int is_next(sim_stream_t *s) {
  if (!under_cap(s->group)) return 0;
  for (sim_stream_t *o = s->dev->waitq; o; o = o->wnext)
    if (o != s && under_cap(o->group) && o->group->vtime < s->group->vtime) return 0;
  return 1;
}

/* Appends s to the device's wait queue unless it is in it. sched_mu held. */
static void wait_enqueue(sim_dev_t *d, sim_stream_t *s) {
  sim_stream_t **tail = &d->waitq;
  while (*tail && *tail != s) tail = &(*tail)->wnext;
  if (*tail) return;
  if (s->group->vtime < d->vclock) s->group->vtime = d->vclock; /* no credit for idle time */
  *tail = s;
  s->wnext = NULL;
}

static int on_device(const rt_task_t *t) {
  return t->op == RT_TASK_COPY || t->op == RT_TASK_GATHER || t->op == RT_TASK_MEMSET || t->op == RT_TASK_KERNEL;
}

static void wait_remove(sim_dev_t *d, sim_stream_t *s) {
  for (sim_stream_t **pp = &d->waitq; *pp; pp = &(*pp)->wnext)
    if (*pp == s) {
      *pp = s->wnext;
      return;
    }
}

/* Takes an execution slot for s's next task: 1 when held (give it back with
 * slot_release), 0 when the device is unscheduled, -1 when s was aborted. */
static int slot_acquire(sim_stream_t *s) {
  sim_dev_t *d = s->dev;
  if (!d->slots) return 0;
  pthread_mutex_lock(&d->sched_mu);
  if (!s->group && (s->group = group_get(d, 0))) s->group->streams++;
  if (!s->group) { /* out of memory: run unscheduled */
    pthread_mutex_unlock(&d->sched_mu);
    return 0;
  }
  wait_enqueue(d, s);
  while (!atomic_load(&s->abort) && !(d->busy < d->slots && is_next(s)))
    pthread_cond_wait(&d->sched_cv, &d->sched_mu);
  wait_remove(d, s);
  int got = atomic_load(&s->abort) ? -1 : 1;
  if (got > 0) {
    d->busy++;
    s->held = s->group;
    s->held->busy++;
    d->vclock = s->group->vtime;
  }
  if (d->waitq) pthread_cond_broadcast(&d->sched_cv); /* the next may go, or be next */
  pthread_mutex_unlock(&d->sched_mu);
  return got;
}

/* s will not ask for a slot after all (its work was discarded). */
static void slot_forget(sim_stream_t *s) {
  sim_dev_t *d = s->dev;
  if (!d->slots) return;
  pthread_mutex_lock(&d->sched_mu);
  wait_remove(d, s);
  if (d->waitq) pthread_cond_broadcast(&d->sched_cv);
  pthread_mutex_unlock(&d->sched_mu);
}

/* Gives the slot back, charging ns of device time to s's group. With more,
 * s queues for its next task at once, so that a backlogged stream competes
 * by its group's time instead of losing the slot to whoever woke first. */
static void slot_release(sim_stream_t *s, uint64_t ns, int more) {
  sim_dev_t *d = s->dev;
  pthread_mutex_lock(&d->sched_mu);
  d->busy--;
  s->held->busy--;
  if (s->held != s->group) group_drop_if_unused(d, s->held); /* it moved meanwhile */
  s->held = NULL;
  s->group->vtime += ns / (s->group->weight ? s->group->weight : 1);
  if (more) wait_enqueue(d, s);
  if (d->waitq) pthread_cond_broadcast(&d->sched_cv);
  pthread_mutex_unlock(&d->sched_mu);
}

/* ---- stream worker ------------------------------------------------------- */

int sim_stream_sleep(void *stream, uint64_t ns) {
  sim_stream_t *s = stream;
  struct timespec dl = rdev_clock_deadline_ns(ns);
  pthread_mutex_lock(&s->mu);
  while (!atomic_load(&s->abort) && pthread_cond_timedwait(&s->cv_work, &s->mu, &dl) != ETIMEDOUT) {
  }
  int aborted = atomic_load(&s->abort);
  pthread_mutex_unlock(&s->mu);
  return aborted;
}

static void run_print(const rt_task_t *t, rt_print_buf_t *pb) {
  if (t->u.kernel.print_fn)
    t->u.kernel.print_fn(t->u.kernel.print_user, pb->data ? pb->data : "", pb->len);
  rt_print_release(pb);
}

/* Runs one task on the worker; returns its error (RDEV_OK normally). */
static int exec_task(sim_stream_t *s, rt_task_t *t) {
  sim_dev_t *d = s->dev;
  if (fault_fires(&d->fault_hang)) sim_stream_sleep(s, (uint64_t)atomic_load(&d->hang_ms) * 1000000u);
  switch (t->op) {
    case RT_TASK_COPY:
      memmove(t->u.mem.dst, t->u.mem.src, t->u.mem.n);
      return RDEV_OK;
    case RT_TASK_GATHER: {
      char *dst = t->u.gather.dst;
      for (int i = 0; i < t->u.gather.n; dst += t->u.gather.iov[i].len, i++)
        memcpy(dst, t->u.gather.iov[i].base, t->u.gather.iov[i].len);
      return RDEV_OK;
    }
    case RT_TASK_MEMSET:
      memset(t->u.mem.dst, t->u.mem.value, t->u.mem.n);
      return RDEV_OK;
    case RT_TASK_KERNEL: {
      sim_kctx_t ctx = {.blocks = t->u.kernel.blocks, .stream = s};
      int rc = fault_fires(&d->fault_kernel)
                   ? rt_fail(RDEV_RT_AICORE_EXCEPTION, "injected kernel fault on device %d", d->index)
                   : sim_kernel_fns[t->u.kernel.index](&ctx, t->u.kernel.args);
      run_print(t, &ctx.print);
      return rc;
    }
    case RT_TASK_CALLBACK:
      t->u.cb.fn(t->u.cb.user, RDEV_OK);
      return RDEV_OK;
    case RT_TASK_EVENT_RECORD:
      event_complete((sim_event_t *)t->u.event.ev, t->u.event.gen);
      event_unref((sim_event_t *)t->u.event.ev);
      return RDEV_OK;
    case RT_TASK_EVENT_WAIT: {
      sim_event_t *e = (sim_event_t *)t->u.event.ev;
      pthread_mutex_lock(&d->ev_mu);
      while (e->completed < t->u.event.gen && !atomic_load(&s->abort))
        pthread_cond_wait(&d->ev_cv, &d->ev_mu);
      pthread_mutex_unlock(&d->ev_mu);
      event_unref(e);
      return RDEV_OK;
    }
  }
  return rt_fail(RDEV_INTERNAL_ERROR, "unknown task op %d", t->op);
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
      event_complete((sim_event_t *)t->u.event.ev, t->u.event.gen);
      event_unref((sim_event_t *)t->u.event.ev);
      break;
    case RT_TASK_EVENT_WAIT: event_unref((sim_event_t *)t->u.event.ev); break;
    default: break;
  }
}

static void *stream_worker(void *arg) {
  sim_stream_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (s->head == s->tail && !s->stop) {
      s->worker_idle = 1;
      pthread_cond_wait(&s->cv_work, &s->mu);
      s->worker_idle = 0;
    }
    if (s->head == s->tail) break; /* stopped and drained */
    rt_task_t *t = &s->ring[s->head % s->cap];
    int aborted = atomic_load(&s->abort);
    s->in_callback = t->op == RT_TASK_CALLBACK;
    pthread_mutex_unlock(&s->mu);
    int rc = RDEV_OK;
    uint64_t t0 = 0;
    int held = aborted || !on_device(t) ? 0 : slot_acquire(s); /* an execution slot? */
    if (aborted || held < 0) {
      slot_forget(s);
      discard_task(t);
      held = 0;
    } else {
      if (held) t0 = rdev_clock_now_ns();
      rc = exec_task(s, t);
    }
    pthread_mutex_lock(&s->mu);
    if (held) /* if the next task needs the device too, stay in line for it */
      slot_release(s, rdev_clock_now_ns() - t0, s->tail - s->head > 1 && on_device(&s->ring[(s->head + 1) % s->cap]));
    if (rc != RDEV_OK && s->err == RDEV_OK) s->err = rc;
    s->head++;
    s->in_callback = 0;
    /* wake only whom this completion concerns: a futex wake per task would
     * cost more than a small task itself */
    if (s->space_waiters && s->tail - s->head <= s->cap / 2) pthread_cond_signal(&s->cv_space);
    if (s->head >= s->wake_at) {
      s->wake_at = UINT64_MAX;
      pthread_cond_broadcast(&s->cv_done);
    }
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- streams ------------------------------------------------------------- */

static int sim_stream_create(void *impl, int dev, rdev_rt_stream_t **out) {
  sim_t *sim = impl;
  sim_dev_t *d = &sim->devs[dev];
  if (atomic_fetch_add(&d->nstreams, 1) >= RDEV_RT_MAX_STREAMS_PER_DEVICE) {
    atomic_fetch_sub(&d->nstreams, 1);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "device %d has its maximum of %d streams", dev,
                   RDEV_RT_MAX_STREAMS_PER_DEVICE);
  }
  sim_stream_t *s = calloc(1, sizeof *s);
  rt_task_t *ring = s ? calloc(sim->depth, sizeof *ring) : NULL;
  if (!ring) {
    free(s);
    atomic_fetch_sub(&d->nstreams, 1);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  s->base.rt = sim->rt;
  s->base.dev = dev;
  s->sim = sim;
  s->dev = d;
  s->ring = ring;
  s->cap = sim->depth;
  s->wake_at = UINT64_MAX;
  pthread_mutex_init(&s->mu, NULL);
  rdev_clock_cond_init(&s->cv_work);
  rdev_clock_cond_init(&s->cv_space);
  rdev_clock_cond_init(&s->cv_done);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  int err = pthread_create(&s->thread, &attr, stream_worker, s);
  pthread_attr_destroy(&attr);
  if (err) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_space);
    pthread_cond_destroy(&s->cv_done);
    free(ring);
    free(s);
    atomic_fetch_sub(&d->nstreams, 1);
    return rt_fail(RDEV_STORAGE_OVER_LIMIT, "cannot start a stream worker (errno %d)", err);
  }
  pthread_mutex_lock(&sim->mu);
  s->next = sim->streams;
  if (s->next) s->next->prev = s;
  sim->streams = s;
  pthread_mutex_unlock(&sim->mu);
  *out = &s->base;
  return RDEV_OK;
}

static int sim_stream_abort(rdev_rt_stream_t *st) {
  sim_stream_t *s = (sim_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->abort, 1);
  pthread_cond_broadcast(&s->cv_work);
  pthread_cond_broadcast(&s->cv_space);
  pthread_mutex_unlock(&s->mu);
  /* wake a worker blocked in an event wait or waiting for a slot */
  pthread_mutex_lock(&s->dev->ev_mu);
  pthread_cond_broadcast(&s->dev->ev_cv);
  pthread_mutex_unlock(&s->dev->ev_mu);
  pthread_mutex_lock(&s->dev->sched_mu);
  pthread_cond_broadcast(&s->dev->sched_cv);
  pthread_mutex_unlock(&s->dev->sched_mu);
  return RDEV_OK;
}

static int sim_stream_destroy(rdev_rt_stream_t *st, int force) {
  sim_stream_t *s = (sim_stream_t *)st;
  sim_t *sim = s->sim;
  if (force) sim_stream_abort(st);
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv_work);
  pthread_cond_broadcast(&s->cv_space);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_mutex_lock(&s->dev->sched_mu);
  group_leave(s);
  pthread_mutex_unlock(&s->dev->sched_mu);
  int rc = s->err;
  pthread_mutex_lock(&sim->mu);
  if (s->prev) s->prev->next = s->next;
  else sim->streams = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&sim->mu);
  atomic_fetch_sub(&s->dev->nstreams, 1);
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv_work);
  pthread_cond_destroy(&s->cv_space);
  pthread_cond_destroy(&s->cv_done);
  free(s->ring);
  free(s);
  return rc == RDEV_OK ? RDEV_OK : rt_fail(rc, "asynchronous work on the stream failed: %s", rdev_strerror(rc));
}

static int sim_stream_sync(rdev_rt_stream_t *st, int32_t timeout_ms) {
  sim_stream_t *s = (sim_stream_t *)st;
  struct timespec dl;
  if (timeout_ms >= 0) dl = rdev_clock_deadline_ns((uint64_t)timeout_ms * 1000000u);
  pthread_mutex_lock(&s->mu);
  uint64_t target = s->tail;
  int timed_out = 0;
  while (s->head < target && !timed_out) {
    if (target < s->wake_at) s->wake_at = target;
    timed_out = cond_wait_until(&s->cv_done, &s->mu, timeout_ms >= 0 ? &dl : NULL) == ETIMEDOUT &&
                s->head < target;
  }
  int rc = RDEV_OK;
  if (timed_out) {
    rc = rt_fail(RDEV_RT_STREAM_SYNC_TIMEOUT, "stream still busy after %d ms", (int)timeout_ms);
  } else if (s->err != RDEV_OK) {
    rc = rt_fail(s->err, "asynchronous work on the stream failed: %s", rdev_strerror(s->err));
    s->err = RDEV_OK;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

static int sim_stream_pending(rdev_rt_stream_t *st, size_t *tasks, int *in_callback) {
  sim_stream_t *s = (sim_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  *tasks = (size_t)(s->tail - s->head);
  *in_callback = s->in_callback;
  pthread_mutex_unlock(&s->mu);
  return RDEV_OK;
}

static int sim_stream_take_error(rdev_rt_stream_t *st) {
  sim_stream_t *s = (sim_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  int rc = s->err;
  s->err = RDEV_OK;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

static int sim_submit(rdev_rt_stream_t *st, const rt_task_t *t) {
  sim_stream_t *s = (sim_stream_t *)st;
  pthread_mutex_lock(&s->mu);
  while (s->tail - s->head == s->cap && !s->stop) {
    s->space_waiters++;
    pthread_cond_wait(&s->cv_space, &s->mu);
    s->space_waiters--;
  }
  if (s->stop) {
    pthread_mutex_unlock(&s->mu);
    return rt_fail(RDEV_INVALID_RESOURCE_HANDLE, "stream is being destroyed");
  }
  rt_task_t *slot = &s->ring[s->tail % s->cap];
  *slot = *t;
  if (t->op == RT_TASK_EVENT_RECORD || t->op == RT_TASK_EVENT_WAIT) {
    sim_event_t *e = (sim_event_t *)t->u.event.ev;
    atomic_fetch_add(&e->refs, 1);
    pthread_mutex_lock(&s->dev->ev_mu);
    slot->u.event.gen = t->op == RT_TASK_EVENT_RECORD ? ++e->recorded : e->recorded;
    pthread_mutex_unlock(&s->dev->ev_mu);
  }
  s->tail++;
  int wake = s->worker_idle;
  pthread_mutex_unlock(&s->mu);
  /* signalled after unlocking: woken inside the lock, the worker would
   * only block on it again (a second futex round trip, seen in strace) */
  if (wake) pthread_cond_signal(&s->cv_work);
  return RDEV_OK;
}

/* ---- open / close -------------------------------------------------------- */

static void sim_close(void *impl);

static int sim_open(rdev_rt_t *rt, const rdev_rt_config_t *cfg, void **impl) {
  int nk;
  const rdev_kernel_sig_t *k = rdev_rt_kernels(&nk);
  for (int i = 0; i < nk; i++)
    if (nk != sim_kernel_count || strcmp(k[i].name, sim_kernel_names[i]) != 0)
      return rt_fail(RDEV_INTERNAL_ERROR, "sim kernel table does not match the registry");
  int ndev = cfg->sim_devices ? cfg->sim_devices : 2;
  size_t mem = cfg->sim_mem_bytes ? cfg->sim_mem_bytes : (size_t)1 << 30;
  mem &= ~(size_t)(RDEV_RT_MEM_ALIGN - 1);
  if (ndev < 1 || ndev > 64) return rt_fail(RDEV_INVALID_PARAM, "sim devices must be 1..64, got %d", ndev);
  if (mem < 4096) return rt_fail(RDEV_INVALID_PARAM, "sim device memory must be at least 4096 bytes");
  sim_t *sim = calloc(1, sizeof *sim);
  if (!sim) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  sim->rt = rt;
  sim->depth = cfg->stream_depth ? cfg->stream_depth : 1024;
  pthread_mutex_init(&sim->mu, NULL);
  sim->devs = calloc((size_t)ndev, sizeof *sim->devs);
  if (!sim->devs) {
    sim_close(sim);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  for (int i = 0; i < ndev; i++) {
    sim_dev_t *d = &sim->devs[i];
    d->index = i;
    d->slots = cfg->sim_slots;
    pthread_mutex_init(&d->ev_mu, NULL);
    rdev_clock_cond_init(&d->ev_cv);
    pthread_mutex_init(&d->sched_mu, NULL);
    pthread_cond_init(&d->sched_cv, NULL);
    sim->ndev = i + 1;
    int rc = sim_arena_init(&d->arena, mem);
    if (rc) {
      sim_close(sim);
      return rc;
    }
  }
  *impl = sim;
  return RDEV_OK;
}

static void free_host_node(void *p) { free(p); }

static void sim_close(void *impl) {
  sim_t *sim = impl;
  for (;;) { /* each destroy unlinks its stream */
    pthread_mutex_lock(&sim->mu);
    sim_stream_t *s = sim->streams;
    pthread_mutex_unlock(&sim->mu);
    if (!s) break;
    sim_stream_destroy(&s->base, 1);
  }
  for (sim_event_t *e = sim->events, *n; e; e = n) { /* no stream holds refs any more */
    n = e->next;
    free(e);
  }
  tdestroy(sim->host, free_host_node);
  for (int i = 0; i < sim->ndev; i++) {
    sim_arena_destroy(&sim->devs[i].arena);
    pthread_mutex_destroy(&sim->devs[i].ev_mu);
    pthread_cond_destroy(&sim->devs[i].ev_cv);
    pthread_mutex_destroy(&sim->devs[i].sched_mu);
    pthread_cond_destroy(&sim->devs[i].sched_cv);
    while (sim->devs[i].groups) {
      sim_group_t *n = sim->devs[i].groups->next;
      free(sim->devs[i].groups);
      sim->devs[i].groups = n;
    }
  }
  free(sim->devs);
  pthread_mutex_destroy(&sim->mu);
  free(sim);
}

const rt_backend_t rt_sim_backend = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .device_count = sim_device_count,
    .device_info = sim_device_info,
    .malloc = sim_malloc,
    .free = sim_free,
    .lookup = sim_lookup,
    .malloc_host = sim_malloc_host,
    .free_host = sim_free_host,
    .copy = sim_copy,
    .host_view = sim_host_view,
    .memset = sim_memset,
    .stream_create = sim_stream_create,
    .stream_destroy = sim_stream_destroy,
    .stream_abort = sim_stream_abort,
    .stream_sync = sim_stream_sync,
    .stream_pending = sim_stream_pending,
    .stream_take_error = sim_stream_take_error,
    .stream_set_group = sim_stream_set_group,
    .submit = sim_submit,
    .event_create = sim_event_create,
    .event_destroy = sim_event_destroy,
    .event_sync = sim_event_sync,
    .event_query = sim_event_query,
    .event_elapsed = sim_event_elapsed,
    .fault_inject = sim_fault_inject,
};
