/*
 * server/jobs.c — the job table (jobs.h): submission and the tenant's
 * limits, the queue (first in, first out; a job starts when its tenant has
 * a running slot and the server a runner), the runner threads, states and
 * progress, cancel, watchers, expiry of kept outputs and old records, and
 * the drain. Webhooks are job_hook.c's.
 */
#define _GNU_SOURCE
#include "jobs.h"

#define HOOK_GRACE_MS 2000 /* at the stop: what is left of the webhooks may go out this long */
#define KEEP_FINISHED 256  /* a tenant's finished jobs kept at most (the oldest go first) */

#include <pb_decode.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct final_call {
  final_call_t *next;
  grpc_call *call;
};

uint64_t srv_job_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int64_t srv_job_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *srv_job_state_name(rdev_v1_JobState s) {
  switch (s) {
    case rdev_v1_JobState_QUEUED: return "queued";
    case rdev_v1_JobState_FETCHING: return "fetching";
    case rdev_v1_JobState_RUNNING: return "running";
    case rdev_v1_JobState_DELIVERING: return "delivering";
    case rdev_v1_JobState_SUCCEEDED: return "succeeded";
    case rdev_v1_JobState_FAILED: return "failed";
    case rdev_v1_JobState_CANCELLED: return "cancelled";
    default: return "unknown";
  }
}

srv_allow_t *srv_job_allow(const srv_tenant_t *t) {
  srv_allow_t *list = NULL;
  srv_tenant_t *m = (srv_tenant_t *)t;
  pthread_mutex_lock(&m->mu);
  for (const char *p = t->allow; p && *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char one[SRV_LINE_MAX + 1], why[128];
    snprintf(one, sizeof one, "%.*s", (int)n, p);
    srv_allow_add(&list, one, why, sizeof why); /* checked when the tenants file was read */
    p += n + (e != NULL);
  }
  pthread_mutex_unlock(&m->mu);
  return list;
}

/* ---- references, watchers --------------------------------------------------- */

static void job_free(srv_job_t *j) {
  while (j->finals) { /* cannot happen (runners end final); the server is gone by now */
    final_call_t *f = j->finals;
    j->finals = f->next;
    grpc_call_unref(f->call);
    free(f);
  }
  srv_job_hooks_free(j);
  pb_release(rdev_v1_JobSpec_fields, &j->spec);
  pthread_mutex_destroy(&j->save_mu);
  free(j);
}

void srv_job_unref(srv_job_t *job) {
  srv_jobs_t *jobs = job->jobs;
  pthread_mutex_lock(&jobs->mu);
  int last = --job->refs == 0;
  pthread_mutex_unlock(&jobs->mu);
  if (last) job_free(job);
}

void srv_job_wake_locked(srv_job_t *j) {
  for (srv_watch_t *w = j->watchers; w; w = w->next) w->wake(w);
  if (!srv_job_final(j->st.state)) return;
  while (j->finals) { /* the CancelJob calls waiting for this */
    final_call_t *f = j->finals;
    j->finals = f->next;
    rdev_v1_JobStatus st = j->st;
    st.hooks_count = 0;
    srv_call_respond(f->call, rdev_wire_encode(rdev_v1_JobStatus_fields, &st, NULL), GRPC_STATUS_OK, NULL);
    free(f);
  }
}

int srv_job_watch(srv_job_t *job, srv_watch_t *w) {
  pthread_mutex_lock(&job->jobs->mu);
  int n = 0;
  for (srv_watch_t *o = job->watchers; o; o = o->next) n++;
  if (n >= SRV_JOB_WATCHERS) {
    pthread_mutex_unlock(&job->jobs->mu);
    return -1;
  }
  w->prev = NULL;
  w->next = job->watchers;
  if (w->next) w->next->prev = w;
  job->watchers = w;
  w->wake(w);
  pthread_mutex_unlock(&job->jobs->mu);
  return 0;
}

void srv_job_unwatch(srv_job_t *job, srv_watch_t *w) {
  pthread_mutex_lock(&job->jobs->mu);
  if (w->prev)
    w->prev->next = w->next;
  else if (job->watchers == w)
    job->watchers = w->next;
  if (w->next) w->next->prev = w->prev;
  w->prev = w->next = NULL;
  pthread_mutex_unlock(&job->jobs->mu);
}

void srv_job_status(srv_job_t *job, rdev_v1_JobStatus *out, int brief) {
  pthread_mutex_lock(&job->jobs->mu);
  *out = job->st;
  pthread_mutex_unlock(&job->jobs->mu);
  if (brief) out->hooks_count = 0;
}

/* ---- states -------------------------------------------------------------------- */

/* Enters state (jobs->mu held): times, watchers, webhook. The caller saves. */
static void enter_locked(srv_job_t *j, rdev_v1_JobState state) {
  if (srv_job_final(j->st.state)) return;
  j->st.state = state;
  int64_t now = srv_job_now_ms();
  if (state == rdev_v1_JobState_FETCHING) j->st.started_ms = now;
  if (srv_job_final(state)) j->st.finished_ms = now;
  srv_job_hook_locked(j);
  srv_job_wake_locked(j);
  if (srv_job_final(state)) pthread_cond_broadcast(&j->jobs->cv);
}

void srv_job_enter(srv_job_t *job, rdev_v1_JobState state) {
  pthread_mutex_lock(&job->jobs->mu);
  enter_locked(job, state);
  pthread_mutex_unlock(&job->jobs->mu);
  srv_job_store_save(job->jobs, job);
}

/* Sets the failure's fields (jobs->mu held). */
static void set_failure_locked(srv_job_t *j, const char *at, int code, const char *msg) {
  snprintf(j->st.failed_at, sizeof j->st.failed_at, "%s", at);
  j->st.code = code;
  snprintf(j->st.message, sizeof j->st.message, "%s", msg);
}

void srv_job_fail(srv_job_t *job, const char *failed_at, int code, const char *fmt, ...) {
  char msg[sizeof job->st.message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int cancelled = code == RDEV_CANCELLED && atomic_load(&job->cancel) == SRV_JOB_STOP_CLIENT;
  pthread_mutex_lock(&job->jobs->mu);
  if (!srv_job_final(job->st.state)) {
    set_failure_locked(job, failed_at, code, msg);
    enter_locked(job, cancelled ? rdev_v1_JobState_CANCELLED : rdev_v1_JobState_FAILED);
  }
  pthread_mutex_unlock(&job->jobs->mu);
  srv_job_store_save(job->jobs, job);
}

void srv_job_progress(srv_job_t *job, uint64_t fetched, uint64_t fetch_total, uint64_t delivered, int steps) {
  pthread_mutex_lock(&job->jobs->mu);
  job->st.fetched_bytes += fetched;
  job->st.fetch_total += fetch_total;
  job->st.delivered_bytes += delivered;
  job->st.steps_done += (uint32_t)steps;
  int64_t now = srv_job_now_ms();
  if (steps || now - job->progress_ms >= SRV_JOB_PROGRESS_MS) {
    job->progress_ms = now;
    srv_job_wake_locked(job);
  }
  pthread_mutex_unlock(&job->jobs->mu);
}

/* t's kept bytes on disk, and being written (jobs->mu held). */
static uint64_t kept_bytes_locked(srv_jobs_t *jobs, const srv_tenant_t *t) {
  uint64_t n = 0;
  for (srv_job_t *j = jobs->all; j; j = j->next) {
    if (j->tenant != t) continue;
    n += j->kept_reserved;
    for (pb_size_t i = 0; i < j->st.kept_count; i++)
      if (j->st.kept[i].expires_ms) n += j->st.kept[i].bytes;
  }
  return n;
}

int srv_job_keep_reserve(srv_job_t *job, uint64_t bytes) {
  srv_jobs_t *jobs = job->jobs;
  pthread_mutex_lock(&jobs->mu);
  uint64_t used = kept_bytes_locked(jobs, job->tenant);
  pthread_mutex_lock(&job->tenant->mu);
  uint64_t most = job->tenant->job_disk;
  pthread_mutex_unlock(&job->tenant->mu);
  int ok = used <= most && bytes <= most - used;
  if (ok) job->kept_reserved += bytes;
  pthread_mutex_unlock(&jobs->mu);
  return ok ? 0 : -1;
}

void srv_job_keep_done(srv_job_t *job, const char *name, uint64_t bytes) {
  srv_jobs_t *jobs = job->jobs;
  pthread_mutex_lock(&jobs->mu);
  job->kept_reserved -= bytes;
  rdev_v1_JobStatus *st = &job->st;
  if (name && st->kept_count < sizeof st->kept / sizeof st->kept[0]) {
    rdev_v1_JobKept *k = &st->kept[st->kept_count++];
    snprintf(k->name, sizeof k->name, "%s", name);
    k->bytes = bytes;
    k->expires_ms = srv_job_now_ms() + (int64_t)jobs->srv->cfg.job_keep_s * 1000;
  }
  pthread_mutex_unlock(&jobs->mu);
}

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
  if (atomic_load(&jobs->srv->shutting_down)) {
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
      job_free(j);
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
  pthread_mutex_lock(&jobs->mu);
  int open = 0;
  for (srv_job_t *o = jobs->all; o; o = o->next) open += o->tenant == t && !srv_job_final(o->st.state);
  pthread_mutex_lock(&t->mu);
  int most = t->max_queued_jobs;
  pthread_mutex_unlock(&t->mu);
  if (open >= most || find_locked(jobs, j->id)) {
    pthread_mutex_unlock(&jobs->mu);
    job_free(j);
    snprintf(msg, msglen, "the tenant has %d jobs queued or running (max_queued_jobs %d)", open, most);
    srv_audit(SRV_LOG_WARN, "job refused", t->name, NULL, "reason=%s", msg);
    return GRPC_STATUS_RESOURCE_EXHAUSTED;
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
  srv_job_store_save(jobs, j);
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
  int saved = 0;
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
    atomic_store(&job->cancel, 1);
    if (job->queued) { /* never started: nothing to stop */
      srv_job_t **p = &jobs->qhead, *prev = NULL;
      while (*p != job) prev = *p, p = &(*p)->qnext;
      *p = job->qnext;
      if (jobs->qtail == job) jobs->qtail = prev;
      job->queued = 0;
      set_failure_locked(job, "job", RDEV_CANCELLED, "cancelled before it started");
      enter_locked(job, rdev_v1_JobState_CANCELLED);
      saved = 1;
    }
  }
  if (srv_job_final(job->st.state)) srv_job_wake_locked(job); /* answers call when it was final already */
  pthread_mutex_unlock(&jobs->mu);
  if (saved) srv_job_store_save(jobs, job);
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
  j->live = 0; /* its session is closed: the tenant's next job may have its place */
  int last = --j->refs == 0; /* under the lock: once running is 0, srv_jobs_free may free the rest */
  jobs->running--;
  pthread_cond_broadcast(&jobs->cv);
  pthread_mutex_unlock(&jobs->mu);
  if (last) job_free(j); /* expired while it ran: no longer listed */
  return NULL;
}

/* t's jobs running now (jobs->mu held). */
static int running_of(srv_jobs_t *jobs, const srv_tenant_t *t) {
  int n = 0;
  for (srv_job_t *j = jobs->all; j; j = j->next) n += j->tenant == t && j->live;
  return n;
}

/* Starts the first queued jobs that may start (jobs->mu held); those that
 * fail instead go into changed[] (a reference each) for their records. */
static void start_jobs_locked(srv_jobs_t *jobs, srv_job_t **changed, int *nchanged, int maxc) {
  srv_job_t *prev = NULL, *j = jobs->qhead;
  while (j && jobs->running < jobs->srv->cfg.job_runners && !atomic_load(&jobs->srv->shutting_down) &&
         *nchanged < maxc) {
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
      set_failure_locked(j, "job", RDEV_UNAUTHENTICATED, "its tenant was removed before it started");
      enter_locked(j, rdev_v1_JobState_FAILED);
      j->refs++;
      changed[(*nchanged)++] = j;
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
      j->refs--;
      jobs->running--;
      set_failure_locked(j, "job", RDEV_INTERNAL_ERROR, "cannot start a runner thread");
      enter_locked(j, rdev_v1_JobState_FAILED);
      j->refs++;
      changed[(*nchanged)++] = j;
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
      snprintf(gone[(*ngone)++], sizeof gone[0], "%s", j->id);
      *p = j->next;
      job_free(j);
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
    int ngone = 0, nchanged = 0;
    start_jobs_locked(jobs, changed, &nchanged, MAX);
    expire_locked(jobs, gone, &ngone, MAX, changed, &nchanged, MAX);
    if (ngone || nchanged) {
      pthread_mutex_unlock(&jobs->mu);
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
        srv_job_store_save(jobs, changed[i]);
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

/* A record from the directory: final jobs come back as they were, queued
 * ones are queued again in the order they were submitted, and jobs that
 * were running fail with "server restarted". */
static void load_one(srv_jobs_t *jobs, const char *id, rdev_v1_JobRecord *rec) {
  if (strcmp(rec->status.id, id) != 0 || find_locked(jobs, id)) {
    srv_log(SRV_LOG_WARN, "job record %s: its id is not its file's name; left alone", id);
    pb_release(rdev_v1_JobRecord_fields, rec);
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
  /* the list stays sorted newest first, the queue oldest first */
  srv_job_t **p = &jobs->all;
  while (*p && (*p)->st.submitted_ms > j->st.submitted_ms) p = &(*p)->next;
  j->next = *p;
  *p = j;
  if (why[0]) {
    set_failure_locked(j, "job", RDEV_UNAVAILABLE, why);
    j->st.state = rdev_v1_JobState_JOB_STATE_UNSPECIFIED; /* not final: enter_locked takes it */
    enter_locked(j, rdev_v1_JobState_FAILED);             /* its webhook goes out once the workers run */
    srv_job_store_save(jobs, j);
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
  pthread_cond_init(&jobs->hook_cv, NULL);
  srv_job_store_load(jobs, load_one);
  int hooks = srv_job_hooks_start(jobs) == 0;
  if (!hooks || pthread_create(&jobs->sched, NULL, sched_main, jobs) != 0) {
    srv_log(SRV_LOG_ERROR, "cannot start the job scheduler");
    if (hooks) srv_job_hooks_stop(jobs, 0);
    pthread_mutex_destroy(&jobs->mu);
    pthread_cond_destroy(&jobs->cv);
    pthread_cond_destroy(&jobs->hook_cv);
    while (jobs->all) {
      srv_job_t *n = jobs->all->next;
      job_free(jobs->all);
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
    job_free(jobs->all);
    jobs->all = n;
  }
  pthread_mutex_destroy(&jobs->mu);
  pthread_cond_destroy(&jobs->cv);
  pthread_cond_destroy(&jobs->hook_cv);
  free(jobs);
  srv->jobs = NULL;
}
