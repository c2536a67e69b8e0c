/*
 * runtime/acl/acl_context.c — the calling thread's current CANN context,
 * and failures that carry the CANN runtime's text. CANN runs device work in
 * the calling thread's current context: every thread that calls it must
 * make the device's context current first. Every entry of the acl backend
 * does (acl_enter), through a per-thread cache, so that it costs one
 * comparison when the thread's context is already the device's.
 */
#include <stdatomic.h>

#include "acl_internal.h"

static atomic_uint_fast64_t next_gen = 1; /* instance numbers: a cache entry names one */

/* The context this thread made current last: instance gen, device. */
static _Thread_local struct {
  uint64_t gen;
  int dev;
} current;

int acl_fail(acl_t *a, int code, const char *what) {
  const char *msg = a->api->GetRecentErrMsg();
  return rt_fail(code, "%s failed (%d)%s%s", what, code, msg && *msg ? ": " : "", msg ? msg : "");
}

int acl_enter(acl_t *a, int dev) {
  if (current.gen == a->gen && current.dev == dev) return RDEV_OK;
  int e = a->api->rtSetCurrentContext(a->devs[dev].ctx);
  if (e) return acl_fail(a, e, "aclrtSetCurrentContext");
  current.gen = a->gen;
  current.dev = dev;
  return RDEV_OK;
}

uint64_t acl_context_gen(void) { return atomic_fetch_add(&next_gen, 1); }

void acl_forget(uint64_t gen) {
  if (!gen || current.gen == gen) current.gen = 0;
}
