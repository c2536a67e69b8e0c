/*
 * tests/bench/rdev_bench/baseline.c — what the baselines share: the reason
 * of the last baseline failure (bl_fail sets it, bl_error reads it; any
 * thread, and the bare-gRPC helper processes send theirs back through it).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "baseline.h"

static char g_err[BL_ERROR_MAX];
static pthread_mutex_t g_err_mu = PTHREAD_MUTEX_INITIALIZER;

const char *bl_error(void) { return g_err; }

int bl_fail(const char *fmt, ...) {
  pthread_mutex_lock(&g_err_mu);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&g_err_mu);
  return -1;
}
