/*
 * server/srv.h — what rdevd's rooms share: the server object and its
 * completion-queue ops, the per-session handle table, tenants, config and
 * logging, and what the session room offers the others (serving a Session
 * call, in-process sessions, the shown-reply bookkeeping). Layering:
 * server.c owns gRPC (listening, accepting, unary calls, shutdown);
 * respond.c answers unary calls; handles.c the handle table; tenants.c
 * tenants, quotas and caps; config.c settings and the log; binaries.c the
 * shared kernel binaries; main.c flags and signals. A Session call is the
 * work of session/ (session/session.h says which file does what), detached
 * jobs that of jobs/ (jobs/jobs.h is its contract); neither includes the
 * other's headers. Device work, staging buffers included, goes only
 * through rdev/runtime.h.
 */
#ifndef RDEV_SRV_H
#define RDEV_SRV_H

#include <grpc/grpc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rdev/runtime.h"
#include "rdev/wire.h"

/* ---- config and logging ---------------------------------------------------- */

typedef struct {
  char listen[256];      /* "host:port" or "unix:/path" */
  char bulk_listen[256]; /* sessions' bulk connections: "auto", "off" or "host:port" (session/bulk.c) */
  char backend[32];      /* runtime backend name */
  int sim_devices;
  size_t sim_mem_bytes;
  int sim_slots;            /* tasks a device runs at once, shared fairly by tenant weight (sim, acl) */
  int sim_host_view;        /* sim: device memory host-mapped (1), or not, as on a real NPU (0) */
  size_t max_inflight;      /* per session: staged and unsent bytes before reading pauses */
  int threads;              /* completion-queue threads */
  int drain_ms;             /* SIGTERM: how long sessions may finish before being cancelled */
  int resume_ms;            /* how long a session whose call broke waits to be resumed (0: not at all) */
  int log_level;            /* 0 error, 1 warn, 2 info, 3 debug */
  int log_format;           /* SRV_LOGF_TEXT, _LOGFMT or _JSON: every log and audit line */
  char metrics_listen[256]; /* Prometheus metrics over HTTP (metrics/): "" = off */
  char tenants[256];        /* tenants file; "" = open mode (loopback or unix only, or allow_open) */
  char server_name[64];     /* the name job tokens must list for this server; "" = the host's name */
  int allow_open;           /* serve open on a non-loopback address */
  char tls_cert[256];       /* server certificate chain (PEM); "" = plaintext */
  char tls_key[256];        /* its private key (PEM) */
  char tls_client_ca[256];  /* CA for client certificates: set = mutual TLS, required */
  char acl_lib[256];        /* acl: the CANN runtime library; "" = the default places */
  char acl_kernels[256];    /* acl: directory of the built-in kernels' binaries; "" = none */
  char acl_opapi[256];      /* acl: CANN's operator library (dir or file); "" = the default places */
  int allow_uploaded;       /* take kernel binaries from clients where kernels are not confined (acl) */
  /* jobs (jobs/jobs.h) */
  char job_dir[256];     /* state directory of job records and kept outputs; "" = no jobs */
  int job_keep_s;        /* how long kept outputs stay */
  int job_runners;       /* jobs running at once, all tenants together */
  int job_timeout_s;     /* a job's run time when its spec sets none */
  int job_retries;       /* tries after the first per transfer when its spec sets none */
  char job_allow[1024];  /* open mode: URL prefixes jobs may reach, separated by spaces */
  char job_resolve[256]; /* tests only: "host:port:addr" every job transfer resolves so */
} srv_config_t;

/* Every field of cfg to its built-in default; sim-host-view's comes from
 * $RDEV_SIM_HOST_VIEW ("off", "0", "no" or "false": off) when it is set, so that a test
 * run can take every server it starts down the staged path. */
void srv_config_defaults(srv_config_t *cfg);
/* Sets one key ("listen", "sim-mem", ...) from value (copied; cfg keeps no
 * pointer). 0 on success; else -1, that setting of cfg unchanged, and *err a
 * static message. Values are checked: numbers and sizes within the ranges
 * the messages name, strings non-empty and fitting their arrays. */
int srv_config_set(srv_config_t *cfg, const char *key, const char *value, const char **err);
/* Parses text[0..len) (not NUL-terminated; any bytes) as a config file:
 * "key = value" lines, '#' comments, the rules of srv_lines_next. name
 * (NULL: "(config)") prefixes messages, as "name:LINE: ...". 0 on success
 * with every setting applied; else -1, cfg unchanged, and a message in err
 * (errlen bytes, truncated, NUL-terminated when errlen > 0). */
int srv_config_parse(srv_config_t *cfg, const char *text, size_t len, const char *name, char *err, size_t errlen);
/* srv_config_parse on the file at path (at most SRV_FILE_MAX bytes); an
 * unreadable file is -1 with "path: reason" in err. */
int srv_config_load(srv_config_t *cfg, const char *path, char *err, size_t errlen);
/* s (NUL-terminated) without leading and trailing white space: a pointer
 * into s, whose end is cut in place. */
char *srv_trim(char *s);
/* Decimal digits with an optional K, M or G (times 2^10, 2^20, 2^30), each
 * optionally followed by i, B or iB, any case: "1G", "512MiB", "64k",
 * "4096" into bytes. 0, or -1 (*out untouched) for anything else or a
 * size that does not fit size_t. */
int srv_parse_size(const char *v, size_t *out);

/* Text files (config, tenants) are read whole, up to SRV_FILE_MAX bytes. */
#define SRV_FILE_MAX (16u << 20)
/* The whole file at path, at most max bytes (max < SIZE_MAX / 2), into
 * *text (malloc'd, the caller frees it; NUL after the last byte, which
 * does not count in *len). -1 with "path: reason" in err (errlen bytes)
 * when it cannot be opened or read, is not a regular file (a FIFO would
 * block), or is larger than max. */
int srv_read_file(const char *path, size_t max, char **text, size_t *len, char *err, size_t errlen);
/* Lines of text in memory: each ends at '\n' or at the end of the text. A
 * line longer than SRV_LINE_MAX bytes (before its '\n') or holding a NUL
 * byte is an error, never split or cut short. */
#define SRV_LINE_MAX 1023
typedef struct {
  const char *p, *end; /* what is left of the text */
  int lineno;          /* of the line srv_lines_next returned last (1 = first) */
} srv_lines_t;
void srv_lines_init(srv_lines_t *it, const char *text, size_t len);
/* The next line, copied into buf, cut at its first '#' and trimmed
 * (srv_trim): 1 with *line pointing into buf (maybe ""), 0 at the end of
 * the text, -1 with *why (static) for a line too long or holding a NUL. */
int srv_lines_next(srv_lines_t *it, char buf[SRV_LINE_MAX + 1], char **line, const char **why);

enum { SRV_LOG_ERROR, SRV_LOG_WARN, SRV_LOG_INFO, SRV_LOG_DEBUG };
enum { SRV_LOGF_TEXT, SRV_LOGF_LOGFMT, SRV_LOGF_JSON };
extern int srv_log_level;  /* lines above it are dropped */
extern int srv_log_format; /* SRV_LOGF_*: how every line is written */
/* One line to stderr (the message cut at 1024 bytes), as srv_log_format
 * says: text "TIME rdevd LEVEL: message"; logfmt "time=TIME level=LEVEL
 * msg=MESSAGE" (values with spaces, quotes or '=' quoted); JSON lines
 * {"time":..,"level":..,"msg":..} (strings escaped). */
void srv_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One audit line, as README documents them: text "audit: KIND: tenant=T
 * peer=P " and the rest (fmt); logfmt and JSON carry audit=KIND, tenant,
 * peer and the rest as the message. A NULL tenant or peer prints "-". */
void srv_audit(int level, const char *kind, const char *tenant, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Tasks a device stream queues; sessions stop reading at about half of it
 * (session.c, ROOM_AT). */
#define SRV_STREAM_DEPTH 1024

/* ---- completion-queue ops ------------------------------------------------- */

/* Every batch's tag is an srv_op_t; the CQ thread calls done(op, success). */
typedef struct srv_op {
  void (*done)(struct srv_op *op, int success);
} srv_op_t;

/* Answers a unary call with resp (taken; may be NULL) and status, and lets
 * go of the call (its reference is taken). Any thread; does not block. */
void srv_call_respond(grpc_call *call, grpc_byte_buffer *resp, grpc_status_code status, const char *details);

/* ---- handle table ----------------------------------------------------------- */

typedef enum { SRV_H_BUF = 1, SRV_H_STREAM, SRV_H_EVENT, SRV_H_BIN, SRV_H_FUNC } srv_htype_t;

typedef struct {
  uint64_t h; /* 0 = empty slot, 1 = deleted */
  int type;   /* srv_htype_t */
  int dev;
  void *ptr;   /* device address, rdev_rt_stream_t *, rdev_rt_event_t * */
  size_t size; /* buffers: requested size */
  void *ext;   /* the session's own record for it (session/session.h), or NULL */
} srv_handle_t;

typedef struct {
  srv_handle_t *slots;
  size_t cap, used, live;
} srv_handles_t;

/* Adds an entry under a new random handle: not 0 or 1, and no live
 * entry's (a deleted entry's value comes back only if a 64-bit random draw
 * matches it again). Returns the handle, or 0 when out of memory or the
 * random source fails. */
uint64_t srv_handles_add(srv_handles_t *t, int type, int dev, void *ptr, size_t size, void *ext);
/* Adds an entry under key h, chosen by the caller (a device address; not
 * 0 or 1). Returns 0, or -1 when out of memory or h is live already. */
int srv_handles_put(srv_handles_t *t, uint64_t h, int type, int dev, void *ptr, size_t size, void *ext);
/* The live entry for h of the given type, or NULL. */
srv_handle_t *srv_handles_get(srv_handles_t *t, uint64_t h, int type);
/* The live entry for h of any type, or NULL. */
srv_handle_t *srv_handles_find(srv_handles_t *t, uint64_t h);
/* Removes h; returns 0 if it was live. */
int srv_handles_del(srv_handles_t *t, uint64_t h);
/* Calls fn on every live entry of type (0 = any). */
void srv_handles_each(srv_handles_t *t, int type, void (*fn)(srv_handle_t *e, void *arg), void *arg);
void srv_handles_free(srv_handles_t *t);

/* ---- tenants (tenants.c) --------------------------------------------------- */

#define SRV_MAX_TOKENS 8

typedef struct srv_tenant {
  char name[64];
  uint32_t id;        /* scheduling group on the devices */
  pthread_mutex_t mu; /* everything below */
  /* settings, replaced by a reload */
  uint8_t hashes[SRV_MAX_TOKENS][32]; /* SHA-256 of the bearer tokens */
  int nhashes;
  uint64_t devices; /* bit d: may use device d */
  size_t mem_quota; /* bytes per device */
  int max_sessions, max_streams;
  int max_slots;       /* execution slots at once per device; 0 = half the device's, at least 1 */
  int max_dev_streams; /* streams at once per device; 0 = SRV_DEV_STREAMS_DEFAULT */
  size_t max_inflight;
  size_t max_unacked; /* bytes of its sessions' replies kept until the client acknowledged them */
  int weight;
  char cert_subject[256];  /* "" = any (or no) client certificate */
  uint8_t signing_key[32]; /* HMAC-SHA256 key of its job tokens (rdev/job_token.h), when has_key */
  int has_key;
  uint32_t key_gen; /* changes whenever the signing key changes or goes: older job tokens' sessions end */
  /* jobs (jobs/jobs.h) */
  char *allow;          /* URL prefixes its jobs may reach, one per line (jobs/allow.h); NULL = none */
  int max_queued_jobs;  /* jobs not yet final at once (queued or running) */
  int max_running_jobs; /* jobs running at once */
  size_t max_job_fetch; /* bytes one job may fetch in all */
  size_t job_disk;      /* bytes its kept outputs may take on disk */
  int jobs_counted;     /* scratch of the job table's expiry (under its lock) */
  int jobs_reserved;    /* SubmitJobs writing their records (under the job table's lock) */
  int removed, seen;
  struct srv_mtenant *metrics; /* its counters (metrics/metrics.h): fixed for its life */
  /* usage */
  atomic_size_t unacked; /* of max_unacked (no lock) */
  size_t mem_used[64];
  int sessions, streams;
  int dev_streams[64];
  struct srv_tenant *next;
} srv_tenant_t;

typedef enum { SRV_Q_MEMORY, SRV_Q_SESSIONS, SRV_Q_STREAMS } srv_quota_t;

/* The caps' defaults: a quarter of a device's streams, half its slots. */
#define SRV_DEV_STREAMS_DEFAULT (RDEV_RT_MAX_STREAMS_PER_DEVICE / 4)
static inline int srv_slots_default(int device_slots) { return device_slots / 2 > 1 ? device_slots / 2 : 1; }

/* Parses text[0..len) (not NUL-terminated; any bytes) as a tenants file
 * (deploy/tenants.example; lines as srv_lines_next cuts them). name (NULL:
 * "(tenants)") prefixes messages, as "name:LINE: ...". On success 0 and
 * *out a list of fresh records (NULL for a text without tenants) the caller
 * frees with srv_tenant_list_free: settings only (id 0, mu not initialised,
 * usage 0), the last section first. Each has a unique name (1..63 bytes, no
 * ']' or control characters), 1..SRV_MAX_TOKENS token hashes no other
 * tenant of the list has, devices != 0, max_sessions, max_streams,
 * max_device_streams and weight 1..1000000 (unset: INT32_MAX, INT32_MAX,
 * 0 = the default cap, 1), max_slots 1..1024 (unset: 0 = the default
 * cap), max_inflight >= 4096,
 * mem_quota any (unset: SIZE_MAX). Else -1, *out NULL, and a message in err
 * (errlen bytes, truncated, NUL-terminated when errlen > 0). */
int srv_tenants_parse(const char *text, size_t len, const char *name, srv_tenant_t **out, char *err, size_t errlen);
/* Frees a list srv_tenants_parse made (NULL is fine). */
void srv_tenant_list_free(srv_tenant_t *list);

typedef struct srv srv_t;
int srv_tenants_init(srv_t *srv);
/* Re-reads cfg.tenants; a broken file is rejected (-1, err) and the old tenants stay. */
int srv_tenants_reload(srv_t *srv, char *err, size_t errlen);
void srv_tenants_free(srv_t *srv);
/* What a call's credential grants besides its tenant: a bearer token or a
 * certificate all the tenant's devices for ever; a job token (rdev/job_token.h)
 * the devices it names until its expiry, while the tenant's signing key
 * stays the one it was checked with. */
typedef struct {
  uint64_t devices;   /* bit d: the server's device d (the tenant's own mask applies too) */
  int64_t expires_ms; /* Unix ms; 0 = never */
  uint32_t key_gen;   /* the tenant's key_gen when a job token was checked */
  char job[64];       /* the job token's job id; "" = no job token */
} srv_grant_t;

/* The tenant a call's metadata (and client certificate) proves, and what it
 * grants (*grant); or NULL with *why and the status to answer with
 * (*code: UNAUTHENTICATED, or PERMISSION_DENIED for a valid job token that
 * does not cover this server or names devices the tenant lacks). */
srv_tenant_t *srv_authenticate(srv_t *srv, grpc_call *call, const grpc_metadata_array *md, srv_grant_t *grant,
                               const char **why, grpc_status_code *code);
/* A job token tok[0..len) (grants.c): its tenant, once its MAC checks with
 * the tenant's signing key and it has not expired (else NULL, *why, and
 * *code UNAUTHENTICATED), when it covers this server and only the tenant's
 * devices (else NULL, PERMISSION_DENIED); *g gets what it grants. */
srv_tenant_t *srv_job_token_tenant(srv_t *srv, const char *tok, size_t len, srv_grant_t *g, const char **why,
                                   grpc_status_code *code);
/* Whether a session of tenant t granted g may go on now: 0, or -1 with why
 * (its job token expired, or the tenant's signing key changed). */
int srv_grant_valid(srv_tenant_t *t, const srv_grant_t *g, const char **why);
/* A tenant sees only its devices, numbered 0..k-1 (as CUDA_VISIBLE_DEVICES /
 * ASCEND_VISIBLE_DEVICES do): the device behind its local index, or -1. */
int srv_tenant_device(srv_tenant_t *t, uint64_t scope, int ndev, int local);
int srv_tenant_device_count(srv_tenant_t *t, uint64_t scope, int ndev);
/* Takes amount of a quota (memory: bytes on dev; sessions, streams: 1; a
 * stream also counts against the tenant's cap on dev) or fails (-1) with
 * msg naming the quota or cap, and an audit line naming peer (the caller
 * asking). srv_tenant_give returns it. */
int srv_tenant_take(srv_tenant_t *t, srv_quota_t what, int dev, size_t amount, const char *peer, char *msg,
                    size_t msglen);
void srv_tenant_give(srv_tenant_t *t, srv_quota_t what, int dev, size_t amount);

/* ---- server ----------------------------------------------------------------- */

typedef struct srv_session srv_session_t;

struct srv {
  srv_config_t cfg;
  rdev_rt_t *rt;
  grpc_server *server;
  /* One completion queue per thread ("shard"): a call's batches complete on
   * the shard that accepted it, so one session's events stay on one thread
   * and are not handed between threads (each hand-off is a wake-up). */
  grpc_completion_queue **cqs;
  pthread_t *threads;
  int nthreads;
  void *m_session, *m_info, *m_list, *m_health, *m_done;
  int port;
  atomic_int ready;         /* serving: health says SERVING unless draining */
  atomic_int draining;      /* a drain began: health says NOT_SERVING, new sessions are refused */
  atomic_int shutting_down; /* gRPC is shutting down: no call is accepted any more */
  void *metrics_http;       /* the metrics endpoint (metrics/metrics_http.c); NULL: none */
  int metrics_port;         /* where it listens */
  pthread_mutex_t mu;       /* sessions list and count */
  pthread_cond_t cv;        /* a session ended */
  srv_session_t *sessions;
  int nsessions;
  pthread_mutex_t tenants_mu; /* the tenants list */
  srv_tenant_t *tenants;
  atomic_uint_fast64_t next_session_id;
  struct srv_zc *zc;       /* Read replies that show device memory (session/zerocopy.h) */
  struct srv_bulk *bulk;   /* the bulk connections' listener (session/bulk.c); NULL: none */
  int bulk_port;           /* where it listens; 0: none */
  char bulk_port_str[8];   /* the same in decimal, for the open metadata */
  char resume_ms_str[12];  /* cfg.resume_ms in decimal, for the open metadata */
  char bulk_path[108];     /* or the unix socket where it listens; "": none */
  pthread_mutex_t bins_mu; /* the kernel binaries (binaries.c) */
  struct srv_bin *bins;
  struct srv_jobs *jobs; /* detached jobs (jobs/jobs.h); NULL without a job-dir */
  /* The resume window's reaper (session/session.c): under mu. */
  pthread_t reaper;
  pthread_cond_t reaper_cv;
  int reaper_stop, reaper_started;
  void *m_jobs[6]; /* their methods, in jobs/jobs.h's SRV_JOB_* order */
};

/* Opens what serving needs besides gRPC: locks, the tenants, the runtime
 * (srv_start does it first; in-process sessions need only this). 0 on
 * success, else -1 (logged). srv_close undoes it once no session is left,
 * after gRPC let go of every reply (it waits up to 10 s, else leaves the
 * runtime open and says so). */
int srv_open(srv_t *srv);
void srv_close(srv_t *srv);
/* Opens (srv_open), starts listening and the completion-queue threads. 0 on success. */
int srv_start(srv_t *srv);
/* Drains: refuses new calls, lets sessions finish for cfg.drain_ms, cancels
 * the rest, stops the threads, destroys the server. */
void srv_stop(srv_t *srv);

/* ---- kernel binaries (binaries.c) --------------------------------------------- */

typedef struct srv_bin srv_bin_t;

/* The parsed binary of these bytes for tenant t, shared with t's other
 * sessions that loaded the same bytes, one reference more; or the parse's
 * error (rdev_rt_last_error says why). */
int srv_bin_get(srv_t *srv, const srv_tenant_t *t, const void *data, size_t len, srv_bin_t **out);
/* One reference more (returns b); drops one (the last frees it). */
srv_bin_t *srv_bin_ref(srv_t *srv, srv_bin_t *b);
void srv_bin_put(srv_t *srv, srv_bin_t *b);
const rdev_rt_binary_t *srv_bin_rt(const srv_bin_t *b);

/* ---- sessions --------------------------------------------------------------- */

/* Read replies that show device memory (session/zerocopy.h has the rest):
 * the server's part, its slices held, paused sessions and the resumer. */
typedef struct srv_zc srv_zc_t;
/* The server's part; NULL when out of memory. srv_zc_stop ends the resumer
 * thread (once no session is paused); srv_zc_free frees it once
 * srv_zc_held is 0. */
srv_zc_t *srv_zc_new(void);
void srv_zc_stop(srv_zc_t *zc);
void srv_zc_free(srv_zc_t *zc);
/* Shown replies whose slices gRPC still holds, server-wide. */
int srv_zc_held(srv_zc_t *zc);

/* The listener of the sessions' bulk connections (session/bulk.c), as
 * cfg.bulk_listen says: none with "off" or TLS; beside a unix socket
 * ("auto": PATH.bulk), a unix socket too, where clients may also register
 * host memory. srv_start
 * starts it after gRPC; 0, or -1 (logged) when an address given cannot be
 * listened on ("auto" failing only logs). srv_stop stops it first: no
 * connection attaches any more; sessions end theirs. */
int srv_bulk_start(srv_t *srv);
void srv_bulk_stop(srv_t *srv);

/* Takes over an accepted Session call (its ref) for an authenticated
 * tenant, with the call's metadata md (a client that asks for resume:
 * RDEV_WIRE_RESUMABLE_KEY): 0; or -1 with msg (the call still the
 * caller's) when the session cannot be opened. Runs on a CQ thread. */
int srv_session_start(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                      const srv_grant_t *grant, const grpc_metadata_array *md, char *msg, size_t msglen);
/* Posts the receives this completion-queue thread deferred. */
void srv_sessions_post_deferred(void);
/* A Session call whose metadata asks to resume a session (RDEV_WIRE_RESUME_KEY):
 * takes it over, or answers the call with why not (rdev.proto, "Resume").
 * Returns 1 when the metadata asks for a resume (the call is handled
 * either way), 0 when it does not (a new session). session/call.c. */
int srv_session_resume(srv_t *srv, grpc_call *call, gpr_timespec deadline, srv_tenant_t *tenant,
                       const srv_grant_t *grant, const grpc_metadata_array *md);
/* The reaper of sessions whose resume window passed: started with the
 * server (0, or -1 when its thread cannot start), stopped once no session
 * is left. session/call.c. */
int srv_resume_start(srv_t *srv);
void srv_resume_stop(srv_t *srv);
/* Ends (cancels) every session of tenants marked removed. */
void srv_sessions_end_removed(srv_t *srv);
/* Ends (cancels) every session still open: the end of a drain. */
void srv_sessions_end_all(srv_t *srv);

/* HostFuncDone (ops_host.c): opens the gate of the blocking host function
 * of request seq on stream of the session whose key is key, if tenant t
 * owns that session and the function waits; 0, else -1. Any thread. */
int srv_host_func_done(srv_t *srv, srv_tenant_t *t, const char *job, const char *key, uint64_t stream, uint64_t seq);

/* In-process sessions: the same request handling without a call, for
 * tests and the fuzz harnesses (tests/fuzz/). Each reply is handed to fn
 * as a byte buffer it takes (to destroy when done: a zero-copy Read reply
 * shows device memory until then), in the order the replies were made; fn
 * runs on whatever thread made the reply, with the session's lock held,
 * and must not call into the session. */
typedef void (*srv_reply_fn)(void *user, grpc_byte_buffer *reply);
/* A session of tenant (it takes one of the tenant's sessions); NULL when
 * the tenant's session quota is spent or out of memory. */
srv_session_t *srv_session_open_local(srv_t *srv, srv_tenant_t *tenant, srv_reply_fn fn, void *user);
/* Handles bb, one received message, as if it came over the call: 0 when
 * handled (bb taken), 1 when a request paused it (bb taken; the resumer
 * finishes it once fn's holder let go of the replies it waits for), -1
 * when the session does not take a message now (bb not taken): a paused
 * message or backpressure holds it; srv_session_wait_ready waits. */
int srv_session_feed(srv_session_t *s, grpc_byte_buffer *bb);
/* Waits up to timeout_ms until s takes its next message: 0, or -1. */
int srv_session_wait_ready(srv_session_t *s, int timeout_ms);
/* Releases everything s made (as a client's close does), waits until
 * nothing of the server holds s any more, and frees it. Replies fn still
 * holds stay valid; the memory they show goes back when they are destroyed. */
void srv_session_close_local(srv_session_t *s);

#endif
