/* backend_kinds.h - internal to kernels/: the rows of the kind table (yp_backend_kind.h), each defined
 * by its kind's file (cpu/kind_cpu.c, kind_cuda.c), and what those rows share with the table. */
#ifndef YP_BACKEND_KINDS_H
#define YP_BACKEND_KINDS_H

#include <stddef.h>

#include "yp_backend_kind.h"

extern const yp_backend_kind yp_kind_cpu;
extern const yp_backend_kind yp_kind_cuda;

/* Parses a count written plainly (no sign, no leading zero, digits only) in 1..max into *out:
 * 0, or -1 (nothing written to *out). */
int yp_kind_parse_count(const char *v, int max, int *out);

/* Writes a formatted one-line reason into why (when why and why_len allow). Always returns -1. */
int yp_kind_fail(char *why, size_t why_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
