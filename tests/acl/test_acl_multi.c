/*
 * tests/acl/test_acl_multi.c — a CANN-style program over two rdevd at once
 * (RDEV_TARGET=A,B; run_acl_multi.py starts A with 2 devices, B with 1 of
 * 48 MiB): written only against the acl headers and linked against
 * libascendcl.so. aclrtGetDeviceCount sees 3; memory on device 0 (A) is
 * copied with aclrtMemcpy ACL_MEMCPY_DEVICE_TO_DEVICE to device 2 (B) and
 * back, at 20 MiB + 13 bytes and 13 bytes, random data checked byte for
 * byte, the bytes after each copy untouched; aclrtMemcpyAsync between them
 * on either server's stream; device 2's memory info is B's.
 *
 *   test_acl_multi basic     the above
 *   test_acl_multi ordered   synchronous copies and memsets of device 2's
 *                            memory while work is queued on a stream of
 *                            device 0 (aclrtMemcpy orders itself after the
 *                            thread's device's queued work)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

#define MiB ((size_t)1 << 20)
#define PAD 64
#define GUARD 0xEE

static void fill_random(unsigned char *p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (unsigned char)(x >> 24);
  }
}

/* Reads dev[0, n + PAD) back (n + PAD must fit): want at [0, n), GUARD after. */
static void check_dev(const void *dev, const unsigned char *want, size_t n, const char *what) {
  unsigned char *back = malloc(n + PAD);
  if (!back) {
    CHECK(back != NULL);
    return;
  }
  memset(back, 0, n + PAD);
  CHECK_RET(aclrtMemcpy(back, n + PAD, dev, n + PAD, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  size_t bad = n + PAD;
  for (size_t i = 0; i < n + PAD && bad == n + PAD; i++)
    if (back[i] != (i < n ? want[i] : GUARD)) bad = i;
  if (bad != n + PAD) {
    fprintf(stderr, "%s: byte %zu of %zu (+%d guard) differs: 0x%02x, want 0x%02x\n", what, bad, n, PAD, back[bad],
            bad < n ? want[bad] : GUARD);
    failures++;
  }
  free(back);
}

static void *dev_malloc(int32_t dev, size_t n) {
  void *p = NULL;
  CHECK_RET(aclrtSetDevice(dev), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK(p != NULL);
  return p;
}

static int basic(void) {
  const size_t n = 20 * MiB + 13, tiny = 13;
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count == 3);
  if (count != 3) return 1;
  unsigned char *data = malloc(n), *data2 = malloc(n);
  if (!data || !data2) return 1;
  fill_random(data, n, 1);
  fill_random(data2, n, 2);

  void *d0 = dev_malloc(0, n + PAD), *d1 = dev_malloc(1, n + PAD), *d2 = dev_malloc(2, n + PAD);
  if (!d0 || !d1 || !d2) return 1;
  size_t fr = 0, total = 0;
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &fr, &total), ACL_SUCCESS); /* device 2: B's */
  CHECK(total == 48 * MiB);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &fr, &total), ACL_SUCCESS);
  CHECK(total != 48 * MiB);
  CHECK_RET(aclrtMemset(d0, n + PAD, GUARD, n + PAD), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(d1, n + PAD, GUARD, n + PAD), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(d2, n + PAD, GUARD, n + PAD), ACL_SUCCESS);

  /* device 0 (A) -> device 2 (B), then B -> device 1 (A) */
  CHECK_RET(aclrtMemcpy(d0, n, data, n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d2, n + PAD, d0, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  check_dev(d2, data, n, "device 0 -> device 2");
  CHECK_RET(aclrtMemcpy(d1, n + PAD, d2, n, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  check_dev(d1, data, n, "device 2 -> device 1");
  /* tiny, the other way, current device 2 */
  CHECK_RET(aclrtSetDevice(2), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d2, n + PAD, data2, tiny, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d0, n + PAD, d2, tiny, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  memcpy(data, data2, tiny);
  check_dev(d0, data, n, "13 bytes device 2 -> device 0");

  /* async, on a stream of device 2 (the destination's) and of device 0 (the source's) */
  aclrtStream s2 = NULL, s0 = NULL;
  CHECK_RET(aclrtCreateStream(&s2), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d0, n, data2, n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(d2, n + PAD, d0, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s2), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s2), ACL_SUCCESS);
  check_dev(d2, data2, n, "async device 0 -> device 2 on device 2's stream");
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&s0), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d2, n, data, n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(d0, n + PAD, d2, n, ACL_MEMCPY_DEVICE_TO_DEVICE, s0), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s0), ACL_SUCCESS);
  check_dev(d0, data, n, "async device 2 -> device 0 on device 0's stream");
  CHECK_RET(aclrtDestroyStream(s0), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(2), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(s2), ACL_SUCCESS);

  CHECK_RET(aclrtSetDevice(5), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtFree(d0), ACL_SUCCESS);
  CHECK_RET(aclrtFree(d1), ACL_SUCCESS);
  CHECK_RET(aclrtFree(d2), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(2), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
  free(data);
  free(data2);
  return 0;
}

static int ordered(void) {
  const size_t n = 3 * MiB + 5;
  unsigned char *data = malloc(n), *back = malloc(n);
  if (!data || !back) return 1;
  fill_random(data, n, 3);
  void *d2 = dev_malloc(2, n), *d0 = dev_malloc(0, n);
  if (!d0 || !d2) return 1;
  aclrtStream s0 = NULL;
  CHECK_RET(aclrtCreateStream(&s0), ACL_SUCCESS);
  /* work queued on device 0's stream, not yet synchronized */
  CHECK_RET(aclrtMemsetAsync(d0, n, 0x21, n, s0), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d2, n, data, n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(d0, n, 0x22, n, s0), ACL_SUCCESS);
  memset(back, 0, n);
  CHECK_RET(aclrtMemcpy(back, n, d2, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(memcmp(back, data, n) == 0);
  CHECK_RET(aclrtMemsetAsync(d0, n, 0x23, n, s0), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(d2, n, 0x24, 16), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s0), ACL_SUCCESS);
  memset(back, 0, n);
  CHECK_RET(aclrtMemcpy(back, n, d2, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  memset(data, 0x24, 16);
  CHECK(memcmp(back, data, n) == 0);
  CHECK_RET(aclrtDestroyStream(s0), ACL_SUCCESS);
  CHECK_RET(aclrtFree(d0), ACL_SUCCESS);
  CHECK_RET(aclrtFree(d2), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
  free(data);
  free(back);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "basic") != 0 && strcmp(argv[1], "ordered") != 0)) {
    fprintf(stderr, "usage: %s basic|ordered\n", argv[0]);
    return 2;
  }
  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  if (failures) return 1;
  int rc = strcmp(argv[1], "basic") == 0 ? basic() : ordered();
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s %s: %s\n", argv[0], argv[1], rc || failures ? "FAILED" : "OK");
  return rc || failures ? 1 : 0;
}
