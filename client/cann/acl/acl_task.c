/*
 * client/cann/acl/acl_task.c — what the library knows of the work queued
 * on each stream of the process: task ids (aclrtGetThreadLastTaskId), which
 * streams have work queued since their last synchronize, the kernels among
 * that work (the exception information of a failed one: its task id, its
 * function and arguments), and the ordering of synchronous copies and
 * memsets after all of it (acl_ordered_begin / acl_ordered_end).
 *
 * A synchronous copy or memset comes after all work queued earlier on the
 * streams of the calling thread's device (docs/acl.md): each of those
 * streams with work queued since its last synchronize records an event of
 * the library's (its fence), an internal stream of the device waits for
 * those events, the copy runs on that stream, and the call synchronizes it:
 * all pipelined, one round trip. Streams with nothing queued cost nothing.
 *
 * Which work a synchronize covered is counted on one clock: a task ticks it
 * once it was sent (acl_task_queued), a synchronize reads it before it is
 * sent (acl_task_mark), so every task at or below the mark was sent before.
 *
 * Everything here is under the library's lock (acl_lock), unless a
 * function says it takes it itself.
 */
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_lib.h"

#define MAX_DEVICES 64
#define POOL_MAX 4         /* idle internal streams kept per device */
#define KERNELS_MAX 256    /* kernel launches remembered per stream since its last synchronize */
#define ARGS_KEPT_MAX 4096 /* argument bytes kept per launch */

/* A kernel launch since the stream's last synchronize. */
typedef struct ktask {
  uint32_t id;
  uint64_t tick;
  aclrtFuncHandle func;
  void *args; /* a copy; NULL when none or too large */
  uint32_t len;
  struct ktask *next; /* older */
} ktask_t;

typedef struct track {
  rdev_stream_t *st;
  int dev;
  uint64_t queued; /* tick of its latest task */
  uint64_t synced; /* the tick its last synchronize covered */
  rdev_event_t *fence;
  void *marker; /* ACL_STOP_ON_FAILURE: 8 bytes of device memory the id of each kernel is written to before it runs */
  ktask_t *kernels; /* newest first */
  int nkernels;
  struct track *next;
} track_t;

static track_t *tracks;
static uint64_t ticks;
static uint32_t next_task_id = 1;
static rdev_stream_t *pool[MAX_DEVICES][POOL_MAX]; /* idle internal streams */
static int npool[MAX_DEVICES];

static _Thread_local uint32_t t_last_task;

static track_t *track_find(const rdev_stream_t *st) {
  track_t *t = tracks;
  while (t && t->st != st) t = t->next;
  return t;
}

static void kernels_free(ktask_t *k) {
  while (k) {
    ktask_t *n = k->next;
    free(k->args);
    free(k);
    k = n;
  }
}

void acl_task_stream_add(rdev_stream_t *st, int dev) {
  track_t *t = calloc(1, sizeof *t);
  if (!t) return; /* untracked: synchronous copies do not wait for it (out of host memory) */
  t->st = st;
  t->dev = dev;
  t->next = tracks;
  tracks = t;
}

void acl_task_stream_remove(rdev_stream_t *st, acl_task_leftover_t *left) {
  memset(left, 0, sizeof *left);
  track_t **pp = &tracks;
  while (*pp && (*pp)->st != st) pp = &(*pp)->next;
  track_t *t = *pp;
  if (!t) return;
  *pp = t->next;
  left->fence = t->fence;
  left->marker = t->marker;
  kernels_free(t->kernels);
  free(t);
}

void acl_task_leftover_free(acl_task_leftover_t *left) {
  acl_lock();
  rdev_session_t *s = acl_session_if_open();
  acl_unlock();
  if (left->fence && s) rdev_event_destroy(left->fence);
  if (left->marker && s) rdev_free(s, left->marker);
}

void acl_tasks_forget(void) {
  while (tracks) {
    track_t *n = tracks->next;
    kernels_free(tracks->kernels);
    free(tracks);
    tracks = n;
  }
  memset(npool, 0, sizeof npool);
}

uint64_t acl_task_mark(void) { return ticks; }

void acl_task_synced(rdev_stream_t *st, uint64_t mark) {
  track_t *t = track_find(st);
  if (!t) return;
  if (mark > t->synced) t->synced = mark;
  ktask_t **pp = &t->kernels; /* what the synchronize covered is no longer a candidate of its exceptions */
  while (*pp && (*pp)->tick > mark) pp = &(*pp)->next;
  for (ktask_t *k = *pp; k; k = k->next) t->nkernels--;
  kernels_free(*pp);
  *pp = NULL;
}

int acl_task_sync_done(aclError rc) {
  /* the stream's work ran (successfully or not): not a synchronize that gave up or lost its session */
  return rc == ACL_SUCCESS || (rc >= 100000 && rc < 600000 && rc != ACL_ERROR_RT_STREAM_SYNC_TIMEOUT &&
                               rc != ACL_ERROR_RT_WAIT_TIMEOUT && rc != ACL_ERROR_UNINITIALIZE);
}

uint32_t acl_task_reserve(rdev_stream_t *st) {
  acl_lock();
  uint32_t id = next_task_id++;
  if (!next_task_id) next_task_id = 1; /* 0 is no task */
  track_t *t = track_find(st);
  void *marker = t ? t->marker : NULL;
  acl_unlock();
  if (marker) rdev_value_write(st, marker, id); /* an error of it is the stream's, at its synchronize */
  return id;
}

void acl_task_queued(rdev_stream_t *st, uint32_t id, aclrtFuncHandle func, const void *args, size_t len) {
  ktask_t *k = NULL;
  if (func) {
    k = calloc(1, sizeof *k);
    if (k && args && len && len <= ARGS_KEPT_MAX && (k->args = malloc(len))) {
      memcpy(k->args, args, len);
      k->len = (uint32_t)len;
    }
  }
  acl_lock();
  if (!id) {
    id = next_task_id++;
    if (!next_task_id) next_task_id = 1;
  }
  t_last_task = id;
  track_t *t = track_find(st);
  if (t) t->queued = ++ticks;
  if (t && k) {
    k->id = id;
    k->tick = t->queued;
    k->func = func;
    k->next = t->kernels;
    t->kernels = k;
    k = NULL;
    if (++t->nkernels > KERNELS_MAX) { /* the oldest goes */
      ktask_t **pp = &t->kernels;
      while ((*pp)->next) pp = &(*pp)->next;
      kernels_free(*pp);
      *pp = NULL;
      t->nkernels--;
    }
  }
  acl_unlock();
  if (k) kernels_free(k);
}

aclError aclrtGetThreadLastTaskId(uint32_t *taskId) {
  if (!taskId) return acl_fail(ACL_ERROR_INVALID_PARAM, "taskId is NULL");
  rdev_session_t *s;
  aclError rc = acl_session_get(&s);
  if (!rc) *taskId = t_last_task;
  return rc;
}

aclError acl_task_stop_mode(rdev_stream_t *st, int stop) {
  rdev_session_t *s;
  int dev;
  acl_lock();
  track_t *t = track_find(st);
  aclError rc = t && stop && !t->marker ? acl_on_device(&s, &dev) : ACL_SUCCESS;
  if (t && stop && !t->marker && !rc) {
    /* on the stream's device: the marker is written in its order */
    int cur = dev;
    if (t->dev != cur) rc = acl_result(rdev_device_set(s, t->dev), "aclrtSetStreamFailureMode");
    if (!rc) rc = acl_result(rdev_malloc(s, &t->marker, 8, RDEV_MEM_MALLOC_HUGE_FIRST), "aclrtSetStreamFailureMode");
    if (t->dev != cur) rdev_device_set(s, cur);
    if (rc) t->marker = NULL;
  }
  acl_unlock();
  return rc;
}

aclError acl_task_failed(rdev_stream_t *st, uint64_t mark, uint32_t *id, aclrtFuncHandle *func, void **args,
                         uint32_t *len) {
  *id = 0;
  *func = NULL;
  *args = NULL;
  *len = 0;
  acl_lock();
  track_t *t = track_find(st);
  ktask_t *cands = NULL; /* copied: the records may go while the lock is let go */
  int n = 0;
  for (ktask_t *k = t ? t->kernels : NULL; k; k = k->next) {
    if (k->tick > mark) continue;
    ktask_t *c = malloc(sizeof *c);
    if (!c) break;
    *c = *k;
    c->args = NULL;
    if (k->args && (c->args = malloc(k->len))) memcpy(c->args, k->args, k->len);
    c->next = cands;
    cands = c;
    n++;
  }
  void *marker = t ? t->marker : NULL;
  rdev_session_t *s = acl_session_if_open();
  acl_unlock();
  uint64_t written = 0;
  ktask_t *hit = n == 1 ? cands : NULL; /* one kernel since the last synchronize: that one failed */
  if (n > 1 && marker && s && rdev_memcpy(s, &written, 8, marker, 8, RDEV_MEMCPY_DEVICE_TO_HOST) == RDEV_OK)
    for (ktask_t *k = cands; k && !hit; k = k->next)
      if (k->id == written) hit = k; /* ACL_STOP_ON_FAILURE: the last id written before the stream stopped */
  aclError rc = hit ? ACL_SUCCESS : ACL_ERROR_INVALID_EXCEPTION_INFO;
  if (hit) {
    *id = hit->id;
    *func = hit->func;
    *args = hit->args;
    *len = hit->len;
    hit->args = NULL; /* the caller's now */
  }
  kernels_free(cands);
  return rc;
}

/* ---- synchronous copies and memsets in order ---------------------------------- */

/* An idle internal stream of device dev (the session set to it), into *st. */
static aclError internal_stream(rdev_session_t *s, int dev, rdev_stream_t **st) {
  if (npool[dev]) {
    *st = pool[dev][--npool[dev]];
    return ACL_SUCCESS;
  }
  return acl_result(rdev_stream_create(s, st), "synchronous copy: stream");
}

aclError acl_ordered_begin(acl_ordered_t *o, int always) {
  memset(o, 0, sizeof *o);
  o->dev = -1;
  rdev_session_t *s;
  int dev;
  /* inside a callback or host function its own stream waits for it: a wait for that stream would never end */
  if (acl_in_callback()) return ACL_SUCCESS;
  acl_lock();
  if (acl_thread_device() < 0 || acl_thread_device() >= MAX_DEVICES) { /* no device: no stream to wait for */
    acl_unlock();
    return ACL_SUCCESS;
  }
  aclError rc = acl_on_device(&s, &dev);
  o->mark = ticks;
  for (track_t *t = tracks; t && !rc; t = t->next) {
    if (t->dev != dev || t->queued <= t->synced) continue;
    if (!t->fence) rc = acl_result(rdev_event_create(s, &t->fence), "synchronous copy: fence event");
    if (!rc && !o->st) rc = internal_stream(s, dev, &o->st);
    if (!rc) rc = acl_result(rdev_event_record(t->fence, t->st), "synchronous copy: fence");
    if (!rc) rc = acl_result(rdev_stream_wait_event(o->st, t->fence), "synchronous copy: wait");
  }
  if (!rc && !o->st && always) rc = internal_stream(s, dev, &o->st);
  o->dev = dev;
  acl_unlock();
  if (rc && o->st) {
    rdev_stream_synchronize(o->st); /* what was queued on it goes before it is used again */
    acl_lock();
    if (npool[dev] < POOL_MAX) pool[dev][npool[dev]++] = o->st, o->st = NULL;
    acl_unlock();
    if (o->st) rdev_stream_destroy(o->st);
    o->st = NULL;
  }
  return rc;
}

aclError acl_ordered_end(acl_ordered_t *o, aclError rc, const char *what) {
  if (!o->st) return rc;
  aclError sync = acl_result(rdev_stream_synchronize(o->st), what);
  if (!rc) rc = sync;
  acl_lock();
  if (!sync) /* every stream of the device was waited for up to the mark */
    for (track_t *t = tracks; t; t = t->next)
      if (t->dev == o->dev && o->mark > t->synced) t->synced = o->mark;
  rdev_stream_t *st = o->st;
  if (sync == ACL_SUCCESS && acl_session_if_open() && npool[o->dev] < POOL_MAX) {
    pool[o->dev][npool[o->dev]++] = st;
    st = NULL;
  }
  acl_unlock();
  if (st) rdev_stream_destroy(st);
  o->st = NULL;
  return rc;
}
