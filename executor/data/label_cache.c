/* label_cache.c - yp_labels_load_split (yp_label_cache.h): one split's labels through a cache
 * file beside them. Collects the images (dataset.c), keys them by their files' sizes and times,
 * reuses a cache that passes every check or parses the label files (dataset_labels.c) and
 * rewrites it atomically (yp_atomic_file.h), then adds up the counts as yp_dataset_scan does. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset_internal.h"
#include "yp_atomic_file.h"
#include "yp_label_cache.h"
#include "yp_file.h"

#define HEADER 640
#define MAGIC "YPLABEL"
#define BOM 0x01020304u
#define MAX_CACHE ((int64_t)1 << 40) /* larger is not ours */

enum { ST_LABELLED, ST_MISSING, ST_CORRUPT };
enum { C_FOUND, C_MISSING, C_EMPTY, C_CORRUPT, C_DUP, C_COUNT };

typedef struct {
    int64_t n_rows, n_dup;
    int32_t status, path_len;
} entry;
_Static_assert(sizeof(entry) == 24, "a cache entry is 24 bytes");

/* The parsed labels of every collected image, as the cache holds them. */
typedef struct {
    entry *e;
    int64_t n;
    float *rows;
    int64_t n_rows, rows_cap;
    int64_t counts[C_COUNT];
    char first_bad[512];
} table;

static void table_free(table *t) {
    free(t->e);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#define FNV_START 0xcbf29ce484222325ull

/* Hashes path's existence, size and modification time. */
static uint64_t hash_stat(uint64_t h, const char *path) {
    struct stat sb;
    int64_t v[3] = {0, 0, 0};
    if (path && stat(path, &sb) == 0)
        v[0] = 1, v[1] = (int64_t)sb.st_size, v[2] = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    return fnv(h, v, sizeof v);
}

static uint64_t cache_key(const yp_ds_paths *images, int nc) {
    uint64_t h = fnv(FNV_START, &nc, sizeof nc);
    char label[YP_DS_PATH_MAX];
    for (int64_t i = 0; i < images->n; i++) {
        const char *image = yp_ds_paths_at(images, i);
        h = fnv(h, image, strlen(image) + 1);
        h = hash_stat(h, image);
        h = hash_stat(h, yp_ds_label_path(image, label, sizeof label) == 0 ? label : NULL);
    }
    return h;
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* The cache beside the first image's label folder F (yp_label_cache.h): F.cache when F's name
 * starts with the split's (labels/val -> labels/val.cache) or, for train, with neither val nor
 * test (labels/train2017, labels); else F.SPLIT.cache. */
static int cache_path_of(const yp_ds_paths *images, const char *split, char *out, size_t size) {
    char label[YP_DS_PATH_MAX];
    if (yp_ds_label_path(yp_ds_paths_at(images, 0), label, sizeof label)) return -1;
    char *slash = strrchr(label, '/');
    if (!slash || slash == label) return -1;
    *slash = '\0';
    slash = strrchr(label, '/');
    const char *name = slash ? slash + 1 : label;
    int own = starts_with(name, split) ||
              (strcmp(split, "train") == 0 && !starts_with(name, "val") && !starts_with(name, "test"));
    int n = own ? snprintf(out, size, "%s.cache", label) : snprintf(out, size, "%s.%s.cache", label, split);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* Appends n rows to t. Returns 0 or -1 (OOM). */
static int add_rows(table *t, const float *rows, int64_t n) {
    if (t->n_rows + n > t->rows_cap) {
        int64_t cap = t->rows_cap ? 2 * t->rows_cap : 1024;
        while (cap < t->n_rows + n) cap *= 2;
        float *r = realloc(t->rows, (size_t)cap * 5 * sizeof *r);
        if (!r) return -1;
        t->rows = r, t->rows_cap = cap;
    }
    memcpy(t->rows + 5 * t->n_rows, rows, (size_t)n * 5 * sizeof *rows);
    t->n_rows += n;
    return 0;
}

/* Parses every image's label file into t. Returns 0 or -1 (OOM). */
static int build(const yp_ds_paths *images, const yp_dataset_stats *st, table *t, int64_t *reads) {
    yp_ds_scratch s = {0};
    char problem[512];
    int rc = 0;
    t->n = images->n;
    t->e = calloc((size_t)images->n, sizeof *t->e);
    if (!t->e) return -1;
    for (int64_t i = 0; i < images->n && rc == 0; i++) {
        yp_ds_label_file lf;
        entry *e = t->e + i;
        int r = yp_ds_read_image_labels(yp_ds_paths_at(images, i), st, &s, &lf, problem, sizeof problem);
        e->path_len = (int32_t)strlen(yp_ds_paths_at(images, i));
        *reads += r > 0 || lf.found;
        if (r < 0) rc = -1;
        else if (r > 0) {
            e->status = ST_CORRUPT;
            if (t->counts[C_CORRUPT]++ == 0) snprintf(t->first_bad, sizeof t->first_bad, "%s", problem);
        } else {
            e->status = lf.found ? ST_LABELLED : ST_MISSING;
            e->n_rows = lf.n_rows, e->n_dup = lf.n_dup;
            t->counts[lf.found ? C_FOUND : C_MISSING]++;
            t->counts[C_EMPTY] += lf.found && lf.n_rows == 0;
            t->counts[C_DUP] += lf.n_dup;
            rc = add_rows(t, s.rows, lf.n_rows);
        }
    }
    yp_ds_scratch_free(&s);
    return rc;
}

/* ---- writing ---- */

static uint64_t payload_sum(const table *t, const yp_ds_paths *images) {
    uint64_t h = fnv(FNV_START, t->e, (size_t)t->n * sizeof *t->e);
    for (int64_t i = 0; i < images->n; i++) h = fnv(h, yp_ds_paths_at(images, i), (size_t)t->e[i].path_len + 1);
    return fnv(h, t->rows, (size_t)t->n_rows * 5 * sizeof *t->rows);
}

static int64_t path_bytes(const yp_ds_paths *images) {
    int64_t n = 0;
    for (int64_t i = 0; i < images->n; i++) n += (int64_t)strlen(yp_ds_paths_at(images, i)) + 1;
    return n;
}

static void make_header(const table *t, const yp_ds_paths *images, uint64_t key, int nc, unsigned char *h) {
    uint32_t version = YP_LABEL_CACHE_VERSION, bom = BOM;
    uint64_t sum = payload_sum(t, images);
    int64_t pb = path_bytes(images);
    int32_t nc32 = nc;
    memset(h, 0, HEADER);
    memcpy(h, MAGIC, sizeof MAGIC);
    memcpy(h + 8, &version, 4), memcpy(h + 12, &bom, 4);
    memcpy(h + 16, &key, 8), memcpy(h + 24, &sum, 8);
    memcpy(h + 32, &t->n, 8), memcpy(h + 40, &t->n_rows, 8), memcpy(h + 48, &pb, 8), memcpy(h + 56, &nc32, 4);
    memcpy(h + 64, t->counts, sizeof t->counts);
    memcpy(h + 104, t->first_bad, sizeof t->first_bad);
}

typedef struct {
    const table *t;
    const yp_ds_paths *images;
    const unsigned char *header;
} save_ctx;

/* yp_af_body: the header, the entries, the paths and the rows. */
static int write_cache(void *ctx, yp_af_sink *k, const char **what, yp_err *err) {
    const save_ctx *c = ctx;
    (void)err;
    *what = "writing";
    int rc = yp_af_write(k, c->header, HEADER) || yp_af_write(k, c->t->e, (size_t)c->t->n * sizeof *c->t->e);
    for (int64_t i = 0; i < c->images->n && rc == 0; i++)
        rc = yp_af_write(k, yp_ds_paths_at(c->images, i), (size_t)c->t->e[i].path_len + 1);
    if (rc == 0) rc = yp_af_write(k, c->t->rows, (size_t)c->t->n_rows * 5 * sizeof *c->t->rows);
    return rc ? -1 : 0;
}

/* Writes the cache atomically (yp_atomic_file.h). Returns 0, or -1 with note set (why it was not
 * saved). */
static int save(const char *path, const table *t, const yp_ds_paths *images, uint64_t key, int nc, char *note,
                size_t size) {
    unsigned char header[HEADER];
    yp_err err;
    make_header(t, images, key, nc, header);
    save_ctx c = {t, images, header};
    if (yp_af_save(path, write_cache, &c, NULL, &err) == 0) return 0;
    snprintf(note, size, "label cache not saved: %.500s; the labels were read", err.msg);
    return -1;
}

/* ---- reading ---- */

typedef enum { LC_OK, LC_ABSENT, LC_STALE, LC_CORRUPT } read_result;

static read_result corrupt(char *note, size_t size, const char *path, const char *why) {
    snprintf(note, size, "warning: %.500s is corrupt (%s); rebuilt from the label files", path, why);
    return LC_CORRUPT;
}

/* Row i of the rows at p (not aligned in the file: copied out). */
static int row_ok(const unsigned char *p, int64_t i, int nc) {
    float r[5];
    memcpy(r, p + (size_t)i * sizeof r, sizeof r);
    if (!(r[0] >= 0 && r[0] < (float)nc && r[0] == floorf(r[0]))) return 0;
    for (int k = 1; k < 5; k++)
        if (!(r[k] >= 0 && r[k] <= 1)) return 0;
    return 1;
}

/* Checks the entries, paths and rows of a cache read into buf against the images now. */
static read_result check_body(const unsigned char *buf, const yp_ds_paths *images, int nc, const int64_t *counts,
                              table *t, char *note, size_t size, const char *path) {
    const entry *e = (const entry *)(const void *)(buf + HEADER);
    const char *p = (const char *)(buf + HEADER + (size_t)t->n * sizeof *e);
    int64_t rows = 0, c[C_COUNT] = {0};
    for (int64_t i = 0; i < t->n; i++) {
        const char *image = yp_ds_paths_at(images, i);
        if (e[i].status < ST_LABELLED || e[i].status > ST_CORRUPT || e[i].n_rows < 0 || e[i].n_dup < 0 ||
            (e[i].status != ST_LABELLED && (e[i].n_rows || e[i].n_dup)) || e[i].n_rows > t->n_rows - rows)
            return corrupt(note, size, path, "a bad entry");
        if (e[i].path_len < 0 || (size_t)e[i].path_len != strlen(image) || memcmp(p, image, (size_t)e[i].path_len + 1))
            return corrupt(note, size, path, "its image list does not match its key");
        p += e[i].path_len + 1;
        rows += e[i].n_rows;
        c[e[i].status == ST_LABELLED ? C_FOUND : e[i].status == ST_MISSING ? C_MISSING : C_CORRUPT]++;
        c[C_EMPTY] += e[i].status == ST_LABELLED && e[i].n_rows == 0;
        c[C_DUP] += e[i].n_dup;
    }
    if (rows != t->n_rows || memcmp(c, counts, sizeof c)) return corrupt(note, size, path, "its counts do not add up");
    const unsigned char *r = (const unsigned char *)p;
    for (int64_t i = 0; i < t->n_rows; i++)
        if (!row_ok(r, i, nc)) return corrupt(note, size, path, "a label row out of range");
    t->e = malloc((size_t)t->n * sizeof *t->e + 1);
    t->rows = malloc((size_t)t->n_rows * 5 * sizeof *t->rows + 1);
    if (!t->e || !t->rows) return corrupt(note, size, path, "out of memory reading it");
    memcpy(t->e, e, (size_t)t->n * sizeof *t->e);
    memcpy(t->rows, r, (size_t)t->n_rows * 5 * sizeof *t->rows);
    memcpy(t->counts, counts, sizeof t->counts);
    return LC_OK;
}

/* Reads the header at h of a file of file_size bytes; checks version, key and sizes. */
static read_result check_header(const unsigned char *h, int64_t file_size, const yp_ds_paths *images, uint64_t key,
                                int nc, table *t, int64_t counts[C_COUNT], uint64_t *sum, char *note, size_t size,
                                const char *path) {
    uint32_t version, bom;
    uint64_t k;
    int64_t pb, total;
    int32_t nc32;
    if (memcmp(h, MAGIC, sizeof MAGIC)) return corrupt(note, size, path, "not a yoloplan label cache");
    memcpy(&version, h + 8, 4), memcpy(&bom, h + 12, 4), memcpy(&k, h + 16, 8), memcpy(sum, h + 24, 8);
    memcpy(&t->n, h + 32, 8), memcpy(&t->n_rows, h + 40, 8), memcpy(&pb, h + 48, 8), memcpy(&nc32, h + 56, 4);
    memcpy(counts, h + 64, C_COUNT * sizeof *counts);
    memcpy(t->first_bad, h + 104, sizeof t->first_bad);
    if (bom != BOM) return corrupt(note, size, path, "written on a machine of the other byte order");
    if (version != YP_LABEL_CACHE_VERSION) {
        snprintf(note, size, "%.500s has version %u, this yoloplan writes %d; rebuilt", path, version,
                 YP_LABEL_CACHE_VERSION);
        return LC_STALE;
    }
    if (k != key || nc32 != nc || t->n != images->n || pb != path_bytes(images)) {
        snprintf(note, size, "%.500s is stale (labels, images or nc changed); rebuilt", path);
        return LC_STALE;
    }
    if (t->first_bad[sizeof t->first_bad - 1] != '\0' || t->n_rows < 0 ||
        __builtin_mul_overflow(t->n, (int64_t)sizeof(entry), &total) || __builtin_add_overflow(total, pb, &total) ||
        __builtin_add_overflow(total, (int64_t)HEADER, &total) || t->n_rows > MAX_CACHE / 20 ||
        __builtin_add_overflow(total, t->n_rows * 20, &total) || total != file_size)
        return corrupt(note, size, path, "its size does not match its header");
    return LC_OK;
}

static read_result load_cache(const char *path, const yp_ds_paths *images, uint64_t key, int nc, table *t, char *note,
                              size_t size) {
    struct stat sb;
    unsigned char h[HEADER];
    int64_t counts[C_COUNT];
    uint64_t sum;
    if (stat(path, &sb) != 0) return LC_ABSENT;
    yp_err why;
    FILE *f = yp_file_fopen(path, "a label cache", MAX_CACHE, &why);
    if (!f) return corrupt(note, size, path, "not a regular file, or larger than a cache can be");
    if (fstat(fileno(f), &sb) != 0 || sb.st_size < HEADER || sb.st_size > MAX_CACHE ||
        fread(h, 1, HEADER, f) != HEADER) {
        fclose(f);
        return corrupt(note, size, path, "shorter than its header");
    }
    read_result r = check_header(h, (int64_t)sb.st_size, images, key, nc, t, counts, &sum, note, size, path);
    unsigned char *buf = r == LC_OK ? malloc((size_t)sb.st_size) : NULL;
    if (r == LC_OK && !buf) r = corrupt(note, size, path, "out of memory reading it");
    size_t body = (size_t)sb.st_size - HEADER;
    if (r == LC_OK && fread(buf + HEADER, 1, body, f) != body) r = corrupt(note, size, path, "a read error");
    if (r == LC_OK && fnv(FNV_START, buf + HEADER, body) != sum) r = corrupt(note, size, path, "its checksum fails");
    if (r == LC_OK) r = check_body(buf, images, nc, counts, t, note, size, path);
    free(buf);
    fclose(f);
    return r;
}

/* ---- the result ---- */

/* Appends one warning line to l->warnings. 0, or -1 when out of memory. */
static int warn(yp_labels *l, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int warn(yp_labels *l, size_t *cap, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    size_t len = l->warnings ? strlen(l->warnings) : 0, need = len + strlen(line) + 2;
    if (need > *cap) {
        size_t c = *cap ? *cap : 1024;
        while (c < need) c *= 2;
        char *w = realloc(l->warnings, c);
        if (!w) return -1;
        l->warnings = w, *cap = c;
    }
    snprintf(l->warnings + len, *cap - len, "%s\n", line);
    l->n_warnings++;
    return 0;
}

/* YOLOv5's per-file warnings: each dropped image's label problem (its file read again, which a
 * corrupt file only costs) and each file whose duplicate rows were removed. */
static int warnings(yp_labels *l, const table *t, const yp_ds_paths *images) {
    yp_ds_scratch s = {0};
    size_t cap = 0;
    int rc = 0;
    for (int64_t i = 0; i < t->n && !rc; i++) {
        const entry *e = t->e + i;
        const char *img = yp_ds_paths_at(images, i);
        if (e->status == ST_CORRUPT) {
            yp_ds_label_file lf;
            char problem[512] = "";
            if (yp_ds_read_image_labels(img, &l->stats, &s, &lf, problem, sizeof problem) < 0) rc = -1;
            else rc = warn(l, &cap, "%s: ignoring corrupt image/label: %s", yp_ds_shown(img, l->stats.root),
                           problem[0] ? problem : "the label file no longer reads as it did");
        } else if (e->n_dup > 0) {
            rc = warn(l, &cap, "%s: %lld duplicate labels removed", yp_ds_shown(img, l->stats.root),
                      (long long)e->n_dup);
        }
    }
    yp_ds_scratch_free(&s);
    return rc;
}

/* Fills l from t (every collected image) and adds up the counts as yp_dataset_scan does. */
static int fill(yp_labels *l, const table *t, const yp_ds_paths *images, const char *data_yaml, yp_err *err) {
    int64_t pb = path_bytes(images), off = 0, kept = 0, row = 0, files_found = 0;
    l->paths = malloc((size_t)pb);
    l->path_off = malloc((size_t)t->n * sizeof *l->path_off + 1);
    l->row_off = malloc(((size_t)t->n + 1) * sizeof *l->row_off);
    l->rows = malloc((size_t)t->n_rows * 5 * sizeof *l->rows + 1);
    if (!l->paths || !l->path_off || !l->row_off || !l->rows) return yp_err_set(err, "%s: out of memory", data_yaml);
    if (t->n_rows) memcpy(l->rows, t->rows, (size_t)t->n_rows * 5 * sizeof *l->rows);
    int first_corrupt = 1;
    for (int64_t i = 0; i < t->n; i++) {
        const entry *e = t->e + i;
        memcpy(l->paths + off, yp_ds_paths_at(images, i), (size_t)e->path_len + 1);
        files_found += e->status != ST_MISSING;
        if (e->status == ST_CORRUPT) {
            yp_ds_note_bad(&l->stats, first_corrupt ? t->first_bad : "");
            first_corrupt = 0;
        } else {
            yp_ds_label_file lf = {e->status == ST_LABELLED, e->n_rows, e->n_dup};
            yp_ds_count_image(&l->stats, &lf);
            l->path_off[kept] = off, l->row_off[kept++] = row;
            row += e->n_rows;
        }
        off += e->path_len + 1;
    }
    l->row_off[kept] = row;
    l->n = kept;
    if (yp_ds_check_counts(data_yaml, images, &l->stats, files_found, err)) return -1;
    l->stats.mean_labels = (double)l->stats.n_labels / (double)l->stats.n_images;
    if (warnings(l, t, images)) return yp_err_set(err, "%s: out of memory", data_yaml);
    return 0;
}

/* Saves the cache; a failure is added to out->note (after why it was rebuilt, if any). */
static void save_noting(yp_labels *out, const table *t, const yp_ds_paths *images, uint64_t key) {
    char why[600];
    if (save(out->cache_path, t, images, key, out->stats.nc, why, sizeof why) == 0) return;
    size_t n = strlen(out->note);
    snprintf(out->note + n, sizeof out->note - n, "%s%s", n ? "; " : "", why);
}

int yp_labels_load_split(const char *data_yaml, const char *split, yp_labels *out, yp_err *err) {
    yp_ds_paths images = {0};
    table t = {0};
    memset(out, 0, sizeof *out);
    int rc = yp_ds_find_images(data_yaml, split, &out->stats, &images, err);
    if (rc == 0 && cache_path_of(&images, split, out->cache_path, sizeof out->cache_path))
        rc = yp_err_set(err, "%s: the label folder's path is too long for its cache; shorten it", data_yaml);
    if (rc == 0) {
        uint64_t key = cache_key(&images, out->stats.nc);
        read_result r = load_cache(out->cache_path, &images, key, out->stats.nc, &t, out->note, sizeof out->note);
        out->reused = r == LC_OK;
        if (r != LC_OK) {
            table_free(&t);
            if (build(&images, &out->stats, &t, &out->label_reads))
                rc = yp_err_set(err, "%s: out of memory reading labels", data_yaml);
            else
                save_noting(out, &t, &images, key);
        }
    }
    if (rc == 0) rc = fill(out, &t, &images, data_yaml, err);
    table_free(&t);
    yp_ds_paths_free(&images);
    return rc;
}

int yp_labels_load(const char *data_yaml, yp_labels *out, yp_err *err) {
    return yp_labels_load_split(data_yaml, "train", out, err);
}

void yp_labels_free(yp_labels *l) {
    free(l->paths);
    free(l->path_off);
    free(l->row_off);
    free(l->rows);
    free(l->warnings);
    l->paths = NULL, l->path_off = l->row_off = NULL, l->rows = NULL, l->warnings = NULL, l->n_warnings = 0;
}

const char *yp_labels_image(const yp_labels *l, int64_t i) { return l->paths + l->path_off[i]; }

const float *yp_labels_rows(const yp_labels *l, int64_t i, int64_t *n) {
    *n = l->row_off[i + 1] - l->row_off[i];
    return l->rows + 5 * l->row_off[i];
}

int64_t yp_labels_max_rows(const yp_labels *l) {
    int64_t m = 0, n;
    for (int64_t i = 0; i < l->n; i++)
        if (yp_labels_rows(l, i, &n), n > m) m = n;
    return m;
}
