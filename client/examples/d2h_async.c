/*
 * client/examples/d2h_async.c — the CANN sample 4_d2h_async_memory_copy run
 * against a remote rdevd: a kernel writes 123 into device memory, an async
 * D2H copy brings the whole 1 MiB back, the stream is synchronized and the
 * value read. Checks as the sample's run.sh does: the kernel's
 * "Source data: N" print must match the "Destination data: N" read back.
 *
 *   d2h_async [TARGET]     (default $RDEV_TARGET, else 127.0.0.1:50051)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/rdev.h"

#define INFO_LOG(fmt, ...) printf("[INFO] " fmt "\n", ##__VA_ARGS__)
#define ERROR_LOG(fmt, ...) fprintf(stderr, "[ERROR] " fmt "\n", ##__VA_ARGS__)

#define CHECK_ERROR(call) \
  do { \
    int ret_ = (call); \
    if (ret_ != RDEV_OK) { \
      ERROR_LOG("Operation failed: %s returned error code %d (%s: %s)", #call, ret_, rdev_strerror(ret_), \
                rdev_session_last_error()); \
      goto fail; \
    } \
  } while (0)

/* Kernel print output: shown as the sample shows it, and kept for the check. */
typedef struct {
  pthread_mutex_t mu;
  char text[4096];
  size_t len;
} capture_t;

static void capture_print(void *user, const char *text, size_t len) {
  capture_t *c = user;
  fwrite(text, 1, len, stdout);
  fflush(stdout);
  pthread_mutex_lock(&c->mu);
  size_t room = sizeof c->text - 1 - c->len;
  if (len > room) len = room;
  memcpy(c->text + c->len, text, len);
  c->len += len;
  c->text[c->len] = '\0';
  pthread_mutex_unlock(&c->mu);
}

int main(int argc, char **argv) {
  const char *target = argc > 1 ? argv[1] : getenv("RDEV_TARGET");
  if (!target || !*target) target = "127.0.0.1:50051";
  capture_t cap = {PTHREAD_MUTEX_INITIALIZER, "", 0};
  rdev_session_t *s = NULL;
  rdev_stream_t *stream = NULL;
  int *hostPtrA = NULL;
  int *devPtrB = NULL;
  int readValue = -1;

  CHECK_ERROR(rdev_session_open(target, NULL, &s));
  rdev_session_set_print_fn(s, capture_print, &cap);
  int32_t deviceId = 0;
  CHECK_ERROR(rdev_device_set(s, deviceId));
  CHECK_ERROR(rdev_stream_create(s, &stream));

  /* Allocate memory on the host and device. */
  uint64_t size = 1 * 1024 * 1024; /* 1 MB */
  CHECK_ERROR(rdev_malloc_host(s, (void **)&hostPtrA, size));
  INFO_LOG("Allocate memory on the host memory %p successfully", (void *)hostPtrA);
  CHECK_ERROR(rdev_malloc(s, (void **)&devPtrB, size, RDEV_MEM_MALLOC_HUGE_FIRST));
  INFO_LOG("Allocate memory on the device memory %p successfully", (void *)devPtrB);

  /* Write the data 123 to the virtual address devPtrB (DeviceWrite). */
  const uint32_t blockDim = 1;
  int writeValue = 123;
  rdev_arg_t args[2];
  memset(args, 0, sizeof args);
  args[0].type = RDEV_ARG_PTR;
  args[0].v.ptr = devPtrB;
  args[1].type = RDEV_ARG_I32;
  args[1].v.i32 = writeValue;
  CHECK_ERROR(rdev_launch(stream, "write_i32", blockDim, args, 2));
  INFO_LOG("Write the data %d to the virtual memory %p", writeValue, (void *)devPtrB);

  /* Copy memory from devPtrB to hostPtrA asynchronously. */
  CHECK_ERROR(rdev_memcpy_async(s, hostPtrA, size, devPtrB, size, RDEV_MEMCPY_DEVICE_TO_HOST, stream));
  INFO_LOG("Copy memory from memory %p to memory %p", (void *)devPtrB, (void *)hostPtrA);

  /* Read the value at address hostPtrA after stream synchronization. */
  CHECK_ERROR(rdev_stream_synchronize(stream));
  readValue = *hostPtrA;
  INFO_LOG("Destination data: %d", readValue);

  /* Release resources. */
  {
    /* freed whatever the result: forget them before checking */
    rdev_stream_t *st = stream;
    void *host = hostPtrA, *dev = devPtrB;
    stream = NULL;
    hostPtrA = NULL;
    devPtrB = NULL;
    CHECK_ERROR(rdev_stream_destroy(st));
    CHECK_ERROR(rdev_free_host(s, host));
    CHECK_ERROR(rdev_free(s, dev));
  }
  rdev_session_close(s);
  s = NULL;

  /* run.sh: compare "Source data:" (kernel print) with "Destination data:".
   * A server whose backend keeps kernel print on its side (acl: CANN prints
   * on rdevd's stdout) sends none: then the value read back must be the one
   * written. */
  {
    const char *p = strstr(cap.text, "Source data:");
    int source = 0;
    if (p ? sscanf(p, "Source data: %d", &source) == 1 && source == writeValue && readValue == source
          : readValue == writeValue) {
      printf("[SUCCESS] Memory copy successfully.%s\n", p ? "" : " (the server forwards no kernel print)");
      return 0;
    }
    printf("[FAILURE] Source data %s%d, Destination data %d.\n", p ? "" : "(no kernel print) ", p ? source : 0,
           readValue);
    return 1;
  }

fail:
  if (stream) rdev_stream_destroy(stream);
  if (hostPtrA) rdev_free_host(s, hostPtrA);
  if (devPtrB) rdev_free(s, devPtrB);
  rdev_session_close(s);
  printf("[FAILURE]\n");
  return 1;
}
