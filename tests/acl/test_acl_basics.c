/*
 * tests/acl/test_acl_basics.c — a program written only against the acl
 * headers and linked against libascendcl.so: the calls a host answers by
 * itself (fp16 conversion, element sizes, versions, the thread's last
 * error and its detail, the SoC name, thread resources, peer access) and the variants of the device calls
 * (aclrtMallocAlign32, events with flags, aclrtQueryEvent,
 * aclrtResetDeviceForce, aclrtResetEvent), notifies, device status,
 * attributes and resource limits, stream state callbacks, contexts, streams with a configuration and the
 * device synchronize (also against streams destroyed on another thread),
 * and a child forked before aclInit. Compiled as C and as C++ (test_acl_basics.cpp);
 * run by run_acl.py against a real rdevd with two devices.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "acl_check.h"

/* aclrtGetVersion and aclrtQueryEvent are deprecated in CANN, and still offered */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* Device synchronizes on one thread while another makes and destroys
 * streams: a destroy waits for a synchronize that uses its stream (ASan
 * sees a use after free otherwise). */
static int syncing = 1; /* __atomic builtins: the file is C and C++ */
static void *sync_loop(void *arg) {
  (void)arg;
  int bad = aclrtSetDevice(1) != ACL_SUCCESS;
  while (__atomic_load_n(&syncing, __ATOMIC_ACQUIRE)) bad += aclrtSynchronizeDevice() != ACL_SUCCESS;
  return (void *)(intptr_t)bad;
}

/* Counts stream creations and destructions (aclrtRegStreamStateCallback). */
static void on_stream_state(aclrtStream stm, aclrtStreamState state, void *args) {
  (void)stm;
  int *counts = (int *)args;
  counts[state == ACL_RT_STREAM_STATE_CREATE_POST ? 0 : 1]++;
}

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) != ACL_SUCCESS);
  CHECK(aclrtGetSocName() == NULL);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();

  /* fp16: known values, and every finite half survives half -> float -> half */
  CHECK(aclFloatToFloat16(1.0f) == 0x3c00 && aclFloatToFloat16(-2.5f) == 0xc100);
  CHECK(aclFloatToFloat16(65504.0f) == 0x7bff && aclFloatToFloat16(65520.0f) == 0x7c00);
  CHECK(aclFloatToFloat16(5.9604645e-8f) == 0x0001 && aclFloatToFloat16(1e-8f) == 0x0000);
  CHECK(aclFloatToFloat16(1.0f + 1.0f / 2048) == 0x3c00); /* a tie: to even */
  CHECK(aclFloatToFloat16(1.0f + 3.0f / 2048) == 0x3c02);
  CHECK(aclFloatToFloat16(INFINITY) == 0x7c00 && aclFloatToFloat16(-INFINITY) == 0xfc00);
  CHECK((aclFloatToFloat16(NAN) & 0x7c00) == 0x7c00 && (aclFloatToFloat16(NAN) & 0x3ff) != 0);
  CHECK(isnan(aclFloat16ToFloat(0x7e00)) && aclFloat16ToFloat(0x3555) > 0.333f && aclFloat16ToFloat(0x3555) < 0.334f);
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaNs */
    if (aclFloatToFloat16(aclFloat16ToFloat((aclFloat16)h)) != h) bad++;
  }
  CHECK(bad == 0);

  /* element sizes */
  CHECK(aclDataTypeSize(ACL_FLOAT) == 4 && aclDataTypeSize(ACL_FLOAT16) == 2 && aclDataTypeSize(ACL_BF16) == 2);
  CHECK(aclDataTypeSize(ACL_INT8) == 1 && aclDataTypeSize(ACL_INT64) == 8 && aclDataTypeSize(ACL_COMPLEX128) == 16);
  CHECK(aclDataTypeSize(ACL_DT_UNDEFINED) == 0 && aclDataTypeSize(ACL_INT4) == 0);

  /* version */
  int32_t major = 0, minor = 0, patch = -1;
  CHECK_RET(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
  CHECK(major == 1 && minor == 17 && patch == 0);

  /* a child forked before aclInit opens a session of its own */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int ok = aclInit(NULL) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS;
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);

  /* the thread's last error: peeked, then taken */
  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK(aclrtGetSocName() == NULL); /* no device yet */
  CHECK_RET(aclrtSetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);

  /* device facts */
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  const char *soc = aclrtGetSocName();
  CHECK(soc && *soc);
  uint32_t n = 0;
  CHECK_RET(aclrtGetDeviceCount(&n), ACL_SUCCESS);
  CHECK(n >= 2);
  int32_t can = -1;
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, 1), ACL_SUCCESS);
  CHECK(can == 1);
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 1, 1), ACL_SUCCESS);
  CHECK(can == 0);
  CHECK_RET(aclrtDeviceCanAccessPeer(&can, 0, (int32_t)n), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtDeviceEnablePeerAccess(1, 0), ACL_SUCCESS);
  CHECK_RET(aclrtDeviceEnablePeerAccess(1, 7), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDeviceDisablePeerAccess(1), ACL_SUCCESS);

  /* a copy between the two devices, as peers do */
  void *d0 = NULL, *d1 = NULL;
  char host[256], back[256];
  for (int i = 0; i < 256; i++) host[i] = (char)i;
  CHECK_RET(aclrtMallocAlign32(&d0, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK(((uintptr_t)d0 & 31) == 0);
  CHECK_RET(aclrtSetDevice(1), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&d1, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d0, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(d1, sizeof host, d0, sizeof host, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  memset(back, 0, sizeof back);
  CHECK_RET(aclrtMemcpy(back, sizeof back, d1, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(memcmp(back, host, sizeof host) == 0);

  /* events with flags, and the deprecated query */
  aclrtEvent ev = NULL, ipc = NULL;
  CHECK_RET(aclrtCreateEventWithFlag(&ev, ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC), ACL_SUCCESS);
  CHECK_RET(aclrtCreateEventWithFlag(&ipc, ACL_EVENT_IPC), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtRecordEvent(ev, NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeEvent(ev), ACL_SUCCESS);
  aclrtEventStatus st = ACL_EVENT_STATUS_NOT_READY;
  CHECK_RET(aclrtQueryEvent(ev, &st), ACL_SUCCESS);
  CHECK(st == ACL_EVENT_STATUS_COMPLETE);
  CHECK_RET(aclrtDestroyEvent(ev), ACL_SUCCESS);

  /* contexts: a context binds the thread to its device */
  aclrtContext ctx0 = NULL, ctx1 = NULL, cur = NULL;
  int32_t dev = -1;
  CHECK_RET(aclrtGetCurrentContext(&cur), ACL_SUCCESS); /* device 1's default context */
  CHECK_RET(aclrtCreateContext(&ctx0, 0), ACL_SUCCESS);
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == 0);
  CHECK_RET(aclrtCreateContext(&ctx1, 1), ACL_SUCCESS);
  CHECK_RET(aclrtSetCurrentContext(ctx0), ACL_SUCCESS);
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == 0);
  aclrtContext got = NULL;
  CHECK_RET(aclrtGetCurrentContext(&got), ACL_SUCCESS);
  CHECK(got == ctx0);
  CHECK_RET(aclrtSetCurrentContext(cur), ACL_SUCCESS); /* back to device 1's default */
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == 1);
  CHECK_RET(aclrtSetCurrentContext((aclrtContext)host), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDestroyContext(ctx1), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(ctx1), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtDestroyContext(ctx0), ACL_SUCCESS);

  /* streams with a configuration, their ids, the default stream, and a
   * device synchronize that waits for every stream of the device */
  aclrtStream s1 = NULL, s2 = NULL, def = NULL;
  CHECK_RET(aclrtCreateStreamWithConfig(&s1, 3, ACL_STREAM_FAST_LAUNCH), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStreamWithConfig(&s2, 0, 0x80), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtCreateStream(&s2), ACL_SUCCESS);
  uint32_t prio = 0, flags = 0;
  int32_t id1 = -1, id2 = -1, id0 = -1;
  CHECK_RET(aclrtStreamGetPriority(s1, &prio), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetFlags(s1, &flags), ACL_SUCCESS);
  CHECK(prio == 3 && flags == ACL_STREAM_FAST_LAUNCH);
  CHECK_RET(aclrtStreamGetId(s1, &id1), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetId(s2, &id2), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetId(NULL, &id0), ACL_SUCCESS);
  CHECK(id1 > 0 && id2 > 0 && id1 != id2 && id0 == 0);
  CHECK_RET(aclrtCtxGetCurrentDefaultStream(&def), ACL_SUCCESS);
  CHECK(def != NULL && def != s1 && def != s2);
  CHECK_RET(aclrtStreamGetId(def, &id0), ACL_SUCCESS); /* the default stream's handle works as NULL does */
  CHECK(id0 == 0);
  static char big[1 << 20];
  memset(big, 0x33, sizeof big);
  void *pin = NULL;
  CHECK_RET(aclrtMallocHost(&pin, sizeof big), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(d1, sizeof host, 0x44, sizeof host, s1), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pin, sizeof host, d1, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST, s1), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeDevice(), ACL_SUCCESS);
  CHECK(((unsigned char *)pin)[0] == 0x44 && ((unsigned char *)pin)[sizeof host - 1] == 0x44);
  CHECK_RET(aclrtSynchronizeDeviceWithTimeout(1000), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pin), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(s1), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(s1), ACL_ERROR_INVALID_RESOURCE_HANDLE); /* gone */
  CHECK_RET(aclrtDestroyStream(s2), ACL_SUCCESS);

  /* versions of the packages rdev stands in for, the resources a thread
   * sees, a device's last error in detail, and an event reset */
  {
    char ver[ACL_PKG_VERSION_MAX_SIZE] = {0};
    char pkg[] = "runtime", none[] = "";
    int32_t num = 0, vmaj = 0, vmin = 0, vpat = 0;
    CHECK_RET(aclsysGetVersionStr(pkg, ver), ACL_SUCCESS);
    CHECK_RET(aclsysGetVersionNum(pkg, &num), ACL_SUCCESS);
    CHECK_RET(aclrtGetVersion(&vmaj, &vmin, &vpat), ACL_SUCCESS);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", (int)vmaj, (int)vmin, (int)vpat);
    CHECK(strcmp(ver, want) == 0);
    CHECK(num == vmaj * 10000000 + vmin * 100000 + vpat * 1000);
    CHECK_RET(aclsysGetVersionStr(none, ver), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclsysGetVersionNum(pkg, NULL), ACL_ERROR_INVALID_PARAM);
    uint32_t cores = 0;
    CHECK_RET(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &cores), ACL_SUCCESS);
    CHECK(cores >= 1);
    CHECK_RET(aclrtGetResInCurrentThread((aclrtDevResLimitType)7, &cores), ACL_ERROR_INVALID_PARAM);
    aclrtErrorInfo info;
    (void)aclrtGetLastError(ACL_RT_THREAD_LEVEL); /* clear */
    CHECK_RET(aclrtGetErrorVerbose(0, &info), ACL_SUCCESS);
    CHECK(info.errorType == ACL_RT_NO_ERROR && info.tryRepair == 0);
    CHECK_RET(aclrtSetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK_RET(aclrtGetErrorVerbose(0, &info), ACL_SUCCESS);
    CHECK(info.errorType == ACL_RT_ERROR_OTHERS);
    CHECK_RET(aclrtGetErrorVerbose(99, &info), ACL_ERROR_RT_INVALID_DEVICEID);
    aclrtEvent rev = NULL;
    aclrtStream rs = NULL;
    CHECK_RET(aclrtCreateEventWithFlag(&rev, ACL_EVENT_SYNC), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&rs), ACL_SUCCESS);
    CHECK_RET(aclrtRecordEvent(rev, rs), ACL_SUCCESS);
    CHECK_RET(aclrtStreamWaitEvent(NULL, rev), ACL_SUCCESS);
    CHECK_RET(aclrtResetEvent(rev, NULL), ACL_SUCCESS);
    CHECK_RET(aclrtRecordEvent(rev, rs), ACL_SUCCESS); /* used again */
    CHECK_RET(aclrtSynchronizeEvent(rev), ACL_SUCCESS);
    CHECK_RET(aclrtResetEvent(NULL, rs), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtResetEvent(rev, (aclrtStream)&info), ACL_ERROR_INVALID_RESOURCE_HANDLE);
    CHECK_RET(aclrtDestroyEvent(rev), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(rs), ACL_SUCCESS);
  }

  /* notifies between two streams; device status, attributes, priorities,
   * resource limits, memory use; stream state callbacks */
  {
    aclrtStream sa = NULL, sb = NULL;
    aclrtNotify nt = NULL;
    CHECK_RET(aclrtCreateStream(&sa), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&sb), ACL_SUCCESS);
    CHECK_RET(aclrtCreateNotify(&nt, ACL_NOTIFY_DEFAULT), ACL_SUCCESS);
    CHECK_RET(aclrtWaitAndResetNotify(nt, sb, 0), ACL_SUCCESS);
    CHECK_RET(aclrtMemsetAsync(d1, sizeof host, 0x5e, sizeof host, sb), ACL_SUCCESS);
    usleep(50000);
    aclrtStreamStatus ss = ACL_STREAM_STATUS_COMPLETE;
    CHECK_RET(aclrtStreamQuery(sb, &ss), ACL_SUCCESS);
    CHECK(ss == ACL_STREAM_STATUS_NOT_READY); /* held until the record */
    CHECK_RET(aclrtRecordNotify(nt, sa), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(sb), ACL_SUCCESS);
    unsigned char c0 = 0;
    CHECK_RET(aclrtMemcpy(&c0, 1, d1, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(c0 == 0x5e);
    CHECK_RET(aclrtWaitAndResetNotify(nt, sb, 1), ACL_SUCCESS); /* reset: waits again, gives up after 1 s */
    CHECK_RET(aclrtSynchronizeStream(sb), ACL_ERROR_RT_WAIT_TIMEOUT);
    CHECK_RET(aclrtRecordNotify((aclrtNotify)&c0, sa), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtDestroyNotify(nt), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyNotify(nt), ACL_ERROR_INVALID_PARAM);
    aclrtDeviceStatus dst = ACL_RT_DEVICE_STATUS_ABNORMAL;
    CHECK_RET(aclrtQueryDeviceStatus(1, &dst), ACL_SUCCESS);
    CHECK(dst == ACL_RT_DEVICE_STATUS_NORMAL);
    CHECK_RET(aclrtQueryDeviceStatus(9, &dst), ACL_ERROR_RT_INVALID_DEVICEID);
    int64_t mem = 0, cores = 0;
    CHECK_RET(aclrtGetDeviceInfo(1, ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, &mem), ACL_SUCCESS);
    CHECK_RET(aclrtGetDeviceInfo(1, ACL_DEV_ATTR_AICORE_CORE_NUM, &cores), ACL_SUCCESS);
    size_t fr = 0, tot = 0;
    CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &fr, &tot), ACL_SUCCESS);
    CHECK(mem == (int64_t)tot && cores >= 1);
    CHECK_RET(aclrtGetDeviceInfo(1, ACL_DEV_ATTR_L2_CACHE_SIZE, &mem), ACL_ERROR_API_NOT_SUPPORT);
    aclrtUtilizationInfo ui;
    memset(&ui, 0, sizeof ui);
    CHECK_RET(aclrtGetDeviceUtilizationRate(1, &ui), ACL_SUCCESS);
    CHECK(ui.memoryUtilization >= 0 && ui.memoryUtilization <= 100);
    int32_t least = -1, greatest = -1;
    CHECK_RET(aclrtDeviceGetStreamPriorityRange(&least, &greatest), ACL_SUCCESS);
    CHECK(least > greatest);
    uint32_t lim = 0;
    CHECK_RET(aclrtGetDeviceResLimit(1, ACL_RT_DEV_RES_CUBE_CORE, &lim), ACL_SUCCESS);
    CHECK(lim >= 1);
    CHECK_RET(aclrtSetDeviceResLimit(1, ACL_RT_DEV_RES_CUBE_CORE, lim), ACL_SUCCESS);
    CHECK_RET(aclrtSetDeviceResLimit(1, ACL_RT_DEV_RES_CUBE_CORE, lim + 1), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtSetDeviceResLimit(1, ACL_RT_DEV_RES_CUBE_CORE, 0), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtResetDeviceResLimit(1), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(sa), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(sb), ACL_SUCCESS);
    int states[2] = {0, 0};
    CHECK_RET(aclrtRegStreamStateCallback("test", on_stream_state, states), ACL_SUCCESS);
    aclrtStream sc = NULL;
    CHECK_RET(aclrtCreateStream(&sc), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(sc), ACL_SUCCESS);
    CHECK(states[0] == 1 && states[1] == 1);
    CHECK_RET(aclrtRegStreamStateCallback("test", NULL, NULL), ACL_SUCCESS);
    CHECK_RET(aclrtCreateStream(&sc), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(sc), ACL_SUCCESS);
    CHECK(states[0] == 1 && states[1] == 1); /* unregistered */
  }

  pthread_t th;
  CHECK(pthread_create(&th, NULL, sync_loop, NULL) == 0);
  for (int i = 0; i < 100; i++) {
    aclrtStream t = NULL;
    CHECK_RET(aclrtCreateStream(&t), ACL_SUCCESS);
    CHECK_RET(aclrtMemsetAsync(d1, sizeof host, i, sizeof host, t), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(t), ACL_SUCCESS);
  }
  __atomic_store_n(&syncing, 0, __ATOMIC_RELEASE);
  void *sync_errors = NULL;
  CHECK(pthread_join(th, &sync_errors) == 0 && sync_errors == NULL);

  CHECK_RET(aclrtFree(d0), ACL_SUCCESS);
  CHECK_RET(aclrtFree(d1), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(1), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
