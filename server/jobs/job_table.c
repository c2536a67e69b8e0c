/*
 * server/jobs/job_table.c — the job table (jobs.h): submission and the tenant's
 * limits, lookup, cancel and the list; the queue (first in, first out; a
 * job starts when its tenant has a running slot and the server a runner)
 * and the runner threads; expiry of kept outputs and old records; the
 * restart (records loaded) and the drain. A job's own states are
 * job_state.c's.
 */
#define _GNU_SOURCE
#include "job_private.h"

#define HOOK_GRACE_MS 2000 /* at the stop: what is left of the webhooks may go out this long */
#define KEEP_FINISHED 256  /* a tenant's finished jobs kept at most (the oldest go first) */

#include <pb_decode.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---- submission, lookup, cancel ---------------------------------------------- */

static void hex(const uint8_t *raw, size_t n, char *out) {
  for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

static srv_job_t *find_locked(srv_jobs_t *jobs, const char *id) {
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (!strcmp(j->id, id)) return j;
  return NULL;
}

/* A new job (refs 1, not linked) taking spec. */
static srv_job_t *job_new(srv_jobs_t *jobs, srv_tenant_t *t, rdev_v1_JobSpec *spec) {
  srv_job_t *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->jobs = jobs;
  j->tenant = t;
  j->refs = 1;
  j->spec = *spec;
  memset(spec, 0, sizeof *spec);
  pthread_mutex_init(&j->save_mu, NULL);
  j->st = (rdev_v1_JobStatus)rdev_v1_JobStatus_init_zero;
  return j;
}

/* Appends j to the queue (jobs->mu held). */
static void enqueue_locked(srv_jobs_t *jobs, srv_job_t *j) {
  j->qnext = NULL;
  if (jobs->qtail)
    jobs->qtail->qnext = j;
  else
    jobs->qhead = j;
  jobs->qtail = j;
  j->queued = 1;
  pthread_cond_broadcast(&jobs->cv);
}

int srv_job_submit(srv_jobs_t *jobs, srv_tenant_t *t, rdev_v1_JobSpec *spec, rdev_v1_SubmitJobReply *out, char *msg,
                   size_t msglen) {
  if (atomic_load(&jobs->srv->draining)) {
    pb_release(rdev_v1_JobSpec_fields, spec);
    snprintf(msg, msglen, "the server is stopping");
    return GRPC_STATUS_UNAVAILABLE;
  }
  srv_allow_t *allow = srv_job_allow(t);
  int rc = srv_job_spec_check(spec, allow, msg, msglen);
  srv_allow_free(allow);
  if (rc != GRPC_STATUS_OK) {
    pb_release(rdev_v1_JobSpec_fields, spec);
    return rc;
  }
  uint8_t raw[SRV_JOB_ID_LEN / 2 + 32];
  srv_job_t *j = job_new(jobs, t, spec);
  if (!j || getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    if (j)
      srv_job_free(j);
    else
      pb_release(rdev_v1_JobSpec_fields, spec);
    snprintf(msg, msglen, "out of server resources");
    return GRPC_STATUS_RESOURCE_EXHAUSTED;
  }
  hex(raw, SRV_JOB_ID_LEN / 2, j->id);
  hex(raw + SRV_JOB_ID_LEN / 2, 32, j->secret);
  rdev_v1_JobStatus *st = &j->st;
  snprintf(st->id, sizeof st->id, "%s", j->id);
  snprintf(st->name, sizeof st->name, "%s", j->spec.name);
  snprintf(st->tenant, sizeof st->tenant, "%s", t->name);
  st->state = rdev_v1_JobState_QUEUED;
  st->submitted_ms = srv_job_now_ms();
  st->steps_total = j->spec.steps_count;
  for (pb_size_t i = 0; i < j->spec.outputs_count; i++)
    st->deliver_total += j->spec.outputs[i].size; /* job_spec.c made each explicit */
  /* The tenant's limit first, its place held (jobs_reserved) while the
   * record is written outside the lock: on disk before it is accepted, so
   * a job answered OK survives a restart. The record counts the "queued"
   * event made once j is linked. */
  pthread_mutex_lock(&jobs->mu);
  int open = t->jobs_reserved;
  for (srv_job_t *o = jobs->all; o; o = o->next) open += o->tenant == t && !srv_job_final(o->st.state);
  pthread_mutex_lock(&t->mu);
  int most = t->max_queued_jobs;
  pthread_mutex_unlock(&t->mu);
  if (open >= most || find_locked(jobs, j->id)) {
    pthread_mutex_unlock(&jobs->mu);
    srv_job_free(j);
    snprintf(msg, msglen, "the tenant has %d jobs queued or running (max_queued_jobs %d)", open, most);
    srv_audit(SRV_LOG_WARN, "job refused", t->name, NULL, "reason=%s", msg);
    return GRPC_STATUS_RESOURCE_EXHAUSTED;
  }
  t->jobs_reserved++;
  pthread_mutex_unlock(&jobs->mu);
  int e = srv_job_save_entering(j, rdev_v1_JobState_QUEUED, st->submitted_ms);
  pthread_mutex_lock(&jobs->mu);
  t->jobs_reserved--;
  if (e) {
    pthread_mutex_unlock(&jobs->mu);
    srv_job_free(j);
    snprintf(msg, msglen, "cannot record the job in the job directory: %s", strerror(e));
    srv_audit(SRV_LOG_WARN, "job refused", t->name, NULL, "reason=%s", msg);
    return srv_job_store_code(e) == RDEV_STORAGE_OVER_LIMIT ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_INTERNAL;
  }
  j->next = jobs->all;
  jobs->all = j;
  j->refs++; /* ours until the end: once linked, a cancel and an expiry could end it */
  srv_job_hook_locked(j);
  enqueue_locked(jobs, j);
  out->status = j->st;
  pthread_mutex_unlock(&jobs->mu);
  snprintf(out->id, sizeof out->id, "%s", j->id);
  snprintf(out->secret, sizeof out->secret, "%s", j->secret);
  out->has_status = true;
  srv_audit(SRV_LOG_INFO, "job submitted", t->name, NULL, "job=%s", j->id);
  srv_job_unref(j);
  return GRPC_STATUS_OK;
}

srv_job_t *srv_job_find(srv_jobs_t *jobs, const srv_tenant_t *t, const char *id) {
  pthread_mutex_lock(&jobs->mu);
  srv_job_t *j = find_locked(jobs, id);
  if (j && j->tenant != t) j = NULL; /* another tenant's is as unknown */
  if (j) j->refs++;
  pthread_mutex_unlock(&jobs->mu);
  return j;
}

void srv_job_cancel(srv_job_t *job, grpc_call *call) {
  srv_jobs_t *jobs = job->jobs;
  int unqueued = 0;
  final_call_t *f = call ? calloc(1, sizeof *f) : NULL;
  if (call && !f) {
    srv_call_respond(call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server memory");
    call = NULL;
  }
  pthread_mutex_lock(&jobs->mu);
  if (f) {
    f->call = call;
    f->next = job->finals;
    job->finals = f;
  }
  if (!srv_job_final(job->st.state)) {
    atomic_store(&job->cancel, SRV_JOB_STOP_CLIENT);
    if (job->queued) { /* never started: nothing to stop; out of the queue, it ends once recorded */
      srv_job_t **p = &jobs->qhead, *prev = NULL;
      while (*p != job) prev = *p, p = &(*p)->qnext;
      *p = job->qnext;
      if (jobs->qtail == job) jobs->qtail = prev;
      job->queued = 0;
      unqueued = 1;
    }
  }
  if (srv_job_final(job->st.state)) srv_job_wake_locked(job); /* answers call when it was final already */
  pthread_mutex_unlock(&jobs->mu);
  if (unqueued) srv_job_end(job, rdev_v1_JobState_CANCELLED, "job", RDEV_CANCELLED, "cancelled before it started");
}

int srv_jobs_list(srv_jobs_t *jobs, const srv_tenant_t *t, rdev_v1_JobStatus *out, int max) {
  int n = 0;
  pthread_mutex_lock(&jobs->mu);
  for (srv_job_t *j = jobs->all; j && n < max; j = j->next)
    if (j->tenant == t) {
      out[n] = j->st;
      out[n++].hooks_count = 0;
    }
  pthread_mutex_unlock(&jobs->mu);
  return n;
}

/* ---- the scheduler and the runners ------------------------------------------ */

static void *runner_main(void *arg) {
  srv_job_t *j = arg;
  srv_job_exec(j);
  srv_jobs_t *jobs = j->jobs;
  pthread_mutex_lock(&jobs->mu);
  j->live = 0;               /* its session is closed: the tenant's next job may have its place */
  int last = --j->refs == 0; /* under the lock: once running is 0, srv_jobs_free may free the rest */
  jobs->running--;
  pthread_cond_broadcast(&jobs->cv);
  pthread_mutex_unlock(&jobs->mu);
  if (last) srv_job_free(j); /* expired while it ran: no longer listed */
  return NULL;
}

/* t's jobs running now (jobs->mu held). */
static int running_of(srv_jobs_t *jobs, const srv_tenant_t *t) {
  int n = 0;
  for (srv_job_t *j = jobs->all; j; j = j->next) n += j->tenant == t && j->live;
  return n;
}

/* A job taken out of the queue that did not start: it ends FAILED once
 * its record says so (out of jobs->mu). */
typedef struct {
  srv_job_t *j; /* a reference */
  int code;
  const char *msg;
} ending_t;

/* Starts the first queued jobs that may start (jobs->mu held); those that
 * cannot go into ending[] instead. */
static void start_jobs_locked(srv_jobs_t *jobs, ending_t *ending, int *nending, int maxe) {
  srv_job_t *prev = NULL, *j = jobs->qhead;
  while (j && jobs->running < jobs->srv->cfg.job_runners && !atomic_load(&jobs->srv->draining) && *nending < maxe) {
    srv_job_t *next = j->qnext;
    pthread_mutex_lock(&j->tenant->mu);
    int most = j->tenant->max_running_jobs, removed = j->tenant->removed;
    pthread_mutex_unlock(&j->tenant->mu);
    if (!removed && running_of(jobs, j->tenant) >= most) { /* its tenant's later jobs wait too: first in, first out */
      prev = j;
      j = next;
      continue;
    }
    if (prev)
      prev->qnext = next;
    else
      jobs->qhead = next;
    if (jobs->qtail == j) jobs->qtail = prev;
    j->queued = 0;
    if (removed) { /* a reload took its tenant away while it waited */
      j->refs++;
      ending[(*nending)++] = (ending_t){j, RDEV_UNAUTHENTICATED, "its tenant was removed before it started"};
      j = next;
      continue;
    }
    j->refs++;
    jobs->running++;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    j->live = 1;
    if (pthread_create(&j->thread, &at, runner_main, j) != 0) {
      j->live = 0;
      jobs->running--;
      /* the runner's reference goes with it */
      ending[(*nending)++] = (ending_t){j, RDEV_INTERNAL_ERROR, "cannot start a runner thread"};
    }
    pthread_attr_destroy(&at);
    j = next;
  }
}

/* Kept outputs past their time go, and so do records of jobs final for
 * longer than that (jobs->mu held; files are removed after it). */
static void expire_locked(srv_jobs_t *jobs, char (*gone)[SRV_JOB_ID_LEN + 1 + 32], int *ngone, int max,
                          srv_job_t **changed, int *nchanged, int maxc) {
  int64_t now = srv_job_now_ms(), keep = (int64_t)jobs->srv->cfg.job_keep_s * 1000;
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (j->tenant) j->tenant->jobs_counted = 0;
  for (srv_job_t **p = &jobs->all; *p;) {
    srv_job_t *j = *p;
    int touched = 0, final = srv_job_final(j->st.state);
    /* newest first: past a tenant's KEEP_FINISHED finished jobs, the older go */
    int surplus = final && j->tenant && ++j->tenant->jobs_counted > KEEP_FINISHED;
    for (pb_size_t i = 0; i < j->st.kept_count; i++) {
      rdev_v1_JobKept *k = &j->st.kept[i];
      if (!k->expires_ms || k->expires_ms > now || *ngone == max) continue;
      snprintf(gone[(*ngone)++], sizeof gone[0], "%s.%s", j->id, k->name);
      k->expires_ms = 0;
      touched = 1;
    }
    if (final && (surplus || j->st.finished_ms + keep < now) && j->refs == 1 && !j->hook_busy && !j->hq_head &&
        *ngone < max) {
      if (!j->damaged) /* a damaged record's file stays the operator's: only the job goes */
        snprintf(gone[(*ngone)++], sizeof gone[0], "%s", j->id);
      *p = j->next;
      srv_job_free(j);
      continue;
    }
    if (touched && *nchanged < maxc) {
      j->refs++;
      changed[(*nchanged)++] = j;
    }
    p = &j->next;
  }
}

static void *sched_main(void *arg) {
  srv_jobs_t *jobs = arg;
  pthread_mutex_lock(&jobs->mu);
  while (!jobs->stopping) {
    enum { MAX = 64 };
    char gone[MAX][SRV_JOB_ID_LEN + 1 + 32];
    srv_job_t *changed[MAX];
    ending_t ending[MAX];
    int ngone = 0, nchanged = 0, nending = 0;
    start_jobs_locked(jobs, ending, &nending, MAX);
    expire_locked(jobs, gone, &ngone, MAX, changed, &nchanged, MAX);
    if (ngone || nchanged || nending) {
      pthread_mutex_unlock(&jobs->mu);
      for (int i = 0; i < nending; i++) {
        srv_job_end(ending[i].j, rdev_v1_JobState_FAILED, "job", ending[i].code, ending[i].msg);
        srv_job_unref(ending[i].j);
      }
      for (int i = 0; i < ngone; i++) {
        char *dot = strchr(gone[i], '.');
        if (dot) {
          *dot = '\0';
          srv_job_store_out_remove(jobs, gone[i], dot + 1);
        } else {
          srv_job_store_remove(jobs, gone[i]);
        }
      }
      for (int i = 0; i < nchanged; i++) {
        srv_job_save(changed[i]);
        srv_job_unref(changed[i]);
      }
      pthread_mutex_lock(&jobs->mu);
      continue;
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 1;
    pthread_cond_timedwait(&jobs->cv, &jobs->mu, &dl);
  }
  pthread_mutex_unlock(&jobs->mu);
  return NULL;
}

/* ---- opening, restarting, closing ------------------------------------------- */

static srv_tenant_t *tenant_named(srv_t *srv, const char *name) {
  pthread_mutex_lock(&srv->tenants_mu);
  srv_tenant_t *t = srv->tenants;
  while (t && (t->removed || strcmp(t->name, name))) t = t->next;
  pthread_mutex_unlock(&srv->tenants_mu);
  return t;
}

/* Links j into the list, which stays sorted newest first. */
static void link_sorted(srv_jobs_t *jobs, srv_job_t *j) {
  srv_job_t **p = &jobs->all;
  while (*p && (*p)->st.submitted_ms > j->st.submitted_ms) p = &(*p)->next;
  j->next = *p;
  *p = j;
}

/* A record that could not be read whole. Its job comes back failed, with
 * what its status still said (its tenant, so it is listed, only when the
 * status names this id); a job whose whole status was final keeps it. The
 * file is never written over nor removed (the operator may want it, and an
 * unreadable record may be whole); the job is kept in memory for the keep
 * time from this start, its kept outputs found by their files
 * (output_found) and expiring from their own time. */
static void load_damaged(srv_jobs_t *jobs, const srv_job_file_t *f, rdev_v1_JobRecord *rec) {
  rdev_v1_JobStatus got = rec->status;
  pb_release(rdev_v1_JobRecord_fields, rec);
  int ours = !strcmp(got.id, f->id);
  srv_tenant_t *t = ours && got.tenant[0] ? tenant_named(jobs->srv, got.tenant) : NULL;
  rdev_v1_JobSpec none = rdev_v1_JobSpec_init_zero;
  srv_job_t *j = job_new(jobs, t, &none);
  if (!j) return;
  j->damaged = 1;
  snprintf(j->id, sizeof j->id, "%s", f->id);
  rdev_v1_JobStatus *st = &j->st;
  if (ours) *st = got;
  st->hooks_count = 0;
  if (!ours || !f->status_whole || !srv_job_final(st->state)) {
    st->kept_count = 0;
    if (!ours) {
      snprintf(st->id, sizeof st->id, "%s", f->id);
      st->submitted_ms = f->mtime_ms ? f->mtime_ms : srv_job_now_ms();
    }
    if (!t) st->tenant[0] = '\0';
    char msg[sizeof st->message];
    snprintf(msg, sizeof msg, "its record in the job directory is damaged (%s)", f->damaged);
    srv_job_set_failure_locked(j, "job", RDEV_INTERNAL_ERROR, msg);
    st->state = rdev_v1_JobState_FAILED;
    st->finished_ms = srv_job_now_ms(); /* it is kept from this start on */
  }
  link_sorted(jobs, j);
  srv_log(SRV_LOG_WARN, "job %s (%s): its record is damaged (%s); %s, the file left as it is", j->id,
          t ? t->name : "tenant unknown", f->damaged, srv_job_state_name(st->state));
}

/* A record from the directory: final jobs come back as they were, queued
 * ones are queued again in the order they were submitted, and jobs that
 * were running fail with "server restarted". */
static void load_one(srv_jobs_t *jobs, const srv_job_file_t *f, rdev_v1_JobRecord *rec) {
  const char *id = f->id;
  if (find_locked(jobs, id)) { /* a directory lists a name once: cannot happen */
    pb_release(rdev_v1_JobRecord_fields, rec);
    return;
  }
  if (f->damaged) {
    load_damaged(jobs, f, rec);
    return;
  }
  srv_tenant_t *t = tenant_named(jobs->srv, rec->status.tenant);
  srv_job_t *j = job_new(jobs, t, &rec->spec);
  if (!j) {
    pb_release(rdev_v1_JobRecord_fields, rec);
    return;
  }
  j->st = rec->status;
  snprintf(j->id, sizeof j->id, "%s", id);
  snprintf(j->secret, sizeof j->secret, "%s", rec->secret);
  j->hook_seq = rec->hook_seq;
  pb_release(rdev_v1_JobRecord_fields, rec);
  for (pb_size_t i = 0; i < j->st.kept_count; i++) /* names become paths: only the spec's kind */
    if (!srv_job_name_ok(j->st.kept[i].name)) j->st.kept[i].expires_ms = 0;
  /* A record is data on disk like any other: a job that is to run again
   * must keep the contract (and the tenant's allow list as it is now). */
  char msg[200] = "", why[sizeof j->st.message] = "";
  rdev_v1_JobState s = j->st.state;
  if (!srv_job_final(s)) {
    srv_allow_t *allow = t ? srv_job_allow(t) : NULL;
    int bad = t && srv_job_spec_check(&j->spec, allow, msg, sizeof msg) != GRPC_STATUS_OK;
    srv_allow_free(allow);
    if (!t)
      snprintf(why, sizeof why, "its tenant is gone");
    else if (bad)
      snprintf(why, sizeof why, "its record does not hold a valid spec: %s", msg);
    else if (s != rdev_v1_JobState_QUEUED)
      snprintf(why, sizeof why, "server restarted");
  }
  link_sorted(jobs, j); /* and the queue oldest first */
  if (why[0]) {
    srv_job_set_failure_locked(j, "job", RDEV_UNAVAILABLE, why);
    j->st.state = rdev_v1_JobState_JOB_STATE_UNSPECIFIED; /* not final: enter_locked takes it */
    srv_job_enter_locked(j, rdev_v1_JobState_FAILED);     /* its webhook goes out once senders may start */
    srv_job_save(j);
  } else if (j->st.state == rdev_v1_JobState_QUEUED) {
    srv_job_t **q = &jobs->qhead;
    while (*q && (*q)->st.submitted_ms <= j->st.submitted_ms) q = &(*q)->qnext;
    j->qnext = *q;
    *q = j;
    if (!j->qnext) jobs->qtail = j;
    j->queued = 1;
  }
  srv_log(SRV_LOG_INFO, "job %s (%s): %s%s%s", j->id, j->st.tenant, srv_job_state_name(j->st.state), why[0] ? ": " : "",
          why);
}

/* A kept output's file found at start-up: it stays when its job keeps it,
 * and counts when its job's record had no room to say so (a save that
 * failed, a damaged record), until it expires like any kept output. A file
 * of no job, or of one that no longer keeps it, is removed. */
static void output_found(srv_jobs_t *jobs, const char *id, const char *name, uint64_t bytes, int64_t mtime_ms) {
  srv_job_t *j = find_locked(jobs, id);
  rdev_v1_JobStatus *st = j ? &j->st : NULL;
  pb_size_t i = 0;
  while (st && i < st->kept_count && strcmp(st->kept[i].name, name)) i++;
  if (st && i < st->kept_count && st->kept[i].expires_ms) return;
  if (st && i == st->kept_count && i < sizeof st->kept / sizeof st->kept[0]) {
    rdev_v1_JobKept *k = &st->kept[st->kept_count++];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->bytes = bytes;
    k->expires_ms = mtime_ms + (int64_t)jobs->srv->cfg.job_keep_s * 1000;
    srv_log(SRV_LOG_WARN, "job %s: kept output %s (%llu bytes) found on disk, not in its record; kept", id, name,
            (unsigned long long)bytes);
    srv_job_save(j);
    return;
  }
  srv_log(SRV_LOG_WARN, "job %s: kept output %s of %s; removed", id, name,
          !j                   ? "no job"
          : i < st->kept_count ? "a job that no longer keeps it"
                               : "a job with no room to keep it");
  srv_job_store_out_remove(jobs, id, name);
}

/* After the records: kept outputs whose files are gone are no longer
 * kept, and files of outputs nobody keeps are counted or removed. */
static void outputs_check(srv_jobs_t *jobs) {
  for (srv_job_t *j = jobs->all; j; j = j->next) {
    int gone = 0;
    for (pb_size_t i = 0; i < j->st.kept_count; i++) {
      rdev_v1_JobKept *k = &j->st.kept[i];
      if (k->expires_ms && !srv_job_store_out_exists(jobs, j->id, k->name)) k->expires_ms = 0, gone = 1;
    }
    if (gone) srv_job_save(j);
  }
  srv_job_store_outputs(jobs, output_found);
}

int srv_jobs_open(srv_t *srv) {
  srv->jobs = NULL;
  if (!srv->cfg.job_dir[0]) return 0;
  if (srv_job_store_init(srv->cfg.job_dir) != 0) return -1;
  srv_jobs_t *jobs = calloc(1, sizeof *jobs);
  if (!jobs) return -1;
  jobs->srv = srv;
  snprintf(jobs->dir, sizeof jobs->dir, "%s", srv->cfg.job_dir);
  pthread_mutex_init(&jobs->mu, NULL);
  pthread_cond_init(&jobs->cv, NULL);
  srv_job_store_load(jobs, load_one);
  outputs_check(jobs);
  srv_job_hooks_start(jobs);
  if (pthread_create(&jobs->sched, NULL, sched_main, jobs) != 0) {
    srv_log(SRV_LOG_ERROR, "cannot start the job scheduler");
    srv_job_hooks_stop(jobs, 0);
    pthread_mutex_destroy(&jobs->mu);
    pthread_cond_destroy(&jobs->cv);
    while (jobs->all) {
      srv_job_t *n = jobs->all->next;
      srv_job_free(jobs->all);
      jobs->all = n;
    }
    free(jobs);
    return -1;
  }
  srv->jobs = jobs;
  return 0;
}

void srv_jobs_end_removed(srv_t *srv) {
  srv_jobs_t *jobs = srv->jobs;
  if (!jobs) return;
  pthread_mutex_lock(&jobs->mu);
  for (srv_job_t *j = jobs->all; j; j = j->next) {
    if (!j->live || !j->tenant) continue;
    pthread_mutex_lock(&j->tenant->mu);
    int removed = j->tenant->removed;
    pthread_mutex_unlock(&j->tenant->mu);
    if (removed) atomic_store(&j->cancel, SRV_JOB_STOP_TENANT);
  }
  pthread_cond_broadcast(&jobs->cv); /* the scheduler fails its queued ones */
  pthread_mutex_unlock(&jobs->mu);
}

void srv_jobs_stop(srv_t *srv, const struct timespec *deadline) {
  srv_jobs_t *jobs = srv->jobs;
  if (!jobs) return;
  pthread_mutex_lock(&jobs->mu);
  while (jobs->running > 0 && pthread_cond_timedwait(&jobs->cv, &jobs->mu, deadline) == 0) {}
  jobs->stopping = 1;
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (j->live) atomic_store(&j->cancel, SRV_JOB_STOP_SERVER);
  pthread_cond_broadcast(&jobs->cv);
  pthread_mutex_unlock(&jobs->mu);
  pthread_join(jobs->sched, NULL);
  pthread_mutex_lock(&jobs->mu);
  while (jobs->running > 0) pthread_cond_wait(&jobs->cv, &jobs->mu);
  pthread_mutex_unlock(&jobs->mu);
  srv_job_hooks_stop(jobs, HOOK_GRACE_MS); /* the final states' webhooks get a moment */
}

void srv_jobs_free(srv_t *srv) {
  srv_jobs_t *jobs = srv->jobs;
  if (!jobs) return;
  while (jobs->all) { /* the calls that held jobs went with the server */
    srv_job_t *n = jobs->all->next;
    srv_job_free(jobs->all);
    jobs->all = n;
  }
  pthread_mutex_destroy(&jobs->mu);
  pthread_cond_destroy(&jobs->cv);
  free(jobs);
  srv->jobs = NULL;
}

/* ---- counts for the metrics ------------------------------------------------------ */

void srv_jobs_count(srv_t *srv, void (*fn)(void *user, const char *tenant, const char *state, int n), void *user) {
  srv_jobs_t *jobs = srv->jobs;
  if (!jobs) return;
  enum { NSTATES = rdev_v1_JobState_CANCELLED + 1 };
  typedef struct {
    const srv_tenant_t *t; /* its name is fixed for the life of the record */
    int n[NSTATES];
  } row_t;
  int cap = 0, rows = 0;
  row_t *v = NULL;
  pthread_mutex_lock(&jobs->mu);
  for (srv_job_t *j = jobs->all; j; j = j->next) {
    int r = 0;
    while (r < rows && v[r].t != j->tenant) r++;
    if (r == rows) {
      if (rows == cap) {
        row_t *w = realloc(v, (size_t)(cap = cap ? cap * 2 : 8) * sizeof *v);
        if (!w) break;
        v = w;
      }
      memset(&v[rows], 0, sizeof v[rows]);
      v[rows++].t = j->tenant;
    }
    int st = (int)j->st.state;
    if (st >= 0 && st < NSTATES) v[r].n[st]++;
  }
  pthread_mutex_unlock(&jobs->mu);
  for (int r = 0; r < rows; r++)
    for (int st = rdev_v1_JobState_QUEUED; st < NSTATES; st++)
      fn(user, v[r].t ? v[r].t->name : "-", srv_job_state_name((rdev_v1_JobState)st), v[r].n[st]);
  free(v);
}
