/*
 * server/respond.c — answering a unary call: its initial metadata, its
 * reply (if any) and its status in one batch, and letting go of the call
 * when the batch completes. Used by server.c's calls and the job calls.
 */
#include <stdlib.h>
#include <string.h>

#include "srv.h"

typedef struct {
  srv_op_t op;
  grpc_call *call;
  grpc_byte_buffer *resp;
  grpc_slice details;
  int cancelled;
} unary_t;

static void on_unary_done(srv_op_t *op, int ok) {
  unary_t *u = (unary_t *)op;
  (void)ok;
  if (u->resp) grpc_byte_buffer_destroy(u->resp);
  grpc_slice_unref(u->details);
  grpc_call_unref(u->call);
  free(u);
}

/* Answers a unary call with resp (taken; may be NULL) and status. */
void srv_call_respond(grpc_call *call, grpc_byte_buffer *resp, grpc_status_code status, const char *details) {
  unary_t *u = calloc(1, sizeof *u);
  if (!u) {
    if (resp) grpc_byte_buffer_destroy(resp);
    grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL);
    grpc_call_unref(call);
    return;
  }
  u->op.done = on_unary_done;
  u->call = call;
  u->resp = resp;
  u->details = grpc_slice_from_copied_string(details ? details : "");
  grpc_op ops[4];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  if (resp) {
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = resp;
  }
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = status;
  ops[n++].data.send_status_from_server.status_details = &u->details;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n++].data.recv_close_on_server.cancelled = &u->cancelled;
  RDEV_HANDOFF_GIVE(u);
  grpc_call_error e = grpc_call_start_batch(call, ops, n, u, NULL);
  if (e != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "unary reply failed (%d)", e);
    on_unary_done(&u->op, 0);
  }
}
