/*
 * client/cli/job_fetch.c — `rdev job fetch ID OUTPUT FILE`: an output the
 * job kept, streamed from the server into FILE (or stdout). A file is
 * written as FILE.XXXXXX next to it (made new by mkstemp, so no link is
 * followed), synced, and renamed over FILE only once whole; ^C ends the
 * fetch within 200 ms and removes it.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job_conn.h"
#include "job_fetch.h"

/* fetch: the connection, for the SIGINT handler (rdev_jobs_interrupt is
 * async-signal-safe: the fetch ends within 200 ms, and the file is removed). */
static rdev_jobs_t *volatile g_fetching;
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig) {
  (void)sig;
  g_interrupted = 1;
  rdev_jobs_interrupt(g_fetching);
}

typedef struct {
  FILE *f;
  int err; /* errno of a failed write */
} sink_t;

static int on_chunk(void *user, const void *data, size_t len, uint64_t total) {
  sink_t *s = user;
  if (g_interrupted) return EINTR;
  if (fwrite(data, 1, len, s->f) != len) {
    s->err = errno ? errno : EIO;
    return s->err;
  }
  return 0;
}

int cli_job_cmd_fetch(const char *target, const char *id, const char *output, const char *path) {
  bool to_stdout = !strcmp(path, "-");
  sink_t sink = {.f = stdout};
  char tmp[4096]; /* FILE.XXXXXX next to FILE: made new (O_EXCL), so no link is followed */
  if (!to_stdout && snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
    fprintf(stderr, "rdev: job fetch: path too long\n");
    return EXIT_ERROR;
  }
  rdev_jobs_t *j;
  if (cli_job_open("fetch", target, &j)) return EXIT_ERROR;
  /* ^C ends the fetch (unless the shell started us ignoring it) */
  struct sigaction sa, old;
  sigaction(SIGINT, NULL, &old);
  if (old.sa_handler != SIG_IGN) {
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    g_fetching = j;
    sigaction(SIGINT, &sa, NULL);
  }
  if (!to_stdout) {
    int fd = mkstemp(tmp);
    sink.f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!sink.f) {
      fprintf(stderr, "rdev: job fetch: cannot create %s: %s\n", tmp, strerror(errno));
      if (fd >= 0) close(fd), unlink(tmp);
      sigaction(SIGINT, &old, NULL);
      g_fetching = NULL;
      rdev_jobs_close(j);
      return EXIT_ERROR;
    }
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um); /* as a new file gets; mkstemp made it 0600 */
  }
  int rc = g_interrupted ? RDEV_CANCELLED : rdev_job_fetch(j, id, output, on_chunk, &sink);
  sigaction(SIGINT, &old, NULL);
  g_fetching = NULL;
  rdev_jobs_close(j);
  int ret = EXIT_OK;
  if (g_interrupted) {
    fprintf(stderr, "rdev: job fetch: interrupted\n");
    ret = EXIT_ERROR;
  } else if (rc && sink.err && rc == sink.err) {
    fprintf(stderr, "rdev: job fetch: cannot write %s: %s\n", to_stdout ? "stdout" : tmp, strerror(sink.err));
    ret = EXIT_ERROR;
  } else if (rc) {
    ret = cli_job_fail("fetch", rc);
  }
  if (to_stdout) {
    if (fflush(stdout) != 0 && !ret) {
      fprintf(stderr, "rdev: job fetch: cannot write stdout: %s\n", strerror(errno));
      ret = EXIT_ERROR;
    }
  } else {
    int werr = 0;
    if (fflush(sink.f) != 0 || fsync(fileno(sink.f)) != 0) werr = errno;
    if (fclose(sink.f) != 0 && !werr) werr = errno;
    if (!ret && werr) {
      fprintf(stderr, "rdev: job fetch: cannot write %s: %s\n", tmp, strerror(werr));
      ret = EXIT_ERROR;
    }
    if (!ret && rename(tmp, path) != 0) {
      fprintf(stderr, "rdev: job fetch: cannot rename %s to %s: %s\n", tmp, path, strerror(errno));
      ret = EXIT_ERROR;
    }
    if (ret) unlink(tmp);
  }
  return ret;
}
