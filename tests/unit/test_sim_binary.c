/*
 * tests/unit/test_sim_binary.c — Check unit tests of the sim binary
 * format's reader (proto/sim_binary.c, rdev/sim_binary.h), which the
 * runtime's loader and the ACL library share: lines as words (blank and
 * comment lines skipped, a last line without newline, the line and word
 * limits, a NUL, going on after a bad line, ASCII white space), the header, entry=N (decimal and hex, no sign, no
 * overflow), and what a binary declares by name and by entry (an entry's
 * default is its kernel's index), with -1 for anything that does not
 * read as a sim binary. The runtime's own checks of the same binaries
 * (the registry, layouts) are test_runtime_binary's.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdev/sim_binary.h"

static int declares(const char *text, const char *name, uint64_t entry) {
  return rdev_sim_binary_declares(text, strlen(text), name, entry);
}

START_TEST(test_reader_gives_words_and_skips_blank_and_comment_lines) {
  const char text[] = "rdev-sim-binary 1\n\n   # a comment\n kernel A  inc_u32\tentry=3 # why\n  noargs";
  rdev_sim_binary_reader_t r;
  rdev_sim_binary_reader_init(&r, text, strlen(text));
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert(rdev_sim_binary_is_header(&r));
  ck_assert_int_eq(r.lineno, 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_int_eq(r.lineno, 4);
  ck_assert_int_eq(r.nw, 4);
  ck_assert_str_eq(r.w[0], "kernel");
  ck_assert_str_eq(r.w[1], "A");
  ck_assert_str_eq(r.w[2], "inc_u32");
  ck_assert_str_eq(r.w[3], "entry=3");
  ck_assert(!rdev_sim_binary_is_header(&r));
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS); /* the last line, no newline */
  ck_assert_int_eq(r.lineno, 5);
  ck_assert_int_eq(r.nw, 1);
  ck_assert_str_eq(r.w[0], "noargs");
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_END);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_END);
  rdev_sim_binary_reader_init(&r, "", 0);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_END);
}
END_TEST

START_TEST(test_reader_limits_lines_and_words) {
  char text[2 * RDEV_SIM_BINARY_MAX_LINE];
  rdev_sim_binary_reader_t r;
  /* a line of exactly the limit reads; one byte more does not */
  memset(text, 'x', RDEV_SIM_BINARY_MAX_LINE);
  text[RDEV_SIM_BINARY_MAX_LINE] = '\n';
  rdev_sim_binary_reader_init(&r, text, RDEV_SIM_BINARY_MAX_LINE + 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_uint_eq(strlen(r.w[0]), RDEV_SIM_BINARY_MAX_LINE);
  memset(text, 'x', RDEV_SIM_BINARY_MAX_LINE + 1);
  rdev_sim_binary_reader_init(&r, text, RDEV_SIM_BINARY_MAX_LINE + 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_NOT_TEXT);
  ck_assert_int_eq(r.lineno, 1);
  /* a NUL inside a line */
  const char nul[] = "rdev-sim-binary 1\nkernel A\0B inc_u32\n";
  rdev_sim_binary_reader_init(&r, nul, sizeof nul - 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_NOT_TEXT);
  ck_assert_int_eq(r.lineno, 2);
  /* seven words read, eight do not */
  const char seven[] = "a b c d e f g\na b c d e f g h\n";
  rdev_sim_binary_reader_init(&r, seven, sizeof seven - 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_int_eq(r.nw, RDEV_SIM_BINARY_MAX_WORDS);
  ck_assert_str_eq(r.w[6], "g");
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_TOO_MANY);
  ck_assert_int_eq(r.lineno, 2);
  ck_assert_int_eq(r.nw, 0);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_END);
  /* after an error the reader goes on with the next line */
  const char after[] = "a\0\nb c d e f g h i\nlast";
  rdev_sim_binary_reader_init(&r, after, sizeof after - 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_NOT_TEXT);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_TOO_MANY);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_int_eq(r.lineno, 3);
  ck_assert_str_eq(r.w[0], "last");
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_END);
  /* a last line of exactly the limit, without newline */
  memset(text, 'y', RDEV_SIM_BINARY_MAX_LINE);
  rdev_sim_binary_reader_init(&r, text, RDEV_SIM_BINARY_MAX_LINE);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_uint_eq(strlen(r.w[0]), RDEV_SIM_BINARY_MAX_LINE);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_END);
  /* white space is ASCII's: a byte above 127 is part of a word */
  const char nbsp[] =
      "a\xa0"
      "b\vc\rd";
  rdev_sim_binary_reader_init(&r, nbsp, sizeof nbsp - 1);
  ck_assert_int_eq(rdev_sim_binary_next(&r), RDEV_SIM_BINARY_WORDS);
  ck_assert_int_eq(r.nw, 3);
  ck_assert_str_eq(r.w[0],
                   "a\xa0"
                   "b");
}
END_TEST

START_TEST(test_entry_is_decimal_or_hex_without_sign_or_overflow) {
  uint64_t e = 7;
  ck_assert_int_eq(rdev_sim_binary_entry("entry=0", &e), 0);
  ck_assert_uint_eq(e, 0);
  ck_assert_int_eq(rdev_sim_binary_entry("entry=18446744073709551615", &e), 0);
  ck_assert_uint_eq(e, UINT64_MAX);
  ck_assert_int_eq(rdev_sim_binary_entry("entry=0x100", &e), 0);
  ck_assert_uint_eq(e, 0x100);
  ck_assert_int_eq(rdev_sim_binary_entry("entry=0XfFfFfFfFfFfFfFfF", &e), 0);
  ck_assert_uint_eq(e, UINT64_MAX);
  e = 7;
  const char *bad[] = {"entry=",
                       "entry=0x",
                       "entry=-1",
                       "entry=+1",
                       "entry= 1",
                       "entry=1a",
                       "entry=0x1g",
                       "entry=0x0x1",
                       "entr=1",
                       "entry=18446744073709551616",
                       "entry=0x10000000000000000",
                       "Entry=1",
                       "entry=1 "};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(rdev_sim_binary_entry(bad[i], &e) == -1, "'%s' read as an entry", bad[i]);
    ck_assert_uint_eq(e, 7); /* untouched */
  }
}
END_TEST

static const char kBinary[] =
    "rdev-sim-binary 1\n"
    "# kernels by index and by entry\n"
    "kernel First inc_u32\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "kernel Second write_i32 entry=0x20\n"
    "  arg ptr x reach=blocks*4 writes\n"
    "  arg i32 v\n"
    "kernel Third hello\n"
    "  noargs\n";

START_TEST(test_declares_by_name_and_by_entry) {
  ck_assert_int_eq(declares(kBinary, "First", 0), 1);
  ck_assert_int_eq(declares(kBinary, "Second", 0), 1);
  ck_assert_int_eq(declares(kBinary, "Third", 99), 1);
  ck_assert_int_eq(declares(kBinary, "Fourth", 0), 0);
  ck_assert_int_eq(declares(kBinary, "inc_u32", 0), 0); /* the sim kernel is not the binary's name */
  ck_assert_int_eq(declares(kBinary, NULL, 0), 1);      /* First: index 0 */
  ck_assert_int_eq(declares(kBinary, NULL, 0x20), 1);   /* Second */
  ck_assert_int_eq(declares(kBinary, NULL, 2), 1);      /* Third: index 2 */
  ck_assert_int_eq(declares(kBinary, NULL, 1), 0);      /* Second's index: it has an entry of its own */
  ck_assert_int_eq(declares(kBinary, NULL, 3), 0);
  /* only the text it is given */
  ck_assert_int_eq(rdev_sim_binary_declares(kBinary, strstr(kBinary, "kernel Third") - kBinary, "Third", 0), 0);
}
END_TEST

START_TEST(test_declares_nothing_of_what_does_not_read_as_a_sim_binary) {
  const char *bad[] = {
      "",                   /* empty */
      "# only a comment\n", /* no header */
      "\x7f"
      "ELF\x02\x01\x01",                                            /* another format */
      "rdev-sim-binary 2\nkernel First inc_u32\n",                  /* another version */
      "kernel First inc_u32\nrdev-sim-binary 1\n",                  /* header not first */
      "rdev-sim-binary 1\nkernel First\n",                          /* no sim kernel */
      "rdev-sim-binary 1\nkernel First inc_u32 entry=1 x\n",        /* a word too many */
      "rdev-sim-binary 1\nkernel First inc_u32 entry=-1\n",         /* a bad entry */
      "rdev-sim-binary 1\nkernel First inc_u32 1\n",                /* not entry=N */
      "rdev-sim-binary 1\nkernel First inc_u32\na b c d e f g h\n", /* a later line of too many words */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(declares(bad[i], "First", 0) == -1, "binary %zu read by name", i);
    ck_assert_msg(declares(bad[i], NULL, 0) == -1, "binary %zu read by entry", i);
  }
  char longline[RDEV_SIM_BINARY_MAX_LINE + 64] = "rdev-sim-binary 1\nkernel First inc_u32\n# ";
  size_t n = strlen(longline);
  memset(longline + n, 'x', sizeof longline - n - 1);
  longline[sizeof longline - 1] = '\0';
  ck_assert_int_eq(declares(longline, "First", 0), -1); /* a comment line over the limit too */
}
END_TEST

int main(void) {
  Suite *s = suite_create("sim_binary");
  TCase *tc = tcase_create("sim_binary");
  tcase_add_test(tc, test_reader_gives_words_and_skips_blank_and_comment_lines);
  tcase_add_test(tc, test_reader_limits_lines_and_words);
  tcase_add_test(tc, test_entry_is_decimal_or_hex_without_sign_or_overflow);
  tcase_add_test(tc, test_declares_by_name_and_by_entry);
  tcase_add_test(tc, test_declares_nothing_of_what_does_not_read_as_a_sim_binary);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
