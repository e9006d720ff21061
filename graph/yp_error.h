/* yp_error.h - the two error tiers: YP_ASSERT for broken invariants (abort with
 * file:line), yp_err for bad input and resources (one line: file, location, problem, fix). */
#ifndef YP_ERROR_H
#define YP_ERROR_H

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    char msg[1024];
} yp_err;

/* Formats msg into err (if err is non-NULL), control characters shown as '?' (one line, nothing for the
 * terminal to act on). Always returns -1 so callers can `return yp_err_set(..)`. */
int yp_err_set(yp_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#define YP_ASSERT(cond)                                                                   \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: internal error: assertion `%s' failed\n", __FILE__,   \
                    __LINE__, #cond);                                                     \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

#endif
