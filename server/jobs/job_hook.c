/*
 * server/jobs/job_hook.c — the threads that send jobs' webhooks (jobs.h; the
 * events are made and queued by job_state.c): signed and retried by
 * srv_http_hook (job_http.h), each delivery recorded in the job's status
 * (the latest 16). Each tenant with events has its own sender thread (the
 * jobs whose tenant is gone share one), started when the tenant's first
 * event is queued and gone once none is left; it sends one event at a
 * time, each job's in order. So a tenant's slow receiver holds only its own
 * sender, for at most HOOK_DEADLINE_MS an event, and never another
 * tenant's events. A sender that left is joined by the next sender to
 * start, or by the stop.
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

/* A job of tenant t (NULL: the jobs whose tenant is gone) with events to
 * send, or NULL (jobs->mu held). */
static srv_job_t *ready_locked(srv_jobs_t *jobs, const srv_tenant_t *t) {
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (j->hq_head && !j->hook_busy && j->tenant == t) return j;
  return NULL;
}

/* Joins and frees a list of senders that left their loop. */
static void reap(srv_hook_sender_t *s) {
  while (s) {
    srv_hook_sender_t *n = s->next;
    pthread_join(s->thread, NULL);
    free(s);
    s = n;
  }
}

/* Sends one event of j, taken off its queue (jobs->mu held; held again on
 * return, dropped meanwhile). */
static void send_one_locked(srv_jobs_t *jobs, srv_job_t *j) {
  const srv_config_t *cfg = &jobs->srv->cfg;
  hook_ev_t *e = j->hq_head;
  if (!(j->hq_head = e->next)) j->hq_tail = NULL;
  j->hook_busy = 1;
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
  srv_job_wake_locked(j);
  pthread_mutex_unlock(&jobs->mu);
  free(e->body);
  free(e);
  srv_job_save(j);
  srv_job_unref(j);
  pthread_mutex_lock(&jobs->mu);
}

/* A tenant's sender: joins the senders that left before it, sends its
 * tenant's events until none is left or the stop, then leaves (moves itself
 * from jobs->hook_senders to jobs->hook_ended) in the same hold of jobs->mu
 * in which it found none, so an event queued later starts a new sender. */
static void *hook_sender(void *arg) {
  srv_hook_sender_t *s = arg;
  srv_jobs_t *jobs = s->jobs;
  pthread_mutex_lock(&jobs->mu);
  srv_hook_sender_t *ended = jobs->hook_ended;
  jobs->hook_ended = NULL;
  pthread_mutex_unlock(&jobs->mu);
  reap(ended);

  pthread_mutex_lock(&jobs->mu);
  srv_job_t *j;
  while (jobs->hooks_on && (j = ready_locked(jobs, s->tenant))) send_one_locked(jobs, j);
  srv_hook_sender_t **p = &jobs->hook_senders;
  while (*p != s) p = &(*p)->next;
  *p = s->next;
  s->next = jobs->hook_ended;
  jobs->hook_ended = s;
  pthread_cond_broadcast(&jobs->cv); /* the stop waits for the senders to leave */
  pthread_mutex_unlock(&jobs->mu);
  return NULL;
}

static void kick_locked(srv_job_t *j) {
  srv_jobs_t *jobs = j->jobs;
  if (!jobs->hooks_on) return;
  for (srv_hook_sender_t *s = jobs->hook_senders; s; s = s->next)
    if (s->tenant == j->tenant) return; /* it looks for more before it leaves */
  srv_hook_sender_t *s = calloc(1, sizeof *s);
  if (s) {
    s->jobs = jobs;
    s->tenant = j->tenant;
    if (pthread_create(&s->thread, NULL, hook_sender, s) == 0) {
      s->next = jobs->hook_senders;
      jobs->hook_senders = s;
      return;
    }
    free(s);
  }
  srv_log(SRV_LOG_ERROR, "job %s: cannot start a webhook thread; its events wait for its tenant's next one", j->id);
}

void srv_job_hooks_start(srv_jobs_t *jobs) {
  atomic_init(&jobs->hooks_cancel, 0);
  pthread_mutex_lock(&jobs->mu);
  jobs->hooks_on = 1;
  jobs->hook_kick = kick_locked;
  for (srv_job_t *j = jobs->all; j; j = j->next)
    if (j->hq_head) kick_locked(j); /* events of the records loaded */
  pthread_mutex_unlock(&jobs->mu);
}

void srv_job_hooks_stop(srv_jobs_t *jobs, int grace_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += grace_ms / 1000;
  dl.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&jobs->mu);
  while (jobs->hook_senders && pthread_cond_timedwait(&jobs->cv, &jobs->mu, &dl) == 0) {}
  jobs->hooks_on = 0;
  atomic_store(&jobs->hooks_cancel, 1);
  while (jobs->hook_senders) pthread_cond_wait(&jobs->cv, &jobs->mu);
  srv_hook_sender_t *ended = jobs->hook_ended;
  jobs->hook_ended = NULL;
  pthread_mutex_unlock(&jobs->mu);
  reap(ended);
}
