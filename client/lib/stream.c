/*
 * client/lib/stream.c — streams, events and kernel launches. Streams and
 * events are named by handles of the session's own choosing, so creating
 * and destroying them waits for no reply. A stream holds the sticky error
 * of its refused asynchronous requests, its create's included (and of late
 * answers to synchronizes that timed out) until its next synchronize
 * reports it; pending.c records and takes it. Synchronize timeouts are the
 * client's own. Owns the stream and event objects and s->obj (those still
 * open); calls submit.c, pending.c (sticky errors), addr.c (kernel pointer
 * arguments), info.c (the current device) and error.c.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"

struct rdev_stream {
  rdev_session_t *s;
  uint64_t handle;
  int device;
  cl_sticky_t sticky; /* pending.c's: registered while the stream is open */
  /* Requests that queued work on it (counted once sent), and how many of
   * them a synchronize saw done: when equal, destroying it need not wait
   * for its work. */
  atomic_uint_fast64_t queued, done;
  struct rdev_stream *prev, *next;
};

struct rdev_event {
  rdev_session_t *s;
  uint64_t handle;
  int device;
  struct rdev_event *prev, *next;
};

/* ---- remote objects: what streams and events share ----------------------------- */

uint64_t cl_handle_new(rdev_session_t *s) {
  return RDEV_WIRE_CLIENT_HANDLE | (atomic_fetch_add(&s->obj.next_handle, 1) + 1);
}

/* Asks the server for a stream or an event (tag: the create request) under
 * handle on the current device (*device), without waiting: the request is
 * quiet, a refusal comes back as an error reply (a stream's goes sticky on
 * it, an event's on the session). */
static int remote_create(rdev_session_t *s, pb_size_t tag, uint64_t handle, int dev, int *device) {
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = tag;
  *device = dev;
  if (tag == rdev_v1_Request_stream_create_tag)
    req.op.stream_create = (rdev_v1_StreamCreate){.device = *device, .handle = handle, .quiet = true};
  else
    req.op.event_create = (rdev_v1_EventCreate){.device = *device, .handle = handle, .quiet = true};
  return cl_send_async(s, &req);
}

/* Asks the server to destroy a stream or an event (tag: the destroy
 * request): quiet, without waiting (a refusal goes sticky on the session),
 * else waiting for the answer. */
static int remote_destroy(rdev_session_t *s, pb_size_t tag, uint64_t handle, bool quiet) {
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = tag;
  if (tag == rdev_v1_Request_stream_destroy_tag)
    req.op.stream_destroy = (rdev_v1_StreamDestroy){.stream = handle, .quiet = quiet};
  else
    req.op.event_destroy = (rdev_v1_EventDestroy){.event = handle, .quiet = quiet};
  return quiet ? cl_send_async(s, &req) : cl_call(s, &req, NULL);
}

/* What a request that queued work on stream (sent, or failed on the way:
 * counted either way) counts; what a synchronize that was answered saw
 * done: every request counted before it was sent, so sent before it. */
static void work_queued(rdev_stream_t *st) { atomic_fetch_add(&st->queued, 1); }
static void work_done(rdev_stream_t *st, uint_fast64_t seen) {
  uint_fast64_t d = atomic_load(&st->done);
  while (d < seen && !atomic_compare_exchange_weak(&st->done, &d, seen)) {}
}

/* ---- streams ------------------------------------------------------------------ */

int cl_stream_create(rdev_session_t *s, rdev_stream_t **stream) {
  return s ? cl_stream_create_on(s, cl_device_current(s), stream) : cl_error(RDEV_INVALID_PARAM, "session is NULL");
}

int cl_stream_create_on(rdev_session_t *s, int dev, rdev_stream_t **stream) {
  if (!s || !stream) return cl_error(RDEV_INVALID_PARAM, "session or stream is NULL");
  *stream = NULL;
  rdev_stream_t *st = calloc(1, sizeof *st);
  if (!st) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  st->s = s;
  st->handle = cl_handle_new(s);
  /* collecting its errors before the create can be refused */
  pthread_mutex_lock(&s->mu);
  cl_sticky_register_locked(s, &st->sticky, st->handle);
  pthread_mutex_unlock(&s->mu);
  int rc = remote_create(s, rdev_v1_Request_stream_create_tag, st->handle, dev, &st->device);
  pthread_mutex_lock(&s->mu);
  if (rc) {
    cl_sticky_unregister_locked(s, &st->sticky);
  } else {
    st->next = s->obj.streams;
    if (s->obj.streams) s->obj.streams->prev = st;
    s->obj.streams = st;
  }
  pthread_mutex_unlock(&s->mu);
  if (rc) {
    free(st);
    return rc;
  }
  *stream = st;
  return RDEV_OK;
}

int rdev_stream_destroy(rdev_stream_t *stream) {
  if (!stream) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  rdev_session_t *s = stream->s;
  /* Work queued since the last synchronize: the destroy waits for it (its
   * first error is the answer), as aclrtDestroyStream does. */
  bool idle = atomic_load(&stream->done) == atomic_load(&stream->queued);
  int rc = remote_destroy(s, rdev_v1_Request_stream_destroy_tag, stream->handle, idle);
  /* An error no synchronize reported comes first (a refused create's) */
  char msg[CL_MSG_MAX];
  int sticky = cl_sticky_take(s, stream->handle, msg);
  if (sticky) rc = cl_error_msg(sticky, msg);
  pthread_mutex_lock(&s->mu);
  if (stream->prev)
    stream->prev->next = stream->next;
  else
    s->obj.streams = stream->next;
  if (stream->next) stream->next->prev = stream->prev;
  cl_sticky_unregister_locked(s, &stream->sticky);
  pthread_mutex_unlock(&s->mu);
  free(stream);
  return rc;
}

/* A synchronize; with the session's own errors (requests without a
 * stream refused since the last synchronize) after the stream's, or not. */
static int sync(rdev_stream_t *stream, int32_t timeout_ms, bool session_errors) {
  if (!stream) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_stream_sync_tag;
  req.op.stream_sync.stream = stream->handle;
  uint_fast64_t seen = atomic_load(&stream->queued);
  bool answered = false;
  int rc = cl_call_stream_sync(stream->s, &req, timeout_ms, session_errors, &answered);
  if (answered) work_done(stream, seen);
  return rc;
}

int rdev_stream_synchronize_timeout(rdev_stream_t *stream, int32_t timeout_ms) {
  return sync(stream, timeout_ms, true);
}

int cl_stream_sync_own(rdev_stream_t *stream) { return sync(stream, -1, false); }

int rdev_stream_synchronize(rdev_stream_t *stream) { return rdev_stream_synchronize_timeout(stream, -1); }

int rdev_stream_abort(rdev_stream_t *stream) {
  if (!stream) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_stream_abort_tag;
  req.op.stream_abort.stream = stream->handle;
  return cl_call(stream->s, &req, NULL);
}

int rdev_stream_set_failure_mode(rdev_stream_t *stream, int stop) {
  if (!stream) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_stream_failure_mode_tag;
  req.op.stream_failure_mode.stream = stream->handle;
  req.op.stream_failure_mode.stop = stop != 0;
  return cl_call(stream->s, &req, NULL);
}

int rdev_stream_query(rdev_stream_t *stream, int *done) {
  if (!stream || !done) return cl_error(RDEV_INVALID_PARAM, "stream or done is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_stream_query_tag;
  req.op.stream_query.stream = stream->handle;
  cl_result_t res;
  int rc = cl_call(stream->s, &req, &res);
  if (!rc) *done = res.value == 1;
  return rc;
}

/* ---- kernels ------------------------------------------------------------------ */

int rdev_launch(rdev_stream_t *stream, const char *name, uint32_t blocks, const rdev_arg_t *args, int nargs) {
  if (!stream || !name) return cl_error(RDEV_INVALID_PARAM, "stream or name is NULL");
  if (nargs < 0 || nargs > RDEV_MAX_KERNEL_ARGS || (nargs > 0 && !args))
    return cl_error(RDEV_INVALID_PARAM, "bad argument list (%d arguments)", nargs);
  rdev_session_t *s = stream->s;
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_launch_tag;
  rdev_v1_Launch *l = &req.op.launch;
  if (strlen(name) > RDEV_WIRE_MAX_KERNEL_NAME) return cl_error(RDEV_INVALID_PARAM, "kernel name too long");
  rdev_v1_Arg wargs[RDEV_MAX_KERNEL_ARGS];
  rdev_wire_launch_src_t src = {name, wargs, nargs};
  rdev_wire_launch_encoder(l, &src);
  l->stream = stream->handle;
  l->blocks = blocks;
  for (int i = 0; i < nargs; i++) {
    rdev_v1_Arg *a = &wargs[i];
    *a = (rdev_v1_Arg)rdev_v1_Arg_init_zero;
    switch (args[i].type) {
      case RDEV_ARG_PTR: /* checked here, and by the server against what the session really holds */
        if (!args[i].v.ptr) return cl_error(RDEV_INVALID_PARAM, "argument %d: device pointer is NULL", i);
        if (!cl_addr_known(s, args[i].v.ptr, 1, NULL))
          return cl_error(RDEV_INVALID_PARAM, "%s: argument %d (%p) is not inside an allocation of this session", name,
                          i, args[i].v.ptr);
        a->which_v = rdev_v1_Arg_ptr_tag;
        a->v.ptr = (uint64_t)(uintptr_t)args[i].v.ptr;
        break;
      case RDEV_ARG_I32:
        a->which_v = rdev_v1_Arg_i32_tag;
        a->v.i32 = args[i].v.i32;
        break;
      case RDEV_ARG_U32:
        a->which_v = rdev_v1_Arg_u32_tag;
        a->v.u32 = args[i].v.u32;
        break;
      case RDEV_ARG_I64:
        a->which_v = rdev_v1_Arg_i64_tag;
        a->v.i64 = args[i].v.i64;
        break;
      case RDEV_ARG_U64:
        a->which_v = rdev_v1_Arg_u64_tag;
        a->v.u64 = args[i].v.u64;
        break;
      case RDEV_ARG_F32:
        a->which_v = rdev_v1_Arg_f32_tag;
        a->v.f32 = args[i].v.f32;
        break;
      case RDEV_ARG_F64:
        a->which_v = rdev_v1_Arg_f64_tag;
        a->v.f64 = args[i].v.f64;
        break;
      default: return cl_error(RDEV_INVALID_PARAM, "argument %d: unknown type %d", i, (int)args[i].type);
    }
  }
  return cl_stream_sent(stream, cl_send_async(s, &req));
}

/* ---- events ------------------------------------------------------------------- */

int cl_event_create(rdev_session_t *s, rdev_event_t **ev) {
  if (!s || !ev) return cl_error(RDEV_INVALID_PARAM, "session or ev is NULL");
  *ev = NULL;
  rdev_event_t *e = calloc(1, sizeof *e);
  if (!e) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  e->handle = cl_handle_new(s);
  int rc = remote_create(s, rdev_v1_Request_event_create_tag, e->handle, cl_device_current(s), &e->device);
  if (rc) {
    free(e);
    return rc;
  }
  e->s = s;
  pthread_mutex_lock(&s->mu);
  e->next = s->obj.events;
  if (s->obj.events) s->obj.events->prev = e;
  s->obj.events = e;
  pthread_mutex_unlock(&s->mu);
  *ev = e;
  return RDEV_OK;
}

int rdev_event_destroy(rdev_event_t *ev) {
  if (!ev) return cl_error(RDEV_INVALID_PARAM, "ev is NULL");
  rdev_session_t *s = ev->s;
  int rc = remote_destroy(s, rdev_v1_Request_event_destroy_tag, ev->handle, true);
  pthread_mutex_lock(&s->mu);
  if (ev->prev)
    ev->prev->next = ev->next;
  else
    s->obj.events = ev->next;
  if (ev->next) ev->next->prev = ev->prev;
  pthread_mutex_unlock(&s->mu);
  free(ev);
  return rc;
}

/* Whether a and b are members of one session over several servers. */
static bool same_head(const rdev_session_t *a, const rdev_session_t *b) { return a->head && a->head == b->head; }

/* An event and a stream (or two events) on different servers of one
 * session, where the server would have to see the other's: refused. */
static int across(const char *what, const rdev_session_t *a, const rdev_session_t *b) {
  return cl_error(RDEV_API_NOT_SUPPORT, "%s: rdevd at %s and rdevd at %s share no device clock or queue", what,
                  a->target, b->target);
}

int rdev_event_record(rdev_event_t *ev, rdev_stream_t *stream) {
  if (!ev || !stream) return cl_error(RDEV_INVALID_PARAM, "ev or stream is NULL");
  if (ev->s != stream->s && same_head(ev->s, stream->s))
    return across("an event recorded on another server's stream", ev->s, stream->s);
  if (ev->s != stream->s) return cl_error(RDEV_INVALID_PARAM, "event and stream of different sessions");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_event_record_tag;
  req.op.event_record.event = ev->handle;
  req.op.event_record.stream = stream->handle;
  return cl_stream_sent(stream, cl_send_async(stream->s, &req));
}

int rdev_stream_wait_event(rdev_stream_t *stream, rdev_event_t *ev) {
  if (!ev || !stream) return cl_error(RDEV_INVALID_PARAM, "ev or stream is NULL");
  /* On another server: that server cannot wait for it, so the caller
   * does, here, before anything later is queued on the stream. */
  if (ev->s != stream->s && same_head(ev->s, stream->s)) return rdev_event_synchronize(ev, -1);
  if (ev->s != stream->s) return cl_error(RDEV_INVALID_PARAM, "event and stream of different sessions");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_stream_wait_event_tag;
  req.op.stream_wait_event.stream = stream->handle;
  req.op.stream_wait_event.event = ev->handle;
  return cl_stream_sent(stream, cl_send_async(stream->s, &req));
}

int rdev_event_synchronize(rdev_event_t *ev, int32_t timeout_ms) {
  if (!ev) return cl_error(RDEV_INVALID_PARAM, "ev is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_event_sync_tag;
  req.op.event_sync.event = ev->handle;
  return cl_call_timeout(ev->s, &req, timeout_ms, RDEV_RT_WAIT_TIMEOUT, NULL);
}

int rdev_event_query(rdev_event_t *ev, int *done) {
  if (!ev || !done) return cl_error(RDEV_INVALID_PARAM, "ev or done is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_event_query_tag;
  req.op.event_query.event = ev->handle;
  cl_result_t res;
  int rc = cl_call(ev->s, &req, &res);
  if (!rc) *done = res.value == 1;
  return rc;
}

int rdev_event_timestamp(rdev_event_t *ev, uint64_t *ns) {
  if (!ev || !ns) return cl_error(RDEV_INVALID_PARAM, "ev or ns is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_event_query_tag;
  req.op.event_query.event = ev->handle;
  cl_result_t res;
  int rc = cl_call(ev->s, &req, &res);
  if (rc) return rc;
  if (res.value != 1 || !res.value2)
    return cl_error(RDEV_INVALID_PARAM, "the event is not recorded or not yet complete");
  *ns = res.value2;
  return RDEV_OK;
}

int rdev_event_elapsed_ms(float *ms, rdev_event_t *start, rdev_event_t *end) {
  if (!ms || !start || !end) return cl_error(RDEV_INVALID_PARAM, "ms, start or end is NULL");
  if (start->s != end->s && same_head(start->s, end->s))
    return across("time between events of different servers", start->s, end->s);
  if (start->s != end->s) return cl_error(RDEV_INVALID_PARAM, "events of different sessions");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_event_elapsed_tag;
  req.op.event_elapsed.start = start->handle;
  req.op.event_elapsed.end = end->handle;
  cl_result_t res;
  int rc = cl_call(start->s, &req, &res);
  if (!rc) *ms = res.elapsed_ms;
  return rc;
}

/* ---- for the library's other files ----------------------------------------------- */

rdev_session_t *cl_stream_session(rdev_stream_t *stream) { return stream ? stream->s : NULL; }

int cl_stream_handle(rdev_session_t *s, rdev_stream_t *stream, uint64_t *handle) {
  if (!stream) return cl_error(RDEV_INVALID_PARAM, "stream is NULL");
  if (stream->s != s) return cl_error(RDEV_INVALID_PARAM, "stream belongs to another session");
  *handle = stream->handle;
  return RDEV_OK;
}

int cl_stream_sent(rdev_stream_t *stream, int rc) {
  work_queued(stream);
  return rc;
}

void cl_free_streams_events(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  while (s->obj.streams) {
    rdev_stream_t *st = s->obj.streams;
    s->obj.streams = st->next;
    cl_sticky_unregister_locked(s, &st->sticky);
    free(st);
  }
  while (s->obj.events) {
    rdev_event_t *e = s->obj.events;
    s->obj.events = e->next;
    free(e);
  }
  pthread_mutex_unlock(&s->mu);
}
