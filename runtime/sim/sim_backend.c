/*
 * runtime/sim/sim_backend.c — the sim backend's table (rt_backend_t),
 * and opening and closing the sim: its devices, their arenas and
 * faults, and at close every space and host block left. sim.c has the
 * devices' memory, faults and device tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "rdev/clock.h"
#include "sim.h"

/* ---- open / close -------------------------------------------------------- */

static void sim_close(void *impl);

static int sim_open(rdev_rt_t *rt, const rdev_rt_config_t *cfg, void **impl) {
  int nk;
  const rdev_kernel_sig_t *k = rdev_rt_kernels(&nk);
  for (int i = 0; i < nk; i++)
    if (nk != sim_kernel_count || strcmp(k[i].name, sim_kernel_names[i]) != 0)
      return rt_fail(RDEV_INTERNAL_ERROR, "sim kernel table does not match the registry");
  int ndev = cfg->sim_devices ? cfg->sim_devices : 2;
  size_t mem = cfg->sim_mem_bytes ? cfg->sim_mem_bytes : (size_t)1 << 30;
  mem &= ~(size_t)(RDEV_RT_MEM_ALIGN - 1);
  if (ndev < 1 || ndev > 64) return rt_fail(RDEV_INVALID_PARAM, "sim devices must be 1..64, got %d", ndev);
  if (mem < 4096 || mem > SIM_MAX_ARENA)
    return rt_fail(RDEV_INVALID_PARAM, "sim device memory must be 4096 bytes to 1 TiB, got %zu", mem);
  sim_t *sim = calloc(1, sizeof *sim);
  if (!sim) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  sim->rt = rt;
  sim->unmapped = cfg->sim_unmapped != 0;
  pthread_mutex_init(&sim->mu, NULL);
  sim->devs = calloc((size_t)ndev, sizeof *sim->devs);
  sim->spaces = calloc(SIM_SLOTS, sizeof *sim->spaces);
  if (sim->spaces) sim->spaces[0] = calloc(1, sizeof *sim->spaces[0]);
  if (!sim->devs || !sim->spaces || !sim->spaces[0]) {
    sim_close(sim);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  for (int i = 0; i < ndev; i++) {
    sim_dev_t *d = &sim->devs[i];
    d->index = i;
    sim->ndev = i + 1;
    int rc = sim_arena_init(&d->arena, mem);
    if (rc) {
      sim_close(sim);
      return rc;
    }
  }
  sim_space_t *own = sim->spaces[0]; /* slot 0, never given up */
  own->base.rt = rt;
  own->sim = sim;
  atomic_init(&own->refs, 1);
  *impl = sim;
  return RDEV_OK;
}

static void sim_close(void *impl) {
  sim_t *sim = impl;
  sim_host_free_all(sim);
  sim_spaces_free_all(sim);
  for (int i = 0; i < sim->ndev; i++) sim_arena_destroy(&sim->devs[i].arena);
  free(sim->devs);
  pthread_mutex_destroy(&sim->mu);
  free(sim);
}

const rt_backend_t rt_sim_backend = {
    .name = "sim",
    .confined = 1,
    .runs_here = 1,
    .open = sim_open,
    .close = sim_close,
    .device_count = sim_device_count,
    .device_info = sim_device_info,
    .malloc = sim_malloc,
    .free = sim_free,
    .space_create = sim_space_create,
    .space_destroy = sim_space_destroy,
    .space_range = sim_space_range,
    .lookup = sim_lookup,
    .malloc_host = sim_malloc_host,
    .free_host = sim_free_host,
    .copy = sim_copy,
    .host_view = sim_host_view,
    .memset = sim_memset,
    .prepare = sim_prepare,
    .exec = sim_exec,
    .load_value = sim_load_value,
    .fault_inject = sim_fault_inject,
};
