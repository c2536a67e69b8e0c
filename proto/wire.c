/*
 * proto/wire.c — nanopb over gRPC byte buffers (see rdev/wire.h). Decoding
 * walks the byte buffer's slices with a pb_istream_t; encoding writes the
 * small fields with nanopb into one slice and appends the payload slice
 * behind a hand-written field header, the only hand-written encoding.
 * Also the PEM file reader both sides' TLS credentials use.
 */
#include "rdev/wire.h"

#include <grpc/byte_buffer_reader.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  grpc_byte_buffer_reader reader;
  grpc_slice cur;
  size_t pos;
  bool have;
} slice_reader_t;

static bool slices_read(pb_istream_t *stream, pb_byte_t *buf, size_t count) {
  slice_reader_t *r = stream->state;
  while (count > 0) {
    if (!r->have || r->pos == GRPC_SLICE_LENGTH(r->cur)) {
      if (r->have) grpc_slice_unref(r->cur);
      r->have = grpc_byte_buffer_reader_next(&r->reader, &r->cur) != 0;
      r->pos = 0;
      if (!r->have) return false;
      continue;
    }
    size_t n = GRPC_SLICE_LENGTH(r->cur) - r->pos;
    if (n > count) n = count;
    if (buf) {
      memcpy(buf, GRPC_SLICE_START_PTR(r->cur) + r->pos, n);
      buf += n;
    }
    r->pos += n;
    count -= n;
  }
  return true;
}

bool rdev_wire_decode(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char **err) {
  slice_reader_t r = {0};
  if (!bb || !grpc_byte_buffer_reader_init(&r.reader, bb)) {
    if (err) *err = "unreadable message";
    return false;
  }
  pb_istream_t is = {slices_read, &r, grpc_byte_buffer_length(bb), NULL};
  bool ok = pb_decode(&is, fields, msg);
  if (!ok && err) *err = PB_GET_ERROR(&is);
  if (r.have) grpc_slice_unref(r.cur);
  grpc_byte_buffer_reader_destroy(&r.reader);
  return ok;
}

static bool bytes_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_bytes_t *b = *arg;
  size_t n = stream->bytes_left;
  if (n > b->max) b->oversize = 1;
  if (b->data || n > b->max) return false; /* repeated or oversized payload */
  b->data = malloc(n ? n : 1);
  if (!b->data) return false;
  b->len = n;
  return pb_read(stream, b->data, n);
}

void rdev_wire_bytes_decoder(pb_callback_t *field, rdev_wire_bytes_t *b) {
  field->funcs.decode = bytes_decode;
  field->arg = b;
}

/* Takes references to the next stream->bytes_left bytes of the slices. */
static bool payload_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_payload_t *p = *arg;
  slice_reader_t *r = stream->state;
  size_t n = stream->bytes_left;
  if (n > p->max) p->oversize = 1;
  if (p->nparts || n > p->max) return false; /* repeated or oversized payload */
  p->len = n;
  while (n > 0) {
    if (!r->have || r->pos == GRPC_SLICE_LENGTH(r->cur)) {
      if (r->have) grpc_slice_unref(r->cur);
      r->have = grpc_byte_buffer_reader_next(&r->reader, &r->cur) != 0;
      r->pos = 0;
      if (!r->have) return false;
      continue;
    }
    if (p->nparts == RDEV_WIRE_MAX_PARTS - 1) { /* the rest, copied into one last slice */
      grpc_slice rest = grpc_slice_malloc(n);
      if (!pb_read(stream, GRPC_SLICE_START_PTR(rest), n)) {
        grpc_slice_unref(rest);
        return false;
      }
      p->parts[p->nparts++] = rest;
      return true;
    }
    size_t k = GRPC_SLICE_LENGTH(r->cur) - r->pos;
    if (k > n) k = n;
    p->parts[p->nparts++] = grpc_slice_sub(r->cur, r->pos, r->pos + k);
    r->pos += k;
    n -= k;
    stream->bytes_left -= k;
  }
  return true;
}

void rdev_wire_payload_decoder(pb_callback_t *field, rdev_wire_payload_t *p) {
  field->funcs.decode = payload_decode;
  field->arg = p;
}

void rdev_wire_payload_release(rdev_wire_payload_t *p) {
  for (int i = 0; i < p->nparts; i++) {
    /* One received buffer may hold pieces of two requests, released on two
     * threads; its last release frees it. gRPC's refcount orders that, out
     * of ThreadSanitizer's sight: say so (acquire and release, as the
     * refcount's atomic does). */
    if (p->parts[i].refcount) {
      RDEV_HANDOFF_GIVE(p->parts[i].refcount);
      RDEV_HANDOFF_TAKE(p->parts[i].refcount);
    }
    grpc_slice_unref(p->parts[i]);
  }
  p->nparts = 0;
  p->len = 0;
}

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  do {
    p[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) p[n] |= 0x80;
    n++;
  } while (v);
  return n;
}

grpc_byte_buffer *rdev_wire_encode(const pb_msgdesc_t *fields, const void *msg,
                                   const grpc_slice *payload) {
  size_t size;
  if (!pb_get_encoded_size(&size, fields, msg)) return NULL;
  size_t plen = payload ? GRPC_SLICE_LENGTH(*payload) : 0;
  grpc_slice head = grpc_slice_malloc(size + (payload ? 20 : 0));
  uint8_t *p = GRPC_SLICE_START_PTR(head);
  pb_ostream_t os = pb_ostream_from_buffer(p, size);
  if (!pb_encode(&os, fields, msg)) {
    grpc_slice_unref(head);
    return NULL;
  }
  size_t n = os.bytes_written;
  if (payload) {
    n += put_varint(p + n, ((uint64_t)RDEV_WIRE_PAYLOAD_FIELD << 3) | 2u);
    n += put_varint(p + n, plen);
  }
  head = grpc_slice_sub_no_ref(head, 0, n);
  grpc_slice parts[2] = {head, payload ? *payload : grpc_empty_slice()};
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(parts, payload && plen ? 2 : 1);
  grpc_slice_unref(head);
  return bb;
}

grpc_byte_buffer *rdev_wire_batch(grpc_byte_buffer *const *msgs, size_t n) {
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += 2 * 10 + grpc_byte_buffer_length(msgs[i]);
  grpc_slice out = grpc_slice_malloc(total);
  uint8_t *p = GRPC_SLICE_START_PTR(out), *start = p;
  for (size_t i = 0; i < n; i++) {
    grpc_byte_buffer_reader rd;
    if (!grpc_byte_buffer_reader_init(&rd, msgs[i])) {
      grpc_slice_unref(out);
      return NULL;
    }
    p += put_varint(p, ((uint64_t)RDEV_WIRE_BATCH_FIELD << 3) | 2u);
    p += put_varint(p, grpc_byte_buffer_length(msgs[i]));
    grpc_slice sl;
    while (grpc_byte_buffer_reader_next(&rd, &sl)) {
      memcpy(p, GRPC_SLICE_START_PTR(sl), GRPC_SLICE_LENGTH(sl));
      p += GRPC_SLICE_LENGTH(sl);
      grpc_slice_unref(sl);
    }
    grpc_byte_buffer_reader_destroy(&rd);
  }
  grpc_slice used = grpc_slice_sub_no_ref(out, 0, (size_t)(p - start));
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&used, 1);
  grpc_slice_unref(out);
  return bb;
}

char *rdev_wire_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char *b = realloc(buf, cap);
      if (!b) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = b;
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (buf) buf[len] = '\0';
  return buf;
}
