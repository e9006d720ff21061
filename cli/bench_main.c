/* bench_main.c - `yoloplan-bench`: `yoloplan bench-step` alone, in a binary that needs no reports/
 * (Graphviz, PLplot), so that bench/gpu_check.sh can build and run it on a bare GPU machine with
 * only cJSON, libyaml, libjpeg, libpng and oneDNN brought along. Same options, same output. */
#include "cli.h"

int main(int argc, char **argv) {
    return cmd_bench_step(argc, argv);
}
