/*
 * server/jobs/job_exec.c — running one job (jobs.h) on its runner thread,
 * over an in-process session of its tenant (job_exec_session.c drives it).
 * This file owns the run itself and its two short phases: allocate the
 * buffers; fetch the inputs and binaries, all at once, and check their
 * sha256 (job_exec_transfer.c); load the binaries; queue the steps, each
 * followed by a synchronize of its stream whose reply says how that step
 * ended (job_exec_steps.c); then deliver each output, to its URL or to a
 * kept file (job_exec_transfer.c). Cancel and the timeout are seen within
 * 50 ms by every wait; the run says which stopped it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "job_exec_steps.h"
#include "job_exec_transfer.h"
#include "rdev/clock.h"

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
      rc = srv_job_wait_until(r->x, srv_job_got_reply);
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

/* Enters state and records it. A state that cannot be recorded fails the
 * job instead: no work runs unrecorded, so a restart never runs a job
 * whose record still says queued a second time. */
static int enter(srv_job_t *job, rdev_v1_JobState state) {
  int e = srv_job_enter(job, state);
  if (!e) return RDEV_OK;
  int rc = srv_job_store_code(e);
  srv_job_fail(job, "job", rc, "cannot record the state %s in the job directory: %s", srv_job_state_name(state),
               strerror(e));
  return rc;
}

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
  x->deadline_ms = srv_job_mono_ms() + (uint64_t)timeout_s * 1000u;
  r->x = x;
  srv_allow_t *allow = NULL;
  int rc = enter(job, rdev_v1_JobState_FETCHING);
  if (!rc) {
    allow = srv_job_allow(job->tenant);
    x->s = srv_session_open_local(srv, job->tenant, srv_job_on_reply, x);
    if (!x->s) {
      rc = RDEV_QUOTA_EXCEEDED;
      srv_job_fail(job, "job", rc, "cannot open a session for the job (the tenant's max_sessions, or server memory)");
    } else if (!(rc = alloc_buffers(r)) && !(rc = srv_job_fetch_inputs(r, allow)) && !(rc = load_binaries(r)) &&
               !(rc = enter(job, rdev_v1_JobState_RUNNING)) && !(rc = srv_job_run_steps(r)) &&
               !(rc = enter(job, rdev_v1_JobState_DELIVERING)) && !(rc = srv_job_deliver_outputs(r, allow))) {
      if (srv_job_enter(job, rdev_v1_JobState_SUCCEEDED))
        srv_log(SRV_LOG_ERROR, "job %s succeeded, but its record still says delivering", job->id);
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
