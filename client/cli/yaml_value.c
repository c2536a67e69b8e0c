/*
 * client/cli/yaml_value.c — a node of the job spec's document tree read as
 * a value of a type, whatever the spec's schema: a map of known keys, a
 * list, a string, a name, an http(s) URL, a sha256, integers, byte sizes
 * with units, durations and floating-point numbers. Each refusal names the
 * node's line and column. The contract: yaml_tree.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "yaml_tree.h"

#define MAX_URL 2047 /* bytes of a URL (job.proto) */

bool yt_is_null(const node_t *n) {
  if (n->kind != N_SCALAR || !n->plain) return false;
  return n->len == 0 || !strcmp(n->s, "~") || !strcmp(n->s, "null") || !strcmp(n->s, "Null") || !strcmp(n->s, "NULL");
}

bool yt_key_is(const node_t *k, const char *name) { return k->len == strlen(name) && !memcmp(k->s, name, k->len); }

/* Reads map m whose keys are among keys[0..nkeys): vals[i] gets the value
 * of keys[i] (NULL when absent or null). Refuses anything else, each key at
 * most once. */
int yt_fields(ctx_t *c, const node_t *m, const char *where, const char *const *keys, int nkeys, const node_t **vals) {
  if (m->kind != N_MAP) return errn(c, m, where, "must be a map {key: value, ...}, not %s", yt_kind_name(m));
  for (int i = 0; i < nkeys; i++) vals[i] = NULL;
  uint32_t seen = 0;
  for (size_t i = 0; i + 1 < m->n; i += 2) {
    const node_t *k = m->kid[i], *v = m->kid[i + 1];
    char q[48];
    if (k->kind != N_SCALAR) return errn(c, k, where, "a key must be a word, not %s", yt_kind_name(k));
    int j = 0;
    while (j < nkeys && !yt_key_is(k, keys[j])) j++;
    if (j == nkeys) {
      char known[256] = "";
      for (int x = 0; x < nkeys; x++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", x ? ", " : "", keys[x]);
      return errn(c, k, where, "unknown key %s (known here: %s)", yt_shown(k, q), known);
    }
    if (seen >> j & 1) return errn(c, k, where, "duplicate key %s", yt_shown(k, q));
    seen |= 1u << j;
    vals[j] = yt_is_null(v) ? NULL : v;
  }
  return 0;
}

/* List n of at most max items. */
int yt_list_of(ctx_t *c, const node_t *n, const char *where, size_t max) {
  if (n->kind != N_SEQ) return errn(c, n, where, "must be a list [...], not %s", yt_kind_name(n));
  if (n->n > max) return errn(c, n->kid[max], where, "too many items: %zu, at most %zu", n->n, max);
  return 0;
}

int yt_scalar(ctx_t *c, const node_t *n, const char *where, const char *what) {
  if (n->kind != N_SCALAR) return errn(c, n, where, "must be %s, not %s", what, yt_kind_name(n));
  return 0;
}

/* A string of at most size-1 bytes into dst; no NUL or control bytes. */
int yt_get_text(ctx_t *c, const node_t *n, const char *where, char *dst, size_t size) {
  if (yt_scalar(c, n, where, "a string")) return -1;
  for (size_t i = 0; i < n->len; i++) {
    unsigned char ch = (unsigned char)n->s[i];
    if (ch < 0x20 || ch == 0x7f) return errn(c, n, where, "holds a control character (byte 0x%02x)", ch);
  }
  if (n->len >= size) return errn(c, n, where, "too long: %zu bytes, at most %zu", n->len, size - 1);
  memcpy(dst, n->s, n->len);
  dst[n->len] = '\0';
  return 0;
}

/* A name: 1 to 31 bytes of [A-Za-z0-9_.-]. */
int yt_get_name(ctx_t *c, const node_t *n, const char *where, char dst[MAX_NAME + 1]) {
  char q[48];
  if (yt_scalar(c, n, where, "a name")) return -1;
  bool ok = n->len >= 1 && n->len <= MAX_NAME;
  for (size_t i = 0; ok && i < n->len; i++) {
    char ch = n->s[i];
    ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
         ch == '-';
  }
  if (!ok) return errn(c, n, where, "bad name %s: a name is 1 to 31 of A-Z a-z 0-9 _ . -", yt_shown(n, q));
  memcpy(dst, n->s, n->len);
  dst[n->len] = '\0';
  return 0;
}

/* An http(s) URL of at most MAX_URL bytes, malloc'd into *dst (freed with the
 * spec by pb_release). */
int yt_get_url(ctx_t *c, const node_t *n, const char *where, char **dst) {
  if (yt_scalar(c, n, where, "a URL")) return -1;
  if (n->len == 0) return errn(c, n, where, "empty URL");
  if (n->len > MAX_URL) return errn(c, n, where, "URL too long: %zu bytes, at most %d", n->len, MAX_URL);
  for (size_t i = 0; i < n->len; i++) {
    unsigned char ch = (unsigned char)n->s[i];
    if (ch <= 0x20 || ch == 0x7f) return errn(c, n, where, "a URL holds no spaces or control characters");
  }
  if (strncasecmp(n->s, "http://", 7) != 0 && strncasecmp(n->s, "https://", 8) != 0) {
    char q[48];
    return errn(c, n, where, "%s is not an http:// or https:// URL", yt_shown(n, q));
  }
  *dst = malloc(n->len + 1);
  if (!*dst) return errn(c, n, where, "out of memory");
  memcpy(*dst, n->s, n->len + 1);
  return 0;
}

/* 64 hex digits into out (lowercased). */
int yt_get_sha256(ctx_t *c, const node_t *n, const char *where, char out[65]) {
  if (yt_get_text(c, n, where, out, 65)) return -1;
  size_t len = strlen(out);
  bool ok = len == 64;
  for (size_t k = 0; ok && k < len; k++) {
    char ch = out[k];
    if (ch >= 'A' && ch <= 'F') out[k] = (char)(ch - 'A' + 'a');
    ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
  }
  return ok ? 0 : errn(c, n, where, "a sha256 is 64 hex digits");
}

/* Parses an integer at the start of s[0..len): an optional sign, then
 * decimal digits or 0x and hex digits. *used: the bytes it took (0: no
 * integer there). Returns false when the magnitude overflows 64 bits. */
static bool int_prefix(const char *s, size_t len, bool *neg, uint64_t *mag, size_t *used) {
  size_t i = 0;
  *neg = false;
  *mag = 0;
  *used = 0;
  if (i < len && (s[i] == '-' || s[i] == '+')) *neg = s[i++] == '-';
  unsigned base = 10;
  if (i + 2 < len && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    base = 16;
    i += 2;
  }
  size_t start = i;
  bool over = false;
  for (; i < len; i++) {
    char ch = s[i];
    unsigned d;
    if (ch >= '0' && ch <= '9')
      d = (unsigned)(ch - '0');
    else if (base == 16 && ch >= 'a' && ch <= 'f')
      d = (unsigned)(ch - 'a' + 10);
    else if (base == 16 && ch >= 'A' && ch <= 'F')
      d = (unsigned)(ch - 'A' + 10);
    else
      break;
    if (*mag > (UINT64_MAX - d) / base) over = true;
    *mag = *mag * base + d;
  }
  if (i == start) return true; /* no digits: *used stays 0 */
  *used = i;
  return !over;
}

/* An unsigned integer of at most max. */
int yt_get_u64(ctx_t *c, const node_t *n, const char *where, uint64_t max, uint64_t *out) {
  char q[48];
  if (yt_scalar(c, n, where, "a number")) return -1;
  bool neg;
  uint64_t v;
  size_t used;
  bool fits = int_prefix(n->s, n->len, &neg, &v, &used);
  if (!used || used != n->len) return errn(c, n, where, "%s is not an integer", yt_shown(n, q));
  if (neg && v) return errn(c, n, where, "must not be negative");
  if (!fits || v > max)
    return errn(c, n, where, "%s is too large (at most %llu)", yt_shown(n, q), (unsigned long long)max);
  *out = v;
  return 0;
}

/* A signed integer in [min, max]. */
int yt_get_i64(ctx_t *c, const node_t *n, const char *where, int64_t min, int64_t max, int64_t *out) {
  char q[48];
  if (yt_scalar(c, n, where, "a number")) return -1;
  bool neg;
  uint64_t v;
  size_t used;
  bool fits = int_prefix(n->s, n->len, &neg, &v, &used);
  if (!used || used != n->len) return errn(c, n, where, "%s is not an integer", yt_shown(n, q));
  bool in = fits && (neg ? v <= (uint64_t)INT64_MAX + 1 : v <= (uint64_t)INT64_MAX);
  int64_t x = !in ? 0 : neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  if (!in || x < min || x > max)
    return errn(c, n, where, "%s is out of range (%lld to %lld)", yt_shown(n, q), (long long)min, (long long)max);
  *out = x;
  return 0;
}

/* A byte count: an integer, or one with a unit: K M G T, KiB MiB GiB TiB
 * (powers of 2), KB MB GB TB (powers of 10), B. */
int yt_get_size(ctx_t *c, const node_t *n, const char *where, uint64_t *out) {
  static const struct {
    const char *unit;
    uint64_t mul;
  } units[] = {
      {"B", 1},
      {"K", 1ull << 10},
      {"M", 1ull << 20},
      {"G", 1ull << 30},
      {"T", 1ull << 40},
      {"KiB", 1ull << 10},
      {"MiB", 1ull << 20},
      {"GiB", 1ull << 30},
      {"TiB", 1ull << 40},
      {"KB", 1000ull},
      {"MB", 1000000ull},
      {"GB", 1000000000ull},
      {"TB", 1000000000000ull},
  };
  char q[48];
  if (yt_scalar(c, n, where, "a size")) return -1;
  bool neg;
  uint64_t v;
  size_t used;
  bool fits = int_prefix(n->s, n->len, &neg, &v, &used);
  if (!used) return errn(c, n, where, "%s is not a size (bytes, or a number with K, MiB, GB, ...)", yt_shown(n, q));
  if (neg && v) return errn(c, n, where, "a size must not be negative");
  size_t i = used;
  while (i < n->len && n->s[i] == ' ') i++;
  uint64_t mul = 1;
  if (i < n->len) {
    size_t k = 0;
    while (k < ARRAY_LEN(units) &&
           !(strlen(units[k].unit) == n->len - i && !memcmp(units[k].unit, n->s + i, n->len - i)))
      k++;
    if (k == ARRAY_LEN(units))
      return errn(c, n, where, "%s: unknown unit (K M G T, KiB MiB GiB TiB, KB MB GB TB or B)", yt_shown(n, q));
    mul = units[k].mul;
  } else if (used != n->len) {
    return errn(c, n, where, "%s is not a size", yt_shown(n, q));
  }
  if (!fits || v > UINT64_MAX / mul) return errn(c, n, where, "%s is too large (over 2^64 bytes)", yt_shown(n, q));
  *out = v * mul;
  return 0;
}

/* Seconds: an integer, or terms such as 30s, 10m, 2h, 1d (1h30m). */
int yt_get_seconds(ctx_t *c, const node_t *n, const char *where, uint32_t *out) {
  char q[48];
  if (yt_scalar(c, n, where, "a duration")) return -1;
  uint64_t total = 0;
  size_t i = 0;
  bool any = false;
  while (i < n->len) {
    uint64_t v = 0;
    size_t start = i;
    for (; i < n->len && n->s[i] >= '0' && n->s[i] <= '9'; i++) {
      v = v * 10 + (uint64_t)(n->s[i] - '0');
      if (v > UINT32_MAX) return errn(c, n, where, "%s is too long (at most %u seconds)", yt_shown(n, q), UINT32_MAX);
    }
    if (i == start) break;
    uint64_t mul = 1;
    if (i < n->len) {
      switch (n->s[i]) {
        case 's': mul = 1; break;
        case 'm': mul = 60; break;
        case 'h': mul = 3600; break;
        case 'd': mul = 86400; break;
        default: return errn(c, n, where, "%s is not a duration (seconds, or 30s, 10m, 2h, 1d)", yt_shown(n, q));
      }
      i++;
    } else if (any) {
      return errn(c, n, where, "%s: a unit after each number (1h30m)", yt_shown(n, q));
    }
    total += v * mul;
    any = true;
    if (total > UINT32_MAX) return errn(c, n, where, "%s is too long (at most %u seconds)", yt_shown(n, q), UINT32_MAX);
  }
  if (!any || i != n->len)
    return errn(c, n, where, "%s is not a duration (seconds, or 30s, 10m, 2h, 1d)", yt_shown(n, q));
  *out = (uint32_t)total;
  return 0;
}

/* Whether scalar text looks like a number: a sign, then a digit or a dot
 * and a digit. */
bool yt_looks_numeric(const node_t *n) {
  size_t i = 0;
  if (i < n->len && (n->s[i] == '-' || n->s[i] == '+')) i++;
  if (i < n->len && n->s[i] == '.') i++;
  return i < n->len && n->s[i] >= '0' && n->s[i] <= '9';
}

/* A finite floating-point number (an integer is one too). */
int yt_get_f64(ctx_t *c, const node_t *n, const char *where, double *out) {
  char q[48];
  if (yt_scalar(c, n, where, "a number")) return -1;
  if (!yt_looks_numeric(n) || n->len > 64 || strlen(n->s) != n->len)
    return errn(c, n, where, "%s is not a number", yt_shown(n, q));
  char *end;
  double v = strtod(n->s, &end);
  if (end != n->s + n->len) return errn(c, n, where, "%s is not a number", yt_shown(n, q));
  if (!isfinite(v)) return errn(c, n, where, "%s is out of range", yt_shown(n, q));
  *out = v;
  return 0;
}
