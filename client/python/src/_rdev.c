/*
 * client/python/src/_rdev.c — rdev._rdev, the C extension under the rdev
 * Python package: Session, Stream and Event objects over rdev.h, one call
 * each. Copies take any object with the buffer protocol; every call that
 * can wait for the server releases the GIL. Failures raise
 * _rdev.Error(text) with .code (the CANN number) and .message.
 *
 * Jobs (jobs.c) is a jobs connection: detached jobs, their specs read by
 * the `rdev` tool's own reader.
 *
 * This file owns the module: its function table, its constants (status
 * codes, argument types, operator argument kinds and flags), the type
 * rdev.Error and the err_* functions that raise it. The objects live in
 * the other files of src/ (see _rdev.h).
 */
#include "_rdev.h"

#include "rdev/ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
PyObject *err_fail(int rc) { return raise_error(rc, rdev_session_last_error()); }

/* _rdev.Error for rc with a message of this extension's. */
PyObject *err_fail_with(int rc, const char *fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return raise_error(rc, msg);
}

/* None, or Error for rc. */
PyObject *err_none_or_fail(int rc) {
  if (rc) return err_fail(rc);
  Py_RETURN_NONE;
}

/* ---- module ---------------------------------------------------------------------------------- */

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
                                       {"job_parse", mod_job_parse, METH_O, "job_parse(text) -> bool"},
                                       {"op_table", mod_op_table, METH_NOARGS, "op_table() -> [(name, params)]"},
                                       {NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "rdev._rdev",      .m_doc = "rdev's C extension over rdev.h.",
    .m_size = -1,          .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__rdev(void);
PyMODINIT_FUNC PyInit__rdev(void) {
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  if (PyType_Ready(&SessionType) < 0 || PyType_Ready(&StreamType) < 0 || PyType_Ready(&EventType) < 0 ||
      PyType_Ready(&JobsType) < 0)
    goto bad;
  ErrorType = PyErr_NewExceptionWithDoc("rdev.Error", "An rdev failure: .code (CANN number) and .message.",
                                        PyExc_RuntimeError, NULL);
  if (!ErrorType || PyModule_AddObjectRef(m, "Error", ErrorType) < 0) goto bad;
  if (PyModule_AddObjectRef(m, "Session", (PyObject *)&SessionType) < 0 ||
      PyModule_AddObjectRef(m, "Stream", (PyObject *)&StreamType) < 0 ||
      PyModule_AddObjectRef(m, "Event", (PyObject *)&EventType) < 0 ||
      PyModule_AddObjectRef(m, "Jobs", (PyObject *)&JobsType) < 0)
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
  static const struct {
    const char *name;
    int v;
  } opk[] = {{"OPK_TENSOR", RDEV_OPK_TENSOR},
             {"OPK_TENSOR_LIST", RDEV_OPK_TENSOR_LIST},
             {"OPK_SCALAR", RDEV_OPK_SCALAR},
             {"OPK_INT_ARRAY", RDEV_OPK_INT_ARRAY},
             {"OPK_BOOL_ARRAY", RDEV_OPK_BOOL_ARRAY},
             {"OPK_FLOAT_ARRAY", RDEV_OPK_FLOAT_ARRAY},
             {"OPK_DOUBLE", RDEV_OPK_DOUBLE},
             {"OPK_INT64", RDEV_OPK_INT64},
             {"OPK_INT8", RDEV_OPK_INT8},
             {"OPK_BOOL", RDEV_OPK_BOOL},
             {"OPK_DTYPE", RDEV_OPK_DTYPE},
             {"OPF_OUT", RDEV_OPF_OUT},
             {"OPF_IN", RDEV_OPF_IN},
             {"OPF_OPT", RDEV_OPF_OPT}};
  for (size_t i = 0; i < sizeof opk / sizeof opk[0]; i++)
    if (PyModule_AddIntConstant(m, opk[i].name, opk[i].v) < 0) goto bad;
  return m;
bad:
  Py_DECREF(m);
  return NULL;
}

static const char *opt_str(PyObject *o) { return o && o != Py_None ? PyUnicode_AsUTF8(o) : NULL; }

int connect_args(PyObject *args, PyObject *kw, const char **target, rdev_options_t *opt) {
  static char *kwlist[] = {"target", "token", "ca", "cert", "key", "timeout_ms", "keepalive_ms", "resume_ms", NULL};
  PyObject *token = NULL, *ca = NULL, *cert = NULL, *key = NULL;
  long long timeout_ms = 0, keepalive_ms = 0, resume_ms = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OOOOLLL", kwlist, target, &token, &ca, &cert, &key, &timeout_ms,
                                   &keepalive_ms, &resume_ms))
    return -1;
  *opt = (rdev_options_t){.connect_timeout_ms = timeout_ms, .keepalive_ms = keepalive_ms, .resume_ms = resume_ms};
  opt->token = opt_str(token);
  opt->ca_file = opt_str(ca);
  opt->cert_file = opt_str(cert);
  opt->key_file = opt_str(key);
  return PyErr_Occurred() ? -1 : 0;
}
