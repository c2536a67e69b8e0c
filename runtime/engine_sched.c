/*
 * runtime/engine_sched.c — the engine's execution slots (rt_engine.h):
 * the slots a device shares among scheduling groups, which a stream's
 * worker (engine.c) takes for each device task and gives back after it.
 *
 * Execution slots (config slots > 0): a device then runs at most that
 * many copies, memsets and kernels at once, and when streams wait for a slot
 * it goes to the scheduling group (tenant) with the least weighted device
 * time used: start-time fair queuing, where a group's virtual time advances
 * by task time / weight, and a group that was idle rejoins at the device's
 * current virtual time instead of cashing in its idle time. A group may
 * have a cap on the slots it holds at once: at its cap, its streams wait
 * for its own slots and are passed over in the choice, so that one tenant
 * cannot take a device's every slot with long kernels. Host callbacks and
 * event waits never take a slot. With slots 0 every stream runs whenever
 * its worker thread does.
 */
#include <stdlib.h>

#include "rt_engine.h"

/* The group `id` of device d, made on first use. sched_mu held. */
static eng_group_t *group_get(eng_dev_t *d, uint32_t id) {
  eng_group_t *g;
  for (g = d->groups; g && g->id != id; g = g->next) {}
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
static void group_drop_if_unused(eng_dev_t *d, eng_group_t *g) {
  if (g->streams > 0 || g->busy > 0) return;
  for (eng_group_t **pp = &d->groups; *pp; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      free(g);
      return;
    }
}

/* s leaves its group. sched_mu held. */
static void group_leave(eng_stream_t *s) {
  eng_group_t *g = s->group;
  s->group = NULL;
  if (g) {
    g->streams--;
    group_drop_if_unused(s->dev, g);
  }
}

int rt_engine_stream_set_group(rdev_rt_stream_t *st, uint32_t group, uint32_t weight, uint32_t max_slots) {
  eng_stream_t *s = (eng_stream_t *)st;
  pthread_mutex_lock(&s->dev->sched_mu);
  eng_group_t *g = group_get(s->dev, group);
  if (g && g != s->group) {
    g->streams++;
    group_leave(s);
  }
  if (g) {
    g->weight = weight;
    g->cap = max_slots;
    s->group = g;
    atomic_store_explicit(&s->group_id, group, memory_order_relaxed);
    pthread_cond_broadcast(&s->dev->sched_cv); /* a cap may have changed */
  }
  pthread_mutex_unlock(&s->dev->sched_mu);
  return g ? RDEV_OK : rt_fail(RDEV_BAD_ALLOC, "out of host memory");
}

/* Whether g may take one more slot. sched_mu held. */
static int under_cap(const eng_group_t *g) { return !g->cap || g->busy < g->cap; }

/* Whether waiting stream s is next: its group is under its cap and no
 * other waiter's group that is has used less weighted time (ties go to the
 * earlier waiter). sched_mu held. */
static int is_next(eng_stream_t *s) {
  if (!under_cap(s->group)) return 0;
  for (eng_stream_t *o = s->dev->waitq; o; o = o->wnext)
    if (o != s && under_cap(o->group) && o->group->vtime < s->group->vtime) return 0;
  return 1;
}

/* Appends s to the device's wait queue unless it is in it. sched_mu held. */
static void wait_enqueue(eng_dev_t *d, eng_stream_t *s) {
  eng_stream_t **tail = &d->waitq;
  while (*tail && *tail != s) tail = &(*tail)->wnext;
  if (*tail) return;
  if (s->group->vtime < d->vclock) s->group->vtime = d->vclock; /* no credit for idle time */
  *tail = s;
  s->wnext = NULL;
}

static void wait_remove(eng_dev_t *d, eng_stream_t *s) {
  for (eng_stream_t **pp = &d->waitq; *pp; pp = &(*pp)->wnext)
    if (*pp == s) {
      *pp = s->wnext;
      return;
    }
}

/* Takes an execution slot for s's next task: 1 when held (give it back with
 * eng_slot_release), 0 when the device is unscheduled, -1 when s was aborted;
 * with nowait, ENG_SLOT_BUSY when s would have to wait (s is then not queued).
 * *waited is set when it had to wait for the slot. */
int eng_slot_acquire(eng_stream_t *s, int *waited, int nowait) {
  eng_dev_t *d = s->dev;
  if (!d->slots) return 0;
  pthread_mutex_lock(&d->sched_mu);
  if (!s->group && (s->group = group_get(d, 0))) s->group->streams++;
  if (!s->group) { /* out of memory: run unscheduled */
    pthread_mutex_unlock(&d->sched_mu);
    return 0;
  }
  wait_enqueue(d, s);
  while (!eng_cut_off(s) && !(d->busy < d->slots && is_next(s))) {
    if (nowait) {
      wait_remove(d, s);
      pthread_mutex_unlock(&d->sched_mu);
      return ENG_SLOT_BUSY;
    }
    *waited = 1;
    pthread_cond_wait(&d->sched_cv, &d->sched_mu);
  }
  wait_remove(d, s);
  int got = eng_cut_off(s) ? -1 : 1;
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
void eng_slot_forget(eng_stream_t *s) {
  eng_dev_t *d = s->dev;
  if (!d->slots) return;
  pthread_mutex_lock(&d->sched_mu);
  wait_remove(d, s);
  if (d->waitq) pthread_cond_broadcast(&d->sched_cv);
  pthread_mutex_unlock(&d->sched_mu);
}

/* Gives the slot back, charging ns of device time to s's group. With more,
 * s queues for its next task at once, so that a backlogged stream competes
 * by its group's time instead of losing the slot to whoever woke first. */
void eng_slot_release(eng_stream_t *s, uint64_t ns, int more) {
  eng_dev_t *d = s->dev;
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

void eng_sched_leave(eng_stream_t *s) {
  pthread_mutex_lock(&s->dev->sched_mu);
  wait_remove(s->dev, s); /* never left queued for a slot it will not take */
  group_leave(s);
  pthread_mutex_unlock(&s->dev->sched_mu);
}
