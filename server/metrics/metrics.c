/*
 * server/metrics/metrics.c — what rdevd counts and how a scrape renders
 * it: the table of per-tenant counter records (made by name, kept for
 * the process's life, so a counter never goes back across a tenants
 * reload), the bumps the data plane calls (relaxed atomics, no lock), the
 * runtime's task observer (device busy time, the execution-slot wait
 * histogram), and the Prometheus text exposition, which gathers the
 * gauges (sessions, streams, device memory and quotas, jobs, the
 * process's memory, CPU time and descriptors) at scrape time.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "rdev/status.h"

/* ---- the table ---------------------------------------------------------------- */

static pthread_mutex_t table_mu = PTHREAD_MUTEX_INITIALIZER;
static srv_mtenant_t *table[SRV_M_TENANTS]; /* [0, ntable), under table_mu; read after ntable's acquire */
static atomic_int ntable;
static _Atomic(srv_mtenant_t *) by_group[SRV_M_TENANTS]; /* tenant ids (scheduling groups) */
static _Atomic(srv_mtenant_t *) open_tenant;             /* open mode: every 0x80000000|n group */
static srv_mtenant_t other_tenant = {.name = "_other"};  /* the table is full, an unknown group */
static atomic_uint_fast64_t auth_failures[4];
static const char *const auth_reasons[4] = {"no_token", "unknown_token", "certificate", "other"};

srv_mtenant_t *srv_metrics_tenant(const char *name, uint32_t group, int open) {
  srv_mtenant_t *m = NULL;
  pthread_mutex_lock(&table_mu);
  int n = atomic_load(&ntable);
  for (int i = 0; i < n && !m; i++)
    if (!strcmp(table[i]->name, name)) m = table[i];
  if (!m && n < SRV_M_TENANTS && (m = calloc(1, sizeof *m))) {
    snprintf(m->name, sizeof m->name, "%s", name);
    table[n] = m;
    atomic_store(&ntable, n + 1);
  }
  pthread_mutex_unlock(&table_mu);
  if (!m) m = &other_tenant;
  if (group < SRV_M_TENANTS) atomic_store(&by_group[group], m);
  if (open) atomic_store(&open_tenant, m);
  return m;
}

int srv_metrics_kind(unsigned which_op) {
  switch (which_op) {
#define SRV_M_KIND_CASE_(n) \
  case rdev_v1_Request_##n##_tag: return SRV_M_K_##n;
    SRV_M_OPS_MAP(SRV_M_KIND_CASE_)
#undef SRV_M_KIND_CASE_
  }
  return SRV_M_K_malformed;
}

/* clang-format off */
static const char *const kind_names[SRV_M_KINDS] = {
#define SRV_M_KIND_NAME_(n) #n,
  SRV_M_OPS_MAP(SRV_M_KIND_NAME_)
#undef SRV_M_KIND_NAME_
  "malformed"
};
/* clang-format on */

/* rdev's status codes, in status.h's order: an error's index is its place here. */
static const int codes[] = {
#define SRV_M_CODE_(name, code, msg) code,
    RDEV_STATUS_MAP(SRV_M_CODE_)
#undef SRV_M_CODE_
};
#define NCODES ((int)(sizeof codes / sizeof codes[0]))
_Static_assert(sizeof codes / sizeof codes[0] < SRV_M_CODES, "SRV_M_CODES too small (the last counts unknown codes)");

void srv_metrics_error(srv_mtenant_t *m, int code) {
  int i = 0;
  while (i < NCODES && codes[i] != code) i++; /* NCODES: not rdev's (counted as "unknown") */
  atomic_fetch_add_explicit(&m->errors[i], 1, memory_order_relaxed);
}

void srv_metrics_auth_failure(const char *why) {
  int i = !why                                      ? 3
          : !strcmp(why, "no bearer token")         ? 0
          : !strcmp(why, "unknown token")           ? 1
          : !strncmp(why, "client certificate", 18) ? 2
                                                    : 3;
  atomic_fetch_add_explicit(&auth_failures[i], 1, memory_order_relaxed);
}

/* Upper bounds of the slot-wait buckets, in ns (the last bucket is +Inf). */
static const uint64_t wait_bounds[SRV_M_WAIT_BUCKETS] = {
    1000, 10000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 50000000, 250000000, 1000000000};

void srv_metrics_task(void *user, int dev, uint32_t group, int kernel, uint64_t wait_ns, uint64_t run_ns) {
  (void)user;
  srv_mtenant_t *m = group & 0x80000000u     ? atomic_load_explicit(&open_tenant, memory_order_relaxed)
                     : group < SRV_M_TENANTS ? atomic_load_explicit(&by_group[group], memory_order_relaxed)
                                             : NULL;
  if (!m) m = &other_tenant;
  if (dev < 0) return;
  if (dev >= SRV_M_DEVS) dev = SRV_M_DEVS - 1;
  int b = 0;
  while (b < SRV_M_WAIT_BUCKETS && wait_ns > wait_bounds[b]) b++;
  atomic_fetch_add_explicit(&m->busy_ns[dev][kernel ? 1 : 0], run_ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->wait[dev][b], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&m->wait_ns[dev], wait_ns, memory_order_relaxed);
}

/* ---- rendering -------------------------------------------------------------------- */

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} out_t;

static void __attribute__((format(printf, 2, 3))) put(out_t *o, const char *fmt, ...) {
  if (o->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      o->oom = 1;
      return;
    }
    if ((size_t)n < o->cap - o->len) {
      o->len += (size_t)n;
      return;
    }
    size_t cap = o->cap * 2 + (size_t)n;
    char *p = realloc(o->p, cap);
    if (!p) {
      o->oom = 1;
      return;
    }
    o->p = p;
    o->cap = cap;
  }
}

static void family(out_t *o, const char *name, const char *type, const char *help) {
  put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* v as a label value: backslash, double quote and newline escaped. */
static const char *label(const char *v, char *buf, size_t len) {
  size_t j = 0;
  for (; *v && j + 3 < len; v++) {
    if (*v == '\\' || *v == '"')
      buf[j++] = '\\', buf[j++] = *v;
    else if (*v == '\n')
      buf[j++] = '\\', buf[j++] = 'n';
    else
      buf[j++] = *v;
  }
  buf[j] = '\0';
  return buf;
}

static double secs(uint64_t ns) { return (double)ns / 1e9; }
static uint64_t ld(const atomic_uint_fast64_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

/* The records to render: the table, and "_other" once it counted anything. */
static int records(srv_mtenant_t **recs) {
  int n = atomic_load(&ntable);
  for (int i = 0; i < n; i++) recs[i] = table[i];
  recs[n++] = &other_tenant;
  return n;
}

static int other_used(int ndev) {
  for (int k = 0; k < SRV_M_KINDS; k++)
    if (ld(&other_tenant.requests[k])) return 1;
  for (int d = 0; d < ndev; d++)
    if (ld(&other_tenant.wait[d][0]) || ld(&other_tenant.busy_ns[d][0]) || ld(&other_tenant.busy_ns[d][1])) return 1;
  return 0;
}

static void counters(out_t *o, int ndev) {
  static srv_mtenant_t *recs[SRV_M_TENANTS + 1];
  static pthread_mutex_t recs_mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&recs_mu);
  int n = records(recs);
  if (!other_used(ndev)) n--;
  char t[160];
  static const char *const dirs[SRV_M_DIRS] = {"h2d", "d2h", "d2d"};
  family(o, "rdev_copy_bytes_total", "counter",
         "Bytes that requests moved (write: h2d, read: d2h, copy: d2d), counted when the server took the request.");
  for (int i = 0; i < n; i++)
    for (int d = 0; d < ndev; d++)
      for (int k = 0; k < SRV_M_DIRS; k++)
        put(o, "rdev_copy_bytes_total{tenant=\"%s\",device=\"%d\",direction=\"%s\"} %llu\n",
            label(recs[i]->name, t, sizeof t), d, dirs[k], (unsigned long long)ld(&recs[i]->bytes[d][k]));
  family(o, "rdev_requests_total", "counter", "Session requests handled, by kind (the wire's operation).");
  for (int i = 0; i < n; i++)
    for (int k = 0; k < SRV_M_KINDS; k++) {
      uint64_t v = ld(&recs[i]->requests[k]);
      if (v || k == SRV_M_K_malloc)
        put(o, "rdev_requests_total{tenant=\"%s\",kind=\"%s\"} %llu\n", label(recs[i]->name, t, sizeof t),
            kind_names[k], (unsigned long long)v);
    }
  family(o, "rdev_errors_total", "counter", "Error replies to session requests, by rdev status code.");
  for (int i = 0; i < n; i++)
    for (int k = 0; k <= NCODES; k++) {
      uint64_t v = ld(&recs[i]->errors[k]);
      if (v)
        put(o, "rdev_errors_total{tenant=\"%s\",code=\"%d\",name=\"%s\"} %llu\n", label(recs[i]->name, t, sizeof t),
            k < NCODES ? codes[k] : -1, k < NCODES ? rdev_status_name(codes[k]) : "UNKNOWN", (unsigned long long)v);
    }
  family(o, "rdev_device_busy_seconds_total", "counter",
         "Device time the tenant's work ran, by device and work (copy: copies and memsets; kernel: kernels and "
         "operators).");
  for (int i = 0; i < n; i++)
    for (int d = 0; d < ndev; d++)
      for (int k = 0; k < 2; k++)
        put(o, "rdev_device_busy_seconds_total{tenant=\"%s\",device=\"%d\",work=\"%s\"} %.9f\n",
            label(recs[i]->name, t, sizeof t), d, k ? "kernel" : "copy", secs(ld(&recs[i]->busy_ns[d][k])));
  family(o, "rdev_slot_wait_seconds", "histogram", "Time device work waited for an execution slot.");
  for (int i = 0; i < n; i++)
    for (int d = 0; d < ndev; d++) {
      uint64_t cum = 0;
      label(recs[i]->name, t, sizeof t);
      for (int b = 0; b <= SRV_M_WAIT_BUCKETS; b++) {
        cum += ld(&recs[i]->wait[d][b]);
        if (b < SRV_M_WAIT_BUCKETS)
          put(o, "rdev_slot_wait_seconds_bucket{tenant=\"%s\",device=\"%d\",le=\"%g\"} %llu\n", t, d,
              secs(wait_bounds[b]), (unsigned long long)cum);
        else
          put(o, "rdev_slot_wait_seconds_bucket{tenant=\"%s\",device=\"%d\",le=\"+Inf\"} %llu\n", t, d,
              (unsigned long long)cum);
      }
      put(o, "rdev_slot_wait_seconds_sum{tenant=\"%s\",device=\"%d\"} %.9f\n", t, d, secs(ld(&recs[i]->wait_ns[d])));
      put(o, "rdev_slot_wait_seconds_count{tenant=\"%s\",device=\"%d\"} %llu\n", t, d, (unsigned long long)cum);
    }
  pthread_mutex_unlock(&recs_mu);
  family(o, "rdev_auth_failures_total", "counter", "Calls refused because authentication failed, by reason.");
  for (int k = 0; k < 4; k++)
    put(o, "rdev_auth_failures_total{reason=\"%s\"} %llu\n", auth_reasons[k],
        (unsigned long long)ld(&auth_failures[k]));
}

/* What the tenants hold now: sessions, streams, memory and quota per device. */
static void tenant_gauges(out_t *o, srv_t *srv, int ndev) {
  typedef struct {
    char name[160];
    int sessions;
    int streams[SRV_M_DEVS];
    size_t used[SRV_M_DEVS];
    size_t quota;
    uint64_t devices;
  } snap_t;
  int cap = 16, n = 0;
  snap_t *v = malloc((size_t)cap * sizeof *v);
  pthread_mutex_lock(&srv->tenants_mu);
  for (srv_tenant_t *t = srv->tenants; t && v; t = t->next) {
    if (n == cap) {
      snap_t *w = realloc(v, (size_t)(cap *= 2) * sizeof *v);
      if (!w) break;
      v = w;
    }
    snap_t *s = &v[n];
    pthread_mutex_lock(&t->mu);
    int gone = t->removed;
    label(t->name, s->name, sizeof s->name);
    s->sessions = t->sessions;
    for (int d = 0; d < ndev && d < SRV_M_DEVS; d++) s->streams[d] = t->dev_streams[d], s->used[d] = t->mem_used[d];
    s->quota = t->mem_quota;
    s->devices = t->devices;
    pthread_mutex_unlock(&t->mu);
    if (!gone) n++;
  }
  pthread_mutex_unlock(&srv->tenants_mu);
  if (!v) {
    o->oom = 1;
    return;
  }
  int nd = ndev < SRV_M_DEVS ? ndev : SRV_M_DEVS;
  family(o, "rdev_sessions", "gauge", "Sessions open.");
  for (int i = 0; i < n; i++) put(o, "rdev_sessions{tenant=\"%s\"} %d\n", v[i].name, v[i].sessions);
  family(o, "rdev_streams", "gauge", "Device streams open, by device.");
  for (int i = 0; i < n; i++)
    for (int d = 0; d < nd; d++)
      if (v[i].devices >> d & 1)
        put(o, "rdev_streams{tenant=\"%s\",device=\"%d\"} %d\n", v[i].name, d, v[i].streams[d]);
  family(o, "rdev_device_memory_used_bytes", "gauge", "Device memory the tenant's sessions hold, by device.");
  for (int i = 0; i < n; i++)
    for (int d = 0; d < nd; d++)
      if (v[i].devices >> d & 1)
        put(o, "rdev_device_memory_used_bytes{tenant=\"%s\",device=\"%d\"} %zu\n", v[i].name, d, v[i].used[d]);
  family(o, "rdev_device_memory_quota_bytes", "gauge", "The tenant's device memory quota per device (+Inf: none).");
  for (int i = 0; i < n; i++)
    for (int d = 0; d < nd; d++)
      if (v[i].devices >> d & 1) {
        if (v[i].quota == SIZE_MAX)
          put(o, "rdev_device_memory_quota_bytes{tenant=\"%s\",device=\"%d\"} +Inf\n", v[i].name, d);
        else
          put(o, "rdev_device_memory_quota_bytes{tenant=\"%s\",device=\"%d\"} %zu\n", v[i].name, d, v[i].quota);
      }
  free(v);
}

static void device_gauges(out_t *o, srv_t *srv, int ndev) {
  family(o, "rdev_device_memory_total_bytes", "gauge", "Device memory, by device.");
  rdev_rt_device_info_t info[SRV_M_DEVS];
  int ok[SRV_M_DEVS];
  int nd = ndev < SRV_M_DEVS ? ndev : SRV_M_DEVS;
  for (int d = 0; d < nd; d++) ok[d] = rdev_rt_device_info(srv->rt, d, &info[d]) == RDEV_OK;
  for (int d = 0; d < nd; d++)
    if (ok[d]) put(o, "rdev_device_memory_total_bytes{device=\"%d\"} %zu\n", d, (size_t)info[d].total_bytes);
  family(o, "rdev_device_memory_free_bytes", "gauge", "Device memory free, by device.");
  for (int d = 0; d < nd; d++)
    if (ok[d]) put(o, "rdev_device_memory_free_bytes{device=\"%d\"} %zu\n", d, (size_t)info[d].free_bytes);
}

static void job_line(void *user, const char *tenant, const char *state, int n) {
  out_t *o = user;
  char t[160];
  put(o, "rdev_jobs{tenant=\"%s\",state=\"%s\"} %d\n", label(tenant, t, sizeof t), state, n);
}

/* When the process started (Unix time): the boot time of /proc/stat plus
 * the start of /proc/self/stat (field 22, in clock ticks); 0 if unknown. */
static double start_time(void) {
  unsigned long long btime = 0, ticks = 0;
  char line[256];
  FILE *f = fopen("/proc/stat", "r");
  if (f) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "btime %llu", &btime) == 1) break;
    fclose(f);
  }
  char stat[1024];
  f = fopen("/proc/self/stat", "r");
  size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
  if (f) fclose(f);
  stat[n] = '\0';
  const char *p = strrchr(stat, ')'); /* the command may hold spaces: fields count from after it */
  for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
  if (!p || sscanf(p + 1, "%llu", &ticks) != 1 || !btime) return 0;
  long hz = sysconf(_SC_CLK_TCK);
  return (double)btime + (double)ticks / (double)(hz > 0 ? hz : 100);
}

static void process_gauges(out_t *o) {
  long page = sysconf(_SC_PAGESIZE);
  unsigned long long vsz = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%llu %llu", &vsz, &rss) != 2) vsz = rss = 0;
    fclose(f);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
               (double)ru.ru_stime.tv_usec / 1e6;
  int fds = 0;
  DIR *dir = opendir("/proc/self/fd");
  if (dir) {
    for (struct dirent *e; (e = readdir(dir));)
      if (e->d_name[0] != '.') fds++;
    closedir(dir);
    fds--; /* the directory's own */
  }
  struct rlimit rl = {0};
  getrlimit(RLIMIT_NOFILE, &rl);
  family(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  put(o, "process_resident_memory_bytes %llu\n", rss * (unsigned long long)page);
  family(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
  put(o, "process_virtual_memory_bytes %llu\n", vsz * (unsigned long long)page);
  family(o, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
  put(o, "process_cpu_seconds_total %.6f\n", cpu);
  family(o, "process_open_fds", "gauge", "Number of open file descriptors.");
  put(o, "process_open_fds %d\n", fds);
  family(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
  put(o, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
  double start = start_time();
  if (start > 0) {
    family(o, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
    put(o, "process_start_time_seconds %.2f\n", start);
  }
}

static srv_metrics_jobs_fn jobs_source;

void srv_metrics_jobs_source(srv_metrics_jobs_fn count) { jobs_source = count; }

int srv_metrics_render(srv_t *srv, char **out, size_t *len) {
  out_t o = {.cap = 1 << 16};
  if (!(o.p = malloc(o.cap))) return -1;
  o.p[0] = '\0';
  int ndev = 0;
  rdev_rt_device_count(srv->rt, &ndev);
  family(&o, "rdev_build_info", "gauge", "rdevd's version and backend.");
  put(&o, "rdev_build_info{version=\"%s\",backend=\"%s\"} 1\n", RDEV_VERSION, rdev_rt_backend_name(srv->rt));
  family(&o, "rdev_serving", "gauge", "1 while rdevd serves (its health is SERVING); 0 while starting or draining.");
  put(&o, "rdev_serving %d\n", atomic_load(&srv->ready) && !atomic_load(&srv->draining));
  counters(&o, ndev);
  tenant_gauges(&o, srv, ndev);
  device_gauges(&o, srv, ndev);
  family(&o, "rdev_jobs", "gauge", "Detached jobs known, by state.");
  if (jobs_source) jobs_source(srv, job_line, &o);
  process_gauges(&o);
  if (o.oom) {
    free(o.p);
    return -1;
  }
  *out = o.p;
  *len = o.len;
  return 0;
}
