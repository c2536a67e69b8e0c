/*
 * client/cann/acl/acl.c — the ACL-compatible runtime library (libacl_rt.so,
 * libascendcl.so) over one rdev session per process: finalization, devices,
 * contexts, memory and copies (NULL = the current device's default
 * stream). acl_session.c holds the session, the lock and the thread's
 * state; streams are acl_stream.c's, events acl_event.c's, host-side answers
 * acl_info.c's; every other declared call is generated
 * (gen_unsupported.py) and answers ACL_ERROR_API_NOT_SUPPORT. docs/acl.md
 * lists what the library offers.
 *
 * The library's lock covers the session's current device and the records;
 * calls that name memory by address (copies, memsets, free) take what they
 * need under it and talk to rdevd outside it, so one thread's long copy
 * does not hold up another's. (aclFinalize while other threads still call
 * is a program error, as in CANN.)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_lib.h"
#include "rdev/rdev.h"

/* Marks this library as rdev's client, not CANN's runtime: rdevd's acl
 * backend refuses a library that exports it (same file name, no device). */
__attribute__((visibility("default"))) extern const char aclrdevClientLibrary[];
const char aclrdevClientLibrary[] = "rdev ACL-compatible client library";

static struct host_block { /* aclrtMallocHost memory: async copies stay async (under the lock) */
  char *p;
  size_t n;
  struct host_block *next;
} * host;

/* A context binds a thread to a device: the current one decides the
 * thread's device. aclrtSetDevice's is the device's default context. */
typedef struct acl_ctx {
  int dev;
  struct acl_ctx *next; /* ctxs */
} acl_ctx_t;
static acl_ctx_t *ctxs;                /* made by aclrtCreateContext: the lock */
static acl_ctx_t default_ctx[64];      /* one per device */
static _Thread_local acl_ctx_t *t_ctx; /* NULL: the device's default */

#define fail acl_fail

/* ---- init, devices ---------------------------------------------------------------- */

aclError aclFinalize(void) {
  if (acl_in_callback()) /* it would wait for itself */
    return fail(ACL_ERROR_INVALID_PARAM, "aclFinalize cannot be called from a callback or host function");
  rdev_session_t *closing = NULL;
  acl_lock();
  aclError rc = acl_session_end(&closing);
  if (!rc) {
    acl_streams_forget();
    acl_kernels_forget();
    acl_notifies_forget();
    while (host) { /* what the program did not free */
      struct host_block *n = host->next;
      rdev_free_host(NULL, host->p);
      free(host);
      host = n;
    }
  }
  acl_unlock();
  if (closing) { /* not under the lock: host functions that run as it ends may call in */
    acl_callbacks_end();
    rdev_session_close(closing); /* its streams, events and memory go with it */
  }
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
  acl_lock();
  rdev_session_t *s = NULL;
  aclError rc = acl_session(&s);
  if (!rc && deviceId >= 64) rc = fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist", (int)deviceId);
  if (!rc) rc = acl_result(rdev_device_set(s, deviceId), "aclrtSetDevice");
  acl_unlock();
  if (!rc) {
    acl_thread_device_set(deviceId);
    t_ctx = NULL; /* the device's default context */
  }
  return rc;
}

aclError aclrtGetDevice(int32_t *deviceId) {
  if (!deviceId) return fail(ACL_ERROR_INVALID_PARAM, "deviceId is NULL");
  if (acl_thread_device() < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  *deviceId = acl_thread_device();
  return ACL_SUCCESS;
}

/* Any of the session's devices; the thread lets go of it if it is its own. */
aclError aclrtResetDevice(int32_t deviceId) {
  int n = 0;
  aclError rc = acl_device_count(&n);
  if (rc) return rc;
  if (deviceId < 0 || deviceId >= n)
    return fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist (devices: 0..%d)", (int)deviceId, n - 1);
  if (deviceId == acl_thread_device()) {
    acl_thread_device_set(-1);
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

/* Lock held: whether c is a context aclrtCreateContext made. */
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
  acl_lock();
  c->dev = deviceId;
  c->next = ctxs;
  ctxs = c;
  acl_unlock();
  t_ctx = c;
  *context = c;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  acl_lock();
  acl_ctx_t **pp = &ctxs;
  while (*pp && *pp != context) pp = &(*pp)->next;
  acl_ctx_t *c = *pp;
  if (c) *pp = c->next;
  acl_unlock();
  if (!c) return fail(ACL_ERROR_INVALID_PARAM, "%p is not a context aclrtCreateContext made", context);
  if (t_ctx == c) t_ctx = NULL;
  free(c);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  acl_ctx_t *c = context;
  acl_lock();
  int known = c && (ctx_known(c) || (c >= default_ctx && c < default_ctx + 64));
  acl_unlock();
  if (!known) return fail(ACL_ERROR_INVALID_PARAM, "%p is not a context", context);
  acl_thread_device_set(c->dev);
  t_ctx = c >= default_ctx && c < default_ctx + 64 ? NULL : c;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
  if (!context) return fail(ACL_ERROR_INVALID_PARAM, "context is NULL");
  if (acl_thread_device() < 0 || acl_thread_device() >= 64)
    return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  *context = t_ctx ? t_ctx : &default_ctx[acl_thread_device()];
  return ACL_SUCCESS;
}

/* ---- memory ---------------------------------------------------------------- */

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "size 0 cannot be allocated");
  acl_lock();
  rdev_session_t *s = NULL;
  int dev = -1;
  aclError rc = acl_on_device(&s, &dev);
  if (!rc) rc = acl_result(rdev_malloc(s, devPtr, size, (rdev_mem_policy_t)(policy & 0xff)), "aclrtMalloc");
  acl_unlock();
  return rc;
}

/* rdev's addresses are 64-byte aligned, which is 32-byte aligned too. */
aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  return aclrtMalloc(devPtr, size, policy);
}

aclError aclrtFree(void *devPtr) {
  if (!devPtr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr is NULL");
  rdev_session_t *s = NULL;
  aclError rc = acl_session_get(&s);
  return rc ? rc : acl_result(rdev_free(s, devPtr), "aclrtFree");
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
  if (!hostPtr) return fail(ACL_ERROR_INVALID_PARAM, "hostPtr is NULL");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, "size 0 cannot be allocated");
  struct host_block *b = malloc(sizeof *b);
  if (!b) return fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  acl_lock();
  rdev_session_t *s = NULL;
  aclError rc = acl_session(&s);
  if (!rc) rc = acl_result(rdev_malloc_host(s, hostPtr, size), "aclrtMallocHost");
  if (!rc) {
    *b = (struct host_block){*hostPtr, size, host};
    host = b;
    b = NULL;
  }
  acl_unlock();
  free(b);
  return rc;
}

aclError aclrtFreeHost(void *hostPtr) {
  if (!hostPtr) return fail(ACL_ERROR_INVALID_PARAM, "hostPtr is NULL");
  acl_lock();
  rdev_session_t *s = NULL;
  aclError rc = acl_session(&s);
  struct host_block **pp = &host;
  while (!rc && *pp && (*pp)->p != hostPtr) pp = &(*pp)->next;
  if (!rc && !*pp) rc = fail(ACL_ERROR_INVALID_PARAM, "%p was not allocated by aclrtMallocHost", hostPtr);
  if (!rc) {
    struct host_block *b = *pp;
    *pp = b->next;
    free(b);
    rc = acl_result(rdev_free_host(s, hostPtr), "aclrtFreeHost");
  }
  acl_unlock();
  return rc;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  (void)attr; /* one kind of device memory */
  if (!free || !total) return fail(ACL_ERROR_INVALID_PARAM, "free or total is NULL");
  acl_lock();
  rdev_session_t *s = NULL;
  int dev = -1;
  aclError rc = acl_on_device(&s, &dev);
  if (!rc) rc = acl_result(rdev_mem_info(s, free, total), "aclrtGetMemInfo");
  acl_unlock();
  return rc;
}

/* Lock held: whether n bytes at p lie in aclrtMallocHost memory. */
static int pinned(const void *p, size_t n) {
  for (struct host_block *b = host; b; b = b->next)
    if ((const char *)p >= b->p && (size_t)((const char *)p - b->p) <= b->n &&
        n <= b->n - (size_t)((const char *)p - b->p))
      return 1;
  return 0;
}

/* After the work queued earlier on the streams of the thread's device when
 * it touches device memory (acl_ordered_begin; docs/acl.md). */
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  (void)kind; /* reserved: the direction comes from the pointers */
  if (count == 0) return ACL_SUCCESS;
  rdev_session_t *s = NULL;
  aclError rc = acl_session_get(&s); /* copies name their memory by address: no device to set */
  if (rc) return rc;
  acl_ordered_t o = {0};
  if ((rdev_ptr_on_device(s, dst) || rdev_ptr_on_device(s, src)) && (rc = acl_ordered_begin(&o, 0))) return rc;
  if (!o.st) return acl_result(rdev_memcpy(s, dst, destMax, src, count, RDEV_MEMCPY_DEFAULT), "aclrtMemcpy");
  rc = acl_result(rdev_memcpy_async(s, dst, destMax, src, count, RDEV_MEMCPY_DEFAULT, o.st), "aclrtMemcpy");
  return acl_ordered_end(&o, rc, "aclrtMemcpy");
}

/* From host memory aclrtMallocHost did not make, the copy completes before
 * the call returns, as in CANN (the stream's earlier work first). Between
 * two host buffers it is refused when so named (CANN on a host), and done
 * in stream order when the direction is left to the pointers. */
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (count == 0) return ACL_SUCCESS;
  if ((unsigned)kind > ACL_MEMCPY_DEFAULT) return fail(ACL_ERROR_INVALID_PARAM, "unknown copy kind %d", (int)kind);
  if (kind == ACL_MEMCPY_HOST_TO_HOST)
    return fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "aclrtMemcpyAsync: host-to-host copies are synchronous (aclrtMemcpy)");
  acl_lock();
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_of(stream, &st);
  rdev_session_t *s = NULL;
  if (!rc) rc = acl_session(&s);
  /* DEFAULT: the direction is the pointers'; only aclrtMallocHost memory on
   * one side lets it stay queued (a D2D copy so named waits too) */
  int wait = !rc && ((kind == ACL_MEMCPY_HOST_TO_DEVICE && !pinned(src, count)) ||
                     (kind == ACL_MEMCPY_DEVICE_TO_HOST && !pinned(dst, count)) ||
                     (kind == ACL_MEMCPY_DEFAULT && !pinned(src, count) && !pinned(dst, count)));
  acl_unlock();
  if (!rc && kind == ACL_MEMCPY_DEFAULT && !rdev_ptr_on_device(s, dst) && !rdev_ptr_on_device(s, src)) {
    if (count > destMax) return fail(ACL_ERROR_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", count, destMax);
    rc = acl_result(rdev_stream_synchronize(st), "aclrtMemcpyAsync");
    if (!rc) memmove(dst, src, count);
    return rc;
  }
  if (!rc)
    rc = acl_result(rdev_memcpy_async(s, dst, destMax, src, count, (rdev_memcpy_kind_t)kind, st), "aclrtMemcpyAsync");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  if (!rc && wait) rc = acl_result(rdev_stream_synchronize(st), "aclrtMemcpyAsync");
  return rc;
}

/* Host memory aclrtMallocHost made is set here (CANN takes host or device
 * memory, by its address); the async one after the stream's earlier work. */
static aclError memset_host(void *p, size_t maxCount, int32_t value, size_t count, rdev_stream_t *st) {
  if (count > maxCount) return fail(ACL_ERROR_RT_PARAM_INVALID, "count %zu exceeds maxCount %zu", count, maxCount);
  aclError rc = st ? acl_result(rdev_stream_synchronize(st), "aclrtMemsetAsync") : ACL_SUCCESS;
  if (!rc) memset(p, value, count);
  return rc;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  rdev_session_t *s = NULL;
  acl_lock();
  aclError rc = acl_session(&s);
  int on_host = !rc && devPtr && pinned(devPtr, count < maxCount ? count : maxCount);
  acl_unlock();
  if (rc) return rc;
  if (on_host) return memset_host(devPtr, maxCount, value, count, NULL);
  acl_ordered_t o = {0}; /* after the work queued earlier on the device's streams */
  if ((rc = acl_ordered_begin(&o, 0))) return rc;
  if (!o.st) return acl_result(rdev_memset(s, devPtr, maxCount, value, count), "aclrtMemset");
  rc = acl_result(rdev_memset_async(s, devPtr, maxCount, value, count, o.st), "aclrtMemset");
  return acl_ordered_end(&o, rc, "aclrtMemset");
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  acl_lock();
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_of(stream, &st);
  rdev_session_t *s = NULL;
  if (!rc) rc = acl_session(&s);
  int on_host = !rc && devPtr && pinned(devPtr, count < maxCount ? count : maxCount);
  acl_unlock();
  if (rc) return rc;
  if (on_host) return memset_host(devPtr, maxCount, value, count, st);
  rc = acl_result(rdev_memset_async(s, devPtr, maxCount, value, count, st), "aclrtMemsetAsync");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

/* The rows of a 2D copy, each queued on st as an async copy (the caller
 * synchronizes st while its host memory must stay valid). */
static aclError copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                          aclrtMemcpyKind kind, rdev_session_t *s, rdev_stream_t *st, const char *what) {
  if (!dst || !src) return fail(ACL_ERROR_INVALID_PARAM, "%s: dst or src is NULL", what);
  if (kind != ACL_MEMCPY_HOST_TO_DEVICE && kind != ACL_MEMCPY_DEVICE_TO_HOST)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: only host-to-device and device-to-host copies, not kind %d", what,
                (int)kind);
  if (width > dpitch || width > spitch)
    return fail(ACL_ERROR_INVALID_PARAM, "%s: width %zu exceeds dpitch %zu or spitch %zu", what, width, dpitch, spitch);
  size_t span;
  if (height && (__builtin_mul_overflow(height - 1, dpitch > spitch ? dpitch : spitch, &span) ||
                 __builtin_add_overflow(span, width, &span)))
    return fail(ACL_ERROR_INVALID_PARAM, "%s: %zu rows of pitch %zu overflow", what, height,
                dpitch > spitch ? dpitch : spitch);
  for (size_t i = 0; i < height && width; i++) {
    int rc = rdev_memcpy_async(s, (char *)dst + i * dpitch, width, (const char *)src + i * spitch, width,
                               (rdev_memcpy_kind_t)kind, st);
    if (rc) {
      aclError e = acl_result(rc, what);
      if (i) rdev_stream_synchronize(st); /* the rows queued before must not land in memory handed back */
      return e;
    }
  }
  return ACL_SUCCESS;
}

/* Row by row on a stream of the library's, so that the rows stream without
 * a round trip each and no stream of the program is synchronized; after the
 * work queued earlier on the streams of the thread's device
 * (acl_ordered_begin). A thread without a device gets a stream of its own. */
aclError aclrtMemcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                       aclrtMemcpyKind kind) {
  rdev_session_t *s = NULL;
  aclError rc = acl_session_get(&s);
  acl_ordered_t o = {0};
  if (!rc) rc = acl_ordered_begin(&o, 1);
  if (rc) return rc;
  if (o.st) {
    rc = copy_rows(dst, dpitch, src, spitch, width, height, kind, s, o.st, "aclrtMemcpy2d");
    return acl_ordered_end(&o, rc, "aclrtMemcpy2d");
  }
  rdev_stream_t *st = NULL;
  rc = acl_result(rdev_stream_create(s, &st), "aclrtMemcpy2d");
  if (!rc) rc = copy_rows(dst, dpitch, src, spitch, width, height, kind, s, st, "aclrtMemcpy2d");
  if (st) {
    aclError d = acl_result(rdev_stream_destroy(st), "aclrtMemcpy2d"); /* waits for the rows */
    if (!rc) rc = d;
  }
  return rc;
}

/* As aclrtMemcpyAsync: from or to host memory aclrtMallocHost did not
 * make, the rows are copied before the call returns. */
aclError aclrtMemcpy2dAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                            aclrtMemcpyKind kind, aclrtStream stream) {
  acl_lock();
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_of(stream, &st);
  rdev_session_t *s = NULL;
  if (!rc) rc = acl_session(&s);
  size_t span = height ? (height - 1) * (kind == ACL_MEMCPY_HOST_TO_DEVICE ? spitch : dpitch) + width : 0;
  int wait = !rc && !pinned(kind == ACL_MEMCPY_HOST_TO_DEVICE ? src : dst, span);
  acl_unlock();
  if (!rc) rc = copy_rows(dst, dpitch, src, spitch, width, height, kind, s, st, "aclrtMemcpy2dAsync");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  if (!rc && wait) rc = acl_result(rdev_stream_synchronize(st), "aclrtMemcpy2dAsync");
  return rc;
}

/* aclrtValueWrite / aclrtValueWait: flag is reserved (0) for the write,
 * the condition (ACL_STREAM_WAIT_VALUE_*) for the wait. */
aclError aclrtValueWrite(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
  if (flag) return fail(ACL_ERROR_INVALID_PARAM, "aclrtValueWrite: flag %u is reserved: 0", (unsigned)flag);
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_result(rdev_value_write(st, devAddr, value), "aclrtValueWrite");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

aclError aclrtValueWait(void *devAddr, uint64_t value, uint32_t flag, aclrtStream stream) {
  if (flag > ACL_STREAM_WAIT_VALUE_NOR) return fail(ACL_ERROR_INVALID_PARAM, "aclrtValueWait: unknown flag %u", flag);
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_result(rdev_value_wait(st, devAddr, value, (rdev_value_wait_t)flag, 0), "aclrtValueWait");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

__attribute__((constructor)) static void acl_contexts_init(void) {
  for (int d = 0; d < 64; d++) default_ctx[d].dev = d;
}
