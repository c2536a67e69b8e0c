/*
 * tests/acl/test_acl_k_multi_stream.cpp — the flow of the CANN runtime
 * sample example/1_basic_features/stream/2_multi_stream, with its kernels
 * (the samples' LongOP, 500 ms then x += 1, on stream 1; ShortOP, x *= 2, on
 * stream 2): three ways of ordering stream 2 after stream 1, each in a
 * session of its own (aclInit ... aclFinalize, three times in one process,
 * as the sample runs them), each giving (0 + 1) * 2 = 2, the README's
 * answer, where the other order would give 1:
 *   - stream synchronize: aclrtSynchronizeStream(stream 1) before ShortOP;
 *   - event: aclrtRecordEvent on stream 1, aclrtStreamWaitEvent on stream 2,
 *     aclrtResetEvent on stream 2 (after the wait, as the sample does),
 *     ShortOP, a record on stream 2 and aclrtSynchronizeEvent;
 *   - notify: aclrtCreateNotify, aclrtRecordNotify on stream 1,
 *     aclrtWaitAndResetNotify on stream 2, ShortOP, synchronize stream 2.
 * The sample's timeouts: it waits 1000 ms for a LongOP that outlasts that on
 * a CANN device (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, 507046, in its README).
 * The sim's LongOP takes 500 ms (kernel_ops.h), so here a 100 ms wait times
 * out (507046 for the stream, ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, 507047, for the
 * event) and the sample's 1000 ms wait then succeeds. Run by run_acl.py
 * against a real rdevd.
 */
#include <cstdint>
#include <cstdio>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

const int32_t kDeviceId = 0;
const uint32_t kBlockDim = 1;
const int kWaitTimeMs = 1000;
const int kShortWaitMs = 100; /* less than LongOP's 500 ms */
const size_t kSize = sizeof(uint32_t);

struct Session {
  aclrtContext context = nullptr;
  aclrtStream stream1 = nullptr;
  aclrtStream stream2 = nullptr;
  uint32_t *numDevice = nullptr;

  bool Open() {
    uint32_t num = 0;
    CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtSetDevice(kDeviceId), ACL_SUCCESS);
    CHECK_RET(aclrtCreateContext(&context, kDeviceId), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&stream1), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&stream2), ACL_SUCCESS);
    CHECK_RET(aclrtSetStreamFailureMode(stream1, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
    CHECK_RET(aclrtSetStreamFailureMode(stream2, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
    CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    if (!context || !stream1 || !stream2 || !numDevice) return false;
    CHECK_RET(aclrtMemcpy(numDevice, kSize, &num, kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    return true;
  }

  uint32_t Answer() {
    uint32_t num = 0;
    CHECK_RET(aclrtMemcpy(&num, kSize, numDevice, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    std::printf("[INFO]  The answer is %u.\n", num);
    return num;
  }

  void Close() {
    CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStreamForce(stream1), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStreamForce(stream2), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyContext(context), ACL_SUCCESS);
    CHECK_RET(aclrtResetDeviceForce(kDeviceId), ACL_SUCCESS);
    CHECK_RET(aclFinalize(), ACL_SUCCESS);
  }
};

void StreamSynchronization() {
  std::printf("[INFO]  Use stream synchronize.\n");
  Session s;
  if (!s.Open()) {
    CHECK(!"stream synchronize: set-up failed");
    return;
  }
  LongOP(kBlockDim, s.stream1, s.numDevice);
  CHECK_RET(aclrtSynchronizeStream(s.stream1), ACL_SUCCESS);
  ShortOP(kBlockDim, s.stream2, s.numDevice);
  CHECK_RET(aclrtSynchronizeStream(s.stream2), ACL_SUCCESS);
  CHECK(s.Answer() == 2);

  /* the timeout: shorter than the task, then the sample's 1000 ms */
  LongOP(kBlockDim, s.stream1, s.numDevice);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(s.stream1, kShortWaitMs), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(s.stream1, kWaitTimeMs), ACL_SUCCESS);
  s.Close();
}

void EventSynchronization() {
  std::printf("[INFO]  Use event synchronize.\n");
  Session s;
  aclrtEvent event = nullptr;
  if (!s.Open()) {
    CHECK(!"event synchronize: set-up failed");
    return;
  }
  CHECK_RET(aclrtCreateEvent(&event), ACL_SUCCESS);
  LongOP(kBlockDim, s.stream1, s.numDevice);
  CHECK_RET(aclrtRecordEvent(event, s.stream1), ACL_SUCCESS);
  CHECK_RET(aclrtStreamWaitEvent(s.stream2, event), ACL_SUCCESS);
  CHECK_RET(aclrtResetEvent(event, s.stream2), ACL_SUCCESS);
  ShortOP(kBlockDim, s.stream2, s.numDevice);
  CHECK_RET(aclrtRecordEvent(event, s.stream2), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeEvent(event), ACL_SUCCESS);
  CHECK(s.Answer() == 2);

  LongOP(kBlockDim, s.stream1, s.numDevice);
  CHECK_RET(aclrtRecordEvent(event, s.stream1), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeEventWithTimeout(event, kShortWaitMs), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
  CHECK_RET(aclrtSynchronizeEventWithTimeout(event, kWaitTimeMs), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyEvent(event), ACL_SUCCESS);
  s.Close();
}

void NotifySynchronization() {
  std::printf("[INFO]  Use notify synchronize.\n");
  Session s;
  aclrtNotify notify = nullptr;
  if (!s.Open()) {
    CHECK(!"notify synchronize: set-up failed");
    return;
  }
  CHECK_RET(aclrtCreateNotify(&notify, 0x00U), ACL_SUCCESS);
  if (notify) {
    LongOP(kBlockDim, s.stream1, s.numDevice);
    CHECK_RET(aclrtRecordNotify(notify, s.stream1), ACL_SUCCESS);
    CHECK_RET(aclrtWaitAndResetNotify(notify, s.stream2, 0), ACL_SUCCESS);
    ShortOP(kBlockDim, s.stream2, s.numDevice);
    CHECK_RET(aclrtSynchronizeStream(s.stream2), ACL_SUCCESS);
    CHECK(s.Answer() == 2);
    CHECK_RET(aclrtDestroyNotify(notify), ACL_SUCCESS);
  }
  s.Close();
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  StreamSynchronization();
  EventSynchronization();
  NotifySynchronization();
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
