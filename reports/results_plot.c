/* results_plot.c - results.png and results.svg from a results.csv, laid out as YOLOv5's
 * plot_results (yp_results.h), drawn with PLplot's cairo driver (pngcairo, svgcairo).
 *
 * PLplot has one global state and, on a fatal error, calls plexit(), which runs the handler set
 * with plsexit() and then exit()s the process. Here that handler longjmps back to the drawing
 * call, which then ends the stream it made and returns an error; non-fatal errors (plabort)
 * are collected through plsError() instead of being printed. Each picture is drawn on a stream
 * of its own (plmkstrm ... plend1), so the caller's current stream, if any, is left as it was
 * and drawing again in the same process starts clean. A lock serialises yp_results_plot. */
#include <errno.h>
#include <math.h>
#include <plplot.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results_internal.h"
#include "yp_results.h"

#define PNG_W 1600
#define PNG_H 800
#define MISSING_DRIVER "PLplot's cairo driver is missing; run scripts/deps.sh (Debian package plplot-driver-cairo)"

/* The panels, as plot_results walks them (j = 1, 2, 3, 4, 5, 8, 9, 10, 6, 7): index into v. */
static const int panel_col[10] = {YP_RES_TRAIN_BOX, YP_RES_TRAIN_OBJ, YP_RES_TRAIN_CLS, YP_RES_PRECISION,
                                  YP_RES_RECALL,    YP_RES_VAL_BOX,   YP_RES_VAL_OBJ,   YP_RES_VAL_CLS,
                                  YP_RES_MAP50,     YP_RES_MAP};

/* cmap0: 0 background, 1 axes and text, 2 data (matplotlib's C0), 3 smoothing (C1). */
enum { COL_BG, COL_FG, COL_DATA, COL_SMOOTH, N_COL };
static const PLINT col_r[N_COL] = {255, 0, 31, 255}, col_g[N_COL] = {255, 0, 119, 127},
                   col_b[N_COL] = {255, 0, 180, 14};

static pthread_mutex_t plot_lock = PTHREAD_MUTEX_INITIALIZER;

/* Where the exit handler jumps to (NULL: no drawing of ours is under way), and its message. */
static jmp_buf *volatile fatal_jump;
static char fatal_msg[512];
/* plsError's targets for our stream: with them set, plabort writes its message here instead of
 * to stderr (each message over the previous one). */
static PLINT abort_code;
static char abort_text[2048];
/* The first plabort message of the picture being drawn (the handler set with plsabort). */
static char abort_first[512];

static int on_plexit(PLCHAR_VECTOR msg) {
    if (fatal_jump) {
        snprintf(fatal_msg, sizeof fatal_msg, "%s", msg && *msg ? msg : "(no message)");
        longjmp(*fatal_jump, 1);
    }
    return 1; /* not ours: PLplot's default, exit(1) */
}

static void on_plabort(PLCHAR_VECTOR msg) {
    if (fatal_jump && !abort_first[0])
        snprintf(abort_first, sizeof abort_first, "%s", msg && *msg ? msg : "(no message)");
}

/* ---------------------------------------------------------------- data */

/* scipy.ndimage.gaussian_filter1d(y, sigma) with its defaults (mode 'reflect', truncate 4.0):
 * weights exp(-x^2 / 2 sigma^2) over |x| <= int(4 sigma + 0.5), normalised; beyond the ends
 * the data is mirrored with the edge sample repeated (d c b a | a b c d | d c b a). */
static void gaussian_smooth(const double *y, int64_t n, double sigma, double *out) {
    int radius = (int)(4.0 * sigma + 0.5);
    double w[64], sum = 0;
    YP_ASSERT(radius < 32);
    for (int k = -radius; k <= radius; k++) sum += w[k + radius] = exp(-0.5 * (k / sigma) * (k / sigma));
    for (int k = 0; k <= 2 * radius; k++) w[k] /= sum;
    for (int64_t i = 0; i < n; i++) {
        double acc = 0;
        for (int k = -radius; k <= radius; k++) {
            int64_t j = (i + k) % (2 * n);
            if (j < 0) j += 2 * n;
            if (j >= n) j = 2 * n - 1 - j;
            acc += w[k + radius] * y[j];
        }
        out[i] = acc;
    }
}

/* The range [lo, hi] of the finite values, widened by matplotlib's 5% margins; a single value
 * gets a span around it. 0 when there is no finite value (then 0 .. 1). */
static int value_range(const double *v, int64_t n, double *lo, double *hi) {
    double a = INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(v[i])) a = fmin(a, v[i]), b = fmax(b, v[i]);
    if (a > b) {
        *lo = 0, *hi = 1;
        return 0;
    }
    double d = b - a;
    if (!(d > 1e-12 * fmax(fabs(a), fabs(b))) || !isfinite(d)) {
        double pad = a != 0 ? 0.1 * fabs(a) : 0.05;
        *lo = a - pad, *hi = b + pad;
    } else {
        *lo = a - 0.05 * d, *hi = b + 0.05 * d;
    }
    return 1;
}

/* Draws the finite points of (x, y) as a line broken at non-finite values. */
static void line_finite(const PLFLT *x, const PLFLT *y, int64_t n) {
    for (int64_t i = 0; i < n;) {
        while (i < n && !(isfinite(x[i]) && isfinite(y[i]))) i++;
        int64_t s = i;
        while (i < n && isfinite(x[i]) && isfinite(y[i])) i++;
        if (i - s >= 2) plline((PLINT)(i - s), x + s, y + s);
    }
}

/* ---------------------------------------------------------------- drawing */

typedef struct {
    const yp_results_row *rows;
    int64_t n;
    PLFLT *x, *y, *smooth; /* n each, scratch */
} plot_data;

static void draw_panel(const plot_data *d, int panel) {
    int c = panel_col[panel];
    for (int64_t i = 0; i < d->n; i++) d->x[i] = (PLFLT)d->rows[i].epoch, d->y[i] = d->rows[i].v[c];
    int all_finite = 1;
    for (int64_t i = 0; i < d->n; i++) all_finite &= isfinite(d->y[i]) != 0;
    if (all_finite) gaussian_smooth(d->y, d->n, 3.0, d->smooth);

    double x0, x1, y0, y1, xtick = 0; /* 0: PLplot picks the tick interval */
    value_range(d->x, d->n, &x0, &x1);
    if (x1 - x0 < 2) x0 = floor(x0) - 0.5, x1 = ceil(x1) + 0.5; /* one epoch: an axis around it */
    if (x1 - x0 < 6) xtick = 1;                                  /* a few epochs: a tick at each */
    value_range(d->y, d->n, &y0, &y1);

    pladv(0);
    plvpor(0.24, 0.96, 0.12, 0.88);
    plwind(x0, x1, y0, y1);
    plcol0(COL_FG);
    plwidth(1.0);
    plbox("bcnst", xtick, xtick ? 1 : 0, "bcnstv", 0, 0);
    plmtex("t", 1.2, 0.5, 0.5, yp_results_columns[c + 1]);

    plcol0(COL_DATA);
    plwidth(2.0);
    line_finite(d->x, d->y, d->n);
    for (int64_t i = 0; i < d->n; i++)
        if (isfinite(d->y[i])) plpoin(1, &d->x[i], &d->y[i], 17);
    if (all_finite && d->n >= 2) {
        PLINT mark = 600, space = 900; /* micrometres: matplotlib's ':' */
        plcol0(COL_SMOOTH);
        plstyl(1, &mark, &space);
        line_finite(d->x, d->smooth, d->n);
        plstyl(0, NULL, NULL);
    }
}

/* Whether the driver offers the device `name` (PLplot's device list, read from its driver
 * folder; the driver itself is loaded later, by plinit). */
static int have_device(const char *name) {
    enum { MOST = 128 };
    PLCHAR_VECTOR menu[MOST], devs[MOST], *m = menu, *dv = devs;
    int ndev = MOST;
    plgDevs(&m, &dv, &ndev);
    for (int i = 0; i < ndev; i++)
        if (devs[i] && !strcmp(devs[i], name)) return 1;
    return 0;
}

/* After a fatal error: ends the stream we made, itself guarded (if ending fails too, the stream
 * is left behind: a few kilobytes), and makes old current again. */
static void end_after_fatal(PLINT made, PLINT old) {
    jmp_buf again;
    if (made >= 0 && !setjmp(again)) {
        fatal_jump = &again;
        plsstrm(made);
        plend1();
    }
    fatal_jump = NULL;
    plsstrm(old);
}

/* Draws d with device dev into file. 0, or -1 with err set. */
static int draw_file(const plot_data *d, const char *dev, const char *file, yp_err *err) {
    jmp_buf jump;
    volatile PLINT made = -1, old = 0;
    volatile int stage = 0; /* 0: listing the devices, 1: plinit (loads the driver), 2: drawing */
    if (setjmp(jump)) {
        end_after_fatal(made, old);
        if (stage == 0) return yp_err_set(err, "%s: " MISSING_DRIVER " (PLplot: %s)", file, fatal_msg);
        if (stage == 1)
            return yp_err_set(err, "%s: PLplot's cairo driver could not be started (PLplot: %s); reinstall the Debian "
                              "package plplot-driver-cairo (apt-get install --reinstall plplot-driver-cairo)", file,
                              fatal_msg);
        return yp_err_set(err, "%s: PLplot failed: %s", file, fatal_msg);
    }
    fatal_jump = &jump;
    PLINT s = 0;
    plgstrm(&s);
    old = s;
    if (!have_device(dev)) {
        fatal_jump = NULL;
        return yp_err_set(err, "%s: " MISSING_DRIVER " (PLplot offers no %s device)", file, dev);
    }
    plmkstrm(&s);
    if (s < 0) {
        fatal_jump = NULL;
        plsstrm(old);
        return yp_err_set(err, "%s: PLplot has no free stream (all 100 are in use)", file);
    }
    made = s, stage = 1;
    abort_code = 0, abort_text[0] = abort_first[0] = '\0';
    plsError(&abort_code, abort_text);
    plsdev(dev);
    plsfnam(file);
    plspage(0, 0, PNG_W, PNG_H, 0, 0);
    plscmap0(col_r, col_g, col_b, N_COL);
    plssub(5, 2);
    plinit();
    stage = 2;
    plschr(0, 0.85);
    plfont(1);
    plsyax(5, 0); /* labels of up to 5 digits before PLplot factors out a power of ten */
    for (int p = 0; p < 10; p++) draw_panel(d, p);
    plend1();
    fatal_jump = NULL;
    plsstrm(old);
    if (abort_code || abort_first[0])
        return yp_err_set(err, "%s: PLplot aborted an operation: %s", file,
                          abort_first[0] ? abort_first : "(no message)");
    return 0;
}

/* The whole of a picture PLplot closed is there: a PNG ends with its IEND chunk, an SVG with
 * its closing tag. Catches a file cut short by a full disk (the driver does not report it). */
static int check_output(const char *file, int png, yp_err *err) {
    char *buf = NULL;
    size_t n = 0;
    if (yp_rs_read_file(file, 256LL << 20, 0, &buf, &n, err)) return -1;
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    int ok;
    if (png) {
        ok = n >= 8 + 25 + 12 && !memcmp(buf, sig, 8) && !memcmp(buf + n - 8, "IEND", 4);
    } else {
        size_t e = n;
        while (e && (buf[e - 1] == '\n' || buf[e - 1] == ' ')) e--;
        ok = e >= 6 && !memcmp(buf + e - 6, "</svg>", 6);
    }
    free(buf);
    if (!ok) return yp_err_set(err, "%s: PLplot wrote an incomplete %s (%zu bytes); check the free space", file,
                               png ? "PNG" : "SVG", n);
    return 0;
}

/* Appends s to b (cap bytes, length *len) with XML's five special characters escaped. */
static void xml_put(char *b, size_t cap, size_t *len, const char *s) {
    for (; *s && *len + 8 < cap; s++) {
        const char *e = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '"' ? "&quot;"
                      : *s == '\'' ? "&apos;" : NULL;
        if (e) *len += (size_t)snprintf(b + *len, cap - *len, "%s", e);
        else b[(*len)++] = *s;
    }
    b[*len] = '\0';
}

/* cairo draws text as glyph outlines, so an SVG from svgcairo holds none of its words. This
 * puts a <title> (the csv and its epochs) and a <desc> (the panels' titles, in order) right
 * after the <svg> start tag of file: what viewers show as its name and what a search finds. */
static int svg_describe(const char *file, const char *csv_path, const plot_data *d, yp_err *err) {
    char *buf = NULL;
    size_t n = 0;
    if (yp_rs_read_file(file, 256LL << 20, 0, &buf, &n, err)) return -1;
    char *tag = strstr(buf, "<svg");
    char *gt = tag ? strchr(tag, '>') : NULL;
    if (!gt) {
        free(buf);
        return yp_err_set(err, "%s: PLplot's SVG has no <svg> start tag", file);
    }
    size_t at = (size_t)(gt + 1 - buf), len = 0;
    char meta[2048];
    const char *base = strrchr(csv_path, '/');
    len += (size_t)snprintf(meta, sizeof meta, "\n<title>");
    xml_put(meta, sizeof meta, &len, base ? base + 1 : csv_path);
    len += (size_t)snprintf(meta + len, sizeof meta - len, ": epochs %lld to %lld</title>\n<desc>YOLOv5 training "
                            "curves, x: epoch; top row: ", (long long)d->rows[0].epoch,
                            (long long)d->rows[d->n - 1].epoch);
    for (int p = 0; p < 10; p++) {
        xml_put(meta, sizeof meta, &len, yp_results_columns[panel_col[p] + 1]);
        xml_put(meta, sizeof meta, &len, p == 4 ? "; bottom row: " : p < 9 ? ", " : "");
    }
    len += (size_t)snprintf(meta + len, sizeof meta - len, "</desc>");
    FILE *f = fopen(file, "wb");
    int bad = !f;
    if (f) {
        bad |= fwrite(buf, 1, at, f) != at;
        bad |= fwrite(meta, 1, len, f) != len;
        bad |= fwrite(buf + at, 1, n - at, f) != n - at;
        bad |= fclose(f) != 0;
    }
    free(buf);
    if (bad) return yp_err_set(err, "%s: rewriting it with its title failed: %s", file, strerror(errno));
    return 0;
}

/* Draws into a temporary file next to <stem><ext>, checks it and renames it into place. */
static int draw_atomic(const plot_data *d, const char *csv_path, const char *dev, const char *stem, const char *ext,
                       yp_err *err) {
    size_t len = strlen(stem) + strlen(ext) + 1;
    char *path = malloc(len);
    if (!path) return yp_err_set(err, "%s%s: out of memory", stem, ext);
    snprintf(path, len, "%s%s", stem, ext);
    char *tmp = yp_rs_temp_next_to(path, err);
    int rc = -1;
    if (tmp) {
        int png = !strcmp(ext, ".png");
        rc = draw_file(d, dev, tmp, err);
        if (!rc && !png) rc = svg_describe(tmp, csv_path, d, err);
        if (!rc) rc = check_output(tmp, png, err);
        if (!rc) rc = yp_rs_commit(tmp, path, err);
        else unlink(tmp);
        if (rc && err) { /* name the file the caller asked for, not the temporary one */
            size_t tl = strlen(tmp);
            if (!strncmp(err->msg, tmp, tl)) {
                char rest[sizeof err->msg];
                snprintf(rest, sizeof rest, "%s", err->msg + tl);
                snprintf(err->msg, sizeof err->msg, "%s%s", path, rest);
            }
        }
    }
    free(tmp);
    free(path);
    return rc;
}

int yp_results_plot(const char *csv_path, const char *out_stem, yp_err *err) {
    yp_results_row *rows = NULL;
    int64_t n = 0;
    if (yp_results_read(csv_path, &rows, &n, err)) return -1;
    if (n == 0) {
        free(rows);
        return yp_err_set(err, "%s: no epochs yet; nothing to plot", csv_path);
    }
    plot_data d = {rows, n, malloc((size_t)n * sizeof(PLFLT)), malloc((size_t)n * sizeof(PLFLT)),
                   malloc((size_t)n * sizeof(PLFLT))};
    int rc;
    if (!d.x || !d.y || !d.smooth) {
        rc = yp_err_set(err, "%s: out of memory for %lld epochs", csv_path, (long long)n);
    } else {
        pthread_mutex_lock(&plot_lock);
        plsexit(on_plexit);
        plsabort(on_plabort);
        rc = draw_atomic(&d, csv_path, "pngcairo", out_stem, ".png", err);
        if (!rc) rc = draw_atomic(&d, csv_path, "svgcairo", out_stem, ".svg", err);
        pthread_mutex_unlock(&plot_lock);
    }
    free(d.x), free(d.y), free(d.smooth), free(rows);
    return rc;
}
