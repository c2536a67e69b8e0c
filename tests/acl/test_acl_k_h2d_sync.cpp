/*
 * tests/acl/test_acl_k_h2d_sync.cpp — the flow of the CANN runtime sample
 * example/1_basic_features/memory/1_h2d_sync_memory_copy, with its kernel:
 * the host writes 123 at the start of 1 MiB of aclrtMallocHost memory (the
 * "Source data"), aclrtMemcpy copies it to device memory, and the samples'
 * ReadDo kernel prints what the device holds ("Destination data: N", kernel
 * print output, captured from stdout around the stream's synchronize).
 * Checked as the memory samples' run.sh checks: the first Source value equals
 * the first Destination value; here also that both are 123 and that one
 * block printed one line. Run by run_acl.py against a real rdevd.
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
  int *hostPtrA = nullptr;
  int *devPtrB = nullptr;
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&hostPtrA), size), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devPtrB), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!stream || !hostPtrA || !devPtrB) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }

  /* the host writes the source value, the copy is synchronous */
  std::memset(hostPtrA, 0, size);
  *hostPtrA = writeValue;
  std::printf("[INFO]  Source data: %d\n", writeValue);
  CHECK_RET(aclrtMemcpy(devPtrB, size, hostPtrA, size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  /* the kernel reads the device copy and prints it */
  StdoutCapture cap;
  CHECK(cap.Begin());
  ReadDo(1, stream, devPtrB);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  const std::string printed = cap.End();

  const std::vector<long> dst = Values(printed, "Destination data:");
  CHECK(dst.size() == 1);                         /* one block, one line */
  CHECK(!dst.empty() && dst[0] == writeValue);    /* run.sh: Source data == Destination data */
  CHECK(Values(printed, "Source data:").empty()); /* the kernel printed only what it read */

  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(hostPtrA), ACL_SUCCESS);
  CHECK_RET(aclrtFree(devPtrB), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
