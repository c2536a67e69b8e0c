/*
 * client/examples/square.c — the Host/Device memory-model walkthrough
 * (seeds/host_device_memory_model.txt) run against a remote rdevd: 1024
 * random floats go to device memory, the square_f32 kernel squares them on
 * the device, the results come back and are checked on the host against
 * x * x in float, exactly.
 *
 *   square [TARGET]     (default $RDEV_TARGET, else 127.0.0.1:50051)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rdev/rdev.h"

#define CHECK(call) \
  do { \
    int ret_ = (call); \
    if (ret_ != RDEV_OK) { \
      fprintf(stderr, "[ERROR] %s returned %d (%s: %s)\n", #call, ret_, rdev_strerror(ret_), \
              rdev_session_last_error()); \
      goto out; \
    } \
  } while (0)

int main(int argc, char **argv) {
  const char *target = argc > 1 ? argv[1] : getenv("RDEV_TARGET");
  if (!target || !*target) target = "127.0.0.1:50051";
  const uint32_t dataSize = 1024;
  const size_t bytes = dataSize * sizeof(float);
  int ok = 0;
  rdev_session_t *s = NULL;
  rdev_stream_t *stream = NULL;
  float *hostInput = NULL, *hostOutput = NULL, *deviceInput = NULL, *deviceOutput = NULL;

  /* Step 1: session and device 0 (aclInit, context on device 0). */
  CHECK(rdev_session_open(target, NULL, &s));
  CHECK(rdev_device_set(s, 0));
  CHECK(rdev_stream_create(s, &stream));

  /* Step 2: memory, and random data on the host. */
  CHECK(rdev_malloc_host(s, (void **)&hostInput, bytes));
  CHECK(rdev_malloc_host(s, (void **)&hostOutput, bytes));
  CHECK(rdev_malloc(s, (void **)&deviceInput, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_malloc(s, (void **)&deviceOutput, bytes, RDEV_MEM_MALLOC_HUGE_FIRST));
  srand((unsigned)time(NULL));
  for (uint32_t i = 0; i < dataSize; i++) hostInput[i] = (float)rand() / (float)RAND_MAX;
  memset(hostOutput, 0, bytes);

  /* Step 3: host to device. */
  CHECK(rdev_memcpy(s, deviceInput, bytes, hostInput, bytes, RDEV_MEMCPY_HOST_TO_DEVICE));

  /* Step 4: SquareKernel on the device, then wait for it. */
  rdev_arg_t args[3];
  memset(args, 0, sizeof args);
  args[0].type = RDEV_ARG_PTR;
  args[0].v.ptr = deviceInput;
  args[1].type = RDEV_ARG_PTR;
  args[1].v.ptr = deviceOutput;
  args[2].type = RDEV_ARG_U32;
  args[2].v.u32 = dataSize;
  CHECK(rdev_launch(stream, "square_f32", 4, args, 3));
  CHECK(rdev_stream_synchronize(stream));

  /* Step 5: device to host. */
  CHECK(rdev_memcpy(s, hostOutput, bytes, deviceOutput, bytes, RDEV_MEMCPY_DEVICE_TO_HOST));

  /* Check on the host. */
  uint32_t bad = 0;
  for (uint32_t i = 0; i < dataSize; i++) {
    float want = hostInput[i] * hostInput[i];
    if (hostOutput[i] != want) {
      if (bad < 5)
        fprintf(stderr, "[MISMATCH] [%u] %.9g squared is %.9g, device said %.9g\n", i, (double)hostInput[i],
                (double)want, (double)hostOutput[i]);
      bad++;
    }
  }
  if (bad) {
    printf("[FAILURE] %u of %u squares differ.\n", bad, dataSize);
  } else {
    printf("[SUCCESS] %u floats squared on the device match the host.\n", dataSize);
    ok = 1;
  }

out:
  /* Step 6: release. */
  if (stream) rdev_stream_destroy(stream);
  if (hostInput) rdev_free_host(s, hostInput);
  if (hostOutput) rdev_free_host(s, hostOutput);
  if (deviceInput) rdev_free(s, deviceInput);
  if (deviceOutput) rdev_free(s, deviceOutput);
  rdev_session_close(s);
  return ok ? 0 : 1;
}
