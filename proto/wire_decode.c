/*
 * proto/wire_decode.c — the receiving side of the codec (rdev/wire.h):
 * decoding walks the byte buffer's slices with a pb_istream_t, so a
 * message is never flattened; payloads are taken as references to the
 * received slices (zero copy) or copied into memory of their own; a
 * field's entries can be counted before decoding (rdev_wire_count_field). Also
 * the walk over a received Request message and its batch (what rdevd
 * runs, in order, fault by fault), with the Launch decode callbacks.
 */
#include <grpc/byte_buffer_reader.h>
#include <pb_common.h>
#include <pb_decode.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/wire.h"
#include "wire_ops.h"

typedef struct {
  grpc_byte_buffer_reader reader;
  grpc_slice cur;
  size_t pos;  /* in cur */
  size_t base; /* bytes of the message before cur */
  bool have;
} slice_reader_t;

/* Makes r->cur a slice with bytes left to read; false at the end. */
static bool slices_next(slice_reader_t *r) {
  while (!r->have || r->pos == GRPC_SLICE_LENGTH(r->cur)) {
    if (r->have) {
      r->base += GRPC_SLICE_LENGTH(r->cur);
      grpc_slice_unref(r->cur);
    }
    r->have = grpc_byte_buffer_reader_next(&r->reader, &r->cur) != 0;
    r->pos = 0;
    if (!r->have) return false;
  }
  return true;
}

static bool slices_read(pb_istream_t *stream, pb_byte_t *buf, size_t count) {
  slice_reader_t *r = stream->state;
  while (count > 0) {
    if (!slices_next(r)) return false;
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

bool rdev_wire_is_bytes(const pb_istream_t *stream) { return stream->callback == slices_read; }

/* Where the reader stands in the message. */
static size_t slices_tell(const pb_istream_t *stream) {
  const slice_reader_t *r = stream->state;
  return r->base + (r->have ? r->pos : 0);
}

/* Moves stream, a substream that ends at byte `end` of the message, to its
 * end, whatever a failed decode left it at: nanopb counts a nested field's
 * bytes as read when it starts on it, so after a fault inside one, the
 * substream's count and the reader disagree. */
static bool slices_skip_to(pb_istream_t *stream, size_t end) {
  size_t at = slices_tell(stream);
  if (at > end) return false;
  stream->bytes_left = end - at;
  return pb_read(stream, NULL, end - at);
}

/* Starts r on bb and *is reading it from the start; false (with *err)
 * when bb cannot be read. reader_close ends it. */
static bool reader_open(slice_reader_t *r, grpc_byte_buffer *bb, pb_istream_t *is, const char **err) {
  memset(r, 0, sizeof *r);
  if (!bb || !grpc_byte_buffer_reader_init(&r->reader, bb)) {
    if (err) *err = "unreadable message";
    return false;
  }
  *is = (pb_istream_t){slices_read, r, grpc_byte_buffer_length(bb), NULL};
  return true;
}

static void reader_close(slice_reader_t *r) {
  if (r->have) grpc_slice_unref(r->cur);
  grpc_byte_buffer_reader_destroy(&r->reader);
}

static bool decode_with(slice_reader_t *r, grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg,
                        const char **err) {
  pb_istream_t is;
  if (!reader_open(r, bb, &is, err)) return false;
  bool ok = pb_decode(&is, fields, msg);
  if (!ok && err) *err = PB_GET_ERROR(&is);
  reader_close(r);
  return ok;
}

bool rdev_wire_decode(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char **err) {
  slice_reader_t r;
  return decode_with(&r, bb, fields, msg, err);
}

/* ---- strings without NUL ---------------------------------------------------- */

/* A message struct's stand-in for the field iterator, which the walk below
 * asks only for descriptors: zeroes, larger than any message struct (nanopb
 * with a 16-bit pb_size_t keeps them under 64 KiB). */
static max_align_t k_no_message[(1u << 16) / sizeof(max_align_t)];

static bool no_nul(pb_istream_t *s) {
  uint8_t buf[256];
  while (s->bytes_left) {
    size_t n = s->bytes_left < sizeof buf ? s->bytes_left : sizeof buf;
    if (!pb_read(s, buf, n) || memchr(buf, 0, n)) return false;
  }
  return true;
}

/* Whether no string field of the message on s (of type desc), nested ones
 * included, holds a NUL byte. */
static bool strings_walk(pb_istream_t *s, const pb_msgdesc_t *desc, int depth) {
  pb_field_iter_t it;
  bool fields = pb_field_iter_begin_const(&it, desc, k_no_message);
  pb_wire_type_t wt;
  uint32_t tag;
  bool eof;
  while (pb_decode_tag(s, &wt, &tag, &eof)) {
    if (fields && wt == PB_WT_STRING && pb_field_iter_find(&it, tag) &&
        (PB_LTYPE(it.type) == PB_LTYPE_STRING || (PB_LTYPE_IS_SUBMSG(it.type) && depth < 16))) {
      pb_istream_t sub;
      if (!pb_make_string_substream(s, &sub)) return false;
      bool ok = PB_LTYPE(it.type) == PB_LTYPE_STRING ? no_nul(&sub) : strings_walk(&sub, it.submsg_desc, depth + 1);
      if (!pb_close_string_substream(s, &sub) || !ok) return false;
      continue;
    }
    if (!pb_skip_field(s, wt)) return false;
  }
  return eof;
}

bool rdev_wire_decode_text(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char **err) {
  slice_reader_t r;
  pb_istream_t is;
  if (!decode_with(&r, bb, fields, msg, err) || !reader_open(&r, bb, &is, err)) return false;
  bool ok = strings_walk(&is, fields, 0);
  reader_close(&r);
  if (!ok && err) *err = "a string field holds a NUL byte";
  return ok;
}

bool rdev_wire_count_field(grpc_byte_buffer *bb, uint32_t field, size_t max, size_t *count, const char **err) {
  slice_reader_t r;
  pb_istream_t is, *s = &is;
  *count = 0;
  if (!reader_open(&r, bb, &is, err)) return false;
  bool ok = true;
  while (ok && s->bytes_left > 0 && *count <= max) {
    pb_wire_type_t type;
    uint32_t tag;
    bool eof;
    if (!pb_decode_tag(s, &type, &tag, &eof) || tag == 0) { /* pb_decode refuses a zero tag too */
      if (tag == 0) PB_SET_ERROR(s, "zero tag");
      ok = false;
      break;
    }
    if (tag == field) ++*count;
    ok = pb_skip_field(s, type);
  }
  if (!ok && err) *err = PB_GET_ERROR(s);
  reader_close(&r);
  return ok;
}

static bool bytes_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_bytes_t *b = *arg;
  size_t n = stream->bytes_left;
  if (!rdev_wire_is_bytes(stream)) PB_RETURN_ERROR(stream, "wrong wire type");
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

/* Takes references to the next stream->bytes_left bytes of the slices. A
 * payload over p->max is passed over and flagged; a repeated one replaces
 * the one before (proto3: the last one wins). */
static bool payload_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_payload_t *p = *arg;
  slice_reader_t *r = stream->state;
  size_t n = stream->bytes_left;
  if (!rdev_wire_is_bytes(stream)) PB_RETURN_ERROR(stream, "wrong wire type");
  rdev_wire_payload_release(p);
  p->oversize = n > p->max;
  if (p->oversize) return pb_read(stream, NULL, n);
  p->len = n;
  while (n > 0) {
    if (!slices_next(r)) PB_RETURN_ERROR(stream, "io error");
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

/* ---- requests as rdevd decodes them ----------------------------------- */

static bool kernel_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_request_t *r = *arg;
  size_t n = stream->bytes_left, keep = n < RDEV_WIRE_MAX_KERNEL_NAME ? n : RDEV_WIRE_MAX_KERNEL_NAME;
  if (!rdev_wire_is_bytes(stream)) PB_RETURN_ERROR(stream, "wrong wire type");
  r->kernel_len = n;
  if (!pb_read(stream, (pb_byte_t *)r->kernel, keep) || !pb_read(stream, NULL, n - keep)) return false;
  r->kernel[keep] = '\0';
  r->kernel_nul = strlen(r->kernel) != keep;
  return true;
}

static bool args_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_request_t *r = *arg;
  if (!rdev_wire_is_bytes(stream)) PB_RETURN_ERROR(stream, "wrong wire type");
  if (r->nargs >= RDEV_WIRE_MAX_ARGS) { /* counted (up to a bound), not kept */
    if (r->nargs < 1 << 30) r->nargs++;
    return pb_read(stream, NULL, stream->bytes_left);
  }
  rdev_v1_Arg *a = &r->args[r->nargs];
  *a = (rdev_v1_Arg)rdev_v1_Arg_init_zero;
  if (!pb_decode(stream, rdev_v1_Arg_fields, a)) return false;
  r->nargs++;
  return true;
}

/* No Launch name or arguments decoded (yet). */
static void launch_reset(rdev_wire_request_t *r) {
  r->kernel[0] = '\0';
  r->kernel_len = 0;
  r->kernel_nul = 0;
  r->nargs = 0;
}

/* Called before a Launch is decoded (Request.cb_op): a Launch replaces any
 * before it in the same request, as the op it is. */
static bool op_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  rdev_wire_request_t *r = *arg;
  if (field->tag != rdev_v1_Request_launch_tag) return true;
  rdev_v1_Launch *l = field->pData;
  launch_reset(r);
  l->kernel.funcs.decode = kernel_decode;
  l->kernel.arg = r;
  l->args.funcs.decode = args_decode;
  l->args.arg = r;
  return true;
}

typedef struct {
  rdev_wire_walk_t *w;
  size_t max_chunk;
  rdev_wire_visit_fn visit;
  void *arg;
  int batch; /* the message has a batch field */
  int index; /* of the next batch request */
  int cut;   /* a visit cut the batch short: pass over the rest */
} walk_t;

static bool batch_decode(pb_istream_t *stream, const pb_field_t *field, void **arg);

static void request_init(rdev_wire_request_t *r, walk_t *k, bool nested) {
  r->q = (rdev_v1_Request)rdev_v1_Request_init_zero;
  rdev_wire_payload_init(&r->data, k->max_chunk);
  rdev_wire_payload_decoder(&r->q.data, &r->data);
  r->q.cb_op.funcs.decode = op_decode;
  r->q.cb_op.arg = r;
  r->q.batch.funcs.decode = batch_decode;
  r->q.batch.arg = nested ? NULL : k;
  launch_reset(r);
}

/* Decodes the batch request at the reader into r->q (request_init'd)
 * straight from the slice (wire_ops.c) where the table covers it and its
 * bytes lie in one slice; the reader then stands past it. */
static bool fast_batch_request(pb_istream_t *stream, rdev_wire_request_t *r) {
  slice_reader_t *rd = stream->state;
  size_t n = stream->bytes_left;
  if (!slices_next(rd) || GRPC_SLICE_LENGTH(rd->cur) - rd->pos < n ||
      !wire_ops_decode(GRPC_SLICE_START_PTR(rd->cur) + rd->pos, n, &r->q))
    return false;
  rd->pos += n;
  stream->bytes_left = 0;
  return true;
}

/* One request of a batch: visited as it is decoded, in order (those
 * visited before a stop are passed over). A malformed one is visited with
 * its fault and passed; false when the message itself broke, or a visit
 * stopped the walk. */
static bool batch_decode(pb_istream_t *stream, const pb_field_t *field, void **arg) {
  walk_t *k = *arg;
  if (!k) PB_RETURN_ERROR(stream, "batches do not nest");
  if (!rdev_wire_is_bytes(stream)) PB_RETURN_ERROR(stream, "wrong wire type");
  k->batch = 1;
  if (k->index < k->w->skip || k->cut) {
    k->index++;
    k->w->seen = k->index;
    return pb_read(stream, NULL, stream->bytes_left);
  }
  size_t end = slices_tell(stream) + stream->bytes_left;
  rdev_wire_request_t r;
  request_init(&r, k, true);
  const char *err = NULL;
  bool fast = fast_batch_request(stream, &r);
  if (!fast) request_init(&r, k, true); /* the table may have left part of it */
  if (!fast && !pb_decode_ex(stream, rdev_v1_Request_fields, &r.q, PB_DECODE_NOINIT)) { /* request_init set it */
    err = stream->errmsg ? stream->errmsg : "malformed request"; /* a callback's own error stays in its substream */
    if (!slices_skip_to(stream, end)) {
      rdev_wire_payload_release(&r.data);
      PB_RETURN_ERROR(stream, "io error");
    }
    stream->errmsg = NULL; /* recovered: nanopb keeps the first error, which is this request's */
  }
  int rc = k->visit(k->arg, &r, k->index, err);
  rdev_wire_payload_release(&r.data);
  if (rc == RDEV_WIRE_STOP) {
    k->w->stopped = 1;
    PB_RETURN_ERROR(stream, "stopped");
  }
  k->cut |= rc == RDEV_WIRE_CUT;
  k->index++;
  k->w->seen = k->index;
  return true;
}

void rdev_wire_walk(grpc_byte_buffer *bb, size_t max_chunk, rdev_wire_walk_t *w, rdev_wire_visit_fn visit, void *arg) {
  walk_t k = {w, max_chunk, visit, arg, 0, 0, 0};
  w->seen = 0;
  w->stopped = 0;
  rdev_wire_request_t r;
  request_init(&r, &k, false);
  slice_reader_t rd;
  const char *err = NULL;
  bool ok = decode_with(&rd, bb, rdev_v1_Request_fields, &r.q, &err);
  w->acked = ok ? r.q.acked : 0;
  w->bye = ok && r.q.bye;
  bool ack_only = ok && r.q.which_op == 0 && !k.batch && (r.q.acked || r.q.bye) && !r.data.nparts && r.q.seq == 0;
  if (!w->stopped && !ack_only && (!ok || r.q.which_op != 0 || !k.batch))
    w->stopped = visit(arg, &r, -1, ok ? NULL : err ? err : "malformed message") == RDEV_WIRE_STOP;
  rdev_wire_payload_release(&r.data);
}
