/* pipeline.c - the GPU back of the pipeline and the emu rewrite, as stage tables that the one
 * runner (mlir-dialect/pipeline.c) runs after the shared front:
 *
 *   sm_80, sm_90: front, kiln-gpu-layouts, kiln-gpu-convert-cse, kiln-gpu-pipeline (dot
 *                 operands of loops through rings of shared buffers, as IR), kiln-gpu-smem-alloc
 *                 (the buffers' offsets), convert-kiln-gpu-to-llvm,
 *                 kiln-exit-loops (loops with a break become scf.while), kiln-scf-to-cf (ifs and
 *                 loops to branches in linear time), then the upstream stages that finish the
 *                 lowering to the llvm + nvvm dialects
 *   emu:          the same, then kiln-gpu-to-emu (nvvm ops become calls into the emulator)
 *
 * The emu target is the sm_80 lowering plus one rewrite, so the code the emulator runs is the
 * code a GPU would run; listing it as one more part keeps that visible. */
#include "gpu_internal.h"

static _Alignas(8) char layouts_id, convert_cse_id, pipeline_id, smem_alloc_id,
    to_llvm_id, to_emu_id;

/* An i32 attribute on every kernel, for the lowering (which has no options of its own):
 * kiln.num_stages as the caller asked (kiln_mlirgen writes the kernel's own; a pipelined K loop
 * needs the promises of docs/gpu-lowering.md), kiln.smem_limit, the target's shared memory, and
 * kiln.sm, its architecture. */
static void record_on_kernels(MlirOperation module, const char *attr, int value) {
  MlirContext ctx = mlirOperationGetContext(module);
  KilnOpList ks = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  for (size_t i = 0; i < ks.n; i++)
    mlirOperationSetAttributeByName(ks.ops[i], mlirStringRefCreateFromCString(attr),
                                    kiln_ir_attr_i32(ctx, value));
  kiln_op_list_free(&ks);
}

int kiln_gpu_sm(const char *arch) { return arch && strcmp(arch, "sm_80") == 0 ? 80 : 90; }

int kiln_gpu_smem_limit(const char *arch) {
  return arch && strcmp(arch, "sm_80") == 0 ? KILN_GPU_SMEM_LIMIT_SM80 : KILN_GPU_SMEM_LIMIT_SM90;
}

static MlirLogicalResult layouts_body(MlirOperation module, void *opts) {
  const KilnStageOptions *o = opts;
  if (o->num_stages > 0) record_on_kernels(module, "kiln.num_stages", o->num_stages);
  if (o->smem_limit > 0) record_on_kernels(module, "kiln.smem_limit", o->smem_limit);
  if (o->sm > 0) record_on_kernels(module, "kiln.sm", o->sm);
  int num_warps = o->num_warps;
  return kiln_gpu_layouts_module(module, &num_warps);
}

static MlirPass create_layouts(const KilnStageOptions *o) {
  return kiln_pass_make(mlirTypeIDCreate(&layouts_id), "KilnGpuLayouts", "kiln-gpu-layouts",
                        "assign blocked/slice layouts to kiln tiles for the GPU", layouts_body, o,
                        sizeof *o);
}

static MlirPass create_convert_cse(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_make(mlirTypeIDCreate(&convert_cse_id), "KilnGpuConvertCse",
                        "kiln-gpu-convert-cse",
                        "merge identical convert_layouts (one per value and layout)",
                        kiln_gpu_convert_cse_module, NULL, 0);
}

static MlirPass create_pipeline(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_make(mlirTypeIDCreate(&pipeline_id), "KilnGpuPipeline", "kiln-gpu-pipeline",
                        "stage dot operands loaded in loops through rings of shared buffers "
                        "filled by async copies",
                        kiln_gpu_pipeline_module, NULL, 0);
}

static MlirPass create_smem_alloc(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_make(
      mlirTypeIDCreate(&smem_alloc_id), "KilnGpuSmemAlloc", "kiln-gpu-smem-alloc",
      "give shared buffers byte offsets (with liveness) within the target's limit",
      kiln_gpu_smem_alloc_module, NULL, 0);
}

static MlirPass create_to_llvm(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_make(mlirTypeIDCreate(&to_llvm_id), "KilnGpuToLLVM", "convert-kiln-gpu-to-llvm",
                        "lower laid-out kiln kernels to SIMT llvm + nvvm functions",
                        kiln_gpu_to_llvm_module, NULL, 0);
}

static MlirPass create_to_emu(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_make(mlirTypeIDCreate(&to_emu_id), "KilnGpuToEmu", "kiln-gpu-to-emu",
                        "replace nvvm ops and GPU address spaces by GPU emulator calls",
                        kiln_gpu_to_emu_module, NULL, 0);
}

static MlirPass create_exit_loops(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_exit_loops();
}

static MlirPass create_scf_to_cf(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_scf_to_cf();
}

static const KilnStage gpu_stages[] = {
    {"kiln-gpu-layouts", create_layouts, NULL, 0},
    {"kiln-gpu-convert-cse", create_convert_cse, NULL, 0},
    {"kiln-gpu-pipeline", create_pipeline, NULL, 0},
    {"kiln-gpu-smem-alloc", create_smem_alloc, NULL, 0},
    {"convert-kiln-gpu-to-llvm", create_to_llvm, NULL, 0},
    {"kiln-exit-loops", create_exit_loops, NULL, 0},
    /* ifs and loops in linear time (upstream's is quadratic in a long unrolled block), then
     * upstream's for the rest (the scf.while of kiln-exit-loops) */
    {"kiln-scf-to-cf", create_scf_to_cf, NULL, 0},
    {"convert-scf-to-cf", NULL, "convert-scf-to-cf", 0},
    /* one cse first: the lowering repeats constants and thread ids, which the conversions would
     * otherwise each convert (a third of their time on the attention kernels) */
    {"cse", NULL, "cse", 0},
    {"convert-to-llvm", NULL,
     "convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts", 0},
    {"canonicalize", NULL, "canonicalize,cse", 0},
};

static const KilnStage emu_stages[] = {
    {"kiln-gpu-to-emu", create_to_emu, NULL, 0},
};

const KilnStageList kiln_gpu_stages = {gpu_stages, sizeof gpu_stages / sizeof *gpu_stages};
const KilnStageList kiln_gpu_stages_emu = {emu_stages, sizeof emu_stages / sizeof *emu_stages};
const KilnPipeline kiln_gpu_pipeline = {"gpu", {&kiln_stages_front, &kiln_gpu_stages}};
const KilnPipeline kiln_gpu_pipeline_emu = {
    "emu", {&kiln_stages_front, &kiln_gpu_stages, &kiln_gpu_stages_emu}};
