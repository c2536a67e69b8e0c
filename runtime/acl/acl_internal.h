/*
 * runtime/acl/acl_internal.h — what the acl backend's files share: the CANN
 * runtime functions it resolves at run time (acl_loader.c), its state
 * (devices, their contexts, the allocation tables, built-in kernels), the
 * per-thread current context, and the calls each file offers the others.
 *
 * The backend drives Ascend NPUs through the CANN runtime (libascendcl.so
 * or libacl_rt.so), loaded with dlopen: nothing of CANN is needed to build
 * rdev. Types are CANN's ABI, declared here: aclError is int, every handle
 * a pointer, enums int. The operator library (libnnopbase.so, libopapi.so)
 * is loaded the same way, when present (acl_ops.c).
 */
#ifndef RDEV_ACL_INTERNAL_H
#define RDEV_ACL_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "../rt_internal.h"

typedef int acl_error_t;

/* rdev's client libraries (client/cann/) export this; CANN's do not. */
#define ACL_RDEV_CLIENT_MARKER "aclrdevClientLibrary"

typedef struct acl_nnop acl_nnop_t; /* the operator library (acl_ops.c) */
typedef struct acl_opfn acl_opfn_t; /* one operator's functions in it */

/* Every CANN function the backend calls, as CANN declares it; member X is
 * CANN's function aclX (named apart from it: the backend calls CANN, never a
 * function of this name in rdev's own client library). */
typedef struct {
  acl_error_t (*Init)(const char *config);
  acl_error_t (*Finalize)(void);
  const char *(*GetRecentErrMsg)(void);
  acl_error_t (*rtGetDeviceCount)(uint32_t *count);
  const char *(*rtGetSocName)(void);
  acl_error_t (*rtCreateContext)(void **ctx, int32_t dev);
  acl_error_t (*rtDestroyContext)(void *ctx);
  acl_error_t (*rtSetCurrentContext)(void *ctx);
  acl_error_t (*rtGetMemInfo)(int attr, size_t *free_bytes, size_t *total_bytes);
  acl_error_t (*rtMalloc)(void **p, size_t size, int policy);
  acl_error_t (*rtFree)(void *p);
  acl_error_t (*rtMallocHost)(void **p, size_t size);
  acl_error_t (*rtFreeHost)(void *p);
  acl_error_t (*rtMemcpy)(void *dst, size_t max, const void *src, size_t n, int kind);
  acl_error_t (*rtMemcpyAsync)(void *dst, size_t max, const void *src, size_t n, int kind, void *stream);
  acl_error_t (*rtMemset)(void *p, size_t max, int32_t value, size_t n);
  acl_error_t (*rtMemsetAsync)(void *p, size_t max, int32_t value, size_t n, void *stream);
  acl_error_t (*rtCreateStream)(void **stream);
  acl_error_t (*rtDestroyStream)(void *stream);
  acl_error_t (*rtSynchronizeStreamWithTimeout)(void *stream, int32_t timeout_ms);
  acl_error_t (*rtStreamAbort)(void *stream);
  acl_error_t (*rtBinaryLoadFromData)(const void *data, size_t len, const void *options, void **bin);
  acl_error_t (*rtBinaryUnLoad)(void *bin);
  acl_error_t (*rtBinaryGetFunction)(void *bin, const char *name, void **fn);
  acl_error_t (*rtLaunchKernelWithHostArgs)(void *fn, uint32_t blocks, void *stream, void *cfg, void *args,
                                            size_t args_size, void *placeholders, size_t nplaceholders);
  /* the ACL test double's control entry points (tests/acl_double/); NULL in CANN */
  acl_error_t (*doubleConfigure)(int32_t devices, size_t mem_bytes);
  acl_error_t (*doubleFaultInject)(int32_t dev, int32_t kind, uint32_t nth, uint32_t hang_ms);
} acl_api_t;

/* Loads the CANN runtime once per process (later calls share it; path must
 * then name the same library) and aclInit's it; *api gets its functions.
 * A missing library or function fails with RDEV_API_NOT_SUPPORT naming it,
 * as does rdev's own ACL-compatible client library. */
int acl_load(const char *path, size_t devices_hint, size_t mem_hint, const acl_api_t **api);
/* Gives the load back: the last one aclFinalize's (the library stays mapped). */
void acl_unload(void);
/* The path the CANN runtime was loaded from (after acl_load). */
const char *acl_loaded_path(void);

/* Allocations, device or pinned host, by address range (acl_mem.c). */
typedef struct acl_space {
  rdev_rt_space_t base;
  atomic_size_t refs; /* the owner's, plus one per allocation in it */
  struct acl_space *prev, *next;
} acl_space_t;

typedef struct {
  uintptr_t addr;
  size_t size;     /* as requested */
  size_t reserved; /* what it counts against the device */
  int dev;         /* -1 for host memory */
  acl_space_t *sp;
} acl_block_t;

typedef struct {
  void *root; /* tsearch tree of acl_block_t, ordered by address range */
  pthread_mutex_t mu;
} acl_table_t;

typedef struct {
  void *ctx;
  void **builtin; /* function handle per registry kernel, NULL = not offered */
  void **kbins;   /* binaries loaded from acl_kernels */
  int nkbins;
} acl_dev_t;

typedef struct {
  rdev_rt_t *rt;
  const acl_api_t *api;
  uint64_t gen; /* this instance's number, for the per-thread context cache */
  int ndev;
  acl_dev_t *devs;
  char soc[32];
  acl_table_t dmem, hmem;
  acl_space_t own;     /* the runtime's own space (not in spaces) */
  atomic_int nspaces;  /* spaces created and not destroyed */
  acl_space_t *spaces; /* every other live space, for close */
  pthread_mutex_t spaces_mu;
  acl_nnop_t *nnop; /* the operator library; NULL = none, no operator offered */
} acl_t;

/* ---- acl_context.c ---- */
/* Fails with code, the CANN runtime's text in the detail. */
int acl_fail(acl_t *a, int code, const char *what);
/* Makes device dev's context current on the calling thread (once per
 * thread and device switch). */
int acl_enter(acl_t *a, int dev);
/* A new instance number (acl_t.gen). */
uint64_t acl_context_gen(void);
/* The calling thread's cache forgets instance gen's context (0: any). */
void acl_forget(uint64_t gen);

/* ---- acl_mem.c ---- */
void acl_table_init(acl_table_t *t);
/* The block holding [p, p + n), copied to *out; 0 when none does. */
int acl_table_find(acl_table_t *t, const void *p, size_t n, acl_block_t *out);
/* The device of device address p; -1 when p is not in an allocation. */
int acl_dev_of(acl_t *a, const void *p);
/* Frees every block and space left (close). */
void acl_mem_free_all(acl_t *a);
int acl_malloc(void *impl, rdev_rt_space_t *sp, int dev, void **dptr, size_t size, size_t reserved);
int acl_space_create(void *impl, rdev_rt_space_t **sp);
void acl_space_destroy(rdev_rt_space_t *sp);
int acl_free(void *impl, void *dptr);
int acl_lookup(void *impl, const void *p, void **base, size_t *size, int *dev);
int acl_malloc_host(void *impl, void **p, size_t size);
int acl_free_host(void *impl, void *p);
int acl_copy(void *impl, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind);
int acl_memset(void *impl, void *dst, int value, size_t n);
int acl_device_info(void *impl, int dev, rdev_rt_device_info_t *info);

/* ---- acl_exec.c ---- */
int acl_stream_open(rdev_rt_stream_t *s);
void acl_stream_close(rdev_rt_stream_t *s);
int acl_exec(rdev_rt_stream_t *s, rt_task_t *t);
int acl_load_value(rdev_rt_stream_t *s, const void *addr, uint64_t *v);
void acl_interrupt(rdev_rt_stream_t *s);
int acl_kernel_offered(void *impl, int index);
int acl_binary_load(void *impl, rdev_rt_binary_t *b, const void *data, size_t len);
void acl_binary_unload(void *impl, rdev_rt_binary_t *b);
/* Loads the built-in kernels from the binaries in dir (open). */
int acl_kernels_load(acl_t *a, const char *dir);
/* Unloads them (close). */
void acl_kernels_unload(acl_t *a);

/* ---- acl_ops.c ---- */
/* Loads CANN's operator library (open): from where (a directory holding
 * libnnopbase.so and libopapi.so, or one library that has both's calls),
 * which must load (else RDEV_API_NOT_SUPPORT naming what was tried); with
 * where NULL from the ACL library itself when it has them (the test
 * double), the ACL library's directory, $ASCEND_HOME_PATH/lib64 or the
 * loader's path, and when none has them the backend offers no operator
 * (RDEV_OK, a->nnop NULL). rdev's own client libraries are refused. */
int acl_ops_load(acl_t *a, const char *where);
void acl_ops_unload(acl_t *a);
/* Whether operator index (rdev_op_table) has both its functions. */
int acl_op_offered(void *impl, int index);
/* Runs an RT_TASK_OP's call on s's worker, synchronized (acl_exec). */
int acl_op_exec(acl_t *a, rdev_rt_stream_t *s, const rdev_op_call_t *c);
/* The generic path under acl_op_exec, for any signature (tests use it for
 * operators the table lacks): aclnn<sig>GetWorkspaceSize and aclnn<sig>
 * of the loaded library bound for sig, or NULL when either is missing
 * (acl_opfn_free it); and one call of them on s from the calling thread,
 * which must be s's worker or own s while nothing runs on it. */
acl_opfn_t *acl_opfn_bind(const acl_nnop_t *n, const rdev_op_sig_t *sig);
void acl_opfn_free(acl_opfn_t *f);
int acl_op_call(acl_t *a, rdev_rt_stream_t *s, const rdev_op_sig_t *sig, const acl_opfn_t *f, const rdev_op_call_t *c);

#endif
