/*
 * client/lib/send.c — the send queue. gRPC allows one SEND_MESSAGE in
 * flight per call: a request sent while one is in flight waits in the
 * queue, and what queued behind a send goes out as one batch message
 * (rdev_wire_batch) when it completes. Also the half-close, sent once the
 * queue drained. Owns s->send; calls only error.c and the wire codec.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* Batches stay well inside the server's message limit. */
#define BATCH_BYTES (48u << 10)

/* A request waiting for the one send gRPC allows in flight. Those without
 * payload go out together, as one batch message. */
typedef struct cl_send {
  grpc_byte_buffer *bb;
  size_t len;     /* encoded length */
  size_t xfer;    /* Read bytes it asks for (batch limit) */
  bool batchable; /* no payload */
  struct cl_send *next;
} cl_send_t;

void cl_send_init(rdev_session_t *s, size_t batch_xfer) { s->send.batch_xfer = batch_xfer; }

static void send_close_locked(rdev_session_t *s) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  s->send.close_sent = true;
  if (grpc_call_start_batch(s->call, &op, 1, CL_TAG(CL_TAG_CLOSE), NULL) != GRPC_CALL_OK)
    grpc_call_cancel(s->call, NULL);
}

static void send_start_locked(rdev_session_t *s, grpc_byte_buffer *bb) {
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = bb;
  /* No GRPC_WRITE_BUFFER_HINT: chttp2 completes a hinted send only once
   * its bytes were written, and a small one is not written until the next
   * unhinted send, which we start only after this one completed. */
  s->send.sending = bb;
  if (grpc_call_start_batch(s->call, &op, 1, CL_TAG(CL_TAG_SEND), NULL) != GRPC_CALL_OK) {
    /* Cannot happen with one send in flight; end the call rather than hang. */
    s->send.sending = NULL;
    grpc_byte_buffer_destroy(bb);
    grpc_call_cancel_with_status(s->call, GRPC_STATUS_INTERNAL, "rdev client: send refused", NULL);
  }
}

/* Under s->mu: takes the head of the send queue, together with the
 * batchable requests right behind a batchable head, within the batch
 * limits (count, Read bytes, size); returns the message to send. */
static grpc_byte_buffer *take_next_locked(rdev_session_t *s) {
  cl_send_state_t *q = &s->send;
  grpc_byte_buffer *msgs[RDEV_WIRE_MAX_BATCH];
  size_t n = 0, xfer = 0, bytes = 0;
  for (cl_send_t *it = q->head; it && it->batchable && n < RDEV_WIRE_MAX_BATCH; it = it->next) {
    size_t framed = it->len + 12; /* field tag and length */
    if (xfer + it->xfer > q->batch_xfer || bytes + framed > BATCH_BYTES) break;
    xfer += it->xfer;
    bytes += framed;
    msgs[n++] = it->bb;
  }
  grpc_byte_buffer *bb = n > 1 ? rdev_wire_batch(msgs, n) : NULL;
  if (!bb)
    n = 1; /* alone (or no memory to batch: one at a time) */
  else
    for (size_t i = 0; i < n; i++) grpc_byte_buffer_destroy(msgs[i]);
  for (size_t i = 0; i < n; i++) {
    cl_send_t *it = q->head;
    q->head = it->next;
    if (!bb) bb = it->bb;
    free(it);
  }
  if (!q->head) q->tail = NULL;
  return bb;
}

int cl_send_queue_locked(rdev_session_t *s, grpc_byte_buffer *bb, size_t xfer, bool batchable, bool *queued) {
  cl_send_state_t *q = &s->send;
  *queued = false;
  if (!q->sending) {
    send_start_locked(s, bb);
    return RDEV_OK;
  }
  cl_send_t *it = malloc(sizeof *it);
  if (!it) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  it->bb = bb;
  it->len = grpc_byte_buffer_length(bb);
  it->xfer = xfer;
  it->batchable = batchable;
  it->next = NULL;
  if (q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
  *queued = true;
  return RDEV_OK;
}

void cl_send_done(rdev_session_t *s, bool ok) {
  cl_send_state_t *q = &s->send;
  pthread_mutex_lock(&s->mu);
  if (q->sending) grpc_byte_buffer_destroy(q->sending);
  q->sending = NULL;
  if (ok && !q->ended && q->head) send_start_locked(s, take_next_locked(s));
  if (!q->sending && !q->head && q->close_requested && !q->close_sent && !q->ended) send_close_locked(s);
  pthread_mutex_unlock(&s->mu);
}

bool cl_send_closing_locked(rdev_session_t *s) { return s->send.close_requested; }

bool cl_send_busy_locked(rdev_session_t *s) { return s->send.head || s->send.sending; }

void cl_send_close_locked(rdev_session_t *s) {
  cl_send_state_t *q = &s->send;
  q->close_requested = true;
  if (!q->ended && !q->sending && !q->head && !q->close_sent) send_close_locked(s);
}

void cl_send_end_locked(rdev_session_t *s) {
  cl_send_state_t *q = &s->send;
  q->ended = true;
  while (q->head) {
    cl_send_t *it = q->head;
    q->head = it->next;
    grpc_byte_buffer_destroy(it->bb);
    free(it);
  }
  q->tail = NULL;
}
