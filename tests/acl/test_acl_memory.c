/*
 * tests/acl/test_acl_memory.c — a CANN-style program written only against
 * the acl headers and linked against libascendcl.so: initialization from
 * the environment, devices, memory, copies (sync, async from aclrtMallocHost
 * memory and from ordinary memory, on a stream and on the NULL stream),
 * memsets, 2D copies, value writes and waits, streams, events, error codes
 * and messages, calls rdev does not
 * offer, a child after fork() and finalization. Compiled as C and as C++ (test_acl_memory.cpp). Run by
 * run_acl.py against a real rdevd, with RDEV_TARGET set; with the argument
 * "unreachable" it checks that aclInit fails clearly instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl/acl.h"
#include "acl_check.h"

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 131u + i * 7u + (i >> 9));
}

static int unreachable(void) {
  aclError r = aclInit(NULL);
  const char *m = aclGetRecentErrMsg();
  char why[512];
  snprintf(why, sizeof why, "%s", m ? m : "(none)"); /* the next failing call replaces it */
  CHECK(r != ACL_SUCCESS);
  CHECK(strstr(why, "cannot open a session with rdevd at"));
  CHECK_RET(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
  printf("aclInit without a server: %d: %s\n", r, why);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const size_t n = (size_t)3 << 20;

  /* init and devices */
  CHECK_RET(aclrtMalloc(NULL, 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK_RET(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count >= 1);
  void *early = NULL;
  CHECK_RET(aclrtMalloc(&early, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_CONTEXT_NULL); /* no device yet */
  CHECK_RET(aclrtSetDevice((int32_t)count), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK_RET(aclrtSetDevice(0), ACL_SUCCESS);
  int32_t dev = -1;
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == 0);
  aclrtRunMode mode = ACL_DEVICE;
  CHECK_RET(aclrtGetRunMode(&mode), ACL_SUCCESS);
  CHECK(mode == ACL_HOST);

  /* memory */
  size_t free0 = 0, total = 0, free1 = 0;
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total), ACL_SUCCESS);
  CHECK(free0 > 0 && free0 <= total);
  void *a = NULL, *b = NULL, *pinned = NULL;
  CHECK_RET(aclrtMalloc(&a, n, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&b, n, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
  CHECK_RET(aclrtMalloc(&early, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total), ACL_SUCCESS);
  CHECK(free1 + 2 * n <= free0);
  CHECK_RET(aclrtMallocHost(&pinned, n), ACL_SUCCESS);
  unsigned char *src = (unsigned char *)malloc(n), *dst = (unsigned char *)malloc(n);
  fill(src, n, 1);

  /* synchronous copies, the direction from the pointers (kind is reserved) */
  CHECK_RET(aclrtMemcpy(a, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(b, n, a, n, ACL_MEMCPY_DEFAULT), ACL_SUCCESS);
  memset(dst, 0, n);
  CHECK_RET(aclrtMemcpy(dst, n, b, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(memcmp(dst, src, n) == 0);
  CHECK_RET(aclrtMemcpy(dst, n - 1, a, n, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtMemcpy(dst, n, a, 0, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS); /* count 0: nothing */
  CHECK_RET(aclrtMemcpy(dst, n + 1, a, n + 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  const char *msg = aclGetRecentErrMsg();
  CHECK(msg && *msg);

  /* async copies on a stream: from aclrtMallocHost memory valid after the
   * synchronize, from ordinary memory complete when the call returns */
  aclrtStream st = NULL;
  CHECK_RET(aclrtCreateStream(&st), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream((aclrtStream)src), ACL_ERROR_INVALID_RESOURCE_HANDLE); /* not a stream */
  CHECK_RET(aclrtMemsetAsync(b, n, 0x5a, n / 2, st), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pinned, n, b, n, ACL_MEMCPY_DEVICE_TO_HOST, st), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
  for (size_t i = 0; i < n / 2; i += 4099) CHECK(((unsigned char *)pinned)[i] == 0x5a);
  CHECK(memcmp((unsigned char *)pinned + n / 2, src + n / 2, n / 2) == 0);
  fill(src, n, 2);
  CHECK_RET(aclrtMemcpyAsync(a, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE, st), ACL_SUCCESS);
  memset(src, 0, n); /* the copy is complete: changing the source changes nothing */
  memset(dst, 0, n);
  CHECK_RET(aclrtMemcpyAsync(dst, n, a, n, ACL_MEMCPY_DEVICE_TO_HOST, st), ACL_SUCCESS);
  fill(src, n, 2);
  CHECK(memcmp(dst, src, n) == 0); /* no synchronize needed */
  memset(dst, 0, n);               /* likewise when the direction is left to the pointers */
  CHECK_RET(aclrtMemcpyAsync(dst, n, a, n, ACL_MEMCPY_DEFAULT, st), ACL_SUCCESS);
  CHECK(memcmp(dst, src, n) == 0);
  aclrtStreamStatus ss = ACL_STREAM_STATUS_NOT_READY;
  CHECK_RET(aclrtStreamQuery(st, &ss), ACL_SUCCESS);
  CHECK(ss == ACL_STREAM_STATUS_COMPLETE);

  /* the NULL stream is the device's default stream */
  CHECK_RET(aclrtMemset(a, n, 0x11, n), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(a, n, 0x22, 4096, NULL), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pinned, n, a, n, ACL_MEMCPY_DEVICE_TO_HOST, NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
  CHECK(((unsigned char *)pinned)[0] == 0x22 && ((unsigned char *)pinned)[4096] == 0x11);
  CHECK_RET(aclrtMemsetAsync(a, n, 0, n + 1, st), ACL_ERROR_RT_PARAM_INVALID);

  /* events */
  aclrtEvent e0 = NULL, e1 = NULL;
  CHECK_RET(aclrtCreateEvent(&e0), ACL_SUCCESS);
  CHECK_RET(aclrtCreateEvent(&e1), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(e0, st), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(b, n, a, n, ACL_MEMCPY_DEVICE_TO_DEVICE, st), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(e1, st), ACL_SUCCESS);
  CHECK_RET(aclrtStreamWaitEvent(NULL, e1), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeEvent(e1), ACL_SUCCESS);
  aclrtEventRecordedStatus es = ACL_EVENT_RECORDED_STATUS_NOT_READY;
  CHECK_RET(aclrtQueryEventStatus(e1, &es), ACL_SUCCESS);
  CHECK(es == ACL_EVENT_RECORDED_STATUS_COMPLETE);
  float ms = -1;
  CHECK_RET(aclrtEventElapsedTime(&ms, e0, e1), ACL_SUCCESS);
  CHECK(ms >= 0);
  CHECK_RET(aclrtDestroyEvent(e0), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyEvent(e1), ACL_SUCCESS);

  /* 2D copies: a 7 x 300 window of a host matrix (pitch 512) into device
   * rows of pitch 384 and back into a matrix of pitch 1024; the bytes
   * between the rows stay as they were, on both sides */
  {
    enum { W = 300, H = 7, SP = 512, DP = 384, BP = 1024 };
    unsigned char *hm = (unsigned char *)malloc(SP * H), *back = (unsigned char *)malloc(BP * H);
    unsigned char *flat = (unsigned char *)malloc(DP * H);
    fill(hm, SP * H, 9);
    memset(back, 0xee, BP * H);
    CHECK_RET(aclrtMemset(a, n, 0, DP * H), ACL_SUCCESS);
    CHECK_RET(aclrtMemcpy2d(a, DP, hm, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    CHECK_RET(aclrtMemcpy2d(back, BP, a, DP, W, H, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK_RET(aclrtMemcpy(flat, DP * H, a, DP * H, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    for (int r = 0; r < H; r++) {
      CHECK(memcmp(back + r * BP, hm + r * SP, W) == 0);
      CHECK(back[r * BP + W] == 0xee && back[r * BP + BP - 1] == 0xee);
      CHECK(memcmp(flat + r * DP, hm + r * SP, W) == 0);
      CHECK(flat[r * DP + W] == 0 && flat[r * DP + DP - 1] == 0);
    }
    /* async on a stream: from aclrtMallocHost memory, and to ordinary
     * memory (complete when the call returns) */
    memcpy(pinned, hm, SP * H);
    CHECK_RET(aclrtMemcpy2dAsync(b, DP, pinned, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE, st), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(st), ACL_SUCCESS);
    memset(back, 0, BP * H);
    CHECK_RET(aclrtMemcpy2dAsync(back, BP, b, DP, W, H, ACL_MEMCPY_DEVICE_TO_HOST, st), ACL_SUCCESS);
    for (int r = 0; r < H; r++) CHECK(memcmp(back + r * BP, hm + r * SP, W) == 0);
    /* what CANN refuses */
    CHECK_RET(aclrtMemcpy2d(a, W - 1, hm, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtMemcpy2d(a, DP, hm, W - 1, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtMemcpy2d(a, DP, b, DP, W, H, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtMemcpy2d(NULL, DP, hm, SP, W, H, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtMemcpy2dAsync(a, DP, hm, SP, W, (size_t)-1 / 2, ACL_MEMCPY_HOST_TO_DEVICE, st),
              ACL_ERROR_INVALID_PARAM);
    free(hm);
    free(back);
    free(flat);
  }

  /* value write and wait: a stream held until another writes the value */
  {
    aclrtStream w = NULL;
    CHECK_RET(aclrtCreateStream(&w), ACL_SUCCESS);
    void *flag = NULL;
    CHECK_RET(aclrtMalloc(&flag, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    CHECK_RET(aclrtMemset(flag, 64, 0, 64), ACL_SUCCESS);
    CHECK_RET(aclrtValueWait(flag, 7, ACL_STREAM_WAIT_VALUE_EQ, w), ACL_SUCCESS);
    CHECK_RET(aclrtMemsetAsync(a, n, 0x77, 64, w), ACL_SUCCESS);
    usleep(50000);
    aclrtStreamStatus ws = ACL_STREAM_STATUS_COMPLETE;
    CHECK_RET(aclrtStreamQuery(w, &ws), ACL_SUCCESS);
    CHECK(ws == ACL_STREAM_STATUS_NOT_READY);
    CHECK_RET(aclrtValueWrite(flag, 7, 0, st), ACL_SUCCESS);
    CHECK_RET(aclrtSynchronizeStream(w), ACL_SUCCESS);
    unsigned char c = 0;
    CHECK_RET(aclrtMemcpy(&c, 1, a, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    CHECK(c == 0x77);
    CHECK_RET(aclrtValueWrite(flag, 1, 1, st), ACL_ERROR_INVALID_PARAM);       /* flag is reserved */
    CHECK_RET(aclrtValueWait(flag, 1, 9, st), ACL_ERROR_INVALID_PARAM);        /* unknown condition */
    CHECK_RET(aclrtValueWrite((char *)flag + 4, 1, 0, st), ACL_SUCCESS);       /* queued; refused by rdevd... */
    CHECK_RET(aclrtSynchronizeStream(st), ACL_ERROR_MEMORY_ADDRESS_UNALIGNED); /* ...at the synchronize */
    CHECK_RET(aclrtFree(flag), ACL_SUCCESS);
    CHECK_RET(aclrtDestroyStream(w), ACL_SUCCESS);
  }

  /* a call rdev does not offer links, and says so when called */
  aclrtLabel label = NULL;
  CHECK_RET(aclmdlRICaptureBegin(st, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL), ACL_ERROR_API_NOT_SUPPORT);
  CHECK_RET(aclrtCreateLabel(&label), ACL_ERROR_API_NOT_SUPPORT);
  msg = aclGetRecentErrMsg();
  CHECK(msg && strstr(msg, "aclrtCreateLabel is not offered by rdev"));

  /* a child after fork() gets a clear error, not a hang */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    void *p = NULL;
    aclError r = aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    const char *m = aclGetRecentErrMsg();
    _exit(r == ACL_ERROR_UNINITIALIZE && m && strstr(m, "fork") ? 0 : 1);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);

  /* the end */
  CHECK_RET(aclrtDestroyStream(st), ACL_SUCCESS);
  CHECK_RET(aclrtFree(a), ACL_SUCCESS);
  CHECK_RET(aclrtFree(b), ACL_SUCCESS);
  CHECK_RET(aclrtFree(b), ACL_ERROR_INVALID_PARAM); /* freed already */
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(src), ACL_ERROR_INVALID_PARAM); /* not aclrtMallocHost memory */
  CHECK_RET(aclrtResetDevice(0), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  free(src);
  free(dst);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
