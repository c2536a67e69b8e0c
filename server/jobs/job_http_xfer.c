/*
 * server/jobs/job_http_xfer.c — what every part of a job's HTTP(S)
 * transfer uses (job_http_xfer.h): the clock, and ending a transfer with
 * its error text, which shows the URL as scheme://host[:port]/path, never
 * user info or a query.
 */
#include "job_http_xfer.h"

#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

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
