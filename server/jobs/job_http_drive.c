/*
 * server/jobs/job_http_drive.c — the loop that runs a job's HTTP(S)
 * transfers (job_http_drive.h) on a libcurl multi handle: it starts each
 * attempt (the easy handle's options for a GET, PUT, POST or webhook),
 * reads how it ended, follows redirects by hand, schedules retries with
 * backoff and stops everything on *cancel or the deadline. Owns the URL
 * check (http or https, under the allow list: the caller's URL before
 * anything starts, each redirect target before it is requested) and
 * libcurl's callbacks: the allow-list check of every address when its
 * socket is opened (OPENSOCKETFUNCTION, before any packet) and before each
 * request goes out (PREREQFUNCTION, which also covers reused connections);
 * the response's headers (status, Content-Length, Content-Range); the body
 * into the caller's sink (skipping what arrived before, hashing it) or, for
 * a PUT or POST, from its source.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "job_http_drive.h"
#include "rdev/status.h"

#define DISCARD_MAX ((uint64_t)1 << 20) /* an error page or redirect body longer than this is cut */
#define BODY_BUFFER (1L << 20)          /* a fetch's receive buffer */
#define SLICE_MS 50                     /* how often the loop looks at *cancel and the deadline */

static uint64_t now_ms(void) { return srv_http_clock_ms(CLOCK_MONOTONIC); }

/* RDEV_CANCELLED, RDEV_RT_WAIT_TIMEOUT, or 0 while the work may go on. */
static int stopped(const srv_http_opts_t *o) {
  if (o->cancel && atomic_load(o->cancel)) return RDEV_CANCELLED;
  if (o->deadline_ms && now_ms() >= o->deadline_ms) return RDEV_RT_WAIT_TIMEOUT;
  return 0;
}

/* ---- the URL check ---------------------------------------------------------------- */

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

/* ---- callbacks ------------------------------------------------------------------- */

static curl_socket_t on_open(void *ud, curlsocktype purpose, struct curl_sockaddr *a) {
  xfer_t *x = ud;
  struct sockaddr_storage ss;
  char ip[INET6_ADDRSTRLEN] = "";
  memset(&ss, 0, sizeof ss);
  memcpy(&ss, &a->addr, a->addrlen < sizeof ss ? a->addrlen : sizeof ss);
  if (a->family == AF_INET) inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof ip);
  if (a->family == AF_INET6) inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof ip);
  if (!ip[0]) {
    snprintf(x->denied, sizeof x->denied, "address family %d", a->family);
    return CURL_SOCKET_BAD;
  }
  if (!srv_allow_addr(x->o->allow, ip, x->denied, sizeof x->denied)) return CURL_SOCKET_BAD;
  return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int on_prereq(void *ud, char *ip, char *local_ip, int port, int local_port) {
  xfer_t *x = ud;
  char why[160];
  if (srv_allow_addr(x->o->allow, ip, why, sizeof why)) return CURL_PREREQFUNC_OK;
  srv_http_fail(x, RDEV_PERMISSION_DENIED, "refused at connect time: %s", why);
  return CURL_PREREQFUNC_ABORT;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  return stopped(((xfer_t *)ud)->o) != 0;
}

/* A fetch's 2xx header block ended: where its bytes go, and whether the
 * body can fit. 0 fails the transfer. */
static int body_begins(xfer_t *x) {
  srv_http_get_t *g = x->g;
  uint64_t total = 0;
  if (x->code == 206) {
    if (!x->have_cr || x->cr_start != g->received) {
      srv_http_fail(x, RDEV_TRANSFER, "HTTP 206 for bytes from %" PRIu64 ", asked from %" PRIu64,
                    x->have_cr ? x->cr_start : 0, g->received);
      return 0;
    }
    total = x->cr_total;
  } else {
    x->skip = g->received; /* a whole body again: what arrived before is dropped */
    if (x->clen >= 0) total = (uint64_t)x->clen;
  }
  if (total && x->total && total != x->total) {
    srv_http_fail(x, RDEV_TRANSFER, "the body changed size between tries (%" PRIu64 ", then %" PRIu64 " bytes)",
                  x->total, total);
    return 0;
  }
  if (total) x->total = total;
  uint64_t least = x->total ? x->total : x->code == 206 && x->clen >= 0 ? g->received + (uint64_t)x->clen : 0;
  if (least > g->max_bytes) {
    srv_http_fail(x, RDEV_STORAGE_OVER_LIMIT, "a body of %" PRIu64 " bytes is over the limit of %" PRIu64, least,
                  g->max_bytes);
    return 0;
  }
  return 1;
}

static size_t on_header(char *data, size_t size, size_t n, void *ud) {
  xfer_t *x = ud;
  size_t len = size * n;
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), data);
  unsigned long long a, b, t;
  if (!strncmp(line, "HTTP/", 5)) { /* a response starts (an informational one, maybe) */
    const char *sp = strchr(line, ' ');
    x->code = sp ? strtol(sp + 1, NULL, 10) : 0;
    x->began = x->have_cr = 0;
    x->clen = -1;
    x->discard = 0;
  } else if (!strncasecmp(line, "content-length:", 15)) {
    x->clen = strtoll(line + 15, NULL, 10);
  } else if (!strncasecmp(line, "content-range:", 14)) {
    if (sscanf(line + 14, " bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
      x->have_cr = 1, x->cr_start = a, x->cr_total = t;
    } else if (sscanf(line + 14, " bytes %llu-%llu/*", &a, &b) == 2) {
      x->have_cr = 1, x->cr_start = a, x->cr_total = 0;
    }
  } else if ((line[0] == '\r' || line[0] == '\n') && x->code >= 200 && !x->began) {
    x->began = 1;
    *x->http_status = x->code;
    if (x->kind == K_GET && x->code < 300 && !body_begins(x)) return 0;
  }
  return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud) {
  xfer_t *x = ud;
  size_t len = size * n, all = len;
  if (x->kind != K_GET || x->code < 200 || x->code > 299) { /* an answer's text, an error page, a redirect's */
    x->discard += len;
    return x->discard > DISCARD_MAX ? 0 : all;
  }
  srv_http_get_t *g = x->g;
  size_t k = x->skip < len ? (size_t)x->skip : len;
  x->skip -= k, data += k, len -= k;
  if (!len) return all;
  if (len > g->max_bytes - g->received) {
    srv_http_fail(x, RDEV_STORAGE_OVER_LIMIT, "the body passed the limit of %" PRIu64 " bytes", g->max_bytes);
    return 0;
  }
  int rc = g->sink(g->user, data, len, x->total);
  if (rc != RDEV_OK) {
    srv_http_fail(x, rc, "the sink refused %zu bytes at %" PRIu64 " (status %d)", len, g->received, rc);
    return 0;
  }
  if (x->sha) EVP_DigestUpdate(x->sha, data, len);
  g->received += len;
  return all;
}

static size_t on_read(char *buf, size_t size, size_t n, void *ud) {
  xfer_t *x = ud;
  srv_http_put_t *p = x->p;
  size_t cap = size * n, got = 0;
  if (cap > p->size - x->off) cap = (size_t)(p->size - x->off);
  if (!cap) return 0;
  int rc = p->source(p->user, x->off, buf, cap, &got);
  if (rc != RDEV_OK || !got || got > cap) {
    srv_http_fail(x, rc != RDEV_OK ? rc : RDEV_INTERNAL_ERROR,
                  "the source gave %zu bytes at %" PRIu64 " of %" PRIu64 " (status %d)", got, x->off, p->size, rc);
    return CURL_READFUNC_ABORT;
  }
  x->off += got;
  p->sent = x->off;
  return got;
}

static int on_seek(void *ud, curl_off_t off, int origin) {
  xfer_t *x = ud;
  if (origin != SEEK_SET || off < 0 || (uint64_t)off > x->p->size) return CURL_SEEKFUNC_CANTSEEK;
  x->off = x->p->sent = (uint64_t)off;
  return CURL_SEEKFUNC_OK;
}

/* ---- attempts -------------------------------------------------------------------- */

/* Sets x's easy handle up for its next attempt on x->url. 0, or -1 with x
 * failed. */
static int begin(xfer_t *x) {
  const srv_http_opts_t *o = x->o;
  CURL *e = x->e;
  if (!x->hops) (*x->tries)++;
  curl_easy_reset(e);
  curl_slist_free_all(x->hdrs);
  x->hdrs = NULL;
  x->code = 0, x->began = x->have_cr = 0, x->clen = -1, x->discard = x->skip = x->off = 0;
  x->cerr[0] = x->denied[0] = 0;
  CURLcode rc = CURLE_OK;
#define SET(opt, val) \
  if (rc == CURLE_OK) rc = curl_easy_setopt(e, opt, val)
  SET(CURLOPT_URL, x->url);
  SET(CURLOPT_PROTOCOLS_STR, "http,https");
  SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_PROXY, ""); /* a proxy from the environment would connect where we cannot check */
  SET(CURLOPT_NOPROXY, "*");
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000L);
  SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
  SET(CURLOPT_LOW_SPEED_TIME, o->stall_s > 0 ? o->stall_s : 30L);
  SET(CURLOPT_ERRORBUFFER, x->cerr);
  SET(CURLOPT_PRIVATE, x);
  SET(CURLOPT_OPENSOCKETFUNCTION, on_open);
  SET(CURLOPT_OPENSOCKETDATA, x);
  SET(CURLOPT_PREREQFUNCTION, on_prereq);
  SET(CURLOPT_PREREQDATA, x);
  SET(CURLOPT_XFERINFOFUNCTION, on_progress);
  SET(CURLOPT_XFERINFODATA, x);
  SET(CURLOPT_NOPROGRESS, 0L);
  SET(CURLOPT_HEADERFUNCTION, on_header);
  SET(CURLOPT_HEADERDATA, x);
  SET(CURLOPT_WRITEFUNCTION, on_body);
  /* 1 MiB reads: with curl's 16 KiB a 256 MiB body took 17k recvfrom and 25k poll calls */
  if (x->kind == K_GET) SET(CURLOPT_BUFFERSIZE, (long)BODY_BUFFER);
  SET(CURLOPT_WRITEDATA, x);
  if (x->resolve) SET(CURLOPT_RESOLVE, x->resolve);
  int ok = 1;
  if (x->kind != K_GET) ok = !!(x->hdrs = curl_slist_append(x->hdrs, "Expect:"));
  if (x->kind == K_GET && x->g->received) {
    char range[32];
    snprintf(range, sizeof range, "%" PRIu64 "-", x->g->received);
    SET(CURLOPT_RANGE, range);
  } else if (x->kind == K_PUT || x->kind == K_POST) {
    x->p->sent = 0;
    if (x->kind == K_PUT) {
      SET(CURLOPT_UPLOAD, 1L);
      SET(CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->p->size);
    } else {
      SET(CURLOPT_POST, 1L);
      SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->p->size);
      ok = ok && curl_slist_append(x->hdrs, "Content-Type: application/octet-stream");
    }
    SET(CURLOPT_READFUNCTION, on_read);
    SET(CURLOPT_READDATA, x);
    SET(CURLOPT_SEEKFUNCTION, on_seek);
    SET(CURLOPT_SEEKDATA, x);
  } else if (x->kind == K_HOOK) {
    char hex[65], line[128];
    long long ts = (long long)time(NULL);
    srv_http_sign(x->secret, ts, x->body, x->len, hex);
    if (!hex[0]) {
      srv_http_fail(x, RDEV_INTERNAL_ERROR, "signing failed");
      return -1;
    }
    SET(CURLOPT_POSTFIELDS, x->body ? x->body : "");
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->len);
    ok = ok && curl_slist_append(x->hdrs, "Content-Type: application/json");
    snprintf(line, sizeof line, "X-Rdev-Timestamp: %lld", ts);
    ok = ok && curl_slist_append(x->hdrs, line);
    snprintf(line, sizeof line, "X-Rdev-Signature: v1=%s", hex);
    ok = ok && curl_slist_append(x->hdrs, line);
  }
  if (x->hdrs) SET(CURLOPT_HTTPHEADER, x->hdrs);
#undef SET
  if (rc != CURLE_OK || !ok) {
    srv_http_fail(x, !ok || rc == CURLE_OUT_OF_MEMORY ? RDEV_BAD_ALLOC : RDEV_INTERNAL_ERROR, "setting up: %s",
                  ok ? curl_easy_strerror(rc) : "out of memory");
    return -1;
  }
  return 0;
}

/* Back to the caller's URL for another try after a backoff, or the end
 * when the tries are spent. */
static void retry(xfer_t *x, const char *what) {
  if (*x->tries > x->o->retries) {
    srv_http_fail(x, RDEV_TRANSFER, "%s (%d tries)", what, *x->tries);
    return;
  }
  char *u = strdup(x->url0);
  if (!u) {
    srv_http_fail(x, RDEV_BAD_ALLOC, "out of memory");
    return;
  }
  free(x->url);
  x->url = u;
  x->hops = 0;
  int shift = *x->tries - 1 < 4 ? *x->tries - 1 : 4;
  uint64_t backoff = 250u << shift;
  x->next_ms = now_ms() + (backoff < 4000 ? backoff : 4000);
  x->state = S_WAIT;
}

static void redirect(xfer_t *x) {
  long c = x->code;
  int body = x->kind == K_PUT || x->kind == K_POST;
  char *loc = NULL, *u = NULL;
  if (!x->max_hops) {
    srv_http_fail(x, RDEV_TRANSFER, "HTTP %ld: redirects are not followed", c);
  } else if (c != 307 && c != 308 && (body || (c != 301 && c != 302 && c != 303))) {
    srv_http_fail(x, RDEV_TRANSFER, "HTTP %ld: a redirect not followed", c);
  } else if (x->hops >= x->max_hops) {
    srv_http_fail(x, RDEV_TRANSFER, "HTTP %ld: more than %d redirects", c, x->max_hops);
  } else if (curl_easy_getinfo(x->e, CURLINFO_REDIRECT_URL, &loc) != CURLE_OK || !loc) {
    srv_http_fail(x, RDEV_TRANSFER, "HTTP %ld without a usable Location", c);
  } else if (!(u = strdup(loc))) {
    srv_http_fail(x, RDEV_BAD_ALLOC, "out of memory");
  } else {
    free(x->url);
    x->url = u;
    x->hops++;
    if (srv_http_url_allowed(x, 1)) x->state = S_WAIT, x->next_ms = 0;
  }
}

static int transient(CURLcode rc) {
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return 1;
    default: return 0;
  }
}

/* An attempt ended with rc: x is over, waits to retry, or follows a redirect. */
static void conclude(xfer_t *x, CURLcode rc) {
  char what[CURL_ERROR_SIZE + 64];
  long c = x->code;
  if (!x->status && rc != CURLE_OK && x->denied[0]) srv_http_fail(x, RDEV_PERMISSION_DENIED, "refused: %s", x->denied);
  if (!x->status && rc == CURLE_ABORTED_BY_CALLBACK) {
    int stop = stopped(x->o);
    srv_http_fail(x, stop ? stop : RDEV_CANCELLED, "%s",
                  stop == RDEV_RT_WAIT_TIMEOUT ? "the deadline passed" : "cancelled");
  }
  if (x->status) return;
  if (c >= 300 && c <= 399) {
    redirect(x);
  } else if (c >= 400) {
    snprintf(what, sizeof what, "HTTP %ld", c);
    if (c == 408 || c == 429 || c >= 500)
      retry(x, what);
    else
      srv_http_fail(x, RDEV_TRANSFER, "%s", what);
  } else if (rc != CURLE_OK || c < 200) {
    snprintf(what, sizeof what, "%s", x->cerr[0] ? x->cerr : rc != CURLE_OK ? curl_easy_strerror(rc) : "no answer");
    if (rc == CURLE_OK || transient(rc))
      retry(x, what);
    else
      srv_http_fail(x, rc == CURLE_URL_MALFORMAT ? RDEV_INVALID_PARAM : RDEV_TRANSFER, "%s", what);
  } else if (x->kind == K_GET && x->skip) {
    srv_http_fail(x, RDEV_TRANSFER, "the body is shorter than what arrived before");
  } else if (x->kind == K_GET && x->total && x->g->received < x->total) {
    snprintf(what, sizeof what, "the body ended at %" PRIu64 " of %" PRIu64 " bytes", x->g->received, x->total);
    retry(x, what);
  } else {
    if (x->sha) EVP_DigestFinal_ex(x->sha, x->g->sha256, NULL);
    x->err[0] = 0; /* earlier tries' reasons are history */
    x->state = S_DONE;
  }
}

int srv_http_drive(xfer_t *xs, int n, const srv_http_opts_t *o) {
  CURLM *m = curl_multi_init();
  int first = m ? RDEV_OK : RDEV_BAD_ALLOC, stop = 0;
  for (int i = 0; i < n; i++) xs[i].state = S_WAIT, xs[i].next_ms = 0;
  while (!first && !(stop = stopped(o))) {
    uint64_t now = now_ms();
    for (int i = 0; i < n; i++) {
      xfer_t *x = &xs[i];
      if (x->state != S_WAIT || x->next_ms > now || begin(x)) continue;
      if (curl_multi_add_handle(m, x->e) == CURLM_OK)
        x->state = S_ACTIVE, x->on_multi = 1;
      else
        srv_http_fail(x, RDEV_INTERNAL_ERROR, "curl_multi_add_handle failed");
    }
    int running, q, left = 0;
    curl_multi_perform(m, &running);
    for (CURLMsg *msg; (msg = curl_multi_info_read(m, &q));) {
      if (msg->msg != CURLMSG_DONE) continue;
      char *priv = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
      xfer_t *x = (xfer_t *)priv;
      CURLcode rc = msg->data.result;
      curl_multi_remove_handle(m, x->e);
      x->on_multi = 0;
      conclude(x, rc);
    }
    now = now_ms();
    uint64_t wait = SLICE_MS;
    if (o->deadline_ms && o->deadline_ms - now < wait) wait = o->deadline_ms - now;
    for (int i = 0; i < n; i++) {
      xfer_t *x = &xs[i];
      if (x->state != S_DONE)
        left++;
      else if (x->status && !first)
        first = x->status;
      if (x->state == S_WAIT) wait = x->next_ms <= now ? 0 : x->next_ms - now < wait ? x->next_ms - now : wait;
    }
    if (!left) break;
    if (!first && wait) curl_multi_poll(m, NULL, 0, (int)wait, NULL);
  }
  if (stop && !first) first = stop;
  for (int i = 0; i < n; i++) {
    if (xs[i].on_multi) curl_multi_remove_handle(m, xs[i].e);
    if (xs[i].state == S_DONE) continue;
    if (stop)
      srv_http_fail(&xs[i], stop, "%s", stop == RDEV_RT_WAIT_TIMEOUT ? "the deadline passed" : "cancelled");
    else
      srv_http_fail(&xs[i], RDEV_CANCELLED, "stopped: another transfer failed");
  }
  curl_multi_cleanup(m);
  return first;
}
