/*
 * tests/acl/test_acl_k_hostfunc_subscribe.cpp — host functions run by a
 * thread the program subscribed to a stream (aclrtSubscribeHostFunc,
 * aclrtProcessHostFunc, aclrtUnSubscribeHostFunc), as in the CANN runtime
 * sample example/2_advanced_features/callback/0_simple_callback, call by
 * call:
 *   - aclrtProcessHostFunc: timeout 0 or below -1 is ACL_ERROR_INVALID_PARAM;
 *     on a thread with no subscription ACL_ERROR_THREAD_NOT_SUBSCRIBE; with
 *     nothing to run it waits its timeout and returns
 *     ACL_ERROR_RT_REPORT_TIMEOUT (not a report of aclrtSubscribeReport's:
 *     the two kinds are apart);
 *   - the functions of aclrtLaunchHostFunc on a subscribed stream run on the
 *     subscribed thread, in stream order, each holding the stream: the
 *     kernel after one (EasyOP) runs only after it returned, the one before
 *     (LongOP) ran before it started; with user data;
 *   - a second subscription of the stream is ACL_ERROR_REPEAT_SUBSCRIBE, an
 *     unsubscribe of a thread not subscribed ACL_ERROR_STREAM_NOT_SUBSCRIBE;
 *     a stream may have a report subscription beside it, and
 *     aclrtLaunchCallback still goes to its report thread;
 *   - after aclrtUnSubscribeHostFunc the stream's host functions run on the
 *     library's own thread again, and the former thread's
 *     aclrtProcessHostFunc is ACL_ERROR_THREAD_NOT_SUBSCRIBE.
 * Run by run_acl.py against a real rdevd. C++17.
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

constexpr int32_t kDevice = 0;
aclrtContext g_context = nullptr;

struct Ran {
  std::atomic<int> count{0};
  std::thread::id thread;
  int data = 0;
  uint32_t seen = 0xdeadbeef; /* the device word, read on a probe stream while the function holds its stream */
  std::atomic<bool> release{true};
};
Ran g_host, g_report;
uint32_t *g_word = nullptr;
aclrtStream g_probe = nullptr;

void HostFunc(void *arg) {
  g_host.thread = std::this_thread::get_id();
  g_host.data = *static_cast<int *>(arg);
  uint32_t v = 0;
  (void)aclrtMemcpyAsync(&v, sizeof v, g_word, sizeof v, ACL_MEMCPY_DEVICE_TO_HOST, g_probe);
  g_host.seen = v;
  for (int i = 0; i < 5000 && !g_host.release; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  g_host.count++;
}

void Report(void *arg) {
  g_report.thread = std::this_thread::get_id();
  g_report.data = *static_cast<int *>(arg);
  g_report.count++;
}

std::atomic<int> g_hostOthers{0}, g_reportOthers{0};

void HostFuncLoop(std::atomic<bool> *loop) {
  (void)aclrtSetCurrentContext(g_context);
  while (*loop) {
    aclError r = aclrtProcessHostFunc(50);
    if (r == ACL_ERROR_THREAD_NOT_SUBSCRIBE) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (r != ACL_SUCCESS && r != ACL_ERROR_RT_REPORT_TIMEOUT && r != ACL_ERROR_THREAD_NOT_SUBSCRIBE) g_hostOthers++;
  }
}

void ReportLoop(std::atomic<bool> *loop) {
  (void)aclrtSetCurrentContext(g_context);
  while (*loop) {
    aclError r = aclrtProcessReport(50);
    if (r == ACL_ERROR_THREAD_NOT_SUBSCRIBE) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (r != ACL_SUCCESS && r != ACL_ERROR_RT_REPORT_TIMEOUT && r != ACL_ERROR_THREAD_NOT_SUBSCRIBE) g_reportOthers++;
  }
}

uint64_t IdNumber(std::thread::id id) {
  std::ostringstream oss; /* as the sample turns a thread id into the subscription's number */
  oss << id;
  return std::stoull(oss.str());
}

uint32_t Peek() {
  uint32_t v = 0xdeadbeef;
  CHECK_RET(aclrtMemcpyAsync(&v, sizeof v, g_word, sizeof v, ACL_MEMCPY_DEVICE_TO_HOST, g_probe), ACL_SUCCESS);
  return v;
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&g_context, kDevice), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&g_probe), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&g_word), 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!g_context || !stream || !g_probe || !g_word) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  CHECK_RET(aclrtMemset(g_word, 64, 0, 64), ACL_SUCCESS);
  int data = 520;

  /* the calls alone, on the main thread */
  CHECK_RET(aclrtProcessHostFunc(0), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtProcessHostFunc(-2), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtProcessHostFunc(10), ACL_ERROR_THREAD_NOT_SUBSCRIBE);
  const uint64_t self = IdNumber(std::this_thread::get_id());
  CHECK_RET(aclrtSubscribeReport(self, stream), ACL_SUCCESS);
  CHECK_RET(aclrtProcessHostFunc(10), ACL_ERROR_THREAD_NOT_SUBSCRIBE); /* a report subscription is not one */
  CHECK_RET(aclrtUnSubscribeReport(self, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSubscribeHostFunc(self, stream), ACL_SUCCESS);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_RET(aclrtProcessHostFunc(150), ACL_ERROR_RT_REPORT_TIMEOUT);
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(waited >= 140 && waited < 5000);
  CHECK_RET(aclrtProcessReport(10), ACL_ERROR_THREAD_NOT_SUBSCRIBE); /* nor the other way round */
  /* run by the caller of aclrtProcessHostFunc, here the main thread itself */
  CHECK_RET(aclrtLaunchHostFunc(stream, HostFunc, &data), ACL_SUCCESS);
  CHECK_RET(aclrtProcessHostFunc(5000), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(g_host.count == 1 && g_host.thread == std::this_thread::get_id() && g_host.data == 520);
  CHECK_RET(aclrtSubscribeHostFunc(self, stream), ACL_ERROR_REPEAT_SUBSCRIBE);
  CHECK_RET(aclrtUnSubscribeHostFunc(self + 1, stream), ACL_ERROR_STREAM_NOT_SUBSCRIBE);
  CHECK_RET(aclrtUnSubscribeHostFunc(self, stream), ACL_SUCCESS);
  CHECK_RET(aclrtUnSubscribeHostFunc(self, stream), ACL_ERROR_STREAM_NOT_SUBSCRIBE);
  CHECK_RET(aclrtProcessHostFunc(10), ACL_ERROR_THREAD_NOT_SUBSCRIBE);

  /* the sample's threads: one for reports, one for host functions, both subscribed to the stream */
  std::atomic<bool> hostLoop{true}, reportLoop{true};
  std::thread hostThread(HostFuncLoop, &hostLoop), reportThread(ReportLoop, &reportLoop);
  const uint64_t hostTid = IdNumber(hostThread.get_id()), reportTid = IdNumber(reportThread.get_id());
  CHECK_RET(aclrtSubscribeReport(reportTid, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSubscribeHostFunc(hostTid, stream), ACL_SUCCESS);

  /* in stream order, holding the stream */
  g_host.release = false;
  LongOP(1, stream, g_word);
  CHECK_RET(aclrtLaunchHostFunc(stream, HostFunc, &data), ACL_SUCCESS);
  EasyOP(1, stream, g_word);
  CHECK_RET(aclrtLaunchCallback(Report, &data, ACL_CALLBACK_BLOCK, stream), ACL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(800)); /* LongOP done, the function holds the stream */
  CHECK(Peek() == 1);
  CHECK(g_host.count == 1);
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
  CHECK_RET(aclrtStreamQuery(stream, &status), ACL_SUCCESS);
  CHECK(status == ACL_STREAM_STATUS_NOT_READY);
  g_host.release = true;
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(g_host.count == 2 && g_host.thread == hostThread.get_id() && g_host.data == 520);
  CHECK(g_host.seen == 1); /* LongOP ran before the function */
  CHECK(Peek() == 2);      /* EasyOP after it */
  CHECK(g_report.count == 1 && g_report.thread == reportThread.get_id() && g_report.data == 520);

  /* unsubscribed: the library's own thread runs them again */
  CHECK_RET(aclrtUnSubscribeHostFunc(hostTid, stream), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchHostFunc(stream, HostFunc, &data), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(g_host.count == 3);
  CHECK(g_host.thread != hostThread.get_id() && g_host.thread != std::this_thread::get_id() &&
        g_host.thread != reportThread.get_id());

  hostLoop = false;
  reportLoop = false;
  hostThread.join();
  reportThread.join();
  CHECK(g_hostOthers == 0 && g_reportOthers == 0);
  CHECK_RET(aclrtUnSubscribeReport(reportTid, stream), ACL_SUCCESS);

  CHECK_RET(aclrtFree(g_word), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(g_probe), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(g_context), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(kDevice), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
