/* ckpt_shim.c - an LD_PRELOAD library for tests only (never linked into yoloplan): it stops or
 * kills the process at an exact point of a checkpoint write, so that a test can prove what a
 * crash or a failing disk there leaves behind. It watches the temporary files the atomic writer
 * (graph/yp_atomic_file.h) makes for "*.safetensors" destinations, numbered 1, 2, ... in the
 * order this process creates them, and acts on the one YP_SHIM names:
 *   YP_SHIM=write:N:BYTES  SIGKILL once BYTES bytes of checkpoint file N are written (the write
 *                          that crosses BYTES writes only up to it)
 *   YP_SHIM=fsync:N        SIGKILL in checkpoint file N's fsync, before it is flushed
 *   YP_SHIM=rename:N       SIGKILL just before checkpoint file N is renamed into place
 *   YP_SHIM=renamed:N      SIGKILL just after the rename (before the folder's sync)
 *   YP_SHIM=stop:N         SIGSTOP before checkpoint file N is created; SIGCONT continues (a test
 *                          changes the disk meanwhile: remounts it read-only, deletes images)
 * Anything else (or no YP_SHIM) passes every call through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef enum { M_NONE, M_WRITE, M_FSYNC, M_RENAME, M_RENAMED, M_STOP } mode;

static mode g_mode = M_NONE;
static long g_n = 0, g_bytes = 0;
static long g_created = 0, g_renamed = 0, g_written = 0;
static int g_fd = -1; /* checkpoint file g_n's descriptor, once created */

static void parse(void) {
    static int done = 0;
    if (done) return;
    done = 1;
    const char *s = getenv("YP_SHIM");
    if (!s) return;
    static const struct {
        const char *name;
        mode m;
    } names[] = {{"write:", M_WRITE}, {"fsync:", M_FSYNC}, {"renamed:", M_RENAMED}, {"rename:", M_RENAME}, {"stop:", M_STOP}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t k = strlen(names[i].name);
        if (strncmp(s, names[i].name, k)) continue;
        char *end;
        g_n = strtol(s + k, &end, 10);
        if (names[i].m == M_WRITE && *end == ':') g_bytes = strtol(end + 1, &end, 10);
        if (g_n > 0 && !*end) g_mode = names[i].m;
        return;
    }
}

static int is_ckpt_tmp(const char *path) { return path && strstr(path, ".safetensors.tmp.") != NULL; }

/* dlsym gives a void *; POSIX casts it to a function pointer through *(void **)&real */
static void die(void) { raise(SIGKILL); }

static int created(char *tmpl, int fd) {
    if (fd >= 0 && is_ckpt_tmp(tmpl) && ++g_created == g_n) g_fd = fd, g_written = 0;
    return fd;
}

static void before_create(const char *tmpl) {
    parse();
    if (g_mode == M_STOP && is_ckpt_tmp(tmpl) && g_created + 1 == g_n) raise(SIGSTOP);
}

int mkstemp(char *tmpl) {
    static int (*real)(char *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "mkstemp");
    before_create(tmpl);
    return created(tmpl, real(tmpl));
}

int mkstemp64(char *tmpl) {
    static int (*real)(char *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "mkstemp64");
    before_create(tmpl);
    return created(tmpl, real(tmpl));
}

ssize_t write(int fd, const void *buf, size_t n) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "write");
    if (g_mode != M_WRITE || fd != g_fd || fd < 0) return real(fd, buf, n);
    if (g_written + (long)n >= g_bytes) {
        size_t part = (size_t)(g_bytes - g_written);
        if (part) real(fd, buf, part);
        die();
    }
    ssize_t w = real(fd, buf, n);
    if (w > 0) g_written += w;
    return w;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "fsync");
    if (g_mode == M_FSYNC && fd == g_fd && fd >= 0) die();
    return real(fd);
}

int close(int fd) {
    static int (*real)(int);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "close");
    if (fd == g_fd && fd >= 0) g_fd = -2; /* a later file may reuse the number */
    return real(fd);
}

int rename(const char *from, const char *to) {
    static int (*real)(const char *, const char *);
    if (!real) *(void **)&real = dlsym(RTLD_NEXT, "rename");
    parse();
    int mine = is_ckpt_tmp(from) && ++g_renamed == g_n;
    if (mine && g_mode == M_RENAME) die();
    int rc = real(from, to);
    if (mine && g_mode == M_RENAMED) die();
    return rc;
}
