/* A stand-in libcuda.so.1 for machines without a GPU: it exports every entry point the runtime
 * resolves, and cuInit fails the way the real driver does on a host without a GPU. The runtime must
 * report KILN_RT_ERROR_NO_DEVICE with the driver's own words. Only cuInit and the error-string
 * calls are reached; the rest exist so that resolving them succeeds. */
#include <stddef.h>

#define CUDA_ERROR_NO_DEVICE 100
#define NOT_REACHED 999

int cuInit(unsigned int flags) {
  (void)flags;
  return CUDA_ERROR_NO_DEVICE;
}

int cuGetErrorString(int err, const char **str) {
  *str = err == CUDA_ERROR_NO_DEVICE ? "fake driver: no CUDA-capable device is detected" : "fake driver: other";
  return 0;
}

int cuGetErrorName(int err, const char **str) {
  *str = err == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}

#define STUB(name) \
  int name(void) { return NOT_REACHED; }
STUB(cuDriverGetVersion)
STUB(cuDeviceGetCount)
STUB(cuDeviceGet)
STUB(cuDeviceGetName)
STUB(cuDeviceGetAttribute)
STUB(cuDeviceTotalMem_v2)
STUB(cuDevicePrimaryCtxRetain)
STUB(cuDevicePrimaryCtxRelease_v2)
STUB(cuCtxSetCurrent)
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
