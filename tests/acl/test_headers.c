/*
 * tests/acl/test_headers.c — compile-and-run check of rdev's ACL headers (client/cann/include/acl/) as C11: the exact
 * type of every function (the prototypes of the open CANN runtime 1.17, parameter names dropped), enumerator values,
 * error numbers, macro values and LP64 type layouts, as docs/acl.md lists their sources. It needs the headers only:
 * nothing is called or linked (the checks use __typeof__ and sizeof), so it builds without any ACL library.
 * Exit status 0 when every check holds; the compile-time checks fail the build.
 */
#include "acl/acl.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SAME_TYPE(a, b) __builtin_types_compatible_p(a, b)
/* fn is declared with exactly this type: no call, no address taken at run time. */
#define CHECK_FN(fn, type) _Static_assert(SAME_TYPE(__typeof__(&fn), type), "type of " #fn)
/* name is an integer constant expression (an enumerator or a #define) with this value. */
#define CHECK_VALUE(name, value) _Static_assert((name) == (value), "value of " #name)
/* name is an object of type const T (a static const, never a macro); its value is checked in main. */
#define CHECK_CONST(name, T) _Static_assert(SAME_TYPE(__typeof__(&name), const T *), "type of " #name)
#define CHECK_SIZE(T, size) _Static_assert(sizeof(T) == (size), "size of " #T)
#define CHECK_OFFSET(T, member, offset) _Static_assert(offsetof(T, member) == (offset), "offset of " #T "." #member)

/* ---- basic types ------------------------------------------------------------------------------------ */

CHECK_VALUE(SAME_TYPE(aclError, int), 1);
CHECK_VALUE(SAME_TYPE(aclFloat16, uint16_t), 1);
CHECK_SIZE(aclFloat16, 2);
CHECK_VALUE(SAME_TYPE(aclrtStream, void *), 1);
CHECK_VALUE(SAME_TYPE(aclmdlRITask, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtEvent, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtContext, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtNotify, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtCntNotify, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtLabel, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtLabelList, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtMbuf, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtAllocatorDesc, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtAllocator, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtAllocatorBlock, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtAllocatorAddr, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtTaskGrp, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtDrvMemHandle, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtBinary, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtBinHandle, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtFuncHandle, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtArgsHandle, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtParamHandle, void *), 1);
CHECK_VALUE(SAME_TYPE(aclmdlRI, void *), 1);
CHECK_VALUE(SAME_TYPE(aclmdlRICondHandle, void *), 1);
CHECK_VALUE(SAME_TYPE(aclrtCallback, void (*)(void *)), 1);
CHECK_VALUE(SAME_TYPE(aclrtHostFunc, void (*)(void *)), 1);
CHECK_VALUE(SAME_TYPE(aclrtExceptionInfoCallback, void (*)(aclrtExceptionInfo *)), 1);
CHECK_VALUE(SAME_TYPE(aclrtAllocatorAllocFunc, void *(*)(aclrtAllocator, size_t)), 1);
CHECK_VALUE(SAME_TYPE(aclrtAllocatorFreeFunc, void (*)(aclrtAllocator, aclrtAllocatorBlock)), 1);
CHECK_VALUE(SAME_TYPE(aclrtApiFunc, int (*)(void)), 1);
CHECK_SIZE(aclrtMemcpyKind, sizeof(int));
CHECK_SIZE(aclDataType, sizeof(int));

/* The checks below name deprecated functions and enumerators on purpose. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* ---- function types, by header --------------------------------------------------------------------- */

/* acl_base_rt.h */
CHECK_FN(aclFloat16ToFloat, float (*)(aclFloat16));
CHECK_FN(aclFloatToFloat16, aclFloat16 (*)(float));
CHECK_FN(aclDataTypeSize, size_t (*)(aclDataType));
CHECK_FN(aclCreateDataBuffer, aclDataBuffer *(*)(void *, size_t));
CHECK_FN(aclDestroyDataBuffer, aclError (*)(const aclDataBuffer *));
CHECK_FN(aclUpdateDataBuffer, aclError (*)(aclDataBuffer *, void *, size_t));
CHECK_FN(aclGetDataBufferAddr, void *(*)(const aclDataBuffer *));
CHECK_FN(aclGetDataBufferSize, uint32_t (*)(const aclDataBuffer *));
CHECK_FN(aclGetDataBufferSizeV2, size_t (*)(const aclDataBuffer *));
CHECK_FN(aclAppLog, void (*)(aclLogLevel, const char *, const char *, uint32_t, const char *, ...));
CHECK_FN(aclrtGetSocName, const char *(*)(void));
CHECK_FN(aclGetCannAttributeList, aclError (*)(const aclCannAttr **, size_t *));
CHECK_FN(aclGetCannAttribute, aclError (*)(aclCannAttr, int32_t *));
CHECK_FN(aclGetDeviceCapability, aclError (*)(uint32_t, aclDeviceInfo, int64_t *));

/* acl_base_mdl.h */
CHECK_FN(aclCreateTensorDesc, aclTensorDesc *(*)(aclDataType, int, const int64_t *, aclFormat));
CHECK_FN(aclDestroyTensorDesc, void (*)(const aclTensorDesc *));
CHECK_FN(aclTransTensorDescFormat, aclError (*)(const aclTensorDesc *, aclFormat, aclTensorDesc **));
CHECK_FN(aclGetTensorDescType, aclDataType (*)(const aclTensorDesc *));
CHECK_FN(aclGetTensorDescFormat, aclFormat (*)(const aclTensorDesc *));
CHECK_FN(aclGetTensorDescSize, size_t (*)(const aclTensorDesc *));
CHECK_FN(aclGetTensorDescElementCount, size_t (*)(const aclTensorDesc *));
CHECK_FN(aclGetTensorDescNumDims, size_t (*)(const aclTensorDesc *));
CHECK_FN(aclGetTensorDescDim, int64_t (*)(const aclTensorDesc *, size_t));
CHECK_FN(aclGetTensorDescDimV2, aclError (*)(const aclTensorDesc *, size_t, int64_t *));
CHECK_FN(aclGetTensorDescDimRange, aclError (*)(const aclTensorDesc *, size_t, size_t, int64_t *));
CHECK_FN(aclGetTensorDescName, const char *(*)(aclTensorDesc *));
CHECK_FN(aclGetTensorDescByIndex, aclTensorDesc *(*)(aclTensorDesc *, size_t));
CHECK_FN(aclGetTensorDescAddress, void *(*)(const aclTensorDesc *));
CHECK_FN(aclSetTensorShapeRange, aclError (*)(aclTensorDesc *, size_t, int64_t[][ACL_TENSOR_SHAPE_RANGE_NUM]));
CHECK_FN(aclSetTensorValueRange, aclError (*)(aclTensorDesc *, size_t, int64_t[][ACL_TENSOR_VALUE_RANGE_NUM]));
CHECK_FN(aclSetTensorDescName, void (*)(aclTensorDesc *, const char *));
CHECK_FN(aclSetTensorStorageFormat, aclError (*)(aclTensorDesc *, aclFormat));
CHECK_FN(aclSetTensorStorageShape, aclError (*)(aclTensorDesc *, int, const int64_t *));
CHECK_FN(aclSetTensorFormat, aclError (*)(aclTensorDesc *, aclFormat));
CHECK_FN(aclSetTensorShape, aclError (*)(aclTensorDesc *, int, const int64_t *));
CHECK_FN(aclSetTensorOriginFormat, aclError (*)(aclTensorDesc *, aclFormat));
CHECK_FN(aclSetTensorOriginShape, aclError (*)(aclTensorDesc *, int, const int64_t *));
CHECK_FN(aclSetTensorDynamicInput, aclError (*)(aclTensorDesc *, const char *));
CHECK_FN(aclSetTensorConst, aclError (*)(aclTensorDesc *, void *, size_t));
CHECK_FN(aclSetTensorPlaceMent, aclError (*)(aclTensorDesc *, aclMemType));

/* acl_rt_allocator.h */
CHECK_FN(aclrtAllocatorCreateDesc, aclrtAllocatorDesc (*)(void));
CHECK_FN(aclrtAllocatorDestroyDesc, aclError (*)(aclrtAllocatorDesc));
CHECK_FN(aclrtAllocatorSetObjToDesc, aclError (*)(aclrtAllocatorDesc, aclrtAllocator));
CHECK_FN(aclrtAllocatorSetAllocFuncToDesc, aclError (*)(aclrtAllocatorDesc, aclrtAllocatorAllocFunc));
CHECK_FN(aclrtAllocatorSetFreeFuncToDesc, aclError (*)(aclrtAllocatorDesc, aclrtAllocatorFreeFunc));
CHECK_FN(aclrtAllocatorSetAllocAdviseFuncToDesc, aclError (*)(aclrtAllocatorDesc, aclrtAllocatorAllocAdviseFunc));
CHECK_FN(aclrtAllocatorSetGetAddrFromBlockFuncToDesc,
         aclError (*)(aclrtAllocatorDesc, aclrtAllocatorGetAddrFromBlockFunc));
CHECK_FN(aclrtAllocatorRegister, aclError (*)(aclrtStream, aclrtAllocatorDesc));
CHECK_FN(aclrtAllocatorGetByStream,
         aclError (*)(aclrtStream, aclrtAllocatorDesc *, aclrtAllocator *, aclrtAllocatorAllocFunc *,
                      aclrtAllocatorFreeFunc *, aclrtAllocatorAllocAdviseFunc *, aclrtAllocatorGetAddrFromBlockFunc *));
CHECK_FN(aclrtAllocatorUnregister, aclError (*)(aclrtStream));

/* acl_rt.h */
CHECK_FN(aclInit, aclError (*)(const char *));
CHECK_FN(aclFinalize, aclError (*)(void));
CHECK_FN(aclFinalizeReference, aclError (*)(uint64_t *));
CHECK_FN(aclInitCallbackRegister, aclError (*)(aclRegisterCallbackType, aclInitCallbackFunc, void *));
CHECK_FN(aclInitCallbackUnRegister, aclError (*)(aclRegisterCallbackType, aclInitCallbackFunc));
CHECK_FN(aclFinalizeCallbackRegister, aclError (*)(aclRegisterCallbackType, aclFinalizeCallbackFunc, void *));
CHECK_FN(aclFinalizeCallbackUnRegister, aclError (*)(aclRegisterCallbackType, aclFinalizeCallbackFunc));
CHECK_FN(aclrtGetVersion, aclError (*)(int32_t *, int32_t *, int32_t *));
CHECK_FN(aclsysGetCANNVersion, aclError (*)(aclCANNPackageName, aclCANNPackageVersion *));
CHECK_FN(aclsysGetVersionStr, aclError (*)(char *, char *));
CHECK_FN(aclsysGetVersionNum, aclError (*)(char *, int32_t *));
CHECK_FN(aclGetRecentErrMsg, const char *(*)(void));
CHECK_FN(aclrtPeekAtLastError, aclError (*)(aclrtLastErrLevel));
CHECK_FN(aclrtGetLastError, aclError (*)(aclrtLastErrLevel));
CHECK_FN(aclrtGetErrorVerbose, aclError (*)(int32_t, aclrtErrorInfo *));
CHECK_FN(aclrtRepairError, aclError (*)(int32_t, const aclrtErrorInfo *));
CHECK_FN(aclrtSetExceptionInfoCallback, aclError (*)(aclrtExceptionInfoCallback));
CHECK_FN(aclrtExceptionInfoCallbackRegister, aclError (*)(aclrtExceptionInfoCallback));
CHECK_FN(aclrtExceptionInfoCallbackUnregister, aclError (*)(aclrtExceptionInfoCallback));
CHECK_FN(aclrtGetTaskIdFromExceptionInfo, uint32_t (*)(const aclrtExceptionInfo *));
CHECK_FN(aclrtGetStreamIdFromExceptionInfo, uint32_t (*)(const aclrtExceptionInfo *));
CHECK_FN(aclrtGetThreadIdFromExceptionInfo, uint32_t (*)(const aclrtExceptionInfo *));
CHECK_FN(aclrtGetDeviceIdFromExceptionInfo, uint32_t (*)(const aclrtExceptionInfo *));
CHECK_FN(aclrtGetErrorCodeFromExceptionInfo, uint32_t (*)(const aclrtExceptionInfo *));
CHECK_FN(aclrtGetArgsFromExceptionInfo, aclError (*)(const aclrtExceptionInfo *, void **, uint32_t *));
CHECK_FN(aclrtGetFuncHandleFromExceptionInfo, aclError (*)(const aclrtExceptionInfo *, aclrtFuncHandle *));
CHECK_FN(aclrtBinarySetExceptionCallback, aclError (*)(aclrtBinHandle, aclrtOpExceptionCallback, void *));
CHECK_FN(aclrtSubscribeReport, aclError (*)(uint64_t, aclrtStream));
CHECK_FN(aclrtLaunchCallback, aclError (*)(aclrtCallback, void *, aclrtCallbackBlockType, aclrtStream));
CHECK_FN(aclrtProcessReport, aclError (*)(int32_t));
CHECK_FN(aclrtUnSubscribeReport, aclError (*)(uint64_t, aclrtStream));
CHECK_FN(aclrtLaunchHostFunc, aclError (*)(aclrtStream, aclrtHostFunc, void *));
CHECK_FN(aclrtSubscribeHostFunc, aclError (*)(uint64_t, aclrtStream));
CHECK_FN(aclrtProcessHostFunc, aclError (*)(int32_t));
CHECK_FN(aclrtUnSubscribeHostFunc, aclError (*)(uint64_t, aclrtStream));
CHECK_FN(aclrtSetDevice, aclError (*)(int32_t));
CHECK_FN(aclrtResetDevice, aclError (*)(int32_t));
CHECK_FN(aclrtResetDeviceForce, aclError (*)(int32_t));
CHECK_FN(aclrtGetDevice, aclError (*)(int32_t *));
CHECK_FN(aclrtGetDeviceCount, aclError (*)(uint32_t *));
CHECK_FN(aclrtGetRunMode, aclError (*)(aclrtRunMode *));
CHECK_FN(aclrtSynchronizeDevice, aclError (*)(void));
CHECK_FN(aclrtSynchronizeDeviceWithTimeout, aclError (*)(int32_t));
CHECK_FN(aclrtSetTsDevice, aclError (*)(aclrtTsId));
CHECK_FN(aclrtGetDeviceUtilizationRate, aclError (*)(int32_t, aclrtUtilizationInfo *));
CHECK_FN(aclrtQueryDeviceStatus, aclError (*)(int32_t, aclrtDeviceStatus *));
CHECK_FN(aclrtGetDeviceInfo, aclError (*)(uint32_t, aclrtDevAttr, int64_t *));
CHECK_FN(aclrtGetDeviceCapability, aclError (*)(int32_t, aclrtDevFeatureType, int32_t *));
CHECK_FN(aclrtDeviceGetUuid, aclError (*)(int32_t, aclrtUuid *));
CHECK_FN(aclrtDeviceGetStreamPriorityRange, aclError (*)(int32_t *, int32_t *));
CHECK_FN(aclrtDeviceSetLimit, aclError (*)(aclrtDeviceLimit, size_t));
CHECK_FN(aclrtDeviceGetLimit, aclError (*)(aclrtDeviceLimit, size_t *));
CHECK_FN(aclrtDeviceGetPCIBusId, aclError (*)(int32_t, char *, int32_t));
CHECK_FN(aclrtDeviceGetByPCIBusId, aclError (*)(const char *, int32_t *));
CHECK_FN(aclrtGetDevicesTopo, aclError (*)(uint32_t, uint32_t, uint64_t *));
CHECK_FN(aclrtCheckArchCompatibility, aclError (*)(const char *, int32_t *));
CHECK_FN(aclrtDeviceGetBareTgid, aclError (*)(int32_t *));
CHECK_FN(aclrtSetDeviceSatMode, aclError (*)(aclrtFloatOverflowMode));
CHECK_FN(aclrtGetDeviceSatMode, aclError (*)(aclrtFloatOverflowMode *));
CHECK_FN(aclrtDeviceL2CacheFlush, aclError (*)(void *));
CHECK_FN(aclrtDeviceGetHostAtomicCapabilities,
         aclError (*)(uint32_t *, const aclrtAtomicOperation *, const uint32_t, int32_t));
CHECK_FN(aclrtDeviceGetP2PAtomicCapabilities,
         aclError (*)(uint32_t *, const aclrtAtomicOperation *, const uint32_t, int32_t, int32_t));
CHECK_FN(aclrtGetLogicDevIdByUserDevId, aclError (*)(const int32_t, int32_t *const));
CHECK_FN(aclrtGetUserDevIdByLogicDevId, aclError (*)(const int32_t, int32_t *const));
CHECK_FN(aclrtGetLogicDevIdByPhyDevId, aclError (*)(const int32_t, int32_t *const));
CHECK_FN(aclrtGetPhyDevIdByLogicDevId, aclError (*)(const int32_t, int32_t *const));
CHECK_FN(aclrtGetUserDevIdByPhyDevId, aclError (*)(const int32_t, int32_t *const));
CHECK_FN(aclrtGetPhyDevIdByUserDevId, aclError (*)(const int32_t, int32_t *const));
CHECK_FN(aclrtDeviceTaskAbort, aclError (*)(int32_t, uint32_t));
CHECK_FN(aclrtGetMemUceInfo, aclError (*)(int32_t, aclrtMemUceInfo *, size_t, size_t *));
CHECK_FN(aclrtMemUceRepair, aclError (*)(int32_t, aclrtMemUceInfo *, size_t));
CHECK_FN(aclrtRegDeviceStateCallback, aclError (*)(const char *, aclrtDeviceStateCallback, void *));
CHECK_FN(aclrtSetDeviceTaskAbortCallback, aclError (*)(const char *, aclrtDeviceTaskAbortCallback, void *));
CHECK_FN(aclrtGetDeviceResLimit, aclError (*)(int32_t, aclrtDevResLimitType, uint32_t *));
CHECK_FN(aclrtSetDeviceResLimit, aclError (*)(int32_t, aclrtDevResLimitType, uint32_t));
CHECK_FN(aclrtResetDeviceResLimit, aclError (*)(int32_t));
CHECK_FN(aclrtGetStreamResLimit, aclError (*)(aclrtStream, aclrtDevResLimitType, uint32_t *));
CHECK_FN(aclrtSetStreamResLimit, aclError (*)(aclrtStream, aclrtDevResLimitType, uint32_t));
CHECK_FN(aclrtResetStreamResLimit, aclError (*)(aclrtStream));
CHECK_FN(aclrtUseStreamResInCurrentThread, aclError (*)(aclrtStream));
CHECK_FN(aclrtUnuseStreamResInCurrentThread, aclError (*)(aclrtStream));
CHECK_FN(aclrtGetResInCurrentThread, aclError (*)(aclrtDevResLimitType, uint32_t *));
CHECK_FN(aclrtDeviceCanAccessPeer, aclError (*)(int32_t *, int32_t, int32_t));
CHECK_FN(aclrtDeviceEnablePeerAccess, aclError (*)(int32_t, uint32_t));
CHECK_FN(aclrtDeviceDisablePeerAccess, aclError (*)(int32_t));
CHECK_FN(aclrtDevicePeerAccessStatus, aclError (*)(int32_t, int32_t, int32_t *));
CHECK_FN(aclrtCreateContext, aclError (*)(aclrtContext *, int32_t));
CHECK_FN(aclrtDestroyContext, aclError (*)(aclrtContext));
CHECK_FN(aclrtSetCurrentContext, aclError (*)(aclrtContext));
CHECK_FN(aclrtGetCurrentContext, aclError (*)(aclrtContext *));
CHECK_FN(aclrtCtxGetCurrentDefaultStream, aclError (*)(aclrtStream *));
CHECK_FN(aclrtGetPrimaryCtxState, aclError (*)(int32_t, uint32_t *, int32_t *));
CHECK_FN(aclrtCtxGetSysParamOpt, aclError (*)(aclSysParamOpt, int64_t *));
CHECK_FN(aclrtCtxSetSysParamOpt, aclError (*)(aclSysParamOpt, int64_t));
CHECK_FN(aclrtGetSysParamOpt, aclError (*)(aclSysParamOpt, int64_t *));
CHECK_FN(aclrtSetSysParamOpt, aclError (*)(aclSysParamOpt, int64_t));
CHECK_FN(aclrtCreateStreamConfigHandle, aclrtStreamConfigHandle *(*)(void));
CHECK_FN(aclrtDestroyStreamConfigHandle, aclError (*)(aclrtStreamConfigHandle *));
CHECK_FN(aclrtSetStreamConfigOpt, aclError (*)(aclrtStreamConfigHandle *, aclrtStreamConfigAttr, const void *, size_t));
CHECK_FN(aclrtCreateStream, aclError (*)(aclrtStream *));
CHECK_FN(aclrtCreateStreamV2, aclError (*)(aclrtStream *, const aclrtStreamConfigHandle *));
CHECK_FN(aclrtCreateStreamWithConfig, aclError (*)(aclrtStream *, uint32_t, uint32_t));
CHECK_FN(aclrtDestroyStream, aclError (*)(aclrtStream));
CHECK_FN(aclrtDestroyStreamForce, aclError (*)(aclrtStream));
CHECK_FN(aclrtSynchronizeStream, aclError (*)(aclrtStream));
CHECK_FN(aclrtSynchronizeStreamWithTimeout, aclError (*)(aclrtStream, int32_t));
CHECK_FN(aclrtStreamQuery, aclError (*)(aclrtStream, aclrtStreamStatus *));
CHECK_FN(aclrtStreamGetId, aclError (*)(aclrtStream, int32_t *));
CHECK_FN(aclrtStreamGetPriority, aclError (*)(aclrtStream, uint32_t *));
CHECK_FN(aclrtStreamGetFlags, aclError (*)(aclrtStream, uint32_t *));
CHECK_FN(aclrtStreamWaitEvent, aclError (*)(aclrtStream, aclrtEvent));
CHECK_FN(aclrtStreamWaitEventWithFlag, aclError (*)(aclrtStream, aclrtEvent, uint32_t, uint32_t));
CHECK_FN(aclrtStreamWaitEventWithTimeout, aclError (*)(aclrtStream, aclrtEvent, int32_t));
CHECK_FN(aclrtSetStreamFailureMode, aclError (*)(aclrtStream, uint64_t));
CHECK_FN(aclrtSetStreamAttribute, aclError (*)(aclrtStream, aclrtStreamAttr, aclrtStreamAttrValue *));
CHECK_FN(aclrtGetStreamAttribute, aclError (*)(aclrtStream, aclrtStreamAttr, aclrtStreamAttrValue *));
CHECK_FN(aclrtStreamAbort, aclError (*)(aclrtStream));
CHECK_FN(aclrtStreamStop, aclError (*)(aclrtStream));
CHECK_FN(aclrtGetStreamAvailableNum, aclError (*)(uint32_t *));
CHECK_FN(aclrtPersistentTaskClean, aclError (*)(aclrtStream));
CHECK_FN(aclrtGetThreadLastTaskId, aclError (*)(uint32_t *));
CHECK_FN(aclrtRegStreamStateCallback, aclError (*)(const char *, aclrtStreamStateCallback, void *));
CHECK_FN(aclrtCreateEvent, aclError (*)(aclrtEvent *));
CHECK_FN(aclrtCreateEventWithFlag, aclError (*)(aclrtEvent *, uint32_t));
CHECK_FN(aclrtCreateEventExWithFlag, aclError (*)(aclrtEvent *, uint32_t));
CHECK_FN(aclrtDestroyEvent, aclError (*)(aclrtEvent));
CHECK_FN(aclrtRecordEvent, aclError (*)(aclrtEvent, aclrtStream));
CHECK_FN(aclrtRecordEventWithFlag, aclError (*)(aclrtEvent, aclrtStream, uint32_t));
CHECK_FN(aclrtResetEvent, aclError (*)(aclrtEvent, aclrtStream));
CHECK_FN(aclrtQueryEvent, aclError (*)(aclrtEvent, aclrtEventStatus *));
CHECK_FN(aclrtQueryEventStatus, aclError (*)(aclrtEvent, aclrtEventRecordedStatus *));
CHECK_FN(aclrtQueryEventWaitStatus, aclError (*)(aclrtEvent, aclrtEventWaitStatus *));
CHECK_FN(aclrtSynchronizeEvent, aclError (*)(aclrtEvent));
CHECK_FN(aclrtSynchronizeEventWithTimeout, aclError (*)(aclrtEvent, int32_t));
CHECK_FN(aclrtEventElapsedTime, aclError (*)(float *, aclrtEvent, aclrtEvent));
CHECK_FN(aclrtEventGetTimestamp, aclError (*)(aclrtEvent, uint64_t *));
CHECK_FN(aclrtGetEventId, aclError (*)(aclrtEvent, uint32_t *));
CHECK_FN(aclrtGetEventAvailNum, aclError (*)(uint32_t *));
CHECK_FN(aclrtIpcGetEventHandle, aclError (*)(aclrtEvent, aclrtIpcEventHandle *));
CHECK_FN(aclrtIpcOpenEventHandle, aclError (*)(aclrtIpcEventHandle, aclrtEvent *));
CHECK_FN(aclrtCreateNotify, aclError (*)(aclrtNotify *, uint64_t));
CHECK_FN(aclrtDestroyNotify, aclError (*)(aclrtNotify));
CHECK_FN(aclrtRecordNotify, aclError (*)(aclrtNotify, aclrtStream));
CHECK_FN(aclrtWaitAndResetNotify, aclError (*)(aclrtNotify, aclrtStream, uint32_t));
CHECK_FN(aclrtGetNotifyId, aclError (*)(aclrtNotify, uint32_t *));
CHECK_FN(aclrtNotifyBatchReset, aclError (*)(aclrtNotify *, size_t));
CHECK_FN(aclrtNotifyGetExportKey, aclError (*)(aclrtNotify, char *, size_t, uint64_t));
CHECK_FN(aclrtNotifyImportByKey, aclError (*)(aclrtNotify *, const char *, uint64_t));
CHECK_FN(aclrtNotifySetImportPid, aclError (*)(aclrtNotify, int32_t *, size_t));
CHECK_FN(aclrtNotifySetImportPidInterServer, aclError (*)(aclrtNotify, aclrtServerPid *, size_t));
CHECK_FN(aclrtCntNotifyCreate, aclError (*)(aclrtCntNotify *, uint64_t));
CHECK_FN(aclrtCntNotifyDestroy, aclError (*)(aclrtCntNotify));
CHECK_FN(aclrtCntNotifyRecord, aclError (*)(aclrtCntNotify, aclrtStream, aclrtCntNotifyRecordInfo *));
CHECK_FN(aclrtCntNotifyWaitWithTimeout, aclError (*)(aclrtCntNotify, aclrtStream, aclrtCntNotifyWaitInfo *));
CHECK_FN(aclrtCntNotifyReset, aclError (*)(aclrtCntNotify, aclrtStream));
CHECK_FN(aclrtCntNotifyGetId, aclError (*)(aclrtCntNotify, uint32_t *));
CHECK_FN(aclrtCreateLabel, aclError (*)(aclrtLabel *));
CHECK_FN(aclrtSetLabel, aclError (*)(aclrtLabel, aclrtStream));
CHECK_FN(aclrtDestroyLabel, aclError (*)(aclrtLabel));
CHECK_FN(aclrtCreateLabelList, aclError (*)(aclrtLabel *, size_t, aclrtLabelList *));
CHECK_FN(aclrtDestroyLabelList, aclError (*)(aclrtLabelList));
CHECK_FN(aclrtSwitchLabelByIndex, aclError (*)(void *, uint32_t, aclrtLabelList, aclrtStream));
CHECK_FN(aclrtActiveStream, aclError (*)(aclrtStream, aclrtStream));
CHECK_FN(aclrtSwitchStream,
         aclError (*)(void *, aclrtCondition, void *, aclrtCompareDataType, aclrtStream, aclrtStream, aclrtStream));
CHECK_FN(aclrtMalloc, aclError (*)(void **, size_t, aclrtMemMallocPolicy));
CHECK_FN(aclrtMallocAlign32, aclError (*)(void **, size_t, aclrtMemMallocPolicy));
CHECK_FN(aclrtMallocCached, aclError (*)(void **, size_t, aclrtMemMallocPolicy));
CHECK_FN(aclrtMallocWithCfg, aclError (*)(void **, size_t, aclrtMemMallocPolicy, aclrtMallocConfig *));
CHECK_FN(aclrtMallocForTaskScheduler, aclError (*)(void **, size_t, aclrtMemMallocPolicy, aclrtMallocConfig *));
CHECK_FN(aclrtMallocHost, aclError (*)(void **, size_t));
CHECK_FN(aclrtMallocHostWithCfg, aclError (*)(void **, uint64_t, aclrtMallocConfig *));
CHECK_FN(aclrtMemAllocManaged, aclError (*)(void **, uint64_t, uint32_t));
CHECK_FN(aclrtFree, aclError (*)(void *));
CHECK_FN(aclrtFreeHost, aclError (*)(void *));
CHECK_FN(aclrtFreeWithDevSync, aclError (*)(void *));
CHECK_FN(aclrtFreeHostWithDevSync, aclError (*)(void *));
CHECK_FN(aclrtGetMemInfo, aclError (*)(aclrtMemAttr, size_t *, size_t *));
CHECK_FN(aclrtGetMemUsageInfo, aclError (*)(int32_t, aclrtMemUsageInfo *, size_t, size_t *));
CHECK_FN(aclrtPointerGetAttributes, aclError (*)(const void *, aclrtPtrAttributes *));
CHECK_FN(aclrtCheckMemType, aclError (*)(void **, uint32_t, uint32_t, uint32_t *, uint32_t));
CHECK_FN(aclrtMemGetAddressRange, aclError (*)(void *, void **, size_t *));
CHECK_FN(aclrtMemFlush, aclError (*)(void *, size_t));
CHECK_FN(aclrtMemInvalidate, aclError (*)(void *, size_t));
CHECK_FN(aclrtMemcpy, aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind));
CHECK_FN(aclrtMemcpyAsync, aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtMemcpyAsyncWithCondition,
         aclError (*)(void *, size_t, const void *, size_t, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtMemcpy2d, aclError (*)(void *, size_t, const void *, size_t, size_t, size_t, aclrtMemcpyKind));
CHECK_FN(aclrtMemcpy2dAsync,
         aclError (*)(void *, size_t, const void *, size_t, size_t, size_t, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtMemcpyAsyncWithOffset,
         aclError (*)(void **, size_t, size_t, const void **, size_t, size_t, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtGetMemcpyDescSize, aclError (*)(aclrtMemcpyKind, size_t *));
CHECK_FN(aclrtSetMemcpyDesc, aclError (*)(void *, aclrtMemcpyKind, void *, void *, size_t, void *));
CHECK_FN(aclrtMemcpyAsyncWithDesc, aclError (*)(void *, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtMemcpyBatch, aclError (*)(void **, size_t *, void **, size_t *, size_t, aclrtMemcpyBatchAttr *, size_t *,
                                        size_t, size_t *));
CHECK_FN(aclrtMemcpyBatchAsync, aclError (*)(void **, size_t *, void **, size_t *, size_t, aclrtMemcpyBatchAttr *,
                                             size_t *, size_t, size_t *, aclrtStream));
CHECK_FN(aclrtMemcpyBatchV2,
         aclError (*)(void **, size_t *, void **, size_t *, size_t, aclrtMemcpyBatchAttr *, size_t *, size_t));
CHECK_FN(aclrtMemcpyBatchAsyncV2, aclError (*)(void **, size_t *, void **, size_t *, size_t, aclrtMemcpyBatchAttr *,
                                               size_t *, size_t, aclrtStream));
CHECK_FN(aclrtMemset, aclError (*)(void *, size_t, int32_t, size_t));
CHECK_FN(aclrtMemsetAsync, aclError (*)(void *, size_t, int32_t, size_t, aclrtStream));
CHECK_FN(aclrtMemsetD32, aclError (*)(void *, size_t, uint32_t, size_t));
CHECK_FN(aclrtMemsetD32Async, aclError (*)(void *, size_t, uint32_t, size_t, aclrtStream));
CHECK_FN(aclrtReduceAsync,
         aclError (*)(void *, const void *, uint64_t, aclrtReduceKind, aclDataType, aclrtStream, void *));
CHECK_FN(aclrtGetSymbolAddress, aclError (*)(const void *, void **));
CHECK_FN(aclrtGetSymbolSize, aclError (*)(const void *, size_t *));
CHECK_FN(aclrtMemcpyFromSymbol, aclError (*)(void *, size_t, const void *, size_t, size_t, aclrtMemcpyKind));
CHECK_FN(aclrtMemcpyFromSymbolAsync,
         aclError (*)(void *, size_t, const void *, size_t, size_t, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtMemcpyToSymbol, aclError (*)(const void *, const void *, size_t, size_t, aclrtMemcpyKind));
CHECK_FN(aclrtMemcpyToSymbolAsync,
         aclError (*)(const void *, const void *, size_t, size_t, aclrtMemcpyKind, aclrtStream));
CHECK_FN(aclrtValueWrite, aclError (*)(void *, uint64_t, uint32_t, aclrtStream));
CHECK_FN(aclrtValueWait, aclError (*)(void *, uint64_t, uint32_t, aclrtStream));
CHECK_FN(aclrtCmoAsync, aclError (*)(void *, size_t, aclrtCmoType, aclrtStream));
CHECK_FN(aclrtCmoAsyncWithBarrier, aclError (*)(void *, size_t, aclrtCmoType, uint32_t, aclrtStream));
CHECK_FN(aclrtCmoWaitBarrier, aclError (*)(aclrtBarrierTaskInfo *, aclrtStream, uint32_t));
CHECK_FN(aclrtCmoGetDescSize, aclError (*)(size_t *));
CHECK_FN(aclrtCmoSetDesc, aclError (*)(void *, void *, size_t));
CHECK_FN(aclrtCmoAsyncWithDesc, aclError (*)(void *, aclrtCmoType, aclrtStream, const void *));
CHECK_FN(aclrtHostRegister, aclError (*)(void *, uint64_t, aclrtHostRegisterType, void **));
CHECK_FN(aclrtHostRegisterV2, aclError (*)(void *, uint64_t, uint32_t));
CHECK_FN(aclrtHostGetDevicePointer, aclError (*)(void *, void **, uint32_t));
CHECK_FN(aclrtHostUnregister, aclError (*)(void *));
CHECK_FN(aclrtHostMemMapCapabilities, aclError (*)(uint32_t, aclrtHacType, aclrtHostMemMapCapability *));
CHECK_FN(aclrtHostGetDevicePointerAddrRange, aclError (*)(aclrtAddrRange *, uint32_t *));
CHECK_FN(aclrtMemManagedGetAttr, aclError (*)(aclrtMemManagedRangeAttribute, const void *, size_t, void *, size_t));
CHECK_FN(aclrtMemManagedGetAttrs,
         aclError (*)(aclrtMemManagedRangeAttribute *, size_t, const void *, size_t, void **, size_t *));
CHECK_FN(aclrtMemManagedAdvise,
         aclError (*)(const void *const, uint64_t, aclrtMemManagedAdviseType, aclrtMemManagedLocation));
CHECK_FN(aclrtMemManagedPrefetchAsync,
         aclError (*)(const void *, size_t, aclrtMemManagedLocation, uint32_t, aclrtStream));
CHECK_FN(aclrtMemManagedPrefetchBatchAsync, aclError (*)(const void **, size_t *, size_t, aclrtMemManagedLocation *,
                                                         size_t *, size_t, uint64_t, aclrtStream));
CHECK_FN(aclrtReserveMemAddress, aclError (*)(void **, size_t, size_t, void *, uint64_t));
CHECK_FN(aclrtReserveMemAddressNoUCMemory, aclError (*)(void **, size_t, size_t, void *, uint64_t));
CHECK_FN(aclrtReleaseMemAddress, aclError (*)(void *));
CHECK_FN(aclrtMallocPhysical, aclError (*)(aclrtDrvMemHandle *, size_t, const aclrtPhysicalMemProp *, uint64_t));
CHECK_FN(aclrtFreePhysical, aclError (*)(aclrtDrvMemHandle));
CHECK_FN(aclrtMapMem, aclError (*)(void *, size_t, size_t, aclrtDrvMemHandle, uint64_t));
CHECK_FN(aclrtUnmapMem, aclError (*)(void *));
CHECK_FN(aclrtMemMapNoAccess, aclError (*)(void *, size_t, size_t, aclrtDrvMemHandle, uint64_t));
CHECK_FN(aclrtMemSetAccess, aclError (*)(void *, size_t, aclrtMemAccessDesc *, size_t));
CHECK_FN(aclrtMemGetAccess, aclError (*)(void *, aclrtMemLocation *, uint64_t *));
CHECK_FN(aclrtMemRetainAllocationHandle, aclError (*)(void *, aclrtDrvMemHandle *));
CHECK_FN(aclrtMemGetAllocationPropertiesFromHandle, aclError (*)(aclrtDrvMemHandle, aclrtPhysicalMemProp *));
CHECK_FN(aclrtMemGetAllocationGranularity, aclError (*)(aclrtPhysicalMemProp *, aclrtMemGranularityOptions, size_t *));
CHECK_FN(aclrtMemP2PMap, aclError (*)(void *, size_t, int32_t, uint64_t));
CHECK_FN(aclrtMemMapSetLink, aclError (*)(aclrtDrvMemHandle, aclrtMemLinkType));
CHECK_FN(aclrtMemMapSelectedLink, aclError (*)(void *, size_t, void *, uint32_t));
CHECK_FN(aclrtMemExportToShareableHandle, aclError (*)(aclrtDrvMemHandle, aclrtMemHandleType, uint64_t, uint64_t *));
CHECK_FN(aclrtMemExportToShareableHandleV2,
         aclError (*)(aclrtDrvMemHandle, uint64_t, aclrtMemSharedHandleType, void *));
CHECK_FN(aclrtMemImportFromShareableHandle, aclError (*)(uint64_t, int32_t, aclrtDrvMemHandle *));
CHECK_FN(aclrtMemImportFromShareableHandleV2,
         aclError (*)(void *, aclrtMemSharedHandleType, uint64_t, aclrtDrvMemHandle *));
CHECK_FN(aclrtMemSetPidToShareableHandle, aclError (*)(uint64_t, int32_t *, size_t));
CHECK_FN(aclrtMemSetPidToShareableHandleV2, aclError (*)(void *, aclrtMemSharedHandleType, int32_t *, size_t));
CHECK_FN(aclrtIpcMemGetExportKey, aclError (*)(void *, size_t, char *, size_t, uint64_t));
CHECK_FN(aclrtIpcMemClose, aclError (*)(const char *));
CHECK_FN(aclrtIpcMemImportByKey, aclError (*)(void **, const char *, uint64_t));
CHECK_FN(aclrtIpcMemSetImportPid, aclError (*)(const char *, int32_t *, size_t));
CHECK_FN(aclrtIpcMemSetAttr, aclError (*)(const char *, aclrtIpcMemAttrType, uint64_t));
CHECK_FN(aclrtIpcMemImportPidInterServer, aclError (*)(const char *, aclrtServerPid *, size_t));
CHECK_FN(aclrtCreateBinary, aclrtBinary (*)(const void *, size_t));
CHECK_FN(aclrtDestroyBinary, aclError (*)(aclrtBinary));
CHECK_FN(aclrtBinaryLoad, aclError (*)(const aclrtBinary, aclrtBinHandle *));
CHECK_FN(aclrtBinaryLoadFromFile, aclError (*)(const char *, aclrtBinaryLoadOptions *, aclrtBinHandle *));
CHECK_FN(aclrtBinaryLoadFromData, aclError (*)(const void *, size_t, const aclrtBinaryLoadOptions *, aclrtBinHandle *));
CHECK_FN(aclrtBinaryUnLoad, aclError (*)(aclrtBinHandle));
CHECK_FN(aclrtBinaryGetFunction, aclError (*)(const aclrtBinHandle, const char *, aclrtFuncHandle *));
CHECK_FN(aclrtBinaryGetFunctionByEntry, aclError (*)(aclrtBinHandle, uint64_t, aclrtFuncHandle *));
CHECK_FN(aclrtBinaryGetFunctionCount, aclError (*)(aclrtBinHandle, uint32_t *));
CHECK_FN(aclrtBinaryEnumerateFunctions, aclError (*)(const aclrtBinHandle, aclrtFuncHandle *, uint32_t));
CHECK_FN(aclrtBinaryGetDevAddress, aclError (*)(const aclrtBinHandle, void **, size_t *));
CHECK_FN(aclrtBinaryGetGlobal, aclError (*)(aclrtBinHandle, const char *, void **, size_t *));
CHECK_FN(aclrtGetFuncBySymbol, aclError (*)(const void *, aclrtFuncHandle *));
CHECK_FN(aclrtRegisterCpuFunc, aclError (*)(const aclrtBinHandle, const char *, const char *, aclrtFuncHandle *));
CHECK_FN(aclrtGetFunctionAddr, aclError (*)(aclrtFuncHandle, void **, void **));
CHECK_FN(aclrtGetFunctionSize, aclError (*)(aclrtFuncHandle, size_t *, size_t *));
CHECK_FN(aclrtGetFunctionName, aclError (*)(aclrtFuncHandle, uint32_t, char *));
CHECK_FN(aclrtGetFunctionAttribute, aclError (*)(aclrtFuncHandle, aclrtFuncAttribute, int64_t *));
CHECK_FN(aclrtFunctionGetBinary, aclError (*)(const aclrtFuncHandle, aclrtBinHandle *));
CHECK_FN(aclrtFunctionGetParamCount, aclError (*)(const void *, size_t *));
CHECK_FN(aclrtFunctionGetParamInfo, aclError (*)(const void *, size_t, size_t *, size_t *));
CHECK_FN(aclrtFunctionGetAvailDynUbufPerBlock, aclError (*)(void *, uint32_t, size_t *));
CHECK_FN(aclrtKernelArgsGetHandleMemSize, aclError (*)(aclrtFuncHandle, size_t *));
CHECK_FN(aclrtKernelArgsGetMemSize, aclError (*)(aclrtFuncHandle, size_t, size_t *));
CHECK_FN(aclrtKernelArgsInit, aclError (*)(aclrtFuncHandle, aclrtArgsHandle *));
CHECK_FN(aclrtKernelArgsInitByUserMem, aclError (*)(aclrtFuncHandle, aclrtArgsHandle, void *, size_t));
CHECK_FN(aclrtKernelArgsAppend, aclError (*)(aclrtArgsHandle, void *, size_t, aclrtParamHandle *));
CHECK_FN(aclrtKernelArgsAppendPlaceHolder, aclError (*)(aclrtArgsHandle, aclrtParamHandle *));
CHECK_FN(aclrtKernelArgsGetPlaceHolderBuffer, aclError (*)(aclrtArgsHandle, aclrtParamHandle, size_t, void **));
CHECK_FN(aclrtKernelArgsParaUpdate, aclError (*)(aclrtArgsHandle, aclrtParamHandle, void *, size_t));
CHECK_FN(aclrtKernelArgsFinalize, aclError (*)(aclrtArgsHandle));
CHECK_FN(aclrtLaunchKernel, aclError (*)(aclrtFuncHandle, uint32_t, const void *, size_t, aclrtStream));
CHECK_FN(aclrtLaunchKernelV2,
         aclError (*)(aclrtFuncHandle, uint32_t, const void *, size_t, aclrtLaunchKernelCfg *, aclrtStream));
CHECK_FN(aclrtLaunchKernelWithConfig,
         aclError (*)(aclrtFuncHandle, uint32_t, aclrtStream, aclrtLaunchKernelCfg *, aclrtArgsHandle, void *));
CHECK_FN(aclrtLaunchKernelWithHostArgs, aclError (*)(aclrtFuncHandle, uint32_t, aclrtStream, aclrtLaunchKernelCfg *,
                                                     void *, size_t, aclrtPlaceHolderInfo *, size_t));
CHECK_FN(aclrtLaunchKernelWithArgsArray, aclError (*)(void *, uint32_t, aclrtStream, aclrtLaunchKernelCfg *, void **));
CHECK_FN(aclrtLaunchSIMTKernelWithArgsArray,
         aclError (*)(void *, dim3, dim3, size_t, aclrtStream, aclrtLaunchKernelCfg *, void **));
CHECK_FN(aclrtLaunchSIMTKernelWithHostArgs,
         aclError (*)(void *, dim3, dim3, size_t, aclrtStream, aclrtLaunchKernelCfg *, void *, size_t,
                      aclrtPlaceHolderInfo *, size_t));
CHECK_FN(aclrtSetGroup, aclError (*)(int32_t));
CHECK_FN(aclrtGetGroupCount, aclError (*)(uint32_t *));
CHECK_FN(aclrtCreateGroupInfo, aclrtGroupInfo *(*)(void));
CHECK_FN(aclrtDestroyGroupInfo, aclError (*)(aclrtGroupInfo *));
CHECK_FN(aclrtGetAllGroupInfo, aclError (*)(aclrtGroupInfo *));
CHECK_FN(aclrtGetGroupInfoDetail,
         aclError (*)(const aclrtGroupInfo *, int32_t, aclrtGroupAttr, void *, size_t, size_t *));
CHECK_FN(aclrtSetOpWaitTimeout, aclError (*)(uint32_t));
CHECK_FN(aclrtSetOpExecuteTimeOut, aclError (*)(uint32_t));
CHECK_FN(aclrtSetOpExecuteTimeOutWithMs, aclError (*)(uint32_t));
CHECK_FN(aclrtSetOpExecuteTimeOutV2, aclError (*)(uint64_t, uint64_t *));
CHECK_FN(aclrtGetOpTimeOutInterval, aclError (*)(uint64_t *));
CHECK_FN(aclrtGetOpExecuteTimeout, aclError (*)(uint32_t *const));
CHECK_FN(aclrtSetStreamOverflowSwitch, aclError (*)(aclrtStream, uint32_t));
CHECK_FN(aclrtGetStreamOverflowSwitch, aclError (*)(aclrtStream, uint32_t *));
CHECK_FN(aclrtGetOverflowStatus, aclError (*)(void *, size_t, aclrtStream));
CHECK_FN(aclrtResetOverflowStatus, aclError (*)(aclrtStream));
CHECK_FN(aclrtCtxGetFloatOverflowAddr, aclError (*)(void **));
CHECK_FN(aclrtGetFloatOverflowStatus, aclError (*)(void *, uint64_t, aclrtStream));
CHECK_FN(aclrtResetFloatOverflowStatus, aclError (*)(aclrtStream));
CHECK_FN(aclrtNpuGetFloatOverFlowStatus, aclError (*)(void *, uint64_t, uint32_t, aclrtStream));
CHECK_FN(aclrtNpuClearFloatOverFlowStatus, aclError (*)(uint32_t, aclrtStream));
CHECK_FN(aclmdlRICaptureBegin, aclError (*)(aclrtStream, aclmdlRICaptureMode));
CHECK_FN(aclmdlRICaptureToModelRIBegin, aclError (*)(aclrtStream, aclmdlRI, aclmdlRICaptureMode));
CHECK_FN(aclmdlRICaptureGetInfo, aclError (*)(aclrtStream, aclmdlRICaptureStatus *, aclmdlRI *));
CHECK_FN(aclmdlRICaptureEnd, aclError (*)(aclrtStream, aclmdlRI *));
CHECK_FN(aclmdlRICaptureThreadExchangeMode, aclError (*)(aclmdlRICaptureMode *));
CHECK_FN(aclmdlRICaptureTaskGrpBegin, aclError (*)(aclrtStream));
CHECK_FN(aclmdlRICaptureTaskGrpEnd, aclError (*)(aclrtStream, aclrtTaskGrp *));
CHECK_FN(aclmdlRICaptureTaskUpdateBegin, aclError (*)(aclrtStream, aclrtTaskGrp));
CHECK_FN(aclmdlRICaptureTaskUpdateEnd, aclError (*)(aclrtStream));
CHECK_FN(aclmdlRIExecuteAsync, aclError (*)(aclmdlRI, aclrtStream));
CHECK_FN(aclmdlRIExecute, aclError (*)(aclmdlRI, int32_t));
CHECK_FN(aclmdlRIAbort, aclError (*)(aclmdlRI));
CHECK_FN(aclmdlRIDestroy, aclError (*)(aclmdlRI));
CHECK_FN(aclmdlRIDestroyRegisterCallback, aclError (*)(aclmdlRI, aclrtCallback, void *));
CHECK_FN(aclmdlRIDestroyUnregisterCallback, aclError (*)(aclmdlRI, aclrtCallback));
CHECK_FN(aclmdlRIBuildBegin, aclError (*)(aclmdlRI *, uint32_t));
CHECK_FN(aclmdlRIBindStream, aclError (*)(aclmdlRI, aclrtStream, uint32_t));
CHECK_FN(aclmdlRIEndTask, aclError (*)(aclmdlRI, aclrtStream));
CHECK_FN(aclmdlRIBuildEnd, aclError (*)(aclmdlRI, void *));
CHECK_FN(aclmdlRIUnbindStream, aclError (*)(aclmdlRI, aclrtStream));
CHECK_FN(aclmdlRISetName, aclError (*)(aclmdlRI, const char *));
CHECK_FN(aclmdlRIGetName, aclError (*)(aclmdlRI, uint32_t, char *));
CHECK_FN(aclmdlRIGetId, aclError (*)(aclmdlRI, uint32_t *));
CHECK_FN(aclmdlRIDebugPrint, aclError (*)(aclmdlRI));
CHECK_FN(aclmdlRIDebugJsonPrint, aclError (*)(aclmdlRI, const char *, uint32_t));
CHECK_FN(aclmdlRIGetStreams, aclError (*)(aclmdlRI, aclrtStream *, uint32_t *));
CHECK_FN(aclmdlRIGetTasksByStream, aclError (*)(aclrtStream, aclmdlRITask *, uint32_t *));
CHECK_FN(aclmdlRITaskGetType, aclError (*)(aclmdlRITask, aclmdlRITaskType *));
CHECK_FN(aclmdlRITaskGetSeqId, aclError (*)(aclmdlRITask, uint32_t *));
CHECK_FN(aclmdlRITaskGetParams, aclError (*)(aclmdlRITask, aclmdlRITaskParams *));
CHECK_FN(aclmdlRITaskSetParams, aclError (*)(aclmdlRITask, aclmdlRITaskParams *));
CHECK_FN(aclmdlRIKernelTaskGetAttribute,
         aclError (*)(aclmdlRITask, aclrtLaunchKernelAttrId, aclrtLaunchKernelAttrValue *));
CHECK_FN(aclmdlRITaskDisable, aclError (*)(aclmdlRITask));
CHECK_FN(aclmdlRIUpdate, aclError (*)(aclmdlRI));
CHECK_FN(aclmdlRICondHandleCreate, aclError (*)(aclmdlRI, uint32_t, aclmdlRICondHandleFlag, aclmdlRICondHandle *));
CHECK_FN(aclmdlRICondHandleGetCondPtr, aclError (*)(aclmdlRICondHandle, uint64_t **));
CHECK_FN(aclmdlRIAddCondTask, aclError (*)(aclmdlRICondTaskParams, aclrtStream, uint32_t));
CHECK_FN(aclmdlInitDump, aclError (*)(void));
CHECK_FN(aclmdlSetDump, aclError (*)(const char *));
CHECK_FN(aclmdlFinalizeDump, aclError (*)(void));
CHECK_FN(aclrtAllocBuf, aclError (*)(aclrtMbuf *, size_t));
CHECK_FN(aclrtFreeBuf, aclError (*)(aclrtMbuf));
CHECK_FN(aclrtGetBufData, aclError (*)(const aclrtMbuf, void **, size_t *));
CHECK_FN(aclrtGetBufDataLen, aclError (*)(aclrtMbuf, size_t *));
CHECK_FN(aclrtSetBufDataLen, aclError (*)(aclrtMbuf, size_t));
CHECK_FN(aclrtGetBufUserData, aclError (*)(const aclrtMbuf, void *, size_t, size_t));
CHECK_FN(aclrtSetBufUserData, aclError (*)(aclrtMbuf, const void *, size_t, size_t));
CHECK_FN(aclrtCopyBufRef, aclError (*)(const aclrtMbuf, aclrtMbuf *));
CHECK_FN(aclrtAppendBufChain, aclError (*)(aclrtMbuf, aclrtMbuf));
CHECK_FN(aclrtGetBufChainNum, aclError (*)(aclrtMbuf, uint32_t *));
CHECK_FN(aclrtGetBufFromChain, aclError (*)(aclrtMbuf, uint32_t, aclrtMbuf *));
CHECK_FN(aclrtSnapShotProcessLock, aclError (*)(int, void *));
CHECK_FN(aclrtSnapShotProcessUnlock, aclError (*)(int, void *));
CHECK_FN(aclrtSnapShotProcessBackup, aclError (*)(int, aclrtSnapShotBackupArgs *));
CHECK_FN(aclrtSnapShotProcessRestore, aclError (*)(int, aclrtSnapShotRestoreArgs *));
CHECK_FN(aclrtSnapShotCallbackRegister, aclError (*)(aclrtSnapShotStage, aclrtSnapShotCallBack, void *));
CHECK_FN(aclrtSnapShotCallbackUnregister, aclError (*)(aclrtSnapShotStage, aclrtSnapShotCallBack));
CHECK_FN(aclrtRandomNumAsync, aclError (*)(const aclrtRandomNumTaskInfo *, const aclrtStream, void *));
CHECK_FN(aclrtTaskUpdateAsync, aclError (*)(aclrtStream, uint32_t, aclrtTaskUpdateInfo *, aclrtStream));
CHECK_FN(aclrtProfTrace, aclError (*)(void *, int32_t, aclrtStream));
CHECK_FN(aclrtCacheLastTaskOpInfo, aclError (*)(const void *const, const size_t));
CHECK_FN(aclrtCacheLastTaskExtendInfo, aclError (*)(const char *const, const size_t));
CHECK_FN(aclrtGetHardwareSyncAddr, aclError (*)(void **));
CHECK_FN(aclrtApiInjectionSetFunc, aclError (*)(const char *, aclrtApiFunc));
CHECK_FN(aclrtApiInjectionGetFunc, aclError (*)(const char *, aclrtApiFunc *, aclrtApiFunc *));

/* ---- enumerators ------------------------------------------------------------------------------------ */

CHECK_VALUE(ACL_DT_UNDEFINED, -1);
CHECK_VALUE(ACL_FLOAT, 0);
CHECK_VALUE(ACL_FLOAT16, 1);
CHECK_VALUE(ACL_INT8, 2);
CHECK_VALUE(ACL_INT32, 3);
CHECK_VALUE(ACL_UINT8, 4);
CHECK_VALUE(ACL_INT16, 6);
CHECK_VALUE(ACL_UINT16, 7);
CHECK_VALUE(ACL_UINT32, 8);
CHECK_VALUE(ACL_INT64, 9);
CHECK_VALUE(ACL_UINT64, 10);
CHECK_VALUE(ACL_DOUBLE, 11);
CHECK_VALUE(ACL_BOOL, 12);
CHECK_VALUE(ACL_STRING, 13);
CHECK_VALUE(ACL_COMPLEX64, 16);
CHECK_VALUE(ACL_COMPLEX128, 17);
CHECK_VALUE(ACL_BF16, 27);
CHECK_VALUE(ACL_INT4, 29);
CHECK_VALUE(ACL_UINT1, 30);
CHECK_VALUE(ACL_COMPLEX32, 33);
CHECK_VALUE(ACL_HIFLOAT8, 34);
CHECK_VALUE(ACL_FLOAT8_E5M2, 35);
CHECK_VALUE(ACL_FLOAT8_E4M3FN, 36);
CHECK_VALUE(ACL_FLOAT8_E8M0, 37);
CHECK_VALUE(ACL_FLOAT6_E3M2, 38);
CHECK_VALUE(ACL_FLOAT6_E2M3, 39);
CHECK_VALUE(ACL_FLOAT4_E2M1, 40);
CHECK_VALUE(ACL_FLOAT4_E1M2, 41);
CHECK_VALUE(ACL_HIFLOAT4, 42);
CHECK_VALUE(ACL_HIFLOAT4_SCALE, 43);
CHECK_VALUE(ACL_FORMAT_UNDEFINED, -1);
CHECK_VALUE(ACL_FORMAT_NCHW, 0);
CHECK_VALUE(ACL_FORMAT_NHWC, 1);
CHECK_VALUE(ACL_FORMAT_ND, 2);
CHECK_VALUE(ACL_FORMAT_NC1HWC0, 3);
CHECK_VALUE(ACL_FORMAT_FRACTAL_Z, 4);
CHECK_VALUE(ACL_FORMAT_NC1HWC0_C04, 12);
CHECK_VALUE(ACL_FORMAT_HWCN, 16);
CHECK_VALUE(ACL_FORMAT_NDHWC, 27);
CHECK_VALUE(ACL_FORMAT_FRACTAL_NZ, 29);
CHECK_VALUE(ACL_FORMAT_NCDHW, 30);
CHECK_VALUE(ACL_FORMAT_NDC1HWC0, 32);
CHECK_VALUE(ACL_FRACTAL_Z_3D, 33);
CHECK_VALUE(ACL_FORMAT_NC, 35);
CHECK_VALUE(ACL_FORMAT_NCL, 47);
CHECK_VALUE(ACL_FORMAT_FRACTAL_NZ_C0_16, 50);
CHECK_VALUE(ACL_FORMAT_FRACTAL_NZ_C0_32, 51);
CHECK_VALUE(ACL_FORMAT_FRACTAL_NZ_C0_2, 52);
CHECK_VALUE(ACL_FORMAT_FRACTAL_NZ_C0_4, 53);
CHECK_VALUE(ACL_FORMAT_FRACTAL_NZ_C0_8, 54);
CHECK_VALUE(ACL_DEBUG, 0);
CHECK_VALUE(ACL_INFO, 1);
CHECK_VALUE(ACL_WARNING, 2);
CHECK_VALUE(ACL_ERROR, 3);
CHECK_VALUE(ACL_MEMTYPE_DEVICE, 0);
CHECK_VALUE(ACL_MEMTYPE_HOST, 1);
CHECK_VALUE(ACL_MEMTYPE_HOST_COMPILE_INDEPENDENT, 2);
CHECK_VALUE(ACL_OPT_DETERMINISTIC, 0);
CHECK_VALUE(ACL_OPT_ENABLE_DEBUG_KERNEL, 1);
CHECK_VALUE(ACL_OPT_STRONG_CONSISTENCY, 2);
CHECK_VALUE(ACL_OPT_ENABLE_KERNEL_EARLY_START, 3);
CHECK_VALUE(ACL_CANN_ATTR_UNDEFINED, -1);
CHECK_VALUE(ACL_CANN_ATTR_INF_NAN, 0);
CHECK_VALUE(ACL_CANN_ATTR_BF16, 1);
CHECK_VALUE(ACL_CANN_ATTR_JIT_COMPILE, 2);
CHECK_VALUE(ACL_DEVICE_INFO_UNDEFINED, -1);
CHECK_VALUE(ACL_DEVICE_INFO_AI_CORE_NUM, 0);
CHECK_VALUE(ACL_DEVICE_INFO_VECTOR_CORE_NUM, 1);
CHECK_VALUE(ACL_DEVICE_INFO_L2_SIZE, 2);
CHECK_VALUE(ACL_DEVICE, 0);
CHECK_VALUE(ACL_HOST, 1);
CHECK_VALUE(ACL_TS_ID_AICORE, 0);
CHECK_VALUE(ACL_TS_ID_AIVECTOR, 1);
CHECK_VALUE(ACL_TS_ID_RESERVED, 2);
CHECK_VALUE(ACL_EVENT_STATUS_COMPLETE, 0);
CHECK_VALUE(ACL_EVENT_STATUS_NOT_READY, 1);
CHECK_VALUE(ACL_EVENT_STATUS_RESERVED, 2);
CHECK_VALUE(ACL_EVENT_RECORDED_STATUS_NOT_READY, 0);
CHECK_VALUE(ACL_EVENT_RECORDED_STATUS_COMPLETE, 1);
CHECK_VALUE(ACL_EVENT_WAIT_STATUS_COMPLETE, 0);
CHECK_VALUE(ACL_EVENT_WAIT_STATUS_NOT_READY, 1);
CHECK_VALUE(ACL_EVENT_WAIT_STATUS_RESERVED, 65535);
CHECK_VALUE(ACL_STREAM_STATUS_COMPLETE, 0);
CHECK_VALUE(ACL_STREAM_STATUS_NOT_READY, 1);
CHECK_VALUE(ACL_STREAM_STATUS_RESERVED, 65535);
CHECK_VALUE(ACL_CALLBACK_NO_BLOCK, 0);
CHECK_VALUE(ACL_CALLBACK_BLOCK, 1);
CHECK_VALUE(ACL_MEMCPY_HOST_TO_HOST, 0);
CHECK_VALUE(ACL_MEMCPY_HOST_TO_DEVICE, 1);
CHECK_VALUE(ACL_MEMCPY_DEVICE_TO_HOST, 2);
CHECK_VALUE(ACL_MEMCPY_DEVICE_TO_DEVICE, 3);
CHECK_VALUE(ACL_MEMCPY_DEFAULT, 4);
CHECK_VALUE(ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE, 5);
CHECK_VALUE(ACL_MEMCPY_INNER_DEVICE_TO_DEVICE, 6);
CHECK_VALUE(ACL_MEMCPY_INTER_DEVICE_TO_DEVICE, 7);
CHECK_VALUE(ACL_MEM_ADVISE_SET_READ_MOSTLY, 0);
CHECK_VALUE(ACL_MEM_ADVISE_UNSET_READ_MOSTLY, 1);
CHECK_VALUE(ACL_MEM_ADVISE_SET_PREFERRED_LOCATION, 2);
CHECK_VALUE(ACL_MEM_ADVISE_UNSET_PREFERRED_LOCATION, 3);
CHECK_VALUE(ACL_MEM_ADVISE_SET_ACCESSED_BY, 4);
CHECK_VALUE(ACL_MEM_ADVISE_UNSET_ACCESSED_BY, 5);
CHECK_VALUE(ACL_MEM_LOCATIONTYPE_INVALID, 0);
CHECK_VALUE(ACL_MEM_LOCATIONTYPE_DEVICE, 1);
CHECK_VALUE(ACL_MEM_LOCATIONTYPE_HOST, 2);
CHECK_VALUE(ACL_MEM_LOCATIONTYPE_HOST_NUMA, 3);
CHECK_VALUE(ACL_MEM_LOCATIONTYPE_HOST_NUMA_CURRENT, 4);
CHECK_VALUE(ACL_MEM_MALLOC_HUGE_FIRST, 0);
CHECK_VALUE(ACL_MEM_MALLOC_HUGE_ONLY, 1);
CHECK_VALUE(ACL_MEM_MALLOC_NORMAL_ONLY, 2);
CHECK_VALUE(ACL_MEM_MALLOC_HUGE_FIRST_P2P, 3);
CHECK_VALUE(ACL_MEM_MALLOC_HUGE_ONLY_P2P, 4);
CHECK_VALUE(ACL_MEM_MALLOC_NORMAL_ONLY_P2P, 5);
CHECK_VALUE(ACL_MEM_MALLOC_HUGE1G_ONLY, 6);
CHECK_VALUE(ACL_MEM_MALLOC_HUGE1G_ONLY_P2P, 7);
CHECK_VALUE(ACL_MEM_TYPE_LOW_BAND_WIDTH, 256);
CHECK_VALUE(ACL_MEM_TYPE_HIGH_BAND_WIDTH, 4096);
CHECK_VALUE(ACL_MEM_ACCESS_USER_SPACE_READONLY, 1048576);
CHECK_VALUE(ACL_HOST_REGISTER_MAPPED, 0);
CHECK_VALUE(ACL_HOST_REGISTER_IOMEMORY, 4);
CHECK_VALUE(ACL_HOST_REGISTER_READONLY, 8);
CHECK_VALUE(ACL_RT_MEM_ATTR_RSV, 0);
CHECK_VALUE(ACL_RT_MEM_ATTR_MODULE_ID, 1);
CHECK_VALUE(ACL_RT_MEM_ATTR_DEVICE_ID, 2);
CHECK_VALUE(ACL_RT_MEM_ATTR_VA_FLAG, 3);
CHECK_VALUE(ACL_DDR_MEM, 0);
CHECK_VALUE(ACL_HBM_MEM, 1);
CHECK_VALUE(ACL_DDR_MEM_HUGE, 2);
CHECK_VALUE(ACL_DDR_MEM_NORMAL, 3);
CHECK_VALUE(ACL_HBM_MEM_HUGE, 4);
CHECK_VALUE(ACL_HBM_MEM_NORMAL, 5);
CHECK_VALUE(ACL_DDR_MEM_P2P_HUGE, 6);
CHECK_VALUE(ACL_DDR_MEM_P2P_NORMAL, 7);
CHECK_VALUE(ACL_HBM_MEM_P2P_HUGE, 8);
CHECK_VALUE(ACL_HBM_MEM_P2P_NORMAL, 9);
CHECK_VALUE(ACL_HBM_MEM_HUGE1G, 10);
CHECK_VALUE(ACL_HBM_MEM_P2P_HUGE1G, 11);
CHECK_VALUE(ACL_MEM_NORMAL, 12);
CHECK_VALUE(ACL_MEM_HUGE, 13);
CHECK_VALUE(ACL_MEM_HUGE1G, 14);
CHECK_VALUE(ACL_MEM_P2P_NORMAL, 15);
CHECK_VALUE(ACL_MEM_P2P_HUGE, 16);
CHECK_VALUE(ACL_MEM_P2P_HUGE1G, 17);
CHECK_VALUE(NORMAL_PAGE_TYPE, 0);
CHECK_VALUE(HUGE_PAGE_TYPE, 1);
CHECK_VALUE(HUGE1G_PAGE_TYPE, 2);
CHECK_VALUE(HBM_TYPE, 0);
CHECK_VALUE(DDR_TYPE, 1);
CHECK_VALUE(P2P_HBM_TYPE, 2);
CHECK_VALUE(P2P_DDR_TYPE, 3);
CHECK_VALUE(ACL_RT_IPC_MEM_ATTR_ACCESS_LINK, 0);
CHECK_VALUE(ACL_GROUP_AICORE_INT, 0);
CHECK_VALUE(ACL_GROUP_AIV_INT, 1);
CHECK_VALUE(ACL_GROUP_AIC_INT, 2);
CHECK_VALUE(ACL_GROUP_SDMANUM_INT, 3);
CHECK_VALUE(ACL_GROUP_ASQNUM_INT, 4);
CHECK_VALUE(ACL_GROUP_GROUPID_INT, 5);
CHECK_VALUE(ACL_RT_OVERFLOW_MODE_SATURATION, 0);
CHECK_VALUE(ACL_RT_OVERFLOW_MODE_INFNAN, 1);
CHECK_VALUE(ACL_RT_OVERFLOW_MODE_UNDEF, 2);
CHECK_VALUE(ACL_RT_STREAM_WORK_ADDR_PTR, 0);
CHECK_VALUE(ACL_RT_STREAM_WORK_SIZE, 1);
CHECK_VALUE(ACL_RT_STREAM_FLAG, 2);
CHECK_VALUE(ACL_RT_STREAM_PRIORITY, 3);
CHECK_VALUE(ACL_MEM_LOCATION_TYPE_HOST, 0);
CHECK_VALUE(ACL_MEM_LOCATION_TYPE_DEVICE, 1);
CHECK_VALUE(ACL_MEM_LOCATION_TYPE_UNREGISTERED, 2);
CHECK_VALUE(ACL_MEM_LOCATION_TYPE_MANAGED, 3);
CHECK_VALUE(ACL_MEM_LOCATION_TYPE_HOST_NUMA, 4);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, 1);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, 2);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, 3);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, 4);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, 5);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, 6);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, 7);
CHECK_VALUE(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, 8);
CHECK_VALUE(ACL_MEM_ALLOCATION_TYPE_PINNED, 0);
CHECK_VALUE(ACL_MEM_HANDLE_TYPE_NONE, 0);
CHECK_VALUE(ACL_MEM_HANDLE_TYPE_POSIX, 2);
CHECK_VALUE(ACL_MEM_SHARE_HANDLE_TYPE_DEFAULT, 1);
CHECK_VALUE(ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 2);
CHECK_VALUE(ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, 0);
CHECK_VALUE(ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, 1);
CHECK_VALUE(ACL_RT_MEM_ALLOC_GRANULARITY_UNDEF, 65535);
CHECK_VALUE(ACL_RT_DEVICE_STATUS_NORMAL, 0);
CHECK_VALUE(ACL_RT_DEVICE_STATUS_ABNORMAL, 1);
CHECK_VALUE(ACL_RT_DEVICE_STATUS_END, 65535);
CHECK_VALUE(ACL_MODEL_RI_CAPTURE_MODE_GLOBAL, 0);
CHECK_VALUE(ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL, 1);
CHECK_VALUE(ACL_MODEL_RI_CAPTURE_MODE_RELAXED, 2);
CHECK_VALUE(ACL_MODEL_RI_CAPTURE_STATUS_NONE, 0);
CHECK_VALUE(ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE, 1);
CHECK_VALUE(ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED, 2);
CHECK_VALUE(ACL_RT_NO_ERROR, 0);
CHECK_VALUE(ACL_RT_ERROR_MEMORY, 1);
CHECK_VALUE(ACL_RT_ERROR_L2, 2);
CHECK_VALUE(ACL_RT_ERROR_AICORE, 3);
CHECK_VALUE(ACL_RT_ERROR_LINK, 4);
CHECK_VALUE(ACL_RT_ERROR_L3_PORT, 5);
CHECK_VALUE(ACL_RT_ERROR_OTHERS, 65535);
CHECK_VALUE(ACL_RT_AICORE_ERROR_UNKNOWN, 0);
CHECK_VALUE(ACL_RT_AICORE_ERROR_SW, 1);
CHECK_VALUE(ACL_RT_AICORE_ERROR_HW_LOCAL, 2);
CHECK_VALUE(ACL_RT_CMO_TYPE_PREFETCH, 0);
CHECK_VALUE(ACL_RT_CMO_TYPE_WRITEBACK, 1);
CHECK_VALUE(ACL_RT_CMO_TYPE_INVALID, 2);
CHECK_VALUE(ACL_RT_CMO_TYPE_FLUSH, 3);
CHECK_VALUE(ACL_RT_THREAD_LEVEL, 0);
CHECK_VALUE(ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD, 1);
CHECK_VALUE(ACL_RT_BINARY_LOAD_OPT_LAZY_MAGIC, 2);
CHECK_VALUE(ACL_RT_BINARY_LOAD_OPT_MAGIC, 2);
CHECK_VALUE(ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, 3);
CHECK_VALUE(ACL_RT_ENGINE_TYPE_AIC, 0);
CHECK_VALUE(ACL_RT_ENGINE_TYPE_AIV, 1);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, 1);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_LOCAL_MEMORY_SIZE, 2);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE, 2);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE, 3);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET, 4);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH, 5);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP, 6);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, 7);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US, 8);
CHECK_VALUE(ACL_RT_LAUNCH_KERNEL_ATTR_ENABLE_PROFILING, 9);
CHECK_VALUE(ACL_STREAM_ATTR_FAILURE_MODE, 1);
CHECK_VALUE(ACL_STREAM_ATTR_FLOAT_OVERFLOW_CHECK, 2);
CHECK_VALUE(ACL_STREAM_ATTR_USER_CUSTOM_TAG, 3);
CHECK_VALUE(ACL_STREAM_ATTR_CACHE_OP_INFO, 4);
CHECK_VALUE(ACL_STREAM_ATTR_PRIORITY, 5);
CHECK_VALUE(ACL_MODEL_RI_TASK_DEFAULT, 0);
CHECK_VALUE(ACL_MODEL_RI_TASK_KERNEL, 1);
CHECK_VALUE(ACL_MODEL_RI_TASK_EVENT_RECORD, 2);
CHECK_VALUE(ACL_MODEL_RI_TASK_EVENT_WAIT, 3);
CHECK_VALUE(ACL_MODEL_RI_TASK_EVENT_RESET, 4);
CHECK_VALUE(ACL_MODEL_RI_TASK_VALUE_WRITE, 5);
CHECK_VALUE(ACL_MODEL_RI_TASK_VALUE_WAIT, 6);
CHECK_VALUE(ACL_DEV_ATTR_AICPU_CORE_NUM, 1);
CHECK_VALUE(ACL_DEV_ATTR_AICORE_CORE_NUM, 101);
CHECK_VALUE(ACL_DEV_ATTR_CUBE_CORE_NUM, 102);
CHECK_VALUE(ACL_DEV_ATTR_VECTOR_CORE_NUM, 201);
CHECK_VALUE(ACL_DEV_ATTR_WARP_SIZE, 202);
CHECK_VALUE(ACL_DEV_ATTR_MAX_THREAD_PER_VECTOR_CORE, 203);
CHECK_VALUE(ACL_DEV_ATTR_LOCAL_MEM_PER_VECTOR_CORE, 204);
CHECK_VALUE(ACL_DEV_ATTR_UBUF_PER_VECTOR_CORE, 204);
CHECK_VALUE(ACL_DEV_ATTR_MAX_GRID_DIM_X, 205);
CHECK_VALUE(ACL_DEV_ATTR_MAX_GRID_DIM_Y, 206);
CHECK_VALUE(ACL_DEV_ATTR_MAX_GRID_DIM_Z, 207);
CHECK_VALUE(ACL_DEV_ATTR_MAX_BLOCK_PER_GRID, 208);
CHECK_VALUE(ACL_DEV_ATTR_MAX_THREADS_PER_BLOCK, 209);
CHECK_VALUE(ACL_DEV_ATTR_MAX_BLOCK_DIM_X, 210);
CHECK_VALUE(ACL_DEV_ATTR_MAX_BLOCK_DIM_Y, 211);
CHECK_VALUE(ACL_DEV_ATTR_MAX_BLOCK_DIM_Z, 212);
CHECK_VALUE(ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE, 301);
CHECK_VALUE(ACL_DEV_ATTR_L2_CACHE_SIZE, 302);
CHECK_VALUE(ACL_DEV_ATTR_SMP_ID, 401);
CHECK_VALUE(ACL_DEV_ATTR_PHY_CHIP_ID, 402);
CHECK_VALUE(ACL_DEV_ATTR_SUPER_POD_DEVIDE_ID, 403);
CHECK_VALUE(ACL_DEV_ATTR_SUPER_POD_DEVICE_ID, 403);
CHECK_VALUE(ACL_DEV_ATTR_SUPER_POD_SERVER_ID, 404);
CHECK_VALUE(ACL_DEV_ATTR_SUPER_POD_ID, 405);
CHECK_VALUE(ACL_DEV_ATTR_CUST_OP_PRIVILEGE, 406);
CHECK_VALUE(ACL_DEV_ATTR_MAINBOARD_ID, 407);
CHECK_VALUE(ACL_DEV_ATTR_HD_CONNECT_TYPE, 408);
CHECK_VALUE(ACL_DEV_ATTR_DEVICE_FORM_FACTOR, 409);
CHECK_VALUE(ACL_DEV_ATTR_SUPER_POD_CHASSIS_ID, 410);
CHECK_VALUE(ACL_DEV_ATTR_IS_VIRTUAL, 501);
CHECK_VALUE(ACL_DEV_ATTR_NPU_ARCH, 601);
CHECK_VALUE(ACL_FEATURE_TSCPU_TASK_UPDATE_SUPPORT_AIC_AIV, 1);
CHECK_VALUE(ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV, 21);
CHECK_VALUE(ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM, 10);
CHECK_VALUE(ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX, 11);
CHECK_VALUE(ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN, 12);
CHECK_VALUE(ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL, 13);
CHECK_VALUE(ACL_RT_DEVICE_STATE_SET_PRE, 0);
CHECK_VALUE(ACL_RT_DEVICE_STATE_SET_POST, 1);
CHECK_VALUE(ACL_RT_DEVICE_STATE_RESET_PRE, 2);
CHECK_VALUE(ACL_RT_DEVICE_STATE_RESET_POST, 3);
CHECK_VALUE(ACL_RT_STREAM_STATE_CREATE_POST, 1);
CHECK_VALUE(ACL_RT_STREAM_STATE_DESTROY_PRE, 2);
CHECK_VALUE(ACL_FUNC_ATTR_KERNEL_TYPE, 1);
CHECK_VALUE(ACL_FUNC_ATTR_KERNEL_RATIO, 2);
CHECK_VALUE(ACL_FUNC_ATTR_KERNEL_SCHED_MODE, 3);
CHECK_VALUE(ACL_KERNEL_TYPE_AICORE, 0);
CHECK_VALUE(ACL_KERNEL_TYPE_CUBE, 1);
CHECK_VALUE(ACL_KERNEL_TYPE_VECTOR, 2);
CHECK_VALUE(ACL_KERNEL_TYPE_MIX, 3);
CHECK_VALUE(ACL_KERNEL_TYPE_AICPU, 100);
CHECK_VALUE(ACL_PKG_NAME_CANN, 0);
CHECK_VALUE(ACL_PKG_NAME_RUNTIME, 1);
CHECK_VALUE(ACL_PKG_NAME_COMPILER, 2);
CHECK_VALUE(ACL_PKG_NAME_HCCL, 3);
CHECK_VALUE(ACL_PKG_NAME_TOOLKIT, 4);
CHECK_VALUE(ACL_PKG_NAME_OPP, 5);
CHECK_VALUE(ACL_PKG_NAME_OPP_KERNEL, 6);
CHECK_VALUE(ACL_PKG_NAME_DRIVER, 7);
CHECK_VALUE(ACL_RT_DEV_RES_CUBE_CORE, 0);
CHECK_VALUE(ACL_RT_DEV_RES_VECTOR_CORE, 1);
CHECK_VALUE(ACL_RT_EQUAL, 0);
CHECK_VALUE(ACL_RT_NOT_EQUAL, 1);
CHECK_VALUE(ACL_RT_GREATER, 2);
CHECK_VALUE(ACL_RT_GREATER_OR_EQUAL, 3);
CHECK_VALUE(ACL_RT_LESS, 4);
CHECK_VALUE(ACL_RT_LESS_OR_EQUAL, 5);
CHECK_VALUE(ACL_RT_DEVICE_TASK_ABORT_PRE, 0);
CHECK_VALUE(ACL_RT_DEVICE_TASK_ABORT_POST, 1);
CHECK_VALUE(ACL_RT_DEV_LIMIT_SIMT_STACK_SIZE, 0);
CHECK_VALUE(ACL_RT_DEV_LIMIT_SIMT_DVG_WARP_STACK_SIZE, 1);
CHECK_VALUE(ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE, 2);
CHECK_VALUE(ACL_RT_DEV_LIMIT_SIMD_PRINTF_FIFO_SIZE_PER_CORE, 3);
CHECK_VALUE(ACL_RT_DEV_LIMIT_SIMT_PRINTF_FIFO_SIZE, 4);
CHECK_VALUE(ACL_REG_TYPE_ACL_MODEL, 0);
CHECK_VALUE(ACL_REG_TYPE_ACL_OP_EXECUTOR, 1);
CHECK_VALUE(ACL_REG_TYPE_ACL_OP_CBLAS, 2);
CHECK_VALUE(ACL_REG_TYPE_ACL_OP_COMPILER, 3);
CHECK_VALUE(ACL_REG_TYPE_ACL_TDT_CHANNEL, 4);
CHECK_VALUE(ACL_REG_TYPE_ACL_TDT_QUEUE, 5);
CHECK_VALUE(ACL_REG_TYPE_ACL_DVPP, 6);
CHECK_VALUE(ACL_REG_TYPE_ACL_RETR, 7);
CHECK_VALUE(ACL_REG_TYPE_OTHER, 65535);
CHECK_VALUE(ACL_RT_PROCESS_STATE_RUNNING, 0);
CHECK_VALUE(ACL_RT_PROCESS_STATE_LOCKED, 1);
CHECK_VALUE(ACL_RT_SWITCH_INT32, 0);
CHECK_VALUE(ACL_RT_SWITCH_INT64, 1);
CHECK_VALUE(ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK, 0);
CHECK_VALUE(ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS, 1);
CHECK_VALUE(ACL_RT_RANDOM_NUM_FUNC_TYPE_NORMAL_DIS, 2);
CHECK_VALUE(ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS, 3);
CHECK_VALUE(ACL_RT_UPDATE_RANDOM_TASK, 1);
CHECK_VALUE(ACL_RT_UPDATE_AIC_AIV_TASK, 2);
CHECK_VALUE(ACL_RT_SNAPSHOT_LOCK_PRE, 0);
CHECK_VALUE(ACL_RT_SNAPSHOT_BACKUP_PRE, 1);
CHECK_VALUE(ACL_RT_SNAPSHOT_BACKUP_POST, 2);
CHECK_VALUE(ACL_RT_SNAPSHOT_RESTORE_PRE, 3);
CHECK_VALUE(ACL_RT_SNAPSHOT_RESTORE_POST, 4);
CHECK_VALUE(ACL_RT_SNAPSHOT_UNLOCK_POST, 5);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_RECORD_SET_VALUE_MODE, 0);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_RECORD_ADD_MODE, 1);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_RECORD_BIT_OR_MODE, 2);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_RECORD_BIT_AND_MODE, 4);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_WAIT_LESS_MODE, 0);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_WAIT_EQUAL_MODE, 1);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_WAIT_BIGGER_MODE, 2);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_WAIT_BIGGER_OR_EQUAL_MODE, 3);
CHECK_VALUE(ACL_RT_CNT_NOTIFY_WAIT_EQUAL_WITH_BITMASK_MODE, 4);
CHECK_VALUE(ACL_RT_MEM_ACCESS_FLAGS_NONE, 0);
CHECK_VALUE(ACL_RT_MEM_ACCESS_FLAGS_READ, 1);
CHECK_VALUE(ACL_RT_MEM_ACCESS_FLAGS_READWRITE, 3);
CHECK_VALUE(ACL_RT_HAC_TYPE_STARS, 0);
CHECK_VALUE(ACL_RT_HAC_TYPE_AICPU, 1);
CHECK_VALUE(ACL_RT_HAC_TYPE_AIC, 2);
CHECK_VALUE(ACL_RT_HAC_TYPE_AIV, 3);
CHECK_VALUE(ACL_RT_HAC_TYPE_PCIEDMA, 4);
CHECK_VALUE(ACL_RT_HAC_TYPE_RDMA, 5);
CHECK_VALUE(ACL_RT_HAC_TYPE_SDMA, 6);
CHECK_VALUE(ACL_RT_HAC_TYPE_DVPP, 7);
CHECK_VALUE(ACL_RT_HAC_TYPE_UDMA, 8);
CHECK_VALUE(ACL_RT_HAC_TYPE_CCU, 9);
CHECK_VALUE(ACL_RT_HOST_MEM_MAP_NOT_SUPPORTED, 0);
CHECK_VALUE(ACL_RT_HOST_MEM_MAP_SUPPORTED, 1);
CHECK_VALUE(ACL_RT_MEM_ACCESS_LINK_SIO, 0);
CHECK_VALUE(ACL_RT_MEM_ACCESS_LINK_HCCS, 1);
CHECK_VALUE(ACL_RT_MEM_ACCESS_UB_ONE_PORT_PATH, 2);
CHECK_VALUE(ACL_RT_MEM_ACCESS_UB_MULTI_PORT_PATH, 3);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_SIGNED, 1);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_UNSIGNED, 2);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_REDUCATION, 4);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_REDUCTION, 4);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_SCALAR8, 8);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_SCALAR16, 16);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_SCALAR32, 32);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_SCALAR64, 64);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_SCALAR128, 128);
CHECK_VALUE(ACL_RT_ATOMIC_CAPABILITY_VECTOR32X4, 256);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_INTEGER_ADD, 0);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_INTEGER_MIN, 1);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_INTEGER_MAX, 2);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_INTEGER_INCREMENT, 3);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_INTEGER_DECREMENT, 4);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_AND, 5);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_OR, 6);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_XOR, 7);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_EXCHANGE, 8);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_CAS, 9);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_FLOAT_ADD, 10);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_FLOAT_MIN, 11);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_FLOAT_MAX, 12);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_DMA_ADD, 30);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_DMA_MIN, 31);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_DMA_MAX, 32);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_ADD, 40);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_MIN, 41);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_MAX, 42);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_CAS, 43);
CHECK_VALUE(ACL_RT_ATOMIC_OPERATION_SIMD_SCALAR_EXCH, 44);
CHECK_VALUE(ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT, 1);
CHECK_VALUE(ACL_MODEL_RI_COND_TYPE_IF, 0);
CHECK_VALUE(ACL_MODEL_RI_COND_TYPE_WHILE, 1);
CHECK_VALUE(ACL_MODEL_RI_COND_TYPE_SWITCH, 2);

#pragma GCC diagnostic pop

/* ---- #define values: error numbers of rt_error_codes.h, flags, sizes, versions ---------------------- */

CHECK_VALUE(ACL_CONTINUE_ON_FAILURE, 0x00000000U);
CHECK_VALUE(ACL_DEVICE_FORM_FACTOR_A_K, 1);
CHECK_VALUE(ACL_DEVICE_FORM_FACTOR_A_X, 2);
CHECK_VALUE(ACL_DEVICE_FORM_FACTOR_PCIE_CARD, 3);
CHECK_VALUE(ACL_DEVICE_FORM_FACTOR_POD, 0);
CHECK_VALUE(ACL_DEV_FEATURE_NOT_SUPPORT, 0x00000000);
CHECK_VALUE(ACL_DEV_FEATURE_SUPPORT, 0x00000001);
CHECK_VALUE(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 507910);
CHECK_VALUE(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, 507911);
CHECK_VALUE(ACL_ERROR_RT_ADDR_UNALIGNED, 107008);
CHECK_VALUE(ACL_ERROR_RT_AICORE_EXCEPTION, 507015);
CHECK_VALUE(ACL_ERROR_RT_AICORE_OVER_FLOW, 207003);
CHECK_VALUE(ACL_ERROR_RT_AICORE_TIMEOUT, 507014);
CHECK_VALUE(ACL_ERROR_RT_AICORE_TRAP_EXCEPTION, 507016);
CHECK_VALUE(ACL_ERROR_RT_AICORE_TRAP_READ_OVERFLOW, 507042);
CHECK_VALUE(ACL_ERROR_RT_AICORE_TRAP_WRITE_OVERFLOW, 507043);
CHECK_VALUE(ACL_ERROR_RT_AICPU_DATADUMP_RSP_ERR, 507019);
CHECK_VALUE(ACL_ERROR_RT_AICPU_EXCEPTION, 507018);
CHECK_VALUE(ACL_ERROR_RT_AICPU_INFO_LOAD_RSP_ERR, 507902);
CHECK_VALUE(ACL_ERROR_RT_AICPU_INTERNAL_ERROR, 507900);
CHECK_VALUE(ACL_ERROR_RT_AICPU_MODEL_RSP_ERR, 507020);
CHECK_VALUE(ACL_ERROR_RT_AICPU_TIMEOUT, 507017);
CHECK_VALUE(ACL_ERROR_RT_AIVEC_OVER_FLOW, 207016);
CHECK_VALUE(ACL_ERROR_RT_CAPTURE_DEPENDENCY, 107024);
CHECK_VALUE(ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC, 107041);
CHECK_VALUE(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, 107030);
CHECK_VALUE(ACL_ERROR_RT_CDQ_BATCH_ABNORMAL, 507037);
CHECK_VALUE(ACL_ERROR_RT_COMM_OP_RETRY_FAIL, 507904);
CHECK_VALUE(ACL_ERROR_RT_CONTEXT_NULL, 107002);
CHECK_VALUE(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, 507007);
CHECK_VALUE(ACL_ERROR_RT_COPY_DATA, 507052);
CHECK_VALUE(ACL_ERROR_RT_DEBUG_REGISTER_FAIL, 507029);
CHECK_VALUE(ACL_ERROR_RT_DEBUG_UNREGISTER_FAIL, 507030);
CHECK_VALUE(ACL_ERROR_RT_DEVICE_MEM_ERROR, 507053);
CHECK_VALUE(ACL_ERROR_RT_DEVICE_OOM, 207018);
CHECK_VALUE(ACL_ERROR_RT_DEVICE_TASK_ABORT, 107022);
CHECK_VALUE(ACL_ERROR_RT_DEV_SETUP_ERROR, 507033);
CHECK_VALUE(ACL_ERROR_RT_DIE_MODE_CHANGE_ERROR, 507038);
CHECK_VALUE(ACL_ERROR_RT_DIE_MODE_NOT_SET, 507041);
CHECK_VALUE(ACL_ERROR_RT_DIE_SET_ERROR, 507039);
CHECK_VALUE(ACL_ERROR_RT_DRV_INTERNAL_ERROR, 507899);
CHECK_VALUE(ACL_ERROR_RT_END_OF_SEQUENCE, 507005);
CHECK_VALUE(ACL_ERROR_RT_EVENT_CAPTURED, 107028);
CHECK_VALUE(ACL_ERROR_RT_EVENT_NOT_COMPLETE, 507006);
CHECK_VALUE(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, 507047);
CHECK_VALUE(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, 107006);
CHECK_VALUE(ACL_ERROR_RT_EVENT_TIMESTAMP_REVERSAL, 107007);
CHECK_VALUE(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, 207000);
CHECK_VALUE(ACL_ERROR_RT_FEATURE_NOT_SUPPORT_UPDATE_OP, 207019);
CHECK_VALUE(ACL_ERROR_RT_FFTS_PLUS_EXCEPTION, 507049);
CHECK_VALUE(ACL_ERROR_RT_FFTS_PLUS_TIMEOUT, 507048);
CHECK_VALUE(ACL_ERROR_RT_FFTS_PLUS_TRAP_EXCEPTION, 507050);
CHECK_VALUE(ACL_ERROR_RT_FILE_OPEN, 107009);
CHECK_VALUE(ACL_ERROR_RT_FILE_WRITE, 107010);
CHECK_VALUE(ACL_ERROR_RT_GROUP_NOT_CREATE, 107014);
CHECK_VALUE(ACL_ERROR_RT_GROUP_NOT_SET, 107013);
CHECK_VALUE(ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR, 507054);
CHECK_VALUE(ACL_ERROR_RT_INSUFFICIENT_INPUT_ARRAY, 107039);
CHECK_VALUE(ACL_ERROR_RT_INTERNAL_ERROR, 507000);
CHECK_VALUE(ACL_ERROR_RT_INVALID_DEVICEID, 107001);
CHECK_VALUE(ACL_ERROR_RT_INVALID_DIEID, 507040);
CHECK_VALUE(ACL_ERROR_RT_INVALID_HANDLE, 107017);
CHECK_VALUE(ACL_ERROR_RT_INVALID_MALLOC_TYPE, 107018);
CHECK_VALUE(ACL_ERROR_RT_INVALID_MEMORY_TYPE, 107016);
CHECK_VALUE(ACL_ERROR_RT_IPC_ERROR, 507022);
CHECK_VALUE(ACL_ERROR_RT_KERNEL_DUPLICATE, 507028);
CHECK_VALUE(ACL_ERROR_RT_KERNEL_LOOKUP, 507027);
CHECK_VALUE(ACL_ERROR_RT_KERNEL_UNREGISTERING, 507024);
CHECK_VALUE(ACL_ERROR_RT_L3_PORT_ERROR, 507914);
CHECK_VALUE(ACL_ERROR_RT_LABEL_CONTEXT, 507031);
CHECK_VALUE(ACL_ERROR_RT_LINK_ERROR, 507056);
CHECK_VALUE(ACL_ERROR_RT_LOST_HEARTBEAT, 507010);
CHECK_VALUE(ACL_ERROR_RT_MEMORY_ALLOCATION, 207001);
CHECK_VALUE(ACL_ERROR_RT_MEMORY_FREE, 207002);
CHECK_VALUE(ACL_ERROR_RT_MODEL_ABORT_NORMAL, 507023);
CHECK_VALUE(ACL_ERROR_RT_MODEL_CAPTURED, 107026);
CHECK_VALUE(ACL_ERROR_RT_MODEL_CONTEXT, 107004);
CHECK_VALUE(ACL_ERROR_RT_MODEL_EXECUTE, 507011);
CHECK_VALUE(ACL_ERROR_RT_MODEL_RUNNING, 107037);
CHECK_VALUE(ACL_ERROR_RT_MODEL_UPDATE_FAILED, 107040);
CHECK_VALUE(ACL_ERROR_RT_NO_CDQ_RESOURCE, 207011);
CHECK_VALUE(ACL_ERROR_RT_NO_DEVICE, 207004);
CHECK_VALUE(ACL_ERROR_RT_NO_EVENT_RESOURCE, 207007);
CHECK_VALUE(ACL_ERROR_RT_NO_MODEL_RESOURCE, 207010);
CHECK_VALUE(ACL_ERROR_RT_NO_NOTIFY_RESOURCE, 207009);
CHECK_VALUE(ACL_ERROR_RT_NO_PERMISSION, 207006);
CHECK_VALUE(ACL_ERROR_RT_NO_STREAM_RESOURCE, 207008);
CHECK_VALUE(ACL_ERROR_RT_OVER_FLOW, 207017);
CHECK_VALUE(ACL_ERROR_RT_OVER_LIMIT, 207012);
CHECK_VALUE(ACL_ERROR_RT_PARAM_INVALID, 107000);
CHECK_VALUE(ACL_ERROR_RT_PROFILING_ERROR, 507021);
CHECK_VALUE(ACL_ERROR_RT_PROGRAM_USE_OUT, 507032);
CHECK_VALUE(ACL_ERROR_RT_QUEUE_EMPTY, 207013);
CHECK_VALUE(ACL_ERROR_RT_QUEUE_FULL, 207014);
CHECK_VALUE(ACL_ERROR_RT_REPEATED_INIT, 207015);
CHECK_VALUE(ACL_ERROR_RT_REPORT_TIMEOUT, 507012);
CHECK_VALUE(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, 207005);
CHECK_VALUE(ACL_ERROR_RT_RINGBUFFER_NOT_INIT, 507025);
CHECK_VALUE(ACL_ERROR_RT_RINGBUFFER_NO_DATA, 507026);
CHECK_VALUE(ACL_ERROR_RT_SEND_MSG, 507051);
CHECK_VALUE(ACL_ERROR_RT_SOCKET_CLOSE, 507901);
CHECK_VALUE(ACL_ERROR_RT_SOC_VERSION, 507008);
CHECK_VALUE(ACL_ERROR_RT_STREAM_ABORT, 107023);
CHECK_VALUE(ACL_ERROR_RT_STREAM_CAPTURED, 107027);
CHECK_VALUE(ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, 107031);
CHECK_VALUE(ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED, 507903);
CHECK_VALUE(ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED, 107036);
CHECK_VALUE(ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, 107038);
CHECK_VALUE(ACL_ERROR_RT_STREAM_CONTEXT, 107003);
CHECK_VALUE(ACL_ERROR_RT_STREAM_MODEL, 107005);
CHECK_VALUE(ACL_ERROR_RT_STREAM_NOT_CAPTURED, 107029);
CHECK_VALUE(ACL_ERROR_RT_STREAM_NOT_COMPLETE, 507004);
CHECK_VALUE(ACL_ERROR_RT_STREAM_NO_CB_REG, 107015);
CHECK_VALUE(ACL_ERROR_RT_STREAM_SUBSCRIBE, 107011);
CHECK_VALUE(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, 507046);
CHECK_VALUE(ACL_ERROR_RT_STREAM_TASK_EMPTY, 507003);
CHECK_VALUE(ACL_ERROR_RT_STREAM_TASK_FULL, 507002);
CHECK_VALUE(ACL_ERROR_RT_STREAM_UNJOINED, 107025);
CHECK_VALUE(ACL_ERROR_RT_SUSPECT_DEVICE_MEM_ERROR, 507055);
CHECK_VALUE(ACL_ERROR_RT_SUSPECT_REMOTE_ERROR, 507057);
CHECK_VALUE(ACL_ERROR_RT_SYMBOL_NOT_FOUND, 507915);
CHECK_VALUE(ACL_ERROR_RT_SYSPARAMOPT_NOT_SET, 107021);
CHECK_VALUE(ACL_ERROR_RT_SYS_DMA, 507013);
CHECK_VALUE(ACL_ERROR_RT_TASK_ABORT_STOP, 107035);
CHECK_VALUE(ACL_ERROR_RT_TASK_TIMEOUT, 107020);
CHECK_VALUE(ACL_ERROR_RT_TASK_TYPE_NOT_SUPPORT, 507009);
CHECK_VALUE(ACL_ERROR_RT_THREAD_SUBSCRIBE, 107012);
CHECK_VALUE(ACL_ERROR_RT_TIMEOUT, 207020);
CHECK_VALUE(ACL_ERROR_RT_TS_ERROR, 507001);
CHECK_VALUE(ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, 507035);
CHECK_VALUE(ACL_ERROR_RT_VECTOR_CORE_TIMEOUT, 507034);
CHECK_VALUE(ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION, 507036);
CHECK_VALUE(ACL_ERROR_RT_VECTOR_CORE_TRAP_READ_OVERFLOW, 507044);
CHECK_VALUE(ACL_ERROR_RT_VECTOR_CORE_TRAP_WRITE_OVERFLOW, 507045);
CHECK_VALUE(ACL_ERROR_RT_WAIT_TIMEOUT, 107019);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_BACKUP_FAILED, 507908);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_CALLBACK_FAILED, 507912);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_LOCK_FAILED, 507906);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_LOCK_TIMEOUT, 507905);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_REGISTER_CALLBACK_FAILED, 507913);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_RESTORE_FAILED, 507909);
CHECK_VALUE(ACL_ERROR_SNAPSHOT_UNLOCK_FAILED, 507907);
CHECK_VALUE(ACL_ERROR_STREAM_CAPTURE_CONFLICT, 107032);
CHECK_VALUE(ACL_ERROR_STREAM_TASK_GROUP_INTR, 107034);
CHECK_VALUE(ACL_ERROR_STREAM_TASK_GROUP_STATUS, 107033);
CHECK_VALUE(ACL_EVENT_CAPTURE_STREAM_PROGRESS, 0x00000002U);
CHECK_VALUE(ACL_EVENT_DEVICE_USE_ONLY, 0x00000010U);
CHECK_VALUE(ACL_EVENT_EXTERNAL, 0x00000020U);
CHECK_VALUE(ACL_EVENT_IPC, 0x00000040U);
CHECK_VALUE(ACL_EVENT_RECORD_DEFAULT, 0x0U);
CHECK_VALUE(ACL_EVENT_RECORD_EXTERNAL, 0x01U);
CHECK_VALUE(ACL_EVENT_SYNC, 0x00000001U);
CHECK_VALUE(ACL_EVENT_TIME_LINE, 0x00000008U);
CHECK_VALUE(ACL_EVENT_WAIT_DEFAULT, 0x0U);
CHECK_VALUE(ACL_EVENT_WAIT_EXTERNAL, 0x01U);
CHECK_VALUE(ACL_HOST_DEVICE_CONNECT_TYPE_HCCS, 1);
CHECK_VALUE(ACL_HOST_DEVICE_CONNECT_TYPE_PCIE, 0);
CHECK_VALUE(ACL_HOST_DEVICE_CONNECT_TYPE_UB, 2);
CHECK_VALUE(ACL_HOST_REG_IOMEMORY, 0x4UL);
CHECK_VALUE(ACL_HOST_REG_MAPPED, 0x2UL);
CHECK_VALUE(ACL_HOST_REG_PINNED, 0x10000000UL);
CHECK_VALUE(ACL_HOST_REG_READONLY, 0x8UL);
CHECK_VALUE(ACL_IPC_EVENT_HANDLE_SIZE, 64U);
CHECK_VALUE(ACL_IPC_HANDLE_SIZE, 65);
CHECK_VALUE(ACL_MAJOR_VERSION, 1);
CHECK_VALUE(ACL_MDLRI_DEBUG_JSON_PRINT_SUMMARY, 0x0UL);
CHECK_VALUE(ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE, 0x1UL);
CHECK_VALUE(ACL_MINOR_VERSION, 17);
CHECK_VALUE(ACL_NOTIFY_DEFAULT, 0x00000000U);
CHECK_VALUE(ACL_NOTIFY_DEVICE_USE_ONLY, 0x00000001U);
CHECK_VALUE(ACL_PATCH_VERSION, 0);
CHECK_VALUE(ACL_PKG_VERSION_MAX_SIZE, 128);
CHECK_VALUE(ACL_PKG_VERSION_PARTS_MAX_SIZE, 64);
CHECK_VALUE(ACL_RT_BINARY_MAGIC_ELF_AICORE, 0x43554245U);
CHECK_VALUE(ACL_RT_BINARY_MAGIC_ELF_CUBE_CORE, 0x41494343U);
CHECK_VALUE(ACL_RT_BINARY_MAGIC_ELF_VECTOR_CORE, 0x41415246U);
CHECK_VALUE(ACL_RT_CMO_MAX_BARRIER_NUM, 6U);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_HCCS, 0x01ULL);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_HCCS_SW, 0x40ULL);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_PHB, 0x08ULL);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_PIB, 0x04ULL);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_PIX, 0x02ULL);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_SIO, 0x20ULL);
CHECK_VALUE(ACL_RT_DEVS_TOPOLOGY_SYS, 0x10ULL);
CHECK_VALUE(ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_HCCS, 1);
CHECK_VALUE(ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_SIO, 0);
CHECK_VALUE(ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_MULTI_PORT_PATH, 3);
CHECK_VALUE(ACL_RT_IPC_MEM_ATTR_ACCESS_LINK_UB_ONE_PORT_PATH, 2);
CHECK_VALUE(ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT, 0x0UL);
CHECK_VALUE(ACL_RT_IPC_MEM_EXPORT_FLAG_DISABLE_PID_VALIDATION, 0x1UL);
CHECK_VALUE(ACL_RT_IPC_MEM_IMPORT_FLAG_DEFAULT, 0x0UL);
CHECK_VALUE(ACL_RT_IPC_MEM_IMPORT_FLAG_ENABLE_PEER_ACCESS, 0x1UL);
CHECK_VALUE(ACL_RT_MAX_RECORD_PA_NUM_PER_DEV, 20U);
CHECK_VALUE(ACL_RT_MEM_ATTACH_GLOBAL, 0x01U);
CHECK_VALUE(ACL_RT_MEM_LINK_IDX_0, 0U);
CHECK_VALUE(ACL_RT_MEM_LINK_IDX_1, 1U);
CHECK_VALUE(ACL_RT_MEM_TYPE_DEV, 0X2U);
CHECK_VALUE(ACL_RT_MEM_TYPE_DVPP, 0X8U);
CHECK_VALUE(ACL_RT_MEM_TYPE_RSVD, 0X10U);
CHECK_VALUE(ACL_RT_MEM_UCE_INFO_MAX_NUM, 20);
CHECK_VALUE(ACL_RT_NOTIFY_EXPORT_FLAG_DEFAULT, 0x0UL);
CHECK_VALUE(ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION, 0x02UL);
CHECK_VALUE(ACL_RT_NOTIFY_IMPORT_FLAG_DEFAULT, 0x0UL);
CHECK_VALUE(ACL_RT_NOTIFY_IMPORT_FLAG_ENABLE_PEER_ACCESS, 0x02UL);
CHECK_VALUE(ACL_RT_SUCCESS, 0);
CHECK_VALUE(ACL_RT_VMM_EXPORT_FLAG_DEFAULT, 0x0UL);
CHECK_VALUE(ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, 0x1UL);
CHECK_VALUE(ACL_STOP_ON_FAILURE, 0x00000001U);
CHECK_VALUE(ACL_STREAM_CPU_SCHEDULE, 0x00000010U);
CHECK_VALUE(ACL_STREAM_DEVICE_USE_ONLY, 0x00000020U);
CHECK_VALUE(ACL_STREAM_FAST_LAUNCH, 0x00000001U);
CHECK_VALUE(ACL_STREAM_FAST_SYNC, 0x00000002U);
CHECK_VALUE(ACL_STREAM_HUGE, 0x00000008U);
CHECK_VALUE(ACL_STREAM_PERSISTENT, 0x00000004U);
CHECK_VALUE(ACL_STREAM_WAIT_VALUE_AND, 0x00000002U);
CHECK_VALUE(ACL_STREAM_WAIT_VALUE_EQ, 0x00000001U);
CHECK_VALUE(ACL_STREAM_WAIT_VALUE_GEQ, 0x00000000U);
CHECK_VALUE(ACL_STREAM_WAIT_VALUE_NOR, 0x00000003U);
CHECK_VALUE(ACL_TENSOR_SHAPE_RANGE_NUM, 2);
CHECK_VALUE(ACL_TENSOR_VALUE_RANGE_NUM, 2);
CHECK_VALUE(ACL_UNKNOWN_RANK, 0xFFFFFFFFFFFFFFFE);
CHECK_VALUE(MAX_MEM_UCE_INFO_ARRAY_SIZE, 128);
CHECK_VALUE(UCE_INFO_RESERVED_SIZE, 14);

/* ---- static const error numbers (acl_base_rt.h: int; ge_error_codes.h: uint32_t) ------------------- */

CHECK_CONST(ACL_ERROR_INVALID_EXCEPTION_INFO, int);
CHECK_CONST(ACL_ERROR_NONE, int);
CHECK_CONST(ACL_SUCCESS, int);
CHECK_CONST(ACL_ERROR_INVALID_PARAM, int);
CHECK_CONST(ACL_ERROR_UNINITIALIZE, int);
CHECK_CONST(ACL_ERROR_REPEAT_INITIALIZE, int);
CHECK_CONST(ACL_ERROR_INVALID_FILE, int);
CHECK_CONST(ACL_ERROR_WRITE_FILE, int);
CHECK_CONST(ACL_ERROR_INVALID_FILE_SIZE, int);
CHECK_CONST(ACL_ERROR_PARSE_FILE, int);
CHECK_CONST(ACL_ERROR_FILE_MISSING_ATTR, int);
CHECK_CONST(ACL_ERROR_FILE_ATTR_INVALID, int);
CHECK_CONST(ACL_ERROR_INVALID_DUMP_CONFIG, int);
CHECK_CONST(ACL_ERROR_INVALID_PROFILING_CONFIG, int);
CHECK_CONST(ACL_ERROR_INVALID_MODEL_ID, int);
CHECK_CONST(ACL_ERROR_DESERIALIZE_MODEL, int);
CHECK_CONST(ACL_ERROR_PARSE_MODEL, int);
CHECK_CONST(ACL_ERROR_READ_MODEL_FAILURE, int);
CHECK_CONST(ACL_ERROR_MODEL_SIZE_INVALID, int);
CHECK_CONST(ACL_ERROR_MODEL_MISSING_ATTR, int);
CHECK_CONST(ACL_ERROR_MODEL_INPUT_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_MODEL_OUTPUT_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_MODEL_NOT_DYNAMIC, int);
CHECK_CONST(ACL_ERROR_OP_TYPE_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_OP_INPUT_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_OP_OUTPUT_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_OP_ATTR_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_OP_NOT_FOUND, int);
CHECK_CONST(ACL_ERROR_OP_LOAD_FAILED, int);
CHECK_CONST(ACL_ERROR_UNSUPPORTED_DATA_TYPE, int);
CHECK_CONST(ACL_ERROR_FORMAT_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED, int);
CHECK_CONST(ACL_ERROR_KERNEL_NOT_FOUND, int);
CHECK_CONST(ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED, int);
CHECK_CONST(ACL_ERROR_KERNEL_ALREADY_REGISTERED, int);
CHECK_CONST(ACL_ERROR_INVALID_QUEUE_ID, int);
CHECK_CONST(ACL_ERROR_REPEAT_SUBSCRIBE, int);
CHECK_CONST(ACL_ERROR_STREAM_NOT_SUBSCRIBE, int);
CHECK_CONST(ACL_ERROR_THREAD_NOT_SUBSCRIBE, int);
CHECK_CONST(ACL_ERROR_WAIT_CALLBACK_TIMEOUT, int);
CHECK_CONST(ACL_ERROR_REPEAT_FINALIZE, int);
CHECK_CONST(ACL_ERROR_NOT_STATIC_AIPP, int);
CHECK_CONST(ACL_ERROR_COMPILING_STUB_MODE, int);
CHECK_CONST(ACL_ERROR_GROUP_NOT_SET, int);
CHECK_CONST(ACL_ERROR_GROUP_NOT_CREATE, int);
CHECK_CONST(ACL_ERROR_PROF_ALREADY_RUN, int);
CHECK_CONST(ACL_ERROR_PROF_NOT_RUN, int);
CHECK_CONST(ACL_ERROR_DUMP_ALREADY_RUN, int);
CHECK_CONST(ACL_ERROR_DUMP_NOT_RUN, int);
CHECK_CONST(ACL_ERROR_PROF_REPEAT_SUBSCRIBE, int);
CHECK_CONST(ACL_ERROR_PROF_API_CONFLICT, int);
CHECK_CONST(ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG, int);
CHECK_CONST(ACL_ERROR_INVALID_OPP_PATH, int);
CHECK_CONST(ACL_ERROR_OP_UNSUPPORTED_DYNAMIC, int);
CHECK_CONST(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED, int);
CHECK_CONST(ACL_ERROR_UNSUPPORTED_JPEG, int);
CHECK_CONST(ACL_ERROR_INVALID_BUNDLE_MODEL_ID, int);
CHECK_CONST(ACL_ERROR_BAD_ALLOC, int);
CHECK_CONST(ACL_ERROR_API_NOT_SUPPORT, int);
CHECK_CONST(ACL_ERROR_INVALID_DEVICE, int);
CHECK_CONST(ACL_ERROR_MEMORY_ADDRESS_UNALIGNED, int);
CHECK_CONST(ACL_ERROR_RESOURCE_NOT_MATCH, int);
CHECK_CONST(ACL_ERROR_INVALID_RESOURCE_HANDLE, int);
CHECK_CONST(ACL_ERROR_FEATURE_UNSUPPORTED, int);
CHECK_CONST(ACL_ERROR_PROF_MODULES_UNSUPPORTED, int);
CHECK_CONST(ACL_ERROR_STORAGE_OVER_LIMIT, int);
CHECK_CONST(ACL_ERROR_INTERNAL_ERROR, int);
CHECK_CONST(ACL_ERROR_FAILURE, int);
CHECK_CONST(ACL_ERROR_GE_FAILURE, int);
CHECK_CONST(ACL_ERROR_RT_FAILURE, int);
CHECK_CONST(ACL_ERROR_DRV_FAILURE, int);
CHECK_CONST(ACL_ERROR_PROFILING_FAILURE, int);
CHECK_CONST(ACL_ERROR_GE_PARAM_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_NOT_INIT, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_MODEL_QUEUE_ID_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED, uint32_t);
CHECK_CONST(ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_AIPP_BATCH_EMPTY, uint32_t);
CHECK_CONST(ACL_ERROR_GE_AIPP_NOT_EXIST, uint32_t);
CHECK_CONST(ACL_ERROR_GE_AIPP_MODE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_OP_TASK_TYPE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_OP_KERNEL_TYPE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_PLGMGR_PATH_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_FORMAT_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_SHAPE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_DATATYPE_INVALID, uint32_t);
CHECK_CONST(ACL_ERROR_GE_MEMORY_ALLOCATION, uint32_t);
CHECK_CONST(ACL_ERROR_GE_MEMORY_OPERATE_FAILED, uint32_t);
CHECK_CONST(ACL_ERROR_GE_INTERNAL_ERROR, uint32_t);
CHECK_CONST(ACL_ERROR_GE_LOAD_MODEL, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_LOAD_TASK_PARTITION_FAILED, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_LOAD_KERNEL_PARTITION_FAILED, uint32_t);
CHECK_CONST(ACL_ERROR_GE_EXEC_RELEASE_MODEL_DATA, uint32_t);
CHECK_CONST(ACL_ERROR_GE_COMMAND_HANDLE, uint32_t);
CHECK_CONST(ACL_ERROR_GE_GET_TENSOR_INFO, uint32_t);
CHECK_CONST(ACL_ERROR_GE_UNLOAD_MODEL, uint32_t);

/* ---- LP64 layouts that follow from the declarations ----------------------------------------------- */

#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
CHECK_SIZE(dim3, 12);
CHECK_OFFSET(dim3, x, 0);
CHECK_OFFSET(dim3, y, 4);
CHECK_OFFSET(dim3, z, 8);
CHECK_SIZE(aclrtPlaceHolderInfo, 8);
CHECK_OFFSET(aclrtPlaceHolderInfo, addrOffset, 0);
CHECK_OFFSET(aclrtPlaceHolderInfo, dataOffset, 4);
CHECK_SIZE(aclrtBinaryLoadOption, 20);
CHECK_OFFSET(aclrtBinaryLoadOption, type, 0);
CHECK_OFFSET(aclrtBinaryLoadOption, value, 4);
CHECK_SIZE(aclrtBinaryLoadOptions, 16);
CHECK_OFFSET(aclrtBinaryLoadOptions, options, 0);
CHECK_OFFSET(aclrtBinaryLoadOptions, numOpt, 8);
CHECK_SIZE(aclrtLaunchKernelAttrValue, 16);
CHECK_SIZE(aclrtLaunchKernelAttr, 20);
CHECK_OFFSET(aclrtLaunchKernelAttr, id, 0);
CHECK_OFFSET(aclrtLaunchKernelAttr, value, 4);
CHECK_SIZE(aclrtLaunchKernelCfg, 16);
CHECK_OFFSET(aclrtLaunchKernelCfg, attrs, 0);
CHECK_OFFSET(aclrtLaunchKernelCfg, numAttrs, 8);
CHECK_SIZE(aclrtMallocConfig, 16);
CHECK_OFFSET(aclrtMallocConfig, attrs, 0);
CHECK_OFFSET(aclrtMallocConfig, numAttrs, 8);
CHECK_SIZE(aclrtMallocAttribute, 12);
CHECK_OFFSET(aclrtMallocAttribute, attr, 0);
CHECK_OFFSET(aclrtMallocAttribute, value, 4);
CHECK_SIZE(aclrtMemLocation, 8);
CHECK_OFFSET(aclrtMemLocation, id, 0);
CHECK_OFFSET(aclrtMemLocation, type, 4);
CHECK_SIZE(aclrtPhysicalMemProp, 32);
CHECK_OFFSET(aclrtPhysicalMemProp, handleType, 0);
CHECK_OFFSET(aclrtPhysicalMemProp, allocationType, 4);
CHECK_OFFSET(aclrtPhysicalMemProp, memAttr, 8);
CHECK_OFFSET(aclrtPhysicalMemProp, location, 12);
CHECK_OFFSET(aclrtPhysicalMemProp, reserve, 24);
CHECK_SIZE(aclrtPtrAttributes, 28);
CHECK_OFFSET(aclrtPtrAttributes, location, 0);
CHECK_OFFSET(aclrtPtrAttributes, pageSize, 8);
CHECK_OFFSET(aclrtPtrAttributes, rsv, 12);
CHECK_SIZE(aclrtStreamConfigHandle, 32);
CHECK_OFFSET(aclrtStreamConfigHandle, workptr, 0);
CHECK_OFFSET(aclrtStreamConfigHandle, workSize, 8);
CHECK_OFFSET(aclrtStreamConfigHandle, flag, 16);
CHECK_OFFSET(aclrtStreamConfigHandle, priority, 24);
CHECK_SIZE(aclrtUtilizationInfo, 24);
CHECK_OFFSET(aclrtUtilizationInfo, memoryUtilization, 12);
CHECK_OFFSET(aclrtUtilizationInfo, utilizationExtend, 16);
CHECK_SIZE(aclrtMemUsageInfo, 112);
CHECK_OFFSET(aclrtMemUsageInfo, curMemSize, 32);
CHECK_OFFSET(aclrtMemUsageInfo, memPeakSize, 40);
CHECK_OFFSET(aclrtMemUsageInfo, reserved, 48);
CHECK_SIZE(aclrtMemUceInfo, 128);
CHECK_OFFSET(aclrtMemUceInfo, addr, 0);
CHECK_OFFSET(aclrtMemUceInfo, len, 8);
CHECK_OFFSET(aclrtMemUceInfo, reserved, 16);
CHECK_SIZE(aclrtErrorInfo, 2576);
CHECK_OFFSET(aclrtErrorInfo, tryRepair, 0);
CHECK_OFFSET(aclrtErrorInfo, hasDetail, 1);
CHECK_OFFSET(aclrtErrorInfo, errorType, 4);
CHECK_OFFSET(aclrtErrorInfo, detail, 8);
CHECK_SIZE(aclrtStreamAttrValue, 16);
CHECK_SIZE(aclmdlRIKernelTaskParams, 88);
CHECK_OFFSET(aclmdlRIKernelTaskParams, funcHandle, 0);
CHECK_OFFSET(aclmdlRIKernelTaskParams, cfg, 8);
CHECK_OFFSET(aclmdlRIKernelTaskParams, args, 16);
CHECK_OFFSET(aclmdlRIKernelTaskParams, isHostArgs, 24);
CHECK_OFFSET(aclmdlRIKernelTaskParams, argsSize, 32);
CHECK_OFFSET(aclmdlRIKernelTaskParams, numBlocks, 40);
CHECK_OFFSET(aclmdlRIKernelTaskParams, rsv, 44);
CHECK_SIZE(aclmdlRITaskParams, 200);
CHECK_OFFSET(aclmdlRITaskParams, type, 0);
CHECK_OFFSET(aclmdlRITaskParams, taskGrp, 16);
CHECK_OFFSET(aclmdlRITaskParams, opInfoPtr, 24);
CHECK_OFFSET(aclmdlRITaskParams, opInfoSize, 32);
CHECK_OFFSET(aclmdlRITaskParams, rsv1, 40);
CHECK_OFFSET(aclmdlRITaskParams, kernelTaskParams, 72);
CHECK_OFFSET(aclmdlRITaskParams, rsv2, 72);
CHECK_SIZE(aclrtUuid, 16);
CHECK_SIZE(aclrtIpcEventHandle, 64);
CHECK_SIZE(aclrtMemFabricHandle, 128);
CHECK_SIZE(aclCANNPackageVersion, 512);
CHECK_OFFSET(aclCANNPackageVersion, version, 0);
CHECK_OFFSET(aclCANNPackageVersion, majorVersion, 128);
CHECK_OFFSET(aclCANNPackageVersion, reserved, 384);
#endif

/* ACL_APP_LOG expands to a call of aclAppLog with the call site; sizeof keeps it unevaluated. */
static size_t app_log_size(void) { return sizeof((ACL_APP_LOG(ACL_INFO, "%d", 1), 0)); }

int main(void) {
  /* static const objects are not constant expressions in C: compare their values at run time. */
  const struct {
    const char *name;
    long long got, want;
  } consts[] = {
      {"ACL_ERROR_INVALID_EXCEPTION_INFO", ACL_ERROR_INVALID_EXCEPTION_INFO, -1},
      {"ACL_ERROR_NONE", ACL_ERROR_NONE, 0},
      {"ACL_SUCCESS", ACL_SUCCESS, 0},
      {"ACL_ERROR_INVALID_PARAM", ACL_ERROR_INVALID_PARAM, 100000},
      {"ACL_ERROR_UNINITIALIZE", ACL_ERROR_UNINITIALIZE, 100001},
      {"ACL_ERROR_REPEAT_INITIALIZE", ACL_ERROR_REPEAT_INITIALIZE, 100002},
      {"ACL_ERROR_INVALID_FILE", ACL_ERROR_INVALID_FILE, 100003},
      {"ACL_ERROR_WRITE_FILE", ACL_ERROR_WRITE_FILE, 100004},
      {"ACL_ERROR_INVALID_FILE_SIZE", ACL_ERROR_INVALID_FILE_SIZE, 100005},
      {"ACL_ERROR_PARSE_FILE", ACL_ERROR_PARSE_FILE, 100006},
      {"ACL_ERROR_FILE_MISSING_ATTR", ACL_ERROR_FILE_MISSING_ATTR, 100007},
      {"ACL_ERROR_FILE_ATTR_INVALID", ACL_ERROR_FILE_ATTR_INVALID, 100008},
      {"ACL_ERROR_INVALID_DUMP_CONFIG", ACL_ERROR_INVALID_DUMP_CONFIG, 100009},
      {"ACL_ERROR_INVALID_PROFILING_CONFIG", ACL_ERROR_INVALID_PROFILING_CONFIG, 100010},
      {"ACL_ERROR_INVALID_MODEL_ID", ACL_ERROR_INVALID_MODEL_ID, 100011},
      {"ACL_ERROR_DESERIALIZE_MODEL", ACL_ERROR_DESERIALIZE_MODEL, 100012},
      {"ACL_ERROR_PARSE_MODEL", ACL_ERROR_PARSE_MODEL, 100013},
      {"ACL_ERROR_READ_MODEL_FAILURE", ACL_ERROR_READ_MODEL_FAILURE, 100014},
      {"ACL_ERROR_MODEL_SIZE_INVALID", ACL_ERROR_MODEL_SIZE_INVALID, 100015},
      {"ACL_ERROR_MODEL_MISSING_ATTR", ACL_ERROR_MODEL_MISSING_ATTR, 100016},
      {"ACL_ERROR_MODEL_INPUT_NOT_MATCH", ACL_ERROR_MODEL_INPUT_NOT_MATCH, 100017},
      {"ACL_ERROR_MODEL_OUTPUT_NOT_MATCH", ACL_ERROR_MODEL_OUTPUT_NOT_MATCH, 100018},
      {"ACL_ERROR_MODEL_NOT_DYNAMIC", ACL_ERROR_MODEL_NOT_DYNAMIC, 100019},
      {"ACL_ERROR_OP_TYPE_NOT_MATCH", ACL_ERROR_OP_TYPE_NOT_MATCH, 100020},
      {"ACL_ERROR_OP_INPUT_NOT_MATCH", ACL_ERROR_OP_INPUT_NOT_MATCH, 100021},
      {"ACL_ERROR_OP_OUTPUT_NOT_MATCH", ACL_ERROR_OP_OUTPUT_NOT_MATCH, 100022},
      {"ACL_ERROR_OP_ATTR_NOT_MATCH", ACL_ERROR_OP_ATTR_NOT_MATCH, 100023},
      {"ACL_ERROR_OP_NOT_FOUND", ACL_ERROR_OP_NOT_FOUND, 100024},
      {"ACL_ERROR_OP_LOAD_FAILED", ACL_ERROR_OP_LOAD_FAILED, 100025},
      {"ACL_ERROR_UNSUPPORTED_DATA_TYPE", ACL_ERROR_UNSUPPORTED_DATA_TYPE, 100026},
      {"ACL_ERROR_FORMAT_NOT_MATCH", ACL_ERROR_FORMAT_NOT_MATCH, 100027},
      {"ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED", ACL_ERROR_BIN_SELECTOR_NOT_REGISTERED, 100028},
      {"ACL_ERROR_KERNEL_NOT_FOUND", ACL_ERROR_KERNEL_NOT_FOUND, 100029},
      {"ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED", ACL_ERROR_BIN_SELECTOR_ALREADY_REGISTERED, 100030},
      {"ACL_ERROR_KERNEL_ALREADY_REGISTERED", ACL_ERROR_KERNEL_ALREADY_REGISTERED, 100031},
      {"ACL_ERROR_INVALID_QUEUE_ID", ACL_ERROR_INVALID_QUEUE_ID, 100032},
      {"ACL_ERROR_REPEAT_SUBSCRIBE", ACL_ERROR_REPEAT_SUBSCRIBE, 100033},
      {"ACL_ERROR_STREAM_NOT_SUBSCRIBE", ACL_ERROR_STREAM_NOT_SUBSCRIBE, 100034},
      {"ACL_ERROR_THREAD_NOT_SUBSCRIBE", ACL_ERROR_THREAD_NOT_SUBSCRIBE, 100035},
      {"ACL_ERROR_WAIT_CALLBACK_TIMEOUT", ACL_ERROR_WAIT_CALLBACK_TIMEOUT, 100036},
      {"ACL_ERROR_REPEAT_FINALIZE", ACL_ERROR_REPEAT_FINALIZE, 100037},
      {"ACL_ERROR_NOT_STATIC_AIPP", ACL_ERROR_NOT_STATIC_AIPP, 100038},
      {"ACL_ERROR_COMPILING_STUB_MODE", ACL_ERROR_COMPILING_STUB_MODE, 100039},
      {"ACL_ERROR_GROUP_NOT_SET", ACL_ERROR_GROUP_NOT_SET, 100040},
      {"ACL_ERROR_GROUP_NOT_CREATE", ACL_ERROR_GROUP_NOT_CREATE, 100041},
      {"ACL_ERROR_PROF_ALREADY_RUN", ACL_ERROR_PROF_ALREADY_RUN, 100042},
      {"ACL_ERROR_PROF_NOT_RUN", ACL_ERROR_PROF_NOT_RUN, 100043},
      {"ACL_ERROR_DUMP_ALREADY_RUN", ACL_ERROR_DUMP_ALREADY_RUN, 100044},
      {"ACL_ERROR_DUMP_NOT_RUN", ACL_ERROR_DUMP_NOT_RUN, 100045},
      {"ACL_ERROR_PROF_REPEAT_SUBSCRIBE", ACL_ERROR_PROF_REPEAT_SUBSCRIBE, 148046},
      {"ACL_ERROR_PROF_API_CONFLICT", ACL_ERROR_PROF_API_CONFLICT, 148047},
      {"ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG", ACL_ERROR_INVALID_MAX_OPQUEUE_NUM_CONFIG, 148048},
      {"ACL_ERROR_INVALID_OPP_PATH", ACL_ERROR_INVALID_OPP_PATH, 148049},
      {"ACL_ERROR_OP_UNSUPPORTED_DYNAMIC", ACL_ERROR_OP_UNSUPPORTED_DYNAMIC, 148050},
      {"ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED", ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED, 148051},
      {"ACL_ERROR_UNSUPPORTED_JPEG", ACL_ERROR_UNSUPPORTED_JPEG, 148052},
      {"ACL_ERROR_INVALID_BUNDLE_MODEL_ID", ACL_ERROR_INVALID_BUNDLE_MODEL_ID, 148053},
      {"ACL_ERROR_BAD_ALLOC", ACL_ERROR_BAD_ALLOC, 200000},
      {"ACL_ERROR_API_NOT_SUPPORT", ACL_ERROR_API_NOT_SUPPORT, 200001},
      {"ACL_ERROR_INVALID_DEVICE", ACL_ERROR_INVALID_DEVICE, 200002},
      {"ACL_ERROR_MEMORY_ADDRESS_UNALIGNED", ACL_ERROR_MEMORY_ADDRESS_UNALIGNED, 200003},
      {"ACL_ERROR_RESOURCE_NOT_MATCH", ACL_ERROR_RESOURCE_NOT_MATCH, 200004},
      {"ACL_ERROR_INVALID_RESOURCE_HANDLE", ACL_ERROR_INVALID_RESOURCE_HANDLE, 200005},
      {"ACL_ERROR_FEATURE_UNSUPPORTED", ACL_ERROR_FEATURE_UNSUPPORTED, 200006},
      {"ACL_ERROR_PROF_MODULES_UNSUPPORTED", ACL_ERROR_PROF_MODULES_UNSUPPORTED, 200007},
      {"ACL_ERROR_STORAGE_OVER_LIMIT", ACL_ERROR_STORAGE_OVER_LIMIT, 300000},
      {"ACL_ERROR_INTERNAL_ERROR", ACL_ERROR_INTERNAL_ERROR, 500000},
      {"ACL_ERROR_FAILURE", ACL_ERROR_FAILURE, 500001},
      {"ACL_ERROR_GE_FAILURE", ACL_ERROR_GE_FAILURE, 500002},
      {"ACL_ERROR_RT_FAILURE", ACL_ERROR_RT_FAILURE, 500003},
      {"ACL_ERROR_DRV_FAILURE", ACL_ERROR_DRV_FAILURE, 500004},
      {"ACL_ERROR_PROFILING_FAILURE", ACL_ERROR_PROFILING_FAILURE, 500005},
      {"ACL_ERROR_GE_PARAM_INVALID", ACL_ERROR_GE_PARAM_INVALID, 145000},
      {"ACL_ERROR_GE_EXEC_NOT_INIT", ACL_ERROR_GE_EXEC_NOT_INIT, 145001},
      {"ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID", ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, 145002},
      {"ACL_ERROR_GE_EXEC_MODEL_ID_INVALID", ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, 145003},
      {"ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID", ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, 145006},
      {"ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID", ACL_ERROR_GE_EXEC_MODEL_ADDR_INVALID, 145007},
      {"ACL_ERROR_GE_EXEC_MODEL_QUEUE_ID_INVALID", ACL_ERROR_GE_EXEC_MODEL_QUEUE_ID_INVALID, 145008},
      {"ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED", ACL_ERROR_GE_EXEC_LOAD_MODEL_REPEATED, 145009},
      {"ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID", ACL_ERROR_GE_DYNAMIC_INPUT_ADDR_INVALID, 145011},
      {"ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID", ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, 145012},
      {"ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID", ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID, 145013},
      {"ACL_ERROR_GE_AIPP_BATCH_EMPTY", ACL_ERROR_GE_AIPP_BATCH_EMPTY, 145014},
      {"ACL_ERROR_GE_AIPP_NOT_EXIST", ACL_ERROR_GE_AIPP_NOT_EXIST, 145015},
      {"ACL_ERROR_GE_AIPP_MODE_INVALID", ACL_ERROR_GE_AIPP_MODE_INVALID, 145016},
      {"ACL_ERROR_GE_OP_TASK_TYPE_INVALID", ACL_ERROR_GE_OP_TASK_TYPE_INVALID, 145017},
      {"ACL_ERROR_GE_OP_KERNEL_TYPE_INVALID", ACL_ERROR_GE_OP_KERNEL_TYPE_INVALID, 145018},
      {"ACL_ERROR_GE_PLGMGR_PATH_INVALID", ACL_ERROR_GE_PLGMGR_PATH_INVALID, 145019},
      {"ACL_ERROR_GE_FORMAT_INVALID", ACL_ERROR_GE_FORMAT_INVALID, 145020},
      {"ACL_ERROR_GE_SHAPE_INVALID", ACL_ERROR_GE_SHAPE_INVALID, 145021},
      {"ACL_ERROR_GE_DATATYPE_INVALID", ACL_ERROR_GE_DATATYPE_INVALID, 145022},
      {"ACL_ERROR_GE_MEMORY_ALLOCATION", ACL_ERROR_GE_MEMORY_ALLOCATION, 245000},
      {"ACL_ERROR_GE_MEMORY_OPERATE_FAILED", ACL_ERROR_GE_MEMORY_OPERATE_FAILED, 245001},
      {"ACL_ERROR_GE_INTERNAL_ERROR", ACL_ERROR_GE_INTERNAL_ERROR, 545000},
      {"ACL_ERROR_GE_LOAD_MODEL", ACL_ERROR_GE_LOAD_MODEL, 545001},
      {"ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED", ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED, 545002},
      {"ACL_ERROR_GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED", ACL_ERROR_GE_EXEC_LOAD_WEIGHT_PARTITION_FAILED, 545003},
      {"ACL_ERROR_GE_EXEC_LOAD_TASK_PARTITION_FAILED", ACL_ERROR_GE_EXEC_LOAD_TASK_PARTITION_FAILED, 545004},
      {"ACL_ERROR_GE_EXEC_LOAD_KERNEL_PARTITION_FAILED", ACL_ERROR_GE_EXEC_LOAD_KERNEL_PARTITION_FAILED, 545005},
      {"ACL_ERROR_GE_EXEC_RELEASE_MODEL_DATA", ACL_ERROR_GE_EXEC_RELEASE_MODEL_DATA, 545006},
      {"ACL_ERROR_GE_COMMAND_HANDLE", ACL_ERROR_GE_COMMAND_HANDLE, 545007},
      {"ACL_ERROR_GE_GET_TENSOR_INFO", ACL_ERROR_GE_GET_TENSOR_INFO, 545008},
      {"ACL_ERROR_GE_UNLOAD_MODEL", ACL_ERROR_GE_UNLOAD_MODEL, 545009},
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof(consts) / sizeof(consts[0]); i++) {
    if (consts[i].got != consts[i].want) {
      fprintf(stderr, "%s is %lld, want %lld\n", consts[i].name, consts[i].got, consts[i].want);
      failures++;
    }
  }
  if (app_log_size() != sizeof(int)) failures++;
  return failures == 0 ? 0 : 1;
}
