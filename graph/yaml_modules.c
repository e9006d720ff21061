/* yaml_modules.c - the module table of the model-yaml importer: one row per Ultralytics module
 * it expands (the expanders live in yaml_mod_*.c by family), with its argument count, whether it
 * takes several layers, whether `number` counts its inner bottlenecks, and its usage line. */
#include <stdio.h>
#include <string.h>

#include "yaml_build.h"

static const module_info modules[] = {
    {"Conv", ym_conv, 5, 0, 0, "[c2, k=1, s=1, p=None, g=1]"},
    {"C3", ym_c3, 2, 0, 1, "[c2, shortcut=True]"},
    {"Bottleneck", ym_bottleneck, 2, 0, 0, "[c2, shortcut=True]"},
    {"SPPF", ym_sppf, 2, 0, 0, "[c2, k=5]"},
    {"SPP", ym_spp, 2, 0, 0, "[c2, [5, 9, 13]]"},
    {"Focus", ym_focus, 5, 0, 0, "[c2, k=1, s=1, p=None, g=1]"},
    {"Contract", ym_contract, 1, 0, 0, "[gain=2]"},
    {"Expand", ym_expand, 1, 0, 0, "[gain=2]"},
    {"nn.Upsample", ym_upsample, 3, 0, 0, "[None, 2, 'nearest']"},
    {"Concat", ym_concat, 1, 1, 0, "[1]"},
    {"Detect", ym_detect, 2, 1, 0, "[nc, anchors]"},
    {"Segment", ym_segment, 6, 1, 0, "[nc, anchors, nm=32, npr=256]"},
    {"BottleneckCSP", ym_bottleneck_csp, 2, 0, 1, "[c2, shortcut=True]"},
    {"C3SPP", ym_c3spp, 2, 0, 0, "[c2, [5, 9, 13]]"},
    {"GhostConv", ym_ghost_conv, 5, 0, 0, "[c2, k=1, s=1, g=1, act=True]"},
    {"DWConv", ym_dw_conv, 5, 0, 0, "[c2, k=1, s=1, d=1, act=True]"},
    {"GhostBottleneck", ym_ghost_bottleneck, 3, 0, 0, "[c2, k=3, s=1]"},
    {"C3Ghost", ym_c3ghost, 2, 0, 1, "[c2, shortcut=True]"},
    {"nn.MaxPool2d", ym_maxpool, 3, 0, 0, "[kernel_size, stride=kernel_size, padding=0]"},
    {"nn.ZeroPad2d", ym_zero_pad, 1, 0, 0, "[[left, right, top, bottom]] or [p]"},
    {"nn.BatchNorm2d", ym_batchnorm, 1, 0, 0, "[c1]"},
    {"C3TR", ym_c3tr, 2, 0, 1, "[c2, shortcut=True]"},
    {"C3x", ym_c3x, 2, 0, 1, "[c2, shortcut=True]"},
    {"CrossConv", ym_cross_conv, 6, 0, 0, "[c2, k=3, s=1, g=1, e=1.0, shortcut=False]"},
};

const module_info *yb_module_find(const char *name) {
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
        if (strcmp(modules[i].name, name) == 0) return &modules[i];
    return NULL;
}

void yb_module_names(char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof modules / sizeof modules[0] && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", modules[i].name);
        if (n < 0) break;
        used += (size_t)n;
    }
}
