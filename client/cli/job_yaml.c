/*
 * client/cli/job_yaml.c — the job spec reader: YAML (JSON is a subset of
 * it) into an rdev.v1.JobSpec. yaml_tree.c loads the document into a tree;
 * here it is read against the spec's schema, a reader per section, with
 * yaml_value.c reading each value: every key known, every value of its
 * type and within job.proto's limits, every buffer named declared. Each
 * error names the line and column of the value at fault.
 *
 *   name: square-256M
 *   buffers: [{name: x, size: 256MiB, device: 0}]
 *   inputs:  [{buffer: x, url: "http://h/x", sha256: HEX, offset: 0, max_bytes: 1M}]
 *   steps:
 *     - {launch: KERNEL, blocks: 64, args: [x, {buffer: y, offset: 8}, {u64: 5}, 7], stream: 0, name: s}
 *     - {copy: {dst: y, src: {buffer: x, offset: 64}, count: 1024}}
 *     - {memset: {dst: y, value: 0, count: 100}}
 *   outputs: [{name: r, buffer: y, offset: 0, size: 4K, url: "http://h/r", method: PUT}]
 *   callback_url: "http://h/hook"
 *   timeout: 10m
 *   retries: 3
 */
#include "job_yaml.h"

#include <float.h>
#include <math.h>
#include <pb_decode.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "yaml_tree.h"

#define MAX_STREAM 7 /* a step's stream */

/* "base.key" into buf. */
static const char *at(char *buf, size_t size, const char *base, const char *key) {
  snprintf(buf, size, "%.40s.%.20s", base, key); /* a path is some 30 bytes at most */
  return buf;
}

static int find_buffer(const rdev_v1_JobSpec *s, const char *name) {
  for (int i = 0; i < (int)s->buffers_count; i++)
    if (!strcmp(s->buffers[i].name, name)) return i;
  return -1;
}

/* The buffer named by scalar n into dst; its index into *bi. */
static int get_buffer_name(ctx_t *c, const node_t *n, const char *where, char dst[MAX_NAME + 1], int *bi) {
  if (yt_get_name(c, n, where, dst)) return -1;
  *bi = find_buffer(c->spec, dst);
  if (*bi < 0) {
    char known[256] = "";
    for (pb_size_t i = 0; i < c->spec->buffers_count; i++)
      snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", c->spec->buffers[i].name);
    return errn(c, n, where, "no buffer named \"%s\" (buffers: %s)", dst, *known ? known : "none");
  }
  return 0;
}

/* That [offset, offset+count) lies in buffer bi (count 0: just offset). */
static int check_range(ctx_t *c, const node_t *n, const char *where, int bi, uint64_t offset, uint64_t count,
                       const char *what) {
  const rdev_v1_JobBuffer *b = &c->spec->buffers[bi];
  if (offset > b->size)
    return errn(c, n, where, "offset %llu is past the end of buffer %s (%llu bytes)", (unsigned long long)offset,
                b->name, (unsigned long long)b->size);
  if (count > b->size - offset)
    return errn(c, n, where, "offset %llu + %s %llu runs past the end of buffer %s (%llu bytes)",
                (unsigned long long)offset, what, (unsigned long long)count, b->name, (unsigned long long)b->size);
  return 0;
}

/* A buffer reference: NAME (offset 0) or {buffer: NAME, offset: N}. */
static int get_ref(ctx_t *c, const node_t *n, const char *where, rdev_v1_JobRef *r, int *bi) {
  char w[128];
  if (n->kind == N_SCALAR) {
    r->offset = 0;
    return get_buffer_name(c, n, where, r->buffer, bi);
  }
  if (n->kind != N_MAP) return errn(c, n, where, "must be a buffer name or {buffer: NAME, offset: N}, not a list");
  static const char *const keys[] = {"buffer", "offset"};
  const node_t *v[2];
  if (yt_fields(c, n, where, keys, 2, v)) return -1;
  if (!v[0]) return errn(c, n, where, "missing buffer");
  if (get_buffer_name(c, v[0], at(w, sizeof w, where, "buffer"), r->buffer, bi)) return -1;
  r->offset = 0;
  if (v[1] && yt_get_size(c, v[1], at(w, sizeof w, where, "offset"), &r->offset)) return -1;
  return check_range(c, v[1] ? v[1] : n, where, *bi, r->offset, 0, "count");
}

static int read_buffers(ctx_t *c, const node_t *list) {
  static const char *const keys[] = {"name", "size", "device"};
  if (yt_list_of(c, list, "buffers", ARRAY_LEN(c->spec->buffers))) return -1;
  for (size_t i = 0; i < list->n; i++) {
    const node_t *m = list->kid[i], *v[3];
    char where[32], w[64];
    snprintf(where, sizeof where, "buffers[%zu]", i);
    if (yt_fields(c, m, where, keys, 3, v)) return -1;
    rdev_v1_JobBuffer *b = &c->spec->buffers[c->spec->buffers_count];
    if (!v[0]) return errn(c, m, where, "missing name");
    if (yt_get_name(c, v[0], at(w, sizeof w, where, "name"), b->name)) return -1;
    int dup = find_buffer(c->spec, b->name);
    if (dup >= 0) return errn(c, v[0], w, "duplicate buffer name \"%s\" (first at line %d)", b->name, c->buf_line[dup]);
    if (!v[1]) return errn(c, m, where, "missing size");
    if (yt_get_size(c, v[1], at(w, sizeof w, where, "size"), &b->size)) return -1;
    if (!b->size) return errn(c, v[1], w, "a buffer's size must be more than 0");
    int64_t dev = 0;
    if (v[2] && yt_get_i64(c, v[2], at(w, sizeof w, where, "device"), 0, INT32_MAX, &dev)) return -1;
    b->device = (int32_t)dev;
    c->buf_line[c->spec->buffers_count++] = v[0]->line;
  }
  return 0;
}

static int read_binaries(ctx_t *c, const node_t *list) {
  static const char *const keys[] = {"name", "url", "sha256"};
  if (yt_list_of(c, list, "binaries", ARRAY_LEN(c->spec->binaries))) return -1;
  for (size_t i = 0; i < list->n; i++) {
    const node_t *m = list->kid[i], *v[3];
    char where[32], w[64];
    snprintf(where, sizeof where, "binaries[%zu]", i);
    if (yt_fields(c, m, where, keys, 3, v)) return -1;
    rdev_v1_JobBinary *b = &c->spec->binaries[c->spec->binaries_count++]; /* counted: pb_release frees its URL */
    if (!v[0]) return errn(c, m, where, "missing name");
    if (yt_get_name(c, v[0], at(w, sizeof w, where, "name"), b->name)) return -1;
    for (pb_size_t k = 0; k + 1 < c->spec->binaries_count; k++)
      if (!strcmp(c->spec->binaries[k].name, b->name)) return errn(c, v[0], w, "duplicate binary name \"%s\"", b->name);
    if (!v[1]) return errn(c, m, where, "missing url");
    if (yt_get_url(c, v[1], at(w, sizeof w, where, "url"), &b->url)) return -1;
    if (v[2] && yt_get_sha256(c, v[2], at(w, sizeof w, where, "sha256"), b->sha256)) return -1;
  }
  return 0;
}

static int read_inputs(ctx_t *c, const node_t *list) {
  static const char *const keys[] = {"buffer", "url", "sha256", "offset", "max_bytes"};
  if (yt_list_of(c, list, "inputs", ARRAY_LEN(c->spec->inputs))) return -1;
  for (size_t i = 0; i < list->n; i++) {
    const node_t *m = list->kid[i], *v[5];
    char where[32], w[64];
    snprintf(where, sizeof where, "inputs[%zu]", i);
    if (yt_fields(c, m, where, keys, 5, v)) return -1;
    /* Counted before its URL is set: pb_release frees what is counted. */
    rdev_v1_JobInput *in = &c->spec->inputs[c->spec->inputs_count++];
    int bi;
    if (!v[0]) return errn(c, m, where, "missing buffer");
    if (get_buffer_name(c, v[0], at(w, sizeof w, where, "buffer"), in->buffer, &bi)) return -1;
    if (!v[1]) return errn(c, m, where, "missing url");
    if (yt_get_url(c, v[1], at(w, sizeof w, where, "url"), &in->url)) return -1;
    if (v[2] && yt_get_sha256(c, v[2], at(w, sizeof w, where, "sha256"), in->sha256)) return -1;
    if (v[3] && yt_get_size(c, v[3], at(w, sizeof w, where, "offset"), &in->offset)) return -1;
    if (v[4] && yt_get_size(c, v[4], at(w, sizeof w, where, "max_bytes"), &in->max_bytes)) return -1;
    if (check_range(c, v[4] ? v[4] : v[3] ? v[3] : m, where, bi, in->offset, in->max_bytes, "max_bytes")) return -1;
  }
  return 0;
}

static const char *const arg_types[] = {"i32", "u32", "i64", "u64", "f32", "f64"};

/* The signature of kernel name in the server's Info, or NULL. */
static const rdev_v1_KernelInfo *find_kernel(const ctx_t *c, const char *name) {
  if (!c->kernels) return NULL;
  for (pb_size_t i = 0; i < c->kernels->kernels_count && i < ARRAY_LEN(c->kernels->kernels); i++)
    if (!strcmp(c->kernels->kernels[i].name, name)) return &c->kernels->kernels[i];
  return NULL;
}

/* A scalar number n as an argument of type (one of arg_types). */
static int typed_arg(ctx_t *c, const node_t *n, const char *where, const char *type, rdev_v1_JobArg *a) {
  int64_t i;
  uint64_t u;
  double d;
  if (!strcmp(type, "i32")) {
    if (yt_get_i64(c, n, where, INT32_MIN, INT32_MAX, &i)) return -1;
    a->which_v = rdev_v1_JobArg_i32_tag;
    a->v.i32 = (int32_t)i;
  } else if (!strcmp(type, "u32")) {
    if (yt_get_u64(c, n, where, UINT32_MAX, &u)) return -1;
    a->which_v = rdev_v1_JobArg_u32_tag;
    a->v.u32 = (uint32_t)u;
  } else if (!strcmp(type, "i64")) {
    if (yt_get_i64(c, n, where, INT64_MIN, INT64_MAX, &i)) return -1;
    a->which_v = rdev_v1_JobArg_i64_tag;
    a->v.i64 = i;
  } else if (!strcmp(type, "u64")) {
    if (yt_get_u64(c, n, where, UINT64_MAX, &u)) return -1;
    a->which_v = rdev_v1_JobArg_u64_tag;
    a->v.u64 = u;
  } else if (!strcmp(type, "f32")) {
    if (yt_get_f64(c, n, where, &d)) return -1;
    if (fabs(d) > FLT_MAX) return errn(c, n, where, "out of range for f32");
    a->which_v = rdev_v1_JobArg_f32_tag;
    a->v.f32 = (float)d;
  } else if (!strcmp(type, "f64")) {
    if (yt_get_f64(c, n, where, &d)) return -1;
    a->which_v = rdev_v1_JobArg_f64_tag;
    a->v.f64 = d;
  } else {
    return errn(c, n, where, "unknown argument type \"%s\"", type);
  }
  return 0;
}

/* Argument idx of kernel kname (signature sig, may be NULL). */
static int read_arg(ctx_t *c, const node_t *n, const char *where, const char *kname, const rdev_v1_KernelInfo *sig,
                    int idx, rdev_v1_JobArg *a) {
  const char *ptype = sig ? sig->params[idx].type : NULL;
  const char *pname = sig ? sig->params[idx].name : "";
  char q[48];
  int bi;
  if (n->kind == N_SCALAR && n->plain && yt_looks_numeric(n)) { /* a bare number: typed by the signature */
    if (!sig) {
      if (!c->kernels) {
        c->need_kernels = true;
        return errn(c, n, where,
                    "a bare number needs the kernel's signature from the server; or write it typed, e.g. {u64: %.40s}",
                    n->s);
      }
      return errn(c, n, where,
                  "kernel %s is not among the server's kernels: write the argument typed, e.g. {u64: %.40s}", kname,
                  n->s);
    }
    if (!strcmp(ptype, "ptr"))
      return errn(c, n, where, "argument %d (%s) of %s is a pointer: name a buffer, not %s", idx + 1, pname, kname,
                  yt_shown(n, q));
    return typed_arg(c, n, where, ptype, a);
  }
  if (n->kind == N_SEQ)
    return errn(c, n, where, "an argument is a buffer, {buffer: NAME, offset: N} or {TYPE: NUMBER}");
  bool ref = n->kind == N_SCALAR;
  for (size_t k = 0; !ref && k + 1 < n->n; k += 2)
    ref = n->kid[k]->kind == N_SCALAR && (yt_key_is(n->kid[k], "buffer") || yt_key_is(n->kid[k], "offset"));
  if (ref) {
    if (ptype && strcmp(ptype, "ptr"))
      return errn(c, n, where, "argument %d (%s) of %s is %s, not a buffer", idx + 1, pname, kname, ptype);
    a->which_v = rdev_v1_JobArg_ptr_tag;
    return get_ref(c, n, where, &a->v.ptr, &bi);
  }
  /* {TYPE: NUMBER} */
  if (n->n != 2 || n->kid[0]->kind != N_SCALAR)
    return errn(c, n, where,
                "an argument is a buffer, {buffer: NAME, offset: N}, or one of {i32|u32|i64|u64|f32|f64: NUMBER}");
  const node_t *k = n->kid[0];
  size_t t = 0;
  while (t < ARRAY_LEN(arg_types) && !yt_key_is(k, arg_types[t])) t++;
  if (t == ARRAY_LEN(arg_types))
    return errn(c, k, where, "unknown argument type %s (i32, u32, i64, u64, f32, f64; or buffer)", yt_shown(k, q));
  if (ptype && strcmp(ptype, arg_types[t]))
    return errn(c, k, where, "argument %d (%s) of %s is %s, not %s", idx + 1, pname, kname, ptype, arg_types[t]);
  if (yt_is_null(n->kid[1])) return errn(c, n->kid[1], where, "missing %s value", arg_types[t]);
  return typed_arg(c, n->kid[1], where, arg_types[t], a);
}

static int read_launch(ctx_t *c, const node_t *m, const node_t *kernel, const node_t *blocks, const node_t *args,
                       const char *where, rdev_v1_JobLaunch *l) {
  char w[64];
  at(w, sizeof w, where, "launch");
  if (kernel->kind != N_SCALAR)
    return errn(c, kernel, w, "launch names the kernel: {launch: KERNEL, blocks: N, args: [...]}");
  if (yt_get_text(c, kernel, w, l->kernel, sizeof l->kernel)) return -1;
  if (!l->kernel[0]) return errn(c, kernel, w, "no kernel name");
  uint64_t b;
  if (!blocks) return errn(c, m, where, "missing blocks (of the launch)");
  if (yt_get_u64(c, blocks, at(w, sizeof w, where, "blocks"), UINT32_MAX, &b)) return -1;
  if (!b) return errn(c, blocks, w, "blocks must be at least 1");
  l->blocks = (uint32_t)b;
  const rdev_v1_KernelInfo *sig = find_kernel(c, l->kernel);
  size_t nargs = 0;
  if (args) {
    if (yt_list_of(c, args, at(w, sizeof w, where, "args"), ARRAY_LEN(l->args))) return -1;
    nargs = args->n;
  }
  if (sig && nargs != sig->params_count) {
    char params[256] = "";
    for (pb_size_t i = 0; i < sig->params_count && i < ARRAY_LEN(sig->params); i++)
      snprintf(params + strlen(params), sizeof params - strlen(params), "%s%s %s", i ? ", " : "", sig->params[i].type,
               sig->params[i].name);
    return errn(c, args ? args : m, where, "kernel %s takes %u arguments (%s); %zu given", l->kernel,
                (unsigned)sig->params_count, params, nargs);
  }
  for (size_t i = 0; i < nargs; i++) {
    char wa[80];
    snprintf(wa, sizeof wa, "%s.args[%zu]", where, i);
    if (read_arg(c, args->kid[i], wa, l->kernel, sig, (int)i, &l->args[i])) return -1;
    l->args_count++;
  }
  return 0;
}

/* {function: NAME, binary: B, blocks: N, args: [...]}: arguments typed,
 * since only the binary (on the server) knows its layout. */
static int read_function(ctx_t *c, const node_t *m, const node_t *name, const node_t *binary, const node_t *blocks,
                         const node_t *args, const char *where, rdev_v1_JobFunction *f) {
  char w[64];
  at(w, sizeof w, where, "function");
  if (name->kind != N_SCALAR)
    return errn(c, name, w, "function names the binary's kernel: {function: NAME, binary: B, blocks: N, args: [...]}");
  if (yt_get_text(c, name, w, f->name, sizeof f->name)) return -1;
  if (!f->name[0]) return errn(c, name, w, "no function name");
  if (!binary) return errn(c, m, where, "missing binary (of the function)");
  if (yt_get_text(c, binary, at(w, sizeof w, where, "binary"), f->binary, sizeof f->binary)) return -1;
  pb_size_t k = 0;
  while (k < c->spec->binaries_count && strcmp(c->spec->binaries[k].name, f->binary)) k++;
  if (k == c->spec->binaries_count) return errn(c, binary, w, "no binary \"%s\" (binaries: come first)", f->binary);
  uint64_t b;
  if (!blocks) return errn(c, m, where, "missing blocks (of the function)");
  if (yt_get_u64(c, blocks, at(w, sizeof w, where, "blocks"), UINT32_MAX, &b)) return -1;
  if (!b) return errn(c, blocks, w, "blocks must be at least 1");
  f->blocks = (uint32_t)b;
  size_t nargs = 0;
  if (args) {
    if (yt_list_of(c, args, at(w, sizeof w, where, "args"), ARRAY_LEN(f->args))) return -1;
    nargs = args->n;
  }
  for (size_t i = 0; i < nargs; i++) {
    char wa[80];
    snprintf(wa, sizeof wa, "%s.args[%zu]", where, i);
    const node_t *n = args->kid[i];
    if (n->kind == N_SCALAR && n->plain && yt_looks_numeric(n))
      return errn(c, n, wa, "a function's arguments are written typed, e.g. {i32: %.40s}", n->s);
    if (read_arg(c, n, wa, f->name, NULL, (int)i, &f->args[i])) return -1;
    f->args_count++;
  }
  return 0;
}

static int read_copy(ctx_t *c, const node_t *n, const char *where, rdev_v1_JobCopy *cp) {
  static const char *const keys[] = {"dst", "src", "count"};
  const node_t *v[3];
  char w[64];
  int dbi, sbi;
  if (yt_fields(c, n, where, keys, 3, v)) return -1;
  if (!v[0]) return errn(c, n, where, "missing dst");
  if (!v[1]) return errn(c, n, where, "missing src");
  if (get_ref(c, v[0], at(w, sizeof w, where, "dst"), &cp->dst, &dbi)) return -1;
  if (get_ref(c, v[1], at(w, sizeof w, where, "src"), &cp->src, &sbi)) return -1;
  cp->has_dst = cp->has_src = true;
  if (v[2] && yt_get_size(c, v[2], at(w, sizeof w, where, "count"), &cp->count)) return -1;
  if (check_range(c, v[2] ? v[2] : v[0], where, dbi, cp->dst.offset, cp->count, "count")) return -1;
  return check_range(c, v[2] ? v[2] : v[1], where, sbi, cp->src.offset, cp->count, "count");
}

static int read_memset(ctx_t *c, const node_t *n, const char *where, rdev_v1_JobMemset *ms) {
  static const char *const keys[] = {"dst", "value", "count"};
  const node_t *v[3];
  char w[64];
  int bi;
  if (yt_fields(c, n, where, keys, 3, v)) return -1;
  if (!v[0]) return errn(c, n, where, "missing dst");
  if (get_ref(c, v[0], at(w, sizeof w, where, "dst"), &ms->dst, &bi)) return -1;
  ms->has_dst = true;
  int64_t value = 0;
  if (v[1] && yt_get_i64(c, v[1], at(w, sizeof w, where, "value"), 0, 255, &value)) return -1;
  ms->value = (int32_t)value;
  if (v[2] && yt_get_size(c, v[2], at(w, sizeof w, where, "count"), &ms->count)) return -1;
  return check_range(c, v[2] ? v[2] : v[0], where, bi, ms->dst.offset, ms->count, "count");
}

static int read_steps(ctx_t *c, const node_t *list) {
  enum { K_NAME, K_STREAM, K_LAUNCH, K_BLOCKS, K_ARGS, K_COPY, K_MEMSET, K_FUNCTION, K_BINARY, K_N };
  static const char *const keys[] = {"name", "stream", "launch",   "blocks", "args",
                                     "copy", "memset", "function", "binary"};
  if (yt_list_of(c, list, "steps", ARRAY_LEN(c->spec->steps))) return -1;
  for (size_t i = 0; i < list->n; i++) {
    const node_t *m = list->kid[i], *v[K_N];
    char where[32], w[64];
    snprintf(where, sizeof where, "steps[%zu]", i);
    if (yt_fields(c, m, where, keys, K_N, v)) return -1;
    rdev_v1_JobStep *st = &c->spec->steps[c->spec->steps_count++];
    if (v[K_NAME] && yt_get_name(c, v[K_NAME], at(w, sizeof w, where, "name"), st->name)) return -1;
    uint64_t stream = 0;
    if (v[K_STREAM] && yt_get_u64(c, v[K_STREAM], at(w, sizeof w, where, "stream"), MAX_STREAM, &stream)) return -1;
    st->stream = (uint32_t)stream;
    int nops = !!v[K_LAUNCH] + !!v[K_COPY] + !!v[K_MEMSET] + !!v[K_FUNCTION];
    if (nops == 0) return errn(c, m, where, "a step needs one of launch, function, copy or memset");
    if (nops > 1) {
      char has[64] = "";
      const int ops[] = {K_LAUNCH, K_FUNCTION, K_COPY, K_MEMSET};
      for (int k = 0, seen = 0; k < 4; k++)
        if (v[ops[k]])
          snprintf(has + strlen(has), sizeof has - strlen(has), "%s%s", seen++ ? " and " : "", keys[ops[k]]);
      return errn(c, m, where, "a step is one of launch, function, copy or memset; this one has %s", has);
    }
    if (!v[K_LAUNCH] && !v[K_FUNCTION] && (v[K_BLOCKS] || v[K_ARGS]))
      return errn(c, v[K_BLOCKS] ? v[K_BLOCKS] : v[K_ARGS], where, "%s belongs to a launch or function step",
                  v[K_BLOCKS] ? "blocks" : "args");
    if (!v[K_FUNCTION] && v[K_BINARY]) return errn(c, v[K_BINARY], where, "binary belongs to a function step");
    if (v[K_FUNCTION]) {
      st->which_op = rdev_v1_JobStep_function_tag;
      if (read_function(c, m, v[K_FUNCTION], v[K_BINARY], v[K_BLOCKS], v[K_ARGS], where, &st->op.function)) return -1;
    } else if (v[K_LAUNCH]) {
      st->which_op = rdev_v1_JobStep_launch_tag;
      if (read_launch(c, m, v[K_LAUNCH], v[K_BLOCKS], v[K_ARGS], where, &st->op.launch)) return -1;
    } else if (v[K_COPY]) {
      st->which_op = rdev_v1_JobStep_copy_tag;
      if (read_copy(c, v[K_COPY], at(w, sizeof w, where, "copy"), &st->op.copy)) return -1;
    } else {
      st->which_op = rdev_v1_JobStep_memset_tag;
      if (read_memset(c, v[K_MEMSET], at(w, sizeof w, where, "memset"), &st->op.memset)) return -1;
    }
  }
  return 0;
}

static int read_outputs(ctx_t *c, const node_t *list) {
  static const char *const keys[] = {"name", "buffer", "offset", "size", "url", "method"};
  if (yt_list_of(c, list, "outputs", ARRAY_LEN(c->spec->outputs))) return -1;
  for (size_t i = 0; i < list->n; i++) {
    const node_t *m = list->kid[i], *v[6];
    char where[32], w[64];
    snprintf(where, sizeof where, "outputs[%zu]", i);
    if (yt_fields(c, m, where, keys, 6, v)) return -1;
    rdev_v1_JobOutput *o = &c->spec->outputs[c->spec->outputs_count++];
    int bi;
    if (!v[0]) return errn(c, m, where, "missing name");
    if (yt_get_name(c, v[0], at(w, sizeof w, where, "name"), o->name)) return -1;
    for (pb_size_t k = 0; k + 1 < c->spec->outputs_count; k++)
      if (!strcmp(c->spec->outputs[k].name, o->name)) return errn(c, v[0], w, "duplicate output name \"%s\"", o->name);
    if (!v[1]) return errn(c, m, where, "missing buffer");
    if (get_buffer_name(c, v[1], at(w, sizeof w, where, "buffer"), o->buffer, &bi)) return -1;
    if (v[2] && yt_get_size(c, v[2], at(w, sizeof w, where, "offset"), &o->offset)) return -1;
    if (v[3] && yt_get_size(c, v[3], at(w, sizeof w, where, "size"), &o->size)) return -1;
    if (check_range(c, v[3] ? v[3] : v[2] ? v[2] : m, where, bi, o->offset, o->size, "size")) return -1;
    if (v[4] && yt_get_url(c, v[4], at(w, sizeof w, where, "url"), &o->url)) return -1;
    if (v[5]) {
      if (!v[4]) return errn(c, v[5], where, "method goes with a url (an output without one is kept)");
      char q[48];
      if (yt_scalar(c, v[5], at(w, sizeof w, where, "method"), "PUT or POST")) return -1;
      if (v[5]->len == 3 && !strncasecmp(v[5]->s, "PUT", 3))
        memcpy(o->method, "PUT", 4);
      else if (v[5]->len == 4 && !strncasecmp(v[5]->s, "POST", 4))
        memcpy(o->method, "POST", 5);
      else
        return errn(c, v[5], w, "method %s: PUT or POST", yt_shown(v[5], q));
    }
  }
  return 0;
}

static int read_spec(ctx_t *c, const node_t *root) {
  enum { K_NAME, K_BUFFERS, K_INPUTS, K_STEPS, K_OUTPUTS, K_CALLBACK, K_TIMEOUT, K_RETRIES, K_BINARIES, K_N };
  static const char *const keys[] = {"name",         "buffers", "inputs",  "steps",   "outputs",
                                     "callback_url", "timeout", "retries", "binaries"};
  const node_t *v[K_N];
  rdev_v1_JobSpec *s = c->spec;
  if (root->kind != N_MAP)
    return errn(c, root, "spec", "must be a map (name:, buffers:, steps:, ...), not %s", yt_kind_name(root));
  if (yt_fields(c, root, NULL, keys, K_N, v)) return -1;
  if (v[K_NAME] && yt_get_text(c, v[K_NAME], "name", s->name, sizeof s->name)) return -1;
  /* Buffers first: the rest names them, wherever they stand. */
  if (v[K_BUFFERS] && read_buffers(c, v[K_BUFFERS])) return -1;
  if (v[K_INPUTS] && read_inputs(c, v[K_INPUTS])) return -1;
  if (v[K_BINARIES] && read_binaries(c, v[K_BINARIES])) return -1; /* before the steps that name them */
  if (v[K_STEPS] && read_steps(c, v[K_STEPS])) return -1;
  if (v[K_OUTPUTS] && read_outputs(c, v[K_OUTPUTS])) return -1;
  if (v[K_CALLBACK] && yt_get_url(c, v[K_CALLBACK], "callback_url", &s->callback_url)) return -1;
  if (v[K_TIMEOUT] && yt_get_seconds(c, v[K_TIMEOUT], "timeout", &s->timeout_s)) return -1;
  uint64_t retries = 0;
  if (v[K_RETRIES] && yt_get_u64(c, v[K_RETRIES], "retries", UINT32_MAX, &retries)) return -1;
  s->retries = (uint32_t)retries;
  return 0;
}

void rdev_cli_job_free(rdev_v1_JobSpec *spec) {
  if (!spec) return;
  pb_release(rdev_v1_JobSpec_fields, spec);
  memset(spec, 0, sizeof *spec);
}

int rdev_cli_job_parse(const char *text, size_t len, const rdev_v1_InfoReply *kernels, rdev_v1_JobSpec *spec, char *err,
                       size_t errlen) {
  ctx_t c = {.err = err, .errlen = err ? errlen : 0, .kernels = kernels, .spec = spec};
  if (c.errlen) err[0] = '\0';
  if (!spec) return yt_errat(&c, 0, 0, NULL, "no spec to fill");
  memset(spec, 0, sizeof *spec);
  if (!text && len) return yt_errat(&c, 0, 0, NULL, "no text");
  if (len > RDEV_CLI_JOB_MAX_TEXT)
    return yt_errat(&c, 0, 0, NULL, "the spec is too large: %zu bytes, at most %u", len, RDEV_CLI_JOB_MAX_TEXT);
  node_t *root = NULL;
  int rc = len ? yt_load(&c, text, len, &root) : 0;
  if (!rc && (!root || yt_is_null(root)))
    rc = yt_errat(&c, root ? root->line : 1, root ? root->col : 1, NULL, "the spec is empty");
  if (!rc) rc = read_spec(&c, root);
  yt_node_free(root);
  if (rc) {
    rdev_cli_job_free(spec);
    return c.need_kernels ? RDEV_CLI_JOB_NEED_KERNELS : -1;
  }
  return 0;
}
