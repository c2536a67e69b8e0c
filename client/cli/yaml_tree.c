/*
 * client/cli/yaml_tree.c — the job spec reader's YAML side: libyaml's event
 * parser builds a small tree of the document (one document; no aliases;
 * bounded depth and size), and every error the reader reports is written
 * here, with the line and column of the value at fault (libyaml's own
 * errors too). The tree and its contract: yaml_tree.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "yaml_tree.h"

#define MAX_DEPTH 32     /* nesting of lists and maps (a spec needs 5) */
#define MAX_NODES 200000 /* nodes of a document */

/* ---- the document tree --------------------------------------------------- */

void yt_node_free(node_t *n) {
  if (!n) return;
  for (size_t i = 0; i < n->n; i++) yt_node_free(n->kid[i]);
  free(n->kid);
  free(n->s);
  free(n);
}

static bool node_add(node_t *p, node_t *k) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 4;
    node_t **kid = realloc(p->kid, cap * sizeof *kid);
    if (!kid) return false;
    p->kid = kid;
    p->cap = cap;
  }
  p->kid[p->n++] = k;
  return true;
}

/* ---- errors --------------------------------------------------------------- */

int yt_errat(ctx_t *c, int line, int col, const char *where, const char *fmt, ...) {
  if (!c->errlen) return -1;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *sep = where && *where ? ": " : "";
  if (line > 0)
    snprintf(c->err, c->errlen, "line %d, column %d: %s%s%s", line, col, where ? where : "", sep, msg);
  else
    snprintf(c->err, c->errlen, "%s%s%s", where ? where : "", sep, msg);
  return -1;
}

/* A scalar's text for a message: quoted, at most 40 bytes of it, anything
 * unprintable as '?'. */
const char *yt_shown(const node_t *n, char out[48]) {
  size_t k = 0;
  out[k++] = '"';
  for (size_t i = 0; i < n->len && k < 42; i++) {
    unsigned char ch = (unsigned char)n->s[i];
    out[k++] = ch >= 0x20 && ch != 0x7f ? (char)ch : '?';
  }
  if (n->len > 40) {
    memcpy(out + k, "...", 3);
    k += 3;
  }
  out[k++] = '"';
  out[k] = '\0';
  return out;
}

const char *yt_kind_name(const node_t *n) {
  return n->kind == N_SEQ ? "a list" : n->kind == N_MAP ? "a map" : "a scalar";
}

/* ---- loading -------------------------------------------------------------- */

static int yaml_error(ctx_t *c, const yaml_parser_t *p, const char *text, size_t len) {
  if (p->error == YAML_MEMORY_ERROR) return yt_errat(c, 0, 0, NULL, "out of memory");
  const char *problem = p->problem ? p->problem : "malformed YAML";
  if (p->error == YAML_READER_ERROR) { /* marks are not set: count lines up to the offset */
    int line = 1, col = 1;
    for (size_t i = 0; i < p->problem_offset && i < len; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    if (p->problem_value != -1)
      return yt_errat(c, line, col, NULL, "%s (byte 0x%x)", problem, (unsigned)p->problem_value);
    return yt_errat(c, line, col, NULL, "%s", problem);
  }
  int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
  if (p->context)
    return yt_errat(c, line, col, NULL, "%s (%s at line %d)", problem, p->context, (int)p->context_mark.line + 1);
  return yt_errat(c, line, col, NULL, "%s", problem);
}

/* The one document of text into *root (NULL: the document is empty). */
int yt_load(ctx_t *c, const char *text, size_t len, node_t **root) {
  *root = NULL;
  yaml_parser_t p;
  if (!yaml_parser_initialize(&p)) return yt_errat(c, 0, 0, NULL, "out of memory");
  yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
  node_t *stack[MAX_DEPTH];
  int depth = 0, docs = 0, rc = 0;
  bool done = false;
  while (!done && !rc) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&p, &ev)) {
      rc = yaml_error(c, &p, text, len);
      break;
    }
    int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
    switch (ev.type) {
      case YAML_STREAM_END_EVENT: done = true; break;
      case YAML_DOCUMENT_START_EVENT:
        if (++docs > 1) rc = yt_errat(c, line, col, NULL, "a spec is one YAML document; this is a second one");
        break;
      case YAML_ALIAS_EVENT: rc = yt_errat(c, line, col, NULL, "aliases (*name) are not supported"); break;
      case YAML_SCALAR_EVENT:
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        if (++c->nnodes > MAX_NODES) {
          rc = yt_errat(c, line, col, NULL, "too many values (more than %d)", MAX_NODES);
          break;
        }
        node_t *n = calloc(1, sizeof *n);
        if (!n) {
          rc = yt_errat(c, 0, 0, NULL, "out of memory");
          break;
        }
        n->line = line;
        n->col = col;
        if (ev.type == YAML_SCALAR_EVENT) {
          n->kind = N_SCALAR;
          n->plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
          n->len = ev.data.scalar.length;
          n->s = malloc(n->len + 1);
          if (n->s) {
            memcpy(n->s, ev.data.scalar.value, n->len);
            n->s[n->len] = '\0';
          }
        } else {
          n->kind = ev.type == YAML_SEQUENCE_START_EVENT ? N_SEQ : N_MAP;
        }
        bool attached = depth ? node_add(stack[depth - 1], n) : !*root;
        if (attached && !depth) *root = n;
        if (!attached) {
          yt_node_free(n);
          rc = yt_errat(c, line, col, NULL, depth ? "out of memory" : "a spec is one YAML document");
        } else if (n->kind == N_SCALAR && !n->s) {
          rc = yt_errat(c, 0, 0, NULL, "out of memory");
        } else if (n->kind != N_SCALAR) {
          if (depth == MAX_DEPTH)
            rc = yt_errat(c, line, col, NULL, "nested too deeply (more than %d levels)", MAX_DEPTH);
          else
            stack[depth++] = n;
        }
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        if (depth > 0) depth--;
        break;
      default: break;
    }
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&p);
  if (rc) {
    yt_node_free(*root);
    *root = NULL;
  }
  return rc;
}
