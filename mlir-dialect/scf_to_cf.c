/* scf_to_cf.c - kiln-scf-to-cf: scf.if and scf.for become blocks and cf branches, in time linear
 * in the size of the function, before upstream's convert-scf-to-cf lowers whatever is left.
 *
 * Why ours.  Upstream's patterns split the block at each scf.if through the dialect-conversion
 * rewriter, which records every operation it moves (so that it could roll the conversion back):
 * a block of n operations holding k ifs costs about n*k records.  The SIMT lowering unrolls a
 * tile into long straight blocks guarded by many scf.if (attn_bwd_dkdv at 64x64: 225 ifs in
 * 20,000 operations), where convert-scf-to-cf took 160 ms, more than half of the compile budget.
 * Here each operation is moved at most once per op it is lowered out of: the ifs and loops are
 * taken in reverse pre-order, so the last one of a block is split off first and each split moves
 * only what lies before the previous one, and an inner op is lowered before the op around it.
 *
 * The CFG is upstream's (mlir/lib/Conversion/SCFToControlFlow), so that what follows sees the
 * same code:
 *
 *   scf.if %c -> (T...) { then } else { else }      ^b: ...; cf.cond_br %c, ^then, ^else
 *   rest                                           ^then: ...; cf.br ^cont(then's yield)
 *                                                  ^else: ...; cf.br ^cont(else's yield)
 *                                                  ^cont(%r: T...): rest
 *   (no else region: the false edge goes to ^cont)
 *
 *   scf.for %i = %lo to %hi step %s iter_args(%a = %init) { body; yield %y }
 *                                                  ^b: ...; cf.br ^cond(%lo, %init)
 *                                                  ^cond(%i, %a): %go = arith.cmpi slt, %i, %hi
 *                                                         cf.cond_br %go, ^body, ^end
 *                                                  ^body: body; %n = arith.addi %i, %s
 *                                                         cf.br ^cond(%n, %y)  (the loop's
 *                                                         llvm.* attributes move here)
 *                                                  ^end: rest (the loop's results are ^cond's %a)
 *
 * Only an op whose enclosing ops up to its function are all scf.if or scf.for is lowered: other
 * scf ops (scf.while from kiln-exit-loops) keep single-block regions until upstream lowers them,
 * with everything inside them. */
#include "kiln_mlir_internal.h"

static bool lowered_here(MlirOperation op) {
  return kiln_ir_op_is(op, "scf.if") || kiln_ir_op_is(op, "scf.for");
}

/* Whether op's region may take blocks once the ops around it are lowered: every enclosing op is
 * one we lower, up to a function. */
static bool in_cfg_after_lowering(MlirOperation op) {
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p)) {
    if (kiln_ir_op_is(p, "func.func") || kiln_ir_op_is(p, "llvm.func")) return true;
    if (!lowered_here(p)) return false;
  }
  return false;
}

static MlirWalkResult collect(MlirOperation op, void *user) {
  if (lowered_here(op) && in_cfg_after_lowering(op)) kiln_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

/* A new block after op's, with arguments of these types, holding everything after op. */
static MlirBlock split_after(MlirOperation op, intptr_t n, const MlirType *types) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirLocation *locs = malloc(sizeof *locs * (size_t)(n ? n : 1));
  KILN_ASSERT(locs);
  for (intptr_t i = 0; i < n; i++) locs[i] = loc;
  MlirBlock rest = mlirBlockCreate(n, types, locs);
  free(locs);
  MlirBlock block = mlirOperationGetBlock(op);
  mlirRegionInsertOwnedBlockAfter(mlirBlockGetParentRegion(block), block, rest);
  for (MlirOperation o = mlirOperationGetNextInBlock(op), next; !mlirOperationIsNull(o); o = next) {
    next = mlirOperationGetNextInBlock(o);
    mlirOperationRemoveFromParent(o);
    mlirBlockAppendOwnedOperation(rest, o);
  }
  return rest;
}

/* Moves every block of `from` before `before` (in before's region), in order. */
static void inline_region_before(MlirRegion from, MlirBlock before) {
  MlirRegion to = mlirBlockGetParentRegion(before);
  for (MlirBlock b = mlirRegionGetFirstBlock(from), next; !mlirBlockIsNull(b); b = next) {
    next = mlirBlockGetNextInRegion(b);
    mlirBlockDetach(b);
    mlirRegionInsertOwnedBlockBefore(to, before, b);
  }
}

static MlirBlock last_block(MlirRegion r) {
  MlirBlock last = mlirRegionGetFirstBlock(r);
  for (MlirBlock b = last; !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b)) last = b;
  return last;
}

static MlirOperation build_br(KilnIRBuilder *b, MlirLocation loc, MlirBlock dest,
                              const MlirValue *args, size_t n) {
  KilnOpSpec s = {.name = "cf.br",
                  .loc = loc,
                  .operands = args,
                  .n_operands = n,
                  .successors = &dest,
                  .n_successors = 1};
  return kiln_ir_create(b, &s);
}

/* cf.cond_br with no block arguments on either edge. */
static void build_cond_br(KilnIRBuilder *b, MlirLocation loc, MlirValue cond, MlirBlock yes,
                          MlirBlock no) {
  int32_t segments[3] = {1, 0, 0};
  MlirNamedAttribute seg =
      kiln_ir_named(b->ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 3, segments));
  MlirBlock dests[2] = {yes, no};
  KilnOpSpec s = {.name = "cf.cond_br",
                  .loc = loc,
                  .operands = &cond,
                  .n_operands = 1,
                  .attrs = &seg,
                  .n_attrs = 1,
                  .successors = dests,
                  .n_successors = 2};
  kiln_ir_create(b, &s);
}

/* The scf.yield ending `block` becomes cf.br ^dest(first..., yielded...) at loc (the lowered
 * op's, as upstream places it), returned. */
static MlirOperation yield_to_br(MlirContext ctx, MlirLocation loc, MlirBlock block, MlirBlock dest,
                                 const MlirValue *first, size_t nfirst) {
  MlirOperation y = mlirBlockGetTerminator(block);
  KILN_ASSERT(kiln_ir_op_is(y, "scf.yield"));
  size_t n = (size_t)mlirOperationGetNumOperands(y);
  MlirValue *args = malloc(sizeof *args * (nfirst + n + 1));
  KILN_ASSERT(args);
  for (size_t i = 0; i < nfirst; i++) args[i] = first[i];
  for (size_t i = 0; i < n; i++) args[nfirst + i] = mlirOperationGetOperand(y, (intptr_t)i);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, block);
  kiln_ir_builder_set_before(&b, y);
  MlirOperation br = build_br(&b, loc, dest, args, nfirst + n);
  free(args);
  mlirOperationDestroy(y);
  return br;
}

/* The loop's attributes from the llvm dialect (an llvm.loop_annotation: unroll disable...) go on
 * the branch that closes the loop, where LLVM reads a loop's metadata; convert-cf-to-llvm keeps
 * a branch's attributes. */
static void copy_loop_attrs(MlirOperation loop, MlirOperation latch) {
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(loop); i++) {
    MlirNamedAttribute a = mlirOperationGetAttribute(loop, i);
    MlirStringRef ns = mlirDialectGetNamespace(mlirAttributeGetDialect(a.attribute));
    if (ns.length == 4 && memcmp(ns.data, "llvm", 4) == 0)
      mlirOperationSetAttributeByName(latch, mlirIdentifierStr(a.name), a.attribute);
  }
}

static MlirType *result_types(MlirOperation op, intptr_t n) {
  MlirType *types = malloc(sizeof *types * (size_t)(n ? n : 1));
  KILN_ASSERT(types);
  for (intptr_t i = 0; i < n; i++) types[i] = mlirValueGetType(mlirOperationGetResult(op, i));
  return types;
}

static void lower_if(MlirOperation op) {
  MlirContext ctx = mlirOperationGetContext(op);
  MlirLocation loc = mlirOperationGetLocation(op);
  intptr_t nres = mlirOperationGetNumResults(op);
  MlirType *types = result_types(op, nres);
  MlirBlock cont = split_after(op, nres, types);
  free(types);
  MlirRegion then_r = mlirOperationGetRegion(op, 0), else_r = mlirOperationGetRegion(op, 1);
  MlirBlock then_entry = mlirRegionGetFirstBlock(then_r);
  MlirBlock else_entry = mlirRegionGetFirstBlock(else_r);
  yield_to_br(ctx, loc, last_block(then_r), cont, NULL, 0);
  inline_region_before(then_r, cont);
  if (!mlirBlockIsNull(else_entry)) {
    yield_to_br(ctx, loc, last_block(else_r), cont, NULL, 0);
    inline_region_before(else_r, cont);
  } else {
    else_entry = cont;
  }
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, mlirOperationGetBlock(op));
  kiln_ir_builder_set_before(&b, op);
  build_cond_br(&b, loc, mlirOperationGetOperand(op, 0), then_entry, else_entry);
  for (intptr_t i = 0; i < nres; i++)
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, i), mlirBlockGetArgument(cont, i));
  mlirOperationDestroy(op);
}

static void lower_for(MlirOperation op) {
  MlirContext ctx = mlirOperationGetContext(op);
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue lo = mlirOperationGetOperand(op, 0), hi = mlirOperationGetOperand(op, 1);
  MlirValue step = mlirOperationGetOperand(op, 2);
  intptr_t nres = mlirOperationGetNumResults(op);
  MlirBlock end = split_after(op, 0, NULL);
  MlirRegion body_r = mlirOperationGetRegion(op, 0);
  MlirBlock cond = mlirRegionGetFirstBlock(body_r);
  /* the entry block keeps the arguments and becomes the test; its operations go to a new one */
  MlirBlock body = mlirBlockCreate(0, NULL, NULL);
  mlirRegionInsertOwnedBlockAfter(body_r, cond, body);
  for (MlirOperation o = mlirBlockGetFirstOperation(cond), next; !mlirOperationIsNull(o);
       o = next) {
    next = mlirOperationGetNextInBlock(o);
    mlirOperationRemoveFromParent(o);
    mlirBlockAppendOwnedOperation(body, o);
  }
  MlirValue iv = mlirBlockGetArgument(cond, 0);
  MlirBlock last = last_block(body_r);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, last);
  kiln_ir_builder_set_before(&b, mlirBlockGetTerminator(last));
  MlirValue ops[2] = {iv, step};
  MlirValue next_iv =
      kiln_ir_build_elementwise(&b, loc, "arith.addi", ops, 2, mlirValueGetType(iv));
  copy_loop_attrs(op, yield_to_br(ctx, loc, last, cond, &next_iv, 1));
  inline_region_before(body_r, end);

  /* ^b: cf.br ^cond(lo, inits...) in place of the loop */
  intptr_t nops = mlirOperationGetNumOperands(op);
  MlirValue *init = malloc(sizeof *init * (size_t)(nops - 2));
  KILN_ASSERT(init);
  init[0] = lo;
  for (intptr_t i = 3; i < nops; i++) init[i - 2] = mlirOperationGetOperand(op, i);
  kiln_ir_builder_init(&b, ctx, mlirOperationGetBlock(op));
  kiln_ir_builder_set_before(&b, op);
  build_br(&b, loc, cond, init, (size_t)(nops - 2));
  free(init);
  kiln_ir_builder_set_end(&b, cond);
  MlirValue go = kiln_ir_build_cmpi(&b, loc, "slt", iv, hi);
  build_cond_br(&b, loc, go, body, end);
  for (intptr_t i = 0; i < nres; i++)
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, i), mlirBlockGetArgument(cond, i + 1));
  mlirOperationDestroy(op);
}

MlirLogicalResult kiln_scf_to_cf_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList ops = {0};
  mlirOperationWalk(module, collect, &ops, MlirWalkPreOrder);
  for (size_t i = ops.n; i-- > 0;) {
    if (kiln_ir_op_is(ops.ops[i], "scf.if"))
      lower_if(ops.ops[i]);
    else
      lower_for(ops.ops[i]);
  }
  kiln_op_list_free(&ops);
  return mlirLogicalResultSuccess();
}

/* MLIR wants each pass's TypeID from a distinct 8-byte-aligned address. */
static _Alignas(8) char scf_to_cf_id;

MlirPass kiln_pass_create_scf_to_cf(void) {
  return kiln_pass_make(mlirTypeIDCreate(&scf_to_cf_id), "KilnScfToCf", "kiln-scf-to-cf",
                        "scf.if and scf.for to blocks and cf branches, in linear time",
                        kiln_scf_to_cf_module, NULL, 0);
}
