/*
 * runtime/acl/kernels/trap.cpp — the registry kernel trap
 * (runtime/kernels.c) as an AscendC kernel for Ascend NPUs: every block
 * executes the AI Core's trap instruction, which stops the kernel with an AI
 * Core exception; the runtime reports it at the stream's next synchronize
 * (ACL_ERROR_RT_AICORE_EXCEPTION, 507015), which is what the sim's body
 * (runtime/sim/sim_kernels.c) returns. CANN's runtime sample ErrorOP
 * (example/kernel_func/error_OP.cpp) faults the same way, with asm("trap").
 * No arguments.
 *
 * The name: trap is also a CCE compiler intrinsic, trap() (AscendC's Trap()
 * calls it), and a global extern "C" function of that name would collide
 * with it. The kernel is declared inside a namespace instead: an extern "C"
 * function keeps its plain symbol name, trap, wherever it is declared, and
 * the namespace keeps it apart from a global declaration of the intrinsic;
 * the parenthesised name stops a function-like macro trap() from expanding.
 * Whether bisheng accepts this (it would not if the intrinsic is a builtin
 * it refuses to see defined) could not be checked without CANN; see
 * docs/acl-kernels.md.
 * Needs CANN to compile; never compiled here.
 */
#include "kernel_operator.h"

namespace rdev_acl {
// clang-format off
extern "C" __global__ __aicore__ void (trap)() {
  // clang-format on
#ifdef KERNEL_TASK_TYPE_DEFAULT
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); // one vector core per block
#endif
  asm("trap");
}
} // namespace rdev_acl
