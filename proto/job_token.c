/*
 * proto/job_token.c — the job token's format (rdev/job_token.h): minting,
 * reading the claims of an untrusted token, and checking its MAC. The
 * client's `rdev token mint` and rdevd's authentication share it, so the
 * two cannot disagree on a byte.
 */
#include "rdev/job_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/status.h"

#define PREFIX_LEN (sizeof RDEV_JOB_TOKEN_PREFIX - 1)
#define CLAIMS_MAX 760 /* the claims' text at most (its base64url and the MAC stay in RDEV_JOB_TOKEN_MAX) */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int fail(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t cap, const char *fmt, ...) {
  if (msg && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
  }
  return RDEV_INVALID_PARAM;
}

size_t rdev_b64url_encode(const uint8_t *in, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    out[o++] = b64[v >> 18 & 63];
    out[o++] = b64[v >> 12 & 63];
    if (i + 1 < n) out[o++] = b64[v >> 6 & 63];
    if (i + 2 < n) out[o++] = b64[v & 63];
  }
  out[o] = '\0';
  return o;
}

static int b64_val(unsigned char c) {
  const char *p = c ? strchr(b64, c) : NULL;
  return p ? (int)(p - b64) : -1;
}

/* Decodes base64url without padding in[0..n) into out (cap bytes); its
 * length, or -1 for a bad character, a bad length or no room. Bits left
 * over must be 0 (one text per byte string). */
static long b64_decode(const char *in, size_t n, uint8_t *out, size_t cap) {
  if (n % 4 == 1) return -1;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64_val((unsigned char)in[i]);
    if (v < 0) return -1;
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (o == cap) return -1;
      out[o++] = (uint8_t)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  return acc ? -1 : (long)o;
}

static bool name_ok(const char *s, size_t n) {
  if (n == 0 || n >= RDEV_JOB_TOKEN_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
          strchr("._:@-", s[i])))
      return false;
  return true;
}

void rdev_job_devices_text(uint64_t mask, char *out, size_t cap) {
  size_t o = 0;
  if (cap) out[0] = '\0';
  for (int d = 0; d < 64; d++)
    if (mask >> d & 1) {
      int w = snprintf(out + o, cap > o ? cap - o : 0, "%s%d", o ? "," : "", d);
      if (w < 0 || (size_t)w >= (cap > o ? cap - o : 0)) return;
      o += (size_t)w;
    }
}

static int check_claims(const rdev_job_claims_t *c, char *msg, size_t cap) {
  if (!name_ok(c->tenant, strlen(c->tenant))) return fail(msg, cap, "job token: bad tenant name");
  if (!name_ok(c->job, strlen(c->job))) return fail(msg, cap, "job token: bad job id");
  if (c->nservers < 1 || c->nservers > RDEV_JOB_TOKEN_SERVERS_MAX)
    return fail(msg, cap, "job token: 1 to %d servers", RDEV_JOB_TOKEN_SERVERS_MAX);
  for (int i = 0; i < c->nservers; i++)
    if (!name_ok(c->servers[i], strlen(c->servers[i]))) return fail(msg, cap, "job token: bad server name");
  if (c->ngroups == 0) return fail(msg, cap, "job token: no devices");
  if (c->ngroups != 1 && c->ngroups != c->nservers)
    return fail(msg, cap, "job token: %d device groups for %d servers (1 or one per server)", c->ngroups, c->nservers);
  for (int i = 0; i < c->ngroups; i++)
    if (!c->devices[i]) return fail(msg, cap, "job token: no devices in group %d", i + 1);
  for (int i = 0; c->ngroups > 1 && i < c->nservers; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(c->servers[i], c->servers[j]))
        return fail(msg, cap, "job token: server %s named twice (its device group is ambiguous)", c->servers[i]);
  if (c->exp <= 0 || c->exp > 999999999999LL)
    return fail(msg, cap, "job token: expiry not in Unix seconds (1..12 digits)");
  return RDEV_OK;
}

static void mac_of(const char *text, size_t n, const uint8_t key[RDEV_JOB_KEY_LEN], uint8_t mac[32]) {
  unsigned len = 0;
  HMAC(EVP_sha256(), key, RDEV_JOB_KEY_LEN, (const unsigned char *)text, n, mac, &len);
}

int rdev_job_token_mint(const rdev_job_claims_t *c, const uint8_t key[RDEV_JOB_KEY_LEN], char *out, size_t cap,
                        char *msg, size_t msgcap) {
  int rc = check_claims(c, msg, msgcap);
  if (rc) return rc;
  char claims[CLAIMS_MAX], servers[RDEV_JOB_TOKEN_SERVERS_MAX * RDEV_JOB_TOKEN_NAME_MAX];
  char devs[RDEV_JOB_TOKEN_SERVERS_MAX * 193];
  size_t o = 0;
  for (int i = 0; i < c->nservers; i++) o += (size_t)sprintf(servers + o, "%s%s", i ? "," : "", c->servers[i]);
  o = 0;
  for (int i = 0; i < c->ngroups; i++) {
    if (i) devs[o++] = '/';
    rdev_job_devices_text(c->devices[i], devs + o, sizeof devs - o);
    o += strlen(devs + o);
  }
  int n = snprintf(claims, sizeof claims, "v=1;tenant=%s;job=%s;servers=%s;devices=%s;exp=%lld", c->tenant, c->job,
                   servers, devs, (long long)c->exp);
  if (n < 0 || (size_t)n >= sizeof claims) return fail(msg, msgcap, "job token: claims too long");
  char tok[RDEV_JOB_TOKEN_MAX + 64];
  memcpy(tok, RDEV_JOB_TOKEN_PREFIX, PREFIX_LEN);
  size_t len = PREFIX_LEN + rdev_b64url_encode((const uint8_t *)claims, (size_t)n, tok + PREFIX_LEN);
  uint8_t mac[32];
  mac_of(tok, len, key, mac);
  tok[len++] = '.';
  len += rdev_b64url_encode(mac, sizeof mac, tok + len);
  if (len + 1 > cap || len + 1 > RDEV_JOB_TOKEN_MAX) return fail(msg, msgcap, "job token: no room for the token");
  memcpy(out, tok, len + 1);
  return RDEV_OK;
}

int rdev_job_token_is(const char *tok, size_t len) {
  return len >= PREFIX_LEN && memcmp(tok, RDEV_JOB_TOKEN_PREFIX, PREFIX_LEN) == 0;
}

/* The next "key=" field of *p (up to ';' or end) into value [*v, *v + *n). */
static bool field(const char **p, const char *end, const char *key, const char **v, size_t *n) {
  size_t kl = strlen(key);
  if ((size_t)(end - *p) < kl + 1 || memcmp(*p, key, kl) != 0 || (*p)[kl] != '=') return false;
  *v = *p + kl + 1;
  const char *semi = memchr(*v, ';', (size_t)(end - *v));
  *n = (size_t)((semi ? semi : end) - *v);
  *p = semi ? semi + 1 : end;
  return true;
}

int rdev_job_token_claims(const char *tok, size_t len, rdev_job_claims_t *c, char *msg, size_t msgcap) {
  memset(c, 0, sizeof *c);
  if (!rdev_job_token_is(tok, len) || len >= RDEV_JOB_TOKEN_MAX) return fail(msg, msgcap, "not a job token");
  const char *body = tok + PREFIX_LEN, *dot = memchr(body, '.', len - PREFIX_LEN);
  if (!dot) return fail(msg, msgcap, "job token: no MAC");
  char text[CLAIMS_MAX + 1];
  long n = b64_decode(body, (size_t)(dot - body), (uint8_t *)text, CLAIMS_MAX);
  if (n <= 0) return fail(msg, msgcap, "job token: claims not base64url");
  const char *p = text, *end = text + n, *v;
  size_t vn;
  if (memchr(text, '\0', (size_t)n)) return fail(msg, msgcap, "job token: NUL in the claims");
  if (!field(&p, end, "v", &v, &vn) || vn != 1 || *v != '1') return fail(msg, msgcap, "job token: not version 1");
  if (!field(&p, end, "tenant", &v, &vn) || !name_ok(v, vn)) return fail(msg, msgcap, "job token: bad tenant");
  memcpy(c->tenant, v, vn);
  if (!field(&p, end, "job", &v, &vn) || !name_ok(v, vn)) return fail(msg, msgcap, "job token: bad job id");
  memcpy(c->job, v, vn);
  if (!field(&p, end, "servers", &v, &vn)) return fail(msg, msgcap, "job token: no servers");
  for (const char *s = v, *se = v + vn; s <= se;) {
    const char *comma = memchr(s, ',', (size_t)(se - s)), *e = comma ? comma : se;
    if (c->nservers == RDEV_JOB_TOKEN_SERVERS_MAX || !name_ok(s, (size_t)(e - s)))
      return fail(msg, msgcap, "job token: bad servers");
    memcpy(c->servers[c->nservers++], s, (size_t)(e - s));
    s = e + 1;
  }
  if (!field(&p, end, "devices", &v, &vn) || vn == 0) return fail(msg, msgcap, "job token: no devices");
  for (const char *g = v, *ve = v + vn; g <= ve;) { /* groups "0,1/3": one per server, or one for all */
    const char *slash = memchr(g, '/', (size_t)(ve - g)), *se = slash ? slash : ve;
    if (c->ngroups == RDEV_JOB_TOKEN_SERVERS_MAX) return fail(msg, msgcap, "job token: too many device groups");
    if (g == se) return fail(msg, msgcap, "job token: empty device group");
    for (const char *s = g; s < se;) {
      int d = 0, digits = 0;
      while (s < se && *s >= '0' && *s <= '9' && digits < 3) d = d * 10 + (*s++ - '0'), digits++;
      if (!digits || d > 63 || (s < se && *s++ != ',') || (s == se && s[-1] == ','))
        return fail(msg, msgcap, "job token: bad devices");
      c->devices[c->ngroups] |= 1ull << d;
    }
    c->ngroups++;
    g = se + 1;
  }
  if (!field(&p, end, "exp", &v, &vn) || vn == 0 || vn > 12) return fail(msg, msgcap, "job token: bad expiry");
  for (size_t i = 0; i < vn; i++) {
    if (v[i] < '0' || v[i] > '9') return fail(msg, msgcap, "job token: bad expiry");
    c->exp = c->exp * 10 + (v[i] - '0');
  }
  if (p != end) return fail(msg, msgcap, "job token: unknown claims after exp");
  return check_claims(c, msg, msgcap);
}

uint64_t rdev_job_claims_devices(const rdev_job_claims_t *c, const char *server) {
  for (int i = 0; i < c->nservers && i < RDEV_JOB_TOKEN_SERVERS_MAX; i++)
    if (!strcmp(c->servers[i], server)) return c->ngroups == 1 ? c->devices[0] : c->ngroups > i ? c->devices[i] : 0;
  return 0;
}

int rdev_job_token_check_mac(const char *tok, size_t len, const uint8_t key[RDEV_JOB_KEY_LEN]) {
  if (!rdev_job_token_is(tok, len) || len >= RDEV_JOB_TOKEN_MAX) return RDEV_INVALID_PARAM;
  const char *body = tok + PREFIX_LEN, *dot = memchr(body, '.', len - PREFIX_LEN);
  if (!dot) return RDEV_INVALID_PARAM;
  uint8_t got[33], want[32];
  if (b64_decode(dot + 1, len - (size_t)(dot + 1 - tok), got, sizeof got) != 32) return RDEV_INVALID_PARAM;
  mac_of(tok, (size_t)(dot - tok), key, want);
  return CRYPTO_memcmp(got, want, sizeof want) == 0 ? RDEV_OK : RDEV_INVALID_PARAM;
}
