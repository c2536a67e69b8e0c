/*
 * client/cli/job_fetch.h — `rdev job fetch` (job_fetch.c), which job.c's
 * dispatch calls. Private to the tool.
 */
#ifndef RDEV_CLI_JOB_FETCH_H
#define RDEV_CLI_JOB_FETCH_H

/* `rdev job fetch ID OUTPUT FILE`: writes the output OUTPUT that job id
 * kept into path ("-": stdout); the tool's exit status. Blocks until the
 * file is whole (renamed into place) or the fetch failed (no file left). */
int cli_job_cmd_fetch(const char *target, const char *id, const char *output, const char *path);

#endif
