/*
 * tests/acl_double/acl_double_mem.c — the double's device and host memory,
 * copies and memsets (see acl_double.c): device memory is the sim's,
 * unmapped, at 2^60 and above; aclrtMallocHost blocks are recorded as
 * "pinned", the only host memory an async copy may use; a copy's kind must
 * match its pointers; every device side must be the current device's.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "acl_double.h"

/* ---- memory ------------------------------------------------------------------ */

/* The device whose memory p is, or -1 for host memory. */
static int dev_of(rdev_rt_t *rt, const void *p) {
  void *base;
  size_t size;
  int dev;
  return rdev_rt_mem_lookup(rt, p, &base, &size, &dev) == RDEV_OK ? dev : -1;
}

/* A device side of a copy or memset: memory of the current device. */
static aclError check_dev_side(const dbl_call_t *c, const void *p, int dev, const char *what, const char *fn) {
  if (dev != c->dev)
    return dbl_fail(ACL_ERROR_RT_PARAM_INVALID, "%s: %s %p is memory of device %d, the current context is on device %d",
                    fn, what, p, dev, c->dev);
  return ACL_SUCCESS;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  unsigned page = (unsigned)policy & 0xff, flags = (unsigned)policy & ~0xffu;
  if (page > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P ||
      (flags &
       ~(unsigned)(ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_ACCESS_USER_SPACE_READONLY)))
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: unknown policy 0x%x", __func__, (unsigned)policy);
  /* the sim places every policy alike */
  if (!rc) rc = dbl_rt_result(rdev_rt_malloc(c.rt, c.dev, devPtr, size, RDEV_MEM_MALLOC_HUGE_FIRST), __func__);
  return dbl_leave(rc);
}

aclError aclrtFree(void *devPtr) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  void *base = NULL;
  size_t size;
  int dev = -1;
  if (rdev_rt_mem_lookup(c.rt, devPtr, &base, &size, &dev) || base != devPtr)
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not the start of a device allocation", __func__, devPtr);
  if (!rc) rc = check_dev_side(&c, devPtr, dev, "devPtr", __func__);
  if (!rc) rc = dbl_rt_result(rdev_rt_free(c.rt, devPtr), __func__);
  return dbl_leave(rc);
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  if (!hostPtr) rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: hostPtr is NULL", __func__);
  void *p = NULL;
  if (!rc) rc = dbl_rt_result(rdev_rt_malloc_host(c.rt, &p, size), __func__);
  if (!rc) {
    pthread_mutex_lock(&dbl.mu);
    if (dbl.nhost == dbl.cap_host) {
      size_t cap = dbl.cap_host ? 2 * dbl.cap_host : 64;
      dbl_host_block_t *a = realloc(dbl.host, cap * sizeof *a);
      if (a) dbl.host = a, dbl.cap_host = cap;
    }
    if (dbl.nhost < dbl.cap_host)
      dbl.host[dbl.nhost++] = (dbl_host_block_t){p, size};
    else
      rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__);
    pthread_mutex_unlock(&dbl.mu);
    if (rc)
      rdev_rt_free_host(c.rt, p);
    else
      *hostPtr = p;
  }
  return dbl_leave(rc);
}

aclError aclrtFreeHost(void *hostPtr) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  size_t i = 0;
  while (i < dbl.nhost && dbl.host[i].p != hostPtr) i++;
  if (!hostPtr || i == dbl.nhost)
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not an aclrtMallocHost block", __func__, hostPtr);
  else
    dbl.host[i] = dbl.host[--dbl.nhost];
  pthread_mutex_unlock(&dbl.mu);
  if (!rc) rc = dbl_rt_result(rdev_rt_free_host(c.rt, hostPtr), __func__);
  return dbl_leave(rc);
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  if ((unsigned)attr > ACL_HBM_MEM_NORMAL) /* every kind is the device's one memory */
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: unknown memory kind %d", __func__, (int)attr);
  if (!rc) rc = dbl_rt_result(rdev_rt_mem_info(c.rt, c.dev, free, total), __func__);
  return dbl_leave(rc);
}

static const char *kind_name(aclrtMemcpyKind k) {
  static const char *names[] = {"H2H", "H2D", "D2H", "D2D", "DEFAULT"};
  return (unsigned)k <= ACL_MEMCPY_DEFAULT ? names[k] : "?";
}

/* The double's rules of a copy, before the runtime's own (ranges, alignment):
 * the kind matches the pointers, device sides are the current device's and,
 * async, host sides lie in aclrtMallocHost blocks. count 0 is a no-op. */
static aclError check_copy(const dbl_call_t *c, void *dst, size_t destMax, const void *src, size_t count,
                           aclrtMemcpyKind *kind, int async, const char *fn) {
  if ((unsigned)*kind > ACL_MEMCPY_DEFAULT)
    return dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: copy kind %d", fn, (int)*kind);
  if (count > destMax)
    return dbl_fail(ACL_ERROR_RT_PARAM_INVALID, "%s: count %zu exceeds destMax %zu", fn, count, destMax);
  if (count == 0) return ACL_SUCCESS;
  if (!dst || !src) return dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", fn, dst ? "src" : "dst");
  int dd = dev_of(c->rt, dst), sd = dev_of(c->rt, src);
  if (*kind == ACL_MEMCPY_DEFAULT) /* inferred from the pointers, as CANN with unified addressing */
    *kind = dd >= 0 ? (sd >= 0 ? ACL_MEMCPY_DEVICE_TO_DEVICE : ACL_MEMCPY_HOST_TO_DEVICE)
                    : (sd >= 0 ? ACL_MEMCPY_DEVICE_TO_HOST : ACL_MEMCPY_HOST_TO_HOST);
  int want_dd = *kind == ACL_MEMCPY_HOST_TO_DEVICE || *kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  int want_sd = *kind == ACL_MEMCPY_DEVICE_TO_HOST || *kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (want_dd != (dd >= 0) || want_sd != (sd >= 0))
    return dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: a %s copy with dst %p (%s memory) and src %p (%s memory)", fn,
                    kind_name(*kind), dst, dd >= 0 ? "device" : "host", src, sd >= 0 ? "device" : "host");
  aclError rc = ACL_SUCCESS;
  if (want_dd) rc = check_dev_side(c, dst, dd, "dst", fn);
  if (!rc && want_sd) rc = check_dev_side(c, src, sd, "src", fn);
  if (rc || !async) return rc;
  pthread_mutex_lock(&dbl.mu);
  if ((!want_dd && dbl_host_block(dst, count) < 0) || (!want_sd && dbl_host_block(src, count) < 0))
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: the host side of an async copy must be aclrtMallocHost memory", fn);
  pthread_mutex_unlock(&dbl.mu);
  return rc;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  if (!(rc = check_copy(&c, dst, destMax, src, count, &kind, 0, __func__)))
    rc = dbl_rt_result(rdev_rt_memcpy(c.rt, dst, destMax, src, count, (rdev_memcpy_kind_t)kind), __func__);
  return dbl_leave(rc);
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  dbl_call_t c;
  dbl_obj_t *s = NULL;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  rc = dbl_stream_pin(&c, stream, &s, __func__);
  pthread_mutex_unlock(&dbl.mu);
  if (!rc && !(rc = check_copy(&c, dst, destMax, src, count, &kind, 1, __func__)))
    rc =
        dbl_rt_result(rdev_rt_memcpy_async(c.rt, dst, destMax, src, count, (rdev_memcpy_kind_t)kind, s->u.s), __func__);
  dbl_unpin(s);
  return dbl_leave(rc);
}

/* The double's rules of a memset: device memory of the current device. */
static aclError check_memset(const dbl_call_t *c, void *devPtr, size_t maxCount, size_t count, const char *fn) {
  if (count > maxCount)
    return dbl_fail(ACL_ERROR_RT_PARAM_INVALID, "%s: count %zu exceeds maxCount %zu", fn, count, maxCount);
  if (count == 0) return ACL_SUCCESS;
  int dev = dev_of(c->rt, devPtr);
  if (dev < 0) return dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr %p is not device memory", fn, devPtr);
  return check_dev_side(c, devPtr, dev, "devPtr", fn);
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  if (!(rc = check_memset(&c, devPtr, maxCount, count, __func__)))
    rc = dbl_rt_result(rdev_rt_memset(c.rt, devPtr, maxCount, value, count), __func__);
  return dbl_leave(rc);
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
  dbl_call_t c;
  dbl_obj_t *s = NULL;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  rc = dbl_stream_pin(&c, stream, &s, __func__);
  pthread_mutex_unlock(&dbl.mu);
  if (!rc && !(rc = check_memset(&c, devPtr, maxCount, count, __func__)))
    rc = dbl_rt_result(rdev_rt_memset_async(c.rt, devPtr, maxCount, value, count, s->u.s), __func__);
  dbl_unpin(s);
  return dbl_leave(rc);
}
