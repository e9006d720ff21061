/* usage.c - the usage text of each command (usage.h). train's and val's list train.py's and
 * val.py's flags with one line for each way yoloplan differs. */
#include <string.h>

#include "usage.h"
#include "yp_models.h"

static const char plan_text[] =
    "usage: yoloplan --gpu GPU [options]          which configurations fit, fastest first\n"
    "       yoloplan <command> [options]          (yoloplan <command> --help: its options)\n"
    "\n"
    "planner options (yoloplan [plan] --gpu ...):\n"
    "  --gpu G            card (rtx3070, t4, a100-40gb, h200, ...), memory (8GB, 8GiB, 7.5G, 8192MiB) or auto\n"
    "  --model M          bundled name, IR .json, model .yaml, a comma list, or all (default yolov5s)\n"
    "  --img S            640, 640x480 (width x height), a range 320-960, or all (320-1280; default 640); one\n"
    "                     size is rounded up to a multiple of the max stride as train.py does, with a warning\n"
    "  --batch B          pin the batch: with one model and size, answer what-if with remedies\n"
    "  --max-batch B      largest batch searched (default 64, YOLOv5's nominal batch; at most 1024)\n"
    "  --precision P      fp32, amp-fp16, amp-bf16 or all (default all the card supports)\n"
    "  --ckpt SET         checkpoint set: none, 2,4,6 (layers), or front (default: the whole front)\n"
    "  --mosaic on|off|both   --optimizer sgd|adam|adamw   --no-ema   --freeze N   --multi-scale\n"
    "  --policy P         what the forward pass saves for backward: yoloplan (conv outputs; the\n"
    "                     default), yoloplan+cat (and concat outputs: more memory, less recompute)\n"
    "                     or pytorch (what autograd saves)\n"
    "  --labels L         labels per image to plan for (default 7.3, COCO's mean); mosaic counts 4x\n"
    "  --data DATA.yaml   scan an Ultralytics dataset: its nc, image count and most-labelled image\n"
    "  --reserve SIZE     device memory to keep free besides the plan (e.g. 512MiB); default 5 % of\n"
    "                     the card for yoloplan's executor (the fixed-cost estimate's error), 0 turns it off\n"
    "  --images N         training images: sizes the RAM image cache in the host estimate (a \"host RAM\"\n"
    "                     line under the table, the what-if's loader note, JSON host.image_cache)\n"
    "  --top K            rows shown (default 10; with several models K per model, default 1)\n"
    "  --all              every distinct plan that fits\n"
    "  --row K            mark row K (*) and write it with --save-plan / --timeline (default row 1)\n"
    "  --json --save-plan FILE --timeline DIR --format svg|png\n"
    "                     (with --batch, one model and one size: they write the what-if's plan)\n"
    "  train.py's --batch-size, --imgsz, --img-size and --cfg are accepted for --batch, --img, --model\n"
    "  --scratch MODEL    conv scratch model the plans are sized by: im2col (default; backend-neutral)\n"
    "                     or onednn:T (the CPU executor's oneDNN convs on T threads; fp32 plans only)\n";

static const char plan_text2[] = /* a second string: C11 compilers need take only 4095 characters in one */
    "  --load-plan FILE   verify a saved plan.json (re-planned, compared tensor by tensor) and show it;\n"
    "                     with --gpu G: does it fit card G (its fixed cost, the 5 % margin or --reserve)?\n"
    "                     exit 0 if it does, 1 if not\n"
    "  --target T         yoloplan (the default: plans for yoloplan's executor) or pytorch: predict\n"
    "                     Ultralytics train.py (AMP, SGD, EMA, validation at 2x batch) on the card: the\n"
    "                     GPU_mem it prints, nvidia-smi, the peak step, the --batch-size to pass and\n"
    "                     AutoBatch's pick; with --batch B a what-if with train.py's remedies. Takes\n"
    "                     --model (one), --img (one size), --batch, --data, --labels, --precision\n"
    "                     amp-fp16|fp32, --optimizer, --freeze, --multi-scale, --reserve, --max-batch, --json;\n"
    "                     and its speed: images/s, seconds an epoch with validation, hours for\n"
    "                     --epochs N (default 300) on --data's images (default COCO's), the loader's\n"
    "                     workers from --cpus N (default 8, the README's AWS p3.2xlarge) and\n"
    "                     --workers N (train.py's, default 8); and its host RAM: the training process,\n"
    "                     the loaders' workers and queued batches, --cache [ram|disk]'s images (from\n"
    "                     --data's image headers, else COCO's or --images N of 640x480), against\n"
    "                     --mem SIZE (the training machine's free RAM; default: this machine's)\n"
    "  --profile autobatch  AutoBatch's probe of batches 1, 2, 4, 8, 16 and its pick (implies --target pytorch)\n";

static const char info_text[] =
    "usage: yoloplan info --model M [--img S|WxH] [--nc N] [--json]\n"
    "                                               per-layer table: params, shapes, FLOPs\n";

static const char import_text[] =
    "usage: yoloplan import MODEL.yaml -o MODEL.json [--nc N]\n"
    "                                               convert an Ultralytics model yaml to the IR\n";

static const char schedule_text[] =
    "usage: yoloplan schedule --model M [--batch B] [--img S] [--policy yoloplan|yoloplan+cat|pytorch]\n"
    "                         [--fuse bn_silu]      list the training step: steps and tensors\n";

static const char bench_text[] =
    "usage: yoloplan bench-step [--model M] [--batch B|auto] [--img S] [--steps N] [--warmup N] [--threads T]\n"
    "                           [--policy P] [--precision fp32|amp-fp16|amp-bf16] [--no-ema] [--device D]\n"
    "                           [--mem SIZE] [--profile] [--json]\n"
    "                                               time training steps on the CPU executor (--device cuda:\n"
    "                                               on the GPU; --batch auto: the planner's choice for it;\n"
    "                                               --profile: the time of each kind of step; --mem: the host\n"
    "                                               memory it may use, by default what the host and its\n"
    "                                               memory cgroup have available)\n"
    "       yoloplan bench-step --load-plan FILE [--device D] [--steps N] [--warmup N] [--threads T]\n"
    "                           [--profile] [--json]\n"
    "                                               the same for a saved plan, run as it is (an fp32 plan\n"
    "                                               saved with --scratch onednn:T, run on T threads)\n";

static const char synth_text[] =
    "usage: yoloplan synth --out DIR --images N [--val M] --classes K --img S|WxH --seed X\n"
    "                                               write a synthetic YOLO dataset (shapes; the same bytes\n"
    "                                               for the same options; --val default ceil(N/10))\n";

static const char train_text[] =
    "usage: yoloplan train --data D.yaml [options]  plan, then train inside the plan as train.py does\n"
    "train.py's flags, with its spellings and defaults unless a line says where yoloplan differs:\n"
    "  --data D.yaml                the dataset (required: there is no coco128.yaml default)\n"
    "  --cfg Y.yaml | --model M     a model yaml, IR .json or bundled name (default yolov5s); a yaml name that\n"
    "                               is no file (yolov5n.yaml, models/yolov5n.yaml) is the bundled model;\n"
    "                               without --cfg train.py builds --weights' model, yoloplan yolov5s\n"
    "  --weights W                  initial weights: a checkpoint or state dict, .safetensors or .pt (default\n"
    "                               none, from scratch; train.py's default is yolov5s.pt)\n"
    "  --hyp H.yaml                 hyperparameters (default hyp.scratch-low's values)\n"
    "  --epochs E                   default 100\n"
    "  --batch-size B | --batch B   the batch; -1: the plan's fastest that fits, at most 64 and the images\n"
    "                               (train.py's AutoBatch: what fits 80 % of the GPU); omitted: the plan's\n"
    "                               choice, at most n / ceil(n / 16) for n images, so an epoch has no fewer\n"
    "                               iterations than train.py's default 16 gives it (train.py: 16)\n"
    "  --imgsz S | --img S | --img-size S\n"
    "                               default 640; rounded up to a multiple of the max stride with a warning\n"
    "  --device D                   cpu, cpu:T, cuda, cuda:N or train.py's N: one device (default cpu; train.py:\n"
    "                               its first GPU if any); a list (0,1) is refused: no multi-GPU (DDP) yet\n"
    "  --workers N                  loader threads, 1..64 (default 8; train.py's 0 is refused)\n"
    "  --project DIR --name N --exist-ok\n"
    "                               the run folder (default runs/train/exp, then exp2, ...)\n"
    "  --resume [LAST]              continue a run (default: the newest last.safetensors under runs/)\n"
    "  --cache [ram]                decode both splits into RAM once (ram only: disk and val are refused)\n"
    "  --multi-scale                per batch a size of 0.5-1.5x --img, all inside the plan's arena\n"
    "  --optimizer SGD|Adam|AdamW   any case (default SGD)\n"
    "  --cos-lr                     one_cycle learning rate\n"
    "  --label-smoothing EPS        the hyp's label_smoothing (omitted: the --hyp file's, 0 by default;\n"
    "                               train.py sets it to the flag's 0.0 whatever the file says)\n"
    "  --patience P                 early stopping (default 100)\n"
    "  --freeze N                   freeze the first N layers (10: the backbone); a list of layers is refused\n"
    "  --seed S                     default 0\n"
    "  --noval                      validate the final epoch only\n"
    "  --noplots                    no results.png/.svg (results.csv only)\n"
    "  --noautoanchor               yoloplan never runs AutoAnchor's check on a model's given anchors (as if\n"
    "                               this flag were always on); refused for a yaml with `anchors: N`\n"
    "refused, one line each, exit 2: --rect --nosave --evolve --evolve_population --resume_evolve --bucket\n"
    "  --image-weights --single-cls --quad --save-period --sync-bn --local_rank --entity --upload_dataset\n"
    "  --bbox_interval --artifact_alias\n"
    "yoloplan's own:\n"
    "  --gpu G                      plan for card G (default: the device's own card)\n"
    "  --mem SIZE                   host memory a CPU plan's arena may use (default: what is available less\n"
    "                               the run's other planned host memory)\n"
    "  --threads T                  CPU threads (default: the cores)\n"
    "  --mosaic on|off              off: the hyp's mosaic 0\n"
    "  --no-augment                 no random augmentation (load_image and letterbox only)\n"
    "the console as train.py's, except: GPU_mem is 0G on the CPU as train.py prints without CUDA (the\n"
    "  arena is in the plan line); the plan line before step 1 says the batch and why\n";

static const char val_text[] =
    "usage: yoloplan val --weights W --data D.yaml [options]\n"
    "                                               val.py: P, R, mAP50, mAP50-95 of a checkpoint\n"
    "val.py's flags, with its spellings and defaults unless a line says where yoloplan differs:\n"
    "  --weights W                  one checkpoint or state dict (val.py's list, an ensemble, is refused)\n"
    "  --data D.yaml                the dataset (required)\n"
    "  --batch-size B | --batch B   default 32\n"
    "  --imgsz S | --img S | --img-size S\n"
    "                               default 640; rounded up to a multiple of the max stride with a warning\n"
    "  --conf-thres C | --conf C    default 0.001\n"
    "  --iou-thres I | --iou I      default 0.6\n"
    "  --max-det N                  default 300\n"
    "  --task train|val|test        the split (default val; speed and study are refused)\n"
    "  --device cpu|cpu:T           the CPU executor only for now (a GPU's spec is refused)\n"
    "  --workers N                  loader threads, 1..64 (default 8)\n"
    "  --verbose                    the per-class table (without it: with fewer than 50 classes, as val.py)\n"
    "  --save-json                  COCO-format predictions into the run folder\n"
    "  --project DIR --name N --exist-ok\n"
    "                               the run folder of --save-json (default runs/val/exp)\n"
    "refused, one line each, exit 2: --save-txt --save-hybrid --save-conf --single-cls --augment --half --dnn\n"
    "yoloplan's own:\n"
    "  --model M                    the model of a plain state dict (a yoloplan checkpoint names its own)\n"
    "  --threads T                  CPU threads (default: the cores)\n";

static const char version_text[] = "usage: yoloplan version      build information\n";
static const char help_text[] =
    "usage: yoloplan help [COMMAND]  every command's options, or COMMAND's (as yoloplan COMMAND --help)\n";

static const struct {
    const char *cmd, *text, *more;
} commands[] = {
    {"plan", plan_text, plan_text2}, {"info", info_text, ""},   {"import", import_text, ""},
    {"schedule", schedule_text, ""}, {"bench-step", bench_text, ""}, {"synth", synth_text, ""},
    {"train", train_text, ""},       {"val", val_text, ""},     {"version", version_text, ""},
    {"help", help_text, ""},
};

static void footer(FILE *f) {
    int n = 0;
    const yp_model_blob *m = yp_models_list(&n);
    fputs("\nM is a bundled model (", f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%s", i ? ", " : "", m[i].name);
    fputs("), an IR .json or a model .yaml.\nD is a device: cpu (--threads T threads), cpu:T, cuda (GPU 0), cuda:N "
          "or train.py's N (GPU N).\nExit codes: 0 success, 1 no plan fits, 2 bad input.\n", f);
}

int cli_usage(FILE *f, const char *cmd) {
    if (cmd && cmd[0] == '-') cmd = "plan"; /* yoloplan --gpu 8GB --help */
    int shown = 0;
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (cmd && strcmp(cmd, commands[i].cmd)) continue;
        fputs(!cmd && i == 1 ? "\ncommands:\n" : shown ? "\n" : "", f);
        fputs(commands[i].text, f);
        fputs(commands[i].more, f);
        shown++;
    }
    if (!shown) return -1;
    footer(f);
    return 0;
}
