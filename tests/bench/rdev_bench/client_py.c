/*
 * tests/bench/rdev_bench/client_py.c — the Python package as rdev_bench
 * drives it (clients.h): a python3 child process running py_peer.py, which
 * holds a session of the `rdev` package; one command line to it, one answer
 * line back, each with a deadline (copies, and the operators phase's
 * rdev.ops calls). The child is started with posix_spawn
 * (this process has threads by then) and ends with the bench: on "quit", at
 * the end of its input, or by PR_SET_PDEATHSIG. In a build with
 * AddressSanitizer the package's extension is instrumented too: the child
 * then gets this process's libasan in LD_PRELOAD, leak checks off (the
 * interpreter keeps memory at exit), as the build's Python tests run it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baseline.h"
#include "clients.h"
#include "common.h"

extern char **environ;

#define START_S 60.0   /* the child's first line: python3 starts, imports numpy and rdev, connects */
#define ANSWER_S 120.0 /* any other answer */

struct cl_py {
  pid_t pid;
  int to, from; /* the child's stdin and stdout */
  char buf[1024];
  size_t len; /* bytes in buf not yet returned */
};

/* /usr/bin/python3 (Debian's, whose numpy the build's package is for), else
 * the first python3 on PATH. */
static int find_python(char *out, size_t len) {
  if (access("/usr/bin/python3", X_OK) == 0) {
    snprintf(out, len, "/usr/bin/python3");
    return 0;
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t n = strcspn(path, ":");
    if (n && (size_t)snprintf(out, len, "%.*s/python3", (int)n, path) < len && access(out, X_OK) == 0) return 0;
    path += n + (path[n] == ':');
  }
  return -1;
}

#if defined(__SANITIZE_ADDRESS__)
#define BENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BENCH_ASAN 1
#endif
#endif

#ifdef BENCH_ASAN
static int find_asan(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (info->dlpi_name && strstr(info->dlpi_name, "libasan") && strlen(info->dlpi_name) < PATH_MAX) {
    snprintf(data, PATH_MAX, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}
#endif

/* The child's environment (an array of environ's strings and the two
 * given): ours, and when preload is not empty, it and asan_options in
 * place of ours. */
static char **child_env(char *preload, char *asan_options) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 3, sizeof *env);
  if (!env) return NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (preload[0] && (!strncmp(environ[i], "LD_PRELOAD=", 11) || !strncmp(environ[i], "ASAN_OPTIONS=", 13))) continue;
    env[j++] = environ[i];
  }
  if (preload[0]) {
    env[j++] = preload;
    env[j++] = asan_options;
  }
  return env;
}

/* The next line from the child (without its newline) into line; 0, or -1
 * with the reason set (end of its output, or no line within secs). */
static int read_line(cl_py_t *p, char *line, size_t len, double secs) {
  double deadline = now_s() + secs;
  for (;;) {
    char *nl = memchr(p->buf, '\n', p->len);
    if (nl) {
      size_t n = (size_t)(nl - p->buf);
      snprintf(line, len, "%.*s", (int)n, p->buf);
      p->len -= n + 1;
      memmove(p->buf, nl + 1, p->len);
      return 0;
    }
    if (p->len == sizeof p->buf) return bl_fail("python: an answer longer than %zu bytes", sizeof p->buf);
    struct pollfd pf = {.fd = p->from, .events = POLLIN};
    int left = (int)((deadline - now_s()) * 1000);
    if (left <= 0) return bl_fail("python: no answer within %.0f s", secs);
    int r = poll(&pf, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return bl_fail("python: no answer within %.0f s", secs);
    ssize_t got = read(p->from, p->buf + p->len, sizeof p->buf - p->len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return bl_fail("python: py_peer.py ended (see its messages above)");
    p->len += (size_t)got;
  }
}

/* Sends cmd, reads the answer into line; -1 on an "error" answer. */
static int ask(cl_py_t *p, const char *cmd, char *line, size_t len) {
  char out[128];
  int n = snprintf(out, sizeof out, "%s\n", cmd);
  for (int off = 0; off < n;) {
    ssize_t w = write(p->to, out + off, (size_t)(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return bl_fail("python: cannot send '%s': %s", cmd, strerror(errno));
    off += (int)w;
  }
  if (read_line(p, line, len, ANSWER_S)) return -1;
  if (!strncmp(line, "error", 5)) return bl_fail("python: %s: %s", cmd, line);
  return 0;
}

/* Reaps the child (killing it after `wait_s`); its wait status, or -1. */
static int reap(cl_py_t *p, double wait_s) {
  int st = 0;
  double deadline = now_s() + wait_s;
  pid_t w;
  while ((w = waitpid(p->pid, &st, WNOHANG)) == 0 && now_s() < deadline) usleep(10000);
  if (w == 0) {
    kill(p->pid, SIGKILL);
    w = waitpid(p->pid, &st, 0);
  }
  return w == p->pid ? st : -1;
}

static void py_free(cl_py_t *p) {
  close(p->to);
  close(p->from);
  free(p);
}

int cl_py_open(cl_py_t **out, const char *python_script, const char *pkg_dir, const char *addr, char *note,
               size_t note_len) {
  *out = NULL;
  note[0] = '\0';
  char python[PATH_MAX];
  if (access(python_script, R_OK) != 0) {
    snprintf(note, note_len, "no %s: %s", python_script, strerror(errno));
    return 0;
  }
  if (find_python(python, sizeof python)) {
    snprintf(note, note_len, "no python3 (not /usr/bin/python3, none on PATH)");
    return 0;
  }
  char preload[PATH_MAX + 16], asan_options[] = "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1";
  preload[0] = '\0';
#ifdef BENCH_ASAN
  char lib[PATH_MAX] = "";
  if (dl_iterate_phdr(find_asan, lib)) snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
#endif
  char **env = child_env(preload, asan_options);
  int to[2], from[2];
  if (!env || pipe2(to, O_CLOEXEC)) {
    free(env);
    return bl_fail("python: cannot make a pipe: %s", strerror(errno));
  }
  if (pipe2(from, O_CLOEXEC)) {
    int e = errno;
    close(to[0]);
    close(to[1]);
    free(env);
    return bl_fail("python: cannot make a pipe: %s", strerror(e));
  }
  signal(SIGPIPE, SIG_IGN); /* a child that died answers EPIPE, not a signal */
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, from[1], STDOUT_FILENO);
  char *argv[] = {python, (char *)python_script, (char *)pkg_dir, (char *)addr, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, python, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(to[0]);
  close(from[1]);
  cl_py_t *p = calloc(1, sizeof *p);
  if (rc || !p) {
    close(to[1]);
    close(from[0]);
    if (!rc) {
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
    }
    free(p);
    if (rc) snprintf(note, note_len, "cannot run %s: %s", python, strerror(rc));
    return rc ? 0 : bl_fail("python: out of memory");
  }
  p->pid = pid;
  p->to = to[1];
  p->from = from[0];
  char line[sizeof p->buf];
  if (read_line(p, line, sizeof line, START_S)) {
    /* python3 itself failed (e.g. a broken interpreter): no figures */
    snprintf(note, note_len, "%s %s gave no answer (%s)", python, python_script, bl_error());
    reap(p, 1);
    py_free(p);
    return 0;
  }
  if (!strncmp(line, "na ", 3)) {
    snprintf(note, note_len, "%s", line + 3);
    reap(p, 10);
    py_free(p);
    return 0;
  }
  if (strcmp(line, "ready") != 0) {
    bl_fail("python: py_peer.py said '%s', not ready", line);
    reap(p, 1);
    py_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

int cl_py_copy(cl_py_t *p, int h2d, size_t size, long k, double *secs) {
  char cmd[96], line[sizeof p->buf], *end;
  snprintf(cmd, sizeof cmd, "%s %zu %ld", h2d ? "h2d" : "d2h", size, k);
  if (ask(p, cmd, line, sizeof line)) return -1;
  double v = strtod(line, &end);
  if (end == line || *end || !(v > 0)) return bl_fail("python: %s: answered '%s', not seconds", cmd, line);
  *secs = v;
  return 0;
}

int cl_py_verify(cl_py_t *p, size_t size) {
  char cmd[64], line[sizeof p->buf];
  snprintf(cmd, sizeof cmd, "verify %zu", size);
  if (ask(p, cmd, line, sizeof line)) return -1;
  return strcmp(line, "ok") ? bl_fail("python: %s: answered '%s'", cmd, line) : 0;
}

/* "na REASON" answers: 0 with REASON in note; "ok": 1. */
static int ok_or_na(const char *cmd, const char *line, char *note, size_t note_len) {
  if (!strcmp(line, "ok")) return 1;
  if (!strncmp(line, "na ", 3)) {
    snprintf(note, note_len, "%s", line + 3);
    return 0;
  }
  return bl_fail("python: %s: answered '%s'", cmd, line);
}

static const char *op_word(int problem) { return problem == OPER_ADD ? "add" : "matmul"; }

int cl_py_ops_open(cl_py_t *p, const oper_shape_t *s, char *note, size_t note_len) {
  char cmd[128], line[sizeof p->buf];
  snprintf(cmd, sizeof cmd, "opsinit %zu %lld %lld %lld", s->add_n, (long long)s->mm_m, (long long)s->mm_k,
           (long long)s->mm_n);
  if (ask(p, cmd, line, sizeof line)) return -1;
  return ok_or_na(cmd, line, note, note_len);
}

int cl_py_op_probe(cl_py_t *p, int problem, char *note, size_t note_len) {
  char cmd[64], line[sizeof p->buf];
  snprintf(cmd, sizeof cmd, "opprobe %s", op_word(problem));
  if (ask(p, cmd, line, sizeof line)) return -1;
  return ok_or_na(cmd, line, note, note_len);
}

int cl_py_op_run(cl_py_t *p, int problem, long k, double *secs) {
  char cmd[64], line[sizeof p->buf], *end;
  snprintf(cmd, sizeof cmd, "op %s %ld", op_word(problem), k);
  if (ask(p, cmd, line, sizeof line)) return -1;
  double v = strtod(line, &end);
  if (end == line || *end || !(v > 0)) return bl_fail("python: %s: answered '%s', not seconds", cmd, line);
  *secs = v;
  return 0;
}

int cl_py_op_verify(cl_py_t *p, int problem) {
  char cmd[64], line[sizeof p->buf];
  snprintf(cmd, sizeof cmd, "opverify %s", op_word(problem));
  if (ask(p, cmd, line, sizeof line)) return -1;
  return strcmp(line, "ok") ? bl_fail("python: %s: answered '%s'", cmd, line) : 0;
}

int cl_py_close(cl_py_t *p) {
  if (!p) return 0;
  char line[sizeof p->buf];
  int rc = ask(p, "quit", line, sizeof line);
  if (!rc && strcmp(line, "bye")) rc = bl_fail("python: quit: answered '%s'", line);
  int st = reap(p, 10);
  py_free(p);
  if (rc) return rc;
  if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) return bl_fail("python: py_peer.py ended with status 0x%x", st);
  return 0;
}
