/*
 * tests/acl/test_acl_k_exception_info.cpp — task ids and the exception
 * information of a failed kernel, as the CANN runtime sample
 * example/2_advanced_features/callback/2_callback_exception uses them:
 *   - aclrtGetThreadLastTaskId gives the calling thread's last queued task,
 *     a new id per task (kernels and other stream work), per thread;
 *   - in ACL_STOP_ON_FAILURE mode, with kernels before and after the one
 *     that fails, the exception callback's info names the failed one: its
 *     task id (what aclrtGetThreadLastTaskId gave right after its launch),
 *     its function handle (aclrtGetFuncHandleFromExceptionInfo) and its
 *     arguments (aclrtGetArgsFromExceptionInfo: none for this kernel);
 *   - a failed kernel that was the one kernel since the last synchronize is
 *     named in either mode;
 *   - when rdev cannot tell which of several kernels failed (continue mode)
 *     the task id is 0 and both accessors say ACL_ERROR_INVALID_EXCEPTION_INFO;
 *     NULL info is ACL_ERROR_INVALID_EXCEPTION_INFO, NULL outputs
 *     ACL_ERROR_INVALID_PARAM.
 * The kernels come from a sim binary (docs/sim-binary.md) the program
 * loads: Inc (inc_u32, x[b] += 1) and Boom (trap). Run by run_acl.py
 * against a real rdevd. C++17.
 */
#include <cstdint>
#include <cstdio>
#include <thread>

#include "acl/acl.h"
#include "acl_check.h"

namespace {

constexpr int32_t kDevice = 0;
const char kBinary[] =
    "rdev-sim-binary 1\n"
    "kernel Inc inc_u32\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "kernel Boom trap\n"
    "  noargs\n";

struct Info {
  int calls = 0;
  uint32_t task = 0, stream = 0, code = 0;
  aclError argsRet = -2, funcRet = -2, nullInfo = -2, nullOut = -2;
  void *args = reinterpret_cast<void *>(1);
  uint32_t argsLen = 99;
  aclrtFuncHandle func = nullptr;
};
Info g_info;

void OnException(aclrtExceptionInfo *info) {
  g_info.calls++;
  g_info.task = aclrtGetTaskIdFromExceptionInfo(info);
  g_info.stream = aclrtGetStreamIdFromExceptionInfo(info);
  g_info.code = aclrtGetErrorCodeFromExceptionInfo(info);
  g_info.argsRet = aclrtGetArgsFromExceptionInfo(info, &g_info.args, &g_info.argsLen);
  g_info.funcRet = aclrtGetFuncHandleFromExceptionInfo(info, &g_info.func);
  void *p = nullptr;
  uint32_t n = 0;
  g_info.nullInfo = aclrtGetArgsFromExceptionInfo(nullptr, &p, &n);
  g_info.nullOut = aclrtGetFuncHandleFromExceptionInfo(info, nullptr);
}

uint32_t LastTask() {
  uint32_t id = 0;
  CHECK_RET(aclrtGetThreadLastTaskId(&id), ACL_SUCCESS);
  return id;
}

aclError Launch(aclrtFuncHandle f, aclrtStream stream, uint32_t *x) {
  uint64_t arg = reinterpret_cast<uintptr_t>(x);
  return aclrtLaunchKernelWithHostArgs(f, 1, stream, nullptr, x ? &arg : nullptr, x ? sizeof arg : 0, nullptr, 0);
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
  aclrtBinHandle bin = nullptr;
  aclrtFuncHandle inc = nullptr, boom = nullptr;
  CHECK_RET(aclrtBinaryLoadFromData(kBinary, sizeof kBinary - 1, nullptr, &bin), ACL_SUCCESS);
  if (bin) CHECK_RET(aclrtBinaryGetFunction(bin, "Inc", &inc), ACL_SUCCESS);
  if (bin) CHECK_RET(aclrtBinaryGetFunction(bin, "Boom", &boom), ACL_SUCCESS);
  aclrtStream stop = nullptr, cont = nullptr;
  CHECK_RET(aclrtCreateStream(&stop), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&cont), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(stop, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  uint32_t *x = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&x), 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!inc || !boom || !stop || !cont || !x) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemset(x, 64, 0, 64), ACL_SUCCESS);
  CHECK_RET(aclrtExceptionInfoCallbackRegister(OnException), ACL_SUCCESS);
  int32_t stopId = -1;
  CHECK_RET(aclrtStreamGetId(stop, &stopId), ACL_SUCCESS);

  /* task ids: one per task, per thread */
  CHECK_RET(Launch(inc, cont, x), ACL_SUCCESS);
  const uint32_t t1 = LastTask();
  CHECK_RET(aclrtMemsetAsync(x, 64, 0, 64, cont), ACL_SUCCESS);
  const uint32_t t2 = LastTask();
  CHECK(t1 != 0 && t2 != 0 && t2 != t1);
  uint32_t other = 0;
  std::thread([&other, cont, inc, x] {
    CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
    CHECK_RET(Launch(inc, cont, x), ACL_SUCCESS);
    other = LastTask();
  }).join();
  CHECK(other != 0 && other != t2);
  CHECK(LastTask() == t2); /* the other thread's task is not this thread's */
  CHECK_RET(aclrtSynchronizeStream(cont), ACL_SUCCESS);
  CHECK(g_info.calls == 0);

  /* stop mode: Inc, Boom, Inc; the info names Boom */
  CHECK_RET(Launch(inc, stop, x), ACL_SUCCESS);
  CHECK_RET(Launch(boom, stop, nullptr), ACL_SUCCESS);
  const uint32_t boomTask = LastTask();
  CHECK_RET(Launch(inc, stop, x), ACL_SUCCESS);
  CHECK(LastTask() != boomTask);
  CHECK_RET(aclrtSynchronizeStream(stop), ACL_ERROR_RT_AICORE_EXCEPTION);
  std::printf("[INFO]  stop mode: task %u (Boom's %u), func %p (Boom %p), args ret %d, %u bytes\n", g_info.task,
              boomTask, g_info.func, static_cast<void *>(boom), static_cast<int>(g_info.argsRet), g_info.argsLen);
  CHECK(g_info.calls == 1);
  CHECK(g_info.task == boomTask);
  CHECK(g_info.stream == static_cast<uint32_t>(stopId));
  CHECK(g_info.code == static_cast<uint32_t>(ACL_ERROR_RT_AICORE_EXCEPTION));
  CHECK(g_info.funcRet == ACL_SUCCESS && g_info.func == boom);
  CHECK(g_info.argsRet == ACL_SUCCESS && g_info.argsLen == 0);
  CHECK(g_info.nullInfo == ACL_ERROR_INVALID_EXCEPTION_INFO);
  CHECK(g_info.nullOut == ACL_ERROR_INVALID_PARAM);
  uint32_t word = 0; /* the Inc before Boom ran, the one after it was skipped */
  CHECK_RET(aclrtMemcpy(&word, sizeof word, x, sizeof word, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(word == 2); /* 1 before, then the first Inc */

  /* the one kernel since the last synchronize, in continue mode */
  g_info = Info{};
  CHECK_RET(Launch(boom, cont, nullptr), ACL_SUCCESS);
  const uint32_t alone = LastTask();
  CHECK_RET(aclrtSynchronizeStream(cont), ACL_ERROR_RT_AICORE_EXCEPTION);
  CHECK(g_info.calls == 1 && g_info.task == alone && g_info.func == boom && g_info.funcRet == ACL_SUCCESS);

  /* several kernels in continue mode: rdev cannot tell which failed */
  g_info = Info{};
  CHECK_RET(Launch(inc, cont, x), ACL_SUCCESS);
  CHECK_RET(Launch(boom, cont, nullptr), ACL_SUCCESS);
  CHECK_RET(Launch(inc, cont, x), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(cont), ACL_ERROR_RT_AICORE_EXCEPTION);
  CHECK(g_info.calls == 1 && g_info.task == 0);
  CHECK(g_info.argsRet == ACL_ERROR_INVALID_EXCEPTION_INFO && g_info.funcRet == ACL_ERROR_INVALID_EXCEPTION_INFO);
  CHECK_RET(aclrtMemcpy(&word, sizeof word, x, sizeof word, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(word == 4); /* continue mode: both Incs ran */

  CHECK_RET(aclrtExceptionInfoCallbackUnregister(OnException), ACL_SUCCESS);
  CHECK_RET(aclrtFree(x), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(stop), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(cont), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryUnLoad(bin), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(kDevice), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
