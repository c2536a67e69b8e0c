/*
 * proto/ops/op_check.h — what the operators' rules (op_check*.c) share:
 * the error sentence, data type classes and promotion, broadcasting.
 */
#ifndef RDEV_OP_CHECK_H
#define RDEV_OP_CHECK_H

#include <stdbool.h>

#include "op_list.h"
#include "rdev/ops.h"
#include "rdev/status.h"

/* Each operator's rules (rdev_op_sig_t.check), named in the generated table. */
#define RDEV_OP_CHECK_DECL(Name, snake) int rdev_op_check_##snake(const rdev_op_call_t *c, char *msg, size_t cap);
RDEV_OP_LIST(RDEV_OP_CHECK_DECL)
#undef RDEV_OP_CHECK_DECL

/* Writes the sentence to msg and returns RDEV_OP_PARAM_INVALID. */
int op_invalid(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool op_is_float(int dt);
bool op_is_int(int dt);
/* The type two operands compute in (torch's rule: float over integer,
 * the wider of two floats; float16 with bfloat16 is float32). */
int op_promote(int a, int b);
/* Whether a value of type from may be stored to type to (no float to integer). */
bool op_can_cast(int from, int to);
bool op_dtype_in(int dt, const int *set, int n);
bool op_same_shape(const rdev_tensor_t *a, const rdev_tensor_t *b);
bool op_has_shape(const rdev_tensor_t *t, int ndim, const int64_t *dims);
/* numpy's broadcast of two shapes into dims (at most 8); false when they do not. */
bool op_broadcast(const rdev_tensor_t *a, const rdev_tensor_t *b, int *ndim, int64_t *dims);
/* "[2, 3]" */
void op_shape_text(const rdev_tensor_t *t, char *buf, size_t cap);
/* The elementwise binary rule, arguments self, other and out at those indexes of c. */
int op_check_binary(const char *name, const rdev_op_call_t *c, int self, int other, int out, char *msg, size_t cap);

#endif
