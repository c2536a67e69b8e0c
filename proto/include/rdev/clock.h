/*
 * rdev/clock.h — the monotonic clock as every layer uses it: now in
 * nanoseconds, a deadline some nanoseconds from now for
 * pthread_cond_timedwait, and condition variables that wait on that clock
 * (so that a change of the wall clock moves no timeout). Header only.
 */
#ifndef RDEV_CLOCK_H
#define RDEV_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Nanoseconds on CLOCK_MONOTONIC. */
static inline uint64_t rdev_clock_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The CLOCK_MONOTONIC time ns from now, for a condition variable made by
 * rdev_clock_cond_init. */
static inline struct timespec rdev_clock_deadline_ns(uint64_t ns) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  ns += (uint64_t)t.tv_nsec;
  t.tv_sec += (time_t)(ns / 1000000000u);
  t.tv_nsec = (long)(ns % 1000000000u);
  return t;
}

/* Initialises cv to time its waits on CLOCK_MONOTONIC; 0 or an errno. */
static inline int rdev_clock_cond_init(pthread_cond_t *cv) {
  pthread_condattr_t a;
  int rc = pthread_condattr_init(&a);
  if (rc) return rc;
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  rc = pthread_cond_init(cv, &a);
  pthread_condattr_destroy(&a);
  return rc;
}

#endif
