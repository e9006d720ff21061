/* replay.c - runs a fuzz target's LLVMFuzzerTestOneInput once on each input, without libFuzzer:
 * how the ordinary build (and the ASan + UBSan one) replays the checked-in corpus under ctest.
 *
 *   replay_<target> PATH...   each PATH a file (an input) or a folder (each regular file in it,
 *                             in name order, dot files skipped; not recursive)
 *
 * Prints each input's name before running it (so a crash names its input), then the count.
 * Exits 0; 2 on bad usage, an unreadable input or a folder with no input (a corpus gone
 * missing must fail, not pass empty). A crash or a sanitizer report ends the process as it
 * would under libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap * 2);
            if (!bigger) free(buf);
            buf = bigger, cap *= 2;
        }
    }
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: %s: cannot read\n", path);
        free(buf);
        return -1;
    }
    printf("replay: %s (%zu bytes)\n", path, n);
    fflush(stdout);
    /* An exact-size copy, so that ASan sees a read past the input's end. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular, non-dot file of folder dir. Returns the number run, or -1. */
static long run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open folder\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **more = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (!more) break;
            names = more;
        }
        if ((names[n] = strdup(e->d_name)) != NULL) n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    long ran = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        if (ran >= 0 && snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode))
            ran = run_file(path) == 0 ? ran + 1 : -1;
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_FOLDER...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
            return 2;
        }
        long ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
        if (ran < 0) return 2;
        if (ran == 0) {
            fprintf(stderr, "replay: %s: no input in this folder\n", argv[i]);
            return 2;
        }
        total += ran;
    }
    printf("replay: %ld inputs, no crash\n", total);
    return 0;
}
