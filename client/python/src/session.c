/*
 * client/python/src/session.c — the Session object of rdev._rdev: open and
 * close, the calls on a session (use_begin/use_end, CALL in _rdev.h),
 * server and device queries, and Session's method table (whose methods
 * for streams, memory and kernels live in stream.c, memory.c, launch.c).
 *
 * Owns, per session: the lock that lets close() wait for calls in flight on
 * other threads, the kernel print the library hands over (kept until the
 * Python layer takes it, to write on the waiting thread's sys.stdout), and
 * the host-call thread's mark (t_host_fn).
 */
#include "_rdev.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PRINT_MAX (1u << 20) /* kernel print kept between two takes */

/* Kernel print from the library's threads: kept for take_print. */
static void on_print(void *user, const char *text, size_t len) {
  SessionObject *so = user;
  pthread_mutex_lock(&so->print_mu);
  if (so->print_len + len > PRINT_MAX) {
    so->print_dropped += len;
  } else {
    if (so->print_len + len > so->print_cap) {
      size_t cap = so->print_cap ? so->print_cap : 4096;
      while (cap < so->print_len + len) cap *= 2;
      char *p = realloc(so->print, cap);
      if (!p) {
        so->print_dropped += len;
        pthread_mutex_unlock(&so->print_mu);
        return;
      }
      so->print = p;
      so->print_cap = cap;
    }
    memcpy(so->print + so->print_len, text, len);
    so->print_len += len;
  }
  pthread_mutex_unlock(&so->print_mu);
}

/* Set while this thread runs a host function (see _rdev.h). */
_Thread_local int t_host_fn;

void session_nap(void) { nanosleep(&(struct timespec){.tv_nsec = 200 * 1000}, NULL); }

/* Takes the lock shared (GIL released); 0 when the session closes first.
 * The host-call thread never blocks on it: a close waiting to join that
 * thread may hold it. */
int session_lock_shared(SessionObject *so) {
  if (!t_host_fn) return pthread_rwlock_rdlock(&so->lock) == 0;
  while (pthread_rwlock_tryrdlock(&so->lock) != 0)
    if (atomic_load(&so->closing))
      return 0;
    else
      session_nap();
  return 1;
}

/* A call on the session: the lock taken shared with the GIL released.
 * Returns the session, or NULL (Error raised, lock not held) when closed. */
static rdev_session_t *enter(SessionObject *so) {
  if (atomic_load(&so->closing) || !so->s) {
    err_fail_with(RDEV_INVALID_PARAM, "the session is closed");
    return NULL;
  }
  int locked;
  Py_BEGIN_ALLOW_THREADS;
  locked = session_lock_shared(so);
  Py_END_ALLOW_THREADS;
  if (!locked) {
    err_fail_with(RDEV_INVALID_PARAM, "the session is closed");
    return NULL;
  }
  if (!so->s) {
    pthread_rwlock_unlock(&so->lock);
    err_fail_with(RDEV_INVALID_PARAM, "the session is closed");
    return NULL;
  }
  return so->s;
}

static void leave(SessionObject *so) { pthread_rwlock_unlock(&so->lock); }

static const char *handle_kind(HandleObject *o) { return Py_TYPE(o) == &StreamType ? "stream" : "event"; }

/* Begins a call: the handles (either may be NULL) checked alive and pinned,
 * the session entered. 0 with Error raised (nothing held) on failure. */
int use_begin(use_t *u, SessionObject *so, HandleObject *a, HandleObject *b) {
  *u = (use_t){.so = so, .h = {a, b}};
  for (int i = 0; i < 2; i++)
    if (u->h[i] && u->h[i]->dead) {
      err_fail_with(RDEV_INVALID_RESOURCE_HANDLE, "the %s is destroyed", handle_kind(u->h[i]));
      return 0;
    }
  for (int i = 0; i < 2; i++) /* pinned before enter lets go of the GIL: a destroy from then on waits */
    if (u->h[i]) u->h[i]->busy++;
  if (enter(so)) return 1;
  for (int i = 0; i < 2; i++)
    if (u->h[i]) u->h[i]->busy--;
  return 0;
}

void use_end(use_t *u) {
  for (int i = 0; i < 2; i++)
    if (u->h[i]) u->h[i]->busy--;
  leave(u->so);
}

static int Session_init(SessionObject *so, PyObject *args, PyObject *kw) {
  const char *target;
  rdev_options_t opt;
  if (so->s || atomic_load(&so->closing) || so->print_cap) {
    PyErr_SetString(PyExc_RuntimeError, "Session.__init__ called twice");
    return -1;
  }
  if (connect_args(args, kw, &target, &opt)) return -1;
  rdev_session_t *s = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_session_open(target, &opt, &s);
  Py_END_ALLOW_THREADS;
  if (rc) {
    err_fail(rc);
    return -1;
  }
  rdev_session_set_print_fn(s, on_print, so);
  so->s = s;
  return 0;
}

static PyObject *Session_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  SessionObject *so = (SessionObject *)type->tp_alloc(type, 0);
  if (!so) return NULL;
  pthread_rwlock_init(&so->lock, NULL);
  pthread_mutex_init(&so->print_mu, NULL);
  return (PyObject *)so;
}

/* Closes: new calls fail at once, calls in flight finish first. A second
 * close on another thread returns once the first is done. */
static void session_close(SessionObject *so) {
  if (!so->s) return;
  if (atomic_exchange(&so->closing, 1)) {
    Py_BEGIN_ALLOW_THREADS;
    while (!atomic_load(&so->closed)) session_nap();
    Py_END_ALLOW_THREADS;
    return;
  }
  Py_BEGIN_ALLOW_THREADS;
  pthread_rwlock_wrlock(&so->lock);
  rdev_session_close(so->s); /* host functions not yet run run now, taking the GIL */
  so->s = NULL;
  pthread_rwlock_unlock(&so->lock);
  atomic_store(&so->closed, 1);
  Py_END_ALLOW_THREADS;
}

static PyObject *Session_close(SessionObject *so, PyObject *unused) {
  if (t_host_fn && so->s)
    return err_fail_with(RDEV_INVALID_PARAM, "a session cannot be closed from its own host function");
  session_close(so);
  Py_RETURN_NONE;
}

static void discard_print(void *user, const char *text, size_t len) {}

static void *close_detached(void *s) {
  rdev_session_close(s);
  return NULL;
}

static void Session_dealloc(SessionObject *so) {
  pthread_t t;
  pthread_attr_t attr;
  if (t_host_fn && so->s && !atomic_load(&so->closing)) { /* the last reference went on the host-call thread */
    rdev_session_set_print_fn(so->s, discard_print, NULL);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, close_detached, so->s) != 0) { /* leaked rather than deadlocked */
    }
    pthread_attr_destroy(&attr);
    so->s = NULL;
  }
  session_close(so);
  pthread_rwlock_destroy(&so->lock);
  pthread_mutex_destroy(&so->print_mu);
  free(so->print);
  Py_TYPE(so)->tp_free((PyObject *)so);
}

static PyObject *Session_closed(SessionObject *so, void *unused) {
  return PyBool_FromLong(!so->s || atomic_load(&so->closing));
}

static PyObject *Session_take_print(SessionObject *so, PyObject *unused) {
  char *text = NULL;
  size_t len, dropped;
  pthread_mutex_lock(&so->print_mu);
  len = so->print_len;
  dropped = so->print_dropped;
  if (len) {
    text = so->print;
    so->print = NULL;
    so->print_len = so->print_cap = 0;
  }
  so->print_dropped = 0;
  pthread_mutex_unlock(&so->print_mu);
  PyObject *r = PyUnicode_DecodeUTF8(text ? text : "", (Py_ssize_t)len, "replace");
  free(text);
  if (r && dropped) {
    PyObject *note = PyUnicode_FromFormat("[rdev: %zu bytes of kernel print dropped]\n", dropped);
    PyObject *joined = note ? PyUnicode_Concat(r, note) : NULL;
    Py_XDECREF(note);
    Py_DECREF(r);
    r = joined;
  }
  return r;
}

static PyObject *Session_info(SessionObject *so, PyObject *unused) {
  rdev_server_info_t info;
  int rc;
  SESSION_CALL(so, rc, rdev_server_info(so->s, &info));
  if (rc) return err_fail(rc);
  return Py_BuildValue("(sssiI)", info.version, info.backend, info.identity, info.device_count, info.max_chunk);
}

static PyObject *Session_kernels(SessionObject *so, PyObject *unused) {
  rdev_kernel_info_t k[64];
  int n = 0, rc;
  SESSION_CALL(so, rc, rdev_server_kernels(so->s, k, 64, &n));
  if (rc) return err_fail(rc);
  if (n > 64) n = 64;
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++) {
    PyObject *params = PyTuple_New(k[i].nparams);
    for (int j = 0; params && j < k[i].nparams; j++)
      PyTuple_SET_ITEM(params, j, Py_BuildValue("(ss)", k[i].params[j].name, rdev_arg_type_name(k[i].params[j].type)));
    for (int j = 0; params && j < k[i].nparams; j++)
      if (!PyTuple_GET_ITEM(params, j)) Py_CLEAR(params);
    PyObject *item = params ? Py_BuildValue("(ssN)", k[i].name, k[i].doc, params) : NULL;
    if (!item) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, i, item);
  }
  return list;
}

static PyObject *Session_device_count(SessionObject *so, PyObject *unused) {
  int n = 0, rc;
  SESSION_CALL(so, rc, rdev_device_count(so->s, &n));
  return rc ? err_fail(rc) : PyLong_FromLong(n);
}

static PyObject *Session_device_info(SessionObject *so, PyObject *arg) {
  int dev, rc;
  if (!PyArg_Parse(arg, "i", &dev)) return NULL;
  rdev_device_info_t info;
  SESSION_CALL(so, rc, rdev_device_info(so->s, dev, &info));
  if (rc) return err_fail(rc);
  return Py_BuildValue("(snnnn)", info.name, (Py_ssize_t)info.total_bytes, (Py_ssize_t)info.free_bytes,
                       (Py_ssize_t)info.quota_bytes, (Py_ssize_t)info.used_bytes);
}

static PyObject *Session_set_device(SessionObject *so, PyObject *arg) {
  int dev, rc;
  if (!PyArg_Parse(arg, "i", &dev)) return NULL;
  SESSION_CALL(so, rc, rdev_device_set(so->s, dev));
  return err_none_or_fail(rc);
}

static PyObject *Session_get_device(SessionObject *so, PyObject *unused) {
  int dev = 0, rc;
  SESSION_CALL(so, rc, rdev_device_get(so->s, &dev));
  return rc ? err_fail(rc) : PyLong_FromLong(dev);
}

static PyObject *Session_mem_info(SessionObject *so, PyObject *unused) {
  size_t fr = 0, total = 0;
  int rc;
  SESSION_CALL(so, rc, rdev_mem_info(so->s, &fr, &total));
  if (rc) return err_fail(rc);
  return Py_BuildValue("(nn)", (Py_ssize_t)fr, (Py_ssize_t)total);
}

/* ---- the type -------------------------------------------------------------------------------- */

static PyMethodDef Session_methods[] = {
    {"close", (PyCFunction)Session_close, METH_NOARGS, "Ends the session; waits for calls in flight."},
    {"take_print", (PyCFunction)Session_take_print, METH_NOARGS, "Kernel print received since the last take."},
    {"info", (PyCFunction)Session_info, METH_NOARGS, "(version, backend, identity, device_count, max_chunk)"},
    {"kernels", (PyCFunction)Session_kernels, METH_NOARGS, "[(name, doc, ((param, type), ...)), ...]"},
    {"device_count", (PyCFunction)Session_device_count, METH_NOARGS, NULL},
    {"device_info", (PyCFunction)Session_device_info, METH_O,
     "(name, total_bytes, free_bytes, quota_bytes, used_bytes)"},
    {"set_device", (PyCFunction)Session_set_device, METH_O, NULL},
    {"get_device", (PyCFunction)Session_get_device, METH_NOARGS, NULL},
    {"mem_info", (PyCFunction)Session_mem_info, METH_NOARGS, "(free, total) of the current device"},
    {"malloc", (PyCFunction)Session_malloc, METH_VARARGS, "malloc(size, policy=0) -> device address"},
    {"free", (PyCFunction)Session_free, METH_O, NULL},
    {"write", (PyCFunction)Session_write, METH_VARARGS, "write(dptr, buffer, stream=None)"},
    {"read", (PyCFunction)Session_read, METH_VARARGS, "read(buffer, dptr, stream=None)"},
    {"copy", (PyCFunction)Session_copy, METH_VARARGS, "copy(dst, src, count, stream=None)"},
    {"memset", (PyCFunction)Session_memset, METH_VARARGS, "memset(dptr, value, count, stream=None)"},
    {"launch", (PyCFunction)Session_launch, METH_VARARGS, "launch(stream, name, blocks, ((type, value), ...))"},
    {"host_func", (PyCFunction)Session_host_func, METH_VARARGS,
     "host_func(stream, fn, block=0): fn(status) when reached"},
    {"op_launch", (PyCFunction)Session_op_launch, METH_VARARGS,
     "op_launch(stream, name, args): an operator (rdev/ops.h)"},
    {"stream", (PyCFunction)Session_stream, METH_NOARGS, "A new stream on the current device."},
    {"event", (PyCFunction)Session_event, METH_NOARGS, "A new event on the current device."},
    {NULL}};

static PyGetSetDef Session_getset[] = {{"closed", (getter)Session_closed, NULL, NULL, NULL}, {NULL}};

PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdev._rdev.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Session(target, token=None, ca=None, cert=None, key=None, timeout_ms=0): a session on rdevd.",
    .tp_new = Session_new,
    .tp_init = (initproc)Session_init,
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_methods = Session_methods,
    .tp_getset = Session_getset,
};
