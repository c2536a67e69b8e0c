/*
 * tests/bench/rdev_bench/rdevd.c — the rdevds that rdev_bench starts when
 * no --target is given (the main one on 127.0.0.1:0, and the same-host
 * phase's on a unix socket): where the binary is, starting one on a listen
 * address and reading its address, stopping one or all (a clean SIGTERM
 * exit is part of the result), killing all on failure, and their /proc
 * memory figures. Their pids are this file's alone (rdevd.h is the only
 * way to them).
 */
#define _GNU_SOURCE
#include "rdevd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static pid_t g_child[RDEVD_MAX]; /* the rdevds we started and that still run; 0: a free slot */

void rdevd_kill_now(void) {
  for (int i = 0; i < RDEVD_MAX; i++)
    if (g_child[i] > 0) {
      kill(g_child[i], SIGKILL);
      waitpid(g_child[i], NULL, 0);
      g_child[i] = 0;
    }
}

static void child_atexit(void) { rdevd_kill_now(); }

void rdevd_default_path(char *out, size_t len) {
  char exe[PATH_MAX - 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) die("cannot read /proc/self/exe: give --rdevd PATH");
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash) *slash = '\0';
  if ((size_t)snprintf(out, len, "%s/../server/rdevd", exe) >= len) die("path too long: give --rdevd PATH");
}

pid_t rdevd_start(const char *path, const char *listen, const char *bulk, size_t arena, char *addr, size_t addrlen) {
  static int at_exit_set;
  if (!at_exit_set) {
    atexit(child_atexit);
    at_exit_set = 1;
  }
  int slot = 0;
  while (slot < RDEVD_MAX && g_child[slot] > 0) slot++;
  if (slot == RDEVD_MAX) die("cannot start another rdevd: %d running already", RDEVD_MAX);
  if (access(path, X_OK) != 0)
    die("cannot run rdevd at %s: %s (give --rdevd PATH, or --target ADDR for a running one)", path, strerror(errno));
  int p[2];
  if (pipe2(p, O_CLOEXEC)) die("pipe: %s", strerror(errno));
  char mem[32];
  snprintf(mem, sizeof mem, "%zuM", arena >> 20);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) die("fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
    if (getppid() != parent) _exit(127);
    dup2(p[1], STDOUT_FILENO);
    execl(path, path, "--listen", listen, "--sim-devices", "1", "--sim-mem", mem, "--drain-ms", "1000", "--log-level",
          "warn", "--bulk-listen", bulk ? bulk : "auto", (char *)NULL);
    _exit(127);
  }
  g_child[slot] = pid;
  close(p[1]);
  char line[256];
  size_t len = 0;
  double deadline = now_s() + 20;
  while (len < sizeof line - 1 && !memchr(line, '\n', len)) {
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int left = (int)((deadline - now_s()) * 1000);
    if (left <= 0 || poll(&pf, 1, left) <= 0) die("rdevd at %s did not report its address in 20 s", path);
    ssize_t n = read(p[0], line + len, sizeof line - 1 - len);
    if (n <= 0) die("rdevd at %s exited before listening (see its messages above)", path);
    len += (size_t)n;
  }
  close(p[0]); /* rdevd prints nothing else on stdout; it ignores SIGPIPE */
  line[len] = '\0';
  static const char kPrefix[] = "rdevd listening on ";
  char *nl = strchr(line, '\n');
  if (nl) *nl = '\0';
  if (strncmp(line, kPrefix, sizeof kPrefix - 1) != 0) die("rdevd said '%s', not its address", line);
  snprintf(addr, addrlen, "%s", line + sizeof kPrefix - 1);
  return pid;
}

int rdevd_stop_one(pid_t pid) {
  int slot = 0;
  while (slot < RDEVD_MAX && (pid <= 0 || g_child[slot] != pid)) slot++;
  if (slot == RDEVD_MAX) return 0;
  int st = 0;
  pid_t w = waitpid(pid, &st, WNOHANG);
  if (w == pid) {
    g_child[slot] = 0;
    fprintf(stderr, "rdev_bench: rdevd (pid %d) had died during the run (status 0x%x)\n", (int)pid, st);
    return 1;
  }
  kill(pid, SIGTERM);
  double deadline = now_s() + 10;
  while ((w = waitpid(pid, &st, WNOHANG)) == 0 && now_s() < deadline) usleep(10000);
  if (w == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    g_child[slot] = 0;
    fprintf(stderr, "rdev_bench: rdevd (pid %d) did not stop within 10 s of SIGTERM\n", (int)pid);
    return 1;
  }
  g_child[slot] = 0;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    fprintf(stderr, "rdev_bench: rdevd (pid %d) ended with status 0x%x on SIGTERM\n", (int)pid, st);
    return 1;
  }
  return 0;
}

int rdevd_stop(void) {
  int bad = 0;
  for (int i = 0; i < RDEVD_MAX; i++)
    if (g_child[i] > 0) bad |= rdevd_stop_one(g_child[i]);
  return bad;
}

long proc_status_kb(pid_t pid, const char *key) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  size_t kl = strlen(key);
  for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
    if (strncmp(l, key, kl) == 0 && l[kl] == ':') return strtol(l + kl + 1, NULL, 10);
  return -1;
}

int reset_hwm(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/clear_refs", (int)pid);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int ok = write(fd, "5", 1) == 1;
  close(fd);
  return ok ? 0 : -1;
}
