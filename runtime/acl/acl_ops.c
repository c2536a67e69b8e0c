/*
 * runtime/acl/acl_ops.c — operators (rdev/ops.h) on the acl backend, through
 * CANN's operator library: libnnopbase.so (aclCreateTensor and the other
 * argument objects) and libopapi.so (aclnn<Op>GetWorkspaceSize and
 * aclnn<Op>, found by name for each operator of rdev_op_table()), loaded
 * at open (acl_ops_load) and never unloaded, like the CANN runtime.
 *
 * One generic call path carries every operator: the signature table's
 * argument kinds give the C types of the first phase's parameters, and
 * libffi makes the call. A task (acl_op_exec, on the stream's worker, in
 * stream order) builds a CANN object per argument, calls the first phase,
 * allocates the workspace it asks for on the stream's device, runs the
 * second phase on the stream, synchronizes it (as every device task of this
 * backend), then frees the workspace and destroys the objects. Missing
 * libraries leave the backend without operators; an operator whose two
 * functions are not both found is not offered.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <ffi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "acl_internal.h"

/* One operator's two functions and the first phase's call interface. */
struct acl_opfn {
  void *ws;                                                     /* aclnn<Op>GetWorkspaceSize */
  int32_t (*run)(void *ws, uint64_t size, void *ex, void *stm); /* aclnn<Op> */
  ffi_cif cif;
  ffi_type *types[RDEV_OP_MAX_ARGS + 2]; /* the parameters, then workspaceSize and executor */
};

/* The operator library: libnnopbase.so's object calls, an opapi handle. */
struct acl_nnop {
  void *opapi;
  void *(*CreateTensor)(const int64_t *dims, uint64_t ndim, int32_t dtype, const int64_t *strides, int64_t offset,
                        int32_t format, const int64_t *storage, uint64_t nstorage, void *data);
  void *(*CreateScalar)(void *value, int32_t dtype);
  void *(*CreateIntArray)(const int64_t *v, uint64_t n);
  void *(*CreateFloatArray)(const float *v, uint64_t n);
  void *(*CreateBoolArray)(const bool *v, uint64_t n);
  void *(*CreateTensorList)(void *const *v, uint64_t n);
  int32_t (*DestroyTensor)(void *p);
  int32_t (*DestroyScalar)(void *p);
  int32_t (*DestroyIntArray)(void *p);
  int32_t (*DestroyFloatArray)(void *p);
  int32_t (*DestroyBoolArray)(void *p);
  int32_t (*DestroyTensorList)(void *p); /* destroys its member tensors too, as CANN */
  int nops;
  acl_opfn_t **fns; /* per operator of rdev_op_table(); NULL = not offered */
};

/* ---- loading --------------------------------------------------------------- */

/* The object calls from handle h; 0 when one is missing. */
static int resolve_objects(acl_nnop_t *n, void *h) {
#define GET(f) \
  if (!(*(void **)&n->f = dlsym(h, "acl" #f))) return 0;
  GET(CreateTensor)
  GET(CreateScalar)
  GET(CreateIntArray)
  GET(CreateFloatArray)
  GET(CreateBoolArray)
  GET(CreateTensorList)
  GET(DestroyTensor)
  GET(DestroyScalar)
  GET(DestroyIntArray)
  GET(DestroyFloatArray)
  GET(DestroyBoolArray)
  GET(DestroyTensorList)
#undef GET
  return 1;
}

/* Appends "what (why)" to tried. */
static void note(char *tried, size_t cap, const char *what, const char *why) {
  size_t len = strlen(tried);
  snprintf(tried + len, cap - len, "%s%.1024s (%.1024s)", len ? "; " : "", what, why);
}

/* Loads the object calls from nnop_path and the operators' library from
 * opapi_path (the same file is both: the test double, or a libopapi.so
 * whose dependencies hold libnnopbase.so). Returns 1 when n is filled;
 * else notes why in tried and unloads what it loaded. */
static int try_load(acl_nnop_t *n, const char *nnop_path, const char *opapi_path, char *tried, size_t cap) {
  void *nh = dlopen(nnop_path, RTLD_NOW | RTLD_LOCAL);
  if (!nh) return note(tried, cap, nnop_path, dlerror()), 0;
  void *oh = strcmp(nnop_path, opapi_path) ? dlopen(opapi_path, RTLD_NOW | RTLD_LOCAL) : nh;
  if (!oh) {
    note(tried, cap, opapi_path, dlerror());
    dlclose(nh);
    return 0;
  }
  const char *why = NULL;
  if (dlsym(oh, ACL_RDEV_CLIENT_MARKER) || dlsym(nh, ACL_RDEV_CLIENT_MARKER))
    why = "rdev's own client library, which talks to an rdevd";
  else if (!resolve_objects(n, nh))
    why = "lacks aclCreateTensor or another object call of libnnopbase.so";
  if (why) {
    note(tried, cap, opapi_path, why);
    if (oh != nh) dlclose(oh);
    dlclose(nh);
    return 0;
  }
  n->opapi = oh; /* both stay mapped: CANN's threads may outlive a dlclose */
  return 1;
}

/* The C type of a parameter of kind k. */
static ffi_type *kind_type(int k) {
  switch (k) {
    case RDEV_OPK_DOUBLE: return &ffi_type_double;
    case RDEV_OPK_INT64: return &ffi_type_sint64;
    case RDEV_OPK_INT8: return &ffi_type_sint8;
    case RDEV_OPK_BOOL: return &ffi_type_uint8;
    case RDEV_OPK_DTYPE: return &ffi_type_sint32;
    default: return &ffi_type_pointer; /* objects */
  }
}

acl_opfn_t *acl_opfn_bind(const acl_nnop_t *n, const rdev_op_sig_t *sig) {
  char name[RDEV_OP_MAX_NAME + 32];
  snprintf(name, sizeof name, "aclnn%sGetWorkspaceSize", sig->name);
  void *ws = dlsym(n->opapi, name);
  snprintf(name, sizeof name, "aclnn%s", sig->name);
  void *run = dlsym(n->opapi, name);
  acl_opfn_t *f = ws && run ? calloc(1, sizeof *f) : NULL;
  if (!f) return NULL;
  f->ws = ws;
  *(void **)&f->run = run;
  for (int i = 0; i < sig->nparams; i++) f->types[i] = kind_type(sig->params[i].kind);
  f->types[sig->nparams] = f->types[sig->nparams + 1] = &ffi_type_pointer;
  if (ffi_prep_cif(&f->cif, FFI_DEFAULT_ABI, (unsigned)sig->nparams + 2, &ffi_type_sint32, f->types) != FFI_OK) {
    free(f);
    return NULL;
  }
  return f;
}

void acl_opfn_free(acl_opfn_t *f) { free(f); }

int acl_ops_load(acl_t *a, const char *where) {
  acl_nnop_t *n = calloc(1, sizeof *n);
  if (!n) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  char tried[8192] = "";
  int ok = 0;
  struct stat st;
  if (where) { /* given: a directory holding both libraries, or one library */
    if (stat(where, &st) == 0 && S_ISDIR(st.st_mode)) {
      char np[4200], op[4200];
      snprintf(np, sizeof np, "%.4096s/libnnopbase.so", where);
      snprintf(op, sizeof op, "%.4096s/libopapi.so", where);
      ok = try_load(n, np, op, tried, sizeof tried);
    } else {
      ok = try_load(n, where, where, tried, sizeof tried);
    }
    if (!ok) {
      free(n);
      return rt_fail(RDEV_API_NOT_SUPPORT, "cannot load CANN's operator library (--acl-opapi): tried %s", tried);
    }
  } else { /* the ACL library itself (the test double), next to it, $ASCEND_HOME_PATH/lib64, the loader's path */
    const char *lib = acl_loaded_path();
    void *self = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (self && dlsym(self, "aclCreateTensor")) ok = try_load(n, lib, lib, tried, sizeof tried);
    if (self) dlclose(self);
    const char *slash = strrchr(lib, '/'), *home = getenv("ASCEND_HOME_PATH");
    char dirs[2][4096];
    int nd = 0;
    if (slash)
      snprintf(dirs[nd++], sizeof dirs[0], "%.*s/", (int)(slash - lib) < 4000 ? (int)(slash - lib) : 4000, lib);
    if (home && *home) snprintf(dirs[nd++], sizeof dirs[0], "%.4000s/lib64/", home);
    for (int i = 0; i <= nd && !ok; i++) {
      char np[4200], op[4200];
      const char *dir = i < nd ? dirs[i] : "";
      snprintf(np, sizeof np, "%.4096slibnnopbase.so", dir);
      snprintf(op, sizeof op, "%.4096slibopapi.so", dir);
      ok = try_load(n, np, op, tried, sizeof tried);
    }
    if (!ok) { /* no operators: op_offered says so */
      free(n);
      return RDEV_OK;
    }
  }
  const rdev_op_sig_t *sigs = rdev_op_table(&n->nops);
  n->fns = calloc((size_t)(n->nops > 0 ? n->nops : 1), sizeof *n->fns);
  if (!n->fns) {
    free(n);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  for (int i = 0; i < n->nops; i++) n->fns[i] = acl_opfn_bind(n, &sigs[i]);
  a->nnop = n;
  return RDEV_OK;
}

void acl_ops_unload(acl_t *a) {
  acl_nnop_t *n = a->nnop;
  if (!n) return;
  for (int i = 0; i < n->nops; i++) acl_opfn_free(n->fns[i]);
  free(n->fns);
  free(n);
  a->nnop = NULL;
}

int acl_op_offered(void *impl, int index) {
  const acl_nnop_t *n = ((acl_t *)impl)->nnop;
  return n && index >= 0 && index < n->nops && n->fns[index] != NULL;
}

/* ---- arguments --------------------------------------------------------------- */

/* float to IEEE half (round to nearest even). */
static uint16_t to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0)); /* inf, nan */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                                   /* overflows */
  if (ax < 0x38800000u) {                                                                     /* subnormal, 0 */
    if (ax < 0x33000000u) return sign;
    uint32_t e = ax >> 23, man = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)e;
    uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t v = ax - 0x38000000u, q = v >> 13, rem = v & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++;
  return (uint16_t)(sign | q);
}

/* float to bfloat16 (round to nearest even). */
static uint16_t to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* aclCreateScalar of a scalar argument, its value in its own data type. */
static void *make_scalar(const acl_nnop_t *n, const rdev_op_arg_t *a) {
  union {
    float f;
    double d;
    uint16_t h;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    bool b;
  } v;
  memset(&v, 0, sizeof v);
  int64_t i = rdev_op_scalar_i64(a);
  double f = rdev_op_scalar_f64(a);
  switch (a->v.scalar.dtype) {
    case RDEV_DT_FLOAT: v.f = (float)f; break;
    case RDEV_DT_FLOAT16: v.h = to_half((float)f); break;
    case RDEV_DT_BF16: v.h = to_bf16((float)f); break;
    case RDEV_DT_DOUBLE: v.d = f; break;
    case RDEV_DT_INT8: v.i8 = (int8_t)i; break;
    case RDEV_DT_INT16: v.i16 = (int16_t)i; break;
    case RDEV_DT_INT32: v.i32 = (int32_t)i; break;
    case RDEV_DT_INT64: v.i64 = i; break;
    case RDEV_DT_UINT8: v.u8 = (uint8_t)i; break;
    case RDEV_DT_UINT16: v.u16 = (uint16_t)i; break;
    case RDEV_DT_UINT32: v.u32 = (uint32_t)i; break;
    case RDEV_DT_UINT64: v.u64 = a->v.scalar.v.u; break;
    case RDEV_DT_BOOL: v.b = i != 0; break;
    default: return NULL;
  }
  return n->CreateScalar(&v, a->v.scalar.dtype);
}

/* aclCreateTensor of t. Without storage dims the storage is the elements
 * from t->addr to the view's last one, in one dimension. */
static void *make_tensor(const acl_nnop_t *n, const rdev_tensor_t *t) {
  int64_t storage[RDEV_OP_MAX_DIMS];
  uint64_t ns = (uint64_t)t->storage_ndim;
  memcpy(storage, t->storage_dims, sizeof storage);
  if (ns == 0) {
    uint64_t lo, bytes, esz = rdev_dtype_size(t->dtype);
    if (rdev_tensor_reach(t, &lo, &bytes) || !esz) return NULL;
    storage[0] = (int64_t)((lo + bytes) / esz);
    ns = 1;
  }
  return n->CreateTensor(t->dims, (uint64_t)t->ndim, t->dtype, t->strides, t->offset, t->format, storage, ns,
                         (void *)(uintptr_t)t->addr);
}

/* The CANN objects of one call. */
typedef struct {
  void *obj[RDEV_OP_MAX_ARGS];
} objs_t;

static void destroy_obj(const acl_nnop_t *n, int kind, void *o) {
  if (!o) return;
  switch (kind) {
    case RDEV_OPK_TENSOR: n->DestroyTensor(o); break;
    case RDEV_OPK_TENSOR_LIST: n->DestroyTensorList(o); break;
    case RDEV_OPK_SCALAR: n->DestroyScalar(o); break;
    case RDEV_OPK_INT_ARRAY: n->DestroyIntArray(o); break;
    case RDEV_OPK_BOOL_ARRAY: n->DestroyBoolArray(o); break;
    case RDEV_OPK_FLOAT_ARRAY: n->DestroyFloatArray(o); break;
    default: break;
  }
}

static void destroy_objs(const acl_nnop_t *n, const rdev_op_call_t *c, objs_t *o) {
  for (int i = 0; i < c->nargs; i++) destroy_obj(n, c->args[i].kind, o->obj[i]);
}

/* A tensor list: its member tensors, then the list, which owns them. */
static void *make_list(const acl_nnop_t *n, const rdev_op_arg_t *a) {
  void **m = calloc(a->n ? a->n : 1, sizeof *m);
  if (!m) return NULL;
  uint32_t k = 0;
  while (k < a->n && (m[k] = make_tensor(n, &a->v.t[k]))) k++;
  void *l = k == a->n ? n->CreateTensorList(m, a->n) : NULL;
  if (!l)
    while (k > 0) n->DestroyTensor(m[--k]);
  free(m);
  return l;
}

/* Builds the objects of c's arguments; an argument that is no object
 * leaves NULL. RDEV_OK, or 161002 naming the argument CANN refused. */
static int make_objs(acl_t *a, const acl_nnop_t *n, const rdev_op_sig_t *sig, const rdev_op_call_t *c, objs_t *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < c->nargs; i++) {
    const rdev_op_arg_t *x = &c->args[i];
    if (!x->present) continue;
    bool *bools = NULL;
    switch (x->kind) {
      case RDEV_OPK_TENSOR: o->obj[i] = make_tensor(n, x->v.t); break;
      case RDEV_OPK_TENSOR_LIST: o->obj[i] = make_list(n, x); break;
      case RDEV_OPK_SCALAR: o->obj[i] = make_scalar(n, x); break;
      case RDEV_OPK_INT_ARRAY: o->obj[i] = n->CreateIntArray(x->v.ints, x->n); break;
      case RDEV_OPK_FLOAT_ARRAY: o->obj[i] = n->CreateFloatArray(x->v.floats, x->n); break;
      case RDEV_OPK_BOOL_ARRAY: /* bool is one byte holding 0 or 1 */
        if (!(bools = malloc(x->n ? x->n : 1))) break;
        for (uint32_t k = 0; k < x->n; k++) bools[k] = x->v.bools[k] != 0;
        o->obj[i] = n->CreateBoolArray(bools, x->n);
        free(bools);
        break;
      default: continue;
    }
    if (!o->obj[i]) {
      char what[160];
      snprintf(what, sizeof what, "aclnn%s: making the CANN object of %s", sig->name, sig->params[i].name);
      destroy_objs(n, c, o);
      return acl_fail(a, RDEV_OP_PARAM_INVALID, what);
    }
  }
  return RDEV_OK;
}

/* ---- running ----------------------------------------------------------------- */

int acl_op_call(acl_t *a, rdev_rt_stream_t *s, const rdev_op_sig_t *sig, const acl_opfn_t *f, const rdev_op_call_t *c) {
  const acl_nnop_t *n = a->nnop;
  if (!n || !f) return rt_fail(RDEV_UNKNOWN_KERNEL, "operator aclnn%s is not offered by the acl backend", sig->name);
  if (c->nargs != sig->nparams)
    return rt_fail(RDEV_INTERNAL_ERROR, "aclnn%s: %d arguments for %d parameters", sig->name, c->nargs, sig->nparams);
  int rc = acl_enter(a, s->dev);
  if (rc) return rc;
  objs_t o;
  if ((rc = make_objs(a, n, sig, c, &o))) return rc;
  union {
    void *p;
    double d;
    int64_t i64;
    int8_t i8;
    uint8_t b;
    int32_t dt;
  } v[RDEV_OP_MAX_ARGS + 2];
  void *args[RDEV_OP_MAX_ARGS + 2];
  uint64_t ws_size = 0;
  void *executor = NULL;
  for (int i = 0; i < c->nargs; i++) {
    const rdev_op_arg_t *x = &c->args[i];
    switch (x->kind) {
      case RDEV_OPK_DOUBLE: v[i].d = x->v.f64; break;
      case RDEV_OPK_INT64: v[i].i64 = x->v.i64; break;
      case RDEV_OPK_INT8: v[i].i8 = (int8_t)x->v.i64; break;
      case RDEV_OPK_BOOL: v[i].b = x->v.i64 != 0; break;
      case RDEV_OPK_DTYPE: v[i].dt = x->v.dtype; break;
      default: v[i].p = o.obj[i]; break;
    }
    args[i] = &v[i];
  }
  v[c->nargs].p = &ws_size;
  v[c->nargs + 1].p = &executor;
  args[c->nargs] = &v[c->nargs];
  args[c->nargs + 1] = &v[c->nargs + 1];
  ffi_arg ret = 0;
  ffi_call((ffi_cif *)&f->cif, FFI_FN(f->ws), &ret, args);
  int32_t e = (int32_t)ret;
  char what[RDEV_OP_MAX_NAME + 64];
  void *ws = NULL;
  if (e) {
    snprintf(what, sizeof what, "aclnn%sGetWorkspaceSize", sig->name);
    rc = acl_fail(a, e, what);
  } else if (ws_size > 0 && (e = a->api->rtMalloc(&ws, ws_size, 0 /* ACL_MEM_MALLOC_HUGE_FIRST */))) {
    snprintf(what, sizeof what, "aclrtMalloc of aclnn%s's %llu-byte workspace", sig->name, (unsigned long long)ws_size);
    rc = acl_fail(a, e, what); /* CANN offers no way to drop a single-use executor unrun */
  } else {
    snprintf(what, sizeof what, "aclnn%s", sig->name);
    e = f->run(ws, ws_size, executor, s->dev_stream);
    if (e) rc = acl_fail(a, e, what);
    if (!e || ws) { /* the workspace is freed once nothing on the stream can use it */
      int se = a->api->rtSynchronizeStreamWithTimeout(s->dev_stream, -1);
      if (se == RDEV_RT_STREAM_ABORT && rt_engine_cut_off(s)) se = 0;
      if (se && !rc) rc = acl_fail(a, se, what);
    }
    if (ws) a->api->rtFree(ws);
  }
  destroy_objs(n, c, &o);
  return rc;
}

int acl_op_exec(acl_t *a, rdev_rt_stream_t *s, const rdev_op_call_t *c) {
  int count;
  const rdev_op_sig_t *sigs = rdev_op_table(&count);
  if (c->op < 0 || c->op >= count) return rt_fail(RDEV_INTERNAL_ERROR, "operator %d is not in the table", c->op);
  const acl_opfn_t *f = a->nnop && c->op < a->nnop->nops ? a->nnop->fns[c->op] : NULL;
  return acl_op_call(a, s, &sigs[c->op], f, c);
}
