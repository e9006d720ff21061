/* yp_boxes.h - the letterbox's ratio and padding (yp_augment.h's letterbox gives them) and boxes
 * of the network input mapped back to the original image, as val.py and detect.py do. */
#ifndef YP_BOXES_H
#define YP_BOXES_H

#include <stdint.h>

/* How an image of h0 x w0 original pixels became the network input: scaled by gain, then padded
 * by pad_w on the left and pad_h on the top (val.py's ratio_pad: shapes[i][1] = ((gain, _),
 * (pad_w, pad_h)) with gain the height ratio, and shapes[i][0] = (h0, w0)). The loader's
 * letterbox (yp_augment.h, yp_letterbox_geom) gives these as ratio_h, dw and dh. */
typedef struct {
    double gain, pad_w, pad_h;
    int64_t h0, w0;
} yp_ratio_pad;

/* scale_boxes without ratio_pad: the largest gain that fits h0 x w0 into h1 x w1 and the
 * padding centring it: gain = min(h1/h0, w1/w0), pad = ((w1 - w0*gain)/2, (h1 - h0*gain)/2). */
yp_ratio_pad yp_ratio_pad_fit(int64_t h1, int64_t w1, int64_t h0, int64_t w0);

/* scale_boxes in place on n rows of row_floats floats starting with x1, y1, x2, y2 (input
 * pixels): x = (x - pad_w) / gain, y = (y - pad_h) / gain (float32, the pads and gain rounded to
 * float32 first), then clipped to [0, w0] and [0, h0]. */
void yp_scale_boxes(const yp_ratio_pad *lb, float *rows, int64_t n, int64_t row_floats);

/* val.py's labels for matching: n rows (class, cx, cy, w, h) normalised to the input of in_w x
 * in_h pixels become rows (class, x1, y1, x2, y2) in original pixels: times (in_w, in_h) in
 * float32, to corners, then yp_scale_boxes. in and out may be the same buffer. */
void yp_labels_native(const yp_ratio_pad *lb, int64_t in_w, int64_t in_h, const float *in, int64_t n, float *out);

#endif
