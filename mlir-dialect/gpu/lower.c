#include "gpu_internal.h"
MlirLogicalResult kiln_gpu_to_llvm_module(MlirOperation module, void *opts) {
  (void)module; (void)opts;
  return mlirLogicalResultFailure();
}
