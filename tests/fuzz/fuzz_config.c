/*
 * tests/fuzz/fuzz_config.c — libFuzzer harness for rdevd's config file
 * parser (srv_config_parse, and through it srv_config_set,
 * srv_parse_size, srv_trim and srv_lines_next): the input is the file's
 * text, any bytes. A good text must leave every setting within what
 * srv_config_set promises; a bad one must leave the config untouched and
 * say why in err, truncated safely however small err is. A broken promise
 * abort()s; sanitizers catch the rest (memory errors, UB, leaks).
 */
#include "fuzz.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

#define CHECK(c) \
  do { \
    if (!(c)) abort(); \
  } while (0)

/* s is a NUL-terminated string of 1..size-1 bytes (0.. when may_be_empty). */
static void check_string(const char *s, size_t size, int may_be_empty) {
  size_t n = strnlen(s, size);
  CHECK(n < size);
  CHECK(may_be_empty || n > 0);
}

/* err holds a NUL-terminated, non-empty message within errlen bytes, and
 * nothing was written past them (guard bytes). */
static void check_err(const char *err, size_t errlen, size_t bufsize) {
  size_t n = strnlen(err, errlen);
  CHECK(n < errlen);
  CHECK(n > 0 || errlen == 1);
  for (size_t i = errlen; i < bufsize; i++) CHECK(err[i] == 0x5a);
}

static void check_config(const srv_config_t *c) {
  check_string(c->listen, sizeof c->listen, 0);
  check_string(c->backend, sizeof c->backend, 0);
  check_string(c->tenants, sizeof c->tenants, 1);
  check_string(c->tls_cert, sizeof c->tls_cert, 1);
  check_string(c->tls_key, sizeof c->tls_key, 1);
  check_string(c->tls_client_ca, sizeof c->tls_client_ca, 1);
  CHECK(c->sim_devices >= 1 && c->sim_devices <= 64);
  CHECK(c->sim_mem_bytes >= 4096);
  CHECK(c->sim_slots >= 0 && c->sim_slots <= 1024);
  CHECK(c->max_inflight >= 4096);
  CHECK(c->threads >= 1 && c->threads <= 64);
  CHECK(c->drain_ms >= 0 && c->drain_ms <= 3600000);
  CHECK(c->log_level >= SRV_LOG_ERROR && c->log_level <= SRV_LOG_DEBUG);
  CHECK(c->allow_open == 0 || c->allow_open == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact-size copy, so reading past the input is caught. */
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  memcpy(text, data, size);

  srv_config_t def, cfg;
  srv_config_defaults(&def);
  check_config(&def);
  cfg = def;
  char err[600];
  memset(err, 0x5a, sizeof err);
  int rc = srv_config_parse(&cfg, text, size, "fuzz.conf", err, 512);
  if (rc == 0) {
    check_config(&cfg);
    /* parsing the same text again over its own result changes nothing */
    srv_config_t again = cfg;
    CHECK(srv_config_parse(&again, text, size, "fuzz.conf", err, 512) == 0);
    CHECK(!memcmp(&again, &cfg, sizeof cfg));
  } else {
    CHECK(rc == -1);
    CHECK(!memcmp(&cfg, &def, sizeof cfg));
    check_err(err, 512, sizeof err);
    /* a tiny err under a long name: truncated, never overrun */
    static const char longname[] = "/a/config/file/with/a/name/longer/than/the/message/buffer.conf";
    char small[24];
    memset(small, 0x5a, sizeof small);
    CHECK(srv_config_parse(&cfg, text, size, longname, small, 8) == -1);
    check_err(small, 8, sizeof small);
    CHECK(srv_config_parse(&cfg, text, size, NULL, NULL, 0) == -1);
    CHECK(!memcmp(&cfg, &def, sizeof cfg));
  }
  free(text);
  return 0;
}
