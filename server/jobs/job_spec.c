/*
 * server/jobs/job_spec.c — whether a JobSpec keeps the contract of job.proto
 * before it is queued: names, counts, buffer references and byte ranges
 * (overflow-safe), methods, and every URL against the tenant's allow list.
 * It also fills in what the spec leaves implicit (an input's max_bytes, an
 * output's size), so the runner works with explicit ranges. The fuzz
 * harness of job specs drives it (tests/fuzz/).
 */
#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#include "job_private.h"

int srv_job_spec_binary(const rdev_v1_JobSpec *spec, const char *name) {
  for (pb_size_t i = 0; i < spec->binaries_count; i++)
    if (!strcmp(spec->binaries[i].name, name)) return (int)i;
  return -1;
}

int srv_job_spec_buffer(const rdev_v1_JobSpec *spec, const char *name) {
  for (pb_size_t i = 0; i < spec->buffers_count; i++)
    if (!strcmp(spec->buffers[i].name, name)) return (int)i;
  return -1;
}

int srv_job_name_ok(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > 31) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-') return 0;
  return 1;
}

/* Text that goes into logs, statuses and webhook events: valid UTF-8
 * without control characters. */
static int good_text(const char *s) {
  char copy[128];
  size_t n = strlen(s);
  if (n >= sizeof copy) return 0;
  memcpy(copy, s, n + 1);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
  return rdev_wire_utf8_fix(copy, n) == 0;
}

typedef struct {
  char *msg;
  size_t len;
  int code;
} check_t;

static int __attribute__((format(printf, 3, 4))) bad(check_t *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, c->len, fmt, ap);
  va_end(ap);
  c->code = code;
  return -1;
}

/* [offset, offset + count) inside the buffer ref names: 0, or -1 (why in c). */
static int check_range(check_t *c, const rdev_v1_JobSpec *spec, const char *what, const rdev_v1_JobRef *r,
                       uint64_t count) {
  int b = srv_job_spec_buffer(spec, r->buffer);
  if (b < 0) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: no buffer '%s'", what, r->buffer);
  uint64_t size = spec->buffers[b].size;
  if (r->offset > size || count > size - r->offset)
    return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: bytes %llu..+%llu are outside buffer '%s' (%llu bytes)", what,
               (unsigned long long)r->offset, (unsigned long long)count, r->buffer, (unsigned long long)size);
  return 0;
}

static int check_url(check_t *c, const srv_allow_t *allow, const char *what, const char *url) {
  size_t n = strlen(url);
  if (!n) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: no url", what);
  if (n > SRV_JOB_URL_MAX)
    return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: the url is longer than %d bytes", what, SRV_JOB_URL_MAX);
  char why[192];
  if (!srv_allow_url(allow, url, why, sizeof why))
    return bad(c, GRPC_STATUS_PERMISSION_DENIED, "%s: not allowed for this tenant: %s", what, why);
  return 0;
}

/* A launch's arguments: every pointer inside its buffer, every one set. */
static int check_args(check_t *c, const rdev_v1_JobSpec *spec, const char *what, const rdev_v1_JobArg *args,
                      pb_size_t n) {
  for (pb_size_t a = 0; a < n; a++)
    if (args[a].which_v == rdev_v1_JobArg_ptr_tag) {
      char w2[96];
      snprintf(w2, sizeof w2, "%s argument %u", what, (unsigned)a + 1);
      if (check_range(c, spec, w2, &args[a].v.ptr, 0)) return -1;
    } else if (args[a].which_v == 0) {
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s argument %u: no value", what, (unsigned)a + 1);
    }
  return 0;
}

/* sha256 is empty or 64 hex digits. */
static int good_sha(const char *h) {
  size_t n = strlen(h);
  for (size_t k = 0; k < n; k++)
    if (!isxdigit((unsigned char)h[k])) return 0;
  return n == 0 || n == 64;
}

static int check_step(check_t *c, rdev_v1_JobSpec *spec, pb_size_t i) {
  const rdev_v1_JobStep *s = &spec->steps[i];
  char what[64];
  snprintf(what, sizeof what, "step %u%s%s%s", (unsigned)i + 1, s->name[0] ? " (" : "", s->name, s->name[0] ? ")" : "");
  if (s->name[0] && !srv_job_name_ok(s->name)) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: a bad name", what);
  if (s->stream >= SRV_JOB_STREAMS)
    return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: stream %u (a job has streams 0..%d)", what, (unsigned)s->stream,
               SRV_JOB_STREAMS - 1);
  switch (s->which_op) {
    case rdev_v1_JobStep_launch_tag: {
      const rdev_v1_JobLaunch *l = &s->op.launch;
      if (!l->kernel[0] || !good_text(l->kernel))
        return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: a kernel name (printable UTF-8)", what);
      return check_args(c, spec, what, l->args, l->args_count);
    }
    case rdev_v1_JobStep_copy_tag: {
      const rdev_v1_JobCopy *cp = &s->op.copy;
      if (!cp->has_dst || !cp->has_src) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: copy needs dst and src", what);
      return check_range(c, spec, what, &cp->dst, cp->count) || check_range(c, spec, what, &cp->src, cp->count) ? -1
                                                                                                                : 0;
    }
    case rdev_v1_JobStep_function_tag: {
      const rdev_v1_JobFunction *f = &s->op.function;
      if (srv_job_spec_binary(spec, f->binary) < 0)
        return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: no binary '%s'", what, f->binary);
      if (!f->name[0] || !good_text(f->name))
        return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: a function name (printable UTF-8)", what);
      return check_args(c, spec, what, f->args, f->args_count);
    }
    case rdev_v1_JobStep_memset_tag: {
      const rdev_v1_JobMemset *m = &s->op.memset;
      if (!m->has_dst) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: memset needs dst", what);
      return check_range(c, spec, what, &m->dst, m->count);
    }
  }
  return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: no launch, function, copy or memset", what);
}

static int check(check_t *c, rdev_v1_JobSpec *spec, const srv_allow_t *allow) {
  if (!good_text(spec->name))
    return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "name: valid UTF-8 without control characters");
  if (!spec->buffers_count) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "a job needs at least one buffer");
  for (pb_size_t i = 0; i < spec->buffers_count; i++) {
    const rdev_v1_JobBuffer *b = &spec->buffers[i];
    if (!srv_job_name_ok(b->name))
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "buffer %u: a name of 1..31 bytes of A-Z a-z 0-9 _ . -",
                 (unsigned)i + 1);
    if (srv_job_spec_buffer(spec, b->name) != (int)i)
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "buffer '%s' is declared twice", b->name);
    if (!b->size) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "buffer '%s': size 0", b->name);
    if (b->device < 0 || b->device >= SRV_JOB_DEVICES)
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "buffer '%s': device %d (0..%d)", b->name, b->device,
                 SRV_JOB_DEVICES - 1);
  }
  for (pb_size_t i = 0; i < spec->inputs_count; i++) {
    rdev_v1_JobInput *in = &spec->inputs[i];
    char what[64];
    snprintf(what, sizeof what, "input %u (%s)", (unsigned)i + 1, in->buffer);
    int b = srv_job_spec_buffer(spec, in->buffer);
    if (b < 0) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "input %u: no buffer '%s'", (unsigned)i + 1, in->buffer);
    uint64_t size = spec->buffers[b].size;
    if (in->offset > size)
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: offset %llu is past the buffer's end", what,
                 (unsigned long long)in->offset);
    if (!in->max_bytes) in->max_bytes = size - in->offset;
    if (in->max_bytes > size - in->offset)
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: max_bytes %llu does not fit the buffer", what,
                 (unsigned long long)in->max_bytes);
    if (!good_sha(in->sha256)) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: sha256 must be 64 hex digits", what);
    if (check_url(c, allow, what, in->url ? in->url : "")) return -1;
  }
  for (pb_size_t i = 0; i < spec->binaries_count; i++) {
    const rdev_v1_JobBinary *b = &spec->binaries[i];
    char what[64];
    snprintf(what, sizeof what, "binary %u (%s)", (unsigned)i + 1, b->name);
    if (!srv_job_name_ok(b->name))
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "binary %u: a name of 1..31 bytes of A-Z a-z 0-9 _ . -",
                 (unsigned)i + 1);
    if (srv_job_spec_binary(spec, b->name) != (int)i)
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "binary '%s' is declared twice", b->name);
    if (!good_sha(b->sha256)) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: sha256 must be 64 hex digits", what);
    if (check_url(c, allow, what, b->url ? b->url : "")) return -1;
  }
  for (pb_size_t i = 0; i < spec->steps_count; i++)
    if (check_step(c, spec, i)) return -1;
  for (pb_size_t i = 0; i < spec->outputs_count; i++) {
    rdev_v1_JobOutput *o = &spec->outputs[i];
    if (!srv_job_name_ok(o->name))
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "output %u: a name of 1..31 bytes of A-Z a-z 0-9 _ . -",
                 (unsigned)i + 1);
    for (pb_size_t k = 0; k < i; k++)
      if (!strcmp(spec->outputs[k].name, o->name))
        return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "output '%s' is declared twice", o->name);
    char what[64];
    snprintf(what, sizeof what, "output %s", o->name);
    int b = srv_job_spec_buffer(spec, o->buffer);
    if (b < 0) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: no buffer '%s'", what, o->buffer);
    uint64_t size = spec->buffers[b].size;
    if (o->offset > size) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: offset past the buffer's end", what);
    if (!o->size) o->size = size - o->offset;
    rdev_v1_JobRef r = {.offset = o->offset};
    snprintf(r.buffer, sizeof r.buffer, "%s", o->buffer);
    if (check_range(c, spec, what, &r, o->size)) return -1;
    if (o->method[0] && strcmp(o->method, "PUT") && strcmp(o->method, "POST"))
      return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "%s: method PUT or POST", what);
    if (o->url && o->url[0] && check_url(c, allow, what, o->url)) return -1;
  }
  if (spec->callback_url && spec->callback_url[0] && check_url(c, allow, "callback_url", spec->callback_url)) return -1;
  if (spec->retries > 20) return bad(c, GRPC_STATUS_INVALID_ARGUMENT, "retries: at most 20");
  return 0;
}

int srv_job_spec_check(rdev_v1_JobSpec *spec, const srv_allow_t *allow, char *msg, size_t msglen) {
  check_t c = {msg, msglen, GRPC_STATUS_OK};
  if (msglen) msg[0] = '\0';
  check(&c, spec, allow);
  return c.code;
}
