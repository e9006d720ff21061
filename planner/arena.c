/* arena.c - offset assignment (see yp_arena.h for the heuristic) and its checker. */
#include <stdlib.h>
#include <string.h>

#include "yp_arena.h"

typedef struct {
    int64_t off, end;
    int first, last;
} placed;

typedef int (*order_cmp)(const void *, const void *);

/* A tensor to place with the keys the orders sort on (qsort has no context argument in C11). */
typedef struct {
    int t, first;
    int64_t size, life;
} item;

static int cmp64(int64_t a, int64_t b) { return (a < b) - (a > b); } /* descending */

static int by_size(const void *a, const void *b) {
    const item *x = a, *y = b;
    int c = cmp64(x->size, y->size);
    return c ? c : cmp64(x->life, y->life) ? cmp64(x->life, y->life) : (x->t > y->t) - (x->t < y->t);
}
static int by_life(const void *a, const void *b) {
    const item *x = a, *y = b;
    int c = cmp64(x->life, y->life);
    return c ? c : by_size(a, b);
}
static int by_area(const void *a, const void *b) {
    const item *x = a, *y = b;
    double d = (double)y->size * (double)y->life - (double)x->size * (double)x->life;
    return d > 0 ? 1 : d < 0 ? -1 : by_size(a, b);
}
static int by_birth(const void *a, const void *b) {
    const item *x = a, *y = b;
    return x->first != y->first ? (x->first > y->first) - (x->first < y->first) : by_size(a, b);
}

static int whole_step(const yp_schedule *s, int t) {
    return s->tensors[t].first == 0 && s->tensors[t].last == s->n_steps - 1;
}

/* Places the items in their order above `base`; writes offsets; returns the top. The placed
 * tensors are kept sorted by offset (each inserted where it belongs), so the ones whose lives
 * overlap the next tensor's are met in offset order by one pass, with no sort per tensor. Among
 * tensors at the same offset the order does not matter: the first one met gives the gap below
 * them, and the cursor is the largest end either way. */
static int64_t place_all(const yp_schedule *s, const item *items, int n, int64_t base, int64_t *offsets, placed *pl,
                         int first_fit) {
    int n_pl = 0;
    int64_t top = base;
    for (int i = 0; i < n; i++) {
        int t = items[i].t;
        int64_t size = items[i].size, best = -1, best_gap = INT64_MAX, cursor = base;
        int first = s->tensors[t].first, last = s->tensors[t].last;
        for (int j = 0; j < n_pl; j++) {
            if (pl[j].first > last || first > pl[j].last) continue;
            int64_t gap = pl[j].off - cursor;
            if (gap >= size && gap < best_gap) {
                best = cursor, best_gap = gap;
                if (first_fit || gap == size) break; /* an exact fit: no later gap is smaller */
            }
            if (pl[j].end > cursor) cursor = pl[j].end;
        }
        if (best < 0) best = cursor; /* on top of everything overlapping in time */
        offsets[t] = best;
        int lo = 0, hi = n_pl; /* the first placed tensor with a higher offset */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (pl[mid].off <= best) lo = mid + 1;
            else hi = mid;
        }
        memmove(&pl[lo + 1], &pl[lo], (size_t)(n_pl - lo) * sizeof *pl);
        pl[lo] = (placed){best, best + size, first, last};
        n_pl++;
        if (best + size > top) top = best + size;
    }
    return top;
}

int yp_arena_plan(const yp_schedule *s, int64_t align, int64_t lower_bound, yp_arena *out, yp_err *err) {
    static const struct {
        const char *name;
        order_cmp cmp;
    } orders[] = {{"size", by_size}, {"life", by_life}, {"size*life", by_area}, {"birth", by_birth}};
    memset(out, 0, sizeof *out);
    if (align < 1 || (align & (align - 1)))
        return yp_err_set(err, "arena: alignment %lld is not a power of two", (long long)align);
    out->align = align;
    int n = s->n_tensors, n_rest = 0;
    item *rest = malloc((size_t)n * sizeof *rest);
    int64_t *trial = malloc((size_t)n * sizeof *trial);
    placed *pl = malloc((size_t)n * sizeof *pl);
    out->offsets = malloc((size_t)n * sizeof *out->offsets);
    if (!rest || !trial || !pl || !out->offsets) {
        free(rest), free(trial), free(pl);
        yp_arena_free(out);
        return yp_err_set(err, "out of memory planning the arena");
    }
    int64_t base = 0;
    for (int t = 0; t < n; t++) {
        const yp_tensor *tt = &s->tensors[t];
        if (whole_step(s, t)) out->offsets[t] = base, base += yp_align_up(tt->bytes, align);
        else rest[n_rest++] = (item){t, tt->first, yp_align_up(tt->bytes, align), tt->last - tt->first + 1};
    }
    out->persistent = base;
    out->size = INT64_MAX;
    for (size_t o = 0; o < 2 * sizeof orders / sizeof *orders; o++) {
        size_t oi = o / 2;
        qsort(rest, (size_t)n_rest, sizeof *rest, orders[oi].cmp);
        int64_t top = place_all(s, rest, n_rest, base, trial, pl, (int)(o & 1));
        if (top < out->size) {
            out->size = top, out->order = orders[oi].name;
            for (int i = 0; i < n_rest; i++) out->offsets[rest[i].t] = trial[rest[i].t];
        }
        if (top == lower_bound) break; /* optimal: no order can do better */
    }
    out->lower_bound = lower_bound;
    free(rest), free(trial), free(pl);
    return 0;
}

int yp_arena_check(const yp_schedule *s, const yp_arena *a, yp_err *err) {
    if (a->align < 1 || (a->align & (a->align - 1)))
        return yp_err_set(err, "arena: alignment %lld is not a power of two", (long long)a->align);
    for (int i = 0; i < s->n_tensors; i++) {
        const yp_tensor *x = &s->tensors[i];
        int64_t xo = a->offsets[i], xe = xo + yp_align_up(x->bytes, a->align);
        if (xo < 0 || xo % a->align || xe > a->size)
            return yp_err_set(err,
                              "arena: tensor %s at offset %lld (%lld bytes) is misaligned or outside the %lld-byte "
                              "arena",
                              x->name, (long long)xo, (long long)x->bytes, (long long)a->size);
        for (int j = i + 1; j < s->n_tensors; j++) {
            const yp_tensor *y = &s->tensors[j];
            if (y->first > x->last || x->first > y->last || y->bytes == 0 || x->bytes == 0) continue;
            int64_t yo = a->offsets[j], ye = yo + yp_align_up(y->bytes, a->align);
            if (xo < ye && yo < xe)
                return yp_err_set(err, "arena: %s [%lld, %lld) and %s [%lld, %lld) overlap while both live at step %d",
                                  x->name, (long long)xo, (long long)xe, y->name, (long long)yo, (long long)ye,
                                  x->first > y->first ? x->first : y->first);
        }
    }
    return 0;
}

void yp_arena_free(yp_arena *a) {
    free(a->offsets);
    a->offsets = NULL;
}
