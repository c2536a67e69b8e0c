/*
 * rdev/types.h — enums shared by the runtime (rdev/runtime.h) and the public
 * client API (rdev/rdev.h), with the CANN runtime's numbers.
 */
#ifndef RDEV_TYPES_H
#define RDEV_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* aclrtMemcpyKind, same numbers. */
typedef enum {
  RDEV_MEMCPY_HOST_TO_HOST = 0,
  RDEV_MEMCPY_HOST_TO_DEVICE = 1,
  RDEV_MEMCPY_DEVICE_TO_HOST = 2,
  RDEV_MEMCPY_DEVICE_TO_DEVICE = 3,
  RDEV_MEMCPY_DEFAULT = 4 /* direction inferred from the addresses */
} rdev_memcpy_kind_t;

/* aclrtMemMallocPolicy, same numbers. The sim backend accepts all and ignores them. */
typedef enum {
  RDEV_MEM_MALLOC_HUGE_FIRST = 0,
  RDEV_MEM_MALLOC_HUGE_ONLY = 1,
  RDEV_MEM_MALLOC_NORMAL_ONLY = 2,
  RDEV_MEM_MALLOC_HUGE_FIRST_P2P = 3,
  RDEV_MEM_MALLOC_HUGE_ONLY_P2P = 4,
  RDEV_MEM_MALLOC_NORMAL_ONLY_P2P = 5
} rdev_mem_policy_t;

/* Kernel argument types. */
typedef enum {
  RDEV_ARG_PTR = 1, /* device memory */
  RDEV_ARG_I32,
  RDEV_ARG_U32,
  RDEV_ARG_I64,
  RDEV_ARG_U64,
  RDEV_ARG_F32,
  RDEV_ARG_F64
} rdev_arg_type_t;

/* The wire's name of a kernel argument type ("ptr", "i32", ... as in
 * KernelParam.type), "unknown" for others. Never NULL; static. */
const char *rdev_arg_type_name(rdev_arg_type_t t);

/* Every device address is 64-byte aligned. */
#define RDEV_MEM_ALIGN 64

/* The bytes an allocation of `size` reserves on a device: CANN's rule
 * (round up to 32, pad by 32) kept on 64-byte granules so that every
 * address stays 64-byte aligned. A device's free bytes and a tenant's
 * quota drop by exactly this much per allocation, so a client that places
 * its own allocations counts them as the server does. 0 when size is 0 or
 * the rounding would overflow. */
static inline size_t rdev_mem_reserved_size(size_t size) {
  if (size == 0 || size > SIZE_MAX - 2 * RDEV_MEM_ALIGN) return 0;
  size_t r = ((size + 31) & ~(size_t)31) + 32;
  return (r + RDEV_MEM_ALIGN - 1) & ~(size_t)(RDEV_MEM_ALIGN - 1);
}

#endif
