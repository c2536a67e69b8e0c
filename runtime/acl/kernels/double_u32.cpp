/*
 * runtime/acl/kernels/double_u32.cpp — the registry kernel double_u32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: block b doubles
 * x[b], as the sim's body (runtime/sim/sim_kernels.c). Argument: x (pointer;
 * rdevd checked it holds one uint32 per block). Needs CANN to compile (see
 * docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void double_u32(GM_ADDR x) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  // As inc_u32.cpp: exact 4-byte moves through UB, not scalar stores that
  // write back whole cache lines shared with neighbouring blocks. x + x on
  // int32 gives the same bits as x * 2 on uint32 (wrapping).
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
  AscendC::Add(r, v, v, 8);
  outQ.EnQue(r);
  inQ.FreeTensor(v);
  r = outQ.DeQue<int32_t>();
  AscendC::DataCopyPad(xGm, r, one);
  outQ.FreeTensor(r);
}
