/*
 * client/lib/ops.c — operator launches (rdev_op_launch): a call checked as
 * aclnn's first phase checks it, encoded (rdev/ops.h) and sent as an
 * OpRun on its stream, with no reply awaited.
 */
#include "client.h"

int rdev_op_launch_encoded(rdev_stream_t *stream, const void *blob, size_t len) {
  rdev_session_t *s = cl_stream_session(stream);
  uint64_t h;
  int rc = cl_stream_handle(s, stream, &h);
  if (rc) return rc;
  if (!blob || len == 0 || len > RDEV_OP_MAX_BLOB)
    return cl_error(RDEV_INVALID_PARAM, "an operator call of %zu bytes: 1 to %d", len, RDEV_OP_MAX_BLOB);
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_op_run_tag;
  req.op.op_run = (rdev_v1_OpRun){h};
  return cl_stream_sent(stream, cl_send_async_with(s, &req, blob, len));
}

int rdev_op_launch(rdev_stream_t *stream, const rdev_op_call_t *c) {
  if (!c) return cl_error(RDEV_INVALID_PARAM, "operator call is NULL");
  char msg[256];
  int rc = rdev_op_check(c, msg, sizeof msg);
  if (rc) return cl_error(rc, "%s", msg);
  unsigned char *blob = malloc(RDEV_OP_MAX_BLOB);
  size_t len;
  if (!blob) return cl_error(RDEV_BAD_ALLOC, "out of memory");
  rc = rdev_op_encode(c, blob, RDEV_OP_MAX_BLOB, &len);
  if (rc)
    rc = cl_error(rc, "the call of aclnn%s is larger than %d bytes", rdev_op_table(NULL)[c->op].name, RDEV_OP_MAX_BLOB);
  else
    rc = rdev_op_launch_encoded(stream, blob, len);
  free(blob);
  return rc;
}
