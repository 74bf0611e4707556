/* A stand-in libcuda.so.1 for machines without a GPU: it exports every entry point the runtime
 * resolves. By default cuInit fails the way the real driver does on a host without a GPU: the
 * runtime must report KILN_RT_ERROR_NO_DEVICE with the driver's own words. With
 * KILN_FAKE_CUDA_FREE=BYTES in the environment it instead shows one device ("Fake GPU", sm_90,
 * 132 SMs, twice BYTES in all; KILN_FAKE_CUDA_DEVICES=N shows N alike) whose context opens and whose cuMemGetInfo reports BYTES free:
 * enough for the trainer's memory check (tests/kilnbert/runtime_only_test.sh) to refuse a
 * batch before anything is allocated. With KILN_FAKE_CUDA_MODULES=1 as well, memory and PTX
 * modules work far enough for launch checks to be tested (tests/emu/test_emu_offsets.c):
 * cuMemAlloc hands out addresses that are never backed (any size: a 2^31-element buffer costs
 * nothing), a module keeps its PTX text, cuModuleGetFunction finds its `.entry`s,
 * cuModuleGetGlobal reads its `.const` initializers into host memory that cuMemcpyDtoH copies,
 * cuLaunchKernel counts the launch and runs nothing, events keep time on a fake clock, and
 * streams capture launches into graphs that replay them (below). Nothing else works: the other entry
 * points exist only so that resolving them succeeds, and return an error if reached. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS              0
#define CUDA_ERROR_NO_DEVICE      100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_NOT_FOUND      500
#define NOT_REACHED               999

/* The free bytes of the fake device; 0: no device (the default). */
static size_t fake_free_bytes(void) {
  const char *s = getenv("KILN_FAKE_CUDA_FREE");
  return s && *s ? (size_t)strtoull(s, NULL, 10) : 0;
}

int cuInit(unsigned int flags) {
  (void)flags;
  return fake_free_bytes() ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

int cuGetErrorString(int err, const char **str) {
  *str = err == CUDA_ERROR_NO_DEVICE ? "fake driver: no CUDA-capable device is detected"
                                     : "fake driver: other";
  return 0;
}

int cuGetErrorName(int err, const char **str) {
  *str = err == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}

/* ---- the one fake device (KILN_FAKE_CUDA_FREE set) ---- */

/* KILN_FAKE_CUDA_DEVICES=N shows N such devices (1 by default), for several-GPU paths */
static int fake_devices(void) {
  const char *s = getenv("KILN_FAKE_CUDA_DEVICES");
  int n = s && *s ? atoi(s) : 1;
  return n > 0 ? n : 1;
}

int cuDeviceGetCount(int *count) {
  *count = fake_devices();
  return CUDA_SUCCESS;
}

int cuDeviceGet(int *dev, int ordinal) {
  if (ordinal < 0 || ordinal >= fake_devices()) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

int cuDeviceGetName(char *name, int len, int dev) {
  (void)dev;
  if (len > 0) {
    strncpy(name, "Fake GPU", (size_t)len - 1);
    name[len - 1] = 0;
  }
  return CUDA_SUCCESS;
}

/* compute capability 9.0, 132 multiprocessors, 227 KiB of opt-in shared memory */
int cuDeviceGetAttribute(int *value, int attrib, int dev) {
  (void)dev;
  switch (attrib) {
  case 75: *value = 9; break;   /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  case 76: *value = 0; break;   /* ..._MINOR */
  case 16: *value = 132; break; /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
  default: *value = 232448; break;
  }
  return CUDA_SUCCESS;
}

int cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  (void)dev;
  *bytes = 2 * fake_free_bytes();
  return CUDA_SUCCESS;
}

int cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = fake_free_bytes();
  *total_bytes = 2 * *free_bytes;
  return CUDA_SUCCESS;
}

int cuDriverGetVersion(int *version) {
  *version = 12040;
  return CUDA_SUCCESS;
}

static int fake_ctx;

int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  *ctx = &fake_ctx;
  return CUDA_SUCCESS;
}

int cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  return CUDA_SUCCESS;
}

int cuCtxSetCurrent(void *ctx) {
  (void)ctx;
  return CUDA_SUCCESS;
}

/* ---- memory and PTX modules (KILN_FAKE_CUDA_MODULES=1) ---- */

static int fake_modules(void) {
  const char *s = getenv("KILN_FAKE_CUDA_MODULES");
  return s && strcmp(s, "1") == 0;
}

/* Device addresses: a bump pointer far from host memory, never dereferenced. */
#define FAKE_DEVICE_BASE ((uint64_t)1 << 44)
static uint64_t next_device_addr = FAKE_DEVICE_BASE;

int cuMemAlloc_v2(uint64_t *dptr, size_t bytes) {
  if (!fake_modules()) return NOT_REACHED;
  *dptr = next_device_addr;
  next_device_addr += (bytes + 255) / 256 * 256;
  return CUDA_SUCCESS;
}

int cuMemFree_v2(uint64_t dptr) {
  (void)dptr;
  return fake_modules() ? CUDA_SUCCESS : NOT_REACHED;
}

/* A module: its PTX, and the globals read from it (kept until unload, as the driver's are). */
typedef struct FakeModule {
  char *ptx;
  unsigned char globals[16][256];
  int nglobals;
} FakeModule;

int cuModuleLoadDataEx(FakeModule **mod, const void *image, unsigned n, int *options,
                       void **values) {
  (void)n, (void)options, (void)values;
  if (!fake_modules()) return NOT_REACHED;
  FakeModule *m = calloc(1, sizeof *m);
  if (!m || !(m->ptx = strdup(image))) return NOT_REACHED;
  *mod = m;
  return CUDA_SUCCESS;
}

int cuModuleUnload(FakeModule *m) {
  if (!fake_modules()) return NOT_REACHED;
  free(m->ptx);
  free(m);
  return CUDA_SUCCESS;
}

/* The function handle is the module: nothing reads it but the fake itself. */
int cuModuleGetFunction(void **fn, FakeModule *m, const char *name) {
  if (!fake_modules()) return NOT_REACHED;
  char entry[320];
  snprintf(entry, sizeof entry, ".entry %s(", name);
  if (!strstr(m->ptx, entry)) return CUDA_ERROR_NOT_FOUND;
  *fn = m;
  return CUDA_SUCCESS;
}

/* `.const .align A .b8 NAME[N] = {b, ...};` (trailing zero bytes left out, as LLVM prints it)
 * or `.const .align 4 .u32 NAME = v;`: its bytes, in host memory the "device pointer" names. */
int cuModuleGetGlobal_v2(uint64_t *dptr, size_t *bytes, FakeModule *m, const char *name) {
  if (!fake_modules()) return NOT_REACHED;
  char key[320];
  snprintf(key, sizeof key, " %s", name);
  const char *p = m->ptx;
  size_t klen = strlen(key);
  while ((p = strstr(p, key)) && p[klen] != '[' && p[klen] != ' ') p += klen;
  if (!p || m->nglobals == 16) return CUDA_ERROR_NOT_FOUND;
  unsigned char *g = m->globals[m->nglobals++];
  memset(g, 0, 256);
  p += klen;
  if (*p == '[') { /* .b8 array */
    size_t n = strtoul(p + 1, NULL, 10);
    const char *v = strchr(p, '{');
    if (n > 256 || !v) return NOT_REACHED;
    for (size_t i = 0; i < n && *v != '}'; i++) {
      g[i] = (unsigned char)strtoul(v + 1, (char **)&v, 10);
      while (*v == ' ') v++;
    }
    *bytes = n;
  } else { /* a .u32 scalar */
    const char *v = strchr(p, '=');
    if (!v) return NOT_REACHED;
    uint32_t x = (uint32_t)strtoul(v + 1, NULL, 10);
    memcpy(g, &x, sizeof x);
    *bytes = sizeof x;
  }
  *dptr = (uint64_t)(uintptr_t)g;
  return CUDA_SUCCESS;
}

/* Only the module globals above are readable: fake device memory has no bytes. */
int cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes) {
  if (!fake_modules() || (src >= FAKE_DEVICE_BASE && src < next_device_addr)) return NOT_REACHED;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return CUDA_SUCCESS;
}

int cuFuncGetAttribute(int *value, int attrib, void *fn) {
  (void)attrib, (void)fn;
  if (!fake_modules()) return NOT_REACHED;
  *value = 0; /* registers and the like: unknown */
  return CUDA_SUCCESS;
}

int cuFuncSetAttribute(void *fn, int attrib, int value) {
  (void)fn, (void)attrib, (void)value;
  return fake_modules() ? CUDA_SUCCESS : NOT_REACHED;
}

/* Streams, captures and graphs (KILN_FAKE_CUDA_MODULES=1). A stream being captured records its
 * launches into a graph, which is nothing but their count; instantiating copies it, an
 * in-place update (cuGraphExecUpdate_v2) succeeds when the counts agree (the same topology)
 * and fails as the driver does otherwise, and a replay counts its launches as launches. The
 * counters are what a test can see: launches run, graph replays, instantiations, in-place
 * updates, stream and context synchronizations, and the graphs and executable graphs alive. */
typedef struct FakeGraph {
  int launches;
} FakeGraph;
typedef struct FakeStream {
  FakeGraph *capture; /* non-NULL while capturing */
} FakeStream;
int fake_cuda_launches, fake_cuda_graph_launches, fake_cuda_instantiations, fake_cuda_updates;
int fake_cuda_stream_syncs, fake_cuda_ctx_syncs, fake_cuda_graphs_alive;

int cuCtxSynchronize(void) {
  if (!fake_modules()) return NOT_REACHED;
  fake_cuda_ctx_syncs++;
  return CUDA_SUCCESS;
}

/* The streams made so far, in order (the first 64), for tests that check which stream a
 * library was handed (tests/runtime/test_rt_comm.c reads them with dlsym). */
void *fake_cuda_streams[64];
int fake_cuda_streams_made;

int cuStreamCreate(FakeStream **s, unsigned flags) {
  (void)flags;
  if (!fake_modules() || !(*s = calloc(1, sizeof **s))) return NOT_REACHED;
  if (fake_cuda_streams_made < 64) fake_cuda_streams[fake_cuda_streams_made] = *s;
  fake_cuda_streams_made++;
  return CUDA_SUCCESS;
}

int cuStreamDestroy_v2(FakeStream *s) {
  if (!fake_modules()) return NOT_REACHED;
  free(s->capture);
  free(s);
  return CUDA_SUCCESS;
}

int cuStreamSynchronize(FakeStream *s) {
  (void)s;
  if (!fake_modules()) return NOT_REACHED;
  fake_cuda_stream_syncs++;
  return CUDA_SUCCESS;
}

int cuStreamBeginCapture_v2(FakeStream *s, int mode) {
  (void)mode;
  if (!fake_modules() || !s || s->capture || !(s->capture = calloc(1, sizeof *s->capture)))
    return NOT_REACHED;
  return CUDA_SUCCESS;
}

int cuStreamEndCapture(FakeStream *s, FakeGraph **graph) {
  if (!fake_modules() || !s || !s->capture) return NOT_REACHED;
  *graph = s->capture;
  s->capture = NULL;
  fake_cuda_graphs_alive++;
  return CUDA_SUCCESS;
}

int cuGraphInstantiateWithFlags(FakeGraph **exec, FakeGraph *graph, unsigned long long flags) {
  (void)flags;
  if (!fake_modules() || !(*exec = malloc(sizeof **exec))) return NOT_REACHED;
  **exec = *graph;
  fake_cuda_instantiations++;
  fake_cuda_graphs_alive++;
  return CUDA_SUCCESS;
}

#define CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE 910
int cuGraphExecUpdate_v2(FakeGraph *exec, FakeGraph *graph, int *result_info) {
  if (!fake_modules()) return NOT_REACHED;
  if (exec->launches != graph->launches) {
    result_info[0] = 2; /* CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED */
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  fake_cuda_updates++;
  return CUDA_SUCCESS;
}

int cuGraphLaunch(FakeGraph *exec, FakeStream *s) {
  (void)s;
  if (!fake_modules()) return NOT_REACHED;
  fake_cuda_launches += exec->launches;
  fake_cuda_graph_launches++;
  return CUDA_SUCCESS;
}

static int graph_free(FakeGraph *g) {
  if (!fake_modules()) return NOT_REACHED;
  free(g);
  fake_cuda_graphs_alive--;
  return CUDA_SUCCESS;
}
int cuGraphExecDestroy(FakeGraph *exec) { return graph_free(exec); }
int cuGraphDestroy(FakeGraph *graph) { return graph_free(graph); }

/* Launches run nothing: one on a stream being captured is recorded, any other counted. */
int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, FakeStream *stream, void **params, void **extra) {
  (void)fn, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shared;
  (void)params, (void)extra;
  if (!fake_modules()) return NOT_REACHED;
  if (stream && stream->capture)
    stream->capture->launches++;
  else
    fake_cuda_launches++;
  return CUDA_SUCCESS;
}

/* Events (KILN_FAKE_CUDA_MODULES=1): a timestamp on a fake device clock that every record
 * advances by 500 us, so that a pair recorded around one launch spans exactly 0.5 ms (a binary
 * fraction: sums of it are exact); the counts are what a test can see. */
typedef struct FakeEvent {
  uint64_t t_us;
} FakeEvent;
static uint64_t fake_clock_us;
int fake_cuda_events, fake_cuda_event_records;

int cuEventCreate(FakeEvent **ev, unsigned flags) {
  (void)flags;
  if (!fake_modules() || !(*ev = calloc(1, sizeof **ev))) return NOT_REACHED;
  fake_cuda_events++;
  return CUDA_SUCCESS;
}

int cuEventRecord(FakeEvent *ev, void *stream) {
  (void)stream;
  if (!fake_modules()) return NOT_REACHED;
  fake_clock_us += 500;
  ev->t_us = fake_clock_us;
  fake_cuda_event_records++;
  return CUDA_SUCCESS;
}

int cuEventSynchronize(FakeEvent *ev) {
  (void)ev;
  return fake_modules() ? CUDA_SUCCESS : NOT_REACHED;
}

int cuEventElapsedTime(float *ms, FakeEvent *start, FakeEvent *end) {
  if (!fake_modules()) return NOT_REACHED;
  *ms = (float)(end->t_us - start->t_us) / 1000.0f;
  return CUDA_SUCCESS;
}

int cuEventDestroy_v2(FakeEvent *ev) {
  if (!fake_modules()) return NOT_REACHED;
  free(ev);
  fake_cuda_events--;
  return CUDA_SUCCESS;
}

#define STUB(name)                                                                                 \
  int name(void) { return NOT_REACHED; }
STUB(cuMemcpyHtoD_v2)
STUB(cuMemcpyDtoD_v2)
STUB(cuMemcpyHtoDAsync_v2)
STUB(cuMemcpyDtoHAsync_v2)
STUB(cuMemcpyDtoDAsync_v2)
STUB(cuMemsetD8_v2)
STUB(cuMemsetD8Async)
STUB(cuModuleLoadData)
