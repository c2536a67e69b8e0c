/*
 * tests/fuzz/fuzz_bulk.c — libFuzzer harness for what a client sends on
 * its bulk connection (server/session/bulk.c: the reader's messages, DATA
 * frames kept for bulk Writes, region registration in regions.c) and for
 * the requests that use them (bulk Writes and Reads, region copies), on an
 * in-process session of the sim whose bulk connection is one end of a unix
 * socket pair (srv_bulk_adopt); the harness holds the other end.
 *
 * The input is a small program. Its first byte says whether the connection
 * counts as local (regions may be registered), and whether the session
 * resumes (its frames are kept, DATA messages get RECEIPTs, and a bulk
 * Write waits for its bytes across connections). Each step then picks one of:
 * raw bytes on the socket (any header, any length, lies included); a
 * well-formed DATA message (seq, length, bytes); REGISTER with a memfd of
 * some size, sealed or not; UNREGISTER; a bulk Write (its DATA may come
 * before, after or never; naming the attached connection, or another); a
 * bulk Read; a Read or Write naming a region; an ACK for a Read's frame
 * (sent, not sent yet, or none); the client's next connection in place of
 * this one (readopt: the old one ends first, and the frames kept go again
 * on the new one).
 * A thread reads and drops what rdevd sends back (frames, answers).
 *
 * Checks, besides ASan/UBSan/LSan: every reply is a valid Reply; rdevd
 * keeps serving (a final synchronous Read of the session's buffer is
 * answered unless the session was paused waiting for a frame, which
 * ending the connection must release); once the session is closed no
 * session is left, and every device's free memory and the tenant's usage
 * are back where they started.
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include <fcntl.h>
#include <grpc/grpc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rdev/wire.h"
#include "session/session.h"

#define MAX_STEPS 40
#define BUF_SIZE ((uint64_t)64 << 10)

static srv_t srv;

typedef struct {
  const uint8_t *p;
  size_t n;
} in_t;

static uint64_t take(in_t *in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) {
    v = v << 8 | (in->n ? *in->p : 0);
    if (in->n) in->p++, in->n--;
  }
  return v;
}

/* ---- replies ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t buf_addr; /* the session's device buffer, from its Malloc reply */
static uint64_t answered; /* the seq a final Read asked for, once answered */

static void on_reply(void *user, grpc_byte_buffer *bb) {
  (void)user;
  rdev_v1_Reply r = rdev_v1_Reply_init_zero;
  rdev_wire_bytes_t data = {.max = 2u << 20}, print = {.max = 1u << 20};
  rdev_wire_bytes_decoder(&r.data, &data);
  rdev_wire_bytes_decoder(&r.print, &print);
  if (!rdev_wire_decode(bb, rdev_v1_Reply_fields, &r, NULL)) abort(); /* rdevd sent a malformed reply */
  free(data.data);
  free(print.data);
  grpc_byte_buffer_destroy(bb);
  pthread_mutex_lock(&mu);
  if (r.seq == 1 && r.status == RDEV_OK) buf_addr = r.addr;
  if (r.seq >= 1000) answered = r.seq;
  pthread_mutex_unlock(&mu);
}

/* Feeds q; 0, or -1 when the session is busy (paused waiting for a frame
 * or for room) and stays so for a while. */
static int feed(srv_session_t *s, rdev_v1_Request *q) {
  grpc_byte_buffer *bb = rdev_wire_encode(rdev_v1_Request_fields, q, NULL);
  if (!bb) abort();
  int rc = srv_session_feed(s, bb);
  if (rc < 0 && srv_session_wait_ready(s, 200) == 0) rc = srv_session_feed(s, bb);
  if (rc < 0) grpc_byte_buffer_destroy(bb);
  return rc < 0 ? -1 : 0;
}

/* ---- the harness's end of the connection ---- */

static void *sink_main(void *arg) {
  int fd = *(int *)arg;
  char b[65536];
  while (read(fd, b, sizeof b) > 0) {}
  return NULL;
}

/* Ends the connection old (its sink joined) and attaches a new one as
 * number conn: the harness's end of it, its sink started (where rdevd
 * refused it, an end that reads nothing). */
static int next_connection(srv_session_t *s, int old, pthread_t *sink, uint32_t conn, int local) {
  shutdown(old, SHUT_RDWR);
  pthread_join(*sink, NULL);
  close(old);
  static int np[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, np) != 0) abort();
  int rc = -1;
  for (int i = 0; i < 500 && rc; i++) /* the last reader may still run a message it resumed */
    if ((rc = srv_bulk_adopt(s, np[0], conn, local)) != 0) usleep(1000);
  if (rc) {
    close(np[0]); /* not taken: the session ends (or its connection was not replaced) */
  } else {
    char answer[RDEV_WIRE_BULK_ANSWER];
    if (recv(np[1], answer, sizeof answer, MSG_WAITALL) == (ssize_t)sizeof answer &&
        memcmp(answer, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN))
      abort(); /* answered, but not with the magic */
  }
  if (pthread_create(sink, NULL, sink_main, &np[1]) != 0) abort();
  return np[1];
}

static void put(int fd, const void *p, size_t n) {
  struct iovec iov = {(void *)p, n};
  (void)rdev_wire_send_all(fd, &iov, 1); /* rdevd may have closed it: fine */
}

/* REGISTER id with a memfd of real bytes (sealed against shrinking when
 * seal), declaring size. */
static void send_register(int sock, uint32_t id, uint64_t size, size_t real, int seal) {
  int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) abort();
  if (ftruncate(fd, (off_t)real) != 0) abort();
  if (seal) fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
  uint8_t h[RDEV_WIRE_BULK_HEADER];
  rdev_wire_bulk_header_put(h, RDEV_WIRE_REGION_REGISTER, id, size);
  union {
    struct cmsghdr c;
    char b[CMSG_SPACE(sizeof(int))];
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct iovec iov = {h, sizeof h};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof fd);
  (void)sendmsg(sock, &m, MSG_NOSIGNAL);
  close(fd); /* rdevd has its own, or none */
}

static void device_state(size_t *free_bytes, size_t *used) {
  int n = 0;
  rdev_rt_device_count(srv.rt, &n);
  for (int d = 0; d < n; d++) {
    size_t t;
    rdev_rt_mem_info(srv.rt, d, &free_bytes[d], &t);
    pthread_mutex_lock(&srv.tenants->mu);
    used[d] = srv.tenants->mem_used[d];
    pthread_mutex_unlock(&srv.tenants->mu);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  grpc_init();
  srv_log_level = -1; /* quiet */
  srv_config_defaults(&srv.cfg);
  srv.cfg.sim_devices = 1;
  srv.cfg.sim_mem_bytes = (size_t)16 << 20;
  srv.cfg.max_inflight = (size_t)4 << 20;
  if (srv_open(&srv) != 0) abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  in_t in = {data, size};
  size_t free0[1], used0[1], free1[1], used1[1];
  device_state(free0, used0);
  uint8_t flags = (uint8_t)take(&in, 1);
  int local = flags & 1;
  srv_session_t *s = srv_session_open_local(&srv, srv.tenants, on_reply, NULL);
  if (!s) abort();
  s->resumable = (flags >> 1) & 1; /* as a resumable call's open makes it */
  buf_addr = 0;
  answered = 0;
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.seq = 1;
  q.which_op = rdev_v1_Request_malloc_tag;
  q.op.malloc.size = BUF_SIZE;
  if (feed(s, &q) != 0 || !buf_addr) abort();
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) abort();
  uint32_t conn = 1;
  if (srv_bulk_adopt(s, sp[0], conn, local) != 0) abort();
  char magic[RDEV_WIRE_BULK_ANSWER];
  if (recv(sp[1], magic, sizeof magic, MSG_WAITALL) != (ssize_t)sizeof magic ||
      memcmp(magic, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN))
    abort();
  pthread_t sink;
  if (pthread_create(&sink, NULL, sink_main, &sp[1]) != 0) abort();

  uint64_t seq = 2;
  int busy = 0;
  for (int step = 0; step < MAX_STEPS && in.n && !busy; step++) {
    uint8_t op = (uint8_t)take(&in, 1) % 9;
    uint8_t h[RDEV_WIRE_BULK_HEADER + 8];
    q = (rdev_v1_Request)rdev_v1_Request_init_zero;
    q.seq = seq++;
    switch (op) {
      case 0: { /* raw bytes */
        size_t n = (size_t)take(&in, 1);
        if (n > in.n) n = in.n;
        put(sp[1], in.p, n);
        in.p += n, in.n -= n;
        break;
      }
      case 1: { /* a DATA message for seq base + k, whole */
        uint64_t for_seq = seq + take(&in, 1) % 8 - 2;
        size_t n = (size_t)(take(&in, 2) % 9000);
        uint8_t *b = calloc(1, n ? n : 1);
        size_t have = n < in.n ? n : in.n;
        memcpy(b, in.p, have);
        in.p += have, in.n -= have;
        rdev_wire_bulk_header_put(h, RDEV_WIRE_BULK_DATA, 0, n);
        rdev_wire_le_put(h + RDEV_WIRE_BULK_HEADER, for_seq, 8);
        struct iovec iov[2] = {{h, sizeof h}, {b, n}};
        (void)rdev_wire_send_all(sp[1], iov, 2);
        free(b);
        break;
      }
      case 2: { /* REGISTER */
        uint32_t id = (uint32_t)take(&in, 1);
        uint64_t declared = take(&in, 2) * 64;
        size_t real = (size_t)take(&in, 2) * 64;
        send_register(sp[1], id, declared, real, (int)(take(&in, 1) & 1));
        break;
      }
      case 3: /* UNREGISTER */
        rdev_wire_bulk_header_put(h, RDEV_WIRE_REGION_UNREGISTER, (uint32_t)take(&in, 1), 0);
        put(sp[1], h, RDEV_WIRE_BULK_HEADER);
        break;
      case 8: /* the next connection (a reconnecting client): rdevd takes it once the last one's threads let go */
        sp[1] = next_connection(s, sp[1], &sink, ++conn, local);
        break;
      case 7: /* an ACK for seq base + k (a Read's frame, sent or not, or no frame's) */
        rdev_wire_bulk_header_put(h, RDEV_WIRE_BULK_ACK, 0, seq + take(&in, 1) % 8 - 4);
        put(sp[1], h, RDEV_WIRE_BULK_HEADER);
        break;
      case 4: /* a bulk Write */
      case 5: /* a bulk Read */
      default: /* 6: a Read or Write naming a region */ {
        uint64_t off = take(&in, 2) % (BUF_SIZE + 16), count = take(&in, 2) % (BUF_SIZE + 16);
        uint8_t how = (uint8_t)take(&in, 1);
        int is_read = op == 5 || (op != 4 && (how & 1));
        if (is_read) {
          q.which_op = rdev_v1_Request_read_tag;
          q.op.read = (rdev_v1_Read){.addr = buf_addr + off, .count = count, .dest_max = count, .bulk = op == 5};
        } else {
          q.which_op = rdev_v1_Request_write_tag;
          /* its connection: 0 (the one attached), 1 (the same, by number) or 2 (another: fails at once,
           * and its DATA, if it comes, is dropped) */
          q.op.write = (rdev_v1_Write){
              .addr = buf_addr + off, .count = count, .dest_max = count, .bulk = op == 4, .bulk_conn = (how >> 1) % 3};
        }
        if (op >= 6) {
          uint32_t region = (uint32_t)take(&in, 1);
          uint64_t host_off = take(&in, 2) * 16;
          if (is_read)
            q.op.read.host_region = region, q.op.read.host_offset = host_off;
          else
            q.op.write.host_region = region, q.op.write.host_offset = host_off;
        }
        busy = feed(s, &q) != 0;
        break;
      }
    }
  }
  /* Still serving? (Not while a Write waits for a frame that never came:
   * ending the connection must let it go, below.) */
  if (!busy) {
    q = (rdev_v1_Request)rdev_v1_Request_init_zero;
    q.seq = 1000;
    q.which_op = rdev_v1_Request_read_tag;
    q.op.read = (rdev_v1_Read){.addr = buf_addr, .count = 64, .dest_max = 64};
    busy = feed(s, &q) != 0;
  }
  shutdown(sp[1], SHUT_WR); /* the client is gone: what waits for a frame fails */
  if (!busy) {
    for (int i = 0; i < 5000; i++) {
      pthread_mutex_lock(&mu);
      uint64_t a = answered;
      pthread_mutex_unlock(&mu);
      if (a == 1000) break;
      if (i == 4999) abort(); /* the session stopped answering */
      usleep(1000);
    }
  }
  srv_session_close_local(s);
  pthread_join(sink, NULL); /* rdevd shut its end: the connection is gone */
  close(sp[1]);
  pthread_mutex_lock(&srv.mu);
  int left = srv.nsessions;
  pthread_mutex_unlock(&srv.mu);
  if (left) abort();
  device_state(free1, used1);
  if (free1[0] != free0[0] || used1[0] != used0[0]) abort(); /* device memory leaked or double-freed */
  return 0;
}
