/* label_cache.c - yp_labels_load_split (yp_label_cache.h): one split's labels through a cache
 * file beside them. Collects the images (dataset.c), keys them by their files' sizes and times,
 * reuses a cache that passes every check or parses the label files (dataset_labels.c), checks
 * that every image decodes (dataset_verify.c) and rewrites it atomically (yp_atomic_file.h), then
 * adds up the counts and YOLOv5's per-file warnings (the first few, then how many more). */
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

enum { ST_LABELLED, ST_MISSING, ST_CORRUPT, ST_BAD_IMAGE }; /* CORRUPT: the label file; both dropped */
enum { F_NO_EOI = 1 };                                        /* a JPEG kept without its end marker */
enum { C_FOUND, C_MISSING, C_EMPTY, C_CORRUPT, C_DUP, C_COUNT };
#define MIN_SIDE 10
#define MAX_NOTE 1024

typedef struct {
    int64_t n_rows, n_dup;
    int32_t status, path_len;
    int32_t w, h;     /* the image's size (0 for a bad image) */
    int32_t note_len; /* its note's length (the reason it was dropped, or a kept image's warning) */
    int32_t flags;
} entry;
_Static_assert(sizeof(entry) == 40, "a cache entry is 40 bytes");

/* The parsed labels and image checks of every collected image, as the cache holds them. */
typedef struct {
    entry *e;
    int64_t n;
    float *rows;
    int64_t n_rows, rows_cap;
    int64_t counts[C_COUNT];
    char first_bad[512];
    char *notes;     /* every entry's note, NUL-terminated, in entry order ("" when none) */
    int64_t notes_len;
} table;

static void table_free(table *t) {
    free(t->e);
    free(t->rows);
    free(t->notes);
    memset(t, 0, sizeof *t);
}

/* The counts of t's entries (YOLOv5's results: found, missing, empty, corrupt; and duplicates). */
static void count_entries(const entry *e, int64_t n, int64_t c[C_COUNT]) {
    memset(c, 0, C_COUNT * sizeof *c);
    for (int64_t i = 0; i < n; i++) {
        c[e[i].status == ST_LABELLED ? C_FOUND : e[i].status == ST_MISSING ? C_MISSING : C_CORRUPT]++;
        c[C_EMPTY] += e[i].status == ST_LABELLED && e[i].n_rows == 0;
        c[C_DUP] += e[i].n_dup;
    }
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
    if (n == 0) return 0; /* an empty label file: nothing to copy (rows may be NULL) */
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

/* Label file of image i into t's entry i and rows; *refused set when a class is >= nc (the
 * problem is the entry's note, as for any bad file). Returns 0 or -1 (OOM). */
static int read_one(const yp_ds_paths *images, int64_t i, const yp_dataset_stats *st, yp_ds_scratch *s, table *t,
                    char **notes, unsigned char *refused, int64_t *reads) {
    yp_ds_label_file lf;
    char problem[512];
    entry *e = t->e + i;
    e->path_len = (int32_t)strlen(yp_ds_paths_at(images, i));
    int r = yp_ds_read_image_labels(yp_ds_paths_at(images, i), st, s, &lf, problem, sizeof problem);
    *reads += r > 0 || lf.found;
    if (r < 0) return -1;
    *refused = r == 2;
    if (r > 0) {
        e->status = ST_CORRUPT;
        return (notes[i] = strdup(problem)) ? 0 : -1;
    }
    e->status = lf.found ? ST_LABELLED : ST_MISSING;
    e->n_rows = lf.n_rows, e->n_dup = lf.n_dup;
    return add_rows(t, s->rows, lf.n_rows);
}

/* Takes image i's check into entry i: a bad image drops its rows, which start at row_start (the
 * rows after them move up). */
static void take_check(table *t, int64_t i, int64_t row_start, yp_ds_image_check *c, char **notes) {
    entry *e = t->e + i;
    e->w = c->w, e->h = c->h, e->flags = c->no_eoi ? F_NO_EOI : 0;
    if (!c->ok) {
        memmove(t->rows + 5 * row_start, t->rows + 5 * (row_start + e->n_rows),
                (size_t)(t->n_rows - row_start - e->n_rows) * 5 * sizeof *t->rows);
        t->n_rows -= e->n_rows;
        e->status = ST_BAD_IMAGE, e->n_rows = 0, e->n_dup = 0;
    }
    if (c->note && (!c->ok || !notes[i])) { /* a bad image's reason replaces a label's: YOLOv5 checks it first */
        free(notes[i]);
        notes[i] = c->note, c->note = NULL;
    }
}

/* The notes into one block t->notes, and the first dropped image's problem into t->first_bad. */
static int join_notes(const yp_ds_paths *images, const yp_dataset_stats *st, table *t, char **notes) {
    int64_t total = 0;
    for (int64_t i = 0; i < t->n; i++) {
        size_t len = notes[i] ? strlen(notes[i]) : 0;
        t->e[i].note_len = (int32_t)(len < MAX_NOTE ? len : MAX_NOTE);
        total += t->e[i].note_len + 1;
    }
    if (!(t->notes = malloc((size_t)total))) return -1;
    t->notes_len = total;
    char *p = t->notes;
    for (int64_t i = 0; i < t->n; i++) {
        const entry *e = t->e + i;
        if (e->note_len) memcpy(p, notes[i], (size_t)e->note_len);
        p[e->note_len] = '\0';
        if (!t->first_bad[0] && e->status == ST_BAD_IMAGE)
            snprintf(t->first_bad, sizeof t->first_bad, "%s: %s", yp_ds_shown(yp_ds_paths_at(images, i), st->root),
                     p);
        else if (!t->first_bad[0] && e->status == ST_CORRUPT)
            snprintf(t->first_bad, sizeof t->first_bad, "%s", p);
        p += e->note_len + 1;
    }
    return 0;
}

/* Checks the images which[0..n) (ascending) and takes the results into t. 0, or -1 (OOM). */
static int check_images(const yp_ds_paths *images, const int64_t *which, int64_t n, table *t, char **notes,
                        yp_ds_image_check *checks, int64_t *decoded) {
    if (n == 0) return 0;
    if (yp_ds_verify_images(images, which, n, checks)) return -1;
    *decoded += n;
    int64_t row = 0, k = 0;
    for (int64_t i = 0; i < t->n; i++) { /* the rows are entry after entry: entry i's start at `row` */
        if (k < n && which[k] == i) take_check(t, i, row, &checks[i], notes), k++;
        row += t->e[i].n_rows;
    }
    return 0;
}

/* Parses every image's label file into t and checks that every image decodes. Returns 0, -1
 * (OOM), or -2 with refusal set: a class >= nc in the label file of an image that decodes (the
 * first in image order; only the images of refused files before it are decoded, so that a wrong
 * nc is said at once). */
static int build(const yp_ds_paths *images, const yp_dataset_stats *st, table *t, int64_t *reads, int64_t *decoded,
                 char *refusal, size_t size) {
    yp_ds_scratch s = {0};
    int64_t n = images->n, n_todo = 0;
    int rc = 0;
    t->n = n;
    t->e = calloc((size_t)n, sizeof *t->e);
    char **notes = calloc((size_t)n, sizeof *notes);
    yp_ds_image_check *checks = calloc((size_t)n, sizeof *checks);
    int64_t *todo = malloc((size_t)n * sizeof *todo);
    unsigned char *refused = calloc((size_t)n, 1);
    if (!t->e || !notes || !checks || !todo || !refused) rc = -1;
    for (int64_t i = 0; i < n && rc == 0; i++) /* the labels first: cheap */
        rc = read_one(images, i, st, &s, t, notes, &refused[i], reads);
    for (int64_t i = 0; i < n && rc == 0; i++) {
        if (!refused[i]) continue;
        if (check_images(images, &i, 1, t, notes, checks, decoded)) rc = -1;
        else if (t->e[i].status != ST_BAD_IMAGE) rc = -2, snprintf(refusal, size, "%s", notes[i]);
    }
    for (int64_t i = 0; i < n && rc == 0; i++)
        if (!refused[i]) todo[n_todo++] = i;
    if (rc == 0 && check_images(images, todo, n_todo, t, notes, checks, decoded)) rc = -1;
    if (rc == 0 && join_notes(images, st, t, notes)) rc = -1;
    if (rc == 0) count_entries(t->e, t->n, t->counts);
    for (int64_t i = 0; notes && i < n; i++) free(notes[i]);
    for (int64_t i = 0; checks && i < n; i++) free(checks[i].note);
    free(notes), free(checks), free(todo), free(refused);
    yp_ds_scratch_free(&s);
    return rc;
}

/* ---- writing ---- */

static uint64_t payload_sum(const table *t, const yp_ds_paths *images) {
    uint64_t h = fnv(FNV_START, t->e, (size_t)t->n * sizeof *t->e);
    for (int64_t i = 0; i < images->n; i++) h = fnv(h, yp_ds_paths_at(images, i), (size_t)t->e[i].path_len + 1);
    h = fnv(h, t->rows, (size_t)t->n_rows * 5 * sizeof *t->rows);
    return fnv(h, t->notes, (size_t)t->notes_len);
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
    memcpy(h + 616, &t->notes_len, 8);
}

typedef struct {
    const table *t;
    const yp_ds_paths *images;
    const unsigned char *header;
} save_ctx;

/* yp_af_body: the header, the entries, the paths, the rows and the notes. */
static int write_cache(void *ctx, yp_af_sink *k, const char **what, yp_err *err) {
    const save_ctx *c = ctx;
    (void)err;
    *what = "writing";
    int rc = yp_af_write(k, c->header, HEADER) || yp_af_write(k, c->t->e, (size_t)c->t->n * sizeof *c->t->e);
    for (int64_t i = 0; i < c->images->n && rc == 0; i++)
        rc = yp_af_write(k, yp_ds_paths_at(c->images, i), (size_t)c->t->e[i].path_len + 1);
    if (rc == 0) rc = yp_af_write(k, c->t->rows, (size_t)c->t->n_rows * 5 * sizeof *c->t->rows);
    if (rc == 0) rc = yp_af_write(k, c->t->notes, (size_t)c->t->notes_len);
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
    int64_t rows = 0, notes = 0, c[C_COUNT];
    for (int64_t i = 0; i < t->n; i++) {
        const char *image = yp_ds_paths_at(images, i);
        int bad_image = e[i].status == ST_BAD_IMAGE, dropped = bad_image || e[i].status == ST_CORRUPT;
        if (e[i].status < ST_LABELLED || e[i].status > ST_BAD_IMAGE || e[i].n_rows < 0 || e[i].n_dup < 0 ||
            (e[i].status != ST_LABELLED && (e[i].n_rows || e[i].n_dup)) || e[i].n_rows > t->n_rows - rows)
            return corrupt(note, size, path, "a bad entry");
        int sized = e[i].w >= MIN_SIDE && e[i].h >= MIN_SIDE && !(e[i].flags & ~F_NO_EOI);
        if (bad_image ? e[i].w || e[i].h || e[i].flags : !sized)
            return corrupt(note, size, path, "a bad image record");
        if (e[i].note_len < 0 || e[i].note_len > MAX_NOTE || (dropped && e[i].note_len == 0) ||
            e[i].note_len > t->notes_len - notes - 1)
            return corrupt(note, size, path, "a bad note");
        if (e[i].path_len < 0 || (size_t)e[i].path_len != strlen(image) || memcmp(p, image, (size_t)e[i].path_len + 1))
            return corrupt(note, size, path, "its image list does not match its key");
        p += e[i].path_len + 1;
        rows += e[i].n_rows, notes += e[i].note_len + 1;
    }
    count_entries(e, t->n, c);
    if (rows != t->n_rows || notes != t->notes_len || memcmp(c, counts, sizeof c))
        return corrupt(note, size, path, "its counts do not add up");
    const unsigned char *r = (const unsigned char *)p;
    for (int64_t i = 0; i < t->n_rows; i++)
        if (!row_ok(r, i, nc)) return corrupt(note, size, path, "a label row out of range");
    const char *q = (const char *)(r + (size_t)t->n_rows * 20);
    for (int64_t i = 0, off = 0; i < t->n; off += e[i].note_len + 1, i++)
        if (strnlen(q + off, (size_t)e[i].note_len + 1) != (size_t)e[i].note_len)
            return corrupt(note, size, path, "a bad note");
    t->e = malloc((size_t)t->n * sizeof *t->e + 1);
    t->rows = malloc((size_t)t->n_rows * 5 * sizeof *t->rows + 1);
    t->notes = malloc((size_t)t->notes_len);
    if (!t->e || !t->rows || !t->notes) return corrupt(note, size, path, "out of memory reading it");
    memcpy(t->e, e, (size_t)t->n * sizeof *t->e);
    memcpy(t->rows, r, (size_t)t->n_rows * 5 * sizeof *t->rows);
    memcpy(t->notes, q, (size_t)t->notes_len);
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
    memcpy(&t->notes_len, h + 616, 8);
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
    if (t->first_bad[sizeof t->first_bad - 1] != '\0' || t->n_rows < 0 || t->notes_len < t->n ||
        __builtin_mul_overflow(t->n, (int64_t)sizeof(entry), &total) || __builtin_add_overflow(total, pb, &total) ||
        __builtin_add_overflow(total, (int64_t)HEADER, &total) || t->n_rows > MAX_CACHE / 20 ||
        __builtin_add_overflow(total, t->n_rows * 20, &total) || __builtin_add_overflow(total, t->notes_len, &total) ||
        total != file_size)
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

/* Appends line and a newline to l->warnings (*cap bytes). 0, or -1 when out of memory. */
static int append_line(yp_labels *l, size_t *cap, const char *line) {
    size_t len = l->warnings ? strlen(l->warnings) : 0, need = len + strlen(line) + 2;
    if (need > *cap) {
        size_t c = *cap ? *cap : 1024;
        while (c < need) c *= 2;
        char *w = realloc(l->warnings, c);
        if (!w) return -1;
        l->warnings = w, *cap = c;
    }
    snprintf(l->warnings + len, *cap - len, "%s\n", line);
    return 0;
}

/* Counts one warning in l->n_warnings and appends it while fewer than YP_LABELS_WARNINGS_SHOWN
 * are there. 0, or -1 when out of memory. */
static int warn(yp_labels *l, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int warn(yp_labels *l, size_t *cap, const char *fmt, ...) {
    char line[1536];
    if (l->n_warnings++ >= YP_LABELS_WARNINGS_SHOWN) return 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    return n < 0 ? -1 : append_line(l, cap, line);
}

/* YOLOv5's per-file warnings, from the entries' notes (nothing is read again): each dropped image
 * (its image's or its label file's problem), each JPEG kept without its end marker, each file
 * whose duplicate rows were removed; the first YP_LABELS_WARNINGS_SHOWN, then how many more. */
static int warnings(yp_labels *l, const table *t, const yp_ds_paths *images) {
    size_t cap = 0;
    int rc = 0;
    const char *note = t->notes;
    for (int64_t i = 0; i < t->n && !rc; note += t->e[i].note_len + 1, i++) {
        const entry *e = t->e + i;
        const char *img = yp_ds_shown(yp_ds_paths_at(images, i), l->stats.root);
        if (e->status == ST_CORRUPT || e->status == ST_BAD_IMAGE)
            rc = warn(l, &cap, "%s: ignoring corrupt image/label: %s", img, note);
        else if (e->flags & F_NO_EOI)
            rc = warn(l, &cap, "%s: %s", img, note);
        if (!rc && e->n_dup > 0) rc = warn(l, &cap, "%s: %lld duplicate labels removed", img, (long long)e->n_dup);
    }
    if (!rc && l->n_warnings > YP_LABELS_WARNINGS_SHOWN) {
        char line[96];
        int64_t more = l->n_warnings - YP_LABELS_WARNINGS_SHOWN;
        snprintf(line, sizeof line, "... and %lld more warning%s like these", (long long)more, more == 1 ? "" : "s");
        rc = append_line(l, &cap, line);
    }
    return rc;
}

/* Fills l from t (every collected image) and adds up the counts as yp_dataset_scan does. */
static int fill(yp_labels *l, const table *t, const yp_ds_paths *images, const char *data_yaml, yp_err *err) {
    int64_t pb = path_bytes(images), off = 0, kept = 0, row = 0, files_found = 0;
    l->paths = malloc((size_t)pb);
    l->path_off = malloc((size_t)t->n * sizeof *l->path_off + 1);
    l->row_off = malloc(((size_t)t->n + 1) * sizeof *l->row_off);
    l->rows = malloc((size_t)t->n_rows * 5 * sizeof *l->rows + 1);
    l->wh = malloc((size_t)t->n * 2 * sizeof *l->wh + 1);
    if (!l->paths || !l->path_off || !l->row_off || !l->rows || !l->wh)
        return yp_err_set(err, "%s: out of memory", data_yaml);
    if (t->n_rows) memcpy(l->rows, t->rows, (size_t)t->n_rows * 5 * sizeof *l->rows);
    int first_corrupt = 1;
    for (int64_t i = 0; i < t->n; i++) {
        const entry *e = t->e + i;
        memcpy(l->paths + off, yp_ds_paths_at(images, i), (size_t)e->path_len + 1);
        files_found += e->status == ST_LABELLED || e->status == ST_CORRUPT; /* a bad image's is not read */
        if (e->status == ST_CORRUPT || e->status == ST_BAD_IMAGE) {
            yp_ds_note_bad(&l->stats, first_corrupt ? t->first_bad : "");
            first_corrupt = 0;
        } else {
            yp_ds_label_file lf = {e->status == ST_LABELLED, e->n_rows, e->n_dup};
            yp_ds_count_image(&l->stats, &lf);
            l->wh[2 * kept] = e->w, l->wh[2 * kept + 1] = e->h;
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
            char refusal[512];
            int b = build(&images, &out->stats, &t, &out->label_reads, &out->image_checks, refusal, sizeof refusal);
            if (b == -2) /* train.py's assertion, with the file and line that make it */
                rc = yp_err_set(err, "%s in %s. Possible class labels are 0-%d; fix the label, or nc/names in %s",
                                refusal, data_yaml, out->stats.nc - 1, data_yaml);
            else if (b)
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
    free(l->wh);
    l->paths = NULL, l->path_off = l->row_off = NULL, l->rows = NULL, l->warnings = NULL, l->n_warnings = 0;
    l->wh = NULL;
}

void yp_labels_size(const yp_labels *l, int64_t i, int *w, int *h) { *w = l->wh[2 * i], *h = l->wh[2 * i + 1]; }

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
