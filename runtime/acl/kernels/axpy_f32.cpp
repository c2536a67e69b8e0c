/*
 * runtime/acl/kernels/axpy_f32.cpp — the registry kernel axpy_f32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs:
 * y[i] = alpha * x[i] + y[i] for i < n, [0, n) split into one contiguous part
 * per block as the sim's body does (runtime/sim/sim_kernels.c). Arguments in
 * the registry's order: alpha (f32), x, y (pointers; rdevd checked each
 * holds n floats), n (u32); in the blob alpha is at 0 and x at 8. The
 * product is rounded before the add (Muls, then Add), as the sim's C
 * expression is when the compiler does not fuse it. Needs CANN to compile
 * (see docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

namespace {
constexpr uint32_t TILE = 4096; // floats per trip through UB (16 KiB a buffer)
}

extern "C" __global__ __aicore__ void axpy_f32(float alpha, GM_ADDR x, GM_ADDR y, uint32_t n) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  const uint64_t b = AscendC::GetBlockIdx(), blocks = AscendC::GetBlockNum();
  const uint64_t lo = n * b / blocks, count = n * (b + 1) / blocks - lo;
  AscendC::GlobalTensor<float> xGm, yGm;
  xGm.SetGlobalBuffer((__gm__ float *)x + lo, count);
  yGm.SetGlobalBuffer((__gm__ float *)y + lo, count);
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> xQ, yQ;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ;
  pipe.InitBuffer(xQ, 1, TILE * sizeof(float));
  pipe.InitBuffer(yQ, 1, TILE * sizeof(float));
  pipe.InitBuffer(outQ, 1, TILE * sizeof(float));
  const AscendC::DataCopyPadExtParams<float> nopad{false, 0, 0, 0};
  // DataCopyPad moves exactly len floats each way: part boundaries need no
  // alignment, and nothing outside [lo, lo + count) is read or written.
  for (uint64_t off = 0; off < count; off += TILE) {
    const uint32_t len = count - off < TILE ? (uint32_t)(count - off) : TILE;
    const AscendC::DataCopyExtParams cp{1, len * (uint32_t)sizeof(float), 0, 0, 0};
    AscendC::LocalTensor<float> xv = xQ.AllocTensor<float>();
    AscendC::LocalTensor<float> yv = yQ.AllocTensor<float>();
    AscendC::DataCopyPad(xv, xGm[off], cp, nopad);
    AscendC::DataCopyPad(yv, yGm[off], cp, nopad);
    xQ.EnQue(xv);
    yQ.EnQue(yv);
    xv = xQ.DeQue<float>();
    yv = yQ.DeQue<float>();
    AscendC::LocalTensor<float> r = outQ.AllocTensor<float>();
    AscendC::Muls(r, xv, alpha, (int32_t)len);
    AscendC::Add(r, r, yv, (int32_t)len);
    outQ.EnQue(r);
    xQ.FreeTensor(xv);
    yQ.FreeTensor(yv);
    r = outQ.DeQue<float>();
    AscendC::DataCopyPad(yGm[off], r, cp);
    outQ.FreeTensor(r);
  }
}
