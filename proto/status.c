/* proto/status.c — rdev_strerror and rdev_status_name over RDEV_STATUS_MAP,
 * and the one table of kernel argument type names (rdev/types.h). */
#include "rdev/status.h"
#include "rdev/types.h"

const char *rdev_strerror(int status) {
  switch (status) {
#define XX(name, code, msg) \
  case code: return msg;
    RDEV_STATUS_MAP(XX)
#undef XX
  }
  return "unknown error";
}

const char *rdev_status_name(int status) {
  switch (status) {
#define XX(name, code, msg) \
  case code: return #name;
    RDEV_STATUS_MAP(XX)
#undef XX
  }
  return "UNKNOWN";
}

const char *rdev_arg_type_name(rdev_arg_type_t t) {
  switch (t) {
    case RDEV_ARG_PTR: return "ptr";
    case RDEV_ARG_I32: return "i32";
    case RDEV_ARG_U32: return "u32";
    case RDEV_ARG_I64: return "i64";
    case RDEV_ARG_U64: return "u64";
    case RDEV_ARG_F32: return "f32";
    case RDEV_ARG_F64: return "f64";
  }
  return "unknown";
}
