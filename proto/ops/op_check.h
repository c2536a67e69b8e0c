/*
 * proto/ops/op_check.h — what the operators' rules (op_check*.c) share:
 * the error sentence, data type classes and promotion, broadcasting,
 * dimension arguments. The rules live by family: op_check.c (Add and the
 * shared helpers), op_check_math.c (elementwise), op_check_nn.c (softmax,
 * layer norm, matmul), op_check_reduce.c, op_check_shape.c.
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
/* Add's, Sub's and Adds' alpha: a floating alpha with an integral result is
 * refused, as torch refuses it. */
int op_check_alpha(const char *name, int result_dt, const rdev_op_arg_t *alpha, char *msg, size_t cap);

/* The numeric types the elementwise operators take (op_num_types[0..op_num_count)). */
extern const int op_num_types[];
extern const int op_num_count;
/* The floating types (float32, float16, bfloat16, float64). */
extern const int op_float_types[];
extern const int op_float_count;
/* The type of tensor-with-scalar arithmetic (torch's rule): the tensor's,
 * unless the scalar is of a higher category (float over integer over
 * bool): then float32, or int64 for an integer scalar with a bool tensor. */
int op_promote_scalar(int tensor_dt, int scalar_dt);
/* dim wrapped into [0, ndim) (a 0-d tensor takes -1 and 0 as 1-d does):
 * false when out of range. */
bool op_wrap_dim(int64_t dim, int ndim, int *out);
/* The dimensions an int array names (negative ones wrapped), as bits of
 * *mask; an empty array names every dimension when empty_all. Refuses a
 * dimension out of range or named twice, with a sentence naming the
 * operator and the parameter. */
int op_dims_mask(const char *name, const char *param, const rdev_op_arg_t *a, int ndim, bool empty_all, uint32_t *mask,
                 char *msg, size_t cap);

#endif
