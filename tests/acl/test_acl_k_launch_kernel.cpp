/*
 * tests/acl/test_acl_k_launch_kernel.cpp — the flow of the CANN runtime
 * sample example/2_advanced_features/kernel/0_launch_kernel (kernel loading
 * and execution in its two modes, "simple" and "placeholder"), on the sim:
 * the kernel binary is a sim binary (docs/sim-binary.md) the program writes
 * to a temporary file first, naming the registry's add_f32 as "add_custom"
 * (z[i] = x[i] + y[i], i < n) and read_i32 as "read_custom"; it is loaded
 * with aclrtBinaryLoadFromFile, the function found with
 * aclrtBinaryGetFunction, and launched with aclrtLaunchKernelWithHostArgs
 * (the sample's aclrtKernelArgs* and aclrtLaunchKernelWithConfig are not
 * offered by rdev; the host-argument launch is what they build).
 *   - simple: x, y and z are device memory the program filled by
 *     aclrtMemcpy; the arguments are the three addresses and n;
 *   - placeholder: x and y are place holders (aclrtPlaceHolderInfo): their
 *     data follows the arguments in the host blob, and the library copies it
 *     to device memory of the launch and writes its address at the
 *     argument's offset; z is device memory. As the sample's place holders
 *     (TOTAL_LENGTH, TILE_NUM), a launch of read_custom over 2 blocks reads
 *     two int32 values given only as a place holder and prints them
 *     ("Destination data: N", captured from stdout).
 * Checked as its run.sh checks (scripts/verify_result.py): the output read
 * back against the golden x + y, element by element within rtol 1e-3 and
 * atol 1e-5, with an error ratio of at most 1e-3 — here no element may
 * differ. Also: the place-holder values printed are the ones given, the
 * function lookup of a name the binary lacks fails, and the binary unloads.
 * Run by run_acl.py against a real rdevd.
 */
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl_check.h"
#include "capture.h"

namespace {

const char kBinary[] =
    "rdev-sim-binary 1\n"
    "# the 0_launch_kernel sample's add_custom, and a reader of its place holders\n"
    "kernel add_custom add_f32\n"
    "  arg ptr x reach=arg3*4\n"
    "  arg ptr y reach=arg3*4\n"
    "  arg ptr z reach=arg3*4 writes\n"
    "  arg u32 n\n"
    "kernel read_custom read_i32\n"
    "  arg ptr devPtr reach=blocks*4\n";

/* Writes the binary to a temporary file; its path, "" on failure. */
std::string WriteBinaryFile() {
  char path[] = "/tmp/rdev_launch_kernel_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "";
  const size_t len = sizeof kBinary - 1;
  const bool ok = write(fd, kBinary, len) == static_cast<ssize_t>(len);
  close(fd);
  if (!ok) {
    unlink(path);
    return "";
  }
  return path;
}

/* verify_result.py: np.isclose(output, golden, rtol=1e-3, atol=1e-5); the ratio of elements that differ. */
double ErrorRatio(const std::vector<float> &out, const std::vector<float> &golden) {
  size_t bad = 0;
  for (size_t i = 0; i < golden.size(); i++)
    if (!(std::fabs(out[i] - golden[i]) <= 1e-5 + 1e-3 * std::fabs(golden[i]))) bad++;
  return static_cast<double>(bad) / static_cast<double>(golden.size());
}

/* The arguments of add_custom as a host stub packs them: pointers at 0, 8, 16, n at 24. */
struct AddArgs {
  uint64_t x, y, z;
  uint32_t n;
  uint32_t pad;
};

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  const int32_t deviceId = 0;
  const uint32_t blockDim = 8;
  const uint32_t n = 8 * 2048;
  const size_t bytes = n * sizeof(float);
  aclrtStream stream = nullptr;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);

  float *xHost = nullptr, *yHost = nullptr, *zHost = nullptr;
  float *xDevice = nullptr, *yDevice = nullptr, *zDevice = nullptr;
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&xHost), bytes), ACL_SUCCESS);
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&yHost), bytes), ACL_SUCCESS);
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&zHost), bytes), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&xDevice), bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&yDevice), bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&zDevice), bytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const std::string path = WriteBinaryFile();
  if (!stream || !xHost || !yHost || !zHost || !xDevice || !yDevice || !zDevice || path.empty()) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }

  /* the input data (gen_data.py's role) and the golden output */
  std::vector<float> golden(n);
  uint32_t seed = 12345;
  for (uint32_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    xHost[i] = static_cast<float>(seed >> 8) / 16777216.0f * 200.0f - 100.0f;
    seed = seed * 1664525u + 1013904223u;
    yHost[i] = static_cast<float>(seed >> 8) / 16777216.0f * 200.0f - 100.0f;
    golden[i] = xHost[i] + yHost[i];
  }
  CHECK_RET(aclrtMemcpy(xDevice, bytes, xHost, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(yDevice, bytes, yHost, bytes, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);

  /* the binary, from its file */
  aclrtBinHandle binHandle = nullptr;
  aclrtFuncHandle addFunc = nullptr, readFunc = nullptr, missing = nullptr;
  CHECK_RET(aclrtBinaryLoadFromFile(path.c_str(), nullptr, &binHandle), ACL_SUCCESS);
  unlink(path.c_str());
  if (!binHandle) {
    std::fprintf(stderr, "the binary did not load\n");
    return 1;
  }
  CHECK_RET(aclrtBinaryGetFunction(binHandle, "add_custom", &addFunc), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryGetFunction(binHandle, "read_custom", &readFunc), ACL_SUCCESS);
  CHECK(aclrtBinaryGetFunction(binHandle, "mul_custom", &missing) != ACL_SUCCESS);

  /* simple: every pointer argument is device memory the program filled */
  CHECK_RET(aclrtMemset(zDevice, bytes, 0, bytes), ACL_SUCCESS);
  AddArgs simple{reinterpret_cast<uintptr_t>(xDevice), reinterpret_cast<uintptr_t>(yDevice),
                 reinterpret_cast<uintptr_t>(zDevice), n, 0};
  CHECK_RET(aclrtLaunchKernelWithHostArgs(addFunc, blockDim, stream, nullptr, &simple, sizeof simple, nullptr, 0),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(zHost, bytes, zDevice, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  const double simpleRatio = ErrorRatio(std::vector<float>(zHost, zHost + n), golden);
  std::printf("[INFO]  Kernel launch sample runs in simple mode. error ratio: %.4f, tolerance: 0.0010\n", simpleRatio);
  CHECK(simpleRatio <= 1e-3);
  CHECK(simpleRatio == 0.0);

  /* placeholder: x and y travel in the blob, after the arguments */
  CHECK_RET(aclrtMemset(zDevice, bytes, 0, bytes), ACL_SUCCESS);
  const size_t argsEnd = 32, xAt = argsEnd, yAt = xAt + bytes;
  std::vector<unsigned char> blob(yAt + bytes, 0);
  AddArgs ph{0, 0, reinterpret_cast<uintptr_t>(zDevice), n, 0};
  std::memcpy(blob.data(), &ph, sizeof ph);
  std::memcpy(blob.data() + xAt, xHost, bytes);
  std::memcpy(blob.data() + yAt, yHost, bytes);
  aclrtPlaceHolderInfo holders[2] = {{0, static_cast<uint32_t>(xAt)}, {8, static_cast<uint32_t>(yAt)}};
  CHECK_RET(aclrtLaunchKernelWithHostArgs(addFunc, blockDim, stream, nullptr, blob.data(), blob.size(), holders, 2),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(zHost, bytes, zDevice, bytes, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  const double placeholderRatio = ErrorRatio(std::vector<float>(zHost, zHost + n), golden);
  std::printf("[INFO]  Kernel launch sample runs in placeholder mode. error ratio: %.4f, tolerance: 0.0010\n",
              placeholderRatio);
  CHECK(placeholderRatio <= 1e-3);
  CHECK(placeholderRatio == 0.0);

  /* the sample's place holders, TOTAL_LENGTH and TILE_NUM, read by a kernel */
  const int32_t TOTAL_LENGTH = 8 * 2048, TILE_NUM = 8;
  unsigned char readBlob[16] = {0};
  std::memcpy(readBlob + 8, &TOTAL_LENGTH, 4);
  std::memcpy(readBlob + 12, &TILE_NUM, 4);
  aclrtPlaceHolderInfo readHolder = {0, 8};
  StdoutCapture cap;
  CHECK(cap.Begin());
  CHECK_RET(aclrtLaunchKernelWithHostArgs(readFunc, 2, stream, nullptr, readBlob, sizeof readBlob, &readHolder, 1),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  const std::vector<long> read = Values(cap.End(), "Destination data:");
  CHECK(read.size() == 2 && read[0] == TOTAL_LENGTH && read[1] == TILE_NUM);

  CHECK_RET(aclrtBinaryUnLoad(binHandle), ACL_SUCCESS);
  CHECK_RET(aclrtFree(zDevice), ACL_SUCCESS);
  CHECK_RET(aclrtFree(yDevice), ACL_SUCCESS);
  CHECK_RET(aclrtFree(xDevice), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(zHost), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(yHost), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(xHost), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
