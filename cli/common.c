/* common.c - model resolution and option parsing shared by the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "yp_gpu.h"
#include "yp_ir.h"
#include "yp_models.h"
#include "yp_yaml.h"

static int has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

int cli_check_rgb(const yp_graph *g, const char *spec, yp_err *err) {
    if (g->in_channels == 3) return 0;
    return yp_err_set(err, "--model %s: takes %d input channels, but the loader reads images as RGB (3); use a model "
                      "with ch: 3", spec, g->in_channels);
}

/* The bundled model a yaml's file name names (".../yolov5n.yaml": yolov5n), or NULL. */
static const yp_model_blob *bundled_of_yaml(const char *spec) {
    const char *base = strrchr(spec, '/');
    base = base ? base + 1 : spec;
    size_t n = strlen(base), ext = has_suffix(base, ".yaml") ? 5 : has_suffix(base, ".yml") ? 4 : 0;
    char stem[128];
    if (!ext || n - ext >= sizeof stem) return NULL;
    memcpy(stem, base, n - ext), stem[n - ext] = 0;
    return yp_models_find(stem);
}

yp_graph *cli_load_model(const char *spec, int nc, yp_err *err) {
    struct stat st;
    yp_graph *g = NULL;
    if (stat(spec, &st) == 0) {
        if (has_suffix(spec, ".yaml") || has_suffix(spec, ".yml")) return yp_yaml_import(spec, nc, err);
        g = yp_ir_load_file(spec, err);
    } else {
        const yp_model_blob *m = yp_models_find(spec);
        if (!m) m = bundled_of_yaml(spec);
        if (!m) {
            char names[128] = "";
            int n = 0;
            const yp_model_blob *all = yp_models_list(&n);
            for (int i = 0; i < n; i++) {
                strncat(names, all[i].name, sizeof names - strlen(names) - 3);
                if (i + 1 < n) strncat(names, ", ", sizeof names - strlen(names) - 1);
            }
            yp_err_set(err, "--model %s: no such file and no bundled model of that name; bundled: %s (or their "
                       ".yaml names, or give a .json IR or a model .yaml)", spec, names);
            return NULL;
        }
        g = yp_ir_load_buffer(m->json, m->len, spec, err);
    }
    if (g && nc > 0 && yp_graph_set_nc(g, nc, spec, err)) { /* nc 0: the model's own */
        yp_graph_free(g);
        g = NULL;
    }
    return g;
}

yp_graph *cli_fewer_anchors(const yp_graph *g) {
    if (g->na < 2) return NULL;
    yp_err err;
    yp_graph *h = yp_graph_copy(g, &err);
    if (h && yp_graph_keep_anchors(h, g->na - 1, g->name, &err)) {
        yp_graph_free(h);
        return NULL;
    }
    return h;
}

int64_t cli_check_img_size(int64_t size, int64_t gs, int64_t floor, FILE *warn) {
    int64_t s = gs > 0 ? (size + gs - 1) / gs * gs : size; /* make_divisible: up */
    if (s < floor) s = floor;
    if (s != size && warn)
        fprintf(warn, "WARNING: --img-size %lld must be multiple of max stride %lld, updating to %lld\n",
                (long long)size, (long long)gs, (long long)s);
    return s;
}

int cli_parse_int(const char *opt, const char *s, long lo, long hi, long *out, yp_err *err) {
    char *end = NULL;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi)
        return yp_err_set(err, "%s %s: expected an integer in %ld..%ld", opt, s ? s : "(missing)", lo, hi);
    *out = v;
    return 0;
}

int cli_parse_img(const char *s, int64_t *w, int64_t *h, yp_err *err) {
    long a = 0, b = 0;
    const char *x = s ? strchr(s, 'x') : NULL;
    if (!s) return yp_err_set(err, "--img: missing value; give a size like 640 or 640x480 (width x height)");
    if (x) {
        char first[32];
        size_t n = (size_t)(x - s);
        if (n == 0 || n >= sizeof first) return yp_err_set(err, "--img %s: expected 640 or 640x480", s);
        memcpy(first, s, n), first[n] = 0;
        if (cli_parse_int("--img", first, 1, 1L << 20, &a, err) || cli_parse_int("--img", x + 1, 1, 1L << 20, &b, err))
            return -1;
    } else {
        if (cli_parse_int("--img", s, 1, 1L << 20, &a, err)) return -1;
        b = a;
    }
    *w = a, *h = b;
    return 0;
}

int cli_parse_size(const char *opt, const char *v, int64_t *out, yp_err *err) {
    yp_gpu tmp;
    if (v && !strcmp(v, "0")) {
        *out = 0;
        return 0;
    }
    if (!v || yp_gpu_parse(v, &tmp, err) || tmp.from_table)
        return yp_err_set(err, "%s %s: expected a size like 512MiB or 1GiB", opt, v ? v : "(missing)");
    *out = tmp.mem_bytes;
    return 0;
}

int cli_fail(const yp_err *err) {
    fprintf(stderr, "yoloplan: %s\n", err->msg);
    return YP_EXIT_USAGE;
}

/* One number from a file of the cgroup filesystem (-1: absent, or "max"). */
static int64_t read_number(const char *path) {
    FILE *f = fopen(path, "r");
    long long v = -1;
    if (f && fscanf(f, "%lld", &v) != 1) v = -1;
    if (f) fclose(f);
    return (int64_t)v;
}

/* What this process's memory cgroup still allows (its limit less its usage), or -1 when no limit
 * is set: cgroup v2 (memory.max, memory.current) or v1 (memory.limit_in_bytes,
 * memory.usage_in_bytes), at the process's own cgroup path and at the mount's root (a
 * container sees its own cgroup there). A container's limit is what the kernel OOM-kills at,
 * whatever /proc/meminfo says about the machine. */
static int64_t cgroup_room(void) {
    char line[512], path[1200], v2[512] = "", v1[512] = "";
    FILE *f = fopen("/proc/self/cgroup", "r");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        if (!strncmp(line, "0::", 3)) snprintf(v2, sizeof v2, "%s", line + 3);
        const char *m = strstr(line, ":memory:");
        if (m) snprintf(v1, sizeof v1, "%s", m + 8);
    }
    if (f) fclose(f);
    static const struct {
        const char *root, *limit, *usage;
        int v2;
    } kinds[] = {{"/sys/fs/cgroup", "memory.max", "memory.current", 1},
                 {"/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", 0}};
    int64_t best = -1;
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (int at_root = 0; at_root < 2; at_root++) {
            const char *sub = at_root ? "" : kinds[k].v2 ? v2 : v1;
            snprintf(path, sizeof path, "%s%s/%s", kinds[k].root, sub, kinds[k].limit);
            int64_t lim = read_number(path);
            snprintf(path, sizeof path, "%s%s/%s", kinds[k].root, sub, kinds[k].usage);
            int64_t use = read_number(path);
            if (lim <= 0 || lim >= ((int64_t)1 << 60) || use < 0) continue; /* no limit there */
            int64_t room = lim > use ? lim - use : 0;
            if (best < 0 || room < best) best = room;
        }
    return best;
}

int64_t cli_host_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long long kib = -1;
    while (f && kib < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) != 1) kib = -1;
    if (f) fclose(f);
    int64_t avail = 0;
    if (kib > 0) avail = (int64_t)kib * 1024;
    else {
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && size > 0 ? (int64_t)pages * size : 0;
    }
    int64_t room = cgroup_room();
    return room >= 0 && (avail == 0 || room < avail) ? room : avail;
}
