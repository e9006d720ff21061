/* json_dup.c - duplicate keys in a cJSON tree (yp_json.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "yp_json.h"

/* A node of the walk and the object or array that holds it (cJSON has no parent links). */
typedef struct {
    const cJSON *node, *parent;
} link;

static int find_parent(const link *l, int n, const cJSON *v) {
    for (int i = 0; i < n; i++)
        if (l[i].node == v) return i;
    return -1;
}

/* The path of node v from the root, written into buf ("nodes[3].attrs"), walking up the table. */
static void path_of(const link *l, int n, const cJSON *v, char *buf, size_t size) {
    const cJSON *chain[64];
    int depth = 0;
    for (int i = find_parent(l, n, v); i >= 0 && depth < 64; i = find_parent(l, n, l[i].parent))
        chain[depth++] = l[i].node;
    buf[0] = 0;
    for (int d = depth - 1; d >= 0; d--) {
        const cJSON *c = chain[d];
        size_t k = strlen(buf);
        int idx = 0;
        const link *up = &l[find_parent(l, n, c)];
        if (!up->parent) continue; /* the root has no name */
        if (cJSON_IsArray(up->parent))
            for (const cJSON *s = up->parent->child; s && s != c; s = s->next) idx++;
        if (cJSON_IsArray(up->parent)) snprintf(buf + k, size - k, "[%d]", idx);
        else snprintf(buf + k, size - k, "%s%s", k ? "." : "", c->string ? c->string : "?");
    }
}

int yp_json_duplicate_key(const cJSON *root, char *where, size_t n) {
    /* a breadth-first walk with a queue of (node, parent) pairs */
    size_t cap = 256, head = 0, tail = 0;
    link *q = malloc(cap * sizeof *q);
    if (!q) return 0;
    q[tail++] = (link){root, NULL};
    int found = 0;
    while (head < tail && !found) {
        const cJSON *v = q[head++].node;
        if (cJSON_IsObject(v))
            for (const cJSON *a = v->child; a && !found; a = a->next)
                for (const cJSON *b = a->next; b; b = b->next)
                    if (a->string && b->string && !strcmp(a->string, b->string)) {
                        char path[256];
                        path_of(q, (int)tail, v, path, sizeof path);
                        snprintf(where, n, "%s%s\"%s\"", path, *path ? ": " : "", a->string);
                        found = 1;
                        break;
                    }
        for (const cJSON *c = (cJSON_IsObject(v) || cJSON_IsArray(v)) ? v->child : NULL; c && !found; c = c->next) {
            if (tail == cap) {
                link *nq = realloc(q, 2 * cap * sizeof *q);
                if (!nq) {
                    free(q);
                    return 0;
                }
                q = nq, cap *= 2;
            }
            q[tail++] = (link){c, v};
        }
    }
    free(q);
    return found;
}
