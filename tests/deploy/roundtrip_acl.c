/*
 * tests/deploy/roundtrip_acl.c — a CANN program outside the tree: built by
 * test_install.py against the installed rdev-acl.pc alone (acl/acl.h and
 * libascendcl from include/rdev/cann and lib/rdev/cann), run with
 * RDEV_TARGET naming an rdevd: aclrtMalloc, H2D, D2H, compare, aclrtFree.
 */
#include <acl/acl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call) \
  do { \
    aclError e_ = (call); \
    if (e_ != ACL_SUCCESS) { \
      fprintf(stderr, "roundtrip_acl: %s: %d (%s)\n", #call, (int)e_, aclGetRecentErrMsg()); \
      return 1; \
    } \
  } while (0)

int main(void) {
  const size_t n = 1u << 20;
  unsigned char *src = malloc(n), *dst = malloc(n);
  void *dev = NULL;
  if (!src || !dst) return 2;
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 40503u >> 7);
  memset(dst, 0, n);
  CHECK(aclInit(NULL));
  CHECK(aclrtSetDevice(0));
  CHECK(aclrtMalloc(&dev, n, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK(aclrtMemcpy(dev, n, src, n, ACL_MEMCPY_HOST_TO_DEVICE));
  CHECK(aclrtMemcpy(dst, n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST));
  if (memcmp(src, dst, n) != 0) {
    fprintf(stderr, "roundtrip_acl: bytes differ\n");
    return 1;
  }
  CHECK(aclrtFree(dev));
  CHECK(aclrtResetDevice(0));
  CHECK(aclFinalize());
  free(src);
  free(dst);
  printf("roundtrip_acl: %zu bytes round trip OK\n", n);
  return 0;
}
