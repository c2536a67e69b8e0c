/*
 * proto/wire_ops.h — inside the codec only (wire.c, wire_decode.c): the
 * table of Request's ops that wire_ops.c reads once from nanopb's
 * descriptors, and the straight codec of small requests it drives.
 */
#ifndef RDEV_WIRE_OPS_H
#define RDEV_WIRE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdev/wire.h"

#define WIRE_OP_TAGS 34 /* Request's ops and the fields of scalar ones have smaller numbers */

/* One op of Request's oneof: its message type and where its struct lies
 * in a Request; NULL desc: no op has this number. */
typedef struct {
  const pb_msgdesc_t *desc;
  size_t offset;
} wire_op_t;

/* The op numbered tag (0 < tag < WIRE_OP_TAGS), or NULL. */
const wire_op_t *wire_op(unsigned tag);

/* The varint of v at p; its length (at most 10). */
size_t wire_put_varint(uint8_t *p, uint64_t v);

/* The fields of op tag's struct at msg, encoded into body (at least
 * WIRE_SCALARS_MAX bytes) as nanopb would encode them, without walking its
 * descriptors, where every field of the op is a scalar: true, with *len.
 * False where the op is another (then nanopb encodes it). */
#define WIRE_SCALARS_MAX (WIRE_OP_TAGS * 12) /* a key of up to 2 bytes, a value of up to 10 */
bool wire_ops_encode(unsigned tag, const void *msg, uint8_t *body, size_t *len);

/* Request q (zeroed, as rdev_v1_Request_init_zero) from its n bytes at p,
 * without walking nanopb's descriptors, where it is a seq and an op whose
 * fields are all scalars. False where the table does not cover it exactly
 * as nanopb would decode it (another field or wire type, a value out of
 * its field's range): then nanopb must decode it, and q may hold part of
 * it. */
bool wire_ops_decode(const uint8_t *p, size_t n, rdev_v1_Request *q);

#endif
