/* pt_pickle.c - the pickle machine of the .pt reader (pt_internal.h): the opcodes of protocols 2 to
 * 5 that torch.save's pickler writes, building plain values, stand-ins for whatever a pickle would
 * have called, and tensors over storage records. Nothing is imported or called. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt_internal.h"

/* The machine's working state for one run. */
typedef struct {
    pt_vm *vm;
    yp_err *err;
    size_t at, op_at; /* the next byte; the current opcode's */
    int32_t *stack, ns, cap_s;
    int32_t *marks, nm, cap_m; /* the stack's height at each open MARK */
    int32_t *memo, cap_memo, memo_set;
    int stopped; /* STOP was reached */
} run;

enum { V_NONE, V_TRUE, V_FALSE }; /* the three constants, made once */

static const char *const FIX = "not a pickle torch.save writes (damaged, or made by hand?); re-save it with torch.save";

/* One line: path, where, what; the fix. Returns -1. */
static int fail(run *r, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return yp_err_set(r->err, "%s: data.pkl byte %zu: %s; %s", r->vm->path, r->op_at, what, FIX);
}

/* ---------------------------------------------------------------- values */

/* Array p (*cap elements of `size` bytes, n of them used) with room for one more: p itself, or p
 * reallocated to twice the size (*cap updated). NULL with err set when out of memory. The callers
 * cap n far below INT32_MAX / 2. */
static void *room(run *r, void *p, int32_t n, int32_t *cap, size_t size) {
    if (n < *cap) return p;
    int32_t c = *cap ? *cap * 2 : 4; /* small: most containers hold a few items */
    void *q = realloc(p, (size_t)c * size);
    if (!q)
        yp_err_set(r->err, "%s: out of memory unpickling", r->vm->path);
    else
        *cap = c;
    return q;
}

/* A new value of kind k (zeroed, a b c -1), its index; -1 with err set at the cap. */
static int new_value(run *r, pt_kind k) {
    pt_vm *vm = r->vm;
    if (vm->nv >= YP_PT_MAX_VALUES) return fail(r, "more than %d values", YP_PT_MAX_VALUES);
    pt_value *grown = room(r, vm->v, vm->nv, &vm->cap_v, sizeof *vm->v);
    if (!grown) return -1;
    vm->v = grown;
    pt_value *v = &vm->v[vm->nv];
    memset(v, 0, sizeof *v);
    v->kind = (uint8_t)k, v->a = v->b = v->c = -1;
    return vm->nv++;
}

/* Appends x to value c's items. 0, or -1 with err set at the cap. */
static int add_item(run *r, int c, int32_t x) {
    pt_value *v = &r->vm->v[c];
    if (r->vm->n_items >= YP_PT_MAX_ITEMS) return fail(r, "more than %d items in containers", YP_PT_MAX_ITEMS);
    int32_t *items = room(r, v->items, v->n, &v->cap, sizeof *v->items);
    if (!items) return -1;
    v->items = items;
    v->items[v->n++] = x;
    r->vm->n_items++;
    return 0;
}

int pt_is_global(const pt_vm *vm, int i, const char *module, const char *name) {
    if (i < 0 || i >= vm->nv || vm->v[i].kind != PT_GLOBAL) return 0;
    const pt_value *v = &vm->v[i];
    return v->len == strlen(module) && !memcmp(v->s, module, v->len) && v->len2 == strlen(name) &&
           !memcmp(v->s2, name, v->len2);
}

static int is_str(const pt_vm *vm, int i, const char *s) {
    const pt_value *v = &vm->v[i];
    return v->kind == PT_STR && v->len == strlen(s) && !memcmp(v->s, s, v->len);
}

int pt_get(const pt_vm *vm, int i, const char *key) {
    if (i < 0 || (vm->v[i].kind != PT_DICT && vm->v[i].kind != PT_OBJECT)) return -1;
    const pt_value *d = &vm->v[i];
    for (int k = d->n / 2 - 1; k >= 0; k--) /* the last one set wins, as in a dict */
        if (is_str(vm, d->items[2 * k], key)) return d->items[2 * k + 1];
    return -1;
}

void pt_describe(const pt_vm *vm, int i, char *buf, size_t size) {
    static const char *const names[] = {"None",  "a bool", "an int",    "an int",    "a float",
                                        "a str", "bytes",  "a tuple",   "a list",    "a dict",
                                        "a set", "a name", "an object", "a storage", "a tensor"};
    const pt_value *v = i >= 0 && i < vm->nv ? &vm->v[i] : NULL;
    const pt_value *cls = v && v->kind == PT_OBJECT && v->a >= 0 ? &vm->v[v->a] : NULL;
    if (cls && cls->kind == PT_GLOBAL)
        snprintf(buf, size, "a %.*s.%.*s", (int)(cls->len > 120 ? 120 : cls->len), cls->s,
                 (int)(cls->len2 > 120 ? 120 : cls->len2), cls->s2);
    else
        snprintf(buf, size, "%s", v ? names[v->kind] : "nothing");
}

/* ---------------------------------------------------------------- the stack, marks and memo */

static int push(run *r, int32_t x) {
    if (r->ns >= YP_PT_MAX_STACK) return fail(r, "the stack holds more than %d values", YP_PT_MAX_STACK);
    int32_t *s = room(r, r->stack, r->ns, &r->cap_s, sizeof *r->stack);
    if (!s) return -1;
    r->stack = s;
    r->stack[r->ns++] = x;
    return 0;
}

/* The stack's height at the innermost open MARK (0 without one): nothing below it may be popped. */
static int32_t base(const run *r) { return r->nm ? r->marks[r->nm - 1] : 0; }

static int pop(run *r, int32_t *x) {
    if (r->ns <= base(r)) return fail(r, "pops from an empty stack");
    *x = r->stack[--r->ns];
    return 0;
}

static int top(run *r, int32_t *x) {
    if (r->ns <= base(r)) return fail(r, "reads the top of an empty stack");
    *x = r->stack[r->ns - 1];
    return 0;
}

static int mark(run *r) {
    if (r->nm >= YP_PT_MAX_MARKS) return fail(r, "more than %d open MARKs", YP_PT_MAX_MARKS);
    int32_t *m = room(r, r->marks, r->nm, &r->cap_m, sizeof *r->marks);
    if (!m) return -1;
    r->marks = m;
    r->marks[r->nm++] = r->ns;
    return 0;
}

/* Closes the innermost MARK: the values pushed since are stack[*start .. r->ns), which the caller
 * uses and then drops by setting r->ns = *start. */
static int pop_mark(run *r, int32_t *start) {
    if (!r->nm) return fail(r, "closes a MARK that was never opened");
    *start = r->marks[--r->nm];
    return 0;
}

static int memo_put(run *r, uint64_t slot) {
    int32_t x;
    if (top(r, &x)) return -1;
    if (slot >= YP_PT_MAX_MEMO)
        return fail(r, "memo slot %llu is above the limit of %d", (unsigned long long)slot, YP_PT_MAX_MEMO);
    if (slot >= (uint64_t)r->cap_memo) {
        int32_t cap = r->cap_memo ? r->cap_memo : 256;
        while ((uint64_t)cap <= slot) cap *= 2;
        int32_t *m = realloc(r->memo, (size_t)cap * sizeof *m);
        if (!m) return yp_err_set(r->err, "%s: out of memory unpickling", r->vm->path);
        for (int32_t i = r->cap_memo; i < cap; i++) m[i] = -1;
        r->memo = m, r->cap_memo = cap;
    }
    r->memo_set += r->memo[slot] < 0;
    r->memo[slot] = x;
    return 0;
}

static int memo_get(run *r, uint64_t slot) {
    if (slot >= (uint64_t)r->cap_memo || r->memo[slot] < 0)
        return fail(r, "memo slot %llu was never set", (unsigned long long)slot);
    return push(r, r->memo[slot]);
}

/* ---------------------------------------------------------------- reading the stream */

static int need(run *r, uint64_t k) {
    if (k > r->vm->n - r->at)
        return fail(r, "needs %llu more bytes, the pickle has %zu", (unsigned long long)k, r->vm->n - r->at);
    return 0;
}

/* The k-byte little-endian unsigned number at the cursor (k <= 8), consumed. */
static int read_le(run *r, int k, uint64_t *out) {
    if (need(r, (uint64_t)k)) return -1;
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--) v = v << 8 | r->vm->p[r->at + (size_t)i];
    r->at += (size_t)k;
    *out = v;
    return 0;
}

/* A STR or BYTES value of the next len bytes, pushed. */
static int push_bytes(run *r, pt_kind k, uint64_t len) {
    if (need(r, len)) return -1;
    if (len > UINT32_MAX) return fail(r, "a string of %llu bytes", (unsigned long long)len);
    int v = new_value(r, k);
    if (v < 0) return -1;
    r->vm->v[v].s = (const char *)r->vm->p + r->at, r->vm->v[v].len = (uint32_t)len;
    r->at += (size_t)len;
    return push(r, v);
}

/* An n-byte little-endian two's complement integer (LONG1, LONG4): INT up to 8 bytes, BIGINT above. */
static int push_long(run *r, uint64_t n) {
    if (need(r, n)) return -1;
    int v = new_value(r, n > 8 ? PT_BIGINT : PT_INT);
    if (v < 0) return -1;
    if (n && n <= 8) {
        uint64_t u = 0;
        for (int i = (int)n - 1; i >= 0; i--) u = u << 8 | r->vm->p[r->at + (size_t)i];
        if (n < 8 && (r->vm->p[r->at + n - 1] & 0x80)) u |= ~(uint64_t)0 << (8 * n); /* sign extension */
        memcpy(&r->vm->v[v].i, &u, 8);
    }
    r->at += (size_t)n;
    return push(r, v);
}

static int push_int(run *r, int64_t x) {
    int v = new_value(r, PT_INT);
    if (v < 0) return -1;
    r->vm->v[v].i = x;
    return push(r, v);
}

/* GLOBAL's "module\nname\n": one line at the cursor, consumed; its bytes into s, n. */
static int read_line(run *r, const char **s, uint32_t *n) {
    const unsigned char *p = r->vm->p + r->at, *nl = memchr(p, '\n', r->vm->n - r->at);
    if (!nl) return fail(r, "GLOBAL's name has no end of line");
    if (nl - p > 4096) return fail(r, "GLOBAL's name is longer than 4096 bytes");
    *s = (const char *)p, *n = (uint32_t)(nl - p);
    r->at += (size_t)(nl - p) + 1;
    return 0;
}

static int push_global(run *r, const char *m, uint32_t ml, const char *n, uint32_t nl) {
    int v = new_value(r, PT_GLOBAL);
    if (v < 0) return -1;
    pt_value *g = &r->vm->v[v];
    g->s = m, g->len = ml, g->s2 = n, g->len2 = nl;
    return push(r, v);
}

/* ---------------------------------------------------------------- containers */

/* A new container of kind k holding stack[from .. r->ns), which are dropped; pushed. */
static int push_container(run *r, pt_kind k, int32_t from) {
    int v = new_value(r, k);
    if (v < 0) return -1;
    for (int32_t i = from; i < r->ns; i++)
        if (add_item(r, v, r->stack[i])) return -1;
    r->ns = from;
    return push(r, v);
}

static int tuple_of(run *r, int k) {
    if (r->ns - base(r) < k) return fail(r, "TUPLE%d with %d values on the stack", k, r->ns - base(r));
    return push_container(r, PT_TUPLE, r->ns - k);
}

/* stack[from .. r->ns) added to the container below them (SETITEM(S): key, value pairs into a dict
 * or a stand-in; APPEND(S) into a list; ADDITEMS into a set; a stand-in keeps only pairs), dropped. */
static int add_to(run *r, int32_t from, int pairs, pt_kind want) {
    if (from <= base(r)) return fail(r, "adds items with no container below them");
    if (pairs && (r->ns - from) % 2) return fail(r, "SETITEMS with an odd number of values");
    int c = r->stack[from - 1];
    pt_kind k = r->vm->v[c].kind;
    if (k != want && k != PT_OBJECT) {
        char what[160];
        pt_describe(r->vm, c, what, sizeof what);
        return fail(r, "adds items to %s", what);
    }
    for (int32_t i = from; i < r->ns && (k == want || pairs); i++)
        if (add_item(r, c, r->stack[i])) return -1;
    r->ns = from;
    return 0;
}

/* ---------------------------------------------------------------- calls, interpreted */

/* Whether tuple t's items are n INTs, each >= 0 (a tensor's size or stride). */
static int int_tuple(const pt_vm *vm, int t) {
    const pt_value *v = &vm->v[t];
    if (v->kind != PT_TUPLE || v->n > YP_ST_MAX_DIMS) return 0;
    for (int i = 0; i < v->n; i++)
        if (vm->v[v->items[i]].kind != PT_INT || vm->v[v->items[i]].i < 0) return 0;
    return 1;
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, ...) and _rebuild_tensor(storage,
 * storage_offset, size, stride): a TENSOR, checked only for form here (pt_state.c checks extents). */
static int rebuild_tensor(run *r, const pt_value *args) {
    const pt_vm *vm = r->vm;
    if (args->n < 4 || vm->v[args->items[0]].kind != PT_STORAGE || vm->v[args->items[1]].kind != PT_INT ||
        vm->v[args->items[1]].i < 0 || !int_tuple(vm, args->items[2]) || !int_tuple(vm, args->items[3]) ||
        vm->v[args->items[2]].n != vm->v[args->items[3]].n)
        return fail(r,
                    "a tensor record (_rebuild_tensor_v2) without a storage, an offset >= 0 and a size and "
                    "strides of up to %d integers >= 0",
                    YP_ST_MAX_DIMS);
    int32_t st = args->items[0], off = args->items[1], size = args->items[2], stride = args->items[3];
    int t = new_value(r, PT_TENSOR);
    if (t < 0) return -1;
    pt_value *v = &r->vm->v[t];
    v->a = st, v->i = r->vm->v[off].i, v->b = size, v->c = stride;
    return push(r, t);
}

/* The result of calling f with the tuple args, interpreted for the names the reader knows, else a
 * stand-in object; pushed. depth: how many calls deep (_rebuild_from_type_v2 calls one more). */
static int call(run *r, int32_t f, int32_t args, int depth) {
    const pt_vm *vm = r->vm;
    if (vm->v[args].kind != PT_TUPLE) {
        char what[160];
        pt_describe(vm, args, what, sizeof what);
        return fail(r, "a call with %s as its arguments, not a tuple", what);
    }
    const pt_value *a = &vm->v[args];
    int32_t a0 = a->n ? a->items[0] : -1;
    if (pt_is_global(vm, f, "collections", "OrderedDict") && a->n == 0) return push_container(r, PT_DICT, r->ns);
    if ((pt_is_global(vm, f, "__builtin__", "set") || pt_is_global(vm, f, "builtins", "set") ||
         pt_is_global(vm, f, "__builtin__", "frozenset") || pt_is_global(vm, f, "builtins", "frozenset")) &&
        (a->n == 0 || (a->n == 1 && (vm->v[a0].kind == PT_LIST || vm->v[a0].kind == PT_TUPLE)))) {
        int32_t from = r->ns;
        for (int32_t i = 0; a->n && i < vm->v[a0].n; i++)
            if (push(r, vm->v[a0].items[i])) return -1;
        return push_container(r, PT_SET, from);
    }
    if (pt_is_global(vm, f, "torch._utils", "_rebuild_tensor_v2") ||
        pt_is_global(vm, f, "torch._utils", "_rebuild_tensor"))
        return rebuild_tensor(r, a);
    if ((pt_is_global(vm, f, "torch._utils", "_rebuild_parameter") ||
         pt_is_global(vm, f, "torch._utils", "_rebuild_parameter_with_state")) &&
        a->n >= 1 && vm->v[a0].kind == PT_TENSOR)
        return push(r, a0);
    if ((pt_is_global(vm, f, "torch._tensor", "_rebuild_from_type_v2") ||
         pt_is_global(vm, f, "torch._utils", "_rebuild_from_type_v2")) &&
        a->n == 4 && depth == 0 && vm->v[a->items[2]].kind == PT_TUPLE)
        return call(r, a0, a->items[2], depth + 1);
    int o = new_value(r, PT_OBJECT);
    if (o < 0) return -1;
    r->vm->v[o].a = f, r->vm->v[o].b = args;
    return push(r, o);
}

/* The dtype of torch.<name>Storage, or -1. */
static int storage_dtype(const pt_value *g) {
    static const struct {
        const char *name;
        yp_st_dtype d;
    } types[] = {{"HalfStorage", YP_ST_F16},      {"FloatStorage", YP_ST_F32}, {"DoubleStorage", YP_ST_F64},
                 {"BFloat16Storage", YP_ST_BF16}, {"LongStorage", YP_ST_I64},  {"IntStorage", YP_ST_I32},
                 {"ShortStorage", YP_ST_I16},     {"CharStorage", YP_ST_I8},   {"ByteStorage", YP_ST_U8},
                 {"BoolStorage", YP_ST_BOOL},     {"UntypedStorage", YP_ST_U8}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (g->len2 == strlen(types[i].name) && !memcmp(g->s2, types[i].name, g->len2)) return (int)types[i].d;
    return -1;
}

/* BINPERSID: ('storage', torch.<T>Storage, key, location, numel) becomes a STORAGE. */
static int persistent(run *r) {
    int32_t pid;
    if (pop(r, &pid)) return -1;
    const pt_vm *vm = r->vm;
    const pt_value *t = &vm->v[pid];
    if (t->kind != PT_TUPLE || t->n != 5 || !is_str(vm, t->items[0], "storage") ||
        vm->v[t->items[1]].kind != PT_GLOBAL || vm->v[t->items[1]].len != 5 ||
        memcmp(vm->v[t->items[1]].s, "torch", 5) || vm->v[t->items[2]].kind != PT_STR ||
        vm->v[t->items[3]].kind != PT_STR || vm->v[t->items[4]].kind != PT_INT || vm->v[t->items[4]].i < 0)
        return fail(r,
                    "a persistent id that is not torch.save's ('storage', torch.<Type>Storage, key, location, numel)");
    int dtype = storage_dtype(&vm->v[t->items[1]]);
    int32_t key = t->items[2];
    int64_t numel = vm->v[t->items[4]].i;
    int s = new_value(r, PT_STORAGE);
    if (s < 0) return -1;
    r->vm->v[s].dtype = (int8_t)dtype, r->vm->v[s].a = key, r->vm->v[s].i = numel;
    return push(r, s);
}

/* ---------------------------------------------------------------- the opcodes */

/* Runs one opcode: 0 to go on; non-zero at STOP (r->stopped set) or on an error (err set). */
static int step(run *r) {
    uint64_t u = 0;
    int32_t x, y, z, from = 0;
    r->op_at = r->at;
    if (need(r, 1)) return -1;
    unsigned char op = r->vm->p[r->at++];
    switch (op) {
    case 0x80: /* PROTO */
        if (read_le(r, 1, &u)) return -1;
        return u >= 2 && u <= 5 ? 0 : fail(r, "pickle protocol %llu (torch.save writes 2 to 5)", (unsigned long long)u);
    case 0x95: return read_le(r, 8, &u); /* FRAME: a length hint */
    case '.':                            /* STOP */
        if (pop(r, &x)) return -1;
        r->vm->root = x, r->stopped = 1;
        return 1;
    case '}': return push_container(r, PT_DICT, r->ns);
    case ']': return push_container(r, PT_LIST, r->ns);
    case ')': return push_container(r, PT_TUPLE, r->ns);
    case 0x8f: return push_container(r, PT_SET, r->ns); /* EMPTY_SET */
    case '(': return mark(r);
    case 'X': return read_le(r, 4, &u) || push_bytes(r, PT_STR, u);  /* BINUNICODE */
    case 0x8c: return read_le(r, 1, &u) || push_bytes(r, PT_STR, u); /* SHORT_BINUNICODE */
    case 0x8d: return read_le(r, 8, &u) || push_bytes(r, PT_STR, u); /* BINUNICODE8 */
    case 'U': return read_le(r, 1, &u) || push_bytes(r, PT_STR, u);  /* SHORT_BINSTRING */
    case 'T':                                                        /* BINSTRING: a signed length */
        if (read_le(r, 4, &u)) return -1;
        return u >= 0x80000000u ? fail(r, "BINSTRING of negative length") : push_bytes(r, PT_STR, u);
    case 'C': return read_le(r, 1, &u) || push_bytes(r, PT_BYTES, u); /* SHORT_BINBYTES */
    case 'B': return read_le(r, 4, &u) || push_bytes(r, PT_BYTES, u); /* BINBYTES */
    case 0x8e:
    case 0x96: return read_le(r, 8, &u) || push_bytes(r, PT_BYTES, u);       /* BINBYTES8, BYTEARRAY8 */
    case 'J': return read_le(r, 4, &u) || push_int(r, (int32_t)(uint32_t)u); /* BININT */
    case 'K': return read_le(r, 1, &u) || push_int(r, (int64_t)u);           /* BININT1 */
    case 'M': return read_le(r, 2, &u) || push_int(r, (int64_t)u);           /* BININT2 */
    case 0x8a: return read_le(r, 1, &u) || push_long(r, u);                  /* LONG1 */
    case 0x8b:                                                               /* LONG4: a signed length */
        if (read_le(r, 4, &u)) return -1;
        return u >= 0x80000000u ? fail(r, "LONG4 of negative length") : push_long(r, u);
    case 'G': { /* BINFLOAT: big endian */
        if (need(r, 8)) return -1;
        uint64_t b = 0;
        for (int i = 0; i < 8; i++) b = b << 8 | r->vm->p[r->at + (size_t)i];
        r->at += 8;
        int v = new_value(r, PT_FLOAT);
        if (v < 0) return -1;
        memcpy(&r->vm->v[v].f, &b, 8);
        return push(r, v);
    }
    case 'N': return push(r, V_NONE);
    case 0x88: return push(r, V_TRUE);
    case 0x89: return push(r, V_FALSE);
    case 0x85: return tuple_of(r, 1);
    case 0x86: return tuple_of(r, 2);
    case 0x87: return tuple_of(r, 3);
    case 't': return pop_mark(r, &from) || push_container(r, PT_TUPLE, from);
    case 0x91: return pop_mark(r, &from) || push_container(r, PT_SET, from); /* FROZENSET */
    case 's':
        return r->ns - base(r) < 3 ? fail(r, "SETITEM with fewer than 3 values") : add_to(r, r->ns - 2, 1, PT_DICT);
    case 'u': return pop_mark(r, &from) || add_to(r, from, 1, PT_DICT);
    case 'a':
        return r->ns - base(r) < 2 ? fail(r, "APPEND with fewer than 2 values") : add_to(r, r->ns - 1, 0, PT_LIST);
    case 'e': return pop_mark(r, &from) || add_to(r, from, 0, PT_LIST);
    case 0x90: return pop_mark(r, &from) || add_to(r, from, 0, PT_SET); /* ADDITEMS */
    case 'c': {                                                         /* GLOBAL */
        const char *m, *n;
        uint32_t ml, nl;
        return read_line(r, &m, &ml) || read_line(r, &n, &nl) || push_global(r, m, ml, n, nl);
    }
    case 0x93: /* STACK_GLOBAL */
        if (pop(r, &y) || pop(r, &x)) return -1;
        if (r->vm->v[x].kind != PT_STR || r->vm->v[y].kind != PT_STR) return fail(r, "STACK_GLOBAL of non-strings");
        return push_global(r, r->vm->v[x].s, r->vm->v[x].len, r->vm->v[y].s, r->vm->v[y].len);
    case 'R': return pop(r, &y) || pop(r, &x) || call(r, x, y, 0);                /* REDUCE */
    case 0x81: return pop(r, &y) || pop(r, &x) || call(r, x, y, 1);               /* NEWOBJ */
    case 0x92: return pop(r, &z) || pop(r, &y) || pop(r, &x) || call(r, x, y, 1); /* NEWOBJ_EX */
    case 'b':                                                                     /* BUILD */
        if (pop(r, &y) || top(r, &x)) return -1;
        if (r->vm->v[x].kind == PT_OBJECT) r->vm->v[x].c = y; /* other kinds' state (a dict's _metadata) is dropped */
        return 0;
    case 'q': return read_le(r, 1, &u) || memo_put(r, u); /* BINPUT */
    case 'r': return read_le(r, 4, &u) || memo_put(r, u); /* LONG_BINPUT */
    case 0x94: return memo_put(r, (uint64_t)r->memo_set); /* MEMOIZE */
    case 'h': return read_le(r, 1, &u) || memo_get(r, u); /* BINGET */
    case 'j': return read_le(r, 4, &u) || memo_get(r, u); /* LONG_BINGET */
    case 'Q': return persistent(r);                       /* BINPERSID */
    case '0':                                             /* POP: the value on top, or an empty MARK */
        if (r->ns > base(r)) return r->ns--, 0;
        return pop_mark(r, &from);
    case '1': return pop_mark(r, &from) || (r->ns = from, 0); /* POP_MARK */
    case '2': return top(r, &x) || push(r, x);                /* DUP */
    default: return fail(r, "opcode 0x%02x is not one of those torch.save writes", op);
    }
}

int pt_vm_run(pt_vm *vm, const char *path, const unsigned char *p, size_t n, yp_err *err) {
    memset(vm, 0, sizeof *vm);
    vm->path = path, vm->p = p, vm->n = n, vm->root = -1;
    run r = {.vm = vm, .err = err};
    if (n > (size_t)YP_PT_MAX_PICKLE)
        return fail(&r, "the pickle has %zu bytes, above the reader's limit of %lld", n, (long long)YP_PT_MAX_PICKLE);
    int rc = new_value(&r, PT_NONE) < 0 || new_value(&r, PT_BOOL) < 0 || new_value(&r, PT_BOOL) < 0 ? -1 : 0;
    if (!rc) vm->v[V_TRUE].i = 1;
    while (!rc) rc = step(&r);
    free(r.stack), free(r.marks), free(r.memo);
    return r.stopped ? 0 : -1;
}

void pt_vm_free(pt_vm *vm) {
    for (int32_t i = 0; i < vm->nv; i++) free(vm->v[i].items);
    free(vm->v);
    memset(vm, 0, sizeof *vm);
}
