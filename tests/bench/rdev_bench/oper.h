/*
 * tests/bench/rdev_bench/oper.h — the problem the operators phase (phase_ops.c)
 * poses to every method, shared by them all so that they do the same work:
 * its shapes (oper_shape_t), the inputs (small integers as float32, so that
 * every sum and product is exact in float32 whatever the order of the
 * additions: a check may compare for equality), the operator calls
 * (rdev/ops.h: Add's and Matmul's, built from the operator table), and the
 * checks of an output read back. py_peer.py computes the same inputs with
 * numpy. Implemented in oper.c; no state.
 */
#ifndef RDEV_BENCH_OPER_H
#define RDEV_BENCH_OPER_H

#include <stddef.h>
#include <stdint.h>

#include "rdev/ops.h"

typedef struct {
  size_t add_n;             /* Add: three vectors of add_n float32 (self, other, out) */
  int64_t mm_m, mm_k, mm_n; /* Matmul: self m x k, mat2 k x n, out m x n (float32, row-major) */
} oper_shape_t;

/* Blocks of the built-in kernel add_f32 (remote and in-process alike). */
#define OPER_KERNEL_BLOCKS 8

/* The methods' two problems. */
enum { OPER_ADD, OPER_MATMUL, OPER_NPROBLEMS };

/* Input element i of operand `which` (0: self / a, 1: other / mat2 / b):
 * (i mod 17) - 8 and (5i mod 13) - 6. */
static inline float oper_input(int which, uint64_t i) {
  return which == 0 ? (float)((int)(i % 17) - 8) : (float)((int)(i * 5 % 13) - 6);
}
/* p[0..n) = oper_input(which, 0..n). */
void oper_fill(float *p, size_t n, int which);

/* An operator call with the tensors it points at (rdev_op_call_t's tensors
 * are pointers): Add(self, other, alpha 1.0, out) on float32 vectors of n,
 * or Matmul(self, mat2, out, cubeMathType 0) on row-major float32
 * matrices, at the given device addresses. */
typedef struct {
  rdev_op_call_t call;
  rdev_tensor_t t[3];
} oper_call_t;

/* Builds problem p's call (OPER_ADD, OPER_MATMUL). 0; -1 with a sentence in
 * note when this build's operator table has no such operator (e.g. Matmul
 * before it was added) or its parameters are not the ones expected. */
int oper_call(oper_call_t *c, int p, const oper_shape_t *s, uint64_t self, uint64_t other, uint64_t out, char *note,
              size_t note_len);

/* Bytes of problem p's output. */
size_t oper_out_bytes(int p, const oper_shape_t *s);

/* Checks problem p's output read back: Add every element, Matmul a grid
 * of 16 x 16 elements (rows and columns spread over the matrix, the first
 * and last included) against products computed here in integers. 0, or -1
 * with the first wrong element in msg (named by `what`). */
int oper_check(int p, const oper_shape_t *s, const float *out, const char *what, char *msg, size_t msg_len);

/* The problem's name for tables and messages: "Add", "Matmul". */
const char *oper_name(int p);

#endif
