/*
 * tests/bench/rdev_bench/baseline_grpc_client.c — the client side of the
 * bare-gRPC baseline (protocol in baseline_grpc.h): one channel to the bare
 * server, the long-lived stream that carries uploads (zero-copy slices of
 * the source) and downloads (each message copied into the destination),
 * and empty unary calls. It times each call itself; it runs in a helper
 * process of its own (baseline_grpc.c).
 */
#define _GNU_SOURCE
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "baseline_grpc.h"
#include "common.h"

/* Client tags: the stream's batches, and the unary call's one batch. */
enum { C_SINIT = 1, C_SSEND, C_SRECV, C_SSTATUS, C_UNARY };

struct bare_client {
  grpc_channel *ch;
  grpc_completion_queue *ccq;
  unsigned pending; /* client batches started, not completed: bit per tag */
  int ok[8];
  grpc_call *stream;
  grpc_metadata_array s_init_md, s_trail_md;
  grpc_status_code s_status;
  grpc_slice s_details;
};

static int cq_wait(bare_client_t *g, int tag) {
  while (g->pending & (1u << tag)) {
    grpc_event ev = grpc_completion_queue_next(
        g->ccq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(CALL_DEADLINE_S, GPR_TIMESPAN)), NULL);
    if (ev.type != GRPC_OP_COMPLETE) return bl_fail("grpc: no completion within %d s", CALL_DEADLINE_S);
    int t = (int)(intptr_t)ev.tag;
    g->pending &= ~(1u << t);
    g->ok[t] = ev.success;
  }
  return 0;
}

static int batch(bare_client_t *g, grpc_call *call, const grpc_op *ops, size_t n, int tag) {
  grpc_call_error e = grpc_call_start_batch(call, ops, n, (void *)(intptr_t)tag, NULL);
  if (e != GRPC_CALL_OK) return bl_fail("grpc: start_batch: error %d", (int)e);
  g->pending |= 1u << tag;
  return 0;
}

static gpr_timespec deadline_from_now(void) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(CALL_DEADLINE_S, GPR_TIMESPAN));
}

int bare_client_start(bare_client_t **out, int port) {
  *out = NULL;
  bare_client_t *g = calloc(1, sizeof *g);
  if (!g) return bl_fail("grpc: out of memory");
  grpc_init();
  grpc_channel_args ca = {sizeof kArgs / sizeof kArgs[0], (grpc_arg *)kArgs};
  char target[64];
  snprintf(target, sizeof target, "127.0.0.1:%d", port);
  grpc_channel_credentials *cc = grpc_insecure_credentials_create();
  g->ch = grpc_channel_create(target, cc, &ca);
  grpc_channel_credentials_release(cc);
  g->ccq = grpc_completion_queue_create_for_next(NULL);

  /* the long-lived stream */
  grpc_metadata_array_init(&g->s_init_md);
  grpc_metadata_array_init(&g->s_trail_md);
  g->s_details = grpc_empty_slice();
  g->stream = grpc_channel_create_call(g->ch, NULL, GRPC_PROPAGATE_DEFAULTS, g->ccq,
                                       grpc_slice_from_static_string(kMethod[K_STREAM]), NULL,
                                       gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
  grpc_op ops[2];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[1].data.recv_initial_metadata.recv_initial_metadata = &g->s_init_md;
  int rc = g->stream ? batch(g, g->stream, ops, 2, C_SINIT) : bl_fail("grpc: cannot create the stream");
  if (rc == 0) rc = cq_wait(g, C_SINIT);
  if (rc == 0 && !g->ok[C_SINIT]) rc = bl_fail("grpc: the bare stream did not start");
  if (rc) {
    bare_client_stop(g);
    return -1;
  }
  *out = g;
  return 0;
}

static int stream_send(bare_client_t *g, grpc_slice sl) {
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = bb;
  int rc = batch(g, g->stream, &op, 1, C_SSEND);
  if (rc == 0) rc = cq_wait(g, C_SSEND);
  if (rc == 0 && !g->ok[C_SSEND]) rc = bl_fail("grpc: stream: send failed");
  grpc_byte_buffer_destroy(bb);
  return rc;
}

/* Receives one message on the stream (*bb NULL when the stream ended). */
static int stream_recv(bare_client_t *g, grpc_byte_buffer **bb) {
  *bb = NULL;
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_RECV_MESSAGE;
  op.data.recv_message.recv_message = bb;
  int rc = batch(g, g->stream, &op, 1, C_SRECV);
  if (rc == 0) rc = cq_wait(g, C_SRECV);
  if (rc == 0 && !*bb) rc = bl_fail("grpc: stream: ended early (the server helper's error comes at stop)");
  return rc;
}

static int send_ctl(bare_client_t *g, int op, size_t size, long k, size_t msg) {
  ctl_t ctl = {CTL_MAGIC, (uint64_t)op, size, (uint64_t)k, msg};
  return stream_send(g, grpc_slice_from_copied_buffer((const char *)&ctl, sizeof ctl));
}

int bare_upload(bare_client_t *g, const void *src, size_t size, long k, size_t msg, double *secs) {
  double t0 = now_s();
  int rc = send_ctl(g, CTL_UP, size, k, msg);
  for (long r = 0; r < k && rc == 0; r++) {
    for (size_t off = 0; off < size && rc == 0;) {
      size_t n = min_sz(msg, size - off);
      rc = stream_send(g, grpc_slice_new((void *)((const uint8_t *)src + off), n, noop_destroy));
      off += n;
    }
  }
  grpc_byte_buffer *ack = NULL;
  if (rc == 0) rc = stream_recv(g, &ack);
  *secs = now_s() - t0;
  if (ack) {
    uint64_t got = 0;
    grpc_byte_buffer_reader rd;
    if (grpc_byte_buffer_reader_init(&rd, ack)) {
      grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
      if (GRPC_SLICE_LENGTH(all) == sizeof got) memcpy(&got, GRPC_SLICE_START_PTR(all), sizeof got);
      grpc_slice_unref(all);
      grpc_byte_buffer_reader_destroy(&rd);
    }
    grpc_byte_buffer_destroy(ack);
    if (got != size * (uint64_t)k)
      rc = bl_fail("grpc: upload: server landed %llu bytes of %zu", (unsigned long long)got, size * (size_t)k);
  }
  return rc;
}

int bare_download(bare_client_t *g, void *dst, size_t size, long k, size_t msg, double *secs) {
  double t0 = now_s();
  int rc = send_ctl(g, CTL_DOWN, size, k, msg);
  size_t got = 0, pos = 0, total = size * (size_t)k;
  while (rc == 0 && got < total) {
    grpc_byte_buffer *bb;
    rc = stream_recv(g, &bb);
    if (rc) break;
    grpc_byte_buffer_reader rd;
    if (!grpc_byte_buffer_reader_init(&rd, bb)) {
      grpc_byte_buffer_destroy(bb);
      rc = bl_fail("grpc: download: cannot read a message");
      break;
    }
    grpc_slice sl;
    while (grpc_byte_buffer_reader_next(&rd, &sl)) {
      const uint8_t *p = GRPC_SLICE_START_PTR(sl);
      size_t n = GRPC_SLICE_LENGTH(sl);
      got += n;
      while (n) {
        size_t m = min_sz(n, size - pos);
        memcpy((uint8_t *)dst + pos, p, m);
        pos = (pos + m) % size;
        p += m;
        n -= m;
      }
      grpc_slice_unref(sl);
    }
    grpc_byte_buffer_reader_destroy(&rd);
    grpc_byte_buffer_destroy(bb);
  }
  *secs = now_s() - t0;
  if (rc == 0 && got != total) rc = bl_fail("grpc: download: received %zu bytes of %zu", got, total);
  return rc;
}

int bare_unary(bare_client_t *g, double *us) {
  grpc_op ops[6];
  grpc_metadata_array init_md, trail_md;
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_slice details = grpc_empty_slice();
  grpc_byte_buffer *req = grpc_raw_byte_buffer_create(NULL, 0), *resp = NULL;
  grpc_metadata_array_init(&init_md);
  grpc_metadata_array_init(&trail_md);
  double t0 = now_s();
  grpc_call *call =
      grpc_channel_create_call(g->ch, NULL, GRPC_PROPAGATE_DEFAULTS, g->ccq,
                               grpc_slice_from_static_string(kMethod[K_UNARY]), NULL, deadline_from_now(), NULL);
  int rc = call ? 0 : bl_fail("grpc: cannot create a call");
  if (rc == 0) {
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = req;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &resp;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    rc = batch(g, call, ops, 6, C_UNARY);
    if (rc == 0) rc = cq_wait(g, C_UNARY);
  }
  *us = (now_s() - t0) * 1e6;
  if (rc == 0 && status != GRPC_STATUS_OK) rc = bl_fail("grpc: unary: status %d", (int)status);
  if (rc == 0 && !resp) rc = bl_fail("grpc: unary: no reply message");
  if (resp) grpc_byte_buffer_destroy(resp);
  grpc_byte_buffer_destroy(req);
  grpc_metadata_array_destroy(&init_md);
  grpc_metadata_array_destroy(&trail_md);
  grpc_slice_unref(details);
  if (call) grpc_call_unref(call);
  return rc;
}

void bare_client_stop(bare_client_t *g) {
  if (g->stream) { /* half-close, then the server ends the call */
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[1].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[1].data.recv_status_on_client.trailing_metadata = &g->s_trail_md;
    ops[1].data.recv_status_on_client.status = &g->s_status;
    ops[1].data.recv_status_on_client.status_details = &g->s_details;
    if (batch(g, g->stream, ops, 2, C_SSTATUS) == 0 && cq_wait(g, C_SSTATUS) != 0) grpc_call_cancel(g->stream, NULL);
    for (int t = C_SINIT; t <= C_SSTATUS; t++)
      if (cq_wait(g, t)) break;
    grpc_call_unref(g->stream);
    grpc_metadata_array_destroy(&g->s_init_md);
    grpc_metadata_array_destroy(&g->s_trail_md);
    grpc_slice_unref(g->s_details);
  }
  if (g->ch) {
    grpc_channel_destroy(g->ch);
    grpc_completion_queue_shutdown(g->ccq);
    while (grpc_completion_queue_next(g->ccq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN) {}
    grpc_completion_queue_destroy(g->ccq);
  }
  free(g);
  grpc_shutdown();
}
