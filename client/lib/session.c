/*
 * client/lib/session.c — a session's lifecycle: opening it (channel,
 * credentials, the connection, the one bidirectional gRPC call to rdevd;
 * the server's answer, read by on_open when poll.c's receiver gets it), and
 * closing it (half-close, wait for the end, free everything). While it is
 * open, submit.c, poll.c, send.c and pending.c run the call. Owns the
 * session object and what open makes (channel, completion queue, call,
 * open metadata); calls auth.c, poll.c, memory.c, bulk.c,
 * send.c, pending.c, info.c, stream.c and addr.c (to set up and tear down
 * their parts), and error.c.
 */
#define _GNU_SOURCE
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

#define CLOSE_GRACE_MS 10000 /* half-close to end of call before we cancel */

/* Frees what open made once nothing is in flight on the call. */
static void session_free(rdev_session_t *s) {
  cl_copies_close(s);
  if (s->call) grpc_call_unref(s->call);
  if (s->cq) {
    grpc_completion_queue_shutdown(s->cq);
    while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN) {}
    grpc_completion_queue_destroy(s->cq);
  }
  if (s->channel) grpc_channel_destroy(s->channel);
  cl_auth_release(&s->auth);
  grpc_metadata_array_destroy(&s->init_md);
  cl_poll_destroy(s);
  pthread_mutex_destroy(&s->mu);
  free(s);
  grpc_shutdown();
}

static gpr_timespec ms_from_now(int64_t ms) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

/* The process's malloc is its own: only RDEV_MALLOC_TUNE=1 asks the first
 * open to keep freed chunk-sized blocks in the heap (rdev.h says what it
 * changes and what it buys). */
static void tune_malloc_once(void) {
  const char *v = getenv("RDEV_MALLOC_TUNE");
  if (!v || strcmp(v, "1") != 0) return;
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

/* The server's batch limit from its open metadata: between one chunk (what
 * servers without the key take) and this client's own limit. */
/* A decimal metadata value (0 for anything else). */
static unsigned long long decimal_of(grpc_slice v) {
  char buf[24];
  size_t n = GRPC_SLICE_LENGTH(v) < sizeof buf - 1 ? GRPC_SLICE_LENGTH(v) : sizeof buf - 1;
  memcpy(buf, GRPC_SLICE_START_PTR(v), n);
  buf[n] = '\0';
  return strtoull(buf, NULL, 10);
}

static size_t batch_xfer_of(grpc_slice v) {
  unsigned long long x = decimal_of(v);
  if (x < RDEV_WIRE_MAX_CHUNK) return RDEV_WIRE_MAX_CHUNK;
  return x > RDEV_WIRE_MAX_BATCH_XFER ? RDEV_WIRE_MAX_BATCH_XFER : (size_t)x;
}

/* The server's answer to the open (its initial metadata), on the polling
 * thread: accepted when marked; then the batch limit, the device count,
 * the session's key and its bulk connection, which starts now. */
static bool on_open(rdev_session_t *s, bool ok) {
  size_t batch_xfer = RDEV_WIRE_MAX_CHUNK; /* what servers without the key take */
  unsigned long long bulk_port = 0;        /* the server offers none */
  char bulk_path[108] = "";                /* or a unix socket */
  bool marked = false;
  unsigned long long resume_ms = 0; /* servers before resume keep no broken session */
  for (size_t i = 0; ok && i < s->init_md.count; i++) {
    const grpc_metadata *m = &s->init_md.metadata[i];
    marked |= grpc_slice_str_cmp(m->key, RDEV_WIRE_SESSION_OPEN_KEY) == 0;
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_BATCH_XFER_KEY) == 0) batch_xfer = batch_xfer_of(m->value);
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_BULK_PORT_KEY) == 0) bulk_port = decimal_of(m->value);
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_RESUME_MS_KEY) == 0) resume_ms = decimal_of(m->value);
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_DEVICES_KEY) == 0 && GRPC_SLICE_LENGTH(m->value) > 0 &&
        decimal_of(m->value) <= RDEV_WIRE_MAX_DEVICES)
      cl_device_count_known(s, (int)decimal_of(m->value));
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_MEM_LIMITS_KEY) == 0) {
      pthread_mutex_lock(&s->mu);
      cl_addr_limits_locked(s, m->value);
      pthread_mutex_unlock(&s->mu);
    }
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_DEVICE_NAMES_KEY) == 0) {
      pthread_mutex_lock(&s->mu);
      cl_device_names_locked(s, m->value);
      pthread_mutex_unlock(&s->mu);
    }
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_BULK_PATH_KEY) == 0 && GRPC_SLICE_LENGTH(m->value) < sizeof bulk_path) {
      memcpy(bulk_path, GRPC_SLICE_START_PTR(m->value), GRPC_SLICE_LENGTH(m->value));
      bulk_path[GRPC_SLICE_LENGTH(m->value)] = '\0';
    }
    if (grpc_slice_str_cmp(m->key, RDEV_WIRE_SESSION_KEY_KEY) == 0 &&
        GRPC_SLICE_LENGTH(m->value) == RDEV_WIRE_SESSION_KEY_LEN) {
      pthread_mutex_lock(&s->mu); /* read by whoever waited for the open (cl_poll_wait_open) */
      memcpy(s->host.key, GRPC_SLICE_START_PTR(m->value), RDEV_WIRE_SESSION_KEY_LEN);
      pthread_mutex_unlock(&s->mu);
    }
  }
  if (!marked) return false; /* refused: its status follows */
  cl_poll_resumable(s, resume_ms > 3600000 ? 3600000 : (int64_t)resume_ms);
  pthread_mutex_lock(&s->mu);
  cl_send_init(s, batch_xfer);
  bool dead = cl_poll_check_open_locked(s) != RDEV_OK; /* ended meanwhile: no bulk connection */
  pthread_mutex_unlock(&s->mu);
  if (dead) return false;
  cl_bulk_start(s, bulk_port > 65535 ? 0 : (int)bulk_port, bulk_path[0] ? bulk_path : NULL);
  return true;
}

/* Waits until the channel is connected (TCP, then the server's HTTP/2
 * SETTINGS, before which gRPC core sends nothing) or the deadline: true
 * when it is. */
static bool wait_ready(grpc_channel *ch, gpr_timespec deadline) {
  grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
  grpc_connectivity_state st = grpc_channel_check_connectivity_state(ch, 1);
  while (st != GRPC_CHANNEL_READY && gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), deadline) < 0) {
    grpc_channel_watch_connectivity_state(ch, st, deadline, cq, NULL);
    grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL); /* changed, or the deadline */
    st = grpc_channel_check_connectivity_state(ch, 1);
  }
  grpc_completion_queue_shutdown(cq);
  while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type != GRPC_QUEUE_SHUTDOWN) {}
  grpc_completion_queue_destroy(cq);
  return st == GRPC_CHANNEL_READY;
}

int cl_session_open(const char *target, const rdev_options_t *opts, rdev_session_t **out) {
  static pthread_once_t tuned = PTHREAD_ONCE_INIT;
  pthread_once(&tuned, tune_malloc_once);
  if (!out) return cl_error(RDEV_INVALID_PARAM, "out is NULL");
  *out = NULL;
  if (!target || !*target) return cl_error(RDEV_INVALID_PARAM, "no target");
  int64_t timeout_ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 0;
  const char *env = getenv("RDEV_CONNECT_TIMEOUT_MS");
  if (!timeout_ms && env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end == '\0' && v > 0) timeout_ms = v;
  }
  if (!timeout_ms) timeout_ms = 10000;

  rdev_session_t *s = calloc(1, sizeof *s);
  if (!s) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  snprintf(s->target, sizeof s->target, "%s", target);
  grpc_init();
  pthread_mutex_init(&s->mu, NULL);
  cl_poll_init(s);
  s->poll.resume_limit = opts ? opts->resume_ms : 0;
  cl_bulk_init(s);
  cl_pending_init(s);
  cl_device_init(s);
  cl_addr_init(s);
  cl_host_init(s);
  cl_send_init(s, RDEV_WIRE_MAX_CHUNK); /* until the server says more */
  grpc_metadata_array_init(&s->init_md);
  if (cl_copies_open(s)) {
    session_free(s);
    return RDEV_BAD_ALLOC;
  }

  /* Messages up to a chunk plus framing; reconnect quickly to a server that
   * is just starting (the session waits for it up to the connect timeout);
   * no transparent retries of the session call; a connection of its own;
   * pings that find a server gone silent, also while a call waits long
   * without data (rdevd takes a ping a second). */
  int64_t ka = opts && opts->keepalive_ms > 0 ? opts->keepalive_ms : 10000;
  ka = ka < 1000 ? 1000 : ka > INT32_MAX ? INT32_MAX : ka;
  const cl_int_arg_t iargs[] = {
      {GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (int)RDEV_WIRE_MAX_MESSAGE},
      {GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, (int)RDEV_WIRE_MAX_MESSAGE},
      {GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100},
      {GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100},
      {GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000},
      {GRPC_ARG_ENABLE_RETRIES, 0},
      {GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1},
      {GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8 << 20}, /* fixed window: see server.c */
      /* probing grows the connection's window past HTTP/2's first 64 KiB
       * within a fresh session's first in-band D2H (1 MiB at 10 ms RTT:
       * 2.9 round trips without, 1.5 with) */
      {GRPC_ARG_HTTP2_BDP_PROBE, 1},
      {GRPC_ARG_KEEPALIVE_TIME_MS, (int)ka},
      {GRPC_ARG_KEEPALIVE_TIMEOUT_MS, (int)ka},
      {GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0},
  };
  int arc = cl_channel_create(target, opts, iargs, (int)(sizeof iargs / sizeof iargs[0]), &s->auth, &s->channel);
  if (arc) {
    session_free(s);
    return arc;
  }
  /* Connected first (a dead port fails here), which the first request
   * would wait for anyway; the session's acceptance is not waited for: the
   * open rides with the first requests, a refusal fails the first call
   * that waits (and every later one) with its code. A same-host session
   * (a unix socket) waits for it: it costs moments, and its host memory is
   * shared once its bulk connection attached. */
  gpr_timespec deadline = ms_from_now(timeout_ms); /* the connection's and the answer's */
  if (!wait_ready(s->channel, deadline)) {
    session_free(s);
    return cl_error(RDEV_UNAVAILABLE, "cannot reach rdevd at %s within %lld ms", target, (long long)timeout_ms);
  }
  s->cq = grpc_completion_queue_create_for_next(NULL);
  s->call = grpc_channel_create_call(s->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->cq,
                                     grpc_slice_from_static_string(RDEV_WIRE_METHOD_SESSION), NULL,
                                     gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
  if (!s->call) {
    session_free(s);
    return cl_error(RDEV_UNAVAILABLE, "cannot create a call to %s", target);
  }

  grpc_op ops[2];
  memset(ops, 0, sizeof ops);
  ops[0].op = GRPC_OP_SEND_INITIAL_METADATA; /* the connection is up: no waiting for one */
  size_t nmd = 0; /* the token, and whether this client resumes (poll.c's array: free until a break) */
  if (s->auth.n) s->poll.resume_md[nmd++] = s->auth.md;
  if (s->poll.resume_limit >= 0) {
    pthread_mutex_lock(&s->mu);
    cl_send_keep_locked(s, true, false); /* what goes before rdevd's answer may need sending again too */
    pthread_mutex_unlock(&s->mu);
    s->poll.resume_md[nmd].key = grpc_slice_from_static_string(RDEV_WIRE_RESUMABLE_KEY);
    s->poll.resume_md[nmd++].value = grpc_slice_from_static_string("1");
  }
  ops[0].data.send_initial_metadata.count = nmd;
  ops[0].data.send_initial_metadata.metadata = s->poll.resume_md;
  ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
  ops[1].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
  grpc_call_error ce = grpc_call_start_batch(s->call, ops, 2, CL_TAG(CL_TAG_OPEN), NULL);
  grpc_call_error ce2 = ce == GRPC_CALL_OK ? cl_poll_watch_end(s) : GRPC_CALL_ERROR;
  if (ce != GRPC_CALL_OK || ce2 != GRPC_CALL_OK) {
    /* Nothing we can wait for reliably: cancel and drain what was started. */
    grpc_call_cancel(s->call, NULL);
    grpc_call_unref(s->call);
    s->call = NULL;
    session_free(s);
    return cl_error(RDEV_INTERNAL_ERROR, "cannot start the session call (%d/%d)", ce, ce2);
  }
  int rc = cl_poll_start(s, on_open, deadline);
  if (rc) {
    session_free(s);
    return rc;
  }
  if (!strncmp(target, "unix:", 5)) {
    rc = cl_poll_wait_open(s, NULL); /* bounded: no answer by the deadline ends the call */
    if (rc) {
      char why[CL_MSG_MAX];
      snprintf(why, sizeof why, "%s", rdev_session_last_error());
      cl_session_close(s);
      return cl_error_msg(rc, why);
    }
  }
  *out = s;
  return RDEV_OK;
}

void cl_session_close(rdev_session_t *s) {
  if (!s) return;
  cl_poll_close(s, CLOSE_GRACE_MS); /* the call ended, the receiver stopped */
  cl_host_release_all(s);           /* its shared host memory is the caller's alone */
  cl_bulk_stop(s);                  /* and the bulk connection's reader */
  cl_host_close(s);                 /* host functions told of the end ran */
  grpc_completion_queue_destroy(s->cq);
  s->cq = NULL;
  cl_free_streams_events(s);
  cl_free_binaries(s);
  cl_addr_map_destroy(s);
  session_free(s);
}
