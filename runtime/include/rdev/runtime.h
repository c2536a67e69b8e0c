/*
 * rdev/runtime.h — the device runtime: the CANN runtime's model of devices,
 * device memory, streams, events, host callbacks and kernels, behind one
 * backend table. It knows nothing of gRPC; the server drives devices only
 * through this header, and tests and benchmarks use it in-process.
 *
 * Conventions (as the CANN runtime):
 * - Every function returns an rdev_status_t code (0 = RDEV_OK) unless noted.
 *   On failure a human-readable detail is kept per thread: rdev_rt_last_error().
 * - Device pointers are opaque `void *` device addresses, never host
 *   addresses (on the sim they lie at 2^60 and above, where no host maps
 *   memory): callers must never dereference them; only the runtime may.
 *   Every allocation lies in an address space (rdev_rt_space_t): one
 *   owner's range on each device, disjoint from every other space's.
 * - "Async" calls enqueue work on a stream and return before it runs. Their
 *   results are valid only after rdev_rt_stream_synchronize() on that stream.
 *   Errors of asynchronous work (kernel fault, injected fault) are reported by
 *   the next synchronize of that stream, which clears them: the stream stays
 *   usable.
 * - Work on one stream runs in submission order; different streams run
 *   concurrently. All functions are thread-safe unless noted.
 */
#ifndef RDEV_RUNTIME_H
#define RDEV_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "rdev/ops.h"
#include "rdev/status.h"
#include "rdev/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdev_rt rdev_rt_t;               /* an opened runtime: one backend and its devices */
typedef struct rdev_rt_stream rdev_rt_stream_t; /* an ordered queue of device work */
typedef struct rdev_rt_event rdev_rt_event_t;   /* a marker recorded in a stream */
typedef struct rdev_rt_space rdev_rt_space_t;   /* one owner's device address range on every device */

/* Limits shared by every backend (Ascend A2/A3 figures). */
#define RDEV_RT_MAX_STREAMS_PER_DEVICE 1984
#define RDEV_RT_MAX_EVENTS_PER_DEVICE 65536
#define RDEV_RT_MEM_ALIGN RDEV_MEM_ALIGN /* rdev/types.h */
#define RDEV_RT_MAX_KERNEL_ARGS 8
#define RDEV_RT_MAX_KERNEL_BLOCKS 65535
#define RDEV_RT_PRINT_LIMIT 65536    /* bytes of kernel print kept per launch */
#define RDEV_RT_MAX_SPACES 65535     /* address spaces live at once */
#define RDEV_RT_MAX_KERNEL_NAME 63   /* bytes of a kernel's name */
#define RDEV_RT_MAX_BINARY (1 << 20) /* bytes of a kernel binary */

/* ---- opening a runtime -------------------------------------------------- */

typedef struct {
  const char *backend;     /* "sim" (default when NULL) or "acl" */
  int sim_devices;         /* sim: number of devices (default 2 when 0); acl: passed to a
                                test double that takes it, else the hardware's */
  size_t sim_mem_bytes;    /* sim: arena size per device (default 1 GiB when 0, at most 1 TiB);
                                acl: as sim_devices */
  unsigned stream_depth;   /* tasks a stream queues before submitters block (default 1024) */
  unsigned slots;          /* copies/memsets/kernels a device runs at once, shared by
                                scheduling group weight (see rdev_rt_stream_set_group);
                                0 = no limit, every stream runs when its thread does */
  int sim_unmapped;        /* sim: nonzero = device memory is not host-mapped, as on a real
                                NPU: rdev_rt_host_view returns NULL, so callers take the
                                staged path every such backend needs */
  const char *acl_lib;     /* acl: the CANN runtime library to load (NULL: libascendcl.so
                                from $ASCEND_HOME_PATH/lib64, else the loader's path) */
  const char *acl_kernels; /* acl: a directory of kernel binaries (NAME.o) that hold the built-in
                                kernels (NULL: no built-in kernels) */
  const char *acl_opapi;   /* acl: CANN's operator library, a directory holding libnnopbase.so and
                                libopapi.so or one library with both's calls (NULL: the ACL library
                                itself if it has them, its directory, $ASCEND_HOME_PATH/lib64, the
                                loader's path; none found: no operator is offered) */
  /* Optional: called on a stream's worker after each task that ran on the device (copy, memset,
   * value write, kernel, operator), with the device, the stream's scheduling group (see
   * rdev_rt_stream_set_group), whether it was a kernel or operator (1) or a copy (0), the ns it
   * waited for an execution slot (0 when the device is unscheduled) and the ns it ran. It must
   * be quick, not block and not call into the runtime (rdevd's metrics count with it). */
  void (*task_done)(void *user, int dev, uint32_t group, int kernel, uint64_t wait_ns, uint64_t run_ns);
  void *task_done_user;
} rdev_rt_config_t;

/* Opens the backend named in cfg (NULL cfg = all defaults) and its devices.
 * On success *out owns everything created through it until rdev_rt_close().
 * The acl backend (runtime/acl/) loads the CANN runtime library at run
 * time; a library that cannot be loaded or lacks a function it uses is
 * RDEV_API_NOT_SUPPORT naming it (rdev_rt_last_error). */
int rdev_rt_open(const rdev_rt_config_t *cfg, rdev_rt_t **out);

/* Closes the runtime: force-destroys remaining streams (their queued work is
 * discarded, callbacks run with RDEV_CANCELLED), then frees remaining events,
 * device and host memory. Blocks until the stream workers have exited.
 * Every staging buffer must have been put back (rdev_rt_staging_lent). */
void rdev_rt_close(rdev_rt_t *rt);

/* Name of the backend the runtime was opened with ("sim", "acl"). Never NULL. */
const char *rdev_rt_backend_name(const rdev_rt_t *rt);

/* Detail of the calling thread's most recent failure (like aclGetRecentErrMsg);
 * "" when there is none. Valid until this thread's next runtime call. */
const char *rdev_rt_last_error(void);

/* ---- devices ------------------------------------------------------------ */

typedef struct {
  char name[32];      /* SoC-style name; "sim" for the sim backend */
  size_t total_bytes; /* device memory */
  size_t free_bytes;  /* total minus what allocations reserve */
} rdev_rt_device_info_t;

/* Number of devices. Never blocks. */
int rdev_rt_device_count(rdev_rt_t *rt, int *count);

/* Name and memory of device dev; RDEV_RT_INVALID_DEVICEID when out of range. */
int rdev_rt_device_info(rdev_rt_t *rt, int dev, rdev_rt_device_info_t *info);

/* aclrtGetMemInfo for device dev: free and total bytes. */
int rdev_rt_mem_info(rdev_rt_t *rt, int dev, size_t *free_bytes, size_t *total_bytes);

/* ---- memory ------------------------------------------------------------- */

/* rdev_mem_reserved_size (rdev/types.h): the bytes an allocation of `size`
 * reserves; free_bytes drops by exactly this much per allocation. */
size_t rdev_rt_mem_reserved_size(size_t size);

/* aclrtMalloc on device dev: *dptr gets a 64-byte-aligned device address of
 * at least size bytes, in the runtime's own address space. size 0 is
 * RDEV_INVALID_PARAM; no room is RDEV_RT_DEVICE_OOM. Contents are
 * undefined. Never blocks on streams. */
int rdev_rt_malloc(rdev_rt_t *rt, int dev, void **dptr, size_t size, rdev_mem_policy_t policy);

/* rdev_rt_malloc inside address space sp: the address lies in sp's range
 * on dev (rdev_rt_space_range). */
int rdev_rt_malloc_in(rdev_rt_space_t *sp, int dev, void **dptr, size_t size, rdev_mem_policy_t policy);

/* Reserves an address space: a range of device addresses on every device
 * for one owner (a session), disjoint from every other live space's and
 * from the runtime's own. Memory is allocated in it with rdev_rt_malloc_in
 * and freed with rdev_rt_free as any other. At most RDEV_RT_MAX_SPACES
 * live at once (RDEV_STORAGE_OVER_LIMIT past that). Never blocks. */
int rdev_rt_space_create(rdev_rt_t *rt, rdev_rt_space_t **sp);

/* Gives the space up. Allocations still in it stay valid until freed (the
 * caller frees them, now or once in-flight work is done); its range is
 * reused only after the last of them is freed and, as far as the backend
 * can, as late as possible. sp is invalid afterwards. Any thread. */
void rdev_rt_space_destroy(rdev_rt_space_t *sp);

/* The range [*base, *base + *size) that sp's allocations on device dev
 * lie in. RDEV_RT_INVALID_DEVICEID when dev is out of range;
 * RDEV_API_NOT_SUPPORT on acl, whose device addresses are the CANN
 * runtime's (a space there is the set of its allocations). */
int rdev_rt_space_range(const rdev_rt_space_t *sp, int dev, uint64_t *base, uint64_t *size);

/* aclrtFree: releases an allocation made by rdev_rt_malloc (dptr must be its
 * start). Does not wait for in-flight work that uses it, as CANN. */
int rdev_rt_free(rdev_rt_t *rt, void *dptr);

/* Finds the allocation that contains device address p: its start, its size
 * (as requested) and its device. RDEV_INVALID_PARAM when p is in none. */
int rdev_rt_mem_lookup(rdev_rt_t *rt, const void *p, void **base, size_t *size, int *dev);

/* aclrtMallocHost: page-aligned host staging memory (pinned on real
 * backends). size 0 is RDEV_INVALID_PARAM. Caller frees with rdev_rt_free_host. */
int rdev_rt_malloc_host(rdev_rt_t *rt, void **ptr, size_t size);

/* aclrtFreeHost: p must come from rdev_rt_malloc_host, else RDEV_INVALID_PARAM. */
int rdev_rt_free_host(rdev_rt_t *rt, void *p);

/* aclrtMemcpy: copies count bytes and returns when they are copied. Does not
 * synchronize any stream. count > dest_max is RDEV_RT_PARAM_INVALID; count 0
 * is a no-op success; a device side that is not inside one allocation for all
 * count bytes is RDEV_INVALID_PARAM; D2D needs both addresses 64-byte aligned
 * (RDEV_MEMORY_ADDRESS_UNALIGNED). The host side is the caller's memory and
 * must hold count bytes. */
int rdev_rt_memcpy(rdev_rt_t *rt, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind);

/* A host address through which the host may read the n (>= 1) bytes of
 * device memory at dptr without copying them, when the backend's device
 * memory is host-mapped (sim: it is host memory); NULL when it is not (then
 * copy with rdev_rt_memcpy) or when the range is not inside one allocation.
 * The view is valid while the allocation lives and shows the memory as it
 * is when read, device work on it included. Never blocks. */
const void *rdev_rt_host_view(rdev_rt_t *rt, const void *dptr, size_t n);

/* aclrtMemcpyAsync: checks as rdev_rt_memcpy, enqueues the copy on s and
 * returns. Host memory on either side must stay valid until the stream is
 * synchronized; the destination is valid only after that. */
int rdev_rt_memcpy_async(rdev_rt_t *rt, void *dst, size_t dest_max, const void *src, size_t count,
                         rdev_memcpy_kind_t kind, rdev_rt_stream_t *s);

/* One piece of host memory for rdev_rt_memcpy_gather(_async). */
typedef struct {
  const void *base;
  size_t len;
} rdev_rt_iov_t;

/* Host-to-device copy of n host pieces laid end to end at dst, as one task
 * (a gather list, as a DMA engine takes it): checks as rdev_rt_memcpy (every
 * piece host memory, their sum within dest_max and dst's allocation),
 * enqueues the copy on s and returns. The iov array and the pieces must stay
 * valid until the copy ran, e.g. until a callback queued after it. */
int rdev_rt_memcpy_gather_async(rdev_rt_t *rt, void *dst, size_t dest_max, const rdev_rt_iov_t *iov, int n,
                                rdev_rt_stream_t *s);

/* The same gather, synchronous: checked as a whole first (nothing is
 * copied when any piece or the total is wrong), returns once every piece
 * is copied. Does not synchronize any stream, as rdev_rt_memcpy. */
int rdev_rt_memcpy_gather(rdev_rt_t *rt, void *dst, size_t dest_max, const rdev_rt_iov_t *iov, int n);

/* ---- host staging ------------------------------------------------------- */

/* Device data crosses the host through staging buffers: host memory the
 * device copies to and from at full speed (plain memory on the sim; pinned
 * memory on a real NPU, whose memory is not host-mapped). Buffers of up to
 * RDEV_RT_STAGING_CHUNK bytes are pooled and reused. */
#define RDEV_RT_STAGING_CHUNK (1u << 20)

/* A staging buffer of at least n bytes, 64-byte aligned; NULL when out of
 * host memory. Never blocks on the device. Any thread. */
void *rdev_rt_staging_get(rdev_rt_t *rt, size_t n);

/* Gives a staging buffer back (NULL: nothing). Any thread; its runtime
 * must still be open. */
void rdev_rt_staging_put(void *p);

/* Staging buffers given out and not yet put back. */
size_t rdev_rt_staging_lent(rdev_rt_t *rt);

/* aclrtMemset on device memory: sets count bytes at dptr to (uint8_t)value.
 * Same count/dest_max and range rules as rdev_rt_memcpy. */
int rdev_rt_memset(rdev_rt_t *rt, void *dptr, size_t dest_max, int value, size_t count);

/* aclrtMemsetAsync: as rdev_rt_memset, enqueued on s. */
int rdev_rt_memset_async(rdev_rt_t *rt, void *dptr, size_t dest_max, int value, size_t count, rdev_rt_stream_t *s);

/* ---- streams ------------------------------------------------------------ */

/* aclrtCreateStream on device dev. At most RDEV_RT_MAX_STREAMS_PER_DEVICE per
 * device (RDEV_STORAGE_OVER_LIMIT beyond). */
int rdev_rt_stream_create(rdev_rt_t *rt, int dev, rdev_rt_stream_t **s);

/* aclrtDestroyStream: waits until the work already queued on s has run, then
 * frees the stream. Errors that work raised are returned, as by synchronize.
 * s is invalid afterwards whatever the result. As for every object, no other
 * thread may still be inside a call on s (a submit, say) when it starts. */
int rdev_rt_stream_destroy(rdev_rt_stream_t *s);

/* aclrtDestroyStreamForce: discards work not yet started (host callbacks of
 * discarded work still run, with RDEV_CANCELLED, so their owners can release
 * what they hold), interrupts a running delay or injected hang, waits for the
 * task in progress to end (a sim operator in progress stops early), then
 * frees the stream. */
int rdev_rt_stream_destroy_force(rdev_rt_stream_t *s);

/* The discarding half of rdev_rt_stream_destroy_force, without the wait:
 * work on s not yet started, now or submitted later, is discarded (host
 * callbacks run with RDEV_CANCELLED), and a running delay or injected hang
 * is interrupted; returns at once, the task in progress may still run. s
 * must still be destroyed (rdev_rt_stream_destroy_force). To end several
 * streams whose running tasks may wait for one another: abort them all,
 * then destroy each. */
int rdev_rt_stream_abort(rdev_rt_stream_t *s);

/* aclrtStreamAbort: the work queued on s so far that has not started is
 * discarded (host callbacks of it run with RDEV_CANCELLED), a running delay
 * or hang is interrupted, and the next synchronize reports
 * RDEV_RT_STREAM_ABORT when anything was discarded. Returns at once; the
 * stream stays usable and runs the work queued after the call. */
int rdev_rt_stream_discard(rdev_rt_stream_t *s);

/* aclrtSynchronizeStream: blocks until all work queued on s before the call
 * has run; returns the first error that work raised since the previous
 * synchronize (and clears it), else RDEV_OK. */
int rdev_rt_stream_synchronize(rdev_rt_stream_t *s);

/* aclrtSynchronizeStreamWithTimeout: as synchronize, but gives up after
 * timeout_ms (-1 = wait forever) with RDEV_RT_STREAM_SYNC_TIMEOUT, leaving
 * the work queued and any pending error in place. */
int rdev_rt_stream_synchronize_timeout(rdev_rt_stream_t *s, int32_t timeout_ms);

/* Runs the work queued on s on the calling thread, now, when s's worker
 * waits for work and that work is only kernel launches that s ran lately
 * (the same kernel, blocks and arguments) in budget_ns all together: a
 * synchronizer about to wait for a short launch (rdevd's completion-queue
 * thread) saves the worker's wake-up. The launches run in order, in
 * execution slots taken without waiting, as the worker would run them;
 * their errors are the stream's, for the next synchronize. *ran (may be
 * NULL) is 1 when it ran all of it, else 0: nothing, or the rest left to
 * the worker when the device had no slot free. Blocks for about the
 * launches' time, which the budget bounds as far as a launch's last run
 * tells its next. The sim's launches only: on acl (a device that may hang)
 * it never runs anything. */
int rdev_rt_stream_run_quick(rdev_rt_stream_t *s, uint64_t budget_ns, int *ran);

/* Returns and clears the first error the stream's work raised since the last
 * synchronize or take (RDEV_OK if none; else its detail, the backend's text,
 * is in rdev_rt_last_error(), as a synchronize's). Called from a host callback on s it
 * covers exactly the work queued before that callback: this is how a caller
 * that must not block (the server) synchronizes a stream. Never blocks. */
int rdev_rt_stream_take_error(rdev_rt_stream_t *s);

/* aclrtSetStreamFailureMode: stop nonzero = once a task of s fails, the
 * device work queued on s after it (copies, memsets, kernels, value
 * writes) is skipped until a synchronize or take reports the error; a
 * skipped copy to host memory leaves zeros there. Host callbacks, events
 * and value waits still run, in order. Streams start in continue mode
 * (stop 0): every task runs whatever failed before it. */
int rdev_rt_stream_set_failure_mode(rdev_rt_stream_t *s, int stop);

/* Puts s in scheduling group `group` (e.g. a tenant) with the given weight
 * (>= 1) and cap (the execution slots of the device the group may hold at
 * once; 0 = no cap); the group's weight and cap are the last ones set. When
 * a device's execution slots are contended, groups get device time in
 * proportion to their weights, whatever their number of streams; a group
 * at its cap waits for one of its own slots and never holds up another
 * group. Streams start in group 0, weight 1, no cap. */
int rdev_rt_stream_set_group(rdev_rt_stream_t *s, uint32_t group, uint32_t weight, uint32_t max_slots);

/* aclrtStreamQuery: *done = 1 when every queued task has run (a running host
 * callback aside, as for rdev_rt_stream_pending), else 0. Never blocks. */
int rdev_rt_stream_query(rdev_rt_stream_t *s, int *done);

/* Tasks queued on s that have not finished (0 = idle). A host callback that
 * is running does not count: all the work before it is done, which is what
 * it may have told others. Never blocks. A submitter that must never block
 * (the server) keeps this under the stream's depth (stream_depth). */
int rdev_rt_stream_pending(rdev_rt_stream_t *s, size_t *tasks);

/* *idle = 1 when nothing is queued on s and nothing runs, a host callback
 * included: stricter than rdev_rt_stream_query, so that whatever a callback
 * still does (send a reply) is done before anything the caller does next.
 * Never blocks. */
int rdev_rt_stream_idle(rdev_rt_stream_t *s, int *idle);

/* Batches of small tasks. Between rdev_rt_batch_begin and rdev_rt_batch_end
 * on one thread, work that thread queues on a stream whose worker is idle
 * does not wake it at once; rdev_rt_batch_end wakes each such stream once
 * (a wake per small task costs more than the task). The work is queued and
 * ordered as always, only started later. A call of the thread that waits
 * for streams (synchronize, destroy, an event's synchronize, a full queue)
 * wakes them first; at most 8 streams are held back, more wake at once.
 * Pairs nest. Never block (the end wakes, it does not wait). */
void rdev_rt_batch_begin(void);
void rdev_rt_batch_end(void);

/* *vacant = 1 when s is idle (rdev_rt_stream_idle) and holds no error of
 * earlier work: a copy the caller does itself now is then what queuing it
 * on s would have done (the server receives bulk Writes' bytes straight
 * into device memory so). Never blocks. */
int rdev_rt_stream_vacant(rdev_rt_stream_t *s, int *vacant);

/* Device the stream belongs to. */
int rdev_rt_stream_device(const rdev_rt_stream_t *s);

/* ---- stream memory operations ------------------------------------------- */

/* Conditions of rdev_rt_value_wait (aclrtValueWait's flag values). */
typedef enum {
  RDEV_VALUE_GEQ = 0, /* *addr >= value */
  RDEV_VALUE_EQ = 1,  /* *addr == value */
  RDEV_VALUE_AND = 2, /* (*addr & value) != 0 */
  RDEV_VALUE_NOR = 3  /* ~(*addr | value) != 0 */
} rdev_value_cond_t;

/* aclrtValueWrite: in stream order, stores the 64-bit value at dptr (8
 * bytes inside one allocation of s's device, 8-byte aligned, else
 * RDEV_INVALID_PARAM / RDEV_MEMORY_ADDRESS_UNALIGNED). Enqueued. */
int rdev_rt_value_write(rdev_rt_stream_t *s, void *dptr, uint64_t value);

/* aclrtValueWait: work queued on s after this waits until the 64-bit value
 * at dptr meets cond against value (checked as rdev_rt_value_write), as
 * written by any stream, copy or kernel. The wait holds no execution slot;
 * a force destroy or abort of s ends it. timeout_ms > 0: after that long
 * the wait gives up and fails with RDEV_RT_WAIT_TIMEOUT (reported by the
 * next synchronize; the work after it runs); 0 waits for ever. Enqueued. */
int rdev_rt_value_wait(rdev_rt_stream_t *s, void *dptr, uint64_t value, rdev_value_cond_t cond, uint32_t timeout_ms);

/* ---- host callbacks ----------------------------------------------------- */

/* Runs on a runtime thread, never the submitting one. status is RDEV_OK when
 * the callback ran in stream order, RDEV_CANCELLED when its stream was
 * force-destroyed before it could. */
typedef void (*rdev_rt_host_fn)(void *user, int status);

/* aclrtLaunchCallback (blocking mode): fn runs after the work queued on s
 * before it, and the work queued after it waits for fn to return. fn is called
 * exactly once. */
int rdev_rt_launch_callback(rdev_rt_stream_t *s, rdev_rt_host_fn fn, void *user);

/* ---- events ------------------------------------------------------------- */

/* aclrtCreateEvent on device dev (events recorded in streams of that device). */
int rdev_rt_event_create(rdev_rt_t *rt, int dev, rdev_rt_event_t **ev);

/* aclrtDestroyEvent. Safe while streams still have work that records or waits
 * on it: the event lives on until that work has run. */
int rdev_rt_event_destroy(rdev_rt_event_t *ev);

/* aclrtRecordEvent: the event completes when the work queued on s before it
 * has run. Re-recording replaces the previous record. */
int rdev_rt_event_record(rdev_rt_event_t *ev, rdev_rt_stream_t *s);

/* aclrtStreamWaitEvent: work queued on s after this call waits until the
 * event's latest record (at the time of this call) completes. Waiting on a
 * never-recorded event waits for nothing. */
int rdev_rt_stream_wait_event(rdev_rt_stream_t *s, rdev_rt_event_t *ev);

/* aclrtSynchronizeEvent: blocks until the latest record completes (returns at
 * once if never recorded). timeout_ms -1 = forever, else RDEV_RT_WAIT_TIMEOUT. */
int rdev_rt_event_synchronize(rdev_rt_event_t *ev, int32_t timeout_ms);

/* aclrtQueryEventStatus: *done = 1 when the latest record has completed (or
 * there is none). Never blocks. */
int rdev_rt_event_query(rdev_rt_event_t *ev, int *done);

/* aclrtEventElapsedTime: milliseconds between two completed records.
 * RDEV_INVALID_PARAM when either is not recorded or not yet complete. */
int rdev_rt_event_elapsed_ms(float *ms, rdev_rt_event_t *start, rdev_rt_event_t *end);

/* aclrtEventGetTimestamp: when the latest record completed, in ns of the
 * device's clock (CLOCK_MONOTONIC on the sim). RDEV_INVALID_PARAM when it
 * is not recorded or not yet complete. */
int rdev_rt_event_timestamp(rdev_rt_event_t *ev, uint64_t *ns);

/* ---- kernels ------------------------------------------------------------ */

typedef struct {
  rdev_arg_type_t type;
  union {
    struct {
      void *base;      /* any address inside a device allocation */
      uint64_t offset; /* bytes past base */
    } ptr;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
  } v;
} rdev_kernel_arg_t;

/* How many elements a pointer parameter spans. */
typedef enum {
  RDEV_EXTENT_ONE = 0,    /* one element */
  RDEV_EXTENT_BLOCKS = 1, /* one element per block */
  RDEV_EXTENT_ARG = 2     /* as many elements as the integer argument count_arg */
} rdev_extent_kind_t;

typedef struct {
  const char *name; /* e.g. "out" */
  rdev_arg_type_t type;
  uint8_t writes;    /* PTR: the kernel writes through it */
  uint8_t elem_size; /* PTR: bytes per element */
  uint8_t extent;    /* PTR: rdev_extent_kind_t */
  uint8_t count_arg; /* PTR with RDEV_EXTENT_ARG: index of the count parameter */
} rdev_kernel_param_t;

typedef struct {
  const char *name; /* e.g. "square_f32" */
  const char *doc;  /* one line */
  int nparams;
  rdev_kernel_param_t params[RDEV_RT_MAX_KERNEL_ARGS];
} rdev_kernel_sig_t;

/* The built-in kernel registry: write_i32, square_f32, add_f32, axpy_f32,
 * reduce_sum_f32, delay_us. *count gets its length; the array is static. */
const rdev_kernel_sig_t *rdev_rt_kernels(int *count);

/* The signature of the kernel called name, or NULL. */
const rdev_kernel_sig_t *rdev_rt_kernel_find(const char *name);

/* 1 when rt can run the built-in kernel called name: every one on the sim;
 * on acl those the kernel binaries of rdev_rt_config_t.acl_kernels hold. A
 * launch of one it cannot run is RDEV_UNKNOWN_KERNEL. */
int rdev_rt_kernel_offered(rdev_rt_t *rt, const char *name);

/* 1 when a kernel reaches no device memory but what its checked arguments
 * span (the sim, whose kernels are the runtime's own code); 0 when it may
 * address any memory of the device's context (acl: code running on an NPU),
 * so that only trusted binaries may be loaded. */
int rdev_rt_kernels_confined(rdev_rt_t *rt);

/* Receives what one launch printed (at most RDEV_RT_PRINT_LIMIT bytes, then a
 * truncation note): called exactly once per accepted launch, after it ran, or
 * with len 0 when it printed nothing or was discarded by a force-destroy, so
 * print_user may be released in it. Never called when rdev_rt_launch fails.
 * Runs on a runtime thread; text is valid during the call. */
typedef void (*rdev_rt_print_fn)(void *user, const char *text, size_t len);

/* Launches kernel `name` with `blocks` blocks (1..RDEV_RT_MAX_KERNEL_BLOCKS)
 * on s. Arguments must match the signature in number and type
 * (RDEV_KERNEL_ARGS otherwise, naming the argument); every pointer argument's
 * extent, derived from the other arguments, must lie inside the allocation its
 * base points into (RDEV_INVALID_PARAM otherwise, naming the argument).
 * Unknown names are RDEV_UNKNOWN_KERNEL. args are copied; print_fn may be NULL. */
int rdev_rt_launch(rdev_rt_stream_t *s, const char *name, uint32_t blocks, const rdev_kernel_arg_t *args, int nargs,
                   rdev_rt_print_fn print_fn, void *print_user);

/* ---- kernel binaries ------------------------------------------------------ */

/* A loaded kernel binary in the rdev sim binary format (docs/sim-binary.md)
 * and one of its functions (valid while its binary is loaded). */
typedef struct rdev_rt_binary rdev_rt_binary_t;
typedef struct rdev_rt_function rdev_rt_function_t;

/* aclrtBinaryLoadFromData: parses len bytes (at most RDEV_RT_MAX_BINARY)
 * and checks every kernel's declared layout against the registry kernel it
 * names (RDEV_INVALID_PARAM for what is not the format, RDEV_UNKNOWN_KERNEL
 * for an unknown kernel, RDEV_KERNEL_ARGS for a layout that differs).
 * data is not kept. On acl the same data is also loaded on every device
 * (aclrtBinaryLoadFromData), so it must be both: the sim format is what
 * the ACL test double runs; an AscendC binary for NPUs carries no layout
 * this parser reads, and is refused (docs/acl-backend.md). Free with
 * rdev_rt_binary_unload before rdev_rt_close, whenever launches of it are
 * still queued: the binary goes once the last of them is done. */
int rdev_rt_binary_load(rdev_rt_t *rt, const void *data, size_t len, rdev_rt_binary_t **out);
void rdev_rt_binary_unload(rdev_rt_binary_t *b);

/* aclrtBinaryGetFunction / ByEntry: RDEV_UNKNOWN_KERNEL when absent. */
int rdev_rt_binary_function(const rdev_rt_binary_t *b, const char *name, const rdev_rt_function_t **f);
int rdev_rt_binary_function_by_entry(const rdev_rt_binary_t *b, uint64_t entry, const rdev_rt_function_t **f);

/* The function's name in its binary, and the registry kernel it runs. */
const char *rdev_rt_function_name(const rdev_rt_function_t *f);
const rdev_kernel_sig_t *rdev_rt_function_sig(const rdev_rt_function_t *f);

/* Decodes an argument blob (the bytes a host stub packed, len at least the
 * layout's span) into *nargs typed arguments; pointers are the device
 * addresses the blob holds (base = address, offset 0), not yet checked.
 * RDEV_KERNEL_ARGS for a function whose binary declares no layout, or a
 * blob too short for it. */
int rdev_rt_function_args(const rdev_rt_function_t *f, const void *blob, size_t len, rdev_kernel_arg_t *args,
                          int *nargs);
/* Where argument i (below the count rdev_rt_function_args gives) lies in
 * the blob: its byte offset. */
size_t rdev_rt_function_arg_offset(const rdev_rt_function_t *f, int i);

/* aclrtLaunchKernelWithHostArgs: decodes the blob and launches as
 * rdev_rt_launch, whose checks apply (every pointer's reach inside its
 * allocation). The blob is copied. */
int rdev_rt_launch_function(rdev_rt_stream_t *s, const rdev_rt_function_t *f, uint32_t blocks, const void *blob,
                            size_t len, rdev_rt_print_fn print_fn, void *print_user);

/* ---- operators ---------------------------------------------------------- */

/* Queues operator call c (rdev/ops.h; as rdev_op_decode makes it, one
 * allocation) on s and takes it over: the runtime frees it, also when the
 * call fails. Checks first, as aclnn's first phase: rdev_op_check's codes;
 * RDEV_UNKNOWN_KERNEL when the backend does not offer the operator; every
 * present tensor's reach (rdev_tensor_reach) inside one allocation of s's
 * device (else RDEV_INVALID_PARAM naming it), aligned to its element size
 * (RDEV_MEMORY_ADDRESS_UNALIGNED). Errors of the run come at the stream's
 * next synchronize. Never waits for the device but when s's queue is full. */
int rdev_rt_op_launch(rdev_rt_stream_t *s, rdev_op_call_t *c);

/* 1 when rt can run operator `name` (rdev_op_find): every one on the sim;
 * on acl those the operator library it loaded offers. */
int rdev_rt_op_offered(rdev_rt_t *rt, const char *name);

/* ---- fault injection (tests) -------------------------------------------- */

typedef enum {
  RDEV_FAULT_ALLOC = 1,  /* the nth allocation on dev from now fails with RDEV_RT_DEVICE_OOM */
  RDEV_FAULT_KERNEL = 2, /* the nth kernel run on dev from now faults: RDEV_RT_AICORE_EXCEPTION at sync */
  RDEV_FAULT_HANG = 3    /* the nth task run on dev from now first stalls for hang_ms */
} rdev_fault_kind_t;

/* Arms one fault of `kind` on device dev, to fire on the nth (1 = next)
 * matching event. Arming the same kind again replaces the previous one. */
int rdev_rt_fault_inject(rdev_rt_t *rt, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms);

#ifdef __cplusplus
}
#endif
#endif
