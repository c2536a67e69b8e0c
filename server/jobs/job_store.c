/*
 * server/jobs/job_store.c — the job directory: one record per job
 * (ID.job, a JobRecord: spec, status, webhook secret; mode 0600) and one
 * file per kept output (ID.NAME.out). Every file is written whole to a
 * temporary name, fsynced, renamed over the old one and the directory
 * fsynced, so a crash leaves the old file or the new one, never a part.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "job_private.h"

#define RECORD_MAX (1u << 20) /* a record is far smaller; a larger file is not one */
#define TMP_MARK "~tmp."      /* in temporary names only: names of jobs and outputs have no '~' */

int srv_job_store_init(const char *dir) {
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    srv_log(SRV_LOG_ERROR, "job-dir %s: %s", dir, strerror(errno));
    return -1;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK | X_OK) != 0) {
    srv_log(SRV_LOG_ERROR, "job-dir %s: not a writable directory", dir);
    return -1;
  }
  return 0;
}

static void sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

/* Writes len bytes to path through a temporary file and a rename. 0 or -1 (logged). */
static int write_atomic(const char *dir, const char *path, const void *data, size_t len) {
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s" TMP_MARK "%ld", path, (long)gettid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    srv_log(SRV_LOG_ERROR, "%s: %s", tmp, strerror(errno));
    return -1;
  }
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= (size_t)n;
  }
  int ok = !left && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    srv_log(SRV_LOG_ERROR, "%s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  sync_dir(dir);
  return 0;
}

static void record_path(srv_jobs_t *jobs, const char *id, char *path, size_t len) {
  snprintf(path, len, "%s/%s.job", jobs->dir, id);
}

int srv_job_store_write(srv_jobs_t *jobs, const char *id, const rdev_v1_JobRecord *rec) {
  uint8_t *buf = malloc(RECORD_MAX);
  int rc = -1;
  if (buf) {
    pb_ostream_t os = pb_ostream_from_buffer(buf, RECORD_MAX);
    if (!pb_encode(&os, rdev_v1_JobRecord_fields, rec)) {
      srv_log(SRV_LOG_ERROR, "job %s: cannot encode its record: %s", id, PB_GET_ERROR(&os));
    } else {
      char path[512];
      record_path(jobs, id, path, sizeof path);
      rc = write_atomic(jobs->dir, path, buf, os.bytes_written);
    }
  }
  free(buf);
  return rc;
}

/* Whether name is ID.job, ID 16 lowercase hex digits. */
static int is_record(const char *name) {
  size_t n = strlen(name);
  if (n != SRV_JOB_ID_LEN + 4 || strcmp(name + SRV_JOB_ID_LEN, ".job")) return 0;
  for (int i = 0; i < SRV_JOB_ID_LEN; i++)
    if (!strchr("0123456789abcdef", name[i]) || !name[i]) return 0;
  return 1;
}

void srv_job_store_load(srv_jobs_t *jobs, void (*fn)(srv_jobs_t *jobs, const char *id, rdev_v1_JobRecord *rec)) {
  DIR *d = opendir(jobs->dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strstr(e->d_name, TMP_MARK)) { /* a write a crash cut short */
      char path[512];
      snprintf(path, sizeof path, "%s/%s", jobs->dir, e->d_name);
      unlink(path);
      continue;
    }
    if (!is_record(e->d_name)) continue;
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", jobs->dir, e->d_name);
    char *text;
    size_t len;
    if (srv_read_file(path, RECORD_MAX, &text, &len, err, sizeof err)) {
      srv_log(SRV_LOG_WARN, "%s", err);
      continue;
    }
    rdev_v1_JobRecord *rec = calloc(1, sizeof *rec);
    pb_istream_t is = pb_istream_from_buffer((const pb_byte_t *)text, len);
    if (!rec || !pb_decode(&is, rdev_v1_JobRecord_fields, rec)) {
      srv_log(SRV_LOG_WARN, "%s: not a job record (%s); left alone", path, rec ? PB_GET_ERROR(&is) : "no memory");
      if (rec) pb_release(rdev_v1_JobRecord_fields, rec);
    } else {
      char id[SRV_JOB_ID_LEN + 1];
      memcpy(id, e->d_name, SRV_JOB_ID_LEN);
      id[SRV_JOB_ID_LEN] = '\0';
      fn(jobs, id, rec);
    }
    free(rec);
    free(text);
  }
  closedir(d);
}

void srv_job_store_remove(srv_jobs_t *jobs, const char *id) {
  char path[512];
  record_path(jobs, id, path, sizeof path);
  unlink(path);
  /* its kept outputs: ID.NAME.out */
  DIR *d = opendir(jobs->dir);
  if (!d) return;
  struct dirent *e;
  size_t n = strlen(id);
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, id, n) && e->d_name[n] == '.' && strstr(e->d_name + n, ".out")) {
      snprintf(path, sizeof path, "%s/%s", jobs->dir, e->d_name);
      unlink(path);
    }
  closedir(d);
  sync_dir(jobs->dir);
}

void srv_job_store_out_path(srv_jobs_t *jobs, const char *id, const char *name, char *path, size_t len) {
  snprintf(path, len, "%s/%s.%s.out", jobs->dir, id, name);
}

FILE *srv_job_store_out_create(srv_jobs_t *jobs, const char *id, const char *name, char *tmp, size_t len) {
  char path[512];
  srv_job_store_out_path(jobs, id, name, path, sizeof path);
  snprintf(tmp, len, "%s" TMP_MARK "%ld", path, (long)gettid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!f) {
    srv_log(SRV_LOG_ERROR, "%s: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
  }
  return f;
}

int srv_job_store_out_commit(srv_jobs_t *jobs, FILE *f, const char *tmp, const char *id, const char *name) {
  char path[512];
  srv_job_store_out_path(jobs, id, name, path, sizeof path);
  int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    srv_log(SRV_LOG_ERROR, "%s: %s", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  sync_dir(jobs->dir);
  return 0;
}

void srv_job_store_out_remove(srv_jobs_t *jobs, const char *id, const char *name) {
  char path[512];
  srv_job_store_out_path(jobs, id, name, path, sizeof path);
  unlink(path);
}
