/*
 * proto/sim_binary.c — reading the rdev sim binary format's lines
 * (rdev/sim_binary.h): words, the header, kernel lines' entries, and what
 * a binary declares, for the runtime's loader and the ACL library alike.
 */
#include "rdev/sim_binary.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

void rdev_sim_binary_reader_init(rdev_sim_binary_reader_t *r, const void *data, size_t len) {
  memset(r, 0, sizeof *r);
  r->p = data;
  r->end = r->p + len;
}

/* ASCII white space, whatever the process's locale: the client and rdevd
 * must split a line alike. */
static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* Splits r->line (modified) into words; nw > MAX_WORDS: too many. */
static void split(rdev_sim_binary_reader_t *r) {
  r->nw = 0;
  for (char *p = r->line; *p;) {
    while (*p && is_space(*p)) p++;
    if (!*p || *p == '#') break;
    if (r->nw == RDEV_SIM_BINARY_MAX_WORDS + 1) return;
    r->w[r->nw++] = p;
    while (*p && !is_space(*p)) p++;
    if (*p) *p++ = '\0';
  }
}

int rdev_sim_binary_next(rdev_sim_binary_reader_t *r) {
  while (r->p < r->end) {
    const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    size_t n = (size_t)((nl ? nl : r->end) - r->p);
    const char *line = r->p;
    r->p = nl ? nl + 1 : r->end; /* past this line, whatever it holds */
    r->lineno++;
    r->nw = 0;
    if (n > RDEV_SIM_BINARY_MAX_LINE || memchr(line, '\0', n)) return RDEV_SIM_BINARY_NOT_TEXT;
    memcpy(r->line, line, n);
    r->line[n] = '\0';
    split(r);
    if (r->nw > RDEV_SIM_BINARY_MAX_WORDS) {
      r->nw = 0;
      return RDEV_SIM_BINARY_TOO_MANY;
    }
    if (r->nw) return RDEV_SIM_BINARY_WORDS;
  }
  r->nw = 0;
  return RDEV_SIM_BINARY_END;
}

int rdev_sim_binary_is_header(const rdev_sim_binary_reader_t *r) {
  return r->nw == 2 && !strcmp(r->w[0], "rdev-sim-binary") && !strcmp(r->w[1], "1");
}

int rdev_sim_binary_entry(const char *word, uint64_t *entry) {
  if (strncmp(word, "entry=", 6)) return -1;
  const char *v = word + 6;
  int hex = !strncmp(v, "0x", 2) || !strncmp(v, "0X", 2);
  if (hex) v += 2;
  if (!*v) return -1;
  for (const char *c = v; *c; c++)
    if (!(hex ? isxdigit((unsigned char)*c) : isdigit((unsigned char)*c))) return -1;
  errno = 0;
  unsigned long long e = strtoull(v, NULL, hex ? 16 : 10);
  if (errno) return -1; /* past 2^64 - 1 */
  *entry = e;
  return 0;
}

int rdev_sim_binary_declares(const void *data, size_t len, const char *name, uint64_t entry) {
  rdev_sim_binary_reader_t r;
  rdev_sim_binary_reader_init(&r, data, len);
  int rc, header = 0, found = 0;
  uint64_t index = 0;
  while ((rc = rdev_sim_binary_next(&r)) == RDEV_SIM_BINARY_WORDS) {
    if (!header) {
      if (!rdev_sim_binary_is_header(&r)) return -1;
      header = 1;
      continue;
    }
    if (strcmp(r.w[0], "kernel")) continue; /* a layout line: rdevd checks it against its registry */
    uint64_t e = index++;
    if (r.nw < 3 || r.nw > 4 || (r.nw == 4 && rdev_sim_binary_entry(r.w[3], &e))) return -1;
    if (name ? !strcmp(r.w[1], name) : e == entry) found = 1;
  }
  return rc != RDEV_SIM_BINARY_END || !header ? -1 : found;
}
