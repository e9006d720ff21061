/* yaml_tree.c - libyaml events -> a small tree of yp_ynodes that keeps each node's line, so that
 * every error can name FILE:LINE; and the scalar accessors (yaml_tree.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "yaml_tree.h"
#include "yp_file.h"

typedef struct {
    yaml_parser_t parser;
    FILE *f;
    const char *file;
    yp_err *err;
    size_t read;  /* bytes handed to libyaml so far */
    int too_long; /* the file grew past YP_YN_MAX_FILE while being read */
} yreader;

/* libyaml's input: f, cut off at YP_YN_MAX_FILE bytes (a file that keeps growing is refused). */
static int yr_input(void *data, unsigned char *buf, size_t size, size_t *got) {
    yreader *r = data;
    size_t room = YP_YN_MAX_FILE + 1 - r->read;
    *got = fread(buf, 1, size < room ? size : room, r->f);
    r->read += *got;
    if (r->read > YP_YN_MAX_FILE) return r->too_long = 1, 0;
    return !ferror(r->f);
}

void yp_yn_free(yp_ynode *n) {
    if (!n) return;
    for (int i = 0; i < n->n; i++) yp_yn_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

/* Appends kid to parent. Returns 0, or -1 on OOM (kid is not taken). */
static int yn_push(yp_ynode *parent, yp_ynode *kid) {
    if (parent->n == parent->cap) {
        int cap = parent->cap ? 2 * parent->cap : 8;
        yp_ynode **kids = realloc(parent->kids, (size_t)cap * sizeof *kids);
        if (!kids) return -1;
        parent->kids = kids;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

/* 1-based line of byte `offset` of the file (libyaml's reader errors give only the offset). */
static size_t yr_line_of(FILE *f, size_t offset) {
    size_t line = 1;
    int c;
    rewind(f);
    for (size_t i = 0; i < offset && (c = getc(f)) != EOF; i++) line += c == '\n';
    return line;
}

/* Reports libyaml's last error as FILE:LINE:COLUMN. Returns -1. */
static int yr_syntax_error(const yreader *r) {
    const yaml_parser_t *p = &r->parser;
    if (r->too_long)
        return yp_err_set(r->err, "%s: longer than %d bytes; not a yaml file this reader takes", r->file,
                          YP_YN_MAX_FILE);
    const char *problem = p->problem ? p->problem : "malformed input";
    if (p->error == YAML_READER_ERROR)
        return yp_err_set(r->err, "%s:%zu: syntax error: %s at byte %zu; save the file as UTF-8 text",
                          r->file, yr_line_of(r->f, p->problem_offset), problem, p->problem_offset);
    if (p->context)
        return yp_err_set(r->err, "%s:%zu:%zu: syntax error: %s (%s that starts at line %zu); fix the YAML "
                          "there (brackets, indentation, quotes)", r->file, p->problem_mark.line + 1,
                          p->problem_mark.column + 1, problem, p->context, p->context_mark.line + 1);
    return yp_err_set(r->err, "%s:%zu:%zu: syntax error: %s; fix the YAML there (brackets, indentation, quotes)",
                      r->file, p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

/* Reads the next event. Returns 0, or -1 with err set (the event is then not to be deleted). */
static int yr_next(yreader *r, yaml_event_t *ev) {
    return yaml_parser_parse(&r->parser, ev) ? 0 : yr_syntax_error(r);
}

static yp_ynode *yr_node(yreader *r, yaml_event_t *ev, int depth);

/* Reads the children of a sequence or mapping up to its end event. Returns 0 or -1 (err set). */
static int yr_children(yreader *r, yp_ynode *n, int depth) {
    yaml_event_type_t end = n->kind == YP_YN_SEQ ? YAML_SEQUENCE_END_EVENT : YAML_MAPPING_END_EVENT;
    if (depth >= YP_YN_MAX_DEPTH)
        return yp_err_set(r->err, "%s:%d: nested deeper than %d levels; flatten the lists and mappings", r->file,
                          n->line, YP_YN_MAX_DEPTH);
    for (;;) {
        yaml_event_t ev;
        if (yr_next(r, &ev)) return -1;
        if (ev.type == end) {
            yaml_event_delete(&ev);
            return 0;
        }
        yp_ynode *kid = yr_node(r, &ev, depth + 1);
        if (!kid) return -1;
        if (n->kind == YP_YN_MAP && n->n % 2 == 0 && kid->kind != YP_YN_SCALAR) {
            yp_err_set(r->err, "%s:%d: a mapping key must be a plain name, not a list or mapping", r->file,
                       kid->line);
            yp_yn_free(kid);
            return -1;
        }
        if (yn_push(n, kid)) {
            yp_yn_free(kid);
            return yp_err_set(r->err, "%s: out of memory", r->file);
        }
    }
}

/* Builds the node that starts with *ev, consuming the event. Returns the node (caller frees)
 * or NULL with err set. */
static yp_ynode *yr_node(yreader *r, yaml_event_t *ev, int depth) {
    yp_ynode *n = calloc(1, sizeof *n);
    int rc = n ? 0 : yp_err_set(r->err, "%s: out of memory", r->file);
    if (n) n->line = (int)ev->start_mark.line + 1;
    if (rc == 0 && ev->type == YAML_SCALAR_EVENT) {
        n->kind = YP_YN_SCALAR;
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n->text = malloc(ev->data.scalar.length + 1);
        if (n->text) {
            memcpy(n->text, ev->data.scalar.value, ev->data.scalar.length);
            n->text[ev->data.scalar.length] = '\0';
        } else {
            rc = yp_err_set(r->err, "%s: out of memory", r->file);
        }
    } else if (rc == 0 && (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT)) {
        n->kind = ev->type == YAML_SEQUENCE_START_EVENT ? YP_YN_SEQ : YP_YN_MAP;
    } else if (rc == 0) {
        rc = yp_err_set(r->err, "%s:%d: aliases (*name) are not supported; write the value out", r->file,
                        n->line);
    }
    yaml_event_delete(ev);
    if (rc == 0 && n->kind != YP_YN_SCALAR) rc = yr_children(r, n, depth);
    if (rc == 0) return n;
    yp_yn_free(n);
    return NULL;
}

/* Reads the event after a document and fails unless the stream ends there. */
static int yr_stream_end(yreader *r) {
    yaml_event_t ev;
    if (yr_next(r, &ev)) return -1; /* DOCUMENT_END */
    yaml_event_delete(&ev);
    if (yr_next(r, &ev)) return -1;
    yaml_event_type_t type = ev.type;
    int line = (int)ev.start_mark.line + 1;
    yaml_event_delete(&ev);
    if (type != YAML_STREAM_END_EVENT)
        return yp_err_set(r->err, "%s:%d: a second YAML document starts here; keep one document per file", r->file,
                          line);
    return 0;
}

/* Parses the single document of the stream. Returns its root (a null scalar at line 1 when the
 * stream is empty), or NULL with err set. */
static yp_ynode *yr_document(yreader *r) {
    yaml_event_t ev;
    if (yr_next(r, &ev)) return NULL; /* STREAM_START */
    yaml_event_delete(&ev);
    if (yr_next(r, &ev)) return NULL;
    yaml_event_type_t type = ev.type;
    yaml_event_delete(&ev);
    if (type == YAML_STREAM_END_EVENT) {
        yp_ynode *empty = calloc(1, sizeof *empty);
        char *text = calloc(1, 1);
        if (!empty || !text) {
            free(empty);
            free(text);
            yp_err_set(r->err, "%s: out of memory", r->file);
            return NULL;
        }
        *empty = (yp_ynode){.kind = YP_YN_SCALAR, .line = 1, .plain = 1, .text = text};
        return empty;
    }
    if (yr_next(r, &ev)) return NULL;
    yp_ynode *root = yr_node(r, &ev, 0);
    if (root && yr_stream_end(r)) {
        yp_yn_free(root);
        root = NULL;
    }
    return root;
}

yp_ynode *yp_yn_read(const char *path, yp_err *err) {
    FILE *f = yp_file_fopen(path, "a yaml file", YP_YN_MAX_FILE, err);
    if (!f) return NULL;
    yreader r = {.f = f, .file = path, .err = err};
    yp_ynode *root = NULL;
    if (yaml_parser_initialize(&r.parser)) {
        yaml_parser_set_input(&r.parser, yr_input, &r);
        root = yr_document(&r);
        yaml_parser_delete(&r.parser);
    } else {
        yp_err_set(err, "%s: out of memory", path);
    }
    fclose(f);
    return root;
}

/* ---- scalars ---- */

int yp_yn_is_null(const yp_ynode *n) {
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", "None"}; /* None: Python's eval */
    if (n->kind != YP_YN_SCALAR || !n->plain) return 0;
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (strcmp(n->text, nulls[i]) == 0) return 1;
    return 0;
}

/* Plain scalar that is a whole decimal number. Returns 0 and sets *out, or -1. */
int yp_yn_long(const yp_ynode *n, long *out) {
    if (n->kind != YP_YN_SCALAR || !n->plain || !n->text[0]) return -1;
    char *end;
    errno = 0;
    long v = strtol(n->text, &end, 10);
    if (*end || errno) return -1;
    *out = v;
    return 0;
}

/* Plain scalar that is a finite number. Returns 0 and sets *out, or -1. */
int yp_yn_double(const yp_ynode *n, double *out) {
    if (n->kind != YP_YN_SCALAR || !n->plain || !n->text[0]) return -1;
    char *end;
    double v = strtod(n->text, &end);
    if (*end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* Plain True/False (YAML or Python spelling). Returns 0 and sets *out, or -1. */
int yp_yn_bool(const yp_ynode *n, int *out) {
    if (n->kind != YP_YN_SCALAR || !n->plain) return -1;
    if (!strcmp(n->text, "True") || !strcmp(n->text, "true")) *out = 1;
    else if (!strcmp(n->text, "False") || !strcmp(n->text, "false")) *out = 0;
    else return -1;
    return 0;
}

/* Describes what n is, for "expected X, got Y" messages. Returns buf. */
const char *yp_yn_describe(const yp_ynode *n, char *buf, size_t size) {
    if (n->kind == YP_YN_SEQ) snprintf(buf, size, "a list");
    else if (n->kind == YP_YN_MAP) snprintf(buf, size, "a mapping");
    else if (yp_yn_is_null(n)) snprintf(buf, size, "nothing");
    else snprintf(buf, size, "the %sstring \"%.40s\"", n->plain ? "" : "quoted ", n->text);
    return buf;
}


const yp_ynode *yp_yn_map_get(const yp_ynode *map, const char *key) {
    if (!map || map->kind != YP_YN_MAP) return NULL;
    for (int i = 0; i + 1 < map->n; i += 2)
        if (strcmp(map->kids[i]->text, key) == 0) return map->kids[i + 1];
    return NULL;
}
