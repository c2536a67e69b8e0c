/*
 * client/python/src/launch.c — work queued on a stream besides copies, in
 * rdev._rdev: kernel launches by name (Session.launch, arguments as
 * (type, value) pairs) and host functions (Session.host_func: a Python
 * callable the session's host-call thread runs, kept until it has run).
 */
#include "_rdev.h"

#include <stdint.h>

/* ---- kernels --------------------------------------------------------------------------------- */

/* One argument from (type, value); range-checked for its type. */
static int to_arg(PyObject *item, rdev_arg_t *a) {
  int type;
  PyObject *v;
  if (!PyArg_ParseTuple(item, "iO", &type, &v)) return 0;
  a->type = (rdev_arg_type_t)type;
  switch (type) {
    case RDEV_ARG_PTR: return mem_to_addr(v, &a->v.ptr);
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
PyObject *Session_launch(SessionObject *so, PyObject *args) {
  PyObject *sto, *seq;
  const char *name;
  unsigned long long blocks;
  HandleObject *st;
  rdev_arg_t a[RDEV_MAX_KERNEL_ARGS];
  int rc;
  if (!PyArg_ParseTuple(args, "OsKO", &sto, &name, &blocks, &seq)) return NULL;
  if (blocks == 0 || blocks > UINT32_MAX) return err_fail_with(RDEV_INVALID_PARAM, "blocks %llu out of range", blocks);
  if (!stream_arg(so, sto, &st)) return NULL;
  if (!st) return err_fail_with(RDEV_INVALID_PARAM, "a launch needs a stream");
  PyObject *fast = PySequence_Fast(seq, "arguments must be a sequence");
  if (!fast) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n > RDEV_MAX_KERNEL_ARGS) {
    Py_DECREF(fast);
    return err_fail_with(RDEV_KERNEL_ARGS, "more than 8 kernel arguments");
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!to_arg(PySequence_Fast_GET_ITEM(fast, i), &a[i])) {
      Py_DECREF(fast);
      return NULL;
    }
  Py_DECREF(fast);
  CALL(so, st, NULL, rc, rdev_launch(st->h, name, (uint32_t)blocks, a, (int)n));
  return err_none_or_fail(rc);
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

/* host_func(stream, fn, block=0): queues fn to run when the stream reaches
 * it; block nonzero: the stream's later work waits until fn returned. */
PyObject *Session_host_func(SessionObject *so, PyObject *args) {
  PyObject *sto, *fn;
  HandleObject *st;
  use_t u;
  int rc, block = 0;
  if (!PyArg_ParseTuple(args, "OO|p", &sto, &fn, &block)) return NULL;
  if (!stream_arg(so, sto, &st)) return NULL;
  if (!st || !PyCallable_Check(fn)) return err_fail_with(RDEV_INVALID_PARAM, "host_func needs a stream and a callable");
  if (!use_begin(&u, so, st, NULL)) return NULL;
  Py_INCREF(fn); /* the trampoline's, once the call is queued */
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_launch_host_func(st->h, block, host_trampoline, fn);
  Py_END_ALLOW_THREADS;
  use_end(&u);
  if (rc) Py_DECREF(fn);
  return err_none_or_fail(rc);
}
