/*
 * runtime/sim/sim_op_matmul.c — the sim's matrix products: Matmul
 * (torch.matmul: 1-d operands, batch dims that broadcast), Mm and
 * BatchMatMul, which are its 2-d and 3-d cases. Each batch's operands are
 * packed into contiguous double (mat2 in panels of 4 columns), then
 * multiplied block by block by a 4x4 kernel held in registers: products
 * and sums in double, so results match a float64 reference rounded to
 * out's type. cubeMathType does not change the result. out overlapping an
 * operand is written through a temporary.
 */
#include <string.h>

#include "sim_ops.h"

#define KB 256 /* k per block: a block of mat2's panels stays in cache */
#define JB 128 /* columns per block */

typedef double v2d __attribute__((vector_size(16)));

/* C[4 x 4] += A[4 rows, lda apart][kn] Bp[kn][4] (a panel of mat2), in registers. */
static void kernel4x4(const double *A, int64_t lda, const double *Bp, int64_t kn, double *C, int64_t ldc) {
  v2d c00 = {0, 0}, c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  const double *a0 = A, *a1 = A + lda, *a2 = A + 2 * lda, *a3 = A + 3 * lda;
  for (int64_t t = 0; t < kn; t++) {
    v2d b0, b1;
    memcpy(&b0, Bp + 4 * t, 16);
    memcpy(&b1, Bp + 4 * t + 2, 16);
    v2d x0 = {a0[t], a0[t]}, x1 = {a1[t], a1[t]}, x2 = {a2[t], a2[t]}, x3 = {a3[t], a3[t]};
    c00 += x0 * b0, c01 += x0 * b1, c10 += x1 * b0, c11 += x1 * b1;
    c20 += x2 * b0, c21 += x2 * b1, c30 += x3 * b0, c31 += x3 * b1;
  }
  const v2d r[8] = {c00, c01, c10, c11, c20, c21, c30, c31};
  for (int i = 0; i < 4; i++)
    for (int h = 0; h < 4; h++) C[i * ldc + h] += r[2 * i + h / 2][h % 2];
}

/* C[np x mp] += A[np x k] B, B packed in panels of 4 columns (Bp[j / 4][k][4]);
 * np and mp multiples of 4. false when the operator was cut off (C unfinished). */
static bool gemm(const double *A, const double *Bp, double *C, int64_t np, int64_t k, int64_t mp) {
  for (int64_t k0 = 0; k0 < k; k0 += KB) {
    int64_t kn = k - k0 < KB ? k - k0 : KB;
    for (int64_t j0 = 0; j0 < mp; j0 += JB) {
      int64_t jn = mp - j0 < JB ? mp - j0 : JB;
      for (int64_t i = 0; i < np; i += 4) {
        if (sim_op_tick(kn * jn / 16)) return false; /* 4 x kn x jn products a step: a look every ~4M */
        for (int64_t j = j0; j < j0 + jn; j += 4)
          kernel4x4(A + i * k + k0, k, Bp + j * k + 4 * k0, kn, C + i * mp + j, mp);
      }
    }
  }
  return true;
}

/* The rules passed: shapes follow torch.matmul (proto/ops/op_check_nn.c). */
static int matmul(const rdev_op_call_t *c) {
  const rdev_tensor_t *a = c->args[0].v.t, *b = c->args[1].v.t, *out = c->args[2].v.t;
  bool a1 = a->ndim == 1, b1 = b->ndim == 1;
  int64_t n = a1 ? 1 : a->dims[a->ndim - 2], k = a->dims[a->ndim - 1], m = b1 ? 1 : b->dims[b->ndim - 1];
  int64_t san = a1 ? 0 : a->strides[a->ndim - 2], sak = a->strides[a->ndim - 1];
  int64_t sbk = b1 ? b->strides[0] : b->strides[b->ndim - 2], sbm = b1 ? 0 : b->strides[b->ndim - 1];
  int nb = out->ndim - !a1 - !b1;
  if (rdev_tensor_numel(out) == 0) return RDEV_OK;
  const rdev_tensor_t *ins[2] = {a, b};
  sim_out_t o;
  int rc = sim_out_begin(&o, out, ins, 2, false);
  if (rc) return rc;
  int64_t son = a1 ? 0 : o.t.strides[nb], som = b1 ? 0 : o.t.strides[o.t.ndim - 1];
  int64_t np = (n + 3) / 4 * 4, mp = (m + 3) / 4 * 4;
  /* A, B and C in one block, bounded by sim_op_temp (np and mp are padded to 4: np * k may pass 2^28) */
  double *A = sim_op_temp((size_t)(np * k + 1) + (size_t)(k * mp + 1) + (size_t)(np * mp), sizeof(double),
                          "aclnnMatmul's packed operands"),
         *B = A ? A + np * k + 1 : NULL, *C = B ? B + k * mp + 1 : NULL;
  if (!A) {
    free(o.mem);
    return RDEV_BAD_ALLOC;
  }
  /* the batch dims: each operand's leading dims (broadcast by the walk) */
  rdev_tensor_t ta = *a, tb = *b, to = o.t;
  ta.ndim = a->ndim > 2 ? a->ndim - 2 : 0;
  tb.ndim = b->ndim > 2 ? b->ndim - 2 : 0;
  to.ndim = nb;
  const rdev_tensor_t *ts[3] = {&to, &ta, &tb};
  sim_iter_t it;
  sim_iter_init(&it, nb, out->dims, ts, 3);
  bool cut = false;
  do {
    for (int64_t i = 0; i < n && !cut; i++) {
      cut = sim_op_tick(k);
      for (int64_t t = 0; t < k; t++) A[i * k + t] = sim_ld(a, it.off[1] + i * san + t * sak);
    }
    for (int64_t t = 0; t < k && !cut; t++) {
      cut = sim_op_tick(m);
      for (int64_t j = 0; j < m; j++)
        B[(j & ~(int64_t)3) * k + 4 * t + (j & 3)] = sim_ld(b, it.off[2] + t * sbk + j * sbm);
    }
    memset(C, 0, sizeof(double) * (size_t)(np * mp));
    cut = cut || !gemm(A, B, C, np, k, mp);
    for (int64_t i = 0; i < n && !cut; i++) {
      cut = sim_op_tick(m);
      for (int64_t j = 0; j < m; j++) sim_st(&o.t, it.off[0] + i * son + j * som, C[i * mp + j]);
    }
  } while (!cut && sim_iter_next(&it));
  free(A);
  sim_out_end(&o);
  return RDEV_OK;
}

int sim_op_matmul(const rdev_op_call_t *c) { return matmul(c); }
int sim_op_mm(const rdev_op_call_t *c) { return matmul(c); }
int sim_op_batch_mat_mul(const rdev_op_call_t *c) { return matmul(c); }
