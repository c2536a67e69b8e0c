/*
 * server/dispatch.c — running a session's requests: the request context
 * (handle lookups, checks, errors), callbacks that answer later, the op
 * table, a message's batch and its limits (rdev_wire_walk), and pausing a
 * message whose request must wait for synchronous Read replies to leave,
 * with the server's one resumer thread.
 */
#define _GNU_SOURCE
#include <grpc/support/alloc.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

int srv_fail(srv_req_t *x, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->r.message, sizeof x->r.message, fmt, ap);
  va_end(ap);
  return code;
}

/* A runtime failure: its own detail. */
int srv_rt_failed(srv_req_t *x, int rc) { return srv_fail(x, rc, "%s", rdev_rt_last_error()); }

srv_handle_t *srv_get_handle(srv_req_t *x, uint64_t h, int type) { return srv_handles_get(&x->s->handles, h, type); }

/* Stream handle h's entry in *e. */
int srv_find_stream(srv_req_t *x, uint64_t h, srv_handle_t **e) {
  *e = srv_get_handle(x, h, SRV_H_STREAM);
  if (!*e)
    return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "stream 0x%llx is not a stream of this session",
                    (unsigned long long)h);
  x->used = (*e)->ptr;
  return RDEV_OK;
}

/* The stream behind h, in *st, for work the caller queues on it: behind a
 * fence if async view reads went before (views_fence). */
int srv_get_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st) {
  srv_handle_t *e;
  int rc = srv_find_stream(x, h, &e);
  if (rc) return rc;
  *st = e->ptr;
  return (rc = srv_views_fence(e)) ? srv_rt_failed(x, rc) : RDEV_OK;
}

int srv_get_event(srv_req_t *x, uint64_t h, srv_handle_t **e) {
  *e = srv_get_handle(x, h, SRV_H_EVENT);
  if (!*e)
    return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "event 0x%llx is not an event of this session",
                    (unsigned long long)h);
  return RDEV_OK;
}

/* count bytes at offset of buffer h, checked without overflow; *addr gets
 * the device address, *mem (if asked) the buffer's memory. */
int srv_buf_range(srv_req_t *x, const char *what, uint64_t h, uint64_t off, uint64_t count, char **addr, mem_t **mem) {
  srv_handle_t *e = srv_get_handle(x, h, SRV_H_BUF);
  if (!e)
    return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "%s: 0x%llx is not a buffer of this session", what,
                    (unsigned long long)h);
  if (off > e->size || count > e->size - off)
    return srv_fail(x, RDEV_INVALID_PARAM, "%s: %llu bytes at offset %llu exceed the %zu-byte buffer", what,
                    (unsigned long long)count, (unsigned long long)off, e->size);
  *addr = (char *)e->ptr + off;
  if (mem) *mem = e->mem;
  return RDEV_OK;
}

/* The device behind the tenant's device number `local`, in *dev. A tenant
 * sees only its devices; others do not exist for it. */
int srv_check_device(srv_req_t *x, int local, int *dev) {
  int n = 0;
  rdev_rt_device_count(x->s->srv->rt, &n);
  *dev = srv_tenant_device(x->s->tenant, n, local);
  if (*dev < 0)
    return srv_fail(x, RDEV_RT_INVALID_DEVICEID, "device %d does not exist (this tenant has %d)", local,
                    srv_tenant_device_count(x->s->tenant, n));
  return RDEV_OK;
}

int srv_check_count(srv_req_t *x, uint64_t count, uint64_t dest_max) {
  if (count > dest_max)
    return srv_fail(x, RDEV_RT_PARAM_INVALID, "count %llu exceeds destMax %llu", (unsigned long long)count,
                    (unsigned long long)dest_max);
  return RDEV_OK;
}

cb_ctx_t *srv_cb_new(srv_session_t *s, uint64_t seq, rdev_rt_stream_t *st, void *buf, size_t len) {
  cb_ctx_t *c = malloc(sizeof *c);
  if (!c) return NULL;
  srv_session_ref(s);
  *c = (cb_ctx_t){s, seq, st, buf, len, NULL, NULL, NULL};
  return c;
}

void srv_cb_done(cb_ctx_t *c) {
  if (c->views) srv_views_unref(c->views);
  if (c->mem) srv_mem_unref(c->mem);
  free(c->pin);
  srv_session_unref(c->s);
  free(c);
}

/* Queues fn(c) on st; on failure releases c and returns the error. */
int srv_queue_callback(srv_req_t *x, rdev_rt_stream_t *st, rdev_rt_host_fn fn, cb_ctx_t *c) {
  if (!c) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  int rc = rdev_rt_launch_callback(st, fn, c);
  if (rc != RDEV_OK) {
    srv_cb_done(c);
    return srv_rt_failed(x, rc);
  }
  return SRV_LATER;
}

/* StreamSync, StreamDestroy and EventSync answer here, in stream order. */
void srv_sync_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    int err = c->st ? rdev_rt_stream_take_error(c->st) : RDEV_OK;
    srv_send_status(c->s, c->seq, 0, err, err ? STREAM_FAILED : "");
  }
  srv_cb_done(c);
}

static op_fn op_for(pb_size_t which) {
  switch (which) {
    case rdev_v1_Request_malloc_tag: return srv_op_malloc;
    case rdev_v1_Request_free_tag: return srv_op_free;
    case rdev_v1_Request_stream_create_tag: return srv_op_stream_create;
    case rdev_v1_Request_stream_destroy_tag: return srv_op_stream_destroy;
    case rdev_v1_Request_stream_sync_tag: return srv_op_stream_sync;
    case rdev_v1_Request_stream_query_tag: return srv_op_stream_query;
    case rdev_v1_Request_write_tag: return srv_op_write;
    case rdev_v1_Request_read_tag: return srv_op_read;
    case rdev_v1_Request_copy_tag: return srv_op_copy;
    case rdev_v1_Request_memset_tag: return srv_op_memset;
    case rdev_v1_Request_launch_tag: return srv_op_launch;
    case rdev_v1_Request_event_create_tag: return srv_op_event_create;
    case rdev_v1_Request_event_destroy_tag: return srv_op_event_destroy;
    case rdev_v1_Request_event_record_tag: return srv_op_event_record;
    case rdev_v1_Request_stream_wait_event_tag: return srv_op_stream_wait_event;
    case rdev_v1_Request_event_sync_tag: return srv_op_event_sync;
    case rdev_v1_Request_event_query_tag: return srv_op_event_query;
    case rdev_v1_Request_event_elapsed_tag: return srv_op_event_elapsed;
    case rdev_v1_Request_mem_info_tag: return srv_op_mem_info;
  }
  return NULL;
}

/* The stream an asynchronous request names (0: none or synchronous). */
static uint64_t request_stream(const rdev_v1_Request *q) {
  switch (q->which_op) {
    case rdev_v1_Request_write_tag: return q->op.write.stream;
    case rdev_v1_Request_read_tag: return q->op.read.stream;
    case rdev_v1_Request_copy_tag: return q->op.copy.stream;
    case rdev_v1_Request_memset_tag: return q->op.memset.stream;
    case rdev_v1_Request_launch_tag: return q->op.launch.stream;
    case rdev_v1_Request_event_record_tag: return q->op.event_record.stream;
    case rdev_v1_Request_stream_wait_event_tag: return q->op.stream_wait_event.stream;
  }
  return 0;
}

/* Whether buffer h of s is shown by a synchronous Read reply gRPC still
 * holds. req_mu and pins->mu held. */
static int buffer_shown(srv_session_t *s, uint64_t h) {
  srv_handle_t *e = srv_handles_get(&s->handles, h, SRV_H_BUF);
  return e && e->mem->shown > 0;
}

/* Whether r must wait before it runs: it may change the memory of a buffer
 * (now, or on a stream that may run it at once) that a synchronous Read
 * reply gRPC still holds shows. Run now, it could change what that reply
 * shows: a session's requests run as if each waited for the one before.
 * req_mu held. */
static int must_wait(srv_session_t *s, const rdev_wire_request_t *r) {
  const rdev_v1_Request *q = &r->q;
  pins_t *p = s->pins;
  int wait = 0;
  pthread_mutex_lock(&p->mu);
  if (s->sync_views && s->sync_views->n > 0) {
    switch (q->which_op) {
      case rdev_v1_Request_write_tag: wait = buffer_shown(s, q->op.write.buf); break;
      case rdev_v1_Request_memset_tag: wait = buffer_shown(s, q->op.memset.buf); break;
      case rdev_v1_Request_copy_tag: wait = buffer_shown(s, q->op.copy.dst); break;
      case rdev_v1_Request_launch_tag: /* any buffer it is given */
        for (int i = 0; i < r->nargs && i < RDEV_WIRE_MAX_ARGS && !wait; i++)
          wait = r->args[i].which_v == rdev_v1_Arg_ptr_tag && buffer_shown(s, r->args[i].v.ptr.buf);
        break;
      default: break;
    }
  }
  pthread_mutex_unlock(&p->mu);
  return wait;
}

/* The Read and Write bytes r moves (a Read over the chunk limit is refused
 * by its handler and moves nothing). */
static size_t request_xfer(const rdev_wire_request_t *r) {
  if (r->q.which_op == rdev_v1_Request_write_tag) return r->data.len;
  if (r->q.which_op == rdev_v1_Request_read_tag && r->q.op.read.count <= RDEV_WIRE_MAX_CHUNK)
    return (size_t)r->q.op.read.count;
  return 0;
}

/* Runs one request of a message (index: in its batch, -1 for its own;
 * err: why it is malformed, or NULL) and answers it. Returns RDEV_WIRE_STOP,
 * having done nothing, when it must wait (must_wait); RDEV_WIRE_CUT when
 * it was one past the batch limit, which ends the batch (so that one
 * message cannot make more than RDEV_WIRE_MAX_BATCH + 2 replies). */
static int run_request(srv_session_t *s, rdev_wire_request_t *r, int index, const char *err, batch_t *b) {
  const rdev_v1_Request *q = &r->q;
  srv_req_t x = {.s = s, .q = q, .w = r, .data = &r->data, .r = rdev_v1_Reply_init_zero};
  size_t xfer = request_xfer(r);
  int rc, wait = 0, cut = 0;
  x.stream = request_stream(q);
  if (index >= 0 && ++b->count > RDEV_WIRE_MAX_BATCH) { /* malformed ones count too */
    rc = srv_fail(&x, RDEV_INVALID_PARAM, "a batch holds at most %d requests: this one and the rest are not run",
                  RDEV_WIRE_MAX_BATCH);
    cut = 1;
  } else if (err) {
    rc = srv_fail(&x, RDEV_PROTOCOL, "malformed request: %s", err);
  } else if (r->data.oversize) {
    rc = srv_fail(&x, RDEV_INVALID_PARAM, "payload exceeds the %u-byte chunk limit", RDEV_WIRE_MAX_CHUNK);
  } else if (xfer > RDEV_WIRE_MAX_BATCH_XFER - b->xfer) {
    rc = srv_fail(&x, RDEV_INVALID_PARAM, "a message moves at most %u bytes of Read and Write data",
                  RDEV_WIRE_MAX_BATCH_XFER);
  } else {
    b->xfer += xfer;
    op_fn fn = op_for(q->which_op);
    pthread_mutex_lock(&s->req_mu);
    if (s->released)
      rc = SRV_LATER; /* the session is ending: nothing to answer to */
    else if (!fn)
      rc = srv_fail(&x, RDEV_PROTOCOL, "request without a known operation");
    else if ((wait = must_wait(s, r)))
      rc = SRV_LATER;
    else {
      srv_reap_dead(s);
      rc = fn(&x);
      if (x.used) srv_check_room(s, x.used);
    }
    pthread_mutex_unlock(&s->req_mu);
    if (wait) b->count -= index >= 0, b->xfer -= xfer; /* counted again when it runs */
  }
  if (rc != SRV_LATER) {
    x.r.seq = q->seq;
    x.r.status = rc;
    if (rc != RDEV_OK) {
      x.r.stream = x.stream;
      srv_log(SRV_LOG_DEBUG, "session %llu seq %llu: %s (%d): %s", (unsigned long long)s->id,
              (unsigned long long)q->seq, rdev_status_name(rc), rc, x.r.message);
    }
    srv_send_reply(s, &x.r, x.has_payload ? &x.payload : NULL);
  }
  if (x.has_payload) grpc_slice_unref(x.payload);
  return wait ? RDEV_WIRE_STOP : cut ? RDEV_WIRE_CUT : 0;
}

static int visit_request(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  batch_t *b = arg;
  return run_request(b->s, r, index, err, b);
}

static int pause_message(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b);

/* Handles one received message: its batch's requests, run as they are
 * decoded, then its own (rdev_wire_walk); from b->walk.skip on when
 * resumed. Returns 1 when a request must wait: the rest of the message,
 * and bb with it, then belongs to pause_message. */
int srv_handle_message(srv_session_t *s, grpc_byte_buffer *bb, batch_t *b) {
  rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &b->walk, visit_request, b);
  return b->walk.stopped ? pause_message(s, bb, b) : 0;
}

/* Whether a paused session may go on: gRPC let go of its synchronous Read
 * replies, or it is ending. srv->paused_mu held. */
static int may_resume(srv_session_t *s) {
  pins_t *p = s->pins;
  pthread_mutex_lock(&p->mu);
  int go = s->sync_views->n == 0 || p->closing;
  if (go) s->sync_views->resume = 0;
  pthread_mutex_unlock(&p->mu);
  return go;
}

void srv_resumer_wake(srv_t *srv) {
  pthread_mutex_lock(&srv->paused_mu);
  pthread_cond_broadcast(&srv->paused_cv);
  pthread_mutex_unlock(&srv->paused_mu);
}

/* Handles the rest of s's paused message, then receives the next one
 * (unless it paused again). */
static void resume_message(srv_session_t *s) {
  grpc_byte_buffer *bb = s->paused;
  batch_t b = s->paused_at;
  s->paused = NULL;
  if (!srv_handle_message(s, bb, &b)) {
    grpc_byte_buffer_destroy(bb);
    pthread_mutex_lock(&s->mu);
    srv_post_next_recv(s);
    pthread_mutex_unlock(&s->mu);
  }
  srv_session_unref(s); /* pause_message's */
}

/* The resumer: one thread for the server, since pauses are rare; it
 * waits so that no completion-queue thread ever does. */
static void *resumer_main(void *arg) {
  srv_t *srv = arg;
  pthread_mutex_lock(&srv->paused_mu);
  for (;;) {
    srv_session_t **pp = &srv->paused;
    while (*pp && !may_resume(*pp)) pp = &(*pp)->paused_next;
    srv_session_t *s = *pp;
    if (s) {
      *pp = s->paused_next;
      pthread_mutex_unlock(&srv->paused_mu);
      resume_message(s);
      pthread_mutex_lock(&srv->paused_mu);
    } else if (srv->resumer_stop) {
      break;
    } else {
      pthread_cond_wait(&srv->paused_cv, &srv->paused_mu);
    }
  }
  pthread_mutex_unlock(&srv->paused_mu);
  return NULL;
}

void srv_sessions_init(srv_t *srv) {
  pthread_mutex_init(&srv->paused_mu, NULL);
  pthread_cond_init(&srv->paused_cv, NULL);
  srv->paused = NULL;
  srv->resumer_started = srv->resumer_stop = 0;
}

void srv_sessions_stop(srv_t *srv) {
  pthread_mutex_lock(&srv->paused_mu);
  srv->resumer_stop = 1;
  pthread_cond_broadcast(&srv->paused_cv);
  int started = srv->resumer_started;
  pthread_mutex_unlock(&srv->paused_mu);
  if (started) pthread_join(srv->resumer, NULL);
}

/* The session stops handling requests, and receiving, until gRPC let go
 * of its synchronous Read replies: then the resumer goes on with bb past
 * what b handled. Returns 1; 0 when the session is ending (nothing more
 * to answer). */
static int pause_message(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b) {
  pthread_mutex_lock(&s->req_mu);
  int ok = !s->released;
  if (ok) {
    s->paused = bb;
    s->paused_at = *b;
    s->paused_at.walk.skip = b->walk.seen;
    pthread_mutex_lock(&s->pins->mu);
    s->sync_views->resume = 1;
    pthread_mutex_unlock(&s->pins->mu);
  }
  pthread_mutex_unlock(&s->req_mu);
  if (!ok) return 0;
  srv_t *srv = s->srv;
  srv_session_ref(s);
  pthread_mutex_lock(&srv->paused_mu);
  if (!srv->resumer_started && pthread_create(&srv->resumer, NULL, resumer_main, srv) == 0) srv->resumer_started = 1;
  ok = srv->resumer_started;
  if (ok) {
    s->paused_next = srv->paused;
    srv->paused = s;
    pthread_cond_broadcast(&srv->paused_cv);
  }
  pthread_mutex_unlock(&srv->paused_mu);
  if (ok) return 1;
  /* No thread to wait on, and this one must not: end the session rather
   * than run the request out of order. */
  s->paused = NULL;
  pthread_mutex_lock(&s->pins->mu);
  s->sync_views->resume = 0;
  pthread_mutex_unlock(&s->pins->mu);
  atomic_fetch_sub(&s->refs, 1); /* the caller holds one: never the last */
  srv_log(SRV_LOG_ERROR, "session %llu: cannot start the resumer thread; ending it", (unsigned long long)s->id);
  if (s->call)
    srv_session_end(s, "out of server resources", GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server resources");
  else
    srv_session_release(s); /* its owner's srv_session_close_local says it ended */
  return 0;
}
