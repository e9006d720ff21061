/* pt_zip.c - the zip container of a .pt (pt_internal.h), read with libzip: the archive checked for
 * consistency, its one "<archive>/data.pkl", its byte order, and the storage records
 * "<archive>/data/<key>" read on demand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zip.h>

#include "pt_internal.h"
#include "yp_file.h"

struct pt_zip {
    zip_t *z;
    const char *path; /* the caller's, kept while z is open */
    char prefix[256]; /* "<archive>/" */
    zip_uint64_t pkl; /* data.pkl's index */
};

static const char *const DAMAGED = "the file is truncated or damaged: download or save it again";

int pt_is_legacy(const unsigned char *head, size_t n) {
    /* LONG1 of 10 bytes: torch.serialization's MAGIC_NUMBER 0x1950a86a20f9469cfc6c, little endian */
    static const unsigned char magic[12] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    if (n < 2 || head[0] != 0x80 || head[1] < 2 || head[1] > 5) return 0;
    for (size_t at = 2; at + sizeof magic <= n && at <= 11; at++) /* after PROTO, or after PROTO and FRAME */
        if (!memcmp(head + at, magic, sizeof magic)) return 1;
    return 0;
}

/* Why path is not a zip, from its first n bytes: -1 with err set. */
static int not_zip(const char *path, const unsigned char *head, size_t n, yp_err *err) {
    if (pt_is_legacy(head, n))
        return yp_err_set(err,
                          "%s: a .pt in torch.save's legacy format (before torch 1.6), which this reader does not "
                          "read; re-save it with a newer torch: torch.save(torch.load(f), f)",
                          path);
    return yp_err_set(err,
                      "%s: not a zip archive (torch.save's format since torch 1.6) nor a safetensors file; give a "
                      ".pt that torch.save wrote or a .safetensors",
                      path);
}

/* The archive's "<archive>/data.pkl": exactly one, at the top folder. 0, or -1 with err set. */
static int find_pickle(pt_zip *z, yp_err *err) {
    zip_int64_t n = zip_get_num_entries(z->z, 0);
    int found = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(z->z, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (!slash || strcmp(slash, "/data.pkl")) continue;
        if (found++)
            return yp_err_set(err,
                              "%s: the zip holds two pickles (%sdata.pkl and %s); not one torch.save wrote, "
                              "re-save it with torch.save",
                              z->path, z->prefix, name);
        if ((size_t)(slash - name) + 2 > sizeof z->prefix)
            return yp_err_set(err, "%s: the archive's folder name is longer than %zu bytes; re-save it with torch.save",
                              z->path, sizeof z->prefix - 2);
        memcpy(z->prefix, name, (size_t)(slash - name) + 1);
        z->prefix[slash - name + 1] = 0;
        z->pkl = (zip_uint64_t)i;
    }
    if (!found)
        return yp_err_set(err,
                          "%s: a zip without <archive>/data.pkl, so not a file torch.save wrote; give a .pt that "
                          "torch.save wrote",
                          z->path);
    return 0;
}

/* Reads up to cap bytes of entry i into buf (malloc'd, NUL after): its whole size must fit. */
static int read_entry(pt_zip *z, zip_uint64_t i, int64_t cap, unsigned char **buf, size_t *n, yp_err *err) {
    zip_stat_t st;
    *buf = NULL, *n = 0;
    if (zip_stat_index(z->z, i, 0, &st) || !(st.valid & ZIP_STAT_SIZE))
        return yp_err_set(err, "%s: %s: %s", z->path, zip_get_name(z->z, i, ZIP_FL_ENC_RAW), DAMAGED);
    if (st.size > (zip_uint64_t)cap)
        return yp_err_set(err, "%s: %s has %llu bytes, above the reader's limit of %lld; not a file torch.save wrote",
                          z->path, st.name, (unsigned long long)st.size, (long long)cap);
    *buf = malloc((size_t)st.size + 1);
    if (!*buf) return yp_err_set(err, "%s: out of memory reading %s", z->path, st.name);
    if (pt_zip_read(z, (int64_t)i, 0, *buf, (int64_t)st.size, st.name, err)) {
        free(*buf), *buf = NULL;
        return -1;
    }
    (*buf)[st.size] = 0, *n = (size_t)st.size;
    return 0;
}

/* "<archive>/byteorder", when there is one, must say "little". */
static int check_byteorder(pt_zip *z, yp_err *err) {
    char name[300];
    snprintf(name, sizeof name, "%sbyteorder", z->prefix);
    zip_int64_t i = zip_name_locate(z->z, name, ZIP_FL_ENC_RAW);
    if (i < 0) return 0; /* torch before 2.1 writes none: the host's order, little endian in practice */
    unsigned char *b;
    size_t n;
    if (read_entry(z, (zip_uint64_t)i, 16, &b, &n, err)) return -1;
    int little = n == 6 && !memcmp(b, "little", 6);
    free(b);
    if (!little)
        return yp_err_set(err, "%s: a big-endian archive (%s); re-save it with torch.save on a little-endian machine",
                          z->path, name);
    return 0;
}

pt_zip *pt_zip_open(const char *path, yp_err *err) {
    int64_t size = 0;
    int fd = yp_file_open(path, "a .pt file", YP_PT_MAX_FILE, &size, err);
    if (fd < 0) return NULL;
    unsigned char head[PT_HEAD_BYTES] = {0};
    ssize_t got = pread(fd, head, sizeof head, 0);
    if (got < 4 || memcmp(head, "PK\3\4", 4)) {
        close(fd);
        not_zip(path, head, got > 0 ? (size_t)got : 0, err);
        return NULL;
    }
    int code = 0;
    zip_t *za = zip_fdopen(fd, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, code);
        yp_err_set(err, "%s: not a readable zip archive (%s); %s", path, zip_error_strerror(&ze), DAMAGED);
        zip_error_fini(&ze);
        close(fd);
        return NULL;
    }
    pt_zip *z = calloc(1, sizeof *z);
    if (!z) {
        zip_discard(za);
        yp_err_set(err, "%s: out of memory", path);
        return NULL;
    }
    z->z = za, z->path = path;
    if (find_pickle(z, err) || check_byteorder(z, err)) {
        pt_zip_close(z);
        return NULL;
    }
    return z;
}

void pt_zip_close(pt_zip *z) {
    if (!z) return;
    zip_discard(z->z); /* read only: nothing to write back */
    free(z);
}

int pt_zip_read_pickle(pt_zip *z, unsigned char **buf, size_t *n, yp_err *err) {
    return read_entry(z, z->pkl, YP_PT_MAX_PICKLE, buf, n, err);
}

int pt_zip_storage(pt_zip *z, const char *key, size_t key_len, int64_t *index, int64_t *bytes, yp_err *err) {
    char name[512];
    if (memchr(key, 0, key_len) || key_len > 200)
        return yp_err_set(err, "%s: a storage key with a NUL byte or longer than 200 bytes; re-save it with torch.save",
                          z->path);
    snprintf(name, sizeof name, "%sdata/%.*s", z->prefix, (int)key_len, key);
    zip_int64_t i = zip_name_locate(z->z, name, ZIP_FL_ENC_RAW);
    zip_stat_t st;
    if (i < 0)
        return yp_err_set(err, "%s: the pickle names storage %s, which the archive lacks; %s", z->path, name, DAMAGED);
    if (zip_stat_index(z->z, (zip_uint64_t)i, 0, &st) || !(st.valid & ZIP_STAT_SIZE) ||
        st.size > (zip_uint64_t)INT64_MAX)
        return yp_err_set(err, "%s: %s: %s", z->path, name, DAMAGED);
    *index = i, *bytes = (int64_t)st.size;
    return 0;
}

/* Skips n bytes of f by reading them (for a compressed entry, which cannot seek). */
static int skip(zip_file_t *f, int64_t n) {
    char buf[65536];
    while (n > 0) {
        zip_int64_t got = zip_fread(f, buf, (zip_uint64_t)(n < (int64_t)sizeof buf ? n : (int64_t)sizeof buf));
        if (got <= 0) return -1;
        n -= got;
    }
    return 0;
}

int pt_zip_read(pt_zip *z, int64_t index, int64_t begin, void *dst, int64_t n, const char *name, yp_err *err) {
    zip_file_t *f = zip_fopen_index(z->z, (zip_uint64_t)index, 0);
    if (!f)
        return yp_err_set(err, "%s: %s: cannot read its record (%s); %s", z->path, name, zip_strerror(z->z), DAMAGED);
    zip_stat_t st;
    int stored = !zip_stat_index(z->z, (zip_uint64_t)index, 0, &st) && (st.valid & ZIP_STAT_COMP_METHOD) &&
                 st.comp_method == ZIP_CM_STORE; /* torch.save's records are; only those can seek */
    int rc = begin > 0 && (stored ? zip_fseek(f, begin, SEEK_SET) : skip(f, begin)) ? -1 : 0;
    for (int64_t at = 0; !rc && at < n;) {
        zip_int64_t got = zip_fread(f, (char *)dst + at, (zip_uint64_t)(n - at));
        if (got <= 0)
            rc = -1;
        else
            at += got;
    }
    if (rc) yp_err_set(err, "%s: %s: reading its record: %s; %s", z->path, name, zip_file_strerror(f), DAMAGED);
    zip_fclose(f);
    return rc;
}
