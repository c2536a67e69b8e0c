/*
 * client/python/src/memory.c — device memory and copies of rdev._rdev:
 * Session.malloc/free, and write, read, copy and memset, synchronous or
 * queued on a stream; device addresses as Python ints (mem_to_addr).
 * Copies take any object with the buffer protocol. Buffer lifetime for
 * queued (stream) work is the caller's: the Python layer keeps the objects
 * until the stream is synchronized.
 */
#include "_rdev.h"

#include <stdint.h>

/* ---- device memory --------------------------------------------------------------------------- */

/* Device addresses cross as Python ints. */
int mem_to_addr(PyObject *o, void *out) {
  PyObject *i = PyNumber_Index(o); /* numpy integers too, never floats */
  if (!i) return 0;
  unsigned long long v = PyLong_AsUnsignedLongLong(i);
  Py_DECREF(i);
  if (v == (unsigned long long)-1 && PyErr_Occurred()) return 0;
  *(void **)out = (void *)(uintptr_t)v;
  return 1;
}

PyObject *Session_malloc(SessionObject *so, PyObject *args) {
  Py_ssize_t size;
  int policy = 0, rc;
  if (!PyArg_ParseTuple(args, "n|i", &size, &policy)) return NULL;
  if (size <= 0) return err_fail_with(RDEV_INVALID_PARAM, "size must be positive");
  void *p = NULL;
  SESSION_CALL(so, rc, rdev_malloc(so->s, &p, (size_t)size, (rdev_mem_policy_t)policy));
  return rc ? err_fail(rc) : PyLong_FromUnsignedLongLong((uintptr_t)p);
}

PyObject *Session_free(SessionObject *so, PyObject *arg) {
  void *p;
  int rc;
  if (!mem_to_addr(arg, &p)) return NULL;
  SESSION_CALL(so, rc, rdev_free(so->s, p));
  return err_none_or_fail(rc);
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
  return err_none_or_fail(rc);
}

/* write(dptr, buffer, stream=None): host to device. */
PyObject *Session_write(SessionObject *so, PyObject *args) {
  void *dptr;
  Py_buffer b;
  PyObject *sto = Py_None;
  if (!PyArg_ParseTuple(args, "O&y*|O", mem_to_addr, &dptr, &b, &sto)) return NULL;
  return host_copy(so, dptr, &b, sto, RDEV_MEMCPY_HOST_TO_DEVICE);
}

/* read(buffer, dptr, stream=None): device to host into a writable buffer. */
PyObject *Session_read(SessionObject *so, PyObject *args) {
  void *dptr;
  Py_buffer b;
  PyObject *sto = Py_None;
  if (!PyArg_ParseTuple(args, "w*O&|O", &b, mem_to_addr, &dptr, &sto)) return NULL;
  return host_copy(so, dptr, &b, sto, RDEV_MEMCPY_DEVICE_TO_HOST);
}

/* copy(dst, src, count, stream=None): device to device. */
PyObject *Session_copy(SessionObject *so, PyObject *args) {
  void *dst, *src;
  Py_ssize_t n;
  PyObject *sto = Py_None;
  HandleObject *st;
  int rc;
  if (!PyArg_ParseTuple(args, "O&O&n|O", mem_to_addr, &dst, mem_to_addr, &src, &n, &sto)) return NULL;
  if (n < 0) return err_fail_with(RDEV_INVALID_PARAM, "count is negative");
  if (!stream_arg(so, sto, &st)) return NULL;
  size_t c = (size_t)n;
  CALL(so, st, NULL, rc,
       st ? rdev_memcpy_async(so->s, dst, c, src, c, RDEV_MEMCPY_DEVICE_TO_DEVICE, st->h)
          : rdev_memcpy(so->s, dst, c, src, c, RDEV_MEMCPY_DEVICE_TO_DEVICE));
  return err_none_or_fail(rc);
}

/* memset(dptr, value, count, stream=None). */
PyObject *Session_memset(SessionObject *so, PyObject *args) {
  void *dptr;
  int value, rc;
  Py_ssize_t n;
  PyObject *sto = Py_None;
  HandleObject *st;
  if (!PyArg_ParseTuple(args, "O&in|O", mem_to_addr, &dptr, &value, &n, &sto)) return NULL;
  if (n < 0) return err_fail_with(RDEV_INVALID_PARAM, "count is negative");
  if (!stream_arg(so, sto, &st)) return NULL;
  size_t c = (size_t)n;
  CALL(so, st, NULL, rc,
       st ? rdev_memset_async(so->s, dptr, c, value, c, st->h) : rdev_memset(so->s, dptr, c, value, c));
  return err_none_or_fail(rc);
}
