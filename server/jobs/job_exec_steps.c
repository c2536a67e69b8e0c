/*
 * server/jobs/job_exec_steps.c — a job's steps (job_exec_steps.h), fed to
 * its in-process session once the inputs are in: each step becomes a Launch,
 * LaunchFunction, Copy or Memset on the stream the spec names (made at
 * first use, on the device of the step's first buffer), followed by a
 * synchronize of that stream whose reply says how the step ended; steps on
 * different streams overlap. A function step's arguments are packed as
 * docs/sim-binary.md says. The first step that failed fails the job.
 */
#define _GNU_SOURCE
#include <string.h>

#include "job_exec_steps.h"

/* The stream handle for step index idx on dev, made at first use. */
static int stream_for(run_t *r, uint32_t idx, int dev, uint64_t *out) {
  if (idx >= SRV_JOB_STREAMS || dev < 0 || dev >= SRV_JOB_DEVICES) return RDEV_INVALID_PARAM; /* job_spec.c's */
  uint64_t *slot = &r->streams[idx * SRV_JOB_DEVICES + (uint32_t)dev];
  if (!*slot) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = rdev_v1_Request_stream_create_tag;
    q.op.stream_create.device = dev;
    int rc = srv_job_request(r->x, &q);
    if (rc) return rc;
    *slot = r->x->handle;
  }
  *out = *slot;
  return RDEV_OK;
}

/* A step's device: that of the first buffer it names. */
static int step_device(const rdev_v1_JobSpec *spec, const rdev_v1_JobStep *s) {
  const char *name = spec->buffers[0].name;
  if (s->which_op == rdev_v1_JobStep_copy_tag) name = s->op.copy.dst.buffer;
  if (s->which_op == rdev_v1_JobStep_memset_tag) name = s->op.memset.dst.buffer;
  const rdev_v1_JobArg *args = s->which_op == rdev_v1_JobStep_launch_tag     ? s->op.launch.args
                               : s->which_op == rdev_v1_JobStep_function_tag ? s->op.function.args
                                                                             : NULL;
  pb_size_t nargs = s->which_op == rdev_v1_JobStep_launch_tag     ? s->op.launch.args_count
                    : s->which_op == rdev_v1_JobStep_function_tag ? s->op.function.args_count
                                                                  : 0;
  for (pb_size_t a = 0; a < nargs; a++)
    if (args[a].which_v == rdev_v1_JobArg_ptr_tag) {
      name = args[a].v.ptr.buffer;
      break;
    }
  return spec->buffers[srv_job_spec_buffer(spec, name)].device;
}

static uint64_t ref_addr(run_t *r, const rdev_v1_JobRef *ref) {
  return r->addr[srv_job_spec_buffer(&r->x->job->spec, ref->buffer)] + ref->offset;
}

static uint64_t ref_room(run_t *r, const rdev_v1_JobRef *ref) {
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  return spec->buffers[srv_job_spec_buffer(spec, ref->buffer)].size - ref->offset;
}

/* A function step's argument blob, laid out as docs/sim-binary.md says:
 * each argument at the next offset aligned to its size (at least 4),
 * pointers 8 bytes. Returns its length (blob holds 8 bytes an argument). */
static size_t pack_args(run_t *r, const rdev_v1_JobArg *args, pb_size_t n, uint8_t *blob) {
  size_t off = 0;
  for (pb_size_t a = 0; a < n; a++) {
    uint8_t v[8];
    size_t len = 8;
    switch (args[a].which_v) {
      case rdev_v1_JobArg_ptr_tag: {
        uint64_t p = ref_addr(r, &args[a].v.ptr);
        memcpy(v, &p, 8);
        break;
      }
      case rdev_v1_JobArg_i32_tag: memcpy(v, &args[a].v.i32, len = 4); break;
      case rdev_v1_JobArg_u32_tag: memcpy(v, &args[a].v.u32, len = 4); break;
      case rdev_v1_JobArg_i64_tag: memcpy(v, &args[a].v.i64, 8); break;
      case rdev_v1_JobArg_u64_tag: memcpy(v, &args[a].v.u64, 8); break;
      case rdev_v1_JobArg_f32_tag: memcpy(v, &args[a].v.f32, len = 4); break;
      default: memcpy(v, &args[a].v.f64, 8); break;
    }
    off = (off + len - 1) / len * len;
    memcpy(blob + off, v, len);
    off += len;
  }
  return off;
}

/* The function handle a function step launches (BinaryFunction). */
static int function_for(run_t *r, const rdev_v1_JobFunction *f, uint64_t *out) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_binary_function_tag;
  q.op.binary_function.binary = r->bin_handle[srv_job_spec_binary(&r->x->job->spec, f->binary)];
  snprintf(q.op.binary_function.name, sizeof q.op.binary_function.name, "%s", f->name);
  int rc = srv_job_request(r->x, &q);
  if (!rc) *out = r->x->handle;
  return rc;
}

/* Queues step i and the synchronize after it. */
static int queue_step(run_t *r, int i) {
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  const rdev_v1_JobStep *s = &spec->steps[i];
  uint64_t st;
  int rc = stream_for(r, s->stream, step_device(spec, s), &st);
  if (rc) return rc;
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  rdev_v1_Arg args[RDEV_WIRE_MAX_ARGS];
  rdev_wire_launch_src_t src = {.kernel = s->op.launch.kernel, .args = args};
  uint8_t blob[8 * 8];
  grpc_slice blob_slice;
  int has_blob = 0;
  switch (s->which_op) {
    case rdev_v1_JobStep_function_tag: {
      uint64_t fn;
      if ((rc = function_for(r, &s->op.function, &fn))) return rc;
      q.which_op = rdev_v1_Request_launch_function_tag;
      q.op.launch_function = (rdev_v1_LaunchFunction){.stream = st, .function = fn, .blocks = s->op.function.blocks};
      size_t n = pack_args(r, s->op.function.args, s->op.function.args_count, blob);
      blob_slice = grpc_slice_from_copied_buffer((const char *)blob, n);
      has_blob = 1;
      break;
    }
    case rdev_v1_JobStep_launch_tag:
      q.which_op = rdev_v1_Request_launch_tag;
      q.op.launch.stream = st;
      q.op.launch.blocks = s->op.launch.blocks;
      for (pb_size_t a = 0; a < s->op.launch.args_count && a < RDEV_WIRE_MAX_ARGS; a++) {
        const rdev_v1_JobArg *ja = &s->op.launch.args[a];
        rdev_v1_Arg *wa = &args[src.nargs++];
        *wa = (rdev_v1_Arg)rdev_v1_Arg_init_zero;
        wa->which_v = ja->which_v; /* the oneofs share their tags */
        switch (ja->which_v) {
          case rdev_v1_JobArg_ptr_tag: wa->v.ptr = ref_addr(r, &ja->v.ptr); break;
          case rdev_v1_JobArg_i32_tag: wa->v.i32 = ja->v.i32; break;
          case rdev_v1_JobArg_u32_tag: wa->v.u32 = ja->v.u32; break;
          case rdev_v1_JobArg_i64_tag: wa->v.i64 = ja->v.i64; break;
          case rdev_v1_JobArg_u64_tag: wa->v.u64 = ja->v.u64; break;
          case rdev_v1_JobArg_f32_tag: wa->v.f32 = ja->v.f32; break;
          case rdev_v1_JobArg_f64_tag: wa->v.f64 = ja->v.f64; break;
        }
      }
      rdev_wire_launch_encoder(&q.op.launch, &src);
      break;
    case rdev_v1_JobStep_copy_tag:
      q.which_op = rdev_v1_Request_copy_tag;
      q.op.copy = (rdev_v1_Copy){.stream = st,
                                 .dst = ref_addr(r, &s->op.copy.dst),
                                 .src = ref_addr(r, &s->op.copy.src),
                                 .count = s->op.copy.count,
                                 .dest_max = ref_room(r, &s->op.copy.dst)};
      break;
    case rdev_v1_JobStep_memset_tag:
      q.which_op = rdev_v1_Request_memset_tag;
      q.op.memset = (rdev_v1_Memset){.stream = st,
                                     .addr = ref_addr(r, &s->op.memset.dst),
                                     .value = s->op.memset.value,
                                     .count = s->op.memset.count,
                                     .dest_max = ref_room(r, &s->op.memset.dst)};
      break;
  }
  ex_t *x = r->x;
  pthread_mutex_lock(&x->mu);
  x->step_op[i] = x->seq + 1; /* srv_job_send_req numbers it so */
  x->step_sync[i] = x->seq + 2;
  x->steps_fed = i + 1;
  pthread_mutex_unlock(&x->mu);
  rc = srv_job_send_req(x, &q, has_blob ? &blob_slice : NULL, 0);
  if (has_blob) grpc_slice_unref(blob_slice);
  if (rc) return rc;
  rdev_v1_Request sq = rdev_v1_Request_init_zero;
  sq.which_op = rdev_v1_Request_stream_sync_tag;
  sq.op.stream_sync.stream = st;
  return srv_job_send_req(x, &sq, NULL, 0);
}

static int steps_over(ex_t *x) { return x->fail_step >= 0 || x->steps_over == x->steps_fed; }

static void step_name(const rdev_v1_JobSpec *spec, int i, char *out, size_t len) {
  const char *n = spec->steps[i].name;
  snprintf(out, len, "step %d%s%s%s", i + 1, n[0] ? " (" : "", n, n[0] ? ")" : "");
}

int srv_job_run_steps(run_t *r) {
  ex_t *x = r->x;
  const rdev_v1_JobSpec *spec = &x->job->spec;
  int rc = RDEV_OK, n = spec->steps_count;
  for (int i = 0; i < n && !rc; i++) {
    pthread_mutex_lock(&x->mu);
    int failed = x->fail_step >= 0;
    pthread_mutex_unlock(&x->mu);
    if (failed) break;
    if ((rc = queue_step(r, i)) && rc != RDEV_CANCELLED && rc != RDEV_RT_WAIT_TIMEOUT) {
      char at[48];
      step_name(spec, i, at, sizeof at);
      srv_job_fail(x->job, at, rc, "%s", x->msg[0] ? x->msg : rdev_strerror(rc));
      return rc;
    }
  }
  pthread_mutex_lock(&x->mu);
  if (!rc) rc = srv_job_wait_until(x, steps_over);
  int fs = x->fail_step, fc = x->fail_code;
  char fm[256];
  snprintf(fm, sizeof fm, "%s", x->fail_msg);
  pthread_mutex_unlock(&x->mu);
  if (fs >= 0) {
    char at[48];
    step_name(spec, fs, at, sizeof at);
    srv_job_fail(x->job, at, fc, "%s", fm[0] ? fm : rdev_strerror(fc));
    return fc;
  }
  return rc;
}
