/* cuda_nccl.c — the cuda device's collectives through NCCL (device_impl.h's comm_* entries).
 *
 * Like the driver, NCCL is opened with dlopen at run time, so building Kiln needs neither: the
 * library is "libnccl.so.2" on the loader's path, or the file KILN_NCCL_LIBRARY names (pip's
 * NCCL, which PyTorch uses, lies in site-packages/nvidia/nccl/lib/). One process drives every
 * GPU, so the communicator is ncclCommInitAll's over the devices' ordinals, and an all-reduce
 * is one ncclAllReduce per device (in place, f32, sum) between ncclGroupStart and ncclGroupEnd,
 * each on that device's stream (NCCL's stream type is the driver's CUstream). NCCL runs on the
 * primary contexts, which are the runtime's too (cuda_device.c). Where NCCL cannot be opened,
 * comm_create answers UNSUPPORTED and comm.c takes its host path. */
#include "device_impl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t; /* ncclSuccess = 0 */
typedef void *ncclComm_t;
enum { NCCL_FLOAT32 = 7, NCCL_SUM = 0 }; /* ncclFloat32, ncclSum (nccl.h) */

#define NCCL_ENTRY_POINTS(X)                                                                       \
  X(ncclCommInitAll, (ncclComm_t * comms, int ndev, const int *devlist))                           \
  X(ncclCommDestroy, (ncclComm_t comm))                                                            \
  X(ncclGroupStart, (void))                                                                        \
  X(ncclGroupEnd, (void))                                                                          \
  X(ncclAllReduce, (const void *send, void *recv, size_t count, int datatype, int op,              \
                    ncclComm_t comm, void *stream))

typedef struct NcclApi {
  void *lib;
#define X(name, params) ncclResult_t(*name) params;
  NCCL_ENTRY_POINTS(X)
#undef X
  const char *(*ncclGetErrorString)(ncclResult_t r);
} NcclApi;

/* Loaded once per process and kept, as the driver is. */
static NcclApi nc;
static pthread_once_t nc_once = PTHREAD_ONCE_INIT;
static char nc_load_message[512]; /* empty: loaded */

static void load_nccl(void) {
  const char *path = getenv("KILN_NCCL_LIBRARY");
  if (!path || !*path) path = "libnccl.so.2";
  nc.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!nc.lib) {
    const char *why = dlerror();
    snprintf(nc_load_message, sizeof nc_load_message, "cannot open %s (%s)", path,
             why ? why : "not found");
    return;
  }
  void *sym;
#define X(name, params)                                                                            \
  if (!(sym = dlsym(nc.lib, #name))) {                                                             \
    snprintf(nc_load_message, sizeof nc_load_message, "%s lacks %s", path, #name);                 \
    return;                                                                                        \
  }                                                                                                \
  memcpy(&nc.name, &sym, sizeof sym);
  NCCL_ENTRY_POINTS(X)
#undef X
  sym = dlsym(nc.lib, "ncclGetErrorString");
  memcpy(&nc.ncclGetErrorString, &sym, sizeof sym);
}

static KilnRtStatus nccl_fail(ncclResult_t r, const char *call) {
  const char *why = nc.ncclGetErrorString ? nc.ncclGetErrorString(r) : NULL;
  return kiln_rt_fail(KILN_RT_ERROR_DRIVER, "%s failed: %s (ncclResult %d)", call,
                      why ? why : "unknown error", r);
}

typedef struct NcclComm {
  int n;
  ncclComm_t comms[];
} NcclComm;

KilnRtStatus kiln_rt_cuda_comm_create(KilnRtDevice *const *devs, int n, void **impl) {
  pthread_once(&nc_once, load_nccl);
  if (nc_load_message[0])
    return kiln_rt_fail(KILN_RT_ERROR_UNSUPPORTED, "no NCCL: %s", nc_load_message);
  NcclComm *c = calloc(1, sizeof *c + (size_t)n * sizeof(ncclComm_t));
  int *ordinals = malloc((size_t)n * sizeof *ordinals);
  if (!c || !ordinals) {
    free(c);
    free(ordinals);
    return kiln_rt_fail(KILN_RT_ERROR_OUT_OF_MEMORY, "out of host memory for NCCL");
  }
  for (int r = 0; r < n; r++) ordinals[r] = kiln_rt_cuda_ordinal(devs[r]);
  c->n = n;
  ncclResult_t res = nc.ncclCommInitAll(c->comms, n, ordinals);
  free(ordinals);
  if (res != 0) {
    free(c);
    return nccl_fail(res, "ncclCommInitAll");
  }
  *impl = c;
  return KILN_RT_OK;
}

void kiln_rt_cuda_comm_destroy(void *impl) {
  NcclComm *c = impl;
  for (int r = 0; r < c->n; r++) nc.ncclCommDestroy(c->comms[r]);
  free(c);
}

KilnRtStatus kiln_rt_cuda_comm_allreduce_sum_f32(void *impl, float *const *bufs, size_t count,
                                                 KilnRtStream *const *streams) {
  NcclComm *c = impl;
  ncclResult_t res = nc.ncclGroupStart();
  if (res != 0) return nccl_fail(res, "ncclGroupStart");
  ncclResult_t first = 0;
  for (int r = 0; r < c->n; r++) {
    void *s = streams && streams[r] ? streams[r]->impl : NULL; /* the CUstream; NULL: default */
    res = nc.ncclAllReduce(bufs[r], bufs[r], count, NCCL_FLOAT32, NCCL_SUM, c->comms[r], s);
    if (res != 0 && first == 0) first = res;
  }
  /* the group is ended whatever happened, or NCCL stays inside it */
  res = nc.ncclGroupEnd();
  if (first != 0) return nccl_fail(first, "ncclAllReduce");
  return res != 0 ? nccl_fail(res, "ncclGroupEnd") : KILN_RT_OK;
}
