/*
 * server/jobs/job_http.c — a job's HTTP(S) transfers (job_http.h) over libcurl:
 * input fetches, output deliveries and signed webhooks. This file owns the
 * entry points (each readies its transfers and hands them to the loop in
 * job_http_drive.c, srv_http_drive), libcurl's global init (once), each
 * transfer's set-up and clean-up (its easy handle), the webhook signature,
 * the URL checks (http or https, under the allow list: the caller's URL
 * before anything starts, each redirect target before it is requested) and
 * the error texts, which show URLs as scheme://host[:port]/path, never user
 * info or a query. job_http_xfer.h is what the two files share.
 */
#include "job_http.h"

#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "job_http_xfer.h"
#include "rdev/status.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode init_rc;
static void init_once(void) { init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

uint64_t srv_http_clock_ms(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* url as scheme://host[:port]/path ("?..." for a query) into buf. */
static void show_url(const char *url, char *buf, size_t n) {
  CURLU *u = curl_url();
  char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *query = NULL;
  if (u && url && curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
    curl_url_get(u, CURLUPART_PORT, &port, 0);
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    int q = curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK;
    snprintf(buf, n, "%s://%s%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "", path ? path : "/",
             q ? "?..." : "");
  } else {
    snprintf(buf, n, "(a URL that does not parse)");
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_free(path);
  curl_free(query);
  curl_url_cleanup(u);
}

static const char *method(const xfer_t *x) { return x->kind == K_GET ? "GET" : x->kind == K_PUT ? "PUT" : "POST"; }

void srv_http_fail(xfer_t *x, int status, const char *fmt, ...) {
  if (x->status) return;
  x->status = status;
  x->state = S_DONE;
  char what[200], u[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  show_url(x->url ? x->url : x->url0, u, sizeof u);
  snprintf(x->err, x->errlen, "%s %s: %s", method(x), u, what);
}

int srv_http_url_allowed(xfer_t *x, int redirect) {
  CURLU *u = curl_url();
  char *scheme = NULL, why[192];
  int web = u && x->url && curl_url_set(u, CURLUPART_URL, x->url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
            (!strcasecmp(scheme, "http") || !strcasecmp(scheme, "https"));
  curl_free(scheme);
  curl_url_cleanup(u);
  if (!web) {
    srv_http_fail(x, redirect ? RDEV_PERMISSION_DENIED : RDEV_INVALID_PARAM, "%s", "not an http or https URL");
  } else if (!srv_allow_url(x->o->allow, x->url, why, sizeof why)) {
    srv_http_fail(x, RDEV_PERMISSION_DENIED, "%s not allowed: %s", redirect ? "redirect target" : "URL", why);
  }
  return !x->status;
}

/* ---- set-up and the entry points ----------------------------------------------------- */

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

void srv_http_sign(const char *secret, long long ts, const char *body, size_t len, char hex[65]) {
  char t[32];
  int tl = snprintf(t, sizeof t, "%lld.", ts);
  unsigned char mac[32];
  size_t ml = 0;
  EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
  OSSL_PARAM ps[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                     OSSL_PARAM_construct_end()};
  static const unsigned char none = 0;
  const unsigned char *key = secret && *secret ? (const unsigned char *)secret : &none;
  hex[0] = 0;
  if (c && EVP_MAC_init(c, key, secret ? strlen(secret) : 0, ps) && EVP_MAC_update(c, (unsigned char *)t, (size_t)tl) &&
      (!len || EVP_MAC_update(c, (const unsigned char *)body, len)) && EVP_MAC_final(c, mac, &ml, sizeof mac) &&
      ml == sizeof mac) {
    for (size_t i = 0; i < sizeof mac; i++) snprintf(hex + 2 * i, 3, "%02x", mac[i]);
  }
  EVP_MAC_CTX_free(c);
  EVP_MAC_free(m);
}
