/*
 * client/cann/include/acl/acl.h — the one include of the CANN API (ACL 1.17) as rdev offers it: the runtime
 * (acl_rt.h, which also declares aclInit/aclFinalize), and the operator and model placeholders (acl_op.h,
 * acl_mdl.h). Programs written against CANN's `#include "acl/acl.h"` compile unmodified with client/cann/include on
 * the include path; see docs/acl.md.
 */
#ifndef INC_EXTERNAL_ACL_ACL_H_
#define INC_EXTERNAL_ACL_ACL_H_

#include "acl_rt.h"
#include "acl_op.h"
#include "acl_mdl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Size of an IPC handle in classic CANN 8.x, whose acl.h defines it; the 1.17 acl_rt.h does not. */
#ifndef ACL_IPC_HANDLE_SIZE
#define ACL_IPC_HANDLE_SIZE 65
#endif

#ifdef __cplusplus
}
#endif

#endif /* INC_EXTERNAL_ACL_ACL_H_ */
