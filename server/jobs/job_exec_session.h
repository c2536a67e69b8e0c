/*
 * server/jobs/job_exec_session.h — one run's in-process session (ex_t) and
 * device side (run_t), and the driver that feeds the session requests and
 * takes its replies (job_exec_session.c). Private to the files that run
 * one job: only job_exec_session.c, job_exec_steps.h/.c,
 * job_exec_transfer.h/.c and job_exec.c include it. The rest of the jobs
 * room sees srv_job_exec (job_private.h).
 */
#ifndef RDEV_SERVER_JOB_EXEC_SESSION_H
#define RDEV_SERVER_JOB_EXEC_SESSION_H

#include "job_private.h"

#define CHUNK RDEV_WIRE_MAX_CHUNK

/* One run's session, and what its replies tell the runner. */
typedef struct {
  srv_job_t *job;
  srv_session_t *s;
  uint64_t deadline_ms; /* monotonic */
  pthread_mutex_t mu;   /* from here on: srv_job_on_reply writes, the runner reads */
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

/* ---- job_exec_session.c ---- */

/* The session's reply callback (srv_session_open_local's on_reply; user is
 * the run's ex_t): records what each reply tells the runner. */
void srv_job_on_reply(void *user, grpc_byte_buffer *bb);
/* Feeds q (its seq set here; with payload when non-NULL) to the session,
 * waiting while it takes no message. RDEV_OK, or why it stopped. */
int srv_job_send_req(ex_t *x, rdev_v1_Request *q, const grpc_slice *payload, int wait_for_reply);
/* Waits until done(x) holds (x->mu held by the caller), or the job must stop. */
int srv_job_wait_until(ex_t *x, int (*done)(ex_t *x));
/* Whether the synchronous request's reply came (a done for srv_job_wait_until). */
int srv_job_got_reply(ex_t *x);
/* Sends q and waits for its reply: its status (the message in x->msg). */
int srv_job_request(ex_t *x, rdev_v1_Request *q);

#endif
