/*
 * client/lib/memory.c — device memory as the caller sees it: rdev_malloc and
 * rdev_free (device addresses come from addr.c), host memory for transfers,
 * and copies and memsets, which become Write, Read, Copy and Memset
 * requests, split at RDEV_WIRE_MAX_CHUNK. On the server's host, host
 * memory is a memfd shared with rdevd (bulk.c), and copies from and into
 * it name it instead of carrying bytes. Owns no session state; calls
 * submit.c, bulk.c, addr.c, stream.c (stream handles), info.c (the current
 * device) and error.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client.h"

/* ---- faulting host memory in ahead ------------------------------------------- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define PREFAULT_MIN (1u << 20) /* below this the first touches cost little */
#define BULK_MIN (128u << 10)   /* smaller copies stay in-band: one message, no hand-off */
#define HUGE_MIN (2u << 20)     /* transparent huge pages are 2 MiB */
#define STAGE_MAX (4u << 20)    /* synchronous H2D copies up to this are copied and not waited for */

/* Faults in the pages under [p, p+n) that are not yet present, writable,
 * keeping their contents: the kernel does it in one call, several times
 * faster than the page-by-page faults of a first write (fresh memory on a
 * VM costs ~20 us a page). Pages a write would fault in anyway; memory the
 * caller lent us for writing. 0, or -1 where the kernel cannot. */
static int prefault(void *p, size_t n) {
  uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)p & ~(pg - 1), e = ((uintptr_t)p + n + pg - 1) & ~(pg - 1);
  return madvise((void *)a, e - a, MADV_POPULATE_WRITE);
}

/* ---- malloc and free -------------------------------------------------------- */

int cl_malloc(rdev_session_t *s, void **dptr, size_t size, rdev_mem_policy_t policy) {
  if (!s || !dptr) return cl_error(RDEV_INVALID_PARAM, "session or dptr is NULL");
  *dptr = NULL;
  if (size == 0) return cl_error(RDEV_INVALID_PARAM, "size 0");
  if ((unsigned)policy > RDEV_MEM_MALLOC_NORMAL_ONLY_P2P)
    return cl_error(RDEV_INVALID_PARAM, "unknown malloc policy %d", (int)policy);
  int dev = cl_device_current(s);
  if (dev >= RDEV_WIRE_MAX_DEVICES || atomic_load(&s->dev.count) == 0)
    return cl_error(RDEV_RT_INVALID_DEVICEID, "device %d does not exist", dev);
  /* Placed here, sent quiet: nothing to wait for. A refusal (another
   * session of the tenant took the quota, the device ran out) is the
   * session's sticky error, and the server fails what names the memory
   * with it, so the next synchronize reports it. One the session alone
   * would not fit, as far as the limits are known, waits for the server's
   * answer instead: its refusal, with its code, or the memory (the limits
   * may have grown). */
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_malloc_tag;
  req.seq = cl_seq_reserve(s, 1);
  cl_alloc_t *a;
  bool fits;
  int rc = cl_addr_place(s, dev, size, req.seq, &a, &fits);
  if (rc) return rc;
  req.op.malloc =
      (rdev_v1_Malloc){.device = dev, .size = size, .policy = (int32_t)policy, .addr = a->base, .quiet = fits};
  if ((rc = fits ? cl_send_async(s, &req) : cl_call(s, &req, NULL)) != RDEV_OK) {
    cl_addr_unplace(s, cl_addr_remove(s, a->base), true); /* refused, or never sent */
    return rc;
  }
  *dptr = (void *)(uintptr_t)a->base;
  return RDEV_OK;
}

int cl_free(rdev_session_t *s, void *dptr) {
  if (!s || !dptr) return cl_error(RDEV_INVALID_PARAM, "session or dptr is NULL");
  cl_alloc_t *a = cl_addr_remove(s, (uint64_t)(uintptr_t)dptr);
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_free_tag;
  req.op.free.addr = (uint64_t)(uintptr_t)dptr;
  if (!a) return cl_call(s, &req, NULL); /* unknown here: the server says why */
  /* One of ours: nothing to wait for (a refusal, which would mean the
   * server lost it, goes sticky on the session). */
  req.op.free.quiet = true;
  int rc = cl_send_async(s, &req);
  cl_addr_unplace(s, a, rc == RDEV_OK); /* unsent, the server may still hold the range */
  return rc;
}

int cl_ptr_on_device(rdev_session_t *s, const void *p) { return s && p && cl_addr_known(s, p, 1, NULL); }

/* rdev_malloc_host memory is a mapping of its own (so that advice on it
 * touches nothing of the process's heap); this record sits just below the
 * pointer handed out, in a page of the mapping no caller byte uses. */
typedef struct {
  uint64_t magic;
  void *base;
  size_t len;
  uint32_t region;       /* shared with rdevd (bulk.c); 0: not */
  rdev_session_t *owner; /* the session it is shared with (cleared at its close) */
} host_block_t;
#define HOST_MAGIC 0x72646576686f7374ull /* "rdevhost" */

/* A memfd of n bytes sealed against shrinking and growing, mapped shared
 * over [at, at+n) (MAP_FIXED, inside a reservation of the caller's): its
 * fd, or -1. */
static int shared_map(uint8_t *at, size_t n) {
  int fd = memfd_create("rdev-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, (off_t)n) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 ||
      mmap(at, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    close(fd);
    return -1;
  }
  return fd;
}

int cl_malloc_host(rdev_session_t *s, void **ptr, size_t size) {
  if (!ptr) return cl_error(RDEV_INVALID_PARAM, "ptr is NULL");
  *ptr = NULL;
  if (size == 0) return cl_error(RDEV_INVALID_PARAM, "size 0");
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), align = size >= HUGE_MIN ? HUGE_MIN : pg;
  size_t body = (size + pg - 1) & ~(pg - 1);
  if (body < size || body > SIZE_MAX - pg - align)
    return cl_error(RDEV_BAD_ALLOC, "cannot allocate %zu host bytes", size);
  size_t len = pg + body + (align > pg ? align : 0);
  void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return cl_error(RDEV_BAD_ALLOC, "cannot allocate %zu host bytes", size);
  uint8_t *p = (uint8_t *)(((uintptr_t)base + pg + align - 1) & ~(uintptr_t)(align - 1));
  /* On the server's host: the body is a memfd rdevd maps too, so that
   * copies name it instead of carrying its bytes (as a device's DMA
   * reaches pinned memory). Anywhere else, or if that fails, private. */
  int fd = s && cl_bulk_local(s) ? shared_map(p, body) : -1;
  /* As CANN's pinned memory: resident from the start, and on huge pages
   * where the kernel offers them (THP "madvise" mode asks for the advice). */
  if (size >= HUGE_MIN) madvise(p, size & ~(size_t)(HUGE_MIN - 1), MADV_HUGEPAGE);
  if (prefault(p, size) != 0) {
    if (errno != EINVAL) { /* out of memory now, rather than killed later */
      if (fd >= 0) close(fd);
      munmap(base, len);
      return cl_error(RDEV_BAD_ALLOC, "cannot fault in %zu host bytes", size);
    }
    memset(p, 0, size); /* a kernel without MADV_POPULATE_WRITE */
  }
  host_block_t *h = (host_block_t *)(void *)(p - sizeof *h);
  *h = (host_block_t){HOST_MAGIC, base, len, 0, NULL};
  if (fd >= 0) {
    if (cl_bulk_register(s, fd, p, body, &h->region) == RDEV_OK)
      h->owner = s;
    else
      h->region = 0; /* still good host memory, copied over sockets */
    close(fd);
  }
  *ptr = p;
  return RDEV_OK;
}

void cl_host_release_all(rdev_session_t *s) {
  void *p;
  while ((p = cl_bulk_region_pop(s)) != NULL) {
    host_block_t *h = (host_block_t *)(void *)((uint8_t *)p - sizeof *h);
    h->owner = NULL; /* the memory stays the caller's, private to it from now on */
    h->region = 0;
  }
}

int cl_free_host(rdev_session_t *s, void *ptr) {
  (void)s;
  if (!ptr) return cl_error(RDEV_INVALID_PARAM, "ptr is NULL");
  host_block_t *h = (host_block_t *)(void *)((uint8_t *)ptr - sizeof *h);
  if (h->magic != HOST_MAGIC) return cl_error(RDEV_INVALID_PARAM, "%p was not made by rdev_malloc_host", ptr);
  h->magic = 0;
  /* its own session forgets it, whichever one the caller names (ids are
   * per session); one that closed already cleared owner */
  if (h->region && h->owner) cl_bulk_unregister(h->owner, h->region);
  munmap(h->base, h->len);
  return RDEV_OK;
}

/* ---- copies ------------------------------------------------------------------ */

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

/* H2D: Write requests of at most one chunk each. stream 0 = wait for all. */
static int write_chunks(rdev_session_t *s, uint64_t addr, const uint8_t *src, size_t count, size_t dest_max,
                        uint64_t stream) {
  /* A synchronous copy small enough to stage travels in-band, copied, and
   * waits for no reply: the server writes it before anything the session
   * sends later runs, and a refusal is the session's, at the next
   * synchronize. Larger ones stream from the caller's memory (on the bulk
   * connection, whose lost bytes only a copy that waits can send again). */
  if (!stream && count <= STAGE_MAX && (count < BULK_MIN || !cl_bulk_ready(s))) {
    int rc = RDEV_OK;
    for (size_t done = 0; done < count && !rc; done += RDEV_WIRE_MAX_CHUNK) {
      rdev_v1_Request req = rdev_v1_Request_init_zero;
      req.which_op = rdev_v1_Request_write_tag;
      req.op.write.addr = addr + done;
      req.op.write.dest_max = dest_max - done;
      req.op.write.quiet = true;
      rc = cl_write_async(s, &req, src + done, min_sz(count - done, RDEV_WIRE_MAX_CHUNK));
    }
    return rc;
  }
  uint64_t nchunks = (count + RDEV_WIRE_MAX_CHUNK - 1) / RDEV_WIRE_MAX_CHUNK;
  cl_group_t g = {0};
  int rc = stream ? RDEV_OK : cl_group_begin(&g, s, nchunks);
  if (rc) return rc;
  for (size_t done = 0; done < count;) {
    size_t n = min_sz(count - done, RDEV_WIRE_MAX_CHUNK);
    rdev_v1_Request req = rdev_v1_Request_init_zero;
    req.which_op = rdev_v1_Request_write_tag;
    req.op.write.stream = stream;
    req.op.write.addr = addr + done;
    req.op.write.dest_max = dest_max - done;
    if (n >= BULK_MIN && cl_bulk_ready(s)) { /* its bytes on the bulk connection */
      req.op.write.bulk = true;
      req.op.write.count = n;
    }
    rc = stream ? cl_write_async(s, &req, src + done, n) : cl_write(&g, &req, src + done, n);
    if (rc) break;
    done += n;
  }
  if (!stream) rc = cl_group_end(&g, rc, NULL);
  /* src is the caller's again: what the bulk connection may have to send
   * again is copied, unless the copy was answered (bulk_data.c) */
  cl_bulk_data_settle(s, !stream && rc == RDEV_OK);
  return rc;
}

/* D2H: Read requests; whoever polls the session writes each chunk into dst. */
static int read_chunks(rdev_session_t *s, uint64_t addr, uint8_t *dst, size_t count, size_t dest_max, uint64_t stream) {
  cl_group_t g = {0};
  int rc = stream ? RDEV_OK : cl_group_begin(&g, s, 0);
  if (rc) return rc;
  for (size_t done = 0; done < count;) {
    size_t n = min_sz(count - done, RDEV_WIRE_MAX_CHUNK);
    rdev_v1_Request req = rdev_v1_Request_init_zero;
    req.which_op = rdev_v1_Request_read_tag;
    req.op.read.stream = stream;
    req.op.read.addr = addr + done;
    req.op.read.count = n;
    req.op.read.dest_max = dest_max - done;
    req.op.read.bulk = n >= BULK_MIN && cl_bulk_reads_may(s);
    rc = stream ? cl_read_into_async(s, &req, dst + done) : cl_read_into(&g, &req, dst + done);
    if (rc) break;
    done += n;
  }
  /* While the server reads the device, fault in a fresh destination (a
   * buffer just malloc'd, a new array), so that the replies are copied
   * into memory that is there. Whoever polls may already be writing the
   * first chunks: faulting keeps what they wrote. */
  if (!rc && count >= PREFAULT_MIN) prefault(dst, count);
  return stream ? rc : cl_group_end(&g, rc, NULL);
}

/* A copy between device address dev and registered host memory (region,
 * off): one request, no bytes on the wire; async ones answer only a
 * failure (sticky on the stream). */
static int region_copy(rdev_session_t *s, bool to_host, uint64_t dev, uint32_t region, uint64_t off, size_t count,
                       size_t dest_max, uint64_t stream) {
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  if (to_host) {
    req.which_op = rdev_v1_Request_read_tag;
    req.op.read = (rdev_v1_Read){
        .stream = stream, .addr = dev, .count = count, .dest_max = dest_max, .host_region = region, .host_offset = off};
  } else {
    req.which_op = rdev_v1_Request_write_tag;
    req.op.write = (rdev_v1_Write){
        .stream = stream, .addr = dev, .dest_max = dest_max, .host_region = region, .host_offset = off, .count = count};
  }
  return stream ? cl_send_async(s, &req) : cl_call(s, &req, NULL);
}

/* Copy and Memset: queued on a stream, or one synchronous call. */
static int submit_or_call(rdev_session_t *s, rdev_v1_Request *req, uint64_t stream) {
  if (stream) return cl_send_async(s, req);
  return cl_call(s, req, NULL);
}

static int do_memcpy(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count,
                     rdev_memcpy_kind_t kind, uint64_t stream) {
  if (count > dest_max) return cl_error(RDEV_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", count, dest_max);
  if (count == 0) return RDEV_OK;
  if (!dst || !src) return cl_error(RDEV_INVALID_PARAM, "dst or src is NULL");
  bool dfit = true, sfit = true;
  bool ddev = cl_addr_known(s, dst, count, &dfit);
  bool sdev = cl_addr_known(s, src, count, &sfit);
  if (kind == RDEV_MEMCPY_DEFAULT)
    kind = ddev ? (sdev ? RDEV_MEMCPY_DEVICE_TO_DEVICE : RDEV_MEMCPY_HOST_TO_DEVICE)
                : (sdev ? RDEV_MEMCPY_DEVICE_TO_HOST : RDEV_MEMCPY_HOST_TO_HOST);
  bool want_ddev, want_sdev;
  switch (kind) {
    case RDEV_MEMCPY_HOST_TO_HOST:
      want_ddev = false;
      want_sdev = false;
      break;
    case RDEV_MEMCPY_HOST_TO_DEVICE:
      want_ddev = true;
      want_sdev = false;
      break;
    case RDEV_MEMCPY_DEVICE_TO_HOST:
      want_ddev = false;
      want_sdev = true;
      break;
    case RDEV_MEMCPY_DEVICE_TO_DEVICE:
      want_ddev = true;
      want_sdev = true;
      break;
    default: return cl_error(RDEV_INVALID_PARAM, "unknown memcpy kind %d", (int)kind);
  }
  /* Checked here, before anything is sent: this library placed all of
   * the session's device memory (the server checks again). */
  if (ddev && !want_ddev) return cl_error(RDEV_INVALID_PARAM, "dst %p is device memory, not host memory", dst);
  if (sdev && !want_sdev) return cl_error(RDEV_INVALID_PARAM, "src %p is device memory, not host memory", src);
  if (!ddev && want_ddev)
    return cl_error(RDEV_INVALID_PARAM, "dst %p is not inside an allocation of this session", dst);
  if (!sdev && want_sdev)
    return cl_error(RDEV_INVALID_PARAM, "src %p is not inside an allocation of this session", src);
  if (!dfit) return cl_error(RDEV_INVALID_PARAM, "dst range of %zu bytes runs past the end of its allocation", count);
  if (!sfit) return cl_error(RDEV_INVALID_PARAM, "src range of %zu bytes runs past the end of its allocation", count);
  uint64_t da = (uint64_t)(uintptr_t)dst, sa = (uint64_t)(uintptr_t)src;
  uint32_t region;
  uint64_t off;
  if (kind == RDEV_MEMCPY_HOST_TO_DEVICE && cl_bulk_region_of(s, src, count, &region, &off))
    return region_copy(s, false, da, region, off, count, dest_max, stream);
  if (kind == RDEV_MEMCPY_DEVICE_TO_HOST && cl_bulk_region_of(s, dst, count, &region, &off))
    return region_copy(s, true, sa, region, off, count, dest_max, stream);

  switch (kind) {
    case RDEV_MEMCPY_HOST_TO_HOST: memmove(dst, src, count); return RDEV_OK;
    case RDEV_MEMCPY_HOST_TO_DEVICE: return write_chunks(s, da, src, count, dest_max, stream);
    case RDEV_MEMCPY_DEVICE_TO_HOST: return read_chunks(s, sa, dst, count, dest_max, stream);
    default: {
      rdev_v1_Request req = rdev_v1_Request_init_zero;
      req.which_op = rdev_v1_Request_copy_tag;
      req.op.copy.stream = stream;
      req.op.copy.dst = da;
      req.op.copy.src = sa;
      req.op.copy.count = count;
      req.op.copy.dest_max = dest_max;
      return submit_or_call(s, &req, stream);
    }
  }
}

/* A synchronous copy whose bytes were lost with the bulk connection fails
 * RDEV_UNAVAILABLE while the session lives on: in a session that does not
 * resume (one that does has them sent again on the next connection), or
 * a Read whose connection stayed away for the resume window. It runs
 * again, in-band or on the next bulk connection: the memory is the
 * caller's until it returns, and running a copy again gives the same
 * bytes. At most this many times. */
#define COPY_TRIES 3

int cl_memcpy(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count, rdev_memcpy_kind_t kind) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session is NULL");
  for (int i = 1;; i++) {
    int rc = do_memcpy(s, dst, dest_max, src, count, kind, 0);
    if (rc != RDEV_UNAVAILABLE || i == COPY_TRIES || cl_poll_dead(s, NULL, 0)) return rc;
  }
}

int cl_memcpy_async(rdev_session_t *s, void *dst, size_t dest_max, const void *src, size_t count,
                    rdev_memcpy_kind_t kind, rdev_stream_t *stream) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session is NULL");
  uint64_t h;
  int rc = cl_stream_handle(s, stream, &h);
  if (rc) return rc;
  return cl_stream_sent(stream, do_memcpy(s, dst, dest_max, src, count, kind, h));
}

static int do_memset(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count, uint64_t stream) {
  if (count > dest_max) return cl_error(RDEV_RT_PARAM_INVALID, "count %zu exceeds destMax %zu", count, dest_max);
  if (count == 0) return RDEV_OK;
  bool fits = true;
  if (!dptr) return cl_error(RDEV_INVALID_PARAM, "dptr is NULL");
  if (!cl_addr_known(s, dptr, count, &fits))
    return cl_error(RDEV_INVALID_PARAM, "%p is not inside an allocation of this session", dptr);
  if (!fits) return cl_error(RDEV_INVALID_PARAM, "range of %zu bytes runs past the end of its allocation", count);
  /* synchronous too, it waits for no reply: in the session's order, a
   * refusal at the next synchronize */
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  req.which_op = rdev_v1_Request_memset_tag;
  req.op.memset.stream = stream;
  req.op.memset.addr = (uint64_t)(uintptr_t)dptr;
  req.op.memset.value = value;
  req.op.memset.count = count;
  req.op.memset.dest_max = dest_max;
  req.op.memset.quiet = !stream;
  return cl_send_async(s, &req);
}

int cl_memset(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session is NULL");
  return do_memset(s, dptr, dest_max, value, count, 0);
}

/* ValueWrite and ValueWait: fire-and-forget on the stream; the server
 * checks the address. */
static int value_op(rdev_stream_t *stream, void *dptr, uint64_t value, int cond, uint32_t timeout_ms) {
  rdev_session_t *s = cl_stream_session(stream);
  uint64_t h;
  int rc = cl_stream_handle(s, stream, &h);
  if (rc) return rc;
  if (!dptr) return cl_error(RDEV_INVALID_PARAM, "dptr is NULL");
  rdev_v1_Request req = rdev_v1_Request_init_zero;
  if (cond < 0) {
    req.which_op = rdev_v1_Request_value_write_tag;
    req.op.value_write = (rdev_v1_ValueWrite){h, (uint64_t)(uintptr_t)dptr, value};
  } else {
    req.which_op = rdev_v1_Request_value_wait_tag;
    req.op.value_wait = (rdev_v1_ValueWait){h, (uint64_t)(uintptr_t)dptr, value, (uint32_t)cond, timeout_ms};
  }
  return cl_stream_sent(stream, cl_send_async(s, &req));
}

int rdev_value_write(rdev_stream_t *stream, void *dptr, uint64_t value) { return value_op(stream, dptr, value, -1, 0); }

int rdev_value_wait(rdev_stream_t *stream, void *dptr, uint64_t value, rdev_value_wait_t cond, uint32_t timeout_ms) {
  if ((unsigned)cond > RDEV_VALUE_WAIT_NOR) return cl_error(RDEV_INVALID_PARAM, "unknown condition %d", (int)cond);
  return value_op(stream, dptr, value, (int)cond, timeout_ms);
}

int cl_memset_async(rdev_session_t *s, void *dptr, size_t dest_max, int value, size_t count, rdev_stream_t *stream) {
  if (!s) return cl_error(RDEV_INVALID_PARAM, "session is NULL");
  uint64_t h;
  int rc = cl_stream_handle(s, stream, &h);
  if (rc) return rc;
  return cl_stream_sent(stream, do_memset(s, dptr, dest_max, value, count, h));
}
