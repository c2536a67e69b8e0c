/*
 * tests/acl/test_acl_k_stream_failure_mode.cpp — the flow of the CANN runtime
 * sample example/1_basic_features/stream/1_stream_with_failure_mode, with its
 * kernels (the samples' EasyOP, x += 1; ErrorOP, a kernel that faults;
 * LongOP, 500 ms then x += 1):
 *   - a stream state callback is registered (aclrtRegStreamStateCallback)
 *     right after aclInit: each stream the program creates is reported
 *     ACL_RT_STREAM_STATE_CREATE_POST after its creation and
 *     ACL_RT_STREAM_STATE_DESTROY_PRE before aclrtDestroyStreamForce
 *     returns, with the registration's args; once unregistered (callback
 *     NULL), nothing more is reported;
 *   - EasyOP, ErrorOP, EasyOP on a stream in the default mode: the
 *     synchronize reports the kernel's fault and the result is 2 (the third
 *     task ran); the same after aclrtSetStreamFailureMode(ACL_STOP_ON_FAILURE):
 *     the fault is reported and the result is 1 (the third task was not run).
 *     The fault is rdev's documented one, ACL_ERROR_RT_AICORE_EXCEPTION
 *     (507015, kernel_ops.h; the sample's README shows a CANN device's
 *     507035);
 *   - aclrtStreamStop (rdev: no ACL_STREAM_DEVICE_USE_ONLY streams, see StopDemo) on an ACL_STREAM_DEVICE_USE_ONLY stream running
 *     LongOP succeeds (as the README shows; the synchronize after it is
 *     logged, not judged, as by the sample); it is refused for the default
 *     stream (CANN: not supported);
 *   - aclrtStreamAbort on a stream running LongOP succeeds, the synchronize
 *     after it gives ACL_SUCCESS or ACL_ERROR_RT_STREAM_ABORT (as the README
 *     says either is expected), and a task queued behind LongOP is discarded
 *     (CANN: tasks queued but not run are dropped).
 * Run by run_acl.py against a real rdevd.
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

struct StateCall {
  aclrtStream stream;
  aclrtStreamState state;
  void *args;
};

std::mutex g_mu;
std::vector<StateCall> g_calls;
char g_callbackTag[] = "stream_failure_mode_sample"; /* the registration's args */
size_t g_wrongArgs = 0;

void StreamStateCallback(aclrtStream stream, aclrtStreamState state, void *args) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.push_back(StateCall{stream, state, args});
  if (args != g_callbackTag) g_wrongArgs++;
  std::printf("[INFO]  Stream state callback: stream=%p state=%d\n", stream, static_cast<int>(state));
}

size_t Count(aclrtStream stream, aclrtStreamState state) {
  std::lock_guard<std::mutex> lock(g_mu);
  size_t n = 0;
  for (const StateCall &c : g_calls)
    if (c.stream == stream && c.state == state) n++;
  return n;
}

/* A destroyed stream's handle may come back for a later stream: its calls are dropped once checked. */
void Forget(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<StateCall> kept;
  for (const StateCall &c : g_calls)
    if (c.stream != stream) kept.push_back(c);
  g_calls.swap(kept);
}

size_t Total() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_calls.size();
}

size_t WrongArgs() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_wrongArgs;
}

/* Waits up to ms for the state to have been reported once for stream. */
bool Reported(aclrtStream stream, aclrtStreamState state, int ms) {
  for (int i = 0; i < ms && Count(stream, state) == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return Count(stream, state) == 1;
}

const size_t kSize = sizeof(uint32_t);

uint32_t *Scratch() {
  uint32_t *p = nullptr;
  uint32_t zero = 0;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&p), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (p) CHECK_RET(aclrtMemcpy(p, kSize, &zero, kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  return p;
}

uint32_t Read(const uint32_t *dev) {
  uint32_t v = 0xdeadbeef;
  CHECK_RET(aclrtMemcpy(&v, kSize, dev, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return v;
}

/* aclrtStreamStop: a device-use-only stream running LongOP. rdev offers
 * no device-use-only streams (docs/acl.md: it launches no work from the
 * device), so the creation is refused and, as the sample does when it
 * cannot create the stream, the demonstration is skipped; aclrtStreamStop
 * refuses the streams rdev has. */
void StopDemo() {
  aclrtStream stopStream = nullptr;
  CHECK_RET(aclrtCreateStreamWithConfig(&stopStream, 0, ACL_STREAM_DEVICE_USE_ONLY), ACL_ERROR_INVALID_PARAM);
  aclrtStream plain = nullptr;
  CHECK_RET(aclrtCreateStream(&plain), ACL_SUCCESS);
  CHECK_RET(aclrtStreamStop(plain), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  CHECK_RET(aclrtDestroyStream(plain), ACL_SUCCESS);
  Forget(plain);
  if (!stopStream) return; /* the sample skips the demonstration then */
  uint32_t *scratch = Scratch();
  if (!scratch) return;
  CHECK(Reported(stopStream, ACL_RT_STREAM_STATE_CREATE_POST, 2000));
  LongOP(1, stopStream, scratch);
  CHECK_RET(aclrtStreamStop(stopStream), ACL_SUCCESS);
  aclError sync = aclrtSynchronizeStream(stopStream);
  std::printf("[INFO]  aclrtSynchronizeStream(after stop) returned %d.\n", static_cast<int>(sync));
  CHECK_RET(aclrtFree(scratch), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stopStream), ACL_SUCCESS);
  CHECK(Count(stopStream, ACL_RT_STREAM_STATE_DESTROY_PRE) == 1);
  Forget(stopStream);
}

/* aclrtStreamAbort: a stream running LongOP, EasyOP queued behind it. */
void AbortDemo() {
  aclrtStream abortStream = nullptr;
  CHECK_RET(aclrtCreateStream(&abortStream), ACL_SUCCESS);
  if (!abortStream) return;
  uint32_t *scratch = Scratch();
  uint32_t *behind = Scratch();
  if (!scratch || !behind) return;
  CHECK(Reported(abortStream, ACL_RT_STREAM_STATE_CREATE_POST, 2000));
  LongOP(1, abortStream, scratch);
  EasyOP(1, abortStream, behind);
  CHECK_RET(aclrtStreamAbort(abortStream), ACL_SUCCESS);
  aclError sync = aclrtSynchronizeStream(abortStream);
  std::printf("[INFO]  aclrtSynchronizeStream(after abort) returned %d.\n", static_cast<int>(sync));
  CHECK(sync == ACL_SUCCESS || sync == ACL_ERROR_RT_STREAM_ABORT);
  const uint32_t ran = Read(scratch), queued = Read(behind);
  std::printf("[INFO]  After abort: the long task's count is %u, the queued task's %u.\n", ran, queued);
  CHECK(ran <= 1);    /* stopped, or it had finished */
  CHECK(queued == 0); /* queued but not run: dropped */
  CHECK_RET(aclrtFree(scratch), ACL_SUCCESS);
  CHECK_RET(aclrtFree(behind), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(abortStream), ACL_SUCCESS);
  CHECK(Count(abortStream, ACL_RT_STREAM_STATE_DESTROY_PRE) == 1);
  Forget(abortStream);
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  const int32_t deviceId = 0;
  const uint32_t blockDim = 1;
  uint32_t num = 0;
  uint32_t *numDevice = nullptr;
  aclrtStream stream = nullptr;
  aclrtContext context = nullptr;

  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtRegStreamStateCallback("stream_failure_mode_sample", StreamStateCallback, g_callbackTag), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&context, deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  numDevice = Scratch();
  if (!context || !stream || !numDevice) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK(Reported(stream, ACL_RT_STREAM_STATE_CREATE_POST, 2000));
  CHECK(Count(stream, ACL_RT_STREAM_STATE_DESTROY_PRE) == 0);

  /* the default mode: the task after the fault runs */
  EasyOP(blockDim, stream, numDevice);
  ErrorOP(blockDim, stream);
  EasyOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
  num = Read(numDevice);
  std::printf("[INFO]  Without failure mode, the result is %u.\n", num);
  CHECK(num == 2);

  /* ACL_STOP_ON_FAILURE: the task after the fault is not run */
  num = 0;
  CHECK_RET(aclrtMemcpy(numDevice, kSize, &num, kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  EasyOP(blockDim, stream, numDevice);
  ErrorOP(blockDim, stream);
  EasyOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
  num = Read(numDevice);
  std::printf("[INFO]  After set failure mode, the current result is: %u.\n", num);
  CHECK(num == 1);

  /* the stop and abort demonstrations */
  CHECK(aclrtStreamStop(nullptr) != ACL_SUCCESS);
  StopDemo();
  AbortDemo();

  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK(Count(stream, ACL_RT_STREAM_STATE_DESTROY_PRE) == 1);
  CHECK_RET(aclrtDestroyContext(context), ACL_SUCCESS);
  CHECK_RET(aclrtRegStreamStateCallback("stream_failure_mode_sample", nullptr, nullptr), ACL_SUCCESS);
  CHECK(WrongArgs() == 0);

  /* unregistered: a stream created and destroyed now is not reported */
  const size_t before = Total();
  aclrtStream quiet = nullptr;
  CHECK_RET(aclrtCreateStream(&quiet), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(quiet), ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(Total() == before);

  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
