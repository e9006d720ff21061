/* main.c - yoloplan's entry point: dispatches to a subcommand (its usage: usage.h, for --help and
 * -h after any command). The binary only parses arguments and calls the libraries (graph,
 * planner, reports, executor, kernels). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "usage.h"
#include "yp_backend.h"

int main(int argc, char **argv) {
    if (argc < 2) {
        cli_usage(stderr, NULL);
        return YP_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        const char *of = !strcmp(cmd, "help") && argc > 2 ? argv[2] : NULL; /* yoloplan help train */
        if (of && of[0] == '-') of = "help";                                 /* yoloplan help --help */
        if (cli_usage(stdout, of) == 0) return YP_EXIT_OK;
        fprintf(stderr, "yoloplan: help %s: no such command; see `yoloplan help`\n", of);
        return YP_EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) /* yoloplan train --help: the command's usage, nothing run */
        if ((!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) && cli_usage(stdout, cmd) == 0) return YP_EXIT_OK;
    for (int i = 1; i < argc; i++) /* every command: the last of two would win silently */
        for (int j = 1; j < i && argv[i][0] == '-' && argv[i][1] == '-'; j++)
            if (!strcmp(argv[j], argv[i])) {
                fprintf(stderr, "yoloplan: %s given twice (the last would win silently); give it once\n", argv[i]);
                return YP_EXIT_USAGE;
            }
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
    if (!strcmp(cmd, "plan") || !strncmp(cmd, "--", 2)) return cmd_plan(argc - 1, argv + 1);
    fprintf(stderr, "yoloplan: unknown command \"%s\"; see `yoloplan help`\n", cmd);
    return YP_EXIT_USAGE;
}
