/*
 * tests/acl/acl_check.h — the checks the ACL test programs share: CHECK
 * (a condition) and CHECK_RET (a call's ACL return code, printing
 * aclGetRecentErrMsg when it differs); failures counts them.
 */
#ifndef RDEV_TESTS_ACL_CHECK_H
#define RDEV_TESTS_ACL_CHECK_H

#include <stdio.h>

#include "acl/acl.h"

static int failures;

#define CHECK(cond) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++; \
    } \
  } while (0)
#define CHECK_RET(call, want) \
  do { \
    aclError r_ = (call); \
    if (r_ != (aclError)(want)) { \
      const char *m_ = aclGetRecentErrMsg(); \
      fprintf(stderr, "%s:%d: %s returned %d, want %d (%s)\n", __FILE__, __LINE__, #call, r_, (int)(want), \
              m_ ? m_ : ""); \
      failures++; \
    } \
  } while (0)

#endif
