/* ir_json.c - reading typed values out of cJSON trees, for the IR loader and the ops' attrs
 * readers: each getter checks type and range and, on failure, sets an error naming the file and
 * the JSON path of the value, what was expected and what was found. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir_json.h"

const char *yp_jtype(const cJSON *v) {
    if (!v) return "nothing";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsArray(v)) return "an array";
    return "an object";
}

/* Short rendering of a value for messages ("3", "\"3\"", "an array"). */
void yp_jshow(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsNumber(v)) snprintf(buf, n, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v)) snprintf(buf, n, "\"%.40s\"", v->valuestring);
    else snprintf(buf, n, "%s", yp_jtype(v));
}

/* Reports every key of obj that is not in `allowed` (NULL-terminated). */
int yp_jkeys(yp_jctx *c, const cJSON *obj, const char *path, const char *const *allowed) {
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, it->string) == 0;
        if (ok) continue;
        char known[256] = "";
        for (const char *const *a = allowed; *a; a++) {
            strncat(known, *a, sizeof known - strlen(known) - 3);
            if (a[1]) strncat(known, ", ", sizeof known - strlen(known) - 1);
        }
        return yp_err_set(c->err, "%s: %s%s%s: unknown key; remove it (known keys: %s)", c->file, path,
                          *path ? "." : "", it->string, known);
    }
    return 0;
}

const cJSON *yp_jreq(yp_jctx *c, const cJSON *obj, const char *path, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) yp_err_set(c->err, "%s: %s%s%s: missing; add it", c->file, path, *path ? "." : "", key);
    return v;
}

/* Reads an integer in [lo, hi] from v (path names it). 0 or -1 with the error set. */
static int as_int(yp_jctx *c, const cJSON *v, const char *path, long lo, long hi, int *out) {
    char shown[64];
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi) {
        yp_jshow(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s: expected an integer in %ld..%ld, got %s", c->file, path, lo, hi,
                          shown);
    }
    *out = (int)v->valuedouble;
    return 0;
}

int yp_jint(yp_jctx *c, const cJSON *obj, const char *path, const char *key, long lo, long hi, int *out) {
    char p[160];
    const cJSON *v = yp_jreq(c, obj, path, key);
    if (!v) return -1;
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    return as_int(c, v, p, lo, hi, out);
}

int yp_jnum(yp_jctx *c, const cJSON *obj, const char *path, const char *key, double lo, double hi, double *out) {
    char shown[64];
    const cJSON *v = yp_jreq(c, obj, path, key);
    if (!v) return -1;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
        yp_jshow(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s.%s: expected a number in %g..%g, got %s", c->file, path, key, lo, hi,
                          shown);
    }
    *out = v->valuedouble;
    return 0;
}

int yp_jbool(yp_jctx *c, const cJSON *obj, const char *path, const char *key, int *out) {
    char shown[64];
    const cJSON *v = yp_jreq(c, obj, path, key);
    if (!v) return -1;
    if (!cJSON_IsBool(v)) {
        yp_jshow(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s.%s: expected true or false, got %s", c->file, path, key, shown);
    }
    *out = cJSON_IsTrue(v);
    return 0;
}

int yp_jstr(yp_jctx *c, const cJSON *obj, const char *path, const char *key, char *out, size_t n) {
    char shown[64];
    const cJSON *v = yp_jreq(c, obj, path, key);
    if (!v) return -1;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= n || !*v->valuestring) {
        yp_jshow(v, shown, sizeof shown);
        return yp_err_set(c->err, "%s: %s%s%s: expected a non-empty string of at most %zu characters, got %s",
                          c->file, path, *path ? "." : "", key, n - 1, shown);
    }
    memcpy(out, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

/* Reads an array of 1..max integers in [lo, hi]. */
int yp_jints(yp_jctx *c, const cJSON *obj, const char *path, const char *key, int max, long lo, long hi,
             int *out, int *n_out) {
    char p[160];
    const cJSON *v = yp_jreq(c, obj, path, key);
    if (!v) return -1;
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    int n = cJSON_GetArraySize(v);
    if (!cJSON_IsArray(v) || n < 1 || n > max)
        return yp_err_set(c->err, "%s: %s: expected an array of 1 to %d integers, got %s%s", c->file, p, max,
                          yp_jtype(v), cJSON_IsArray(v) ? " of the wrong length" : "");
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        char pi[176];
        snprintf(pi, sizeof pi, "%s[%d]", p, i);
        if (as_int(c, it, pi, lo, hi, &out[i])) return -1;
    }
    *n_out = n;
    return 0;
}
