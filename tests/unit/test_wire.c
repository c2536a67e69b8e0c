/*
 * tests/unit/test_wire.c — the codec (proto/wire.c): the bound on a
 * request's fields that the message size limit is made of, the fast
 * request encoder against nanopb's own bytes, the walk over
 * a message and its batch (faults, limits, resuming), wrong wire types,
 * and the UTF-8 repair of reply strings.
 */
#include <check.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <stdint.h>
#include <stdlib.h>
#include <pb_encode.h>
#include <string.h>

#include "rdev/wire.h"

static size_t encoded_size(const rdev_v1_Request *q) {
  size_t n = 0;
  ck_assert(pb_get_encoded_size(&n, rdev_v1_Request_fields, q));
  return n;
}

/* Besides its fields, a request in a batch carries its element header
 * (tag + length varint) and, for a payload, the payload's field header
 * (2-byte tag + up to 3-byte length for 1 MiB). */
#define OVERHEAD (1 + 2 + 2 + 3)

START_TEST(test_largest_request_fits_the_field_bound) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.seq = UINT64_MAX;
  q.which_op = rdev_v1_Request_launch_tag;
  q.op.launch.stream = UINT64_MAX;
  q.op.launch.blocks = UINT32_MAX;
  char name[RDEV_WIRE_MAX_KERNEL_NAME + 1];
  memset(name, 'k', RDEV_WIRE_MAX_KERNEL_NAME);
  name[RDEV_WIRE_MAX_KERNEL_NAME] = '\0';
  rdev_v1_Arg args[RDEV_WIRE_MAX_ARGS];
  for (int i = 0; i < RDEV_WIRE_MAX_ARGS; i++) {
    args[i] = (rdev_v1_Arg)rdev_v1_Arg_init_zero;
    args[i].which_v = rdev_v1_Arg_ptr_tag;
    args[i].v.ptr = UINT64_MAX;
  }
  rdev_wire_launch_src_t src = {name, args, RDEV_WIRE_MAX_ARGS};
  rdev_wire_launch_encoder(&q.op.launch, &src);
  size_t launch = encoded_size(&q);
  ck_assert_uint_le(launch + OVERHEAD, RDEV_WIRE_MAX_REQUEST_FIELDS);

  rdev_v1_Request c = rdev_v1_Request_init_zero;
  c.seq = UINT64_MAX;
  c.which_op = rdev_v1_Request_copy_tag;
  c.op.copy = (rdev_v1_Copy){UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
  ck_assert_uint_le(encoded_size(&c) + OVERHEAD, launch + OVERHEAD);
  ck_assert_uint_eq(RDEV_WIRE_MAX_MESSAGE, 8454656u); /* the number rdev.proto states */
}
END_TEST

/* The bytes of q as rdev_wire_encode makes them, flattened into out. */
static size_t reference_bytes(const rdev_v1_Request *q, uint8_t *out, size_t cap) {
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, q, NULL);
  ck_assert_ptr_nonnull(bb);
  grpc_byte_buffer_reader rd;
  ck_assert(grpc_byte_buffer_reader_init(&rd, bb));
  grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
  size_t n = GRPC_SLICE_LENGTH(all);
  ck_assert_uint_le(n, cap);
  memcpy(out, GRPC_SLICE_START_PTR(all), n);
  grpc_slice_unref(all);
  grpc_byte_buffer_reader_destroy(&rd);
  grpc_byte_buffer_destroy(bb);
  return n;
}

static void assert_same_encoding(const rdev_v1_Request *q) {
  uint8_t want[RDEV_WIRE_MAX_REQUEST_FIELDS], got[RDEV_WIRE_MAX_REQUEST_FIELDS];
  size_t nw = reference_bytes(q, want, sizeof want);
  size_t ng = rdev_wire_encode_request(q, got, sizeof got);
  ck_assert_msg(ng == nw && !memcmp(got, want, nw), "op %d seq %llu: %zu bytes, want %zu", (int)q->which_op,
                (unsigned long long)q->seq, ng, nw);
  ck_assert_uint_eq(rdev_wire_encode_request(q, got, nw - 1 < 40 ? 39 : nw - 1), 0); /* does not fit: 0 */
}

START_TEST(test_fast_request_encoding_is_nanopbs) {
  /* every op, empty, with and without a seq */
  for (pb_size_t tag = rdev_v1_Request_malloc_tag; tag <= rdev_v1_Request_stream_abort_tag; tag++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = tag;
    assert_same_encoding(&q);
    q.seq = 300;
    assert_same_encoding(&q);
  }
  /* full fields: the largest Launch, a Copy, a Read asking for the bulk connection */
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.seq = UINT64_MAX;
  q.which_op = rdev_v1_Request_launch_tag;
  q.op.launch.stream = 77;
  q.op.launch.blocks = 3;
  rdev_v1_Arg args[2] = {rdev_v1_Arg_init_zero, rdev_v1_Arg_init_zero};
  args[0].which_v = rdev_v1_Arg_ptr_tag;
  args[0].v.ptr = UINT64_MAX;
  args[1].which_v = rdev_v1_Arg_i32_tag;
  args[1].v.i32 = -5;
  rdev_wire_launch_src_t src = {"add_vectors", args, 2};
  rdev_wire_launch_encoder(&q.op.launch, &src);
  assert_same_encoding(&q);
  rdev_v1_Request c = rdev_v1_Request_init_zero;
  c.seq = 1;
  c.which_op = rdev_v1_Request_copy_tag;
  c.op.copy = (rdev_v1_Copy){UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX};
  assert_same_encoding(&c);
  rdev_v1_Request r = rdev_v1_Request_init_zero;
  r.seq = 12345678;
  r.which_op = rdev_v1_Request_read_tag;
  r.op.read = (rdev_v1_Read){.stream = 9, .addr = 1ull << 40, .count = 1 << 20, .dest_max = 1 << 21, .bulk = true};
  assert_same_encoding(&r);
  /* an op outside the oneof cannot be encoded */
  r.which_op = RDEV_WIRE_BATCH_FIELD;
  uint8_t buf[64];
  ck_assert_uint_eq(rdev_wire_encode_request(&r, buf, sizeof buf), 0);
}
END_TEST

/* ---- walking messages ---- */

typedef struct {
  int n;
  int index[16];
  uint64_t seq[16];
  int err[16];
  size_t len[16];
  int oversize[16];
  int stop_at; /* -1: never */
} seen_t;

static int record(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  seen_t *s = arg;
  if (s->n == s->stop_at) {
    s->stop_at = -1;
    return 1;
  }
  s->index[s->n] = index;
  s->seq[s->n] = r->q.seq;
  s->err[s->n] = err != NULL;
  s->len[s->n] = r->data.len;
  s->oversize[s->n] = r->data.oversize;
  s->n++;
  return 0;
}

static grpc_byte_buffer *bb_of(const uint8_t *p, size_t n) {
  grpc_slice s = grpc_slice_from_copied_buffer((const char *)p, n);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
  grpc_slice_unref(s);
  return bb;
}

static grpc_byte_buffer *encode(uint64_t seq, pb_size_t op, const char *payload, size_t len) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.seq = seq;
  q.which_op = op;
  grpc_slice pl = grpc_slice_from_copied_buffer(payload ? payload : "", len);
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, &q, payload ? &pl : NULL);
  grpc_slice_unref(pl);
  return bb;
}

START_TEST(test_payload_with_a_varint_wire_type_is_malformed_not_a_crash) {
  grpc_init();
  /* seq = 5, then field 100 as a varint: what crashed rdevd */
  const uint8_t msg[] = {0x08, 0x05, 0xa0, 0x06, 0x07};
  grpc_byte_buffer *bb = bb_of(msg, sizeof msg);
  seen_t s = {.stop_at = -1};
  rdev_wire_walk_t w = {0};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, record, &s);
  ck_assert_int_eq(s.n, 1);
  ck_assert_int_eq(s.index[0], -1);
  ck_assert_int_eq(s.err[0], 1);
  ck_assert_uint_eq(s.seq[0], 5);
  grpc_byte_buffer_destroy(bb);
  /* fixed32 likewise */
  const uint8_t msg2[] = {0x08, 0x05, 0xa5, 0x06, 1, 2, 3, 4};
  bb = bb_of(msg2, sizeof msg2);
  s = (seen_t){.stop_at = -1};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, record, &s);
  ck_assert_int_eq(s.n, 1);
  ck_assert_int_eq(s.err[0], 1);
  grpc_byte_buffer_destroy(bb);
  grpc_shutdown();
}
END_TEST

START_TEST(test_batch_with_a_bad_and_an_oversized_request_goes_on) {
  grpc_init();
  char *big = calloc(1, RDEV_WIRE_MAX_CHUNK + 1);
  grpc_byte_buffer *parts[4] = {
      encode(1, rdev_v1_Request_mem_info_tag, NULL, 0),
      encode(2, rdev_v1_Request_write_tag, big, RDEV_WIRE_MAX_CHUNK + 1),
      bb_of((const uint8_t[]){0x08, 0x03, 0xa0, 0x06, 0x01}, 5), /* seq 3, data as a varint */
      encode(4, rdev_v1_Request_write_tag, "abc", 3),
  };
  grpc_byte_buffer *bb = rdev_wire_batch(parts, 4);
  seen_t s = {.stop_at = -1};
  rdev_wire_walk_t w = {0};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, record, &s);
  ck_assert_int_eq(s.n, 4); /* a batch alone: no visit of its own */
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(s.index[i], i);
    ck_assert_uint_eq(s.seq[i], (uint64_t)i + 1);
  }
  ck_assert_int_eq(s.err[1], 0);
  ck_assert_int_eq(s.oversize[1], 1);
  ck_assert_uint_eq(s.len[1], 0);
  ck_assert_int_eq(s.err[2], 1);
  ck_assert_int_eq(s.err[3], 0);
  ck_assert_uint_eq(s.len[3], 3);

  /* stopped at the third visit and resumed where it stopped: the same visits */
  seen_t r = {.stop_at = 2};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, record, &r);
  ck_assert_int_eq(w.stopped, 1);
  ck_assert_int_eq(w.seen, 2);
  w.skip = w.seen;
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, record, &r);
  ck_assert_int_eq(w.stopped, 0);
  ck_assert_int_eq(r.n, 4);
  ck_assert_mem_eq(r.seq, s.seq, sizeof s.seq);
  for (int i = 0; i < 4; i++) grpc_byte_buffer_destroy(parts[i]);
  grpc_byte_buffer_destroy(bb);
  free(big);
  grpc_shutdown();
}
END_TEST

START_TEST(test_nested_batch_is_a_malformed_request) {
  grpc_init();
  /* batch { seq 7, batch { } } */
  /* field 30 (0xf2 0x01) of 5 bytes: seq 7 and an empty nested batch */
  const uint8_t msg[] = {0xf2, 0x01, 0x05, 0x08, 0x07, 0xf2, 0x01, 0x00};
  grpc_byte_buffer *bb = bb_of(msg, sizeof msg);
  seen_t s = {.stop_at = -1};
  rdev_wire_walk_t w = {0};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, record, &s);
  ck_assert_int_eq(s.n, 1);
  ck_assert_int_eq(s.index[0], 0);
  ck_assert_int_eq(s.err[0], 1);
  ck_assert_uint_eq(s.seq[0], 7);
  grpc_byte_buffer_destroy(bb);
  grpc_shutdown();
}
END_TEST

START_TEST(test_utf8_fix_replaces_only_invalid_bytes) {
  char ok[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  ck_assert_uint_eq(rdev_wire_utf8_fix(ok, strlen(ok)), 0);
  char bad[] =
      "a\xff"
      "b\xc3"
      "c\xed\xa0\x80"
      "d\xc0\xaf"
      "\xf4\x90\x80\x80";
  size_t n = rdev_wire_utf8_fix(bad, strlen(bad));
  ck_assert_str_eq(bad, "a?b?c???d??????");
  ck_assert_uint_eq(n, 11);
  char cut[] = "\xe2\x82"; /* a character cut short, as snprintf may leave it */
  ck_assert_uint_eq(rdev_wire_utf8_fix(cut, 2), 2);
}
END_TEST

int main(void) {
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("wire");
  tcase_add_test(tc, test_largest_request_fits_the_field_bound);
  tcase_add_test(tc, test_fast_request_encoding_is_nanopbs);
  tcase_add_test(tc, test_payload_with_a_varint_wire_type_is_malformed_not_a_crash);
  tcase_add_test(tc, test_batch_with_a_bad_and_an_oversized_request_goes_on);
  tcase_add_test(tc, test_nested_batch_is_a_malformed_request);
  tcase_add_test(tc, test_utf8_fix_replaces_only_invalid_bytes);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
