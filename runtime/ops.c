/*
 * runtime/ops.c — operator launches (rdev_rt_op_launch): a decoded,
 * checked call (rdev/ops.h) becomes a stream task once every tensor it
 * names lies inside one allocation of the stream's device, as a kernel's
 * pointer arguments must. The backend runs it (sim: sim/sim_ops*.c; acl:
 * the operator library it loads).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rt_engine.h"

/* Tensor t (parameter `what` of op `name`) against the allocations of s's device. */
static int check_reach(rdev_rt_stream_t *s, const char *name, const char *what, const rdev_tensor_t *t) {
  uint64_t lo, bytes, end, at0;
  if (rdev_tensor_reach(t, &lo, &bytes) || __builtin_add_overflow(t->addr, lo, &at0))
    return rt_fail(RDEV_OP_PARAM_INVALID, "aclnn%s: %s's strides and offset reach too far", name, what);
  if (bytes == 0) return RDEV_OK; /* empty: touches nothing */
  void *base;
  size_t size;
  int dev;
  const char *first = (const char *)(uintptr_t)at0;
  if (s->rt->be->lookup(s->rt->impl, first, &base, &size, &dev) != RDEV_OK)
    return rt_fail(RDEV_INVALID_PARAM, "aclnn%s: %s (0x%llx) is not device memory", name, what,
                   (unsigned long long)t->addr);
  if (dev != s->dev)
    return rt_fail(RDEV_INVALID_PARAM, "aclnn%s: %s is memory of device %d, the stream is on device %d", name, what,
                   dev, s->dev);
  uint64_t at = (uint64_t)(first - (const char *)base);
  if (at < lo) /* the storage must start in the allocation too: backends address elements from it */
    return rt_fail(RDEV_INVALID_PARAM, "aclnn%s: %s's storage (0x%llx) starts before its allocation", name, what,
                   (unsigned long long)t->addr);
  if (__builtin_add_overflow(at, bytes, &end) || end > size)
    return rt_fail(RDEV_INVALID_PARAM, "aclnn%s: %s needs %llu bytes at offset %llu of a %zu-byte buffer", name, what,
                   (unsigned long long)bytes, (unsigned long long)at, size);
  if (t->addr % rdev_dtype_size(t->dtype))
    return rt_fail(RDEV_MEMORY_ADDRESS_UNALIGNED, "aclnn%s: %s is not aligned to its %zu-byte elements", name, what,
                   rdev_dtype_size(t->dtype));
  return RDEV_OK;
}

static int launch(rdev_rt_stream_t *s, rdev_op_call_t *c) {
  char msg[256];
  int rc = rdev_op_check(c, msg, sizeof msg), count;
  if (rc) return rt_fail(rc, "%s", msg);
  const rdev_op_sig_t *sig = &rdev_op_table(&count)[c->op];
  for (int i = 0; i < c->nargs; i++) {
    const rdev_op_arg_t *a = &c->args[i];
    if (!a->present || (a->kind != RDEV_OPK_TENSOR && a->kind != RDEV_OPK_TENSOR_LIST)) continue;
    uint32_t n = a->kind == RDEV_OPK_TENSOR ? 1 : a->n;
    for (uint32_t k = 0; k < n; k++) {
      char what[96];
      if (a->kind == RDEV_OPK_TENSOR)
        snprintf(what, sizeof what, "%s", sig->params[i].name);
      else
        snprintf(what, sizeof what, "%s[%u]", sig->params[i].name, k);
      if ((rc = check_reach(s, sig->name, what, &a->v.t[k]))) return rc;
    }
  }
  if (s->rt->be->op_offered && !s->rt->be->op_offered(s->rt->impl, c->op))
    return rt_fail(RDEV_UNKNOWN_KERNEL, "operator aclnn%s is not offered by the %s backend", sig->name,
                   s->rt->be->name);
  rt_task_t t = {.op = RT_TASK_OP};
  t.u.op.call = c;
  return rt_engine_submit(s, &t);
}

int rdev_rt_op_launch(rdev_rt_stream_t *s, rdev_op_call_t *c) {
  rt_clear_error();
  if (!c) return rt_fail(RDEV_INVALID_PARAM, "operator call is NULL");
  int rc = rt_check_stream(NULL, s);
  if (!rc) rc = launch(s, c);
  if (rc) free(c); /* queued, the task owns it */
  return rc;
}

int rdev_rt_op_offered(rdev_rt_t *rt, const char *name) {
  int count;
  const rdev_op_sig_t *all = rdev_op_table(&count), *sig = rdev_op_find(name);
  if (!rt || !sig) return 0;
  return !rt->be->op_offered || rt->be->op_offered(rt->impl, (int)(sig - all));
}
