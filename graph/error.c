/* error.c - formatting of yp_err messages. */
#include <stdarg.h>

#include "yp_error.h"

int yp_err_set(yp_err *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}
