/* fuzz_temp.h - the scratch folder a fuzz target writes its input into, for entry points that
 * read a path rather than a buffer. One folder per process (mkdtemp under $TMPDIR, else /tmp),
 * removed with everything in it at exit.
 * Defines: fz_temp_dir, fz_temp_write, fz_fail. */
#ifndef FUZZ_TEMP_H
#define FUZZ_TEMP_H

#include <stddef.h>
#include <stdint.h>

/* The process's scratch folder, created on first use; aborts when it cannot be made. */
const char *fz_temp_dir(void);

/* Writes size bytes to fz_temp_dir()/name (replaced) and returns that path (a static buffer,
 * valid until the next call); aborts when the file cannot be written. */
const char *fz_temp_write(const char *name, const uint8_t *data, size_t size);

/* Prints "TARGET: what[: detail]" and aborts: libFuzzer records the input as a crash. */
void fz_fail(const char *target, const char *what, const char *detail);

#endif
