/*
 * aclnn/aclnn_base.h — what every operator header (aclnnop/aclnn_*.h)
 * includes: the objects (acl_meta.h) and the library's start and end.
 * CANN's declarations; compiles as C and C++. docs/aclnn.md.
 */
#ifndef OP_API_OP_API_COMMON_INC_EXTERNAL_ACLNN_BASE_H
#define OP_API_OP_API_COMMON_INC_EXTERNAL_ACLNN_BASE_H

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* As CANN: optional. The library needs no set-up of its own (operators
 * run on the process's ACL session, aclInit's); configPath is not read.
 * Return 0. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize(void);

#ifdef __cplusplus
}
#endif

#endif
