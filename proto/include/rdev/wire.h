/*
 * rdev/wire.h — the codec shared by rdevd and the client library: nanopb
 * messages to and from gRPC byte buffers, method paths and wire limits.
 * Messages are decoded straight from the received slices (never flattened)
 * and a payload travels as its own slice behind the nanopb-encoded fields,
 * so a payload can be sent without copying it. wire.c encodes (and holds
 * the small helpers), wire_decode.c decodes.
 */
#ifndef RDEV_WIRE_H
#define RDEV_WIRE_H

#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <pb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc/health/v1/health.pb.h"
#include "rdev/v1/rdev.pb.h"

#define RDEV_WIRE_METHOD_SESSION "/rdev.v1.Device/Session"
#define RDEV_WIRE_METHOD_INFO "/rdev.v1.Device/Info"
#define RDEV_WIRE_METHOD_LIST_DEVICES "/rdev.v1.Device/ListDevices"
#define RDEV_WIRE_METHOD_HOST_FUNC_DONE "/rdev.v1.Device/HostFuncDone"
#define RDEV_WIRE_METHOD_SUBMIT_JOB "/rdev.v1.Device/SubmitJob"
#define RDEV_WIRE_METHOD_GET_JOB "/rdev.v1.Device/GetJob"
#define RDEV_WIRE_METHOD_WATCH_JOB "/rdev.v1.Device/WatchJob"
#define RDEV_WIRE_METHOD_CANCEL_JOB "/rdev.v1.Device/CancelJob"
#define RDEV_WIRE_METHOD_LIST_JOBS "/rdev.v1.Device/ListJobs"
#define RDEV_WIRE_METHOD_FETCH_OUTPUT "/rdev.v1.Device/FetchOutput"
#define RDEV_WIRE_METHOD_HEALTH_CHECK "/grpc.health.v1.Health/Check"

/* Hand-offs through gRPC. gRPC C core is not built for ThreadSanitizer, so
 * when one thread gives gRPC something (a batch's tag, a slice's release
 * argument) that another thread gets back, GIVE and TAKE tell TSan that the
 * first happened before the second, as gRPC guarantees. No-ops otherwise. */
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define RDEV_HANDOFF_GIVE(p) __tsan_release((void *)(p))
#define RDEV_HANDOFF_TAKE(p) __tsan_acquire((void *)(p))
#else
#define RDEV_HANDOFF_GIVE(p) ((void)(p))
#define RDEV_HANDOFF_TAKE(p) ((void)(p))
#endif

/* Initial metadata key rdevd sends when it accepted a Session; a refused
 * Session ends with a status and never carries it. */
#define RDEV_WIRE_SESSION_OPEN_KEY "rdev-session"
/* Sent with it: the Read and Write bytes one batch may move on this server
 * (decimal). Servers before it took RDEV_WIRE_MAX_CHUNK and do not send it. */
#define RDEV_WIRE_BATCH_XFER_KEY "rdev-batch-xfer"
/* And the session's key: 32 hex digits, secret to the client, which names
 * the session in HostFuncDone calls. */
#define RDEV_WIRE_SESSION_KEY_KEY "rdev-session-key"
#define RDEV_WIRE_SESSION_KEY_LEN 32
/* And how many devices the session may use (rdev_device_count without a
 * call of its own). */
#define RDEV_WIRE_DEVICES_KEY "rdev-devices"
#define RDEV_WIRE_MAX_DEVICES 64 /* ListDevicesReply holds at most this many */
/* And, per device in order, comma-separated, "quota/total": the tenant's
 * quota on the device (0: none) and the device's memory, in bytes
 * (decimal). A client that places its own allocations refuses one at once
 * when the session alone would pass either. */
#define RDEV_WIRE_MEM_LIMITS_KEY "rdev-mem-limits"
/* And, per device in order, comma-separated, its name (ListDevices'; a ','
 * in it is sent as '_'): a program reads it without a call of its own. */
#define RDEV_WIRE_DEVICE_NAMES_KEY "rdev-device-names"

/* Client-placed device addresses (rdev.proto, Malloc.addr): device d's
 * window of a session is [RDEV_WIRE_VA_BASE + tag << 46 + d << 40, +1 TiB)
 * for any tag below RDEV_WIRE_VA_TAGS (a client picks one per session, so
 * that two sessions of one process seldom share addresses). It lies above
 * every host address and apart from the addresses servers place. */
#define RDEV_WIRE_VA_BASE ((uint64_t)1 << 59)
#define RDEV_WIRE_VA_DEV_SHIFT 40
#define RDEV_WIRE_VA_TAG_SHIFT 46
#define RDEV_WIRE_VA_TAGS 4096
#define RDEV_WIRE_VA_WINDOW ((uint64_t)1 << RDEV_WIRE_VA_DEV_SHIFT)

/* The start of device dev's window under tag (both in range). */
static inline uint64_t rdev_wire_va_window(uint32_t tag, int dev) {
  return RDEV_WIRE_VA_BASE + ((uint64_t)tag << RDEV_WIRE_VA_TAG_SHIFT) + ((uint64_t)dev << RDEV_WIRE_VA_DEV_SHIFT);
}

/* Whether [addr, addr+size) (size > 0) lies inside one window of device
 * dev (any device: dev -1), whatever its tag. */
static inline int rdev_wire_va_inside(uint64_t addr, uint64_t size, int dev) {
  if (addr < RDEV_WIRE_VA_BASE || dev < -1 || dev >= RDEV_WIRE_MAX_DEVICES) return 0;
  uint64_t v = addr - RDEV_WIRE_VA_BASE;
  if ((v >> RDEV_WIRE_VA_TAG_SHIFT) >= RDEV_WIRE_VA_TAGS) return 0;
  if (dev >= 0 && (int)((v >> RDEV_WIRE_VA_DEV_SHIFT) & 63) != dev) return 0;
  uint64_t off = v & (RDEV_WIRE_VA_WINDOW - 1);
  return size > 0 && size <= RDEV_WIRE_VA_WINDOW - off;
}
/* Resume (rdev.proto, "Resume"). In the open metadata: how long rdevd
 * keeps the session once its call broke (ms, decimal; absent: not at all,
 * as for a client that did not ask). */
#define RDEV_WIRE_RESUME_MS_KEY "rdev-resume-ms"
/* In a new Session call's metadata: "1" when the client resumes broken
 * sessions (it acknowledges replies and says bye before its half-close);
 * rdevd keeps only such sessions through a break. */
#define RDEV_WIRE_RESUMABLE_KEY "rdev-resumable"
/* In a Session call's metadata: the key of the session it takes over,
 * and the session's replies the client received (decimal). */
#define RDEV_WIRE_RESUME_KEY "rdev-resume"
#define RDEV_WIRE_RESUME_ACKED_KEY "rdev-resume-acked"
/* In the answer (initial metadata, with RDEV_WIRE_SESSION_OPEN_KEY
 * "resumed"): the session's messages rdevd received (decimal). */
#define RDEV_WIRE_RESUME_RECEIVED_KEY "rdev-resume-received"
/* The details with which a draining rdevd ends its sessions: a client
 * does not try to resume them. */
#define RDEV_WIRE_DRAIN_DETAILS "server draining"
/* Each side acknowledges at least this often. */
#define RDEV_WIRE_ACK_EVERY 256
#define RDEV_WIRE_ACK_BYTES ((size_t)4 << 20)
/* ListJobsReply holds at most this many jobs (job.proto): rdevd sends no
 * more, and the client refuses a reply with more before decoding it (its
 * jobs are a pointer field: the decoder allocates a JobStatus per entry). */
#define RDEV_WIRE_MAX_JOBS_LISTED 128

/* Stream and event handles a client chooses (StreamCreate.handle,
 * EventCreate.handle) have this bit set; those the server picks never do. */
#define RDEV_WIRE_CLIENT_HANDLE ((uint64_t)1 << 63)

/* The bulk connection. A plaintext server may offer each session a TCP
 * connection of its own for Read data, beside its gRPC call: the open
 * metadata then names the port (decimal) on the address the call reached.
 * The client connects and sends RDEV_WIRE_BULK_MAGIC, the session key and
 * the connection's number, a little-endian uint32 from 1 (RDEV_WIRE_BULK_HELLO
 * bytes in all); the server answers (RDEV_WIRE_BULK_ANSWER bytes) with the
 * magic, the count of DATA messages (below) it received whole on the
 * session's connections so far (a little-endian uint64) and its flags (a
 * little-endian uint32: RDEV_WIRE_BULK_KEEPS), once the connection is the
 * session's. It closes it instead when the key names no session, one that
 * is not connected, or one whose connection has this number or a higher
 * one, or whose last connection's threads have not let go of it yet: try
 * again.
 * A connection with a higher number replaces the session's last one: the
 * client makes one when it lost the last. From then on the
 * server sends frames: a header of the Read's seq and its byte count
 * (two little-endian uint64), then that many bytes. A Read asked for with
 * bulk whose bytes go as a frame is answered in-band, in its place among
 * the replies, with Reply.bulk, the number of the connection the frame
 * went on (Reply.bulk_conn) and no data (the frame may arrive before or
 * after that answer); otherwise its data comes in-band as always. The
 * other way, a Write asked for with bulk (Write.bulk, Write.count, no
 * data, Write.bulk_conn the connection its bytes go on) has its bytes sent
 * by the client as a DATA message: the header of
 * "Host memory regions" below (kind RDEV_WIRE_BULK_DATA, id 0, size the
 * byte count, at most RDEV_WIRE_MAX_CHUNK), the Write's seq (a
 * little-endian uint64), then the bytes; DATA messages go in the order of
 * their Writes. The client tells the server how many Read frames it has
 * received whole on the connection with ACK messages (the header of "Host
 * memory regions" below: kind RDEV_WIRE_BULK_ACK, id 0, size that count,
 * which never falls; nothing follows), and a resumable session's server
 * keeps each frame until it is counted. Either side may close at any
 * time: the server sends the frames not counted again, in order, on the
 * client's next connection (where the count starts again from 0; the
 * client writes a frame it got twice once). The session goes on in-band
 * until the client's next connection is in; a session whose call broke
 * takes a new connection too.
 * DATA messages lost with a connection: a server with RDEV_WIRE_BULK_KEEPS
 * (a resumable session's) keeps their Writes waiting for them, and the
 * client sends them again first thing on its next connection, in order,
 * from the one after the count the answer gave (so each arrives once).
 * Such a server tells the client of the DATA messages it counted with
 * RECEIPT control frames, as they arrive, so that the client keeps only
 * the bytes still in flight. A server without it, or one whose client
 * stayed away for the session's resume window, fails those Writes
 * (RDEV_UNAVAILABLE). */
#define RDEV_WIRE_BULK_PORT_KEY "rdev-bulk-port"
/* A server listening on a unix socket offers the bulk connection on one of
 * its own, named by this key (its path), the same way. */
#define RDEV_WIRE_BULK_PATH_KEY "rdev-bulk-path"
#define RDEV_WIRE_BULK_MAGIC "RDEVBLK4"
#define RDEV_WIRE_BULK_MAGIC_LEN 8
#define RDEV_WIRE_BULK_HELLO (RDEV_WIRE_BULK_MAGIC_LEN + RDEV_WIRE_SESSION_KEY_LEN + 4)
#define RDEV_WIRE_BULK_ANSWER (RDEV_WIRE_BULK_MAGIC_LEN + 8 + 4)
#define RDEV_WIRE_BULK_KEEPS 1u
#define RDEV_WIRE_BULK_HEADER 16

/* Host memory regions (same host: a unix-socket bulk connection only). The
 * client may send the server messages of RDEV_WIRE_BULK_HEADER bytes on
 * its bulk connection: a little-endian uint32 kind, uint32 region id
 * (nonzero, the client's choice) and uint64 size. REGISTER carries, as
 * SCM_RIGHTS, a memfd of at least size bytes sealed against shrinking;
 * rdevd maps it and answers with a control frame: seq 0, holding a header
 * like the client's (RDEV_WIRE_BULK_HEADER bytes: kind REGISTER, the id,
 * and as size the status, a little-endian int32 widened to 64 bits; 0:
 * registered). A RECEIPT is a control frame of kind RDEV_WIRE_BULK_RECEIPT,
 * id 0, and as size the count of DATA messages received whole so far. From then on Reads and
 * Writes may name the region (host_region, host_offset): rdevd copies
 * between the device and that memory itself, on the request's stream,
 * with no byte on any connection. UNREGISTER (no answer) ends the region;
 * work already queued on it completes. A session has at most
 * RDEV_WIRE_MAX_REGIONS regions of RDEV_WIRE_MAX_REGION_BYTES in all. */
enum {
  RDEV_WIRE_REGION_REGISTER = 1,
  RDEV_WIRE_REGION_UNREGISTER = 2,
  RDEV_WIRE_BULK_DATA = 3,
  RDEV_WIRE_BULK_ACK = 4,
  RDEV_WIRE_BULK_RECEIPT = 5
};
#define RDEV_WIRE_MAX_REGIONS 256
#define RDEV_WIRE_MAX_REGION_BYTES ((uint64_t)16 << 30)

/* Both ends of a bulk connection (proto/bulk.c). */
struct iovec;
/* The low bytes (at most 8) of v at p, little-endian; and back. */
void rdev_wire_le_put(uint8_t *p, uint64_t v, int bytes);
uint64_t rdev_wire_le_get(const uint8_t *p, int bytes);
/* The header of "Host memory regions" (the client's messages, rdevd's
 * control frames): kind, id, size. */
void rdev_wire_bulk_header_put(uint8_t hdr[RDEV_WIRE_BULK_HEADER], uint32_t kind, uint32_t id, uint64_t size);
/* Sends iov[0..n) whole on the stream socket fd (blocking; no SIGPIPE;
 * the iovecs are used up): 0, or -1 with errno when the connection failed. */
int rdev_wire_send_all(int fd, struct iovec *iov, int n);
/* Receives exactly len bytes into buf from the stream socket fd
 * (blocking); and reads len bytes and drops them. True, or false at the
 * connection's end or on an error. */
bool rdev_wire_recv_all(int fd, void *buf, size_t len);
bool rdev_wire_drain(int fd, uint64_t len);
/* Options for a TCP bulk connection (a unix socket is left alone): no
 * Nagle delay; keepalive probes, so that an idle connection whose peer is
 * gone fails within about 25 s (and what waits on it with it) instead of
 * hanging. No user timeout: Linux applies one to a closed window too, and
 * a peer may rightly hold its window closed for long (backpressure). */
void rdev_wire_bulk_sockopts(int fd);

/* The limits of rdev.proto, which states each of them. */
#define RDEV_WIRE_MAX_CHUNK (1u << 20) /* payload bytes per Write/Read */
#define RDEV_WIRE_PAYLOAD_FIELD 100    /* Request.data and Reply.data */
#define RDEV_WIRE_BATCH_FIELD 30       /* Request.batch */
#define RDEV_WIRE_MAX_BATCH 128        /* requests in one Request.batch */
/* Read and Write bytes one message may move in all (its batch and its own
 * request). Eight chunks: a sync D2H sends a Read per chunk, and one
 * message for eight of them made D2H 8-12% faster than one per message;
 * rdevd may overshoot its max-inflight by this much, as it checks it
 * between messages. */
#define RDEV_WIRE_MAX_BATCH_XFER (8u * RDEV_WIRE_MAX_CHUNK)
#define RDEV_WIRE_MAX_KERNEL_NAME 63 /* bytes of Launch.kernel */
#define RDEV_WIRE_MAX_ARGS 8         /* Launch.args */
/* Bytes a request's fields take besides its payload, at most: the largest
 * is a Launch with a 63-byte name and eight pointer arguments, about 200
 * bytes with every varint at its longest, plus the payload's field header and the
 * batch element's own (tests/unit/test_wire.c checks the bound). */
#define RDEV_WIRE_MAX_REQUEST_FIELDS 512u
/* The largest message the contract allows: a full batch with its own
 * request, moving the most data. gRPC refuses a larger one and ends the
 * call with RESOURCE_EXHAUSTED. Replies are smaller. */
#define RDEV_WIRE_MAX_MESSAGE (RDEV_WIRE_MAX_BATCH_XFER + (RDEV_WIRE_MAX_BATCH + 1u) * RDEV_WIRE_MAX_REQUEST_FIELDS)

/* A payload decoded into memory of its own (malloc'd, owned by whoever
 * decoded it: free(data)). */
typedef struct {
  uint8_t *data;
  size_t len;
  size_t max;   /* decode refuses payloads longer than this... */
  int oversize; /* ...and sets this when it did */
} rdev_wire_bytes_t;

/* Points a callback field at a rdev_wire_bytes_t for decoding. */
void rdev_wire_bytes_decoder(pb_callback_t *field, rdev_wire_bytes_t *b);

/* A payload decoded without copying: references to the received slices
 * that hold it, in order (beyond RDEV_WIRE_MAX_PARTS slices, the rest is
 * copied into one more). Only for messages decoded by rdev_wire_decode.
 * Release with rdev_wire_payload_release. gRPC 1.51 hands a 1 MiB payload
 * over in 80-85 slices (one per 16 KiB HTTP/2 frame, some split where a
 * socket read ended): room for twice that. */
#define RDEV_WIRE_MAX_PARTS 160
typedef struct {
  grpc_slice parts[RDEV_WIRE_MAX_PARTS];
  int nparts;
  size_t len;
  size_t max;   /* decode refuses payloads longer than this... */
  int oversize; /* ...and sets this when it did */
} rdev_wire_payload_t;

/* Readies p for decoding payloads of at most max bytes (only the counters:
 * zeroing the slice array would cost 5 KiB per request). */
static inline void rdev_wire_payload_init(rdev_wire_payload_t *p, size_t max) {
  p->nparts = 0;
  p->len = 0;
  p->max = max;
  p->oversize = 0;
}

void rdev_wire_payload_decoder(pb_callback_t *field, rdev_wire_payload_t *p);
void rdev_wire_payload_release(rdev_wire_payload_t *p);

/* Decodes the message in bb (any slice layout) into msg, whose callback fields
 * the caller has set up. Returns false on malformed input; *err (if non-NULL)
 * gets nanopb's reason. Does not take ownership of bb. The callbacks of
 * rdev_wire_* decoders refuse a field that arrives with a wire type other
 * than length-delimited. */
bool rdev_wire_decode(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char **err);
/* rdev_wire_decode for a message whose strings are names and text: false
 * too, with *err "a string field holds a NUL byte", when one of its string
 * fields (nested ones included) does, which C strings would cut short. The
 * caller pb_releases msg either way. */
bool rdev_wire_decode_text(grpc_byte_buffer *bb, const pb_msgdesc_t *fields, void *msg, const char **err);

/* Counts the top-level fields numbered `field` in the message in bb without
 * decoding them (the others are skipped), stopping once it counted more
 * than max: for a repeated pointer field, whose entries the decoder
 * allocates one by one, so that a message with too many is refused before
 * anything is allocated. Returns false on a malformed message (*err, if
 * non-NULL, says why); *count gets those counted either way. */
bool rdev_wire_count_field(grpc_byte_buffer *bb, uint32_t field, size_t max, size_t *count, const char **err);

/* Whether a decode callback was given a length-delimited field of a
 * message that rdev_wire_decode is decoding (nanopb hands a callback a
 * field of any other wire type as a small buffer stream of its own). */
bool rdev_wire_is_bytes(const pb_istream_t *stream);

/* ---- requests as rdevd decodes them ------------------------------------ */

/* A Request with its callback fields decoded: the payload as slice
 * references, the Launch name and arguments (kept up to their limits; the
 * counts say what was sent, so a handler can refuse what is over). */
typedef struct {
  rdev_v1_Request q;
  rdev_wire_payload_t data;                   /* Request.data (data.oversize: over RDEV_WIRE_MAX_CHUNK, not kept) */
  char kernel[RDEV_WIRE_MAX_KERNEL_NAME + 1]; /* Launch.kernel, NUL-terminated, cut at the limit */
  size_t kernel_len;                          /* its length as sent */
  int kernel_nul;                             /* it held a NUL byte */
  rdev_v1_Arg args[RDEV_WIRE_MAX_ARGS];       /* Launch.args, the first RDEV_WIRE_MAX_ARGS */
  int nargs;                                  /* how many were sent */
} rdev_wire_request_t;

/* Called for each request of a message (rdev_wire_walk): index 0, 1, ...
 * for the batch's requests, -1 for the message's own. err is NULL when r
 * decoded, else why it is malformed (r then holds what decoded before the
 * fault). r->data is released after the call: a visitor keeps slices by
 * moving them out (nparts = 0). Returns 0 to go on, RDEV_WIRE_STOP to
 * stop, RDEV_WIRE_CUT to pass over the rest of the batch unvisited (the
 * message's own request is still visited). */
#define RDEV_WIRE_STOP 1
#define RDEV_WIRE_CUT 2
typedef int (*rdev_wire_visit_fn)(void *arg, rdev_wire_request_t *r, int index, const char *err);

typedef struct {
  int skip;       /* in: batch requests to pass over undecoded (resuming after a stop) */
  int seen;       /* out: batch requests passed over or visited without stopping */
  int stopped;    /* out: a visit returned RDEV_WIRE_STOP (the one at index `seen`, or the own at -1) */
  uint64_t acked; /* out: the message's Request.acked (0: none, or malformed) */
  int bye;        /* out: its Request.bye */
} rdev_wire_walk_t;

/* Decodes the Request message in bb and visits its requests in the order
 * they run: each batch request as it is decoded, then the message's own
 * request, which is visited when it has an op, when the message has no
 * batch (unless it is an acknowledgement or a bye: only Request.acked
 * or Request.bye), or when
 * the message itself is malformed (err set). A malformed
 * batch request is visited with err and the walk goes on with the next: a
 * message whose batch holds only malformed requests gets no visit of its
 * own. Every payload is at most max_chunk bytes (longer ones are skipped
 * and flagged oversize). Does not take bb. */
void rdev_wire_walk(grpc_byte_buffer *bb, size_t max_chunk, rdev_wire_walk_t *w, rdev_wire_visit_fn visit, void *arg);

/* Sets l's callback fields to encode kernel (NUL-terminated) and the nargs
 * arguments at args; both must outlive the encoding. */
typedef struct {
  const char *kernel;
  const rdev_v1_Arg *args;
  int nargs;
} rdev_wire_launch_src_t;
void rdev_wire_launch_encoder(rdev_v1_Launch *l, const rdev_wire_launch_src_t *src);

/* Replaces each byte of s[0..len) that is not part of valid UTF-8 with '?',
 * so that a proto3 string field may carry it; returns how many it replaced. */
size_t rdev_wire_utf8_fix(char *s, size_t len);

/* Encodes msg (its callback fields unset) and, when payload is non-NULL,
 * field RDEV_WIRE_PAYLOAD_FIELD as bytes made of *payload, which is referenced,
 * not copied (the caller keeps its own reference). Returns a new byte buffer
 * for the caller to destroy, or NULL if msg cannot be encoded. */
grpc_byte_buffer *rdev_wire_encode(const pb_msgdesc_t *fields, const void *msg, const grpc_slice *payload);

/* Encodes req's seq and op, no batch and no payload (a request that may
 * travel in a batch), into buf[0..cap): the bytes rdev_wire_encode makes
 * of it, faster, as nanopb walks only the op's own fields. Returns their
 * length, or 0 when they do not fit (RDEV_WIRE_MAX_REQUEST_FIELDS always
 * does) or cannot be encoded. */
size_t rdev_wire_encode_request(const rdev_v1_Request *req, uint8_t *buf, size_t cap);
/* Writes at p (at most 20 bytes) the field header of a batch element of
 * len bytes; returns its length. */
size_t rdev_wire_batch_header(uint8_t *p, size_t len);

/* One Request whose batch (field RDEV_WIRE_BATCH_FIELD) holds the n encoded
 * Requests msgs[0..n) in order, copied (meant for small ones). Returns a new
 * byte buffer for the caller to destroy, or NULL out of memory. The msgs
 * stay the caller's. */
grpc_byte_buffer *rdev_wire_batch(grpc_byte_buffer *const *msgs, size_t n);

/* The whole file at path, NUL-terminated, as gRPC's TLS credentials take PEM
 * (certificates, keys, CA bundles): malloc'd for the caller to free, or NULL
 * when it cannot be read. */
char *rdev_wire_read_file(const char *path);

#endif
