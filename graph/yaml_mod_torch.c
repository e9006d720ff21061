/* yaml_mod_torch.c - plain torch.nn modules a model yaml may name directly: nn.MaxPool2d,
 * nn.ZeroPad2d and nn.BatchNorm2d (nn.Upsample is in yaml_mod_yolov5.c with YOLOv5's own modules). parse_model
 * passes their args unchanged and keeps the input's channels. */
#include <stdio.h>

#include "yaml_build.h"

/* nn.MaxPool2d(kernel_size, stride=kernel_size, padding=0) */
int ym_maxpool(builder *b, const row *r) {
    int k, s, p;
    if (yb_arg_int(b, r, 0, ARG_REQUIRED, 1, MAX_K, &k)) return -1;
    const yp_ynode *sn = yb_arg_node(r, 1);
    if (sn && yp_yn_is_null(sn)) sn = NULL;
    if (yb_arg_int(b, r, 1, k, 1, MAX_K, &s) || yb_arg_int(b, r, 2, 0, 0, MAX_K, &p)) return -1;
    if (!sn) s = k;
    if (2 * p > k) return yb_fail(b, r->line, "padding %d is more than half the kernel %d (PyTorch refuses it)", p, k);
    int out = yb_add_node(b, YP_OP_MAXPOOL2D, &r->in, 1, (yp_attrs){.pool = {.k = k, .s = s, .p = p}}, "%s",
                          b->prefix);
    return yb_layer_done(b, r, out, r->c1, r->in_stride * s, (int[]){k, s, p}, 3);
}

/* nn.BatchNorm2d (its one argument, the channels, is the input's) */
int ym_batchnorm(builder *b, const row *r) {
    yp_bn_attrs bn = {.c = r->c1, .eps = 1e-3, .momentum = 0.03}; /* YOLOv5's initialize_weights */
    int out = yb_add_node(b, YP_OP_BATCHNORM2D, &r->in, 1, (yp_attrs){.bn = bn}, "%s", b->prefix);
    return yb_layer_done(b, r, out, r->c1, r->in_stride, (int[]){r->c1}, 1);
}

/* nn.ZeroPad2d(padding): one number for every side, or (left, right, top, bottom). */
int ym_zero_pad(builder *b, const row *r) {
    const yp_ynode *n = yb_arg_node(r, 0);
    int side[4];
    if (!n) return yb_arg_missing(b, r, 0);
    if (n->kind == YP_YN_SEQ) {
        if (n->n != 4)
            return yb_fail(b, n->line, "args[0]: %d paddings; give one, or [left, right, top, bottom]", n->n);
        for (int j = 0; j < 4; j++)
            if (yb_get_int(b, n->kids[j], "args[0]", 0, 1024, &side[j])) return -1;
    } else {
        if (yb_get_int(b, n, "args[0]", 0, 1024, &side[0])) return -1;
        side[1] = side[2] = side[3] = side[0];
    }
    yp_attrs a = {.pad = {.left = side[0], .right = side[1], .top = side[2], .bottom = side[3]}};
    int out = yb_add_node(b, YP_OP_ZERO_PAD, &r->in, 1, a, "%s", b->prefix);
    return yb_layer_done(b, r, out, r->c1, r->in_stride, side, 4);
}
