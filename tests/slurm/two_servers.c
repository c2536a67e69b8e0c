/*
 * tests/slurm/two_servers.c — test_slurm.sh's check inside a job with one
 * device on each of two rdevd: ONE session over $RDEV_TARGET ("A,B", the
 * job's token from $RDEV_TOKEN_FILE) sees 2 devices; a byte pattern written
 * to device 0 (server A's), copied device 0 -> device 1 (server B's) with
 * RDEV_MEMCPY_DEVICE_TO_DEVICE and read back from device 1 is the same,
 * byte for byte. Prints "two servers: OK" and exits 0, else says what
 * failed and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/rdev.h"

#define SIZE (1 << 20)

static int fail(const char *what, int rc) {
  const char *detail = rdev_session_last_error();
  fprintf(stderr, "two servers: %s: %s (%d)%s%s\n", what, rdev_strerror(rc), rc, detail && *detail ? ": " : "",
          detail ? detail : "");
  return 1;
}

int main(void) {
  const char *target = getenv("RDEV_TARGET");
  if (!target || !strchr(target, ',')) {
    fprintf(stderr, "two servers: RDEV_TARGET is '%s', not two addresses\n", target ? target : "");
    return 1;
  }
  rdev_session_t *s;
  int rc = rdev_session_open(target, NULL, &s);
  if (rc) return fail("session open", rc);
  int n = 0;
  if ((rc = rdev_device_count(s, &n))) return fail("device count", rc);
  if (n != 2) {
    fprintf(stderr, "two servers: %d devices, not 2\n", n);
    return 1;
  }
  unsigned char *pattern = malloc(SIZE), *back = malloc(SIZE);
  for (size_t i = 0; i < SIZE; i++) pattern[i] = (unsigned char)(i * 131 + (i >> 12) * 7 + 1);
  memset(back, 0, SIZE);
  void *d0, *d1;
  if ((rc = rdev_device_set(s, 0)) || (rc = rdev_malloc(s, &d0, SIZE, RDEV_MEM_MALLOC_HUGE_FIRST)))
    return fail("malloc on device 0", rc);
  if ((rc = rdev_device_set(s, 1)) || (rc = rdev_malloc(s, &d1, SIZE, RDEV_MEM_MALLOC_HUGE_FIRST)))
    return fail("malloc on device 1", rc);
  if ((rc = rdev_memcpy(s, d0, SIZE, pattern, SIZE, RDEV_MEMCPY_HOST_TO_DEVICE))) return fail("write device 0", rc);
  if ((rc = rdev_memcpy(s, d1, SIZE, d0, SIZE, RDEV_MEMCPY_DEVICE_TO_DEVICE))) return fail("copy 0 -> 1", rc);
  if ((rc = rdev_memcpy(s, back, SIZE, d1, SIZE, RDEV_MEMCPY_DEVICE_TO_HOST))) return fail("read device 1", rc);
  for (size_t i = 0; i < SIZE; i++)
    if (back[i] != pattern[i]) {
      fprintf(stderr, "two servers: byte %zu of device 1 is %u, not %u\n", i, back[i], pattern[i]);
      return 1;
    }
  if ((rc = rdev_free(s, d1)) || (rc = rdev_free(s, d0))) return fail("free", rc);
  rdev_session_close(s);
  free(pattern);
  free(back);
  printf("two servers: OK\n");
  return 0;
}
