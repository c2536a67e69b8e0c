/*
 * tests/acl/test_acl_k_d2h_async.cpp — the flow of the CANN runtime sample
 * example/1_basic_features/memory/4_d2h_async_memory_copy, with its kernel:
 * the samples' WriteDo kernel writes 123 into device memory and prints it
 * ("Source data: N", kernel print output, captured from stdout around the
 * stream's synchronize), aclrtMemcpyAsync queues the copy of 1 MiB of it to
 * aclrtMallocHost memory on the same stream, and after the synchronize the
 * host reads the value ("Destination data"). Checked as its run.sh checks:
 * the first Source value equals the first Destination value; here also that
 * both are 123, that one block printed one line, and that the queued copy
 * ran after the kernel (stream order: the host buffer held -1 before). Run
 * by run_acl.py against a real rdevd.
 */
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl_check.h"
#include "kernel_func/kernel_ops.h"

namespace {

/* Kernel print output reaches stdout at the stream's synchronize: what fd 1
 * receives between Begin and End is returned (and then shown on the real
 * stdout, for the log). */
class StdoutCapture {
 public:
  bool Begin() {
    std::fflush(stdout);
    file_ = std::tmpfile();
    saved_ = file_ ? dup(1) : -1;
    return saved_ >= 0 && dup2(fileno(file_), 1) >= 0;
  }
  std::string End() {
    std::fflush(stdout);
    std::string text;
    if (saved_ >= 0) {
      dup2(saved_, 1);
      close(saved_);
      saved_ = -1;
    }
    if (file_) {
      std::rewind(file_);
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, file_)) > 0) text.append(buf, n);
      std::fclose(file_);
      file_ = nullptr;
    }
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return text;
  }

 private:
  std::FILE *file_ = nullptr;
  int saved_ = -1;
};

/* The values of the lines "<key> N" in text, in order (as run.sh's grep). */
std::vector<long> Values(const std::string &text, const char *key) {
  std::vector<long> out;
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    long v = 0;
    if (std::sscanf(text.c_str() + at + std::strlen(key), " %ld", &v) == 1) out.push_back(v);
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  (void)argc;
  const int32_t deviceId = 0;
  const uint64_t size = 1 * 1024 * 1024;
  const int writeValue = 123;
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(deviceId), ACL_SUCCESS);
  aclrtStream stream = nullptr;
  CHECK_RET(aclrtCreateStream(&stream), ACL_SUCCESS);
  int *hostPtrA = nullptr;
  int *devPtrB = nullptr;
  CHECK_RET(aclrtMallocHost(reinterpret_cast<void **>(&hostPtrA), size), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&devPtrB), size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  if (!stream || !hostPtrA || !devPtrB) {
    std::fprintf(stderr, "set-up failed\n");
    return 1;
  }
  std::memset(hostPtrA, 0xff, size); /* -1 until the copy lands */

  /* kernel, then the queued copy, on one stream; the synchronize waits for both */
  StdoutCapture cap;
  CHECK(cap.Begin());
  WriteDo(1, stream, devPtrB, writeValue);
  CHECK_RET(aclrtMemcpyAsync(hostPtrA, size, devPtrB, size, ACL_MEMCPY_DEVICE_TO_HOST, stream), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  const std::string printed = cap.End();
  const int readValue = *hostPtrA;
  std::printf("[INFO]  Destination data: %d\n", readValue);

  const std::vector<long> src = Values(printed, "Source data:");
  CHECK(src.size() == 1); /* one block, one line */
  CHECK(!src.empty() && src[0] == writeValue);
  CHECK(!src.empty() && src[0] == readValue); /* run.sh: Source data == Destination data */

  CHECK_RET(aclrtDestroyStreamForce(stream), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(hostPtrA), ACL_SUCCESS);
  CHECK_RET(aclrtFree(devPtrB), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(deviceId), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  std::printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
