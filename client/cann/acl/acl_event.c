/*
 * client/cann/acl/acl_event.c — the event calls of the ACL library:
 * create, record, wait, reset, synchronize, query, timestamps and elapsed
 * time, over rdev's events (rdev/rdev.h).
 */
#include "acl/acl.h"
#include "acl_lib.h"

/* The event calls that need no device: the session must still be there
 * (not finalized, not a parent's). */
static aclError live(void) {
  rdev_session_t *s;
  return acl_session_get(&s);
}

/* When the event's latest record completed, in microseconds of the
 * device's clock (monotonic time on the sim). */
aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp) {
  if (!event || !timestamp) return acl_fail(ACL_ERROR_INVALID_PARAM, "event or timestamp is NULL");
  uint64_t ns = 0;
  aclError rc = live();
  if (!rc) rc = acl_result(rdev_event_timestamp(event, &ns), "aclrtEventGetTimestamp");
  if (!rc) *timestamp = ns / 1000;
  return rc;
}

aclError aclrtCreateEvent(aclrtEvent *event) {
  if (!event) return acl_fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  rdev_session_t *s;
  int dev;
  acl_lock();
  aclError rc = acl_on_device(&s, &dev);
  if (!rc) rc = acl_result(rdev_event_create(s, (rdev_event_t **)event), "aclrtCreateEvent");
  acl_unlock();
  return rc;
}

/* Every event is timed (rdev_event_elapsed_ms works on any two). */
aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
  if (flag &
      ~(uint32_t)(ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_DEVICE_USE_ONLY))
    return acl_fail(ACL_ERROR_INVALID_PARAM,
                    "event flags 0x%x: only SYNC, TIME_LINE, CAPTURE_STREAM_PROGRESS and DEVICE_USE_ONLY are offered",
                    (unsigned)flag);
  return aclrtCreateEvent(event);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  if (!event) return acl_fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  aclError rc = live();
  return rc ? rc : acl_result(rdev_event_destroy(event), "aclrtDestroyEvent");
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  if (!event) return acl_fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_result(rdev_event_record(event, st), "aclrtRecordEvent");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  if (!event) return acl_fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_result(rdev_stream_wait_event(st, event), "aclrtStreamWaitEvent");
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

/* rdev's events need no reset to be used again: a record replaces the one
 * before, and a wait waits for the latest record when it was queued. So
 * the reset, checked like CANN's, changes nothing (docs/acl.md). */
aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  if (!event) return acl_fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  rdev_stream_t *st = NULL;
  aclError rc = acl_stream_get(stream, &st);
  int done = 0; /* the event must be one of the session's */
  return rc ? rc : acl_result(rdev_event_query(event, &done), "aclrtResetEvent");
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
  if (!event) return acl_fail(ACL_ERROR_INVALID_PARAM, "event is NULL");
  aclError rc = live();
  if (rc) return rc;
  int r = rdev_event_synchronize(event, timeout);
  if (r == RDEV_RT_WAIT_TIMEOUT) /* CANN's number for an event's */
    return acl_fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "aclrtSynchronizeEventWithTimeout: not complete within %d ms",
                    (int)timeout);
  return acl_result(r, "aclrtSynchronizeEvent");
}

/* Whether the event's latest record completed; an event never recorded is
 * not ready, as CANN reports it (rdev's query says it waits for nothing). */
static aclError recorded_done(aclrtEvent event, int *done, const char *what) {
  aclError rc = live();
  if (!rc) rc = acl_result(rdev_event_query(event, done), what);
  uint64_t ns;
  if (!rc && *done && rdev_event_timestamp(event, &ns) != RDEV_OK) *done = 0;
  return rc;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) { return aclrtSynchronizeEventWithTimeout(event, -1); }

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
  if (!event || !status) return acl_fail(ACL_ERROR_INVALID_PARAM, "event or status is NULL");
  int done = 0;
  aclError rc = recorded_done(event, &done, "aclrtQueryEventStatus");
  if (!rc) *status = done ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return rc;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
  if (!event || !status) return acl_fail(ACL_ERROR_INVALID_PARAM, "event or status is NULL");
  int done = 0;
  aclError rc = recorded_done(event, &done, "aclrtQueryEvent");
  if (!rc) *status = done ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
  return rc;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
  if (!ms || !startEvent || !endEvent) return acl_fail(ACL_ERROR_INVALID_PARAM, "NULL argument");
  aclError rc = live();
  return rc ? rc : acl_result(rdev_event_elapsed_ms(ms, startEvent, endEvent), "aclrtEventElapsedTime");
}
