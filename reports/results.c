/* results.c - results.csv as YOLOv5's train.py writes it: formatting, appending, reading back
 * and truncating for resume (yp_results.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results_internal.h"
#include "yp_atomic_file.h"
#include "yp_results.h"

const char *const yp_results_columns[YP_RESULTS_COLS] = {
    "epoch",          "train/box_loss",       "train/obj_loss", "train/cls_loss", "metrics/precision",
    "metrics/recall", "metrics/mAP_0.5",      "metrics/mAP_0.5:0.95",
    "val/box_loss",   "val/obj_loss",         "val/cls_loss",   "x/lr0",          "x/lr1",
    "x/lr2",
};

/* The longest field text the reader accepts; train.py's are 20 characters. */
#define FIELD_MAX 64

/* ---------------------------------------------------------------- writing */

/* One value as Python's '%20.5g' % v: C's %g, except that NaN is "nan" whatever its sign
 * (glibc writes "-nan"). */
static int format_value(char *p, size_t cap, double v) {
    return isnan(v) ? snprintf(p, cap, "%20s", "nan") : snprintf(p, cap, "%20.5g", v);
}

int yp_results_format_row(const yp_results_row *r, char *buf, int cap) {
    int len = 0;
    for (int i = 0; i < YP_RESULTS_COLS; i++) {
        if (i) {
            if (len + 1 >= cap) return -1;
            buf[len++] = ',';
        }
        int w = format_value(buf + len, (size_t)(cap - len), i ? r->v[i - 1] : (double)r->epoch);
        if (w < 0 || w >= cap - len) return -1;
        len += w;
    }
    return len;
}

/* The header line, no newline. Its length. */
static int format_header(char *buf, int cap) {
    int len = 0;
    for (int i = 0; i < YP_RESULTS_COLS; i++) {
        int w = snprintf(buf + len, (size_t)(cap - len), i ? ",%20s" : "%20s", yp_results_columns[i]);
        YP_ASSERT(w > 0 && w < cap - len);
        len += w;
    }
    return len;
}

/* ---------------------------------------------------------------- parsing */

/* One line of the text: [start, end) without its newline (nor a "\r" before it); next is where
 * the following line starts; terminated says whether a newline ended it. */
typedef struct {
    size_t start, end, next;
    int terminated;
} line_span;

static line_span line_at(const char *text, size_t n, size_t at) {
    line_span l = {at, n, n, 0};
    const char *nl = memchr(text + at, '\n', n - at);
    if (nl) l.end = (size_t)(nl - text), l.next = l.end + 1, l.terminated = 1;
    if (l.end > l.start && text[l.end - 1] == '\r') l.end--;
    return l;
}

static int is_blank(char c) { return c == ' ' || c == '\t'; }

/* Splits text[l] at commas into at most `most` fields, each trimmed of spaces and tabs and
 * copied NUL-terminated into f[i] (FIELD_MAX bytes each). The number of fields; a field longer
 * than FIELD_MAX - 1 makes it return -1 - (index of that field). */
static int split_fields(const char *text, line_span l, char f[][FIELD_MAX], int most) {
    int k = 0;
    size_t p = l.start;
    for (;;) {
        size_t q = p;
        while (q < l.end && text[q] != ',') q++;
        size_t a = p, b = q;
        while (a < b && is_blank(text[a])) a++;
        while (b > a && is_blank(text[b - 1])) b--;
        if (k < most) {
            if (b - a >= FIELD_MAX) return -1 - k;
            memcpy(f[k], text + a, b - a);
            f[k][b - a] = '\0';
        }
        k++;
        if (q >= l.end) break;
        p = q + 1;
    }
    return k;
}

static int is_blank_line(const char *text, line_span l) {
    for (size_t i = l.start; i < l.end; i++)
        if (!is_blank(text[i])) return 0;
    return 1;
}

static int check_header(const char *path, const char *text, line_span l, yp_err *err) {
    char f[YP_RESULTS_COLS][FIELD_MAX];
    int k = split_fields(text, l, f, YP_RESULTS_COLS);
    if (k != YP_RESULTS_COLS)
        return yp_err_set(err,
                          "%s:1: the header has %s fields, expected train.py's %d (%s, %s, ..., %s); not a YOLOv5 "
                          "results.csv",
                          path,
                          k < 0                 ? "an overlong field among its"
                          : k > YP_RESULTS_COLS ? "more"
                                                : "fewer",
                          YP_RESULTS_COLS, yp_results_columns[0], yp_results_columns[1],
                          yp_results_columns[YP_RESULTS_COLS - 1]);
    for (int i = 0; i < YP_RESULTS_COLS; i++)
        if (strcmp(f[i], yp_results_columns[i]))
            return yp_err_set(err, "%s:1: header field %d is \"%s\", expected \"%s\"; not a YOLOv5 results.csv", path,
                              i + 1, f[i], yp_results_columns[i]);
    return 0;
}

/* A field that strtod reads whole (numbers, nan, inf) into *v. */
static int parse_number(const char *s, double *v) {
    if (!*s) return -1;
    char *end = NULL;
    *v = strtod(s, &end);
    return *end ? -1 : 0; /* out of range reads as +-inf or 0, as Python's float() */
}

/* Parses one data line (lineno for messages) into r. */
static int parse_row(const char *path, long long lineno, const char *text, line_span l, yp_results_row *r,
                     yp_err *err) {
    char f[YP_RESULTS_COLS][FIELD_MAX];
    int k = split_fields(text, l, f, YP_RESULTS_COLS);
    if (k < 0)
        return yp_err_set(err, "%s:%lld: field %d (%s) is longer than %d characters", path, lineno, -k,
                          yp_results_columns[-k - 1], FIELD_MAX - 1);
    if (k != YP_RESULTS_COLS)
        return yp_err_set(err, "%s:%lld: %d fields, expected %d%s", path, lineno, k, YP_RESULTS_COLS,
                          l.terminated ? "" : " (the last line has no newline: cut short by a crash? remove it)");
    for (int i = 0; i < YP_RESULTS_COLS; i++) {
        double v;
        if (parse_number(f[i], &v))
            return yp_err_set(err, "%s:%lld: field %d (%s): \"%s\" is not a number", path, lineno, i + 1,
                              yp_results_columns[i], f[i]);
        if (i == 0) {
            if (!(v >= 0 && v <= 9007199254740992.0) || floor(v) != v)
                return yp_err_set(err, "%s:%lld: field 1 (epoch): \"%s\" is not an epoch (an integer >= 0)", path,
                                  lineno, f[i]);
            r->epoch = (int64_t)v;
        } else {
            r->v[i - 1] = v;
        }
    }
    if (!l.terminated)
        return yp_err_set(err, "%s:%lld: the last line has no newline (cut short by a crash?); remove that line", path,
                          lineno);
    return 0;
}

/* Parses the whole text. The rows and, when spans is non-NULL, each row's line (malloc'ed). */
static int parse_text(const char *path, const char *text, size_t n, yp_results_row **rows, line_span **spans,
                      int64_t *nrows, yp_err *err) {
    *rows = NULL, *nrows = 0;
    if (spans) *spans = NULL;
    if (n == 0) return 0;
    if (memchr(text, '\0', n)) return yp_err_set(err, "%s: holds NUL bytes; not a text results.csv", path);
    yp_results_row *r = NULL;
    line_span *sp = NULL;
    int64_t k = 0, cap = 0;
    line_span l = line_at(text, n, 0);
    int rc = check_header(path, text, l, err);
    long long lineno = 1;
    for (size_t at = l.next; !rc && at < n; at = l.next) {
        l = line_at(text, n, at);
        lineno++;
        if (is_blank_line(text, l)) continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 64;
            yp_results_row *r2 = realloc(r, (size_t)cap * sizeof *r);
            line_span *sp2 = r2 && spans ? realloc(sp, (size_t)cap * sizeof *sp) : sp;
            if (r2) r = r2;
            if (sp2) sp = sp2;
            if (!r2 || (spans && !sp2)) {
                rc = yp_err_set(err, "%s: out of memory at line %lld", path, lineno);
                break;
            }
        }
        rc = parse_row(path, lineno, text, l, &r[k], err);
        if (sp) sp[k] = l;
        k++;
    }
    if (rc || k == 0) {
        free(r), free(sp);
        return rc;
    }
    *rows = r, *nrows = k;
    if (spans) *spans = sp;
    return 0;
}

int yp_results_read(const char *csv_path, yp_results_row **rows, int64_t *n, yp_err *err) {
    *rows = NULL, *n = 0;
    char *text = NULL;
    size_t len = 0;
    if (yp_rs_read_file(csv_path, YP_RESULTS_MAX_BYTES, 0, &text, &len, err)) return -1;
    int rc = parse_text(csv_path, text, len, rows, NULL, n, err);
    free(text);
    return rc;
}

/* ---------------------------------------------------------------- appending */

static int pread_all(int fd, char *dst, size_t n, off_t off) {
    while (n) {
        ssize_t r = pread(fd, dst, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EIO;
            return -1;
        }
        dst += r, n -= (size_t)r, off += r;
    }
    return 0;
}

/* An existing, non-empty file of size bytes must start with the header and end in a newline. */
static int check_existing(const char *path, int fd, off_t size, yp_err *err) {
    char head[1024];
    size_t want = size < (off_t)sizeof head ? (size_t)size : sizeof head;
    char last;
    if (pread_all(fd, head, want, 0) || pread_all(fd, &last, 1, size - 1))
        return yp_err_set(err, "%s: cannot read it back before appending: %s", path, strerror(errno));
    line_span l = line_at(head, want, 0);
    if (!l.terminated) {
        if (want == sizeof head) return yp_err_set(err, "%s:1: the first line is too long for a header; not a YOLOv5 "
                                                   "results.csv (move it away to start a new one)", path);
        return yp_err_set(err, "%s: holds no complete header line (cut short by a crash?); remove the file to start a "
                          "new one", path);
    }
    if (check_header(path, head, l, err)) return -1;
    if (last != '\n')
        return yp_err_set(err, "%s: the last line has no newline (cut short by a crash?); remove that line before "
                          "appending", path);
    return 0;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return -1;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

int yp_results_append(const char *csv_path, const yp_results_row *r, yp_err *err) {
    if (r->epoch < 0 || r->epoch > YP_RESULTS_MAX_EPOCH)
        return yp_err_set(err, "%s: epoch %lld: train.py's %%20.5g keeps 5 digits, so only epochs 0..%d are written "
                          "exactly", csv_path, (long long)r->epoch, YP_RESULTS_MAX_EPOCH);
    char line[2 * YP_RESULTS_COLS * 32];
    int len = 0;
    /* read-write: an existing file is checked before the append; O_NONBLOCK: a FIFO cannot block */
    int fd = open(csv_path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
    if (fd < 0)
        return yp_err_set(err, "%s: cannot open for appending: %s; check that the folder exists and is writable",
                          csv_path, strerror(errno));
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st)) {
        yp_err_set(err, "%s: cannot stat: %s", csv_path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        yp_err_set(err, "%s: not a regular file; results.csv must be one (move it away)", csv_path);
    } else if (st.st_size == 0 || !check_existing(csv_path, fd, st.st_size, err)) {
        if (st.st_size == 0) {
            len = format_header(line, (int)sizeof line);
            line[len++] = '\n';
        }
        int w = yp_results_format_row(r, line + len, (int)sizeof line - len - 1);
        YP_ASSERT(w > 0);
        len += w;
        line[len++] = '\n';
        if (write_all(fd, line, (size_t)len)) {
            int e = errno;
            /* a full disk may have taken part of the line: cut it off, so the file stays whole
             * (its reader, and --resume, refuse a line without its newline) */
            const char *cut = ftruncate(fd, st.st_size) ? "; part of the line may be left at the end" : "";
            yp_err_set(err, "%s: appending epoch %lld failed: %s%s; free space on that disk or write elsewhere",
                       csv_path, (long long)r->epoch, strerror(e), cut);
        }
        else if (fsync(fd))
            yp_err_set(err, "%s: flushing to the disk (fsync) failed: %s", csv_path, strerror(errno));
        else if (st.st_size == 0 && yp_af_sync_folder(csv_path))
            yp_err_set(err, "%s: written, but syncing its folder failed: %s; a crash now may lose the new file",
                       csv_path, strerror(errno));
        else
            rc = 0;
    }
    if (close(fd) && rc == 0) rc = yp_err_set(err, "%s: closing failed: %s", csv_path, strerror(errno));
    return rc;
}

/* ---------------------------------------------------------------- truncating */

int yp_results_truncate(const char *csv_path, int64_t last_epoch, yp_err *err) {
    char *text = NULL;
    size_t len = 0;
    int got = yp_rs_read_file(csv_path, YP_RESULTS_MAX_BYTES, 1, &text, &len, err);
    if (got) return got > 0 ? 0 : -1; /* missing: nothing to keep or drop */
    yp_results_row *rows = NULL;
    line_span *sp = NULL;
    int64_t n = 0;
    int rc = parse_text(csv_path, text, len, &rows, &sp, &n, err);
    int64_t keep = 0;
    for (int64_t i = 0; !rc && i < n; i++) keep += rows[i].epoch <= last_epoch;
    if (!rc && keep < n) {
        /* The header line with its newline, then each kept line with its own. */
        char *out = malloc(len + 1);
        if (!out) {
            rc = yp_err_set(err, "%s: out of memory", csv_path);
        } else {
            line_span h = line_at(text, len, 0);
            size_t o = h.next;
            memcpy(out, text, o);
            for (int64_t i = 0; i < n; i++) {
                if (rows[i].epoch > last_epoch) continue;
                memcpy(out + o, text + sp[i].start, sp[i].next - sp[i].start);
                o += sp[i].next - sp[i].start;
            }
            rc = yp_af_save_bytes(csv_path, out, o, err);
            free(out);
        }
    }
    free(rows), free(sp), free(text);
    return rc;
}
