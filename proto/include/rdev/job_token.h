/*
 * rdev/job_token.h — job tokens: short-lived, self-contained bearer tokens
 * that give one batch job a tenant's devices on named servers until an
 * expiry. rdevd verifies them with the tenant's signing key alone (no list,
 * no lookup elsewhere); `rdev token mint` and rdev_job_token_mint make them.
 *
 * A token is text: "rdjt1." BODY "." MAC, BODY the base64url (no padding)
 * of the claims "v=1;tenant=T;job=J;servers=S1,S2;devices=0,1;exp=E" in
 * that order, MAC the base64url of HMAC-SHA256(key, "rdjt1." BODY). T, J
 * and each server name are 1 to 63 characters of [A-Za-z0-9._:@-]
 * (servers: at most 16); devices are a server's device numbers 0..63,
 * either one group for every server ("devices=0,1": devices 0 and 1 on
 * each) or one group per server in the servers' order, '/' between groups
 * ("servers=S1,S2;devices=0,1/3": S1's devices 0 and 1, S2's device 3; then
 * no server is named twice). E is the expiry in seconds since the Unix
 * epoch, 1 to 12 digits.
 */
#ifndef RDEV_JOB_TOKEN_H
#define RDEV_JOB_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define RDEV_JOB_TOKEN_PREFIX "rdjt1."
#define RDEV_JOB_TOKEN_NAME_MAX 64 /* with the NUL */
#define RDEV_JOB_TOKEN_SERVERS_MAX 16
#define RDEV_JOB_TOKEN_MAX 1024 /* a token's length at most, with the NUL */
#define RDEV_JOB_KEY_LEN 32     /* a signing key's bytes */

typedef struct {
  char tenant[RDEV_JOB_TOKEN_NAME_MAX];
  char job[RDEV_JOB_TOKEN_NAME_MAX];
  int nservers;
  char servers[RDEV_JOB_TOKEN_SERVERS_MAX][RDEV_JOB_TOKEN_NAME_MAX];
  int ngroups; /* 1: devices[0] is every server's; else nservers: devices[i] is servers[i]'s */
  uint64_t devices[RDEV_JOB_TOKEN_SERVERS_MAX]; /* bit d: the server's device d; none 0 */
  int64_t exp;                                  /* Unix seconds */
} rdev_job_claims_t;

/* The devices c gives the server named server (a mask as in devices[]):
 * its group, the one group, or 0 when c does not name that server. */
uint64_t rdev_job_claims_devices(const rdev_job_claims_t *c, const char *server);

/* Writes the token of claims c signed with key into out (cap bytes,
 * NUL-terminated). RDEV_OK; RDEV_INVALID_PARAM for claims outside the
 * rules above (its sentence in msg when msg is not NULL) or a cap too small. */
int rdev_job_token_mint(const rdev_job_claims_t *c, const uint8_t key[RDEV_JOB_KEY_LEN], char *out, size_t cap,
                        char *msg, size_t msgcap);

/* Whether tok[0..len) has the job token's prefix (it is then never a
 * plain bearer token). */
int rdev_job_token_is(const char *tok, size_t len);

/* Reads the claims of tok[0..len) without checking its MAC (any bytes:
 * untrusted). RDEV_OK, else RDEV_INVALID_PARAM with the reason in msg. */
int rdev_job_token_claims(const char *tok, size_t len, rdev_job_claims_t *c, char *msg, size_t msgcap);

/* Whether tok[0..len) carries a MAC made with key (constant time in the
 * MAC's bytes): RDEV_OK, else RDEV_INVALID_PARAM. Check the claims first. */
int rdev_job_token_check_mac(const char *tok, size_t len, const uint8_t key[RDEV_JOB_KEY_LEN]);

/* base64url without padding of in[0..n) into out, which must hold
 * 4 * ((n + 2) / 3) + 1 bytes; NUL-terminated; returns its length. The
 * token's parts and rdev_token_new's bearer tokens are written so. */
size_t rdev_b64url_encode(const uint8_t *in, size_t n, char *out);

/* "0,1,5" for a device mask (cap at least 192 bytes for all 64). A
 * token's device groups are these texts joined by '/'. */
void rdev_job_devices_text(uint64_t mask, char *out, size_t cap);

#endif
