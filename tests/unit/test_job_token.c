/*
 * tests/unit/test_job_token.c — the job token's format (rdev/job_token.h):
 * minted tokens read back to the same claims and check with their key
 * only; every byte of a token matters (a changed claim, a changed MAC, a
 * MAC from another key); malformed and oversized claims are refused when
 * minted and when read; device groups (one for every server, or one per
 * server) read back per server, other counts are refused; garbage never
 * passes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/job_token.h"
#include "rdev/status.h"

static const uint8_t KEY[RDEV_JOB_KEY_LEN] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                                              17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static rdev_job_claims_t claims(void) {
  rdev_job_claims_t c = {.tenant = "alice", .job = "slurm-4242", .nservers = 2, .ngroups = 1};
  c.devices[0] = (1ull << 0) | (1ull << 3);
  strcpy(c.servers[0], "npu-a.example:50051");
  strcpy(c.servers[1], "npu-b");
  c.exp = 1900000000;
  return c;
}

START_TEST(test_minted_token_reads_back_and_checks_with_its_key_only) {
  rdev_job_claims_t c = claims(), back;
  char tok[RDEV_JOB_TOKEN_MAX], msg[128];
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_OK);
  ck_assert(rdev_job_token_is(tok, strlen(tok)));
  ck_assert_int_eq(rdev_job_token_claims(tok, strlen(tok), &back, msg, sizeof msg), RDEV_OK);
  ck_assert_str_eq(back.tenant, "alice");
  ck_assert_str_eq(back.job, "slurm-4242");
  ck_assert_int_eq(back.nservers, 2);
  ck_assert_str_eq(back.servers[0], "npu-a.example:50051");
  ck_assert_str_eq(back.servers[1], "npu-b");
  ck_assert_int_eq(back.ngroups, 1);
  ck_assert_uint_eq(back.devices[0], (1ull << 0) | (1ull << 3));
  ck_assert_uint_eq(rdev_job_claims_devices(&back, "npu-a.example:50051"), (1ull << 0) | (1ull << 3));
  ck_assert_uint_eq(rdev_job_claims_devices(&back, "npu-b"), (1ull << 0) | (1ull << 3));
  ck_assert_uint_eq(rdev_job_claims_devices(&back, "npu-c"), 0);
  ck_assert_int_eq(back.exp, 1900000000);
  ck_assert_int_eq(rdev_job_token_check_mac(tok, strlen(tok), KEY), RDEV_OK);
  uint8_t other[RDEV_JOB_KEY_LEN];
  memcpy(other, KEY, sizeof other);
  other[31] ^= 1;
  ck_assert_int_eq(rdev_job_token_check_mac(tok, strlen(tok), other), RDEV_INVALID_PARAM);
  ck_assert(!rdev_job_token_is("abc", 3));
}
END_TEST

/* A token with any one character changed no longer passes both checks. */
START_TEST(test_every_character_matters) {
  rdev_job_claims_t c = claims(), back;
  char tok[RDEV_JOB_TOKEN_MAX], bad[RDEV_JOB_TOKEN_MAX], msg[128];
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_OK);
  size_t n = strlen(tok);
  for (size_t i = 0; i < n; i++) {
    memcpy(bad, tok, n + 1);
    bad[i] = bad[i] == 'A' ? 'B' : 'A';
    int ok = rdev_job_token_claims(bad, n, &back, msg, sizeof msg) == RDEV_OK &&
             rdev_job_token_check_mac(bad, n, KEY) == RDEV_OK;
    ck_assert_msg(!ok, "character %zu changed, the token still passes", i);
  }
  /* cut short, or with a byte more */
  ck_assert_int_ne(rdev_job_token_check_mac(tok, n - 1, KEY), RDEV_OK);
  memcpy(bad, tok, n);
  bad[n] = 'A';
  ck_assert_int_ne(rdev_job_token_check_mac(bad, n + 1, KEY), RDEV_OK);
}
END_TEST

START_TEST(test_bad_claims_are_not_minted) {
  char tok[RDEV_JOB_TOKEN_MAX], msg[128];
  rdev_job_claims_t c = claims();
  strcpy(c.tenant, "al ice");
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims();
  c.job[0] = '\0';
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims();
  strcpy(c.servers[1], "a;devices=0-63");
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims();
  c.devices[0] = 0;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims();
  c.exp = 0;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims();
  c.exp = 1700000000000; /* milliseconds by mistake: 13 digits */
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims();
  c.nservers = 0;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims(); /* 16 servers of 63 characters do not fit in a token */
  c.nservers = RDEV_JOB_TOKEN_SERVERS_MAX;
  for (int i = 0; i < c.nservers; i++) memset(c.servers[i], 'a' + i, RDEV_JOB_TOKEN_NAME_MAX - 1);
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims(); /* no room */
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, 20, msg, sizeof msg), RDEV_INVALID_PARAM);
}
END_TEST

/* One device group per server: each server reads back its own group. */
START_TEST(test_per_server_device_groups_read_back_per_server) {
  rdev_job_claims_t c = claims(), back;
  c.ngroups = 2;
  c.devices[0] = (1ull << 0) | (1ull << 1);
  c.devices[1] = 1ull << 3;
  char tok[RDEV_JOB_TOKEN_MAX], msg[128];
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_OK);
  ck_assert_int_eq(rdev_job_token_claims(tok, strlen(tok), &back, msg, sizeof msg), RDEV_OK);
  ck_assert_int_eq(rdev_job_token_check_mac(tok, strlen(tok), KEY), RDEV_OK);
  ck_assert_int_eq(back.ngroups, 2);
  ck_assert_uint_eq(rdev_job_claims_devices(&back, "npu-a.example:50051"), (1ull << 0) | (1ull << 1));
  ck_assert_uint_eq(rdev_job_claims_devices(&back, "npu-b"), 1ull << 3);
  ck_assert_uint_eq(rdev_job_claims_devices(&back, "npu-a"), 0);
  /* the claims' text is "devices=0,1/3" */
  const char *body = tok + strlen(RDEV_JOB_TOKEN_PREFIX);
  char want[RDEV_JOB_TOKEN_MAX];
  size_t n = rdev_b64url_encode((const uint8_t *)"v=1;tenant=alice;job=slurm-4242;servers=npu-a.example:50051,npu-b;"
                                                 "devices=0,1/3;exp=1900000000",
                                strlen("v=1;tenant=alice;job=slurm-4242;servers=npu-a.example:50051,npu-b;"
                                       "devices=0,1/3;exp=1900000000"),
                                want);
  ck_assert_int_eq(strncmp(body, want, n), 0);
  ck_assert_int_eq(body[n], '.');
  /* 16 servers, 16 groups of one device each */
  c.nservers = c.ngroups = RDEV_JOB_TOKEN_SERVERS_MAX;
  for (int i = 0; i < c.nservers; i++) {
    snprintf(c.servers[i], sizeof c.servers[i], "s%d", i);
    c.devices[i] = 1ull << (63 - i);
  }
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_OK);
  ck_assert_int_eq(rdev_job_token_claims(tok, strlen(tok), &back, msg, sizeof msg), RDEV_OK);
  for (int i = 0; i < c.nservers; i++)
    ck_assert_uint_eq(rdev_job_claims_devices(&back, c.servers[i]), 1ull << (63 - i));
}
END_TEST

/* Groups are 1 or one per server, none empty, no server named twice. */
START_TEST(test_bad_device_groups_are_not_minted) {
  char tok[RDEV_JOB_TOKEN_MAX], msg[128];
  rdev_job_claims_t c = claims();
  c.ngroups = 0;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims(); /* 3 groups for 2 servers */
  c.ngroups = 3;
  c.devices[1] = c.devices[2] = 1;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  ck_assert_str_eq(msg, "job token: 3 device groups for 2 servers (1 or one per server)");
  c = claims(); /* 2 groups for 3 servers */
  c.nservers = 3;
  strcpy(c.servers[2], "npu-c");
  c.ngroups = 2;
  c.devices[1] = 1;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c = claims(); /* an empty group */
  c.ngroups = 2;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  ck_assert_str_eq(msg, "job token: no devices in group 2");
  c = claims(); /* a server twice: which group is its? */
  strcpy(c.servers[1], c.servers[0]);
  c.ngroups = 2;
  c.devices[1] = 1;
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
  c.ngroups = 1; /* one group for both: as before */
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_OK);
  c = claims(); /* 16 groups of all 64 devices do not fit in a token */
  c.nservers = c.ngroups = RDEV_JOB_TOKEN_SERVERS_MAX;
  for (int i = 0; i < c.nservers; i++) {
    snprintf(c.servers[i], sizeof c.servers[i], "s%d", i);
    c.devices[i] = ~0ull;
  }
  ck_assert_int_eq(rdev_job_token_mint(&c, KEY, tok, sizeof tok, msg, sizeof msg), RDEV_INVALID_PARAM);
}
END_TEST

/* Claims written by hand (a forger's): each rule of the format is held. */
static int read_claims(const char *text) {
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  char tok[2048] = RDEV_JOB_TOKEN_PREFIX, *o = tok + strlen(tok);
  const unsigned char *in = (const unsigned char *)text;
  size_t n = strlen(text);
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    *o++ = b64[v >> 18 & 63];
    *o++ = b64[v >> 12 & 63];
    if (i + 1 < n) *o++ = b64[v >> 6 & 63];
    if (i + 2 < n) *o++ = b64[v & 63];
  }
  strcpy(o, ".AAAA");
  rdev_job_claims_t c;
  char msg[128];
  return rdev_job_token_claims(tok, strlen(tok), &c, msg, sizeof msg);
}

START_TEST(test_forged_claims_follow_the_rules) {
  ck_assert_int_eq(read_claims("v=1;tenant=a;job=j;servers=s;devices=0,63;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=2;tenant=a;job=j;servers=s;devices=0;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;job=j;tenant=a;servers=s;devices=0;exp=5"), RDEV_OK); /* order */
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=64;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=0,;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,;devices=0;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=0;exp=0"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=0;exp=9999999999999"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=0;exp=5;admin=1"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=;job=j;servers=s;devices=0;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a b;job=j;servers=s;devices=0;exp=5"), RDEV_OK);
  /* device groups: 1 or one per server, none empty */
  ck_assert_int_eq(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0,1/3;exp=5"), RDEV_OK);
  ck_assert_int_eq(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0,1;exp=5"), RDEV_OK);
  ck_assert_int_eq(read_claims("v=1;tenant=a;job=j;servers=s,t,u;devices=0/63/5,6;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0/1/2;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t,u;devices=0/1;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=0/1;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0/;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=/0;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0,/1;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0//1;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,t;devices=0/64;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s,s;devices=0/1;exp=5"), RDEV_OK); /* s twice */
  ck_assert_int_eq(read_claims("v=1;tenant=a;job=j;servers=s,s;devices=0;exp=5"), RDEV_OK);
  ck_assert_int_ne(read_claims("v=1;tenant=a;job=j;servers=s;devices=0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0;exp=5"),
                   RDEV_OK); /* 17 groups */
}
END_TEST

START_TEST(test_garbage_never_passes) {
  rdev_job_claims_t c;
  char msg[128], buf[300];
  unsigned seed = 7;
  for (int k = 0; k < 20000; k++) {
    size_t n = 6 + (size_t)(rand_r(&seed) % 200);
    memcpy(buf, RDEV_JOB_TOKEN_PREFIX, 6);
    for (size_t i = 6; i < n; i++) buf[i] = (char)(rand_r(&seed) % 3 ? "AQgw._-9z"[rand_r(&seed) % 9] : rand_r(&seed));
    rdev_job_token_claims(buf, n, &c, msg, sizeof msg); /* any verdict, no crash (ASan) */
    ck_assert_int_ne(rdev_job_token_check_mac(buf, n, KEY), RDEV_OK);
  }
  ck_assert_int_ne(rdev_job_token_claims("rdjt1.", 6, &c, msg, sizeof msg), RDEV_OK);
  char big[RDEV_JOB_TOKEN_MAX + 10];
  memset(big, 'A', sizeof big);
  memcpy(big, RDEV_JOB_TOKEN_PREFIX, 6);
  ck_assert_int_ne(rdev_job_token_claims(big, sizeof big, &c, msg, sizeof msg), RDEV_OK);
}
END_TEST

int main(void) {
  Suite *s = suite_create("job_token");
  TCase *tc = tcase_create("job_token");
  tcase_add_test(tc, test_minted_token_reads_back_and_checks_with_its_key_only);
  tcase_add_test(tc, test_every_character_matters);
  tcase_add_test(tc, test_bad_claims_are_not_minted);
  tcase_add_test(tc, test_per_server_device_groups_read_back_per_server);
  tcase_add_test(tc, test_bad_device_groups_are_not_minted);
  tcase_add_test(tc, test_forged_claims_follow_the_rules);
  tcase_add_test(tc, test_garbage_never_passes);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
