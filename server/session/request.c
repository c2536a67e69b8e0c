/*
 * server/session/request.c — the context a request is handled in: its error
 * reply, lookups of what the request names (device addresses within the
 * session's buffers, streams, events, the tenant's devices), and the
 * callback contexts of work that answers later.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "session.h"

int srv_fail(srv_req_t *x, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->r.message, sizeof x->r.message, fmt, ap);
  va_end(ap);
  return code;
}

int srv_rt_failed(srv_req_t *x, int rc) { return srv_fail(x, rc, "%s", rdev_rt_last_error()); }

srv_handle_t *srv_get_handle(srv_req_t *x, uint64_t h, int type) { return srv_handles_get(&x->s->handles, h, type); }

int srv_client_handle_check(srv_req_t *x, uint64_t h, const char *what) {
  if (!h) return RDEV_OK;
  if (!(h & RDEV_WIRE_CLIENT_HANDLE))
    return srv_fail(x, RDEV_INVALID_PARAM, "%s: handle 0x%llx is not a client's (bit 63 clear)", what,
                    (unsigned long long)h);
  if (srv_handles_find(&x->s->handles, h))
    return srv_fail(x, RDEV_INVALID_PARAM, "%s: handle 0x%llx is in use", what, (unsigned long long)h);
  return RDEV_OK;
}

uint64_t srv_handle_enter(srv_session_t *s, uint64_t want, int type, int dev, void *ptr, size_t size, void *ext) {
  if (!want) return srv_handles_add(&s->handles, type, dev, ptr, size, ext);
  return srv_handles_put(&s->handles, want, type, dev, ptr, size, ext) == 0 ? want : 0;
}

static void keep_refusal(srv_req_t *x, uint64_t h, uint64_t size, int rc) {
  srv_refused_t *r = &x->s->refused[x->s->refused_next++ % SRV_REFUSED_MAX];
  r->h = h;
  r->size = size;
  r->code = rc;
  snprintf(r->msg, sizeof r->msg, "%s", x->r.message);
}

int srv_refuse_quietly(srv_req_t *x, uint64_t h, int rc) {
  keep_refusal(x, h, 0, rc);
  return SRV_LATER;
}

int srv_refuse_placement(srv_req_t *x, uint64_t addr, uint64_t size) {
  char why[sizeof x->r.message];
  snprintf(why, sizeof why, "%s", x->r.message);
  srv_fail(x, RDEV_RT_MEMORY_ALLOCATION, "the allocation of %llu bytes at 0x%llx failed: %s", (unsigned long long)size,
           (unsigned long long)addr, why);
  keep_refusal(x, addr, size, RDEV_RT_MEMORY_ALLOCATION);
  x->r.addr = addr;
  return RDEV_RT_MEMORY_ALLOCATION;
}

int srv_placement_refused(srv_req_t *x, const char *what, uint64_t addr, int drop) {
  for (int i = 0; addr && i < SRV_REFUSED_MAX; i++) {
    srv_refused_t *r = &x->s->refused[i];
    if (!r->size || addr < r->h || addr - r->h >= r->size) continue;
    if (drop) {
      if (addr != r->h) continue;
      r->h = r->size = 0;
      return RDEV_OK;
    }
    return srv_fail(x, r->code, "%s: 0x%llx: %s", what, (unsigned long long)addr, r->msg);
  }
  return drop ? -1 : 0;
}

int srv_handle_missing(srv_req_t *x, uint64_t h, const char *what, int drop) {
  for (int i = 0; h && i < SRV_REFUSED_MAX; i++) {
    srv_refused_t *r = &x->s->refused[i];
    if (r->h != h || r->size) continue;
    if (drop) {
      r->h = 0;
      return RDEV_OK;
    }
    return srv_fail(x, r->code, "%s 0x%llx was refused: %s", what, (unsigned long long)h, r->msg);
  }
  return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "0x%llx is not a %s of this session", (unsigned long long)h, what);
}

int srv_find_stream(srv_req_t *x, uint64_t h, srv_handle_t **e) {
  *e = srv_get_handle(x, h, SRV_H_STREAM);
  if (!*e)
    return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "stream 0x%llx is not a stream of this session",
                    (unsigned long long)h);
  x->used = (*e)->ptr;
  return RDEV_OK;
}

int srv_get_stream(srv_req_t *x, uint64_t h, rdev_rt_stream_t **st) {
  srv_handle_t *e;
  int rc = srv_find_stream(x, h, &e);
  if (rc) return rc;
  *st = e->ptr;
  return (rc = srv_zc_fence(e->ext, e->ptr)) ? srv_rt_failed(x, rc) : RDEV_OK;
}

int srv_get_event(srv_req_t *x, uint64_t h, srv_handle_t **e) {
  *e = srv_get_handle(x, h, SRV_H_EVENT);
  if (!*e)
    return srv_fail(x, RDEV_INVALID_RESOURCE_HANDLE, "event 0x%llx is not an event of this session",
                    (unsigned long long)h);
  return RDEV_OK;
}

/* ---- the session's address space: buffers by address range ---- */

/* Ranges compare equal when they overlap. */
static int range_cmp(const void *a, const void *b) {
  const srv_mem_t *x = a, *y = b;
  if (x->wire + x->size <= y->wire) return -1;
  if (y->wire + y->size <= x->wire) return 1;
  return 0;
}

int srv_vmap_insert(srv_session_t *s, srv_mem_t *m) {
  void *node = tsearch(m, &s->vmap, range_cmp);
  return node && *(srv_mem_t **)node == m ? 0 : -1; /* another's node: it overlaps one */
}

void srv_vmap_remove(srv_session_t *s, srv_mem_t *m) { tdelete(m, &s->vmap, range_cmp); }

int srv_vmap_overlaps(srv_session_t *s, uint64_t addr, uint64_t size) {
  srv_mem_t key = {.wire = addr, .size = size};
  return tfind(&key, &s->vmap, range_cmp) != NULL;
}

srv_handle_t *srv_buffer_at(srv_session_t *s, uint64_t addr) {
  srv_mem_t key = {.wire = addr, .size = 1};
  void *node = addr + 1 > addr ? tfind(&key, &s->vmap, range_cmp) : NULL;
  return node ? srv_handles_get(&s->buffers, (*(srv_mem_t **)node)->wire, SRV_H_BUF) : NULL;
}

int srv_buf_range(srv_req_t *x, const char *what, uint64_t addr, uint64_t count, char **dptr, srv_mem_t **mem) {
  srv_handle_t *e = srv_buffer_at(x->s, addr);
  int rc;
  if (!e && (rc = srv_placement_refused(x, what, addr, 0))) return rc;
  if (!e)
    return srv_fail(x, RDEV_INVALID_PARAM, "%s: 0x%llx is not inside an allocation of this session", what,
                    (unsigned long long)addr);
  uint64_t off = addr - e->h;
  if (count > e->size - off)
    return srv_fail(x, RDEV_INVALID_PARAM,
                    "%s: %llu bytes at 0x%llx run past the end of the %zu-byte allocation at 0x%llx", what,
                    (unsigned long long)count, (unsigned long long)addr, e->size, (unsigned long long)e->h);
  *dptr = srv_buffer_dev(e, addr);
  x->dev = e->dev;
  if (mem) *mem = e->ext;
  return RDEV_OK;
}

int srv_check_device(srv_req_t *x, int local, int *dev) {
  int n = 0;
  rdev_rt_device_count(x->s->srv->rt, &n);
  *dev = srv_tenant_device(x->s->tenant, x->s->grant.devices, n, local);
  if (*dev < 0)
    return srv_fail(x, RDEV_RT_INVALID_DEVICEID, "device %d does not exist (this tenant has %d)", local,
                    srv_tenant_device_count(x->s->tenant, x->s->grant.devices, n));
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
  *c = (cb_ctx_t){.s = s, .seq = seq, .st = st, .buf = buf, .len = len};
  return c;
}

void srv_cb_done(cb_ctx_t *c) {
  srv_session_unref(c->s);
  free(c);
}

int srv_queue_callback(srv_req_t *x, rdev_rt_stream_t *st, rdev_rt_host_fn fn, cb_ctx_t *c) {
  if (!c) return srv_fail(x, RDEV_BAD_ALLOC, "out of server memory");
  int rc = rdev_rt_launch_callback(st, fn, c);
  if (rc != RDEV_OK) {
    srv_cb_done(c);
    return srv_rt_failed(x, rc);
  }
  return SRV_LATER;
}
