/*
 * server/jobs/job_http_ops.c — the entry points of a job's HTTP(S)
 * transfers (job_http.h): input fetches, output deliveries and signed
 * webhooks. Each readies its transfers and hands them to the loop in
 * job_http_drive.c (srv_http_drive). This file owns libcurl's global init
 * (once) and each transfer's set-up and clean-up (its easy handle, and the
 * check of the caller's URL before anything starts).
 */
#include <curl/curl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job_http_drive.h"
#include "rdev/status.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc;
static void init_once(void) { init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- set-up and clean-up ---------------------------------------------------------- */

/* Readies x (kind, url0, o and the out fields set) for srv_http_drive: 0, or -1 with
 * x failed (its URL refused, or no memory). */
static int setup(xfer_t *x) {
  pthread_once(&once, init_once);
  if (init_rc != CURLE_OK) return srv_http_fail(x, RDEV_INTERNAL_ERROR, "curl_global_init failed"), -1;
  x->url = x->url0 ? strdup(x->url0) : NULL;
  x->e = curl_easy_init();
  if (x->o->resolve) x->resolve = curl_slist_append(NULL, x->o->resolve);
  int hash = x->kind == K_GET && !x->g->no_sha256; /* 45% of a fetch's CPU: only when wanted */
  if (hash && (x->sha = EVP_MD_CTX_new()) && !EVP_DigestInit_ex(x->sha, EVP_sha256(), NULL)) {
    EVP_MD_CTX_free(x->sha);
    x->sha = NULL;
  }
  if (!x->url0) return srv_http_fail(x, RDEV_INVALID_PARAM, "no URL"), -1;
  if (!x->url || !x->e || (x->o->resolve && !x->resolve) || (hash && !x->sha))
    return srv_http_fail(x, RDEV_BAD_ALLOC, "out of memory"), -1;
  return srv_http_url_allowed(x, 0) ? 0 : -1;
}

static void cleanup(xfer_t *x) {
  curl_easy_cleanup(x->e);
  curl_slist_free_all(x->resolve);
  curl_slist_free_all(x->hdrs);
  EVP_MD_CTX_free(x->sha);
  free(x->url);
}

/* ---- the entry points ------------------------------------------------------------- */

int srv_http_fetch(srv_http_get_t *gets, int n, const srv_http_opts_t *o) {
  if (n < 0 || (n && !gets) || !o) return RDEV_INVALID_PARAM;
  if (!n) return RDEV_OK;
  xfer_t *xs = calloc((size_t)n, sizeof *xs);
  if (!xs) return RDEV_BAD_ALLOC;
  int rc = RDEV_OK;
  for (int i = 0; i < n; i++) {
    srv_http_get_t *g = &gets[i];
    g->received = 0, g->tries = 0, g->http_status = 0, g->error[0] = 0;
    memset(g->sha256, 0, sizeof g->sha256);
    xs[i] = (xfer_t){.o = o,
                     .kind = K_GET,
                     .url0 = g->url,
                     .max_hops = o->max_redirects,
                     .tries = &g->tries,
                     .http_status = &g->http_status,
                     .err = g->error,
                     .errlen = sizeof g->error,
                     .g = g};
  }
  for (int i = 0; i < n && !rc; i++)
    if (setup(&xs[i])) rc = xs[i].status;
  if (rc) {
    for (int i = 0; i < n; i++) srv_http_fail(&xs[i], RDEV_CANCELLED, "not started: another transfer could not start");
  } else {
    rc = srv_http_drive(xs, n, o);
  }
  for (int i = 0; i < n; i++) {
    gets[i].status = xs[i].status;
    cleanup(&xs[i]);
  }
  free(xs);
  return rc;
}

int srv_http_deliver(srv_http_put_t *p, const srv_http_opts_t *o) {
  if (!p || !o) return RDEV_INVALID_PARAM;
  int put = p->method && !strcmp(p->method, "PUT");
  xfer_t x = {.o = o,
              .kind = put ? K_PUT : K_POST,
              .url0 = p->url,
              .max_hops = o->max_redirects,
              .tries = &p->tries,
              .http_status = &p->http_status,
              .err = p->error,
              .errlen = sizeof p->error,
              .p = p};
  p->sent = 0, p->tries = 0, p->http_status = 0, p->error[0] = 0;
  if (!put && (!p->method || strcmp(p->method, "POST"))) {
    snprintf(p->error, sizeof p->error, "method %.32s: only PUT or POST", p->method ? p->method : "(none)");
    x.status = RDEV_INVALID_PARAM;
  } else if (!p->source) {
    srv_http_fail(&x, RDEV_INVALID_PARAM, "no source");
  } else if (!setup(&x)) {
    srv_http_drive(&x, 1, o);
  }
  cleanup(&x);
  return p->status = x.status;
}

int srv_http_hook(const char *url, const char *secret, const char *body, size_t len, const srv_http_opts_t *o,
                  srv_http_hook_t *out) {
  if (!out) return RDEV_INVALID_PARAM;
  memset(out, 0, sizeof *out);
  xfer_t x = {.o = o,
              .kind = K_HOOK,
              .url0 = url,
              .tries = &out->tries,
              .http_status = &out->http_status,
              .err = out->error,
              .errlen = sizeof out->error,
              .secret = secret,
              .body = body,
              .len = len};
  if (!o || !secret || (len && !body)) {
    srv_http_fail(&x, RDEV_INVALID_PARAM, "no options, secret or body");
  } else if (!setup(&x)) {
    srv_http_drive(&x, 1, o);
  }
  cleanup(&x);
  out->at_ms = (int64_t)srv_http_clock_ms(CLOCK_REALTIME);
  return out->status = x.status;
}
