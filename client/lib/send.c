/*
 * client/lib/send.c — the send queue. gRPC allows one SEND_MESSAGE in
 * flight per call: a request sent while one is in flight waits in the
 * queue, and what queued behind a send goes out as one batch message
 * when it completes: small requests are framed into the batch being filled
 * as they are queued, so a queued one costs no message of its own. Also
 * the half-close, sent once the queue drained. Owns s->send; calls only
 * error.c and the wire codec.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* Batches stay well inside the server's message limit. */
#define BATCH_BYTES (48u << 10)
#define BATCH_FIRST 4096u /* a new batch's buffer; doubled as it fills */

/* What waits for the one send gRPC allows in flight: a message of its own
 * (a request with a payload), or a batch being filled with the framed
 * small requests queued behind the previous unit, sent as one message. */
typedef struct cl_send {
  grpc_byte_buffer *bb; /* a message of its own; NULL: a batch */
  uint8_t *buf;         /* the batch: its elements, framed */
  size_t len, cap;
  int count;   /* its requests */
  size_t xfer; /* the Read bytes they ask for (batch limit) */
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

/* A byte buffer over the n bytes at p, which it takes (freed with it). */
static grpc_byte_buffer *take_bytes(uint8_t *p, size_t n) {
  grpc_slice sl = grpc_slice_new(p, n, free);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
  grpc_slice_unref(sl);
  return bb;
}

/* Under s->mu: takes the head of the send queue; returns the message to send. */
static grpc_byte_buffer *take_next_locked(rdev_session_t *s) {
  cl_send_state_t *q = &s->send;
  cl_send_t *it = q->head;
  q->head = it->next;
  if (!q->head) q->tail = NULL;
  grpc_byte_buffer *bb = it->bb ? it->bb : take_bytes(it->buf, it->len);
  free(it);
  return bb;
}

static void unit_append_locked(cl_send_state_t *q, cl_send_t *it) {
  it->next = NULL;
  if (q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
}

int cl_send_message_locked(rdev_session_t *s, grpc_byte_buffer *bb, bool *queued) {
  cl_send_state_t *q = &s->send;
  *queued = false;
  if (!q->sending) {
    send_start_locked(s, bb);
    return RDEV_OK;
  }
  cl_send_t *it = calloc(1, sizeof *it);
  if (!it) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  it->bb = bb;
  unit_append_locked(q, it);
  *queued = true;
  return RDEV_OK;
}

int cl_send_small_locked(rdev_session_t *s, const uint8_t *enc, size_t len, size_t xfer, bool *queued) {
  cl_send_state_t *q = &s->send;
  *queued = false;
  if (!q->sending) { /* goes at once, alone */
    uint8_t *p = malloc(len ? len : 1);
    if (!p) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
    memcpy(p, enc, len);
    send_start_locked(s, take_bytes(p, len));
    return RDEV_OK;
  }
  uint8_t hdr[20];
  size_t hl = rdev_wire_batch_header(hdr, len), framed = hl + len;
  cl_send_t *it = q->tail;
  if (!it || it->bb || it->count >= RDEV_WIRE_MAX_BATCH || it->xfer + xfer > q->batch_xfer ||
      it->len + framed > BATCH_BYTES) { /* a new batch */
    it = calloc(1, sizeof *it);
    uint8_t *b = it ? malloc(BATCH_FIRST) : NULL; /* framed < RDEV_WIRE_MAX_REQUEST_FIELDS < BATCH_FIRST */
    if (!b) {
      free(it);
      return cl_error(RDEV_BAD_ALLOC, "out of host memory");
    }
    it->buf = b;
    it->cap = BATCH_FIRST;
    unit_append_locked(q, it);
  } else if (it->len + framed > it->cap) {
    uint8_t *b = realloc(it->buf, 2 * it->cap); /* once is enough: framed < cap */
    if (!b) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
    it->buf = b;
    it->cap *= 2;
  }
  memcpy(it->buf + it->len, hdr, hl);
  memcpy(it->buf + it->len + hl, enc, len);
  it->len += framed;
  it->count++;
  it->xfer += xfer;
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
    if (it->bb) grpc_byte_buffer_destroy(it->bb);
    free(it->buf);
    free(it);
  }
  q->tail = NULL;
}
