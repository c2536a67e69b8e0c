/*
 * runtime/acl/acl_loader.c — finding and loading the CANN runtime library
 * at run time (as torch_npu binds CANN): dlopen of the path given, else
 * libascendcl.so or libacl_rt.so under $ASCEND_HOME_PATH/lib64, else the
 * loader's search path; dlsym of every function the backend calls (a
 * missing one is named); refusing rdev's own ACL-compatible client library,
 * which has the same file name but drives no device. The library is
 * loaded and aclInit'ed once per process, shared by every runtime opened,
 * and aclFinalize'd when the last one closes. It stays mapped: CANN's
 * threads and atexit handlers may outlive a dlclose.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

static pthread_mutex_t loader_mu = PTHREAD_MUTEX_INITIALIZER;
static void *loaded;           /* dlopen handle */
static char loaded_path[4096]; /* what it was loaded from */
static acl_api_t api;
static int users; /* runtimes open on it; aclInit'ed while > 0 */

/* Opens the first library that loads: path, or the default places. */
static void *open_lib(const char *path, char *used, size_t cap, char *tried, size_t tcap) {
  static const char *const names[] = {"libascendcl.so", "libacl_rt.so"};
  const char *home = getenv("ASCEND_HOME_PATH");
  char cand[5][4096]; /* path; or each name under $ASCEND_HOME_PATH/lib64, then each bare */
  int n = 0;
  if (path) {
    snprintf(cand[n++], sizeof cand[0], "%s", path);
  } else {
    for (int i = 0; i < 2 && home && *home; i++) snprintf(cand[n++], sizeof cand[0], "%s/lib64/%s", home, names[i]);
    for (int i = 0; i < 2; i++) snprintf(cand[n++], sizeof cand[0], "%s", names[i]);
  }
  tried[0] = '\0';
  for (int i = 0; i < n; i++) {
    void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(used, cap, "%.4000s", cand[i]);
      return h;
    }
    size_t len = strlen(tried);
    snprintf(tried + len, tcap - len, "%s%.1024s (%.1024s)", len ? "; " : "", cand[i], dlerror());
  }
  return NULL;
}

/* Resolves every function into api; the first missing one is named. */
static int resolve(void *h, const char *from) {
#define NEED(f) \
  if (!(*(void **)&api.f = dlsym(h, "acl" #f))) \
    return rt_fail(RDEV_API_NOT_SUPPORT, "%s lacks %s, which the acl backend needs (CANN 8.0 or later has it)", from, \
                   "acl" #f);
  NEED(Init)
  NEED(Finalize)
  NEED(GetRecentErrMsg)
  NEED(rtGetDeviceCount)
  NEED(rtGetSocName)
  NEED(rtCreateContext)
  NEED(rtDestroyContext)
  NEED(rtSetCurrentContext)
  NEED(rtGetMemInfo)
  NEED(rtMalloc)
  NEED(rtFree)
  NEED(rtMallocHost)
  NEED(rtFreeHost)
  NEED(rtMemcpy)
  NEED(rtMemcpyAsync)
  NEED(rtMemset)
  NEED(rtMemsetAsync)
  NEED(rtCreateStream)
  NEED(rtDestroyStream)
  NEED(rtSynchronizeStreamWithTimeout)
  NEED(rtStreamAbort)
  NEED(rtBinaryLoadFromData)
  NEED(rtBinaryUnLoad)
  NEED(rtBinaryGetFunction)
  NEED(rtLaunchKernelWithHostArgs)
#undef NEED
  *(void **)&api.doubleConfigure = dlsym(h, "acldoubleConfigure");
  *(void **)&api.doubleFaultInject = dlsym(h, "acldoubleFaultInject");
  return RDEV_OK;
}

int acl_load(const char *path, size_t devices_hint, size_t mem_hint, const acl_api_t **out) {
  int rc = RDEV_OK;
  pthread_mutex_lock(&loader_mu);
  if (!loaded) {
    char used[4096], tried[8192];
    void *h = open_lib(path, used, sizeof used, tried, sizeof tried);
    if (!h) {
      rc = rt_fail(RDEV_API_NOT_SUPPORT, "cannot load the CANN runtime: tried %s", tried);
    } else if (dlsym(h, ACL_RDEV_CLIENT_MARKER)) {
      rc = rt_fail(RDEV_API_NOT_SUPPORT,
                   "%s is rdev's own ACL-compatible client library, which talks to an rdevd and drives no device; "
                   "give the CANN runtime's (--acl-lib $ASCEND_HOME_PATH/lib64/libascendcl.so)",
                   used);
      dlclose(h);
    } else if ((rc = resolve(h, used)) != RDEV_OK) {
      dlclose(h);
    } else {
      loaded = h;
      snprintf(loaded_path, sizeof loaded_path, "%s", used);
    }
  } else if (path && strcmp(path, loaded_path) != 0) {
    rc = rt_fail(RDEV_API_NOT_SUPPORT, "the CANN runtime is already loaded from %s, not %s", loaded_path, path);
  }
  if (rc == RDEV_OK && users == 0) {
    if (api.doubleConfigure) api.doubleConfigure((int32_t)devices_hint, mem_hint);
    int e = api.Init(NULL);
    if (e != 0 && e != 100002) /* ACL_ERROR_REPEAT_INITIALIZE: someone else did */
      rc = rt_fail(e, "aclInit failed (%d): %s", e, api.GetRecentErrMsg ? api.GetRecentErrMsg() : "");
  }
  if (rc == RDEV_OK) {
    users++;
    *out = &api;
  }
  pthread_mutex_unlock(&loader_mu);
  return rc;
}

void acl_unload(void) {
  pthread_mutex_lock(&loader_mu);
  if (users > 0 && --users == 0) api.Finalize();
  pthread_mutex_unlock(&loader_mu);
}

const char *acl_loaded_path(void) {
  pthread_mutex_lock(&loader_mu);
  const char *p = loaded_path;
  pthread_mutex_unlock(&loader_mu);
  return p;
}
