/* device.h - the command line's device: --device parsed by the backend kinds
 * (kernels/yp_backend_kind.h) and checked as any flag (one device for now), the instance made from
 * it, the memory a plan for it is made for, and the spec a loaded plan asks for. Shared by train,
 * bench-step and val; no code here names a kind. */
#ifndef YP_CLI_DEVICE_H
#define YP_CLI_DEVICE_H

#include "yp_backend_kind.h"
#include "yp_gpu.h"
#include "yp_plan.h"

/* The spec of `opt v` (--device cuda:1), with `threads` where it names none (cpu, not cpu:T). 0, or
 * -1 with err "OPT V: <why>": junk, or several devices (multi-GPU DDP: not available yet). */
int cli_device_spec(const char *opt, const char *v, long threads, yp_device_spec *s, yp_err *err);

/* cli_device_spec's check alone (an option table's validator). */
int cli_device_check(const char *opt, const char *v, yp_err *err);

/* A new instance of s, or NULL with err "<what>: <why>" (e.g. "--device cuda: no usable CUDA driver
 * or GPU (...)"). The caller frees it with yp_backend_free. */
yp_backend *cli_device_open(const yp_device_spec *s, const char *what, yp_err *err);

/* The memory a plan for instance be is made for: for a backend whose memory is the host's, the
 * host with host_budget bytes (yp_gpu_host); else the card gpu names (non-empty: planned for it,
 * checked against this one by the preflight) or be's own device, its free memory the budget
 * (cli_gpu_of_backend). 0, or -1 with err set. */
int cli_device_budget(yp_backend *be, int64_t host_budget, const char *gpu, yp_gpu *dev, yp_err *err);

/* When plan p was made for another configuration of s's kind (the CPU's thread count, onednn:T),
 * makes s that configuration and returns 1; 0 when any instance of s runs it. */
int cli_device_spec_of_plan(yp_device_spec *s, const yp_plan *p);

#endif
