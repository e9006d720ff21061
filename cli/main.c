/* main.c - yoloplan's entry point: dispatches to a subcommand. The binary only parses
 * arguments and calls the libraries (DESIGN.md §3). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "yp_backend.h"

static void usage(FILE *f) {
    fputs("usage: yoloplan <command> [options]\n"
          "\n"
          "commands:\n"
          "  info     --model M [--img S|WxH] [--nc N] [--json]   per-layer table: params, shapes, FLOPs\n"
          "  import   MODEL.yaml -o MODEL.json [--nc N]            convert an Ultralytics model yaml to the IR\n"
          "  schedule --model M [--batch B] [--img S] [--policy yoloplan|pytorch]\n"
          "                                                       list the training step: steps and tensors\n"
          "  version                                              build information\n"
          "\n"
          "M is a bundled model (yolov5n, yolov5s, yolov5m, yolov5l, yolov5x), an IR .json or a model .yaml.\n"
          "Exit codes: 0 success, 1 no plan fits, 2 bad input.\n",
          f);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return YP_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return cmd_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "schedule")) return cmd_schedule(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("yoloplan 0.1 (%s)\n", yp_kernels_build_info());
        return YP_EXIT_OK;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return YP_EXIT_OK;
    }
    fprintf(stderr, "yoloplan: unknown command \"%s\"; see `yoloplan help`\n", cmd);
    return YP_EXIT_USAGE;
}
