/*
 * server/handles.c — a session's handle tables: 64-bit keys mapped to
 * entries by open addressing with linear probing. Streams and events get
 * opaque handles drawn from the kernel's random source (bit 63 clear), or
 * the client's own (bit 63 set, srv_handles_put); buffers are keyed
 * by their device address. Either exists only in the table of the session
 * that made it, so another session's is simply unknown here.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "srv.h"

#define H_EMPTY 0
#define H_DELETED 1

static uint64_t mix(uint64_t h) { /* handles are random already; spread low bits anyway */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

static srv_handle_t *probe(srv_handles_t *t, uint64_t h) {
  size_t mask = t->cap - 1;
  for (size_t i = mix(h) & mask;; i = (i + 1) & mask) {
    srv_handle_t *s = &t->slots[i];
    if (s->h == h || s->h == H_EMPTY) return s;
  }
}

static int grow(srv_handles_t *t) {
  size_t cap = t->cap ? t->cap * 2 : 64;
  if (t->live * 4 < t->cap) cap = t->cap; /* mostly tombstones: rehash in place */
  srv_handle_t *old = t->slots;
  size_t oldcap = t->cap;
  t->slots = calloc(cap, sizeof *t->slots);
  if (!t->slots) {
    t->slots = old;
    return -1;
  }
  t->cap = cap;
  t->used = t->live = 0;
  for (size_t i = 0; i < oldcap; i++)
    if (old[i].h > H_DELETED) {
      *probe(t, old[i].h) = old[i];
      t->used++;
      t->live++;
    }
  free(old);
  return 0;
}

/* Fills the free slot s found for h (reusing a tombstone on the way). */
static void fill(srv_handles_t *t, srv_handle_t *s, uint64_t h, int type, int dev, void *ptr, size_t size, void *ext) {
  /* reuse a tombstone on the way if there is one */
  size_t mask = t->cap - 1;
  for (size_t i = mix(h) & mask; &t->slots[i] != s; i = (i + 1) & mask)
    if (t->slots[i].h == H_DELETED) {
      s = &t->slots[i];
      t->used--;
      break;
    }
  s->h = h;
  s->type = type;
  s->dev = dev;
  s->ptr = ptr;
  s->size = size;
  s->ext = ext;
  t->used++;
  t->live++;
}

uint64_t srv_handles_add(srv_handles_t *t, int type, int dev, void *ptr, size_t size, void *ext) {
  if ((t->used + 1) * 4 > t->cap * 3 && grow(t) != 0) return 0;
  uint64_t h;
  srv_handle_t *s;
  do {
    if (getrandom(&h, sizeof h, 0) != sizeof h) return 0;
    h &= ~RDEV_WIRE_CLIENT_HANDLE; /* those are the client's to choose */
    s = probe(t, h);
  } while (h <= H_DELETED || s->h == h);
  fill(t, s, h, type, dev, ptr, size, ext);
  return h;
}

int srv_handles_put(srv_handles_t *t, uint64_t h, int type, int dev, void *ptr, size_t size, void *ext) {
  if (h <= H_DELETED || ((t->used + 1) * 4 > t->cap * 3 && grow(t) != 0)) return -1;
  srv_handle_t *s = probe(t, h);
  if (s->h == h) return -1;
  fill(t, s, h, type, dev, ptr, size, ext);
  return 0;
}

srv_handle_t *srv_handles_find(srv_handles_t *t, uint64_t h) {
  if (!t->cap || h <= H_DELETED) return NULL;
  srv_handle_t *s = probe(t, h);
  return s->h == h ? s : NULL;
}

srv_handle_t *srv_handles_get(srv_handles_t *t, uint64_t h, int type) {
  srv_handle_t *s = srv_handles_find(t, h);
  return s && s->type == type ? s : NULL;
}

int srv_handles_del(srv_handles_t *t, uint64_t h) {
  if (!t->cap || h <= H_DELETED) return -1;
  srv_handle_t *s = probe(t, h);
  if (s->h != h) return -1;
  memset(s, 0, sizeof *s);
  s->h = H_DELETED;
  t->live--;
  return 0;
}

void srv_handles_each(srv_handles_t *t, int type, void (*fn)(srv_handle_t *e, void *arg), void *arg) {
  for (size_t i = 0; i < t->cap; i++)
    if (t->slots[i].h > H_DELETED && (!type || t->slots[i].type == type)) fn(&t->slots[i], arg);
}

void srv_handles_free(srv_handles_t *t) {
  free(t->slots);
  memset(t, 0, sizeof *t);
}
