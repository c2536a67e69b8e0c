/*
 * client/python/src/_rdev.h — private to the C extension rdev._rdev: only
 * the .c files of client/python/src/ include it. It owns the objects those
 * files share (SessionObject, HandleObject), the call machinery every
 * method goes through (use_t, CALL), and the contract of each function one
 * of the files offers the others. One file per part:
 *
 *   _rdev.c    the module: its table and constants, rdev.Error, err_*
 *   session.c  the Session object: open, close, the lock, calls (use_*),
 *              kernel print, server and device queries, Session's methods
 *   stream.c   Stream and Event objects: creation, destroy, their methods
 *   memory.c   device memory and copies (mem_to_addr, Session_malloc, ...)
 *   launch.c   kernel launches and host functions
 *   ops.c      operators (rdev/ops.h): Session.op_launch, the module's op_table
 *   jobs.c     the Jobs object (rdev/job.h) and job_parse, over the `rdev`
 *              tool's spec reader (client/cli/job_yaml.h)
 *
 * Every method runs under the GIL and lets go of it only inside CALL (or
 * the like), around the rdev.h call.
 */
#ifndef RDEV_PYTHON_RDEV_H
#define RDEV_PYTHON_RDEV_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>

#include "rdev/rdev.h"

/* ---- errors (_rdev.c) ------------------------------------------------------------------------ */

/* Each raises _rdev.Error for rc (.code rc, .message) and returns NULL:
 * err_fail with the library's detail of this thread's last failure,
 * err_fail_with with a message of this extension's. */
PyObject *err_fail(int rc);
PyObject *err_fail_with(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* None for rc 0, else err_fail(rc). */
PyObject *err_none_or_fail(int rc);

/* ---- objects --------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD rdev_session_t *s; /* NULL once closed */
  atomic_int closing;              /* set under the GIL before close takes the lock */
  atomic_int closed;               /* set once rdev_session_close returned */
  pthread_rwlock_t lock;           /* calls hold it shared; close exclusive */
  pthread_mutex_t print_mu;
  char *print;
  size_t print_len, print_cap, print_dropped;
} SessionObject;

/* A stream or an event: the C object and the session it belongs to. A call
 * pins the objects it uses (busy, under the GIL); destroy marks the object
 * dead, so no new call takes it, and frees the C object once no call uses
 * it, so a call in flight on another thread never sees it freed. */
typedef struct {
  PyObject_HEAD SessionObject *so;
  void *h;  /* rdev_stream_t * or rdev_event_t *; dangling once the session closed */
  int busy; /* calls in flight that use h */
  int dead; /* destroyed, or being destroyed */
} HandleObject;

extern PyTypeObject SessionType;           /* session.c */
extern PyTypeObject StreamType, EventType; /* stream.c; both HandleObject */

/* ---- the session and its calls (session.c) --------------------------------------------------- */

/* Set while this thread runs a host function: the session's host-call
 * thread, which rdev_session_close joins, so close must not run on it, and
 * its calls must not wait for the lock a close holds. Set by launch.c's
 * trampoline around the Python callable. */
extern _Thread_local int t_host_fn;

/* Sleeps a moment (200 µs): the step of the waits that poll. */
void session_nap(void);
/* Takes so->lock shared, to be called with the GIL released; 0 (lock not
 * held) when the session closes first. Never blocks on the host-call
 * thread. */
int session_lock_shared(SessionObject *so);

/* What one call uses: its session entered and up to two handles pinned. */
typedef struct {
  SessionObject *so;
  HandleObject *h[2];
} use_t;

/* Begins a call: the handles (either may be NULL) checked alive and pinned,
 * the session entered. 0 with Error raised (nothing held) on failure. */
int use_begin(use_t *u, SessionObject *so, HandleObject *a, HandleObject *b);
/* Ends a call use_begin began: the handles unpinned, the session left. */
void use_end(use_t *u);

/* Runs `call` with the GIL released, on session so_ with handles a_ and b_
 * pinned; rc_ is its status. */
#define CALL(so_, a_, b_, rc_, call) \
  do { \
    use_t u_; \
    if (!use_begin(&u_, so_, a_, b_)) return NULL; \
    Py_BEGIN_ALLOW_THREADS; \
    rc_ = call; \
    Py_END_ALLOW_THREADS; \
    use_end(&u_); \
  } while (0)

#define SESSION_CALL(so_, rc_, call) CALL(so_, NULL, NULL, rc_, call)

/* ---- streams and events (stream.c) ----------------------------------------------------------- */

/* The stream of an optional argument: *out NULL for None (a synchronous
 * call). 0 with an exception raised for anything but a live stream of so. */
int stream_arg(SessionObject *so, PyObject *o, HandleObject **out);

/* Session methods (the table is session.c's): stream() and event(). */
PyObject *Session_stream(SessionObject *so, PyObject *unused);
PyObject *Session_event(SessionObject *so, PyObject *unused);

/* ---- device memory and copies (memory.c) ----------------------------------------------------- */

/* A device address from a Python int (numpy integers too, never floats)
 * into *(void **)out: 1, or 0 with an exception raised. A converter for
 * PyArg_ParseTuple's "O&". */
int mem_to_addr(PyObject *o, void *out);

/* Session methods: malloc(size, policy=0), free(dptr), write(dptr, buffer,
 * stream=None), read(buffer, dptr, stream=None), copy(dst, src, count,
 * stream=None), memset(dptr, value, count, stream=None). */
PyObject *Session_malloc(SessionObject *so, PyObject *args);
PyObject *Session_free(SessionObject *so, PyObject *arg);
PyObject *Session_write(SessionObject *so, PyObject *args);
PyObject *Session_read(SessionObject *so, PyObject *args);
PyObject *Session_copy(SessionObject *so, PyObject *args);
PyObject *Session_memset(SessionObject *so, PyObject *args);

/* ---- kernels and host functions (launch.c) --------------------------------------------------- */

/* Session methods: launch(stream, name, blocks, ((type, value), ...)) and
 * host_func(stream, fn, block=0). */
PyObject *Session_launch(SessionObject *so, PyObject *args);
PyObject *Session_host_func(SessionObject *so, PyObject *args);

/* ---- operators (ops.c) ---------------------------------------------------------------------- */

/* Session method op_launch(stream, name, args): operator `name` with one
 * Python value per parameter of its signature (ops.c says which), checked
 * and queued by rdev_op_launch. */
PyObject *Session_op_launch(SessionObject *so, PyObject *args);
/* The module's op_table() -> [(name, ((param, kind, flags), ...)), ...]. */
PyObject *mod_op_table(PyObject *m, PyObject *unused);

/* ---- detached jobs (jobs.c) ------------------------------------------------------------------- */

extern PyTypeObject JobsType; /* a jobs connection: submit, get, cancel, list, watch, fetch */

/* The module's job_parse(text) -> bool: a spec checked by the tool's reader
 * (True: whole; False: needs the server's kernel signatures); Error names
 * its first problem. */
PyObject *mod_job_parse(PyObject *m, PyObject *arg);

/* The arguments of Session() and Jobs(): target, then token, ca, cert,
 * key (str or None) and timeout_ms, into *target and *opt (its strings
 * point into args, valid while they live). 0, or -1 with a Python error. */
int connect_args(PyObject *args, PyObject *kw, const char **target, rdev_options_t *opt);

#endif
