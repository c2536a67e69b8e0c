/*
 * tests/unit/test_handles.c — Check unit tests of a session's handle table
 * (server/handles.c, srv_handles_* in server/srv.h): random, non-zero,
 * unique handles; lookup by handle and type; deletion (of live, deleted and
 * unknown handles), and that a deleted handle is never handed out again;
 * growth past the initial capacity and churn that leaves tombstones; the
 * walk over live entries with and without a type filter; freeing.
 *
 * The program links with --wrap=getrandom (tests/unit/CMakeLists.txt): the
 * table's random source then goes through __wrap_getrandom below, which
 * passes through to the real one unless a test scripted the next draws, so
 * the rare cases (a draw of 0, of the tombstone marker 1, of a live or a
 * deleted handle, a failing source) are tested deterministically.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>

#include "srv.h"

/* ---- a scriptable random source -------------------------------------------- */

#define SCRIPT_MAX 64
static struct {
  uint64_t v;
  int fail;
} script[SCRIPT_MAX];
static int script_n, script_pos, draws;

ssize_t __real_getrandom(void *buf, size_t len, unsigned int flags);
ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags);

ssize_t __wrap_getrandom(void *buf, size_t len, unsigned int flags) {
  draws++;
  if (script_pos < script_n) {
    int i = script_pos++;
    if (script[i].fail) return -1;
    ck_assert_uint_eq(len, sizeof script[i].v);
    memcpy(buf, &script[i].v, sizeof script[i].v);
    return (ssize_t)len;
  }
  return __real_getrandom(buf, len, flags);
}

/* The next n draws are vals[0..n); draws after them are real again. */
static void script_values(const uint64_t *vals, int n) {
  ck_assert_int_le(n, SCRIPT_MAX);
  memset(script, 0, sizeof script);
  for (int i = 0; i < n; i++) script[i].v = vals[i];
  script_n = n;
  script_pos = 0;
  draws = 0;
}

static void script_failure(void) {
  memset(script, 0, sizeof script);
  script[0].fail = 1;
  script_n = 1;
  script_pos = 0;
  draws = 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static void *fake_ptr(size_t i) { return (void *)(uintptr_t)(0x10000 + i * 64); }

static uint64_t add_ok(srv_handles_t *t, int type, int dev, void *ptr, size_t size) {
  size_t live = t->live;
  uint64_t h = srv_handles_add(t, type, dev, ptr, size, NULL);
  ck_assert_uint_ne(h, 0);
  ck_assert_uint_ne(h, 1); /* the tombstone marker is never a handle */
  ck_assert_uint_eq(t->live, live + 1);
  return h;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* srv_handles_each's visitor: records every entry it is shown. */
typedef struct {
  int calls;
  uint64_t seen[256];
  int types[256];
  void *arg_seen;
} walk_t;

static void visit(srv_handle_t *e, void *arg) {
  walk_t *w = arg;
  ck_assert_int_lt(w->calls, 256);
  w->seen[w->calls] = e->h;
  w->types[w->calls] = e->type;
  w->arg_seen = arg;
  w->calls++;
}

static int walk_has(const walk_t *w, uint64_t h) {
  int n = 0;
  for (int i = 0; i < w->calls; i++) n += w->seen[i] == h;
  return n;
}

/* ---- adding ------------------------------------------------------------------- */

START_TEST(test_add_gives_nonzero_unique_handles_that_find_their_entries) {
  enum { N = 4096 };
  srv_handles_t t = {0};
  uint64_t *hs = malloc(N * sizeof *hs), *sorted = malloc(N * sizeof *sorted);
  ck_assert_ptr_nonnull(hs);
  ck_assert_ptr_nonnull(sorted);
  for (int i = 0; i < N; i++) hs[i] = add_ok(&t, SRV_H_BUF + i % 3, i % 5, fake_ptr((size_t)i), (size_t)i * 7);
  memcpy(sorted, hs, N * sizeof *hs);
  qsort(sorted, N, sizeof *sorted, cmp_u64);
  for (int i = 1; i < N; i++) ck_assert_uint_ne(sorted[i - 1], sorted[i]);
  for (int i = 0; i < N; i++) {
    srv_handle_t *e = srv_handles_get(&t, hs[i], SRV_H_BUF + i % 3);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(e->h, hs[i]);
    ck_assert_int_eq(e->type, SRV_H_BUF + i % 3);
    ck_assert_int_eq(e->dev, i % 5);
    ck_assert_ptr_eq(e->ptr, fake_ptr((size_t)i));
    ck_assert_uint_eq(e->size, (size_t)i * 7);
    ck_assert_ptr_null(e->ext);
  }
  ck_assert_uint_eq(t.live, N);
  free(hs);
  free(sorted);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_handles_are_spread_over_63_bits) {
  /* random, not a counter: over 256 handles every bit but the top one is
   * seen both set and clear; the top one, the client's (RDEV_WIRE_CLIENT_HANDLE), never */
  srv_handles_t t = {0};
  uint64_t any = 0, all = ~0ULL;
  for (int i = 0; i < 256; i++) {
    uint64_t h = add_ok(&t, SRV_H_STREAM, 0, fake_ptr((size_t)i), 0);
    any |= h;
    all &= h;
  }
  ck_assert_uint_eq(any, ~RDEV_WIRE_CLIENT_HANDLE);
  ck_assert_uint_eq(all, 0);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_client_handles_go_in_and_out) {
  /* a client's handle is entered as it is, found by its type only, and
   * refused when taken */
  srv_handles_t t = {0};
  uint64_t h = RDEV_WIRE_CLIENT_HANDLE | 1;
  for (int i = 0; i < 100; i++) add_ok(&t, SRV_H_STREAM, 0, fake_ptr((size_t)i), 0);
  ck_assert_int_eq(srv_handles_put(&t, h, SRV_H_EVENT, 1, fake_ptr(7), 0, NULL), 0);
  ck_assert_int_eq(srv_handles_put(&t, h, SRV_H_STREAM, 1, fake_ptr(8), 0, NULL), -1);
  ck_assert_ptr_null(srv_handles_get(&t, h, SRV_H_STREAM));
  srv_handle_t *e = srv_handles_get(&t, h, SRV_H_EVENT);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_eq(e->ptr, fake_ptr(7));
  ck_assert_int_eq(srv_handles_del(&t, h), 0);
  ck_assert_ptr_null(srv_handles_get(&t, h, SRV_H_EVENT));
  ck_assert_int_eq(srv_handles_put(&t, h, SRV_H_STREAM, 1, fake_ptr(9), 0, NULL), 0);
  ck_assert_ptr_nonnull(srv_handles_get(&t, h, SRV_H_STREAM));
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_add_draws_again_instead_of_zero_or_the_tombstone_marker) {
  srv_handles_t t = {0};
  const uint64_t x = 0x0123456789abcdefULL;
  uint64_t vals[3] = {0, 1, x};
  script_values(vals, 3);
  ck_assert_uint_eq(srv_handles_add(&t, SRV_H_BUF, 0, fake_ptr(1), 10, NULL), x);
  ck_assert_int_eq(draws, 3);
  ck_assert_ptr_nonnull(srv_handles_get(&t, x, SRV_H_BUF));
  ck_assert_ptr_null(srv_handles_get(&t, 0, SRV_H_BUF));
  ck_assert_ptr_null(srv_handles_get(&t, 1, SRV_H_BUF));
  ck_assert_uint_eq(t.live, 1);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_add_draws_again_when_the_handle_is_live) {
  srv_handles_t t = {0};
  const uint64_t x = 0x1111222233334444ULL, y = 0x5555666677778888ULL;
  uint64_t vals[3] = {x, x, y};
  script_values(vals, 3);
  ck_assert_uint_eq(srv_handles_add(&t, SRV_H_BUF, 0, fake_ptr(1), 10, NULL), x);
  ck_assert_uint_eq(srv_handles_add(&t, SRV_H_EVENT, 1, fake_ptr(2), 0, NULL), y);
  ck_assert_int_eq(draws, 3);
  srv_handle_t *e = srv_handles_get(&t, x, SRV_H_BUF);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_eq(e->ptr, fake_ptr(1)); /* the first entry was not overwritten */
  ck_assert_ptr_nonnull(srv_handles_get(&t, y, SRV_H_EVENT));
  ck_assert_uint_eq(t.live, 2);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_add_fails_cleanly_when_the_random_source_fails) {
  srv_handles_t t = {0};
  uint64_t a = add_ok(&t, SRV_H_BUF, 0, fake_ptr(1), 1);
  size_t live = t.live, used = t.used;
  script_failure();
  ck_assert_uint_eq(srv_handles_add(&t, SRV_H_STREAM, 0, fake_ptr(2), 0, NULL), 0);
  ck_assert_uint_eq(t.live, live);
  ck_assert_uint_eq(t.used, used);
  walk_t w = {0};
  srv_handles_each(&t, 0, visit, &w);
  ck_assert_int_eq(w.calls, 1);
  ck_assert_int_eq(walk_has(&w, a), 1);
  add_ok(&t, SRV_H_STREAM, 0, fake_ptr(2), 0); /* the source works again: so does the table */
  srv_handles_free(&t);
}
END_TEST

/* ---- lookup -------------------------------------------------------------------- */

START_TEST(test_get_finds_an_entry_only_under_its_type) {
  srv_handles_t t = {0};
  uint64_t h[3];
  for (int type = SRV_H_BUF; type <= SRV_H_EVENT; type++) h[type - 1] = add_ok(&t, type, 0, fake_ptr((size_t)type), 0);
  for (int i = 0; i < 3; i++)
    for (int type = 0; type <= SRV_H_EVENT + 1; type++) {
      srv_handle_t *e = srv_handles_get(&t, h[i], type);
      if (type == i + 1) {
        ck_assert_ptr_nonnull(e);
        ck_assert_ptr_eq(e->ptr, fake_ptr((size_t)type));
      } else {
        ck_assert_ptr_null(e);
      }
    }
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_empty_table_finds_nothing_and_deletes_nothing) {
  srv_handles_t t = {0};
  for (uint64_t h = 0; h < 4; h++) {
    ck_assert_ptr_null(srv_handles_get(&t, h, SRV_H_BUF));
    ck_assert_int_eq(srv_handles_del(&t, h), -1);
  }
  ck_assert_ptr_null(srv_handles_get(&t, ~0ULL, SRV_H_STREAM));
  walk_t w = {0};
  srv_handles_each(&t, 0, visit, &w);
  ck_assert_int_eq(w.calls, 0);
  srv_handles_free(&t);
  srv_handles_free(&t); /* a freed table is an empty one */
}
END_TEST

START_TEST(test_get_of_zero_one_and_unknown_handles_is_null) {
  srv_handles_t t = {0};
  uint64_t h = add_ok(&t, SRV_H_BUF, 0, fake_ptr(1), 1);
  for (int type = SRV_H_BUF; type <= SRV_H_EVENT; type++) {
    ck_assert_ptr_null(srv_handles_get(&t, 0, type));
    ck_assert_ptr_null(srv_handles_get(&t, 1, type));
    ck_assert_ptr_null(srv_handles_get(&t, h ^ 1, type));
    ck_assert_ptr_null(srv_handles_get(&t, h + 0x100000000ULL, type));
  }
  srv_handles_free(&t);
}
END_TEST

/* ---- deleting -------------------------------------------------------------------- */

START_TEST(test_del_removes_that_handle_only) {
  enum { N = 200 };
  srv_handles_t t = {0};
  uint64_t h[N];
  for (int i = 0; i < N; i++) h[i] = add_ok(&t, SRV_H_BUF, 0, fake_ptr((size_t)i), (size_t)i);
  for (int i = 0; i < N; i += 2) ck_assert_int_eq(srv_handles_del(&t, h[i]), 0);
  ck_assert_uint_eq(t.live, N / 2);
  for (int i = 0; i < N; i++) {
    srv_handle_t *e = srv_handles_get(&t, h[i], SRV_H_BUF);
    if (i % 2 == 0) {
      ck_assert_ptr_null(e);
      for (int type = SRV_H_BUF; type <= SRV_H_EVENT; type++) ck_assert_ptr_null(srv_handles_get(&t, h[i], type));
    } else {
      ck_assert_ptr_nonnull(e);
      ck_assert_ptr_eq(e->ptr, fake_ptr((size_t)i));
      ck_assert_uint_eq(e->size, (size_t)i);
    }
  }
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_del_twice_or_of_unknown_handles_fails_and_changes_nothing) {
  srv_handles_t t = {0};
  uint64_t a = add_ok(&t, SRV_H_BUF, 0, fake_ptr(1), 1);
  uint64_t b = add_ok(&t, SRV_H_STREAM, 1, fake_ptr(2), 0);
  ck_assert_int_eq(srv_handles_del(&t, a), 0);
  size_t live = t.live, used = t.used;
  ck_assert_int_eq(srv_handles_del(&t, a), -1); /* deleted already */
  ck_assert_int_eq(srv_handles_del(&t, 0), -1);
  ck_assert_int_eq(srv_handles_del(&t, 1), -1); /* the tombstone marker itself */
  ck_assert_int_eq(srv_handles_del(&t, b ^ 0x8000000000000000ULL), -1);
  ck_assert_int_eq(srv_handles_del(&t, ~0ULL), -1);
  ck_assert_uint_eq(t.live, live);
  ck_assert_uint_eq(t.used, used);
  srv_handle_t *e = srv_handles_get(&t, b, SRV_H_STREAM);
  ck_assert_ptr_nonnull(e);
  ck_assert_ptr_eq(e->ptr, fake_ptr(2));
  ck_assert_int_eq(e->dev, 1);
  srv_handles_free(&t);
}
END_TEST

/* ---- growth ------------------------------------------------------------------------ */

START_TEST(test_table_grows_past_its_initial_capacity_keeping_every_entry) {
  enum { N = 5000 };
  srv_handles_t t = {0};
  uint64_t *h = malloc(N * sizeof *h);
  ck_assert_ptr_nonnull(h);
  h[0] = add_ok(&t, SRV_H_BUF, 0, fake_ptr(0), 0);
  size_t first_cap = t.cap;
  ck_assert_uint_gt(first_cap, 0);
  /* an entry the session filled in survives the rehash with its other fields */
  srv_handle_t *e0 = srv_handles_get(&t, h[0], SRV_H_BUF);
  e0->ext = fake_ptr(7);
  int grew = 0;
  for (int i = 1; i < N; i++) {
    size_t cap = t.cap;
    h[i] = add_ok(&t, SRV_H_BUF + i % 3, i % 64, fake_ptr((size_t)i), (size_t)i);
    if (t.cap != cap) {
      grew++;
      ck_assert_uint_gt(t.cap, cap);
    }
    ck_assert_uint_eq(t.cap & (t.cap - 1), 0); /* a power of two, as the probe's mask needs */
    ck_assert_uint_le(t.used * 4, t.cap * 3);  /* never fuller than 3/4 */
  }
  ck_assert_int_ge(grew, 1);
  ck_assert_uint_ge(t.cap, (size_t)N);
  ck_assert_uint_gt(t.cap, first_cap);
  ck_assert_uint_eq(t.live, N);
  e0 = srv_handles_get(&t, h[0], SRV_H_BUF);
  ck_assert_ptr_nonnull(e0);
  ck_assert_ptr_eq(e0->ext, fake_ptr(7));
  for (int i = 1; i < N; i++) {
    srv_handle_t *e = srv_handles_get(&t, h[i], SRV_H_BUF + i % 3);
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->dev, i % 64);
    ck_assert_ptr_eq(e->ptr, fake_ptr((size_t)i));
    ck_assert_uint_eq(e->size, (size_t)i);
  }
  free(h);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_growth_with_deleted_entries_keeps_live_ones_and_drops_deleted) {
  enum { N = 3000 };
  srv_handles_t t = {0};
  uint64_t *h = malloc(2 * N * sizeof *h);
  ck_assert_ptr_nonnull(h);
  for (int i = 0; i < N; i++) h[i] = add_ok(&t, SRV_H_EVENT, 0, fake_ptr((size_t)i), 0);
  for (int i = 0; i < N; i += 3) ck_assert_int_eq(srv_handles_del(&t, h[i]), 0);
  size_t cap = t.cap;
  for (int i = N; i < 2 * N; i++) h[i] = add_ok(&t, SRV_H_EVENT, 0, fake_ptr((size_t)i), 0);
  ck_assert_uint_gt(t.cap, cap);
  size_t expect = 0;
  for (int i = 0; i < 2 * N; i++) {
    int deleted = i < N && i % 3 == 0;
    srv_handle_t *e = srv_handles_get(&t, h[i], SRV_H_EVENT);
    if (deleted) {
      ck_assert_ptr_null(e);
      ck_assert_int_eq(srv_handles_del(&t, h[i]), -1);
    } else {
      ck_assert_ptr_nonnull(e);
      ck_assert_ptr_eq(e->ptr, fake_ptr((size_t)i));
      expect++;
    }
  }
  ck_assert_uint_eq(t.live, expect);
  free(h);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_churn_with_few_live_handles_does_not_grow_the_table) {
  /* add/del cycles leave tombstones: they are reclaimed, not grown over,
   * and every lookup still ends (a table without empty slots would hang) */
  enum { LIVE = 8, CYCLES = 100000 };
  srv_handles_t t = {0};
  uint64_t h[LIVE];
  for (int i = 0; i < LIVE; i++) h[i] = add_ok(&t, SRV_H_BUF, 0, fake_ptr((size_t)i), 0);
  size_t cap = t.cap;
  for (int c = 0; c < CYCLES; c++) {
    int k = c % LIVE;
    ck_assert_int_eq(srv_handles_del(&t, h[k]), 0);
    ck_assert_ptr_null(srv_handles_get(&t, h[k], SRV_H_BUF));
    h[k] = add_ok(&t, SRV_H_BUF, 0, fake_ptr((size_t)c), 0);
    ck_assert_uint_le(t.used * 4, t.cap * 3);
  }
  ck_assert_msg(t.cap <= 2 * cap, "8 live handles, capacity grew from %zu to %zu", cap, t.cap);
  ck_assert_uint_eq(t.live, LIVE);
  for (int i = 0; i < LIVE; i++) ck_assert_ptr_nonnull(srv_handles_get(&t, h[i], SRV_H_BUF));
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_reused_slots_start_with_their_own_ext) {
  srv_handles_t t = {0};
  uint64_t h[40];
  for (int i = 0; i < 40; i++) {
    h[i] = add_ok(&t, SRV_H_STREAM, 0, fake_ptr((size_t)i), 0);
    srv_handles_get(&t, h[i], SRV_H_STREAM)->ext = fake_ptr(1000);
  }
  for (int i = 0; i < 40; i++) ck_assert_int_eq(srv_handles_del(&t, h[i]), 0);
  for (int i = 0; i < 40; i++) {
    uint64_t n = add_ok(&t, SRV_H_BUF, 0, fake_ptr((size_t)i), 0);
    ck_assert_ptr_null(srv_handles_get(&t, n, SRV_H_BUF)->ext);
    uint64_t m = srv_handles_add(&t, SRV_H_BUF, 1, fake_ptr(2000), 64, fake_ptr(3000 + (size_t)i));
    ck_assert_uint_gt(m, 1);
    ck_assert_ptr_eq(srv_handles_get(&t, m, SRV_H_BUF)->ext, fake_ptr(3000 + (size_t)i));
  }
  srv_handles_free(&t);
}
END_TEST

/* ---- walking and freeing -------------------------------------------------------------- */

START_TEST(test_each_visits_live_entries_of_the_type_once) {
  srv_handles_t t = {0};
  uint64_t bufs[5], streams[3], events[2];
  for (int i = 0; i < 5; i++) bufs[i] = add_ok(&t, SRV_H_BUF, 0, fake_ptr((size_t)i), 0);
  for (int i = 0; i < 3; i++) streams[i] = add_ok(&t, SRV_H_STREAM, 0, fake_ptr((size_t)i), 0);
  for (int i = 0; i < 2; i++) events[i] = add_ok(&t, SRV_H_EVENT, 0, fake_ptr((size_t)i), 0);
  ck_assert_int_eq(srv_handles_del(&t, bufs[0]), 0);
  ck_assert_int_eq(srv_handles_del(&t, streams[1]), 0);

  walk_t w = {0};
  srv_handles_each(&t, SRV_H_BUF, visit, &w);
  ck_assert_int_eq(w.calls, 4);
  ck_assert_ptr_eq(w.arg_seen, &w);
  ck_assert_int_eq(walk_has(&w, bufs[0]), 0);
  for (int i = 1; i < 5; i++) ck_assert_int_eq(walk_has(&w, bufs[i]), 1);
  for (int i = 0; i < w.calls; i++) ck_assert_int_eq(w.types[i], SRV_H_BUF);

  memset(&w, 0, sizeof w);
  srv_handles_each(&t, SRV_H_STREAM, visit, &w);
  ck_assert_int_eq(w.calls, 2);
  ck_assert_int_eq(walk_has(&w, streams[0]), 1);
  ck_assert_int_eq(walk_has(&w, streams[1]), 0);
  ck_assert_int_eq(walk_has(&w, streams[2]), 1);

  memset(&w, 0, sizeof w);
  srv_handles_each(&t, SRV_H_EVENT, visit, &w);
  ck_assert_int_eq(w.calls, 2);
  for (int i = 0; i < 2; i++) ck_assert_int_eq(walk_has(&w, events[i]), 1);

  memset(&w, 0, sizeof w);
  srv_handles_each(&t, 0, visit, &w); /* 0: every type */
  ck_assert_int_eq(w.calls, 8);
  for (int i = 1; i < 5; i++) ck_assert_int_eq(walk_has(&w, bufs[i]), 1);
  ck_assert_int_eq(
      walk_has(&w, streams[0]) + walk_has(&w, streams[2]) + walk_has(&w, events[0]) + walk_has(&w, events[1]), 4);

  memset(&w, 0, sizeof w);
  srv_handles_each(&t, SRV_H_EVENT + 1, visit, &w); /* a type nothing has */
  ck_assert_int_eq(w.calls, 0);
  srv_handles_free(&t);
}
END_TEST

START_TEST(test_free_empties_the_table_for_reuse) {
  srv_handles_t t = {0};
  uint64_t h = add_ok(&t, SRV_H_BUF, 0, fake_ptr(1), 1);
  srv_handles_free(&t);
  ck_assert_ptr_null(t.slots);
  ck_assert_uint_eq(t.cap, 0);
  ck_assert_uint_eq(t.used, 0);
  ck_assert_uint_eq(t.live, 0);
  ck_assert_ptr_null(srv_handles_get(&t, h, SRV_H_BUF));
  ck_assert_int_eq(srv_handles_del(&t, h), -1);
  uint64_t g = add_ok(&t, SRV_H_EVENT, 0, fake_ptr(2), 0);
  ck_assert_ptr_nonnull(srv_handles_get(&t, g, SRV_H_EVENT));
  srv_handles_free(&t);
}
END_TEST

static Suite *handles_suite(void) {
  Suite *s = suite_create("handles");
  TCase *tc = tcase_create("handles");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_add_gives_nonzero_unique_handles_that_find_their_entries);
  tcase_add_test(tc, test_handles_are_spread_over_63_bits);
  tcase_add_test(tc, test_client_handles_go_in_and_out);
  tcase_add_test(tc, test_add_draws_again_instead_of_zero_or_the_tombstone_marker);
  tcase_add_test(tc, test_add_draws_again_when_the_handle_is_live);
  tcase_add_test(tc, test_add_fails_cleanly_when_the_random_source_fails);
  tcase_add_test(tc, test_get_finds_an_entry_only_under_its_type);
  tcase_add_test(tc, test_empty_table_finds_nothing_and_deletes_nothing);
  tcase_add_test(tc, test_get_of_zero_one_and_unknown_handles_is_null);
  tcase_add_test(tc, test_del_removes_that_handle_only);
  tcase_add_test(tc, test_del_twice_or_of_unknown_handles_fails_and_changes_nothing);
  tcase_add_test(tc, test_table_grows_past_its_initial_capacity_keeping_every_entry);
  tcase_add_test(tc, test_growth_with_deleted_entries_keeps_live_ones_and_drops_deleted);
  tcase_add_test(tc, test_churn_with_few_live_handles_does_not_grow_the_table);
  tcase_add_test(tc, test_reused_slots_start_with_their_own_ext);
  tcase_add_test(tc, test_each_visits_live_entries_of_the_type_once);
  tcase_add_test(tc, test_free_empties_the_table_for_reuse);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(handles_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
