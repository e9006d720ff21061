/* yaml_mod_torch.c - plain torch.nn modules a model yaml may name directly: nn.MaxPool2d and
 * nn.BatchNorm2d (nn.Upsample is in yaml_mod_yolov5.c with YOLOv5's own modules). parse_model
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
