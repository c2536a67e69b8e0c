/*
 * tests/fuzz/fuzz_tenants.c — libFuzzer harness for rdevd's tenants file
 * parser (srv_tenants_parse and its helpers): the input is the file's
 * text, any bytes. A good text must give a list as srv.h promises (unique,
 * non-empty names; up to 8 tokens no two tenants share, or a signing key;
 * non-empty device masks; limits in range); a bad one must give no list
 * and say why in err, truncated safely however small err is. The same
 * bytes are read as a job token (rdev/job_token.h): claims that pass hold
 * the format's rules, and no MAC checks with a fixed key. A broken
 * promise abort()s; sanitizers catch the rest (memory errors, UB, leaks).
 */
#include "fuzz.h"
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/job_token.h"
#include "srv.h"

#define CHECK(c) \
  do { \
    if (!(c)) abort(); \
  } while (0)

static void check_err(const char *err, size_t errlen, size_t bufsize) {
  size_t n = strnlen(err, errlen);
  CHECK(n < errlen);
  CHECK(n > 0 || errlen == 1);
  for (size_t i = errlen; i < bufsize; i++) CHECK(err[i] == 0x5a);
}

static int limit_ok(int v, int unset) { return v == unset || (v >= 1 && v <= 1000000); }

static void check_tenant(const srv_tenant_t *t) {
  size_t n = strnlen(t->name, sizeof t->name);
  CHECK(n > 0 && n < sizeof t->name);
  CHECK(!isspace((unsigned char)t->name[0]) && !isspace((unsigned char)t->name[n - 1]));
  for (size_t i = 0; i < n; i++) CHECK(t->name[i] != ']' && !iscntrl((unsigned char)t->name[i]));
  CHECK((t->nhashes >= 1 || t->has_key == 1) && t->nhashes <= SRV_MAX_TOKENS);
  CHECK(t->devices != 0);
  CHECK(limit_ok(t->max_sessions, INT32_MAX));
  CHECK(limit_ok(t->max_streams, INT32_MAX));
  CHECK(t->weight >= 1 && t->weight <= 1000000);
  CHECK(t->max_inflight >= 4096);
  CHECK(strnlen(t->cert_subject, sizeof t->cert_subject) < sizeof t->cert_subject);
  CHECK(t->id == 0 && !t->removed && !t->seen && !t->sessions && !t->streams);
  for (int d = 0; d < 64; d++) CHECK(t->mem_used[d] == 0);
}

static void check_list(const srv_tenant_t *list) {
  for (const srv_tenant_t *t = list; t; t = t->next) {
    check_tenant(t);
    for (const srv_tenant_t *u = t->next; u; u = u->next) {
      CHECK(strcmp(t->name, u->name) != 0);
      for (int i = 0; i < t->nhashes; i++)
        for (int j = 0; j < u->nhashes; j++) CHECK(memcmp(t->hashes[i], u->hashes[j], 32) != 0);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy, so reading past the input is caught. */
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  memcpy(text, data, size);

  srv_tenant_t *list = (srv_tenant_t *)1;
  char err[600];
  memset(err, 0x5a, sizeof err);
  int rc = srv_tenants_parse(text, size, "fuzz.tenants", &list, err, 512);
  if (rc == 0) {
    check_list(list);
    srv_tenant_list_free(list);
  } else {
    CHECK(rc == -1 && list == NULL);
    check_err(err, 512, sizeof err);
    /* a tiny err under a long name: truncated, never overrun */
    static const char longname[] = "/a/tenants/file/with/a/name/longer/than/the/message/buffer.conf";
    char small[24];
    memset(small, 0x5a, sizeof small);
    list = (srv_tenant_t *)1;
    CHECK(srv_tenants_parse(text, size, longname, &list, small, 8) == -1 && list == NULL);
    check_err(small, 8, sizeof small);
    CHECK(srv_tenants_parse(text, size, NULL, &list, NULL, 0) == -1 && list == NULL);
  }
  rdev_job_claims_t c;
  char msg[128];
  if (rdev_job_token_claims(text, size, &c, msg, sizeof msg) == 0) {
    CHECK(c.tenant[0] && c.job[0] && c.nservers >= 1 && c.nservers <= RDEV_JOB_TOKEN_SERVERS_MAX);
    CHECK((c.ngroups == 1 || c.ngroups == c.nservers) && c.exp > 0);
    for (int i = 0; i < c.nservers; i++) CHECK(rdev_job_claims_devices(&c, c.servers[i]) != 0);
  }
  static const uint8_t key[RDEV_JOB_KEY_LEN] = {7};
  CHECK(rdev_job_token_check_mac(text, size, key) != 0); /* a MAC is not guessed */
  /* and the bytes as a token's claims, base64url-encoded as a minter would */
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  char tok[RDEV_JOB_TOKEN_MAX + 8] = RDEV_JOB_TOKEN_PREFIX;
  size_t o = sizeof RDEV_JOB_TOKEN_PREFIX - 1;
  for (size_t i = 0; i < size && o + 4 < sizeof tok - 6; i += 3) {
    uint32_t v =
        (uint32_t)data[i] << 16 | (i + 1 < size ? (uint32_t)data[i + 1] << 8 : 0) | (i + 2 < size ? data[i + 2] : 0);
    tok[o++] = b64[v >> 18 & 63];
    tok[o++] = b64[v >> 12 & 63];
    if (i + 1 < size) tok[o++] = b64[v >> 6 & 63];
    if (i + 2 < size) tok[o++] = b64[v & 63];
  }
  memcpy(tok + o, ".AAAA", 5);
  if (rdev_job_token_claims(tok, o + 5, &c, msg, sizeof msg) == 0)
    CHECK(c.tenant[0] && c.job[0] && c.nservers >= 1 && (c.ngroups == 1 || c.ngroups == c.nservers) &&
          c.devices[0] != 0 && c.exp > 0 && c.exp <= 999999999999LL);
  free(text);
  return 0;
}
