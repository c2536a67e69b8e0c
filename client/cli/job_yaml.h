/*
 * client/cli/job_yaml.h — the `rdev job` command (job.c) and its job spec
 * reader (job_yaml.c): a YAML (or JSON) job spec, as docs and `rdev help`
 * describe it, into an rdev.v1.JobSpec. The reader is fed untrusted files:
 * any input gives a spec or an error, without crashing or leaking.
 */
#ifndef RDEV_CLI_JOB_YAML_H
#define RDEV_CLI_JOB_YAML_H

#include <stddef.h>

#include "rdev/v1/rdev.pb.h" /* rdev_v1_JobSpec (job.pb.h) and rdev_v1_InfoReply */

/* A spec's text may hold this many bytes at most. */
#define RDEV_CLI_JOB_MAX_TEXT (1u << 20)

/* rdev_cli_job_parse's result when a spec holds a bare number as a kernel
 * argument and no kernel signatures were given: parse again with them. */
#define RDEV_CLI_JOB_NEED_KERNELS 1

/* Parses the spec in text[0..len) (need not be NUL-terminated) into *spec.
 * kernels (may be NULL) is the server's Info: the signatures that type a
 * kernel argument written as a bare number. Returns 0 (the caller then
 * releases *spec with rdev_cli_job_free), or -1 or RDEV_CLI_JOB_NEED_KERNELS
 * with *spec empty (nothing to release) and the first problem in err
 * ("line L, column C: WHERE: WHAT", always NUL-terminated when errlen > 0). */
int rdev_cli_job_parse(const char *text, size_t len, const rdev_v1_InfoReply *kernels, rdev_v1_JobSpec *spec, char *err,
                       size_t errlen);

/* Frees the URLs of a spec that rdev_cli_job_parse filled (pb_release) and
 * empties it; the spec itself stays the caller's. */
void rdev_cli_job_free(rdev_v1_JobSpec *spec);

/* The whole of path ("-": stdin) into a malloc'd buffer, reading no more
 * once it holds more than max bytes; *len its length. NULL with errno on
 * failure. (job.c; the tool's commands share it.) */
char *rdev_cli_read_file(const char *path, size_t max, size_t *len);

/* `rdev job ARGS...` against target: returns the tool's exit status. */
int rdev_cli_job(const char *target, int argc, char **argv);

#endif
