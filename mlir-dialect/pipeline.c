/* pipeline.c - the whole pass pipeline, listed once.
 *
 * Each stage is either one of our passes (run as an MLIR external pass) or an upstream pass
 * pipeline string.  kiln_pipeline_run walks the table in order, skips stages of other targets,
 * and prints the IR after a stage when asked (`dump_after`). */
#include "kiln_mlir_internal.h"

typedef enum StageTarget { FOR_ALL, FOR_CPU } StageTarget;

typedef struct Stage {
  const char *name;
  MlirPass (*create)(void); /* our pass, or NULL */
  const char *upstream;     /* upstream pipeline (anchored on builtin.module) */
  StageTarget target;
} Stage;

static const Stage stages[] = {
    {"verify", kiln_pass_create_verify, NULL, FOR_ALL},
    {"kiln-dce", kiln_pass_create_dce, NULL, FOR_ALL},
    {"canonicalize", NULL, "builtin.module(canonicalize)", FOR_ALL},
    {"cse", NULL, "builtin.module(cse)", FOR_ALL},
    {"convert-kiln-to-cpu", kiln_pass_create_convert_to_cpu, NULL, FOR_CPU},
    /* scalar code cleanup before it becomes LLVM; LLVM's O2 does the rest */
    {"cpu-canonicalize", NULL, "builtin.module(canonicalize,cse)", FOR_CPU},
    {"convert-scf-to-cf", NULL, "builtin.module(convert-scf-to-cf)", FOR_CPU},
    /* math-to-llvm first (intrinsics), then libm calls for what has no intrinsic (erf, tanh) */
    {"convert-math-to-llvm", NULL, "builtin.module(convert-math-to-llvm)", FOR_CPU},
    {"convert-math-to-libm", NULL, "builtin.module(convert-math-to-libm)", FOR_CPU},
    {"arith-expand", NULL, "builtin.module(arith-expand{include-bf16=true})", FOR_CPU},
    {"expand-strided-metadata", NULL, "builtin.module(expand-strided-metadata)", FOR_CPU},
    {"finalize-memref-to-llvm", NULL, "builtin.module(finalize-memref-to-llvm)", FOR_CPU},
    {"convert-arith-to-llvm", NULL, "builtin.module(convert-arith-to-llvm)", FOR_CPU},
    {"convert-index-to-llvm", NULL, "builtin.module(convert-index-to-llvm)", FOR_CPU},
    {"convert-cf-to-llvm", NULL, "builtin.module(convert-cf-to-llvm)", FOR_CPU},
    {"convert-func-to-llvm", NULL, "builtin.module(convert-func-to-llvm)", FOR_CPU},
    {"reconcile-unrealized-casts", NULL, "builtin.module(reconcile-unrealized-casts)", FOR_CPU},
};
enum { N_STAGES = sizeof stages / sizeof stages[0] };

size_t kiln_pipeline_stage_count(void) { return N_STAGES; }

const char *kiln_pipeline_stage_name(size_t i) { return i < N_STAGES ? stages[i].name : NULL; }

static int find_stage(const char *name) {
  for (int i = 0; i < N_STAGES; i++)
    if (strcmp(stages[i].name, name) == 0)
      return i;
  return -1;
}

static MlirLocation module_loc(MlirModule m) {
  return mlirOperationGetLocation(mlirModuleGetOperation(m));
}

static void unknown_stage(MlirModule m, const char *name) {
  KilnStr s = {0};
  kiln_str_appendf(&s, "unknown pipeline stage '%s'; valid stages:", name);
  for (int i = 0; i < N_STAGES; i++)
    kiln_str_appendf(&s, "%s %s", i ? "," : "", stages[i].name);
  mlirEmitError(module_loc(m), s.data);
  kiln_str_free(&s);
}

static void pipeline_error(MlirStringRef msg, void *user) {
  kiln_str_append(user, msg.data, msg.length);
}

static KilnMlirStatus run_pm(MlirModule m, MlirPassManager pm) {
  MlirLogicalResult r = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m));
  mlirPassManagerDestroy(pm);
  return mlirLogicalResultIsSuccess(r) ? KILN_MLIR_OK : KILN_MLIR_ERR_PASS;
}

KilnMlirStatus kiln_pipeline_run_string(MlirModule m, const char *pipeline) {
  MlirContext ctx = mlirModuleGetContext(m);
  KilnStr text = {0};
  if (strncmp(pipeline, "builtin.module(", 15) == 0)
    kiln_str_appendf(&text, "%s", pipeline);
  else
    kiln_str_appendf(&text, "builtin.module(%s)", pipeline);
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  KilnStr err = {0};
  MlirLogicalResult ok = mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                               mlirStringRefCreate(text.data, text.len),
                                               pipeline_error, &err);
  kiln_str_free(&text);
  if (mlirLogicalResultIsFailure(ok)) {
    kiln_ir_error(module_loc(m), "bad pass pipeline '%s': %s", pipeline,
                  err.data ? err.data : "");
    kiln_str_free(&err);
    mlirPassManagerDestroy(pm);
    return KILN_MLIR_ERR_INVALID;
  }
  kiln_str_free(&err);
  return run_pm(m, pm);
}

static KilnMlirStatus run_one(MlirModule m, const Stage *s) {
  if (!s->create)
    return kiln_pipeline_run_string(m, s->upstream);
  MlirPassManager pm = mlirPassManagerCreate(mlirModuleGetContext(m));
  mlirPassManagerAddOwnedPass(pm, s->create());
  KilnMlirStatus st = run_pm(m, pm);
  if (st != KILN_MLIR_OK && s->create == kiln_pass_create_verify)
    st = KILN_MLIR_ERR_VERIFY;
  return st;
}

KilnMlirStatus kiln_pipeline_run_stage(MlirModule m, const char *stage) {
  int i = find_stage(stage);
  if (i < 0) {
    unknown_stage(m, stage);
    return KILN_MLIR_ERR_INVALID;
  }
  return run_one(m, &stages[i]);
}

static void print_to_file(MlirStringRef s, void *user) {
  fwrite(s.data, 1, s.length, (FILE *)user);
}

static void dump(MlirModule m, const char *stage, FILE *f) {
  fprintf(f, "// -----// IR Dump After %s //----- //\n", stage);
  mlirOperationPrint(mlirModuleGetOperation(m), print_to_file, f);
  fputc('\n', f);
}

static KilnMlirStatus check_target(MlirModule m, const char *target) {
  if (!target || strcmp(target, "cpu") == 0)
    return KILN_MLIR_OK;
  if (strcmp(target, "emu") == 0 || strcmp(target, "sm_80") == 0 ||
      strcmp(target, "sm_90") == 0)
    kiln_ir_error(module_loc(m),
                  "target '%s' is lowered by the GPU pipeline (kiln_gpu_pipeline_run); this one "
                  "is the cpu's", target);
  else
    kiln_ir_error(module_loc(m), "unknown target '%s' (known: cpu, emu, sm_80, sm_90)", target);
  return KILN_MLIR_ERR_INVALID;
}

KilnMlirStatus kiln_pipeline_run(MlirModule m, const KilnPipelineOptions *opts) {
  KilnPipelineOptions none = {0};
  if (!opts)
    opts = &none;
  KilnMlirStatus st = check_target(m, opts->target);
  if (st != KILN_MLIR_OK)
    return st;
  bool dump_all = opts->dump_after && strcmp(opts->dump_after, "all") == 0;
  if (opts->dump_after && !dump_all && find_stage(opts->dump_after) < 0) {
    unknown_stage(m, opts->dump_after);
    return KILN_MLIR_ERR_INVALID;
  }
  if (opts->stop_after && find_stage(opts->stop_after) < 0) {
    unknown_stage(m, opts->stop_after);
    return KILN_MLIR_ERR_INVALID;
  }
  FILE *out = opts->dump_file ? opts->dump_file : stderr;
  for (int i = 0; i < N_STAGES; i++) {
    /* only cpu exists today; other targets are refused by check_target */
    st = run_one(m, &stages[i]);
    if (st != KILN_MLIR_OK)
      return st;
    if (dump_all || (opts->dump_after && strcmp(opts->dump_after, stages[i].name) == 0))
      dump(m, stages[i].name, out);
    if (opts->stop_after && strcmp(opts->stop_after, stages[i].name) == 0)
      break;
  }
  return KILN_MLIR_OK;
}
