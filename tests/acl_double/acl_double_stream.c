/*
 * tests/acl_double/acl_double_stream.c — the double's streams (the sim's
 * stream workers), kernel binaries in the rdev sim binary format
 * (docs/sim-binary.md) and launches from host argument blobs (see
 * acl_double.c). A stream or binary is pinned for the length of a call
 * that uses it; kernel print output goes to the process's stdout.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "acl_double.h"

/* ---- streams ------------------------------------------------------------- */

/* A call of op on a stream of the current device, pinned, outside the lock. */
static aclError stream_call(aclrtStream stream, const char *fn, int (*op)(rdev_rt_stream_t *, int32_t), int32_t arg) {
  dbl_call_t c;
  dbl_obj_t *o = NULL;
  aclError rc = dbl_enter(&c, 1, fn);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  rc = dbl_stream_pin(&c, stream, &o, fn);
  pthread_mutex_unlock(&dbl.mu);
  if (!rc) rc = dbl_rt_result(op(o->u.s, arg), fn);
  dbl_unpin(o);
  return dbl_leave(rc);
}

aclError aclrtCreateStream(aclrtStream *stream) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  rdev_rt_stream_t *s = NULL;
  if (!stream) rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: stream is NULL", __func__);
  if (!rc) rc = dbl_rt_result(rdev_rt_stream_create(c.rt, c.dev, &s), __func__);
  if (!rc) {
    pthread_mutex_lock(&dbl.mu);
    dbl_obj_t *o = dbl_add(OBJ_STREAM, c.dev);
    if (o) {
      o->u.s = s;
      *stream = dbl_handle(o);
    }
    pthread_mutex_unlock(&dbl.mu);
    if (!o) {
      rdev_rt_stream_destroy_force(s);
      rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__);
    }
  }
  return dbl_leave(rc);
}

aclError aclrtDestroyStream(aclrtStream stream) {
  dbl_call_t c;
  dbl_obj_t *o = NULL;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  rc = dbl_stream_pin(&c, stream, &o, __func__);
  if (!rc) {
    o->users--;
    dbl_retire(o); /* waits for the calls on it in other threads */
  }
  pthread_mutex_unlock(&dbl.mu);
  if (!rc) {
    rc = dbl_rt_result(rdev_rt_stream_destroy(o->u.s), __func__);
    free(o);
  }
  return dbl_leave(rc);
}

static int sync_op(rdev_rt_stream_t *s, int32_t timeout) { return rdev_rt_stream_synchronize_timeout(s, timeout); }
static int abort_op(rdev_rt_stream_t *s, int32_t unused) { return rdev_rt_stream_discard(s); }

aclError aclrtSynchronizeStream(aclrtStream stream) { return stream_call(stream, __func__, sync_op, -1); }

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  return stream_call(stream, __func__, sync_op, timeout);
}

aclError aclrtStreamAbort(aclrtStream stream) { return stream_call(stream, __func__, abort_op, 0); }

/* ---- kernels ------------------------------------------------------------- */

aclError aclrtBinaryLoadFromData(const void *data, size_t length, const aclrtBinaryLoadOptions *options,
                                 aclrtBinHandle *binHandle) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  rdev_rt_binary_t *b = NULL;
  if (!data || !length || !binHandle || (options && options->numOpt && !options->options))
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: NULL data or binHandle, length 0, or options without their array",
                  __func__);
  if (!rc) rc = dbl_rt_result(rdev_rt_binary_load(c.rt, data, length, &b), __func__);
  if (!rc) {
    pthread_mutex_lock(&dbl.mu);
    dbl_obj_t *o = dbl_add(OBJ_BIN, c.dev);
    if (o) {
      o->u.bin = b;
      *binHandle = dbl_handle(o);
    }
    pthread_mutex_unlock(&dbl.mu);
    if (!o) {
      rdev_rt_binary_unload(b);
      rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__);
    }
  }
  return dbl_leave(rc);
}

aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  dbl_obj_t *o = dbl_find(OBJ_BIN, binHandle);
  if (o) {
    dbl_retire(o);                     /* waits for the calls that use it */
    for (size_t i = 0; i < dbl.nobjs;) /* its functions go with it */
      if (dbl.objs[i]->kind == OBJ_FUNC && dbl.objs[i]->u.fn.bin == o->id) {
        free(dbl.objs[i]);
        dbl.objs[i] = dbl.objs[--dbl.nobjs];
      } else {
        i++;
      }
  } else {
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a loaded binary", __func__, binHandle);
  }
  pthread_mutex_unlock(&dbl.mu);
  if (o) {
    rdev_rt_binary_unload(o->u.bin);
    free(o);
  }
  return dbl_leave(rc);
}

/* aclrtBinaryGetFunction (by name) or ByEntry: one handle per function. */
static aclError get_function(aclrtBinHandle binHandle, int by_name, const char *name, uint64_t entry,
                             aclrtFuncHandle *funcHandle, const char *fn) {
  dbl_call_t c;
  aclError rc = dbl_enter(&c, 1, fn);
  if (rc) return rc;
  pthread_mutex_lock(&dbl.mu);
  dbl_obj_t *b = dbl_find(OBJ_BIN, binHandle);
  if (!b)
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a loaded binary", fn, binHandle);
  else if (!funcHandle || (by_name && !name))
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %s is NULL", fn, funcHandle ? "kernelName" : "funcHandle");
  if (rc)
    b = NULL;
  else
    b->users++;
  pthread_mutex_unlock(&dbl.mu);
  const rdev_rt_function_t *f = NULL;
  if (!rc)
    rc = dbl_rt_result(
        by_name ? rdev_rt_binary_function(b->u.bin, name, &f) : rdev_rt_binary_function_by_entry(b->u.bin, entry, &f),
        fn);
  if (!rc) {
    pthread_mutex_lock(&dbl.mu);
    dbl_obj_t *o = NULL;
    for (size_t i = 0; i < dbl.nobjs && !o; i++)
      if (dbl.objs[i]->kind == OBJ_FUNC && dbl.objs[i]->u.fn.f == f) o = dbl.objs[i];
    if (!o && (o = dbl_add(OBJ_FUNC, b->dev))) {
      o->u.fn.bin = b->id;
      o->u.fn.f = f;
    }
    if (o)
      *funcHandle = dbl_handle(o);
    else
      rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", fn);
    pthread_mutex_unlock(&dbl.mu);
  }
  dbl_unpin(b);
  return dbl_leave(rc);
}

aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName, aclrtFuncHandle *funcHandle) {
  return get_function(binHandle, 1, kernelName, 0, funcHandle, __func__);
}

aclError aclrtBinaryGetFunctionByEntry(aclrtBinHandle binHandle, uint64_t funcEntry, aclrtFuncHandle *funcHandle) {
  return get_function(binHandle, 0, NULL, funcEntry, funcHandle, __func__);
}

/* Kernel print output goes where AscendC printf goes on CANN: the host
 * process's stdout. Runs on a stream worker. */
static void print_out(void *user, const char *text, size_t len) {
  if (!len) return;
  flockfile(stdout);
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  funlockfile(stdout);
}

aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum) {
  dbl_call_t c;
  dbl_obj_t *s = NULL, *b = NULL;
  aclError rc = dbl_enter(&c, 1, __func__);
  if (rc) return rc;
  if (placeHolderNum)
    rc = dbl_fail(ACL_ERROR_FEATURE_UNSUPPORTED, "%s: place holders are not supported by the double", __func__);
  else if (cfg && cfg->numAttrs && !cfg->attrs)
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: cfg has %zu attributes and no array", __func__, cfg->numAttrs);
  pthread_mutex_lock(&dbl.mu);
  dbl_obj_t *f = rc ? NULL : dbl_find(OBJ_FUNC, funcHandle);
  if (!rc && !f)
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a function of a loaded binary", __func__, funcHandle);
  if (!rc && f->dev != c.dev)
    rc = dbl_fail(ACL_ERROR_RT_PARAM_INVALID,
                  "%s: the function's binary is on device %d, the current context on device %d", __func__, f->dev,
                  c.dev);
  if (!rc) rc = dbl_stream_pin(&c, stream, &s, __func__);
  if (!rc && !(b = dbl_find(OBJ_BIN, (void *)(uintptr_t)f->u.fn.bin))) /* being unloaded */
    rc = dbl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a function of a loaded binary", __func__, funcHandle);
  if (!rc) b->users++;
  const rdev_rt_function_t *fn = rc ? NULL : f->u.fn.f;
  pthread_mutex_unlock(&dbl.mu);
  if (!rc)
    rc = dbl_rt_result(rdev_rt_launch_function(s->u.s, fn, numBlocks, hostArgs, argsSize, print_out, NULL), __func__);
  dbl_unpin(s);
  dbl_unpin(b);
  return dbl_leave(rc);
}
