/*
 * server/jobs/job_http.h — the HTTP(S) transfers a job makes (libcurl): fetching
 * its inputs (several at once, on one multi handle), delivering its outputs
 * (PUT or POST) and its signed webhook POSTs. Every transfer is confined by
 * the tenant's allow list (allow.h): the URL, each redirect hop (followed
 * by hand, at most max_redirects of them) and the address libcurl is about
 * to talk to (checked when the connection is made, so DNS cannot rebind an
 * allowed name into the operator's network). Bodies stream through the
 * caller's callbacks; nothing here holds a whole body.
 *
 * Every call blocks the calling thread until its transfers are over. Status
 * codes: RDEV_OK; RDEV_PERMISSION_DENIED (a URL, redirect or address the
 * list does not allow: nothing was transferred to or from it);
 * RDEV_TRANSFER (network error, HTTP status not 2xx, too many redirects,
 * retries spent); RDEV_STORAGE_OVER_LIMIT (a body over max_bytes);
 * RDEV_RT_WAIT_TIMEOUT (the deadline passed); RDEV_CANCELLED (*cancel
 * became non-zero); RDEV_INVALID_PARAM (a URL libcurl cannot parse, or a
 * scheme other than http/https); or a status a callback returned.
 */
#ifndef RDEV_SERVER_JOB_HTTP_H
#define RDEV_SERVER_JOB_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "allow.h"

typedef struct {
  const srv_allow_t *allow; /* the tenant's prefixes (NULL: nothing is allowed) */
  int retries;              /* tries after the first, for transient errors (connect errors, timeouts,
                               a connection cut mid-body, HTTP 408, 429 and 5xx); backoff 250 ms doubling
                               to at most 4 s, cut short by *cancel */
  int max_redirects;        /* 0 = none followed (a 3xx is RDEV_TRANSFER) */
  long connect_timeout_ms;  /* per connection; 0 = 10 s */
  long stall_s;             /* a transfer moving under 1 byte/s for this long fails (transient); 0 = 30 s */
  uint64_t deadline_ms;     /* CLOCK_MONOTONIC ms at which everything stops; 0 = none */
  const atomic_int *cancel; /* non-zero: stop at once; may be NULL */
  const char *resolve;      /* tests only: a CURLOPT_RESOLVE entry "host:port:addr", or NULL */
} srv_http_opts_t;

/* ---- fetch ------------------------------------------------------------------- */

typedef struct {
  /* in */
  const char *url;
  uint64_t max_bytes; /* a body longer than this fails with RDEV_STORAGE_OVER_LIMIT, as soon as it
                         is known (Content-Length) or passed */
  /* Takes the next len bytes of the body (in order, each byte once, across
   * retries). total: the body's whole size when known, else 0. Returns
   * RDEV_OK, or a status that fails this transfer (no retry). Called on the
   * fetching thread. */
  int (*sink)(void *user, const void *data, size_t len, uint64_t total);
  void *user;
  int no_sha256; /* skip the digest (it costs about half a fetch's CPU) */
  /* out */
  int status;         /* RDEV_OK or why it failed */
  char error[256];    /* what failed, for people ("" when it did not) */
  long http_status;   /* of the last response; 0 = none */
  uint64_t received;  /* bytes given to sink */
  uint8_t sha256[32]; /* of those bytes, once status is RDEV_OK (zero with no_sha256) */
  int tries;          /* attempts made */
} srv_http_get_t;

/* GETs the n URLs at once (one multi handle). A retry starts again from
 * the caller's URL (so short-lived signed redirect targets work); after
 * bytes arrived it asks for the rest with "Range: bytes=received-", and a
 * 200 answer to it has its first `received` bytes skipped, so the sink sees
 * each byte once. max_bytes 0 admits only an empty body. When one URL is
 * refused up front nothing starts; when one transfer fails the others stop
 * (RDEV_CANCELLED, "stopped: another transfer failed"). Returns the first
 * failed transfer's status, or RDEV_OK when every body arrived whole. */
int srv_http_fetch(srv_http_get_t *gets, int n, const srv_http_opts_t *o);

/* ---- deliver ----------------------------------------------------------------- */

typedef struct {
  /* in */
  const char *url;
  const char *method; /* "PUT" or "POST" */
  uint64_t size;      /* the body's length (Content-Length) */
  /* Fills buf with up to cap body bytes from offset off (every attempt
   * starts again at 0): sets *got (> 0 unless off == size) and returns
   * RDEV_OK, or a status that fails the delivery. */
  int (*source)(void *user, uint64_t off, void *buf, size_t cap, size_t *got);
  void *user;
  /* out */
  int status;
  char error[256];
  long http_status;
  uint64_t sent; /* bytes of the last attempt the server took */
  int tries;
} srv_http_put_t;

/* Sends one body. Only 307 and 308 redirects are followed (method and body
 * kept, the target checked); other 3xx fail. Any 2xx is success. */
int srv_http_deliver(srv_http_put_t *p, const srv_http_opts_t *o);

/* ---- webhooks ---------------------------------------------------------------- */

typedef struct {
  int status;
  char error[96];
  long http_status;
  int tries;
  int64_t at_ms; /* Unix time of the last try's end */
} srv_http_hook_t;

/* POSTs body (JSON, len bytes) to url with Content-Type application/json,
 * "X-Rdev-Timestamp: T" (Unix seconds at that try) and "X-Rdev-Signature:
 * v1=HEX", HEX the lowercase hex HMAC-SHA256 under key secret (NUL-ended)
 * of T, ".", and the body; each retry is signed afresh. No redirects are
 * followed. Fills *out; returns out->status. */
int srv_http_hook(const char *url, const char *secret, const char *body, size_t len, const srv_http_opts_t *o,
                  srv_http_hook_t *out);

/* HMAC-SHA256 of "ts.body" under secret, as 64 lowercase hex digits and a
 * NUL into hex. Tests use it to check what receivers see. */
void srv_http_sign(const char *secret, long long ts, const char *body, size_t len, char hex[65]);

#endif
