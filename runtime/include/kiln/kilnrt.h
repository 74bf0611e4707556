/* kilnrt.h — the Kiln runtime: devices, memory, modules, launches, streams, events, graphs.
 *
 * This is the only header of libkilnrt that other code may include. It needs neither CUDA nor
 * MLIR: the CUDA driver is opened with dlopen at run time. One API drives every device kind
 * (`cpu`, `emu`, `cuda`); see docs/runtime.md for the semantics of each call on each device.
 *
 * Conventions that hold for every function below:
 * - Functions returning KilnRtStatus return KILN_RT_OK on success. On failure they leave their
 *   out-parameters untouched and set a thread-local message readable with kiln_rt_last_error().
 *   Successful calls do not clear that message (like errno).
 * - Whatever a `*_create` or `*_load` hands out is owned by the caller and released with the
 *   matching `*_destroy`. Objects made from a device (memory, modules, streams, events, graphs)
 *   must be destroyed before that device; memory still allocated when the device is destroyed is
 *   freed with it.
 * - A NULL stream is the default stream: work on it completes before the call returns.
 * - The library never exits or aborts the process on a failure.
 */
#ifndef KILN_KILNRT_H
#define KILN_KILNRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_RT_VERSION_MAJOR 0
#define KILN_RT_VERSION_MINOR 1
#define KILN_RT_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH: what kiln_rt_version() returns for this header. */
#define KILN_RT_VERSION                                                                            \
  (KILN_RT_VERSION_MAJOR * 10000 + KILN_RT_VERSION_MINOR * 100 + KILN_RT_VERSION_PATCH)

/* The version of the library actually loaded, encoded like KILN_RT_VERSION; compare the major
 * part with KILN_RT_VERSION_MAJOR to detect a header/library mismatch. */
int kiln_rt_version(void);
/* The same as "MAJOR.MINOR.PATCH"; a static string. */
const char *kiln_rt_version_string(void);

typedef enum KilnRtStatus {
  KILN_RT_OK = 0,
  KILN_RT_ERROR_INVALID_ARGUMENT, /* a caller mistake: NULL handle, bad size, wrong state */
  KILN_RT_ERROR_NO_DEVICE,        /* the device kind or ordinal is not present here */
  KILN_RT_ERROR_UNSUPPORTED,      /* the device cannot do this (yet) */
  KILN_RT_ERROR_OUT_OF_MEMORY,
  KILN_RT_ERROR_IO,        /* temp files, reading/writing */
  KILN_RT_ERROR_LOAD,      /* a module image could not be linked or loaded */
  KILN_RT_ERROR_NOT_FOUND, /* no kernel of that name in the module */
  KILN_RT_ERROR_LAUNCH,    /* the launch was rejected or failed */
  KILN_RT_ERROR_DRIVER,    /* any other failure reported by the device driver */
  KILN_RT_ERROR_TIMEOUT,
  KILN_RT_STATUS_COUNT
} KilnRtStatus;

/* The enumerator's name ("KILN_RT_ERROR_NO_DEVICE"); "KILN_RT_STATUS_UNKNOWN" if out of range.
 * A static string. */
const char *kiln_rt_status_name(KilnRtStatus status);
/* Detail of the last failure on the calling thread ("" if none yet). The string belongs to the
 * thread and stays valid until its next failing call into the runtime. */
const char *kiln_rt_last_error(void);
/* Sets the calling thread's last-error message (printf-style, truncated to 4095 characters)
 * and returns status: for code built on the runtime, such as the libraries `kiln lib`
 * generates, that refuses a call and reports why the way the runtime does. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
KilnRtStatus
kiln_rt_set_error(KilnRtStatus status, const char *fmt, ...);

typedef struct KilnRtDevice KilnRtDevice;
typedef struct KilnRtModule KilnRtModule;
typedef struct KilnRtFunction KilnRtFunction;
typedef struct KilnRtStream KilnRtStream;
typedef struct KilnRtEvent KilnRtEvent;
typedef struct KilnRtGraph KilnRtGraph;

/* ---- devices ------------------------------------------------------------------------------ */

typedef enum KilnRtDeviceKind {
  KILN_RT_DEVICE_CPU,
  KILN_RT_DEVICE_EMU,
  KILN_RT_DEVICE_CUDA,
  KILN_RT_DEVICE_KIND_COUNT
} KilnRtDeviceKind;

typedef struct KilnRtDeviceInfo {
  KilnRtDeviceKind kind;
  char name[128];              /* "cpu", or the GPU's marketing name */
  int cc_major, cc_minor;      /* compute capability; 0 on cpu */
  int sm_count;                /* multiprocessors; on cpu, the number of worker threads */
  size_t shared_mem_per_block; /* opt-in maximum of dynamic shared memory per block; 0 on cpu */
  size_t total_mem;            /* device memory; physical memory on cpu */
  int driver_version;          /* CUDA driver version (12040 = 12.4); 0 on cpu */
  int num_threads;             /* cpu: worker threads running programs; cuda: 0 */
  size_t free_mem;             /* cuda: device memory free at the call (cuMemGetInfo); 0 on cpu */
} KilnRtDeviceInfo;

/* Opens a device. spec: "cpu", "emu", "cuda" (= "cuda:0") or "cuda:N".
 * On success *out is a new device owned by the caller (kiln_rt_device_destroy).
 * Fails with NO_DEVICE when libcuda or the GPU is missing, UNSUPPORTED for a kind not built,
 * INVALID_ARGUMENT for a malformed spec. */
KilnRtStatus kiln_rt_device_create(const char *spec, KilnRtDevice **out);
/* Frees the device and any memory still allocated on it. NULL is a no-op. */
void kiln_rt_device_destroy(KilnRtDevice *dev);
KilnRtStatus kiln_rt_device_info(KilnRtDevice *dev, KilnRtDeviceInfo *out);
/* The kind the device was created as. */
KilnRtDeviceKind kiln_rt_device_kind(const KilnRtDevice *dev);
/* Waits until all work queued on the device (every stream) has finished. */
KilnRtStatus kiln_rt_device_synchronize(KilnRtDevice *dev);

/* ---- memory ------------------------------------------------------------------------------- */

/* Allocates `bytes` of device memory (on cpu, host memory aligned to 64 bytes) and stores its
 * device address in *dptr. bytes == 0 yields *dptr = NULL and OK. Memory comes from a caching
 * allocator: freed blocks are kept per size class and reused; when the device runs out, the cache
 * is released and the allocation retried once before OUT_OF_MEMORY is returned. Thread-safe. */
KilnRtStatus kiln_rt_malloc(KilnRtDevice *dev, size_t bytes, void **dptr);
/* Returns memory from kiln_rt_malloc to the cache. NULL is a no-op; an address not allocated on
 * this device is INVALID_ARGUMENT. Not stream-ordered: free only after the work using it ended. */
KilnRtStatus kiln_rt_free(KilnRtDevice *dev, void *dptr);

/* The allocation of dev (from kiln_rt_malloc, not yet freed) that holds address p: its start in
 * *base and the bytes asked for in *bytes, so that a caller can check that a view into it has
 * room for what it will touch (a generated library's checked mode does, per pointer).
 * INVALID_ARGUMENT naming p when no live allocation of dev holds it. Costs a scan of the
 * device's live allocations. */
KilnRtStatus kiln_rt_mem_find(KilnRtDevice *dev, const void *p, void **base, size_t *bytes);

/* Says that the allocation starting at base (from kiln_rt_malloc on dev) holds separate
 * tensors, the i-th ending at byte ends[i] (ascending, the last at most the bytes asked for;
 * what lies past the last end is one more part). The launch check of kernels compiled with
 * 32-bit offsets then counts a pointer argument's elements to the end of its part instead of
 * the end of the allocation, so that one arena carved into tensors (the BERT trainer's memory
 * plan) is judged tensor by tensor. The ends are copied; a later call replaces them;
 * kiln_rt_free drops them. INVALID_ARGUMENT when base does not start a live allocation or the
 * ends are not ascending within it. */
KilnRtStatus kiln_rt_mem_set_parts(KilnRtDevice *dev, void *base, const size_t *ends, size_t n);

/* The part (kiln_rt_mem_set_parts) of dev's live allocation that holds address p: its start in
 * *start and its bytes in *bytes; the whole allocation (as kiln_rt_mem_find) where none was
 * set. A generated library's checked mode bounds each pointer by it, so that a buffer of an
 * arena carved into tensors is judged by its own tensor, not by the rest of the arena behind
 * it. INVALID_ARGUMENT naming p when no live allocation of dev holds it. */
KilnRtStatus kiln_rt_mem_find_part(KilnRtDevice *dev, const void *p, void **start, size_t *bytes);

/* Copies and sets. stream NULL = default stream, complete on return. With a stream they are
 * queued in stream order (on cpu they still run at once, which is a valid ordering). On a stream
 * being captured they are recorded into the graph instead (pointers, not contents). */
KilnRtStatus kiln_rt_memcpy_htod(KilnRtDevice *dev, void *dst, const void *src, size_t bytes,
                                 KilnRtStream *stream);
KilnRtStatus kiln_rt_memcpy_dtoh(KilnRtDevice *dev, void *dst, const void *src, size_t bytes,
                                 KilnRtStream *stream);
KilnRtStatus kiln_rt_memcpy_dtod(KilnRtDevice *dev, void *dst, const void *src, size_t bytes,
                                 KilnRtStream *stream);
/* Sets `bytes` bytes at dst to (unsigned char)value. */
KilnRtStatus kiln_rt_memset(KilnRtDevice *dev, void *dst, int value, size_t bytes,
                            KilnRtStream *stream);

typedef struct KilnRtMemStats {
  size_t bytes_in_use;      /* handed out and not yet freed (rounded to the size class) */
  size_t bytes_cached;      /* freed, held by the cache for reuse */
  size_t peak_bytes_in_use; /* high-water mark of bytes_in_use */
  size_t bytes_reserved;    /* bytes_in_use + bytes_cached: what the device really holds */
  size_t num_allocs;        /* successful kiln_rt_malloc calls with bytes > 0 */
  size_t num_cache_hits;    /* of those, served from the cache */
  size_t num_device_allocs; /* allocations that reached the device's own allocator */
} KilnRtMemStats;

/* Snapshot of the caching allocator's counters for this device. */
KilnRtStatus kiln_rt_mem_stats(KilnRtDevice *dev, KilnRtMemStats *out);
/* Gives every cached (free) block back to the device; blocks in use are untouched. */
KilnRtStatus kiln_rt_mem_release_cached(KilnRtDevice *dev);

/* ---- modules and functions ---------------------------------------------------------------- */

typedef enum KilnRtModuleFormat {
  KILN_RT_MODULE_HOST_OBJECT, /* cpu: a relocatable, position-independent host object (.o) */
  KILN_RT_MODULE_HOST_SHARED, /* cpu: a host shared object (.so) */
  KILN_RT_MODULE_PTX,         /* cuda: PTX text (NUL-terminated or not) */
  KILN_RT_MODULE_CUBIN,       /* cuda: a cubin / fatbin image */
  KILN_RT_MODULE_FORMAT_COUNT
} KilnRtModuleFormat;

/* Loads a module from `size` bytes at `image` (copied; the caller keeps the buffer).
 * On cpu and emu a host object is linked with the system C compiler (`cc -shared ... -lm`, or
 * $KILN_CC) and opened with dlopen; a host shared object is opened as it is (no compiler). On success *out is owned by the caller (kiln_rt_module_destroy).
 * Fails with LOAD (and the linker's or driver's log in kiln_rt_last_error) for a bad image,
 * UNSUPPORTED for a format the device cannot run, IO for temp file trouble. */
KilnRtStatus kiln_rt_module_load(KilnRtDevice *dev, KilnRtModuleFormat format, const void *image,
                                 size_t size, KilnRtModule **out);
/* Links a host object into a host shared object with the system C compiler, as module_load
 * does, so that a program can later load the result where no compiler is installed (generated
 * libraries embed host shared objects). *so gets `*so_size` bytes the caller frees with free(). */
KilnRtStatus kiln_rt_host_object_link(const void *object, size_t size, void **so, size_t *so_size);

/* Host code (the cpu and emu devices' kernels) is built for a CPU target: "native" (this
 * machine's CPU and every feature it has) or a portable baseline ("generic", "x86-64-v2",
 * "x86-64-v3", "x86-64-v4" on x86-64; "generic" on aarch64). This gives the CPU name LLVM builds
 * for ("native": this host) and the CPU features (comma-separated, LLVM's names) code built for
 * the target may use: for "native" every feature this CPU has. INVALID_ARGUMENT, naming the
 * targets there are, for an unknown name. */
KilnRtStatus kiln_rt_host_cpu_target(const char *cpu, char *llvm_cpu, size_t llvm_cap,
                                     char *features, size_t features_cap);
/* OK when this CPU has every feature of the comma-separated list (NULL or "": none); else
 * UNSUPPORTED, naming the first missing feature and the CPU target `cpu` the code was built for.
 * The environment variable KILN_RT_HOST_CPU_FEATURES, when set, replaces the detected features
 * (for tests that play a CPU without some feature). */
KilnRtStatus kiln_rt_host_cpu_check(const char *cpu, const char *features);

/* One image of a kernel module among several builds of it (generated libraries embed a cubin
 * per GPU architecture plus PTX, or a host shared object). */
typedef struct KilnRtImage {
  KilnRtModuleFormat format;
  int arch;         /* PTX/cubin: the sm it was built for (80 = sm_80, 90 = sm_90); else 0 */
  const void *data; /* borrowed */
  size_t size;
  /* Host images: the CPU target they were built for and the features it may use (see
   * kiln_rt_host_cpu_check, which kiln_rt_module_load_best runs first); NULL: not recorded. */
  const char *cpu;
  const char *cpu_features;
} KilnRtImage;

/* Pure: which of images[0..n) runs on a device of `kind` whose compute capability is `sm`
 * (major * 10 + minor; ignored on cpu and emu). Returns its index, or -1 when none can run.
 * cuda: the cubin built for exactly sm; else a cubin of the same major built for a lower minor
 * (SASS runs on later minors of its major); else, the PTX with the highest arch <= sm, which
 * the driver JIT-compiles. With allow_cubin false only PTX is considered (the fallback when a
 * cubin does not load). cpu and emu: the first host object or host shared object. */
int kiln_rt_image_select(const KilnRtImage *images, size_t n, KilnRtDeviceKind kind, int sm,
                         int allow_cubin);
/* Loads the image kiln_rt_image_select picks for dev; when a cubin fails to load and a PTX
 * fallback exists, loads that instead. *chosen (may be NULL) gets the index loaded. UNSUPPORTED
 * (with the device's architecture in the message) when no image fits, or when the host image
 * needs a CPU feature this machine lacks (the feature named), else as kiln_rt_module_load. */
KilnRtStatus kiln_rt_module_load_best(KilnRtDevice *dev, const KilnRtImage *images, size_t n,
                                      int *chosen, KilnRtModule **out);
/* Unloads the module and frees its functions. NULL is a no-op. No launch of its functions may
 * be in flight or captured in a live graph. */
void kiln_rt_module_destroy(KilnRtModule *mod);
/* Looks a kernel up by its Kiln name (on cpu the symbol kiln_cpu_<name>, on cuda the entry
 * <name>). *out is owned by the module and lives until kiln_rt_module_destroy; repeated lookups
 * return the same handle. NOT_FOUND if there is no such kernel. */
KilnRtStatus kiln_rt_module_get_function(KilnRtModule *mod, const char *kernel_name,
                                         KilnRtFunction **out);
/* Declares the byte size of each kernel argument (args[i] points to sizes[i] bytes). Needed
 * before a launch is captured into a graph on cpu, which copies argument values at capture time.
 * The sizes are copied; calling it again replaces them. */
KilnRtStatus kiln_rt_function_set_arg_sizes(KilnRtFunction *fn, const size_t *sizes, size_t n);
/* Attaches a text saying what the code is (a generated library gives each variant's config and
 * promises, e.g. "BM=128,BN=128,...,num_warps=8, promises sak=1,K%16, tuned"), copied; calling
 * it again replaces it. kiln_rt_function_about reads it ("" when none was set) and
 * kiln_rt_function_name the kernel's name; both live as long as the function. */
KilnRtStatus kiln_rt_function_set_about(KilnRtFunction *fn, const char *about);
const char *kiln_rt_function_about(const KilnRtFunction *fn);
const char *kiln_rt_function_name(const KilnRtFunction *fn);

/* On GPUs (cuda and emu) grid[1] and grid[2] are at most this (grid[0] at most 2^31 - 1). */
#define KILN_RT_GPU_MAX_GRID_YZ 65535u
/* A GPU's register file (32-bit registers per SM, which one block may fill) and the most one
 * thread may have, from sm_50 to sm_90. */
#define KILN_RT_GPU_REGISTER_FILE            65536u
#define KILN_RT_GPU_MAX_REGISTERS_PER_THREAD 255u

typedef struct KilnRtLaunchConfig {
  uint32_t grid[3];       /* programs along x, y, z; each >= 1 */
  uint32_t block_threads; /* threads per program on GPUs (32 * num_warps); ignored on cpu */
  uint32_t shared_bytes;  /* dynamic shared memory per program on GPUs; ignored on cpu */
} KilnRtLaunchConfig;

/* Runs the kernel once per program of the grid. args[i] points to the i-th argument's value
 * (like cuLaunchKernel's kernelParams); values are read before the call returns, so they may be
 * stack variables. On cpu the launch is synchronous: it returns after every program ran. On
 * a stream being captured the launch is recorded, not run. On cuda and emu, grid y/z above
 * KILN_RT_GPU_MAX_GRID_YZ are INVALID_ARGUMENT, and so is a block whose threads x registers per
 * thread (as ptxas assigned them, where known) exceed KILN_RT_GPU_REGISTER_FILE, or more than
 * KILN_RT_GPU_MAX_REGISTERS_PER_THREAD per thread; on emu so are pointer arguments that are not
 * aligned as the compiled code assumes (16 bytes) and static shared memory above 48 KiB. On
 * every device, a kernel compiled with 32-bit offsets (its module's kiln_offsets_NAME record)
 * given a pointer argument with more than 2^31 elements of its type (KILN_INDEX_LIMIT lowers
 * it for scaled-down tests; on emu KILN_EMU_INDEX_LIMIT too) between it and the end of its
 * kiln_rt_malloc allocation is INVALID_ARGUMENT, with the kernel, the argument and
 * `--index-bits 64` in the message, before anything runs. */
KilnRtStatus kiln_rt_launch(KilnRtFunction *fn, const KilnRtLaunchConfig *cfg, void **args,
                            KilnRtStream *stream);
/* The function of this thread's last accepted kiln_rt_launch (NULL before any; valid while its
 * module is loaded), and in *count (may be NULL) how many launches this thread has made: read
 * before and after a library call, it tells which kernel variant the call ran, if any (what
 * `kiln-bert train --profile` names). */
const KilnRtFunction *kiln_rt_last_launch(uint64_t *count);

/* ---- streams and events ------------------------------------------------------------------- */

/* An ordered queue of work. On success *out is owned by the caller (kiln_rt_stream_destroy). */
KilnRtStatus kiln_rt_stream_create(KilnRtDevice *dev, KilnRtStream **out);
/* Waits for the stream's work, then frees it. NULL is a no-op. Ends an unfinished capture. */
void kiln_rt_stream_destroy(KilnRtStream *stream);
KilnRtStatus kiln_rt_stream_synchronize(KilnRtStream *stream);

/* A point in a stream's work, with a timestamp for timing. Owned by the caller. */
KilnRtStatus kiln_rt_event_create(KilnRtDevice *dev, KilnRtEvent **out);
void kiln_rt_event_destroy(KilnRtEvent *ev);
/* Marks the event at the current end of `stream` (NULL = default stream). */
KilnRtStatus kiln_rt_event_record(KilnRtEvent *ev, KilnRtStream *stream);
/* Waits until the work before the event's last record has finished. */
KilnRtStatus kiln_rt_event_synchronize(KilnRtEvent *ev);
/* Milliseconds between two recorded events of the same device (end after start: >= 0).
 * INVALID_ARGUMENT if either was never recorded. */
KilnRtStatus kiln_rt_event_elapsed_ms(KilnRtEvent *start, KilnRtEvent *end, float *ms);

/* ---- graphs (stream capture) -------------------------------------------------------------- */

/* Starts recording the work queued on `stream` (not NULL) instead of running it. */
KilnRtStatus kiln_rt_graph_begin_capture(KilnRtStream *stream);
/* Ends the capture begun on `stream`; *out is a replayable graph owned by the caller
 * (kiln_rt_graph_destroy). INVALID_ARGUMENT if the stream was not capturing. */
KilnRtStatus kiln_rt_graph_end_capture(KilnRtStream *stream, KilnRtGraph **out);
/* Ends the capture begun on `stream` and makes `graph` (of the same device) replay it in place
 * of what it held: how a loop whose launches keep their order but change some arguments (a
 * per-step random seed, say) replays each step. On cuda the instantiated graph is updated in
 * place when only parameters changed (cuGraphExecUpdate: much cheaper than instantiating) and
 * instantiated anew otherwise; on cpu the recorded work is swapped. On failure the capture is
 * over and `graph` still replays what it held. */
KilnRtStatus kiln_rt_graph_recapture(KilnRtStream *stream, KilnRtGraph *graph);
/* Queues one replay of the graph on `stream` (NULL = default stream). */
KilnRtStatus kiln_rt_graph_launch(KilnRtGraph *graph, KilnRtStream *stream);
void kiln_rt_graph_destroy(KilnRtGraph *graph);

/* ---- collectives over several devices ------------------------------------------------------ */

/* A communicator over n devices of one kind (data-parallel training: a copy of the model on
 * each). On cuda it is NCCL's (libnccl.so.2 opened with dlopen, as the driver is; one process
 * drives every GPU), where NCCL can be loaded; otherwise, and on cpu and emu, the runtime's own
 * path through host memory. The devices must outlive it. INVALID_ARGUMENT for n < 1, a NULL or
 * repeated device, or devices of different kinds. */
typedef struct KilnRtComm KilnRtComm;
KilnRtStatus kiln_rt_comm_create(KilnRtDevice *const *devs, int n, KilnRtComm **out);
/* NULL is a no-op. */
void kiln_rt_comm_destroy(KilnRtComm *comm);
/* "nccl" or "host": which path the communicator's collectives take. A static string. */
const char *kiln_rt_comm_path(const KilnRtComm *comm);
/* The sum of n device's f32 buffers, in place: afterwards every bufs[r] (`count` floats on
 * device r) holds sum over r of what they held, the same bits on every device. Ordered after
 * the work queued on streams[r] (NULL: the default stream) and before what is queued there
 * next. The host path waits for each stream, adds in rank order (a rerun gives the same bits)
 * and returns when every buffer is written; NCCL's sum is queued and its order is NCCL's. */
KilnRtStatus kiln_rt_comm_allreduce_sum_f32(KilnRtComm *comm, float *const *bufs, size_t count,
                                            KilnRtStream *const *streams);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILNRT_H */
