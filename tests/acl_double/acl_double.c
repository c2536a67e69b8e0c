/*
 * tests/acl_double/acl_double.c — libacl_double.so, a strict test double of
 * the CANN runtime (ACL) for machines without an NPU: the ACL calls rdevd's
 * acl backend uses, with CANN's rules, over a private copy of rdev's own
 * runtime opened on the sim backend with unmapped device memory (device
 * addresses at 2^60 and above, never host addresses). What a lenient
 * backend gets away with on the sim fails here: device work without a
 * current context, memory or streams of another device, async copies from
 * host memory that aclrtMallocHost did not give, copy kinds that do not
 * match the pointers, stale or made-up handles.
 *
 * Handles are serial numbers, never pointers, and never reused: a handle
 * is looked up in the registry (under dbl.mu) before anything is done with
 * it. A call that uses a stream or a binary pins it (users) so that a
 * concurrent destroy waits for the call instead of freeing under it;
 * aclFinalize aborts every stream and waits for every call in flight.
 * The double-only entry points, the error-number choices and what the
 * files share are in acl_double.h. This file: the registries, errors and
 * call bookkeeping, aclInit/aclFinalize and the process calls, the
 * double's own entry points, contexts. acl_double_mem.c: memory, copies,
 * memsets. acl_double_stream.c: streams, kernel binaries, launches.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_double.h"

#define SOC_NAME "Ascend910B-double"
#define DEFAULT_DEVICES 2
#define DEFAULT_MEM ((size_t)256 << 20)

dbl_state_t dbl = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .serial = 0xacd00000};

static _Thread_local uint64_t t_ctx;  /* the calling thread's current context (its id), 0 none */
static _Thread_local char t_msg[512]; /* the thread's latest failure */
static _Thread_local char t_got[512]; /* what aclGetRecentErrMsg gave */

/* ---- registries ------------------------------------------------------------ */

void *dbl_handle(const dbl_obj_t *o) { return (void *)(uintptr_t)o->id; }

/* The live object of kind k whose handle is h, or NULL. Caller holds dbl.mu. */
dbl_obj_t *dbl_find(dbl_kind_t k, const void *h) {
  for (size_t i = 0; i < dbl.nobjs; i++)
    if (dbl.objs[i]->kind == k && dbl.objs[i]->id == (uint64_t)(uintptr_t)h && !dbl.objs[i]->dead) return dbl.objs[i];
  return NULL;
}

/* A new registered object, or NULL when out of host memory. Caller holds dbl.mu. */
dbl_obj_t *dbl_add(dbl_kind_t k, int dev) {
  if (dbl.nobjs == dbl.cap_objs) {
    size_t cap = dbl.cap_objs ? 2 * dbl.cap_objs : 64;
    dbl_obj_t **a = realloc(dbl.objs, cap * sizeof *a);
    if (!a) return NULL;
    dbl.objs = a;
    dbl.cap_objs = cap;
  }
  dbl_obj_t *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->kind = k;
  o->id = ++dbl.serial;
  o->dev = dev;
  dbl.objs[dbl.nobjs++] = o;
  return o;
}

/* Hides o from lookups, waits until no call uses it, then takes it out of
 * the registry; the caller then frees it. Meanwhile aclFinalize still sees
 * it (to abort a stream whose last call waits). Caller holds dbl.mu. */
void dbl_retire(dbl_obj_t *o) {
  o->dead = 1;
  while (o->users) pthread_cond_wait(&dbl.cv, &dbl.mu);
  for (size_t i = 0; i < dbl.nobjs; i++)
    if (dbl.objs[i] == o) {
      dbl.objs[i] = dbl.objs[--dbl.nobjs];
      break;
    }
}

void dbl_unpin(dbl_obj_t *o) {
  if (!o) return;
  pthread_mutex_lock(&dbl.mu);
  o->users--;
  pthread_cond_broadcast(&dbl.cv);
  pthread_mutex_unlock(&dbl.mu);
}

/* The aclrtMallocHost block holding [p, p + n), or -1. Caller holds dbl.mu. */
long dbl_host_block(const void *p, size_t n) {
  for (size_t i = 0; i < dbl.nhost; i++) {
    const char *b = dbl.host[i].p, *c = p;
    if (c >= b && c <= b + dbl.host[i].n && n <= (size_t)(b + dbl.host[i].n - c)) return (long)i;
  }
  return -1;
}

/* ---- errors ---------------------------------------------------------------- */

/* Records the thread's failure text and returns rc. */
aclError dbl_fail(aclError rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_msg, sizeof t_msg, fmt, ap);
  va_end(ap);
  return rc;
}

/* A runtime result: its numbers are CANN's, passed through; a failure's
 * text names the call and carries the runtime's detail. */
aclError dbl_rt_result(int rc, const char *fn) {
  if (rc == RDEV_OK) return ACL_SUCCESS;
  const char *detail = rdev_rt_last_error();
  return dbl_fail(rc, "%s: %s", fn, detail[0] ? detail : rdev_strerror(rc));
}

/* ---- calls ----------------------------------------------------------------- */

/* Starts a call: the runtime must be open (else 100001) and, with need_ctx,
 * the thread must have a live current context (else 107002). On success the
 * call is in flight until dbl_leave(). */
aclError dbl_enter(dbl_call_t *c, int need_ctx, const char *fn) {
  pthread_mutex_lock(&dbl.mu);
  aclError rc = ACL_SUCCESS;
  dbl_obj_t *ctx = need_ctx ? dbl_find(OBJ_CTX, (void *)(uintptr_t)t_ctx) : NULL;
  if (!dbl.rt || dbl.closing)
    rc = dbl_fail(ACL_ERROR_UNINITIALIZE, "%s: aclInit has not been called", fn);
  else if (need_ctx && !ctx)
    rc = dbl_fail(ACL_ERROR_RT_CONTEXT_NULL, "%s: the calling thread has no current context%s", fn,
                  t_ctx ? " (it was destroyed)" : " (aclrtCreateContext or aclrtSetCurrentContext first)");
  if (!rc) {
    dbl.inflight++;
    c->rt = dbl.rt;
    c->dev = ctx ? ctx->dev : -1;
  }
  pthread_mutex_unlock(&dbl.mu);
  return rc;
}

aclError dbl_leave(aclError rc) {
  pthread_mutex_lock(&dbl.mu);
  dbl.inflight--;
  pthread_cond_broadcast(&dbl.cv);
  pthread_mutex_unlock(&dbl.mu);
  return rc;
}

/* Resolves stream handle h for a call on device c->dev and pins it: unknown
 * is 100000, another device's 107003. Caller holds dbl.mu. */
aclError dbl_stream_pin(const dbl_call_t *c, const void *h, dbl_obj_t **out, const char *fn) {
  dbl_obj_t *o = dbl_find(OBJ_STREAM, h);
  if (!o) return dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live stream", fn, h);
  if (o->dev != c->dev)
    return dbl_fail(ACL_ERROR_RT_STREAM_CONTEXT, "%s: the stream is on device %d, the current context on device %d", fn,
                    o->dev, c->dev);
  o->users++;
  *out = o;
  return ACL_SUCCESS;
}

/* ---- process ------------------------------------------------------------- */

aclError aclInit(const char *configPath) {
  if (configPath && configPath[0]) {
    FILE *f = fopen(configPath, "r");
    if (!f) return dbl_fail(ACL_ERROR_INVALID_FILE, "aclInit: cannot read config file '%.256s'", configPath);
    fclose(f);
  }
  pthread_mutex_lock(&dbl.mu);
  aclError rc = ACL_SUCCESS;
  if (dbl.rt) {
    rc = dbl_fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (aclFinalize first)");
  } else {
    rdev_rt_config_t cfg = {.backend = "sim",
                            .sim_devices = dbl.devices ? dbl.devices : DEFAULT_DEVICES,
                            .sim_mem_bytes = dbl.mem_bytes ? dbl.mem_bytes : DEFAULT_MEM,
                            .sim_unmapped = 1};
    rc = dbl_rt_result(rdev_rt_open(&cfg, &dbl.rt), "aclInit");
    if (rc) dbl.rt = NULL;
  }
  pthread_mutex_unlock(&dbl.mu);
  return rc;
}

aclError aclFinalize(void) {
  pthread_mutex_lock(&dbl.mu);
  if (!dbl.rt || dbl.closing) {
    pthread_mutex_unlock(&dbl.mu);
    return dbl_fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit has not been called");
  }
  dbl.closing = 1; /* no new call starts; a running one ends: its stream's work is cut off */
  for (size_t i = 0; i < dbl.nobjs; i++)
    if (dbl.objs[i]->kind == OBJ_STREAM) rdev_rt_stream_abort(dbl.objs[i]->u.s);
  while (dbl.inflight) pthread_cond_wait(&dbl.cv, &dbl.mu);
  for (size_t i = 0; i < dbl.nobjs; i++) {
    dbl_obj_t *o = dbl.objs[i];
    if (o->kind == OBJ_STREAM) rdev_rt_stream_destroy_force(o->u.s);
    if (o->kind == OBJ_BIN) rdev_rt_binary_unload(o->u.bin);
    free(o);
  }
  for (size_t i = 0; i < dbl.nhost; i++) rdev_rt_free_host(dbl.rt, dbl.host[i].p);
  free(dbl.objs);
  free(dbl.host);
  dbl.objs = NULL;
  dbl.host = NULL;
  dbl.nobjs = dbl.cap_objs = dbl.nhost = dbl.cap_host = 0;
  rdev_rt_close(dbl.rt); /* device memory goes with it */
  dbl.rt = NULL;
  dbl.closing = 0;
  pthread_mutex_unlock(&dbl.mu);
  return ACL_SUCCESS;
}

/* Obtains and clears the text, as CANN; "" (not NULL) when there is none.
 * Valid until the thread's next call of it. */
const char *aclGetRecentErrMsg(void) {
  memcpy(t_got, t_msg, sizeof t_got);
  t_msg[0] = '\0';
  return t_got;
}

const char *aclrtGetSocName(void) {
  pthread_mutex_lock(&dbl.mu);
  const char *name = dbl.rt && !dbl.closing ? SOC_NAME : NULL;
  pthread_mutex_unlock(&dbl.mu);
  return name;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 0, __func__);
  if (rc) return rc;
  int n = 0;
  if (!count) rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: count is NULL", __func__);
  if (!rc && !(rc = dbl_rt_result(rdev_rt_device_count(c.rt, &n), __func__))) *count = (uint32_t)n;
  return dbl_leave(rc);
}

aclError acldoubleConfigure(int32_t devices, size_t mem_bytes) {
  pthread_mutex_lock(&dbl.mu);
  aclError rc = ACL_SUCCESS;
  if (dbl.rt)
    rc = dbl_fail(ACL_ERROR_REPEAT_INITIALIZE, "%s: only before aclInit", __func__);
  else if (devices < 0 || devices > 64 || (mem_bytes && (mem_bytes < 4096 || mem_bytes > ((size_t)1 << 40))))
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: devices must be 0..64 (got %d), mem_bytes 0 or 4096..1 TiB (got %zu)",
                  __func__, (int)devices, mem_bytes);
  if (!rc) {
    dbl.devices = devices;
    dbl.mem_bytes = mem_bytes;
  }
  pthread_mutex_unlock(&dbl.mu);
  return rc;
}

aclError acldoubleFaultInject(int32_t dev, int32_t kind, uint32_t nth, uint32_t hang_ms) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 0, __func__);
  if (rc) return rc;
  return dbl_leave(dbl_rt_result(rdev_rt_fault_inject(c.rt, dev, (rdev_fault_kind_t)kind, nth, hang_ms), __func__));
}

/* ---- contexts -------------------------------------------------------------- */

/* Whether ACL_DOUBLE_FAIL_DEVICE names dev (a number, or "all"). */
static int dev_setup_fails(int dev) {
  const char *v = getenv(ACL_DOUBLE_FAIL_DEVICE_ENV);
  if (!v || !v[0]) return 0;
  if (!strcmp(v, "all")) return 1;
  char *end;
  long n = strtol(v, &end, 10);
  return !*end && n == dev;
}

aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 0, __func__);
  if (rc) return rc;
  int n = 0;
  rdev_rt_device_count(c.rt, &n);
  if (!context)
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: context is NULL", __func__);
  else if (deviceId < 0 || deviceId >= n)
    rc = dbl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "%s: device %d does not exist (devices: 0..%d)", __func__,
                  (int)deviceId, n - 1);
  else if (dev_setup_fails(deviceId))
    rc = dbl_fail(ACL_ERROR_RT_DEV_SETUP_ERROR, "%s: device %d failed to set up (%s=%s)", __func__, (int)deviceId,
                  ACL_DOUBLE_FAIL_DEVICE_ENV, getenv(ACL_DOUBLE_FAIL_DEVICE_ENV));
  if (!rc) {
    pthread_mutex_lock(&dbl.mu);
    dbl_obj_t *o = dbl_add(OBJ_CTX, deviceId);
    if (o) {
      *context = dbl_handle(o);
      t_ctx = o->id;
    }
    pthread_mutex_unlock(&dbl.mu);
    if (!o) rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__);
  }
  return dbl_leave(rc);
}

aclError aclrtDestroyContext(aclrtContext context) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 0, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  dbl_obj_t *o = dbl_find(OBJ_CTX, context);
  if (o) {
    dbl_retire(o);
    if (t_ctx == o->id) t_ctx = 0;
    free(o);
  } else {
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live context", __func__, context);
  }
  pthread_mutex_unlock(&dbl.mu);
  return dbl_leave(rc);
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 0, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  dbl_obj_t *o = dbl_find(OBJ_CTX, context);
  if (o)
    t_ctx = o->id;
  else
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live context", __func__, context);
  pthread_mutex_unlock(&dbl.mu);
  return dbl_leave(rc);
}
