/*
 * tests/acl_double/acl_double_ops.c — the double's operator library: what
 * libnnopbase.so offers (aclCreateTensor and the other argument objects,
 * their destroys) and libopapi.so's two phases for a few operators (Add,
 * Mul, Matmul, Softmax, Cast, Cat, LayerNorm, ReduceSum, InplaceFillScalar
 * with CANN's signatures, and DoubleProbe, the double's own, which takes
 * one argument of every kind). Strict where CANN is: every object is
 * checked live and of its kind, a tensor's view inside its storage and its
 * storage inside one device allocation, a tensor list owns its members (a
 * member destroyed on its own is a violation), an executor runs once, with
 * the workspace size its first phase gave, in device memory of the current
 * device. Each phase writes one line to the file $ACL_DOUBLE_OPLOG names
 * (acl_double.h): the operator and every argument, so that a test reads
 * what the backend called. Operators of rdev's table (rdev/ops.h) are
 * checked by its rules and computed by the sim's implementation on the
 * double's stream, in stream order; the others are only checked.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_double.h"
#include "aclnn/acl_meta.h"
#include "rdev/ops.h"

#define ERR_NULLPTR 161001
#define ERR_INVALID 161002
#define ERR_INNER 561000

enum { M_TENSOR = 0x7e450001, M_SCALAR, M_INTS, M_FLOATS, M_BOOLS, M_LIST, M_EXEC };

/* Every live object, on one list. */
typedef struct dobj {
  uint32_t magic;
  struct dobj *prev, *next;
} dobj_t;

struct aclTensor {
  dobj_t h;
  rdev_tensor_t t;
  int dev;     /* the device its storage is on (-1: empty, anywhere) */
  int in_list; /* a tensor list owns it */
};
struct aclScalar {
  dobj_t h;
  int32_t dtype;
  _Alignas(8) unsigned char v[8];
};
struct aclIntArray {
  dobj_t h;
  uint64_t n;
  int64_t v[];
};
struct aclFloatArray {
  dobj_t h;
  uint64_t n;
  float v[];
};
struct aclBoolArray {
  dobj_t h;
  uint64_t n;
  bool v[];
};
struct aclTensorList {
  dobj_t h;
  uint64_t n;
  aclTensor *v[];
};
struct aclOpExecutor {
  dobj_t h;
  const char *op;
  uint64_t ws;
  rdev_op_call_t *call; /* to compute, or NULL */
};

static pthread_mutex_t ops_mu = PTHREAD_MUTEX_INITIALIZER; /* the objects, the controls, the log */
static dobj_t live = {.prev = &live, .next = &live};
static int64_t nlive;

/* ---- the double's entry points: controls and the log -------------------------- */

#define MAX_CONTROLS 32
static struct {
  char op[RDEV_OP_MAX_NAME + 1];
  int64_t ws;      /* -1: the operator's own */
  int32_t fail[3]; /* per phase (1, 2): the code the next call fails with, 0 none */
} controls[MAX_CONTROLS];

/* The control of op, made when absent (caller holds ops_mu); NULL when full. */
static __typeof__(&controls[0]) control(const char *op, int make) {
  for (int i = 0; i < MAX_CONTROLS; i++)
    if (!strcmp(controls[i].op, op)) return &controls[i];
  for (int i = 0; make && i < MAX_CONTROLS; i++)
    if (!controls[i].op[0]) {
      snprintf(controls[i].op, sizeof controls[i].op, "%s", op);
      controls[i].ws = -1;
      return &controls[i];
    }
  return NULL;
}

/* From the environment (for a double inside rdevd): var's entry for op,
 * "Op:N" (phase 0) or "Op:phase:N", entries apart by commas; 0 when none. */
static int env_control(const char *var, const char *op, int phase, int64_t *out) {
  const char *v = getenv(var);
  size_t n = strlen(op);
  for (const char *p = v; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
    if (strncmp(p, op, n) || p[n] != ':') continue;
    char *end;
    long long x = strtoll(p + n + 1, &end, 10);
    if (phase && *end == ':' && x == phase) x = strtoll(end + 1, &end, 10), phase = 0;
    if (!phase) return *out = x, 1;
  }
  return 0;
}

aclError acldoubleOpWorkspace(const char *op, int64_t bytes) {
  if (!op || !op[0] || strlen(op) > RDEV_OP_MAX_NAME || bytes < -1) return ACL_ERROR_INVALID_PARAM;
  pthread_mutex_lock(&ops_mu);
  __typeof__(&controls[0]) c = control(op, 1);
  if (c) c->ws = bytes;
  pthread_mutex_unlock(&ops_mu);
  return c ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}

aclError acldoubleOpFail(const char *op, int32_t phase, int32_t code) {
  if (!op || !op[0] || strlen(op) > RDEV_OP_MAX_NAME || phase < 1 || phase > 2) return ACL_ERROR_INVALID_PARAM;
  pthread_mutex_lock(&ops_mu);
  __typeof__(&controls[0]) c = control(op, 1);
  if (c) c->fail[phase] = code;
  pthread_mutex_unlock(&ops_mu);
  return c ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}

int64_t acldoubleOpObjects(void) {
  pthread_mutex_lock(&ops_mu);
  int64_t n = nlive;
  pthread_mutex_unlock(&ops_mu);
  return n;
}

/* Appends line (and a newline) to $ACL_DOUBLE_OPLOG, when set. */
static void log_line(const char *line) {
  const char *path = getenv(ACL_DOUBLE_OPLOG_ENV);
  if (!path || !path[0]) return;
  pthread_mutex_lock(&ops_mu);
  FILE *f = fopen(path, "a");
  if (f) {
    fprintf(f, "%s\n", line);
    fclose(f);
  }
  pthread_mutex_unlock(&ops_mu);
}

/* Fails with rc and the text, logged as a violation: a rule of CANN that
 * the caller broke (a real CANN would misbehave, not tell). */
__attribute__((format(printf, 2, 3))) static int violation(int rc, const char *fmt, ...) {
  char msg[512], line[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(line, sizeof line, "VIOLATION %s", msg);
  log_line(line);
  return dbl_fail(rc, "%s", msg);
}

/* ---- objects ----------------------------------------------------------------- */

static void *obj_new(size_t size, uint32_t magic) {
  dobj_t *o = calloc(1, size);
  if (!o) return NULL;
  o->magic = magic;
  pthread_mutex_lock(&ops_mu);
  o->next = live.next;
  o->prev = &live;
  live.next->prev = o;
  live.next = o;
  nlive++;
  pthread_mutex_unlock(&ops_mu);
  return o;
}

/* Whether p is a live object of kind magic. Caller holds ops_mu. */
static int is_live(const void *p, uint32_t magic) {
  for (dobj_t *o = live.next; o != &live; o = o->next)
    if (o == p) return o->magic == magic;
  return 0;
}

static int obj_live(const void *p, uint32_t magic) {
  pthread_mutex_lock(&ops_mu);
  int ok = is_live(p, magic);
  pthread_mutex_unlock(&ops_mu);
  return ok;
}

/* Unlinks and frees o. Caller holds ops_mu. */
static void obj_free_locked(dobj_t *o) {
  o->prev->next = o->next;
  o->next->prev = o->prev;
  o->magic = 0;
  nlive--;
  free(o);
}

/* A destroy: NULL is 161001, anything but a live object of its kind a
 * violation (CANN would free it again). */
static aclnnStatus obj_destroy(const void *p, uint32_t magic, const char *fn) {
  if (!p) return dbl_fail(ERR_NULLPTR, "%s: NULL", fn);
  pthread_mutex_lock(&ops_mu);
  int ok = is_live(p, magic), member = ok && magic == M_TENSOR && ((const aclTensor *)p)->in_list;
  if (ok && !member) {
    if (magic == M_LIST) {
      const aclTensorList *l = p;
      for (uint64_t i = 0; i < l->n; i++) obj_free_locked(&l->v[i]->h);
    }
    obj_free_locked((dobj_t *)p);
  }
  pthread_mutex_unlock(&ops_mu);
  if (!ok) return violation(ERR_INVALID, "%s: %p is not a live object of its kind (destroyed twice?)", fn, p);
  if (member) return violation(ERR_INVALID, "%s: %p belongs to a tensor list, which destroys it", fn, p);
  return 0;
}

/* The device whose one allocation holds [p, p + n), or -1 (the runtime's). */
static int device_of(const void *p, uint64_t n) {
  dbl_call_t c;
  if (dbl_enter(&c, 0, "aclnn")) return -1;
  void *base;
  size_t size;
  int dev = -1;
  if (rdev_rt_mem_lookup(c.rt, p, &base, &size, &dev) || (uint64_t)((const char *)p - (const char *)base) > size ||
      n > size - (uint64_t)((const char *)p - (const char *)base))
    dev = -1;
  dbl_leave(0);
  return dev;
}

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t *stride,
                           int64_t offset, aclFormat format, const int64_t *storageDims, uint64_t storageDimsNum,
                           void *tensorData) {
  const char *fn = __func__;
  rdev_tensor_t t = {.dtype = (int32_t)dataType, .format = (int32_t)format, .offset = offset};
  if (viewDimsNum > RDEV_OP_MAX_DIMS || (viewDimsNum && (!viewDims || !stride)))
    return dbl_fail(ERR_INVALID, "%s: up to 8 view dims, with their strides", fn), NULL;
  if (storageDimsNum < 1 || storageDimsNum > RDEV_OP_MAX_DIMS || !storageDims)
    return dbl_fail(ERR_INVALID, "%s: 1 to 8 storage dims", fn), NULL;
  if (!rdev_dtype_size(t.dtype)) return dbl_fail(ERR_INVALID, "%s: unknown data type %d", fn, t.dtype), NULL;
  if ((int)format < 0 || (int)format > 50) return dbl_fail(ERR_INVALID, "%s: unknown format %d", fn, t.format), NULL;
  t.ndim = (int32_t)viewDimsNum;
  for (uint64_t i = 0; i < viewDimsNum; i++) {
    if (viewDims[i] < 0) return dbl_fail(ERR_INVALID, "%s: dim %d is negative", fn, (int)i), NULL;
    t.dims[i] = viewDims[i];
    t.strides[i] = stride[i];
  }
  uint64_t lo, bytes, sbytes;
  if (rdev_tensor_reach(&t, &lo, &bytes)) /* the view alone */
    return dbl_fail(ERR_INVALID, "%s: the view reaches before its storage or too far", fn), NULL;
  t.storage_ndim = (int32_t)storageDimsNum;
  for (uint64_t i = 0; i < storageDimsNum; i++) {
    if (storageDims[i] < 0) return dbl_fail(ERR_INVALID, "%s: storage dim %d is negative", fn, (int)i), NULL;
    t.storage_dims[i] = storageDims[i];
  }
  uint64_t lo2;
  if (rdev_tensor_reach(&t, &lo2, &sbytes)) return dbl_fail(ERR_INVALID, "%s: the storage is too large", fn), NULL;
  if (bytes && lo + bytes > sbytes)
    return dbl_fail(ERR_INVALID, "%s: the view reaches byte %llu of a %llu-byte storage", fn,
                    (unsigned long long)(lo + bytes), (unsigned long long)sbytes),
           NULL;
  t.addr = (uint64_t)(uintptr_t)tensorData;
  int dev = -1;
  if (bytes && (dev = device_of(tensorData, sbytes)) < 0)
    return dbl_fail(ERR_INVALID, "%s: the storage [%p, +%llu) is not inside one device allocation", fn, tensorData,
                    (unsigned long long)sbytes),
           NULL;
  aclTensor *o = obj_new(sizeof *o, M_TENSOR);
  if (!o) return dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", fn), NULL;
  o->t = t;
  o->dev = dev;
  return o;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
  size_t n = rdev_dtype_size((int)dataType);
  if (!value || !n) return dbl_fail(ERR_INVALID, "%s: NULL value or unknown data type %d", __func__, dataType), NULL;
  aclScalar *o = obj_new(sizeof *o, M_SCALAR);
  if (!o) return dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__), NULL;
  o->dtype = (int32_t)dataType;
  memcpy(o->v, value, n);
  return o;
}

#define MAX_ARRAY ((uint64_t)1 << 20)
#define ARRAY(T, M, what, value, size) \
  if ((size && !value) || size > MAX_ARRAY) \
    return dbl_fail(ERR_INVALID, "%s: NULL value or more than %llu elements", __func__, \
                    (unsigned long long)MAX_ARRAY), \
           NULL; \
  T *o = obj_new(sizeof *o + size * sizeof o->v[0], M); \
  if (!o) return dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__), NULL; \
  o->n = size; \
  if (size) memcpy(o->v, value, size * sizeof o->v[0]); \
  return o;

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size){
    ARRAY(aclIntArray, M_INTS, "ints", value, size)} aclFloatArray *aclCreateFloatArray(const float *value,
                                                                                        uint64_t size){
    ARRAY(aclFloatArray, M_FLOATS, "floats", value, size)} aclBoolArray *aclCreateBoolArray(const bool *value,
                                                                                            uint64_t size) {
  for (uint64_t i = 0; value && size <= MAX_ARRAY && i < size; i++) {
    unsigned char b;
    memcpy(&b, &value[i], 1);
    if (b > 1)
      return dbl_fail(ERR_INVALID, "%s: element %llu is %u, not a bool", __func__, (unsigned long long)i, b), NULL;
  }
  ARRAY(aclBoolArray, M_BOOLS, "bools", value, size)
}

aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
  if ((size && !value) || size > RDEV_OP_MAX_LIST)
    return dbl_fail(ERR_INVALID, "%s: NULL value or more than %d tensors", __func__, RDEV_OP_MAX_LIST), NULL;
  aclTensorList *o = obj_new(sizeof *o + size * sizeof o->v[0], M_LIST);
  if (!o) return dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", __func__), NULL;
  pthread_mutex_lock(&ops_mu);
  uint64_t bad = size;
  for (uint64_t i = 0; i < size && bad == size; i++)
    if (!is_live(value[i], M_TENSOR) || value[i]->in_list) bad = i;
  for (uint64_t i = 0; i < size && bad == size; i++) {
    o->v[i] = (aclTensor *)value[i];
    o->v[i]->in_list = 1;
  }
  o->n = bad == size ? size : 0;
  pthread_mutex_unlock(&ops_mu);
  if (bad != size) {
    obj_destroy(o, M_LIST, __func__);
    return dbl_fail(ERR_INVALID, "%s: element %llu is not a live tensor of no other list", __func__,
                    (unsigned long long)bad),
           NULL;
  }
  return o;
}

aclnnStatus aclDestroyTensor(const aclTensor *p) { return obj_destroy(p, M_TENSOR, __func__); }
aclnnStatus aclDestroyScalar(const aclScalar *p) { return obj_destroy(p, M_SCALAR, __func__); }
aclnnStatus aclDestroyIntArray(const aclIntArray *p) { return obj_destroy(p, M_INTS, __func__); }
aclnnStatus aclDestroyFloatArray(const aclFloatArray *p) { return obj_destroy(p, M_FLOATS, __func__); }
aclnnStatus aclDestroyBoolArray(const aclBoolArray *p) { return obj_destroy(p, M_BOOLS, __func__); }
aclnnStatus aclDestroyTensorList(const aclTensorList *p) { return obj_destroy(p, M_LIST, __func__); }

/* ---- rendering ------------------------------------------------------------------ */

static void put_ints(FILE *m, const int64_t *v, uint64_t n) {
  fputc('[', m);
  for (uint64_t i = 0; i < n; i++) fprintf(m, "%s%lld", i ? "," : "", (long long)v[i]);
  fputc(']', m);
}

static void put_tensor(FILE *m, const aclTensor *t) {
  fprintf(m, "T(%s dims=", rdev_dtype_name(t->t.dtype));
  put_ints(m, t->t.dims, (uint64_t)t->t.ndim);
  fputs(" strides=", m);
  put_ints(m, t->t.strides, (uint64_t)t->t.ndim);
  fprintf(m, " offset=%lld format=%d storage=", (long long)t->t.offset, t->t.format);
  put_ints(m, t->t.storage_dims, (uint64_t)t->t.storage_ndim);
  fprintf(m, " addr=0x%llx)", (unsigned long long)t->t.addr);
}

/* float16 and bfloat16 bits as float. */
static float half_f(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0x1f)
    x = s | 0x7f800000u | (m << 13);
  else if (e)
    x = s | ((e + 112) << 23) | (m << 13);
  else if (!m)
    x = s;
  else { /* subnormal */
    e = 113;
    while (!(m & 0x400u)) m <<= 1, e--;
    x = s | (e << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static float bf16_f(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* A scalar's value: "float32:1.5". Also its value for an rdev call. */
static void scalar_value(const aclScalar *s, double *f, int64_t *i, uint64_t *u) {
  const unsigned char *v = s->v;
#define AS(T) (*(const T *)(const void *)v)
  *f = 0, *i = 0, *u = 0;
  switch (s->dtype) {
    case RDEV_DT_FLOAT: *f = AS(float); break;
    case RDEV_DT_FLOAT16: *f = half_f(AS(uint16_t)); break;
    case RDEV_DT_BF16: *f = bf16_f(AS(uint16_t)); break;
    case RDEV_DT_DOUBLE: *f = AS(double); break;
    case RDEV_DT_INT8: *i = AS(int8_t); break;
    case RDEV_DT_INT16: *i = AS(int16_t); break;
    case RDEV_DT_INT32: *i = AS(int32_t); break;
    case RDEV_DT_INT64: *i = AS(int64_t); break;
    case RDEV_DT_UINT8: *i = AS(uint8_t); break;
    case RDEV_DT_UINT16: *i = AS(uint16_t); break;
    case RDEV_DT_UINT32: *i = AS(uint32_t); break;
    case RDEV_DT_UINT64: *u = AS(uint64_t); break;
    case RDEV_DT_BOOL: *i = AS(uint8_t) != 0; break;
    default: break;
  }
#undef AS
}

static int float_type(int dt) {
  return dt == RDEV_DT_FLOAT || dt == RDEV_DT_FLOAT16 || dt == RDEV_DT_BF16 || dt == RDEV_DT_DOUBLE;
}

static void put_scalar(FILE *m, const aclScalar *s) {
  double f;
  int64_t i;
  uint64_t u;
  scalar_value(s, &f, &i, &u);
  fprintf(m, "S(%s:", rdev_dtype_name(s->dtype));
  if (float_type(s->dtype))
    fprintf(m, "%.17g)", f);
  else if (s->dtype == RDEV_DT_UINT64)
    fprintf(m, "%llu)", (unsigned long long)u);
  else if (s->dtype == RDEV_DT_BOOL)
    fprintf(m, "%s)", i ? "true" : "false");
  else
    fprintf(m, "%lld)", (long long)i);
}

/* ---- operators ------------------------------------------------------------------ */

/* A parameter: its name, kind and whether it may be NULL. */
typedef struct {
  const char *name;
  uint8_t kind, opt;
} dparam_t;

/* An operator as the double declares it (CANN's signature). */
typedef struct {
  const char *name;
  int n;
  dparam_t p[RDEV_OP_MAX_ARGS];
  uint64_t ws; /* the workspace its first phase asks for */
} dsig_t;

/* An argument as the C call passed it. */
typedef union {
  const void *p;
  double d;
  int64_t i;
} dval_t;

/* Builds the rdev call of op index `op` from checked arguments, one
 * allocation (the runtime's task frees it). NULL when out of memory. */
static rdev_op_call_t *to_call(int op, const dsig_t *d, const dval_t *v) {
  size_t size = sizeof(rdev_op_call_t);
  for (int i = 0; i < d->n; i++) {
    const void *p = v[i].p;
    if (!p) continue;
    switch (d->p[i].kind) {
      case RDEV_OPK_TENSOR: size += sizeof(rdev_tensor_t); break;
      case RDEV_OPK_TENSOR_LIST: size += ((const aclTensorList *)p)->n * sizeof(rdev_tensor_t); break;
      case RDEV_OPK_INT_ARRAY: size += ((const aclIntArray *)p)->n * 8; break;
      case RDEV_OPK_FLOAT_ARRAY: size += (((const aclFloatArray *)p)->n * 4 + 7) & ~(size_t)7; break;
      case RDEV_OPK_BOOL_ARRAY: size += (((const aclBoolArray *)p)->n + 7) & ~(size_t)7; break;
      default: break;
    }
  }
  rdev_op_call_t *c = calloc(1, size);
  if (!c) return NULL;
  char *more = (char *)(c + 1);
  c->op = op;
  c->nargs = d->n;
  for (int i = 0; i < d->n; i++) {
    rdev_op_arg_t *a = &c->args[i];
    const void *p = v[i].p;
    a->kind = d->p[i].kind;
    a->present = 1;
    switch (a->kind) {
      case RDEV_OPK_DOUBLE: a->v.f64 = v[i].d; continue;
      case RDEV_OPK_INT64:
      case RDEV_OPK_INT8:
      case RDEV_OPK_BOOL: a->v.i64 = v[i].i; continue;
      case RDEV_OPK_DTYPE: a->v.dtype = (int32_t)v[i].i; continue;
      default: break;
    }
    if (!p) {
      a->present = 0;
      continue;
    }
    switch (a->kind) {
      case RDEV_OPK_TENSOR:
        a->n = 1;
        a->v.t = (rdev_tensor_t *)more;
        *a->v.t = ((const aclTensor *)p)->t;
        more += sizeof(rdev_tensor_t);
        break;
      case RDEV_OPK_TENSOR_LIST: {
        const aclTensorList *l = p;
        a->n = (uint32_t)l->n;
        a->v.t = (rdev_tensor_t *)more;
        for (uint64_t k = 0; k < l->n; k++) a->v.t[k] = l->v[k]->t;
        more += l->n * sizeof(rdev_tensor_t);
        break;
      }
      case RDEV_OPK_SCALAR: {
        const aclScalar *s = p;
        double f;
        int64_t x;
        uint64_t u;
        scalar_value(s, &f, &x, &u);
        a->v.scalar.dtype = s->dtype;
        if (float_type(s->dtype))
          a->v.scalar.v.f = f;
        else if (s->dtype == RDEV_DT_UINT64)
          a->v.scalar.v.u = u;
        else
          a->v.scalar.v.i = x;
        break;
      }
      case RDEV_OPK_INT_ARRAY: {
        const aclIntArray *x = p;
        a->n = (uint32_t)x->n;
        memcpy(more, x->v, x->n * 8);
        a->v.ints = (const int64_t *)more;
        more += x->n * 8;
        break;
      }
      case RDEV_OPK_FLOAT_ARRAY: {
        const aclFloatArray *x = p;
        a->n = (uint32_t)x->n;
        memcpy(more, x->v, x->n * 4);
        a->v.floats = (const float *)more;
        more += (x->n * 4 + 7) & ~(size_t)7;
        break;
      }
      case RDEV_OPK_BOOL_ARRAY: {
        const aclBoolArray *x = p;
        a->n = (uint32_t)x->n;
        for (uint64_t k = 0; k < x->n; k++) more[k] = x->v[k];
        a->v.bools = (const uint8_t *)more;
        more += (x->n + 7) & ~(size_t)7;
        break;
      }
      default: break;
    }
  }
  return c;
}

/* The first phase of operator d: checks and renders every argument, makes
 * the executor. */
static aclnnStatus prepare(const dsig_t *d, const dval_t *v, uint64_t *workspaceSize, aclOpExecutor **executor) {
  char fn[RDEV_OP_MAX_NAME + 32];
  snprintf(fn, sizeof fn, "aclnn%sGetWorkspaceSize", d->name);
  dbl_call_t c;
  aclnnStatus rc = dbl_enter(&c, 1, fn);
  if (rc) return rc;
  char *line = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&line, &len);
  if (!m) return dbl_leave(dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", fn));
  fputs(fn, m);
  if (!workspaceSize || !executor) rc = dbl_fail(ERR_NULLPTR, "%s: workspaceSize or executor is NULL", fn);
  static const uint32_t magic[] = {
      [RDEV_OPK_TENSOR] = M_TENSOR,  [RDEV_OPK_TENSOR_LIST] = M_LIST, [RDEV_OPK_SCALAR] = M_SCALAR,
      [RDEV_OPK_INT_ARRAY] = M_INTS, [RDEV_OPK_BOOL_ARRAY] = M_BOOLS, [RDEV_OPK_FLOAT_ARRAY] = M_FLOATS};
  pthread_mutex_lock(&ops_mu); /* the objects stay as they are while they are read */
  for (int i = 0; i < d->n && !rc; i++) {
    const dparam_t *p = &d->p[i];
    fprintf(m, " %s=", p->name);
    switch (p->kind) {
      case RDEV_OPK_DOUBLE: fprintf(m, "%.17g", v[i].d); continue;
      case RDEV_OPK_INT64:
      case RDEV_OPK_INT8: fprintf(m, "%lld", (long long)v[i].i); continue;
      case RDEV_OPK_BOOL: fprintf(m, "%s", v[i].i ? "true" : "false"); continue;
      case RDEV_OPK_DTYPE: fprintf(m, "%s", rdev_dtype_name((int)v[i].i)); continue;
      default: break;
    }
    const void *o = v[i].p;
    if (!o) {
      fputs("null", m);
      if (!p->opt) rc = dbl_fail(ERR_NULLPTR, "%s: %s is NULL", fn, p->name);
      continue;
    }
    if (!is_live(o, magic[p->kind])) {
      pthread_mutex_unlock(&ops_mu);
      rc = violation(ERR_INVALID, "%s: %s (%p) is not a live object of its kind", fn, p->name, o);
      pthread_mutex_lock(&ops_mu);
      break;
    }
    switch (p->kind) {
      case RDEV_OPK_TENSOR: {
        const aclTensor *t = o;
        put_tensor(m, t);
        if (t->dev >= 0 && t->dev != c.dev)
          rc = dbl_fail(ERR_INVALID, "%s: %s is memory of device %d, the current context's is %d", fn, p->name, t->dev,
                        c.dev);
        break;
      }
      case RDEV_OPK_TENSOR_LIST: {
        const aclTensorList *l = o;
        fputs("L[", m);
        for (uint64_t k = 0; k < l->n; k++) {
          if (k) fputc(',', m);
          put_tensor(m, l->v[k]);
          if (l->v[k]->dev >= 0 && l->v[k]->dev != c.dev)
            rc = dbl_fail(ERR_INVALID, "%s: %s[%llu] is memory of device %d, the current context's is %d", fn, p->name,
                          (unsigned long long)k, l->v[k]->dev, c.dev);
        }
        fputc(']', m);
        break;
      }
      case RDEV_OPK_SCALAR: put_scalar(m, o); break;
      case RDEV_OPK_INT_ARRAY:
        fputs("I", m);
        put_ints(m, ((const aclIntArray *)o)->v, ((const aclIntArray *)o)->n);
        break;
      case RDEV_OPK_FLOAT_ARRAY: {
        const aclFloatArray *x = o;
        fputs("F[", m);
        for (uint64_t k = 0; k < x->n; k++) fprintf(m, "%s%.9g", k ? "," : "", (double)x->v[k]);
        fputc(']', m);
        break;
      }
      case RDEV_OPK_BOOL_ARRAY: {
        const aclBoolArray *x = o;
        fputs("B[", m);
        for (uint64_t k = 0; k < x->n; k++) fprintf(m, "%s%s", k ? "," : "", x->v[k] ? "true" : "false");
        fputc(']', m);
        break;
      }
      default: break;
    }
  }
  __typeof__(&controls[0]) ctl = control(d->name, 0);
  uint64_t ws = ctl && ctl->ws >= 0 ? (uint64_t)ctl->ws : d->ws;
  int32_t injected = ctl ? ctl->fail[1] : 0;
  if (ctl) ctl->fail[1] = 0;
  int64_t env;
  if (env_control(ACL_DOUBLE_OP_WORKSPACE_ENV, d->name, 0, &env) && env >= 0) ws = (uint64_t)env;
  if (!injected && env_control(ACL_DOUBLE_OP_FAIL_ENV, d->name, 1, &env)) injected = (int32_t)env;
  /* the rdev call, checked by the table's rules, to compute with the sim */
  int count;
  const rdev_op_sig_t *sig = rdev_op_find(d->name), *all = rdev_op_table(&count);
  rdev_op_call_t *call = NULL;
  if (!rc && sig) {
    int same = sig->nparams == d->n;
    for (int i = 0; same && i < d->n; i++) same = sig->params[i].kind == d->p[i].kind;
    if (!same)
      rc = dbl_fail(ERR_INNER, "%s: the double's signature differs from rdev's table (proto/ops/ops.def)", fn);
    else if (!(call = to_call((int)(sig - all), d, v)))
      rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", fn);
  }
  pthread_mutex_unlock(&ops_mu);
  char msg[256];
  if (!rc && call && (rc = rdev_op_check(call, msg, sizeof msg))) rc = dbl_fail(rc, "%s: %s", fn, msg);
  if (!rc && injected) rc = dbl_fail(injected, "%s: failure injected by acldoubleOpFail", fn);
  aclOpExecutor *ex = NULL;
  if (!rc && !(ex = obj_new(sizeof *ex, M_EXEC))) rc = dbl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of host memory", fn);
  if (!rc) {
    ex->op = d->name;
    ex->ws = ws;
    ex->call = call;
    call = NULL;
    *workspaceSize = ws;
    *executor = ex;
    fprintf(m, " -> workspace=%llu", (unsigned long long)ws);
  } else {
    fprintf(m, " -> error %d", rc);
  }
  free(call);
  fclose(m);
  log_line(line);
  free(line);
  return dbl_leave(rc);
}

/* The second phase: the executor of the first, its workspace, the stream. */
static aclnnStatus run(const char *op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                       aclrtStream stream) {
  char fn[RDEV_OP_MAX_NAME + 8], line[256];
  snprintf(fn, sizeof fn, "aclnn%s", op);
  dbl_call_t c;
  aclnnStatus rc = dbl_enter(&c, 1, fn);
  if (rc) return rc;
  dbl_obj_t *s = NULL;
  if (!obj_live(executor, M_EXEC))
    rc = violation(ERR_INVALID, "%s: %p is no executor of a first phase, or it ran already", fn, (void *)executor);
  else if (strcmp(executor->op, op))
    rc = violation(ERR_INVALID, "%s: the executor is aclnn%s's", fn, executor->op);
  else if (workspaceSize != executor->ws)
    rc = violation(ERR_INVALID, "%s: workspaceSize %llu, the first phase asked for %llu", fn,
                   (unsigned long long)workspaceSize, (unsigned long long)executor->ws);
  else if (workspaceSize && device_of(workspace, workspaceSize) != c.dev)
    rc = violation(ERR_INVALID, "%s: the workspace [%p, +%llu) is not in one allocation of device %d", fn, workspace,
                   (unsigned long long)workspaceSize, c.dev);
  if (!rc) {
    pthread_mutex_lock(&dbl.mu);
    rc = dbl_stream_pin(&c, stream, &s, fn);
    pthread_mutex_unlock(&dbl.mu);
  }
  pthread_mutex_lock(&ops_mu);
  __typeof__(&controls[0]) ctl = control(op, 0);
  int32_t injected = ctl ? ctl->fail[2] : 0;
  if (ctl && !rc) ctl->fail[2] = 0;
  pthread_mutex_unlock(&ops_mu);
  int64_t env;
  if (!injected && env_control(ACL_DOUBLE_OP_FAIL_ENV, op, 2, &env)) injected = (int32_t)env;
  if (!rc && injected) rc = dbl_fail(injected, "%s: failure injected by acldoubleOpFail", fn);
  if (!rc) {
    snprintf(line, sizeof line, "%s workspace=%llu", fn, (unsigned long long)workspaceSize);
    log_line(line);
    rdev_op_call_t *call = executor->call;
    executor->call = NULL;
    if (call) rc = dbl_rt_result(rdev_rt_op_launch(s->u.s, call), fn); /* owns call */
  }
  if (obj_live(executor, M_EXEC) && !strcmp(executor->op, op)) { /* single use: gone once run (or refused) */
    free(executor->call);
    obj_destroy(executor, M_EXEC, fn);
  }
  dbl_unpin(s);
  return dbl_leave(rc);
}

/* ---- the operators ------------------------------------------------------------- */

#define T(n) \
  { #n, RDEV_OPK_TENSOR, 0 }
#define TO(n) \
  { #n, RDEV_OPK_TENSOR, 1 }
#define PN(n, k) \
  { #n, RDEV_OPK_##k, 0 }
#define PO(n, k) \
  { #n, RDEV_OPK_##k, 1 }

static const dsig_t S_ADD = {"Add", 4, {T(self), T(other), PN(alpha, SCALAR), T(out)}, 0};
static const dsig_t S_MUL = {"Mul", 3, {T(self), T(other), T(out)}, 0};
static const dsig_t S_MATMUL = {"Matmul", 4, {T(self), T(mat2), T(out), PN(cubeMathType, INT8)}, 8192};
static const dsig_t S_SOFTMAX = {"Softmax", 3, {T(self), PN(dim, INT64), T(out)}, 0};
static const dsig_t S_CAST = {"Cast", 3, {T(self), PN(dtype, DTYPE), T(out)}, 0};
static const dsig_t S_CAT = {"Cat", 3, {PN(tensors, TENSOR_LIST), PN(dim, INT64), T(out)}, 0};
static const dsig_t S_LAYER_NORM = {"LayerNorm",
                                    8,
                                    {T(input), PN(normalizedShape, INT_ARRAY), TO(weightOptional), TO(biasOptional),
                                     PN(eps, DOUBLE), T(out), TO(meanOutOptional), TO(rstdOutOptional)},
                                    2048};
static const dsig_t S_REDUCE_SUM = {
    "ReduceSum", 5, {T(self), PN(dim, INT_ARRAY), PN(keepDims, BOOL), PN(dtype, DTYPE), T(out)}, 0};
static const dsig_t S_FILL = {"InplaceFillScalar", 2, {T(selfRef), PN(value, SCALAR)}, 0};
static const dsig_t S_PROBE = {
    "DoubleProbe",
    12,
    {TO(self), PN(flags, BOOL_ARRAY), PN(weights, FLOAT_ARRAY), PN(eps, DOUBLE), PN(dim, INT64), PN(mode, INT8),
     PN(keep, BOOL), PN(dtype, DTYPE), PO(value, SCALAR), PN(tensors, TENSOR_LIST), PO(sizes, INT_ARRAY), T(out)},
    512};

#define P(x) \
  { .p = (x) }
#define DECLARE(Op, params) \
  aclnnStatus aclnn##Op##GetWorkspaceSize params; \
  aclnnStatus aclnn##Op(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);
#define D(x) \
  { .d = (x) }
#define I(x) \
  { .i = (int64_t)(x) }
#define PHASES(Op, S, params, ...) \
  DECLARE(Op, params) \
  aclnnStatus aclnn##Op##GetWorkspaceSize params { \
    const dval_t v[] = {__VA_ARGS__}; \
    return prepare(&S, v, workspaceSize, executor); \
  } \
  aclnnStatus aclnn##Op(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) { \
    return run(#Op, workspace, workspaceSize, executor, stream); \
  }

PHASES(Add, S_ADD,
       (const aclTensor *self, const aclTensor *other, const aclScalar *alpha, aclTensor *out, uint64_t *workspaceSize,
        aclOpExecutor **executor),
       P(self), P(other), P(alpha), P(out))
PHASES(Mul, S_MUL,
       (const aclTensor *self, const aclTensor *other, aclTensor *out, uint64_t *workspaceSize,
        aclOpExecutor **executor),
       P(self), P(other), P(out))
PHASES(Matmul, S_MATMUL,
       (const aclTensor *self, const aclTensor *mat2, aclTensor *out, int8_t cubeMathType, uint64_t *workspaceSize,
        aclOpExecutor **executor),
       P(self), P(mat2), P(out), I(cubeMathType))
PHASES(Softmax, S_SOFTMAX,
       (const aclTensor *self, int64_t dim, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor), P(self),
       I(dim), P(out))
PHASES(Cast, S_CAST,
       (const aclTensor *self, const aclDataType dtype, aclTensor *out, uint64_t *workspaceSize,
        aclOpExecutor **executor),
       P(self), I(dtype), P(out))
PHASES(Cat, S_CAT,
       (const aclTensorList *tensors, int64_t dim, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor),
       P(tensors), I(dim), P(out))
PHASES(LayerNorm, S_LAYER_NORM,
       (const aclTensor *input, const aclIntArray *normalizedShape, const aclTensor *weightOptional,
        const aclTensor *biasOptional, double eps, aclTensor *out, aclTensor *meanOutOptional,
        aclTensor *rstdOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor),
       P(input), P(normalizedShape), P(weightOptional), P(biasOptional), D(eps), P(out), P(meanOutOptional),
       P(rstdOutOptional))
PHASES(ReduceSum, S_REDUCE_SUM,
       (const aclTensor *self, const aclIntArray *dim, bool keepDims, aclDataType dtype, aclTensor *out,
        uint64_t *workspaceSize, aclOpExecutor **executor),
       P(self), P(dim), I(keepDims), I(dtype), P(out))
PHASES(InplaceFillScalar, S_FILL,
       (aclTensor * selfRef, const aclScalar *value, uint64_t *workspaceSize, aclOpExecutor **executor), P(selfRef),
       P(value))
PHASES(DoubleProbe, S_PROBE,
       (const aclTensor *self, const aclBoolArray *flags, const aclFloatArray *weights, double eps, int64_t dim,
        int8_t mode, bool keep, aclDataType dtype, const aclScalar *value, const aclTensorList *tensors,
        const aclIntArray *sizes, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor),
       P(self), P(flags), P(weights), D(eps), I(dim), I(mode), I(keep), I(dtype), P(value), P(tensors), P(sizes),
       P(out))
