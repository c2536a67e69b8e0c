/*
 * runtime/sim/sim.h — what the sim backend's files share: the device arena
 * allocator (sim_arena.c) and the kernel bodies (sim_kernels.c) that the
 * stream workers (sim.c) run.
 */
#ifndef RDEV_SIM_H
#define RDEV_SIM_H

#include <pthread.h>

#include "../rt_internal.h"

/* One device's memory: a contiguous arena carved into 64-byte-granular
 * blocks. Free blocks sit in size-class bins (first fit from the smallest
 * class that can hold the request, best fit within it) and coalesce with
 * free neighbours on release; allocated blocks sit in a search tree keyed by
 * address range, so any interior address resolves to its allocation. Block
 * records live outside the arena, so device bytes are never metadata. */
typedef struct sim_block sim_block_t;

typedef struct {
  char *base;
  size_t size;
  size_t used; /* bytes reserved by live allocations */
  size_t nallocs;
  sim_block_t *head; /* lowest-addressed block */
  sim_block_t *bins[64];
  void *tree; /* tsearch root of live allocations */
  pthread_mutex_t mu;
} sim_arena_t;

int sim_arena_init(sim_arena_t *a, size_t size);
void sim_arena_destroy(sim_arena_t *a);
/* reserved is a multiple of 64; returns NULL when no free block fits. */
void *sim_arena_alloc(sim_arena_t *a, size_t size, size_t reserved);
/* RDEV_OK, or RDEV_INVALID_PARAM when p is not the start of a live allocation. */
int sim_arena_free(sim_arena_t *a, void *p);
/* RDEV_OK with the allocation holding p (within its requested size), else RDEV_INVALID_PARAM. */
int sim_arena_lookup(sim_arena_t *a, const void *p, void **base, size_t *size);
size_t sim_arena_free_bytes(sim_arena_t *a);

/* What a kernel body sees. */
typedef struct {
  uint32_t blocks;
  rt_print_buf_t print;
  void *stream; /* for sim_stream_sleep */
} sim_kctx_t;

/* A kernel body: args are validated, PTR args resolved to host-addressable
 * arena addresses. Returns RDEV_OK or a fault code. */
typedef int (*sim_kernel_fn)(sim_kctx_t *ctx, const rdev_kernel_arg_t *args);

/* Bodies indexed like rdev_rt_kernels(); sim_kernel_names[i] names body i. */
extern const sim_kernel_fn sim_kernel_fns[];
extern const char *const sim_kernel_names[];
extern const int sim_kernel_count;

/* Sleeps up to ns on a stream's worker; returns early (non-zero) when the
 * stream is force-destroyed. */
int sim_stream_sleep(void *stream, uint64_t ns);

#endif
