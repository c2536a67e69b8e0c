/*
 * server/jobs/jobs.h — the jobs room's contract with the rest of rdevd:
 * opening, draining and freeing the job table, answering the six job calls
 * of the Device service (job.proto), and the URL allow lists that the
 * tenants file names (allow.h). Nothing else of server/jobs/ is seen
 * outside it; a job's device work goes through an in-process session
 * (srv.h), never through the session room's own headers.
 */
#ifndef RDEV_SERVER_JOBS_H
#define RDEV_SERVER_JOBS_H

#include <time.h>

#include "allow.h"
#include "srv.h"

typedef struct srv_jobs srv_jobs_t;

/* Opens the job table when cfg.job_dir is set (srv->jobs stays NULL
 * otherwise): the directory, the records in it (job_store.c), the
 * scheduler. 0, or -1 (logged). */
int srv_jobs_open(srv_t *srv);
/* The drain: running jobs may finish until deadline (CLOCK_REALTIME);
 * then those left are stopped (failed, "the server stopped before the job
 * finished"); queued ones stay queued on disk. Waits for the runners and
 * webhook threads. No job starts once the server is shutting down.
 * NULL-safe. srv_jobs_free frees the table once the server's calls are
 * gone (its completion-queue threads joined). */
void srv_jobs_stop(srv_t *srv, const struct timespec *deadline);
/* After a tenants reload: the running jobs of removed tenants stop (failed,
 * "its tenant was removed"), their queued ones fail when their turn comes. */
void srv_jobs_end_removed(srv_t *srv);
void srv_jobs_free(srv_t *srv);
/* For the metrics: calls fn once per tenant with jobs and state (from
 * queued to cancelled) with the number of its jobs in that state ("-":
 * jobs whose tenant is gone). Nothing without a job table. Any thread. */
void srv_jobs_count(srv_t *srv, void (*fn)(void *user, const char *tenant, const char *state, int n), void *user);

/* Answers an accepted job call of kind (the K_ value in server.c's order:
 * submit, get, watch, cancel, list, fetch) for tenant t; takes call. */
enum { SRV_JOB_SUBMIT, SRV_JOB_GET, SRV_JOB_WATCH, SRV_JOB_CANCEL, SRV_JOB_LIST, SRV_JOB_FETCH, SRV_JOB_CALLS };
void srv_job_call(srv_t *srv, int which, srv_tenant_t *t, grpc_call *call, grpc_byte_buffer *payload);

#endif
