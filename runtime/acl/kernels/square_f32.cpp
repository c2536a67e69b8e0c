/*
 * runtime/acl/kernels/square_f32.cpp — the registry kernel square_f32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs:
 * out[i] = in[i] * in[i] for i < n, [0, n) split into one contiguous part
 * per block as the sim's body does (runtime/sim/sim_kernels.c). Arguments in
 * the registry's order: in, out (pointers; rdevd checked each holds n
 * floats), n (u32). Needs CANN to compile (see docs/acl-kernels.md); never
 * compiled here.
 */
#include "kernel_operator.h"

namespace {
constexpr uint32_t TILE = 4096; // floats per trip through UB (16 KiB a buffer)
}

extern "C" __global__ __aicore__ void square_f32(GM_ADDR in, GM_ADDR out, uint32_t n) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  const uint64_t b = AscendC::GetBlockIdx(), blocks = AscendC::GetBlockNum();
  const uint64_t lo = n * b / blocks, count = n * (b + 1) / blocks - lo;
  AscendC::GlobalTensor<float> inGm, outGm;
  inGm.SetGlobalBuffer((__gm__ float *)in + lo, count);
  outGm.SetGlobalBuffer((__gm__ float *)out + lo, count);
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inQ;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ;
  pipe.InitBuffer(inQ, 1, TILE * sizeof(float));
  pipe.InitBuffer(outQ, 1, TILE * sizeof(float));
  // DataCopyPad moves exactly len floats each way: part boundaries need no
  // alignment, and nothing outside [lo, lo + count) is read or written.
  for (uint64_t off = 0; off < count; off += TILE) {
    const uint32_t len = count - off < TILE ? (uint32_t)(count - off) : TILE;
    const AscendC::DataCopyExtParams cp{1, len * (uint32_t)sizeof(float), 0, 0, 0};
    AscendC::LocalTensor<float> x = inQ.AllocTensor<float>();
    AscendC::DataCopyPad(x, inGm[off], cp, AscendC::DataCopyPadExtParams<float>{false, 0, 0, 0});
    inQ.EnQue(x);
    x = inQ.DeQue<float>();
    AscendC::LocalTensor<float> y = outQ.AllocTensor<float>();
    AscendC::Mul(y, x, x, (int32_t)len);
    outQ.EnQue(y);
    inQ.FreeTensor(x);
    y = outQ.DeQue<float>();
    AscendC::DataCopyPad(outGm[off], y, cp);
    outQ.FreeTensor(y);
  }
}
