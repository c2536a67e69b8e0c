/*
 * client/cann/acl/acl_info.c — the ACL calls that a host answers by itself:
 * fp16 conversion and element sizes, versions, the thread's last error
 * (and aclrtGetErrorVerbose over it), the SoC name, the device resources a
 * thread sees, and peer access between the session's devices (the server
 * copies between any two of them).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_lib.h"

/* ---- fp16 and element sizes ----------------------------------------------------- */

/* IEEE 754 binary16, rounded to nearest even; NaN stays NaN. */
aclFloat16 aclFloatToFloat16(float value) {
  uint32_t x;
  memcpy(&x, &value, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (exp == 0xff) return (aclFloat16)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf, NaN */
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (aclFloat16)(sign | 0x7c00u); /* too large: inf */
  if (e <= 0) {                                     /* subnormal or zero */
    if (e < -10) return sign;
    man |= 0x800000u;
    int shift = 14 - e; /* 24-bit mantissa to 10 bits at exponent 1 - e */
    uint32_t half = man >> shift, rest = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) half++;
    return (aclFloat16)(sign | half);
  }
  uint32_t half = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) half++; /* may carry into inf: right */
  return (aclFloat16)(sign | half);
}

float aclFloat16ToFloat(aclFloat16 value) {
  int sign = value & 0x8000 ? -1 : 1;
  int exp = (value >> 10) & 0x1f, man = value & 0x3ff;
  if (exp == 0x1f) return man ? NAN : (float)sign * INFINITY;
  if (exp == 0) return (float)sign * ldexpf((float)man, -24);
  return (float)sign * ldexpf((float)(man | 0x400), exp - 25);
}

/* Bytes per element; 0 for types without a whole-byte size (4-, 1- and
 * 6-bit types, strings) and unknown ones. */
size_t aclDataTypeSize(aclDataType dataType) {
  switch (dataType) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_HIFLOAT8:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0: return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16: return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32: return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
  }
}

/* ---- version, errors, device facts ---------------------------------------------- */

aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion) {
  if (!majorVersion || !minorVersion || !patchVersion) return acl_fail(ACL_ERROR_INVALID_PARAM, "NULL argument");
  *majorVersion = ACL_MAJOR_VERSION;
  *minorVersion = ACL_MINOR_VERSION;
  *patchVersion = ACL_PATCH_VERSION;
  return ACL_SUCCESS;
}

/* The one package rdev's library stands in for is the runtime, at the ACL
 * version; its number weighs the parts as CANN's do (major * 10000000 +
 * minor * 100000 + patch * 1000 for a release). */
static aclError check_pkg(const char *pkgName) {
  if (!pkgName) return acl_fail(ACL_ERROR_INVALID_PARAM, "pkgName is NULL");
  if (strcmp(pkgName, "runtime") != 0)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "no package \"%.64s\": rdev offers \"runtime\"", pkgName);
  return ACL_SUCCESS;
}

aclError aclsysGetVersionStr(char *pkgName, char *versionStr) {
  aclError rc = check_pkg(pkgName);
  if (rc) return rc;
  if (!versionStr) return acl_fail(ACL_ERROR_INVALID_PARAM, "versionStr is NULL");
  snprintf(versionStr, ACL_PKG_VERSION_MAX_SIZE, "%d.%d.%d", ACL_MAJOR_VERSION, ACL_MINOR_VERSION, ACL_PATCH_VERSION);
  return ACL_SUCCESS;
}

aclError aclsysGetVersionNum(char *pkgName, int32_t *versionNum) {
  aclError rc = check_pkg(pkgName);
  if (rc) return rc;
  if (!versionNum) return acl_fail(ACL_ERROR_INVALID_PARAM, "versionNum is NULL");
  *versionNum = ACL_MAJOR_VERSION * 10000000 + ACL_MINOR_VERSION * 100000 + ACL_PATCH_VERSION * 1000;
  return ACL_SUCCESS;
}

aclError aclrtPeekAtLastError(aclrtLastErrLevel level) {
  (void)level; /* one level: the thread's */
  return acl_last_error(0);
}

aclError aclrtGetLastError(aclrtLastErrLevel level) {
  (void)level;
  return acl_last_error(1);
}

/* The calling thread's device's name, or NULL. Valid until the thread's
 * next call of it. */
const char *aclrtGetSocName(void) {
  static _Thread_local char name[64];
  return acl_device_name(name, sizeof name) == ACL_SUCCESS ? name : NULL;
}

/* What the thread's last error says of device deviceId: a kernel fault is
 * an AI Core error (a software one: the sim's faults are the program's);
 * any other error, OTHERS; none, NO_ERROR. Nothing needs repair. */
aclError aclrtGetErrorVerbose(int32_t deviceId, aclrtErrorInfo *errorInfo) {
  if (!errorInfo) return acl_fail(ACL_ERROR_INVALID_PARAM, "errorInfo is NULL");
  aclError last = acl_last_error(0);
  int n = 0;
  aclError rc = acl_device_count(&n);
  if (rc) return rc;
  if (deviceId < 0 || deviceId >= n)
    return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d: this session has 0..%d", (int)deviceId, n - 1);
  memset(errorInfo, 0, sizeof *errorInfo);
  if (last == ACL_ERROR_RT_AICORE_EXCEPTION) {
    errorInfo->errorType = ACL_RT_ERROR_AICORE;
    errorInfo->hasDetail = 1;
    errorInfo->detail.aicoreErrType = ACL_RT_AICORE_ERROR_SW;
  } else {
    errorInfo->errorType = last ? ACL_RT_ERROR_OTHERS : ACL_RT_NO_ERROR;
  }
  return ACL_SUCCESS;
}

/* ---- device resources and attributes ---------------------------------------------- */

/* The sim runs each kernel on one worker: one core of either kind. A
 * process may limit what it uses (aclrtSetDeviceResLimit) within that. */
#define SIM_CORES 1
static uint32_t res_limit[64][2]; /* per device and type; 0 = the device's own (under the lock) */

static aclError check_device(int32_t deviceId) {
  int n = 0;
  aclError rc = acl_device_count(&n);
  if (rc) return rc;
  if (deviceId < 0 || deviceId >= n || deviceId >= 64)
    return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %d: this session has 0..%d", (int)deviceId, n - 1);
  return ACL_SUCCESS;
}

static aclError check_res(int32_t deviceId, aclrtDevResLimitType type) {
  if (type != ACL_RT_DEV_RES_CUBE_CORE && type != ACL_RT_DEV_RES_VECTOR_CORE)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "unknown resource type %d", (int)type);
  return check_device(deviceId);
}

static uint32_t limit_of(int dev, aclrtDevResLimitType type) {
  acl_lock();
  uint32_t v = res_limit[dev][type];
  acl_unlock();
  return v ? v : SIM_CORES;
}

aclError aclrtGetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t *value) {
  if (!value) return acl_fail(ACL_ERROR_INVALID_PARAM, "value is NULL");
  aclError rc = check_res(deviceId, type);
  if (!rc) *value = limit_of(deviceId, type);
  return rc;
}

aclError aclrtSetDeviceResLimit(int32_t deviceId, aclrtDevResLimitType type, uint32_t value) {
  aclError rc = check_res(deviceId, type);
  if (rc) return rc;
  if (value < 1 || value > SIM_CORES)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "%u cores: the device has %d", value, SIM_CORES);
  acl_lock();
  res_limit[deviceId][type] = value;
  acl_unlock();
  return ACL_SUCCESS;
}

aclError aclrtResetDeviceResLimit(int32_t deviceId) {
  aclError rc = check_device(deviceId);
  if (rc) return rc;
  acl_lock();
  res_limit[deviceId][0] = res_limit[deviceId][1] = 0;
  acl_unlock();
  return ACL_SUCCESS;
}

/* For every thread and stream, the device's limit (rdev sets none per
 * stream). */
aclError aclrtGetResInCurrentThread(aclrtDevResLimitType type, uint32_t *value) {
  if (!value) return acl_fail(ACL_ERROR_INVALID_PARAM, "value is NULL");
  if (type != ACL_RT_DEV_RES_CUBE_CORE && type != ACL_RT_DEV_RES_VECTOR_CORE)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "unknown resource type %d", (int)type);
  char name[64];
  aclError rc = acl_device_name(name, sizeof name); /* a device must be set */
  if (rc) return rc;
  int dev = acl_thread_device();
  *value = dev >= 0 && dev < 64 ? limit_of(dev, type) : SIM_CORES;
  return ACL_SUCCESS;
}

aclError aclrtQueryDeviceStatus(int32_t deviceId, aclrtDeviceStatus *deviceStatus) {
  if (!deviceStatus) return acl_fail(ACL_ERROR_INVALID_PARAM, "deviceStatus is NULL");
  aclError rc = check_device(deviceId);
  if (!rc) *deviceStatus = ACL_RT_DEVICE_STATUS_NORMAL; /* rdevd serves it */
  return rc;
}

/* Memory is measured (the share of the device's memory in use); rdevd does
 * not measure its cores' busy time, so those read 0. */
aclError aclrtGetDeviceUtilizationRate(int32_t deviceId, aclrtUtilizationInfo *utilizationInfo) {
  if (!utilizationInfo || utilizationInfo->utilizationExtend)
    return acl_fail(ACL_ERROR_INVALID_PARAM, "utilizationInfo is NULL or its utilizationExtend is not");
  size_t total = 0, free_bytes = 0;
  aclError rc = acl_device_memory(deviceId, &total, &free_bytes);
  if (rc) return rc;
  utilizationInfo->cubeUtilization = 0;
  utilizationInfo->vectorUtilization = 0;
  utilizationInfo->aicpuUtilization = 0;
  utilizationInfo->memoryUtilization = total ? (int32_t)((total - free_bytes) * 100 / total) : 0;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value) {
  if (!value) return acl_fail(ACL_ERROR_INVALID_PARAM, "value is NULL");
  if (deviceId > 63) return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "device %u", deviceId);
  rdev_device_props_t p; /* from the session's open: no round trip */
  aclError rc = acl_device_props((int)deviceId, &p);
  if (rc) return rc;
  size_t total = p.total_bytes;
  switch (attr) {
    case ACL_DEV_ATTR_AICPU_CORE_NUM: *value = 0; return ACL_SUCCESS; /* the sim runs no AI CPU work */
    case ACL_DEV_ATTR_AICORE_CORE_NUM:
    case ACL_DEV_ATTR_CUBE_CORE_NUM:
    case ACL_DEV_ATTR_VECTOR_CORE_NUM: *value = SIM_CORES; return ACL_SUCCESS;
    case ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: *value = (int64_t)total; return ACL_SUCCESS;
    default: return acl_fail(ACL_ERROR_API_NOT_SUPPORT, "device attribute %d is not offered by rdev", (int)attr);
  }
}

/* Priorities 0 (the highest) to 7, as CANN's streams take them. */
aclError aclrtDeviceGetStreamPriorityRange(int32_t *leastPriority, int32_t *greatestPriority) {
  if (!leastPriority || !greatestPriority) return acl_fail(ACL_ERROR_INVALID_PARAM, "NULL argument");
  *leastPriority = 7;
  *greatestPriority = 0;
  return ACL_SUCCESS;
}

/* ---- peer access ------------------------------------------------------------------ */

static aclError check_pair(int32_t a, int32_t b) {
  int n = 0;
  aclError rc = acl_device_count(&n);
  if (rc) return rc;
  if (a < 0 || a >= n || b < 0 || b >= n)
    return acl_fail(ACL_ERROR_RT_INVALID_DEVICEID, "devices %d and %d: this session has 0..%d", (int)a, (int)b, n - 1);
  return ACL_SUCCESS;
}

aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
  if (!canAccessPeer) return acl_fail(ACL_ERROR_INVALID_PARAM, "canAccessPeer is NULL");
  aclError rc = check_pair(deviceId, peerDeviceId);
  if (rc) return rc;
  *canAccessPeer = deviceId != peerDeviceId; /* a device is not its own peer, as in CANN */
  return ACL_SUCCESS;
}

aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags) {
  if (flags != 0) return acl_fail(ACL_ERROR_INVALID_PARAM, "flags must be 0");
  int32_t dev;
  aclError rc = aclrtGetDevice(&dev);
  return rc ? rc : check_pair(dev, peerDeviceId);
}

aclError aclrtDeviceDisablePeerAccess(int32_t peerDeviceId) {
  int32_t dev;
  aclError rc = aclrtGetDevice(&dev);
  return rc ? rc : check_pair(dev, peerDeviceId);
}
