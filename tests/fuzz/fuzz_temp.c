/* fuzz_temp.c - the per-process scratch folder of the fuzz targets (fuzz_temp.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz_temp.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char temp_dir[512];

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    remove(path);
    return 0;
}

static void remove_temp_dir(void) {
    if (temp_dir[0]) nftw(temp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void fz_fail(const char *target, const char *what, const char *detail) {
    fprintf(stderr, "%s: %s%s%s\n", target, what, detail ? ": " : "", detail ? detail : "");
    abort();
}

const char *fz_temp_dir(void) {
    if (temp_dir[0]) return temp_dir;
    const char *base = getenv("TMPDIR");
    if (!base || !base[0]) base = "/tmp";
    if (snprintf(temp_dir, sizeof temp_dir, "%s/yp-fuzz-XXXXXX", base) >= (int)sizeof temp_dir)
        fz_fail("fuzz_temp", "TMPDIR too long", base);
    if (!mkdtemp(temp_dir)) fz_fail("fuzz_temp", "cannot make a scratch folder", temp_dir);
    atexit(remove_temp_dir);
    return temp_dir;
}

const char *fz_temp_write(const char *name, const uint8_t *data, size_t size) {
    static char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", fz_temp_dir(), name) >= (int)sizeof path)
        fz_fail("fuzz_temp", "path too long", name);
    FILE *f = fopen(path, "wb");
    if (!f) fz_fail("fuzz_temp", "cannot create", path);
    int bad = size && fwrite(data, 1, size, f) != size;
    if (fclose(f) != 0) bad = 1;
    if (bad) fz_fail("fuzz_temp", "cannot write", path);
    return path;
}
