/*
 * client/acl/lib/acl_kernel.c — kernels from binaries: aclrtBinaryLoad*,
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

/* Lock held: f resolved on the server, its binary loaded first. */
static aclError func_resolve(rdev_session_t *s, acl_func_t *f) {
  if (f->resolved) return ACL_SUCCESS;
  aclError rc = bin_load(s, f->bin);
  if (rc) return rc;
  if (f->name[0])
    return acl_result(rdev_binary_function(f->bin->loaded, f->name, &f->resolved), "aclrtBinaryGetFunction");
  return acl_result(rdev_binary_function_by_entry(f->bin->loaded, f->entry, &f->resolved),
                    "aclrtBinaryGetFunctionByEntry");
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

aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
  acl_lock();
  acl_bin_t **pp = &bins;
  while (*pp && *pp != binHandle) pp = &(*pp)->next;
  acl_bin_t *b = *pp;
  if (b) *pp = b->next;
  acl_unlock();
  if (!b) return acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a loaded binary", binHandle);
  aclError rc = b->loaded ? acl_result(rdev_binary_unload(b->loaded), "aclrtBinaryUnLoad") : ACL_SUCCESS;
  while (b->funcs) {
    acl_func_t *n = b->funcs->next;
    free(b->funcs);
    b->funcs = n;
  }
  free(b->data);
  free(b);
  return rc;
}

static aclError get_function(aclrtBinHandle binHandle, const char *name, uint64_t entry, aclrtFuncHandle *funcHandle) {
  if (!funcHandle) return acl_fail(ACL_ERROR_INVALID_PARAM, "funcHandle is NULL");
  if (name && strlen(name) >= sizeof((acl_func_t *)0)->name)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "kernel name of more than 63 bytes");
  acl_func_t *f = calloc(1, sizeof *f);
  if (!f) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  if (name) strcpy(f->name, name);
  f->entry = entry;
  acl_lock();
  acl_bin_t *b = bin_find(binHandle);
  aclError rc = b ? ACL_SUCCESS : acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a loaded binary", binHandle);
  rdev_session_t *s = acl_session_if_open();
  if (b) {
    f->bin = b;
    if (s) rc = func_resolve(s, f);
  }
  if (!rc) {
    f->next = b->funcs;
    b->funcs = f;
    *funcHandle = f;
    f = NULL;
  }
  acl_unlock();
  free(f);
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
    if (ph[i].dataOffset >= size || ph[i].addrOffset > size - 8)
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
  if (!rc) rc = func_resolve(s, af);
  if (!rc) f = af->resolved;
  acl_unlock();
  if (rc) return rc;
  if (!placeHolderNum)
    return acl_result(rdev_launch_function(st, f, numBlocks, hostArgs, argsSize), "aclrtLaunchKernel");
  unsigned char *blob = malloc(argsSize);
  if (!blob) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  memcpy(blob, hostArgs, argsSize);
  void *dev = NULL;
  rc = place_holders(s, st, blob, argsSize, placeHolderArray, placeHolderNum, &dev);
  if (!rc) rc = acl_result(rdev_launch_function(st, f, numBlocks, blob, argsSize), "aclrtLaunchKernelWithHostArgs");
  if (dev) rdev_free(s, dev);
  free(blob);
  return rc;
}
