/*
 * tests/bench/rdev_bench/clients.h — rdev's other two clients, measured
 * next to the C API in the copies phase: the ACL library (aclrtMemcpy
 * through libascendcl.so, in this process, with its own session:
 * client_acl.c) and the Python package (d.set(a), d.get(out=a) of the `rdev`
 * package, in a python3 child process driven line by line over a pipe:
 * client_py.c, py_peer.py). Like the baselines (baseline.h), each call
 * returns 0, or -1 with the reason in bl_error(); the interface exposes no
 * ACL or Python types.
 */
#ifndef RDEV_BENCH_CLIENTS_H
#define RDEV_BENCH_CLIENTS_H

#include <stddef.h>
#include <stdint.h>

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
/* Asks the child to quit and waits for it; 0 when it exited with status 0. */
int cl_py_close(cl_py_t *p);

#endif
