/*
 * tests/aclnn/test_aclnn_c.c — the operator library from C11 (CANN's own
 * headers are C++ only; rdev's compile as both): one aclnnAdd through its
 * two phases on the default stream, the result checked. Run by
 * run_aclnn.py; exit 0 = right.
 */
#include <stdio.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_add.h"

int main(void) {
  float x[3] = {1, 2, 3}, y[3] = {4, 5, 6}, r[3] = {0}, alpha = 2;
  void *dx, *dy, *dr;
  int64_t n = 3;
  if (aclInit(NULL) || aclrtSetDevice(0) || aclrtMalloc(&dx, sizeof x, ACL_MEM_MALLOC_HUGE_FIRST) ||
      aclrtMalloc(&dy, sizeof y, ACL_MEM_MALLOC_HUGE_FIRST) || aclrtMalloc(&dr, sizeof r, ACL_MEM_MALLOC_HUGE_FIRST) ||
      aclrtMemcpy(dx, sizeof x, x, sizeof x, ACL_MEMCPY_HOST_TO_DEVICE) ||
      aclrtMemcpy(dy, sizeof y, y, sizeof y, ACL_MEMCPY_HOST_TO_DEVICE))
    return 1;
  aclTensor *tx = aclCreateTensor(&n, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, &n, 1, dx);
  aclTensor *ty = aclCreateTensor(&n, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, &n, 1, dy);
  aclTensor *tr = aclCreateTensor(&n, 1, ACL_FLOAT, NULL, 0, ACL_FORMAT_ND, &n, 1, dr);
  aclScalar *a = aclCreateScalar(&alpha, ACL_FLOAT);
  uint64_t ws;
  aclOpExecutor *ex;
  if (aclnnAddGetWorkspaceSize(tx, ty, a, tr, &ws, &ex) || aclnnAdd(NULL, ws, ex, NULL) ||
      aclrtSynchronizeStream(NULL) || aclrtMemcpy(r, sizeof r, dr, sizeof r, ACL_MEMCPY_DEVICE_TO_HOST))
    return 2;
  aclDestroyTensor(tx);
  aclDestroyTensor(ty);
  aclDestroyTensor(tr);
  aclDestroyScalar(a);
  aclrtFree(dx);
  aclrtFree(dy);
  aclrtFree(dr);
  aclFinalize();
  for (int i = 0; i < 3; i++)
    if (r[i] != x[i] + alpha * y[i]) {
      printf("r[%d] = %g\n", i, r[i]);
      return 3;
    }
  return 0;
}
