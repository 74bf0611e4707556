/* A stand-in libcuda.so.1 for machines without a GPU: it exports every entry point the runtime
 * resolves. By default cuInit fails the way the real driver does on a host without a GPU: the
 * runtime must report KILN_RT_ERROR_NO_DEVICE with the driver's own words. With
 * KILN_FAKE_CUDA_FREE=BYTES in the environment it instead shows one device ("Fake GPU", sm_90,
 * 132 SMs, twice BYTES in all) whose context opens and whose cuMemGetInfo reports BYTES free:
 * enough for the trainer's memory check (tests/kilnbert/runtime_only_test.sh) to refuse a
 * batch before anything is allocated. Nothing else works: the other entry points exist only so
 * that resolving them succeeds, and return an error if reached. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define NOT_REACHED 999

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
  *str = err == CUDA_ERROR_NO_DEVICE ? "fake driver: no CUDA-capable device is detected" : "fake driver: other";
  return 0;
}

int cuGetErrorName(int err, const char **str) {
  *str = err == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}

/* ---- the one fake device (KILN_FAKE_CUDA_FREE set) ---- */

int cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}

int cuDeviceGet(int *dev, int ordinal) {
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
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
  case 75: *value = 9; break;  /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
  case 76: *value = 0; break;  /* ..._MINOR */
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

#define STUB(name) \
  int name(void) { return NOT_REACHED; }
STUB(cuCtxSynchronize)
STUB(cuMemAlloc_v2)
STUB(cuMemFree_v2)
STUB(cuMemcpyHtoD_v2)
STUB(cuMemcpyDtoH_v2)
STUB(cuMemcpyDtoD_v2)
STUB(cuMemcpyHtoDAsync_v2)
STUB(cuMemcpyDtoHAsync_v2)
STUB(cuMemcpyDtoDAsync_v2)
STUB(cuMemsetD8_v2)
STUB(cuMemsetD8Async)
STUB(cuModuleLoadData)
STUB(cuModuleLoadDataEx)
STUB(cuModuleUnload)
STUB(cuModuleGetFunction)
STUB(cuModuleGetGlobal_v2)
STUB(cuFuncSetAttribute)
STUB(cuFuncGetAttribute)
STUB(cuLaunchKernel)
STUB(cuStreamCreate)
STUB(cuStreamDestroy_v2)
STUB(cuStreamSynchronize)
STUB(cuEventCreate)
STUB(cuEventRecord)
STUB(cuEventSynchronize)
STUB(cuEventElapsedTime)
STUB(cuEventDestroy_v2)
STUB(cuStreamBeginCapture_v2)
STUB(cuStreamEndCapture)
STUB(cuGraphInstantiateWithFlags)
STUB(cuGraphLaunch)
STUB(cuGraphExecDestroy)
STUB(cuGraphDestroy)
