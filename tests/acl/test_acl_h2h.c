/*
 * tests/acl/test_acl_h2h.c — the host-to-host copy flow of the CANN
 * runtime's samples (example/1_basic_features/memory/0_h2h_memory_copy),
 * written only against the acl headers and linked against libascendcl.so:
 * two aclrtMallocHost blocks, a value written into one, aclrtMemcpy with
 * ACL_MEMCPY_HOST_TO_HOST into the other, and the value read back (the
 * sample's run.sh compares "Source data" with "Destination data"); then the
 * whole block, copies between aclrtMallocHost and ordinary memory, the
 * direction left to the pointers, aclrtMemset on aclrtMallocHost memory
 * (CANN: host or device, by address), a count past destMax, and the
 * asynchronous host-to-host copy CANN refuses on a host (EP) with
 * ACL_ERROR_RT_FEATURE_NOT_SUPPORT (one between two host pointers with the
 * direction left open must be refused too, or wait for the stream's earlier
 * work). Compiled as C and as C++
 * (test_acl_h2h.cpp); run by run_acl.py against a real rdevd.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  void *p = NULL;
  CHECK(aclrtMallocHost(&p, 4096) != ACL_SUCCESS);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const int32_t device = 0;
  const size_t size = (size_t)1 << 20;

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS);
  aclrtStream stream = NULL;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);

  /* the sample: one value, copied host to host */
  int *a = NULL, *b = NULL;
  CHECK_RET(aclrtMallocHost((void **)&a, size), ACL_SUCCESS);
  CHECK_RET(aclrtMallocHost((void **)&b, size), ACL_SUCCESS);
  if (!a || !b) {
    fprintf(stderr, "aclrtMallocHost failed: nothing to copy\n");
    return 1;
  }
  const int source = 123;
  *a = source;
  *b = 0;
  CHECK_RET(aclrtMemcpy(b, size, a, size, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  printf("Source data: %d\nDestination data: %d\n", source, *b);
  CHECK(*b == source);

  /* every byte of the block */
  unsigned char *ua = (unsigned char *)a, *ub = (unsigned char *)b;
  for (size_t i = 0; i < size; i++) ua[i] = (unsigned char)(i * 7u + (i >> 11));
  memset(ub, 0, size);
  CHECK_RET(aclrtMemcpy(ub, size, ua, size, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  CHECK(memcmp(ua, ub, size) == 0);

  /* with ordinary memory on either side, and with the direction left to the pointers */
  unsigned char *plain = (unsigned char *)malloc(size);
  CHECK(plain != NULL);
  if (plain) {
    memset(plain, 0, size);
    CHECK_RET(aclrtMemcpy(plain, size, ua, size, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
    CHECK(memcmp(plain, ua, size) == 0);
    for (size_t i = 0; i < size; i++) plain[i] = (unsigned char)~plain[i];
    CHECK_RET(aclrtMemcpy(ub, size, plain, size, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
    CHECK(memcmp(ub, plain, size) == 0);
    CHECK_RET(aclrtMemcpy(plain + 1, size - 1, ua, size - 2, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS); /* unaligned */
    CHECK(memcmp(plain + 1, ua, size - 2) == 0);
    free(plain);
  }

  /* a part of a block, and a count past destMax */
  memset(ub, 0xee, size);
  CHECK_RET(aclrtMemcpy(ub + 4096, 100, ua + 8192, 100, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  CHECK(memcmp(ub + 4096, ua + 8192, 100) == 0 && ub[4095] == 0xee && ub[4196] == 0xee);
  CHECK_RET(aclrtMemcpy(ub, 64, ua, 65, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
  CHECK(ub[0] == 0xee);

  /* aclrtMemset on aclrtMallocHost memory: the address says it is the host's */
  CHECK_RET(aclrtMemset(ua, size, 0x5a, size), ACL_SUCCESS);
  CHECK(ua[0] == 0x5a && ua[size / 2] == 0x5a && ua[size - 1] == 0x5a);

  /* CANN on a host (EP) has no asynchronous host-to-host copy */
  memset(ub, 0, 16);
  CHECK_RET(aclrtMemcpyAsync(ub, size, ua, 16, ACL_MEMCPY_HOST_TO_HOST, stream), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);

  /* nor may one with the direction left to two host pointers give what the
   * stream had not yet written: refused, or done in stream order */
  void *dev = NULL;
  unsigned char *plain2 = (unsigned char *)malloc(size);
  CHECK_RET(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (dev && plain2) {
    memset(ub, 0, size);
    memset(plain2, 0, size);
    CHECK_RET(aclrtMemsetAsync(dev, size, 0x5c, size, stream), ACL_SUCCESS);
    CHECK_RET(aclrtMemcpyAsync(ub, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS); /* queued */
    aclError r = aclrtMemcpyAsync(plain2, size, ub, size, ACL_MEMCPY_DEFAULT, stream);
    CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    CHECK(ub[0] == 0x5c && ub[size - 1] == 0x5c);
    CHECK(r == ACL_ERROR_RT_FEATURE_NOT_SUPPORT || (r == ACL_SUCCESS && plain2[0] == 0x5c && plain2[size - 1] == 0x5c));
    if (r == ACL_SUCCESS && plain2[0] != 0x5c) fprintf(stderr, "the host-to-host copy ran ahead of its stream\n");
  }
  free(plain2);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);

  /* the end, as the sample releases */
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(a), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(b), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(device), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
