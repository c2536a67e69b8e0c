/*
 * tests/bench/rdev_bench/baseline_grpc.h — the inside of the bare-gRPC
 * baseline, shared by its three files: the protocol both sides speak, the
 * channel arguments both use, the server side (baseline_grpc_server.c), the
 * client side (baseline_grpc_client.c); baseline_grpc.c runs each in a
 * helper process behind baseline.h's bl_grpc_* interface.
 *
 * Two methods, both hand-registered, no protobuf (messages are raw bytes):
 *  /rdev.bench.Bare/Stream  one long-lived bidi call, like an rdev session.
 *      The client sends 32-byte control messages {magic, op, size, k, msg}:
 *      UP: the next size*k bytes (messages of at most msg bytes) are landed
 *      in the server's landing buffer from offset 0, then the server sends
 *      an 8-byte ack (bytes landed); DOWN: the server sends source[0..size)
 *      k times as messages of at most msg bytes.
 *  /rdev.bench.Bare/Unary   empty request, empty reply.
 *
 * It is gRPC at its best here: rdev's message limits, BDP probing off, glibc
 * malloc keeping freed memory (baseline_grpc.c), the sending side
 * referencing its memory (zero-copy slices), the receiving side copying each
 * message into a destination buffer, as recv() does for TCP and as rdev must.
 * Functions return 0, or -1 with the reason in bl_error().
 */
#ifndef RDEV_BENCH_BASELINE_GRPC_H
#define RDEV_BENCH_BASELINE_GRPC_H

#include <grpc/grpc.h>
#include <stddef.h>
#include <stdint.h>

enum { K_STREAM, K_UNARY, NKINDS };
static const char *const kMethod[NKINDS] = {"/rdev.bench.Bare/Stream", "/rdev.bench.Bare/Unary"};
#define MAX_MESSAGE (64 << 20) /* a limit above any chunk size rdev uses */
#define CALL_DEADLINE_S 120
#define CTL_MAGIC 0x6172656263746c31ull /* "1ltcbera" */
enum { CTL_UP = 1, CTL_DOWN = 2 };

typedef struct {
  uint64_t magic, op, size, k, msg;
} ctl_t;

/* Server and client. rdev's message limits, and BDP probing off: with it on,
 * the receiver of a loopback stream keeps the sender at ~0.25 GB/s most of
 * the time (0.1..3.5 GB/s from call to call); off, 2.5..3.3 GB/s. */
static const grpc_arg kArgs[] = {
    {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = MAX_MESSAGE}},
    {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = MAX_MESSAGE}},
    {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_BDP_PROBE, {.integer = 0}},
};

static inline void noop_destroy(void *p) { (void)p; }
static inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* ---- the server (baseline_grpc_server.c) ---------------------------------------- */

typedef struct bare_server bare_server_t;

/* Listens on 127.0.0.1:0 (*port) and serves on a thread of its own (one
 * completion queue). Uploads land in land[0..land_len); downloads send from
 * source[0..source_len). */
int bare_server_start(bare_server_t **out, void *land, size_t land_len, const void *source, size_t source_len,
                      int *port);
/* How many errors the server saw (the first is in bl_error()). */
int bare_server_errors(bare_server_t *g);
/* Shuts it down (cancelling calls) and frees it. */
void bare_server_stop(bare_server_t *g);

/* ---- the client (baseline_grpc_client.c) ------------------------------------------ */

typedef struct bare_client bare_client_t;

/* A channel to 127.0.0.1:port and the long-lived stream on it. */
int bare_client_start(bare_client_t **out, int port);
/* As bl_grpc_upload, bl_grpc_download and bl_grpc_unary (baseline.h). */
int bare_upload(bare_client_t *g, const void *src, size_t size, long k, size_t msg, double *secs);
int bare_download(bare_client_t *g, void *dst, size_t size, long k, size_t msg, double *secs);
int bare_unary(bare_client_t *g, double *us);
/* Half-closes the stream, waits for its status, closes the channel, frees g. */
void bare_client_stop(bare_client_t *g);

#endif
