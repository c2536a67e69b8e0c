/*
 * tests/integration/test_programs.c — the built programs against the
 * fixture's server: the two seed programs (client/examples) and the `rdev`
 * tool, run as child processes with their output captured.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

/* Runs argv, asserts exit 0; returns the output (caller frees). */
static char *run_ok(const char *const argv[]) {
  char *out = NULL;
  int st = fx_run(argv, 60, &out, NULL);
  char buf[64];
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s ended with %s; output:\n%s", argv[0],
                fx_describe_status(st, buf, sizeof buf), out ? out : "");
  return out;
}

START_TEST(test_example_d2h_async) {
  const char *argv[] = {fx_d2h_path, fx_srv.target, NULL};
  char *out = run_ok(argv);
  if (!fx_on_acl()) /* acl: the print is on rdevd's stdout */
    ck_assert_msg(strstr(out, "Source data: 123") != NULL, "no kernel print in:\n%s", out);
  ck_assert_msg(strstr(out, "Destination data: 123") != NULL, "no destination data in:\n%s", out);
  ck_assert_msg(strstr(out, "[SUCCESS]") != NULL, "no success line in:\n%s", out);
  free(out);
}
END_TEST

START_TEST(test_example_square) {
  const char *argv[] = {fx_square_path, fx_srv.target, NULL};
  char *out = run_ok(argv);
  ck_assert_msg(strstr(out, "[SUCCESS] 1024 floats squared on the device match the host.") != NULL,
                "no success line in:\n%s", out);
  free(out);
}
END_TEST

START_TEST(test_cli_roundtrip) {
  char path[] = "/tmp/rdev-itest-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const size_t n = 3 * FX_MiB;
  uint8_t *data = fx_xmalloc(n);
  fx_fill_random(data, n, 4242);
  ssize_t w = write(fd, data, n);
  close(fd);
  free(data);
  if (w != (ssize_t)n) {
    unlink(path);
    ck_abort_msg("cannot write %s", path);
  }
  const char *argv[] = {fx_rdev_path, "--target", fx_srv.target, "roundtrip", path, NULL};
  char *out = NULL;
  int st = fx_run(argv, 60, &out, NULL);
  unlink(path);
  char buf[64];
  ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "rdev roundtrip ended with %s; output:\n%s",
                fx_describe_status(st, buf, sizeof buf), out);
  ck_assert_msg(strstr(out, "3145728 bytes") != NULL && strstr(out, "\nOK\n") != NULL, "unexpected output:\n%s", out);
  free(out);
}
END_TEST

START_TEST(test_cli_devices) {
  const char *argv[] = {fx_rdev_path, "--target", fx_srv.target, "devices", NULL};
  char *out = run_ok(argv);
  /* a header, then one line per device: index, name, total MiB, free MiB */
  int lines = 0, devices = 0;
  for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    lines++;
    int idx = -1;
    char name[64];
    double total = 0, fr = 0;
    if (sscanf(line, "%d %63s %lf %lf", &idx, name, &total, &fr) == 4) {
      ck_assert_int_eq(idx, devices);
      ck_assert_msg(total == 64.0 && fr == 64.0, "device %d: %.1f MiB total, %.1f free", idx, total, fr);
      devices++;
    }
  }
  ck_assert_int_eq(devices, 2);
  ck_assert_int_eq(lines, 3);
  free(out);
}
END_TEST

Suite *suite_programs(void) {
  Suite *su = suite_create("programs");
  TCase *tc = fx_tcase("examples");
  tcase_add_test(tc, test_example_d2h_async);
  tcase_add_test(tc, test_example_square);
  suite_add_tcase(su, tc);
  tc = fx_tcase("cli");
  tcase_add_test(tc, test_cli_roundtrip);
  tcase_add_test(tc, test_cli_devices);
  suite_add_tcase(su, tc);
  return su;
}
