/* main.c - yoloplan's entry point: dispatches to a subcommand. The binary only parses
 * arguments and calls the libraries (graph, planner, reports, executor, kernels). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "yp_backend.h"
#include "yp_models.h"

static void usage(FILE *f) {
    fputs("usage: yoloplan --gpu GPU [options]          which configurations fit, fastest first\n"
          "       yoloplan <command> [options]\n"
          "\n"
          "planner options (yoloplan --gpu ...):\n"
          "  --gpu G            card (rtx3070, t4, a100-40gb, h200, ...), memory (8GB, 8GiB, 7.5G, 8192MiB) or auto\n"
          "  --model M          bundled name, IR .json, model .yaml, a comma list, or all (default yolov5s)\n"
          "  --img S            640, 640x480 (width x height), a range 320-960, or all (320-1280; default 640)\n"
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
          "                     or onednn:T (the CPU executor's oneDNN convs on T threads; fp32 plans only)\n"
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
          "  --profile autobatch  AutoBatch's probe of batches 1, 2, 4, 8, 16 and its pick (implies --target pytorch)\n"
          "\n",
          f);
    fputs(
        "commands:\n"
        "  info     --model M [--img S|WxH] [--nc N] [--json]   per-layer table: params, shapes, FLOPs\n"
        "  import   MODEL.yaml -o MODEL.json [--nc N]            convert an Ultralytics model yaml to the IR\n"
        "  schedule --model M [--batch B] [--img S] [--policy P] [--fuse bn_silu]\n"
        "                                                       list the training step: steps and tensors\n"
        "  bench-step [--model M] [--batch B] [--img S] [--steps N] [--warmup N] [--threads T]\n"
        "             [--policy P] [--no-ema] [--device D] [--mem SIZE] [--profile] [--json]\n"
        "                                                       time training steps on the CPU executor\n"
        "                                                       (--profile: the time of each kind of step; --mem:\n"
        "                                                       the host memory it may use, by default what the host\n"
        "                                                       and its memory cgroup have available)\n"
        "  bench-step --load-plan FILE [--steps N] [--warmup N] [--threads T] [--profile] [--json]\n"
        "                                                       the same for a saved plan, run as it is (an fp32\n"
        "                                                       plan saved with --scratch onednn:T, run on T threads)\n"
        "  synth    --out DIR --images N [--val M] --classes K --img S|WxH --seed X\n"
        "                                                       write a synthetic YOLO dataset (shapes; the same\n"
        "                                                       bytes for the same options; --val default ceil(N/10))\n"
        "  train    --data D.yaml [--model M|--cfg Y.yaml] [--weights W] [--img S] [--batch B] [--epochs E]\n"
        "           [--device D] [--gpu G] [--mem SIZE] [--workers N] [--threads T] [--seed S]\n"
        "           [--project DIR] [--name N] [--exist-ok] [--resume [LAST]] [--mosaic on|off] [--freeze N]\n"
        "           [--optimizer sgd|adam|adamw] [--patience P] [--no-augment] [--noval] [--cos-lr] [--hyp H.yaml]\n"
        "                                                       plan, then train inside the plan as train.py does\n"
        "                                                       (--batch omitted: the plan's choice; runs/train/exp*)\n"
        "  val      --weights W --data D.yaml [--img S] [--batch B] [--conf C] [--iou I] [--save-json]\n"
        "           [--task val|test] [--model M]              val.py: P, R, mAP50, mAP50-95 of a checkpoint\n"
        "  version                                              build information\n"
        "\n"
        "\n",
        f);
    int n = 0;
    const yp_model_blob *m = yp_models_list(&n);
    fputs("M is a bundled model (", f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%s", i ? ", " : "", m[i].name);
    fputs("), an IR .json or a model .yaml.\nD is a device: cpu (--threads T threads), cpu:T, cuda (GPU 0), cuda:N "
          "or train.py's N (GPU N).\nExit codes: 0 success, 1 no plan fits, 2 bad input.\n", f);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return YP_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) /* every command: the last of two would win silently */
        for (int j = 1; j < i && argv[i][0] == '-' && argv[i][1] == '-'; j++)
            if (!strcmp(argv[j], argv[i])) {
                fprintf(stderr, "yoloplan: %s given twice (the last would win silently); give it once\n", argv[i]);
                return YP_EXIT_USAGE;
            }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return cmd_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "schedule")) return cmd_schedule(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench-step")) return cmd_bench_step(argc - 1, argv + 1);
    if (!strcmp(cmd, "synth")) return cmd_synth(argc - 1, argv + 1);
    if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "val")) return cmd_val(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("yoloplan 0.1 (%s)\n", yp_kernels_build_info());
        return YP_EXIT_OK;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return YP_EXIT_OK;
    }
    if (!strcmp(cmd, "plan") || !strncmp(cmd, "--", 2)) return cmd_plan(argc - 1, argv + 1);
    fprintf(stderr, "yoloplan: unknown command \"%s\"; see `yoloplan help`\n", cmd);
    return YP_EXIT_USAGE;
}
