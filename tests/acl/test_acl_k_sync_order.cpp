/*
 * tests/acl/test_acl_k_sync_order.cpp — synchronous copies and memsets come
 * after the work queued earlier on the streams of the calling thread's
 * device (docs/acl.md: the one place rdev promises more than CANN
 * documents). The flow of the CANN runtime sample
 * example/1_basic_features/memory/5_d2d_sync_memory_copy as the sample
 * writes it, without a synchronize between the kernel and the copy:
 * WriteDo(A, v) on a stream; aclrtMemcpy device to device, A to B; ReadDo(B)
 * on the stream; one synchronize; 200 times with a new value each time, and
 * not one "Destination data" may differ from its "Source data" (nor B, read
 * back, from v). Then the same behind LongOP (a kernel that runs 500 ms
 * first), which makes the race certain were the copy not to wait.
 *
 * Then each kind of synchronous call behind LongOP on a stream that was not
 * synchronized: aclrtMemcpy host to device (the kernel's increment must not
 * land on the copied value), device to host (it must see the increment),
 * aclrtMemset, aclrtMemcpy2d; on the default stream; on a stream another
 * thread made and used (streams are the process's); and a stream of
 * another device is not waited for (the copy returns while its LongOP
 * still runs). Run by run_acl.py against a real rdevd. C++17.
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl_check.h"
#include "capture.h"
#include "kernel_func/kernel_ops.h"

namespace {

constexpr int32_t kDevice = 0;
constexpr size_t kSize = 1 << 20;

uint32_t ReadWord(const void *dev) {
  uint32_t v = 0xdeadbeef;
  CHECK_RET(aclrtMemcpy(&v, sizeof v, dev, sizeof v, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return v;
}

void WriteWord(void *dev, uint32_t v) {
  CHECK_RET(aclrtMemcpy(dev, sizeof v, &v, sizeof v, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
}

/* The sample's flow, n times, optionally behind LongOP on the same stream;
 * the number of wrong values. */
int D2dFlow(aclrtStream stream, int *a, int *b, uint32_t *slow, int n, int first) {
  StdoutCapture cap;
  CHECK(cap.Begin());
  int wrong = 0;
  for (int i = 0; i < n; i++) {
    const int v = first + i;
    if (slow) LongOP(1, stream, slow);
    WriteDo(1, stream, a, v);
    CHECK_RET(aclrtMemcpy(b, kSize, a, kSize, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
    ReadDo(1, stream, b);
    CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    int got = 0;
    CHECK_RET(aclrtMemcpy(&got, sizeof got, b, sizeof got, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    wrong += got != v;
  }
  const std::string printed = cap.End();
  const std::vector<long> src = Values(printed, "Source data:");
  const std::vector<long> dst = Values(printed, "Destination data:");
  CHECK(src.size() == static_cast<size_t>(n) && dst.size() == static_cast<size_t>(n));
  for (size_t i = 0; i < src.size() && i < dst.size(); i++) {
    wrong += src[i] != first + static_cast<long>(i); /* run.sh: Source data == Destination data */
    wrong += dst[i] != src[i];
  }
  return wrong;
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
  aclrtStream stream = nullptr, other = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&other), ACL_SUCCESS);
  int *a = nullptr, *b = nullptr;
  uint32_t *x = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&a), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&b), kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&x), 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!stream || !other || !a || !b || !x) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }

  /* the sample, 200 times; then behind LongOP */
  int wrong = D2dFlow(stream, a, b, nullptr, 200, 1000);
  std::printf("[INFO]  200 synchronous D2D copies after WriteDo: %d wrong values\n", wrong);
  CHECK(wrong == 0);
  wrong = D2dFlow(stream, a, b, x, 3, 5000);
  std::printf("[INFO]  3 synchronous D2D copies after LongOP and WriteDo: %d wrong values\n", wrong);
  CHECK(wrong == 0);

  /* host to device behind LongOP: the increment comes first, then the copy's value */
  WriteWord(x, 0);
  LongOP(1, stream, x);
  WriteWord(x, 100);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK(ReadWord(x) == 100);

  /* device to host behind LongOP on another stream: it sees the increment */
  LongOP(1, other, x);
  CHECK(ReadWord(x) == 101);

  /* a memset behind LongOP */
  LongOP(1, stream, x);
  CHECK_RET(aclrtMemset(x, 4096, 0, 4096), ACL_SUCCESS);
  CHECK(ReadWord(x) == 0);

  /* a 2D copy (device to host) behind LongOP */
  LongOP(1, stream, x);
  uint32_t rows[2] = {0, 0};
  CHECK_RET(aclrtMemcpy2d(rows, sizeof(uint32_t), x, 64, sizeof(uint32_t), 2, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(rows[0] == 1 && rows[1] == 0);

  /* the default stream */
  LongOP(1, nullptr, x);
  CHECK(ReadWord(x) == 2);

  /* a stream another thread made and used, on the same device (streams are the process's) */
  aclrtStream theirs = nullptr;
  std::thread t([x, &theirs] {
    CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&theirs), ACL_SUCCESS);
    LongOP(1, theirs, x);
  });
  t.join();
  CHECK(ReadWord(x) == 3);
  std::thread t2([x, theirs] {
    CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
    LongOP(1, theirs, x);
    CHECK(ReadWord(x) == 4); /* that thread's own copy */
  });
  t2.join();
  CHECK_RET(aclrtDestroyStream(theirs), ACL_SUCCESS);

  /* a stream of device 1 is not waited for by a copy of device 0's thread */
  uint32_t devices = 0;
  CHECK_RET(aclrtGetDeviceCount(&devices), ACL_SUCCESS);
  if (devices > 1) {
    CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
    aclrtStream far = nullptr;
    uint32_t *y = nullptr;
    CHECK_RET(aclrtCreateStream(&far), ACL_SUCCESS);
    CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&y), 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
    if (far && y) {
      const auto t0 = std::chrono::steady_clock::now();
      LongOP(1, far, y);
      CHECK(ReadWord(x) == 4);
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
      std::printf("[INFO]  a copy beside device 1's LongOP took %lld ms\n", static_cast<long long>(ms));
      CHECK(ms < 400);
      CHECK_RET(aclrtSynchronizeStream(far), ACL_SUCCESS);
      CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
      CHECK_RET(aclrtFree(y), ACL_SUCCESS);
      CHECK_RET(aclrtDestroyStream(far), ACL_SUCCESS);
      CHECK_RET(aclrtSetDevice(kDevice), ACL_SUCCESS);
    }
  }

  CHECK_RET(aclrtFree(a), ACL_SUCCESS);
  CHECK_RET(aclrtFree(b), ACL_SUCCESS);
  CHECK_RET(aclrtFree(x), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(other), ACL_SUCCESS);
  CHECK_RET(aclrtResetDevice(kDevice), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
