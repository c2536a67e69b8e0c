/*
 * runtime/sim/sim_op_math.c — the sim's elementwise arithmetic operators
 * (Add ...), over any strides and with numpy's broadcasting: floating
 * types compute in double, integer types in int64.
 */
#include "sim_ops.h"

#include <math.h>

/* out = self + alpha * other (alpha NULL: 1), or self - alpha * other. */
static void axpby(const rdev_tensor_t *self, const rdev_tensor_t *other, const rdev_op_arg_t *alpha,
                  const rdev_tensor_t *out, double sign) {
  const rdev_tensor_t *ts[3] = {out, self, other};
  sim_iter_t it;
  sim_iter_init(&it, out->ndim, out->dims, ts, 3);
  if (it.left <= 0) return;
  bool fl = out->dtype == RDEV_DT_FLOAT || out->dtype == RDEV_DT_FLOAT16 || out->dtype == RDEV_DT_BF16 ||
            out->dtype == RDEV_DT_DOUBLE;
  if (fl) {
    double a = sign * (alpha ? rdev_op_scalar_f64(alpha) : 1.0);
    do sim_st(out, it.off[0], sim_ld(self, it.off[1]) + a * sim_ld(other, it.off[2]));
    while (sim_iter_next(&it));
  } else {
    int64_t a = (int64_t)sign * (alpha ? rdev_op_scalar_i64(alpha) : 1);
    do sim_sti(out, it.off[0], sim_ldi(self, it.off[1]) + a * sim_ldi(other, it.off[2]));
    while (sim_iter_next(&it));
  }
}

int sim_op_add(const rdev_op_call_t *c) {
  axpby(c->args[0].v.t, c->args[1].v.t, c->args[2].present ? &c->args[2] : NULL, c->args[3].v.t, 1.0);
  return RDEV_OK;
}
