/*
 * tests/acl/test_acl_k_callback_hostfunc.cpp — the flow of the CANN runtime
 * sample example/2_advanced_features/callback/1_callback_hostfunc, with its
 * kernel (the samples' EasyOP, x += 1): on a stream set to
 * ACL_STOP_ON_FAILURE, EasyOP then aclrtLaunchHostFunc with a function that
 * prints "Hostfunc callback!!!" (no thread of the program serves it), one
 * synchronize: the function ran, once, by the time the synchronize returned,
 * and the result is 1, as the README shows. Then what the README says a
 * host function is, "called after the tasks dispatched before it complete,
 * and blocks the tasks added after it", checked with kernels: behind LongOP
 * (500 ms then x += 1) a host function that holds until released, EasyOP
 * behind it; when the function starts, LongOP is done (the count is 2);
 * while it holds, 200 ms on, EasyOP has not run (still 2) and the stream is
 * not complete; released, the synchronize gives 3. Run by run_acl.py against
 * a real rdevd.
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

const size_t kSize = sizeof(uint32_t);
std::atomic<int> g_calls{0};
std::atomic<bool> g_entered{false}, g_release{false}, g_left{false};

void CallBackFunc(void *arg) {
  (void)arg;
  std::printf("[INFO]  Hostfunc callback!!!\n");
  g_calls++;
}

void Hold(void *arg) {
  (void)arg;
  g_entered = true;
  for (int i = 0; i < 20000 && !g_release; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  g_left = true;
}

bool WaitFor(const std::atomic<bool> &flag, int ms) {
  for (int i = 0; i < ms && !flag; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return flag;
}

uint32_t Read(const uint32_t *dev) {
  uint32_t v = 0xdeadbeef;
  CHECK_RET(aclrtMemcpy(&v, kSize, dev, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return v;
}

/* The same, read on stream probe while another stream is held: a
 * synchronous copy would wait for the held stream (docs/acl.md). */
uint32_t Peek(const uint32_t *dev, aclrtStream probe) {
  uint32_t v = 0xdeadbeef;
  CHECK_RET(aclrtMemcpyAsync(&v, kSize, dev, kSize, ACL_MEMCPY_DEVICE_TO_HOST, probe), ACL_SUCCESS);
  return v;
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
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&context, deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  aclrtStream probe = nullptr; /* reads device memory while stream is held */
  CHECK_RET(aclrtCreateStream(&probe), ACL_SUCCESS);
  if (!context || !stream || !numDevice) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemcpy(numDevice, kSize, &num, kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);

  /* the sample: a kernel, a host function, a synchronize */
  EasyOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtLaunchHostFunc(stream, CallBackFunc, nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(g_calls == 1);
  num = Read(numDevice);
  std::printf("[INFO]  After assigning the task through the created stream, the current result is: %u.\n", num);
  CHECK(num == 1);

  /* after the work before it, before the work after it */
  LongOP(blockDim, stream, numDevice);
  CHECK_RET(aclrtLaunchHostFunc(stream, Hold, nullptr), ACL_SUCCESS);
  EasyOP(blockDim, stream, numDevice);
  CHECK(WaitFor(g_entered, 10000));
  CHECK(Peek(numDevice, probe) == 2); /* LongOP finished before the function started */
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(Peek(numDevice, probe) == 2); /* EasyOP waits for the function */
  aclrtStreamStatus st = ACL_STREAM_STATUS_COMPLETE;
  CHECK_RET(aclrtStreamQuery(stream, &st), ACL_SUCCESS);
  CHECK(st == ACL_STREAM_STATUS_NOT_READY);
  CHECK(!g_left);
  g_release = true;
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(g_left);
  CHECK(Read(numDevice) == 3);
  CHECK(g_calls == 1);

  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(probe), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
