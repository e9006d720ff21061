/* dataset_images.c - finding the image files of a split's entry (dataset_internal.h): a folder
 * searched recursively like YOLOv5's glob("**" / "*.*"), or a .txt list of image paths; and the path
 * helpers (the path list, img2label_paths). Images are recognised here by extension only; the
 * label cache then decodes each one (dataset_verify.c). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "dataset_internal.h"
#include "yp_file.h"

#define UTF8_BOM "\xEF\xBB\xBF"

/* ---- the path list ---- */

int yp_ds_paths_add(yp_ds_paths *p, const char *path) {
    size_t len = strlen(path) + 1;
    if (p->len + len > p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4096;
        while (cap < p->len + len) cap *= 2;
        char *text = realloc(p->text, cap);
        if (!text) return -1;
        p->text = text;
        p->cap = cap;
    }
    if (p->n == p->cap_n) {
        int64_t cap_n = p->cap_n ? 2 * p->cap_n : 256;
        size_t *off = realloc(p->off, (size_t)cap_n * sizeof *off);
        if (!off) return -1;
        p->off = off;
        p->cap_n = cap_n;
    }
    memcpy(p->text + p->len, path, len);
    p->off[p->n++] = p->len;
    p->len += len;
    return 0;
}

const char *yp_ds_paths_at(const yp_ds_paths *p, int64_t i) { return p->text + p->off[i]; }

static const char *sort_text; /* qsort has no context argument; the sort is not reentrant */

static int cmp_off(const void *a, const void *b) {
    return strcmp(sort_text + *(const size_t *)a, sort_text + *(const size_t *)b);
}

void yp_ds_paths_sort(yp_ds_paths *p) {
    if (p->n < 2) return;
    sort_text = p->text;
    qsort(p->off, (size_t)p->n, sizeof *p->off, cmp_off);
    sort_text = NULL;
}

void yp_ds_paths_free(yp_ds_paths *p) {
    free(p->text);
    free(p->off);
    memset(p, 0, sizeof *p);
}

/* ---- names ---- */

/* YOLOv5's IMG_FORMATS, compared case-insensitively with the text after the name's last dot. */
static int is_image(const char *path) {
    static const char *const formats[] = {"bmp", "dng", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp", "pfm"};
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash)) return 0;
    char ext[8];
    size_t n = strlen(dot + 1);
    if (n == 0 || n >= sizeof ext) return 0;
    for (size_t i = 0; i < n && i < sizeof ext - 1; i++) ext[i] = (char)tolower((unsigned char)dot[1 + i]);
    ext[n] = '\0';
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strcmp(ext, formats[i]) == 0) return 1;
    return 0;
}

int yp_ds_label_path(const char *image, char *out, size_t size) {
    const char *cut = NULL;
    for (const char *q = strstr(image, "/images/"); q; q = strstr(q + 1, "/images/")) cut = q;
    int n = cut ? snprintf(out, size, "%.*s/labels/%s", (int)(cut - image), image, cut + 8)
                : snprintf(out, size, "%s", image);
    if (n < 0 || (size_t)n >= size) return -1;
    char *dot = strrchr(out, '.');
    if (!dot || (size_t)(dot - out) + 5 > size) return -1;
    memcpy(dot, ".txt", 5);
    return 0;
}

const char *yp_ds_shown(const char *path, const char *root) {
    size_t n = strlen(root);
    if (n && strncmp(path, root, n) == 0 && path[n] == '/') return path + n + 1;
    return path;
}

void yp_ds_note_bad(yp_dataset_stats *st, const char *problem) {
    if (st->n_bad_files++ == 0) snprintf(st->first_bad, sizeof st->first_bad, "%s", problem);
}

/* ---- a folder ---- */

typedef struct {
    dev_t dev;
    ino_t ino;
} dir_id;

/* Records folder st as visited. Returns 1 if it already was, 0 if not, -1 on OOM. */
static int seen_before(dir_id **seen, int64_t *n, int64_t *cap, const struct stat *st) {
    for (int64_t i = 0; i < *n; i++)
        if ((*seen)[i].dev == st->st_dev && (*seen)[i].ino == st->st_ino) return 1;
    if (*n == *cap) {
        int64_t c = *cap ? 2 * *cap : 64;
        dir_id *s = realloc(*seen, (size_t)c * sizeof *s);
        if (!s) return -1;
        *seen = s;
        *cap = c;
    }
    (*seen)[(*n)++] = (dir_id){st->st_dev, st->st_ino};
    return 0;
}

/* Adds the entries of folder dir: subfolders to todo, image files to images. Hidden entries
 * (".name") are skipped, as glob does; unreadable folders and broken links are skipped too.
 * Returns 0, or -1 on OOM. */
static int list_folder(const char *dir, yp_ds_paths *todo, yp_ds_paths *images) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    char child[YP_DS_PATH_MAX];
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.') continue;
        int n = snprintf(child, sizeof child, "%s/%s", dir, e->d_name);
        if (n < 0 || (size_t)n >= sizeof child || stat(child, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) rc = yp_ds_paths_add(todo, child);
        else if (is_image(e->d_name)) rc = yp_ds_paths_add(images, child);
    }
    closedir(d);
    return rc;
}

/* Walks the tree under folder top without recursion (a stack of folders to visit). */
static int walk_folder(const char *top, yp_ds_paths *images) {
    yp_ds_paths todo = {0};
    dir_id *seen = NULL;
    int64_t n_seen = 0, cap_seen = 0;
    char dir[YP_DS_PATH_MAX];
    int rc = yp_ds_paths_add(&todo, top);
    while (rc == 0 && todo.n > 0) {
        struct stat st;
        snprintf(dir, sizeof dir, "%s", yp_ds_paths_at(&todo, todo.n - 1));
        todo.len = todo.off[--todo.n]; /* pop */
        if (stat(dir, &st) != 0) continue;
        int again = seen_before(&seen, &n_seen, &cap_seen, &st);
        if (again < 0) rc = -1;
        else if (!again) rc = list_folder(dir, &todo, images);
    }
    free(seen);
    yp_ds_paths_free(&todo);
    return rc;
}

/* ---- a list ---- */

/* Trims whitespace at both ends of s in place. Returns the trimmed start. */
static char *trim(char *s) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    while (isspace((unsigned char)*s)) s++;
    return s;
}

/* Adds the images named in the text file `list`, one per line. "./x" and other relative paths
 * are taken from the list's folder (YOLOv5 does this for "./x" only). Other lines are skipped.
 * A UTF-8 byte order mark at the start of the file is skipped; one elsewhere is named. */
static int read_list(const char *list, const char *where, const char *root, yp_ds_paths *images,
                     yp_dataset_stats *st, yp_err *err) {
    yp_err why;
    FILE *f = yp_file_fopen(list, "an image list", YP_DS_MAX_LIST_BYTES, &why);
    if (!f) return yp_err_set(err, "%s: the image list %s", where, why.msg);
    const char *slash = strrchr(list, '/');
    int dir_len = slash ? (int)(slash - list) : 1;
    const char *dir = slash ? list : ".";
    char *line = NULL, path[YP_DS_PATH_MAX], problem[512];
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (rc == 0 && getline(&line, &cap, f) != -1) {
        char *name = line;
        if (lineno++ == 0 && strncmp(name, UTF8_BOM, 3) == 0) name += 3; /* as Python's utf-8-sig */
        name = trim(name);
        if (!is_image(name)) continue;
        if (name[0] == '.' && name[1] == '/') name += 2;
        int n = name[0] == '/' ? snprintf(path, sizeof path, "%s", name)
                               : snprintf(path, sizeof path, "%.*s/%s", dir_len, dir, name);
        struct stat sb;
        if (n > 0 && (size_t)n < sizeof path && stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
            if (yp_ds_paths_add(images, path)) rc = yp_err_set(err, "%s: out of memory", where);
            continue;
        }
        if (strstr(name, UTF8_BOM))
            snprintf(problem, sizeof problem, "%s:%d: the line contains a UTF-8 byte order mark (BOM); save the list "
                     "as UTF-8 without BOM", yp_ds_shown(list, root), lineno);
        else if (n > 0 && (size_t)n < sizeof path && stat(path, &sb) == 0)
            snprintf(problem, sizeof problem, "%s:%d: %.200s is a folder, not an image; fix the line",
                     yp_ds_shown(list, root), lineno, name);
        else
            snprintf(problem, sizeof problem, "%s:%d: image %.200s does not exist; fix the line or add the image",
                     yp_ds_shown(list, root), lineno, name);
        yp_ds_note_bad(st, problem);
    }
    if (rc == 0 && ferror(f))
        rc = yp_err_set(err, "%s: cannot read the image list %s; check the file", where, list);
    free(line);
    fclose(f);
    return rc;
}

int yp_ds_collect(const char *entry, const char *where, const char *root, yp_ds_paths *images,
                  yp_dataset_stats *st, yp_err *err) {
    struct stat sb;
    if (stat(entry, &sb) == 0 && S_ISDIR(sb.st_mode))
        return walk_folder(entry, images) ? yp_err_set(err, "%s: out of memory", where) : 0;
    return read_list(entry, where, root, images, st, err);
}
