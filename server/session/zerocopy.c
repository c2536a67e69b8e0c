/*
 * server/session/zerocopy.c — Read replies that show device memory itself
 * (zerocopy.h says when and why): the pin each such slice holds until gRPC
 * lets go, the counts of them per stream (srv_views_t) and per session
 * (srv_zc_session_t), the fence that makes later work on a stream wait for
 * them, and the resumer thread that goes on with a session's paused
 * message once its synchronous ones left.
 */
#include <stdlib.h>

#include "zerocopy.h"

struct srv_zc {
  atomic_int held; /* slices gRPC holds, server-wide */
  pthread_mutex_t mu;
  pthread_cond_t cv; /* a session paused, or what one waits for may have come */
  srv_zc_session_t *paused;
  int started, stop;
  pthread_t resumer;
};

/* A session's shown replies. Apart from the session: gRPC may keep a
 * reply's slice until the call is destroyed, which is at the session's
 * end, so a slice must not keep the session; this outlives it if need
 * be. Its own lock: gRPC may let go of a slice inside a call made with the
 * session's locks held. */
struct srv_zc_session {
  srv_zc_t *zc;
  pthread_mutex_t mu;
  pthread_cond_t cv;         /* a views' n dropped to 0, or closing was set */
  int n;                     /* slices held */
  int orphan;                /* the session is gone: the last slice frees this */
  int closing;               /* the session is being released: fences and pauses let go */
  srv_views_t *sync;         /* its synchronous Reads' replies (lazily made) */
  void (*resume)(void *arg); /* paused: what the resumer runs, under zc->mu */
  void *resume_arg;
  void (*unpin)(void *arg); /* lets go of what only the client still needs (until closing) */
  void *unpin_arg;
  atomic_int waiting; /* fences and pauses waiting for shown replies to be let go */
  srv_zc_session_t *paused_next;
};

/* Shown replies that gRPC still holds, of one stream (its async Reads) or
 * of the session (its synchronous ones), each also counted in the
 * session's part. Under z->mu; freed with the last reference: its owner's
 * (the stream, or the session), each slice, each queued read or fence. */
struct srv_views {
  srv_zc_session_t *z;
  int n; /* slices held */
  int refs;
  int unfenced; /* async reads queued since the last fence (request handling's) */
};

/* What a shown slice holds until gRPC lets go of it. */
typedef struct {
  srv_views_t *v;
  srv_mem_t *mem;
  int sync; /* a synchronous Read's: counts in mem->shown too */
} pin_t;

struct srv_zc_read {
  pin_t *pin; /* made up front: the stream's callback does not allocate */
  srv_views_t *v;
  srv_mem_t *mem;
  const void *view;
  size_t len;
};

/* ---- the server's part ---------------------------------------------------- */

srv_zc_t *srv_zc_new(void) {
  srv_zc_t *zc = calloc(1, sizeof *zc);
  if (!zc) return NULL;
  atomic_init(&zc->held, 0);
  pthread_mutex_init(&zc->mu, NULL);
  pthread_cond_init(&zc->cv, NULL);
  return zc;
}

void srv_zc_stop(srv_zc_t *zc) {
  pthread_mutex_lock(&zc->mu);
  zc->stop = 1;
  pthread_cond_broadcast(&zc->cv);
  int started = zc->started;
  zc->started = 0;
  pthread_mutex_unlock(&zc->mu);
  if (started) pthread_join(zc->resumer, NULL);
}

void srv_zc_free(srv_zc_t *zc) {
  if (!zc) return;
  pthread_cond_destroy(&zc->cv);
  pthread_mutex_destroy(&zc->mu);
  free(zc);
}

int srv_zc_held(srv_zc_t *zc) { return atomic_load(&zc->held); }

static void wake_resumer(srv_zc_t *zc) {
  pthread_mutex_lock(&zc->mu);
  pthread_cond_broadcast(&zc->cv);
  pthread_mutex_unlock(&zc->mu);
}

/* ---- a session's part ------------------------------------------------------- */

srv_zc_session_t *srv_zc_session_new(srv_zc_t *zc) {
  srv_zc_session_t *z = calloc(1, sizeof *z);
  if (!z) return NULL;
  z->zc = zc;
  pthread_mutex_init(&z->mu, NULL);
  pthread_cond_init(&z->cv, NULL);
  return z;
}

static void session_part_free(srv_zc_session_t *z) {
  pthread_cond_destroy(&z->cv);
  pthread_mutex_destroy(&z->mu);
  free(z);
}

void srv_zc_session_unpin_fn(srv_zc_session_t *z, void (*fn)(void *arg), void *arg) {
  pthread_mutex_lock(&z->mu);
  z->unpin = fn;
  z->unpin_arg = arg;
  pthread_mutex_unlock(&z->mu);
}

/* A fence or pause begins to wait for shown replies to be let go (until
 * its waiting_end): what is sent from now on is copied too, and the
 * holders that wait for the client let go first (only a send is worth
 * waiting for). */
static void waiting_begin(srv_zc_session_t *z) {
  atomic_fetch_add(&z->waiting, 1);
  pthread_mutex_lock(&z->mu);
  void (*fn)(void *) = z->closing ? NULL : z->unpin;
  void *arg = z->unpin_arg;
  pthread_mutex_unlock(&z->mu);
  if (fn) fn(arg);
}

void srv_zc_session_closing(srv_zc_session_t *z) {
  pthread_mutex_lock(&z->mu);
  z->closing = 1;
  z->unpin = NULL;
  pthread_cond_broadcast(&z->cv);
  pthread_mutex_unlock(&z->mu);
  wake_resumer(z->zc); /* a paused message goes on, to nothing */
}

void srv_zc_session_free(srv_zc_session_t *z) {
  pthread_mutex_lock(&z->mu);
  srv_views_t *sync = z->sync;
  z->sync = NULL;
  pthread_mutex_unlock(&z->mu);
  srv_zc_views_drop(sync);
  pthread_mutex_lock(&z->mu);
  z->orphan = 1;
  int done = z->n == 0;
  pthread_mutex_unlock(&z->mu);
  if (done) session_part_free(z);
}

/* ---- views and slices ----------------------------------------------------- */

static srv_views_t *views_new(srv_zc_session_t *z) {
  srv_views_t *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->z = z;
  v->refs = 1; /* its owner's */
  return v;
}

static srv_views_t *views_ref(srv_views_t *v) {
  pthread_mutex_lock(&v->z->mu);
  v->refs++;
  pthread_mutex_unlock(&v->z->mu);
  return v;
}

void srv_zc_views_drop(srv_views_t *v) {
  if (!v) return;
  pthread_mutex_lock(&v->z->mu);
  int gone = --v->refs == 0;
  pthread_mutex_unlock(&v->z->mu);
  if (gone) free(v);
}

/* gRPC let go of a shown slice. */
static void unpin(void *user) {
  pin_t *pin = user;
  RDEV_HANDOFF_TAKE(pin);
  srv_views_t *v = pin->v;
  srv_zc_session_t *z = v->z;
  srv_zc_t *zc = z->zc;
  pthread_mutex_lock(&z->mu);
  pin->mem->shown -= pin->sync;
  int wake = 0;
  if (--v->n == 0) {
    pthread_cond_broadcast(&z->cv); /* fences */
    wake = z->resume != NULL && v == z->sync;
  }
  int gone = --v->refs == 0;
  int done = --z->n == 0 && z->orphan;
  pthread_mutex_unlock(&z->mu);
  srv_mem_unref(pin->mem);
  free(pin);
  if (gone) free(v);
  if (done) session_part_free(z);
  if (wake) wake_resumer(zc);
  atomic_fetch_sub(&zc->held, 1);
}

/* A slice over len bytes at view of mem, counted in v; pin goes with it. */
static grpc_slice pinned_slice(pin_t *pin, srv_views_t *v, srv_mem_t *mem, int sync, const void *view, size_t len) {
  srv_zc_session_t *z = v->z;
  pin->v = v;
  pin->mem = srv_mem_ref(mem);
  pin->sync = sync;
  pthread_mutex_lock(&z->mu);
  mem->shown += sync;
  z->n++;
  v->n++;
  v->refs++;
  pthread_mutex_unlock(&z->mu);
  atomic_fetch_add(&z->zc->held, 1);
  RDEV_HANDOFF_GIVE(pin); /* gRPC lets go of it, maybe on another thread */
  return grpc_slice_new_with_user_data((void *)view, len, unpin, pin);
}

int srv_zc_read(srv_zc_session_t *z, srv_mem_t *mem, const void *view, size_t n, grpc_slice *out) {
  pin_t *pin = malloc(sizeof *pin);
  srv_views_t *made = pin && !z->sync ? views_new(z) : NULL; /* request handling's: one at a time */
  pthread_mutex_lock(&z->mu);                                /* unpin reads it */
  if (made) z->sync = made;
  srv_views_t *v = z->sync;
  pthread_mutex_unlock(&z->mu);
  if (!pin || !v) {
    free(pin);
    return -1;
  }
  *out = pinned_slice(pin, v, mem, 1, view, n);
  return 0;
}

srv_zc_read_t *srv_zc_read_async(srv_zc_session_t *z, srv_views_t **views, srv_mem_t *mem, const void *view, size_t n) {
  srv_zc_read_t *r = malloc(sizeof *r);
  pin_t *pin = malloc(sizeof *pin);
  if (r && pin && !*views) *views = views_new(z);
  if (!r || !pin || !*views) {
    free(r);
    free(pin);
    return NULL;
  }
  *r = (srv_zc_read_t){pin, views_ref(*views), srv_mem_ref(mem), view, n};
  (*views)->unfenced = 1;
  return r;
}

grpc_slice srv_zc_read_slice(srv_zc_read_t *r) {
  grpc_slice s = pinned_slice(r->pin, r->v, r->mem, 0, r->view, r->len);
  r->pin = NULL;
  srv_zc_read_drop(r);
  return s;
}

void srv_zc_read_drop(srv_zc_read_t *r) {
  srv_zc_views_drop(r->v);
  srv_mem_unref(r->mem);
  free(r->pin);
  free(r);
}

/* ---- fences ----------------------------------------------------------------- */

/* On the stream: waits until the replies of the async shown Reads queued
 * before it left (or the session is being released). */
static void fence_cb(void *user, int status) {
  srv_views_t *v = user;
  srv_zc_session_t *z = v->z;
  pthread_mutex_lock(&z->mu);
  int wait = status == RDEV_OK && v->n > 0 && !z->closing;
  pthread_mutex_unlock(&z->mu);
  if (wait) {
    waiting_begin(z);
    pthread_mutex_lock(&z->mu);
    while (v->n > 0 && !z->closing) pthread_cond_wait(&z->cv, &z->mu);
    pthread_mutex_unlock(&z->mu);
    atomic_fetch_sub(&z->waiting, 1);
  }
  srv_zc_views_drop(v);
}

int srv_zc_waiting(srv_zc_session_t *z) { return atomic_load(&z->waiting) > 0; }

int srv_zc_fence(srv_views_t *v, rdev_rt_stream_t *st) {
  if (!v || !v->unfenced) return RDEV_OK;
  int rc = rdev_rt_launch_callback(st, fence_cb, views_ref(v));
  if (rc != RDEV_OK) {
    srv_zc_views_drop(v);
    return rc;
  }
  v->unfenced = 0;
  return RDEV_OK;
}

int srv_zc_views_quiet(srv_views_t *v) {
  if (!v) return 1;
  pthread_mutex_lock(&v->z->mu);
  int quiet = !v->unfenced && v->n == 0;
  pthread_mutex_unlock(&v->z->mu);
  return quiet;
}

/* ---- pausing ---------------------------------------------------------------- */

int srv_zc_showing(srv_zc_session_t *z) {
  pthread_mutex_lock(&z->mu);
  int showing = z->sync && z->sync->n > 0;
  pthread_mutex_unlock(&z->mu);
  return showing;
}

int srv_zc_shown(srv_zc_session_t *z, const srv_mem_t *mem) {
  pthread_mutex_lock(&z->mu);
  int shown = z->sync && z->sync->n > 0 && mem->shown > 0;
  pthread_mutex_unlock(&z->mu);
  return shown;
}

/* Whether a paused session may go on: gRPC let go of its synchronous
 * Read replies, or it is ending. */
static int may_resume(srv_zc_session_t *z) {
  pthread_mutex_lock(&z->mu);
  int go = !z->sync || z->sync->n == 0 || z->closing;
  pthread_mutex_unlock(&z->mu);
  return go;
}

/* The resumer: one thread for the server, since pauses are rare; it waits
 * so that no completion-queue thread ever does. */
static void *resumer_main(void *arg) {
  srv_zc_t *zc = arg;
  pthread_mutex_lock(&zc->mu);
  for (;;) {
    srv_zc_session_t **pp = &zc->paused;
    while (*pp && !may_resume(*pp)) pp = &(*pp)->paused_next;
    srv_zc_session_t *z = *pp;
    if (z) {
      *pp = z->paused_next;
      atomic_fetch_sub(&z->waiting, 1);
      void (*fn)(void *) = z->resume;
      void *fn_arg = z->resume_arg;
      pthread_mutex_lock(&z->mu);
      z->resume = NULL;
      pthread_mutex_unlock(&z->mu);
      pthread_mutex_unlock(&zc->mu);
      fn(fn_arg);
      pthread_mutex_lock(&zc->mu);
    } else if (zc->stop) {
      break;
    } else {
      pthread_cond_wait(&zc->cv, &zc->mu);
    }
  }
  pthread_mutex_unlock(&zc->mu);
  return NULL;
}

int srv_zc_pause(srv_zc_session_t *z, void (*resume)(void *arg), void *arg) {
  srv_zc_t *zc = z->zc;
  waiting_begin(z); /* until resumed */
  pthread_mutex_lock(&zc->mu);
  if (!zc->started && !zc->stop && pthread_create(&zc->resumer, NULL, resumer_main, zc) == 0) zc->started = 1;
  int ok = zc->started;
  if (ok) {
    pthread_mutex_lock(&z->mu);
    z->resume = resume;
    z->resume_arg = arg;
    pthread_mutex_unlock(&z->mu);
    z->paused_next = zc->paused;
    zc->paused = z;
    pthread_cond_broadcast(&zc->cv);
  }
  pthread_mutex_unlock(&zc->mu);
  if (!ok) atomic_fetch_sub(&z->waiting, 1);
  return ok ? 0 : -1;
}
