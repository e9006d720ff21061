/* yp_plan_io.h - plan.json: the chosen plan written completely (the model IR, the candidate, the
 * GPU, every tensor with dtype, shape, bytes, offset and life, every step with its operands, and
 * the "validation" section: the evaluation pass's batch, arena bytes, tensors, steps and, per
 * parameter, the training tensor it aliases by id, name and role; yp_val_plan.h), so the
 * executor can run it verbatim. Loading re-plans from the embedded model and candidate and checks
 * that every tensor and step, and the validation section, comes out identical; a file from
 * another planner version or edited by hand is refused with one line naming the file and the
 * first field that differs.
 * Ownership: yp_plan_load returns a plan (free with yp_plan_free) and the graph it refers to
 * (free with yp_graph_free after the plan). */
#ifndef YP_PLAN_IO_H
#define YP_PLAN_IO_H

#include <cjson/cJSON.h>

#include "yp_plan.h"

#define YP_PLAN_FORMAT "yoloplan-plan"
#define YP_PLAN_VERSION 1

/* The candidate as JSON (reports/JSON.md "candidate": model, img [w, h], batch, precision,
 * checkpoint [layers], mosaic, optimizer, ema, freeze, policy, labels_per_image, multi_scale,
 * val_rect, conv_scratch, fusions [names], workers, prefetch, cache): one form for the report and
 * for plan.json. The caller deletes the tree. */
cJSON *yp_candidate_json(const yp_graph *g, const yp_candidate *c);

/* The GPU as JSON (reports/JSON.md "gpu": name, desc, mem_bytes, fixed_bytes, the four peak rates,
 * bandwidth_gbs, from_table): one form for the report and for plan.json. The caller deletes it. */
cJSON *yp_gpu_json(const yp_gpu *g);

/* The text yp_plan_save writes (without its final newline), malloc'd (free it), or NULL when
 * out of memory: for a file that carries the plan inside, as a checkpoint does. */
char *yp_plan_json_text(const yp_plan *p);

/* Writes p to path atomically (temp file + rename). 0, or -1 with err set. */
int yp_plan_save(const yp_plan *p, const char *path, yp_err *err);

/* Reads path, re-plans and verifies. 0, or -1 with err set (file, JSON path, fix). The plan's
 * conv scratch model (candidate.conv_scratch, yp_scratch.h) is resolved through r: yp_plan_load
 * passes none, so it loads im2col plans only; a program that links a backend passes that
 * backend's resolver (the executor's yp_exec_scratch_resolver) to load the plans made for it. A
 * model r cannot resolve is refused, naming it and the models r knows. */
int yp_plan_load(const char *path, yp_plan *out, yp_graph **graph, yp_err *err);
int yp_plan_load_with(const char *path, const yp_scratch_resolver *r, yp_plan *out, yp_graph **graph, yp_err *err);

#endif
