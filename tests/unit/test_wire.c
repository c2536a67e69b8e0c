/*
 * tests/unit/test_wire.c — the codec (proto/wire.c): the bound on a
 * request's fields that the message size limit is made of, the fast
 * request encoder against nanopb's own bytes (and its decoder, on random
 * scalar requests whole and damaged, and batches split across slices), the walk over
 * a message and its batch (faults, limits, resuming), wrong wire types,
 * counting a field's entries before decoding, and the UTF-8 repair of
 * reply strings.
 */
#include <check.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <stdint.h>
#include <stdlib.h>
#include <pb_common.h>
#include <pb_decode.h>
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

/* Fills every scalar field of q's op with a value of random size and sign
 * (zero a third of the time: proto3 leaves it out). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void fill_random(rdev_v1_Request *q) {
  pb_field_iter_t op;
  ck_assert(pb_field_iter_begin(&op, rdev_v1_Request_fields, q));
  while (op.tag != q->which_op) ck_assert(pb_field_iter_next(&op));
  pb_field_iter_t it;
  if (!pb_field_iter_begin(&it, op.submsg_desc, op.pData)) return;
  do {
    if (PB_ATYPE(it.type) != PB_ATYPE_STATIC || PB_HTYPE(it.type) != PB_HTYPE_SINGULAR) continue;
    uint64_t v = rng() % 3 ? rng() >> (rng() % 64) : 0;
    if (rng() % 4 == 0) v = (uint64_t) - (int64_t)(v & 0xffff); /* negative */
    if (PB_LTYPE(it.type) == PB_LTYPE_BOOL)
      *(bool *)it.pData = v & 1;
    else if (it.data_size == 8)
      memcpy(it.pData, &v, 8);
    else if (it.data_size == 4)
      memcpy(it.pData, &(uint32_t){(uint32_t)v}, 4);
  } while (pb_field_iter_next(&it));
}

START_TEST(test_fast_encoding_of_random_scalars_is_nanopbs) {
  for (int i = 0; i < 20000; i++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = (pb_size_t)(rdev_v1_Request_malloc_tag + rng() % (rdev_v1_Request_stream_abort_tag - 1));
    if (q.which_op == rdev_v1_Request_launch_tag) continue; /* callbacks: nanopb's alone */
    q.seq = rng() % 2 ? rng() >> (rng() % 64) : 0;
    memset(&q.op, 0, sizeof q.op);
    fill_random(&q);
    assert_same_encoding(&q);
  }
}
END_TEST

typedef struct {
  int n, err;
  rdev_v1_Request q;
} one_t;

typedef struct {
  int n;
  const char *err; /* a static string of the decoder's */
} last_err_t;

static int keep_err(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  last_err_t *l = arg;
  (void)r;
  if (index == 0) {
    l->n++;
    l->err = err;
  }
  return 0;
}

static int keep_one(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  one_t *o = arg;
  if (index == 0) {
    o->n++;
    o->err = err != NULL;
    o->q = r->q;
  }
  return 0;
}

/* What the walk makes of a batch inside a batch request: an error. */
static bool nested_batch(pb_istream_t *stream, const pb_field_t *field, void **arg) { return false; }

/* ... and of its payload: bytes, where its wire type is bytes (nanopb then
 * reads it from the message; a scalar it hands over from its own copy). */
struct span {
  const uint8_t *from, *to;
};
static bool payload_bytes(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  const struct span *m = *arg;
  const uint8_t *at = stream->state;
  return at >= m->from && at <= m->to && pb_read(stream, NULL, stream->bytes_left);
}

/* A batch request decodes as nanopb decodes it alone, whether it took the
 * straight path (wire_ops.c) or nanopb's: random scalar requests, then
 * their bytes damaged (a byte changed, cut short, a byte added). */
/* Walks the batch request of n bytes at b and checks it decoded as nanopb
 * decodes it alone. */
static void assert_decodes_as_nanopb(const uint8_t *b, size_t n, int what) {
  rdev_v1_Request want = rdev_v1_Request_init_zero;
  memset(&want.op, 0, sizeof want.op);
  want.batch.funcs.decode = nested_batch; /* as the walk takes them */
  want.data.funcs.decode = payload_bytes;
  want.data.arg = &(struct span){b, b + n};
  pb_istream_t is = pb_istream_from_buffer(b, n);
  bool ok = pb_decode(&is, rdev_v1_Request_fields, &want);
  grpc_byte_buffer *one = bb_of(b, n), *bb = rdev_wire_batch(&one, 1);
  one_t got = {0};
  rdev_wire_walk_t w = {0};
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, keep_one, &got);
  ck_assert_int_eq(got.n, 1);
  if (ok && want.which_op == rdev_v1_Request_launch_tag) {              /* damage made a Launch: the walk's callbacks */
    ck_assert(got.err || got.q.which_op == rdev_v1_Request_launch_tag); /* check more than nanopb's skipping */
    grpc_byte_buffer_destroy(one);
    grpc_byte_buffer_destroy(bb);
    return;
  }
  ck_assert_msg(got.err == !ok, "case %d: error %d, nanopb's ok %d", what, got.err, ok);
  if (ok) {
    ck_assert_uint_eq(got.q.seq, want.seq);
    ck_assert_uint_eq(got.q.which_op, want.which_op);
    if (want.which_op && want.which_op != rdev_v1_Request_launch_tag) { /* the op's struct, byte for byte */
      pb_field_iter_t it;
      ck_assert(pb_field_iter_begin(&it, rdev_v1_Request_fields, &want));
      while (it.tag != want.which_op) ck_assert(pb_field_iter_next(&it));
      size_t off = (size_t)((char *)it.pData - (char *)&want);
      ck_assert_mem_eq((char *)&got.q + off, (char *)&want + off, it.data_size);
    }
  }
  grpc_byte_buffer_destroy(one);
  grpc_byte_buffer_destroy(bb);
}

START_TEST(test_batch_requests_decode_as_nanopb_decodes_them) {
  grpc_init();
  for (int i = 0; i < 20000; i++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = (pb_size_t)(rdev_v1_Request_malloc_tag + rng() % (rdev_v1_Request_stream_abort_tag - 1));
    if (q.which_op == rdev_v1_Request_launch_tag) continue;
    q.seq = rng() % 2 ? rng() >> (rng() % 64) : 0;
    memset(&q.op, 0, sizeof q.op);
    fill_random(&q);
    uint8_t b[RDEV_WIRE_MAX_REQUEST_FIELDS + 1];
    size_t n = rdev_wire_encode_request(&q, b, sizeof b - 1);
    ck_assert_uint_gt(n, 0);
    switch (i % 4) {
      case 1: b[rng() % n] = (uint8_t)rng(); break;
      case 2: n = rng() % n; break;
      case 3: b[n++] = (uint8_t)rng(); break;
      default: break; /* intact */
    }
    assert_decodes_as_nanopb(b, n, i % 4);
  }
  /* values beyond their field: Memset.value (int32) as the 10-byte varint
   * of -2^40 and of INT32_MIN, Read.host_region (uint32) 2^32, Read.bulk
   * (bool) 2 and 2^35, and an 11-byte varint */
  /* a Launch whose kernel name is a varint: malformed, said so */
  {
    const uint8_t launch[] = {0x08, 0x8b, 0xc1, 0x93, 0x22, 0x62, 0x06, 0x08, 0xbc, 0x92, 0x01, 0x10, 0x01};
    grpc_byte_buffer *one = bb_of(launch, sizeof launch), *bb = rdev_wire_batch(&one, 1);
    last_err_t le = {0};
    rdev_wire_walk_t w = {0};
    rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, keep_err, &le);
    ck_assert_int_eq(le.n, 1);
    ck_assert_ptr_nonnull(le.err);
    ck_assert_str_ne(le.err, "(none)");
    grpc_byte_buffer_destroy(one);
    grpc_byte_buffer_destroy(bb);
  }
  const uint8_t cases[][16] = {
      {13, 0x5a, 11, 0x20, 0x80, 0x80, 0x80, 0x80, 0x80, 0xf0, 0xff, 0xff, 0xff, 0x01},
      {13, 0x5a, 11, 0x20, 0x80, 0x80, 0x80, 0x80, 0xf8, 0xff, 0xff, 0xff, 0xff, 0x01},
      {8, 0x4a, 6, 0x38, 0x80, 0x80, 0x80, 0x80, 0x10},
      {4, 0x4a, 2, 0x30, 0x02},
      {9, 0x4a, 7, 0x30, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
      {8, 0x4a, 2, 0x30, 0x01, 0x5a, 2, 0x20, 0x07}, /* a Read, then a Memset: the last op wins */
      {14, 0x5a, 12, 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    assert_decodes_as_nanopb(cases[c] + 1, cases[c][0], 10 + (int)c);
  grpc_shutdown();
}
END_TEST

typedef struct {
  int n;
  int err[8];
  rdev_v1_Request q[8];
} many_t;

static int keep_many(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  many_t *m = arg;
  if (index >= 0 && m->n < 8) {
    m->err[m->n] = err != NULL;
    m->q[m->n++] = r->q;
  }
  return 0;
}

/* Several requests in one batch, its bytes in two slices cut anywhere: an
 * element across the cut goes to nanopb, the others straight; each one
 * decodes as it does alone (each from a fresh request, nothing carried
 * over from the one before). */
START_TEST(test_batch_split_across_slices_decodes_each_request_alone) {
  grpc_init();
  for (int i = 0; i < 2000; i++) {
    enum { K = 4 };
    uint8_t msg[K * (RDEV_WIRE_MAX_REQUEST_FIELDS + 20)];
    size_t len = 0;
    rdev_v1_Request want[K];
    for (int k = 0; k < K; k++) {
      rdev_v1_Request q = rdev_v1_Request_init_zero;
      q.which_op = k % 2 ? rdev_v1_Request_memset_tag : rdev_v1_Request_copy_tag;
      q.seq = rng() >> (rng() % 64);
      memset(&q.op, 0, sizeof q.op);
      fill_random(&q);
      uint8_t b[RDEV_WIRE_MAX_REQUEST_FIELDS];
      size_t n = rdev_wire_encode_request(&q, b, sizeof b);
      ck_assert_uint_gt(n, 0);
      len += rdev_wire_batch_header(msg + len, n);
      memcpy(msg + len, b, n);
      len += n;
      want[k] = q;
    }
    size_t cut = 1 + rng() % (len - 1);
    grpc_slice parts[2] = {grpc_slice_from_copied_buffer((const char *)msg, cut),
                           grpc_slice_from_copied_buffer((const char *)msg + cut, len - cut)};
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(parts, 2);
    grpc_slice_unref(parts[0]);
    grpc_slice_unref(parts[1]);
    many_t got = {0};
    rdev_wire_walk_t w = {0};
    rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &w, keep_many, &got);
    ck_assert_int_eq(got.n, K);
    for (int k = 0; k < K; k++) {
      ck_assert_int_eq(got.err[k], 0);
      ck_assert_uint_eq(got.q[k].seq, want[k].seq);
      ck_assert_uint_eq(got.q[k].which_op, want[k].which_op);
      if (want[k].which_op == rdev_v1_Request_memset_tag)
        ck_assert_mem_eq(&got.q[k].op.memset, &want[k].op.memset, sizeof want[k].op.memset);
      else
        ck_assert_mem_eq(&got.q[k].op.copy, &want[k].op.copy, sizeof want[k].op.copy);
    }
    grpc_byte_buffer_destroy(bb);
  }
  grpc_shutdown();
}
END_TEST

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

/* A message of two slices, split at cut. */
static grpc_byte_buffer *bb_of_two(const uint8_t *p, size_t n, size_t cut) {
  grpc_slice s[2] = {grpc_slice_from_copied_buffer((const char *)p, cut),
                     grpc_slice_from_copied_buffer((const char *)p + cut, n - cut)};
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(s, 2);
  grpc_slice_unref(s[0]);
  grpc_slice_unref(s[1]);
  return bb;
}

START_TEST(test_count_field_counts_without_decoding_and_stops_past_max) {
  grpc_init();
  /* field 1 (a message) three times, between them field 2 as a varint and
   * field 3 as bytes holding field 1's tag (not counted: not top-level) */
  const uint8_t msg[] = {0x0a, 0x00, 0x10, 0x81, 0x01, 0x0a, 0x02, 0x08, 0x05, 0x1a, 0x02, 0x0a, 0x00, 0x0a, 0x00};
  size_t n = 99;
  const char *err = NULL;
  for (size_t cut = 1; cut < sizeof msg; cut++) {
    grpc_byte_buffer *bb = bb_of_two(msg, sizeof msg, cut);
    ck_assert(rdev_wire_count_field(bb, 1, 128, &n, &err));
    ck_assert_uint_eq(n, 3);
    ck_assert(rdev_wire_count_field(bb, 3, 128, &n, &err));
    ck_assert_uint_eq(n, 1);
    ck_assert(rdev_wire_count_field(bb, 1, 1, &n, &err)); /* stops at the second */
    ck_assert_uint_eq(n, 2);
    grpc_byte_buffer_destroy(bb);
  }
  /* an empty message holds none */
  grpc_byte_buffer *bb = bb_of(msg, 0);
  ck_assert(rdev_wire_count_field(bb, 1, 128, &n, &err));
  ck_assert_uint_eq(n, 0);
  grpc_byte_buffer_destroy(bb);
  /* a length past the end, a zero tag, a cut varint: malformed */
  const uint8_t past[] = {0x0a, 0x00, 0x0a, 0x05, 0x00}, zero[] = {0x0a, 0x00, 0x00}, cut[] = {0x0a, 0x00, 0x10, 0x80};
  const uint8_t *bad[] = {past, zero, cut};
  size_t len[] = {sizeof past, sizeof zero, sizeof cut};
  for (int i = 0; i < 3; i++) {
    err = NULL;
    bb = bb_of(bad[i], len[i]);
    ck_assert(!rdev_wire_count_field(bb, 1, 128, &n, &err));
    ck_assert_ptr_nonnull(err);
    ck_assert_uint_le(n, 2);
    grpc_byte_buffer_destroy(bb);
  }
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
  tcase_set_timeout(tc, 60); /* 20000-case loops: seconds under ASan on 2 busy cores */
  tcase_add_test(tc, test_largest_request_fits_the_field_bound);
  tcase_add_test(tc, test_fast_request_encoding_is_nanopbs);
  tcase_add_test(tc, test_fast_encoding_of_random_scalars_is_nanopbs);
  tcase_add_test(tc, test_batch_requests_decode_as_nanopb_decodes_them);
  tcase_add_test(tc, test_batch_split_across_slices_decodes_each_request_alone);
  tcase_add_test(tc, test_payload_with_a_varint_wire_type_is_malformed_not_a_crash);
  tcase_add_test(tc, test_batch_with_a_bad_and_an_oversized_request_goes_on);
  tcase_add_test(tc, test_nested_batch_is_a_malformed_request);
  tcase_add_test(tc, test_count_field_counts_without_decoding_and_stops_past_max);
  tcase_add_test(tc, test_utf8_fix_replaces_only_invalid_bytes);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
