/*
 * runtime/sim/sim_op_util.c — what the sim's operators share (sim_ops.h):
 * loading and storing elements of every data type, float16 and bfloat16
 * conversions, and the broadcasting walk over an output shape.
 */
#include <math.h>
#include <string.h>

#include "sim_ops.h"

float sim_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0x1f)
    bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
  else if (exp)
    bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (!man)
    bits = sign;
  else { /* subnormal: normalize */
    int e = -1;
    do {
      e++;
      man <<= 1;
    } while (!(man & 0x400));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t sim_float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0); /* inf, nan */
  if (ax >= 0x477ff000u) return sign | 0x7c00;                                  /* rounds past 65504 */
  if (ax < 0x38800000u) {                                                       /* subnormal or zero in half */
    if (ax < 0x33000000u) return sign;                                          /* below half the smallest */
    uint32_t e = ax >> 23, man = (ax & 0x7fffff) | 0x800000;
    int shift = 126 - (int)e; /* the value in units of 2^-24, half's smallest step */
    uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return sign | (uint16_t)q;
  }
  uint32_t q = ((ax - 0x38000000u) >> 13), rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
  return sign | (uint16_t)q;
}

float sim_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t sim_float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* nan stays nan */
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

#define AT(type) (((type *)(uintptr_t)t->addr)[off])

double sim_ld(const rdev_tensor_t *t, int64_t off) {
  switch (t->dtype) {
    case RDEV_DT_FLOAT: return AT(float);
    case RDEV_DT_FLOAT16: return sim_half_to_float(AT(uint16_t));
    case RDEV_DT_BF16: return sim_bf16_to_float(AT(uint16_t));
    case RDEV_DT_DOUBLE: return AT(double);
    case RDEV_DT_UINT64: return (double)AT(uint64_t);
    default: return (double)sim_ldi(t, off);
  }
}

int64_t sim_ldi(const rdev_tensor_t *t, int64_t off) {
  switch (t->dtype) {
    case RDEV_DT_INT8: return AT(int8_t);
    case RDEV_DT_UINT8: return AT(uint8_t);
    case RDEV_DT_BOOL: return AT(uint8_t) != 0;
    case RDEV_DT_INT16: return AT(int16_t);
    case RDEV_DT_UINT16: return AT(uint16_t);
    case RDEV_DT_INT32: return AT(int32_t);
    case RDEV_DT_UINT32: return AT(uint32_t);
    case RDEV_DT_INT64: return AT(int64_t);
    case RDEV_DT_UINT64: return (int64_t)AT(uint64_t);
    default: {
      double v = sim_ld(t, off);
      return v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    }
  }
}

/* Integer stores wrap (keep the low bits), as torch's integer arithmetic and casts do. */
void sim_sti(const rdev_tensor_t *t, int64_t off, int64_t v) {
  switch (t->dtype) {
    case RDEV_DT_INT8: AT(int8_t) = (int8_t)(uint8_t)v; break;
    case RDEV_DT_UINT8: AT(uint8_t) = (uint8_t)v; break;
    case RDEV_DT_BOOL: AT(uint8_t) = v != 0; break;
    case RDEV_DT_INT16: AT(int16_t) = (int16_t)(uint16_t)v; break;
    case RDEV_DT_UINT16: AT(uint16_t) = (uint16_t)v; break;
    case RDEV_DT_INT32: AT(int32_t) = (int32_t)(uint32_t)v; break;
    case RDEV_DT_UINT32: AT(uint32_t) = (uint32_t)v; break;
    case RDEV_DT_INT64: AT(int64_t) = v; break;
    case RDEV_DT_UINT64: AT(uint64_t) = (uint64_t)v; break;
    default: sim_st(t, off, (double)v); break;
  }
}

/* An integer type's range, as doubles (uint64's top is 2^64, exclusive). */
static void int_range(int dt, double *lo, double *hi) {
  switch (dt) {
    case RDEV_DT_INT8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case RDEV_DT_UINT8: *lo = 0, *hi = UINT8_MAX; break;
    case RDEV_DT_INT16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case RDEV_DT_UINT16: *lo = 0, *hi = UINT16_MAX; break;
    case RDEV_DT_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case RDEV_DT_UINT32: *lo = 0, *hi = UINT32_MAX; break;
    case RDEV_DT_UINT64: *lo = 0, *hi = 0x1p64; break; /* exclusive: 2^64 and above saturate */
    default: *lo = -0x1p63, *hi = 0x1p63; break;       /* int64: exclusive at the top */
  }
}

/* Doubles: floating types round (float16 and bfloat16 once, from the
 * double); an integer type takes v truncated toward zero, saturated at its
 * range (NaN: 0). */
void sim_st(const rdev_tensor_t *t, int64_t off, double v) {
  switch (t->dtype) {
    case RDEV_DT_FLOAT: AT(float) = (float)v; break;
    case RDEV_DT_FLOAT16: AT(uint16_t) = sim_float_to_half(sim_float_odd(v)); break;
    case RDEV_DT_BF16: AT(uint16_t) = sim_float_to_bf16(sim_float_odd(v)); break;
    case RDEV_DT_DOUBLE: AT(double) = v; break;
    case RDEV_DT_BOOL: AT(uint8_t) = v != 0; break;
    default: {
      double lo, hi;
      int_range(t->dtype, &lo, &hi);
      bool top = v >= hi && (t->dtype == RDEV_DT_INT64 || t->dtype == RDEV_DT_UINT64); /* 2^63, 2^64: no value */
      v = v != v ? 0 : v < lo ? lo : v > hi ? hi : trunc(v);
      if (t->dtype == RDEV_DT_UINT64)
        AT(uint64_t) = top ? UINT64_MAX : (uint64_t)v;
      else
        sim_sti(t, off, top ? INT64_MAX : (int64_t)v);
      break;
    }
  }
}

float sim_float_odd(double v) {
  float f = (float)v;
  if (v != v || (double)f == v) return f;                 /* NaN, or exact */
  if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f); /* truncate toward zero... */
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits |= 1; /* ...and mark it inexact: a later rounding to fewer bits rounds as v would */
  memcpy(&f, &bits, sizeof f);
  return f;
}

void sim_iter_init(sim_iter_t *it, int ndim, const int64_t *dims, const rdev_tensor_t *const *ts, int n) {
  memset(it, 0, sizeof *it);
  it->ndim = ndim;
  it->n = n;
  it->left = 1;
  for (int d = 0; d < ndim; d++) {
    it->dims[d] = dims[d];
    it->left *= dims[d];
  }
  for (int k = 0; k < n; k++) {
    const rdev_tensor_t *t = ts[k];
    it->off[k] = t->offset;
    for (int d = 0; d < ndim; d++) {
      int td = t->ndim - ndim + d;
      it->str[k][d] = td >= 0 && t->dims[td] != 1 ? t->strides[td] : 0;
    }
  }
}

/* The operator this thread runs: its stream, the work since its last look
 * at the stream, and the temporaries it took. */
static _Thread_local rdev_rt_stream_t *running;
static _Thread_local int64_t ticks;
static _Thread_local size_t temp_taken;

#define TICKS_PER_LOOK 65536

int sim_op_run(rdev_rt_stream_t *s, const rdev_op_call_t *c) {
  running = s;
  ticks = 0;
  temp_taken = 0;
  int rc = sim_op_fns[c->op](c);
  running = NULL;
  return rt_engine_cut_off(s) ? RDEV_OK : rc;
}

bool sim_op_cut(void) { return running && rt_engine_cut_off(running); }

bool sim_op_tick(int64_t n) {
  if ((ticks += n) < TICKS_PER_LOOK) return false;
  ticks = 0;
  return sim_op_cut();
}

void *sim_op_temp(size_t n, size_t size, const char *what) {
  size_t left = SIM_OP_TEMP_MAX - temp_taken;
  void *p = n <= left / size ? calloc(n ? n : 1, size) : NULL;
  if (!p)
    rt_fail(RDEV_BAD_ALLOC,
            "the sim has no host memory for %s (%zu elements of %zu bytes; an operator holds at most %zu bytes)", what,
            n, size, SIM_OP_TEMP_MAX);
  else
    temp_taken += (n ? n : 1) * size;
  return p;
}

bool sim_iter_next(sim_iter_t *it) {
  if (--it->left <= 0) return false;
  if (sim_op_tick(1)) {
    it->left = 0;
    return false;
  }
  for (int d = it->ndim - 1; d >= 0; d--) {
    if (++it->idx[d] < it->dims[d]) {
      for (int k = 0; k < it->n; k++) it->off[k] += it->str[k][d];
      return true;
    }
    for (int k = 0; k < it->n; k++) it->off[k] -= it->str[k][d] * (it->dims[d] - 1);
    it->idx[d] = 0;
  }
  return false;
}

double sim_round(int dt, double v) {
  switch (dt) {
    case RDEV_DT_FLOAT: return (float)v;
    case RDEV_DT_FLOAT16: return sim_half_to_float(sim_float_to_half(sim_float_odd(v)));
    case RDEV_DT_BF16: return sim_bf16_to_float(sim_float_to_bf16(sim_float_odd(v)));
    default: return v;
  }
}

bool sim_contiguous(const rdev_tensor_t *t) {
  int64_t want = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    if (t->dims[d] != 1 && t->strides[d] != want) return false;
    want *= t->dims[d];
  }
  return true;
}

/* The host bytes [*lo, *hi) t's view spans; false when empty. */
static bool span(const rdev_tensor_t *t, uintptr_t *lo, uintptr_t *hi) {
  rdev_tensor_t v = *t;
  v.storage_ndim = 0;
  uint64_t l, n;
  if (rdev_tensor_reach(&v, &l, &n) || n == 0) return false;
  *lo = (uintptr_t)t->addr + (uintptr_t)l;
  *hi = *lo + (uintptr_t)n;
  return true;
}

bool sim_overlap(const rdev_tensor_t *a, const rdev_tensor_t *b) {
  uintptr_t al, ah, bl, bh;
  if (!span(a, &al, &ah) || !span(b, &bl, &bh)) return false;
  return al < bh && bl < ah;
}

void sim_copy_cast(const rdev_tensor_t *dst, const rdev_tensor_t *src) {
  const rdev_tensor_t *ts[2] = {dst, src};
  sim_iter_t it;
  sim_iter_init(&it, dst->ndim, dst->dims, ts, 2);
  if (it.left <= 0) return;
  size_t esz = rdev_dtype_size(dst->dtype);
  bool fs = sim_is_float(src->dtype), fd = sim_is_float(dst->dtype);
  if (dst->dtype == src->dtype) {
    char *d = (char *)(uintptr_t)dst->addr;
    const char *s = (const char *)(uintptr_t)src->addr;
    do memcpy(d + it.off[0] * (int64_t)esz, s + it.off[1] * (int64_t)esz, esz);
    while (sim_iter_next(&it));
  } else if (!fs && !fd) {
    do sim_sti(dst, it.off[0], sim_ldi(src, it.off[1]));
    while (sim_iter_next(&it));
  } else {
    do sim_st(dst, it.off[0], sim_ld(src, it.off[1]));
    while (sim_iter_next(&it));
  }
}

rdev_tensor_t sim_scalar_tensor(const rdev_op_arg_t *a, void *cell) {
  rdev_tensor_t t = {.ndim = 0, .addr = (uint64_t)(uintptr_t)cell};
  if (sim_is_float(a->v.scalar.dtype)) {
    t.dtype = RDEV_DT_DOUBLE;
    double v = rdev_op_scalar_f64(a);
    memcpy(cell, &v, 8);
  } else {
    t.dtype = RDEV_DT_INT64;
    int64_t v = a->v.scalar.dtype == RDEV_DT_BOOL ? rdev_op_scalar_i64(a) != 0 : rdev_op_scalar_i64(a);
    memcpy(cell, &v, 8);
  }
  return t;
}

/* Whether in, broadcast to out's shape, is out's own view. */
static bool same_view(const rdev_tensor_t *out, const rdev_tensor_t *in) {
  if (in->addr != out->addr || in->offset != out->offset || rdev_dtype_size(in->dtype) != rdev_dtype_size(out->dtype))
    return false;
  const rdev_tensor_t *ts[2] = {out, in};
  sim_iter_t it;
  sim_iter_init(&it, out->ndim, out->dims, ts, 2);
  for (int d = 0; d < out->ndim; d++)
    if (out->dims[d] > 1 && it.str[0][d] != it.str[1][d]) return false;
  return true;
}

int sim_out_begin(sim_out_t *o, const rdev_tensor_t *out, const rdev_tensor_t *const *ins, int n, bool elementwise) {
  o->t = *out;
  o->out = out;
  o->mem = NULL;
  bool temp = false;
  for (int i = 0; i < n && !temp; i++)
    if (ins[i] && sim_overlap(out, ins[i]) && !(elementwise && same_view(out, ins[i]))) temp = true;
  if (!temp) return RDEV_OK;
  int64_t numel = rdev_tensor_numel(out);
  o->mem = sim_op_temp((size_t)numel, rdev_dtype_size(out->dtype), "an output's temporary");
  if (!o->mem) return RDEV_BAD_ALLOC;
  o->t.addr = (uint64_t)(uintptr_t)o->mem;
  o->t.offset = 0;
  o->t.storage_ndim = 0;
  int64_t st = 1;
  for (int d = out->ndim - 1; d >= 0; d--) {
    o->t.strides[d] = st;
    st *= out->dims[d];
  }
  return RDEV_OK;
}

void sim_out_end(sim_out_t *o) {
  if (!o->mem) return;
  if (!sim_op_cut()) sim_copy_cast(o->out, &o->t); /* a cut-off operator's output is discarded anyway */
  free(o->mem);
  o->mem = NULL;
}
