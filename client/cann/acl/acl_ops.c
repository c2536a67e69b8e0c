/*
 * client/cann/acl/acl_ops.c — what the operator library (libopapi.so,
 * client/cann/aclnn/) needs of the ACL library: queuing an encoded
 * operator call on an ACL stream of the process's session, and recording
 * an operator's refusal as the thread's recent error. Exported under
 * rdev's own names; and aclDataBuffer, CANN's (address, size) pair.
 */
#include <stdlib.h>

#include "acl/acl.h"
#include "acl_lib.h"

/* Queues the encoded call (rdev/ops.h) blob[0..len) on stream (NULL: the
 * thread's device's default stream); returns at once with ACL_SUCCESS or
 * the refusal's code, its message recorded for aclGetRecentErrMsg. */
__attribute__((visibility("default"))) aclError rdev_acl_op_launch(aclrtStream stream, const void *blob, size_t len);
aclError rdev_acl_op_launch(aclrtStream stream, const void *blob, size_t len) {
  rdev_stream_t *st;
  aclError rc = acl_stream_get(stream, &st);
  if (rc) return rc;
  return acl_result(rdev_op_launch_encoded(st, blob, len), "operator launch");
}

/* Records code and msg as the calling thread's last error (aclGetRecentErrMsg). */
__attribute__((visibility("default"))) void rdev_acl_note_error(int code, const char *msg);
void rdev_acl_note_error(int code, const char *msg) { acl_fail(code, "%s", msg); }

struct aclDataBuffer {
  void *data;
  size_t size;
};

aclDataBuffer *aclCreateDataBuffer(void *data, size_t size) {
  aclDataBuffer *b = malloc(sizeof *b);
  if (!b) {
    acl_fail(ACL_ERROR_BAD_ALLOC, "aclCreateDataBuffer: out of memory");
    return NULL;
  }
  b->data = data;
  b->size = size;
  return b;
}

aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer) {
  if (!dataBuffer) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclDestroyDataBuffer: dataBuffer is NULL");
  free((void *)dataBuffer);
  return ACL_SUCCESS;
}

aclError aclUpdateDataBuffer(aclDataBuffer *dataBuffer, void *data, size_t size) {
  if (!dataBuffer) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclUpdateDataBuffer: dataBuffer is NULL");
  dataBuffer->data = data;
  dataBuffer->size = size;
  return ACL_SUCCESS;
}

void *aclGetDataBufferAddr(const aclDataBuffer *dataBuffer) { return dataBuffer ? dataBuffer->data : NULL; }

size_t aclGetDataBufferSizeV2(const aclDataBuffer *dataBuffer) { return dataBuffer ? dataBuffer->size : 0; }

uint32_t aclGetDataBufferSize(const aclDataBuffer *dataBuffer) {
  size_t n = aclGetDataBufferSizeV2(dataBuffer);
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}
