/* run_dir.c - run folders as YOLOv5 names them (runs/train/exp, exp2, exp3, ...) and the newest
 * last checkpoint under a folder (bare --resume). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run_dir.h"

/* mkdir -p. 0, or -1 with errno set. */
static int mkdirs(const char *path) {
    char buf[RUN_DIR_PATH];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST) return -1;
    struct stat st;
    if (stat(buf, &st) || !S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
    return 0;
}

int run_dir_make(const char *project, const char *name, int exist_ok, int weights_dir, char *out, size_t n,
                 yp_err *err) {
    struct stat st;
    if (snprintf(out, n, "%s/%s", project, name) >= (int)n)
        return yp_err_set(err, "--project/--name: the path is too long");
    for (int k = 2; !exist_ok && stat(out, &st) == 0; k++) {
        if (k > 9999) return yp_err_set(err, "--project %s: exp2 .. exp9999 all exist; choose another --name", project);
        snprintf(out, n, "%s/%s%d", project, name, k);
    }
    char weights[RUN_DIR_PATH];
    if (snprintf(weights, sizeof weights, weights_dir ? "%s/weights" : "%s", out) >= (int)sizeof weights)
        return yp_err_set(err, "--project/--name: the path is too long");
    if (mkdirs(weights))
        return yp_err_set(err, "--project %s: cannot create %s: %s; choose a writable --project", project, weights,
                          strerror(errno));
    return 0;
}

/* The newest "last.safetensors" under dir (depth-first, at most 8 levels), into best/best_t. */
static void newest(const char *dir, int depth, char *best, size_t n, struct timespec *best_t) {
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[RUN_DIR_PATH];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || lstat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) {
            newest(p, depth + 1, best, n, best_t);
        } else if (S_ISREG(st.st_mode) && !strcmp(e->d_name, "last.safetensors") &&
                   (st.st_mtim.tv_sec > best_t->tv_sec ||
                    (st.st_mtim.tv_sec == best_t->tv_sec && st.st_mtim.tv_nsec > best_t->tv_nsec))) {
            *best_t = st.st_mtim;
            snprintf(best, n, "%s", p);
        }
    }
    if (d) closedir(d);
}

int run_dir_latest(const char *dir, char *out, size_t n, yp_err *err) {
    struct timespec t = {0, 0};
    out[0] = 0;
    newest(dir, 0, out, n, &t);
    if (!out[0])
        return yp_err_set(err, "--resume: no last.safetensors under %s; give the checkpoint: --resume "
                          "runs/train/exp/weights/last.safetensors", dir);
    return 0;
}

int run_dir_of_checkpoint(const char *ckpt, char *out, size_t n, yp_err *err) {
    /* <run>/weights/last.safetensors -> <run> */
    if (snprintf(out, n, "%s", ckpt) >= (int)n) return yp_err_set(err, "%s: the path is too long", ckpt);
    for (int k = 0; k < 2; k++) {
        char *s = strrchr(out, '/');
        if (!s) { /* "last.safetensors": the run is the parent; "weights": the current folder */
            snprintf(out, n, "%s", k == 0 ? ".." : ".");
            return 0;
        }
        if (s == out) s++; /* keep the root */
        *s = 0;
    }
    return 0;
}

/* Whether name is the atomic writer's temporary "FILE.tmp.XXXXXX" (mkstemp's six characters). */
static int is_partial(const char *name) {
    const char *t = strstr(name, ".tmp.");
    if (!t || t == name) return 0;
    while (strstr(t + 1, ".tmp.")) t = strstr(t + 1, ".tmp.");
    t += 5;
    if (strlen(t) != 6) return 0;
    for (; *t; t++)
        if (!((*t >= '0' && *t <= '9') || (*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z'))) return 0;
    return 1;
}

int run_dir_remove_partials(const char *run, FILE *log) {
    int removed = 0;
    for (int k = 0; k < 2; k++) {
        char dir[RUN_DIR_PATH];
        if (snprintf(dir, sizeof dir, k ? "%s/weights" : "%s", run) >= (int)sizeof dir) continue;
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            char p[RUN_DIR_PATH];
            struct stat st;
            if (!is_partial(e->d_name) || snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p ||
                lstat(p, &st) || !S_ISREG(st.st_mode))
                continue;
            if (unlink(p)) {
                if (log) fprintf(log, "WARNING: %s: a partial file a stopped run left; cannot remove it: %s\n", p,
                                 strerror(errno));
                continue;
            }
            removed++;
            if (log)
                fprintf(log, "removed %s (%lld bytes), a partial file a stopped run left\n", p, (long long)st.st_size);
        }
        if (d) closedir(d);
    }
    return removed;
}
