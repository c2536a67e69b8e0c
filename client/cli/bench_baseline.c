/*
 * client/cli/bench_baseline.c — the baselines of `rdev bench`: what the same
 * bytes cost without rdev, measured in the same process and run so that the
 * VM's drift cancels in the ratios.
 *
 * These baselines are the only part of the `rdev` tool NOT built on the
 * public API (rdev/rdev.h): they use plain sockets, the gRPC C core and the
 * device runtime (rdev/runtime.h) directly, because measuring the layers
 * under rdev is their purpose. Every rdev figure comes from bench.c, which
 * uses rdev.h only.
 *
 * - raw TCP: one loopback connection; per sample a sender thread writes the
 *   bytes (writes of the chunk size) and a receiver thread reads them into a
 *   destination buffer.
 * - bare gRPC: a server on 127.0.0.1:0 with two hand-registered methods
 *   (/rdev.bench.Bare/Stream: one long-lived bidi call, like an rdev session,
 *   carrying uploads and downloads; /Unary: empty request and reply) served
 *   by one completion-queue thread, and one client channel, in two helper
 *   processes (see below). Messages are raw bytes (no protobuf), 1 MiB like
 *   rdev's chunks; the sending side references its memory (zero-copy
 *   slices), the receiving side copies each message into a destination
 *   buffer, as recv() does for TCP and as rdev must. No device work. It is
 *   gRPC at its best here: rdev's message limits, BDP probing off, glibc
 *   malloc keeping freed memory.
 * - the in-process runtime: rdev_rt_memcpy on a sim runtime, no network.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "rdev/runtime.h"

/* ---- errors and time -------------------------------------------------------- */

static char g_err[512];
static pthread_mutex_t g_err_mu = PTHREAD_MUTEX_INITIALIZER;

const char *bl_error(void) { return g_err; }

static int bl_fail(const char *fmt, ...) {
  pthread_mutex_lock(&g_err_mu);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&g_err_mu);
  return -1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- raw TCP ------------------------------------------------------------------ */

struct bl_tcp {
  int snd, rcv;
};

int bl_tcp_open(bl_tcp_t **out) {
  *out = NULL;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) return bl_fail("tcp: socket: %s", strerror(errno));
  if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr *)&a, &alen)) {
    int e = errno;
    close(ls);
    return bl_fail("tcp: listen on 127.0.0.1:0: %s", strerror(e));
  }
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a)) {
    int e = errno;
    if (c >= 0) close(c);
    close(ls);
    return bl_fail("tcp: connect: %s", strerror(e));
  }
  int s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
  int e = errno;
  close(ls);
  if (s < 0) {
    close(c);
    return bl_fail("tcp: accept: %s", strerror(e));
  }
  int one = 1; /* as gRPC sets on its sockets */
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  bl_tcp_t *t = malloc(sizeof *t);
  if (!t) {
    close(c);
    close(s);
    return bl_fail("tcp: out of memory");
  }
  t->snd = c;
  t->rcv = s;
  *out = t;
  return 0;
}

typedef struct {
  int fd;
  const uint8_t *src;
  uint8_t *dst;
  size_t size, wsize;
  long k;
  int err; /* errno, or -1 for EOF */
} tcp_job_t;

static void *tcp_sender(void *arg) {
  tcp_job_t *j = arg;
  for (long r = 0; r < j->k; r++) {
    for (size_t off = 0; off < j->size;) {
      ssize_t n = send(j->fd, j->src + off, min_sz(j->wsize, j->size - off), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        j->err = errno;
        return NULL;
      }
      off += (size_t)n;
    }
  }
  return NULL;
}

static void *tcp_receiver(void *arg) {
  tcp_job_t *j = arg;
  size_t total = j->size * (size_t)j->k, got = 0, pos = 0;
  while (got < total) {
    ssize_t n = recv(j->fd, j->dst + pos, j->size - pos, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      j->err = n == 0 ? -1 : errno;
      return NULL;
    }
    got += (size_t)n;
    pos += (size_t)n;
    if (pos == j->size) pos = 0;
  }
  return NULL;
}

int bl_tcp_move(bl_tcp_t *t, const void *src, void *dst, size_t size, long k, size_t wsize,
                double *secs) {
  tcp_job_t sj = {.fd = t->snd, .src = src, .size = size, .wsize = wsize, .k = k};
  tcp_job_t rj = {.fd = t->rcv, .dst = dst, .size = size, .wsize = wsize, .k = k};
  pthread_t st, rt;
  double t0 = now_s();
  if (pthread_create(&rt, NULL, tcp_receiver, &rj)) return bl_fail("tcp: cannot start a thread");
  if (pthread_create(&st, NULL, tcp_sender, &sj)) {
    shutdown(t->rcv, SHUT_RD);
    pthread_join(rt, NULL);
    return bl_fail("tcp: cannot start a thread");
  }
  pthread_join(rt, NULL);
  *secs = now_s() - t0;
  pthread_join(st, NULL);
  if (sj.err) return bl_fail("tcp: send: %s", strerror(sj.err));
  if (rj.err) return bl_fail("tcp: recv: %s", rj.err < 0 ? "connection closed" : strerror(rj.err));
  return 0;
}

void bl_tcp_close(bl_tcp_t *t) {
  if (!t) return;
  close(t->snd);
  close(t->rcv);
  free(t);
}

/* ---- bare gRPC: server ---------------------------------------------------------- */

/* Two methods, both hand-registered, no protobuf (messages are raw bytes):
 *  /rdev.bench.Bare/Stream  one long-lived bidi call, like an rdev session.
 *      The client sends 32-byte control messages {magic, op, size, k, msg}:
 *      UP: the next size*k bytes (messages of at most msg bytes) are landed
 *      in the server's landing buffer from offset 0, then the server sends
 *      an 8-byte ack (bytes landed); DOWN: the server sends source[0..size)
 *      k times as messages of at most msg bytes.
 *  /rdev.bench.Bare/Unary   empty request, empty reply. */
enum { K_STREAM, K_UNARY, NKINDS };
static const char *const kMethod[NKINDS] = {"/rdev.bench.Bare/Stream", "/rdev.bench.Bare/Unary"};
#define MAX_MESSAGE (64 << 20) /* a limit above any chunk size rdev uses */
#define CALL_DEADLINE_S 120
#define CTL_MAGIC 0x6172656263746c31ull /* "1ltcbera" */
enum { CTL_UP = 1, CTL_DOWN = 2 };

typedef struct {
  uint64_t magic, op, size, k, msg;
} ctl_t;

enum { ST_REQUESTED, ST_RUNNING, ST_CLOSING };
enum { T_MAIN, T_RECV, T_SEND };

struct scall;
typedef struct {
  struct scall *c; /* NULL: the shutdown tag */
  int which;
} stag_t;

typedef struct scall {
  struct bare *g;
  int kind, state;
  stag_t tag[3];
  grpc_call *call;
  gpr_timespec deadline;
  grpc_metadata_array md;
  grpc_byte_buffer *req;  /* unary: the request */
  grpc_byte_buffer *rmsg; /* being received */
  grpc_byte_buffer *smsg; /* being sent */
  int cancelled, send_busy, recv_done;
  uint64_t up_left, up_got;      /* UP in progress */
  int ack_due;                   /* UP finished: ack to send */
  uint64_t d_size, d_k, d_msg, d_rep, d_off; /* DOWN in progress while d_rep < d_k */
} scall_t;

struct bare {
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
  /* client */
  grpc_channel *ch;
  grpc_completion_queue *ccq;
  unsigned pending; /* client batches started, not completed: bit per tag */
  int ok[8];
  grpc_call *stream;
  grpc_metadata_array s_init_md, s_trail_md;
  grpc_status_code s_status;
  grpc_slice s_details;
};

static void noop_destroy(void *p) { (void)p; }

static void server_error(struct bare *g, const char *what) {
  if (atomic_fetch_add(&g->server_errors, 1) == 0) bl_fail("grpc: bare server: %s", what);
}

static void arm(struct bare *g, int kind) {
  scall_t *c = calloc(1, sizeof *c);
  if (!c) {
    server_error(g, "out of memory");
    return;
  }
  c->g = g;
  c->kind = kind;
  for (int i = 0; i < 3; i++) c->tag[i] = (stag_t){c, i};
  grpc_metadata_array_init(&c->md);
  grpc_call_error e = grpc_server_request_registered_call(
      g->server, g->methods[kind], &c->call, &c->deadline, &c->md, kind == K_UNARY ? &c->req : NULL,
      g->scq, g->scq, &c->tag[T_MAIN]);
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
static size_t land_message(struct bare *g, grpc_byte_buffer *bb) {
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
  struct bare *g = c->g;
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
  struct bare *g = c->g;
  grpc_op ops[6];
  memset(ops, 0, sizeof ops);
  if (t->which == T_MAIN && c->state == ST_CLOSING) {
    call_free(c);
    return;
  }
  if (t->which == T_MAIN) { /* ST_REQUESTED */
    if (!ok) { /* the server is shutting down */
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
  struct bare *g = arg;
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

/* ---- bare gRPC: client ------------------------------------------------------------- */

/* Client tags: the stream's batches, and the unary call's one batch. */
enum { C_SINIT = 1, C_SSEND, C_SRECV, C_SSTATUS, C_UNARY };

/* Server and client. rdev's message limits, and BDP probing off: with it on,
 * the receiver of a loopback stream keeps the sender at ~0.25 GB/s most of
 * the time (0.1..3.5 GB/s from call to call); off, 2.5..3.3 GB/s. */
static const grpc_arg kArgs[] = {
    {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = MAX_MESSAGE}},
    {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = MAX_MESSAGE}},
    {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_BDP_PROBE, {.integer = 0}},
};

static int cq_wait(struct bare *g, int tag) {
  while (g->pending & (1u << tag)) {
    grpc_event ev = grpc_completion_queue_next(
        g->ccq, gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(CALL_DEADLINE_S, GPR_TIMESPAN)),
        NULL);
    if (ev.type != GRPC_OP_COMPLETE) return bl_fail("grpc: no completion within %d s", CALL_DEADLINE_S);
    int t = (int)(intptr_t)ev.tag;
    g->pending &= ~(1u << t);
    g->ok[t] = ev.success;
  }
  return 0;
}

static int batch(struct bare *g, grpc_call *call, const grpc_op *ops, size_t n, int tag) {
  grpc_call_error e = grpc_call_start_batch(call, ops, n, (void *)(intptr_t)tag, NULL);
  if (e != GRPC_CALL_OK) return bl_fail("grpc: start_batch: error %d", (int)e);
  g->pending |= 1u << tag;
  return 0;
}

static gpr_timespec deadline_from_now(void) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(CALL_DEADLINE_S, GPR_TIMESPAN));
}

static void bare_stop(struct bare *g);

/* The server side: listens on 127.0.0.1:0 (*port) and serves on a thread. */
static int bare_server_start(struct bare **out, void *land, size_t land_len, const void *source,
                             size_t source_len, int *port) {
  *out = NULL;
  struct bare *g = calloc(1, sizeof *g);
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
  g->methods[K_STREAM] =
      grpc_server_register_method(g->server, kMethod[K_STREAM], NULL, GRPC_SRM_PAYLOAD_NONE, 0);
  g->methods[K_UNARY] = grpc_server_register_method(g->server, kMethod[K_UNARY], NULL,
                                                    GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  grpc_server_register_completion_queue(g->server, g->scq, NULL);
  grpc_server_credentials *sc = grpc_insecure_server_credentials_create();
  *port = grpc_server_add_http2_port(g->server, "127.0.0.1:0", sc);
  grpc_server_credentials_release(sc);
  if (*port <= 0) {
    grpc_server_destroy(g->server);
    grpc_completion_queue_shutdown(g->scq);
    while (grpc_completion_queue_next(g->scq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
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

/* The client side: a channel to the server at port and the stream. */
static int bare_client_start(struct bare **out, int port) {
  *out = NULL;
  struct bare *g = calloc(1, sizeof *g);
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
    bare_stop(g);
    return -1;
  }
  *out = g;
  return 0;
}

static int stream_send(struct bare *g, grpc_slice sl) {
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
static int stream_recv(struct bare *g, grpc_byte_buffer **bb) {
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

static int send_ctl(struct bare *g, int op, size_t size, long k, size_t msg) {
  ctl_t ctl = {CTL_MAGIC, (uint64_t)op, size, (uint64_t)k, msg};
  return stream_send(g, grpc_slice_from_copied_buffer((const char *)&ctl, sizeof ctl));
}

static int bare_upload(struct bare *g, const void *src, size_t size, long k, size_t msg, double *secs) {
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

static int bare_download(struct bare *g, void *dst, size_t size, long k, size_t msg, double *secs) {
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

static int bare_unary(struct bare *g, double *us) {
  grpc_op ops[6];
  grpc_metadata_array init_md, trail_md;
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_slice details = grpc_empty_slice();
  grpc_byte_buffer *req = grpc_raw_byte_buffer_create(NULL, 0), *resp = NULL;
  grpc_metadata_array_init(&init_md);
  grpc_metadata_array_init(&trail_md);
  double t0 = now_s();
  grpc_call *call = grpc_channel_create_call(g->ch, NULL, GRPC_PROPAGATE_DEFAULTS, g->ccq,
                                             grpc_slice_from_static_string(kMethod[K_UNARY]), NULL,
                                             deadline_from_now(), NULL);
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

/* Stops whichever side g is. */
static void bare_stop(struct bare *g) {
  if (g->stream) { /* half-close, then the server ends the call */
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[1].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[1].data.recv_status_on_client.trailing_metadata = &g->s_trail_md;
    ops[1].data.recv_status_on_client.status = &g->s_status;
    ops[1].data.recv_status_on_client.status_details = &g->s_details;
    if (batch(g, g->stream, ops, 2, C_SSTATUS) == 0 && cq_wait(g, C_SSTATUS) != 0)
      grpc_call_cancel(g->stream, NULL);
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
    while (grpc_completion_queue_next(g->ccq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(g->ccq);
  }
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

/* ---- bare gRPC: the helper processes -------------------------------------------------
 *
 * The bare server and the bare client run in two helper processes forked
 * by bl_grpc_start (before the bench has threads), as rdevd and an rdev
 * client are two processes. In one process gRPC's poller is shared: the
 * client's thread, waiting on its queue, would do the server's socket reads
 * (seen in perf: the bare server thread then only landed the bytes), work
 * that across a network the receiving process must do itself.
 *
 * Both run with glibc malloc told to keep freed memory (mmap threshold
 * 64 MiB, trim threshold 1 GiB): gRPC allocates a fresh buffer for every
 * received 1 MiB message, and glibc's default trimming returns it to the
 * kernel each time, so every message costs page faults and TLB-shootdown
 * IPIs (10x slower on this VM class). The baseline is gRPC at its best on
 * this machine; the bench process itself (the rdev client) keeps glibc's
 * defaults, as a user's program would. Data buffers are MAP_SHARED, so all
 * processes see the same bytes at the same addresses; the client helper
 * times each call itself. */

enum { CMD_UPLOAD = 1, CMD_DOWNLOAD, CMD_UNARY, CMD_STOP };
enum { ROLE_SERVER, ROLE_CLIENT };

typedef struct {
  int op;
  uint64_t ptr, size, k, msg;
} bl_cmd_t;

typedef struct {
  int rc;
  double value; /* the server's start: its port */
  char err[400];
} bl_res_t;

typedef struct {
  pid_t pid;
  int to, from; /* pipes to and from it */
} helper_t;

struct bl_grpc {
  helper_t side[2]; /* [ROLE_SERVER], [ROLE_CLIENT] */
};

static int write_full(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_full(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

static void helper_reply(int fd, int rc, double value) {
  bl_res_t r = {.rc = rc, .value = value};
  if (rc) snprintf(r.err, sizeof r.err, "%.399s", g_err);
  if (write_full(fd, &r, sizeof r)) _exit(3);
}

typedef struct {
  int role, port; /* port: the client's server */
  void *land;
  size_t land_len;
  const void *source;
  size_t source_len;
} helper_args_t;

static void helper_main(int rfd, int wfd, const helper_args_t *a) {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  struct bare *g = NULL;
  int port = 0;
  int rc = a->role == ROLE_SERVER ? bare_server_start(&g, a->land, a->land_len, a->source, a->source_len, &port)
                                  : bare_client_start(&g, a->port);
  helper_reply(wfd, rc, port);
  if (rc) _exit(2);
  bl_cmd_t c;
  while (read_full(rfd, &c, sizeof c) == 0 && c.op != CMD_STOP) {
    double v = 0;
    switch (a->role == ROLE_CLIENT ? c.op : 0) {
      case CMD_UPLOAD:
        rc = bare_upload(g, (const void *)(uintptr_t)c.ptr, c.size, (long)c.k, c.msg, &v);
        break;
      case CMD_DOWNLOAD:
        rc = bare_download(g, (void *)(uintptr_t)c.ptr, c.size, (long)c.k, c.msg, &v);
        break;
      case CMD_UNARY: rc = bare_unary(g, &v); break;
      default: rc = bl_fail("helper: command %d is not for this side", c.op); break;
    }
    helper_reply(wfd, rc, v);
  }
  rc = a->role == ROLE_SERVER && atomic_load(&g->server_errors) ? -1 : 0; /* g_err says why */
  bare_stop(g);
  helper_reply(wfd, rc, 0);
  _exit(0);
}

/* Stops helper h (it answers a STOP, then exits); 0 when it did so cleanly. */
static int helper_stop(helper_t *h) {
  if (h->pid <= 0) return 0;
  bl_cmd_t c = {.op = CMD_STOP};
  bl_res_t r;
  int rc = 0;
  if (write_full(h->to, &c, sizeof c) || read_full(h->from, &r, sizeof r))
    rc = bl_fail("grpc: the helper process (pid %d) did not stop cleanly", (int)h->pid);
  else if (r.rc)
    rc = bl_fail("%s", r.err);
  close(h->to);
  close(h->from);
  int st = 0;
  pid_t w = 0;
  for (int i = 0; i < 1000 && (w = waitpid(h->pid, &st, WNOHANG)) == 0; i++) usleep(10000);
  if (w == 0) {
    kill(h->pid, SIGKILL);
    waitpid(h->pid, &st, 0);
    rc = bl_fail("grpc: the helper process (pid %d) did not exit", (int)h->pid);
  } else if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
    rc = bl_fail("grpc: the helper process ended with status 0x%x", st);
  }
  h->pid = 0;
  return rc;
}

/* Forks a helper for a->role and waits for it to start; *value gets its
 * start reply's value. The child closes its copies of other's pipes. */
static int helper_spawn(helper_t *h, const helper_t *other, const helper_args_t *a, double *value) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC)) return bl_fail("grpc: pipe: %s", strerror(errno));
  if (pipe2(from, O_CLOEXEC)) {
    close(to[0]);
    close(to[1]);
    return bl_fail("grpc: pipe: %s", strerror(errno));
  }
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(to[0]), close(to[1]), close(from[0]), close(from[1]);
    return bl_fail("grpc: fork: %s", strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(to[1]);
    close(from[0]);
    if (other && other->pid > 0) close(other->to), close(other->from);
    helper_main(to[0], from[1], a);
  }
  close(to[0]);
  close(from[1]);
  *h = (helper_t){pid, to[1], from[0]};
  bl_res_t r;
  int dead = read_full(h->from, &r, sizeof r) != 0;
  if (dead || r.rc) {
    bl_fail("grpc: the %s helper process did not start: %s", a->role == ROLE_SERVER ? "server" : "client",
            dead ? "it died" : r.err);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(h->to);
    close(h->from);
    h->pid = 0;
    return -1;
  }
  *value = r.value;
  return 0;
}

int bl_grpc_start(bl_grpc_t **out, void *land, size_t land_len, const void *source, size_t source_len) {
  *out = NULL;
  bl_grpc_t *g = calloc(1, sizeof *g);
  if (!g) return bl_fail("grpc: out of memory");
  helper_args_t a = {ROLE_SERVER, 0, land, land_len, source, source_len};
  double port = 0;
  if (helper_spawn(&g->side[ROLE_SERVER], NULL, &a, &port)) {
    free(g);
    return -1;
  }
  a.role = ROLE_CLIENT;
  a.port = (int)port;
  double unused;
  if (helper_spawn(&g->side[ROLE_CLIENT], &g->side[ROLE_SERVER], &a, &unused)) {
    char why[sizeof g_err];
    snprintf(why, sizeof why, "%s", g_err);
    helper_stop(&g->side[ROLE_SERVER]);
    free(g);
    return bl_fail("%s", why);
  }
  *out = g;
  return 0;
}

static int client_call(bl_grpc_t *g, const bl_cmd_t *c, double *value) {
  helper_t *h = &g->side[ROLE_CLIENT];
  bl_res_t r;
  if (write_full(h->to, c, sizeof *c) || read_full(h->from, &r, sizeof r))
    return bl_fail("grpc: the client helper process (pid %d) is gone", (int)h->pid);
  if (r.rc) return bl_fail("%s", r.err);
  *value = r.value;
  return 0;
}

int bl_grpc_upload(bl_grpc_t *g, const void *src, size_t size, long k, size_t msg, double *secs) {
  bl_cmd_t c = {CMD_UPLOAD, (uintptr_t)src, size, (uint64_t)k, msg};
  return client_call(g, &c, secs);
}

int bl_grpc_download(bl_grpc_t *g, void *dst, size_t size, long k, size_t msg, double *secs) {
  bl_cmd_t c = {CMD_DOWNLOAD, (uintptr_t)dst, size, (uint64_t)k, msg};
  return client_call(g, &c, secs);
}

int bl_grpc_unary(bl_grpc_t *g, double *us) {
  bl_cmd_t c = {.op = CMD_UNARY};
  return client_call(g, &c, us);
}

int bl_grpc_stop(bl_grpc_t *g) {
  if (!g) return 0;
  int rc = helper_stop(&g->side[ROLE_CLIENT]); /* the client first: it half-closes its stream */
  char why[sizeof g_err];
  snprintf(why, sizeof why, "%s", g_err);
  int rs = helper_stop(&g->side[ROLE_SERVER]);
  free(g);
  if (!rc) return rs;
  if (!rs) return bl_fail("%s", why);
  char why_server[sizeof g_err];
  snprintf(why_server, sizeof why_server, "%s", g_err);
  return bl_fail("%s; %s", why, why_server);
}

/* ---- the in-process runtime ---------------------------------------------------------- */

struct bl_rt {
  rdev_rt_t *rt;
  void *dev;
};

static int rt_fail(const char *what, int rc) {
  return bl_fail("runtime: %s: %s (%d %s): %s", what, rdev_strerror(rc), rc, rdev_status_name(rc),
                 rdev_rt_last_error());
}

int bl_rt_open(bl_rt_t **out, size_t max_size) {
  *out = NULL;
  bl_rt_t *r = calloc(1, sizeof *r);
  if (!r) return bl_fail("runtime: out of memory");
  rdev_rt_config_t cfg = {.backend = "sim", .sim_devices = 1, .sim_mem_bytes = max_size + ((size_t)16 << 20)};
  int rc = rdev_rt_open(&cfg, &r->rt);
  if (rc) {
    free(r);
    return rt_fail("open", rc);
  }
  rc = rdev_rt_malloc(r->rt, 0, &r->dev, max_size, RDEV_MEM_MALLOC_HUGE_FIRST);
  if (!rc) rc = rdev_rt_memset(r->rt, r->dev, max_size, 0x33, max_size);
  if (rc) {
    rt_fail("malloc and memset", rc);
    rdev_rt_close(r->rt);
    free(r);
    return -1;
  }
  *out = r;
  return 0;
}

int bl_rt_copy(bl_rt_t *r, int h2d, void *host, size_t size, long k, double *secs) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    int rc = h2d ? rdev_rt_memcpy(r->rt, r->dev, size, host, size, RDEV_MEMCPY_HOST_TO_DEVICE)
                 : rdev_rt_memcpy(r->rt, host, size, r->dev, size, RDEV_MEMCPY_DEVICE_TO_HOST);
    if (rc) return rt_fail(h2d ? "memcpy host to device" : "memcpy device to host", rc);
  }
  *secs = now_s() - t0;
  return 0;
}

void bl_rt_close(bl_rt_t *r) {
  if (!r) return;
  rdev_rt_free(r->rt, r->dev);
  rdev_rt_close(r->rt);
  free(r);
}
