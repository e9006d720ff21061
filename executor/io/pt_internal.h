/* pt_internal.h - inside the .pt reader (yp_pt.h): the pickle machine and its values (pt_pickle.c),
 * the walk from the unpickled object to a state dict (pt_state.c) and the zip container (pt_zip.c).
 *
 * The pickle machine runs the opcodes of pickle protocols 2 to 5 that torch.save writes and builds
 * plain values only: nothing in a pickle is ever called or imported. A class or function a pickle
 * names (GLOBAL) stays a name; calling it (REDUCE, NEWOBJ) makes a stand-in object that records the
 * name, the arguments and the state BUILD gives it. The few names the reader gives a meaning to are
 * interpreted, never run: collections.OrderedDict (a dict), builtins.set and frozenset (a set),
 * torch._utils._rebuild_tensor_v2 and _rebuild_tensor (a tensor over a storage record),
 * _rebuild_parameter(_with_state) and torch._tensor._rebuild_from_type_v2 (the tensor inside), and
 * the persistent id ('storage', torch.<Type>Storage, key, location, numel) of BINPERSID.
 *
 * Values live in one pool owned by the machine and are referred to by index, so shared and cyclic
 * references (the memo) cost nothing and everything is freed at once. Every count is capped
 * (yp_pt.h's YP_PT_MAX_*), every length checked against the bytes left, every sum checked. */
#ifndef PT_INTERNAL_H
#define PT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "yp_error.h"
#include "yp_pt.h"

typedef enum {
    PT_NONE,
    PT_BOOL,
    PT_INT,
    PT_BIGINT,
    PT_FLOAT,
    PT_STR,
    PT_BYTES,
    PT_TUPLE,
    PT_LIST,
    PT_DICT,
    PT_SET,
    PT_GLOBAL,
    PT_OBJECT,
    PT_STORAGE,
    PT_TENSOR
} pt_kind;

typedef struct {
    uint8_t kind;       /* a pt_kind */
    int8_t dtype;       /* STORAGE: a yp_st_dtype, -1 for a storage type without one (complex, quantized) */
    uint32_t len, len2; /* STR, BYTES: s's length; GLOBAL: module (s) and name (s2) lengths */
    const char *s, *s2; /* into the pickle's bytes, not NUL-terminated */
    union {
        int64_t i; /* BOOL, INT; STORAGE: its numel; TENSOR: its storage offset, in elements */
        double f;  /* FLOAT */
    };
    int32_t a, b, c; /* OBJECT: class, arguments, state (-1: none); TENSOR: storage, size and stride tuples;
                        STORAGE: its key (a STR) */
    int32_t n, cap;  /* TUPLE, LIST, SET: n items; DICT: n/2 key, value pairs; OBJECT: what SETITEM(S) and
                        APPEND(S) gave it */
    int32_t *items;
} pt_value;

typedef struct {
    const char *path;       /* for messages */
    const unsigned char *p; /* the pickle, not owned */
    size_t n;
    pt_value *v; /* the pool */
    int32_t nv, cap_v;
    int64_t n_items; /* items held by every container, capped */
    int root;        /* the value STOP left */
} pt_vm;

/* Runs the pickle p[0..n) (kept by the caller while vm is in use). 0 with vm->root set, or -1 with err
 * naming path, the byte offset, what is wrong and the fix. Free vm with pt_vm_free either way. */
int pt_vm_run(pt_vm *vm, const char *path, const unsigned char *p, size_t n, yp_err *err);
void pt_vm_free(pt_vm *vm);

/* Whether value i is the GLOBAL module.name. */
int pt_is_global(const pt_vm *vm, int i, const char *module, const char *name);

/* The value for key `key` of DICT or OBJECT-with-items i (a STR key), or -1. */
int pt_get(const pt_vm *vm, int i, const char *key);

/* Writes a short description of value i ("None", "an int", "a models.yolo.DetectionModel", ...) into buf. */
void pt_describe(const pt_vm *vm, int i, char *buf, size_t size);

/* One tensor of the state dict the walk found: its name and its TENSOR value. */
typedef struct {
    char *name;
    int t;
} pt_named;

/* The state dict held by the unpickled object (yp_pt.h's rules for which), in the order PyTorch's
 * state_dict() gives it; names malloc'd, each unique. *what gets a description of what was read. 0, or -1
 * with err set (one line: path, the problem, the fix). Free *out with pt_named_free either way. */
int pt_state_dict(const pt_vm *vm, pt_named **out, int *n, char *what, size_t what_size, yp_err *err);
void pt_named_free(pt_named *t, int n);

/* ---------------------------------------------------------------- the zip container */

typedef struct pt_zip pt_zip;

#define PT_HEAD_BYTES 32 /* what pt_is_legacy needs of a file's start */

/* Whether head[0..n) starts as torch.save's legacy (pre-1.6) format: a pickle of its magic number. */
int pt_is_legacy(const unsigned char *head, size_t n);

/* Opens path as torch.save's zip (a regular file of at most YP_PT_MAX_FILE bytes): finds the one
 * "<archive>/data.pkl" and checks "<archive>/byteorder" when present. NULL with err set. */
pt_zip *pt_zip_open(const char *path, yp_err *err);
void pt_zip_close(pt_zip *z);

/* Reads data.pkl (at most YP_PT_MAX_PICKLE bytes) into a malloc'd buffer. 0, or -1 with err set. */
int pt_zip_read_pickle(pt_zip *z, unsigned char **buf, size_t *n, yp_err *err);

/* The record of storage key (a STR value's bytes): "<archive>/data/<key>". Its index and size in
 * bytes, 0; or -1 with err set (no such record). */
int pt_zip_storage(pt_zip *z, const char *key, size_t key_len, int64_t *index, int64_t *bytes, yp_err *err);

/* Reads bytes [begin, begin + n) of record `index` into dst. 0, or -1 with err set (name: the tensor). */
int pt_zip_read(pt_zip *z, int64_t index, int64_t begin, void *dst, int64_t n, const char *name, yp_err *err);

#endif
