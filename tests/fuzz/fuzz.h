/*
 * tests/fuzz/fuzz.h — the entry points libFuzzer calls in each harness.
 */
#ifndef RDEV_FUZZ_H
#define RDEV_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Once, before the first input (optional). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* One input: returns 0; a failed check aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
