/*
 * client/acl/lib/acl.c — the ACL-compatible runtime library (libacl_rt.so,
 * libascendcl.so) over one rdev session per process: initialization from
 * the environment, the per-thread current device and error message,
 * devices, memory and copies, streams (NULL = the current device's default
 * stream) and events. It is the first part of the library: the calls a
 * kernel-free CANN program makes for memory, copies, streams and events;
 * every other declared call is generated (gen_unsupported.py) and answers
 * ACL_ERROR_API_NOT_SUPPORT. docs/acl.md lists what it offers.
 *
 * The session's current device is one for the process, ACL's is one per
 * thread: every call that works on a device sets the session's under g.mu.
 * rdev's status numbers are CANN's, so codes pass through unchanged.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_lib.h"
#include "rdev/rdev.h"

#define MAX_DEVICES 64

static struct {
  pthread_mutex_t mu;                /* everything below, and the session's current device */
  rdev_session_t *s;                 /* NULL before aclInit and after aclFinalize */
  int forked;                        /* this is a child of the process that opened s */
  aclrtStream defaults[MAX_DEVICES]; /* each device's default stream, made on first use */
  struct host_block {                /* aclrtMallocHost memory: async copies stay async */
    char *p;
    size_t n;
    struct host_block *next;
  } * host;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int t_dev = -1; /* aclrtSetDevice's, per thread */
static _Thread_local char t_msg[512];
static _Thread_local aclError t_err; /* aclrtGetLastError's */

aclError acl_fail(aclError code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_msg, sizeof t_msg, fmt, ap);
  va_end(ap);
  t_err = code;
  return code;
}
#define fail acl_fail

aclError acl_last_error(int clear) {
  aclError e = t_err;
  if (clear) t_err = ACL_SUCCESS;
  return e;
}

aclError acl_unsupported(const char *name) {
  return fail(ACL_ERROR_API_NOT_SUPPORT, "%s is not offered by rdev (docs/acl.md lists what is)", name);
}

/* An rdev call's result: its message kept for aclGetRecentErrMsg. */
static aclError rdev_result(int rc, const char *what) {
  if (rc == RDEV_OK) return ACL_SUCCESS;
  return fail(rc, "%s: %s (%s)", what, rdev_strerror(rc), rdev_session_last_error());
}

static void on_fork_child(void) { g.forked = 1; }

/* g.mu held: the session, or an error for a process without one. */
static aclError session_ok(void) {
  if (g.forked) return fail(ACL_ERROR_UNINITIALIZE, "the rdev session belongs to the parent process (fork)");
  if (!g.s) return fail(ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
  return ACL_SUCCESS;
}

/* g.mu held: the session on the calling thread's device. */
static aclError on_device(void) {
  aclError rc = session_ok();
  if (rc) return rc;
  if (t_dev < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  return rdev_result(rdev_device_set(g.s, t_dev), "aclrtSetDevice");
}

/* ---- init, errors, devices -------------------------------------------------- */

aclError aclInit(const char *configPath) {
  (void)configPath; /* settings come from the environment: RDEV_TARGET, RDEV_TOKEN, RDEV_CA, ... */
  pthread_mutex_lock(&g.mu);
  aclError rc = ACL_SUCCESS;
  if (g.forked)
    rc = fail(ACL_ERROR_UNINITIALIZE, "the rdev session belongs to the parent process (fork)");
  else if (g.s)
    rc = fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was called already");
  else {
    const char *target = getenv("RDEV_TARGET");
    if (!target || !*target) {
      rc = fail(ACL_ERROR_INVALID_PARAM, "RDEV_TARGET is not set: the rdevd to use (host:port or unix:/path)");
    } else {
      int r = rdev_session_open(target, NULL, &g.s);
      if (r != RDEV_OK) {
        g.s = NULL;
        rc = fail(r, "cannot open a session with rdevd at %s: %s (%s)", target, rdev_strerror(r),
                  rdev_session_last_error());
      }
    }
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclFinalize(void) {
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) {
    rdev_session_close(g.s); /* its streams, events and memory go with it */
    g.s = NULL;
    memset(g.defaults, 0, sizeof g.defaults);
    while (g.host) {
      struct host_block *n = g.host->next;
      free(g.host);
      g.host = n;
    }
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

const char *aclGetRecentErrMsg(void) { return t_msg[0] ? t_msg : NULL; }

aclError acl_device_count(int *count) {
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = rdev_result(rdev_device_count(g.s, count), "device count");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError acl_device_name(char *name, size_t len) {
  rdev_device_info_t info;
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = rdev_result(rdev_device_info(g.s, t_dev, &info), "device info");
  pthread_mutex_unlock(&g.mu);
  if (!rc) snprintf(name, len, "%s", info.name);
  return rc;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
  if (!count) return fail(ACL_ERROR_INVALID_PARAM, "count is NULL");
  int n = 0;
  aclError rc = acl_device_count(&n);
  if (!rc) *count = (uint32_t)n;
  return rc;
}

aclError aclrtSetDevice(int32_t deviceId) {
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = rdev_result(rdev_device_set(g.s, deviceId), "aclrtSetDevice");
  pthread_mutex_unlock(&g.mu);
  if (!rc) t_dev = deviceId;
  return rc;
}

aclError aclrtGetDevice(int32_t *deviceId) {
  if (!deviceId) return fail(ACL_ERROR_INVALID_PARAM, "deviceId is NULL");
  if (t_dev < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  *deviceId = t_dev;
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (deviceId != t_dev) return fail(ACL_ERROR_INVALID_PARAM, "device %d is not this thread's", (int)deviceId);
  t_dev = -1;
  return ACL_SUCCESS;
}

/* Nothing of the device stays behind a thread here: force is the same. */
aclError aclrtResetDeviceForce(int32_t deviceId) { return aclrtResetDevice(deviceId); }

aclError aclrtGetRunMode(aclrtRunMode *runMode) {
  if (!runMode) return fail(ACL_ERROR_INVALID_PARAM, "runMode is NULL");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

/* ---- memory ---------------------------------------------------------------- */

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "size 0 cannot be allocated");
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = rdev_result(rdev_malloc(g.s, devPtr, size, (rdev_mem_policy_t)(policy & 0xff)), "aclrtMalloc");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* rdev's addresses are 64-byte aligned, which is 32-byte aligned too. */
aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return aclrtMalloc(devPtr, size, policy);
}

aclError aclrtFree(void *devPtr) {
  if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = rdev_result(rdev_free(g.s, devPtr), "aclrtFree");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
  if (!hostPtr) return fail(ACL_ERROR_INVALID_PARAM, "hostPtr is NULL");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "size 0 cannot be allocated");
  struct host_block *b = malloc(sizeof *b);
  if (!b) return fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = rdev_result(rdev_malloc_host(g.s, hostPtr, size), "aclrtMallocHost");
  if (!rc) {
    *b = (struct host_block){*hostPtr, size, g.host};
    g.host = b;
    b = NULL;
  }
  pthread_mutex_unlock(&g.mu);
  free(b);
  return rc;
}

aclError aclrtFreeHost(void *hostPtr) {
  if (!hostPtr) return fail(ACL_ERROR_INVALID_PARAM, "hostPtr is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  struct host_block **pp = &g.host;
  while (!rc && *pp && (*pp)->p != hostPtr) pp = &(*pp)->next;
  if (!rc && !*pp) rc = fail(ACL_ERROR_INVALID_PARAM, "%p was not allocated by aclrtMallocHost", hostPtr);
  if (!rc) {
    struct host_block *b = *pp;
    *pp = b->next;
    free(b);
    rc = rdev_result(rdev_free_host(g.s, hostPtr), "aclrtFreeHost");
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  (void)attr; /* one kind of device memory */
  if (!free || !total) return fail(ACL_ERROR_INVALID_PARAM, "free or total is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = rdev_result(rdev_mem_info(g.s, free, total), "aclrtGetMemInfo");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* g.mu held: whether n bytes at p lie in aclrtMallocHost memory. */
static int pinned(const void *p, size_t n) {
  for (struct host_block *b = g.host; b; b = b->next)
    if ((const char *)p >= b->p && (size_t)((const char *)p - b->p) <= b->n &&
        n <= b->n - (size_t)((const char *)p - b->p))
      return 1;
  return 0;
}

/* g.mu held: stream, or the current device's default stream for NULL. */
static aclError stream_of(aclrtStream stream, rdev_stream_t **out) {
  aclError rc = on_device();
  if (rc) return rc;
  if (stream) {
    *out = stream;
    return ACL_SUCCESS;
  }
  if (!g.defaults[t_dev] &&
      (rc = rdev_result(rdev_stream_create(g.s, (rdev_stream_t **)&g.defaults[t_dev]), "default stream")))
    return rc;
  *out = g.defaults[t_dev];
  return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  (void)kind; /* reserved: the direction comes from the pointers */
  if (count == 0) return ACL_SUCCESS;
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = rdev_result(rdev_memcpy(g.s, dst, destMax, src, count, RDEV_MEMCPY_DEFAULT), "aclrtMemcpy");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* From host memory aclrtMallocHost did not make, the copy completes before
 * the call returns, as in CANN (the stream's earlier work first). */
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (count == 0) return ACL_SUCCESS;
  if ((unsigned)kind > ACL_MEMCPY_DEFAULT) return fail(ACL_ERROR_INVALID_PARAM, "unknown copy kind %d", (int)kind);
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = stream_of(stream, &st);
  int wait = !rc && ((kind == ACL_MEMCPY_HOST_TO_DEVICE && !pinned(src, count)) ||
                     (kind == ACL_MEMCPY_DEVICE_TO_HOST && !pinned(dst, count)));
  if (!rc)
    rc =
        rdev_result(rdev_memcpy_async(g.s, dst, destMax, src, count, (rdev_memcpy_kind_t)kind, st), "aclrtMemcpyAsync");
  pthread_mutex_unlock(&g.mu);
  if (!rc && wait) rc = rdev_result(rdev_stream_synchronize(st), "aclrtMemcpyAsync");
  return rc;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = rdev_result(rdev_memset(g.s, devPtr, maxCount, value, count), "aclrtMemset");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = stream_of(stream, &st);
  if (!rc) rc = rdev_result(rdev_memset_async(g.s, devPtr, maxCount, value, count, st), "aclrtMemsetAsync");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* ---- streams and events ------------------------------------------------------ */

aclError aclrtCreateStream(aclrtStream *stream) {
  if (!stream) return fail(ACL_ERROR_INVALID_PARAM, "stream is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = rdev_result(rdev_stream_create(g.s, (rdev_stream_t **)stream), "aclrtCreateStream");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  if (!stream) return fail(ACL_ERROR_INVALID_PARAM, "stream is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  pthread_mutex_unlock(&g.mu);
  return rc ? rc : rdev_result(rdev_stream_destroy(stream), "aclrtDestroyStream");
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = stream_of(stream, &st);
  pthread_mutex_unlock(&g.mu);
  if (rc) return rc;
  return rdev_result(timeout < 0 ? rdev_stream_synchronize(st) : rdev_stream_synchronize_timeout(st, timeout),
                     "aclrtSynchronizeStream");
}

aclError aclrtSynchronizeStream(aclrtStream stream) { return aclrtSynchronizeStreamWithTimeout(stream, -1); }

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
  if (!status) return fail(ACL_ERROR_INVALID_PARAM, "status is NULL");
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = stream_of(stream, &st);
  pthread_mutex_unlock(&g.mu);
  int done = 0;
  if (!rc) rc = rdev_result(rdev_stream_query(st, &done), "aclrtStreamQuery");
  if (!rc) *status = done ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
  return rc;
}

aclError aclrtCreateEvent(aclrtEvent *event) {
  if (!event) return fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = rdev_result(rdev_event_create(g.s, (rdev_event_t **)event), "aclrtCreateEvent");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* Every event is timed (rdev_event_elapsed_ms works on any two). */
aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
  if (flag &
      ~(uint32_t)(ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_DEVICE_USE_ONLY))
    return fail(ACL_ERROR_INVALID_PARAM,
                "event flags 0x%x: only SYNC, TIME_LINE, CAPTURE_STREAM_PROGRESS and DEVICE_USE_ONLY are offered",
                (unsigned)flag);
  return aclrtCreateEvent(event);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  if (!event) return fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  return rdev_result(rdev_event_destroy(event), "aclrtDestroyEvent");
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  if (!event) return fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = stream_of(stream, &st);
  pthread_mutex_unlock(&g.mu);
  return rc ? rc : rdev_result(rdev_event_record(event, st), "aclrtRecordEvent");
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  if (!event) return fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = stream_of(stream, &st);
  pthread_mutex_unlock(&g.mu);
  return rc ? rc : rdev_result(rdev_stream_wait_event(st, event), "aclrtStreamWaitEvent");
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
  if (!event) return fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  return rdev_result(rdev_event_synchronize(event, timeout), "aclrtSynchronizeEvent");
}

aclError aclrtSynchronizeEvent(aclrtEvent event) { return aclrtSynchronizeEventWithTimeout(event, -1); }

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
  if (!event || !status) return fail(ACL_ERROR_INVALID_PARAM, "event or status is NULL");
  int done = 0;
  aclError rc = rdev_result(rdev_event_query(event, &done), "aclrtQueryEventStatus");
  if (!rc) *status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return rc;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
  if (!event || !status) return fail(ACL_ERROR_INVALID_PARAM, "event or status is NULL");
  int done = 0;
  aclError rc = rdev_result(rdev_event_query(event, &done), "aclrtQueryEvent");
  if (!rc) *status = done ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
  return rc;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  if (!ms || !startEvent || !endEvent) return fail(ACL_ERROR_INVALID_PARAM, "NULL argument");
  return rdev_result(rdev_event_elapsed_ms(ms, startEvent, endEvent), "aclrtEventElapsedTime");
}

/* A child after fork() must not use the parent's session (its threads and
 * connection did not come along): every call then says so. */
__attribute__((constructor)) static void acl_lib_init(void) { pthread_atfork(NULL, NULL, on_fork_child); }
