/* yp_safetensors.h - the safetensors file format, read and written exactly:
 *
 *   8 bytes   N, the header's length, unsigned 64-bit little endian
 *   N bytes   the header: a JSON object, UTF-8, starting with '{', padded at the end with spaces
 *             so that 8 + N is a multiple of 8 (as the reference implementation writes it). One
 *             member per tensor, name -> {"dtype": "F32", "shape": [2, 3], "data_offsets":
 *             [begin, end]}, and optionally "__metadata__": an object of string -> string
 *   the data  every tensor's bytes, little endian, row major, at [begin, end) counted from the
 *             end of the header; the tensors cover the data exactly: no gap, no overlap, nothing
 *             after the last one
 *
 * The reader refuses, with one line naming the file and the field, anything else: a file that is
 * not regular (a FIFO, a device, a folder: never opened for blocking reads, so it cannot hang) or
 * larger than YP_ST_MAX_FILE, a header length past the end of the file or above YP_ST_MAX_HEADER,
 * a header that is not UTF-8, not an object, nested deeper than YP_ST_MAX_DEPTH or followed by
 * anything but whitespace, a key other than dtype, shape and data_offsets, a duplicate name, an
 * unknown dtype, more than YP_ST_MAX_DIMS dimensions, a non-integral or negative number, offsets
 * whose span is not what the dtype and shape need (checked arithmetic, no overflow), and data
 * offsets that overlap, leave a gap or do not end at the end of the file.
 *
 * The writer writes atomically (yp_atomic_file.h): a temporary file in the destination's folder,
 * written, flushed to the disk (fsync), renamed over the destination, and the folder synced. A
 * failure before the rename removes the temporary file and leaves an existing destination as it
 * was; the error says so. Tests inject failures (yp_st_faults) to prove it.
 *
 * The host must be little endian (checked at compile time). */
#ifndef YP_SAFETENSORS_H
#define YP_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "yp_atomic_file.h"
#include "yp_error.h"

#define YP_ST_MAX_HEADER 100000000LL          /* the reference implementation's limit */
#define YP_ST_MAX_FILE (1LL << 40)            /* 1 TiB */
#define YP_ST_MAX_DEPTH 4                     /* a valid header nests 3 deep */
#define YP_ST_MAX_DIMS 8

typedef enum {
    YP_ST_BOOL, YP_ST_U8, YP_ST_I8, YP_ST_F8_E5M2, YP_ST_F8_E4M3, YP_ST_I16, YP_ST_U16, YP_ST_F16,
    YP_ST_BF16, YP_ST_I32, YP_ST_U32, YP_ST_F32, YP_ST_F64, YP_ST_I64, YP_ST_U64, YP_ST_DTYPE_COUNT
} yp_st_dtype;

/* "F32", ...; parse returns -1 for an unknown name. */
const char *yp_st_dtype_name(yp_st_dtype d);
int yp_st_dtype_parse(const char *s);
/* Bytes per element (1, 2, 4 or 8). */
int64_t yp_st_dtype_size(yp_st_dtype d);

/* The bytes of a tensor of dtype d and shape[0..ndim): 0, or -1 when a dimension is negative,
 * ndim is outside 0..YP_ST_MAX_DIMS or the product overflows int64. */
int yp_st_nbytes(yp_st_dtype d, int ndim, const int64_t *shape, int64_t *bytes);

/* ---------------------------------------------------------------- writing */

typedef struct {
    const char *name;     /* non-empty, unique, not "__metadata__" */
    yp_st_dtype dtype;
    int ndim;             /* 0 (a scalar) .. YP_ST_MAX_DIMS */
    int64_t shape[YP_ST_MAX_DIMS];
    const void *data;     /* its bytes; NULL: the description's source gives them */
} yp_st_tensor;

/* Fills dst with the `bytes` bytes of tensor i (for data that is not on the host, e.g. an arena
 * read through a backend's copy). 0, or -1 with err set. */
typedef int (*yp_st_source)(void *ctx, int i, void *dst, size_t bytes, yp_err *err);

typedef struct {
    const yp_st_tensor *tensors; /* written in this order */
    int n;
    const char *const *meta_keys, *const *meta_values; /* n_meta pairs of UTF-8 strings */
    int n_meta;                  /* 0: no "__metadata__" */
    yp_st_source source;         /* for the tensors whose data is NULL */
    void *source_ctx;
} yp_st_desc;

/* Failures a test injects into yp_st_save (production passes NULL): yp_atomic_file.h's. */
typedef yp_af_fail_point yp_st_fail_point;
typedef yp_af_faults yp_st_faults;
#define YP_ST_FAIL_NONE YP_AF_FAIL_NONE
#define YP_ST_FAIL_FSYNC YP_AF_FAIL_FSYNC   /* the temporary file's fsync fails (EIO) */
#define YP_ST_FAIL_RENAME YP_AF_FAIL_RENAME /* everything is written and synced, then the rename fails (EIO) */

/* Writes d to path atomically (above). 0, or -1 with err naming the file, the step that failed
 * and whether the previous file is intact. */
int yp_st_save(const char *path, const yp_st_desc *d, const yp_st_faults *faults, yp_err *err);

/* ---------------------------------------------------------------- reading */

typedef struct {
    char *name;
    yp_st_dtype dtype;
    int ndim;
    int64_t shape[YP_ST_MAX_DIMS];
    int64_t begin, end; /* in the data (after the header) */
} yp_st_entry;

typedef struct {
    char *path;
    int fd;
    int64_t file_bytes, data_start; /* data_start = 8 + N */
    int n;
    yp_st_entry *e;                 /* in the header's order */
    int *by_name;                   /* indices of e sorted by name (yp_st_find) */
    int n_meta;
    char **meta_key, **meta_value;
} yp_st_file;

/* Opens and validates path (every rule above); the data is read on demand. 0, or -1 with err set
 * (f is then closed). Close with yp_st_close either way; a zeroed file closes as a no-op. */
int yp_st_open(yp_st_file *f, const char *path, yp_err *err);
void yp_st_close(yp_st_file *f);

/* The entry index of tensor `name`, or -1. */
int yp_st_find(const yp_st_file *f, const char *name);

/* For any table of entries (a .pt's too, yp_pt.h): fills order[0..n) with the indices of e sorted
 * by name. 0; 1 with *dup the index of an entry whose name another has too; -1 out of memory. */
int yp_st_sort_names(const yp_st_entry *e, int n, int *order, int *dup);

/* The index of the entry named `name` among e[0..n) sorted as order, or -1. */
int yp_st_find_in(const yp_st_entry *e, const int *order, int n, const char *name);

/* The value of metadata key `key`, or NULL. */
const char *yp_st_meta(const yp_st_file *f, const char *key);

/* Reads entry i's bytes (end - begin of them) into dst. 0, or -1 with err set (a read error, or
 * a file that shrank since it was opened). */
int yp_st_read(const yp_st_file *f, int i, void *dst, yp_err *err);

/* Formats shape[0..ndim) as "[2, 3]" into buf. */
void yp_st_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

#endif
