/*
 * runtime/binary.c — kernel binaries in the rdev sim binary format
 * (docs/sim-binary.md): parsing and checking a binary against the kernel
 * registry, its functions by name or entry, the argument blob of a launch
 * decoded by the function's declared layout, and their lifetime: a
 * binary lives while its loader or a queued launch of it holds it.
 *
 * A binary is text: a "rdev-sim-binary 1" line, then per kernel a
 * "kernel NAME SIM_KERNEL [entry=N]" line followed by its layout, one
 * "arg TYPE NAME [reach=EXPR] [writes]" line per argument in order, or
 * "noargs". The layout must be the registry kernel's signature, pointer
 * reach included, so that the bounds the runtime checks are the ones the
 * kernel body relies on. A kernel without a layout loads but cannot be
 * launched. The lines are read by rdev/sim_binary.h, which the ACL
 * library shares.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/sim_binary.h"
#include "rt_internal.h"

#define MAX_FUNCS 256

static const struct {
  const char *name;
  rdev_arg_type_t type;
  uint32_t size; /* also its alignment: AscendC host stubs align each field to it, at least 4 */
} arg_types[] = {{"ptr", RDEV_ARG_PTR, 8}, {"i32", RDEV_ARG_I32, 4}, {"u32", RDEV_ARG_U32, 4}, {"i64", RDEV_ARG_I64, 8},
                 {"u64", RDEV_ARG_U64, 8}, {"f32", RDEV_ARG_F32, 4}, {"f64", RDEV_ARG_F64, 8}};

static uint32_t type_size(rdev_arg_type_t t) {
  for (size_t i = 0; i < sizeof arg_types / sizeof arg_types[0]; i++)
    if (arg_types[i].type == t) return arg_types[i].size;
  return 0;
}

/* "blocks*N", "one*N" or "argI*N": the registry's extent kinds. */
static int parse_reach(const char *s, const rdev_kernel_param_t *want) {
  unsigned idx = 0, elem = 0;
  int used = 0;
  if (sscanf(s, "blocks*%u%n", &elem, &used) == 1 && !s[used])
    return want->extent == RDEV_EXTENT_BLOCKS && want->elem_size == elem;
  if (sscanf(s, "one*%u%n", &elem, &used) == 1 && !s[used])
    return want->extent == RDEV_EXTENT_ONE && want->elem_size == elem;
  if (sscanf(s, "arg%u*%u%n", &idx, &elem, &used) == 2 && !s[used])
    return want->extent == RDEV_EXTENT_ARG && want->count_arg == idx && want->elem_size == elem;
  return 0;
}

/* One "arg" line of function f (its index-th): checked against the
 * registry's parameter. */
static int parse_arg(rdev_rt_function_t *f, char **w, int n, int lineno) {
  int i = f->nargs;
  if (i >= f->sig->nparams)
    return rt_fail(RDEV_KERNEL_ARGS, "line %d: kernel %s (%s) takes %d arguments", lineno, f->name, f->sig->name,
                   f->sig->nparams);
  const rdev_kernel_param_t *p = &f->sig->params[i];
  rdev_arg_type_t t = 0;
  for (size_t k = 0; k < sizeof arg_types / sizeof arg_types[0]; k++)
    if (!strcmp(w[1], arg_types[k].name)) t = arg_types[k].type;
  if (!t) return rt_fail(RDEV_INVALID_PARAM, "line %d: unknown argument type '%.16s'", lineno, w[1]);
  if (t != p->type)
    return rt_fail(RDEV_KERNEL_ARGS, "line %d: kernel %s: argument %d is %s in %s, not %s", lineno, f->name, i,
                   rdev_arg_type_name(p->type), f->sig->name, rdev_arg_type_name(t));
  int reach_ok = t != RDEV_ARG_PTR, writes = 0;
  for (int k = 3; k < n; k++) {
    if (!strncmp(w[k], "reach=", 6) && t == RDEV_ARG_PTR)
      reach_ok = parse_reach(w[k] + 6, p);
    else if (!strcmp(w[k], "writes") && t == RDEV_ARG_PTR)
      writes = 1;
    else
      return rt_fail(RDEV_INVALID_PARAM, "line %d: unknown word '%.32s'", lineno, w[k]);
  }
  if (!reach_ok || writes != (t == RDEV_ARG_PTR && p->writes))
    return rt_fail(RDEV_KERNEL_ARGS, "line %d: kernel %s: argument %d's reach or writes is not %s's", lineno, f->name,
                   i, f->sig->name);
  uint32_t size = type_size(t);
  size_t off = (f->blob_size + size - 1) / size * size;
  f->offset[i] = (uint32_t)off;
  f->blob_size = off + size;
  f->nargs++;
  return RDEV_OK;
}

static int parse_kernel(rdev_rt_binary_t *b, char **w, int n, int lineno) {
  if (b->nfuncs == MAX_FUNCS) return rt_fail(RDEV_INVALID_PARAM, "more than %d kernels", MAX_FUNCS);
  if (n < 3 || n > 4) return rt_fail(RDEV_INVALID_PARAM, "line %d: kernel NAME SIM_KERNEL [entry=N]", lineno);
  rdev_rt_function_t *f = &b->funcs[b->nfuncs];
  memset(f, 0, sizeof *f);
  f->bin = b;
  if (strlen(w[1]) > RDEV_RT_MAX_KERNEL_NAME)
    return rt_fail(RDEV_INVALID_PARAM, "line %d: kernel name of more than %d bytes", lineno, RDEV_RT_MAX_KERNEL_NAME);
  strcpy(f->name, w[1]);
  if (!(f->sig = rdev_rt_kernel_find(w[2])))
    return rt_fail(RDEV_UNKNOWN_KERNEL, "line %d: no sim kernel '%.64s'", lineno, w[2]);
  f->entry = (uint64_t)b->nfuncs;
  if (n == 4 && rdev_sim_binary_entry(w[3], &f->entry))
    return rt_fail(RDEV_INVALID_PARAM, "line %d: '%.32s' is not entry=N (decimal, or 0x hex)", lineno, w[3]);
  for (int i = 0; i < b->nfuncs; i++)
    if (!strcmp(b->funcs[i].name, f->name) || b->funcs[i].entry == f->entry)
      return rt_fail(RDEV_INVALID_PARAM, "line %d: kernel %s: its name or entry is another kernel's", lineno, f->name);
  b->nfuncs++;
  return RDEV_OK;
}

/* The last kernel's layout ended: complete, if it has one. */
static int end_kernel(rdev_rt_binary_t *b) {
  if (!b->nfuncs) return RDEV_OK;
  rdev_rt_function_t *f = &b->funcs[b->nfuncs - 1];
  if (f->has_layout && f->nargs != f->sig->nparams)
    return rt_fail(RDEV_KERNEL_ARGS, "kernel %s declares %d arguments, %s takes %d", f->name, f->nargs, f->sig->name,
                   f->sig->nparams);
  return RDEV_OK;
}

int rdev_rt_binary_load(rdev_rt_t *rt, const void *data, size_t len, rdev_rt_binary_t **out) {
  rt_clear_error();
  if (!rt || !data || !out) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  *out = NULL;
  if (len > RDEV_RT_MAX_BINARY) return rt_fail(RDEV_INVALID_PARAM, "a binary is at most %d bytes", RDEV_RT_MAX_BINARY);
  rdev_rt_binary_t *b = calloc(1, sizeof *b + MAX_FUNCS * sizeof b->funcs[0]);
  if (!b) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  b->rt = rt;
  rdev_sim_binary_reader_t r;
  rdev_sim_binary_reader_init(&r, data, len);
  int header = 0, rc = RDEV_OK, got;
  while (!rc && (got = rdev_sim_binary_next(&r)) != RDEV_SIM_BINARY_END) {
    char **w = r.w;
    int nw = r.nw, lineno = r.lineno;
    if (got == RDEV_SIM_BINARY_NOT_TEXT) {
      rc = rt_fail(RDEV_INVALID_PARAM, "line %d: not a line of text of at most %d bytes", lineno,
                   RDEV_SIM_BINARY_MAX_LINE);
    } else if (got == RDEV_SIM_BINARY_TOO_MANY) {
      rc = rt_fail(RDEV_INVALID_PARAM, "line %d: too many words", lineno);
    } else if (!header) {
      if (!rdev_sim_binary_is_header(&r))
        rc = rt_fail(RDEV_INVALID_PARAM, "not an rdev sim binary (it starts with no 'rdev-sim-binary 1' line)");
      header = 1;
    } else if (!strcmp(w[0], "kernel")) {
      if (!(rc = end_kernel(b))) rc = parse_kernel(b, w, nw, lineno);
    } else if (!b->nfuncs) {
      rc = rt_fail(RDEV_INVALID_PARAM, "line %d: '%.16s' before any kernel", lineno, w[0]);
    } else if (!strcmp(w[0], "noargs") && nw == 1 && !b->funcs[b->nfuncs - 1].has_layout) {
      b->funcs[b->nfuncs - 1].has_layout = 1;
    } else if (!strcmp(w[0], "arg") && nw >= 3) {
      rdev_rt_function_t *f = &b->funcs[b->nfuncs - 1];
      f->has_layout = 1;
      rc = parse_arg(f, w, nw, lineno);
    } else {
      rc = rt_fail(RDEV_INVALID_PARAM, "line %d: unknown line '%.16s'", lineno, w[0]);
    }
  }
  if (!rc && !header) rc = rt_fail(RDEV_INVALID_PARAM, "not an rdev sim binary (empty)");
  if (!rc) rc = end_kernel(b);
  if (!rc && !b->nfuncs) rc = rt_fail(RDEV_INVALID_PARAM, "the binary holds no kernel");
  if (rc) {
    free(b);
    return rc;
  }
  /* what it holds, no more: a small binary must cost the server little */
  rdev_rt_binary_t *fit = realloc(b, sizeof *b + (size_t)b->nfuncs * sizeof b->funcs[0]);
  if (fit) b = fit;
  for (int i = 0; i < b->nfuncs; i++) b->funcs[i].bin = b;
  atomic_init(&b->refs, 1);
  if (rt->be->binary_load && (rc = rt->be->binary_load(rt->impl, b, data, len)) != RDEV_OK) {
    free(b);
    return rc;
  }
  *out = b;
  return RDEV_OK;
}

void rdev_rt_binary_unload(rdev_rt_binary_t *b) {
  if (b) rt_binary_unref(b);
}

int rdev_rt_launch_function(rdev_rt_stream_t *s, const rdev_rt_function_t *f, uint32_t blocks, const void *blob,
                            size_t len, rdev_rt_print_fn print_fn, void *print_user) {
  rdev_kernel_arg_t args[RDEV_RT_MAX_KERNEL_ARGS];
  int n = 0;
  int rc = rdev_rt_function_args(f, blob, len, args, &n); /* clears the error detail */
  if (!rc) rc = rt_check_stream(f->bin->rt, s);
  if (rc) return rc;
  rt_function_hold(f); /* the task holds f's binary until it is done (engine.c) */
  rc = rt_launch(s, f->sig, f, blocks, args, n, print_fn, print_user);
  if (rc != RDEV_OK) rt_function_release(f);
  return rc;
}

int rdev_rt_binary_function(const rdev_rt_binary_t *b, const char *name, const rdev_rt_function_t **f) {
  rt_clear_error();
  if (!b || !name || !f) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  for (int i = 0; i < b->nfuncs; i++)
    if (!strcmp(b->funcs[i].name, name)) {
      *f = &b->funcs[i];
      return RDEV_OK;
    }
  return rt_fail(RDEV_UNKNOWN_KERNEL, "the binary has no kernel '%.64s'", name);
}

int rdev_rt_binary_function_by_entry(const rdev_rt_binary_t *b, uint64_t entry, const rdev_rt_function_t **f) {
  rt_clear_error();
  if (!b || !f) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  for (int i = 0; i < b->nfuncs; i++)
    if (b->funcs[i].entry == entry) {
      *f = &b->funcs[i];
      return RDEV_OK;
    }
  return rt_fail(RDEV_UNKNOWN_KERNEL, "the binary has no kernel of entry %" PRIu64, entry);
}

const char *rdev_rt_function_name(const rdev_rt_function_t *f) { return f->name; }

const rdev_kernel_sig_t *rdev_rt_function_sig(const rdev_rt_function_t *f) { return f->sig; }

size_t rdev_rt_function_arg_offset(const rdev_rt_function_t *f, int i) { return f->offset[i]; }

int rdev_rt_function_args(const rdev_rt_function_t *f, const void *blob, size_t len, rdev_kernel_arg_t *args,
                          int *nargs) {
  rt_clear_error();
  if (!f || (!blob && len) || !args || !nargs) return rt_fail(RDEV_INVALID_PARAM, "NULL argument");
  if (!f->has_layout)
    return rt_fail(RDEV_KERNEL_ARGS, "kernel %s: its binary declares no argument layout: the sim cannot launch it",
                   f->name);
  if (len < f->blob_size)
    return rt_fail(RDEV_KERNEL_ARGS, "kernel %s: %zu bytes of arguments, its layout spans %zu", f->name, len,
                   f->blob_size);
  const unsigned char *bytes = blob;
  for (int i = 0; i < f->nargs; i++) {
    rdev_kernel_arg_t *a = &args[i];
    memset(a, 0, sizeof *a);
    a->type = f->sig->params[i].type;
    const unsigned char *v = bytes + f->offset[i];
    switch (a->type) {
      case RDEV_ARG_PTR: {
        uint64_t addr;
        memcpy(&addr, v, 8);
        a->v.ptr.base = (void *)(uintptr_t)addr;
        break;
      }
      case RDEV_ARG_I32: memcpy(&a->v.i32, v, 4); break;
      case RDEV_ARG_U32: memcpy(&a->v.u32, v, 4); break;
      case RDEV_ARG_I64: memcpy(&a->v.i64, v, 8); break;
      case RDEV_ARG_U64: memcpy(&a->v.u64, v, 8); break;
      case RDEV_ARG_F32: memcpy(&a->v.f32, v, 4); break;
      case RDEV_ARG_F64: memcpy(&a->v.f64, v, 8); break;
    }
  }
  *nargs = f->nargs;
  return RDEV_OK;
}

size_t rt_blob_pack(const rdev_kernel_arg_t *args, int nargs, unsigned char *blob) {
  size_t len = 0;
  for (int i = 0; i < nargs; i++) {
    const rdev_kernel_arg_t *a = &args[i];
    size_t size = type_size(a->type);
    len = (len + size - 1) / size * size; /* the layout rule parse_arg applies */
    switch (a->type) {
      case RDEV_ARG_PTR: {
        uint64_t v = (uint64_t)(uintptr_t)a->v.ptr.base + a->v.ptr.offset;
        memcpy(blob + len, &v, 8);
        break;
      }
      case RDEV_ARG_I32: memcpy(blob + len, &a->v.i32, 4); break;
      case RDEV_ARG_U32: memcpy(blob + len, &a->v.u32, 4); break;
      case RDEV_ARG_I64: memcpy(blob + len, &a->v.i64, 8); break;
      case RDEV_ARG_U64: memcpy(blob + len, &a->v.u64, 8); break;
      case RDEV_ARG_F32: memcpy(blob + len, &a->v.f32, 4); break;
      case RDEV_ARG_F64: memcpy(blob + len, &a->v.f64, 8); break;
    }
    len += size;
  }
  return len;
}
