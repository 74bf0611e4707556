/* exit_loops.c - kiln-exit-loops: a loop with a `break` (or a `return`, or a `while` loop) ends
 * at the iteration that sets its flag, instead of running its remaining iterations empty.
 *
 * Why here.  mlirgen emits every loop as scf.for, which the backends (the CPU lowering, the GPU
 * layout pass, its pipeliner and SIMT lowering) know how to rebuild; scf.while they do not.  A
 * loop that may leave early carries its break flag as its first iter_arg (frontend/exits.c,
 * sema) and is marked `kiln.exit_flag` (and `kiln.unbounded` for a `while`, whose range only
 * counts).  Each backend keeps the marks and that first scalar when it rebuilds a loop
 * (kiln_ir_copy_loop_marks), so this pass runs once, after them, on plain scalar loops, and is the
 * same code for cpu, sm_80/sm_90 and emu:
 *
 *   %r:n = scf.for %i = %lo to %hi step %s iter_args(%stop = %f0, ...) { body; yield %stop', ... }
 * becomes
 *   %w:n+1 = scf.while (%i = %lo, %stop = %f0, ...) {
 *     %go = !%stop && %i < %hi          (only !%stop when unbounded)
 *     scf.condition(%go) %i, %stop, ...
 *   } do { ^(%i, %stop, ...): body; scf.yield %i + %s, %stop', ... }
 * and the loop's results are %w#1..%w#n.  The body block is moved, not copied.
 *
 * On a GPU the condition is uniform: the flag is a scalar, and Kiln's scalars are the same in
 * every thread of a program (they are computed from scalars, or reduced from tiles with results
 * every thread shares), so all threads of a program leave a loop at the same iteration. */
#include "kiln_mlir_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#define EXIT_FLAG_ATTR "kiln.exit_flag"
#define UNBOUNDED_ATTR "kiln.unbounded"

static bool has_attr(MlirOperation op, const char *name) {
  return !mlirAttributeIsNull(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name)));
}

void kiln_ir_copy_loop_marks(MlirOperation from, MlirOperation to) {
  static const char *const marks[] = {EXIT_FLAG_ATTR, UNBOUNDED_ATTR};
  for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
    if (has_attr(from, marks[i]))
      mlirOperationSetAttributeByName(to, mlirStringRefCreateFromCString(marks[i]),
                                      mlirUnitAttrGet(mlirOperationGetContext(from)));
}

void kiln_ir_mark_exit_loop(MlirOperation loop, bool unbounded) {
  MlirContext ctx = mlirOperationGetContext(loop);
  mlirOperationSetAttributeByName(loop, mlirStringRefCreateFromCString(EXIT_FLAG_ATTR),
                                  mlirUnitAttrGet(ctx));
  if (unbounded)
    mlirOperationSetAttributeByName(loop, mlirStringRefCreateFromCString(UNBOUNDED_ATTR),
                                    mlirUnitAttrGet(ctx));
}

static MlirWalkResult collect_marked(MlirOperation op, void *user) {
  if (kiln_ir_op_is(op, "scf.for") && has_attr(op, EXIT_FLAG_ATTR)) kiln_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

/* The before region: `scf.condition(!stop [&& i < hi]) args`, over fresh block arguments. */
static MlirRegion build_test(MlirContext ctx, MlirLocation loc, MlirOperation loop,
                             const MlirType *types, intptr_t n) {
  MlirLocation *locs = malloc(sizeof *locs * (size_t)n);
  KILN_ASSERT(locs);
  for (intptr_t i = 0; i < n; i++) locs[i] = loc;
  MlirBlock test = mlirBlockCreate(n, types, locs);
  free(locs);
  MlirRegion r = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(r, test);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, test);
  MlirValue iv = mlirBlockGetArgument(test, 0), stop = mlirBlockGetArgument(test, 1);
  MlirType i1 = mlirIntegerTypeGet(ctx, 1);
  MlirValue ops[2] = {stop, kiln_ir_build_const_int(&b, loc, i1, 1)};
  MlirValue go = kiln_ir_build_elementwise(&b, loc, "arith.xori", ops, 2, i1);
  if (!has_attr(loop, UNBOUNDED_ATTR)) {
    ops[0] = go;
    ops[1] = kiln_ir_build_cmpi(&b, loc, "slt", iv, mlirOperationGetOperand(loop, 1));
    go = kiln_ir_build_elementwise(&b, loc, "arith.andi", ops, 2, i1);
  }
  MlirValue *cond = malloc(sizeof *cond * (size_t)(n + 1));
  KILN_ASSERT(cond);
  cond[0] = go;
  for (intptr_t i = 0; i < n; i++) cond[i + 1] = mlirBlockGetArgument(test, i);
  KilnOpSpec s = {
      .name = "scf.condition", .loc = loc, .operands = cond, .n_operands = (size_t)n + 1};
  kiln_ir_create(&b, &s);
  free(cond);
  return r;
}

/* The body's scf.yield gains the next induction value in front. */
static void yield_next_iv(MlirContext ctx, MlirBlock body, MlirValue step) {
  MlirOperation old = mlirBlockGetTerminator(body);
  MlirLocation loc = mlirOperationGetLocation(old);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, body);
  kiln_ir_builder_set_before(&b, old);
  MlirValue iv = mlirBlockGetArgument(body, 0);
  MlirValue ops[2] = {iv, step};
  intptr_t n = mlirOperationGetNumOperands(old);
  MlirValue *vals = malloc(sizeof *vals * (size_t)(n + 1));
  KILN_ASSERT(vals);
  vals[0] = kiln_ir_build_elementwise(&b, loc, "arith.addi", ops, 2, mlirValueGetType(iv));
  for (intptr_t i = 0; i < n; i++) vals[i + 1] = mlirOperationGetOperand(old, i);
  kiln_ir_build_yield(&b, loc, vals, (size_t)n + 1);
  free(vals);
  mlirOperationDestroy(old);
}

/* One marked scf.for becomes the scf.while above.  False when the loop is not of that form
 * (its first iter_arg is not an i1): a backend lost the flag's place, which is a bug. */
static bool convert_loop(MlirOperation loop) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirLocation loc = mlirOperationGetLocation(loop);
  intptr_t nres = mlirOperationGetNumResults(loop);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  if (nres < 1 || !mlirTypeIsAInteger(mlirValueGetType(mlirOperationGetResult(loop, 0))) ||
      mlirIntegerTypeGetWidth(mlirValueGetType(mlirOperationGetResult(loop, 0))) != 1) {
    kiln_ir_error(loc, "kiln-exit-loops: a loop marked %s does not carry its flag first",
                  EXIT_FLAG_ATTR);
    return false;
  }
  intptr_t n = nres + 1; /* the induction variable, then the loop's iter_args */
  MlirType *types = malloc(sizeof *types * (size_t)n);
  MlirValue *inits = malloc(sizeof *inits * (size_t)n);
  KILN_ASSERT(types && inits);
  for (intptr_t i = 0; i < n; i++) {
    types[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
    inits[i] = mlirOperationGetOperand(loop, i == 0 ? 0 : i + 2);
  }
  MlirRegion regions[2] = {build_test(ctx, loc, loop, types, n), mlirRegionCreate()};
  yield_next_iv(ctx, body, mlirOperationGetOperand(loop, 2));
  mlirBlockDetach(body);
  mlirRegionAppendOwnedBlock(regions[1], body);

  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, mlirOperationGetBlock(loop));
  kiln_ir_builder_set_before(&b, loop);
  KilnOpSpec s = {.name = "scf.while",
                  .loc = loc,
                  .operands = inits,
                  .n_operands = (size_t)n,
                  .results = types,
                  .n_results = (size_t)n,
                  .regions = regions,
                  .n_regions = 2};
  MlirOperation w = kiln_ir_create(&b, &s);
  for (intptr_t i = 0; i < nres; i++)
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(loop, i),
                                  mlirOperationGetResult(w, i + 1));
  mlirOperationDestroy(loop);
  free(types);
  free(inits);
  return true;
}

MlirLogicalResult kiln_exit_loops_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList loops = {0};
  mlirOperationWalk(module, collect_marked, &loops, MlirWalkPostOrder);
  bool ok = true;
  for (size_t i = 0; i < loops.n; i++) ok = convert_loop(loops.ops[i]) && ok;
  kiln_op_list_free(&loops);
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}

/* MLIR wants each pass's TypeID from a distinct 8-byte-aligned address. */
static _Alignas(8) char exit_loops_id;

MlirPass kiln_pass_create_exit_loops(void) {
  return kiln_pass_make(mlirTypeIDCreate(&exit_loops_id), "KilnExitLoops", "kiln-exit-loops",
                        "end loops marked kiln.exit_flag when their flag is set (scf.while)",
                        kiln_exit_loops_module, NULL, 0);
}
