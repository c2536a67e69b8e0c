/*
 * tests/acl/test_acl_k_event_timestamp.cpp — the flow of the CANN runtime
 * sample example/1_basic_features/event/1_event_timestamp, with its kernels
 * (the samples' ShortOP, x *= 2; LongOP, 500 ms then x += 1): a start and an
 * end event recorded around each kernel on a stream set to
 * ACL_STOP_ON_FAILURE, then aclrtEventGetTimestamp of both and
 * aclrtEventElapsedTime between them. Checked: the answers the README shows
 * (0 after the short task, 1 after the long one); each timestamp (CANN:
 * microseconds since the device started) is non-zero and the end's is not
 * before the start's; the elapsed time is not negative, is at least LongOP's
 * 500 ms for the long task, and agrees with the timestamps' difference
 * (within 2 ms); the second pair of records replaced the first (later
 * timestamps). Run by run_acl.py against a real rdevd.
 */
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

struct Timing {
  uint64_t start = 0, end = 0;
  float ms = -1.0f;
};

Timing Measure(aclrtEvent startEvent, aclrtEvent endEvent) {
  Timing t;
  CHECK_RET(aclrtEventGetTimestamp(startEvent, &t.start), ACL_SUCCESS);
  std::printf("[INFO]  Start event timestamp: %llu.\n", static_cast<unsigned long long>(t.start));
  CHECK_RET(aclrtEventGetTimestamp(endEvent, &t.end), ACL_SUCCESS);
  std::printf("[INFO]  End event timestamp: %llu.\n", static_cast<unsigned long long>(t.end));
  CHECK_RET(aclrtEventElapsedTime(&t.ms, startEvent, endEvent), ACL_SUCCESS);
  std::printf("[INFO]  The task consume time %f ms.\n", t.ms);
  CHECK(t.start != 0 && t.end >= t.start);
  CHECK(t.ms >= 0.0f);
  const double stamped_ms = static_cast<double>(t.end - t.start) / 1000.0; /* microseconds */
  CHECK(std::fabs(stamped_ms - t.ms) <= 2.0);
  return t;
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  const int32_t deviceId = 0;
  const uint32_t blockDim = 1;
  const size_t size = sizeof(uint32_t);
  uint32_t num = 0;
  uint32_t *numDevice = nullptr;
  aclrtStream stream = nullptr;
  aclrtContext context = nullptr;
  aclrtEvent startEvent = nullptr, endEvent = nullptr;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&context, deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  CHECK_RET(aclrtCreateEvent(&startEvent), ACL_SUCCESS);
  CHECK_RET(aclrtCreateEvent(&endEvent), ACL_SUCCESS);
  if (!context || !stream || !startEvent || !endEvent) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }

  /* a short task */
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(numDevice, size, &num, size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(startEvent, stream), ACL_SUCCESS);
  ShortOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtRecordEvent(endEvent, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(&num, size, numDevice, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After completing the short task, the answer is %u.\n", num);
  CHECK(num == 0);
  const Timing shortTask = Measure(startEvent, endEvent);
  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);

  /* a long task, the same events recorded again */
  numDevice = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(numDevice, size, &num, size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(startEvent, stream), ACL_SUCCESS);
  LongOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtRecordEvent(endEvent, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(&num, size, numDevice, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After completing the long task, the answer is %u.\n", num);
  CHECK(num == 1);
  const Timing longTask = Measure(startEvent, endEvent);
  CHECK(longTask.ms >= 500.0f - 1.0f); /* LongOP runs 500 ms */
  CHECK(longTask.end - longTask.start >= 499000);
  CHECK(longTask.start >= shortTask.end); /* the records replaced the first ones */
  CHECK(longTask.ms > shortTask.ms);

  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyEvent(startEvent), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyEvent(endEvent), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
