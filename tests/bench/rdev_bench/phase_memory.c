/*
 * tests/bench/rdev_bench/phase_memory.c — phase 1, the server's memory (own
 * rdevd only, first, on the fresh server): rdevd's VmRSS after a session
 * allocated a buffer and memset it (the arena pages are touched: the
 * baseline), then the peak while the session moves bytes through it, rounds
 * alternating sync memcpy H2D+D2H and async H2D+D2H+synchronize. Peak =
 * max(VmRSS sampled every 2 ms, VmHWM reset via /proc/PID/clear_refs at the
 * baseline); beyond = peak - baseline. Through rdev/rdev.h only.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "rdev_bench.h"
#include "rdevd.h"

typedef struct {
  pid_t pid;
  atomic_int stop;
  long max_kb;
  long samples;
} rss_sampler_t;

static void *rss_sampler(void *arg) {
  rss_sampler_t *r = arg;
  while (!atomic_load(&r->stop)) {
    long kb = proc_status_kb(r->pid, "VmRSS");
    if (kb > r->max_kb) r->max_kb = kb;
    r->samples++;
    usleep(2000);
  }
  return NULL;
}

rss_result_t phase_memory(bench_t *b) {
  rss_result_t r = {0};
  const cfg_t *c = b->cfg;
  size_t buf = c->rss_buf;
  rdev_session_t *s = bench_open_session(b);
  rdev_stream_t *st;
  void *dev;
  CHECK(rdev_stream_create(s, &st));
  CHECK(rdev_malloc(s, &dev, buf, RDEV_MEM_MALLOC_HUGE_FIRST));
  CHECK(rdev_memset(s, dev, buf, 0x11, buf)); /* touches the arena pages */
  fill_pattern(b->src, buf, 0x555);
  usleep(200000);
  long base = proc_status_kb(b->server_pid, "VmRSS");
  if (base < 0) die("cannot read /proc/%d/status", (int)b->server_pid);
  r.hwm_used = reset_hwm(b->server_pid) == 0;
  rss_sampler_t smp = {.pid = b->server_pid, .max_kb = base};
  pthread_t th;
  if (pthread_create(&th, NULL, rss_sampler, &smp)) die("cannot start a thread");
  double t0 = now_s();
  size_t moved = 0;
  for (int round = 0; moved < c->rss_total && now_s() - t0 < c->rss_max_s; round++) {
    if (round % 2 == 0) {
      CHECK(rdev_memcpy(s, dev, buf, b->src, buf, RDEV_MEMCPY_HOST_TO_DEVICE));
      CHECK(rdev_memcpy(s, b->dst, buf, dev, buf, RDEV_MEMCPY_DEVICE_TO_HOST));
    } else {
      CHECK(rdev_memcpy_async(s, dev, buf, b->src, buf, RDEV_MEMCPY_HOST_TO_DEVICE, st));
      CHECK(rdev_memcpy_async(s, b->dst, buf, dev, buf, RDEV_MEMCPY_DEVICE_TO_HOST, st));
      CHECK(rdev_stream_synchronize(st));
    }
    moved += 2 * buf;
  }
  double secs = now_s() - t0;
  atomic_store(&smp.stop, 1);
  pthread_join(th, NULL);
  long hwm = r.hwm_used ? proc_status_kb(b->server_pid, "VmHWM") : -1;
  long peak = smp.max_kb > hwm ? smp.max_kb : hwm;
  expect_same(b->src, b->dst, buf, "server-memory phase (H2D+D2H)");
  CHECK(rdev_free(s, dev));
  CHECK(rdev_stream_destroy(st));
  rdev_session_close(s);
  usleep(200000);
  long after = proc_status_kb(b->server_pid, "VmRSS");
  r.measured = 1;
  r.base_mib = base / 1024.0;
  r.peak_mib = peak / 1024.0;
  r.beyond_mib = (peak - base) / 1024.0;
  r.after_mib = after / 1024.0;
  r.samples = smp.samples;
  r.gbps = (double)moved / secs / 1e9;
  r.moved = moved;
  return r;
}
