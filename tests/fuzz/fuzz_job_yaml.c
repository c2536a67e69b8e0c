/*
 * tests/fuzz/fuzz_job_yaml.c — libFuzzer harness for the `rdev` tool's job
 * spec reader (client/cli/job_yaml.c), which reads files people write and
 * pass around: any bytes must give a spec or an error message, never a
 * crash, a leak or an unterminated message. The kernel signatures a real
 * run gets from the server's Info are a fixed pair here.
 */
#include "fuzz.h"
#include <stdlib.h>
#include <string.h>

#include "job_yaml.h"

#define CHECK(c) \
  do { \
    if (!(c)) abort(); \
  } while (0)

static rdev_v1_InfoReply g_info;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  g_info.kernels_count = 2;
  rdev_v1_KernelInfo *k = &g_info.kernels[0];
  strcpy(k->name, "square_f32");
  k->params_count = 3;
  strcpy(k->params[0].type, "ptr");
  strcpy(k->params[1].type, "ptr");
  strcpy(k->params[2].type, "u32");
  k = &g_info.kernels[1];
  strcpy(k->name, "axpy_f32");
  k->params_count = 4;
  strcpy(k->params[0].type, "f32");
  strcpy(k->params[1].type, "ptr");
  strcpy(k->params[2].type, "ptr");
  strcpy(k->params[3].type, "u64");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rdev_v1_JobSpec *spec = calloc(1, sizeof *spec);
  CHECK(spec);
  char err[96];
  memset(err, 0x5a, sizeof err);
  int rc = rdev_cli_job_parse((const char *)data, size, size & 1 ? &g_info : NULL, spec, err, sizeof err);
  if (rc == 0)
    rdev_cli_job_free(spec);
  else
    CHECK(memchr(err, 0, sizeof err) && err[0]);
  free(spec);
  return 0;
}
