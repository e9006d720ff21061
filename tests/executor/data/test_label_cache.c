/* test_label_cache.c - the label cache (executor/data/yp_label_cache.h) on a small dataset made in a
 * temporary folder: written on the first load, reused without opening a label file or decoding an
 * image, rebuilt when a label file changes, when the version differs (a version 1 cache) and (with
 * a warning) when the file is corrupt; the rows in YOLOv5's order and the counts equal to
 * yp_dataset_scan's. The val split: its own images and labels, its own cache beside them, reused,
 * never the train cache even when the splits' labels share a folder; its errors (no val key, a
 * val entry that does not exist). The scan's image checks: a split of bad images (truncated,
 * empty, a FIFO, a folder named x.jpg, too small, a header bomb) dropped with YOLOv5's warning,
 * the warnings capped; a JPEG without its end marker kept; a class >= nc refused; UTF-8 byte
 * order marks. */
#define _XOPEN_SOURCE 700 /* mkdtemp, utimensat */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "yp_dataset.h"
#include "yp_image.h"
#include "yp_label_cache.h"
#include "yp_test.h"
#include "yp_test_fs.h"
#include "yp_test_run.h"

static char root[512];

static void path_of(char *out, size_t size, const char *rel) { snprintf(out, size, "%s/%s", root, rel); }

static void put(const char *rel, const char *text) {
    char p[1024];
    path_of(p, sizeof p, rel);
    FILE *f = fopen(p, "wb");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Encodes a w x h image with a pattern (png or JPEG) into *data. 0, or -1. */
static int encode(int w, int h, int png, uint8_t **data, size_t *size) {
    yp_image im;
    yp_err err;
    if (yp_image_alloc(&im, w, h, &err)) return -1;
    for (size_t i = 0; i < (size_t)w * h * 3; i++) im.rgb[i] = (uint8_t)(i * 37 % 251);
    int rc = png ? yp_image_encode_png(&im, data, size, &err) : yp_image_encode_jpeg(&im, 90, data, size, &err);
    yp_image_free(&im);
    return rc;
}

/* Writes size bytes of data to root/rel. */
static void put_bytes(const char *rel, const uint8_t *data, size_t size) {
    char p[1024];
    path_of(p, sizeof p, rel);
    FILE *f = fopen(p, "wb");
    if (!f) return;
    fwrite(data, 1, size, f);
    fclose(f);
}

/* A real w x h image at root/rel (PNG when rel ends in .png), its first keep_pct % only when
 * keep_pct > 0 (a truncated file), or its last `cut` bytes cut. */
static void put_image(const char *rel, int w, int h, size_t keep_pct, size_t cut) {
    uint8_t *data = NULL;
    size_t size = 0, n = strlen(rel);
    if (encode(w, h, n > 4 && strcmp(rel + n - 4, ".png") == 0, &data, &size)) return;
    put_bytes(rel, data, keep_pct ? size * keep_pct / 100 : size - cut);
    free(data);
}

static void make_dataset(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/yp_label_cache_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) return;
    const char *dirs[] = {"images", "images/train", "images/val", "labels", "labels/train", "labels/val",
                          "shared", "shared/images", "shared/labels"};
    for (int i = 0; i < 9; i++) {
        char p[1024];
        path_of(p, sizeof p, dirs[i]);
        mkdir(p, 0755);
    }
    put("data.yaml", "path: .\ntrain: images/train\nval: images/val\nnc: 3\n");
    put_image("images/val/v1.jpg", 32, 24, 0, 0);
    put_image("images/val/v2.png", 24, 32, 0, 0);
    put("labels/val/v1.txt", "1 0.25 0.25 0.5 0.5\n");
    put("labels/val/v2.txt", "2 0.5 0.5 0.1 0.2\n0 0.1 0.1 0.1 0.1\n");
    /* shared/: train and val as .txt lists of images in one folder (YOLOv5's autosplit) */
    put("shared/data.yaml", "train: train.txt\nval: val.txt\nnc: 3\n");
    put("shared/train.txt", "./images/s1.jpg\n./images/s2.jpg\n");
    put("shared/val.txt", "./images/s3.jpg\n");
    for (int i = 1; i <= 3; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "shared/images/s%d.jpg", i);
        put_image(rel, 16, 16, 0, 0);
        snprintf(rel, sizeof rel, "shared/labels/s%d.txt", i);
        put(rel, "0 0.5 0.5 0.5 0.5\n");
    }
    const char *images[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "images/train/%s.jpg", images[i]);
        put_image(rel, 20 + i, 16, 0, 0);
    }
    put("labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n");            /* file order kept */
    put("labels/train/b.txt", "2 0.1 0.2 0.1 0.1\n2 0.1 0.2 0.1 0.1\n0 0.9 0.9 0.05 0.05\n"); /* a duplicate */
    put("labels/train/d.txt", "");                                                    /* c: none; d: empty */
    put("labels/train/e.txt", "0 1.5 0.5 0.1 0.1\n");                                 /* x > 1: dropped */
}

static int load(yp_labels *l) {
    char yaml[1024];
    yp_err err;
    path_of(yaml, sizeof yaml, "data.yaml");
    yp_labels_free(l);
    int rc = yp_labels_load(yaml, l, &err);
    if (rc) printf("    (%s)\n", err.msg);
    return rc;
}

/* Loads split of the yaml at rel (under root); err gets the error. */
static int load_split(const char *rel, const char *split, yp_labels *l, yp_err *err) {
    char yaml[1024];
    path_of(yaml, sizeof yaml, rel);
    yp_labels_free(l);
    memset(err, 0, sizeof *err);
    int rc = yp_labels_load_split(yaml, split, l, err);
    if (rc) printf("    (%s)\n", err->msg);
    return rc;
}

static int rows_are(const yp_labels *l, int64_t i, const float *want, int64_t n) {
    int64_t got;
    const float *r = yp_labels_rows(l, i, &got);
    return got == n && (n == 0 || memcmp(r, want, (size_t)n * 5 * sizeof *r) == 0);
}

static void check_contents(const yp_labels *l) {
    static const float a[] = {0, 0.5f, 0.5f, 0.2f, 0.2f, 1, 0.3f, 0.3f, 0.1f, 0.1f};
    static const float b[] = {0, 0.9f, 0.9f, 0.05f, 0.05f, 2, 0.1f, 0.2f, 0.1f, 0.1f}; /* np.unique: sorted */
    REQUIRE(l->n == 4);
    CHECK(strstr(yp_labels_image(l, 0), "/images/train/a.jpg") && strstr(yp_labels_image(l, 3), "/d.jpg"));
    CHECK(rows_are(l, 0, a, 2) && rows_are(l, 1, b, 2) && rows_are(l, 2, NULL, 0) && rows_are(l, 3, NULL, 0));
    const yp_dataset_stats *st = &l->stats;
    CHECK(st->n_images == 4 && st->n_labelled == 3 && st->n_background == 2 && st->n_labels == 4);
    CHECK(st->n_duplicates == 1 && st->max_labels == 2 && st->n_bad_files == 1 && st->nc == 3);
    CHECK_STR_HAS(st->first_bad, "labels/train/e.txt:1: x centre 1.5 is outside 0..1");
    /* YOLOv5's per-file warnings, from the cache as from the files (nothing is read again) */
    CHECK_EQ_I64(l->n_warnings, 2);
    CHECK_STR_HAS(l->warnings, "ignoring corrupt image/label: labels/train/e.txt:1: x centre 1.5 is outside 0..1");
    int w = 0, h = 0; /* the sizes the scan decoded */
    yp_labels_size(l, 0, &w, &h);
    CHECK(w == 20 && h == 16);
    yp_labels_size(l, 3, &w, &h);
    CHECK(w == 23 && h == 16);
    CHECK_STR_HAS(l->warnings, ": 1 duplicate labels removed\n");
    /* the same counts as the scan without a cache */
    char yaml[1024];
    yp_dataset_stats scan;
    yp_err err;
    path_of(yaml, sizeof yaml, "data.yaml");
    REQUIRE(yp_dataset_scan(yaml, &scan, &err) == 0);
    CHECK(scan.n_images == st->n_images && scan.n_labelled == st->n_labelled && scan.n_labels == st->n_labels &&
          scan.n_background == st->n_background && scan.n_duplicates == st->n_duplicates &&
          scan.n_bad_files == st->n_bad_files && strcmp(scan.first_bad, st->first_bad) == 0 &&
          scan.mean_labels == st->mean_labels);
}

/* Files in labels/ other than train/, val/ and their caches (a temporary file left behind). */
static int stray_files(void) {
    char p[1024];
    path_of(p, sizeof p, "labels");
    DIR *d = opendir(p);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "train") &&
             strcmp(e->d_name, "train.cache") && strcmp(e->d_name, "val") && strcmp(e->d_name, "val.cache");
    if (d) closedir(d);
    return n;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

/* The modification time of root/rel in ns, -1 when it does not exist. */
static long long mtime_of(const char *rel) {
    char p[1024];
    struct stat sb;
    path_of(p, sizeof p, rel);
    return stat(p, &sb) ? -1 : (long long)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
}

/* Overwrites n bytes at offset of the cache file. */
static void poke(long offset, const void *bytes, size_t n) {
    char p[1024];
    path_of(p, sizeof p, "labels/train.cache");
    FILE *f = fopen(p, "r+b");
    if (!f) return;
    fseek(f, offset, SEEK_SET);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static yp_labels L;

static void test_written_then_reused(void) {
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused && L.label_reads == 4 && L.image_checks == 5 && L.note[0] == '\0');
    CHECK_STR_HAS(L.cache_path, "/labels/train.cache");
    CHECK(access(L.cache_path, F_OK) == 0 && stray_files() == 0);
    check_contents(&L);
    REQUIRE(load(&L) == 0);
    CHECK(L.reused && L.label_reads == 0 && L.image_checks == 0 && L.note[0] == '\0');
    check_contents(&L);
}

static void test_reuse_reads_no_label_file(void) {
    /* a.txt rewritten with the same size and its old time back: the key still matches, so the
     * cached rows come back, which proves the file was not read */
    char p[1024];
    struct stat sb;
    path_of(p, sizeof p, "labels/train/a.txt");
    REQUIRE(stat(p, &sb) == 0);
    put("labels/train/a.txt", "2 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n");
    struct timespec times[2] = {sb.st_atim, sb.st_mtim};
    REQUIRE(utimensat(AT_FDCWD, p, times, 0) == 0);
    REQUIRE(load(&L) == 0);
    CHECK(L.reused && L.label_reads == 0);
    check_contents(&L);
    put("labels/train/a.txt", "0 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n"); /* restored, one second later */
    times[1].tv_sec += 1;
    CHECK(utimensat(AT_FDCWD, p, times, 0) == 0);
}

static void test_rebuilt_when_a_label_changes(void) {
    REQUIRE(load(&L) == 0); /* the restore above changed a.txt's time */
    CHECK(!L.reused && L.label_reads == 4);
    CHECK_STR_HAS(L.note, "stale");
    check_contents(&L);
    put("labels/train/d.txt", "1 0.5 0.5 0.5 0.5\n");
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused);
    CHECK_STR_HAS(L.note, "stale");
    CHECK(L.stats.n_labels == 5 && L.stats.n_background == 1);
    put("labels/train/d.txt", "");
    REQUIRE(load(&L) == 0);
    check_contents(&L);
    REQUIRE(load(&L) == 0);
    CHECK(L.reused);
}

static void test_rebuilt_when_the_version_differs(void) {
    uint32_t old = 1; /* version 1 had no image checks: rebuilt, the images decoded */
    poke(8, &old, sizeof old);
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused && L.label_reads == 4 && L.image_checks == 5);
    CHECK_STR_HAS(L.note, "has version 1, this yoloplan writes 2; rebuilt");
    check_contents(&L);
    REQUIRE(load(&L) == 0);
    CHECK(L.reused);
}

static void test_corrupt_cache_rebuilt_with_a_warning(void) {
    char p[1024];
    struct stat sb;
    path_of(p, sizeof p, "labels/train.cache");
    REQUIRE(stat(p, &sb) == 0);
    unsigned char x = 0x41;
    poke((long)sb.st_size - 3, &x, 1); /* a byte of the last row: the checksum fails */
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused);
    CHECK_STR_HAS(L.note, "warning");
    CHECK_STR_HAS(L.note, "checksum");
    check_contents(&L);
    REQUIRE(truncate(p, sb.st_size - 20) == 0); /* a row short */
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused);
    CHECK_STR_HAS(L.note, "size does not match");
    put("labels/train.cache", "hello");
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused);
    CHECK_STR_HAS(L.note, "corrupt");
    check_contents(&L);
    /* a count that disagrees with the entries, checksum intact: still refused */
    int64_t found = 99;
    poke(64, &found, sizeof found);
    REQUIRE(load(&L) == 0);
    CHECK(!L.reused);
    CHECK_STR_HAS(L.note, "counts do not add up");
    REQUIRE(load(&L) == 0);
    CHECK(L.reused && stray_files() == 0);
}

static void check_val_contents(const yp_labels *l) {
    static const float v1[] = {1, 0.25f, 0.25f, 0.5f, 0.5f};
    static const float v2[] = {2, 0.5f, 0.5f, 0.1f, 0.2f, 0, 0.1f, 0.1f, 0.1f, 0.1f}; /* file order */
    REQUIRE(l->n == 2);
    CHECK(ends_with(yp_labels_image(l, 0), "/images/val/v1.jpg"));
    CHECK(ends_with(yp_labels_image(l, 1), "/images/val/v2.png"));
    CHECK(rows_are(l, 0, v1, 1) && rows_are(l, 1, v2, 2));
    CHECK(l->stats.n_images == 2 && l->stats.n_labels == 3 && l->stats.max_labels == 2 && l->stats.n_bad_files == 0);
    CHECK(l->stats.nc == 3 && l->stats.n_background == 0);
}

static void test_val_split_has_its_own_cache(void) {
    yp_err err;
    REQUIRE(load(&L) == 0); /* train first: its cache exists and is current */
    CHECK(L.reused);
    long long train_cache = mtime_of("labels/train.cache");
    REQUIRE(load_split("data.yaml", "val", &L, &err) == 0);
    CHECK(!L.reused && L.label_reads == 2 && L.note[0] == '\0');
    CHECK(ends_with(L.cache_path, "/labels/val.cache"));
    CHECK(mtime_of("labels/val.cache") >= 0 && stray_files() == 0);
    check_val_contents(&L);
    REQUIRE(load_split("data.yaml", "val", &L, &err) == 0);
    CHECK(L.reused && L.label_reads == 0 && L.note[0] == '\0');
    check_val_contents(&L);
    CHECK(mtime_of("labels/train.cache") == train_cache); /* val never wrote the train cache */
    REQUIRE(load(&L) == 0);
    CHECK(L.reused); /* and train's is still valid */
    check_contents(&L);
    REQUIRE(load_split("data.yaml", "train", &L, &err) == 0); /* the same as yp_labels_load */
    CHECK(L.reused && ends_with(L.cache_path, "/labels/train.cache"));
}

static void test_splits_sharing_a_label_folder(void) {
    yp_err err;
    char train_cache[4096];
    REQUIRE(load_split("shared/data.yaml", "train", &L, &err) == 0);
    CHECK(!L.reused && L.n == 2 && ends_with(L.cache_path, "/shared/labels.cache"));
    snprintf(train_cache, sizeof train_cache, "%s", L.cache_path);
    REQUIRE(load_split("shared/data.yaml", "val", &L, &err) == 0);
    CHECK(!L.reused && L.n == 1 && ends_with(L.cache_path, "/shared/labels.val.cache"));
    CHECK(ends_with(yp_labels_image(&L, 0), "/shared/images/s3.jpg"));
    CHECK(strcmp(train_cache, L.cache_path) != 0);
    /* alternating loads keep both caches valid */
    REQUIRE(load_split("shared/data.yaml", "train", &L, &err) == 0);
    CHECK(L.reused && L.n == 2 && L.label_reads == 0);
    REQUIRE(load_split("shared/data.yaml", "val", &L, &err) == 0);
    CHECK(L.reused && L.n == 1 && L.label_reads == 0);
}

static void test_val_split_errors(void) {
    yp_err err;
    put("noval.yaml", "path: .\ntrain: images/train\nnc: 3\n");
    CHECK(load_split("noval.yaml", "val", &L, &err) == -1);
    CHECK_STR_HAS(err.msg, "noval.yaml:1: missing key \"val\"; add val: images/val, or train with --noval");
    CHECK(strchr(err.msg, '\n') == NULL);
    put("badval.yaml", "path: .\ntrain: images/train\nval:\n  - images/val\n  - images/nope\nnc: 3\n");
    CHECK(load_split("badval.yaml", "val", &L, &err) == -1);
    CHECK_STR_HAS(err.msg, "badval.yaml:5: val: ");
    CHECK_STR_HAS(err.msg, "/images/nope does not exist; fix val or path");
    CHECK(load_split("badval.yaml", "train", &L, &err) == 0 && L.reused); /* train does not read val */
    CHECK(load_split("data.yaml", "test", &L, &err) == -1);
    CHECK_STR_HAS(err.msg, "data.yaml:1: missing key \"test\"");
    CHECK(load_split("data.yaml", "Val", &L, &err) == -1);
    CHECK_STR_HAS(err.msg, "unknown split \"Val\"");
}

/* A 16 x 16 JPEG whose frame header (SOF0) claims 60000 x 60000: refused before any pixel buffer. */
static void put_header_bomb(const char *rel) {
    uint8_t *data = NULL;
    size_t size = 0;
    if (encode(16, 16, 0, &data, &size)) return;
    for (size_t i = 0; i + 9 < size; i++)
        if (data[i] == 0xFF && data[i + 1] == 0xC0) {
            data[i + 5] = 0xEA, data[i + 6] = 0x60, data[i + 7] = 0xEA, data[i + 8] = 0x60; /* h, w = 60000 */
            break;
        }
    put_bytes(rel, data, size);
    free(data);
}

/* bad/: eight images of which three are good (one a JPEG without its end marker, one whose label
 * file starts with a UTF-8 BOM); the others are dropped, each with YOLOv5's warning. */
static void make_bad_split(void) {
    const char *dirs[] = {"bad", "bad/images", "bad/labels", "bad/images/dir.jpg"};
    for (int i = 0; i < 4; i++) {
        char p[1024];
        path_of(p, sizeof p, dirs[i]);
        mkdir(p, 0755);
    }
    put("bad/data.yaml", "train: images\nval: images\nnames: [a, b]\n");
    put_image("bad/images/a_good.jpg", 32, 32, 0, 0);
    put_image("bad/images/b_noeoi.jpg", 32, 32, 0, 2); /* no FFD9: decodes, kept with a note */
    put_image("bad/images/c_bom.png", 16, 16, 0, 0);
    put_image("bad/images/d_truncated.jpg", 64, 64, 70, 0); /* cut in its coded data */
    put("bad/images/e_empty.jpg", "");
    put_image("bad/images/f_small.png", 8, 12, 0, 0);
    put_header_bomb("bad/images/g_bomb.jpg");
    char fifo[1024];
    path_of(fifo, sizeof fifo, "bad/images/h_fifo.jpg");
    mkfifo(fifo, 0644);
    const char *names[] = {"a_good", "b_noeoi", "d_truncated", "e_empty", "f_small", "g_bomb", "h_fifo"};
    for (int i = 0; i < 7; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "bad/labels/%s.txt", names[i]);
        put(rel, "1 0.5 0.5 0.25 0.25\n");
    }
    put("bad/labels/c_bom.txt", "\xEF\xBB\xBF" "0 0.5 0.5 0.5 0.5\n1 0.2 0.2 0.1 0.1\n"); /* Notepad's UTF-8 */
    put("bad/list.txt", "\xEF\xBB\xBF" "./images/a_good.jpg\n./images/c_bom.png\n");
    put("bad/list.yaml", "train: list.txt\nval: list.txt\nnc: 2\n");
}

static void check_bad_split(const yp_labels *l) {
    const yp_dataset_stats *st = &l->stats;
    CHECK_EQ_I64(l->n, 3); /* the folder dir.jpg is searched, not taken for an image */
    CHECK(st->n_images == 3 && st->n_bad_files == 5 && st->n_labels == 4 && st->max_labels == 2);
    CHECK(ends_with(yp_labels_image(l, 0), "/a_good.jpg") && ends_with(yp_labels_image(l, 2), "/c_bom.png"));
    CHECK_STR_HAS(st->first_bad, "images/d_truncated.jpg: ");
    /* six warnings: the first five listed, then how many more */
    CHECK_EQ_I64(l->n_warnings, 6);
    CHECK_EQ_I64(yp_test_count_lines(l->warnings), 6);
    CHECK_STR_HAS(l->warnings, "images/b_noeoi.jpg: the JPEG lacks its end marker (FFD9); kept");
    CHECK_STR_HAS(l->warnings, "images/d_truncated.jpg: ignoring corrupt image/label: ");
    CHECK_STR_HAS(l->warnings, "images/e_empty.jpg: ignoring corrupt image/label: ");
    CHECK_STR_HAS(l->warnings, "images/f_small.png: ignoring corrupt image/label: image size 8x12 is under 10 pixels");
    CHECK_STR_HAS(l->warnings, "images/g_bomb.jpg: ignoring corrupt image/label: ");
    CHECK(strstr(l->warnings, "h_fifo") == NULL);
    CHECK_STR_HAS(l->warnings, "\n... and 1 more warning like these\n");
}

static void test_bad_images_dropped(void) {
    yp_err err;
    make_bad_split();
    REQUIRE(load_split("bad/data.yaml", "train", &L, &err) == 0);
    CHECK(!L.reused && L.image_checks == 8);
    check_bad_split(&L);
    REQUIRE(load_split("bad/data.yaml", "train", &L, &err) == 0); /* from the cache: nothing decoded */
    CHECK(L.reused && L.image_checks == 0 && L.label_reads == 0);
    check_bad_split(&L);
    yp_dataset_stats scan;
    char yaml[1024];
    path_of(yaml, sizeof yaml, "bad/data.yaml");
    REQUIRE(yp_dataset_scan(yaml, &scan, &err) == 0); /* the plan's scan: the same counts */
    CHECK(scan.n_images == 3 && scan.n_bad_files == 5 && scan.n_labels == 4);
    /* an image list that starts with a BOM: its first line is read as the image it names */
    REQUIRE(load_split("bad/list.yaml", "train", &L, &err) == 0);
    CHECK(L.n == 2 && L.stats.n_bad_files == 0 && L.stats.n_labels == 3);
}

static void test_class_beyond_nc_refused(void) {
    yp_err err;
    put("bad/nc1.yaml", "train: images\nval: images\nnc: 1\n");
    CHECK(load_split("bad/nc1.yaml", "train", &L, &err) == -1);
    /* a_good's class 1 (b_noeoi's decodes too; the bad images' labels do not count) */
    CHECK_STR_HAS(err.msg, "labels/a_good.txt:1: Label class 1 exceeds nc=1 in ");
    CHECK_STR_HAS(err.msg, "nc1.yaml. Possible class labels are 0-0; fix the label, or nc/names in ");
    CHECK(strchr(err.msg, '\n') == NULL);
    CHECK(L.image_checks <= 1); /* refused without decoding the whole split */
}

int main(void) {
    make_dataset();
    YP_RUN(test_written_then_reused);
    YP_RUN(test_reuse_reads_no_label_file);
    YP_RUN(test_rebuilt_when_a_label_changes);
    YP_RUN(test_rebuilt_when_the_version_differs);
    YP_RUN(test_corrupt_cache_rebuilt_with_a_warning);
    YP_RUN(test_val_split_has_its_own_cache);
    YP_RUN(test_splits_sharing_a_label_folder);
    YP_RUN(test_val_split_errors);
    YP_RUN(test_bad_images_dropped);
    YP_RUN(test_class_beyond_nc_refused);
    yp_labels_free(&L);
    yp_test_remove_tree(root);
    return yp_test_summary();
}
