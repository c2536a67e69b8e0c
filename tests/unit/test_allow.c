/*
 * tests/unit/test_allow.c — server/jobs/allow.c: which URLs a tenant's allow
 * list admits (parsed parts, not strings: case, default ports, dot
 * segments, encoded traversal, user info, path boundaries) and which
 * connected addresses a transfer may use (loopback, private and the other
 * non-public ranges, in IPv4, IPv6 and mapped forms, unless a prefix names
 * the address).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/allow.h"

static srv_allow_t *list_of(const char *const *prefixes) {
  srv_allow_t *l = NULL;
  char why[256];
  for (; *prefixes; prefixes++) ck_assert_msg(srv_allow_add(&l, *prefixes, why, sizeof why) == 0, "%s", why);
  return l;
}

static int url_ok(const srv_allow_t *l, const char *url) {
  char why[256] = "";
  int ok = srv_allow_url(l, url, why, sizeof why);
  ck_assert_msg(ok || why[0], "refused %s without a reason", url);
  return ok;
}

START_TEST(test_url_parts) {
  srv_allow_t *l = list_of((const char *const[]){"https://Data.Example.org/in/", "http://10.1.2.3:8080/out", NULL});
  ck_assert(url_ok(l, "https://data.example.org/in/x.bin"));
  ck_assert(url_ok(l, "HTTPS://DATA.example.ORG:443/in/a/b"));     /* case, the default port */
  ck_assert(url_ok(l, "https://data.example.org/in/a/../b?x=1"));  /* dot segments resolved, a query */
  ck_assert(!url_ok(l, "https://data.example.org/in/../secret"));  /* climbs out */
  ck_assert(!url_ok(l, "https://data.example.org/inside"));        /* prefix "/in/" ends in '/' */
  ck_assert(!url_ok(l, "http://data.example.org/in/x"));           /* scheme */
  ck_assert(!url_ok(l, "https://data.example.org:8443/in/x"));     /* port */
  ck_assert(!url_ok(l, "https://data.example.org.evil.net/in/x")); /* host, not a string prefix */
  ck_assert(!url_ok(l, "https://evil.net/https://data.example.org/in/x"));
  ck_assert(!url_ok(l, "https://data.example.org@evil.net/in/x")); /* user info: another host */
  ck_assert(!url_ok(l, "https://user:pw@data.example.org/in/x"));  /* user info at all */
  ck_assert(url_ok(l, "http://10.1.2.3:8080/out"));
  ck_assert(url_ok(l, "http://10.1.2.3:8080/out/part-1"));
  ck_assert(!url_ok(l, "http://10.1.2.3:8080/outside")); /* '/' boundary */
  ck_assert(!url_ok(l, "http://10.1.2.3/out"));          /* port 80 */
  ck_assert(!url_ok(l, "ftp://10.1.2.3:8080/out"));
  ck_assert(!url_ok(l, "file:///etc/passwd"));
  ck_assert(!url_ok(l, "not a url"));
  ck_assert(!url_ok(l, ""));
  ck_assert(!url_ok(NULL, "https://data.example.org/in/x")); /* the empty list admits nothing */
  srv_allow_free(l);
}
END_TEST

START_TEST(test_encoded_traversal) {
  srv_allow_t *l = list_of((const char *const[]){"https://h.example/in/", NULL});
  ck_assert(url_ok(l, "https://h.example/in/a%20b"));
  ck_assert(!url_ok(l, "https://h.example/in/%2e%2e/secret"));
  ck_assert(!url_ok(l, "https://h.example/in/%2E%2E%2Fsecret"));
  ck_assert(!url_ok(l, "https://h.example/in/..%2fsecret"));
  ck_assert(!url_ok(l, "https://h.example/in/a%5c..%5csecret")); /* backslashes */
  ck_assert(!url_ok(l, "https://h.example/in/a%00b"));           /* NUL */
  ck_assert(url_ok(l, "https://h.example/%69n/x"));              /* compared decoded: "/in/x" */
  srv_allow_free(l);
}
END_TEST

START_TEST(test_bad_prefixes) {
  srv_allow_t *l = NULL;
  char why[256];
  const char *bad[] = {"ftp://h/x", "https://u:p@h/x", "https://h/x?q=1", "https://h/x#f", "nonsense", "", NULL};
  for (int i = 0; bad[i]; i++) {
    why[0] = 0;
    ck_assert_int_eq(srv_allow_add(&l, bad[i], why, sizeof why), -1);
    ck_assert_msg(strstr(why, "allow prefix"), "no reason for %s: %s", bad[i], why);
  }
  ck_assert_int_eq(srv_allow_add(&l, NULL, why, sizeof why), -1);
  ck_assert_ptr_null(l);
}
END_TEST

static int addr_ok(const srv_allow_t *l, const char *ip) {
  char why[256] = "";
  int ok = srv_allow_addr(l, ip, why, sizeof why);
  ck_assert_msg(ok || why[0], "refused %s without a reason", ip);
  return ok;
}

START_TEST(test_addresses) {
  const char *forbidden[] = {"127.0.0.1",
                             "127.9.9.9",
                             "10.0.0.1",
                             "172.16.0.1",
                             "172.31.255.255",
                             "192.168.1.1",
                             "169.254.169.254",
                             "100.64.0.1",
                             "0.0.0.0",
                             "224.0.0.1",
                             "255.255.255.255",
                             "::1",
                             "::",
                             "fe80::1",
                             "fc00::1",
                             "fd12:3456::1",
                             "ff02::1",
                             "::ffff:127.0.0.1",
                             "::ffff:10.0.0.1",
                             "64:ff9b::7f00:1",
                             "::7f00:1",
                             "[::1]",
                             NULL};
  for (int i = 0; forbidden[i]; i++) ck_assert_msg(!addr_ok(NULL, forbidden[i]), "%s allowed", forbidden[i]);
  const char *public[] = {"93.184.216.34",   "8.8.8.8",        "172.32.0.1",        "192.169.0.1",
                          "2606:4700::1111", "::ffff:8.8.8.8", "[2606:4700::1111]", NULL};
  for (int i = 0; public[i]; i++) ck_assert_msg(addr_ok(NULL, public[i]), "%s refused", public[i]);
  ck_assert(!addr_ok(NULL, "not-an-ip"));
  ck_assert(!addr_ok(NULL, "localhost"));
  ck_assert(!addr_ok(NULL, NULL));
}
END_TEST

START_TEST(test_named_addresses) {
  /* An operator who lists an address itself allows connecting to it; a
   * name never does, so a name that resolves to loopback stays refused. */
  srv_allow_t *l =
      list_of((const char *const[]){"http://127.0.0.1:8080/", "http://[::1]:9000/x", "http://localhost:7000/", NULL});
  ck_assert(addr_ok(l, "127.0.0.1"));
  ck_assert(addr_ok(l, "::ffff:127.0.0.1")); /* the same address, mapped */
  ck_assert(addr_ok(l, "::1"));
  ck_assert(!addr_ok(l, "127.0.0.2"));
  ck_assert(!addr_ok(l, "10.0.0.1"));
  srv_allow_free(l);
}
END_TEST

int main(void) {
  Suite *s = suite_create("allow");
  TCase *tc = tcase_create("allow");
  tcase_add_test(tc, test_url_parts);
  tcase_add_test(tc, test_encoded_traversal);
  tcase_add_test(tc, test_bad_prefixes);
  tcase_add_test(tc, test_addresses);
  tcase_add_test(tc, test_named_addresses);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
