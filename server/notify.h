/*
 * server/notify.h — readiness and reload notices to systemd (the sd_notify
 * protocol: one datagram to $NOTIFY_SOCKET), without libsystemd.
 */
#ifndef RDEV_SERVER_NOTIFY_H
#define RDEV_SERVER_NOTIFY_H

/* Sends state ("READY=1", "RELOADING=1", "STOPPING=1", lines joined by
 * '\n') to the socket named by $NOTIFY_SOCKET (a path, or "@name" for an
 * abstract one). Returns 1 if sent, 0 when $NOTIFY_SOCKET is unset, -1 on
 * failure (never fatal: rdevd serves the same without a manager). */
int srv_notify(const char *state);

/* "RELOADING=1" with the MONOTONIC_USEC that systemd 253's notify-reload
 * asks for; then srv_notify("READY=1") once the reload is done. */
int srv_notify_reloading(void);

#endif
