/*
 * client/lib/multi.c — the API's calls that name a session, and sessions
 * over several servers. A target "hostA:port,hostB:port" opens one member
 * session on each server (in parallel) under a head; the head numbers the
 * members' devices in order (the first server's first) and keeps the
 * current device. Every rdev_ function here picks the session that holds
 * what the call names (a device, a device address, a stream; for a
 * session to one server, itself) and calls the file that does the work on
 * it (cl_ functions of the same name). What spans servers is here too:
 * device-to-device copies between servers, which travel through the client
 * in pipelined chunks. Owns the head's cl_multi_t; calls session.c,
 * memory.c, stream.c, info.c, binary.c, bulk.c, pending.c, poll.c (a
 * server gone), addr.c, auth.c (what a target names) and error.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

#define CROSS_CHUNK ((size_t)8 << 20) /* a copy between servers moves this much per round */

typedef struct cl_multi {
  int n;
  rdev_session_t *m[CL_MULTI_MAX]; /* the members, in the target's order */
  atomic_int current;              /* the current device, numbered across the members */
  pthread_mutex_t set_mu;          /* a device set: current and its member's current device agree */
} cl_multi_t;

/* ---- routing ---------------------------------------------------------------------- */

/* The member holding device dev (numbered across s's members) into *m,
 * and its number there into *local; for a session to one server, s and
 * dev. A member's device count is known once its open was answered (this
 * waits for that). */
static int at_device(rdev_session_t *s, int dev, rdev_session_t **m, int *local) {
  *m = s;
  *local = dev;
  if (!s->multi) return RDEV_OK;
  if (dev < 0) return cl_error(RDEV_RT_INVALID_DEVICEID, "device %d does not exist", dev);
  int base = 0;
  for (int i = 0; i < s->multi->n; i++) {
    int c;
    int rc = cl_device_count(s->multi->m[i], &c);
    if (rc) return rc;
    if (dev < base + c) {
      *m = s->multi->m[i];
      *local = dev - base;
      return RDEV_OK;
    }
    base += c;
  }
  return cl_error(RDEV_RT_INVALID_DEVICEID, "device %d out of range (%d devices over %d servers)", dev, base,
                  s->multi->n);
}

/* The member holding the current device (s itself for one server). */
static int at_current(rdev_session_t *s, rdev_session_t **m) {
  int local;
  return at_device(s, s->multi ? atomic_load(&s->multi->current) : 0, m, &local);
}

/* The session among s's (s itself for one server) whose allocations hold
 * p, or NULL when none does. */
static rdev_session_t *holder(rdev_session_t *s, const void *p) {
  if (!s->multi) return cl_addr_known(s, p, 1, NULL) ? s : NULL;
  for (int i = 0; i < s->multi->n; i++)
    if (cl_addr_known(s->multi->m[i], p, 1, NULL)) return s->multi->m[i];
  return NULL;
}

/* The member that holds p; the first member when none does (its own
 * checks then refuse p as not device memory). */
static rdev_session_t *at_addr(rdev_session_t *s, const void *p) {
  if (!s->multi) return s;
  rdev_session_t *m = holder(s, p);
  return m ? m : s->multi->m[0];
}

/* The member a stream of s belongs to, into *m: RDEV_INVALID_PARAM when
 * the stream is NULL or another session's. */
static int at_stream(rdev_session_t *s, rdev_stream_t *stream, rdev_session_t **m) {
  *m = cl_stream_session(stream);
  if (!*m) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  if (*m != s && (*m)->head != s) return cl_error(RDEV_INVALID_PARAM, "stream belongs to another session");
  return RDEV_OK;
}

/* ---- open and close ------------------------------------------------------------------ */

/* The servers' addresses of target ("a,b,c"; blanks around each are
 * dropped) into part[0..*n). */
static int split_target(const char *target, char (*part)[CL_TARGET_MAX], int *n) {
  *n = 0;
  for (const char *p = target;;) {
    p += strspn(p, " \t");
    size_t len = strcspn(p, ","), all = len;
    while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    if (len == 0 || len >= CL_TARGET_MAX || *n == CL_MULTI_MAX)
      return cl_error(RDEV_INVALID_PARAM, "target \"%s\": up to %d addresses of 1 to %d bytes, separated by ','",
                      target, CL_MULTI_MAX, CL_TARGET_MAX - 1);
    memcpy(part[*n], p, len);
    part[(*n)++][len] = '\0';
    if (!p[all]) return RDEV_OK;
    p += all + 1;
  }
}

typedef struct {
  const char *target;
  const rdev_options_t *opts;
  rdev_session_t *s;
  int rc;
  char why[CL_MSG_MAX];
  pthread_t thread;
} member_open_t;

static void *open_member(void *arg) {
  member_open_t *o = arg;
  o->rc = cl_session_open(o->target, o->opts, &o->s);
  if (o->rc) snprintf(o->why, sizeof o->why, "%s", rdev_session_last_error());
  return NULL;
}

static void *close_member(void *arg) {
  cl_session_close(arg);
  return NULL;
}

/* Closes m[0..n) in parallel, as they were opened: each close waits for
 * its server's answer, so one after the other would cost n round trips.
 * A thread that cannot start closes its member here. */
static void close_members(rdev_session_t *const *m, int n) {
  pthread_t th[CL_MULTI_MAX];
  bool started[CL_MULTI_MAX] = {false};
  for (int i = 1; i < n; i++) started[i] = pthread_create(&th[i], NULL, close_member, m[i]) == 0;
  if (n > 0) cl_session_close(m[0]);
  for (int i = 1; i < n; i++) {
    if (started[i])
      pthread_join(th[i], NULL);
    else
      cl_session_close(m[i]);
  }
}

int rdev_session_open(const char *target, const rdev_options_t *opts, rdev_session_t **out) {
  if (!cl_target_several(target)) return cl_session_open(target, opts, out);
  if (!out) return cl_error(RDEV_INVALID_PARAM, "out is NULL");
  *out = NULL;
  char(*part)[CL_TARGET_MAX] = calloc(CL_MULTI_MAX, sizeof *part);
  member_open_t *o = calloc(CL_MULTI_MAX, sizeof *o);
  cl_multi_t *mu = calloc(1, sizeof *mu);
  rdev_session_t *head = calloc(1, sizeof *head);
  int n = 0;
  int rc =
      !part || !o || !mu || !head ? cl_error(RDEV_BAD_ALLOC, "out of host memory") : split_target(target, part, &n);
  for (int i = 0; !rc && i < n; i++) o[i] = (member_open_t){.target = part[i], .opts = opts};
  /* connected in parallel: each waits for its own connection */
  int started = 0;
  for (; !rc && started < n; started++)
    if (started > 0 && pthread_create(&o[started].thread, NULL, open_member, &o[started])) {
      rc = cl_error(RDEV_BAD_ALLOC, "cannot start a thread");
      break;
    }
  if (started > 0 && !rc) open_member(&o[0]);
  for (int i = 1; i < started; i++) pthread_join(o[i].thread, NULL);
  for (int i = 0; i < started && !rc; i++)
    if (o[i].rc) rc = cl_error(o[i].rc, "%s", o[i].why);
  if (!rc) {
    mu->n = n;
    for (int i = 0; i < n; i++) {
      mu->m[i] = o[i].s;
      o[i].s->head = head;
    }
    snprintf(head->target, sizeof head->target, "%s", target);
    pthread_mutex_init(&mu->set_mu, NULL);
    head->multi = mu;
    *out = head;
  } else {
    rdev_session_t *opened[CL_MULTI_MAX];
    int k = 0;
    for (int i = 0; i < started; i++)
      if (o[i].s) opened[k++] = o[i].s;
    close_members(opened, k);
    free(mu);
    free(head);
  }
  free(o);
  free(part);
  return rc;
}

int rdev_health_check(const char *target, const char *service, const rdev_options_t *opts, rdev_health_t *status) {
  if (!cl_target_several(target) || !status) return cl_health_check(target, service, opts, status);
  char(*part)[CL_TARGET_MAX] = calloc(CL_MULTI_MAX, sizeof *part);
  int n = 0;
  int rc = part ? split_target(target, part, &n) : cl_error(RDEV_BAD_ALLOC, "out of host memory");
  *status = RDEV_HEALTH_SERVING; /* while every server serves */
  for (int i = 0; !rc && i < n && *status == RDEV_HEALTH_SERVING; i++)
    rc = cl_health_check(part[i], service, opts, status);
  if (rc) *status = RDEV_HEALTH_UNKNOWN;
  free(part);
  return rc;
}

void rdev_session_close(rdev_session_t *s) {
  if (!s || !s->multi) {
    cl_session_close(s);
    return;
  }
  close_members(s->multi->m, s->multi->n);
  pthread_mutex_destroy(&s->multi->set_mu);
  free(s->multi);
  free(s);
}

int rdev_session_bulk(rdev_session_t *s) {
  if (!s || !s->multi) return cl_session_bulk(s);
  for (int i = 0; i < s->multi->n; i++)
    if (!cl_session_bulk(s->multi->m[i])) return 0;
  return 1;
}

void rdev_session_set_print_fn(rdev_session_t *s, rdev_print_fn fn, void *user) {
  if (!s || !s->multi) {
    cl_session_set_print_fn(s, fn, user);
    return;
  }
  for (int i = 0; i < s->multi->n; i++) cl_session_set_print_fn(s->multi->m[i], fn, user);
}

/* ---- server and devices ------------------------------------------------------------------ */

int rdev_server_info(rdev_session_t *s, rdev_server_info_t *info) {
  if (!s || !s->multi) return cl_server_info(s, info);
  int rc = cl_server_info(s->multi->m[0], info); /* the first server's, with every server's devices */
  int count;
  if (!rc && !(rc = rdev_device_count(s, &count))) info->device_count = count;
  return rc;
}

int rdev_server_kernels(rdev_session_t *s, rdev_kernel_info_t *kernels, int max, int *count) {
  return cl_server_kernels(s && s->multi ? s->multi->m[0] : s, kernels, max, count);
}

int rdev_device_count(rdev_session_t *s, int *count) {
  if (!s || !s->multi) return cl_device_count(s, count);
  if (!count) return cl_error(RDEV_INVALID_PARAM, "count is NULL");
  int sum = 0;
  for (int i = 0; i < s->multi->n; i++) {
    int c;
    int rc = cl_device_count(s->multi->m[i], &c);
    if (rc) return rc;
    sum += c;
  }
  *count = sum;
  return RDEV_OK;
}

int rdev_device_info(rdev_session_t *s, int dev, rdev_device_info_t *info) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session or info is NULL");
  rdev_session_t *m;
  int local;
  int rc = at_device(s, dev, &m, &local);
  return rc ? rc : cl_device_info(m, local, info);
}

int rdev_device_props(rdev_session_t *s, int dev, rdev_device_props_t *props) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session or props is NULL");
  rdev_session_t *m;
  int local;
  int rc = at_device(s, dev, &m, &local);
  return rc ? rc : cl_device_props(m, local, props);
}

int rdev_device_set(rdev_session_t *s, int dev) {
  if (!s || !s->multi) return cl_device_set(s, dev);
  rdev_session_t *m;
  int local;
  int rc = at_device(s, dev, &m, &local);
  if (rc) return rc;
  /* two threads setting devices of one member at once would otherwise
   * leave the member's current device the one's and the head's the other's */
  pthread_mutex_lock(&s->multi->set_mu);
  if (!(rc = cl_device_set(m, local))) atomic_store(&s->multi->current, dev);
  pthread_mutex_unlock(&s->multi->set_mu);
  return rc;
}

int rdev_device_get(rdev_session_t *s, int *dev) {
  if (!s || !s->multi || !dev) return cl_device_get(s, dev);
  *dev = atomic_load(&s->multi->current);
  return RDEV_OK;
}

int rdev_mem_info(rdev_session_t *s, size_t *free_bytes, size_t *total_bytes) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "NULL argument");
  rdev_session_t *m;
  int rc = at_current(s, &m);
  return rc ? rc : cl_mem_info(m, free_bytes, total_bytes);
}

/* ---- memory ------------------------------------------------------------------------ */

int rdev_malloc(rdev_session_t *s, void **dptr, size_t size, rdev_mem_policy_t policy) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session or dptr is NULL");
  rdev_session_t *m;
  int rc = at_current(s, &m);
  if (rc && dptr) *dptr = NULL;
  return rc ? rc : cl_malloc(m, dptr, size, policy);
}

int rdev_ptr_on_device(rdev_session_t *s, const void *p) { return s && p && holder(s, p); }

int rdev_free(rdev_session_t *s, void *dptr) { return cl_free(s ? at_addr(s, dptr) : s, dptr); }

/* Host memory is shared with the first server only (the others copy it). */
int rdev_malloc_host(rdev_session_t *s, void **ptr, size_t size) {
  return cl_malloc_host(s && s->multi ? s->multi->m[0] : s, ptr, size);
}

int rdev_free_host(rdev_session_t *s, void *ptr) { return cl_free_host(s && s->multi ? s->multi->m[0] : s, ptr); }

int rdev_memset(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count) {
  return cl_memset(s ? at_addr(s, dptr) : s, dptr, dest_max, value, count);
}

int rdev_memset_async(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count, rdev_stream_t *stream) {
  if (!s || !s->multi) return cl_memset_async(s, dptr, dest_max, value, count, stream);
  rdev_session_t *ms, *md = dptr ? holder(s, dptr) : NULL;
  int rc = at_stream(s, stream, &ms);
  if (rc) return rc;
  if (!md || md == ms) return cl_memset_async(ms, dptr, dest_max, value, count, stream);
  /* another server's memory: after the stream's earlier work, there */
  return (rc = rdev_stream_synchronize(stream)) ? rc : cl_memset(md, dptr, dest_max, value, count);
}

/* The checks of a copy between servers, before anything is sent or waited
 * for: the same codes as a copy on one server. */
static int check_across(rdev_session_t *to, void *dst, size_t dest_max, rdev_session_t *from, const void *src,
                        size_t count) {
  if (count > dest_max) return cl_error(RDEV_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", count, dest_max);
  bool dfit = true, sfit = true;
  (void)cl_addr_known(to, dst, count, &dfit);
  (void)cl_addr_known(from, src, count, &sfit);
  if (!dfit) return cl_error(RDEV_INVALID_PARAM, "dst range of %zu bytes runs past the end of its allocation", count);
  if (!sfit) return cl_error(RDEV_INVALID_PARAM, "src range of %zu bytes runs past the end of its allocation", count);
  return RDEV_OK;
}

/* Copies count bytes (checked) from src, memory of member from, to dst,
 * memory of member to, through the client: each chunk read into one host
 * buffer, then queued to `to` on a stream of the library's own on dst's
 * device, which takes a copy of it, so that the next chunk's read overlaps
 * its write. Returns once all of it is written, or with the first error
 * (the stream's own: the session's refused requests stay for the caller's
 * next synchronize). */
static int copy_across(rdev_session_t *to, void *dst, size_t dest_max, rdev_session_t *from, const void *src,
                       size_t count) {
  size_t chunk = count < CROSS_CHUNK ? count : CROSS_CHUNK;
  uint8_t *buf = malloc(chunk);
  if (!buf) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  int dev = (int)((((uint64_t)(uintptr_t)dst - RDEV_WIRE_VA_BASE) >> RDEV_WIRE_VA_DEV_SHIFT) & 63);
  rdev_stream_t *st = NULL;
  int rc = cl_stream_create_on(to, dev, &st);
  for (size_t off = 0; !rc && off < count; off += chunk) {
    size_t n = count - off < chunk ? count - off : chunk;
    rc = cl_memcpy(from, buf, n, (const uint8_t *)src + off, n, RDEV_MEMCPY_DEVICE_TO_HOST);
    if (!rc) rc = cl_memcpy_async(to, (uint8_t *)dst + off, dest_max - off, buf, n, RDEV_MEMCPY_HOST_TO_DEVICE, st);
  }
  if (st) {
    if (!rc) rc = cl_stream_sync_own(st);
    char why[CL_MSG_MAX]; /* the first error's */
    snprintf(why, sizeof why, "%s", rdev_session_last_error());
    rdev_stream_destroy(st);
    if (rc) cl_error_msg(rc, why);
  }
  free(buf);
  return rc;
}

/* A copy's sessions: the members holding dst and src (NULL: host memory),
 * and the stream's. */
static int copy(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind,
                rdev_stream_t *stream) {
  rdev_session_t *md = dst ? holder(s, dst) : NULL;
  rdev_session_t *ms = src ? holder(s, src) : NULL;
  rdev_session_t *st_m = NULL;
  int rc = stream ? at_stream(s, stream, &st_m) : RDEV_OK;
  if (rc) return rc;
  if (md && ms && md != ms) {
    if (kind != RDEV_MEMCPY_DEVICE_TO_DEVICE && kind != RDEV_MEMCPY_DEFAULT)
      return cl_error(RDEV_INVALID_PARAM, "dst %p and src %p are device memory (of rdevd at %s and at %s)", dst, src,
                      md->target, ms->target);
    if (count == 0) return RDEV_OK;
    if ((rc = check_across(md, dst, dest_max, ms, src, count))) return rc;
    /* between servers: the stream's earlier work first, then the copy */
    if (stream && (rc = rdev_stream_synchronize(stream))) return rc;
    return copy_across(md, dst, dest_max, ms, src, count);
  }
  rdev_session_t *m = md ? md : ms ? ms : st_m ? st_m : s->multi->m[0];
  if (stream && m == st_m) return cl_memcpy_async(m, dst, dest_max, src, count, kind, stream);
  /* another server's memory than the stream's: after the stream's earlier
   * work, there, done before the call returns */
  if (stream && (rc = rdev_stream_synchronize(stream))) return rc;
  return cl_memcpy(m, dst, dest_max, src, count, kind);
}

int rdev_memcpy(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind) {
  if (!s || !s->multi) return cl_memcpy(s, dst, dest_max, src, count, kind);
  return copy(s, dst, dest_max, src, count, kind, NULL);
}

int rdev_memcpy_async(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count,
                      rdev_memcpy_kind_t kind, rdev_stream_t *stream) {
  if (!s || !s->multi) return cl_memcpy_async(s, dst, dest_max, src, count, kind, stream);
  if (!stream) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  return copy(s, dst, dest_max, src, count, kind, stream);
}

/* ---- streams, events, binaries ------------------------------------------------------------ */

int rdev_stream_create(rdev_session_t *s, rdev_stream_t **stream) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session or stream is NULL");
  rdev_session_t *m;
  int rc = at_current(s, &m);
  return rc ? rc : cl_stream_create(m, stream);
}

int rdev_event_create(rdev_session_t *s, rdev_event_t **ev) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session or ev is NULL");
  rdev_session_t *m;
  int rc = at_current(s, &m);
  return rc ? rc : cl_event_create(m, ev);
}

/* A server that went away (its session ended): it has no work to run. */
static bool gone(rdev_session_t *m, int rc) { return rc == RDEV_UNAVAILABLE && cl_poll_dead(m, NULL, 0); }

/* A binary is loaded on every member still there (with the function of
 * name or entry when fout is not NULL): a launch may come on any of their
 * streams. The first error fails the call and unloads what was loaded;
 * servers gone are passed over, unless all are. */
static int load_each(rdev_session_t *s, const void *data, size_t len, const char *name, uint64_t entry,
                     rdev_binary_t **bout, rdev_function_t **fout) {
  *bout = NULL;
  if (fout) *fout = NULL;
  int rc = RDEV_OK, rc_gone = RDEV_OK;
  char why[CL_MSG_MAX] = "";
  for (int i = 0; i < s->multi->n && !rc; i++) {
    rdev_session_t *m = s->multi->m[i];
    rdev_binary_t *b;
    rdev_function_t *f = NULL;
    int r = fout ? cl_binary_load_function(m, data, len, name, entry, &b, &f) : cl_binary_load(m, data, len, &b);
    if (r && gone(m, r)) {
      rc_gone = r;
      snprintf(why, sizeof why, "%s", rdev_session_last_error());
    } else if (r) {
      rc = r;
      snprintf(why, sizeof why, "%s", rdev_session_last_error());
    } else if (*bout) {
      cl_binary_link(*bout, b, fout ? *fout : NULL, f);
    } else {
      *bout = b;
      if (fout) *fout = f;
    }
  }
  if (!rc && !*bout) rc = rc_gone; /* every server is gone */
  if (rc && *bout) rdev_binary_unload(*bout);
  if (rc) {
    *bout = NULL;
    if (fout) *fout = NULL;
    cl_error_msg(rc, why);
  }
  return rc;
}

int rdev_binary_load(rdev_session_t *s, const void *data, size_t len, rdev_binary_t **out) {
  if (!s || !s->multi || !out) return cl_binary_load(s, data, len, out);
  return load_each(s, data, len, NULL, 0, out, NULL);
}

int rdev_binary_load_function(rdev_session_t *s, const void *data, size_t len, const char *name, uint64_t entry,
                              rdev_binary_t **bout, rdev_function_t **fout) {
  if (!s || !s->multi || !bout || !fout) return cl_binary_load_function(s, data, len, name, entry, bout, fout);
  return load_each(s, data, len, name, entry, bout, fout);
}
