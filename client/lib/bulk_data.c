/*
 * client/lib/bulk_data.c — the bytes of bulk Writes (DATA messages,
 * rdev/wire.h "The bulk connection") kept until rdevd counted them, for a
 * session whose server keeps Writes waiting across connections
 * (RDEV_WIRE_BULK_KEEPS, a resumable session's): what a lost connection
 * carried goes again, first thing, on the next, from the one after the
 * count rdevd's answer gave, so that each arrives once. bulk.c numbers
 * them anew as it attaches a connection (cl_bulk_data_renumber_locked),
 * and a thread of this file sends them (cl_bulk_data_resend) while
 * bulk.c's reader reads: rdevd's reader may wait for Writes that wait in
 * turn for rdevd's frames to be read.
 *
 * A Write's bytes go straight from the caller's memory, and are kept by
 * reference while the call that sent them runs. As it returns
 * (cl_bulk_data_settle) those rdevd has not counted yet are copied: an
 * async copy's source is the caller's again then, and what is still
 * uncounted is about what the connection holds in flight. A synchronous
 * copy that was answered drops them instead (rdevd had them all). rdevd's
 * RECEIPTs free them as they come (cl_bulk_data_counted, on bulk.c's
 * reader).
 *
 * The copies go into buffers of a chunk each, kept for the next copies
 * once let go of (up to CL_BULK_POOL per session): memory just allocated
 * would be paged in at each copy, and cost twice the copy (glibc gives
 * freed chunks of this size back to the system). Without a buffer, the
 * call waits for rdevd to count the bytes instead.
 *
 * Locks: the list and the buffers are under data_mu; the caller's memory
 * is read only under send_mu (a send, a copy), so that a call returns only
 * once nothing reads its memory any more. Entries leave the list under
 * send_mu, or on a RECEIPT; while they are sent again, RECEIPTs leave
 * them to the sender.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "client.h"
#include "rdev/clock.h"

/* A DATA message kept. */
struct cl_data {
  struct cl_data *next;
  uint64_t n;         /* its number: rdevd's count of DATA messages once it is in */
  uint64_t seq;       /* its Write's */
  const uint8_t *src; /* its bytes: the caller's memory while its call runs, or own */
  uint8_t *own;       /* a copy, once its call returned (NULL before) */
  size_t len;
  const void *owner; /* the thread whose call lent src */
};

/* The calling thread's mark: a call that sends DATA runs on one thread,
 * and settles before it returns, so the entries lent by one thread are its
 * current call's. */
static _Thread_local char owner_mark;

/* data_mu held: a buffer of RDEV_WIRE_MAX_CHUNK bytes for a copy; NULL when out of memory. */
static uint8_t *buffer_get_locked(rdev_session_t *s) {
  if (s->bulk.data_npool) return s->bulk.data_pool[--s->bulk.data_npool];
  return malloc(RDEV_WIRE_MAX_CHUNK);
}

/* Frees the entries of list e (unlinked), their buffers kept for the next copies. */
static void data_free(rdev_session_t *s, cl_data_t *e) {
  if (!e) return;
  pthread_mutex_lock(&s->bulk.data_mu);
  for (cl_data_t *f = e; f; f = f->next)
    if (f->own && s->bulk.data_npool < CL_BULK_POOL) {
      s->bulk.data_pool[s->bulk.data_npool++] = f->own;
      f->own = NULL;
    }
  pthread_mutex_unlock(&s->bulk.data_mu);
  while (e) {
    cl_data_t *next = e->next;
    free(e->own);
    free(e);
    e = next;
  }
}

bool cl_bulk_data_keep_locked(rdev_session_t *s, uint64_t seq, const void *src, size_t n) {
  if (!s->bulk.keeps) {
    s->bulk.data_sent++;
    return true;
  }
  cl_data_t *e = calloc(1, sizeof *e);
  if (!e) return false;
  *e = (cl_data_t){.n = ++s->bulk.data_sent, .seq = seq, .src = src, .len = n, .owner = &owner_mark};
  pthread_mutex_lock(&s->bulk.data_mu);
  if (s->bulk.data_tail)
    s->bulk.data_tail->next = e;
  else
    s->bulk.data_head = e;
  s->bulk.data_tail = e;
  atomic_fetch_add(&s->bulk.data_lent, 1);
  pthread_mutex_unlock(&s->bulk.data_mu);
  return true;
}

void cl_bulk_data_unkeep_locked(rdev_session_t *s) {
  cl_data_t *e = NULL;
  pthread_mutex_lock(&s->bulk.data_mu);
  if (s->bulk.keeps && s->bulk.data_tail &&
      s->bulk.data_tail->n == s->bulk.data_sent) { /* not counted yet: it never went */
    e = s->bulk.data_tail;
    cl_data_t **pp = &s->bulk.data_head, *prev = NULL;
    while (*pp != e) prev = *pp, pp = &(*pp)->next;
    *pp = NULL;
    s->bulk.data_tail = prev;
    atomic_fetch_sub(&s->bulk.data_lent, 1);
  }
  s->bulk.data_sent--;
  pthread_mutex_unlock(&s->bulk.data_mu);
  free(e);
}

/* data_mu held: unlinks the entries numbered at most count (rdevd has
 * them), returned for data_free. */
static cl_data_t *counted_locked(rdev_session_t *s, uint64_t count) {
  cl_data_t *out = s->bulk.data_head, **pp = &out;
  while (*pp && (*pp)->n <= count) {
    if (!(*pp)->own) atomic_fetch_sub(&s->bulk.data_lent, 1);
    pp = &(*pp)->next;
  }
  s->bulk.data_head = *pp;
  if (!*pp) s->bulk.data_tail = NULL;
  *pp = NULL;
  return out;
}

void cl_bulk_data_counted(rdev_session_t *s, uint64_t count) {
  cl_data_t *done = NULL;
  pthread_mutex_lock(&s->bulk.data_mu);
  if (count > s->bulk.data_counted) s->bulk.data_counted = count;
  if (!s->bulk.data_again) done = counted_locked(s, count); /* else the sender frees them */
  pthread_cond_broadcast(&s->bulk.data_cv);
  pthread_mutex_unlock(&s->bulk.data_mu);
  data_free(s, done);
}

bool cl_bulk_data_renumber_locked(rdev_session_t *s, uint64_t counted) {
  pthread_mutex_lock(&s->bulk.data_mu);
  cl_data_t *done = counted_locked(s, counted);
  uint64_t nth = counted;
  for (cl_data_t *e = s->bulk.data_head; e; e = e->next) e->n = ++nth; /* what rdevd will count them as */
  s->bulk.data_sent = nth;
  s->bulk.data_counted = counted;
  bool again = s->bulk.data_head != NULL;
  pthread_mutex_unlock(&s->bulk.data_mu);
  data_free(s, done);
  return again;
}

/* Send lock held: sends the entries kept on fd, in order: true, or false
 * when fd failed. RECEIPTs that come meanwhile wait (the list is walked
 * without data_mu), then free what they counted. */
static bool send_again_locked(rdev_session_t *s, int fd) {
  pthread_mutex_lock(&s->bulk.data_mu);
  s->bulk.data_again = true;
  cl_data_t *first = s->bulk.data_head;
  pthread_mutex_unlock(&s->bulk.data_mu);
  bool ok = true;
  for (cl_data_t *e = first; e && ok; e = e->next) {
    uint8_t hdr[RDEV_WIRE_BULK_HEADER + 8];
    cl_bulk_data_header(hdr, e->seq, e->len);
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)e->src, e->len}};
    ok = rdev_wire_send_all(fd, iov, 2) == 0;
  }
  pthread_mutex_lock(&s->bulk.data_mu);
  s->bulk.data_again = false;
  cl_data_t *done = counted_locked(s, s->bulk.data_counted);
  pthread_mutex_unlock(&s->bulk.data_mu);
  data_free(s, done);
  return ok;
}

static void *resend_main(void *arg) {
  rdev_session_t *s = arg;
  cl_bulk_send_lock(s);
  int fd = s->bulk.data_fd;
  if (send_again_locked(s, fd)) {
    cl_bulk_send_unregisters_locked(s, fd); /* those made meanwhile */
    atomic_store(&s->bulk.ready, true);     /* under send_mu: Writes after these */
  } else {
    atomic_store(&s->bulk.asked, false);
    shutdown(fd, SHUT_RDWR); /* its reader finds it gone, and connects another */
  }
  cl_bulk_send_unlock(s);
  return NULL;
}

void cl_bulk_data_resend(rdev_session_t *s, int fd) {
  s->bulk.data_fd = fd;
  s->bulk.data_thread_on = pthread_create(&s->bulk.data_thread, NULL, resend_main, s) == 0;
  if (!s->bulk.data_thread_on) resend_main(s); /* no thread: here, at the risk of waiting for rdevd */
}

void cl_bulk_data_join(rdev_session_t *s) {
  if (s->bulk.data_thread_on) pthread_join(s->bulk.data_thread, NULL);
  s->bulk.data_thread_on = false;
}

/* Send lock held: what settle does with this thread's entries still in its
 * memory (see cl_bulk_data_settle); the number left lent for want of a
 * buffer. */
static int settle_locked(rdev_session_t *s, bool drop) {
  int left = 0;
  cl_data_t *gone = NULL;
  pthread_mutex_lock(&s->bulk.data_mu);
  for (cl_data_t **pp = &s->bulk.data_head, *prev = NULL; *pp;) {
    cl_data_t *e = *pp;
    if (e->own || e->owner != &owner_mark) {
      prev = e;
      pp = &e->next;
      continue;
    }
    if (!drop) {
      uint8_t *copy = e->len <= RDEV_WIRE_MAX_CHUNK ? buffer_get_locked(s) : NULL;
      if (!copy) { /* it stays lent: the caller waits for rdevd to count it */
        left++;
        prev = e;
        pp = &e->next;
        continue;
      }
      memcpy(copy, e->src, e->len);
      e->own = copy;
      e->src = copy;
      atomic_fetch_sub(&s->bulk.data_lent, 1);
      prev = e;
      pp = &e->next;
      continue;
    }
    *pp = e->next; /* answered: rdevd had it */
    if (s->bulk.data_tail == e) s->bulk.data_tail = prev;
    atomic_fetch_sub(&s->bulk.data_lent, 1);
    e->next = gone;
    gone = e;
  }
  pthread_mutex_unlock(&s->bulk.data_mu);
  data_free(s, gone);
  return left;
}

/* Whether rdevd can count nothing more of this session (its bulk reader
 * stopped, or the session's call ended). */
static bool settle_over(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  bool over = atomic_load(&s->bulk.stop) || s->bulk.dead || s->poll.dead;
  pthread_mutex_unlock(&s->mu);
  return over;
}

void cl_bulk_data_settle(rdev_session_t *s, bool drop) {
  if (!atomic_load(&s->bulk.data_lent)) return; /* the common case: nothing lent (or all counted) */
  for (;;) {
    cl_bulk_send_lock(s); /* no send reads the memory lent meanwhile */
    int left = settle_locked(s, drop);
    cl_bulk_send_unlock(s);
    if (!left) return;
    if (settle_over(s)) { /* nothing will count them, nor send them again */
      cl_bulk_send_lock(s);
      settle_locked(s, true);
      cl_bulk_send_unlock(s);
      return;
    }
    /* out of memory: wait for RECEIPTs (or a connection to send them
     * again on: the memory is still lent), and look again */
    pthread_mutex_lock(&s->bulk.data_mu);
    struct timespec dl = rdev_clock_deadline_ns(50000000u);
    pthread_cond_timedwait(&s->bulk.data_cv, &s->bulk.data_mu, &dl);
    pthread_mutex_unlock(&s->bulk.data_mu);
  }
}

void cl_bulk_data_init(rdev_session_t *s) {
  pthread_mutex_init(&s->bulk.data_mu, NULL);
  rdev_clock_cond_init(&s->bulk.data_cv); /* timed waits take CLOCK_MONOTONIC deadlines */
}

void cl_bulk_data_stop(rdev_session_t *s) {
  cl_bulk_data_join(s);
  data_free(s, s->bulk.data_head);
  s->bulk.data_head = s->bulk.data_tail = NULL;
  while (s->bulk.data_npool) free(s->bulk.data_pool[--s->bulk.data_npool]);
  pthread_cond_destroy(&s->bulk.data_cv);
  pthread_mutex_destroy(&s->bulk.data_mu);
}
