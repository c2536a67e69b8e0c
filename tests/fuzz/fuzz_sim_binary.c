/*
 * tests/fuzz/fuzz_sim_binary.c — kernel binaries from untrusted bytes: an
 * input is what a client sends as a binary (docs/sim-binary.md). rdevd's
 * loader (rdev_rt_binary_load on the sim) and the ACL library's reading
 * of the same text (rdev_sim_binary_declares, which decides whether a
 * function lookup waits for rdevd) must agree: text the library cannot
 * read the loader refuses, and every kernel of a binary the loader takes
 * the library finds, by name and by entry, as the same function. Nothing
 * may read outside the input (an exact-size copy; ASan), hang, or leak.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rdev/runtime.h"
#include "rdev/sim_binary.h"

#define CHECK(c) \
  do { \
    if (!(c)) abort(); \
  } while (0)

static rdev_rt_t *rt;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 << 20};
  if (rdev_rt_open(&cfg, &rt)) abort();
  return 0;
}

/* Every kernel line of a binary b the loader took: the library declares
 * it by name and by entry, and the loader finds the same function both
 * ways. */
static void check_kernels(const char *text, size_t size, const rdev_rt_binary_t *b) {
  rdev_sim_binary_reader_t r;
  rdev_sim_binary_reader_init(&r, text, size);
  uint64_t index = 0;
  int rc, kernels = 0;
  while ((rc = rdev_sim_binary_next(&r)) == RDEV_SIM_BINARY_WORDS) {
    if (strcmp(r.w[0], "kernel") || r.nw < 3) continue;
    uint64_t entry = index++;
    if (r.nw == 4) CHECK(rdev_sim_binary_entry(r.w[3], &entry) == 0);
    CHECK(rdev_sim_binary_declares(text, size, r.w[1], 0) == 1);
    CHECK(rdev_sim_binary_declares(text, size, NULL, entry) == 1);
    const rdev_rt_function_t *by_name = NULL, *by_entry = NULL;
    CHECK(rdev_rt_binary_function(b, r.w[1], &by_name) == RDEV_OK);
    CHECK(rdev_rt_binary_function_by_entry(b, entry, &by_entry) == RDEV_OK);
    CHECK(by_name == by_entry);
    CHECK(!strcmp(rdev_rt_function_name(by_name), r.w[1]));
    kernels++;
  }
  CHECK(rc == RDEV_SIM_BINARY_END && kernels > 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  memcpy(text, data, size);
  int declares = rdev_sim_binary_declares(text, size, "Kernel", 0);
  CHECK(declares >= -1 && declares <= 1);
  rdev_rt_binary_t *b = NULL;
  int rc = rdev_rt_binary_load(rt, text, size, &b);
  if (rc == RDEV_OK) {
    CHECK(declares != -1); /* what the loader takes, the library reads */
    check_kernels(text, size, b);
    rdev_rt_binary_unload(b);
  } else {
    CHECK(b == NULL);
  }
  free(text);
  return 0;
}
