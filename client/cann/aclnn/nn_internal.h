/*
 * client/cann/aclnn/nn_internal.h — what the operator library's two
 * halves share (not installed): the objects of libnnopbase.so
 * (nnopbase.c) whose layouts libopapi.so (opapi.c and the generated
 * stubs) reads, the stubs' argument record and the two phases every
 * operator goes through.
 */
#ifndef RDEV_NN_INTERNAL_H
#define RDEV_NN_INTERNAL_H

#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"
#include "rdev/ops.h"

/* Every object starts with its kind's magic, so that a pointer of the
 * wrong kind (or a destroyed object) is refused, not read. */
enum {
  NN_TENSOR = 0x6e6e5431,
  NN_SCALAR = 0x6e6e5331,
  NN_INT_ARRAY = 0x6e6e4931,
  NN_FLOAT_ARRAY = 0x6e6e4631,
  NN_BOOL_ARRAY = 0x6e6e4231,
  NN_TENSOR_LIST = 0x6e6e4c31,
  NN_SCALAR_LIST = 0x6e6e5332,
  NN_EXECUTOR = 0x6e6e4531,
  NN_DEAD = 0x6e6e4430
};

struct aclTensor {
  uint32_t magic;
  rdev_tensor_t t; /* addr: the device address given */
};

struct aclScalar {
  uint32_t magic;
  rdev_op_arg_t v; /* kind SCALAR */
};

struct aclIntArray {
  uint32_t magic;
  uint32_t n;
  int64_t v[];
};

struct aclFloatArray {
  uint32_t magic;
  uint32_t n;
  float v[];
};

struct aclBoolArray {
  uint32_t magic;
  uint32_t n;
  uint8_t v[];
};

struct aclTensorList {
  uint32_t magic;
  uint32_t n;
  rdev_tensor_t v[]; /* copies of the members' descriptions */
};

struct aclScalarList {
  uint32_t magic;
  uint32_t n;
  rdev_op_arg_t v[];
};

struct aclOpExecutor {
  uint32_t magic;
  int op;               /* rdev_op_table index */
  int repeatable;       /* aclSetAclOpExecutorRepeatable */
  rdev_op_call_t *call; /* the checked call, one allocation (rdev_op_decode) */
};

/* One argument as a stub passes it: pointers for objects, f for double,
 * i for the integer kinds (int64, int8, bool, data type). */
typedef union {
  const void *p;
  double f;
  int64_t i;
} nn_val_t;

/* The first phase of operator op (rdev_op_table index) with its arguments
 * v (one per parameter): checks them as CANN does (161001, 161002),
 * records a refusal's sentence for aclGetRecentErrMsg, and on success
 * makes *executor (workspace 0: rdevd finds what an operator needs). */
aclnnStatus nn_prepare(int op, const nn_val_t *v, uint64_t *workspaceSize, aclOpExecutor **executor);

/* The second phase: queues executor's call on stream and returns (161001
 * for no executor, 161002 for another operator's, 361001 when the runtime
 * refuses); frees the executor unless it is repeatable. */
aclnnStatus nn_run(int op, void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

/* From libascendcl.so (client/cann/acl/acl_ops.c). */
aclError rdev_acl_op_launch(aclrtStream stream, const void *blob, size_t len);
void rdev_acl_note_error(int code, const char *msg);

#endif
