/*
 * tests/bench/rdev_bench/clients.h — rdev's other two clients, measured
 * next to the C API in the copies phase: the ACL library (aclrtMemcpy
 * through libascendcl.so, in this process, with its own session:
 * client_acl.c) and the Python package (d.set(a), d.get(out=a) of the `rdev`
 * package, in a python3 child process driven line by line over a pipe:
 * client_py.c, py_peer.py); and in the operators phase, the same two
 * clients' operators: CANN's operator library (aclnn, libopapi.so on the
 * ACL library's session: client_aclnn.c) and the package's rdev.ops (the
 * same child). Like the baselines (baseline.h), each call returns 0, or -1
 * with the reason in bl_error(); the interface exposes no ACL or Python
 * types.
 */
#ifndef RDEV_BENCH_CLIENTS_H
#define RDEV_BENCH_CLIENTS_H

#include <stddef.h>
#include <stdint.h>

#include "oper.h"

/* ---- the ACL library (client_acl.c) ---------------------------------------------------- */

typedef struct cl_acl cl_acl_t;

/* Sets RDEV_TARGET to addr in this process, aclInit (which opens the ACL
 * library's session with it), aclrtSetDevice(0), one device buffer of
 * max_size bytes (aclrtMalloc), and two host buffers of max_size from plain
 * malloc, every page touched. */
int cl_acl_open(cl_acl_t **out, const char *addr, size_t max_size);
/* One sample: k x aclrtMemcpy of size bytes, host to device (h2d 1) from the
 * source buffer, or device to host into the destination buffer. */
int cl_acl_copy(cl_acl_t *a, int h2d, size_t size, long k, double *secs);
/* H2D of a pattern (seed) into device memory set to 0xa5 before, then D2H
 * into a host buffer set to 0x5a; -1 naming the first differing byte. */
int cl_acl_verify(cl_acl_t *a, size_t size, uint64_t seed);
/* Frees, resets the device, aclFinalize (the session ends). 0 when all did. */
int cl_acl_close(cl_acl_t *a);

/* ---- the operator library, aclnn (client_aclnn.c) --------------------------------------- */

typedef struct cl_aclnn cl_aclnn_t;

/* After cl_acl_open (its aclInit and device): a stream (aclrtCreateStream),
 * the device buffers of shape s's problems (oper.h) with the inputs
 * uploaded, their tensors (aclCreateTensor) and Add's alpha (1.0). */
int cl_aclnn_open(cl_aclnn_t **out, const oper_shape_t *s);
/* Runs problem p (OPER_ADD, OPER_MATMUL) once: 1 when it ran; 0 with the
 * reason in note when it is not offered (the build's headers lack it, or
 * rdevd's backend answered RDEV_UNKNOWN_KERNEL at the synchronize); -1 on
 * any other failure. */
int cl_aclnn_probe(cl_aclnn_t *a, int p, char *note, size_t note_len);
/* One sample: k x (aclnn<Op>GetWorkspaceSize + aclnn<Op> + aclrtSynchronizeStream). */
int cl_aclnn_run(cl_aclnn_t *a, int p, long k, double *secs);
/* Sets the output to NaN (aclrtMemset), runs p once, reads the output back
 * and checks it (oper_check). */
int cl_aclnn_verify(cl_aclnn_t *a, int p);
/* Destroys the objects, frees the buffers, destroys the stream (before cl_acl_close). */
int cl_aclnn_close(cl_aclnn_t *a);

/* ---- the Python package (client_py.c, py_peer.py) -------------------------------------- */

typedef struct cl_py cl_py_t;

/* Starts python3 (/usr/bin/python3, else the first on PATH) on script,
 * which imports numpy and the `rdev` package from pkg_dir and opens a
 * session with addr. When Python, numpy or the package cannot be found (or
 * the script is missing), *out is NULL and note says what is missing
 * (returns 0: the figures are then "na"); -1 when the package was found but
 * failed (e.g. it could not open its session). */
int cl_py_open(cl_py_t **out, const char *python_script, const char *pkg_dir, const char *addr, char *note,
               size_t note_len);
/* One sample, timed in the child: k x d.set(a) (h2d 1), an existing numpy
 * array of size bytes into an existing DeviceArray, or k x d.get(out=a). */
int cl_py_copy(cl_py_t *p, int h2d, size_t size, long k, double *secs);
/* The child's own check of size bytes: d.fill(0xa5), d.set(a) of a
 * pattern, out.fill(0x5a), d.get(out=out), out == a. */
int cl_py_verify(cl_py_t *p, size_t size);
/* The operators (rdev.ops): the child makes shape s's device arrays (oper.h's
 * inputs, computed with numpy) and a stream of its own. 1 when it has
 * rdev.ops; 0 with the reason in note when the package has none (its
 * figures are then "na"). */
int cl_py_ops_open(cl_py_t *p, const oper_shape_t *s, char *note, size_t note_len);
/* Runs problem p (rdev.ops.add / rdev.ops.matmul with out=) once: 1 when it
 * ran; 0 with the reason in note when it is not offered (not in
 * rdev.ops.available(), or rdevd answered RDEV_UNKNOWN_KERNEL). */
int cl_py_op_probe(cl_py_t *p, int problem, char *note, size_t note_len);
/* One sample, timed in the child: k x (rdev.ops.<op>(a, b, out=c, stream=st) + st.synchronize()). */
int cl_py_op_run(cl_py_t *p, int problem, long k, double *secs);
/* The child's own check: c.fill(0xff) (NaN), one run, c.get(), compared
 * with numpy (Add: every element; Matmul: oper_check's grid). */
int cl_py_op_verify(cl_py_t *p, int problem);
/* Asks the child to quit and waits for it; 0 when it exited with status 0. */
int cl_py_close(cl_py_t *p);

#endif
