/*
 * client/cann/include/acl/acl_base.h — the whole base of the CANN API (ACL 1.17) as rdev offers it, in one include:
 * base types and numbers (acl_base_rt.h), tensor descriptions (acl_base_mdl.h), runtime error numbers
 * (error_codes/rt_error_codes.h) and graph-engine error numbers (error_codes/ge_error_codes.h). It declares nothing
 * of its own.
 */
#ifndef INC_EXTERNAL_ACL_ACL_BASE_H_
#define INC_EXTERNAL_ACL_ACL_BASE_H_

#include <stdint.h>
#include <stddef.h>

#include "acl_base_rt.h"
#include "acl_base_mdl.h"
#include "error_codes/rt_error_codes.h"
#include "error_codes/ge_error_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* INC_EXTERNAL_ACL_ACL_BASE_H_ */
