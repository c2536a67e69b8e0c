/*
 * client/cann/samples/kernel_func/kernel_ops.h — the host launchers of the CANN runtime
 * samples' kernels (their example/kernel_func/kernel_ops.h), as rdev's sim
 * kernel library offers them: a sample's main.cpp that includes
 * "kernel_func/kernel_ops.h" compiles unmodified and links with rdev_sample_kernels
 * and ascendcl. Each launcher queues its kernel on stream, as
 * Kernel<<<blockDim, nullptr, stream>>>(args) does; errors surface at the
 * stream's next synchronize.
 */
#ifndef RDEV_SAMPLES_KERNEL_OPS_H
#define RDEV_SAMPLES_KERNEL_OPS_H

#include <cstdint>

/* x[block] += 1 */
void EasyOP(uint32_t blockDim, void *stream, uint32_t *x);
/* the kernel faults: an AI Core exception (507015) at the next synchronize */
void ErrorOP(uint32_t blockDim, void *stream);
/* runs for 500 ms, then x[block] += 1 */
void LongOP(uint32_t blockDim, void *stream, uint32_t *x);
/* x[block] *= 2 */
void ShortOP(uint32_t blockDim, void *stream, uint32_t *x);
/* devPtr[block] = value; prints "Source data: <value>" per block */
void WriteDo(uint32_t blockDim, void *stream, int *devPtr, int value);
/* prints "Destination data: <devPtr[block]>" per block */
void ReadDo(uint32_t blockDim, void *stream, int *devPtr);
/* prints "Hello World" per block */
void PrintDo(uint32_t blockDim, void *stream);

#endif
