/*
 * tests/integration/main.c — the integration test runner: every suite against
 * real rdevd processes on loopback (one per test, see fixture.h).
 *
 *   test_integration RDEVD D2H_ASYNC SQUARE RDEV
 *
 * CK_RUN_SUITE / CK_RUN_CASE select suites and cases (Check's own variables);
 * ctest registers one entry per suite that way.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s RDEVD D2H_ASYNC SQUARE RDEV\n", argv[0]);
    return 2;
  }
  fx_rdevd_path = argv[1];
  fx_d2h_path = argv[2];
  fx_square_path = argv[3];
  fx_rdev_path = argv[4];
  /* The tests and the programs they run say where and how to connect. */
  static const char *const env[] = {"RDEV_TARGET", "RDEV_TOKEN", "RDEV_CA", "RDEV_CERT", "RDEV_KEY"};
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) unsetenv(env[i]);

  SRunner *sr = srunner_create(suite_session());
  srunner_add_suite(sr, suite_memory());
  srunner_add_suite(sr, suite_stream());
  srunner_add_suite(sr, suite_lifecycle());
  srunner_add_suite(sr, suite_programs());
  srunner_add_suite(sr, suite_hostfn());
  srunner_add_suite(sr, suite_binary());
  srunner_add_suite(sr, suite_bulk());
  srunner_add_suite(sr, suite_deferred());
  srunner_add_suite(sr, suite_resume());
  srunner_add_suite(sr, suite_ops());
  srunner_add_suite(sr, suite_acl_ops());
  srunner_add_suite(sr, suite_metrics());
  srunner_add_suite(sr, suite_multi());
  srunner_run_all(sr, CK_ENV); /* CK_VERBOSITY, default normal */
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
