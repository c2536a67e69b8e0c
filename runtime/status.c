/* runtime/status.c — rdev_strerror and rdev_status_name over RDEV_STATUS_MAP. */
#include "rdev/status.h"

const char *rdev_strerror(int status) {
  switch (status) {
#define XX(name, code, msg) case code: return msg;
    RDEV_STATUS_MAP(XX)
#undef XX
  }
  return "unknown error";
}

const char *rdev_status_name(int status) {
  switch (status) {
#define XX(name, code, msg) case code: return #name;
    RDEV_STATUS_MAP(XX)
#undef XX
  }
  return "UNKNOWN";
}
