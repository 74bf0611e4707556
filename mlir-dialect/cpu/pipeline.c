/* pipeline.c - the cpu back of the pipeline, as a stage table the one runner
 * (mlir-dialect/pipeline.c) runs after the shared front:
 *
 *   cpu: front, canonicalize, cse, convert-kiln-to-cpu (cpu_lower.c), kiln-exit-loops (loops
 *        with a break become scf.while), cpu-canonicalize, kiln-scf-to-cf (ifs and loops to
 *        branches), kiln-cpu-math (exp, exp2, erf, tanh as arithmetic: cpu_math.c), then one
 *        stage per upstream pass down to the llvm dialect
 *
 * One stage per upstream pass, so that `--dump-after` can show the IR between any two of them. */
#include "cpu_lower.h"
#include "kiln_cpu.h"

/* MLIR wants each pass's TypeID from a distinct 8-byte-aligned address. */
static _Alignas(8) char cpu_id;

MlirPass kiln_pass_create_convert_to_cpu(void) {
  return kiln_pass_make(mlirTypeIDCreate(&cpu_id), "KilnConvertToCPU", "convert-kiln-to-cpu",
                        "lower kiln kernels to host functions", kiln_cpu_lower_module, NULL, 0);
}

static MlirPass create_convert_to_cpu(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_convert_to_cpu();
}

static MlirPass create_exit_loops(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_exit_loops();
}

static MlirPass create_scf_to_cf(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_scf_to_cf();
}

static MlirPass create_cpu_math(const KilnStageOptions *o) {
  (void)o;
  return kiln_pass_create_cpu_math();
}

static const KilnStage cpu_stages[] = {
    {"canonicalize", NULL, "canonicalize", 0},
    {"cse", NULL, "cse", 0},
    {"convert-kiln-to-cpu", create_convert_to_cpu, NULL, 0},
    {"kiln-exit-loops", create_exit_loops, NULL, 0},
    /* scalar code cleanup before it becomes LLVM; LLVM's O2 does the rest */
    {"cpu-canonicalize", NULL, "canonicalize,cse", 0},
    /* ifs and loops ours (linear time, and the nests' unroll marks on the loops' latches), the
     * rest (scf.while) upstream's */
    {"kiln-scf-to-cf", create_scf_to_cf, NULL, 0},
    {"convert-scf-to-cf", NULL, "convert-scf-to-cf", 0},
    /* exp, exp2, erf and tanh of f32 as arithmetic the loop vectorizer widens (a libm call in
     * a nest keeps it scalar); then math-to-llvm (intrinsics), then libm calls for the rest */
    {"kiln-cpu-math", create_cpu_math, NULL, 0},
    {"convert-math-to-llvm", NULL, "convert-math-to-llvm", 0},
    {"convert-math-to-libm", NULL, "convert-math-to-libm", 0},
    {"arith-expand", NULL, "arith-expand{include-bf16=true}", 0},
    /* the blocked dot's row segments (cpu_ops.c), while memrefs are still memrefs */
    {"convert-vector-to-llvm", NULL, "convert-vector-to-llvm", 0},
    {"expand-strided-metadata", NULL, "expand-strided-metadata", 0},
    {"finalize-memref-to-llvm", NULL, "finalize-memref-to-llvm", 0},
    {"convert-arith-to-llvm", NULL, "convert-arith-to-llvm", 0},
    {"convert-index-to-llvm", NULL, "convert-index-to-llvm", 0},
    {"convert-cf-to-llvm", NULL, "convert-cf-to-llvm", 0},
    {"convert-func-to-llvm", NULL, "convert-func-to-llvm", 0},
    {"reconcile-unrealized-casts", NULL, "reconcile-unrealized-casts", 0},
};

const KilnStageList kiln_stages_cpu = {cpu_stages, sizeof cpu_stages / sizeof *cpu_stages};
const KilnPipeline kiln_pipeline_cpu = {"cpu", {&kiln_stages_front, &kiln_stages_cpu}};
