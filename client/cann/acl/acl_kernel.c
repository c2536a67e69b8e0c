/*
 * client/cann/acl/acl_kernel.c — kernels from binaries: aclrtBinaryLoad*,
 * aclrtBinaryGetFunction*, aclrtBinaryUnLoad and
 * aclrtLaunchKernelWithHostArgs over rdev_binary_* and
 * rdev_launch_function. The stubs ascendc_library generates load their
 * binary at static initialization, before aclInit: a binary and its
 * functions are the library's records, kept across sessions, and reach the
 * server when the session first needs them (at once when there is one).
 * Records and what they resolved are under the library's lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_lib.h"
#include "rdev/sim_binary.h"

typedef struct acl_func acl_func_t;

typedef struct acl_bin {
  void *data; /* the binary's bytes */
  size_t len;
  rdev_binary_t *loaded; /* in the current session; NULL before */
  acl_func_t *funcs;
  struct acl_bin *next;
} acl_bin_t;

struct acl_func {
  acl_bin_t *bin;
  char name[64]; /* by name, or by entry when name is "" */
  uint64_t entry;
  rdev_function_t *resolved; /* in the current session */
  acl_func_t *next;
};

static acl_bin_t *bins;

static acl_bin_t *bin_find(const void *h) {
  acl_bin_t *b = bins;
  while (b && b != h) b = b->next;
  return b;
}

static acl_func_t *func_find(const void *h) {
  for (acl_bin_t *b = bins; b; b = b->next)
    for (acl_func_t *f = b->funcs; f; f = f->next)
      if (f == h) return f;
  return NULL;
}

void acl_kernels_forget(void) {
  for (acl_bin_t *b = bins; b; b = b->next) {
    b->loaded = NULL; /* the session's end freed them */
    for (acl_func_t *f = b->funcs; f; f = f->next) f->resolved = NULL;
  }
}

/* Lock held: b on the server (its session: s). */
static aclError bin_load(rdev_session_t *s, acl_bin_t *b) {
  if (b->loaded) return ACL_SUCCESS;
  return acl_result(rdev_binary_load(s, b->data, b->len, &b->loaded), "aclrtBinaryLoadFromData");
}

/* Lock held: f resolved on the server, its binary loaded first. A launch
 * (!answer) waits for nothing, nor does aclrtBinaryGetFunction of a
 * kernel the binary's text declares (the sim format is text,
 * rdev/sim_binary.h): the lookup goes out with the next message, with the
 * binary's load if it is not loaded yet, and a refusal (a binary rdevd
 * takes not, a kernel its registry lacks) is the error of f's launches at
 * their stream's synchronize. A kernel the text lacks fails at once, as
 * in CANN, and sends nothing. Text the library cannot read waits for
 * rdevd's answer (one round trip): the load's refusal. */
static aclError func_resolve(rdev_session_t *s, acl_func_t *f, bool answer) {
  if (f->resolved) return ACL_SUCCESS;
  acl_bin_t *b = f->bin;
  const char *name = f->name[0] ? f->name : NULL;
  const char *what = name ? "aclrtBinaryGetFunction" : "aclrtBinaryGetFunctionByEntry";
  int declared = answer ? rdev_sim_binary_declares(b->data, b->len, name, f->entry) : 1;
  if (declared == 0)
    return name ? acl_fail(RDEV_UNKNOWN_KERNEL, "%s: the binary has no kernel '%s'", what, name)
                : acl_fail(RDEV_UNKNOWN_KERNEL, "%s: the binary has no kernel of entry %llu", what,
                           (unsigned long long)f->entry);
  if (declared == 1 && !b->loaded)
    return acl_result(rdev_binary_load_function(s, b->data, b->len, name, f->entry, &b->loaded, &f->resolved),
                      name ? "aclrtBinaryLoadFromData/aclrtBinaryGetFunction"
                           : "aclrtBinaryLoadFromData/aclrtBinaryGetFunctionByEntry");
  if (declared == 1) return acl_result(rdev_binary_function_async(b->loaded, name, f->entry, &f->resolved), what);
  aclError rc = bin_load(s, b);
  if (rc) return rc;
  if (name) return acl_result(rdev_binary_function(b->loaded, name, &f->resolved), what);
  return acl_result(rdev_binary_function_by_entry(b->loaded, f->entry, &f->resolved), what);
}

/* The options (the core type the stubs name) change nothing on the sim. */
aclError aclrtBinaryLoadFromData(const void *data, size_t length, const aclrtBinaryLoadOptions *options,
                                 aclrtBinHandle *binHandle) {
  (void)options;
  if (!data || !binHandle) return acl_fail(ACL_ERROR_INVALID_PARAM, "data or binHandle is NULL");
  if (length == 0 || length > (1u << 20))
    return acl_fail(ACL_ERROR_INVALID_PARAM, "a binary of %zu bytes: 1 to 1 MiB", length);
  acl_bin_t *b = calloc(1, sizeof *b);
  void *copy = malloc(length);
  if (!b || !copy) {
    free(b);
    free(copy);
    return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  }
  memcpy(copy, data, length);
  b->data = copy;
  b->len = length;
  acl_lock();
  /* with a session, checked now (as CANN does); without, at its first use */
  rdev_session_t *s = acl_session_if_open();
  aclError rc = s ? bin_load(s, b) : ACL_SUCCESS;
  if (!rc) {
    b->next = bins;
    bins = b;
  }
  acl_unlock();
  if (rc) {
    free(copy);
    free(b);
    return rc;
  }
  *binHandle = b;
  return ACL_SUCCESS;
}

aclError aclrtBinaryLoadFromFile(const char *binPath, aclrtBinaryLoadOptions *options, aclrtBinHandle *binHandle) {
  if (!binPath || !binHandle) return acl_fail(ACL_ERROR_INVALID_PARAM, "binPath or binHandle is NULL");
  FILE *f = fopen(binPath, "rb");
  if (!f) return acl_fail(ACL_ERROR_INVALID_FILE, "cannot open %s", binPath);
  char *buf = malloc((1u << 20) + 1);
  size_t n = buf ? fread(buf, 1, (1u << 20) + 1, f) : 0;
  int bad = !buf || ferror(f);
  fclose(f);
  aclError rc = bad ? acl_fail(ACL_ERROR_INVALID_FILE, "cannot read %s", binPath)
                    : aclrtBinaryLoadFromData(buf, n, options, binHandle);
  free(buf);
  return rc;
}

static void free_blocks_of(const acl_bin_t *b);

/* Its functions and their argument blocks go with it, as in CANN. */
aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
  acl_lock();
  acl_bin_t **pp = &bins;
  while (*pp && *pp != binHandle) pp = &(*pp)->next;
  acl_bin_t *b = *pp;
  if (b) *pp = b->next;
  /* on the server only in this process's live session (not a parent's) */
  rdev_binary_t *loaded = b && acl_session_if_open() ? b->loaded : NULL;
  if (b) free_blocks_of(b);
  acl_unlock();
  if (!b) return acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a loaded binary", binHandle);
  aclError rc = loaded ? acl_result(rdev_binary_unload(loaded), "aclrtBinaryUnLoad") : ACL_SUCCESS;
  while (b->funcs) {
    acl_func_t *n = b->funcs->next;
    free(b->funcs);
    b->funcs = n;
  }
  free(b->data);
  free(b);
  return rc;
}

/* b's record of the kernel of that name (name not NULL) or entry. */
static acl_func_t *func_of(const acl_bin_t *b, const char *name, uint64_t entry) {
  for (acl_func_t *f = b->funcs; f; f = f->next)
    if (name ? !strcmp(f->name, name) : !f->name[0] && f->entry == entry) return f;
  return NULL;
}

/* One record per kernel and way of naming it: a program that looks a
 * kernel up again (each launch, say) gets the same handle, and the server
 * one function, not one per lookup. */
static aclError get_function(aclrtBinHandle binHandle, const char *name, uint64_t entry, aclrtFuncHandle *funcHandle) {
  if (!funcHandle) return acl_fail(ACL_ERROR_INVALID_PARAM, "funcHandle is NULL");
  if (name && strlen(name) >= sizeof((acl_func_t *)0)->name)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "kernel name of more than 63 bytes");
  acl_lock();
  acl_bin_t *b = bin_find(binHandle);
  acl_func_t *f = b ? func_of(b, name, entry) : NULL, *made = NULL;
  aclError rc = ACL_SUCCESS;
  if (!b) {
    rc = acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a loaded binary", binHandle);
  } else if (!f && !(f = made = calloc(1, sizeof *f))) {
    rc = acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  } else if (made) {
    if (name) strcpy(made->name, name);
    made->entry = entry;
    made->bin = b;
  }
  rdev_session_t *s = acl_session_if_open();
  if (!rc && s) rc = func_resolve(s, f, true);
  if (!rc && made) {
    made->next = b->funcs;
    b->funcs = made;
    made = NULL;
  }
  if (!rc) *funcHandle = f;
  acl_unlock();
  free(made);
  return rc;
}

aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName, aclrtFuncHandle *funcHandle) {
  if (!kernelName || !*kernelName) return acl_fail(ACL_ERROR_INVALID_PARAM, "kernelName is NULL or empty");
  return get_function(binHandle, kernelName, 0, funcHandle);
}

aclError aclrtBinaryGetFunctionByEntry(aclrtBinHandle binHandle, uint64_t funcEntry, aclrtFuncHandle *funcHandle) {
  return get_function(binHandle, NULL, funcEntry, funcHandle);
}

/* Place holders: the data from the lowest dataOffset to the end of the
 * blob goes to device memory of its own, and each addrOffset gets the
 * device address of its data; that memory is freed at once (the server
 * keeps it until the stream passed the launch). */
static aclError place_holders(rdev_session_t *s, rdev_stream_t *st, unsigned char *blob, size_t size,
                              const aclrtPlaceHolderInfo *ph, size_t n, void **dev) {
  size_t lo = size;
  for (size_t i = 0; i < n; i++) {
    if (ph[i].dataOffset >= size || size < 8 || ph[i].addrOffset > size - 8)
      return acl_fail(ACL_ERROR_INVALID_PARAM, "place holder %zu: offsets %u and %u outside %zu bytes of arguments", i,
                      ph[i].addrOffset, ph[i].dataOffset, size);
    if (ph[i].dataOffset < lo) lo = ph[i].dataOffset;
  }
  aclError rc = acl_result(rdev_malloc(s, dev, size - lo, RDEV_MEM_MALLOC_HUGE_FIRST), "place holder memory");
  if (!rc)
    rc = acl_result(rdev_memcpy_async(s, *dev, size - lo, blob + lo, size - lo, RDEV_MEMCPY_HOST_TO_DEVICE, st),
                    "place holder data");
  for (size_t i = 0; !rc && i < n; i++) {
    uint64_t a = (uint64_t)(uintptr_t)*dev + (ph[i].dataOffset - lo);
    memcpy(blob + ph[i].addrOffset, &a, 8);
  }
  return rc;
}

aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum) {
  (void)cfg; /* launch attributes change nothing on the sim */
  if ((!hostArgs && argsSize) || (placeHolderNum && !placeHolderArray))
    return acl_fail(ACL_ERROR_INVALID_PARAM, "hostArgs or placeHolderArray is NULL");
  if (numBlocks == 0) return acl_fail(ACL_ERROR_INVALID_PARAM, "numBlocks is 0");
  rdev_session_t *s;
  rdev_stream_t *st = NULL;
  rdev_function_t *f = NULL;
  acl_lock();
  acl_func_t *af = func_find(funcHandle);
  aclError rc = af ? ACL_SUCCESS : acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a kernel function", funcHandle);
  if (!rc) rc = acl_stream_of(stream, &st);
  if (!rc) rc = acl_session(&s);
  if (!rc) rc = func_resolve(s, af, false);
  if (!rc) f = af->resolved;
  acl_unlock();
  if (rc) return rc;
  if (!placeHolderNum) {
    uint32_t id = acl_task_reserve(st);
    rc = acl_result(rdev_launch_function(st, f, numBlocks, hostArgs, argsSize), "aclrtLaunchKernel");
    if (!rc) acl_task_queued(st, id, funcHandle, hostArgs, argsSize);
    return rc;
  }
  unsigned char *blob = malloc(argsSize);
  if (!blob) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  memcpy(blob, hostArgs, argsSize);
  void *dev = NULL;
  rc = place_holders(s, st, blob, argsSize, placeHolderArray, placeHolderNum, &dev);
  uint32_t id = rc ? 0 : acl_task_reserve(st);
  if (!rc) rc = acl_result(rdev_launch_function(st, f, numBlocks, blob, argsSize), "aclrtLaunchKernelWithHostArgs");
  if (!rc) acl_task_queued(st, id, funcHandle, blob, argsSize);
  if (dev) rdev_free(s, dev);
  free(blob);
  return rc;
}

/* aclrtLaunchKernel / V2: the argument blob is in device memory. It is read
 * once the stream's earlier work (which may write it) has run: the call
 * synchronizes the stream first, then launches from a host copy. */
static aclError launch_device_args(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData,
                                   size_t argsSize, aclrtStream stream, const char *what) {
  if (argsSize > (1u << 20)) return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: %zu bytes of arguments", what, argsSize);
  if (!argsData && argsSize) return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: argsData is NULL", what);
  rdev_session_t *s;
  rdev_stream_t *st = NULL;
  acl_lock();
  aclError rc = acl_stream_of(stream, &st);
  if (!rc) rc = acl_session(&s);
  acl_unlock();
  if (rc) return rc;
  unsigned char *blob = malloc(argsSize ? argsSize : 1);
  if (!blob) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  rc = acl_result(rdev_stream_synchronize(st), what);
  if (!rc && argsSize)
    rc = acl_result(rdev_memcpy(s, blob, argsSize, argsData, argsSize, RDEV_MEMCPY_DEVICE_TO_HOST), what);
  if (!rc) rc = aclrtLaunchKernelWithHostArgs(funcHandle, numBlocks, stream, NULL, blob, argsSize, NULL, 0);
  free(blob);
  return rc;
}

aclError aclrtLaunchKernel(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
                           aclrtStream stream) {
  return launch_device_args(funcHandle, numBlocks, argsData, argsSize, stream, "aclrtLaunchKernel");
}

aclError aclrtLaunchKernelV2(aclrtFuncHandle funcHandle, uint32_t numBlocks, const void *argsData, size_t argsSize,
                             aclrtLaunchKernelCfg *cfg, aclrtStream stream) {
  (void)cfg;
  return launch_device_args(funcHandle, numBlocks, argsData, argsSize, stream, "aclrtLaunchKernelV2");
}

/* ---- argument blocks (aclrtKernelArgs*, aclrtLaunchKernelWithConfig) ---- */

#define ARGS_MAX 4096 /* bytes of arguments, place holders' pointers included */
#define PARAMS_MAX 64

/* One appended parameter: its bytes at offset of the block, or a place
 * holder (8 bytes) whose data the program writes into data. */
typedef struct {
  uint32_t offset, size;
  int holder;
  void *data;
  size_t data_size;
} param_t;

typedef struct args {
  aclrtFuncHandle func;
  unsigned char bytes[ARGS_MAX];
  size_t size;
  int nparams, final;
  param_t params[PARAMS_MAX];
  struct args *next; /* blocks, under the lock */
} args_t;

static args_t *blocks;

/* A block the library made, or NULL. (One thread fills a block at a time.) */
static args_t *args_find(aclrtArgsHandle h) {
  acl_lock();
  args_t *a = blocks;
  while (a && a != h) a = a->next;
  acl_unlock();
  return a;
}

static void free_block(args_t *a) {
  for (int i = 0; i < a->nparams; i++) free(a->params[i].data);
  free(a);
}

/* Lock held: the blocks made for b's functions go. */
static void free_blocks_of(const acl_bin_t *b) {
  for (args_t **pp = &blocks; *pp;) {
    const acl_func_t *f = b->funcs;
    while (f && f != (*pp)->func) f = f->next;
    if (!f) {
      pp = &(*pp)->next;
      continue;
    }
    args_t *a = *pp;
    *pp = a->next;
    free_block(a);
  }
}

aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle) {
  if (!argsHandle) return acl_fail(ACL_ERROR_INVALID_PARAM, "argsHandle is NULL");
  acl_lock();
  int known = func_find(funcHandle) != NULL;
  acl_unlock();
  if (!known) return acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a kernel function", funcHandle);
  args_t *a = calloc(1, sizeof *a);
  if (!a) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  a->func = funcHandle;
  acl_lock();
  a->next = blocks;
  blocks = a;
  acl_unlock();
  *argsHandle = a;
  return ACL_SUCCESS;
}

/* Appends n bytes aligned as AscendC lays out fields: to their size (8 at
 * most), at least 4. */
static aclError append(args_t *a, const void *param, size_t n, int holder, aclrtParamHandle *paramHandle) {
  if (!a || !paramHandle) return acl_fail(ACL_ERROR_INVALID_PARAM, "argsHandle or paramHandle is NULL");
  if (a->final) return acl_fail(ACL_ERROR_INVALID_PARAM, "the argument block is finalized");
  if (n == 0) return acl_fail(ACL_ERROR_INVALID_PARAM, "paramSize is 0");
  size_t align = n >= 8 ? 8 : 4, off = (a->size + align - 1) / align * align;
  if (a->nparams == PARAMS_MAX || n > ARGS_MAX || off > ARGS_MAX - n)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "an argument block holds at most %d parameters and %d bytes", PARAMS_MAX,
                    ARGS_MAX);
  param_t *p = &a->params[a->nparams];
  *p = (param_t){(uint32_t)off, (uint32_t)n, holder, NULL, 0};
  memset(a->bytes + a->size, 0, off - a->size);
  if (param) memcpy(a->bytes + off, param, n);
  a->size = off + n;
  *paramHandle = (aclrtParamHandle)(uintptr_t)(a->nparams + 1);
  a->nparams++;
  return ACL_SUCCESS;
}

aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize,
                               aclrtParamHandle *paramHandle) {
  if (!param) return acl_fail(ACL_ERROR_INVALID_PARAM, "param is NULL");
  return append(args_find(argsHandle), param, paramSize, 0, paramHandle);
}

aclError aclrtKernelArgsAppendPlaceHolder(aclrtArgsHandle argsHandle, aclrtParamHandle *paramHandle) {
  return append(args_find(argsHandle), NULL, 8, 1, paramHandle);
}

static param_t *param_of(args_t *a, aclrtParamHandle h) {
  uintptr_t i = (uintptr_t)h;
  return a && i >= 1 && i <= (uintptr_t)a->nparams ? &a->params[i - 1] : NULL;
}

aclError aclrtKernelArgsGetPlaceHolderBuffer(aclrtArgsHandle argsHandle, aclrtParamHandle paramHandle, size_t dataSize,
                                             void **bufferAddr) {
  args_t *a = args_find(argsHandle);
  param_t *p = param_of(a, paramHandle);
  if (!p || !p->holder || !bufferAddr || dataSize == 0 || dataSize > (1u << 20))
    return acl_fail(ACL_ERROR_INVALID_PARAM, "not a place holder of this block, or a size of %zu bytes", dataSize);
  void *d = realloc(p->data, dataSize);
  if (!d) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  p->data = d;
  p->data_size = dataSize;
  *bufferAddr = d;
  return ACL_SUCCESS;
}

aclError aclrtKernelArgsParaUpdate(aclrtArgsHandle argsHandle, aclrtParamHandle paramHandle, void *param,
                                   size_t paramSize) {
  args_t *a = args_find(argsHandle);
  param_t *p = param_of(a, paramHandle);
  if (!p || p->holder || !param || paramSize != p->size)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "not a parameter of this block, or not its size");
  memcpy(a->bytes + p->offset, param, paramSize);
  return ACL_SUCCESS;
}

aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle) {
  args_t *a = args_find(argsHandle);
  if (!a) return acl_fail(ACL_ERROR_INVALID_PARAM, "argsHandle is NULL");
  a->final = 1;
  return ACL_SUCCESS;
}

/* The block, with each place holder's data after it, launches as
 * aclrtLaunchKernelWithHostArgs with place holders. The block stays the
 * program's until its function's binary is unloaded, as in CANN. */
aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                     aclrtLaunchKernelCfg *cfg, aclrtArgsHandle argsHandle, void *reserve) {
  (void)reserve;
  args_t *a = args_find(argsHandle);
  if (!a || !a->final) return acl_fail(ACL_ERROR_INVALID_PARAM, "the argument block is NULL or not finalized");
  size_t total = a->size;
  int nh = 0;
  for (int i = 0; i < a->nparams; i++)
    if (a->params[i].holder) {
      if (!a->params[i].data) return acl_fail(ACL_ERROR_INVALID_PARAM, "place holder %d has no data", i);
      total = (total + 7) / 8 * 8 + a->params[i].data_size;
      nh++;
    }
  unsigned char *blob = malloc(total ? total : 1);
  aclrtPlaceHolderInfo *ph = calloc((size_t)nh + 1, sizeof *ph);
  if (!blob || !ph) {
    free(blob);
    free(ph);
    return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  }
  memcpy(blob, a->bytes, a->size);
  size_t at = a->size;
  nh = 0;
  for (int i = 0; i < a->nparams; i++)
    if (a->params[i].holder) {
      size_t off = (at + 7) / 8 * 8;
      memset(blob + at, 0, off - at);
      memcpy(blob + off, a->params[i].data, a->params[i].data_size);
      ph[nh++] = (aclrtPlaceHolderInfo){a->params[i].offset, (uint32_t)off};
      at = off + a->params[i].data_size;
    }
  aclError rc =
      aclrtLaunchKernelWithHostArgs(funcHandle, numBlocks, stream, cfg, blob, total, nh ? ph : NULL, (size_t)nh);
  free(blob);
  free(ph);
  return rc;
}
