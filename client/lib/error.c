/*
 * client/lib/error.c — the calling thread's last error (what
 * rdev_session_last_error returns) and the mapping of gRPC statuses to rdev
 * ones. Owns the thread-local message; calls nothing of the library.
 */
#include <stdarg.h>
#include <stdio.h>

#include "client.h"

static _Thread_local char tl_err[512];

const char *rdev_session_last_error(void) { return tl_err; }

int cl_error(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_err, sizeof tl_err, fmt, ap);
  va_end(ap);
  return status;
}

int cl_error_msg(int status, const char *msg) {
  snprintf(tl_err, sizeof tl_err, "%s", msg && *msg ? msg : rdev_strerror(status));
  return status;
}

int cl_grpc_status(grpc_status_code code) {
  switch (code) {
    case GRPC_STATUS_OK: return RDEV_OK;
    case GRPC_STATUS_UNAUTHENTICATED: return RDEV_UNAUTHENTICATED;
    case GRPC_STATUS_PERMISSION_DENIED: return RDEV_PERMISSION_DENIED;
    case GRPC_STATUS_RESOURCE_EXHAUSTED: return RDEV_QUOTA_EXCEEDED;
    case GRPC_STATUS_UNIMPLEMENTED: return RDEV_API_NOT_SUPPORT;
    case GRPC_STATUS_INVALID_ARGUMENT: return RDEV_INVALID_PARAM;
    case GRPC_STATUS_INTERNAL: return RDEV_INTERNAL_ERROR;
    case GRPC_STATUS_NOT_FOUND: return RDEV_INVALID_RESOURCE_HANDLE;
    default: return RDEV_UNAVAILABLE;
  }
}
