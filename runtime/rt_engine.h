/*
 * runtime/rt_engine.h — the stream engine every backend shares: streams as
 * worker threads draining bounded rings of validated tasks in order,
 * execution slots shared fairly among scheduling groups, events as
 * generation counters, synchronize, abort, discard and destroy. The engine
 * runs the host side of the work (callbacks, event records and waits,
 * value waits) itself and hands each device task to the backend's exec
 * (rt_backend_t, rt_internal.h), so that stream semantics are the same on
 * every backend. engine.c has streams, engine_sched.c execution slots,
 * engine_event.c events, engine_quick.c what launches took.
 */
#ifndef RDEV_RT_ENGINE_H
#define RDEV_RT_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "rt_internal.h"

typedef struct eng_group { /* a scheduling group on one device */
  uint32_t id, weight;
  uint32_t cap, busy; /* slots it may hold at once (0 = no cap), and holds */
  int streams;        /* streams in it: the group goes with its last one */
  uint64_t vtime;     /* ns of device time used / weight */
  struct eng_group *next;
} eng_group_t;

typedef struct { /* one device's scheduling and event state */
  int index;
  unsigned slots, busy;     /* execution slots (0 = unscheduled) and those in use */
  struct eng_stream *waitq; /* streams waiting for a slot */
  uint64_t vclock;          /* virtual time of the latest grant */
  eng_group_t *groups;
  pthread_mutex_t sched_mu;
  pthread_cond_t sched_cv;
  atomic_int nstreams, nevents;
  pthread_mutex_t ev_mu; /* guards every event of this device */
  pthread_cond_t ev_cv;  /* an event completed, or a stream is aborting */
} eng_dev_t;

#define QUICK_KEYS 8 /* launches whose run time a stream keeps (rt_engine_stream_run_here) */

typedef struct eng_stream {
  rdev_rt_stream_t base;
  rt_engine_t *eng;
  eng_dev_t *dev;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv_work;  /* worker: tasks arrived, or stop/abort */
  pthread_cond_t cv_space; /* submitters: a slot freed */
  pthread_cond_t cv_done;  /* synchronizers: a task finished */
  rt_task_t *ring;
  unsigned cap;
  /* Tasks [head, tail) are queued; ring[head % cap] runs. The worker moves
   * head without the lock, task by task (readers load it); the rest is
   * under mu. The waiter counts are read without it too, as hints: the
   * worker checks them under mu at the end of each run. */
  atomic_uint_fast64_t head;
  uint64_t tail;
  uint64_t seen_head; /* submitters: head as last loaded (room is checked against it first) */
  int worker_idle;
  int claimed; /* a synchronizing thread runs the queued tasks (rt_engine_stream_run_here): the worker waits */
  atomic_int space_waiters;
  int in_callback;                 /* the task running is a host callback */
  atomic_uint_fast64_t wake_at;    /* lowest head a synchronizer waits for; UINT64_MAX = none */
  atomic_int err;                  /* first error since the last synchronize (written under mu) */
  char err_msg[256];               /* its detail (the backend's text: CANN's on acl) */
  atomic_int stop_on_failure;      /* device work is skipped while err is set (written under mu) */
  int stop;                        /* destroy: run what is queued, then exit */
  atomic_int abort;                /* force destroy: discard what is queued */
  atomic_uint_fast64_t discard_to; /* tasks below this index are discarded (rdev_rt_stream_discard) */
  eng_group_t *group;              /* scheduling group (under dev->sched_mu) */
  eng_group_t *held;               /* the group charged for the slot it holds, or NULL */
  atomic_uint group_id;            /* the group's id, for the task observer (no lock) */
  struct eng_stream *wnext;        /* dev->waitq link (under dev->sched_mu) */
  struct eng_stream *prev, *next;
  atomic_int refs;                        /* its creator's, and a batch's that holds its wake back (rt_engine_batch) */
  atomic_uint_fast64_t quick[QUICK_KEYS]; /* what its latest launches took (engine_quick.c) */
} eng_stream_t;

typedef struct eng_event {
  rdev_rt_event_t base;
  eng_dev_t *dev;
  atomic_int refs;      /* the creator's, plus one per queued task naming it */
  uint64_t recorded;    /* generation of the latest record call */
  uint64_t completed;   /* highest generation that has run */
  struct timespec when; /* when `completed` ran */
  struct eng_event *prev, *next;
} eng_event_t;

struct rt_engine {
  rdev_rt_t *rt;
  int ndev;
  eng_dev_t *devs;
  unsigned depth; /* tasks a stream queues before submitters block */
  void (*task_done)(void *user, int dev, uint32_t group, int kernel, uint64_t wait_ns, uint64_t run_ns);
  void *task_done_user; /* rdev_rt_config_t's observer of device tasks, or NULL */
  pthread_mutex_t mu;   /* streams and events lists */
  eng_stream_t *streams;
  eng_event_t *events;
};

/* Opens the engine for rt's ndev devices (rt->be and rt->impl set). */
int rt_engine_open(rdev_rt_t *rt, int ndev, unsigned depth, unsigned slots, rt_engine_t **out);
/* Force-destroys every stream left: their callbacks run, cancelled. */
void rt_engine_stop(rt_engine_t *e);
/* Frees what is left (after rt_engine_stop). */
void rt_engine_close(rt_engine_t *e);

/* Waits on cv until woken or the deadline (NULL = none); ETIMEDOUT at the deadline. */
static inline int eng_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, const struct timespec *dl) {
  return dl ? pthread_cond_timedwait(cv, mu, dl) : pthread_cond_wait(cv, mu);
}

/* Whether the task s's worker runs now is discarded: the stream is
 * force-destroyed or aborted, or the task was queued before a discard
 * (rdev_rt_stream_discard). On the thread that runs s's tasks only (it
 * alone moves head: the worker, or a claim's owner). */
static inline int eng_cut_off(eng_stream_t *s) {
  return atomic_load(&s->abort) || atomic_load_explicit(&s->head, memory_order_relaxed) < atomic_load(&s->discard_to);
}

/* Execution slots (engine_sched.c), on the thread that runs s's tasks:
 * eng_slot_acquire takes one for s's next device task (1: held, 0: the
 * device is unscheduled, -1: s was cut off; *waited set when it had to
 * wait; with nowait, ENG_SLOT_BUSY instead of waiting); eng_slot_release
 * gives it back, charging ns of device time to s's group, and with more
 * queues s for its next task at once; eng_slot_forget takes s out of the
 * queue when its task was discarded instead. */
#define ENG_SLOT_BUSY (-2)
int eng_slot_acquire(eng_stream_t *s, int *waited, int nowait);
void eng_slot_release(eng_stream_t *s, uint64_t ns, int more);
void eng_slot_forget(eng_stream_t *s);
/* s is being destroyed, its worker stopped: it leaves the slot queue and
 * its scheduling group (engine_sched.c). */
void eng_sched_leave(eng_stream_t *s);

/* What s's latest launches took (engine_quick.c). eng_quick_kept: whether
 * t is a launch the table keeps (a built-in kernel's, on a backend that
 * lets a synchronizer run it: rt_backend_t.runs_here). On such tasks,
 * eng_quick_note keeps that t's run took ns (on the thread that runs s's
 * tasks); eng_quick_guess is what the same launch took when it last ran on
 * s, in ns, or UINT64_MAX when s has not run it lately. */
int eng_quick_kept(const eng_stream_t *s, const rt_task_t *t);
void eng_quick_note(eng_stream_t *s, const rt_task_t *t, uint64_t ns);
uint64_t eng_quick_guess(eng_stream_t *s, const rt_task_t *t);

/* Drops one reference to ev: the last frees it (engine_event.c). */
void eng_event_unref(eng_event_t *ev);
/* Marks ev's record of generation gen complete and wakes its waiters
 * (engine_event.c); the stream worker calls it when it reaches the record. */
void eng_event_complete(eng_event_t *ev, uint64_t gen);

/* The public stream and event calls past the generic layer's checks, with
 * the contracts of their rdev_rt_ counterparts (rdev/runtime.h). */
int rt_engine_stream_create(rt_engine_t *e, int dev, rdev_rt_stream_t **out);
int rt_engine_stream_destroy(rdev_rt_stream_t *st, int force);
int rt_engine_stream_abort(rdev_rt_stream_t *st);
int rt_engine_stream_discard(rdev_rt_stream_t *st);
int rt_engine_stream_sync(rdev_rt_stream_t *st, int32_t timeout_ms);
int rt_engine_stream_run_here(rdev_rt_stream_t *st, uint64_t budget_ns);
/* Batched wakes, per thread (rdev_rt_batch_begin/_end): on, nesting; off
 * at the outermost end wakes the streams held back. */
void rt_engine_batch(int on);
/* Wakes the streams this thread's batch holds back (it stays on): before
 * this thread waits for any stream. */
void rt_engine_batch_flush(void);
int rt_engine_stream_pending(rdev_rt_stream_t *st, size_t *tasks, int *in_callback, int *err);
int rt_engine_stream_take_error(rdev_rt_stream_t *st);
int rt_engine_stream_set_failure_mode(rdev_rt_stream_t *st, int stop);
int rt_engine_stream_set_group(rdev_rt_stream_t *st, uint32_t group, uint32_t weight, uint32_t max_slots);
int rt_engine_submit(rdev_rt_stream_t *st, const rt_task_t *t);
int rt_engine_event_create(rt_engine_t *e, int dev, rdev_rt_event_t **out);
int rt_engine_event_destroy(rdev_rt_event_t *ev);
int rt_engine_event_sync(rdev_rt_event_t *ev, int32_t timeout_ms);
int rt_engine_event_query(rdev_rt_event_t *ev, int *done);
int rt_engine_event_elapsed(float *ms, rdev_rt_event_t *a, rdev_rt_event_t *b);
int rt_engine_event_timestamp(rdev_rt_event_t *ev, uint64_t *ns);

#endif
