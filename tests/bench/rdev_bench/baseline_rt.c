/*
 * tests/bench/rdev_bench/baseline_rt.c — the in-process baseline: the device
 * runtime (rdev/runtime.h, sim backend, one device) called directly, no
 * network: rdev_rt_memcpy between a host buffer and one device buffer.
 */
#include <stdlib.h>

#include "baseline.h"
#include "common.h"
#include "rdev/runtime.h"

struct bl_rt {
  rdev_rt_t *rt;
  void *dev;
};

static int rt_fail(const char *what, int rc) {
  return bl_fail("runtime: %s: %s (%d %s): %s", what, rdev_strerror(rc), rc, rdev_status_name(rc),
                 rdev_rt_last_error());
}

int bl_rt_open(bl_rt_t **out, size_t max_size) {
  *out = NULL;
  bl_rt_t *r = calloc(1, sizeof *r);
  if (!r) return bl_fail("runtime: out of memory");
  rdev_rt_config_t cfg = {.backend = "sim", .sim_devices = 1, .sim_mem_bytes = max_size + ((size_t)16 << 20)};
  int rc = rdev_rt_open(&cfg, &r->rt);
  if (rc) {
    free(r);
    return rt_fail("open", rc);
  }
  rc = rdev_rt_malloc(r->rt, 0, &r->dev, max_size, RDEV_MEM_MALLOC_HUGE_FIRST);
  if (!rc) rc = rdev_rt_memset(r->rt, r->dev, max_size, 0x33, max_size);
  if (rc) {
    rt_fail("malloc and memset", rc);
    rdev_rt_close(r->rt);
    free(r);
    return -1;
  }
  *out = r;
  return 0;
}

int bl_rt_copy(bl_rt_t *r, int h2d, void *host, size_t size, long k, double *secs) {
  double t0 = now_s();
  for (long i = 0; i < k; i++) {
    int rc = h2d ? rdev_rt_memcpy(r->rt, r->dev, size, host, size, RDEV_MEMCPY_HOST_TO_DEVICE)
                 : rdev_rt_memcpy(r->rt, host, size, r->dev, size, RDEV_MEMCPY_DEVICE_TO_HOST);
    if (rc) return rt_fail(h2d ? "memcpy host to device" : "memcpy device to host", rc);
  }
  *secs = now_s() - t0;
  return 0;
}

void bl_rt_close(bl_rt_t *r) {
  if (!r) return;
  rdev_rt_free(r->rt, r->dev);
  rdev_rt_close(r->rt);
  free(r);
}
