/* safetensors.c - the safetensors format (yp_safetensors.h): the dtype table, the writer (header
 * built with cJSON, numbers as plain integers, padded with spaces to 8 bytes; written atomically
 * by yp_atomic_file.h) and the validating reader (regular files only, every header field checked,
 * data read on demand). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "yp_safetensors.h"
#include "yp_file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads and writes little-endian data in place: a little-endian host is needed"
#endif

static const struct {
    const char *name;
    int64_t size;
} dtypes[YP_ST_DTYPE_COUNT] = {
    [YP_ST_BOOL] = {"BOOL", 1}, [YP_ST_U8] = {"U8", 1},   [YP_ST_I8] = {"I8", 1},
    [YP_ST_F8_E5M2] = {"F8_E5M2", 1}, [YP_ST_F8_E4M3] = {"F8_E4M3", 1}, [YP_ST_I16] = {"I16", 2},
    [YP_ST_U16] = {"U16", 2}, [YP_ST_F16] = {"F16", 2},   [YP_ST_BF16] = {"BF16", 2},
    [YP_ST_I32] = {"I32", 4}, [YP_ST_U32] = {"U32", 4},   [YP_ST_F32] = {"F32", 4},
    [YP_ST_F64] = {"F64", 8}, [YP_ST_I64] = {"I64", 8},   [YP_ST_U64] = {"U64", 8},
};

const char *yp_st_dtype_name(yp_st_dtype d) { return d >= 0 && d < YP_ST_DTYPE_COUNT ? dtypes[d].name : "?"; }

int yp_st_dtype_parse(const char *s) {
    for (int d = 0; d < YP_ST_DTYPE_COUNT; d++)
        if (!strcmp(s, dtypes[d].name)) return d;
    return -1;
}

int64_t yp_st_dtype_size(yp_st_dtype d) { return d >= 0 && d < YP_ST_DTYPE_COUNT ? dtypes[d].size : 0; }

int yp_st_nbytes(yp_st_dtype d, int ndim, const int64_t *shape, int64_t *bytes) {
    int64_t r = yp_st_dtype_size(d);
    if (!r || ndim < 0 || ndim > YP_ST_MAX_DIMS) return -1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || __builtin_mul_overflow(r, shape[i], &r)) return -1;
    *bytes = r;
    return 0;
}

void yp_st_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
    size_t at = 0;
    at += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (at < n) snprintf(buf + at, n - at, "]");
}

/* Is s[0..n) valid UTF-8 without NUL bytes (RFC 3629: no overlong forms, no surrogates, at most
 * U+10FFFF)? */
static int utf8_ok(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!c || !len || i + len > n) return 0;
        unsigned cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

/* ================================================================ writing */

static cJSON *raw_int(int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return cJSON_CreateRaw(buf);
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks d: names, shapes, UTF-8 strings; the data's bytes into total. 0, or -1 with err. */
static int check_desc(const char *path, const yp_st_desc *d, int64_t *total, yp_err *err) {
    const char **names = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof *names);
    if (!names) return yp_err_set(err, "%s: out of memory", path);
    int rc = 0;
    *total = 0;
    for (int i = 0; i < d->n && !rc; i++) {
        const yp_st_tensor *t = &d->tensors[i];
        int64_t b;
        names[i] = t->name;
        if (!t->name || !*t->name || !strcmp(t->name, "__metadata__") ||
            !utf8_ok((const void *)t->name, strlen(t->name)))
            rc = yp_err_set(err, "%s: tensor %d: a name must be non-empty UTF-8 other than __metadata__", path, i);
        else if (yp_st_nbytes(t->dtype, t->ndim, t->shape, &b) || __builtin_add_overflow(*total, b, total))
            rc = yp_err_set(err, "%s: tensor %s: bad dtype or shape (0..%d non-negative dimensions, no overflow)", path,
                            t->name, YP_ST_MAX_DIMS);
        else if (!t->data && !d->source)
            rc = yp_err_set(err, "%s: tensor %s: no data and no source", path, t->name);
    }
    for (int i = 0; i < d->n_meta && !rc; i++)
        if (!d->meta_keys[i] || !d->meta_values[i] ||
            !utf8_ok((const void *)d->meta_keys[i], strlen(d->meta_keys[i])) ||
            !utf8_ok((const void *)d->meta_values[i], strlen(d->meta_values[i])))
            rc = yp_err_set(err, "%s: __metadata__ entry %d: keys and values must be UTF-8 strings", path, i);
    if (!rc && d->n > 1) {
        qsort(names, (size_t)d->n, sizeof *names, name_cmp);
        for (int i = 1; i < d->n && !rc; i++)
            if (!strcmp(names[i - 1], names[i]))
                rc = yp_err_set(err, "%s: tensor %s: the name is given twice", path, names[i]);
    }
    free(names);
    return rc;
}

/* The header text of d, padded with spaces to a multiple of 8 bytes (malloc'd; *len its length),
 * or NULL when out of memory. */
static char *header_text(const yp_st_desc *d, size_t *len) {
    cJSON *root = cJSON_CreateObject(), *meta = NULL;
    int ok = root != NULL;
    if (ok && d->n_meta > 0) ok = (meta = cJSON_AddObjectToObject(root, "__metadata__")) != NULL;
    for (int i = 0; ok && i < d->n_meta; i++)
        ok = cJSON_AddStringToObject(meta, d->meta_keys[i], d->meta_values[i]) != NULL;
    int64_t at = 0;
    for (int i = 0; ok && i < d->n; i++) {
        const yp_st_tensor *t = &d->tensors[i];
        int64_t b = 0;
        yp_st_nbytes(t->dtype, t->ndim, t->shape, &b); /* check_desc proved it */
        cJSON *o = cJSON_AddObjectToObject(root, t->name), *shape = cJSON_CreateArray(), *offs = cJSON_CreateArray();
        ok = o && shape && offs && cJSON_AddStringToObject(o, "dtype", yp_st_dtype_name(t->dtype));
        for (int k = 0; ok && k < t->ndim; k++) ok = cJSON_AddItemToArray(shape, raw_int(t->shape[k]));
        ok = ok && cJSON_AddItemToArray(offs, raw_int(at)) && cJSON_AddItemToArray(offs, raw_int(at + b));
        if (ok) {
            cJSON_AddItemToObject(o, "shape", shape), cJSON_AddItemToObject(o, "data_offsets", offs);
        } else {
            cJSON_Delete(shape), cJSON_Delete(offs);
        }
        at += b;
    }
    char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!s) return NULL;
    size_t n = strlen(s), pad = (8 - n % 8) % 8;
    char *out = realloc(s, n + pad + 1);
    if (!out) {
        free(s);
        return NULL;
    }
    memset(out + n, ' ', pad), out[n + pad] = 0;
    *len = n + pad;
    return out;
}

typedef struct {
    const yp_st_desc *d;
    const char *hdr;
    size_t hlen;
} body_ctx;

/* yp_af_body: the length, the header and every tensor's data. 0, or -1 with errno set, or -2
 * with err set (*what names the step). */
static int write_body(void *ctx, yp_af_sink *k, const char **what, yp_err *err) {
    const body_ctx *c = ctx;
    const yp_st_desc *d = c->d;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)c->hlen >> (8 * i));
    *what = "writing the header";
    if (yp_af_write(k, len8, 8) || yp_af_write(k, c->hdr, c->hlen)) return -1;
    size_t most = 1;
    for (int i = 0; i < d->n; i++) {
        int64_t b = 0;
        yp_st_nbytes(d->tensors[i].dtype, d->tensors[i].ndim, d->tensors[i].shape, &b);
        if (!d->tensors[i].data && (size_t)b > most) most = (size_t)b;
    }
    void *stage = d->source ? malloc(most) : NULL;
    if (d->source && !stage) {
        *what = "staging the data";
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    *what = "writing the data";
    for (int i = 0; i < d->n && !rc; i++) {
        const yp_st_tensor *t = &d->tensors[i];
        int64_t b = 0;
        yp_st_nbytes(t->dtype, t->ndim, t->shape, &b);
        const void *src = t->data;
        if (!src) {
            if (d->source(d->source_ctx, i, stage, (size_t)b, err)) {
                *what = "reading the data";
                rc = -2; /* err is set */
                break;
            }
            src = stage;
        }
        rc = yp_af_write(k, src, (size_t)b);
    }
    free(stage);
    return rc;
}

int yp_st_save(const char *path, const yp_st_desc *d, const yp_st_faults *faults, yp_err *err) {
    int64_t total;
    if (check_desc(path, d, &total, err)) return -1;
    size_t hlen = 0;
    char *hdr = header_text(d, &hlen);
    if (!hdr) return yp_err_set(err, "%s: out of memory building the header", path);
    if ((int64_t)hlen > YP_ST_MAX_HEADER) {
        free(hdr);
        return yp_err_set(err, "%s: the header would be %zu bytes, above the format's limit of %lld", path, hlen,
                          YP_ST_MAX_HEADER);
    }
    body_ctx c = {d, hdr, hlen};
    int rc = yp_af_save(path, write_body, &c, faults, err);
    free(hdr);
    return rc;
}

/* ================================================================ reading */

void yp_st_close(yp_st_file *f) {
    if (f->path && f->fd >= 0) close(f->fd);
    for (int i = 0; i < f->n; i++) free(f->e[i].name);
    for (int i = 0; i < f->n_meta; i++) free(f->meta_key[i]), free(f->meta_value[i]);
    free(f->e), free(f->by_name), free(f->meta_key), free(f->meta_value), free(f->path);
    memset(f, 0, sizeof *f);
}

/* Reads exactly n bytes at off. 0, or -1 with errno set (EIO on a short read). */
static int read_at(int fd, void *dst, size_t n, int64_t off) {
    char *p = dst;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (r == 0) errno = EIO;
            return -1;
        }
        p += r, n -= (size_t)r, off += r;
    }
    return 0;
}

/* Opens path if it is a regular file within the size cap (yp_file.h: never blocks). The
 * descriptor, or -1 with err set. */
static int open_regular(const char *path, int64_t *size, yp_err *err) {
    return yp_file_open(path, "a safetensors file", YP_ST_MAX_FILE, size, err);
}

/* The deepest nesting of objects and arrays in the JSON text s[0..n), strings skipped. */
static int json_depth(const char *s, size_t n) {
    int depth = 0, most = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > most) most = depth;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return most;
}

/* A JSON number that is an integer in 0 .. 2^53 (exact in a double) into *out. */
static int json_index(const cJSON *v, int64_t *out) {
    if (!cJSON_IsNumber(v)) return -1;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || floor(d) != d) return -1;
    *out = (int64_t)d;
    return 0;
}

/* An array of at most `most` such integers into out, its length into *n. */
static int json_index_array(const cJSON *a, int most, int64_t *out, int *n) {
    if (!cJSON_IsArray(a)) return -1;
    int k = 0;
    for (const cJSON *v = a->child; v; v = v->next, k++)
        if (k >= most || json_index(v, &out[k])) return -1;
    *n = k;
    return 0;
}

/* The "__metadata__" member m into f. */
static int parse_meta(yp_st_file *f, const cJSON *m, yp_err *err) {
    if (!cJSON_IsObject(m)) return yp_err_set(err, "%s: header: __metadata__: expected an object of strings", f->path);
    int n = cJSON_GetArraySize(m);
    f->meta_key = calloc((size_t)n + 1, sizeof(char *)), f->meta_value = calloc((size_t)n + 1, sizeof(char *));
    if (!f->meta_key || !f->meta_value) return yp_err_set(err, "%s: out of memory", f->path);
    for (const cJSON *v = m->child; v; v = v->next) {
        if (!cJSON_IsString(v))
            return yp_err_set(err, "%s: header: __metadata__.%s: expected a string", f->path, v->string);
        for (int i = 0; i < f->n_meta; i++)
            if (!strcmp(f->meta_key[i], v->string))
                return yp_err_set(err, "%s: header: __metadata__.%s: the key is given twice", f->path, v->string);
        int i = f->n_meta++;
        f->meta_key[i] = strdup(v->string), f->meta_value[i] = strdup(v->valuestring);
        if (!f->meta_key[i] || !f->meta_value[i]) return yp_err_set(err, "%s: out of memory", f->path);
    }
    return 0;
}

/* Tensor member v into entry e. */
static int parse_entry(const yp_st_file *f, const cJSON *v, yp_st_entry *e, yp_err *err) {
    const char *nm = v->string;
    if (!*nm) return yp_err_set(err, "%s: header: a tensor has an empty name", f->path);
    if (!cJSON_IsObject(v)) return yp_err_set(err, "%s: header: tensor %s: expected an object", f->path, nm);
    const cJSON *dt = NULL, *shape = NULL, *offs = NULL;
    for (const cJSON *k = v->child; k; k = k->next) {
        const cJSON **slot = !strcmp(k->string, "dtype") ? &dt : !strcmp(k->string, "shape") ? &shape
                           : !strcmp(k->string, "data_offsets") ? &offs : NULL;
        if (!slot)
            return yp_err_set(err, "%s: header: tensor %s: unknown key \"%s\" (dtype, shape, data_offsets only)",
                              f->path, nm, k->string);
        if (*slot) return yp_err_set(err, "%s: header: tensor %s.%s: the key is given twice", f->path, nm, k->string);
        *slot = k;
    }
    if (!dt || !shape || !offs)
        return yp_err_set(err, "%s: header: tensor %s: missing %s", f->path, nm,
                          !dt ? "dtype" : !shape ? "shape" : "data_offsets");
    int d = cJSON_IsString(dt) ? yp_st_dtype_parse(dt->valuestring) : -1;
    if (d < 0)
        return yp_err_set(err, "%s: header: tensor %s.dtype: not a safetensors dtype (F32, F16, BF16, I64, ...)",
                          f->path, nm);
    e->dtype = (yp_st_dtype)d;
    if (json_index_array(shape, YP_ST_MAX_DIMS, e->shape, &e->ndim))
        return yp_err_set(err, "%s: header: tensor %s.shape: expected at most %d non-negative integers", f->path, nm,
                          YP_ST_MAX_DIMS);
    int64_t o[2];
    int no = 0;
    if (json_index_array(offs, 2, o, &no) || no != 2 || o[1] < o[0])
        return yp_err_set(err, "%s: header: tensor %s.data_offsets: expected [begin, end] with 0 <= begin <= end",
                          f->path, nm);
    e->begin = o[0], e->end = o[1];
    int64_t need;
    char sh[128];
    yp_st_shape_str(e->ndim, e->shape, sh, sizeof sh);
    if (yp_st_nbytes(e->dtype, e->ndim, e->shape, &need))
        return yp_err_set(err, "%s: header: tensor %s.shape: %s %s overflows 64 bits", f->path, nm, dt->valuestring,
                          sh);
    if (need != e->end - e->begin)
        return yp_err_set(err,
                          "%s: header: tensor %s: dtype %s and shape %s need %lld bytes, data_offsets [%lld, %lld] "
                          "span %lld",
                          f->path, nm, dt->valuestring, sh, (long long)need, (long long)e->begin, (long long)e->end,
                          (long long)(e->end - e->begin));
    e->name = strdup(nm);
    return e->name ? 0 : yp_err_set(err, "%s: out of memory", f->path);
}

static int by_offset(const void *a, const void *b) {
    const yp_st_entry *x = *(const yp_st_entry *const *)a, *y = *(const yp_st_entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(const yp_st_entry *const *)a)->name, (*(const yp_st_entry *const *)b)->name);
}

int yp_st_sort_names(const yp_st_entry *e, int n, int *order, int *dup) {
    const yp_st_entry **ord = malloc((size_t)(n ? n : 1) * sizeof *ord);
    if (!ord) return -1;
    for (int i = 0; i < n; i++) ord[i] = &e[i];
    qsort(ord, (size_t)n, sizeof *ord, by_name);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        order[i] = (int)(ord[i] - e);
        if (i && !rc && !strcmp(ord[i - 1]->name, ord[i]->name)) *dup = order[i], rc = 1;
    }
    free(ord);
    return rc;
}

int yp_st_find_in(const yp_st_entry *e, const int *order, int n, const char *name) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(e[order[mid]].name, name);
        if (!c) return order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

/* The data offsets cover [0, data bytes) exactly, without overlap or gap; names are unique.
 * Builds f->by_name. */
static int check_layout(yp_st_file *f, yp_err *err) {
    const yp_st_entry **ord = malloc((size_t)(f->n ? f->n : 1) * sizeof *ord);
    f->by_name = malloc((size_t)(f->n ? f->n : 1) * sizeof *f->by_name);
    if (!ord || !f->by_name) {
        free(ord);
        return yp_err_set(err, "%s: out of memory", f->path);
    }
    int rc = 0, dup = 0, sorted = yp_st_sort_names(f->e, f->n, f->by_name, &dup);
    if (sorted < 0) rc = yp_err_set(err, "%s: out of memory", f->path);
    else if (sorted) rc = yp_err_set(err, "%s: header: tensor %s: the name is given twice", f->path, f->e[dup].name);
    for (int i = 0; i < f->n; i++) ord[i] = &f->e[i];
    qsort(ord, (size_t)f->n, sizeof *ord, by_offset);
    int64_t at = 0, data = f->file_bytes - f->data_start;
    const yp_st_entry *prev = NULL;
    for (int k = 0; k < f->n && !rc; k++) {
        const yp_st_entry *e = ord[k];
        if (e->begin < at)
            rc = yp_err_set(err, "%s: header: tensor %s.data_offsets: [%lld, %lld] overlaps tensor %s's [%lld, %lld]",
                            f->path, e->name, (long long)e->begin, (long long)e->end, prev->name,
                            (long long)prev->begin, (long long)prev->end);
        else if (e->begin > at)
            rc = yp_err_set(err,
                            "%s: header: tensor %s.data_offsets: begins at %lld, but the data before it ends at %lld "
                            "(a gap; the format needs the tensors to cover the data contiguously)",
                            f->path, e->name, (long long)e->begin, (long long)at);
        at = e->end, prev = e;
    }
    if (!rc && at != data)
        rc = yp_err_set(err, "%s: header: data_offsets cover %lld bytes, but the file holds %lld after the header (%s)",
                        f->path, (long long)at, (long long)data, at > data ? "truncated" : "trailing bytes");
    free(ord);
    return rc;
}

/* Parses and validates the header text (n bytes) into f. */
static int parse_header(yp_st_file *f, const char *text, size_t n, yp_err *err) {
    if (!n || text[0] != '{')
        return yp_err_set(err, "%s: header: does not start with '{'; not a safetensors file", f->path);
    if (!utf8_ok((const unsigned char *)text, n))
        return yp_err_set(err, "%s: header: not valid UTF-8 (or holds a NUL byte)", f->path);
    if (json_depth(text, n) > YP_ST_MAX_DEPTH)
        return yp_err_set(err, "%s: header: nested deeper than %d levels; not a safetensors header", f->path,
                          YP_ST_MAX_DEPTH);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!root) {
        long at = end && end >= text ? (long)(end - text) : -1;
        return yp_err_set(err, "%s: header: malformed JSON near byte %ld", f->path, at);
    }
    for (const char *p = end; p < text + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return yp_err_set(err, "%s: header: byte %ld: text after the JSON object (only space padding may follow)",
                              f->path, (long)(p - text));
        }
    int rc = cJSON_IsObject(root) ? 0 : yp_err_set(err, "%s: header: expected a JSON object", f->path);
    int most = cJSON_GetArraySize(root);
    f->e = calloc((size_t)most + 1, sizeof *f->e);
    if (!rc && !f->e) rc = yp_err_set(err, "%s: out of memory", f->path);
    int had_meta = 0;
    for (const cJSON *v = root->child; v && !rc; v = v->next) {
        if (!strcmp(v->string, "__metadata__")) {
            rc = had_meta++ ? yp_err_set(err, "%s: header: __metadata__ is given twice", f->path)
                            : parse_meta(f, v, err);
        } else {
            rc = parse_entry(f, v, &f->e[f->n], err);
            if (!rc) f->n++;
        }
    }
    cJSON_Delete(root);
    return rc ? -1 : check_layout(f, err);
}

int yp_st_open(yp_st_file *f, const char *path, yp_err *err) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path = strdup(path);
    if (!f->path) return yp_err_set(err, "%s: out of memory", path);
    int64_t size = 0;
    f->fd = open_regular(path, &size, err);
    if (f->fd < 0) {
        yp_st_close(f);
        return -1;
    }
    f->file_bytes = size;
    unsigned char len8[8];
    if (size < 8 || read_at(f->fd, len8, 8, 0)) {
        yp_err_set(err, "%s: truncated: %lld bytes, fewer than the 8 of the header length", path, (long long)size);
        yp_st_close(f);
        return -1;
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len8[i];
    if (n > (uint64_t)YP_ST_MAX_HEADER || n > (uint64_t)(size - 8)) {
        yp_err_set(err, "%s: header length: %llu bytes, %s", path, (unsigned long long)n,
                   n > (uint64_t)(size - 8) ? "past the end of the file (truncated, or not a safetensors file)"
                                            : "above the format's limit of 100000000");
        yp_st_close(f);
        return -1;
    }
    f->data_start = 8 + (int64_t)n;
    char *text = malloc((size_t)n + 1);
    int rc = -1;
    if (!text) yp_err_set(err, "%s: out of memory reading the %llu-byte header", path, (unsigned long long)n);
    else if (read_at(f->fd, text, (size_t)n, 8)) yp_err_set(err, "%s: reading the header: %s", path, strerror(errno));
    else text[n] = 0, rc = parse_header(f, text, (size_t)n, err);
    free(text);
    if (rc) yp_st_close(f);
    return rc;
}

int yp_st_find(const yp_st_file *f, const char *name) { return yp_st_find_in(f->e, f->by_name, f->n, name); }

const char *yp_st_meta(const yp_st_file *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta_key[i], key)) return f->meta_value[i];
    return NULL;
}

int yp_st_read(const yp_st_file *f, int i, void *dst, yp_err *err) {
    const yp_st_entry *e = &f->e[i];
    if (read_at(f->fd, dst, (size_t)(e->end - e->begin), f->data_start + e->begin))
        return yp_err_set(err, "%s: tensor %s: reading its data: %s (did the file change since it was opened?)",
                          f->path, e->name, strerror(errno));
    return 0;
}
