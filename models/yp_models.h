/* yp_models.h - the bundled model IRs (models/yolov5{n,s,m,l,x}.json), embedded at build time.
 * The returned blobs are static; nothing to free. */
#ifndef YP_MODELS_H
#define YP_MODELS_H

#include <stddef.h>

typedef struct {
    const char *name; /* "yolov5s" */
    const char *json; /* the IR text (NUL-terminated) */
    size_t len;       /* bytes, without the terminating NUL */
} yp_model_blob;

/* The bundled model with this name, or NULL. */
const yp_model_blob *yp_models_find(const char *name);
/* All bundled models, smallest first (the order of YP_MODEL_NAMES in models/CMakeLists.txt, the
 * one list of them); *n receives their count. */
const yp_model_blob *yp_models_list(int *n);

#endif
