/*
 * tests/acl/test_acl_p2p.c — the peer-to-peer flow of the CANN runtime's
 * samples (example/1_basic_features/device/2_device_P2P), written only
 * against the acl headers and linked against libascendcl.so: device 0 may
 * reach device 1 (aclrtDeviceCanAccessPeer), each enables access to the
 * other, memory allocated with ACL_MEM_MALLOC_HUGE_FIRST_P2P on each is set
 * (aclrtMemset), device 0's copied to device 1's, device 1's copied to
 * aclrtMallocHost memory (itself set with aclrtMemset first, as the sample
 * does) and verified byte by byte; then access is disabled and each device
 * reset in turn. Also the copy the other way, on a stream, and the
 * arguments the peer calls refuse. rdev's devices are all peers of one
 * another. Compiled as C and as C++ (test_acl_p2p.cpp); run by run_acl.py
 * against a real rdevd with two devices.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  int32_t can = -1;
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_ERROR_UNINITIALIZE);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const size_t size = 10;
  const int value = 0xa7; /* the sample takes rand() % 256 */

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count >= 2); /* the sample skips with fewer; run_acl.py's rdevd has two */
  if (count < 2) return 1;

  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  int32_t can = 0;
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS);
  CHECK(can == 1);
  CHECK_RET(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
  void *dev0 = NULL, *dev1 = NULL, *host = NULL;
  CHECK_RET(aclrtMalloc(&dev0, size, ACL_MEM_MALLOC_HUGE_FIRST_P2P), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(dev0, size, value, size), ACL_SUCCESS);

  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtDeviceEnablePeerAccess(0, 0), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&dev1, size, ACL_MEM_MALLOC_HUGE_FIRST_P2P), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(dev1, size, 0, size), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(dev1, size, dev0, size, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);

  CHECK_RET(aclrtMallocHost(&host, size), ACL_SUCCESS);
  if (!host) {
    fprintf(stderr, "aclrtMallocHost failed: nothing to verify into\n");
    return 1;
  }
  memset(host, 0x11, size);
  CHECK_RET(aclrtMemset(host, size, 0, size), ACL_SUCCESS); /* host memory: the address says so */
  CHECK(((unsigned char *)host)[0] == 0 && ((unsigned char *)host)[size - 1] == 0);
  memset(host, 0, size);
  CHECK_RET(aclrtMemcpy(host, size, dev1, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  int good = 0;
  for (size_t i = 0; i < size; i++) good += ((unsigned char *)host)[i] == value;
  printf("The data read from the memory is %d (%d of %zu bytes as set)\n", ((unsigned char *)host)[0], good, size);
  CHECK(good == (int)size);
  CHECK_RET(aclrtSynchronizeDevice(), ACL_SUCCESS);

  /* the other way, on a stream of device 1: device 1's memory into device 0's */
  aclrtStream st = NULL;
  CHECK_RET(aclrtCreateStream(&st), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev1, size, 0x3b, size, st), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(dev0, size, dev1, size, ACL_MEMCPY_DEVICE_TO_DEVICE, st), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  unsigned char back[10];
  memset(back, 0, sizeof back);
  CHECK_RET(aclrtMemcpy(back, sizeof back, dev0, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(back[0] == 0x3b && back[size - 1] == 0x3b);
  CHECK_RET(aclrtDestroyStream(st), ACL_SUCCESS);

  /* what the peer calls refuse */
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 1, 0), ACL_SUCCESS);
  CHECK(can == 1);
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_SUCCESS);
  CHECK(can == 0); /* a device is not its own peer */
  CHECK_RET(aclrtDeviceCanAccessPeer(NULL, 0, 1), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, (int32_t)count), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtDeviceEnablePeerAccess((int32_t)count, 0), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtDeviceEnablePeerAccess(0, 1), ACL_ERROR_INVALID_PARAM); /* flags: 0 only */

  /* the end, as the sample takes it apart: device 1, then device 0 */
  CHECK_RET(aclrtDeviceDisablePeerAccess(0), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(host), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev1), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(1), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtDeviceDisablePeerAccess(1), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev0), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(0), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
