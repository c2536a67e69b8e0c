/*
 * rdev/rdev.h — the public C API of rdev: drive a device owned by a remote
 * rdevd as the CANN runtime (aclrt*) drives a local one. Each call mirrors
 * its aclrt counterpart one for one; the `rdev` tool uses
 * only this header.
 *
 * Conventions:
 * - Functions return an rdev_status_t (0 = RDEV_OK; CANN numbers, see
 *   rdev/status.h). rdev_session_last_error() gives the server's or the
 *   library's detail for the calling thread's last failure.
 * - A session is one gRPC call to rdevd; everything made through it
 *   (device memory, streams, events) is released by the server when the
 *   session ends, however it ends.
 * - Device pointers are the server's device addresses (those its kernels
 *   use), in the session's own address range on each device; pointer
 *   arithmetic within an allocation works as on a device (dptr + offset),
 *   dereferencing them does not. The server checks every address a call
 *   names against the session's own allocations: any other (another
 *   session's, past an allocation's end, freed) is RDEV_INVALID_PARAM,
 *   at once for synchronous calls and at the stream's next synchronize for
 *   async ones.
 * - Async calls (…_async, rdev_launch, rdev_event_record,
 *   rdev_stream_wait_event) return once the request is queued for sending.
 *   Host memory they read or write must stay valid until the stream is
 *   synchronized; D2H destinations are filled by the library in the
 *   background and are valid after rdev_stream_synchronize(). Errors of async
 *   work, including requests the server refused, surface at the next
 *   synchronize of that stream.
 * - Synchronous calls block the calling thread until the server answered.
 * - A session may be used from several threads at once.
 */
#ifndef RDEV_RDEV_H
#define RDEV_RDEV_H

#include <stddef.h>
#include <stdint.h>

#include "rdev/ops.h"
#include "rdev/status.h"
#include "rdev/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdev_session rdev_session_t; /* a connection to rdevd */
typedef struct rdev_stream rdev_stream_t;   /* a remote device stream */
typedef struct rdev_event rdev_event_t;     /* a remote device event */

#define RDEV_MAX_KERNEL_ARGS 8 /* arguments of one kernel launch, at most */

/* ---- sessions ------------------------------------------------------------- */

/* How to reach rdevd. Each string left NULL is taken from the environment
 * variable named beside it, if set. The strings are read during
 * rdev_session_open only. */
typedef struct {
  int64_t connect_timeout_ms; /* 0 = RDEV_CONNECT_TIMEOUT_MS, else 10000 */
  const char *token;          /* RDEV_TOKEN (else RDEV_TOKEN_FILE's first line): bearer or job token */
  const char *ca_file;        /* RDEV_CA: PEM CA that signed the server's certificate; set = TLS */
  const char *cert_file;      /* RDEV_CERT: PEM client certificate (mutual TLS)... */
  const char *key_file;       /* RDEV_KEY: ...and its private key */
  /* 0 = 10000, at least 1000: after this long without data the client
   * pings rdevd, and a server that does not answer within as long again
   * (frozen, or its network gone without a word) is taken for gone: every
   * call of the session then fails with RDEV_UNAVAILABLE. */
  int64_t keepalive_ms;
  /* When the session's connection breaks (cut, reset, or found silent by
   * the pings above), the library reconnects by itself and resumes the
   * same session: its memory, streams, events, queued work and host
   * functions stay; each request runs once and each reply arrives once.
   * Meanwhile calls wait (a synchronize or copy within its own timeout,
   * if it has one). How long it tries: 0 = as long as rdevd keeps a broken
   * session (its --resume-ms, 60 s by default); > 0 = at most this; < 0 =
   * never (the first break ends the session). Past it, or when rdevd no
   * longer holds the session, every call fails with RDEV_UNAVAILABLE.
   * The bulk connection is made anew: copies' bytes lost with it, both
   * ways, go again on the next one and are written once (the library
   * keeps a copy of an H2D's bytes still in flight as the call returns:
   * the source is the caller's again then). */
  int64_t resume_ms;
} rdev_options_t;

/* Connects to rdevd at target ("host:port" or "unix:/path") and opens a
 * session. opts may be NULL. Blocks until the connection is up (TCP, TLS,
 * and HTTP/2's first exchange, one round trip) or the connect timeout
 * passed (RDEV_UNAVAILABLE; failing TLS too). The session's own open then
 * rides with the first requests: rdevd's acceptance is not waited for
 * (but on a unix socket, where it costs moments). A refusal (a missing or
 * wrong token: RDEV_UNAUTHENTICATED; a tenant's session quota:
 * RDEV_QUOTA_EXCEEDED) is the answer of the first call that waits, and of
 * every call after it; rdev_session_close is still the caller's. The
 * current device is 0.
 * The library leaves the process's malloc settings alone. With
 * RDEV_MALLOC_TUNE=1 in the environment, the first open in the process
 * raises glibc's mmap and trim thresholds (mallopt: 8 MiB and 64 MiB), so
 * that freed received chunks stay in the heap instead of going back to
 * the kernel; docs/performance.md has what that buys.
 *
 * Several servers: target "hostA:port,hostB:port" (up to 16, each as
 * above) opens one session over all of them, connected in parallel, with
 * the same options and credentials on each; any that cannot be reached
 * fails the open. Their devices are numbered in the target's order (A's
 * first), and every call acts on the server that holds the device, device
 * address or stream it names. A copy between devices of different servers
 * goes through the client. A server that goes away fails only what names
 * its devices, with RDEV_UNAVAILABLE and a message naming it.
 * docs/multi-server.md has the rules. */
int rdev_session_open(const char *target, const rdev_options_t *opts, rdev_session_t **out);

/* Health as rdevd's grpc.health.v1 service tells it. */
typedef enum { RDEV_HEALTH_UNKNOWN = 0, RDEV_HEALTH_SERVING = 1, RDEV_HEALTH_NOT_SERVING = 2 } rdev_health_t;

/* Asks rdevd at target how service is ("" or NULL: the server as a whole;
 * "rdev.v1.Device": the device service) through the standard gRPC health
 * check, without a session. Waits for the connection and the answer up to
 * opts' connect timeout (0: 5000 ms). RDEV_OK with *status SERVING or
 * NOT_SERVING (starting, draining: rdevd takes no new session); otherwise
 * the error: RDEV_UNAVAILABLE when nothing answered in time, and for a
 * service the server does not know the gRPC NOT_FOUND's mapping
 * (rdev_session_last_error says which). Credentials come from opts as for
 * rdev_session_open (the check itself needs none). Blocks; any thread.
 * Several servers ("a,b"): asked in turn; SERVING when all of them are,
 * else the first other answer or error. */
int rdev_health_check(const char *target, const char *service, const rdev_options_t *opts, rdev_health_t *status);

/* Makes a new random bearer token (43 URL-safe characters, 256 bits) into
 * token, which must hold at least 44 bytes. */
int rdev_token_new(char *token, size_t len);

/* The line of a tenants file that admits token: "sha256:<64 hex digits>"
 * into hash, which must hold at least 72 bytes. The server keeps only this. */
int rdev_token_hash(const char *token, char *hash, size_t len);

/* Ends the session: the server releases everything it holds for it. Frees
 * streams and events objects still open. Blocks until the call ended. */
void rdev_session_close(rdev_session_t *s);

/* 1 while the session's large copies (from 128 KiB per chunk) travel on
 * its bulk connection, a plain TCP connection (or, on rdevd's host, a unix
 * socket) of their own, which the library reads straight into a D2H
 * destination and writes straight from an H2D source; 0 while they travel
 * in-band, inside the gRPC call: before the connection is attached (over
 * TCP it attaches in the background, within moments of the open; a unix
 * socket's is attached when the open returns), when the server offers
 * none (TLS, --bulk-listen off, RDEV_BULK=off here), when the first one
 * could not be made, and after one failed until the library connected a
 * new one (it tries, with backoff, while the session lives). Results are
 * the same either way. Never blocks. */
int rdev_session_bulk(rdev_session_t *s);

/* Detail of the calling thread's last failure in this library; "" if none. */
const char *rdev_session_last_error(void);

/* Receives kernel print output for launches of this session; runs on the
 * thread that handles the session's replies: the library's receiver thread,
 * or a thread waiting in one of the session's calls. It must not call the
 * session's functions. The default writes it to stdout. As with CANN,
 * output is delivered at synchronization: at the latest before the next
 * call of the session that waits for the server (a stream synchronize
 * covering the launch, or any synchronous call made after the kernel ran)
 * returns. */
typedef void (*rdev_print_fn)(void *user, const char *text, size_t len);
void rdev_session_set_print_fn(rdev_session_t *s, rdev_print_fn fn, void *user);

/* ---- server and devices --------------------------------------------------- */

typedef struct {
  char version[32];
  char backend[32];
  char identity[64];
  int device_count;
  uint32_t max_chunk;
  /* The session's connection: RDEV_TLS_NONE (plaintext), RDEV_TLS_FULL (a
   * full TLS handshake) or RDEV_TLS_RESUMED (a TLS session this process
   * made earlier with the same server, resumed: no certificates sent or
   * checked again). */
  int tls;
} rdev_server_info_t;
enum { RDEV_TLS_NONE = 0, RDEV_TLS_FULL = 1, RDEV_TLS_RESUMED = 2 };

/* Unary Info call. Blocks for one round trip. Over several servers: the
 * first server's, with device_count the session's (every server's). */
int rdev_server_info(rdev_session_t *s, rdev_server_info_t *info);

/* A kernel the server can run, with its signature (as rdevd's Info lists
 * it): parameter names and types, in launch order. */
typedef struct {
  char name[64];
  char doc[128];
  int nparams;
  struct {
    char name[32];
    rdev_arg_type_t type;
  } params[RDEV_MAX_KERNEL_ARGS];
} rdev_kernel_info_t;

/* The kernels the server offers by name (rdev_launch): fills
 * kernels[0..min(max, count)) and sets *count to how many there are.
 * kernels may be NULL when max is 0. Blocks for one round trip (Info). */
int rdev_server_kernels(rdev_session_t *s, rdev_kernel_info_t *kernels, int max, int *count);

typedef struct {
  char name[32];
  size_t total_bytes;
  size_t free_bytes;
  size_t quota_bytes; /* the session's tenant may hold this much here (0: no quota but the device's memory) */
  size_t used_bytes;  /* and its sessions hold this much now */
} rdev_device_info_t;

/* aclrtGetDeviceCount: the devices the session may use, as the server
 * said when the session opened (no round trip; a server that did not say
 * is asked, one unary call). Over several servers: all of theirs. */
int rdev_device_count(rdev_session_t *s, int *count);
/* Name and memory of device dev (RDEV_RT_INVALID_DEVICEID when out of
 * range): one unary call, outside the session's order (frees sent just
 * before may not show yet; rdev_mem_info's figures are in order). */
int rdev_device_info(rdev_session_t *s, int dev, rdev_device_info_t *info);

/* What does not change of a device: its name and its memory. */
typedef struct {
  char name[32];
  size_t total_bytes;
} rdev_device_props_t;
/* Device dev's properties as rdevd sent them with its answer to the
 * session's open: no round trip of its own (it waits for that answer when
 * it has not come yet; a server that sent none is asked, one unary call).
 * RDEV_RT_INVALID_DEVICEID when out of range. */
int rdev_device_props(rdev_session_t *s, int dev, rdev_device_props_t *props);
/* aclrtSetDevice: selects the device later mallocs, streams and events of this
 * session use. Checked against the device count (rdev_device_count). */
int rdev_device_set(rdev_session_t *s, int dev);
/* aclrtGetDevice. */
int rdev_device_get(rdev_session_t *s, int *dev);
/* aclrtGetMemInfo for the current device. */
int rdev_mem_info(rdev_session_t *s, size_t *free_bytes, size_t *total_bytes);

/* ---- memory --------------------------------------------------------------- */

/* aclrtMalloc on the current device: waits for no reply. The library
 * places the allocation in the session's address window of the device
 * and *dptr gets its address; the server backs it with zeroed device
 * memory before any later request of the session runs. An allocation the
 * session alone would not fit (the tenant's quota, the device's memory,
 * as the open's answer gave them) waits for the server's answer: its
 * refusal (RDEV_QUOTA_EXCEEDED, RDEV_RT_DEVICE_OOM), or the memory. One
 * the server refuses later (memory other sessions hold; before the open's
 * answer, any) fails the work that names it, and the next synchronize of
 * the session, with RDEV_RT_MEMORY_ALLOCATION; free it as usual. size 0
 * is RDEV_INVALID_PARAM. */
int rdev_malloc(rdev_session_t *s, void **dptr, size_t size, rdev_mem_policy_t policy);
/* Whether p lies inside a device allocation this session made (1) or not
 * (0: host memory, or an address this library does not know). Never
 * blocks. */
int rdev_ptr_on_device(rdev_session_t *s, const void *p);
/* aclrtFree: dptr must be what rdev_malloc returned. Returns at once,
 * without a round trip, for an allocation this session knows (the server
 * frees it in the session's order; were it to refuse, the next
 * rdev_stream_synchronize of any stream would report it); any other dptr
 * is the server's to judge, one round trip (RDEV_INVALID_PARAM). */
int rdev_free(rdev_session_t *s, void *dptr);
/* aclrtMallocHost: local page-aligned host memory for transfers, a mapping
 * of its own, resident on return (faulted in, as CANN's pinned memory is;
 * on transparent huge pages from 2 MiB where the kernel offers them).
 * On rdevd's own host (a unix-socket session: rdev_session_bulk is 1) it
 * is shared with rdevd, which copies between the device and it directly:
 * copies from and into it carry no bytes over any socket (one round trip
 * to register it first). Blocks while the pages are faulted in; its
 * contents are unspecified. RDEV_BAD_ALLOC when it cannot be mapped or
 * faulted in. Over several servers it is shared with the first. */
int rdev_malloc_host(rdev_session_t *s, void **ptr, size_t size);
/* aclrtFreeHost: ptr must be what rdev_malloc_host returned (another
 * pointer is RDEV_INVALID_PARAM where it can be told apart). */
int rdev_free_host(rdev_session_t *s, void *ptr);

/* aclrtMemcpy (no stream is synchronized). A device address outside the
 * session's allocations, or a range past one, is RDEV_INVALID_PARAM at
 * once; count > dest_max is RDEV_RT_PARAM_INVALID; count 0 a no-op
 * success. D2H and D2D copies, and H2D copies over 4 MiB or on the bulk
 * connection (from 128 KiB), return when the copy is done. Smaller H2D
 * copies are copied into the session's next message and return at once:
 * src may be reused, the server writes them before anything the session
 * sends later runs, and a refusal is the session's sticky error, reported
 * by the next synchronize. A D2D copy between devices of different
 * servers (a session over several) travels through the client, 8 MiB at a
 * time, and returns when it is done. */
int rdev_memcpy(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind);
/* aclrtMemcpyAsync: queues the copy on stream and returns. An H2D copy
 * returns once src's bytes have left it, so src may be reused at once
 * (CANN asks more: that it stay until the stream is synchronized): on the
 * bulk connection (chunks from 128 KiB) once they are in the socket, so it
 * may wait for rdevd to take them; else copied into the request. From
 * rdev_malloc_host memory (same host) the device reads src when the copy
 * runs: keep it until the stream is synchronized, as CANN's pinned
 * memory. A D2H copy of 1 MiB or more first faults in those of dst's pages
 * not yet present (the copy would fault them in anyway), which takes about
 * a millisecond per 6 MiB; dst's contents are not changed by it.
 * Over several servers, a copy of memory on another server than the
 * stream's, or a D2D copy between servers, first synchronizes stream (its
 * error is the copy's), then copies as rdev_memcpy does. */
int rdev_memcpy_async(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count,
                      rdev_memcpy_kind_t kind, rdev_stream_t *stream);
/* aclrtMemset on device memory: waits for no reply; the server sets it
 * before anything the session sends later runs, and a refusal is the
 * session's sticky error, reported by the next synchronize. A range
 * outside the session's allocations is RDEV_INVALID_PARAM at once. */
int rdev_memset(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count);
/* aclrtMemsetAsync. Over several servers, memory on another server than
 * the stream's is set as rdev_memset does, once stream is synchronized. */
int rdev_memset_async(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count, rdev_stream_t *stream);

/* Conditions of rdev_value_wait (aclrtValueWait's flags). */
typedef enum {
  RDEV_VALUE_WAIT_GEQ = 0, /* *dptr >= value */
  RDEV_VALUE_WAIT_EQ = 1,  /* *dptr == value */
  RDEV_VALUE_WAIT_AND = 2, /* (*dptr & value) != 0 */
  RDEV_VALUE_WAIT_NOR = 3  /* ~(*dptr | value) != 0 */
} rdev_value_wait_t;

/* aclrtValueWrite (async): in stream order, stores the 64-bit value at
 * dptr (8 bytes of device memory, 8-byte aligned). */
int rdev_value_write(rdev_stream_t *stream, void *dptr, uint64_t value);
/* aclrtValueWait (async): the stream's later work waits until the 64-bit
 * value at dptr meets cond against value, as written by any stream, copy
 * or kernel; the wait holds no execution slot. timeout_ms > 0: it gives up
 * after that long, RDEV_RT_WAIT_TIMEOUT at the next synchronize; 0: for
 * ever. */
int rdev_value_wait(rdev_stream_t *stream, void *dptr, uint64_t value, rdev_value_wait_t cond, uint32_t timeout_ms);

/* ---- streams -------------------------------------------------------------- */

/* aclrtCreateStream on the current device. Returns at once, without a
 * round trip: the stream is named by a handle of the session's choosing. A
 * server that cannot make it (a stream quota, its memory) fails the
 * stream's work and its next rdev_stream_synchronize reports why. */
int rdev_stream_create(rdev_session_t *s, rdev_stream_t **stream);
/* aclrtDestroyStream: waits for the work queued on the stream, then
 * destroys it, returning the first error of that work not yet reported (a
 * refused create's first). When a synchronize saw all the work queued on
 * it done, there is none to wait for: it returns at once, without a round
 * trip. stream is freed whatever the result. */
int rdev_stream_destroy(rdev_stream_t *stream);
/* aclrtSynchronizeStream: blocks until all work queued before it has run and
 * its D2H data has arrived (one round trip); returns the first error of the
 * stream's work since its last synchronize, else the first refusal of a
 * request that names no stream (rdev_free, rdev_event_create) that no
 * synchronize reported yet. */
int rdev_stream_synchronize(rdev_stream_t *stream);
/* As synchronize, giving up after timeout_ms (-1 = forever) with
 * RDEV_RT_STREAM_SYNC_TIMEOUT; the work stays queued and its errors pending. */
int rdev_stream_synchronize_timeout(rdev_stream_t *stream, int32_t timeout_ms);
/* aclrtSetStreamFailureMode: stop nonzero = once a task of the stream
 * fails, its later device work (copies, memsets, kernels, value writes) is
 * skipped until the synchronize that reports the error; a skipped
 * device-to-host copy leaves zeros. Zero (the default): every task runs.
 * One round trip; it holds for work queued after the call. */
int rdev_stream_set_failure_mode(rdev_stream_t *stream, int stop);
/* aclrtStreamAbort: discards the work queued on the stream that has not
 * started (a running delay is cut short); what waited for it (a
 * synchronize, async D2H copies, host functions) gets
 * RDEV_RT_STREAM_ABORT, as does the next synchronize. The stream stays
 * usable. One round trip. */
int rdev_stream_abort(rdev_stream_t *stream);
/* aclrtStreamQuery: *done = 1 when the stream is idle. One round trip. */
int rdev_stream_query(rdev_stream_t *stream, int *done);

/* ---- kernels -------------------------------------------------------------- */

typedef struct {
  rdev_arg_type_t type; /* RDEV_ARG_PTR: v.ptr is a device pointer from rdev_malloc, plus an offset */
  union {
    void *ptr;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
  } v;
} rdev_arg_t;

/* Launches built-in kernel `name` with `blocks` blocks on stream (async).
 * A pointer argument outside the session's allocations is
 * RDEV_INVALID_PARAM at once. The server checks the arguments against the
 * kernel's signature and every pointer's extent against its buffer; a
 * refusal surfaces at the next synchronize. Kernel print output goes to
 * the session's print function. */
int rdev_launch(rdev_stream_t *stream, const char *name, uint32_t blocks, const rdev_arg_t *args, int nargs);

/* ---- kernel binaries ------------------------------------------------------ */

typedef struct rdev_binary rdev_binary_t;     /* a kernel binary loaded on the server */
typedef struct rdev_function rdev_function_t; /* one of its kernels */

/* aclrtBinaryLoadFromData: sends the binary (1 byte to 1 MiB; on the sim,
 * the rdev sim binary format of docs/sim-binary.md) and waits for the
 * server's check of it. data is not kept. The binary lives until
 * rdev_binary_unload or the session's end. */
int rdev_binary_load(rdev_session_t *s, const void *data, size_t len, rdev_binary_t **out);
/* aclrtBinaryUnLoad: its function objects are freed with it; launches
 * already queued still run. One round trip; b is freed whatever the result. */
int rdev_binary_unload(rdev_binary_t *b);
/* aclrtBinaryGetFunction / ByEntry: one round trip (RDEV_UNKNOWN_KERNEL
 * when the binary has no such kernel). The function lives with its binary. */
int rdev_binary_function(rdev_binary_t *b, const char *name, rdev_function_t **f);
int rdev_binary_function_by_entry(rdev_binary_t *b, uint64_t entry, rdev_function_t **f);
/* rdev_binary_function (name not NULL) or _by_entry (name NULL: entry)
 * without a round trip, for a caller that knows the binary has the kernel
 * (its text declares it): the lookup is sent under a handle the library
 * picks and *f is set at once. A refusal is the error of every launch of
 * *f at its stream's next synchronize, as with rdev_binary_load_function. */
int rdev_binary_function_async(rdev_binary_t *b, const char *name, uint64_t entry, rdev_function_t **f);
/* rdev_binary_load, then rdev_binary_function (name not NULL) or
 * rdev_binary_function_by_entry (name NULL: entry), without a round trip:
 * both are sent at once, under handles the library picks, and *b and *f
 * are set. A refusal of either (a binary the server takes not, a kernel
 * it lacks) is the error of every launch of *f, reported on the launch's
 * stream at its next synchronize with the refusal's code (e.g.
 * RDEV_UNKNOWN_KERNEL). Unload *b as any binary (its unload answers OK
 * when the load was refused). rdevd keeps a session's latest 64 such
 * refusals (a refused load takes two, its own and its lookup's): an older
 * one reads as an unknown handle (RDEV_INVALID_RESOURCE_HANDLE). Only
 * local checks fail the call itself. */
int rdev_binary_load_function(rdev_session_t *s, const void *data, size_t len, const char *name, uint64_t entry,
                              rdev_binary_t **b, rdev_function_t **f);
/* aclrtLaunchKernelWithHostArgs (async): launches f with `blocks` blocks on
 * stream; args[0..len) is the argument blob laid out as f's binary
 * declares, copied before the call returns. The server checks every device
 * pointer in it against the session's allocations; a refusal surfaces at
 * the next synchronize. */
int rdev_launch_function(rdev_stream_t *stream, rdev_function_t *f, uint32_t blocks, const void *args, size_t len);

/* ---- operators ------------------------------------------------------------ */

/* Queues operator call c (rdev/ops.h: an operator of rdev_op_table() and
 * its arguments, tensors naming device addresses of this session) on
 * stream, async. The call is checked here first, as aclnn's first phase
 * checks it (rdev_op_check: RDEV_OP_PARAM_NULLPTR, RDEV_OP_PARAM_INVALID),
 * then encoded and copied: c and what it points at may be reused once the
 * call returns. rdevd checks it again and every tensor's reach against the
 * session's allocations on the stream's device; a refusal, and any error
 * of the run, surfaces at the stream's next synchronize. */
int rdev_op_launch(rdev_stream_t *stream, const rdev_op_call_t *c);

/* The same for a call already encoded (rdev_op_encode), len bytes at blob;
 * checked by rdevd only. */
int rdev_op_launch_encoded(rdev_stream_t *stream, const void *blob, size_t len);

/* ---- host functions ------------------------------------------------------- */

typedef struct rdev_host_call rdev_host_call_t; /* one host function the stream reached */

/* Runs on the session's host-call thread, one call at a time in the order
 * the streams reached them, so it may call the session's functions (but
 * not rdev_session_close). status is RDEV_OK when the stream reached the
 * call; else the call never will (the server refused it, or the session
 * ended: then every call not yet run runs with the error). Whatever the
 * status, the call stays open until rdev_host_call_done(call). */
typedef void (*rdev_host_fn)(rdev_host_call_t *call, void *user, int status);

/* aclrtLaunchHostFunc / aclrtLaunchCallback: queues fn on stream (async)
 * and returns once queued; fn runs on the client when the stream reaches
 * it. block nonzero: the stream's later work waits until
 * rdev_host_call_done(call), holding no execution slot on the device
 * meanwhile; zero: the stream goes on at once. */
int rdev_launch_host_func(rdev_stream_t *stream, int block, rdev_host_fn fn, void *user);

/* Ends a call fn was given, exactly once, from any thread, before
 * rdev_session_close: a blocking call's stream goes on (a unary call to
 * the server, so it blocks for a round trip, retried while the server
 * cannot be reached and the session lives). call is freed. A blocking
 * launch on a server that cannot release it is RDEV_API_NOT_SUPPORT. */
void rdev_host_call_done(rdev_host_call_t *call);

/* ---- events --------------------------------------------------------------- */

/* aclrtCreateEvent on the current device. Returns at once, as
 * rdev_stream_create; a refusal is reported by the next
 * rdev_stream_synchronize of any stream, and the event's uses fail. */
int rdev_event_create(rdev_session_t *s, rdev_event_t **ev);
/* aclrtDestroyEvent: returns at once, without a round trip; ev is freed
 * whatever the result. */
int rdev_event_destroy(rdev_event_t *ev);
/* aclrtRecordEvent (async). On a stream of another server than the
 * event's (a session over several servers): RDEV_API_NOT_SUPPORT. */
int rdev_event_record(rdev_event_t *ev, rdev_stream_t *stream);
/* aclrtStreamWaitEvent (async). An event of another server than the
 * stream's cannot be waited for there: the call then blocks until the
 * event completes (rdev_event_synchronize, its result), so that whatever
 * is queued on stream after it runs after the event's work. It waits
 * without a timeout: work the event's stream waits for (a value write, a
 * host function) must not come later from the same thread. */
int rdev_stream_wait_event(rdev_stream_t *stream, rdev_event_t *ev);
/* aclrtSynchronizeEvent: blocks until the event's latest record completed;
 * timeout_ms -1 = forever, else RDEV_RT_WAIT_TIMEOUT. */
int rdev_event_synchronize(rdev_event_t *ev, int32_t timeout_ms);
/* aclrtQueryEventStatus: *done = 1 when complete. */
int rdev_event_query(rdev_event_t *ev, int *done);
/* aclrtEventGetTimestamp: when the event's latest record completed, in ns
 * of the device's clock. One round trip; RDEV_INVALID_PARAM when it is
 * not recorded or not yet complete. */
int rdev_event_timestamp(rdev_event_t *ev, uint64_t *ns);
/* aclrtEventElapsedTime in milliseconds. Events of different servers
 * share no clock: RDEV_API_NOT_SUPPORT. */
int rdev_event_elapsed_ms(float *ms, rdev_event_t *start, rdev_event_t *end);

#ifdef __cplusplus
}
#endif
#endif
