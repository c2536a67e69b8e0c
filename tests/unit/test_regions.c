/*
 * tests/unit/test_regions.c — Check unit tests of a session's host memory
 * regions (server/session/regions.c: srv_region_add, srv_region_remove,
 * srv_region_get, srv_region_put, srv_regions_release, declared in
 * server/session/session.h) and of the Reads and Writes that name one
 * (server/session/ops_mem.c), on in-process sessions of the sim
 * (srv_session_open_local, no network, no bulk connection: the test
 * registers its memfds with srv_region_add itself, as the bulk reader does).
 *
 * Registration: every refusal (a regular file, a memfd not sealed against
 * shrinking, a file smaller than the region, id 0, size 0 or over
 * RDEV_WIRE_MAX_REGION_BYTES, a duplicate id, one past RDEV_WIRE_MAX_REGIONS,
 * a released session) gives a status and a reason, and the fd is closed
 * whatever the outcome; srv_region_get's bounds, without overflow; a
 * region's mapping outlives its removal while a reference holds it.
 * Copies: synchronous Writes from and Reads into a region, byte for byte, at
 * odd offsets and past the chunk limit, answered with a status and no data;
 * quiet ones not answered; async ones on a stream answered only by the
 * StreamSync. Bad requests: unknown region, offsets and counts past the
 * region or overflowing, a payload beside a region, count over dest_max,
 * each refused with its code and changing nothing, the session serving on;
 * a removed region is unknown, yet a copy queued on it before completes
 * from the memory as it is when the stream reaches it. The end: closing a
 * session with regions registered and a copy still queued on one unmaps
 * them all (/proc/self/maps) and gives every byte of device memory back;
 * under ASan the program is also checked for leaks.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grpc/grpc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rdev/status.h"
#include "rdev/wire.h"
#include "session/session.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define REPLY_WAIT_MS 10000

/* ---- the server and its replies ---------------------------------------------- */

static srv_t srv;

/* One reply as decoded (data: its payload, malloc'd, or NULL). */
typedef struct {
  uint64_t seq;
  int kind, status;
  char message[256];
  uint64_t addr, handle, value;
  int bulk;
  uint8_t *data;
  size_t data_len;
} got_t;

#define MAX_GOT 1024
static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  got_t got[MAX_GOT];
  int n;
  int malformed; /* replies that did not decode */
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t next_seq = 1;

/* srv_reply_fn: decodes and keeps the reply (any thread, the session's lock held). */
static void on_reply(void *user, grpc_byte_buffer *bb) {
  (void)user;
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  rdev_wire_bytes_t data = {.max = 8 * MIB}, print = {.max = MIB};
  rdev_wire_bytes_decoder(&r.data, &data);
  rdev_wire_bytes_decoder(&r.print, &print);
  int ok = rdev_wire_decode(bb, rdev_v1_Reply_fields, &r, NULL);
  grpc_byte_buffer_destroy(bb);
  free(print.data);
  pthread_mutex_lock(&R.mu);
  if (!ok || R.n == MAX_GOT) {
    R.malformed++;
    free(data.data);
  } else {
    got_t *g = &R.got[R.n++];
    *g = (got_t){.seq = r.seq,
                 .kind = (int)r.kind,
                 .status = r.status,
                 .addr = r.addr,
                 .handle = r.handle,
                 .value = r.value,
                 .bulk = r.bulk,
                 .data = data.data,
                 .data_len = data.data ? data.len : 0};
    snprintf(g->message, sizeof g->message, "%s", r.message);
  }
  pthread_cond_broadcast(&R.cv);
  pthread_mutex_unlock(&R.mu);
}

static void setup(void) {
  grpc_init();
  srv_log_level = SRV_LOG_ERROR;
  memset(&srv, 0, sizeof srv);
  srv_config_defaults(&srv.cfg);
  srv.cfg.sim_devices = 1;
  srv.cfg.sim_mem_bytes = 64 * MIB;
  ck_assert_int_eq(srv_open(&srv), 0);
  next_seq = 1;
}

static void teardown(void) {
  pthread_mutex_lock(&R.mu);
  for (int i = 0; i < R.n; i++) free(R.got[i].data);
  R.n = 0;
  pthread_mutex_unlock(&R.mu);
  srv_close(&srv);
  grpc_shutdown();
}

static srv_session_t *open_session(void) {
  srv_session_t *s = srv_session_open_local(&srv, srv.tenants, on_reply, NULL);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Feeds request q (its seq set here) with payload [payload, +len) if payload
 * is not NULL; returns its seq. */
static uint64_t send_req(srv_session_t *s, rdev_v1_Request *q, const void *payload, size_t len) {
  q->seq = next_seq++;
  grpc_slice pl = grpc_slice_from_copied_buffer(payload ? payload : "", payload ? len : 0);
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, q, payload ? &pl : NULL);
  grpc_slice_unref(pl);
  ck_assert_ptr_nonnull(bb);
  int rc = -1;
  for (int tries = 0; tries < 3 && rc < 0; tries++) {
    rc = srv_session_feed(s, bb);
    if (rc < 0) srv_session_wait_ready(s, 3000);
  }
  if (rc < 0) grpc_byte_buffer_destroy(bb);
  ck_assert_msg(rc >= 0, "the session did not take request %llu", (unsigned long long)q->seq);
  return q->seq;
}

static int find_locked(uint64_t seq) {
  for (int i = 0; i < R.n; i++)
    if (R.got[i].seq == seq && R.got[i].kind == rdev_v1_ReplyKind_FINAL) return i;
  return -1;
}

/* The FINAL reply to seq, waiting for it (fails the test when none comes). */
static got_t reply_to(uint64_t seq) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += REPLY_WAIT_MS / 1000;
  pthread_mutex_lock(&R.mu);
  int i, rc = 0;
  while ((i = find_locked(seq)) < 0 && rc == 0) rc = pthread_cond_timedwait(&R.cv, &R.mu, &dl);
  got_t g = i >= 0 ? R.got[i] : (got_t){0};
  pthread_mutex_unlock(&R.mu);
  ck_assert_msg(i >= 0, "no reply to request %llu", (unsigned long long)seq);
  return g;
}

/* Whether any FINAL reply to seq came (no waiting). */
static int answered(uint64_t seq) {
  pthread_mutex_lock(&R.mu);
  int i = find_locked(seq);
  pthread_mutex_unlock(&R.mu);
  return i >= 0;
}

static int status_of(uint64_t seq) { return reply_to(seq).status; }

/* ---- requests -------------------------------------------------------------------- */

static uint64_t dev_malloc(srv_session_t *s, size_t size) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_malloc_tag;
  q.op.malloc.size = size;
  got_t g = reply_to(send_req(s, &q, NULL, 0));
  ck_assert_msg(g.status == RDEV_OK && g.addr, "malloc of %zu: %d %s", size, g.status, g.message);
  return g.addr;
}

static uint64_t stream_create(srv_session_t *s) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_stream_create_tag;
  got_t g = reply_to(send_req(s, &q, NULL, 0));
  ck_assert_msg(g.status == RDEV_OK && g.handle, "stream create: %d %s", g.status, g.message);
  return g.handle;
}

static uint64_t stream_sync(srv_session_t *s, uint64_t stream) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_stream_sync_tag;
  q.op.stream_sync.stream = stream;
  return send_req(s, &q, NULL, 0);
}

static uint64_t host_func_block(srv_session_t *s, uint64_t stream) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_host_func_tag;
  q.op.host_func.stream = stream;
  q.op.host_func.block = true;
  return send_req(s, &q, NULL, 0);
}

/* A Write of count bytes from region at off to addr (dest_max = count). */
static uint64_t write_region(srv_session_t *s, uint64_t stream, uint64_t addr, uint32_t region, uint64_t off,
                             uint64_t count) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write = (rdev_v1_Write){
      .stream = stream, .addr = addr, .dest_max = count, .host_region = region, .host_offset = off, .count = count};
  return send_req(s, &q, NULL, 0);
}

/* A Read of count bytes at addr into region at off (dest_max = count). */
static uint64_t read_region(srv_session_t *s, uint64_t stream, uint64_t addr, uint32_t region, uint64_t off,
                            uint64_t count) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_read_tag;
  q.op.read = (rdev_v1_Read){
      .stream = stream, .addr = addr, .count = count, .dest_max = count, .host_region = region, .host_offset = off};
  return send_req(s, &q, NULL, 0);
}

/* A plain Write of [p, +n) to addr, answered 0. */
static void write_bytes(srv_session_t *s, uint64_t addr, const void *p, size_t n) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write.addr = addr;
  q.op.write.dest_max = n;
  got_t g = reply_to(send_req(s, &q, p, n));
  ck_assert_msg(g.status == RDEV_OK, "write: %d %s", g.status, g.message);
}

/* A plain synchronous Read of n (<= 1 MiB) bytes at addr into out. */
static void read_bytes(srv_session_t *s, uint64_t addr, void *out, size_t n) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_read_tag;
  q.op.read = (rdev_v1_Read){.addr = addr, .count = n, .dest_max = n};
  got_t g = reply_to(send_req(s, &q, NULL, 0));
  ck_assert_msg(g.status == RDEV_OK, "read: %d %s", g.status, g.message);
  ck_assert_uint_eq(g.data_len, n);
  memcpy(out, g.data, n);
}

/* ---- memfds, patterns, mappings ------------------------------------------------- */

static uint64_t seed, rng;

static void seed_rng(void) { seed = rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ull; }

static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    p[i] = (uint8_t)(rng >> 24);
  }
}

/* Index of the first byte where a and b differ; -1 when none. */
static long first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return (long)i;
  return -1;
}

#define ASSERT_SAME(a, b, n) \
  do { \
    long d_ = first_diff((const uint8_t *)(a), (const uint8_t *)(b), (n)); \
    ck_assert_msg(d_ < 0, "byte %ld of %zu differs: 0x%02x, not 0x%02x (seed %llu)", d_, (size_t)(n), \
                  d_ < 0 ? 0 : ((const uint8_t *)(a))[d_], d_ < 0 ? 0 : ((const uint8_t *)(b))[d_], \
                  (unsigned long long)seed); \
  } while (0)

static int is_closed(int fd) { return fcntl(fd, F_GETFD) == -1 && errno == EBADF; }

/* A memfd named name of size bytes; sealing allowed when allow, with seals added. */
static int memfd(const char *name, uint64_t size, int allow, int seals) {
  int fd = memfd_create(name, MFD_CLOEXEC | (allow ? MFD_ALLOW_SEALING : 0));
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
  /* its pages there, written, as rdev_malloc_host's are (rdevd refuses
   * holes, and shmem counts pages fallocate made but nobody wrote as
   * holes); the huge ones only test the size limit and stay sparse */
  static const uint8_t zeros[65536];
  for (uint64_t at = 0; size <= ((uint64_t)64 << 20) && at < size;) {
    size_t n = size - at < sizeof zeros ? (size_t)(size - at) : sizeof zeros;
    ck_assert_int_eq(pwrite(fd, zeros, n, (off_t)at), (ssize_t)n);
    at += n;
  }
  if (seals) ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, seals), 0);
  return fd;
}

/* The mappings of memfd name in this process (the server's and the test's). */
static int count_maps(const char *name) {
  char want[128], line[1024];
  snprintf(want, sizeof want, "/memfd:%s (deleted)", name);
  FILE *f = fopen("/proc/self/maps", "r");
  ck_assert_ptr_nonnull(f);
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    size_t ll = strlen(line), wl = strlen(want);
    n += ll >= wl && strcmp(line + ll - wl, want) == 0;
  }
  fclose(f);
  return n;
}

/* A region the test maps too: memfd name of size bytes (sealed against
 * shrinking and growing), registered in s as id; returns the test's
 * MAP_SHARED mapping. */
static uint8_t *region_new(srv_session_t *s, const char *name, uint32_t id, size_t size) {
  int fd = memfd(name, size, 1, 0);
  uint8_t *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ck_assert_ptr_ne(map, MAP_FAILED);
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  const char *why = "unset";
  int rc = srv_region_add(s, id, fd, size, &why);
  ck_assert_msg(rc == RDEV_OK, "region %u refused: %d %s", id, rc, why ? why : "(no reason)");
  ck_assert_ptr_null(why);
  ck_assert_msg(is_closed(fd), "srv_region_add left fd %d open", fd);
  return map;
}

/* srv_region_add refuses fd as (id, size) with status want and a reason
 * holding reason; the fd is closed either way. */
static void add_refused(srv_session_t *s, uint32_t id, int fd, uint64_t size, int want, const char *reason) {
  const char *why = NULL;
  int rc = srv_region_add(s, id, fd, size, &why);
  ck_assert_msg(rc == want, "region %u of %llu bytes: status %d, not %d", id, (unsigned long long)size, rc, want);
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, reason), "reason '%s' does not say '%s'", why, reason);
  ck_assert_msg(is_closed(fd), "srv_region_add left fd %d open", fd);
}

static size_t dev_free(void) {
  size_t f = 0, t = 0;
  ck_assert_int_eq(rdev_rt_mem_info(srv.rt, 0, &f, &t), RDEV_OK);
  return f;
}

static size_t tenant_used(void) {
  pthread_mutex_lock(&srv.tenants->mu);
  size_t u = srv.tenants->mem_used[0];
  pthread_mutex_unlock(&srv.tenants->mu);
  return u;
}

/* Waits up to 2 s until memfd name has want mappings; returns how many it has. */
static int await_maps(const char *name, int want) {
  int n = count_maps(name);
  for (int i = 0; i < 2000 && n != want; i++) usleep(1000), n = count_maps(name);
  return n;
}

/* ---- 1. registration -------------------------------------------------------------- */

START_TEST(test_regular_file_refused) {
  srv_session_t *s = open_session();
  char path[] = "/tmp/rdev-test-regions-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  unlink(path);
  ck_assert_int_eq(ftruncate(fd, 4096), 0);
  add_refused(s, 1, fd, 4096, RDEV_INVALID_PARAM, "not a memfd sealed against shrinking");
  add_refused(s, 1, -1, 4096, RDEV_INVALID_PARAM, "not a memfd sealed"); /* not even a file */
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  close(p[1]);
  add_refused(s, 1, p[0], 4096, RDEV_INVALID_PARAM, "not a memfd sealed");
  /* nothing was registered: id 1 is free */
  uint8_t *h;
  ck_assert_ptr_null(srv_region_get(s, 1, 0, 0, &h));
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_memfd_without_shrink_seal_refused) {
  srv_session_t *s = open_session();
  add_refused(s, 1, memfd("rdev-r-noseal", 4096, 0, 0), 4096, RDEV_INVALID_PARAM, "not a memfd sealed");
  add_refused(s, 1, memfd("rdev-r-allow", 4096, 1, 0), 4096, RDEV_INVALID_PARAM, "not a memfd sealed");
  add_refused(s, 1, memfd("rdev-r-grow", 4096, 1, F_SEAL_GROW), 4096, RDEV_INVALID_PARAM, "not a memfd sealed");
  ck_assert_int_eq(count_maps("rdev-r-grow"), 0); /* refused before it was mapped */
  /* F_SEAL_SHRINK alone (no F_SEAL_GROW) is enough: it is taken and mapped */
  const char *why;
  ck_assert_int_eq(srv_region_add(s, 1, memfd("rdev-r-ok", 4096, 1, F_SEAL_SHRINK), 4096, &why), RDEV_OK);
  ck_assert_int_eq(count_maps("rdev-r-ok"), 1);
  srv_session_close_local(s);
  ck_assert_int_eq(count_maps("rdev-r-ok"), 0);
}
END_TEST

START_TEST(test_file_with_holes_or_write_seal_refused) {
  srv_session_t *s = open_session();
  /* a hole inside the region: mapping it would make rdevd allocate */
  int fd = memfd("rdev-r-hole", 16384, 1, 0);
  ck_assert_int_eq(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8192, 4096), 0);
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
  int again = dup(fd);
  add_refused(s, 1, fd, 16384, RDEV_INVALID_PARAM, "not all there");
  ck_assert_int_eq(count_maps("rdev-r-hole"), 0);
  /* a region that ends before the hole is all there */
  const char *why;
  ck_assert_int_eq(srv_region_add(s, 2, again, 8192, &why), RDEV_OK);
  /* sealed against writing: rdevd could not copy into it */
  add_refused(s, 3, memfd("rdev-r-ro", 4096, 1, F_SEAL_SHRINK | F_SEAL_WRITE), 4096, RDEV_INVALID_PARAM,
              "sealed against writing");
  ck_assert_int_eq(count_maps("rdev-r-ro"), 0);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_file_smaller_than_region_refused) {
  srv_session_t *s = open_session();
  int seals = F_SEAL_SHRINK | F_SEAL_GROW;
  add_refused(s, 1, memfd("rdev-r-small", 4096, 1, seals), 8192, RDEV_INVALID_PARAM, "smaller than the region");
  add_refused(s, 1, memfd("rdev-r-small", 4095, 1, seals), 4096, RDEV_INVALID_PARAM, "smaller than the region");
  add_refused(s, 1, memfd("rdev-r-small", 0, 1, seals), 1, RDEV_INVALID_PARAM, "smaller than the region");
  ck_assert_int_eq(count_maps("rdev-r-small"), 0);
  /* a file larger than the region is fine: the region is its start */
  const char *why;
  ck_assert_int_eq(srv_region_add(s, 1, memfd("rdev-r-large", 8192, 1, seals), 4096, &why), RDEV_OK);
  uint8_t *h;
  srv_region_t *r = srv_region_get(s, 1, 0, 4096, &h);
  ck_assert_ptr_nonnull(r);
  srv_region_put(r);
  ck_assert_ptr_null(srv_region_get(s, 1, 0, 4097, &h));
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_id_zero_and_sizes_refused) {
  srv_session_t *s = open_session();
  int seals = F_SEAL_SHRINK | F_SEAL_GROW;
  add_refused(s, 0, memfd("rdev-r-id0", 4096, 1, seals), 4096, RDEV_INVALID_PARAM, "region id 0");
  add_refused(s, 1, memfd("rdev-r-size0", 4096, 1, seals), 0, RDEV_INVALID_PARAM, "size 0 or over the limit");
  /* a sparse file big enough, so that only the limit refuses it */
  uint64_t over = RDEV_WIRE_MAX_REGION_BYTES + 1;
  add_refused(s, 1, memfd("rdev-r-huge", over, 1, seals), over, RDEV_INVALID_PARAM, "size 0 or over the limit");
  add_refused(s, 1, memfd("rdev-r-huge", 4096, 1, seals), UINT64_MAX, RDEV_INVALID_PARAM, "size 0 or over the limit");
  ck_assert_int_eq(count_maps("rdev-r-huge"), 0);
  uint8_t *h;
  ck_assert_ptr_null(srv_region_get(s, 0, 0, 0, &h));
  ck_assert_ptr_null(srv_region_get(s, 1, 0, 0, &h));
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_duplicate_id_refused_and_original_kept) {
  srv_session_t *s = open_session();
  uint8_t *map = region_new(s, "rdev-r-first", 7, 4096);
  memset(map, 0x5a, 4096);
  add_refused(s, 7, memfd("rdev-r-second", 8192, 1, F_SEAL_SHRINK), 8192, RDEV_INVALID_PARAM, "region id in use");
  ck_assert_int_eq(await_maps("rdev-r-second", 0), 0); /* the refused one's mapping went */
  /* id 7 is still the first file: 4096 bytes of 0x5a */
  uint8_t *h;
  ck_assert_ptr_null(srv_region_get(s, 7, 0, 4097, &h));
  srv_region_t *r = srv_region_get(s, 7, 0, 4096, &h);
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_ne(h, map); /* the server's own mapping... */
  ck_assert_uint_eq(h[0], 0x5a);
  ck_assert_uint_eq(h[4095], 0x5a);
  map[100] = 0xa5; /* ...of the same memory */
  ck_assert_uint_eq(h[100], 0xa5);
  srv_region_put(r);
  munmap(map, 4096);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_region_count_limit) {
  srv_session_t *s = open_session();
  const char *why;
  for (uint32_t id = 1; id <= RDEV_WIRE_MAX_REGIONS; id++) {
    int fd = memfd("rdev-r-many", 4096, 1, F_SEAL_SHRINK);
    int rc = srv_region_add(s, id, fd, 4096, &why);
    ck_assert_msg(rc == RDEV_OK, "region %u of %d refused: %s", id, RDEV_WIRE_MAX_REGIONS, why);
    ck_assert(is_closed(fd));
  }
  ck_assert_int_eq(count_maps("rdev-r-many"), RDEV_WIRE_MAX_REGIONS);
  add_refused(s, RDEV_WIRE_MAX_REGIONS + 1, memfd("rdev-r-many", 4096, 1, F_SEAL_SHRINK), 4096, RDEV_INVALID_PARAM,
              "at their limit");
  ck_assert_int_eq(count_maps("rdev-r-many"), RDEV_WIRE_MAX_REGIONS);
  /* one gone, one more fits */
  srv_region_remove(s, 3);
  ck_assert_int_eq(count_maps("rdev-r-many"), RDEV_WIRE_MAX_REGIONS - 1);
  ck_assert_int_eq(srv_region_add(s, 1000, memfd("rdev-r-many", 4096, 1, F_SEAL_SHRINK), 4096, &why), RDEV_OK);
  add_refused(s, 1001, memfd("rdev-r-many", 4096, 1, F_SEAL_SHRINK), 4096, RDEV_INVALID_PARAM, "at their limit");
  srv_session_close_local(s);
  ck_assert_int_eq(count_maps("rdev-r-many"), 0);
}
END_TEST

START_TEST(test_released_session_refuses) {
  srv_session_t *s = open_session();
  uint8_t *map = region_new(s, "rdev-r-before", 1, 4096);
  munmap(map, 4096);
  ck_assert_int_eq(count_maps("rdev-r-before"), 1);
  srv_session_release(s); /* as a client's close does, before the session is freed */
  ck_assert_int_eq(count_maps("rdev-r-before"), 0);
  add_refused(s, 2, memfd("rdev-r-after", 4096, 1, F_SEAL_SHRINK), 4096, RDEV_INVALID_PARAM, "the session ends");
  ck_assert_int_eq(count_maps("rdev-r-after"), 0);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_get_bounds_and_references) {
  srv_session_t *s = open_session();
  const size_t size = 8192;
  uint8_t *map = region_new(s, "rdev-r-get", 9, size);
  for (size_t i = 0; i < size; i++) map[i] = (uint8_t)(i * 7);
  uint8_t *h = NULL;
  srv_region_t *r;
  /* inside, to the very end, and empty at the end */
  ck_assert_ptr_nonnull(r = srv_region_get(s, 9, 100, 200, &h));
  ck_assert_uint_eq(h[0], (uint8_t)(100 * 7));
  srv_region_put(r);
  ck_assert_ptr_nonnull(r = srv_region_get(s, 9, 0, size, &h));
  srv_region_put(r);
  ck_assert_ptr_nonnull(r = srv_region_get(s, 9, size, 0, &h));
  srv_region_put(r);
  /* past the end, and sums that wrap */
  ck_assert_ptr_null(srv_region_get(s, 9, size, 1, &h));
  ck_assert_ptr_null(srv_region_get(s, 9, size + 1, 0, &h));
  ck_assert_ptr_null(srv_region_get(s, 9, 1, size, &h));
  ck_assert_ptr_null(srv_region_get(s, 9, UINT64_MAX, 2, &h));
  ck_assert_ptr_null(srv_region_get(s, 9, 16, UINT64_MAX - 8, &h));
  ck_assert_ptr_null(srv_region_get(s, 9, UINT64_MAX - 15, 64, &h));
  ck_assert_ptr_null(srv_region_get(s, 10, 0, 0, &h));
  /* a reference keeps the mapping after the region is removed */
  ck_assert_ptr_nonnull(r = srv_region_get(s, 9, 4096, 16, &h));
  srv_region_remove(s, 9);
  srv_region_remove(s, 9);   /* twice: nothing */
  srv_region_remove(s, 123); /* never was: nothing */
  ck_assert_ptr_null(srv_region_get(s, 9, 0, 0, &h));
  ck_assert_int_eq(count_maps("rdev-r-get"), 2); /* the test's and the server's */
  map[4096] = 0xee;
  ck_assert_uint_eq(h[0], 0xee);
  srv_region_put(r);
  ck_assert_int_eq(count_maps("rdev-r-get"), 1);
  /* the id can be used again */
  const char *why;
  ck_assert_int_eq(srv_region_add(s, 9, memfd("rdev-r-get2", 4096, 1, F_SEAL_SHRINK), 4096, &why), RDEV_OK);
  munmap(map, size);
  srv_session_close_local(s);
  ck_assert_int_eq(count_maps("rdev-r-get2"), 0);
}
END_TEST

/* ---- 2. copies -------------------------------------------------------------------- */

START_TEST(test_sync_write_then_read_byte_for_byte) {
  seed_rng();
  srv_session_t *s = open_session();
  const size_t rsize = 512 * KIB, bsize = 200 * KIB, n = 150 * KIB + 13;
  uint8_t *map = region_new(s, "rdev-r-copy", 42, rsize);
  uint64_t buf = dev_malloc(s, bsize);
  fill_random(map, rsize);
  uint8_t *before = malloc(rsize);
  memcpy(before, map, rsize);
  /* n bytes from region offset 7 to the buffer at offset 3 */
  got_t g = reply_to(write_region(s, 0, buf + 3, 42, 7, n));
  ck_assert_msg(g.status == RDEV_OK, "write from the region: %d %s", g.status, g.message);
  ck_assert_uint_eq(g.data_len, 0);
  ASSERT_SAME(map, before, rsize); /* a Write does not touch the region */
  /* the device holds them: a plain Read says so */
  uint8_t *back = malloc(bsize);
  read_bytes(s, buf, back, bsize);
  uint8_t zeros[3] = {0};
  ASSERT_SAME(back, zeros, 3);
  ASSERT_SAME(back + 3, map + 7, n);
  /* back into the region's far part, at an odd offset */
  const uint64_t off = 300 * KIB + 1;
  memset(map + off, 0xee, n);
  g = reply_to(read_region(s, 0, buf + 3, 42, off, n));
  ck_assert_msg(g.status == RDEV_OK, "read into the region: %d %s", g.status, g.message);
  ck_assert_uint_eq(g.data_len, 0); /* the bytes went to the region, not the reply */
  ck_assert(!g.bulk);
  ASSERT_SAME(map + off, before + 7, n);
  ASSERT_SAME(map, before, off); /* and nothing else changed */
  ASSERT_SAME(map + off + n, before + off + n, rsize - off - n);
  free(back);
  free(before);
  munmap(map, rsize);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_read_past_the_chunk_limit) {
  seed_rng();
  srv_session_t *s = open_session();
  const size_t n = 3 * MIB + 5;
  uint8_t *map = region_new(s, "rdev-r-big", 1, 2 * n);
  fill_random(map, n);
  memset(map + n, 0, n);
  uint64_t buf = dev_malloc(s, n);
  ck_assert_int_gt(n, RDEV_WIRE_MAX_CHUNK);
  ck_assert_int_eq(status_of(write_region(s, 0, buf, 1, 0, n)), RDEV_OK);
  got_t g = reply_to(read_region(s, 0, buf, 1, n, n));
  ck_assert_msg(g.status == RDEV_OK, "read of %zu bytes into a region: %d %s", n, g.status, g.message);
  ASSERT_SAME(map + n, map, n);
  munmap(map, 2 * n);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_quiet_write_from_region) {
  seed_rng();
  srv_session_t *s = open_session();
  uint8_t *map = region_new(s, "rdev-r-quiet", 5, 4096);
  fill_random(map, 4096);
  uint64_t buf = dev_malloc(s, 4096);
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write = (rdev_v1_Write){.addr = buf, .dest_max = 4096, .quiet = true, .host_region = 5, .count = 4096};
  uint64_t quiet = send_req(s, &q, NULL, 0);
  uint8_t back[4096];
  read_bytes(s, buf, back, sizeof back); /* answered after the quiet one was handled */
  ck_assert(!answered(quiet));
  ASSERT_SAME(back, map, sizeof back);
  /* quiet and refused: answered */
  q.op.write.host_region = 6;
  ck_assert_int_eq(status_of(send_req(s, &q, NULL, 0)), RDEV_INVALID_PARAM);
  munmap(map, 4096);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_async_copies_on_a_stream) {
  seed_rng();
  srv_session_t *s = open_session();
  const size_t rsize = 256 * KIB, n = 64 * KIB + 1;
  uint8_t *map = region_new(s, "rdev-r-async", 3, rsize);
  fill_random(map, rsize);
  uint64_t buf = dev_malloc(s, 128 * KIB), st = stream_create(s);
  uint8_t *pattern = malloc(rsize);
  memcpy(pattern, map, rsize);
  /* async Write from the region, then async Read into another part of it */
  uint64_t w = write_region(s, st, buf + 1, 3, 11, n);
  uint64_t r = read_region(s, st, buf + 1, 3, 128 * KIB + 2, n);
  got_t g = reply_to(stream_sync(s, st));
  ck_assert_msg(g.status == RDEV_OK, "stream sync: %d %s", g.status, g.message);
  ck_assert_msg(!answered(w) && !answered(r), "async region copies that worked were answered");
  ASSERT_SAME(map + 128 * KIB + 2, pattern + 11, n);
  ASSERT_SAME(map, pattern, 128 * KIB + 2);
  uint8_t *back = malloc(n);
  read_bytes(s, buf + 1, back, n);
  ASSERT_SAME(back, pattern + 11, n);
  /* an async Read of what a sync Write put there */
  memset(map + 200 * KIB, 0, 8 * KIB);
  ck_assert_int_eq(status_of(write_region(s, 0, buf, 3, 0, 8 * KIB)), RDEV_OK);
  r = read_region(s, st, buf, 3, 200 * KIB, 8 * KIB);
  ck_assert_int_eq(status_of(stream_sync(s, st)), RDEV_OK);
  ck_assert(!answered(r));
  ASSERT_SAME(map + 200 * KIB, pattern, 8 * KIB);
  free(back);
  free(pattern);
  munmap(map, rsize);
  srv_session_close_local(s);
}
END_TEST

/* ---- 3. bad requests ------------------------------------------------------------ */

/* Request seq was refused with want and a message. */
static void refused(uint64_t seq, int want, const char *what) {
  got_t g = reply_to(seq);
  ck_assert_msg(g.status == want, "%s: status %d (%s), not %d", what, g.status, g.message, want);
  ck_assert_msg(g.message[0], "%s: refused without a message", what);
  ck_assert_uint_eq(g.data_len, 0);
}

START_TEST(test_bad_region_requests_refused) {
  seed_rng();
  srv_session_t *s = open_session();
  const size_t rsize = 4096;
  uint8_t *map = region_new(s, "rdev-r-bad", 1, rsize);
  fill_random(map, rsize);
  uint8_t *pattern = malloc(rsize);
  memcpy(pattern, map, rsize);
  uint64_t buf = dev_malloc(s, 2 * rsize), st = stream_create(s);
  struct {
    uint32_t region;
    uint64_t off, count;
    const char *what;
  } bad[] = {
      {2, 0, 16, "an unknown region"},
      {1, rsize + 1, 1, "an offset past the end"},
      {1, rsize, 1, "a byte at the end"},
      {1, UINT64_MAX - 15, 64, "an offset + count that wraps"},
      {1, UINT64_MAX - 2 * rsize + 2, 2 * rsize, "an offset + count that wraps to a small sum"},
      {1, 0, rsize + 1, "a count past the region"},
      {1, 100, rsize - 99, "a count past the region from an offset"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t count = bad[i].count; /* the device buffer holds it: only the region is wrong */
    for (int async = 0; async < 2; async++) {
      char what[160];
      snprintf(what, sizeof what, "%s write %s", async ? "async" : "sync", bad[i].what);
      refused(write_region(s, async ? st : 0, buf, bad[i].region, bad[i].off, count), RDEV_INVALID_PARAM, what);
      snprintf(what, sizeof what, "%s read %s", async ? "async" : "sync", bad[i].what);
      refused(read_region(s, async ? st : 0, buf, bad[i].region, bad[i].off, count), RDEV_INVALID_PARAM, what);
    }
  }
  /* a payload beside a region */
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write = (rdev_v1_Write){.addr = buf, .dest_max = 16, .host_region = 1, .count = 16};
  refused(send_req(s, &q, "0123456789abcdef", 16), RDEV_INVALID_PARAM, "a write with a region and data");
  q.op.write.stream = st;
  refused(send_req(s, &q, "0123456789abcdef", 16), RDEV_INVALID_PARAM, "an async write with a region and data");
  /* count over dest_max, and past the device buffer */
  q = (rdev_v1_Request)rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write = (rdev_v1_Write){.addr = buf, .dest_max = 15, .host_region = 1, .count = 16};
  refused(send_req(s, &q, NULL, 0), RDEV_RT_PARAM_INVALID, "a write from a region over dest_max");
  q = (rdev_v1_Request)rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_read_tag;
  q.op.read = (rdev_v1_Read){.addr = buf, .count = 16, .dest_max = 15, .host_region = 1};
  refused(send_req(s, &q, NULL, 0), RDEV_RT_PARAM_INVALID, "a read into a region over dest_max");
  refused(write_region(s, 0, buf + 2 * rsize - 8, 1, 0, 16), RDEV_INVALID_PARAM, "a write past the buffer");
  refused(read_region(s, 0, buf + 2 * rsize - 8, 1, 0, 16), RDEV_INVALID_PARAM, "a read past the buffer");
  refused(read_region(s, 0, 0x1000, 1, 0, 16), RDEV_INVALID_PARAM, "a read of no buffer");
  /* none of it changed the region or the device, and the stream is fine */
  ck_assert_int_eq(status_of(stream_sync(s, st)), RDEV_OK);
  ASSERT_SAME(map, pattern, rsize);
  uint8_t back[2 * 4096], zeros[2 * 4096] = {0};
  read_bytes(s, buf, back, sizeof back);
  ASSERT_SAME(back, zeros, sizeof back);
  /* the session serves on: a good copy each way, the second async */
  ck_assert_int_eq(status_of(write_region(s, 0, buf + rsize, 1, 0, rsize)), RDEV_OK);
  memset(map, 0, rsize);
  uint64_t r = read_region(s, st, buf + rsize, 1, 0, rsize);
  ck_assert_int_eq(status_of(stream_sync(s, st)), RDEV_OK);
  ck_assert(!answered(r));
  ASSERT_SAME(map, pattern, rsize);
  free(pattern);
  munmap(map, rsize);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_removed_region_is_unknown) {
  seed_rng();
  srv_session_t *s = open_session();
  uint8_t *map = region_new(s, "rdev-r-gone", 4, 4096);
  fill_random(map, 4096);
  uint8_t pattern[4096];
  memcpy(pattern, map, sizeof pattern);
  uint64_t buf = dev_malloc(s, 4096);
  ck_assert_int_eq(status_of(write_region(s, 0, buf, 4, 0, 4096)), RDEV_OK);
  munmap(map, 4096);
  ck_assert_int_eq(count_maps("rdev-r-gone"), 1);
  srv_region_remove(s, 4);
  ck_assert_int_eq(count_maps("rdev-r-gone"), 0); /* nothing held it: unmapped at once */
  refused(write_region(s, 0, buf, 4, 0, 16), RDEV_INVALID_PARAM, "a write from a removed region");
  refused(read_region(s, 0, buf, 4, 0, 16), RDEV_INVALID_PARAM, "a read into a removed region");
  /* the device kept what was copied */
  uint8_t back[4096];
  read_bytes(s, buf, back, sizeof back);
  ASSERT_SAME(back, pattern, sizeof back);
  srv_session_close_local(s);
}
END_TEST

START_TEST(test_copy_queued_before_remove_completes) {
  seed_rng();
  srv_session_t *s = open_session();
  const size_t n = 64 * KIB;
  uint8_t *map = region_new(s, "rdev-r-queued", 8, 2 * n);
  memset(map, 0x11, 2 * n);
  uint64_t buf = dev_malloc(s, 2 * n), st = stream_create(s);
  /* the stream waits in a blocking host function... */
  uint64_t hf = host_func_block(s, st);
  ck_assert_int_eq(status_of(hf), RDEV_OK); /* the stream reached it: it holds there */
  /* ...while a copy each way queues behind it, and the region goes */
  uint64_t w = write_region(s, st, buf, 8, 0, n);
  uint64_t r = read_region(s, st, buf + n, 8, n, n);
  srv_region_remove(s, 8);
  refused(write_region(s, 0, buf, 8, 0, 16), RDEV_INVALID_PARAM, "a write from the removed region");
  refused(read_region(s, st, buf, 8, 0, 16), RDEV_INVALID_PARAM, "an async read into the removed region");
  ck_assert_int_eq(count_maps("rdev-r-queued"), 2); /* the queued copies hold the server's mapping */
  /* what the copy takes is what the memory holds when the stream gets there */
  uint8_t *pattern = malloc(2 * n);
  fill_random(pattern, 2 * n);
  memcpy(map, pattern, 2 * n);
  write_bytes(s, buf + n, pattern + n, n); /* what the Read brings back: sync, not on the stream */
  memset(map + n, 0, n);
  ck_assert_int_eq(srv_host_func_done(&srv, srv.tenants, "", s->key, st, hf), 0);
  got_t g = reply_to(stream_sync(s, st));
  ck_assert_msg(g.status == RDEV_OK, "stream sync: %d %s", g.status, g.message);
  ck_assert(!answered(w) && !answered(r));
  ASSERT_SAME(map, pattern, 2 * n);
  uint8_t *back = malloc(n);
  read_bytes(s, buf, back, n);
  ASSERT_SAME(back, pattern, n);
  munmap(map, 2 * n);
  ck_assert_int_eq(await_maps("rdev-r-queued", 0), 0); /* the copies done, the last reference went */
  free(back);
  free(pattern);
  srv_session_close_local(s);
}
END_TEST

/* ---- 4. the end --------------------------------------------------------------- */

START_TEST(test_close_with_regions_gives_everything_back) {
  seed_rng();
  size_t free0 = dev_free();
  ck_assert_uint_eq(tenant_used(), 0);
  srv_session_t *s = open_session();
  const size_t n = 32 * KIB;
  uint64_t buf = dev_malloc(s, 4 * n), st = stream_create(s);
  ck_assert_uint_lt(dev_free(), free0);
  uint8_t *maps[3];
  for (uint32_t id = 1; id <= 3; id++) {
    maps[id - 1] = region_new(s, "rdev-r-end", id, 2 * n);
    fill_random(maps[id - 1], 2 * n);
  }
  ck_assert_int_eq(status_of(write_region(s, 0, buf, 1, 0, n)), RDEV_OK);
  ck_assert_int_eq(status_of(read_region(s, 0, buf, 2, n, n)), RDEV_OK);
  /* done copies on a stream, and copies stuck behind a blocking host function */
  read_region(s, st, buf, 3, 0, n);
  ck_assert_int_eq(status_of(stream_sync(s, st)), RDEV_OK);
  ck_assert_int_eq(status_of(host_func_block(s, st)), RDEV_OK);
  write_region(s, st, buf + n, 1, n, n);
  read_region(s, st, buf, 2, 0, n);
  srv_region_remove(s, 1); /* one held only by a queued copy */
  for (int i = 0; i < 3; i++) munmap(maps[i], 2 * n);
  ck_assert_int_eq(count_maps("rdev-r-end"), 3);
  srv_session_close_local(s); /* the host function never finishes */
  ck_assert_int_eq(await_maps("rdev-r-end", 0), 0);
  ck_assert_uint_eq(dev_free(), free0);
  ck_assert_uint_eq(tenant_used(), 0);
  pthread_mutex_lock(&srv.mu);
  int left = srv.nsessions;
  pthread_mutex_unlock(&srv.mu);
  ck_assert_int_eq(left, 0);
}
END_TEST

START_TEST(test_many_sessions_each_with_regions) {
  size_t free0 = dev_free();
  for (int round = 0; round < 20; round++) {
    srv_session_t *s = open_session();
    uint64_t buf = dev_malloc(s, 4096);
    for (uint32_t id = 1; id <= 4; id++) {
      uint8_t *map = region_new(s, "rdev-r-churn", id, 4096);
      munmap(map, 4096);
    }
    ck_assert_int_eq(status_of(write_region(s, 0, buf, 2, 0, 4096)), RDEV_OK);
    srv_session_close_local(s);
    ck_assert_int_eq(count_maps("rdev-r-churn"), 0);
  }
  ck_assert_uint_eq(dev_free(), free0);
  ck_assert_uint_eq(tenant_used(), 0);
}
END_TEST

/* ---- the suites --------------------------------------------------------------- */

static TCase *tcase(const char *name) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  return tc;
}

static Suite *regions_suite(void) {
  Suite *s = suite_create("regions");
  TCase *tc = tcase("registration");
  tcase_add_test(tc, test_regular_file_refused);
  tcase_add_test(tc, test_memfd_without_shrink_seal_refused);
  tcase_add_test(tc, test_file_smaller_than_region_refused);
  tcase_add_test(tc, test_file_with_holes_or_write_seal_refused);
  tcase_add_test(tc, test_id_zero_and_sizes_refused);
  tcase_add_test(tc, test_duplicate_id_refused_and_original_kept);
  tcase_add_test(tc, test_region_count_limit);
  tcase_add_test(tc, test_released_session_refuses);
  tcase_add_test(tc, test_get_bounds_and_references);
  suite_add_tcase(s, tc);
  tc = tcase("copies");
  tcase_add_test(tc, test_sync_write_then_read_byte_for_byte);
  tcase_add_test(tc, test_read_past_the_chunk_limit);
  tcase_add_test(tc, test_quiet_write_from_region);
  tcase_add_test(tc, test_async_copies_on_a_stream);
  suite_add_tcase(s, tc);
  tc = tcase("bad requests");
  tcase_add_test(tc, test_bad_region_requests_refused);
  tcase_add_test(tc, test_removed_region_is_unknown);
  tcase_add_test(tc, test_copy_queued_before_remove_completes);
  suite_add_tcase(s, tc);
  tc = tcase("the end");
  tcase_add_test(tc, test_close_with_regions_gives_everything_back);
  tcase_add_test(tc, test_many_sessions_each_with_regions);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(regions_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
