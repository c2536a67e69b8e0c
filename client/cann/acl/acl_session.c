/*
 * client/cann/acl/acl_session.c — what every part of the ACL library stands
 * on: the process's one rdev session (opened by aclInit from the
 * environment) and its lock, the calling thread's device, last error and
 * message, and a child after fork(). The session's current device is one
 * for the process, ACL's one per thread: a call that works on a device sets
 * the session's under the lock (acl_on_device). rdev's status numbers are
 * CANN's, so codes pass through unchanged.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_lib.h"
#include "rdev/rdev.h"

static struct {
  pthread_mutex_t mu; /* everything below, and the session's current device */
  rdev_session_t *s;  /* NULL before aclInit and after aclFinalize */
  int forked;         /* this is a child of the process that opened s */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int t_dev = -1; /* aclrtSetDevice's, per thread */

static _Thread_local char t_msg[512];
static _Thread_local aclError t_err; /* aclrtGetLastError's */

aclError acl_fail(aclError code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_msg, sizeof t_msg, fmt, ap);
  va_end(ap);
  t_err = code;
  return code;
}
#define fail acl_fail

void acl_error_save(acl_error_state_t *st) {
  st->code = t_err;
  memcpy(st->msg, t_msg, sizeof st->msg);
}

void acl_error_restore(const acl_error_state_t *st) {
  t_err = st->code;
  memcpy(t_msg, st->msg, sizeof t_msg);
}

aclError acl_last_error(int clear) {
  aclError e = t_err;
  if (clear) t_err = ACL_SUCCESS;
  return e;
}

aclError acl_unsupported(const char *name) {
  return fail(ACL_ERROR_API_NOT_SUPPORT, "%s is not offered by rdev (docs/acl.md lists what is)", name);
}

aclError acl_result(int rc, const char *what) {
  if (rc == RDEV_OK) return ACL_SUCCESS;
  return fail(rc, "%s: %s (%s)", what, rdev_strerror(rc), rdev_session_last_error());
}

/* In a child after fork(): a session the parent opened is not the child's
 * (its threads and connection stayed behind); without one, the child may
 * call aclInit itself. The lock may have been held by a thread that did not
 * come along. */
static void on_fork_child(void) {
  pthread_mutex_init(&g.mu, NULL);
  g.forked = g.s != NULL;
}

void acl_lock(void) { pthread_mutex_lock(&g.mu); }

void acl_unlock(void) { pthread_mutex_unlock(&g.mu); }

/* g.mu held: the session, or an error for a process without one. */
static aclError session_ok(void) {
  if (g.forked) return fail(ACL_ERROR_UNINITIALIZE, "the rdev session belongs to the parent process (fork)");
  if (!g.s) return fail(ACL_ERROR_UNINITIALIZE, "aclInit has not been called");
  return ACL_SUCCESS;
}

/* g.mu held: the session on the calling thread's device. */
static aclError on_device(void) {
  aclError rc = session_ok();
  if (rc) return rc;
  if (t_dev < 0) return fail(ACL_ERROR_RT_CONTEXT_NULL, "no device set on this thread (aclrtSetDevice)");
  return acl_result(rdev_device_set(g.s, t_dev), "aclrtSetDevice");
}

aclError acl_session(rdev_session_t **s) {
  aclError rc = session_ok();
  *s = g.s;
  return rc;
}

aclError acl_session_get(rdev_session_t **s) {
  acl_lock();
  aclError rc = acl_session(s);
  acl_unlock();
  return rc;
}

rdev_session_t *acl_session_if_open(void) { return g.forked ? NULL : g.s; }

aclError acl_on_device(rdev_session_t **s, int *dev) {
  aclError rc = on_device();
  *s = g.s;
  *dev = t_dev;
  return rc;
}

int acl_thread_device(void) { return t_dev; }

void acl_thread_device_set(int dev) { t_dev = dev; }

aclError aclInit(const char *configPath) {
  (void)configPath; /* settings come from the environment: RDEV_TARGET, RDEV_TOKEN, RDEV_CA, ... */
  pthread_mutex_lock(&g.mu);
  aclError rc = ACL_SUCCESS;
  if (g.forked)
    rc = fail(ACL_ERROR_UNINITIALIZE, "the rdev session belongs to the parent process (fork)");
  else if (g.s)
    rc = fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was called already");
  else {
    const char *target = getenv("RDEV_TARGET");
    if (!target || !*target) {
      rc = fail(ACL_ERROR_INVALID_PARAM, "RDEV_TARGET is not set: the rdevd to use (host:port or unix:/path)");
    } else {
      int r = rdev_session_open(target, NULL, &g.s);
      if (r != RDEV_OK) {
        g.s = NULL;
        rc = fail(r, "cannot open a session with rdevd at %s: %s (%s)", target, rdev_strerror(r),
                  rdev_session_last_error());
      }
    }
  }
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError acl_session_end(rdev_session_t **closing) {
  aclError rc = g.forked || g.s ? session_ok() : fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize was called already");
  *closing = rc ? NULL : g.s;
  if (!rc) g.s = NULL;
  return rc;
}

/* Obtains and clears, as CANN: a second call gives NULL. The text stays
 * valid until the thread's next call of it. */
const char *aclGetRecentErrMsg(void) {
  static _Thread_local char got[sizeof t_msg];
  if (!t_msg[0]) return NULL;
  memcpy(got, t_msg, sizeof got);
  t_msg[0] = '\0';
  return got;
}

aclError acl_device_count(int *count) {
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = acl_result(rdev_device_count(g.s, count), "device count");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError acl_device_memory(int dev, size_t *total, size_t *free_bytes) {
  rdev_device_info_t info;
  pthread_mutex_lock(&g.mu);
  aclError rc = session_ok();
  if (!rc) rc = acl_result(rdev_device_info(g.s, dev, &info), "device info");
  pthread_mutex_unlock(&g.mu);
  if (!rc) *total = info.total_bytes, *free_bytes = info.free_bytes;
  return rc;
}

aclError acl_device_props(int dev, rdev_device_props_t *props) {
  pthread_mutex_lock(&g.mu);
  aclError rc = dev < 0 ? on_device() : session_ok();
  if (!rc) rc = acl_result(rdev_device_props(g.s, dev < 0 ? t_dev : dev, props), "device properties");
  pthread_mutex_unlock(&g.mu);
  return rc;
}

aclError acl_device_name(char *name, size_t len) {
  rdev_device_props_t p;
  aclError rc = acl_device_props(-1, &p);
  if (!rc) snprintf(name, len, "%s", p.name);
  return rc;
}

__attribute__((constructor)) static void acl_session_init(void) { pthread_atfork(NULL, NULL, on_fork_child); }
