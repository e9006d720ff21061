// backend.cu - CUDA instances and their host glue: device probing, the instance's stream,
// cudaMalloc'd memory, copies, sync, the thread's last error, and the build description. Ops live in
// one .cu file per op. Each instance queues all of its work (kernels, copies, sets) on its own
// stream on its own device, so its work is ordered without events; sync waits for that stream.
#include <cstdlib>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "yp_backend.h"
#include "yp_cuda.h"
#include "yp_cuda_config.h"  // generated: YP_CUDA_ARCHS, YP_CUDA_MIN_ARCH

// cudaMalloc returns 256-byte aligned memory; arena offsets aligned the same keep every tensor
// aligned for vector loads and cuDNN.
static const size_t kCudaAlignment = 256;

static thread_local char cuda_last_error[512];

extern "C" int yp_cuda_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cuda_last_error, sizeof cuda_last_error, fmt, ap);
    va_end(ap);
    return -1;
}

extern "C" int yp_cuda_check_launch(const char *what) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return yp_cuda_fail("%s: launch failed: %s (%s)", what, cudaGetErrorString(e),
                            cudaGetErrorName(e));
    return 0;
}

static const char *cuda_last_error_get(yp_backend *) {
    return cuda_last_error;
}

// Returns device memory of at least max(bytes, 1) rounded up to the alignment, or NULL with the
// reason (including free/total device memory on OOM). The caller frees it with cuda_mem_free.
static void *cuda_mem_alloc(yp_backend *be, size_t bytes) {
    if (yp_cuda_use("cuda alloc", yp_cuda_of(be)))
        return nullptr;
    if (bytes > SIZE_MAX - kCudaAlignment) {
        yp_cuda_fail("cuda alloc: %zu bytes is too large", bytes);
        return nullptr;
    }
    size_t rounded = (bytes + kCudaAlignment - 1) / kCudaAlignment * kCudaAlignment;
    if (rounded == 0)
        rounded = kCudaAlignment;
    void *p = nullptr;
    cudaError_t e = cudaMalloc(&p, rounded);
    if (e != cudaSuccess) {
        cudaGetLastError();  // an allocation failure is not sticky; keep later launch checks clean
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        const double gib = 1024.0 * 1024.0 * 1024.0;
        yp_cuda_fail("cudaMalloc of %zu bytes (%.2f GiB) failed: %s; device has %.2f GiB free of %.2f GiB",
                     rounded, (double)rounded / gib, cudaGetErrorString(e), (double)free_b / gib,
                     (double)total_b / gib);
        return nullptr;
    }
    return p;
}

static void cuda_mem_free(yp_backend *be, void *ptr) {
    if (ptr && !yp_cuda_use("cuda free", yp_cuda_of(be)))
        cudaFree(ptr);
}

// On the instance's stream, then waits for it: the copy follows the instance's queued work.
static int cuda_mem_copy(yp_backend *be, void *dst, const void *src, size_t bytes, yp_copy dir) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    cudaMemcpyKind kind;
    switch (dir) {
    case YP_COPY_HOST_TO_DEVICE: kind = cudaMemcpyHostToDevice; break;
    case YP_COPY_DEVICE_TO_HOST: kind = cudaMemcpyDeviceToHost; break;
    case YP_COPY_DEVICE_TO_DEVICE: kind = cudaMemcpyDeviceToDevice; break;
    default: return yp_cuda_fail("cuda mem_copy: invalid direction %d", (int)dir);
    }
    if (bytes == 0)
        return 0;
    if (!dst || !src)
        return yp_cuda_fail("cuda mem_copy: NULL pointer with %zu bytes", bytes);
    if (yp_cuda_use("cuda mem_copy", cb))
        return -1;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, cb->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(cb->stream);
    if (e != cudaSuccess)
        return yp_cuda_fail("cudaMemcpy of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
    return 0;
}

static int cuda_mem_set(yp_backend *be, void *dst, int value, size_t bytes) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (bytes == 0)
        return 0;
    if (!dst)
        return yp_cuda_fail("cuda mem_set: NULL pointer with %zu bytes", bytes);
    if (yp_cuda_use("cuda mem_set", cb))
        return -1;
    cudaError_t e = cudaMemsetAsync(dst, value, bytes, cb->stream);
    if (e != cudaSuccess)
        return yp_cuda_fail("cudaMemset of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
    return 0;
}

static int cuda_sync(yp_backend *be) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (yp_cuda_use("cuda sync", cb))
        return -1;
    cudaError_t e = cudaStreamSynchronize(cb->stream);
    if (e != cudaSuccess)
        return yp_cuda_fail("cudaStreamSynchronize: %s (%s)", cudaGetErrorString(e),
                            cudaGetErrorName(e));
    return 0;
}

static int cuda_device_info(yp_backend *be, char *name, size_t name_len, int64_t *total_bytes,
                            int64_t *free_bytes) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    cudaDeviceProp prop;
    size_t free_b = 0, total_b = 0;
    if (yp_cuda_use("cuda device_info", cb))
        return -1;
    cudaError_t e = cudaGetDeviceProperties(&prop, cb->device);
    if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
    if (e != cudaSuccess) return yp_cuda_fail("cuda device_info: %s", cudaGetErrorString(e));
    if (name && name_len > 0) snprintf(name, name_len, "%s", prop.name);
    *total_bytes = (int64_t)total_b;
    *free_bytes = (int64_t)free_b;
    return 0;
}

// The op table: SiLU, and each op file's entries set by its yp_cuda_register_<file>; an entry not
// registered stays NULL (the executor refuses a backend that lacks one it needs). Built at static
// initialisation: C++17 has no designated initialisers.
static yp_ops make_cuda_ops() {
    yp_ops o;
    memset(&o, 0, sizeof o);
    o.elems = YP_ELEM_BIT(YP_ELEM_F32) | YP_ELEM_BIT(YP_ELEM_F16) | YP_ELEM_BIT(YP_ELEM_BF16);
    yp_cuda_register_cast(&o);
    o.silu_forward = yp_cuda_silu_forward;
    o.silu_backward = yp_cuda_silu_backward;
    yp_cuda_register_act(&o);
    yp_cuda_register_conv(&o);
    yp_cuda_register_detect(&o);
    yp_cuda_register_loss(&o);
    yp_cuda_register_eltwise(&o);
    yp_cuda_register_bn(&o);
    yp_cuda_register_optim(&o);
    yp_cuda_register_attention(&o);
    return o;
}
static const yp_ops cuda_ops = make_cuda_ops();

extern "C" const yp_ops *yp_cuda_ops(void) {
    return &cuda_ops;
}

// Waits for the stream's work, frees the library state, destroys the stream and frees the instance.
static void cuda_release(yp_backend *be) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (cudaSetDevice(cb->device) == cudaSuccess && cb->stream) {
        cudaStreamSynchronize(cb->stream);
        yp_cuda_conv_release(cb);  // the cuDNN handle and the per-shape descriptors
        yp_cuda_loss_release(cb);
        yp_cuda_optim_release(cb);
        cudaStreamDestroy(cb->stream);
    }
    cudaGetLastError();
    std::free(cb);
}

// ---- CUDA graphs (yp_backend.h's graph entries): stream capture of the instance's stream, in
// thread-local mode so that another thread's CUDA calls cannot invalidate it.
static int cuda_graph_begin(yp_backend *be) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (yp_cuda_use("graph_begin", cb)) return -1;
    cudaError_t e = cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeThreadLocal);
    return e == cudaSuccess ? 0 : yp_cuda_fail("graph_begin: cudaStreamBeginCapture: %s", cudaGetErrorString(e));
}

// Ends the capture whatever happened inside it (an op that broke it leaves the stream capturing
// until this call); instantiates the recording.
static int cuda_graph_end(yp_backend *be, void **graph) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    *graph = nullptr;
    if (yp_cuda_use("graph_end", cb)) return -1;
    cudaGraph_t g = nullptr;
    cudaError_t e = cudaStreamEndCapture(cb->stream, &g);
    if (e != cudaSuccess || !g) {
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();  // an invalidated capture is reported here, not sticky
        return yp_cuda_fail("graph_end: cudaStreamEndCapture: %s", cudaGetErrorString(e));
    }
    cudaGraphExec_t x = nullptr;
    e = cudaGraphInstantiate(&x, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return yp_cuda_fail("graph_end: cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    *graph = x;
    return 0;
}

static int cuda_graph_launch(yp_backend *be, void *graph) {
    yp_cuda_backend *cb = yp_cuda_of(be);
    if (yp_cuda_use("graph_launch", cb)) return -1;
    cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), cb->stream);
    return e == cudaSuccess ? 0 : yp_cuda_fail("graph_launch: %s", cudaGetErrorString(e));
}

static void cuda_graph_free(yp_backend *be, void *graph) {
    if (graph && !yp_cuda_use("graph_free", yp_cuda_of(be))) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

static const yp_backend cuda_template = {
    /* name */ "cuda",
    /* alignment */ kCudaAlignment,
    /* host_memory */ 0,
    /* fixed_bytes */ 0,  // measured by yp_cuda_backend_new
    /* mem_alloc */ cuda_mem_alloc,
    /* mem_free */ cuda_mem_free,
    /* mem_copy */ cuda_mem_copy,
    /* mem_set */ cuda_mem_set,
    /* sync */ cuda_sync,
    /* last_error */ cuda_last_error_get,
    /* device_info */ cuda_device_info,
    /* ops */ &cuda_ops,
    /* graph_begin */ cuda_graph_begin,
    /* graph_end */ cuda_graph_end,
    /* graph_launch */ cuda_graph_launch,
    /* graph_free */ cuda_graph_free,
    /* thread_init */ nullptr,
    /* release */ cuda_release,
};

// Writes a reason into why (if any) and returns NULL.
static yp_backend *unavailable(char *why, size_t why_len, const char *fmt, ...) {
    if (why && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return nullptr;
}

// Probes the driver and the device, makes it current, creates the instance's stream and library
// state and measures what that state took (cudaMemGetInfo before and after). Needs
// nothing at link time: the static runtime loads libcuda.so.1 here, so a machine without a driver
// gets a reason, not a crash.
extern "C" yp_backend *yp_cuda_backend_new(int device, char *why, size_t why_len) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return unavailable(why, why_len, "no usable CUDA driver or GPU (cudaGetDeviceCount: %s)",
                           cudaGetErrorString(e));
    }
    if (count == 0)
        return unavailable(why, why_len, "no CUDA device found");
    if (device < 0 || device >= count)
        return unavailable(why, why_len, "no CUDA device %d (%d found)", device, count);
    cudaDeviceProp prop;
    e = cudaGetDeviceProperties(&prop, device);
    if (e != cudaSuccess)
        return unavailable(why, why_len, "cudaGetDeviceProperties(%d): %s", device,
                           cudaGetErrorString(e));
    int arch = prop.major * 10 + prop.minor;
    if (arch < YP_CUDA_MIN_ARCH)
        return unavailable(why, why_len,
                           "GPU %d (%s) is sm_%d, older than the oldest architecture built (%s)",
                           device, prop.name, arch, YP_CUDA_ARCHS);
    cudaStream_t stream = nullptr;
    size_t free0 = 0, total = 0;
    e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaFree(nullptr);  // creates the context now, so a busy or broken device shows here
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&free0, &total);  // before the instance's own state
    // Non-blocking: the instance's work does not wait for the legacy default stream's (nor it for
    // the instance's); every entry of the instance queues on this stream, so its own order holds.
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return unavailable(why, why_len, "cannot use GPU %d (%s): %s", device, prop.name,
                           cudaGetErrorString(e));
    }
    yp_cuda_backend *cb = static_cast<yp_cuda_backend *>(std::calloc(1, sizeof *cb));
    if (!cb) {
        cudaStreamDestroy(stream);
        return unavailable(why, why_len, "cuda backend: out of memory");
    }
    cb->base = cuda_template;
    cb->device = device;
    cb->stream = stream;
    // The library state every op needs, created now rather than at an op's first use, so that the
    // step loop allocates nothing and what it took is measured (base.fixed_bytes) before the plan
    // is checked against the free memory.
    size_t free1 = 0;
    if (yp_cuda_conv_init(cb) || yp_cuda_loss_init(cb) || yp_cuda_optim_init(cb)) {
        char reason[sizeof cuda_last_error];
        snprintf(reason, sizeof reason, "%s", cuda_last_error);
        cuda_release(&cb->base);
        return unavailable(why, why_len, "cannot use GPU %d (%s): %s", device, prop.name, reason);
    }
    e = cudaStreamSynchronize(stream);
    if (e == cudaSuccess)
        e = cudaMemGetInfo(&free1, &total);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cuda_release(&cb->base);
        return unavailable(why, why_len, "cannot use GPU %d (%s): %s", device, prop.name,
                           cudaGetErrorString(e));
    }
    cb->base.fixed_bytes = free0 > free1 ? (int64_t)(free0 - free1) : 0;
    return &cb->base;
}

// Versions: CUDART_VERSION is 1000*major + 10*minor; cudnnGetVersion() (the library actually
// loaded) is 10000*major + 100*minor + patch in cuDNN 9.
static const char *make_build_info(void) {
    static char buf[256];
    size_t loaded = cudnnGetVersion();
    int n = snprintf(buf, sizeof buf, "built for %s with CUDA %d.%d, cuDNN %d.%d.%d", YP_CUDA_ARCHS,
                     CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, CUDNN_MAJOR, CUDNN_MINOR,
                     CUDNN_PATCHLEVEL);
    if (loaded != (size_t)CUDNN_VERSION && n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, " (loaded %zu.%zu.%zu)", loaded / 10000,
                 loaded / 100 % 100, loaded % 100);
    return buf;
}

extern "C" const char *yp_cuda_build_info(void) {
    static const char *info = make_build_info();  // C++ guarantees one thread-safe initialisation
    return info;
}
