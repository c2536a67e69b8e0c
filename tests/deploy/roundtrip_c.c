/*
 * tests/deploy/roundtrip_c.c — a program outside the tree: built by
 * test_install.py against the installed rdev.pc alone, it allocates device
 * memory on the rdevd at argv[1], sends 3 MiB of patterned bytes, reads them
 * back, compares byte for byte and frees. Exit 0 on success.
 */
#include <rdev/job.h> /* compiles from the installed headers too */
#include <rdev/rdev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  const size_t n = 3u << 20;
  rdev_session_t *s = NULL;
  void *dev = NULL;
  unsigned char *src = malloc(n), *dst = malloc(n);
  if (argc < 2 || !src || !dst) return 2;
  for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 2654435761u >> 13);
  memset(dst, 0, n);
  int rc = rdev_session_open(argv[1], NULL, &s);
  if (!rc) rc = rdev_malloc(s, &dev, n, RDEV_MEM_MALLOC_HUGE_FIRST);
  if (!rc) rc = rdev_memcpy(s, dev, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE);
  if (!rc) rc = rdev_memcpy(s, dst, n, dev, n, RDEV_MEMCPY_DEVICE_TO_HOST);
  if (!rc && memcmp(src, dst, n) != 0) {
    fprintf(stderr, "roundtrip_c: bytes differ\n");
    rc = -1;
  }
  if (dev && rdev_free(s, dev) && !rc) rc = -2;
  if (rc > 0) fprintf(stderr, "roundtrip_c: %s: %s\n", rdev_strerror(rc), rdev_session_last_error());
  if (s) rdev_session_close(s);
  free(src);
  free(dst);
  if (!rc) printf("roundtrip_c: %zu bytes round trip OK\n", n);
  return rc ? 1 : 0;
}
