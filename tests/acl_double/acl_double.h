/*
 * tests/acl_double/acl_double.h — the entry points libacl_double.so offers
 * beyond CANN's: setting up the devices the next aclInit opens and arming
 * device faults. Tests and rdevd's acl backend find them with dlsym; they
 * are exported with the acl* calls. Everything else the double does is
 * CANN's API, declared in client/cann/include/acl/acl.h.
 *
 * Choices where CANN leaves a number open (each failure also sets the
 * thread's aclGetRecentErrMsg text):
 * - memory or a kernel binary of another device than the current
 *   context's: ACL_ERROR_RT_PARAM_INVALID (107000);
 * - a stream of another device than the current context's:
 *   ACL_ERROR_RT_STREAM_CONTEXT (107003);
 * - an unknown or destroyed handle passed as an argument (context, stream,
 *   binary, function; NULL too: the double has no default stream):
 *   ACL_ERROR_INVALID_PARAM (100000); a calling thread whose current context
 *   is unset or destroyed: ACL_ERROR_RT_CONTEXT_NULL (107002);
 * - aclrtMemcpyAsync H2H needs both sides in aclrtMallocHost blocks;
 *   ACL_MEMCPY_DEFAULT takes its kind from the pointers (as CANN with
 *   unified addressing), the kinds past it are ACL_ERROR_INVALID_PARAM;
 * - a kernel binary belongs to the device it was loaded on: a launch of its
 *   functions needs that device's context current (else 107000);
 * - aclGetRecentErrMsg obtains and clears the text, as CANN, and gives ""
 *   rather than NULL when there is none.
 *
 * With ACL_DOUBLE_INTERNAL defined (the library's own files), it also
 * declares what those files share: the registries, the error helpers and
 * the call bookkeeping (acl_double.c).
 */
#ifndef ACL_DOUBLE_H
#define ACL_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

#include "acl/acl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Before aclInit only (else ACL_ERROR_REPEAT_INITIALIZE): the number of
 * devices (1..64) and the bytes of device memory each (4096 .. 1 TiB) that
 * the next aclInit opens; 0 keeps the default (2 devices, 256 MiB each).
 * Stays in force across aclFinalize/aclInit until changed. */
ACL_FUNC_VISIBILITY aclError acldoubleConfigure(int32_t devices, size_t mem_bytes);

/* After aclInit (else ACL_ERROR_UNINITIALIZE); no context needed. Arms one
 * fault on device dev, firing at the nth (1 = next) matching event; kind is
 * rdev_fault_kind_t: 1 the nth aclrtMalloc fails (207018), 2 the nth kernel
 * faults (507015 at the next synchronize of its stream), 3 the nth task
 * (copy, memset, kernel) first stalls hang_ms, so that a synchronize with
 * a shorter timeout gives 507046. Arming a kind again replaces it. */
ACL_FUNC_VISIBILITY aclError acldoubleFaultInject(int32_t dev, int32_t kind, uint32_t nth, uint32_t hang_ms);

/* Not a function: the environment variable ACL_DOUBLE_FAIL_DEVICE, read by
 * every aclrtCreateContext, set to a device number (or "all") makes
 * aclrtCreateContext of that device fail with ACL_ERROR_RT_DEV_SETUP_ERROR
 * (507033). */
#define ACL_DOUBLE_FAIL_DEVICE_ENV "ACL_DOUBLE_FAIL_DEVICE"

/* ---- the operator library (acl_double_ops.c) ----
 * The double is also libnnopbase.so and libopapi.so: aclCreateTensor and
 * the other object calls of aclnn/acl_meta.h, and the two phases of the
 * operators below, with CANN's signatures. Each phase appends one line to
 * the file $ACL_DOUBLE_OPLOG names (when set):
 *   aclnnAddGetWorkspaceSize self=T(float32 dims=[2,3] strides=[3,1] offset=0
 *     format=2 storage=[6] addr=0x...) other=... alpha=S(float32:1) out=...
 *     -> workspace=0                                  (or "-> error CODE")
 *   aclnnAdd workspace=0
 * tensors T(...), NULL null, scalars S(type:value) (%.17g, integers as
 * such, bools true/false), int arrays I[..], float arrays F[..] (%.9g),
 * bool arrays B[..], tensor lists L[T(..),..], doubles %.17g, int8/int64
 * as numbers, bools true/false, data types by name (float32, ...); and
 * "VIOLATION text" for a CANN rule the caller broke (an object that is not
 * live, a member of a tensor list destroyed on its own, an executor run
 * twice, a workspace of the wrong size or not device memory). Operators of
 * rdev's table are checked by its rules and computed on the double's
 * stream; Matmul asks for an 8192-byte workspace, LayerNorm 2048,
 * DoubleProbe (the double's own operator, one parameter of each kind:
 * self t?, flags ba, weights fa, eps f64, dim i64, mode i8, keep b,
 * dtype dt, value s?, tensors tl, sizes ia?, out t) 512, the others 0. */
#define ACL_DOUBLE_OPLOG_ENV "ACL_DOUBLE_OPLOG"
/* The same controls from the environment, read at every call (for a
 * double inside rdevd), entries apart by commas: ACL_DOUBLE_OP_WORKSPACE
 * "Add:4096" (the workspace Add asks for), ACL_DOUBLE_OP_FAIL
 * "Add:1:161002" (every call of Add's phase 1 fails with 161002). */
#define ACL_DOUBLE_OP_WORKSPACE_ENV "ACL_DOUBLE_OP_WORKSPACE"
#define ACL_DOUBLE_OP_FAIL_ENV "ACL_DOUBLE_OP_FAIL"

/* The workspace operator op ("Add") asks for from now on: bytes, or -1
 * for its own. */
ACL_FUNC_VISIBILITY aclError acldoubleOpWorkspace(const char *op, int64_t bytes);
/* The next call of op's phase (1 GetWorkspaceSize, 2 the run) fails with
 * code (0 disarms). */
ACL_FUNC_VISIBILITY aclError acldoubleOpFail(const char *op, int32_t phase, int32_t code);
/* Objects alive now: tensors, scalars, arrays, lists, executors not run. */
ACL_FUNC_VISIBILITY int64_t acldoubleOpObjects(void);

#ifdef ACL_DOUBLE_INTERNAL
#include <pthread.h>

#include "rdev/runtime.h"

typedef enum { OBJ_CTX = 1, OBJ_STREAM, OBJ_BIN, OBJ_FUNC } dbl_kind_t;

/* A context, stream, binary or function: the caller's handle is its id. */
typedef struct {
  dbl_kind_t kind;
  uint64_t id;    /* the handle the caller holds; never reused */
  int dev;        /* its device (a function: its binary's) */
  unsigned users; /* calls that use it now (streams, binaries) */
  int dead;       /* being destroyed: no lookup finds it */
  union {
    rdev_rt_stream_t *s;
    rdev_rt_binary_t *bin;
    struct {
      uint64_t bin; /* its binary's id */
      const rdev_rt_function_t *f;
    } fn;
  } u;
} dbl_obj_t;

typedef struct {
  char *p; /* an aclrtMallocHost block: "pinned" memory */
  size_t n;
} dbl_host_block_t;

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* users, inflight */
  rdev_rt_t *rt;     /* NULL outside aclInit .. aclFinalize */
  int closing;       /* aclFinalize waits for the calls in flight */
  unsigned inflight;
  int32_t devices; /* acldoubleConfigure; 0: defaults */
  size_t mem_bytes;
  uint64_t serial; /* the last handle given */
  dbl_obj_t **objs;
  size_t nobjs, cap_objs;
  dbl_host_block_t *host;
  size_t nhost, cap_host;
} dbl_state_t;

extern dbl_state_t dbl;

/* What a call works with: the open runtime and the current context's device. */
typedef struct {
  rdev_rt_t *rt;
  int dev;
} dbl_call_t;

/* Registries; the caller holds dbl.mu (dbl_unpin takes it). */
void *dbl_handle(const dbl_obj_t *o);
dbl_obj_t *dbl_find(dbl_kind_t k, const void *h);
dbl_obj_t *dbl_add(dbl_kind_t k, int dev);
void dbl_retire(dbl_obj_t *o);
void dbl_unpin(dbl_obj_t *o);
long dbl_host_block(const void *p, size_t n);

/* Errors: the thread's failure text, and runtime results passed through. */
__attribute__((format(printf, 2, 3))) aclError dbl_fail(aclError rc, const char *fmt, ...);
aclError dbl_rt_result(int rc, const char *fn);

/* Calls: dbl_enter .. dbl_leave around every call but aclInit, aclFinalize. */
aclError dbl_enter(dbl_call_t *c, int need_ctx, const char *fn);
aclError dbl_leave(aclError rc);
aclError dbl_stream_pin(const dbl_call_t *c, const void *h, dbl_obj_t **out, const char *fn);
#endif

#ifdef __cplusplus
}
#endif
#endif
