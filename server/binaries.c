/*
 * server/binaries.c — kernel binaries the sessions loaded, one parsed copy
 * per tenant and content (sha256 of the bytes): a tenant's sessions share
 * it, no other tenant ever finds it. A copy goes with the last session
 * reference to it.
 */
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

#include "srv.h"

struct srv_bin {
  const srv_tenant_t *tenant;
  unsigned char hash[SHA256_DIGEST_LENGTH];
  rdev_rt_binary_t *rt;
  int refs;
  srv_bin_t *next;
};

int srv_bin_get(srv_t *srv, const srv_tenant_t *t, const void *data, size_t len, srv_bin_t **out) {
  unsigned char h[SHA256_DIGEST_LENGTH];
  SHA256(data, len, h);
  pthread_mutex_lock(&srv->bins_mu);
  srv_bin_t *b = srv->bins;
  while (b && !(b->tenant == t && CRYPTO_memcmp(b->hash, h, sizeof h) == 0)) b = b->next;
  if (b) b->refs++;
  pthread_mutex_unlock(&srv->bins_mu);
  if (b) {
    *out = b;
    return RDEV_OK;
  }
  /* parsed outside the lock; a session of the tenant loading the same bytes
   * meanwhile parses its own copy, and both are kept */
  rdev_rt_binary_t *rt = NULL;
  int rc = rdev_rt_binary_load(srv->rt, data, len, &rt);
  if (rc) return rc;
  if (!(b = calloc(1, sizeof *b))) {
    rdev_rt_binary_unload(rt);
    return RDEV_BAD_ALLOC;
  }
  b->tenant = t;
  memcpy(b->hash, h, sizeof h);
  b->rt = rt;
  b->refs = 1;
  pthread_mutex_lock(&srv->bins_mu);
  b->next = srv->bins;
  srv->bins = b;
  pthread_mutex_unlock(&srv->bins_mu);
  *out = b;
  return RDEV_OK;
}

srv_bin_t *srv_bin_ref(srv_t *srv, srv_bin_t *b) {
  pthread_mutex_lock(&srv->bins_mu);
  b->refs++;
  pthread_mutex_unlock(&srv->bins_mu);
  return b;
}

void srv_bin_put(srv_t *srv, srv_bin_t *b) {
  if (!b) return;
  pthread_mutex_lock(&srv->bins_mu);
  int last = --b->refs == 0;
  if (last) {
    srv_bin_t **pp = &srv->bins;
    while (*pp != b) pp = &(*pp)->next;
    *pp = b->next;
  }
  pthread_mutex_unlock(&srv->bins_mu);
  if (last) {
    rdev_rt_binary_unload(b->rt);
    free(b);
  }
}

const rdev_rt_binary_t *srv_bin_rt(const srv_bin_t *b) { return b->rt; }
