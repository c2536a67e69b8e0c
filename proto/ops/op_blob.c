/*
 * proto/ops/op_blob.c — the operator call blob (rdev/ops.h): encoding a
 * call, decoding one from untrusted bytes into a single allocation, the
 * checks every call passes before an operator's own rules (argument kinds,
 * presence, tensor descriptions), a tensor's reach in device memory, and
 * the data type table.
 *
 * Blob layout, little-endian, each field at the byte after the last:
 *   u8 name length (1..63), the name's bytes, u8 nargs (<= 16), then per
 *   argument: u8 kind, u8 present, and when present:
 *     TENSOR       tensor
 *     TENSOR_LIST  u32 n (<= 256), then n times: u8 present, tensor
 *     SCALAR       i32 dtype, 8 bytes of value (double or int64 by dtype)
 *     INT_ARRAY    u32 n (<= 256), n x i64
 *     BOOL_ARRAY   u32 n, n x u8 (0 or 1)
 *     FLOAT_ARRAY  u32 n, n x f32
 *     DOUBLE f64, INT64 i64, INT8 i8, BOOL u8, DTYPE i32
 *   tensor: i32 dtype, i32 format, u8 ndim, u8 storage_ndim, ndim x i64
 *   dims, ndim x i64 strides, i64 offset, storage_ndim x i64 storage dims,
 *   u64 addr.
 * Value kinds are always present (present = 1).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/ops.h"
#include "rdev/status.h"

size_t rdev_dtype_size(int dtype) {
  switch (dtype) {
    case RDEV_DT_INT8:
    case RDEV_DT_UINT8:
    case RDEV_DT_BOOL: return 1;
    case RDEV_DT_FLOAT16:
    case RDEV_DT_BF16:
    case RDEV_DT_INT16:
    case RDEV_DT_UINT16: return 2;
    case RDEV_DT_FLOAT:
    case RDEV_DT_INT32:
    case RDEV_DT_UINT32: return 4;
    case RDEV_DT_INT64:
    case RDEV_DT_UINT64:
    case RDEV_DT_DOUBLE: return 8;
    default: return 0;
  }
}

const char *rdev_dtype_name(int dtype) {
  switch (dtype) {
    case RDEV_DT_FLOAT: return "float32";
    case RDEV_DT_FLOAT16: return "float16";
    case RDEV_DT_BF16: return "bfloat16";
    case RDEV_DT_DOUBLE: return "float64";
    case RDEV_DT_INT8: return "int8";
    case RDEV_DT_UINT8: return "uint8";
    case RDEV_DT_INT16: return "int16";
    case RDEV_DT_UINT16: return "uint16";
    case RDEV_DT_INT32: return "int32";
    case RDEV_DT_UINT32: return "uint32";
    case RDEV_DT_INT64: return "int64";
    case RDEV_DT_UINT64: return "uint64";
    case RDEV_DT_BOOL: return "bool";
    default: return "?";
  }
}

static int fail(char *msg, size_t cap, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *msg, size_t cap, int rc, const char *fmt, ...) {
  if (msg && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
  }
  return rc;
}

static bool float_type(int dt) {
  return dt == RDEV_DT_FLOAT || dt == RDEV_DT_FLOAT16 || dt == RDEV_DT_BF16 || dt == RDEV_DT_DOUBLE;
}

double rdev_op_scalar_f64(const rdev_op_arg_t *a) {
  if (float_type(a->v.scalar.dtype)) return a->v.scalar.v.f;
  if (a->v.scalar.dtype == RDEV_DT_UINT64) return (double)a->v.scalar.v.u;
  return (double)a->v.scalar.v.i;
}

int64_t rdev_op_scalar_i64(const rdev_op_arg_t *a) {
  if (float_type(a->v.scalar.dtype)) {
    double f = a->v.scalar.v.f;
    return f != f ? 0 : f >= 9.2e18 ? INT64_MAX : f <= -9.2e18 ? INT64_MIN : (int64_t)f;
  }
  return a->v.scalar.v.i;
}

int64_t rdev_tensor_numel(const rdev_tensor_t *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->dims[i];
  return n;
}

/* Element products and spans stay below 2^62: the sums below cannot overflow. */
#define SPAN_MAX ((int64_t)1 << 62)

int rdev_tensor_reach(const rdev_tensor_t *t, uint64_t *lo, uint64_t *bytes) {
  uint64_t esz = rdev_dtype_size(t->dtype);
  *lo = *bytes = 0;
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    if (t->dims[i] == 0) return RDEV_OK; /* empty: reaches nothing */
  if (t->storage_ndim > 0) {
    for (int i = 0; i < t->storage_ndim; i++)
      if (__builtin_mul_overflow(n, t->storage_dims[i], &n) || n > SPAN_MAX) return RDEV_OP_PARAM_INVALID;
    if (__builtin_mul_overflow((uint64_t)n, esz, bytes)) return RDEV_OP_PARAM_INVALID;
    return RDEV_OK;
  }
  if (t->offset < -SPAN_MAX || t->offset > SPAN_MAX) return RDEV_OP_PARAM_INVALID;
  int64_t first = t->offset, last = t->offset, step;
  for (int i = 0; i < t->ndim; i++) {
    if (__builtin_mul_overflow(t->dims[i] - 1, t->strides[i], &step) || step > SPAN_MAX || step < -SPAN_MAX)
      return RDEV_OP_PARAM_INVALID;
    if (step < 0 ? __builtin_add_overflow(first, step, &first) : __builtin_add_overflow(last, step, &last))
      return RDEV_OP_PARAM_INVALID;
    if (first < -SPAN_MAX || last > SPAN_MAX) return RDEV_OP_PARAM_INVALID;
  }
  if (first < 0) return RDEV_OP_PARAM_INVALID;
  uint64_t l, e;
  if (__builtin_mul_overflow((uint64_t)first, esz, &l) || __builtin_mul_overflow((uint64_t)(last - first + 1), esz, &e))
    return RDEV_OP_PARAM_INVALID;
  *lo = l;
  *bytes = e;
  return RDEV_OK;
}

/* A tensor's description on its own: known type, dims, a view inside its storage. */
static int check_tensor(const rdev_op_sig_t *sig, const rdev_op_param_t *p, const rdev_tensor_t *t, char *msg,
                        size_t cap) {
  if (!rdev_dtype_size(t->dtype))
    return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s has data type %d, which rdev does not know", sig->name,
                p->name, t->dtype);
  if (t->ndim < 0 || t->ndim > RDEV_OP_MAX_DIMS || t->storage_ndim < 0 || t->storage_ndim > RDEV_OP_MAX_DIMS)
    return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s has more than %d dimensions", sig->name, p->name,
                RDEV_OP_MAX_DIMS);
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++) {
    if (t->dims[i] < 0)
      return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s has a negative size in dimension %d", sig->name,
                  p->name, i);
    if (__builtin_mul_overflow(n, t->dims[i], &n) || n > RDEV_OP_MAX_NUMEL)
      return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s has more than 2^28 elements", sig->name, p->name);
  }
  for (int i = 0; i < t->storage_ndim; i++)
    if (t->storage_dims[i] < 0)
      return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s has a negative storage size", sig->name, p->name);
  uint64_t lo, bytes;
  if (rdev_tensor_reach(t, &lo, &bytes))
    return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s's strides and offset reach too far", sig->name, p->name);
  if (t->storage_ndim > 0 && n > 0) { /* the view must lie in its storage */
    rdev_tensor_t v = *t;
    v.storage_ndim = 0;
    uint64_t vlo, vbytes;
    uint64_t vend;
    if (rdev_tensor_reach(&v, &vlo, &vbytes) || __builtin_add_overflow(vlo, vbytes, &vend) || vend > bytes)
      return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s's view reaches outside its storage", sig->name,
                  p->name);
  }
  return RDEV_OK;
}

int rdev_op_check(const rdev_op_call_t *c, char *msg, size_t cap) {
  int count;
  const rdev_op_sig_t *tab = rdev_op_table(&count);
  if (c->op < 0 || c->op >= count) return fail(msg, cap, RDEV_UNKNOWN_KERNEL, "operator %d is unknown", c->op);
  const rdev_op_sig_t *sig = &tab[c->op];
  if (c->nargs != sig->nparams)
    return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s takes %d arguments, got %d", sig->name, sig->nparams,
                c->nargs);
  for (int i = 0; i < c->nargs; i++) {
    const rdev_op_param_t *p = &sig->params[i];
    const rdev_op_arg_t *a = &c->args[i];
    if (a->kind != p->kind)
      return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: argument %d (%s) is of the wrong kind", sig->name, i,
                  p->name);
    if (!a->present) {
      if (!(p->flags & RDEV_OPF_OPT))
        return fail(msg, cap, RDEV_OP_PARAM_NULLPTR, "aclnn%s: %s is NULL", sig->name, p->name);
      continue;
    }
    int rc;
    if (a->kind == RDEV_OPK_TENSOR && (rc = check_tensor(sig, p, a->v.t, msg, cap))) return rc;
    if (a->kind == RDEV_OPK_TENSOR_LIST)
      for (uint32_t k = 0; k < a->n; k++)
        if ((rc = check_tensor(sig, p, &a->v.t[k], msg, cap))) return rc;
    if (a->kind == RDEV_OPK_SCALAR && !rdev_dtype_size(a->v.scalar.dtype))
      return fail(msg, cap, RDEV_OP_PARAM_INVALID, "aclnn%s: %s has data type %d, which rdev does not know", sig->name,
                  p->name, a->v.scalar.dtype);
  }
  return sig->check ? sig->check(c, msg, cap) : RDEV_OK;
}

/* ---- encoding -------------------------------------------------------------- */

typedef struct {
  uint8_t *p;
  size_t len, cap;
  bool over;
} wbuf_t;

static void put(wbuf_t *w, const void *v, size_t n) {
  if (w->over || w->cap - w->len < n) {
    w->over = true;
    return;
  }
  if (n) memcpy(w->p + w->len, v, n); /* little-endian machines; an empty array's v may be NULL */
  w->len += n;
}
static void put_u8(wbuf_t *w, uint8_t v) { put(w, &v, 1); }
static void put_u32(wbuf_t *w, uint32_t v) { put(w, &v, 4); }
static void put_i32(wbuf_t *w, int32_t v) { put(w, &v, 4); }
static void put_i64(wbuf_t *w, int64_t v) { put(w, &v, 8); }

static bool put_tensor(wbuf_t *w, const rdev_tensor_t *t) {
  if (t->ndim < 0 || t->ndim > RDEV_OP_MAX_DIMS || t->storage_ndim < 0 || t->storage_ndim > RDEV_OP_MAX_DIMS)
    return false;
  put_i32(w, t->dtype);
  put_i32(w, t->format);
  put_u8(w, (uint8_t)t->ndim);
  put_u8(w, (uint8_t)t->storage_ndim);
  put(w, t->dims, 8 * (size_t)t->ndim);
  put(w, t->strides, 8 * (size_t)t->ndim);
  put_i64(w, t->offset);
  put(w, t->storage_dims, 8 * (size_t)t->storage_ndim);
  put(w, &t->addr, 8);
  return true;
}

int rdev_op_encode(const rdev_op_call_t *c, void *buf, size_t cap, size_t *len) {
  int count;
  const rdev_op_sig_t *tab = rdev_op_table(&count);
  if (!c || !buf || !len || c->op < 0 || c->op >= count || c->nargs < 0 || c->nargs > RDEV_OP_MAX_ARGS)
    return RDEV_INVALID_PARAM;
  wbuf_t w = {buf, 0, cap, false};
  size_t nl = strlen(tab[c->op].name);
  put_u8(&w, (uint8_t)nl);
  put(&w, tab[c->op].name, nl);
  put_u8(&w, (uint8_t)c->nargs);
  for (int i = 0; i < c->nargs; i++) {
    const rdev_op_arg_t *a = &c->args[i];
    bool value = a->kind >= RDEV_OPK_DOUBLE;
    put_u8(&w, a->kind);
    put_u8(&w, value || a->present);
    if (!value && !a->present) continue;
    bool is_array = a->kind == RDEV_OPK_TENSOR_LIST || a->kind == RDEV_OPK_INT_ARRAY ||
                    a->kind == RDEV_OPK_BOOL_ARRAY || a->kind == RDEV_OPK_FLOAT_ARRAY;
    if (is_array && a->n > (a->kind == RDEV_OPK_TENSOR_LIST ? RDEV_OP_MAX_LIST : RDEV_OP_MAX_ARRAY))
      return RDEV_INVALID_PARAM;
    if (is_array) put_u32(&w, a->n);
    switch (a->kind) {
      case RDEV_OPK_TENSOR:
        if (!put_tensor(&w, a->v.t)) return RDEV_INVALID_PARAM;
        break;
      case RDEV_OPK_TENSOR_LIST:
        for (uint32_t k = 0; k < a->n; k++) {
          put_u8(&w, 1);
          if (!put_tensor(&w, &a->v.t[k])) return RDEV_INVALID_PARAM;
        }
        break;
      case RDEV_OPK_SCALAR:
        put_i32(&w, a->v.scalar.dtype);
        put(&w, &a->v.scalar.v, 8);
        break;
      case RDEV_OPK_INT_ARRAY: put(&w, a->v.ints, 8 * (size_t)a->n); break;
      case RDEV_OPK_BOOL_ARRAY: put(&w, a->v.bools, a->n); break;
      case RDEV_OPK_FLOAT_ARRAY: put(&w, a->v.floats, 4 * (size_t)a->n); break;
      case RDEV_OPK_DOUBLE: put(&w, &a->v.f64, 8); break;
      case RDEV_OPK_INT64: put_i64(&w, a->v.i64); break;
      case RDEV_OPK_INT8: put_u8(&w, (uint8_t)(int8_t)a->v.i64); break;
      case RDEV_OPK_BOOL: put_u8(&w, a->v.i64 != 0); break;
      case RDEV_OPK_DTYPE: put_i32(&w, a->v.dtype); break;
      default: return RDEV_INVALID_PARAM;
    }
  }
  if (w.over) return RDEV_INVALID_PARAM;
  *len = w.len;
  return RDEV_OK;
}

/* ---- decoding -------------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t len, at;
  bool bad;
} rbuf_t;

static const void *take(rbuf_t *r, size_t n) {
  if (r->bad || r->len - r->at < n) {
    r->bad = true;
    return NULL;
  }
  const void *v = r->p + r->at;
  r->at += n;
  return v;
}
static void get(rbuf_t *r, void *v, size_t n) {
  const void *s = take(r, n);
  if (s)
    memcpy(v, s, n);
  else
    memset(v, 0, n);
}
static uint8_t get_u8(rbuf_t *r) {
  uint8_t v;
  get(r, &v, 1);
  return v;
}
static uint32_t get_u32(rbuf_t *r) {
  uint32_t v;
  get(r, &v, 4);
  return v;
}
static int32_t get_i32(rbuf_t *r) {
  int32_t v;
  get(r, &v, 4);
  return v;
}

static void get_tensor(rbuf_t *r, rdev_tensor_t *t) {
  memset(t, 0, sizeof *t);
  t->dtype = get_i32(r);
  t->format = get_i32(r);
  t->ndim = get_u8(r);
  t->storage_ndim = get_u8(r);
  if (t->ndim > RDEV_OP_MAX_DIMS || t->storage_ndim > RDEV_OP_MAX_DIMS) {
    r->bad = true;
    return;
  }
  get(r, t->dims, 8 * (size_t)t->ndim);
  get(r, t->strides, 8 * (size_t)t->ndim);
  get(r, &t->offset, 8);
  get(r, t->storage_dims, 8 * (size_t)t->storage_ndim);
  get(r, &t->addr, 8);
}

/* The decoded call and what its arguments point at, in one allocation:
 * tensors and array elements go to `pool` behind the call. */
typedef struct {
  rdev_op_call_t call;
  /* followed by the pool */
} call_block_t;

/* Bytes of pool a blob of len bytes can need at most: every byte of it
 * could be part of a tensor (at least 19 bytes each on the wire, one
 * rdev_tensor_t here) or of an array element (at least 1 byte, 8 here). */
static size_t pool_bound(size_t len) {
  return (len / 19 + RDEV_OP_MAX_ARGS) * sizeof(rdev_tensor_t) + len * 8 + RDEV_OP_MAX_ARGS * 8;
}

/* n bytes of the pool at *used (8-byte aligned); pool_bound keeps it in bounds. */
static void *pool_take(char *pool, size_t *used, size_t n) {
  void *p = pool + *used;
  *used += (n + 7) & ~(size_t)7;
  return p;
}

int rdev_op_decode(const void *blob, size_t len, rdev_op_call_t **out, char *msg, size_t cap) {
  *out = NULL;
  if (!blob || len > RDEV_OP_MAX_BLOB)
    return fail(msg, cap, RDEV_INVALID_PARAM, "an operator call of %zu bytes exceeds %d", len, RDEV_OP_MAX_BLOB);
  rbuf_t r = {blob, len, 0, false};
  char name[RDEV_OP_MAX_NAME + 1];
  uint8_t nl = get_u8(&r);
  if (nl == 0 || nl > RDEV_OP_MAX_NAME) return fail(msg, cap, RDEV_INVALID_PARAM, "malformed operator call: its name");
  get(&r, name, nl);
  name[nl] = 0;
  if (r.bad || memchr(name, 0, nl)) return fail(msg, cap, RDEV_INVALID_PARAM, "malformed operator call: its name");
  const rdev_op_sig_t *sig = rdev_op_find(name);
  if (!sig) return fail(msg, cap, RDEV_UNKNOWN_KERNEL, "unknown operator 'aclnn%s'", name);
  int count;
  const rdev_op_sig_t *tab = rdev_op_table(&count);
  size_t pool_cap = pool_bound(len);
  call_block_t *b = calloc(1, sizeof *b + pool_cap);
  if (!b) return fail(msg, cap, RDEV_BAD_ALLOC, "out of memory");
  char *pool = (char *)(b + 1);
  size_t used = 0;
#define POOL(type, n) ((type *)pool_take(pool, &used, sizeof(type) * (n)))
  rdev_op_call_t *c = &b->call;
  c->op = (int)(sig - tab);
  c->nargs = get_u8(&r);
  if (c->nargs > RDEV_OP_MAX_ARGS) r.bad = true;
  for (int i = 0; i < c->nargs && !r.bad; i++) {
    rdev_op_arg_t *a = &c->args[i];
    a->kind = get_u8(&r);
    a->present = get_u8(&r);
    if (a->present > 1 || a->kind < RDEV_OPK_TENSOR || a->kind > RDEV_OPK_DTYPE ||
        (a->kind >= RDEV_OPK_DOUBLE && !a->present)) {
      r.bad = true;
      break;
    }
    if (!a->present) continue;
    switch (a->kind) {
      case RDEV_OPK_TENSOR:
        a->v.t = POOL(rdev_tensor_t, 1);
        get_tensor(&r, a->v.t);
        break;
      case RDEV_OPK_TENSOR_LIST:
        a->n = get_u32(&r);
        if (a->n > RDEV_OP_MAX_LIST || a->n > (len - r.at) / 19) {
          r.bad = true;
          break;
        }
        a->v.t = POOL(rdev_tensor_t, a->n);
        for (uint32_t k = 0; k < a->n && !r.bad; k++) {
          if (get_u8(&r) != 1) r.bad = true; /* a list holds no NULL */
          get_tensor(&r, &a->v.t[k]);
        }
        break;
      case RDEV_OPK_SCALAR:
        a->v.scalar.dtype = get_i32(&r);
        get(&r, &a->v.scalar.v, 8);
        break;
      case RDEV_OPK_INT_ARRAY:
      case RDEV_OPK_BOOL_ARRAY:
      case RDEV_OPK_FLOAT_ARRAY: {
        a->n = get_u32(&r);
        size_t esz = a->kind == RDEV_OPK_INT_ARRAY ? 8 : a->kind == RDEV_OPK_FLOAT_ARRAY ? 4 : 1;
        if (a->n > RDEV_OP_MAX_ARRAY || a->n > (len - r.at) / esz) {
          r.bad = true;
          break;
        }
        void *v = POOL(char, esz * a->n);
        get(&r, v, esz * a->n);
        if (a->kind == RDEV_OPK_BOOL_ARRAY)
          for (uint32_t k = 0; k < a->n; k++)
            if (((uint8_t *)v)[k] > 1) r.bad = true;
        a->v.ints = v; /* the union's pointers share one address */
        break;
      }
      case RDEV_OPK_DOUBLE: get(&r, &a->v.f64, 8); break;
      case RDEV_OPK_INT64: get(&r, &a->v.i64, 8); break;
      case RDEV_OPK_INT8: a->v.i64 = (int8_t)get_u8(&r); break;
      case RDEV_OPK_BOOL:
        a->v.i64 = get_u8(&r);
        if (a->v.i64 > 1) r.bad = true;
        break;
      case RDEV_OPK_DTYPE: a->v.dtype = get_i32(&r); break;
    }
  }
#undef POOL
  if (r.bad || r.at != len || used > pool_cap) {
    free(b);
    return fail(msg, cap, RDEV_INVALID_PARAM, "malformed call of aclnn%s", sig->name);
  }
  int rc = rdev_op_check(c, msg, cap);
  if (rc) {
    free(b);
    return rc;
  }
  *out = c;
  return RDEV_OK;
}
