/*
 * tests/acl/test_acl_errors.c — the error-handling flow of the CANN
 * runtime's quickstart (example/0_quickstart/1_error_handling), written
 * only against the acl headers and linked against libascendcl.so: an
 * expected failure (aclrtGetRunMode(NULL)), the thread's last error peeked
 * and then taken (aclrtPeekAtLastError, aclrtGetLastError), the message
 * (aclGetRecentErrMsg, which clears it), the device's error summary
 * (aclrtGetErrorVerbose), all read once more to see them consumed; then
 * what other bad calls answer, that the last error is the thread's own,
 * that a later success leaves it and a later failure replaces it.
 * Compiled as C and as C++ (test_acl_errors.cpp); run by run_acl.py
 * against a real rdevd; with the argument "unreachable" it checks the
 * diagnostics of an aclInit that cannot reach the server.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

/* What a thread of its own sees after a failure of its own. */
typedef struct {
  aclError ret, peek, last;
  int had_msg;
} thread_errors_t;

static void *fail_on_thread(void *arg) {
  thread_errors_t *t = (thread_errors_t *)arg;
  t->ret = aclrtGetRunMode(NULL);
  t->peek = aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL);
  const char *m = aclGetRecentErrMsg();
  t->had_msg = m != NULL && *m != '\0';
  t->last = aclrtGetLastError(ACL_RT_THREAD_LEVEL);
  return NULL;
}

static int unreachable(void) {
  aclError r = aclInit(NULL);
  CHECK(r != ACL_SUCCESS);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == r);
  const char *m = aclGetRecentErrMsg();
  CHECK(m && strstr(m, "127.0.0.1:1")); /* the message names the target */
  CHECK(aclGetRecentErrMsg() == NULL);  /* read once: cleared */
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == r);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_UNINITIALIZE);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const int32_t device = 0;

  /* nothing has failed yet */
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
  CHECK(aclGetRecentErrMsg() == NULL);

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS);
  aclrtRunMode mode = ACL_DEVICE;
  CHECK_RET(aclrtGetRunMode(&mode), ACL_SUCCESS);
  CHECK(mode == ACL_HOST); /* rdev: the program runs on a host, the device is remote */

  /* the sample's expected failure, and its diagnostics */
  aclError expected = aclrtGetRunMode(NULL);
  CHECK(expected == ACL_ERROR_INVALID_PARAM);
  aclError peek = aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL);
  aclError last = aclrtGetLastError(ACL_RT_THREAD_LEVEL);
  const char *msg = aclGetRecentErrMsg();
  CHECK(peek == expected);
  CHECK(last == expected);
  CHECK(msg != NULL && *msg != '\0');
  printf("diagnostics: ret=%d peek=%d last=%d msg=%s\n", expected, peek, last, msg ? msg : "<null>");

  /* the device's error summary: nothing has gone wrong on the device */
  aclrtErrorInfo info;
  memset(&info, 0xff, sizeof info);
  CHECK_RET(aclrtGetErrorVerbose(device, &info), ACL_SUCCESS);
  CHECK(info.errorType == ACL_RT_NO_ERROR && info.tryRepair == 0 && info.hasDetail == 0);

  /* read again: consumed */
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
  CHECK(aclGetRecentErrMsg() == NULL);

  /* what other bad calls answer */
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK_RET(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
  CHECK_RET(aclrtSetDevice((int32_t)count), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
  void *p = NULL;
  CHECK_RET(aclrtMalloc(NULL, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  char host[64];
  CHECK_RET(aclrtMemcpy(host, sizeof host - 1, p, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
  CHECK_RET(aclrtFree(p), ACL_SUCCESS);
  aclrtStream st = NULL;
  CHECK_RET(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtCreateStream(&st), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(st), ACL_SUCCESS);
  (void)aclrtGetLastError(ACL_RT_THREAD_LEVEL);
  (void)aclGetRecentErrMsg();

  /* a later success leaves the last error as it was; a later failure replaces it */
  CHECK_RET(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtGetRunMode(&mode), ACL_SUCCESS);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
  msg = aclGetRecentErrMsg();
  CHECK(msg != NULL && *msg != '\0');
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_RT_INVALID_DEVICEID);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS); /* the failed set left the thread's device alone */
  int32_t dev = -1;
  CHECK_RET(aclrtGetDevice(&dev), ACL_SUCCESS);
  CHECK(dev == device);

  /* the last error and the message are the calling thread's */
  thread_errors_t t;
  memset(&t, 0, sizeof t);
  pthread_t th;
  CHECK(pthread_create(&th, NULL, fail_on_thread, &t) == 0);
  CHECK(pthread_join(th, NULL) == 0);
  CHECK(t.ret == ACL_ERROR_INVALID_PARAM && t.peek == ACL_ERROR_INVALID_PARAM && t.last == ACL_ERROR_INVALID_PARAM);
  CHECK(t.had_msg);
  CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);
  CHECK(aclGetRecentErrMsg() == NULL);

  /* the end, and what comes after it */
  CHECK_RET(aclrtResetDeviceForce(device), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
  CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == ACL_ERROR_REPEAT_FINALIZE);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
