/*
 * server/jobs/job_http_xfer.h — one HTTP(S) transfer (xfer_t) as the files
 * that make a job's transfers share it, and what they all use of
 * job_http_xfer.c (the clock, ending a transfer with its error text).
 * Private to them: only job_http_xfer.c, job_http_drive.h/.c (the multi
 * loop, the attempts and libcurl's callbacks) and job_http_ops.c (the
 * entry points, set-up and clean-up) include it.
 */
#ifndef RDEV_SERVER_JOB_HTTP_XFER_H
#define RDEV_SERVER_JOB_HTTP_XFER_H

#include <curl/curl.h>
#include <openssl/evp.h>
#include <time.h>

#include "job_http.h"

enum { K_GET, K_PUT, K_POST, K_HOOK }; /* what a transfer does */
enum { S_WAIT, S_ACTIVE, S_DONE };     /* waiting for next_ms, on the multi handle, over */

typedef struct {
  const srv_http_opts_t *o;
  int kind, state, status; /* status: RDEV_OK, or the final failure (set once, by fail) */
  int on_multi;            /* e is on the multi handle */
  CURL *e;
  const char *url0;   /* the caller's URL */
  char *url;          /* this attempt's: url0 or a redirect target (malloc'd) */
  int hops, max_hops; /* redirects followed in this try, and allowed */
  int *tries;
  long *http_status;
  char *err; /* the caller's error text, errlen bytes */
  size_t errlen;
  uint64_t next_ms; /* S_WAIT: when to start the next attempt */
  struct curl_slist *resolve, *hdrs;
  char cerr[CURL_ERROR_SIZE];
  char denied[160]; /* why on_open refused an address in this attempt */
  /* the response being read */
  long code;
  int began; /* its header block ended */
  int64_t clen;
  int have_cr;
  uint64_t cr_start, cr_total, discard;
  /* fetch */
  srv_http_get_t *g;
  EVP_MD_CTX *sha;
  uint64_t total, skip; /* the whole body's size (0 unknown); bytes of this answer already given */
  /* deliver */
  srv_http_put_t *p;
  uint64_t off;
  /* hook */
  const char *secret, *body;
  size_t len;
} xfer_t;

/* ---- job_http_xfer.c ---- */

/* The clock c's time in ms (CLOCK_MONOTONIC for deadlines and backoff,
 * CLOCK_REALTIME for a webhook's at_ms). */
uint64_t srv_http_clock_ms(clockid_t c);
/* Ends x with status and "METHOD URL: what" as its error; the first reason
 * stands. */
void srv_http_fail(xfer_t *x, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
