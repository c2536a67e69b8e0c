/*
 * server/jobs/allow.h — what the transfers rdevd makes on a tenant's behalf (a
 * job's inputs, outputs and webhooks) may reach: URL prefixes the operator
 * allows, compared by their parsed parts (libcurl's URL API: scheme, host,
 * port, path), never as strings; and the addresses a transfer may connect
 * to, checked at connect time so that a name cannot resolve into the
 * operator's network unless a prefix names that address itself.
 */
#ifndef RDEV_SERVER_ALLOW_H
#define RDEV_SERVER_ALLOW_H

#include <stddef.h>

typedef struct srv_allow srv_allow_t; /* a list of allowed URL prefixes; NULL is the empty list */

/* Adds prefix ("https://host[:port]/path", http or https, no user info, no
 * query or fragment) to *list. 0, or -1 with why (for the operator) set.
 * The list owns its copy. */
int srv_allow_add(srv_allow_t **list, const char *prefix, char *why, size_t whylen);

/* Frees the list. */
void srv_allow_free(srv_allow_t *list);

/* Whether url lies under one of the list's prefixes: the same scheme, host
 * (case-insensitive), port (the scheme's default when absent), and a path
 * equal to the prefix's or below it on a '/' boundary, after dot segments
 * are resolved. A URL with user info is refused. 1, or 0 with why set. */
int srv_allow_url(const srv_allow_t *list, const char *url, char *why, size_t whylen);

/* Whether a transfer may connect to ip (an IPv4 or IPv6 address as text,
 * as libcurl reports the connected one): a public address, or one a
 * prefix of the list names as its host. Loopback, private, link-local,
 * shared (CGNAT), unique-local, multicast, unspecified and reserved
 * addresses, also inside IPv4-mapped and NAT64 IPv6 forms, are not
 * public. 1, or 0 with why set. */
int srv_allow_addr(const srv_allow_t *list, const char *ip, char *why, size_t whylen);

#endif
