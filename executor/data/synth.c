/* synth.c - drawing one synthetic image and its boxes (yp_synth.h). Integer arithmetic only (no
 * libm, no floating point), so an image is the same on every machine: a splitmix64 stream per
 * image; a background of a two-colour gradient, value noise on a coarse grid, sometimes stripes;
 * shapes tested at pixel centres in doubled coordinates (convex polygons by edge functions, the
 * ellipse by its equation, outlines as "inside but not deep inside"); then per-pixel noise.
 * synth_write.c turns samples into files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_splitmix64.h"
#include "yp_synth.h"

/* ---- the random stream ---- */

typedef struct {
    uint64_t s;
} rng;

static uint64_t next(rng *r) { return yp_splitmix64_next(&r->s); }

/* Uniform in [lo, hi] (hi >= lo; the modulo bias is below 2^-40 for our ranges). */
static int64_t range(rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1)); }

static void rng_init(rng *r, uint64_t seed, int split, int64_t index) {
    uint64_t where = ((uint64_t)index << 1 | (uint64_t)split) + 0x13198a2e03707344ull;
    r->s = yp_splitmix64_mix(seed ^ 0x243f6a8885a308d3ull) ^ yp_splitmix64_mix(where);
}

/* ---- classes ---- */

enum { K_RECT, K_ELLIPSE, K_TRIANGLE, K_DIAMOND, K_CROSS, N_KINDS };

static const char *const kinds[N_KINDS] = {"rectangle", "ellipse", "triangle", "diamond", "cross"};

static const struct {
    const char *name;
    uint8_t rgb[3];
} colours[16] = {
    {"red", {220, 40, 40}},    {"green", {40, 170, 60}},  {"blue", {40, 80, 220}},    {"yellow", {240, 210, 40}},
    {"cyan", {40, 200, 210}},  {"magenta", {200, 50, 190}}, {"orange", {245, 130, 30}}, {"purple", {120, 60, 170}},
    {"white", {245, 245, 245}}, {"black", {20, 20, 20}},   {"brown", {130, 80, 40}},   {"pink", {250, 160, 190}},
    {"lime", {160, 230, 60}},  {"navy", {20, 30, 110}},   {"teal", {20, 120, 120}},   {"grey", {128, 128, 128}},
};

void yp_synth_class_name(int k, char *buf, size_t size) {
    snprintf(buf, size, "%s_%s", colours[(k / N_KINDS) % 16].name, kinds[k % N_KINDS]);
}

int yp_synth_check(const yp_synth_opts *o, yp_err *err) {
    if (o->n_train < 1 || o->n_train > YP_SYNTH_MAX_IMAGES)
        return yp_err_set(err, "synth: %lld training images; give 1..%d", (long long)o->n_train, YP_SYNTH_MAX_IMAGES);
    if (o->n_val < 0 || o->n_val > YP_SYNTH_MAX_IMAGES)
        return yp_err_set(err, "synth: %lld validation images; give 0..%d", (long long)o->n_val, YP_SYNTH_MAX_IMAGES);
    if (o->nc < 1 || o->nc > YP_SYNTH_MAX_CLASSES)
        return yp_err_set(err, "synth: %d classes; give 1..%d (5 shapes x 16 colours)", o->nc, YP_SYNTH_MAX_CLASSES);
    if (o->w < YP_SYNTH_MIN_SIDE || o->w > YP_SYNTH_MAX_SIDE || o->h < YP_SYNTH_MIN_SIDE || o->h > YP_SYNTH_MAX_SIDE)
        return yp_err_set(err, "synth: image size %dx%d; each side must be %d..%d", o->w, o->h, YP_SYNTH_MIN_SIDE,
                          YP_SYNTH_MAX_SIDE);
    return 0;
}

/* ---- shapes ---- */

/* A convex polygon in doubled pixel coordinates (pixel x's centre is 2x + 1), counter-clockwise
 * as the edge functions below want it (interior on the positive side), with each edge's length. */
typedef struct {
    int n;
    int64_t x[4], y[4], len[4];
} poly;

static int64_t isqrt(int64_t v) {
    int64_t r = 0;
    for (int64_t bit = (int64_t)1 << 62; bit; bit >>= 2)
        if (v >= r + bit) v -= r + bit, r = (r >> 1) + bit;
        else r >>= 1;
    return r;
}

static void poly_make(poly *p, int n, const int64_t *xs, const int64_t *ys) {
    int64_t area = 0;
    for (int i = 0; i < n; i++) area += xs[i] * ys[(i + 1) % n] - xs[(i + 1) % n] * ys[i];
    p->n = n;
    for (int i = 0; i < n; i++) {
        int j = area >= 0 ? i : n - 1 - i;
        p->x[i] = xs[j], p->y[i] = ys[j];
    }
    for (int i = 0; i < n; i++) {
        int64_t dx = p->x[(i + 1) % n] - p->x[i], dy = p->y[(i + 1) % n] - p->y[i];
        int64_t l = isqrt(dx * dx + dy * dy);
        p->len[i] = l > 0 ? l : 1;
    }
}

/* 0 outside, 1 inside within t2 of an edge, 2 deeper. */
static int poly_test(const poly *p, int64_t px, int64_t py, int64_t t2) {
    int deep = 1;
    for (int i = 0; i < p->n; i++) {
        int j = (i + 1) % p->n;
        int64_t e = (p->x[j] - p->x[i]) * (py - p->y[i]) - (p->y[j] - p->y[i]) * (px - p->x[i]);
        if (e < 0) return 0;
        if (e < t2 * p->len[i]) deep = 0;
    }
    return deep ? 2 : 1;
}

typedef struct {
    int kind, filled;
    int64_t t2;        /* outline thickness, doubled */
    uint8_t rgb[3];
    int x0, y0, x1, y1; /* the whole box in pixels, possibly past the border */
    poly p[2];
    int n_poly;
    int64_t ex, ey, ea, eb; /* ellipse centre and semi-axes, doubled */
} shape;

static int ellipse_test(const shape *s, int64_t px, int64_t py) {
    int64_t dx = px - s->ex, dy = py - s->ey, a = s->ea, b = s->eb;
    if (dx * dx * b * b + dy * dy * a * a > a * a * b * b) return 0;
    int64_t ia = a - s->t2, ib = b - s->t2;
    if (ia <= 0 || ib <= 0) return 1;
    return dx * dx * ib * ib + dy * dy * ia * ia <= ia * ia * ib * ib ? 2 : 1;
}

/* Whether s paints pixel (x, y): inside it, and for an outlined shape not deep inside. */
static int shape_covers(const shape *s, int x, int y) {
    int64_t px = 2 * (int64_t)x + 1, py = 2 * (int64_t)y + 1;
    int r = 0;
    if (s->kind == K_ELLIPSE) r = ellipse_test(s, px, py);
    else
        for (int i = 0; i < s->n_poly; i++) {
            int ri = poly_test(&s->p[i], px, py, s->t2);
            if (ri > r) r = ri;
        }
    return s->filled ? r > 0 : r == 1;
}

static void rect_poly(poly *p, int64_t x0, int64_t y0, int64_t x1, int64_t y1) {
    int64_t xs[4] = {x0, x1, x1, x0}, ys[4] = {y0, y0, y1, y1};
    poly_make(p, 4, xs, ys);
}

/* Builds the geometry of s->kind inside s's box; apex_u (0..1000) places a triangle's apex along
 * its top, flip puts it at the bottom. */
static void shape_geometry(shape *s, int64_t apex_u, int flip) {
    int64_t X0 = 2 * (int64_t)s->x0, X1 = 2 * (int64_t)s->x1, Y0 = 2 * (int64_t)s->y0, Y1 = 2 * (int64_t)s->y1;
    int64_t mx = (X0 + X1) / 2, my = (Y0 + Y1) / 2;
    s->n_poly = 1;
    switch (s->kind) {
    case K_RECT: rect_poly(&s->p[0], X0, Y0, X1, Y1); break;
    case K_ELLIPSE: s->n_poly = 0, s->ex = mx, s->ey = my, s->ea = (X1 - X0) / 2, s->eb = (Y1 - Y0) / 2; break;
    case K_TRIANGLE: {
        int64_t ax = X0 + (X1 - X0) * apex_u / 1000, top = flip ? Y1 : Y0, base = flip ? Y0 : Y1;
        int64_t xs[3] = {ax, X1, X0}, ys[3] = {top, base, base};
        poly_make(&s->p[0], 3, xs, ys);
        break;
    }
    case K_DIAMOND: {
        int64_t xs[4] = {mx, X1, mx, X0}, ys[4] = {Y0, my, Y1, my};
        poly_make(&s->p[0], 4, xs, ys);
        break;
    }
    default: { /* a cross: two bars a third of the box thick */
        int64_t th = (Y1 - Y0) / 6 > 1 ? (Y1 - Y0) / 6 : 1, tw = (X1 - X0) / 6 > 1 ? (X1 - X0) / 6 : 1;
        rect_poly(&s->p[0], X0, my - th, X1, my + th);
        rect_poly(&s->p[1], mx - tw, Y0, mx + tw, Y1);
        s->n_poly = 2;
        break;
    }
    }
}

/* ---- the background ---- */

static uint8_t clamp8(int64_t v) { return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v); }

typedef struct {
    int64_t c0[3], c1[3];     /* gradient end colours */
    int64_t gx, gy, tmin, tspan; /* gradient direction and its range over the image */
    int cell, gw, gh;         /* value-noise grid */
    int16_t *grid;            /* gw * gh * 3 offsets */
    int64_t stripe_period, stripe_amp, sx, sy; /* stripe_amp 0: none */
} background;

static int background_init(background *b, rng *r, int w, int h) {
    memset(b, 0, sizeof *b);
    for (int c = 0; c < 3; c++) b->c0[c] = range(r, 0, 255), b->c1[c] = range(r, 0, 255);
    b->gx = range(r, -8, 8), b->gy = range(r, -8, 8);
    if (!b->gx && !b->gy) b->gx = 1;
    int64_t corner[4] = {0, b->gx * (w - 1), b->gy * (h - 1), b->gx * (w - 1) + b->gy * (h - 1)};
    int64_t lo = corner[0], hi = corner[0];
    for (int i = 1; i < 4; i++) lo = corner[i] < lo ? corner[i] : lo, hi = corner[i] > hi ? corner[i] : hi;
    b->tmin = lo, b->tspan = hi - lo > 0 ? hi - lo : 1;
    int big = w > h ? w : h;
    b->cell = (int)range(r, 8, 64);
    if (b->cell > big) b->cell = big;
    b->gw = w / b->cell + 2, b->gh = h / b->cell + 2;
    int64_t amp = range(r, 8, 48);
    b->grid = malloc((size_t)b->gw * (size_t)b->gh * 3u * sizeof *b->grid); /* sides <= 8192: no overflow */
    if (!b->grid) return -1;
    for (size_t i = 0; i < (size_t)b->gw * (size_t)b->gh * 3u; i++) b->grid[i] = (int16_t)range(r, -amp, amp);
    if (range(r, 0, 2) == 0) {
        static const int dirs[4][2] = {{1, 0}, {0, 1}, {1, 1}, {1, -1}};
        int d = (int)range(r, 0, 3);
        b->stripe_period = range(r, 6, 40), b->stripe_amp = range(r, 10, 40), b->sx = dirs[d][0], b->sy = dirs[d][1];
    }
    return 0;
}

/* The value noise of channel c at (x, y): the grid bilinearly interpolated. */
static int64_t grid_at(const background *b, int x, int y, int c) {
    int gx = x / b->cell, gy = y / b->cell;
    int64_t fx = x % b->cell, fy = y % b->cell, n = b->cell;
    const int16_t *g = b->grid + ((size_t)gy * (size_t)b->gw + (size_t)gx) * 3u + (size_t)c;
    size_t right = 3, down = (size_t)b->gw * 3u;
    int64_t v =
        g[0] * (n - fx) * (n - fy) + g[right] * fx * (n - fy) + g[down] * (n - fx) * fy + g[down + right] * fx * fy;
    return v / (n * n);
}

static void background_draw(const background *b, yp_image *im) {
    for (int y = 0; y < im->h; y++)
        for (int x = 0; x < im->w; x++) {
            int64_t t = (b->gx * x + b->gy * y - b->tmin) * 256 / b->tspan, stripe = 0;
            if (b->stripe_amp) {
                int64_t p = b->stripe_period, v = ((b->sx * x + b->sy * y) % (2 * p) + 2 * p) % (2 * p);
                stripe = (v > p ? 2 * p - v : v) * b->stripe_amp / p - b->stripe_amp / 2;
            }
            uint8_t *px = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3u;
            for (int c = 0; c < 3; c++)
                px[c] = clamp8(b->c0[c] + (b->c1[c] - b->c0[c]) * t / 256 + grid_at(b, x, y, c) + stripe);
        }
}

/* ---- objects ---- */

static int64_t overlap(int a0, int a1, int b0, int b1) {
    int lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
    return hi > lo ? hi - lo : 0;
}

/* Draws a random object's size and place into s (the class and look are set later). Returns
 * its box clipped to the image in *v, or 0 when too little of it shows. */
static int place(rng *r, int w, int h, shape *s, yp_synth_box *v) {
    int side = w < h ? w : h;
    int64_t lo = side * 2 / 100 > 3 ? side * 2 / 100 : 3, hi = side * 60 / 100 > lo ? side * 60 / 100 : lo;
    int64_t u = range(r, 0, 65535), a = lo + (hi - lo) * u * u / (65536LL * 65536LL); /* small ones more often */
    int64_t b = a * range(r, 40, 250) / 100;
    b = b < lo ? lo : b > hi ? hi : b;
    int64_t bw = range(r, 0, 1) ? a : b, bh = bw == a ? b : a;
    int64_t cx = range(r, 0, w - 1), cy = range(r, 0, h - 1);
    if (range(r, 0, 5) == 0) { /* against a border, so that it is cut */
        int edge = (int)range(r, 0, 3);
        int64_t in = range(r, 0, (edge < 2 ? bw : bh) / 4);
        if (edge == 0) cx = in;
        else if (edge == 1) cx = w - 1 - in;
        else if (edge == 2) cy = in;
        else cy = h - 1 - in;
    }
    s->x0 = (int)(cx - bw / 2), s->x1 = (int)(cx - bw / 2 + bw), s->y0 = (int)(cy - bh / 2),
    s->y1 = (int)(cy - bh / 2 + bh);
    v->x0 = s->x0 > 0 ? s->x0 : 0, v->x1 = s->x1 < w ? s->x1 : w;
    v->y0 = s->y0 > 0 ? s->y0 : 0, v->y1 = s->y1 < h ? s->y1 : h;
    return v->x1 - v->x0 >= 2 && v->y1 - v->y0 >= 2;
}

/* Whether box v would cover more than half of an earlier box. */
static int hides(const yp_synth_box *v, const yp_synth_box *boxes, int n) {
    for (int i = 0; i < n; i++) {
        const yp_synth_box *b = &boxes[i];
        int64_t inter = overlap(v->x0, v->x1, b->x0, b->x1) * overlap(v->y0, v->y1, b->y0, b->y1);
        if (2 * inter > (int64_t)(b->x1 - b->x0) * (b->y1 - b->y0)) return 1;
    }
    return 0;
}

static void shape_look(rng *r, int nc, shape *s, yp_synth_box *v) {
    v->cls = (int)range(r, 0, nc - 1);
    s->kind = v->cls % N_KINDS;
    const uint8_t *base = colours[(v->cls / N_KINDS) % 16].rgb;
    for (int c = 0; c < 3; c++) s->rgb[c] = clamp8(base[c] + range(r, -15, 15));
    int64_t small = s->x1 - s->x0 < s->y1 - s->y0 ? s->x1 - s->x0 : s->y1 - s->y0;
    s->filled = small < 8 || range(r, 0, 4) < 3;
    int64_t t = small * range(r, 6, 15) / 100;
    s->t2 = 2 * (t > 1 ? t : 1);
    int64_t apex = range(r, 0, 1000);
    shape_geometry(s, apex, (int)range(r, 0, 1));
}

static void shape_draw(const shape *s, const yp_synth_box *v, yp_image *im) {
    for (int y = v->y0; y < v->y1; y++)
        for (int x = v->x0; x < v->x1; x++)
            if (shape_covers(s, x, y)) memcpy(im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3u, s->rgb, 3);
}

/* Adds uniform noise of +-amp to every sample. */
static void add_noise(rng *r, yp_image *im) {
    int64_t amp = range(r, 2, 20), span = 2 * amp + 1;
    size_t n = (size_t)im->w * (size_t)im->h;
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = next(r);
        for (int c = 0; c < 3; c++, bits >>= 16)
            im->rgb[3 * i + (size_t)c] =
                clamp8(im->rgb[3 * i + (size_t)c] + (int64_t)((bits & 0xffff) % (uint64_t)span) - amp);
    }
}

void yp_synth_sample_free(yp_synth_sample *s) {
    yp_image_free(&s->image);
    memset(s, 0, sizeof *s);
}

int yp_synth_make(const yp_synth_opts *o, int split, int64_t index, yp_synth_sample *s, yp_err *err) {
    memset(s, 0, sizeof *s);
    if (yp_synth_check(o, err)) return -1;
    if (yp_image_alloc(&s->image, o->w, o->h, err)) return -1;
    rng r;
    rng_init(&r, o->seed, split, index);
    s->png = range(&r, 0, 2) == 0;
    s->quality = (int)range(&r, 70, 95);
    background bg;
    if (background_init(&bg, &r, o->w, o->h)) {
        free(bg.grid);
        yp_synth_sample_free(s);
        return yp_err_set(err, "synth: out of memory for the background of a %dx%d image", o->w, o->h);
    }
    background_draw(&bg, &s->image);
    free(bg.grid);
    int want = (int)range(&r, 1, YP_SYNTH_MAX_OBJECTS);
    for (int k = 0; k < want; k++)
        for (int attempt = 0; attempt < 30; attempt++) {
            shape sh;
            yp_synth_box v;
            memset(&sh, 0, sizeof sh);
            if (!place(&r, o->w, o->h, &sh, &v) || hides(&v, s->boxes, s->n_boxes)) continue;
            shape_look(&r, o->nc, &sh, &v);
            shape_draw(&sh, &v, &s->image);
            s->boxes[s->n_boxes++] = v;
            break;
        }
    add_noise(&r, &s->image);
    return 0;
}
