/*
 * client/lib/job.c — the job calls (rdev/job.h): a connection of their own
 * to rdevd (a channel and the tenant's credentials, no Session call), the
 * unary SubmitJob, GetJob, CancelJob, ListJobs and Info through info.c's
 * cl_unary_call (ListJobs capped before decoding), and the server-streaming
 * WatchJob and FetchOutput, each on a completion queue of its own; a watch
 * that lost its server connects and watches again. Owns the rdev_jobs
 * object; calls info.c (unary calls), auth.c and error.c.
 */
#include "rdev/job.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

#define JOB_DEADLINE_MS 10000
#define JOB_CANCEL_DEADLINE_MS 60000 /* CancelJob answers once the job is final */
#define JOB_MAX_ID 32                /* JobRequest.id: max_size 33 */
#define JOB_MAX_OUTPUT 31            /* FetchOutputRequest.output: max_size 32 */

struct rdev_jobs {
  grpc_channel *channel;
  cl_auth_t auth;
  volatile sig_atomic_t interrupted; /* rdev_jobs_interrupt */
};

void rdev_jobs_interrupt(rdev_jobs_t *j) {
  if (j) j->interrupted = 1;
}

const char *rdev_jobs_last_error(void) { return rdev_session_last_error(); }

int rdev_job_state_final(rdev_v1_JobState state) {
  return state == rdev_v1_JobState_SUCCEEDED || state == rdev_v1_JobState_FAILED || state == rdev_v1_JobState_CANCELLED;
}

const char *rdev_job_state_name(rdev_v1_JobState state) {
  static const char *const names[] = {"unspecified", "queued",    "fetching", "running",
                                      "delivering",  "succeeded", "failed",   "cancelled"};
  return (unsigned)state < sizeof names / sizeof names[0] ? names[state] : "unknown";
}

/* The rdev status of a job call that ended with gRPC status g, where the
 * session's mapping (cl_grpc_status, which gave rc) does not fit jobs. */
static int job_status(grpc_status_code g, int rc) {
  switch (g) {
    case GRPC_STATUS_FAILED_PRECONDITION: return RDEV_API_NOT_SUPPORT; /* rdevd keeps no jobs */
    case GRPC_STATUS_DEADLINE_EXCEEDED: return RDEV_RT_WAIT_TIMEOUT;
    default: return rc; /* NOT_FOUND: RDEV_INVALID_RESOURCE_HANDLE, as for sessions */
  }
}

static int unary_capped(rdev_jobs_t *j, const char *method, int64_t deadline_ms, const pb_msgdesc_t *req_fields,
                        const void *req, const pb_msgdesc_t *rep_fields, void *rep, const cl_reply_cap_t *cap) {
  grpc_status_code g;
  int rc = cl_unary_call(j->channel, &j->auth, method, deadline_ms, req_fields, req, rep_fields, rep, cap, &g);
  return rc ? job_status(g, rc) : RDEV_OK;
}

/* The job calls' replies have no pointer field but ListJobsReply.jobs. */
static int unary(rdev_jobs_t *j, const char *method, int64_t deadline_ms, const pb_msgdesc_t *req_fields,
                 const void *req, const pb_msgdesc_t *rep_fields, void *rep) {
  return unary_capped(j, method, deadline_ms, req_fields, req, rep_fields, rep, NULL);
}

/* The connect timeout as rdev_session_open takes it. */
static int64_t connect_timeout_ms(const rdev_options_t *opts) {
  if (opts && opts->connect_timeout_ms > 0) return opts->connect_timeout_ms;
  const char *env = getenv("RDEV_CONNECT_TIMEOUT_MS");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end == '\0' && v > 0) return v;
  }
  return 10000;
}

/* Waits until ch is connected, up to timeout_ms; false when it was not. */
static bool wait_connected(grpc_channel *ch, int64_t timeout_ms) {
  gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  bool ready = false;
  for (;;) {
    grpc_connectivity_state st = grpc_channel_check_connectivity_state(ch, 1);
    if (st == GRPC_CHANNEL_READY) {
      ready = true;
      break;
    }
    if (st == GRPC_CHANNEL_SHUTDOWN) break;
    /* Completes when the state leaves st (a failed attempt goes on to the
     * next after the backoff) or at the deadline (success 0). */
    grpc_channel_watch_connectivity_state(ch, st, deadline, cq, (void *)1);
    grpc_event ev = grpc_completion_queue_pluck(cq, (void *)1, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (ev.type != GRPC_OP_COMPLETE || !ev.success) break;
  }
  grpc_completion_queue_shutdown(cq);
  grpc_completion_queue_destroy(cq);
  return ready;
}

void rdev_jobs_close(rdev_jobs_t *j) {
  if (!j) return;
  if (j->channel) grpc_channel_destroy(j->channel);
  cl_auth_release(&j->auth);
  free(j);
  grpc_shutdown();
}

int rdev_jobs_open(const char *target, const rdev_options_t *opts, rdev_jobs_t **out) {
  if (!out) return cl_error(RDEV_INVALID_PARAM, "out is NULL");
  *out = NULL;
  if (!target || !*target) return cl_error(RDEV_INVALID_PARAM, "no target");
  int64_t timeout_ms = connect_timeout_ms(opts);
  rdev_jobs_t *j = calloc(1, sizeof *j);
  if (!j) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  grpc_init();
  /* Output chunks of 1 MiB and a full job list fit the default message
   * limits; reconnect quickly to a server that is just starting (open
   * waits for it up to the connect timeout); no retries (SubmitJob is not
   * idempotent). */
  static const cl_int_arg_t iargs[] = {
      {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 4 * (int)RDEV_WIRE_MAX_CHUNK},
      {GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100},
      {GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100},
      {GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000},
      {GRPC_ARG_ENABLE_RETRIES, 0},
      /* A watch or fetch sends nothing while it waits: pings find a server
       * that froze or vanished (rdevd takes pings this often). */
      {GRPC_ARG_KEEPALIVE_TIME_MS, 10000},
      {GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000},
      {GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0},
  };
  int rc = cl_channel_create(target, opts, iargs, (int)(sizeof iargs / sizeof iargs[0]), &j->auth, &j->channel);
  if (rc) {
    rdev_jobs_close(j);
    return rc;
  }
  if (!wait_connected(j->channel, timeout_ms)) {
    rdev_jobs_close(j);
    return cl_error(RDEV_UNAVAILABLE, "cannot reach rdevd at %s within %lld ms", target, (long long)timeout_ms);
  }
  *out = j;
  return RDEV_OK;
}

int rdev_jobs_info(rdev_jobs_t *j, rdev_v1_InfoReply *out) {
  if (!j || !out) return cl_error(RDEV_INVALID_PARAM, "jobs or out is NULL");
  rdev_v1_InfoRequest req = rdev_v1_InfoRequest_init_zero;
  memset(out, 0, sizeof *out);
  return unary(j, RDEV_WIRE_METHOD_INFO, JOB_DEADLINE_MS, rdev_v1_InfoRequest_fields, &req, rdev_v1_InfoReply_fields,
               out);
}

int rdev_job_submit(rdev_jobs_t *j, const rdev_v1_JobSpec *spec, rdev_v1_SubmitJobReply *out) {
  if (!j || !spec || !out) return cl_error(RDEV_INVALID_PARAM, "jobs, spec or out is NULL");
  /* A JobSpec is some 40 KiB: not on the caller's stack. Its URL pointers
   * are the caller's, encoded from there. */
  rdev_v1_SubmitJobRequest *req = malloc(sizeof *req);
  if (!req) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  req->has_spec = true;
  req->spec = *spec;
  memset(out, 0, sizeof *out);
  int rc = unary(j, RDEV_WIRE_METHOD_SUBMIT_JOB, JOB_DEADLINE_MS, rdev_v1_SubmitJobRequest_fields, req,
                 rdev_v1_SubmitJobReply_fields, out);
  free(req);
  return rc;
}

/* Fills req with id, checked. */
static int job_request(rdev_v1_JobRequest *req, const char *id) {
  if (!id || !*id) return cl_error(RDEV_INVALID_PARAM, "no job id");
  size_t n = strlen(id);
  if (n > JOB_MAX_ID) return cl_error(RDEV_INVALID_PARAM, "job id too long (%zu bytes; at most %d)", n, JOB_MAX_ID);
  memset(req, 0, sizeof *req);
  memcpy(req->id, id, n);
  return RDEV_OK;
}

static int job_status_call(rdev_jobs_t *j, const char *method, int64_t deadline_ms, const char *id,
                           rdev_v1_JobStatus *out) {
  if (!j || !out) return cl_error(RDEV_INVALID_PARAM, "jobs or out is NULL");
  rdev_v1_JobRequest req;
  int rc = job_request(&req, id);
  if (rc) return rc;
  memset(out, 0, sizeof *out);
  return unary(j, method, deadline_ms, rdev_v1_JobRequest_fields, &req, rdev_v1_JobStatus_fields, out);
}

int rdev_job_get(rdev_jobs_t *j, const char *id, rdev_v1_JobStatus *out) {
  return job_status_call(j, RDEV_WIRE_METHOD_GET_JOB, JOB_DEADLINE_MS, id, out);
}

int rdev_job_cancel(rdev_jobs_t *j, const char *id, rdev_v1_JobStatus *out) {
  return job_status_call(j, RDEV_WIRE_METHOD_CANCEL_JOB, JOB_CANCEL_DEADLINE_MS, id, out);
}

int rdev_job_list(rdev_jobs_t *j, rdev_v1_ListJobsReply *out) {
  if (out) memset(out, 0, sizeof *out);
  if (!j || !out) return cl_error(RDEV_INVALID_PARAM, "jobs or out is NULL");
  rdev_v1_ListJobsRequest req = rdev_v1_ListJobsRequest_init_zero;
  /* The decoder allocates a JobStatus (some 3 KiB) per entry: a 4 MiB reply
   * of empty entries would take 200 MB (65535 of them; pb_size_t is 16
   * bits). A list longer than rdevd sends is refused before that. On a
   * malformed reply, pb_decode released what it had allocated. */
  static const cl_reply_cap_t cap = {rdev_v1_ListJobsReply_jobs_tag, RDEV_WIRE_MAX_JOBS_LISTED, "job list", "jobs"};
  return unary_capped(j, RDEV_WIRE_METHOD_LIST_JOBS, JOB_DEADLINE_MS, rdev_v1_ListJobsRequest_fields, &req,
                      rdev_v1_ListJobsReply_fields, out, &cap);
}

/* ---- server streams ------------------------------------------------------ */

/* Handles one message of a server stream: returns non-zero to end the call
 * (cancelled) with that value (last error set when it is an rdev status),
 * or 0 and sets *done to end it with RDEV_OK, or 0 to read on. */
typedef int (*stream_msg_fn)(void *arg, grpc_byte_buffer *bb, bool *done);

enum { TAG_START = 1, TAG_STATUS, TAG_RECV };

/* A stream's receive waits in slices this long, to see rdev_jobs_interrupt. */
#define SLICE_MS 200

static gpr_timespec slice_deadline(void) {
  return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(SLICE_MS, GPR_TIMESPAN));
}

/* Runs a server-streaming call of method with req, no deadline: each
 * message the server sends goes to on_msg until the stream ends (then
 * on_end(arg) says the result when the server ended it with OK) or on_msg
 * ends it. *gstatus (may be NULL) gets the status the call ended with when
 * it ended of itself (the server's, or gRPC's for a lost connection),
 * GRPC_STATUS__DO_NOT_USE when it never started or we ended it (on_msg, an
 * interrupt). */
static int server_stream(rdev_jobs_t *j, const char *method, const pb_msgdesc_t *req_fields, const void *req,
                         stream_msg_fn on_msg, int (*on_end)(void *arg), void *arg, grpc_status_code *gstatus) {
  if (gstatus) *gstatus = GRPC_STATUS__DO_NOT_USE;
  grpc_byte_buffer *send = rdev_wire_encode(req_fields, req, NULL);
  if (!send) return cl_error(RDEV_INTERNAL_ERROR, "cannot encode request");
  grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
  grpc_call *call =
      grpc_channel_create_call(j->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, grpc_slice_from_static_string(method),
                               NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  grpc_metadata_array init_md, trailing_md;
  grpc_metadata_array_init(&init_md);
  grpc_metadata_array_init(&trailing_md);
  grpc_status_code status = GRPC_STATUS_UNKNOWN;
  grpc_slice details = grpc_empty_slice();
  int rc = RDEV_OK;
  bool started = false, status_started = false;

  if (!call) {
    rc = cl_error(RDEV_UNAVAILABLE, "cannot create call %s", method);
    goto out;
  }
  grpc_op ops[4];
  memset(ops, 0, sizeof ops);
  /* Not waiting for a connection that is down: open made one. */
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
  ops[0].data.send_initial_metadata.count = j->auth.n;
  ops[0].data.send_initial_metadata.metadata = &j->auth.md;
  ops[1].op = GRPC_OP_SEND_MESSAGE;
  ops[1].data.send_message.send_message = send;
  ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
  ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
  if (grpc_call_start_batch(call, ops, 4, CL_TAG(TAG_START), NULL) != GRPC_CALL_OK) {
    rc = cl_error(RDEV_INTERNAL_ERROR, "cannot start call %s", method);
    goto out;
  }
  started = true;
  grpc_op st;
  memset(&st, 0, sizeof st);
  st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
  st.data.recv_status_on_client.trailing_metadata = &trailing_md;
  st.data.recv_status_on_client.status = &status;
  st.data.recv_status_on_client.status_details = &details;
  if (grpc_call_start_batch(call, &st, 1, CL_TAG(TAG_STATUS), NULL) != GRPC_CALL_OK) {
    grpc_call_cancel(call, NULL);
    rc = cl_error(RDEV_INTERNAL_ERROR, "cannot start call %s", method);
    goto out;
  }
  status_started = true;
  grpc_completion_queue_pluck(cq, CL_TAG(TAG_START), gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  started = false;

  bool ended_by_us = false;
  for (;;) {
    grpc_byte_buffer *recv = NULL;
    grpc_op r;
    memset(&r, 0, sizeof r);
    r.op = GRPC_OP_RECV_MESSAGE;
    r.data.recv_message.recv_message = &recv;
    if (grpc_call_start_batch(call, &r, 1, CL_TAG(TAG_RECV), NULL) != GRPC_CALL_OK) {
      rc = cl_error(RDEV_INTERNAL_ERROR, "%s: cannot receive", method);
      ended_by_us = true;
      break;
    }
    grpc_event ev;
    while ((ev = grpc_completion_queue_pluck(cq, CL_TAG(TAG_RECV), slice_deadline(), NULL)).type == GRPC_QUEUE_TIMEOUT)
      if (j->interrupted && !ended_by_us) {
        grpc_call_cancel(call, NULL); /* the receive then completes, failed */
        rc = cl_error(RDEV_CANCELLED, "%s: interrupted", method);
        ended_by_us = true;
      }
    if (ended_by_us) break;
    if (!ev.success || !recv) break; /* the stream ended: its status says how */
    bool done = false;
    rc = on_msg(arg, recv, &done);
    grpc_byte_buffer_destroy(recv);
    if (rc || done) {
      ended_by_us = true;
      break;
    }
  }
  if (ended_by_us) grpc_call_cancel(call, NULL);
  grpc_completion_queue_pluck(cq, CL_TAG(TAG_STATUS), gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  status_started = false;
  if (!ended_by_us) {
    if (gstatus) *gstatus = status;
    if (status != GRPC_STATUS_OK) {
      char *d = grpc_slice_to_c_string(details);
      rc = job_status(status, cl_grpc_status(status));
      cl_error(rc, "%s: %s (gRPC status %d)", method, *d ? d : "failed", (int)status);
      gpr_free(d);
    } else {
      rc = on_end(arg);
    }
  }

out:
  if (call) {
    if (started || status_started) grpc_call_cancel(call, NULL);
    if (started) grpc_completion_queue_pluck(cq, CL_TAG(TAG_START), gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (status_started) grpc_completion_queue_pluck(cq, CL_TAG(TAG_STATUS), gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_call_unref(call);
  }
  grpc_completion_queue_shutdown(cq);
  grpc_completion_queue_destroy(cq);
  grpc_byte_buffer_destroy(send);
  grpc_metadata_array_destroy(&init_md);
  grpc_metadata_array_destroy(&trailing_md);
  grpc_slice_unref(details);
  return rc;
}

typedef struct {
  rdev_job_watch_fn fn;
  void *user;
  bool have_last; /* fn saw last */
  bool got;       /* this stream brought a message */
  bool news;      /* ...and fn a status it had not seen */
  rdev_v1_JobStatus st, last;
} watch_t;

static int watch_msg(void *arg, grpc_byte_buffer *bb, bool *done) {
  watch_t *w = arg;
  const char *err = NULL;
  memset(&w->st, 0, sizeof w->st); /* zeroed, so that equal statuses are equal bytes */
  if (!rdev_wire_decode(bb, rdev_v1_JobStatus_fields, &w->st, &err))
    return cl_error(RDEV_PROTOCOL, "%s: malformed status (%s)", RDEV_WIRE_METHOD_WATCH_JOB, err ? err : "?");
  w->got = true;
  /* A watch again after a lost connection starts with the status now:
   * not passed on when fn saw it last. */
  if (!w->have_last || memcmp(&w->st, &w->last, sizeof w->st) != 0) {
    int u = w->fn(w->user, &w->st);
    if (u) return u;
    w->last = w->st;
    w->have_last = w->news = true;
  }
  *done = rdev_job_state_final(w->st.state);
  return RDEV_OK;
}

static int watch_end(void *arg) {
  return cl_error(RDEV_UNAVAILABLE, "%s: the server ended the watch before the job was final",
                  RDEV_WIRE_METHOD_WATCH_JOB);
}

static int64_t mono_ms(void) {
  gpr_timespec t = gpr_now(GPR_CLOCK_MONOTONIC);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Sleeps ms in slices, seeing rdev_jobs_interrupt: RDEV_CANCELLED when it came. */
static int nap(rdev_jobs_t *j, int64_t ms) {
  for (int64_t end = mono_ms() + ms, left; (left = end - mono_ms()) > 0;) {
    if (j->interrupted) return cl_error(RDEV_CANCELLED, "%s: interrupted", RDEV_WIRE_METHOD_WATCH_JOB);
    gpr_sleep_until(gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                 gpr_time_from_millis(left < SLICE_MS ? left : SLICE_MS, GPR_TIMESPAN)));
  }
  return j->interrupted ? cl_error(RDEV_CANCELLED, "%s: interrupted", RDEV_WIRE_METHOD_WATCH_JOB) : RDEV_OK;
}

/* Waits until j's channel is connected or the monotonic time `until`:
 * RDEV_OK, RDEV_UNAVAILABLE, or RDEV_CANCELLED when interrupted. */
static int reconnect(rdev_jobs_t *j, int64_t until) {
  for (int64_t left; (left = until - mono_ms()) > 0;) {
    if (j->interrupted) return cl_error(RDEV_CANCELLED, "%s: interrupted", RDEV_WIRE_METHOD_WATCH_JOB);
    if (wait_connected(j->channel, left < SLICE_MS ? left : SLICE_MS)) return RDEV_OK;
  }
  return RDEV_UNAVAILABLE;
}

/* "60 s", or "1500 ms" */
static const char *fmt_ms(int64_t ms, char buf[32]) {
  snprintf(buf, 32, ms % 1000 ? "%lld ms" : "%lld s", (long long)(ms % 1000 ? ms : ms / 1000));
  return buf;
}

/* The backoff between tries to watch again: doubling to its most. */
#define WATCH_BACKOFF_FIRST_MS 100
#define WATCH_BACKOFF_MAX_MS 2000

int rdev_job_watch_within(rdev_jobs_t *j, const char *id, int64_t reconnect_ms, rdev_job_watch_fn fn, void *user) {
  if (!j || !fn) return cl_error(RDEV_INVALID_PARAM, "jobs or fn is NULL");
  if (reconnect_ms < 0) return cl_error(RDEV_INVALID_PARAM, "reconnect_ms < 0");
  rdev_v1_JobRequest req;
  int rc = job_request(&req, id);
  if (rc) return rc;
  watch_t *w = calloc(1, sizeof *w);
  if (!w) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  w->fn = fn;
  w->user = user;
  int64_t lost_at = 0, backoff = WATCH_BACKOFF_FIRST_MS;
  bool lost_before = false; /* lost_at: when the watch was lost, no server having answered since */
  for (;;) {
    grpc_status_code g;
    w->got = w->news = false;
    rc = server_stream(j, RDEV_WIRE_METHOD_WATCH_JOB, rdev_v1_JobRequest_fields, &req, watch_msg, watch_end, w, &g);
    /* Lost: the connection (UNAVAILABLE), or a server going down ended the
     * call (CANCELLED) or the watch before the job was final (OK). Any
     * other end is the watch's result. */
    bool lost = rc && (g == GRPC_STATUS_UNAVAILABLE || g == GRPC_STATUS_CANCELLED || g == GRPC_STATUS_OK);
    if (!lost || !reconnect_ms) break;
    int64_t now = mono_ms();
    if (w->got || !lost_before) lost_at = now; /* a server answered this try: a new loss */
    lost_before = true;
    if (w->news) backoff = WATCH_BACKOFF_FIRST_MS;
    char why[CL_MSG_MAX], t[32];
    snprintf(why, sizeof why, "%s", rdev_session_last_error());
    int64_t until = lost_at + reconnect_ms;
    int64_t pause = backoff < until - now ? backoff : until - now;
    backoff = backoff * 2 < WATCH_BACKOFF_MAX_MS ? backoff * 2 : WATCH_BACKOFF_MAX_MS;
    if (pause > 0 && (rc = nap(j, pause)) != RDEV_OK) break;
    rc = reconnect(j, until);
    if (rc == RDEV_CANCELLED) break;
    if (rc) {
      rc = cl_error(RDEV_UNAVAILABLE, "%s: lost rdevd and no rdevd answered within %s (%s)", RDEV_WIRE_METHOD_WATCH_JOB,
                    fmt_ms(reconnect_ms, t), why);
      break;
    }
  }
  free(w);
  return rc;
}

int rdev_job_watch(rdev_jobs_t *j, const char *id, rdev_job_watch_fn fn, void *user) {
  return rdev_job_watch_within(j, id, RDEV_JOB_WATCH_RECONNECT_MS, fn, user);
}

typedef struct {
  rdev_job_fetch_fn fn;
  void *user;
  uint64_t total, got;
  bool have_total;
} fetch_t;

static int fetch_msg(void *arg, grpc_byte_buffer *bb, bool *done) {
  fetch_t *f = arg;
  rdev_v1_OutputChunk c = rdev_v1_OutputChunk_init_zero;
  rdev_wire_bytes_t data = {.max = RDEV_WIRE_MAX_CHUNK};
  rdev_wire_bytes_decoder(&c.data, &data);
  const char *err = NULL;
  int rc = RDEV_OK;
  if (!rdev_wire_decode(bb, rdev_v1_OutputChunk_fields, &c, &err)) {
    rc = cl_error(RDEV_PROTOCOL, "%s: malformed chunk (%s)", RDEV_WIRE_METHOD_FETCH_OUTPUT,
                  data.oversize ? "over 1 MiB"
                  : err         ? err
                                : "?");
  } else if (f->have_total && c.total != f->total) {
    rc = cl_error(RDEV_PROTOCOL, "%s: the output's size changed from %llu to %llu bytes", RDEV_WIRE_METHOD_FETCH_OUTPUT,
                  (unsigned long long)f->total, (unsigned long long)c.total);
  } else if (data.len > c.total - f->got) { /* f->got <= f->total == c.total (or both 0) */
    rc = cl_error(RDEV_PROTOCOL, "%s: more bytes than the output's %llu", RDEV_WIRE_METHOD_FETCH_OUTPUT,
                  (unsigned long long)c.total);
  } else {
    f->have_total = true;
    f->total = c.total;
    f->got += data.len;
    if (data.len) rc = f->fn(f->user, data.data, data.len, c.total);
  }
  free(data.data);
  return rc;
}

static int fetch_end(void *arg) {
  fetch_t *f = arg;
  if (!f->have_total) /* rdevd sends one chunk at least, an empty one for an empty output */
    return cl_error(RDEV_PROTOCOL, "%s: the stream ended without a chunk", RDEV_WIRE_METHOD_FETCH_OUTPUT);
  if (f->got != f->total)
    return cl_error(RDEV_PROTOCOL, "%s: the stream ended after %llu of the output's %llu bytes",
                    RDEV_WIRE_METHOD_FETCH_OUTPUT, (unsigned long long)f->got, (unsigned long long)f->total);
  return RDEV_OK;
}

int rdev_job_fetch(rdev_jobs_t *j, const char *id, const char *output, rdev_job_fetch_fn fn, void *user) {
  if (!j || !fn) return cl_error(RDEV_INVALID_PARAM, "jobs or fn is NULL");
  rdev_v1_JobRequest jr;
  int rc = job_request(&jr, id);
  if (rc) return rc;
  if (!output || !*output) return cl_error(RDEV_INVALID_PARAM, "no output name");
  size_t n = strlen(output);
  if (n > JOB_MAX_OUTPUT)
    return cl_error(RDEV_INVALID_PARAM, "output name too long (%zu bytes; at most %d)", n, JOB_MAX_OUTPUT);
  rdev_v1_FetchOutputRequest req = rdev_v1_FetchOutputRequest_init_zero;
  memcpy(req.id, jr.id, sizeof req.id);
  memcpy(req.output, output, n);
  fetch_t f = {.fn = fn, .user = user};
  return server_stream(j, RDEV_WIRE_METHOD_FETCH_OUTPUT, rdev_v1_FetchOutputRequest_fields, &req, fetch_msg, fetch_end,
                       &f, NULL);
}
