/*
 * tests/bench/rdev_bench/rdevd.h — the rdevd the bench starts and watches
 * (rdevd.c): start it on loopback, read its memory figures from /proc, stop
 * it cleanly, or kill it when the bench fails. rdevd.c alone holds its pid.
 */
#ifndef RDEV_BENCH_RDEVD_H
#define RDEV_BENCH_RDEVD_H

#include <stddef.h>
#include <sys/types.h>

/* ../server/rdevd next to this program's binary (dies if it cannot tell). */
void rdevd_default_path(char *out, size_t len);
/* Starts path on 127.0.0.1:0 (1 sim device of `arena` bytes) and reads its
 * "rdevd listening on ADDR" line into addr; returns its pid. It dies with
 * the bench (PR_SET_PDEATHSIG, atexit, die()). Dies on any failure. */
pid_t rdevd_start(const char *path, size_t arena, char *addr, size_t addrlen);
/* SIGTERM, then wait (SIGKILL after 10 s). 0 when it exited with status 0
 * (or none was started); else 1, with the reason on stderr. */
int rdevd_stop(void);
/* SIGKILL and reap the rdevd we started, if any (any thread, die()). */
void rdevd_kill_now(void);

/* The value in kB of "key:" in /proc/pid/status, or -1. */
long proc_status_kb(pid_t pid, const char *key);
/* Resets VmHWM to the current VmRSS (Linux >= 4.0). 0 on success. */
int reset_hwm(pid_t pid);

#endif
