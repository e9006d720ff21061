/* pt_state.c - from an unpickled .pt to its state dict (pt_internal.h, yp_pt.h's rules): a YOLOv5
 * checkpoint's "model" and "ema", a plain state dict, or a pickled module, walked as PyTorch's
 * state_dict() walks a module (parameters, persistent buffers, then children). */
#include <stdlib.h>
#include <string.h>

#include "pt_internal.h"

#define NAME_CAP 1024
#define MAX_STEPS (1LL << 26) /* dict items looked at: a shared child is walked once per path to it */

typedef struct {
    const pt_vm *vm;
    yp_err *err;
    pt_named *t;
    int n, cap;
    int64_t steps;       /* the work done so far, capped at MAX_STEPS */
    char name[NAME_CAP]; /* the prefix of the module being walked */
    size_t len;
} walk;

static const char *const FIX = "give a .pt that YOLOv5's train.py, torch.save(model) or torch.save(model.state_dict()) "
                               "wrote";

/* The dict of object o's BUILD state (a dict, or the first of a (dict, slots) pair), or -1. */
static int object_state(const pt_vm *vm, int o) {
    if (o < 0 || vm->v[o].kind != PT_OBJECT || vm->v[o].c < 0) return -1;
    int s = vm->v[o].c;
    if (vm->v[s].kind == PT_TUPLE && vm->v[s].n == 2) s = vm->v[s].items[0];
    return vm->v[s].kind == PT_DICT ? s : -1;
}

/* Whether value o is a pickled nn.Module: an object whose state has the dicts _parameters,
 * _buffers and _modules. */
static int is_module(const pt_vm *vm, int o) {
    int s = object_state(vm, o);
    static const char *const keys[] = {"_parameters", "_buffers", "_modules"};
    for (int k = 0; k < 3; k++) {
        int d = s < 0 ? -1 : pt_get(vm, s, keys[k]);
        if (d < 0 || vm->v[d].kind != PT_DICT) return 0;
    }
    return s >= 0;
}

/* Whether value d is a state dict: a non-empty dict of str -> tensor. */
static int is_state_dict(const pt_vm *vm, int d) {
    if (d < 0 || vm->v[d].kind != PT_DICT || vm->v[d].n == 0) return 0;
    for (int k = 0; k + 1 < vm->v[d].n; k += 2)
        if (vm->v[vm->v[d].items[k]].kind != PT_STR || vm->v[vm->v[d].items[k + 1]].kind != PT_TENSOR) return 0;
    return 1;
}

/* Appends str value key (and `dot`) to the name; the previous length into *len. */
static int name_push(walk *w, int key, const char *dot, size_t *len) {
    const pt_value *k = &w->vm->v[key];
    *len = w->len;
    if (k->kind != PT_STR)
        return yp_err_set(w->err, "%s: a module or state dict with a key that is not a str; %s", w->vm->path, FIX);
    if (memchr(k->s, 0, k->len))
        return yp_err_set(w->err, "%s: a tensor or module name holds a NUL byte; %s", w->vm->path, FIX);
    if (w->len + k->len + strlen(dot) >= NAME_CAP)
        return yp_err_set(w->err, "%s: a tensor name longer than %d bytes; %s", w->vm->path, NAME_CAP - 1, FIX);
    memcpy(w->name + w->len, k->s, k->len);
    w->len += k->len;
    memcpy(w->name + w->len, dot, strlen(dot) + 1);
    w->len += strlen(dot);
    return 0;
}

/* Tensor value t under the current name + key. */
static int add(walk *w, int key, int t) {
    size_t len;
    if (name_push(w, key, "", &len)) return -1;
    if (w->n >= YP_PT_MAX_TENSORS)
        return yp_err_set(w->err, "%s: more than %d tensors, the reader's limit; %s", w->vm->path, YP_PT_MAX_TENSORS,
                          FIX);
    if (w->n == w->cap) {
        int cap = w->cap ? w->cap * 2 : 512;
        pt_named *p = realloc(w->t, (size_t)cap * sizeof *p);
        if (!p) return yp_err_set(w->err, "%s: out of memory", w->vm->path);
        w->t = p, w->cap = cap;
    }
    w->t[w->n].name = strdup(w->name);
    w->t[w->n].t = t;
    w->len = len, w->name[len] = 0;
    if (!w->t[w->n].name) return yp_err_set(w->err, "%s: out of memory", w->vm->path);
    w->n++;
    return 0;
}

/* Counts n steps of work; -1 with err set past MAX_STEPS (a hostile tree of shared modules would
 * otherwise be walked once per path, exponentially often). */
static int charge(walk *w, int64_t n) {
    if ((w->steps += n) <= MAX_STEPS) return 0;
    return yp_err_set(w->err,
                      "%s: the module tree takes more than %lld steps to walk (modules shared many times "
                      "over?); %s",
                      w->vm->path, (long long)MAX_STEPS, FIX);
}

/* Whether str value key is in set value s (a module's _non_persistent_buffers_set). */
static int in_set(const pt_vm *vm, int s, int key) {
    if (s < 0 || vm->v[s].kind != PT_SET) return 0;
    const pt_value *k = &vm->v[key];
    for (int i = 0; i < vm->v[s].n; i++) {
        const pt_value *x = &vm->v[vm->v[s].items[i]];
        if (x->kind == PT_STR && x->len == k->len && !memcmp(x->s, k->s, k->len)) return 1;
    }
    return 0;
}

/* The tensors of dict d (a module's _parameters or _buffers, None ones skipped, those in skip too). */
static int tensors_of(walk *w, int d, int skip, const char *what) {
    const pt_vm *vm = w->vm;
    if (charge(w, (int64_t)vm->v[d].n * (1 + (skip >= 0 && vm->v[skip].kind == PT_SET ? vm->v[skip].n : 0)))) return -1;
    for (int k = 0; k + 1 < vm->v[d].n; k += 2) {
        int key = vm->v[d].items[k], v = vm->v[d].items[k + 1];
        if (vm->v[v].kind == PT_NONE || (skip >= 0 && vm->v[key].kind == PT_STR && in_set(vm, skip, key))) continue;
        if (vm->v[v].kind != PT_TENSOR) {
            char desc[160];
            size_t len;
            pt_describe(vm, v, desc, sizeof desc);
            if (name_push(w, key, "", &len)) return -1;
            return yp_err_set(w->err, "%s: %s %s is %s, not a tensor; %s", vm->path, what, w->name, desc, FIX);
        }
        if (add(w, key, v)) return -1;
    }
    return 0;
}

/* Module o's state dict under the current name, depth modules deep. */
static int module(walk *w, int o, int depth) {
    const pt_vm *vm = w->vm;
    if (depth > YP_PT_MAX_DEPTH)
        return yp_err_set(w->err, "%s: modules nested deeper than %d (%s...); %s", vm->path, YP_PT_MAX_DEPTH, w->name,
                          FIX);
    int s = object_state(vm, o);
    if (charge(w, 1 + 4 * (int64_t)vm->v[s].n)) return -1; /* the four lookups below */
    int skip = pt_get(vm, s, "_non_persistent_buffers_set");
    if (tensors_of(w, pt_get(vm, s, "_parameters"), -1, "parameter") ||
        tensors_of(w, pt_get(vm, s, "_buffers"), skip, "buffer"))
        return -1;
    int mods = pt_get(vm, s, "_modules");
    for (int k = 0; k + 1 < vm->v[mods].n; k += 2) {
        int key = vm->v[mods].items[k], child = vm->v[mods].items[k + 1];
        size_t len;
        if (vm->v[child].kind == PT_NONE) continue;
        int cs = object_state(vm, child);
        if (name_push(w, key, ".", &len) || charge(w, 1 + (cs < 0 ? 0 : 3 * (int64_t)vm->v[cs].n))) return -1;
        if (!is_module(vm, child)) {
            char desc[160];
            pt_describe(vm, child, desc, sizeof desc);
            w->name[w->len - 1] = 0;
            return yp_err_set(w->err, "%s: module %s is %s, not a module; %s", vm->path, w->name, desc, FIX);
        }
        if (module(w, child, depth + 1)) return -1;
        w->len = len, w->name[len] = 0;
    }
    return 0;
}

/* The tensors of v (a module or a state dict) under prefix; `key` names v in messages. Its description
 * ("models.yolo.DetectionModel (349 tensors)", "state dict (12 tensors)") into desc. */
static int section(walk *w, int v, const char *prefix, const char *key, char *desc, size_t size) {
    const pt_vm *vm = w->vm;
    char kind[160];
    int before = w->n;
    pt_describe(vm, v, kind, sizeof kind);
    snprintf(w->name, sizeof w->name, "%s", prefix);
    w->len = strlen(prefix);
    if (is_module(vm, v)) {
        if (module(w, v, 0)) return -1;
    } else if (is_state_dict(vm, v)) {
        snprintf(kind, sizeof kind, "a state dict");
        for (int k = 0; k + 1 < vm->v[v].n; k += 2)
            if (add(w, vm->v[v].items[k], vm->v[v].items[k + 1])) return -1;
    } else {
        return yp_err_set(w->err, "%s: %s is %s, neither a module nor a state dict; %s", vm->path, key, kind, FIX);
    }
    const char *k = !strncmp(kind, "a ", 2) ? kind + 2 : !strncmp(kind, "an ", 3) ? kind + 3 : kind;
    snprintf(desc, size, "%s (%d tensors)", k, w->n - before);
    return 0;
}

/* A dict's first few keys, for a message: "'foo', 'bar', ...". */
static void keys_of(const pt_vm *vm, int d, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int k = 0; k + 1 < vm->v[d].n && at + 40 < size; k += 2) {
        const pt_value *key = &vm->v[vm->v[d].items[k]];
        if (k >= 16) {
            snprintf(buf + at, size - at, ", ...");
            return;
        }
        if (key->kind == PT_STR)
            at += (size_t)snprintf(buf + at, size - at, "%s'%.*s'", k ? ", " : "", (int)(key->len > 24 ? 24 : key->len),
                                   key->s);
        else
            at += (size_t)snprintf(buf + at, size - at, "%s(not a str)", k ? ", " : "");
    }
}

/* The checkpoint form: "model" and "ema" (either may be None). */
static int checkpoint(walk *w, int root, char *what, size_t size) {
    const pt_vm *vm = w->vm;
    int m = pt_get(vm, root, "model"), e = pt_get(vm, root, "ema");
    char dm[200] = "None", de[200] = "None";
    if (m >= 0 && vm->v[m].kind != PT_NONE && section(w, m, "", "'model'", dm, sizeof dm)) return -1;
    if (e >= 0 && vm->v[e].kind != PT_NONE && section(w, e, "ema.", "'ema'", de, sizeof de)) return -1;
    if (w->n == 0)
        return yp_err_set(w->err, "%s: a checkpoint whose 'model' and 'ema' hold no tensors; %s", vm->path, FIX);
    snprintf(what, size, "a checkpoint: model %s, ema %s", dm, de);
    return 0;
}

int pt_state_dict(const pt_vm *vm, pt_named **out, int *n, char *what, size_t what_size, yp_err *err) {
    walk w = {.vm = vm, .err = err};
    int root = vm->root, rc;
    what[0] = 0;
    if (vm->v[root].kind == PT_DICT && (pt_get(vm, root, "model") >= 0 || pt_get(vm, root, "ema") >= 0)) {
        rc = checkpoint(&w, root, what, what_size);
    } else if (is_state_dict(vm, root) || is_module(vm, root)) {
        char d[200];
        rc = section(&w, root, "", "the file", d, sizeof d);
        if (!rc) snprintf(what, what_size, "%s %s", is_module(vm, root) ? "a module:" : "a", d);
    } else {
        char desc[160], keys[512] = "";
        pt_describe(vm, root, desc, sizeof desc);
        if (vm->v[root].kind == PT_DICT) keys_of(vm, root, keys, sizeof keys);
        rc = yp_err_set(err,
                        "%s: holds %s%s%s%s, not a YOLOv5 checkpoint (no 'model' or 'ema'), a state dict or a "
                        "module; %s",
                        vm->path, desc, keys[0] ? " (keys " : "", keys, keys[0] ? ")" : "", FIX);
    }
    *out = w.t, *n = w.n;
    return rc;
}

void pt_named_free(pt_named *t, int n) {
    for (int i = 0; i < n; i++) free(t[i].name);
    free(t);
}
