/* yp_graph.h - the YOLOv5 network as yoloplan sees it: layers (the 25 top-level
 * Ultralytics modules) expanded into primitive nodes (conv2d, batchnorm2d, ...).
 *
 * Defines: the op enum, node/layer/graph types, shape inference, the op table.
 * Ownership: a yp_graph is created by yp_ir_load / yp_yaml_import and released
 * with yp_graph_free; every array inside it is owned by the graph. */
#ifndef YP_GRAPH_H
#define YP_GRAPH_H

#include <stdint.h>
#include <stddef.h>

#include "yp_error.h"

#define YP_IR_FORMAT "yoloplan-ir"
#define YP_IR_VERSION 1
#define YP_MAX_INPUTS 5     /* concat of SPPF takes 4, Detect of P3..P7 5 */
#define YP_MAX_LEVELS 5     /* detection levels (P3..P7) */
#define YP_MAX_ANCHORS 8    /* anchors per level */
#define YP_MAX_ARGS 8       /* display arguments of a layer */
#define YP_NAME_LEN 64
/* The largest graphs yoloplan takes: ten times yolov5x (25 layers, 416 nodes). The schedule, the
 * checkpoint front and the search grow faster than linearly with the nodes, so a bigger graph
 * would run for minutes before anything refused it. */
#define YP_GRAPH_MAX_LAYERS 1024
#define YP_GRAPH_MAX_NODES 4096
#define YP_GRAPH_MAX_IN_CHANNELS 4096 /* image channels (input.channels, a yaml's ch) */
#define YP_GRAPH_MAX_NC 100000        /* classes (a yaml's or a data.yaml's nc, --nc) */
#define YP_INPUT_IMAGE (-1) /* node/layer input id meaning "the network's input image" */

typedef enum {
    YP_OP_CONV2D,
    YP_OP_BATCHNORM2D,
    YP_OP_SILU,
    YP_OP_ADD,
    YP_OP_CONCAT,
    YP_OP_UPSAMPLE_NEAREST,
    YP_OP_MAXPOOL2D,
    YP_OP_DETECT,
    YP_OP_SPACE_TO_DEPTH, /* Focus (YOLOv5 <= v5.0): 2x2 pixel blocks to channels, c -> 4c */
    YP_OP_ATTENTION,      /* C3TR: multi-head scaled dot-product attention over each image's pixels */
    YP_OP_RELU,           /* nn.ReLU */
    YP_OP_LEAKY_RELU,     /* nn.LeakyReLU(slope) */
    YP_OP_HARDSWISH,      /* nn.Hardswish */
    YP_OP_ZERO_PAD,       /* nn.ZeroPad2d((left, right, top, bottom)) */
    YP_OP_CONTRACT,       /* YOLOv5's Contract(gain): gain x gain pixel blocks to channels, c -> gain^2 c */
    YP_OP_EXPAND,         /* YOLOv5's Expand(gain): Contract's inverse, c -> c / gain^2 */
    YP_OP_COUNT
} yp_op;

/* Kernel, stride and zero padding per axis, height then width (PyTorch's kernel_size=(kh, kw),
 * stride=(sh, sw), padding=(ph, pw)); YOLOv5's CrossConv is the one non-square user.
 * torch_input_copy: an nn.Linear of a TransformerBlock whose input PyTorch holds as a permuted
 * view of the (L, B, C) tokens: at batch > 1 its matmul makes the input contiguous first, a copy of
 * its own that autograd saves (the first layer's q, k and v each copy p + linear(p), and linear
 * copies p); the `pytorch` saving policy plans that copy. */
typedef struct { int c_in, c_out, kh, kw, sh, sw, ph, pw, groups, bias, torch_input_copy; } yp_conv_attrs;
typedef struct { int c; double eps, momentum; } yp_bn_attrs;
typedef struct { int axis; } yp_concat_attrs;
typedef struct { int scale; } yp_upsample_attrs;
typedef struct { int k, s, p; } yp_pool_attrs;
/* Detect: per level a 1x1 conv with bias c_in[l] -> na*(nc+5); anchors live in yp_graph. */
typedef struct { int nc, na, nl; int c_in[YP_MAX_LEVELS]; } yp_detect_attrs;
/* Attention: q, k, v (n, c, h, w) -> per image and head softmax(q_h k_h^T / sqrt(c/heads)) v_h. */
typedef struct { int heads; } yp_attn_attrs;
typedef struct { double slope; } yp_leaky_attrs;                 /* negative slope, 0..1 */
typedef struct { int left, right, top, bottom; } yp_pad_attrs;   /* zeros added on each side */
/* Contract, Expand: the block side, 2..YP_MAX_GAIN (gain 1 would change nothing). */
typedef struct { int gain; } yp_s2d_attrs;
#define YP_MAX_GAIN 16

typedef union {
    yp_conv_attrs conv;
    yp_bn_attrs bn;
    yp_concat_attrs concat;
    yp_upsample_attrs up;
    yp_pool_attrs pool;
    yp_detect_attrs detect;
    yp_attn_attrs attn;
    yp_leaky_attrs leaky;
    yp_pad_attrs pad;
    yp_s2d_attrs s2d;
} yp_attrs;

typedef struct {
    int id;                       /* == index in yp_graph.nodes; nodes are in topological order */
    yp_op op;
    char name[YP_NAME_LEN];       /* Ultralytics state-dict prefix, e.g. "model.2.m.0.cv1.conv" */
    int layer;                    /* top-level layer this node belongs to */
    int n_inputs;
    int inputs[YP_MAX_INPUTS];    /* node ids, or YP_INPUT_IMAGE */
    yp_attrs a;
} yp_node;

typedef struct {
    int index;
    int n_from;
    int from[YP_MAX_INPUTS];      /* absolute layer indices, or YP_INPUT_IMAGE */
    int repeats;                  /* after depth scaling (C3 bottleneck count) */
    char module[32];              /* "Conv", "C3", "SPPF", "nn.Upsample", "Concat", "Detect", ... */
    int n_args;
    int args[YP_MAX_ARGS];        /* scaled arguments, for display (e.g. Conv: c1 c2 k s p) */
    int output;                   /* node id of the layer's output */
} yp_layer;

typedef struct {
    char name[YP_NAME_LEN];
    int nc;
    double depth_multiple, width_multiple; /* informational */
    int in_channels;
    int nl, na;                            /* detection levels, anchors per level */
    int strides[YP_MAX_LEVELS];
    float anchors[YP_MAX_LEVELS][YP_MAX_ANCHORS][2]; /* pixels (w, h) */
    int anchors_auto; /* the yaml gave `anchors: N`: stand-ins (yp_graph_standin_anchors) until
                       * training fits N per level to the labels, as YOLOv5's AutoAnchor does */
    int n_layers;
    yp_layer *layers;
    int n_nodes;
    yp_node *nodes;
} yp_graph;

/* ---- graph lifetime ---- */
/* Allocates an empty graph with room for n_layers layers and n_nodes nodes; NULL on OOM. */
yp_graph *yp_graph_new(int n_layers, int n_nodes);
void yp_graph_free(yp_graph *g);

/* Checks the structural invariants a loaded/imported graph must satisfy (inputs exist and come
 * earlier, channel counts agree, detect matches nl/na, ...). Returns 0, or -1 with err set. */
int yp_graph_check(const yp_graph *g, const char *file, yp_err *err);

/* The conv whose output, through BN and an activation (yp_op_info.norm and .activation: SiLU,
 * ReLU, ...), is layer l's output (a Conv's conv, a C3's cv3, an SPPF's cv2), or -1 when the
 * layer ends otherwise (concat, upsample, detect). */
int yp_layer_boundary_conv(const yp_graph *g, int l);

/* Number of convs of layer l other than its boundary conv: what checkpointing l recomputes. */
int yp_layer_inner_convs(const yp_graph *g, int l);

/* Stand-in anchors for `anchors: N`, level l of stride `stride`, anchor a: YOLOv5's P3 anchors in
 * units of the stride ((1.25, 1.625), (2, 3.75), (4.125, 2.875)) times the stride, doubled for
 * each further three anchors. Planning needs only their count; training replaces them. */
void yp_graph_standin_anchors(yp_graph *g);

/* ---- edits (graph_edit.c) ---- */
/* Each edits a graph that passed yp_graph_check and checks it again (`file` names it in errors);
 * on failure the graph is left edited and must be freed. */

/* The class count becomes nc (1..YP_GRAPH_MAX_NC): the graph's, Detect's, and Detect's displayed
 * first argument (its per-level convs then have na * (nc + 5) outputs). The same nc: no change.
 * 0, or -1 with err set. */
int yp_graph_set_nc(yp_graph *g, int nc, const char *file, yp_err *err);

/* Keeps the first na anchors of each level (1..g->na; the rest are zeroed): the graph's count and
 * Detect's. The same count: no change. 0, or -1 with err set. */
int yp_graph_keep_anchors(yp_graph *g, int na, const char *file, yp_err *err);

/* A new graph equal to g (through its IR text), to edit while g stays; NULL with err set. */
yp_graph *yp_graph_copy(const yp_graph *g, yp_err *err);

/* ---- shapes ---- */
typedef struct { int64_t n, c, h, w; } yp_shape; /* logical NCHW; detect outputs: c = na*(nc+5) */

typedef struct {
    int n_out;                       /* 1, or nl for detect */
    yp_shape out[YP_MAX_LEVELS];
    int64_t params;                  /* trainable parameters (conv weight/bias, BN weight/bias) */
    int64_t buffers;                 /* non-trainable state (BN running mean/var) */
    int64_t flops;                   /* forward FLOPs, 2*MACs (conv only), for the given batch */
} yp_node_info;

static inline int64_t yp_shape_numel(yp_shape s) { return s.n * s.c * s.h * s.w; }

/* Largest stride of the network: of its Detect levels and of every node's real downsampling of
 * the image (yolov5-p34's backbone reaches 32 while its heads stop at 16), as their least common
 * multiple (a Contract of gain 3 in a stride-32 network needs multiples of 96); the input size
 * must be a multiple of it. */
int yp_graph_max_stride(const yp_graph *g);

/* YOLOv5's gs, max(int(model.stride.max()), 32): what train.py rounds --img to and val.py pads
 * its rectangles to, for a largest stride `stride`. Strides that are powers of two give the larger
 * of the two; in general this is their least common multiple, so that every size it makes is a
 * multiple of the stride too (a Contract of gain 3 at stride 8 makes 24: gs 96, where YOLOv5's 32
 * would leave a size that Contract's view refuses). */
static inline int64_t yp_stride_gs(int64_t stride) {
    int64_t a = stride > 0 ? stride : 32, b = 32;
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return (stride > 0 ? stride : 32) / a * 32;
}

/* Infers every node's output shapes, params and FLOPs for a batch of `batch` images of h x w.
 * info must hold g->n_nodes entries (caller owns). Returns 0, or -1 with err set (bad size,
 * overflow of 64-bit element counts). */
int yp_graph_infer(const yp_graph *g, int64_t batch, int64_t h, int64_t w, yp_node_info *info,
                   yp_err *err);

/* Totals over the whole graph. */
int64_t yp_graph_params(const yp_graph *g);

/* ---- op table: one row per op ----
 * A row holds everything the IR layer knows about an op; the structural check, shape inference,
 * the attrs reader and writer and the cost model call through it rather than switching on the op.
 * The contexts its functions take are graph-internal (ops_internal.h), which keeps cJSON out of
 * this header. How to add an op: graph/IR.md. */
typedef struct yp_check_ctx yp_check_ctx; /* the graph being checked, its channel counts so far */
typedef struct yp_infer_ctx yp_infer_ctx; /* the graph being inferred, its shapes so far */
typedef struct yp_attrs_in yp_attrs_in;   /* a node's JSON attrs object being read */
typedef struct yp_attrs_out yp_attrs_out; /* a node's JSON attrs object being written */

/* What an op's backward reads besides its output gradients (yp_op_info.bwd_reads). */
enum {
    YP_BWD_INPUT = 1,            /* its inputs' forward values (BN, SiLU, leaky_relu, hardswish, maxpool) */
    YP_BWD_INPUT_IF_TRAINS = 2,  /* its inputs' values when its weights get gradients (conv, Detect) */
    YP_BWD_STATS = 4,            /* its batch statistics (BN) */
    YP_BWD_INDICES = 8,          /* its argmax, where the saving policy keeps one (maxpool) */
    YP_BWD_ATTN_PROBS = 16,      /* its softmax output, where the saving policy keeps it (attention) */
    YP_BWD_OUTPUT = 32,          /* its own output's forward value (ReLU: PyTorch saves the result) */
};

/* What a node's training forward writes besides its outputs (yp_op_info.fwd_writes); the schedule
 * decides where each is made (a saving policy's rule, training rather than evaluation). */
enum {
    YP_FWD_STATS = 1,       /* its batch statistics: its recompute applies them, its backward reads them (BN) */
    YP_FWD_RUNNING = 2,     /* its running statistics, updated in place (BN) */
    YP_FWD_INDICES = 4,     /* its argmax, where the saving policy keeps one (maxpool) */
    YP_FWD_ATTN_PROBS = 8,  /* its softmax output: kept where the saving policy keeps it, else workspace, as
                             * its backward's scratch is (attention) */
    YP_FWD_INPUT_COPY = 16, /* its own copy of its input, where the saving policy keeps one (a conv whose
                             * attrs ask for it: torch_input_copy) */
};

/* An op's part in the schedule's BN+SiLU fusion (yp_op_info.bn_silu; YP_FUSE_BN_SILU in
 * yp_schedule.h): the normalisation whose apply moves into the activation's steps, or that
 * activation. */
enum { YP_BN_SILU_NONE, YP_BN_SILU_NORM, YP_BN_SILU_ACT };

/* The convolution a conv_like node runs at one level (yp_op_info.conv_geom): kernel, stride and
 * zero padding per axis (height, width), groups, and whether it adds a bias. */
typedef struct { int kh, kw, sh, sw, ph, pw, groups, bias; } yp_conv_geom;

/* One parameter tensor of a node: its role, level, state-dict suffix and PyTorch shape
 * (yp_schedule.h, where the roles are). At most YP_MAX_NODE_PARAMS a node. */
typedef struct yp_param_spec yp_param_spec;
#define YP_MAX_NODE_PARAMS (2 * YP_MAX_LEVELS) /* Detect: a weight and a bias per level */

typedef struct {
    yp_op op;
    const char *name;      /* IR spelling */
    int min_inputs, max_inputs;
    int matrix_math;       /* tensor-core bound (conv2d, detect); other ops are elementwise, bandwidth-bound */
    int fwd_launches;      /* kernel launches of its forward (and recompute) step */
    int bwd_launches;      /* ... of its backward step (conv: data and weight gradients) */
    unsigned bwd_reads;    /* YP_BWD_* flags: what its backward step reads */
    int activation;        /* a pointwise activation that follows a conv's BN (silu, relu, leaky_relu,
                            * hardswish): a layer's boundary conv is found through it */
    int norm;              /* a normalisation that follows a conv (batchnorm2d): the boundary conv is found
                            * through it too */
    int conv_like;         /* runs convolutions, through the backend's conv entries (conv2d; detect, a 1x1
                            * conv with bias per level): conv_geom says which; its steps take conv scratch
                            * and its backward computes weight gradients only where it trains */
    int head;              /* the network's detection head (detect): exactly one, the last node; one output
                            * per detection level, which the loss reads */
    int bn_silu;           /* its part in the BN+SiLU fusion: YP_BN_SILU_NORM (batchnorm2d), YP_BN_SILU_ACT
                            * (silu) or YP_BN_SILU_NONE */
    /* Checks node n's attrs against its inputs' channels (the input count and ids are checked
     * already) and sets *c_out to its output channels, -1 when it has no single output. 0, or -1
     * with the error set. */
    int (*check)(const yp_check_ctx *c, const yp_node *n, int *c_out);
    /* Fills o for node n: called with n_out = 1 and out[0] = input 0's shape, everything else 0;
     * sets the outputs, params, buffers and FLOPs. 0, or -1 with the error set. */
    int (*infer)(const yp_infer_ctx *c, const yp_node *n, yp_node_info *o);
    /* Forward FLOPs of a node whose yp_node_info.flops is 0 (every op but conv2d and detect), for
     * its output shape `out`: numel, BN 6 numel, SiLU 5 numel, maxpool k*k numel. */
    int64_t (*eltwise_flops)(const yp_node *n, yp_shape out);
    /* Reads node n's attrs; unknown keys are errors. 0, or -1 with the error set. */
    int (*load_attrs)(const yp_attrs_in *in, yp_node *n);
    /* Writes node n's attrs in a stable key order (nothing for ops without attrs). */
    void (*write_attrs)(const yp_node *n, yp_attrs_out *out);
    /* How node n rescales its input's grid along `axis` (0 height, 1 width): its output's stride
     * there is the input's times down / up (conv sh/1 and sw/1, maxpool s/1, space_to_depth 2/1,
     * contract gain/1, upsample and expand 1/scale). NULL: it keeps the strides of its inputs (the
     * largest, for concat and add). */
    void (*resample)(const yp_node *n, int axis, int *down, int *up);
    /* The YP_FWD_* set of what node n's training forward writes besides its outputs. NULL: nothing. */
    unsigned (*fwd_writes)(const yp_node *n);
    /* Fills out[0..k) with node n's parameter tensors in module order (trainable ones first, then
     * buffers such as BN's running statistics) and returns k <= YP_MAX_NODE_PARAMS. NULL: none. */
    int (*params)(const yp_node *n, yp_param_spec *out);
    /* The convolution conv_like node n runs at level `level` (0; Detect: 0..nl-1). NULL unless
     * conv_like. */
    void (*conv_geom)(const yp_node *n, int level, yp_conv_geom *g);
} yp_op_info;

const yp_op_info *yp_op_get(yp_op op);
/* Node n's row's fwd_writes, 0 where the row has none. */
unsigned yp_op_fwd_writes(const yp_node *n);
/* Node n's parameters through its row (0 where the row has none); out holds YP_MAX_NODE_PARAMS. */
int yp_op_params(const yp_node *n, yp_param_spec *out);
/* Returns the op for an IR name, or -1 if unknown. */
int yp_op_from_name(const char *name);

#endif
