/*
 * tests/acl/test_acl_stream_config.c — the stream configuration flow of the
 * CANN runtime's samples (example/1_basic_features/stream/3_stream_config_query),
 * written only against the acl headers and linked against libascendcl.so.
 * The sample has two versions, and both are here: a stream made by
 * aclrtCreateStreamWithConfig(priority 0, flags 0) whose id, flags and
 * priority are read back and must be what was asked (the first version
 * fails otherwise), synchronized and destroyed; and the same through a
 * configuration handle (aclrtCreateStreamConfigHandle,
 * aclrtSetStreamConfigOpt for ACL_RT_STREAM_FLAG and ACL_RT_STREAM_PRIORITY,
 * aclrtCreateStreamV2, aclrtDestroyStreamConfigHandle; the second version's
 * run.sh fails when it skips). Also other priorities and flags, ids unique
 * among live streams, and the NULL stream. rdev keeps priority and flags and
 * reports them; it schedules every stream alike. Compiled as C and as C++
 * (test_acl_stream_config.cpp); run by run_acl.py against a real rdevd.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "acl/acl.h"
#include "acl_check.h"

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  aclrtStream s = NULL;
  CHECK_RET(aclrtCreateStreamWithConfig(&s, 0, 0), ACL_ERROR_UNINITIALIZE);
  return failures ? 1 : 0;
}

/* Reads the stream's id, flags and priority back; checks them against what was asked. */
static int32_t query(aclrtStream s, uint32_t want_priority, uint32_t want_flags) {
  int32_t id = -1;
  uint32_t flags = ~0u, priority = ~0u;
  CHECK_RET(aclrtStreamGetId(s, &id), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetFlags(s, &flags), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetPriority(s, &priority), ACL_SUCCESS);
  printf("stream id %d, flags %u, priority %u\n", (int)id, flags, priority);
  CHECK(id >= 0);
  CHECK(flags == want_flags);
  CHECK(priority == want_priority);
  return id;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const int32_t device = 0;
  const uint32_t flags0 = 0, priority0 = 0;

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS);

  /* the first version: aclrtCreateStreamWithConfig */
  aclrtStream s = NULL;
  CHECK_RET(aclrtCreateStreamWithConfig(&s, priority0, flags0), ACL_SUCCESS);
  int32_t id = query(s, priority0, flags0);
  CHECK(id != 0); /* 0 is the default stream's */
  CHECK_RET(aclrtSynchronizeStream(s), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStream(s), ACL_SUCCESS);

  /* other priorities and flags; ids differ among live streams */
  const uint32_t prios[] = {1, 2, 3, 0};
  const uint32_t flag_sets[] = {ACL_STREAM_FAST_LAUNCH, ACL_STREAM_FAST_SYNC,
                                ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC, 0};
  aclrtStream many[4] = {NULL, NULL, NULL, NULL};
  int32_t ids[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 4; i++) {
    CHECK_RET(aclrtCreateStreamWithConfig(&many[i], prios[i], flag_sets[i]), ACL_SUCCESS);
    ids[i] = query(many[i], prios[i], flag_sets[i]);
    for (int j = 0; j < i; j++) CHECK(ids[i] != ids[j]);
  }
  void *mem = NULL;
  CHECK_RET(aclrtMalloc(&mem, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  for (int i = 0; i < 4; i++) CHECK_RET(aclrtMemsetAsync(mem, 256, i + 1, 256, many[i]), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeDevice(), ACL_SUCCESS);
  for (int i = 0; i < 4; i++) CHECK_RET(aclrtDestroyStream(many[i]), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStreamWithConfig(NULL, 0, 0), ACL_ERROR_INVALID_PARAM);

  /* the NULL stream: the device's default one */
  int32_t def_id = -1;
  uint32_t def_flags = ~0u, def_prio = ~0u;
  CHECK_RET(aclrtStreamGetId(NULL, &def_id), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetFlags(NULL, &def_flags), ACL_SUCCESS);
  CHECK_RET(aclrtStreamGetPriority(NULL, &def_prio), ACL_SUCCESS);
  CHECK(def_id == 0 && def_flags == 0 && def_prio == 0);

  /* the second version: a configuration handle and aclrtCreateStreamV2 */
  aclrtStreamConfigHandle *config = aclrtCreateStreamConfigHandle();
  CHECK(config != NULL);
  if (config) {
    CHECK_RET(aclrtSetStreamConfigOpt(config, ACL_RT_STREAM_FLAG, &flags0, sizeof flags0), ACL_SUCCESS);
    CHECK_RET(aclrtSetStreamConfigOpt(config, ACL_RT_STREAM_PRIORITY, &priority0, sizeof priority0), ACL_SUCCESS);
    s = NULL;
    CHECK_RET(aclrtCreateStreamV2(&s, config), ACL_SUCCESS);
    if (s) {
      query(s, priority0, flags0);
      CHECK_RET(aclrtSynchronizeStream(s), ACL_SUCCESS);
      CHECK_RET(aclrtDestroyStream(s), ACL_SUCCESS);
    }
    /* and with a priority and a flag that are not the defaults */
    const uint32_t prio2 = 2, flags2 = ACL_STREAM_FAST_LAUNCH;
    CHECK_RET(aclrtSetStreamConfigOpt(config, ACL_RT_STREAM_FLAG, &flags2, sizeof flags2), ACL_SUCCESS);
    CHECK_RET(aclrtSetStreamConfigOpt(config, ACL_RT_STREAM_PRIORITY, &prio2, sizeof prio2), ACL_SUCCESS);
    s = NULL;
    CHECK_RET(aclrtCreateStreamV2(&s, config), ACL_SUCCESS);
    if (s) {
      query(s, prio2, flags2);
      CHECK_RET(aclrtDestroyStream(s), ACL_SUCCESS);
    }
    CHECK_RET(aclrtDestroyStreamConfigHandle(config), ACL_SUCCESS);
  }

  CHECK_RET(aclrtFree(mem), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(device), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
