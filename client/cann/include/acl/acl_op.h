/*
 * client/cann/include/acl/acl_op.h — the operator API of CANN (aclop*) as rdev offers it: nothing yet. In the open
 * CANN runtime this file is an empty placeholder that the operator package replaces; rdev keeps it so that
 * acl/acl.h compiles. It brings in the base types only.
 */
#ifndef INC_EXTERNAL_ACL_ACL_OP_H_
#define INC_EXTERNAL_ACL_ACL_OP_H_

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* INC_EXTERNAL_ACL_ACL_OP_H_ */
