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

/* A message sent and kept until rdevd acknowledged it (resume). */
typedef struct cl_sent {
  grpc_byte_buffer *bb;
  uint64_t num;
  struct cl_sent *next;
} cl_sent_t;

void cl_send_init(rdev_session_t *s, size_t batch_xfer) { s->send.batch_xfer = batch_xfer; }

/* bb with Request.acked = rx appended (a field may come after the
 * others; the last one counts): a new byte buffer sharing bb's slices,
 * or bb itself out of memory. Takes bb. */
static grpc_byte_buffer *with_acked(grpc_byte_buffer *bb, uint64_t rx) {
  if (bb->type != GRPC_BB_RAW) return bb;
  grpc_slice_buffer *sb = &bb->data.raw.slice_buffer;
  grpc_slice *sl = malloc((sb->count + 1) * sizeof *sl);
  if (!sl) return bb;
  uint8_t f[12];
  size_t n = 0;
  f[n++] = 0xf8; /* field 31, varint: (31 << 3) | 0 as a varint */
  f[n++] = 0x01;
  for (uint64_t v = rx;; v >>= 7) {
    f[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    if (v <= 0x7f) break;
  }
  memcpy(sl, sb->slices, sb->count * sizeof *sl);
  sl[sb->count] = grpc_slice_from_copied_buffer((const char *)f, n);
  grpc_byte_buffer *out = grpc_raw_byte_buffer_create(sl, sb->count + 1); /* references them */
  grpc_slice_unref(sl[sb->count]);
  free(sl);
  grpc_byte_buffer_destroy(bb);
  return out;
}

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
  /* No GRPC_WRITE_BUFFER_HINT: chttp2 completes a hinted send only once
   * its bytes were written, and a small one is not written until the next
   * unhinted send, which we start only after this one completed. */
  cl_send_state_t *q = &s->send;
  q->tx++;
  if (q->resumable && q->rx > q->rx_told) { /* the replies received ride along */
    bb = with_acked(bb, q->rx);
    q->rx_told = q->rx;
    q->rx_untold = 0;
  }
  /* gRPC takes the slices out of what it sends: a message kept for a
   * resume is sent as a second byte buffer over the same slices */
  q->sending = bb;
  if (q->keep && (q->sending_copy = grpc_byte_buffer_copy(bb))) bb = q->sending_copy;
  op.data.send_message.send_message = bb;
  if (grpc_call_start_batch(s->call, &op, 1, CL_TAG(CL_TAG_SEND), NULL) != GRPC_CALL_OK) {
    /* Cannot happen with one send in flight; end the call rather than hang. */
    grpc_byte_buffer_destroy(q->sending);
    if (q->sending_copy) grpc_byte_buffer_destroy(q->sending_copy);
    q->sending = q->sending_copy = NULL;
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
  if (!q->sending && !q->paused) {
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
  if (!q->sending && !q->paused) { /* goes at once, alone */
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

/* Under s->mu: keeps bb, the session's num-th message, until rdevd
 * acknowledges it (it may not have arrived); destroys it when the session
 * does not resume. */
static void keep_locked(cl_send_state_t *q, grpc_byte_buffer *bb, uint64_t num) {
  /* (its acknowledgement may have come before its send completed) */
  cl_sent_t *e = q->keep && !q->ended && num > q->acked ? malloc(sizeof *e) : NULL;
  if (!e) { /* not kept (out of memory): the session cannot resume any more */
    q->lost |= q->keep && !q->ended && num > q->acked;
    grpc_byte_buffer_destroy(bb);
    return;
  }
  e->bb = bb;
  e->num = num;
  e->next = NULL;
  if (q->log_tail)
    q->log_tail->next = e;
  else
    q->log_head = e;
  q->log_tail = e;
}

void cl_send_done(rdev_session_t *s, bool ok) {
  cl_send_state_t *q = &s->send;
  pthread_mutex_lock(&s->mu);
  if (q->sending_copy) grpc_byte_buffer_destroy(q->sending_copy);
  if (q->sending) keep_locked(q, q->sending, q->tx);
  q->sending = q->sending_copy = NULL;
  if (ok && !q->ended && !q->paused && q->head) send_start_locked(s, take_next_locked(s));
  if (!q->sending && !q->head && q->close_requested && !q->close_sent && !q->ended && !q->paused) send_close_locked(s);
  pthread_mutex_unlock(&s->mu);
}

void cl_send_acked_locked(rdev_session_t *s, uint64_t n) {
  cl_send_state_t *q = &s->send;
  if (n > q->acked) q->acked = n;
  while (q->log_head && q->log_head->num <= n) {
    cl_sent_t *e = q->log_head;
    q->log_head = e->next;
    if (!q->log_head) q->log_tail = NULL;
    grpc_byte_buffer_destroy(e->bb);
    free(e);
  }
}

void cl_send_received_locked(rdev_session_t *s, uint64_t rx, size_t len) {
  cl_send_state_t *q = &s->send;
  q->rx = rx;
  q->rx_untold += len;
  if (!q->resumable || q->paused || q->ended || q->close_sent || q->sending || q->head) return;
  if (rx - q->rx_told < RDEV_WIRE_ACK_EVERY && q->rx_untold < RDEV_WIRE_ACK_BYTES) return;
  uint8_t *p = malloc(1); /* an empty Request: with_acked gives it its one field */
  if (p) send_start_locked(s, take_bytes(p, 0));
}

void cl_send_keep_locked(rdev_session_t *s, bool keep, bool resumable) {
  cl_send_state_t *q = &s->send;
  q->keep = keep;
  q->resumable = resumable;
  while (!keep && q->log_head) { /* nothing will resend them */
    cl_sent_t *e = q->log_head;
    q->log_head = e->next;
    grpc_byte_buffer_destroy(e->bb);
    free(e);
  }
  if (!keep) q->log_tail = NULL;
}

void cl_send_pause_locked(rdev_session_t *s) { s->send.paused = true; }

bool cl_send_resume_locked(rdev_session_t *s, uint64_t received) {
  cl_send_state_t *q = &s->send;
  if (q->lost || received > q->tx) return false;
  cl_send_acked_locked(s, received);
  /* the rest goes again, in order, ahead of what was queued */
  cl_send_t *first = NULL, *last = NULL;
  while (q->log_head) {
    cl_sent_t *e = q->log_head;
    q->log_head = e->next;
    cl_send_t *it = calloc(1, sizeof *it);
    if (!it) { /* out of memory: the message is lost, and so is the session */
      q->lost = true;
      grpc_byte_buffer_destroy(e->bb);
      free(e);
      continue;
    }
    it->bb = e->bb;
    free(e);
    if (last)
      last->next = it;
    else
      first = it;
    last = it;
  }
  q->log_tail = NULL;
  if (first) {
    last->next = q->head;
    if (!q->head) q->tail = last;
    q->head = first;
  }
  q->tx = received;
  q->paused = false;
  q->close_sent = false;
  if (!q->sending && q->head) send_start_locked(s, take_next_locked(s));
  if (!q->sending && !q->head && q->close_requested) send_close_locked(s);
  return !q->lost;
}

bool cl_send_closing_locked(rdev_session_t *s) { return s->send.close_requested; }

bool cl_send_busy_locked(rdev_session_t *s) { return s->send.head || s->send.sending; }

bool cl_send_in_flight_locked(rdev_session_t *s) { return s->send.sending != NULL; }

void cl_send_close_locked(rdev_session_t *s) {
  cl_send_state_t *q = &s->send;
  if (!q->close_requested && !q->ended) {            /* a bye first: the half-close is not a break */
    static const uint8_t bye[] = {0x80, 0x02, 0x01}; /* field 32, varint 1 */
    uint8_t *p = malloc(sizeof bye);
    grpc_byte_buffer *bb = p ? take_bytes(memcpy(p, bye, sizeof bye), sizeof bye) : NULL;
    bool queued;
    /* without it (out of memory), rdevd keeps the session for its window */
    if (bb && cl_send_message_locked(s, bb, &queued) != RDEV_OK) grpc_byte_buffer_destroy(bb);
  }
  q->close_requested = true;
  if (!q->ended && !q->sending && !q->head && !q->close_sent) send_close_locked(s);
}

void cl_send_end_locked(rdev_session_t *s) {
  cl_send_state_t *q = &s->send;
  q->ended = true;
  cl_send_acked_locked(s, UINT64_MAX);
  while (q->head) {
    cl_send_t *it = q->head;
    q->head = it->next;
    if (it->bb) grpc_byte_buffer_destroy(it->bb);
    free(it->buf);
    free(it);
  }
  q->tail = NULL;
}
