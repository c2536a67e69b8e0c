/*
 * tests/bench/rdev_bench/baseline_grpc_server.c — the server side of the
 * bare-gRPC baseline (protocol in baseline_grpc.h): a gRPC C core server on
 * 127.0.0.1:0 with the two hand-registered methods, served by one
 * completion-queue thread, doing no device work: an upload's messages are
 * copied into the landing buffer, a download's are zero-copy slices of the
 * source buffer.
 */
#define _GNU_SOURCE
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "baseline_grpc.h"

enum { ST_REQUESTED, ST_RUNNING, ST_CLOSING };
enum { T_MAIN, T_RECV, T_SEND };

struct scall;
typedef struct {
  struct scall *c; /* NULL: the shutdown tag */
  int which;
} stag_t;

typedef struct scall {
  bare_server_t *g;
  int kind, state;
  stag_t tag[3];
  grpc_call *call;
  gpr_timespec deadline;
  grpc_metadata_array md;
  grpc_byte_buffer *req;  /* unary: the request */
  grpc_byte_buffer *rmsg; /* being received */
  grpc_byte_buffer *smsg; /* being sent */
  int cancelled, send_busy, recv_done;
  uint64_t up_left, up_got;                  /* UP in progress */
  int ack_due;                               /* UP finished: ack to send */
  uint64_t d_size, d_k, d_msg, d_rep, d_off; /* DOWN in progress while d_rep < d_k */
} scall_t;

struct bare_server {
  grpc_server *server;
  grpc_completion_queue *scq;
  void *methods[NKINDS];
  pthread_t thread;
  stag_t shutdown_tag;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int shutdown_done;
  uint8_t *land;
  size_t land_len, land_pos;
  const uint8_t *source;
  size_t source_len;
  atomic_int server_errors;
};

static void server_error(bare_server_t *g, const char *what) {
  if (atomic_fetch_add(&g->server_errors, 1) == 0) bl_fail("grpc: bare server: %s", what);
}

static void arm(bare_server_t *g, int kind) {
  scall_t *c = calloc(1, sizeof *c);
  if (!c) {
    server_error(g, "out of memory");
    return;
  }
  c->g = g;
  c->kind = kind;
  for (int i = 0; i < 3; i++) c->tag[i] = (stag_t){c, i};
  grpc_metadata_array_init(&c->md);
  grpc_call_error e =
      grpc_server_request_registered_call(g->server, g->methods[kind], &c->call, &c->deadline, &c->md,
                                          kind == K_UNARY ? &c->req : NULL, g->scq, g->scq, &c->tag[T_MAIN]);
  if (e != GRPC_CALL_OK) {
    grpc_metadata_array_destroy(&c->md);
    free(c);
    server_error(g, "request_registered_call failed");
  }
}

static void call_free(scall_t *c) {
  if (c->req) grpc_byte_buffer_destroy(c->req);
  if (c->rmsg) grpc_byte_buffer_destroy(c->rmsg);
  if (c->smsg) grpc_byte_buffer_destroy(c->smsg);
  grpc_metadata_array_destroy(&c->md);
  if (c->call) grpc_call_unref(c->call);
  free(c);
}

static int start(scall_t *c, grpc_op *ops, size_t n, int which) {
  grpc_call_error e = grpc_call_start_batch(c->call, ops, n, &c->tag[which], NULL);
  if (e != GRPC_CALL_OK) {
    server_error(c->g, "start_batch failed");
    grpc_call_cancel(c->call, NULL);
    return -1;
  }
  return 0;
}

/* Ends the call with OK (ops[0..n) go first); the call is freed when the
 * batch completes. */
static void finish(scall_t *c, grpc_op *ops, size_t n) {
  ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
  ops[n].data.send_status_from_server.status = GRPC_STATUS_OK;
  n++;
  ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
  ops[n].data.recv_close_on_server.cancelled = &c->cancelled;
  n++;
  c->state = ST_CLOSING;
  if (start(c, ops, n, T_MAIN)) call_free(c);
}

/* Copies a received message into the landing ring (server thread only). */
static size_t land_message(bare_server_t *g, grpc_byte_buffer *bb) {
  grpc_byte_buffer_reader rd;
  if (!grpc_byte_buffer_reader_init(&rd, bb)) {
    server_error(g, "cannot read a message");
    return 0;
  }
  grpc_slice sl;
  size_t total = 0;
  while (grpc_byte_buffer_reader_next(&rd, &sl)) {
    const uint8_t *p = GRPC_SLICE_START_PTR(sl);
    size_t n = GRPC_SLICE_LENGTH(sl);
    total += n;
    while (n) {
      size_t m = min_sz(n, g->land_len - g->land_pos);
      memcpy(g->land + g->land_pos, p, m);
      g->land_pos = (g->land_pos + m) % g->land_len;
      p += m;
      n -= m;
    }
    grpc_slice_unref(sl);
  }
  grpc_byte_buffer_reader_destroy(&rd);
  return total;
}

/* Stream: starts the next send if there is one and none is in flight. */
static void pump_send(scall_t *c) {
  if (c->send_busy || c->state != ST_RUNNING) return;
  grpc_slice sl;
  if (c->ack_due) {
    c->ack_due = 0;
    sl = grpc_slice_from_copied_buffer((const char *)&c->up_got, sizeof c->up_got);
  } else if (c->d_rep < c->d_k) {
    size_t len = min_sz(c->d_msg, c->d_size - c->d_off);
    sl = grpc_slice_new((void *)(c->g->source + c->d_off), len, noop_destroy);
    c->d_off += len;
    if (c->d_off == c->d_size) {
      c->d_off = 0;
      c->d_rep++;
    }
  } else {
    if (c->recv_done) { /* the client half-closed and everything is sent */
      grpc_op ops[2];
      memset(ops, 0, sizeof ops);
      finish(c, ops, 0);
    }
    return;
  }
  c->smsg = grpc_raw_byte_buffer_create(&sl, 1);
  grpc_slice_unref(sl);
  grpc_op op;
  memset(&op, 0, sizeof op);
  op.op = GRPC_OP_SEND_MESSAGE;
  op.data.send_message.send_message = c->smsg;
  c->send_busy = 1;
  if (start(c, &op, 1, T_SEND)) c->send_busy = 0;
}

static void post_recv(scall_t *c, int first) {
  grpc_op ops[2];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  if (first) ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[n].op = GRPC_OP_RECV_MESSAGE;
  ops[n].data.recv_message.recv_message = &c->rmsg;
  n++;
  if (start(c, ops, n, T_RECV)) c->recv_done = 1;
}

static void on_stream_recv(scall_t *c, int ok) {
  bare_server_t *g = c->g;
  grpc_byte_buffer *bb = c->rmsg;
  c->rmsg = NULL;
  if (!ok || !bb) { /* half-close or cancel */
    if (bb) grpc_byte_buffer_destroy(bb);
    c->recv_done = 1;
    if (!ok) c->d_rep = c->d_k; /* stop sending */
    pump_send(c);
    return;
  }
  if (c->up_left) {
    size_t n = land_message(g, bb);
    grpc_byte_buffer_destroy(bb);
    if (n > c->up_left) server_error(g, "more bytes than announced");
    c->up_left -= n < c->up_left ? n : c->up_left;
    c->up_got += n;
    if (!c->up_left) c->ack_due = 1;
  } else {
    ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    grpc_byte_buffer_reader rd;
    if (grpc_byte_buffer_reader_init(&rd, bb)) {
      grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
      if (GRPC_SLICE_LENGTH(all) == sizeof ctl) memcpy(&ctl, GRPC_SLICE_START_PTR(all), sizeof ctl);
      grpc_slice_unref(all);
      grpc_byte_buffer_reader_destroy(&rd);
    }
    grpc_byte_buffer_destroy(bb);
    if (ctl.magic != CTL_MAGIC || ctl.msg == 0 || ctl.size == 0 ||
        (ctl.op == CTL_DOWN && (ctl.size > g->source_len || c->d_rep < c->d_k)) ||
        (ctl.op != CTL_UP && ctl.op != CTL_DOWN)) {
      server_error(g, "bad control message");
      grpc_call_cancel(c->call, NULL);
    } else if (ctl.op == CTL_UP) {
      c->up_left = ctl.size * ctl.k;
      c->up_got = 0;
      g->land_pos = 0;
      if (!c->up_left) c->ack_due = 1;
    } else {
      c->d_size = ctl.size;
      c->d_k = ctl.k;
      c->d_msg = ctl.msg;
      c->d_rep = c->d_off = 0;
    }
  }
  pump_send(c);
  post_recv(c, 0);
}

static void server_step(stag_t *t, int ok) {
  scall_t *c = t->c;
  bare_server_t *g = c->g;
  grpc_op ops[6];
  memset(ops, 0, sizeof ops);
  if (t->which == T_MAIN && c->state == ST_CLOSING) {
    call_free(c);
    return;
  }
  if (t->which == T_MAIN) { /* ST_REQUESTED */
    if (!ok) {              /* the server is shutting down */
      call_free(c);
      return;
    }
    arm(g, c->kind);
    c->state = ST_RUNNING;
    if (c->kind == K_STREAM) {
      post_recv(c, 1);
    } else { /* unary: empty reply */
      c->smsg = grpc_raw_byte_buffer_create(NULL, 0);
      ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
      ops[1].op = GRPC_OP_SEND_MESSAGE;
      ops[1].data.send_message.send_message = c->smsg;
      finish(c, ops, 2);
    }
    return;
  }
  if (t->which == T_RECV) {
    on_stream_recv(c, ok);
    return;
  }
  /* T_SEND */
  grpc_byte_buffer_destroy(c->smsg);
  c->smsg = NULL;
  c->send_busy = 0;
  if (!ok) c->d_rep = c->d_k;
  pump_send(c);
}

static void *server_thread(void *arg) {
  bare_server_t *g = arg;
  for (;;) {
    grpc_event ev = grpc_completion_queue_next(g->scq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
    if (ev.type != GRPC_OP_COMPLETE) continue;
    stag_t *t = ev.tag;
    if (!t->c) {
      pthread_mutex_lock(&g->mu);
      g->shutdown_done = 1;
      pthread_cond_broadcast(&g->cv);
      pthread_mutex_unlock(&g->mu);
      continue;
    }
    server_step(t, ev.success);
  }
  return NULL;
}

int bare_server_start(bare_server_t **out, void *land, size_t land_len, const void *source, size_t source_len,
                      int *port) {
  *out = NULL;
  bare_server_t *g = calloc(1, sizeof *g);
  if (!g) return bl_fail("grpc: out of memory");
  grpc_init();
  g->land = land;
  g->land_len = land_len;
  g->source = source;
  g->source_len = source_len;
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  grpc_channel_args ca = {sizeof kArgs / sizeof kArgs[0], (grpc_arg *)kArgs};
  g->scq = grpc_completion_queue_create_for_next(NULL);
  g->server = grpc_server_create(&ca, NULL);
  g->methods[K_STREAM] = grpc_server_register_method(g->server, kMethod[K_STREAM], NULL, GRPC_SRM_PAYLOAD_NONE, 0);
  g->methods[K_UNARY] =
      grpc_server_register_method(g->server, kMethod[K_UNARY], NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  grpc_server_register_completion_queue(g->server, g->scq, NULL);
  grpc_server_credentials *sc = grpc_insecure_server_credentials_create();
  *port = grpc_server_add_http2_port(g->server, "127.0.0.1:0", sc);
  grpc_server_credentials_release(sc);
  if (*port <= 0) {
    grpc_server_destroy(g->server);
    grpc_completion_queue_shutdown(g->scq);
    while (grpc_completion_queue_next(g->scq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN) {}
    grpc_completion_queue_destroy(g->scq);
    grpc_shutdown();
    free(g);
    return bl_fail("grpc: cannot listen on 127.0.0.1:0");
  }
  grpc_server_start(g->server);
  for (int k = 0; k < NKINDS; k++) arm(g, k);
  pthread_create(&g->thread, NULL, server_thread, g);
  *out = g;
  return 0;
}

int bare_server_errors(bare_server_t *g) { return atomic_load(&g->server_errors); }

void bare_server_stop(bare_server_t *g) {
  if (g->server) {
    grpc_server_shutdown_and_notify(g->server, g->scq, &g->shutdown_tag);
    grpc_server_cancel_all_calls(g->server);
    pthread_mutex_lock(&g->mu);
    while (!g->shutdown_done) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    grpc_server_destroy(g->server);
    grpc_completion_queue_shutdown(g->scq);
    pthread_join(g->thread, NULL);
    grpc_completion_queue_destroy(g->scq);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
  }
  free(g);
  grpc_shutdown();
}
