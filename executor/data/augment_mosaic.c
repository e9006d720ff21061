/* augment_mosaic.c - YOLOv5's load_mosaic (yp_augment.h): the centre and partners drawn in its
 * order, each tile's place around the centre on the 2 imgsz canvas (top-left, top-right,
 * bottom-left, bottom-right, cut at the canvas edge), its labels shifted by the tile's offset and
 * clipped to the canvas. */
#include <string.h>

#include "yp_augment.h"

void yp_mosaic_fill(yp_image *canvas) { memset(canvas->rgb, 114, (size_t)canvas->w * (size_t)canvas->h * 3); }

/* Python's -s // 2 (floor division). */
static int neg_half(int s) { return -((s + 1) / 2); }

void yp_mosaic_draw(yp_rng *r, int64_t index, int64_t n_images, int imgsz, yp_mosaic_plan *p) {
    int b = neg_half(imgsz);
    p->imgsz = imgsz;
    p->yc = (int)yp_rng_uniform(r, -b, 2.0 * imgsz + b);
    p->xc = (int)yp_rng_uniform(r, -b, 2.0 * imgsz + b);
    p->index[0] = index;
    for (int i = 1; i < 4; i++) p->index[i] = yp_rng_below(r, n_images);
    for (int i = 3; i > 0; i--) { /* random.shuffle */
        int j = (int)yp_rng_below(r, i + 1);
        int64_t t = p->index[i];
        p->index[i] = p->index[j], p->index[j] = t;
    }
}

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* load_mosaic's canvas rectangle a and tile rectangle b (x1 y1 x2 y2) of slot for a w x h tile. */
static void rects(const yp_mosaic_plan *p, int slot, int w, int h, int a[4], int b[4]) {
    int xc = p->xc, yc = p->yc, s2 = 2 * p->imgsz;
    switch (slot) {
    case 0:
        a[0] = imax(xc - w, 0), a[1] = imax(yc - h, 0), a[2] = xc, a[3] = yc;
        b[0] = w - (a[2] - a[0]), b[1] = h - (a[3] - a[1]), b[2] = w, b[3] = h;
        break;
    case 1:
        a[0] = xc, a[1] = imax(yc - h, 0), a[2] = imin(xc + w, s2), a[3] = yc;
        b[0] = 0, b[1] = h - (a[3] - a[1]), b[2] = imin(w, a[2] - a[0]), b[3] = h;
        break;
    case 2:
        a[0] = imax(xc - w, 0), a[1] = yc, a[2] = xc, a[3] = imin(s2, yc + h);
        b[0] = w - (a[2] - a[0]), b[1] = 0, b[2] = w, b[3] = imin(a[3] - a[1], h);
        break;
    default:
        a[0] = xc, a[1] = yc, a[2] = imin(xc + w, s2), a[3] = imin(s2, yc + h);
        b[0] = 0, b[1] = 0, b[2] = imin(w, a[2] - a[0]), b[3] = imin(a[3] - a[1], h);
        break;
    }
}

int yp_mosaic_place_in(yp_image *canvas, const yp_mosaic_plan *p, int slot, const yp_image *tile,
                       const float *rows, int64_t n, float *out, const int clip[4], int placed[4]) {
    int a[4], b[4], s2 = 2 * p->imgsz;
    if (slot < 0 || slot > 3 || canvas->w != s2 || canvas->h != s2 || tile->w < 1 || tile->h < 1 || p->xc < 0 ||
        p->yc < 0 || p->xc > s2 || p->yc > s2)
        return -1;
    rects(p, slot, tile->w, tile->h, a, b);
    int cw = a[2] - a[0], ch = a[3] - a[1];
    if (cw < 0 || ch < 0 || b[0] < 0 || b[1] < 0 || b[2] - b[0] != cw || b[3] - b[1] != ch) return -1;
    memcpy(placed, a, sizeof a);
    int x0 = imax(a[0], clip[0]), y0 = imax(a[1], clip[1]), x1 = imin(a[2], clip[2]), y1 = imin(a[3], clip[3]);
    for (int y = y0; x0 < x1 && y < y1; y++)
        memcpy(canvas->rgb + ((size_t)y * (size_t)s2 + (size_t)x0) * 3,
               tile->rgb + ((size_t)(b[1] + y - a[1]) * (size_t)tile->w + (size_t)(b[0] + x0 - a[0])) * 3,
               (size_t)(x1 - x0) * 3);
    float padw = (float)(a[0] - b[0]), padh = (float)(a[1] - b[1]), w = (float)tile->w, h = (float)tile->h;
    for (int64_t i = 0; i < n; i++) {
        const float *r = rows + 5 * i;
        float *o = out + 5 * i, cx = r[1], cy = r[2], bw = r[3], bh = r[4];
        float v[4] = {w * (cx - bw / 2) + padw, h * (cy - bh / 2) + padh, w * (cx + bw / 2) + padw,
                      h * (cy + bh / 2) + padh};
        o[0] = r[0];
        for (int k = 0; k < 4; k++) o[1 + k] = v[k] < 0 ? 0 : v[k] > (float)s2 ? (float)s2 : v[k];
    }
    return 0;
}

int yp_mosaic_place(yp_image *canvas, const yp_mosaic_plan *p, int slot, const yp_image *tile,
                    const float *rows, int64_t n, float *out) {
    int all[4] = {0, 0, canvas->w, canvas->h}, placed[4];
    return yp_mosaic_place_in(canvas, p, slot, tile, rows, n, out, all, placed);
}

void yp_mosaic_fill_rest(yp_image *canvas, const int clip[4], const int (*placed)[4], int n) {
    size_t stride = (size_t)canvas->w * 3;
    for (int y = clip[1]; y < clip[3]; y++) {
        int lo[4], hi[4], k = 0; /* the placed rectangles' spans on row y, sorted by start */
        for (int i = 0; i < n && i < 4; i++) {
            const int *q = placed[i];
            int x0 = imax(q[0], clip[0]), x1 = imin(q[2], clip[2]);
            if (y < q[1] || y >= q[3] || x0 >= x1) continue;
            int j = k++;
            for (; j > 0 && lo[j - 1] > x0; j--) lo[j] = lo[j - 1], hi[j] = hi[j - 1];
            lo[j] = x0, hi[j] = x1;
        }
        uint8_t *row = canvas->rgb + (size_t)y * stride;
        int x = clip[0];
        for (int j = 0; j < k; j++) {
            if (lo[j] > x) memset(row + 3 * (size_t)x, 114, 3 * (size_t)(lo[j] - x));
            x = imax(x, hi[j]);
        }
        if (x < clip[2]) memset(row + 3 * (size_t)x, 114, 3 * (size_t)(clip[2] - x));
    }
}
