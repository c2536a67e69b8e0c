/*
 * tests/acl/test_acl_k_d2d_sync.cpp — the flow of the CANN runtime sample
 * example/1_basic_features/memory/5_d2d_sync_memory_copy, with its kernels:
 * the samples' WriteDo kernel writes 123 into device memory A and prints it
 * ("Source data: N"), aclrtMemcpy copies 1 MiB of A to device memory B, and
 * the samples' ReadDo kernel prints what B holds ("Destination data: N");
 * both are kernel print output, captured from stdout around the stream's
 * synchronizes. Checked as its run.sh checks: the first Source value equals
 * the first Destination value; here also that both are 123, one line each
 * (one block), and Source printed before Destination.
 *
 * As the sample, aclrtMemcpy comes right after queueing WriteDo, without
 * synchronizing the stream: rdev's synchronous copy comes after the work
 * queued earlier on the device's streams (docs/acl.md;
 * test_acl_k_sync_order.cpp repeats it). Run by run_acl.py against a real
 * rdevd.
 */
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl_check.h"
#include "capture.h"
#include "kernel_func/kernel_ops.h"

int main(int argc, char **argv) {
  (void)argc;
  const int32_t deviceId = 0;
  const uint64_t size = 1 * 1024 * 1024;
  const int writeValue = 123;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  int *devPtrA = nullptr;
  int *devPtrB = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devPtrA), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devPtrB), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!stream || !devPtrA || !devPtrB) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemset(devPtrB, size, 0, size), ACL_SUCCESS);

  StdoutCapture cap;
  CHECK(cap.Begin());
  WriteDo(1, stream, devPtrA, writeValue);
  CHECK_RET(aclrtMemcpy(devPtrB, size, devPtrA, size, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  ReadDo(1, stream, devPtrB);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  const std::string printed = cap.End();

  const std::vector<long> src = Values(printed, "Source data:");
  const std::vector<long> dst = Values(printed, "Destination data:");
  CHECK(src.size() == 1 && dst.size() == 1);
  CHECK(!src.empty() && src[0] == writeValue);
  CHECK(!src.empty() && !dst.empty() && src[0] == dst[0]); /* run.sh: Source data == Destination data */
  CHECK(printed.find("Source data:") < printed.find("Destination data:"));

  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFree(devPtrA), ACL_SUCCESS);
  CHECK_RET(aclrtFree(devPtrB), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
