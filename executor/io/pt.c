/* pt.c - PyTorch .pt files (yp_pt.h): the archive opened (pt_zip.c), its pickle run (pt_pickle.c),
 * its state dict found (pt_state.c), and each tensor checked against its storage record (dtype,
 * contiguous strides, extents in checked arithmetic) before an entry is made for it. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pt_internal.h"
#include "yp_file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pt.c hands out torch's little-endian tensor bytes as they are: a little-endian host is needed"
#endif

static const char *const FIX = "the file is damaged or not one torch.save wrote; re-save it with torch.save";

int yp_pt_sniff(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    unsigned char head[PT_HEAD_BYTES] = {0};
    struct stat st;
    ssize_t n = fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) ? pread(fd, head, sizeof head, 0) : -1;
    if (fd >= 0) close(fd);
    return n >= 4 && (!memcmp(head, "PK\3\4", 4) || pt_is_legacy(head, (size_t)n));
}

/* The shape of TENSOR value t into e (ndim, shape) and its element count. 0, or -1 with err set. */
static int shape_of(const pt_vm *vm, int t, yp_st_entry *e, int64_t *numel, yp_err *err) {
    const pt_value *size = &vm->v[vm->v[t].b];
    e->ndim = size->n;
    *numel = 1;
    for (int d = 0; d < size->n; d++) {
        e->shape[d] = vm->v[size->items[d]].i;
        if (__builtin_mul_overflow(*numel, e->shape[d], numel))
            return yp_err_set(err, "%s: tensor %s: its size overflows; %s", vm->path, e->name, FIX);
    }
    return 0;
}

/* Whether TENSOR t's strides are row major over e's shape (a size-1 dimension's stride is free). */
static int contiguous(const pt_vm *vm, int t, const yp_st_entry *e, int64_t numel) {
    const pt_value *stride = &vm->v[vm->v[t].c];
    int64_t want = 1;
    if (numel == 0) return 1;
    for (int d = e->ndim - 1; d >= 0; d--) {
        if (e->shape[d] != 1 && vm->v[stride->items[d]].i != want) return 0;
        want *= e->shape[d]; /* <= numel: no overflow */
    }
    return 1;
}

/* Formats TENSOR t's strides as "(27, 9, 3, 1)". */
static void strides_str(const pt_vm *vm, int t, char *buf, size_t n) {
    const pt_value *s = &vm->v[vm->v[t].c];
    size_t at = (size_t)snprintf(buf, n, "(");
    for (int d = 0; d < s->n && at < n; d++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? ", " : "", (long long)vm->v[s->items[d]].i);
    if (at < n) snprintf(buf + at, n - at, ")");
}

/* Entry e (its name set) and record of tensor value t: dtype, shape, byte range in its storage record,
 * all checked. 0, or -1 with err set. */
static int entry_of(pt_zip *z, const pt_vm *vm, int t, yp_st_entry *e, int64_t *record, yp_err *err) {
    const pt_value *st = &vm->v[vm->v[t].a], *key = &vm->v[st->a];
    int64_t numel, elem, bytes, begin, end, storage_bytes, record_bytes;
    if (st->dtype < 0)
        return yp_err_set(err,
                          "%s: tensor %s: a storage type without a float or integer dtype here (complex or "
                          "quantized?); give a checkpoint of float weights",
                          vm->path, e->name);
    e->dtype = (yp_st_dtype)st->dtype;
    elem = yp_st_dtype_size(e->dtype);
    if (shape_of(vm, t, e, &numel, err)) return -1;
    if (!contiguous(vm, t, e, numel)) {
        char s[160], sh[160];
        strides_str(vm, t, s, sizeof s);
        yp_st_shape_str(e->ndim, e->shape, sh, sizeof sh);
        return yp_err_set(err,
                          "%s: tensor %s: shape %s with strides %s is not contiguous; re-save it with contiguous "
                          "tensors ({k: v.contiguous() for k, v in sd.items()})",
                          vm->path, e->name, sh, s);
    }
    if (__builtin_mul_overflow(numel, elem, &bytes) || bytes > YP_PT_MAX_TENSOR_BYTES ||
        __builtin_mul_overflow(vm->v[t].i, elem, &begin) || __builtin_add_overflow(begin, bytes, &end) ||
        __builtin_mul_overflow(st->i, elem, &storage_bytes))
        return yp_err_set(err,
                          "%s: tensor %s: %lld elements at offset %lld of a %lld-element storage, above the reader's "
                          "limit of %lld bytes a tensor; %s",
                          vm->path, e->name, (long long)numel, (long long)vm->v[t].i, (long long)st->i,
                          (long long)YP_PT_MAX_TENSOR_BYTES, FIX);
    if (pt_zip_storage(z, key->s, key->len, record, &record_bytes, err)) return -1;
    if (end > storage_bytes || end > record_bytes)
        return yp_err_set(err, "%s: tensor %s: bytes [%lld, %lld) of a storage of %lld bytes whose record has %lld; %s",
                          vm->path, e->name, (long long)begin, (long long)end, (long long)storage_bytes,
                          (long long)record_bytes, FIX);
    e->begin = begin, e->end = end;
    return 0;
}

/* f->by_name sorted, with no name twice. */
static int index_names(yp_pt_file *f, yp_err *err) {
    int dup = 0, rc = (f->by_name = malloc((size_t)f->n * sizeof *f->by_name + 1)) ? 0 : -1;
    if (!rc) rc = yp_st_sort_names(f->e, f->n, f->by_name, &dup);
    if (rc < 0) return yp_err_set(err, "%s: out of memory", f->path);
    if (rc) return yp_err_set(err, "%s: two tensors named %s; %s", f->path, f->e[dup].name, FIX);
    return 0;
}

/* The entries of the state dict t[0..n) of vm. */
static int make_entries(yp_pt_file *f, const pt_vm *vm, pt_named *t, int n, yp_err *err) {
    f->e = calloc((size_t)n + 1, sizeof *f->e);
    f->record = calloc((size_t)n + 1, sizeof *f->record);
    if (!f->e || !f->record) return yp_err_set(err, "%s: out of memory", f->path);
    for (int i = 0; i < n; i++) {
        f->e[i].name = t[i].name, t[i].name = NULL; /* now the entry's */
        f->n++;
        if (entry_of(f->zip, vm, t[i].t, &f->e[i], &f->record[i], err)) return -1;
    }
    return index_names(f, err);
}

int yp_pt_open(yp_pt_file *f, const char *path, yp_err *err) {
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return yp_err_set(err, "%s: out of memory", path);
    unsigned char *pkl = NULL;
    size_t n = 0;
    pt_vm vm;
    pt_named *t = NULL;
    int nt = 0, rc = -1;
    memset(&vm, 0, sizeof vm);
    if ((f->zip = pt_zip_open(f->path, err)) && !pt_zip_read_pickle(f->zip, &pkl, &n, err) &&
        !pt_vm_run(&vm, f->path, pkl, n, err) && !pt_state_dict(&vm, &t, &nt, f->what, sizeof f->what, err))
        rc = make_entries(f, &vm, t, nt, err);
    pt_named_free(t, nt);
    pt_vm_free(&vm);
    free(pkl);
    if (rc) yp_pt_close(f);
    return rc;
}

void yp_pt_close(yp_pt_file *f) {
    for (int i = 0; i < f->n; i++) free(f->e[i].name);
    pt_zip_close(f->zip);
    free(f->e), free(f->record), free(f->by_name), free(f->path);
    memset(f, 0, sizeof *f);
}

int yp_pt_find(const yp_pt_file *f, const char *name) { return yp_st_find_in(f->e, f->by_name, f->n, name); }

int yp_pt_read(const yp_pt_file *f, int i, void *dst, yp_err *err) {
    const yp_st_entry *e = &f->e[i];
    return pt_zip_read(f->zip, f->record[i], e->begin, dst, e->end - e->begin, e->name, err);
}
