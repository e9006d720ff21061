/* train_opts.h - the options of `yoloplan train` (YOLOv5 train.py's flags where one exists): one
 * table describes each option once, and from it come the argv parser, the JSON a checkpoint
 * carries (so --resume reuses every original option) and the run folder's opt.yaml. */
#ifndef YP_TRAIN_OPTS_H
#define YP_TRAIN_OPTS_H

#include <stdint.h>

#include "yp_error.h"

#define TRAIN_PATH 1024

typedef struct {
    char data[TRAIN_PATH];    /* --data: the dataset's data.yaml (required) */
    char model[TRAIN_PATH];   /* --model / --cfg: bundled name, IR .json or model .yaml */
    char weights[TRAIN_PATH]; /* --weights: initial weights (a checkpoint or a state dict, safetensors or .pt) */
    char hyp[TRAIN_PATH];     /* --hyp: hyperparameter yaml ("": hyp.scratch-low) */
    char project[TRAIN_PATH], name[256];
    char device[32];          /* --device: a backend kind's spec (cpu, cpu:T, cuda, cuda:N, train.py's N) */
    char gpu[64];             /* --gpu: the card a GPU's plan is made for (default: the device's own) */
    char mem[32];             /* --mem: host-memory budget of the arena of a backend whose memory is the
                               * host's ("": available - the rest of the run's host memory, yp_train_host.h) */
    char optimizer[8];        /* sgd | adam | adamw (train.py's SGD, Adam, AdamW too) */
    char cache[8];            /* --cache ram (a bare --cache: ram, as train.py) */
    char label_smoothing[32]; /* --label-smoothing EPS: the hyp's label_smoothing ("": the hyp's own) */
    long img;                 /* --img / --imgsz / --img-size */
    long batch;               /* --batch / --batch-size: 0 not given, -1 train.py's AutoBatch (the plan's
                               * fastest that fits, up to 64); the plan's batch once planned */
    long epochs, workers, threads, seed, freeze, patience;
    int exist_ok, mosaic, multi_scale, no_augment, noval, cos_lr, noplots, noautoanchor;
    /* --resume [LAST]: resume_given set, resume the checkpoint ("": the newest last.safetensors) */
    int resume_given;
    char resume[TRAIN_PATH];
    char save_dir[TRAIN_PATH]; /* resolved run folder (stored; not an option) */
} train_opts;

/* Defaults as train.py: yolov5s, img 640, batch 0 (the plan's choice), 100 epochs, 8 workers, seed
 * 0, runs/train/exp, sgd, patience 100, mosaic on, device cpu, threads = the cores. */
void train_opts_default(train_opts *o);

/* Parses argv[1..] (argv[0] is the subcommand). 0, or -1 with err naming the option and the fix:
 * an option given twice under two spellings (--batch and --batch-size), and each train.py flag
 * yoloplan does not implement ("--X is train.py's; yoloplan does not support it (why)"). */
int train_opts_parse(int argc, char **argv, train_opts *o, yp_err *err);

/* The options as one JSON object (text, malloc'd) / back; from_json fills only keys present. */
char *train_opts_json(const train_opts *o);
int train_opts_from_json(const char *json, train_opts *o, yp_err *err);

/* opt.yaml: one "key: value" line per option. 0, or -1 with err set. */
int train_opts_write_yaml(const train_opts *o, const char *path, yp_err *err);

#endif
