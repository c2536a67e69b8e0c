/*
 * runtime/acl/kernels/add_f32.cpp — the registry kernel add_f32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs:
 * out[i] = a[i] + b[i] for i < n, [0, n) split into one contiguous part per
 * block as the sim's body does (runtime/sim/sim_kernels.c). Arguments in the
 * registry's order: a, b, out (pointers; rdevd checked each holds n floats),
 * n (u32). Needs CANN to compile (see docs/acl-kernels.md); never compiled
 * here.
 */
#include "kernel_operator.h"

namespace {
constexpr uint32_t TILE = 4096; // floats per trip through UB (16 KiB a buffer)
}

extern "C" __global__ __aicore__ void add_f32(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t n) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  const uint64_t blk = AscendC::GetBlockIdx(), blocks = AscendC::GetBlockNum();
  const uint64_t lo = n * blk / blocks, count = n * (blk + 1) / blocks - lo;
  AscendC::GlobalTensor<float> aGm, bGm, outGm;
  aGm.SetGlobalBuffer((__gm__ float *)a + lo, count);
  bGm.SetGlobalBuffer((__gm__ float *)b + lo, count);
  outGm.SetGlobalBuffer((__gm__ float *)out + lo, count);
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> aQ, bQ;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ;
  pipe.InitBuffer(aQ, 1, TILE * sizeof(float));
  pipe.InitBuffer(bQ, 1, TILE * sizeof(float));
  pipe.InitBuffer(outQ, 1, TILE * sizeof(float));
  const AscendC::DataCopyPadExtParams<float> nopad{false, 0, 0, 0};
  // DataCopyPad moves exactly len floats each way: part boundaries need no
  // alignment, and nothing outside [lo, lo + count) is read or written.
  for (uint64_t off = 0; off < count; off += TILE) {
    const uint32_t len = count - off < TILE ? (uint32_t)(count - off) : TILE;
    const AscendC::DataCopyExtParams cp{1, len * (uint32_t)sizeof(float), 0, 0, 0};
    AscendC::LocalTensor<float> x = aQ.AllocTensor<float>();
    AscendC::LocalTensor<float> y = bQ.AllocTensor<float>();
    AscendC::DataCopyPad(x, aGm[off], cp, nopad);
    AscendC::DataCopyPad(y, bGm[off], cp, nopad);
    aQ.EnQue(x);
    bQ.EnQue(y);
    x = aQ.DeQue<float>();
    y = bQ.DeQue<float>();
    AscendC::LocalTensor<float> z = outQ.AllocTensor<float>();
    AscendC::Add(z, x, y, (int32_t)len);
    outQ.EnQue(z);
    aQ.FreeTensor(x);
    bQ.FreeTensor(y);
    z = outQ.DeQue<float>();
    AscendC::DataCopyPad(outGm[off], z, cp);
    outQ.FreeTensor(z);
  }
}
