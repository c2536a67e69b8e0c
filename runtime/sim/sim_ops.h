/*
 * runtime/sim/sim_ops.h — the sim backend's operators (rdev/ops.h): one C
 * implementation per line of proto/ops/ops.def, sim_op_<name> (the table
 * sim_op_fns is generated in that order). An implementation gets a call
 * that rdev_op_check and the runtime's reach checks passed; its tensors'
 * addr fields are host addresses of their storage (sim_prepare). It runs
 * on the stream's worker and returns RDEV_OK or a code with rt_fail's
 * detail, which the stream's next synchronize reports.
 */
#ifndef RDEV_SIM_OPS_H
#define RDEV_SIM_OPS_H

#include <stdbool.h>

#include "../rt_internal.h"
#include "op_list.h"

typedef int (*sim_op_fn)(const rdev_op_call_t *c);

/* Each operator's implementation, named in the generated table sim_op_fns. */
#define SIM_OP_DECL(Name, snake) int sim_op_##snake(const rdev_op_call_t *c);
RDEV_OP_LIST(SIM_OP_DECL)
#undef SIM_OP_DECL

extern const sim_op_fn sim_op_fns[];
extern const int sim_op_count;

/* ---- element access (sim_op_util.c) ----
 * An element is named by its offset in its tensor's storage, in elements
 * (the view's offset plus index times stride, summed). Loads convert to
 * double (exact for every type but 64-bit integers beyond 2^53) or int64;
 * stores convert from them: float16 and bfloat16 round to nearest even,
 * integers take a float's value truncated toward zero (saturated at the
 * type's range), bool is v != 0. */
double sim_ld(const rdev_tensor_t *t, int64_t off);
void sim_st(const rdev_tensor_t *t, int64_t off, double v);
int64_t sim_ldi(const rdev_tensor_t *t, int64_t off);
void sim_sti(const rdev_tensor_t *t, int64_t off, int64_t v);
float sim_half_to_float(uint16_t h);
uint16_t sim_float_to_half(float f);
float sim_bf16_to_float(uint16_t h);
uint16_t sim_float_to_bf16(float f);

/* Walks the elements of an output shape (ndim dims) and, for each, the
 * offsets of up to 4 tensors broadcast to it (numpy's rule: a tensor's
 * dims align from the last; a dim of 1 repeats). */
#define SIM_ITER_MAX 4
typedef struct {
  int ndim, n;
  int64_t dims[RDEV_OP_MAX_DIMS], idx[RDEV_OP_MAX_DIMS];
  int64_t str[SIM_ITER_MAX][RDEV_OP_MAX_DIMS]; /* per tensor, aligned to dims (0 where broadcast) */
  int64_t off[SIM_ITER_MAX];                   /* the current element's offsets */
  int64_t left;                                /* elements not yet visited */
} sim_iter_t;

/* ts[0..n) are broadcast to dims (which they must broadcast to). After
 * init, off[] names the first element; sim_iter_next moves to the next and
 * returns false after the last. An empty shape has no elements: check
 * it->left before the first use. */
void sim_iter_init(sim_iter_t *it, int ndim, const int64_t *dims, const rdev_tensor_t *const *ts, int n);
bool sim_iter_next(sim_iter_t *it);

#endif
