/*
 * tests/bench/rdev_bench/delay_proxy.h — a TCP proxy on loopback that
 * delays every byte by a fixed time in each direction (delay_proxy.c),
 * standing for a network link of that round trip where netem is not
 * available. Throughput is not limited: bytes are read at once and
 * written when their time has come.
 */
#ifndef RDEV_BENCH_DELAY_PROXY_H
#define RDEV_BENCH_DELAY_PROXY_H

#include <stddef.h>
#include <stdint.h>

typedef struct delay_proxy delay_proxy_t;

/* Starts a proxy listening on "HOST:PORT" (IPv4; port 0: one the system
 * picks; the address is written into addr) to upstream "HOST:PORT",
 * delaying each direction by one_way_us. Serves connections on its own
 * threads until delay_proxy_stop. Dies on failure. */
delay_proxy_t *delay_proxy_start(const char *listen_on, const char *upstream, uint64_t one_way_us, char *addr,
                                 size_t addrlen);

/* A TCP port free on both 127.0.0.1 and host (another loopback address),
 * for a server's port that a proxy on host shows under the same number.
 * Dies when none is found. */
int delay_proxy_free_port(const char *host);

/* Stops accepting, cuts every connection it carries, waits for its threads
 * and frees it. */
void delay_proxy_stop(delay_proxy_t *p);

#endif
