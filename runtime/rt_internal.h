/*
 * runtime/rt_internal.h — what the runtime's generic layer (runtime.c) and
 * its backends share: the backend table, the task record that async work is
 * described by, and the error-detail helper. Not installed; not for the
 * server or client.
 *
 * The generic layer validates every call (arguments, ranges, kernel
 * signatures) and turns async work into rt_task records; a backend only
 * executes validated work. A new backend (acl, cuda) fills rt_backend_t.
 */
#ifndef RDEV_RT_INTERNAL_H
#define RDEV_RT_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "rdev/runtime.h"

/* Common head of every backend's stream and event objects. */
struct rdev_rt_stream {
  rdev_rt_t *rt;
  int dev;
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
  RT_TASK_VALUE_WAIT    /* wait until the 64-bit value at addr meets a condition */
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
      int value; /* memset */
    } mem;
    struct {
      int index; /* into rdev_rt_kernels() */
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
  } u;
} rt_task_t;

typedef struct rt_backend {
  const char *name;
  int (*open)(rdev_rt_t *rt, const rdev_rt_config_t *cfg, void **impl);
  /* close, part one: force-destroys every stream left (callbacks run with
   * RDEV_CANCELLED), so that nothing puts staging buffers back after */
  void (*stop)(void *impl);
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
  int (*stream_create)(void *impl, int dev, rdev_rt_stream_t **s);
  int (*stream_destroy)(rdev_rt_stream_t *s, int force);
  int (*stream_abort)(rdev_rt_stream_t *s);   /* see rdev_rt_stream_abort */
  int (*stream_discard)(rdev_rt_stream_t *s); /* see rdev_rt_stream_discard */
  int (*stream_sync)(rdev_rt_stream_t *s, int32_t timeout_ms);
  /* tasks queued and not finished, the running one included; *in_callback
   * = 1 when the running one is a host callback */
  int (*stream_pending)(rdev_rt_stream_t *s, size_t *tasks, int *in_callback);
  int (*stream_take_error)(rdev_rt_stream_t *s);
  int (*stream_set_failure_mode)(rdev_rt_stream_t *s, int stop);
  int (*stream_set_group)(rdev_rt_stream_t *s, uint32_t group, uint32_t weight, uint32_t max_slots);
  int (*submit)(rdev_rt_stream_t *s, const rt_task_t *t);
  int (*event_create)(void *impl, int dev, rdev_rt_event_t **ev);
  int (*event_destroy)(rdev_rt_event_t *ev);
  int (*event_sync)(rdev_rt_event_t *ev, int32_t timeout_ms);
  int (*event_query)(rdev_rt_event_t *ev, int *done);
  int (*event_elapsed)(float *ms, rdev_rt_event_t *a, rdev_rt_event_t *b);
  int (*event_timestamp)(rdev_rt_event_t *ev, uint64_t *ns);
  int (*fault_inject)(void *impl, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms);
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
  rt_staging_t staging;
};

/* The staging pool's start (rdev_rt_open) and end (rdev_rt_close: frees
 * the idle buffers; every lent one must be back). */
void rt_staging_init(rdev_rt_t *rt);
void rt_staging_close(rdev_rt_t *rt);

extern const rt_backend_t rt_sim_backend;

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
