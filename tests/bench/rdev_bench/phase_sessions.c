/*
 * tests/bench/rdev_bench/phase_sessions.c — phase 5, concurrent sessions:
 * 1, 2 and 4 threads, each with its own session and device buffer, doing
 * sync H2D of it for a fixed time from one barrier; aggregate GB/s = all
 * bytes / (last end - first start); each rep runs the three counts in a
 * random order; the buffers are read back and checked at the end.
 */
#include <pthread.h>
#include <string.h>

#include "rdev_bench.h"

typedef struct {
  rdev_session_t *s;
  void *dev;
  const uint8_t *src;
  size_t buf;
  double dur; /* copy until this long after the barrier (at least once) */
  pthread_barrier_t *bar;
  double t0, t1;
  long copies;
} sess_t;

static void *sess_main(void *arg) {
  sess_t *x = arg;
  pthread_barrier_wait(x->bar);
  x->t0 = now_s();
  x->copies = 0;
  do {
    CHECK(rdev_memcpy(x->s, x->dev, x->buf, x->src, x->buf, RDEV_MEMCPY_HOST_TO_DEVICE));
    x->copies++;
  } while (now_s() - x->t0 < x->dur);
  x->t1 = now_s();
  return NULL;
}

/* n sessions copy at once; aggregate GB/s = all bytes / (last end - first start). */
static double sessions_sample(sess_t *ss, int n, double dur) {
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)n);
  pthread_t th[4];
  for (int i = 0; i < n; i++) {
    ss[i].bar = &bar;
    ss[i].dur = dur;
    if (pthread_create(&th[i], NULL, sess_main, &ss[i])) die("cannot start a thread");
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  double t0 = ss[0].t0, t1 = ss[0].t1, bytes = 0;
  for (int i = 0; i < n; i++) {
    if (ss[i].t0 < t0) t0 = ss[i].t0;
    if (ss[i].t1 > t1) t1 = ss[i].t1;
    bytes += (double)ss[i].copies * (double)ss[i].buf;
  }
  return bytes / (t1 - t0) / 1e9;
}

sessions_result_t phase_sessions(bench_t *b) {
  const cfg_t *c = b->cfg;
  sessions_result_t res;
  static const int kCounts[3] = {1, 2, 4};
  sess_t ss[4];
  fill_pattern(b->src, c->sess_buf, 0x5e55);
  for (int i = 0; i < 4; i++) {
    ss[i] = (sess_t){.s = bench_open_session(b), .src = b->src, .buf = c->sess_buf};
    CHECK(rdev_malloc(ss[i].s, &ss[i].dev, c->sess_buf, RDEV_MEM_MALLOC_HUGE_FIRST));
    CHECK(rdev_memset(ss[i].s, ss[i].dev, c->sess_buf, 0, c->sess_buf));
  }
  sessions_sample(ss, 4, 0); /* warm-up: one copy each */
  double v[3][MAX_REPS], ratio[2][MAX_REPS];
  uint64_t rng = 0x5e550000u;
  for (int r = 0; r < c->sess_reps; r++) {
    int order[3] = {0, 1, 2};
    shuffle(order, 3, &rng);
    for (int i = 0; i < 3; i++) v[order[i]][r] = sessions_sample(ss, kCounts[order[i]], c->sess_s);
    ratio[0][r] = v[1][r] / v[0][r];
    ratio[1][r] = v[2][r] / v[0][r];
  }
  for (int j = 0; j < 3; j++) res.agg[j] = median(v[j], c->sess_reps);
  for (int j = 0; j < 2; j++) res.scale[j] = median(ratio[j], c->sess_reps);
  for (int i = 0; i < 4; i++) {
    memset(b->dst, 0x5a, c->sess_buf);
    CHECK(rdev_memcpy(ss[i].s, b->dst, c->sess_buf, ss[i].dev, c->sess_buf, RDEV_MEMCPY_DEVICE_TO_HOST));
    expect_same(b->src, b->dst, c->sess_buf, "concurrent sessions (H2D, read back)");
    CHECK(rdev_free(ss[i].s, ss[i].dev));
    rdev_session_close(ss[i].s);
  }
  return res;
}
