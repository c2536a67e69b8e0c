/*
 * runtime/acl/acl_exec.c — the device side of the engine's streams on
 * acl: an aclrtStream per stream, and the device tasks the engine hands
 * over, each issued on that stream and synchronized before the next
 * (the engine keeps stream order, events, callbacks and fair share on the
 * host, as on every backend); kernels from binaries, loaded on every
 * device, and the built-in kernels from the binaries of --acl-kernels
 * (its NAME.o files).
 *
 * Copies take the stream (aclrtMemcpyAsync) when their host side is pinned
 * memory of this backend (the staging buffers are) and their device side
 * is the stream's device; any other copy goes through aclrtMemcpy, which
 * takes any host memory. A kernel's argument blob is packed by its
 * signature, pointers being the device addresses the generic layer checked.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

#define MAX_KERNEL_FILE ((size_t)256 << 20)

/* A binary loaded on every device: handles per device, functions per
 * device and function (fns[dev * nfuncs + i]). */
typedef struct {
  void **bins;
  void *fns[];
} acl_bin_t;

/* ---- streams ------------------------------------------------------------- */

int acl_stream_open(rdev_rt_stream_t *s) {
  acl_t *a = s->rt->impl;
  int rc = acl_enter(a, s->dev);
  if (rc) return rc;
  int e = a->api->rtCreateStream(&s->dev_stream);
  return e ? acl_fail(a, e, "aclrtCreateStream") : RDEV_OK;
}

void acl_stream_close(rdev_rt_stream_t *s) {
  acl_t *a = s->rt->impl;
  if (acl_enter(a, s->dev) == RDEV_OK) a->api->rtDestroyStream(s->dev_stream);
}

void acl_interrupt(rdev_rt_stream_t *s) {
  acl_t *a = s->rt->impl;
  if (acl_enter(a, s->dev) == RDEV_OK) a->api->rtStreamAbort(s->dev_stream);
}

/* Waits for work issued on s (e its issue's result). A task cut short by
 * the engine's abort or discard (acl_interrupt) is no error of its own: the
 * engine reports what the discard means, as for a delay cut short on the
 * sim. */
static int finish(acl_t *a, rdev_rt_stream_t *s, int e, const char *what) {
  if (e) return acl_fail(a, e, what);
  e = a->api->rtSynchronizeStreamWithTimeout(s->dev_stream, -1);
  if (e == RDEV_RT_STREAM_ABORT && rt_engine_cut_off(s)) return RDEV_OK;
  return e ? acl_fail(a, e, "aclrtSynchronizeStreamWithTimeout") : RDEV_OK;
}

static int copy_on(acl_t *a, rdev_rt_stream_t *s, void *dst, const void *src, size_t n, rdev_memcpy_kind_t kind) {
  acl_block_t b;
  int on_stream;
  switch (kind) {
    case RDEV_MEMCPY_HOST_TO_DEVICE:
      on_stream = acl_dev_of(a, dst) == s->dev && acl_table_find(&a->hmem, src, n, &b);
      break;
    case RDEV_MEMCPY_DEVICE_TO_HOST:
      on_stream = acl_dev_of(a, src) == s->dev && acl_table_find(&a->hmem, dst, n, &b);
      break;
    case RDEV_MEMCPY_DEVICE_TO_DEVICE: on_stream = acl_dev_of(a, src) == s->dev && acl_dev_of(a, dst) == s->dev; break;
    default: on_stream = 0;
  }
  if (!on_stream) return acl_copy(a, dst, src, n, kind);
  int rc = acl_enter(a, s->dev);
  return rc ? rc : finish(a, s, a->api->rtMemcpyAsync(dst, n, src, n, (int)kind, s->dev_stream), "aclrtMemcpyAsync");
}

static int launch(acl_t *a, rdev_rt_stream_t *s, const rt_task_t *t) {
  const rdev_rt_function_t *f = t->u.kernel.fn;
  void *fh;
  if (f) {
    const rdev_rt_binary_t *b = f->bin;
    fh = ((acl_bin_t *)b->dev_bin)->fns[s->dev * b->nfuncs + (int)(f - b->funcs)];
  } else {
    fh = a->devs[s->dev].builtin[t->u.kernel.index];
  }
  int nk;
  const rdev_kernel_sig_t *sig = &rdev_rt_kernels(&nk)[t->u.kernel.index];
  unsigned char blob[RDEV_RT_MAX_KERNEL_ARGS * 8];
  size_t len = rt_blob_pack(t->u.kernel.args, sig->nparams, blob);
  int rc =
      finish(a, s, a->api->rtLaunchKernelWithHostArgs(fh, t->u.kernel.blocks, s->dev_stream, NULL, blob, len, NULL, 0),
             "aclrtLaunchKernelWithHostArgs");
  /* CANN prints a kernel's output on the host process's stdout, not per launch */
  if (t->u.kernel.print_fn) t->u.kernel.print_fn(t->u.kernel.print_user, "", 0);
  return rc;
}

int acl_exec(rdev_rt_stream_t *s, rt_task_t *t) {
  acl_t *a = s->rt->impl;
  int rc = acl_enter(a, s->dev);
  if (rc) {
    if (t->op == RT_TASK_KERNEL && t->u.kernel.print_fn) t->u.kernel.print_fn(t->u.kernel.print_user, "", 0);
    return rc;
  }
  switch (t->op) {
    case RT_TASK_COPY: return copy_on(a, s, t->u.mem.dst, t->u.mem.src, t->u.mem.n, t->u.mem.kind);
    case RT_TASK_GATHER: {
      char *dst = t->u.gather.dst;
      for (int i = 0; i < t->u.gather.n && !rc; dst += t->u.gather.iov[i].len, i++)
        rc = copy_on(a, s, dst, t->u.gather.iov[i].base, t->u.gather.iov[i].len, RDEV_MEMCPY_HOST_TO_DEVICE);
      return rc;
    }
    case RT_TASK_MEMSET:
      if (acl_dev_of(a, t->u.mem.dst) != s->dev) return acl_memset(a, t->u.mem.dst, t->u.mem.value, t->u.mem.n);
      return finish(a, s, a->api->rtMemsetAsync(t->u.mem.dst, t->u.mem.n, t->u.mem.value, t->u.mem.n, s->dev_stream),
                    "aclrtMemsetAsync");
    case RT_TASK_KERNEL: return launch(a, s, t);
    case RT_TASK_OP: return acl_op_exec(a, s, t->u.op.call);
    case RT_TASK_VALUE_WRITE: {
      uint64_t v = t->u.value.value;
      return acl_copy(a, t->u.value.addr, &v, sizeof v, RDEV_MEMCPY_HOST_TO_DEVICE);
    }
    default: return rt_fail(RDEV_INTERNAL_ERROR, "the acl backend runs no task of op %d", t->op);
  }
}

int acl_load_value(rdev_rt_stream_t *s, const void *addr, uint64_t *v) {
  return acl_copy(s->rt->impl, v, addr, sizeof *v, RDEV_MEMCPY_DEVICE_TO_HOST);
}

/* ---- kernels ---------------------------------------------------------------- */

int acl_kernel_offered(void *impl, int index) {
  acl_t *a = impl;
  return a->devs[0].builtin && a->devs[0].builtin[index] != NULL;
}

static void unload_bins(acl_t *a, void **bins, int n) {
  for (int d = 0; d < n; d++)
    if (bins[d] && acl_enter(a, d) == RDEV_OK) a->api->rtBinaryUnLoad(bins[d]);
}

int acl_binary_load(void *impl, rdev_rt_binary_t *b, const void *data, size_t len) {
  acl_t *a = impl;
  size_t nfns = (size_t)a->ndev * (size_t)b->nfuncs;
  acl_bin_t *ab = calloc(1, sizeof *ab + (nfns + (size_t)a->ndev) * sizeof(void *));
  if (!ab) return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  ab->bins = ab->fns + nfns;
  int rc = RDEV_OK;
  for (int d = 0; d < a->ndev && !rc; d++) {
    int e;
    if ((rc = acl_enter(a, d))) break;
    if ((e = a->api->rtBinaryLoadFromData(data, len, NULL, &ab->bins[d]))) {
      rc = acl_fail(a, e, "aclrtBinaryLoadFromData");
      break;
    }
    for (int i = 0; i < b->nfuncs && !rc; i++)
      if ((e = a->api->rtBinaryGetFunction(ab->bins[d], b->funcs[i].name, &ab->fns[d * b->nfuncs + i])))
        rc = acl_fail(a, e, "aclrtBinaryGetFunction");
  }
  if (rc) {
    unload_bins(a, ab->bins, a->ndev);
    free(ab);
    return rc;
  }
  b->dev_bin = ab;
  return RDEV_OK;
}

void acl_binary_unload(void *impl, rdev_rt_binary_t *b) {
  acl_t *a = impl;
  acl_bin_t *ab = b->dev_bin;
  if (!ab) return;
  unload_bins(a, ab->bins, a->ndev);
  free(ab);
  b->dev_bin = NULL;
}

/* Reads file path whole (at most MAX_KERNEL_FILE bytes). */
static int read_file(const char *path, char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return rt_fail(RDEV_INVALID_PARAM, "cannot open kernel binary %s", path);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += k;
    if (n == cap) {
      char *more = cap < MAX_KERNEL_FILE ? realloc(buf, cap * 2) : NULL;
      if (!more) {
        free(buf);
        buf = NULL;
      }
      buf = more;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf)
    return rt_fail(RDEV_INVALID_PARAM, "kernel binary %s is over %zu bytes, or out of memory", path, MAX_KERNEL_FILE);
  *data = buf;
  *len = n;
  return RDEV_OK;
}

/* Loads one file on every device and takes the built-in kernels it holds
 * that no earlier file did. */
static int load_kernel_file(acl_t *a, const char *path, int nk, const rdev_kernel_sig_t *sigs) {
  char *data = NULL;
  size_t len = 0;
  int rc = read_file(path, &data, &len);
  if (rc) return rc;
  for (int d = 0; d < a->ndev && !rc; d++) {
    acl_dev_t *dv = &a->devs[d];
    void *bin = NULL;
    int e, used = 0;
    if ((rc = acl_enter(a, d))) break;
    if ((e = a->api->rtBinaryLoadFromData(data, len, NULL, &bin))) {
      char what[4200];
      snprintf(what, sizeof what, "aclrtBinaryLoadFromData of %s", path);
      rc = acl_fail(a, e, what);
      break;
    }
    for (int i = 0; i < nk; i++)
      if (!dv->builtin[i] && a->api->rtBinaryGetFunction(bin, sigs[i].name, &dv->builtin[i]) == 0) used = 1;
    void **more = used ? realloc(dv->kbins, (size_t)(dv->nkbins + 1) * sizeof *more) : NULL;
    if (more) {
      dv->kbins = more;
      dv->kbins[dv->nkbins++] = bin;
    } else {
      a->api->rtBinaryUnLoad(bin);
      if (used) rc = rt_fail(RDEV_BAD_ALLOC, "out of host memory");
    }
  }
  free(data);
  return rc;
}

/* Kernel binaries: NAME.o, as the kernel build step makes them. */
static int kernel_file(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return e->d_name[0] != '.' && n > 2 && strcmp(e->d_name + n - 2, ".o") == 0;
}

int acl_kernels_load(acl_t *a, const char *dir) {
  int nk;
  const rdev_kernel_sig_t *sigs = rdev_rt_kernels(&nk);
  for (int d = 0; d < a->ndev; d++)
    if (!(a->devs[d].builtin = calloc((size_t)nk, sizeof(void *))))
      return rt_fail(RDEV_BAD_ALLOC, "out of host memory");
  struct dirent **names;
  int n = scandir(dir, &names, kernel_file, alphasort);
  if (n < 0) return rt_fail(RDEV_INVALID_PARAM, "cannot read the kernel directory %s", dir);
  int rc = RDEV_OK;
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    struct stat st;
    if (!rc && stat(path, &st) == 0 && S_ISREG(st.st_mode)) rc = load_kernel_file(a, path, nk, sigs);
    free(names[i]);
  }
  free(names);
  return rc;
}

void acl_kernels_unload(acl_t *a) {
  for (int d = 0; d < a->ndev; d++) {
    acl_dev_t *dv = &a->devs[d];
    for (int i = 0; i < dv->nkbins; i++)
      if (acl_enter(a, d) == RDEV_OK) a->api->rtBinaryUnLoad(dv->kbins[i]);
    free(dv->kbins);
    free(dv->builtin);
    dv->kbins = NULL;
    dv->builtin = NULL;
    dv->nkbins = 0;
  }
}
