/*
 * client/cann/acl/acl_stream.c — streams of the ACL library: the
 * library's record of each stream it made (device, id, priority, flags),
 * each device's default stream (the NULL stream, made on first use),
 * and device synchronization over them. Events are acl_event.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "acl/acl.h"
#include "acl_lib.h"
#include "rdev/clock.h"

#define MAX_DEVICES 64

/* Streams the program made, and the default ones; under the library's lock. */
typedef struct rec {
  rdev_stream_t *st;
  int dev;
  int32_t id;
  uint32_t priority, flags;
  uint64_t failure_mode; /* ACL_CONTINUE_ON_FAILURE or ACL_STOP_ON_FAILURE */
  int pins;              /* device synchronizes using st: its destroy waits for them */
  int dying;             /* being destroyed: new device synchronizes pass it by */
  struct rec *next;
} rec_t;
static rec_t *recs;
static rdev_stream_t *defaults[MAX_DEVICES];
static uint64_t default_modes[MAX_DEVICES]; /* the default streams' failure modes */
static int32_t next_id = 1;                 /* 0 is a default stream's */

/* ---- stream state and exception callbacks ---------------------------------------- */

#define MAX_CALLBACKS 16
static struct {
  char name[64];
  aclrtStreamStateCallback fn;
  void *args;
} state_cbs[MAX_CALLBACKS];                                     /* under the lock */
static aclrtExceptionInfoCallback exception_cbs[MAX_CALLBACKS]; /* registered */
static aclrtExceptionInfoCallback exception_set;                /* aclrtSetExceptionInfoCallback's */

/* Runs the stream state callbacks (no lock held: they may call in). */
static void stream_state(aclrtStream st, aclrtStreamState state) {
  aclrtStreamStateCallback fns[MAX_CALLBACKS];
  void *args[MAX_CALLBACKS];
  int n = 0;
  acl_lock();
  for (int i = 0; i < MAX_CALLBACKS; i++)
    if (state_cbs[i].fn) fns[n] = state_cbs[i].fn, args[n++] = state_cbs[i].args;
  acl_unlock();
  for (int i = 0; i < n; i++) fns[i](st, state, args[i]);
}

/* Registers (or, with a NULL callback, removes) the callback named regName;
 * it runs after each stream is created and before each is destroyed. */
aclError aclrtRegStreamStateCallback(const char *regName, aclrtStreamStateCallback callback, void *args) {
  if (!regName || !*regName || strlen(regName) >= sizeof state_cbs[0].name)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "regName is NULL, empty or longer than 63 bytes");
  aclError rc = ACL_SUCCESS;
  acl_lock();
  int at = -1, free_at = -1;
  for (int i = 0; i < MAX_CALLBACKS; i++) {
    if (state_cbs[i].fn && !strcmp(state_cbs[i].name, regName)) at = i;
    if (!state_cbs[i].fn && free_at < 0) free_at = i;
  }
  if (!callback) {
    if (at >= 0) state_cbs[at].fn = NULL;
  } else if (at < 0 && free_at < 0) {
    rc = acl_fail(ACL_ERROR_INVALID_PARAM, "at most %d stream state callbacks", MAX_CALLBACKS);
  } else {
    if (at < 0) at = free_at;
    snprintf(state_cbs[at].name, sizeof state_cbs[at].name, "%s", regName);
    state_cbs[at].fn = callback;
    state_cbs[at].args = args;
  }
  acl_unlock();
  return rc;
}

/* What the exception callbacks are given: the failed work's stream, device
 * and code, and the failed kernel's task id, function and arguments when
 * the library can tell which kernel failed (acl_task_failed). */
struct rtExceptionInfo {
  uint32_t taskid, streamid, tid, deviceid, retcode;
  aclError kernel; /* ACL_SUCCESS when the fields below say which kernel failed */
  aclrtFuncHandle func;
  void *args; /* a host copy of its arguments */
  uint32_t args_len;
};

static aclError exception_cb(aclrtExceptionInfoCallback callback, int add) {
  if (!callback) return acl_fail(ACL_ERROR_INVALID_PARAM, "callback is NULL");
  aclError rc = ACL_SUCCESS;
  acl_lock();
  int at = -1;
  for (int i = 0; i < MAX_CALLBACKS && at < 0; i++)
    if (add ? !exception_cbs[i] || exception_cbs[i] == callback : exception_cbs[i] == callback) at = i;
  if (at < 0)
    rc = acl_fail(ACL_ERROR_INVALID_PARAM, add ? "at most %d exception callbacks" : "callback is not registered",
                  MAX_CALLBACKS);
  else
    exception_cbs[at] = add ? callback : NULL;
  acl_unlock();
  return rc;
}

aclError aclrtExceptionInfoCallbackRegister(aclrtExceptionInfoCallback callback) { return exception_cb(callback, 1); }
aclError aclrtExceptionInfoCallbackUnregister(aclrtExceptionInfoCallback callback) { return exception_cb(callback, 0); }
/* The latest one set applies; NULL clears it. */
aclError aclrtSetExceptionInfoCallback(aclrtExceptionInfoCallback callback) {
  acl_lock();
  exception_set = callback;
  acl_unlock();
  return ACL_SUCCESS;
}

uint32_t aclrtGetTaskIdFromExceptionInfo(const aclrtExceptionInfo *info) { return info ? info->taskid : 0; }
uint32_t aclrtGetStreamIdFromExceptionInfo(const aclrtExceptionInfo *info) { return info ? info->streamid : 0; }
uint32_t aclrtGetThreadIdFromExceptionInfo(const aclrtExceptionInfo *info) { return info ? info->tid : 0; }
uint32_t aclrtGetDeviceIdFromExceptionInfo(const aclrtExceptionInfo *info) { return info ? info->deviceid : 0; }
uint32_t aclrtGetErrorCodeFromExceptionInfo(const aclrtExceptionInfo *info) { return info ? info->retcode : 0; }

/* The arguments are a host copy of the launch's (rdev gives no device
 * address of them), valid while the callback runs; aclrtMemcpy reads it as
 * it reads device memory. */
aclError aclrtGetArgsFromExceptionInfo(const aclrtExceptionInfo *info, void **devArgsPtr, uint32_t *devArgsLen) {
  if (!info) return acl_fail(ACL_ERROR_INVALID_EXCEPTION_INFO, "info is NULL");
  if (!devArgsPtr || !devArgsLen) return acl_fail(ACL_ERROR_INVALID_PARAM, "devArgsPtr or devArgsLen is NULL");
  if (info->kernel) return acl_fail(info->kernel, "the exception names no kernel launch rdev can tell");
  *devArgsPtr = info->args;
  *devArgsLen = info->args_len;
  return ACL_SUCCESS;
}

aclError aclrtGetFuncHandleFromExceptionInfo(const aclrtExceptionInfo *info, aclrtFuncHandle *func) {
  if (!info) return acl_fail(ACL_ERROR_INVALID_EXCEPTION_INFO, "info is NULL");
  if (!func) return acl_fail(ACL_ERROR_INVALID_PARAM, "func is NULL");
  if (info->kernel) return acl_fail(info->kernel, "the exception names no kernel launch rdev can tell");
  *func = info->func;
  return ACL_SUCCESS;
}

void acl_exception_report(aclError code, rdev_stream_t *st, int32_t id, int dev, uint64_t mark) {
  /* failures of the stream's work: the runtime's 507xxx, not a synchronize that timed out */
  if (code < 507000 || code >= 508000 || code == ACL_ERROR_RT_STREAM_SYNC_TIMEOUT) return;
  aclrtExceptionInfoCallback fns[MAX_CALLBACKS + 1];
  int n = 0;
  acl_lock();
  if (exception_set) fns[n++] = exception_set;
  for (int i = 0; i < MAX_CALLBACKS; i++)
    if (exception_cbs[i]) fns[n++] = exception_cbs[i];
  acl_unlock();
  if (!n) return;
  acl_error_state_t saved; /* what the callbacks call must not replace the synchronize's error */
  acl_error_save(&saved);
  aclrtExceptionInfo info = {
      0, (uint32_t)id, (uint32_t)syscall(SYS_gettid), (uint32_t)dev, (uint32_t)code, 0, NULL, NULL, 0};
  info.kernel = acl_task_failed(st, mark, &info.taskid, &info.func, &info.args, &info.args_len);
  for (int i = 0; i < n; i++) fns[i](&info);
  free(info.args);
  acl_error_restore(&saved);
}

static rec_t *find(const void *st) {
  rec_t *r = recs;
  while (r && r->st != st) r = r->next;
  return r;
}

void acl_streams_forget(void) {
  while (recs) {
    rec_t *n = recs->next;
    free(recs);
    recs = n;
  }
  for (int d = 0; d < MAX_DEVICES; d++) defaults[d] = NULL, default_modes[d] = ACL_CONTINUE_ON_FAILURE;
  acl_tasks_forget();
}

aclError acl_stream_get(aclrtStream stream, rdev_stream_t **out) {
  acl_lock();
  aclError rc = acl_stream_of(stream, out);
  acl_unlock();
  return rc;
}

aclError acl_stream_of(aclrtStream stream, rdev_stream_t **out) {
  rdev_session_t *s;
  int dev;
  aclError rc = acl_on_device(&s, &dev);
  if (rc) return rc;
  if (stream) { /* one the program made, or a default one it was given */
    int known = find(stream) != NULL;
    for (int d = 0; d < MAX_DEVICES && !known; d++) known = defaults[d] == stream;
    if (!known) return acl_fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "%p is not a stream of this process", stream);
    *out = stream;
    return ACL_SUCCESS;
  }
  if (dev >= MAX_DEVICES) return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d: at most %d", dev, MAX_DEVICES);
  if (!defaults[dev]) {
    if ((rc = acl_result(rdev_stream_create(s, &defaults[dev]), "default stream"))) return rc;
    acl_task_stream_add(defaults[dev], dev);
  }
  *out = defaults[dev];
  return ACL_SUCCESS;
}

/* ---- create and destroy ----------------------------------------------------------- */

/* priority and flags are kept and reported back; rdev schedules every
 * stream alike (fair share by tenant), so they change nothing else. */
aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
  if (!stream) return acl_fail(ACL_ERROR_INVALID_PARAM, "stream is NULL");
  if (flag & ~(uint32_t)(ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC))
    return acl_fail(ACL_ERROR_INVALID_PARAM, "stream flags 0x%x: only FAST_LAUNCH and FAST_SYNC are offered",
                    (unsigned)flag);
  rec_t *r = malloc(sizeof *r);
  if (!r) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  rdev_session_t *s;
  int dev;
  acl_lock();
  aclError rc = acl_on_device(&s, &dev);
  if (!rc) rc = acl_result(rdev_stream_create(s, &r->st), "aclrtCreateStream");
  if (!rc) {
    r->dev = dev;
    r->id = next_id++;
    r->priority = priority;
    r->flags = flag;
    r->failure_mode = ACL_CONTINUE_ON_FAILURE;
    r->pins = 0;
    r->dying = 0;
    r->next = recs;
    recs = r;
    acl_task_stream_add(r->st, dev);
    *stream = r->st;
    r = NULL;
  }
  acl_unlock();
  free(r);
  if (!rc) stream_state(*stream, ACL_RT_STREAM_STATE_CREATE_POST);
  return rc;
}

aclError aclrtCreateStream(aclrtStream *stream) { return aclrtCreateStreamWithConfig(stream, 0, 0); }

/* A stream configuration: flag and priority as aclrtCreateStreamWithConfig
 * takes them; a work area is kept and unused (rdev's streams need none). */
aclrtStreamConfigHandle *aclrtCreateStreamConfigHandle(void) {
  aclrtStreamConfigHandle *h = calloc(1, sizeof *h);
  if (!h) acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  return h;
}

aclError aclrtDestroyStreamConfigHandle(aclrtStreamConfigHandle *handle) {
  if (!handle) return acl_fail(ACL_ERROR_INVALID_PARAM, "handle is NULL");
  free(handle);
  return ACL_SUCCESS;
}

/* An unsigned value of 1, 2, 4 or 8 bytes. */
static int read_uint(const void *v, size_t n, uint64_t *out) {
  uint8_t b;
  uint16_t h;
  uint32_t w;
  switch (n) {
    case 1: memcpy(&b, v, 1), *out = b; return 1;
    case 2: memcpy(&h, v, 2), *out = h; return 1;
    case 4: memcpy(&w, v, 4), *out = w; return 1;
    case 8: memcpy(out, v, 8); return 1;
  }
  return 0;
}

aclError aclrtSetStreamConfigOpt(aclrtStreamConfigHandle *handle, aclrtStreamConfigAttr attr, const void *attrValue,
                                 size_t valueSize) {
  if (!handle || !attrValue) return acl_fail(ACL_ERROR_INVALID_PARAM, "handle or attrValue is NULL");
  uint64_t v = 0;
  if (attr == ACL_RT_STREAM_WORK_ADDR_PTR) {
    if (valueSize != sizeof(void *)) return acl_fail(ACL_ERROR_INVALID_PARAM, "work address: %zu bytes", valueSize);
    memcpy(&handle->workptr, attrValue, sizeof(void *));
    return ACL_SUCCESS;
  }
  if (!read_uint(attrValue, valueSize, &v))
    return acl_fail(ACL_ERROR_INVALID_PARAM, "stream option %d: a value of %zu bytes", (int)attr, valueSize);
  switch (attr) {
    case ACL_RT_STREAM_WORK_SIZE: handle->workSize = (size_t)v; return ACL_SUCCESS;
    case ACL_RT_STREAM_FLAG: handle->flag = (size_t)v; return ACL_SUCCESS;
    case ACL_RT_STREAM_PRIORITY:
      if (v > UINT32_MAX) return acl_fail(ACL_ERROR_INVALID_PARAM, "priority %llu", (unsigned long long)v);
      handle->priority = (uint32_t)v;
      return ACL_SUCCESS;
    default: return acl_fail(ACL_ERROR_INVALID_PARAM, "unknown stream option %d", (int)attr);
  }
}

aclError aclrtCreateStreamV2(aclrtStream *stream, const aclrtStreamConfigHandle *handle) {
  if (!handle) return aclrtCreateStreamWithConfig(stream, 0, 0);
  if (handle->flag > UINT32_MAX) return acl_fail(ACL_ERROR_INVALID_PARAM, "stream flags 0x%zx", handle->flag);
  return aclrtCreateStreamWithConfig(stream, handle->priority, (uint32_t)handle->flag);
}

/* Waits for the stream's work (aclrtDestroyStream), or not (Force: rdev
 * discards nothing then either, the server finishes it). */
static aclError destroy(aclrtStream stream, const char *what) {
  if (!stream) return acl_fail(ACL_ERROR_INVALID_PARAM, "stream is NULL");
  acl_lock();
  int known = find(stream) != NULL;
  acl_unlock();
  if (known) stream_state(stream, ACL_RT_STREAM_STATE_DESTROY_PRE);
  rdev_session_t *s;
  acl_lock();
  aclError rc = acl_session(&s);
  rec_t **pp = &recs;
  while (!rc && *pp && (*pp)->st != stream) pp = &(*pp)->next;
  if (!rc && !*pp)
    rc = acl_fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "%s: %p is not a stream of this process", what, stream);
  rec_t *r = rc ? NULL : *pp;
  if (r) r->dying = 1;
  while (r && r->pins) { /* a device synchronize on another thread still uses it */
    acl_unlock();
    usleep(1000);
    acl_lock();
  }
  acl_task_leftover_t left = {0};
  if (r) { /* found again: streams made meanwhile went in front of it */
    for (pp = &recs; *pp != r; pp = &(*pp)->next) {}
    *pp = r->next;
    acl_task_stream_remove(stream, &left);
  }
  acl_unlock();
  free(r);
  if (rc) return rc;
  void *sub = acl_callbacks_stream_detach(stream);
  rc = acl_result(rdev_stream_destroy(stream), what);
  acl_task_leftover_free(&left);  /* the stream's work no longer uses them */
  acl_callbacks_stream_gone(sub); /* drained: every callback of it came */
  return rc;
}

aclError aclrtDestroyStream(aclrtStream stream) { return destroy(stream, "aclrtDestroyStream"); }

aclError aclrtDestroyStreamForce(aclrtStream stream) { return destroy(stream, "aclrtDestroyStreamForce"); }

aclError aclrtCtxGetCurrentDefaultStream(aclrtStream *stream) {
  if (!stream) return acl_fail(ACL_ERROR_INVALID_PARAM, "stream is NULL");
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(NULL, &st);
  if (!rc) *stream = st;
  return rc;
}

/* ---- what a stream is --------------------------------------------------------------- */

/* The record of stream (NULL: the default one), copied into *out. */
static aclError stream_rec(aclrtStream stream, rec_t *out) {
  rdev_stream_t *st = NULL;
  acl_lock();
  aclError rc = acl_stream_of(stream, &st);
  rec_t *r = rc ? NULL : find(st);
  if (r)
    *out = *r;
  else if (!rc) /* a default stream (acl_stream_of knows no other) */
    *out = (rec_t){.st = st};
  acl_unlock();
  return rc;
}

aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId) {
  rec_t r;
  if (!streamId) return acl_fail(ACL_ERROR_INVALID_PARAM, "streamId is NULL");
  aclError rc = stream_rec(stream, &r);
  if (!rc) *streamId = r.id;
  return rc;
}

aclError aclrtStreamGetPriority(aclrtStream stream, uint32_t *priority) {
  rec_t r;
  if (!priority) return acl_fail(ACL_ERROR_INVALID_PARAM, "priority is NULL");
  aclError rc = stream_rec(stream, &r);
  if (!rc) *priority = r.priority;
  return rc;
}

/* Where a stream's failure mode is kept: its record, or its device's
 * default slot. Lock held. */
static uint64_t *mode_of(rdev_stream_t *st) {
  rec_t *r = find(st);
  if (r) return &r->failure_mode;
  for (int d = 0; d < MAX_DEVICES; d++)
    if (defaults[d] == st) return &default_modes[d];
  return NULL;
}

/* rdevd skips the stream's device work after a failure until a synchronize
 * reports it (CANN refuses new work instead; docs/acl.md). */
aclError aclrtSetStreamFailureMode(aclrtStream stream, uint64_t mode) {
  if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "unknown failure mode %llu", (unsigned long long)mode);
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_result(rdev_stream_set_failure_mode(st, mode == ACL_STOP_ON_FAILURE), "aclrtSetStreamFailureMode");
  if (!rc) rc = acl_task_stop_mode(st, mode == ACL_STOP_ON_FAILURE);
  acl_lock();
  uint64_t *m = rc ? NULL : mode_of(st);
  if (m) *m = mode;
  acl_unlock();
  return rc;
}

/* The attributes rdev keeps: the failure mode and the priority. */
aclError aclrtSetStreamAttribute(aclrtStream stream, aclrtStreamAttr stmAttrType, aclrtStreamAttrValue *value) {
  if (!value) return acl_fail(ACL_ERROR_INVALID_PARAM, "value is NULL");
  if (stmAttrType == ACL_STREAM_ATTR_FAILURE_MODE) return aclrtSetStreamFailureMode(stream, value->failureMode);
  if (stmAttrType != ACL_STREAM_ATTR_PRIORITY)
    return acl_fail(ACL_ERROR_API_NOT_SUPPORT, "stream attribute %d is not offered by rdev", (int)stmAttrType);
  rdev_stream_t *st = NULL;
  acl_lock();
  aclError rc = acl_stream_of(stream, &st);
  rec_t *r = rc ? NULL : find(st);
  if (r) r->priority = value->streamPriority;
  acl_unlock();
  if (!rc && !r) rc = acl_fail(ACL_ERROR_INVALID_PARAM, "a default stream's priority is fixed");
  return rc;
}

aclError aclrtGetStreamAttribute(aclrtStream stream, aclrtStreamAttr stmAttrType, aclrtStreamAttrValue *value) {
  if (!value) return acl_fail(ACL_ERROR_INVALID_PARAM, "value is NULL");
  if (stmAttrType != ACL_STREAM_ATTR_FAILURE_MODE && stmAttrType != ACL_STREAM_ATTR_PRIORITY)
    return acl_fail(ACL_ERROR_API_NOT_SUPPORT, "stream attribute %d is not offered by rdev", (int)stmAttrType);
  rdev_stream_t *st = NULL;
  acl_lock();
  aclError rc = acl_stream_of(stream, &st);
  if (!rc) {
    memset(value, 0, sizeof *value);
    rec_t *r = find(st);
    uint64_t *m = mode_of(st);
    if (stmAttrType == ACL_STREAM_ATTR_FAILURE_MODE)
      value->failureMode = m ? *m : ACL_CONTINUE_ON_FAILURE;
    else
      value->streamPriority = r ? r->priority : 0;
  }
  acl_unlock();
  return rc;
}

aclError aclrtStreamGetFlags(aclrtStream stream, uint32_t *flags) {
  rec_t r;
  if (!flags) return acl_fail(ACL_ERROR_INVALID_PARAM, "flags is NULL");
  aclError rc = stream_rec(stream, &r);
  if (!rc) *flags = r.flags;
  return rc;
}

/* Every stream of the calling thread's device, the default one included,
 * synchronized in turn; the first error is returned. */
aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
  rdev_session_t *s;
  int dev, n = 0;
  acl_lock();
  aclError rc = acl_on_device(&s, &dev);
  rec_t **all = NULL; /* pinned: a destroy on another thread waits */
  if (!rc) {
    for (rec_t *r = recs; r; r = r->next) n += r->dev == dev && !r->dying;
    all = malloc(((size_t)n + 1) * sizeof *all);
    if (!all) rc = acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  }
  n = 0;
  rec_t def = {0};
  uint64_t mark = acl_task_mark();
  if (!rc) {
    for (rec_t *r = recs; r; r = r->next)
      if (r->dev == dev && !r->dying) {
        r->pins++;
        all[n++] = r;
      }
    if (dev < MAX_DEVICES && defaults[dev]) {
      def.st = defaults[dev]; /* default streams go only with aclFinalize */
      all[n++] = &def;
    }
  }
  acl_unlock();
  uint64_t deadline = rdev_clock_now_ns() + (uint64_t)(timeout < 0 ? 0 : timeout) * 1000000u;
  for (int i = 0; i < n; i++) { /* one deadline for them all */
    uint64_t now = rdev_clock_now_ns();
    int32_t left = timeout < 0 ? -1 : now >= deadline ? 0 : (int32_t)((deadline - now) / 1000000u);
    rdev_stream_t *st = all[i]->st;
    aclError e = acl_result(left < 0 ? rdev_stream_synchronize(st) : rdev_stream_synchronize_timeout(st, left),
                            "aclrtSynchronizeDevice");
    acl_exception_report(e, st, all[i]->id, dev, mark);
    if (!rc) rc = e;
    acl_lock();
    if (acl_task_sync_done(e)) acl_task_synced(st, mark);
    acl_unlock();
  }
  acl_lock();
  for (int i = 0; i < n; i++) all[i]->pins -= all[i] != &def;
  acl_unlock();
  free(all);
  return rc;
}

aclError aclrtSynchronizeDevice(void) { return aclrtSynchronizeDeviceWithTimeout(-1); }

/* ---- synchronize, query ---------------------------------------------------------- */

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  acl_lock();
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_of(stream, &st);
  rec_t *r = rc ? NULL : find(st);
  int32_t id = r ? r->id : 0;
  int dev = r ? r->dev : acl_thread_device();
  uint64_t mark = acl_task_mark();
  acl_unlock();
  if (rc) return rc;
  rc = acl_result(timeout < 0 ? rdev_stream_synchronize(st) : rdev_stream_synchronize_timeout(st, timeout),
                  "aclrtSynchronizeStream");
  acl_exception_report(rc, st, id, dev, mark);
  acl_lock();
  if (acl_task_sync_done(rc)) acl_task_synced(st, mark); /* a stream destroyed meanwhile is not found */
  acl_unlock();
  return rc;
}

aclError aclrtStreamAbort(aclrtStream stream) {
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  return rc ? rc : acl_result(rdev_stream_abort(st), "aclrtStreamAbort");
}

/* CANN stops only streams created ACL_STREAM_DEVICE_USE_ONLY (on A2/A3),
 * which rdev does not offer: every stream of the library is refused. */
aclError aclrtStreamStop(aclrtStream stream) {
  if (!stream) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamStop takes no default stream");
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  return rc ? rc
            : acl_fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                       "aclrtStreamStop takes only ACL_STREAM_DEVICE_USE_ONLY streams, which rdev does not offer");
}

aclError aclrtSynchronizeStream(aclrtStream stream) { return aclrtSynchronizeStreamWithTimeout(stream, -1); }

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
  if (!status) return acl_fail(ACL_ERROR_INVALID_PARAM, "status is NULL");
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  int done = 0;
  if (!rc) rc = acl_result(rdev_stream_query(st, &done), "aclrtStreamQuery");
  if (!rc) *status = done ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
  return rc;
}
