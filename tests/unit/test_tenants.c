/*
 * tests/unit/test_tenants.c — Check unit tests of rdevd's tenants
 * (server/tenants.c, declared in server/srv.h) without a server:
 * srv_tenants_parse on good texts (every key, defaults, order, comments,
 * CRLF) and bad ones (token hashes, devices lists, sizes, the 1..1000000
 * and max_slots 1..1024 ranges, headers and names, duplicate names, tokens
 * shared between tenants, missing tokens, settings outside a section,
 * unknown keys, long lines, NUL bytes; "name:LINE: " messages; *out NULL),
 * srv_tenant_list_free; and the quota accounting of srv_tenant_take and
 * srv_tenant_give on a record built here (memory at the exact quota,
 * sessions, streams in total and per device, with the default cap
 * SRV_DEV_STREAMS_DEFAULT when max_dev_streams is 0; messages, audit
 * lines, exactness under concurrent takes), and the device mapping
 * (srv_tenant_device, srv_tenant_device_count).
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv.h"

#define MIB ((size_t)1 << 20)

/* ---- helpers ------------------------------------------------------------------ */

/* "sha256:" and 64 hex digits that differ for each i (static, 4 in rotation). */
static const char *tok(int i) {
  static char buf[4][80];
  static int k;
  char *b = buf[k++ % 4];
  int n = snprintf(b, sizeof buf[0], "sha256:");
  for (int j = 0; j < 32; j++) n += snprintf(b + n, sizeof buf[0] - (size_t)n, "%02x", (unsigned)(i * 37 + j) & 0xff);
  return b;
}

/* The 32 bytes tok(i) stands for. */
static void tok_bytes(int i, uint8_t out[32]) {
  for (int j = 0; j < 32; j++) out[j] = (uint8_t)((i * 37 + j) & 0xff);
}

static srv_tenant_t *parse_ok(const char *text) {
  srv_tenant_t *list = (srv_tenant_t *)(uintptr_t)1;
  char err[512] = "";
  ck_assert_msg(srv_tenants_parse(text, strlen(text), "t.conf", &list, err, sizeof err) == 0, "refused: %s", err);
  return list;
}

/* text fails with exactly message want (NULL: any message), *out NULL. */
static void parse_fails_len(const char *text, size_t len, const char *want) {
  srv_tenant_t *list = (srv_tenant_t *)(uintptr_t)1;
  char err[512] = "";
  ck_assert_msg(srv_tenants_parse(text, len, "t.conf", &list, err, sizeof err) == -1, "accepted: %s", text);
  ck_assert_ptr_null(list);
  ck_assert_uint_gt(strlen(err), 0);
  if (want) ck_assert_str_eq(err, want);
}

static void parse_fails(const char *text, const char *want) { parse_fails_len(text, strlen(text), want); }

/* One tenant "a" with one token and the given setting line; the parse's rc. */
static int one_setting(const char *line, srv_tenant_t **out, char *err, size_t errlen) {
  char text[2048];
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n%s\n", tok(1), line);
  return srv_tenants_parse(text, strlen(text), "t.conf", out, err, errlen);
}

static srv_tenant_t *setting_ok(const char *line) {
  srv_tenant_t *t = NULL;
  char err[512] = "";
  ck_assert_msg(one_setting(line, &t, err, sizeof err) == 0, "'%s' refused: %s", line, err);
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_null(t->next);
  return t;
}

/* line (on line 3) is refused with "t.conf:3: " and want (NULL: any). */
static void setting_fails(const char *line, const char *want) {
  srv_tenant_t *t = (srv_tenant_t *)(uintptr_t)1;
  char err[512] = "";
  ck_assert_msg(one_setting(line, &t, err, sizeof err) == -1, "'%s' accepted", line);
  ck_assert_ptr_null(t);
  ck_assert_msg(strncmp(err, "t.conf:3: ", 10) == 0, "'%s': message '%s'", line, err);
  if (want) ck_assert_str_eq(err + 10, want);
}

/* A tenant record as the server holds one: unlimited, mutex initialised. */
static srv_tenant_t *record(const char *name) {
  srv_tenant_t *t = calloc(1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  snprintf(t->name, sizeof t->name, "%s", name);
  ck_assert_int_eq(pthread_mutex_init(&t->mu, NULL), 0);
  t->devices = ~0ULL;
  t->mem_quota = SIZE_MAX;
  t->max_sessions = INT32_MAX;
  t->max_streams = INT32_MAX;
  t->max_inflight = SIZE_MAX;
  t->weight = 1;
  return t;
}

static void record_free(srv_tenant_t *t) {
  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* The quota tests' refusals would each log an audit line: only the audit test wants them. */
static void quiet(void) { srv_log_level = SRV_LOG_ERROR; }

static int take(srv_tenant_t *t, srv_quota_t what, int dev, size_t amount, char *msg, size_t msglen) {
  return srv_tenant_take(t, what, dev, amount, "ipv4:127.0.0.1:1", msg, msglen);
}

/* ---- parsing: good texts ---------------------------------------------------------- */

START_TEST(test_parse_every_key) {
  char text[2048];
  snprintf(text, sizeof text,
           "# tenants\n"
           "[tenant alice]\n"
           "token = %s   # token \"foo\"\n"
           "token = %s\n"
           "devices = 0,1\n"
           "mem_quota = 512M\n"
           "max_sessions = 8\n"
           "max_streams = 64\n"
           "max_device_streams = 16\n"
           "max_slots = 2\n"
           "max_inflight = 16M\n"
           "weight = 2\n"
           "cert_subject = CN=alice,O=Example\n"
           "\n"
           "[tenant bob]\n"
           "token = %s\n",
           tok(1), tok(2), tok(3));
  srv_tenant_t *list = parse_ok(text);
  ck_assert_ptr_nonnull(list);
  srv_tenant_t *bob = list, *alice = list->next; /* the last section first */
  ck_assert_ptr_nonnull(alice);
  ck_assert_ptr_null(alice->next);
  ck_assert_str_eq(alice->name, "alice");
  ck_assert_str_eq(bob->name, "bob");
  uint8_t h[32];
  ck_assert_int_eq(alice->nhashes, 2);
  tok_bytes(1, h);
  ck_assert_int_eq(memcmp(alice->hashes[0], h, 32), 0);
  tok_bytes(2, h);
  ck_assert_int_eq(memcmp(alice->hashes[1], h, 32), 0);
  ck_assert_uint_eq(alice->devices, 3);
  ck_assert_uint_eq(alice->mem_quota, 512 * MIB);
  ck_assert_int_eq(alice->max_sessions, 8);
  ck_assert_int_eq(alice->max_streams, 64);
  ck_assert_int_eq(alice->max_dev_streams, 16);
  ck_assert_int_eq(alice->max_slots, 2);
  ck_assert_uint_eq(alice->max_inflight, 16 * MIB);
  ck_assert_int_eq(alice->weight, 2);
  ck_assert_str_eq(alice->cert_subject, "CN=alice,O=Example");
  ck_assert_int_eq(bob->nhashes, 1);
  tok_bytes(3, h);
  ck_assert_int_eq(memcmp(bob->hashes[0], h, 32), 0);
  /* settings only: no id, no usage */
  for (srv_tenant_t *t = list; t; t = t->next) {
    ck_assert_uint_eq(t->id, 0);
    ck_assert_int_eq(t->sessions, 0);
    ck_assert_int_eq(t->streams, 0);
    ck_assert_int_eq(t->removed, 0);
    for (int d = 0; d < 64; d++) {
      ck_assert_uint_eq(t->mem_used[d], 0);
      ck_assert_int_eq(t->dev_streams[d], 0);
    }
  }
  srv_tenant_list_free(list);
}
END_TEST

START_TEST(test_parse_defaults_of_a_tenant_with_only_a_token) {
  char text[256];
  snprintf(text, sizeof text, "[tenant solo]\ntoken = %s", tok(5)); /* no '\n' at the end */
  srv_tenant_t *t = parse_ok(text);
  ck_assert_ptr_nonnull(t);
  ck_assert_ptr_null(t->next);
  ck_assert_str_eq(t->name, "solo");
  ck_assert_int_eq(t->nhashes, 1);
  ck_assert_uint_eq(t->devices, ~0ULL);
  ck_assert_uint_eq(t->mem_quota, SIZE_MAX);
  ck_assert_int_eq(t->max_sessions, 64); /* finite defaults (docs/reliability.md) */
  ck_assert_int_eq(t->max_streams, 1024);
  ck_assert_uint_eq(t->max_job_fetch, (size_t)64 << 30);
  ck_assert_uint_eq(t->job_disk, (size_t)16 << 30);
  ck_assert_int_eq(t->max_dev_streams, 0);
  ck_assert_int_eq(t->max_slots, 0);
  ck_assert_int_eq(t->weight, 1);
  ck_assert_uint_eq(t->max_inflight, SIZE_MAX);
  ck_assert_str_eq(t->cert_subject, "");
  srv_tenant_list_free(t);
}
END_TEST

START_TEST(test_parse_text_without_tenants_is_an_empty_list) {
  srv_tenant_t *list = (srv_tenant_t *)(uintptr_t)1;
  char err[64];
  ck_assert_int_eq(srv_tenants_parse("", 0, NULL, &list, err, sizeof err), 0);
  ck_assert_ptr_null(list);
  list = parse_ok("# nothing here\n\n   \r\n# token = x\n");
  ck_assert_ptr_null(list);
  srv_tenant_list_free(NULL);
}
END_TEST

START_TEST(test_parse_crlf_comments_and_white_space) {
  char text[1024];
  snprintf(text, sizeof text,
           "\t[tenant  c r ]  # a name with spaces\r\n"
           "  token\t=\t%s\t\r\n"
           "devices=\t2 , 5,\r\n"
           "weight = 7 # seven\r\n",
           tok(9));
  srv_tenant_t *t = parse_ok(text);
  ck_assert_str_eq(t->name, "c r");
  ck_assert_uint_eq(t->devices, (1ULL << 2) | (1ULL << 5));
  ck_assert_int_eq(t->weight, 7);
  ck_assert_int_eq(t->nhashes, 1);
  srv_tenant_list_free(t);
}
END_TEST

START_TEST(test_parse_reads_only_len_bytes) {
  char text[512];
  int n = snprintf(text, sizeof text, "[tenant a]\ntoken = %s\nweight = 3\n", tok(1));
  int cut = n - (int)strlen("weight = 3\n");
  memcpy(text + n, "garbage without a NUL", 21); /* past len: never read */
  srv_tenant_t *t = NULL;
  char err[256];
  ck_assert_int_eq(srv_tenants_parse(text, (size_t)cut, NULL, &t, err, sizeof err), 0);
  ck_assert_int_eq(t->weight, 1);
  srv_tenant_list_free(t);
  ck_assert_int_eq(srv_tenants_parse(text, (size_t)n, NULL, &t, err, sizeof err), 0);
  ck_assert_int_eq(t->weight, 3);
  srv_tenant_list_free(t);
  ck_assert_int_eq(srv_tenants_parse(text, (size_t)n - 2, NULL, &t, err, sizeof err), -1); /* "weight = " */
  ck_assert_ptr_null(t);
  ck_assert_str_eq(err, "(tenants):3: weight: 1..1000000");
}
END_TEST

/* ---- parsing: tokens ------------------------------------------------------------------ */

START_TEST(test_token_forms) {
  char line[256];
  srv_tenant_t *t;
  /* upper-case hex is the same hash */
  snprintf(line, sizeof line, "token = sha256:%s", "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789");
  t = setting_ok(line);
  ck_assert_int_eq(t->nhashes, 2);
  ck_assert_uint_eq(t->hashes[1][0], 0xab);
  ck_assert_uint_eq(t->hashes[1][31], 0x89);
  srv_tenant_list_free(t);
  static const char *msg = "token: expected sha256:<64 hex digits>";
  setting_fails("token = ", msg);
  setting_fails("token = sha256:", msg);
  snprintf(line, sizeof line, "token = %.70s", tok(2)); /* 63 digits */
  setting_fails(line, msg);
  snprintf(line, sizeof line, "token = %s0", tok(2)); /* 65 */
  setting_fails(line, msg);
  snprintf(line, sizeof line, "token = SHA256:%s", tok(2) + 7);
  setting_fails(line, msg);
  snprintf(line, sizeof line, "token = sha1:%s", tok(2) + 7);
  setting_fails(line, msg);
  snprintf(line, sizeof line, "token = %s", tok(2) + 7); /* bare hex */
  setting_fails(line, msg);
  snprintf(line, sizeof line, "token = sha256:%.63sg", tok(2) + 7); /* a non-hex digit */
  setting_fails(line, msg);
  snprintf(line, sizeof line, "token = sha256: %.63s", tok(2) + 7);
  setting_fails(line, msg);
  setting_fails("token = foo", msg);
}
END_TEST

START_TEST(test_at_most_eight_tokens) {
  char text[4096];
  int n = snprintf(text, sizeof text, "[tenant a]\n");
  for (int i = 0; i < SRV_MAX_TOKENS; i++) n += snprintf(text + n, sizeof text - (size_t)n, "token = %s\n", tok(i));
  srv_tenant_t *t = parse_ok(text);
  ck_assert_int_eq(t->nhashes, SRV_MAX_TOKENS);
  for (int i = 0; i < SRV_MAX_TOKENS; i++) {
    uint8_t h[32];
    tok_bytes(i, h);
    ck_assert_int_eq(memcmp(t->hashes[i], h, 32), 0);
  }
  srv_tenant_list_free(t);
  snprintf(text + n, sizeof text - (size_t)n, "token = %s\n", tok(SRV_MAX_TOKENS));
  parse_fails(text, "t.conf:10: more than 8 tokens");
}
END_TEST

START_TEST(test_a_token_belongs_to_one_tenant) {
  char text[1024];
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n[tenant b]\ntoken = %s\ntoken = %s\n", tok(1), tok(2), tok(1));
  parse_fails(text, "t.conf:5: token: already a token of tenant 'a'");
  /* the same digits in another case are the same token */
  char upper[80];
  snprintf(upper, sizeof upper, "%s", tok(1));
  for (char *c = upper + 7; *c; c++)
    if (*c >= 'a' && *c <= 'f') *c = (char)(*c - 'a' + 'A');
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n\n[tenant b]\ntoken = %s\n", tok(1), upper);
  ck_assert_int_eq(strcmp(upper, tok(1)) != 0, 1);
  parse_fails(text, "t.conf:5: token: already a token of tenant 'a'");
}
END_TEST

START_TEST(test_every_tenant_needs_a_token) {
  char text[512];
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n[tenant empty]\nweight = 2\n", tok(1));
  parse_fails(text, "t.conf: tenant 'empty' has no token and no signing_key");
  parse_fails("[tenant lonely]\n", "t.conf: tenant 'lonely' has no token and no signing_key");
}
END_TEST

/* A job tokens' signing key: hex:<64 hex digits>, one per tenant; a tenant may have it alone. */
START_TEST(test_signing_key) {
  static const char key[] = "hex:000102030405060708090a0b0c0d0e0f101112131415161718191A1B1C1D1E1F";
  char text[512];
  snprintf(text, sizeof text, "[tenant jobs]\nsigning_key = %s\n", key);
  srv_tenant_t *l = parse_ok(text);
  ck_assert_int_eq(l->has_key, 1);
  ck_assert_int_eq(l->nhashes, 0);
  ck_assert_uint_eq(l->signing_key[0], 0);
  ck_assert_uint_eq(l->signing_key[31], 0x1f);
  srv_tenant_list_free(l);
  snprintf(text, sizeof text, "[tenant jobs]\nsigning_key = %s\nsigning_key = %s\n", key, key);
  parse_fails(text, "t.conf:3: signing_key: one per tenant");
  parse_fails("[tenant j]\nsigning_key = hex:0011\n", "t.conf:2: signing_key: expected hex:<64 hex digits>");
  snprintf(text, sizeof text, "[tenant a]\nsigning_key = %s\n[tenant b]\nsigning_key = %s\n", key, key);
  parse_fails(text, "t.conf:4: signing_key: already the key of tenant 'a'");
  parse_fails("[tenant j]\nsigning_key = 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
              "t.conf:2: signing_key: expected hex:<64 hex digits>");
}
END_TEST

/* ---- parsing: devices, sizes, numbers ----------------------------------------------------- */

START_TEST(test_devices_lists) {
  static const struct {
    const char *v;
    uint64_t mask;
  } good[] = {{"all", ~0ULL},     {"0", 1},           {"0,1", 3}, {"1", 2},
              {"0, 2 ,5,", 0x25}, {"63", 1ULL << 63}, {"3,3", 8}, {"00063", 1ULL << 63},
              {"1 ,\t2", 6},      {"7,", 0x80}};
  char line[128];
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    snprintf(line, sizeof line, "devices = %s", good[i].v);
    srv_tenant_t *t = setting_ok(line);
    ck_assert_msg(t->devices == good[i].mask, "'%s': %#llx", good[i].v, (unsigned long long)t->devices);
    srv_tenant_list_free(t);
  }
  static const char *bad[] = {"",      "64",  "-1",  "+1",  "0,,1", ",0",  "0 1", "a",
                              "1,all", "ALL", "0-3", "0;1", "1,,",  "0x1", "1.0", "99999999999999999999",
                              "all,"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(line, sizeof line, "devices = %s", bad[i]);
    setting_fails(line, "devices: a list such as 0,1 or all");
  }
}
END_TEST

START_TEST(test_sizes) {
  srv_tenant_t *t = setting_ok("mem_quota = 512M");
  ck_assert_uint_eq(t->mem_quota, 512 * MIB);
  srv_tenant_list_free(t);
  t = setting_ok("mem_quota = 0");
  ck_assert_uint_eq(t->mem_quota, 0);
  srv_tenant_list_free(t);
  t = setting_ok("mem_quota = 2GiB");
  ck_assert_uint_eq(t->mem_quota, (size_t)2 << 30);
  srv_tenant_list_free(t);
  setting_fails("mem_quota = ", "mem_quota: a size such as 512M");
  setting_fails("mem_quota = 1T", "mem_quota: a size such as 512M");
  setting_fails("mem_quota = -1", "mem_quota: a size such as 512M");
  setting_fails("mem_quota = 17179869184G", "mem_quota: a size such as 512M");
  t = setting_ok("max_inflight = 4096");
  ck_assert_uint_eq(t->max_inflight, 4096);
  srv_tenant_list_free(t);
  t = setting_ok("max_inflight = 64M");
  ck_assert_uint_eq(t->max_inflight, 64 * MIB);
  srv_tenant_list_free(t);
  setting_fails("max_inflight = 4095", "max_inflight: a size such as 64M (at least 4K)");
  setting_fails("max_inflight = 0", "max_inflight: a size such as 64M (at least 4K)");
  setting_fails("max_inflight = 1x", "max_inflight: a size such as 64M (at least 4K)");
}
END_TEST

START_TEST(test_number_keys_and_their_ranges) {
  static const struct {
    const char *key;
    long most;
    size_t off;
  } keys[] = {{"max_sessions", 1000000, offsetof(srv_tenant_t, max_sessions)},
              {"max_streams", 1000000, offsetof(srv_tenant_t, max_streams)},
              {"max_device_streams", 1000000, offsetof(srv_tenant_t, max_dev_streams)},
              {"weight", 1000000, offsetof(srv_tenant_t, weight)},
              {"max_slots", 1024, offsetof(srv_tenant_t, max_slots)}};
  char line[128], want[128];
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    long good[] = {1, 2, keys[i].most - 1, keys[i].most};
    for (int g = 0; g < 4; g++) {
      snprintf(line, sizeof line, "%s = %ld", keys[i].key, good[g]);
      srv_tenant_t *t = setting_ok(line);
      ck_assert_int_eq(*(int *)((char *)t + keys[i].off), good[g]);
      srv_tenant_list_free(t);
    }
    snprintf(want, sizeof want, "%s: 1..%ld", keys[i].key, keys[i].most);
    char most1[32];
    snprintf(most1, sizeof most1, "%ld", keys[i].most + 1);
    const char *bad[] = {"0", "-1", most1, "", "x", "1x", "1.5", "0x10", "99999999999999999999", "2147483648"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      snprintf(line, sizeof line, "%s = %s", keys[i].key, bad[b]);
      setting_fails(line, want);
    }
  }
}
END_TEST

START_TEST(test_cert_subject) {
  char line[512];
  snprintf(line, sizeof line, "cert_subject = CN=%0*d", 252, 0); /* 255 bytes */
  srv_tenant_t *t = setting_ok(line);
  ck_assert_uint_eq(strlen(t->cert_subject), 255);
  srv_tenant_list_free(t);
  snprintf(line, sizeof line, "cert_subject = CN=%0*d", 253, 0); /* 256 */
  setting_fails(line, "cert_subject too long");
  t = setting_ok("cert_subject = ");
  ck_assert_str_eq(t->cert_subject, "");
  srv_tenant_list_free(t);
}
END_TEST

START_TEST(test_unknown_settings_and_lines_without_equals) {
  setting_fails("colour = blue", "unknown setting 'colour'");
  setting_fails("Weight = 2", "unknown setting 'Weight'");
  setting_fails("max-sessions = 2", "unknown setting 'max-sessions'");
  setting_fails("= 2", "unknown setting ''");
  setting_fails("weight 2", "expected key = value");
  setting_fails("token", "expected key = value");
}
END_TEST

/* ---- parsing: sections ------------------------------------------------------------------- */

START_TEST(test_setting_outside_a_section) {
  char text[256];
  snprintf(text, sizeof text, "# header\ntoken = %s\n[tenant a]\n", tok(1));
  parse_fails(text, "t.conf:2: setting outside a [tenant NAME] section");
  parse_fails("weight = 1\n", "t.conf:1: setting outside a [tenant NAME] section");
}
END_TEST

START_TEST(test_header_forms) {
  static const struct {
    const char *header, *name;
  } good[] = {{"[tenant a]", "a"},
              {"[tenant\ta]", "a"},
              {"[tenant   padded  ]", "padded"},
              {"[tenant two words]", "two words"},
              {"[tenant a[b]", "a[b"},
              {"[tenant caf\xc3\xa9]", "caf\xc3\xa9"},
              {"[tenant x] # comment", "x"}};
  char text[512];
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    snprintf(text, sizeof text, "%s\ntoken = %s\n", good[i].header, tok(1));
    srv_tenant_t *t = parse_ok(text);
    ck_assert_str_eq(t->name, good[i].name);
    srv_tenant_list_free(t);
  }
  static const char *expected[] = {"[tenant]", "[tenantx]", "[tenant x",    "[ tenant x]", "[user x]",     "[Tenant x]",
                                   "[]",       "[",         "[tenant x] y", "[tenant-x]",  "[tenant\x01x]"};
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    snprintf(text, sizeof text, "%s\ntoken = %s\n", expected[i], tok(1));
    parse_fails(text, "t.conf:1: expected [tenant NAME]");
  }
  static const char *bad_name[] = {"[tenant a]b]", "[tenant a\tb]", "[tenant a\x7f]", "[tenant \x1b]"};
  for (size_t i = 0; i < sizeof bad_name / sizeof bad_name[0]; i++) {
    snprintf(text, sizeof text, "%s\ntoken = %s\n", bad_name[i], tok(1));
    parse_fails(text, "t.conf:1: tenant name: no ']' or control characters");
  }
  parse_fails("[tenant    ]\n", "t.conf:1: tenant name empty or too long");
}
END_TEST

START_TEST(test_name_length_limit) {
  char text[512];
  snprintf(text, sizeof text, "[tenant %s]\ntoken = %s\n",
           "n23456789012345678901234567890123456789012345678901234567890123", tok(1)); /* 63 bytes */
  srv_tenant_t *t = parse_ok(text);
  ck_assert_uint_eq(strlen(t->name), 63);
  srv_tenant_list_free(t);
  snprintf(text, sizeof text, "[tenant %s]\ntoken = %s\n",
           "n234567890123456789012345678901234567890123456789012345678901234", tok(1)); /* 64 */
  parse_fails(text, "t.conf:1: tenant name empty or too long");
}
END_TEST

START_TEST(test_duplicate_names) {
  char text[512];
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n[tenant b]\ntoken = %s\n[tenant  a ]\ntoken = %s\n", tok(1),
           tok(2), tok(3));
  parse_fails(text, "t.conf:5: tenant 'a' appears twice");
  /* names are case-sensitive: A is another tenant */
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n[tenant A]\ntoken = %s\n", tok(1), tok(2));
  srv_tenant_t *t = parse_ok(text);
  ck_assert_str_eq(t->name, "A");
  ck_assert_str_eq(t->next->name, "a");
  srv_tenant_list_free(t);
}
END_TEST

/* ---- parsing: text rules and messages ---------------------------------------------------- */

START_TEST(test_long_lines_and_nul_bytes) {
  static char text[4096];
  char pad[SRV_LINE_MAX + 2];
  memset(pad, ' ', sizeof pad);
  /* a token line of exactly SRV_LINE_MAX bytes (padded with spaces) is fine */
  int n = snprintf(text, sizeof text, "[tenant a]\ntoken = %s%.*s\n", tok(1), SRV_LINE_MAX - 8 - 71, pad);
  ck_assert_int_eq(n, 11 + SRV_LINE_MAX + 1);
  srv_tenant_t *t = parse_ok(text);
  ck_assert_int_eq(t->nhashes, 1);
  srv_tenant_list_free(t);
  /* one byte more is an error, not two lines */
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s%.*s\n", tok(1), SRV_LINE_MAX - 8 - 71 + 1, pad);
  parse_fails(text, "t.conf:2: line longer than 1023 bytes");
  static const char nul[] = "[tenant a]\ntoken = x\0y\n";
  parse_fails_len(nul, sizeof nul - 1, "t.conf:2: NUL byte in line");
  static const char nul_comment[] = "[tenant a]\n# \0\n";
  parse_fails_len(nul_comment, sizeof nul_comment - 1, "t.conf:2: NUL byte in line");
}
END_TEST

START_TEST(test_messages_null_name_and_truncation) {
  srv_tenant_t *t = (srv_tenant_t *)(uintptr_t)1;
  char err[64];
  ck_assert_int_eq(srv_tenants_parse("bogus\n", 6, NULL, &t, err, sizeof err), -1);
  ck_assert_ptr_null(t);
  ck_assert_str_eq(err, "(tenants):1: expected key = value");
  memset(err, 'x', sizeof err);
  ck_assert_int_eq(srv_tenants_parse("bogus\n", 6, "file", &t, err, 7), -1);
  ck_assert_str_eq(err, "file:1");
  ck_assert_int_eq(err[7], 'x');
  memset(err, 'x', sizeof err);
  ck_assert_int_eq(srv_tenants_parse("bogus\n", 6, "file", &t, err, 0), -1);
  for (size_t i = 0; i < sizeof err; i++) ck_assert_int_eq(err[i], 'x');
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_failure_after_several_tenants_frees_them) {
  /* under ASan a leak of the records parsed before the bad line fails the test */
  char text[1024];
  snprintf(text, sizeof text, "[tenant a]\ntoken = %s\n[tenant b]\ntoken = %s\n[tenant c]\ntoken = %s\nweight = 0\n",
           tok(1), tok(2), tok(3));
  parse_fails(text, "t.conf:7: weight: 1..1000000");
}
END_TEST

/* ---- quotas ---------------------------------------------------------------------------- */

START_TEST(test_memory_quota_exact_boundary) {
  srv_tenant_t *t = record("m");
  t->mem_quota = 1000;
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 600, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 400, msg, sizeof msg), 0); /* exactly the quota */
  ck_assert_uint_eq(t->mem_used[0], 1000);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 1, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "device memory quota of tenant m on device 0: 1000 of 1000 bytes used, 1 more asked");
  ck_assert_uint_eq(t->mem_used[0], 1000);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 0, msg, sizeof msg), 0); /* nothing more fits nothing */
  /* per device: device 1 has its own quota */
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 1, 1000, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 1, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 63, 1000, msg, sizeof msg), 0);
  srv_tenant_give(t, SRV_Q_MEMORY, 0, 400);
  ck_assert_uint_eq(t->mem_used[0], 600);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 401, msg, sizeof msg), -1);
  ck_assert_uint_eq(t->mem_used[0], 600);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 400, msg, sizeof msg), 0);
  ck_assert_uint_eq(t->mem_used[0], 1000);
  ck_assert_uint_eq(t->mem_used[1], 1000);
  ck_assert_uint_eq(t->mem_used[2], 0);
  record_free(t);
}
END_TEST

START_TEST(test_memory_quota_without_overflow) {
  srv_tenant_t *t = record("big");
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 2000, msg, sizeof msg), 0); /* unlimited */
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, SIZE_MAX - 2000, msg, sizeof msg), 0);
  ck_assert_uint_eq(t->mem_used[0], SIZE_MAX);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 0, 1, msg, sizeof msg), -1); /* would wrap around */
  ck_assert_uint_eq(t->mem_used[0], SIZE_MAX);
  t->mem_quota = 100;
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 1, SIZE_MAX, msg, sizeof msg), -1); /* more than the quota at once */
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 1, 101, msg, sizeof msg), -1);
  ck_assert_uint_eq(t->mem_used[1], 0);
  t->mem_quota = 0;
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 2, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 2, 0, msg, sizeof msg), 0);
  record_free(t);
}
END_TEST

START_TEST(test_memory_on_a_device_out_of_range_is_refused) {
  srv_tenant_t *t = record("r");
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, -1, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(take(t, SRV_Q_MEMORY, 64, 1, msg, sizeof msg), -1);
  ck_assert_ptr_nonnull(strstr(msg, "device 64"));
  for (int d = 0; d < 64; d++) ck_assert_uint_eq(t->mem_used[d], 0);
  record_free(t);
}
END_TEST

START_TEST(test_session_quota) {
  srv_tenant_t *t = record("s");
  t->max_sessions = 2;
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "session quota of tenant s: 2 sessions open");
  ck_assert_int_eq(t->sessions, 2);
  srv_tenant_give(t, SRV_Q_SESSIONS, 0, 1);
  ck_assert_int_eq(t->sessions, 1);
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(t->sessions, 2);
  record_free(t);
}
END_TEST

START_TEST(test_stream_quota_counts_all_devices) {
  srv_tenant_t *t = record("q");
  t->max_streams = 3;
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 1, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 1, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 2, 1, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "stream quota of tenant q: 3 streams open");
  ck_assert_int_eq(t->streams, 3);
  ck_assert_int_eq(t->dev_streams[0], 1);
  ck_assert_int_eq(t->dev_streams[1], 2);
  ck_assert_int_eq(t->dev_streams[2], 0);
  srv_tenant_give(t, SRV_Q_STREAMS, 1, 1);
  ck_assert_int_eq(t->streams, 2);
  ck_assert_int_eq(t->dev_streams[1], 1);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 2, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(t->dev_streams[2], 1);
  record_free(t);
}
END_TEST

START_TEST(test_stream_cap_per_device) {
  srv_tenant_t *t = record("c");
  t->max_dev_streams = 2;
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 0, 1, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "stream cap of tenant c on device 0: 2 streams open");
  ck_assert_int_eq(t->streams, 2); /* a refused stream is not counted */
  ck_assert_int_eq(t->dev_streams[0], 2);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 5, 1, msg, sizeof msg), 0); /* other devices are not capped by it */
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 5, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 5, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(t->streams, 4);
  srv_tenant_give(t, SRV_Q_STREAMS, 0, 1);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(t->dev_streams[0], 2);
  ck_assert_int_eq(t->streams, 4);
  /* the total quota is checked too, and names itself */
  t->max_streams = 4;
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 9, 1, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "stream quota of tenant c: 4 streams open");
  ck_assert_int_eq(t->dev_streams[9], 0);
  record_free(t);
}
END_TEST

START_TEST(test_stream_cap_default_when_unset) {
  ck_assert_int_eq(SRV_DEV_STREAMS_DEFAULT, RDEV_RT_MAX_STREAMS_PER_DEVICE / 4);
  ck_assert_int_gt(SRV_DEV_STREAMS_DEFAULT, 0);
  srv_tenant_t *t = record("d");
  ck_assert_int_eq(t->max_dev_streams, 0);
  char msg[256];
  for (int i = 0; i < SRV_DEV_STREAMS_DEFAULT; i++) ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), -1);
  char want[128];
  snprintf(want, sizeof want, "stream cap of tenant d on device 3: %d streams open", SRV_DEV_STREAMS_DEFAULT);
  ck_assert_str_eq(msg, want);
  ck_assert_int_eq(t->streams, SRV_DEV_STREAMS_DEFAULT);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 4, 1, msg, sizeof msg), 0);
  srv_tenant_give(t, SRV_Q_STREAMS, 3, 1);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), -1);
  /* a cap set above the default applies instead */
  t->max_dev_streams = SRV_DEV_STREAMS_DEFAULT + 2;
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 3, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(t->dev_streams[3], SRV_DEV_STREAMS_DEFAULT + 2);
  record_free(t);
}
END_TEST

START_TEST(test_stream_on_a_device_out_of_range_is_refused) {
  srv_tenant_t *t = record("o");
  char msg[256];
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, -1, 1, msg, sizeof msg), -1);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 64, 1, msg, sizeof msg), -1);
  ck_assert_str_eq(msg, "stream cap of tenant o on device 64: 0 streams open");
  ck_assert_int_eq(t->streams, 0);
  ck_assert_int_eq(take(t, SRV_Q_STREAMS, 63, 1, msg, sizeof msg), 0);
  record_free(t);
}
END_TEST

START_TEST(test_message_is_cut_to_msglen) {
  srv_tenant_t *t = record("cut");
  t->max_sessions = 1;
  char msg[32];
  memset(msg, 'x', sizeof msg);
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, sizeof msg), 0);
  ck_assert_int_eq(take(t, SRV_Q_SESSIONS, 0, 1, msg, 10), -1);
  ck_assert_str_eq(msg, "session q");
  ck_assert_int_eq(msg[10], 'x');
  record_free(t);
}
END_TEST

/* Runs fn with stderr going to a file; returns what was written (malloc'd). */
static char *capture_stderr(void (*fn)(srv_tenant_t *), srv_tenant_t *t) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  fflush(stderr);
  int saved = dup(2);
  ck_assert_int_ge(saved, 0);
  ck_assert_int_ge(dup2(fileno(f), 2), 0);
  fn(t);
  fflush(stderr);
  ck_assert_int_ge(dup2(saved, 2), 0);
  close(saved);
  long n = ftell(f);
  ck_assert_int_ge(n, 0);
  char *out = calloc(1, (size_t)n + 1);
  ck_assert_ptr_nonnull(out);
  rewind(f);
  ck_assert_uint_eq(fread(out, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return out;
}

static void deny_and_allow(srv_tenant_t *t) {
  char msg[256];
  ck_assert_int_eq(srv_tenant_take(t, SRV_Q_SESSIONS, 0, 1, "ipv4:10.0.0.7:4242", msg, sizeof msg), 0); /* no line */
  ck_assert_int_eq(srv_tenant_take(t, SRV_Q_SESSIONS, 0, 1, "ipv4:10.0.0.7:4242", msg, sizeof msg), -1);
  ck_assert_int_eq(srv_tenant_take(t, SRV_Q_STREAMS, 2, 1, NULL, msg, sizeof msg), 0);
  ck_assert_int_eq(srv_tenant_take(t, SRV_Q_STREAMS, 2, 1, NULL, msg, sizeof msg), -1);
}

START_TEST(test_refusals_write_audit_lines_naming_the_peer) {
  srv_log_level = SRV_LOG_INFO;
  srv_tenant_t *t = record("audited");
  t->max_sessions = 1;
  t->max_dev_streams = 1;
  char *log = capture_stderr(deny_and_allow, t);
  ck_assert_ptr_nonnull(strstr(log,
                               " rdevd warn: audit: quota denied: tenant=audited peer=ipv4:10.0.0.7:4242 "
                               "reason=session quota of tenant audited: 1 sessions open\n"));
  ck_assert_ptr_nonnull(
      strstr(log,
             " rdevd warn: audit: cap refused: tenant=audited peer=- reason=stream cap of tenant audited on device 2: "
             "1 streams open\n"));
  int lines = 0;
  for (char *c = log; *c; c++) lines += *c == '\n';
  ck_assert_int_eq(lines, 2); /* granted takes log nothing */
  free(log);
  record_free(t);
}
END_TEST

struct taker {
  srv_tenant_t *t;
  pthread_barrier_t *start;
  int granted;
};

static void *take_bytes(void *arg) {
  struct taker *k = arg;
  char msg[256];
  pthread_barrier_wait(k->start); /* all at once: the takes overlap */
  for (int i = 0; i < 100000; i++)
    if (srv_tenant_take(k->t, SRV_Q_MEMORY, 1, 3, NULL, msg, sizeof msg) == 0) k->granted++;
  return NULL;
}

START_TEST(test_concurrent_takes_are_exact) {
  enum { N = 8, QUOTA_TAKES = 400000, ROUNDS = 20 }; /* half of the 800000 takes fit */
  for (int round = 0; round < ROUNDS; round++) {     /* a lost update shows in some round */
    srv_tenant_t *t = record("many");
    t->mem_quota = 3 * (size_t)QUOTA_TAKES;
    pthread_barrier_t start;
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, N), 0);
    struct taker k[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
      k[i] = (struct taker){.t = t, .start = &start};
      ck_assert_int_eq(pthread_create(&th[i], NULL, take_bytes, &k[i]), 0);
    }
    int granted = 0;
    for (int i = 0; i < N; i++) {
      pthread_join(th[i], NULL);
      granted += k[i].granted;
    }
    pthread_barrier_destroy(&start);
    ck_assert_int_eq(granted, QUOTA_TAKES);
    ck_assert_uint_eq(t->mem_used[1], 3 * (size_t)QUOTA_TAKES);
    record_free(t);
  }
}
END_TEST

/* ---- devices ------------------------------------------------------------------------- */

START_TEST(test_device_mapping_local_to_global) {
  srv_tenant_t *t = record("v");
  t->devices = (1ULL << 1) | (1ULL << 3) | (1ULL << 63);
  ck_assert_int_eq(srv_tenant_device(t, ~0ULL, 4, 0), 1);
  ck_assert_int_eq(srv_tenant_device(t, ~0ULL, 4, 1), 3);
  ck_assert_int_eq(srv_tenant_device(t, ~0ULL, 4, 2), -1);
  ck_assert_int_eq(srv_tenant_device(t, ~0ULL, 4, -1), -1);
  ck_assert_int_eq(srv_tenant_device_count(t, ~0ULL, 4), 2);
  ck_assert_int_eq(srv_tenant_device_count(t, ~0ULL, 2), 1);
  ck_assert_int_eq(srv_tenant_device_count(t, ~0ULL, 1), 0);
  ck_assert_int_eq(srv_tenant_device(t, ~0ULL, 64, 2), 63);
  ck_assert_int_eq(srv_tenant_device_count(t, ~0ULL, 100), 3);
  t->devices = ~0ULL;
  ck_assert_int_eq(srv_tenant_device_count(t, ~0ULL, 2), 2);
  ck_assert_int_eq(srv_tenant_device_count(t, ~0ULL, 100), 64);
  ck_assert_int_eq(srv_tenant_device(t, ~0ULL, 2, 1), 1);
  /* a job token's devices narrow them: numbered 0..k-1 among both */
  t->devices = (1ULL << 1) | (1ULL << 3) | (1ULL << 5);
  ck_assert_int_eq(srv_tenant_device_count(t, (1ULL << 3) | (1ULL << 5) | (1ULL << 6), 8), 2);
  ck_assert_int_eq(srv_tenant_device(t, (1ULL << 3) | (1ULL << 5), 8, 0), 3);
  ck_assert_int_eq(srv_tenant_device(t, (1ULL << 3) | (1ULL << 5), 8, 1), 5);
  ck_assert_int_eq(srv_tenant_device(t, 1ULL << 6, 8, 0), -1);
  record_free(t);
}
END_TEST

static Suite *parse_suite(void) {
  Suite *s = suite_create("parse");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, test_parse_every_key);
  tcase_add_test(tc, test_parse_defaults_of_a_tenant_with_only_a_token);
  tcase_add_test(tc, test_parse_text_without_tenants_is_an_empty_list);
  tcase_add_test(tc, test_parse_crlf_comments_and_white_space);
  tcase_add_test(tc, test_parse_reads_only_len_bytes);
  tcase_add_test(tc, test_token_forms);
  tcase_add_test(tc, test_at_most_eight_tokens);
  tcase_add_test(tc, test_a_token_belongs_to_one_tenant);
  tcase_add_test(tc, test_every_tenant_needs_a_token);
  tcase_add_test(tc, test_signing_key);
  tcase_add_test(tc, test_devices_lists);
  tcase_add_test(tc, test_sizes);
  tcase_add_test(tc, test_number_keys_and_their_ranges);
  tcase_add_test(tc, test_cert_subject);
  tcase_add_test(tc, test_unknown_settings_and_lines_without_equals);
  tcase_add_test(tc, test_setting_outside_a_section);
  tcase_add_test(tc, test_header_forms);
  tcase_add_test(tc, test_name_length_limit);
  tcase_add_test(tc, test_duplicate_names);
  tcase_add_test(tc, test_long_lines_and_nul_bytes);
  tcase_add_test(tc, test_messages_null_name_and_truncation);
  tcase_add_test(tc, test_failure_after_several_tenants_frees_them);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *quota_suite(void) {
  Suite *s = suite_create("quotas");
  TCase *tc = tcase_create("quotas");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, quiet, NULL);
  tcase_add_test(tc, test_memory_quota_exact_boundary);
  tcase_add_test(tc, test_memory_quota_without_overflow);
  tcase_add_test(tc, test_memory_on_a_device_out_of_range_is_refused);
  tcase_add_test(tc, test_session_quota);
  tcase_add_test(tc, test_stream_quota_counts_all_devices);
  tcase_add_test(tc, test_stream_cap_per_device);
  tcase_add_test(tc, test_stream_cap_default_when_unset);
  tcase_add_test(tc, test_stream_on_a_device_out_of_range_is_refused);
  tcase_add_test(tc, test_message_is_cut_to_msglen);
  tcase_add_test(tc, test_refusals_write_audit_lines_naming_the_peer);
  tcase_add_test(tc, test_concurrent_takes_are_exact);
  tcase_add_test(tc, test_device_mapping_local_to_global);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(parse_suite());
  srunner_add_suite(sr, quota_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
