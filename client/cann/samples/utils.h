/*
 * client/cann/samples/utils.h — what the CANN runtime samples' main.cpp
 * files include as "utils.h" besides the acl headers (their
 * example/utils.h): the log macros and CHECK_ERROR, written for rdev, so
 * that a sample compiles unmodified.
 */
#ifndef RDEV_SAMPLES_UTILS_H
#define RDEV_SAMPLES_UTILS_H

#include <cstdint>
#include <cstdio>

#include "acl/acl.h"

#define INFO_LOG(fmt, ...) std::fprintf(stdout, "[INFO]  " fmt "\n", ##__VA_ARGS__)
#define WARN_LOG(fmt, ...) std::fprintf(stdout, "[WARN]  " fmt "\n", ##__VA_ARGS__)
#define ERROR_LOG(fmt, ...) std::fprintf(stderr, "[ERROR]  " fmt "\n", ##__VA_ARGS__)

/* Logs the failing call and its code, and returns -1 from the caller. */
#define CHECK_ERROR(call) \
  do { \
    aclError check_ret_ = (call); \
    if (check_ret_ != ACL_SUCCESS) { \
      ERROR_LOG("Operation failed: %s returned error code %d", #call, static_cast<int32_t>(check_ret_)); \
      return -1; \
    } \
  } while (0)

#endif
