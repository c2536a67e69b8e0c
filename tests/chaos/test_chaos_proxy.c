/*
 * tests/chaos/test_chaos_proxy.c — Check tests of the chaos proxy itself
 * (chaos_proxy.h), against an upstream of its own on loopback: bytes
 * forwarded byte for byte under delay and throttle, a cut closing both
 * sides (FIN and RST) and refusing for a while, a stall holding bytes and
 * releasing them in order, the throttle's rate, a random cut at its byte
 * count, two routes, and the counters. ctest: chaos_proxy.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "chaos_proxy.h"

#define MiB (1u << 20)

/* CLOCK_MONOTONIC in seconds. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n bytes of a pattern of seed into p. */
static void fill(uint8_t *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (uint8_t)(seed >> 56);
  }
}

/* ---- an upstream: a listener on 127.0.0.1:0 whose connections the test takes ---- */

typedef struct {
  int lfd;
  char addr[64];
} upstream_t;

/* A listener on 127.0.0.1, its address in u->addr. */
static void upstream_open(upstream_t *u) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  u->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(u->lfd, 0);
  ck_assert_int_eq(bind(u->lfd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(u->lfd, 16), 0);
  ck_assert_int_eq(getsockname(u->lfd, (struct sockaddr *)&a, &al), 0);
  snprintf(u->addr, sizeof u->addr, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
}

/* The next connection the proxy made to u (within 10 s). */
static int upstream_accept(upstream_t *u) {
  struct pollfd pf = {.fd = u->lfd, .events = POLLIN};
  ck_assert_msg(poll(&pf, 1, 10000) == 1, "the proxy made no upstream connection within 10 s");
  int fd = accept4(u->lfd, NULL, NULL, SOCK_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  return fd;
}

/* A client connection to addr ("HOST:PORT"). */
static int dial(const char *addr) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  char host[64];
  const char *colon = strrchr(addr, ':');
  memcpy(host, addr, (size_t)(colon - addr));
  host[colon - addr] = '\0';
  inet_pton(AF_INET, host, &a.sin_addr);
  a.sin_port = htons((uint16_t)atoi(colon + 1));
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_msg(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect %s: %s", addr, strerror(errno));
  return fd;
}

/* A proxy with one route to u; its address in addr. */
static chaos_proxy_t *proxy_to(upstream_t *u, char *addr, size_t len) {
  char err[128];
  chaos_proxy_t *p = chaos_proxy_new();
  ck_assert_ptr_nonnull(p);
  ck_assert_msg(chaos_proxy_listen(p, "127.0.0.1:0", u->addr, addr, len, err, sizeof err) == 0, "%s", err);
  return p;
}

/* Reads exactly n bytes from fd into buf within timeout_s: 0, or -1 at
 * an end of stream, an error or the time (*got: bytes read). */
static int read_n(int fd, uint8_t *buf, size_t n, double timeout_s, size_t *got) {
  size_t off = 0;
  double end = now_s() + timeout_s;
  int rc = 0;
  while (off < n) {
    int left = (int)((end - now_s()) * 1000);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&pf, 1, left) != 1) {
      rc = -1;
      break;
    }
    ssize_t r = recv(fd, buf + off, n - off, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      rc = -1;
      break;
    }
    off += (size_t)r;
  }
  if (got) *got = off;
  return rc;
}

/* What the next read of fd says within timeout_s: bytes (>0), 0 for an
 * end of stream, -errno for an error, -ETIMEDOUT when nothing came. */
static ssize_t next_read(int fd, double timeout_s) {
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  if (poll(&pf, 1, (int)(timeout_s * 1000)) != 1) return -ETIMEDOUT;
  char b[4096];
  ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
  return r < 0 ? -errno : r;
}

/* Reads fd until its end or an error, within timeout_s: how many bytes
 * came (into buf, up to cap); *how: 0 an end of stream, else -errno. */
static size_t read_to_end(int fd, uint8_t *buf, size_t cap, double timeout_s, int *how) {
  size_t off = 0;
  double end = now_s() + timeout_s;
  uint8_t sink[65536];
  for (;;) {
    int left = (int)((end - now_s()) * 1000);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (left <= 0 || poll(&pf, 1, left) != 1) {
      *how = -ETIMEDOUT;
      return off;
    }
    uint8_t *dst = off < cap ? buf + off : sink;
    size_t room = off < cap ? cap - off : sizeof sink;
    ssize_t r = recv(fd, dst, room, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      *how = r == 0 ? 0 : -errno;
      return off;
    }
    off += (size_t)r;
  }
}

typedef struct {
  int fd;
  const uint8_t *data;
  size_t n;
} writer_t;

/* Sends w->n bytes, until done or the connection fails. */
static void *writer_main(void *arg) {
  writer_t *w = arg;
  size_t off = 0;
  while (off < w->n) {
    ssize_t s = send(w->fd, w->data + off, w->n - off, MSG_NOSIGNAL);
    if (s < 0 && errno == EINTR) continue;
    if (s <= 0) break;
    off += (size_t)s;
  }
  return NULL;
}

/* Sends n bytes through fd on a thread of its own (the other side reads). */
static pthread_t write_async(writer_t *w) {
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, writer_main, w), 0);
  return t;
}

/* chaos_proxy_wait predicates: bytes both ways at least *arg; live exactly *arg. */
static int bytes_at_least(const chaos_counters_t *c, void *arg) {
  return c->bytes_up + c->bytes_down >= *(uint64_t *)arg;
}

static int live_is(const chaos_counters_t *c, void *arg) { return c->live == *(uint64_t *)arg; }

/* ---- the tests ---------------------------------------------------------------------- */

/* 2 MiB each way at once, through a delay and a throttle: every byte
 * arrives, in order; the counters say so. */
START_TEST(test_forwards_byte_for_byte) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  chaos_proxy_delay(p, 2000);
  chaos_proxy_throttle(p, 16 * MiB);
  int c = dial(addr), s = upstream_accept(&u);
  size_t n = 2 * MiB;
  uint8_t *up = malloc(n), *down = malloc(n), *got_up = malloc(n), *got_down = malloc(n);
  fill(up, n, 1);
  fill(down, n, 2);
  writer_t wu = {c, up, n}, wd = {s, down, n};
  pthread_t tu = write_async(&wu), td = write_async(&wd);
  ck_assert_int_eq(read_n(s, got_up, n, 30, NULL), 0);
  ck_assert_int_eq(read_n(c, got_down, n, 30, NULL), 0);
  pthread_join(tu, NULL);
  pthread_join(td, NULL);
  ck_assert_msg(memcmp(up, got_up, n) == 0, "client -> upstream bytes differ");
  ck_assert_msg(memcmp(down, got_down, n) == 0, "upstream -> client bytes differ");
  /* a half-close travels too: the upstream reads the end, then answers */
  shutdown(c, SHUT_WR);
  ck_assert_int_eq(next_read(s, 10), 0);
  ck_assert_int_eq(send(s, "x", 1, MSG_NOSIGNAL), 1);
  ck_assert_int_eq(next_read(c, 10), 1);
  chaos_counters_t k = chaos_proxy_counters(p, CHAOS_ALL_ROUTES);
  ck_assert_uint_eq(k.accepted, 1);
  ck_assert_uint_eq(k.bytes_up, n);
  ck_assert_uint_eq(k.bytes_down, n + 1);
  ck_assert_uint_eq(k.live, 1);
  close(s);
  ck_assert_int_eq(next_read(c, 10), 0);
  uint64_t zero = 0;
  ck_assert_int_eq(chaos_proxy_wait(p, CHAOS_ALL_ROUTES, live_is, &zero, 10000), 0); /* both ended: gone */
  close(c);
  chaos_proxy_free(p);
  free(up), free(down), free(got_up), free(got_down);
  close(u.lfd);
}
END_TEST

/* The delay: a byte leaves no earlier than its time. */
START_TEST(test_delay) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  chaos_proxy_delay(p, 100000);
  int c = dial(addr), s = upstream_accept(&u);
  uint8_t b[4];
  double t0 = now_s();
  ck_assert_int_eq(send(c, "ping", 4, 0), 4);
  ck_assert_int_eq(read_n(s, b, 4, 10, NULL), 0);
  ck_assert_int_eq(send(s, "pong", 4, 0), 4);
  ck_assert_int_eq(read_n(c, b, 4, 10, NULL), 0);
  double rtt = now_s() - t0;
  ck_assert_msg(memcmp(b, "pong", 4) == 0, "wrong answer");
  ck_assert_msg(rtt >= 0.199, "round trip %.3f s through a 100 ms each way delay", rtt);
  close(c), close(s);
  chaos_proxy_free(p);
  close(u.lfd);
}
END_TEST

/* A cut with FIN: both sides read an end of stream; with RST both get a
 * reset; the counters count them, and new connections work again. */
START_TEST(test_cut_closes_both_sides) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  int c = dial(addr), s = upstream_accept(&u);
  ck_assert_int_eq(send(c, "a", 1, 0), 1);
  ck_assert_int_eq(next_read(s, 10), 1);
  ck_assert_int_eq(chaos_proxy_cut(p, CHAOS_ALL_ROUTES, CHAOS_FIN, 0), 1);
  ck_assert_int_eq(next_read(c, 10), 0);
  ck_assert_int_eq(next_read(s, 10), 0);
  close(c), close(s);

  c = dial(addr), s = upstream_accept(&u);
  ck_assert_int_eq(chaos_proxy_cut(p, CHAOS_ALL_ROUTES, CHAOS_RST, 0), 1);
  ck_assert_int_eq(next_read(c, 10), -ECONNRESET);
  ck_assert_int_eq(next_read(s, 10), -ECONNRESET);
  close(c), close(s);

  chaos_counters_t k = chaos_proxy_counters(p, 0);
  ck_assert_uint_eq(k.cuts, 2);
  ck_assert_uint_eq(k.accepted, 2);
  ck_assert_uint_eq(k.live, 0);
  ck_assert_int_eq(chaos_proxy_cut(p, 0, CHAOS_FIN, 0), 0); /* nothing to cut */
  chaos_proxy_free(p);
  close(u.lfd);
}
END_TEST

/* A cut that refuses for a while: connections made meanwhile are closed
 * at once and never reach the upstream; after it they are carried. */
START_TEST(test_cut_refuses_for_a_while) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  chaos_proxy_cut(p, CHAOS_ALL_ROUTES, CHAOS_RST, 60000);
  int c = dial(addr);
  ssize_t r = next_read(c, 10);
  ck_assert_msg(r == -ECONNRESET, "a connection while refusing read %zd", r);
  close(c);
  struct pollfd pf = {.fd = u.lfd, .events = POLLIN};
  ck_assert_int_eq(poll(&pf, 1, 0), 0); /* nothing reached the upstream */
  chaos_counters_t k = chaos_proxy_counters(p, CHAOS_ALL_ROUTES);
  ck_assert_uint_eq(k.refused, 1);
  ck_assert_uint_eq(k.accepted, 0);
  ck_assert_int_eq(chaos_proxy_cut(p, CHAOS_ALL_ROUTES, CHAOS_FIN, 0), 0); /* ends the refusal */
  c = dial(addr);
  int s = upstream_accept(&u);
  ck_assert_int_eq(send(c, "b", 1, 0), 1);
  ck_assert_int_eq(next_read(s, 10), 1);
  close(c), close(s);
  chaos_proxy_free(p);
  close(u.lfd);
}
END_TEST

/* A stall: nothing moves, the connection stays; then every byte held
 * arrives, in order, and nothing was lost. */
START_TEST(test_stall_holds_and_releases_in_order) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  int c = dial(addr), s = upstream_accept(&u);
  size_t n = 256 * 1024;
  uint8_t *data = malloc(n), *got = malloc(n);
  fill(data, n, 3);
  double t0 = now_s();
  chaos_proxy_stall(p, 600);
  writer_t w = {c, data, n};
  pthread_t t = write_async(&w);
  ck_assert_int_eq(next_read(s, 0.3), -ETIMEDOUT); /* held */
  ck_assert_uint_eq(chaos_proxy_counters(p, 0).bytes_up, 0);
  ck_assert_uint_eq(chaos_proxy_counters(p, 0).live, 1);
  ck_assert_int_eq(read_n(s, got, n, 10, NULL), 0);
  double took = now_s() - t0;
  pthread_join(t, NULL);
  ck_assert_msg(took >= 0.59, "bytes arrived %.3f s into a 600 ms stall", took);
  ck_assert_msg(memcmp(data, got, n) == 0, "bytes after the stall differ");
  /* the other way works too */
  ck_assert_int_eq(send(s, "z", 1, 0), 1);
  ck_assert_int_eq(next_read(c, 10), 1);
  close(c), close(s);
  chaos_proxy_free(p);
  free(data), free(got);
  close(u.lfd);
}
END_TEST

/* The throttle: 1 MiB at 2 MiB/s takes about half a second (a bucket of
 * 10 ms is the most it may run ahead; slower only when the machine is). */
START_TEST(test_throttle_rate) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  uint64_t rate = 2 * MiB;
  chaos_proxy_throttle(p, rate);
  int c = dial(addr), s = upstream_accept(&u);
  size_t n = MiB;
  uint8_t *data = malloc(n), *got = malloc(n);
  fill(data, n, 4);
  double t0 = now_s();
  writer_t w = {c, data, n};
  pthread_t t = write_async(&w);
  ck_assert_int_eq(read_n(s, got, n, 30, NULL), 0);
  double took = now_s() - t0, want = (double)n / (double)rate;
  pthread_join(t, NULL);
  ck_assert_msg(memcmp(data, got, n) == 0, "throttled bytes differ");
  ck_assert_msg(took >= want * 0.95 && took <= want * 3, "1 MiB at 2 MiB/s took %.3f s (want %.3f)", took, want);
  chaos_proxy_throttle(p, 0); /* off: the next MiB is not held back */
  t0 = now_s();
  t = write_async(&w);
  ck_assert_int_eq(read_n(s, got, n, 30, NULL), 0);
  pthread_join(t, NULL);
  ck_assert_msg(now_s() - t0 < want, "unthrottled MiB took %.3f s", now_s() - t0);
  close(c), close(s);
  chaos_proxy_free(p);
  free(data), free(got);
  close(u.lfd);
}
END_TEST

/* A random cut of [N, N]: exactly N bytes arrive, then the end (FIN);
 * counted as a random cut. */
START_TEST(test_random_cut_at_its_count) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  uint64_t at = 100003;
  chaos_proxy_random_cut(p, CHAOS_ALL_ROUTES, at, at, 1000, 7, CHAOS_FIN);
  int c = dial(addr), s = upstream_accept(&u);
  size_t n = MiB;
  uint8_t *data = malloc(n), *got = malloc(n);
  fill(data, n, 5);
  writer_t w = {c, data, n};
  pthread_t t = write_async(&w);
  int how = 1;
  size_t m = read_to_end(s, got, n, 30, &how);
  ck_assert_int_eq(how, 0);
  ck_assert_uint_eq(m, at);
  ck_assert_msg(memcmp(data, got, m) == 0, "bytes before the cut differ");
  shutdown(c, SHUT_RDWR); /* the writer may be blocked on a closed peer */
  pthread_join(t, NULL);
  chaos_counters_t k = chaos_proxy_counters(p, CHAOS_ALL_ROUTES);
  ck_assert_uint_eq(k.random_cuts, 1);
  ck_assert_uint_eq(k.bytes_up, at);
  close(c), close(s);
  chaos_proxy_free(p);
  free(data), free(got);
  close(u.lfd);
}
END_TEST

/* Random counts: within [lo, hi], both directions counted together, the
 * same for the same seed; permille 0 spares connections. */
START_TEST(test_random_cut_seeded) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  size_t counts[2][3];
  for (int run = 0; run < 2; run++) {
    chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
    chaos_proxy_random_cut(p, CHAOS_ALL_ROUTES, 1000, 50000, 1000, 42, CHAOS_FIN);
    for (int k = 0; k < 3; k++) {
      int c = dial(addr), s = upstream_accept(&u);
      uint8_t data[100000], got[100000];
      fill(data, sizeof data, 6);
      ck_assert_int_eq(send(s, "hello", 5, 0), 5); /* 5 bytes down first */
      ck_assert_int_eq(next_read(c, 10), 5);
      writer_t w = {c, data, sizeof data};
      pthread_t t = write_async(&w);
      int how = 1;
      size_t m = read_to_end(s, got, sizeof got, 30, &how);
      ck_assert_int_eq(how, 0);
      ck_assert_msg(m + 5 >= 1000 && m + 5 <= 50000, "cut after %zu bytes", m + 5);
      ck_assert_msg(memcmp(data, got, m) == 0, "bytes before the cut differ");
      counts[run][k] = m;
      shutdown(c, SHUT_RDWR);
      pthread_join(t, NULL);
      close(c), close(s);
    }
    chaos_proxy_random_cut(p, CHAOS_ALL_ROUTES, 1, 1, 0, 0, CHAOS_FIN); /* off */
    int c = dial(addr), s = upstream_accept(&u);
    uint8_t big[65536];
    fill(big, sizeof big, 7);
    writer_t w = {c, big, sizeof big};
    pthread_t t = write_async(&w);
    uint8_t got[65536];
    ck_assert_int_eq(read_n(s, got, sizeof got, 10, NULL), 0);
    pthread_join(t, NULL);
    close(c), close(s);
    ck_assert_uint_eq(chaos_proxy_counters(p, 0).random_cuts, 3);
    chaos_proxy_free(p);
  }
  for (int k = 0; k < 3; k++) ck_assert_uint_eq(counts[0][k], counts[1][k]);
  ck_assert_msg(counts[0][0] != counts[0][1] || counts[0][1] != counts[0][2], "three equal draws");
  close(u.lfd);
}
END_TEST

/* Random cuts set while connections live apply to them, counted from
 * their bytes so far. */
START_TEST(test_random_cut_live) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  int c = dial(addr), s = upstream_accept(&u);
  ck_assert_int_eq(send(c, "0123456789", 10, 0), 10);
  uint8_t got[4096];
  ck_assert_int_eq(read_n(s, got, 10, 10, NULL), 0);
  chaos_proxy_random_cut(p, CHAOS_ALL_ROUTES, 1000, 1000, 1000, 3, CHAOS_FIN);
  uint8_t data[4096];
  fill(data, sizeof data, 8);
  writer_t w = {c, data, sizeof data};
  pthread_t t = write_async(&w);
  int how = 1;
  ck_assert_uint_eq(read_to_end(s, got, sizeof got, 10, &how), 1000);
  ck_assert_int_eq(how, 0);
  pthread_join(t, NULL);
  ck_assert_uint_eq(chaos_proxy_counters(p, 0).random_cuts, 1);
  close(c), close(s);
  chaos_proxy_free(p);
  close(u.lfd);
}
END_TEST

/* Two routes, one proxy: a cut of one leaves the other, and so do random
 * cuts of one; counters per route; a route on another loopback host at a
 * port free on both. */
START_TEST(test_two_routes) {
  upstream_t u1, u2;
  upstream_open(&u1);
  upstream_open(&u2);
  chaos_proxy_t *p = chaos_proxy_new();
  ck_assert_ptr_nonnull(p);
  char a1[64], a2[64], want[64], err[128];
  int port = chaos_proxy_free_port("127.0.0.2");
  ck_assert_int_gt(port, 0);
  snprintf(want, sizeof want, "127.0.0.2:%d", port);
  ck_assert_int_eq(chaos_proxy_listen(p, "127.0.0.2:0", u1.addr, a1, sizeof a1, err, sizeof err), 0);
  ck_assert_int_eq(chaos_proxy_listen(p, want, u2.addr, a2, sizeof a2, err, sizeof err), 1);
  ck_assert_str_eq(a2, want);
  ck_assert_int_eq(chaos_proxy_listen(p, "nonsense", u2.addr, NULL, 0, err, sizeof err), -1);
  int c1 = dial(a1), s1 = upstream_accept(&u1), c2 = dial(a2), s2 = upstream_accept(&u2);
  ck_assert_int_eq(send(c2, "xy", 2, 0), 2);
  ck_assert_int_eq(next_read(s2, 10), 2);
  uint64_t two = 2;
  ck_assert_int_eq(chaos_proxy_wait(p, 1, bytes_at_least, &two, 10000), 0);
  ck_assert_int_eq(chaos_proxy_cut(p, 1, CHAOS_FIN, 0), 1);
  ck_assert_int_eq(next_read(c2, 10), 0);
  ck_assert_int_eq(send(c1, "q", 1, 0), 1);
  ck_assert_int_eq(next_read(s1, 10), 1);
  ck_assert_uint_eq(chaos_proxy_counters(p, 0).cuts, 0);
  ck_assert_uint_eq(chaos_proxy_counters(p, 1).cuts, 1);
  ck_assert_uint_eq(chaos_proxy_counters(p, 1).bytes_up, 2);
  ck_assert_uint_eq(chaos_proxy_counters(p, CHAOS_ALL_ROUTES).bytes_up, 3);
  uint64_t never = 1u << 30;
  ck_assert_int_eq(chaos_proxy_wait(p, 0, bytes_at_least, &never, 50), -1); /* a wait gives up */
  close(c2), close(s2);
  /* random cuts of route 1 alone: its next connection ends after 3 bytes, route 0's goes on */
  chaos_proxy_random_cut(p, 1, 3, 3, 1000, 9, CHAOS_FIN);
  c2 = dial(a2), s2 = upstream_accept(&u2);
  ck_assert_int_eq(send(c2, "abcdef", 6, 0), 6);
  uint8_t got[16];
  int how = 1;
  ck_assert_uint_eq(read_to_end(s2, got, sizeof got, 10, &how), 3);
  ck_assert_int_eq(how, 0);
  ck_assert_int_eq(send(c1, "0123456789", 10, 0), 10);
  ck_assert_int_eq(read_n(s1, got, 10, 10, NULL), 0);
  ck_assert_uint_eq(chaos_proxy_counters(p, 0).random_cuts, 0);
  ck_assert_uint_eq(chaos_proxy_counters(p, 1).random_cuts, 1);
  close(c1), close(s1), close(c2), close(s2);
  chaos_proxy_free(p);
  close(u1.lfd), close(u2.lfd);
}
END_TEST

/* An upstream that is not there: the client's connection is reset. */
START_TEST(test_upstream_down) {
  upstream_t u;
  char addr[64];
  upstream_open(&u);
  close(u.lfd); /* nobody listens there now */
  chaos_proxy_t *p = proxy_to(&u, addr, sizeof addr);
  int c = dial(addr);
  ck_assert_int_eq(next_read(c, 10), -ECONNRESET);
  close(c);
  chaos_counters_t k = chaos_proxy_counters(p, 0);
  ck_assert_uint_eq(k.upstream_failed, 1);
  ck_assert_uint_eq(k.live, 0);
  chaos_proxy_free(p);
}
END_TEST

/* Runs every test (Check forks each). */
int main(void) {
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("chaos_proxy");
  TCase *tc = tcase_create("proxy");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_forwards_byte_for_byte);
  tcase_add_test(tc, test_delay);
  tcase_add_test(tc, test_cut_closes_both_sides);
  tcase_add_test(tc, test_cut_refuses_for_a_while);
  tcase_add_test(tc, test_stall_holds_and_releases_in_order);
  tcase_add_test(tc, test_throttle_rate);
  tcase_add_test(tc, test_random_cut_at_its_count);
  tcase_add_test(tc, test_random_cut_seeded);
  tcase_add_test(tc, test_random_cut_live);
  tcase_add_test(tc, test_two_routes);
  tcase_add_test(tc, test_upstream_down);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
