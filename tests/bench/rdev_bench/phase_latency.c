/*
 * tests/bench/rdev_bench/phase_latency.c — phase 3, latency: write_i32
 * launch (blocks=1) + rdev_stream_synchronize, a bare gRPC empty unary call
 * from the same thread, the same call from the client helper process, and
 * a synchronous rdev call (rdev_mem_info), sampled interleaved (the
 * launch+sync / unary ratio is paired per sample, taken back to back, with
 * the same thread's unary call: on a VM whose idle vCPUs halt, a round
 * trip's cost is mostly where the scheduler put its two threads, and a
 * helper process fares differently from the thread that makes the rdev
 * calls: docs/performance.md, "Threads"); and
 * phase 4, pipelined small ops: N 64-byte rdev_memset_async on one stream,
 * then one synchronize, the device bytes checked.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "rdev_bench.h"

static void noop_print(void *user, const char *text, size_t len) {
  (void)text;
  (void)len;
  atomic_fetch_add((atomic_long *)user, 1);
}

lat_result_t phase_latency(bench_t *b, void *small) {
  long n = b->cfg->rtt_n;
  lat_result_t r = {0};
  double *rtt = malloc((size_t)n * sizeof *rtt), *un = malloc((size_t)n * sizeof *un),
         *hu = malloc((size_t)n * sizeof *hu), *call = malloc((size_t)n * sizeof *call),
         *ratio = malloc((size_t)n * sizeof *ratio);
  if (!rtt || !un || !hu || !call || !ratio) die("out of memory");
  static atomic_long prints; /* the print function may run after this returns */
  atomic_store(&prints, 0);
  rdev_session_set_print_fn(b->s, noop_print, &prints);
  rdev_arg_t args[2] = {{.type = RDEV_ARG_PTR, .v.ptr = small}, {.type = RDEV_ARG_I32}};
  size_t fr, tot;
  for (int i = 0; i < 20; i++) { /* warm-up */
    args[1].v.i32 = -1 - i;
    CHECK(rdev_launch(b->st, "write_i32", 1, args, 2));
    CHECK(rdev_stream_synchronize(b->st));
    double us;
    BL(bl_grpc_unary_here(b->grpc, &us));
    BL(bl_grpc_unary(b->grpc, &us));
    CHECK(rdev_mem_info(b->s, &fr, &tot));
  }
  for (long i = 0; i < n; i++) {
    args[1].v.i32 = (int32_t)i;
    double t0 = now_s();
    CHECK(rdev_launch(b->st, "write_i32", 1, args, 2));
    CHECK(rdev_stream_synchronize(b->st));
    rtt[i] = (now_s() - t0) * 1e6;
    BL(bl_grpc_unary_here(b->grpc, &un[i]));
    BL(bl_grpc_unary(b->grpc, &hu[i]));
    t0 = now_s();
    CHECK(rdev_mem_info(b->s, &fr, &tot));
    call[i] = (now_s() - t0) * 1e6;
    ratio[i] = rtt[i] / un[i];
  }
  int32_t got = 0;
  CHECK(rdev_memcpy(b->s, &got, sizeof got, small, sizeof got, RDEV_MEMCPY_DEVICE_TO_HOST));
  if (got != (int32_t)(n - 1)) die("write_i32 left %d on the device, expected %ld", (int)got, n - 1);
  r.prints = atomic_load(&prints);
  r.rtt_us = median(rtt, (int)n);
  r.rtt_p99 = pct(rtt, (int)n, 0.99);
  r.unary_us = median(un, (int)n);
  r.unary_p99 = pct(un, (int)n, 0.99);
  r.helper_us = median(hu, (int)n);
  r.helper_p99 = pct(hu, (int)n, 0.99);
  r.call_us = median(call, (int)n);
  r.call_p99 = pct(call, (int)n, 0.99);
  r.rtt_ratio = median(ratio, (int)n);
  free(ratio);
  free(rtt);
  free(un);
  free(hu);
  free(call);
  return r;
}

ops_result_t phase_ops(bench_t *b, void *small) {
  long n = b->cfg->ops_n;
  int reps = b->cfg->ops_reps;
  double rate[MAX_REPS], sub[MAX_REPS], tot[MAX_REPS];
  uint8_t host[4096];
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    for (long i = 0; i < n; i++)
      CHECK(rdev_memset_async(b->s, (uint8_t *)small + (i % 64) * 64, 64, (int)((i * 7 + r) & 0xff), 64, b->st));
    double t1 = now_s();
    CHECK(rdev_stream_synchronize(b->st));
    double t2 = now_s();
    rate[r] = (double)n / (t2 - t0);
    sub[r] = t1 - t0;
    tot[r] = t2 - t0;
    CHECK(rdev_memcpy(b->s, host, sizeof host, small, sizeof host, RDEV_MEMCPY_DEVICE_TO_HOST));
    for (long reg = 0; reg < 64 && reg < n; reg++) {
      long last = reg + 64 * ((n - 1 - reg) / 64);
      uint8_t want = (uint8_t)((last * 7 + r) & 0xff);
      for (int j = 0; j < 64; j++)
        if (host[reg * 64 + j] != want)
          die("memset_async: byte %ld holds 0x%02x, expected 0x%02x", reg * 64 + j, host[reg * 64 + j], want);
    }
  }
  ops_result_t o = {median(rate, reps), median(sub, reps), median(tot, reps)};
  return o;
}
