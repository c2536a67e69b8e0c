/*
 * tests/chaos/chaos_proxy.h — a fault-injecting TCP proxy for tests
 * (chaos_proxy.c): it carries TCP connections from one or more listen
 * addresses ("routes") to their upstreams and, on command, breaks them
 * the ways a network does. Usable from C tests (this header) and as a
 * program (chaos_proxy_main.c).
 *
 * Faults, all set at run time from any thread:
 *   cut        close every carried connection of a route (or all) at once,
 *              both sides, with FIN (shutdown and close) or RST (SO_LINGER
 *              0); optionally refuse new connections for a time after
 *              (they are accepted and closed at once, the same way);
 *   stall      forward nothing, either way, for T ms: connections stay
 *              open and what arrives is held, then sent in order;
 *   throttle   each direction of each connection at most N bytes/s (a
 *              token bucket holding 10 ms of it, at least 1 KiB);
 *   delay      every byte leaves a fixed time after it arrived, each way
 *              (a link of twice that round trip; throughput not limited);
 *   random cut each connection (or a share of them, per mille) is cut once
 *              a number of bytes drawn from [lo, hi] (seeded) has crossed
 *              it, both directions counted together: exactly that many
 *              are forwarded, so cuts land anywhere, mid-message too;
 * and counters: connections accepted, refused, cut, bytes each way.
 *
 * One thread per proxy moves every byte (non-blocking sockets, ppoll), so
 * a fault applies between two sends, never inside one. A direction holds
 * at most 16 MiB read but not yet sent; past it the proxy stops reading
 * that side (TCP's own flow control then holds the sender). A half-close
 * travels as the last piece of its direction (delayed and stalled as
 * data); a connection ends when both directions did, or at once when
 * either side resets or a send fails.
 *
 * rdevd's bulk connection. A session of a TCP rdevd has a second TCP
 * connection, the bulk one, on which large copies travel (proto/include/
 * rdev/wire.h, "The bulk connection"). rdevd names only its port, in the
 * session open's metadata (rdev-bulk-port); the client connects to that
 * port on the host its gRPC call reached (client/lib/bulk.c: the call's
 * peer host). So a client talking to a proxy on host H attaches its bulk
 * connection to H:B, where B is rdevd's bulk port. To carry it, give the
 * proxy a second route listening on H:B with upstream rdevd's bulk
 * address, on a host H other than rdevd's (127.0.0.2 beside rdevd on
 * 127.0.0.1): chaos_proxy_free_port(H) finds a B free on both, rdevd gets
 * --bulk-listen 127.0.0.1:B, and the proxy routes H:0 -> rdevd's address
 * and H:B -> 127.0.0.1:B (tests/bench/rdev_bench/latency.c does the same).
 * Without that route the bulk connection fails to attach and the session
 * works in-band only (the library's fallback). Over a unix socket or TLS
 * rdevd offers no TCP bulk connection.
 */
#ifndef RDEV_TESTS_CHAOS_PROXY_H
#define RDEV_TESTS_CHAOS_PROXY_H

#include <stddef.h>
#include <stdint.h>

typedef struct chaos_proxy chaos_proxy_t;

/* How a cut closes a connection's two sockets. */
typedef enum {
  CHAOS_FIN = 0, /* shutdown and close: each peer reads an end of stream (sent data first) */
  CHAOS_RST = 1  /* SO_LINGER 0 and close: each peer gets a reset, unsent data is lost */
} chaos_how_t;

#define CHAOS_ALL_ROUTES (-1)
#define CHAOS_MAX_ROUTES 8

typedef struct {
  uint64_t accepted;        /* connections accepted, not refused (upstream_failed among them) */
  uint64_t refused;         /* accepted while refusing, and closed at once */
  uint64_t upstream_failed; /* accepted, but the upstream could not be reached: closed */
  uint64_t live;            /* carried now */
  uint64_t bytes_up;        /* forwarded from clients to upstreams */
  uint64_t bytes_down;      /* forwarded from upstreams to clients */
  uint64_t cuts;            /* connections ended by chaos_proxy_cut */
  uint64_t random_cuts;     /* connections ended by a random cut */
} chaos_counters_t;

/* A proxy with no routes yet, its thread running. NULL (errno set) when
 * it cannot be made. */
chaos_proxy_t *chaos_proxy_new(void);

/* Adds a route: listens on "HOST:PORT" (IPv4; port 0: one the system
 * picks), each connection carried to upstream "HOST:PORT". Writes the
 * bound "HOST:PORT" into addr (may be NULL). Its number (0, 1, ... in
 * the order added), or -1 with a reason in err (may be NULL). */
int chaos_proxy_listen(chaos_proxy_t *p, const char *listen_on, const char *upstream, char *addr, size_t addrlen,
                       char *err, size_t errlen);

/* Stops accepting, closes every connection (FIN), waits for the thread
 * and frees p. NULL is a no-op. */
void chaos_proxy_free(chaos_proxy_t *p);

/* Cuts every connection route carries (CHAOS_ALL_ROUTES: all) with how,
 * and refuses that route's new connections for refuse_ms from now (a
 * refusal closes them the same way; 0 ends a refusal still running).
 * Returns once they are closed: the number cut. */
int chaos_proxy_cut(chaos_proxy_t *p, int route, chaos_how_t how, int refuse_ms);

/* Forwards nothing for ms from now (0 ends a stall at once); connections
 * stay open, bytes are held. A later call replaces the end. */
void chaos_proxy_stall(chaos_proxy_t *p, int ms);

/* Each direction of each connection at most bytes_per_s (0: unlimited).
 * Applies at once, to live connections too. */
void chaos_proxy_throttle(chaos_proxy_t *p, uint64_t bytes_per_s);

/* Bytes read from now on leave one_way_us later, each direction. */
void chaos_proxy_delay(chaos_proxy_t *p, uint64_t one_way_us);

/* Random cuts: from now, each connection of route (CHAOS_ALL_ROUTES:
 * all; live ones from their current count) is, with probability
 * permille/1000, cut with how after a byte count drawn uniformly from
 * [lo, hi] (1 <= lo <= hi) by a generator seeded with seed (the same seed
 * and order of connections draw the same counts). A connection is cut
 * only while bytes flow through it, so a cut of a small count lands
 * inside a transfer. permille 0 turns random cuts off, live connections'
 * included. */
void chaos_proxy_random_cut(chaos_proxy_t *p, int route, uint64_t lo, uint64_t hi, int permille, uint64_t seed,
                            chaos_how_t how);

/* The counters of route (CHAOS_ALL_ROUTES: summed over all). */
chaos_counters_t chaos_proxy_counters(chaos_proxy_t *p, int route);

/* Waits until pred(counters of route, arg) is nonzero, looking again
 * whenever the proxy moved bytes or connections: 0 when it held, -1 when
 * timeout_ms passed first (-1: no limit). pred runs under the proxy's
 * lock: it must not call the proxy. */
int chaos_proxy_wait(chaos_proxy_t *p, int route, int (*pred)(const chaos_counters_t *c, void *arg), void *arg,
                     int timeout_ms);

/* A TCP port free on both 127.0.0.1 and host (another loopback address),
 * for a server's port that a proxy on host shows under the same number
 * (the bulk route above). -1 when none was found. */
int chaos_proxy_free_port(const char *host);

#endif
