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

#include "../../proto/ops/op_check.h" /* the rules' type promotion, which the sim computes by */
#include "../rt_internal.h"
#include "op_list.h"

typedef int (*sim_op_fn)(const rdev_op_call_t *c);

/* Each operator's implementation, named in the generated table sim_op_fns. */
#define SIM_OP_DECL(Name, snake) int sim_op_##snake(const rdev_op_call_t *c);
RDEV_OP_LIST(SIM_OP_DECL)
#undef SIM_OP_DECL

extern const sim_op_fn sim_op_fns[];
extern const int sim_op_count;

static inline bool sim_is_float(int dt) {
  return dt == RDEV_DT_FLOAT || dt == RDEV_DT_FLOAT16 || dt == RDEV_DT_BF16 || dt == RDEV_DT_DOUBLE;
}

/* ---- element access (sim_op_util.c) ----
 * An element is named by its offset in its tensor's storage, in elements
 * (the view's offset plus index times stride, summed). Loads convert to
 * double (exact for every type but 64-bit integers beyond 2^53) or int64;
 * stores convert from them: float16 and bfloat16 round to nearest even
 * once, from the double; integers take a double's value truncated toward
 * zero (saturated at the type's range) and an int64's low bits (wrapping,
 * as torch's integer arithmetic does); bool is v != 0. */
double sim_ld(const rdev_tensor_t *t, int64_t off);
void sim_st(const rdev_tensor_t *t, int64_t off, double v);
int64_t sim_ldi(const rdev_tensor_t *t, int64_t off);
void sim_sti(const rdev_tensor_t *t, int64_t off, int64_t v);
float sim_half_to_float(uint16_t h);
uint16_t sim_float_to_half(float f);
float sim_bf16_to_float(uint16_t h);
uint16_t sim_float_to_bf16(float f);
/* v rounded to float "to odd" (toward zero, the last bit set when inexact):
 * rounding that float to float16 or bfloat16 then rounds as v itself would. */
float sim_float_odd(double v);

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

/* ---- running an operator (sim_op_util.c) ---- */

/* Runs c on stream s's worker (RT_TASK_OP). An operator cut off while it
 * runs (its stream destroyed or aborted, its task discarded) stops early
 * and returns RDEV_OK: the engine discards the task. */
int sim_op_run(rdev_rt_stream_t *s, const rdev_op_call_t *c);
/* Whether the operator running on this thread was cut off. */
bool sim_op_cut(void);
/* Counts n elements of work of the running operator; every 65536 of them
 * it looks whether the operator was cut off: true then, and the loop
 * doing the work stops early. sim_iter_next counts each step; plain
 * loops count their rows. */
bool sim_op_tick(int64_t n);
/* Zeroed host memory for an operator's temporaries: n elements of size
 * bytes, freed with free(). NULL (after rt_fail with RDEV_BAD_ALLOC) when
 * the host has none or when the operator's temporaries would pass
 * SIM_OP_TEMP_MAX in all, which bounds what one operator holds however its
 * views broadcast (stride-0 views reach few bytes and name many elements). */
#define SIM_OP_TEMP_MAX ((size_t)1 << 30)
void *sim_op_temp(size_t n, size_t size, const char *what);

/* ---- more shared helpers (sim_op_util.c) ---- */

/* v rounded to floating type dt (float32, float16, bfloat16), as a value
 * computed in that type is; v itself for other types. */
double sim_round(int dt, double v);
/* Whether t's view is row-major contiguous (dims of 1 aside). */
bool sim_contiguous(const rdev_tensor_t *t);
/* Whether the bytes of a's and b's views intersect (empty views: never). */
bool sim_overlap(const rdev_tensor_t *a, const rdev_tensor_t *b);
/* Copies src, broadcast to dst's shape, into dst, converting each element
 * (the same type: its bytes; integers between integer types exactly).
 * dst must not overlap src unless they are the same view. */
void sim_copy_cast(const rdev_tensor_t *dst, const rdev_tensor_t *src);
/* A 0-d tensor holding a scalar argument's value in *cell: float64 for a
 * floating scalar, int64 otherwise (bool: 0 or 1). */
rdev_tensor_t sim_scalar_tensor(const rdev_op_arg_t *a, void *cell);

/* Where an operator writes its output. Output tensors may alias inputs:
 * an operator reads each input element only before it writes the output
 * elements computed from it when elementwise is set and an overlapping
 * input is the output's own view (the same address, offset, strides and
 * element size): then it writes out directly; otherwise, when out overlaps
 * an input, it writes into a contiguous temporary of out's type and shape
 * that sim_out_end copies to out. t is the tensor to write. */
typedef struct {
  rdev_tensor_t t;
  const rdev_tensor_t *out;
  void *mem;
} sim_out_t;

/* RDEV_OK, or rt_fail(RDEV_BAD_ALLOC) when the temporary cannot be had. */
int sim_out_begin(sim_out_t *o, const rdev_tensor_t *out, const rdev_tensor_t *const *ins, int n, bool elementwise);
/* Copies the temporary (if any) to out and frees it. */
void sim_out_end(sim_out_t *o);

#endif
