/*
 * server/session/buffers.h — a session buffer's device memory record: the memory
 * goes back to the device and the tenant's quota with the last reference,
 * so that nothing of a session touches memory handed on to another.
 */
#ifndef RDEV_SRV_BUFFERS_H
#define RDEV_SRV_BUFFERS_H

#include "srv.h"

/* `refs` counts the buffer's handle entry until the client frees it (or
 * the session ends), each stream with work queued before that free
 * (srv_mem_defer_on), and each reply that shows the memory itself
 * (zerocopy.h). */
typedef struct srv_mem {
  rdev_rt_t *rt;
  void *ptr;     /* the device address */
  uint64_t wire; /* its address in the session's space (the client's placement, else ptr) */
  size_t size;
  srv_tenant_t *tenant;
  int dev;
  size_t reserved; /* charged to the tenant */
  atomic_int refs;
  int shown; /* synchronous Read replies gRPC holds that show it (zerocopy.c's lock) */
} srv_mem_t;

/* A record of one reference for memory at ptr; NULL when out of memory. */
srv_mem_t *srv_mem_new(rdev_rt_t *rt, void *ptr, size_t size, srv_tenant_t *tenant, int dev, size_t reserved);
/* One reference more (returns m). */
srv_mem_t *srv_mem_ref(srv_mem_t *m);
/* Drops a reference; the last gives the memory back to the device and the
 * tenant's quota. Any thread. */
void srv_mem_unref(srv_mem_t *m);
/* Keeps m until st has run the work queued on it so far. */
void srv_mem_defer_on(srv_mem_t *m, rdev_rt_stream_t *st);

#endif
