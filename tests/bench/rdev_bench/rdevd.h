/*
 * tests/bench/rdev_bench/rdevd.h — the rdevds the bench starts and watches
 * (rdevd.c): the main one on loopback and, for the same-host phase, a
 * second one on a unix socket; start one, read its memory figures from
 * /proc, stop it or all cleanly, or kill all when the bench fails.
 * rdevd.c alone holds their pids (RDEVD_MAX at once).
 */
#ifndef RDEV_BENCH_RDEVD_H
#define RDEV_BENCH_RDEVD_H

#include <stddef.h>
#include <sys/types.h>

/* ../server/rdevd next to this program's binary (dies if it cannot tell). */
void rdevd_default_path(char *out, size_t len);
#define RDEVD_MAX 2 /* rdevds running at once: the main one and the same-host one */

/* Starts path with --listen `listen` (e.g. "127.0.0.1:0" or
 * "unix:/dir/rdevd.sock"; 1 sim device of `arena` bytes; --bulk-listen
 * `bulk`, NULL: auto) and reads its
 * "rdevd listening on ADDR" line into addr; returns its pid. It dies with
 * the bench (PR_SET_PDEATHSIG, atexit, die()). Dies on any failure, and
 * when RDEVD_MAX are running already. */
pid_t rdevd_start(const char *path, const char *listen, const char *bulk, size_t arena, char *addr, size_t addrlen);
/* Stops the rdevd `pid` that rdevd_start returned: SIGTERM, then wait
 * (SIGKILL after 10 s). 0 when it exited with status 0 (or is not one
 * running); else 1, with the reason on stderr. */
int rdevd_stop_one(pid_t pid);
/* rdevd_stop_one of every rdevd still running: 0 when each exited with
 * status 0 (or none was running); else 1. */
int rdevd_stop(void);
/* SIGKILL and reap every rdevd we started that still runs (any thread, die()). */
void rdevd_kill_now(void);

/* The value in kB of "key:" in /proc/pid/status, or -1. */
long proc_status_kb(pid_t pid, const char *key);
/* Resets VmHWM to the current VmRSS (Linux >= 4.0). 0 on success. */
int reset_hwm(pid_t pid);

#endif
