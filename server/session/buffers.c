/*
 * server/session/buffers.c — a session buffer's device memory record (srv_mem_t):
 * its references, and giving the memory back with the last one.
 */
#include <stdlib.h>

#include "buffers.h"

srv_mem_t *srv_mem_new(rdev_rt_t *rt, void *ptr, size_t size, srv_tenant_t *tenant, int dev, size_t reserved) {
  srv_mem_t *m = malloc(sizeof *m);
  if (!m) return NULL;
  *m = (srv_mem_t){.rt = rt,
                   .ptr = ptr,
                   .wire = (uint64_t)(uintptr_t)ptr,
                   .size = size,
                   .tenant = tenant,
                   .dev = dev,
                   .reserved = reserved};
  atomic_init(&m->refs, 1);
  return m;
}

srv_mem_t *srv_mem_ref(srv_mem_t *m) {
  atomic_fetch_add(&m->refs, 1);
  return m;
}

void srv_mem_unref(srv_mem_t *m) {
  if (atomic_fetch_sub(&m->refs, 1) != 1) return;
  rdev_rt_free(m->rt, m->ptr);
  if (m->reserved) srv_tenant_give(m->tenant, SRV_Q_MEMORY, m->dev, m->reserved);
  free(m);
}

static void unref_cb(void *user, int status) {
  (void)status;
  srv_mem_unref(user);
}

void srv_mem_defer_on(srv_mem_t *m, rdev_rt_stream_t *st) {
  int done = 1;
  if (rdev_rt_stream_query(st, &done) == RDEV_OK && !done) {
    srv_mem_ref(m);
    if (rdev_rt_launch_callback(st, unref_cb, m) != RDEV_OK) srv_mem_unref(m);
  }
}
