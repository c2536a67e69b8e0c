/*
 * runtime/engine_quick.c — what a stream's latest launches took, for
 * rt_engine_stream_run_here (engine.c): each stream keeps, for the last
 * QUICK_KEYS launches of built-in kernels it ran (hashed by kernel, blocks
 * and arguments), how long the run took: one word each, the hash's top
 * bits over the microseconds, so that a reader never sees one launch's
 * hash with another's time. Only the thread that runs the stream's tasks
 * writes it; a synchronizing thread reads it. A built-in kernel's time is
 * a function of its arguments, at most linear in each scalar (a count, a
 * delay): a scalar counts by its sign and magnitude (bit length; a
 * float's exponent), so that a loop whose scalar moves (a step, an index)
 * is known after a few runs, and the same key's runs differ by at most
 * about twice.
 */
#include <string.h>

#include "rt_engine.h"

#define QUICK_US_BITS 20
#define QUICK_US_MAX ((1u << QUICK_US_BITS) - 1)

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/* The sign and bit length of v. */
static uint64_t magnitude(int64_t v) {
  uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  return (v < 0 ? 128u : 0u) | (uint64_t)(m ? 64 - __builtin_clzll(m) : 0);
}

/* The hash of kernel task t (a built-in kernel's launch), each argument by
 * its type: a pointer as it is (its allocation bounds the work), a scalar
 * by its magnitude. */
static uint64_t launch_key(const rt_task_t *t) {
  uint64_t h = mix(mix(0, (uint64_t)t->u.kernel.index), t->u.kernel.blocks);
  for (int i = 0; i < RDEV_RT_MAX_KERNEL_ARGS && t->u.kernel.args[i].type; i++) {
    const rdev_kernel_arg_t *a = &t->u.kernel.args[i];
    uint64_t v;
    switch (a->type) {
      case RDEV_ARG_PTR: v = mix((uint64_t)(uintptr_t)a->v.ptr.base, a->v.ptr.offset); break;
      case RDEV_ARG_I32: v = magnitude(a->v.i32); break;
      case RDEV_ARG_U32: v = magnitude((int64_t)a->v.u32); break;
      case RDEV_ARG_I64: v = magnitude(a->v.i64); break;
      case RDEV_ARG_U64: v = a->v.u64 >> 63 ? 64 : magnitude((int64_t)a->v.u64); break;
      case RDEV_ARG_F32: {
        uint32_t w;
        memcpy(&w, &a->v.f32, sizeof w);
        v = w >> 23; /* sign and exponent */
        break;
      }
      default: {
        uint64_t w;
        memcpy(&w, &a->v.f64, sizeof w);
        v = w >> 52;
        break;
      }
    }
    h = mix(mix(h, (uint64_t)a->type), v);
  }
  return (h & ~(uint64_t)QUICK_US_MAX) | (uint64_t)1 << QUICK_US_BITS; /* never 0: an empty entry matches none */
}

int eng_quick_kept(const eng_stream_t *s, const rt_task_t *t) {
  return t->op == RT_TASK_KERNEL && !t->u.kernel.fn && s->base.rt->be->runs_here;
}

void eng_quick_note(eng_stream_t *s, const rt_task_t *t, uint64_t ns) {
  uint64_t key = launch_key(t), us = (ns + 999) / 1000;
  atomic_store_explicit(&s->quick[(key >> 32) % QUICK_KEYS], key | (us < QUICK_US_MAX ? us : QUICK_US_MAX),
                        memory_order_relaxed);
}

uint64_t eng_quick_guess(eng_stream_t *s, const rt_task_t *t) {
  uint64_t key = launch_key(t);
  uint64_t w = atomic_load_explicit(&s->quick[(key >> 32) % QUICK_KEYS], memory_order_relaxed);
  return (w & ~(uint64_t)QUICK_US_MAX) == key ? (w & QUICK_US_MAX) * 1000 : UINT64_MAX;
}
