/*
 * server/session/zerocopy.h — Read replies that show device memory itself instead
 * of a staged copy, where the backend's device memory is host-mapped (the
 * sim with its host view; docs/performance.md has the measurement that
 * keeps it). Nothing of the protocol depends on it: a Read the device
 * cannot show, and every Read on a backend without a host view, takes the
 * staged path, and then nothing here is used but the bookkeeping's empty
 * start and end.
 *
 * What a shown reply needs, and what this file keeps:
 * - its slice pins the buffer's memory record (srv_mem_t) until gRPC lets
 *   go of it, so a buffer the client frees meanwhile goes back only after;
 * - an async Read is sent when its stream reaches it, and work queued on
 *   the stream after it first waits until gRPC let go of those replies
 *   (srv_zc_fence), so that what they show cannot change under them. Only
 *   that stream waits, on its own worker, in a host callback: it holds no
 *   execution slot, and no other session's work waits for it;
 * - a synchronous Read's reply shows device memory too: a later request of
 *   the session that may change a buffer such a reply shows waits until
 *   gRPC let go of the session's synchronous Read replies (srv_zc_shown,
 *   srv_zc_pause): its message is handed to the server's resumer thread,
 *   so that no completion-queue thread ever waits.
 * A session's end (srv_zc_session_closing) lets every fence and pause go.
 */
#ifndef RDEV_SRV_ZEROCOPY_H
#define RDEV_SRV_ZEROCOPY_H

#include "buffers.h"

typedef struct srv_zc_session srv_zc_session_t; /* a session's shown replies; may outlive the session */
typedef struct srv_views srv_views_t;           /* a stream's async shown replies */
typedef struct srv_zc_read srv_zc_read_t;       /* an async Read waiting for its stream */

/* A session's part; NULL when out of memory. closing: the session ends,
 * fences and a pause let go (any thread). free: the session is gone; the
 * part goes with the last slice gRPC holds (or now). */
srv_zc_session_t *srv_zc_session_new(srv_zc_t *zc);
void srv_zc_session_closing(srv_zc_session_t *z);
/* What a fence or a pause calls before it waits for shown replies: fn(arg)
 * makes the holders that wait for the client, not for a send, let go
 * (bulk.c's kept frames). Cleared by srv_zc_session_closing; fn runs
 * with no lock of z held. */
void srv_zc_session_unpin_fn(srv_zc_session_t *z, void (*fn)(void *arg), void *arg);
/* Whether a fence or a pause of z waits for shown replies to be let go
 * now (then a holder that would wait for the client lets go at once). */
int srv_zc_waiting(srv_zc_session_t *z);
void srv_zc_session_free(srv_zc_session_t *z);

/* A synchronous Read's reply over n bytes of mem shown at view: 0 with
 * *out (a slice the caller owns a reference to), -1 when out of memory
 * (then stage it). */
int srv_zc_read(srv_zc_session_t *z, srv_mem_t *mem, const void *view, size_t n, grpc_slice *out);

/* An async Read of n bytes of mem shown at view, to be sent when its
 * stream reaches it; *views is the stream's record, made here on first
 * use. NULL when out of memory (then stage it). The caller queues a host
 * callback on the stream that ends it with srv_zc_read_slice (the stream
 * reached it: the reply's slice) or srv_zc_read_drop (cancelled, or the
 * callback could not be queued). */
srv_zc_read_t *srv_zc_read_async(srv_zc_session_t *z, srv_views_t **views, srv_mem_t *mem, const void *view, size_t n);
grpc_slice srv_zc_read_slice(srv_zc_read_t *r);
void srv_zc_read_drop(srv_zc_read_t *r);

/* Before work is queued on st, whose record is v (NULL: none yet): a fence
 * on st if async shown Reads were queued since the last one. Returns a
 * runtime status. */
int srv_zc_fence(srv_views_t *v, rdev_rt_stream_t *st);
/* Whether nothing of st's record v (NULL: none) is shown or unfenced: work
 * done now, outside the stream, may change what its Reads showed. req_mu
 * held (unfenced is request handling's). */
int srv_zc_views_quiet(srv_views_t *v);
/* The stream is gone (destroyed or released): drops its record (NULL ok). */
void srv_zc_views_drop(srv_views_t *v);

/* Whether gRPC still holds any synchronous Read reply of the session
 * (a cheap test before srv_zc_shown). */
int srv_zc_showing(srv_zc_session_t *z);
/* Whether a synchronous Read reply gRPC still holds shows mem. */
int srv_zc_shown(srv_zc_session_t *z, const srv_mem_t *mem);
/* Pauses the session until gRPC let go of its synchronous Read replies
 * (or it is closing): then resume(arg) runs on the resumer thread. 0 when
 * paused; -1 when no resumer thread can be started. */
int srv_zc_pause(srv_zc_session_t *z, void (*resume)(void *arg), void *arg);

#endif
