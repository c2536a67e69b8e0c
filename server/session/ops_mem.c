/*
 * server/session/ops_mem.c — the memory requests: Malloc (charged to the tenant,
 * zeroed), Free (the memory goes once nothing may touch it: srv_mem_t),
 * Write (gathered now, or held until its stream gathers it), Read (through
 * runtime staging, or shown where the device shows its memory:
 * zerocopy.h), both also straight between the device and a same-host
 * client's registered memory (regions.c), Copy, Memset, ValueWrite,
 * ValueWait, MemInfo.
 */
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "rdev/clock.h"
#include "session.h"

/* An async Write's payload, held until the device copied it: the request's
 * references to the received slices and the gather list over them, or,
 * below HOLD_COPY_BELOW, a copy of its own behind a one-piece list (a
 * reference keeps gRPC's whole read buffer, which inflight would not
 * count). The list points into this copy of the slices, never the
 * request's: a short slice keeps its bytes inline, in the grpc_slice. */
#define HOLD_COPY_BELOW ((size_t)64 << 10)
typedef struct {
  rdev_wire_payload_t data; /* no parts when copied */
  int niov;
  rdev_rt_iov_t iov[]; /* niov pieces; a copy's bytes follow them */
} held_write_t;

static held_write_t *held_write_new(rdev_wire_payload_t *p) {
  int copy = p->len < HOLD_COPY_BELOW, niov = copy ? 1 : p->nparts;
  held_write_t *h = malloc(sizeof *h + (size_t)niov * sizeof h->iov[0] + (copy ? p->len : 0));
  if (!h) return NULL;
  h->niov = niov;
  if (copy) {
    char *c = (char *)&h->iov[1];
    h->data.nparts = 0;
    h->iov[0] = (rdev_rt_iov_t){c, p->len};
    for (int i = 0; i < p->nparts; c += GRPC_SLICE_LENGTH(p->parts[i]), i++)
      memcpy(c, GRPC_SLICE_START_PTR(p->parts[i]), GRPC_SLICE_LENGTH(p->parts[i]));
    return h;
  }
  h->data = *p; /* the references move here */
  p->nparts = 0;
  for (int i = 0; i < niov; i++)
    h->iov[i] = (rdev_rt_iov_t){GRPC_SLICE_START_PTR(h->data.parts[i]), GRPC_SLICE_LENGTH(h->data.parts[i])};
  return h;
}

static void held_write_free(held_write_t *h) {
  rdev_wire_payload_release(&h->data);
  free(h);
}

static void write_done_cb(void *user, int status) {
  cb_ctx_t *c = user;
  (void)status;
  held_write_free(c->buf);
  srv_inflight_sub(c->s, c->len);
  srv_cb_done(c);
}

/* gRPC let go of a staged reply's slice. */
/* A synchronous copy or memset ran on this thread from t0 on, outside the
 * streams' slots: its device time goes to the tenant's metrics. */
static int charged(srv_req_t *x, uint64_t t0, int rc) {
  srv_metrics_busy(x->s->tenant->metrics, x->dev, 0, rdev_clock_now_ns() - t0);
  return rc;
}

static void staging_put(void *p) {
  RDEV_HANDOFF_TAKE(p);
  rdev_rt_staging_put(p);
}

/* A slice over the first n bytes of staging buffer p, which it takes. */
static grpc_slice staging_slice(void *p, size_t n) {
  RDEV_HANDOFF_GIVE(p); /* gRPC gives it back, maybe on another thread */
  return grpc_slice_new(p, n, staging_put);
}

/* Sends an async Read's data once the device copied it to staging. */
static void read_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    srv_send_read(c->s, c->seq, staging_slice(c->buf, c->len), c->bulk ? SRV_READ_BULK : 0);
  } else { /* discarded (an abort, or the session's end) */
    rdev_rt_staging_put(c->buf);
    srv_send_status(c->s, c->seq, 0, RDEV_RT_STREAM_ABORT, "the stream was aborted before this read");
  }
  srv_inflight_sub(c->s, c->len);
  srv_cb_done(c);
}

/* Sends an async shown Read's data once its stream reached it. */
static void read_shown_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK) {
    srv_send_read(c->s, c->seq, srv_zc_read_slice(c->buf), SRV_READ_SHOWN | (c->bulk ? SRV_READ_BULK : 0));
  } else {
    srv_zc_read_drop(c->buf);
    srv_send_status(c->s, c->seq, 0, RDEV_RT_STREAM_ABORT, "the stream was aborted before this read");
  }
  srv_cb_done(c);
}

static void defer_on_entry(srv_handle_t *e, void *arg) { srv_mem_defer_on(arg, e->ptr); }

static void region_put_cb(void *user, int status) {
  (void)status;
  srv_region_put(user);
}

/* n bytes between device memory dev and the client's host region at off
 * (to_host: D2H), now (st NULL) or on st, which holds the region until the
 * copy ran. Returns the status, SRV_LATER once queued (no answer: its
 * failure would come from the stream). */
static int region_copy(srv_req_t *x, uint32_t region, uint64_t off, char *dev, size_t n, int to_host,
                       rdev_rt_stream_t *st) {
  uint8_t *h;
  srv_region_t *r = srv_region_get(x->s, region, off, n, &h);
  if (!r)
    return srv_fail(x, RDEV_INVALID_PARAM, "host region %u does not hold %zu bytes at offset %llu", region, n,
                    (unsigned long long)off);
  rdev_rt_t *rt = x->s->srv->rt;
  void *dst = to_host ? (void *)h : dev;
  const void *src = to_host ? (const void *)dev : h;
  rdev_memcpy_kind_t kind = to_host ? RDEV_MEMCPY_DEVICE_TO_HOST : RDEV_MEMCPY_HOST_TO_DEVICE;
  if (!n) { /* checked, nothing to move */
    srv_region_put(r);
    return st ? SRV_LATER : RDEV_OK;
  }
  uint64_t t0 = rdev_clock_now_ns();
  int rc = st ? rdev_rt_memcpy_async(rt, dst, n, src, n, kind, st)
              : charged(x, t0, rdev_rt_memcpy(rt, dst, n, src, n, kind));
  if (rc || !st) {
    srv_region_put(r);
    return rc ? srv_rt_failed(x, rc) : RDEV_OK;
  }
  if (rdev_rt_launch_callback(st, region_put_cb, r) != RDEV_OK) {
    rdev_rt_stream_synchronize(st); /* cannot happen on a live stream: hold it until copied */
    srv_region_put(r);
  }
  return SRV_LATER;
}

/* Memory is charged to the tenant at the size the device really reserves,
 * and zeroed before the tenant can read it: nothing another tenant left in
 * it is ever visible. At the client's address when it placed it (the
 * device and the placement checked first: the client's mistakes, not a
 * failed allocation). */
static int malloc_at(srv_req_t *x, int dev) {
  const rdev_v1_Malloc *m = &x->q->op.malloc;
  srv_tenant_t *t = x->s->tenant;
  rdev_rt_t *rt = x->s->srv->rt;
  void *p = NULL;
  int rc;
  size_t size = (size_t)m->size, reserved = rdev_rt_mem_reserved_size(size);
  if (size && !reserved) return srv_fail(x, RDEV_RT_DEVICE_OOM, "size %zu overflows", size);
  if (reserved && srv_tenant_take(t, SRV_Q_MEMORY, dev, reserved, x->s->peer, x->r.message, sizeof x->r.message))
    return RDEV_QUOTA_EXCEEDED;
  rc = rdev_rt_malloc_in(x->s->space, dev, &p, size, (rdev_mem_policy_t)m->policy);
  if (rc) {
    if (reserved) srv_tenant_give(t, SRV_Q_MEMORY, dev, reserved);
    return srv_rt_failed(x, rc);
  }
  /* from here the record gives the memory and the quota back */
  srv_mem_t *mem = srv_mem_new(rt, p, size, t, dev, reserved);
  if (!mem) {
    if (reserved) srv_tenant_give(t, SRV_Q_MEMORY, dev, reserved);
    rdev_rt_free(rt, p);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if (m->addr) mem->wire = m->addr;
  rc = rdev_rt_memset(rt, p, size, 0, size);
  if (rc || srv_handles_put(&x->s->buffers, mem->wire, SRV_H_BUF, dev, p, size, mem) != 0) {
    rc = rc ? srv_rt_failed(x, rc) : srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
    srv_mem_unref(mem);
    return rc;
  }
  if (srv_vmap_insert(x->s, mem) != 0) {
    srv_handles_del(&x->s->buffers, mem->wire);
    srv_mem_unref(mem);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  x->r.addr = mem->wire;
  return RDEV_OK;
}

int srv_op_malloc(srv_req_t *x) {
  const rdev_v1_Malloc *m = &x->q->op.malloc;
  int dev, rc = srv_check_device(x, m->device, &dev);
  if (rc) return rc;
  if (m->addr) {
    if (m->addr % RDEV_RT_MEM_ALIGN || !rdev_wire_va_inside(m->addr, m->size, m->device))
      return srv_fail(x, RDEV_INVALID_PARAM, "malloc: %llu bytes at 0x%llx do not lie in device %d's window",
                      (unsigned long long)m->size, (unsigned long long)m->addr, (int)m->device);
    if (srv_vmap_overlaps(x->s, m->addr, m->size))
      return srv_fail(x, RDEV_INVALID_PARAM, "malloc: %llu bytes at 0x%llx overlap an allocation of this session",
                      (unsigned long long)m->size, (unsigned long long)m->addr);
  }
  rc = malloc_at(x, dev);
  if (rc == RDEV_OK) return m->quiet ? SRV_LATER : RDEV_OK;
  return m->quiet && m->addr ? srv_refuse_placement(x, m->addr, m->size) : rc;
}

void srv_release_buffer(srv_session_t *s, const srv_handle_t *e) {
  srv_handles_each(&s->handles, SRV_H_STREAM, defer_on_entry, e->ext);
  for (dead_stream_t *ds = s->dead; ds; ds = ds->next) srv_mem_defer_on(e->ext, ds->st);
  srv_mem_unref(e->ext);
}

static void check_room_entry(srv_handle_t *e, void *arg) { srv_check_room(arg, e->ptr); }

int srv_op_free(srv_req_t *x) {
  uint64_t a = x->q->op.free.addr;
  srv_handle_t *e = srv_handles_get(&x->s->buffers, a, SRV_H_BUF);
  if (!e && srv_placement_refused(x, "free", a, 1) == RDEV_OK) return x->q->op.free.quiet ? SRV_LATER : RDEV_OK;
  /* A client frees quietly only what it placed: one that names nothing
   * here was refused, its refusal since dropped from the ring. */
  if (!e && x->q->op.free.quiet && rdev_wire_va_inside(a, 1, -1)) return SRV_LATER;
  if (!e)
    return srv_fail(x, RDEV_INVALID_PARAM, "free: 0x%llx is not the start of an allocation of this session",
                    (unsigned long long)a);
  srv_vmap_remove(x->s, e->ext);
  srv_release_buffer(x->s, e);
  srv_handles_del(&x->s->buffers, a);
  /* it queued a callback on each busy stream: mind their depth */
  srv_handles_each(&x->s->handles, SRV_H_STREAM, check_room_entry, x->s);
  for (dead_stream_t *d = x->s->dead; d; d = d->next) srv_check_room(x->s, d->st);
  return x->q->op.free.quiet ? SRV_LATER : RDEV_OK;
}

/* Looks up the stream of an async request (0 = synchronous: *st = NULL). */
static int opt_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st) {
  *st = NULL;
  return h ? srv_get_stream(x, h, st) : RDEV_OK;
}

static void frame_done_cb(void *user, int status) {
  cb_ctx_t *c = user;
  (void)status;
  rdev_rt_staging_put(c->buf);
  srv_inflight_sub(c->s, c->len);
  srv_cb_done(c);
}

void srv_write_direct(srv_session_t *s, const rdev_v1_Request *q) {
  const rdev_v1_Write *w = &q->op.write;
  srv_req_t x = {.s = s, .q = q, .r = rdev_v1_Reply_init_zero};
  srv_handle_t *se = NULL;
  char *dst = NULL;
  int vacant = 1;
  size_t n = (size_t)w->count;
  void *view = NULL;
  if (n && n <= RDEV_WIRE_MAX_CHUNK && !srv_zc_showing(s->zc) && /* nothing of it may be shown */
      (!w->stream || (!srv_find_stream(&x, w->stream, &se) && srv_zc_views_quiet(se->ext) &&
                      !rdev_rt_stream_vacant(se->ptr, &vacant) && vacant)) &&
      !srv_check_count(&x, n, w->dest_max) && !srv_buf_range(&x, "write", w->addr, n, &dst, NULL))
    view = (void *)rdev_rt_host_view(s->srv->rt, dst, n); /* NULL where memory is not host-mapped */
  srv_bulk_expect(s, q->seq, view, n);                    /* NULL: staged, but the reader need not wait for it */
}

/* A bulk Write: its bytes came as a frame on the bulk connection (bulk.c),
 * a staging buffer taken here: copied now, or held until its stream
 * copies it; or straight into device memory (srv_write_direct): done. */
static int write_frame(srv_req_t *x, const rdev_v1_Write *w) {
  void *buf;
  size_t n;
  if (x->data->len) return srv_fail(x, RDEV_INVALID_PARAM, "a bulk write carries no data");
  if (!srv_bulk_take(x->s, x->q->seq, &buf, &n))
    return srv_fail(x, RDEV_UNAVAILABLE, "the bulk connection was lost before this write's data arrived");
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  int rc = n != w->count
               ? srv_fail(x, RDEV_PROTOCOL, "a bulk write of %llu bytes got %zu", (unsigned long long)w->count, n)
               : opt_stream(x, w->stream, &st);
  if (!rc) rc = srv_check_count(x, n, w->dest_max);
  if (!rc) rc = srv_buf_range(x, "write", w->addr, n, &dst, NULL);
  if (!buf) return rc ? rc : st || w->quiet ? SRV_LATER : RDEV_OK; /* in device memory already */
  rdev_rt_t *rt = x->s->srv->rt;
  uint64_t t0 = rdev_clock_now_ns();
  if (!rc && n && !st && (rc = charged(x, t0, rdev_rt_memcpy(rt, dst, n, buf, n, RDEV_MEMCPY_HOST_TO_DEVICE))))
    rc = srv_rt_failed(x, rc);
  if (rc || !n || !st) { /* done with it (a synchronous one is in device memory) */
    rdev_rt_staging_put(buf);
    return rc ? rc : st || w->quiet ? SRV_LATER : RDEV_OK;
  }
  cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, buf, n);
  if (!c) {
    rdev_rt_staging_put(buf);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if ((rc = rdev_rt_memcpy_async(rt, dst, n, buf, n, RDEV_MEMCPY_HOST_TO_DEVICE, st))) {
    srv_cb_done(c);
    rdev_rt_staging_put(buf);
    return srv_rt_failed(x, rc);
  }
  if (rdev_rt_launch_callback(st, frame_done_cb, c) != RDEV_OK) {
    rdev_rt_stream_synchronize(st); /* cannot happen on a live stream: hold it until copied */
    rdev_rt_staging_put(buf);
    srv_cb_done(c);
    return SRV_LATER;
  }
  srv_inflight_add(x->s, n);
  return SRV_LATER;
}

int srv_op_write(srv_req_t *x) {
  const rdev_v1_Write *w = &x->q->op.write;
  if (w->bulk) return write_frame(x, w);
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  size_t n = x->data->len;
  if (w->host_region && n) return srv_fail(x, RDEV_INVALID_PARAM, "a write from a host region carries no data");
  if (w->host_region) n = (size_t)w->count;
  int rc = opt_stream(x, w->stream, &st);
  if (rc || (rc = srv_check_count(x, n, w->dest_max)) || (rc = srv_buf_range(x, "write", w->addr, n, &dst, NULL)))
    return rc;
  if (w->host_region) {
    rc = region_copy(x, w->host_region, w->host_offset, dst, n, 0, st);
    return rc == RDEV_OK && w->quiet ? SRV_LATER : rc;
  }
  if (n == 0) return st || w->quiet ? SRV_LATER : RDEV_OK;
  rdev_wire_payload_t *p = x->data;
  if (!st) { /* synchronous: gathered now, so that later requests see it */
    rdev_rt_iov_t iov[RDEV_WIRE_MAX_PARTS];
    for (int i = 0; i < p->nparts; i++)
      iov[i] = (rdev_rt_iov_t){GRPC_SLICE_START_PTR(p->parts[i]), GRPC_SLICE_LENGTH(p->parts[i])};
    uint64_t t0 = rdev_clock_now_ns();
    if ((rc = charged(x, t0, rdev_rt_memcpy_gather(x->s->srv->rt, dst, n, iov, p->nparts))))
      return srv_rt_failed(x, rc);
    return w->quiet ? SRV_LATER : RDEV_OK; /* quiet: no news is good news */
  }
  /* async: the stream copies out of the held payload when its turn comes */
  held_write_t *h = held_write_new(p);
  cb_ctx_t *c = h ? srv_cb_new(x->s, x->q->seq, st, h, n) : NULL;
  if (!c) {
    if (h) held_write_free(h);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if ((rc = rdev_rt_memcpy_gather_async(x->s->srv->rt, dst, n, h->iov, h->niov, st))) {
    srv_cb_done(c);
    held_write_free(h);
    return srv_rt_failed(x, rc);
  }
  if (rdev_rt_launch_callback(st, write_done_cb, c) != RDEV_OK) {
    rdev_rt_stream_synchronize(st); /* cannot happen on a live stream: hold the slices until copied */
    held_write_free(h);
    srv_cb_done(c);
    return SRV_LATER;
  }
  srv_inflight_add(x->s, n);
  return SRV_LATER;
}

int srv_op_read(srv_req_t *x) {
  const rdev_v1_Read *rd = &x->q->op.read;
  rdev_rt_t *rt = x->s->srv->rt;
  srv_handle_t *se = NULL;
  char *src = NULL;
  srv_mem_t *mem = NULL;
  int rc = rd->stream ? srv_find_stream(x, rd->stream, &se) : RDEV_OK; /* no fence: reads go on */
  if (rc || (rc = srv_check_count(x, rd->count, rd->dest_max))) return rc;
  if (rd->host_region) {
    if ((rc = srv_buf_range(x, "read", rd->addr, rd->count, &src, NULL))) return rc;
    return region_copy(x, rd->host_region, rd->host_offset, src, (size_t)rd->count, 1, se ? se->ptr : NULL);
  }
  if (rd->count > RDEV_WIRE_MAX_CHUNK)
    return srv_fail(x, RDEV_INVALID_PARAM, "read of %llu bytes exceeds the %u-byte chunk limit",
                    (unsigned long long)rd->count, RDEV_WIRE_MAX_CHUNK);
  if ((rc = srv_buf_range(x, "read", rd->addr, rd->count, &src, &mem))) return rc;
  rdev_rt_stream_t *st = se ? se->ptr : NULL;
  size_t n = (size_t)rd->count;
  const void *view = rdev_rt_host_view(rt, src, n); /* NULL where memory is not host-mapped */
  if (view && !st && srv_zc_read(x->s->zc, mem, view, n, &x->payload) == 0) {
    x->has_payload = 1; /* later changes wait for it to leave: must_wait */
    x->payload_shown = 1;
    return RDEV_OK;
  }
  srv_zc_read_t *shown = NULL;
  if (view && st) {
    srv_views_t *v = se->ext; /* the stream's shown replies: made on its first */
    shown = srv_zc_read_async(x->s->zc, &v, mem, view, n);
    se->ext = v;
  }
  if (shown) {
    cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, shown, n);
    if (c) c->bulk = rd->bulk;
    if (!c || (rc = rdev_rt_launch_callback(st, read_shown_cb, c)) != RDEV_OK) {
      srv_zc_read_drop(shown);
      if (!c) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
      srv_cb_done(c);
      return srv_rt_failed(x, rc);
    }
    return SRV_LATER;
  }
  void *staging = rdev_rt_staging_get(rt, n);
  if (!staging) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  if (!st) {
    uint64_t t0 = rdev_clock_now_ns();
    rc = n ? charged(x, t0, rdev_rt_memcpy(rt, staging, n, src, n, RDEV_MEMCPY_DEVICE_TO_HOST)) : RDEV_OK;
    if (rc) {
      rdev_rt_staging_put(staging);
      return srv_rt_failed(x, rc);
    }
    x->payload = staging_slice(staging, n);
    x->has_payload = 1;
    return RDEV_OK;
  }
  cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, staging, n);
  if (c) c->bulk = rd->bulk;
  if (!c) {
    rdev_rt_staging_put(staging);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if (n && (rc = rdev_rt_memcpy_async(rt, staging, n, src, n, RDEV_MEMCPY_DEVICE_TO_HOST, st))) {
    srv_cb_done(c);
    rdev_rt_staging_put(staging);
    return srv_rt_failed(x, rc);
  }
  srv_inflight_add(x->s, n);
  rc = rdev_rt_launch_callback(st, read_cb, c);
  if (rc) {
    rdev_rt_stream_synchronize(st);
    read_cb(c, RDEV_CANCELLED);
    return srv_rt_failed(x, rc);
  }
  return SRV_LATER;
}

int srv_op_copy(srv_req_t *x) {
  const rdev_v1_Copy *cp = &x->q->op.copy;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL, *src = NULL;
  int rc = opt_stream(x, cp->stream, &st);
  if (rc || (rc = srv_check_count(x, cp->count, cp->dest_max)) ||
      (rc = srv_buf_range(x, "copy dst", cp->dst, cp->count, &dst, NULL)) ||
      (rc = srv_buf_range(x, "copy src", cp->src, cp->count, &src, NULL)))
    return rc;
  if (cp->count && (cp->dst | cp->src) % RDEV_RT_MEM_ALIGN)
    return srv_fail(x, RDEV_MEMORY_ADDRESS_UNALIGNED,
                    "copy: device-to-device copies need %d-byte-aligned addresses (dst 0x%llx, src 0x%llx)",
                    RDEV_RT_MEM_ALIGN, (unsigned long long)cp->dst, (unsigned long long)cp->src);
  size_t n = (size_t)cp->count;
  if (st) {
    rc = rdev_rt_memcpy_async(x->s->srv->rt, dst, n, src, n, RDEV_MEMCPY_DEVICE_TO_DEVICE, st);
  } else {
    uint64_t t0 = rdev_clock_now_ns();
    rc = charged(x, t0, rdev_rt_memcpy(x->s->srv->rt, dst, n, src, n, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  }
  if (rc) return srv_rt_failed(x, rc);
  return st ? SRV_LATER : RDEV_OK;
}

int srv_op_memset(srv_req_t *x) {
  const rdev_v1_Memset *m = &x->q->op.memset;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  int rc = opt_stream(x, m->stream, &st);
  if (rc || (rc = srv_check_count(x, m->count, m->dest_max)) ||
      (rc = srv_buf_range(x, "memset", m->addr, m->count, &dst, NULL)))
    return rc;
  size_t n = (size_t)m->count;
  if (st) {
    rc = rdev_rt_memset_async(x->s->srv->rt, dst, n, m->value, n, st); /* its time is charged where it runs */
  } else {
    uint64_t t0 = rdev_clock_now_ns();
    rc = charged(x, t0, rdev_rt_memset(x->s->srv->rt, dst, n, m->value, n));
  }
  if (rc) return srv_rt_failed(x, rc);
  return st || m->quiet ? SRV_LATER : RDEV_OK;
}

int srv_op_value_write(srv_req_t *x) {
  const rdev_v1_ValueWrite *v = &x->q->op.value_write;
  rdev_rt_stream_t *st;
  char *dst;
  int rc = srv_get_stream(x, v->stream, &st);
  if (rc || (rc = srv_buf_range(x, "value write", v->addr, sizeof(uint64_t), &dst, NULL))) return rc;
  if ((rc = rdev_rt_value_write(st, dst, v->value))) return srv_rt_failed(x, rc);
  return SRV_LATER;
}

int srv_op_value_wait(srv_req_t *x) {
  const rdev_v1_ValueWait *v = &x->q->op.value_wait;
  rdev_rt_stream_t *st;
  char *dst;
  int rc = srv_get_stream(x, v->stream, &st);
  if (rc || (rc = srv_buf_range(x, "value wait", v->addr, sizeof(uint64_t), &dst, NULL))) return rc;
  if ((rc = rdev_rt_value_wait(st, dst, v->value, (rdev_value_cond_t)v->cond, v->timeout_ms)))
    return srv_rt_failed(x, rc);
  return SRV_LATER;
}

int srv_op_mem_info(srv_req_t *x) {
  size_t f, t;
  int dev, rc = srv_check_device(x, x->q->op.mem_info.device, &dev);
  if (rc) return rc;
  rc = rdev_rt_mem_info(x->s->srv->rt, dev, &f, &t);
  if (rc) return srv_rt_failed(x, rc);
  x->r.value = f;
  x->r.value2 = t;
  return RDEV_OK;
}
