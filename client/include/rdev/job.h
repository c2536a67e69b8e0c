/*
 * rdev/job.h — detached jobs (proto/rdev/v1/job.proto): submit a JobSpec to
 * rdevd, which runs it without its submitter, and look at, watch, cancel
 * and list the tenant's jobs, and fetch the outputs a job kept.
 *
 * The job API's types are the wire's own messages (nanopb structs from
 * rdev/v1/job.pb.h): a JobSpec is filled in as job.proto describes it, and
 * JobStatus, SubmitJobReply and ListJobsReply come back as rdevd sent them.
 * String fields are NUL-terminated arrays, except the URLs (JobInput.url,
 * JobOutput.url, JobSpec.callback_url: char *, NULL = none) and
 * ListJobsReply.jobs (a malloc'd array): nanopb pointer fields, which
 * pb_release (pb_decode.h) frees.
 *
 * Conventions as in rdev/rdev.h: functions return an rdev_status_t, and
 * rdev_jobs_last_error() (the same as rdev_session_last_error(): the
 * library keeps one last error per thread) gives the detail of the calling
 * thread's last failure, with the server's own message when the server
 * refused a call. gRPC statuses map to rdev ones as for sessions, and:
 * NOT_FOUND (an unknown job id, another tenant's, or an unknown output) is
 * RDEV_INVALID_RESOURCE_HANDLE; FAILED_PRECONDITION (the server keeps no
 * jobs) RDEV_API_NOT_SUPPORT; INVALID_ARGUMENT (a bad spec)
 * RDEV_INVALID_PARAM; PERMISSION_DENIED (a URL the tenant may not use)
 * RDEV_PERMISSION_DENIED; RESOURCE_EXHAUSTED (too many jobs)
 * RDEV_QUOTA_EXCEEDED; a deadline that passed RDEV_RT_WAIT_TIMEOUT; a lost
 * connection or a draining server (gRPC UNAVAILABLE or CANCELLED)
 * RDEV_UNAVAILABLE. The connection pings the server every 10 s while a
 * call is open, so a fetch of a server that froze or vanished ends
 * (RDEV_UNAVAILABLE) within about 15 s instead of waiting for ever, and a
 * watch finds out as soon and tries to watch again (rdev_job_watch).
 *
 * A jobs connection opens no device session: looking at jobs takes none of
 * the tenant's session quota. It may be used from several threads at once;
 * each call blocks the calling thread.
 */
#ifndef RDEV_JOB_H
#define RDEV_JOB_H

#include <pb_decode.h> /* pb_release */
#include <stddef.h>
#include <stdint.h>

#include "rdev/rdev.h"
#include "rdev/v1/job.pb.h"
#include "rdev/v1/rdev.pb.h" /* rdev_v1_InfoReply */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rdev_jobs rdev_jobs_t; /* a connection to rdevd for job calls */

/* Connects to rdevd at target ("host:port" or "unix:/path") with the
 * credentials of opts (may be NULL; as for rdev_session_open: token, TLS
 * files, the connect timeout, each else from the environment). Blocks until
 * the connection is up or the connect timeout passed (RDEV_UNAVAILABLE).
 * The token is not checked here: a missing or wrong one makes each call
 * RDEV_UNAUTHENTICATED. *out is NULL on failure. */
int rdev_jobs_open(const char *target, const rdev_options_t *opts, rdev_jobs_t **out);

/* Closes the connection (NULL is fine). No call may be in progress on it. */
void rdev_jobs_close(rdev_jobs_t *j);

/* Makes a watch or fetch in progress on j (and the next one) end within
 * 200 ms with RDEV_CANCELLED ("interrupted"), whatever the server does.
 * Async-signal-safe: meant for a SIGINT handler. */
void rdev_jobs_interrupt(rdev_jobs_t *j);

/* The detail of the calling thread's last failure; "" if none. The same
 * message as rdev_session_last_error(). */
const char *rdev_jobs_last_error(void);

/* The server's Info (version, backend, identity, the kernels it offers with
 * their signatures, at most 16 of them), as a session's rdev_server_info
 * and rdev_server_kernels give it. 10 s deadline. */
int rdev_jobs_info(rdev_jobs_t *j, rdev_v1_InfoReply *out);

/* Queues the job spec describes (the caller keeps spec). *out gets the
 * job's id, the secret that signs its webhooks (rdevd says it only here)
 * and its first status. A bad spec is RDEV_INVALID_PARAM with the server's
 * reason. 10 s deadline: a submission that timed out may still have been
 * queued. */
int rdev_job_submit(rdev_jobs_t *j, const rdev_v1_JobSpec *spec, rdev_v1_SubmitJobReply *out);

/* The status of job id (at most 32 bytes) now. 10 s deadline. */
int rdev_job_get(rdev_jobs_t *j, const char *id, rdev_v1_JobStatus *out);

/* Cancels job id unless it is final, and waits until it is: *out gets its
 * final status (CANCELLED, or the state it reached first). 60 s deadline. */
int rdev_job_cancel(rdev_jobs_t *j, const char *id, rdev_v1_JobStatus *out);

/* The tenant's jobs, newest first (at most 128, without their hooks). A
 * reply with more than 128 is refused before it is decoded (RDEV_PROTOCOL:
 * the server's job list holds more than 128 jobs), so a broken or hostile
 * server cannot make the decoder allocate a JobStatus per entry of a
 * 4 MiB message. *out's previous contents are overwritten, not freed;
 * afterwards, on success or failure, the caller releases it with
 * pb_release(rdev_v1_ListJobsReply_fields, out). 10 s deadline. */
int rdev_job_list(rdev_jobs_t *j, rdev_v1_ListJobsReply *out);

/* Called by rdev_job_watch with each status; non-zero stops the watch. */
typedef int (*rdev_job_watch_fn)(void *user, const rdev_v1_JobStatus *st);

/* How long rdev_job_watch tries to watch again after it lost the server. */
#define RDEV_JOB_WATCH_RECONNECT_MS 60000

/* Watches job id: calls fn with its status now, then again on each change,
 * until the job is final (after fn saw the final status: returns RDEV_OK),
 * fn returns non-zero (the call is cancelled; returns that value), or the
 * call fails (returns its status). No deadline.
 * A watch survives a server restart: when the connection is lost, or the
 * server ends the watch before the job is final (as a draining or dying
 * rdevd does), it connects again and watches again, with backoff (100 ms
 * doubling to 2 s), and goes on where it was: fn is not called again with
 * the status it saw last (a restarted rdevd keeps the job: queued, it runs;
 * running, it failed "server restarted"). When no rdevd answers the watch
 * within RDEV_JOB_WATCH_RECONNECT_MS (60 s) of the loss, it ends with
 * RDEV_UNAVAILABLE ("lost rdevd and no rdevd answered within 60 s"). A
 * server that answers but no longer knows the job ends it as GetJob would
 * (RDEV_INVALID_RESOURCE_HANDLE). rdev_jobs_interrupt ends it while it
 * waits too. */
int rdev_job_watch(rdev_jobs_t *j, const char *id, rdev_job_watch_fn fn, void *user);

/* rdev_job_watch, trying to watch again for reconnect_ms after a loss
 * instead of RDEV_JOB_WATCH_RECONNECT_MS; 0: never (a loss ends the watch
 * at once with RDEV_UNAVAILABLE). RDEV_INVALID_PARAM when negative. */
int rdev_job_watch_within(rdev_jobs_t *j, const char *id, int64_t reconnect_ms, rdev_job_watch_fn fn, void *user);

/* Called by rdev_job_fetch with each chunk, in order: len bytes at data
 * (valid during the call), total the output's size. Non-zero stops. */
typedef int (*rdev_job_fetch_fn)(void *user, const void *data, size_t len, uint64_t total);

/* Fetches output (at most 31 bytes) that job id kept: calls fn with each
 * chunk in order (never for an empty output). Returns RDEV_OK once the
 * server sent all of it (the chunks add up to total: RDEV_PROTOCOL when
 * they do not), fn's non-zero value when fn stopped it (the call is
 * cancelled), or the call's failure. No deadline. */
int rdev_job_fetch(rdev_jobs_t *j, const char *id, const char *output, rdev_job_fetch_fn fn, void *user);

/* Whether a job state is final (SUCCEEDED, FAILED, CANCELLED). */
int rdev_job_state_final(rdev_v1_JobState state);

/* The state's name in lowercase ("queued", "fetching", ... "cancelled";
 * "unspecified" for 0, "unknown" beyond). Never NULL. */
const char *rdev_job_state_name(rdev_v1_JobState state);

#ifdef __cplusplus
}
#endif
#endif
