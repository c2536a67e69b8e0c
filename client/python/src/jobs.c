/*
 * client/python/src/jobs.c — the Jobs object of rdev._rdev: a jobs
 * connection (rdev/job.h) and its calls, each with the GIL released:
 * submit a spec's text (parsed by the `rdev` tool's own reader,
 * rdev_cli_job_parse of client/cli/job_yaml.c, asking the server for the
 * kernels' signatures only when a bare number needs them), get, cancel,
 * list, watch (a Python callable per status) and fetch (a callable per
 * chunk). Job statuses cross as dicts. Also the module function
 * job_parse, which checks a spec without a server.
 *
 * Owns the connection's lifetime: calls count themselves in flight, and
 * close() interrupts a watch or fetch in flight, waits for the calls, then
 * closes (rdev_jobs_close wants no call in progress).
 */
#include <stdlib.h>
#include <string.h>

#include "_rdev.h"
#include "job_yaml.h"
#include "rdev/job.h"

typedef struct {
  PyObject_HEAD rdev_jobs_t *j; /* NULL once closed */
  atomic_int busy;              /* calls in flight */
  atomic_int closing;
} JobsObject;

/* ---- statuses as dicts ------------------------------------------------------------------------ */

static PyObject *str_of(const char *s) { return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace"); }

/* Sets d[key] = v, stealing v; 0 with an exception raised on failure. */
static int put(PyObject *d, const char *key, PyObject *v) {
  if (!v) return 0;
  int rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc == 0;
}

/* A JobStatus as a dict: id, name, tenant, state (its name), failed_at,
 * code, message, the progress counters, the times (Unix ms), hooks and
 * kept (lists of dicts). */
static PyObject *status_dict(const rdev_v1_JobStatus *st) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  int ok = put(d, "id", str_of(st->id)) && put(d, "name", str_of(st->name)) && put(d, "tenant", str_of(st->tenant)) &&
           put(d, "state", PyUnicode_FromString(rdev_job_state_name(st->state))) &&
           put(d, "failed_at", str_of(st->failed_at)) && put(d, "code", PyLong_FromLong(st->code)) &&
           put(d, "message", str_of(st->message)) &&
           put(d, "fetched_bytes", PyLong_FromUnsignedLongLong(st->fetched_bytes)) &&
           put(d, "fetch_total", PyLong_FromUnsignedLongLong(st->fetch_total)) &&
           put(d, "steps_done", PyLong_FromUnsignedLong(st->steps_done)) &&
           put(d, "steps_total", PyLong_FromUnsignedLong(st->steps_total)) &&
           put(d, "delivered_bytes", PyLong_FromUnsignedLongLong(st->delivered_bytes)) &&
           put(d, "deliver_total", PyLong_FromUnsignedLongLong(st->deliver_total)) &&
           put(d, "submitted_ms", PyLong_FromLongLong(st->submitted_ms)) &&
           put(d, "started_ms", PyLong_FromLongLong(st->started_ms)) &&
           put(d, "finished_ms", PyLong_FromLongLong(st->finished_ms));
  PyObject *hooks = ok ? PyList_New(0) : NULL, *kept = ok ? PyList_New(0) : NULL;
  ok = ok && hooks && kept;
  for (pb_size_t i = 0; ok && i < st->hooks_count; i++) {
    const rdev_v1_JobHook *h = &st->hooks[i];
    PyObject *e = PyDict_New();
    ok = e && put(e, "state", PyUnicode_FromString(rdev_job_state_name(h->state))) &&
         put(e, "delivered", PyBool_FromLong(h->delivered)) && put(e, "http_status", PyLong_FromLong(h->http_status)) &&
         put(e, "attempts", PyLong_FromUnsignedLong(h->attempts)) && put(e, "at_ms", PyLong_FromLongLong(h->at_ms)) &&
         put(e, "error", str_of(h->error)) && PyList_Append(hooks, e) == 0;
    Py_XDECREF(e);
  }
  for (pb_size_t i = 0; ok && i < st->kept_count; i++) {
    const rdev_v1_JobKept *k = &st->kept[i];
    PyObject *e = PyDict_New();
    ok = e && put(e, "name", str_of(k->name)) && put(e, "bytes", PyLong_FromUnsignedLongLong(k->bytes)) &&
         put(e, "expires_ms", PyLong_FromLongLong(k->expires_ms)) && PyList_Append(kept, e) == 0;
    Py_XDECREF(e);
  }
  if (ok) {
    ok = PyDict_SetItemString(d, "hooks", hooks) == 0 && PyDict_SetItemString(d, "kept", kept) == 0;
  }
  Py_XDECREF(hooks);
  Py_XDECREF(kept);
  if (!ok) Py_CLEAR(d);
  return d;
}

/* ---- the connection and its calls ------------------------------------------------------------- */

/* Begins a call: 0 with Error raised when the connection is closed. */
static int jobs_begin(JobsObject *o) {
  if (!o->j || atomic_load(&o->closing)) {
    err_fail_with(RDEV_INVALID_PARAM, "the jobs connection is closed");
    return 0;
  }
  atomic_fetch_add(&o->busy, 1);
  return 1;
}

static void jobs_end(JobsObject *o) { atomic_fetch_sub(&o->busy, 1); }

/* Runs `call` with the GIL released, counted in flight; rc_ its status. */
#define JOBS_CALL(o, rc_, call) \
  do { \
    if (!jobs_begin(o)) return NULL; \
    Py_BEGIN_ALLOW_THREADS; \
    rc_ = call; \
    Py_END_ALLOW_THREADS; \
    jobs_end(o); \
  } while (0)

static int Jobs_init(JobsObject *o, PyObject *args, PyObject *kw) {
  const char *target;
  rdev_options_t opt;
  if (o->j || atomic_load(&o->closing)) {
    PyErr_SetString(PyExc_RuntimeError, "Jobs.__init__ called twice");
    return -1;
  }
  if (connect_args(args, kw, &target, &opt)) return -1;
  rdev_jobs_t *j = NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_jobs_open(target, &opt, &j);
  Py_END_ALLOW_THREADS;
  if (rc) {
    err_fail(rc);
    return -1;
  }
  o->j = j;
  return 0;
}

/* Closes: a watch or fetch in flight is interrupted (it ends within
 * 200 ms), the calls in flight are waited for, then the connection goes. */
static void jobs_close(JobsObject *o) {
  if (!o->j || atomic_exchange(&o->closing, 1)) return;
  rdev_jobs_t *j = o->j;
  rdev_jobs_interrupt(j);
  Py_BEGIN_ALLOW_THREADS;
  while (atomic_load(&o->busy)) session_nap();
  rdev_jobs_close(j);
  Py_END_ALLOW_THREADS;
  o->j = NULL;
}

static PyObject *Jobs_close(JobsObject *o, PyObject *unused) {
  jobs_close(o);
  Py_RETURN_NONE;
}

static void Jobs_dealloc(JobsObject *o) {
  jobs_close(o);
  Py_TYPE(o)->tp_free((PyObject *)o);
}

/* interrupt(): a watch or fetch in flight (and every later one) on this
 * connection ends within 200 ms with RDEV_CANCELLED. Needs no GIL of the
 * call it ends. */
static PyObject *Jobs_interrupt(JobsObject *o, PyObject *unused) {
  if (o->j) rdev_jobs_interrupt(o->j);
  Py_RETURN_NONE;
}

static PyObject *Jobs_closed(JobsObject *o, void *unused) { return PyBool_FromLong(!o->j || atomic_load(&o->closing)); }

/* Parses text into *spec with the tool's reader, asking the server (j, may
 * be NULL: then a spec that needs the signatures passes unchecked) for the
 * kernels' signatures when a bare number needs them. 0, or -1 with Error
 * raised. GIL released inside. */
static int parse_spec(JobsObject *o, const char *text, size_t len, rdev_v1_JobSpec *spec, int *unparsed) {
  char err[512] = "";
  int rc;
  *unparsed = 0;
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_cli_job_parse(text, len, NULL, spec, err, sizeof err);
  Py_END_ALLOW_THREADS;
  if (rc == RDEV_CLI_JOB_NEED_KERNELS && !o) {
    *unparsed = 1;
    return 0;
  }
  if (rc == RDEV_CLI_JOB_NEED_KERNELS) {
    rdev_v1_InfoReply *info = malloc(sizeof *info);
    if (!info) {
      PyErr_NoMemory();
      return -1;
    }
    int irc = RDEV_OK;
    if (!jobs_begin(o)) {
      free(info);
      return -1;
    }
    Py_BEGIN_ALLOW_THREADS;
    irc = rdev_jobs_info(o->j, info);
    if (!irc) rc = rdev_cli_job_parse(text, len, info, spec, err, sizeof err);
    Py_END_ALLOW_THREADS;
    jobs_end(o);
    free(info);
    if (irc) {
      err_fail(irc);
      return -1;
    }
  }
  if (rc) {
    err_fail_with(RDEV_INVALID_PARAM, "job spec: %s", err);
    return -1;
  }
  return 0;
}

/* submit(text) -> (id, secret, status): the spec text (YAML or JSON) parsed
 * as `rdev job submit` parses it, then queued. */
static PyObject *Jobs_submit(JobsObject *o, PyObject *arg) {
  Py_buffer b;
  if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
  rdev_v1_JobSpec *spec = calloc(1, sizeof *spec);
  rdev_v1_SubmitJobReply *rep = calloc(1, sizeof *rep);
  PyObject *result = NULL;
  int unparsed, rc;
  if (!spec || !rep) {
    PyErr_NoMemory();
  } else if (!jobs_begin(o)) { /* a closed connection fails before the spec is read */
  } else {
    jobs_end(o);
    if (parse_spec(o, b.buf, (size_t)b.len, spec, &unparsed) == 0) {
      if (jobs_begin(o)) {
        Py_BEGIN_ALLOW_THREADS;
        rc = rdev_job_submit(o->j, spec, rep);
        Py_END_ALLOW_THREADS;
        jobs_end(o);
        if (rc)
          err_fail(rc);
        else
          result = Py_BuildValue("(NNN)", str_of(rep->id), str_of(rep->secret), status_dict(&rep->status));
      }
      rdev_cli_job_free(spec);
    }
  }
  PyBuffer_Release(&b);
  free(spec);
  free(rep);
  return result;
}

/* get(id) and cancel(id) -> status dict. */
static PyObject *status_call(JobsObject *o, PyObject *arg,
                             int (*fn)(rdev_jobs_t *, const char *, rdev_v1_JobStatus *)) {
  const char *id = PyUnicode_AsUTF8(arg);
  if (!id) return NULL;
  rdev_v1_JobStatus *st = malloc(sizeof *st);
  if (!st) return PyErr_NoMemory();
  int rc;
  if (!jobs_begin(o)) {
    free(st);
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS;
  rc = fn(o->j, id, st);
  Py_END_ALLOW_THREADS;
  jobs_end(o);
  PyObject *r = rc ? err_fail(rc) : status_dict(st);
  free(st);
  return r;
}

static PyObject *Jobs_get(JobsObject *o, PyObject *arg) { return status_call(o, arg, rdev_job_get); }
static PyObject *Jobs_cancel(JobsObject *o, PyObject *arg) { return status_call(o, arg, rdev_job_cancel); }

/* list() -> [status dict, ...], newest first. */
static PyObject *Jobs_list(JobsObject *o, PyObject *unused) {
  rdev_v1_ListJobsReply rep;
  int rc;
  JOBS_CALL(o, rc, rdev_job_list(o->j, &rep));
  PyObject *list = rc ? err_fail(rc) : PyList_New(0);
  for (pb_size_t i = 0; list && i < rep.jobs_count; i++) {
    PyObject *d = status_dict(&rep.jobs[i]);
    if (!d || PyList_Append(list, d) < 0) Py_CLEAR(list);
    Py_XDECREF(d);
  }
  pb_release(rdev_v1_ListJobsReply_fields, &rep);
  return list;
}

/* What a watch's or fetch's callback trampoline shares with its call. */
typedef struct {
  PyObject *fn;
  int failed; /* fn raised: the exception is kept here until the call returns */
  PyObject *type, *value, *tb;
} callback_t;

#define CALLBACK_STOP 1 /* a trampoline's value when fn raised (no rdev status is 1) */

/* Calls fn(*args) under the GIL, stealing args (NULL: building them
 * failed); CALLBACK_STOP when it raised. */
static int callback_call(callback_t *cb, PyObject *args) {
  PyObject *r = args ? PyObject_CallObject(cb->fn, args) : NULL;
  Py_XDECREF(args);
  if (r) {
    Py_DECREF(r);
    return 0;
  }
  cb->failed = 1;
  PyErr_Fetch(&cb->type, &cb->value, &cb->tb);
  return CALLBACK_STOP;
}

/* Raises what fn raised; NULL. */
static PyObject *callback_raise(callback_t *cb) {
  PyErr_Restore(cb->type, cb->value, cb->tb);
  return NULL;
}

static int on_status(void *user, const rdev_v1_JobStatus *st) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *d = status_dict(st);
  int rc = callback_call(user, d ? Py_BuildValue("(N)", d) : NULL);
  PyGILState_Release(g);
  return rc;
}

/* watch(id, fn, reconnect_ms=60000): fn(status dict) now and on each
 * change until the job is final; an exception of fn ends the watch and is
 * raised. */
static PyObject *Jobs_watch(JobsObject *o, PyObject *args) {
  const char *id;
  long long reconnect_ms = RDEV_JOB_WATCH_RECONNECT_MS;
  callback_t cb = {0};
  if (!PyArg_ParseTuple(args, "sO|L", &id, &cb.fn, &reconnect_ms)) return NULL;
  int rc;
  JOBS_CALL(o, rc, rdev_job_watch_within(o->j, id, reconnect_ms, on_status, &cb));
  if (cb.failed) return callback_raise(&cb);
  return err_none_or_fail(rc);
}

static int on_chunk(void *user, const void *data, size_t len, uint64_t total) {
  PyGILState_STATE g = PyGILState_Ensure();
  callback_t *cb = user;
  PyObject *bytes = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
  int rc = callback_call(cb, bytes ? Py_BuildValue("(NK)", bytes, (unsigned long long)total) : NULL);
  PyGILState_Release(g);
  return rc;
}

/* fetch(id, output, fn): fn(chunk bytes, total) for each chunk in order
 * (none for an empty output); an exception of fn ends it and is raised. */
static PyObject *Jobs_fetch(JobsObject *o, PyObject *args) {
  const char *id, *output;
  callback_t cb = {0};
  if (!PyArg_ParseTuple(args, "ssO", &id, &output, &cb.fn)) return NULL;
  int rc;
  JOBS_CALL(o, rc, rdev_job_fetch(o->j, id, output, on_chunk, &cb));
  if (cb.failed) return callback_raise(&cb);
  return err_none_or_fail(rc);
}

/* ---- the module's job_parse ------------------------------------------------------------------- */

/* job_parse(text) -> bool: checks a spec's text with the tool's reader, no
 * server asked; True when it is whole, False when only the server's kernel
 * signatures can type a bare number in it. Error (INVALID_PARAM) names the
 * first problem. */
PyObject *mod_job_parse(PyObject *m, PyObject *arg) {
  Py_buffer b;
  if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
  rdev_v1_JobSpec *spec = calloc(1, sizeof *spec);
  PyObject *r = NULL;
  int unparsed;
  if (!spec) {
    PyErr_NoMemory();
  } else if (parse_spec(NULL, b.buf, (size_t)b.len, spec, &unparsed) == 0) {
    if (!unparsed) rdev_cli_job_free(spec);
    r = PyBool_FromLong(!unparsed);
  }
  free(spec);
  PyBuffer_Release(&b);
  return r;
}

/* ---- the type --------------------------------------------------------------------------------- */

static PyMethodDef Jobs_methods[] = {
    {"submit", (PyCFunction)Jobs_submit, METH_O, "submit(spec_text) -> (id, secret, status)"},
    {"get", (PyCFunction)Jobs_get, METH_O, "get(id) -> status"},
    {"cancel", (PyCFunction)Jobs_cancel, METH_O, "cancel(id) -> final status"},
    {"list", (PyCFunction)Jobs_list, METH_NOARGS, "list() -> [status, ...], newest first"},
    {"watch", (PyCFunction)Jobs_watch, METH_VARARGS, "watch(id, fn, reconnect_ms=60000): fn(status) per change"},
    {"fetch", (PyCFunction)Jobs_fetch, METH_VARARGS, "fetch(id, output, fn): fn(chunk, total) per chunk"},
    {"interrupt", (PyCFunction)Jobs_interrupt, METH_NOARGS, "Ends a watch or fetch in flight, and later ones."},
    {"close", (PyCFunction)Jobs_close, METH_NOARGS, "Interrupts, waits for calls in flight, closes."},
    {NULL}};

static PyGetSetDef Jobs_getset[] = {{"closed", (getter)Jobs_closed, NULL, NULL, NULL}, {NULL}};

PyTypeObject JobsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rdev._rdev.Jobs",
    .tp_basicsize = sizeof(JobsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Jobs(target, token=None, ca=None, cert=None, key=None, timeout_ms=0): a jobs connection to rdevd.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Jobs_init,
    .tp_dealloc = (destructor)Jobs_dealloc,
    .tp_methods = Jobs_methods,
    .tp_getset = Jobs_getset,
};
