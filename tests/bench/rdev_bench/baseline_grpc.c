/*
 * tests/bench/rdev_bench/baseline_grpc.c — the bare-gRPC baseline behind
 * baseline.h (bl_grpc_*): its server (baseline_grpc_server.c) and its client
 * (baseline_grpc_client.c) each run in a helper process forked here, driven
 * over pipes; the client helper times each call and sends the figure back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baseline.h"
#include "baseline_grpc.h"

/* The helper processes.
 *
 * The bare server and the bare client run in two helper processes forked
 * by bl_grpc_start (before the bench has threads), as rdevd and an rdev
 * client are two processes. In one process gRPC's poller is shared: the
 * client's thread, waiting on its queue, would do the server's socket reads
 * (seen in perf: the bare server thread then only landed the bytes), work
 * that across a network the receiving process must do itself.
 *
 * Both run with glibc malloc told to keep freed memory (mmap threshold
 * 64 MiB, trim threshold 1 GiB): gRPC allocates a fresh buffer for every
 * received 1 MiB message, and glibc's default trimming returns it to the
 * kernel each time, so every message costs page faults and TLB-shootdown
 * IPIs (10x slower on this VM class). The baseline is gRPC at its best on
 * this machine; the bench process itself (the rdev client) keeps glibc's
 * defaults, as a user's program would. Data buffers are MAP_SHARED, so all
 * processes see the same bytes at the same addresses; the client helper
 * times each call itself. */

enum { CMD_UPLOAD = 1, CMD_DOWNLOAD, CMD_UNARY, CMD_STOP };
enum { ROLE_SERVER, ROLE_CLIENT };

typedef struct {
  int op;
  uint64_t ptr, size, k, msg;
} bl_cmd_t;

typedef struct {
  int rc;
  double value; /* the server's start: its port */
  char err[400];
} bl_res_t;

typedef struct {
  pid_t pid;
  int to, from; /* pipes to and from it */
} helper_t;

struct bl_grpc {
  helper_t side[2];    /* [ROLE_SERVER], [ROLE_CLIENT] */
  int port;            /* the server helper's */
  bare_client_t *here; /* bl_grpc_unary_here's channel, in this process */
};

static int write_full(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_full(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

static void helper_reply(int fd, int rc, double value) {
  bl_res_t r = {.rc = rc, .value = value};
  if (rc) snprintf(r.err, sizeof r.err, "%.399s", bl_error());
  if (write_full(fd, &r, sizeof r)) _exit(3);
}

typedef struct {
  int role, port; /* port: the client's server */
  void *land;
  size_t land_len;
  const void *source;
  size_t source_len;
} helper_args_t;

static void helper_main(int rfd, int wfd, const helper_args_t *a) {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  bare_server_t *server = NULL;
  bare_client_t *client = NULL;
  int port = 0;
  int rc = a->role == ROLE_SERVER ? bare_server_start(&server, a->land, a->land_len, a->source, a->source_len, &port)
                                  : bare_client_start(&client, a->port);
  helper_reply(wfd, rc, port);
  if (rc) _exit(2);
  bl_cmd_t c;
  while (read_full(rfd, &c, sizeof c) == 0 && c.op != CMD_STOP) {
    double v = 0;
    switch (a->role == ROLE_CLIENT ? c.op : 0) {
      case CMD_UPLOAD: rc = bare_upload(client, (const void *)(uintptr_t)c.ptr, c.size, (long)c.k, c.msg, &v); break;
      case CMD_DOWNLOAD: rc = bare_download(client, (void *)(uintptr_t)c.ptr, c.size, (long)c.k, c.msg, &v); break;
      case CMD_UNARY: rc = bare_unary(client, &v); break;
      default: rc = bl_fail("helper: command %d is not for this side", c.op); break;
    }
    helper_reply(wfd, rc, v);
  }
  if (server) {
    rc = bare_server_errors(server) ? -1 : 0; /* bl_error() says why */
    bare_server_stop(server);
  } else {
    rc = 0;
    bare_client_stop(client);
  }
  helper_reply(wfd, rc, 0);
  _exit(0);
}

/* Stops helper h (it answers a STOP, then exits); 0 when it did so cleanly. */
static int helper_stop(helper_t *h) {
  if (h->pid <= 0) return 0;
  bl_cmd_t c = {.op = CMD_STOP};
  bl_res_t r;
  int rc = 0;
  if (write_full(h->to, &c, sizeof c) || read_full(h->from, &r, sizeof r))
    rc = bl_fail("grpc: the helper process (pid %d) did not stop cleanly", (int)h->pid);
  else if (r.rc)
    rc = bl_fail("%s", r.err);
  close(h->to);
  close(h->from);
  int st = 0;
  pid_t w = 0;
  for (int i = 0; i < 1000 && (w = waitpid(h->pid, &st, WNOHANG)) == 0; i++) usleep(10000);
  if (w == 0) {
    kill(h->pid, SIGKILL);
    waitpid(h->pid, &st, 0);
    rc = bl_fail("grpc: the helper process (pid %d) did not exit", (int)h->pid);
  } else if (rc == 0 && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
    rc = bl_fail("grpc: the helper process ended with status 0x%x", st);
  }
  h->pid = 0;
  return rc;
}

/* Forks a helper for a->role and waits for it to start; *value gets its
 * start reply's value. The child closes its copies of other's pipes. */
static int helper_spawn(helper_t *h, const helper_t *other, const helper_args_t *a, double *value) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC)) return bl_fail("grpc: pipe: %s", strerror(errno));
  if (pipe2(from, O_CLOEXEC)) {
    close(to[0]);
    close(to[1]);
    return bl_fail("grpc: pipe: %s", strerror(errno));
  }
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(to[0]), close(to[1]), close(from[0]), close(from[1]);
    return bl_fail("grpc: fork: %s", strerror(errno));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(to[1]);
    close(from[0]);
    if (other && other->pid > 0) close(other->to), close(other->from);
    helper_main(to[0], from[1], a);
  }
  close(to[0]);
  close(from[1]);
  *h = (helper_t){pid, to[1], from[0]};
  bl_res_t r;
  int dead = read_full(h->from, &r, sizeof r) != 0;
  if (dead || r.rc) {
    bl_fail("grpc: the %s helper process did not start: %s", a->role == ROLE_SERVER ? "server" : "client",
            dead ? "it died" : r.err);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(h->to);
    close(h->from);
    h->pid = 0;
    return -1;
  }
  *value = r.value;
  return 0;
}

int bl_grpc_start(bl_grpc_t **out, void *land, size_t land_len, const void *source, size_t source_len) {
  *out = NULL;
  bl_grpc_t *g = calloc(1, sizeof *g);
  if (!g) return bl_fail("grpc: out of memory");
  helper_args_t a = {ROLE_SERVER, 0, land, land_len, source, source_len};
  double port = 0;
  if (helper_spawn(&g->side[ROLE_SERVER], NULL, &a, &port)) {
    free(g);
    return -1;
  }
  a.role = ROLE_CLIENT;
  a.port = g->port = (int)port;
  double unused;
  if (helper_spawn(&g->side[ROLE_CLIENT], &g->side[ROLE_SERVER], &a, &unused)) {
    char why[BL_ERROR_MAX];
    snprintf(why, sizeof why, "%s", bl_error());
    helper_stop(&g->side[ROLE_SERVER]);
    free(g);
    return bl_fail("%s", why);
  }
  *out = g;
  return 0;
}

static int client_call(bl_grpc_t *g, const bl_cmd_t *c, double *value) {
  helper_t *h = &g->side[ROLE_CLIENT];
  bl_res_t r;
  if (write_full(h->to, c, sizeof *c) || read_full(h->from, &r, sizeof r))
    return bl_fail("grpc: the client helper process (pid %d) is gone", (int)h->pid);
  if (r.rc) return bl_fail("%s", r.err);
  *value = r.value;
  return 0;
}

int bl_grpc_upload(bl_grpc_t *g, const void *src, size_t size, long k, size_t msg, double *secs) {
  bl_cmd_t c = {CMD_UPLOAD, (uintptr_t)src, size, (uint64_t)k, msg};
  return client_call(g, &c, secs);
}

int bl_grpc_download(bl_grpc_t *g, void *dst, size_t size, long k, size_t msg, double *secs) {
  bl_cmd_t c = {CMD_DOWNLOAD, (uintptr_t)dst, size, (uint64_t)k, msg};
  return client_call(g, &c, secs);
}

int bl_grpc_unary(bl_grpc_t *g, double *us) {
  bl_cmd_t c = {.op = CMD_UNARY};
  return client_call(g, &c, us);
}

int bl_grpc_unary_here(bl_grpc_t *g, double *us) {
  if (!g->here && bare_client_start(&g->here, g->port)) return -1;
  return bare_unary(g->here, us);
}

int bl_grpc_stop(bl_grpc_t *g) {
  if (!g) return 0;
  if (g->here) bare_client_stop(g->here);      /* before the server goes */
  int rc = helper_stop(&g->side[ROLE_CLIENT]); /* the client first: it half-closes its stream */
  char why[BL_ERROR_MAX];
  snprintf(why, sizeof why, "%s", bl_error());
  int rs = helper_stop(&g->side[ROLE_SERVER]);
  free(g);
  if (!rc) return rs;
  if (!rs) return bl_fail("%s", why);
  char why_server[BL_ERROR_MAX];
  snprintf(why_server, sizeof why_server, "%s", bl_error());
  return bl_fail("%s; %s", why, why_server);
}
