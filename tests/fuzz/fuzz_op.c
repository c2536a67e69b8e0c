/*
 * tests/fuzz/fuzz_op.c — operator calls from untrusted bytes: an input is
 * an OpRun's data (rdev/ops.h). What rdev_op_decode accepts must encode
 * back to the same bytes, and then run on the sim as rdevd would run it:
 * its tensors are pointed into two small buffers of a session-like
 * address space (keeping their offsets), so that the runtime's reach
 * checks and the sim's operators meet every shape, stride and type the
 * decoder lets through. Nothing may read or write outside the buffers
 * (ASan), hang, or leak.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "rdev/runtime.h"

#define BUF 4096
#define MAX_NUMEL (1 << 16) /* keeps one run short: rdevd allows more */

static rdev_rt_t *rt;
static rdev_rt_stream_t *st;
static void *buf[2];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 << 20};
  if (rdev_rt_open(&cfg, &rt) || rdev_rt_stream_create(rt, 0, &st) || rdev_rt_malloc(rt, 0, &buf[0], BUF, 0) ||
      rdev_rt_malloc(rt, 0, &buf[1], BUF, 0))
    abort();
  return 0;
}

/* Points t into one of the buffers; false when it is too large to run here. */
static int place(rdev_tensor_t *t, int k) {
  if (rdev_tensor_numel(t) > MAX_NUMEL) return 0;
  size_t esz = rdev_dtype_size(t->dtype);
  t->addr = (uint64_t)(uintptr_t)buf[k & 1] + ((t->addr % BUF) & ~(uint64_t)(esz - 1));
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rdev_op_call_t *c;
  char msg[256];
  if (rdev_op_decode(data, size, &c, msg, sizeof msg)) return 0;
  static unsigned char again[RDEV_OP_MAX_BLOB];
  size_t len;
  if (rdev_op_encode(c, again, sizeof again, &len) || len != size || memcmp(again, data, size)) abort();
  int k = 0, ok = 1;
  for (int i = 0; i < c->nargs && ok; i++) {
    rdev_op_arg_t *a = &c->args[i];
    if (!a->present || (a->kind != RDEV_OPK_TENSOR && a->kind != RDEV_OPK_TENSOR_LIST)) continue;
    for (uint32_t j = 0; j < (a->kind == RDEV_OPK_TENSOR ? 1 : a->n) && ok; j++) ok = place(&a->v.t[j], k++);
  }
  if (!ok) {
    free(c);
    return 0;
  }
  rdev_rt_op_launch(st, c); /* takes c; most fail their reach checks, which is the point */
  rdev_rt_stream_synchronize(st);
  return 0;
}
