/*
 * client/cann/aclnn/nnopbase.c — libnnopbase.so: the operator library's
 * objects (aclnn/acl_meta.h): tensors, scalars, arrays, lists and what a
 * program may do to an executor (repeat it, change its addresses,
 * destroy it). Objects live in the client only; an operator's first phase
 * (opapi.c) copies what it needs of them into its executor.
 */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

#define API __attribute__((visibility("default")))

/* A live object of kind magic, or NULL. */
#define LIVE(p, kind) ((p) && (p)->magic == (kind))

static aclnnStatus destroy(void *p, uint32_t magic, uint32_t kind) {
  if (!p || magic != kind) return ACLNN_ERR_PARAM_NULLPTR;
  *(uint32_t *)p = NN_DEAD;
  free(p);
  return ACLNN_SUCCESS;
}

/* Fills t from aclCreateTensor's arguments; false when they are not a tensor. */
static bool describe(rdev_tensor_t *t, const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                     const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                     uint64_t storageDimsNum, void *data) {
  if (viewDimsNum > RDEV_OP_MAX_DIMS || storageDimsNum > RDEV_OP_MAX_DIMS || (viewDimsNum && !viewDims) ||
      (storageDimsNum && !storageDims) || !rdev_dtype_size((int)dataType))
    return false;
  memset(t, 0, sizeof *t);
  t->dtype = (int32_t)dataType;
  t->format = (int32_t)format;
  t->ndim = (int32_t)viewDimsNum;
  t->storage_ndim = (int32_t)storageDimsNum;
  t->offset = offset;
  t->addr = (uint64_t)(uintptr_t)data;
  int64_t step = 1;
  for (int i = (int)viewDimsNum - 1; i >= 0; i--) { /* no strides given: contiguous */
    t->dims[i] = viewDims[i];
    t->strides[i] = stride ? stride[i] : step;
    step *= viewDims[i] > 0 ? viewDims[i] : 1;
  }
  for (uint64_t i = 0; i < storageDimsNum; i++) t->storage_dims[i] = storageDims[i];
  return true;
}

API aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                               const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                               uint64_t storageDimsNum, void *tensorData) {
  aclTensor *t = malloc(sizeof *t);
  if (!t || !describe(&t->t, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                      tensorData)) {
    free(t);
    return NULL;
  }
  t->magic = NN_TENSOR;
  return t;
}

API aclnnStatus aclInitTensor(aclTensor *tensor, const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                              const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                              uint64_t storageDimsNum, void *tensorDataAddr) {
  if (!LIVE(tensor, NN_TENSOR)) return ACLNN_ERR_PARAM_NULLPTR;
  rdev_tensor_t t;
  if (!describe(&t, viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum,
                tensorDataAddr))
    return ACLNN_ERR_PARAM_INVALID;
  tensor->t = t;
  return ACLNN_SUCCESS;
}

API aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
  if (!value || !rdev_dtype_size((int)dataType)) return NULL;
  aclScalar *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->magic = NN_SCALAR;
  s->v.kind = RDEV_OPK_SCALAR;
  s->v.present = 1;
  s->v.v.scalar.dtype = (int32_t)dataType;
  const void *p = value;
  switch ((int)dataType) {
    case RDEV_DT_FLOAT: s->v.v.scalar.v.f = *(const float *)p; break;
    case RDEV_DT_FLOAT16: s->v.v.scalar.v.f = aclFloat16ToFloat(*(const aclFloat16 *)p); break;
    case RDEV_DT_BF16: {
      uint32_t bits = (uint32_t) * (const uint16_t *)p << 16;
      float f;
      memcpy(&f, &bits, 4);
      s->v.v.scalar.v.f = f;
      break;
    }
    case RDEV_DT_DOUBLE: s->v.v.scalar.v.f = *(const double *)p; break;
    case RDEV_DT_INT8: s->v.v.scalar.v.i = *(const int8_t *)p; break;
    case RDEV_DT_UINT8: s->v.v.scalar.v.i = *(const uint8_t *)p; break;
    case RDEV_DT_INT16: s->v.v.scalar.v.i = *(const int16_t *)p; break;
    case RDEV_DT_UINT16: s->v.v.scalar.v.i = *(const uint16_t *)p; break;
    case RDEV_DT_INT32: s->v.v.scalar.v.i = *(const int32_t *)p; break;
    case RDEV_DT_UINT32: s->v.v.scalar.v.i = *(const uint32_t *)p; break;
    case RDEV_DT_INT64: s->v.v.scalar.v.i = *(const int64_t *)p; break;
    case RDEV_DT_UINT64: s->v.v.scalar.v.u = *(const uint64_t *)p; break;
    case RDEV_DT_BOOL: s->v.v.scalar.v.i = *(const bool *)p; break;
  }
  return s;
}

/* An array object of kind magic holding n elements of esz bytes from value. */
static void *make_array(uint32_t magic, const void *value, uint64_t n, size_t esz) {
  if ((n && !value) || n > RDEV_OP_MAX_ARRAY) return NULL;
  struct {
    uint32_t magic, n;
    int64_t v[];
  } *a = malloc(sizeof *a + (size_t)n * esz + 1);
  if (!a) return NULL;
  a->magic = magic;
  a->n = (uint32_t)n;
  if (n) memcpy(a->v, value, (size_t)n * esz);
  return a;
}

API aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
  return make_array(NN_INT_ARRAY, value, size, sizeof(int64_t));
}

API aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size) {
  return make_array(NN_FLOAT_ARRAY, value, size, sizeof(float));
}

API aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
  aclBoolArray *a = make_array(NN_BOOL_ARRAY, value, size, 1);
  for (uint32_t i = 0; a && i < a->n; i++) a->v[i] = a->v[i] != 0;
  return a;
}

API aclTensorList *aclCreateTensorList(const aclTensor *const *value, uint64_t size) {
  if ((size && !value) || size > RDEV_OP_MAX_LIST) return NULL;
  for (uint64_t i = 0; i < size; i++)
    if (!LIVE(value[i], NN_TENSOR)) return NULL;
  aclTensorList *l = malloc(sizeof *l + (size_t)size * sizeof(rdev_tensor_t));
  if (!l) return NULL;
  l->magic = NN_TENSOR_LIST;
  l->n = (uint32_t)size;
  for (uint64_t i = 0; i < size; i++) l->v[i] = value[i]->t;
  return l;
}

API aclScalarList *aclCreateScalarList(const aclScalar *const *value, uint64_t size) {
  if ((size && !value) || size > RDEV_OP_MAX_LIST) return NULL;
  for (uint64_t i = 0; i < size; i++)
    if (!LIVE(value[i], NN_SCALAR)) return NULL;
  aclScalarList *l = malloc(sizeof *l + (size_t)size * sizeof(rdev_op_arg_t));
  if (!l) return NULL;
  l->magic = NN_SCALAR_LIST;
  l->n = (uint32_t)size;
  for (uint64_t i = 0; i < size; i++) l->v[i] = value[i]->v;
  return l;
}

API aclnnStatus aclDestroyTensor(const aclTensor *t) { return destroy((void *)t, t ? t->magic : 0, NN_TENSOR); }
API aclnnStatus aclDestroyScalar(const aclScalar *s) { return destroy((void *)s, s ? s->magic : 0, NN_SCALAR); }
API aclnnStatus aclDestroyIntArray(const aclIntArray *a) { return destroy((void *)a, a ? a->magic : 0, NN_INT_ARRAY); }
API aclnnStatus aclDestroyFloatArray(const aclFloatArray *a) {
  return destroy((void *)a, a ? a->magic : 0, NN_FLOAT_ARRAY);
}
API aclnnStatus aclDestroyBoolArray(const aclBoolArray *a) {
  return destroy((void *)a, a ? a->magic : 0, NN_BOOL_ARRAY);
}
API aclnnStatus aclDestroyTensorList(const aclTensorList *l) {
  return destroy((void *)l, l ? l->magic : 0, NN_TENSOR_LIST);
}
API aclnnStatus aclDestroyScalarList(const aclScalarList *l) {
  return destroy((void *)l, l ? l->magic : 0, NN_SCALAR_LIST);
}

/* A copy of n int64s the caller frees; NULL for none. */
static aclnnStatus hand_out(const int64_t *v, int n, int64_t **out, uint64_t *num) {
  if (!out || !num) return ACLNN_ERR_PARAM_NULLPTR;
  *out = malloc(n ? (size_t)n * sizeof(int64_t) : 1);
  if (!*out) return ACLNN_ERR_INNER;
  if (n) memcpy(*out, v, (size_t)n * sizeof(int64_t));
  *num = (uint64_t)n;
  return ACLNN_SUCCESS;
}

API aclnnStatus aclGetViewShape(const aclTensor *t, int64_t **viewDims, uint64_t *viewDimsNum) {
  if (!LIVE(t, NN_TENSOR)) return ACLNN_ERR_PARAM_NULLPTR;
  return hand_out(t->t.dims, t->t.ndim, viewDims, viewDimsNum);
}

API aclnnStatus aclGetStorageShape(const aclTensor *t, int64_t **storageDims, uint64_t *storageDimsNum) {
  if (!LIVE(t, NN_TENSOR)) return ACLNN_ERR_PARAM_NULLPTR;
  return hand_out(t->t.storage_dims, t->t.storage_ndim, storageDims, storageDimsNum);
}

API aclnnStatus aclGetViewStrides(const aclTensor *t, int64_t **stridesValue, uint64_t *stridesNum) {
  if (!LIVE(t, NN_TENSOR)) return ACLNN_ERR_PARAM_NULLPTR;
  return hand_out(t->t.strides, t->t.ndim, stridesValue, stridesNum);
}

API aclnnStatus aclGetViewOffset(const aclTensor *t, int64_t *offset) {
  if (!LIVE(t, NN_TENSOR) || !offset) return ACLNN_ERR_PARAM_NULLPTR;
  *offset = t->t.offset;
  return ACLNN_SUCCESS;
}

API aclnnStatus aclGetFormat(const aclTensor *t, aclFormat *format) {
  if (!LIVE(t, NN_TENSOR) || !format) return ACLNN_ERR_PARAM_NULLPTR;
  *format = (aclFormat)t->t.format;
  return ACLNN_SUCCESS;
}

API aclnnStatus aclGetDataType(const aclTensor *t, aclDataType *dataType) {
  if (!LIVE(t, NN_TENSOR) || !dataType) return ACLNN_ERR_PARAM_NULLPTR;
  *dataType = (aclDataType)t->t.dtype;
  return ACLNN_SUCCESS;
}

#define SIZE_GETTER(fn, type, kind) \
  API aclnnStatus fn(const type *a, uint64_t *size) { \
    if (!LIVE(a, kind) || !size) return ACLNN_ERR_PARAM_NULLPTR; \
    *size = a->n; \
    return ACLNN_SUCCESS; \
  }
SIZE_GETTER(aclGetIntArraySize, aclIntArray, NN_INT_ARRAY)
SIZE_GETTER(aclGetFloatArraySize, aclFloatArray, NN_FLOAT_ARRAY)
SIZE_GETTER(aclGetBoolArraySize, aclBoolArray, NN_BOOL_ARRAY)
SIZE_GETTER(aclGetTensorListSize, aclTensorList, NN_TENSOR_LIST)
SIZE_GETTER(aclGetScalarListSize, aclScalarList, NN_SCALAR_LIST)

API aclnnStatus aclSetRawTensorAddr(aclTensor *t, void *addr) {
  if (!LIVE(t, NN_TENSOR)) return ACLNN_ERR_PARAM_NULLPTR;
  t->t.addr = (uint64_t)(uintptr_t)addr;
  return ACLNN_SUCCESS;
}

API aclnnStatus aclGetRawTensorAddr(const aclTensor *t, void **addr) {
  if (!LIVE(t, NN_TENSOR) || !addr) return ACLNN_ERR_PARAM_NULLPTR;
  *addr = (void *)(uintptr_t)t->t.addr;
  return ACLNN_SUCCESS;
}

/* ---- executors ------------------------------------------------------------------ */

API aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *ex) {
  if (!LIVE(ex, NN_EXECUTOR)) return ACLNN_ERR_INNER_NULLPTR;
  ex->repeatable = 1;
  return ACLNN_SUCCESS;
}

API aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *ex) {
  if (!LIVE(ex, NN_EXECUTOR)) return ACLNN_ERR_INNER_NULLPTR;
  free(ex->call);
  ex->magic = NN_DEAD;
  free(ex);
  return ACLNN_SUCCESS;
}

enum { ANY = RDEV_OPF_IN | RDEV_OPF_OUT };

/* The device address of the tensor an address call names: the index-th
 * tensor among the call's tensors whose parameters have a flag of `want`
 * (list members count one each); with list >= 0, member `index` of the
 * list-th such tensor parameter. */
static rdev_tensor_t *nth_tensor(aclOpExecutor *ex, int want, size_t list, size_t index, bool dynamic) {
  const rdev_op_sig_t *sig = &rdev_op_table(NULL)[ex->op];
  size_t seen = 0;
  for (int i = 0; i < ex->call->nargs; i++) {
    rdev_op_arg_t *a = &ex->call->args[i];
    if ((a->kind != RDEV_OPK_TENSOR && a->kind != RDEV_OPK_TENSOR_LIST) || !(sig->params[i].flags & want)) continue;
    uint32_t n = a->kind == RDEV_OPK_TENSOR ? 1 : a->n;
    if (dynamic) {
      if (seen++ == list) return a->kind == RDEV_OPK_TENSOR_LIST && a->present && index < n ? &a->v.t[index] : NULL;
      continue;
    }
    if (!a->present) continue;
    if (index < seen + n) return &a->v.t[index - seen];
    seen += n;
  }
  return NULL;
}

static aclnnStatus set_addr(aclOpExecutor *ex, int want, size_t list, size_t index, bool dynamic, void *addr) {
  if (!LIVE(ex, NN_EXECUTOR)) return ACLNN_ERR_PARAM_NULLPTR;
  if (!ex->repeatable) {
    rdev_acl_note_error(ACLNN_ERR_PARAM_INVALID, "a tensor address may be changed only in a repeatable executor");
    return ACLNN_ERR_PARAM_INVALID;
  }
  rdev_tensor_t *t = nth_tensor(ex, want, list, index, dynamic);
  if (!t) {
    rdev_acl_note_error(ACLNN_ERR_PARAM_INVALID, "the executor's operator has no such tensor");
    return ACLNN_ERR_PARAM_INVALID;
  }
  t->addr = (uint64_t)(uintptr_t)addr;
  return ACLNN_SUCCESS;
}

#define SET_ADDR(fn, want) \
  API aclnnStatus fn(aclOpExecutor *executor, const size_t index, aclTensor *tensor, void *addr) { \
    aclnnStatus rc = set_addr(executor, want, 0, index, false, addr); \
    if (!rc && LIVE(tensor, NN_TENSOR)) tensor->t.addr = (uint64_t)(uintptr_t)addr; \
    return rc; \
  }
#define SET_DYNAMIC_ADDR(fn, want) \
  API aclnnStatus fn(aclOpExecutor *executor, size_t irIndex, const size_t relativeIndex, aclTensorList *tensors, \
                     void *addr) { \
    aclnnStatus rc = set_addr(executor, want, irIndex, relativeIndex, true, addr); \
    if (!rc && LIVE(tensors, NN_TENSOR_LIST) && relativeIndex < tensors->n) \
      tensors->v[relativeIndex].addr = (uint64_t)(uintptr_t)addr; \
    return rc; \
  }
SET_ADDR(aclSetInputTensorAddr, RDEV_OPF_IN)
SET_ADDR(aclSetOutputTensorAddr, RDEV_OPF_OUT)
SET_ADDR(aclSetTensorAddr, ANY)
SET_ADDR(AclSetInputTensorAddr, RDEV_OPF_IN)
SET_ADDR(AclSetOutputTensorAddr, RDEV_OPF_OUT)
SET_ADDR(AclSetTensorAddr, ANY)
SET_DYNAMIC_ADDR(aclSetDynamicInputTensorAddr, RDEV_OPF_IN)
SET_DYNAMIC_ADDR(aclSetDynamicOutputTensorAddr, RDEV_OPF_OUT)
SET_DYNAMIC_ADDR(aclSetDynamicTensorAddr, ANY)
SET_DYNAMIC_ADDR(AclSetDynamicInputTensorAddr, RDEV_OPF_IN)
SET_DYNAMIC_ADDR(AclSetDynamicOutputTensorAddr, RDEV_OPF_OUT)
SET_DYNAMIC_ADDR(AclSetDynamicTensorAddr, ANY)

API aclnnStatus aclnnInit(const char *configPath) {
  (void)configPath;
  return ACLNN_SUCCESS;
}

API aclnnStatus aclnnFinalize(void) { return ACLNN_SUCCESS; }
