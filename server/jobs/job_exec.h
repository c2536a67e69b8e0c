/*
 * server/jobs/job_exec.h — what the three files that run one job share,
 * private to them: only job_exec.c (the in-process session driver: its
 * replies and requests, the buffers and binaries, the run itself),
 * job_exec_steps.c (the spec's steps, fed to the session) and
 * job_exec_transfer.c (the inputs and binaries fetched into device
 * buffers, the outputs delivered from them) include it. The rest of the
 * jobs room sees srv_job_exec (job_private.h).
 */
#ifndef RDEV_SERVER_JOB_EXEC_H
#define RDEV_SERVER_JOB_EXEC_H

#include "job_private.h"

#define CHUNK RDEV_WIRE_MAX_CHUNK

/* One run's session, and what its replies tell the runner. */
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

/* One run's device side: its buffers, streams and binaries. */
typedef struct {
  ex_t *x;
  uint64_t addr[16];                                   /* each buffer's device address */
  uint64_t streams[SRV_JOB_STREAMS * SRV_JOB_DEVICES]; /* handles, by stream index and device */
  uint8_t *bin[4];                                     /* each binary's bytes (malloc'd), */
  size_t bin_len[4];                                   /* their length, */
  uint64_t bin_handle[4];                              /* and its handle once loaded */
} run_t;

/* ---- job_exec.c ---- */

/* Feeds q (its seq set here; with payload when non-NULL) to the session,
 * waiting while it takes no message. RDEV_OK, or why it stopped. */
int srv_job_send_req(ex_t *x, rdev_v1_Request *q, const grpc_slice *payload, int wait_for_reply);
/* Waits until done(x) holds (x->mu held by the caller), or the job must stop. */
int srv_job_wait_until(ex_t *x, int (*done)(ex_t *x));
/* Sends q and waits for its reply: its status (the message in x->msg). */
int srv_job_request(ex_t *x, rdev_v1_Request *q);

/* ---- job_exec_steps.c ---- */

/* Queues the spec's steps, each followed by a synchronize of its stream,
 * and waits until they are over or one failed. RDEV_OK; or a failure the
 * job was failed with (srv_job_fail); or RDEV_CANCELLED or
 * RDEV_RT_WAIT_TIMEOUT, which the run explains. */
int srv_job_run_steps(run_t *r);

/* ---- job_exec_transfer.c ---- */

/* Fetches the inputs into their buffers and the binaries into r->bin, all
 * at once, then checks the digests the spec gives. */
int srv_job_fetch_inputs(run_t *r, const srv_allow_t *allow);
/* Delivers each output from its buffer, to its URL or to a kept file. */
int srv_job_deliver_outputs(run_t *r, const srv_allow_t *allow);

#endif
