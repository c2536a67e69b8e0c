/*
 * client/cli/yaml_tree.h — private to the job spec reader: included only by
 * job_yaml.c, yaml_tree.c and yaml_value.c (the tool's other files, the
 * tests and the fuzzer see job_yaml.h). It owns the document tree and the
 * reader's context, and is the contract of what yaml_tree.c (loading a
 * document into the tree; errors with the line and column at fault) and
 * yaml_value.c (a node read as a value of a type: maps of known keys,
 * lists, strings, names, URLs, sha256s, numbers, sizes, durations) offer
 * job_yaml.c (the spec's schema, a reader per section).
 *
 * Who calls whom: job_yaml.c calls both, yaml_value.c calls yaml_tree.c;
 * nothing calls back up. Every function that takes a ctx_t reports a
 * problem through yt_errat (it fills c->err) and returns -1; the first
 * problem wins, since each caller returns at once.
 */
#ifndef RDEV_CLI_YAML_TREE_H
#define RDEV_CLI_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdev/v1/rdev.pb.h" /* rdev_v1_JobSpec (job.pb.h) and rdev_v1_InfoReply */

#define MAX_NAME 31 /* buffer, output and step names */
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the document tree --------------------------------------------------- */

enum { N_SCALAR, N_SEQ, N_MAP };

typedef struct node {
  int kind;
  int line, col; /* 1-based */
  bool plain;    /* a plain (unquoted) scalar */
  char *s;       /* scalar: its text, NUL-terminated (it may hold NULs of its own) */
  size_t len;
  struct node **kid; /* list: its items; map: key, value, key, value, ... */
  size_t n, cap;
} node_t;

/* The reader's context: err, errlen and nnodes are yaml_tree.c's; the rest
 * is job_yaml.c's (the spec being filled and what it knows of it). */
typedef struct {
  char *err;
  size_t errlen;
  const rdev_v1_InfoReply *kernels;
  bool need_kernels;
  size_t nnodes;
  rdev_v1_JobSpec *spec;
  int buf_line[16]; /* where each buffer was declared */
} ctx_t;

/* ---- yaml_tree.c: loading, errors ---------------------------------------- */

/* Frees n and everything under it; NULL is nothing. */
void yt_node_free(node_t *n);

/* Writes "line L, column C: WHERE: message" (no position when line is 0;
 * no "WHERE: " when where is NULL or empty) into c->err, if it has room;
 * returns -1. */
int yt_errat(ctx_t *c, int line, int col, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* errat at node n's position. */
#define errn(c, n, where, ...) yt_errat((c), (n)->line, (n)->col, (where), __VA_ARGS__)

/* A scalar's text for a message, in out: quoted, at most 40 bytes of it,
 * anything unprintable as '?'. Returns out. */
const char *yt_shown(const node_t *n, char out[48]);

/* "a list", "a map" or "a scalar", for a message. */
const char *yt_kind_name(const node_t *n);

/* The one document of text[0..len) into *root (NULL: the document is
 * empty), the caller's to node_free. Refuses a second document, aliases,
 * more than 200000 nodes and nesting deeper than 32; on an error *root is
 * NULL. */
int yt_load(ctx_t *c, const char *text, size_t len, node_t **root);

/* ---- yaml_value.c: a node as a value ------------------------------------- */

/* Whether n is null: a plain empty scalar, ~, null, Null or NULL. */
bool yt_is_null(const node_t *n);

/* Whether scalar k's text is name. */
bool yt_key_is(const node_t *k, const char *name);

/* Reads map m whose keys are among keys[0..nkeys) (at most 32): vals[i]
 * gets the value of keys[i] (NULL when absent or null). Refuses anything
 * else, each key at most once. */
int yt_fields(ctx_t *c, const node_t *m, const char *where, const char *const *keys, int nkeys, const node_t **vals);

/* That n is a list of at most max items. */
int yt_list_of(ctx_t *c, const node_t *n, const char *where, size_t max);

/* That n is a scalar (what: what it must be, for the message). */
int yt_scalar(ctx_t *c, const node_t *n, const char *where, const char *what);

/* A string of at most size-1 bytes into dst; no NUL or control bytes. */
int yt_get_text(ctx_t *c, const node_t *n, const char *where, char *dst, size_t size);

/* A name: 1 to 31 bytes of [A-Za-z0-9_.-]. */
int yt_get_name(ctx_t *c, const node_t *n, const char *where, char dst[MAX_NAME + 1]);

/* An http(s) URL of at most 2047 bytes, malloc'd into *dst (freed with the
 * spec by pb_release). */
int yt_get_url(ctx_t *c, const node_t *n, const char *where, char **dst);

/* A sha256: 64 hex digits into out (lowercased). */
int yt_get_sha256(ctx_t *c, const node_t *n, const char *where, char out[65]);

/* An unsigned integer (decimal, or 0x and hex) of at most max. */
int yt_get_u64(ctx_t *c, const node_t *n, const char *where, uint64_t max, uint64_t *out);

/* A signed integer in [min, max]. */
int yt_get_i64(ctx_t *c, const node_t *n, const char *where, int64_t min, int64_t max, int64_t *out);

/* A byte count: an integer, or one with a unit: K M G T, KiB MiB GiB TiB
 * (powers of 2), KB MB GB TB (powers of 10), B. */
int yt_get_size(ctx_t *c, const node_t *n, const char *where, uint64_t *out);

/* Seconds: an integer, or terms such as 30s, 10m, 2h, 1d (1h30m). */
int yt_get_seconds(ctx_t *c, const node_t *n, const char *where, uint32_t *out);

/* Whether scalar text looks like a number: a sign, then a digit or a dot
 * and a digit. */
bool yt_looks_numeric(const node_t *n);

/* A finite floating-point number (an integer is one too). */
int yt_get_f64(ctx_t *c, const node_t *n, const char *where, double *out);

#endif
