/*
 * client/acl/lib/acl_lib.h — what the library's files share (not
 * installed): the call that answers an ACL function rdev does not offer.
 */
#ifndef RDEV_ACL_LIB_H
#define RDEV_ACL_LIB_H

#include "acl/acl_base.h"

/* Records "NAME is not offered by rdev" for the calling thread's
 * aclGetRecentErrMsg and returns ACL_ERROR_API_NOT_SUPPORT. */
aclError acl_unsupported(const char *name);

/* Records code and a message (printf) as the calling thread's last error
 * and returns code (acl.c). */
aclError acl_fail(aclError code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The calling thread's last error code (aclrtPeekAtLastError); clear = 1
 * resets it to ACL_SUCCESS (aclrtGetLastError). */
aclError acl_last_error(int clear);

/* The process's device count, or an error (no session). */
aclError acl_device_count(int *count);

/* The name of the calling thread's device, copied into name; or an error. */
aclError acl_device_name(char *name, size_t len);

#endif
