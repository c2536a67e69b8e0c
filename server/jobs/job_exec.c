/*
 * server/jobs/job_exec.c — running one job (jobs.h) on its runner thread. The
 * job's device work goes through an in-process session of its tenant
 * (local.c): requests are encoded and fed as a client's would be, replies
 * come back to on_reply. So a job gets every check a client gets (ranges,
 * kernels and their arguments, quotas, slots), and closing the session
 * discards whatever it left queued.
 *
 * The run: allocate the buffers; fetch the inputs, all at once, each body
 * streamed through 1 MiB synchronous Writes straight into its buffer (the
 * runtime's staging where device memory is not host-mapped); check their
 * sha256; queue the steps, each followed by a synchronize of its stream
 * whose reply says how that step ended (steps on different streams
 * overlap); then deliver each output from 1 MiB Reads, to its URL or to a
 * kept file. Cancel and the timeout are seen within 50 ms by every wait.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_http.h"
#include "job_private.h"
#include "rdev/clock.h"

#define CHUNK RDEV_WIRE_MAX_CHUNK
#define WAIT_SLICE_MS 50

typedef struct {
  srv_job_t *job;
  srv_session_t *s;
  uint64_t deadline_ms; /* monotonic */
  pthread_mutex_t mu;   /* from here on: on_reply writes, the runner reads */
  pthread_cond_t cv;
  uint64_t seq;  /* the last request's */
  uint64_t want; /* the synchronous request waited for */
  int got, status;
  char msg[256];
  uint64_t handle, addr;
  uint8_t *read_dst; /* its Read data goes here (at most read_cap bytes) */
  size_t read_cap, read_len;
  /* the steps: the seq of each one's op and of the synchronize after it */
  uint64_t step_op[64], step_sync[64];
  int steps_fed, steps_over;
  int fail_step; /* the first step that failed (-1: none), its status and message */
  int fail_code;
  char fail_msg[256];
  int async_code; /* a refused quiet Write */
  char async_msg[256];
} ex_t;

static uint64_t mono_ms(void) { return rdev_clock_now_ns() / 1000000u; }

/* ---- the session's replies ------------------------------------------------- */

/* The step whose op or synchronize seq is; -1 when none (x->mu held). */
static int step_of(ex_t *x, uint64_t seq, int *is_sync) {
  for (int i = 0; i < x->steps_fed; i++) {
    if (x->step_sync[i] == seq) return *is_sync = 1, i;
    if (x->step_op[i] == seq) return *is_sync = 0, i;
  }
  return -1;
}

static void step_failed_locked(ex_t *x, int i, int code, const char *msg) {
  if (x->fail_step >= 0 && x->fail_step <= i) return;
  x->fail_step = i;
  x->fail_code = code;
  snprintf(x->fail_msg, sizeof x->fail_msg, "%s", msg);
}

static void on_reply(void *user, grpc_byte_buffer *bb) {
  ex_t *x = user;
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  rdev_wire_payload_t data;
  rdev_wire_payload_init(&data, CHUNK);
  rdev_wire_payload_decoder(&r.data, &data);
  int ok = rdev_wire_decode(bb, rdev_v1_Reply_fields, &r, NULL);
  pthread_mutex_lock(&x->mu);
  int is_sync = 0, step = ok ? step_of(x, r.seq, &is_sync) : -1;
  if (!ok) { /* cannot happen (the session made it); whatever waits must not wait for ever */
    if (!x->async_code) x->async_code = RDEV_PROTOCOL, snprintf(x->async_msg, sizeof x->async_msg, "bad reply");
    if (x->want && !x->got) x->got = 1, x->status = RDEV_PROTOCOL, snprintf(x->msg, sizeof x->msg, "bad reply");
    if (x->steps_fed) step_failed_locked(x, x->steps_fed - 1, RDEV_PROTOCOL, "bad reply");
  } else if (r.kind == rdev_v1_ReplyKind_PRINT) {
    /* kernel print output: jobs have no terminal */
  } else if (r.seq == x->want && !x->got) {
    x->got = 1;
    x->status = r.status;
    snprintf(x->msg, sizeof x->msg, "%s", r.message);
    x->handle = r.handle;
    x->addr = r.addr;
    size_t at = 0;
    for (int i = 0; i < data.nparts && x->read_dst; i++) {
      size_t n = GRPC_SLICE_LENGTH(data.parts[i]);
      if (n > x->read_cap - at) n = x->read_cap - at;
      memcpy(x->read_dst + at, GRPC_SLICE_START_PTR(data.parts[i]), n);
      at += n;
    }
    x->read_len = at;
  } else if (step >= 0) {
    if (r.status != RDEV_OK) step_failed_locked(x, step, r.status, r.message);
    if (is_sync) {
      x->steps_over++;
      if (r.status == RDEV_OK && x->fail_step != step) srv_job_progress(x->job, 0, 0, 0, 1);
    }
  } else if (r.status != RDEV_OK && !x->async_code) {
    x->async_code = r.status;
    snprintf(x->async_msg, sizeof x->async_msg, "%s", r.message);
  }
  pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
  rdev_wire_payload_release(&data);
  grpc_byte_buffer_destroy(bb);
}

/* ---- requests ------------------------------------------------------------------ */

/* Why the job must stop now: RDEV_CANCELLED, RDEV_RT_WAIT_TIMEOUT, or 0. */
static int stop_now(ex_t *x) {
  if (atomic_load(&x->job->cancel)) return RDEV_CANCELLED;
  if (mono_ms() >= x->deadline_ms) return RDEV_RT_WAIT_TIMEOUT;
  return RDEV_OK;
}

/* Feeds q (its seq set here; with payload when non-NULL) to the session,
 * waiting while it takes no message. RDEV_OK, or why it stopped. */
static int send_req(ex_t *x, rdev_v1_Request *q, const grpc_slice *payload, int wait_for_reply) {
  int rc = stop_now(x); /* every request looks: a run of prompt replies never waits */
  if (rc) return rc;
  pthread_mutex_lock(&x->mu);
  q->seq = ++x->seq;
  if (wait_for_reply) {
    x->want = q->seq;
    x->got = 0;
  }
  pthread_mutex_unlock(&x->mu);
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, q, payload);
  if (!bb) return RDEV_BAD_ALLOC;
  while (srv_session_feed(x->s, bb) < 0) {
    if ((rc = stop_now(x))) {
      grpc_byte_buffer_destroy(bb);
      return rc;
    }
    srv_session_wait_ready(x->s, WAIT_SLICE_MS);
  }
  return RDEV_OK;
}

/* Waits until done(x) holds (x->mu held by the caller), or the job must stop. */
static int wait_until(ex_t *x, int (*done)(ex_t *x)) {
  int rc = RDEV_OK;
  while (!done(x) && !(rc = stop_now(x))) {
    struct timespec dl = rdev_clock_deadline_ns((uint64_t)WAIT_SLICE_MS * 1000000u);
    pthread_cond_timedwait(&x->cv, &x->mu, &dl);
  }
  return rc;
}

static int got_reply(ex_t *x) { return x->got; }

/* Sends q and waits for its reply: its status (the message in x->msg). */
static int call(ex_t *x, rdev_v1_Request *q) {
  int rc = send_req(x, q, NULL, 1);
  if (rc) return rc;
  pthread_mutex_lock(&x->mu);
  rc = wait_until(x, got_reply);
  if (!rc) rc = x->status;
  pthread_mutex_unlock(&x->mu);
  return rc;
}

/* ---- the phases ---------------------------------------------------------------- */

typedef struct {
  ex_t *x;
  uint64_t addr[16];                                   /* each buffer's device address */
  uint64_t streams[SRV_JOB_STREAMS * SRV_JOB_DEVICES]; /* handles, by stream index and device */
  uint8_t *bin[4];                                     /* each binary's bytes (malloc'd), */
  size_t bin_len[4];                                   /* their length, */
  uint64_t bin_handle[4];                              /* and its handle once loaded */
} run_t;

static int alloc_buffers(run_t *r) {
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  for (pb_size_t i = 0; i < spec->buffers_count; i++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = rdev_v1_Request_malloc_tag;
    q.op.malloc.device = spec->buffers[i].device;
    q.op.malloc.size = spec->buffers[i].size;
    int rc = call(r->x, &q);
    if (rc == RDEV_CANCELLED || rc == RDEV_RT_WAIT_TIMEOUT) return rc; /* the run says why */
    if (rc) {
      char at[48];
      snprintf(at, sizeof at, "buffer %s", spec->buffers[i].name);
      srv_job_fail(r->x->job, at, rc, "%s", r->x->msg);
      return rc;
    }
    r->addr[i] = r->x->addr;
  }
  return RDEV_OK;
}

/* One input's body on its way into its buffer. */
typedef struct {
  run_t *r;
  uint64_t addr, room; /* where the next byte goes, and the bytes left there */
  grpc_slice cur;      /* the bytes gathered for the next Write */
  size_t fill;
  int have, total_told;
  uint64_t *fetched_all, cap_all; /* the job's fetched bytes, and the tenant's cap on them */
} sink_t;

static int flush_write(sink_t *k) {
  if (!k->have) return RDEV_OK;
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write.addr = k->addr;
  q.op.write.dest_max = k->room;
  q.op.write.quiet = true;
  grpc_slice part = grpc_slice_sub_no_ref(k->cur, 0, k->fill);
  int rc = send_req(k->r->x, &q, &part, 0);
  grpc_slice_unref(k->cur);
  k->have = 0;
  k->addr += k->fill;
  k->room -= k->fill;
  k->fill = 0;
  if (!rc) {
    pthread_mutex_lock(&k->r->x->mu);
    rc = k->r->x->async_code;
    pthread_mutex_unlock(&k->r->x->mu);
  }
  return rc;
}

static int sink(void *user, const void *data, size_t len, uint64_t total) {
  sink_t *k = user;
  if (total && !k->total_told) {
    k->total_told = 1;
    srv_job_progress(k->r->x->job, 0, total, 0, 0);
  }
  *k->fetched_all += len;
  if (*k->fetched_all > k->cap_all) return RDEV_QUOTA_EXCEEDED;
  if (len > k->room - k->fill) return RDEV_STORAGE_OVER_LIMIT; /* max_bytes keeps it inside; never write past */
  const uint8_t *p = data;
  while (len) {
    if (!k->have) {
      k->cur = grpc_slice_malloc(CHUNK);
      k->have = 1;
    }
    size_t n = CHUNK - k->fill < len ? CHUNK - k->fill : len;
    memcpy(GRPC_SLICE_START_PTR(k->cur) + k->fill, p, n);
    k->fill += n;
    p += n;
    len -= n;
    srv_job_progress(k->r->x->job, n, 0, 0, 0);
    if (k->fill == CHUNK) {
      int rc = flush_write(k);
      if (rc) return rc;
    }
  }
  return RDEV_OK;
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

static void http_opts(run_t *r, srv_http_opts_t *o, const srv_allow_t *allow) {
  const srv_config_t *cfg = &r->x->job->jobs->srv->cfg;
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  *o = (srv_http_opts_t){.allow = allow,
                         .retries = spec->retries ? (int)spec->retries : cfg->job_retries,
                         .max_redirects = 5,
                         .cancel = &r->x->job->cancel,
                         .resolve = cfg->job_resolve[0] ? cfg->job_resolve : NULL};
  /* the deadline in http's clock: CLOCK_MONOTONIC ms, as mono_ms */
  o->deadline_ms = r->x->deadline_ms;
}

/* A binary's body, into host memory (at most a chunk: BinaryLoad's limit). */
typedef struct {
  run_t *r;
  uint8_t *buf;
  size_t len;
  uint64_t *fetched_all, cap_all;
} bin_sink_t;

static int bin_sink(void *user, const void *data, size_t len, uint64_t total) {
  bin_sink_t *k = user;
  (void)total;
  *k->fetched_all += len;
  if (*k->fetched_all > k->cap_all) return RDEV_QUOTA_EXCEEDED;
  if (len > CHUNK - k->len) return RDEV_STORAGE_OVER_LIMIT;
  memcpy(k->buf + k->len, data, len);
  k->len += len;
  srv_job_progress(k->r->x->job, len, 0, 0, 0);
  return RDEV_OK;
}

/* Whether the digest is the 64 hex digits want. */
static int sha_matches(const uint8_t got[32], const char *want) {
  for (int k = 0; k < 32; k++)
    if (got[k] != (hexval(want[2 * k]) << 4 | hexval(want[2 * k + 1]))) return 0;
  return 1;
}

/* Fetches the inputs into their buffers and the binaries into r->bin, all
 * at once, then checks the digests the spec gives. */
static int fetch_inputs(run_t *r, const srv_allow_t *allow) {
  srv_job_t *job = r->x->job;
  const rdev_v1_JobSpec *spec = &job->spec;
  int ni = spec->inputs_count, n = ni + spec->binaries_count;
  if (!n) return RDEV_OK;
  srv_http_get_t gets[16 + 4];
  sink_t sinks[16];
  bin_sink_t bsinks[4];
  uint64_t fetched = 0;
  pthread_mutex_lock(&job->tenant->mu);
  uint64_t cap = job->tenant->max_job_fetch;
  pthread_mutex_unlock(&job->tenant->mu);
  for (int i = ni; i < n; i++)
    if (!(r->bin[i - ni] = malloc(CHUNK))) {
      srv_job_fail(job, "job", RDEV_BAD_ALLOC, "out of server memory");
      return RDEV_BAD_ALLOC;
    }
  for (int i = 0; i < n; i++) {
    const char *url, *sha;
    if (i < ni) {
      const rdev_v1_JobInput *in = &spec->inputs[i];
      int b = srv_job_spec_buffer(spec, in->buffer);
      sinks[i] = (sink_t){
          .r = r, .addr = r->addr[b] + in->offset, .room = in->max_bytes, .fetched_all = &fetched, .cap_all = cap};
      gets[i] = (srv_http_get_t){.max_bytes = in->max_bytes, .sink = sink, .user = &sinks[i]};
      url = in->url, sha = in->sha256;
    } else {
      const rdev_v1_JobBinary *bin = &spec->binaries[i - ni];
      bsinks[i - ni] = (bin_sink_t){.r = r, .buf = r->bin[i - ni], .fetched_all = &fetched, .cap_all = cap};
      gets[i] = (srv_http_get_t){.max_bytes = CHUNK, .sink = bin_sink, .user = &bsinks[i - ni]};
      url = bin->url, sha = bin->sha256;
    }
    gets[i].url = url;
    gets[i].no_sha256 = !sha[0];
  }
  srv_http_opts_t o;
  http_opts(r, &o, allow);
  int rc = srv_http_fetch(gets, n, &o);
  for (int i = 0; i < ni; i++) {
    int wrc = flush_write(&sinks[i]);
    if (!rc && wrc) rc = wrc, gets[i].status = wrc;
  }
  for (int i = ni; i < n; i++) r->bin_len[i - ni] = bsinks[i - ni].len;
  for (int i = 0; i < n && !rc; i++) { /* every body whole: now their checksums */
    const char *want = i < ni ? spec->inputs[i].sha256 : spec->binaries[i - ni].sha256;
    if (want[0] && !sha_matches(gets[i].sha256, want)) {
      gets[i].status = rc = RDEV_CHECKSUM;
      snprintf(gets[i].error, sizeof gets[i].error, "sha256 of the %llu bytes fetched does not match the spec's",
               (unsigned long long)gets[i].received);
    }
  }
  if (!rc) return RDEV_OK;
  for (int i = 0; i < n; i++) {
    if (gets[i].status != rc) continue; /* the first failure; the others were stopped for it */
    char at[48];
    snprintf(at, sizeof at, "%s %s", i < ni ? "input" : "binary",
             i < ni ? spec->inputs[i].buffer : spec->binaries[i - ni].name);
    const char *why =
        gets[i].status == RDEV_QUOTA_EXCEEDED ? "the tenant's cap on fetched bytes (max_job_fetch)" : gets[i].error;
    srv_job_fail(job, at, gets[i].status, "%s", why[0] ? why : rdev_strerror(gets[i].status));
    return gets[i].status;
  }
  srv_job_fail(job, "job", rc, "%s", rdev_strerror(rc));
  return rc;
}

/* Loads the fetched binaries into the job's session (BinaryLoad). */
static int load_binaries(run_t *r) {
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  for (pb_size_t i = 0; i < spec->binaries_count; i++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = rdev_v1_Request_binary_load_tag;
    grpc_slice data = grpc_slice_from_copied_buffer((const char *)r->bin[i], r->bin_len[i]);
    int rc = send_req(r->x, &q, &data, 1);
    grpc_slice_unref(data);
    if (!rc) {
      pthread_mutex_lock(&r->x->mu);
      rc = wait_until(r->x, got_reply);
      if (!rc) rc = r->x->status;
      pthread_mutex_unlock(&r->x->mu);
    }
    if (rc == RDEV_CANCELLED || rc == RDEV_RT_WAIT_TIMEOUT) return rc; /* the run says why */
    if (rc) {
      char at[48];
      snprintf(at, sizeof at, "binary %s", spec->binaries[i].name);
      srv_job_fail(r->x->job, at, rc, "%s", r->x->msg[0] ? r->x->msg : rdev_strerror(rc));
      return rc;
    }
    r->bin_handle[i] = r->x->handle;
  }
  return RDEV_OK;
}

/* The stream handle for step index idx on dev, made at first use. */
static int stream_for(run_t *r, uint32_t idx, int dev, uint64_t *out) {
  if (idx >= SRV_JOB_STREAMS || dev < 0 || dev >= SRV_JOB_DEVICES) return RDEV_INVALID_PARAM; /* job_spec.c's */
  uint64_t *slot = &r->streams[idx * SRV_JOB_DEVICES + (uint32_t)dev];
  if (!*slot) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = rdev_v1_Request_stream_create_tag;
    q.op.stream_create.device = dev;
    int rc = call(r->x, &q);
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
  int rc = call(r->x, &q);
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
  x->step_op[i] = x->seq + 1; /* send_req numbers it so */
  x->step_sync[i] = x->seq + 2;
  x->steps_fed = i + 1;
  pthread_mutex_unlock(&x->mu);
  rc = send_req(x, &q, has_blob ? &blob_slice : NULL, 0);
  if (has_blob) grpc_slice_unref(blob_slice);
  if (rc) return rc;
  rdev_v1_Request sq = rdev_v1_Request_init_zero;
  sq.which_op = rdev_v1_Request_stream_sync_tag;
  sq.op.stream_sync.stream = st;
  return send_req(x, &sq, NULL, 0);
}

static int steps_over(ex_t *x) { return x->fail_step >= 0 || x->steps_over == x->steps_fed; }

static void step_name(const rdev_v1_JobSpec *spec, int i, char *out, size_t len) {
  const char *n = spec->steps[i].name;
  snprintf(out, len, "step %d%s%s%s", i + 1, n[0] ? " (" : "", n, n[0] ? ")" : "");
}

static int run_steps(run_t *r) {
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
  if (!rc) rc = wait_until(x, steps_over);
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

/* Reads count bytes at addr (count <= CHUNK) into dst. */
static int read_dev(ex_t *x, uint64_t addr, void *dst, size_t count) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_read_tag;
  q.op.read = (rdev_v1_Read){.addr = addr, .count = count, .dest_max = count};
  pthread_mutex_lock(&x->mu);
  x->read_dst = dst;
  x->read_cap = count;
  x->read_len = 0;
  pthread_mutex_unlock(&x->mu);
  int rc = call(x, &q);
  pthread_mutex_lock(&x->mu);
  x->read_dst = NULL;
  if (!rc && x->read_len != count) rc = RDEV_PROTOCOL;
  pthread_mutex_unlock(&x->mu);
  return rc;
}

/* An output's bytes, read ahead from the device a chunk at a time. */
typedef struct {
  run_t *r;
  uint64_t addr, size;
  uint8_t *buf;
  uint64_t at; /* the buffer holds [at, at + len) */
  size_t len;
  uint64_t told; /* bytes counted as delivered: a retry starts again at 0 without counting twice */
} source_t;

static int source(void *user, uint64_t off, void *buf, size_t cap, size_t *got) {
  source_t *src = user;
  *got = 0;
  if (off >= src->size) return RDEV_OK;
  if (off < src->at || off >= src->at + src->len) {
    size_t n = src->size - off < CHUNK ? (size_t)(src->size - off) : CHUNK;
    int rc = read_dev(src->r->x, src->addr + off, src->buf, n);
    if (rc) return rc;
    src->at = off;
    src->len = n;
  }
  size_t n = (size_t)(src->at + src->len - off);
  if (n > cap) n = cap;
  memcpy(buf, src->buf + (off - src->at), n);
  *got = n;
  if (off + n > src->told) {
    srv_job_progress(src->r->x->job, 0, 0, off + n - src->told, 0);
    src->told = off + n;
  }
  return RDEV_OK;
}

static int keep_output(run_t *r, const rdev_v1_JobOutput *o, source_t *src, char *why, size_t whylen) {
  srv_job_t *job = r->x->job;
  if (srv_job_keep_reserve(job, o->size)) {
    snprintf(why, whylen, "%llu bytes more would pass the tenant's job disk quota (job_disk)",
             (unsigned long long)o->size);
    return RDEV_QUOTA_EXCEEDED;
  }
  char tmp[600];
  FILE *f = srv_job_store_out_create(job->jobs, job->id, o->name, tmp, sizeof tmp);
  int rc = f ? RDEV_OK : RDEV_INTERNAL_ERROR;
  for (uint64_t off = 0; !rc && off < o->size;) {
    size_t n = o->size - off < CHUNK ? (size_t)(o->size - off) : CHUNK;
    if (!(rc = read_dev(r->x, src->addr + off, src->buf, n)) && fwrite(src->buf, 1, n, f) != n)
      rc = RDEV_INTERNAL_ERROR;
    off += n;
    if (!rc) srv_job_progress(job, 0, 0, n, 0);
  }
  if (f && rc) {
    fclose(f);
    unlink(tmp);
  } else if (f && srv_job_store_out_commit(job->jobs, f, tmp, job->id, o->name)) {
    rc = RDEV_INTERNAL_ERROR;
  }
  if (rc == RDEV_INTERNAL_ERROR) snprintf(why, whylen, "cannot write the kept output to the job directory");
  srv_job_keep_done(job, rc ? NULL : o->name, o->size);
  return rc;
}

static int deliver_outputs(run_t *r, const srv_allow_t *allow) {
  srv_job_t *job = r->x->job;
  const rdev_v1_JobSpec *spec = &job->spec;
  uint8_t *buf = malloc(CHUNK);
  if (!buf) {
    srv_job_fail(job, "job", RDEV_BAD_ALLOC, "out of server memory");
    return RDEV_BAD_ALLOC;
  }
  int rc = RDEV_OK;
  for (pb_size_t i = 0; i < spec->outputs_count && !rc; i++) {
    const rdev_v1_JobOutput *o = &spec->outputs[i];
    source_t src = {
        .r = r, .addr = r->addr[srv_job_spec_buffer(spec, o->buffer)] + o->offset, .size = o->size, .buf = buf};
    char why[256] = "";
    if (o->url && o->url[0]) {
      srv_http_put_t p = {
          .url = o->url, .method = o->method[0] ? o->method : "PUT", .size = o->size, .source = source, .user = &src};
      srv_http_opts_t opts;
      http_opts(r, &opts, allow);
      rc = srv_http_deliver(&p, &opts);
      snprintf(why, sizeof why, "%s", p.error);
    } else {
      rc = keep_output(r, o, &src, why, sizeof why);
    }
    if (rc) {
      char at[48];
      snprintf(at, sizeof at, "output %s", o->name);
      srv_job_fail(job, at, rc, "%s", why[0] ? why : rdev_strerror(rc));
    }
  }
  free(buf);
  return rc;
}

/* ---- the run ---------------------------------------------------------------------- */

void srv_job_exec(srv_job_t *job) {
  srv_t *srv = job->jobs->srv;
  ex_t *x = calloc(1, sizeof *x);
  run_t *r = calloc(1, sizeof *r);
  if (!x || !r) {
    free(x);
    free(r);
    srv_job_fail(job, "job", RDEV_BAD_ALLOC, "out of server memory");
    return;
  }
  x->job = job;
  x->fail_step = -1;
  pthread_mutex_init(&x->mu, NULL);
  rdev_clock_cond_init(&x->cv);
  uint32_t timeout_s = (uint32_t)srv->cfg.job_timeout_s; /* the default, and the most a spec may ask */
  if (job->spec.timeout_s && job->spec.timeout_s < timeout_s) timeout_s = job->spec.timeout_s;
  x->deadline_ms = mono_ms() + (uint64_t)timeout_s * 1000u;
  r->x = x;
  srv_job_enter(job, rdev_v1_JobState_FETCHING);
  srv_allow_t *allow = srv_job_allow(job->tenant);
  x->s = srv_session_open_local(srv, job->tenant, on_reply, x);
  int rc;
  if (!x->s) {
    rc = RDEV_QUOTA_EXCEEDED;
    srv_job_fail(job, "job", rc, "cannot open a session for the job (the tenant's max_sessions, or server memory)");
  } else if (!(rc = alloc_buffers(r)) && !(rc = fetch_inputs(r, allow)) && !(rc = load_binaries(r))) {
    srv_job_enter(job, rdev_v1_JobState_RUNNING);
    if (!(rc = run_steps(r))) {
      srv_job_enter(job, rdev_v1_JobState_DELIVERING);
      if (!(rc = deliver_outputs(r, allow))) srv_job_enter(job, rdev_v1_JobState_SUCCEEDED);
    }
  }
  if (rc == RDEV_CANCELLED || rc == RDEV_RT_WAIT_TIMEOUT) { /* unless a phase already said where */
    int why = atomic_load(&job->cancel);
    if (rc == RDEV_RT_WAIT_TIMEOUT)
      srv_job_fail(job, "job", rc, "the job ran past its timeout of %u s", timeout_s);
    else
      srv_job_fail(job, "job", rc, "%s",
                   why == SRV_JOB_STOP_CLIENT   ? "cancelled"
                   : why == SRV_JOB_STOP_TENANT ? "its tenant was removed"
                                                : "the server stopped before the job finished");
  }
  if (x->s) srv_session_close_local(x->s);
  srv_allow_free(allow);
  for (int i = 0; i < 4; i++) free(r->bin[i]);
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->cv);
  free(r);
  free(x);
}
