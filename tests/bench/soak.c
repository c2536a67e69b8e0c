/*
 * tests/bench/soak.c — moves many bytes in mixed sizes through several
 * concurrent sessions of a real rdevd and verifies every byte, through the
 * public client API only.
 *
 * Usage: soak RDEVD_BINARY [GIB] [SESSIONS]   (default 8 GiB, 4 sessions)
 *
 * It starts rdevd on 127.0.0.1:0. Each session (one thread) owns a 64 MiB
 * device buffer and loops: a size from 1 byte to 16 MiB and an offset, fresh
 * pseudo-random data, H2D then D2H (sync, or async on a stream and then
 * synchronize, alternately), and a byte-for-byte comparison. Bytes moved
 * count both directions. Exit 0 only if every comparison held and rdevd
 * exited 0 after SIGTERM. ctest runs it (soak_8gib): seconds in a plain
 * build, about a minute under ASan on this 2-core machine.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rdev/rdev.h"

#define DEV_BYTES ((size_t)64 << 20)

static char addr[128];
static atomic_ullong moved;
static unsigned long long target;
static atomic_int failed;

#define CHECK(call) \
  do { \
    int rc_ = (call); \
    if (rc_ != RDEV_OK) { \
      fprintf(stderr, "soak: %s: %s (%d): %s\n", #call, rdev_strerror(rc_), rc_, rdev_session_last_error()); \
      atomic_store(&failed, 1); \
      return NULL; \
    } \
  } while (0)

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

static void fill(uint8_t *p, size_t n, uint64_t *seed) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = xorshift(seed);
    memcpy(p + i, &v, 8);
  }
  for (; i < n; i++) p[i] = (uint8_t)xorshift(seed);
}

static void *soak_main(void *arg) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL * (uint64_t)(uintptr_t)arg + 1;
  static const size_t sizes[] = {1, 63, 4099, 65536, (1 << 20) + 1, (5 << 20) + 7, 16 << 20};
  rdev_session_t *s;
  rdev_stream_t *st;
  void *dev;
  uint8_t *src = malloc(16 << 20), *dst = malloc(16 << 20);
  if (!src || !dst) {
    atomic_store(&failed, 1);
    return NULL;
  }
  CHECK(rdev_session_open(addr, NULL, &s));
  CHECK(rdev_stream_create(s, &st));
  CHECK(rdev_malloc(s, &dev, DEV_BYTES, RDEV_MEM_MALLOC_HUGE_FIRST));
  for (unsigned long it = 0; atomic_load(&moved) < target && !atomic_load(&failed); it++) {
    size_t n = sizes[xorshift(&seed) % (sizeof sizes / sizeof sizes[0])];
    size_t off = xorshift(&seed) % (DEV_BYTES - n + 1);
    fill(src, n, &seed);
    memset(dst, 0xA5, n);
    char *d = (char *)dev + off;
    if (it % 2) {
      CHECK(rdev_memcpy(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
      CHECK(rdev_memcpy(s, dst, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    } else {
      CHECK(rdev_memcpy_async(s, d, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
      CHECK(rdev_memcpy_async(s, dst, n, d, n, RDEV_MEMCPY_DEVICE_TO_HOST, st));
      CHECK(rdev_stream_synchronize(st));
    }
    if (memcmp(src, dst, n) != 0) {
      size_t i = 0;
      while (src[i] == dst[i]) i++;
      fprintf(stderr, "soak: %zu bytes at offset %zu (%s) differ at byte %zu\n", n, off, it % 2 ? "sync" : "async", i);
      atomic_store(&failed, 1);
    }
    atomic_fetch_add(&moved, 2 * (unsigned long long)n);
  }
  CHECK(rdev_free(s, dev));
  CHECK(rdev_stream_destroy(st));
  rdev_session_close(s);
  free(src);
  free(dst);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: soak RDEVD_BINARY [GIB] [SESSIONS]\n");
    return 2;
  }
  target = (unsigned long long)(argc > 2 ? atof(argv[2]) : 8) * (1ULL << 30);
  int nsess = argc > 3 ? atoi(argv[3]) : 4;
  if (nsess < 1 || nsess > 64) return 2;
  int fd[2];
  if (pipe(fd)) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    execl(argv[1], argv[1], "--listen", "127.0.0.1:0", "--sim-mem", "512M", "--log-level", "warn", (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  FILE *f = fdopen(fd[0], "r");
  char line[256] = "";
  if (!f || !fgets(line, sizeof line, f) || sscanf(line, "rdevd listening on %127s", addr) != 1) {
    fprintf(stderr, "soak: rdevd did not start\n");
    return 1;
  }
  fclose(f);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_t th[64];
  for (int i = 0; i < nsess; i++) pthread_create(&th[i], NULL, soak_main, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < nsess; i++) pthread_join(th[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  int status = 0;
  kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
  int server_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  printf("soak: %.2f GiB moved (H2D+D2H) in %.1f s through %d sessions, %.2f GB/s; %s; rdevd exit %s\n",
         (double)atomic_load(&moved) / (1ULL << 30), secs, nsess, (double)atomic_load(&moved) / secs / 1e9,
         atomic_load(&failed) ? "FAILED" : "every byte verified", server_ok ? "0" : "not 0");
  return atomic_load(&failed) || !server_ok;
}
