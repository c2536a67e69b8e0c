/*
 * proto/wire_ops.c — Request's ops, read once from nanopb's descriptors
 * (wire_ops.h): where each op's struct lies, and for the ops whose fields
 * are all scalars (memsets, copies, frees, records, synchronizes...), the
 * layout that encodes and decodes them straight, without walking the
 * descriptors: for a small async op nanopb's walk costs more than running
 * the op does (profiled: a third of rdevd's time under pipelined memsets).
 * Everything else is nanopb's.
 */
#include "wire_ops.h"

#include <pb_common.h>
#include <pthread.h>
#include <string.h>

enum { SC_NONE, SC_U64, SC_U32, SC_I32, SC_BOOL };

typedef struct {
  uint8_t kind; /* SC_NONE: not a scalar field of the table's */
  uint8_t tag;
  uint16_t off; /* in its message */
} scalar_t;

static struct {
  wire_op_t op[WIRE_OP_TAGS];
  uint16_t size[WIRE_OP_TAGS];                 /* the op's struct */
  uint8_t nfields[WIRE_OP_TAGS];               /* > 0: every field a scalar, in field[] */
  scalar_t field[WIRE_OP_TAGS][WIRE_OP_TAGS];  /* [op][i]: in declaration order (nanopb's encoding order) */
  scalar_t by_tag[WIRE_OP_TAGS][WIRE_OP_TAGS]; /* [op][field number] */
  scalar_t seq;                                /* Request.seq */
  size_t which_off;                            /* Request.which_op */
} tab;
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

/* The kind of scalar field it is; SC_NONE where the table leaves it to nanopb. */
static uint8_t scalar_kind(const pb_field_iter_t *it) {
  /* a proto3 `optional` is SINGULAR too, with a has_ field (pSize): nanopb's */
  if (PB_ATYPE(it->type) != PB_ATYPE_STATIC || PB_HTYPE(it->type) != PB_HTYPE_SINGULAR || it->pSize ||
      it->tag >= WIRE_OP_TAGS)
    return SC_NONE;
  switch (PB_LTYPE(it->type)) {
    case PB_LTYPE_BOOL: return it->data_size == sizeof(bool) ? SC_BOOL : SC_NONE;
    case PB_LTYPE_UVARINT: return it->data_size == 8 ? SC_U64 : it->data_size == 4 ? SC_U32 : SC_NONE;
    case PB_LTYPE_VARINT: return it->data_size == 8 ? SC_U64 : it->data_size == 4 ? SC_I32 : SC_NONE;
    default: return SC_NONE;
  }
}

/* The scalar layout of op tag's message desc, if every field is a scalar. */
static void scalar_op(unsigned tag, const pb_msgdesc_t *desc) {
  static char base[4096]; /* offsets only: never written */
  scalar_t f[WIRE_OP_TAGS];
  unsigned n = 0;
  pb_field_iter_t it;
  if (desc->default_value || desc->field_callback || !pb_field_iter_begin(&it, desc, base)) return;
  do {
    uint8_t k = scalar_kind(&it);
    size_t off = (size_t)((char *)it.pData - base);
    if (k == SC_NONE || off >= sizeof base || n == WIRE_OP_TAGS) return;
    f[n++] = (scalar_t){k, (uint8_t)it.tag, (uint16_t)off};
  } while (pb_field_iter_next(&it));
  for (unsigned i = 0; i < n; i++) {
    tab.field[tag][i] = f[i];
    tab.by_tag[tag][f[i].tag] = f[i];
  }
  tab.nfields[tag] = (uint8_t)n;
}

static void tab_init(void) {
  rdev_v1_Request q;
  pb_field_iter_t it;
  if (!pb_field_iter_begin(&it, rdev_v1_Request_fields, &q)) return;
  do {
    size_t off = (size_t)((char *)it.pData - (char *)&q);
    if (it.tag == rdev_v1_Request_seq_tag) {
      tab.seq = (scalar_t){scalar_kind(&it), (uint8_t)it.tag, (uint16_t)off};
    } else if (it.tag < WIRE_OP_TAGS && PB_ATYPE(it.type) == PB_ATYPE_STATIC && PB_HTYPE(it.type) == PB_HTYPE_ONEOF &&
               PB_LTYPE_IS_SUBMSG(it.type)) {
      tab.op[it.tag] = (wire_op_t){it.submsg_desc, off};
      tab.size[it.tag] = (uint16_t)it.data_size;
      tab.which_off = (size_t)((char *)it.pSize - (char *)&q);
      scalar_op(it.tag, it.submsg_desc);
    }
  } while (pb_field_iter_next(&it));
}

const wire_op_t *wire_op(unsigned tag) {
  pthread_once(&tab_once, tab_init);
  return tag < WIRE_OP_TAGS && tab.op[tag].desc ? &tab.op[tag] : NULL;
}

/* ---- encoding ------------------------------------------------------------ */

size_t wire_put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* The field's value as its varint carries it (an int32 sign-extended, as
 * protobuf does), 0 for proto3's default. */
static uint64_t scalar_get(const char *msg, const scalar_t *f) {
  const char *s = msg + f->off;
  switch (f->kind) {
    case SC_U64: {
      uint64_t v;
      memcpy(&v, s, 8);
      return v;
    }
    case SC_U32: {
      uint32_t v;
      memcpy(&v, s, 4);
      return v;
    }
    case SC_I32: {
      int32_t v;
      memcpy(&v, s, 4);
      return (uint64_t)(int64_t)v;
    }
    default: {
      bool v;
      memcpy(&v, s, sizeof v);
      return v;
    }
  }
}

bool wire_ops_encode(unsigned tag, const void *msg, uint8_t *body, size_t *len) {
  pthread_once(&tab_once, tab_init);
  if (tag >= WIRE_OP_TAGS || !tab.nfields[tag]) return false;
  size_t n = 0;
  for (unsigned i = 0; i < tab.nfields[tag]; i++) {
    const scalar_t *f = &tab.field[tag][i];
    uint64_t v = scalar_get(msg, f);
    if (!v) continue; /* proto3: defaults are not sent */
    n += wire_put_varint(body + n, (uint64_t)f->tag << 3);
    n += wire_put_varint(body + n, v);
  }
  *len = n;
  return true;
}

/* ---- decoding ------------------------------------------------------------ */

/* A varint (at most 10 bytes, as nanopb takes them) from *p. */
static bool get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  uint64_t x = 0;
  for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    if (shift == 63 && b > 1) return false;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

/* Stores v into field f of msg, where it fits as nanopb would keep it. */
static bool scalar_put(char *msg, const scalar_t *f, uint64_t v) {
  char *d = msg + f->off;
  switch (f->kind) {
    case SC_U64: memcpy(d, &v, 8); return true;
    case SC_U32: {
      if (v > UINT32_MAX) return false;
      uint32_t u = (uint32_t)v;
      memcpy(d, &u, 4);
      return true;
    }
    case SC_I32: { /* its low 32 bits, as nanopb keeps them (a sign-extended or a 32-bit negative) */
      int32_t i = (int32_t)(uint32_t)v;
      memcpy(d, &i, 4);
      return true;
    }
    case SC_BOOL: {
      if (v > 1) return false;
      bool b = v != 0;
      memcpy(d, &b, sizeof b);
      return true;
    }
    default: return false;
  }
}

/* The varint fields in [p, end) into msg, by field number through by_tag. */
static bool get_fields(const uint8_t *p, const uint8_t *end, const scalar_t *by_tag, char *msg) {
  while (p < end) {
    uint64_t key, v;
    if (!get_varint(&p, end, &key) || (key & 7) != PB_WT_VARINT || key >> 3 >= WIRE_OP_TAGS ||
        !get_varint(&p, end, &v) || !scalar_put(msg, &by_tag[key >> 3], v))
      return false;
  }
  return true;
}

bool wire_ops_decode(const uint8_t *p, size_t n, rdev_v1_Request *q) {
  pthread_once(&tab_once, tab_init);
  const uint8_t *end = p + n;
  char *msg = (char *)q;
  pb_size_t *which = (pb_size_t *)(msg + tab.which_off);
  while (p < end) {
    uint64_t key, v;
    if (!get_varint(&p, end, &key) || key >> 3 >= WIRE_OP_TAGS) return false;
    unsigned tag = (unsigned)(key >> 3);
    if (tag == tab.seq.tag) {
      if ((key & 7) != PB_WT_VARINT || !get_varint(&p, end, &v) || !scalar_put(msg, &tab.seq, v)) return false;
      continue;
    }
    if (!tab.nfields[tag] || (key & 7) != PB_WT_STRING || !get_varint(&p, end, &v) || v > (uint64_t)(end - p))
      return false;
    if (*which != tag) { /* another op than the one before (or none): nanopb zeroes its struct */
      memset(msg + tab.op[tag].offset, 0, tab.size[tag]);
      *which = (pb_size_t)tag;
    } /* the same op again: merged, as nanopb does */
    if (!get_fields(p, p + v, tab.by_tag[tag], msg + tab.op[tag].offset)) return false;
    p += v;
  }
  return true;
}
