/*
 * tests/acl/test_acl_k_simple_callback.cpp — the flow of the CANN runtime
 * sample example/2_advanced_features/callback/0_simple_callback, with its
 * kernel (the samples' LongOP, 500 ms then x += 1): a report thread of the
 * program takes the context and loops on aclrtProcessReport(100); the stream
 * (set to ACL_STOP_ON_FAILURE) is subscribed to it; on the stream go a
 * blocking callback, LongOP, a host function (aclrtLaunchHostFunc) and five
 * blocking callbacks, all with the user data 520; one synchronize. Checked,
 * as the README shows: the callback before the task, the host function and
 * the five after it all ran, in that order, each with 520; the result is 1.
 * Also: the callbacks ran on the report thread, the first before LongOP
 * (it read 0 from the device), the five after it (they read 1); the host
 * function ran on the thread the sample subscribed to the stream's host
 * functions (aclrtSubscribeHostFunc), in its aclrtProcessHostFunc loop, and
 * on neither the report thread nor the main one; both subscriptions end
 * with their UnSubscribe. The callbacks read the device with aclrtMemcpy
 * while their own stream waits for them (docs/acl.md: a synchronous copy
 * inside a callback does not wait for the streams). Run by run_acl.py
 * against a real rdevd.
 */
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

const int32_t kDeviceId = 0;
const size_t kSize = sizeof(uint32_t);
aclrtContext g_context = nullptr;
uint32_t *g_numDevice = nullptr;
std::atomic<int> g_sequence{0};

/* What a callback or host function saw when it ran. */
struct Seen {
  std::atomic<int> order{0};
  std::thread::id thread;
  int userData = 0;
  uint32_t num = 0xdeadbeef; /* the device count, read by the callbacks */
  aclError copy = -1;
};
Seen g_before, g_host, g_after[5];
std::atomic<int> g_afterCount{0};

std::atomic<aclError> g_setContext{-1};
std::atomic<int> g_reportOthers{0};
std::atomic<int> g_hostFuncOthers{0};

void ReadNum(Seen *s) { s->copy = aclrtMemcpy(&s->num, kSize, g_numDevice, kSize, ACL_MEMCPY_DEVICE_TO_HOST); }

void CallBackBeforeLaunchFunc(void *arg) {
  g_before.thread = std::this_thread::get_id();
  g_before.userData = *static_cast<int *>(arg);
  ReadNum(&g_before);
  std::printf("[INFO]  This callback before task, result: user data is: %d.\n", g_before.userData);
  g_before.order = ++g_sequence;
}

void CallBackFunc(void *arg) {
  const int i = g_afterCount++;
  if (i >= 5) return;
  g_after[i].thread = std::this_thread::get_id();
  g_after[i].userData = *static_cast<int *>(arg);
  ReadNum(&g_after[i]);
  std::printf("[INFO]  This callback after task and loop five times, result: user data is: %d.\n", g_after[i].userData);
  g_after[i].order = ++g_sequence;
}

void HostFunc(void *arg) {
  g_host.thread = std::this_thread::get_id();
  g_host.userData = *static_cast<int *>(arg);
  std::printf("[INFO]  Hostfunc executed, user data is: %d.\n", g_host.userData);
  g_host.order = ++g_sequence;
}

void ThreadFunc(std::atomic<bool> *loop) {
  g_setContext = aclrtSetCurrentContext(g_context);
  while (*loop) {
    aclError r = aclrtProcessReport(100);
    /* not yet subscribed (the sample starts the loop first), nothing came, or a callback ran */
    if (r != ACL_SUCCESS && r != ACL_ERROR_RT_REPORT_TIMEOUT && r != ACL_ERROR_THREAD_NOT_SUBSCRIBE) g_reportOthers++;
  }
  std::printf("[INFO]  Report callback thread exit\n");
}

void HostFuncThreadFunc(std::atomic<bool> *loop) {
  (void)aclrtSetCurrentContext(g_context);
  while (*loop) {
    aclError r = aclrtProcessHostFunc(100);
    /* not yet subscribed (then it returns at once: no spinning), nothing came, or a host function ran */
    if (r == ACL_ERROR_THREAD_NOT_SUBSCRIBE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (r != ACL_SUCCESS && r != ACL_ERROR_RT_REPORT_TIMEOUT && r != ACL_ERROR_THREAD_NOT_SUBSCRIBE) g_hostFuncOthers++;
  }
  std::printf("[INFO]  Hostfunc processing thread exit\n");
}

uint64_t ThreadIdNumber(const std::thread &t) {
  std::ostringstream oss; /* as the sample turns a thread id into aclrtSubscribeReport's number */
  oss << t.get_id();
  return std::stoull(oss.str());
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  aclrtStream stream = nullptr;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(kDeviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&g_context, kDeviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  uint32_t num = 0;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&g_numDevice), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!g_context || !stream || !g_numDevice) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemcpy(g_numDevice, kSize, &num, kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  std::atomic<bool> isReportLoop{true}, isHostFuncLoop{true};
  std::thread reportThread(ThreadFunc, &isReportLoop);
  std::thread hostFuncThread(HostFuncThreadFunc, &isHostFuncLoop);
  const uint64_t reportTid = ThreadIdNumber(reportThread);
  const uint64_t hostFuncTid = ThreadIdNumber(hostFuncThread);
  int *userData = new int(520);
  CHECK_RET(aclrtSubscribeReport(reportTid, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSubscribeHostFunc(hostFuncTid, stream), ACL_SUCCESS);

  CHECK_RET(aclrtLaunchCallback(CallBackBeforeLaunchFunc, userData, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS);
  LongOP(1, stream, g_numDevice);
  CHECK_RET(aclrtLaunchHostFunc(stream, HostFunc, userData), ACL_SUCCESS);
  for (int i = 0; i < 5; i++)
    CHECK_RET(aclrtLaunchCallback(CallBackFunc, userData, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(&num, kSize, g_numDevice, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After assigning the task, the current int is: %u.\n", num);
  CHECK(num == 1);

  const std::thread::id reportId = reportThread.get_id(), hostFuncId = hostFuncThread.get_id();
  isReportLoop = false;
  isHostFuncLoop = false;
  reportThread.join();
  hostFuncThread.join();
  CHECK(g_setContext == ACL_SUCCESS);
  CHECK(g_reportOthers == 0);
  CHECK(g_hostFuncOthers == 0);

  /* what ran, where, in which order, with what */
  CHECK(g_before.order == 1 && g_host.order == 2);
  CHECK(g_afterCount == 5);
  for (int i = 0; i < 5; i++) {
    CHECK(g_after[i].order == 3 + i);
    CHECK(g_after[i].userData == 520 && g_after[i].thread == reportId);
    CHECK(g_after[i].copy == ACL_SUCCESS && g_after[i].num == 1); /* after LongOP */
  }
  CHECK(g_before.userData == 520 && g_before.thread == reportId);
  CHECK(g_before.copy == ACL_SUCCESS && g_before.num == 0); /* before LongOP */
  CHECK(g_host.userData == 520);
  CHECK(g_host.thread == hostFuncId); /* the subscribed thread ran it */

  CHECK_RET(aclrtUnSubscribeReport(reportTid, stream), ACL_SUCCESS);
  CHECK_RET(aclrtUnSubscribeHostFunc(hostFuncTid, stream), ACL_SUCCESS);
  CHECK_RET(aclrtFree(g_numDevice), ACL_SUCCESS);
  delete userData;
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(g_context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(kDeviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
