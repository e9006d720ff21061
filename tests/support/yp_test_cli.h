/* yp_test_cli.h - what the CLI tests share: the yoloplan binary run with printf-formatted,
 * shell-quoted arguments, its stdout and stderr, and the test's scratch folder (main makes it
 * with yp_test_cli_setup).
 * Defines: out, errtxt, dir, run, yp_test_cli_setup. */
#ifndef YP_TEST_CLI_H
#define YP_TEST_CLI_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "yp_test_run.h"

static char out[1 << 17], errtxt[1 << 14];

/* This process's scratch folder (mkdtemp): tests running side by side never share a file. */
static char dir[64] = "/tmp/yp_test_cli.XXXXXX";

/* Runs the binary with args (a printf format giving a shell-quoted string); fills out/errtxt;
 * returns the exit code. */
static int run(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int run(const char *fmt, ...) {
    char args[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    yp_test_cmd c = {YP_BINARY, dir, 0, out, errtxt, sizeof out, sizeof errtxt};
    return yp_test_run_cmd(&c, args);
}

/* Makes the scratch folder. 0, or -1 after a message. */
static int yp_test_cli_setup(void) {
    if (mkdtemp(dir)) return 0;
    perror("mkdtemp");
    return -1;
}

#endif
