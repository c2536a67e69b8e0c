/*
 * runtime/acl/kernels/read_i32.cpp — the registry kernel read_i32
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: block b prints
 * "Destination data: <in[b]>", as the sim's body (runtime/sim/sim_kernels.c).
 * Argument: in (pointer; rdevd checked it holds one int32 per block).
 * Needs CANN to compile (see docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void read_i32(GM_ADDR in) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  AscendC::GlobalTensor<int32_t> inGm;
  inGm.SetGlobalBuffer((__gm__ int32_t *)in + AscendC::GetBlockIdx(), 1);
  // The scalar read goes through the core's data cache: drop the line first
  // (CANN's GetValue notes ask for this when others may have written it).
  AscendC::DataCacheCleanAndInvalid<int32_t, AscendC::CacheLine::SINGLE_CACHE_LINE, AscendC::DcciDst::CACHELINE_OUT>(
      inGm);
  int32_t v = inGm.GetValue(0);
  AscendC::printf("Destination data: %d\n", v);
}
