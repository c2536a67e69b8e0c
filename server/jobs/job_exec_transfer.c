/*
 * server/jobs/job_exec_transfer.c — a job's bytes between HTTP
 * (job_http.h) and its device buffers (job_exec_session.h). Fetch: the
 * inputs, all at once, each body streamed through 1 MiB quiet Writes (only
 * a refusal answers) straight into its buffer (the runtime's staging where
 * device memory is not host-mapped), the binaries into host memory for
 * BinaryLoad, within the tenant's cap on fetched bytes (max_job_fetch);
 * then the sha256 digests checked. Deliver: each output read back in 1 MiB
 * Reads, PUT or POSTed to its URL or written to a kept file in the job
 * directory (the tenant's job_disk quota reserved first). A failure fails
 * the job, naming the input, binary or output.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job_exec_transfer.h"
#include "job_http.h"

/* ---- fetch ------------------------------------------------------------------------ */

/* One input's body on its way into its buffer. */
typedef struct {
  run_t *r;
  uint64_t addr, room; /* where the next byte goes, and the bytes left there */
  grpc_slice cur;      /* the bytes gathered for the next Write */
  size_t fill;
  int have, total_told;
  uint64_t *fetched_all, cap_all; /* the job's fetched bytes, and the tenant's cap on them */
} sink_t;

static int flush_write(sink_t *k) {
  if (!k->have) return RDEV_OK;
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_write_tag;
  q.op.write.addr = k->addr;
  q.op.write.dest_max = k->room;
  q.op.write.quiet = true;
  grpc_slice part = grpc_slice_sub_no_ref(k->cur, 0, k->fill);
  int rc = srv_job_send_req(k->r->x, &q, &part, 0);
  grpc_slice_unref(k->cur);
  k->have = 0;
  k->addr += k->fill;
  k->room -= k->fill;
  k->fill = 0;
  if (!rc) {
    pthread_mutex_lock(&k->r->x->mu);
    rc = k->r->x->async_code;
    pthread_mutex_unlock(&k->r->x->mu);
  }
  return rc;
}

static int sink(void *user, const void *data, size_t len, uint64_t total) {
  sink_t *k = user;
  if (total && !k->total_told) {
    k->total_told = 1;
    srv_job_progress(k->r->x->job, 0, total, 0, 0);
  }
  *k->fetched_all += len;
  if (*k->fetched_all > k->cap_all) return RDEV_QUOTA_EXCEEDED;
  if (len > k->room - k->fill) return RDEV_STORAGE_OVER_LIMIT; /* max_bytes keeps it inside; never write past */
  const uint8_t *p = data;
  while (len) {
    if (!k->have) {
      k->cur = grpc_slice_malloc(CHUNK);
      k->have = 1;
    }
    size_t n = CHUNK - k->fill < len ? CHUNK - k->fill : len;
    memcpy(GRPC_SLICE_START_PTR(k->cur) + k->fill, p, n);
    k->fill += n;
    p += n;
    len -= n;
    srv_job_progress(k->r->x->job, n, 0, 0, 0);
    if (k->fill == CHUNK) {
      int rc = flush_write(k);
      if (rc) return rc;
    }
  }
  return RDEV_OK;
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

static void http_opts(run_t *r, srv_http_opts_t *o, const srv_allow_t *allow) {
  const srv_config_t *cfg = &r->x->job->jobs->srv->cfg;
  const rdev_v1_JobSpec *spec = &r->x->job->spec;
  *o = (srv_http_opts_t){.allow = allow,
                         .retries = spec->retries ? (int)spec->retries : cfg->job_retries,
                         .max_redirects = 5,
                         .cancel = &r->x->job->cancel,
                         .resolve = cfg->job_resolve[0] ? cfg->job_resolve : NULL};
  /* the deadline in http's clock: CLOCK_MONOTONIC ms, as srv_job_mono_ms */
  o->deadline_ms = r->x->deadline_ms;
}

/* A binary's body, into host memory (at most a chunk: BinaryLoad's limit). */
typedef struct {
  run_t *r;
  uint8_t *buf;
  size_t len;
  uint64_t *fetched_all, cap_all;
} bin_sink_t;

static int bin_sink(void *user, const void *data, size_t len, uint64_t total) {
  bin_sink_t *k = user;
  (void)total;
  *k->fetched_all += len;
  if (*k->fetched_all > k->cap_all) return RDEV_QUOTA_EXCEEDED;
  if (len > CHUNK - k->len) return RDEV_STORAGE_OVER_LIMIT;
  memcpy(k->buf + k->len, data, len);
  k->len += len;
  srv_job_progress(k->r->x->job, len, 0, 0, 0);
  return RDEV_OK;
}

/* Whether the digest is the 64 hex digits want. */
static int sha_matches(const uint8_t got[32], const char *want) {
  for (int k = 0; k < 32; k++)
    if (got[k] != (hexval(want[2 * k]) << 4 | hexval(want[2 * k + 1]))) return 0;
  return 1;
}

int srv_job_fetch_inputs(run_t *r, const srv_allow_t *allow) {
  srv_job_t *job = r->x->job;
  const rdev_v1_JobSpec *spec = &job->spec;
  int ni = spec->inputs_count, n = ni + spec->binaries_count;
  if (!n) return RDEV_OK;
  srv_http_get_t gets[16 + 4];
  sink_t sinks[16];
  bin_sink_t bsinks[4];
  uint64_t fetched = 0;
  pthread_mutex_lock(&job->tenant->mu);
  uint64_t cap = job->tenant->max_job_fetch;
  pthread_mutex_unlock(&job->tenant->mu);
  for (int i = ni; i < n; i++)
    if (!(r->bin[i - ni] = malloc(CHUNK))) {
      srv_job_fail(job, "job", RDEV_BAD_ALLOC, "out of server memory");
      return RDEV_BAD_ALLOC;
    }
  for (int i = 0; i < n; i++) {
    const char *url, *sha;
    if (i < ni) {
      const rdev_v1_JobInput *in = &spec->inputs[i];
      int b = srv_job_spec_buffer(spec, in->buffer);
      sinks[i] = (sink_t){
          .r = r, .addr = r->addr[b] + in->offset, .room = in->max_bytes, .fetched_all = &fetched, .cap_all = cap};
      gets[i] = (srv_http_get_t){.max_bytes = in->max_bytes, .sink = sink, .user = &sinks[i]};
      url = in->url, sha = in->sha256;
    } else {
      const rdev_v1_JobBinary *bin = &spec->binaries[i - ni];
      bsinks[i - ni] = (bin_sink_t){.r = r, .buf = r->bin[i - ni], .fetched_all = &fetched, .cap_all = cap};
      gets[i] = (srv_http_get_t){.max_bytes = CHUNK, .sink = bin_sink, .user = &bsinks[i - ni]};
      url = bin->url, sha = bin->sha256;
    }
    gets[i].url = url;
    gets[i].no_sha256 = !sha[0];
  }
  srv_http_opts_t o;
  http_opts(r, &o, allow);
  int rc = srv_http_fetch(gets, n, &o);
  for (int i = 0; i < ni; i++) {
    int wrc = flush_write(&sinks[i]);
    if (!rc && wrc) rc = wrc, gets[i].status = wrc;
  }
  for (int i = ni; i < n; i++) r->bin_len[i - ni] = bsinks[i - ni].len;
  for (int i = 0; i < n && !rc; i++) { /* every body whole: now their checksums */
    const char *want = i < ni ? spec->inputs[i].sha256 : spec->binaries[i - ni].sha256;
    if (want[0] && !sha_matches(gets[i].sha256, want)) {
      gets[i].status = rc = RDEV_CHECKSUM;
      snprintf(gets[i].error, sizeof gets[i].error, "sha256 of the %llu bytes fetched does not match the spec's",
               (unsigned long long)gets[i].received);
    }
  }
  if (!rc) return RDEV_OK;
  for (int i = 0; i < n; i++) {
    if (gets[i].status != rc) continue; /* the first failure; the others were stopped for it */
    char at[48];
    snprintf(at, sizeof at, "%s %s", i < ni ? "input" : "binary",
             i < ni ? spec->inputs[i].buffer : spec->binaries[i - ni].name);
    const char *why =
        gets[i].status == RDEV_QUOTA_EXCEEDED ? "the tenant's cap on fetched bytes (max_job_fetch)" : gets[i].error;
    srv_job_fail(job, at, gets[i].status, "%s", why[0] ? why : rdev_strerror(gets[i].status));
    return gets[i].status;
  }
  srv_job_fail(job, "job", rc, "%s", rdev_strerror(rc));
  return rc;
}

/* ---- deliver ---------------------------------------------------------------------- */

/* Reads count bytes at addr (count <= CHUNK) into dst. */
static int read_dev(ex_t *x, uint64_t addr, void *dst, size_t count) {
  rdev_v1_Request q = rdev_v1_Request_init_zero;
  q.which_op = rdev_v1_Request_read_tag;
  q.op.read = (rdev_v1_Read){.addr = addr, .count = count, .dest_max = count};
  pthread_mutex_lock(&x->mu);
  x->read_dst = dst;
  x->read_cap = count;
  x->read_len = 0;
  pthread_mutex_unlock(&x->mu);
  int rc = srv_job_request(x, &q);
  pthread_mutex_lock(&x->mu);
  x->read_dst = NULL;
  if (!rc && x->read_len != count) rc = RDEV_PROTOCOL;
  pthread_mutex_unlock(&x->mu);
  return rc;
}

/* An output's bytes, read ahead from the device a chunk at a time. */
typedef struct {
  run_t *r;
  uint64_t addr, size;
  uint8_t *buf;
  uint64_t at; /* the buffer holds [at, at + len) */
  size_t len;
  uint64_t told; /* bytes counted as delivered: a retry starts again at 0 without counting twice */
} source_t;

static int source(void *user, uint64_t off, void *buf, size_t cap, size_t *got) {
  source_t *src = user;
  *got = 0;
  if (off >= src->size) return RDEV_OK;
  if (off < src->at || off >= src->at + src->len) {
    size_t n = src->size - off < CHUNK ? (size_t)(src->size - off) : CHUNK;
    int rc = read_dev(src->r->x, src->addr + off, src->buf, n);
    if (rc) return rc;
    src->at = off;
    src->len = n;
  }
  size_t n = (size_t)(src->at + src->len - off);
  if (n > cap) n = cap;
  memcpy(buf, src->buf + (off - src->at), n);
  *got = n;
  if (off + n > src->told) {
    srv_job_progress(src->r->x->job, 0, 0, off + n - src->told, 0);
    src->told = off + n;
  }
  return RDEV_OK;
}

static int keep_output(run_t *r, const rdev_v1_JobOutput *o, source_t *src, char *why, size_t whylen) {
  srv_job_t *job = r->x->job;
  if (srv_job_keep_reserve(job, o->size)) {
    snprintf(why, whylen, "%llu bytes more would pass the tenant's job disk quota (job_disk)",
             (unsigned long long)o->size);
    return RDEV_QUOTA_EXCEEDED;
  }
  char tmp[600];
  FILE *f = srv_job_store_out_create(job->jobs, job->id, o->name, tmp, sizeof tmp);
  int rc = f ? RDEV_OK : RDEV_INTERNAL_ERROR;
  for (uint64_t off = 0; !rc && off < o->size;) {
    size_t n = o->size - off < CHUNK ? (size_t)(o->size - off) : CHUNK;
    if (!(rc = read_dev(r->x, src->addr + off, src->buf, n)) && fwrite(src->buf, 1, n, f) != n)
      rc = RDEV_INTERNAL_ERROR;
    off += n;
    if (!rc) srv_job_progress(job, 0, 0, n, 0);
  }
  if (f && rc) {
    fclose(f);
    unlink(tmp);
  } else if (f && srv_job_store_out_commit(job->jobs, f, tmp, job->id, o->name)) {
    rc = RDEV_INTERNAL_ERROR;
  }
  if (rc == RDEV_INTERNAL_ERROR) snprintf(why, whylen, "cannot write the kept output to the job directory");
  srv_job_keep_done(job, rc ? NULL : o->name, o->size);
  return rc;
}

int srv_job_deliver_outputs(run_t *r, const srv_allow_t *allow) {
  srv_job_t *job = r->x->job;
  const rdev_v1_JobSpec *spec = &job->spec;
  uint8_t *buf = malloc(CHUNK);
  if (!buf) {
    srv_job_fail(job, "job", RDEV_BAD_ALLOC, "out of server memory");
    return RDEV_BAD_ALLOC;
  }
  int rc = RDEV_OK;
  for (pb_size_t i = 0; i < spec->outputs_count && !rc; i++) {
    const rdev_v1_JobOutput *o = &spec->outputs[i];
    source_t src = {
        .r = r, .addr = r->addr[srv_job_spec_buffer(spec, o->buffer)] + o->offset, .size = o->size, .buf = buf};
    char why[256] = "";
    if (o->url && o->url[0]) {
      srv_http_put_t p = {
          .url = o->url, .method = o->method[0] ? o->method : "PUT", .size = o->size, .source = source, .user = &src};
      srv_http_opts_t opts;
      http_opts(r, &opts, allow);
      rc = srv_http_deliver(&p, &opts);
      snprintf(why, sizeof why, "%s", p.error);
    } else {
      rc = keep_output(r, o, &src, why, sizeof why);
    }
    if (rc) {
      char at[48];
      snprintf(at, sizeof at, "output %s", o->name);
      srv_job_fail(job, at, rc, "%s", why[0] ? why : rdev_strerror(rc));
    }
  }
  free(buf);
  return rc;
}
