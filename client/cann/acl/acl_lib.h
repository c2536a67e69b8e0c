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

/* A synchronize of stream st (stream id `id`, device dev; mark:
 * acl_task_mark before it) returned code: the registered exception
 * callbacks run for a failure of its work (acl_stream.c). No lock held. */
void acl_exception_report(aclError code, rdev_stream_t *st, int32_t id, int dev, uint64_t mark);

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

/* The two kinds of subscription of a stream: aclrtSubscribeReport's
 * (callbacks of aclrtLaunchCallback) and aclrtSubscribeHostFunc's (host
 * functions of aclrtLaunchHostFunc). */
typedef enum { ACL_SUB_REPORT, ACL_SUB_HOST_FUNC } acl_sub_kind_t;

/* A stream is being destroyed: its subscriptions leave the list (no new
 * launch or subscription finds it; callbacks already launched still reach
 * their thread) and is returned; once the stream is gone,
 * acl_callbacks_stream_gone ends it. No lock held. */
void *acl_callbacks_stream_detach(rdev_stream_t *st);
void acl_callbacks_stream_gone(void *detached);

/* The callback calls past their argument checks, their stream resolved
 * (acl_callback_stream.c), with the contracts of aclrtSubscribeReport /
 * aclrtSubscribeHostFunc and their UnSubscribe (by kind),
 * aclrtLaunchCallback and aclrtLaunchHostFunc (acl_callback.c). No lock
 * held. */
aclError acl_callbacks_subscribe(uint64_t threadId, rdev_stream_t *st, acl_sub_kind_t kind);
aclError acl_callbacks_unsubscribe(uint64_t threadId, rdev_stream_t *st, acl_sub_kind_t kind);
aclError acl_callbacks_launch(rdev_stream_t *st, aclrtCallback fn, void *userData, aclrtCallbackBlockType blockType);
aclError acl_callbacks_launch_host_func(rdev_stream_t *st, aclrtHostFunc fn, void *args);

/* ---- tasks (acl_task.c): what is queued on each stream ---------------------------- */

/* Lock held: stream st of device dev is tracked from now on (made by the
 * program, or a default stream). */
void acl_task_stream_add(rdev_stream_t *st, int dev);
/* What a stream's tracking leaves behind to free once the stream itself is
 * destroyed (its work may still use them until then). */
typedef struct {
  rdev_event_t *fence;
  void *marker;
} acl_task_leftover_t;
/* Lock held: st is no longer tracked; *left gets what to free with
 * acl_task_leftover_free (no lock held) after rdev_stream_destroy. */
void acl_task_stream_remove(rdev_stream_t *st, acl_task_leftover_t *left);
void acl_task_leftover_free(acl_task_leftover_t *left);
/* Lock held: forgets every record (aclFinalize closed the session). */
void acl_tasks_forget(void);
/* Lock held: the clock before a synchronize of a stream is sent; once it
 * returned acl_task_sync_done, acl_task_synced(st, mark) (lock held) says
 * that the stream's work up to the mark ran. */
uint64_t acl_task_mark(void);
void acl_task_synced(rdev_stream_t *st, uint64_t mark);
int acl_task_sync_done(aclError rc);
/* A kernel launch on st is about to be sent: its task id (written to the
 * stream's marker first in ACL_STOP_ON_FAILURE mode). Takes the lock. */
uint32_t acl_task_reserve(rdev_stream_t *st);
/* A task was sent on st (after the rdev call returned success): it ticks
 * the clock, becomes the calling thread's last task (id 0: a new id), and,
 * for a kernel (func not NULL), its function and a copy of its arguments
 * are kept until the stream's next synchronize. Takes the lock. */
void acl_task_queued(rdev_stream_t *st, uint32_t id, aclrtFuncHandle func, const void *args, size_t len);
/* st was set to ACL_STOP_ON_FAILURE (stop): from now on each kernel's task
 * id is written to device memory of the stream's before the kernel runs,
 * so that a failure names its kernel. Takes the lock (one round trip, the
 * first time). */
aclError acl_task_stop_mode(rdev_stream_t *st, int stop);
/* A synchronize of st (mark: acl_task_mark before it) reported a failure:
 * the kernel that failed, when the library can tell (the one kernel queued
 * since the last synchronize, or, in ACL_STOP_ON_FAILURE mode, the one the
 * marker names): its id, function and a copy of its arguments (*args is
 * the caller's to free); else ACL_ERROR_INVALID_EXCEPTION_INFO. Takes the
 * lock; may read the marker (one round trip). */
aclError acl_task_failed(rdev_stream_t *st, uint64_t mark, uint32_t *id, aclrtFuncHandle *func, void **args,
                         uint32_t *len);

/* A synchronous copy or memset in order after the work queued earlier on
 * the streams of the calling thread's device. acl_ordered_begin (no lock
 * held) gives in o->st an internal stream of that device that waits for
 * every one of them with work queued since its last synchronize, or NULL
 * when none has (and always is 0), the thread has no device or runs a
 * callback or host function (its stream waits for it): then the caller
 * copies the plain synchronous way. The caller queues its work on
 * o->st and calls acl_ordered_end(o, rc of that, what), which synchronizes
 * o->st (one round trip for it all) and returns rc, or the synchronize's
 * error. */
typedef struct {
  rdev_stream_t *st;
  int dev;
  uint64_t mark;
} acl_ordered_t;
aclError acl_ordered_begin(acl_ordered_t *o, int always);
aclError acl_ordered_end(acl_ordered_t *o, aclError rc, const char *what);

/* Whether the calling thread runs a callback or host function now. */
int acl_in_callback(void);

/* The process's device count, or an error (no session). */
aclError acl_device_count(int *count);

/* Device dev's memory, total and free; or an error (no session, no such device). */
aclError acl_device_memory(int dev, size_t *total, size_t *free_bytes);

/* Device dev's fixed properties (dev < 0: the calling thread's device),
 * from the session's open, without a round trip; or an error. */
aclError acl_device_props(int dev, rdev_device_props_t *props);

/* The name of the calling thread's device, copied into name; or an error. */
aclError acl_device_name(char *name, size_t len);

#endif
