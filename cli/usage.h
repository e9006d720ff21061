/* usage.h - every command's usage text, in one place: `yoloplan CMD --help` (or -h) prints the
 * command's own, `yoloplan help` all of them. */
#ifndef YP_CLI_USAGE_H
#define YP_CLI_USAGE_H

#include <stdio.h>

/* Writes the usage of command cmd ("plan" or an option for the planner; NULL: every command) to
 * f. 0, or -1 when cmd is no command (nothing written). */
int cli_usage(FILE *f, const char *cmd);

#endif
