/*
 * server/jobs/job_rpc.c — the job calls of the Device service (rdev.proto):
 * SubmitJob, GetJob and ListJobs answered at once; CancelJob once the job
 * is final (job_state.c answers it); WatchJob and FetchOutput as server streams. A stream has at
 * most one message in flight (gRPC's rule): a watcher keeps the latest
 * status and sends it when the previous send completed, so a slow watcher
 * sees fewer, never stale, states; the final one always goes out, then
 * the status OK. FetchOutput reads the kept file a chunk per send.
 */
#include <grpc/support/alloc.h>
#include <pb_decode.h>
#include <stdlib.h>
#include <string.h>

#include "job_private.h"

#define FETCH_CHUNK RDEV_WIRE_MAX_CHUNK

enum { MODE_WATCH, MODE_FETCH };

typedef struct {
  srv_watch_t w;
  srv_op_t send_op, close_op;
  grpc_call *call;
  srv_job_t *job;
  int mode;
  atomic_int refs; /* the close batch's, a send's, the watch's */
  atomic_int watching;
  pthread_mutex_t mu;
  int sending, started, ended; /* a send in flight; initial metadata sent; the status sent */
  int dirty;                   /* pending is newer than what was sent */
  rdev_v1_JobStatus pending;
  int cancelled; /* written by gRPC for the close batch */
  grpc_slice details;
  FILE *f; /* FetchOutput */
  uint64_t total;
  grpc_byte_buffer *out; /* the message in flight */
} rstream_t;

static void rs_unref(rstream_t *rs);

/* Stops watching the job, once (the watch's reference goes). */
static void rs_unwatch(rstream_t *rs) {
  if (!atomic_exchange(&rs->watching, 0)) return;
  srv_job_unwatch(rs->job, &rs->w);
  rs_unref(rs);
}

static void rs_unref(rstream_t *rs) {
  if (atomic_fetch_sub(&rs->refs, 1) != 1) return;
  if (rs->out) grpc_byte_buffer_destroy(rs->out);
  if (rs->f) fclose(rs->f);
  if (rs->job) srv_job_unref(rs->job);
  grpc_slice_unref(rs->details);
  grpc_call_unref(rs->call);
  pthread_mutex_destroy(&rs->mu);
  free(rs);
}

/* Starts a batch of the message out (may be NULL), with the initial
 * metadata first time and the status OK when last (rs->mu held). */
static void send_locked(rstream_t *rs, grpc_byte_buffer *out, int last) {
  grpc_op ops[3];
  memset(ops, 0, sizeof ops);
  size_t n = 0;
  if (!rs->started) {
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    rs->started = 1;
  }
  if (out) {
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = out;
  }
  if (last) {
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = GRPC_STATUS_OK;
    ops[n++].data.send_status_from_server.status_details = &rs->details;
    rs->ended = 1;
  }
  rs->out = out;
  rs->sending = 1;
  atomic_fetch_add(&rs->refs, 1);
  RDEV_HANDOFF_GIVE(&rs->send_op);
  if (grpc_call_start_batch(rs->call, ops, n, &rs->send_op, NULL) != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "job call: cannot send");
    grpc_call_cancel_with_status(rs->call, GRPC_STATUS_INTERNAL, "cannot send", NULL); /* ends the call */
    rs->sending = 0;
    rs->ended = 1;
    if (out) grpc_byte_buffer_destroy(out);
    rs->out = NULL;
    atomic_fetch_sub(&rs->refs, 1); /* the caller holds one: never the last */
  }
}

/* Watch mode: sends the latest status if nothing is in flight (rs->mu held). */
static void pump_status_locked(rstream_t *rs) {
  if (rs->sending || rs->ended || !rs->dirty) return;
  rs->dirty = 0;
  grpc_byte_buffer *out = rdev_wire_encode(rdev_v1_JobStatus_fields, &rs->pending, NULL);
  send_locked(rs, out, srv_job_final(rs->pending.state));
}

/* Fetch mode: the next chunk of the file, or the end (rs->mu held). */
static void pump_file_locked(rstream_t *rs) {
  if (rs->sending || rs->ended) return;
  grpc_slice chunk = grpc_slice_malloc(FETCH_CHUNK);
  size_t n = fread(GRPC_SLICE_START_PTR(chunk), 1, FETCH_CHUNK, rs->f);
  if (n == 0 && ferror(rs->f)) {
    grpc_slice_unref(chunk);
    grpc_call_cancel_with_status(rs->call, GRPC_STATUS_INTERNAL, "cannot read the kept output", NULL);
    rs->ended = 1;
    return;
  }
  if (n == 0 && rs->started) {
    grpc_slice_unref(chunk);
    send_locked(rs, NULL, 1);
    return;
  }
  rdev_v1_OutputChunk c = rdev_v1_OutputChunk_init_zero;
  c.total = rs->total;
  grpc_slice part = grpc_slice_sub(chunk, 0, n);
  grpc_byte_buffer *out = rdev_wire_encode(rdev_v1_OutputChunk_fields, &c, &part);
  grpc_slice_unref(part);
  grpc_slice_unref(chunk);
  send_locked(rs, out, n == 0); /* an empty output: one empty chunk, then the end */
}

static void on_send(srv_op_t *op, int ok) {
  rstream_t *rs = (rstream_t *)((char *)op - offsetof(rstream_t, send_op));
  pthread_mutex_lock(&rs->mu);
  rs->sending = 0;
  if (rs->out) grpc_byte_buffer_destroy(rs->out);
  rs->out = NULL;
  if (!ok) rs->ended = 1; /* the client is gone */
  if (rs->mode == MODE_WATCH)
    pump_status_locked(rs);
  else if (rs->mode == MODE_FETCH)
    pump_file_locked(rs);
  int ended = rs->ended && !rs->sending;
  pthread_mutex_unlock(&rs->mu);
  if (ended && rs->mode == MODE_WATCH) rs_unwatch(rs);
  rs_unref(rs);
}

/* On the close batch: the call is over (done, or the client went away). */
static void on_close(srv_op_t *op, int ok) {
  rstream_t *rs = (rstream_t *)((char *)op - offsetof(rstream_t, close_op));
  (void)ok;
  if (rs->mode == MODE_WATCH) rs_unwatch(rs);
  pthread_mutex_lock(&rs->mu);
  rs->ended = 1;
  pthread_mutex_unlock(&rs->mu);
  rs_unref(rs);
}

/* Under jobs->mu (job_state.c): the job changed. */
static void on_wake(srv_watch_t *w) {
  rstream_t *rs = (rstream_t *)w;
  pthread_mutex_lock(&rs->mu);
  rs->pending = rs->job->st;
  rs->dirty = 1;
  pump_status_locked(rs);
  pthread_mutex_unlock(&rs->mu);
}

static rstream_t *rs_new(grpc_call *call, srv_job_t *job, int mode) {
  rstream_t *rs = calloc(1, sizeof *rs);
  if (!rs) return NULL;
  rs->call = call;
  rs->job = job;
  rs->mode = mode;
  rs->w.wake = on_wake;
  rs->send_op.done = on_send;
  rs->close_op.done = on_close;
  rs->details = grpc_empty_slice();
  pthread_mutex_init(&rs->mu, NULL);
  atomic_init(&rs->refs, 1); /* the close batch's */
  return rs;
}

/* Watches for the call's end (watch and fetch), which takes rs's first
 * reference. 0, or -1 (that reference dropped; the caller holds another). */
static int rs_start(rstream_t *rs) {
  grpc_op op = {.op = GRPC_OP_RECV_CLOSE_ON_SERVER};
  op.data.recv_close_on_server.cancelled = &rs->cancelled;
  RDEV_HANDOFF_GIVE(&rs->close_op);
  if (grpc_call_start_batch(rs->call, &op, 1, &rs->close_op, NULL) == GRPC_CALL_OK) return 0;
  srv_log(SRV_LOG_ERROR, "job call: cannot watch for its end");
  grpc_call_cancel_with_status(rs->call, GRPC_STATUS_INTERNAL, "server error", NULL);
  pthread_mutex_lock(&rs->mu);
  rs->ended = 1;
  pthread_mutex_unlock(&rs->mu);
  rs_unref(rs);
  return -1;
}

/* ---- the calls ---------------------------------------------------------------- */

static void respond_status(grpc_call *call, srv_job_t *job) {
  rdev_v1_JobStatus st;
  srv_job_status(job, &st, 0);
  srv_call_respond(call, rdev_wire_encode(rdev_v1_JobStatus_fields, &st, NULL), GRPC_STATUS_OK, NULL);
}

static void submit(srv_t *srv, srv_tenant_t *t, grpc_call *call, grpc_byte_buffer *payload) {
  rdev_v1_SubmitJobRequest *q = calloc(1, sizeof *q);
  rdev_v1_SubmitJobReply *r = calloc(1, sizeof *r);
  const char *err = NULL;
  if (!q || !r) {
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server memory");
  } else if (!rdev_wire_decode_text(payload, rdev_v1_SubmitJobRequest_fields, q, &err)) {
    pb_release(rdev_v1_SubmitJobRequest_fields, q);
    char msg[160];
    snprintf(msg, sizeof msg, "malformed SubmitJobRequest (%s)", err ? err : "?");
    srv_call_respond(call, NULL, GRPC_STATUS_INVALID_ARGUMENT, msg);
  } else {
    char msg[320];
    int rc = srv_job_submit(srv->jobs, t, &q->spec, r, msg, sizeof msg);
    if (rc == GRPC_STATUS_OK)
      srv_call_respond(call, rdev_wire_encode(rdev_v1_SubmitJobReply_fields, r, NULL), GRPC_STATUS_OK, NULL);
    else
      srv_call_respond(call, NULL, (grpc_status_code)rc, msg);
  }
  free(q);
  free(r);
}

static void list(srv_t *srv, srv_tenant_t *t, grpc_call *call) {
  enum { MAX = RDEV_WIRE_MAX_JOBS_LISTED }; /* the client refuses a longer list */
  rdev_v1_ListJobsReply r = rdev_v1_ListJobsReply_init_zero;
  r.jobs = calloc(MAX, sizeof *r.jobs);
  if (!r.jobs) {
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server memory");
    return;
  }
  r.jobs_count = (pb_size_t)srv_jobs_list(srv->jobs, t, r.jobs, MAX);
  srv_call_respond(call, rdev_wire_encode(rdev_v1_ListJobsReply_fields, &r, NULL), GRPC_STATUS_OK, NULL);
  free(r.jobs);
}

static void fetch(srv_t *srv, srv_job_t *job, grpc_call *call, const char *output) {
  rdev_v1_JobStatus st;
  srv_job_status(job, &st, 1);
  const rdev_v1_JobKept *k = NULL;
  for (pb_size_t i = 0; i < st.kept_count && !k; i++)
    if (!strcmp(st.kept[i].name, output) && st.kept[i].expires_ms) k = &st.kept[i];
  char path[512];
  FILE *f = NULL;
  if (k) {
    srv_job_store_out_path(srv->jobs, job->id, output, path, sizeof path);
    f = fopen(path, "rb");
  }
  if (!f) {
    srv_call_respond(call, NULL, GRPC_STATUS_NOT_FOUND, "no kept output of that name (never kept, or expired)");
    srv_job_unref(job);
    return;
  }
  rstream_t *rs = rs_new(call, job, MODE_FETCH);
  if (!rs) {
    fclose(f);
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server memory");
    srv_job_unref(job);
    return;
  }
  rs->f = f;
  rs->total = k->bytes;
  atomic_fetch_add(&rs->refs, 1); /* ours while we set it going */
  if (rs_start(rs) == 0) {
    pthread_mutex_lock(&rs->mu);
    pump_file_locked(rs);
    pthread_mutex_unlock(&rs->mu);
  }
  rs_unref(rs);
}

void srv_job_call(srv_t *srv, int which, srv_tenant_t *t, grpc_call *call, grpc_byte_buffer *payload) {
  if (!srv->jobs) {
    srv_call_respond(call, NULL, GRPC_STATUS_FAILED_PRECONDITION, "this rdevd keeps no jobs (start it with --job-dir)");
    return;
  }
  if (which == SRV_JOB_SUBMIT) return submit(srv, t, call, payload);
  if (which == SRV_JOB_LIST) return list(srv, t, call);
  const char *err = NULL;
  char id[34] = "", output[32] = "";
  int ok;
  if (which == SRV_JOB_FETCH) {
    rdev_v1_FetchOutputRequest q = rdev_v1_FetchOutputRequest_init_zero;
    ok = rdev_wire_decode_text(payload, rdev_v1_FetchOutputRequest_fields, &q, &err);
    memcpy(id, q.id, sizeof q.id);
    memcpy(output, q.output, sizeof q.output);
  } else {
    rdev_v1_JobRequest q = rdev_v1_JobRequest_init_zero;
    ok = rdev_wire_decode_text(payload, rdev_v1_JobRequest_fields, &q, &err);
    memcpy(id, q.id, sizeof q.id);
  }
  if (!ok) {
    char msg[160];
    snprintf(msg, sizeof msg, "malformed request (%s)", err ? err : "?");
    srv_call_respond(call, NULL, GRPC_STATUS_INVALID_ARGUMENT, msg);
    return;
  }
  srv_job_t *job = srv_job_find(srv->jobs, t, id);
  if (!job) {
    srv_call_respond(call, NULL, GRPC_STATUS_NOT_FOUND, "no such job");
    return;
  }
  if (which == SRV_JOB_FETCH) return fetch(srv, job, call, output);
  if (which == SRV_JOB_GET) {
    respond_status(call, job);
    srv_job_unref(job);
    return;
  }
  if (which == SRV_JOB_CANCEL) {
    srv_job_cancel(job, call);
    srv_job_unref(job);
    return;
  }
  rstream_t *rs = rs_new(call, job, MODE_WATCH);
  if (!rs) {
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server memory");
    srv_job_unref(job);
    return;
  }
  atomic_fetch_add(&rs->refs, 1); /* ours while we set it going */
  if (rs_start(rs) == 0) {
    atomic_fetch_add(&rs->refs, 1); /* the watch's (rs_unwatch) */
    atomic_store(&rs->watching, 1);
    if (srv_job_watch(job, &rs->w) != 0) {
      atomic_store(&rs->watching, 0);
      rs_unref(rs);
      grpc_call_cancel_with_status(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "too many watchers of this job", NULL);
    }
  }
  rs_unref(rs);
}
