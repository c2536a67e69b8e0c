/*
 * tests/aclnn/hello_add.cpp — CANN's hello world, written the way its
 * quickstart sample is: two vectors added with aclnnAdd through the
 * operator library's two phases, the output wrapped in an aclDataBuffer,
 * the result read back and compared. Built as C++17 with -Wall -Werror
 * against the installed headers, linked with libascendcl, libnnopbase and
 * libopapi; run by run_aclnn.py against rdevd (exit 0 = every value right).
 */
#include <cmath>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"
#include "utils.h"

#define CHECK_RESULT(result)                                                                                     \
  do {                                                                                                           \
    const auto resultValue = (result);                                                                           \
    if (resultValue != ACL_SUCCESS) {                                                                            \
      ERROR_LOG("Operation failed: %s returned error code %d (%s)", #result, static_cast<int32_t>(resultValue), \
                aclGetRecentErrMsg());                                                                           \
      return -1;                                                                                                 \
    }                                                                                                            \
  } while (0)

static int64_t ShapeSize(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

template <typename T>
static int MakeTensor(const std::vector<T> &host, const std::vector<int64_t> &shape, void **dev, aclDataType type,
                      aclTensor **tensor) {
  auto size = ShapeSize(shape) * sizeof(T);
  CHECK_RESULT(aclrtMalloc(dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK_RESULT(aclrtMemcpy(*dev, size, host.data(), size, ACL_MEMCPY_HOST_TO_DEVICE));
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), type, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                            shape.data(), shape.size(), *dev);
  return *tensor ? 0 : -1;
}

int main() {
  CHECK_RESULT(aclInit(nullptr));
  int32_t deviceId = 0;
  CHECK_RESULT(aclrtSetDevice(deviceId));
  aclrtStream stream = nullptr;
  CHECK_RESULT(aclrtCreateStream(&stream));

  std::vector<int64_t> shape{8};
  std::vector<float> selfHost = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> otherHost = {0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f, 4};
  std::vector<float> outHost(8, 0.0f);
  float alphaValue = 1.0f;
  void *selfDev = nullptr, *otherDev = nullptr, *outDev = nullptr;
  aclTensor *self = nullptr, *other = nullptr, *out = nullptr;
  CHECK_RESULT(MakeTensor(selfHost, shape, &selfDev, aclDataType::ACL_FLOAT, &self));
  CHECK_RESULT(MakeTensor(otherHost, shape, &otherDev, aclDataType::ACL_FLOAT, &other));
  CHECK_RESULT(MakeTensor(outHost, shape, &outDev, aclDataType::ACL_FLOAT, &out));
  aclScalar *alpha = aclCreateScalar(&alphaValue, aclDataType::ACL_FLOAT);
  if (!alpha) {
    ERROR_LOG("aclCreateScalar failed");
    return -1;
  }
  aclDataBuffer *outBuffer = aclCreateDataBuffer(outDev, outHost.size() * sizeof(float));
  void *outAddr = aclGetDataBufferAddr(outBuffer);
  if (outAddr != outDev || aclGetDataBufferSizeV2(outBuffer) != outHost.size() * sizeof(float)) {
    ERROR_LOG("aclDataBuffer does not hold what it was given");
    return -1;
  }

  uint64_t workspaceSize = 0;
  aclOpExecutor *executor = nullptr;
  CHECK_RESULT(aclnnAddGetWorkspaceSize(self, other, alpha, out, &workspaceSize, &executor));
  INFO_LOG("workspace size = %lu", workspaceSize);
  void *workspace = nullptr;
  if (workspaceSize > 0) CHECK_RESULT(aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK_RESULT(aclnnAdd(workspace, workspaceSize, executor, stream));
  CHECK_RESULT(aclrtSynchronizeStream(stream));

  std::vector<float> result(8, 0.0f);
  CHECK_RESULT(aclrtMemcpy(result.data(), result.size() * sizeof(float), outAddr, result.size() * sizeof(float),
                           ACL_MEMCPY_DEVICE_TO_HOST));
  int wrong = 0;
  for (size_t i = 0; i < result.size(); i++) {
    float want = selfHost[i] + alphaValue * otherHost[i];
    printf("  result[%zu] = %.1f (expected: %.1f)\n", i, result[i], want);
    wrong += std::fabs(result[i] - want) > 0.0f;
  }

  aclDestroyTensor(self);
  aclDestroyTensor(other);
  aclDestroyTensor(out);
  aclDestroyScalar(alpha);
  aclDestroyDataBuffer(outBuffer);
  CHECK_RESULT(aclrtFree(selfDev));
  CHECK_RESULT(aclrtFree(otherDev));
  CHECK_RESULT(aclrtFree(outDev));
  if (workspace) CHECK_RESULT(aclrtFree(workspace));
  CHECK_RESULT(aclrtDestroyStream(stream));
  CHECK_RESULT(aclrtResetDeviceForce(deviceId));
  CHECK_RESULT(aclFinalize());
  if (wrong) {
    ERROR_LOG("%d values wrong", wrong);
    return -1;
  }
  INFO_LOG("Sample run successfully!");
  return 0;
}
