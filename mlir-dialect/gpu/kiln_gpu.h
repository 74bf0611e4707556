/* kiln_gpu.h - the GPU code generator: kiln dialect -> layouts -> llvm + nvvm -> PTX -> cubin.
 *
 * Input: a module of kiln kernels as mlirgen makes them (docs/internals.md), in a context from
 * kiln_mlir_context_create.  The pipeline assigns a layout to every tile (kiln-gpu-layouts),
 * lowers each kernel to one SIMT llvm.func marked nvvm.kernel (convert-kiln-gpu-to-llvm) and
 * finishes with upstream passes to the llvm dialect; kiln_gpu_emit_ptx turns that into PTX with
 * LLVM's NVPTX target and kiln_gpu_ptxas assembles it.  How it works: docs/gpu-lowering.md.
 *
 * Errors follow kiln_mlir.h: problems in the IR are MLIR diagnostics on the module's context
 * (collected by the KilnMlirContext), the functions return a KilnMlirStatus.
 */
#ifndef KILN_GPU_H
#define KILN_GPU_H

#include <stddef.h>
#include <stdio.h>

#include "kiln_mlir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct KilnGpuOptions {
  const char *target;     /* "sm_80" (NULL means sm_80) or "sm_90"; "emu" is not implemented */
  int num_warps;          /* > 0 overrides each kernel's kiln.num_warps */
  int num_stages;         /* > 0 overrides each kernel's kiln.num_stages */
  const char *dump_after; /* NULL, a stage name (kiln_gpu_stage_name) or "all" */
  FILE *dump_file;        /* where dumps go; NULL = stderr */
  const char *stop_after; /* NULL or a stage name: run no stage after it */
} KilnGpuOptions;

/* Runs the GPU pipeline on m in place: kiln-gpu-layouts, convert-kiln-gpu-to-llvm, then the
 * upstream stages down to the llvm dialect.  Returns KILN_MLIR_ERR_INVALID for an unknown target
 * or stage name, KILN_MLIR_ERR_PASS when a stage failed (diagnostics say why; m may be half
 * lowered).  o may be NULL (defaults). */
KilnMlirStatus kiln_gpu_pipeline_run(MlirModule m, const KilnGpuOptions *o);
size_t kiln_gpu_stage_count(void);
const char *kiln_gpu_stage_name(size_t i); /* NULL past the end */

/* The passes, for callers composing their own pass managers (e.g. a kiln-opt tool).  Each
 * returns a new pass owned by the caller until added to a pass manager.  num_warps > 0
 * overrides kiln.num_warps. */
MlirPass kiln_gpu_pass_create_layouts(int num_warps);
MlirPass kiln_gpu_pass_create_to_llvm(void);

/* PTX text for a module lowered to the llvm + nvvm dialects (after kiln_gpu_pipeline_run) for
 * arch "sm_80" or "sm_90", after LLVM's O3 pipeline.  *ptx is NUL terminated and owned by the
 * caller (free()); *len excludes the NUL.  KILN_MLIR_ERR_LLVM when translation or
 * code generation fails (a diagnostic on m's context says why). */
KilnMlirStatus kiln_gpu_emit_ptx(MlirModule m, const char *arch, char **ptx, size_t *len);

/* What ptxas -v reported for the kernels of one PTX text (sums over entries, max registers). */
typedef struct KilnGpuPtxasInfo {
  int registers;
  int spill_stores; /* bytes */
  int spill_loads;  /* bytes */
  int shared_bytes; /* static shared memory */
  int stack_bytes;  /* stack frame */
  int entries;      /* number of kernels reported */
} KilnGpuPtxasInfo;

/* Runs `ptxas -v -arch=ARCH` (the program at ptxas_path, or "ptxas" looked up on PATH when NULL;
 * started with posix_spawn, no shell) on ptx in a temporary directory.  On success *cubin (may be
 * NULL to discard) receives the cubin (free with free()), *info the parsed report.
 * The tool's full output goes to *log when log is non-NULL (caller frees with
 * free()), also on failure.  KILN_MLIR_ERR_INVALID for bad arguments,
 * KILN_MLIR_ERR_LLVM when ptxas could not run or rejected the PTX. */
KilnMlirStatus kiln_gpu_ptxas(const char *ptxas_path, const char *ptx, const char *arch,
                              void **cubin, size_t *cubin_len, KilnGpuPtxasInfo *info,
                              char **log);

#ifdef __cplusplus
}
#endif
#endif
