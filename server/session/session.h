/*
 * server/session/session.h — what the files of a session share (private to
 * them; the rest of rdevd sees the session room through srv.h):
 * its state, the request context, and each file's functions for the
 * others. From the bottom up: session.c the session object and its
 * references; flow.c the call's send queue, receives and backpressure;
 * request.c the request context (lookups, checks, callbacks that answer
 * later); bulk.c the bulk connection (attaching, replacing, what the
 * client sends on it), bulk_frames.c the frames of Read data rdevd sends
 * on it, and regions.c its registered host memory;
 * ops_mem.c, ops_stream.c, ops_kernel.c and ops_host.c the handlers;
 * dispatch.c a message's requests; release.c a session's end; call.c the
 * gRPC call's events and local.c in-process sessions on top. buffers.c and
 * zerocopy.c lie below them all.
 *
 * Lifecycle. A session holds one reference for its RECV_CLOSE_ON_SERVER
 * batch (which completes last, on a normal end or a cancel) and one for each
 * outstanding batch and each runtime callback that may still reply. One
 * RECV_MESSAGE is outstanding at a time, so a session's requests are handled
 * in order, one after another; after a small request the next one is posted
 * late (see DEFER_RECV_BELOW), the receive's reference kept meanwhile.
 * Replies go through a FIFO send queue with at most one SEND_MESSAGE
 * outstanding (gRPC's rule). When the client half-closes, or the call is
 * cancelled (client crash, network loss, deadline, server drain),
 * everything the session made is released: streams are force-destroyed
 * (queued work discarded, their callbacks run with RDEV_CANCELLED), events
 * destroyed, buffers freed. Except for a resumable session (its client
 * asked for it) whose call broke: its messages ended without the client's
 * bye, or the call was cut. It is detached instead (call.c): it keeps
 * everything, its streams run on, its replies wait, and a new call may
 * take it over (srv_session_resume) within the resume window; the reaper
 * (call.c) releases it once the window passed. Its replies are
 * numbered and kept until the client acknowledges them (flow.c), and its
 * messages counted, so that the new call starts where the old one broke.
 * A call is replaced only once none of its batches is outstanding
 * (call_ops: each handler lets go of it last).
 *
 * Backpressure. `inflight` counts bytes the session holds on the server:
 * async Write payloads until the device copied them, Read staging and
 * every queued reply until gRPC sent it. While it is at or over
 * cfg.max_inflight the session stops reading requests; gRPC flow control
 * then stops the client. So neither a client that sends without reading nor
 * a slow reader can grow the server's memory past about max_inflight plus
 * one message per session (a batch may ask for RDEV_WIRE_MAX_BATCH_XFER).
 * Likewise a session whose device stream has half its queue depth of tasks
 * waiting stops being read until the stream worked that off, so a
 * completion-queue thread never blocks on a full stream. A client that
 * stops reading replies stalls only itself: its staged Reads were staged
 * when their requests were read, so its streams run to the end and hold
 * nothing another session needs.
 *
 * Device work never blocks a completion-queue thread on the device: stream
 * and event synchronization, stream destruction and async reads complete
 * from host callbacks queued on the device streams, which send the reply.
 * (A stream synchronize first watches a busy stream for up to
 * SYNC_WATCH_NS, so that a small kernel's synchronize is answered at once.)
 *
 * Reads. A Read's data leaves through a runtime staging buffer
 * (rdev_rt_staging_get), copied by the device, for every backend; where
 * the device shows its memory to the host, zerocopy.h sends it from device
 * memory itself instead.
 */
#ifndef RDEV_SRV_SESSION_H
#define RDEV_SRV_SESSION_H

#include "buffers.h"
#include "zerocopy.h"

typedef struct reply_node {
  struct reply_node *next;
  grpc_byte_buffer *bb;
  size_t bytes;
  uint64_t num; /* the session's reply number (resume: the client acknowledges by it) */
} reply_node_t;

typedef struct srv_gate srv_gate_t; /* a host function of the session (ops_host.c) */

typedef struct dead_stream { /* destroyed by the client, waiting for its queued work */
  struct dead_stream *next;
  rdev_rt_stream_t *st;
} dead_stream_t;

/* A quiet creation under a client's handle that the server refused (a
 * binary's load, a function's lookup), or a quiet Malloc at a client's
 * address: kept so that what names the handle, or an address of the
 * allocation, later fails with the refusal's own code and words. The
 * latest SRV_REFUSED_MAX are kept; an older one reads as an unknown handle
 * or address. */
#define SRV_REFUSED_MAX 64
typedef struct {
  uint64_t h;    /* 0: free */
  uint64_t size; /* a placement: the bytes from address h; 0: a handle */
  int code;
  char msg[256]; /* as Reply.message */
} srv_refused_t;

/* Where handling of one received message stands: a batch may hold at most
 * RDEV_WIRE_MAX_BATCH requests, and the message move at most
 * RDEV_WIRE_MAX_BATCH_XFER bytes of Read and Write data in all, which
 * bounds what one message may add to the session's inflight bytes
 * (backpressure acts between messages). A message whose handling paused
 * (srv_zc_pause) resumes past the requests it handled (walk.skip). */
typedef struct {
  srv_session_t *s;
  int count;           /* batch requests run so far (the limits) */
  size_t xfer;         /* the Read and Write bytes of the requests run so far */
  uint64_t wait_frame; /* the walk stopped for this bulk Write's frame (0: for no frame)... */
  uint32_t wait_conn;  /* ...to come on this connection */
  rdev_wire_walk_t walk;
} batch_t;

struct srv_session {
  srv_t *srv;
  grpc_call *call;
  uint64_t id;
  char key[RDEV_WIRE_SESSION_KEY_LEN + 1]; /* secret to its client: names it in HostFuncDone calls */
  srv_tenant_t *tenant;                    /* who it is: quotas, devices */
  srv_grant_t grant;                       /* what its credential grants: devices, a job token's expiry */
  char *peer;
  gpr_timespec deadline; /* the call's */
  const char *end_why;   /* why the server ends it (tenant removed, drain): mu */
  size_t buffers_freed;  /* by its release: mu */
  /* Its caps: the tenant's in tenants mode; its own in open mode, where
   * every session is the tenant "anonymous" (own_caps). */
  int own_caps;
  uint32_t group;          /* its scheduling group on the devices */
  atomic_int *dev_streams; /* own_caps: its streams per device */
  size_t max_inflight;
  atomic_int refs;
  srv_session_t *prev, *next; /* srv->sessions */

  pthread_mutex_t req_mu;          /* request handling vs release: handles, streams below */
  srv_handles_t handles;           /* streams and events, by random handle */
  srv_handles_t buffers;           /* buffers, by the session's address (ext: srv_mem_t) */
  void *vmap;                      /* the same, as a tsearch tree by address range (request.c) */
  rdev_rt_space_t *space;          /* its device address range: Malloc allocates in it */
  rdev_rt_stream_t **sync_streams; /* per device, for EventSync; lazily made */
  dead_stream_t *dead;
  srv_refused_t refused[SRV_REFUSED_MAX]; /* quiet creations refused, the latest (request.c) */
  unsigned refused_next;

  pthread_mutex_t mu; /* from here to `gate_cv` */
  srv_op_t start_op, recv_op, send_op, status_op, close_op;
  grpc_byte_buffer *recv_bb;
  grpc_metadata_array recv_md;
  int cancelled; /* written by gRPC for close_op */
  reply_node_t *sq_head, *sq_tail;
  int send_busy, recv_paused, half_closed, released, status_started, broken;
  int streams_full; /* streams at half depth, each with a room_cb queued */
  size_t inflight;
  char *held; /* kernel print output not sent yet (at most HOLD_MAX) */
  size_t held_len, held_cap;
  srv_gate_t *gates;                                 /* host functions queued and not yet over (ops_host.c) */
  grpc_metadata open_md[10];                         /* sent when it opens or resumes (call.c) */
  char received_str[24];                             /* in a resume's: rx_msgs */
  char devices_str[12];                              /* in it: the tenant's device count */
  char mem_limits_str[RDEV_WIRE_MAX_DEVICES * 42];   /* in it: each device's quota and memory */
  char device_names_str[RDEV_WIRE_MAX_DEVICES * 32]; /* and name */
  pthread_cond_t gate_cv;                            /* a gate opened, or the session is released */
  srv_zc_session_t *zc;                              /* its shown Read replies (zerocopy.h) */
  struct srv_bulk_conn *bulk;                        /* its bulk connections (bulk.c): set once, by the listener... */
  void (*bulk_free)(struct srv_bulk_conn *);         /* ...with what frees it at the last reference */
  struct srv_region *regions;                        /* its registered host memory (regions.c) */
  uint64_t region_bytes;
  grpc_byte_buffer *paused; /* a message whose handling paused, and where (dispatch.c) */
  batch_t paused_at;
  srv_session_t *defer_next; /* not under mu: its CQ thread's deferred list */
  /* Resume (call.c, flow.c; mu). Messages are counted over all the
   * session's calls. A broken call detaches the session for the resume
   * window instead of releasing it; a new call takes it over. */
  int resumable;                     /* a served session on a server with a resume window */
  int bye;                           /* the client said it ends the session: its half-close is not a break */
  int detached;                      /* its call broke: waiting for a new one until detached_until */
  int64_t detached_until;            /* CLOCK_MONOTONIC ns */
  atomic_int call_ops;               /* batches in flight on the current call (a new one waits for 0) */
  int recv_wanted;                   /* a receive was due while detached: posted by the next call */
  uint64_t rx_msgs;                  /* messages received */
  uint64_t rx_told;                  /* rx_msgs as the latest reply said */
  size_t rx_untold;                  /* bytes received since */
  uint64_t tx_msgs;                  /* replies numbered */
  reply_node_t *log_head, *log_tail; /* sent, not yet acknowledged (flattened: they show no device memory) */
  grpc_byte_buffer *sending_copy;    /* what gRPC sends of the head reply (it empties it), which is kept */
  size_t unacked;                    /* bytes of replies not acknowledged (queued or logged) */
  int unacked_tenant;                /* they count to the tenant (detached) */
  int over_cap;                      /* SRV_OVER_*: too many of them: the session ends */
  uint64_t tx_acked;                 /* replies the client acknowledged */
  size_t max_unacked;                /* the tenant's cap, when the session opened */
  srv_session_t *reap_next;          /* the reaper's list (call.c) */
  int expiring;                      /* the reaper ends it: 1 its window passed, 2 its tenant's cap */
  /* In-process sessions (call == NULL): replies go to local_fn, and
   * local_ready says the session takes its next message (mu). */
  srv_reply_fn local_fn;
  void *local_user;
  int local_ready;
  pthread_cond_t local_cv;
};

/* Kernel print output waits for the session's next reply and rides in it
 * (CANN shows device printf output at synchronization); this much at most,
 * past which it goes out at once as a PRINT reply. */
#define HOLD_MAX ((size_t)64 << 10)

/* Reply.print from a (pointer, length) pair. */
typedef struct {
  const char *text;
  size_t len;
} text_t;

/* A request being handled: handlers fill `r` and return a status, or
 * SRV_LATER when a runtime callback will answer (or, for async requests,
 * nothing needs to). */
#define SRV_LATER (-1)

typedef struct {
  srv_session_t *s;
  const rdev_v1_Request *q;
  const rdev_wire_request_t *w; /* q as decoded, with the Launch name and arguments */
  rdev_wire_payload_t *data;    /* Write payload: references to the received slices */
  rdev_v1_Reply r;
  grpc_slice payload;
  int has_payload;
  int payload_shown;      /* payload shows device memory (zerocopy.h) */
  uint64_t stream;        /* async requests: the stream, named in an error reply (request_stream) */
  rdev_rt_stream_t *used; /* the device stream the request may have queued work on */
  int dev;                /* the device of the buffer srv_buf_range found last (-1: none) */
} srv_req_t;

/* Runtime callbacks that answer later carry this. */
typedef struct {
  srv_session_t *s;
  uint64_t seq;
  int bulk;             /* an async Read that may go on the bulk connection */
  rdev_rt_stream_t *st; /* the stream whose errors a sync takes */
  void *buf;            /* an async Read's staging or shown read, an async Write's held payload */
  size_t len;
  bool quiet;      /* a quiet StreamDestroy: not answered (its stream's errors go with it) */
  bool quota_back; /* a StreamDestroy that gave the stream's quota back already */
} cb_ctx_t;

typedef int (*op_fn)(srv_req_t *x);

/* ---- session.c ---- */

/* A new session of tenant on call (NULL: in-process), granted grant
 * (NULL: all the tenant's devices for ever), holding one reference (the
 * close batch's, or the in-process owner's) and a session of the tenant's
 * quota; NULL with msg when it cannot be opened. */
srv_session_t *srv_session_new(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                               const srv_grant_t *grant, char *msg, size_t msglen);

void srv_session_ref(srv_session_t *s);

/* Drops a reference; the last one unlinks and frees the session. */
void srv_session_unref(srv_session_t *s);

/* The audit line of a session that ended, for why. */
void srv_session_closed(srv_session_t *s, const char *why);

/* Why a call that ended without the client's half-close ended: what the
 * server said when it ended it, else its deadline if passed, else the
 * client cancelled (or vanished). */
const char *srv_end_reason(srv_session_t *s);

/* Whether the deadline of s's call has passed (or nearly: a cancel this
 * close to it is the deadline). mu held, or the deadline not changing. */
int srv_deadline_passed(const srv_session_t *s);

/* The server ends s (its lock order: srv->mu may be held). */
void srv_session_end(srv_session_t *s, const char *why, grpc_status_code code, const char *details);

/* The session with that key (of tenant t; NULL: any tenant), one
 * reference more; NULL when none. The key is compared in constant time. */
srv_session_t *srv_session_find(srv_t *srv, const char *key, const srv_tenant_t *t);

/* A reference more unless the last one is already gone (a session found in
 * srv->sessions under srv->mu may be on its way out): 1 when taken. */
int srv_session_ref_live(srv_session_t *s);

/* ---- bulk.c; bulk_frames.c: srv_bulk_send, srv_send_read ---- */

/* Queues data (its reference taken) as request seq's frame on s's bulk
 * connection and answers seq in-band (Reply.bulk): 1. 0 when s has no
 * live connection: nothing done, the caller still owns data. shown: data
 * shows device memory (zerocopy.h): a resumable session keeps a copy of
 * it for the client's next connection, not the slice. Any thread. */
int srv_bulk_send(srv_session_t *s, uint64_t seq, grpc_slice data, int shown);
/* Bulk Writes: whether request seq's frame, which the client sends on its
 * connection number conn (Write.bulk_conn; 0: the one attached), is in (1),
 * may still come (0) or cannot (-1: no connection, it ended, or another
 * replaced it). */
int srv_bulk_frame(srv_session_t *s, uint64_t seq, uint32_t conn);
/* Takes request seq's frame: 1 with *buf (a runtime staging buffer, the
 * caller's to put; NULL when its bytes were received into the destination
 * srv_bulk_expect gave) and *len; 0 when it is not in. */
int srv_bulk_take(srv_session_t *s, uint64_t seq, void **buf, size_t *len);
/* Drops request seq's frame if it is in (its Write was refused unrun). */
void srv_bulk_drop(srv_session_t *s, uint64_t seq);
/* Bulk Write seq waits for its frame, not in yet: to be received straight
 * into dst (len bytes; the Write, checked, is its only user until it went
 * on), or staged when dst is NULL (the reader holds a frame a moment for
 * a Write not seen yet: now it knows). It goes to dst only if its length
 * is len and no frame of seq is in; the caller waits for it as for any
 * frame. Nothing when it is in already or cannot come. One at a time;
 * taking the frame forgets it, and srv_bulk_end waits for a receive into
 * it to stop before the session's memory goes. */
void srv_bulk_expect(srv_session_t *s, uint64_t seq, void *dst, size_t len);
/* The session's message waits for request seq's frame: 0 when resume(arg)
 * is registered to run (on the reader's thread, or the releaser's) once
 * it is in or cannot come; 1 when it is in already or cannot come
 * (nothing registered: go on now). One waits at a time. */
int srv_bulk_pause(srv_session_t *s, uint64_t seq, uint32_t conn, void (*resume)(void *), void *arg);
/* A Read's answer: data, whose reference it takes; on the session's bulk
 * connection when flags has SRV_READ_BULK (the Read asked for it) and it
 * has one, else in-band (srv_send_data). SRV_READ_SHOWN: data shows device
 * memory (zerocopy.h). */
enum { SRV_READ_BULK = 1, SRV_READ_SHOWN = 2 };
void srv_send_read(srv_session_t *s, uint64_t seq, grpc_slice data, int flags);
/* Makes fd (a connection whose hello named key and its number conn) the
 * bulk connection of that session, local: a unix socket (regions may be
 * registered): 0 when it is (fd is the connection's from then on, answered
 * with the magic); -1 when no session takes it (fd still the caller's).
 * A session's first connection may have any number from 1; a later one
 * replaces it if its number is higher (the client lost the last), its
 * frames not yet sent dropped. May block up to 2 s for the old
 * connection's threads. bulk_listen.c. */
int srv_bulk_attach(srv_t *srv, int fd, const char *key, uint32_t conn, int local);
/* The same for session s (a reference the caller holds), found already
 * (tests/fuzz/fuzz_bulk.c adopts one end of a socket pair). */
int srv_bulk_adopt(srv_session_t *s, int fd, uint32_t conn, int local);
/* The session ends: frames not sent are dropped, a blocked send returns,
 * a message waiting for a frame runs out (release.c). */
void srv_bulk_end(srv_session_t *s);

/* ---- regions.c ---- */

typedef struct srv_region srv_region_t;

/* Registers the memfd fd (taken: closed here) as region id of size bytes:
 * RDEV_OK, or a status with *why (static) when it is not a memfd sealed
 * against shrinking, too small, a duplicate id, or over the session's
 * limits. The bulk connection's reader calls it. */
int srv_region_add(srv_session_t *s, uint32_t id, int fd, uint64_t size, const char **why);
/* Ends region id (no such region: nothing); copies queued on it finish. */
void srv_region_remove(srv_session_t *s, uint32_t id);
/* Region id with [off, off + count) inside it, one reference more, and
 * *p the first of those bytes; NULL when there is no such region or the
 * range does not fit (checked without overflow). */
srv_region_t *srv_region_get(srv_session_t *s, uint32_t id, uint64_t off, uint64_t count, uint8_t **p);
/* Drops a reference; the last one unmaps it. Any thread. */
void srv_region_put(srv_region_t *r);
/* The session is released (its streams are gone): every region goes. */
void srv_regions_release(srv_session_t *s);

/* ---- flow.c ---- */

/* The session's batch completions that flow.c handles (send, status,
 * initial metadata); before its first batch. */
void srv_flow_init(srv_session_t *s);

/* Starts a batch of the session's call, holding a reference until tag's
 * completion. */
void srv_start_batch(srv_session_t *s, const grpc_op *ops, size_t n, srv_op_t *tag);

/* mu held: receives the next message (an in-process session: is ready for
 * it), at once. */
void srv_post_recv(srv_session_t *s);

/* mu held: the next receive, unless the session holds too much (reading
 * pauses until it drained) or is ending. */
void srv_post_next_recv(srv_session_t *s);

/* mu held: after the client half-closed and resources are released, once
 * the queued replies are out, end the call with OK. */
void srv_maybe_send_status(srv_session_t *s);

/* mu held: forget unsent replies (the call is broken or cancelled), and
 * the sent ones kept for a resume. */
void srv_drop_queue(srv_session_t *s);

/* mu held: the client received the session's first n replies: those kept
 * for a resume go. */
void srv_acked_locked(srv_session_t *s, uint64_t n);

/* After a message was received and handled: an ACK reply when the client
 * has not been told of RDEV_WIRE_ACK_EVERY messages or ACK_BYTES bytes. */
void srv_maybe_ack(srv_session_t *s, size_t len);

/* mu held: a new call took the session over; the client received its
 * first acked replies: the kept ones after them go out again first. */
void srv_flow_reattach_locked(srv_session_t *s, uint64_t acked);

/* A session past its limit on unacknowledged replies ends (no lock held). */
void srv_flow_check_cap(srv_session_t *s);
#define SRV_OVER_TENANT 1  /* detached: its tenant's max_unacked */
#define SRV_OVER_SESSION 2 /* connected: its client does not acknowledge */
/* mu held: a detached session's unacknowledged replies count to its
 * tenant (on), or no longer (off: resumed, or ending). */
void srv_unacked_to_tenant_locked(srv_session_t *s, int on);

/* Counts n bytes more (or, sub, fewer) held for the session; fewer may
 * let a paused receive go on. */
void srv_inflight_add(srv_session_t *s, size_t n);

void srv_inflight_sub(srv_session_t *s, size_t n);

/* Encodes a text_t (arg) as a string field: Reply.print. */
bool srv_encode_text(pb_ostream_t *os, const pb_field_t *f, void *const *arg);

/* Encodes r with an optional payload and queues it to be sent; it counts
 * toward inflight until sent. Held print output rides along in r.print.
 * Dropped once the call is ending. r.message is made valid UTF-8 here (it
 * may quote what a client sent, or be cut inside a character); held print
 * output was made so when it was held. */
void srv_send_reply(srv_session_t *s, rdev_v1_Reply *r, const grpc_slice *payload);

/* Queues a reply of status and msg for seq (stream: the async request's). */
void srv_send_status(srv_session_t *s, uint64_t seq, uint64_t stream, int status, const char *msg);

/* A Read's answer in-band: data, whose reference it takes. */
void srv_send_data(srv_session_t *s, uint64_t seq, grpc_slice data);

/* After queueing work on st: past ROOM_AT tasks (about half depth), stop
 * reading until it drained. req_mu held. */
void srv_check_room(srv_session_t *s, rdev_rt_stream_t *st);

/* ---- request.c ---- */

int srv_fail(srv_req_t *x, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A runtime failure: its own detail. */
int srv_rt_failed(srv_req_t *x, int rc);

/* The live entry of handle h of the given type in x's session, or NULL. */
srv_handle_t *srv_get_handle(srv_req_t *x, uint64_t h, int type);

/* The client's own handle h for a new stream, event or binary (what: its
 * name in the message; 0: none, the server picks one): RDEV_OK when it may
 * be used (bit 63 set, not in use), else the error (x->r set). */
int srv_client_handle_check(srv_req_t *x, uint64_t h, const char *what);

/* Enters a new object of s (its entry's fields: srv.h) under the client's
 * handle want (checked), or under one the server picks (want 0): the
 * handle, 0 when out of memory. */
uint64_t srv_handle_enter(srv_session_t *s, uint64_t want, int type, int dev, void *ptr, size_t size, void *ext);

/* A quiet creation under the client's handle h failed with rc (x->r
 * says why): kept as refused, unanswered. Returns SRV_LATER. */
int srv_refuse_quietly(srv_req_t *x, uint64_t h, int rc);
/* A quiet Malloc placed at [addr, addr+size) failed (x->r says why):
 * kept as refused, and answered with RDEV_RT_MEMORY_ALLOCATION and the
 * address (its return value). */
int srv_refuse_placement(srv_req_t *x, uint64_t addr, uint64_t size);
/* addr lies in no buffer of the session: when it lies in a refused
 * placement, fails x with that refusal's code and words (what names the
 * address) and returns the code; else 0, and the caller says why. drop:
 * forget a refusal placed exactly at addr (then RDEV_OK; -1 when none). */
int srv_placement_refused(srv_req_t *x, const char *what, uint64_t addr, int drop);

/* Handle h of the given kind (what: its name in the message) is not one
 * of the session's: its refusal's code and words when h was refused
 * quietly, else RDEV_INVALID_RESOURCE_HANDLE. drop: forget the refusal
 * (then RDEV_OK). */
int srv_handle_missing(srv_req_t *x, uint64_t h, const char *what, int drop);

/* Stream handle h's entry in *e. */
int srv_find_stream(srv_req_t *x, uint64_t h, srv_handle_t **e);

/* The stream behind h, in *st, for work the caller queues on it: behind a
 * fence if shown async Reads went before (srv_zc_fence). */
int srv_get_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st);

/* Event handle h's entry in *e, or INVALID_RESOURCE_HANDLE. */
int srv_get_event(srv_req_t *x, uint64_t h, srv_handle_t **e);

/* The session's buffer entry holding address addr, or NULL: an address
 * of another session (or of a buffer this one freed) is unknown here
 * whoever else owns it. The entry's h is the buffer's address in the
 * session's space, ptr the device memory behind it (they differ for a
 * client's placement). req_mu held. */
srv_handle_t *srv_buffer_at(srv_session_t *s, uint64_t addr);
/* The device address behind addr, inside buffer e (srv_buffer_at). */
static inline void *srv_buffer_dev(const srv_handle_t *e, uint64_t addr) { return (char *)e->ptr + (addr - e->h); }
/* Enters buffer m, at m->wire in the session's space, into s->vmap
 * (buffers holds its entry): 0, or -1 when out of memory or it overlaps a
 * buffer there. req_mu held. */
int srv_vmap_insert(srv_session_t *s, srv_mem_t *m);
/* Takes m out of s->vmap. req_mu held. */
void srv_vmap_remove(srv_session_t *s, srv_mem_t *m);
/* Whether [addr, addr+size) overlaps a buffer of s. req_mu held. */
int srv_vmap_overlaps(srv_session_t *s, uint64_t addr, uint64_t size);

/* count bytes at device address addr, which must lie inside one of the
 * session's buffers for all of them (checked without overflow); *dptr gets
 * the address, *mem (if asked) the buffer's memory record. */
int srv_buf_range(srv_req_t *x, const char *what, uint64_t addr, uint64_t count, char **dptr, srv_mem_t **mem);

/* The device behind the tenant's device number `local`, in *dev. A tenant
 * sees only its devices; others do not exist for it. */
int srv_check_device(srv_req_t *x, int local, int *dev);

/* count > dest_max is RT_PARAM_INVALID (aclrtMemcpy's rule). */
int srv_check_count(srv_req_t *x, uint64_t count, uint64_t dest_max);

/* A callback context holding a reference to s (NULL out of memory);
 * srv_cb_done releases it. */
cb_ctx_t *srv_cb_new(srv_session_t *s, uint64_t seq, rdev_rt_stream_t *st, void *buf, size_t len);

void srv_cb_done(cb_ctx_t *c);

/* Queues fn(c) on st; on failure releases c and returns the error. */
int srv_queue_callback(srv_req_t *x, rdev_rt_stream_t *st, rdev_rt_host_fn fn, cb_ctx_t *c);

/* ---- ops_mem.c ---- */

/* The handlers, one per op (dispatch.c's table): each runs x's request,
 * req_mu held, and returns its status (x->r filled), or SRV_LATER when a
 * callback answers later or an async request needs no answer. */

/* Memory is charged to the tenant at the size the device really reserves,
 * and zeroed before the tenant can read it: nothing another tenant left in
 * it is ever visible. */
int srv_op_malloc(srv_req_t *x);

/* Gives buffer entry e back: its memory goes once every stream of the
 * session has passed the work queued so far and no shown reply shows it
 * any more (srv_mem_t). req_mu held or the session released. */
void srv_release_buffer(srv_session_t *s, const srv_handle_t *e);

/* aclrtFree returns at once; the memory goes back later (release_buffer). */
int srv_op_free(srv_req_t *x);

/* Synchronous Writes are gathered into device memory now; async ones are
 * held until their stream gathers them. */
int srv_op_write(srv_req_t *x);
/* Bulk Write q, whose bytes are not in yet, is waiting for them
 * (srv_bulk_expect): received straight into its device memory when that
 * is what running it would do (a count the handler takes, the session's
 * own buffer, memory the host sees, no synchronous Read reply of the
 * session shown; no stream, or a vacant one (rdev_rt_stream_vacant) whose
 * Reads' shown replies are all gone and fenced (srv_zc_views_quiet)),
 * else staged as always. req_mu held; dispatch.c, before it waits for the
 * frame, for a Write that runs as it is (no payload, within its batch). */
void srv_write_direct(srv_session_t *s, const rdev_v1_Request *q);

/* Through a staging buffer the device copies into (for an async Read when
 * its stream reaches it), or shown where the device shows its memory. */
int srv_op_read(srv_req_t *x);

int srv_op_copy(srv_req_t *x);

int srv_op_memset(srv_req_t *x);

int srv_op_mem_info(srv_req_t *x);

/* aclrtValueWrite / aclrtValueWait, queued on their stream. */
int srv_op_value_write(srv_req_t *x);
int srv_op_value_wait(srv_req_t *x);

/* ---- ops_stream.c ---- */

/* Gives back a stream s had on device dev: to the tenant's quota and cap,
 * and in open mode to the session's own cap (streams_take). */
void srv_streams_give(srv_session_t *s, int dev);

/* Streams the client destroyed while work was queued finish that work first
 * (aclrtDestroyStream); they are reaped here once idle. req_mu held. */
void srv_reap_dead(srv_session_t *s);

/* A stream in the session's scheduling group: its tenant's share of the
 * device by weight, and at most its cap of the device's slots at once. */
int srv_op_stream_create(srv_req_t *x);

int srv_op_stream_destroy(srv_req_t *x);

int srv_op_stream_sync(srv_req_t *x);

int srv_op_stream_query(srv_req_t *x);

/* aclrtSetStreamFailureMode: answered at once (it holds for work queued
 * after it). */
int srv_op_stream_failure_mode(srv_req_t *x);

/* aclrtStreamAbort: the stream's queued work is discarded; answered at once. */
int srv_op_stream_abort(srv_req_t *x);

int srv_op_event_create(srv_req_t *x);

int srv_op_event_destroy(srv_req_t *x);

int srv_op_event_record(srv_req_t *x);

int srv_op_stream_wait_event(srv_req_t *x);

/* EventSync waits on a session-internal stream of the event's device: the
 * stream waits for the event, then a callback answers. */
int srv_op_event_sync(srv_req_t *x);

int srv_op_event_query(srv_req_t *x);

int srv_op_event_elapsed(srv_req_t *x);

/* ---- ops_kernel.c ---- */

/* Launch: a built-in kernel by name, its print output held for the next reply. */
int srv_op_launch(srv_req_t *x);

/* Kernel binaries: load (shared per tenant and content), functions,
 * unload (its functions with it), and launches of a function from an
 * argument blob. */
int srv_op_binary_load(srv_req_t *x);
int srv_op_binary_function(srv_req_t *x);
int srv_op_binary_unload(srv_req_t *x);
int srv_op_launch_function(srv_req_t *x);
int srv_op_op_run(srv_req_t *x);

/* A binary's or function's handle entry goes: its binary reference with it. */
void srv_release_kernel_entry(srv_session_t *s, srv_handle_t *e);

/* ---- ops_host.c ---- */

/* Queues a host function: the callback on the stream answers (and, for a
 * blocking one, holds the stream until HostFuncDone or the session's end). */
int srv_op_host_func(srv_req_t *x);

/* Whether a blocking host function of s's stream with that handle is
 * queued and not yet released: the stream's worker may wait in it for as
 * long as the client likes. Takes s->mu. */
bool srv_gates_holding(srv_session_t *s, uint64_t stream);

/* ---- dispatch.c ---- */

/* Handles one received message: its batch's requests, run as they are
 * decoded, then its own (rdev_wire_walk). Returns 1 when a request must
 * wait: the rest of the message, and bb with it, then belongs to the
 * resumer, which receives next; else 0 (bb still the caller's). */
int srv_handle_message(srv_session_t *s, grpc_byte_buffer *bb);

/* ---- release.c ---- */

/* Releases everything the session made; the first caller does it. Streams go
 * first, so that no queued work still uses the buffers freed after them.
 * Why the session ended is known only once its call ended (on_close):
 * the audit line waits for it (srv_session_closed). */
void srv_session_release(srv_session_t *s);

#endif
