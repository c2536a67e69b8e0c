/*
 * client/cann/samples/kernel_func/kernel_add.h — the host launcher of the
 * CANN runtime samples' vector-add kernel (their
 * example/kernel_func/kernel_add.h), as rdev's sim kernel library offers it
 * (defined in kernel_ops.cpp, over the same binary as kernel_ops.h's): a
 * sample's main.cpp that includes "kernel_func/kernel_add.h" compiles
 * unmodified and links with rdev_sample_kernels and ascendcl. It queues the
 * kernel on stream, as AddKernel<<<blockDim, nullptr, stream>>>(args) does;
 * errors surface at the stream's next synchronize.
 */
#ifndef RDEV_SAMPLES_KERNEL_ADD_H
#define RDEV_SAMPLES_KERNEL_ADD_H

#include <cstdint>

/* dst[i] = srcA[i] + srcB[i] for i < totalSize (float32, device memory) */
void AddDo(uint32_t blockDim, void *stream, float *srcA, float *srcB, float *dst, uint32_t totalSize);

#endif
