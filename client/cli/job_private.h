/*
 * client/cli/job_private.h — private to the files of `rdev job` (job.c,
 * job_fetch.c; nothing else includes it): the command's exit statuses, what
 * job.c offers job_fetch.c (reporting a failed call, opening the jobs
 * connection) and the fetch command job_fetch.c offers job.c.
 */
#ifndef RDEV_CLI_JOB_PRIVATE_H
#define RDEV_CLI_JOB_PRIVATE_H

#include "rdev/job.h"

/* Exit statuses of `rdev job` (job.c's first lines say when each). */
enum { EXIT_OK = 0, EXIT_JOB_FAILED = 1, EXIT_ERROR = 2 };

/* job.c: prints "rdev: job WHAT: message (code NAME): detail" for a failed
 * call's status rc and the connection's last error; returns EXIT_ERROR. */
int cli_job_fail(const char *what, int rc);

/* job.c: opens a jobs connection to target into *j: EXIT_OK, or EXIT_ERROR
 * once reported (cmd names the command in the message). */
int cli_job_open(const char *cmd, const char *target, rdev_jobs_t **j);

/* job_fetch.c: `rdev job fetch ID OUTPUT FILE`: writes the output OUTPUT
 * that job id kept into path ("-": stdout); the tool's exit status. */
int cli_job_cmd_fetch(const char *target, const char *id, const char *output, const char *path);

#endif
