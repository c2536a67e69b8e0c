/*
 * tests/unit/test_runtime_scheduling.c — Check unit tests of the device
 * runtime (rdev/runtime.h, rdev/status.h, sim backend): execution slots and
 * group scheduling (sim_slots, rdev_rt_stream_set_group): the slot limit on
 * concurrent kernels, a group at its slot cap waiting for its own slots,
 * equal shares between groups (not streams) and shares by weight. Suite
 * "scheduling".
 */
#define _GNU_SOURCE
#include "rt_helpers.h"

/* Runs nstreams[g] streams per group g (weights w[g]) on one device with one
 * execution slot, each queueing 1 ms delay kernels, for ~1.5 s (long enough
 * that a loaded machine's stalls do not decide the shares); returns the
 * kernels each group completed. */
static void run_groups(int ngroups, const int *nstreams, const uint32_t *w, size_t *done) {
  /* every kernel queued before the window opens, none run out of work in it */
  const int per_stream = 3000;
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 * MIB, .slots = 1, .stream_depth = per_stream};
  rdev_rt_t *rt;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *st[16];
  int owner[16], n = 0;
  for (int g = 0; g < ngroups; g++)
    for (int k = 0; k < nstreams[g]; k++, n++) {
      ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &st[n]), RDEV_OK);
      ck_assert_int_eq(rdev_rt_stream_set_group(st[n], (uint32_t)g + 1, w[g], 0), RDEV_OK);
      owner[n] = g;
    }
  rdev_kernel_arg_t us = {.type = RDEV_ARG_U32, .v.u32 = 1000};
  for (int i = 0; i < per_stream; i++)
    for (int k = 0; k < n; k++) ck_assert_int_eq(rdev_rt_launch(st[k], "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  usleep(1500 * 1000);
  for (int g = 0; g < ngroups; g++) done[g] = 0;
  for (int k = 0; k < n; k++) {
    size_t pending;
    ck_assert_int_eq(rdev_rt_stream_pending(st[k], &pending), RDEV_OK);
    done[owner[k]] += per_stream - pending;
  }
  double t0 = now_ms();
  rdev_rt_close(rt); /* force-destroys streams, including workers waiting for the slot */
  ck_assert_double_lt(now_ms() - t0, 1000);
}

START_TEST(test_slots_share_device_time_equally_between_groups_not_streams) {
  int nstreams[2] = {3, 1};
  uint32_t w[2] = {1, 1};
  size_t done[2];
  run_groups(2, nstreams, w, done);
  double share = (double)done[0] / (double)(done[0] + done[1]);
  ck_assert_uint_gt(done[0] + done[1], 100);
  ck_assert_msg(share > 0.38 && share < 0.62, "group with 3 streams got %.2f of the device (%zu vs %zu)", share,
                done[0], done[1]);
}
END_TEST

START_TEST(test_slots_share_device_time_by_weight) {
  int nstreams[2] = {1, 1};
  uint32_t w[2] = {3, 1};
  size_t done[2];
  run_groups(2, nstreams, w, done);
  double share = (double)done[0] / (double)(done[0] + done[1]);
  ck_assert_msg(share > 0.65 && share < 0.85, "weight-3 group got %.2f of the device (%zu vs %zu)", share, done[0],
                done[1]);
}
END_TEST

START_TEST(test_group_at_its_slot_cap_waits_for_its_own_slots) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 * MIB, .slots = 2};
  rdev_rt_t *rt;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *a[3], *b;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &a[i]), RDEV_OK);
    ck_assert_int_eq(rdev_rt_stream_set_group(a[i], 1, 1, 1), RDEV_OK); /* group 1: one slot at most */
  }
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &b), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_set_group(b, 2, 1, 1), RDEV_OK);
  rdev_kernel_arg_t long_us = {.type = RDEV_ARG_U32, .v.u32 = 1000000},
                    short_us = {.type = RDEV_ARG_U32, .v.u32 = 1000};
  for (int i = 0; i < 3; i++) ck_assert_int_eq(rdev_rt_launch(a[i], "delay_us", 1, &long_us, 1, NULL, NULL), RDEV_OK);
  usleep(50 * 1000); /* one of group 1's kernels runs, two wait for its one slot */
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_launch(b, "delay_us", 1, &short_us, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_double_lt(now_ms() - t0, 800); /* the free slot went to group 2, not to group 1's waiters */
  int idle = 0, running = 0;
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(rdev_rt_stream_query(a[i], &idle), RDEV_OK);
    running += !idle;
  }
  ck_assert_int_eq(running, 3); /* one runs, two still wait */
  t0 = now_ms();
  for (int i = 0; i < 3; i++) ck_assert_int_eq(rdev_rt_stream_synchronize(a[i]), RDEV_OK);
  ck_assert_double_ge(now_ms() - t0, 1500); /* one at a time: about 3 x 1 s less the 50 + b's */
  rdev_rt_close(rt);
}
END_TEST

START_TEST(test_slots_limit_concurrent_kernels) {
  rdev_rt_config_t cfg = {.sim_devices = 1, .sim_mem_bytes = 1 * MIB, .slots = 1};
  rdev_rt_t *rt;
  ck_assert_int_eq(test_rt_open(&cfg, &rt), RDEV_OK);
  rdev_rt_stream_t *a, *b;
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_create(rt, 0, &b), RDEV_OK);
  rdev_kernel_arg_t us = {.type = RDEV_ARG_U32, .v.u32 = 100000};
  double t0 = now_ms();
  ck_assert_int_eq(rdev_rt_launch(a, "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_launch(b, "delay_us", 1, &us, 1, NULL, NULL), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(a), RDEV_OK);
  ck_assert_int_eq(rdev_rt_stream_synchronize(b), RDEV_OK);
  ck_assert_double_ge(now_ms() - t0, 195); /* one slot: one after the other */
  ck_assert_int_eq(rdev_rt_stream_set_group(a, 1, 0, 0), RDEV_INVALID_PARAM);
  rdev_rt_close(rt);
}
END_TEST

/* ---- suites --------------------------------------------------------------- */

static Suite *sched_suite(void) {
  Suite *s = suite_create("scheduling");
  TCase *tc = tcase_create("slots");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_slots_limit_concurrent_kernels);
  tcase_add_test(tc, test_group_at_its_slot_cap_waits_for_its_own_slots);
  tcase_add_test(tc, test_slots_share_device_time_equally_between_groups_not_streams);
  tcase_add_test(tc, test_slots_share_device_time_by_weight);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return rt_run_suites(sched_suite(), (Suite *)NULL); }
