/*
 * runtime/acl/acl_backend.c — the acl backend's table (rt_backend_t):
 * opening the CANN runtime (acl_loader.c) and a context per device,
 * devices, the per-thread current context, fault injection (only where the
 * library is the ACL test double), and closing. acl_mem.c has memory,
 * acl_exec.c the device side of streams and kernels, acl_ops.c operators.
 *
 * Every entry of the backend makes the device's context current first
 * (acl_enter, acl_context.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

static void acl_close(void *impl);

static int acl_open(rdev_rt_t *rt, const rdev_rt_config_t *cfg, void **impl) {
  const acl_api_t *api;
  int rc = acl_load(cfg->acl_lib, (size_t)(cfg->sim_devices > 0 ? cfg->sim_devices : 0), cfg->sim_mem_bytes, &api);
  if (rc) return rc;
  acl_t *a = calloc(1, sizeof *a);
  if (!a) {
    acl_unload();
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  a->rt = rt;
  a->api = api;
  a->gen = acl_context_gen();
  acl_table_init(&a->dmem);
  acl_table_init(&a->hmem);
  pthread_mutex_init(&a->spaces_mu, NULL);
  a->own.base.rt = rt;
  atomic_init(&a->own.refs, 1);
  uint32_t n = 0;
  int e = api->rtGetDeviceCount(&n);
  if (e || n == 0 || n > 64) {
    rc =
        e ? acl_fail(a, e, "aclrtGetDeviceCount") : rt_fail(RDEV_INVALID_DEVICE, "the CANN runtime sees %u devices", n);
    acl_close(a);
    return rc;
  }
  a->devs = calloc(n, sizeof *a->devs);
  if (!a->devs) {
    acl_close(a);
    return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  }
  for (uint32_t d = 0; d < n; d++) {
    e = api->rtCreateContext(&a->devs[d].ctx, (int32_t)d);
    acl_forget(0); /* creating a context made it current: the cache does not know which */
    if (e) {
      char what[64];
      snprintf(what, sizeof what, "aclrtCreateContext on device %u", d);
      rc = acl_fail(a, e, what);
      acl_close(a);
      return rc;
    }
    a->ndev = (int)d + 1;
  }
  const char *soc = api->rtGetSocName();
  snprintf(a->soc, sizeof a->soc, "%s", soc ? soc : "Ascend");
  if ((cfg->acl_kernels && (rc = acl_kernels_load(a, cfg->acl_kernels))) || (rc = acl_ops_load(a, cfg->acl_opapi))) {
    acl_close(a);
    return rc;
  }
  *impl = a;
  return RDEV_OK;
}

static void acl_close(void *impl) {
  acl_t *a = impl;
  acl_ops_unload(a);
  if (a->devs) {
    acl_kernels_unload(a);
    acl_mem_free_all(a);
    for (int d = 0; d < a->ndev; d++) a->api->rtDestroyContext(a->devs[d].ctx);
    free(a->devs);
  }
  acl_forget(a->gen);
  pthread_mutex_destroy(&a->dmem.mu);
  pthread_mutex_destroy(&a->hmem.mu);
  pthread_mutex_destroy(&a->spaces_mu);
  free(a);
  acl_unload();
}

static int acl_device_count(void *impl) { return ((acl_t *)impl)->ndev; }

int acl_device_info(void *impl, int dev, rdev_rt_device_info_t *info) {
  acl_t *a = impl;
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "%s", a->soc);
  int rc = acl_enter(a, dev);
  if (rc) return rc;
  int e = a->api->rtGetMemInfo(1 /* ACL_HBM_MEM */, &info->free_bytes, &info->total_bytes);
  return e ? acl_fail(a, e, "aclrtGetMemInfo") : RDEV_OK;
}

/* Faults are the test double's (tests/acl_double/); CANN has none. */
static int acl_fault_inject(void *impl, int dev, rdev_fault_kind_t kind, uint32_t nth, uint32_t hang_ms) {
  acl_t *a = impl;
  if (!a->api->doubleFaultInject)
    return rt_fail(RDEV_API_NOT_SUPPORT, "fault injection needs the ACL test double, not the CANN runtime");
  int e = a->api->doubleFaultInject(dev, (int32_t)kind, nth, hang_ms);
  return e ? acl_fail(a, e, "acldoubleFaultInject") : RDEV_OK;
}

const rt_backend_t rt_acl_backend = {
    .name = "acl",
    .open = acl_open,
    .close = acl_close,
    .device_count = acl_device_count,
    .device_info = acl_device_info,
    .malloc = acl_malloc,
    .free = acl_free,
    .space_create = acl_space_create,
    .space_destroy = acl_space_destroy,
    .lookup = acl_lookup,
    .malloc_host = acl_malloc_host,
    .free_host = acl_free_host,
    .copy = acl_copy,
    .memset = acl_memset,
    .stream_open = acl_stream_open,
    .stream_close = acl_stream_close,
    .exec = acl_exec,
    .load_value = acl_load_value,
    .interrupt = acl_interrupt,
    .kernel_offered = acl_kernel_offered,
    .binary_load = acl_binary_load,
    .binary_unload = acl_binary_unload,
    .fault_inject = acl_fault_inject,
    .op_offered = acl_op_offered,
};
