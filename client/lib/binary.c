/*
 * client/lib/binary.c — kernel binaries and their functions as the caller
 * sees them (rdev_binary_*, rdev_launch_function): objects naming the
 * server's, a binary's functions freed with it, all of them freed at
 * close; a launch sends a copy of its argument blob. A session over several
 * servers loads a binary on each (multi.c): those binaries, and their
 * functions of one name, are rings of siblings, one per server; a launch
 * takes its stream's. Owns s->bins and the binary and function objects;
 * calls submit.c, poll.c (a server gone), stream.c (stream handles) and
 * error.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

struct rdev_function {
  rdev_binary_t *bin;
  uint64_t handle;
  struct rdev_function *next;
  struct rdev_function *sib; /* the same function of the binary on the next server (itself: one server) */
};

struct rdev_binary {
  rdev_session_t *s;
  uint64_t handle;
  struct rdev_function *funcs;
  struct rdev_binary *prev, *next; /* s->bins */
  struct rdev_binary *sib;         /* the same binary on the next server (itself: one server) */
};

/* The objects: a binary entered in s->bins, a function in its binary's
 * list (under s->mu). */
static void binary_enter(rdev_session_t *s, rdev_binary_t *b, uint64_t handle) {
  b->s = s;
  b->handle = handle;
  b->sib = b;
  pthread_mutex_lock(&s->mu);
  b->next = s->bins;
  if (b->next) b->next->prev = b;
  s->bins = b;
  pthread_mutex_unlock(&s->mu);
}

static void function_enter(rdev_binary_t *b, struct rdev_function *f, uint64_t handle) {
  f->bin = b;
  f->handle = handle;
  f->sib = f;
  pthread_mutex_lock(&b->s->mu);
  f->next = b->funcs;
  b->funcs = f;
  pthread_mutex_unlock(&b->s->mu);
}

static int check_binary(const void *data, size_t len) {
  if (len == 0 || len > RDEV_WIRE_MAX_CHUNK)
    return cl_error(RDEV_INVALID_PARAM, "a binary of %zu bytes: 1 to %u", len, RDEV_WIRE_MAX_CHUNK);
  return RDEV_OK;
}

/* The BinaryFunction request for name (NULL: entry) of binary handle. */
static int function_request(uint64_t binary, const char *name, uint64_t entry, rdev_v1_Request *req) {
  *req = (rdev_v1_Request)rdev_v1_Request_init_zero;
  req->which_op = rdev_v1_Request_binary_function_tag;
  req->op.binary_function.binary = binary;
  if (!name) {
    req->op.binary_function.entry = entry;
    req->op.binary_function.by_entry = true;
    return RDEV_OK;
  }
  if (strlen(name) >= sizeof req->op.binary_function.name)
    return cl_error(RDEV_UNKNOWN_KERNEL, "kernel name of more than %zu bytes", sizeof req->op.binary_function.name - 1);
  strcpy(req->op.binary_function.name, name);
  return RDEV_OK;
}

int cl_binary_load(rdev_session_t *s, const void *data, size_t len, rdev_binary_t **out) {
  if (!s || !data || !out) return cl_error(RDEV_INVALID_PARAM, "session, data or out is NULL");
  *out = NULL;
  int rc = check_binary(data, len);
  if (rc) return rc;
  rdev_binary_t *b = calloc(1, sizeof *b);
  if (!b) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_binary_load_tag;
  cl_result_t res;
  rc = cl_call_with(s, &req, data, len, &res);
  if (rc) {
    free(b);
    return rc;
  }
  binary_enter(s, b, res.handle);
  *out = b;
  return RDEV_OK;
}

static void free_functions(rdev_binary_t *b) {
  while (b->funcs) {
    struct rdev_function *n = b->funcs->next;
    free(b->funcs);
    b->funcs = n;
  }
}

/* Unloads one binary of a ring (its siblings' links to it are the
 * caller's). */
static int unload_one(rdev_binary_t *b) {
  rdev_session_t *s = b->s;
  pthread_mutex_lock(&s->mu);
  if (b->prev)
    b->prev->next = b->next;
  else
    s->bins = b->next;
  if (b->next) b->next->prev = b->prev;
  pthread_mutex_unlock(&s->mu);
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_binary_unload_tag;
  req.op.binary_unload.binary = b->handle;
  free_functions(b);
  free(b);
  return cl_call(s, &req, NULL);
}

int rdev_binary_unload(rdev_binary_t *b) {
  if (!b) return cl_error(RDEV_INVALID_PARAM, "binary is NULL");
  for (rdev_binary_t *n = b->sib, *next; n != b; n = next) { /* the other servers' first: the result is b's */
    next = n->sib;
    unload_one(n);
  }
  return unload_one(b);
}

/* The function of one binary of a ring: the server's answer, or (quiet)
 * sent under a handle the client picks, not waited for. */
static int function_one(rdev_binary_t *b, const char *name, uint64_t entry, int quiet, rdev_function_t **out) {
  rdev_v1_Request req;
  int rc = function_request(b->handle, name, entry, &req);
  if (rc) return rc;
  struct rdev_function *f = calloc(1, sizeof *f);
  if (!f) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  cl_result_t res = {0};
  if (quiet) {
    req.op.binary_function.handle = res.handle = cl_handle_new(b->s);
    req.op.binary_function.quiet = true;
    rc = cl_send_async(b->s, &req);
  } else {
    rc = cl_call(b->s, &req, &res);
  }
  if (rc) {
    free(f);
    return rc;
  }
  function_enter(b, f, res.handle);
  *out = f;
  return RDEV_OK;
}

/* The function of every binary of b's ring, a ring itself; *out is b's. */
static int function(rdev_binary_t *b, const char *name, uint64_t entry, int quiet, rdev_function_t **out) {
  if (!b || !out) return cl_error(RDEV_INVALID_PARAM, "binary or out is NULL");
  *out = NULL;
  int rc = RDEV_OK, rc_gone = RDEV_OK;
  rdev_binary_t *n = b;
  do {
    rdev_function_t *f = NULL;
    int r = function_one(n, name, entry, quiet, &f);
    if (r == RDEV_UNAVAILABLE && b->sib != b && cl_poll_dead(n->s, NULL, 0)) {
      rc_gone = r; /* a server gone (a session over several): no launch comes there */
    } else if (r) {
      rc = r;
    } else if (*out) {
      f->sib = (*out)->sib; /* into the ring (freed with its binary) */
      (*out)->sib = f;
    } else {
      *out = f;
    }
    n = n->sib;
  } while (!rc && n != b);
  if (!rc && !*out) rc = rc_gone; /* every server is gone */
  if (rc) *out = NULL;            /* those made stay with their binaries */
  return rc;
}

void cl_binary_link(rdev_binary_t *first, rdev_binary_t *b, rdev_function_t *ff, rdev_function_t *f) {
  b->sib = first->sib;
  first->sib = b;
  if (ff && f) {
    f->sib = ff->sib;
    ff->sib = f;
  }
}

int rdev_binary_function(rdev_binary_t *b, const char *name, rdev_function_t **f) {
  if (!name) return cl_error(RDEV_INVALID_PARAM, "name is NULL");
  return function(b, name, 0, 0, f);
}

int rdev_binary_function_by_entry(rdev_binary_t *b, uint64_t entry, rdev_function_t **f) {
  return function(b, NULL, entry, 0, f);
}

int rdev_binary_function_async(rdev_binary_t *b, const char *name, uint64_t entry, rdev_function_t **f) {
  return function(b, name, entry, 1, f);
}

int cl_binary_load_function(rdev_session_t *s, const void *data, size_t len, const char *name, uint64_t entry,
                            rdev_binary_t **bout, rdev_function_t **fout) {
  if (!s || !data || !bout || !fout) return cl_error(RDEV_INVALID_PARAM, "session, data, b or f is NULL");
  *bout = NULL;
  *fout = NULL;
  /* both named by the client and quiet: the server keeps a refusal under
   * the function's handle, for the launches that name it */
  uint64_t bh = cl_handle_new(s), fh = cl_handle_new(s);
  rdev_v1_Request lq = rdev_v1_Request_init_zero, fq;
  lq.which_op = rdev_v1_Request_binary_load_tag;
  lq.op.binary_load.handle = bh;
  lq.op.binary_load.quiet = true;
  int rc = check_binary(data, len);
  if (!rc) rc = function_request(bh, name, entry, &fq);
  if (rc) return rc;
  fq.op.binary_function.handle = fh;
  fq.op.binary_function.quiet = true;
  rdev_binary_t *b = calloc(1, sizeof *b);
  struct rdev_function *f = calloc(1, sizeof *f);
  if (!b || !f) {
    free(b);
    free(f);
    return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  }
  if ((rc = cl_send_async_with(s, &lq, data, len))) {
    free(b);
    free(f);
    return rc;
  }
  binary_enter(s, b, bh); /* loaded: the session's end unloads it, whatever follows */
  if ((rc = cl_send_async(s, &fq))) {
    free(f);
    return rc;
  }
  function_enter(b, f, fh);
  *bout = b;
  *fout = f;
  return RDEV_OK;
}

int rdev_launch_function(rdev_stream_t *stream, rdev_function_t *f, uint32_t blocks, const void *args, size_t len) {
  rdev_session_t *s = cl_stream_session(stream);
  uint64_t h;
  int rc = cl_stream_handle(s, stream, &h);
  if (rc) return rc;
  for (rdev_function_t *g = f; f && f->bin->s != s && (f = f->sib) != g;) {} /* the stream's server's */
  if (!f || f->bin->s != s) return cl_error(RDEV_INVALID_PARAM, "function is NULL or another session's");
  if ((!args && len) || len > RDEV_WIRE_MAX_CHUNK)
    return cl_error(RDEV_INVALID_PARAM, "arguments of %zu bytes: at most %u", len, RDEV_WIRE_MAX_CHUNK);
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_launch_function_tag;
  req.op.launch_function = (rdev_v1_LaunchFunction){h, f->handle, blocks};
  return cl_stream_sent(stream, cl_send_async_with(s, &req, args ? args : "", len));
}

void cl_free_binaries(rdev_session_t *s) {
  while (s->bins) {
    rdev_binary_t *n = s->bins->next;
    free_functions(s->bins);
    free(s->bins);
    s->bins = n;
  }
}
