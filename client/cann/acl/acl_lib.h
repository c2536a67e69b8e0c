/*
 * client/cann/acl/acl_lib.h — what the library's files share (not
 * installed): the call that answers an ACL function rdev does not offer.
 */
#ifndef RDEV_ACL_LIB_H
#define RDEV_ACL_LIB_H

#include "acl/acl_rt.h"
#include "rdev/rdev.h"

/* Records "NAME is not offered by rdev" for the calling thread's
 * aclGetRecentErrMsg and returns ACL_ERROR_API_NOT_SUPPORT. */
aclError acl_unsupported(const char *name);

/* Records code and a message (printf) as the calling thread's last error
 * and returns code (acl_session.c). */
aclError acl_fail(aclError code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The calling thread's last error code and message, saved and put back
 * (around callbacks that run inside a call). */
typedef struct {
  aclError code;
  char msg[512];
} acl_error_state_t;
void acl_error_save(acl_error_state_t *st);
void acl_error_restore(const acl_error_state_t *st);

/* The calling thread's last error code (aclrtPeekAtLastError); clear = 1
 * resets it to ACL_SUCCESS (aclrtGetLastError). */
aclError acl_last_error(int clear);

/* The library's lock (acl_session.c): the session, its current device,
 * and the records of acl.c and acl_stream.c. */
void acl_lock(void);
void acl_unlock(void);

/* Lock held: the process's session, or NULL (none: no error recorded). */
rdev_session_t *acl_session_if_open(void);

/* Lock held: the kernel records forget what the session's end freed
 * (aclFinalize; acl_kernel.c). */
void acl_kernels_forget(void);
/* Lock held: the notify records go (aclFinalize; acl_notify.c). */
void acl_notifies_forget(void);

/* A synchronize of stream st (stream id `id`, device dev) returned code:
 * the registered exception callbacks run for a failure of its work
 * (acl_stream.c). No lock held. */
void acl_exception_report(aclError code, int32_t id, int dev);

/* Lock held: the process's session in *s, or an error (no aclInit, or a
 * child after fork). */
aclError acl_session(rdev_session_t **s);

/* As acl_session, taking and dropping the lock itself: for the calls that
 * name their memory by address and need no device, so that other threads
 * go on while they run. */
aclError acl_session_get(rdev_session_t **s);

/* Lock held: the session in *s, set to the calling thread's device (*dev),
 * or an error (as acl_session, or no device set on this thread). */
aclError acl_on_device(rdev_session_t **s, int *dev);

/* An rdev call's status as the ACL call's, its message kept for
 * aclGetRecentErrMsg (what names the call). */
aclError acl_result(int rc, const char *what);

/* Lock held: the rdev stream behind stream; NULL is the calling thread's
 * device's default stream, made on first use (acl_stream.c). */
aclError acl_stream_of(aclrtStream stream, rdev_stream_t **out);

/* As acl_stream_of, taking and dropping the lock itself. */
aclError acl_stream_get(aclrtStream stream, rdev_stream_t **out);

/* Lock held: forgets every stream record (aclFinalize closed them all). */
void acl_streams_forget(void);

/* The calling thread's device (-1: none set), and setting it. */
int acl_thread_device(void);
void acl_thread_device_set(int dev);

/* Lock held: takes the session away (aclFinalize) into *closing, for the
 * caller to close once it let go of the lock; or an error (none, or a
 * parent's; ACL_ERROR_REPEAT_FINALIZE after the first). */
aclError acl_session_end(rdev_session_t **closing);

/* aclFinalize, before the session closes (no lock held): waits until no
 * callback runs, then subscriptions end and reports never processed let
 * their streams go (acl_callback.c). */
void acl_callbacks_end(void);

/* A stream is being destroyed: its subscription leaves the list (no new
 * launch or subscription finds it; callbacks already launched still reach
 * their thread) and is returned; once the stream is gone,
 * acl_callbacks_stream_gone ends it. No lock held. */
void *acl_callbacks_stream_detach(rdev_stream_t *st);
void acl_callbacks_stream_gone(void *detached);

/* The callback calls past their argument checks, their stream resolved
 * (acl_callback_stream.c), with the contracts of aclrtSubscribeReport,
 * aclrtUnSubscribeReport, aclrtLaunchCallback and aclrtLaunchHostFunc
 * (acl_callback.c). No lock held. */
aclError acl_callbacks_subscribe(uint64_t threadId, rdev_stream_t *st);
aclError acl_callbacks_unsubscribe(uint64_t threadId, rdev_stream_t *st);
aclError acl_callbacks_launch(rdev_stream_t *st, aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType);
aclError acl_callbacks_launch_host_func(rdev_stream_t *st, aclrtHostFunc fn, void *args);

/* Whether the calling thread runs a callback or host function now. */
int acl_in_callback(void);

/* The process's device count, or an error (no session). */
aclError acl_device_count(int *count);

/* Device dev's memory, total and free; or an error (no session, no such device). */
aclError acl_device_memory(int dev, size_t *total, size_t *free_bytes);

/* The name of the calling thread's device, copied into name; or an error. */
aclError acl_device_name(char *name, size_t len);

#endif
