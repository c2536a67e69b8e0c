/*
 * client/lib/client.h — private to the client library: the session object,
 * and the contract of every function one of the library's files offers the
 * others. One file per subsystem; each owns its part of the session (the
 * sub-structures below say whose they are) and the others reach it only
 * through the functions declared here.
 *
 * Who calls whom: each file calls only files on a lower line (and the wire
 * codec, rdev/wire.h, below them all); nothing calls back up.
 *
 *   multi.c    the API's session calls, routed to the member session
 *              that holds their device, address or stream (a session
 *              over several servers); what spans servers
 *                                        → session memory stream info binary bulk
 *                                          pending poll addr auth error
 *   session.c  open, close               → auth poll send pending info stream addr error
 *   job.c      job calls (no session)    → info (unary calls) auth error
 *   memory.c   malloc/free, copies       → submit bulk_data poll (dead) stream info addr error
 *   stream.c   streams, events, kernels  → submit pending (sticky errors) info addr error
 *   info.c     unary calls, devices      → submit poll error
 *   submit.c   the submit API            → poll send bulk pending error
 *   poll.c     polling, waiting, the end → send bulk pending error
 *   bulk.c     the bulk connection       → bulk_data bulk_send pending error
 *   bulk_data.c  bulk Writes' bytes kept for the next connection → bulk_send
 *   bulk_send.c  what this process writes on it (send lock, ACKs) → (none)
 *   send.c     send queue, batching      → error
 *   pending.c  pending requests, waiters, replies, sticky errors → error
 *   auth.c     credentials, tokens       → error
 *   addr.c     the session's allocations → (none)
 *   error.c    the thread's last error   → (none)
 *
 * Locking: one mutex per session (s->mu) guards every part below it in
 * struct rdev_session; functions named *_locked are called with it held.
 * gRPC is never called back into our code while s->mu is held, except the
 * payload-release callback, which takes only its own mutex (submit.c).
 */
#ifndef RDEV_CLIENT_INTERNAL_H
#define RDEV_CLIENT_INTERNAL_H

#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "rdev/rdev.h"
#include "rdev/wire.h"

#define CL_MSG_MAX 384
#define CL_PENDING_BUCKETS 1024 /* power of two */

/* Completion tags of the session call (session.c opens it, poll.c handles
 * the rest, send.c starts sends and the half-close). */
enum { CL_TAG_OPEN = 1, CL_TAG_STATUS, CL_TAG_RECV, CL_TAG_SEND, CL_TAG_CLOSE };
#define CL_TAG(x) ((void *)(uintptr_t)(x))

typedef struct cl_waiter cl_waiter_t;   /* pending.c */
typedef struct cl_pending cl_pending_t; /* pending.c */

/* ---- the parts of a session, each owned by one file -------------------------- */

/* auth.c: the token metadata sent on every call. Filled at open, read-only
 * afterwards (session.c, job.c and info.c send it). */
typedef struct {
  grpc_metadata md; /* authorization: Bearer <token> */
  size_t n;         /* 0 without a token */
} cl_auth_t;

/* send.c: one SEND_MESSAGE in flight at a time; what queued behind it goes
 * out in batches. */
typedef struct {
  struct cl_send *head, *tail;    /* the queue */
  grpc_byte_buffer *sending;      /* the message in flight */
  grpc_byte_buffer *sending_copy; /* what gRPC sends of it when it is kept (gRPC empties what it sends) */
  size_t batch_xfer;              /* the server's batch limit on Read bytes */
  bool close_requested, close_sent;
  bool ended; /* the call ended: nothing more is sent */
  /* Resume (rdev.proto, "Resume"): messages are numbered from 1 over the
   * session's calls; each sent one is kept until rdevd acknowledges it. */
  bool resumable;                      /* rdevd keeps a broken session */
  bool keep;                           /* sent messages are kept: this client asked for resume, and rdevd's
                                        * answer to the open (which may come after the first messages went)
                                        * did not say no */
  bool paused;                         /* the call broke: nothing is sent until the session resumed */
  bool lost;                           /* a sent message could not be kept: no resume */
  uint64_t tx;                         /* messages sent (the one in flight included) */
  uint64_t acked;                      /* of which rdevd said it received */
  uint64_t rx, rx_told;                /* replies received (poll.c's count), and as last told to rdevd */
  size_t rx_untold;                    /* reply bytes received since */
  struct cl_sent *log_head, *log_tail; /* sent, not yet acknowledged */
  /* submit.c: the async Writes' payloads copied into their requests and
   * not yet let go of by gRPC (bytes, and a reference on their tracker). */
  struct cl_payload_track *copies;
} cl_send_state_t;

/* submit.c: copied async Write payloads a session holds at most; a Write
 * past it waits until gRPC sent enough of them. */
#define CL_COPIES_MAX ((size_t)64 << 20)

/* pending.c: a stream's sticky error: the first error of its asynchronous
 * work since its last synchronize. The stream object holds it (stream.c);
 * only pending.c's functions touch its fields. */
typedef struct cl_sticky {
  uint64_t handle; /* the stream's server handle */
  int status;
  char msg[CL_MSG_MAX];
  struct cl_sticky *prev, *next;
} cl_sticky_t;

/* pending.c: requests awaiting their FINAL reply, the waiters they
 * complete, sticky errors, kernel print output. */
typedef struct {
  cl_pending_t *buckets[CL_PENDING_BUCKETS]; /* keyed by seq */
  size_t n;
  size_t nasync;  /* of which without a waiter: async Reads */
  int nblocked;   /* waiters whose caller is blocked in cl_wait */
  bool completed; /* a reply completed some caller's wait */
  atomic_uint_fast64_t next_seq;
  cl_sticky_t *sticky;    /* registered streams, newest first */
  cl_sticky_t session;    /* the session's own (handle 0): quiet requests without a stream */
  pthread_cond_t bulk_cv; /* a bulk frame landed or failed, or the connection went */
  int bulk_busy;          /* frames being read into their destinations */
  uint32_t bulk_conn;     /* the bulk connection frames may come on (its hello went); 0: none */
  rdev_print_fn print_fn;
  void *print_user;
} cl_pending_state_t;

/* poll.c: at most this many received messages are held (CL_HELD_BYTES in all). */
#define CL_HELD_MAX 32

/* poll.c: who polls the call's completion queue, the receiver thread, the
 * one RECV_MESSAGE, and the call's end. */
typedef struct {
  pthread_t rx_thread;
  bool rx_started;
  pthread_cond_t rx_cv;   /* the receiver waits here when idle or parked */
  pthread_cond_t dead_cv; /* signalled when the call ended */
  int poller;             /* who polls: POLL_NONE, _RX or _CALLER */
  int nreleasing;         /* callers waiting for gRPC to let go of their memory */
  bool rx_idle;           /* the receiver waits on rx_cv */
  int64_t park_until;     /* the receiver parks till then (CLOCK_MONOTONIC ns) */
  grpc_byte_buffer *recv_bb;
  bool recv_posted, recv_ended; /* a RECV_MESSAGE is out; the call sends no more */
  /* The latest large messages received, kept alive (whoever polls owns
   * them; see poll.c's "held messages"). */
  grpc_byte_buffer *held[CL_HELD_MAX]; /* oldest first */
  uintptr_t held_top[CL_HELD_MAX];     /* the highest address each reaches */
  int held_n;
  size_t held_bytes;
  int64_t held_at; /* when the last one was received (CLOCK_MONOTONIC ns) */
  grpc_metadata_array trailing_md;
  grpc_status_code status;
  grpc_slice status_details;
  bool dead;     /* the call ended */
  int dead_code; /* what calls fail with since: RDEV_UNAVAILABLE, or a refused open's code */
  char dead_msg[CL_MSG_MAX];
  /* The open's answer (the server's initial metadata): 0 until it came, 1
   * accepted, -1 refused or failed; on_open (session.c's) reads it, on the
   * polling thread, and says whether it accepts the session. */
  int opened;
  bool (*on_open)(rdev_session_t *s, bool ok);
  gpr_timespec open_deadline; /* no answer by then: the call is cancelled (open_cancelled) */
  bool open_cancelled;
  /* Resume (poll.c): a broken call is replaced by one that resumes the
   * session (rdev.proto, "Resume"). */
  int64_t resume_limit;       /* the caller's (rdev_options_t.resume_ms) */
  int64_t resume_ms;          /* how long a break may last: rdevd's window within the caller's (0: no resume) */
  uint64_t rx;                /* replies received over the session's calls */
  bool resuming;              /* the call broke; a new one is sought */
  bool attempt;               /* a resuming call is out, its status not in */
  bool attempt_open;          /* its open (CL_TAG_OPEN) not in */
  bool attempt_cancelled;     /* not answered within the window: cancelled */
  int attempts;               /* since the break */
  int64_t resume_until;       /* give up then (CLOCK_MONOTONIC ns) */
  int64_t retry_at;           /* the next try, once the old call's completions are in */
  grpc_metadata resume_md[3]; /* the open's, then each try's: the token, the session key, the replies received */
  char rx_str[24];
} cl_poll_state_t;

/* bulk.c: the session's bulk connection (rdev/wire.h), read by a thread of
 * its own. */
typedef struct cl_region cl_region_t; /* bulk.c: registered host memory */
typedef struct cl_data cl_data_t;     /* bulk_data.c: a DATA message kept */
#define CL_BULK_POOL 16               /* bulk_data.c: copy buffers kept, of a chunk each */
typedef struct {
  pthread_t thread;
  bool started;
  atomic_bool stop;  /* the session closes */
  atomic_bool ready; /* attached: Writes may ask for it */
  atomic_bool asked; /* attached, or its hello sent: Reads may ask for it */
  bool local;        /* over a unix socket: host memory may be registered */
  bool tried;        /* the first attach is over (s->mu) */
  int fd;            /* -1 until attached (s->mu and send_mu to change; either to read) */
  uint32_t conn;     /* fd's number (rdev/wire.h), from 1 (as fd) */
  int port;
  char host[108];          /* the address the session's call reached, or the socket's path */
  pthread_cond_t cv;       /* an attach ended, or a registration was answered */
  pthread_mutex_t reg_mu;  /* one registration at a time */
  pthread_mutex_t send_mu; /* what this process writes on the connection, one at a time */
  /* Read frames received whole on the connection attached, and how many
   * of them rdevd was told of (ACK messages: whoever holds send_mu sends
   * the count, so that the reader never waits for a sender) */
  atomic_uint_fast64_t frames, frames_told;
  uint8_t ack_out[RDEV_WIRE_BULK_HEADER]; /* an ACK the reader began, not all sent (send_mu) */
  int ack_off, ack_len;
  bool dead;            /* the reader stopped: no answer comes any more (s->mu) */
  uint32_t next_id;     /* reg_mu */
  uint32_t reg_id;      /* the registration waiting for its answer (s->mu) */
  int reg_status;       /* its answer; 1 while none came (s->mu) */
  cl_region_t *regions; /* s->mu */
  uint32_t *unreg;      /* regions ended while no connection was in: told at the next (s->mu) */
  int nunreg;
  /* bulk_data.c: DATA messages kept until rdevd counts them */
  bool keeps;                       /* rdevd's answer: Writes wait across connections (send_mu) */
  uint64_t data_sent;               /* DATA messages numbered, as rdevd counts them (send_mu) */
  pthread_mutex_t data_mu;          /* the list */
  cl_data_t *data_head, *data_tail; /* kept, numbers rising */
  void *data_pool[CL_BULK_POOL];    /* buffers for copies, let go of: warm (data_mu) */
  int data_npool;
  pthread_cond_t data_cv;         /* RECEIPTs came (data_mu) */
  bool data_again;                /* being sent again: RECEIPTs wait (data_mu)... */
  uint64_t data_counted;          /* ...with this count */
  pthread_t data_thread;          /* the one that sends them again (cl_bulk_data_resend) */
  bool data_thread_on;            /* bulk.c's reader's */
  int data_fd;                    /* the connection it sends on */
  atomic_uint_fast64_t data_lent; /* of which still in their callers' memory */
} cl_bulk_state_t;

/* stream.c: the stream and event objects still open (freed at close), and
 * the next handle the session names one by (atomic, without s->mu). */
typedef struct {
  rdev_stream_t *streams;
  rdev_event_t *events;
  atomic_uint_fast64_t next_handle;
} cl_objects_t;

/* hostfn.c: host functions (rdev_launch_host_func). */
typedef struct {
  char key[RDEV_WIRE_SESSION_KEY_LEN + 1]; /* the session's, from its open metadata */
  bool started, stop;                      /* the host-call thread */
  pthread_t thread;
  pthread_cond_t cv;                  /* calls reached, or stop */
  struct rdev_host_call *head, *tail; /* reached, to run in order */
  struct rdev_host_call *calls;       /* launched and not yet done */
} cl_host_state_t;

/* info.c: the current device and the count (atomics: read without s->mu),
 * and the devices' names from the open's answer (under s->mu). */
typedef struct {
  atomic_int current;
  atomic_int count; /* -1 until the first ListDevices */
  bool named;       /* the names came (RDEV_WIRE_DEVICE_NAMES_KEY) */
  char names[RDEV_WIRE_MAX_DEVICES][32];
} cl_device_state_t;

/* A device's window of the session's address space (rdev.proto,
 * Malloc.addr): free ranges, sorted, and the bytes placed in it. */
typedef struct {
  struct cl_extent *free; /* NULL: the whole window is free (not yet used) */
  size_t n, cap;
  uint64_t used;         /* reserved bytes of the live allocations not refused */
  uint64_t quota, total; /* from the open's answer (RDEV_WIRE_MEM_LIMITS_KEY); 0: not known */
} cl_window_t;

typedef struct {
  uint32_t tag; /* the session's windows (RDEV_WIRE_VA_TAGS) */
  cl_window_t win[RDEV_WIRE_MAX_DEVICES];
} cl_space_t;

#define CL_TARGET_MAX 256 /* a server's address, with the NUL */
#define CL_MULTI_MAX 16   /* servers one session spans, at most */

struct rdev_session {
  /* Made by session.c at open, read-only until close (any file reads). */
  char target[CL_TARGET_MAX]; /* the server's address, as the caller gave it */
  /* multi.c, set at open and read-only after: a session over several
   * servers is a head holding one member session per server (the API's
   * session calls on a head are routed, multi.c; nothing else of a head is
   * used); a member points back to its head. A session to one server has
   * neither. */
  struct cl_multi *multi;
  rdev_session_t *head;
  grpc_channel *channel;
  grpc_completion_queue *cq;
  grpc_call *call; /* replaced by poll.c's poller when a resume makes a new one (s->mu) */
  cl_auth_t auth;
  grpc_metadata_array init_md; /* session.c: the server's open metadata */

  pthread_mutex_t mu;       /* guards the parts below */
  cl_send_state_t send;     /* send.c */
  cl_pending_state_t pend;  /* pending.c */
  cl_poll_state_t poll;     /* poll.c */
  cl_bulk_state_t bulk;     /* bulk.c */
  cl_objects_t obj;         /* stream.c */
  cl_host_state_t host;     /* hostfn.c */
  struct rdev_binary *bins; /* binary.c: loaded, not unloaded */
  void *addr_map;           /* addr.c: tsearch root of cl_alloc_t */
  cl_space_t space;         /* addr.c: where allocations are placed */
  cl_device_state_t dev;    /* info.c (atomics, not under mu) */
};

/* ==== error.c: the thread's last error ========================================= */

/* Sets the thread's last error from fmt and returns status. */
int cl_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the thread's last error to msg (server detail; "" or NULL: the
 * status's own text) and returns status. */
int cl_error_msg(int status, const char *msg);
/* Maps a gRPC status that ended a call to an rdev status. */
int cl_grpc_status(grpc_status_code code);

/* ==== auth.c: credentials ====================================================== */

/* Fills *a with the token metadata and *creds with the channel credentials
 * (plaintext or TLS), from opts (may be NULL) and the environment; with TLS,
 * *cache the process's TLS session cache for these credentials (may be
 * NULL). On error (last error set) *creds is NULL; *a is released by
 * cl_auth_release either way. */
int cl_auth_setup(cl_auth_t *a, const rdev_options_t *opts, grpc_channel_credentials **creds,
                  grpc_ssl_session_cache **cache);
/* Releases what cl_auth_setup put in *a (a zeroed *a: nothing). */
void cl_auth_release(cl_auth_t *a);

/* An integer channel argument (GRPC_ARG_...). */
typedef struct {
  const char *key;
  int value;
} cl_int_arg_t;
/* cl_auth_setup into *a, then a channel to target with the n (at most 15)
 * integer arguments into *out, sharing the process's TLS session cache of
 * the same credentials when it is TLS: RDEV_OK, or a status (last error set; *out NULL). *a is
 * released by cl_auth_release either way. */
int cl_channel_create(const char *target, const rdev_options_t *opts, const cl_int_arg_t *iargs, int n, cl_auth_t *a,
                      grpc_channel **out);
/* Whether target names several servers ("a,b": multi.c's): a comma outside
 * gRPC's own address lists ("ipv4:10.0.0.1:1,10.0.0.2:1" is one server at
 * either address). */
bool cl_target_several(const char *target);
/* What call's connection is: RDEV_TLS_NONE, RDEV_TLS_FULL or
 * RDEV_TLS_RESUMED (rdev_server_info_t.tls). */
int cl_auth_tls_of(grpc_call *call);

/* ==== addr.c: device addresses ================================================= */

typedef struct {
  uint64_t base, size; /* its device address in the session's space, and the size asked for */
  uint64_t reserved;   /* what it takes of the window and of the limit (rdev_mem_reserved_size) */
  uint64_t seq;        /* of its Malloc */
  int device;
  bool failed; /* the server refused it (its refusal is the session's sticky error) */
} cl_alloc_t;

/* Picks the session's windows (at open). */
void cl_addr_init(rdev_session_t *s);
/* Places an allocation of size bytes on device dev (below
 * RDEV_WIRE_MAX_DEVICES), made by the Malloc of that seq, and enters it
 * into s's map: RDEV_OK with *out (the map owns it), or a status (last
 * error set) when the window or host memory runs out. *fits says whether
 * the session alone stays within the device's limits as last known (a
 * malloc that does not should let the server decide). Never blocks. */
int cl_addr_place(rdev_session_t *s, int dev, size_t size, uint64_t seq, cl_alloc_t **out, bool *fits);
/* The server refused the placement at base made by the Malloc of that seq
 * (its error reply): it no longer counts against the limits. Under s->mu. */
void cl_addr_refused_locked(rdev_session_t *s, uint64_t base, uint64_t seq);
/* Records the devices' limits from an open's answer (RDEV_WIRE_MEM_LIMITS_KEY:
 * "quota/total" per device, quota 0 none). Under s->mu. */
void cl_addr_limits_locked(rdev_session_t *s, grpc_slice v);
/* Takes the allocation that starts exactly at base out of s's map and
 * returns it (the caller passes it to cl_addr_unplace); NULL when there
 * is none. */
cl_alloc_t *cl_addr_remove(rdev_session_t *s, uint64_t base);
/* Frees a, and when freed (the request that frees it on the server is
 * queued, so that no later placement of the same range reaches the server
 * before it) gives its range back to its window; else the range stays
 * taken, as the server may still hold it. */
void cl_addr_unplace(rdev_session_t *s, cl_alloc_t *a, bool freed);
/* Whether p lies inside an allocation of s that this library made (then
 * *fits, if asked, says whether len bytes from p stay inside it). */
bool cl_addr_known(rdev_session_t *s, const void *p, size_t len, bool *fits);
/* Frees s's map (at close: no other thread uses s). */
void cl_addr_map_destroy(rdev_session_t *s);
/* Under s->mu: device dev's memory as the open's answer said (0: not known). */
uint64_t cl_addr_total_locked(rdev_session_t *s, int dev);

/* ==== send.c: the send queue and batching ====================================== */

/* Sets the server's batch limit on Read bytes (at open: one chunk, until
 * the server's answer says more; then under s->mu). */
void cl_send_init(rdev_session_t *s, size_t batch_xfer);
/* Under s->mu, with the call accepting requests: sends bb (an encoded
 * Request with a payload) now if nothing is in flight, else queues it as
 * a message of its own. RDEV_OK: bb is the queue's, *queued says whether
 * it waits behind another send. RDEV_BAD_ALLOC (last error set): nothing
 * done, bb is still the caller's. */
int cl_send_message_locked(rdev_session_t *s, grpc_byte_buffer *bb, bool *queued);
/* The same for a request without payload, encoded by
 * rdev_wire_encode_request into enc[0..len) (copied): sent alone now, or
 * framed into the batch that goes out next; xfer: the Read bytes it asks
 * for (a batch's limit). */
int cl_send_small_locked(rdev_session_t *s, const uint8_t *enc, size_t len, size_t xfer, bool *queued);
/* The send in flight completed (ok: it was written): starts the next one,
 * or the half-close asked for once the queue is empty. Takes s->mu. */
void cl_send_done(rdev_session_t *s, bool ok);
/* Under s->mu: the half-close is asked for (no new request may be sent). */
bool cl_send_closing_locked(rdev_session_t *s);
/* Under s->mu: a send is in flight or queued. */
bool cl_send_busy_locked(rdev_session_t *s);
/* Under s->mu: a send is in flight (its completion is still to come). */
bool cl_send_in_flight_locked(rdev_session_t *s);
/* Under s->mu: asks for the half-close, sent once what is queued went out
 * (now if nothing is). */
void cl_send_close_locked(rdev_session_t *s);
/* Under s->mu: the call ended: drops the queue; nothing more is sent. */
void cl_send_end_locked(rdev_session_t *s);
/* Under s->mu: rdevd received the session's first n messages: those kept
 * for a resume go. */
void cl_send_acked_locked(rdev_session_t *s, uint64_t n);
/* Under s->mu: a reply of len bytes came, the session's rx-th: rdevd
 * hears of it with the next message, or an acknowledgement of its own
 * when RDEV_WIRE_ACK_EVERY replies or RDEV_WIRE_ACK_BYTES went untold and
 * nothing else is being sent. */
void cl_send_received_locked(rdev_session_t *s, uint64_t rx, size_t len);
/* Under s->mu: whether sent messages are kept for a resume (from the open
 * on, when the client asks for resume), and whether rdevd keeps a broken
 * session (its answer to the open; without, what was kept goes). */
void cl_send_keep_locked(rdev_session_t *s, bool keep, bool resumable);
/* Under s->mu: the call broke: sends wait (the one in flight is kept). */
void cl_send_pause_locked(rdev_session_t *s);
/* Under s->mu: a new call resumed the session; rdevd received its first
 * `received` messages: the kept ones after them go again, first, then
 * the queue. False when that cannot be (a message was not kept, or rdevd
 * counts more than were sent): the session must end. */
bool cl_send_resume_locked(rdev_session_t *s, uint64_t received);

/* ==== pending.c: pending requests, waiters, replies, sticky errors ============= */

/* What a FINAL reply carried besides its status. */
typedef struct {
  uint64_t handle, addr, value, value2;
  float elapsed_ms;
} cl_result_t;

/* Sets up s->pend (at open): seqs from 1, the default print function. */
void cl_pending_init(rdev_session_t *s);
/* Reserves n consecutive request seqs; returns the first. No lock. */
uint64_t cl_seq_reserve(rdev_session_t *s, uint64_t n);

/* A waiter: what a synchronous caller blocks on until the replies of its
 * requests came. Heap-allocated: one that timed out is abandoned and freed
 * by whoever handles its late reply. sync_stream: nonzero for a StreamSync
 * (its stream's server handle), whose late error then goes sticky. NULL: out
 * of memory. */
cl_waiter_t *cl_waiter_new(uint64_t sync_stream);
/* Frees a waiter that is not abandoned and expects no more replies (or was
 * never used); NULL is fine. */
void cl_waiter_free(cl_waiter_t *w);
/* Of a completed waiter: the first error among its replies as a status
 * (setting the thread's last error), and *res (may be NULL) from its
 * latest reply. */
int cl_waiter_result(const cl_waiter_t *w, cl_result_t *res);
/* The waiter's side of cl_wait (poll.c), all under s->mu: */
/* w still expects replies. */
bool cl_waiter_expecting_locked(const cl_waiter_t *w);
/* The caller blocks on w (counted while w expects replies: the receiver
 * must then make progress); unblock undoes it if no reply did. */
void cl_waiter_block_locked(rdev_session_t *s, cl_waiter_t *w);
void cl_waiter_unblock_locked(rdev_session_t *s, cl_waiter_t *w);
/* Sleeps on w until signalled or the CLOCK_MONOTONIC deadline (NULL: none)
 * passed; returns 0 or ETIMEDOUT. */
int cl_waiter_sleep_locked(rdev_session_t *s, cl_waiter_t *w, const struct timespec *deadline);
/* The caller gives up on w: whoever completes it frees it. */
void cl_waiter_abandon_locked(cl_waiter_t *w);

/* What a submitted request expects (NULL: out of memory). Each is either
 * handed to cl_pending_put_locked or freed with cl_pending_discard. */
/* A reply that completes w; a quiet Write's reply (an error) is only noted
 * in w and does not count toward the replies w expects. */
cl_pending_t *cl_expect_reply(uint64_t seq, cl_waiter_t *w, bool quiet);
/* A Read's reply whose count payload bytes go to dst, completing w. */
cl_pending_t *cl_expect_read(uint64_t seq, cl_waiter_t *w, void *dst, size_t count);
/* An asynchronous Read's reply whose count payload bytes go to dst; its
 * error goes sticky on the stream with server handle stream. */
cl_pending_t *cl_expect_async_read(uint64_t seq, uint64_t stream, void *dst, size_t count);
/* Told, under s->mu, the status of a request's FINAL reply, or
 * RDEV_UNAVAILABLE when the call ended first. Must not block. */
typedef void (*cl_final_fn)(rdev_session_t *s, void *arg, int status);
/* A reply that completes no waiter: fn(arg) is told its status (an error
 * also goes sticky on the stream with server handle stream). */
cl_pending_t *cl_expect_final(uint64_t seq, uint64_t stream, cl_final_fn fn, void *arg);
/* Under s->mu: registers e (the request was sent or queued). */
void cl_pending_put_locked(rdev_session_t *s, cl_pending_t *e);
/* Frees e, never registered; NULL is fine. */
void cl_pending_discard(cl_pending_t *e);
/* Forgets the entries of seqs [first, first+n) (quiet Writes known to be
 * done): no reply will come for them. Takes s->mu. */
void cl_pending_forget(rdev_session_t *s, uint64_t first, uint64_t n);

/* bulk.c's side. A frame for seq of len bytes arrived: returns its Read's
 * destination when that Read expects exactly len bytes (the reader writes
 * into it, without s->mu, until it calls cl_pending_bulk_end; the Read's
 * reply waits meanwhile), else NULL (the frame is dropped). Take s->mu. */
void *cl_pending_bulk_begin(rdev_session_t *s, uint64_t seq, uint64_t len);
void cl_pending_bulk_end(rdev_session_t *s, uint64_t seq, bool ok);
/* Frames may come on connection conn now (its hello went), or (lost) no
 * more on it: replies waiting for one of its frames stop waiting (their
 * Reads fail). Takes s->mu. */
void cl_pending_bulk_conn(rdev_session_t *s, uint32_t conn, bool lost);

/* Handles one reply message: print output first, then its pending entry
 * (payload into the Read's destination, waiter completion, sticky error);
 * *acked gets the messages rdevd says it received (0: none said).
 * Called by the polling thread, without s->mu. False: bb is malformed; why
 * says how (the call must be cancelled). */
bool cl_reply_handle(rdev_session_t *s, grpc_byte_buffer *bb, uint64_t *acked, char *why, size_t why_len);
/* Under s->mu: the call ended with code and msg: every pending request
 * fails (waiters complete with code, async Reads go sticky), once no bulk
 * frame is being read (the caller shut the bulk connection down). */
void cl_pending_fail_all_locked(rdev_session_t *s, int code, const char *msg);
/* Under s->mu: replies must come with no caller polling (a caller is
 * blocked on a waiter, or async Reads are pending). */
bool cl_pending_background_locked(rdev_session_t *s);
/* Under s->mu: whether a reply completed some caller's wait since the last
 * call; clears it. */
bool cl_pending_take_completed_locked(rdev_session_t *s);

/* Under s->mu: st (zeroed, in a stream object) starts collecting the sticky
 * errors of the stream with server handle; unregister stops it (before st
 * is freed). */
void cl_sticky_register_locked(rdev_session_t *s, cl_sticky_t *st, uint64_t handle);
void cl_sticky_unregister_locked(rdev_session_t *s, cl_sticky_t *st);
/* Takes the sticky error of the stream with that handle (0: the session's
 * own): its status (0: none) and, when nonzero, its message into msg;
 * clears it. Takes s->mu. */
int cl_sticky_take(rdev_session_t *s, uint64_t handle, char msg[CL_MSG_MAX]);

/* ==== bulk.c: the bulk connection ============================================== */

/* Sets up s->bulk (at open, before anything can fail). */
void cl_bulk_init(rdev_session_t *s);
/* Starts the thread that connects to the server's bulk port, or to its
 * unix socket at path when path is not NULL (the session is open: it has
 * its key and its call's peer), attaches the connection and reads frames
 * into their Reads' destinations until the connection or the session
 * ends; a connection lost while the session lives is made again, with
 * backoff (copies go in-band meanwhile). A unix socket's attach is waited
 * for (it takes moments; host memory made right after the open is then
 * shared). Failing to connect the first time is not an error: copies stay
 * in-band for good. */
void cl_bulk_start(rdev_session_t *s, int port, const char *path);
/* Shares the memory of memfd fd (size bytes, sealed against shrinking;
 * the fd stays the caller's) with the server, mapped at base in this
 * process: RDEV_OK with *id, once the server mapped it. Blocks for that
 * answer (up to 5 s). RDEV_UNAVAILABLE without a unix-socket connection. */
int cl_bulk_register(rdev_session_t *s, int fd, void *base, uint64_t size, uint32_t *id);
/* ---- bulk_send.c: what this process writes on the bulk connection ---- */

/* The send lock (send_mu): one writer at a time on the connection; an
 * ACK the reader began goes out whole first, and the frames it counted
 * are told as the lock goes. */
/* Bulk Writes: with the send lock held, a Write asked for with bulk is
 * kept (cl_bulk_data_keep_locked), queued (submit.c) and then its n bytes
 * at src sent as a DATA message
 * (blocks until they are in the socket; on: the connection was attached
 * as the Write chose it), so that DATA messages go in the order of their
 * Writes. False when the connection failed (it is shut down), or none
 * was: a resumable session sends them again on the next (bulk_data.c),
 * in another the server fails that Write. */
void cl_bulk_send_lock(rdev_session_t *s);
void cl_bulk_send_unlock(rdev_session_t *s);
bool cl_bulk_send_data(rdev_session_t *s, uint64_t seq, const void *src, size_t n, bool on);
/* The header of a DATA message of n bytes for Write seq. */
void cl_bulk_data_header(uint8_t hdr[RDEV_WIRE_BULK_HEADER + 8], uint64_t seq, size_t n);
/* Sends a REGISTER or UNREGISTER message (fd: the memfd, or -1) on sock,
 * the send lock held (or sock not yet published): true when sent whole. */
bool cl_bulk_send_message(int sock, uint32_t kind, uint32_t id, uint64_t size, int fd);
/* With the send lock held, fd just made the one senders use: the
 * UNREGISTERs made while none was (rdevd unmaps those regions). */
void cl_bulk_send_unregisters_locked(rdev_session_t *s, int fd);
/* bulk.c's reader, a Read frame counted: tells rdevd now if no sender
 * holds the send lock and the socket takes it at once (else that sender
 * does as it lets go). Never blocks. */
void cl_bulk_acks_flush(rdev_session_t *s);
/* With the send lock held: the number of the connection DATA goes on now
 * (Write.bulk_conn). */
uint32_t cl_bulk_conn_locked(rdev_session_t *s);
/* Ends region id (after its memory's last use by this process). */
void cl_bulk_unregister(rdev_session_t *s, uint32_t id);
/* Takes one registered region out of s's list (at close): its base in
 * this process, or NULL when none is left. Takes s->mu. */
void *cl_bulk_region_pop(rdev_session_t *s);
/* Whether [p, p+n) lies inside one registered region: then *id and the
 * offset of p in it. Takes s->mu. */
bool cl_bulk_region_of(rdev_session_t *s, const void *p, size_t n, uint32_t *id, uint64_t *off);
/* ---- bulk_data.c: DATA messages kept for the next connection ---- */

/* Send lock held: the DATA message of Write seq, n bytes at src (the
 * caller's, lent until cl_bulk_data_settle), about to go: numbered, and
 * kept when rdevd keeps Writes waiting across connections. False when out
 * of memory (nothing numbered). */
bool cl_bulk_data_keep_locked(rdev_session_t *s, uint64_t seq, const void *src, size_t n);
/* Send lock held: the last one kept does not go after all (its Write failed). */
void cl_bulk_data_unkeep_locked(rdev_session_t *s);
/* rdevd has the first count DATA messages (a RECEIPT): those kept go. */
void cl_bulk_data_counted(rdev_session_t *s, uint64_t count);
/* Send lock held, a connection just attached, its answer saying rdevd has
 * the first counted DATA messages: those kept go, and the others are
 * numbered as rdevd will count them. True when some are to go again. */
bool cl_bulk_data_renumber_locked(rdev_session_t *s, uint64_t counted);
/* After cl_bulk_data_renumber_locked said so: a thread of its own sends
 * them again on the connection attached (blocking while rdevd's reader
 * is behind, so not bulk.c's reader, which must go on reading meanwhile),
 * then lets Writes use it (s->bulk.ready); on a failure it shuts fd down.
 * bulk.c's reader joins it (cl_bulk_data_join) before attaching another. */
void cl_bulk_data_resend(rdev_session_t *s, int fd);
void cl_bulk_data_join(rdev_session_t *s);
/* The calling thread's copy call that sent DATA messages returns: those
 * still in its memory are copied (rdevd has not counted them yet), or,
 * drop, let go (a synchronous copy that was answered: rdevd had them).
 * Takes the send lock when something is lent; costs nothing otherwise. */
void cl_bulk_data_settle(rdev_session_t *s, bool drop);
/* Sets up and frees what is kept (cl_bulk_init; cl_bulk_stop, no thread left). */
void cl_bulk_data_init(rdev_session_t *s);
void cl_bulk_data_stop(rdev_session_t *s);

/* Whether a unix-socket bulk connection is attached (host memory can be
 * shared). No lock. */
bool cl_bulk_local(rdev_session_t *s);
/* Whether Writes may ask for the bulk connection now (attached). No lock. */
bool cl_bulk_ready(rdev_session_t *s);
/* Whether Reads may ask for it: attached, or its hello on the way (rdevd
 * sends in-band what it answers before the connection attached: a fresh
 * session's first D2H need not wait for the attach's round trip, nor go
 * in-band for it). No lock. */
bool cl_bulk_reads_may(rdev_session_t *s);
/* Under s->mu: the call ended: the connection is shut down (a frame being
 * read fails at once). */
void cl_bulk_abort_locked(rdev_session_t *s);
/* Stops and joins the thread, closes the connection (at close, the call
 * ended). */
void cl_bulk_stop(rdev_session_t *s);

/* ==== memory.c ==================================================================== */

/* At close, before bulk.c's stop: host memory shared with s stays the
 * caller's, no longer shared (rdev_free_host then leaves s alone). */
void cl_host_release_all(rdev_session_t *s);

/* ==== poll.c: polling, waiting, the call's end ================================= */

/* Sets up s->poll (at open, before anything can fail). */
void cl_poll_init(rdev_session_t *s);
/* Frees what s->poll holds (the receiver is stopped or never ran). */
void cl_poll_destroy(rdev_session_t *s);
/* Starts receiving the call's final status (CL_TAG_STATUS), whose arrival
 * ends the session (at open). */
grpc_call_error cl_poll_watch_end(rdev_session_t *s);
/* Once CL_TAG_STATUS completed: the call's gRPC status, and its details as
 * a string the caller frees with gpr_free. */
grpc_status_code cl_poll_end_status(rdev_session_t *s, char **details);
/* The session call started (its open batch, CL_TAG_OPEN, and
 * cl_poll_watch_end): posts the first RECV_MESSAGE and starts the receiver
 * thread, which hands the open's answer to on_open. On failure (last error
 * set) the call is cancelled and its completions drained: the caller frees
 * the session. */
int cl_poll_start(rdev_session_t *s, bool (*on_open)(rdev_session_t *s, bool ok), gpr_timespec open_deadline);
/* Waits for the open's answer, up to the CLOCK_MONOTONIC deadline (NULL:
 * none): RDEV_OK once accepted; the refusal's code (last error set) when
 * refused, RDEV_UNAVAILABLE when the call ended or time ran out. */
int cl_poll_wait_open(rdev_session_t *s, const struct timespec *deadline);
/* Ends the call: half-close after what is queued, wait for the end (up to
 * grace_ms, then cancel), shut the completion queue down and join the
 * receiver. The caller then destroys the queue. */
void cl_poll_close(rdev_session_t *s, int grace_ms);
/* Waits for w; timeout_ms < 0 = forever. While no other thread polls the
 * call, the caller polls it itself and handles whatever comes (any thread's
 * replies, kernel print output). Returns RDEV_OK when all replies came
 * (then the caller frees w), or timeout_status (last error set) after
 * abandoning w. */
int cl_wait(rdev_session_t *s, cl_waiter_t *w, int32_t timeout_ms, int timeout_status);
/* Under s->mu: RDEV_OK while the session accepts requests, else
 * RDEV_UNAVAILABLE or a refused open's code (last error: why it ended, or
 * that it is closing). */
int cl_poll_check_open_locked(rdev_session_t *s);
/* Under s->mu: work was added that must progress with no caller polling:
 * the receiver polls as soon as no caller does. */
void cl_poll_wake_locked(rdev_session_t *s);
/* Whether the call ended; if why, its message into why[why_len]. Takes s->mu. */
bool cl_poll_dead(rdev_session_t *s, char *why, size_t why_len);
/* At open, from rdevd's answer: rdevd keeps a broken session for ms (0:
 * not at all); the caller's limit applies within it. */
void cl_poll_resumable(rdev_session_t *s, int64_t ms);
/* A caller starts / stops waiting for gRPC to let go of memory it lent:
 * meanwhile the receiver polls. Take s->mu. */
void cl_poll_release_begin(rdev_session_t *s);
void cl_poll_release_end(rdev_session_t *s);

/* ==== submit.c: the submit API, one call per mode ============================== */
/*
 * Every call encodes req (seq assigned here: the caller leaves it 0), queues
 * it for sending and registers what it expects back. A request refused
 * before it was queued (session ended or closing, out of memory, encode
 * failure) returns its error (last error set) and nothing was registered.
 */

/* Synchronous: sends req, waits for its reply, fills *res (may be NULL) and
 * returns the reply's status (last error set on failure). */
int cl_call(rdev_session_t *s, rdev_v1_Request *req, cl_result_t *res);
/* As cl_call, giving up after timeout_ms (< 0: forever): then returns
 * timeout_status and the late reply is dropped. */
int cl_call_timeout(rdev_session_t *s, rdev_v1_Request *req, int32_t timeout_ms, int timeout_status, cl_result_t *res);
/* Synchronous StreamSync (req->op.stream_sync.stream): waits up to
 * timeout_ms (< 0: forever; *answered: whether the server's answer came),
 * then returns the stream's sticky error if it
 * has one (clearing it), else the reply's status, else (session_errors)
 * the session's sticky error (clearing it). After timeout_ms:
 * RDEV_RT_STREAM_SYNC_TIMEOUT, and a late error reply goes sticky. */
int cl_call_stream_sync(rdev_session_t *s, rdev_v1_Request *req, int32_t timeout_ms, bool session_errors,
                        bool *answered);
/* As cl_call, with a copy of data[0..n) as the request's payload. */
int cl_call_with(rdev_session_t *s, rdev_v1_Request *req, const void *data, size_t n, cl_result_t *res);
/* As cl_send_async, with a copy of data[0..n) as the request's payload. */
int cl_send_async_with(rdev_session_t *s, rdev_v1_Request *req, const void *data, size_t n);
/* Fire-and-forget on a stream (Launch, EventRecord, StreamWaitEvent,
 * Copy, Memset): returns once queued; the server answers only a refusal,
 * which goes sticky on the stream the reply names. */
int cl_send_async(rdev_session_t *s, rdev_v1_Request *req);
/* Asynchronous Read on req->op.read.stream: its req->op.read.count bytes
 * land in dst in the background (valid after the stream's synchronize); an
 * error goes sticky on the stream. */
int cl_read_into_async(rdev_session_t *s, rdev_v1_Request *req, void *dst);
/* submit.c: the tracker of copied payloads, made at open (RDEV_BAD_ALLOC
 * when out of memory) and let go of at the session's end. */
int cl_copies_open(rdev_session_t *s);
void cl_copies_close(rdev_session_t *s);
/* Fire-and-forget Write of the caller's [src, src+n): with
 * req->op.write.bulk (and count n) sent on the bulk connection before this
 * returns, else copied into the message (waiting while the session holds
 * CL_COPIES_MAX of such copies); either way the caller may reuse src once
 * this returns. */
int cl_write_async(rdev_session_t *s, rdev_v1_Request *req, const void *src, size_t n);
/* Queues req (its seq already set) expecting what e says (registered once
 * queued; freed when not). */
int cl_send_expect(rdev_session_t *s, rdev_v1_Request *req, cl_pending_t *e);

/* A synchronous operation of several requests (a chunked copy): begin it,
 * add its requests, end it to wait for all of their replies. Fields are
 * submit.c's. */
typedef struct {
  rdev_session_t *s;
  cl_waiter_t *w;
  struct cl_payload_track *track; /* writes: the caller's memory lent to gRPC */
  uint64_t first, next, end;      /* writes: the seqs reserved for them, the next to use */
} cl_group_t;

/* Begins a group on s that will hold up to nwrites Writes (0: Reads only).
 * RDEV_BAD_ALLOC (last error set): nothing to end. */
int cl_group_begin(cl_group_t *g, rdev_session_t *s, uint64_t nwrites);
/* Adds a Write of the caller's [src, src+n) (lent to gRPC until the group
 * ended; with req->op.write.bulk, sent on the bulk connection before this
 * returns). Every Write of the group but its nwrites-th is quiet: the
 * server answers it only if it fails; the last one's answer means all
 * were written. */
int cl_write(cl_group_t *g, rdev_v1_Request *req, const void *src, size_t n);
/* Adds a Read whose req->op.read.count reply bytes land in dst. */
int cl_read_into(cl_group_t *g, rdev_v1_Request *req, void *dst);
/* Adds a request expecting one reply, with a copy of data[0..n) as its
 * payload (data NULL: none). */
int cl_group_call(cl_group_t *g, rdev_v1_Request *req, const void *data, size_t n);
/* Waits for the replies of every request added, until gRPC let go of the
 * group's memory, and ends g. Returns rc if nonzero (an add failed), else
 * the first error among the replies (last error set); *res (may be NULL)
 * gets what the last reply carried. */
int cl_group_end(cl_group_t *g, int rc, cl_result_t *res);

/* ==== info.c: unary calls, devices ============================================= */

/* Sets up s->dev (at open): device 0, device count unknown. */
void cl_device_init(rdev_session_t *s);
/* The session's current device (rdev_device_set). */
int cl_device_current(rdev_session_t *s);
/* The server said at open how many devices the session may use. */
void cl_device_count_known(rdev_session_t *s, int count);
/* Under s->mu: the devices' names from an open's answer
 * (RDEV_WIRE_DEVICE_NAMES_KEY). */
void cl_device_names_locked(rdev_session_t *s, grpc_slice v);
/* A unary call on the session's channel (its own completion queue, a
 * 10 s deadline, the session's credentials): req out, *rep in. Blocks;
 * while the session may resume, a call whose connection broke goes
 * again (so it must be one that may run twice). */
int cl_unary(rdev_session_t *s, const char *method, const pb_msgdesc_t *req_fields, const void *req,
             const pb_msgdesc_t *rep_fields, void *rep);
/* A reply's repeated pointer field (nanopb allocates its entries one by
 * one) and the most entries the contract allows it, with what the error
 * calls the field and its entries ("job list", "jobs"). */
typedef struct {
  uint32_t field;
  size_t max;
  const char *what, *items;
} cl_reply_cap_t;
/* The same on any channel with auth's token metadata (auth.c; read only),
 * waiting for the channel to be ready, deadline_ms after the start (<= 0:
 * none): req out, *rep in (decoded by rdev_wire_decode). With cap (may be
 * NULL), a reply holding more than cap->max of its field is refused before
 * it is decoded (RDEV_PROTOCOL; nothing allocated). Blocks. Returns
 * RDEV_OK or a status with the last error set ("METHOD: detail (gRPC
 * status N)" when the server answered with an error); *gstatus (may be
 * NULL) gets the call's gRPC status (GRPC_STATUS_UNKNOWN when it got none),
 * for a caller that maps some of them otherwise. */
int cl_unary_call(grpc_channel *ch, cl_auth_t *auth, const char *method, int64_t deadline_ms,
                  const pb_msgdesc_t *req_fields, const void *req, const pb_msgdesc_t *rep_fields, void *rep,
                  const cl_reply_cap_t *cap, grpc_status_code *gstatus);

/* ==== binary.c: kernel binaries ================================================ */

/* Frees the binary and function objects still loaded (at close). */
void cl_free_binaries(rdev_session_t *s);

/* ==== hostfn.c: host functions ================================================= */

/* Sets up s->host (at open). */
void cl_host_init(rdev_session_t *s);
/* After the call ended (every pending host function was told): lets the
 * host-call thread run what is left, joins it, frees the calls never done. */
void cl_host_close(rdev_session_t *s);

/* ==== stream.c: streams, events, kernels ======================================= */

/* The server handle of stream, for a request about to queue work on it,
 * after checking it is a stream of s; RDEV_INVALID_PARAM (last error set)
 * when NULL or another session's. */
int cl_stream_handle(rdev_session_t *s, rdev_stream_t *stream, uint64_t *handle);
/* After the requests that queue work on stream were sent (or failed on
 * the way): counts them (destroying the stream waits for that work unless
 * a synchronize saw it done); returns rc. */
int cl_stream_sent(rdev_stream_t *stream, int rc);
/* A handle of the session's own choosing (RDEV_WIRE_CLIENT_HANDLE set) for
 * a new stream, event or binary. No lock. */
uint64_t cl_handle_new(rdev_session_t *s);
/* The session a stream belongs to (NULL stream: NULL). */
rdev_session_t *cl_stream_session(rdev_stream_t *stream);
/* Frees the stream and event objects still open (at close). */
void cl_free_streams_events(rdev_session_t *s);
/* cl_stream_create on device dev of s (the caller checked it). */
int cl_stream_create_on(rdev_session_t *s, int dev, rdev_stream_t **stream);
/* rdev_stream_synchronize reporting the stream's errors only: the
 * session's (requests without a stream refused) stay for the caller's
 * next synchronize. For the library's own streams. */
int cl_stream_sync_own(rdev_stream_t *stream);

/* ==== the API's session calls, on a session to one server ====================== */
/* Each is the rdev_ function of the same name (rdev.h states its contract)
 * for a session to one server, or a member of a session over several:
 * multi.c's rdev_ functions pick the session and call these. */
/* session.c */
int cl_session_open(const char *target, const rdev_options_t *opts, rdev_session_t **out);
void cl_session_close(rdev_session_t *s);
/* bulk.c, pending.c */
int cl_session_bulk(rdev_session_t *s);
void cl_session_set_print_fn(rdev_session_t *s, rdev_print_fn fn, void *user);
/* info.c */
int cl_health_check(const char *target, const char *service, const rdev_options_t *opts, rdev_health_t *status);
int cl_server_info(rdev_session_t *s, rdev_server_info_t *info);
int cl_server_kernels(rdev_session_t *s, rdev_kernel_info_t *kernels, int max, int *count);
int cl_device_count(rdev_session_t *s, int *count);
int cl_device_info(rdev_session_t *s, int dev, rdev_device_info_t *info);
int cl_device_props(rdev_session_t *s, int dev, rdev_device_props_t *props);
int cl_device_set(rdev_session_t *s, int dev);
int cl_device_get(rdev_session_t *s, int *dev);
int cl_mem_info(rdev_session_t *s, size_t *free_bytes, size_t *total_bytes);
/* memory.c */
int cl_malloc(rdev_session_t *s, void **dptr, size_t size, rdev_mem_policy_t policy);
int cl_ptr_on_device(rdev_session_t *s, const void *p);
int cl_free(rdev_session_t *s, void *dptr);
int cl_malloc_host(rdev_session_t *s, void **ptr, size_t size);
int cl_free_host(rdev_session_t *s, void *ptr);
int cl_memcpy(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind);
int cl_memcpy_async(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count,
                    rdev_memcpy_kind_t kind, rdev_stream_t *stream);
int cl_memset(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count);
int cl_memset_async(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count, rdev_stream_t *stream);
/* stream.c */
int cl_stream_create(rdev_session_t *s, rdev_stream_t **stream);
int cl_event_create(rdev_session_t *s, rdev_event_t **ev);
/* binary.c; a head's binary is one per member, linked (cl_binary_link) */
int cl_binary_load(rdev_session_t *s, const void *data, size_t len, rdev_binary_t **out);
int cl_binary_load_function(rdev_session_t *s, const void *data, size_t len, const char *name, uint64_t entry,
                            rdev_binary_t **bout, rdev_function_t **fout);
/* Links b (and f, when not NULL) into the ring of first (and ff): the same
 * binary loaded on several members of one session. A launch on a member's
 * stream uses that member's function; unloading one unloads all. */
void cl_binary_link(rdev_binary_t *first, rdev_binary_t *b, rdev_function_t *ff, rdev_function_t *f);

#endif
