/*
 * tests/chaos/chaos_proxy.c — the fault-injecting TCP proxy of
 * chaos_proxy.h. One thread owns every socket: it polls the routes'
 * listeners, each connection's two sockets and a wake pipe, reads what
 * arrives into per-direction queues of pieces (each stamped with the time
 * it may leave), and sends queued pieces when their time has come, no
 * stall holds them, the throttle's bucket has tokens and a random cut's
 * budget is not spent. The API's calls change settings under the
 * proxy's lock and wake the thread; a cut is done by the thread, and its
 * caller waits for it. The thread holds the lock except while it polls.
 */
#define _GNU_SOURCE
#include "chaos_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PIECE (64u << 10) /* the most one read takes */
#define QCAP (16u << 20)  /* bytes a direction holds before the proxy stops reading its source */
#define READS_PER_ROUND 8 /* reads of one source per round: the others get their turn */
#define NO_BUDGET UINT64_MAX

typedef struct piece {
  struct piece *next;
  int64_t due; /* CLOCK_MONOTONIC ns: when it may leave */
  size_t len, off;
  bool eof; /* the source half-closed: no data */
  char data[];
} piece_t;

typedef struct {
  piece_t *head, *tail;
  size_t queued;  /* bytes held */
  bool eof_read;  /* the source ended: nothing more to read */
  bool eof_sent;  /* the half-close went out */
  bool want_out;  /* a send would block: wait for POLLOUT */
  double tokens;  /* throttle bucket */
  int64_t tok_at; /* when tokens was last filled */
} dir_t;

typedef struct conn {
  struct conn *next;
  int route;
  int fd[2];       /* the client's, upstream */
  bool connecting; /* upstream's connect in progress */
  bool dead;       /* closed this round: freed at its end */
  dir_t d[2];      /* d[0]: client -> upstream, d[1]: upstream -> client */
  uint64_t budget; /* random cut: bytes still to forward, both ways; NO_BUDGET: none */
} conn_t;

typedef struct {
  int lfd;
  struct sockaddr_in up;
  int64_t refuse_until;
  chaos_how_t refuse_how;
  chaos_counters_t c;
} route_t;

struct chaos_proxy {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* counters moved, a cut was done */
  pthread_t thread;
  int wake[2];
  int nroutes;
  route_t routes[CHAOS_MAX_ROUTES];
  conn_t *conns;
  bool stopping;
  int64_t stall_until;
  uint64_t rate; /* bytes/s per direction and connection; 0: unlimited */
  int64_t delay_ns;
  struct {
    uint64_t lo, hi, state;
    int permille, route;
    chaos_how_t how;
    bool rearm; /* live connections draw again */
  } rnd;
  struct {
    bool pending;
    int route, refuse_ms, result;
    chaos_how_t how;
    uint64_t gen, done;
  } cut;
  char buf[PIECE]; /* the thread's read buffer */
};

/* CLOCK_MONOTONIC in ns. */
static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64: the next number of *state. */
static uint64_t next_rand(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Under mu: a random-cut budget for a connection of route, or NO_BUDGET. */
static uint64_t draw_budget(chaos_proxy_t *p, int route) {
  if (p->rnd.permille <= 0 || (p->rnd.route != CHAOS_ALL_ROUTES && p->rnd.route != route)) return NO_BUDGET;
  if ((int)(next_rand(&p->rnd.state) % 1000) >= p->rnd.permille) return NO_BUDGET;
  return p->rnd.lo + next_rand(&p->rnd.state) % (p->rnd.hi - p->rnd.lo + 1);
}

/* Wakes the thread out of its poll. */
static void wake(chaos_proxy_t *p) {
  char b = 1;
  ssize_t w = write(p->wake[1], &b, 1);
  (void)w; /* a full pipe wakes it as well */
}

/* Closes fd the way how says: RST discards what is unsent; FIN sends it
 * and an end of stream (what the peer sent and nobody read is drained
 * first, so that closing does not turn into a reset). */
static void close_how(int fd, chaos_how_t how) {
  if (fd < 0) return;
  if (how == CHAOS_RST) {
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  } else {
    char buf[4096];
    shutdown(fd, SHUT_WR);
    for (int i = 0; i < 64 && recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0; i++) {}
  }
  close(fd);
}

/* Under mu: ends c (both sockets closed with how, its queues freed);
 * the thread frees c itself at the end of the round. */
static void conn_end(chaos_proxy_t *p, conn_t *c, chaos_how_t how) {
  if (c->dead) return;
  c->dead = true;
  close_how(c->fd[0], how);
  close_how(c->fd[1], how);
  c->fd[0] = c->fd[1] = -1;
  for (int i = 0; i < 2; i++)
    for (piece_t *x = c->d[i].head, *n; x; x = n) {
      n = x->next;
      free(x);
    }
  p->routes[c->route].c.live--;
}

/* Under mu: frees the connections ended this round. */
static void reap(chaos_proxy_t *p) {
  for (conn_t **pp = &p->conns; *pp;) {
    conn_t *c = *pp;
    if (c->dead) {
      *pp = c->next;
      free(c);
    } else {
      pp = &c->next;
    }
  }
}

/* Under mu: appends a piece of n bytes (eof: none, the end) to d. */
static bool push(chaos_proxy_t *p, dir_t *d, const char *data, size_t n, bool eof, int64_t now) {
  piece_t *x = malloc(sizeof *x + n);
  if (!x) return false;
  *x = (piece_t){.due = now + p->delay_ns, .len = n, .eof = eof};
  if (n) memcpy(x->data, data, n);
  if (d->tail)
    d->tail->next = x;
  else
    d->head = x;
  d->tail = x;
  d->queued += n;
  return true;
}

/* Under mu: reads what source i of c has (a few pieces at most). */
static void pump_in(chaos_proxy_t *p, conn_t *c, int i, int64_t now) {
  char *buf = p->buf;
  dir_t *d = &c->d[i];
  for (int k = 0; k < READS_PER_ROUND && !d->eof_read && d->queued < QCAP; k++) {
    ssize_t n = recv(c->fd[i], buf, PIECE, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) { /* reset: the other side is reset too */
      conn_end(p, c, CHAOS_RST);
      return;
    }
    if (!push(p, d, buf, (size_t)n, n == 0, now)) {
      conn_end(p, c, CHAOS_RST);
      return;
    }
    if (n == 0) d->eof_read = true;
  }
}

/* Under mu: sends what direction i of c may send now; *deadline is
 * lowered to when it may send more (a piece's time, the stall's end, the
 * bucket's refill). */
static void pump_out(chaos_proxy_t *p, conn_t *c, int i, int64_t now, int64_t *deadline) {
  dir_t *d = &c->d[i];
  route_t *r = &p->routes[c->route];
  int to = c->fd[1 - i];
  while (!c->dead && d->head && !(i == 0 && c->connecting) && !d->want_out) {
    piece_t *x = d->head;
    int64_t at = x->due > p->stall_until ? x->due : p->stall_until;
    if (at > now) {
      if (at < *deadline) *deadline = at;
      return;
    }
    if (x->eof) {
      shutdown(to, SHUT_WR);
      d->eof_sent = true;
      d->head = NULL;
      d->tail = NULL;
      free(x);
      break;
    }
    size_t n = x->len - x->off;
    if (p->rate) {
      double burst = p->rate / 100.0 < 1024 ? 1024 : p->rate / 100.0;
      d->tokens += (double)(now - d->tok_at) * (double)p->rate / 1e9;
      if (d->tokens > burst) d->tokens = burst;
      d->tok_at = now;
      double want = (double)n < burst / 4 ? (double)n : burst / 4;
      if (d->tokens < want) {
        int64_t t = now + (int64_t)((want - d->tokens) * 1e9 / (double)p->rate) + 1;
        if (t < *deadline) *deadline = t;
        return;
      }
      if ((double)n > d->tokens) n = (size_t)d->tokens;
    }
    if (c->budget != NO_BUDGET && n > c->budget) n = (size_t)c->budget;
    ssize_t w = send(to, x->data + x->off, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      d->want_out = true;
      return;
    }
    if (w <= 0) { /* the receiver is gone: reset the sender */
      conn_end(p, c, CHAOS_RST);
      return;
    }
    x->off += (size_t)w;
    d->queued -= (size_t)w;
    if (i == 0)
      r->c.bytes_up += (uint64_t)w;
    else
      r->c.bytes_down += (uint64_t)w;
    if (p->rate) d->tokens -= (double)w;
    if (x->off == x->len) {
      d->head = x->next;
      if (!d->head) d->tail = NULL;
      free(x);
    }
    if (c->budget != NO_BUDGET && (c->budget -= (uint64_t)w) == 0) {
      conn_end(p, c, p->rnd.how);
      r->c.random_cuts++;
      return;
    }
  }
  if (!c->dead && c->d[0].eof_sent && c->d[1].eof_sent) conn_end(p, c, CHAOS_FIN); /* both ended */
}

/* Under mu: takes the connections waiting on route ri's listener. */
static void accept_all(chaos_proxy_t *p, int ri, int64_t now) {
  route_t *r = &p->routes[ri];
  for (int k = 0; k < 16; k++) {
    int cfd = accept4(r->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0) return;
    if (now < r->refuse_until) {
      close_how(cfd, r->refuse_how);
      r->c.refused++;
      continue;
    }
    r->c.accepted++;
    int one = 1, ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int rc = ufd < 0 ? -1 : connect(ufd, (struct sockaddr *)&r->up, sizeof r->up);
    conn_t *c = rc == 0 || errno == EINPROGRESS ? calloc(1, sizeof *c) : NULL;
    if (!c) {
      if (ufd >= 0) close(ufd);
      close_how(cfd, CHAOS_RST);
      r->c.upstream_failed++;
      continue;
    }
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *c = (conn_t){.route = ri, .fd = {cfd, ufd}, .connecting = rc != 0, .budget = draw_budget(p, ri), .next = p->conns};
    for (int i = 0; i < 2; i++) c->d[i].tok_at = now;
    p->conns = c;
    r->c.live++;
  }
}

/* Under mu: the upstream connect of c finished: carry on, or end it. */
static void connected(chaos_proxy_t *p, conn_t *c) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &err, &len) || err) {
    p->routes[c->route].c.upstream_failed++;
    conn_end(p, c, CHAOS_RST);
    return;
  }
  c->connecting = false;
}

/* Under mu: does the cut asked for. */
static void do_cut(chaos_proxy_t *p, int64_t now) {
  int n = 0;
  for (conn_t *c = p->conns; c; c = c->next)
    if (!c->dead && (p->cut.route == CHAOS_ALL_ROUTES || c->route == p->cut.route)) {
      conn_end(p, c, p->cut.how);
      p->routes[c->route].c.cuts++;
      n++;
    }
  for (int i = 0; i < p->nroutes; i++)
    if (p->cut.route == CHAOS_ALL_ROUTES || i == p->cut.route) {
      p->routes[i].refuse_until = now + (int64_t)p->cut.refuse_ms * 1000000;
      p->routes[i].refuse_how = p->cut.how;
    }
  p->cut.result = n;
  p->cut.pending = false;
  p->cut.done = p->cut.gen;
}

typedef struct {
  conn_t *c; /* NULL: a listener or the wake pipe */
  int side;  /* c's fd index; for a listener its route */
} slot_t;

/* The proxy's thread: rounds of cut, pump, poll, accept and read until stopping;
 * then every connection closed (FIN). */
static void *proxy_main(void *arg) {
  chaos_proxy_t *p = arg;
  size_t cap = 0;
  struct pollfd *pf = NULL;
  slot_t *sl = NULL;
  pthread_mutex_lock(&p->mu);
  while (!p->stopping) {
    int64_t now = now_ns(), deadline = INT64_MAX;
    if (p->cut.pending) do_cut(p, now);
    if (p->rnd.rearm) {
      for (conn_t *c = p->conns; c; c = c->next) c->budget = draw_budget(p, c->route);
      p->rnd.rearm = false;
    }
    for (conn_t *c = p->conns; c; c = c->next)
      for (int i = 0; i < 2; i++) pump_out(p, c, i, now, &deadline);
    reap(p);
    pthread_cond_broadcast(&p->cv);

    size_t need = 1 + (size_t)p->nroutes;
    for (conn_t *c = p->conns; c; c = c->next) need += 2;
    if (need > cap) {
      struct pollfd *npf = realloc(pf, need * sizeof *pf);
      if (npf) pf = npf;
      slot_t *nsl = realloc(sl, need * sizeof *sl);
      if (nsl) sl = nsl;
      if (!npf || !nsl) break; /* out of memory: the proxy stops */
      cap = need;
    }
    size_t n = 0;
    pf[n] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
    sl[n++] = (slot_t){NULL, -1};
    for (int i = 0; i < p->nroutes; i++) {
      pf[n] = (struct pollfd){.fd = p->routes[i].lfd, .events = POLLIN};
      sl[n++] = (slot_t){NULL, i};
    }
    for (conn_t *c = p->conns; c; c = c->next)
      for (int i = 0; i < 2; i++) {
        /* fd[i]: readable when its direction has room; writable when the
         * other direction waits for it, or (upstream) while connecting */
        short ev = 0;
        if (!c->d[i].eof_read && c->d[i].queued < QCAP && !(i == 1 && c->connecting)) ev |= POLLIN;
        if (c->d[1 - i].want_out || (i == 1 && c->connecting)) ev |= POLLOUT;
        pf[n] = (struct pollfd){.fd = ev ? c->fd[i] : -1, .events = ev};
        sl[n++] = (slot_t){c, i};
      }
    struct timespec ts, *tsp = NULL;
    if (deadline != INT64_MAX) {
      int64_t left = deadline > now ? deadline - now : 0;
      ts = (struct timespec){(time_t)(left / 1000000000), (long)(left % 1000000000)};
      tsp = &ts;
    }
    pthread_mutex_unlock(&p->mu);
    int got = ppoll(pf, n, tsp, NULL);
    pthread_mutex_lock(&p->mu);
    if (got <= 0) continue;
    now = now_ns();
    for (size_t k = 0; k < n; k++) {
      if (!pf[k].revents) continue;
      conn_t *c = sl[k].c;
      if (!c && sl[k].side < 0) {
        char b[64];
        while (read(p->wake[0], b, sizeof b) > 0) {}
      } else if (!c) {
        accept_all(p, sl[k].side, now);
      } else if (!c->dead) {
        int i = sl[k].side;
        if (i == 1 && c->connecting && (pf[k].revents & (POLLOUT | POLLERR | POLLHUP))) connected(p, c);
        if (!c->dead && (pf[k].revents & (POLLOUT | POLLERR | POLLHUP))) c->d[1 - i].want_out = false;
        if (!c->dead && (pf[k].revents & (POLLIN | POLLHUP | POLLERR))) pump_in(p, c, i, now);
      }
    }
  }
  for (conn_t *c = p->conns; c; c = c->next) conn_end(p, c, CHAOS_FIN);
  reap(p);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  free(pf);
  free(sl);
  return NULL;
}

chaos_proxy_t *chaos_proxy_new(void) {
  chaos_proxy_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC)) {
    free(p);
    return NULL;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&p->mu, NULL);
  p->rnd.state = 1;
  int rc = pthread_create(&p->thread, NULL, proxy_main, p);
  if (rc) {
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
    errno = rc;
    return NULL;
  }
  return p;
}

/* "HOST:PORT" (IPv4) into *sa: 0, or -1. */
static int parse_ipv4(const char *hp, struct sockaddr_in *sa) {
  char host[64];
  const char *colon = strrchr(hp, ':');
  if (!colon || (size_t)(colon - hp) >= sizeof host) return -1;
  memcpy(host, hp, (size_t)(colon - hp));
  host[colon - hp] = '\0';
  char *end;
  long port = strtol(colon + 1, &end, 10);
  if (end == colon + 1 || *end || port < 0 || port > 65535) return -1;
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)port);
  return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* A socket bound to *a (SO_REUSEADDR: a port a stopped proxy used is
 * taken again at once), *a updated to the bound address; or -1. */
static int bound_socket(struct sockaddr_in *a) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) return -1;
  socklen_t al = sizeof *a;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) || bind(fd, (struct sockaddr *)a, sizeof *a) ||
      getsockname(fd, (struct sockaddr *)a, &al)) {
    close(fd);
    return -1;
  }
  return fd;
}

int chaos_proxy_listen(chaos_proxy_t *p, const char *listen_on, const char *upstream, char *addr, size_t addrlen,
                       char *err, size_t errlen) {
  struct sockaddr_in a, up;
  char dummy[1];
  if (!err) err = dummy, errlen = sizeof dummy;
  if (parse_ipv4(upstream, &up)) return snprintf(err, errlen, "upstream %s is not IPv4 HOST:PORT", upstream), -1;
  if (parse_ipv4(listen_on, &a)) return snprintf(err, errlen, "listen address %s is not IPv4 HOST:PORT", listen_on), -1;
  int fd = bound_socket(&a);
  if (fd < 0 || listen(fd, 128) || fcntl(fd, F_SETFL, O_NONBLOCK)) {
    snprintf(err, errlen, "cannot listen on %s: %s", listen_on, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  if (addr) {
    char host[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
    snprintf(addr, addrlen, "%s:%u", host, (unsigned)ntohs(a.sin_port));
  }
  pthread_mutex_lock(&p->mu);
  int ri = p->nroutes < CHAOS_MAX_ROUTES ? p->nroutes++ : -1;
  if (ri >= 0) p->routes[ri] = (route_t){.lfd = fd, .up = up};
  pthread_mutex_unlock(&p->mu);
  if (ri < 0) {
    close(fd);
    return snprintf(err, errlen, "no more than %d routes", CHAOS_MAX_ROUTES), -1;
  }
  wake(p);
  return ri;
}

void chaos_proxy_free(chaos_proxy_t *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stopping = true;
  pthread_mutex_unlock(&p->mu);
  wake(p);
  pthread_join(p->thread, NULL);
  for (int i = 0; i < p->nroutes; i++) close(p->routes[i].lfd);
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}

int chaos_proxy_cut(chaos_proxy_t *p, int route, chaos_how_t how, int refuse_ms) {
  pthread_mutex_lock(&p->mu);
  while (p->cut.pending) pthread_cond_wait(&p->cv, &p->mu);
  p->cut.pending = true;
  p->cut.route = route;
  p->cut.how = how;
  p->cut.refuse_ms = refuse_ms > 0 ? refuse_ms : 0;
  uint64_t mine = ++p->cut.gen;
  wake(p);
  while (p->cut.done < mine && !p->stopping) pthread_cond_wait(&p->cv, &p->mu);
  int n = p->cut.result;
  pthread_mutex_unlock(&p->mu);
  return n;
}

void chaos_proxy_stall(chaos_proxy_t *p, int ms) {
  pthread_mutex_lock(&p->mu);
  p->stall_until = ms > 0 ? now_ns() + (int64_t)ms * 1000000 : 0;
  pthread_mutex_unlock(&p->mu);
  wake(p);
}

void chaos_proxy_throttle(chaos_proxy_t *p, uint64_t bytes_per_s) {
  pthread_mutex_lock(&p->mu);
  p->rate = bytes_per_s;
  int64_t now = now_ns();
  for (conn_t *c = p->conns; c; c = c->next)
    for (int i = 0; i < 2; i++) c->d[i].tokens = 0, c->d[i].tok_at = now;
  pthread_mutex_unlock(&p->mu);
  wake(p);
}

void chaos_proxy_delay(chaos_proxy_t *p, uint64_t one_way_us) {
  pthread_mutex_lock(&p->mu);
  p->delay_ns = (int64_t)one_way_us * 1000;
  pthread_mutex_unlock(&p->mu);
}

void chaos_proxy_random_cut(chaos_proxy_t *p, int route, uint64_t lo, uint64_t hi, int permille, uint64_t seed,
                            chaos_how_t how) {
  pthread_mutex_lock(&p->mu);
  if (lo < 1) lo = 1;
  if (hi < lo) hi = lo;
  p->rnd.lo = lo;
  p->rnd.hi = hi;
  p->rnd.permille = permille < 0 ? 0 : permille > 1000 ? 1000 : permille;
  p->rnd.state = seed;
  p->rnd.how = how;
  p->rnd.route = route;
  p->rnd.rearm = true;
  pthread_mutex_unlock(&p->mu);
  wake(p);
}

/* Under mu: route's counters, or all routes' summed. */
static chaos_counters_t counters_locked(chaos_proxy_t *p, int route) {
  chaos_counters_t s = {0};
  for (int i = 0; i < p->nroutes; i++) {
    if (route != CHAOS_ALL_ROUTES && route != i) continue;
    const chaos_counters_t *c = &p->routes[i].c;
    s.accepted += c->accepted;
    s.refused += c->refused;
    s.upstream_failed += c->upstream_failed;
    s.live += c->live;
    s.bytes_up += c->bytes_up;
    s.bytes_down += c->bytes_down;
    s.cuts += c->cuts;
    s.random_cuts += c->random_cuts;
  }
  return s;
}

chaos_counters_t chaos_proxy_counters(chaos_proxy_t *p, int route) {
  pthread_mutex_lock(&p->mu);
  chaos_counters_t s = counters_locked(p, route);
  pthread_mutex_unlock(&p->mu);
  return s;
}

int chaos_proxy_wait(chaos_proxy_t *p, int route, int (*pred)(const chaos_counters_t *c, void *arg), void *arg,
                     int timeout_ms) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  if (timeout_ms > 0) {
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&p->mu);
  int rc = 0;
  for (;;) {
    chaos_counters_t c = counters_locked(p, route);
    if (pred(&c, arg)) break;
    if (timeout_ms == 0 || p->stopping) {
      rc = -1;
      break;
    }
    if (timeout_ms < 0) {
      pthread_cond_wait(&p->cv, &p->mu);
    } else if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT) {
      c = counters_locked(p, route);
      rc = pred(&c, arg) ? 0 : -1;
      break;
    }
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int chaos_proxy_free_port(const char *host) {
  for (int tries = 0; tries < 50; tries++) {
    char hp[80];
    struct sockaddr_in a, b;
    snprintf(hp, sizeof hp, "%s:0", host);
    if (parse_ipv4(hp, &a) || parse_ipv4("127.0.0.1:0", &b)) return -1;
    int fa = bound_socket(&a);
    if (fa < 0) return -1;
    b.sin_port = a.sin_port;
    int fb = bound_socket(&b);
    close(fa);
    if (fb >= 0) {
      close(fb);
      return ntohs(a.sin_port);
    }
  }
  return -1;
}
