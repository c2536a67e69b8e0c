/*
 * client/cann/acl/acl_notify.c — notifies (aclrtCreateNotify and its
 * record, wait-and-reset and destroy) over rdev's value writes and waits:
 * a notify is 8 bytes of device memory, 1 when recorded; a wait waits for
 * 1 on its stream (holding no execution slot) and writes 0 behind it.
 * The records are under the library's lock and go with aclFinalize (the
 * memory with the session).
 */
#include <stdlib.h>

#include "acl/acl.h"
#include "acl_lib.h"

typedef struct notify {
  void *flag; /* device memory: 0 idle, 1 recorded */
  int dev;
  struct notify *next;
} notify_t;

static notify_t *notifies;

static notify_t *find(const void *n) {
  notify_t *p = notifies;
  while (p && p != n) p = p->next;
  return p;
}

void acl_notifies_forget(void) {
  while (notifies) {
    notify_t *n = notifies->next;
    free(notifies);
    notifies = n;
  }
}

aclError aclrtCreateNotify(aclrtNotify *notify, uint64_t flag) {
  if (!notify) return acl_fail(ACL_ERROR_INVALID_PARAM, "notify is NULL");
  if (flag & ~(uint64_t)ACL_NOTIFY_DEVICE_USE_ONLY)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "notify flags 0x%llx", (unsigned long long)flag);
  notify_t *n = calloc(1, sizeof *n);
  if (!n) return acl_fail(ACL_ERROR_BAD_ALLOC, "out of host memory");
  rdev_session_t *s;
  acl_lock();
  aclError rc = acl_on_device(&s, &n->dev);
  if (!rc) rc = acl_result(rdev_malloc(s, &n->flag, 64, RDEV_MEM_MALLOC_HUGE_FIRST), "aclrtCreateNotify");
  if (!rc) { /* rdevd zeroes new memory: idle */
    n->next = notifies;
    notifies = n;
    *notify = n;
    n = NULL;
  }
  acl_unlock();
  free(n);
  return rc;
}

aclError aclrtDestroyNotify(aclrtNotify notify) {
  rdev_session_t *s;
  acl_lock();
  aclError rc = acl_session(&s);
  notify_t **pp = &notifies;
  while (!rc && *pp && *pp != notify) pp = &(*pp)->next;
  notify_t *n = rc ? NULL : *pp;
  if (!rc && !n) rc = acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a notify", notify);
  if (n) *pp = n->next;
  acl_unlock();
  if (!n) return rc;
  rc = acl_result(rdev_free(s, n->flag), "aclrtDestroyNotify"); /* work queued on it still sees it */
  free(n);
  return rc;
}

/* Lock held for the lookup: the notify's flag and the rdev stream. */
static aclError resolve(aclrtNotify notify, aclrtStream stream, void **flag, rdev_stream_t **st) {
  acl_lock();
  notify_t *n = find(notify);
  aclError rc = n ? acl_stream_of(stream, st) : acl_fail(ACL_ERROR_INVALID_PARAM, "%p is not a notify", notify);
  if (n) *flag = n->flag;
  acl_unlock();
  return rc;
}

aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream) {
  void *flag;
  rdev_stream_t *st;
  aclError rc = resolve(notify, stream, &flag, &st);
  if (!rc) rc = acl_result(rdev_value_write(st, flag, 1), "aclrtRecordNotify");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

/* timeout in seconds, 0 for ever, as CANN; a wait that times out is
 * ACL_ERROR_RT_WAIT_TIMEOUT at the stream's next synchronize. */
aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, uint32_t timeout) {
  void *flag;
  rdev_stream_t *st;
  aclError rc = resolve(notify, stream, &flag, &st);
  if (rc) return rc;
  uint32_t ms = timeout > UINT32_MAX / 1000 ? UINT32_MAX : timeout * 1000;
  rc = acl_result(rdev_value_wait(st, flag, 1, RDEV_VALUE_WAIT_EQ, ms), "aclrtWaitAndResetNotify");
  if (!rc) rc = acl_result(rdev_value_write(st, flag, 0), "aclrtWaitAndResetNotify");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}
