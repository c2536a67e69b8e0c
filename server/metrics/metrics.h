/*
 * server/metrics/metrics.h — the metrics room's contract with the rest of
 * rdevd: the counters the data plane bumps (relaxed atomics in a fixed
 * table, one record per tenant, no lock on the way), the runtime's task
 * observer that charges device time and slot waits, the Prometheus text
 * that a scrape renders (metrics.c), and the HTTP endpoint that serves it
 * (metrics_http.c, libmicrohttpd). Gauges (sessions, streams, memory,
 * jobs, the process's own) are gathered when scraped, never kept up to
 * date on the data plane.
 *
 * Labels are bounded: a tenant is one of the tenants file's names (open
 * mode: "anonymous"), at most SRV_M_TENANTS of them (more share the
 * record "_other"); a device is one of the runtime's; a request kind is
 * one of the wire's operations; an error code one of rdev's status codes.
 */
#ifndef RDEV_SERVER_METRICS_H
#define RDEV_SERVER_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "srv.h"

#define SRV_M_DEVS 64      /* devices with their own series (more count in the last one) */
#define SRV_M_TENANTS 1024 /* tenant records; the last is "_other" */
#define SRV_M_WAIT_BUCKETS 13

enum { SRV_M_H2D, SRV_M_D2H, SRV_M_D2D, SRV_M_DIRS };

/* Request kinds: the wire's operations (the Request oneof: X(name) for
 * rdev_v1_Request_<name>_tag), and "malformed" for requests that named
 * none or could not be read. */
/* clang-format off */
#define SRV_M_OPS_MAP(X) \
  X(malloc) X(free) X(stream_create) X(stream_destroy) X(stream_sync) X(stream_query) X(write)       \
  X(read) X(copy) X(memset) X(launch) X(event_create) X(event_destroy) X(event_record)               \
  X(stream_wait_event) X(event_sync) X(event_query) X(event_elapsed) X(mem_info) X(host_func)        \
  X(value_write) X(value_wait) X(stream_failure_mode) X(stream_abort) X(binary_load)                 \
  X(binary_unload) X(binary_function) X(launch_function) X(op_run)
enum {
#define SRV_M_KIND_ENUM_(n) SRV_M_K_##n,
  SRV_M_OPS_MAP(SRV_M_KIND_ENUM_)
#undef SRV_M_KIND_ENUM_
  SRV_M_K_malformed,
  SRV_M_KINDS
};
/* clang-format on */
#define SRV_M_CODES 48 /* error codes with their own series (rdev's status map has fewer) */

/* One tenant's counters. Written with relaxed atomics by any thread;
 * never freed before the process ends (srv_metrics_reset in tests). */
typedef struct srv_mtenant {
  char name[64];
  atomic_uint_fast64_t requests[SRV_M_KINDS];
  atomic_uint_fast64_t errors[SRV_M_CODES];
  atomic_uint_fast64_t bytes[SRV_M_DEVS][SRV_M_DIRS];
  atomic_uint_fast64_t busy_ns[SRV_M_DEVS][2]; /* [copy, kernel] */
  atomic_uint_fast64_t wait[SRV_M_DEVS][SRV_M_WAIT_BUCKETS + 1];
  atomic_uint_fast64_t wait_ns[SRV_M_DEVS];
} srv_mtenant_t;

/* The record of tenant name (made on first use, kept across reloads:
 * counters of a name never go back), and group id's mapping to it for the
 * task observer. open: the open mode's tenant, whose sessions each have
 * a group of their own (0x80000000 | n). Never NULL. Any thread. */
srv_mtenant_t *srv_metrics_tenant(const char *name, uint32_t group, int open);

/* The kind of a Request's oneof tag (rdev_v1_Request_*_tag); 0 or an
 * unknown one: SRV_M_K_malformed. */
int srv_metrics_kind(unsigned which_op);

static inline void srv_metrics_request(srv_mtenant_t *m, int kind) {
  atomic_fetch_add_explicit(&m->requests[kind], 1, memory_order_relaxed);
}
/* An error reply of status code (rdev_status_t). */
void srv_metrics_error(srv_mtenant_t *m, int code);
static inline void srv_metrics_bytes(srv_mtenant_t *m, int dev, int dir, uint64_t n) {
  if (dev < 0) return;
  atomic_fetch_add_explicit(&m->bytes[dev < SRV_M_DEVS ? dev : SRV_M_DEVS - 1][dir], n, memory_order_relaxed);
}
/* Device time ns of work that ran outside the streams (a synchronous
 * copy or memset on the server's thread): charged as the task observer's. */
static inline void srv_metrics_busy(srv_mtenant_t *m, int dev, int kernel, uint64_t ns) {
  if (dev < 0) return;
  atomic_fetch_add_explicit(&m->busy_ns[dev < SRV_M_DEVS ? dev : SRV_M_DEVS - 1][kernel ? 1 : 0], ns,
                            memory_order_relaxed);
}
/* A failed authentication; why is srv_authenticate's. */
void srv_metrics_auth_failure(const char *why);

/* rdev_rt_config_t.task_done: charges a device task's time and slot wait
 * to its group's tenant (user unused). */
void srv_metrics_task(void *user, int dev, uint32_t group, int kernel, uint64_t wait_ns, uint64_t run_ns);

/* Where the jobs-by-state gauge comes from (jobs/jobs.h's srv_jobs_count,
 * handed over by server.c, so that the metrics depend on no module that
 * depends on them); none: the gauge has no samples. Call before
 * srv_metrics_start. */
typedef void (*srv_metrics_jobs_fn)(srv_t *srv, void (*fn)(void *user, const char *tenant, const char *state, int n),
                                    void *user);
void srv_metrics_jobs_source(srv_metrics_jobs_fn count);

/* The exposition (Prometheus text format 0.0.4) of everything srv counts
 * and holds now: malloc'd text in *out (the caller frees it), its length
 * in *len. 0, or -1 when out of memory. */
int srv_metrics_render(srv_t *srv, char **out, size_t *len);

/* Serves GET /metrics on cfg.metrics_listen (libmicrohttpd's own thread):
 * 0 with srv->metrics_port the bound port, or -1 (logged). Nothing when
 * cfg.metrics_listen is "". srv_metrics_stop stops it (NULL-safe). */
int srv_metrics_start(srv_t *srv);
void srv_metrics_stop(srv_t *srv);

#endif
