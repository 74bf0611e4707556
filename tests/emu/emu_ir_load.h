/* emu_ir_load.h — hand-written SIMT IR onto the runtime's emu device, for the tests that write
 * their kernels below the language (test_emu_lowered.c, test_emu_sanitize.c).
 *
 * The IR text runs through the emu target's own stage, kiln-gpu-to-emu (through the one pipeline
 * runner), is emitted as a host object and loaded as a module. Header-only, like the CHECK it
 * reports through (tests/common/check.h counts failures per program). */
#ifndef KILN_TEST_EMU_IR_LOAD_H
#define KILN_TEST_EMU_IR_LOAD_H

#include "../common/check.h"
#include "kiln_gpu.h"
#include "kiln_mlir.h"

#include <kiln/kilnrt.h>

#include "mlir-c/IR.h"

#include <stdio.h>

/* IR text -> kiln-gpu-to-emu -> host object -> module on dev. NULL (and a failed CHECK naming
 * `what`) on error. */
static inline KilnRtModule *emu_ir_load(KilnRtDevice *dev, const char *ir, const char *what) {
  KilnMlirContext *kctx = kiln_mlir_context_create();
  if (!kctx) {
    CHECK(0, "%s: no MLIR context", what);
    return NULL;
  }
  KilnRtModule *mod = NULL;
  MlirModule m = kiln_mlir_parse(kctx, ir);
  if (mlirModuleIsNull(m)) {
    kiln_mlir_diag_print(kctx, stderr);
    CHECK(0, "%s: the IR does not parse", what);
    kiln_mlir_context_destroy(kctx);
    return NULL;
  }
  KilnMlirStatus rs = kiln_pipeline_run_stage(m, &kiln_gpu_pipeline_emu, "kiln-gpu-to-emu", NULL);
  void *obj = NULL;
  size_t len = 0;
  if (rs != KILN_MLIR_OK) {
    kiln_mlir_diag_print(kctx, stderr);
    CHECK(0, "%s: kiln-gpu-to-emu failed", what);
  } else if (kiln_mlir_emit_host_object(m, 2, NULL, &obj, &len) != KILN_MLIR_OK) {
    kiln_mlir_diag_print(kctx, stderr);
    CHECK(0, "%s: no host object", what);
  } else {
    KilnRtStatus st = kiln_rt_module_load(dev, KILN_RT_MODULE_HOST_OBJECT, obj, len, &mod);
    CHECK(st == KILN_RT_OK, "%s: module load: %s", what, kiln_rt_last_error());
    if (st != KILN_RT_OK) mod = NULL;
  }
  kiln_mlir_buffer_free(obj);
  mlirModuleDestroy(m);
  kiln_mlir_context_destroy(kctx);
  return mod;
}

#endif
