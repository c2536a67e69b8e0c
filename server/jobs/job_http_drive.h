/*
 * server/jobs/job_http_drive.h — the loop that runs a job's HTTP(S)
 * transfers, and the URL check it makes of each redirect target
 * (job_http_drive.c). Private to the files that make the transfers: only
 * job_http_drive.c and job_http_ops.c include it.
 */
#ifndef RDEV_SERVER_JOB_HTTP_DRIVE_H
#define RDEV_SERVER_JOB_HTTP_DRIVE_H

#include "job_http_xfer.h"

/* Whether x->url may be requested: http or https, under the allow list. A
 * caller's bad URL is RDEV_INVALID_PARAM; any refusal of a redirect target,
 * or of a URL outside the list, RDEV_PERMISSION_DENIED. */
int srv_http_url_allowed(xfer_t *x, int redirect);

/* Runs xs[0..n) to their ends. The first failure's status (the others are
 * stopped then, RDEV_CANCELLED), or RDEV_OK. */
int srv_http_drive(xfer_t *xs, int n, const srv_http_opts_t *o);

#endif
