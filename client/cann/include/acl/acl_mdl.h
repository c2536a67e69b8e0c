/*
 * client/cann/include/acl/acl_mdl.h — the model API of CANN (aclmdl* model loading and execution) as rdev offers it:
 * nothing yet. In the open CANN runtime this file is an empty placeholder that the model package replaces; rdev keeps
 * it so that acl/acl.h compiles. It brings in the base types only; the captured-graph calls (aclmdlRI*) are in
 * acl_rt.h, as in CANN.
 */
#ifndef INC_EXTERNAL_ACL_ACL_MDL_H_
#define INC_EXTERNAL_ACL_ACL_MDL_H_

#include "acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif

#endif /* INC_EXTERNAL_ACL_ACL_MDL_H_ */
