/*
 * server/session/release.c — a session's end: everything its requests made goes
 * back (streams first, aborted, so that no queued work still uses the
 * buffers freed after them; then events and buffers), once, whoever ends
 * it first.
 */
#define _GNU_SOURCE
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

static void abort_stream_entry(srv_handle_t *e, void *arg) {
  (void)arg;
  rdev_rt_stream_abort(e->ptr);
}

static void destroy_stream_entry(srv_handle_t *e, void *arg) {
  rdev_rt_stream_destroy_force(e->ptr);
  srv_zc_views_drop(e->ext);
  srv_streams_give(arg, e->dev);
}
static void destroy_event_entry(srv_handle_t *e, void *arg) {
  (void)arg;
  rdev_rt_event_destroy(e->ptr);
}

static void free_buffer_entry(srv_handle_t *e, void *arg) { srv_release_buffer(arg, e); }
static void free_kernel_entry(srv_handle_t *e, void *arg) { srv_release_kernel_entry(arg, e); }

static void keep_node(void *m) { (void)m; }

void srv_session_release(srv_session_t *s) {
  pthread_mutex_lock(&s->req_mu);
  pthread_mutex_lock(&s->mu);
  int already = s->released;
  s->released = 1;
  pthread_cond_broadcast(&s->gate_cv); /* blocking host functions let their streams go */
  pthread_mutex_unlock(&s->mu);
  if (already) {
    pthread_mutex_unlock(&s->req_mu);
    return;
  }
  srv_handles_t h = s->handles, bufs = s->buffers;
  memset(&s->handles, 0, sizeof s->handles);
  memset(&s->buffers, 0, sizeof s->buffers);
  tdestroy(s->vmap, keep_node); /* its records go with the buffers' entries */
  s->vmap = NULL;
  dead_stream_t *dead = s->dead;
  s->dead = NULL;
  pthread_mutex_unlock(&s->req_mu);

  size_t nbuf = bufs.live;
  /* A fence must not hold up the streams' end (its replies may never
   * leave), nor let work behind it run: every stream discards its queue
   * before any fence lets go. */
  srv_handles_each(&h, SRV_H_STREAM, abort_stream_entry, NULL);
  for (dead_stream_t *d = dead; d; d = d->next) rdev_rt_stream_abort(d->st);
  srv_bulk_end(s); /* frames hold shown replies too */
  srv_zc_session_closing(s->zc);
  srv_handles_each(&h, SRV_H_STREAM, destroy_stream_entry, s);
  while (dead) {
    dead_stream_t *n = dead->next;
    rdev_rt_stream_destroy_force(dead->st);
    free(dead);
    dead = n;
  }
  int ndev = 0;
  rdev_rt_device_count(s->srv->rt, &ndev);
  for (int d = 0; d < ndev; d++)
    if (s->sync_streams[d]) {
      rdev_rt_stream_destroy_force(s->sync_streams[d]);
      srv_streams_give(s, d);
    }
  srv_handles_each(&h, SRV_H_EVENT, destroy_event_entry, NULL);
  srv_handles_each(&h, SRV_H_FUNC, free_kernel_entry, s);
  srv_handles_each(&h, SRV_H_BIN, free_kernel_entry, s);
  srv_handles_each(&bufs, SRV_H_BUF, free_buffer_entry, s);
  srv_handles_free(&h);
  srv_handles_free(&bufs);
  srv_regions_release(s); /* the streams are gone: no copy uses them any more */
  pthread_mutex_lock(&s->mu);
  s->buffers_freed = nbuf;
  pthread_mutex_unlock(&s->mu);
}
