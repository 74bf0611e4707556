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

/* The GPU back and the emu rewrite, as stage tables (pipeline.c), and the pipelines the GPU
 * targets run through kiln_pipeline_run (kiln_mlir.h):
 *   kiln_gpu_pipeline      front, kiln-gpu-layouts, kiln-gpu-convert-cse, convert-kiln-gpu-to-llvm,
 *                          convert-scf-to-cf, convert-to-llvm, canonicalize: llvm + nvvm for
 *                          sm_80 and sm_90
 *   kiln_gpu_pipeline_emu  the same, then kiln-gpu-to-emu: host code for the emulator
 * The layouts stage takes KilnStageOptions.num_warps and num_stages (> 0 override the kernel's
 * kiln.num_warps / kiln.num_stages) and smem_limit (recorded on each kernel as
 * kiln.smem_limit for the SIMT lowering). */
extern const KilnStageList kiln_gpu_stages;
extern const KilnStageList kiln_gpu_stages_emu;
extern const KilnPipeline kiln_gpu_pipeline;
extern const KilnPipeline kiln_gpu_pipeline_emu;

/* The emu target's module interface, per kernel NAME (after kiln_gpu_pipeline_emu, emitted with kiln_mlir_emit_host_object):
 *   void kiln_emu_entry_NAME(void **args)        args[i] points at the i-th parameter's value
 *   const uint32_t kiln_emu_meta_NAME[7]        {KILN_GPU_EMU_META_VERSION, threads per block,
 *                                                static shared bytes, number of parameters,
 *                                                dynamic shared bytes, offset bits (32 or 64,
 *                                                0 unknown), registers per thread (0 unknown)}
 *   const uint32_t kiln_emu_args_NAME[max(n, 1)] per parameter, the alignment in bytes its value
 *                                                must have (KILN_GPU_EMU_POINTER_ALIGN for
 *                                                pointers, 0 for scalars)
 *   const uint32_t kiln_emu_elems_NAME[max(n, 1)] per parameter, the bytes of the element a
 *                                                pointer points to (0 for scalars, or unknown)
 * The runtime's emu device (runtime/emu_device.c) reads the same layout. */
#define KILN_GPU_EMU_META_VERSION 3
/* Version 2 adds a fifth word: the dynamic shared bytes every launch needs (0 for a static
 * arena); the runtime adds them to what a launch asks for.  Version 1 modules have 4 words.
 * Version 3 adds the offset bits (kiln.index_bits: a kernel with 32-bit offsets refuses pointer
 * arguments that reach 2^31 elements) and the registers per thread (the module attribute
 * kiln.gpu.registers; 0 unknown, as the driver leaves it), and kiln_emu_elems_NAME. */
#define KILN_GPU_EMU_META_WORDS 7

/* Shared memory.  A kernel's arena up to KILN_GPU_STATIC_SMEM_LIMIT is a static `.shared`
 * array; above it, it is `.extern .shared` (dynamic shared memory, which a launch must ask for
 * and, above 48 KiB, opt in to), and the module records the size: the emu metadata's fifth
 * word, and for PTX a `.const .u32 kiln_dsmem_NAME` that the cuda device reads at load.  No
 * program may have more than kiln_gpu_smem_limit(arch): 227 KiB on sm_90 (and emu), 163 KiB on
 * sm_80 (the CUDA programming guide's per-block opt-in maxima). */
#define KILN_GPU_STATIC_SMEM_LIMIT (48 * 1024)
#define KILN_GPU_SMEM_LIMIT_SM90   (227 * 1024)
#define KILN_GPU_SMEM_LIMIT_SM80   (163 * 1024)
int kiln_gpu_smem_limit(const char *arch);
/* The architecture the lowering targets for arch (KilnStageOptions.sm): 80 for "sm_80", 90
 * otherwise (sm_90, and emu, which runs sm_90's code: stmatrix in the GEMM epilogue). */
int kiln_gpu_sm(const char *arch);
/* The alignment the GPU lowering assumes of every pointer argument (axis_info.c): vector loads
 * and stores of up to 16 bytes are emitted on that promise, so a launch must keep it. */
#define KILN_GPU_EMU_POINTER_ALIGN 16

/* PTX text for a module lowered to the llvm + nvvm dialects (after kiln_gpu_pipeline) for
 * arch "sm_80" or "sm_90", after LLVM's O3 pipeline.  *ptx is NUL terminated and owned by the
 * caller (free()); *len excludes the NUL.  KILN_MLIR_ERR_LLVM when translation or
 * code generation fails (a diagnostic on m's context says why). */
KilnMlirStatus kiln_gpu_emit_ptx(MlirModule m, const char *arch, char **ptx, size_t *len);
/* kiln_gpu_emit_ptx, telling `hook` (may be NULL) after each of its steps: "llvm-translate"
 * (llvm dialect to LLVM IR), "llvm-opt" (LLVM's O3 pipeline), "nvptx-codegen" (PTX text). */
KilnMlirStatus kiln_gpu_emit_ptx_steps(MlirModule m, const char *arch, const KilnStepHook *hook,
                                       char **ptx, size_t *len);

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
                              void **cubin, size_t *cubin_len, KilnGpuPtxasInfo *info, char **log);

#ifdef __cplusplus
}
#endif
#endif
