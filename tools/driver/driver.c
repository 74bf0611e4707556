/* driver.c — the compile pipeline end to end, written once.
 *
 *   read source → parse → sema (consts bound) → [ast] → mlirgen → the target's pipeline:
 *     front (verify → [mlir], kiln-dce) → cpu back, or GPU back (layouts → [gpu-mlir] → SIMT)
 *     [+ emu rewrite] → [lowered mlir] → [llvm] / [obj] (cpu, emu) / [ptx] → [cubin] (sm_*)
 *
 * The small target table below says which pipeline (kiln_cpu.h, kiln_gpu.h) lowers each
 * target and what it can emit; the stages themselves are listed once, in those pipelines.
 *
 * User errors at any stage are diagnostics rendered against the source with a caret (MLIR's
 * diagnostics carry the file:line:col of the expression an op came from, so they are folded
 * back into the frontend's list and rendered the same way). */
#include "kiln_driver.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_cpu.h"
#include "kiln_frontend.h"
#include "kiln_gpu.h"
#include "kiln_mlir.h"
#include "kiln_mlirgen.h"

#include <kiln/kilnrt.h>

static const char *const emit_names[KILN_EMIT_COUNT] = {"ast", "mlir",     "lowered-mlir", "llvm",
                                                        "obj", "gpu-mlir", "ptx",          "cubin"};

/* The targets: the pipeline that lowers a kiln module for each, and what comes out of it.
 * emu is the sm_90 lowering plus the emulator rewrite, run on the host. */
typedef struct TargetInfo {
  const KilnPipeline *pipeline;
  bool gpu;         /* laid out for a GPU: --emit gpu-mlir */
  bool host_object; /* --emit obj (host code); otherwise ptx and cubin */
} TargetInfo;

static const TargetInfo targets[KILN_TARGET_COUNT] = {
    [KILN_TARGET_CPU] = {&kiln_pipeline_cpu, false, true},
    [KILN_TARGET_EMU] = {&kiln_gpu_pipeline_emu, true, true},
    [KILN_TARGET_SM80] = {&kiln_gpu_pipeline, true, false},
    [KILN_TARGET_SM90] = {&kiln_gpu_pipeline, true, false},
};

const KilnPipeline *kiln_driver_pipeline(KilnTarget t) {
  return (unsigned)t < KILN_TARGET_COUNT ? targets[t].pipeline : NULL;
}

const char *kiln_emit_name(KilnEmit e) {
  return (unsigned)e < KILN_EMIT_COUNT ? emit_names[e] : "?";
}

KilnEmit kiln_emit_from_name(const char *name) {
  for (int i = 0; i < KILN_EMIT_COUNT; i++)
    if (name && strcmp(name, emit_names[i]) == 0) return (KilnEmit)i;
  return KILN_EMIT_COUNT;
}

void kiln_buffer_free(KilnBuffer *buf) {
  if (!buf) return;
  free(buf->data);
  buf->data = NULL;
  buf->size = 0;
}

/* Takes ownership of a text stream's contents as a buffer. */
static KilnDriverStatus capture_text(void (*print)(const void *, FILE *), const void *arg,
                                     KilnBuffer *out) {
  char *data = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&data, &size);
  if (!mem) return KILN_DRIVER_FAILURE;
  print(arg, mem);
  if (fclose(mem) != 0) {
    free(data);
    return KILN_DRIVER_FAILURE;
  }
  out->data = data;
  out->size = size;
  return KILN_DRIVER_OK;
}

static void print_ast(const void *k, FILE *f) { kiln_ast_dump((const KilnKernel *)k, f); }

static void print_op_cb(MlirStringRef s, void *user) { fwrite(s.data, 1, s.length, (FILE *)user); }

/* Prints with source locations: they are how IR maps back to the .kiln file. */
static void print_module(const void *m, FILE *f) {
  MlirOperation op = mlirModuleGetOperation(*(const MlirModule *)m);
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(op, flags, print_op_cb, f);
  mlirOpPrintingFlagsDestroy(flags);
  fputc('\n', f);
}

/* Errors at a place in the source, from the passes: how a lowering says that the program asks
 * for what the target cannot do (a tile of 48, a non-splat tile constant), which is the
 * user's to change, where an internal failure has no place to point at. */
static size_t located_errors(KilnMlirContext *kctx) {
  size_t n = 0;
  for (size_t i = 0; i < kiln_mlir_diag_count(kctx); i++) {
    const KilnMlirDiag *d = kiln_mlir_diag_get(kctx, i);
    n += d->severity == KILN_MLIR_SEV_ERROR && d->line > 0;
  }
  return n;
}

/* Moves MLIR's collected diagnostics into the frontend's list, so they render with a caret. */
static size_t fold_mlir_diags(KilnMlirContext *kctx, KilnCompilation *c, FILE *diag) {
  size_t errors = kiln_mlir_diag_error_count(kctx);
  for (size_t i = 0; i < kiln_mlir_diag_count(kctx); i++) {
    const KilnMlirDiag *d = kiln_mlir_diag_get(kctx, i);
    KilnSeverity sev = d->severity == KILN_MLIR_SEV_ERROR     ? KILN_SEV_ERROR
                       : d->severity == KILN_MLIR_SEV_WARNING ? KILN_SEV_WARNING
                                                              : KILN_SEV_NOTE;
    if (d->line > 0) {
      KilnSpan span = {d->line, d->col, d->line, d->col};
      kiln_diag_add(c, sev, span, d->message);
    } else {
      fprintf(diag, "%s: %s: %s\n", kiln_frontend_path(c),
              sev == KILN_SEV_ERROR     ? "error"
              : sev == KILN_SEV_WARNING ? "warning"
                                        : "note",
              d->message);
    }
  }
  kiln_mlir_diag_clear(kctx);
  return errors;
}

/* Bindings for sema: the defines, then num_warps/num_stages from the options, then every const
 * parameter still unbound takes its value from the first point of the kernel's tune space. */
static size_t collect_bindings(const KilnCompileOptions *o, const KilnKernel *k, KilnBinding *out,
                               size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < o->num_defines && n < cap; i++)
    out[n++] = (KilnBinding){o->defines[i].name, o->defines[i].value};
  if (o->num_warps > 0 && n < cap) out[n++] = (KilnBinding){"num_warps", o->num_warps};
  if (o->num_stages > 0 && n < cap) out[n++] = (KilnBinding){"num_stages", o->num_stages};
  KilnTuneConfig cfg;
  if (!k->tune || !kiln_tune_config_get(k->tune, 0, &cfg)) return n;
  for (int i = 0; i < cfg.nbindings && n < cap; i++) {
    bool have = false;
    for (size_t j = 0; j < n; j++) have = have || strcmp(out[j].name, cfg.bindings[i].name) == 0;
    if (!have) out[n++] = cfg.bindings[i];
  }
  return n;
}

typedef struct Job {
  const KilnCompileOptions *o;
  FILE *diag;
  KilnCompilation *c;
  KilnMlirContext *kctx;
  MlirModule module;
  char *text;
  KilnTimes *times; /* o->times: NULL unless the caller times the steps */
} Job;

static void job_free(Job *j) {
  if (j->kctx) {
    if (!mlirModuleIsNull(j->module)) mlirModuleDestroy(j->module);
    kiln_mlir_context_destroy(j->kctx);
  }
  kiln_frontend_destroy(j->c);
  free(j->text);
}

static KilnDriverStatus user_error(Job *j) {
  kiln_diag_render(j->c, j->diag);
  return KILN_DRIVER_USER_ERROR;
}

static KilnDriverStatus open_source(Job *j) {
  const KilnCompileOptions *o = j->o;
  const char *path = o->path ? o->path : "<input>";
  const char *src = o->source;
  size_t len = o->source_len;
  if (!src) {
    j->text = kiln_file_read_max(path, &len, KILN_MAX_SOURCE_BYTES);
    if (!j->text) {
      bool too_large = errno == EFBIG; /* the input's fault (exit 1), not the machine's */
      char msg[PATH_MAX + 256];
      fprintf(j->diag, "kiln: error: %s\n",
              kiln_file_read_error(msg, sizeof msg, "source", path, "KILN_MAX_SOURCE_BYTES",
                                   KILN_MAX_SOURCE_BYTES));
      return too_large ? KILN_DRIVER_USER_ERROR : KILN_DRIVER_FAILURE;
    }
    src = j->text;
  }
  kiln_times_mark(j->times, "read");
  j->c = kiln_frontend_create(path, src, len);
  if (!j->c) {
    fprintf(j->diag, "kiln: error: out of memory\n");
    return KILN_DRIVER_FAILURE;
  }
  if (!kiln_frontend_parse(j->c)) return user_error(j);
  kiln_times_mark(j->times, "parse");
  return KILN_DRIVER_OK;
}

/* Copies n bytes into out (NUL-terminated, for text) and frees src with free_fn. */
static KilnDriverStatus take_bytes(KilnBuffer *out, void *src, size_t n, void (*free_fn)(void *)) {
  out->data = malloc(n + 1);
  if (out->data) {
    memcpy(out->data, src, n);
    out->data[n] = '\0';
    out->size = n;
  }
  free_fn(src);
  return out->data ? KILN_DRIVER_OK : KILN_DRIVER_FAILURE;
}

/* The lowered module as LLVM IR text (any target). */
static KilnDriverStatus emit_llvm_ir(Job *j, KilnBuffer *out) {
  char *ir = NULL;
  size_t len = 0;
  KilnMlirStatus st = kiln_mlir_translate_to_llvm_ir(j->module, &ir, &len);
  kiln_times_mark(j->times, "llvm-translate");
  fold_mlir_diags(j->kctx, j->c, j->diag);
  if (st != KILN_MLIR_OK) {
    kiln_diag_render(j->c, j->diag);
    fprintf(j->diag, "kiln: error: translation to LLVM IR failed\n");
    return KILN_DRIVER_FAILURE;
  }
  return take_bytes(out, ir, len, kiln_mlir_buffer_free);
}

/* The lowered module as a host object (cpu, and emu whose GPU code runs on the host). */
static KilnDriverStatus emit_host_object(Job *j, KilnBuffer *out) {
  void *obj = NULL;
  size_t len = 0;
  char llvm_cpu[64], features[1024];
  const char *cpu = j->o->cpu ? j->o->cpu : getenv("KILN_CPU");
  if (!cpu || !*cpu) cpu = "native";
  if (kiln_rt_host_cpu_target(cpu, llvm_cpu, sizeof llvm_cpu, features, sizeof features) !=
      KILN_RT_OK) {
    fprintf(j->diag, "kiln: error: --cpu: %s\n", kiln_rt_last_error());
    return KILN_DRIVER_USER_ERROR;
  }
  KilnMlirStatus st = kiln_mlir_emit_host_object(j->module, 2, llvm_cpu, &obj, &len);
  kiln_times_mark(j->times, "host-codegen");
  fold_mlir_diags(j->kctx, j->c, j->diag);
  if (st != KILN_MLIR_OK) {
    kiln_diag_render(j->c, j->diag);
    fprintf(j->diag, "kiln: error: code generation failed\n");
    return KILN_DRIVER_FAILURE;
  }
  return take_bytes(out, obj, len, kiln_mlir_buffer_free);
}

const char *kiln_driver_ptxas_path(void) {
  const char *env = getenv("KILN_PTXAS");
  if (env && *env) return env;
#ifdef KILN_PTXAS_PATH
  return KILN_PTXAS_PATH;
#else
  return NULL; /* ptxas on PATH */
#endif
}

/* PTX for sm_80 / sm_90 from the lowered module, and a cubin from it through ptxas. */
static KilnDriverStatus emit_ptx_or_cubin(Job *j, const char *arch, KilnEmit emit,
                                          KilnBuffer *out) {
  char *ptx = NULL;
  size_t ptx_len = 0;
  KilnStepHook hook = {kiln_times_hook, j->times};
  KilnMlirStatus st =
      kiln_gpu_emit_ptx_steps(j->module, arch, j->times ? &hook : NULL, &ptx, &ptx_len);
  fold_mlir_diags(j->kctx, j->c, j->diag);
  if (st != KILN_MLIR_OK) {
    kiln_diag_render(j->c, j->diag);
    fprintf(j->diag, "kiln: error: PTX generation for %s failed\n", arch);
    return KILN_DRIVER_FAILURE;
  }
  if (emit == KILN_EMIT_PTX) return take_bytes(out, ptx, ptx_len, free);
  void *cubin = NULL;
  size_t cubin_len = 0;
  KilnGpuPtxasInfo info;
  char *log = NULL;
  st = kiln_gpu_ptxas(kiln_driver_ptxas_path(), ptx, arch, &cubin, &cubin_len, &info, &log);
  kiln_times_mark(j->times, "ptxas");
  free(ptx);
  if (st != KILN_MLIR_OK) {
    fprintf(j->diag, "kiln: error: ptxas failed for %s%s%s\n", arch, log ? ":\n" : "",
            log ? log : " (is the CUDA toolkit installed? set KILN_PTXAS to its ptxas)");
    free(log);
    return KILN_DRIVER_FAILURE;
  }
  free(log);
  if (j->o->gpu_usage)
    *j->o->gpu_usage = (KilnGpuUsage){true, info.registers, info.shared_bytes,
                                      info.spill_stores + info.spill_loads, info.stack_bytes};
  return take_bytes(out, cubin, cubin_len, free);
}

/* --specialize / --multiple-of: the caller's promises about runtime integer parameters. */
static bool specialize_params(Job *j, const KilnKernel *k) {
  const KilnCompileOptions *o = j->o;
  char err[256];
  for (int pass = 0; pass < 2; pass++) {
    const KilnDefine *list = pass ? o->multiple_of : o->specialize;
    size_t n = pass ? o->num_multiple_of : o->num_specialize;
    for (size_t i = 0; i < n; i++)
      if (!kiln_mlirgen_specialize(j->module, k, list[i].name, list[i].value, pass == 1, err,
                                   sizeof err)) {
        fprintf(j->diag, "kiln: error: %s %s: %s\n", pass ? "--multiple-of" : "--specialize",
                list[i].name, err);
        return false;
      }
  }
  return true;
}

/* Whether the target makes `emit`; says why not to the user. */
static bool emit_fits_target(Job *j, KilnEmit emit) {
  const TargetInfo *t = &targets[j->o->target];
  const char *name = kiln_target_name(j->o->target);
  bool gpu_code = emit == KILN_EMIT_PTX || emit == KILN_EMIT_CUBIN;
  if ((emit == KILN_EMIT_GPU_MLIR || gpu_code) && !t->gpu)
    fprintf(j->diag, "kiln: error: --emit %s needs a GPU target (--target sm_80 or sm_90)\n",
            kiln_emit_name(emit));
  else if (gpu_code && t->host_object)
    fprintf(j->diag,
            "kiln: error: --emit %s needs --target sm_80 or sm_90; the %s target emits obj\n",
            kiln_emit_name(emit), name);
  else if (emit == KILN_EMIT_OBJ && !t->host_object)
    fprintf(j->diag,
            "kiln: error: --emit obj is for the cpu and emu targets; use ptx or cubin for %s\n",
            name);
  else
    return true;
  return false;
}

/* Whether a diagnostic says the config exceeds a target limit (shared memory, ...). */
static bool over_limit(KilnCompilation *c) {
  for (size_t i = 0; i < kiln_diag_count(c); i++)
    if (strncmp(kiln_diag_get(c, i)->message, "limit: ", 7) == 0) return true;
  return false;
}

/* The last stage an output needs: the verified kiln module, the laid-out one, or everything. */
static const char *last_stage(KilnEmit emit) {
  if (emit == KILN_EMIT_MLIR) return "verify";
  if (emit == KILN_EMIT_GPU_MLIR) return "kiln-gpu-convert-cse";
  return NULL;
}

/* The kiln module through the target's pipeline (as far as `emit` needs), then the output. */
static KilnDriverStatus lower(Job *j, const KilnKernel *k, KilnEmit emit, KilnBuffer *out) {
  const KilnCompileOptions *o = j->o;
  if (!emit_fits_target(j, emit)) return KILN_DRIVER_USER_ERROR;
  j->kctx = kiln_mlir_context_create();
  if (!j->kctx) {
    fprintf(j->diag, "kiln: error: cannot create the MLIR context (dialect failed to load)\n");
    return KILN_DRIVER_FAILURE;
  }
  kiln_times_mark(j->times, "mlir-context");
  MlirContext ctx = kiln_mlir_context_get(j->kctx);
  j->module = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
  if (!kiln_mlirgen_kernel(j->c, k, j->kctx, j->module)) {
    fold_mlir_diags(j->kctx, j->c, j->diag);
    return user_error(j);
  }
  if (!specialize_params(j, k)) return KILN_DRIVER_USER_ERROR;
  kiln_times_mark(j->times, "mlirgen");

  KilnPipelineOptions po = {
      .stage = {.num_warps = o->num_warps,
                .num_stages = o->num_stages,
                .smem_limit = kiln_gpu_smem_limit(kiln_target_name(o->target)),
                .sm = kiln_gpu_sm(kiln_target_name(o->target)),
                .index_bits = o->index_bits},
      .dump_after = o->dump_after,
      .dump_file = j->diag,
      .stop_after = last_stage(emit),
      .step_done = {j->times ? kiln_times_hook : NULL, j->times}};
  KilnMlirStatus st = kiln_pipeline_run(j->module, targets[o->target].pipeline, &po);
  size_t located = located_errors(j->kctx);
  size_t errs = fold_mlir_diags(j->kctx, j->c, j->diag);
  if (st != KILN_MLIR_OK || errs > 0) {
    kiln_diag_render(j->c, j->diag);
    /* A bad option (unknown stage), a program our verifier rejects, a config over the
     * target's limits ("limit: ..." from the GPU lowering) or a construct the target cannot
     * compile, reported at its place in the source, is the user's to fix; anything else is
     * ours. */
    if (st == KILN_MLIR_ERR_VERIFY || st == KILN_MLIR_ERR_INVALID || over_limit(j->c) ||
        located > 0)
      return KILN_DRIVER_USER_ERROR;
    fprintf(j->diag, "kiln: error: lowering '%s' for %s failed\n", k->name,
            kiln_target_name(o->target));
    return KILN_DRIVER_FAILURE;
  }
  switch (emit) {
  case KILN_EMIT_MLIR:
  case KILN_EMIT_GPU_MLIR:
  case KILN_EMIT_LOWERED_MLIR: {
    KilnDriverStatus ps = capture_text(print_module, &j->module, out);
    kiln_times_mark(j->times, "print-mlir");
    return ps;
  }
  case KILN_EMIT_LLVM: return emit_llvm_ir(j, out);
  case KILN_EMIT_OBJ: return emit_host_object(j, out);
  default: return emit_ptx_or_cubin(j, kiln_target_name(o->target), emit, out);
  }
}

KilnDriverStatus kiln_driver_compile(const KilnCompileOptions *o, KilnEmit emit, KilnBuffer *out) {
  if (!o || !out || !o->kernel || (unsigned)emit >= KILN_EMIT_COUNT ||
      (unsigned)o->target >= KILN_TARGET_COUNT)
    return KILN_DRIVER_FAILURE;
  *out = (KilnBuffer){0};
  Job j = {.o = o, .diag = o->diag ? o->diag : stderr, .times = o->times};
  if (j.times && !j.times->started) kiln_times_start(j.times);
  KilnDriverStatus st = open_source(&j);
  if (st != KILN_DRIVER_OK) {
    job_free(&j);
    return st;
  }
  KilnKernel *decl = kiln_kernel_find(j.c, o->kernel);
  if (!decl) {
    fprintf(j.diag, "%s: error: no kernel named '%s' (", kiln_frontend_path(j.c), o->kernel);
    for (int i = 0; i < kiln_kernel_count(j.c); i++)
      fprintf(j.diag, "%s%s", i ? ", " : "", kiln_kernel_get(j.c, i)->name);
    fprintf(j.diag, "%s)\n", kiln_kernel_count(j.c) ? "" : "the file has none");
    job_free(&j);
    return KILN_DRIVER_USER_ERROR;
  }
  KilnBinding bindings[64];
  size_t nb = collect_bindings(o, decl, bindings, 64);
  KilnKernel *k = NULL;
  if (!kiln_sema_check_kernel(j.c, o->kernel, bindings, nb, &k)) {
    st = user_error(&j);
  } else if (emit == KILN_EMIT_AST) {
    kiln_times_mark(j.times, "sema");
    st = capture_text(print_ast, k, out);
    kiln_times_mark(j.times, "print-ast");
  } else {
    kiln_times_mark(j.times, "sema");
    st = lower(&j, k, emit, out);
  }
  job_free(&j);
  kiln_times_mark(j.times, "cleanup");
  return st;
}

/* The defines that kernel k takes: its const parameters', and the meta names (num_warps,
 * num_stages, min_blocks, wgmma: any kernel's). At most cap of them into out. */
static size_t defines_of(const KilnKernel *k, const KilnDefine *defines, size_t n, KilnDefine *out,
                         size_t cap) {
  size_t m = 0;
  for (size_t i = 0; i < n && m < cap; i++) {
    bool takes = kiln_meta_param_is(defines[i].name);
    for (int p = 0; p < k->nparams && !takes; p++)
      takes = k->params[p]->kind == KILN_DECL_CONST_PARAM &&
              !strcmp(k->params[p]->name, defines[i].name);
    if (takes) out[m++] = defines[i];
  }
  return m;
}

KilnDriverStatus kiln_driver_check_target(const char *path, const KilnDefine *defines,
                                          size_t num_defines, KilnTarget target, FILE *diag) {
  KilnDriverStatus st = kiln_driver_check(path, defines, num_defines, diag);
  if (st != KILN_DRIVER_OK || (unsigned)target >= KILN_TARGET_COUNT) return st;
  KilnCompileOptions o = {.path = path, .diag = diag};
  Job j = {.o = &o, .diag = diag ? diag : stderr};
  st = open_source(&j);
  /* PTX for a GPU; the emu target emits no PTX of its own: its whole pipeline (the GPU lowering
   * and the emulator rewrite) ends in lowered MLIR, as the cpu's does */
  bool ptx = targets[target].gpu && target != KILN_TARGET_EMU;
  for (int i = 0; st != KILN_DRIVER_FAILURE && j.c && i < kiln_kernel_count(j.c); i++) {
    const KilnKernel *k = kiln_kernel_get(j.c, i);
    KilnDefine mine[64];
    KilnCompileOptions ko = {.path = path,
                             .source = j.text,
                             .source_len = strlen(j.text),
                             .kernel = k->name,
                             .defines = mine,
                             .num_defines = defines_of(k, defines, num_defines, mine, 64),
                             .target = target,
                             .diag = j.diag};
    KilnBuffer out;
    KilnDriverStatus ks =
        kiln_driver_compile(&ko, ptx ? KILN_EMIT_PTX : KILN_EMIT_LOWERED_MLIR, &out);
    kiln_buffer_free(&out);
    if (ks > st) st = ks;
  }
  job_free(&j);
  return st;
}

KilnDriverStatus kiln_driver_check(const char *path, const KilnDefine *defines, size_t num_defines,
                                   FILE *diag) {
  KilnCompileOptions o = {.path = path, .diag = diag};
  Job j = {.o = &o, .diag = diag ? diag : stderr};
  KilnDriverStatus st = open_source(&j); /* renders parse errors itself */
  if (st == KILN_DRIVER_OK) {
    /* KilnDefine and KilnBinding are the same pair (name, value): one per -D */
    KilnBinding *b = num_defines ? calloc(num_defines, sizeof *b) : NULL;
    if (num_defines && !b) {
      job_free(&j);
      return KILN_DRIVER_FAILURE;
    }
    for (size_t i = 0; i < num_defines; i++)
      b[i] = (KilnBinding){defines[i].name, defines[i].value};
    if (!kiln_sema_check_all_bound(j.c, b, num_defines)) st = KILN_DRIVER_USER_ERROR;
    free(b);
    if (kiln_diag_count(j.c) > 0) kiln_diag_render(j.c, j.diag);
  }
  job_free(&j);
  return st;
}
