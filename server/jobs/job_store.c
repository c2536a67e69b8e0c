/*
 * server/jobs/job_store.c — the job directory: one record per job
 * (ID.job, a JobRecord: status, spec, webhook secret; mode 0600) and one
 * file per kept output (ID.NAME.out); at start-up, what the records and
 * output files there say, damaged ones included. Every file is written whole to a
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

/* Writes len bytes to path through a temporary file and a rename. 0, or
 * the errno of what failed (logged). */
static int write_atomic(const char *dir, const char *path, const void *data, size_t len) {
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s" TMP_MARK "%ld", path, (long)gettid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    srv_log(SRV_LOG_ERROR, "%s: %s", tmp, strerror(e));
    return e;
  }
  const char *p = data;
  size_t left = len;
  int e = 0;
  while (left) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      e = n < 0 ? errno : ENOSPC;
      break;
    }
    p += n;
    left -= (size_t)n;
  }
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    srv_log(SRV_LOG_ERROR, "%s: %s", path, strerror(e));
    unlink(tmp);
    return e;
  }
  sync_dir(dir);
  return 0;
}

static void record_path(srv_jobs_t *jobs, const char *id, char *path, size_t len) {
  snprintf(path, len, "%s/%s.job", jobs->dir, id);
}

int srv_job_store_write(srv_jobs_t *jobs, const char *id, const rdev_v1_JobRecord *rec) {
  uint8_t *buf = malloc(RECORD_MAX);
  int rc = ENOMEM;
  if (buf) {
    pb_ostream_t os = pb_ostream_from_buffer(buf, RECORD_MAX);
    if (!pb_encode(&os, rdev_v1_JobRecord_fields, rec)) {
      srv_log(SRV_LOG_ERROR, "job %s: cannot encode its record: %s", id, PB_GET_ERROR(&os));
      rc = EINVAL;
    } else {
      char path[512];
      record_path(jobs, id, path, sizeof path);
      rc = write_atomic(jobs->dir, path, buf, os.bytes_written);
    }
  }
  free(buf);
  return rc;
}

/* Whether name starts with an ID: 16 lowercase hex digits. */
static int has_id(const char *name) {
  for (int i = 0; i < SRV_JOB_ID_LEN; i++)
    if (!name[i] || !strchr("0123456789abcdef", name[i])) return 0;
  return 1;
}

/* Whether name is ID.job. */
static int is_record(const char *name) {
  return strlen(name) == SRV_JOB_ID_LEN + 4 && has_id(name) && !strcmp(name + SRV_JOB_ID_LEN, ".job");
}

static int64_t mtime_ms(const struct stat *sb) {
  return (int64_t)sb->st_mtim.tv_sec * 1000 + sb->st_mtim.tv_nsec / 1000000;
}

/* What a record that does not decode whole still says of its status (the
 * first field, so a record cut short keeps it): its fields up to the
 * fault. 1 when the status itself was whole. */
static int status_of_damaged(const uint8_t *text, size_t len, rdev_v1_JobStatus *st) {
  pb_istream_t is = pb_istream_from_buffer(text, len);
  pb_wire_type_t wt;
  uint32_t tag, n;
  bool eof;
  while (pb_decode_tag(&is, &wt, &tag, &eof)) {
    if (tag == rdev_v1_JobRecord_status_tag && wt == PB_WT_STRING) {
      if (!pb_decode_varint32(&is, &n)) return 0;
      pb_istream_t sub = is; /* a substream of at most n bytes, as nanopb makes them */
      int whole = sub.bytes_left >= n;
      if (whole) sub.bytes_left = n;
      return pb_decode(&sub, rdev_v1_JobStatus_fields, st) && whole; /* static fields: a fault keeps those before it */
    }
    if (!pb_skip_field(&is, wt)) return 0;
  }
  return 0;
}

void srv_job_store_load(srv_jobs_t *jobs, srv_job_load_fn fn) {
  DIR *d = opendir(jobs->dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", jobs->dir, e->d_name);
    if (strstr(e->d_name, TMP_MARK)) { /* a write a crash cut short */
      unlink(path);
      continue;
    }
    if (!is_record(e->d_name)) continue;
    char id[SRV_JOB_ID_LEN + 1], err[300], why[400];
    memcpy(id, e->d_name, SRV_JOB_ID_LEN);
    id[SRV_JOB_ID_LEN] = '\0';
    struct stat sb;
    srv_job_file_t f = {.id = id, .mtime_ms = lstat(path, &sb) == 0 ? mtime_ms(&sb) : 0};
    rdev_v1_JobRecord *rec = calloc(1, sizeof *rec);
    if (!rec) {
      srv_log(SRV_LOG_ERROR, "%s: out of memory; not loaded", path);
      continue;
    }
    char *text = NULL;
    size_t len = 0;
    if (srv_read_file(path, RECORD_MAX, &text, &len, err, sizeof err)) {
      f.damaged = err;
    } else {
      pb_istream_t is = pb_istream_from_buffer((const pb_byte_t *)text, len);
      if (!pb_decode(&is, rdev_v1_JobRecord_fields, rec)) {
        snprintf(why, sizeof why, "not a whole record: %s", PB_GET_ERROR(&is));
        f.damaged = why;
      } else if (!rec->has_status || !rec->status.id[0]) {
        f.damaged = "a record without its status";
      } else if (strcmp(rec->status.id, id) != 0) {
        srv_log(SRV_LOG_WARN, "%s: the record of job %s, not of %s; left alone", path, rec->status.id, id);
        pb_release(rdev_v1_JobRecord_fields, rec);
        free(rec);
        free(text);
        continue;
      }
      if (f.damaged) {
        pb_release(rdev_v1_JobRecord_fields, rec);
        memset(rec, 0, sizeof *rec);
        f.status_whole = status_of_damaged((const uint8_t *)text, len, &rec->status);
      }
    }
    fn(jobs, &f, rec);
    free(rec);
    free(text);
  }
  closedir(d);
}

void srv_job_store_outputs(srv_jobs_t *jobs, void (*fn)(srv_jobs_t *jobs, const char *id, const char *name,
                                                        uint64_t bytes, int64_t mtime_ms)) {
  DIR *d = opendir(jobs->dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < SRV_JOB_ID_LEN + 6 || !has_id(e->d_name) || e->d_name[SRV_JOB_ID_LEN] != '.' ||
        strcmp(e->d_name + n - 4, ".out"))
      continue;
    char id[SRV_JOB_ID_LEN + 1], name[64], path[512];
    size_t nlen = n - SRV_JOB_ID_LEN - 5;
    if (nlen >= sizeof name) continue;
    memcpy(id, e->d_name, SRV_JOB_ID_LEN);
    id[SRV_JOB_ID_LEN] = '\0';
    memcpy(name, e->d_name + SRV_JOB_ID_LEN + 1, nlen);
    name[nlen] = '\0';
    if (!srv_job_name_ok(name)) continue;
    snprintf(path, sizeof path, "%s/%s", jobs->dir, e->d_name);
    struct stat sb;
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    fn(jobs, id, name, (uint64_t)sb.st_size, mtime_ms(&sb));
  }
  closedir(d);
}

int srv_job_store_out_exists(srv_jobs_t *jobs, const char *id, const char *name) {
  char path[512];
  struct stat sb;
  srv_job_store_out_path(jobs, id, name, path, sizeof path);
  return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
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
