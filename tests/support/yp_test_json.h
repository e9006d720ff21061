/* yp_test_json.h - reading a JSON fixture of tests/data (written by a tests/ref script) whole.
 * Defines: yp_test_json_file. */
#ifndef YP_TEST_JSON_H
#define YP_TEST_JSON_H

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

/* The parsed file, or NULL when it cannot be read or parsed; free with cJSON_Delete. */
static inline cJSON *yp_test_json_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
        buf[n] = 0;
    else
        free(buf), buf = NULL;
    fclose(f);
    cJSON *j = buf ? cJSON_Parse(buf) : NULL;
    free(buf);
    return j;
}

#endif
