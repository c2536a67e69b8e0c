/*
 * tests/acl/test_acl_streams_memory.c — the multi-stream memory flow of the
 * CANN runtime's samples
 * (example/1_basic_features/memory/9_multistream_sync_memory), written only
 * against the acl headers and linked against libascendcl.so: a thread
 * queues aclrtValueWait (EQ 100) on stream A and synchronizes it; a second
 * thread, started a while later, sets a flag and then queues aclrtValueWrite
 * (100) on stream B. The waiting thread's synchronize may return only after
 * the write, so it must see the flag the writer set (the sample's run.sh
 * compares the two flag values). Around it: stream A's work after the wait
 * runs after the write, the other comparisons (GEQ, AND, NOR) on the NULL
 * stream, and two streams ordered by an event. Compiled as C and as C++
 * (test_acl_streams_memory.cpp); run by run_acl.py against a real rdevd.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "acl/acl.h"
#include "acl_check.h"

static int unreachable(void) {
  CHECK(aclInit(NULL) != ACL_SUCCESS);
  aclrtStream s = NULL;
  CHECK_RET(aclrtCreateStream(&s), ACL_ERROR_UNINITIALIZE);
  return failures ? 1 : 0;
}

static const int32_t device = 0;
static int flag;          /* the sample's flag file: set by the writer before its write */
static int waiter_queued; /* the waiting thread queued its wait and the copy after it */
static int waiter_done;   /* the waiting thread's synchronize returned */
static const uint64_t target = 100;

typedef struct {
  aclrtStream stream;
  void *dev;      /* the 64-bit word waited on */
  uint64_t *seen; /* aclrtMallocHost: stream A's copy of the word after the wait */
  aclError wait, copy, sync;
  int flag_seen;
} waiter_t;

static void *waiter(void *arg) {
  waiter_t *w = (waiter_t *)arg;
  (void)aclrtSetDevice(device);
  w->wait = aclrtValueWait(w->dev, target, ACL_STREAM_WAIT_VALUE_EQ, w->stream);
  w->copy = aclrtMemcpyAsync(w->seen, sizeof *w->seen, w->dev, sizeof *w->seen, ACL_MEMCPY_DEVICE_TO_HOST, w->stream);
  __atomic_store_n(&waiter_queued, 1, __ATOMIC_RELEASE);
  w->sync = aclrtSynchronizeStreamWithTimeout(w->stream, 20000); /* the sample waits without end */
  w->flag_seen = __atomic_load_n(&flag, __ATOMIC_ACQUIRE);
  __atomic_store_n(&waiter_done, 1, __ATOMIC_RELEASE);
  return NULL;
}

typedef struct {
  aclrtStream stream;
  void *dev;
  aclError write, sync;
} writer_t;

static void *writer(void *arg) {
  writer_t *w = (writer_t *)arg;
  __atomic_store_n(&flag, 123, __ATOMIC_RELEASE);
  (void)aclrtSetDevice(device);
  w->write = aclrtValueWrite(w->dev, target, 0, w->stream);
  w->sync = aclrtSynchronizeStream(w->stream);
  return NULL;
}

static uint64_t read_word(void *dev) {
  uint64_t v = 0;
  CHECK_RET(aclrtMemcpy(&v, sizeof v, dev, sizeof v, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return v;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();
  const size_t size = (size_t)1 << 20;

  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS);
  void *dev = NULL;
  CHECK_RET(aclrtMalloc(&dev, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMemset(dev, size, 0, size), ACL_SUCCESS);
  aclrtStream a = NULL, b = NULL;
  CHECK_RET(aclrtCreateStream(&a), ACL_SUCCESS);
  CHECK_RET(aclrtCreateStream(&b), ACL_SUCCESS);
  uint64_t *seen = NULL;
  CHECK_RET(aclrtMallocHost((void **)&seen, sizeof *seen), ACL_SUCCESS);
  if (!dev || !seen) {
    fprintf(stderr, "no memory to work with\n");
    return 1;
  }
  *seen = 0;

  /* the sample: a waiting thread on stream A, a writing thread on stream B a while later */
  waiter_t w;
  memset(&w, 0, sizeof w);
  w.stream = a;
  w.dev = dev;
  w.seen = seen;
  writer_t wr;
  memset(&wr, 0, sizeof wr);
  wr.stream = b;
  wr.dev = dev;
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, waiter, &w) == 0);
  for (int i = 0; i < 10000 && !__atomic_load_n(&waiter_queued, __ATOMIC_ACQUIRE); i++) usleep(1000);
  usleep(300 * 1000); /* the sample waits a second before it starts the writer */
  CHECK(__atomic_load_n(&waiter_done, __ATOMIC_ACQUIRE) == 0); /* still waiting: nothing was written */
  aclrtStreamStatus status = ACL_STREAM_STATUS_COMPLETE;
  CHECK_RET(aclrtStreamQuery(a, &status), ACL_SUCCESS);
  CHECK(status == ACL_STREAM_STATUS_NOT_READY);
  CHECK(pthread_create(&tb, NULL, writer, &wr) == 0);
  CHECK(pthread_join(tb, NULL) == 0);
  CHECK(pthread_join(ta, NULL) == 0);
  printf("Flag value after the writing thread starts: %d\n", 123);
  printf("Flag value read by the waiting thread: %d\n", w.flag_seen);
  CHECK(wr.write == ACL_SUCCESS && wr.sync == ACL_SUCCESS);
  CHECK(w.wait == ACL_SUCCESS && w.copy == ACL_SUCCESS && w.sync == ACL_SUCCESS);
  CHECK(w.flag_seen == 123);
  CHECK(*seen == target); /* stream A's copy ran after the wait, so after the write */
  CHECK(read_word(dev) == target);
  if (w.sync != ACL_SUCCESS) { /* stream A may still be waiting: do not hang in the clean-up */
    fprintf(stderr, "stream A never got past its wait\n");
    printf("%s: FAILED\n", argv[0]);
    fflush(NULL);
    _exit(1);
  }

  /* the other comparisons, on the NULL stream; each wait is met when queued */
  CHECK_RET(aclrtValueWrite(dev, 7, 0, NULL), ACL_SUCCESS);
  CHECK_RET(aclrtValueWait(dev, 5, ACL_STREAM_WAIT_VALUE_GEQ, NULL), ACL_SUCCESS);             /* 7 - 5 >= 0 */
  CHECK_RET(aclrtValueWait(dev, 6, ACL_STREAM_WAIT_VALUE_AND, NULL), ACL_SUCCESS);             /* 7 & 6 != 0 */
  CHECK_RET(aclrtValueWait(dev, ~(uint64_t)15, ACL_STREAM_WAIT_VALUE_NOR, NULL), ACL_SUCCESS); /* ~(7 | ~15) = 8 */
  CHECK_RET(aclrtValueWrite(dev, 9, 0, NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(NULL, 20000), ACL_SUCCESS);
  CHECK(read_word(dev) == 9);

  /* a GEQ wait on A released by a later write on B */
  CHECK_RET(aclrtValueWait(dev, 20, ACL_STREAM_WAIT_VALUE_GEQ, a), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync((char *)dev + 64, 64, 0x4e, 64, a), ACL_SUCCESS);
  usleep(100 * 1000);
  unsigned char probe = 0;
  /* read on stream B: a synchronous copy would come after stream A's wait (docs/acl.md) */
  CHECK_RET(aclrtMemcpyAsync(&probe, 1, (char *)dev + 64, 1, ACL_MEMCPY_DEVICE_TO_HOST, b), ACL_SUCCESS);
  CHECK(probe == 0); /* the memset waits behind the wait */
  CHECK_RET(aclrtValueWrite(dev, 25, 0, b), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStreamWithTimeout(a, 20000), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpy(&probe, 1, (char *)dev + 64, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  CHECK(probe == 0x4e);

  /* bad arguments: a flag that is no comparison, a NULL address (on a stream
   * of their own: one taken by mistake could hold its stream for ever) */
  aclrtStream c = NULL;
  CHECK_RET(aclrtCreateStream(&c), ACL_SUCCESS);
  aclError bad_wait = aclrtValueWait(dev, 1, 0x10, c), bad_write = aclrtValueWrite(NULL, 1, 0, c);
  CHECK(bad_wait != ACL_SUCCESS);
  CHECK(bad_write != ACL_SUCCESS);
  if (bad_wait != ACL_SUCCESS && bad_write != ACL_SUCCESS) CHECK_RET(aclrtDestroyStream(c), ACL_SUCCESS);

  /* two streams ordered by an event: B copies what A wrote */
  unsigned char *pinned = NULL;
  CHECK_RET(aclrtMallocHost((void **)&pinned, size), ACL_SUCCESS);
  aclrtEvent ev = NULL;
  CHECK_RET(aclrtCreateEvent(&ev), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev, size, 0x2f, size, a), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(ev, a), ACL_SUCCESS);
  CHECK_RET(aclrtStreamWaitEvent(b, ev), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pinned, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, b), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(b), ACL_SUCCESS);
  if (pinned) CHECK(pinned[0] == 0x2f && pinned[size / 2] == 0x2f && pinned[size - 1] == 0x2f);
  CHECK_RET(aclrtDestroyEvent(ev), ACL_SUCCESS);

  /* the end, as the sample releases */
  CHECK_RET(aclrtDestroyStreamForce(a), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(b), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(seen), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(device), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
