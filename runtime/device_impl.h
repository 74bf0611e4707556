/* device_impl.h — libkilnrt's private header: the device vtable every backend fills in, the
 * objects the public handles point to, the caching allocator, the CPU thread pool and the
 * error helpers. Nothing outside runtime/ includes it.
 *
 * The public functions (device.c) check arguments, keep the bookkeeping that is the same on every
 * device (the allocation cache, function tables, arg sizes) and call through `ops`; a backend
 * only deals with its own handles (`impl` fields). A new device kind is one KilnRtDeviceOps table
 * plus a create function listed in device.c.
 */
#ifndef KILN_RUNTIME_DEVICE_IMPL_H
#define KILN_RUNTIME_DEVICE_IMPL_H

#include "kiln/kilnrt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Internal symbols stay inside libkilnrt.so; only kilnrt.h's API is exported. */
#pragma GCC visibility push(hidden)

/* ---- errors ------------------------------------------------------------------------------- */

/* Records a formatted message as the thread's last error and returns `status`, so failures read
 * `return kiln_rt_fail(KILN_RT_ERROR_IO, "cannot write %s: %s", path, strerror(errno));`. */
KilnRtStatus kiln_rt_fail(KilnRtStatus status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Broken internal invariants: always on, reported and then the process stops, since continuing
 * would corrupt memory. Never used for user or environment errors. */
#define KILN_ASSERT(cond)                                                                          \
  do {                                                                                             \
    if (!(cond)) kiln_rt_assert_failed(__FILE__, __LINE__, __func__, #cond);                       \
  } while (0)
_Noreturn void kiln_rt_assert_failed(const char *file, int line, const char *func,
                                     const char *cond);

/* ---- the caching allocator (alloc_cache.c) ------------------------------------------------ */

typedef struct KilnRtAllocCache KilnRtAllocCache;
/* The device's own allocator, which the cache sits on. */
typedef KilnRtStatus (*KilnRtRawAlloc)(KilnRtDevice *dev, size_t bytes, void **ptr);
typedef void (*KilnRtRawFree)(KilnRtDevice *dev, void *ptr);

/* NULL when out of host memory. */
KilnRtAllocCache *kiln_rt_cache_create(KilnRtDevice *dev, KilnRtRawAlloc raw_alloc,
                                       KilnRtRawFree raw_free);
/* Frees every block, cached or still in use, through raw_free. */
void kiln_rt_cache_destroy(KilnRtAllocCache *cache);
/* The size class a request of `bytes` is served from (0 for 0). */
size_t kiln_rt_cache_class_size(size_t bytes);
KilnRtStatus kiln_rt_cache_alloc(KilnRtAllocCache *cache, size_t bytes, void **ptr);
KilnRtStatus kiln_rt_cache_free(KilnRtAllocCache *cache, void *ptr);
/* The live block holding address p: its start and the bytes asked for; INVALID_ARGUMENT (no
 * message set) when none does. */
KilnRtStatus kiln_rt_cache_find(KilnRtAllocCache *cache, const void *p, void **base, size_t *bytes);
/* kiln_rt_mem_set_parts on the block starting at base (ends copied; dropped when it is freed). */
KilnRtStatus kiln_rt_cache_set_parts(KilnRtAllocCache *cache, void *base, const size_t *ends,
                                     size_t n);
/* The part of a live block that holds p: its start and bytes (the whole block, as asked, when
 * it has no parts); INVALID_ARGUMENT (no message set) when no live block holds p. */
KilnRtStatus kiln_rt_cache_find_part(KilnRtAllocCache *cache, const void *p, void **start,
                                     size_t *bytes);
void kiln_rt_cache_stats(KilnRtAllocCache *cache, KilnRtMemStats *out);
void kiln_rt_cache_release(KilnRtAllocCache *cache);

/* ---- the device vtable -------------------------------------------------------------------- */

typedef enum KilnRtCopyKind {
  KILN_RT_COPY_HTOD,
  KILN_RT_COPY_DTOH,
  KILN_RT_COPY_DTOD
} KilnRtCopyKind;

/* Every entry returns a status and sets kiln_rt_fail's message on failure. Arguments have been
 * checked by device.c (non-NULL handles, non-zero sizes, grid dims >= 1). `stream` may be NULL. */
typedef struct KilnRtDeviceOps {
  void (*destroy)(KilnRtDevice *dev); /* frees dev->impl; dev itself is freed by device.c */
  KilnRtStatus (*info)(KilnRtDevice *dev, KilnRtDeviceInfo *out);
  KilnRtStatus (*synchronize)(KilnRtDevice *dev);

  KilnRtStatus (*raw_alloc)(KilnRtDevice *dev, size_t bytes, void **ptr);
  void (*raw_free)(KilnRtDevice *dev, void *ptr);
  KilnRtStatus (*memcpy)(KilnRtDevice *dev, KilnRtCopyKind kind, void *dst, const void *src,
                         size_t bytes, KilnRtStream *stream);
  KilnRtStatus (*memset)(KilnRtDevice *dev, void *dst, int value, size_t bytes,
                         KilnRtStream *stream);
  /* Optional (NULL: nothing to do): told of every kiln_rt_malloc that succeeded, with the bytes
   * asked for, and of every kiln_rt_free; the emu device's memcheck bounds accesses by them. */
  void (*track_alloc)(KilnRtDevice *dev, void *ptr, size_t bytes);
  void (*track_free)(KilnRtDevice *dev, void *ptr);

  /* Fills mod->impl. */
  KilnRtStatus (*module_load)(KilnRtDevice *dev, KilnRtModuleFormat format, const void *image,
                              size_t size, KilnRtModule *mod);
  void (*module_unload)(KilnRtModule *mod); /* also frees the impl of mod->functions */
  /* Fills fn->impl for fn->name; NOT_FOUND if absent. */
  KilnRtStatus (*get_function)(KilnRtModule *mod, KilnRtFunction *fn);
  KilnRtStatus (*launch)(KilnRtFunction *fn, const KilnRtLaunchConfig *cfg, void **args,
                         KilnRtStream *stream);

  KilnRtStatus (*stream_create)(KilnRtDevice *dev, KilnRtStream *stream); /* fills ->impl */
  void (*stream_destroy)(KilnRtStream *stream);
  KilnRtStatus (*stream_synchronize)(KilnRtStream *stream);

  KilnRtStatus (*event_create)(KilnRtDevice *dev, KilnRtEvent *ev); /* fills ->impl */
  void (*event_destroy)(KilnRtEvent *ev);
  KilnRtStatus (*event_record)(KilnRtEvent *ev, KilnRtStream *stream);
  KilnRtStatus (*event_synchronize)(KilnRtEvent *ev);
  KilnRtStatus (*event_elapsed_ms)(KilnRtEvent *start, KilnRtEvent *end, float *ms);

  KilnRtStatus (*begin_capture)(KilnRtStream *stream);
  KilnRtStatus (*end_capture)(KilnRtStream *stream, KilnRtGraph *graph); /* fills ->impl */
  /* ends the capture on stream and replaces graph->impl's work with it (kiln_rt_graph_recapture);
   * NULL: end_capture into a fresh graph that takes the old one's place */
  KilnRtStatus (*recapture)(KilnRtStream *stream, KilnRtGraph *graph);
  KilnRtStatus (*graph_launch)(KilnRtGraph *graph, KilnRtStream *stream);
  void (*graph_destroy)(KilnRtGraph *graph);
  /* Collectives of a device kind's own (optional: NULL, or UNSUPPORTED from comm_create, and
   * comm.c takes its host path): a communicator over devs[0..n) into *impl, its destruction,
   * and the in-place f32 sum of one buffer per device queued on each device's stream. */
  KilnRtStatus (*comm_create)(KilnRtDevice *const *devs, int n, void **impl);
  void (*comm_destroy)(void *impl);
  KilnRtStatus (*comm_allreduce_sum_f32)(void *impl, float *const *bufs, size_t count,
                                         KilnRtStream *const *streams);
} KilnRtDeviceOps;

struct KilnRtDevice {
  const KilnRtDeviceOps *ops;
  KilnRtDeviceKind kind;
  int ordinal;
  KilnRtAllocCache *cache;
  void *impl;
};

struct KilnRtFunction {
  KilnRtModule *module;
  char *name;
  size_t *arg_sizes; /* NULL until kiln_rt_function_set_arg_sizes */
  size_t num_args;
  void *impl;
  KilnRtFunction *next; /* the module's list */
  /* Set by a GPU device's get_function where known, else 0: the registers per thread the code
   * was assembled with (ptxas) and the block size it was compiled for; kiln_rt_launch checks
   * them against the register file. */
  uint32_t registers, block_threads;
  /* The kernel's offset record (offset_check.c), where its module has one: the bits its offsets
   * were computed in (32, 64; 0 unknown: unchecked) and per parameter the bytes of a pointer's
   * element (0 for scalars), num_offset_args of them, owned. */
  uint32_t index_bits, num_offset_args;
  uint32_t *arg_elem_bytes;
  /* What the caller says the code is (kiln_rt_function_set_about: a generated library's config
   * and promises), owned; NULL until set. */
  char *about;
};

struct KilnRtModule {
  KilnRtDevice *dev;
  KilnRtModuleFormat format;
  pthread_mutex_t lock; /* guards `functions` */
  KilnRtFunction *functions;
  void *impl;
};

struct KilnRtStream {
  KilnRtDevice *dev;
  bool capturing;
  void *impl;
};

struct KilnRtEvent {
  KilnRtDevice *dev;
  bool recorded;
  void *impl;
};

struct KilnRtGraph {
  KilnRtDevice *dev;
  void *impl;
};

/* ---- the 32-bit offset promise (offset_check.c) ---------------------------------------------- */

/* Records fn's offset record (copied): its offset bits and the element bytes of its n
 * parameters. LOAD for a record no compiler writes (bits not 32 or 64). */
KilnRtStatus kiln_rt_function_set_offsets(KilnRtFunction *fn, uint32_t bits, uint32_t n,
                                          const uint32_t *elem_bytes);
/* INVALID_ARGUMENT, naming the kernel, the argument and --index-bits 64, when fn has 32-bit
 * offsets and a pointer argument has more than 2^31 (KILN_INDEX_LIMIT; on emu also
 * KILN_EMU_INDEX_LIMIT) elements to the end of its allocation; OK otherwise. */
KilnRtStatus kiln_rt_check_offsets(const KilnRtFunction *fn, void **args);

/* Backend constructors: fill dev->ops, dev->impl, dev->kind (device.c allocates dev). */
KilnRtStatus kiln_rt_cpu_device_init(KilnRtDevice *dev, int ordinal);
KilnRtStatus kiln_rt_cuda_device_init(KilnRtDevice *dev, int ordinal);
KilnRtStatus kiln_rt_emu_device_init(KilnRtDevice *dev, int ordinal);

/* ---- cuda pieces -------------------------------------------------------------------------- */

/* The driver's ordinal of a cuda device (what NCCL names it by). */
int kiln_rt_cuda_ordinal(const KilnRtDevice *dev);
/* The cuda device's collectives through NCCL (cuda_nccl.c): UNSUPPORTED where NCCL cannot be
 * loaded. */
KilnRtStatus kiln_rt_cuda_comm_create(KilnRtDevice *const *devs, int n, void **impl);
void kiln_rt_cuda_comm_destroy(void *impl);
KilnRtStatus kiln_rt_cuda_comm_allreduce_sum_f32(void *impl, float *const *bufs, size_t count,
                                                 KilnRtStream *const *streams);

/* ---- cpu pieces --------------------------------------------------------------------------- */

/* The CPU kernel ABI (docs/internals.md). */
typedef void (*KilnRtCpuKernel)(void **args, int32_t pid_x, int32_t pid_y, int32_t pid_z,
                                int32_t nprog_x, int32_t nprog_y, int32_t nprog_z);

/* A pool of worker threads with big stacks that runs a grid's programs (cpu_pool.c). */
typedef struct KilnRtCpuPool KilnRtCpuPool;
/* Minimum stack per worker: tiles may live on the stack. */
#define KILN_RT_CPU_STACK_BYTES ((size_t)64 << 20)
/* num_threads >= 1. */
KilnRtStatus kiln_rt_cpu_pool_create(int num_threads, KilnRtCpuPool **out);
void kiln_rt_cpu_pool_destroy(KilnRtCpuPool *pool);
/* Runs kernel(args, x, y, z, ...) for every (x, y, z) of the grid, each exactly once, and returns
 * when all have finished. Concurrent calls are serialized. KILN_RT_ERROR_LAUNCH when a program's
 * device_assert failed (kiln_cpu_assert_fail): the first failure and the count in the message. */
KilnRtStatus kiln_rt_cpu_pool_run(KilnRtCpuPool *pool, KilnRtCpuKernel kernel, void **args,
                                  const uint32_t grid[3]);
/* Worker count from $KILN_CPU_THREADS, else the online CPUs. */
int kiln_rt_cpu_default_threads(void);

/* Links/opens a host module (cpu_module.c); *handle is a dlopen handle. */
KilnRtStatus kiln_rt_cpu_module_open(KilnRtModuleFormat format, const void *image, size_t size,
                                     void **handle);

#pragma GCC visibility pop

/* The cpu kernels' device_assert hook (mlir-dialect/cpu/cpu_ops.c calls it where an element of
 * the condition is false; cpu_pool.c): records the failure for the launch the calling worker runs.
 * Resolved from the program when a kernel module is opened, so exported (emu_exports.list). */
__attribute__((visibility("default"))) void
kiln_cpu_assert_fail(const char *text, int32_t x, int32_t y, int32_t z, int64_t element);

#endif /* KILN_RUNTIME_DEVICE_IMPL_H */
