/*
 * server/grants.c — what a job token (rdev/job_token.h) grants: reading one
 * a call presents, checking it with its tenant's signing key and against
 * this server (srv_job_token_tenant, for tenants.c's srv_authenticate: the
 * token's device group for this server's --server-name), and
 * whether a session it opened may go on (srv_grant_valid: its expiry, its
 * tenant's key, for the sessions' reaper).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rdev/job_token.h"
#include "srv.h"

static int64_t unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

srv_tenant_t *srv_job_token_tenant(srv_t *srv, const char *tok, size_t len, srv_grant_t *g, const char **why,
                                   grpc_status_code *code) {
  rdev_job_claims_t c;
  char msg[128];
  if (rdev_job_token_claims(tok, len, &c, msg, sizeof msg) != RDEV_OK) {
    *why = "malformed job token";
    return NULL;
  }
  snprintf(g->job, sizeof g->job, "%s", c.job); /* for the audit line, checked or not */
  srv_tenant_t *found = NULL;
  int mac_ok = 0;
  pthread_mutex_lock(&srv->tenants_mu);
  for (srv_tenant_t *t = srv->tenants; t && !found; t = t->next) {
    pthread_mutex_lock(&t->mu);
    if (!strcmp(t->name, c.tenant) && !t->removed && t->has_key) {
      found = t;
      mac_ok = rdev_job_token_check_mac(tok, len, t->signing_key) == RDEV_OK;
      g->key_gen = t->key_gen;
    }
    pthread_mutex_unlock(&t->mu);
  }
  pthread_mutex_unlock(&srv->tenants_mu);
  if (!found) { /* a MAC all the same: no faster answer tells which tenants have keys */
    static const uint8_t none[RDEV_JOB_KEY_LEN];
    (void)rdev_job_token_check_mac(tok, len, none);
  }
  if (!found || !mac_ok) {
    *why = "job token not signed with its tenant's key";
    return NULL;
  }
  if (c.exp * 1000 <= unix_ms()) {
    *why = "job token expired";
    return NULL;
  }
  uint64_t granted = rdev_job_claims_devices(&c, srv->cfg.server_name); /* this server's group only */
  pthread_mutex_lock(&found->mu);
  uint64_t mine = found->devices;
  pthread_mutex_unlock(&found->mu);
  if (!granted || (granted & ~mine)) {
    *why = !granted ? "job token not for this server" : "job token names devices the tenant may not use";
    *code = GRPC_STATUS_PERMISSION_DENIED;
    return NULL;
  }
  g->devices = granted;
  g->expires_ms = c.exp * 1000;
  return found;
}

int srv_grant_valid(srv_tenant_t *t, const srv_grant_t *g, const char **why) {
  if (!g->job[0]) return 0;
  if (g->expires_ms && unix_ms() >= g->expires_ms) {
    *why = "job token expired";
    return -1;
  }
  pthread_mutex_lock(&t->mu);
  int rotated = t->key_gen != g->key_gen;
  pthread_mutex_unlock(&t->mu);
  if (rotated) {
    *why = "job token's signing key changed";
    return -1;
  }
  return 0;
}
