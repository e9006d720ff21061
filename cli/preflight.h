/* preflight.h - the command line's side of the check before step 1 (executor/yp_preflight.h):
 * the device a CUDA instance is, as a plan's yp_gpu, and the refusal of a plan whose arena and
 * fixed cost exceed the device's free memory, naming the best plan that does fit it (the
 * planner's search re-run with the free memory as the budget). Shared by train and bench-step. */
#ifndef YP_CLI_PREFLIGHT_H
#define YP_CLI_PREFLIGHT_H

#include "yp_backend.h"
#include "yp_plan.h"
#include "yp_search.h"

/* The device of instance be (its device_info) as the planner's yp_gpu: the table's row for its
 * name (a generic entry if unknown) with the total cudaMemGetInfo reports, and as fixed cost what
 * is not free now (the context, the instance's own state and other processes' memory; at least
 * the table's estimate), so the plan's budget is what is free. 0, or -1 with err set when be has
 * no device_info or asking fails. */
int cli_gpu_of_backend(yp_backend *be, yp_gpu *gpu, yp_err *err);

/* The search that re-plans p's model at p's image size, precision, mosaic and options over every
 * batch up to max_batch and every checkpoint set (what a refusal's suggestion searches). */
void cli_search_of_plan(const yp_plan *p, int64_t max_batch, yp_search_opts *so);

/* Before the arena is allocated: 0 to go on (it fits, or be cannot tell its free memory: the CPU);
 * -1 with err set to one line "<cmd>: the plan does not fit the <device> now: arena .. + fixed
 * cost .. = .., but the device has .. for them (...); <the best plan so finds for that memory,
 * or that none does>". so: the search behind the suggestion, its batch not pinned. */
int cli_preflight(yp_backend *be, const yp_plan *p, const yp_search_opts *so, const char *cmd, yp_err *err);

#endif
