/*
 * tests/acl/test_acl_k_event_status.cpp — the flow of the CANN runtime
 * sample example/1_basic_features/event/0_event_status, with its kernel (the
 * samples' LongOP, 500 ms then x += 1): on a stream set to
 * ACL_STOP_ON_FAILURE, aclrtQueryEventStatus gives, as the sample's README
 * shows, 0 (ACL_EVENT_RECORDED_STATUS_NOT_READY) for the event just created,
 * 0 after it was recorded behind LongOP and before any synchronize, 1
 * (ACL_EVENT_RECORDED_STATUS_COMPLETE) after aclrtSynchronizeEvent, and the
 * answer is 1. Also: the event stays not ready while LongOP runs (queried
 * again 100 ms later), and aclrtSynchronizeEvent waited for the kernel (it
 * returned no earlier than 500 ms after the launch). Run by run_acl.py
 * against a real rdevd.
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

aclrtEventRecordedStatus Status(aclrtEvent event) {
  aclrtEventRecordedStatus st = static_cast<aclrtEventRecordedStatus>(-1);
  CHECK_RET(aclrtQueryEventStatus(event, &st), ACL_SUCCESS);
  return st;
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  const int32_t deviceId = 0;
  const uint32_t blockDim = 1;
  const size_t size = sizeof(uint32_t);
  uint32_t num = 0;
  uint32_t *numDevice = nullptr;
  aclrtContext context = nullptr;
  aclrtStream stream = nullptr;
  aclrtEvent event = nullptr;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&context, deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  CHECK_RET(aclrtCreateEvent(&event), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!context || !stream || !event || !numDevice) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK(ACL_EVENT_RECORDED_STATUS_NOT_READY == 0 && ACL_EVENT_RECORDED_STATUS_COMPLETE == 1);

  /* just created */
  aclrtEventRecordedStatus st = Status(event);
  std::printf("[INFO]  After create event, current event status is %d.\n", static_cast<int>(st));
  CHECK(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);

  /* recorded behind the long task, before any synchronize */
  CHECK_RET(aclrtMemcpy(numDevice, size, &num, size, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  const auto launched = std::chrono::steady_clock::now();
  LongOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtRecordEvent(event, stream), ACL_SUCCESS);
  st = Status(event);
  std::printf("[INFO]  After record but before synchronize, current event status is %d.\n", static_cast<int>(st));
  CHECK(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(Status(event) == ACL_EVENT_RECORDED_STATUS_NOT_READY);

  /* after the synchronize */
  CHECK_RET(aclrtSynchronizeEvent(event), ACL_SUCCESS);
  const auto waited = std::chrono::steady_clock::now() - launched;
  CHECK(waited >= std::chrono::milliseconds(500));
  st = Status(event);
  std::printf("[INFO]  After synchronize, current event status is %d.\n", static_cast<int>(st));
  CHECK(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
  CHECK_RET(aclrtMemcpy(&num, size, numDevice, size, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  The answer is %u.\n", num);
  CHECK(num == 1);

  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyEvent(event), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
