/* test_zoo.c - each checked-in models/<name>.json is exactly what importing models/<name>.yaml
 * produces today (so the two cannot drift apart). Regenerate with:
 *   for m in n s m l x; do ./build/yoloplan import models/yolov5$m.yaml -o models/yolov5$m.json; done */
#include <stdlib.h>

#include "yp_ir.h"
#include "yp_test.h"
#include "yp_yaml.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) buf[n] = 0;
    else free(buf), buf = NULL;
    fclose(f);
    return buf;
}

static void test_json_matches_yaml(void) {
    static const char *names[5] = {"yolov5n", "yolov5s", "yolov5m", "yolov5l", "yolov5x"};
    for (int m = 0; m < 5; m++) {
        char yaml[256], json[256];
        yp_err err;
        snprintf(yaml, sizeof yaml, "%s/%s.yaml", YP_MODELS_DIR, names[m]);
        snprintf(json, sizeof json, "%s/%s.json", YP_MODELS_DIR, names[m]);
        yp_graph *g = yp_yaml_import(yaml, 0, &err);
        if (!g) fprintf(stderr, "%s\n", err.msg);
        CHECK(g != NULL);
        char *fresh = g ? yp_ir_write_string(g) : NULL, *stored = slurp(json);
        CHECK(stored != NULL);
        if (fresh && stored && strcmp(fresh, stored) != 0)
            fprintf(stderr, "%s differs from a fresh import of %s: regenerate it (see this file's header)\n", json,
                    yaml);
        CHECK(fresh && stored && strcmp(fresh, stored) == 0);
        free(fresh);
        free(stored);
        yp_graph_free(g);
    }
}

int main(void) {
    YP_RUN(test_json_matches_yaml);
    return yp_test_summary();
}
