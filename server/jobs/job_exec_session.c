/*
 * server/jobs/job_exec_session.c — the driver of a job's in-process session
 * (job_exec_session.h). A job's device work goes through an in-process
 * session of its tenant (local.c): requests are encoded and fed as a
 * client's would be, replies come back to srv_job_on_reply. So a job gets
 * every check a client gets (ranges, kernels and their arguments, quotas,
 * slots), and closing the session discards whatever it left queued.
 *
 * This file owns the replies (what each tells the runner: a synchronous
 * request's answer and Read data, how each step ended, a refused quiet
 * Write) and the requests: feeding one, waiting for its reply, and the
 * stop that every wait sees within 50 ms (cancel, or the run's deadline on
 * srv_job_mono_ms).
 */
#define _GNU_SOURCE
#include <string.h>

#include "job_exec_session.h"
#include "rdev/clock.h"

#define WAIT_SLICE_MS 50

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

void srv_job_on_reply(void *user, grpc_byte_buffer *bb) {
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

/* ---- requests (job_exec_session.h) ------------------------------------------------------------------ */

/* Why the job must stop now: RDEV_CANCELLED, RDEV_RT_WAIT_TIMEOUT, or 0. */
static int stop_now(ex_t *x) {
  if (atomic_load(&x->job->cancel)) return RDEV_CANCELLED;
  if (srv_job_mono_ms() >= x->deadline_ms) return RDEV_RT_WAIT_TIMEOUT;
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

int srv_job_got_reply(ex_t *x) { return x->got; }

int srv_job_request(ex_t *x, rdev_v1_Request *q) {
  int rc = srv_job_send_req(x, q, NULL, 1);
  if (rc) return rc;
  pthread_mutex_lock(&x->mu);
  rc = srv_job_wait_until(x, srv_job_got_reply);
  if (!rc) rc = x->status;
  pthread_mutex_unlock(&x->mu);
  return rc;
}
