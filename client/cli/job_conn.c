/*
 * client/cli/job_conn.c — what every `rdev job` command starts and fails
 * with: opening the jobs connection (rdev/job.h) and the tool's error exit
 * for a failed call. job.c and job_fetch.c call it; it calls neither
 * (job_conn.h declares it).
 */
#include <stdio.h>

#include "job_conn.h"
#include "rdev/job.h"

/* Prints "rdev: job WHAT: message (code NAME): detail"; returns EXIT_ERROR. */
int cli_job_fail(const char *what, int rc) {
  const char *detail = rdev_jobs_last_error();
  fprintf(stderr, "rdev: job %s: %s (%d %s)%s%s\n", what, rdev_strerror(rc), rc, rdev_status_name(rc),
          detail && *detail ? ": " : "", detail ? detail : "");
  return EXIT_ERROR;
}

int cli_job_open(const char *cmd, const char *target, rdev_jobs_t **j) {
  int rc = rdev_jobs_open(target, NULL, j);
  if (rc) {
    char what[300];
    snprintf(what, sizeof what, "%s: cannot connect to %s", cmd, target);
    return cli_job_fail(what, rc);
  }
  return EXIT_OK;
}
