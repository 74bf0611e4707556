/* kiln_driver.h — the compiler driver: one call from a .kiln source to any stage's output.
 *
 * The `kiln` command, the tuner and the tests all compile through here, so that the pipeline
 * (parse → sema with bound consts → mlirgen → passes → object) is written once. */
#ifndef KILN_DRIVER_H
#define KILN_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* KilnTarget and its names (kiln_target_name, kiln_target_from_name): kiln_base.h. */

typedef enum KilnEmit {
  KILN_EMIT_AST,  /* the typed AST, as text */
  KILN_EMIT_MLIR, /* `kiln` dialect IR straight from mlirgen (verified), as text */
  KILN_EMIT_LOWERED_MLIR, /* IR after the whole pass pipeline (llvm dialect), as text */
  KILN_EMIT_LLVM, /* LLVM IR, as text */
  KILN_EMIT_OBJ,  /* host object file bytes (cpu target) */
  KILN_EMIT_GPU_MLIR, /* GPU targets: the kiln dialect with a layout on every tile, as text */
  KILN_EMIT_PTX,  /* GPU targets: PTX text */
  KILN_EMIT_CUBIN, /* GPU targets: a cubin from ptxas (KILN_PTXAS, else ptxas on PATH) */
  KILN_EMIT_COUNT
} KilnEmit;

/* Exit-code-shaped results: 0 success, 1 user error (diagnostics were written), 2 environment
 * or internal failure (a message was written). */
typedef enum KilnDriverStatus {
  KILN_DRIVER_OK = 0,
  KILN_DRIVER_USER_ERROR = 1,
  KILN_DRIVER_FAILURE = 2
} KilnDriverStatus;

typedef struct KilnDefine {
  const char *name; /* a `const` parameter, or num_warps / num_stages */
  int64_t value;
} KilnDefine;

/* KilnGpuUsage (what ptxas -v reported for a cubin): kiln_base.h. */

/* The time each step of a compilation took (kiln compile --time-passes; times.c): read, parse,
 * sema, mlir-context, mlirgen, every pipeline stage by its name, then the code generation steps
 * (llvm-translate, llvm-opt, nvptx-codegen, ptxas; host-codegen for cpu/emu objects).  Each step
 * is the time from the end of the one before to its own end, so the steps add up to the whole.
 * Zero-initialize; kiln_times_free releases it. */
typedef struct KilnStepTime {
  const char *name; /* static storage */
  double wall_s, cpu_s; /* cpu: user + system, this process and the children it waited for */
} KilnStepTime;

typedef struct KilnTimes {
  KilnStepTime *steps; /* owned */
  size_t n, cap;
  double last_wall, last_cpu;
  bool started;
  bool incomplete; /* a step could not be recorded (out of memory); the report says so */
} KilnTimes;

/* Starts the clock; the first kiln_times_mark does so too when this was not called. */
void kiln_times_start(KilnTimes *t);
/* Records `step` (static storage) as the time since the last mark or start. t may be NULL. */
void kiln_times_mark(KilnTimes *t, const char *step);
/* kiln_times_mark as a KilnStepHook's `done` (user: the KilnTimes). */
void kiln_times_hook(void *times, const char *step);
void kiln_times_free(KilnTimes *t);
/* A table (step, wall ms, cpu ms, share of the wall total, then the totals), or one JSON object
 * {"title", "steps": [{"step", "wall_ms", "cpu_ms"}...], "total_wall_ms", "total_cpu_ms",
 * "complete"}.  `title` names what was compiled. */
void kiln_times_print(const KilnTimes *t, const char *title, FILE *f);
void kiln_times_print_json(const KilnTimes *t, const char *title, FILE *f);

typedef struct KilnCompileOptions {
  const char *path;         /* source file path, used in diagnostics and locations */
  const char *source;       /* source text; NULL: read `path` */
  size_t source_len;        /* length of `source` when given */
  const char *kernel;       /* kernel to compile */
  const KilnDefine *defines;
  size_t num_defines;
  /* Runtime integer parameters compiled as these constants (the signature keeps them, the
   * caller promises the value): a unit stride lets loads vectorize, as Triton does for
   * arguments equal to 1. */
  const KilnDefine *specialize;
  size_t num_specialize;
  /* Runtime integer parameters the caller promises are multiples of these values (the same
   * promise as multiple_of() in the source, made per compilation: strides divisible by 8 f16
   * elements allow 128-bit accesses). */
  const KilnDefine *multiple_of;
  size_t num_multiple_of;
  KilnTarget target;
  /* Host targets (cpu, emu): the CPU target host code is built for, "native" or a portable
   * baseline such as "x86-64-v2" or "generic" (kiln_rt_host_cpu_target lists them); NULL: the
   * environment's KILN_CPU, else "native". */
  const char *cpu;
  int num_warps;            /* 0: from defines, else 4 */
  int num_stages;           /* 0: from defines, else 2 */
  /* 64: pointer offsets computed in i64 (buffers of 2^31 elements or more); 0 or 32: i32, and
   * the compiled kernel records that it needs fewer (widen-offsets, docs/emulator.md). */
  int index_bits;
  const char *dump_after;   /* NULL, a pipeline stage name, or "all" */
  FILE *diag;               /* where diagnostics and dumps go; NULL: stderr */
  KilnGpuUsage *gpu_usage;  /* out, optional: filled when a cubin is emitted */
  KilnTimes *times;         /* out, optional: each step's time appended (started here if not) */
} KilnCompileOptions;

typedef struct KilnBuffer {
  char *data; /* owned; NUL-terminated for text outputs */
  size_t size;
} KilnBuffer;

/* Compiles opts->kernel and writes the requested output into *out (which the caller frees with
 * kiln_buffer_free). On failure *out is empty and diagnostics went to opts->diag. */
KilnDriverStatus kiln_driver_compile(const KilnCompileOptions *opts, KilnEmit emit, KilnBuffer *out);

/* Parses and type-checks every kernel of a file (consts bound from the first config of each
 * kernel's tune block, or from defines). Diagnostics go to `diag`. */
KilnDriverStatus kiln_driver_check(const char *path, const KilnDefine *defines, size_t num_defines,
                                   FILE *diag);

/* kiln_driver_check, then every kernel of the file compiled for target as far as its code (PTX
 * for sm_80/sm_90, without ptxas; the lowered module for cpu and emu), consts bound as there:
 * what the target cannot compile (a tile that is not a power of two on a GPU...) is reported
 * at its place in the source, a user error. */
KilnDriverStatus kiln_driver_check_target(const char *path, const KilnDefine *defines,
                                          size_t num_defines, KilnTarget target, FILE *diag);

void kiln_buffer_free(KilnBuffer *buf);

/* The pass pipeline that lowers a kiln module for target t (kiln_mlir.h's KilnPipeline: the
 * shared front, then the cpu back, the GPU back, or the GPU back and the emu rewrite); NULL for
 * no target.  kiln-opt runs the same pipelines. */
struct KilnPipeline;
const struct KilnPipeline *kiln_driver_pipeline(KilnTarget t);

const char *kiln_emit_name(KilnEmit e);
/* The ptxas the driver runs: $KILN_PTXAS, else the one found at configure time, else NULL
 * (ptxas on PATH). */
const char *kiln_driver_ptxas_path(void);
KilnEmit kiln_emit_from_name(const char *name);

/* Files (whole-file reads, atomic writes, kiln_file_same): kiln_base.h. */

#ifdef __cplusplus
}
#endif
#endif
