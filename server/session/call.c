/*
 * server/session/call.c — a Session call's events: accepting it
 * (srv_session_start), each received message handed to dispatch.c (the
 * next receive posted late after small ones), and the call's end, which
 * releases the session and writes its audit line.
 */
#include <stdio.h>
#include <stdlib.h>

#include "session.h"

/* After a small request the session's next receive is posted only once its
 * completion-queue thread has no event ready (srv_sessions_post_deferred).
 * gRPC 1.51 answers a receive posted after consumed data with a
 * WINDOW_UPDATE of its own: a write, and a wake-up of the client, that sat
 * between a request and the next one already on its way (a launch and its
 * synchronize: 13 us of 72 in a trace). Posted late, the next request is
 * usually in already and the update rides with the reply. After a bulk
 * Write it is posted at once: deferring it cost sync H2D 5%. */
#define DEFER_RECV_BELOW ((size_t)64 << 10)
static _Thread_local srv_session_t *t_deferred;

static void on_recv(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, recv_op));
  grpc_byte_buffer *bb = s->recv_bb;
  s->recv_bb = NULL;
  if (!ok || !bb) { /* client half-closed, or the call is gone */
    if (bb) grpc_byte_buffer_destroy(bb);
    pthread_mutex_lock(&s->mu);
    s->half_closed = 1;
    pthread_mutex_unlock(&s->mu);
    srv_session_release(s);
    pthread_mutex_lock(&s->mu);
    srv_maybe_send_status(s);
    pthread_mutex_unlock(&s->mu);
    srv_session_unref(s);
    return;
  }
  size_t len = grpc_byte_buffer_length(bb);
  if (srv_handle_message(s, bb)) { /* paused: the resumer goes on, and receives next */
    srv_session_unref(s);
    return;
  }
  grpc_byte_buffer_destroy(bb);
  if (len < DEFER_RECV_BELOW) { /* the recv batch's reference stays until then */
    s->defer_next = t_deferred;
    t_deferred = s;
    return;
  }
  pthread_mutex_lock(&s->mu);
  srv_post_next_recv(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
}

void srv_sessions_post_deferred(void) {
  while (t_deferred) {
    srv_session_t *s = t_deferred;
    t_deferred = s->defer_next;
    pthread_mutex_lock(&s->mu);
    srv_post_next_recv(s);
    pthread_mutex_unlock(&s->mu);
    srv_session_unref(s);
  }
}

static void on_close(srv_op_t *op, int ok) {
  srv_session_t *s = (srv_session_t *)((char *)op - offsetof(srv_session_t, close_op));
  (void)ok;
  if (s->cancelled) srv_session_release(s);
  srv_session_closed(s, s->cancelled ? srv_end_reason(s) : "closed by client");
  pthread_mutex_lock(&s->mu);
  s->broken = 1;
  srv_drop_queue(s);
  pthread_mutex_unlock(&s->mu);
  srv_session_unref(s);
}

/* The "accepted" mark and the server's batch limit: constant, shared. */
static char batch_xfer_str[24];

static void open_md_init(void) { snprintf(batch_xfer_str, sizeof batch_xfer_str, "%u", RDEV_WIRE_MAX_BATCH_XFER); }

/* The open metadata: static strings, but the key and the device count,
 * which the session holds (it outlives the start batch, which holds a
 * reference). */
static size_t open_md_fill(srv_session_t *s) {
  grpc_metadata *md = s->open_md;
  int ndev = 0;
  rdev_rt_device_count(s->srv->rt, &ndev);
  snprintf(s->devices_str, sizeof s->devices_str, "%d", srv_tenant_device_count(s->tenant, ndev));
  md[0].key = grpc_slice_from_static_string(RDEV_WIRE_SESSION_OPEN_KEY);
  md[0].value = grpc_slice_from_static_string("open");
  md[1].key = grpc_slice_from_static_string(RDEV_WIRE_BATCH_XFER_KEY);
  md[1].value = grpc_slice_from_static_string(batch_xfer_str);
  md[2].key = grpc_slice_from_static_string(RDEV_WIRE_SESSION_KEY_KEY);
  md[2].value = grpc_slice_from_static_string(s->key);
  md[3].key = grpc_slice_from_static_string(RDEV_WIRE_DEVICES_KEY);
  md[3].value = grpc_slice_from_static_string(s->devices_str);
  int local = s->srv->bulk_path[0] != '\0';
  md[4].key = grpc_slice_from_static_string(local ? RDEV_WIRE_BULK_PATH_KEY : RDEV_WIRE_BULK_PORT_KEY);
  md[4].value = grpc_slice_from_static_string(local ? s->srv->bulk_path : s->srv->bulk_port_str);
  return local || s->srv->bulk_port > 0 ? 5 : 4;
}

int srv_session_start(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant, char *msg,
                      size_t msglen) {
  srv_session_t *s = srv_session_new(srv, call, deadline, tenant, msg, msglen);
  if (!s) return -1;
  srv_flow_init(s);
  s->recv_op.done = on_recv;
  s->close_op.done = on_close;
  grpc_op close_op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};
  close_op.data.recv_close_on_server.cancelled = &s->cancelled;
  RDEV_HANDOFF_GIVE(&s->close_op);
  if (grpc_call_start_batch(call, &close_op, 1, &s->close_op, NULL) != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "session %llu: cannot watch for close", (unsigned long long)s->id);
  }
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, open_md_init);
  grpc_op start = {.op = GRPC_OP_SEND_INITIAL_METADATA};
  start.data.send_initial_metadata.count = open_md_fill(s);
  start.data.send_initial_metadata.metadata = s->open_md;
  pthread_mutex_lock(&s->mu);
  srv_start_batch(s, &start, 1, &s->start_op);
  srv_post_recv(s);
  pthread_mutex_unlock(&s->mu);
  return 0;
}
