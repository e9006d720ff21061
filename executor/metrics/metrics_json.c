/* metrics_json.c - val.py's --save-json: the detections in COCO's results format, one object
 * per detection (contract in yp_metrics.h), through cJSON. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_metrics.h"

const int yp_coco80_to_91[80] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                 22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
                                 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
                                 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};

struct yp_coco_json {
    cJSON *array;
};

yp_coco_json *yp_coco_json_new(void) {
    yp_coco_json *j = malloc(sizeof *j);
    if (j && !(j->array = cJSON_CreateArray())) free(j), j = NULL;
    return j;
}

void yp_coco_json_free(yp_coco_json *j) {
    if (!j) return;
    cJSON_Delete(j->array);
    free(j);
}

/* Python's round(v, digits): the exact binary value rounded to that many decimals (ties to
 * even, as glibc's printf and Python's dtoa both round), read back as the nearest double. */
static double py_round(double v, int digits) {
    if (!isfinite(v)) return v;
    char buf[512];
    snprintf(buf, sizeof buf, "%.*f", digits, v);
    return strtod(buf, NULL);
}

/* pathlib's stem: the last component less its last suffix (a name's leading dot is no suffix). */
static void stem_of(const char *path, char *out, size_t size) {
    const char *name = strrchr(path, '/');
    name = name ? name + 1 : path;
    size_t n = strlen(name);
    const char *dot = strrchr(name, '.');
    if (dot && dot > name && (size_t)(dot - name) < n - 1) n = (size_t)(dot - name);
    if (n >= size) n = size - 1;
    memcpy(out, name, n);
    out[n] = 0;
}

/* int(stem) when the stem is all ASCII digits (as raw JSON, any length), else the stem. */
static cJSON *image_id(const char *stem) {
    size_t n = strlen(stem);
    if (!n || strspn(stem, "0123456789") != n) return cJSON_CreateString(stem);
    while (stem[0] == '0' && stem[1]) stem++;
    return cJSON_CreateRaw(stem);
}

/* Adds item under key, or deletes it (NULL included); 1 when added. */
static int add_item(cJSON *o, const char *key, cJSON *item) {
    if (item && cJSON_AddItemToObject(o, key, item)) return 1;
    cJSON_Delete(item);
    return 0;
}

/* save_one_json's object for one detection row d. */
static cJSON *one(const char *stem, const float *d, int category) {
    float cx = (d[0] + d[2]) / 2, cy = (d[1] + d[3]) / 2, w = d[2] - d[0], h = d[3] - d[1];
    double box[4] = {py_round(cx - w / 2, 3), py_round(cy - h / 2, 3), py_round(w, 3), py_round(h, 3)};
    cJSON *o = cJSON_CreateObject();
    if (o && add_item(o, "image_id", image_id(stem)) && add_item(o, "category_id", cJSON_CreateNumber(category)) &&
        add_item(o, "bbox", cJSON_CreateDoubleArray(box, 4)) &&
        add_item(o, "score", cJSON_CreateNumber(py_round(d[4], 5))))
        return o;
    cJSON_Delete(o);
    return NULL;
}

int yp_coco_json_add(yp_coco_json *j, const char *image_path, const float *dets, int64_t n, const int *class_map,
                     int n_map, yp_err *err) {
    char stem[1024];
    stem_of(image_path ? image_path : "", stem, sizeof stem);
    for (int64_t i = 0; i < n; i++) {
        float cls = dets[6 * i + 5];
        int64_t limit = class_map ? n_map : INT32_MAX;
        if (!(cls >= 0 && cls < (float)limit && cls == floorf(cls)))
            return yp_err_set(err, "coco json: %s detection %lld: class %g has no category (map of %lld)", stem,
                              (long long)i, cls, (long long)limit);
        int c = (int)cls, category = class_map ? class_map[c] : c;
        cJSON *o = one(stem, dets + 6 * i, category);
        if (!o || !cJSON_AddItemToArray(j->array, o)) {
            cJSON_Delete(o);
            return yp_err_set(err, "coco json: out of memory");
        }
    }
    return 0;
}

int yp_coco_json_write(const yp_coco_json *j, const char *path, yp_err *err) {
    char *text = cJSON_PrintUnformatted(j->array);
    if (!text) return yp_err_set(err, "%s: out of memory printing the detections", path);
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f)) ok = 0;
    int e = errno;
    free(text);
    if (!ok)
        return yp_err_set(err, "%s: cannot write the detections (%s); check the folder exists and is writable", path,
                          strerror(e));
    return 0;
}
