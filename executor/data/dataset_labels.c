/* dataset_labels.c - reading and checking one YOLO label file (dataset_internal.h), with the
 * rules of YOLOv5's verify_image_label: rows `class cx cy w h`; if any row has more than 6
 * numbers, every row is a polygon `class x1 y1 ...` taken as its box; values >= 0, coordinates
 * <= 1 (as float32); duplicate rows removed. Added here: the class must be a whole number; one
 * >= nc refuses the dataset (train.py's "Label class C exceeds nc=N" stops the run). A file that
 * starts with a UTF-8 byte order mark is read without it (Notepad writes one); a mark elsewhere is
 * named in the problem. Problems name the file and the physical line. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dataset_internal.h"

#define MAX_LABEL_FILE (64u << 20) /* larger is not a label file */
#define MAX_FIELDS (1 << 20) /* numbers in one row (a polygon of 512k points) */
#define UTF8_BOM "\xEF\xBB\xBF"

void yp_ds_scratch_free(yp_ds_scratch *s) {
    free(s->text);
    free(s->rows);
    free(s->fields);
    free(s->sorted);
    memset(s, 0, sizeof *s);
}

/* Writes "SHOWN:LINE: message" into problem. Returns 1 (a bad file). */
static int bad(char *problem, size_t size, const char *shown, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
static int bad(char *problem, size_t size, const char *shown, int line, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(problem, size, "%s:%d: %s", shown, line, msg);
    else snprintf(problem, size, "%s: %s", shown, msg);
    return 1;
}

/* Reads the whole of f into s->text as *n_lines NUL-terminated lines (each '\n' becomes '\0').
 * Returns 0, 1 (too large or a read error: problem set) or -1 (OOM). */
static int read_all(FILE *f, const char *shown, yp_ds_scratch *s, int64_t *n_lines, char *problem, size_t size) {
    size_t len = 0;
    for (;;) {
        if (s->text_cap - len < 2) {
            size_t cap = s->text_cap ? 2 * s->text_cap : 4096;
            if (cap > MAX_LABEL_FILE + 2u) return bad(problem, size, shown, 0, "larger than 64 MiB; not a label file");
            char *t = realloc(s->text, cap);
            if (!t) return -1;
            s->text = t;
            s->text_cap = cap;
        }
        size_t got = fread(s->text + len, 1, s->text_cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    s->text[len] = '\0';
    if (len >= 3 && memcmp(s->text, UTF8_BOM, 3) == 0) { /* read as Python's utf-8-sig would */
        memmove(s->text, s->text + 3, len - 2);
        len -= 3;
    }
    *n_lines = 1;
    for (size_t i = 0; i < len; i++)
        if (s->text[i] == '\n') s->text[i] = '\0', ++*n_lines;
    if (ferror(f)) return bad(problem, size, shown, 0, "cannot read: %s; check the file", strerror(errno));
    return 0;
}

/* Python's str.split() separators within a line. */
static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static size_t blank_run(const char *p) {
    size_t n = 0;
    while (is_blank(p[n])) n++;
    return n;
}

static size_t field_len(const char *p) {
    size_t n = 0;
    while (p[n] && !is_blank(p[n])) n++;
    return n;
}

/* Number of whitespace-separated fields in line. */
static int count_fields(const char *line) {
    int n = 0;
    for (line += blank_run(line); *line; line += blank_run(line), n++) line += field_len(line);
    return n;
}

/* Parses the fields of line into v[0..n) as float32, like numpy. Returns 0, or 1 with problem set. */
static int parse_fields(char *line, float *v, int n, const char *shown, int lineno, char *problem, size_t size) {
    char *p = line;
    for (int i = 0; i < n; i++) {
        p += blank_run(p);
        size_t len = field_len(p);
        char save = p[len], *end;
        p[len] = '\0';
        double d = strtod(p, &end);
        int ok = end != p && *end == '\0' && isfinite(d) && !strpbrk(p, "xX") && fabs(d) <= 3e38;
        if (!ok && strstr(p, UTF8_BOM))
            bad(problem, size, shown, lineno, "a number contains a UTF-8 byte order mark (BOM); save the file as "
                "UTF-8 without BOM");
        else if (!ok) bad(problem, size, shown, lineno, "\"%.20s\" is not a number; fix the row", p);
        p[len] = save;
        if (!ok) return 1;
        v[i] = (float)d;
        p += len;
    }
    return 0;
}

/* Polygon class x1 y1 x2 y2 ... in v[0..n) -> box row class cx cy w h (YOLOv5's segments2boxes). */
static int polygon_box(const float *v, int n, float *row, const char *shown, int lineno, char *problem, size_t size) {
    if (n < 3 || (n - 1) % 2)
        return bad(problem, size, shown, lineno, "a polygon row needs x y pairs after the class, got %d numbers; "
                   "fix the row", n - 1);
    float x0 = v[1], x1 = v[1], y0 = v[2], y1 = v[2];
    for (int i = 1; i + 1 < n; i += 2) {
        x0 = fminf(x0, v[i]), x1 = fmaxf(x1, v[i]);
        y0 = fminf(y0, v[i + 1]), y1 = fmaxf(y1, v[i + 1]);
    }
    row[0] = v[0];
    row[1] = (x0 + x1) / 2, row[2] = (y0 + y1) / 2, row[3] = x1 - x0, row[4] = y1 - y0;
    return 0;
}

/* Checks one row class cx cy w h. Returns 0, or 1 with problem set. */
static int check_row(const float *row, int nc, int polygon, const char *shown, int lineno, char *problem, size_t size) {
    if (row[0] < 0) return bad(problem, size, shown, lineno, "class %g is negative; classes are 0..%d", row[0], nc - 1);
    if (row[0] != floorf(row[0]))
        return bad(problem, size, shown, lineno, "class %g is not a whole number; classes are 0..%d", row[0], nc - 1);
    if (row[0] >= (float)nc) { /* train.py's assertion, with where it is */
        bad(problem, size, shown, lineno, "Label class %.0f exceeds nc=%d", row[0], nc);
        return 2;
    }
    static const char *const names[] = {"", "x centre", "y centre", "width", "height"};
    for (int j = 1; j < 5; j++)
        if (row[j] < 0 || row[j] > 1)
            return bad(problem, size, shown, lineno, "%s%s %g is outside 0..1; coordinates are normalised by the "
                       "image size", polygon ? "polygon box " : "", names[j], row[j]);
    return 0;
}

/* Makes room for n_rows rows in s->rows and n_fields numbers in s->fields. Returns 0 or -1 (OOM). */
static int reserve(yp_ds_scratch *s, int64_t n_rows, int n_fields) {
    if (n_rows > s->rows_cap) {
        float *rows = realloc(s->rows, (size_t)n_rows * 5 * sizeof *rows);
        if (!rows) return -1;
        s->rows = rows;
        s->rows_cap = n_rows;
    }
    if (n_fields > s->fields_cap) {
        float *fields = realloc(s->fields, (size_t)n_fields * sizeof *fields);
        if (!fields) return -1;
        s->fields = fields;
        s->fields_cap = n_fields;
    }
    return 0;
}

static int cmp_row(const void *a, const void *b) {
    const float *x = a, *y = b;
    for (int j = 0; j < 5; j++)
        if (x[j] != y[j]) return x[j] < y[j] ? -1 : 1;
    return 0;
}

/* Rows of the n_lines NUL-separated lines at s->text into s->rows; *n_rows set. Returns 0, 1
 * (a bad row: problem set) or -1 (OOM). */
static int parse_rows(yp_ds_scratch *s, int64_t n_lines, int nc, const char *shown, int64_t *n_rows,
                      char *problem, size_t size) {
    int max_fields = 0, rc = 0;
    char *p = s->text;
    for (int64_t i = 0; i < n_lines; i++, p += strlen(p) + 1) {
        int n = count_fields(p);
        if (n > MAX_FIELDS) return bad(problem, size, shown, (int)i + 1, "%d numbers in one row; not a label file", n);
        if (n > max_fields) max_fields = n;
    }
    int polygons = max_fields > 6;
    if (reserve(s, n_lines, max_fields)) return -1;
    *n_rows = 0;
    p = s->text;
    for (int64_t i = 0; i < n_lines && rc == 0; i++, p += strlen(p) + 1) {
        int n = count_fields(p), lineno = (int)i + 1;
        float *row = s->rows + 5 * *n_rows;
        if (n == 0) continue; /* blank line */
        if (!polygons && n != 5)
            return bad(problem, size, shown, lineno, "%d numbers; a row is `class cx cy w h` (5 numbers) or a "
                       "polygon `class x1 y1 x2 y2 ...` (7 or more); fix the row", n);
        rc = parse_fields(p, s->fields, n, shown, lineno, problem, size);
        if (rc == 0 && polygons) rc = polygon_box(s->fields, n, row, shown, lineno, problem, size);
        if (rc == 0 && !polygons) memcpy(row, s->fields, 5 * sizeof *row);
        if (rc == 0) rc = check_row(row, nc, polygons, shown, lineno, problem, size);
        if (rc == 0) (*n_rows)++;
    }
    return rc;
}

int yp_ds_read_labels(const char *path, const char *shown, int nc, yp_ds_scratch *s,
                      yp_ds_label_file *out, char *problem, size_t size) {
    struct stat sb;
    memset(out, 0, sizeof *out);
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) return 0; /* YOLOv5: os.path.isfile, else "missing" */
    out->found = 1;
    FILE *f = fopen(path, "rb");
    if (!f) return bad(problem, size, shown, 0, "cannot open: %s; check its permissions", strerror(errno));
    int64_t n_lines = 0, n = 0;
    int rc = read_all(f, shown, s, &n_lines, problem, size);
    fclose(f);
    if (rc == 0) rc = parse_rows(s, n_lines, nc, shown, &n, problem, size);
    if (rc != 0) return rc;
    if (n > s->sorted_cap) {
        float *sorted = realloc(s->sorted, (size_t)n * 5 * sizeof *sorted);
        if (!sorted) return -1;
        s->sorted = sorted;
        s->sorted_cap = n;
    }
    if (n > 0) memcpy(s->sorted, s->rows, (size_t)n * 5 * sizeof *s->rows);
    if (n > 1) qsort(s->sorted, (size_t)n, 5 * sizeof *s->sorted, cmp_row);
    int64_t unique = n > 0;
    for (int64_t i = 1; i < n; i++) /* compacts the sorted copy to its unique rows */
        if (cmp_row(s->sorted + 5 * i, s->sorted + 5 * (unique - 1)) != 0)
            memmove(s->sorted + 5 * unique++, s->sorted + 5 * i, 5 * sizeof *s->sorted);
    if (unique < n) memcpy(s->rows, s->sorted, (size_t)unique * 5 * sizeof *s->rows);
    out->n_rows = unique;
    out->n_dup = n - unique;
    return 0;
}
