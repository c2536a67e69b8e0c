/*
 * tests/fuzz/fuzz_job.c — libFuzzer harness for what rdevd takes of a job
 * from outside: a SubmitJobRequest off the wire (decoded as job_rpc.c
 * does, rdev_wire_decode_text with its NUL walk, then srv_job_spec_check;
 * and counted as the job client counts a ListJobs answer), a job record from the job directory
 * (decoded as job_store.c does), and the allow list (allow.h) with prefixes
 * and URLs of any bytes. The first byte picks which. A spec the check
 * passes must keep the promises the runner relies on (every name it uses
 * resolves, every range lies inside its buffer); a broken one abort()s,
 * sanitizers catch the rest (memory errors, UB, leaks of the decoder's
 * pointer fields).
 */
#include "fuzz.h"
#include <grpc/byte_buffer.h>
#include <grpc/slice.h>
#include <pb_decode.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/allow.h"
#include "jobs/job_private.h"

#define CHECK(c) \
  do { \
    if (!(c)) abort(); \
  } while (0)

static srv_allow_t *g_allow;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  char why[128];
  CHECK(srv_allow_add(&g_allow, "http://127.0.0.1:8080/data/", why, sizeof why) == 0);
  CHECK(srv_allow_add(&g_allow, "https://storage.example/bucket", why, sizeof why) == 0);
  return 0;
}

static int in_buffer(const rdev_v1_JobSpec *s, const char *name, uint64_t off, uint64_t count) {
  int b = srv_job_spec_buffer(s, name);
  return b >= 0 && off <= s->buffers[b].size && count <= s->buffers[b].size - off;
}

/* What a spec that passed the check promises (job_exec_steps.c and job_exec_transfer.c rely on it). */
static void check_spec(const rdev_v1_JobSpec *s) {
  CHECK(s->buffers_count >= 1);
  for (pb_size_t i = 0; i < s->inputs_count; i++) {
    const rdev_v1_JobInput *in = &s->inputs[i];
    CHECK(in->url && in->url[0]);
    CHECK(in_buffer(s, in->buffer, in->offset, in->max_bytes));
    CHECK(in->max_bytes > 0 || in->offset == s->buffers[srv_job_spec_buffer(s, in->buffer)].size);
  }
  for (pb_size_t i = 0; i < s->steps_count; i++) {
    const rdev_v1_JobStep *st = &s->steps[i];
    CHECK(st->stream < SRV_JOB_STREAMS);
    if (st->which_op == rdev_v1_JobStep_launch_tag) {
      CHECK(st->op.launch.kernel[0]);
      for (pb_size_t a = 0; a < st->op.launch.args_count; a++)
        if (st->op.launch.args[a].which_v == rdev_v1_JobArg_ptr_tag)
          CHECK(in_buffer(s, st->op.launch.args[a].v.ptr.buffer, st->op.launch.args[a].v.ptr.offset, 0));
    } else if (st->which_op == rdev_v1_JobStep_function_tag) {
      CHECK(srv_job_spec_binary(s, st->op.function.binary) >= 0 && st->op.function.name[0]);
      for (pb_size_t a = 0; a < st->op.function.args_count; a++)
        if (st->op.function.args[a].which_v == rdev_v1_JobArg_ptr_tag)
          CHECK(in_buffer(s, st->op.function.args[a].v.ptr.buffer, st->op.function.args[a].v.ptr.offset, 0));
    } else if (st->which_op == rdev_v1_JobStep_copy_tag) {
      CHECK(in_buffer(s, st->op.copy.dst.buffer, st->op.copy.dst.offset, st->op.copy.count));
      CHECK(in_buffer(s, st->op.copy.src.buffer, st->op.copy.src.offset, st->op.copy.count));
    } else {
      CHECK(st->which_op == rdev_v1_JobStep_memset_tag);
      CHECK(in_buffer(s, st->op.memset.dst.buffer, st->op.memset.dst.offset, st->op.memset.count));
    }
  }
  for (pb_size_t i = 0; i < s->binaries_count; i++) {
    CHECK(s->binaries[i].url && s->binaries[i].url[0]);
    CHECK(srv_job_spec_binary(s, s->binaries[i].name) == (int)i);
  }
  for (pb_size_t i = 0; i < s->outputs_count; i++)
    CHECK(in_buffer(s, s->outputs[i].buffer, s->outputs[i].offset, s->outputs[i].size));
}

static void fuzz_spec(const uint8_t *data, size_t size) {
  rdev_v1_SubmitJobRequest *q = calloc(1, sizeof *q);
  CHECK(q);
  grpc_slice sl = grpc_slice_from_copied_buffer((const char *)data, size);
  grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&sl, 1);
  grpc_slice_unref(sl);
  size_t count = 0;
  const char *err = NULL;
  if (!rdev_wire_count_field(bb, 1, 4, &count, &err)) CHECK(err);
  CHECK(count <= 5); /* it stops once past the most */
  err = NULL;
  bool decoded = rdev_wire_decode_text(bb, rdev_v1_SubmitJobRequest_fields, q, &err);
  CHECK(decoded || err);
  grpc_byte_buffer_destroy(bb);
  if (decoded) {
    char msg[320];
    memset(msg, 0x5a, sizeof msg);
    int rc = srv_job_spec_check(&q->spec, g_allow, msg, sizeof msg);
    CHECK(memchr(msg, 0, sizeof msg));
    if (rc == GRPC_STATUS_OK)
      check_spec(&q->spec);
    else
      CHECK(msg[0] && (rc == GRPC_STATUS_INVALID_ARGUMENT || rc == GRPC_STATUS_PERMISSION_DENIED));
  }
  pb_release(rdev_v1_SubmitJobRequest_fields, q);
  free(q);
}

static void fuzz_record(const uint8_t *data, size_t size) {
  rdev_v1_JobRecord *r = calloc(1, sizeof *r);
  CHECK(r);
  pb_istream_t is = pb_istream_from_buffer(data, size);
  pb_decode(&is, rdev_v1_JobRecord_fields, r);
  pb_release(rdev_v1_JobRecord_fields, r);
  free(r);
}

/* Lines: every one but the last a prefix to add, the last a URL to check
 * (and an address, when it parses as one). */
static void fuzz_allow(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  CHECK(text);
  memcpy(text, data, size);
  text[size] = '\0';
  srv_allow_t *list = NULL;
  char why[64], *line = text, *nl;
  while ((nl = strchr(line, '\n'))) {
    *nl = '\0';
    memset(why, 0x5a, sizeof why);
    if (srv_allow_add(&list, line, why, sizeof why)) CHECK(memchr(why, 0, sizeof why) && why[0]);
    line = nl + 1;
  }
  memset(why, 0x5a, sizeof why);
  if (!srv_allow_url(list, line, why, sizeof why)) CHECK(memchr(why, 0, sizeof why) && why[0]);
  memset(why, 0x5a, sizeof why);
  if (!srv_allow_addr(list, line, why, sizeof why)) CHECK(memchr(why, 0, sizeof why) && why[0]);
  srv_allow_free(list);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] % 3) {
    case 0: fuzz_spec(data + 1, size - 1); break;
    case 1: fuzz_record(data + 1, size - 1); break;
    default: fuzz_allow(data + 1, size - 1); break;
  }
  return 0;
}
