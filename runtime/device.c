/* device.c — the public API: argument checks, shared bookkeeping, dispatch through the vtable.
 *
 * Everything a caller can get wrong is checked here, once, so that backends may assume valid
 * handles, matching devices, non-zero sizes and grids of at least one program per axis.
 */
#include "device_impl.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef KilnRtStatus (*DeviceInit)(KilnRtDevice *dev, int ordinal);

/* The device kinds, by spec prefix. */
static const struct {
  const char *name;
  KilnRtDeviceKind kind;
  DeviceInit init;
} device_kinds[] = {
    {"cpu", KILN_RT_DEVICE_CPU, kiln_rt_cpu_device_init},
    {"emu", KILN_RT_DEVICE_EMU, kiln_rt_emu_device_init},
    {"cuda", KILN_RT_DEVICE_CUDA, kiln_rt_cuda_device_init},
};

#define BAD(...) kiln_rt_fail(KILN_RT_ERROR_INVALID_ARGUMENT, __VA_ARGS__)

/* "kind" or "kind:N" -> the table entry and N (0 when absent). */
static KilnRtStatus parse_spec(const char *spec, size_t *which, int *ordinal) {
  for (size_t i = 0; i < sizeof device_kinds / sizeof device_kinds[0]; i++) {
    size_t n = strlen(device_kinds[i].name);
    if (strncmp(spec, device_kinds[i].name, n) != 0) continue;
    const char *rest = spec + n;
    if (*rest == '\0') {
      *which = i;
      *ordinal = 0;
      return KILN_RT_OK;
    }
    if (*rest != ':' || !isdigit((unsigned char)rest[1])) break;
    char *end = NULL;
    long v = strtol(rest + 1, &end, 10);
    if (*end != '\0' || v > INT_MAX) break;
    *which = i;
    *ordinal = (int)v;
    return KILN_RT_OK;
  }
  return BAD("unknown device '%s' (expected cpu, emu, cuda or cuda:N)", spec);
}

KilnRtStatus kiln_rt_device_create(const char *spec, KilnRtDevice **out) {
  if (!spec || !out) return BAD("kiln_rt_device_create: spec and out must not be NULL");
  size_t which = 0;
  int ordinal = 0;
  KilnRtStatus st = parse_spec(spec, &which, &ordinal);
  if (st != KILN_RT_OK) return st;

  KilnRtDevice *dev = calloc(1, sizeof *dev);
  if (!dev) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a device");
  dev->kind = device_kinds[which].kind;
  dev->ordinal = ordinal;
  st = device_kinds[which].init(dev, ordinal);
  if (st != KILN_RT_OK) {
    free(dev);
    return st;
  }
  dev->cache = kiln_rt_cache_create(dev, dev->ops->raw_alloc, dev->ops->raw_free);
  if (!dev->cache) {
    dev->ops->destroy(dev);
    free(dev);
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for the allocator");
  }
  *out = dev;
  return KILN_RT_OK;
}

void kiln_rt_device_destroy(KilnRtDevice *dev) {
  if (!dev) return;
  /* Finish queued work before memory it may use goes away. */
  dev->ops->synchronize(dev);
  kiln_rt_cache_destroy(dev->cache);
  dev->ops->destroy(dev);
  free(dev);
}

KilnRtDeviceKind kiln_rt_device_kind(const KilnRtDevice *dev) {
  return dev ? dev->kind : KILN_RT_DEVICE_KIND_COUNT;
}

KilnRtStatus kiln_rt_device_info(KilnRtDevice *dev, KilnRtDeviceInfo *out) {
  if (!dev || !out) return BAD("kiln_rt_device_info: device and out must not be NULL");
  return dev->ops->info(dev, out);
}

KilnRtStatus kiln_rt_device_synchronize(KilnRtDevice *dev) {
  if (!dev) return BAD("kiln_rt_device_synchronize: device is NULL");
  return dev->ops->synchronize(dev);
}

/* ---- memory ------------------------------------------------------------------------------- */

KilnRtStatus kiln_rt_malloc(KilnRtDevice *dev, size_t bytes, void **dptr) {
  if (!dev || !dptr) return BAD("kiln_rt_malloc: device and dptr must not be NULL");
  if (bytes == 0) {
    *dptr = NULL;
    return KILN_RT_OK;
  }
  KilnRtStatus st = kiln_rt_cache_alloc(dev->cache, bytes, dptr);
  /* The size asked for, not the cache's class size: a checking device bounds accesses by it. */
  if (st == KILN_RT_OK && dev->ops->track_alloc) dev->ops->track_alloc(dev, *dptr, bytes);
  return st;
}

KilnRtStatus kiln_rt_mem_find(KilnRtDevice *dev, const void *p, void **base, size_t *bytes) {
  if (!dev || !base || !bytes)
    return BAD("kiln_rt_mem_find: device, base and bytes must not be NULL");
  if (kiln_rt_cache_find(dev->cache, p, base, bytes) != KILN_RT_OK)
    return BAD("kiln_rt_mem_find: %p is in no live allocation of this device", p);
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_mem_find_part(KilnRtDevice *dev, const void *p, void **start, size_t *bytes) {
  if (!dev || !start || !bytes)
    return BAD("kiln_rt_mem_find_part: device, start and bytes must not be NULL");
  if (kiln_rt_cache_find_part(dev->cache, p, start, bytes) != KILN_RT_OK)
    return BAD("kiln_rt_mem_find_part: %p is in no live allocation of this device", p);
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_mem_set_parts(KilnRtDevice *dev, void *base, const size_t *ends, size_t n) {
  if (!dev || !base) return BAD("kiln_rt_mem_set_parts: device and base must not be NULL");
  if (n > 0 && !ends) return BAD("kiln_rt_mem_set_parts: ends is NULL for %zu parts", n);
  return kiln_rt_cache_set_parts(dev->cache, base, ends, n);
}

KilnRtStatus kiln_rt_free(KilnRtDevice *dev, void *dptr) {
  if (!dev) return BAD("kiln_rt_free: device is NULL");
  if (!dptr) return KILN_RT_OK;
  KilnRtStatus st = kiln_rt_cache_free(dev->cache, dptr);
  if (st == KILN_RT_OK && dev->ops->track_free) dev->ops->track_free(dev, dptr);
  return st;
}

static KilnRtStatus check_stream(const char *what, KilnRtDevice *dev, KilnRtStream *stream) {
  if (stream && stream->dev != dev) return BAD("%s: the stream belongs to another device", what);
  return KILN_RT_OK;
}

static KilnRtStatus copy(const char *what, KilnRtDevice *dev, KilnRtCopyKind kind, void *dst,
                         const void *src, size_t bytes, KilnRtStream *stream) {
  if (!dev) return BAD("%s: device is NULL", what);
  KilnRtStatus st = check_stream(what, dev, stream);
  if (st != KILN_RT_OK || bytes == 0) return st;
  if (!dst || !src)
    return BAD("%s: NULL %s with %zu bytes to copy", what, dst ? "source" : "destination", bytes);
  return dev->ops->memcpy(dev, kind, dst, src, bytes, stream);
}

KilnRtStatus kiln_rt_memcpy_htod(KilnRtDevice *dev, void *dst, const void *src, size_t bytes,
                                 KilnRtStream *stream) {
  return copy("kiln_rt_memcpy_htod", dev, KILN_RT_COPY_HTOD, dst, src, bytes, stream);
}

KilnRtStatus kiln_rt_memcpy_dtoh(KilnRtDevice *dev, void *dst, const void *src, size_t bytes,
                                 KilnRtStream *stream) {
  return copy("kiln_rt_memcpy_dtoh", dev, KILN_RT_COPY_DTOH, dst, src, bytes, stream);
}

KilnRtStatus kiln_rt_memcpy_dtod(KilnRtDevice *dev, void *dst, const void *src, size_t bytes,
                                 KilnRtStream *stream) {
  return copy("kiln_rt_memcpy_dtod", dev, KILN_RT_COPY_DTOD, dst, src, bytes, stream);
}

KilnRtStatus kiln_rt_memset(KilnRtDevice *dev, void *dst, int value, size_t bytes,
                            KilnRtStream *stream) {
  if (!dev) return BAD("kiln_rt_memset: device is NULL");
  KilnRtStatus st = check_stream("kiln_rt_memset", dev, stream);
  if (st != KILN_RT_OK || bytes == 0) return st;
  if (!dst) return BAD("kiln_rt_memset: NULL destination with %zu bytes to set", bytes);
  return dev->ops->memset(dev, dst, value, bytes, stream);
}

KilnRtStatus kiln_rt_mem_stats(KilnRtDevice *dev, KilnRtMemStats *out) {
  if (!dev || !out) return BAD("kiln_rt_mem_stats: device and out must not be NULL");
  kiln_rt_cache_stats(dev->cache, out);
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_mem_release_cached(KilnRtDevice *dev) {
  if (!dev) return BAD("kiln_rt_mem_release_cached: device is NULL");
  kiln_rt_cache_release(dev->cache);
  return KILN_RT_OK;
}

/* ---- modules and functions ---------------------------------------------------------------- */

KilnRtStatus kiln_rt_module_load(KilnRtDevice *dev, KilnRtModuleFormat format, const void *image,
                                 size_t size, KilnRtModule **out) {
  if (!dev || !image || !out)
    return BAD("kiln_rt_module_load: device, image and out must not be NULL");
  if (size == 0) return BAD("kiln_rt_module_load: the image is empty");
  if ((unsigned)format >= (unsigned)KILN_RT_MODULE_FORMAT_COUNT)
    return BAD("kiln_rt_module_load: unknown module format %d", (int)format);
  KilnRtModule *mod = calloc(1, sizeof *mod);
  if (!mod) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a module");
  mod->dev = dev;
  mod->format = format;
  KilnRtStatus st = dev->ops->module_load(dev, format, image, size, mod);
  if (st != KILN_RT_OK) {
    free(mod);
    return st;
  }
  pthread_mutex_init(&mod->lock, NULL);
  *out = mod;
  return KILN_RT_OK;
}

void kiln_rt_module_destroy(KilnRtModule *mod) {
  if (!mod) return;
  /* The backend first, so that it can still walk the functions and free their handles. */
  mod->dev->ops->module_unload(mod);
  for (KilnRtFunction *fn = mod->functions, *next; fn; fn = next) {
    next = fn->next;
    free(fn->name);
    free(fn->arg_sizes);
    free(fn->arg_elem_bytes);
    free(fn->about);
    free(fn);
  }
  pthread_mutex_destroy(&mod->lock);
  free(mod);
}

static bool is_identifier(const char *s) {
  if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (; *s; s++)
    if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
  return true;
}

KilnRtStatus kiln_rt_module_get_function(KilnRtModule *mod, const char *kernel_name,
                                         KilnRtFunction **out) {
  if (!mod || !kernel_name || !out)
    return BAD("kiln_rt_module_get_function: module, name and out must not be NULL");
  if (!is_identifier(kernel_name))
    return BAD("kiln_rt_module_get_function: '%s' is not a kernel name", kernel_name);

  pthread_mutex_lock(&mod->lock);
  KilnRtFunction *fn = mod->functions;
  while (fn && strcmp(fn->name, kernel_name) != 0) fn = fn->next;
  KilnRtStatus st = KILN_RT_OK;
  if (!fn) {
    fn = calloc(1, sizeof *fn);
    if (fn) fn->name = strdup(kernel_name);
    if (!fn || !fn->name) {
      st = kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a function");
    } else {
      fn->module = mod;
      st = mod->dev->ops->get_function(mod, fn);
    }
    if (st == KILN_RT_OK) {
      fn->next = mod->functions;
      mod->functions = fn;
    } else if (fn) {
      free(fn->name);
      free(fn->arg_elem_bytes);
      free(fn);
      fn = NULL;
    }
  }
  pthread_mutex_unlock(&mod->lock);
  if (st == KILN_RT_OK) *out = fn;
  return st;
}

KilnRtStatus kiln_rt_function_set_arg_sizes(KilnRtFunction *fn, const size_t *sizes, size_t n) {
  if (!fn) return BAD("kiln_rt_function_set_arg_sizes: function is NULL");
  if (n > 0 && !sizes)
    return BAD("kiln_rt_function_set_arg_sizes: sizes is NULL for %zu arguments", n);
  if (n > 4096) return BAD("kiln_rt_function_set_arg_sizes: %zu arguments is too many", n);
  /* One spare element, so that a kernel without arguments still has a non-NULL table. */
  size_t *copy = calloc(n + 1, sizeof *copy);
  if (!copy)
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for argument sizes");
  if (n > 0) memcpy(copy, sizes, n * sizeof *copy);
  pthread_mutex_lock(&fn->module->lock);
  free(fn->arg_sizes);
  fn->arg_sizes = copy;
  fn->num_args = n;
  pthread_mutex_unlock(&fn->module->lock);
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_function_set_about(KilnRtFunction *fn, const char *about) {
  if (!fn || !about) return BAD("kiln_rt_function_set_about: function and text must not be NULL");
  char *copy = strdup(about);
  if (!copy) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a text");
  pthread_mutex_lock(&fn->module->lock);
  free(fn->about);
  fn->about = copy;
  pthread_mutex_unlock(&fn->module->lock);
  return KILN_RT_OK;
}

const char *kiln_rt_function_name(const KilnRtFunction *fn) { return fn ? fn->name : ""; }

const char *kiln_rt_function_about(const KilnRtFunction *fn) {
  return fn && fn->about ? fn->about : "";
}

/* This thread's launches: the last function accepted and how many were (a profile brackets a
 * library call with two reads of the count to learn which kernel the call ran). */
static _Thread_local const KilnRtFunction *last_launch;
static _Thread_local uint64_t launch_count;

const KilnRtFunction *kiln_rt_last_launch(uint64_t *count) {
  if (count) *count = launch_count;
  return last_launch;
}

/* A block takes threads x registers of its SM's register file, and a thread at most 255: a GPU
 * refuses more (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, which names neither number), the emulator
 * would run it. ptxas fits the registers to the kernel's .maxntid, so this fires for a block
 * larger than the kernel was compiled for, or for a count recorded wrong. */
static KilnRtStatus check_registers(const KilnRtFunction *fn, const KilnRtLaunchConfig *cfg) {
  uint32_t threads = cfg->block_threads ? cfg->block_threads : fn->block_threads;
  uint32_t regs = fn->registers;
  if (regs > KILN_RT_GPU_MAX_REGISTERS_PER_THREAD)
    return BAD("kiln_rt_launch of '%s': %u registers per thread, more than a GPU's %u", fn->name,
               regs, KILN_RT_GPU_MAX_REGISTERS_PER_THREAD);
  if ((uint64_t)threads * regs > KILN_RT_GPU_REGISTER_FILE)
    return BAD("kiln_rt_launch of '%s': %u threads x %u registers = %llu, more than the %u of a "
               "GPU's register file",
               fn->name, threads, regs, (unsigned long long)threads * regs,
               KILN_RT_GPU_REGISTER_FILE);
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_launch(KilnRtFunction *fn, const KilnRtLaunchConfig *cfg, void **args,
                            KilnRtStream *stream) {
  if (!fn || !cfg) return BAD("kiln_rt_launch: function and config must not be NULL");
  KilnRtDevice *dev = fn->module->dev;
  KilnRtStatus st = check_stream("kiln_rt_launch", dev, stream);
  if (st != KILN_RT_OK) return st;
  for (int i = 0; i < 3; i++) {
    if (cfg->grid[i] == 0 || cfg->grid[i] > (uint32_t)INT32_MAX)
      return BAD("kiln_rt_launch of '%s': grid[%d] = %u is outside 1..%d", fn->name, i,
                 cfg->grid[i], INT32_MAX);
  }
  /* A GPU's grid is at most 65535 blocks along y and z; the emulator keeps the same limit so
   * that what passes on emu also launches on a GPU. */
  if (dev->kind == KILN_RT_DEVICE_CUDA || dev->kind == KILN_RT_DEVICE_EMU) {
    for (int i = 1; i < 3; i++)
      if (cfg->grid[i] > KILN_RT_GPU_MAX_GRID_YZ)
        return BAD(
            "kiln_rt_launch of '%s': grid[%d] = %u exceeds a GPU's limit of %u along y and z",
            fn->name, i, cfg->grid[i], KILN_RT_GPU_MAX_GRID_YZ);
    st = check_registers(fn, cfg);
    if (st != KILN_RT_OK) return st;
  }
  if (!args && fn->arg_sizes && fn->num_args > 0)
    return BAD("kiln_rt_launch of '%s': args is NULL but the kernel takes %zu arguments", fn->name,
               fn->num_args);
  /* Every device: a 32-bit kernel would wrap its offsets past 2^31 elements. */
  st = kiln_rt_check_offsets(fn, args);
  if (st != KILN_RT_OK) return st;
  st = dev->ops->launch(fn, cfg, args, stream);
  if (st == KILN_RT_OK) {
    last_launch = fn;
    launch_count++;
  }
  return st;
}

/* ---- streams and events ------------------------------------------------------------------- */

KilnRtStatus kiln_rt_stream_create(KilnRtDevice *dev, KilnRtStream **out) {
  if (!dev || !out) return BAD("kiln_rt_stream_create: device and out must not be NULL");
  KilnRtStream *s = calloc(1, sizeof *s);
  if (!s) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a stream");
  s->dev = dev;
  KilnRtStatus st = dev->ops->stream_create(dev, s);
  if (st != KILN_RT_OK) {
    free(s);
    return st;
  }
  *out = s;
  return KILN_RT_OK;
}

void kiln_rt_stream_destroy(KilnRtStream *stream) {
  if (!stream) return;
  stream->dev->ops->stream_destroy(stream);
  free(stream);
}

KilnRtStatus kiln_rt_stream_synchronize(KilnRtStream *stream) {
  if (!stream) return BAD("kiln_rt_stream_synchronize: stream is NULL");
  if (stream->capturing) return BAD("kiln_rt_stream_synchronize: the stream is being captured");
  return stream->dev->ops->stream_synchronize(stream);
}

KilnRtStatus kiln_rt_event_create(KilnRtDevice *dev, KilnRtEvent **out) {
  if (!dev || !out) return BAD("kiln_rt_event_create: device and out must not be NULL");
  KilnRtEvent *ev = calloc(1, sizeof *ev);
  if (!ev) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for an event");
  ev->dev = dev;
  KilnRtStatus st = dev->ops->event_create(dev, ev);
  if (st != KILN_RT_OK) {
    free(ev);
    return st;
  }
  *out = ev;
  return KILN_RT_OK;
}

void kiln_rt_event_destroy(KilnRtEvent *ev) {
  if (!ev) return;
  ev->dev->ops->event_destroy(ev);
  free(ev);
}

KilnRtStatus kiln_rt_event_record(KilnRtEvent *ev, KilnRtStream *stream) {
  if (!ev) return BAD("kiln_rt_event_record: event is NULL");
  KilnRtStatus st = check_stream("kiln_rt_event_record", ev->dev, stream);
  if (st != KILN_RT_OK) return st;
  if (stream && stream->capturing)
    return kiln_rt_fail(
        KILN_RT_ERROR_UNSUPPORTED,
        "kiln_rt_event_record: events cannot be recorded on a stream being captured");
  st = ev->dev->ops->event_record(ev, stream);
  if (st == KILN_RT_OK) ev->recorded = true;
  return st;
}

KilnRtStatus kiln_rt_event_synchronize(KilnRtEvent *ev) {
  if (!ev) return BAD("kiln_rt_event_synchronize: event is NULL");
  if (!ev->recorded) return KILN_RT_OK; /* nothing to wait for, as in CUDA */
  return ev->dev->ops->event_synchronize(ev);
}

KilnRtStatus kiln_rt_event_elapsed_ms(KilnRtEvent *start, KilnRtEvent *end, float *ms) {
  if (!start || !end || !ms)
    return BAD("kiln_rt_event_elapsed_ms: start, end and ms must not be NULL");
  if (start->dev != end->dev)
    return BAD("kiln_rt_event_elapsed_ms: the events belong to different devices");
  if (!start->recorded || !end->recorded)
    return BAD("kiln_rt_event_elapsed_ms: the %s event was never recorded",
               start->recorded ? "end" : "start");
  return start->dev->ops->event_elapsed_ms(start, end, ms);
}

/* ---- graphs ------------------------------------------------------------------------------- */

KilnRtStatus kiln_rt_graph_begin_capture(KilnRtStream *stream) {
  if (!stream)
    return BAD("kiln_rt_graph_begin_capture: the default (NULL) stream cannot be captured");
  if (stream->capturing)
    return BAD("kiln_rt_graph_begin_capture: the stream is already being captured");
  KilnRtStatus st = stream->dev->ops->begin_capture(stream);
  if (st == KILN_RT_OK) stream->capturing = true;
  return st;
}

KilnRtStatus kiln_rt_graph_end_capture(KilnRtStream *stream, KilnRtGraph **out) {
  if (!stream || !out) return BAD("kiln_rt_graph_end_capture: stream and out must not be NULL");
  if (!stream->capturing) return BAD("kiln_rt_graph_end_capture: the stream is not being captured");
  KilnRtGraph *g = calloc(1, sizeof *g);
  if (!g) return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for a graph");
  g->dev = stream->dev;
  /* The capture is over whatever the outcome: a failed capture cannot be resumed. */
  KilnRtStatus st = stream->dev->ops->end_capture(stream, g);
  stream->capturing = false;
  if (st != KILN_RT_OK) {
    free(g);
    return st;
  }
  *out = g;
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_graph_recapture(KilnRtStream *stream, KilnRtGraph *graph) {
  if (!stream || !graph) return BAD("kiln_rt_graph_recapture: stream and graph must not be NULL");
  if (!stream->capturing) return BAD("kiln_rt_graph_recapture: the stream is not being captured");
  if (graph->dev != stream->dev) {
    KilnRtGraph *dropped = NULL; /* the capture ends either way, as documented */
    if (kiln_rt_graph_end_capture(stream, &dropped) == KILN_RT_OK) kiln_rt_graph_destroy(dropped);
    return BAD("kiln_rt_graph_recapture: the graph belongs to another device");
  }
  KilnRtStatus st;
  if (stream->dev->ops->recapture) {
    st = stream->dev->ops->recapture(stream, graph);
    stream->capturing = false;
    return st;
  }
  /* without an in-place update: a fresh graph takes the old one's place */
  KilnRtGraph fresh = {.dev = graph->dev};
  st = stream->dev->ops->end_capture(stream, &fresh);
  stream->capturing = false;
  if (st != KILN_RT_OK) return st;
  graph->dev->ops->graph_destroy(graph);
  graph->impl = fresh.impl;
  return KILN_RT_OK;
}

KilnRtStatus kiln_rt_graph_launch(KilnRtGraph *graph, KilnRtStream *stream) {
  if (!graph) return BAD("kiln_rt_graph_launch: graph is NULL");
  KilnRtStatus st = check_stream("kiln_rt_graph_launch", graph->dev, stream);
  if (st != KILN_RT_OK) return st;
  if (stream && stream->capturing)
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED,
                        "kiln_rt_graph_launch: graphs cannot be launched into a capture");
  return graph->dev->ops->graph_launch(graph, stream);
}

void kiln_rt_graph_destroy(KilnRtGraph *graph) {
  if (!graph) return;
  graph->dev->ops->graph_destroy(graph);
  free(graph);
}
