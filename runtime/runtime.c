/*
 * runtime/runtime.c — the runtime's generic layer: opens a backend by name,
 * validates every call the way the CANN runtime does (null and range checks,
 * count/destMax, copy directions; kernel launches in kernels.c), and
 * hands validated work to the backend table. Backends never see unchecked
 * input, so a check written here holds for every backend.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_engine.h"

/* ---- open / close -------------------------------------------------------- */

static const rt_backend_t *const rt_backends[] = {&rt_sim_backend, &rt_acl_backend};

int rdev_rt_open(const rdev_rt_config_t *cfg, rdev_rt_t **out) {
  rt_clear_error();
  static const rdev_rt_config_t defaults = {0};
  if (!out) return rt_fail(RDEV_INVALID_PARAM, "out is NULL");
  *out = NULL;
  if (!cfg) cfg = &defaults;
  const char *name = cfg->backend ? cfg->backend : "sim";
  const rt_backend_t *be = NULL;
  for (size_t i = 0; i < sizeof rt_backends / sizeof rt_backends[0]; i++)
    if (strcmp(rt_backends[i]->name, name) == 0) be = rt_backends[i];
  if (!be) return rt_fail(RDEV_API_NOT_SUPPORT, "unknown backend '%s' (this build has: sim, acl)", name);
  rdev_rt_t *rt = calloc(1, sizeof *rt);
  if (!rt) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  rt->be = be;
  int rc = be->open(rt, cfg, &rt->impl);
  if (rc != RDEV_OK) {
    free(rt);
    return rc;
  }
  rc = rt_engine_open(rt, be->device_count(rt->impl), cfg->stream_depth, cfg->slots, &rt->eng);
  if (rc != RDEV_OK) {
    be->close(rt->impl);
    free(rt);
    return rc;
  }
  rt->eng->task_done = cfg->task_done;
  rt->eng->task_done_user = cfg->task_done_user;
  rt_staging_init(rt);
  *out = rt;
  return RDEV_OK;
}

void rdev_rt_close(rdev_rt_t *rt) {
  if (!rt) return;
  rt_engine_stop(rt->eng); /* cancelled callbacks may still put staging back */
  rt_staging_close(rt);
  rt_engine_close(rt->eng);
  rt->be->close(rt->impl);
  free(rt);
}

const char *rdev_rt_backend_name(const rdev_rt_t *rt) { return rt ? rt->be->name : "none"; }

/* ---- devices ------------------------------------------------------------- */

static int check_dev(rdev_rt_t *rt, int dev) {
  if (!rt) return rt_fail(RDEV_INVALID_PARAM, "runtime is NULL");
  int n = rt->be->device_count(rt->impl);
  if (dev < 0 || dev >= n)
    return rt_fail(RDEV_RT_INVALID_DEVICEID, "device %d does not exist (devices: 0..%d)", dev, n - 1);
  return RDEV_OK;
}

int rdev_rt_device_count(rdev_rt_t *rt, int *count) {
  rt_clear_error();
  if (!rt || !count) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  *count = rt->be->device_count(rt->impl);
  return RDEV_OK;
}

int rdev_rt_device_info(rdev_rt_t *rt, int dev, rdev_rt_device_info_t *info) {
  rt_clear_error();
  int rc = check_dev(rt, dev);
  if (rc) return rc;
  if (!info) return rt_fail(RDEV_INVALID_PARAM, "info is NULL");
  return rt->be->device_info(rt->impl, dev, info);
}

int rdev_rt_mem_info(rdev_rt_t *rt, int dev, size_t *free_bytes, size_t *total_bytes) {
  rdev_rt_device_info_t info;
  int rc = rdev_rt_device_info(rt, dev, &info);
  if (rc) return rc;
  if (!free_bytes || !total_bytes) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  *free_bytes = info.free_bytes;
  *total_bytes = info.total_bytes;
  return RDEV_OK;
}

/* ---- memory -------------------------------------------------------------- */

size_t rdev_rt_mem_reserved_size(size_t size) { return rdev_mem_reserved_size(size); }

static int malloc_in(rdev_rt_t *rt, rdev_rt_space_t *sp, int dev, void **dptr, size_t size, rdev_mem_policy_t policy) {
  rt_clear_error();
  int rc = check_dev(rt, dev);
  if (rc) return rc;
  if (!dptr) return rt_fail(RDEV_INVALID_PARAM, "dptr is NULL");
  *dptr = NULL;
  if ((unsigned)policy > RDEV_MEM_MALLOC_NORMAL_ONLY_P2P)
    return rt_fail(RDEV_INVALID_PARAM, "unknown malloc policy %d", (int)policy);
  if (size == 0) return rt_fail(RDEV_INVALID_PARAM, "size 0 cannot be allocated");
  size_t reserved = rdev_rt_mem_reserved_size(size);
  if (reserved == 0) return rt_fail(RDEV_RT_DEVICE_OOM, "size %zu overflows", size);
  return rt->be->malloc(rt->impl, sp, dev, dptr, size, reserved);
}

int rdev_rt_malloc(rdev_rt_t *rt, int dev, void **dptr, size_t size, rdev_mem_policy_t policy) {
  return malloc_in(rt, NULL, dev, dptr, size, policy);
}

int rdev_rt_malloc_in(rdev_rt_space_t *sp, int dev, void **dptr, size_t size, rdev_mem_policy_t policy) {
  if (!sp) {
    rt_clear_error();
    return rt_fail(RDEV_INVALID_PARAM, "address space is NULL");
  }
  return malloc_in(sp->rt, sp, dev, dptr, size, policy);
}

int rdev_rt_space_create(rdev_rt_t *rt, rdev_rt_space_t **sp) {
  rt_clear_error();
  if (!rt || !sp) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  *sp = NULL;
  return rt->be->space_create(rt->impl, sp);
}

void rdev_rt_space_destroy(rdev_rt_space_t *sp) {
  if (sp) sp->rt->be->space_destroy(sp);
}

int rdev_rt_space_range(const rdev_rt_space_t *sp, int dev, uint64_t *base, uint64_t *size) {
  rt_clear_error();
  if (!sp || !base || !size) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  int rc = check_dev(sp->rt, dev);
  if (rc) return rc;
  if (!sp->rt->be->space_range)
    return rt_fail(RDEV_API_NOT_SUPPORT, "the %s backend's address spaces are not address ranges", sp->rt->be->name);
  sp->rt->be->space_range(sp, dev, base, size);
  return RDEV_OK;
}

int rdev_rt_free(rdev_rt_t *rt, void *dptr) {
  rt_clear_error();
  if (!rt || !dptr) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  return rt->be->free(rt->impl, dptr);
}

int rdev_rt_mem_lookup(rdev_rt_t *rt, const void *p, void **base, size_t *size, int *dev) {
  rt_clear_error();
  if (!rt || !base || !size || !dev) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  if (rt->be->lookup(rt->impl, p, base, size, dev) != RDEV_OK)
    return rt_fail(RDEV_INVALID_PARAM, "%p is not inside a device allocation", p);
  return RDEV_OK;
}

int rdev_rt_malloc_host(rdev_rt_t *rt, void **ptr, size_t size) {
  rt_clear_error();
  if (!rt || !ptr) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  *ptr = NULL;
  if (size == 0) return rt_fail(RDEV_INVALID_PARAM, "size 0 cannot be allocated");
  return rt->be->malloc_host(rt->impl, ptr, size);
}

int rdev_rt_free_host(rdev_rt_t *rt, void *p) {
  rt_clear_error();
  if (!rt || !p) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  return rt->be->free_host(rt->impl, p);
}

/* The allocation holding p, looked up once per pointer of a call. */
typedef struct {
  void *base;
  size_t size;
  int dev;
  int found; /* 0: p is not device memory */
} rt_alloc_t;

static rt_alloc_t find_alloc(rdev_rt_t *rt, const void *p) {
  rt_alloc_t a = {0};
  a.found = rt->be->lookup(rt->impl, p, &a.base, &a.size, &a.dev) == RDEV_OK;
  return a;
}

/* The device side of a copy or memset: n bytes at p must lie in allocation a. */
static int check_range(const rt_alloc_t *a, const void *p, size_t n, const char *what) {
  if (!a->found) return rt_fail(RDEV_INVALID_PARAM, "%s %p is not device memory", what, p);
  size_t off = (size_t)((const char *)p - (const char *)a->base);
  if (n > a->size - off)
    return rt_fail(RDEV_INVALID_PARAM, "%s: %zu bytes at offset %zu run past the end of a %zu-byte allocation", what, n,
                   off, a->size);
  return RDEV_OK;
}

static const char *kind_name(rdev_memcpy_kind_t k) {
  static const char *names[] = {"H2H", "H2D", "D2H", "D2D", "DEFAULT"};
  return (unsigned)k <= RDEV_MEMCPY_DEFAULT ? names[k] : "?";
}

/* Validates a copy. Returns RDEV_OK with *kind resolved (DEFAULT inferred),
 * or an error; *noop = 1 for count 0. */
static int check_copy(rdev_rt_t *rt, void *dst, size_t dest_max, const void *src, size_t count,
                      rdev_memcpy_kind_t *kind, int *noop) {
  *noop = 0;
  if (!rt) return rt_fail(RDEV_INVALID_PARAM, "runtime is NULL");
  if ((unsigned)*kind > RDEV_MEMCPY_DEFAULT) return rt_fail(RDEV_INVALID_PARAM, "unknown copy kind %d", (int)*kind);
  if (count > dest_max) return rt_fail(RDEV_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", count, dest_max);
  if (count == 0) {
    *noop = 1;
    return RDEV_OK;
  }
  if (!dst || !src) return rt_fail(RDEV_INVALID_PARAM, "NULL %s", dst ? "src" : "dst");
  rt_alloc_t da = find_alloc(rt, dst), sa = find_alloc(rt, src);
  int dst_dev = da.found, src_dev = sa.found;
  if (*kind == RDEV_MEMCPY_DEFAULT)
    *kind = dst_dev ? (src_dev ? RDEV_MEMCPY_DEVICE_TO_DEVICE : RDEV_MEMCPY_HOST_TO_DEVICE)
                    : (src_dev ? RDEV_MEMCPY_DEVICE_TO_HOST : RDEV_MEMCPY_HOST_TO_HOST);
  int want_dst = *kind == RDEV_MEMCPY_HOST_TO_DEVICE || *kind == RDEV_MEMCPY_DEVICE_TO_DEVICE;
  int want_src = *kind == RDEV_MEMCPY_DEVICE_TO_HOST || *kind == RDEV_MEMCPY_DEVICE_TO_DEVICE;
  if (want_dst != dst_dev)
    return rt_fail(RDEV_INVALID_PARAM, "%s copy: dst %p is %s memory", kind_name(*kind), dst,
                   dst_dev ? "device" : "not device");
  if (want_src != src_dev)
    return rt_fail(RDEV_INVALID_PARAM, "%s copy: src %p is %s memory", kind_name(*kind), src,
                   src_dev ? "device" : "not device");
  int rc;
  if (want_dst && (rc = check_range(&da, dst, count, "dst"))) return rc;
  if (want_src && (rc = check_range(&sa, src, count, "src"))) return rc;
  if (*kind == RDEV_MEMCPY_DEVICE_TO_DEVICE && (((uintptr_t)dst | (uintptr_t)src) & (RDEV_RT_MEM_ALIGN - 1)))
    return rt_fail(RDEV_MEMORY_ADDRESS_UNALIGNED, "D2D copy needs 64-byte-aligned addresses (dst %p, src %p)", dst,
                   src);
  return RDEV_OK;
}

int rdev_rt_memcpy(rdev_rt_t *rt, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind) {
  rt_clear_error();
  int noop, rc = check_copy(rt, dst, dest_max, src, count, &kind, &noop);
  if (rc || noop) return rc;
  return rt->be->copy(rt->impl, dst, src, count, kind);
}

const void *rdev_rt_host_view(rdev_rt_t *rt, const void *dptr, size_t n) {
  rt_clear_error();
  if (!rt || !n || !rt->be->host_view) return NULL;
  rt_alloc_t a = find_alloc(rt, dptr);
  if (check_range(&a, dptr, n, "view")) return NULL;
  return rt->be->host_view(rt->impl, dptr, n);
}

int rt_check_stream(rdev_rt_t *rt, rdev_rt_stream_t *s) {
  if (!s) return rt_fail(RDEV_INVALID_RESOURCE_HANDLE, "stream is NULL");
  if (rt && s->rt != rt) return rt_fail(RDEV_INVALID_RESOURCE_HANDLE, "stream of another runtime");
  return RDEV_OK;
}

int rdev_rt_memcpy_async(rdev_rt_t *rt, void *dst, size_t dest_max, const void *src, size_t count,
                         rdev_memcpy_kind_t kind, rdev_rt_stream_t *s) {
  rt_clear_error();
  int noop, rc = rt_check_stream(rt, s);
  if (rc) return rc;
  if ((rc = check_copy(rt, dst, dest_max, src, count, &kind, &noop)) || noop) return rc;
  rt_task_t t = {.op = RT_TASK_COPY};
  t.u.mem.dst = dst;
  t.u.mem.src = src;
  t.u.mem.n = count;
  t.u.mem.kind = kind;
  return rt_engine_submit(s, &t);
}

/* Validates a gather: pieces of host memory, count bytes in all, to dst.
 * *count gets the total; 0 is a no-op success. */
static int check_gather(rdev_rt_t *rt, void *dst, size_t dest_max, const rdev_rt_iov_t *iov, int n, size_t *count) {
  *count = 0;
  if (!rt) return rt_fail(RDEV_INVALID_PARAM, "runtime is NULL");
  if (n < 0 || (n && !iov)) return rt_fail(RDEV_INVALID_PARAM, "%d pieces at %p", n, (const void *)iov);
  for (int i = 0; i < n; i++) {
    if (!iov[i].base) return rt_fail(RDEV_INVALID_PARAM, "NULL src piece %d", i);
    if (iov[i].len > SIZE_MAX - *count) return rt_fail(RDEV_RT_PARAM_INVALID, "the pieces' sizes overflow");
    *count += iov[i].len;
    if (find_alloc(rt, iov[i].base).found)
      return rt_fail(RDEV_INVALID_PARAM, "H2D copy: src piece %d at %p is device memory", i, iov[i].base);
  }
  if (*count > dest_max) return rt_fail(RDEV_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", *count, dest_max);
  if (*count == 0) return RDEV_OK;
  if (!dst) return rt_fail(RDEV_INVALID_PARAM, "NULL dst");
  rt_alloc_t da = find_alloc(rt, dst);
  return check_range(&da, dst, *count, "dst");
}

int rdev_rt_memcpy_gather(rdev_rt_t *rt, void *dst, size_t dest_max, const rdev_rt_iov_t *iov, int n) {
  rt_clear_error();
  size_t count;
  int rc = check_gather(rt, dst, dest_max, iov, n, &count);
  char *d = dst;
  for (int i = 0; i < n && !rc && count; d += iov[i].len, i++)
    if (iov[i].len) rc = rt->be->copy(rt->impl, d, iov[i].base, iov[i].len, RDEV_MEMCPY_HOST_TO_DEVICE);
  return rc;
}

int rdev_rt_memcpy_gather_async(rdev_rt_t *rt, void *dst, size_t dest_max, const rdev_rt_iov_t *iov, int n,
                                rdev_rt_stream_t *s) {
  rt_clear_error();
  size_t count;
  int rc = rt_check_stream(rt, s);
  if (rc || (rc = check_gather(rt, dst, dest_max, iov, n, &count)) || !count) return rc;
  rt_task_t t = {.op = RT_TASK_GATHER};
  t.u.gather.dst = dst;
  t.u.gather.iov = iov;
  t.u.gather.n = n;
  return rt_engine_submit(s, &t);
}

static int check_memset(rdev_rt_t *rt, void *dptr, size_t dest_max, size_t count, int *noop) {
  *noop = 0;
  if (!rt) return rt_fail(RDEV_INVALID_PARAM, "runtime is NULL");
  if (count > dest_max) return rt_fail(RDEV_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", count, dest_max);
  if (count == 0) {
    *noop = 1;
    return RDEV_OK;
  }
  rt_alloc_t a = find_alloc(rt, dptr);
  return check_range(&a, dptr, count, "dst");
}

int rdev_rt_memset(rdev_rt_t *rt, void *dptr, size_t dest_max, int value, size_t count) {
  rt_clear_error();
  int noop, rc = check_memset(rt, dptr, dest_max, count, &noop);
  if (rc || noop) return rc;
  return rt->be->memset(rt->impl, dptr, value, count);
}

int rdev_rt_memset_async(rdev_rt_t *rt, void *dptr, size_t dest_max, int value, size_t count, rdev_rt_stream_t *s) {
  rt_clear_error();
  int noop, rc = rt_check_stream(rt, s);
  if (rc) return rc;
  if ((rc = check_memset(rt, dptr, dest_max, count, &noop)) || noop) return rc;
  rt_task_t t = {.op = RT_TASK_MEMSET};
  t.u.mem.dst = dptr;
  t.u.mem.value = value;
  t.u.mem.n = count;
  return rt_engine_submit(s, &t);
}

/* ---- stream memory operations -------------------------------------------- */

static int value_task(rdev_rt_stream_t *s, void *dptr, uint64_t value, uint32_t cond, uint32_t timeout_ms,
                      rt_task_op_t op) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  rt_alloc_t a = find_alloc(s->rt, dptr);
  if ((rc = check_range(&a, dptr, sizeof(uint64_t), "value address"))) return rc;
  if (a.dev != s->dev)
    return rt_fail(RDEV_INVALID_PARAM, "value address is memory of device %d, stream is on device %d", a.dev, s->dev);
  if ((uintptr_t)dptr % sizeof(uint64_t))
    return rt_fail(RDEV_MEMORY_ADDRESS_UNALIGNED, "value address %p is not 8-byte aligned", dptr);
  rt_task_t t = {.op = (uint8_t)op};
  t.u.value.addr = dptr;
  t.u.value.value = value;
  t.u.value.cond = cond;
  t.u.value.timeout_ms = timeout_ms;
  return rt_engine_submit(s, &t);
}

int rdev_rt_value_write(rdev_rt_stream_t *s, void *dptr, uint64_t value) {
  return value_task(s, dptr, value, 0, 0, RT_TASK_VALUE_WRITE);
}

int rdev_rt_value_wait(rdev_rt_stream_t *s, void *dptr, uint64_t value, rdev_value_cond_t cond, uint32_t timeout_ms) {
  if ((unsigned)cond > RDEV_VALUE_NOR) {
    rt_clear_error();
    return rt_fail(RDEV_INVALID_PARAM, "unknown value condition %d", (int)cond);
  }
  return value_task(s, dptr, value, (uint32_t)cond, timeout_ms, RT_TASK_VALUE_WAIT);
}

/* ---- streams ------------------------------------------------------------- */

int rdev_rt_stream_create(rdev_rt_t *rt, int dev, rdev_rt_stream_t **s) {
  rt_clear_error();
  int rc = check_dev(rt, dev);
  if (rc) return rc;
  if (!s) return rt_fail(RDEV_INVALID_PARAM, "s is NULL");
  *s = NULL;
  return rt_engine_stream_create(rt->eng, dev, s);
}

int rdev_rt_stream_destroy(rdev_rt_stream_t *s) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  return rc ? rc : rt_engine_stream_destroy(s, 0);
}

int rdev_rt_stream_destroy_force(rdev_rt_stream_t *s) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  return rc ? rc : rt_engine_stream_destroy(s, 1);
}

int rdev_rt_stream_abort(rdev_rt_stream_t *s) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  return rc ? rc : rt_engine_stream_abort(s);
}

int rdev_rt_stream_synchronize(rdev_rt_stream_t *s) { return rdev_rt_stream_synchronize_timeout(s, -1); }

int rdev_rt_stream_synchronize_timeout(rdev_rt_stream_t *s, int32_t timeout_ms) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  if (timeout_ms < -1) return rt_fail(RDEV_INVALID_PARAM, "timeout %d ms", (int)timeout_ms);
  return rt_engine_stream_sync(s, timeout_ms);
}

int rdev_rt_stream_run_quick(rdev_rt_stream_t *s, uint64_t budget_ns, int *ran) {
  rt_clear_error();
  if (ran) *ran = 0;
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  int all = rt_engine_stream_run_here(s, budget_ns);
  if (ran) *ran = all;
  return RDEV_OK;
}

/* The stream's unfinished tasks, the running one included, for query,
 * pending and idle; out is the caller's result pointer, checked here. */
static int stream_tasks(rdev_rt_stream_t *s, const void *out, size_t *tasks, int *in_callback, int *err) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  if (!out) return rt_fail(RDEV_INVALID_PARAM, "result pointer is NULL");
  *tasks = 0;
  *in_callback = 0;
  return rt_engine_stream_pending(s, tasks, in_callback, err);
}

int rdev_rt_stream_query(rdev_rt_stream_t *s, int *done) {
  size_t n;
  int in_cb, err, rc = stream_tasks(s, done, &n, &in_cb, &err);
  if (!rc) *done = n - (size_t)in_cb == 0;
  return rc;
}

int rdev_rt_stream_pending(rdev_rt_stream_t *s, size_t *tasks) {
  size_t n;
  int in_cb, err, rc = stream_tasks(s, tasks, &n, &in_cb, &err);
  if (!rc) *tasks = n - (size_t)in_cb;
  return rc;
}

int rdev_rt_stream_idle(rdev_rt_stream_t *s, int *idle) {
  size_t n;
  int in_cb, err, rc = stream_tasks(s, idle, &n, &in_cb, &err);
  if (!rc) *idle = n == 0;
  return rc;
}

void rdev_rt_batch_begin(void) { rt_engine_batch(1); }

void rdev_rt_batch_end(void) { rt_engine_batch(0); }

int rdev_rt_stream_vacant(rdev_rt_stream_t *s, int *vacant) {
  size_t n;
  int in_cb, err, rc = stream_tasks(s, vacant, &n, &in_cb, &err);
  if (!rc) *vacant = n == 0 && err == RDEV_OK;
  return rc;
}

int rdev_rt_stream_set_group(rdev_rt_stream_t *s, uint32_t group, uint32_t weight, uint32_t max_slots) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  if (weight < 1) return rt_fail(RDEV_INVALID_PARAM, "weight must be at least 1");
  return rt_engine_stream_set_group(s, group, weight, max_slots);
}

int rdev_rt_stream_discard(rdev_rt_stream_t *s) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  return rc ? rc : rt_engine_stream_discard(s);
}

int rdev_rt_stream_set_failure_mode(rdev_rt_stream_t *s, int stop) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  return rc ? rc : rt_engine_stream_set_failure_mode(s, stop);
}

int rdev_rt_stream_take_error(rdev_rt_stream_t *s) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  return rc ? rc : rt_engine_stream_take_error(s);
}

int rdev_rt_stream_device(const rdev_rt_stream_t *s) { return s ? s->dev : -1; }

int rdev_rt_launch_callback(rdev_rt_stream_t *s, rdev_rt_host_fn fn, void *user) {
  rt_clear_error();
  int rc = rt_check_stream(NULL, s);
  if (rc) return rc;
  if (!fn) return rt_fail(RDEV_INVALID_PARAM, "fn is NULL");
  rt_task_t t = {.op = RT_TASK_CALLBACK};
  t.u.cb.fn = fn;
  t.u.cb.user = user;
  return rt_engine_submit(s, &t);
}

/* ---- events -------------------------------------------------------------- */

static int check_event(rdev_rt_event_t *ev) {
  return ev ? RDEV_OK : rt_fail(RDEV_INVALID_RESOURCE_HANDLE, "event is NULL");
}

int rdev_rt_event_create(rdev_rt_t *rt, int dev, rdev_rt_event_t **ev) {
  rt_clear_error();
  int rc = check_dev(rt, dev);
  if (rc) return rc;
  if (!ev) return rt_fail(RDEV_INVALID_PARAM, "ev is NULL");
  *ev = NULL;
  return rt_engine_event_create(rt->eng, dev, ev);
}

int rdev_rt_event_destroy(rdev_rt_event_t *ev) {
  rt_clear_error();
  int rc = check_event(ev);
  return rc ? rc : rt_engine_event_destroy(ev);
}

/* Event work crosses streams only within one device (as CANN without IPC). */
static int event_task(rdev_rt_event_t *ev, rdev_rt_stream_t *s, rt_task_op_t op) {
  rt_clear_error();
  int rc = check_event(ev);
  if (rc || (rc = rt_check_stream(ev->rt, s))) return rc;
  if (ev->dev != s->dev)
    return rt_fail(RDEV_INVALID_PARAM, "event of device %d used on a stream of device %d", ev->dev, s->dev);
  rt_task_t t = {.op = (uint8_t)op};
  t.u.event.ev = ev;
  return rt_engine_submit(s, &t);
}

int rdev_rt_event_record(rdev_rt_event_t *ev, rdev_rt_stream_t *s) { return event_task(ev, s, RT_TASK_EVENT_RECORD); }

int rdev_rt_stream_wait_event(rdev_rt_stream_t *s, rdev_rt_event_t *ev) {
  return event_task(ev, s, RT_TASK_EVENT_WAIT);
}

int rdev_rt_event_synchronize(rdev_rt_event_t *ev, int32_t timeout_ms) {
  rt_clear_error();
  int rc = check_event(ev);
  if (rc) return rc;
  if (timeout_ms < -1) return rt_fail(RDEV_INVALID_PARAM, "timeout %d ms", (int)timeout_ms);
  rt_engine_batch_flush(); /* the event's record may be held back by this thread's batch */
  return rt_engine_event_sync(ev, timeout_ms);
}

int rdev_rt_event_timestamp(rdev_rt_event_t *ev, uint64_t *ns) {
  rt_clear_error();
  int rc = check_event(ev);
  if (rc) return rc;
  if (!ns) return rt_fail(RDEV_INVALID_PARAM, "ns is NULL");
  return rt_engine_event_timestamp(ev, ns);
}

int rdev_rt_event_query(rdev_rt_event_t *ev, int *done) {
  rt_clear_error();
  int rc = check_event(ev);
  if (rc) return rc;
  if (!done) return rt_fail(RDEV_INVALID_PARAM, "done is NULL");
  return rt_engine_event_query(ev, done);
}

int rdev_rt_event_elapsed_ms(float *ms, rdev_rt_event_t *start, rdev_rt_event_t *end) {
  rt_clear_error();
  int rc = check_event(start);
  if (rc || (rc = check_event(end))) return rc;
  if (!ms) return rt_fail(RDEV_INVALID_PARAM, "ms is NULL");
  if (start->rt != end->rt) return rt_fail(RDEV_INVALID_PARAM, "events of different runtimes");
  return rt_engine_event_elapsed(ms, start, end);
}

/* ---- faults -------------------------------------------------------------- */

int rdev_rt_fault_inject(rdev_rt_t *rt, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms) {
  rt_clear_error();
  int rc = check_dev(rt, dev);
  if (rc) return rc;
  if (kind < RDEV_FAULT_ALLOC || kind > RDEV_FAULT_HANG)
    return rt_fail(RDEV_INVALID_PARAM, "unknown fault kind %d", (int)kind);
  if (nth == 0) return rt_fail(RDEV_INVALID_PARAM, "nth must be 1 or more");
  return rt->be->fault_inject(rt->impl, dev, kind, nth, hang_ms);
}
