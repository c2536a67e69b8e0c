/*
 * tests/bench/rdev_bench/delay_proxy.c — the delaying TCP proxy of
 * delay_proxy.h. Each accepted connection gets an upstream connection and
 * two pipes (one per direction), each a reader thread that reads what
 * arrives at once and stamps it with the time it may leave, and a writer
 * thread that sends each piece at its time. A half-close travels as a
 * piece of its own, so it is delayed too. The connection ends when its
 * four threads have.
 */
#define _GNU_SOURCE
#include "delay_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "rdev/clock.h"

#define PIECE (64u << 10)

typedef struct piece {
  struct piece *next;
  struct timespec due; /* CLOCK_MONOTONIC: when it may leave */
  size_t len;          /* 0: the sender half-closed */
  char data[];
} piece_t;

typedef struct conn conn_t;

typedef struct {
  conn_t *c;
  int from, to;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  piece_t *head, *tail;
} pipe_t;

struct conn {
  delay_proxy_t *p;
  int fd[2]; /* the client's, upstream */
  pipe_t pipe[2];
  int threads_left;
  conn_t *next;
};

struct delay_proxy {
  int lfd;
  struct sockaddr_in up;
  uint64_t delay_ns;
  pthread_t acceptor;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int threads;   /* running, the acceptor's included */
  conn_t *conns; /* live */
  int stopping;
};

/* A thread of p's ends: the last of a connection's closes and frees it. */
static void thread_done(delay_proxy_t *p, conn_t *c) {
  pthread_mutex_lock(&p->mu);
  if (c && --c->threads_left == 0) {
    for (conn_t **pp = &p->conns; *pp; pp = &(*pp)->next)
      if (*pp == c) {
        *pp = c->next;
        break;
      }
    close(c->fd[0]);
    close(c->fd[1]);
    for (int i = 0; i < 2; i++) {
      pthread_mutex_destroy(&c->pipe[i].mu);
      pthread_cond_destroy(&c->pipe[i].cv);
    }
    free(c);
  }
  p->threads--;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

static void push(pipe_t *q, piece_t *x) {
  pthread_mutex_lock(&q->mu);
  x->next = NULL;
  if (q->tail)
    q->tail->next = x;
  else
    q->head = x;
  q->tail = x;
  pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static void *reader(void *arg) {
  pipe_t *q = arg;
  delay_proxy_t *p = q->c->p;
  for (;;) {
    piece_t *x = malloc(sizeof *x + PIECE);
    if (!x) die("delay proxy: out of memory");
    ssize_t n = read(q->from, x->data, PIECE);
    if (n < 0 && errno == EINTR) {
      free(x);
      continue;
    }
    x->len = n > 0 ? (size_t)n : 0;
    x->due = rdev_clock_deadline_ns(p->delay_ns);
    push(q, x);
    if (n <= 0) break;
  }
  thread_done(p, q->c);
  return NULL;
}

static void *writer(void *arg) {
  pipe_t *q = arg;
  delay_proxy_t *p = q->c->p;
  int broken = 0;
  for (;;) {
    pthread_mutex_lock(&q->mu);
    while (!q->head) pthread_cond_wait(&q->cv, &q->mu);
    piece_t *x = q->head;
    q->head = x->next;
    if (!q->head) q->tail = NULL;
    pthread_mutex_unlock(&q->mu);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &x->due, NULL) == EINTR) {}
    size_t len = x->len, off = 0;
    while (!broken && off < len) {
      ssize_t w = send(q->to, x->data + off, len - off, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) { /* the receiver is gone: stop its sender too */
        broken = 1;
        shutdown(q->from, SHUT_RD);
      } else {
        off += (size_t)w;
      }
    }
    free(x);
    if (!len) {
      shutdown(q->to, SHUT_WR);
      break;
    }
  }
  thread_done(p, q->c);
  return NULL;
}

static void start_thread(delay_proxy_t *p, void *(*fn)(void *), void *arg) {
  pthread_t t;
  pthread_mutex_lock(&p->mu);
  p->threads++;
  pthread_mutex_unlock(&p->mu);
  if (pthread_create(&t, NULL, fn, arg)) die("delay proxy: pthread_create failed");
  pthread_detach(t);
}

static void serve(delay_proxy_t *p, int cfd) {
  int ufd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ufd < 0 || connect(ufd, (struct sockaddr *)&p->up, sizeof p->up) != 0) {
    if (ufd >= 0) close(ufd);
    close(cfd);
    return;
  }
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  conn_t *c = calloc(1, sizeof *c);
  if (!c) die("delay proxy: out of memory");
  c->p = p;
  c->fd[0] = cfd;
  c->fd[1] = ufd;
  c->threads_left = 4;
  for (int i = 0; i < 2; i++) {
    c->pipe[i] = (pipe_t){.c = c, .from = c->fd[i], .to = c->fd[1 - i]};
    pthread_mutex_init(&c->pipe[i].mu, NULL);
    pthread_cond_init(&c->pipe[i].cv, NULL);
  }
  pthread_mutex_lock(&p->mu);
  c->next = p->conns;
  p->conns = c;
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < 2; i++) {
    start_thread(p, reader, &c->pipe[i]);
    start_thread(p, writer, &c->pipe[i]);
  }
}

static void *acceptor(void *arg) {
  delay_proxy_t *p = arg;
  for (;;) {
    int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
    pthread_mutex_lock(&p->mu);
    int stopping = p->stopping;
    pthread_mutex_unlock(&p->mu);
    if (stopping) {
      if (cfd >= 0) close(cfd);
      break;
    }
    if (cfd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;
    }
    serve(p, cfd);
  }
  thread_done(p, NULL);
  return NULL;
}

/* "HOST:PORT" into *sa; dies naming what when it is not one. */
static void parse_ipv4(const char *hp, struct sockaddr_in *sa, const char *what) {
  char host[64];
  const char *colon = strrchr(hp, ':');
  if (!colon || (size_t)(colon - hp) >= sizeof host) die("delay proxy: %s %s is not HOST:PORT", what, hp);
  memcpy(host, hp, (size_t)(colon - hp));
  host[colon - hp] = '\0';
  memset(sa, 0, sizeof *sa);
  sa->sin_family = AF_INET;
  sa->sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa->sin_addr) != 1) die("delay proxy: %s %s is not an IPv4 address", what, hp);
}

/* A socket bound to a (SO_REUSEADDR: a port a stopped proxy used is taken
 * again at once), or -1. */
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

int delay_proxy_free_port(const char *host) {
  for (int tries = 0; tries < 50; tries++) {
    char hp[80];
    struct sockaddr_in a, b;
    snprintf(hp, sizeof hp, "%s:0", host);
    parse_ipv4(hp, &a, "host");
    int fa = bound_socket(&a);
    if (fa < 0) die("delay proxy: cannot bind %s: %s", hp, strerror(errno));
    parse_ipv4("127.0.0.1:0", &b, "host");
    b.sin_port = a.sin_port;
    int fb = bound_socket(&b);
    close(fa);
    if (fb >= 0) {
      close(fb);
      return ntohs(a.sin_port);
    }
  }
  die("delay proxy: no port free on both 127.0.0.1 and %s", host);
  return -1;
}

delay_proxy_t *delay_proxy_start(const char *listen_on, const char *upstream, uint64_t one_way_us, char *addr,
                                 size_t addrlen) {
  delay_proxy_t *p = calloc(1, sizeof *p);
  if (!p) die("delay proxy: out of memory");
  parse_ipv4(upstream, &p->up, "upstream");
  p->delay_ns = one_way_us * 1000u;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  struct sockaddr_in a;
  parse_ipv4(listen_on, &a, "listen address");
  p->lfd = bound_socket(&a);
  if (p->lfd < 0 || listen(p->lfd, 64)) die("delay proxy: cannot listen on %s: %s", listen_on, strerror(errno));
  char host[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a.sin_addr, host, sizeof host);
  snprintf(addr, addrlen, "%s:%u", host, (unsigned)ntohs(a.sin_port));
  p->threads = 1;
  if (pthread_create(&p->acceptor, NULL, acceptor, p)) die("delay proxy: pthread_create failed");
  pthread_detach(p->acceptor);
  return p;
}

void delay_proxy_stop(delay_proxy_t *p) {
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  shutdown(p->lfd, SHUT_RDWR); /* the acceptor's accept returns */
  for (conn_t *c = p->conns; c; c = c->next) {
    shutdown(c->fd[0], SHUT_RDWR);
    shutdown(c->fd[1], SHUT_RDWR);
  }
  while (p->threads > 0) pthread_cond_wait(&p->cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  close(p->lfd);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}
