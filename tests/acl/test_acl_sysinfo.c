/*
 * tests/acl/test_acl_sysinfo.c — the system-information flow of the CANN
 * runtime's quickstart (example/0_quickstart/2_system_info), written only
 * against the acl headers and linked against libascendcl.so: the API
 * version (aclrtGetVersion), the runtime package's version as a string and
 * as a number (aclsysGetVersionStr, aclsysGetVersionNum, which must agree),
 * the run mode, fp16 conversion and element sizes; and what a program asks
 * of the devices before it uses one (count, SoC name, memory). rdev runs
 * the program on a host (ACL_HOST) against rdevd's simulated devices, whose
 * SoC name is the backend's ($RDEV_TEST_SOC; "sim" by default). Compiled as C and as C++ (test_acl_sysinfo.cpp); run
 * by run_acl.py against a real rdevd with two devices.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

/* aclrtGetVersion is deprecated in CANN, and still offered */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  uint32_t n = 0;
  CHECK_RET(aclrtGetDeviceCount(&n), ACL_ERROR_UNINITIALIZE);
  CHECK(aclrtGetSocName() == NULL);
  return failures ? 1 : 0;
}

/* "A.B.C" at the start of s, or -1. */
static int parse_version(const char *s, int *major, int *minor, int *patch) {
  int used = 0;
  if (sscanf(s, "%d.%d.%d%n", major, minor, patch, &used) != 3) return -1;
  return used;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);

  /* the API version */
  int32_t major = -1, minor = -1, patch = -1;
  CHECK_RET(aclrtGetVersion(&major, &minor, &patch), ACL_SUCCESS);
  CHECK(major == ACL_MAJOR_VERSION && minor == ACL_MINOR_VERSION && patch == ACL_PATCH_VERSION);
  printf("ACL runtime API version: %d.%d.%d\n", major, minor, patch);

  /* the runtime package's version: a string "A.B.C[...]" and a number,
   * A*10000000 + B*100000 + C*1000 for a release, a little less for a
   * pre-release of it; the two must agree */
  char pkg[] = "runtime";
  char version[ACL_PKG_VERSION_MAX_SIZE];
  memset(version, 0, sizeof version);
  int32_t num = 0;
  CHECK_RET(aclsysGetVersionStr(pkg, version), ACL_SUCCESS);
  CHECK_RET(aclsysGetVersionNum(pkg, &num), ACL_SUCCESS);
  printf("CANN package [%s]: version string %s, number %d\n", pkg, version, (int)num);
  CHECK(memchr(version, '\0', sizeof version) != NULL && version[0] != '\0');
  int vmaj = -1, vmin = -1, vpat = -1;
  int used = parse_version(version, &vmaj, &vmin, &vpat);
  CHECK(used > 0 && vmaj >= 0 && vmin >= 0 && vmin < 100 && vpat >= 0 && vpat < 100);
  if (used > 0) {
    int32_t release = (int32_t)vmaj * 10000000 + (int32_t)vmin * 100000 + (int32_t)vpat * 1000;
    if (version[used] == '\0')
      CHECK(num == release);
    else /* a pre-release: between the release before and this one */
      CHECK(num < release && num > release - 1000);
  }
  char unknown[] = "no-such-package";
  CHECK(aclsysGetVersionStr(unknown, version) != ACL_SUCCESS);
  CHECK(aclsysGetVersionNum(unknown, &num) != ACL_SUCCESS);
  CHECK_RET(aclsysGetVersionStr(pkg, NULL), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclsysGetVersionNum(pkg, NULL), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclsysGetVersionNum(NULL, &num), ACL_ERROR_INVALID_PARAM);

  /* run mode and the data type helpers */
  aclrtRunMode mode = ACL_DEVICE;
  CHECK_RET(aclrtGetRunMode(&mode), ACL_SUCCESS);
  CHECK(mode == ACL_HOST);
  aclFloat16 half = aclFloatToFloat16(1.625f);
  CHECK(half == 0x3e80);
  CHECK(aclFloat16ToFloat(half) == 1.625f);
  CHECK(aclDataTypeSize(ACL_FLOAT) == 4 && aclDataTypeSize(ACL_FLOAT16) == 2 && aclDataTypeSize(ACL_INT64) == 8);

  /* the devices: how many, what they are, their memory */
  uint32_t count = 0;
  CHECK_RET(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  CHECK(count == 2);                /* run_acl.py's rdevd: two simulated devices */
  CHECK(aclrtGetSocName() == NULL); /* no device set on this thread yet */
  for (uint32_t d = 0; d < count; d++) {
    CHECK_RET(aclrtSetDevice((int32_t)d), ACL_SUCCESS);
    const char *soc = aclrtGetSocName();
    const char *want = getenv("RDEV_TEST_SOC"); /* the backend's SoC; the sim's by default */
    CHECK(soc != NULL && strcmp(soc, want ? want : "sim") == 0);
    size_t free_bytes = 0, total = 0;
    CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total), ACL_SUCCESS);
    CHECK(total > 0 && free_bytes <= total);
    printf("device %u: SoC %s, memory %zu of %zu bytes free\n", d, soc ? soc : "<null>", free_bytes, total);
    CHECK_RET(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &total), ACL_ERROR_INVALID_PARAM);
    CHECK_RET(aclrtResetDeviceForce((int32_t)d), ACL_SUCCESS);
  }

  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
