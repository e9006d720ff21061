/* test_results.c - results.csv and its curves (reports/yp_results.h): appended text equal to
 * what train.py writes (computed here with its "%20s," / "%20.5g," rule, and one literal line),
 * read back, truncated for resume, bad files refused without hanging (a FIFO among them), the
 * PNG and SVG drawn (size, signature, titles), drawn twice in one process, and a missing or
 * broken cairo driver reported as an error by a child process that lives on. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "yp_results.h"
#include "yp_test.h"
#include "yp_test_fs.h"

/* PLplot's cairo driver draws text with pango, which keeps fontconfig's and glib's caches for
 * the life of the process; under -DYP_SANITIZE=ON LeakSanitizer reads this list at start-up
 * (tests/lsan.supp has these lines). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libfontconfig.so\nleak:libpango\nleak:libglib\n"; }

static char dir[64] = "/tmp/yp_test_results_XXXXXX";
static const char *self_exe;

static void path_in(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) free(buf), buf = NULL;
    if (buf) buf[n] = 0, *len = (size_t)n;
    fclose(f);
    return buf;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int bad = fputs(text, f) < 0;
    return fclose(f) || bad ? -1 : 0;
}

/* Whether some file in dir has ".tmp." in its name (a temporary a writer left behind). */
static int leftover_temps(void) {
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));) found |= strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return found;
}

/* train.py's text for the header and for a row, built here with its own rule:
 * ('%20s,' * n % names).rstrip(',') and ('%20.5g,' * n % values).rstrip(','). */
static void expected_header(char *buf, size_t cap) {
    size_t len = 0;
    for (int i = 0; i < YP_RESULTS_COLS; i++) len += (size_t)snprintf(buf + len, cap - len, "%20s,", yp_results_columns[i]);
    while (len && buf[len - 1] == ',') buf[--len] = '\0';
}
static void expected_row(const yp_results_row *r, char *buf, size_t cap) {
    size_t len = (size_t)snprintf(buf, cap, "%20.5g,", (double)r->epoch);
    for (int i = 0; i < YP_RESULTS_COLS - 1; i++)
        len += (size_t)(isnan(r->v[i]) ? snprintf(buf + len, cap - len, "%20s,", "nan")
                                        : snprintf(buf + len, cap - len, "%20.5g,", r->v[i]));
    while (len && buf[len - 1] == ',') buf[--len] = '\0';
}

/* The value %.5g keeps, as the file holds it. */
static double rounded5(double v) {
    char s[64];
    snprintf(s, sizeof s, "%.5g", v);
    return strtod(s, NULL);
}

static const yp_results_row rows3[3] = {
    {0, {0.1, 0.05, 0.025, 0.001, 0.002, 0.0, 0.0, 0.09, 0.045, 0.0225, 0.07, 0.0033333333, 0.0033333333}},
    {1, {0.0812345678, 0.04, 0.02, 0.25, 0.3, 0.12, 0.05, 0.08, 0.04, 0.02, 0.0401, 0.00662, 0.00662}},
    {7, {0.123456789, 0.05, 1.0, 0.5, 0.25, 12345.678, 1e-05, -NAN, 0.0225, 2.5e-7, 0.0033333333, 100000.0, -0.5}},
};

static int append_rows(const char *path, const yp_results_row *r, int n) {
    yp_err err = {{0}};
    for (int i = 0; i < n; i++)
        if (yp_results_append(path, &r[i], &err)) {
            fprintf(stderr, "append: %s\n", err.msg);
            return -1;
        }
    return 0;
}

static void test_columns(void) {
    static const char *const want[YP_RESULTS_COLS] = {
        "epoch",        "train/box_loss", "train/obj_loss", "train/cls_loss", "metrics/precision",
        "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss",
        "val/cls_loss", "x/lr0",          "x/lr1",          "x/lr2"};
    for (int i = 0; i < YP_RESULTS_COLS; i++) CHECK(!strcmp(yp_results_columns[i], want[i]));
    CHECK(!strcmp(yp_results_columns[YP_RES_MAP + 1], "metrics/mAP_0.5:0.95"));
    CHECK(!strcmp(yp_results_columns[YP_RES_LR2 + 1], "x/lr2"));
}

static void test_append_exact(void) {
    char path[128];
    path_in(path, sizeof path, "exact.csv");
    REQUIRE(append_rows(path, rows3, 3) == 0);
    size_t n = 0;
    char *text = read_all(path, &n);
    REQUIRE(text);
    char want[4096], line[512];
    expected_header(want, sizeof want);
    strcat(want, "\n");
    for (int i = 0; i < 3; i++) {
        expected_row(&rows3[i], line, sizeof line);
        strcat(want, line), strcat(want, "\n");
    }
    CHECK(n == strlen(want));
    CHECK(!strcmp(text, want));
    /* Typed out: train.py's header, and its line for rows3[2] (Python's %-format, checked by hand). */
    const char *header = "               epoch,      train/box_loss,      train/obj_loss,      train/cls_loss,   "
                         "metrics/precision,      metrics/recall,     metrics/mAP_0.5,metrics/mAP_0.5:0.95,        "
                         "val/box_loss,        val/obj_loss,        val/cls_loss,               x/lr0,               "
                         "x/lr1,               x/lr2\n";
    const char *last = "                   7,             0.12346,                0.05,                   1,          "
                       "       0.5,                0.25,               12346,               1e-05,                 nan,"
                       "              0.0225,             2.5e-07,           0.0033333,               1e+05,          "
                       "      -0.5\n";
    CHECK(!strncmp(text, header, strlen(header)));
    CHECK(n > strlen(last) && !strcmp(text + n - strlen(last), last));
    char one[512];
    CHECK(yp_results_format_row(&rows3[2], one, sizeof one) == (int)strlen(last) - 1);
    CHECK(!strncmp(one, last, strlen(last) - 1));
    CHECK(yp_results_format_row(&rows3[2], one, 100) == -1); /* too small a buffer */
    /* An empty existing file gets the header too. */
    char empty[128];
    path_in(empty, sizeof empty, "empty.csv");
    REQUIRE(write_text(empty, "") == 0);
    REQUIRE(append_rows(empty, rows3, 1) == 0);
    size_t m = 0;
    char *t2 = read_all(empty, &m);
    CHECK(t2 && !strncmp(t2, header, strlen(header)) && m == strlen(header) + 294);
    free(t2);
    free(text);
    CHECK(!leftover_temps());
}

static void test_read_back(void) {
    char path[128];
    path_in(path, sizeof path, "exact.csv"); /* written by test_append_exact */
    yp_results_row *r = NULL;
    int64_t n = 0;
    yp_err err = {{0}};
    REQUIRE(yp_results_read(path, &r, &n, &err) == 0);
    REQUIRE(n == 3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_I64(r[i].epoch, rows3[i].epoch);
        for (int j = 0; j < YP_RESULTS_COLS - 1; j++) {
            double want = rounded5(rows3[i].v[j]);
            CHECK(isnan(want) ? isnan(r[i].v[j]) : r[i].v[j] == want);
        }
    }
    free(r);
    /* Tolerated: no padding, tabs, "\r\n", blank lines; an empty file has no rows. */
    char loose[128];
    path_in(loose, sizeof loose, "loose.csv");
    REQUIRE(write_text(loose, "epoch,train/box_loss,train/obj_loss,train/cls_loss,metrics/precision,metrics/recall,"
                              "metrics/mAP_0.5,metrics/mAP_0.5:0.95,val/box_loss,val/obj_loss,val/cls_loss,x/lr0,x/lr1,"
                              "x/lr2\r\n\t3 ,0.5,0.4,0.3,0.2,0.1,0.05,0.02,0.6,0.7,0.8,inf,1e-3,  nan  \r\n\n") == 0);
    REQUIRE(yp_results_read(loose, &r, &n, &err) == 0);
    CHECK(n == 1 && r[0].epoch == 3 && r[0].v[0] == 0.5 && isinf(r[0].v[YP_RES_LR0]) && r[0].v[YP_RES_LR1] == 1e-3 &&
          isnan(r[0].v[YP_RES_LR2]));
    free(r);
    REQUIRE(write_text(loose, "") == 0);
    yp_results_row dummy = {0, {0}};
    r = &dummy;
    CHECK(yp_results_read(loose, &r, &n, &err) == 0 && n == 0 && r == NULL);
}

static void test_truncate(void) {
    char path[128];
    path_in(path, sizeof path, "resume.csv");
    yp_results_row r[6];
    for (int i = 0; i < 6; i++) {
        r[i] = rows3[1];
        r[i].epoch = i, r[i].v[0] = 0.1 / (i + 1);
    }
    REQUIRE(append_rows(path, r, 6) == 0);
    size_t n0 = 0;
    char *before = read_all(path, &n0);
    REQUIRE(before);
    yp_err err = {{0}};
    REQUIRE(yp_results_truncate(path, 3, &err) == 0);
    size_t n1 = 0;
    char *after = read_all(path, &n1);
    REQUIRE(after);
    /* Header + 4 lines of 294 bytes, byte for byte the start of the old file. */
    char *nl = strchr(before, '\n');
    REQUIRE(nl);
    size_t head = (size_t)(nl + 1 - before);
    CHECK(n1 == head + 4 * 294);
    CHECK(n1 <= n0 && !memcmp(before, after, n1));
    yp_results_row *got = NULL;
    int64_t n = 0;
    REQUIRE(yp_results_read(path, &got, &n, &err) == 0);
    CHECK(n == 4);
    for (int64_t i = 0; i < n; i++) CHECK(got[i].epoch == i && got[i].v[0] == rounded5(0.1 / (double)(i + 1)));
    free(got);
    /* Nothing to drop: untouched. Epoch -1 drops every row, the header stays. */
    REQUIRE(yp_results_truncate(path, 100, &err) == 0);
    size_t n2 = 0;
    char *same = read_all(path, &n2);
    CHECK(same && n2 == n1 && !memcmp(same, after, n1));
    free(same);
    REQUIRE(yp_results_truncate(path, -1, &err) == 0);
    REQUIRE(yp_results_read(path, &got, &n, &err) == 0);
    CHECK(n == 0);
    char *hdr = read_all(path, &n2);
    CHECK(hdr && n2 == head);
    free(hdr);
    /* Appending again after a truncate continues the file. */
    REQUIRE(append_rows(path, &r[0], 1) == 0);
    REQUIRE(yp_results_read(path, &got, &n, &err) == 0);
    CHECK(n == 1 && got[0].epoch == 0);
    free(got);
    /* A missing file is nothing to truncate (and is not created). */
    char missing[128];
    path_in(missing, sizeof missing, "never.csv");
    CHECK(yp_results_truncate(missing, 3, &err) == 0);
    CHECK(access(missing, F_OK) != 0);
    /* A bad file is refused and left as it was. */
    char bad[128];
    path_in(bad, sizeof bad, "bad_trunc.csv");
    REQUIRE(write_text(bad, "epoch,a,b\n1,2,3\n") == 0);
    CHECK(yp_results_truncate(bad, 0, &err) == -1);
    CHECK_STR_HAS(err.msg, "bad_trunc.csv:1:");
    size_t nb = 0;
    char *still = read_all(bad, &nb);
    CHECK(still && !strcmp(still, "epoch,a,b\n1,2,3\n"));
    free(still);
    free(before), free(after);
    CHECK(!leftover_temps());
}

/* yp_results_read of text must fail with a message holding want (and the file name). */
static void check_bad(const char *name, const char *text, const char *want) {
    char path[128];
    path_in(path, sizeof path, name);
    if (write_text(path, text)) {
        CHECK(!"cannot write the test file");
        return;
    }
    yp_results_row *r = NULL;
    int64_t n = 0;
    yp_err err = {{0}};
    CHECK(yp_results_read(path, &r, &n, &err) == -1);
    CHECK(r == NULL && n == 0);
    CHECK_STR_HAS(err.msg, path);
    CHECK_STR_HAS(err.msg, want);
}

static void test_bad_files(void) {
    char header[512], row[512], text[2048];
    expected_header(header, sizeof header);
    expected_row(&rows3[0], row, sizeof row);
    check_bad("h1.csv", "epoch,train/box_loss\n", ":1: the header has fewer fields");
    check_bad("h2.csv", "epoch,train/box_loss,train/obj_loss,train/cls_loss,metrics/precision,metrics/recall,"
                        "metrics/mAP_0.5,metrics/mAP_0.5:0.95,val/box_loss,val/obj_loss,val/cls_loss,x/lr0,x/lr1,x/lr3\n",
              ":1: header field 14 is \"x/lr3\", expected \"x/lr2\"");
    snprintf(text, sizeof text, "%s\n%s\n%s\n", header, row, row);
    char *p = strrchr(text, ',');
    memcpy(p - 5, "abc", 3); /* the last row's x/lr1 field now ends in "abc" */
    check_bad("n1.csv", text, ":3: field 13 (x/lr1):");
    check_bad("n1.csv", text, "is not a number");
    snprintf(text, sizeof text, "%s\n%s\n1,2,3\n", header, row);
    check_bad("n2.csv", text, ":3: 3 fields, expected 14");
    snprintf(text, sizeof text, "%s\n%s\n%s", header, row, row);
    check_bad("cut.csv", text, ":3: the last line has no newline");
    snprintf(text, sizeof text, "%s\n%s\n", header, row);
    memcpy(strchr(text, '\n') + 1 + 17, "1.5", 3);
    check_bad("e1.csv", text, ":2: field 1 (epoch): \"1.5\" is not an epoch");
    char nul[128];
    path_in(nul, sizeof nul, "nul.csv");
    FILE *nf = fopen(nul, "wb");
    REQUIRE(nf);
    CHECK(fwrite("epoch\0,x\n", 1, 10, nf) == 10);
    CHECK(fclose(nf) == 0);
    {
        yp_results_row *rn = NULL;
        int64_t nn = 0;
        yp_err en = {{0}};
        CHECK(yp_results_read(nul, &rn, &nn, &en) == -1);
        CHECK_STR_HAS(en.msg, "NUL bytes");
    }

    yp_err err = {{0}};
    yp_results_row *r = NULL;
    int64_t n = 0;
    char path[128];
    /* Not there; a folder; too big (a sparse file). */
    path_in(path, sizeof path, "absent.csv");
    CHECK(yp_results_read(path, &r, &n, &err) == -1);
    CHECK_STR_HAS(err.msg, "cannot open");
    CHECK(yp_results_read(dir, &r, &n, &err) == -1);
    CHECK_STR_HAS(err.msg, "a folder");
    path_in(path, sizeof path, "huge.csv");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    CHECK(ftruncate(fd, YP_RESULTS_MAX_BYTES + 1) == 0);
    close(fd);
    CHECK(yp_results_read(path, &r, &n, &err) == -1);
    CHECK_STR_HAS(err.msg, "a results.csv may have");
    unlink(path);

    /* A FIFO without a writer: refused at once, neither read nor append blocks (the alarm turns a
     * hang into a failure). */
    path_in(path, sizeof path, "fifo.csv");
    REQUIRE(mkfifo(path, 0644) == 0);
    alarm(20);
    CHECK(yp_results_read(path, &r, &n, &err) == -1);
    CHECK_STR_HAS(err.msg, "a FIFO");
    CHECK(yp_results_append(path, &rows3[0], &err) == -1);
    CHECK_STR_HAS(err.msg, "fifo.csv");
    CHECK(yp_results_truncate(path, 0, &err) == -1);
    CHECK_STR_HAS(err.msg, "a FIFO");
    alarm(0);
    unlink(path);
}

static void test_append_refuses(void) {
    yp_err err = {{0}};
    char path[128];
    /* Epochs %20.5g cannot keep. */
    path_in(path, sizeof path, "epochs.csv");
    yp_results_row r = rows3[0];
    r.epoch = -1;
    CHECK(yp_results_append(path, &r, &err) == -1);
    CHECK_STR_HAS(err.msg, "epoch -1");
    r.epoch = YP_RESULTS_MAX_EPOCH + 1;
    CHECK(yp_results_append(path, &r, &err) == -1);
    CHECK(access(path, F_OK) != 0);
    r.epoch = YP_RESULTS_MAX_EPOCH;
    CHECK(yp_results_append(path, &r, &err) == 0);
    yp_results_row *got = NULL;
    int64_t n = 0;
    CHECK(yp_results_read(path, &got, &n, &err) == 0 && n == 1 && got[0].epoch == YP_RESULTS_MAX_EPOCH);
    free(got);
    /* Someone else's csv, a cut last line: refused, left as they were. */
    path_in(path, sizeof path, "other.csv");
    REQUIRE(write_text(path, "a,b,c\n1,2,3\n") == 0);
    CHECK(yp_results_append(path, &rows3[0], &err) == -1);
    CHECK_STR_HAS(err.msg, "other.csv:1:");
    size_t len = 0;
    char *t = read_all(path, &len);
    CHECK(t && !strcmp(t, "a,b,c\n1,2,3\n"));
    free(t);
    char header[512], text[1024];
    expected_header(header, sizeof header);
    snprintf(text, sizeof text, "%s\n                   0,   0.1", header);
    path_in(path, sizeof path, "cut2.csv");
    REQUIRE(write_text(path, text) == 0);
    CHECK(yp_results_append(path, &rows3[0], &err) == -1);
    CHECK_STR_HAS(err.msg, "no newline");
    t = read_all(path, &len);
    CHECK(t && !strcmp(t, text));
    free(t);
    /* A folder that is not there. */
    path_in(path, sizeof path, "no/such/results.csv");
    CHECK(yp_results_append(path, &rows3[0], &err) == -1);
    CHECK_STR_HAS(err.msg, "check that the folder exists");
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* <stem>.png is a 1600 x 800 PNG and <stem>.svg an SVG naming the panels. */
static void check_pictures(const char *stem) {
    char png[160], svg[160];
    snprintf(png, sizeof png, "%s.png", stem);
    snprintf(svg, sizeof svg, "%s.svg", stem);
    size_t n = 0;
    unsigned char *b = (unsigned char *)read_all(png, &n);
    REQUIRE(b);
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    CHECK(n > 33 && !memcmp(b, sig, 8));
    CHECK(n > 33 && !memcmp(b + 12, "IHDR", 4));
    CHECK(n > 33 && be32(b + 16) == 1600 && be32(b + 20) == 800);
    CHECK(n > 12 && !memcmp(b + n - 8, "IEND", 4));
    free(b);
    char *s = read_all(svg, &n);
    REQUIRE(s);
    CHECK(!strncmp(s, "<?xml", 5) || strstr(s, "<svg"));
    CHECK(strstr(s, "<svg") != NULL);
    CHECK_STR_HAS(s, "mAP_0.5");
    CHECK_STR_HAS(s, "metrics/mAP_0.5:0.95");
    CHECK_STR_HAS(s, "train/box_loss");
    CHECK(strstr(s, "</svg>") != NULL);
    free(s);
}

/* An append the disk cannot hold (here a file-size limit, RLIMIT_FSIZE, that lets 10 bytes of the
 * line through): refused with the fix, and the partial line cut off, so the file reads back and
 * --resume can append to it again. */
static void test_append_full_disk(void) {
    yp_err err = {{0}};
    char path[128];
    path_in(path, sizeof path, "full.csv");
    REQUIRE(yp_results_append(path, &rows3[0], &err) == 0);
    size_t before = 0;
    char *was = read_all(path, &before);
    struct rlimit old, lim;
    REQUIRE(was && getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old, lim.rlim_cur = (rlim_t)before + 10;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of the signal */
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    int rc = yp_results_append(path, &rows3[1], &err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK_EQ_I64(rc, -1);
    CHECK_STR_HAS(err.msg, "full.csv: appending epoch 1 failed: File too large; free space");
    size_t len = 0;
    char *now = read_all(path, &len);
    CHECK(now && len == before && memcmp(now, was, len) == 0);
    CHECK(yp_results_append(path, &rows3[1], &err) == 0);
    free(was), free(now);
}

static void test_plot(void) {
    char csv[128], stem[128];
    path_in(csv, sizeof csv, "curves.csv");
    path_in(stem, sizeof stem, "results");
    yp_results_row r[30];
    for (int e = 0; e < 30; e++) {
        r[e].epoch = e;
        for (int i = 0; i < YP_RESULTS_COLS - 1; i++) r[e].v[i] = 0.1 * exp(-e / 10.0) + 0.01 * sin(e + i);
    }
    r[12].v[YP_RES_VAL_OBJ] = NAN; /* a gap in one curve */
    REQUIRE(append_rows(csv, r, 30) == 0);
    yp_err err = {{0}};
    CHECK(yp_results_plot(csv, stem, &err) == 0);
    if (err.msg[0]) fprintf(stderr, "plot: %s\n", err.msg);
    check_pictures(stem);
    CHECK(!leftover_temps());
}

static void test_plot_one_row(void) {
    char csv[128], stem[128];
    path_in(csv, sizeof csv, "one.csv");
    path_in(stem, sizeof stem, "one");
    REQUIRE(append_rows(csv, &rows3[0], 1) == 0); /* zeros among its values: a flat axis */
    yp_err err = {{0}};
    CHECK(yp_results_plot(csv, stem, &err) == 0);
    if (err.msg[0]) fprintf(stderr, "plot: %s\n", err.msg);
    check_pictures(stem);
}

/* Twice more in this process (after test_plot): each picture is a stream of its own, so the
 * second run draws the same PNG bytes as the first, and replaces files that are there. */
static void test_plot_twice(void) {
    char csv[128], stem[128], png1[160], png2[160];
    path_in(csv, sizeof csv, "curves.csv");
    path_in(stem, sizeof stem, "again");
    yp_err err = {{0}};
    CHECK(yp_results_plot(csv, stem, &err) == 0);
    snprintf(png1, sizeof png1, "%s.png", stem);
    snprintf(png2, sizeof png2, "%s/first.png", dir);
    CHECK(rename(png1, png2) == 0);
    CHECK(yp_results_plot(csv, stem, &err) == 0);
    CHECK(yp_results_plot(csv, stem, &err) == 0); /* over the files of the previous call */
    check_pictures(stem);
    size_t n1 = 0, n2 = 0;
    char *a = read_all(png2, &n1), *b = read_all(png1, &n2);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1));
    free(a), free(b);
    CHECK(!leftover_temps());
}

static void test_plot_errors(void) {
    char csv[128], stem[128];
    yp_err err = {{0}};
    path_in(csv, sizeof csv, "no_such.csv");
    path_in(stem, sizeof stem, "never");
    CHECK(yp_results_plot(csv, stem, &err) == -1);
    CHECK_STR_HAS(err.msg, "no_such.csv: cannot open");
    /* Header only: no epochs to draw. */
    char header[512];
    expected_header(header, sizeof header);
    strcat(header, "\n");
    path_in(csv, sizeof csv, "header_only.csv");
    REQUIRE(write_text(csv, header) == 0);
    CHECK(yp_results_plot(csv, stem, &err) == -1);
    CHECK_STR_HAS(err.msg, "no epochs");
    /* An output folder that is not there: named, nothing written, the next plot still works. */
    path_in(csv, sizeof csv, "curves.csv");
    path_in(stem, sizeof stem, "missing/dir/results");
    CHECK(yp_results_plot(csv, stem, &err) == -1);
    CHECK_STR_HAS(err.msg, "missing/dir/results.png");
    path_in(stem, sizeof stem, "after_error");
    CHECK(yp_results_plot(csv, stem, &err) == 0);
    char png[160];
    snprintf(png, sizeof png, "%s.png", stem);
    CHECK(access(png, F_OK) == 0);
    path_in(stem, sizeof stem, "never");
    snprintf(png, sizeof png, "%s.png", stem);
    CHECK(access(png, F_OK) != 0);
}

/* The child's side of test_missing_driver: plots csv to stem twice (the process must survive a
 * failing PLplot and fail the same way again) and writes both messages to msg_path. */
static int plot_child(const char *csv, const char *stem, const char *msg_path) {
    alarm(60);
    yp_err e1 = {{0}}, e2 = {{0}};
    int r1 = yp_results_plot(csv, stem, &e1), r2 = yp_results_plot(csv, stem, &e2);
    FILE *f = fopen(msg_path, "w");
    if (!f) return 3;
    fprintf(f, "%d %d\n%s\n%s\n", r1, r2, e1.msg, e2.msg);
    return fclose(f) ? 3 : 0;
}

/* Runs this test binary as a child with PLPLOT_DRV_DIR=drv (PLplot reads its driver list once
 * per process, so only a fresh process sees another one) and returns what it wrote. */
static char *run_child(const char *drv, const char *csv, const char *stem) {
    char msg[128];
    path_in(msg, sizeof msg, "child.txt");
    unlink(msg);
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0); /* a PLplot that asks for a device reads EOF, never waits */
        setenv("PLPLOT_DRV_DIR", drv, 1);
        execl(self_exe, self_exe, "--plot-child", csv, stem, msg, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child for %s: status %d\n", drv, status);
        return NULL;
    }
    size_t n = 0;
    return read_all(msg, &n);
}

static void test_missing_driver(void) {
    char csv[128], stem[128], drv[128], f[160];
    path_in(csv, sizeof csv, "curves.csv");
    path_in(stem, sizeof stem, "nodriver");
    /* No drivers at all; drivers but not cairo's (a null device listed); cairo's listed but its
     * module absent (a broken install). */
    path_in(drv, sizeof drv, "drv_empty");
    REQUIRE(mkdir(drv, 0755) == 0);
    char *out = run_child(drv, csv, stem);
    CHECK(out && !strncmp(out, "-1 -1\n", 6));
    CHECK_STR_HAS(out, "nodriver.png: PLplot's cairo driver is missing; run scripts/deps.sh (Debian package "
                       "plplot-driver-cairo)");
    free(out);

    path_in(drv, sizeof drv, "drv_null");
    REQUIRE(mkdir(drv, 0755) == 0);
    snprintf(f, sizeof f, "%s/null.driver_info", drv);
    REQUIRE(write_text(f, "null:Null device:-1:null:42:null\n") == 0);
    out = run_child(drv, csv, stem);
    CHECK(out && !strncmp(out, "-1 -1\n", 6));
    CHECK_STR_HAS(out, "PLplot's cairo driver is missing; run scripts/deps.sh (Debian package plplot-driver-cairo) "
                       "(PLplot offers no pngcairo device)");
    free(out);

    path_in(drv, sizeof drv, "drv_broken");
    REQUIRE(mkdir(drv, 0755) == 0);
    snprintf(f, sizeof f, "%s/cairo.driver_info", drv);
    REQUIRE(write_text(f, "svgcairo:Cairo SVG Driver:0:cairo:104:svgcairo\npngcairo:Cairo PNG Driver:0:cairo:105:"
                          "pngcairo\n") == 0);
    out = run_child(drv, csv, stem);
    CHECK(out && !strncmp(out, "-1 -1\n", 6));
    CHECK_STR_HAS(out, "nodriver.png: PLplot's cairo driver could not be started (PLplot: Unable to load driver)");
    CHECK_STR_HAS(out, "plplot-driver-cairo");
    free(out);
    snprintf(f, sizeof f, "%s.png", stem);
    CHECK(access(f, F_OK) != 0);
    CHECK(!leftover_temps());
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--plot-child")) return plot_child(argv[2], argv[3], argv[4]);
    self_exe = "/proc/self/exe";
    if (!mkdtemp(dir)) {
        perror("test_results: mkdtemp");
        return 1;
    }
    YP_RUN(test_columns);
    YP_RUN(test_append_exact);
    YP_RUN(test_read_back);
    YP_RUN(test_truncate);
    YP_RUN(test_bad_files);
    YP_RUN(test_append_refuses);
    YP_RUN(test_append_full_disk);
    YP_RUN(test_plot);
    YP_RUN(test_plot_one_row);
    YP_RUN(test_plot_twice);
    YP_RUN(test_plot_errors);
    YP_RUN(test_missing_driver);
    int rc = yp_test_summary();
    if (rc == 0) yp_test_remove_tree(dir);
    else printf("test_results: files kept in %s\n", dir);
    return rc;
}
