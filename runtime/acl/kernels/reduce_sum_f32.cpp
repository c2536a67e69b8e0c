/*
 * runtime/acl/kernels/reduce_sum_f32.cpp — the registry kernel
 * reduce_sum_f32 (runtime/kernels.c) as an AscendC kernel for Ascend NPUs:
 * out[0] = the sum of in[i] for i < n. Arguments in the registry's order: in
 * (pointer; rdevd checked it holds n floats), out (pointer; one float), n
 * (u32). Block 0 does all of it and the other blocks return at once: the
 * kernel has no workspace in which blocks could combine partial sums in a
 * fixed order, and one writer keeps the result independent of timing. The
 * sim's body (runtime/sim/sim_kernels.c) accumulates in double; an AI Core
 * has no double, so this sums in float: lane i of a TILE-wide vector sums
 * in[i], in[i + TILE], ..., then the lanes are added in order. Results can
 * differ from the sim's in the last bits. Needs CANN to compile (see
 * docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

namespace {
constexpr uint32_t TILE = 4096; // floats per trip through UB (16 KiB a buffer)
}

extern "C" __global__ __aicore__ void reduce_sum_f32(GM_ADDR in, GM_ADDR out, uint32_t n) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  if (AscendC::GetBlockIdx() != 0) {
    return;
  }
  AscendC::GlobalTensor<float> inGm, outGm;
  inGm.SetGlobalBuffer((__gm__ float *)in, n);
  outGm.SetGlobalBuffer((__gm__ float *)out, 1);
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inQ;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ;
  AscendC::TBuf<AscendC::TPosition::VECCALC> accBuf;
  pipe.InitBuffer(inQ, 1, TILE * sizeof(float));
  pipe.InitBuffer(outQ, 1, 32);
  pipe.InitBuffer(accBuf, TILE * sizeof(float));
  AscendC::LocalTensor<float> acc = accBuf.Get<float>();
  AscendC::Duplicate(acc, 0.0f, (int32_t)TILE);
  for (uint64_t off = 0; off < n; off += TILE) {
    const uint32_t len = n - off < TILE ? (uint32_t)(n - off) : TILE;
    AscendC::LocalTensor<float> x = inQ.AllocTensor<float>();
    AscendC::DataCopyPad(x, inGm[off], AscendC::DataCopyExtParams{1, len * (uint32_t)sizeof(float), 0, 0, 0},
                         AscendC::DataCopyPadExtParams<float>{false, 0, 0, 0});
    inQ.EnQue(x);
    x = inQ.DeQue<float>();
    AscendC::Add(acc, acc, x, (int32_t)len);
    inQ.FreeTensor(x);
  }
  AscendC::PipeBarrier<PIPE_ALL>(); // the vector adds are done before the scalar unit reads acc
  float total = 0.0f;
  for (uint32_t i = 0; i < TILE; i++) {
    total += acc.GetValue(i);
  }
  // The result leaves through UB with DataCopyPad, exactly 4 bytes.
  AscendC::LocalTensor<float> r = outQ.AllocTensor<float>();
  AscendC::Duplicate(r, total, 8);
  outQ.EnQue(r);
  r = outQ.DeQue<float>();
  AscendC::DataCopyPad(outGm, r, AscendC::DataCopyExtParams{1, sizeof(float), 0, 0, 0});
  outQ.FreeTensor(r);
}
