/*
 * server/jobs/job_hook.c — the workers that send jobs' webhooks (jobs.h; the
 * events are made and queued by job_state.c): signed and retried by
 * srv_http_hook (job_http.h), each delivery recorded in the job's status
 * (the latest 16). A worker takes a job with events and sends them
 * in order; no two workers hold jobs of one tenant, so a tenant's slow
 * receiver holds at most one worker, for at most HOOK_DEADLINE_MS an event.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_http.h"
#include "job_private.h"

#define HOOK_DEADLINE_MS 60000 /* one event, its retries included */

/* Records a delivery in j's status: the latest 16 (jobs->mu held). */
static void hook_record_locked(srv_job_t *j, rdev_v1_JobState state, const srv_http_hook_t *h) {
  rdev_v1_JobStatus *st = &j->st;
  const int max = (int)(sizeof st->hooks / sizeof st->hooks[0]);
  if (st->hooks_count == max) {
    memmove(&st->hooks[0], &st->hooks[1], sizeof st->hooks[0] * (size_t)(max - 1));
    st->hooks_count--;
  }
  rdev_v1_JobHook *r = &st->hooks[st->hooks_count++];
  *r = (rdev_v1_JobHook)rdev_v1_JobHook_init_zero;
  r->state = state;
  r->delivered = h->status == RDEV_OK;
  r->http_status = (int32_t)h->http_status;
  r->attempts = (uint32_t)h->tries;
  r->at_ms = h->at_ms;
  snprintf(r->error, sizeof r->error, "%s", h->error);
}

/* A job with events whose tenant no worker serves now (jobs->mu held). */
static srv_job_t *ready_locked(srv_jobs_t *jobs) {
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (j->hq_head && !j->hook_busy && !(j->tenant && j->tenant->job_hooks_busy)) return j;
  return NULL;
}

static int hooks_pending_locked(srv_jobs_t *jobs) {
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (j->hq_head || j->hook_busy) return 1;
  return 0;
}

static void *hook_worker(void *arg) {
  srv_jobs_t *jobs = arg;
  const srv_config_t *cfg = &jobs->srv->cfg;
  pthread_mutex_lock(&jobs->mu);
  for (;;) {
    srv_job_t *j = NULL;
    while (!jobs->hooks_stopping && !(j = ready_locked(jobs))) pthread_cond_wait(&jobs->hook_cv, &jobs->mu);
    if (!j) break;
    hook_ev_t *e = j->hq_head;
    if (!(j->hq_head = e->next)) j->hq_tail = NULL;
    j->hook_busy = 1;
    if (j->tenant) j->tenant->job_hooks_busy++;
    j->refs++;
    pthread_mutex_unlock(&jobs->mu);

    srv_allow_t *allow = j->tenant ? srv_job_allow(j->tenant) : NULL;
    srv_http_opts_t o = {.allow = allow,
                         .retries = j->spec.retries ? (int)j->spec.retries : cfg->job_retries,
                         .deadline_ms = srv_job_mono_ms() + HOOK_DEADLINE_MS,
                         .cancel = &jobs->hooks_cancel,
                         .resolve = cfg->job_resolve[0] ? cfg->job_resolve : NULL};
    srv_http_hook_t h = {0};
    srv_http_hook(j->spec.callback_url, j->secret, e->body, e->len, &o, &h);
    srv_allow_free(allow);
    if (h.status != RDEV_OK)
      srv_log(SRV_LOG_WARN, "job %s: webhook of state %s not delivered: %s", j->id, srv_job_state_name(e->state),
              h.error);

    pthread_mutex_lock(&jobs->mu);
    hook_record_locked(j, e->state, &h);
    j->hook_busy = 0;
    if (j->tenant) j->tenant->job_hooks_busy--;
    srv_job_wake_locked(j);
    pthread_cond_broadcast(&jobs->hook_cv); /* its tenant's other jobs may go now */
    pthread_cond_broadcast(&jobs->cv);      /* the stop's grace counts what is left */
    pthread_mutex_unlock(&jobs->mu);
    free(e->body);
    free(e);
    srv_job_save(j);
    srv_job_unref(j);
    pthread_mutex_lock(&jobs->mu);
  }
  pthread_mutex_unlock(&jobs->mu);
  return NULL;
}

int srv_job_hooks_start(srv_jobs_t *jobs) {
  atomic_init(&jobs->hooks_cancel, 0);
  for (; jobs->nhook_workers < SRV_JOB_HOOK_WORKERS; jobs->nhook_workers++)
    if (pthread_create(&jobs->hook_workers[jobs->nhook_workers], NULL, hook_worker, jobs) != 0) break;
  if (jobs->nhook_workers) return 0;
  srv_log(SRV_LOG_ERROR, "cannot start webhook threads");
  return -1;
}

void srv_job_hooks_stop(srv_jobs_t *jobs, int grace_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += grace_ms / 1000;
  dl.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&jobs->mu);
  while (hooks_pending_locked(jobs) && pthread_cond_timedwait(&jobs->cv, &jobs->mu, &dl) == 0) {}
  jobs->hooks_stopping = 1;
  atomic_store(&jobs->hooks_cancel, 1);
  pthread_cond_broadcast(&jobs->hook_cv);
  pthread_mutex_unlock(&jobs->mu);
  for (int i = 0; i < jobs->nhook_workers; i++) pthread_join(jobs->hook_workers[i], NULL);
  jobs->nhook_workers = 0;
}
