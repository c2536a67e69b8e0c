/*
 * runtime/acl/kernels/delay_us.cpp — the registry kernel delay_us
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: occupies the
 * stream for us microseconds, as the sim's body (runtime/sim/sim_kernels.c).
 * Argument: us (u32). The sim sleeps; here every block spins on the system
 * counter, keeping its core busy. Needs CANN to compile (see
 * docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void delay_us(uint32_t us) {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  // GetSystemCycle counts at 50 MHz (CANN's documentation): 50 a microsecond.
  const int64_t end = AscendC::GetSystemCycle() + (int64_t)us * 50;
  while (AscendC::GetSystemCycle() < end) {}
}
