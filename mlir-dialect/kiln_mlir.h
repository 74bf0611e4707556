/* kiln_mlir.h - the `kiln` MLIR dialect, its IR builders, passes and the CPU backend.
 *
 * What other folders may use from mlir-dialect/: a context with every upstream dialect plus
 * `kiln` loaded and diagnostics collected for the caller; one builder per kiln op and the
 * helpers mlirgen needs to build everything else (so no other file fills MlirOperationState by
 * hand); the pass pipeline (listed once, in pipeline.c); translation of the lowered module to
 * LLVM IR text and to a host object file.  The ops, types and the CPU kernel ABI are fixed by
 * docs/internals.md.
 *
 * Errors: user-facing problems (a kiln op with bad shapes, an unknown stage name, an LLVM
 * failure) are reported as MLIR diagnostics, which the context created here collects (see
 * kiln_mlir_diag_*); functions return a KilnMlirStatus saying which kind of failure it was.
 */
#ifndef KILN_MLIR_H
#define KILN_MLIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mlir-c/IR.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status & context */

typedef enum KilnMlirStatus {
  KILN_MLIR_OK = 0,
  KILN_MLIR_ERR_INVALID, /* bad arguments or options (unknown stage, unsupported target) */
  KILN_MLIR_ERR_VERIFY,  /* the IR failed our verifier or MLIR's; diagnostics say where */
  KILN_MLIR_ERR_PASS,    /* a lowering pass failed */
  KILN_MLIR_ERR_LLVM,    /* translation or code generation failed */
  KILN_MLIR_ERR_NOMEM,
  KILN_MLIR_STATUS_COUNT
} KilnMlirStatus;

/* One collected diagnostic.  `file` is empty and line/col are 0 when the location was not a
 * file:line:col location.  Strings are owned by the context and live until the diagnostics are
 * cleared or the context is destroyed. */
typedef enum KilnMlirSeverity {
  KILN_MLIR_SEV_ERROR,
  KILN_MLIR_SEV_WARNING,
  KILN_MLIR_SEV_NOTE,
  KILN_MLIR_SEV_REMARK
} KilnMlirSeverity;

typedef struct KilnMlirDiag {
  KilnMlirSeverity severity;
  const char *file;
  int line, col;
  const char *message;
} KilnMlirDiag;

typedef struct KilnMlirContext KilnMlirContext;

/* Creates an MLIR context with all upstream dialects, passes and LLVM translations registered
 * and loaded, the `kiln` dialect loaded from its embedded IRDL, and a diagnostic handler that
 * collects every diagnostic (nothing is printed).  Returns NULL when the embedded dialect fails
 * to load (an internal error) or memory runs out.  Destroy with kiln_mlir_context_destroy, after
 * every module created in it. */
KilnMlirContext *kiln_mlir_context_create(void);
void kiln_mlir_context_destroy(KilnMlirContext *kctx);
/* The MLIR context; owned by kctx. */
MlirContext kiln_mlir_context_get(KilnMlirContext *kctx);

/* Collected diagnostics, oldest first.  kiln_mlir_diag_get returns NULL past the end. */
size_t kiln_mlir_diag_count(const KilnMlirContext *kctx);
const KilnMlirDiag *kiln_mlir_diag_get(const KilnMlirContext *kctx, size_t i);
size_t kiln_mlir_diag_error_count(const KilnMlirContext *kctx);
void kiln_mlir_diag_clear(KilnMlirContext *kctx);
/* Writes every collected diagnostic gcc-style ("file:line:col: error: msg") to f. */
void kiln_mlir_diag_print(const KilnMlirContext *kctx, FILE *f);

/* The IRDL text of the dialect, as embedded in the library (static storage). */
const char *kiln_mlir_dialect_irdl(void);

/* Parses textual IR (generic or custom form) into a new module owned by the caller
 * (mlirModuleDestroy).  Returns a null module on error; diagnostics are collected. */
MlirModule kiln_mlir_parse(KilnMlirContext *kctx, const char *text);

/* ---------------------------------------------------------------- op names
 * One list: ops.def.  KILN_OP_NAME_<X> is the full op name, e.g. "kiln.load". */
#define KILN_OP(ID, name, irdl) extern const char KILN_OP_NAME_##ID[];
#include "ops.def"
#undef KILN_OP

typedef enum KilnOpId {
#define KILN_OP(ID, name, irdl) KILN_OP_##ID,
#include "ops.def"
#undef KILN_OP
  KILN_OP_COUNT,
  KILN_OP_NONE = -1
} KilnOpId;

/* The kiln op an operation is, or KILN_OP_NONE for any other op. */
KilnOpId kiln_ir_op_id(MlirOperation op);

typedef enum KilnReduceKind {
  KILN_REDUCE_SUM,
  KILN_REDUCE_MAX,
  KILN_REDUCE_MIN,
  KILN_REDUCE_ARGMAX,
  KILN_REDUCE_ARGMIN,
  KILN_REDUCE_COUNT
} KilnReduceKind;

typedef enum KilnRmwKind {
  KILN_RMW_ADD,
  KILN_RMW_MAX,
  KILN_RMW_MIN,
  KILN_RMW_XCHG,
  KILN_RMW_UMAX, /* max/min of unsigned integers (u32, u64): the IR's integers are signless */
  KILN_RMW_UMIN,
  KILN_RMW_COUNT
} KilnRmwKind;

/* Attribute spellings: "sum" "max" ... and "add" "max" "min" "xchg" "umax" "umin". */
const char *kiln_reduce_kind_name(KilnReduceKind k);
const char *kiln_rmw_kind_name(KilnRmwKind k);

/* ---------------------------------------------------------------- builder
 * A builder is a context plus an insertion point: the end of `block`, or just before `before`
 * when that is non-null.  It owns nothing; plain struct, copy freely. */
typedef struct KilnIRBuilder {
  MlirContext ctx;
  MlirBlock block;
  MlirOperation before; /* null: append at the end of block */
} KilnIRBuilder;

/* Insertion at the end of `block` (which may be null until set). */
void kiln_ir_builder_init(KilnIRBuilder *b, MlirContext ctx, MlirBlock block);
/* Insertion just before `op` (in op's block). */
void kiln_ir_builder_set_before(KilnIRBuilder *b, MlirOperation op);
/* Insertion at the end of `block`. */
void kiln_ir_builder_set_end(KilnIRBuilder *b, MlirBlock block);
/* Inserts an already created, detached operation at the insertion point (takes ownership). */
void kiln_ir_builder_insert(KilnIRBuilder *b, MlirOperation op);

/* loc("file":line:col).  `file` is copied by MLIR. */
MlirLocation kiln_ir_loc(MlirContext ctx, const char *file, int line, int col);

/* ---------------------------------------------------------------- types */

/* !kiln.ptr<elem>, elem a builtin scalar type.  Types are uniqued by MLIR; a process-wide table
 * (keyed by context and element type) caches them and answers the two queries below, because
 * MLIR 19 has no C accessor for a dynamic type's parameters. */
MlirType kiln_ir_type_ptr(MlirContext ctx, MlirType elem);
bool kiln_ir_type_is_ptr(MlirType t);
/* The element type of a !kiln.ptr<T>; a null type when t is not one. */
MlirType kiln_ir_ptr_elem(MlirType t);

/* tensor<shape x elem> (static shape, no encoding).  rank >= 1. */
MlirType kiln_ir_type_tensor(MlirType elem, const int64_t *shape, int rank);
/* A tensor type with the same shape as `shaped` and element type `elem`; or elem itself when
 * `shaped` is not a tensor.  Handy for "same shape, i1" or "same shape, f32" results. */
MlirType kiln_ir_type_like(MlirType shaped, MlirType elem);
/* The element type of a tensor, or t itself for a scalar. */
MlirType kiln_ir_elem_type(MlirType t);
bool kiln_ir_type_is_tile(MlirType t);
/* The number of elements of a tile type (1 for a scalar). */
int64_t kiln_ir_type_numel(MlirType t);
/* Float (f16 bf16 f32 f64) / integer (i1..i64) scalar element type checks (look through tensors). */
bool kiln_ir_type_is_float(MlirType t);
bool kiln_ir_type_is_int(MlirType t);

/* ---------------------------------------------------------------- kiln ops
 * Every builder inserts at b's insertion point, with location `loc`, and returns the op's single
 * result (or the op for ops without results).  Operands must already have the types
 * docs/internals.md states; builders compute result types where they follow from the operands.
 * Shape errors are not checked here: the `verify` stage reports them in user terms. */

MlirValue kiln_ir_build_program_id(KilnIRBuilder *b, MlirLocation loc, int axis);
MlirValue kiln_ir_build_num_programs(KilnIRBuilder *b, MlirLocation loc, int axis);
/* tensor<(end-start)xi32>.  Requires end > start (else the verifier reports it). */
MlirValue kiln_ir_build_range(KilnIRBuilder *b, MlirLocation loc, int32_t start, int32_t end);
/* A tile of type `result_type` whose elements all equal `scalar`. */
MlirValue kiln_ir_build_splat(KilnIRBuilder *b, MlirLocation loc, MlirValue scalar,
                              MlirType result_type);
/* Stretches size-1 dims of `tile` to those of `result_type` (same rank, same element type). */
MlirValue kiln_ir_build_broadcast(KilnIRBuilder *b, MlirLocation loc, MlirValue tile,
                                  MlirType result_type);
/* Inserts a size-1 dim at `axis` (0 <= axis <= rank); result type computed. */
MlirValue kiln_ir_build_expand_dims(KilnIRBuilder *b, MlirLocation loc, MlirValue tile, int axis);
/* Transposes a rank-2 tile; result type computed. */
MlirValue kiln_ir_build_trans(KilnIRBuilder *b, MlirLocation loc, MlirValue tile);
/* ptr + offsets elements.  ptr is a !kiln.ptr<T> scalar or tile, offsets i32/i64 of the same
 * shape; the result has ptr's type. */
MlirValue kiln_ir_build_addptr(KilnIRBuilder *b, MlirLocation loc, MlirValue ptr,
                               MlirValue offsets);
/* Masked load; result has ptrs' shape and the pointee type.  mask: i1, same shape; other: same
 * type as the result. */
MlirValue kiln_ir_build_load(KilnIRBuilder *b, MlirLocation loc, MlirValue ptrs, MlirValue mask,
                             MlirValue other);
/* Masked store; returns the op. */
MlirOperation kiln_ir_build_store(KilnIRBuilder *b, MlirLocation loc, MlirValue ptrs,
                                  MlirValue values, MlirValue mask);
/* Per element atomic read-modify-write; returns the old values (values' type). */
MlirValue kiln_ir_build_atomic_rmw(KilnIRBuilder *b, MlirLocation loc, KilnRmwKind kind,
                                   MlirValue ptrs, MlirValue values, MlirValue mask);
/* Per element atomic compare-and-swap (acq_rel where it succeeds): *ptr = values where *ptr ==
 * cmp and mask; returns the old values (values' type; 0 where masked off). */
MlirValue kiln_ir_build_atomic_cas(KilnIRBuilder *b, MlirLocation loc, MlirValue ptrs,
                                   MlirValue cmp, MlirValue values, MlirValue mask);
/* x's elements in row-major order, laid out in `result`'s shape (as many elements, same type). */
MlirValue kiln_ir_build_reshape(KilnIRBuilder *b, MlirLocation loc, MlirValue x, MlirType result);
/* device_print: prints `text` and x (a scalar or every element of a tile) with the program id;
 * the op has no result and is never removed as dead. */
MlirOperation kiln_ir_build_print(KilnIRBuilder *b, MlirLocation loc, const char *text,
                                  MlirValue x);
/* device_assert: where cond (i1, a scalar or every element of a tile) is false the launch fails
 * with `text` ("FILE:LINE:COL: message"); no result, never removed as dead. */
MlirOperation kiln_ir_build_assert(KilnIRBuilder *b, MlirLocation loc, const char *text,
                                   MlirValue cond);
/* x cut or extended to `result`'s shape (same rank and element type): element idx is x's at idx
 * clamped into x's shape, so an extended axis repeats its last element.  The cpu target only. */
MlirValue kiln_ir_build_resize(KilnIRBuilder *b, MlirLocation loc, MlirValue x, MlirType result);
/* x reversed along `axis` (same type). */
MlirValue kiln_ir_build_flip(KilnIRBuilder *b, MlirLocation loc, MlirValue x, int axis);
/* Inclusive prefix "sum" or "prod" of x along `axis`, in x's type, in order along the axis; with
 * `reverse` (the unit attribute KILN_IR_SCAN_REVERSE_ATTR) from the end of the axis: element i
 * combines elements n-1 down to i (suffix sums and products). */
#define KILN_IR_SCAN_REVERSE_ATTR "kiln.reverse"
MlirValue kiln_ir_build_scan(KilnIRBuilder *b, MlirLocation loc, const char *kind, int axis,
                             bool reverse, MlirValue x);
bool kiln_ir_scan_is_reverse(MlirOperation scan);
/* acc + a x b; result has acc's type.  A dot of f32 tiles that carries the unit attribute
 * KILN_IR_DOT_TF32_ATTR rounds a and b to TF32 first (cvt.rna.tf32.f32: ties away from zero) and
 * may run on tensor cores; without it, an f32 dot is exact IEEE products and sums. */
#define KILN_IR_DOT_TF32_ATTR "kiln.tf32"
bool kiln_ir_dot_is_tf32(MlirOperation dot);
MlirValue kiln_ir_build_dot(KilnIRBuilder *b, MlirLocation loc, MlirValue a, MlirValue bm,
                            MlirValue acc);
/* Reduces `tile` along `axis`: the result drops that dim (a scalar for rank 1); element type is
 * the input's, or i32 for argmax/argmin. */
MlirValue kiln_ir_build_reduce(KilnIRBuilder *b, MlirLocation loc, KilnReduceKind kind, int axis,
                               MlirValue tile);
/* Philox uniform [0,1) f32 tile shaped like offsets (i32 tile); seed: i32 scalar. */
MlirValue kiln_ir_build_rand(KilnIRBuilder *b, MlirLocation loc, MlirValue seed, MlirValue offsets);
/* kiln.rand with an i32 result: the Philox word w itself (randint: word o & 3 of the block at
 * counter o >> 2), where an f32 result is (w >> 8) * 2^-24. */
MlirValue kiln_ir_build_randint(KilnIRBuilder *b, MlirLocation loc, MlirValue seed,
                                MlirValue offsets);

/* ---------------------------------------------------------------- upstream helpers */

/* arith.constant: `type` is an integer/float scalar or a tile of one (splat).  Integers are
 * truncated to the type's width; floats are rounded to the type (f16/bf16 too). */
MlirValue kiln_ir_build_const_int(KilnIRBuilder *b, MlirLocation loc, MlirType type, int64_t v);
MlirValue kiln_ir_build_const_float(KilnIRBuilder *b, MlirLocation loc, MlirType type, double v);
/* arith.constant of type index (for loops built by the lowerings). */
MlirValue kiln_ir_build_const_index(KilnIRBuilder *b, MlirLocation loc, int64_t v);

/* Any single-result, attribute-free op by name ("arith.addf", "math.exp", "arith.maxsi", ...),
 * operands already of matching shape. */
MlirValue kiln_ir_build_elementwise(KilnIRBuilder *b, MlirLocation loc, const char *op_name,
                                    const MlirValue *operands, size_t n, MlirType result_type);
/* arith.cmpi / arith.cmpf with predicate by name: cmpi "eq ne slt sle sgt sge ult ule ugt uge";
 * cmpf "false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true".  Result i1 (tile of
 * i1 for tiles).  Returns a null value for an unknown predicate. */
MlirValue kiln_ir_build_cmpi(KilnIRBuilder *b, MlirLocation loc, const char *pred, MlirValue lhs,
                             MlirValue rhs);
MlirValue kiln_ir_build_cmpf(KilnIRBuilder *b, MlirLocation loc, const char *pred, MlirValue lhs,
                             MlirValue rhs);
/* arith.select (cond i1 scalar or i1 tile shaped like a/b). */
MlirValue kiln_ir_build_select(KilnIRBuilder *b, MlirLocation loc, MlirValue cond, MlirValue a,
                               MlirValue bv);
/* A cast by op name: "arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi", "arith.extsi",
 * "arith.extui", "arith.trunci", "arith.uitofp", "arith.fptoui", "arith.bitcast",
 * "arith.index_cast". */
MlirValue kiln_ir_build_cast(KilnIRBuilder *b, MlirLocation loc, const char *op_name, MlirValue v,
                             MlirType result_type);

/* scf.for lo..hi step (all the same integer type, i32 for kernels; or index) with n iter_args.
 * The body block is created with the induction variable and one argument per init, and is
 * EMPTY: the caller fills it and must end it with kiln_ir_build_yield.  Access the parts with
 * the kiln_ir_for_* functions. */
typedef struct KilnIRFor {
  MlirOperation op;
  MlirBlock body;
  MlirValue iv;
  size_t n_iter;
} KilnIRFor;
KilnIRFor kiln_ir_build_for(KilnIRBuilder *b, MlirLocation loc, MlirValue lo, MlirValue hi,
                            MlirValue step, const MlirValue *inits, size_t n);
MlirValue kiln_ir_for_iter_arg(const KilnIRFor *f, size_t i); /* the body's block argument */
MlirValue kiln_ir_for_result(const KilnIRFor *f, size_t i);   /* the loop's i-th result */
/* scf.yield values (ends an scf.for or scf.if block). */
MlirOperation kiln_ir_build_yield(KilnIRBuilder *b, MlirLocation loc, const MlirValue *values,
                                  size_t n);

/* scf.if cond (i1 scalar) with n results.  Both the then and the else block are created empty;
 * the caller must end each with kiln_ir_build_yield (with n values; an empty yield when n == 0,
 * even if the else branch does nothing). */
typedef struct KilnIRIf {
  MlirOperation op;
  MlirBlock then_block;
  MlirBlock else_block;
} KilnIRIf;
KilnIRIf kiln_ir_build_if(KilnIRBuilder *b, MlirLocation loc, MlirValue cond,
                          const MlirType *result_types, size_t n);
MlirValue kiln_ir_if_result(const KilnIRIf *f, size_t i);

/* func.func @name(arg_types...) -> () with attributes kiln.kernel, kiln.num_warps and
 * kiln.num_stages (i32), inserted at b's point (normally the module body, see
 * kiln_ir_module_body).  The entry block has one argument per type and is empty: fill it and
 * end it with kiln_ir_build_return.  `name` is copied. */
typedef struct KilnIRFunc {
  MlirOperation op;
  MlirBlock entry;
} KilnIRFunc;
KilnIRFunc kiln_ir_build_kernel(KilnIRBuilder *b, MlirLocation loc, const char *name,
                                const MlirType *arg_types, size_t n, int num_warps, int num_stages);
MlirValue kiln_ir_func_arg(const KilnIRFunc *f, size_t i);
MlirOperation kiln_ir_build_return(KilnIRBuilder *b, MlirLocation loc);

/* The body block of a module (where kernels go). */
MlirBlock kiln_ir_module_body(MlirModule m);

/* ---------------------------------------------------------------- pipeline
 * One stage-table type and one runner for every target (pipeline.c).  A stage is one of our
 * passes or an upstream pass pipeline; a stage list is a part of a pipeline; a target's pipeline
 * is its parts in order:
 *   cpu          = front + cpu back            (kiln_pipeline_cpu, cpu/kiln_cpu.h)
 *   sm_80, sm_90 = front + GPU back            (kiln_gpu_pipeline, kiln_gpu.h)
 *   emu          = front + GPU back + emu      (kiln_gpu_pipeline_emu, kiln_gpu.h)
 * The front is verify, widen-offsets, kiln-dce; the cpu back canonicalize, cse,
 * convert-kiln-to-cpu, then the upstream lowering of the CPU code to the llvm dialect, one stage per upstream pass.  Stage
 * names are unique within a pipeline (kiln_pipeline_stage_name lists them). */

/* What a stage's pass may be told (0: the kernel's own attribute). */
typedef struct KilnStageOptions {
  int num_warps;  /* > 0 overrides each kernel's kiln.num_warps (GPU layouts) */
  int num_stages; /* > 0 overrides each kernel's kiln.num_stages (GPU layouts) */
  /* > 0: bytes of shared memory (static + dynamic) a program may have on the target
   * (kiln_gpu_smem_limit); the GPU lowering budgets and checks against it. 0: sm_90's. */
  int smem_limit;
  /* > 0: the GPU architecture whose instructions the lowering may use (kiln_gpu_sm: 80 for
   * sm_80; 90 for sm_90 and emu, whose emulator has sm_90's stmatrix). 0: sm_90. */
  int sm;
  /* 64: offsets that feed a pointer are computed in i64 (widen-offsets), for buffers of 2^31
   * elements or more; 0 or 32: i32, and the module promises fewer (kiln.index_bits). */
  int index_bits;
} KilnStageOptions;

typedef struct KilnStage {
  const char *name;
  /* Our pass (a new pass, owned by the caller until added to a pass manager), or NULL when the
   * stage is the upstream pass pipeline `upstream` ("canonicalize,cse"). */
  MlirPass (*create)(const KilnStageOptions *o);
  const char *upstream;
  /* What a failure means: KILN_MLIR_ERR_VERIFY for the verifier (a user's program to fix),
   * 0 for KILN_MLIR_ERR_PASS. */
  KilnMlirStatus failure;
} KilnStage;

typedef struct KilnStageList {
  const KilnStage *stages;
  size_t count;
} KilnStageList;

#define KILN_PIPELINE_MAX_PARTS 4
typedef struct KilnPipeline {
  const char *name;                                    /* for messages: "cpu", "gpu", "emu" */
  const KilnStageList *parts[KILN_PIPELINE_MAX_PARTS]; /* in order; unused ones NULL */
} KilnPipeline;

extern const KilnStageList kiln_stages_front; /* verify, widen-offsets, kiln-dce: every target */

/* Called after each step of a compilation (a pipeline stage, a code generation step) with the
 * step's name, in static storage: how the driver times the steps (kiln compile --time-passes)
 * while the steps themselves know nothing of clocks.  `done` NULL: no hook. */
typedef struct KilnStepHook {
  void (*done)(void *user, const char *step);
  void *user;
} KilnStepHook;

typedef struct KilnPipelineOptions {
  KilnStageOptions stage; /* handed to every stage's pass */
  const char *dump_after; /* NULL, a stage name, or "all": print the IR after it */
  FILE *dump_file;        /* where dumps go; NULL = stderr */
  const char *stop_after; /* NULL, or a stage name: run no stage after it */
  KilnStepHook step_done; /* told each stage's name after it ran (before its dump) */
} KilnPipelineOptions;

/* Runs pipeline p on m (in place).  KILN_MLIR_ERR_INVALID for a dump/stop stage p does not have,
 * the failing stage's status otherwise; diagnostics on m's context say why; m may be
 * half-lowered after a failure.  opts may be NULL. */
KilnMlirStatus kiln_pipeline_run(MlirModule m, const KilnPipeline *p,
                                 const KilnPipelineOptions *opts);
/* Runs p's stage named `stage` alone (opts may be NULL). */
KilnMlirStatus kiln_pipeline_run_stage(MlirModule m, const KilnPipeline *p, const char *stage,
                                       const KilnStageOptions *opts);
/* Runs an upstream pass pipeline string, e.g. "builtin.module(canonicalize,cse)" or
 * "canonicalize,cse" (wrapped in builtin.module when not anchored). */
KilnMlirStatus kiln_pipeline_run_string(MlirModule m, const char *pipeline);
/* p's stage named `name`, or NULL. */
const KilnStage *kiln_pipeline_find(const KilnPipeline *p, const char *name);
size_t kiln_pipeline_stage_count(const KilnPipeline *p);
const char *kiln_pipeline_stage_name(const KilnPipeline *p, size_t i); /* NULL past the end */

/* Our passes, for callers composing their own pass managers.  Each returns a new pass owned by
 * the caller until added to a pass manager. */
MlirPass kiln_pass_create_verify(void);
MlirPass kiln_pass_create_dce(void);
/* widen-offsets with o's index_bits (o may be NULL: 32). */
MlirPass kiln_pass_create_widen_offsets(const KilnStageOptions *o);
/* kiln-exit-loops (exit_loops.c): scf.for loops marked kiln.exit_flag become scf.while loops that
 * end when their flag (the first iter_arg) is set.  Runs after a back's own lowering, before
 * convert-scf-to-cf, in every target's pipeline. */
MlirPass kiln_pass_create_exit_loops(void);
/* kiln-scf-to-cf (scf_to_cf.c): every scf.if and scf.for of a function (not inside another scf
 * op) becomes blocks and cf branches, the CFG upstream's convert-scf-to-cf makes, in time
 * linear in the function's size; what it leaves (scf.while...) is upstream's to lower. */
MlirPass kiln_pass_create_scf_to_cf(void);
/* Marks an scf.for whose first iter_arg is its i1 break flag for kiln-exit-loops (mlirgen);
 * `unbounded`: its range only counts (a `while`), the flag alone ends it. */
void kiln_ir_mark_exit_loop(MlirOperation loop, bool unbounded);

/* ---------------------------------------------------------------- output
 * Both take a module fully lowered to the llvm dialect (after kiln_pipeline_run). */

/* LLVM IR text (NUL terminated) in *out (free with kiln_mlir_buffer_free), length in *len. */
KilnMlirStatus kiln_mlir_translate_to_llvm_ir(MlirModule m, char **out, size_t *len);
/* A relocatable object for the host triple (PIC), after LLVM's default<O{opt_level}> pipeline
 * (opt_level 0..3), for the LLVM CPU `cpu` ("x86-64-v2", "generic"...; NULL or "native": this
 * host's CPU and all its features).  Bytes in *out (free with kiln_mlir_buffer_free), size in
 * *len. */
KilnMlirStatus kiln_mlir_emit_host_object(MlirModule m, int opt_level, const char *cpu, void **out,
                                          size_t *len);
void kiln_mlir_buffer_free(void *buf);

#ifdef __cplusplus
}
#endif
#endif
