/*
 * server/jobs/job_exec.c — running one job (jobs.h) on its runner thread. The
 * job's device work goes through an in-process session of its tenant
 * (local.c): requests are encoded and fed as a client's would be, replies
 * come back to on_reply. So a job gets every check a client gets (ranges,
 * kernels and their arguments, quotas, slots), and closing the session
 * discards whatever it left queued.
 *
 * This file owns that session: the replies (on_reply), the requests
 * (job_exec.h), the buffers, loading the binaries, and the run itself:
 * allocate the buffers; fetch the inputs and binaries, all at once, and
 * check their sha256 (job_exec_transfer.c); load the binaries; queue the
 * steps, each followed by a synchronize of its stream whose reply says how
 * that step ended (job_exec_steps.c); then deliver each output, to its URL
 * or to a kept file (job_exec_transfer.c). Cancel and the timeout are seen
 * within 50 ms by every wait.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "job_exec.h"
#include "rdev/clock.h"

#define WAIT_SLICE_MS 50

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

int srv_job_send_req(ex_t *x, rdev_v1_Request *q, const grpc_slice *payload, int wait_for_reply) {
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

int srv_job_wait_until(ex_t *x, int (*done)(ex_t *x)) {
  int rc = RDEV_OK;
  while (!done(x) && !(rc = stop_now(x))) {
    struct timespec dl = rdev_clock_deadline_ns((uint64_t)WAIT_SLICE_MS * 1000000u);
    pthread_cond_timedwait(&x->cv, &x->mu, &dl);
  }
  return rc;
}

static int got_reply(ex_t *x) { return x->got; }

int srv_job_request(ex_t *x, rdev_v1_Request *q) {
  int rc = srv_job_send_req(x, q, NULL, 1);
  if (rc) return rc;
  pthread_mutex_lock(&x->mu);
  rc = srv_job_wait_until(x, got_reply);
  if (!rc) rc = x->status;
  pthread_mutex_unlock(&x->mu);
  return rc;
}

/* ---- the phases ---------------------------------------------------------------- */

static int alloc_buffers(run_t *r) {
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  for (pb_size_t i = 0; i < spec->buffers_count; i++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = rdev_v1_Request_malloc_tag;
    q.op.malloc.device = spec->buffers[i].device;
    q.op.malloc.size = spec->buffers[i].size;
    int rc = srv_job_request(r->x, &q);
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

/* Loads the fetched binaries into the job's session (BinaryLoad). */
static int load_binaries(run_t *r) {
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  for (pb_size_t i = 0; i < spec->binaries_count; i++) {
    rdev_v1_Request q = rdev_v1_Request_init_zero;
    q.which_op = rdev_v1_Request_binary_load_tag;
    grpc_slice data = grpc_slice_from_copied_buffer((const char *)r->bin[i], r->bin_len[i]);
    int rc = srv_job_send_req(r->x, &q, &data, 1);
    grpc_slice_unref(data);
    if (!rc) {
      pthread_mutex_lock(&r->x->mu);
      rc = srv_job_wait_until(r->x, got_reply);
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
  } else if (!(rc = alloc_buffers(r)) && !(rc = srv_job_fetch_inputs(r, allow)) && !(rc = load_binaries(r))) {
    srv_job_enter(job, rdev_v1_JobState_RUNNING);
    if (!(rc = srv_job_run_steps(r))) {
      srv_job_enter(job, rdev_v1_JobState_DELIVERING);
      if (!(rc = srv_job_deliver_outputs(r, allow))) srv_job_enter(job, rdev_v1_JobState_SUCCEEDED);
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
