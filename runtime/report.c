/*
 * runtime/report.c — what the runtime reports besides status codes: the
 * calling thread's error detail (rdev_rt_last_error, set by rt_fail) and
 * the kernel print channel that kernel bodies write to (rt_print), bounded
 * per launch.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

/* ---- error detail -------------------------------------------------------- */

static _Thread_local char rt_errmsg[256];

int rt_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_errmsg, sizeof rt_errmsg, fmt, ap);
  va_end(ap);
  return code;
}

void rt_clear_error(void) { rt_errmsg[0] = '\0'; }

const char *rdev_rt_last_error(void) { return rt_errmsg; }

/* ---- kernel print channel ------------------------------------------------ */

void rt_print(rt_print_buf_t *pb, const char *fmt, ...) {
  if (pb->truncated) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (pb->len + len > RDEV_RT_PRINT_LIMIT) {
    static const char note[] = "[kernel print truncated]\n";
    len = sizeof note - 1;
    memcpy(line, note, len);
    pb->truncated = 1;
  }
  if (pb->len + len > pb->cap) {
    size_t cap = pb->cap ? pb->cap * 2 : 256;
    while (cap < pb->len + len) cap *= 2;
    char *d = realloc(pb->data, cap);
    if (!d) {
      pb->truncated = 1;
      return;
    }
    pb->data = d;
    pb->cap = cap;
  }
  memcpy(pb->data + pb->len, line, len);
  pb->len += len;
}

void rt_print_release(rt_print_buf_t *pb) {
  free(pb->data);
  memset(pb, 0, sizeof *pb);
}
