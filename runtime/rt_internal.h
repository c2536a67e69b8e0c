/*
 * runtime/rt_internal.h — what the runtime's generic layer (runtime.c) and
 * its backends share: the backend table, the task record that async work is
 * described by, and the error-detail helper. Not installed; not for the
 * server or client.
 *
 * The generic layer validates every call (arguments, ranges, kernel
 * signatures) and turns async work into rt_task records, which the stream
 * engine (rt_engine.h) queues and runs in order; a backend owns devices and
 * their memory and executes validated device tasks. A new backend (cuda)
 * fills rt_backend_t.
 */
#ifndef RDEV_RT_INTERNAL_H
#define RDEV_RT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "rdev/ops.h"
#include "rdev/runtime.h"

typedef struct rt_engine rt_engine_t;

/* Common head of the engine's stream and event objects. */
struct rdev_rt_stream {
  rdev_rt_t *rt;
  int dev;
  void *dev_stream; /* the backend's per-stream state (acl: its aclrtStream) */
};

struct rdev_rt_event {
  rdev_rt_t *rt;
  int dev;
};

struct rdev_rt_space {
  rdev_rt_t *rt;
};

typedef enum {
  RT_TASK_COPY = 1,     /* memcpy(dst, src, n) in any direction */
  RT_TASK_GATHER,       /* host pieces iov[0..n) end to end at dst */
  RT_TASK_MEMSET,       /* memset(dst, value, n) */
  RT_TASK_KERNEL,       /* run kernel k over blocks */
  RT_TASK_CALLBACK,     /* host function */
  RT_TASK_EVENT_RECORD, /* complete event record `gen` */
  RT_TASK_EVENT_WAIT,   /* wait for event record `gen` */
  RT_TASK_VALUE_WRITE,  /* store a 64-bit value at addr */
  RT_TASK_VALUE_WAIT,   /* wait until the 64-bit value at addr meets a condition */
  RT_TASK_OP            /* run an operator (rdev/ops.h) */
} rt_task_op_t;

/* One unit of async work, validated by the generic layer. Self-contained:
 * copied into the stream's queue, so the caller's memory is not referenced
 * except the host side of a copy (as CANN) and a gather's piece list. */
typedef struct {
  uint8_t op; /* rt_task_op_t */
  union {
    struct {
      void *dst;
      const void *src;
      size_t n;
      int value;               /* memset */
      rdev_memcpy_kind_t kind; /* copy */
    } mem;
    struct {
      int index;                    /* into rdev_rt_kernels() */
      const rdev_rt_function_t *fn; /* launched from a binary (held until the task is done), or NULL */
      uint32_t blocks;
      rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS]; /* PTR args resolved: base = address, offset = 0 */
      rdev_rt_print_fn print_fn;
      void *print_user;
    } kernel;
    struct {
      void *dst;
      const rdev_rt_iov_t *iov;
      int n;
    } gather;
    struct {
      rdev_rt_host_fn fn;
      void *user;
    } cb;
    struct {
      rdev_rt_event_t *ev;
      uint64_t gen; /* filled in by the backend's submit */
    } event;
    struct {
      void *addr; /* 8-byte aligned, inside one allocation */
      uint64_t value;
      uint32_t cond;       /* RT_TASK_VALUE_WAIT: rdev_value_cond_t */
      uint32_t timeout_ms; /* RT_TASK_VALUE_WAIT: 0 = none */
    } value;
    struct {
      rdev_op_call_t *call; /* checked; owned by the task (freed when it is done) */
    } op;
  } u;
} rt_task_t;

typedef struct rt_backend {
  const char *name;
  int confined; /* see rdev_rt_kernels_confined */
  /* Whether a synchronizing thread may run its short launches itself
   * (rt_engine_stream_run_here): the sim, whose kernels run on the host
   * for a time that follows from their arguments. Not acl: a device that
   * hangs would hold that thread (rdevd's completion-queue thread). */
  int runs_here;
  int (*open)(rdev_rt_t *rt, const rdev_rt_config_t *cfg, void **impl);
  /* after the engine closed every stream and event */
  void (*close)(void *impl);
  int (*device_count)(void *impl);
  int (*device_info)(void *impl, int dev, rdev_rt_device_info_t *info);
  /* sp NULL: the runtime's own space */
  int (*malloc)(void *impl, rdev_rt_space_t *sp, int dev, void **dptr, size_t size, size_t reserved);
  int (*space_create)(void *impl, rdev_rt_space_t **sp);
  void (*space_destroy)(rdev_rt_space_t *sp);
  void (*space_range)(const rdev_rt_space_t *sp, int dev, uint64_t *base, uint64_t *size);
  int (*free)(void *impl, void *dptr);
  int (*lookup)(void *impl, const void *p, void **base, size_t *size, int *dev);
  int (*malloc_host)(void *impl, void **p, size_t size);
  int (*free_host)(void *impl, void *p);
  int (*copy)(void *impl, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind);
  /* host-readable address of a checked device range, or NULL: see
   * rdev_rt_host_view (may be NULL: never host-mapped) */
  const void *(*host_view)(void *impl, const void *dptr, size_t n);
  int (*memset)(void *impl, void *dst, int value, size_t n);
  /* ---- the device side of the engine's streams (rt_engine.h) ----
   * Makes a new stream's device state in s->dev_stream, on the creating
   * thread; NULL = none. */
  int (*stream_open)(rdev_rt_stream_t *s);
  /* Releases it after the stream's worker exited; NULL = none. */
  void (*stream_close)(rdev_rt_stream_t *s);
  /* Rewrites a task as exec wants it, at submit (sim: device addresses
   * become arena addresses); NULL = as it is. */
  void (*prepare)(void *impl, rt_task_t *t);
  /* Runs one device task (COPY, GATHER, MEMSET, KERNEL, VALUE_WRITE, OP) on
   * s's worker and returns its error; calls a kernel's print_fn exactly
   * once. Waits inside it sleep with rt_engine_sleep. */
  int (*exec)(rdev_rt_stream_t *s, rt_task_t *t);
  /* Reads the 64-bit value at a (prepared) device address: value waits. */
  int (*load_value)(rdev_rt_stream_t *s, const void *addr, uint64_t *v);
  /* Interrupts the device task s's worker runs, where the device can
   * (acl: aclrtStreamAbort); NULL = none. Any thread. */
  void (*interrupt)(rdev_rt_stream_t *s);
  /* Whether built-in kernel `index` (rdev_rt_kernels) can run; NULL = all. */
  int (*kernel_offered)(void *impl, int index);
  /* Loads binary data for binary b's functions (acl: aclrtBinaryLoadFromData
   * and a function handle per function, kept in the function's dev_fn);
   * NULL = the runtime's parse is all. */
  int (*binary_load)(void *impl, rdev_rt_binary_t *b, const void *data, size_t len);
  void (*binary_unload)(void *impl, rdev_rt_binary_t *b);
  int (*fault_inject)(void *impl, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms);
  /* Whether operator `index` (rdev_op_table) can run; NULL = all. */
  int (*op_offered)(void *impl, int index);
} rt_backend_t;

/* The staging pool (staging.c). */
typedef struct {
  pthread_mutex_t mu;
  union rt_staging_head *idle; /* chunk-sized buffers kept for reuse */
  int nidle;
  size_t lent; /* buffers given out and not put back */
} rt_staging_t;

struct rdev_rt {
  const rt_backend_t *be;
  void *impl;
  rt_engine_t *eng; /* streams and events */
  rt_staging_t staging;
};

/* The staging pool's start (rdev_rt_open) and end (rdev_rt_close: frees
 * the idle buffers; every lent one must be back). */
void rt_staging_init(rdev_rt_t *rt);
void rt_staging_close(rdev_rt_t *rt);

extern const rt_backend_t rt_sim_backend, rt_acl_backend;

/* Sleeps up to ns on s's worker; returns early (non-zero) when s's work is
 * discarded (engine.c). */
int rt_engine_sleep(rdev_rt_stream_t *s, uint64_t ns);
/* On s's worker: whether the task it runs is being discarded (a force
 * destroy, abort or discard cut it off), so that a backend tells a task it
 * interrupted from one that failed (engine.c). */
int rt_engine_cut_off(rdev_rt_stream_t *s);

/* A loaded kernel binary (binary.c) and its functions. */
struct rdev_rt_function {
  const rdev_rt_binary_t *bin;
  char name[RDEV_RT_MAX_KERNEL_NAME + 1];
  uint64_t entry;
  const rdev_kernel_sig_t *sig;
  int has_layout;
  int nargs;
  uint32_t offset[RDEV_RT_MAX_KERNEL_ARGS];
  size_t blob_size; /* bytes the layout spans */
  void *dev_fn;     /* the backend's handle (binary_load), or NULL */
};

struct rdev_rt_binary {
  rdev_rt_t *rt;
  atomic_int refs; /* the loader's, plus one per queued launch */
  void *dev_bin;   /* the backend's handle (binary_load), or NULL */
  int nfuncs;
  rdev_rt_function_t funcs[];
};

/* Checks a launch of kernel sig against its signature, resolves its
 * pointers and queues it on s (kernels.c); fn: the binary's function it
 * runs, held by the caller for the task, or NULL for the built-in kernel. */
int rt_launch(rdev_rt_stream_t *s, const rdev_kernel_sig_t *sig, const rdev_rt_function_t *fn, uint32_t blocks,
              const rdev_kernel_arg_t *args, int nargs, rdev_rt_print_fn print_fn, void *print_user);

/* Drops a reference to b: the last unloads it from the device and frees it. */
static inline void rt_binary_unref(rdev_rt_binary_t *b) {
  if (atomic_fetch_sub(&b->refs, 1) != 1) return;
  if (b->rt->be->binary_unload) b->rt->be->binary_unload(b->rt->impl, b);
  free(b);
}

/* A queued launch holds its function's binary until the launch is done. */
static inline void rt_function_hold(const rdev_rt_function_t *f) {
  atomic_fetch_add(&((rdev_rt_binary_t *)f->bin)->refs, 1);
}
static inline void rt_function_release(const rdev_rt_function_t *f) { rt_binary_unref((rdev_rt_binary_t *)f->bin); }

/* Packs launch arguments into the blob a kernel binary's host stub would
 * (binary.c; docs/sim-binary.md "Blobs": each at the next offset aligned
 * to its size, at least 4; pointers 8 bytes, base + offset). blob holds
 * RDEV_RT_MAX_KERNEL_ARGS * 8 bytes; returns the length. */
size_t rt_blob_pack(const rdev_kernel_arg_t *args, int nargs, unsigned char *blob);

/* RDEV_OK if s is a stream (of rt, unless rt is NULL); else fails as a
 * bad handle (runtime.c). */
int rt_check_stream(rdev_rt_t *rt, rdev_rt_stream_t *s);

/* Records a detail for rdev_rt_last_error() and returns code. */
int rt_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears the calling thread's error detail (every public entry point does). */
void rt_clear_error(void);

/* Kernel print channel, used by kernel bodies: appends to the launch's print
 * buffer, bounded by RDEV_RT_PRINT_LIMIT. */
typedef struct rt_print_buf {
  char *data;
  size_t len, cap;
  int truncated;
} rt_print_buf_t;

void rt_print(rt_print_buf_t *pb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_print_release(rt_print_buf_t *pb);

#endif
