/*
 * client/cli/job_conn.h — what every `rdev job` command starts and fails
 * with (job_conn.c): the command's exit statuses, opening the jobs
 * connection, reporting a failed call. Private to the tool's job files
 * (job.c, job_fetch.c, job_conn.c).
 */
#ifndef RDEV_CLI_JOB_CONN_H
#define RDEV_CLI_JOB_CONN_H

#include "rdev/job.h"

/* Exit statuses of `rdev job` (job.c's first lines say when each). */
enum { EXIT_OK = 0, EXIT_JOB_FAILED = 1, EXIT_ERROR = 2 };

/* Prints "rdev: job WHAT: message (code NAME): detail" for a failed call's
 * status rc and the connection's last error; returns EXIT_ERROR. */
int cli_job_fail(const char *what, int rc);

/* Opens a jobs connection to target into *j: EXIT_OK, or EXIT_ERROR once
 * reported (cmd names the command in the message). */
int cli_job_open(const char *cmd, const char *target, rdev_jobs_t **j);

#endif
