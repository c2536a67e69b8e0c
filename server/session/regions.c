/*
 * server/session/regions.c — a same-host client's registered host memory
 * (rdev/wire.h, "Host memory regions"): memfds the client sealed against
 * shrinking, mapped here, that Reads and Writes naming them copy into and
 * out of directly on their stream, as a device's DMA does with pinned
 * memory. A region goes when the client unregisters it or the session is
 * released, once no queued copy holds it. The seal is what makes the
 * mapping safe: a client cannot cut the file short under a copy (SIGBUS).
 * A file with holes is refused, so that mapping it allocates nothing; a
 * hole punched later reads as zeros, and a copy into it allocates that
 * page again (charged to rdevd: at most the session's region bytes).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "session.h"

struct srv_region {
  uint32_t id;
  uint8_t *base;
  size_t size;
  atomic_int refs; /* the table's, and one per queued copy */
  struct srv_region *next;
};

/* Under s->mu: why region id of size bytes cannot join s's table (NULL:
 * it can). */
static const char *table_refuses_locked(srv_session_t *s, uint32_t id, uint64_t size) {
  int n = 0, dup = 0;
  for (struct srv_region *q = s->regions; q; q = q->next) n++, dup |= q->id == id;
  if (s->released) return "the session ends";
  if (dup) return "region id in use";
  if (n >= RDEV_WIRE_MAX_REGIONS || s->region_bytes + size > RDEV_WIRE_MAX_REGION_BYTES)
    return "the session's regions are at their limit";
  return NULL;
}

/* Why fd cannot back a region of size bytes (NULL: it can): it must be a
 * memfd sealed against shrinking, writable, at least size bytes, all of
 * them there (no holes: mapping it then takes no memory of rdevd's). */
static const char *file_refuses(int fd, uint64_t size) {
  struct stat st;
  struct statfs fs;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)) return "not a memfd sealed against shrinking";
  /* not a hugetlbfs one: a page punched there and written again may find
   * the pool empty, and that write would be rdevd's SIGBUS */
  if (fstatfs(fd, &fs) != 0 || fs.f_type != TMPFS_MAGIC) return "not a memfd of ordinary pages";
  if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) return "sealed against writing";
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < size) return "the file is smaller than the region";
  off_t hole = lseek(fd, 0, SEEK_HOLE);
  if (hole < 0 || (uint64_t)hole < size) return "the region's pages are not all there (a hole)";
  return NULL;
}

int srv_region_add(srv_session_t *s, uint32_t id, int fd, uint64_t size, const char **why) {
  *why = !id ? "region id 0" : !size || size > RDEV_WIRE_MAX_REGION_BYTES ? "region size 0 or over the limit" : NULL;
  if (!*why) {
    pthread_mutex_lock(&s->mu);
    *why = table_refuses_locked(s, id, size); /* before mapping: a refusal costs nothing */
    pthread_mutex_unlock(&s->mu);
  }
  if (!*why) *why = file_refuses(fd, size);
  /* Populated now rather than page by page under the first copies: the
   * client's pages are all there; this maps them here. */
  void *p = *why ? MAP_FAILED : mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  close(fd);
  if (*why) return RDEV_INVALID_PARAM;
  struct srv_region *r = p == MAP_FAILED ? NULL : calloc(1, sizeof *r);
  if (!r) {
    if (p != MAP_FAILED) munmap(p, (size_t)size);
    *why = "cannot map it";
    return RDEV_BAD_ALLOC;
  }
  r->id = id;
  r->base = p;
  r->size = (size_t)size;
  atomic_init(&r->refs, 1);
  pthread_mutex_lock(&s->mu);
  *why = table_refuses_locked(s, id, size); /* again: it may have changed meanwhile */
  if (!*why) {
    r->next = s->regions;
    s->regions = r;
    s->region_bytes += size;
  }
  pthread_mutex_unlock(&s->mu);
  if (*why) {
    srv_region_put(r);
    return RDEV_INVALID_PARAM;
  }
  return RDEV_OK;
}

/* Under s->mu: takes region id out of the table; NULL when there is none. */
static struct srv_region *unlink_locked(srv_session_t *s, uint32_t id) {
  for (struct srv_region **pp = &s->regions; *pp; pp = &(*pp)->next)
    if ((*pp)->id == id) {
      struct srv_region *r = *pp;
      *pp = r->next;
      s->region_bytes -= r->size;
      return r;
    }
  return NULL;
}

void srv_region_remove(srv_session_t *s, uint32_t id) {
  pthread_mutex_lock(&s->mu);
  struct srv_region *r = unlink_locked(s, id);
  pthread_mutex_unlock(&s->mu);
  if (r) srv_region_put(r);
}

srv_region_t *srv_region_get(srv_session_t *s, uint32_t id, uint64_t off, uint64_t count, uint8_t **p) {
  pthread_mutex_lock(&s->mu);
  struct srv_region *r = s->regions;
  while (r && r->id != id) r = r->next;
  if (r && off <= r->size && count <= r->size - off) {
    atomic_fetch_add(&r->refs, 1);
    *p = r->base + off;
  } else {
    r = NULL;
  }
  pthread_mutex_unlock(&s->mu);
  return r;
}

void srv_region_put(srv_region_t *r) {
  if (atomic_fetch_sub(&r->refs, 1) != 1) return;
  munmap(r->base, r->size);
  free(r);
}

void srv_regions_release(srv_session_t *s) {
  pthread_mutex_lock(&s->mu);
  struct srv_region *all = s->regions;
  s->regions = NULL;
  s->region_bytes = 0;
  pthread_mutex_unlock(&s->mu);
  while (all) {
    struct srv_region *next = all->next;
    srv_region_put(all);
    all = next;
  }
}
