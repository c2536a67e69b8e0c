/*
 * tests/unit/test_config.c — Check unit tests of rdevd's settings
 * (server/config.c, declared in server/srv.h): srv_parse_size (K/M/G with
 * i, B, iB in any case; overflow, signs, spaces, junk; *out untouched on
 * failure), srv_config_set (every key, its range or form, bad values and
 * unknown keys leaving cfg unchanged), srv_config_parse (every key from a
 * file, comments, CRLF, blank lines, text that is not NUL-terminated,
 * over-long lines, NUL bytes, the "name:LINE: " messages and their
 * truncation, and that a failing parse leaves cfg unchanged),
 * srv_config_load on real files, and the line cutter the parsers share.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srv.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* ---- helpers ------------------------------------------------------------------ */

static srv_config_t defaults(void) {
  srv_config_t c;
  memset(&c, 0xa5, sizeof c); /* srv_config_defaults must set every byte it cares about */
  srv_config_defaults(&c);
  return c;
}

/* Every setting of a equals b's (strings compared as strings). */
static int cfg_eq(const srv_config_t *a, const srv_config_t *b) {
  return !strcmp(a->listen, b->listen) && !strcmp(a->backend, b->backend) && a->sim_devices == b->sim_devices &&
         a->sim_mem_bytes == b->sim_mem_bytes && a->sim_slots == b->sim_slots && a->max_inflight == b->max_inflight &&
         a->threads == b->threads && a->drain_ms == b->drain_ms && a->log_level == b->log_level &&
         !strcmp(a->tenants, b->tenants) && a->allow_open == b->allow_open && !strcmp(a->tls_cert, b->tls_cert) &&
         !strcmp(a->tls_key, b->tls_key) && !strcmp(a->tls_client_ca, b->tls_client_ca);
}

static void set_ok(srv_config_t *c, const char *key, const char *value) {
  const char *err = "not reset";
  ck_assert_msg(srv_config_set(c, key, value, &err) == 0, "%s = '%s' refused: %s", key, value, err ? err : "?");
  ck_assert_ptr_null(err);
}

/* Setting key to value fails with a message, and cfg stays byte for byte as it was. */
static void set_fails(srv_config_t *c, const char *key, const char *value) {
  srv_config_t before;
  before = *c;
  const char *err = NULL;
  ck_assert_msg(srv_config_set(c, key, value, &err) == -1, "%s = '%s' accepted", key, value);
  ck_assert_ptr_nonnull(err);
  ck_assert_uint_gt(strlen(err), 0);
  ck_assert_msg(cfg_eq(&before, c), "%s = '%s' failed but changed the config", key, value);
}

static size_t size_ok(const char *v) {
  size_t n = 12345;
  ck_assert_msg(srv_parse_size(v, &n) == 0, "'%s' refused", v);
  return n;
}

static void size_fails(const char *v) {
  size_t n = 12345;
  ck_assert_msg(srv_parse_size(v, &n) == -1, "'%s' accepted as %zu", v, n);
  ck_assert_uint_eq(n, 12345); /* untouched */
}

/* Parses the NUL-terminated text; returns the rc, the message in err. */
static int parse(srv_config_t *c, const char *text, const char *name, char *err, size_t errlen) {
  return srv_config_parse(c, text, strlen(text), name, err, errlen);
}

/* text fails to parse with exactly message want, and cfg is unchanged. */
static void parse_fails_with(srv_config_t *c, const char *text, size_t len, const char *want) {
  srv_config_t before;
  before = *c;
  char err[512] = "";
  ck_assert_int_eq(srv_config_parse(c, text, len, "f.conf", err, sizeof err), -1);
  ck_assert_str_eq(err, want);
  ck_assert_msg(cfg_eq(&before, c), "failed parse changed the config");
}

/* A string of n copies of ch (static buffer, n < 4096). */
static const char *rep(char ch, size_t n) {
  static char buf[4][4096];
  static int k;
  char *b = buf[k++ % 4];
  ck_assert_uint_lt(n, sizeof buf[0]);
  memset(b, ch, n);
  b[n] = '\0';
  return b;
}

/* ---- srv_parse_size -------------------------------------------------------------- */

START_TEST(test_size_plain_digits) {
  ck_assert_uint_eq(size_ok("0"), 0);
  ck_assert_uint_eq(size_ok("1"), 1);
  ck_assert_uint_eq(size_ok("4096"), 4096);
  ck_assert_uint_eq(size_ok("000123"), 123);
  ck_assert_uint_eq(size_ok("18446744073709551615"), SIZE_MAX);
}
END_TEST

START_TEST(test_size_suffixes_in_every_form_and_case) {
  static const struct {
    const char *letter;
    size_t unit;
  } units[] = {{"K", KIB}, {"k", KIB}, {"M", MIB}, {"m", MIB}, {"G", GIB}, {"g", GIB}};
  static const char *tails[] = {"", "i", "I", "B", "b", "iB", "ib", "IB", "Ib"};
  char v[32];
  for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
    for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++) {
      snprintf(v, sizeof v, "3%s%s", units[u].letter, tails[k]);
      ck_assert_msg(size_ok(v) == 3 * units[u].unit, "'%s'", v);
      snprintf(v, sizeof v, "0%s%s", units[u].letter, tails[k]);
      ck_assert_uint_eq(size_ok(v), 0);
    }
  ck_assert_uint_eq(size_ok("512MiB"), 512 * MIB);
  ck_assert_uint_eq(size_ok("64k"), 64 * KIB);
  ck_assert_uint_eq(size_ok("1G"), GIB);
}
END_TEST

START_TEST(test_size_rejects_other_suffixes_and_junk) {
  static const char *bad[] = {"",     "K",   "iB",   "B",    "1B",    "1b",    "1i",   "1T",
                              "1P",   "1KK", "1KBi", "1Kii", "1KiBB", "1KiB1", "1.5G", "1,5G",
                              "0x10", "1e3", "1_0",  "1G!",  "one",   "1\n",   "1\t",  "1K\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) size_fails(bad[i]);
}
END_TEST

START_TEST(test_size_rejects_signs_and_spaces) {
  static const char *bad[] = {"-1", "-0", "+1", " 1", "1 ", "1 K", "1K ", "\t1", " -1", " 1G", "- 1", "1 000"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) size_fails(bad[i]);
}
END_TEST

START_TEST(test_size_overflow_is_refused_at_the_exact_limit) {
  size_fails("18446744073709551616"); /* 2^64 */
  size_fails("99999999999999999999999999");
  ck_assert_uint_eq(size_ok("18014398509481983K"), SIZE_MAX - (KIB - 1)); /* 2^54 - 1 KiB */
  size_fails("18014398509481984K");                                       /* 2^54 KiB = 2^64 */
  ck_assert_uint_eq(size_ok("17592186044415M"), SIZE_MAX - (MIB - 1));
  size_fails("17592186044416M");
  ck_assert_uint_eq(size_ok("17179869183G"), SIZE_MAX - (GIB - 1));
  size_fails("17179869184G");
  size_fails("18446744073709551615K");
  size_fails("18446744073709551615G");
}
END_TEST

/* ---- srv_config_defaults and srv_config_set ---------------------------------------- */

START_TEST(test_defaults) {
  srv_config_t c = defaults();
  ck_assert_str_eq(c.listen, "127.0.0.1:50051");
  ck_assert_str_eq(c.backend, "sim");
  ck_assert_int_eq(c.sim_devices, 2);
  ck_assert_uint_eq(c.sim_mem_bytes, GIB);
  ck_assert_int_eq(c.sim_slots, 4);
  ck_assert_uint_eq(c.max_inflight, 32 * MIB);
  ck_assert_int_eq(c.threads, 1);
  ck_assert_int_eq(c.drain_ms, 5000);
  ck_assert_int_eq(c.log_level, SRV_LOG_INFO);
  ck_assert_str_eq(c.tenants, "");
  ck_assert_int_eq(c.allow_open, 0);
  ck_assert_str_eq(c.tls_cert, "");
  ck_assert_str_eq(c.tls_key, "");
  ck_assert_str_eq(c.tls_client_ca, "");
}
END_TEST

START_TEST(test_set_strings_listen_and_backend) {
  srv_config_t c = defaults();
  set_ok(&c, "listen", "0.0.0.0:7000");
  ck_assert_str_eq(c.listen, "0.0.0.0:7000");
  set_ok(&c, "listen", "unix:/run/rdev.sock");
  ck_assert_str_eq(c.listen, "unix:/run/rdev.sock");
  set_ok(&c, "listen", rep('a', sizeof c.listen - 1));
  ck_assert_uint_eq(strlen(c.listen), sizeof c.listen - 1);
  set_fails(&c, "listen", rep('b', sizeof c.listen));
  set_fails(&c, "listen", "");
  set_ok(&c, "backend", "sim");
  set_ok(&c, "backend", rep('x', sizeof c.backend - 1));
  ck_assert_str_eq(c.backend, rep('x', sizeof c.backend - 1));
  set_fails(&c, "backend", rep('y', sizeof c.backend));
  set_fails(&c, "backend", "");
}
END_TEST

START_TEST(test_set_integers_within_their_ranges) {
  static const struct {
    const char *key;
    long lo, hi;
    size_t off;
  } keys[] = {{"sim-devices", 1, 64, offsetof(srv_config_t, sim_devices)},
              {"sim-slots", 0, 1024, offsetof(srv_config_t, sim_slots)},
              {"threads", 1, 64, offsetof(srv_config_t, threads)},
              {"drain-ms", 0, 3600000, offsetof(srv_config_t, drain_ms)}};
  char v[32];
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    srv_config_t c = defaults();
    int *field = (int *)((char *)&c + keys[i].off);
    long good[] = {keys[i].lo, keys[i].hi, (keys[i].lo + keys[i].hi) / 2};
    for (int g = 0; g < 3; g++) {
      snprintf(v, sizeof v, "%ld", good[g]);
      set_ok(&c, keys[i].key, v);
      ck_assert_int_eq(*field, good[g]);
    }
    snprintf(v, sizeof v, "%ld", keys[i].lo - 1);
    set_fails(&c, keys[i].key, v);
    snprintf(v, sizeof v, "%ld", keys[i].hi + 1);
    set_fails(&c, keys[i].key, v);
    static const char *bad[] = {"", "x", "1x", "2.0", "0x10", "1 ", "99999999999999999999", "-99999999999999999999"};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) set_fails(&c, keys[i].key, bad[b]);
  }
}
END_TEST

START_TEST(test_set_sizes_at_least_4k) {
  srv_config_t c = defaults();
  set_ok(&c, "sim-mem", "256M");
  ck_assert_uint_eq(c.sim_mem_bytes, 256 * MIB);
  set_ok(&c, "sim-mem", "4K");
  ck_assert_uint_eq(c.sim_mem_bytes, 4096);
  set_ok(&c, "sim-mem", "2GiB");
  ck_assert_uint_eq(c.sim_mem_bytes, 2 * GIB);
  set_fails(&c, "sim-mem", "4095");
  set_fails(&c, "sim-mem", "0");
  set_fails(&c, "sim-mem", "");
  set_fails(&c, "sim-mem", "-1G");
  set_fails(&c, "sim-mem", "1T");
  set_fails(&c, "sim-mem", "17179869184G");
  ck_assert_uint_eq(c.sim_mem_bytes, 2 * GIB);
  set_ok(&c, "max-inflight", "4096");
  ck_assert_uint_eq(c.max_inflight, 4096);
  set_ok(&c, "max-inflight", "64M");
  ck_assert_uint_eq(c.max_inflight, 64 * MIB);
  set_fails(&c, "max-inflight", "4095");
  set_fails(&c, "max-inflight", "3K");
  set_fails(&c, "max-inflight", "64 M");
  ck_assert_uint_eq(c.max_inflight, 64 * MIB);
}
END_TEST

START_TEST(test_set_log_level_names) {
  srv_config_t c = defaults();
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 3; i >= 0; i--) {
    set_ok(&c, "log-level", names[i]);
    ck_assert_int_eq(c.log_level, i);
  }
  static const char *bad[] = {"", "ERROR", "Info", "warning", "0", "3", "trace", "debug "};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) set_fails(&c, "log-level", bad[i]);
  ck_assert_int_eq(c.log_level, SRV_LOG_ERROR);
}
END_TEST

START_TEST(test_set_log_format_names) {
  srv_config_t c = defaults();
  ck_assert_int_eq(c.log_format, SRV_LOGF_TEXT);
  set_ok(&c, "log-format", "json");
  ck_assert_int_eq(c.log_format, SRV_LOGF_JSON);
  set_ok(&c, "log-format", "logfmt");
  ck_assert_int_eq(c.log_format, SRV_LOGF_LOGFMT);
  static const char *bad[] = {"", "JSON", "yaml", "text ", "1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) set_fails(&c, "log-format", bad[i]);
  ck_assert_int_eq(c.log_format, SRV_LOGF_LOGFMT);
  set_ok(&c, "log-format", "text");
  ck_assert_int_eq(c.log_format, SRV_LOGF_TEXT);
}
END_TEST

START_TEST(test_set_metrics_listen) {
  srv_config_t c = defaults();
  ck_assert_str_eq(c.metrics_listen, ""); /* off */
  set_ok(&c, "metrics-listen", "9464");
  ck_assert_str_eq(c.metrics_listen, "9464");
  set_fails(&c, "metrics-listen", "");
  ck_assert_str_eq(c.metrics_listen, "9464");
}
END_TEST

START_TEST(test_set_paths) {
  static const struct {
    const char *key;
    size_t off;
  } keys[] = {{"tenants", offsetof(srv_config_t, tenants)},
              {"tls-cert", offsetof(srv_config_t, tls_cert)},
              {"tls-key", offsetof(srv_config_t, tls_key)},
              {"tls-client-ca", offsetof(srv_config_t, tls_client_ca)}};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    srv_config_t c = defaults();
    const char *field = (const char *)&c + keys[i].off;
    set_ok(&c, keys[i].key, "/etc/rdev/x.pem");
    ck_assert_str_eq(field, "/etc/rdev/x.pem");
    set_ok(&c, keys[i].key, rep('p', 255));
    ck_assert_uint_eq(strlen(field), 255);
    set_fails(&c, keys[i].key, rep('q', 256));
    set_fails(&c, keys[i].key, "");
    /* only that key's field changed */
    srv_config_t d = defaults();
    memcpy((char *)&d + keys[i].off, field, 256);
    ck_assert(cfg_eq(&c, &d));
  }
}
END_TEST

START_TEST(test_set_allow_open_yes_or_no) {
  srv_config_t c = defaults();
  set_ok(&c, "allow-open", "yes");
  ck_assert_int_eq(c.allow_open, 1);
  set_ok(&c, "allow-open", "no");
  ck_assert_int_eq(c.allow_open, 0);
  set_ok(&c, "allow-open", "yes");
  static const char *bad[] = {"", "YES", "true", "1", "0", "on", "y", "no "};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) set_fails(&c, "allow-open", bad[i]);
  ck_assert_int_eq(c.allow_open, 1);
}
END_TEST

START_TEST(test_set_unknown_keys) {
  srv_config_t c = defaults();
  static const char *bad[] = {"", "Listen", "sim_mem", "sim-mem ", " threads", "thread", "log_level", "#", "="};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    set_fails(&c, bad[i], "1");
    const char *err = NULL;
    ck_assert_int_eq(srv_config_set(&c, bad[i], "1", &err), -1);
    ck_assert_str_eq(err, "unknown setting");
  }
}
END_TEST

START_TEST(test_set_error_messages_name_the_key) {
  srv_config_t c = defaults();
  static const char *keys[] = {"listen",       "backend", "sim-devices", "sim-mem",   "sim-slots",
                               "max-inflight", "threads", "drain-ms",    "log-level", "allow-open"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const char *err = NULL;
    ck_assert_int_eq(srv_config_set(&c, keys[i], "", &err), -1);
    ck_assert_msg(err && strstr(err, keys[i]) == err, "'%s': message '%s'", keys[i], err ? err : "(null)");
  }
}
END_TEST

/* ---- srv_config_parse ------------------------------------------------------------------ */

START_TEST(test_parse_every_key) {
  srv_config_t c = defaults();
  const char *text =
      "listen = 0.0.0.0:9000\n"
      "backend = sim\n"
      "sim-devices = 8\n"
      "sim-mem = 512M\n"
      "sim-slots = 16\n"
      "max-inflight = 8MiB\n"
      "threads = 4\n"
      "drain-ms = 250\n"
      "log-level = debug\n"
      "tenants = /etc/rdev/tenants\n"
      "allow-open = yes\n"
      "tls-cert = /etc/rdev/cert.pem\n"
      "tls-key = /etc/rdev/key.pem\n"
      "tls-client-ca = /etc/rdev/ca.pem\n";
  char err[256] = "untouched";
  ck_assert_int_eq(parse(&c, text, "rdevd.conf", err, sizeof err), 0);
  ck_assert_str_eq(c.listen, "0.0.0.0:9000");
  ck_assert_str_eq(c.backend, "sim");
  ck_assert_int_eq(c.sim_devices, 8);
  ck_assert_uint_eq(c.sim_mem_bytes, 512 * MIB);
  ck_assert_int_eq(c.sim_slots, 16);
  ck_assert_uint_eq(c.max_inflight, 8 * MIB);
  ck_assert_int_eq(c.threads, 4);
  ck_assert_int_eq(c.drain_ms, 250);
  ck_assert_int_eq(c.log_level, SRV_LOG_DEBUG);
  ck_assert_str_eq(c.tenants, "/etc/rdev/tenants");
  ck_assert_int_eq(c.allow_open, 1);
  ck_assert_str_eq(c.tls_cert, "/etc/rdev/cert.pem");
  ck_assert_str_eq(c.tls_key, "/etc/rdev/key.pem");
  ck_assert_str_eq(c.tls_client_ca, "/etc/rdev/ca.pem");
}
END_TEST

START_TEST(test_parse_comments_blank_lines_and_white_space) {
  srv_config_t c = defaults(), want = defaults();
  const char *text =
      "# rdevd config\n"
      "\n"
      "   \t \n"
      "  # indented comment = with an equals sign\n"
      "\tthreads\t=\t3\t\n"
      "listen=unix:/tmp/a b   # a comment after the value\n"
      "drain-ms = 10 #\n"
      "#sim-devices = 9\n";
  char err[256];
  ck_assert_int_eq(parse(&c, text, NULL, err, sizeof err), 0);
  want.threads = 3;
  snprintf(want.listen, sizeof want.listen, "unix:/tmp/a b");
  want.drain_ms = 10;
  ck_assert(cfg_eq(&c, &want));
}
END_TEST

START_TEST(test_parse_crlf_lines_and_last_line_without_newline) {
  srv_config_t c = defaults();
  char err[256];
  ck_assert_int_eq(
      parse(&c, "threads = 3\r\nlog-level = warn\r\n\r\nlisten = h:1\r\nallow-open = yes", NULL, err, sizeof err), 0);
  ck_assert_int_eq(c.threads, 3);
  ck_assert_int_eq(c.log_level, SRV_LOG_WARN);
  ck_assert_str_eq(c.listen, "h:1");
  ck_assert_int_eq(c.allow_open, 1);
}
END_TEST

START_TEST(test_parse_later_lines_override_earlier_and_equals_in_value) {
  srv_config_t c = defaults();
  char err[256];
  ck_assert_int_eq(parse(&c, "threads = 2\nthreads = 5\nlisten = a=b\n", NULL, err, sizeof err), 0);
  ck_assert_int_eq(c.threads, 5);
  ck_assert_str_eq(c.listen, "a=b");
}
END_TEST

START_TEST(test_parse_empty_or_comment_only_text_changes_nothing) {
  srv_config_t c = defaults(), want = defaults();
  char err[64];
  ck_assert_int_eq(srv_config_parse(&c, "", 0, NULL, err, sizeof err), 0);
  ck_assert_int_eq(parse(&c, "\n\n# nothing\n   \n", NULL, err, sizeof err), 0);
  ck_assert(cfg_eq(&c, &want));
}
END_TEST

START_TEST(test_parse_reads_only_len_bytes) {
  srv_config_t c = defaults();
  const char text[] = "threads = 3\nthreads = 9\n";
  char err[256];
  ck_assert_int_eq(srv_config_parse(&c, text, 12, NULL, err, sizeof err), 0); /* "threads = 3\n" */
  ck_assert_int_eq(c.threads, 3);
  ck_assert_int_eq(srv_config_parse(&c, text, 11, NULL, err, sizeof err), 0); /* no '\n' either */
  ck_assert_int_eq(c.threads, 3);
  /* bytes after len are never read: a bad line and a missing NUL there do not matter */
  char buf[32];
  memset(buf, 'z', sizeof buf);
  memcpy(buf, "threads = 7\n", 12);
  ck_assert_int_eq(srv_config_parse(&c, buf, 12, NULL, err, sizeof err), 0);
  ck_assert_int_eq(c.threads, 7);
  /* and a value cut short by len is what is parsed */
  ck_assert_int_eq(srv_config_parse(&c, "threads = 64", 11, NULL, err, sizeof err), 0);
  ck_assert_int_eq(c.threads, 6);
}
END_TEST

START_TEST(test_parse_errors_name_file_and_line) {
  srv_config_t c = defaults();
  const char *t1 = "threads = 2\nthreads 3\n";
  parse_fails_with(&c, t1, strlen(t1), "f.conf:2: expected key = value");
  const char *t2 = "# c\n\nbogus = 1\n";
  parse_fails_with(&c, t2, strlen(t2), "f.conf:3: bogus: unknown setting");
  const char *t3 = "threads = 65\n";
  parse_fails_with(&c, t3, strlen(t3), "f.conf:1: threads: threads: 1..64");
  const char *t4 = "listen = x\nthreads =\n";
  parse_fails_with(&c, t4, strlen(t4), "f.conf:2: threads: threads: 1..64");
  const char *t5 = "= 4\n";
  parse_fails_with(&c, t5, strlen(t5), "f.conf:1: : unknown setting");
  const char *t6 = "threads = 4 = 5\n";
  parse_fails_with(&c, t6, strlen(t6), "f.conf:1: threads: threads: 1..64");
  const char *t7 = "sim-mem = 1T\n";
  parse_fails_with(&c, t7, strlen(t7), "f.conf:1: sim-mem: sim-mem: a size such as 1G, 256M (at least 4K)");
  const char *t8 = "log-level = loud";
  parse_fails_with(&c, t8, strlen(t8), "f.conf:1: log-level: log-level: error, warn, info or debug");
  const char *t9 = "tls-key = \n";
  parse_fails_with(&c, t9, strlen(t9), "f.conf:1: tls-key: a path, not empty, under 256 bytes");
  /* NULL name */
  char err[128];
  ck_assert_int_eq(parse(&c, "x\n", NULL, err, sizeof err), -1);
  ck_assert_str_eq(err, "(config):1: expected key = value");
}
END_TEST

START_TEST(test_parse_failure_leaves_cfg_unchanged_after_good_lines) {
  srv_config_t c = defaults();
  char err[256];
  ck_assert_int_eq(parse(&c, "threads = 7\nlisten = 1.2.3.4:5\n", NULL, err, sizeof err), 0);
  srv_config_t before;
  before = c;
  const char *text = "threads = 2\nsim-mem = 2G\nlisten = 9.9.9.9:9\nallow-open = yes\nlog-level = debug\nbogus = 1\n";
  ck_assert_int_eq(parse(&c, text, "f", err, sizeof err), -1);
  ck_assert_str_eq(err, "f:6: bogus: unknown setting");
  ck_assert(cfg_eq(&before, &c));
}
END_TEST

START_TEST(test_parse_line_length_limit_is_exact) {
  srv_config_t c = defaults();
  char text[4 * (SRV_LINE_MAX + 8)];
  char err[256];
  /* SRV_LINE_MAX bytes before '\n': fine (a comment, and a real setting padded with spaces) */
  snprintf(text, sizeof text, "#%s\nthreads = 9%s\n", rep('c', SRV_LINE_MAX - 1), rep(' ', SRV_LINE_MAX - 11));
  ck_assert_int_eq(parse(&c, text, NULL, err, sizeof err), 0);
  ck_assert_int_eq(c.threads, 9);
  /* one byte more: an error, never split into two lines */
  snprintf(text, sizeof text, "threads = 2\n#%s\nthreads = 3\n", rep('c', SRV_LINE_MAX));
  parse_fails_with(&c, text, strlen(text), "f.conf:2: line longer than 1023 bytes");
  snprintf(text, sizeof text, "threads = 2%s\n", rep(' ', SRV_LINE_MAX - 10));
  parse_fails_with(&c, text, strlen(text), "f.conf:1: line longer than 1023 bytes");
  /* the last line, without '\n' */
  snprintf(text, sizeof text, "threads = 2\n#%s", rep('c', SRV_LINE_MAX));
  parse_fails_with(&c, text, strlen(text), "f.conf:2: line longer than 1023 bytes");
  /* a '\r' before '\n' is a byte of the line */
  snprintf(text, sizeof text, "#%s\r\n", rep('c', SRV_LINE_MAX - 1));
  parse_fails_with(&c, text, strlen(text), "f.conf:1: line longer than 1023 bytes");
  ck_assert_int_eq(c.threads, 9);
}
END_TEST

START_TEST(test_parse_nul_byte_is_an_error) {
  srv_config_t c = defaults();
  static const char t1[] = "threads = 3\0\n";
  parse_fails_with(&c, t1, sizeof t1 - 1, "f.conf:1: NUL byte in line");
  static const char t2[] = "threads = 3\n# a comment \0 too\n";
  parse_fails_with(&c, t2, sizeof t2 - 1, "f.conf:2: NUL byte in line");
  static const char t3[] = "threads = 3\n\nlisten = a\0b";
  parse_fails_with(&c, t3, sizeof t3 - 1, "f.conf:3: NUL byte in line");
  static const char t4[] = "\0";
  parse_fails_with(&c, t4, 1, "f.conf:1: NUL byte in line");
  ck_assert_int_eq(c.threads, 1);
}
END_TEST

START_TEST(test_parse_error_message_is_truncated_to_errlen) {
  srv_config_t c = defaults();
  char full[256], err[16];
  ck_assert_int_eq(parse(&c, "bogus-key = 1\n", "a-long-file-name.conf", full, sizeof full), -1);
  ck_assert_str_eq(full, "a-long-file-name.conf:1: bogus-key: unknown setting");
  memset(err, 'x', sizeof err);
  ck_assert_int_eq(parse(&c, "bogus-key = 1\n", "a-long-file-name.conf", err, 8), -1);
  ck_assert_str_eq(err, "a-long-");
  ck_assert_int_eq(err[8], 'x'); /* nothing past errlen */
  memset(err, 'x', sizeof err);
  ck_assert_int_eq(parse(&c, "bogus-key = 1\n", "f", err, 0), -1);
  for (size_t i = 0; i < sizeof err; i++) ck_assert_int_eq(err[i], 'x');
  ck_assert_int_eq(parse(&c, "bogus-key = 1\n", "f", err, 1), -1);
  ck_assert_str_eq(err, "");
}
END_TEST

/* ---- srv_config_load and the shared text plumbing -------------------------------------- */

static char *write_temp(const char *text) {
  size_t len = strlen(text);
  static char path[64];
  snprintf(path, sizeof path, "/tmp/rdev-test-config-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
  close(fd);
  return path;
}

START_TEST(test_load_reads_a_file_and_names_it_in_messages) {
  srv_config_t c = defaults();
  char err[512];
  char *p = write_temp("threads = 6\r\nsim-mem = 64M\n");
  ck_assert_int_eq(srv_config_load(&c, p, err, sizeof err), 0);
  ck_assert_int_eq(c.threads, 6);
  ck_assert_uint_eq(c.sim_mem_bytes, 64 * MIB);
  unlink(p);
  p = write_temp("threads = 6\nnope\n");
  srv_config_t before = c;
  ck_assert_int_eq(srv_config_load(&c, p, err, sizeof err), -1);
  char want[512];
  snprintf(want, sizeof want, "%s:2: expected key = value", p);
  ck_assert_str_eq(err, want);
  ck_assert(cfg_eq(&before, &c));
  unlink(p);
  ck_assert_int_eq(srv_config_load(&c, "/nonexistent/rdevd.conf", err, sizeof err), -1);
  ck_assert_str_eq(err, "/nonexistent/rdevd.conf: No such file or directory");
  ck_assert(cfg_eq(&before, &c));
}
END_TEST

START_TEST(test_load_refuses_a_file_over_the_limit) {
  srv_config_t c = defaults(), before = c;
  char path[] = "/tmp/rdev-test-config-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)SRV_FILE_MAX + 1), 0);
  close(fd);
  char err[512], want[512];
  ck_assert_int_eq(srv_config_load(&c, path, err, sizeof err), -1);
  snprintf(want, sizeof want, "%s: larger than %u bytes", path, SRV_FILE_MAX);
  ck_assert_str_eq(err, want);
  ck_assert(cfg_eq(&before, &c));
  unlink(path);
}
END_TEST

START_TEST(test_lines_next_cuts_comments_trims_and_counts) {
  static const char text[] = "  a = 1  # c\r\n\n#only\nlast";
  srv_lines_t it;
  srv_lines_init(&it, text, sizeof text - 1);
  char buf[SRV_LINE_MAX + 1], *line;
  const char *why;
  static const char *want[] = {"a = 1", "", "", "last"};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(srv_lines_next(&it, buf, &line, &why), 1);
    ck_assert_str_eq(line, want[i]);
    ck_assert_ptr_null(why);
    ck_assert_int_eq(it.lineno, i + 1);
  }
  ck_assert_int_eq(srv_lines_next(&it, buf, &line, &why), 0);
  ck_assert_int_eq(srv_lines_next(&it, buf, &line, &why), 0);
  char s[] = " \t x y \r\n";
  ck_assert_str_eq(srv_trim(s), "x y");
  char e[] = "   ";
  ck_assert_str_eq(srv_trim(e), "");
}
END_TEST

static Suite *size_suite(void) {
  Suite *s = suite_create("size");
  TCase *tc = tcase_create("size");
  tcase_add_test(tc, test_size_plain_digits);
  tcase_add_test(tc, test_size_suffixes_in_every_form_and_case);
  tcase_add_test(tc, test_size_rejects_other_suffixes_and_junk);
  tcase_add_test(tc, test_size_rejects_signs_and_spaces);
  tcase_add_test(tc, test_size_overflow_is_refused_at_the_exact_limit);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *set_suite(void) {
  Suite *s = suite_create("set");
  TCase *tc = tcase_create("set");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_set_strings_listen_and_backend);
  tcase_add_test(tc, test_set_integers_within_their_ranges);
  tcase_add_test(tc, test_set_sizes_at_least_4k);
  tcase_add_test(tc, test_set_log_level_names);
  tcase_add_test(tc, test_set_log_format_names);
  tcase_add_test(tc, test_set_metrics_listen);
  tcase_add_test(tc, test_set_paths);
  tcase_add_test(tc, test_set_allow_open_yes_or_no);
  tcase_add_test(tc, test_set_unknown_keys);
  tcase_add_test(tc, test_set_error_messages_name_the_key);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *parse_suite(void) {
  Suite *s = suite_create("parse");
  TCase *tc = tcase_create("parse");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_parse_every_key);
  tcase_add_test(tc, test_parse_comments_blank_lines_and_white_space);
  tcase_add_test(tc, test_parse_crlf_lines_and_last_line_without_newline);
  tcase_add_test(tc, test_parse_later_lines_override_earlier_and_equals_in_value);
  tcase_add_test(tc, test_parse_empty_or_comment_only_text_changes_nothing);
  tcase_add_test(tc, test_parse_reads_only_len_bytes);
  tcase_add_test(tc, test_parse_errors_name_file_and_line);
  tcase_add_test(tc, test_parse_failure_leaves_cfg_unchanged_after_good_lines);
  tcase_add_test(tc, test_parse_line_length_limit_is_exact);
  tcase_add_test(tc, test_parse_nul_byte_is_an_error);
  tcase_add_test(tc, test_parse_error_message_is_truncated_to_errlen);
  tcase_add_test(tc, test_load_reads_a_file_and_names_it_in_messages);
  tcase_add_test(tc, test_load_refuses_a_file_over_the_limit);
  tcase_add_test(tc, test_lines_next_cuts_comments_trims_and_counts);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(size_suite());
  srunner_add_suite(sr, set_suite());
  srunner_add_suite(sr, parse_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
