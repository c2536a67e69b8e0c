/*
 * tests/fuzz/fuzz_session.c — libFuzzer harness for rdevd's request
 * handling: sequences of requests run in-process (srv_session_feed, no
 * network) against the sim, by two sessions of one tenant.
 *
 * The input is a small program: each step picks an operation and its
 * fields from the bytes that follow; handles and buffer addresses are
 * named by their index in what the session got back (so the fuzzer can
 * reach real buffers, streams and events: handles are unguessable), or are
 * the other session's, or arbitrary; an address gets an arbitrary offset
 * added (wrapping), so it may land anywhere, B's buffer included. Steps go one per message or several in a batch; replies
 * are destroyed at once or held for a while (a held synchronous Read
 * reply makes later changes to its buffer wait: the pause and resume path).
 *
 * Session B writes a random secret into a buffer of its own before A's
 * program runs. Checks after each step and at the end, besides
 * ASan/UBSan/LSan:
 * - every reply is a valid Reply whose strings are valid UTF-8;
 * - no reply to A carries B's secret, and no request of A's that names B's
 *   stream or an address inside B's buffer succeeds;
 * - once both sessions are closed and their replies destroyed, every
 *   device's free memory and the tenant's memory use are back where they
 *   started, and no session is left.
 */
#include "fuzz.h"
#include <grpc/grpc.h>
#include <grpc/slice.h>
#include <pb_decode.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/wire.h"
#include "srv.h"

#define MAX_STEPS 48
#define MAX_HELD 6
#define MAX_H 32

/* ---- the input as a stream of choices ---- */

typedef struct {
  const uint8_t *p;
  size_t n;
} in_t;

static uint64_t take(in_t *in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) {
    v = v << 8 | (in->n ? *in->p : 0);
    if (in->n) in->p++, in->n--;
  }
  return v;
}

/* ---- sessions and their replies ---- */

typedef struct {
  srv_session_t *s;
  pthread_mutex_t mu; /* replies below */
  grpc_byte_buffer *got[256];
  int ngot;
  uint64_t bufs[MAX_H], streams[MAX_H], events[MAX_H], bins[MAX_H], funcs[MAX_H];
  size_t buf_size[MAX_H];
  int nbufs, nstreams, nevents, nbins, nfuncs;
  grpc_byte_buffer *held[MAX_HELD];
  int nheld;
  /* what each seq asked for, to learn handles from replies */
  pb_size_t asked[1024];
  size_t asked_size[1024];
  uint8_t other[1024]; /* the request named the other session's stream or memory */
  uint64_t next_seq;
} sess_t;

static srv_t srv;
static uint8_t secret[32];
static uint64_t b_buf; /* B's buffer with the secret (its address; 4096 bytes) */
static uint64_t b_stream;

/* Replies seen, by op and outcome (asynchronous requests are answered
 * only when refused), and pauses: printed at exit when RDEV_FUZZ_STATS is
 * set, to see what the corpus reaches. */
static long stat_replies[21][2], stat_pauses;

static void print_stats(void) {
  static const char *names[21] = {"none",
                                  "-",
                                  "malloc",
                                  "free",
                                  "stream_create",
                                  "stream_destroy",
                                  "stream_sync",
                                  "stream_query",
                                  "write",
                                  "read",
                                  "copy",
                                  "memset",
                                  "launch",
                                  "event_create",
                                  "event_destroy",
                                  "event_record",
                                  "stream_wait_event",
                                  "event_sync",
                                  "event_query",
                                  "event_elapsed",
                                  "mem_info"};
  for (int i = 0; i < 21; i++)
    if (stat_replies[i][0] + stat_replies[i][1])
      fprintf(stderr, "%-18s ok %8ld  refused %8ld\n", names[i], stat_replies[i][0], stat_replies[i][1]);
  fprintf(stderr, "messages paused    %ld\n", stat_pauses);
}

static void on_reply(void *user, grpc_byte_buffer *bb) {
  sess_t *c = user;
  pthread_mutex_lock(&c->mu);
  if (c->ngot < (int)(sizeof c->got / sizeof c->got[0]))
    c->got[c->ngot++] = bb;
  else
    grpc_byte_buffer_destroy(bb); /* more than a step can make: not inspected */
  pthread_mutex_unlock(&c->mu);
}

static int utf8_ok(const uint8_t *p, size_t n) {
  char *copy = malloc(n ? n : 1);
  memcpy(copy, p, n);
  int ok = rdev_wire_utf8_fix(copy, n) == 0;
  free(copy);
  return ok;
}

static int contains(const uint8_t *hay, size_t n, const uint8_t *needle, size_t k) {
  for (size_t i = 0; i + k <= n; i++)
    if (hay[i] == needle[0] && !memcmp(hay + i, needle, k)) return 1;
  return 0;
}

/* Checks one reply and learns the handle it gives; hold: keep the buffer
 * (it may pin device memory) instead of destroying it. */
static void inspect(sess_t *c, grpc_byte_buffer *bb, int is_a, int hold) {
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  rdev_wire_bytes_t data = {.max = 2u << 20}, print = {.max = 1u << 20};
  rdev_wire_bytes_decoder(&r.data, &data);
  rdev_wire_bytes_decoder(&r.print, &print);
  if (!rdev_wire_decode(bb, rdev_v1_Reply_fields, &r, NULL)) abort(); /* rdevd sent a malformed reply */
  if (!utf8_ok((const uint8_t *)r.message, strlen(r.message))) abort();
  if (print.data && !utf8_ok(print.data, print.len)) abort();
  if (is_a && data.data && contains(data.data, data.len, secret, sizeof secret)) abort(); /* B's bytes reached A */
  if (r.seq < 1024 && c->other[r.seq] && r.kind == rdev_v1_ReplyKind_FINAL && r.status == RDEV_OK)
    abort(); /* A used B's handle and it worked */
  if (is_a && r.kind == rdev_v1_ReplyKind_FINAL && r.seq < 1024) {
    pb_size_t op = r.seq < c->next_seq ? c->asked[r.seq] : 0;
    stat_replies[op <= 20 ? op : 0][r.status != RDEV_OK]++;
  }
  if (r.status == RDEV_OK && r.kind == rdev_v1_ReplyKind_FINAL && r.seq && r.seq < c->next_seq && r.seq < 1024) {
    switch (c->asked[r.seq]) {
      case rdev_v1_Request_malloc_tag:
        if (c->nbufs < MAX_H) c->buf_size[c->nbufs] = c->asked_size[r.seq], c->bufs[c->nbufs++] = r.addr;
        break;
      case rdev_v1_Request_stream_create_tag:
        if (c->nstreams < MAX_H) c->streams[c->nstreams++] = r.handle;
        break;
      case rdev_v1_Request_event_create_tag:
        if (c->nevents < MAX_H) c->events[c->nevents++] = r.handle;
        break;
      case rdev_v1_Request_binary_load_tag:
        if (c->nbins < MAX_H) c->bins[c->nbins++] = r.handle;
        break;
      case rdev_v1_Request_binary_function_tag:
        if (c->nfuncs < MAX_H) c->funcs[c->nfuncs++] = r.handle;
        break;
    }
  }
  free(data.data);
  free(print.data);
  if (hold && c->nheld < MAX_HELD)
    c->held[c->nheld++] = bb;
  else
    grpc_byte_buffer_destroy(bb);
}

static void drain(sess_t *c, int is_a, int hold) {
  for (;;) {
    pthread_mutex_lock(&c->mu);
    grpc_byte_buffer *bb = c->ngot ? c->got[--c->ngot] : NULL;
    pthread_mutex_unlock(&c->mu);
    if (!bb) return;
    inspect(c, bb, is_a, hold);
  }
}

static void let_go(sess_t *c) {
  for (int i = 0; i < c->nheld; i++) grpc_byte_buffer_destroy(c->held[i]);
  c->nheld = 0;
}

/* Feeds one message; when the session does not take it, lets go of held
 * replies and waits. Returns 0, or -1 when the session stays busy. */
static int feed(sess_t *c, grpc_byte_buffer *bb, int is_a) {
  for (int tries = 0; tries < 2; tries++) {
    int rc = srv_session_feed(c->s, bb);
    stat_pauses += rc == 1;
    if (rc >= 0) return 0;
    drain(c, is_a, 0);
    let_go(c);
    if (srv_session_wait_ready(c->s, 3000) != 0) break;
  }
  grpc_byte_buffer_destroy(bb);
  return -1;
}

static void sess_open(sess_t *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  c->next_seq = 1;
  c->s = srv_session_open_local(&srv, srv.tenants, on_reply, c);
  if (!c->s) abort();
}

static void sess_close(sess_t *c, int is_a) {
  srv_session_close_local(c->s);
  drain(c, is_a, 0);
  let_go(c);
  pthread_mutex_destroy(&c->mu);
}

static grpc_byte_buffer *encode(rdev_v1_Request *q, const uint8_t *payload, size_t len) {
  grpc_slice pl = grpc_slice_from_copied_buffer((const char *)payload, len);
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, q, payload ? &pl : NULL);
  grpc_slice_unref(pl);
  if (!bb) abort();
  return bb;
}

/* ---- the program ---- */

static uint64_t pick(in_t *in, const uint64_t *hs, int n, uint64_t other) {
  uint8_t k = (uint8_t)take(in, 1);
  if (k < 200 && n) return hs[k % n];
  if (k < 230) return other;
  return k < 240 ? 0 : take(in, 8);
}

static uint64_t size_of(in_t *in) {
  uint8_t k = (uint8_t)take(in, 1);
  if (k < 100) return k;
  if (k < 200) return (uint64_t)take(in, 2);
  if (k < 250) return (uint64_t)take(in, 3) & ((2u << 20) - 1);
  return take(in, 8);
}

/* Whether address a lies inside B's buffer. */
static int in_b(uint64_t a) { return a - b_buf < 4096; }

/* A device address: one of A's buffers (or B's, or anything) plus an
 * arbitrary offset, wrapping; mask clears low bits (alignment). */
static uint64_t addr_of(in_t *in, const sess_t *a, uint64_t mask) {
  uint64_t base = pick(in, a->bufs, a->nbufs, b_buf);
  return base + (size_of(in) & ~mask);
}

/* A kernel binary (docs/sim-binary.md) the program loads, or bytes of it changed. */
static const char k_binary[] =
    "rdev-sim-binary 1\n"
    "kernel Write write_i32\n"
    "  arg ptr out reach=blocks*4 writes\n"
    "  arg i32 value\n"
    "kernel Read read_i32\n"
    "  arg ptr in reach=blocks*4\n"
    "kernel Bare write_i32\n";

static const char *const kernels[] = {"write_i32",      "square_f32", "add_f32",        "axpy_f32",
                                      "reduce_sum_f32", "delay_us",   "no_such_kernel", ""};

typedef struct {
  rdev_v1_Request q;
  uint8_t *payload;
  size_t len;
  char kernel[80];
  rdev_v1_Arg args[10];
  rdev_wire_launch_src_t src;
  int other; /* names B's handle in its main field */
} step_t;

/* One request of A's from the input. */
static void make_step(in_t *in, sess_t *a, sess_t *b, step_t *st) {
  memset(st, 0, sizeof *st);
  rdev_v1_Request *q = &st->q;
  *q = (rdev_v1_Request)rdev_v1_Request_init_zero;
  q->seq = a->next_seq++;
  uint8_t op = (uint8_t)take(in, 1) % 27;
  uint64_t s_any = pick(in, a->streams, a->nstreams, b_stream);
  uint64_t stream = take(in, 1) & 1 ? s_any : 0;
  uint64_t addr = addr_of(in, a, 0);
  int other = in_b(addr) || (stream && stream == b_stream); /* for ops on addr, maybe async */
  switch (op) {
    case 0:
      q->which_op = rdev_v1_Request_malloc_tag;
      q->op.malloc.device = (int32_t)(take(in, 1) % 3);
      q->op.malloc.size = size_of(in);
      if (take(in, 1) & 1) { /* placed by the client: A's window (B's buffers lie outside every window) */
        q->op.malloc.addr = rdev_wire_va_window(1, q->op.malloc.device) + (take(in, 3) << (take(in, 1) & 1 ? 6 : 0));
        q->op.malloc.quiet = take(in, 1) & 1;
      }
      if (q->seq < 1024) a->asked_size[q->seq] = (size_t)q->op.malloc.size;
      break;
    case 1: q->which_op = rdev_v1_Request_free_tag, q->op.free.addr = addr, st->other = in_b(addr); break;
    case 2:
      q->which_op = rdev_v1_Request_stream_create_tag, q->op.stream_create.device = (int32_t)(take(in, 1) % 3);
      break;
    case 3:
      q->which_op = rdev_v1_Request_stream_destroy_tag, q->op.stream_destroy.stream = s_any,
      st->other = s_any == b_stream;
      break;
    case 4:
      q->which_op = rdev_v1_Request_stream_sync_tag, q->op.stream_sync.stream = s_any, st->other = s_any == b_stream;
      break;
    case 5:
      q->which_op = rdev_v1_Request_stream_query_tag, q->op.stream_query.stream = s_any, st->other = s_any == b_stream;
      break;
    case 6: {
      q->which_op = rdev_v1_Request_write_tag;
      rdev_v1_Write *w = &q->op.write;
      w->stream = stream, w->addr = addr;
      st->len = (size_t)(size_of(in) % (RDEV_WIRE_MAX_CHUNK + 2));
      w->dest_max = take(in, 1) & 1 ? size_of(in) : st->len;
      w->quiet = take(in, 1) & 1;
      st->other = other;
      st->payload = malloc(st->len ? st->len : 1);
      uint8_t fill = (uint8_t)take(in, 1);
      memset(st->payload, fill, st->len);
      break;
    }
    case 7: {
      q->which_op = rdev_v1_Request_read_tag;
      rdev_v1_Read *r = &q->op.read;
      r->stream = stream, r->addr = addr, r->count = size_of(in);
      r->dest_max = take(in, 1) & 1 ? size_of(in) : r->count;
      st->other = other;
      break;
    }
    case 8: {
      q->which_op = rdev_v1_Request_copy_tag;
      rdev_v1_Copy *cp = &q->op.copy;
      cp->stream = stream, cp->dst = addr_of(in, a, 63), cp->src = addr_of(in, a, take(in, 1) & 1 ? 63 : 0);
      st->other = in_b(cp->dst) || in_b(cp->src) || (stream && stream == b_stream);
      cp->count = size_of(in), cp->dest_max = cp->count;
      break;
    }
    case 9: {
      q->which_op = rdev_v1_Request_memset_tag;
      rdev_v1_Memset *m = &q->op.memset;
      m->stream = stream, m->addr = addr, m->count = size_of(in);
      m->value = (int32_t)take(in, 1), m->dest_max = take(in, 1) & 1 ? size_of(in) : m->count;
      st->other = other;
      break;
    }
    case 10:
    case 11: {
      q->which_op = rdev_v1_Request_launch_tag;
      rdev_v1_Launch *l = &q->op.launch;
      l->stream = s_any;
      st->other = s_any == b_stream;
      uint8_t k = (uint8_t)take(in, 1);
      if (k < 240)
        snprintf(st->kernel, sizeof st->kernel, "%s", kernels[k % 8]);
      else
        for (int i = 0; i < 79; i++) st->kernel[i] = (char)(0x80 | (take(in, 1) & 0x7f)); /* long, not UTF-8 */
      l->blocks = (uint32_t)(take(in, 1) & 1 ? take(in, 1) : take(in, 4));
      int n = (int)(take(in, 1) % 11);
      for (int i = 0; i < n; i++) {
        rdev_v1_Arg *g = &st->args[i];
        switch (take(in, 1) % 4) {
          case 0:
            g->which_v = rdev_v1_Arg_ptr_tag;
            g->v.ptr = addr_of(in, a, 0);
            st->other |= in_b(g->v.ptr);
            break;
          case 1: g->which_v = rdev_v1_Arg_i32_tag, g->v.i32 = (int32_t)take(in, 2); break;
          case 2:
            g->which_v = rdev_v1_Arg_u32_tag, g->v.u32 = (uint32_t)(take(in, 1) & 1 ? take(in, 1) : take(in, 4) % 5000);
            break;
          default: g->which_v = rdev_v1_Arg_f32_tag, g->v.f32 = (float)take(in, 1); break;
        }
      }
      st->src = (rdev_wire_launch_src_t){st->kernel, st->args, n};
      rdev_wire_launch_encoder(l, &st->src);
      break;
    }
    case 12:
      q->which_op = rdev_v1_Request_event_create_tag, q->op.event_create.device = (int32_t)(take(in, 1) % 3);
      break;
    case 13:
      q->which_op = rdev_v1_Request_event_destroy_tag, q->op.event_destroy.event = pick(in, a->events, a->nevents, 0);
      break;
    case 14:
      q->which_op = rdev_v1_Request_event_record_tag;
      q->op.event_record.event = pick(in, a->events, a->nevents, 0), q->op.event_record.stream = s_any;
      st->other = s_any == b_stream;
      break;
    case 15:
      q->which_op = rdev_v1_Request_stream_wait_event_tag;
      q->op.stream_wait_event.event = pick(in, a->events, a->nevents, 0), q->op.stream_wait_event.stream = s_any;
      st->other = s_any == b_stream;
      break;
    case 16:
      q->which_op = rdev_v1_Request_event_sync_tag, q->op.event_sync.event = pick(in, a->events, a->nevents, 0);
      break;
    case 17:
      q->which_op = rdev_v1_Request_event_query_tag, q->op.event_query.event = pick(in, a->events, a->nevents, 0);
      break;
    case 18:
      q->which_op = rdev_v1_Request_event_elapsed_tag;
      q->op.event_elapsed.start = pick(in, a->events, a->nevents, 0);
      q->op.event_elapsed.end = pick(in, a->events, a->nevents, 0);
      break;
    case 19: /* a blocking one holds its stream until the session ends: no HostFuncDone comes */
      q->which_op = rdev_v1_Request_host_func_tag, q->op.host_func.stream = s_any;
      q->op.host_func.block = take(in, 1) & 1;
      st->other = s_any == b_stream;
      break;
    case 20:
      q->which_op = rdev_v1_Request_value_write_tag;
      q->op.value_write = (rdev_v1_ValueWrite){s_any, addr_of(in, a, take(in, 1) & 1 ? 7 : 0), take(in, 8)};
      st->other = s_any == b_stream || in_b(q->op.value_write.addr);
      break;
    case 21: /* an unmet one holds its stream until the session ends, or its timeout */
      q->which_op = rdev_v1_Request_value_wait_tag;
      q->op.value_wait = (rdev_v1_ValueWait){s_any, addr_of(in, a, take(in, 1) & 1 ? 7 : 0), take(in, 1),
                                             (uint32_t)take(in, 1) % 5, (uint32_t)(take(in, 1) % 3)};
      st->other = s_any == b_stream || in_b(q->op.value_wait.addr);
      break;
    case 22: { /* a kernel binary: the valid one, or bytes of it changed */
      q->which_op = rdev_v1_Request_binary_load_tag;
      st->len = sizeof k_binary - 1;
      st->payload = malloc(st->len);
      memcpy(st->payload, k_binary, st->len);
      for (int flips = (int)(take(in, 1) % 4); flips > 0; flips--)
        st->payload[take(in, 2) % st->len] = (uint8_t)take(in, 1);
      break;
    }
    case 23:
      q->which_op = rdev_v1_Request_binary_function_tag;
      q->op.binary_function.binary = pick(in, a->bins, a->nbins, 0);
      q->op.binary_function.by_entry = take(in, 1) & 1;
      q->op.binary_function.entry = take(in, 1) % 4;
      snprintf(q->op.binary_function.name, sizeof q->op.binary_function.name, "%s",
               (const char *[]){"Write", "Read", "Bare", "Nope"}[take(in, 1) % 4]);
      break;
    case 24: { /* a launch from a blob of A's addresses and values */
      q->which_op = rdev_v1_Request_launch_function_tag;
      rdev_v1_LaunchFunction *l = &q->op.launch_function;
      l->stream = s_any, l->function = pick(in, a->funcs, a->nfuncs, 0);
      l->blocks = (uint32_t)(take(in, 1) % 5);
      st->len = (size_t)(take(in, 1) % 25);
      st->payload = malloc(st->len ? st->len : 1);
      uint64_t p0 = addr_of(in, a, 3);
      memset(st->payload, 0, st->len);
      memcpy(st->payload, &p0, st->len < 8 ? st->len : 8);
      if (st->len >= 12) st->payload[8] = (uint8_t)take(in, 1);
      st->other = s_any == b_stream || in_b(p0);
      break;
    }
    case 25:
      q->which_op = rdev_v1_Request_binary_unload_tag, q->op.binary_unload.binary = pick(in, a->bins, a->nbins, 0);
      break;
    default: q->which_op = rdev_v1_Request_mem_info_tag, q->op.mem_info.device = (int32_t)(take(in, 1) % 3); break;
  }
  if (q->seq < 1024) a->asked[q->seq] = q->which_op, a->other[q->seq] = (uint8_t)st->other;
}

static void device_state(size_t *free_bytes, size_t *used) {
  int n = 0;
  rdev_rt_device_count(srv.rt, &n);
  for (int d = 0; d < n; d++) {
    size_t t;
    rdev_rt_mem_info(srv.rt, d, &free_bytes[d], &t);
    pthread_mutex_lock(&srv.tenants->mu);
    used[d] = srv.tenants->mem_used[d];
    pthread_mutex_unlock(&srv.tenants->mu);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  grpc_init();
  srv_log_level = -1; /* quiet */
  srv_config_defaults(&srv.cfg);
  srv.cfg.sim_devices = 2;
  srv.cfg.sim_mem_bytes = (size_t)32 << 20;
  srv.cfg.max_inflight = (size_t)4 << 20;
  if (srv_open(&srv) != 0) abort();
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(secret, 1, sizeof secret, f) != sizeof secret) abort();
  fclose(f);
  if (getenv("RDEV_FUZZ_STATS")) atexit(print_stats);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t free0[2], used0[2], free1[2], used1[2];
  device_state(free0, used0);
  static sess_t a, b;
  sess_open(&a);
  sess_open(&b);
  /* B: a stream and a buffer holding the secret */
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.seq = b.next_seq++;
  b.asked[q.seq] = q.which_op = rdev_v1_Request_malloc_tag;
  q.op.malloc.size = 4096;
  if (feed(&b, encode(&q, NULL, 0), 0)) abort();
  q = (rdev_v1_Request)rdev_v1_Request_init_zero;
  q.seq = b.next_seq++;
  b.asked[q.seq] = q.which_op = rdev_v1_Request_stream_create_tag;
  if (feed(&b, encode(&q, NULL, 0), 0)) abort();
  drain(&b, 0, 0);
  if (b.nbufs != 1 || b.nstreams != 1) abort();
  b_buf = b.bufs[0];
  b_stream = b.streams[0];
  uint8_t page[4096];
  for (size_t i = 0; i < sizeof page; i++) page[i] = secret[i % sizeof secret];
  q = (rdev_v1_Request)rdev_v1_Request_init_zero;
  q.seq = b.next_seq++;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write.addr = b_buf;
  q.op.write.dest_max = sizeof page;
  if (feed(&b, encode(&q, page, sizeof page), 0)) abort();
  drain(&b, 0, 0);

  in_t in = {data, size};
  for (int stepno = 0; stepno < MAX_STEPS && in.n > 0;) {
    uint8_t how = (uint8_t)take(&in, 1);
    int nreq = how & 0x80 ? 1 + (how & 7) : 1; /* a batch of up to 8 */
    static step_t steps[8];
    grpc_byte_buffer *msgs[8];
    for (int i = 0; i < nreq; i++) {
      make_step(&in, &a, &b, &steps[i]);
      msgs[i] = encode(&steps[i].q, steps[i].payload, steps[i].payload ? steps[i].len : 0);
    }
    grpc_byte_buffer *bb = nreq == 1 ? msgs[0] : rdev_wire_batch(msgs, (size_t)nreq);
    if (nreq > 1)
      for (int i = 0; i < nreq; i++) grpc_byte_buffer_destroy(msgs[i]);
    int busy = feed(&a, bb, 1);
    for (int i = 0; i < nreq; i++) free(steps[i].payload);
    drain(&a, 1, how & 0x40);
    if (how & 0x20) let_go(&a);
    stepno += nreq;
    if (busy) break;
  }
  sess_close(&a, 1);
  sess_close(&b, 0);
  device_state(free1, used1);
  for (int d = 0; d < 2; d++)
    if (free1[d] != free0[d] || used1[d] != used0[d]) abort(); /* device memory leaked or double-freed */
  pthread_mutex_lock(&srv.mu);
  int left = srv.nsessions;
  pthread_mutex_unlock(&srv.mu);
  if (left) abort();
  return 0;
}
