/*
 * client/python/src/_rdev.c — rdev._rdev, the C extension under the rdev
 * Python package: Session, Stream and Event objects over rdev.h, one call
 * each. Copies take any object with the buffer protocol; every call that
 * can wait for the server releases the GIL. Failures raise
 * _rdev.Error(text) with .code (the CANN number) and .message.
 *
 * Owns, per session: the lock that lets close() wait for calls in flight on
 * other threads, the kernel print the library hands over (kept until the
 * Python layer takes it, to write on the waiting thread's sys.stdout), and
 * the Python callables of host functions until they have run.
 * Buffer lifetime for queued (stream) work is the caller's: the Python
 * layer keeps the objects until the stream is synchronized.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rdev/rdev.h"

#define PRINT_MAX (1u << 20) /* kernel print kept between two takes */

static PyObject *ErrorType;

/* Raises _rdev.Error for rc with message msg; returns NULL. */
static PyObject *raise_error(int rc, const char *msg) {
  if (!msg || !*msg) msg = rdev_strerror(rc);
  PyObject *text = PyUnicode_FromFormat("%s (%s, code %d)", msg, rdev_status_name(rc), rc);
  PyObject *e = text ? PyObject_CallOneArg(ErrorType, text) : NULL;
  Py_XDECREF(text);
  if (!e) return NULL;
  PyObject *code = PyLong_FromLong(rc), *m = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  if (code && m && !PyObject_SetAttrString(e, "code", code) && !PyObject_SetAttrString(e, "message", m))
    PyErr_SetObject(ErrorType, e);
  Py_XDECREF(code);
  Py_XDECREF(m);
  Py_DECREF(e);
  return NULL;
}

/* _rdev.Error for rc with the library's detail of this thread's last failure. */
static PyObject *fail(int rc) { return raise_error(rc, rdev_session_last_error()); }

/* _rdev.Error for rc with a message of this extension's. */
static PyObject *fail_with(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static PyObject *fail_with(int rc, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return raise_error(rc, msg);
}

/* None, or Error for rc. */
static PyObject *none_or_fail(int rc) {
  if (rc) return fail(rc);
  Py_RETURN_NONE;
}

/* ---- Session --------------------------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD rdev_session_t *s; /* NULL once closed */
  atomic_int closing;              /* set under the GIL before close takes the lock */
  atomic_int closed;               /* set once rdev_session_close returned */
  pthread_rwlock_t lock;           /* calls hold it shared; close exclusive */
  pthread_mutex_t print_mu;
  char *print;
  size_t print_len, print_cap, print_dropped;
} SessionObject;

static PyTypeObject SessionType, StreamType, EventType;

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

/* Set while this thread runs a host function: the session's host-call
 * thread, which rdev_session_close joins, so close must not run on it, and
 * its calls must not wait for the lock a close holds. */
static _Thread_local int t_host_fn;

static void nap(void) { nanosleep(&(struct timespec){.tv_nsec = 200 * 1000}, NULL); }

/* Takes the lock shared (GIL released); 0 when the session closes first.
 * The host-call thread never blocks on it: a close waiting to join that
 * thread may hold it. */
static int lock_shared(SessionObject *so) {
  if (!t_host_fn) return pthread_rwlock_rdlock(&so->lock) == 0;
  while (pthread_rwlock_tryrdlock(&so->lock) != 0)
    if (atomic_load(&so->closing))
      return 0;
    else
      nap();
  return 1;
}

/* A call on the session: the lock taken shared with the GIL released.
 * Returns the session, or NULL (Error raised, lock not held) when closed. */
static rdev_session_t *enter(SessionObject *so) {
  if (atomic_load(&so->closing) || !so->s) {
    fail_with(RDEV_INVALID_PARAM, "the session is closed");
    return NULL;
  }
  int locked;
  Py_BEGIN_ALLOW_THREADS;
  locked = lock_shared(so);
  Py_END_ALLOW_THREADS;
  if (!locked) {
    fail_with(RDEV_INVALID_PARAM, "the session is closed");
    return NULL;
  }
  if (!so->s) {
    pthread_rwlock_unlock(&so->lock);
    fail_with(RDEV_INVALID_PARAM, "the session is closed");
    return NULL;
  }
  return so->s;
}

static void leave(SessionObject *so) { pthread_rwlock_unlock(&so->lock); }

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

/* What one call uses: its session entered and up to two handles pinned. */
typedef struct {
  SessionObject *so;
  HandleObject *h[2];
} use_t;

static const char *handle_kind(HandleObject *o) { return Py_TYPE(o) == &StreamType ? "stream" : "event"; }

/* Begins a call: the handles (either may be NULL) checked alive and pinned,
 * the session entered. 0 with Error raised (nothing held) on failure. */
static int use_begin(use_t *u, SessionObject *so, HandleObject *a, HandleObject *b) {
  *u = (use_t){.so = so, .h = {a, b}};
  for (int i = 0; i < 2; i++)
    if (u->h[i] && u->h[i]->dead) {
      fail_with(RDEV_INVALID_RESOURCE_HANDLE, "the %s is destroyed", handle_kind(u->h[i]));
      return 0;
    }
  for (int i = 0; i < 2; i++) /* pinned before enter lets go of the GIL: a destroy from then on waits */
    if (u->h[i]) u->h[i]->busy++;
  if (enter(so)) return 1;
  for (int i = 0; i < 2; i++)
    if (u->h[i]) u->h[i]->busy--;
  return 0;
}

static void use_end(use_t *u) {
  for (int i = 0; i < 2; i++)
    if (u->h[i]) u->h[i]->busy--;
  leave(u->so);
}

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

static const char *opt_str(PyObject *o) { return o && o != Py_None ? PyUnicode_AsUTF8(o) : NULL; }

static int Session_init(SessionObject *so, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"target", "token", "ca", "cert", "key", "timeout_ms", NULL};
  const char *target;
  PyObject *token = NULL, *ca = NULL, *cert = NULL, *key = NULL;
  long long timeout_ms = 0;
  if (so->s || atomic_load(&so->closing) || so->print_cap) {
    PyErr_SetString(PyExc_RuntimeError, "Session.__init__ called twice");
    return -1;
  }
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOOOL", kwlist, &target, &token, &ca, &cert, &key, &timeout_ms))
    return -1;
  rdev_options_t opt = {.connect_timeout_ms = timeout_ms};
  opt.token = opt_str(token);
  opt.ca_file = opt_str(ca);
  opt.cert_file = opt_str(cert);
  opt.key_file = opt_str(key);
  if (PyErr_Occurred()) return -1;
  rdev_session_t *s = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_session_open(target, &opt, &s);
  Py_END_ALLOW_THREADS;
  if (rc) {
    fail(rc);
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
    while (!atomic_load(&so->closed)) nap();
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
  if (t_host_fn && so->s) return fail_with(RDEV_INVALID_PARAM, "a session cannot be closed from its own host function");
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
  if (rc) return fail(rc);
  return Py_BuildValue("(sssiI)", info.version, info.backend, info.identity, info.device_count, info.max_chunk);
}

static PyObject *Session_kernels(SessionObject *so, PyObject *unused) {
  rdev_kernel_info_t k[64];
  int n = 0, rc;
  SESSION_CALL(so, rc, rdev_server_kernels(so->s, k, 64, &n));
  if (rc) return fail(rc);
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
  return rc ? fail(rc) : PyLong_FromLong(n);
}

static PyObject *Session_device_info(SessionObject *so, PyObject *arg) {
  int dev, rc;
  if (!PyArg_Parse(arg, "i", &dev)) return NULL;
  rdev_device_info_t info;
  SESSION_CALL(so, rc, rdev_device_info(so->s, dev, &info));
  if (rc) return fail(rc);
  return Py_BuildValue("(snn)", info.name, (Py_ssize_t)info.total_bytes, (Py_ssize_t)info.free_bytes);
}

static PyObject *Session_set_device(SessionObject *so, PyObject *arg) {
  int dev, rc;
  if (!PyArg_Parse(arg, "i", &dev)) return NULL;
  SESSION_CALL(so, rc, rdev_device_set(so->s, dev));
  return none_or_fail(rc);
}

static PyObject *Session_get_device(SessionObject *so, PyObject *unused) {
  int dev = 0, rc;
  SESSION_CALL(so, rc, rdev_device_get(so->s, &dev));
  return rc ? fail(rc) : PyLong_FromLong(dev);
}

static PyObject *Session_mem_info(SessionObject *so, PyObject *unused) {
  size_t fr = 0, total = 0;
  int rc;
  SESSION_CALL(so, rc, rdev_mem_info(so->s, &fr, &total));
  if (rc) return fail(rc);
  return Py_BuildValue("(nn)", (Py_ssize_t)fr, (Py_ssize_t)total);
}

/* Device addresses cross as Python ints. */
static int to_addr(PyObject *o, void *out) {
  PyObject *i = PyNumber_Index(o); /* numpy integers too, never floats */
  if (!i) return 0;
  unsigned long long v = PyLong_AsUnsignedLongLong(i);
  Py_DECREF(i);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
  *(void **)out = (void *)(uintptr_t)v;
  return 1;
}

static PyObject *Session_malloc(SessionObject *so, PyObject *args) {
  Py_ssize_t size;
  int policy = 0, rc;
  if (!PyArg_ParseTuple(args, "n|i", &size, &policy)) return NULL;
  if (size <= 0) return fail_with(RDEV_INVALID_PARAM, "size must be positive");
  void *p = NULL;
  SESSION_CALL(so, rc, rdev_malloc(so->s, &p, (size_t)size, (rdev_mem_policy_t)policy));
  return rc ? fail(rc) : PyLong_FromUnsignedLongLong((uintptr_t)p);
}

static PyObject *Session_free(SessionObject *so, PyObject *arg) {
  void *p;
  int rc;
  if (!to_addr(arg, &p)) return NULL;
  SESSION_CALL(so, rc, rdev_free(so->s, p));
  return none_or_fail(rc);
}

/* ---- Stream and Event ------------------------------------------------------------------------ */

/* The stream of an optional argument: *out NULL for None (a synchronous
 * call). 0 with an exception raised for anything but a live stream of so. */
static int stream_arg(SessionObject *so, PyObject *o, HandleObject **out) {
  *out = NULL;
  if (!o || o == Py_None) return 1;
  if (!PyObject_TypeCheck(o, &StreamType)) {
    PyErr_SetString(PyExc_TypeError, "stream must be an _rdev.Stream or None");
    return 0;
  }
  HandleObject *st = (HandleObject *)o;
  if (st->so != so) {
    PyErr_SetString(PyExc_ValueError, "the stream belongs to another session");
    return 0;
  }
  if (st->dead) {
    fail_with(RDEV_INVALID_RESOURCE_HANDLE, "the stream is destroyed");
    return 0;
  }
  *out = st;
  return 1;
}

static int destroy_stream(void *h) { return rdev_stream_destroy(h); }
static int destroy_event(void *h) { return rdev_event_destroy(h); }

/* A new Stream or Event object for handle h (destroyed on failure). */
static PyObject *handle_new(PyTypeObject *type, SessionObject *so, void *h, int (*destroy)(void *)) {
  HandleObject *o = PyObject_New(HandleObject, type);
  if (!o) {
    destroy(h);
    return NULL;
  }
  Py_INCREF(so);
  o->so = so;
  o->h = h;
  o->busy = o->dead = 0;
  return (PyObject *)o;
}

static PyObject *Session_stream(SessionObject *so, PyObject *unused) {
  rdev_stream_t *st = NULL;
  int rc;
  SESSION_CALL(so, rc, rdev_stream_create(so->s, &st));
  return rc ? fail(rc) : handle_new(&StreamType, so, st, destroy_stream);
}

static PyObject *Session_event(SessionObject *so, PyObject *unused) {
  rdev_event_t *ev = NULL;
  int rc;
  SESSION_CALL(so, rc, rdev_event_create(so->s, &ev));
  return rc ? fail(rc) : handle_new(&EventType, so, ev, destroy_event);
}

/* ---- copies ---------------------------------------------------------------------------------- */

/* A copy between host buffer b and device address dptr, synchronous
 * without a stream, else queued (the caller keeps the buffer's object until
 * the stream is synchronized). Releases b. */
static PyObject *host_copy(SessionObject *so, void *dptr, Py_buffer *b, PyObject *sto, rdev_memcpy_kind_t kind) {
  HandleObject *st;
  use_t u;
  int rc;
  if (!stream_arg(so, sto, &st) || !use_begin(&u, so, st, NULL)) {
    PyBuffer_Release(b);
    return NULL;
  }
  size_t n = (size_t)b->len;
  void *dst = kind == RDEV_MEMCPY_HOST_TO_DEVICE ? dptr : b->buf;
  const void *src = kind == RDEV_MEMCPY_HOST_TO_DEVICE ? b->buf : dptr;
  Py_BEGIN_ALLOW_THREADS;
  rc = st ? rdev_memcpy_async(so->s, dst, n, src, n, kind, st->h) : rdev_memcpy(so->s, dst, n, src, n, kind);
  Py_END_ALLOW_THREADS;
  use_end(&u);
  PyBuffer_Release(b);
  return none_or_fail(rc);
}

/* write(dptr, buffer, stream=None): host to device. */
static PyObject *Session_write(SessionObject *so, PyObject *args) {
  void *dptr;
  Py_buffer b;
  PyObject *sto = Py_None;
  if (!PyArg_ParseTuple(args, "O&y*|O", to_addr, &dptr, &b, &sto)) return NULL;
  return host_copy(so, dptr, &b, sto, RDEV_MEMCPY_HOST_TO_DEVICE);
}

/* read(buffer, dptr, stream=None): device to host into a writable buffer. */
static PyObject *Session_read(SessionObject *so, PyObject *args) {
  void *dptr;
  Py_buffer b;
  PyObject *sto = Py_None;
  if (!PyArg_ParseTuple(args, "w*O&|O", &b, to_addr, &dptr, &sto)) return NULL;
  return host_copy(so, dptr, &b, sto, RDEV_MEMCPY_DEVICE_TO_HOST);
}

/* copy(dst, src, count, stream=None): device to device. */
static PyObject *Session_copy(SessionObject *so, PyObject *args) {
  void *dst, *src;
  Py_ssize_t n;
  PyObject *sto = Py_None;
  HandleObject *st;
  int rc;
  if (!PyArg_ParseTuple(args, "O&O&n|O", to_addr, &dst, to_addr, &src, &n, &sto)) return NULL;
  if (n < 0) return fail_with(RDEV_INVALID_PARAM, "count is negative");
  if (!stream_arg(so, sto, &st)) return NULL;
  size_t c = (size_t)n;
  CALL(so, st, NULL, rc,
       st ? rdev_memcpy_async(so->s, dst, c, src, c, RDEV_MEMCPY_DEVICE_TO_DEVICE, st->h)
          : rdev_memcpy(so->s, dst, c, src, c, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  return none_or_fail(rc);
}

/* memset(dptr, value, count, stream=None). */
static PyObject *Session_memset(SessionObject *so, PyObject *args) {
  void *dptr;
  int value, rc;
  Py_ssize_t n;
  PyObject *sto = Py_None;
  HandleObject *st;
  if (!PyArg_ParseTuple(args, "O&in|O", to_addr, &dptr, &value, &n, &sto)) return NULL;
  if (n < 0) return fail_with(RDEV_INVALID_PARAM, "count is negative");
  if (!stream_arg(so, sto, &st)) return NULL;
  size_t c = (size_t)n;
  CALL(so, st, NULL, rc,
       st ? rdev_memset_async(so->s, dptr, c, value, c, st->h) : rdev_memset(so->s, dptr, c, value, c));
  return none_or_fail(rc);
}

/* ---- kernels --------------------------------------------------------------------------------- */

/* One argument from (type, value); range-checked for its type. */
static int to_arg(PyObject *item, rdev_arg_t *a) {
  int type;
  PyObject *v;
  if (!PyArg_ParseTuple(item, "iO", &type, &v)) return 0;
  a->type = (rdev_arg_type_t)type;
  switch (type) {
    case RDEV_ARG_PTR: return to_addr(v, &a->v.ptr);
    case RDEV_ARG_F32: a->v.f32 = (float)PyFloat_AsDouble(v); break;
    case RDEV_ARG_F64: a->v.f64 = PyFloat_AsDouble(v); break;
    case RDEV_ARG_U32:
    case RDEV_ARG_U64: {
      unsigned long long u = PyLong_AsUnsignedLongLong(v);
      if (PyErr_Occurred()) return 0;
      if (type == RDEV_ARG_U32 && u > UINT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "%llu does not fit u32", u);
        return 0;
      }
      if (type == RDEV_ARG_U32)
        a->v.u32 = (uint32_t)u;
      else
        a->v.u64 = u;
      break;
    }
    case RDEV_ARG_I32:
    case RDEV_ARG_I64: {
      long long i = PyLong_AsLongLong(v);
      if (PyErr_Occurred()) return 0;
      if (type == RDEV_ARG_I32 && (i < INT32_MIN || i > INT32_MAX)) {
        PyErr_Format(PyExc_OverflowError, "%lld does not fit i32", i);
        return 0;
      }
      if (type == RDEV_ARG_I32)
        a->v.i32 = (int32_t)i;
      else
        a->v.i64 = i;
      break;
    }
    default: PyErr_Format(PyExc_ValueError, "unknown argument type %d", type); return 0;
  }
  return !PyErr_Occurred();
}

/* launch(stream, name, blocks, ((type, value), ...)). */
static PyObject *Session_launch(SessionObject *so, PyObject *args) {
  PyObject *sto, *seq;
  const char *name;
  unsigned long long blocks;
  HandleObject *st;
  rdev_arg_t a[RDEV_MAX_KERNEL_ARGS];
  int rc;
  if (!PyArg_ParseTuple(args, "OsKO", &sto, &name, &blocks, &seq)) return NULL;
  if (blocks == 0 || blocks > UINT32_MAX) return fail_with(RDEV_INVALID_PARAM, "blocks %llu out of range", blocks);
  if (!stream_arg(so, sto, &st)) return NULL;
  if (!st) return fail_with(RDEV_INVALID_PARAM, "a launch needs a stream");
  PyObject *fast = PySequence_Fast(seq, "arguments must be a sequence");
  if (!fast) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > RDEV_MAX_KERNEL_ARGS) {
    Py_DECREF(fast);
    return fail_with(RDEV_KERNEL_ARGS, "more than 8 kernel arguments");
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!to_arg(PySequence_Fast_GET_ITEM(fast, i), &a[i])) {
      Py_DECREF(fast);
      return NULL;
    }
  Py_DECREF(fast);
  CALL(so, st, NULL, rc, rdev_launch(st->h, name, (uint32_t)blocks, a, (int)n));
  return none_or_fail(rc);
}

/* ---- host functions -------------------------------------------------------------------------- */

/* fn(status) on the session's host-call thread; the call ends when fn returns. */
static void host_trampoline(rdev_host_call_t *call, void *user, int status) {
  PyObject *fn = user;
  t_host_fn = 1;
  if (Py_IsInitialized()) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *r = PyObject_CallFunction(fn, "i", status);
    if (!r) PyErr_WriteUnraisable(fn);
    Py_XDECREF(r);
    Py_DECREF(fn);
    PyGILState_Release(g);
  }
  t_host_fn = 0;
  rdev_host_call_done(call);
}

/* host_func(stream, fn): queues fn (non-blocking) to run when the stream reaches it. */
static PyObject *Session_host_func(SessionObject *so, PyObject *args) {
  PyObject *sto, *fn;
  HandleObject *st;
  use_t u;
  int rc;
  if (!PyArg_ParseTuple(args, "OO", &sto, &fn)) return NULL;
  if (!stream_arg(so, sto, &st)) return NULL;
  if (!st || !PyCallable_Check(fn)) return fail_with(RDEV_INVALID_PARAM, "host_func needs a stream and a callable");
  if (!use_begin(&u, so, st, NULL)) return NULL;
  Py_INCREF(fn); /* the trampoline's, once the call is queued */
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_launch_host_func(st->h, 0, host_trampoline, fn);
  Py_END_ALLOW_THREADS;
  use_end(&u);
  if (rc) Py_DECREF(fn);
  return none_or_fail(rc);
}

/* ---- Stream and Event methods ----------------------------------------------------------------- */

/* Runs `call` on o's handle (o->h, pinned) with the GIL released. */
#define HANDLE_CALL(o, rc_, call) CALL((o)->so, o, NULL, rc_, call)

/* Destroys the handle (a stream after its queued work) once no call uses
 * it; the object is dead from the start, whatever the result. */
static int handle_destroy(HandleObject *o) {
  if (o->dead) return RDEV_OK;
  o->dead = 1;
  while (o->busy) { /* calls in flight on other threads: they hold the GIL back soon */
    Py_BEGIN_ALLOW_THREADS;
    nap();
    Py_END_ALLOW_THREADS;
  }
  void *h = o->h;
  o->h = NULL;
  SessionObject *so = o->so;
  if (atomic_load(&so->closing) || !so->s) return RDEV_OK; /* the session's close freed it */
  int (*destroy)(void *) = Py_TYPE(o) == &StreamType ? destroy_stream : destroy_event;
  int rc = RDEV_OK, locked;
  Py_BEGIN_ALLOW_THREADS;
  locked = lock_shared(so);
  if (locked && so->s) rc = destroy(h);
  if (locked) pthread_rwlock_unlock(&so->lock);
  Py_END_ALLOW_THREADS;
  return rc;
}

static PyObject *Handle_destroy(HandleObject *o, PyObject *unused) { return none_or_fail(handle_destroy(o)); }

static void Handle_dealloc(HandleObject *o) {
  handle_destroy(o); /* no call can be in flight: each holds a reference */
  Py_DECREF(o->so);
  PyObject_Free(o);
}

static PyObject *Stream_synchronize(HandleObject *o, PyObject *args) {
  int timeout_ms = -1, rc;
  if (!PyArg_ParseTuple(args, "|i", &timeout_ms)) return NULL;
  HANDLE_CALL(o, rc, rdev_stream_synchronize_timeout(o->h, timeout_ms));
  return none_or_fail(rc);
}

static PyObject *Stream_query(HandleObject *o, PyObject *unused) {
  int done = 0, rc;
  HANDLE_CALL(o, rc, rdev_stream_query(o->h, &done));
  return rc ? fail(rc) : PyBool_FromLong(done);
}

static PyObject *Stream_abort(HandleObject *o, PyObject *unused) {
  int rc;
  HANDLE_CALL(o, rc, rdev_stream_abort(o->h));
  return none_or_fail(rc);
}

static PyObject *Stream_set_failure_mode(HandleObject *o, PyObject *arg) {
  int stop = PyObject_IsTrue(arg), rc;
  if (stop < 0) return NULL;
  HANDLE_CALL(o, rc, rdev_stream_set_failure_mode(o->h, stop));
  return none_or_fail(rc);
}

/* record(stream) and wait_on(stream): this event on a stream of its session. */
static PyObject *Event_record(HandleObject *o, PyObject *sto) {
  HandleObject *st;
  int rc;
  if (!stream_arg(o->so, sto, &st)) return NULL;
  if (!st) return fail_with(RDEV_INVALID_PARAM, "record needs a stream");
  CALL(o->so, o, st, rc, rdev_event_record(o->h, st->h));
  return none_or_fail(rc);
}

static PyObject *Event_wait_on(HandleObject *o, PyObject *sto) {
  HandleObject *st;
  int rc;
  if (!stream_arg(o->so, sto, &st)) return NULL;
  if (!st) return fail_with(RDEV_INVALID_PARAM, "wait needs a stream");
  CALL(o->so, o, st, rc, rdev_stream_wait_event(st->h, o->h));
  return none_or_fail(rc);
}

static PyObject *Event_synchronize(HandleObject *o, PyObject *args) {
  int timeout_ms = -1, rc;
  if (!PyArg_ParseTuple(args, "|i", &timeout_ms)) return NULL;
  HANDLE_CALL(o, rc, rdev_event_synchronize(o->h, timeout_ms));
  return none_or_fail(rc);
}

static PyObject *Event_query(HandleObject *o, PyObject *unused) {
  int done = 0, rc;
  HANDLE_CALL(o, rc, rdev_event_query(o->h, &done));
  return rc ? fail(rc) : PyBool_FromLong(done);
}

static PyObject *Event_timestamp(HandleObject *o, PyObject *unused) {
  uint64_t ns = 0;
  int rc;
  HANDLE_CALL(o, rc, rdev_event_timestamp(o->h, &ns));
  return rc ? fail(rc) : PyLong_FromUnsignedLongLong(ns);
}

/* elapsed_since(start): ms from start's record to this one's. */
static PyObject *Event_elapsed_since(HandleObject *o, PyObject *arg) {
  if (!PyObject_TypeCheck(arg, &EventType) || ((HandleObject *)arg)->so != o->so)
    return PyErr_Format(PyExc_TypeError, "start must be an event of the same session");
  HandleObject *start = (HandleObject *)arg;
  float ms = 0;
  int rc;
  CALL(o->so, o, start, rc, rdev_event_elapsed_ms(&ms, start->h, o->h));
  return rc ? fail(rc) : PyFloat_FromDouble(ms);
}

/* ---- types and module ------------------------------------------------------------------------ */

static PyMethodDef Session_methods[] = {
    {"close", (PyCFunction)Session_close, METH_NOARGS, "Ends the session; waits for calls in flight."},
    {"take_print", (PyCFunction)Session_take_print, METH_NOARGS, "Kernel print received since the last take."},
    {"info", (PyCFunction)Session_info, METH_NOARGS, "(version, backend, identity, device_count, max_chunk)"},
    {"kernels", (PyCFunction)Session_kernels, METH_NOARGS, "[(name, doc, ((param, type), ...)), ...]"},
    {"device_count", (PyCFunction)Session_device_count, METH_NOARGS, NULL},
    {"device_info", (PyCFunction)Session_device_info, METH_O, "(name, total_bytes, free_bytes)"},
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
    {"host_func", (PyCFunction)Session_host_func, METH_VARARGS, "host_func(stream, fn): fn(status) when reached"},
    {"stream", (PyCFunction)Session_stream, METH_NOARGS, "A new stream on the current device."},
    {"event", (PyCFunction)Session_event, METH_NOARGS, "A new event on the current device."},
    {NULL}};

static PyGetSetDef Session_getset[] = {{"closed", (getter)Session_closed, NULL, NULL, NULL}, {NULL}};

static PyTypeObject SessionType = {
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

static PyMethodDef Stream_methods[] = {
    {"synchronize", (PyCFunction)Stream_synchronize, METH_VARARGS, "synchronize(timeout_ms=-1)"},
    {"query", (PyCFunction)Stream_query, METH_NOARGS, "True when idle."},
    {"abort", (PyCFunction)Stream_abort, METH_NOARGS, NULL},
    {"set_failure_mode", (PyCFunction)Stream_set_failure_mode, METH_O, NULL},
    {"destroy", (PyCFunction)Handle_destroy, METH_NOARGS, "Waits for queued work, then destroys."},
    {NULL}};

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdev._rdev.Stream",
    .tp_basicsize = sizeof(HandleObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A device stream (Session.stream()).",
    .tp_dealloc = (destructor)Handle_dealloc,
    .tp_methods = Stream_methods,
};

static PyMethodDef Event_methods[] = {
    {"record", (PyCFunction)Event_record, METH_O, "record(stream)"},
    {"wait_on", (PyCFunction)Event_wait_on, METH_O, "wait_on(stream): the stream waits for this event"},
    {"synchronize", (PyCFunction)Event_synchronize, METH_VARARGS, "synchronize(timeout_ms=-1)"},
    {"query", (PyCFunction)Event_query, METH_NOARGS, "True when complete."},
    {"timestamp", (PyCFunction)Event_timestamp, METH_NOARGS, "ns of the device clock"},
    {"elapsed_since", (PyCFunction)Event_elapsed_since, METH_O, "ms from start's record to this one's"},
    {"destroy", (PyCFunction)Handle_destroy, METH_NOARGS, NULL},
    {NULL}};

static PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdev._rdev.Event",
    .tp_basicsize = sizeof(HandleObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A device event (Session.event()).",
    .tp_dealloc = (destructor)Handle_dealloc,
    .tp_methods = Event_methods,
};

static PyObject *mod_strerror(PyObject *m, PyObject *arg) {
  int code;
  if (!PyArg_Parse(arg, "i", &code)) return NULL;
  return PyUnicode_FromString(rdev_strerror(code));
}

/* error(code, message): the Error the extension raises for them, to raise. */
static PyObject *mod_error(PyObject *m, PyObject *args) {
  int code;
  const char *msg;
  if (!PyArg_ParseTuple(args, "is", &code, &msg)) return NULL;
  raise_error(code, msg);
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

static PyMethodDef module_methods[] = {{"strerror", mod_strerror, METH_O, "The message of a status code."},
                                       {"error", mod_error, METH_VARARGS, "error(code, message) -> Error"},
                                       {NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "rdev._rdev",      .m_doc = "rdev's C extension over rdev.h.",
    .m_size = -1,          .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__rdev(void);
PyMODINIT_FUNC PyInit__rdev(void) {
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  if (PyType_Ready(&SessionType) < 0 || PyType_Ready(&StreamType) < 0 || PyType_Ready(&EventType) < 0) goto bad;
  ErrorType = PyErr_NewExceptionWithDoc("rdev.Error", "An rdev failure: .code (CANN number) and .message.",
                                        PyExc_RuntimeError, NULL);
  if (!ErrorType || PyModule_AddObjectRef(m, "Error", ErrorType) < 0) goto bad;
  if (PyModule_AddObjectRef(m, "Session", (PyObject *)&SessionType) < 0 ||
      PyModule_AddObjectRef(m, "Stream", (PyObject *)&StreamType) < 0 ||
      PyModule_AddObjectRef(m, "Event", (PyObject *)&EventType) < 0)
    goto bad;
#define ADD_STATUS(name, code, msg) \
  if (PyModule_AddIntConstant(m, #name, code) < 0) goto bad;
  RDEV_STATUS_MAP(ADD_STATUS)
#undef ADD_STATUS
  static const struct {
    const char *name;
    int type;
  } types[] = {{"ARG_PTR", RDEV_ARG_PTR}, {"ARG_I32", RDEV_ARG_I32}, {"ARG_U32", RDEV_ARG_U32},
               {"ARG_I64", RDEV_ARG_I64}, {"ARG_U64", RDEV_ARG_U64}, {"ARG_F32", RDEV_ARG_F32},
               {"ARG_F64", RDEV_ARG_F64}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (PyModule_AddIntConstant(m, types[i].name, types[i].type) < 0) goto bad;
  return m;
bad:
  Py_DECREF(m);
  return NULL;
}
