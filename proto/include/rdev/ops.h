/*
 * rdev/ops.h — operators, the model of CANN's operator library (aclnn):
 * the kinds of argument an operator takes, a decoded call, the compact
 * blob a call travels in (the data of an OpRun request), and the table of
 * operators every layer shares (generated at build time from
 * proto/ops/ops.def by proto/ops/gen_ops.py). The client encodes a call,
 * rdevd decodes and checks it, and the runtime checks each tensor's reach
 * against device memory and runs the call in stream order.
 *
 * Everything here is pure (no I/O, no device access) and thread-safe.
 * Numbers are CANN's: data types are aclDataType's, formats aclFormat's.
 */
#ifndef RDEV_OPS_H
#define RDEV_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDEV_OP_MAX_DIMS 8     /* dimensions of a tensor (CANN's limit) */
#define RDEV_OP_MAX_ARGS 16    /* arguments of an operator */
#define RDEV_OP_MAX_LIST 256   /* tensors in a tensor list */
#define RDEV_OP_MAX_ARRAY 256  /* elements of an int, bool or float array */
#define RDEV_OP_MAX_NAME 63    /* bytes of an operator's name */
#define RDEV_OP_MAX_BLOB 65536 /* bytes of an encoded call */
/* Elements of a tensor's view: a view may repeat elements (stride 0), so
 * its size, not its memory, bounds the work an operator does. */
#define RDEV_OP_MAX_NUMEL ((int64_t)1 << 28)

/* The kinds of argument (the signature table's words in ops.def). */
typedef enum {
  RDEV_OPK_TENSOR = 1,  /* const aclTensor * (or aclTensor * for outputs) */
  RDEV_OPK_TENSOR_LIST, /* const aclTensorList * */
  RDEV_OPK_SCALAR,      /* const aclScalar * */
  RDEV_OPK_INT_ARRAY,   /* const aclIntArray * */
  RDEV_OPK_BOOL_ARRAY,  /* const aclBoolArray * */
  RDEV_OPK_FLOAT_ARRAY, /* const aclFloatArray * */
  RDEV_OPK_DOUBLE,      /* double */
  RDEV_OPK_INT64,       /* int64_t */
  RDEV_OPK_INT8,        /* int8_t (cubeMathType) */
  RDEV_OPK_BOOL,        /* bool */
  RDEV_OPK_DTYPE        /* aclDataType */
} rdev_op_kind_t;

/* Data types: aclDataType's numbers (those rdev's operators know). */
typedef enum {
  RDEV_DT_FLOAT = 0,
  RDEV_DT_FLOAT16 = 1,
  RDEV_DT_INT8 = 2,
  RDEV_DT_INT32 = 3,
  RDEV_DT_UINT8 = 4,
  RDEV_DT_INT16 = 6,
  RDEV_DT_UINT16 = 7,
  RDEV_DT_UINT32 = 8,
  RDEV_DT_INT64 = 9,
  RDEV_DT_UINT64 = 10,
  RDEV_DT_DOUBLE = 11,
  RDEV_DT_BOOL = 12,
  RDEV_DT_BF16 = 27
} rdev_dtype_t;

/* Bytes of one element of dtype; 0 when rdev does not know the type. */
size_t rdev_dtype_size(int dtype);
/* "float32", "float16", "bfloat16", "int32", ...; "?" when unknown. */
const char *rdev_dtype_name(int dtype);

/* A tensor: a strided view of device memory (aclCreateTensor's arguments). */
typedef struct {
  int32_t dtype, format;
  int32_t ndim, storage_ndim;
  int64_t dims[RDEV_OP_MAX_DIMS];    /* the view's shape */
  int64_t strides[RDEV_OP_MAX_DIMS]; /* in elements; may be 0 (broadcast) or negative */
  int64_t offset;                    /* the view's element 0, in elements from addr */
  int64_t storage_dims[RDEV_OP_MAX_DIMS];
  uint64_t addr; /* device address of the storage (the runtime's sim makes it a host address) */
} rdev_tensor_t;

/* One argument of a call. `present` 0 is a NULL pointer argument (an
 * optional tensor, say); value kinds are always present. */
typedef struct {
  uint8_t kind; /* rdev_op_kind_t */
  uint8_t present;
  uint32_t n; /* TENSOR_LIST and arrays: the number of elements */
  union {
    rdev_tensor_t *t; /* TENSOR: one; TENSOR_LIST: n */
    const int64_t *ints;
    const uint8_t *bools;
    const float *floats;
    struct {
      int32_t dtype;
      union {
        double f; /* FLOAT, FLOAT16, BF16, DOUBLE scalars */
        int64_t i;
        uint64_t u;
      } v;
    } scalar;
    double f64;    /* DOUBLE */
    int64_t i64;   /* INT64, INT8, BOOL */
    int32_t dtype; /* DTYPE */
  } v;
} rdev_op_arg_t;

/* A decoded call. rdev_op_decode makes one allocation holding the call
 * and everything its arguments point at (free() releases it all). */
typedef struct {
  int op; /* index into rdev_op_table() */
  int nargs;
  rdev_op_arg_t args[RDEV_OP_MAX_ARGS];
} rdev_op_call_t;

/* Parameter flags. */
#define RDEV_OPF_OUT 1 /* the operator writes the tensor */
#define RDEV_OPF_IN 2  /* the operator reads the tensor (an in-place one is both) */
#define RDEV_OPF_OPT 4 /* may be NULL */

typedef struct {
  const char *name; /* CANN's parameter name */
  uint8_t kind, flags;
} rdev_op_param_t;

typedef struct rdev_op_sig {
  const char *name; /* "Add": the calls are aclnnAddGetWorkspaceSize and aclnnAdd */
  int nparams;
  rdev_op_param_t params[RDEV_OP_MAX_ARGS];
  /* The operator's data type and shape rules (proto/ops/op_check*.c), on a
   * call whose arguments match the signature: RDEV_OK, or
   * RDEV_OP_PARAM_INVALID with a sentence in msg. */
  int (*check)(const rdev_op_call_t *c, char *msg, size_t cap);
} rdev_op_sig_t;

/* The operators, in ops.def's order; *count gets their number. */
const rdev_op_sig_t *rdev_op_table(int *count);
/* The operator called name ("Add"), or NULL. */
const rdev_op_sig_t *rdev_op_find(const char *name);

/* Checks call c against its operator: the argument kinds and presence,
 * every tensor's description (known data type, at most 8 dimensions, no
 * negative size, a view inside its storage), then the operator's own
 * rules. RDEV_OK, RDEV_OP_PARAM_NULLPTR (a required argument is NULL) or
 * RDEV_OP_PARAM_INVALID, with a sentence in msg (cap bytes, NUL-ended). */
int rdev_op_check(const rdev_op_call_t *c, char *msg, size_t cap);

/* The bytes of device memory tensor t reaches, relative to t->addr: the
 * storage [0, *bytes) when storage dims are given, else the view's span
 * from its lowest to its highest element. *bytes 0 for an empty tensor.
 * RDEV_OP_PARAM_INVALID when it overflows (after rdev_op_check, never). */
int rdev_tensor_reach(const rdev_tensor_t *t, uint64_t *lo, uint64_t *bytes);

/* Element count of t's view (product of its dims; 1 for a scalar tensor). */
int64_t rdev_tensor_numel(const rdev_tensor_t *t);

/* Encodes call c (op and arguments) into buf (cap bytes): *len gets the
 * size. RDEV_INVALID_PARAM when it does not fit or c is not encodable
 * (more than the limits above). Blob layout, little-endian: u8 name
 * length, the name, u8 nargs, then per argument u8 kind, u8 present and
 * the kind's fields (proto/ops/op_blob.c). */
int rdev_op_encode(const rdev_op_call_t *c, void *buf, size_t cap, size_t *len);

/* Decodes and checks (rdev_op_check) a blob: on RDEV_OK *out owns one
 * allocation (free() it). Unknown operator: RDEV_UNKNOWN_KERNEL; a
 * malformed blob: RDEV_INVALID_PARAM; else rdev_op_check's codes. msg
 * gets a sentence on failure. */
int rdev_op_decode(const void *blob, size_t len, rdev_op_call_t **out, char *msg, size_t cap);

/* A scalar argument's value as double / int64 (converted from its type). */
double rdev_op_scalar_f64(const rdev_op_arg_t *a);
int64_t rdev_op_scalar_i64(const rdev_op_arg_t *a);

#ifdef __cplusplus
}
#endif

#endif
