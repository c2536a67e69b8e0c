/*
 * runtime/acl/kernels/write_i32.cpp — the registry kernel write_i32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: block b stores
 * value in out[b] and prints "Source data: <value>", as the sim's body
 * (runtime/sim/sim_kernels.c). Arguments in the registry's order: out
 * (pointer; rdevd checked it holds one int32 per block), value (i32).
 * Needs CANN to compile (see docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void write_i32(GM_ADDR out, int32_t value) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  // An exact 4-byte store through UB (DataCopyPad), not a scalar store: the
  // scalar unit writes through the core's data cache, which writes back
  // whole 64-byte lines, and the out[b] of neighbouring blocks share lines.
  AscendC::GlobalTensor<int32_t> outGm;
  outGm.SetGlobalBuffer((__gm__ int32_t *)out + AscendC::GetBlockIdx(), 1);
  AscendC::TPipe pipe;
  AscendC::TQue<AscendC::QuePosition::VECOUT, 1> outQ;
  pipe.InitBuffer(outQ, 1, 32);
  AscendC::LocalTensor<int32_t> v = outQ.AllocTensor<int32_t>();
  AscendC::Duplicate(v, value, 8);
  outQ.EnQue(v);
  v = outQ.DeQue<int32_t>();
  AscendC::DataCopyPad(outGm, v, AscendC::DataCopyExtParams{1, sizeof(int32_t), 0, 0, 0});
  outQ.FreeTensor(v);
  AscendC::printf("Source data: %d\n", value);
}
