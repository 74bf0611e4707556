/* kiln_cpu.h - the CPU back end: kiln kernels -> host functions (scf + memref + arith + math) ->
 * the llvm dialect, emitted as a host object by kiln_mlir_emit_host_object.
 *
 * Input: a module of kiln kernels as mlirgen makes them (docs/internals.md).  The cpu back
 * rebuilds each kernel as `kiln_cpu_NAME`, the CPU kernel ABI of docs/internals.md, and lowers
 * it with upstream passes; errors follow kiln_mlir.h (diagnostics on the module's context, a
 * KilnMlirStatus from the runner). */
#ifndef KILN_CPU_H
#define KILN_CPU_H

#include "kiln_mlir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The cpu target's pipeline (run by kiln_pipeline_run, kiln_mlir.h):
 *   kiln_stages_cpu    canonicalize, cse, convert-kiln-to-cpu, cpu-canonicalize, kiln-cpu-math,
 *                      then one stage per upstream pass down to the llvm dialect
 *   kiln_pipeline_cpu  the shared front (verify, kiln-dce), then kiln_stages_cpu */
extern const KilnStageList kiln_stages_cpu;
extern const KilnPipeline kiln_pipeline_cpu;

/* convert-kiln-to-cpu alone, for callers composing their own pass managers: a new pass owned by
 * the caller until added to a pass manager. */
MlirPass kiln_pass_create_convert_to_cpu(void);
/* kiln-cpu-math alone (cpu_math.c): exp, exp2, erf and tanh of f32 (f16, bf16 through f32) as
 * arithmetic the loop vectorizer widens, in place of scalar libm calls. */
MlirPass kiln_pass_create_cpu_math(void);

#ifdef __cplusplus
}
#endif
#endif
