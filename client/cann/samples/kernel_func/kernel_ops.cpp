/*
 * client/cann/samples/kernel_func/kernel_ops.cpp — the sim kernel library for the CANN
 * runtime samples (the launchers of kernel_ops.h and kernel_add.h): one
 * kernel binary in the rdev sim binary format
 * (docs/sim-binary.md) naming the sim kernels behind the samples' kernels,
 * and host launchers that do what the stubs ascendc_library generates do:
 * load the binary at static initialization (aclrtBinaryLoadFromData), find
 * the function by entry (aclrtBinaryGetFunctionByEntry) and launch it with
 * the arguments packed as AscendC packs them (aclrtLaunchKernelWithHostArgs).
 * Only public ACL calls: the same code runs on CANN's library with a real
 * binary in place of this one.
 */
#include "kernel_ops.h"

#include "kernel_add.h"

#include <cstdio>
#include <cstring>
#include <mutex>

#include "acl/acl.h"

namespace {

const char kBinary[] =
    "rdev-sim-binary 1\n"
    "# the CANN runtime samples' kernels (example/kernel_func/)\n"
    "kernel EasyKernel inc_u32 entry=1\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "kernel ErrorKernel trap entry=2\n"
    "  noargs\n"
    "kernel LongKernel long_inc_u32 entry=3\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "kernel ShortKernel double_u32 entry=4\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "kernel DeviceWrite write_i32 entry=5\n"
    "  arg ptr devPtr reach=blocks*4 writes\n"
    "  arg i32 value\n"
    "kernel DeviceRead read_i32 entry=6\n"
    "  arg ptr devPtr reach=blocks*4\n"
    "kernel HelloWorld hello entry=7\n"
    "  noargs\n"
    "kernel AddKernel add_f32 entry=8\n"
    "  arg ptr srcA reach=arg3*4\n"
    "  arg ptr srcB reach=arg3*4\n"
    "  arg ptr dst reach=arg3*4 writes\n"
    "  arg u32 totalSize\n";

/* Loaded before main, as a generated stub's binary is. */
aclrtBinHandle LoadBinary() {
  aclrtBinHandle h = nullptr;
  if (aclrtBinaryLoadFromData(kBinary, sizeof kBinary - 1, nullptr, &h) != ACL_SUCCESS)
    std::fprintf(stderr, "[ERROR] kernel_ops: cannot load the kernel binary: %s\n", aclGetRecentErrMsg());
  return h;
}
const aclrtBinHandle g_binary = LoadBinary();

/* The function of entry e, found on its first launch (from any thread). */
aclrtFuncHandle Function(uint64_t e) {
  static std::mutex mu;
  static aclrtFuncHandle funcs[9];
  std::lock_guard<std::mutex> lock(mu);
  if (!funcs[e] && aclrtBinaryGetFunctionByEntry(g_binary, e, &funcs[e]) != ACL_SUCCESS)
    std::fprintf(stderr, "[ERROR] kernel_ops: no kernel of entry %llu: %s\n", (unsigned long long)e,
                 aclGetRecentErrMsg());
  return funcs[e];
}

void Launch(uint64_t entry, uint32_t blockDim, void *stream, void *args, size_t size) {
  aclError rc = aclrtLaunchKernelWithHostArgs(Function(entry), blockDim, stream, nullptr, args, size, nullptr, 0);
  if (rc != ACL_SUCCESS) std::fprintf(stderr, "[ERROR] kernel_ops: launch failed (%d): %s\n", rc, aclGetRecentErrMsg());
}

/* The argument structs, laid out as AscendC host stubs lay them out: each
 * field aligned to its size, at least 4; pointers 8 bytes. */
struct PtrArgs {
  uint64_t ptr;
};
struct PtrValueArgs {
  uint64_t ptr;
  int32_t value;
};
struct AddArgs {
  uint64_t srcA, srcB, dst;
  uint32_t totalSize;
};

uint64_t Addr(const void *p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

} // namespace

void EasyOP(uint32_t blockDim, void *stream, uint32_t *x) {
  PtrArgs a{Addr(x)};
  Launch(1, blockDim, stream, &a, sizeof a);
}

void ErrorOP(uint32_t blockDim, void *stream) { Launch(2, blockDim, stream, nullptr, 0); }

void LongOP(uint32_t blockDim, void *stream, uint32_t *x) {
  PtrArgs a{Addr(x)};
  Launch(3, blockDim, stream, &a, sizeof a);
}

void ShortOP(uint32_t blockDim, void *stream, uint32_t *x) {
  PtrArgs a{Addr(x)};
  Launch(4, blockDim, stream, &a, sizeof a);
}

void WriteDo(uint32_t blockDim, void *stream, int *devPtr, int value) {
  PtrValueArgs a{Addr(devPtr), value};
  Launch(5, blockDim, stream, &a, sizeof a);
}

void ReadDo(uint32_t blockDim, void *stream, int *devPtr) {
  PtrArgs a{Addr(devPtr)};
  Launch(6, blockDim, stream, &a, sizeof a);
}

void PrintDo(uint32_t blockDim, void *stream) { Launch(7, blockDim, stream, nullptr, 0); }

void AddDo(uint32_t blockDim, void *stream, float *srcA, float *srcB, float *dst, uint32_t totalSize) {
  AddArgs a{Addr(srcA), Addr(srcB), Addr(dst), totalSize};
  Launch(8, blockDim, stream, &a, sizeof a);
}
