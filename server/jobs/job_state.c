/*
 * server/jobs/job_state.c — one job's life as the other job files see it
 * (jobs.h): its references, watchers and status, its states, failure and
 * progress, its kept outputs against the tenant's job disk quota, its
 * webhook events as they are made (JSON, queued for job_hook.c's senders),
 * and its record (made here, written by job_store.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pb_decode.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "job_private.h"

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

void srv_job_free(srv_job_t *j) {
  while (j->finals) { /* answered when it became final; left only at a stop, the server gone */
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
  if (last) srv_job_free(job);
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

/* A status's fields for entering state at now. */
static void set_state(rdev_v1_JobStatus *st, rdev_v1_JobState state, int64_t now) {
  st->state = state;
  if (state == rdev_v1_JobState_FETCHING) st->started_ms = now;
  if (srv_job_final(state)) st->finished_ms = now;
}

/* Enters state at now (jobs->mu held): times, watchers, webhook. */
static void enter_at_locked(srv_job_t *j, rdev_v1_JobState state, int64_t now) {
  if (srv_job_final(j->st.state)) return;
  set_state(&j->st, state, now);
  srv_job_hook_locked(j);
  srv_job_wake_locked(j);
  if (srv_job_final(state)) pthread_cond_broadcast(&j->jobs->cv);
}

void srv_job_enter_locked(srv_job_t *j, rdev_v1_JobState state) { enter_at_locked(j, state, srv_job_now_ms()); }

/* A failure's place, code and message into a status. */
static void set_failure(rdev_v1_JobStatus *st, const char *at, int code, const char *msg) {
  snprintf(st->failed_at, sizeof st->failed_at, "%s", at);
  st->code = code;
  snprintf(st->message, sizeof st->message, "%s", msg);
}

void srv_job_set_failure_locked(srv_job_t *j, const char *at, int code, const char *msg) {
  set_failure(&j->st, at, code, msg);
}

/* A state to enter at now; with at, a failure's fields too. */
typedef struct {
  rdev_v1_JobState state;
  int64_t now;
  const char *at, *msg;
  int code;
} change_t;

static int save_with(srv_job_t *job, const change_t *c, int make);

int srv_job_enter(srv_job_t *job, rdev_v1_JobState state) {
  change_t c = {.state = state, .now = srv_job_now_ms()};
  return save_with(job, &c, 1);
}

void srv_job_end(srv_job_t *job, rdev_v1_JobState state, const char *at, int code, const char *msg) {
  change_t c = {.state = state, .now = srv_job_now_ms(), .at = at, .msg = msg, .code = code};
  save_with(job, &c, 1);
}

void srv_job_fail(srv_job_t *job, const char *failed_at, int code, const char *fmt, ...) {
  char msg[sizeof job->st.message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int cancelled = code == RDEV_CANCELLED && atomic_load(&job->cancel) == SRV_JOB_STOP_CLIENT;
  srv_job_end(job, cancelled ? rdev_v1_JobState_CANCELLED : rdev_v1_JobState_FAILED, failed_at, code, msg);
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

/* ---- webhook events ------------------------------------------------------------- */

/* s as a JSON string (quoted, escaped) at the end of buf (cap bytes). */
static size_t json_str(char *buf, size_t at, size_t cap, const char *s) {
  if (at < cap) buf[at] = '"';
  at++;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    const char *piece = esc;
    if (*p == '"' || *p == '\\')
      snprintf(esc, sizeof esc, "\\%c", *p);
    else if (*p < 0x20)
      snprintf(esc, sizeof esc, "\\u%04x", *p);
    else
      esc[0] = (char)*p, esc[1] = '\0';
    for (; *piece; piece++, at++)
      if (at < cap) buf[at] = *piece;
  }
  if (at < cap) buf[at] = '"';
  return at + 1;
}

/* The webhook event of j's status now (jobs->mu held): malloc'd JSON. */
static char *event_json(srv_job_t *j, size_t *len) {
  const rdev_v1_JobStatus *st = &j->st;
  size_t cap = 4096, at = 0; /* the escaped strings fit, six times escaped */
  char *b = malloc(cap);
  if (!b) return NULL;
#define PUT(...) at += (size_t)snprintf(b + (at < cap ? at : cap), at < cap ? cap - at : 0, __VA_ARGS__)
  PUT("{\"seq\":%llu,\"id\":\"%s\",\"name\":", (unsigned long long)++j->hook_seq, st->id);
  at = json_str(b, at, cap, st->name);
  PUT(",\"state\":\"%s\",\"time_ms\":%lld,\"failed_at\":", srv_job_state_name(st->state), (long long)srv_job_now_ms());
  at = json_str(b, at, cap, st->failed_at);
  PUT(",\"code\":%d,\"message\":", (int)st->code);
  at = json_str(b, at, cap, st->message);
  PUT(",\"fetched_bytes\":%llu,\"steps_done\":%u,\"steps_total\":%u,\"delivered_bytes\":%llu}",
      (unsigned long long)st->fetched_bytes, (unsigned)st->steps_done, (unsigned)st->steps_total,
      (unsigned long long)st->delivered_bytes);
#undef PUT
  if (at >= cap) { /* cannot happen with the fields' sizes; never send a cut event */
    free(b);
    return NULL;
  }
  *len = at;
  return b;
}

/* Queues the event of j's state now for its callback URL (jobs->mu held). */
void srv_job_hook_locked(srv_job_t *j) {
  if (!j->spec.callback_url || !j->spec.callback_url[0]) return;
  hook_ev_t *e = calloc(1, sizeof *e);
  if (!e || !(e->body = event_json(j, &e->len))) {
    free(e);
    srv_log(SRV_LOG_ERROR, "job %s: out of memory for a webhook event", j->id);
    return;
  }
  e->state = j->st.state;
  if (j->hq_tail)
    j->hq_tail->next = e;
  else
    j->hq_head = e;
  j->hq_tail = e;
  if (j->jobs->hook_kick) j->jobs->hook_kick(j);
}

void srv_job_hooks_free(srv_job_t *j) {
  while (j->hq_head) {
    hook_ev_t *e = j->hq_head;
    j->hq_head = e->next;
    free(e->body);
    free(e);
  }
  j->hq_tail = NULL;
}

/* ---- the record ------------------------------------------------------------------ */

int srv_job_store_code(int e) { return e == ENOSPC || e == EDQUOT ? RDEV_STORAGE_OVER_LIMIT : RDEV_INTERNAL_ERROR; }

/* Writes job's record (job->save_mu held); with c, as it will be once c
 * is made (its webhook event counted), unless the job is final already. */
static int write_record(srv_job_t *job, const change_t *c) {
  if (job->damaged) return 0;
  srv_jobs_t *jobs = job->jobs;
  rdev_v1_JobRecord *rec = calloc(1, sizeof *rec);
  if (!rec) return ENOMEM;
  rec->spec = job->spec; /* shares its URLs: encoded only, never released */
  rec->has_spec = true;
  pthread_mutex_lock(&jobs->mu);
  rec->status = job->st;
  rec->hook_seq = job->hook_seq;
  pthread_mutex_unlock(&jobs->mu);
  if (c && !srv_job_final(rec->status.state)) {
    if (c->at) set_failure(&rec->status, c->at, c->code, c->msg);
    set_state(&rec->status, c->state, c->now);
    rec->hook_seq += job->spec.callback_url && job->spec.callback_url[0];
  }
  rec->has_status = true;
  snprintf(rec->secret, sizeof rec->secret, "%s", job->secret);
  int rc = srv_job_store_write(jobs, job->id, rec);
  free(rec);
  return rc;
}

/* Writes job's record, as c will make it; with make, then makes c (a
 * final state even when the record could not be written), in the same
 * hold of job->save_mu: no one hears of c before its record is on disk
 * (no write of it is still under way), and a save that comes later
 * writes what c made, never the state before it. */
static int save_with(srv_job_t *job, const change_t *c, int make) {
  pthread_mutex_lock(&job->save_mu);
  int rc = write_record(job, c);
  if (make && (!rc || srv_job_final(c->state))) {
    pthread_mutex_lock(&job->jobs->mu);
    if (!srv_job_final(job->st.state)) { /* a final state stays as the first end made it */
      if (c->at) set_failure(&job->st, c->at, c->code, c->msg);
      enter_at_locked(job, c->state, c->now);
    }
    pthread_mutex_unlock(&job->jobs->mu);
  }
  pthread_mutex_unlock(&job->save_mu);
  return rc;
}

int srv_job_save(srv_job_t *job) { return save_with(job, NULL, 0); }

int srv_job_save_entering(srv_job_t *job, rdev_v1_JobState state, int64_t now) {
  change_t c = {.state = state, .now = now};
  return save_with(job, &c, 0);
}
