/* yp_pt.h - PyTorch .pt files (torch.save's zip format, torch >= 1.6) read without Python, for
 * --weights: the tensors of the state dict they hold, by state-dict name.
 *
 * The container is a zip (read with libzip): "<archive>/data.pkl", a pickle of the saved object,
 * and one record "<archive>/data/<key>" per storage. The pickle is run by a small pickle machine
 * of our own (pt_internal.h) that never imports or calls anything: the classes a pickle names
 * (models.yolo.DetectionModel, models.common.Conv, torch.nn.modules.*, argparse.Namespace,
 * numpy scalars, or os.system) become stand-in objects that keep what BUILD gives them, so a
 * pickled nn.Module is a tree of stand-ins whose state holds "_parameters", "_buffers" and
 * "_modules", and tensors are storage records with an offset, a size and strides.
 *
 * Which state dict (what the reader's names are, in the order of PyTorch's state_dict()):
 *   - a dict with "model" and/or "ema" (a YOLOv5 checkpoint: train.py's last.pt, best.pt, an
 *     official yolov5s.pt; or scripts/pt2safetensors.py's safetensors -> .pt output): the
 *     state dict of "model" under its own names ("model.0.conv.weight", ...) and that of "ema",
 *     when not None, under "ema." + name, as yp_checkpoint.h's layout has them. Each may be a
 *     pickled module or a state dict. Other entries (optimizer, opt, git, ...) are read and left;
 *   - a state dict (a dict or OrderedDict of name -> tensor; torch.save(model.state_dict()));
 *   - a pickled module itself (torch.save(model)).
 * A module's state dict is PyTorch's: per module its parameters, then its buffers except those in
 * _non_persistent_buffers_set (None ones skipped), then each child under "<child>.", depth first.
 * BN's num_batches_tracked is kept (an I64 scalar), as PyTorch's state_dict() has it.
 *
 * Tensors keep their storage's dtype (HalfStorage F16, FloatStorage F32, DoubleStorage F64,
 * BFloat16Storage BF16, Long/Int/Short/Char/Byte/BoolStorage); the caller converts. A tensor must
 * be contiguous (strides row major; a size-1 dimension's stride is free, as PyTorch's
 * is_contiguous): a transposed or sliced one is refused with the fix.
 *
 * Hostile input: every failure is one line "FILE: what; fix": a file that is not regular or is
 * too large, not a zip, a legacy (pre-1.6) torch.save file, a damaged zip, no or two data.pkl, a
 * big-endian archive, a pickle above YP_PT_MAX_PICKLE, an unknown or truncated opcode, a stack,
 * mark, memo or value count above its cap, a memo slot never set, a malformed storage or tensor
 * record, a tensor outside its storage record or above YP_PT_MAX_TENSOR_BYTES, a module tree
 * deeper than YP_PT_MAX_DEPTH or with more than YP_PT_MAX_TENSORS tensors, two tensors of one
 * name, and an object that is neither a YOLOv5 checkpoint nor a state dict nor a module. Nothing
 * a pickle names is ever executed.
 *
 * The host must be little endian (torch writes the host's order, little endian on x86 and arm64;
 * an archive whose "byteorder" record says "big" is refused). */
#ifndef YP_PT_H
#define YP_PT_H

#include <stdint.h>

#include "yp_error.h"
#include "yp_safetensors.h"

#define YP_PT_MAX_FILE (1LL << 40)         /* 1 TiB */
#define YP_PT_MAX_PICKLE (64LL << 20)      /* data.pkl; yolov5x's last.pt has about 1 MB */
#define YP_PT_MAX_VALUES (1 << 21)         /* values the pickle makes */
#define YP_PT_MAX_ITEMS (1 << 23)          /* items in all its containers together */
#define YP_PT_MAX_STACK (1 << 20)          /* the pickle machine's stack */
#define YP_PT_MAX_MARKS (1 << 16)          /* open MARKs */
#define YP_PT_MAX_MEMO (1 << 21)           /* memo slots (BINPUT's index is below it) */
#define YP_PT_MAX_DEPTH 64                 /* modules nested in modules */
#define YP_PT_MAX_TENSORS (1 << 18)        /* tensors of the state dict */
#define YP_PT_MAX_TENSOR_BYTES (1LL << 36) /* one tensor: 64 GiB */

typedef struct {
    char *path;
    void *zip; /* the archive (pt_internal.h's pt_zip) */
    int n;
    yp_st_entry *e;  /* name, dtype, ndim, shape; [begin, end) are the tensor's bytes in its storage record */
    int64_t *record; /* e[i]'s storage record in the archive */
    int *by_name;    /* indices of e sorted by name (yp_pt_find) */
    char what[256];  /* what the file held, for a log line: "a checkpoint: model models.yolo.DetectionModel
                        (349 tensors), ema None" */
} yp_pt_file;

/* Whether the file at path starts as a .pt does: a zip ("PK\3\4") or torch.save's legacy format (a
 * pickle of its magic number, which yp_pt_open refuses with the fix). 0 as well when it cannot be
 * read (its reader says why). */
int yp_pt_sniff(const char *path);

/* Opens and reads path's pickle and finds its state dict (every rule above); the tensors' data is
 * read on demand. 0, or -1 with err set. Close with yp_pt_close either way; a zeroed file closes as
 * a no-op. */
int yp_pt_open(yp_pt_file *f, const char *path, yp_err *err);
void yp_pt_close(yp_pt_file *f);

/* The entry index of tensor `name`, or -1. */
int yp_pt_find(const yp_pt_file *f, const char *name);

/* Reads entry i's bytes (end - begin of them, its dtype, row major) into dst. 0, or -1 with err set
 * (a damaged record: a CRC mismatch, a short read). */
int yp_pt_read(const yp_pt_file *f, int i, void *dst, yp_err *err);

#endif
