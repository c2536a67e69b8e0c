/*
 * server/config.c — rdevd's settings and its log: defaults, one setting
 * from text (the flags and the config file share the keys), the config
 * file ("key = value" per line, '#' comments), sizes such as "64M", and
 * srv_log, the one place the server writes its log lines. It also owns the
 * text-file plumbing the config and tenants parsers share: reading a whole
 * file (srv_read_file) and cutting text into bounded, trimmed lines
 * (srv_lines_next).
 *
 * Text rules for both files: lines end in "\n" (a "\r" before it is white
 * space), the last line needs no "\n", '#' starts a comment anywhere on a
 * line, a line (its bytes before "\n") longer than SRV_LINE_MAX is an
 * error (never split into two lines), and so is a NUL byte anywhere.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "srv.h"

#define STR_(x) #x
#define STR(x) STR_(x)

int srv_log_level = SRV_LOG_INFO;
int srv_log_format = SRV_LOGF_TEXT;

/* Appends v to line[*n..cap) as a logfmt value (quoted when it is empty
 * or holds a space, '"', '=' or a control character) or a JSON string
 * (always quoted); '"' and '\\' escaped, control characters as \n, \t or
 * \u00XX (JSON) / \xXX (logfmt). Stops short of cap, leaving room for
 * the closing quote and NUL. */
static void put_value(char *line, size_t cap, size_t *n, const char *v, int json) {
  int quote = json || !*v;
  for (const char *p = v; *p && !quote; p++)
    quote = *p == ' ' || *p == '"' || *p == '=' || (unsigned char)*p < 0x20 || *p == 0x7f;
  size_t j = *n;
  if (quote && j + 2 < cap) line[j++] = '"';
  for (const unsigned char *p = (const unsigned char *)v; *p && j + 8 < cap; p++) {
    if (*p == '"' || *p == '\\') {
      line[j++] = '\\';
      line[j++] = (char)*p;
    } else if (*p == '\n') {
      line[j++] = '\\';
      line[j++] = 'n';
    } else if (*p == '\t') {
      line[j++] = '\\';
      line[j++] = 't';
    } else if (*p < 0x20 || *p == 0x7f) {
      j += (size_t)snprintf(line + j, cap - j, json ? "\\u%04x" : "\\x%02x", *p);
    } else {
      line[j++] = (char)*p;
    }
  }
  if (quote) line[j++] = '"';
  line[j] = '\0';
  *n = j;
}

/* One line of the log, in srv_log_format: the message msg, and for an
 * audit line its kind, tenant and peer. */
static void emit(int level, const char *audit, const char *tenant, const char *peer, char *msg) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char when[80];
  snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
  if (srv_log_format == SRV_LOGF_TEXT) {
    if (audit)
      fprintf(stderr, "%s rdevd %s: audit: %s: tenant=%s peer=%s %s\n", when, names[level], audit, tenant, peer, msg);
    else
      fprintf(stderr, "%s rdevd %s: %s\n", when, names[level], msg);
    return;
  }
  int json = srv_log_format == SRV_LOGF_JSON;
  rdev_wire_utf8_fix(msg, strlen(msg)); /* JSON strings are UTF-8 */
  char line[16384];                     /* each value takes at most 2600 bytes escaped: six of them and the keys fit */
  size_t n = 0;
  const char *keys[] = {"time", "level", "audit", "tenant", "peer", "msg"};
  const char *vals[] = {when, names[level], audit, tenant, peer, msg};
  if (json) line[n++] = '{';
  for (int i = 0; i < 6; i++) {
    if (!vals[i]) continue;
    char v[1024];
    snprintf(v, sizeof v, "%s", vals[i]);
    rdev_wire_utf8_fix(v, strlen(v));
    if (n > 1 || (!json && n)) line[n++] = json ? ',' : ' ';
    n += (size_t)snprintf(line + n, sizeof line - n, json ? "\"%s\":" : "%s=", keys[i]);
    put_value(line, n + 2600, &n, v, json);
  }
  if (json) line[n++] = '}';
  line[n++] = '\n';
  fwrite(line, 1, n, stderr);
}

void srv_log(int level, const char *fmt, ...) {
  if (level > srv_log_level) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  emit(level, NULL, NULL, NULL, msg);
}

void srv_audit(int level, const char *kind, const char *tenant, const char *peer, const char *fmt, ...) {
  if (level > srv_log_level) return;
  char rest[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rest, sizeof rest, fmt, ap);
  va_end(ap);
  emit(level, kind, tenant ? tenant : "-", peer ? peer : "-", rest);
}

/* ---- text files ---------------------------------------------------------------- */

int srv_read_file(const char *path, size_t max, char **text, size_t *len, char *err, size_t errlen) {
  *text = NULL;
  *len = 0;
  /* Opened without blocking and checked to be a regular file: a FIFO or a
   * device under the name would block the read for ever. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat sb;
  const char *no = NULL;
  FILE *f = NULL;
  if (fd < 0 || fstat(fd, &sb) != 0)
    no = strerror(errno);
  else if (!S_ISREG(sb.st_mode))
    no = "not a regular file";
  else if (!(f = fdopen(fd, "r")))
    no = strerror(errno);
  if (no) {
    snprintf(err, errlen, "%s: %s", path, no);
    if (fd >= 0) close(fd);
    return -1;
  }
  /* Reads up to max + 1 bytes: one more than max means too large. */
  size_t cap = 0, n = 0;
  char *buf = NULL;
  const char *why = NULL;
  for (;;) {
    if (n == cap) {
      if (cap > max) {
        why = "too large";
        break;
      }
      size_t want = cap < 4096 ? 4096 : cap * 2;
      if (want > max + 1) want = max + 1;
      char *more = realloc(buf, want + 1); /* + 1: the NUL after the text */
      if (!more) {
        why = "out of memory";
        break;
      }
      buf = more;
      cap = want;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got) continue;
    if (ferror(f)) why = strerror(errno ? errno : EIO);
    break;
  }
  fclose(f);
  if (!why && n > max) why = "too large";
  if (why) {
    if (!strcmp(why, "too large"))
      snprintf(err, errlen, "%s: larger than %zu bytes", path, max);
    else
      snprintf(err, errlen, "%s: %s", path, why);
    free(buf);
    return -1;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return 0;
}

void srv_lines_init(srv_lines_t *it, const char *text, size_t len) {
  it->p = text;
  it->end = text + len;
  it->lineno = 0;
}

int srv_lines_next(srv_lines_t *it, char buf[SRV_LINE_MAX + 1], char **line, const char **why) {
  *line = NULL;
  *why = NULL;
  if (it->p >= it->end) return 0;
  it->lineno++;
  const char *nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
  const char *e = nl ? nl : it->end;
  size_t n = (size_t)(e - it->p);
  if (n > SRV_LINE_MAX) {
    *why = "line longer than " STR(SRV_LINE_MAX) " bytes";
    return -1;
  }
  if (memchr(it->p, '\0', n)) {
    *why = "NUL byte in line";
    return -1;
  }
  memcpy(buf, it->p, n);
  buf[n] = '\0';
  it->p = nl ? nl + 1 : it->end;
  char *hash = strchr(buf, '#');
  if (hash) *hash = '\0';
  *line = srv_trim(buf);
  return 1;
}

/* ---- settings ------------------------------------------------------------------- */

void srv_config_defaults(srv_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->listen, sizeof cfg->listen, "127.0.0.1:50051");
  if (gethostname(cfg->server_name, sizeof cfg->server_name) != 0) cfg->server_name[0] = '\0';
  cfg->server_name[sizeof cfg->server_name - 1] = '\0';
  snprintf(cfg->bulk_listen, sizeof cfg->bulk_listen, "auto");
  snprintf(cfg->backend, sizeof cfg->backend, "sim");
  cfg->sim_devices = 2;
  cfg->sim_mem_bytes = (size_t)1 << 30;
  cfg->sim_slots = 4;
  const char *hv = getenv("RDEV_SIM_HOST_VIEW");
  cfg->sim_host_view = !(hv && (!strcmp(hv, "off") || !strcmp(hv, "0") || !strcmp(hv, "no") || !strcmp(hv, "false")));
  cfg->max_inflight = (size_t)32 << 20;
  cfg->threads = 1;
  cfg->drain_ms = 5000;
  cfg->resume_ms = 60000;
  cfg->log_level = SRV_LOG_INFO;
  cfg->job_keep_s = 86400;
  cfg->job_runners = 4;
  cfg->job_timeout_s = 3600;
  cfg->job_retries = 3;
}

int srv_parse_size(const char *v, size_t *out) {
  if (!isdigit((unsigned char)*v)) return -1; /* strtoull would take " -1" as 2^64-1 */
  char *end;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno) return -1;
  unsigned shift = 0;
  switch (toupper((unsigned char)*end)) {
    case 'K':
      shift = 10;
      end++;
      break;
    case 'M':
      shift = 20;
      end++;
      break;
    case 'G':
      shift = 30;
      end++;
      break;
    case '\0': break;
    default: return -1;
  }
  if (shift) { /* K, Ki, KB, KiB (any case) */
    if (toupper((unsigned char)*end) == 'I') end++;
    if (toupper((unsigned char)*end) == 'B') end++;
  }
  if (*end || n > (~0ULL >> shift) || (n << shift) > SIZE_MAX) return -1;
  *out = (size_t)(n << shift);
  return 0;
}

static int parse_int(const char *v, int lo, int hi, int *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < lo || n > hi) return -1;
  *out = (int)n;
  return 0;
}

/* A size of at least 4K into *out; *out untouched on failure. */
static int parse_size_min(const char *v, size_t *out) {
  size_t n;
  if (srv_parse_size(v, &n) || n < 4096) return -1;
  *out = n;
  return 0;
}

/* A non-empty string that fits dst (size bytes with its NUL) into dst. */
static int set_string(char *dst, size_t size, const char *v) {
  size_t n = strlen(v);
  if (!n || n >= size) return -1;
  memcpy(dst, v, n + 1);
  return 0;
}

int srv_config_set(srv_config_t *cfg, const char *key, const char *v, const char **err) {
  *err = NULL;
  if (!strcmp(key, "listen")) {
    if (set_string(cfg->listen, sizeof cfg->listen, v)) return *err = "listen: empty or too long", -1;
  } else if (!strcmp(key, "bulk-listen")) {
    if ((strcmp(v, "auto") && strcmp(v, "off") && !strchr(v, ':')) || !strncmp(v, "unix-abstract:", 14) ||
        set_string(cfg->bulk_listen, sizeof cfg->bulk_listen, v))
      return *err = "bulk-listen: auto, off, host:port or unix:/path", -1;
  } else if (!strcmp(key, "backend")) {
    if (set_string(cfg->backend, sizeof cfg->backend, v)) return *err = "backend: empty or too long", -1;
  } else if (!strcmp(key, "sim-devices")) {
    if (parse_int(v, 1, 64, &cfg->sim_devices)) return *err = "sim-devices: 1..64", -1;
  } else if (!strcmp(key, "sim-mem")) {
    if (parse_size_min(v, &cfg->sim_mem_bytes)) return *err = "sim-mem: a size such as 1G, 256M (at least 4K)", -1;
  } else if (!strcmp(key, "sim-slots")) {
    if (parse_int(v, 0, 1024, &cfg->sim_slots)) return *err = "sim-slots: 0..1024", -1;
  } else if (!strcmp(key, "sim-host-view")) {
    if (strcmp(v, "on") && strcmp(v, "off")) return *err = "sim-host-view: on or off", -1;
    cfg->sim_host_view = !strcmp(v, "on");
  } else if (!strcmp(key, "max-inflight")) {
    if (parse_size_min(v, &cfg->max_inflight)) return *err = "max-inflight: a size such as 64M (at least 4K)", -1;
  } else if (!strcmp(key, "threads")) {
    if (parse_int(v, 1, 64, &cfg->threads)) return *err = "threads: 1..64", -1;
  } else if (!strcmp(key, "drain-ms")) {
    if (parse_int(v, 0, 3600000, &cfg->drain_ms)) return *err = "drain-ms: 0..3600000", -1;
  } else if (!strcmp(key, "resume-ms")) {
    if (parse_int(v, 0, 3600000, &cfg->resume_ms)) return *err = "resume-ms: 0..3600000", -1;
  } else if (!strcmp(key, "log-format")) {
    static const char *lf[] = {"text", "logfmt", "json"};
    int i;
    for (i = 0; i < 3 && strcmp(v, lf[i]); i++) {}
    if (i == 3) return *err = "log-format: text, logfmt or json", -1;
    cfg->log_format = i;
  } else if (!strcmp(key, "metrics-listen")) {
    if (set_string(cfg->metrics_listen, sizeof cfg->metrics_listen, v))
      return *err = "metrics-listen: PORT, HOST:PORT or [V6]:PORT", -1;
  } else if (!strcmp(key, "log-level")) {
    static const char *lv[] = {"error", "warn", "info", "debug"};
    int i;
    for (i = 0; i < 4 && strcmp(v, lv[i]); i++) {}
    if (i == 4) return *err = "log-level: error, warn, info or debug", -1;
    cfg->log_level = i;
  } else if (!strcmp(key, "tenants") || !strcmp(key, "tls-cert") || !strcmp(key, "tls-key") ||
             !strcmp(key, "tls-client-ca")) {
    char *dst = !strcmp(key, "tenants")    ? cfg->tenants
                : !strcmp(key, "tls-cert") ? cfg->tls_cert
                : !strcmp(key, "tls-key")  ? cfg->tls_key
                                           : cfg->tls_client_ca;
    _Static_assert(sizeof cfg->tenants == sizeof cfg->tls_cert && sizeof cfg->tls_cert == sizeof cfg->tls_key &&
                       sizeof cfg->tls_key == sizeof cfg->tls_client_ca,
                   "the path settings share one size");
    if (set_string(dst, sizeof cfg->tenants, v)) return *err = "a path, not empty, under 256 bytes", -1;
  } else if (!strcmp(key, "server-name")) {
    for (const char *c = v; *c; c++)
      if (!isalnum((unsigned char)*c) && !strchr("._:@-", *c))
        return *err = "server-name: letters, digits and ._:@- only", -1;
    if (set_string(cfg->server_name, sizeof cfg->server_name, v)) return *err = "server-name: 1..63 characters", -1;
  } else if (!strcmp(key, "acl-lib")) {
    if (set_string(cfg->acl_lib, sizeof cfg->acl_lib, v)) return *err = "acl-lib: empty or too long", -1;
  } else if (!strcmp(key, "acl-kernels")) {
    if (set_string(cfg->acl_kernels, sizeof cfg->acl_kernels, v)) return *err = "acl-kernels: empty or too long", -1;
  } else if (!strcmp(key, "acl-opapi")) {
    if (set_string(cfg->acl_opapi, sizeof cfg->acl_opapi, v)) return *err = "acl-opapi: empty or too long", -1;
  } else if (!strcmp(key, "allow-uploaded-kernels")) {
    if (strcmp(v, "yes") && strcmp(v, "no")) return *err = "allow-uploaded-kernels: yes or no", -1;
    cfg->allow_uploaded = !strcmp(v, "yes");
  } else if (!strcmp(key, "job-dir")) {
    if (set_string(cfg->job_dir, sizeof cfg->job_dir, v)) return *err = "job-dir: empty or too long", -1;
  } else if (!strcmp(key, "job-keep")) {
    if (parse_int(v, 1, 365 * 86400, &cfg->job_keep_s)) return *err = "job-keep: seconds, 1..31536000", -1;
  } else if (!strcmp(key, "job-runners")) {
    if (parse_int(v, 1, 256, &cfg->job_runners)) return *err = "job-runners: 1..256", -1;
  } else if (!strcmp(key, "job-timeout")) {
    if (parse_int(v, 1, 7 * 86400, &cfg->job_timeout_s)) return *err = "job-timeout: seconds, 1..604800", -1;
  } else if (!strcmp(key, "job-retries")) {
    if (parse_int(v, 0, 20, &cfg->job_retries)) return *err = "job-retries: 0..20", -1;
  } else if (!strcmp(key, "job-allow")) {
    if (set_string(cfg->job_allow, sizeof cfg->job_allow, v)) return *err = "job-allow: empty or too long", -1;
  } else if (!strcmp(key, "job-resolve")) {
    if (set_string(cfg->job_resolve, sizeof cfg->job_resolve, v)) return *err = "job-resolve: empty or too long", -1;
  } else if (!strcmp(key, "allow-open")) {
    if (strcmp(v, "yes") && strcmp(v, "no")) return *err = "allow-open: yes or no", -1;
    cfg->allow_open = !strcmp(v, "yes");
  } else {
    return *err = "unknown setting", -1;
  }
  return 0;
}

char *srv_trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
  return s;
}

/* ---- the config file -------------------------------------------------------------- */

int srv_config_parse(srv_config_t *cfg, const char *text, size_t len, const char *name, char *err, size_t errlen) {
  if (!name) name = "(config)";
  srv_config_t fresh = *cfg; /* cfg changes only once the whole text is good */
  srv_lines_t it;
  srv_lines_init(&it, text, len);
  char buf[SRV_LINE_MAX + 1], *s;
  const char *why;
  int r;
  while ((r = srv_lines_next(&it, buf, &s, &why)) > 0) {
    if (!*s) continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      snprintf(err, errlen, "%s:%d: expected key = value", name, it.lineno);
      return -1;
    }
    *eq = '\0';
    char *key = srv_trim(s);
    if (srv_config_set(&fresh, key, srv_trim(eq + 1), &why)) {
      snprintf(err, errlen, "%s:%d: %s: %s", name, it.lineno, key, why);
      return -1;
    }
  }
  if (r < 0) {
    snprintf(err, errlen, "%s:%d: %s", name, it.lineno, why);
    return -1;
  }
  *cfg = fresh;
  return 0;
}

int srv_config_load(srv_config_t *cfg, const char *path, char *err, size_t errlen) {
  char *text;
  size_t len;
  if (srv_read_file(path, SRV_FILE_MAX, &text, &len, err, errlen)) return -1;
  int rc = srv_config_parse(cfg, text, len, path, err, errlen);
  free(text);
  return rc;
}
