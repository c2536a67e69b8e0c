/*
 * client/lib/auth.c — how a session proves who it is: the channel's
 * credentials (plaintext, TLS, or mutual TLS with a client certificate) and
 * the tenant's bearer token, sent as `authorization: Bearer <token>` on every
 * call. Each setting comes from rdev_options_t, else from the environment
 * (RDEV_TOKEN, else the first line of the file RDEV_TOKEN_FILE names, as
 * a batch job's prolog leaves a job token; RDEV_CA, RDEV_CERT, RDEV_KEY).
 * Also the tenant tooling: new
 * tokens and the hash a tenants file keeps. Owns the token metadata
 * (cl_auth_t); calls only error.c and the wire helpers.
 */
#include <errno.h>
#include <grpc/grpc_security.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "rdev/job_token.h"

/* The TLS sessions this process made, for its later connections to the
 * same server to resume (gRPC core's LRU cache, by server name): a second
 * session skips sending and checking certificates. One cache per set of
 * credentials (CA, certificate, key), so that a connection never resumes a
 * session another identity made, or one checked against another CA; at
 * most TLS_CACHES sets, later ones resume nothing. Kept for the process's
 * life. */
#define TLS_CACHES 8
#define TLS_CACHE_SERVERS 64
static struct {
  unsigned char id[32];
  grpc_ssl_session_cache *cache;
} tls_caches[TLS_CACHES];
static pthread_mutex_t tls_caches_mu = PTHREAD_MUTEX_INITIALIZER;

/* The cache of the credentials made of these PEMs (each may be NULL), or
 * NULL. */
static grpc_ssl_session_cache *tls_cache_for(const char *const pem[3]) {
  unsigned char id[32];
  unsigned idl = 0;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL);
  for (int i = 0; ok && i < 3; i++) { /* each with its length: no two sets hash alike by shifting bytes */
    uint64_t n = pem[i] ? strlen(pem[i]) : UINT64_MAX;
    ok = EVP_DigestUpdate(md, &n, sizeof n) && (!pem[i] || EVP_DigestUpdate(md, pem[i], (size_t)n));
  }
  ok = ok && EVP_DigestFinal_ex(md, id, &idl);
  EVP_MD_CTX_free(md);
  if (!ok) return NULL;
  grpc_ssl_session_cache *c = NULL;
  pthread_mutex_lock(&tls_caches_mu);
  for (int i = 0; i < TLS_CACHES && !c; i++) {
    if (!tls_caches[i].cache) {
      memcpy(tls_caches[i].id, id, sizeof id);
      tls_caches[i].cache = grpc_ssl_session_cache_create_lru(TLS_CACHE_SERVERS);
    }
    if (memcmp(tls_caches[i].id, id, sizeof id) == 0) c = tls_caches[i].cache;
  }
  pthread_mutex_unlock(&tls_caches_mu);
  return c;
}

static const char *opt_or_env(const char *v, const char *env) {
  if (v && *v) return v;
  const char *e = getenv(env);
  return e && *e ? e : NULL;
}

/* The first line of the file RDEV_TOKEN_FILE names into buf: buf, NULL
 * when the variable is unset, or NULL with *err when the file cannot be read. */
static const char *token_from_file(char *buf, size_t cap, int *err) {
  const char *path = getenv("RDEV_TOKEN_FILE");
  *err = RDEV_OK;
  if (!path || !*path) return NULL;
  FILE *f = fopen(path, "r");
  if (!f || !fgets(buf, (int)cap, f)) {
    *err = cl_error(RDEV_INVALID_PARAM, "RDEV_TOKEN_FILE %s: %s", path, f ? "empty" : strerror(errno));
    if (f) fclose(f);
    return NULL;
  }
  fclose(f);
  buf[strcspn(buf, "\r\n")] = '\0';
  if (!buf[0]) *err = cl_error(RDEV_INVALID_PARAM, "RDEV_TOKEN_FILE %s: no token on its first line", path);
  return buf[0] ? buf : NULL;
}

int cl_auth_setup(cl_auth_t *a, const rdev_options_t *opts, grpc_channel_credentials **creds,
                  grpc_ssl_session_cache **cache) {
  const rdev_options_t none = {0};
  if (!opts) opts = &none;
  *creds = NULL;
  *cache = NULL;
  const char *token = opt_or_env(opts->token, "RDEV_TOKEN");
  char file_token[4096];
  if (!token) {
    int err;
    token = token_from_file(file_token, sizeof file_token, &err);
    if (err) return err;
  }
  if (token) {
    size_t n = strlen(token) + sizeof "Bearer ";
    char *v = malloc(n);
    if (!v) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
    snprintf(v, n, "Bearer %s", token);
    a->md.key = grpc_slice_from_static_string("authorization");
    a->md.value = grpc_slice_from_copied_string(v);
    free(v);
    a->n = 1;
  }
  const char *ca = opt_or_env(opts->ca_file, "RDEV_CA");
  const char *cert = opt_or_env(opts->cert_file, "RDEV_CERT");
  const char *key = opt_or_env(opts->key_file, "RDEV_KEY");
  if (!ca && !cert) {
    *creds = grpc_insecure_credentials_create();
    return RDEV_OK;
  }
  if (!cert != !key)
    return cl_error(RDEV_INVALID_PARAM, "a client certificate needs its key, and the key its certificate");
  char *ca_pem = ca ? rdev_wire_read_file(ca) : NULL;
  char *cert_pem = cert ? rdev_wire_read_file(cert) : NULL;
  char *key_pem = key ? rdev_wire_read_file(key) : NULL;
  int rc = RDEV_OK;
  if ((ca && !ca_pem) || (cert && !cert_pem) || (key && !key_pem)) {
    rc = cl_error(RDEV_INVALID_PARAM, "cannot read %s", ca && !ca_pem ? ca : cert && !cert_pem ? cert : key);
  } else {
    grpc_ssl_pem_key_cert_pair pair = {key_pem, cert_pem};
    *creds = grpc_ssl_credentials_create(ca_pem, cert ? &pair : NULL, NULL, NULL);
    if (!*creds) rc = cl_error(RDEV_INVALID_PARAM, "bad TLS settings");
    const char *pems[3] = {ca_pem, cert_pem, key_pem};
    if (*creds) *cache = tls_cache_for(pems);
  }
  free(ca_pem);
  free(cert_pem);
  free(key_pem);
  return rc;
}

void cl_auth_release(cl_auth_t *a) {
  if (!a->n) return;
  grpc_slice_unref(a->md.key);
  grpc_slice_unref(a->md.value);
  a->n = 0;
}

int rdev_token_new(char *token, size_t len) {
  unsigned char r[32];
  char text[45];
  if (!token || len < 44) return cl_error(RDEV_INVALID_PARAM, "token buffer must hold 44 bytes");
  if (RAND_bytes(r, sizeof r) != 1) return cl_error(RDEV_INTERNAL_ERROR, "no randomness");
  memcpy(token, text, rdev_b64url_encode(r, sizeof r, text) + 1); /* 256 bits: 43 base64url digits */
  return RDEV_OK;
}

int rdev_token_hash(const char *token, char *hash, size_t len) {
  unsigned char h[32];
  unsigned hl = 0;
  if (!token || !hash || len < 72) return cl_error(RDEV_INVALID_PARAM, "hash buffer must hold 72 bytes");
  if (!EVP_Digest(token, strlen(token), h, &hl, EVP_sha256(), NULL))
    return cl_error(RDEV_INTERNAL_ERROR, "SHA-256 failed");
  int n = snprintf(hash, len, "sha256:");
  for (int i = 0; i < 32; i++) n += snprintf(hash + n, len - (size_t)n, "%02x", h[i]);
  return RDEV_OK;
}

/* Whether ctx's property name has the value v. */
static bool prop_is(grpc_auth_context *ctx, const char *name, const char *v) {
  grpc_auth_property_iterator it = grpc_auth_context_find_properties_by_name(ctx, name);
  const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);
  return p && p->value_length == strlen(v) && memcmp(p->value, v, p->value_length) == 0;
}

int cl_auth_tls_of(grpc_call *call) {
  grpc_auth_context *ctx = call ? grpc_call_auth_context(call) : NULL;
  if (!ctx) return RDEV_TLS_NONE;
  int tls = RDEV_TLS_NONE;
  if (prop_is(ctx, GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME, GRPC_SSL_TRANSPORT_SECURITY_TYPE))
    tls = prop_is(ctx, GRPC_SSL_SESSION_REUSED_PROPERTY, "true") ? RDEV_TLS_RESUMED : RDEV_TLS_FULL;
  grpc_auth_context_release(ctx);
  return tls;
}

bool cl_target_several(const char *target) {
  return target && strchr(target, ',') && strncmp(target, "ipv4:", 5) && strncmp(target, "ipv6:", 5);
}

int cl_channel_create(const char *target, const rdev_options_t *opts, const cl_int_arg_t *iargs, int n, cl_auth_t *a,
                      grpc_channel **out) {
  *out = NULL;
  if (cl_target_several(target)) /* sessions over several servers are multi.c's */
    return cl_error(RDEV_INVALID_PARAM, "target \"%s\" names several servers: this call reaches one", target);
  grpc_arg args[16];
  if (n >= (int)(sizeof args / sizeof args[0])) return cl_error(RDEV_INTERNAL_ERROR, "too many channel arguments");
  memset(args, 0, sizeof args);
  for (int i = 0; i < n; i++) {
    args[i].type = GRPC_ARG_INTEGER;
    args[i].key = (char *)iargs[i].key;
    args[i].value.integer = iargs[i].value;
  }
  grpc_channel_credentials *creds;
  grpc_ssl_session_cache *cache;
  int rc = cl_auth_setup(a, opts, &creds, &cache);
  if (rc) return rc;
  if (cache) args[n++] = grpc_ssl_session_cache_create_channel_arg(cache);
  grpc_channel_args chargs = {(size_t)n, args};
  *out = grpc_channel_create(target, creds, &chargs);
  grpc_channel_credentials_release(creds);
  return *out ? RDEV_OK : cl_error(RDEV_UNAVAILABLE, "cannot make a channel to %s", target);
}
