/* pipeline.c - the one pipeline runner, and the stages every target shares.
 *
 * A pipeline is a list of parts, each a table of stages (kiln_mlir.h): the front here
 * (verify, widen-offsets, kiln-dce) runs for every target; cpu/pipeline.c lists the cpu back and
 * gpu/pipeline.c the GPU back and the emu rewrite in the same table type.  Each target's
 * pipeline is the same data run by the same function, so --dump-after, --stop-after and the
 * stage list mean the same thing on every target.
 *
 * Each stage runs in a pass manager of its own, so that the IR can be printed between any two
 * stages (`dump_after`) and the run stopped after any of them (`stop_after`).
 *
 * MLIR's verifier runs after each of our stages, after the last stage run and after any stage
 * whose IR is printed, not after the upstream stages in between: those take verified IR and are
 * upstream's to keep valid, and on the unrolled GPU code each verification costs ~7 ms (three of
 * them were 5% of attn_bwd_dkdv's compile).  What a bug of ours breaks is still caught by the
 * verification after the stage that broke it. */
#include "kiln_mlir_internal.h"

/* ---------------------------------------------------------------- the stage tables */

/* verify and kiln-dce take no options; the stage signature lets widen-offsets and the GPU's
 * passes take theirs. */
static MlirPass create_verify(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_verify();
}
static MlirPass create_dce(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_dce();
}

static const KilnStage front_stages[] = {
    {"verify", create_verify, NULL, KILN_MLIR_ERR_VERIFY},
    {"widen-offsets", kiln_pass_create_widen_offsets, NULL, 0},
    {"kiln-dce", create_dce, NULL, 0},
};

const KilnStageList kiln_stages_front = {front_stages, sizeof front_stages / sizeof *front_stages};

/* ---------------------------------------------------------------- walking a pipeline */

size_t kiln_pipeline_stage_count(const KilnPipeline *p) {
  size_t n = 0;
  for (int i = 0; i < KILN_PIPELINE_MAX_PARTS && p->parts[i]; i++) n += p->parts[i]->count;
  return n;
}

static const KilnStage *stage_at(const KilnPipeline *p, size_t i) {
  for (int k = 0; k < KILN_PIPELINE_MAX_PARTS && p->parts[k]; k++) {
    if (i < p->parts[k]->count) return &p->parts[k]->stages[i];
    i -= p->parts[k]->count;
  }
  return NULL;
}

const char *kiln_pipeline_stage_name(const KilnPipeline *p, size_t i) {
  const KilnStage *s = stage_at(p, i);
  return s ? s->name : NULL;
}

const KilnStage *kiln_pipeline_find(const KilnPipeline *p, const char *name) {
  for (size_t i = 0; name && stage_at(p, i); i++)
    if (strcmp(stage_at(p, i)->name, name) == 0) return stage_at(p, i);
  return NULL;
}

/* ---------------------------------------------------------------- running */

static MlirLocation module_loc(MlirModule m) {
  return mlirOperationGetLocation(mlirModuleGetOperation(m));
}

static void unknown_stage(MlirModule m, const KilnPipeline *p, const char *name) {
  KilnStr s = {0};
  kiln_str_appendf(&s, "unknown pipeline stage '%s'; valid stages:", name);
  for (size_t i = 0; kiln_pipeline_stage_name(p, i); i++)
    kiln_str_appendf(&s, "%s %s", i ? "," : "", kiln_pipeline_stage_name(p, i));
  mlirEmitError(module_loc(m), s.data);
  kiln_str_free(&s);
}

static void pipeline_error(MlirStringRef msg, void *user) {
  kiln_str_append(user, msg.data, msg.length);
}

static KilnMlirStatus run_pm(MlirModule m, MlirPassManager pm, bool verify) {
  mlirPassManagerEnableVerifier(pm, verify);
  MlirLogicalResult r = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m));
  mlirPassManagerDestroy(pm);
  return mlirLogicalResultIsSuccess(r) ? KILN_MLIR_OK : KILN_MLIR_ERR_PASS;
}

static KilnMlirStatus run_string(MlirModule m, const char *pipeline, bool verify) {
  MlirContext ctx = mlirModuleGetContext(m);
  KilnStr text = {0};
  if (strncmp(pipeline, "builtin.module(", 15) == 0)
    kiln_str_appendf(&text, "%s", pipeline);
  else
    kiln_str_appendf(&text, "builtin.module(%s)", pipeline);
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  KilnStr err = {0};
  MlirLogicalResult ok =
      mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                            mlirStringRefCreate(text.data, text.len), pipeline_error, &err);
  kiln_str_free(&text);
  if (mlirLogicalResultIsFailure(ok)) {
    kiln_ir_error(module_loc(m), "bad pass pipeline '%s': %s", pipeline, err.data ? err.data : "");
    kiln_str_free(&err);
    mlirPassManagerDestroy(pm);
    return KILN_MLIR_ERR_INVALID;
  }
  kiln_str_free(&err);
  return run_pm(m, pm, verify);
}

KilnMlirStatus kiln_pipeline_run_string(MlirModule m, const char *pipeline) {
  return run_string(m, pipeline, true);
}

/* An upstream stage verifies only when asked (`verify`); ours always do. */
static KilnMlirStatus run_one(MlirModule m, const KilnStage *s, const KilnStageOptions *o,
                              bool verify) {
  if (!s->create) return run_string(m, s->upstream, verify);
  KilnStageOptions none = {0};
  MlirPassManager pm = mlirPassManagerCreate(mlirModuleGetContext(m));
  mlirPassManagerAddOwnedPass(pm, s->create(o ? o : &none));
  KilnMlirStatus st = run_pm(m, pm, true);
  if (st != KILN_MLIR_OK && s->failure != KILN_MLIR_OK) st = s->failure;
  return st;
}

KilnMlirStatus kiln_pipeline_run_stage(MlirModule m, const KilnPipeline *p, const char *stage,
                                       const KilnStageOptions *opts) {
  const KilnStage *s = kiln_pipeline_find(p, stage);
  if (!s) {
    unknown_stage(m, p, stage);
    return KILN_MLIR_ERR_INVALID;
  }
  return run_one(m, s, opts, true);
}

static void print_to_file(MlirStringRef s, void *user) {
  fwrite(s.data, 1, s.length, (FILE *)user);
}

static void dump(MlirModule m, const char *stage, FILE *f) {
  fprintf(f, "// -----// IR Dump After %s //----- //\n", stage);
  mlirOperationPrint(mlirModuleGetOperation(m), print_to_file, f);
  fputc('\n', f);
}

/* A dump or stop stage must be one of p's ("all" dumps after each). */
static bool stage_option_ok(MlirModule m, const KilnPipeline *p, const char *name, bool all_ok) {
  if (!name || (all_ok && strcmp(name, "all") == 0) || kiln_pipeline_find(p, name)) return true;
  unknown_stage(m, p, name);
  return false;
}

KilnMlirStatus kiln_pipeline_run(MlirModule m, const KilnPipeline *p,
                                 const KilnPipelineOptions *opts) {
  KilnPipelineOptions none = {0};
  if (!opts) opts = &none;
  if (!stage_option_ok(m, p, opts->dump_after, true) ||
      !stage_option_ok(m, p, opts->stop_after, false))
    return KILN_MLIR_ERR_INVALID;
  bool dump_all = opts->dump_after && strcmp(opts->dump_after, "all") == 0;
  FILE *out = opts->dump_file ? opts->dump_file : stderr;
  for (size_t i = 0; stage_at(p, i); i++) {
    const KilnStage *s = stage_at(p, i);
    bool dumped = dump_all || (opts->dump_after && strcmp(opts->dump_after, s->name) == 0);
    bool last = !stage_at(p, i + 1) || (opts->stop_after && strcmp(opts->stop_after, s->name) == 0);
    KilnMlirStatus st = run_one(m, s, &opts->stage, dumped || last);
    if (st != KILN_MLIR_OK) return st;
    if (opts->step_done.done) opts->step_done.done(opts->step_done.user, s->name);
    if (dumped) dump(m, s->name, out);
    if (opts->stop_after && strcmp(opts->stop_after, s->name) == 0) break;
  }
  return KILN_MLIR_OK;
}
