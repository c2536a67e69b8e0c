/*
 * server/jobs/job_http.c — the webhook signature (srv_http_sign): the
 * HMAC-SHA256 that job_http_drive.c puts on each webhook try and that tests
 * check receivers against. job_http.h, this file's header, is the face of
 * a job's HTTP(S) transfers to the jobs room; they are made by
 * job_http_ops.c (the entry points), job_http_drive.c (the multi loop) and
 * job_http_xfer.c (one transfer's error texts and clock).
 */
#include "job_http.h"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

void srv_http_sign(const char *secret, long long ts, const char *body, size_t len, char hex[65]) {
  char t[32];
  int tl = snprintf(t, sizeof t, "%lld.", ts);
  unsigned char mac[32];
  size_t ml = 0;
  EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
  OSSL_PARAM ps[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                     OSSL_PARAM_construct_end()};
  static const unsigned char none = 0;
  const unsigned char *key = secret && *secret ? (const unsigned char *)secret : &none;
  hex[0] = 0;
  if (c && EVP_MAC_init(c, key, secret ? strlen(secret) : 0, ps) && EVP_MAC_update(c, (unsigned char *)t, (size_t)tl) &&
      (!len || EVP_MAC_update(c, (const unsigned char *)body, len)) && EVP_MAC_final(c, mac, &ml, sizeof mac) &&
      ml == sizeof mac) {
    for (size_t i = 0; i < sizeof mac; i++) snprintf(hex + 2 * i, 3, "%02x", mac[i]);
  }
  EVP_MAC_CTX_free(c);
  EVP_MAC_free(m);
}
