/*
 * rdev/sim_binary.h — reading the rdev sim binary format
 * (docs/sim-binary.md), the kernel binaries every backend of rdevd takes:
 * its lines as words, the header, a kernel line's name and entry. The
 * runtime's loader checks what it reads against the kernel registry
 * (runtime/binary.c); the ACL library finds a binary's kernels without
 * asking the server (client/cann/acl/acl_kernel.c). No allocation, no
 * global state.
 */
#ifndef RDEV_SIM_BINARY_H
#define RDEV_SIM_BINARY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RDEV_SIM_BINARY_MAX_LINE 256 /* bytes of a line, its newline not counted */
#define RDEV_SIM_BINARY_MAX_WORDS 7  /* words of a line, a comment not counted */

/* A reader over a binary's bytes, which it does not own or change. */
typedef struct {
  const char *p, *end;
  int lineno; /* the current line's number, from 1 */
  int nw;     /* its words */
  char *w[RDEV_SIM_BINARY_MAX_WORDS + 1];
  char line[RDEV_SIM_BINARY_MAX_LINE + 1];
} rdev_sim_binary_reader_t;

enum {
  RDEV_SIM_BINARY_END = 0,       /* no more lines */
  RDEV_SIM_BINARY_WORDS = 1,     /* a line with words: r->w[0..nw-1] */
  RDEV_SIM_BINARY_NOT_TEXT = -1, /* a line longer than MAX_LINE, or holding a NUL */
  RDEV_SIM_BINARY_TOO_MANY = -2, /* a line of more than MAX_WORDS words */
};

/* Starts reading data[0..len). */
void rdev_sim_binary_reader_init(rdev_sim_binary_reader_t *r, const void *data, size_t len);

/* Moves to the next line that holds words (blank and comment lines are
 * skipped; '#' starts a comment, white space is ASCII's): RDEV_SIM_BINARY_WORDS,
 * _END, or an error of that line (r->lineno names it; r->nw is 0 then). The
 * words point into r, valid until the next call. After an error the next
 * call reads the line after it. */
int rdev_sim_binary_next(rdev_sim_binary_reader_t *r);

/* Whether the current line is the header, "rdev-sim-binary 1". */
int rdev_sim_binary_is_header(const rdev_sim_binary_reader_t *r);

/* word as "entry=N" (decimal, or hex after 0x; no sign) into *entry: 0, or
 * -1 when it is not one. */
int rdev_sim_binary_entry(const char *word, uint64_t *entry);

/* Whether the binary declares a kernel of that name (name non-NULL) or of
 * that entry (name NULL; a kernel without entry=N has its index among the
 * binary's kernels): 1 yes, 0 no, -1 when data does not read as a sim
 * binary (header, lines, kernel lines). A binary that declares a kernel can
 * still be refused by rdevd, which checks each kernel against its registry. */
int rdev_sim_binary_declares(const void *data, size_t len, const char *name, uint64_t entry);

#ifdef __cplusplus
}
#endif

#endif
