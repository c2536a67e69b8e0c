/*
 * server/jobs/job_private.h — what the files of detached jobs (job.proto)
 * share, private to them (the rest of the server sees jobs.h). job_state.c owns one job's life (references, states,
 * progress, watchers, webhook events, its record); job_table.c owns the job
 * table (submission and limits, the per-tenant first-in-first-out queue
 * and the runner threads, cancel, expiry, restart and the drain). job_spec.c checks a
 * spec before it is queued. job_exec.c runs one job over an in-process
 * session of the job's tenant (local.c), so a job's device work takes the
 * same paths, checks, slots and quotas as a client's: job_exec_session.c
 * drives that session (its replies and requests; job_exec_session.h is
 * what the run's files share), job_exec_steps.c feeds it the steps, and
 * job_exec_transfer.c moves bytes between the device and HTTP through
 * job_http.h. job_store.c keeps records and kept outputs in the job
 * directory. job_rpc.c answers the job calls of the Device service;
 * job_hook.c sends the webhooks. job_http.h's transfers are made by
 * job_http_ops.c (the entry points, set-up and clean-up), which hands
 * them to job_http_drive.c (the libcurl multi loop, retries, redirects and
 * URL checks); both end a transfer through job_http_xfer.c (error texts,
 * the clock), and job_http.c signs the webhooks.
 *
 * Lock order: jobs->mu, then a tenant's mu. A job's status, watchers and
 * hook queue are under jobs->mu; nothing under it blocks or calls out, but
 * for the watchers' wake functions, which only start gRPC batches, and
 * job_hook.c's start of a tenant's webhook sender thread.
 */
#ifndef RDEV_SERVER_JOB_PRIVATE_H
#define RDEV_SERVER_JOB_PRIVATE_H

#include <stdio.h>

#include "jobs.h"
#include "rdev/v1/job.pb.h"

#define SRV_JOB_STREAMS 8    /* streams a job's steps name: 0..7 */
#define SRV_JOB_DEVICES 64   /* device indexes a job's buffers name: 0..63 */
#define SRV_JOB_ID_LEN 16    /* hex digits of a job id */
#define SRV_JOB_URL_MAX 2047 /* bytes of a URL */
#define SRV_JOB_PROGRESS_MS 200
#define SRV_JOB_WATCHERS 16 /* WatchJob calls on one job at once */

/* Why a job must stop (srv_job_t.cancel). */
enum { SRV_JOB_STOP_CLIENT = 1, SRV_JOB_STOP_SERVER, SRV_JOB_STOP_TENANT };

typedef struct srv_job srv_job_t;

/* Someone watching a job (job_rpc.c): wake runs, under jobs->mu, after each
 * change of the job's status; it must not block. */
typedef struct srv_watch {
  void (*wake)(struct srv_watch *w);
  struct srv_watch *prev, *next;
} srv_watch_t;

/* A webhook event waiting to be sent (job_state.c makes it, job_hook.c sends it). */
typedef struct hook_ev {
  struct hook_ev *next;
  rdev_v1_JobState state;
  char *body; /* JSON, len bytes */
  size_t len;
} hook_ev_t;

/* A CancelJob call waiting for the job's end (job_state.c answers it). */
typedef struct final_call {
  struct final_call *next;
  grpc_call *call;
} final_call_t;

struct srv_job {
  srv_jobs_t *jobs;
  char id[SRV_JOB_ID_LEN + 1];
  srv_tenant_t *tenant;         /* NULL: its tenant is gone (a record loaded after a restart) */
  rdev_v1_JobSpec spec;         /* decoded; its URLs are malloc'd (pb_release) */
  char secret[65];              /* signs its webhooks */
  rdev_v1_JobStatus st;         /* jobs->mu */
  atomic_int cancel;            /* why it must stop: SRV_JOB_STOP_*, 0 = it need not */
  int refs;                     /* jobs->mu */
  int queued;                   /* in the queue (jobs->mu) */
  pthread_t thread;             /* its runner, while running */
  srv_watch_t *watchers;        /* jobs->mu */
  final_call_t *finals;         /* jobs->mu */
  hook_ev_t *hq_head, *hq_tail; /* webhook events to send (jobs->mu) */
  int hook_busy;                /* its tenant's sender sends one (jobs->mu) */
  int damaged;                  /* loaded from a damaged record: never saved */
  uint64_t hook_seq;            /* events made so far (kept in its record) */
  int live;                     /* a runner runs it, its session not yet closed (jobs->mu) */
  int64_t progress_ms;          /* when watchers last heard of moving bytes */
  uint64_t kept_reserved;       /* kept bytes being written (jobs->mu) */
  pthread_mutex_t save_mu;      /* one save of its record at a time, in order */
  srv_job_t *next;              /* jobs->all, newest first */
  srv_job_t *qnext;             /* the queue */
};

/* A thread sending one tenant's webhook events (job_hook.c). */
typedef struct srv_hook_sender {
  srv_jobs_t *jobs;
  srv_tenant_t *tenant; /* NULL: the jobs whose tenant is gone */
  pthread_t thread;
  struct srv_hook_sender *next;
} srv_hook_sender_t;

struct srv_jobs {
  srv_t *srv;
  char dir[256];
  pthread_mutex_t mu;
  pthread_cond_t cv; /* the queue, a runner or webhook sender ended, stopping */
  srv_job_t *all;
  srv_job_t *qhead, *qtail;
  int running; /* runners alive */
  int stopping;
  pthread_t sched;
  /* webhooks (job_hook.c; jobs->mu) */
  srv_hook_sender_t *hook_senders; /* at most one per tenant, each in its loop */
  srv_hook_sender_t *hook_ended;   /* senders out of their loop, not yet joined */
  int hooks_on;                    /* senders may start: from srv_job_hooks_start to the stop */
  /* After j's event was queued (jobs->mu held): job_hook.c's, which starts
   * a sender for j's tenant unless one runs; NULL before the start. */
  void (*hook_kick)(srv_job_t *j);
  atomic_int hooks_cancel; /* the stop: a delivery under way gives up */
};

/* ---- job_table.c ---- */

/* Queues spec (taken: freed whatever the outcome) for tenant t. A gRPC
 * status: OK with *out filled; else msg says why. */
int srv_job_submit(srv_jobs_t *jobs, srv_tenant_t *t, rdev_v1_JobSpec *spec, rdev_v1_SubmitJobReply *out, char *msg,
                   size_t msglen);
/* t's job id, one reference more (srv_job_unref), or NULL. */
srv_job_t *srv_job_find(srv_jobs_t *jobs, const srv_tenant_t *t, const char *id);
/* Asks a job to stop: a queued one is cancelled at once, a running one as
 * soon as its runner sees it. call (taken; NULL: none) is answered with
 * the job's status once it is final. */
void srv_job_cancel(srv_job_t *job, grpc_call *call);
/* t's jobs, newest first, at most max, brief, into out[] (each
 * srv_job_status's); returns how many. */
int srv_jobs_list(srv_jobs_t *jobs, const srv_tenant_t *t, rdev_v1_JobStatus *out, int max);

/* ---- job_state.c ---- */

/* Drops a reference; the last frees the job (srv_job_free: its spec, its
 * unsent events, its CancelJob calls). */
void srv_job_unref(srv_job_t *job);
void srv_job_free(srv_job_t *j);
/* A copy of job's status (without hooks when brief). */
void srv_job_status(srv_job_t *job, rdev_v1_JobStatus *out, int brief);
/* Whether the state is final. */
static inline int srv_job_final(rdev_v1_JobState s) {
  return s == rdev_v1_JobState_SUCCEEDED || s == rdev_v1_JobState_FAILED || s == rdev_v1_JobState_CANCELLED;
}
/* Adds a watcher (w->wake runs once at once): 0, or -1 when the job has
 * SRV_JOB_WATCHERS already. Removes one. */
int srv_job_watch(srv_job_t *job, srv_watch_t *w);
void srv_job_unwatch(srv_job_t *job, srv_watch_t *w);
/* The state names of the webhook events and the CLI ("queued", ...). */
const char *srv_job_state_name(rdev_v1_JobState s);

/* Enters state: its times, its webhook event, its watchers. srv_job_enter
 * records the state first and enters it only once it is on disk (a final
 * state always), so whoever hears of a state finds it in the job's record,
 * whole (no write of it under way): 0, or the errno of the save that
 * failed. _locked with jobs->mu held, for jobs no one sees yet (those
 * loaded at start-up; the caller saves the record then). */
int srv_job_enter(srv_job_t *job, rdev_v1_JobState state);
void srv_job_enter_locked(srv_job_t *j, rdev_v1_JobState state);
/* Sets the failure's place, code and message (jobs->mu held). */
void srv_job_set_failure_locked(srv_job_t *j, const char *at, int code, const char *msg);
/* Ends the job in the final state with the failure's place, code and
 * message, recorded first as srv_job_enter does; a job final already
 * stays as it was. srv_job_fail ends it FAILED (or CANCELLED when code is
 * RDEV_CANCELLED because the client asked) at failed_at. */
void srv_job_end(srv_job_t *job, rdev_v1_JobState state, const char *at, int code, const char *msg);
void srv_job_fail(srv_job_t *job, const char *failed_at, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds to the byte counters and steps done; watchers hear of it at most
 * every SRV_JOB_PROGRESS_MS (always when steps change). */
void srv_job_progress(srv_job_t *job, uint64_t fetched, uint64_t fetch_total, uint64_t delivered, int steps);
/* Reserves bytes of the tenant's job disk quota for a kept output being
 * written: 0, or -1 when it has no room (nothing reserved). keep_done
 * returns the reservation and records the output name (NULL: it was not
 * kept). */
int srv_job_keep_reserve(srv_job_t *job, uint64_t bytes);
void srv_job_keep_done(srv_job_t *job, const char *name, uint64_t bytes);
/* The tenant's allow list now (the caller frees it). */
srv_allow_t *srv_job_allow(const srv_tenant_t *t);
/* Unix time in ms; CLOCK_MONOTONIC ms (the transfers' deadlines). */
int64_t srv_job_now_ms(void);
uint64_t srv_job_mono_ms(void);

/* Wakes j's watchers and, once it is final, answers its CancelJob calls
 * (jobs->mu held). */
void srv_job_wake_locked(srv_job_t *j);
/* Writes job's record (status, spec, secret, event count) through
 * job_store.c; one save of a job at a time, in order. 0, or the errno of
 * the write that failed (logged). A job loaded from a damaged record is
 * never saved (its file stays as it was found): 0. */
int srv_job_save(srv_job_t *job);
/* srv_job_save of job as it will be once it entered state at now, its
 * webhook event counted: written before anyone hears of the state (the
 * submit's; the caller makes it known). */
int srv_job_save_entering(srv_job_t *job, rdev_v1_JobState state, int64_t now);
/* The rdev status for a record that could not be written (errno e). */
int srv_job_store_code(int e);
/* Queues the webhook event of j's state now, if it has a callback URL
 * (jobs->mu held); its tenant's job_hook.c sender sends it. Frees j's
 * unsent events. */
void srv_job_hook_locked(srv_job_t *j);
void srv_job_hooks_free(srv_job_t *j);

/* ---- job_hook.c ---- */

/* Lets senders start: one for each tenant with events queued so far (the
 * records loaded), then as events come (jobs->hook_kick, which
 * srv_job_hook_locked calls: the events' maker needs no call into this
 * file). A sender that cannot start is logged. */
void srv_job_hooks_start(srv_jobs_t *jobs);
/* Lets the senders send what is queued for up to grace_ms, then stops
 * them (a delivery under way gives up) and joins every sender thread.
 * Events left, and those queued later, are not sent. */
void srv_job_hooks_stop(srv_jobs_t *jobs, int grace_ms);
/* ---- job_spec.c ---- */

/* Checks spec against the contract in job.proto and every URL against
 * allow, and makes each input's max_bytes and output's size explicit. A
 * gRPC status: OK; INVALID_ARGUMENT or PERMISSION_DENIED with msg. */
int srv_job_spec_check(rdev_v1_JobSpec *spec, const srv_allow_t *allow, char *msg, size_t msglen);
/* Whether s is a name of the spec's kind: 1..31 bytes of A-Z a-z 0-9 _ . - */
int srv_job_name_ok(const char *s);
/* The index of the spec's buffer (binary) called name, or -1. */
int srv_job_spec_buffer(const rdev_v1_JobSpec *spec, const char *name);
int srv_job_spec_binary(const rdev_v1_JobSpec *spec, const char *name);

/* ---- job_exec.c ---- */

/* Runs job (on its runner thread) to a final state. */
void srv_job_exec(srv_job_t *job);

/* ---- job_store.c ---- */

/* Makes dir if missing (0700). 0, or -1 (logged). */
int srv_job_store_init(const char *dir);
/* Writes the record of job id atomically (a temporary file, fsync,
 * rename). 0, or the errno of what failed (logged). */
int srv_job_store_write(srv_jobs_t *jobs, const char *id, const rdev_v1_JobRecord *rec);
/* A file named like a record (ID.job, ID 16 lowercase hex digits) as
 * srv_job_store_load found it. */
typedef struct {
  const char *id;      /* from its name */
  int64_t mtime_ms;    /* when it was last written (0: unknown) */
  const char *damaged; /* NULL: a whole record of this id; else why not (unreadable, cut short, ...) */
  int status_whole;    /* damaged: its status field decoded whole */
} srv_job_file_t;
typedef void (*srv_job_load_fn)(srv_jobs_t *jobs, const srv_job_file_t *f, rdev_v1_JobRecord *rec);
/* Calls fn for each file named like a record, with its record (damaged:
 * zeroed but for what its status still said, field by field up to the
 * fault), whose pointer fields are fn's to keep or pb_release. A whole
 * record of another id is logged and left alone; leftovers of cut writes
 * are removed. Never blocks on a file that is not a regular one. */
void srv_job_store_load(srv_jobs_t *jobs, srv_job_load_fn fn);
/* Calls fn for each kept output's file (ID.NAME.out, a regular file, NAME
 * of the spec's kind) with its size and time. */
void srv_job_store_outputs(srv_jobs_t *jobs, void (*fn)(srv_jobs_t *jobs, const char *id, const char *name,
                                                        uint64_t bytes, int64_t mtime_ms));
/* Whether job id's kept output name has its file. */
int srv_job_store_out_exists(srv_jobs_t *jobs, const char *id, const char *name);
/* Removes job's record and kept outputs. */
void srv_job_store_remove(srv_jobs_t *jobs, const char *id);
/* A kept output's file: path (for FetchOutput), a new one to write
 * (*tmp gets the temporary path to commit), commit, remove. */
void srv_job_store_out_path(srv_jobs_t *jobs, const char *id, const char *name, char *path, size_t len);
FILE *srv_job_store_out_create(srv_jobs_t *jobs, const char *id, const char *name, char *tmp, size_t len);
int srv_job_store_out_commit(srv_jobs_t *jobs, FILE *f, const char *tmp, const char *id, const char *name);
void srv_job_store_out_remove(srv_jobs_t *jobs, const char *id, const char *name);

#endif
