/*
 * tests/unit/test_job_yaml.c — client/cli/job_yaml.c: a job spec in YAML
 * (and the same in JSON) into the exact rdev.v1.JobSpec; kernel arguments
 * typed by the server's signatures; sizes and durations; every class of
 * error, each with the line it names; and every prefix and many mutations
 * of a valid spec, each giving a spec or an error without crashing or
 * leaking (ASan builds check the leaks).
 */
#include <check.h>
#include <pb_encode.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job_yaml.h"

/* The full example of the spec format. */
static const char EXAMPLE[] =
    "# a job\n"
    "name: square-256M\n"
    "buffers:\n"
    "  - {name: x, size: 256MiB}          # size: integer or with a unit\n"
    "  - {name: y, size: 268435456, device: 0}\n"
    "inputs:\n"
    "  - {buffer: x, url: \"http://h/data\", sha256: "
    "\"0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef\", offset: 0, max_bytes: 256MiB}\n"
    "steps:\n"
    "  - {launch: square_f32, blocks: 64, args: [x, y, {u64: 67108864}], stream: 0, name: square}\n"
    "  - {copy: {dst: y, src: {buffer: x, offset: 64}, count: 1024}}\n"
    "  - {memset: {dst: y, value: 0, count: 100}}\n"
    "outputs:\n"
    "  - {name: result, buffer: y, url: \"http://h/upload/r\", method: PUT}\n"
    "  - {name: head, buffer: y, offset: 0, size: 4096}      # no url: kept on the server\n"
    "callback_url: \"http://h/hook/j1\"\n"
    "timeout: 600          # seconds, or \"10m\", \"2h\", \"30s\"\n"
    "retries: 3\n";

static const char EXAMPLE_JSON[] =
    "{\n"
    "  \"name\": \"square-256M\",\n"
    "  \"buffers\": [\n"
    "    {\"name\": \"x\", \"size\": \"256MiB\"},\n"
    "    {\"name\": \"y\", \"size\": 268435456, \"device\": 0}\n"
    "  ],\n"
    "  \"inputs\": [{\"buffer\": \"x\", \"url\": \"http://h/data\",\n"
    "              \"sha256\": \"0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789abcdef\",\n"
    "              \"offset\": 0, \"max_bytes\": \"256MiB\"}],\n"
    "  \"steps\": [\n"
    "    {\"launch\": \"square_f32\", \"blocks\": 64, \"args\": [\"x\", \"y\", {\"u64\": 67108864}],\n"
    "     \"stream\": 0, \"name\": \"square\"},\n"
    "    {\"copy\": {\"dst\": \"y\", \"src\": {\"buffer\": \"x\", \"offset\": 64}, \"count\": 1024}},\n"
    "    {\"memset\": {\"dst\": \"y\", \"value\": 0, \"count\": 100}}\n"
    "  ],\n"
    "  \"outputs\": [\n"
    "    {\"name\": \"result\", \"buffer\": \"y\", \"url\": \"http://h/upload/r\", \"method\": \"PUT\"},\n"
    "    {\"name\": \"head\", \"buffer\": \"y\", \"offset\": 0, \"size\": 4096}\n"
    "  ],\n"
    "  \"callback_url\": \"http://h/hook/j1\",\n"
    "\t\"timeout\": 600,\n"
    "  \"retries\": 3\n"
    "}\n";

static rdev_v1_JobSpec *new_spec(void) {
  rdev_v1_JobSpec *s = malloc(sizeof *s);
  ck_assert_ptr_nonnull(s);
  memset(s, 0xa5, sizeof *s); /* the parser must not trust what it was given */
  return s;
}

static int parse(const char *text, const rdev_v1_InfoReply *k, rdev_v1_JobSpec *s, char *err, size_t errlen) {
  return rdev_cli_job_parse(text, strlen(text), k, s, err, errlen);
}

static void check_example(const rdev_v1_JobSpec *s) {
  ck_assert_str_eq(s->name, "square-256M");
  ck_assert_uint_eq(s->buffers_count, 2);
  ck_assert_str_eq(s->buffers[0].name, "x");
  ck_assert_uint_eq(s->buffers[0].size, 256ull << 20);
  ck_assert_int_eq(s->buffers[0].device, 0);
  ck_assert_str_eq(s->buffers[1].name, "y");
  ck_assert_uint_eq(s->buffers[1].size, 268435456ull);

  ck_assert_uint_eq(s->inputs_count, 1);
  ck_assert_str_eq(s->inputs[0].buffer, "x");
  ck_assert_str_eq(s->inputs[0].url, "http://h/data");
  ck_assert_str_eq(s->inputs[0].sha256, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  ck_assert_uint_eq(s->inputs[0].offset, 0);
  ck_assert_uint_eq(s->inputs[0].max_bytes, 256ull << 20);

  ck_assert_uint_eq(s->steps_count, 3);
  const rdev_v1_JobStep *st = &s->steps[0];
  ck_assert_str_eq(st->name, "square");
  ck_assert_uint_eq(st->stream, 0);
  ck_assert_uint_eq(st->which_op, rdev_v1_JobStep_launch_tag);
  ck_assert_str_eq(st->op.launch.kernel, "square_f32");
  ck_assert_uint_eq(st->op.launch.blocks, 64);
  ck_assert_uint_eq(st->op.launch.args_count, 3);
  ck_assert_uint_eq(st->op.launch.args[0].which_v, rdev_v1_JobArg_ptr_tag);
  ck_assert_str_eq(st->op.launch.args[0].v.ptr.buffer, "x");
  ck_assert_uint_eq(st->op.launch.args[0].v.ptr.offset, 0);
  ck_assert_uint_eq(st->op.launch.args[1].which_v, rdev_v1_JobArg_ptr_tag);
  ck_assert_str_eq(st->op.launch.args[1].v.ptr.buffer, "y");
  ck_assert_uint_eq(st->op.launch.args[2].which_v, rdev_v1_JobArg_u64_tag);
  ck_assert_uint_eq(st->op.launch.args[2].v.u64, 67108864ull);

  st = &s->steps[1];
  ck_assert_str_eq(st->name, "");
  ck_assert_uint_eq(st->which_op, rdev_v1_JobStep_copy_tag);
  ck_assert(st->op.copy.has_dst && st->op.copy.has_src);
  ck_assert_str_eq(st->op.copy.dst.buffer, "y");
  ck_assert_uint_eq(st->op.copy.dst.offset, 0);
  ck_assert_str_eq(st->op.copy.src.buffer, "x");
  ck_assert_uint_eq(st->op.copy.src.offset, 64);
  ck_assert_uint_eq(st->op.copy.count, 1024);

  st = &s->steps[2];
  ck_assert_uint_eq(st->which_op, rdev_v1_JobStep_memset_tag);
  ck_assert(st->op.memset.has_dst);
  ck_assert_str_eq(st->op.memset.dst.buffer, "y");
  ck_assert_int_eq(st->op.memset.value, 0);
  ck_assert_uint_eq(st->op.memset.count, 100);

  ck_assert_uint_eq(s->outputs_count, 2);
  ck_assert_str_eq(s->outputs[0].name, "result");
  ck_assert_str_eq(s->outputs[0].buffer, "y");
  ck_assert_str_eq(s->outputs[0].url, "http://h/upload/r");
  ck_assert_str_eq(s->outputs[0].method, "PUT");
  ck_assert_str_eq(s->outputs[1].name, "head");
  ck_assert_ptr_null(s->outputs[1].url);
  ck_assert_str_eq(s->outputs[1].method, "");
  ck_assert_uint_eq(s->outputs[1].offset, 0);
  ck_assert_uint_eq(s->outputs[1].size, 4096);

  ck_assert_str_eq(s->callback_url, "http://h/hook/j1");
  ck_assert_uint_eq(s->timeout_s, 600);
  ck_assert_uint_eq(s->retries, 3);
}

/* The spec as nanopb encodes it (what goes on the wire). */
static size_t encode(const rdev_v1_JobSpec *s, uint8_t *buf, size_t size) {
  pb_ostream_t os = pb_ostream_from_buffer(buf, size);
  ck_assert_msg(pb_encode(&os, rdev_v1_JobSpec_fields, s), "encode: %s", PB_GET_ERROR(&os));
  return os.bytes_written;
}

START_TEST(test_example) {
  rdev_v1_JobSpec *s = new_spec();
  char err[512];
  ck_assert_msg(parse(EXAMPLE, NULL, s, err, sizeof err) == 0, "%s", err);
  check_example(s);
  rdev_cli_job_free(s);
  ck_assert_ptr_null(s->callback_url);
  ck_assert_uint_eq(s->buffers_count, 0);
  free(s);
}
END_TEST

#define SHA64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A binary and a function step: the binary's fields, the step's typed
 * arguments in order. */
START_TEST(test_function_steps) {
  rdev_v1_JobSpec *s = new_spec();
  char err[512];
  static const char text[] =
      "buffers:\n  - {name: x, size: 4K}\n"
      "binaries:\n  - {name: kb, url: \"http://h/kb.bin\", sha256: \"" SHA64
      "\"}\n"
      "steps:\n  - {function: DeviceWrite, binary: kb, blocks: 4, stream: 2,"
      " args: [{buffer: x, offset: 64}, {i32: -7}, {f64: 0.5}]}\n";
  ck_assert_msg(parse(text, NULL, s, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(s->binaries_count, 1);
  ck_assert_str_eq(s->binaries[0].name, "kb");
  ck_assert_str_eq(s->binaries[0].url, "http://h/kb.bin");
  ck_assert_uint_eq(strlen(s->binaries[0].sha256), 64);
  ck_assert_uint_eq(s->steps_count, 1);
  const rdev_v1_JobStep *st = &s->steps[0];
  ck_assert_uint_eq(st->which_op, rdev_v1_JobStep_function_tag);
  ck_assert_uint_eq(st->stream, 2);
  ck_assert_str_eq(st->op.function.name, "DeviceWrite");
  ck_assert_str_eq(st->op.function.binary, "kb");
  ck_assert_uint_eq(st->op.function.blocks, 4);
  ck_assert_uint_eq(st->op.function.args_count, 3);
  ck_assert_uint_eq(st->op.function.args[0].which_v, rdev_v1_JobArg_ptr_tag);
  ck_assert_str_eq(st->op.function.args[0].v.ptr.buffer, "x");
  ck_assert_uint_eq(st->op.function.args[0].v.ptr.offset, 64);
  ck_assert_uint_eq(st->op.function.args[1].which_v, rdev_v1_JobArg_i32_tag);
  ck_assert_int_eq(st->op.function.args[1].v.i32, -7);
  ck_assert_uint_eq(st->op.function.args[2].which_v, rdev_v1_JobArg_f64_tag);
  ck_assert_double_eq(st->op.function.args[2].v.f64, 0.5);
  rdev_cli_job_free(s);
  free(s);
}
END_TEST

START_TEST(test_json) {
  rdev_v1_JobSpec *y = new_spec(), *j = new_spec();
  char err[512];
  ck_assert_msg(parse(EXAMPLE, NULL, y, err, sizeof err) == 0, "%s", err);
  ck_assert_msg(parse(EXAMPLE_JSON, NULL, j, err, sizeof err) == 0, "%s", err);
  check_example(j);
  static uint8_t a[65536], b[65536];
  size_t na = encode(y, a, sizeof a), nb = encode(j, b, sizeof b);
  ck_assert_uint_eq(na, nb);
  ck_assert(memcmp(a, b, na) == 0);
  rdev_cli_job_free(y);
  rdev_cli_job_free(j);
  free(y);
  free(j);
}
END_TEST

/* Kernel signatures from the server: a bare number is typed by them. */
static rdev_v1_InfoReply *kernels(void) {
  static rdev_v1_InfoReply info;
  memset(&info, 0, sizeof info);
  info.kernels_count = 2;
  rdev_v1_KernelInfo *k = &info.kernels[0];
  strcpy(k->name, "square_f32");
  k->params_count = 3;
  strcpy(k->params[0].name, "x");
  strcpy(k->params[0].type, "ptr");
  strcpy(k->params[1].name, "y");
  strcpy(k->params[1].type, "ptr");
  strcpy(k->params[2].name, "n");
  strcpy(k->params[2].type, "u64");
  k = &info.kernels[1];
  strcpy(k->name, "scale");
  k->params_count = 5;
  const char *types[] = {"ptr", "f32", "i32", "i64", "f64"};
  for (int i = 0; i < 5; i++) {
    snprintf(k->params[i].name, sizeof k->params[i].name, "p%d", i);
    strcpy(k->params[i].type, types[i]);
  }
  return &info;
}

#define BUFS "buffers: [{name: x, size: 1M}, {name: y, size: 1M}]\n"

START_TEST(test_bare_numbers) {
  rdev_v1_JobSpec *s = new_spec();
  char err[512];
  const char *spec = BUFS "steps:\n  - {launch: square_f32, blocks: 4, args: [x, y, 0x100]}\n";
  /* Without signatures: asks for them, with a message that says what to write. */
  ck_assert_int_eq(parse(spec, NULL, s, err, sizeof err), RDEV_CLI_JOB_NEED_KERNELS);
  ck_assert_msg(strstr(err, "line 3,") && strstr(err, "{u64: 0x100}"), "%s", err);
  ck_assert_uint_eq(s->steps_count, 0);
  /* With them. */
  ck_assert_msg(parse(spec, kernels(), s, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(s->steps[0].op.launch.args[2].which_v, rdev_v1_JobArg_u64_tag);
  ck_assert_uint_eq(s->steps[0].op.launch.args[2].v.u64, 256);
  rdev_cli_job_free(s);

  spec = BUFS "steps:\n  - {launch: scale, blocks: 1, args: [{buffer: x, offset: 8}, 1.5, -7, 5000000000, -2.5e3]}\n";
  ck_assert_msg(parse(spec, kernels(), s, err, sizeof err) == 0, "%s", err);
  const rdev_v1_JobArg *a = s->steps[0].op.launch.args;
  ck_assert_uint_eq(a[0].which_v, rdev_v1_JobArg_ptr_tag);
  ck_assert_uint_eq(a[0].v.ptr.offset, 8);
  ck_assert_uint_eq(a[1].which_v, rdev_v1_JobArg_f32_tag);
  ck_assert(a[1].v.f32 == 1.5f);
  ck_assert_uint_eq(a[2].which_v, rdev_v1_JobArg_i32_tag);
  ck_assert_int_eq(a[2].v.i32, -7);
  ck_assert_uint_eq(a[3].which_v, rdev_v1_JobArg_i64_tag);
  ck_assert_int_eq(a[3].v.i64, 5000000000ll);
  ck_assert_uint_eq(a[4].which_v, rdev_v1_JobArg_f64_tag);
  ck_assert(a[4].v.f64 == -2500.0);
  rdev_cli_job_free(s);

  /* Typed ones need no signature; every type. */
  spec = BUFS
      "steps:\n  - {launch: k, blocks: 1, args: [{i32: -2147483648}, {u32: 4294967295}, {i64: -9223372036854775808},"
      " {u64: 18446744073709551615}, {f32: 0.25}, {f64: 1e300}, \"7\"]}\n";
  ck_assert_int_eq(parse(spec, NULL, s, err, sizeof err), -1); /* "7" quoted: a buffer, and there is none */
  ck_assert_msg(strstr(err, "no buffer named \"7\""), "%s", err);
  spec = BUFS
      "steps:\n  - {launch: k, blocks: 1, args: [{i32: -2147483648}, {u32: 4294967295}, {i64: -9223372036854775808},"
      " {u64: 18446744073709551615}, {f32: 0.25}, {f64: 1e300}]}\n";
  ck_assert_msg(parse(spec, NULL, s, err, sizeof err) == 0, "%s", err);
  a = s->steps[0].op.launch.args;
  ck_assert_int_eq(a[0].v.i32, INT32_MIN);
  ck_assert_uint_eq(a[1].v.u32, UINT32_MAX);
  ck_assert_int_eq(a[2].v.i64, INT64_MIN);
  ck_assert_uint_eq(a[3].v.u64, UINT64_MAX);
  ck_assert(a[4].v.f32 == 0.25f);
  ck_assert(a[5].v.f64 == 1e300);
  rdev_cli_job_free(s);

  /* Signatures known: mismatches are errors. */
  struct {
    const char *args, *what;
  } bad[] = {
      {"[x, y]", "takes 3 arguments"},        {"[x, 5, 1]", "is a pointer"},
      {"[x, y, z]", "is u64, not a buffer"},  {"[x, y, {i32: 1}]", "is u64, not i32"},
      {"[x, y, -1]", "must not be negative"}, {"[x, y, 1.5]", "not an integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, BUFS "steps:\n  - {launch: square_f32, blocks: 1, args: %s}\n", bad[i].args);
    ck_assert_int_eq(parse(text, kernels(), s, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 3,") && strstr(err, bad[i].what), "%s: %s", bad[i].args, err);
  }
  /* A kernel the server does not list. */
  ck_assert_int_eq(parse(BUFS "steps: [{launch: other, blocks: 1, args: [5]}]\n", kernels(), s, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "not among the server's kernels"), "%s", err);
  ck_assert_int_eq(
      parse(BUFS "steps: [{launch: scale, blocks: 1, args: [x, 1e39, 1, 1, 1]}]\n", kernels(), s, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "out of range for f32"), "%s", err);
  free(s);
}
END_TEST

/* The size a one-buffer spec with "size: text" gets, or -1 with err. */
static int64_t size_of(const char *text, char *err, size_t errlen) {
  char spec[256];
  snprintf(spec, sizeof spec, "buffers:\n  - name: b\n    size: %s\n", text);
  rdev_v1_JobSpec *s = new_spec();
  int rc = parse(spec, NULL, s, err, errlen);
  int64_t v = rc ? -1 : (int64_t)s->buffers[0].size;
  if (!rc) rdev_cli_job_free(s);
  free(s);
  return v;
}

START_TEST(test_sizes) {
  char err[512];
  struct {
    const char *text;
    int64_t size;
  } ok[] = {
      {"1", 1},
      {"4096", 4096},
      {"0x1000", 4096},
      {"1K", 1024},
      {"1KiB", 1024},
      {"1KB", 1000},
      {"3M", 3 << 20},
      {"3MiB", 3 << 20},
      {"3MB", 3000000},
      {"2G", 2ll << 30},
      {"2GiB", 2ll << 30},
      {"2GB", 2000000000ll},
      {"1TiB", 1ll << 40},
      {"1TB", 1000000000000ll},
      {"512B", 512},
      {"256 MiB", 256 << 20},
      {"\"256MiB\"", 256 << 20},
      {"8589934591G", 8589934591ll << 30},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int64_t v = size_of(ok[i].text, err, sizeof err);
    ck_assert_msg(v == ok[i].size, "%s: got %lld (%s)", ok[i].text, (long long)v, err);
  }
  struct {
    const char *text, *what;
  } bad[] = {
      {"0", "more than 0"},
      {"-1", "negative"},
      {"-4K", "negative"},
      {"18446744073709551616", "too large"},
      {"99999999999999999999999", "too large"},
      {"17179869184G", "too large"},
      {"18446744073709551615KB", "too large"},
      {"1.5G", "unknown unit"},
      {"5XB", "unknown unit"},
      {"5kib", "unknown unit"},
      {"big", "not a size"},
      {"[1]", "must be a size, not a list"},
      {"{a: 1}", "must be a size, not a map"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(size_of(bad[i].text, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "line 3, column 11: buffers[0].size: ") && strstr(err, bad[i].what), "%s: %s",
                  bad[i].text, err);
  }
}
END_TEST

START_TEST(test_durations) {
  rdev_v1_JobSpec *s = new_spec();
  char err[512], text[64];
  struct {
    const char *text;
    long long secs;
  } cases[] = {
      {"600", 600},       {"\"30s\"", 30}, {"10m", 600}, {"2h", 7200},
      {"1d", 86400},      {"1h30m", 5400}, {"0", 0},     {"4294967295", 4294967295ll},
      {"4294967296", -1}, {"50000d", -1},  {"10x", -1},  {"10 m", -1},
      {"1h30", -1},       {"-5", -1},      {"m", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(text, sizeof text, "timeout: %s\n", cases[i].text);
    int rc = parse(text, NULL, s, err, sizeof err);
    if (cases[i].secs < 0) {
      ck_assert_msg(rc == -1 && strstr(err, "line 1, column 10: timeout: "), "%s: %d %s", cases[i].text, rc, err);
    } else {
      ck_assert_msg(rc == 0, "%s: %s", cases[i].text, err);
      ck_assert_uint_eq(s->timeout_s, (uint32_t)cases[i].secs);
      rdev_cli_job_free(s);
    }
  }
  free(s);
}
END_TEST

/* text fails with an error naming line and holding what. */
static void expect_error(const char *text, int line, const char *what) {
  rdev_v1_JobSpec *s = new_spec();
  char err[512], want[32];
  int rc = parse(text, NULL, s, err, sizeof err);
  ck_assert_msg(rc == -1, "accepted (rc %d): %s", rc, text);
  snprintf(want, sizeof want, "line %d, ", line);
  ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "wanted %s: %s\n--\n%s", want, err, text);
  ck_assert_msg(strstr(err, what), "wanted \"%s\": %s\n--\n%s", what, err, text);
  /* Empty after an error: nothing to release. */
  ck_assert_uint_eq(s->buffers_count, 0);
  ck_assert_uint_eq(s->inputs_count, 0);
  ck_assert_uint_eq(s->outputs_count, 0);
  ck_assert_ptr_null(s->callback_url);
  free(s);
}

/* A list key: of n copies of item. */
static char *many(const char *prefix, const char *key, const char *item, int n) {
  size_t cap = strlen(prefix) + strlen(key) + 8 + (size_t)n * (strlen(item) + 16);
  char *t = malloc(cap);
  ck_assert_ptr_nonnull(t);
  size_t k = (size_t)snprintf(t, cap, "%s%s:\n", prefix, key);
  for (int i = 0; i < n; i++) k += (size_t)snprintf(t + k, cap - k, item, i);
  return t;
}

START_TEST(test_errors) {
  /* Unknown keys, at every level. */
  expect_error("name: a\nnmae: b\n", 2, "unknown key \"nmae\"");
  expect_error(BUFS "inputs: [{buffer: x, url: \"http://h/\", sha: 1}]\n", 2, "unknown key \"sha\"");
  expect_error(BUFS "steps:\n  - {copy: {dst: x, src: y, size: 1}}\n", 3, "steps[0].copy: unknown key \"size\"");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, args: [{buffer: x, offest: 1}]}\n", 3, "unknown key");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, args: [{u16: 1}]}\n", 3, "unknown argument type \"u16\"");
  /* Wrong types. */
  expect_error("buffers: 5\n", 1, "buffers: must be a list");
  expect_error("buffers:\n  - x\n", 2, "buffers[0]: must be a map");
  expect_error("name: [a]\n", 1, "name: must be a string, not a list");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: many}\n", 3, "steps[0].blocks: \"many\" is not an integer");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 0}\n", 3, "at least 1");
  expect_error(BUFS "steps:\n  - {launch: {kernel: k}, blocks: 1}\n", 3, "launch names the kernel");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, args: x}\n", 3, "args: must be a list");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, args: [[x]]}\n", 3, "an argument is");
  expect_error(BUFS "retries: -1\n", 2, "negative");
  expect_error(BUFS "steps:\n  - {memset: {dst: x, value: 256}}\n", 3, "out of range (0 to 255)");
  expect_error(BUFS "steps:\n  - {copy: {dst: x, src: y}, stream: 8}\n", 3, "too large (at most 7)");
  expect_error("[1, 2]\n", 1, "must be a map");
  expect_error("just text\n", 1, "must be a map");
  expect_error("---\n", 2, "empty");
  expect_error("# nothing\n", 1, "empty");
  expect_error("", 1, "empty");
  expect_error("? [a]\n: b\n", 1, "a key must be a word");
  /* Missing fields. */
  expect_error("buffers:\n  - {size: 1}\n", 2, "buffers[0]: missing name");
  expect_error("buffers:\n  - {name: x}\n", 2, "missing size");
  expect_error("buffers:\n  - {name: x, size: }\n", 2, "missing size");
  expect_error(BUFS "inputs:\n  - {url: \"http://h/x\"}\n", 3, "inputs[0]: missing buffer");
  expect_error(BUFS "inputs:\n  - {buffer: x}\n", 3, "missing url");
  expect_error(BUFS "outputs:\n  - {buffer: x}\n", 3, "outputs[0]: missing name");
  expect_error(BUFS "outputs:\n  - {name: o}\n", 3, "missing buffer");
  expect_error(BUFS "steps:\n  - {launch: k}\n", 3, "missing blocks");
  expect_error(BUFS "steps:\n  - {copy: {dst: x}}\n", 3, "missing src");
  expect_error(BUFS "steps:\n  - {memset: {value: 1}}\n", 3, "missing dst");
  /* Duplicates. */
  expect_error("buffers:\n  - {name: x, size: 1}\n  - {name: y, size: 1}\n  - {name: x, size: 2}\n", 4,
               "duplicate buffer name \"x\" (first at line 2)");
  expect_error(BUFS "outputs:\n  - {name: o, buffer: x}\n  - {name: o, buffer: y}\n", 4, "duplicate output name");
  expect_error("name: a\nretries: 1\nname: b\n", 3, "duplicate key \"name\"");
  /* Names. */
  expect_error("buffers:\n  - {name: \"a b\", size: 1}\n", 2, "bad name \"a b\"");
  expect_error("buffers:\n  - {name: \"\", size: 1}\n", 2, "bad name");
  expect_error("buffers:\n  - {name: a/b, size: 1}\n", 2, "bad name");
  expect_error("buffers:\n  - {name: abcdefghijklmnopqrstuvwxyz012345, size: 1}\n", 2, "bad name");
  expect_error(BUFS "steps:\n  - {name: \"a\\tb\", copy: {dst: x, src: y}}\n", 3, "bad name");
  expect_error("name: \"a\\0b\"\n", 1, "control character");
  expect_error("name: 0123456789012345678901234567890123456789012345678901234567890123\n", 1, "too long: 64 bytes");
  /* Buffer references. */
  expect_error(BUFS "inputs:\n  - {buffer: z, url: \"http://h/\"}\n", 3, "no buffer named \"z\" (buffers: x, y)");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, args: [z]}\n", 3, "no buffer named \"z\"");
  expect_error("steps:\n  - {memset: {dst: q}}\n", 2, "(buffers: none)");
  expect_error(BUFS "steps:\n  - {copy: {dst: x, src: {buffer: y, offset: 2M}}}\n", 3, "past the end of buffer y");
  expect_error(BUFS "steps:\n  - {copy: {dst: x, src: y, count: 2M}}\n", 3, "runs past the end of buffer x");
  expect_error(BUFS "outputs:\n  - {name: o, buffer: x, offset: 1M, size: 1}\n", 3, "runs past the end");
  expect_error(BUFS "inputs:\n  - {buffer: x, url: \"http://h/\", max_bytes: 2M}\n", 3, "runs past the end");
  /* Steps: one op each. */
  expect_error(BUFS "steps:\n  - {name: s}\n", 3, "needs one of launch, function, copy or memset");
  /* Binaries and function steps. */
  expect_error(BUFS "binaries:\n  - {name: b}\n", 3, "missing url");
  expect_error(BUFS "binaries:\n  - {name: b, url: \"http://h/b\"}\n  - {name: b, url: \"http://h/c\"}\n", 4,
               "duplicate binary name");
  expect_error(BUFS "steps:\n  - {function: f, binary: nob, blocks: 1}\n", 3, "no binary \"nob\"");
  expect_error(BUFS
               "binaries:\n  - {name: b, url: \"http://h/b\"}\nsteps:\n  - {function: f, binary: b, blocks: 1, "
               "args: [x, 7]}\n",
               5, "written typed");
  expect_error(BUFS "steps:\n  - {copy: {dst: x, src: y}, binary: b}\n", 3, "binary belongs to a function step");
  expect_error(BUFS "binaries:\n  - {name: b, url: \"http://h/b\"}\nsteps:\n  - {function: f, binary: b}\n", 5,
               "missing blocks");
  expect_error(BUFS "steps:\n  - {copy: {dst: x, src: y}, memset: {dst: x}}\n", 3, "this one has copy and memset");
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, copy: {dst: x, src: y}}\n", 3, "launch and copy");
  expect_error(BUFS "steps:\n  - {memset: {dst: x}, blocks: 1}\n", 3, "blocks belongs to a launch or function step");
  /* URLs, sha256, methods. */
  expect_error(BUFS "inputs:\n  - {buffer: x, url: \"ftp://h/x\"}\n", 3, "not an http:// or https:// URL");
  expect_error(BUFS "inputs:\n  - {buffer: x, url: \"http://h/a b\"}\n", 3, "no spaces");
  expect_error(BUFS "inputs:\n  - {buffer: x, url: \"http://h/\", sha256: abc}\n", 3, "64 hex digits");
  expect_error(BUFS
               "inputs:\n  - {buffer: x, url: \"http://h/\", sha256: "
               "g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef}\n",
               3, "64 hex digits");
  expect_error(BUFS "outputs:\n  - {name: o, buffer: x, method: PUT}\n", 3, "method goes with a url");
  expect_error(BUFS "outputs:\n  - {name: o, buffer: x, url: \"http://h/\", method: GET}\n", 3, "PUT or POST");
  expect_error("callback_url: 5\n", 1, "callback_url: \"5\" is not an http");
  /* YAML itself. */
  expect_error("name: a\n  bad: indent\n", 2, "mapping values are not allowed");
  expect_error("buffers: [{name: x, size: 1}\n", 2, "");
  expect_error("name: &a x\nretries: *a\n", 2, "aliases");
  expect_error("name: a\n---\nname: b\n", 2, "second one");
  expect_error("name: \"a\x01\"\n", 1, "control characters are not allowed");
  expect_error("name: \xff\xfe\n", 1, "invalid");

  /* Too many items. */
  struct {
    const char *prefix, *key, *item;
    int max, line;
  } lists[] = {
      {"", "buffers", "  - {name: b%d, size: 1}\n", 16, 18},
      {BUFS, "inputs", "  - {buffer: x, url: \"http://h/%d\"}\n", 16, 19},
      {BUFS, "steps", "  - {memset: {dst: x, value: %d}}\n", 64, 67},
      {BUFS, "outputs", "  - {name: o%d, buffer: x}\n", 16, 19},
  };
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    char *ok = many(lists[i].prefix, lists[i].key, lists[i].item, lists[i].max);
    rdev_v1_JobSpec *s = new_spec();
    char err[512], what[64];
    ck_assert_msg(parse(ok, NULL, s, err, sizeof err) == 0, "%s: %s", lists[i].key, err);
    rdev_cli_job_free(s);
    free(s);
    free(ok);
    char *over = many(lists[i].prefix, lists[i].key, lists[i].item, lists[i].max + 1);
    snprintf(what, sizeof what, "%s: too many items: %d, at most %d", lists[i].key, lists[i].max + 1, lists[i].max);
    expect_error(over, lists[i].line, what);
    free(over);
  }
  expect_error(BUFS "steps:\n  - {launch: k, blocks: 1, args: [x, x, x, x, x, x, x, x, x]}\n", 3,
               "too many items: 9, at most 8");
  /* Deep nesting and a document too large. */
  char *deep = malloc(200001);
  ck_assert_ptr_nonnull(deep);
  memset(deep, '[', 200000);
  deep[200000] = '\0';
  expect_error(deep, 1, "nested too deeply");
  free(deep);
  rdev_v1_JobSpec *s = new_spec();
  char err[512];
  char *big = calloc(1, RDEV_CLI_JOB_MAX_TEXT + 2);
  ck_assert_ptr_nonnull(big);
  memset(big, ' ', RDEV_CLI_JOB_MAX_TEXT + 1);
  ck_assert_int_eq(rdev_cli_job_parse(big, RDEV_CLI_JOB_MAX_TEXT + 1, NULL, s, err, sizeof err), -1);
  ck_assert_msg(strstr(err, "too large"), "%s", err);
  free(big);
  /* No room for a message: still refused; NULL spec. */
  ck_assert_int_eq(rdev_cli_job_parse("x: 1", 4, NULL, s, NULL, 0), -1);
  ck_assert_int_eq(rdev_cli_job_parse("name: a", 7, NULL, NULL, err, sizeof err), -1);
  free(s);
}
END_TEST

START_TEST(test_defaults) {
  rdev_v1_JobSpec *s = new_spec();
  char err[512];
  const char *spec =
      "buffers:\n"
      "  - name: x\n"
      "    size: 16\n"
      "steps:\n"
      "  - launch: k\n"
      "    blocks: 1\n"
      "  - memset: {dst: {buffer: x, offset: 4}}\n"
      "  - copy: {dst: x, src: x}\n"
      "outputs:\n"
      "  - {name: o, buffer: x, url: \"HTTPS://h/o\", method: post}\n"
      "callback_url: ~\n"
      "name: null\n";
  ck_assert_msg(parse(spec, NULL, s, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(s->name, "");
  ck_assert_ptr_null(s->callback_url);
  ck_assert_uint_eq(s->timeout_s, 0);
  ck_assert_uint_eq(s->retries, 0);
  ck_assert_uint_eq(s->steps_count, 3);
  ck_assert_uint_eq(s->steps[0].op.launch.args_count, 0);
  ck_assert_uint_eq(s->steps[1].op.memset.dst.offset, 4);
  ck_assert_uint_eq(s->steps[1].op.memset.count, 0);
  ck_assert_uint_eq(s->steps[2].op.copy.count, 0);
  ck_assert_str_eq(s->outputs[0].method, "POST");
  ck_assert_str_eq(s->outputs[0].url, "HTTPS://h/o");
  rdev_cli_job_free(s);
  /* Any input, not NUL-terminated: only len bytes are read. */
  char *copy = malloc(sizeof EXAMPLE - 1);
  memcpy(copy, EXAMPLE, sizeof EXAMPLE - 1);
  ck_assert_msg(rdev_cli_job_parse(copy, sizeof EXAMPLE - 1, NULL, s, err, sizeof err) == 0, "%s", err);
  check_example(s);
  rdev_cli_job_free(s);
  free(copy);
  free(s);
}
END_TEST

/* Parses text[0..len) from a buffer of exactly that size (ASan sees any
 * read past it): a spec (released) or an error message, never a crash. */
static void parse_any(const char *text, size_t len, const rdev_v1_InfoReply *k) {
  char *buf = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(buf);
  memcpy(buf, text, len);
  static rdev_v1_JobSpec s;
  char err[256];
  int rc = rdev_cli_job_parse(buf, len, k, &s, err, sizeof err);
  if (rc == 0) {
    rdev_cli_job_free(&s);
  } else {
    ck_assert_msg(err[0], "no message for %.*s", (int)len, text);
    ck_assert_uint_eq(s.inputs_count, 0);
    ck_assert_ptr_null(s.callback_url);
  }
  free(buf);
}

START_TEST(test_truncations) {
  const char *docs[] = {EXAMPLE, EXAMPLE_JSON};
  for (int d = 0; d < 2; d++) {
    size_t n = strlen(docs[d]);
    for (size_t len = 0; len <= n; len++) {
      parse_any(docs[d], len, NULL);
      parse_any(docs[d], len, kernels());
      parse_any(docs[d] + n - len, len, NULL); /* every suffix too */
    }
  }
}
END_TEST

START_TEST(test_mutations) {
  static const char alphabet[] = "{}[]:,-#&*!|>'\"%@`?\n \t0123456789abcxyzMiB.\\\x00\xff\xc3";
  const char *docs[] = {EXAMPLE, EXAMPLE_JSON};
  uint64_t r = 0x9e3779b97f4a7c15ull;
  enum { MAX = (sizeof EXAMPLE > sizeof EXAMPLE_JSON ? sizeof EXAMPLE : sizeof EXAMPLE_JSON) + 32 };
  char *buf = malloc(MAX + 8);
  ck_assert_ptr_nonnull(buf);
  for (int iter = 0; iter < 20000; iter++) {
    const char *doc = docs[iter & 1];
    size_t n = strlen(doc);
    memcpy(buf, doc, n);
    int edits = 1 + (int)(r % 4);
    for (int e = 0; e < edits; e++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      size_t at = (size_t)(r >> 33) % n;
      char ch = alphabet[(r >> 13) % (sizeof alphabet - 1)];
      switch ((r >> 7) % 3) {
        case 0: buf[at] = ch; break;                                         /* replace */
        case 1: memmove(buf + at, buf + at + 1, n - at - 1), n--; break;     /* delete */
        default: memmove(buf + at + 1, buf + at, n - at), buf[at] = ch, n++; /* insert */
      }
      if (n < 2 || n >= MAX) break;
    }
    parse_any(buf, n, (iter & 2) ? kernels() : NULL);
  }
  free(buf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("job_yaml");
  TCase *tc = tcase_create("job_yaml");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_example);
  tcase_add_test(tc, test_json);
  tcase_add_test(tc, test_function_steps);
  tcase_add_test(tc, test_bare_numbers);
  tcase_add_test(tc, test_sizes);
  tcase_add_test(tc, test_durations);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_truncations);
  tcase_add_test(tc, test_mutations);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
