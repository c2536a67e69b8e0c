/*
 * client/lib/client.h — private to the client library: the session, stream
 * and event objects, the pending-reply table, and the helpers the library's
 * files share (session.c: the call, send queue, polling and waiters;
 * memory.c: device addresses and copies; stream.c: streams, events, kernels;
 * info.c: unary calls and devices).
 *
 * Locking: one mutex per session (s->mu) guards the send queue, the pending
 * table, the stream/event lists, sticky stream errors, the address map and
 * the polling state (one thread at a time polls the call's queue).
 * gRPC is never called back into our code while s->mu is held, except the
 * payload-release callback, which takes only its own mutex (payload_track_t).
 */
#ifndef RDEV_CLIENT_INTERNAL_H
#define RDEV_CLIENT_INTERNAL_H

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdev/rdev.h"
#include "rdev/wire.h"

#define CL_MSG_MAX 256
#define CL_PENDING_BUCKETS 1024 /* power of two */

/* A thread blocked in a synchronous call. Heap-allocated: a waiter that
 * timed out is abandoned and freed by whoever handles its late reply. */
typedef struct cl_waiter {
  pthread_cond_t cv;
  int remaining;         /* replies still expected */
  int status;            /* first error among the replies */
  char msg[CL_MSG_MAX];
  uint64_t handle, value, value2;
  float elapsed_ms;
  bool abandoned;        /* the caller gave up (timeout); the reply frees it */
  bool blocked;          /* counted in s->nblocked */
  uint64_t sync_stream;  /* StreamSync: server stream handle (sticky on late error) */
} cl_waiter_t;

/* One request awaiting its FINAL reply, keyed by seq. */
typedef struct cl_pending {
  uint64_t seq;
  struct cl_pending *next;
  cl_waiter_t *w;        /* NULL: asynchronous Read */
  uint8_t *dst;          /* Read: where the payload goes */
  size_t count;          /* Read: payload length expected */
  size_t got;            /* Read: payload length received */
  uint64_t stream;       /* asynchronous Read: server stream handle */
  bool quiet;            /* quiet Write: a reply comes only on error, and
                          * does not count toward w->remaining */
} cl_pending_t;

/* A request waiting for the one send gRPC allows in flight. Those without
 * payload go out together, as one batch message (rdev_wire_batch). */
typedef struct cl_send {
  grpc_byte_buffer *bb;
  size_t len;            /* encoded length */
  size_t xfer;           /* Read bytes it asks for (batch limit) */
  bool batchable;        /* no payload */
  struct cl_send *next;
} cl_send_t;

struct rdev_stream {
  rdev_session_t *s;
  uint64_t handle;
  int device;
  int sticky;            /* first async error since the last synchronize */
  char sticky_msg[CL_MSG_MAX];
  struct rdev_stream *prev, *next;
};

struct rdev_event {
  rdev_session_t *s;
  uint64_t handle;
  int device;
  struct rdev_event *prev, *next;
};

struct rdev_session {
  grpc_channel *channel;
  grpc_completion_queue *cq;
  grpc_call *call;
  pthread_t rx_thread;
  bool rx_started;

  pthread_mutex_t mu;
  pthread_cond_t dead_cv;          /* signalled when the call ended */

  /* call state (the polling thread, under mu where shared) */
  size_t batch_xfer; /* the server's batch limit on Read bytes (set at open) */
  grpc_metadata_array init_md, trailing_md;
  grpc_status_code status;
  grpc_slice status_details;
  grpc_byte_buffer *recv_bb;
  bool recv_posted, recv_ended;    /* a RECV_MESSAGE is out; the call sends no more */
  bool dead;
  char dead_msg[CL_MSG_MAX];

  /* send queue: one SEND_MESSAGE in flight at a time; what queued behind
   * it goes out in batches */
  cl_send_t *sq_head, *sq_tail;
  grpc_byte_buffer *sending;
  bool close_requested, close_sent;

  /* polling (session.c): one thread at a time polls the call's queue */
  int poller;                      /* who: POLL_NONE, _RX or _CALLER */
  int nblocked;                    /* callers in cl_wait still expecting replies */
  int nreleasing;                  /* callers waiting for gRPC to let go of their memory */
  bool completed;                  /* a reply completed some caller's wait */
  bool rx_idle;                    /* the receiver waits on rx_cv */
  int64_t park_until;              /* the receiver parks till then (CLOCK_MONOTONIC ns) */
  pthread_cond_t rx_cv;

  cl_pending_t *pending[CL_PENDING_BUCKETS];
  size_t npending;
  size_t nasync;                   /* of which without a waiter: async Reads */
  atomic_uint_fast64_t next_seq;

  rdev_stream_t *streams;
  rdev_event_t *events;
  void *addr_map;                  /* tsearch root of cl_alloc_t */

  atomic_int device;
  atomic_int device_count;         /* -1 until the first ListDevices */

  rdev_print_fn print_fn;
  void *print_user;

  grpc_metadata auth_md;           /* authorization: Bearer <token>, sent on every call */
  size_t nauth_md;                 /* 0 without a token */
};

/* ---- credentials (auth.c) ---- */
/* Sets up s's token metadata and *creds (plaintext or TLS) from opts and
 * the environment. */
int cl_auth_setup(rdev_session_t *s, const rdev_options_t *opts, grpc_channel_credentials **creds);

/* ---- errors (session.c) ---- */
int cl_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the thread's last error to msg (server detail) and returns status. */
int cl_error_msg(int status, const char *msg);

/* ---- requests (session.c) ---- */

/* Tracks user memory lent to gRPC as zero-copy payload slices: a
 * synchronous Write returns only once gRPC let go of every slice, so the
 * caller may reuse its buffer. Refcounted (the owner plus one per slice):
 * when the session died, gRPC may keep a slice until the call is destroyed
 * (it no longer reads it), and the owner stops waiting. */
typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int refs;
} cl_payload_track_t;

cl_payload_track_t *cl_track_new(void);
/* Waits until gRPC released every slice of t or the session ended, then
 * drops the owner's reference. */
void cl_track_release_wait(rdev_session_t *s, cl_payload_track_t *t);
/* A slice over len bytes at p, not copied; t (may be NULL) counts it. */
grpc_slice cl_payload_slice(const void *p, size_t len, cl_payload_track_t *t);

/* Reserves n consecutive request seqs; returns the first. */
uint64_t cl_seq_reserve(rdev_session_t *s, uint64_t n);
/* Forgets the pending entries of seqs [first, first+n) (quiet Writes known
 * to be done): no reply will come for them. */
void cl_pending_forget(rdev_session_t *s, uint64_t first, uint64_t n);

cl_waiter_t *cl_waiter_new(void);
void cl_waiter_free(cl_waiter_t *w);

/* Encodes req with an optional payload and queues it. req->seq is assigned
 * here unless the caller reserved one (nonzero, from cl_seq_reserve).
 * w != NULL: the reply completes w (w->remaining is incremented), except for
 * a quiet Write, whose reply (an error) is only noted in w;
 * dst != NULL: the reply's payload (count bytes) is written to dst;
 * async_stream != 0 with w == NULL and dst: an asynchronous Read.
 * Returns RDEV_OK or an error (session dead, encode failure): then nothing
 * was registered. */
int cl_submit(rdev_session_t *s, rdev_v1_Request *req, const grpc_slice *payload, cl_waiter_t *w,
              void *dst, size_t count, uint64_t async_stream);

/* Waits for w; timeout_ms < 0 = forever. While no other thread polls the
 * call, the caller polls it itself and handles whatever comes (any thread's
 * replies, kernel print output). Returns RDEV_OK when all replies came
 * (then the caller frees w), or `timeout_status` after abandoning w. */
int cl_wait(rdev_session_t *s, cl_waiter_t *w, int32_t timeout_ms, int timeout_status);

/* What a FINAL reply carried besides its status. */
typedef struct {
  uint64_t handle, value, value2;
  float elapsed_ms;
} cl_result_t;

/* One synchronous request: submit, wait forever, fill *res (may be NULL) and
 * return the reply status (setting the thread's last error on failure). */
int cl_call(rdev_session_t *s, rdev_v1_Request *req, cl_result_t *res);

/* Result of a completed waiter as a status, setting the thread's last error. */
int cl_waiter_result(rdev_session_t *s, cl_waiter_t *w);

/* Under s->mu: records err as the sticky error of the stream with that
 * server handle (first error wins). */
void cl_stream_set_sticky_locked(rdev_session_t *s, uint64_t handle, int status, const char *msg);

/* Maps a gRPC status that ended a call to an rdev status. */
int cl_grpc_status(grpc_status_code code);

/* ---- memory (memory.c) ---- */

typedef struct {
  uint64_t base, size;   /* client address range */
  uint64_t handle;       /* server buffer handle */
  int device;
} cl_alloc_t;

/* Resolves [p, p+len) (len >= 1 treated as at least 1) to its allocation.
 * Returns false when p is not inside an allocation of s. When true and
 * len runs past the end, *fits is false. */
bool cl_resolve(rdev_session_t *s, const void *p, size_t len, uint64_t *handle, uint64_t *offset,
                bool *fits);
void cl_addr_map_destroy(rdev_session_t *s);

/* ---- streams and events (stream.c) ---- */
void cl_free_streams_events(rdev_session_t *s);

#endif
