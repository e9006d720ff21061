/* error.c - formatting of yp_err messages. */
#include <stdarg.h>

#include "yp_error.h"

int yp_err_set(yp_err *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        /* a message is one line of text: bytes from the input that are control characters (an
         * escape sequence in a label file, a newline in a name) are shown as '?', so an error
         * can neither break its line nor drive the terminal */
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    }
    return -1;
}
