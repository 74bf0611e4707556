/* pipeline.c - the GPU pipeline, listed once: our two passes, then the upstream stages that
 * finish the lowering to the llvm dialect.  Each stage runs in its own pass manager so that
 * --dump-after can print the IR after any of them. */
#include "gpu_internal.h"

#include <stdio.h>

static _Alignas(8) char layouts_id, to_llvm_id, to_emu_id;

MlirPass kiln_gpu_pass_create_layouts(int num_warps) {
  return kiln_gpu_pass_make(mlirTypeIDCreate(&layouts_id), "KilnGpuLayouts", "kiln-gpu-layouts",
                            "assign blocked/slice layouts to kiln tiles for the GPU",
                            kiln_gpu_layouts_module, &num_warps, sizeof num_warps);
}

MlirPass kiln_gpu_pass_create_to_llvm(void) {
  return kiln_gpu_pass_make(mlirTypeIDCreate(&to_llvm_id), "KilnGpuToLLVM",
                            "convert-kiln-gpu-to-llvm",
                            "lower laid-out kiln kernels to SIMT llvm + nvvm functions",
                            kiln_gpu_to_llvm_module, NULL, 0);
}

MlirPass kiln_gpu_pass_create_to_emu(void) {
  return kiln_gpu_pass_make(mlirTypeIDCreate(&to_emu_id), "KilnGpuToEmu", "kiln-gpu-to-emu",
                            "replace nvvm ops and GPU address spaces by GPU emulator calls",
                            kiln_gpu_to_emu_module, NULL, 0);
}

typedef enum StageKind { STAGE_LAYOUTS, STAGE_TO_LLVM, STAGE_UPSTREAM, STAGE_TO_EMU } StageKind;

typedef struct Stage {
  const char *name;
  StageKind kind;
  const char *pipeline; /* upstream stages */
} Stage;

static const Stage stages[] = {
    {"kiln-gpu-layouts", STAGE_LAYOUTS, NULL},
    {"convert-kiln-gpu-to-llvm", STAGE_TO_LLVM, NULL},
    {"convert-scf-to-cf", STAGE_UPSTREAM, "builtin.module(convert-scf-to-cf)"},
    {"convert-to-llvm", STAGE_UPSTREAM,
     "builtin.module(convert-math-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,"
     "reconcile-unrealized-casts)"},
    {"canonicalize", STAGE_UPSTREAM, "builtin.module(canonicalize,cse)"},
    {"kiln-gpu-to-emu", STAGE_TO_EMU, NULL}, /* the emu target only */
};
#define N_STAGES (sizeof stages / sizeof stages[0])

size_t kiln_gpu_stage_count(void) { return N_STAGES; }
const char *kiln_gpu_stage_name(size_t i) { return i < N_STAGES ? stages[i].name : NULL; }

static bool stage_known(const char *name) {
  if (!name || strcmp(name, "all") == 0)
    return true;
  for (size_t i = 0; i < N_STAGES; i++)
    if (strcmp(stages[i].name, name) == 0)
      return true;
  return false;
}

static KilnMlirStatus run_stage(MlirModule m, const Stage *s, const KilnGpuOptions *o) {
  MlirContext ctx = mlirModuleGetContext(m);
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult r;
  if (s->kind == STAGE_UPSTREAM) {
    MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
    /* Strip the builtin.module( ... ) anchor: the pass manager is already on the module. */
    const char *p = s->pipeline;
    size_t len = strlen(p);
    static const char pre[] = "builtin.module(";
    r = mlirOpPassManagerAddPipeline(
        opm, mlirStringRefCreate(p + sizeof pre - 1, len - sizeof pre), NULL, NULL);
    if (mlirLogicalResultIsFailure(r)) {
      mlirPassManagerDestroy(pm);
      return KILN_MLIR_ERR_INVALID;
    }
  } else {
    int nw = o ? o->num_warps : 0;
    mlirPassManagerAddOwnedPass(pm, s->kind == STAGE_LAYOUTS   ? kiln_gpu_pass_create_layouts(nw)
                                    : s->kind == STAGE_TO_LLVM ? kiln_gpu_pass_create_to_llvm()
                                                               : kiln_gpu_pass_create_to_emu());
  }
  r = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m));
  mlirPassManagerDestroy(pm);
  return mlirLogicalResultIsSuccess(r) ? KILN_MLIR_OK : KILN_MLIR_ERR_PASS;
}

static void dump(MlirModule m, const char *stage, FILE *f) {
  fprintf(f, "// -----// IR after %s //----- //\n", stage);
  KilnStr s = {0};
  mlirOperationPrint(mlirModuleGetOperation(m), kiln_str_callback, &s);
  if (s.data)
    fputs(s.data, f);
  fputc('\n', f);
  kiln_str_free(&s);
}

KilnMlirStatus kiln_gpu_pipeline_run(MlirModule m, const KilnGpuOptions *o) {
  const char *target = o && o->target ? o->target : "sm_80";
  bool emu = strcmp(target, "emu") == 0;
  if (strcmp(target, "sm_80") != 0 && strcmp(target, "sm_90") != 0 && !emu) {
    kiln_ir_error(mlirOperationGetLocation(mlirModuleGetOperation(m)),
                  "GPU target '%s' is not supported (sm_80, sm_90, emu)", target);
    return KILN_MLIR_ERR_INVALID;
  }
  if (o && (!stage_known(o->dump_after) || !stage_known(o->stop_after))) {
    kiln_ir_error(mlirOperationGetLocation(mlirModuleGetOperation(m)), "unknown GPU stage name");
    return KILN_MLIR_ERR_INVALID;
  }
  if (o && o->num_stages > 0) {
    /* Recorded for the lowering; a pipelined K loop is not generated yet (docs/gpu-lowering.md). */
    MlirOperation ks[256];
    size_t n = kiln_gpu_kernels(mlirModuleGetOperation(m), ks, 256);
    MlirContext ctx = mlirModuleGetContext(m);
    for (size_t i = 0; i < n && i < 256; i++)
      mlirOperationSetAttributeByName(ks[i], mlirStringRefCreateFromCString("kiln.num_stages"),
                                      kiln_ir_attr_i32(ctx, o->num_stages));
  }
  for (size_t i = 0; i < N_STAGES; i++) {
    if (stages[i].kind == STAGE_TO_EMU && !emu)
      continue;
    KilnMlirStatus st = run_stage(m, &stages[i], o);
    if (st != KILN_MLIR_OK)
      return st;
    if (o && o->dump_after &&
        (strcmp(o->dump_after, "all") == 0 || strcmp(o->dump_after, stages[i].name) == 0))
      dump(m, stages[i].name, o->dump_file ? o->dump_file : stderr);
    if (o && o->stop_after && strcmp(o->stop_after, stages[i].name) == 0)
      break;
  }
  return KILN_MLIR_OK;
}
