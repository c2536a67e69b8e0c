/*
 * runtime/acl/kernels/inc_u32.cpp — the registry kernel inc_u32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: block b adds 1
 * to x[b], as the sim's body (runtime/sim/sim_kernels.c) and CANN's runtime
 * sample EasyOP. Argument: x (pointer; rdevd checked it holds one uint32
 * per block). Needs CANN to compile (see docs/acl-kernels.md); never
 * compiled here.
 */
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void inc_u32(GM_ADDR x) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  // x[b] goes to UB and back with DataCopyPad, exactly 4 bytes each way. A
  // scalar x[b] += 1 would go through the core's data cache, which writes
  // back whole 64-byte lines, and the x[b] of neighbouring blocks share lines.
  // The add is on int32: +1 gives the same bits as on uint32 (wrapping).
  AscendC::GlobalTensor<int32_t> xGm;
  xGm.SetGlobalBuffer((__gm__ int32_t *)x + AscendC::GetBlockIdx(), 1);
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inQ;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ;
  pipe.InitBuffer(inQ, 1, 32);
  pipe.InitBuffer(outQ, 1, 32);
  const AscendC::DataCopyExtParams one{1, sizeof(int32_t), 0, 0, 0};
  AscendC::LocalTensor<int32_t> v = inQ.AllocTensor<int32_t>();
  AscendC::DataCopyPad(v, xGm, one, AscendC::DataCopyPadExtParams<int32_t>{false, 0, 0, 0});
  inQ.EnQue(v);
  v = inQ.DeQue<int32_t>();
  AscendC::LocalTensor<int32_t> r = outQ.AllocTensor<int32_t>();
  AscendC::Adds(r, v, (int32_t)1, 8);
  outQ.EnQue(r);
  inQ.FreeTensor(v);
  r = outQ.DeQue<int32_t>();
  AscendC::DataCopyPad(xGm, r, one);
  outQ.FreeTensor(r);
}
