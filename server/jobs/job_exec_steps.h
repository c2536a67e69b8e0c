/*
 * server/jobs/job_exec_steps.h — a job's steps, fed to its in-process
 * session (job_exec_steps.c). Private to the files that run one job: only
 * job_exec_steps.c and job_exec.c include it.
 */
#ifndef RDEV_SERVER_JOB_EXEC_STEPS_H
#define RDEV_SERVER_JOB_EXEC_STEPS_H

#include "job_exec_session.h"

/* Queues the spec's steps, each followed by a synchronize of its stream,
 * and waits until they are over or one failed. RDEV_OK; or a failure the
 * job was failed with (srv_job_fail); or RDEV_CANCELLED or
 * RDEV_RT_WAIT_TIMEOUT, which the run explains. */
int srv_job_run_steps(run_t *r);

#endif
