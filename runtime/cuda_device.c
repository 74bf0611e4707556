/* cuda_device.c — the `cuda` device, over the CUDA driver API opened at run time.
 *
 * libkilnrt must load on machines without CUDA, so nothing here links against libcuda or includes
 * cuda.h. The driver is dlopen'ed ("libcuda.so.1") on the first cuda device and every entry point
 * used is resolved by name into a table of function pointers typed from the driver's documented
 * ABI: CUresult is an int, CUdeviceptr an unsigned long long, handles are opaque pointers. Where the
 * driver exports a _v2 symbol (the 64-bit-size versions cuda.h maps the plain names to), the _v2
 * name is resolved. Each device retains the GPU's primary context and makes it current on every
 * entry, so that any host thread may use the device. Every driver call goes through CU_TRY, which
 * turns a failure into a status carrying the call and cuGetErrorString's text.
 */
#include "device_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver ABI, declared locally ----------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
};

/* CUdevice_attribute values */
enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
enum { CU_FUNC_ATTRIBUTE_NUM_REGS = 4, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
enum { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };
enum { CU_STREAM_DEFAULT = 0 };
enum { CU_EVENT_DEFAULT = 0 };
enum { CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1 };
/* CUgraphExecUpdateResultInfo: why an in-place update was refused (read only as a status). */
typedef struct CUgraphExecUpdateResultInfo {
  int result;
  void *error_node, *error_from_node;
} CUgraphExecUpdateResultInfo;
/* Without dynamic shared memory above this, no opt-in attribute is needed. */
#define CU_STATIC_SHARED_LIMIT (48u * 1024u)

/* X-macro of every entry point: (return-less name as resolved, field, parameter list). */
#define CU_ENTRY_POINTS(X)                                                                         \
  X(cuInit, "cuInit", (unsigned int flags))                                                        \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int *version))                                      \
  X(cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                            \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice * dev, int ordinal))                                     \
  X(cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))                       \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *value, int attrib, CUdevice dev))          \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t *bytes, CUdevice dev))                        \
  X(cuMemGetInfo, "cuMemGetInfo_v2", (size_t *free_bytes, size_t *total_bytes))                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext * ctx, CUdevice dev))         \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))                     \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext ctx))                                           \
  X(cuCtxSynchronize, "cuCtxSynchronize", (void))                                                  \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * dptr, size_t bytes))                               \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr dptr))                                                 \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr dst, const void *src, size_t bytes))             \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *dst, CUdeviceptr src, size_t bytes))                   \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", (CUdeviceptr dst, CUdeviceptr src, size_t bytes))             \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                                     \
    (CUdeviceptr dst, const void *src, size_t bytes, CUstream s))                                  \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                                     \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream s))                                        \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                                     \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s))                                  \
  X(cuMemsetD8, "cuMemsetD8_v2", (CUdeviceptr dst, unsigned char value, size_t n))                 \
  X(cuMemsetD8Async, "cuMemsetD8Async",                                                            \
    (CUdeviceptr dst, unsigned char value, size_t n, CUstream s))                                  \
  X(cuModuleLoadData, "cuModuleLoadData", (CUmodule * mod, const void *image))                     \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                                      \
    (CUmodule * mod, const void *image, unsigned int n, int *options, void **values))              \
  X(cuModuleUnload, "cuModuleUnload", (CUmodule mod))                                              \
  X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction * fn, CUmodule mod, const char *name)) \
  X(cuModuleGetGlobal, "cuModuleGetGlobal_v2",                                                     \
    (CUdeviceptr * dptr, size_t *bytes, CUmodule mod, const char *name))                           \
  X(cuFuncSetAttribute, "cuFuncSetAttribute", (CUfunction fn, int attrib, int value))              \
  X(cuFuncGetAttribute, "cuFuncGetAttribute", (int *value, int attrib, CUfunction fn))             \
  X(cuLaunchKernel, "cuLaunchKernel",                                                              \
    (CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
     unsigned shared, CUstream s, void **params, void **extra))                                    \
  X(cuStreamCreate, "cuStreamCreate", (CUstream * s, unsigned int flags))                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream s))                                           \
  X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream s))                                      \
  X(cuEventCreate, "cuEventCreate", (CUevent * ev, unsigned int flags))                            \
  X(cuEventRecord, "cuEventRecord", (CUevent ev, CUstream s))                                      \
  X(cuEventSynchronize, "cuEventSynchronize", (CUevent ev))                                        \
  X(cuEventElapsedTime, "cuEventElapsedTime", (float *ms, CUevent start, CUevent end))             \
  X(cuEventDestroy, "cuEventDestroy_v2", (CUevent ev))                                             \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2", (CUstream s, int mode))                       \
  X(cuStreamEndCapture, "cuStreamEndCapture", (CUstream s, CUgraph * graph))                       \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                                    \
    (CUgraphExec * exec, CUgraph graph, unsigned long long flags))                                 \
  X(cuGraphLaunch, "cuGraphLaunch", (CUgraphExec exec, CUstream s))                                \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec exec))                                  \
  X(cuGraphDestroy, "cuGraphDestroy", (CUgraph graph))                                             \
  X(cuGetErrorString, "cuGetErrorString", (CUresult err, const char **str))                        \
  X(cuGetErrorName, "cuGetErrorName", (CUresult err, const char **str))

typedef struct CudaApi {
  void *lib;
#define X(field, symbol, params) CUresult(*field) params;
  CU_ENTRY_POINTS(X)
#undef X
  /* optional (CUDA 12.0 drivers on): without it a recaptured graph is instantiated anew */
  CUresult (*cuGraphExecUpdate)(CUgraphExec exec, CUgraph graph, CUgraphExecUpdateResultInfo *info);
} CudaApi;

/* Loaded once per process and kept: unloading a driver is never worth the races. */
static CudaApi cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static KilnRtStatus cu_load_status;
static char cu_load_message[512];

static void load_driver(void) {
  cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!cu.lib) {
    const char *why = dlerror();
    cu_load_status = KILN_RT_ERROR_NO_DEVICE;
    snprintf(cu_load_message, sizeof cu_load_message,
             "no CUDA driver: cannot open libcuda.so.1 (%s)", why ? why : "not found");
    return;
  }
  void *sym;
#define X(field, symbol, params)                                                                   \
  sym = dlsym(cu.lib, symbol);                                                                     \
  if (!sym) {                                                                                      \
    cu_load_status = KILN_RT_ERROR_NO_DEVICE;                                                      \
    snprintf(cu_load_message, sizeof cu_load_message,                                              \
             "the CUDA driver is too old: libcuda.so.1 lacks %s", symbol);                         \
    return;                                                                                        \
  }                                                                                                \
  memcpy(&cu.field, &sym, sizeof sym);
  CU_ENTRY_POINTS(X)
#undef X
  sym = dlsym(cu.lib, "cuGraphExecUpdate_v2");
  memcpy(&cu.cuGraphExecUpdate, &sym, sizeof sym);
  CUresult r = cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *s = NULL;
    if (cu.cuGetErrorString(r, &s) != CUDA_SUCCESS || !s) s = "unknown error";
    cu_load_status = KILN_RT_ERROR_NO_DEVICE;
    snprintf(cu_load_message, sizeof cu_load_message,
             "the CUDA driver found no usable GPU: cuInit: %s (%d)", s, r);
    return;
  }
  cu_load_status = KILN_RT_OK;
}

/* A failed driver call as a status: the message names the call and the driver's explanation. */
static KilnRtStatus cu_fail(CUresult r, const char *call) {
  const char *name = NULL, *text = NULL;
  if (cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_UNKNOWN";
  if (cu.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text) text = "unknown error";
  KilnRtStatus st = KILN_RT_ERROR_DRIVER;
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY: st = KILN_RT_ERROR_OUT_OF_MEMORY; break;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_INVALID_DEVICE: st = KILN_RT_ERROR_NO_DEVICE; break;
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: st = KILN_RT_ERROR_LOAD; break;
  case CUDA_ERROR_NOT_FOUND: st = KILN_RT_ERROR_NOT_FOUND; break;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: st = KILN_RT_ERROR_LAUNCH; break;
  case CUDA_ERROR_LAUNCH_TIMEOUT: st = KILN_RT_ERROR_TIMEOUT; break;
  default: break;
  }
  return kiln_rt_fail(st, "%s failed: %s (%s, %d)", call, text, name, r);
}

#define CU_TRY(call)                                                                               \
  do {                                                                                             \
    CUresult cu_r_ = cu.call;                                                                      \
    if (cu_r_ != CUDA_SUCCESS) return cu_fail(cu_r_, #call);                                       \
  } while (0)

/* ---- objects ------------------------------------------------------------------------------ */

typedef struct CudaDevice {
  CUdevice device;
  CUcontext ctx;
} CudaDevice;

typedef struct CudaFunction {
  CUfunction fn;
  uint32_t shared_opt_in; /* the dynamic shared memory limit set so far */
  uint32_t dyn_shared;    /* the kernel's own dynamic arena (kiln_dsmem_NAME), 0 if none */
} CudaFunction;

typedef struct CudaGraph {
  CUgraph graph;
  CUgraphExec exec;
} CudaGraph;

static CudaDevice *cuda_of(KilnRtDevice *dev) { return dev->impl; }

/* Driver calls act on the calling thread's current context. */
static KilnRtStatus enter(KilnRtDevice *dev) {
  CU_TRY(cuCtxSetCurrent(cuda_of(dev)->ctx));
  return KILN_RT_OK;
}

#define ENTER(dev)                                                                                 \
  do {                                                                                             \
    KilnRtStatus enter_st_ = enter(dev);                                                           \
    if (enter_st_ != KILN_RT_OK) return enter_st_;                                                 \
  } while (0)

static CUstream stream_of(KilnRtStream *s) { return s ? (CUstream)s->impl : NULL; }
static CUdeviceptr dptr_of(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* ---- the vtable --------------------------------------------------------------------------- */

static void cuda_destroy(KilnRtDevice *dev) {
  CudaDevice *c = cuda_of(dev);
  cu.cuDevicePrimaryCtxRelease(c->device);
  free(c);
}

static KilnRtStatus cuda_info(KilnRtDevice *dev, KilnRtDeviceInfo *out) {
  CudaDevice *c = cuda_of(dev);
  KilnRtDeviceInfo info;
  memset(&info, 0, sizeof info);
  info.kind = KILN_RT_DEVICE_CUDA;
  CU_TRY(cuDeviceGetName(info.name, (int)sizeof info.name, c->device));
  CU_TRY(cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                              c->device));
  CU_TRY(cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                              c->device));
  CU_TRY(cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->device));
  int smem = 0;
  CU_TRY(cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                              c->device));
  info.shared_mem_per_block = (size_t)smem;
  CU_TRY(cuDeviceTotalMem(&info.total_mem, c->device));
  CU_TRY(cuDriverGetVersion(&info.driver_version));
  /* what is free now, in this device's context (other processes' allocations count) */
  ENTER(dev);
  size_t total = 0;
  CU_TRY(cuMemGetInfo(&info.free_mem, &total));
  *out = info;
  return KILN_RT_OK;
}

static KilnRtStatus cuda_synchronize(KilnRtDevice *dev) {
  ENTER(dev);
  CU_TRY(cuCtxSynchronize());
  return KILN_RT_OK;
}

static KilnRtStatus cuda_raw_alloc(KilnRtDevice *dev, size_t bytes, void **ptr) {
  ENTER(dev);
  CUdeviceptr d = 0;
  CU_TRY(cuMemAlloc(&d, bytes));
  *ptr = (void *)(uintptr_t)d;
  return KILN_RT_OK;
}

static void cuda_raw_free(KilnRtDevice *dev, void *ptr) {
  /* Nothing to report to: the cache frees during destroy and release. */
  if (enter(dev) == KILN_RT_OK) cu.cuMemFree(dptr_of(ptr));
}

static KilnRtStatus cuda_memcpy(KilnRtDevice *dev, KilnRtCopyKind kind, void *dst, const void *src,
                                size_t bytes, KilnRtStream *stream) {
  ENTER(dev);
  CUstream s = stream_of(stream);
  switch (kind) {
  case KILN_RT_COPY_HTOD:
    if (stream)
      CU_TRY(cuMemcpyHtoDAsync(dptr_of(dst), src, bytes, s));
    else
      CU_TRY(cuMemcpyHtoD(dptr_of(dst), src, bytes));
    break;
  case KILN_RT_COPY_DTOH:
    if (stream)
      CU_TRY(cuMemcpyDtoHAsync(dst, dptr_of(src), bytes, s));
    else
      CU_TRY(cuMemcpyDtoH(dst, dptr_of(src), bytes));
    break;
  case KILN_RT_COPY_DTOD:
    if (stream) {
      CU_TRY(cuMemcpyDtoDAsync(dptr_of(dst), dptr_of(src), bytes, s));
    } else {
      /* cuMemcpyDtoD may return before the copy ends; the default stream promises completion. */
      CU_TRY(cuMemcpyDtoD(dptr_of(dst), dptr_of(src), bytes));
      CU_TRY(cuCtxSynchronize());
    }
    break;
  }
  return KILN_RT_OK;
}

static KilnRtStatus cuda_memset(KilnRtDevice *dev, void *dst, int value, size_t bytes,
                                KilnRtStream *stream) {
  ENTER(dev);
  if (stream) {
    CU_TRY(cuMemsetD8Async(dptr_of(dst), (unsigned char)value, bytes, stream_of(stream)));
  } else {
    CU_TRY(cuMemsetD8(dptr_of(dst), (unsigned char)value, bytes));
    CU_TRY(cuCtxSynchronize());
  }
  return KILN_RT_OK;
}

static KilnRtStatus cuda_module_load(KilnRtDevice *dev, KilnRtModuleFormat format,
                                     const void *image, size_t size, KilnRtModule *mod) {
  if (format != KILN_RT_MODULE_PTX && format != KILN_RT_MODULE_CUBIN)
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                        "the cuda device loads PTX and cubin modules only");
  ENTER(dev);
  /* The driver reads PTX up to a NUL, which the caller's buffer need not have. */
  char *copy = malloc(size + 1);
  if (!copy)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory loading a module");
  memcpy(copy, image, size);
  copy[size] = '\0';

  char log[2048] = "";
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule m = NULL;
  CUresult r = cu.cuModuleLoadDataEx(&m, copy, 2, options, values);
  free(copy);
  if (r != CUDA_SUCCESS) {
    KilnRtStatus st = cu_fail(r, "cuModuleLoadDataEx");
    if (log[0]) {
      char first[1024];
      snprintf(first, sizeof first, "%s", kiln_rt_last_error());
      st = kiln_rt_fail(st == KILN_RT_ERROR_DRIVER ? KILN_RT_ERROR_LOAD : st, "%s\n%s", first, log);
    }
    return st;
  }
  mod->impl = m;
  return KILN_RT_OK;
}

static void cuda_module_unload(KilnRtModule *mod) {
  if (enter(mod->dev) == KILN_RT_OK) cu.cuModuleUnload((CUmodule)mod->impl);
  for (KilnRtFunction *fn = mod->functions; fn; fn = fn->next) free(fn->impl);
}

/* A Kiln kernel whose shared arena is above 48 KiB declares it `.extern .shared` and records its
 * size as `.const .u32 kiln_dsmem_NAME` (mlir-dialect/gpu/ptx.c): launches pass at least that
 * much, so callers need not know.  No such symbol: no arena of its own (0). */
static KilnRtStatus read_dynamic_arena(KilnRtModule *mod, const char *name, uint32_t *bytes) {
  char sym[512];
  *bytes = 0;
  if (snprintf(sym, sizeof sym, "kiln_dsmem_%s", name) >= (int)sizeof sym) return KILN_RT_OK;
  CUdeviceptr p = 0;
  size_t size = 0;
  CUresult r = cu.cuModuleGetGlobal(&p, &size, (CUmodule)mod->impl, sym);
  if (r == CUDA_ERROR_NOT_FOUND) return KILN_RT_OK;
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuModuleGetGlobal");
  if (size != sizeof *bytes)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD, "kernel '%s': %s has %zu bytes, expected 4", name, sym,
                        size);
  CU_TRY(cuMemcpyDtoH(bytes, p, sizeof *bytes));
  return KILN_RT_OK;
}

/* The kernel's offset record, the .const u32 array kiln_offsets_NAME = {bits, n, element bytes
 * of its n parameters} (mlir-dialect/emit.c), handed to kiln_rt_launch's check
 * (offset_check.c); a module without it (an older one) leaves the kernel unchecked. */
static KilnRtStatus read_offset_record(KilnRtModule *mod, KilnRtFunction *fn) {
  char sym[300];
  if (snprintf(sym, sizeof sym, "kiln_offsets_%s", fn->name) >= (int)sizeof sym) return KILN_RT_OK;
  CUdeviceptr p = 0;
  size_t size = 0;
  CUresult r = cu.cuModuleGetGlobal(&p, &size, (CUmodule)mod->impl, sym);
  if (r == CUDA_ERROR_NOT_FOUND) return KILN_RT_OK;
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuModuleGetGlobal");
  uint32_t words[2 + 4096];
  if (size < 8 || size % 4 != 0 || size > sizeof words)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD, "kernel '%s': %s has %zu bytes", fn->name, sym, size);
  CU_TRY(cuMemcpyDtoH(words, p, size));
  if (words[1] != size / 4 - 2)
    return kiln_rt_fail(KILN_RT_ERROR_LOAD, "kernel '%s': %s lists %u parameters in %zu bytes",
                        fn->name, sym, words[1], size);
  return kiln_rt_function_set_offsets(fn, words[0], words[1], words + 2);
}

static KilnRtStatus cuda_get_function(KilnRtModule *mod, KilnRtFunction *fn) {
  ENTER(mod->dev);
  CUfunction f = NULL;
  CUresult r = cu.cuModuleGetFunction(&f, (CUmodule)mod->impl, fn->name);
  if (r == CUDA_ERROR_NOT_FOUND)
    return kiln_rt_fail(KILN_RT_ERROR_NOT_FOUND, "no kernel '%s' in the module", fn->name);
  if (r != CUDA_SUCCESS) return cu_fail(r, "cuModuleGetFunction");
  CudaFunction *cf = calloc(1, sizeof *cf);
  if (!cf) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a function");
  cf->fn = f;
  cf->shared_opt_in = CU_STATIC_SHARED_LIMIT;
  fn->impl = cf;
  /* The registers per thread ptxas assembled the kernel with, for kiln_rt_launch's check. */
  int regs = 0;
  CU_TRY(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
  fn->registers = regs > 0 ? (uint32_t)regs : 0;
  KilnRtStatus st = read_offset_record(mod, fn);
  return st == KILN_RT_OK ? read_dynamic_arena(mod, fn->name, &cf->dyn_shared) : st;
}

static KilnRtStatus cuda_launch(KilnRtFunction *fn, const KilnRtLaunchConfig *cfg, void **args,
                                KilnRtStream *stream) {
  if (cfg->block_threads == 0 || cfg->block_threads > 1024)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "launch of '%s': block_threads = %u is outside 1..1024", fn->name,
                        cfg->block_threads);
  ENTER(fn->module->dev);
  CudaFunction *cf = fn->impl;
  uint32_t shared = cfg->shared_bytes > cf->dyn_shared ? cfg->shared_bytes : cf->dyn_shared;
  if (shared > cf->shared_opt_in) {
    /* Above 48 KiB the kernel must opt in to the larger dynamic shared memory. */
    CU_TRY(
        cuFuncSetAttribute(cf->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared));
    cf->shared_opt_in = shared;
  }
  CUresult r = cu.cuLaunchKernel(cf->fn, cfg->grid[0], cfg->grid[1], cfg->grid[2],
                                 cfg->block_threads, 1, 1, shared, stream_of(stream), args, NULL);
  if (r != CUDA_SUCCESS) {
    KilnRtStatus st = cu_fail(r, "cuLaunchKernel");
    return st == KILN_RT_ERROR_DRIVER ? kiln_rt_fail(KILN_RT_ERROR_LAUNCH, "launch of '%s': %s",
                                                     fn->name, kiln_rt_last_error())
                                      : st;
  }
  if (!stream) CU_TRY(cuCtxSynchronize()); /* the default stream completes before returning */
  return KILN_RT_OK;
}

static KilnRtStatus cuda_stream_create(KilnRtDevice *dev, KilnRtStream *stream) {
  ENTER(dev);
  CUstream s = NULL;
  CU_TRY(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  stream->impl = s;
  return KILN_RT_OK;
}

static void cuda_stream_destroy(KilnRtStream *stream) {
  if (enter(stream->dev) != KILN_RT_OK) return;
  CUstream s = stream_of(stream);
  if (stream->capturing) {
    CUgraph g = NULL;
    if (cu.cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g) cu.cuGraphDestroy(g);
  }
  cu.cuStreamSynchronize(s);
  cu.cuStreamDestroy(s);
}

static KilnRtStatus cuda_stream_synchronize(KilnRtStream *stream) {
  ENTER(stream->dev);
  CU_TRY(cuStreamSynchronize(stream_of(stream)));
  return KILN_RT_OK;
}

static KilnRtStatus cuda_event_create(KilnRtDevice *dev, KilnRtEvent *ev) {
  ENTER(dev);
  CUevent e = NULL;
  CU_TRY(cuEventCreate(&e, CU_EVENT_DEFAULT));
  ev->impl = e;
  return KILN_RT_OK;
}

static void cuda_event_destroy(KilnRtEvent *ev) {
  if (enter(ev->dev) == KILN_RT_OK) cu.cuEventDestroy((CUevent)ev->impl);
}

static KilnRtStatus cuda_event_record(KilnRtEvent *ev, KilnRtStream *stream) {
  ENTER(ev->dev);
  CU_TRY(cuEventRecord((CUevent)ev->impl, stream_of(stream)));
  return KILN_RT_OK;
}

static KilnRtStatus cuda_event_synchronize(KilnRtEvent *ev) {
  ENTER(ev->dev);
  CU_TRY(cuEventSynchronize((CUevent)ev->impl));
  return KILN_RT_OK;
}

static KilnRtStatus cuda_event_elapsed_ms(KilnRtEvent *start, KilnRtEvent *end, float *ms) {
  ENTER(start->dev);
  CU_TRY(cuEventElapsedTime(ms, (CUevent)start->impl, (CUevent)end->impl));
  return KILN_RT_OK;
}

static KilnRtStatus cuda_begin_capture(KilnRtStream *stream) {
  ENTER(stream->dev);
  /* Thread-local mode: other threads may keep allocating while this one captures. */
  CU_TRY(cuStreamBeginCapture(stream_of(stream), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  return KILN_RT_OK;
}

static KilnRtStatus cuda_end_capture(KilnRtStream *stream, KilnRtGraph *graph) {
  ENTER(stream->dev);
  CudaGraph *g = calloc(1, sizeof *g);
  CUgraph cg = NULL;
  CUresult r = cu.cuStreamEndCapture(stream_of(stream), &cg);
  if (r != CUDA_SUCCESS || !g) {
    if (cg) cu.cuGraphDestroy(cg);
    free(g);
    if (r != CUDA_SUCCESS) return cu_fail(r, "cuStreamEndCapture");
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a graph");
  }
  r = cu.cuGraphInstantiateWithFlags(&g->exec, cg, 0);
  if (r != CUDA_SUCCESS) {
    cu.cuGraphDestroy(cg);
    free(g);
    return cu_fail(r, "cuGraphInstantiateWithFlags");
  }
  g->graph = cg;
  graph->impl = g;
  return KILN_RT_OK;
}

/* The capture on stream becomes graph's work: the executable graph updated in place when the
 * driver can (same nodes, other parameters), else instantiated anew; the old one is kept on
 * any failure. */
static KilnRtStatus cuda_recapture(KilnRtStream *stream, KilnRtGraph *graph) {
  ENTER(stream->dev);
  CudaGraph *g = graph->impl;
  CUgraph cg = NULL;
  CUresult r = cu.cuStreamEndCapture(stream_of(stream), &cg);
  if (r != CUDA_SUCCESS) {
    if (cg) cu.cuGraphDestroy(cg);
    return cu_fail(r, "cuStreamEndCapture");
  }
  CUgraphExecUpdateResultInfo info = {0};
  if (cu.cuGraphExecUpdate && cu.cuGraphExecUpdate(g->exec, cg, &info) == CUDA_SUCCESS) {
    cu.cuGraphDestroy(g->graph);
    g->graph = cg;
    return KILN_RT_OK;
  }
  CUgraphExec exec = NULL;
  r = cu.cuGraphInstantiateWithFlags(&exec, cg, 0);
  if (r != CUDA_SUCCESS) {
    cu.cuGraphDestroy(cg);
    return cu_fail(r, "cuGraphInstantiateWithFlags");
  }
  cu.cuGraphExecDestroy(g->exec);
  cu.cuGraphDestroy(g->graph);
  g->exec = exec;
  g->graph = cg;
  return KILN_RT_OK;
}

static KilnRtStatus cuda_graph_launch(KilnRtGraph *graph, KilnRtStream *stream) {
  ENTER(graph->dev);
  CudaGraph *g = graph->impl;
  CU_TRY(cuGraphLaunch(g->exec, stream_of(stream)));
  if (!stream) CU_TRY(cuCtxSynchronize());
  return KILN_RT_OK;
}

static void cuda_graph_destroy(KilnRtGraph *graph) {
  CudaGraph *g = graph->impl;
  if (enter(graph->dev) == KILN_RT_OK) {
    cu.cuGraphExecDestroy(g->exec);
    cu.cuGraphDestroy(g->graph);
  }
  free(g);
}

static const KilnRtDeviceOps cuda_ops = {
    .destroy = cuda_destroy,
    .info = cuda_info,
    .synchronize = cuda_synchronize,
    .raw_alloc = cuda_raw_alloc,
    .raw_free = cuda_raw_free,
    .memcpy = cuda_memcpy,
    .memset = cuda_memset,
    .module_load = cuda_module_load,
    .module_unload = cuda_module_unload,
    .get_function = cuda_get_function,
    .launch = cuda_launch,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_synchronize = cuda_event_synchronize,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .begin_capture = cuda_begin_capture,
    .end_capture = cuda_end_capture,
    .recapture = cuda_recapture,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .comm_create = kiln_rt_cuda_comm_create,
    .comm_destroy = kiln_rt_cuda_comm_destroy,
    .comm_allreduce_sum_f32 = kiln_rt_cuda_comm_allreduce_sum_f32,
};

int kiln_rt_cuda_ordinal(const KilnRtDevice *dev) {
  return (int)cuda_of((KilnRtDevice *)dev)->device;
}

KilnRtStatus kiln_rt_cuda_device_init(KilnRtDevice *dev, int ordinal) {
  pthread_once(&cu_once, load_driver);
  if (cu_load_status != KILN_RT_OK) return kiln_rt_fail(cu_load_status, "%s", cu_load_message);

  int count = 0;
  CU_TRY(cuDeviceGetCount(&count));
  if (ordinal >= count)
    return kiln_rt_fail(KILN_RT_ERROR_NO_DEVICE, "no GPU cuda:%d: the CUDA driver sees %d device%s",
                        ordinal, count, count == 1 ? "" : "s");
  CudaDevice *c = calloc(1, sizeof *c);
  if (!c) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a cuda device");
  CUresult r = cu.cuDeviceGet(&c->device, ordinal);
  if (r == CUDA_SUCCESS) r = cu.cuDevicePrimaryCtxRetain(&c->ctx, c->device);
  if (r != CUDA_SUCCESS) {
    free(c);
    return cu_fail(r, "cuDevicePrimaryCtxRetain");
  }
  dev->ops = &cuda_ops;
  dev->kind = KILN_RT_DEVICE_CUDA;
  dev->impl = c;
  return KILN_RT_OK;
}
