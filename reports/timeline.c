/* timeline.c - yp_timeline_write: creates the output directory and draws the three pictures
 * (timeline_memory.c, timeline_arena.c, timeline_graph.c) with the process's Graphviz context;
 * yp_timeline_remedies_write the same for a what-if's remedies (timeline_remedies.c). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "timeline_common.h"
#include "yp_timeline.h"

/* mkdir -p dir. 0, or -1 with err naming the directory that could not be created. */
static int make_dirs(const char *dir, yp_err *err) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return yp_err_set(err, "timeline directory \"%s\": empty or too long", dir);
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != 0) continue;
        char c = path[i];
        path[i] = 0;
        struct stat st;
        if (mkdir(path, 0777) && errno != EEXIST)
            return yp_err_set(err, "%s: cannot create directory: %s", path, strerror(errno));
        if (stat(path, &st)) return yp_err_set(err, "%s: %s", path, strerror(errno));
        if (!S_ISDIR(st.st_mode)) return yp_err_set(err, "%s: not a directory", path);
        path[i] = c;
    }
    return 0;
}

static int check_format(const char *format, yp_err *err) {
    if (strcmp(format, "svg") && strcmp(format, "png"))
        return yp_err_set(err, "timeline format \"%s\": expected svg or png", format);
    return 0;
}

int yp_timeline_remedies_write(const yp_whatif *w, const char *dir, const char *format, yp_err *err) {
    if (!format) format = "svg";
    if (check_format(format, err)) return -1;
    if (!w || !w->base.sched) return yp_err_set(err, "%s: no what-if to draw", dir);
    if (make_dirs(dir, err)) return -1;
    GVC_t *gvc = tl_context();
    if (!gvc) return yp_err_set(err, "%s: cannot start Graphviz", dir);
    return tl_remedies_write(gvc, w, dir, format, err);
}

int yp_timeline_write(const yp_plan *p, const char *dir, const char *format, yp_err *err) {
    if (!format) format = "svg";
    if (check_format(format, err)) return -1;
    if (!p || !p->sched || !p->live.live || !p->arena.offsets)
        return yp_err_set(err, "%s: no plan to draw", dir);
    if (make_dirs(dir, err)) return -1;
    GVC_t *gvc = tl_context();
    if (!gvc) return yp_err_set(err, "%s: cannot start Graphviz", dir);
    int rc = tl_memory_write(gvc, p, dir, format, err);
    if (!rc) rc = tl_arena_write(gvc, p, dir, format, err);
    if (!rc) rc = tl_graph_write(gvc, p, dir, format, err);
    return rc;
}
