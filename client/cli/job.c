/*
 * client/cli/job.c — `rdev job ...`: submit a job spec (job_yaml.c reads
 * it), and look at, watch, cancel and list the tenant's jobs, over a jobs
 * connection (rdev/job.h: no device session; job_conn.c opens it and
 * reports a failed call); job_fetch.c fetches what they kept.
 * job_conn.h and job_fetch.h are what the three offer each other.
 *
 * Exit status: 0 done (for submit --wait and watch: the job SUCCEEDED), 1
 * the watched job ended FAILED or CANCELLED, 2 anything else (usage, a bad
 * spec, no connection, a call the server refused, a file not written).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "job_conn.h"
#include "job_fetch.h"
#include "job_yaml.h"
#include "rdev/job.h"

static void job_usage(FILE *f) {
  fprintf(f,
          "usage: rdev [--target ADDR] job <command>\n"
          "\n"
          "  submit SPEC [--wait]    queue the job SPEC describes (a YAML or JSON file; - = stdin);\n"
          "                          prints its id, then `secret SECRET`, the key of its webhooks'\n"
          "                          signatures (shown only now); --wait: then watch it\n"
          "  status ID               the job's state, progress, times, webhooks and kept outputs\n"
          "  watch ID [--reconnect S]\n"
          "                          follow the job until it is final: progress bars on a terminal,\n"
          "                          else a line per change; when rdevd goes away (a restart), try\n"
          "                          to watch again for S seconds (default 60; 0: give up at once)\n"
          "                          and go on where it was, else fail (900002 UNAVAILABLE)\n"
          "  cancel ID               cancel the job; prints the state it ended in\n"
          "  list                    the tenant's jobs, newest first: ID STATE NAME\n"
          "  fetch ID OUTPUT FILE    write the output OUTPUT the job kept into FILE (- = stdout)\n"
          "\n"
          "Exit status: 0 done (submit --wait, watch: the job succeeded), 1 the job failed or was\n"
          "cancelled, 2 any other error.\n"
          "\n"
          "A spec (YAML; JSON too):\n"
          "  name: square-256M                  # for people\n"
          "  buffers:                           # device buffers, zeroed (at most 16)\n"
          "    - {name: x, size: 256MiB}        # sizes: bytes, or K M G T / KiB.. (2^n), KB.. (10^n)\n"
          "    - {name: y, size: 268435456, device: 0}\n"
          "  inputs:                            # HTTP(S) GETs into buffers (at most 16)\n"
          "    - {buffer: x, url: \"https://h/data\", sha256: HEX, offset: 0, max_bytes: 256MiB}\n"
          "  binaries:                          # kernel binaries, fetched with the inputs (at most 4)\n"
          "    - {name: kb, url: \"https://h/kernels.bin\", sha256: HEX}\n"
          "  steps:                             # in order, on streams 0..7 (at most 64)\n"
          "    - {launch: square_f32, blocks: 64, args: [x, y, {u64: 67108864}], stream: 0, name: sq}\n"
          "    - {function: DeviceWrite, binary: kb, blocks: 16, args: [y, {i32: 7}]}\n"
          "    - {copy: {dst: y, src: {buffer: x, offset: 64}, count: 1024}}\n"
          "    - {memset: {dst: y, value: 0, count: 100}}\n"
          "  outputs:                           # PUT (or POST) to a URL, or kept for `fetch`\n"
          "    - {name: result, buffer: y, url: \"https://h/upload/r\", method: PUT}\n"
          "    - {name: head, buffer: y, offset: 0, size: 4096}\n"
          "  callback_url: \"https://h/hook\"     # a signed POST on each state change\n"
          "  timeout: 10m                       # seconds, or 30s, 10m, 2h\n"
          "  retries: 3                         # per transfer\n"
          "Kernel arguments: a buffer name, {buffer: NAME, offset: N}, {i32|u32|i64|u64|f32|f64: N},\n"
          "or a bare number, typed by the kernel's signature (the server's Info); a function's\n"
          "arguments are written typed (only its binary knows them).\n"
          "Names: 1 to 31 of A-Z a-z 0-9 _ . -\n");
}

/* Replaces anything unprintable in s (a server's text, shown on a
 * terminal) with '?'. */
static void clean(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

static void clean_status(rdev_v1_JobStatus *st) {
  clean(st->id);
  clean(st->name);
  clean(st->failed_at);
  clean(st->message);
  clean(st->tenant);
  for (pb_size_t i = 0; i < st->hooks_count; i++) clean(st->hooks[i].error);
  for (pb_size_t i = 0; i < st->kept_count; i++) clean(st->kept[i].name);
}

/* Unix milliseconds as 2026-12-02T05:00:01Z; 0: "-". */
static const char *fmt_time(int64_t ms, char buf[32]) {
  if (ms <= 0) return "-";
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm)) return "?";
  return buf;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A byte count for people: 123 B, 4.0 KiB, 256.0 MiB. */
static const char *fmt_bytes(uint64_t n, char buf[32]) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) {
    snprintf(buf, 32, "%llu B", (unsigned long long)n);
    return buf;
  }
  double v = (double)n / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  snprintf(buf, 32, "%.1f %s", v, units[u]);
  return buf;
}

/* "failed at step 2 (sq): 507015 RT_AICORE_EXCEPTION: message" after the
 * state, when the job failed. */
static void put_state(FILE *f, const rdev_v1_JobStatus *st) {
  fputs(rdev_job_state_name(st->state), f);
  if (st->state != rdev_v1_JobState_FAILED) return;
  if (st->failed_at[0]) fprintf(f, " at %s", st->failed_at);
  fprintf(f, ": %d %s", st->code, rdev_status_name(st->code));
  if (st->message[0]) fprintf(f, ": %s", st->message);
}

/* ---- watch ---------------------------------------------------------------- */

typedef struct {
  bool tty;
  int drawn; /* lines of the last drawing (tty) */
  bool have_prev;
  rdev_v1_JobStatus prev, cur;
} watch_ui_t;

static bool same_hook(const rdev_v1_JobHook *a, const rdev_v1_JobHook *b) {
  return a->state == b->state && a->delivered == b->delivered && a->attempts == b->attempts && a->at_ms == b->at_ms;
}

static void put_hook(FILE *f, const rdev_v1_JobHook *h) {
  fprintf(f, "%s %s (", rdev_job_state_name(h->state), h->delivered ? "delivered" : "not delivered");
  if (h->http_status) fprintf(f, "HTTP %d, ", h->http_status);
  fprintf(f, "%u attempt%s)", h->attempts, h->attempts == 1 ? "" : "s");
  if (!h->delivered && h->error[0]) fprintf(f, ": %s", h->error);
}

/* One line per change: "TIME what". A state change comes first, but a
 * final state last, after the progress that led to it. */
static void watch_lines(watch_ui_t *ui, const rdev_v1_JobStatus *st) {
  static const rdev_v1_JobStatus zero;
  const rdev_v1_JobStatus *p = ui->have_prev ? &ui->prev : &zero;
  char ts[32];
  fmt_time(now_ms(), ts);
  bool state = !ui->have_prev || st->state != p->state, last = rdev_job_state_final(st->state);
  if (state && !last) {
    printf("%s state ", ts);
    put_state(stdout, st);
    putchar('\n');
  }
  if (st->fetched_bytes != p->fetched_bytes)
    printf("%s fetching %llu/%llu bytes\n", ts, (unsigned long long)st->fetched_bytes,
           (unsigned long long)st->fetch_total);
  if (st->steps_done != p->steps_done) printf("%s steps %u/%u\n", ts, st->steps_done, st->steps_total);
  if (st->delivered_bytes != p->delivered_bytes)
    printf("%s delivering %llu/%llu bytes\n", ts, (unsigned long long)st->delivered_bytes,
           (unsigned long long)st->deliver_total);
  for (pb_size_t i = 0; i < st->hooks_count; i++) {
    bool seen = false;
    for (pb_size_t k = 0; k < p->hooks_count && !seen; k++) seen = same_hook(&st->hooks[i], &p->hooks[k]);
    if (seen) continue;
    printf("%s webhook ", ts);
    put_hook(stdout, &st->hooks[i]);
    putchar('\n');
  }
  if (state && last) {
    printf("%s state ", ts);
    put_state(stdout, st);
    putchar('\n');
  }
  fflush(stdout);
}

static void bar_line(const char *label, uint64_t done, uint64_t total, bool bytes) {
  enum { WIDTH = 30 };
  char a[32], b[32];
  int fill = total ? (int)((double)(done < total ? done : total) / (double)total * WIDTH) : 0;
  printf("\r\033[2K  %-8s [", label);
  for (int i = 0; i < WIDTH; i++) putchar(i < fill ? '#' : '.');
  printf("]");
  if (total)
    printf(" %3d%%", (int)((double)(done < total ? done : total) * 100 / (double)total));
  else
    printf("     ");
  if (bytes)
    printf("  %s / %s\n", fmt_bytes(done, a), total ? fmt_bytes(total, b) : "?");
  else
    printf("  %llu / %llu\n", (unsigned long long)done, (unsigned long long)total);
}

/* Progress bars, redrawn in place. */
static void watch_draw(watch_ui_t *ui, const rdev_v1_JobStatus *st) {
  if (ui->drawn) printf("\033[%dA", ui->drawn);
  int64_t from = st->started_ms ? st->started_ms : st->submitted_ms;
  int64_t to = st->finished_ms ? st->finished_ms : now_ms();
  int64_t secs = from && to > from ? (to - from) / 1000 : 0;
  printf("\r\033[2Kjob %s %s: %s, %lld:%02lld:%02lld\n", st->id, st->name, rdev_job_state_name(st->state),
         (long long)(secs / 3600), (long long)(secs / 60 % 60), (long long)(secs % 60));
  bar_line("fetch", st->fetched_bytes, st->fetch_total, true);
  bar_line("steps", st->steps_done, st->steps_total, false);
  bar_line("deliver", st->delivered_bytes, st->deliver_total, true);
  int delivered = 0, failing = 0;
  for (pb_size_t i = 0; i < st->hooks_count; i++) st->hooks[i].delivered ? delivered++ : failing++;
  if (st->hooks_count)
    printf("\r\033[2K  webhooks %d delivered, %d not\n", delivered, failing);
  else
    printf("\r\033[2K  webhooks none\n");
  ui->drawn = 5;
  if (rdev_job_state_final(st->state)) {
    printf("state ");
    put_state(stdout, st);
    putchar('\n');
    ui->drawn = 0;
  }
  fflush(stdout);
}

static int on_status(void *user, const rdev_v1_JobStatus *st) {
  watch_ui_t *ui = user;
  ui->cur = *st;
  clean_status(&ui->cur);
  if (ui->tty)
    watch_draw(ui, &ui->cur);
  else
    watch_lines(ui, &ui->cur);
  ui->prev = ui->cur;
  ui->have_prev = true;
  return 0;
}

/* Watches job id to its end, trying to watch again for reconnect_ms after
 * losing rdevd: the tool's exit status. */
static int watch(rdev_jobs_t *j, const char *id, int64_t reconnect_ms) {
  watch_ui_t *ui = calloc(1, sizeof *ui);
  if (!ui) {
    fprintf(stderr, "rdev: job watch: out of memory\n");
    return EXIT_ERROR;
  }
  ui->tty = isatty(STDOUT_FILENO);
  int rc = rdev_job_watch_within(j, id, reconnect_ms, on_status, ui);
  int ret;
  if (rc) {
    ret = cli_job_fail("watch", rc);
  } else {
    ret = ui->prev.state == rdev_v1_JobState_SUCCEEDED ? EXIT_OK : EXIT_JOB_FAILED;
  }
  free(ui);
  return ret;
}

/* ---- commands ------------------------------------------------------------- */

char *rdev_cli_read_file(const char *path, size_t max, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf && n <= max) {
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        errno = ENOMEM;
        break;
      }
      buf = nb;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) {
        free(buf);
        buf = NULL;
        errno = EIO;
      }
      break;
    }
  }
  if (f != stdin) fclose(f);
  *len = n;
  return buf;
}

static int cmd_submit(const char *target, int argc, char **argv) {
  const char *path = NULL;
  bool wait = false;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--wait"))
      wait = true;
    else if (!path && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
      path = argv[i];
    else {
      fprintf(stderr, "rdev: job submit: unexpected argument '%s'\n", argv[i]);
      return EXIT_ERROR;
    }
  }
  if (!path) {
    fprintf(stderr, "rdev: job submit wants a SPEC file (rdev job help)\n");
    return EXIT_ERROR;
  }
  size_t len;
  char *text = rdev_cli_read_file(path, RDEV_CLI_JOB_MAX_TEXT, &len); /* more: the parser refuses it */
  if (!text) {
    fprintf(stderr, "rdev: job submit: cannot read %s: %s\n", path, strerror(errno));
    return EXIT_ERROR;
  }
  rdev_v1_JobSpec *spec = calloc(1, sizeof *spec);
  rdev_v1_InfoReply *info = malloc(sizeof *info);
  rdev_v1_SubmitJobReply *rep = malloc(sizeof *rep);
  rdev_jobs_t *j = NULL;
  char err[512];
  int ret = EXIT_ERROR, rc;
  if (!spec || !info || !rep) {
    fprintf(stderr, "rdev: job submit: out of memory\n");
    goto out;
  }
  /* The kernels' signatures only when a bare number needs them. */
  rc = rdev_cli_job_parse(text, len, NULL, spec, err, sizeof err);
  if (rc && rc != RDEV_CLI_JOB_NEED_KERNELS) {
    fprintf(stderr, "rdev: job submit: %s: %s\n", path, err);
    goto out;
  }
  if (cli_job_open("submit", target, &j)) goto out;
  if (rc == RDEV_CLI_JOB_NEED_KERNELS) {
    rc = rdev_jobs_info(j, info);
    if (rc) {
      cli_job_fail("submit: the kernels' signatures (Info)", rc);
      goto out;
    }
    if (rdev_cli_job_parse(text, len, info, spec, err, sizeof err)) {
      fprintf(stderr, "rdev: job submit: %s: %s\n", path, err);
      goto out;
    }
  }
  rc = rdev_job_submit(j, spec, rep);
  if (rc) {
    cli_job_fail("submit", rc);
    goto out;
  }
  clean(rep->id);
  clean(rep->secret);
  printf("%s\nsecret %s\n", rep->id, rep->secret);
  fflush(stdout);
  if (isatty(STDOUT_FILENO))
    fprintf(stderr, "rdev: the secret signs the job's webhooks and is shown only now: keep it to check them\n");
  ret = wait ? watch(j, rep->id, RDEV_JOB_WATCH_RECONNECT_MS) : EXIT_OK;
out:
  rdev_jobs_close(j);
  rdev_cli_job_free(spec);
  free(rep);
  free(info);
  free(spec);
  free(text);
  return ret;
}

static int cmd_status(const char *target, const char *id) {
  rdev_jobs_t *j;
  if (cli_job_open("status", target, &j)) return EXIT_ERROR;
  rdev_v1_JobStatus *st = malloc(sizeof *st);
  if (!st) {
    rdev_jobs_close(j);
    fprintf(stderr, "rdev: job status: out of memory\n");
    return EXIT_ERROR;
  }
  int rc = rdev_job_get(j, id, st);
  rdev_jobs_close(j);
  if (rc) {
    free(st);
    return cli_job_fail("status", rc);
  }
  clean_status(st);
  char t[32], a[32], b[32];
  printf("id:         %s\n", st->id);
  printf("name:       %s\n", st->name);
  printf("tenant:     %s\n", st->tenant);
  printf("state:      %s\n", rdev_job_state_name(st->state));
  if (st->state == rdev_v1_JobState_FAILED) {
    printf("failed at:  %s\n", st->failed_at);
    printf("code:       %d %s (%s)\n", st->code, rdev_status_name(st->code), rdev_strerror(st->code));
    printf("message:    %s\n", st->message);
  } else if (st->message[0]) {
    printf("message:    %s\n", st->message);
  }
  printf("fetched:    %llu / %llu bytes\n", (unsigned long long)st->fetched_bytes, (unsigned long long)st->fetch_total);
  printf("steps:      %u / %u\n", st->steps_done, st->steps_total);
  printf("delivered:  %llu / %llu bytes\n", (unsigned long long)st->delivered_bytes,
         (unsigned long long)st->deliver_total);
  printf("submitted:  %s\n", fmt_time(st->submitted_ms, t));
  printf("started:    %s\n", fmt_time(st->started_ms, t));
  printf("finished:   %s", fmt_time(st->finished_ms, t));
  if (st->finished_ms && st->started_ms && st->finished_ms >= st->started_ms)
    printf(" (ran %.1f s)", (double)(st->finished_ms - st->started_ms) / 1000);
  putchar('\n');
  printf("webhooks:%s\n", st->hooks_count ? "" : "   none");
  for (pb_size_t i = 0; i < st->hooks_count; i++) {
    printf("  %s  ", fmt_time(st->hooks[i].at_ms, t));
    put_hook(stdout, &st->hooks[i]);
    putchar('\n');
  }
  printf("kept:%s\n", st->kept_count ? "" : "       none");
  for (pb_size_t i = 0; i < st->kept_count; i++) {
    const rdev_v1_JobKept *k = &st->kept[i];
    printf("  %-31s  %s (%llu bytes)  ", k->name, fmt_bytes(k->bytes, a), (unsigned long long)k->bytes);
    if (k->expires_ms)
      printf("until %s\n", fmt_time(k->expires_ms, b));
    else
      printf("gone\n");
  }
  free(st);
  return EXIT_OK;
}

/* `watch ID [--reconnect SECONDS]`, the option before or after ID. */
static int cmd_watch(const char *target, int argc, char **argv) {
  enum { MAX_RECONNECT_S = 86400 };
  const char *id = NULL;
  int64_t reconnect_ms = RDEV_JOB_WATCH_RECONNECT_MS;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--reconnect")) {
      char *end;
      long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : -1;
      if (i + 1 >= argc || !argv[i + 1][0] || *end || v < 0 || v > MAX_RECONNECT_S) {
        fprintf(stderr, "rdev: job watch: --reconnect wants whole seconds, 0 to %d\n", (int)MAX_RECONNECT_S);
        return EXIT_ERROR;
      }
      reconnect_ms = (int64_t)v * 1000;
      i++;
    } else if (!id && argv[i][0] != '-') {
      id = argv[i];
    } else {
      fprintf(stderr, "rdev: job watch: unexpected argument '%s'\n", argv[i]);
      return EXIT_ERROR;
    }
  }
  if (!id) {
    fprintf(stderr, "rdev: job watch wants a job ID (rdev job help)\n");
    return EXIT_ERROR;
  }
  rdev_jobs_t *j;
  if (cli_job_open("watch", target, &j)) return EXIT_ERROR;
  int ret = watch(j, id, reconnect_ms);
  rdev_jobs_close(j);
  return ret;
}

static int cmd_cancel(const char *target, const char *id) {
  rdev_jobs_t *j;
  if (cli_job_open("cancel", target, &j)) return EXIT_ERROR;
  rdev_v1_JobStatus *st = malloc(sizeof *st);
  int rc = st ? rdev_job_cancel(j, id, st) : RDEV_BAD_ALLOC;
  rdev_jobs_close(j);
  int ret = EXIT_OK;
  if (rc) {
    ret = st ? cli_job_fail("cancel", rc) : (fprintf(stderr, "rdev: job cancel: out of memory\n"), EXIT_ERROR);
  } else {
    clean_status(st);
    printf("%s ", st->id);
    put_state(stdout, st);
    putchar('\n');
  }
  free(st);
  return ret;
}

static int cmd_list(const char *target) {
  rdev_jobs_t *j;
  if (cli_job_open("list", target, &j)) return EXIT_ERROR;
  rdev_v1_ListJobsReply rep;
  int rc = rdev_job_list(j, &rep);
  rdev_jobs_close(j);
  if (rc) {
    pb_release(rdev_v1_ListJobsReply_fields, &rep);
    return cli_job_fail("list", rc);
  }
  for (pb_size_t i = 0; i < rep.jobs_count; i++) {
    rdev_v1_JobStatus *st = &rep.jobs[i];
    clean_status(st);
    printf("%-16s  %-10s  %s", st->id, rdev_job_state_name(st->state), st->name[0] ? st->name : "-");
    if (st->state == rdev_v1_JobState_FAILED) printf("  (%d %s)", st->code, rdev_status_name(st->code));
    putchar('\n');
  }
  pb_release(rdev_v1_ListJobsReply_fields, &rep);
  return EXIT_OK;
}

int rdev_cli_job(const char *target, int argc, char **argv) {
  const char *sub = argc > 0 ? argv[0] : "help";
  int n = argc - 1;
  char **a = argv + 1;
  if (!strcmp(sub, "help") || !strcmp(sub, "--help") || !strcmp(sub, "-h")) {
    job_usage(argc > 0 ? stdout : stderr);
    return argc > 0 ? EXIT_OK : EXIT_ERROR;
  }
  if (!strcmp(sub, "submit")) return cmd_submit(target, n, a);
  if (!strcmp(sub, "status") && n == 1) return cmd_status(target, a[0]);
  if (!strcmp(sub, "watch")) return cmd_watch(target, n, a);
  if (!strcmp(sub, "cancel") && n == 1) return cmd_cancel(target, a[0]);
  if (!strcmp(sub, "list") && n == 0) return cmd_list(target);
  if (!strcmp(sub, "fetch") && n == 3) return cli_job_cmd_fetch(target, a[0], a[1], a[2]);
  fprintf(stderr, "rdev: job: unknown command or arguments: %s (rdev job help)\n", sub);
  return EXIT_ERROR;
}
