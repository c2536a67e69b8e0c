/*
 * tests/acl/test_acl_k_callback_exception.cpp — the flow of the CANN runtime
 * sample example/2_advanced_features/callback/2_callback_exception, with its
 * kernels (the samples' EasyOP, x += 1; ErrorOP, a kernel that faults): a
 * report thread of the program loops on aclrtProcessReport(100) for the
 * stream (set to ACL_STOP_ON_FAILURE); aclrtSetExceptionInfoCallback sets the
 * exception callback; EasyOP, ErrorOP, aclrtGetThreadLastTaskId, a blocking
 * callback with the user data 520, one synchronize. Checked:
 *   - the synchronize reports the fault (rdev's ACL_ERROR_RT_AICORE_EXCEPTION,
 *     507015, kernel_ops.h);
 *   - the exception callback ran once, and its info says what failed (CANN:
 *     the task, stream, thread and device of the failed task and its error
 *     code): device 0, error 507015, the stream's id (aclrtStreamGetId); the
 *     task id is the one aclrtGetThreadLastTaskId gave after ErrorOP (the
 *     stream is in ACL_STOP_ON_FAILURE mode: rdev tells the failed kernel),
 *     and aclrtGetFuncHandleFromExceptionInfo / aclrtGetArgsFromExceptionInfo
 *     answer (ErrorOP takes no arguments);
 *   - the sample's diagnostics after the failed synchronize:
 *     aclrtGetErrorVerbose says an AI Core error of software kind
 *     (docs/acl.md), aclrtPeekAtLastError and aclrtGetLastError give 507015,
 *     aclGetRecentErrMsg has a message;
 *   - the blocking callback behind the fault still ran, with 520 (rdev skips
 *     only device work after a failure, docs/acl.md), and the count read
 *     afterwards is 1 (EasyOP ran before the fault);
 *   - set again with another callback, a second fault calls only that one
 *     (CANN: the latest setting applies); cleared (a NULL callback, as CANN
 *     documents), a third fault is reported by the synchronize but calls
 *     nothing.
 * Run by run_acl.py against a real rdevd.
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

struct ExceptionSeen {
  std::atomic<int> calls{0};
  uint32_t taskId = 0, streamId = 0, threadId = 0, deviceId = 0, errorCode = 0;
  aclError argsRet = -1, funcRet = -1;
  void *devArgs = nullptr;
  uint32_t devArgsLen = 0;
  aclrtFuncHandle func = nullptr;
};
ExceptionSeen g_exc;

void ExceptionCallBackFunc(aclrtExceptionInfo *info) {
  if (g_exc.calls == 0) {
    g_exc.taskId = aclrtGetTaskIdFromExceptionInfo(info);
    g_exc.streamId = aclrtGetStreamIdFromExceptionInfo(info);
    g_exc.threadId = aclrtGetThreadIdFromExceptionInfo(info);
    g_exc.deviceId = aclrtGetDeviceIdFromExceptionInfo(info);
    g_exc.errorCode = aclrtGetErrorCodeFromExceptionInfo(info);
    g_exc.argsRet = aclrtGetArgsFromExceptionInfo(info, &g_exc.devArgs, &g_exc.devArgsLen);
    g_exc.funcRet = aclrtGetFuncHandleFromExceptionInfo(info, &g_exc.func);
    std::printf(
        "[INFO]  Exception occurred, callback function: task %u, stream %u, thread %u, device %u, "
        "error %u; args ret %d (%p, %u), func handle ret %d (%p).\n",
        g_exc.taskId, g_exc.streamId, g_exc.threadId, g_exc.deviceId, g_exc.errorCode, static_cast<int>(g_exc.argsRet),
        g_exc.devArgs, g_exc.devArgsLen, static_cast<int>(g_exc.funcRet), g_exc.func);
  }
  g_exc.calls++;
}

/* Set in place of the first (CANN: the latest setting applies). */
std::atomic<int> g_otherCalls{0};
void OtherExceptionCallBack(aclrtExceptionInfo *info) {
  (void)info;
  g_otherCalls++;
}

std::atomic<int> g_callbackRan{0};
std::atomic<int> g_callbackData{0};

void CallBackFunc(void *arg) {
  g_callbackData = *static_cast<int *>(arg);
  std::printf("[INFO]  After error still callback, the userdata is: %d.\n", g_callbackData.load());
  g_callbackRan++;
}

void ThreadFunc(std::atomic<bool> *loop) {
  (void)aclrtSetCurrentContext(g_context);
  while (*loop) (void)aclrtProcessReport(100);
  std::printf("[INFO]  Thread exit\n");
}

/* Deprecated in CANN (aclrtExceptionInfoCallbackRegister replaces it); the sample calls it. */
aclError SetExceptionInfoCallback(aclrtExceptionInfoCallback cb) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return aclrtSetExceptionInfoCallback(cb);
#pragma GCC diagnostic pop
}

bool WaitForCalls(int n, int ms) {
  for (int i = 0; i < ms && g_exc.calls < n; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return g_exc.calls >= n;
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  aclrtStream stream = nullptr;
  uint32_t *numDevice = nullptr;
  uint32_t num = 0;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(kDeviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&g_context, kDeviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stream, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&numDevice), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!g_context || !stream || !numDevice) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemcpy(numDevice, kSize, &num, kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  int32_t streamId = -1;
  CHECK_RET(aclrtStreamGetId(stream, &streamId), ACL_SUCCESS);

  std::atomic<bool> isLoop{true};
  std::thread td(ThreadFunc, &isLoop);
  std::ostringstream oss;
  oss << td.get_id();
  const uint64_t tidInt = std::stoull(oss.str());
  int *userData = new int(520);
  CHECK_RET(aclrtSubscribeReport(tidInt, stream), ACL_SUCCESS);
  CHECK_RET(SetExceptionInfoCallback(ExceptionCallBackFunc), ACL_SUCCESS);

  EasyOP(1, stream, numDevice);
  ErrorOP(1, stream);
  uint32_t taskId = 0;
  const aclError lastTask = aclrtGetThreadLastTaskId(&taskId);
  std::printf("[INFO]  aclrtGetThreadLastTaskId returned %d, the last task id is: %u.\n", static_cast<int>(lastTask),
              taskId);
  CHECK(lastTask == ACL_SUCCESS && taskId != 0);
  CHECK_RET(aclrtLaunchCallback(CallBackFunc, userData, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS);

  const aclError syncRet = aclrtSynchronizeStream(stream);
  std::printf("[ERROR]  aclrtSynchronizeStream(stream_) returned error code %d\n", static_cast<int>(syncRet));
  CHECK(syncRet == ACL_ERROR_RT_AICORE_EXCEPTION);

  /* the sample's diagnostics */
  aclrtErrorInfo errorInfo = {};
  CHECK_RET(aclrtGetErrorVerbose(kDeviceId, &errorInfo), ACL_SUCCESS);
  CHECK(errorInfo.errorType == ACL_RT_ERROR_AICORE && errorInfo.tryRepair == 0);
  CHECK(errorInfo.hasDetail && errorInfo.detail.aicoreErrType == ACL_RT_AICORE_ERROR_SW);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_AICORE_EXCEPTION);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_AICORE_EXCEPTION);
  const char *recent = aclGetRecentErrMsg();
  std::printf("[INFO]  recentErrMsg=%s\n", recent ? recent : "<null>");
  CHECK(recent && *recent);

  /* the exception callback and what it was told */
  CHECK(WaitForCalls(1, 2000));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(g_exc.calls == 1);
  CHECK(g_exc.deviceId == static_cast<uint32_t>(kDeviceId));
  CHECK(g_exc.errorCode == static_cast<uint32_t>(ACL_ERROR_RT_AICORE_EXCEPTION));
  CHECK(g_exc.streamId == static_cast<uint32_t>(streamId));
  CHECK(g_exc.taskId == taskId);
  CHECK(g_exc.funcRet == ACL_SUCCESS && g_exc.func != nullptr);
  CHECK(g_exc.argsRet == ACL_SUCCESS && g_exc.devArgsLen == 0);

  /* the callback behind the fault, and the count */
  CHECK(g_callbackRan == 1 && g_callbackData == 520);
  CHECK_RET(aclrtMemcpy(&num, kSize, numDevice, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  std::printf("[INFO]  After assigning the task, the current num is: %u.\n", num);
  CHECK(num == 1);

  /* set again: only the latest callback is called */
  CHECK_RET(SetExceptionInfoCallback(OtherExceptionCallBack), ACL_SUCCESS);
  ErrorOP(1, stream);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
  for (int i = 0; i < 2000 && g_otherCalls == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(g_otherCalls == 1);
  CHECK(g_exc.calls == 1);

  /* cleared: a fault calls nothing */
  CHECK_RET(SetExceptionInfoCallback(nullptr), ACL_SUCCESS);
  ErrorOP(1, stream);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_ERROR_RT_AICORE_EXCEPTION);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(g_exc.calls == 1 && g_otherCalls == 1);

  isLoop = false;
  td.join();
  CHECK_RET(aclrtUnSubscribeReport(tidInt, stream), ACL_SUCCESS);
  CHECK_RET(aclrtFree(numDevice), ACL_SUCCESS);
  delete userData;
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(g_context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(kDeviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
