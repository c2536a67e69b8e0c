/*
 * client/cann/aclnn/opapi.c — libopapi.so's two phases, which every
 * operator's generated stubs (aclnn<Op>GetWorkspaceSize, aclnn<Op>) call:
 * the first turns the program's objects into a checked call (rdev/ops.h)
 * held by an executor, the second encodes it and queues it on an ACL
 * stream through the ACL library (libascendcl.so), as an OpRun that
 * rdevd checks again and runs in stream order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

/* Records a refusal's sentence (aclGetRecentErrMsg) and returns code. */
static aclnnStatus refuse(aclnnStatus code, const char *msg) {
  rdev_acl_note_error(code, msg);
  return code;
}

/* Argument i of kind kind from the stub's value v into a: objects of the
 * wrong kind are refused (161002), NULL is absent. */
static aclnnStatus take(const rdev_op_sig_t *sig, int i, const nn_val_t *v, rdev_op_arg_t *a, char *msg, size_t cap) {
  a->kind = sig->params[i].kind;
  a->present = 1;
  const void *p = v->p;
  switch (a->kind) {
    case RDEV_OPK_DOUBLE: a->v.f64 = v->f; return ACLNN_SUCCESS;
    case RDEV_OPK_INT64:
    case RDEV_OPK_INT8:
    case RDEV_OPK_BOOL: a->v.i64 = v->i; return ACLNN_SUCCESS;
    case RDEV_OPK_DTYPE: a->v.dtype = (int32_t)v->i; return ACLNN_SUCCESS;
    default: break;
  }
  if (!p) {
    a->present = 0;
    return ACLNN_SUCCESS;
  }
  static const uint32_t magics[] = {[RDEV_OPK_TENSOR] = NN_TENSOR,         [RDEV_OPK_TENSOR_LIST] = NN_TENSOR_LIST,
                                    [RDEV_OPK_SCALAR] = NN_SCALAR,         [RDEV_OPK_INT_ARRAY] = NN_INT_ARRAY,
                                    [RDEV_OPK_BOOL_ARRAY] = NN_BOOL_ARRAY, [RDEV_OPK_FLOAT_ARRAY] = NN_FLOAT_ARRAY};
  if (*(const uint32_t *)p != magics[a->kind]) { /* checked before any other field is read */
    snprintf(msg, cap, "aclnn%s: %s is not a live object of its kind", sig->name, sig->params[i].name);
    return ACLNN_ERR_PARAM_INVALID;
  }
  switch (a->kind) {
    case RDEV_OPK_TENSOR: a->v.t = (rdev_tensor_t *)&((const aclTensor *)p)->t; break;
    case RDEV_OPK_TENSOR_LIST:
      a->n = ((const aclTensorList *)p)->n;
      a->v.t = (rdev_tensor_t *)((const aclTensorList *)p)->v;
      break;
    case RDEV_OPK_SCALAR: a->v.scalar = ((const aclScalar *)p)->v.v.scalar; break;
    case RDEV_OPK_INT_ARRAY:
      a->n = ((const aclIntArray *)p)->n;
      a->v.ints = ((const aclIntArray *)p)->v;
      break;
    case RDEV_OPK_FLOAT_ARRAY:
      a->n = ((const aclFloatArray *)p)->n;
      a->v.floats = ((const aclFloatArray *)p)->v;
      break;
    case RDEV_OPK_BOOL_ARRAY:
      a->n = ((const aclBoolArray *)p)->n;
      a->v.bools = ((const aclBoolArray *)p)->v;
      break;
  }
  return ACLNN_SUCCESS;
}

aclnnStatus nn_prepare(int op, const nn_val_t *v, uint64_t *workspaceSize, aclOpExecutor **executor) {
  const rdev_op_sig_t *sig = &rdev_op_table(NULL)[op];
  char msg[256];
  if (!workspaceSize || !executor) {
    snprintf(msg, sizeof msg, "aclnn%sGetWorkspaceSize: workspaceSize or executor is NULL", sig->name);
    return refuse(ACLNN_ERR_PARAM_NULLPTR, msg);
  }
  rdev_op_call_t c = {.op = op, .nargs = sig->nparams};
  aclnnStatus rc;
  for (int i = 0; i < sig->nparams; i++)
    if ((rc = take(sig, i, &v[i], &c.args[i], msg, sizeof msg))) return refuse(rc, msg);
  if ((rc = rdev_op_check(&c, msg, sizeof msg))) return refuse(rc, msg);
  /* The executor keeps its own copy: the objects may go before it runs.
   * Encoding and decoding gives one allocation the call's arrays live in. */
  unsigned char *blob = malloc(RDEV_OP_MAX_BLOB);
  size_t len = 0;
  aclOpExecutor *ex = calloc(1, sizeof *ex);
  if (!blob || !ex || rdev_op_encode(&c, blob, RDEV_OP_MAX_BLOB, &len) ||
      rdev_op_decode(blob, len, &ex->call, msg, sizeof msg)) {
    free(blob);
    free(ex);
    snprintf(msg, sizeof msg, "aclnn%sGetWorkspaceSize: out of memory, or a call over %d bytes", sig->name,
             RDEV_OP_MAX_BLOB);
    return refuse(ACLNN_ERR_INNER_CREATE_EXECUTOR, msg);
  }
  free(blob);
  ex->magic = NN_EXECUTOR;
  ex->op = op;
  *workspaceSize = 0;
  *executor = ex;
  return ACLNN_SUCCESS;
}

aclnnStatus nn_run(int op, void *workspace, uint64_t workspaceSize, aclOpExecutor *ex, aclrtStream stream) {
  (void)workspace; /* rdevd finds what an operator needs: every first phase asks for 0 bytes */
  (void)workspaceSize;
  const rdev_op_sig_t *sig = &rdev_op_table(NULL)[op];
  char msg[256];
  if (!ex || ex->magic != NN_EXECUTOR) {
    snprintf(msg, sizeof msg, "aclnn%s: executor is NULL, already run or destroyed", sig->name);
    return refuse(ACLNN_ERR_PARAM_NULLPTR, msg);
  }
  if (ex->op != op) {
    snprintf(msg, sizeof msg, "aclnn%s: the executor is aclnn%s's", sig->name, rdev_op_table(NULL)[ex->op].name);
    return refuse(ACLNN_ERR_PARAM_INVALID, msg);
  }
  unsigned char *blob = malloc(RDEV_OP_MAX_BLOB);
  size_t len = 0;
  aclnnStatus rc = ACLNN_SUCCESS;
  if (!blob || rdev_op_encode(ex->call, blob, RDEV_OP_MAX_BLOB, &len)) {
    snprintf(msg, sizeof msg, "aclnn%s: out of memory", sig->name);
    rc = refuse(ACLNN_ERR_INNER, msg);
  } else if (rdev_acl_op_launch(stream, blob, len) != ACL_SUCCESS) {
    rc = ACLNN_ERR_RUNTIME_ERROR; /* the ACL library recorded why */
  }
  free(blob);
  if (!ex->repeatable) aclDestroyAclOpExecutor(ex);
  return rc;
}
