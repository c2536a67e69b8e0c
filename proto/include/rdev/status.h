/*
 * rdev/status.h — the one status enum of rdev, shared by runtime, server and
 * client. Codes reuse the CANN runtime's numbers (acl_rt.h / acl_base.h), so an
 * error means the same thing locally and remotely. Codes that CANN has no
 * number for live in rdev's own range, 900000 and up.
 */
#ifndef RDEV_STATUS_H
#define RDEV_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* XX(name, code, message) */
/* clang-format off */
#define RDEV_STATUS_MAP(XX)                                                          \
  XX(OK,                        0,      "success")                                   \
  XX(INVALID_PARAM,             100000, "invalid parameter")                         \
  XX(UNINITIALIZE,              100001, "runtime not initialized")                   \
  XX(RT_PARAM_INVALID,          107000, "invalid parameter (count exceeds destMax)") \
  XX(RT_INVALID_DEVICEID,       107001, "invalid device id")                         \
  XX(RT_WAIT_TIMEOUT,           107019, "wait timed out")                            \
  XX(RT_STREAM_ABORT,           107023, "stream aborted: its queued work discarded") \
  XX(OP_PARAM_NULLPTR,          161001, "operator argument is NULL")                 \
  XX(OP_PARAM_INVALID,          161002, "operator arguments are invalid")            \
  XX(BAD_ALLOC,                 200000, "memory allocation failed")                  \
  XX(API_NOT_SUPPORT,           200001, "operation not supported")                   \
  XX(INVALID_DEVICE,            200002, "invalid device")                            \
  XX(MEMORY_ADDRESS_UNALIGNED,  200003, "memory address not aligned")                \
  XX(INVALID_RESOURCE_HANDLE,   200005, "invalid resource handle")                   \
  XX(RT_MEMORY_ALLOCATION,      207001, "device memory allocation failed")           \
  XX(RT_DEVICE_OOM,             207018, "device out of memory")                      \
  XX(STORAGE_OVER_LIMIT,        300000, "resource limit exceeded")                   \
  XX(OP_RUNTIME_ERROR,          361001, "operator failed to run")                    \
  XX(INTERNAL_ERROR,            500000, "internal error")                            \
  XX(FAILURE,                   500001, "failure")                                   \
  XX(RT_AICORE_EXCEPTION,       507015, "kernel fault on device")                    \
  XX(RT_STREAM_SYNC_TIMEOUT,    507046, "stream synchronize timed out")              \
  XX(CANCELLED,                 900001, "cancelled: the work was discarded")         \
  XX(UNAVAILABLE,               900002, "server unavailable or connection lost")     \
  XX(UNAUTHENTICATED,           900003, "authentication failed")                     \
  XX(PERMISSION_DENIED,         900004, "permission denied")                         \
  XX(QUOTA_EXCEEDED,            900005, "quota exceeded")                            \
  XX(PROTOCOL,                  900006, "malformed or unexpected message")           \
  XX(UNKNOWN_KERNEL,            900007, "unknown kernel")                            \
  XX(KERNEL_ARGS,               900008, "kernel arguments do not match its signature") \
  XX(TRANSFER,                  900009, "transfer failed (network or HTTP)")          \
  XX(CHECKSUM,                  900010, "checksum mismatch")
/* clang-format on */

typedef enum {
#define RDEV_STATUS_ENUM_(name, code, msg) RDEV_##name = code,
  RDEV_STATUS_MAP(RDEV_STATUS_ENUM_)
#undef RDEV_STATUS_ENUM_
} rdev_status_t;

/* Message for a status code; never NULL (unknown codes give "unknown error"). */
const char *rdev_strerror(int status);

/* Symbolic name of a status code without the RDEV_ prefix, e.g. "RT_DEVICE_OOM";
 * "UNKNOWN" for codes outside the enum. Never NULL. */
const char *rdev_status_name(int status);

#ifdef __cplusplus
}
#endif
#endif
