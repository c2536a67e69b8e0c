/*
 * client/lib/bulk.c — the session's bulk connection (rdev/wire.h, "The bulk
 * connection"): a plain TCP connection beside the gRPC call, or a unix
 * socket on the server's host, on which the server sends large Reads'
 * bytes, read by a thread of this file straight into each Read's
 * destination (pending.c hands it over and completes the Read when its
 * in-band reply came too). No gRPC framing and no message buffers stand
 * between the socket and the caller's memory, so a D2H copy runs at the
 * speed of the connection, into memory the process already has.
 *
 * The other way, the bytes of large H2D copies go out on it as DATA
 * messages, straight from the caller's memory, after their Writes
 * (bulk_send.c writes what this process sends on it; bulk_data.c keeps
 * DATA messages for the next connection in a session that resumes).
 *
 * On a unix socket it also shares host memory (rdev/wire.h, "Host memory
 * regions"): rdev_malloc_host's memfds are registered here, and copies
 * from and into them move no byte on any connection: rdevd copies between
 * the device and that memory itself. Owns s->bulk; calls bulk_send.c,
 * bulk_data.c, pending.c and nothing above them.
 *
 * Connecting is best effort: until the server answered the hello, Reads
 * go in-band, and for good when the first connection could not be made.
 * A connection lost while the session lives (a cut, a reset, a resume of
 * the session) is made again, with backoff, under a higher number
 * (rdev/wire.h): rdevd then drops the old one. In a session that resumes,
 * what the old one lost goes again on the new one, both ways; in one that
 * does not, Reads answered for the old one whose frames did not come fail
 * (RDEV_UNAVAILABLE: a synchronous copy runs again, memory.c), as do bulk
 * Writes whose bytes went on it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grpc/support/alloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "rdev/clock.h"

#define CONNECT_MS 2000 /* to connect and be answered */
#define STEP_MS 50      /* how often a wait looks at stop */
#define REGISTER_MS 5000
#define RETRY_MIN_MS 20   /* a lost connection is made again after this... */
#define RETRY_MAX_MS 2000 /* ...doubling up to this */

/* A registered host memory region: [base, base+size) here. */
struct cl_region {
  uint32_t id;
  const uint8_t *base;
  uint64_t size;
  struct cl_region *next;
};

/* Waits until fd is ready for events, or ms ran out (ms < 0: no limit), or
 * the session closes: true when ready. */
static bool wait_fd(rdev_session_t *s, int fd, short events, int ms) {
  for (int left = ms; !atomic_load(&s->bulk.stop) && (ms < 0 || left > 0);) {
    int step = ms >= 0 && left < STEP_MS ? left : STEP_MS;
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, step);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
    if (ms >= 0) left -= step;
  }
  return false;
}

/* A socket connecting (non-blocking) to the server's bulk address: its
 * unix path, or host:port; -1 when none can be made. */
static int dial(rdev_session_t *s) {
  if (s->bulk.local) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(s->bulk.host) >= sizeof a.sun_path) return -1;
    memcpy(a.sun_path, s->bulk.host, strlen(s->bulk.host) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS && errno != EAGAIN) {
      close(fd);
      fd = -1;
    }
    return fd;
  }
  char port[16];
  snprintf(port, sizeof port, "%d", s->bulk.port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res;
  if (getaddrinfo(s->bulk.host, port, &hints, &res) != 0) return -1;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0 && errno != EINPROGRESS) {
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

/* Whether the reader is done: the session closes (or is asked to), or its
 * call ended. */
static bool over(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  bool done = atomic_load(&s->bulk.stop) || s->poll.dead || cl_send_closing_locked(s);
  pthread_mutex_unlock(&s->mu);
  return done;
}

/* Makes fd, attached as connection conn, the one senders use, in place of
 * the last (closed: its reader is this thread, its senders hold send_mu),
 * and sends on it first the DATA messages rdevd has not counted (its
 * answer: counted, and whether it keeps): true; false (fd closed) when
 * the session stops meanwhile. */
static bool publish(rdev_session_t *s, int fd, uint32_t conn, uint64_t counted, bool keeps) {
  pthread_mutex_lock(&s->bulk.send_mu);
  s->bulk.keeps = keeps;
  bool again = cl_bulk_data_renumber_locked(s, counted); /* none go before these */
  pthread_mutex_lock(&s->mu);
  bool ok = !atomic_load(&s->bulk.stop) && !s->poll.dead;
  if (ok) {
    if (s->bulk.fd >= 0) close(s->bulk.fd);
    s->bulk.fd = fd;
    s->bulk.conn = conn;
    atomic_store(&s->bulk.frames, 0); /* counted per connection */
    atomic_store(&s->bulk.frames_told, 0);
    s->bulk.ack_off = s->bulk.ack_len = 0; /* the last one's */
    /* with fd, under send_mu: a bulk Write sees both or neither; once
     * those to go again went (cl_bulk_data_resend) */
    atomic_store(&s->bulk.ready, !again);
  }
  pthread_mutex_unlock(&s->mu);
  if (ok) cl_bulk_send_unregisters_locked(s, fd);
  cl_bulk_send_unlock(s);
  if (ok && again) cl_bulk_data_resend(s, fd);
  if (!ok) close(fd);
  return ok;
}

/* Connects and attaches connection conn: the connected socket (blocking),
 * or -1 (closed). Its own until publish: nothing else writes on it before
 * the hello and its answer. */
static int attach(rdev_session_t *s, uint32_t conn) {
  int fd = dial(s);
  int err = 0;
  socklen_t el = sizeof err;
  bool ok = fd >= 0 && wait_fd(s, fd, POLLOUT, CONNECT_MS) && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 &&
            err == 0;
  if (ok) rdev_wire_bulk_sockopts(fd);
  uint8_t hello[RDEV_WIRE_BULK_HELLO];
  uint8_t answer[RDEV_WIRE_BULK_ANSWER];
  memcpy(hello, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN);
  memcpy(hello + RDEV_WIRE_BULK_MAGIC_LEN, s->host.key, RDEV_WIRE_SESSION_KEY_LEN);
  rdev_wire_le_put(hello + RDEV_WIRE_BULK_MAGIC_LEN + RDEV_WIRE_SESSION_KEY_LEN, conn, 4);
  if (ok) cl_pending_bulk_conn(s, conn, false); /* before a Read may ask for it */
  ok = ok && send(fd, hello, sizeof hello, MSG_NOSIGNAL) == (ssize_t)sizeof hello;
  if (ok) atomic_store(&s->bulk.asked, true); /* rdevd attaches it when the hello arrives */
  int fl = ok ? fcntl(fd, F_GETFL) : -1;
  ok = ok && fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
  /* Once the hello went, Reads may ask for the connection (asked): wait for
   * the answer until it comes, the connection ends (rdevd refuses a hello
   * by closing, and times out one that never came whole) or the session
   * stops; giving up sooner could leave rdevd attached behind the Reads
   * of a connection this side gave up. */
  ok = ok && wait_fd(s, fd, POLLIN, -1) && rdev_wire_recv_all(fd, answer, sizeof answer) &&
       memcmp(answer, RDEV_WIRE_BULK_MAGIC, RDEV_WIRE_BULK_MAGIC_LEN) == 0;
  if (!ok && fd >= 0) close(fd);
  uint64_t counted = ok ? rdev_wire_le_get(answer + RDEV_WIRE_BULK_MAGIC_LEN, 8) : 0;
  bool keeps = ok && (rdev_wire_le_get(answer + RDEV_WIRE_BULK_MAGIC_LEN + 8, 4) & RDEV_WIRE_BULK_KEEPS);
  return ok && publish(s, fd, conn, counted, keeps) ? fd : -1;
}

/* A control frame: the answer to a registration, or a RECEIPT. */
static bool control(rdev_session_t *s, int fd, uint64_t len) {
  uint8_t b[RDEV_WIRE_BULK_HEADER];
  if (len != sizeof b) return false;
  if (!rdev_wire_recv_all(fd, b, sizeof b)) return false;
  uint32_t kind = (uint32_t)rdev_wire_le_get(b, 4), id = (uint32_t)rdev_wire_le_get(b + 4, 4);
  uint64_t value = rdev_wire_le_get(b + 8, 8);
  if (kind == RDEV_WIRE_BULK_RECEIPT) {
    cl_bulk_data_counted(s, value);
    return true;
  }
  if (kind != RDEV_WIRE_REGION_REGISTER) return false;
  int32_t st = (int32_t)(uint32_t)value;
  pthread_mutex_lock(&s->mu);
  if (id == s->bulk.reg_id) {
    s->bulk.reg_status = (int)st;
    pthread_cond_broadcast(&s->bulk.cv);
  }
  pthread_mutex_unlock(&s->mu);
  return true;
}

/* Reads frames from connection fd until it fails or is shut down. */
static void read_frames(rdev_session_t *s, int fd) {
  uint8_t hdr[RDEV_WIRE_BULK_HEADER];
  while (rdev_wire_recv_all(fd, hdr, sizeof hdr)) {
    uint64_t seq = rdev_wire_le_get(hdr, 8), len = rdev_wire_le_get(hdr + 8, 8);
    if (seq == 0) {
      if (!control(s, fd, len)) break;
      continue;
    }
    void *dst = cl_pending_bulk_begin(s, seq, len); /* NULL: in already (sent again), or no one waits */
    bool ok = dst ? rdev_wire_recv_all(fd, dst, (size_t)len) : rdev_wire_drain(fd, len);
    if (dst) cl_pending_bulk_end(s, seq, ok);
    if (!ok) break;
    atomic_fetch_add(&s->bulk.frames, 1); /* rdevd keeps it until told */
    cl_bulk_acks_flush(s);
  }
}

/* Sleeps ms, or less when the session closes or its call ends. */
static void pause_ms(rdev_session_t *s, int ms) {
  pthread_mutex_lock(&s->mu);
  struct timespec dl = rdev_clock_deadline_ns((uint64_t)ms * 1000000u);
  while (!atomic_load(&s->bulk.stop) && !s->poll.dead && !cl_send_closing_locked(s))
    if (pthread_cond_timedwait(&s->bulk.cv, &s->mu, &dl) == ETIMEDOUT) break;
  pthread_mutex_unlock(&s->mu);
}

static void *reader_main(void *arg) {
  rdev_session_t *s = arg;
  bool had = false; /* a connection was in once: the route works, make it again when lost */
  uint32_t conn = 0;
  for (int retry_ms = RETRY_MIN_MS;;) {
    int fd = attach(s, ++conn); /* a new number each time: rdevd may have taken one whose answer was lost */
    if (fd < 0) atomic_store(&s->bulk.asked, false);
    pthread_mutex_lock(&s->mu);
    s->bulk.tried = true;
    pthread_cond_broadcast(&s->bulk.cv); /* the first attach is over; a registration's connection changed */
    pthread_mutex_unlock(&s->mu);
    if (fd >= 0) {
      had = true;
      uint64_t t0 = rdev_clock_now_ns();
      read_frames(s, fd);
      if (rdev_clock_now_ns() - t0 > 1000000000u) retry_ms = RETRY_MIN_MS; /* it lived: not one that dies at once */
      shutdown(fd, SHUT_RDWR); /* a sender on it fails now (closed by the next attach, or cl_bulk_stop) */
      cl_bulk_data_join(s);    /* so that it does not make it ready after this */
      atomic_store(&s->bulk.ready, false);
      atomic_store(&s->bulk.asked, false);
    }
    cl_pending_bulk_conn(s, conn, true);
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->bulk.cv); /* a registration sent on it gets no answer */
    pthread_mutex_unlock(&s->mu);
    if (!had || over(s)) break;
    pause_ms(s, retry_ms);
    retry_ms = retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry_ms * 2;
    if (over(s)) break;
  }
  pthread_mutex_lock(&s->mu);
  if (s->bulk.fd >= 0) shutdown(s->bulk.fd, SHUT_RDWR); /* closed by cl_bulk_stop: senders may hold it */
  s->bulk.dead = true;
  pthread_cond_broadcast(&s->bulk.cv);      /* a registration waiting gets no answer */
  pthread_cond_broadcast(&s->pend.bulk_cv); /* nor a Read its frame */
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* The host of a call's peer ("ipv4:10.0.0.1:50051", "ipv6:[::1]:50051")
 * into host; false for any other kind (a unix socket). */
static bool peer_host(const char *peer, char *host, size_t len) {
  if (strncmp(peer, "ipv4:", 5) && strncmp(peer, "ipv6:", 5)) return false;
  const char *a = peer + 5, *colon = strrchr(a, ':');
  if (!colon) return false;
  size_t n = (size_t)(colon - a);
  if (n >= 2 && a[0] == '[' && a[n - 1] == ']') a++, n -= 2;
  if (n == 0 || n >= len) return false;
  memcpy(host, a, n);
  host[n] = '\0';
  return true;
}

void cl_bulk_init(rdev_session_t *s) {
  s->bulk.fd = -1;
  s->bulk.next_id = 1;
  rdev_clock_cond_init(&s->bulk.cv); /* timed waits take CLOCK_MONOTONIC deadlines */
  pthread_mutex_init(&s->bulk.reg_mu, NULL);
  pthread_mutex_init(&s->bulk.send_mu, NULL);
  cl_bulk_data_init(s);
}

void cl_bulk_start(rdev_session_t *s, int port, const char *path) {
  const char *env = getenv("RDEV_BULK");
  if (env && !strcmp(env, "off")) return;
  if (path) { /* a socket on rdevd's host: only for a call that came over one */
    char *peer = grpc_call_get_peer(s->call);
    bool local = peer && !strncmp(peer, "unix:", 5);
    gpr_free(peer);
    if (!local || !*path || strlen(path) >= sizeof s->bulk.host) return;
    snprintf(s->bulk.host, sizeof s->bulk.host, "%s", path);
    s->bulk.local = true;
  } else {
    if (port <= 0 || port > 65535) return;
    char *peer = grpc_call_get_peer(s->call);
    bool tcp = peer && peer_host(peer, s->bulk.host, sizeof s->bulk.host);
    gpr_free(peer);
    if (!tcp) return;
    s->bulk.port = port;
  }
  s->bulk.started = pthread_create(&s->bulk.thread, NULL, reader_main, s) == 0;
  if (!s->bulk.started || !s->bulk.local) return;
  pthread_mutex_lock(&s->mu); /* a local attach takes moments: wait for it */
  while (!s->bulk.tried) pthread_cond_wait(&s->bulk.cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

bool cl_bulk_ready(rdev_session_t *s) { return atomic_load(&s->bulk.ready); }

bool cl_bulk_reads_may(rdev_session_t *s) { return atomic_load(&s->bulk.asked); }

bool cl_bulk_local(rdev_session_t *s) { return s->bulk.local && atomic_load(&s->bulk.ready); }

int cl_session_bulk(rdev_session_t *s) { return s && cl_bulk_ready(s); }

/* reg_mu held: tells rdevd that region id ends: now, or once a
 * connection is in again (else rdevd unmaps it when the session ends). */
static void unregister_id(rdev_session_t *s, uint32_t id) {
  cl_bulk_send_lock(s);
  if (atomic_load(&s->bulk.ready)) {
    cl_bulk_send_message(s->bulk.fd, RDEV_WIRE_REGION_UNREGISTER, id, 0, -1);
  } else {
    pthread_mutex_lock(&s->mu);
    uint32_t *ids = realloc(s->bulk.unreg, (size_t)(s->bulk.nunreg + 1) * sizeof *ids);
    if (ids) {
      ids[s->bulk.nunreg++] = id;
      s->bulk.unreg = ids;
    }
    pthread_mutex_unlock(&s->mu);
  }
  cl_bulk_send_unlock(s);
}

int cl_bulk_register(rdev_session_t *s, int fd, void *base, uint64_t size, uint32_t *id) {
  if (!cl_bulk_local(s)) return cl_error(RDEV_UNAVAILABLE, "no same-host bulk connection");
  cl_region_t *r = calloc(1, sizeof *r);
  if (!r) return cl_error(RDEV_BAD_ALLOC, "out of host memory");
  pthread_mutex_lock(&s->bulk.reg_mu);
  pthread_mutex_lock(&s->mu);
  uint32_t want = s->bulk.next_id++;
  s->bulk.reg_id = want;
  s->bulk.reg_status = 1;
  pthread_mutex_unlock(&s->mu);
  cl_bulk_send_lock(s);
  uint32_t on = s->bulk.conn; /* its answer comes on this connection, or never */
  bool sent = cl_bulk_send_message(s->bulk.fd, RDEV_WIRE_REGION_REGISTER, want, size, fd);
  cl_bulk_send_unlock(s);
  pthread_mutex_lock(&s->mu);
  struct timespec dl = rdev_clock_deadline_ns((uint64_t)REGISTER_MS * 1000000u);
  while (sent && s->bulk.reg_status == 1 && !s->bulk.dead && s->bulk.conn == on && atomic_load(&s->bulk.ready))
    if (pthread_cond_timedwait(&s->bulk.cv, &s->mu, &dl) == ETIMEDOUT) break;
  int st = sent ? s->bulk.reg_status : -1;
  s->bulk.reg_id = 0;
  if (st == 0) {
    r->id = want;
    r->base = base;
    r->size = size;
    r->next = s->bulk.regions;
    s->bulk.regions = r;
  }
  pthread_mutex_unlock(&s->mu);
  /* Sent (or its send failed), but no answer came: rdevd may have mapped
   * it. Its id is never used again, so it may go (an unknown id is a
   * no-op there). */
  if (st == 1 || st == -1) unregister_id(s, want);
  pthread_mutex_unlock(&s->bulk.reg_mu);
  if (st == 0) {
    *id = want;
    return RDEV_OK;
  }
  free(r);
  if (st > 1 || st < -1) return cl_error(st, "rdevd refused to share host memory");
  return cl_error(RDEV_UNAVAILABLE, "rdevd did not answer a host memory registration");
}

void cl_bulk_unregister(rdev_session_t *s, uint32_t id) {
  pthread_mutex_lock(&s->bulk.reg_mu);
  pthread_mutex_lock(&s->mu);
  cl_region_t **pp = &s->bulk.regions;
  while (*pp && (*pp)->id != id) pp = &(*pp)->next;
  cl_region_t *r = *pp;
  if (r) *pp = r->next;
  pthread_mutex_unlock(&s->mu);
  if (r) unregister_id(s, id);
  pthread_mutex_unlock(&s->bulk.reg_mu);
  free(r);
}

void *cl_bulk_region_pop(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  cl_region_t *r = s->bulk.regions;
  if (r) s->bulk.regions = r->next;
  pthread_mutex_unlock(&s->mu);
  void *base = r ? (void *)r->base : NULL;
  free(r);
  return base;
}

bool cl_bulk_region_of(rdev_session_t *s, const void *p, size_t n, uint32_t *id, uint64_t *off) {
  const uint8_t *q = p;
  bool found = false;
  pthread_mutex_lock(&s->mu);
  for (cl_region_t *r = s->bulk.regions; r && !found; r = r->next)
    if (q >= r->base && (uint64_t)(q - r->base) <= r->size && n <= r->size - (uint64_t)(q - r->base)) {
      *id = r->id;
      *off = (uint64_t)(q - r->base);
      found = true;
    }
  pthread_mutex_unlock(&s->mu);
  return found;
}

void cl_bulk_abort_locked(rdev_session_t *s) {
  atomic_store(&s->bulk.ready, false);
  atomic_store(&s->bulk.asked, false);
  if (s->bulk.fd >= 0) shutdown(s->bulk.fd, SHUT_RDWR);
  pthread_cond_broadcast(&s->bulk.cv); /* a reader pausing before it connects again looks at once */
}

void cl_bulk_stop(rdev_session_t *s) {
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->bulk.stop, true);
  cl_bulk_abort_locked(s);
  pthread_mutex_unlock(&s->mu);
  if (s->bulk.started) pthread_join(s->bulk.thread, NULL);
  s->bulk.started = false;
  cl_bulk_data_join(s); /* it sends on fd (shut down: it fails) */
  if (s->bulk.fd >= 0) close(s->bulk.fd);
  s->bulk.fd = -1;
  free(s->bulk.unreg);
  s->bulk.unreg = NULL;
  while (s->bulk.regions) { /* memory freed after its session closed */
    cl_region_t *r = s->bulk.regions;
    s->bulk.regions = r->next;
    free(r);
  }
  cl_bulk_data_stop(s);
  pthread_cond_destroy(&s->bulk.cv);
  pthread_mutex_destroy(&s->bulk.reg_mu);
  pthread_mutex_destroy(&s->bulk.send_mu);
}
