/* cpu_device.c — the `cpu` device: host memory, kernels from host objects, a thread pool.
 *
 * Device addresses are host addresses. Every operation runs synchronously on the calling thread's
 * behalf (a launch blocks until the pool ran all programs), which trivially respects stream order:
 * streams are ordered queues whose work is always already done, so synchronizing is a no-op and
 * an event's timestamp is taken when it is recorded. Capture is the one place a stream differs from
 * the default stream: between begin and end, launches, copies and sets are appended to a graph
 * instead of run; a launch copies its argument values (sizes from kiln_rt_function_set_arg_sizes)
 * so that replays see the values of capture time, as CUDA graphs do.
 */
#include "device_impl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct CpuDevice {
  pthread_mutex_t pool_lock; /* the pool starts on the first launch */
  KilnRtCpuPool *pool;
  int num_threads;
} CpuDevice;

typedef enum OpKind { OP_LAUNCH, OP_COPY, OP_SET } OpKind;

typedef struct GraphOp {
  OpKind kind;
  union {
    struct {
      KilnRtCpuKernel kernel;
      uint32_t grid[3];
      unsigned char *values; /* the argument values, each at a 16-aligned offset */
      void **argv;           /* pointers into values */
    } launch;
    struct {
      void *dst;
      const void *src;
      size_t bytes;
    } copy;
    struct {
      void *dst;
      int value;
      size_t bytes;
    } set;
  } u;
} GraphOp;

typedef struct CpuGraph {
  GraphOp *ops;
  size_t num_ops, cap;
} CpuGraph;

typedef struct CpuStream {
  CpuGraph *capture; /* non-NULL while capturing */
} CpuStream;

typedef struct CpuEvent {
  struct timespec when;
} CpuEvent;

static CpuDevice *cpu_of(KilnRtDevice *dev) { return dev->impl; }

/* dlsym hands out code as void *; POSIX guarantees the conversion back to a function pointer,
 * which ISO C spells as a copy of the representation. */
static KilnRtCpuKernel kernel_of(const KilnRtFunction *fn) {
  KilnRtCpuKernel kernel;
  _Static_assert(sizeof kernel == sizeof fn->impl, "code and data pointers differ in size");
  memcpy(&kernel, &fn->impl, sizeof kernel);
  return kernel;
}

/* ---- graphs ------------------------------------------------------------------------------- */

static void graph_free(CpuGraph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->num_ops; i++) {
    if (g->ops[i].kind == OP_LAUNCH) {
      free(g->ops[i].u.launch.values);
      free(g->ops[i].u.launch.argv);
    }
  }
  free(g->ops);
  free(g);
}

static GraphOp *graph_append(CpuGraph *g) {
  if (g->num_ops == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 16;
    GraphOp *ops = realloc(g->ops, cap * sizeof *ops);
    if (!ops) return NULL;
    g->ops = ops;
    g->cap = cap;
  }
  GraphOp *op = &g->ops[g->num_ops++];
  memset(op, 0, sizeof *op);
  return op;
}

static CpuGraph *capturing(KilnRtStream *stream) {
  return stream ? ((CpuStream *)stream->impl)->capture : NULL;
}

static KilnRtStatus record_launch(CpuGraph *g, KilnRtFunction *fn, const KilnRtLaunchConfig *cfg,
                                  void **args) {
  if (!fn->arg_sizes)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT,
                        "cannot capture a launch of '%s': its argument sizes are unknown "
                        "(call kiln_rt_function_set_arg_sizes first)",
                        fn->name);
  size_t total = 0;
  for (size_t i = 0; i < fn->num_args; i++) total += (fn->arg_sizes[i] + 15) / 16 * 16;
  unsigned char *values = malloc(total ? total : 1);
  void **argv = malloc((fn->num_args ? fn->num_args : 1) * sizeof *argv);
  GraphOp *op = values && argv ? graph_append(g) : NULL;
  if (!op) {
    free(values);
    free(argv);
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory while capturing a launch");
  }
  size_t off = 0;
  for (size_t i = 0; i < fn->num_args; i++) {
    if (fn->arg_sizes[i] > 0) memcpy(values + off, args[i], fn->arg_sizes[i]);
    argv[i] = values + off;
    off += (fn->arg_sizes[i] + 15) / 16 * 16;
  }
  op->kind = OP_LAUNCH;
  op->u.launch.kernel = kernel_of(fn);
  memcpy(op->u.launch.grid, cfg->grid, sizeof op->u.launch.grid);
  op->u.launch.values = values;
  op->u.launch.argv = argv;
  return KILN_RT_OK;
}

/* ---- the thread pool ---------------------------------------------------------------------- */

static KilnRtStatus get_pool(KilnRtDevice *dev, KilnRtCpuPool **out) {
  CpuDevice *cpu = cpu_of(dev);
  KilnRtStatus st = KILN_RT_OK;
  pthread_mutex_lock(&cpu->pool_lock);
  if (!cpu->pool) st = kiln_rt_cpu_pool_create(cpu->num_threads, &cpu->pool);
  *out = cpu->pool;
  pthread_mutex_unlock(&cpu->pool_lock);
  return st;
}

static KilnRtStatus run_grid(KilnRtDevice *dev, KilnRtCpuKernel kernel, void **args,
                             const uint32_t grid[3]) {
  KilnRtCpuPool *pool = NULL;
  KilnRtStatus st = get_pool(dev, &pool);
  if (st != KILN_RT_OK) return st;
  return kiln_rt_cpu_pool_run(pool, kernel, args, grid);
}

/* ---- the vtable --------------------------------------------------------------------------- */

static void cpu_destroy(KilnRtDevice *dev) {
  CpuDevice *cpu = cpu_of(dev);
  kiln_rt_cpu_pool_destroy(cpu->pool);
  pthread_mutex_destroy(&cpu->pool_lock);
  free(cpu);
}

static KilnRtStatus cpu_info(KilnRtDevice *dev, KilnRtDeviceInfo *out) {
  memset(out, 0, sizeof *out);
  out->kind = KILN_RT_DEVICE_CPU;
  snprintf(out->name, sizeof out->name, "cpu");
  out->sm_count = cpu_of(dev)->num_threads;
  out->num_threads = cpu_of(dev)->num_threads;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) out->total_mem = (size_t)pages * (size_t)page;
  return KILN_RT_OK;
}

static KilnRtStatus cpu_synchronize(KilnRtDevice *dev) {
  (void)dev; /* every operation finished before its call returned */
  return KILN_RT_OK;
}

static KilnRtStatus cpu_raw_alloc(KilnRtDevice *dev, size_t bytes, void **ptr) {
  (void)dev;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes) != 0)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY,
                        "cpu device: out of memory allocating %zu bytes", bytes);
  *ptr = p;
  return KILN_RT_OK;
}

static void cpu_raw_free(KilnRtDevice *dev, void *ptr) {
  (void)dev;
  free(ptr);
}

/* Runs a copy or a memset (one address space: every copy direction is a memmove). */
static void run_memory_op(const GraphOp *op) {
  if (op->kind == OP_COPY)
    memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.bytes);
  else
    memset(op->u.set.dst, op->u.set.value, op->u.set.bytes);
}

/* A copy or a memset on `stream`: recorded into its graph while it is being captured, else run
 * now (the host's streams are synchronous). `what` names it in the out-of-memory message. */
static KilnRtStatus submit_memory_op(KilnRtStream *stream, const GraphOp *op, const char *what) {
  CpuGraph *g = capturing(stream);
  if (!g) {
    run_memory_op(op);
    return KILN_RT_OK;
  }
  GraphOp *slot = graph_append(g);
  if (!slot)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory while capturing a %s",
                        what);
  *slot = *op;
  return KILN_RT_OK;
}

static KilnRtStatus cpu_memcpy(KilnRtDevice *dev, KilnRtCopyKind kind, void *dst, const void *src,
                               size_t bytes, KilnRtStream *stream) {
  (void)dev;
  (void)kind;
  GraphOp op = {.kind = OP_COPY, .u.copy = {.dst = dst, .src = src, .bytes = bytes}};
  return submit_memory_op(stream, &op, "copy");
}

static KilnRtStatus cpu_memset(KilnRtDevice *dev, void *dst, int value, size_t bytes,
                               KilnRtStream *stream) {
  (void)dev;
  GraphOp op = {.kind = OP_SET, .u.set = {.dst = dst, .value = value, .bytes = bytes}};
  return submit_memory_op(stream, &op, "memset");
}

static KilnRtStatus cpu_module_load(KilnRtDevice *dev, KilnRtModuleFormat format, const void *image,
                                    size_t size, KilnRtModule *mod) {
  (void)dev;
  return kiln_rt_cpu_module_open(format, image, size, &mod->impl);
}

static void cpu_module_unload(KilnRtModule *mod) { dlclose(mod->impl); }

static KilnRtStatus cpu_get_function(KilnRtModule *mod, KilnRtFunction *fn) {
  char symbol[512];
  int n = snprintf(symbol, sizeof symbol, "kiln_cpu_%s", fn->name);
  if (n < 0 || (size_t)n >= sizeof symbol)
    return kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT, "kernel name too long: %s", fn->name);
  dlerror();
  void *sym = dlsym(mod->impl, symbol);
  if (!sym)
    return kiln_rt_fail(KILN_RT_ERROR_NOT_FOUND, "no kernel '%s' in the module (symbol %s)",
                        fn->name, symbol);
  fn->impl = sym;
  /* The offset record {bits, n, element bytes[n]} for kiln_rt_launch's check (offset_check.c);
   * modules from before it have none and stay unchecked. */
  snprintf(symbol, sizeof symbol, "kiln_offsets_%s", fn->name); /* fits: shorter than above */
  const uint32_t *rec = dlsym(mod->impl, symbol);
  return rec ? kiln_rt_function_set_offsets(fn, rec[0], rec[1], rec + 2) : KILN_RT_OK;
}

static KilnRtStatus cpu_launch(KilnRtFunction *fn, const KilnRtLaunchConfig *cfg, void **args,
                               KilnRtStream *stream) {
  CpuGraph *g = capturing(stream);
  if (g) return record_launch(g, fn, cfg, args);
  return run_grid(fn->module->dev, kernel_of(fn), args, cfg->grid);
}

static KilnRtStatus cpu_stream_create(KilnRtDevice *dev, KilnRtStream *stream) {
  (void)dev;
  stream->impl = calloc(1, sizeof(CpuStream));
  if (!stream->impl)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a stream");
  return KILN_RT_OK;
}

static void cpu_stream_destroy(KilnRtStream *stream) {
  CpuStream *s = stream->impl;
  graph_free(s->capture);
  free(s);
}

static KilnRtStatus cpu_stream_synchronize(KilnRtStream *stream) {
  (void)stream;
  return KILN_RT_OK;
}

static KilnRtStatus cpu_event_create(KilnRtDevice *dev, KilnRtEvent *ev) {
  (void)dev;
  ev->impl = calloc(1, sizeof(CpuEvent));
  if (!ev->impl)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for an event");
  return KILN_RT_OK;
}

static void cpu_event_destroy(KilnRtEvent *ev) { free(ev->impl); }

static KilnRtStatus cpu_event_record(KilnRtEvent *ev, KilnRtStream *stream) {
  (void)stream; /* device.c refuses records on a capturing stream */
  clock_gettime(CLOCK_MONOTONIC, &((CpuEvent *)ev->impl)->when);
  return KILN_RT_OK;
}

static KilnRtStatus cpu_event_synchronize(KilnRtEvent *ev) {
  (void)ev;
  return KILN_RT_OK;
}

static KilnRtStatus cpu_event_elapsed_ms(KilnRtEvent *start, KilnRtEvent *end, float *ms) {
  const struct timespec *a = &((CpuEvent *)start->impl)->when;
  const struct timespec *b = &((CpuEvent *)end->impl)->when;
  double d = (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) * 1e-6;
  *ms = (float)d;
  return KILN_RT_OK;
}

static KilnRtStatus cpu_begin_capture(KilnRtStream *stream) {
  CpuStream *s = stream->impl;
  s->capture = calloc(1, sizeof *s->capture);
  if (!s->capture)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a graph");
  return KILN_RT_OK;
}

static KilnRtStatus cpu_end_capture(KilnRtStream *stream, KilnRtGraph *graph) {
  CpuStream *s = stream->impl;
  graph->impl = s->capture;
  s->capture = NULL;
  return KILN_RT_OK;
}

static KilnRtStatus cpu_graph_launch(KilnRtGraph *graph, KilnRtStream *stream) {
  if (capturing(stream))
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                        "the cpu device cannot launch a graph on a stream being captured");
  CpuGraph *g = graph->impl;
  for (size_t i = 0; i < g->num_ops; i++) {
    GraphOp *op = &g->ops[i];
    switch (op->kind) {
    case OP_LAUNCH: {
      KilnRtStatus st =
          run_grid(graph->dev, op->u.launch.kernel, op->u.launch.argv, op->u.launch.grid);
      if (st != KILN_RT_OK) return st;
      break;
    }
    case OP_COPY:
    case OP_SET: run_memory_op(op); break;
    }
  }
  return KILN_RT_OK;
}

static void cpu_graph_destroy(KilnRtGraph *graph) { graph_free(graph->impl); }

static const KilnRtDeviceOps cpu_ops = {
    .destroy = cpu_destroy,
    .info = cpu_info,
    .synchronize = cpu_synchronize,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .memcpy = cpu_memcpy,
    .memset = cpu_memset,
    .module_load = cpu_module_load,
    .module_unload = cpu_module_unload,
    .get_function = cpu_get_function,
    .launch = cpu_launch,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .begin_capture = cpu_begin_capture,
    .end_capture = cpu_end_capture,
    .graph_launch = cpu_graph_launch,
    .graph_destroy = cpu_graph_destroy,
};

KilnRtStatus kiln_rt_cpu_device_init(KilnRtDevice *dev, int ordinal) {
  if (ordinal != 0)
    return kiln_rt_fail(KILN_RT_ERROR_NO_DEVICE, "there is one cpu device: cpu:0, not cpu:%d",
                        ordinal);
  CpuDevice *cpu = calloc(1, sizeof *cpu);
  if (!cpu)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for the cpu device");
  pthread_mutex_init(&cpu->pool_lock, NULL);
  cpu->num_threads = kiln_rt_cpu_default_threads();
  dev->ops = &cpu_ops;
  dev->kind = KILN_RT_DEVICE_CPU;
  dev->impl = cpu;
  return KILN_RT_OK;
}
