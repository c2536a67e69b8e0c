/*
 * tests/acl/test_acl_k_simple_stream.cpp — the flow of the CANN runtime
 * sample example/1_basic_features/stream/0_simple_stream, with its kernel
 * (the samples' EasyOP, x += 1): in a context of its own, EasyOP on the
 * default stream (NULL) then aclrtSynchronizeStream(NULL) gives 1; on a
 * created stream set to ACL_STOP_ON_FAILURE it gives 2; 3000 EasyOPs queued
 * back to back on that stream, one synchronize, then aclrtStreamQuery says
 * ACL_STREAM_STATUS_COMPLETE (0) and the count is 3002 — the results the
 * sample's README shows. Also: before that synchronize the queried status of
 * the busy stream is a valid one, and after it the default stream is
 * untouched by the created stream's work. Run by run_acl.py against a real
 * rdevd.
 */
#include <cstdint>
#include <cstdio>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

int main(int argc, char **argv) {
  (void)argc;
  const int count = 3000;
  const int32_t deviceId = 0;
  const uint32_t blockDim = 1;
  const size_t size = sizeof(uint32_t);
  uint32_t num = 0;
  uint32_t *numDevice = nullptr;
  aclrtStream stream = nullptr;
  aclrtContext context = nullptr;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&context, deviceId), ACL_SUCCESS);

  /* the default stream: NULL */
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!context || !numDevice) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemcpy(numDevice, size, &num, size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  EasyOP(blockDim, nullptr, numDevice);
  CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(&num, size, numDevice, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After assigning the task through the default stream, the current result is: %u.\n", num);
  CHECK(num == 1);

  /* a created stream, stopping on failure */
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  EasyOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(&num, size, numDevice, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After assigning the task through the created stream, the current result is: %u.\n", num);
  CHECK(num == 2);

  /* 3000 tasks in stream order, no synchronize between them */
  for (int i = 0; i < count; i++) EasyOP(blockDim, stream, numDevice);
  aclrtStreamStatus busy = static_cast<aclrtStreamStatus>(-1);
  CHECK_RET(aclrtStreamQuery(stream, &busy), ACL_SUCCESS);
  CHECK(busy == ACL_STREAM_STATUS_COMPLETE || busy == ACL_STREAM_STATUS_NOT_READY);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  aclrtStreamStatus streamStatus = ACL_STREAM_STATUS_NOT_READY;
  CHECK_RET(aclrtStreamQuery(stream, &streamStatus), ACL_SUCCESS);
  std::printf("[INFO]  After synchronize, stream status is: %d.\n", static_cast<int>(streamStatus));
  CHECK(streamStatus == ACL_STREAM_STATUS_COMPLETE && ACL_STREAM_STATUS_COMPLETE == 0);
  CHECK_RET(aclrtMemcpy(&num, size, numDevice, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After loop, the current result is: %u.\n", num);
  CHECK(num == 3002);
  aclrtStreamStatus defaultStatus = ACL_STREAM_STATUS_NOT_READY;
  CHECK_RET(aclrtStreamQuery(nullptr, &defaultStatus), ACL_SUCCESS);
  CHECK(defaultStatus == ACL_STREAM_STATUS_COMPLETE);

  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
