/*
 * server/tenants.c — who may use rdevd and how much: the tenants file,
 * bearer-token and job-token authentication, and per-tenant quotas.
 *
 * A tenant is a name, the SHA-256 hashes of its tokens (never the tokens),
 * the key its job tokens are signed with (rdev/job_token.h: a job token
 * grants some of its devices on named servers until an expiry),
 * the devices it may use, a device-memory quota per device, limits on
 * sessions, streams and in-flight bytes, a scheduling weight, and optionally
 * the subject of the client certificate it must present (mTLS). Without a
 * tenants file rdevd runs open: everyone is the built-in tenant "anonymous"
 * with no limits, so every code path is the same in both modes.
 *
 * The file's format is in deploy/tenants.example; srv_tenants_parse reads
 * its text from memory (the reload reads the file whole, see srv_read_file,
 * and hands it over), so the parser runs the same under the fuzz harness
 * (tests/fuzz/fuzz_tenants.c).
 *
 * Tenant records live as long as the server: a reload (SIGHUP) updates the
 * settings of tenants by name, adds new ones and marks vanished ones removed,
 * so usage accounting carries across reloads and a session always points at
 * a valid record. Quota accounting uses the bytes the device really reserves
 * (rdev_rt_mem_reserved_size) and is done under the tenant's mutex, so it is
 * exact under concurrent allocation from many sessions.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "metrics/metrics.h"
#include "rdev/job_token.h" /* a job token is told from a bearer token by its prefix */
#include "srv.h"

/* ---- parsing ----------------------------------------------------------------- */

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* prefix and exactly 64 hex digits (any case) into out; 0 or -1. */
static int parse_hex32(const char *v, const char *prefix, uint8_t out[32]) {
  size_t pl = strlen(prefix);
  if (strncmp(v, prefix, pl) != 0 || strlen(v + pl) != 64) return -1;
  v += pl;
  for (int i = 0; i < 32; i++) {
    int hi = hexval((unsigned char)v[2 * i]), lo = hexval((unsigned char)v[2 * i + 1]);
    if (hi < 0 || lo < 0) return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

/* "all", or device numbers 0..63 (decimal digits) separated by commas
 * (white space around them, one trailing comma allowed), into a non-zero
 * mask; 0 or -1. */
static int parse_devices(const char *v, uint64_t *mask) {
  if (!strcmp(v, "all")) {
    *mask = ~0ULL;
    return 0;
  }
  uint64_t m = 0;
  const char *p = v;
  while (*p) {
    if (!isdigit((unsigned char)*p)) return -1; /* strtol would take signs and space */
    char *end;
    errno = 0;
    long d = strtol(p, &end, 10);
    if (errno || d > 63) return -1;
    m |= 1ULL << d;
    p = end;
    while (isspace((unsigned char)*p)) p++;
    if (*p == ',')
      p++;
    else if (*p)
      return -1;
    while (isspace((unsigned char)*p)) p++;
  }
  if (!m) return -1;
  *mask = m;
  return 0;
}

/* "[tenant NAME]" (the whole trimmed line) into name: NAME trimmed, 1..63
 * bytes, no ']' and no control characters. 0, or -1 with *why. */
static int parse_header(const char *s, char name[64], const char **why) {
  size_t n = strlen(s);
  *why = "expected [tenant NAME]";
  if (n < 2 || s[0] != '[' || s[n - 1] != ']' || strncmp(s + 1, "tenant", 6) != 0 || !isspace((unsigned char)s[7]))
    return -1;
  const char *b = s + 7, *e = s + n - 1; /* the name is in [b, e) */
  while (b < e && isspace((unsigned char)*b)) b++;
  while (e > b && isspace((unsigned char)e[-1])) e--;
  if (b == e || (size_t)(e - b) >= 64) return *why = "tenant name empty or too long", -1;
  for (const char *c = b; c < e; c++)
    if (*c == ']' || iscntrl((unsigned char)*c)) return *why = "tenant name: no ']' or control characters", -1;
  memcpy(name, b, (size_t)(e - b));
  name[e - b] = '\0';
  return 0;
}

/* A tenant's settings where the tenants file says nothing (and the open
 * mode's one tenant): all its devices and their memory, the rest finite
 * (docs/reliability.md, Limits). */
static void tenant_defaults(srv_tenant_t *t) {
  t->devices = ~0ULL;
  t->mem_quota = SIZE_MAX; /* what the devices have */
  t->max_sessions = 64;
  t->max_streams = 1024;
  t->max_inflight = SIZE_MAX; /* rdevd --max-inflight applies */
  t->max_unacked = (size_t)256 << 20;
  t->weight = 1;
  t->max_queued_jobs = 64;
  t->max_running_jobs = 1;
  t->max_job_fetch = (size_t)64 << 30;
  t->job_disk = (size_t)16 << 30;
}

void srv_tenant_list_free(srv_tenant_t *list) {
  while (list) {
    srv_tenant_t *n = list->next;
    free(list->allow);
    free(list);
    list = n;
  }
}

/* "name:lineno: " and the message into err, however small err is. */
static void __attribute__((format(printf, 5, 6)))
bad(char *err, size_t errlen, const char *name, int lineno, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(err, errlen, "%s:%d: %s", name, lineno, msg);
}

int srv_tenants_parse(const char *text, size_t len, const char *name, srv_tenant_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (!name) name = "(tenants)";
  srv_tenant_t *head = NULL, *cur = NULL;
  srv_lines_t it;
  srv_lines_init(&it, text, len);
  char buf[SRV_LINE_MAX + 1], *s;
  const char *why;
  int r;
#define BAD(...) \
  do { \
    bad(err, errlen, name, it.lineno, __VA_ARGS__); \
    goto fail; \
  } while (0)
  while ((r = srv_lines_next(&it, buf, &s, &why)) > 0) {
    if (!*s) continue;
    if (*s == '[') {
      char tname[64];
      if (parse_header(s, tname, &why)) BAD("%s", why);
      for (srv_tenant_t *t = head; t; t = t->next)
        if (!strcmp(t->name, tname)) BAD("tenant '%s' appears twice", tname);
      if (!(cur = calloc(1, sizeof *cur))) BAD("out of memory");
      memcpy(cur->name, tname, strlen(tname) + 1);
      tenant_defaults(cur);
      cur->next = head;
      head = cur;
      continue;
    }
    char *eq = strchr(s, '=');
    if (!eq) BAD("expected key = value");
    if (!cur) BAD("setting outside a [tenant NAME] section");
    *eq = '\0';
    char *k = srv_trim(s), *v = srv_trim(eq + 1);
    if (!strcmp(k, "token")) {
      uint8_t h[32];
      if (cur->nhashes == SRV_MAX_TOKENS) BAD("more than %d tokens", SRV_MAX_TOKENS);
      if (parse_hex32(v, "sha256:", h)) BAD("token: expected sha256:<64 hex digits>");
      /* one token, one tenant: authentication must not have to choose */
      for (srv_tenant_t *t = head; t; t = t->next)
        for (int i = 0; t != cur && i < t->nhashes; i++)
          if (!memcmp(t->hashes[i], h, 32)) BAD("token: already a token of tenant '%s'", t->name);
      memcpy(cur->hashes[cur->nhashes++], h, 32);
    } else if (!strcmp(k, "signing_key")) {
      if (cur->has_key) BAD("signing_key: one per tenant");
      if (parse_hex32(v, "hex:", cur->signing_key)) BAD("signing_key: expected hex:<64 hex digits>");
      /* one key, one tenant: a tenant's key must not mint another's tokens */
      for (srv_tenant_t *t = head; t; t = t->next)
        if (t != cur && t->has_key && !CRYPTO_memcmp(t->signing_key, cur->signing_key, 32))
          BAD("signing_key: already the key of tenant '%s'", t->name);
      cur->has_key = 1;
    } else if (!strcmp(k, "devices")) {
      if (parse_devices(v, &cur->devices)) BAD("devices: a list such as 0,1 or all");
    } else if (!strcmp(k, "mem_quota")) {
      if (srv_parse_size(v, &cur->mem_quota)) BAD("mem_quota: a size such as 512M");
    } else if (!strcmp(k, "max_inflight")) {
      size_t n;
      if (srv_parse_size(v, &n) || n < 4096) BAD("max_inflight: a size such as 64M (at least 4K)");
      cur->max_inflight = n;
    } else if (!strcmp(k, "max_sessions") || !strcmp(k, "max_streams") || !strcmp(k, "weight") ||
               !strcmp(k, "max_slots") || !strcmp(k, "max_device_streams")) {
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      long most = !strcmp(k, "max_slots") ? 1024 : 1000000;
      if (errno || end == v || *end || n < 1 || n > most) BAD("%s: 1..%ld", k, most);
      if (!strcmp(k, "max_sessions"))
        cur->max_sessions = (int)n;
      else if (!strcmp(k, "max_streams"))
        cur->max_streams = (int)n;
      else if (!strcmp(k, "max_slots"))
        cur->max_slots = (int)n;
      else if (!strcmp(k, "max_device_streams"))
        cur->max_dev_streams = (int)n;
      else
        cur->weight = (int)n;
    } else if (!strcmp(k, "allow")) {
      srv_allow_t *one = NULL;
      char why2[256];
      if (srv_allow_add(&one, v, why2, sizeof why2)) BAD("allow: %s", why2);
      srv_allow_free(one);
      size_t had = cur->allow ? strlen(cur->allow) : 0, n = strlen(v);
      char *grown = realloc(cur->allow, had + n + 2);
      if (!grown) BAD("out of memory");
      memcpy(grown + had, v, n);
      grown[had + n] = '\n';
      grown[had + n + 1] = '\0';
      cur->allow = grown;
    } else if (!strcmp(k, "max_queued_jobs") || !strcmp(k, "max_running_jobs")) {
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      if (errno || end == v || *end || n < 1 || n > 100000) BAD("%s: 1..100000", k);
      if (!strcmp(k, "max_queued_jobs"))
        cur->max_queued_jobs = (int)n;
      else
        cur->max_running_jobs = (int)n;
    } else if (!strcmp(k, "max_unacked")) {
      if (srv_parse_size(v, &cur->max_unacked) || cur->max_unacked < ((size_t)1 << 20))
        BAD("max_unacked: a size such as 256M (at least 1M)");
    } else if (!strcmp(k, "max_job_fetch")) {
      if (srv_parse_size(v, &cur->max_job_fetch)) BAD("max_job_fetch: a size such as 4G");
    } else if (!strcmp(k, "job_disk")) {
      if (srv_parse_size(v, &cur->job_disk)) BAD("job_disk: a size such as 10G");
    } else if (!strcmp(k, "cert_subject")) {
      size_t n = strlen(v);
      if (n >= sizeof cur->cert_subject) BAD("cert_subject too long");
      memcpy(cur->cert_subject, v, n + 1);
    } else {
      BAD("unknown setting '%s'", k);
    }
  }
  if (r < 0) BAD("%s", why);
#undef BAD
  for (srv_tenant_t *t = head; t; t = t->next)
    if (!t->nhashes && !t->has_key) {
      snprintf(err, errlen, "%s: tenant '%s' has no token and no signing_key", name, t->name);
      goto fail;
    }
  *out = head;
  return 0;
fail:
  srv_tenant_list_free(head);
  return -1;
}

/* Parses a tenants file into a fresh list (settings only). 0 or -1 with err. */
static int parse_file(const char *path, srv_tenant_t **out, char *err, size_t errlen) {
  char *text;
  size_t len;
  *out = NULL;
  if (srv_read_file(path, SRV_FILE_MAX, &text, &len, err, errlen)) return -1;
  int rc = srv_tenants_parse(text, len, path, out, err, errlen);
  free(text);
  return rc;
}

/* ---- the table ----------------------------------------------------------------- */

static srv_tenant_t *tenant_new(const char *name) {
  static atomic_uint next_id = 1;
  srv_tenant_t *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->id = atomic_fetch_add(&next_id, 1);
  snprintf(t->name, sizeof t->name, "%s", name);
  pthread_mutex_init(&t->mu, NULL);
  tenant_defaults(t);
  t->metrics = srv_metrics_tenant(name, t->id, 0);
  return t;
}

/* Open mode: the job-allow setting's prefixes (separated by white space) as
 * the anonymous tenant's allow lines. 0, or -1 (logged) for a bad one. */
static int open_allow(srv_tenant_t *t, const char *prefixes) {
  size_t n = strlen(prefixes);
  if (!n) return 0;
  if (!(t->allow = malloc(n + 2))) return -1;
  char *o = t->allow;
  for (const char *p = prefixes; *p;) {
    while (*p && isspace((unsigned char)*p)) p++;
    const char *e = p;
    while (*e && !isspace((unsigned char)*e)) e++;
    if (e == p) break;
    char one[1024], why[256];
    snprintf(one, sizeof one, "%.*s", (int)(e - p), p);
    srv_allow_t *l = NULL;
    if (srv_allow_add(&l, one, why, sizeof why)) {
      srv_log(SRV_LOG_ERROR, "job-allow: %s: %s", one, why);
      return -1;
    }
    srv_allow_free(l);
    o += sprintf(o, "%s\n", one);
    p = e;
  }
  return 0;
}

int srv_tenants_init(srv_t *srv) {
  pthread_mutex_init(&srv->tenants_mu, NULL);
  if (!srv->cfg.tenants[0]) {
    srv->tenants = tenant_new("anonymous");
    if (!srv->tenants) return -1;
    srv->tenants->metrics = srv_metrics_tenant("anonymous", srv->tenants->id, 1); /* sessions' own groups */
    srv->tenants->max_dev_streams = INT32_MAX; /* open mode: the caps are each session's (session.c) */
    srv->tenants->max_running_jobs = 4;
    return open_allow(srv->tenants, srv->cfg.job_allow);
  }
  char err[512];
  if (srv_tenants_reload(srv, err, sizeof err)) {
    srv_log(SRV_LOG_ERROR, "%s", err);
    return -1;
  }
  return 0;
}

int srv_tenants_reload(srv_t *srv, char *err, size_t errlen) {
  srv_tenant_t *fresh;
  if (parse_file(srv->cfg.tenants, &fresh, err, errlen)) {
    srv_audit(SRV_LOG_WARN, "tenants reload rejected", NULL, NULL, "reason=%s", err); /* the old ones stay */
    return -1;
  }
  int added = 0, updated = 0, removed = 0;
  pthread_mutex_lock(&srv->tenants_mu);
  int at_start = srv->tenants == NULL;
  for (srv_tenant_t *t = srv->tenants; t; t = t->next) t->seen = 0;
  while (fresh) {
    srv_tenant_t *f = fresh, *t;
    fresh = f->next;
    for (t = srv->tenants; t && strcmp(t->name, f->name); t = t->next) {}
    if (!t) {
      if (!(t = tenant_new(f->name))) {
        free(f->allow);
        free(f);
        continue;
      }
      t->next = srv->tenants;
      srv->tenants = t;
      added++;
    } else {
      updated++;
    }
    pthread_mutex_lock(&t->mu);
    memcpy(t->hashes, f->hashes, sizeof t->hashes);
    t->nhashes = f->nhashes;
    t->devices = f->devices;
    t->mem_quota = f->mem_quota;
    t->max_sessions = f->max_sessions;
    t->max_streams = f->max_streams;
    t->max_slots = f->max_slots;
    t->max_dev_streams = f->max_dev_streams;
    t->max_inflight = f->max_inflight;
    t->max_unacked = f->max_unacked;
    t->weight = f->weight;
    memcpy(t->cert_subject, f->cert_subject, sizeof t->cert_subject);
    if (t->has_key != f->has_key || CRYPTO_memcmp(t->signing_key, f->signing_key, sizeof t->signing_key) != 0)
      t->key_gen++; /* sessions of tokens signed with the old key end (srv_grant_valid) */
    memcpy(t->signing_key, f->signing_key, sizeof t->signing_key);
    t->has_key = f->has_key;
    free(t->allow);
    t->allow = f->allow; /* taken */
    f->allow = NULL;
    t->max_queued_jobs = f->max_queued_jobs;
    t->max_running_jobs = f->max_running_jobs;
    t->max_job_fetch = f->max_job_fetch;
    t->job_disk = f->job_disk;
    t->removed = 0;
    t->seen = 1;
    pthread_mutex_unlock(&t->mu);
    free(f);
  }
  for (srv_tenant_t *t = srv->tenants; t; t = t->next)
    if (!t->seen && !t->removed) {
      pthread_mutex_lock(&t->mu);
      t->removed = 1;
      t->nhashes = 0;
      t->has_key = 0;
      t->key_gen++;
      pthread_mutex_unlock(&t->mu);
      removed++;
    }
  pthread_mutex_unlock(&srv->tenants_mu);
  srv_audit(SRV_LOG_INFO, "tenants loaded", NULL, NULL, "reason=%s: %s: %d added, %d updated, %d removed",
            at_start ? "start" : "reload", srv->cfg.tenants, added, updated, removed);
  return 0;
}

void srv_tenants_free(srv_t *srv) {
  while (srv->tenants) {
    srv_tenant_t *n = srv->tenants->next;
    pthread_mutex_destroy(&srv->tenants->mu);
    free(srv->tenants->allow);
    free(srv->tenants);
    srv->tenants = n;
  }
  pthread_mutex_destroy(&srv->tenants_mu);
}

/* ---- authentication ---------------------------------------------------------- */

/* The value of metadata key in md, or NULL. */
static const grpc_slice *md_find(const grpc_metadata_array *md, const char *key) {
  for (size_t i = 0; i < md->count; i++)
    if (grpc_slice_str_cmp(md->metadata[i].key, key) == 0) return &md->metadata[i].value;
  return NULL;
}

/* The peer certificate's subject, or "" without one. */
static void peer_subject(grpc_call *call, char *out, size_t len);

/* t, when the tenant binds no certificate subject or the peer's matches it; else NULL with *why. */
static srv_tenant_t *check_subject(grpc_call *call, srv_tenant_t *t, const char **why) {
  if (!t->cert_subject[0]) return t;
  char subj[256];
  peer_subject(call, subj, sizeof subj);
  if (strcmp(subj, t->cert_subject) != 0) {
    *why = "client certificate subject does not match the tenant";
    return NULL;
  }
  return t;
}

/* The peer certificate's subject, or "" without one. */
static void peer_subject(grpc_call *call, char *out, size_t len) {
  out[0] = '\0';
  grpc_auth_context *ctx = grpc_call_auth_context(call);
  if (!ctx) return;
  grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(ctx, GRPC_X509_SUBJECT_PROPERTY_NAME);
  const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);
  if (p) snprintf(out, len, "%.*s", (int)p->value_length, p->value);
  grpc_auth_context_release(ctx);
}

srv_tenant_t *srv_authenticate(srv_t *srv, grpc_call *call, const grpc_metadata_array *md, srv_grant_t *grant,
                               const char **why, grpc_status_code *code) {
  *why = NULL;
  *code = GRPC_STATUS_UNAUTHENTICATED;
  *grant = (srv_grant_t){.devices = ~0ULL};
  if (!srv->cfg.tenants[0]) return srv->tenants; /* open mode */
  const grpc_slice *v = md_find(md, "authorization");
  static const char bearer[] = "Bearer ";
  if (!v || GRPC_SLICE_LENGTH(*v) <= sizeof bearer - 1 ||
      memcmp(GRPC_SLICE_START_PTR(*v), bearer, sizeof bearer - 1) != 0) {
    *why = "no bearer token";
    return NULL;
  }
  const char *tok = (const char *)GRPC_SLICE_START_PTR(*v) + sizeof bearer - 1;
  size_t toklen = GRPC_SLICE_LENGTH(*v) - (sizeof bearer - 1);
  srv_tenant_t *jt = NULL;
  if (rdev_job_token_is(tok, toklen)) {
    if (!(jt = srv_job_token_tenant(srv, tok, toklen, grant, why, code))) return NULL;
    return check_subject(call, jt, why);
  }
  uint8_t h[32];
  unsigned hl = 0;
  if (!EVP_Digest(GRPC_SLICE_START_PTR(*v) + sizeof bearer - 1, GRPC_SLICE_LENGTH(*v) - (sizeof bearer - 1), h, &hl,
                  EVP_sha256(), NULL)) {
    *why = "cannot hash the token";
    return NULL;
  }
  /* every hash of every tenant is compared, each in constant time */
  srv_tenant_t *found = NULL;
  pthread_mutex_lock(&srv->tenants_mu);
  for (srv_tenant_t *t = srv->tenants; t; t = t->next) {
    pthread_mutex_lock(&t->mu);
    for (int i = 0; i < t->nhashes; i++)
      if (CRYPTO_memcmp(h, t->hashes[i], 32) == 0 && !t->removed) found = t;
    pthread_mutex_unlock(&t->mu);
  }
  pthread_mutex_unlock(&srv->tenants_mu);
  if (!found) {
    *why = "unknown token";
    return NULL;
  }
  return check_subject(call, found, why);
}

/* ---- quotas ---------------------------------------------------------------------- */

int srv_tenant_device(srv_tenant_t *t, uint64_t scope, int ndev, int local) {
  pthread_mutex_lock(&t->mu);
  uint64_t mask = t->devices & scope;
  pthread_mutex_unlock(&t->mu);
  for (int d = 0; d < ndev && d < 64; d++)
    if ((mask >> d & 1) && local-- == 0) return d;
  return -1;
}

int srv_tenant_device_count(srv_tenant_t *t, uint64_t scope, int ndev) {
  int n = 0;
  while (srv_tenant_device(t, scope, ndev, n) >= 0) n++;
  return n;
}

int srv_tenant_take(srv_tenant_t *t, srv_quota_t what, int dev, size_t amount, const char *peer, char *msg,
                    size_t msglen) {
  int ok = 1, cap = 0;
  pthread_mutex_lock(&t->mu);
  switch (what) {
    case SRV_Q_MEMORY:
      ok = dev >= 0 && dev < 64 && amount <= t->mem_quota && t->mem_used[dev] <= t->mem_quota - amount;
      if (ok)
        t->mem_used[dev] += amount;
      else
        snprintf(msg, msglen, "device memory quota of tenant %s on device %d: %zu of %zu bytes used, %zu more asked",
                 t->name, dev, dev >= 0 && dev < 64 ? t->mem_used[dev] : 0, t->mem_quota, amount);
      break;
    case SRV_Q_SESSIONS:
      ok = t->sessions < t->max_sessions;
      if (ok)
        t->sessions++;
      else
        snprintf(msg, msglen, "session quota of tenant %s: %d sessions open", t->name, t->sessions);
      break;
    case SRV_Q_STREAMS: {
      int per_dev = t->max_dev_streams ? t->max_dev_streams : SRV_DEV_STREAMS_DEFAULT;
      ok = t->streams < t->max_streams;
      cap = ok && (dev < 0 || dev >= 64 || t->dev_streams[dev] >= per_dev);
      ok = ok && !cap;
      if (ok)
        t->streams++, t->dev_streams[dev]++;
      else if (cap)
        snprintf(msg, msglen, "stream cap of tenant %s on device %d: %d streams open", t->name, dev,
                 dev >= 0 && dev < 64 ? t->dev_streams[dev] : 0);
      else
        snprintf(msg, msglen, "stream quota of tenant %s: %d streams open", t->name, t->streams);
      break;
    }
  }
  pthread_mutex_unlock(&t->mu);
  if (!ok) srv_audit(SRV_LOG_WARN, cap ? "cap refused" : "quota denied", t->name, peer, "reason=%s", msg);
  return ok ? 0 : -1;
}

void srv_tenant_give(srv_tenant_t *t, srv_quota_t what, int dev, size_t amount) {
  pthread_mutex_lock(&t->mu);
  switch (what) {
    case SRV_Q_MEMORY: t->mem_used[dev] -= amount; break;
    case SRV_Q_SESSIONS: t->sessions--; break;
    case SRV_Q_STREAMS: t->streams--, t->dev_streams[dev]--; break;
  }
  pthread_mutex_unlock(&t->mu);
}
