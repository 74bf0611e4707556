/* kiln-opt - runs pipeline stages or upstream pass pipelines on an .mlir file and prints the
 * result; the driver of the lit tests.
 *
 *   kiln-opt [FILE|-] [--target=T] [--pass=STAGE]... [--pipeline=PIPELINE] [--full]
 *            [--dump-after=STAGE|all] [--stop-after=STAGE] [--num-warps=N] [--num-stages=N]
 *            [--index-bits=32|64] [--emit=mlir|llvm] [--generic] [--list-stages] [--print-irdl]
 *            [--time-passes]
 *
 * Every stage of every target is registered: the pipelines are the driver's
 * (kiln_driver_pipeline), so `--full --target=T` runs exactly what `kiln compile --target T`
 * runs.  --pass=STAGE runs one stage: the target's stage of that name (T defaults to cpu),
 * else the first target's that has one (kiln-gpu-layouts needs no --target).  --list-stages
 * prints the target's pipeline, a stage a line.  Actions run in command-line order.
 * --time-passes prints the time of each step (parse, every stage run, print) to stderr, as
 * `kiln compile --time-passes` does (tools/driver/times.c).
 * Diagnostics go to stderr gcc-style; exit status 1 when any stage failed, 2 on bad usage. */
#include "kiln_driver.h"
#include "kiln_mlir.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

typedef struct Options {
  const char *file, *dump_after, *stop_after, *emit;
  KilnTarget target;
  KilnStageOptions stage;
  bool generic, list_stages, print_irdl;
  KilnTimes *times; /* --time-passes: where the steps go; NULL without */
} Options;

static void print_cb(MlirStringRef s, void *user) { fwrite(s.data, 1, s.length, user); }

static int usage(void) {
  fprintf(stderr, "usage: kiln-opt [FILE|-] [--target=T] [--pass=STAGE]... [--pipeline=P] "
                  "[--full] [--dump-after=STAGE|all] [--stop-after=STAGE] [--num-warps=N] "
                  "[--num-stages=N] [--index-bits=32|64] [--emit=mlir|llvm] [--generic] "
                  "[--list-stages] [--print-irdl] [--time-passes]\n");
  return 2;
}

static bool starts(const char *s, const char *p, const char **rest) {
  size_t n = strlen(p);
  if (strncmp(s, p, n) != 0) return false;
  *rest = s + n;
  return true;
}

/* A positive count for --num-warps / --num-stages; false for anything else. */
static bool parse_count(const char *v, int *out) {
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < 1 || n > 1024) return false;
  *out = (int)n;
  return true;
}

static bool is_action(const char *arg) {
  const char *v;
  return starts(arg, "--pass=", &v) || starts(arg, "--pipeline=", &v) || strcmp(arg, "--full") == 0;
}

/* Reads every option (actions are run later, in order); false on bad usage, said on stderr. */
static bool parse_options(int argc, char **argv, Options *o, KilnTimes *times) {
  *o = (Options){.file = "-", .emit = "mlir", .target = KILN_TARGET_CPU};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (strcmp(a, "--list-stages") == 0)
      o->list_stages = true;
    else if (strcmp(a, "--print-irdl") == 0)
      o->print_irdl = true;
    else if (strcmp(a, "--generic") == 0)
      o->generic = true;
    else if (strcmp(a, "--time-passes") == 0)
      o->times = times;
    else if (starts(a, "--target=", &v)) {
      o->target = kiln_target_from_name(v);
      if (o->target == KILN_TARGET_COUNT) {
        fprintf(stderr, "kiln-opt: error: unknown target '%s' (known: cpu, emu, sm_80, sm_90)\n",
                v);
        return false;
      }
      o->stage.sm = o->target == KILN_TARGET_SM80 ? 80 : 0; /* 0: sm_90's instructions */
    } else if (starts(a, "--dump-after=", &v))
      o->dump_after = v;
    else if (starts(a, "--stop-after=", &v))
      o->stop_after = v;
    else if (starts(a, "--emit=", &v) && (strcmp(v, "mlir") == 0 || strcmp(v, "llvm") == 0))
      o->emit = v;
    else if (starts(a, "--num-warps=", &v) || starts(a, "--num-stages=", &v)) {
      int *dst = a[6] == 'w' ? &o->stage.num_warps : &o->stage.num_stages;
      if (!parse_count(v, dst)) {
        fprintf(stderr, "kiln-opt: error: %s wants a count from 1 to 1024\n", a);
        return false;
      }
    } else if (starts(a, "--index-bits=", &v)) {
      if (strcmp(v, "32") != 0 && strcmp(v, "64") != 0) {
        fprintf(stderr, "kiln-opt: error: --index-bits wants 32 or 64, not '%s'\n", v);
        return false;
      }
      o->stage.index_bits = atoi(v);
    } else if (a[0] != '-' || strcmp(a, "-") == 0)
      o->file = a;
    else if (!is_action(a))
      return false;
  }
  return true;
}

/* The pipeline that has stage `name`: the target's, else the first target's with one. */
static const KilnPipeline *pipeline_with(const char *name, KilnTarget target) {
  const KilnPipeline *p = kiln_driver_pipeline(target);
  for (int t = 0; !kiln_pipeline_find(p, name) && t < KILN_TARGET_COUNT; t++)
    if (kiln_pipeline_find(kiln_driver_pipeline((KilnTarget)t), name))
      p = kiln_driver_pipeline((KilnTarget)t);
  return p; /* the target's own when no pipeline has it: its error lists its stages */
}

/* Runs the actions in argv order on m; returns false on the first failure. */
static bool run_actions(MlirModule m, int argc, char **argv, const Options *o) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    KilnMlirStatus st = KILN_MLIR_OK;
    if (starts(argv[i], "--pass=", &v)) {
      st = kiln_pipeline_run_stage(m, pipeline_with(v, o->target), v, &o->stage);
      kiln_times_mark(o->times, v); /* argv lives as long as the times */
    } else if (starts(argv[i], "--pipeline=", &v)) {
      st = kiln_pipeline_run_string(m, v);
      kiln_times_mark(o->times, v);
    } else if (strcmp(argv[i], "--full") == 0) {
      KilnPipelineOptions po = {.stage = o->stage,
                                .dump_after = o->dump_after,
                                .dump_file = stdout,
                                .stop_after = o->stop_after,
                                .step_done = {o->times ? kiln_times_hook : NULL, o->times}};
      st = kiln_pipeline_run(m, kiln_driver_pipeline(o->target), &po);
    }
    if (st != KILN_MLIR_OK) return false;
  }
  return true;
}

static bool print_result(MlirModule m, const Options *o) {
  if (strcmp(o->emit, "llvm") == 0) {
    char *ir;
    size_t n;
    if (kiln_mlir_translate_to_llvm_ir(m, &ir, &n) != KILN_MLIR_OK) return false;
    fwrite(ir, 1, n, stdout);
    kiln_mlir_buffer_free(ir);
    return true;
  }
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  if (o->generic) mlirOpPrintingFlagsPrintGenericOpForm(flags);
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(mlirModuleGetOperation(m), flags, print_cb, stdout);
  fputc('\n', stdout);
  mlirOpPrintingFlagsDestroy(flags);
  return true;
}

int main(int argc, char **argv) {
  Options o;
  KilnTimes times = {0};
  if (!parse_options(argc, argv, &o, &times)) return usage();
  if (o.list_stages) {
    const KilnPipeline *p = kiln_driver_pipeline(o.target);
    for (size_t s = 0; kiln_pipeline_stage_name(p, s); s++)
      printf("%s\n", kiln_pipeline_stage_name(p, s));
    return 0;
  }
  if (o.print_irdl) {
    fputs(kiln_mlir_dialect_irdl(), stdout);
    return 0;
  }
  FILE *in = strcmp(o.file, "-") == 0 ? stdin : fopen(o.file, "rb");
  if (!in) {
    fprintf(stderr, "kiln-opt: cannot open %s\n", o.file);
    return 1;
  }
  char *text = kiln_file_read_stream_max(in, NULL, KILN_MAX_MLIR_BYTES);
  if (in != stdin) fclose(in);
  if (!text) {
    char msg[PATH_MAX + 256];
    fprintf(stderr, "kiln-opt: error: %s\n",
            kiln_file_read_error(msg, sizeof msg, "input", o.file, "KILN_MAX_MLIR_BYTES",
                                 KILN_MAX_MLIR_BYTES));
    return 1;
  }
  if (o.times) kiln_times_start(o.times);
  KilnMlirContext *k = kiln_mlir_context_create();
  if (!k) {
    fprintf(stderr, "kiln-opt: out of memory or dialect failed to load\n");
    free(text);
    kiln_mlir_context_destroy(k);
    return 1;
  }
  kiln_times_mark(o.times, "mlir-context");
  MlirModule m = kiln_mlir_parse(k, text);
  free(text);
  kiln_times_mark(o.times, "parse");
  int rc = 1;
  if (!mlirModuleIsNull(m) && run_actions(m, argc, argv, &o) && print_result(m, &o)) rc = 0;
  kiln_times_mark(o.times, "print");
  kiln_mlir_diag_print(k, stderr);
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  kiln_mlir_context_destroy(k);
  if (o.times) {
    kiln_times_print(o.times, o.file, stderr);
    kiln_times_free(o.times);
  }
  return rc;
}
