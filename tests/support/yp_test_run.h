/* yp_test_run.h - running a command line from a test and keeping what it printed: the popen /
 * stderr-file dance of the end-to-end tests (test_cli, test_cli_train), written once.
 * Defines: yp_test_cmd, yp_test_run_cmd, yp_test_count_lines. */
#ifndef YP_TEST_RUN_H
#define YP_TEST_RUN_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    const char *binary;  /* the program, quoted into the shell line */
    const char *dir;     /* the test's scratch folder: holds the stderr file */
    int in_dir;          /* 1: run with dir as the working directory */
    char *out, *err;     /* stdout and stderr, NUL-terminated, cut at their capacities */
    size_t out_cap, err_cap;
} yp_test_cmd;

/* Runs `binary args` (args already shell-quoted); fills out and err; returns the exit code, or -1
 * when the command could not run or did not exit. */
static inline int yp_test_run_cmd(const yp_test_cmd *c, const char *args) {
    char cmd[4096], errfile[512];
    snprintf(errfile, sizeof errfile, "%s/stderr", c->dir);
    int k = c->in_dir ? snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>%s", c->dir, c->binary, args, errfile)
                      : snprintf(cmd, sizeof cmd, "'%s' %s 2>%s", c->binary, args, errfile);
    c->out[0] = c->err[0] = 0;
    if (k < 0 || k >= (int)sizeof cmd) return -1;
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(c->out, 1, c->out_cap - 1, p);
    c->out[n] = 0;
    int st = pclose(p);
    FILE *e = fopen(errfile, "rb");
    n = e ? fread(c->err, 1, c->err_cap - 1, e) : 0;
    c->err[n] = 0;
    if (e) fclose(e);
    unlink(errfile);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int yp_test_count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#endif
