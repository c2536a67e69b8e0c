/*
 * server/session/dispatch.c — running a session's messages: the op table, each
 * request of a message's batch run as it is decoded, then its own
 * (rdev_wire_walk), within the batch's limits, and a message paused
 * before a request that must wait for shown Read replies to leave
 * (zerocopy.h), which the resumer thread goes on with.
 */
#include <stdlib.h>

#include "metrics/metrics.h"
#include "session.h"

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
    case rdev_v1_Request_host_func_tag: return srv_op_host_func;
    case rdev_v1_Request_value_write_tag: return srv_op_value_write;
    case rdev_v1_Request_value_wait_tag: return srv_op_value_wait;
    case rdev_v1_Request_stream_failure_mode_tag: return srv_op_stream_failure_mode;
    case rdev_v1_Request_stream_abort_tag: return srv_op_stream_abort;
    case rdev_v1_Request_binary_load_tag: return srv_op_binary_load;
    case rdev_v1_Request_binary_unload_tag: return srv_op_binary_unload;
    case rdev_v1_Request_binary_function_tag: return srv_op_binary_function;
    case rdev_v1_Request_launch_function_tag: return srv_op_launch_function;
    case rdev_v1_Request_op_run_tag: return srv_op_op_run;
  }
  return NULL;
}

/* The stream an error reply names: an asynchronous request's, or the one a
 * StreamCreate makes (0: none). */
static uint64_t request_stream(const rdev_v1_Request *q) {
  switch (q->which_op) {
    case rdev_v1_Request_write_tag: return q->op.write.stream;
    case rdev_v1_Request_read_tag: return q->op.read.stream;
    case rdev_v1_Request_copy_tag: return q->op.copy.stream;
    case rdev_v1_Request_memset_tag: return q->op.memset.stream;
    case rdev_v1_Request_launch_tag: return q->op.launch.stream;
    case rdev_v1_Request_event_record_tag: return q->op.event_record.stream;
    case rdev_v1_Request_stream_wait_event_tag: return q->op.stream_wait_event.stream;
    case rdev_v1_Request_host_func_tag: return q->op.host_func.stream;
    case rdev_v1_Request_value_write_tag: return q->op.value_write.stream;
    case rdev_v1_Request_value_wait_tag: return q->op.value_wait.stream;
    case rdev_v1_Request_launch_function_tag: return q->op.launch_function.stream;
    case rdev_v1_Request_op_run_tag: return q->op.op_run.stream;
    case rdev_v1_Request_stream_create_tag: return q->op.stream_create.handle;
  }
  return 0;
}

/* Whether the buffer of s holding device address addr is shown by a
 * synchronous Read reply gRPC still holds. req_mu held. */
static int buffer_shown(srv_session_t *s, uint64_t addr) {
  if (!srv_zc_showing(s->zc)) return 0;
  srv_handle_t *e = srv_buffer_at(s, addr);
  return e && srv_zc_shown(s->zc, e->ext);
}

/* Whether r must wait before it runs: it may change the memory of a buffer
 * (now, or on a stream that may run it at once) that a synchronous Read
 * reply gRPC still holds shows. Run now, it could change what that reply
 * shows: a session's requests run as if each waited for the one before.
 * req_mu held. */
static int must_wait(srv_session_t *s, const rdev_wire_request_t *r) {
  const rdev_v1_Request *q = &r->q;
  int wait = 0;
  switch (q->which_op) {
    case rdev_v1_Request_write_tag: wait = buffer_shown(s, q->op.write.addr); break;
    case rdev_v1_Request_memset_tag: wait = buffer_shown(s, q->op.memset.addr); break;
    case rdev_v1_Request_copy_tag: wait = buffer_shown(s, q->op.copy.dst); break;
    case rdev_v1_Request_value_write_tag: wait = buffer_shown(s, q->op.value_write.addr); break;
    case rdev_v1_Request_launch_function_tag: /* its pointers are in a blob */
    case rdev_v1_Request_op_run_tag: wait = srv_zc_showing(s->zc); break;
    case rdev_v1_Request_launch_tag: /* any buffer it is given */
      for (int i = 0; i < r->nargs && i < RDEV_WIRE_MAX_ARGS && !wait; i++)
        wait = r->args[i].which_v == rdev_v1_Arg_ptr_tag && buffer_shown(s, r->args[i].v.ptr);
      break;
    default: break;
  }
  return wait;
}

/* The Read and Write bytes r moves (a Read over the chunk limit is refused
 * by its handler and moves nothing). */
static size_t request_xfer(const rdev_wire_request_t *r) {
  if (r->q.which_op == rdev_v1_Request_write_tag) return r->data.len; /* a bulk one's bytes are not in it */
  if (r->q.which_op == rdev_v1_Request_read_tag && !r->q.op.read.host_region &&
      r->q.op.read.count <= RDEV_WIRE_MAX_CHUNK)
    return (size_t)r->q.op.read.count;
  return 0;
}

/* Counts r, answered (rc: its handler's, ran, or a refusal before it),
 * for the metrics: its kind (malformed: unreadable, or no known
 * operation), and the bytes a Write, Read or Copy the server took moves,
 * on the device of the buffer it named (x->dev). */
static void count_request(srv_session_t *s, const rdev_wire_request_t *r, const srv_req_t *x, int rc, int ran,
                          int malformed) {
  srv_mtenant_t *m = s->tenant->metrics;
  const rdev_v1_Request *q = &r->q;
  srv_metrics_request(m, malformed ? SRV_M_K_malformed : srv_metrics_kind(q->which_op));
  if (!ran || (rc != RDEV_OK && rc != SRV_LATER)) return;
  switch (q->which_op) {
    case rdev_v1_Request_write_tag:
      srv_metrics_bytes(m, x->dev, SRV_M_H2D,
                        q->op.write.bulk || q->op.write.host_region ? q->op.write.count : r->data.len);
      break;
    case rdev_v1_Request_read_tag: srv_metrics_bytes(m, x->dev, SRV_M_D2H, q->op.read.count); break;
    case rdev_v1_Request_copy_tag: srv_metrics_bytes(m, x->dev, SRV_M_D2D, q->op.copy.count); break;
    default: break;
  }
}

/* Runs one request of a message (index: in its batch, -1 for its own;
 * err: why it is malformed, or NULL) and answers it. Returns RDEV_WIRE_STOP,
 * having done nothing, when it must wait (must_wait); RDEV_WIRE_CUT when
 * it was one past the batch limit, which ends the batch (so that one
 * message cannot make more than RDEV_WIRE_MAX_BATCH + 2 replies). */
static int run_request(srv_session_t *s, rdev_wire_request_t *r, int index, const char *err, batch_t *b) {
  const rdev_v1_Request *q = &r->q;
  /* A bulk Write runs once its bytes are in (or cannot come), whatever
   * else it meets: so that its frame is taken or dropped below. */
  int bulk_write = !err && q->which_op == rdev_v1_Request_write_tag && q->op.write.bulk;
  if (bulk_write && srv_bulk_frame(s, q->seq, q->op.write.bulk_conn) == 0) {
    /* ...received into device memory, where the Write will run as it is */
    pthread_mutex_lock(&s->req_mu);
    if (!s->released && !r->data.len && !r->data.oversize && (index < 0 || b->count < RDEV_WIRE_MAX_BATCH))
      srv_write_direct(s, q);
    pthread_mutex_unlock(&s->req_mu);
    b->wait_frame = q->seq;
    b->wait_conn = q->op.write.bulk_conn;
    return RDEV_WIRE_STOP;
  }
  srv_req_t x = {.s = s, .q = q, .w = r, .data = &r->data, .r = rdev_v1_Reply_init_zero, .dev = -1};
  size_t xfer = request_xfer(r);
  int rc, wait = 0, cut = 0, ran = 0;
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
      ran = 1;
      if (x.used) srv_check_room(s, x.used);
    }
    pthread_mutex_unlock(&s->req_mu);
    if (wait) b->count -= index >= 0, b->xfer -= xfer; /* counted again when it runs */
  }
  if (!wait && (ran || rc != SRV_LATER)) count_request(s, r, &x, rc, ran, err != NULL); /* not: the session ended */
  if (rc != SRV_LATER) {
    x.r.seq = q->seq;
    x.r.status = rc;
    if (rc != RDEV_OK) {
      x.r.stream = x.stream;
      srv_log(SRV_LOG_DEBUG, "session %llu seq %llu: %s (%d): %s", (unsigned long long)s->id,
              (unsigned long long)q->seq, rdev_status_name(rc), rc, x.r.message);
    }
    if (rc == RDEV_OK && x.has_payload && q->which_op == rdev_v1_Request_read_tag && q->op.read.bulk) {
      srv_send_read(s, q->seq, x.payload, SRV_READ_BULK | (x.payload_shown ? SRV_READ_SHOWN : 0)); /* takes it */
      x.has_payload = 0;
    } else {
      srv_send_reply(s, &x.r, x.has_payload ? &x.payload : NULL);
    }
  }
  if (x.has_payload) grpc_slice_unref(x.payload);
  if (bulk_write && !wait) srv_bulk_drop(s, q->seq); /* refused before its handler took it */
  return wait ? RDEV_WIRE_STOP : cut ? RDEV_WIRE_CUT : 0;
}

static int visit_request(void *arg, rdev_wire_request_t *r, int index, const char *err) {
  batch_t *b = arg;
  return run_request(b->s, r, index, err, b);
}

static int walk_message(srv_session_t *s, grpc_byte_buffer *bb, batch_t *b);

/* On the resumer thread: the rest of s's paused message, then the next
 * receive (unless it paused again). */
static void resume_message(void *arg) {
  srv_session_t *s = arg;
  grpc_byte_buffer *bb = s->paused;
  batch_t b = s->paused_at;
  s->paused = NULL;
  if (!walk_message(s, bb, &b)) {
    grpc_byte_buffer_destroy(bb);
    pthread_mutex_lock(&s->mu);
    srv_post_next_recv(s);
    pthread_mutex_unlock(&s->mu);
  }
  srv_session_unref(s); /* the pause's */
}

/* The session stops handling requests, and receiving, until gRPC let go
 * of its synchronous Read replies: then the resumer goes on with bb past
 * what b handled. Returns 1; 0 when the session is ending (nothing more
 * to answer). */
/* Parks bb, to go on past what b handled, with the pause's reference:
 * 1; 0 when the session is ending (nothing parked). */
static int park_message(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b) {
  pthread_mutex_lock(&s->req_mu);
  int ok = !s->released;
  if (ok) {
    s->paused = bb;
    s->paused_at = *b;
    s->paused_at.walk.skip = b->walk.seen;
  }
  pthread_mutex_unlock(&s->req_mu);
  if (ok) srv_session_ref(s);
  return ok;
}

/* Takes back what park_message parked (no pause happened). */
static void unpark_message(srv_session_t *s) {
  s->paused = NULL;
  atomic_fetch_sub(&s->refs, 1); /* the caller holds one: never the last */
}

static int pause_message(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b) {
  if (!park_message(s, bb, b)) return 0;
  if (srv_zc_pause(s->zc, resume_message, s) == 0) return 1;
  /* No thread to wait on, and this one must not: end the session rather
   * than run the request out of order. */
  unpark_message(s);
  srv_log(SRV_LOG_ERROR, "session %llu: cannot start the resumer thread; ending it", (unsigned long long)s->id);
  if (s->call)
    srv_session_end(s, "out of server resources", GRPC_STATUS_RESOURCE_EXHAUSTED, "out of server resources");
  else
    srv_session_release(s); /* its owner's srv_session_close_local says it ended */
  return 0;
}

/* The message waits for bulk Write b->wait_frame's bytes: 1 when it
 * paused (resumed once they are in); 2 when they are in already or cannot
 * come (walk on); 0 when the session is ending. */
static int pause_for_frame(srv_session_t *s, grpc_byte_buffer *bb, const batch_t *b) {
  if (!park_message(s, bb, b)) return 0;
  if (srv_bulk_pause(s, b->wait_frame, b->wait_conn, resume_message, s) == 0) return 1;
  unpark_message(s);
  return 2;
}

/* The message's requests from b->walk.skip on; 1 when it paused. */
static int walk_message(srv_session_t *s, grpc_byte_buffer *bb, batch_t *b) {
  for (;;) {
    b->wait_frame = 0;
    rdev_rt_batch_begin(); /* the message's tasks start together: one wake per stream */
    rdev_wire_walk(bb, RDEV_WIRE_MAX_CHUNK, &b->walk, visit_request, b);
    rdev_rt_batch_end();
    if ((b->walk.acked || b->walk.bye) && s->resumable) { /* the replies the client has: no longer kept */
      pthread_mutex_lock(&s->mu);
      srv_acked_locked(s, b->walk.acked);
      s->bye |= b->walk.bye;
      pthread_mutex_unlock(&s->mu);
    }
    if (!b->walk.stopped) return 0;
    if (!b->wait_frame) return pause_message(s, bb, b);
    int r = pause_for_frame(s, bb, b);
    if (r != 2) return r;
    b->walk.skip = b->walk.seen; /* its frame came meanwhile: go on from it */
  }
}

int srv_handle_message(srv_session_t *s, grpc_byte_buffer *bb) {
  batch_t b = {.s = s};
  return walk_message(s, bb, &b);
}
