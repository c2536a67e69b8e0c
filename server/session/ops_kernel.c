/*
 * server/session/ops_kernel.c — the kernel requests: launches of built-in kernels
 * by name (Launch) and of functions of kernel binaries (BinaryLoad,
 * BinaryFunction, BinaryUnload, LaunchFunction), every device pointer of
 * either checked against the session's own allocations before the
 * runtime checks its reach, and the kernels' print output held for the
 * session's next reply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* Kernel print output is held for the session's next reply (send_reply);
 * when it would not fit, what is held goes out now as a PRINT reply. */
static bool hold_text(srv_session_t *s, const char *text, size_t len) {
  pthread_mutex_lock(&s->mu);
  bool ok = s->held_len + len <= HOLD_MAX;
  if (ok && s->held_len + len > s->held_cap) {
    size_t cap = s->held_cap ? s->held_cap : 256;
    while (cap < s->held_len + len) cap *= 2;
    if (cap > HOLD_MAX) cap = HOLD_MAX;
    char *p = realloc(s->held, cap);
    if (p)
      s->held = p, s->held_cap = cap;
    else
      ok = false;
  }
  if (ok) {
    memcpy(s->held + s->held_len, text, len);
    rdev_wire_utf8_fix(s->held + s->held_len, len); /* Reply.print is a string */
    s->held_len += len;
  }
  pthread_mutex_unlock(&s->mu);
  return ok;
}

static void print_cb(void *user, const char *text, size_t len) {
  cb_ctx_t *c = user;
  if (len && !hold_text(c->s, text, len)) {
    rdev_v1_Reply r = rdev_v1_Reply_init_zero;
    r.kind = rdev_v1_ReplyKind_PRINT;
    srv_send_reply(c->s, &r, NULL); /* flushes what was held */
    char *copy = hold_text(c->s, text, len) ? NULL : malloc(len);
    if (copy) { /* over HOLD_MAX alone (else out of memory: dropped) */
      memcpy(copy, text, len);
      rdev_wire_utf8_fix(copy, len);
      text_t t = {copy, len};
      r.print.funcs.encode = srv_encode_text;
      r.print.arg = &t;
      srv_send_reply(c->s, &r, NULL);
      free(copy);
    }
  }
  srv_cb_done(c);
}

/* Launches kernel `name` with typed args on st, its print output held for
 * the session's next reply: the built-in kernel, or function f of a
 * binary with its argument blob (args decoded from it). Every pointer
 * argument must lie inside one of the session's allocations (the runtime
 * then checks its reach against that allocation): another session's, a
 * freed one's, or any other address is refused, naming the argument. The
 * pointers, in args and in the blob, become the device addresses behind
 * them. */
static int launch(srv_req_t *x, rdev_rt_stream_t *st, const char *name, const rdev_kernel_sig_t *sig, uint32_t blocks,
                  rdev_kernel_arg_t *args, int nargs, const rdev_rt_function_t *f, unsigned char *blob, size_t len) {
  for (int i = 0; i < nargs; i++) {
    if (args[i].type != RDEV_ARG_PTR) continue;
    uint64_t a = (uint64_t)(uintptr_t)args[i].v.ptr.base;
    srv_handle_t *e = srv_buffer_at(x->s, a);
    if (e) {
      args[i].v.ptr.base = srv_buffer_dev(e, a);
      uint64_t dev = (uint64_t)(uintptr_t)args[i].v.ptr.base;
      if (f) memcpy(blob + rdev_rt_function_arg_offset(f, i), &dev, sizeof dev);
      continue;
    }
    int rc = srv_placement_refused(x, name, a, 0);
    if (rc) return rc;
    if (sig && i < sig->nparams)
      return srv_fail(x, RDEV_INVALID_PARAM, "%s: argument '%s' (0x%llx) is not inside an allocation of this session",
                      name, sig->params[i].name, (unsigned long long)a);
    return srv_fail(x, RDEV_INVALID_PARAM, "%s: argument %d (0x%llx) is not inside an allocation of this session", name,
                    i, (unsigned long long)a);
  }
  cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, NULL, 0);
  if (!c) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  int rc = f ? rdev_rt_launch_function(st, f, blocks, blob, len, print_cb, c)
             : rdev_rt_launch(st, sig ? sig->name : name, blocks, args, nargs, print_cb, c);
  if (rc) {
    srv_cb_done(c);
    return srv_rt_failed(x, rc);
  }
  return SRV_LATER;
}

int srv_op_launch(srv_req_t *x) {
  const rdev_v1_Launch *l = &x->q->op.launch;
  const rdev_wire_request_t *w = x->w;
  rdev_rt_stream_t *st = NULL;
  int rc = srv_get_stream(x, l->stream, &st);
  if (rc) return rc;
  if (w->kernel_len > RDEV_WIRE_MAX_KERNEL_NAME)
    return srv_fail(x, RDEV_UNKNOWN_KERNEL, "kernel name of %zu bytes exceeds the %d-byte limit", w->kernel_len,
                    RDEV_WIRE_MAX_KERNEL_NAME);
  if (w->kernel_nul) return srv_fail(x, RDEV_UNKNOWN_KERNEL, "kernel name holds a NUL byte");
  if (w->nargs > RDEV_WIRE_MAX_ARGS)
    return srv_fail(x, RDEV_KERNEL_ARGS, "%s: %d arguments exceed the limit of %d", w->kernel, w->nargs,
                    RDEV_WIRE_MAX_ARGS);
  rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS];
  const rdev_kernel_sig_t *sig = rdev_rt_kernel_find(w->kernel); /* names arguments in errors */
  _Static_assert(RDEV_WIRE_MAX_ARGS <= RDEV_RT_MAX_KERNEL_ARGS, "the wire allows more arguments than kernels take");
  for (int i = 0; i < w->nargs; i++) {
    const rdev_v1_Arg *a = &w->args[i];
    rdev_kernel_arg_t *k = &args[i];
    switch (a->which_v) {
      case rdev_v1_Arg_ptr_tag:
        k->type = RDEV_ARG_PTR; /* checked by launch() */
        k->v.ptr.base = (void *)(uintptr_t)a->v.ptr;
        k->v.ptr.offset = 0;
        break;
      case rdev_v1_Arg_i32_tag:
        k->type = RDEV_ARG_I32;
        k->v.i32 = a->v.i32;
        break;
      case rdev_v1_Arg_u32_tag:
        k->type = RDEV_ARG_U32;
        k->v.u32 = a->v.u32;
        break;
      case rdev_v1_Arg_i64_tag:
        k->type = RDEV_ARG_I64;
        k->v.i64 = a->v.i64;
        break;
      case rdev_v1_Arg_u64_tag:
        k->type = RDEV_ARG_U64;
        k->v.u64 = a->v.u64;
        break;
      case rdev_v1_Arg_f32_tag:
        k->type = RDEV_ARG_F32;
        k->v.f32 = a->v.f32;
        break;
      case rdev_v1_Arg_f64_tag:
        k->type = RDEV_ARG_F64;
        k->v.f64 = a->v.f64;
        break;
      default: return srv_fail(x, RDEV_KERNEL_ARGS, "%s: argument %d has no value", w->kernel, i);
    }
  }
  return launch(x, st, w->kernel, sig, l->blocks, args, w->nargs, NULL, NULL, 0);
}

/* ---- kernel binaries ---------------------------------------------------------- */

/* The request's payload in one piece (the caller frees it); NULL when out
 * of memory. */
static void *payload_copy(const rdev_wire_payload_t *p) {
  char *b = malloc(p->len ? p->len : 1), *at = b;
  if (!b) return NULL;
  for (int i = 0; i < p->nparts; at += GRPC_SLICE_LENGTH(p->parts[i]), i++)
    memcpy(at, GRPC_SLICE_START_PTR(p->parts[i]), GRPC_SLICE_LENGTH(p->parts[i]));
  return b;
}

/* What one session may hold: binaries cost the server memory no quota
 * counts. */
#define SESSION_BINS_MAX 64
#define SESSION_FUNCS_MAX 4096

static int count_entries(srv_session_t *s, int type) {
  int n = 0;
  for (size_t i = 0; i < s->handles.cap; i++) n += s->handles.slots[i].h > 1 && s->handles.slots[i].type == type;
  return n;
}

static int binary_load(srv_req_t *x) {
  if (!rdev_rt_kernels_confined(x->s->srv->rt) && !x->s->srv->cfg.allow_uploaded)
    return srv_fail(x, RDEV_PERMISSION_DENIED,
                    "this server takes no kernel binaries: on the %s backend a kernel can reach any session's device "
                    "memory (the operator may allow them: rdevd --allow-uploaded-kernels)",
                    rdev_rt_backend_name(x->s->srv->rt));
  uint64_t want = x->q->op.binary_load.handle; /* checked */
  if (count_entries(x->s, SRV_H_BIN) >= SESSION_BINS_MAX)
    return srv_fail(x, RDEV_QUOTA_EXCEEDED, "a session holds at most %d binaries", SESSION_BINS_MAX);
  void *data = payload_copy(x->data);
  if (!data) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  srv_bin_t *b = NULL;
  int rc = srv_bin_get(x->s->srv, x->s->tenant, data, x->data->len, &b);
  free(data);
  if (rc) return rc == RDEV_BAD_ALLOC ? srv_fail(x, rc, "out of server memory") : srv_rt_failed(x, rc);
  uint64_t h = srv_handle_enter(x->s, want, SRV_H_BIN, 0, b, 0, NULL);
  if (!h) {
    srv_bin_put(x->s->srv, b);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.handle = h;
  return RDEV_OK;
}

/* Runs create, a creation under the client's handle h (0: the server
 * picks one). A quiet one under the client's handle is not answered: its
 * refusal waits under the handle for the requests that name it. A handle
 * the client may not use is answered all the same. */
static int create_under(srv_req_t *x, uint64_t h, bool quiet, const char *what, int (*create)(srv_req_t *)) {
  int rc = srv_client_handle_check(x, h, what);
  if (rc) return rc;
  rc = create(x);
  if (!quiet || !h) return rc;
  return rc == RDEV_OK ? SRV_LATER : srv_refuse_quietly(x, h, rc);
}

int srv_op_binary_load(srv_req_t *x) {
  const rdev_v1_BinaryLoad *q = &x->q->op.binary_load;
  return create_under(x, q->handle, q->quiet, "binary load", binary_load);
}

static int binary_function(srv_req_t *x) {
  const rdev_v1_BinaryFunction *q = &x->q->op.binary_function;
  srv_handle_t *e = srv_get_handle(x, q->binary, SRV_H_BIN);
  if (!e) return srv_handle_missing(x, q->binary, "binary", 0);
  const rdev_rt_function_t *f = NULL;
  int rc = q->by_entry ? rdev_rt_binary_function_by_entry(srv_bin_rt(e->ptr), q->entry, &f)
                       : rdev_rt_binary_function(srv_bin_rt(e->ptr), q->name, &f);
  if (rc) return srv_rt_failed(x, rc);
  if (count_entries(x->s, SRV_H_FUNC) >= SESSION_FUNCS_MAX)
    return srv_fail(x, RDEV_QUOTA_EXCEEDED, "a session holds at most %d kernel functions", SESSION_FUNCS_MAX);
  srv_bin_t *b = srv_bin_ref(x->s->srv, e->ptr); /* the function keeps its binary */
  /* size: the binary handle it was found through (its unload takes it) */
  uint64_t h = srv_handle_enter(x->s, q->handle, SRV_H_FUNC, 0, (void *)f, (size_t)q->binary, b);
  if (!h) {
    srv_bin_put(x->s->srv, b);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.handle = h;
  return RDEV_OK;
}

int srv_op_binary_function(srv_req_t *x) {
  const rdev_v1_BinaryFunction *q = &x->q->op.binary_function;
  return create_under(x, q->handle, q->quiet, "binary function", binary_function);
}

void srv_release_kernel_entry(srv_session_t *s, srv_handle_t *e) {
  srv_bin_put(s->srv, e->type == SRV_H_BIN ? e->ptr : e->ext);
}

typedef struct {
  srv_session_t *s;
  uint64_t bin; /* the handle unloaded */
} unload_t;

static void drop_function_of(srv_handle_t *e, void *arg) {
  unload_t *u = arg;
  if ((uint64_t)e->size != u->bin) return; /* another handle's, maybe of the same bytes */
  srv_release_kernel_entry(u->s, e);
  srv_handles_del(&u->s->handles, e->h);
}

/* aclrtBinaryUnLoad: its functions go with it; launches already queued
 * run (they hold what they need). */
int srv_op_binary_unload(srv_req_t *x) {
  uint64_t h = x->q->op.binary_unload.binary;
  srv_handle_t *e = srv_get_handle(x, h, SRV_H_BIN);
  if (!e) return srv_handle_missing(x, h, "binary", 1); /* a refused load: nothing to unload */
  unload_t u = {x->s, h};
  srv_handles_each(&x->s->handles, SRV_H_FUNC, drop_function_of, &u);
  srv_release_kernel_entry(x->s, e);
  srv_handles_del(&x->s->handles, h);
  return RDEV_OK;
}

int srv_op_launch_function(srv_req_t *x) {
  const rdev_v1_LaunchFunction *l = &x->q->op.launch_function;
  rdev_rt_stream_t *st = NULL;
  int rc = srv_get_stream(x, l->stream, &st);
  if (rc) return rc;
  srv_handle_t *e = srv_get_handle(x, l->function, SRV_H_FUNC);
  if (!e) return srv_handle_missing(x, l->function, "kernel function", 0);
  const rdev_rt_function_t *f = e->ptr;
  unsigned char *blob = payload_copy(x->data);
  if (!blob) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS];
  int n = 0;
  rc = rdev_rt_function_args(f, blob, x->data->len, args, &n);
  if (!rc)
    rc = launch(x, st, rdev_rt_function_name(f), rdev_rt_function_sig(f), l->blocks, args, n, f, blob, x->data->len);
  else
    rc = srv_rt_failed(x, rc);
  free(blob);
  return rc;
}

/* ---- operators ------------------------------------------------------------------ */

/* OpRun: the call is decoded and checked (rdev_op_decode), every tensor's
 * first byte must lie in one of the session's allocations (the runtime
 * then checks the tensor's whole reach against that allocation), and the
 * runtime queues it. */
int srv_op_op_run(srv_req_t *x) {
  rdev_rt_stream_t *st = NULL;
  int rc = srv_get_stream(x, x->q->op.op_run.stream, &st);
  if (rc) return rc;
  if (x->data->len > RDEV_OP_MAX_BLOB)
    return srv_fail(x, RDEV_INVALID_PARAM, "an operator call of %zu bytes exceeds %d", x->data->len, RDEV_OP_MAX_BLOB);
  void *blob = payload_copy(x->data);
  if (!blob) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  rdev_op_call_t *c;
  char msg[256];
  rc = rdev_op_decode(blob, x->data->len, &c, msg, sizeof msg);
  free(blob);
  if (rc) return srv_fail(x, rc, "%s", msg);
  const rdev_op_sig_t *sig = &rdev_op_table(NULL)[c->op];
  for (int i = 0; i < c->nargs; i++) {
    rdev_op_arg_t *a = &c->args[i];
    if (!a->present || (a->kind != RDEV_OPK_TENSOR && a->kind != RDEV_OPK_TENSOR_LIST)) continue;
    for (uint32_t k = 0; k < (a->kind == RDEV_OPK_TENSOR ? 1 : a->n); k++) {
      uint64_t lo, bytes, first;
      rdev_tensor_t *t = &a->v.t[k];
      srv_handle_t *e = srv_buffer_at(x->s, t->addr);
      if (rdev_tensor_reach(t, &lo, &bytes) == RDEV_OK &&
          (bytes == 0 || (!__builtin_add_overflow(t->addr, lo, &first) && e))) {
        if (e) t->addr = (uint64_t)(uintptr_t)srv_buffer_dev(e, t->addr); /* the device address behind it */
        continue;
      }
      char what[96];
      snprintf(what, sizeof what, "aclnn%s: %s", sig->name, sig->params[i].name);
      if (!(rc = srv_placement_refused(x, what, t->addr, 0)))
        rc = srv_fail(x, RDEV_INVALID_PARAM, "%s (0x%llx) is not inside an allocation of this session", what,
                      (unsigned long long)t->addr);
      free(c); /* after the message: t points into it */
      return rc;
    }
  }
  if ((rc = rdev_rt_op_launch(st, c))) return srv_rt_failed(x, rc); /* it freed c */
  return SRV_LATER;
}
