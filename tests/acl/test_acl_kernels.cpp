// tests/acl/test_acl_kernels.cpp — kernels from binaries through libascendcl.so, written only against the acl
// headers: a binary loaded before aclInit (as generated stubs load theirs), functions by name and entry, launches
// with host arguments, with place holders, from an argument block (aclrtKernelArgs* and
// aclrtLaunchKernelWithConfig) and from device memory (aclrtLaunchKernel), kernel print output at synchronize, and
// the refusals: a pointer outside the process's memory, a kernel with no layout, an unknown kernel, a binary that
// is not one, a binary rdevd refuses (at the synchronize of its kernels' launches). Run by run_acl.py against a
// real rdevd.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "acl/acl.h"
#include "acl_check.h"
#include "capture.h"

namespace {

const char kBinary[] =
    "rdev-sim-binary 1\n"
    "kernel Write write_i32 entry=11\n"
    "  arg ptr out reach=blocks*4 writes\n"
    "  arg i32 value\n"
    "kernel Read read_i32 entry=12\n"
    "  arg ptr in reach=blocks*4\n"
    "kernel Bare write_i32 entry=13\n";

aclrtBinHandle g_early = nullptr;
const aclError g_early_rc = aclrtBinaryLoadFromData(kBinary, sizeof kBinary - 1, nullptr, &g_early);

// Well formed, but rdevd refuses it: no sim kernel of that name in its registry.
const char kRefused[] =
    "rdev-sim-binary 1\n"
    "kernel Write write_i32 entry=21\n"
    "  arg ptr out reach=blocks*4 writes\n"
    "  arg i32 value\n"
    "kernel Ghost no_such_sim_kernel entry=22\n"
    "  noargs\n";
aclrtBinHandle g_refused = nullptr;
const aclError g_refused_rc = aclrtBinaryLoadFromData(kRefused, sizeof kRefused - 1, nullptr, &g_refused);

// Not readable as a sim binary past its header (a bad entry): the library cannot tell what it declares.
const char kMalformed[] =
    "rdev-sim-binary 1\n"
    "kernel Write write_i32 entry=zz\n";
aclrtBinHandle g_malformed = nullptr;
const aclError g_malformed_rc = aclrtBinaryLoadFromData(kMalformed, sizeof kMalformed - 1, nullptr, &g_malformed);

constexpr aclError kUnknownKernel = 900007;  // RDEV_UNKNOWN_KERNEL: rdev's own range

struct WriteArgs {  // the AscendC layout: pointer at 0, value at 8
  uint64_t out;
  int32_t value;
};

uint64_t Addr(const void *p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// Runs fn with stdout going to a file; returns what it printed.
template <typename F>
std::string Captured(F fn) {
  StdoutCapture cap;
  CHECK(cap.Begin());
  fn();
  return cap.End();
}

}  // namespace

int main(int argc, char **argv) {
  (void)argc;
  CHECK(g_early_rc == ACL_SUCCESS && g_early != nullptr);
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream st = nullptr;
  CHECK_RET(aclrtCreateStream(&st), ACL_SUCCESS);
  int32_t *dev = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&dev), 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);

  // functions of the binary loaded before aclInit, by entry and by name
  aclrtFuncHandle wr = nullptr, rd = nullptr, bare = nullptr, none = nullptr;
  // the first lookup in this session, of a kernel the binary lacks: refused at once, as CANN does
  CHECK(aclrtBinaryGetFunction(g_early, "Nope", &none) != ACL_SUCCESS);
  CHECK_RET(aclrtBinaryGetFunctionByEntry(g_early, 11, &wr), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryGetFunction(g_early, "Read", &rd), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryGetFunction(g_early, "Bare", &bare), ACL_SUCCESS);
  CHECK(aclrtBinaryGetFunction(g_early, "Nope", &none) != ACL_SUCCESS);

  // the binary rdevd refuses, loaded before aclInit too: a lookup of a kernel its text declares answers at once
  // (no round trip), and the refusal is the error of that kernel's launches at their stream's synchronize; the
  // stream, another stream and the session go on. A kernel its text lacks waits for rdevd's answer: the refusal.
  CHECK(g_refused_rc == ACL_SUCCESS && g_refused != nullptr);
  aclrtFuncHandle refused_wr = nullptr;
  CHECK_RET(aclrtBinaryGetFunctionByEntry(g_refused, 21, &refused_wr), ACL_SUCCESS);
  aclrtFuncHandle refused_again = nullptr;  // the binary is on rdevd now: the same answer, no wait
  CHECK_RET(aclrtBinaryGetFunction(g_refused, "Write", &refused_again), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryGetFunction(g_refused, "Missing", &none), kUnknownKernel);
  // a binary the library cannot read waits for rdevd's answer at its first lookup: the load's refusal, at once
  CHECK(g_malformed_rc == ACL_SUCCESS && g_malformed != nullptr);
  CHECK_RET(aclrtBinaryGetFunctionByEntry(g_malformed, 0, &none), ACL_ERROR_INVALID_PARAM);
  aclrtStream st2 = nullptr;
  CHECK_RET(aclrtCreateStream(&st2), ACL_SUCCESS);
  int32_t *dev2 = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&dev2), 8, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(dev2, 8, 0, 8), ACL_SUCCESS);
  WriteArgs refused_args{Addr(dev2), 55};
  CHECK_RET(aclrtLaunchKernelWithHostArgs(refused_wr, 2, st, nullptr, &refused_args, sizeof refused_args, nullptr, 0),
            ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev2, 4, 0x11, 4, st2), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), kUnknownKernel);
  CHECK_RET(aclrtSynchronizeStream(st2), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);  // said once
  int32_t h2[2] = {-1, -1};
  CHECK_RET(aclrtMemcpy(h2, sizeof h2, dev2, sizeof h2, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(h2[0] == 0x11111111 && h2[1] == 0);  // the refused kernel wrote nothing
  CHECK_RET(aclrtLaunchKernelWithHostArgs(refused_wr, 1, st, nullptr, &refused_args, sizeof refused_args, nullptr, 0),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), kUnknownKernel);  // each launch of it
  CHECK_RET(aclrtLaunchKernelWithHostArgs(refused_again, 1, st, nullptr, &refused_args, sizeof refused_args, nullptr,
                                          0),
            ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), kUnknownKernel);
  CHECK_RET(aclrtFree(dev2), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(st2), ACL_SUCCESS);

  // host arguments; print output at the synchronize
  WriteArgs w{Addr(dev), 77};
  std::string out = Captured([&] {
    CHECK_RET(aclrtLaunchKernelWithHostArgs(wr, 2, st, nullptr, &w, sizeof w, nullptr, 0), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  });
  CHECK(out == "Source data: 77\nSource data: 77\n");
  int32_t h[2] = {0, 0};
  CHECK_RET(aclrtMemcpy(h, sizeof h, dev, sizeof h, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(h[0] == 77 && h[1] == 77);

  // a place holder: its data goes to device memory whose address lands in the blob
  struct {
    uint64_t in;
    int32_t data[2];
  } ph_args = {0, {31, 32}};
  aclrtPlaceHolderInfo ph{0, 8};
  out = Captured([&] {
    CHECK_RET(aclrtLaunchKernelWithHostArgs(rd, 2, st, nullptr, &ph_args, sizeof ph_args, &ph, 1), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  });
  CHECK(out == "Destination data: 31\nDestination data: 32\n");

  // an argument block with a place holder
  aclrtArgsHandle args = nullptr;
  aclrtParamHandle p0 = nullptr;
  CHECK_RET(aclrtKernelArgsInit(rd, &args), ACL_SUCCESS);
  CHECK_RET(aclrtKernelArgsAppendPlaceHolder(args, &p0), ACL_SUCCESS);
  void *buf = nullptr;
  CHECK_RET(aclrtKernelArgsGetPlaceHolderBuffer(args, p0, 8, &buf), ACL_SUCCESS);
  int32_t vals[2] = {41, 42};
  std::memcpy(buf, vals, sizeof vals);
  CHECK_RET(aclrtLaunchKernelWithConfig(rd, 2, st, nullptr, args, nullptr), ACL_ERROR_INVALID_PARAM);  // not final
  CHECK_RET(aclrtKernelArgsFinalize(args), ACL_SUCCESS);
  out = Captured([&] {
    CHECK_RET(aclrtLaunchKernelWithConfig(rd, 2, st, nullptr, args, nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  });
  CHECK(out == "Destination data: 41\nDestination data: 42\n");
  // an argument block of values, one updated
  aclrtArgsHandle args2 = nullptr;
  aclrtParamHandle pp = nullptr, pv = nullptr;
  uint64_t out_addr = Addr(dev);
  int32_t v = 5;
  CHECK_RET(aclrtKernelArgsInit(wr, &args2), ACL_SUCCESS);
  CHECK_RET(aclrtKernelArgsAppend(args2, &out_addr, sizeof out_addr, &pp), ACL_SUCCESS);
  CHECK_RET(aclrtKernelArgsAppend(args2, &v, sizeof v, &pv), ACL_SUCCESS);
  v = 6;
  CHECK_RET(aclrtKernelArgsParaUpdate(args2, pv, &v, sizeof v), ACL_SUCCESS);
  CHECK_RET(aclrtKernelArgsFinalize(args2), ACL_SUCCESS);
  out = Captured([&] {
    CHECK_RET(aclrtLaunchKernelWithConfig(wr, 1, st, nullptr, args2, nullptr), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  });
  CHECK(out == "Source data: 6\n");

  // arguments in device memory, written by the stream's earlier work
  WriteArgs *dargs = nullptr;
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&dargs), sizeof(WriteArgs), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  void *pinned = nullptr;
  CHECK_RET(aclrtMallocHost(&pinned, sizeof(WriteArgs)), ACL_SUCCESS);
  WriteArgs w9{Addr(dev), 9};
  std::memcpy(pinned, &w9, sizeof w9);
  CHECK_RET(aclrtMemcpyAsync(dargs, sizeof w9, pinned, sizeof w9, ACL_MEMCPY_HOST_TO_DEVICE, st), ACL_SUCCESS);
  out = Captured([&] {
    CHECK_RET(aclrtLaunchKernel(wr, 1, dargs, sizeof w9, st), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  });
  CHECK(out == "Source data: 9\n");

  // refusals, reported at the synchronize: a pointer outside the process's memory, no layout
  WriteArgs bad{Addr(dev) + 16, 1};  // just past the 16-byte allocation
  CHECK_RET(aclrtLaunchKernelWithHostArgs(wr, 1, st, nullptr, &bad, sizeof bad, nullptr, 0), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), ACL_ERROR_INVALID_PARAM);
  bad.out = 0x1000;
  CHECK_RET(aclrtLaunchKernelWithHostArgs(wr, 1, st, nullptr, &bad, sizeof bad, nullptr, 0), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtLaunchKernelWithHostArgs(bare, 1, st, nullptr, &w, sizeof w, nullptr, 0), ACL_SUCCESS);
  CHECK(aclrtSynchronizeStream(st) != ACL_SUCCESS);
  CHECK_RET(aclrtLaunchKernelWithHostArgs(wr, 0, st, nullptr, &w, sizeof w, nullptr, 0), ACL_ERROR_INVALID_PARAM);
  aclrtPlaceHolderInfo far{4096, 0}; /* outside 4 bytes of arguments */
  CHECK_RET(aclrtLaunchKernelWithHostArgs(rd, 1, st, nullptr, &w, 4, &far, 1), ACL_ERROR_INVALID_PARAM);
  aclrtArgsHandle big = nullptr;
  aclrtParamHandle bp = nullptr;
  CHECK_RET(aclrtKernelArgsInit(wr, &big), ACL_SUCCESS);
  CHECK_RET(aclrtKernelArgsAppend(big, &w, static_cast<size_t>(-1), &bp), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtLaunchKernelWithHostArgs(reinterpret_cast<aclrtFuncHandle>(&w), 1, st, nullptr, &w, sizeof w,
                                          nullptr, 0),
            ACL_ERROR_INVALID_PARAM);
  aclrtBinHandle junk = nullptr;
  CHECK(aclrtBinaryLoadFromData("\x7f" "ELF", 4, nullptr, &junk) != ACL_SUCCESS);
  CHECK(aclrtBinaryLoadFromFile("/nonexistent/kernel.bin", nullptr, &junk) == ACL_ERROR_INVALID_FILE);

  // a binary from a file, unloaded
  char path[] = "/tmp/rdev-acl-kernels-bin-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0 && write(fd, kBinary, sizeof kBinary - 1) == static_cast<ssize_t>(sizeof kBinary - 1));
  close(fd);
  aclrtBinHandle fb = nullptr;
  aclrtFuncHandle fw = nullptr;
  CHECK_RET(aclrtBinaryLoadFromFile(path, nullptr, &fb), ACL_SUCCESS);
  unlink(path);
  CHECK_RET(aclrtBinaryGetFunction(fb, "Write", &fw), ACL_SUCCESS);  // loaded with the session open: no wait
  CHECK_RET(aclrtBinaryGetFunction(fb, "Nope", &none), kUnknownKernel);  // a kernel its text lacks: refused at once
  // a kernel looked up again is the same handle: more lookups than rdevd keeps functions per session (4096) work
  for (int i = 0; i < 5000; i++) {
    aclrtFuncHandle again = nullptr;
    CHECK_RET(aclrtBinaryGetFunction(fb, "Write", &again), ACL_SUCCESS);
    CHECK(again == fw);
  }
  aclrtFuncHandle by_entry = nullptr, by_entry2 = nullptr;
  CHECK_RET(aclrtBinaryGetFunctionByEntry(fb, 11, &by_entry), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryGetFunctionByEntry(fb, 11, &by_entry2), ACL_SUCCESS);
  CHECK(by_entry == by_entry2);
  WriteArgs w3{Addr(dev), 3};
  out = Captured([&] {
    CHECK_RET(aclrtLaunchKernelWithHostArgs(fw, 1, st, nullptr, &w3, sizeof w3, nullptr, 0), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  });
  CHECK(out == "Source data: 3\n");
  CHECK_RET(aclrtBinaryUnLoad(fb), ACL_SUCCESS);
  CHECK_RET(aclrtBinaryUnLoad(fb), ACL_ERROR_INVALID_PARAM);

  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dargs), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(st), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  // after aclFinalize and a new aclInit, the early binary and its functions still work: they reach the new session
  CHECK_RET(aclInit(nullptr), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(reinterpret_cast<void **>(&dev), 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  WriteArgs w4{Addr(dev), 4};
  out = Captured([&] {
    CHECK_RET(aclrtLaunchKernelWithHostArgs(wr, 1, nullptr, nullptr, &w4, sizeof w4, nullptr, 0), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  });
  CHECK(out == "Source data: 4\n");
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
