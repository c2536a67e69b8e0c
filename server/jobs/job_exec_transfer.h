/*
 * server/jobs/job_exec_transfer.h — a job's bytes between HTTP and its
 * device buffers (job_exec_transfer.c). Private to the files that run one
 * job: only job_exec_transfer.c and job_exec.c include it.
 */
#ifndef RDEV_SERVER_JOB_EXEC_TRANSFER_H
#define RDEV_SERVER_JOB_EXEC_TRANSFER_H

#include "job_exec_session.h"

/* Fetches the inputs into their buffers and the binaries into r->bin, all
 * at once, then checks the digests the spec gives. */
int srv_job_fetch_inputs(run_t *r, const srv_allow_t *allow);
/* Delivers each output from its buffer, to its URL or to a kept file. */
int srv_job_deliver_outputs(run_t *r, const srv_allow_t *allow);

#endif
