/*
 * tests/fuzz/fuzz_wire.c — libFuzzer harness for the wire decoder rdevd
 * runs on every received message: rdev_wire_walk over a real
 * grpc_byte_buffer (the zero-copy payload path included), with the input
 * split into slices at points the fuzzer chooses.
 *
 * Input: byte 0 = number of split points k (mod 16), then k 16-bit split
 * offsets, then one byte naming the visit at which a walk stops (as rdevd
 * stops before a request that must wait), then the message itself.
 *
 * Checks, besides ASan/UBSan/LSan: every payload's slices add up to its
 * length and hold exactly the bytes the message carries; an oversized
 * payload keeps nothing; a Launch name is NUL-terminated within its limit;
 * batch requests are visited in order, the message's own last; and a walk
 * stopped and resumed from where it stopped (walk.skip), as many times as
 * it stops, visits exactly what one uninterrupted walk does.
 */
#include "fuzz.h"
#include <grpc/grpc.h>
#include <grpc/slice.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/wire.h"

#define MAX_VISITS 512

typedef struct {
  int index, err;
  uint64_t seq;
  pb_size_t op;
  size_t len;
  uint64_t hash; /* of the payload bytes */
  int oversize, nargs;
  size_t kernel_len;
} visit_t;

typedef struct {
  visit_t v[MAX_VISITS];
  int n;
  int calls;   /* visits made in this walk */
  int stop_at; /* the visit that stops (-1: none) */
  int cut_at;  /* the visit that cuts the batch short (-1: none) */
  int cut;     /* it did: no batch request may be visited after */
  int last_index;
} trace_t;

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static int visit(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  trace_t *t = arg;
  /* order: batch requests ascending, the own one last and once */
  if (t->last_index == -1) abort();
  if (index >= 0 && index != (t->last_index == -2 ? 0 : t->last_index + 1)) abort();
  size_t sum = 0;
  uint64_t h = 0xcbf29ce484222325ull;
  if (r->data.nparts < 0 || r->data.nparts > RDEV_WIRE_MAX_PARTS) abort();
  for (int i = 0; i < r->data.nparts; i++) {
    size_t k = GRPC_SLICE_LENGTH(r->data.parts[i]);
    h = fnv(h, GRPC_SLICE_START_PTR(r->data.parts[i]), k);
    sum += k;
  }
  if (sum != r->data.len) abort();
  if (r->data.oversize && r->data.nparts) abort();
  if (!r->data.oversize && r->data.len > RDEV_WIRE_MAX_CHUNK) abort();
  if (memchr(r->kernel, 0, sizeof r->kernel) == NULL) abort();
  if (strlen(r->kernel) > RDEV_WIRE_MAX_KERNEL_NAME) abort();
  if (!r->kernel_nul && r->kernel_len <= RDEV_WIRE_MAX_KERNEL_NAME && strlen(r->kernel) != r->kernel_len) abort();
  if (r->nargs < 0) abort();
  for (int i = 0; i < r->nargs && i < RDEV_WIRE_MAX_ARGS; i++)
    if (r->args[i].which_v > rdev_v1_Arg_f64_tag) abort();
  if (t->cut && index >= 0) abort(); /* a batch request visited after the batch was cut */
  if (t->calls == t->cut_at) {
    t->calls++;
    t->cut = 1;
    t->last_index = index;
    return RDEV_WIRE_CUT;
  }
  if (t->calls++ == t->stop_at) return RDEV_WIRE_STOP; /* not recorded: it runs again on resume */
  t->last_index = index;
  if (t->n < MAX_VISITS) {
    visit_t *v = &t->v[t->n++];
    memset(v, 0, sizeof *v); /* compared with memcmp */
    v->index = index;
    v->err = err != NULL;
    v->seq = r->q.seq;
    v->op = r->q.which_op;
    v->len = r->data.len;
    v->hash = h;
    v->oversize = r->data.oversize;
    v->nargs = r->nargs;
    v->kernel_len = r->kernel_len;
  }
  return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  grpc_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t k = data[0] % 16, at = 1;
  if (size < at + 2 * k + 1) return 0;
  size_t cuts[16];
  const uint8_t *msg = data + at + 2 * k + 1;
  size_t len = size - (at + 2 * k + 1);
  for (size_t i = 0; i < k; i++)
    cuts[i] = len ? ((size_t)data[at + 2 * i] | (size_t)data[at + 2 * i + 1] << 8) % (len + 1) : 0;
  int stop_first = data[at + 2 * k] == 255 ? -1 : data[at + 2 * k] % 8;
  int stop_next = 1 + data[at + 2 * k] % 3; /* a resumed walk first revisits where it stopped */
  for (size_t i = 1; i < k; i++)            /* sort */
    for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
      size_t c = cuts[j];
      cuts[j] = cuts[j - 1];
      cuts[j - 1] = c;
    }
  grpc_slice slices[17];
  size_t n = 0, from = 0;
  for (size_t i = 0; i <= k; i++) {
    size_t to = i < k ? cuts[i] : len;
    slices[n++] = grpc_slice_from_copied_buffer((const char *)msg + from, to - from);
    from = to;
  }
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(slices, n);
  for (size_t i = 0; i < n; i++) grpc_slice_unref(slices[i]);

  static trace_t whole, parts, cut;
  whole.n = whole.calls = 0;
  whole.stop_at = -1;
  whole.cut_at = -1;
  whole.last_index = -2;
  rdev_wire_walk_t w = {0};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, visit, &whole);
  if (w.stopped) abort();

  /* the same message, stopping at the chosen visit and resuming, again and again */
  parts.n = 0;
  parts.last_index = -2;
  parts.cut_at = -1;
  rdev_wire_walk_t pw = {0};
  for (int rounds = 0;; rounds++) {
    parts.calls = 0;
    parts.stop_at = rounds ? stop_next : stop_first;
    parts.last_index = pw.skip > 0 ? pw.skip - 1 : -2;
    rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &pw, visit, &parts);
    if (!pw.stopped) break;
    if (pw.seen < pw.skip || rounds > 100000) abort(); /* a resumed walk moves on */
    pw.skip = pw.seen;
  }
  if (parts.n != whole.n || memcmp(parts.v, whole.v, (size_t)whole.n * sizeof whole.v[0]) != 0) abort();

  /* cut at the chosen visit: the visits before it are the uninterrupted
   * walk's, and no batch request comes after it */
  cut.n = cut.calls = cut.cut = 0;
  cut.stop_at = -1;
  cut.cut_at = stop_first;
  cut.last_index = -2;
  rdev_wire_walk_t cw = {0};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &cw, visit, &cut);
  if (cw.stopped) abort();
  int before = stop_first < 0 || stop_first > whole.n ? whole.n : stop_first;
  if (cut.n < before || memcmp(cut.v, whole.v, (size_t)before * sizeof whole.v[0]) != 0) abort();
  grpc_byte_buffer_destroy(bb);
  return 0;
}
