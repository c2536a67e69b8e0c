/*
 * tests/acl/test_acl_context.c — the context-query flow of the CANN
 * runtime's samples (example/1_basic_features/context/0_context_query),
 * written only against the acl headers and linked against libascendcl.so:
 * a context created, made current and read back, its default stream
 * (aclrtCtxGetCurrentDefaultStream, used for work), the thread's resource
 * limits (aclrtGetResInCurrentThread), and the context destroyed; then
 * that the current context and device are each thread's own: a new thread
 * has none, takes a context made on another thread, and binds to another
 * device without moving the first thread. Compiled as C and as C++
 * (test_acl_context.cpp); run by run_acl.py against a real rdevd with two
 * devices.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  aclrtContext ctx = NULL;
  CHECK_RET(aclrtCreateContext(&ctx, 0), ACL_ERROR_UNINITIALIZE);
  return failures ? 1 : 0;
}

/* What a second thread saw. */
typedef struct {
  aclrtContext give;             /* the context it is to make current */
  aclError get_ctx, get_dev;     /* before it has one */
  aclError set_ctx, stream, use; /* with it */
  aclrtContext got;
  int32_t dev;
  aclrtStream def;
  void *mem; /* device memory of the context's device, set through its default stream */
  unsigned char seen;
} thread_view_t;

static void *other_thread(void *arg) {
  thread_view_t *v = (thread_view_t *)arg;
  aclrtContext none = NULL;
  int32_t dev = -1;
  v->get_ctx = aclrtGetCurrentContext(&none);
  v->get_dev = aclrtGetDevice(&dev);
  v->set_ctx = aclrtSetCurrentContext(v->give);
  if (aclrtGetCurrentContext(&v->got) != ACL_SUCCESS) v->got = NULL;
  if (aclrtGetDevice(&v->dev) != ACL_SUCCESS) v->dev = -1;
  v->stream = aclrtCtxGetCurrentDefaultStream(&v->def);
  v->use = aclrtMemsetAsync(v->mem, 64, 0x6b, 64, v->def);
  if (!v->use) v->use = aclrtSynchronizeStream(v->def);
  if (!v->use) v->use = aclrtMemcpy(&v->seen, 1, v->mem, 1, ACL_MEMCPY_DEVICE_TO_HOST);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const int32_t device = 0;

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  aclrtContext none = NULL;
  CHECK(aclrtGetCurrentContext(&none) != ACL_SUCCESS); /* no device, no context yet */
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS);
  aclrtContext primary = NULL;
  CHECK_RET(aclrtGetCurrentContext(&primary), ACL_SUCCESS); /* the device's default context */
  CHECK(primary != NULL);

  /* the sample: create, set, get, the default stream, the thread's resources */
  aclrtContext ctx = NULL, cur = NULL;
  CHECK_RET(aclrtCreateContext(&ctx, device), ACL_SUCCESS);
  CHECK(ctx != NULL && ctx != primary);
  CHECK_RET(aclrtGetCurrentContext(&cur), ACL_SUCCESS); /* a new context is current at once */
  CHECK(cur == ctx);
  CHECK_RET(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
  CHECK_RET(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  CHECK(cur == ctx);
  aclrtStream def = NULL;
  CHECK_RET(aclrtCtxGetCurrentDefaultStream(&def), ACL_SUCCESS);
  CHECK(def != NULL);
  CHECK_RET(aclrtCtxGetCurrentDefaultStream(NULL), ACL_ERROR_INVALID_PARAM);
  uint32_t cube = 0, vector = 0;
  CHECK_RET(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &cube), ACL_SUCCESS);
  CHECK_RET(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &vector), ACL_SUCCESS);
  CHECK(cube > 0 && vector > 0); /* no limit set: the device's own */
  printf("current thread: cube core limit %u, vector core limit %u\n", cube, vector);
  CHECK_RET(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, NULL), ACL_ERROR_INVALID_PARAM);

  /* the default stream takes work like any stream, and so does NULL */
  void *mem = NULL;
  unsigned char back[64];
  CHECK_RET(aclrtMalloc(&mem, sizeof back, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(mem, sizeof back, 0x3c, sizeof back, def), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(def), ACL_SUCCESS);
  memset(back, 0, sizeof back);
  CHECK_RET(aclrtMemcpy(back, sizeof back, mem, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(back[0] == 0x3c && back[sizeof back - 1] == 0x3c);
  CHECK_RET(aclrtMemsetAsync(mem, sizeof back, 0x3d, sizeof back, NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(back, sizeof back, mem, sizeof back, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(back[0] == 0x3d);

  /* another thread: no context of its own; it takes this one and works in it */
  thread_view_t v;
  memset(&v, 0, sizeof v);
  v.give = ctx;
  v.mem = mem;
  pthread_t th;
  CHECK(pthread_create(&th, NULL, other_thread, &v) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(v.get_ctx != ACL_SUCCESS && v.get_dev != ACL_SUCCESS);
  CHECK(v.set_ctx == ACL_SUCCESS && v.got == ctx && v.dev == device);
  CHECK(v.stream == ACL_SUCCESS && v.def != NULL);
  CHECK(v.use == ACL_SUCCESS && v.seen == 0x6b);

  /* a context on the second device, current on a second thread only */
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count >= 2);
  aclrtContext ctx1 = NULL;
  CHECK_RET(aclrtCreateContext(&ctx1, 1), ACL_SUCCESS); /* binds this thread to device 1 ... */
  int32_t dev = -1;
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == 1);
  CHECK_RET(aclrtSetCurrentContext(ctx), ACL_SUCCESS); /* ... until ctx is current again */
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == device);
  void *mem1 = NULL;
  CHECK_RET(aclrtSetCurrentContext(ctx1), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&mem1, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtSetCurrentContext(ctx), ACL_SUCCESS);
  memset(&v, 0, sizeof v);
  v.give = ctx1;
  v.mem = mem1;
  CHECK(pthread_create(&th, NULL, other_thread, &v) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(v.set_ctx == ACL_SUCCESS && v.got == ctx1 && v.dev == 1);
  CHECK(v.stream == ACL_SUCCESS && v.def != NULL);
  CHECK(v.use == ACL_SUCCESS && v.seen == 0x6b);
  CHECK_RET(aclrtGetCurrentContext(&cur), ACL_SUCCESS); /* this thread stayed where it was */
  CHECK(cur == ctx);
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == device);

  /* bad contexts and devices */
  CHECK_RET(aclrtCreateContext(NULL, device), ACL_ERROR_INVALID_PARAM);
  aclrtContext bad = NULL;
  CHECK_RET(aclrtCreateContext(&bad, (int32_t)count), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtGetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);

  /* the end: the sample destroys its context, then resets the device */
  CHECK_RET(aclrtFree(mem1), ACL_SUCCESS);
  CHECK_RET(aclrtFree(mem), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(ctx1), ACL_SUCCESS);
  CHECK_RET(aclrtSetCurrentContext(primary), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(ctx), ACL_SUCCESS);
  CHECK_RET(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  CHECK(cur == primary);
  CHECK_RET(aclrtResetDeviceForce(device), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
