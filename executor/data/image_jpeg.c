/* image_jpeg.c - JPEG through libjpeg-turbo (image_internal.h, yp_image.h): decoding from memory to
 * RGB with the EXIF orientation applied (whole, or only the rows and columns around a region),
 * and baseline encoding to memory.
 *
 * libjpeg reports fatal errors through error_exit, which here longjmps back to the decoder with
 * the message; its state lives in one heap block made before setjmp, so nothing the longjmp
 * skips over is a modified local. Two warnings are fatal: "premature end of data segment" and
 * "premature end of JPEG file" (image data that stops early). The source serves an end marker
 * after the last byte without a warning, so a file that lacks only its end marker decodes. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "image_internal.h"

#define MAX_SCANS 500 /* progressive scans decoded at most (libjpeg-turbo's TJFLAG_LIMITSCANS) */
#define ROWS 16       /* scanlines per jpeg_read_scanlines call */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX + 96];
} jerr_mgr;

static void on_error(j_common_ptr c) {
    jerr_mgr *e = (jerr_mgr *)c->err;
    char text[JMSG_LENGTH_MAX];
    (*c->err->format_message)(c, text);
    snprintf(e->msg, sizeof e->msg, "bad JPEG: %s", text);
    longjmp(e->jump, 1);
}

/* Warnings are ignored (as OpenCV and PIL do) except those that mean the data stopped early. */
static void on_message(j_common_ptr c, int level) {
    if (level >= 0) return; /* trace messages */
    int code = c->err->msg_code;
    if (code == JWRN_HIT_MARKER || code == JWRN_JPEG_EOF) {
        jerr_mgr *e = (jerr_mgr *)c->err;
        snprintf(e->msg, sizeof e->msg, "truncated JPEG: the image data ends early");
        longjmp(e->jump, 1);
    }
    c->err->num_warnings++;
}

static void on_progress(j_common_ptr c) {
    if (!c->is_decompressor) return;
    j_decompress_ptr d = (j_decompress_ptr)c;
    if (d->progressive_mode && d->input_scan_number > MAX_SCANS) {
        jerr_mgr *e = (jerr_mgr *)c->err;
        snprintf(e->msg, sizeof e->msg, "bad JPEG: more than %d progressive scans", MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

/* ---- the memory source ---- */

static const JOCTET fake_eoi[2] = {0xff, JPEG_EOI};

static void src_init(j_decompress_ptr c) { (void)c; }
static void src_term(j_decompress_ptr c) { (void)c; }

static boolean src_fill(j_decompress_ptr c) {
    c->src->next_input_byte = fake_eoi;
    c->src->bytes_in_buffer = sizeof fake_eoi;
    return TRUE;
}

static void src_skip(j_decompress_ptr c, long n) {
    if (n <= 0) return;
    if ((size_t)n > c->src->bytes_in_buffer) { /* skipping past the end: what follows is the end */
        src_fill(c);
        return;
    }
    c->src->next_input_byte += n;
    c->src->bytes_in_buffer -= (size_t)n;
}

/* ---- EXIF ---- */

static uint32_t rd16(const uint8_t *p, int le) { return le ? p[0] | (uint32_t)p[1] << 8 : (uint32_t)p[0] << 8 | p[1]; }

static uint32_t rd32(const uint8_t *p, int le) {
    return le ? rd16(p, 1) | rd16(p + 2, 1) << 16 : rd16(p, 0) << 16 | rd16(p + 2, 0);
}

int yp_img_exif_orientation(const uint8_t *app1, size_t len) {
    if (len < 6 + 8 || memcmp(app1, "Exif\0\0", 6) != 0) return 0;
    return yp_img_tiff_orientation(app1 + 6, len - 6);
}

int yp_img_tiff_orientation(const uint8_t *t, size_t n) { /* offsets count from t */
    if (n < 8) return 0;
    int le = t[0] == 'I' && t[1] == 'I';
    if (!le && !(t[0] == 'M' && t[1] == 'M')) return 0;
    if (rd16(t + 2, le) != 42) return 0;
    uint32_t ifd = rd32(t + 4, le);
    if (ifd > n || n - ifd < 2) return 0;
    uint32_t count = rd16(t + ifd, le);
    for (uint32_t i = 0; i < count; i++) {
        size_t at = (size_t)ifd + 2u + (size_t)i * 12u;
        if (at > n || n - at < 12) return 0;
        if (rd16(t + at, le) != 0x0112) continue;
        uint32_t type = rd16(t + at + 2, le), v;
        if (rd32(t + at + 4, le) != 1) return 0;
        if (type == 3) v = rd16(t + at + 8, le);
        else if (type == 4) v = rd32(t + at + 8, le);
        else return 0;
        return v <= 65535 ? (int)v : 0;
    }
    return 0;
}

/* ---- decoding ---- */

typedef struct {
    struct jpeg_decompress_struct cinfo;
    jerr_mgr err;
    struct jpeg_source_mgr src;
    struct jpeg_progress_mgr progress;
    uint8_t *rgb, *cmyk; /* the output; one band of CMYK scanlines */
    int w;               /* the output's width (a cropped decode narrows cinfo.output_width) */
} jdec;

/* OpenCV's CMYK to RGB for libjpeg's (Adobe-inverted) CMYK samples. */
static void cmyk_to_rgb(const uint8_t *cmyk, uint8_t *rgb, size_t n) {
    for (size_t i = 0; i < n; i++, cmyk += 4, rgb += 3) {
        int k = cmyk[3];
        rgb[0] = (uint8_t)(k - (((255 - cmyk[0]) * k) >> 8));
        rgb[1] = (uint8_t)(k - (((255 - cmyk[1]) * k) >> 8));
        rgb[2] = (uint8_t)(k - (((255 - cmyk[2]) * k) >> 8));
    }
}

/* The orientation of the first EXIF APP1 segment libjpeg saved, or 0. */
static int find_orientation(j_decompress_ptr c) {
    for (jpeg_saved_marker_ptr m = c->marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && memcmp(m->data, "Exif\0\0", 6) == 0)
            return yp_img_exif_orientation(m->data, m->data_length);
    return 0;
}

/* The margin, in pixels, around a requested region that is decoded too: at the cut edges of a
 * cropped or skipped decode the chroma's fancy upsampling has no neighbour, so the pixels there
 * differ from the whole decode's; it reaches one chroma sample, two pixels at 2x subsampling
 * (test_image's random regions pass from 2 and fail at 1); twice that, to be safe. */
#define CROP_MARGIN 4

/* The rows [y0, y1) and columns [x0, x1) to decode for region (clamped, widened by the margin), or
 * 0 when the whole image is to be decoded (no region, an empty one, or one that is the image). */
static int crop_box(const int *region, int w, int h, int box[4]) {
    if (!region) return 0;
    int x0 = region[0] - CROP_MARGIN, y0 = region[1] - CROP_MARGIN;
    int x1 = region[2] > w - CROP_MARGIN ? w : region[2] + CROP_MARGIN;
    int y1 = region[3] > h - CROP_MARGIN ? h : region[3] + CROP_MARGIN;
    box[0] = x0 < 0 ? 0 : x0, box[1] = y0 < 0 ? 0 : y0, box[2] = x1, box[3] = y1;
    if (region[0] >= region[2] || region[1] >= region[3] || box[0] >= box[2] || box[1] >= box[3]) return 0;
    return box[0] > 0 || box[1] > 0 || box[2] < w || box[3] < h;
}

/* Decodes the scanlines into d->rgb (allocated here, the whole image's size): every one, or with
 * m->region (and orientation 1) only the rows and iMCU columns around it. The caller has set up
 * and read the header. */
static int read_pixels(jdec *d, const char *name, const yp_img_mode *m, int orientation, yp_err *err) {
    j_decompress_ptr c = &d->cinfo;
    int cmyk = c->num_components == 4, box[4];
    c->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(c);
    if (c->output_components != (cmyk ? 4 : 3))
        return yp_err_set(err, "%s: bad JPEG: %d colour components are not supported", name, c->output_components);
    size_t w = c->output_width, stride = w * 3u; /* checked: w * h <= max_pixels */
    JDIMENSION x0 = 0, end = c->output_height;
    int crop = (orientation < 2 || orientation > 8) && /* 2..8 turn the image: decoded whole */
               crop_box(m->region, (int)c->output_width, (int)c->output_height, box);
    d->rgb = yp_img_pixels(m, stride * c->output_height);
    if (crop) {
        JDIMENSION cw = (JDIMENSION)(box[2] - box[0]);
        x0 = (JDIMENSION)box[0];
        if (cw < c->output_width) jpeg_crop_scanline(c, &x0, &cw); /* x0 moves left to an iMCU edge */
        if (box[1] > 0) jpeg_skip_scanlines(c, (JDIMENSION)box[1]);
        end = (JDIMENSION)box[3];
    }
    size_t cols = c->output_width; /* the cropped width when cropping */
    d->cmyk = cmyk ? malloc(cols * 4u * ROWS) : NULL;
    if (!d->rgb || (cmyk && !d->cmyk)) return yp_err_set(err, "%s: out of memory decoding", name);
    uint8_t *at = d->rgb + (size_t)x0 * 3u;
    while (c->output_scanline < end) {
        JSAMPROW rows[ROWS];
        JDIMENSION y0 = c->output_scanline, n = end - y0 < ROWS ? end - y0 : ROWS;
        for (JDIMENSION i = 0; i < n; i++)
            rows[i] = cmyk ? d->cmyk + (size_t)i * cols * 4u : at + (size_t)(y0 + i) * stride;
        JDIMENSION got = jpeg_read_scanlines(c, rows, n);
        if (cmyk) cmyk_to_rgb(d->cmyk, at + (size_t)y0 * stride, (size_t)got * cols);
        if (got == 0) return yp_err_set(err, "%s: bad JPEG: no progress at scanline %u", name, (unsigned)y0);
    }
    d->w = (int)w;
    return 0;
}

int yp_img_jpeg_decode(const uint8_t *data, size_t size, const char *name, const yp_image_limits *lim,
                       const yp_img_mode *m, yp_image *out, yp_err *err) {
    memset(out, 0, sizeof *out);
    jdec *d = calloc(1, sizeof *d);
    if (!d) return yp_err_set(err, "%s: out of memory decoding", name);
    int rc = -1, orientation = 0;
    d->cinfo.err = jpeg_std_error(&d->err.pub);
    d->err.pub.error_exit = on_error;
    d->err.pub.emit_message = on_message;
    if (setjmp(d->err.jump)) {
        yp_err_set(err, "%s: %s", name, d->err.msg);
        goto done;
    }
    jpeg_create_decompress(&d->cinfo);
    d->src = (struct jpeg_source_mgr){.next_input_byte = data, .bytes_in_buffer = size, .init_source = src_init,
                                      .fill_input_buffer = src_fill, .skip_input_data = src_skip,
                                      .resync_to_restart = jpeg_resync_to_restart, .term_source = src_term};
    d->cinfo.src = &d->src;
    d->progress.progress_monitor = on_progress;
    d->cinfo.progress = &d->progress;
    jpeg_save_markers(&d->cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&d->cinfo, TRUE);
    if (!yp_img_pixels_ok(d->cinfo.image_width, d->cinfo.image_height, lim, name, err)) goto done;
    if (m->header_only) {
        int o = find_orientation(&d->cinfo), swap = o >= 5 && o <= 8;
        int w = (int)d->cinfo.image_width, h = (int)d->cinfo.image_height;
        out->w = swap ? h : w, out->h = swap ? w : h;
        rc = 0;
        goto done;
    }
    orientation = find_orientation(&d->cinfo);
    if (read_pixels(d, name, m, orientation, err)) goto done;
    out->w = d->w, out->h = (int)d->cinfo.output_height, out->rgb = d->rgb;
    d->rgb = NULL;
    rc = 0;
done:
    jpeg_destroy_decompress(&d->cinfo); /* no jpeg_finish_decompress: what follows the pixels is not read */
    yp_img_pixels_release(m, d->rgb);
    free(d->cmyk);
    free(d);
    if (rc == 0 &&
        (m->reuse ? yp_img_orient_in_place(out, orientation, err) : yp_image_orient(out, orientation, err))) {
        yp_img_pixels_release(m, out->rgb);
        memset(out, 0, sizeof *out);
        return -1;
    }
    return rc;
}

/* ---- encoding ---- */

typedef struct {
    struct jpeg_destination_mgr pub;
    uint8_t *buf;
    size_t cap;
} jdst;

typedef struct {
    struct jpeg_compress_struct cinfo;
    jerr_mgr err;
    jdst dst;
} jenc;

/* Doubles the buffer; the whole of it was written. */
static boolean dst_empty(j_compress_ptr c) {
    jdst *d = (jdst *)c->dest;
    size_t cap = d->cap * 2;
    uint8_t *buf = cap > d->cap ? realloc(d->buf, cap) : NULL;
    if (!buf) ERREXIT1(c, JERR_OUT_OF_MEMORY, 99);
    d->buf = buf;
    d->pub.next_output_byte = buf + d->cap;
    d->pub.free_in_buffer = cap - d->cap;
    d->cap = cap;
    return TRUE;
}

static void dst_init(j_compress_ptr c) {
    jdst *d = (jdst *)c->dest;
    d->pub.next_output_byte = d->buf;
    d->pub.free_in_buffer = d->cap;
}

static void dst_term(j_compress_ptr c) { (void)c; }

int yp_image_encode_jpeg(const yp_image *im, int quality, uint8_t **data, size_t *size, yp_err *err) {
    *data = NULL, *size = 0;
    if (quality < 1 || quality > 100) return yp_err_set(err, "JPEG encoder: quality %d is not in 1..100", quality);
    if (!im->rgb || im->w < 1 || im->h < 1 || im->w > JPEG_MAX_DIMENSION || im->h > JPEG_MAX_DIMENSION)
        return yp_err_set(err, "JPEG encoder: a %dx%d image cannot be written as JPEG", im->w, im->h);
    jenc *e = calloc(1, sizeof *e);
    if (!e) return yp_err_set(err, "JPEG encoder: out of memory");
    int rc = -1;
    e->cinfo.err = jpeg_std_error(&e->err.pub);
    e->err.pub.error_exit = on_error;
    if (setjmp(e->err.jump)) {
        yp_err_set(err, "JPEG encoder: %s", e->err.msg);
        goto done;
    }
    jpeg_create_compress(&e->cinfo);
    e->dst.cap = 65536;
    if (!(e->dst.buf = malloc(e->dst.cap))) {
        yp_err_set(err, "JPEG encoder: out of memory");
        goto done;
    }
    e->dst.pub = (struct jpeg_destination_mgr){.init_destination = dst_init, .empty_output_buffer = dst_empty,
                                               .term_destination = dst_term};
    e->cinfo.dest = &e->dst.pub;
    e->cinfo.image_width = (JDIMENSION)im->w, e->cinfo.image_height = (JDIMENSION)im->h;
    e->cinfo.input_components = 3, e->cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&e->cinfo);
    jpeg_set_quality(&e->cinfo, quality, TRUE);
    if (quality >= 90) e->cinfo.comp_info[0].h_samp_factor = e->cinfo.comp_info[0].v_samp_factor = 1;
    jpeg_start_compress(&e->cinfo, TRUE);
    while (e->cinfo.next_scanline < e->cinfo.image_height) {
        JSAMPROW row = im->rgb + (size_t)e->cinfo.next_scanline * (size_t)im->w * 3u;
        jpeg_write_scanlines(&e->cinfo, &row, 1);
    }
    jpeg_finish_compress(&e->cinfo);
    *size = e->dst.cap - e->dst.pub.free_in_buffer;
    *data = e->dst.buf;
    e->dst.buf = NULL;
    rc = 0;
done:
    jpeg_destroy_compress(&e->cinfo);
    free(e->dst.buf);
    free(e);
    return rc;
}
