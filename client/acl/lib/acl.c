/*
 * client/acl/lib/acl.c — the ACL-compatible runtime library (libacl_rt.so,
 * libascendcl.so) over one rdev session per process: initialization from
 * the environment, the per-thread current device and error message,
 * devices, memory and copies (NULL = the current device's default
 * stream), contexts. Streams and events are acl_stream.c's, host-side
 * answers acl_info.c's; every other declared call is generated
 * (gen_unsupported.py) and answers ACL_ERROR_API_NOT_SUPPORT. docs/acl.md
 * lists what the library offers.
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

static struct {
  pthread_mutex_t mu; /* everything below, and the session's current device */
  rdev_session_t *s;  /* NULL before aclInit and after aclFinalize */
  int forked;         /* this is a child of the process that opened s */
  struct host_block { /* aclrtMallocHost memory: async copies stay async */
    char *p;
    size_t n;
    struct host_block *next;
  } * host;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int t_dev = -1; /* aclrtSetDevice's, per thread */

/* A context binds a thread to a device: the current one decides the
 * thread's device. aclrtSetDevice's is the device's default context. */
typedef struct acl_ctx {
  int dev;
  struct acl_ctx *next; /* ctxs */
} acl_ctx_t;
static acl_ctx_t *ctxs;                /* made by aclrtCreateContext: g.mu */
static acl_ctx_t default_ctx[64];      /* one per device */
static _Thread_local acl_ctx_t *t_ctx; /* NULL: the device's default */
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

aclError acl_result(int rc, const char *what) {
  if (rc == RDEV_OK) return ACL_SUCCESS;
  return fail(rc, "%s: %s (%s)", what, rdev_strerror(rc), rdev_session_last_error());
}

/* In a child after fork(): a session the parent opened is not the child's
 * (its threads and connection stayed behind); without one, the child may
 * call aclInit itself. The lock may have been held by a thread that did not
 * come along. */
static void on_fork_child(void) {
  pthread_mutex_init(&g.mu, NULL);
  g.forked = g.s != NULL;
}

void acl_lock(void) { pthread_mutex_lock(&g.mu); }

void acl_unlock(void) { pthread_mutex_unlock(&g.mu); }

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
  return acl_result(rdev_device_set(g.s, t_dev), "aclrtSetDevice");
}

aclError acl_session(rdev_session_t **s) {
  aclError rc = session_ok();
  *s = g.s;
  return rc;
}

aclError acl_on_device(rdev_session_t **s, int *dev) {
  aclError rc = on_device();
  *s = g.s;
  *dev = t_dev;
  return rc;
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
  aclError rc = g.forked || g.s ? session_ok() : fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize was called already");
  if (!rc) {
    rdev_session_close(g.s); /* its streams, events and memory go with it */
    g.s = NULL;
    acl_streams_forget();
    while (g.host) { /* what the program did not free */
      struct host_block *n = g.host->next;
      rdev_free_host(NULL, g.host->p);
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
  if (!rc) rc = acl_result(rdev_device_count(g.s, count), "device count");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError acl_device_name(char *name, size_t len) {
  rdev_device_info_t info;
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = acl_result(rdev_device_info(g.s, t_dev, &info), "device info");
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
  if (!rc && deviceId >= 64) rc = fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist", (int)deviceId);
  if (!rc) rc = acl_result(rdev_device_set(g.s, deviceId), "aclrtSetDevice");
  pthread_mutex_unlock(&g.mu);
  if (!rc) {
    t_dev = deviceId;
    t_ctx = NULL; /* the device's default context */
  }
  return rc;
}

aclError aclrtGetDevice(int32_t *deviceId) {
  if (!deviceId) return fail(ACL_ERROR_INVALID_PARAM, "deviceId is NULL");
  if (t_dev < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  *deviceId = t_dev;
  return ACL_SUCCESS;
}

/* Any of the session's devices; the thread lets go of it if it is its own. */
aclError aclrtResetDevice(int32_t deviceId) {
  int n = 0;
  aclError rc = acl_device_count(&n);
  if (rc) return rc;
  if (deviceId < 0 || deviceId >= n)
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist (devices: 0..%d)", (int)deviceId, n - 1);
  if (deviceId == t_dev) {
    t_dev = -1;
    t_ctx = NULL;
  }
  return ACL_SUCCESS;
}

/* Nothing of the device stays behind a thread here: force is the same. */
aclError aclrtResetDeviceForce(int32_t deviceId) { return aclrtResetDevice(deviceId); }

aclError aclrtGetRunMode(aclrtRunMode *runMode) {
  if (!runMode) return fail(ACL_ERROR_INVALID_PARAM, "runMode is NULL");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

/* ---- contexts -------------------------------------------------------------------- */

/* g.mu held: whether c is a context aclrtCreateContext made. */
static int ctx_known(const acl_ctx_t *c) {
  const acl_ctx_t *k = ctxs;
  while (k && k != c) k = k->next;
  return k != NULL;
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  if (!context) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
  acl_ctx_t *c = malloc(sizeof *c);
  if (!c) return fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  aclError rc = aclrtSetDevice(deviceId); /* checks it, and binds the thread */
  if (rc) {
    free(c);
    return rc;
  }
  pthread_mutex_lock(&g.mu);
  c->dev = deviceId;
  c->next = ctxs;
  ctxs = c;
  pthread_mutex_unlock(&g.mu);
  t_ctx = c;
  *context = c;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  pthread_mutex_lock(&g.mu);
  acl_ctx_t **pp = &ctxs;
  while (*pp && *pp != context) pp = &(*pp)->next;
  acl_ctx_t *c = *pp;
  if (c) *pp = c->next;
  pthread_mutex_unlock(&g.mu);
  if (!c) return fail(ACL_ERROR_INVALID_PARAM, "%p is not a context aclrtCreateContext made", context);
  if (t_ctx == c) t_ctx = NULL;
  free(c);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  acl_ctx_t *c = context;
  pthread_mutex_lock(&g.mu);
  int known = c && (ctx_known(c) || (c >= default_ctx && c < default_ctx + 64));
  pthread_mutex_unlock(&g.mu);
  if (!known) return fail(ACL_ERROR_INVALID_PARAM, "%p is not a context", context);
  t_dev = c->dev;
  t_ctx = c >= default_ctx && c < default_ctx + 64 ? NULL : c;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
  if (!context) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
  if (t_dev < 0 || t_dev >= 64) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  *context = t_ctx ? t_ctx : &default_ctx[t_dev];
  return ACL_SUCCESS;
}

/* ---- memory ---------------------------------------------------------------- */

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "size 0 cannot be allocated");
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = acl_result(rdev_malloc(g.s, devPtr, size, (rdev_mem_policy_t)(policy & 0xff)), "aclrtMalloc");
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
  if (!rc) rc = acl_result(rdev_free(g.s, devPtr), "aclrtFree");
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
  if (!rc) rc = acl_result(rdev_malloc_host(g.s, hostPtr, size), "aclrtMallocHost");
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
    rc = acl_result(rdev_free_host(g.s, hostPtr), "aclrtFreeHost");
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  (void)attr; /* one kind of device memory */
  if (!free || !total) return fail(ACL_ERROR_INVALID_PARAM, "free or total is NULL");
  pthread_mutex_lock(&g.mu);
  aclError rc = on_device();
  if (!rc) rc = acl_result(rdev_mem_info(g.s, free, total), "aclrtGetMemInfo");
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

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  (void)kind; /* reserved: the direction comes from the pointers */
  if (count == 0) return ACL_SUCCESS;
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = acl_result(rdev_memcpy(g.s, dst, destMax, src, count, RDEV_MEMCPY_DEFAULT), "aclrtMemcpy");
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
  aclError rc = acl_stream_of(stream, &st);
  /* DEFAULT: the direction is the pointers'; only aclrtMallocHost memory on
   * one side lets it stay queued (a D2D copy so named waits too) */
  int wait = !rc && ((kind == ACL_MEMCPY_HOST_TO_DEVICE && !pinned(src, count)) ||
                     (kind == ACL_MEMCPY_DEVICE_TO_HOST && !pinned(dst, count)) ||
                     (kind == ACL_MEMCPY_DEFAULT && !pinned(src, count) && !pinned(dst, count)));
  if (!rc)
    rc = acl_result(rdev_memcpy_async(g.s, dst, destMax, src, count, (rdev_memcpy_kind_t)kind, st), "aclrtMemcpyAsync");
  pthread_mutex_unlock(&g.mu);
  if (!rc && wait) rc = acl_result(rdev_stream_synchronize(st), "aclrtMemcpyAsync");
  return rc;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = acl_result(rdev_memset(g.s, devPtr, maxCount, value, count), "aclrtMemset");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  pthread_mutex_lock(&g.mu);
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_of(stream, &st);
  if (!rc) rc = acl_result(rdev_memset_async(g.s, devPtr, maxCount, value, count, st), "aclrtMemsetAsync");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

/* A child after fork() must not use the parent's session (its threads and
 * connection did not come along): every call then says so. */
__attribute__((constructor)) static void acl_lib_init(void) {
  for (int d = 0; d < 64; d++) default_ctx[d].dev = d;
  pthread_atfork(NULL, NULL, on_fork_child);
}
