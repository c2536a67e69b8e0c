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

#endif
