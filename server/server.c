/*
 * server/server.c — rdevd's gRPC side: binds the listen address (plaintext,
 * TLS or mutual TLS), authenticates every call but health probes, registers
 * the Device service's methods (the job calls are job_rpc.c's) and
 * grpc.health.v1.Health/Check by hand (gRPC C core has no C code generation), keeps a call request
 * pending for every method plus one for unregistered methods (answered
 * UNIMPLEMENTED, so they never hang), answers the unary calls, runs the
 * completion-queue threads (one queue each), and drains on shutdown.
 */
#define _GNU_SOURCE
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobs/jobs.h"
#include "metrics/metrics.h"
#include "srv.h"

enum { K_SESSION, K_INFO, K_LIST, K_HEALTH, K_DONE, K_JOB, K_UNKNOWN = K_JOB + SRV_JOB_CALLS };

static const char *const job_methods[SRV_JOB_CALLS] = {RDEV_WIRE_METHOD_SUBMIT_JOB, RDEV_WIRE_METHOD_GET_JOB,
                                                       RDEV_WIRE_METHOD_WATCH_JOB,  RDEV_WIRE_METHOD_CANCEL_JOB,
                                                       RDEV_WIRE_METHOD_LIST_JOBS,  RDEV_WIRE_METHOD_FETCH_OUTPUT};

typedef struct {
  srv_op_t op;
  srv_t *srv;
  int kind;
  int shard; /* the completion queue it was requested on */
  grpc_call *call;
  gpr_timespec deadline;
  grpc_metadata_array md;
  grpc_call_details details;
  grpc_byte_buffer *payload;
} accept_t;

static void on_accept(srv_op_t *op, int ok);

/* Keeps one call request pending for a method kind on a shard. */
static void arm(srv_t *srv, int kind, int shard) {
  accept_t *a = calloc(1, sizeof *a);
  if (!a) {
    srv_log(SRV_LOG_ERROR, "out of memory arming a call request");
    return;
  }
  a->op.done = on_accept;
  a->srv = srv;
  a->kind = kind;
  a->shard = shard;
  grpc_completion_queue *cq = srv->cqs[shard];
  grpc_metadata_array_init(&a->md);
  grpc_call_details_init(&a->details);
  grpc_call_error e;
  RDEV_HANDOFF_GIVE(a);
  if (kind == K_UNKNOWN) {
    e = grpc_server_request_call(srv->server, &a->call, &a->details, &a->md, cq, cq, a);
  } else {
    void *m = kind == K_SESSION ? srv->m_session
              : kind == K_INFO  ? srv->m_info
              : kind == K_LIST  ? srv->m_list
              : kind == K_DONE  ? srv->m_done
              : kind >= K_JOB   ? srv->m_jobs[kind - K_JOB]
                                : srv->m_health;
    e = grpc_server_request_registered_call(srv->server, m, &a->call, &a->deadline, &a->md,
                                            kind == K_SESSION ? NULL : &a->payload, cq, cq, a);
  }
  if (e != GRPC_CALL_OK) {
    srv_log(SRV_LOG_ERROR, "cannot request calls (%d)", e);
    grpc_metadata_array_destroy(&a->md);
    grpc_call_details_destroy(&a->details);
    free(a);
  }
}

static grpc_byte_buffer *info_reply(srv_t *srv, srv_tenant_t *t, const srv_grant_t *g) {
  rdev_v1_InfoReply r = rdev_v1_InfoReply_init_zero;
  snprintf(r.version, sizeof r.version, "%s", RDEV_VERSION);
  snprintf(r.backend, sizeof r.backend, "%s", rdev_rt_backend_name(srv->rt));
  snprintf(r.identity, sizeof r.identity, "%s", t->name);
  int ndev = 0;
  rdev_rt_device_count(srv->rt, &ndev);
  r.device_count = srv_tenant_device_count(t, g->devices, ndev);
  r.max_chunk = RDEV_WIRE_MAX_CHUNK;
  int nk;
  const rdev_kernel_sig_t *k = rdev_rt_kernels(&nk);
  for (int i = 0; i < nk && i < (int)(sizeof r.kernels / sizeof r.kernels[0]); i++) {
    if (!rdev_rt_kernel_offered(srv->rt, k[i].name)) continue;
    rdev_v1_KernelInfo *ki = &r.kernels[r.kernels_count++];
    snprintf(ki->name, sizeof ki->name, "%s", k[i].name);
    snprintf(ki->doc, sizeof ki->doc, "%s", k[i].doc);
    for (int p = 0; p < k[i].nparams; p++) {
      rdev_v1_KernelParam *kp = &ki->params[ki->params_count++];
      snprintf(kp->name, sizeof kp->name, "%s", k[i].params[p].name);
      snprintf(kp->type, sizeof kp->type, "%s", rdev_arg_type_name(k[i].params[p].type));
    }
  }
  return rdev_wire_encode(rdev_v1_InfoReply_fields, &r, NULL);
}

/* The devices the tenant may use (those g grants), by the tenant's own numbering. */
static grpc_byte_buffer *list_reply(srv_t *srv, srv_tenant_t *t, const srv_grant_t *g) {
  rdev_v1_ListDevicesReply r = rdev_v1_ListDevicesReply_init_zero;
  int n = 0, d;
  rdev_rt_device_count(srv->rt, &n);
  for (int i = 0;
       (d = srv_tenant_device(t, g->devices, n, i)) >= 0 && i < (int)(sizeof r.devices / sizeof r.devices[0]); i++) {
    rdev_rt_device_info_t info;
    if (rdev_rt_device_info(srv->rt, d, &info) != RDEV_OK) continue;
    rdev_v1_DeviceInfo *di = &r.devices[r.devices_count++];
    di->index = i;
    snprintf(di->name, sizeof di->name, "%s", info.name);
    di->total_bytes = info.total_bytes;
    di->free_bytes = info.free_bytes;
    pthread_mutex_lock(&t->mu);
    di->quota_bytes = t->mem_quota == SIZE_MAX ? 0 : t->mem_quota;
    di->used_bytes = d < 64 ? t->mem_used[d] : 0;
    pthread_mutex_unlock(&t->mu);
  }
  return rdev_wire_encode(rdev_v1_ListDevicesReply_fields, &r, NULL);
}

/* Whether rdevd serves: started (every queue armed), not draining, and
 * the backend answers for its devices. */
static int serving(srv_t *srv) {
  int ndev = 0;
  return atomic_load(&srv->ready) && !atomic_load(&srv->draining) && rdev_rt_device_count(srv->rt, &ndev) == RDEV_OK &&
         ndev > 0;
}

/* grpc.health.v1 Check, per service: "" (the server as a whole) and
 * rdev.v1.Device are SERVING or NOT_SERVING (starting, draining, no
 * devices); any other name is NOT_FOUND. */
static void health_check(srv_t *srv, grpc_call *call, grpc_byte_buffer *payload) {
  grpc_health_v1_HealthCheckRequest q = grpc_health_v1_HealthCheckRequest_init_zero;
  if (!rdev_wire_decode(payload, grpc_health_v1_HealthCheckRequest_fields, &q, NULL)) {
    srv_call_respond(call, NULL, GRPC_STATUS_INVALID_ARGUMENT, "malformed HealthCheckRequest");
    return;
  }
  if (q.service[0] && strcmp(q.service, "rdev.v1.Device") != 0) {
    srv_call_respond(call, NULL, GRPC_STATUS_NOT_FOUND, "unknown service");
    return;
  }
  grpc_health_v1_HealthCheckResponse r = grpc_health_v1_HealthCheckResponse_init_zero;
  r.status = serving(srv) ? grpc_health_v1_HealthCheckResponse_ServingStatus_SERVING
                          : grpc_health_v1_HealthCheckResponse_ServingStatus_NOT_SERVING;
  srv_call_respond(call, rdev_wire_encode(grpc_health_v1_HealthCheckResponse_fields, &r, NULL), GRPC_STATUS_OK, NULL);
}

static void host_func_done(srv_t *srv, srv_tenant_t *t, const srv_grant_t *g, grpc_call *call,
                           grpc_byte_buffer *payload) {
  rdev_v1_HostFuncDoneRequest q = rdev_v1_HostFuncDoneRequest_init_zero;
  if (!rdev_wire_decode(payload, rdev_v1_HostFuncDoneRequest_fields, &q, NULL)) {
    srv_call_respond(call, NULL, GRPC_STATUS_INVALID_ARGUMENT, "malformed HostFuncDoneRequest");
    return;
  }
  if (srv_host_func_done(srv, t, g->job, q.session, q.stream, q.seq) != 0) {
    srv_call_respond(call, NULL, GRPC_STATUS_NOT_FOUND, "no such host function waits");
    return;
  }
  rdev_v1_HostFuncDoneReply r = rdev_v1_HostFuncDoneReply_init_zero;
  srv_call_respond(call, rdev_wire_encode(rdev_v1_HostFuncDoneReply_fields, &r, NULL), GRPC_STATUS_OK, NULL);
}

static void on_accept(srv_op_t *op, int ok) {
  accept_t *a = (accept_t *)op;
  srv_t *srv = a->srv;
  if (ok && !atomic_load(&srv->shutting_down)) arm(srv, a->kind, a->shard);
  srv_tenant_t *t = NULL;
  srv_grant_t grant = {.devices = ~0ULL};
  if (ok && a->kind != K_HEALTH && a->kind != K_UNKNOWN) {
    const char *why;
    grpc_status_code code;
    t = srv_authenticate(srv, a->call, &a->md, &grant, &why, &code);
    if (t && grant.job[0] && a->kind >= K_JOB) { /* a job token uses devices; it does not run jobs */
      t = NULL, why = "a job token opens sessions only", code = GRPC_STATUS_PERMISSION_DENIED;
    }
    if (!t) {
      char *peer = grpc_call_get_peer(a->call);
      srv_audit(SRV_LOG_WARN, "authentication failed", NULL, peer, "reason=%s%s%s", why,
                grant.job[0] ? " claimed_job=" : "", grant.job); /* unverified unless the MAC passed */
      srv_metrics_auth_failure(why);
      gpr_free(peer);
      srv_call_respond(a->call, NULL, code, code == GRPC_STATUS_UNAUTHENTICATED ? "authentication failed" : why);
      ok = 0; /* answered */
    }
  }
  if (ok) {
    switch (a->kind) {
      case K_SESSION: {
        char msg[256];
        if (srv_session_resume(srv, a->call, a->deadline, t, &grant, &a->md)) break;
        if (atomic_load(&srv->draining)) { /* sessions open may finish; no new one starts */
          srv_call_respond(a->call, NULL, GRPC_STATUS_UNAVAILABLE, "the server is draining");
          break;
        }
        if (srv_session_start(srv, a->call, a->deadline, t, &grant, &a->md, msg, sizeof msg) != 0)
          srv_call_respond(a->call, NULL, GRPC_STATUS_RESOURCE_EXHAUSTED, msg);
        break;
      }
      case K_INFO: srv_call_respond(a->call, info_reply(srv, t, &grant), GRPC_STATUS_OK, NULL); break;
      case K_LIST: srv_call_respond(a->call, list_reply(srv, t, &grant), GRPC_STATUS_OK, NULL); break;
      case K_HEALTH: health_check(srv, a->call, a->payload); break;
      case K_DONE: host_func_done(srv, t, &grant, a->call, a->payload); break;
      case K_JOB + SRV_JOB_SUBMIT:
      case K_JOB + SRV_JOB_GET:
      case K_JOB + SRV_JOB_WATCH:
      case K_JOB + SRV_JOB_CANCEL:
      case K_JOB + SRV_JOB_LIST:
      case K_JOB + SRV_JOB_FETCH: srv_job_call(srv, a->kind - K_JOB, t, a->call, a->payload); break;
      case K_UNKNOWN: {
        char *m = grpc_slice_to_c_string(a->details.method);
        srv_log(SRV_LOG_INFO, "unknown method %s", m);
        gpr_free(m);
        srv_call_respond(a->call, NULL, GRPC_STATUS_UNIMPLEMENTED, "unknown method");
        break;
      }
    }
  }
  if (a->payload) grpc_byte_buffer_destroy(a->payload);
  grpc_metadata_array_destroy(&a->md);
  grpc_call_details_destroy(&a->details);
  free(a);
}

static void *cq_thread(void *arg) {
  grpc_completion_queue *cq = arg;
  int since = 0;
  for (;;) {
    grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_past(GPR_CLOCK_MONOTONIC), NULL);
    if (ev.type == GRPC_QUEUE_TIMEOUT || ++since >= 16) {
      since = 0;
      srv_sessions_post_deferred();
      if (ev.type == GRPC_QUEUE_TIMEOUT) ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
    }
    if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
    if (ev.type != GRPC_OP_COMPLETE) continue;
    RDEV_HANDOFF_TAKE(ev.tag);
    ((srv_op_t *)ev.tag)->done(ev.tag, ev.success);
  }
  /* Nothing is left deferred: the list is flushed before every blocking
   * wait, and srv_stop shuts the queues down only once every session, a
   * deferred one included, is gone. */
  return NULL;
}

/* Drops rdevd's hold on gRPC and waits, up to 10 s, until gRPC has shut
 * down: a connection still closing holds gRPC too (its channel's
 * grpc_init), so the last grpc_shutdown may be its own, on gRPC's executor
 * thread, which then cleans up on a thread of its own (grpc.h). Without the
 * wait rdevd's exit ran beside that work: OpenSSL's exit handler removed
 * its thread-local keys while the executor, which had just sent a TLS
 * connection's GOAWAY, still held its per-thread error queue (ERR_STATE,
 * 904 bytes), and LeakSanitizer reported it; and what gRPC let go of
 * afterwards could find the runtime closed. */
static void grpc_shutdown_whole(void) {
  grpc_shutdown();
  for (int i = 0; i < 1000 && grpc_is_initialized(); i++) usleep(10000);
  if (grpc_is_initialized()) srv_log(SRV_LOG_WARN, "gRPC still shutting down after 10 s");
}

/* Plaintext, TLS, or mutual TLS (client certificates required and verified). */
static grpc_server_credentials *server_creds(const srv_config_t *cfg) {
  if (!cfg->tls_cert[0]) return grpc_insecure_server_credentials_create();
  char *cert = rdev_wire_read_file(cfg->tls_cert), *key = rdev_wire_read_file(cfg->tls_key);
  char *ca = cfg->tls_client_ca[0] ? rdev_wire_read_file(cfg->tls_client_ca) : NULL;
  grpc_server_credentials *creds = NULL;
  if (!cert || !key || (cfg->tls_client_ca[0] && !ca)) {
    srv_log(SRV_LOG_ERROR, "cannot read %s", !cert ? cfg->tls_cert : !key ? cfg->tls_key : cfg->tls_client_ca);
  } else {
    grpc_ssl_pem_key_cert_pair pair = {key, cert};
    creds = grpc_ssl_server_credentials_create_ex(
        ca, &pair, 1,
        ca ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
        NULL);
  }
  free(cert);
  free(key);
  free(ca);
  return creds;
}

int srv_open(srv_t *srv) {
  pthread_mutex_init(&srv->mu, NULL);
  pthread_mutex_init(&srv->bins_mu, NULL);
  pthread_cond_init(&srv->cv, NULL);
  atomic_init(&srv->next_session_id, 1);
  if (!(srv->zc = srv_zc_new())) {
    srv_log(SRV_LOG_ERROR, "out of memory");
    return -1;
  }
  if (srv_tenants_init(srv) != 0) {
    srv_zc_free(srv->zc);
    return -1;
  }
  rdev_rt_config_t rc = {.backend = srv->cfg.backend,
                         .sim_devices = srv->cfg.sim_devices,
                         .sim_mem_bytes = srv->cfg.sim_mem_bytes,
                         .stream_depth = SRV_STREAM_DEPTH,
                         .slots = (unsigned)srv->cfg.sim_slots,
                         .sim_unmapped = !srv->cfg.sim_host_view,
                         .acl_lib = srv->cfg.acl_lib[0] ? srv->cfg.acl_lib : NULL,
                         .acl_kernels = srv->cfg.acl_kernels[0] ? srv->cfg.acl_kernels : NULL,
                         .acl_opapi = srv->cfg.acl_opapi[0] ? srv->cfg.acl_opapi : NULL,
                         .task_done = srv_metrics_task};
  int err = rdev_rt_open(&rc, &srv->rt);
  if (err) {
    srv_log(SRV_LOG_ERROR, "cannot open the %s backend: %s (%s)", srv->cfg.backend, rdev_strerror(err),
            rdev_rt_last_error());
    srv_tenants_free(srv);
    srv_zc_free(srv->zc);
    return -1;
  }
  return 0;
}

/* Whether gRPC let go of every reply slice that holds runtime memory
 * (shown device memory, staging buffers), waiting up to 10 s: it may keep
 * them a moment after their calls are gone. */
static int replies_gone(srv_t *srv) {
  for (int i = 0; i < 10000 && (srv_zc_held(srv->zc) > 0 || rdev_rt_staging_lent(srv->rt) > 0); i++) usleep(1000);
  return srv_zc_held(srv->zc) == 0 && rdev_rt_staging_lent(srv->rt) == 0;
}

void srv_close(srv_t *srv) {
  srv_zc_stop(srv->zc);
  if (!replies_gone(srv)) {
    srv_log(SRV_LOG_ERROR, "%d shown replies and %zu staging buffers still held by gRPC: the runtime is left open",
            srv_zc_held(srv->zc), rdev_rt_staging_lent(srv->rt));
    return;
  }
  rdev_rt_close(srv->rt);
  srv_tenants_free(srv);
  srv_zc_free(srv->zc);
  pthread_mutex_destroy(&srv->mu);
  pthread_mutex_destroy(&srv->bins_mu);
  pthread_cond_destroy(&srv->cv);
}

/* gRPC's own log lines, in logfmt or JSON, through srv_log like every other. */
static void grpc_log_line(gpr_log_func_args *a) {
  int level = a->severity == GPR_LOG_SEVERITY_ERROR  ? SRV_LOG_ERROR
              : a->severity == GPR_LOG_SEVERITY_INFO ? SRV_LOG_INFO
                                                     : SRV_LOG_DEBUG;
  srv_log(level, "grpc: %s (%s:%d)", a->message ? a->message : "", a->file ? a->file : "?", a->line);
}

int srv_start(srv_t *srv) {
  if (srv_open(srv) != 0) return -1;
  if (srv_log_format != SRV_LOGF_TEXT) gpr_set_log_function(grpc_log_line);
  srv->nthreads = srv->cfg.threads;
  srv->cqs = calloc((size_t)srv->nthreads, sizeof *srv->cqs);
  srv->threads = calloc((size_t)srv->nthreads, sizeof *srv->threads);
  if (!srv->cqs || !srv->threads) {
    srv_log(SRV_LOG_ERROR, "out of memory");
    free(srv->cqs);
    free(srv->threads);
    srv_close(srv);
    return -1;
  }
  grpc_init();
  grpc_arg args[] = {
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, {.integer = RDEV_WIRE_MAX_MESSAGE}},
      {GRPC_ARG_INTEGER, GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, {.integer = RDEV_WIRE_MAX_MESSAGE}},
      /* find clients whose network vanished without a FIN */
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIME_MS, {.integer = 20000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_TIMEOUT_MS, {.integer = 10000}},
      {GRPC_ARG_INTEGER, GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, {.integer = 1}},
      /* clients ping while a call is quiet: job watchers every 10 s
       * (client/lib/job.c), sessions every keepalive_ms, at least 1 s */
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, {.integer = 1000}},
      /* a fixed 8 MiB stream window: BDP probing kept windows small and
       * cost most of the throughput on loopback (measured by rdev bench) */
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, {.integer = 8 << 20}},
      {GRPC_ARG_INTEGER, GRPC_ARG_HTTP2_BDP_PROBE, {.integer = 0}},
  };
  grpc_channel_args ca = {sizeof args / sizeof args[0], args};
  srv->server = grpc_server_create(&ca, NULL);
  srv->m_session = grpc_server_register_method(srv->server, RDEV_WIRE_METHOD_SESSION, NULL, GRPC_SRM_PAYLOAD_NONE, 0);
  srv->m_info = grpc_server_register_method(srv->server, RDEV_WIRE_METHOD_INFO, NULL,
                                            GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  srv->m_list = grpc_server_register_method(srv->server, RDEV_WIRE_METHOD_LIST_DEVICES, NULL,
                                            GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  srv->m_health = grpc_server_register_method(srv->server, RDEV_WIRE_METHOD_HEALTH_CHECK, NULL,
                                              GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  srv->m_done = grpc_server_register_method(srv->server, RDEV_WIRE_METHOD_HOST_FUNC_DONE, NULL,
                                            GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  for (int i = 0; i < SRV_JOB_CALLS; i++)
    srv->m_jobs[i] =
        grpc_server_register_method(srv->server, job_methods[i], NULL, GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
  for (int i = 0; i < srv->nthreads; i++) {
    srv->cqs[i] = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(srv->server, srv->cqs[i], NULL);
  }
  grpc_server_credentials *creds = server_creds(&srv->cfg);
  srv->port = creds ? grpc_server_add_http2_port(srv->server, srv->cfg.listen, creds) : 0;
  if (creds) grpc_server_credentials_release(creds);
  if (srv->port == 0) srv_log(SRV_LOG_ERROR, "cannot listen on %s", srv->cfg.listen);
  snprintf(srv->resume_ms_str, sizeof srv->resume_ms_str, "%d", srv->cfg.resume_ms);
  srv_metrics_jobs_source(srv_jobs_count);
  if (srv->port == 0 || srv_bulk_start(srv) != 0 || srv_jobs_open(srv) != 0 || srv_resume_start(srv) != 0 ||
      srv_metrics_start(srv) != 0) {
    /* they log why */
    srv_metrics_stop(srv);
    srv_resume_stop(srv);
    srv_bulk_stop(srv);
    grpc_server_destroy(srv->server);
    for (int i = 0; i < srv->nthreads; i++) {
      grpc_completion_queue_shutdown(srv->cqs[i]);
      while (grpc_completion_queue_next(srv->cqs[i], gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
             GRPC_QUEUE_SHUTDOWN) {}
      grpc_completion_queue_destroy(srv->cqs[i]);
    }
    free(srv->cqs);
    free(srv->threads);
    grpc_shutdown_whole();
    srv_close(srv);
    return -1;
  }
  grpc_server_start(srv->server);
  for (int i = 0; i < srv->nthreads; i++) {
    for (int k = K_SESSION; k <= K_UNKNOWN; k++) arm(srv, k, i);
    pthread_create(&srv->threads[i], NULL, cq_thread, srv->cqs[i]);
  }
  atomic_store(&srv->ready, 1);
  return 0;
}

typedef struct {
  srv_op_t op;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done;
} shutdown_wait_t;

static void on_shutdown(srv_op_t *op, int ok) {
  shutdown_wait_t *w = (shutdown_wait_t *)op;
  (void)ok;
  pthread_mutex_lock(&w->mu);
  w->done = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Waits until no session is left or the deadline passed; returns sessions left. */
static int wait_sessions(srv_t *srv, const struct timespec *deadline) {
  pthread_mutex_lock(&srv->mu);
  while (srv->nsessions > 0) {
    if (deadline) {
      if (pthread_cond_timedwait(&srv->cv, &srv->mu, deadline) != 0) break;
    } else {
      pthread_cond_wait(&srv->cv, &srv->mu);
    }
  }
  int left = srv->nsessions;
  pthread_mutex_unlock(&srv->mu);
  return left;
}

/* The drain: health says NOT_SERVING and new sessions are refused
 * (UNAVAILABLE) while gRPC still answers, so that probes and load
 * balancers see it; sessions open may finish until cfg.drain_ms; then
 * gRPC shuts down and what is left is cancelled. */
void srv_stop(srv_t *srv) {
  atomic_store(&srv->draining, 1);
  srv_bulk_stop(srv);
  shutdown_wait_t w = {.op.done = on_shutdown, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += srv->cfg.drain_ms / 1000;
  dl.tv_nsec += (long)(srv->cfg.drain_ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  int left = wait_sessions(srv, &dl); /* a running job holds a session of its own */
  atomic_store(&srv->shutting_down, 1);
  RDEV_HANDOFF_GIVE(&w.op);
  grpc_server_shutdown_and_notify(srv->server, srv->cqs[0], &w.op);
  if (left) srv_log(SRV_LOG_WARN, "drain: cancelling %d session(s) still open", left);
  srv_jobs_stop(srv, &dl);
  srv_sessions_end_all(srv);
  grpc_server_cancel_all_calls(srv->server);
  pthread_mutex_lock(&w.mu);
  while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  wait_sessions(srv, NULL); /* the reaper ends detached ones at once while draining */
  srv_resume_stop(srv);
  grpc_server_destroy(srv->server);
  for (int i = 0; i < srv->nthreads; i++) grpc_completion_queue_shutdown(srv->cqs[i]);
  for (int i = 0; i < srv->nthreads; i++) {
    pthread_join(srv->threads[i], NULL);
    grpc_completion_queue_destroy(srv->cqs[i]);
  }
  free(srv->threads);
  free(srv->cqs);
  srv_metrics_stop(srv);
  srv_jobs_free(srv);
  int gone = replies_gone(srv); /* before gRPC shuts down: what it lets go of finds the runtime */
  grpc_shutdown_whole();
  if (gone)
    srv_close(srv);
  else
    srv_log(SRV_LOG_ERROR, "shown replies or staging buffers still held by gRPC: the runtime is left open");
}
