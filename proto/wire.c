/*
 * proto/wire.c — nanopb over gRPC byte buffers (see rdev/wire.h), the
 * sending side: encoding writes the small fields with nanopb into one
 * slice and appends the payload slice behind a hand-written field header,
 * and a request's own op behind a hand-written seq (rdev_wire_encode_request:
 * nanopb walks only the op's fields, not Request's many oneof members, and
 * an op of scalars is wire_ops.c's, without its walk);
 * batches of encoded requests, the Launch
 * encode callbacks, the UTF-8 repair of reply strings, and the PEM file
 * reader both sides' TLS credentials use. Decoding is wire_decode.c's.
 */
#include "rdev/wire.h"

#include "wire_ops.h"

#include <grpc/byte_buffer_reader.h>
#include <pb_common.h>
#include <pb_encode.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool kernel_encode(pb_ostream_t *os, const pb_field_t *f, void *const *arg) {
  const rdev_wire_launch_src_t *src = *arg;
  return !src->kernel || !*src->kernel ||
         (pb_encode_tag_for_field(os, f) && pb_encode_string(os, (const pb_byte_t *)src->kernel, strlen(src->kernel)));
}

static bool args_encode(pb_ostream_t *os, const pb_field_t *f, void *const *arg) {
  const rdev_wire_launch_src_t *src = *arg;
  for (int i = 0; i < src->nargs; i++)
    if (!pb_encode_tag_for_field(os, f) || !pb_encode_submessage(os, rdev_v1_Arg_fields, &src->args[i])) return false;
  return true;
}

void rdev_wire_launch_encoder(rdev_v1_Launch *l, const rdev_wire_launch_src_t *src) {
  l->kernel.funcs.encode = kernel_encode;
  l->kernel.arg = (void *)src;
  l->args.funcs.encode = args_encode;
  l->args.arg = (void *)src;
}

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
  if (c == 0xED && s[1] > 0x9F) return 0; /* UTF-16 surrogates */
  if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
  if (c == 0xF4 && s[1] > 0x8F) return 0; /* past U+10FFFF */
  return len;
}

size_t rdev_wire_utf8_fix(char *s, size_t len) {
  unsigned char *u = (unsigned char *)s;
  size_t fixed = 0;
  for (size_t i = 0; i < len;) {
    size_t k = utf8_seq(u + i, len - i);
    if (k) {
      i += k;
    } else {
      u[i++] = '?';
      fixed++;
    }
  }
  return fixed;
}

grpc_byte_buffer *rdev_wire_encode(const pb_msgdesc_t *fields, const void *msg, const grpc_slice *payload) {
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
    n += wire_put_varint(p + n, ((uint64_t)RDEV_WIRE_PAYLOAD_FIELD << 3) | 2u);
    n += wire_put_varint(p + n, plen);
  }
  head = grpc_slice_sub_no_ref(head, 0, n);
  grpc_slice parts[2] = {head, payload ? *payload : grpc_empty_slice()};
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(parts, payload && plen ? 2 : 1);
  grpc_slice_unref(head);
  return bb;
}

size_t rdev_wire_encode_request(const rdev_v1_Request *req, uint8_t *buf, size_t cap) {
  if (cap < 40) return 0;
  size_t n = 0;
  if (req->seq) {
    n += wire_put_varint(buf + n, 1u << 3);
    n += wire_put_varint(buf + n, req->seq);
  }
  if (!req->which_op) return n;
  const wire_op_t *op = wire_op(req->which_op);
  if (!op) return 0;
  const void *msg = (const char *)req + op->offset;
  uint8_t body[WIRE_SCALARS_MAX];
  size_t size;
  bool scalars = wire_ops_encode(req->which_op, msg, body, &size); /* without nanopb's walk */
  if (!scalars && !pb_get_encoded_size(&size, op->desc, msg)) return 0;
  n += wire_put_varint(buf + n, ((uint64_t)req->which_op << 3) | 2u);
  n += wire_put_varint(buf + n, size);
  if (size > cap - n) return 0;
  if (scalars) {
    memcpy(buf + n, body, size);
    return n + size;
  }
  pb_ostream_t os = pb_ostream_from_buffer(buf + n, size);
  if (!pb_encode(&os, op->desc, msg)) return 0;
  return n + os.bytes_written;
}

size_t rdev_wire_batch_header(uint8_t *p, size_t len) {
  size_t n = wire_put_varint(p, ((uint64_t)RDEV_WIRE_BATCH_FIELD << 3) | 2u);
  return n + wire_put_varint(p + n, len);
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
    p += wire_put_varint(p, ((uint64_t)RDEV_WIRE_BATCH_FIELD << 3) | 2u);
    p += wire_put_varint(p, grpc_byte_buffer_length(msgs[i]));
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
