/*
 * runtime/acl/kernels/hello.cpp — the registry kernel hello
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: each block
 * prints "Hello World", as the sim's body (runtime/sim/sim_kernels.c) and
 * CANN's runtime sample KernelPrint. No arguments.
 * Needs CANN to compile (see docs/acl-kernels.md); never compiled here.
 */
#include "kernel_operator.h"

extern "C" __global__ __aicore__ void hello() {
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  AscendC::printf("Hello World\n");
}
