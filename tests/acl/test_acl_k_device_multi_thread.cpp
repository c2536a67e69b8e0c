/*
 * tests/acl/test_acl_k_device_multi_thread.cpp — the flow of the CANN runtime
 * sample example/1_basic_features/device/1_device_multi_thread, with its
 * kernel: the main thread sets device 0 and a process-wide resource limit of
 * one vector core (aclrtSetDeviceResLimit), then a worker thread sets the
 * device itself, creates a stream, queries the device (SoC "sim", 2
 * devices, status normal, run mode ACL_HOST, utilization rates, stream
 * priority range, vector core count), reads the resource limit back (1, the
 * main thread's, as the README shows, and what aclrtGetResInCurrentThread
 * reports), adds two 1024-float vectors on the device with that many blocks
 * and checks every element against the host's sum (the README's
 * "Result ... Expected value"), then resets the limit (the device's default
 * again: what aclrtGetResInCurrentThread reports without it) and releases
 * everything; the main thread finalizes.
 *
 * The sample's kernel is AddDo (kernel_func/kernel_add.h), from the sim
 * kernel library (client/cann/samples/), as the sample calls it. Run by
 * run_acl.py against a real rdevd.
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_add.h"

namespace {

bool DeviceInfoQuery() {
  const char *soc = aclrtGetSocName();
  std::printf("[INFO]  Current Ascend chipset platform is: %s.\n", soc ? soc : "(null)");
  const char *want = std::getenv("RDEV_TEST_SOC"); /* the backend's SoC; the sim's by default */
  CHECK(soc && std::string(soc) == (want ? want : "sim"));

  uint32_t deviceCount = 0;
  CHECK_RET(aclrtGetDeviceCount(&deviceCount), ACL_SUCCESS);
  std::printf("[INFO]  Get device count success. deviceCount: %u.\n", deviceCount);
  CHECK(deviceCount == 2);

  aclrtDeviceStatus deviceStatus = ACL_RT_DEVICE_STATUS_END;
  CHECK_RET(aclrtQueryDeviceStatus(0, &deviceStatus), ACL_SUCCESS);
  std::printf("[INFO]  Query device status success. deviceStatus: %d.\n", static_cast<int>(deviceStatus));
  CHECK(deviceStatus == ACL_RT_DEVICE_STATUS_NORMAL);

  aclrtRunMode runMode = ACL_DEVICE;
  CHECK_RET(aclrtGetRunMode(&runMode), ACL_SUCCESS);
  std::printf("[INFO]  RunMode is %s.\n", runMode == ACL_HOST ? "ACL_HOST" : "not ACL_HOST");
  CHECK(runMode == ACL_HOST);

  aclrtUtilizationInfo utilizationInfo;
  std::memset(&utilizationInfo, 0x7f, sizeof utilizationInfo);
  utilizationInfo.utilizationExtend = nullptr;
  CHECK_RET(aclrtGetDeviceUtilizationRate(0, &utilizationInfo), ACL_SUCCESS);
  std::printf(
      "[INFO]  Get device utilizationRate success. cubeUtilization %d, vectorUtilization %d, "
      "aicpuUtilization %d, memoryUtilization %d.\n",
      utilizationInfo.cubeUtilization, utilizationInfo.vectorUtilization, utilizationInfo.aicpuUtilization,
      utilizationInfo.memoryUtilization);
  const int32_t rates[] = {utilizationInfo.cubeUtilization, utilizationInfo.vectorUtilization,
                           utilizationInfo.aicpuUtilization, utilizationInfo.memoryUtilization};
  for (int32_t r : rates) CHECK(r >= -1 && r <= 100); /* a percentage, or -1: not there / not measured */

  int32_t leastPriority = -12345, greatestPriority = -12345;
  CHECK_RET(aclrtDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority), ACL_SUCCESS);
  std::printf("[INFO]  Get stream priorityRange success. leastPriority %d, greatestPriority %d.\n", leastPriority,
              greatestPriority);
  CHECK(leastPriority != -12345 && greatestPriority != -12345);
  CHECK(leastPriority >= greatestPriority); /* a smaller number is a higher priority */

  int64_t vectorCoreNum = 0;
  CHECK_RET(aclrtGetDeviceInfo(0, ACL_DEV_ATTR_VECTOR_CORE_NUM, &vectorCoreNum), ACL_SUCCESS);
  std::printf("[INFO]  Get device info success. vectorCoreNum %lld.\n", static_cast<long long>(vectorCoreNum));
  CHECK(vectorCoreNum >= 1);
  return true;
}

void RunThread() {
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  if (!stream) return;
  DeviceInfoQuery();

  const uint32_t TOTAL_SIZE = 1024;
  const uint32_t DATA_SIZE = TOTAL_SIZE * static_cast<uint32_t>(sizeof(float));
  float *hostSrcA = nullptr, *hostSrcB = nullptr, *hostDst = nullptr;
  float *devSrcA = nullptr, *devSrcB = nullptr, *devDst = nullptr;
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&hostSrcA), DATA_SIZE), ACL_SUCCESS);
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&hostSrcB), DATA_SIZE), ACL_SUCCESS);
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&hostDst), DATA_SIZE), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devSrcA), DATA_SIZE, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devSrcB), DATA_SIZE, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devDst), DATA_SIZE, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!hostSrcA || !hostSrcB || !hostDst || !devSrcA || !devSrcB || !devDst) {
    CHECK(!"worker set-up failed");
    return;
  }
  for (uint32_t i = 0; i < TOTAL_SIZE; ++i) {
    hostSrcA[i] = static_cast<float>(i);
    hostSrcB[i] = static_cast<float>(i);
    hostDst[i] = -1.0f;
  }
  CHECK_RET(aclrtMemcpy(devSrcA, DATA_SIZE, hostSrcA, DATA_SIZE, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(devSrcB, DATA_SIZE, hostSrcB, DATA_SIZE, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(devDst, DATA_SIZE, 0xff, DATA_SIZE), ACL_SUCCESS);

  /* the main thread's limit, seen from this thread */
  uint32_t resLimitValue = 0, inThread = 0;
  CHECK_RET(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, &resLimitValue), ACL_SUCCESS);
  std::printf("[INFO]  Get device resLimit success. VECTOR_CORE %u.\n", resLimitValue);
  CHECK(resLimitValue == 1);
  CHECK_RET(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &inThread), ACL_SUCCESS);
  CHECK(inThread == resLimitValue);

  AddDo(resLimitValue ? resLimitValue : 1, stream, devSrcA, devSrcB, devDst, TOTAL_SIZE);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(hostDst, DATA_SIZE, devDst, DATA_SIZE, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  int wrong = 0;
  for (uint32_t i = 0; i < TOTAL_SIZE; ++i) {
    if (i < 10)
      std::printf("[INFO]  Result: hostDst[%u]: %f Expected value: %f\n", i, hostDst[i], hostSrcA[i] + hostSrcB[i]);
    if (hostDst[i] != hostSrcA[i] + hostSrcB[i]) wrong++;
  }
  CHECK(wrong == 0);

  /* reset: the default limit, the one the thread gets with no limit set */
  CHECK_RET(aclrtResetDeviceResLimit(0), ACL_SUCCESS);
  uint32_t deflt = 0;
  CHECK_RET(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, &deflt), ACL_SUCCESS);
  CHECK_RET(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &inThread), ACL_SUCCESS);
  std::printf("[INFO]  After reset, VECTOR_CORE limit %u, in this thread %u.\n", deflt, inThread);
  CHECK(deflt >= 1 && inThread == deflt);

  CHECK_RET(aclrtFree(devSrcA), ACL_SUCCESS);
  CHECK_RET(aclrtFree(devSrcB), ACL_SUCCESS);
  CHECK_RET(aclrtFree(devDst), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(hostSrcA), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(hostSrcB), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(hostDst), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(0), ACL_SUCCESS);
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  std::printf("[INFO]  Start to run device_multi_thread sample.\n");
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_VECTOR_CORE, 1), ACL_SUCCESS);

  std::thread t1(RunThread);
  t1.join();

  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
