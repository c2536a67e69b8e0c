/*
 * tests/integration/fixture.h — what the integration tests share: a real
 * rdevd started per test (fork+exec, --listen 127.0.0.1:0, the bound address
 * read from its first stdout line) and stopped with SIGTERM, asserting a clean
 * exit 0; running the built programs (examples, the `rdev` tool) with their
 * output captured; random data, byte-for-byte checks, and status asserts that
 * print the library's detail.
 *
 * Check forks every test. gRPC must not be initialized before a fork, so no
 * fixture here touches the client library: sessions are opened inside tests
 * (rdev_session_open calls grpc_init), after the server was started.
 */
#ifndef RDEV_ITEST_FIXTURE_H
#define RDEV_ITEST_FIXTURE_H

#include <check.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "rdev/rdev.h"

#define FX_MiB ((size_t)1 << 20)
#define FX_SIM_MEM (64 * FX_MiB) /* --sim-mem of every fixture server */
#define FX_TEST_TIMEOUT 180      /* seconds, per test (a hang guard, not a bound) */

/* Built programs, from the command line (see main.c). */
extern const char *fx_rdevd_path;
extern const char *fx_d2h_path;
extern const char *fx_square_path;
extern const char *fx_rdev_path;

typedef struct {
  pid_t pid;  /* -1 once reaped */
  int out_fd; /* the server's stdout (an unlinked file), read from its start */
  int port;
  char target[128]; /* "127.0.0.1:PORT", or "unix:PATH" (--listen unix:PATH; port 0) */
  int reaped;       /* waitpid done; status holds the result */
  int status;
} fx_server_t;

/* Whether the servers run the acl backend over the ACL test double
 * ($RDEV_TEST_RDEVD_ARGS, tests/CMakeLists.txt), and what a kernel print
 * capture receives for sim_text there: "" (on acl kernel print goes to
 * rdevd's stdout, as CANN prints it, never to the client). */
int fx_on_acl(void);
const char *fx_printed(const char *sim_text);

/* The server of the running test (checked fixture fx_setup/fx_teardown). */
extern fx_server_t fx_srv;

/* Starts rdevd --listen 127.0.0.1:0 --sim-mem 64M --resume-ms 3000
 * --log-level warn (or
 * $RDEV_ITEST_LOG_LEVEL), then the
 * NULL-terminated extra arguments (later flags win). The server gets SIGKILL
 * if the test process dies. Returns 0, or -1 with a reason in err. */
int fx_server_start(fx_server_t *srv, const char *const *extra, char *err, size_t errlen);
/* Waits up to timeout_s for the server to exit; its wait status, or -1. */
int fx_server_wait(fx_server_t *srv, double timeout_s);
/* Sends sig and waits up to timeout_s; the wait status, or -1 (then SIGKILLed). */
int fx_server_signal_wait(fx_server_t *srv, int sig, double timeout_s);
/* Stops srv with SIGSTOP and returns once every one of its threads has
 * stopped (the kernel reports the group stop to us, its parent): 0, or -1
 * if that did not happen within timeout_s. SIGCONT resumes it. */
int fx_server_freeze(fx_server_t *srv, double timeout_s);
/* Starts rdevd with a tenants file of one tenant (admitted by a new token,
 * into token) with settings ("key = value" lines after its token line),
 * logging errors only (no audit lines), then the NULL-terminated extra
 * arguments (NULL: none; at most 11); asserts it started. */
void fx_tenant_server_start(fx_server_t *srv, char token[44], const char *settings, const char *const *extra);
/* SIGTERMs srv and asserts it drained and exited 0 within 30 s. */
void fx_server_stop(fx_server_t *srv);
/* "exit 0", "signal 9", ... */
const char *fx_describe_status(int status, char *buf, size_t len);

/* Checked fixture: a default server in fx_srv; teardown SIGTERMs it (unless the
 * test already reaped it) and asserts it exited 0 within 30 s. */
void fx_setup(void);
void fx_teardown(void);

/* Runs argv (argv[0] a path) with stdout and stderr captured; kills it after
 * timeout_s. out is NUL-terminated, caller frees. Returns the wait status or -1. */
int fx_run(const char *const argv[], double timeout_s, char **out, size_t *outlen);

/* Opens a session with the fixture server, asserting success; its kernel
 * print output is discarded (tests that check it set their own). */
rdev_session_t *fx_open(void);
rdev_session_t *fx_open_target(const char *target);

/* Polls rdev_mem_info until free == want or timeout_s passed; the last free. */
size_t fx_wait_free(rdev_session_t *s, size_t want, double timeout_s);
/* rdevd's reservation for a malloc of size: round up to 32, +32, round up to 64. */
size_t fx_reserved(size_t size);

double fx_now(void);
void fx_sleep_ms(int ms);
void fx_fill_random(void *buf, size_t n, uint64_t seed);
/* Index of the first differing byte, n when equal. */
size_t fx_first_diff(const void *a, const void *b, size_t n);
void *fx_xmalloc(size_t n);

/* Kernel print capture (rdev_session_set_print_fn). */
typedef struct {
  pthread_mutex_t mu;
  char text[16384];
  size_t len;
  int calls;
} fx_capture_t;
void fx_capture_init(fx_capture_t *c);
void fx_capture_fn(void *user, const char *text, size_t len);
/* Copy of the text so far (NUL-terminated) into buf. */
void fx_capture_get(fx_capture_t *c, char *buf, size_t len);

static inline rdev_arg_t fx_ptr(void *p) {
  rdev_arg_t a;
  __builtin_memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_PTR;
  a.v.ptr = p;
  return a;
}
static inline rdev_arg_t fx_i32(int32_t v) {
  rdev_arg_t a;
  __builtin_memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_I32;
  a.v.i32 = v;
  return a;
}
static inline rdev_arg_t fx_u32(uint32_t v) {
  rdev_arg_t a;
  __builtin_memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_U32;
  a.v.u32 = v;
  return a;
}
static inline rdev_arg_t fx_f32(float v) {
  rdev_arg_t a;
  __builtin_memset(&a, 0, sizeof a);
  a.type = RDEV_ARG_F32;
  a.v.f32 = v;
  return a;
}

/* Asserts that call returns want; on failure names both statuses and the
 * library's detail (rdev_session_last_error). */
#define FX_EXPECT(call, want) \
  do { \
    int fx_rc_ = (call); \
    int fx_want_ = (want); \
    ck_assert_msg(fx_rc_ == fx_want_, "%s returned %d %s, want %d %s (detail: %s)", #call, fx_rc_, \
                  rdev_status_name(fx_rc_), fx_want_, rdev_status_name(fx_want_), rdev_session_last_error()); \
  } while (0)
#define FX_OK(call) FX_EXPECT(call, RDEV_OK)

/* Asserts n bytes equal, naming the first difference. */
#define FX_ASSERT_BYTES(got, want, n, ...) \
  do { \
    const uint8_t *fx_g_ = (const uint8_t *)(got), *fx_w_ = (const uint8_t *)(want); \
    size_t fx_n_ = (n), fx_i_ = fx_first_diff(fx_g_, fx_w_, fx_n_); \
    if (fx_i_ != fx_n_) { \
      char fx_what_[256]; \
      snprintf(fx_what_, sizeof fx_what_, __VA_ARGS__); \
      ck_abort_msg("%s: byte %zu of %zu differs: got 0x%02x, want 0x%02x", fx_what_, fx_i_, fx_n_, fx_g_[fx_i_], \
                   fx_w_[fx_i_]); \
    } \
  } while (0)

/* The suites (one file each). */
Suite *suite_session(void);
Suite *suite_memory(void);
Suite *suite_stream(void);
Suite *suite_lifecycle(void);
Suite *suite_programs(void);
Suite *suite_hostfn(void);
Suite *suite_binary(void);
Suite *suite_bulk(void);
Suite *suite_deferred(void);
Suite *suite_resume(void);
Suite *suite_ops(void);
Suite *suite_acl_ops(void); /* test_ops_acl.c: operators on acl over the ACL test double */
Suite *suite_metrics(void); /* test_metrics.c: metrics, health during a drain */
Suite *suite_multi(void);   /* test_multi.c: one session over two servers (its own fixture) */

/* A TCase with the checked server fixture and the long timeout. */
TCase *fx_tcase(const char *name);

#endif
