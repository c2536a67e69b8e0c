/*
 * client/cann/acl/acl_callback_stream.c — the callback calls that name a
 * stream: aclrtSubscribeReport, aclrtUnSubscribeReport,
 * aclrtSubscribeHostFunc, aclrtUnSubscribeHostFunc, aclrtLaunchCallback
 * and aclrtLaunchHostFunc check their arguments,
 * resolve the aclrtStream to its rdev stream (acl_stream.c) and hand it to
 * the callbacks' machinery (acl_callback.c).
 */
#include "acl/acl.h"
#include "acl_lib.h"

aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
  rdev_stream_t *st;
  aclError rc = acl_stream_get(stream, &st);
  if (rc) return rc;
  return acl_callbacks_subscribe(threadId, st, ACL_SUB_REPORT);
}

aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
  rdev_stream_t *st;
  aclError rc = acl_stream_get(stream, &st);
  if (rc) return rc;
  return acl_callbacks_unsubscribe(threadId, st, ACL_SUB_REPORT);
}

/* Host functions launched on exeStream from now on run on that thread, in
 * its aclrtProcessHostFunc (the stream waits for each). */
aclError aclrtSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream) {
  rdev_stream_t *st;
  aclError rc = acl_stream_get(exeStream, &st);
  if (rc) return rc;
  return acl_callbacks_subscribe(hostFuncThreadId, st, ACL_SUB_HOST_FUNC);
}

/* Host functions that reached the stream and were not run never run; the
 * stream goes on. */
aclError aclrtUnSubscribeHostFunc(uint64_t hostFuncThreadId, aclrtStream exeStream) {
  rdev_stream_t *st;
  aclError rc = acl_stream_get(exeStream, &st);
  if (rc) return rc;
  return acl_callbacks_unsubscribe(hostFuncThreadId, st, ACL_SUB_HOST_FUNC);
}

aclError aclrtLaunchCallback(aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType, aclrtStream stream) {
  if (!fn) return acl_fail(ACL_ERROR_INVALID_PARAM, "fn is NULL");
  if (blockType != ACL_CALLBACK_NO_BLOCK && blockType != ACL_CALLBACK_BLOCK)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "unknown callback block type %d", (int)blockType);
  rdev_stream_t *st;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_callbacks_launch(st, fn, userData, blockType);
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}

aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args) {
  if (!fn) return acl_fail(ACL_ERROR_INVALID_PARAM, "fn is NULL");
  rdev_stream_t *st;
  aclError rc = acl_stream_get(stream, &st);
  if (!rc) rc = acl_callbacks_launch_host_func(st, fn, args);
  if (!rc) acl_task_queued(st, 0, NULL, NULL, 0);
  return rc;
}
