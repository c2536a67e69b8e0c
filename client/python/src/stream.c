/*
 * client/python/src/stream.c — the Stream and Event objects of rdev._rdev
 * (HandleObject in _rdev.h): their creation (Session.stream(),
 * Session.event()), destroy while calls may be in flight on other threads,
 * their methods and types, and stream_arg, which checks the stream argument
 * of a call.
 */
#include "_rdev.h"

/* ---- Stream and Event ------------------------------------------------------------------------ */

/* The stream of an optional argument: *out NULL for None (a synchronous
 * call). 0 with an exception raised for anything but a live stream of so. */
int stream_arg(SessionObject *so, PyObject *o, HandleObject **out) {
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
    err_fail_with(RDEV_INVALID_RESOURCE_HANDLE, "the stream is destroyed");
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

PyObject *Session_stream(SessionObject *so, PyObject *unused) {
  rdev_stream_t *st = NULL;
  int rc;
  SESSION_CALL(so, rc, rdev_stream_create(so->s, &st));
  return rc ? err_fail(rc) : handle_new(&StreamType, so, st, destroy_stream);
}

PyObject *Session_event(SessionObject *so, PyObject *unused) {
  rdev_event_t *ev = NULL;
  int rc;
  SESSION_CALL(so, rc, rdev_event_create(so->s, &ev));
  return rc ? err_fail(rc) : handle_new(&EventType, so, ev, destroy_event);
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
    session_nap();
    Py_END_ALLOW_THREADS;
  }
  void *h = o->h;
  o->h = NULL;
  SessionObject *so = o->so;
  if (atomic_load(&so->closing) || !so->s) return RDEV_OK; /* the session's close freed it */
  int (*destroy)(void *) = Py_TYPE(o) == &StreamType ? destroy_stream : destroy_event;
  int rc = RDEV_OK, locked;
  Py_BEGIN_ALLOW_THREADS;
  locked = session_lock_shared(so);
  if (locked && so->s) rc = destroy(h);
  if (locked) pthread_rwlock_unlock(&so->lock);
  Py_END_ALLOW_THREADS;
  return rc;
}

static PyObject *Handle_destroy(HandleObject *o, PyObject *unused) { return err_none_or_fail(handle_destroy(o)); }

static void Handle_dealloc(HandleObject *o) {
  handle_destroy(o); /* no call can be in flight: each holds a reference */
  Py_DECREF(o->so);
  PyObject_Free(o);
}

static PyObject *Stream_synchronize(HandleObject *o, PyObject *args) {
  int timeout_ms = -1, rc;
  if (!PyArg_ParseTuple(args, "|i", &timeout_ms)) return NULL;
  HANDLE_CALL(o, rc, rdev_stream_synchronize_timeout(o->h, timeout_ms));
  return err_none_or_fail(rc);
}

static PyObject *Stream_query(HandleObject *o, PyObject *unused) {
  int done = 0, rc;
  HANDLE_CALL(o, rc, rdev_stream_query(o->h, &done));
  return rc ? err_fail(rc) : PyBool_FromLong(done);
}

static PyObject *Stream_abort(HandleObject *o, PyObject *unused) {
  int rc;
  HANDLE_CALL(o, rc, rdev_stream_abort(o->h));
  return err_none_or_fail(rc);
}

static PyObject *Stream_set_failure_mode(HandleObject *o, PyObject *arg) {
  int stop = PyObject_IsTrue(arg), rc;
  if (stop < 0) return NULL;
  HANDLE_CALL(o, rc, rdev_stream_set_failure_mode(o->h, stop));
  return err_none_or_fail(rc);
}

/* record(stream) and wait_on(stream): this event on a stream of its session. */
static PyObject *Event_record(HandleObject *o, PyObject *sto) {
  HandleObject *st;
  int rc;
  if (!stream_arg(o->so, sto, &st)) return NULL;
  if (!st) return err_fail_with(RDEV_INVALID_PARAM, "record needs a stream");
  CALL(o->so, o, st, rc, rdev_event_record(o->h, st->h));
  return err_none_or_fail(rc);
}

static PyObject *Event_wait_on(HandleObject *o, PyObject *sto) {
  HandleObject *st;
  int rc;
  if (!stream_arg(o->so, sto, &st)) return NULL;
  if (!st) return err_fail_with(RDEV_INVALID_PARAM, "wait needs a stream");
  CALL(o->so, o, st, rc, rdev_stream_wait_event(st->h, o->h));
  return err_none_or_fail(rc);
}

static PyObject *Event_synchronize(HandleObject *o, PyObject *args) {
  int timeout_ms = -1, rc;
  if (!PyArg_ParseTuple(args, "|i", &timeout_ms)) return NULL;
  HANDLE_CALL(o, rc, rdev_event_synchronize(o->h, timeout_ms));
  return err_none_or_fail(rc);
}

static PyObject *Event_query(HandleObject *o, PyObject *unused) {
  int done = 0, rc;
  HANDLE_CALL(o, rc, rdev_event_query(o->h, &done));
  return rc ? err_fail(rc) : PyBool_FromLong(done);
}

static PyObject *Event_timestamp(HandleObject *o, PyObject *unused) {
  uint64_t ns = 0;
  int rc;
  HANDLE_CALL(o, rc, rdev_event_timestamp(o->h, &ns));
  return rc ? err_fail(rc) : PyLong_FromUnsignedLongLong(ns);
}

/* elapsed_since(start): ms from start's record to this one's. */
static PyObject *Event_elapsed_since(HandleObject *o, PyObject *arg) {
  if (!PyObject_TypeCheck(arg, &EventType) || ((HandleObject *)arg)->so != o->so)
    return PyErr_Format(PyExc_TypeError, "start must be an event of the same session");
  HandleObject *start = (HandleObject *)arg;
  float ms = 0;
  int rc;
  CALL(o->so, o, start, rc, rdev_event_elapsed_ms(&ms, start->h, o->h));
  return rc ? err_fail(rc) : PyFloat_FromDouble(ms);
}

static PyMethodDef Stream_methods[] = {
    {"synchronize", (PyCFunction)Stream_synchronize, METH_VARARGS, "synchronize(timeout_ms=-1)"},
    {"query", (PyCFunction)Stream_query, METH_NOARGS, "True when idle."},
    {"abort", (PyCFunction)Stream_abort, METH_NOARGS, NULL},
    {"set_failure_mode", (PyCFunction)Stream_set_failure_mode, METH_O, NULL},
    {"destroy", (PyCFunction)Handle_destroy, METH_NOARGS, "Waits for queued work, then destroys."},
    {NULL}};

PyTypeObject StreamType = {
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

PyTypeObject EventType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdev._rdev.Event",
    .tp_basicsize = sizeof(HandleObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A device event (Session.event()).",
    .tp_dealloc = (destructor)Handle_dealloc,
    .tp_methods = Event_methods,
};
