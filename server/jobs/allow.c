/*
 * server/jobs/allow.c — URL allow lists and the addresses transfers may connect
 * to (allow.h). URLs are parsed by libcurl's URL API, which resolves dot
 * segments; paths are compared percent-decoded, and a decoded path that
 * still holds a dot segment, a backslash or a NUL is refused, so that an
 * encoded "../" cannot climb out of a prefix on a server that decodes it.
 * Owns the list; calls only libcurl and libc.
 */
#include "allow.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A URL's parts as compared: scheme and host lowercase, port as digits,
 * path percent-decoded. */
typedef struct {
  char *scheme, *host, *port, *path;
} parts_t;

struct srv_allow {
  parts_t p;
  struct srv_allow *next;
};

static int refuse(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t whylen, const char *fmt, ...) {
  if (why && whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return 0;
}

static void parts_free(parts_t *p) {
  curl_free(p->scheme);
  curl_free(p->host);
  curl_free(p->port);
  curl_free(p->path);
  memset(p, 0, sizeof *p);
}

static void lower(char *s) {
  for (; s && *s; s++)
    if (*s >= 'A' && *s <= 'Z') *s = (char)(*s - 'A' + 'a');
}

/* A path segment "." or "..", ending at '/' or the end. */
static int dot_segment(const char *seg) {
  return (seg[0] == '.' && (seg[1] == '/' || !seg[1])) ||
         (seg[0] == '.' && seg[1] == '.' && (seg[2] == '/' || !seg[2]));
}

/* Parses url into its compared parts. prefix: the stricter rules of a
 * prefix (no query or fragment). 1, or 0 with why set. */
static int parse(const char *url, int prefix, parts_t *out, char *why, size_t whylen) {
  memset(out, 0, sizeof *out);
  CURLU *u = curl_url();
  if (!u) return refuse(why, whylen, "out of memory");
  int ok = 0;
  char *extra = NULL;
  CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
  if (rc != CURLUE_OK) {
    refuse(why, whylen, "not a URL (%s)", curl_url_strerror(rc));
    goto done;
  }
  if (curl_url_get(u, CURLUPART_SCHEME, &out->scheme, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_HOST, &out->host, 0) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_PORT, &out->port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
      curl_url_get(u, CURLUPART_PATH, &out->path, CURLU_URLDECODE) != CURLUE_OK) {
    refuse(why, whylen, "a URL needs a scheme, a host and a path that decodes");
    goto done;
  }
  lower(out->scheme);
  lower(out->host);
  if (strcmp(out->scheme, "http") && strcmp(out->scheme, "https")) {
    refuse(why, whylen, "scheme %s: only http and https", out->scheme);
    goto done;
  }
  if (curl_url_get(u, CURLUPART_USER, &extra, 0) == CURLUE_OK ||
      curl_url_get(u, CURLUPART_PASSWORD, &extra, 0) == CURLUE_OK) {
    refuse(why, whylen, "a URL with user info");
    goto done;
  }
  if (prefix && (curl_url_get(u, CURLUPART_QUERY, &extra, 0) == CURLUE_OK ||
                 curl_url_get(u, CURLUPART_FRAGMENT, &extra, 0) == CURLUE_OK)) {
    refuse(why, whylen, "a prefix with a query or fragment");
    goto done;
  }
  for (const char *s = out->path; *s; s++)
    if (*s == '\\' || ((s == out->path || s[-1] == '/') && dot_segment(s))) {
      refuse(why, whylen, "a path with an encoded dot segment or backslash");
      goto done;
    }
  /* URLDECODE stops at an encoded NUL only by failing, which is handled
   * above; a decoded path is a C string of what the server will see. */
  ok = 1;
done:
  curl_free(extra);
  curl_url_cleanup(u);
  if (!ok) parts_free(out);
  return ok;
}

/* path is prefix's path or below it on a '/' boundary. */
static int path_under(const char *path, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(path, prefix, n)) return 0;
  return !path[n] || path[n] == '/' || (n && prefix[n - 1] == '/');
}

int srv_allow_add(srv_allow_t **list, const char *prefix, char *why, size_t whylen) {
  srv_allow_t *a = calloc(1, sizeof *a);
  if (!a) return refuse(why, whylen, "out of memory") - 1;
  char sub[192];
  if (!prefix || !parse(prefix, 1, &a->p, sub, sizeof sub)) {
    free(a);
    return refuse(why, whylen, "allow prefix '%s': %s", prefix ? prefix : "(null)", prefix ? sub : "missing") - 1;
  }
  a->next = *list;
  *list = a;
  return 0;
}

void srv_allow_free(srv_allow_t *list) {
  while (list) {
    srv_allow_t *next = list->next;
    parts_free(&list->p);
    free(list);
    list = next;
  }
}

int srv_allow_url(const srv_allow_t *list, const char *url, char *why, size_t whylen) {
  parts_t p;
  char sub[192];
  if (!url || !parse(url, 0, &p, sub, sizeof sub)) return refuse(why, whylen, "%s", url ? sub : "no URL");
  int ok = 0;
  for (const srv_allow_t *a = list; a && !ok; a = a->next)
    ok = !strcmp(p.scheme, a->p.scheme) && !strcmp(p.host, a->p.host) && !strcmp(p.port, a->p.port) &&
         path_under(p.path, a->p.path);
  if (!ok) refuse(why, whylen, "%s://%s:%s%s is under no allowed prefix", p.scheme, p.host, p.port, p.path);
  parts_free(&p);
  return ok;
}

/* ---- addresses ------------------------------------------------------------------ */

/* An address as 16 bytes: IPv6, or IPv4 as ::ffff:a.b.c.d. */
typedef struct {
  uint8_t b[16];
} addr_t;

static int addr_parse(const char *text, addr_t *a) {
  char buf[INET6_ADDRSTRLEN + 2];
  size_t n = strlen(text);
  if (n >= 2 && text[0] == '[' && text[n - 1] == ']' && n - 2 < sizeof buf) { /* a URL's IPv6 host */
    memcpy(buf, text + 1, n - 2);
    buf[n - 2] = 0;
    text = buf;
  }
  memset(a, 0, sizeof *a);
  struct in_addr v4;
  if (inet_pton(AF_INET, text, &v4) == 1) {
    a->b[10] = a->b[11] = 0xff;
    memcpy(a->b + 12, &v4, 4);
    return 1;
  }
  return inet_pton(AF_INET6, text, a->b) == 1;
}

static int in_v6(const addr_t *a, const uint8_t *net, int bits) {
  for (int i = 0; i < bits; i++)
    if (((a->b[i / 8] ^ net[i / 8]) >> (7 - i % 8)) & 1) return 0;
  return 1;
}

/* Why the address is not public, or NULL when it is. */
static const char *not_public(const addr_t *a) {
  static const uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff}, nat64[16] = {0, 0x64, 0xff, 0x9b};
  const uint8_t *v4 = NULL;
  if (in_v6(a, mapped, 96) || in_v6(a, nat64, 96)) v4 = a->b + 12;
  if (v4) {
    static const struct {
      uint8_t net[4];
      int bits;
      const char *what;
    } v4nets[] = {
        {{0}, 8, "unspecified (0.0.0.0/8)"},
        {{10}, 8, "private (10.0.0.0/8)"},
        {{100, 64}, 10, "shared (100.64.0.0/10)"},
        {{127}, 8, "loopback"},
        {{169, 254}, 16, "link-local"},
        {{172, 16}, 12, "private (172.16.0.0/12)"},
        {{192, 0, 0}, 24, "reserved (192.0.0.0/24)"},
        {{192, 168}, 16, "private (192.168.0.0/16)"},
        {{198, 18}, 15, "benchmarking (198.18.0.0/15)"},
        {{224}, 4, "multicast"},
        {{240}, 4, "reserved (240.0.0.0/4)"},
    };
    for (size_t i = 0; i < sizeof v4nets / sizeof v4nets[0]; i++) {
      uint32_t x = (uint32_t)v4[0] << 24 | (uint32_t)v4[1] << 16 | (uint32_t)v4[2] << 8 | v4[3];
      const uint8_t *n = v4nets[i].net;
      uint32_t net = (uint32_t)n[0] << 24 | (uint32_t)n[1] << 16 | (uint32_t)n[2] << 8 | n[3];
      uint32_t mask = ~0u << (32 - v4nets[i].bits);
      if ((x & mask) == net) return v4nets[i].what;
    }
    return NULL;
  }
  static const struct {
    uint8_t net[16];
    int bits;
    const char *what;
  } v6nets[] = {
      {{0}, 96, "unspecified or IPv4-compatible (::/96)"},
      {{0xfc}, 7, "unique-local (fc00::/7)"},
      {{0xfe, 0x80}, 10, "link-local (fe80::/10)"},
      {{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
      {{0xff}, 8, "multicast"},
      {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation (2001:db8::/32)"},
  };
  static const uint8_t loopback[16] = {[15] = 1};
  if (!memcmp(a->b, loopback, 16)) return "loopback";
  for (size_t i = 0; i < sizeof v6nets / sizeof v6nets[0]; i++)
    if (in_v6(a, v6nets[i].net, v6nets[i].bits)) return v6nets[i].what;
  return NULL;
}

int srv_allow_addr(const srv_allow_t *list, const char *ip, char *why, size_t whylen) {
  addr_t a, named;
  if (!ip || !addr_parse(ip, &a)) return refuse(why, whylen, "'%s' is not an IP address", ip ? ip : "(null)");
  const char *what = not_public(&a);
  if (!what) return 1;
  for (const srv_allow_t *p = list; p; p = p->next)
    if (addr_parse(p->p.host, &named) && !memcmp(named.b, a.b, 16)) return 1;
  return refuse(why, whylen, "address %s is %s and no allowed prefix names it", ip, what);
}
