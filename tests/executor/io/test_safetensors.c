/* test_safetensors.c - the safetensors reader and writer (executor/io/yp_safetensors.h): a round
 * trip of every kind of tensor (scalar, empty, several dtypes) and metadata with characters JSON
 * must escape; the exact bytes of a one-tensor file (the reference implementation's layout: the
 * header padded with spaces to 8 bytes); every corruption of a header refused by a message naming
 * the file and the field (truncated file, header length, start, UTF-8, depth, trailing text,
 * dtype, shape, data_offsets, overlap, gap, dtype/shape vs bytes, overflow, truncated data,
 * trailing data, duplicates, metadata), files that are not regular (a FIFO, which must not hang,
 * a folder, a device); the writer's refusals; the atomic write: a full disk, a failing fsync and
 * a failing rename each leave the previous file byte for byte and no temporary file behind. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yp_safetensors.h"
#include "yp_test.h"
#include "yp_test_fs.h"

/* This process's scratch folder (mkdtemp): tests running side by side never share a file. */
static char dir[64] = "/tmp/yp_test_st.XXXXXX";

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* The whole of path into a malloc'd buffer, its length into *n; NULL if unreadable. */
static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) free(b), b = NULL;
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* A file of the 8-byte length `len8`, header text `hdr` and `data` zero bytes. */
static void write_raw_len(const char *path, uint64_t len8, const char *hdr, size_t data) {
    FILE *f = fopen(path, "wb");
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(len8 >> (8 * i));
    fwrite(b, 1, 8, f);
    fwrite(hdr, 1, strlen(hdr), f);
    for (size_t i = 0; i < data; i++) fputc(0, f);
    fclose(f);
}

static void write_raw(const char *path, const char *hdr, size_t data) { write_raw_len(path, strlen(hdr), hdr, data); }

/* Opening path fails, with a message naming the file and containing `want`. */
static void refused(const char *path, const char *want) {
    yp_st_file f;
    yp_err err = {{0}};
    int rc = yp_st_open(&f, path, &err);
    CHECK(rc == -1);
    CHECK_STR_HAS(err.msg, path);
    CHECK_STR_HAS(err.msg, want);
    if (rc == -1 && !strstr(err.msg, want)) fprintf(stderr, "  (message: %s)\n", err.msg);
    CHECK(strchr(err.msg, '\n') == NULL);
    yp_st_close(&f);
}

/* A header made of one tensor entry `entry` for tensor "a", then `data` bytes: refused with want. */
static void refused_entry(const char *entry, size_t data, const char *want) {
    char path[128], hdr[512];
    path_in(path, sizeof path, "bad.safetensors");
    snprintf(hdr, sizeof hdr, "{\"a\":%s}", entry);
    write_raw(path, hdr, data);
    refused(path, want);
}

static void test_round_trip(void) {
    char path[128];
    path_in(path, sizeof path, "rt.safetensors");
    float f32[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
    uint16_t f16[5] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000};
    int64_t i64 = -1234567890123LL;
    unsigned char u8[3] = {1, 2, 255};
    yp_st_tensor ts[5] = {
        {.name = "model.0.conv.weight", .dtype = YP_ST_F32, .ndim = 2, .shape = {2, 3}, .data = f32},
        {.name = "h", .dtype = YP_ST_F16, .ndim = 1, .shape = {5}, .data = f16},
        {.name = "scalar", .dtype = YP_ST_I64, .ndim = 0, .data = &i64},
        {.name = "empty", .dtype = YP_ST_BF16, .ndim = 2, .shape = {0, 7}, .data = f16},
        {.name = "bytes \"quoted\"", .dtype = YP_ST_U8, .ndim = 1, .shape = {3}, .data = u8},
    };
    const char *keys[2] = {"plan", "n\xc3\xa4me"}, *vals[2] = {"{\"a\": [1, 2]}\n\ttab \\ back", "\xe2\x82\xac"};
    yp_st_desc d = {ts, 5, keys, vals, 2, NULL, NULL};
    yp_err err = {{0}};
    REQUIRE(yp_st_save(path, &d, NULL, &err) == 0);
    yp_st_file f;
    if (yp_st_open(&f, path, &err)) fprintf(stderr, "%s\n", err.msg);
    REQUIRE(f.n == 5);
    CHECK(f.data_start % 8 == 0);
    CHECK_EQ_I64(f.file_bytes, f.data_start + 24 + 10 + 8 + 0 + 3);
    for (int i = 0; i < 5; i++) {
        int e = yp_st_find(&f, ts[i].name);
        REQUIRE(e == i); /* the header keeps the writer's order */
        CHECK(f.e[e].dtype == ts[i].dtype);
        CHECK_EQ_I64(f.e[e].ndim, ts[i].ndim);
        for (int k = 0; k < ts[i].ndim; k++) CHECK_EQ_I64(f.e[e].shape[k], ts[i].shape[k]);
        unsigned char buf[64];
        CHECK(yp_st_read(&f, e, buf, &err) == 0);
        CHECK(memcmp(buf, ts[i].data, (size_t)(f.e[e].end - f.e[e].begin)) == 0);
    }
    CHECK(yp_st_find(&f, "nope") == -1);
    CHECK(yp_st_meta(&f, "plan") && !strcmp(yp_st_meta(&f, "plan"), vals[0]));
    CHECK(yp_st_meta(&f, keys[1]) && !strcmp(yp_st_meta(&f, keys[1]), vals[1]));
    CHECK(yp_st_meta(&f, "other") == NULL);
    yp_st_close(&f);
}

/* One F32 tensor [1] = 1.0 and no metadata: the exact bytes the reference implementation writes
 * (the JSON is 54 bytes, padded to 56 with spaces). */
static void test_exact_bytes(void) {
    char path[128];
    path_in(path, sizeof path, "one.safetensors");
    float one = 1.0f;
    yp_st_tensor t = {.name = "a", .dtype = YP_ST_F32, .ndim = 1, .shape = {1}, .data = &one};
    yp_st_desc d = {&t, 1, NULL, NULL, 0, NULL, NULL};
    yp_err err;
    REQUIRE(yp_st_save(path, &d, NULL, &err) == 0);
    const char hdr[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}  ";
    unsigned char want[8 + sizeof hdr - 1 + 4] = {56, 0, 0, 0, 0, 0, 0, 0};
    memcpy(want + 8, hdr, sizeof hdr - 1);
    memcpy(want + 8 + sizeof hdr - 1, &one, 4);
    size_t n = 0;
    unsigned char *got = slurp(path, &n);
    REQUIRE(got != NULL);
    CHECK_EQ_I64(n, sizeof want);
    CHECK(n == sizeof want && memcmp(got, want, n) == 0);
    free(got);
}

static void test_corrupt_headers(void) {
    char path[128];
    path_in(path, sizeof path, "bad.safetensors");
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    FILE *f = fopen(path, "wb");
    fwrite("\x10\0\0", 1, 3, f);
    fclose(f);
    refused(path, "truncated");
    write_raw_len(path, strlen(ok) + 9, ok, 8);
    refused(path, "header length");
    write_raw_len(path, 1ull << 62, ok, 8);
    refused(path, "header length");
    write_raw(path, "[1,2]", 0);
    refused(path, "start with '{'");
    write_raw(path, "{\"a\":{\"dtype\":\"F32\",", 0);
    refused(path, "malformed JSON");
    write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8);
    refused(path, "text after the JSON");
    write_raw(path, "{\"\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    refused(path, "UTF-8");
    write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[[[[2]]]],\"data_offsets\":[0,8]}}", 8);
    refused(path, "nested deeper");
    write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16);
    refused(path, "tensor a: the name is given twice");
    write_raw(path, "{\"__metadata__\":{\"k\":1},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    refused(path, "__metadata__.k: expected a string");
    write_raw(path, "{\"__metadata__\":[],\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    refused(path, "__metadata__: expected an object");
    write_raw(path, ok, 6);
    refused(path, "truncated");
    write_raw(path, ok, 12);
    refused(path, "trailing bytes");

    refused_entry("{\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "tensor a.dtype");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}", 8, "unknown key \"x\"");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2]}", 8, "tensor a: missing data_offsets");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}", 8, "tensor a.shape");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}", 8, "tensor a.shape");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}", 8, "tensor a.shape");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.5,8]}", 8, "tensor a.data_offsets");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}", 8, "tensor a.data_offsets");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}", 8, "tensor a.data_offsets");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}", 8, "need 12 bytes");
    refused_entry("{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "dtype I64 and shape [2] need 16 bytes");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],\"data_offsets\":[0,8]}", 8, "overflows");
    refused_entry("{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}", 12, "gap");

    write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12);
    refused(path, "tensor b.data_offsets: [4, 12] overlaps tensor a's [0, 8]");
    write_raw(path, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                    "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12);
    refused(path, "tensor b.data_offsets: begins at 8");
}

/* A FIFO (opened without blocking: a plain open would wait for a writer forever), a folder and a
 * device are refused by kind. */
static void test_not_regular(void) {
    char fifo[128];
    path_in(fifo, sizeof fifo, "fifo");
    REQUIRE(mkfifo(fifo, 0600) == 0);
    refused(fifo, "a FIFO");
    unlink(fifo);
    refused(dir, "a folder");
    refused("/dev/null", "a device");
    refused("/dev/zero", "a device");
    char none[128];
    path_in(none, sizeof none, "missing.safetensors");
    refused(none, "cannot open");
}

static void test_writer_refuses(void) {
    char path[128];
    path_in(path, sizeof path, "w.safetensors");
    float v[2] = {0, 0};
    yp_st_tensor ts[2] = {{.name = "a", .dtype = YP_ST_F32, .ndim = 1, .shape = {2}, .data = v},
                          {.name = "a", .dtype = YP_ST_F32, .ndim = 1, .shape = {2}, .data = v}};
    yp_st_desc d = {ts, 2, NULL, NULL, 0, NULL, NULL};
    yp_err err;
    CHECK(yp_st_save(path, &d, NULL, &err) == -1);
    CHECK_STR_HAS(err.msg, "tensor a: the name is given twice");
    ts[1].name = "__metadata__";
    CHECK(yp_st_save(path, &d, NULL, &err) == -1);
    CHECK_STR_HAS(err.msg, "__metadata__");
    ts[1].name = "b", ts[1].shape[0] = -1;
    CHECK(yp_st_save(path, &d, NULL, &err) == -1);
    CHECK_STR_HAS(err.msg, "tensor b: bad dtype or shape");
    struct stat st;
    CHECK(stat(path, &st) != 0); /* nothing was written */
}

/* Files in the scratch folder whose name holds ".tmp.". */
static int temp_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* Tensor data from a source callback, as a checkpoint gives it. */
static int fill_source(void *ctx, int i, void *dst, size_t bytes, yp_err *err) {
    (void)err;
    memset(dst, *(int *)ctx + i, bytes);
    return 0;
}

static void test_atomic_write(void) {
    char path[128];
    path_in(path, sizeof path, "last.safetensors");
    yp_st_tensor ts[2] = {{.name = "w", .dtype = YP_ST_F32, .ndim = 2, .shape = {64, 64}},
                          {.name = "b", .dtype = YP_ST_F32, .ndim = 1, .shape = {64}}};
    int seed = 1;
    yp_st_desc d = {ts, 2, NULL, NULL, 0, fill_source, &seed};
    yp_err err;
    REQUIRE(yp_st_save(path, &d, NULL, &err) == 0);
    size_t n0 = 0, n1 = 0;
    unsigned char *old = slurp(path, &n0);
    REQUIRE(old != NULL);
    seed = 7; /* the new file would differ in every data byte */
    const yp_st_faults faults[3] = {{1000, YP_ST_FAIL_NONE}, {-1, YP_ST_FAIL_FSYNC}, {-1, YP_ST_FAIL_RENAME}};
    const char *step[3] = {"writing the data failed: No space left on device (injected)", "fsync", "renaming"};
    for (int k = 0; k < 3; k++) {
        CHECK(yp_st_save(path, &d, &faults[k], &err) == -1);
        CHECK_STR_HAS(err.msg, path);
        CHECK_STR_HAS(err.msg, step[k]);
        CHECK_STR_HAS(err.msg, "the previous file is intact");
        unsigned char *now = slurp(path, &n1);
        CHECK(now && n1 == n0 && memcmp(now, old, n0) == 0);
        free(now);
        CHECK_EQ_I64(temp_files(), 0);
    }
    yp_st_file f;
    CHECK(yp_st_open(&f, path, &err) == 0); /* still a valid file */
    yp_st_close(&f);
    /* a failure on a path with no file before leaves none */
    char fresh[128];
    path_in(fresh, sizeof fresh, "fresh.safetensors");
    CHECK(yp_st_save(fresh, &d, &faults[2], &err) == -1);
    CHECK_STR_HAS(err.msg, "no file was written");
    struct stat st;
    CHECK(stat(fresh, &st) != 0);
    CHECK_EQ_I64(temp_files(), 0);
    /* without a fault the new data replaces the old */
    CHECK(yp_st_save(path, &d, NULL, &err) == 0);
    unsigned char *now = slurp(path, &n1);
    CHECK(now && n1 == n0 && memcmp(now, old, n0) != 0);
    CHECK(now && now[n1 - 1] == 8); /* tensor 1 filled with seed + 1 */
    free(now), free(old);
    /* a folder that does not exist: no temporary file can be made */
    char nodir[160];
    snprintf(nodir, sizeof nodir, "%s/no/such/x.safetensors", dir);
    CHECK(yp_st_save(nodir, &d, NULL, &err) == -1);
    CHECK_STR_HAS(err.msg, "cannot create a temporary file");
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("test_safetensors: mkdtemp");
        return 1;
    }
    YP_RUN(test_round_trip);
    YP_RUN(test_exact_bytes);
    YP_RUN(test_corrupt_headers);
    YP_RUN(test_not_regular);
    YP_RUN(test_writer_refuses);
    YP_RUN(test_atomic_write);
    yp_test_remove_tree(dir);
    return yp_test_summary();
}
