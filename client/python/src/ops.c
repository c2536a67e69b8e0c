/*
 * client/python/src/ops.c — operators (rdev/ops.h) in rdev._rdev, through
 * one generic entry point: Session.op_launch(stream, name, args) builds an
 * rdev_op_call_t from the operator's signature (rdev_op_find) and the
 * Python value of each parameter, then calls rdev_op_launch. No operator
 * has code of its own here: the Python layer (rdev/ops.py) works out
 * shapes and types. The module's op_table() lists the signatures.
 *
 * The Python value of a parameter, by its kind:
 *   tensor        (dtype, addr, shape, strides, offset[, storage_dims]):
 *                 dtype an aclDataType number, strides and offset in elements
 *   tensor list   a sequence of tensors
 *   scalar        (dtype, value)
 *   int / bool / float array   a sequence of ints / bools / floats
 *   double, int64, int8, bool, data type   a Python number (or bool)
 *   None          a NULL pointer argument (an optional one; for any other
 *                 the library answers RDEV_OP_PARAM_NULLPTR)
 */
#include "_rdev.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/ops.h"

/* What a call's arguments point at: freed together once the call is sent. */
typedef struct {
  void *p[RDEV_OP_MAX_ARGS];
  int n;
} owned_t;

static void *own(owned_t *o, size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    PyErr_NoMemory();
    return NULL;
  }
  o->p[o->n++] = p;
  return p;
}

static void owned_free(owned_t *o) {
  for (int i = 0; i < o->n; i++) free(o->p[i]);
  o->n = 0;
}

/* A Python int into *v within [lo, hi]; 0 with an exception raised. */
static int to_int(PyObject *v, long long lo, long long hi, const char *what, long long *out) {
  if (PyFloat_Check(v)) {
    PyErr_Format(PyExc_TypeError, "%s must be an integer, not float", what);
    return 0;
  }
  PyObject *i = PyNumber_Index(v);
  if (!i) return 0;
  long long x = PyLong_AsLongLong(i);
  Py_DECREF(i);
  if (x == -1 && PyErr_Occurred()) return 0;
  if (x < lo || x > hi) {
    PyErr_Format(PyExc_OverflowError, "%s=%lld is out of range [%lld, %lld]", what, x, lo, hi);
    return 0;
  }
  *out = x;
  return 1;
}

/* Up to RDEV_OP_MAX_DIMS ints of sequence seq into v; *n gets their number. */
static int to_dims(PyObject *seq, int64_t *v, int32_t *n, const char *what) {
  PyObject *f = PySequence_Fast(seq, "a tensor's shape, strides and storage dims are sequences of ints");
  if (!f) return 0;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(f);
  if (len > RDEV_OP_MAX_DIMS) {
    Py_DECREF(f);
    PyErr_Format(PyExc_ValueError, "a tensor's %s has %zd dimensions, at most %d", what, len, RDEV_OP_MAX_DIMS);
    return 0;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    long long x;
    if (!to_int(PySequence_Fast_GET_ITEM(f, i), INT64_MIN, INT64_MAX, what, &x)) {
      Py_DECREF(f);
      return 0;
    }
    v[i] = x;
  }
  Py_DECREF(f);
  *n = (int32_t)len;
  return 1;
}

/* (dtype, addr, shape, strides, offset[, storage_dims]) into *t. */
static int to_tensor(PyObject *o, rdev_tensor_t *t) {
  PyObject *dt, *addr, *shape, *strides, *offset, *storage = NULL;
  if (!PyTuple_Check(o) || !PyArg_ParseTuple(o, "OOOOO|O", &dt, &addr, &shape, &strides, &offset, &storage)) {
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "a tensor is (dtype, addr, shape, strides, offset[, storage_dims]), not %.100s",
                   Py_TYPE(o)->tp_name);
    }
    return 0;
  }
  long long x;
  void *p;
  memset(t, 0, sizeof *t);
  if (!to_int(dt, INT32_MIN, INT32_MAX, "a tensor's dtype", &x)) return 0;
  t->dtype = (int32_t)x;
  if (!mem_to_addr(addr, &p)) return 0;
  t->addr = (uint64_t)(uintptr_t)p;
  int32_t ns;
  if (!to_dims(shape, t->dims, &t->ndim, "shape") || !to_dims(strides, t->strides, &ns, "strides")) return 0;
  if (ns != t->ndim) {
    PyErr_Format(PyExc_ValueError, "a tensor has %d dimensions and %d strides", t->ndim, ns);
    return 0;
  }
  if (!to_int(offset, INT64_MIN, INT64_MAX, "a tensor's offset", &x)) return 0;
  t->offset = x;
  if (storage && storage != Py_None && !to_dims(storage, t->storage_dims, &t->storage_ndim, "storage dims")) return 0;
  return 1;
}

/* Parameter p's Python value v into argument a. */
static int to_op_arg(const rdev_op_sig_t *sig, const rdev_op_param_t *p, PyObject *v, rdev_op_arg_t *a, owned_t *own_) {
  char what[96];
  snprintf(what, sizeof what, "%s: %s", sig->name, p->name);
  a->kind = p->kind;
  a->present = v != Py_None;
  if (!a->present) return 1;
  long long x;
  switch (p->kind) {
    case RDEV_OPK_TENSOR:
      if (!(a->v.t = own(own_, sizeof *a->v.t))) return 0;
      return to_tensor(v, a->v.t);
    case RDEV_OPK_TENSOR_LIST:
    case RDEV_OPK_INT_ARRAY:
    case RDEV_OPK_BOOL_ARRAY:
    case RDEV_OPK_FLOAT_ARRAY: {
      PyObject *f = PySequence_Fast(v, "a tensor list or an array is a sequence");
      if (!f) return 0;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
      int max = p->kind == RDEV_OPK_TENSOR_LIST ? RDEV_OP_MAX_LIST : RDEV_OP_MAX_ARRAY;
      size_t esz = p->kind == RDEV_OPK_TENSOR_LIST  ? sizeof(rdev_tensor_t)
                   : p->kind == RDEV_OPK_INT_ARRAY  ? sizeof(int64_t)
                   : p->kind == RDEV_OPK_BOOL_ARRAY ? sizeof(uint8_t)
                                                    : sizeof(float);
      void *mem = n <= max ? own(own_, esz * (size_t)n) : NULL;
      int ok = mem != NULL;
      if (n > max) PyErr_Format(PyExc_ValueError, "%s has %zd elements, at most %d", what, n, max);
      for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *e = PySequence_Fast_GET_ITEM(f, i);
        if (p->kind == RDEV_OPK_TENSOR_LIST) {
          ok = to_tensor(e, &((rdev_tensor_t *)mem)[i]);
        } else if (p->kind == RDEV_OPK_INT_ARRAY) {
          ok = to_int(e, INT64_MIN, INT64_MAX, what, &x);
          ((int64_t *)mem)[i] = x;
        } else if (p->kind == RDEV_OPK_BOOL_ARRAY) {
          int b = PyObject_IsTrue(e);
          ok = b >= 0;
          ((uint8_t *)mem)[i] = (uint8_t)(b > 0);
        } else {
          double d = PyFloat_AsDouble(e);
          ok = !(d == -1.0 && PyErr_Occurred());
          ((float *)mem)[i] = (float)d;
        }
      }
      Py_DECREF(f);
      if (!ok) return 0;
      a->n = (uint32_t)n;
      if (p->kind == RDEV_OPK_TENSOR_LIST)
        a->v.t = mem;
      else if (p->kind == RDEV_OPK_INT_ARRAY)
        a->v.ints = mem;
      else if (p->kind == RDEV_OPK_BOOL_ARRAY)
        a->v.bools = mem;
      else
        a->v.floats = mem;
      return 1;
    }
    case RDEV_OPK_SCALAR: {
      PyObject *dt, *val;
      if (!PyTuple_Check(v) || !PyArg_ParseTuple(v, "OO", &dt, &val)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: a scalar is (dtype, value)", what);
        return 0;
      }
      if (!to_int(dt, INT32_MIN, INT32_MAX, what, &x)) return 0;
      a->v.scalar.dtype = (int32_t)x;
      switch (x) {
        case RDEV_DT_FLOAT:
        case RDEV_DT_FLOAT16:
        case RDEV_DT_BF16:
        case RDEV_DT_DOUBLE: a->v.scalar.v.f = PyFloat_AsDouble(val); return !PyErr_Occurred();
        case RDEV_DT_UINT64: {
          PyObject *i = PyNumber_Index(val);
          if (!i) return 0;
          a->v.scalar.v.u = PyLong_AsUnsignedLongLong(i);
          Py_DECREF(i);
          return !PyErr_Occurred();
        }
        case RDEV_DT_BOOL: {
          int b = PyObject_IsTrue(val);
          a->v.scalar.v.i = b > 0;
          return b >= 0;
        }
        default:
          if (!to_int(val, INT64_MIN, INT64_MAX, what, &x)) return 0;
          a->v.scalar.v.i = x;
          return 1;
      }
    }
    case RDEV_OPK_DOUBLE: a->v.f64 = PyFloat_AsDouble(v); return !PyErr_Occurred();
    case RDEV_OPK_INT64:
      if (!to_int(v, INT64_MIN, INT64_MAX, what, &x)) return 0;
      a->v.i64 = x;
      return 1;
    case RDEV_OPK_INT8:
      if (!to_int(v, INT8_MIN, INT8_MAX, what, &x)) return 0;
      a->v.i64 = x;
      return 1;
    case RDEV_OPK_BOOL: {
      int b = PyObject_IsTrue(v);
      a->v.i64 = b > 0;
      return b >= 0;
    }
    case RDEV_OPK_DTYPE:
      if (!to_int(v, INT32_MIN, INT32_MAX, what, &x)) return 0;
      a->v.dtype = (int32_t)x;
      return 1;
    default: PyErr_Format(PyExc_ValueError, "%s has a kind (%d) this extension does not know", what, p->kind); return 0;
  }
}

/* op_launch(stream, name, args): args one Python value per parameter. */
PyObject *Session_op_launch(SessionObject *so, PyObject *args) {
  PyObject *sto, *seq;
  const char *name;
  HandleObject *st;
  if (!PyArg_ParseTuple(args, "OsO", &sto, &name, &seq)) return NULL;
  const rdev_op_sig_t *sig = rdev_op_find(name);
  if (!sig) return err_fail_with(RDEV_UNKNOWN_KERNEL, "operator %s is unknown", name);
  if (!stream_arg(so, sto, &st)) return NULL;
  if (!st) return err_fail_with(RDEV_INVALID_PARAM, "an operator needs a stream");
  PyObject *fast = PySequence_Fast(seq, "an operator's arguments are a sequence");
  if (!fast) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n != sig->nparams) {
    Py_DECREF(fast);
    PyErr_Format(PyExc_TypeError, "aclnn%s takes %d arguments, %zd given", sig->name, sig->nparams, n);
    return NULL;
  }
  int count;
  const rdev_op_sig_t *tab = rdev_op_table(&count);
  rdev_op_call_t c;
  memset(&c, 0, sizeof c);
  c.op = (int)(sig - tab);
  c.nargs = sig->nparams;
  owned_t o = {.n = 0};
  for (Py_ssize_t i = 0; i < n; i++)
    if (!to_op_arg(sig, &sig->params[i], PySequence_Fast_GET_ITEM(fast, i), &c.args[i], &o)) {
      Py_DECREF(fast);
      owned_free(&o);
      return NULL;
    }
  Py_DECREF(fast);
  int rc;
  use_t u;
  if (!use_begin(&u, so, st, NULL)) {
    owned_free(&o);
    return NULL;
  }
  Py_BEGIN_ALLOW_THREADS;
  rc = rdev_op_launch(st->h, &c);
  Py_END_ALLOW_THREADS;
  use_end(&u);
  owned_free(&o);
  return err_none_or_fail(rc);
}

/* op_table() -> [(name, ((param, kind, flags), ...)), ...] in ops.def's order. */
PyObject *mod_op_table(PyObject *m, PyObject *unused) {
  int count;
  const rdev_op_sig_t *tab = rdev_op_table(&count);
  PyObject *list = PyList_New(count);
  if (!list) return NULL;
  for (int i = 0; i < count; i++) {
    PyObject *params = PyTuple_New(tab[i].nparams);
    if (!params) goto bad;
    for (int k = 0; k < tab[i].nparams; k++) {
      const rdev_op_param_t *p = &tab[i].params[k];
      PyObject *t = Py_BuildValue("(sii)", p->name, (int)p->kind, (int)p->flags);
      if (!t) {
        Py_DECREF(params);
        goto bad;
      }
      PyTuple_SET_ITEM(params, k, t);
    }
    PyObject *e = Py_BuildValue("(sN)", tab[i].name, params);
    if (!e) goto bad;
    PyList_SET_ITEM(list, i, e);
  }
  return list;
bad:
  Py_DECREF(list);
  return NULL;
}
