/*
 * server/ops_mem.c — the memory requests: Malloc (charged to the tenant,
 * zeroed), Free (the memory goes once nothing may touch it: mem_t), Write
 * (sync, or held until its stream copies it), Read (zero-copy where the
 * device shows its memory, else through staging), Copy, Memset, MemInfo.
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

mem_t *srv_mem_ref(mem_t *m) {
  atomic_fetch_add(&m->refs, 1);
  return m;
}

void srv_mem_unref(mem_t *m) {
  if (atomic_fetch_sub(&m->refs, 1) != 1) return;
  rdev_rt_free(m->rt, m->ptr);
  srv_tenant_give(m->tenant, SRV_Q_MEMORY, m->dev, m->reserved);
  free(m);
}

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

/* Sends an async Read's data once the device copied it to staging. */
static void read_cb(void *user, int status) {
  cb_ctx_t *c = user;
  if (status == RDEV_OK)
    srv_send_data(c->s, c->seq, srv_buf_slice(c->buf, c->len));
  else
    srv_buf_put(c->buf);
  srv_inflight_sub(c->s, c->len);
  srv_cb_done(c);
}

static void mem_unref_cb(void *user, int status) {
  (void)status;
  srv_mem_unref(user);
}

/* A buffer freed now must outlast the work queued on st so far. */
static void defer_on(mem_t *m, rdev_rt_stream_t *st) {
  int done = 1;
  if (rdev_rt_stream_query(st, &done) == RDEV_OK && !done) {
    srv_mem_ref(m);
    if (rdev_rt_launch_callback(st, mem_unref_cb, m) != RDEV_OK) srv_mem_unref(m);
  }
}

static void defer_on_entry(srv_handle_t *e, void *arg) { defer_on(arg, e->ptr); }

/* Memory is charged to the tenant at the size the device really reserves,
 * and zeroed before the tenant can read it: nothing another tenant left in
 * it is ever visible. */
int srv_op_malloc(srv_req_t *x) {
  const rdev_v1_Malloc *m = &x->q->op.malloc;
  srv_tenant_t *t = x->s->tenant;
  void *p = NULL;
  int dev, rc = srv_check_device(x, m->device, &dev);
  if (rc) return rc;
  size_t size = (size_t)m->size, reserved = rdev_rt_mem_reserved_size(size);
  if (size && !reserved) return srv_fail(x, RDEV_RT_DEVICE_OOM, "size %zu overflows", size);
  mem_t *mem = malloc(sizeof *mem);
  if (!mem) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  if (reserved && srv_tenant_take(t, SRV_Q_MEMORY, dev, reserved, x->s->peer, x->r.message, sizeof x->r.message)) {
    free(mem);
    return RDEV_QUOTA_EXCEEDED;
  }
  rc = rdev_rt_malloc(x->s->srv->rt, dev, &p, size, (rdev_mem_policy_t)m->policy);
  if (!rc) rc = rdev_rt_memset(x->s->srv->rt, p, size, 0, size);
  uint64_t h = rc ? 0 : srv_handles_add(&x->s->handles, SRV_H_BUF, dev, p, size);
  if (!h) {
    rc = rc ? srv_rt_failed(x, rc) : srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
    if (reserved) srv_tenant_give(t, SRV_Q_MEMORY, dev, reserved);
    if (p) rdev_rt_free(x->s->srv->rt, p);
    free(mem);
    return rc;
  }
  mem->rt = x->s->srv->rt;
  mem->ptr = p;
  mem->tenant = t;
  mem->dev = dev;
  mem->reserved = reserved;
  atomic_init(&mem->refs, 1); /* the handle entry's */
  mem->shown = 0;
  srv_handles_get(&x->s->handles, h, SRV_H_BUF)->mem = mem;
  x->r.handle = h;
  return RDEV_OK;
}

/* Gives buffer entry e back: its memory goes once every stream of the
 * session has passed the work queued so far and no zero-copy reply shows
 * it any more (mem_t). req_mu held or the session released. */
void srv_release_buffer(srv_session_t *s, const srv_handle_t *e) {
  srv_handles_each(&s->handles, SRV_H_STREAM, defer_on_entry, e->mem);
  for (dead_stream_t *ds = s->dead; ds; ds = ds->next) defer_on(e->mem, ds->st);
  srv_mem_unref(e->mem);
}

static void check_room_entry(srv_handle_t *e, void *arg) { srv_check_room(arg, e->ptr); }

/* aclrtFree returns at once; the memory goes back later (release_buffer). */
int srv_op_free(srv_req_t *x) {
  uint64_t h = x->q->op.free.buf;
  srv_handle_t *e = srv_get_handle(x, h, SRV_H_BUF);
  if (!e)
    return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "0x%llx is not a buffer of this session", (unsigned long long)h);
  srv_release_buffer(x->s, e);
  srv_handles_del(&x->s->handles, h);
  /* it queued a callback on each busy stream: mind their depth */
  srv_handles_each(&x->s->handles, SRV_H_STREAM, check_room_entry, x->s);
  for (dead_stream_t *d = x->s->dead; d; d = d->next) srv_check_room(x->s, d->st);
  return RDEV_OK;
}

/* Looks up the stream of an async request (0 = synchronous: *st = NULL). */
static int opt_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st) {
  *st = NULL;
  return h ? srv_get_stream(x, h, st) : RDEV_OK;
}

int srv_op_write(srv_req_t *x) {
  const rdev_v1_Write *w = &x->q->op.write;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  size_t n = x->data->len;
  int rc = opt_stream(x, w->stream, &st);
  if (rc || (rc = srv_check_count(x, n, w->dest_max)) ||
      (rc = srv_buf_range(x, "write", w->buf, w->offset, n, &dst, NULL)))
    return rc;
  if (n == 0) return st || w->quiet ? SRV_LATER : RDEV_OK;
  rdev_wire_payload_t *p = x->data;
  if (!st) { /* synchronous: copied now, so that later requests see it */
    for (int i = 0; i < p->nparts; i++) {
      size_t k = GRPC_SLICE_LENGTH(p->parts[i]);
      rc = rdev_rt_memcpy(x->s->srv->rt, dst, k, GRPC_SLICE_START_PTR(p->parts[i]), k, RDEV_MEMCPY_HOST_TO_DEVICE);
      if (rc) return srv_rt_failed(x, rc);
      dst += k;
    }
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

/* Sent straight from device memory where the device shows it: now, or for
 * an async Read when its stream reaches it (read_view_cb); else through a
 * staging buffer. */
int srv_op_read(srv_req_t *x) {
  const rdev_v1_Read *rd = &x->q->op.read;
  srv_handle_t *se = NULL;
  char *src = NULL;
  mem_t *mem = NULL;
  int rc = rd->stream ? srv_find_stream(x, rd->stream, &se) : RDEV_OK; /* no fence: reads go on */
  if (rc || (rc = srv_check_count(x, rd->count, rd->dest_max))) return rc;
  if (rd->count > RDEV_WIRE_MAX_CHUNK)
    return srv_fail(x, RDEV_INVALID_PARAM, "read of %llu bytes exceeds the %u-byte chunk limit",
                    (unsigned long long)rd->count, RDEV_WIRE_MAX_CHUNK);
  if ((rc = srv_buf_range(x, "read", rd->buf, rd->offset, rd->count, &src, &mem))) return rc;
  rdev_rt_stream_t *st = se ? se->ptr : NULL;
  size_t n = (size_t)rd->count;
  const void *view = rdev_rt_host_view(x->s->srv->rt, src, n);
  views_t **vs = !view ? NULL : st ? &se->views : &x->s->sync_views;
  pin_t *pin = vs && (*vs || (*vs = srv_views_new(x->s->pins))) ? malloc(sizeof *pin) : NULL;
  if (pin && !st) {
    x->payload = srv_pinned_slice(pin, *vs, mem, 1, view, n); /* later changes wait: must_wait */
    x->has_payload = 1;
    return RDEV_OK;
  }
  if (pin) {
    cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, (void *)view, n);
    if (c) {
      c->views = srv_views_ref(*vs);
      c->mem = srv_mem_ref(mem);
      c->pin = pin;
    } else {
      free(pin);
    }
    if ((rc = srv_queue_callback(x, st, srv_read_view_cb, c)) == SRV_LATER) se->views->unfenced = 1;
    return rc;
  }
  void *staging = srv_buf_get(n);
  if (!staging) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  if (!st) {
    rc = n ? rdev_rt_memcpy(x->s->srv->rt, staging, n, src, n, RDEV_MEMCPY_DEVICE_TO_HOST) : RDEV_OK;
    if (rc) {
      srv_buf_put(staging);
      return srv_rt_failed(x, rc);
    }
    x->payload = srv_buf_slice(staging, n);
    x->has_payload = 1;
    return RDEV_OK;
  }
  cb_ctx_t *c = srv_cb_new(x->s, x->q->seq, st, staging, n);
  if (!c) {
    srv_buf_put(staging);
    return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  }
  if (n && (rc = rdev_rt_memcpy_async(x->s->srv->rt, staging, n, src, n, RDEV_MEMCPY_DEVICE_TO_HOST, st))) {
    srv_cb_done(c);
    srv_buf_put(staging);
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
      (rc = srv_buf_range(x, "copy dst", cp->dst, cp->dst_offset, cp->count, &dst, NULL)) ||
      (rc = srv_buf_range(x, "copy src", cp->src, cp->src_offset, cp->count, &src, NULL)))
    return rc;
  /* buffers start 64-byte aligned: said in the client's terms, offsets */
  if (cp->count && (cp->dst_offset | cp->src_offset) % RDEV_RT_MEM_ALIGN)
    return srv_fail(x, RDEV_MEMORY_ADDRESS_UNALIGNED,
                    "copy: device-to-device copies need %d-byte-aligned offsets (dst %llu, src %llu)",
                    RDEV_RT_MEM_ALIGN, (unsigned long long)cp->dst_offset, (unsigned long long)cp->src_offset);
  size_t n = (size_t)cp->count;
  rc = st ? rdev_rt_memcpy_async(x->s->srv->rt, dst, n, src, n, RDEV_MEMCPY_DEVICE_TO_DEVICE, st)
          : rdev_rt_memcpy(x->s->srv->rt, dst, n, src, n, RDEV_MEMCPY_DEVICE_TO_DEVICE);
  if (rc) return srv_rt_failed(x, rc);
  return st ? SRV_LATER : RDEV_OK;
}

int srv_op_memset(srv_req_t *x) {
  const rdev_v1_Memset *m = &x->q->op.memset;
  rdev_rt_stream_t *st = NULL;
  char *dst = NULL;
  int rc = opt_stream(x, m->stream, &st);
  if (rc || (rc = srv_check_count(x, m->count, m->dest_max)) ||
      (rc = srv_buf_range(x, "memset", m->buf, m->offset, m->count, &dst, NULL)))
    return rc;
  size_t n = (size_t)m->count;
  rc = st ? rdev_rt_memset_async(x->s->srv->rt, dst, n, m->value, n, st)
          : rdev_rt_memset(x->s->srv->rt, dst, n, m->value, n);
  if (rc) return srv_rt_failed(x, rc);
  return st ? SRV_LATER : RDEV_OK;
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
