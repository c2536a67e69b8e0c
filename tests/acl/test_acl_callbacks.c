/*
 * tests/acl/test_acl_callbacks.c — the host-callback flows of the CANN
 * runtime's samples (example/2_advanced_features/callback/0_simple_callback
 * and 1_callback_hostfunc, without their kernels), written only against the
 * acl headers and linked against libascendcl.so. A report thread of the
 * program takes the context and loops on aclrtProcessReport(100); a stream
 * (set to stop on failure, as the samples set it) is subscribed to it
 * (aclrtSubscribeReport) and aclrtLaunchCallback queues callbacks on it:
 *   - in stream order: a callback reads device memory with aclrtMemcpy and
 *     sees the memset queued before it, never the one queued after it;
 *   - ACL_CALLBACK_BLOCK holds the stream until the callback returns;
 *     ACL_CALLBACK_NO_BLOCK lets the stream go on at once;
 *   - callbacks run on the subscribed thread, one thread may serve two
 *     streams, and the loop then stops and the streams are unsubscribed;
 *   - the errors: aclrtProcessReport times out with
 *     ACL_ERROR_RT_REPORT_TIMEOUT when nothing comes, answers
 *     ACL_ERROR_THREAD_NOT_SUBSCRIBE on a thread without streams;
 *     aclrtLaunchCallback answers ACL_ERROR_STREAM_NOT_SUBSCRIBE on a stream
 *     without a thread; subscribing a stream twice ACL_ERROR_REPEAT_SUBSCRIBE.
 * aclrtLaunchHostFunc needs no thread of the program: its functions run in
 * stream order, hold their stream, and run on a thread that is not the
 * caller's. Compiled as C and as C++ (test_acl_callbacks.cpp); run by
 * run_acl.py against a real rdevd.
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
  CHECK_RET(aclrtSubscribeReport((uint64_t)pthread_self(), NULL), ACL_ERROR_UNINITIALIZE);
  return failures ? 1 : 0;
}

#define BYTES 4096
static const int32_t device = 0;
static aclrtContext ctx;
static int sequence; /* the order callbacks and host functions ran in */

/* __atomic builtins: the file is C and C++ */
static int load(int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* Waits up to ms milliseconds for *p to be set; its value. */
static int wait_for(int *p, int ms) {
  for (int i = 0; i < ms && !load(p); i++) usleep(1000);
  return load(p);
}

/* ---- the report thread ---------------------------------------------------------------- */

static struct {
  int go, ready, run;
  aclError set_ctx, first; /* aclrtSetCurrentContext; the first aclrtProcessReport, before any launch */
  int processed, timeouts, others;
  aclError other;
} rep;

static void *report_loop(void *arg) {
  (void)arg;
  rep.set_ctx = aclrtSetCurrentContext(ctx);
  wait_for(&rep.go, 20000);
  rep.first = aclrtProcessReport(50);
  store(&rep.ready, 1);
  while (load(&rep.run)) {
    aclError r = aclrtProcessReport(100);
    if (r == ACL_SUCCESS)
      rep.processed++;
    else if (r == ACL_ERROR_RT_REPORT_TIMEOUT)
      rep.timeouts++;
    else {
      rep.others++;
      rep.other = r;
    }
  }
  return NULL;
}

/* ---- what the callbacks do ----------------------------------------------------------- */

/* Reads the start of device memory, as the stream has it when the callback runs. */
typedef struct {
  void *dev;
  unsigned char seen[16];
  aclError copy;
  pthread_t thread;
  int order, ran;
} reader_t;

static void read_device(void *arg) {
  reader_t *r = (reader_t *)arg;
  r->thread = pthread_self();
  r->copy = aclrtMemcpy(r->seen, sizeof r->seen, r->dev, sizeof r->seen, ACL_MEMCPY_DEVICE_TO_HOST);
  r->order = __atomic_add_fetch(&sequence, 1, __ATOMIC_ACQ_REL);
  store(&r->ran, 1);
}

static int saw_only(const reader_t *r, unsigned char v) {
  for (size_t i = 0; i < sizeof r->seen; i++)
    if (r->seen[i] != v) return 0;
  return 1;
}

/* Holds its thread (and, blocking, its stream) until released. */
typedef struct {
  int entered, release, left;
  pthread_t thread;
} holder_t;

static void hold(void *arg) {
  holder_t *h = (holder_t *)arg;
  h->thread = pthread_self();
  store(&h->entered, 1);
  wait_for(&h->release, 20000);
  store(&h->left, 1);
}

/* Notes the order it ran in (host functions may not call the runtime). */
typedef struct {
  int order;
  pthread_t thread;
} mark_t;

/* Calls aclFinalize from a host function: refused, it would wait for itself. */
static void finalize_inside(void *arg) { store((int *)arg, aclFinalize()); }

static void mark(void *arg) {
  mark_t *m = (mark_t *)arg;
  m->thread = pthread_self();
  m->order = __atomic_add_fetch(&sequence, 1, __ATOMIC_ACQ_REL);
}

static unsigned char first_byte(void *dev) {
  unsigned char b = 0;
  CHECK_RET(aclrtMemcpy(&b, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  return b;
}

/* The same, read on stream probe while another stream is held: a
 * synchronous copy would wait for the held stream (docs/acl.md). */
static unsigned char peek_byte(void *dev, aclrtStream probe) {
  unsigned char b = 0;
  CHECK_RET(aclrtMemcpyAsync(&b, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST, probe), ACL_SUCCESS);
  return b;
}

static aclrtEventRecordedStatus event_status(aclrtEvent ev) {
  aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  CHECK_RET(aclrtQueryEventStatus(ev, &st), ACL_SUCCESS);
  return st;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "unreachable") == 0) return unreachable();

  /* the samples' set-up */
  CHECK_RET(aclInit(NULL), ACL_SUCCESS);
  CHECK_RET(aclrtSetDevice(device), ACL_SUCCESS);
  CHECK_RET(aclrtCreateContext(&ctx, device), ACL_SUCCESS);
  aclrtStream s = NULL, s2 = NULL, s3 = NULL;
  CHECK_RET(aclrtCreateStream(&s), ACL_SUCCESS);
  aclrtStream probe = NULL; /* reads device memory while s is held */
  CHECK_RET(aclrtCreateStream(&probe), ACL_SUCCESS);
  CHECK_RET(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE), ACL_SUCCESS);
  void *dev = NULL;
  unsigned char *pinned = NULL;
  CHECK_RET(aclrtMalloc(&dev, BYTES, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  CHECK_RET(aclrtMallocHost((void **)&pinned, BYTES), ACL_SUCCESS);
  aclrtEvent ev = NULL;
  CHECK_RET(aclrtCreateEvent(&ev), ACL_SUCCESS);
  if (!s || !dev || !pinned || !ev) {
    fprintf(stderr, "set-up failed\n");
    return 1;
  }

  /* before any subscription */
  reader_t r0;
  memset(&r0, 0, sizeof r0);
  r0.dev = dev;
  CHECK_RET(aclrtProcessReport(10), ACL_ERROR_THREAD_NOT_SUBSCRIBE);
  CHECK_RET(aclrtLaunchCallback(read_device, &r0, ACL_CALLBACK_BLOCK, s), ACL_ERROR_STREAM_NOT_SUBSCRIBE);
  CHECK_RET(aclrtLaunchCallback(NULL, &r0, ACL_CALLBACK_BLOCK, s), ACL_ERROR_INVALID_PARAM);
  CHECK_RET(aclrtLaunchCallback(read_device, &r0, (aclrtCallbackBlockType)7, s), ACL_ERROR_INVALID_PARAM);

  /* the report thread, subscribed to s; with nothing launched its first wait times out */
  store(&rep.run, 1);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, report_loop, NULL) == 0);
  const uint64_t tid = (uint64_t)t;
  CHECK_RET(aclrtSubscribeReport(tid, s), ACL_SUCCESS);
  CHECK_RET(aclrtSubscribeReport(tid, s), ACL_ERROR_REPEAT_SUBSCRIBE);
  store(&rep.go, 1);
  CHECK(wait_for(&rep.ready, 10000));
  CHECK(rep.set_ctx == ACL_SUCCESS);
  CHECK(rep.first == ACL_ERROR_RT_REPORT_TIMEOUT);

  /* stream order: each callback sees the memset before it, not the one after it */
  reader_t r1, r2;
  memset(&r1, 0, sizeof r1);
  memset(&r2, 0, sizeof r2);
  r1.dev = r2.dev = dev;
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x11, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchCallback(read_device, &r1, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x22, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchCallback(read_device, &r2, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
  CHECK_RET(aclrtMemcpyAsync(pinned, BYTES, dev, BYTES, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s), ACL_SUCCESS);
  CHECK(load(&r1.ran) && load(&r2.ran));
  CHECK(r1.copy == ACL_SUCCESS && r2.copy == ACL_SUCCESS);
  CHECK(saw_only(&r1, 0x11));
  CHECK(saw_only(&r2, 0x22));
  CHECK(r1.order < r2.order);
  CHECK(load(&r1.ran) && pthread_equal(r1.thread, t) && pthread_equal(r2.thread, t));
  CHECK(pinned[0] == 0x22 && pinned[BYTES - 1] == 0x22);

  /* ACL_CALLBACK_BLOCK: the work after the callback waits until it returns */
  holder_t h1;
  memset(&h1, 0, sizeof h1);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x33, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchCallback(hold, &h1, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x44, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(ev, s), ACL_SUCCESS);
  CHECK(wait_for(&h1.entered, 10000));
  usleep(100 * 1000); /* time for the stream to run ahead, were it to */
  CHECK(peek_byte(dev, probe) == 0x33);
  CHECK(event_status(ev) == ACL_EVENT_RECORDED_STATUS_NOT_READY);
  aclrtStreamStatus ss = ACL_STREAM_STATUS_COMPLETE;
  CHECK_RET(aclrtStreamQuery(s, &ss), ACL_SUCCESS);
  CHECK(ss == ACL_STREAM_STATUS_NOT_READY);
  store(&h1.release, 1);
  CHECK_RET(aclrtSynchronizeStream(s), ACL_SUCCESS);
  CHECK(load(&h1.left) && pthread_equal(h1.thread, t));
  CHECK(first_byte(dev) == 0x44);
  CHECK(event_status(ev) == ACL_EVENT_RECORDED_STATUS_COMPLETE);

  /* ACL_CALLBACK_NO_BLOCK: the stream goes on while the callback is still held */
  holder_t h2;
  memset(&h2, 0, sizeof h2);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x55, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchCallback(hold, &h2, ACL_CALLBACK_NO_BLOCK, s), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x66, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(ev, s), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeEventWithTimeout(ev, 10000), ACL_SUCCESS);
  CHECK(first_byte(dev) == 0x66);
  CHECK(wait_for(&h2.entered, 10000)); /* it does run */
  CHECK(!load(&h2.left));
  store(&h2.release, 1);
  CHECK(wait_for(&h2.left, 10000) && pthread_equal(h2.thread, t));

  /* one thread serves a second stream too */
  CHECK_RET(aclrtCreateStream(&s2), ACL_SUCCESS);
  CHECK_RET(aclrtSubscribeReport(tid, s2), ACL_SUCCESS);
  reader_t r3;
  memset(&r3, 0, sizeof r3);
  r3.dev = dev;
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x77, BYTES, s2), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchCallback(read_device, &r3, ACL_CALLBACK_BLOCK, s2), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s2), ACL_SUCCESS);
  CHECK(load(&r3.ran) && r3.copy == ACL_SUCCESS && saw_only(&r3, 0x77) && pthread_equal(r3.thread, t));

  /* the samples' end of the loop: stop it, join, unsubscribe */
  store(&rep.run, 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(rep.processed == 5); /* r1, r2, h1, h2, r3 */
  CHECK(rep.others == 0);
  if (rep.others) fprintf(stderr, "aclrtProcessReport returned %d on the report thread\n", rep.other);
  CHECK_RET(aclrtUnSubscribeReport(tid, s), ACL_SUCCESS);
  CHECK_RET(aclrtUnSubscribeReport(tid, s2), ACL_SUCCESS);
  CHECK(aclrtUnSubscribeReport(tid, s) != ACL_SUCCESS); /* not subscribed any more */
  CHECK_RET(aclrtLaunchCallback(read_device, &r0, ACL_CALLBACK_BLOCK, s), ACL_ERROR_STREAM_NOT_SUBSCRIBE);

  /* the calling thread itself, subscribed, processing its own report */
  const uint64_t self = (uint64_t)pthread_self();
  CHECK_RET(aclrtSubscribeReport(self, s), ACL_SUCCESS);
  CHECK_RET(aclrtProcessReport(20), ACL_ERROR_RT_REPORT_TIMEOUT);
  reader_t r4;
  memset(&r4, 0, sizeof r4);
  r4.dev = dev;
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x88, BYTES, s), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchCallback(read_device, &r4, ACL_CALLBACK_BLOCK, s), ACL_SUCCESS);
  CHECK_RET(aclrtProcessReport(10000), ACL_SUCCESS);
  CHECK(load(&r4.ran) && r4.copy == ACL_SUCCESS && saw_only(&r4, 0x88) && pthread_equal(r4.thread, pthread_self()));
  CHECK_RET(aclrtSynchronizeStream(s), ACL_SUCCESS);
  CHECK_RET(aclrtUnSubscribeReport(self, s), ACL_SUCCESS);
  CHECK_RET(aclrtProcessReport(10), ACL_ERROR_THREAD_NOT_SUBSCRIBE);

  /* aclrtLaunchHostFunc: no thread of the program; stream order; not the caller's thread */
  CHECK_RET(aclrtCreateStream(&s3), ACL_SUCCESS);
  mark_t marks[5];
  memset(marks, 0, sizeof marks);
  for (int i = 0; i < 5; i++) CHECK_RET(aclrtLaunchHostFunc(s3, mark, &marks[i]), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s3), ACL_SUCCESS);
  for (int i = 0; i < 5; i++) {
    CHECK(marks[i].order > 0);
    if (i) CHECK(marks[i].order == marks[i - 1].order + 1);
    CHECK(!pthread_equal(marks[i].thread, pthread_self()));
  }
  holder_t h3;
  memset(&h3, 0, sizeof h3);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0x99, BYTES, s3), ACL_SUCCESS);
  CHECK_RET(aclrtLaunchHostFunc(s3, hold, &h3), ACL_SUCCESS);
  CHECK_RET(aclrtMemsetAsync(dev, BYTES, 0xaa, BYTES, s3), ACL_SUCCESS);
  CHECK_RET(aclrtRecordEvent(ev, s3), ACL_SUCCESS);
  CHECK(wait_for(&h3.entered, 10000));
  usleep(100 * 1000);
  CHECK(peek_byte(dev, probe) == 0x99); /* a host function holds its stream */
  CHECK(event_status(ev) == ACL_EVENT_RECORDED_STATUS_NOT_READY);
  store(&h3.release, 1);
  CHECK_RET(aclrtSynchronizeStream(s3), ACL_SUCCESS);
  CHECK(load(&h3.left));
  CHECK(first_byte(dev) == 0xaa);
  mark_t on_null;
  memset(&on_null, 0, sizeof on_null);
  CHECK_RET(aclrtLaunchHostFunc(NULL, mark, &on_null), ACL_SUCCESS); /* the default stream */
  CHECK_RET(aclrtSynchronizeStream(NULL), ACL_SUCCESS);
  CHECK(on_null.order > marks[4].order);
  CHECK_RET(aclrtLaunchHostFunc(s3, NULL, NULL), ACL_ERROR_INVALID_PARAM);
  int inside = -1;
  CHECK_RET(aclrtLaunchHostFunc(s3, finalize_inside, &inside), ACL_SUCCESS);
  CHECK_RET(aclrtSynchronizeStream(s3), ACL_SUCCESS);
  CHECK(load(&inside) == ACL_ERROR_INVALID_PARAM);

  /* the end, as the samples release */
  CHECK_RET(aclrtDestroyEvent(ev), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(s), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(s2), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(s3), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyStreamForce(probe), ACL_SUCCESS);
  CHECK_RET(aclrtFree(dev), ACL_SUCCESS);
  CHECK_RET(aclrtFreeHost(pinned), ACL_SUCCESS);
  CHECK_RET(aclrtDestroyContext(ctx), ACL_SUCCESS);
  CHECK_RET(aclrtResetDeviceForce(device), ACL_SUCCESS);
  CHECK_RET(aclFinalize(), ACL_SUCCESS);
  printf("%s: %s\n", argv[0], failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}
