/*
 * tests/integration/test_bulk.c — the bulk connection (rdev/wire.h): large
 * copies both ways, sync and async, on several streams and mixed with
 * small in-band ones, land byte for byte through it (also after Writes
 * rdevd refused); a server without one
 * (--bulk-listen off) gives the same bytes in-band; and what strangers
 * send to the bulk port (garbage, short hellos, wrong keys, idle
 * connections) is refused while the server and its sessions keep serving.
 * On a unix socket the connection attaches during the open and
 * rdev_malloc_host memory is shared with rdevd: copies from and into it,
 * sync and async, at interior offsets, land byte for byte; other host
 * memory goes through frames; the socket goes with the server.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "fixture.h"
#include "rdev/wire.h"

/* Waits up to 5 s for s's bulk connection; whether it attached. */
static int wait_bulk(rdev_session_t *s) {
  double until = fx_now() + 5;
  while (!rdev_session_bulk(s) && fx_now() < until) fx_sleep_ms(5);
  return rdev_session_bulk(s);
}

/* A port no one listens on now (the kernel's pick, released). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &l), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* A connection to 127.0.0.1:port (reads time out after 3 s), or -1. */
static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {
      .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {.tv_sec = 6};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* What the server does with a connection that sent what it sent: 0 when
 * it closed it without a byte, 1 when it answered with the magic, -1 when
 * nothing happened for 6 s (idle connections may hold every hello slot for
 * their 2 s first). */
static int server_answer(int fd) {
  char b[RDEV_WIRE_BULK_ANSWER];
  ssize_t n = recv(fd, b, sizeof b, MSG_WAITALL);
  if (n == 0) return 0;
  if (n == (ssize_t)sizeof b && !memcmp(b, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN)) return 1;
  return -1;
}

/* H2D of size random bytes (seed) into a new device buffer; the bytes in *host. */
static void *device_random(rdev_session_t *s, size_t size, uint64_t seed, uint8_t **host) {
  void *dev = NULL;
  *host = fx_xmalloc(size);
  fx_fill_random(*host, size, seed);
  FX_OK(rdev_malloc(s, &dev, size, RDEV_MEM_MALLOC_HUGE_FIRST));
  FX_OK(rdev_memcpy(s, dev, size, *host, size, RDEV_MEMCPY_HOST_TO_DEVICE));
  return dev;
}

/* Sync and async D2H of every size in sizes (at offset off) against want,
 * into memory just malloc'd, on two streams at once, with small reads
 * between the large ones. */
static void check_reads(rdev_session_t *s, uint8_t *dev, const uint8_t *want, size_t cap) {
  static const size_t sizes[] = {128 << 10, FX_MiB, FX_MiB + 1, 5 * FX_MiB + 3, 12 * FX_MiB};
  static const size_t offs[] = {0, 4097};
  rdev_stream_t *a = NULL, *b = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++) {
      size_t n = sizes[i], off = offs[k];
      if (off + n > cap) continue;
      uint8_t *sync = fx_xmalloc(n), *x = fx_xmalloc(n), *y = fx_xmalloc(n), small[100];
      FX_OK(rdev_memcpy(s, sync, n, dev + off, n, RDEV_MEMCPY_DEVICE_TO_HOST));
      FX_ASSERT_BYTES(sync, want + off, n, "sync D2H of %zu at %zu", n, off);
      FX_OK(rdev_memcpy_async(s, x, n, dev + off, n, RDEV_MEMCPY_DEVICE_TO_HOST, a));
      FX_OK(rdev_memcpy(s, small, sizeof small, dev + off + 1, sizeof small, RDEV_MEMCPY_DEVICE_TO_HOST));
      FX_OK(rdev_memcpy_async(s, y, n, dev + cap - n - off, n, RDEV_MEMCPY_DEVICE_TO_HOST, b));
      FX_ASSERT_BYTES(small, want + off + 1, sizeof small, "small sync D2H between async ones");
      FX_OK(rdev_stream_synchronize(a));
      FX_ASSERT_BYTES(x, want + off, n, "async D2H of %zu at %zu", n, off);
      FX_OK(rdev_stream_synchronize(b));
      FX_ASSERT_BYTES(y, want + cap - n - off, n, "async D2H of %zu at the end less %zu", n, off);
      free(sync);
      free(x);
      free(y);
    }
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
}

#define CAP (24 * FX_MiB)

START_TEST(test_bulk_reads_byte_for_byte) {
  rdev_session_t *s = fx_open();
  ck_assert_msg(wait_bulk(s), "the bulk connection did not attach");
  uint8_t *want;
  uint8_t *dev = device_random(s, CAP, 31, &want);
  check_reads(s, dev, want, CAP);
  ck_assert_msg(rdev_session_bulk(s), "the bulk connection was lost");
  /* An async Read still queued when the session closes: nothing leaks,
   * nothing is written after close returned. */
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  uint8_t *late = fx_xmalloc(CAP);
  FX_OK(rdev_memcpy_async(s, late, CAP, dev, CAP, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  rdev_session_close(s);
  free(late);
  free(want);
}
END_TEST

/* Work queued behind async D2H copies on their stream changes the memory
 * they read (a memset, a kernel, an async H2D), round after round: each copy lands what the memory held before,
 * the changes land after, and nothing waits for long. rdevd keeps the
 * frames sent for the client's next connection (the session resumes): a
 * fence that waits for one has a copy take its place, never the client's
 * acknowledgement. */
START_TEST(test_bulk_reads_then_changes_behind_them) {
  rdev_session_t *s = fx_open();
  ck_assert_msg(wait_bulk(s), "the bulk connection did not attach");
  const size_t n = 4 * FX_MiB;
  uint8_t *want;
  uint8_t *dev = device_random(s, n, 41, &want);
  uint8_t *back = fx_xmalloc(n), *fill = fx_xmalloc(n);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  double t0 = fx_now();
  for (int round = 0; round < 24; round++) {
    memset(back, 0, n);
    for (size_t off = 0; off < n; off += FX_MiB)
      FX_OK(rdev_memcpy_async(s, back + off, FX_MiB, dev + off, FX_MiB, RDEV_MEMCPY_DEVICE_TO_HOST, st));
    int v = round & 0xff;
    if (round % 3 == 0) {
      FX_OK(rdev_memset_async(s, dev, n, v, n, st));
    } else if (round % 3 == 1) {
      rdev_arg_t args[1] = {{.type = RDEV_ARG_PTR, .v.ptr = dev}};
      FX_OK(rdev_launch(st, "inc_u32", 65535, args, 1)); /* the first 65535 words + 1 */
    } else {
      memset(fill, v, n);
      FX_OK(rdev_memcpy_async(s, dev, n, fill, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
    }
    FX_OK(rdev_stream_synchronize(st));
    FX_ASSERT_BYTES(back, want, n, "round %d: the async D2H before the change", round);
    if (round % 3 == 1) {
      for (size_t i = 0; i < 65535; i++) ((uint32_t *)want)[i] += 1;
    } else {
      memset(want, v, n);
    }
    FX_OK(rdev_memcpy(s, back, n, dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, want, n, "round %d: the change", round);
  }
  ck_assert_msg(fx_now() - t0 < 20, "24 rounds took %.1f s", fx_now() - t0);
  ck_assert_msg(rdev_session_bulk(s), "the bulk connection was lost");
  FX_OK(rdev_stream_destroy(st));
  rdev_session_close(s);
  free(want);
  free(back);
  free(fill);
}
END_TEST

/* Large H2D copies send their bytes on the bulk connection after their
 * Writes: sync and async, on two streams, between small in-band ones, and
 * after Writes rdevd refused (their bytes dropped, the next ones in order). */
START_TEST(test_bulk_writes_byte_for_byte) {
  rdev_session_t *s = fx_open();
  ck_assert_msg(wait_bulk(s), "the bulk connection did not attach");
  size_t cap = CAP;
  uint8_t *src = fx_xmalloc(cap), *back = fx_xmalloc(cap), *dev = NULL;
  fx_fill_random(src, cap, 51);
  FX_OK(rdev_malloc(s, (void **)&dev, cap, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *a = NULL, *b = NULL;
  FX_OK(rdev_stream_create(s, &a));
  FX_OK(rdev_stream_create(s, &b));
  static const size_t sizes[] = {128 << 10, FX_MiB + 1, 5 * FX_MiB + 3, 11 * FX_MiB};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i], half = cap / 2;
    memset(back, 0, cap);
    FX_OK(rdev_memset(s, dev, cap, 0, cap));
    FX_OK(rdev_memcpy(s, dev + 3, cap - 3, src + 1, n, RDEV_MEMCPY_HOST_TO_DEVICE));
    FX_OK(rdev_memcpy(s, back, cap, dev + 3, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, src + 1, n, "sync H2D of %zu", n);
    /* a Write rdevd refuses (no buffer of the session there): its bytes go, and are dropped */
    FX_EXPECT(rdev_memcpy(s, (void *)(uintptr_t)0x1000, n, src, n, RDEV_MEMCPY_HOST_TO_DEVICE), RDEV_INVALID_PARAM);
    FX_OK(rdev_memcpy_async(s, dev, half, src + 7, n, RDEV_MEMCPY_HOST_TO_DEVICE, a));
    FX_OK(rdev_memcpy(s, dev + half, 100, src, 100, RDEV_MEMCPY_HOST_TO_DEVICE)); /* small, in-band */
    FX_OK(rdev_memcpy_async(s, dev + half + 100, half - 100, src + 9, n, RDEV_MEMCPY_HOST_TO_DEVICE, b));
    FX_OK(rdev_stream_synchronize(a));
    FX_OK(rdev_stream_synchronize(b));
    FX_OK(rdev_memcpy(s, back, cap, dev, cap, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, src + 7, n, "async H2D of %zu on stream a", n);
    FX_ASSERT_BYTES(back + half, src, 100, "small H2D between");
    FX_ASSERT_BYTES(back + half + 100, src + 9, n, "async H2D of %zu on stream b", n);
  }
  ck_assert_msg(rdev_session_bulk(s), "the bulk connection was lost");
  FX_OK(rdev_stream_destroy(a));
  FX_OK(rdev_stream_destroy(b));
  rdev_session_close(s);
  free(src);
  free(back);
}
END_TEST

/* rdevd may take a bulk Write's bytes straight into device memory when
 * nothing else would touch it first (a synchronous Write, or a stream with
 * nothing queued): whichever way it goes, a bulk Write queued behind other
 * work on its stream lands after that work and before what follows it. */
START_TEST(test_bulk_writes_keep_stream_order) {
  rdev_session_t *s = fx_open();
  ck_assert_msg(wait_bulk(s), "the bulk connection did not attach");
  size_t cap = CAP, n = 5 * FX_MiB + 3, mid = n / 2;
  uint8_t *src = fx_xmalloc(n), *back = fx_xmalloc(cap), *dev = NULL;
  fx_fill_random(src, n, 77);
  FX_OK(rdev_malloc(s, (void **)&dev, cap, RDEV_MEM_MALLOC_HUGE_FIRST));
  rdev_stream_t *a = NULL;
  FX_OK(rdev_stream_create(s, &a));
  for (int round = 0; round < 8; round++) {
    int before = 0x10 + round, after = 0x80 + round;
    for (int k = 0; k < 4; k++) FX_OK(rdev_memset_async(s, dev, cap, before, cap, a)); /* busy for a while */
    FX_OK(rdev_memcpy_async(s, dev + 1, cap - 1, src, n, RDEV_MEMCPY_HOST_TO_DEVICE, a));
    FX_OK(rdev_memset_async(s, dev + 1 + mid, 100, after, 100, a));
    FX_OK(rdev_stream_synchronize(a));
    FX_OK(rdev_memcpy(s, back, cap, dev, cap, RDEV_MEMCPY_DEVICE_TO_HOST));
    ck_assert_int_eq(back[0], before);
    FX_ASSERT_BYTES(back + 1, src, mid, "round %d: the bulk Write's first part", round);
    for (size_t i = 0; i < 100; i++) ck_assert_int_eq(back[1 + mid + i], after);
    FX_ASSERT_BYTES(back + 1 + mid + 100, src + mid + 100, n - mid - 100, "round %d: its last part", round);
    for (size_t i = 1 + n; i < cap; i += 4099) ck_assert_int_eq(back[i], before);
    /* the same synchronously, the stream idle: the bytes are the Write's */
    FX_OK(rdev_memcpy(s, dev + 2, cap - 2, src, n, RDEV_MEMCPY_HOST_TO_DEVICE));
    FX_OK(rdev_memcpy(s, back, n, dev + 2, n, RDEV_MEMCPY_DEVICE_TO_HOST));
    FX_ASSERT_BYTES(back, src, n, "round %d: sync H2D", round);
  }
  ck_assert_msg(rdev_session_bulk(s), "the bulk connection was lost");
  FX_OK(rdev_stream_destroy(a));
  rdev_session_close(s);
  free(src);
  free(back);
}
END_TEST

START_TEST(test_bulk_off_reads_in_band) {
  fx_server_t srv;
  char err[256];
  const char *const extra[] = {"--bulk-listen", "off", NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  fx_sleep_ms(200);
  ck_assert_int_eq(rdev_session_bulk(s), 0);
  uint8_t *want;
  uint8_t *dev = device_random(s, CAP, 32, &want);
  check_reads(s, dev, want, CAP);
  rdev_session_close(s);
  free(want);
  fx_server_stop(&srv);
}
END_TEST

START_TEST(test_bulk_port_refuses_strangers) {
  fx_server_t srv;
  char err[256], port[32];
  int p = free_port();
  snprintf(port, sizeof port, "127.0.0.1:%d", p);
  const char *const extra[] = {"--bulk-listen", port, NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  ck_assert_msg(wait_bulk(s), "the bulk connection did not attach");

  /* Idle connections past the hello slots: dropped after their time. */
  int idle[80];
  for (int i = 0; i < 80; i++) idle[i] = dial(p);
  /* Garbage, a short hello then EOF, older versions' hellos, the magic
   * with a key of the wrong kind: each closed without an answer. */
  static const char *bad[] = {
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n.............",
      "RDEVBLK1",
      "RDEVBLK1"
      "0123456789abcdef0123456789abcdef",
      "RDEVBLK2"
      "0123456789abcdef0123456789abcdef",
      "RDEVBLK3"
      "0123456789abcdef0123456789abcdef",
      RDEV_WIRE_BULK_MAGIC "0123456789abcdef0123456789abcdef",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int fd = dial(p);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(send(fd, bad[i], strlen(bad[i]), MSG_NOSIGNAL), (ssize_t)strlen(bad[i]));
    shutdown(fd, SHUT_WR);
    ck_assert_msg(server_answer(fd) == 0, "bad hello %zu was not refused", i);
    close(fd);
  }
  for (int i = 0; i < 80; i++)
    if (idle[i] >= 0) close(idle[i]);

  /* The server still serves: a second session attaches, the first still
   * reads byte for byte through its own connection. */
  rdev_session_t *s2 = fx_open_target(srv.target);
  ck_assert_msg(wait_bulk(s2), "a second session's bulk connection did not attach");
  uint8_t *want;
  uint8_t *dev = device_random(s, 8 * FX_MiB, 33, &want);
  uint8_t *back = fx_xmalloc(8 * FX_MiB);
  FX_OK(rdev_memcpy(s, back, 8 * FX_MiB, dev, 8 * FX_MiB, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(back, want, 8 * FX_MiB, "D2H after the strangers");
  ck_assert(rdev_session_bulk(s) && rdev_session_bulk(s2));
  rdev_session_close(s2);
  rdev_session_close(s);
  free(back);
  free(want);
  fx_server_stop(&srv);
}
END_TEST

START_TEST(test_bulk_same_host_shares_host_memory) {
  char dir[] = "/tmp/rdev-bulk-XXXXXX", listen[96], sock[96];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(sock, sizeof sock, "%s/rdevd.sock.bulk", dir);
  snprintf(listen, sizeof listen, "unix:%s/rdevd.sock", dir);
  fx_server_t srv;
  char err[256];
  const char *const extra[] = {"--listen", listen, NULL};
  ck_assert_msg(fx_server_start(&srv, extra, err, sizeof err) == 0, "cannot start rdevd: %s", err);
  rdev_session_t *s = fx_open_target(srv.target);
  ck_assert_msg(rdev_session_bulk(s), "a unix socket's bulk connection is attached when the open returns");

  size_t n = 5 * FX_MiB + 3, cap = n + 8192;
  uint8_t *a = NULL, *b = NULL, *dev = NULL, *plain = fx_xmalloc(cap);
  FX_OK(rdev_malloc_host(s, (void **)&a, cap));
  FX_OK(rdev_malloc_host(s, (void **)&b, cap));
  FX_OK(rdev_malloc(s, (void **)&dev, cap, RDEV_MEM_MALLOC_HUGE_FIRST));
  fx_fill_random(a, cap, 41);
  rdev_stream_t *st = NULL;
  FX_OK(rdev_stream_create(s, &st));
  /* sync H2D from shared memory; D2H into plain memory (frames) and into shared memory */
  FX_OK(rdev_memcpy(s, dev, cap, a + 1, n, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, plain, cap, dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(plain, a + 1, n, "D2H into plain memory after an H2D from shared memory");
  memset(b, 0, cap);
  FX_OK(rdev_memcpy(s, b + 5, cap - 5, dev, n, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(b + 5, a + 1, n, "sync D2H into shared memory");
  for (size_t i = 0; i < 5; i++) ck_assert_uint_eq(b[i], 0);
  /* async both ways on a stream, at other offsets */
  memset(b, 0, cap);
  FX_OK(rdev_memcpy_async(s, b + 4097, cap - 4097, dev + 64, n - 64, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_memcpy_async(s, dev + 128, cap - 128, a + 7, n, RDEV_MEMCPY_HOST_TO_DEVICE, st));
  FX_OK(rdev_memcpy_async(s, b, 4097, dev + 128, 4097, RDEV_MEMCPY_DEVICE_TO_HOST, st));
  FX_OK(rdev_stream_synchronize(st));
  FX_ASSERT_BYTES(b + 4097, a + 1 + 64, n - 64, "async D2H into shared memory, ordered before the H2D");
  FX_ASSERT_BYTES(b, a + 7, 4097, "async D2H after an async H2D from shared memory");
  /* a device range past its allocation is refused, shared memory or not */
  FX_EXPECT(rdev_memcpy(s, b, cap, dev + 4096, cap, RDEV_MEMCPY_DEVICE_TO_HOST), RDEV_INVALID_PARAM);
  /* freed shared memory is forgotten: copies from other memory go on */
  FX_OK(rdev_free_host(s, a));
  fx_fill_random(plain, cap, 42);
  FX_OK(rdev_memcpy(s, dev, cap, plain, cap, RDEV_MEMCPY_HOST_TO_DEVICE));
  FX_OK(rdev_memcpy(s, b, cap, dev, cap, RDEV_MEMCPY_DEVICE_TO_HOST));
  FX_ASSERT_BYTES(b, plain, cap, "round trip after a free_host");
  FX_OK(rdev_stream_destroy(st));
  FX_OK(rdev_free(s, dev));
  FX_OK(rdev_free_host(s, b));
  rdev_session_close(s);
  free(plain);
  struct stat sb;
  ck_assert_int_eq(stat(sock, &sb), 0); /* the bulk socket beside the session socket */
  fx_server_stop(&srv);
  ck_assert_msg(stat(sock, &sb) != 0, "rdevd left its bulk socket behind");
  char path[128];
  snprintf(path, sizeof path, "%s/rdevd.sock", dir);
  unlink(path);
  ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

Suite *suite_bulk(void) {
  Suite *su = suite_create("bulk");
  TCase *tc = fx_tcase("bulk");
  tcase_add_test(tc, test_bulk_reads_byte_for_byte);
  tcase_add_test(tc, test_bulk_reads_then_changes_behind_them);
  tcase_add_test(tc, test_bulk_writes_byte_for_byte);
  tcase_add_test(tc, test_bulk_writes_keep_stream_order);
  tcase_add_test(tc, test_bulk_off_reads_in_band);
  tcase_add_test(tc, test_bulk_port_refuses_strangers);
  tcase_add_test(tc, test_bulk_same_host_shares_host_memory);
  suite_add_tcase(su, tc);
  return su;
}
