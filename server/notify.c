/*
 * server/notify.c — the sd_notify protocol by hand: systemd (Type=notify)
 * passes a unix datagram socket in $NOTIFY_SOCKET and waits for "READY=1"
 * before it counts the service started; "RELOADING=1" and "STOPPING=1"
 * tell it about a reload and a drain. A datagram needs no library, so
 * rdevd does not depend on libsystemd.
 */
#define _GNU_SOURCE
#include "notify.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int srv_notify(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (!path || !*path) return 0;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t len = strlen(path);
  if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path) return -1;
  memcpy(sa.sun_path, path, len);
  if (path[0] == '@') sa.sun_path[0] = '\0'; /* abstract namespace */
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
  close(fd);
  return n == (ssize_t)strlen(state) ? 1 : -1;
}

int srv_notify_reloading(void) {
  struct timespec now;
  char state[64];
  clock_gettime(CLOCK_MONOTONIC, &now);
  snprintf(state, sizeof state, "RELOADING=1\nMONOTONIC_USEC=%llu",
           (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000);
  return srv_notify(state);
}
