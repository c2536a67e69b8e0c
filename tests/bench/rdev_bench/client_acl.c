/*
 * tests/bench/rdev_bench/client_acl.c — the ACL library as rdev_bench drives
 * it (clients.h): rdev's libascendcl.so in this process, whose session
 * aclInit opens with $RDEV_TARGET (set here to the rdevd the bench
 * measures); aclrtMemcpy between one device buffer and plain malloc'd host
 * memory, touched once before, as a CANN program's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "baseline.h"
#include "clients.h"
#include "common.h"

struct cl_acl {
  void *dev;
  uint8_t *src, *dst; /* host, malloc'd, max_size each */
  size_t max_size;
};

static int acl_failed(const char *what, aclError rc) {
  const char *m = aclGetRecentErrMsg();
  return bl_fail("acl: %s: error %d%s%s", what, (int)rc, m ? ": " : "", m ? m : "");
}

int cl_acl_open(cl_acl_t **out, const char *addr, size_t max_size) {
  *out = NULL;
  if (setenv("RDEV_TARGET", addr, 1)) return bl_fail("acl: cannot set RDEV_TARGET");
  aclError rc = aclInit(NULL);
  if (rc) return acl_failed("aclInit", rc);
  cl_acl_t *a = calloc(1, sizeof *a);
  if (!a) return bl_fail("acl: out of memory");
  a->max_size = max_size;
  a->src = malloc(max_size);
  a->dst = malloc(max_size);
  if (!a->src || !a->dst) {
    free(a->src);
    free(a->dst);
    free(a);
    return bl_fail("acl: cannot allocate %zu host bytes", 2 * max_size);
  }
  fill_pattern(a->src, max_size, 77);
  memset(a->dst, 0x22, max_size);
  const char *what = NULL;
  if ((rc = aclrtSetDevice(0)))
    what = "aclrtSetDevice";
  else if ((rc = aclrtMalloc(&a->dev, max_size, ACL_MEM_MALLOC_HUGE_FIRST)))
    what = "aclrtMalloc";
  else if ((rc = aclrtMemset(a->dev, max_size, 0x33, max_size)))
    what = "aclrtMemset";
  if (what) {
    int r = acl_failed(what, rc); /* the bench ends on it: the session goes with the process */
    free(a->src);
    free(a->dst);
    free(a);
    return r;
  }
  *out = a;
  return 0;
}

int cl_acl_copy(cl_acl_t *a, int h2d, size_t size, long k, double *secs) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    aclError rc = h2d ? aclrtMemcpy(a->dev, a->max_size, a->src, size, ACL_MEMCPY_HOST_TO_DEVICE)
                      : aclrtMemcpy(a->dst, a->max_size, a->dev, size, ACL_MEMCPY_DEVICE_TO_HOST);
    if (rc) return acl_failed(h2d ? "aclrtMemcpy host to device" : "aclrtMemcpy device to host", rc);
  }
  *secs = now_s() - t0;
  return 0;
}

int cl_acl_verify(cl_acl_t *a, size_t size, uint64_t seed) {
  aclError rc;
  fill_pattern(a->src, size, seed);
  if ((rc = aclrtMemset(a->dev, a->max_size, 0xa5, size))) return acl_failed("aclrtMemset", rc);
  if ((rc = aclrtMemcpy(a->dev, a->max_size, a->src, size, ACL_MEMCPY_HOST_TO_DEVICE)))
    return acl_failed("aclrtMemcpy host to device", rc);
  memset(a->dst, 0x5a, size);
  if ((rc = aclrtMemcpy(a->dst, a->max_size, a->dev, size, ACL_MEMCPY_DEVICE_TO_HOST)))
    return acl_failed("aclrtMemcpy device to host", rc);
  if (memcmp(a->src, a->dst, size) == 0) return 0;
  size_t i = 0;
  while (a->src[i] == a->dst[i]) i++;
  return bl_fail("acl: aclrtMemcpy H2D+D2H of %zu bytes: data differ at byte %zu (sent 0x%02x, got 0x%02x)", size, i,
                 a->src[i], a->dst[i]);
}

int cl_acl_close(cl_acl_t *a) {
  if (!a) return 0;
  aclError rc = aclrtFree(a->dev), r2 = aclrtResetDevice(0), r3 = aclFinalize();
  free(a->src);
  free(a->dst);
  free(a);
  if (rc) return acl_failed("aclrtFree", rc);
  if (r2) return acl_failed("aclrtResetDevice", r2);
  if (r3) return acl_failed("aclFinalize", r3);
  return 0;
}
