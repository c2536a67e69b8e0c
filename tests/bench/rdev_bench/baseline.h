/*
 * tests/bench/rdev_bench/baseline.h — the baselines rdev is compared with:
 * what the same bytes cost without rdev (raw TCP: baseline_tcp.c; bare gRPC
 * C core: baseline_grpc*.c; the in-process runtime: baseline_rt.c, and its
 * operators and kernel for the operators phase: baseline_rt_ops.c). The
 * interface exposes no gRPC or runtime types, so the rdev measurements
 * (phase_*.c) stay on the public API, rdev/rdev.h.
 *
 * Baseline functions return 0, or -1 with a reason in bl_error().
 */
#ifndef RDEV_BENCH_BASELINE_H
#define RDEV_BENCH_BASELINE_H

#include <stddef.h>

#include "oper.h"

/* Reason of the last baseline failure (any thread); at most BL_ERROR_MAX - 1 chars. */
#define BL_ERROR_MAX 512
const char *bl_error(void);
/* For the baseline files: sets the reason (printf format) and returns -1. */
int bl_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- raw TCP on loopback (baseline_tcp.c) ------------------------------------- */

typedef struct bl_tcp bl_tcp_t;

/* Connects a socket pair over 127.0.0.1 (listen on port 0, connect, accept). */
int bl_tcp_open(bl_tcp_t **out);
/* One sample: a sender thread writes src[0..size) k times in writes of at most
 * wsize bytes; a receiver thread reads them into dst[0..size) (over and over);
 * *secs from starting the threads to the receiver holding all k*size bytes. */
int bl_tcp_move(bl_tcp_t *t, const void *src, void *dst, size_t size, long k, size_t wsize, double *secs);
void bl_tcp_close(bl_tcp_t *t);

/* ---- bare gRPC C core (baseline_grpc.c) ----------------------------------------- */

typedef struct bl_grpc bl_grpc_t;

/* Forks two helper processes: one runs a gRPC server on 127.0.0.1:0 (one
 * completion-queue thread, hand-registered methods that do no device work),
 * the other a client channel to it, where each call below is run and timed.
 * Call it before the process has threads. land and source must be
 * MAP_SHARED memory mapped before the call (the helpers see them at the same
 * addresses), as must every src/dst passed below. Upload lands received
 * bytes in land[0..land_len) from offset 0; download sends from
 * source[0..source_len) (zero-copy slices). */
int bl_grpc_start(bl_grpc_t **out, void *land, size_t land_len, const void *source, size_t source_len);
/* Client-streaming call: k*size bytes of src[0..size) as messages of at most
 * msg bytes (zero-copy slices); the server copies each into land. *secs covers
 * the whole call, status included. Checks the server got every byte. */
int bl_grpc_upload(bl_grpc_t *g, const void *src, size_t size, long k, size_t msg, double *secs);
/* Server-streaming call: the server sends source[0..size) k times as messages
 * of at most msg bytes; the client copies each into dst[0..size). */
int bl_grpc_download(bl_grpc_t *g, void *dst, size_t size, long k, size_t msg, double *secs);
/* One unary call with empty request and response; *us its round trip:
 * from the client helper process; or, _here, from the calling thread, on
 * a channel of this process made at the first call (the rdev calls it is
 * paired with run there: the same process, thread and CPU placement). */
int bl_grpc_unary(bl_grpc_t *g, double *us);
int bl_grpc_unary_here(bl_grpc_t *g, double *us);
/* Stops the helpers; 0 when both exited cleanly and the server saw no error. */
int bl_grpc_stop(bl_grpc_t *g);

/* ---- the in-process runtime, sim backend, no network (baseline_rt.c) ------------- */

typedef struct bl_rt bl_rt_t;

/* Opens a sim runtime (1 device) with one device buffer of max_size bytes,
 * every page touched. */
int bl_rt_open(bl_rt_t **out, size_t max_size);
/* k x rdev_rt_memcpy of size bytes, host_to_device (1) or device_to_host (0). */
int bl_rt_copy(bl_rt_t *r, int h2d, void *host, size_t size, long k, double *secs);
void bl_rt_close(bl_rt_t *r);

/* ---- operators and a kernel on the in-process runtime (baseline_rt_ops.c) -------- */

typedef struct bl_rt_ops bl_rt_ops_t;

/* Opens a sim runtime of its own (1 device, an arena just large enough)
 * with one stream and the device buffers of shape s's problems (oper.h):
 * Add's three vectors and Matmul's three matrices, the inputs uploaded. */
int bl_rt_ops_open(bl_rt_ops_t **out, const oper_shape_t *s);
/* 1 when the runtime runs problem p (OPER_ADD, OPER_MATMUL) as an operator
 * (kernel 0) or, Add only, as the built-in kernel add_f32 (kernel 1); 0
 * with the reason in note when it does not. */
int bl_rt_ops_offered(bl_rt_ops_t *r, int p, int kernel, char *note, size_t note_len);
/* One sample: k x (queue + rdev_rt_stream_synchronize). The operator:
 * rdev_op_decode of the call's blob (the runtime takes one allocation
 * over, as rdevd hands it the calls it decoded) + rdev_rt_op_launch; the
 * kernel: rdev_rt_launch of add_f32. */
int bl_rt_ops_run(bl_rt_ops_t *r, int p, int kernel, long k, double *secs);
/* Sets the output to NaN, runs it once, reads it back and checks it (oper_check). */
int bl_rt_ops_verify(bl_rt_ops_t *r, int p, int kernel);
void bl_rt_ops_close(bl_rt_ops_t *r);

#endif
