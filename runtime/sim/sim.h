/*
 * runtime/sim/sim.h — what the sim backend's files share: the device arena
 * allocator (sim_arena.c), the kernel bodies (sim_kernels.c), and the
 * backend's state (devices, memory, faults) that sim.c and sim_backend.c
 * share. Streams and events are the engine's (runtime/rt_engine.h); the sim
 * runs the device tasks it hands over (sim_exec).
 */
#ifndef RDEV_SIM_H
#define RDEV_SIM_H

#include <pthread.h>
#include <stdatomic.h>

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

#define SIM_NO_BLOCK ((size_t)-1)

int sim_arena_init(sim_arena_t *a, size_t size);
void sim_arena_destroy(sim_arena_t *a);
/* An allocation for address space `slot`: its arena offset, or SIM_NO_BLOCK
 * when no free block fits. reserved is a multiple of 64. */
size_t sim_arena_alloc(sim_arena_t *a, size_t size, size_t reserved, uint32_t slot);
/* RDEV_OK, or RDEV_INVALID_PARAM when off is not the start of a live
 * allocation of space `slot`. */
int sim_arena_free(sim_arena_t *a, size_t off, uint32_t slot);
/* RDEV_OK with the offset and requested size of space slot's allocation
 * holding off (within its requested size), else RDEV_INVALID_PARAM. */
int sim_arena_lookup(sim_arena_t *a, size_t off, uint32_t slot, size_t *base, size_t *size);
size_t sim_arena_free_bytes(sim_arena_t *a);

/* ---- device addresses ----
 * A sim device address is SIM_VA_BASE + slot << 46 + dev << 40 + offset:
 * the address space's slot, the device and the arena offset. It lies far
 * above any host address (user space ends below 2^57), so a pointer tells
 * by its value whether it is the sim's; slot 0 is the runtime's own space. */
#define SIM_VA_BASE ((uint64_t)1 << 60)
#define SIM_VA_DEV_SHIFT 40  /* arenas are at most 1 TiB */
#define SIM_VA_SLOT_SHIFT 46 /* 64 devices */
#define SIM_MAX_ARENA ((size_t)1 << SIM_VA_DEV_SHIFT)
#define SIM_SLOTS (RDEV_RT_MAX_SPACES + 1)

static inline uint64_t sim_va(uint32_t slot, int dev, size_t off) {
  return SIM_VA_BASE + ((uint64_t)slot << SIM_VA_SLOT_SHIFT) + ((uint64_t)dev << SIM_VA_DEV_SHIFT) + off;
}

/* Splits a device address; 0 when p is not one (the caller checks dev and
 * off against the devices and their arenas). */
static inline int sim_va_split(const void *p, uint32_t *slot, int *dev, size_t *off) {
  uint64_t v = (uint64_t)(uintptr_t)p;
  if (v < SIM_VA_BASE) return 0;
  v -= SIM_VA_BASE;
  if ((v >> SIM_VA_SLOT_SHIFT) >= SIM_SLOTS) return 0;
  *slot = (uint32_t)(v >> SIM_VA_SLOT_SHIFT);
  *dev = (int)((v >> SIM_VA_DEV_SHIFT) & 63);
  *off = (size_t)(v & (SIM_MAX_ARENA - 1));
  return 1;
}

/* What a kernel body sees. */
typedef struct {
  uint32_t blocks;
  rt_print_buf_t print;
  rdev_rt_stream_t *stream; /* for rt_engine_sleep */
} sim_kctx_t;

/* A kernel body: args are validated, PTR args resolved to host-addressable
 * arena addresses. Returns RDEV_OK or a fault code. */
typedef int (*sim_kernel_fn)(sim_kctx_t *ctx, const rdev_kernel_arg_t *args);

/* Bodies indexed like rdev_rt_kernels(); sim_kernel_names[i] names body i. */
extern const sim_kernel_fn sim_kernel_fns[];
extern const char *const sim_kernel_names[];
extern const int sim_kernel_count;

/* ---- the backend's state (sim.c, sim_backend.c) ---- */

typedef struct sim sim_t;

typedef struct {
  int index;
  sim_arena_t arena;
  atomic_uint fault_alloc, fault_kernel, fault_hang; /* countdowns; 0 = unarmed */
  atomic_uint hang_ms;
} sim_dev_t;

/* An address space: slot `slot` of sim->spaces, kept while its owner or
 * any allocation in it holds a reference. */
typedef struct sim_space {
  rdev_rt_space_t base;
  sim_t *sim;
  uint32_t slot;
  atomic_size_t refs;
} sim_space_t;

struct sim {
  rdev_rt_t *rt;
  int ndev;
  sim_dev_t *devs;
  int unmapped;         /* no host view (rdev_rt_config_t.sim_unmapped) */
  pthread_mutex_t mu;   /* host allocations, spaces */
  void *host;           /* tsearch set of malloc_host pointers */
  sim_space_t **spaces; /* SIM_SLOTS entries, under mu; [0] the runtime's own */
  uint32_t space_next;  /* where the search for a free slot starts */
};

/* The host address behind p: an arena address for a device address (p
 * validated by the generic layer), p itself for host memory. */
void *sim_host_addr(sim_t *sim, const void *p);

/* Counts one matching occurrence of an armed fault down; true on the one
 * it was armed for. */
static inline int sim_fault_fires(atomic_uint *c) {
  unsigned v = atomic_load(c);
  while (v) {
    if (atomic_compare_exchange_weak(c, &v, v - 1)) return v == 1;
  }
  return 0;
}

/* The backend's devices, memory and faults (sim.c), as rt_backend_t's
 * entries of the same names (rt_internal.h) */
int sim_fault_inject(void *impl, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms);
int sim_device_count(void *impl);
int sim_device_info(void *impl, int dev, rdev_rt_device_info_t *info);
int sim_malloc(void *impl, rdev_rt_space_t *sp, int dev, void **dptr, size_t size, size_t reserved);
int sim_space_create(void *impl, rdev_rt_space_t **sp);
void sim_space_destroy(rdev_rt_space_t *sp);
void sim_space_range(const rdev_rt_space_t *sp, int dev, uint64_t *base, uint64_t *size);
/* Frees every space left (at close). */
void sim_spaces_free_all(sim_t *sim);
int sim_free(void *impl, void *dptr);
int sim_lookup(void *impl, const void *p, void **base, size_t *size, int *dev);
int sim_malloc_host(void *impl, void **p, size_t size);
int sim_free_host(void *impl, void *p);
int sim_copy(void *impl, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind);
const void *sim_host_view(void *impl, const void *dptr, size_t n);
int sim_memset(void *impl, void *dst, int value, size_t n);
/* Frees every host block malloc_host made (at close). */
void sim_host_free_all(sim_t *sim);

/* The device tasks the engine hands the sim (rt_backend_t's entries). */
void sim_prepare(void *impl, rt_task_t *t);
int sim_exec(rdev_rt_stream_t *s, rt_task_t *t);
int sim_load_value(rdev_rt_stream_t *s, const void *addr, uint64_t *v);

#endif
