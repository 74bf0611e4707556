/* widen_offsets.c - `widen-offsets`: 64-bit element offsets for kernels whose buffers may pass
 * 2^31 elements.
 *
 * Offsets are i32 in Kiln source (program ids, ranges and integer arguments are i32), and every
 * target turns kiln.addptr into an address by sign-extending the offset and scaling it by the
 * element size.  The multiplication that overflows happens before that, in the i32 arithmetic
 * that builds the offset: xent's `row * classes` at 65,536 rows of 30,522 logits is 2.0e9, and
 * any larger batch or vocabulary wraps to a negative offset.
 *
 * With KilnStageOptions.index_bits = 64 this pass rebuilds, in front of each kiln.addptr, the
 * offset's expression in i64: through the integer arithmetic that can overflow (addi, subi,
 * muli) and the shape ops that carry a value unchanged (splat, broadcast, expand_dims), down to
 * leaves (arguments, program ids, ranges, constants, loads, loop variables, divisions), each
 * sign-extended.  Only offsets that feed pointers widen; masks, loop bounds and the arithmetic
 * on data stay i32, so the common case keeps its speed and only the address math of the kernels
 * compiled this way pays for 64 bits.  The i32 chain it replaces is left for DCE.
 *
 * Every module gets `kiln.index_bits` (32 or 64) and `kiln.arg_elem_bytes` (per kernel, the
 * element size of each pointer parameter, 0 for scalars), so that the targets' metadata can tell
 * a launcher which promise the code makes: a kernel with 32-bit offsets is only correct when each
 * pointer argument is used for fewer than 2^31 elements of its type (docs/emulator.md,
 * "Checks").  They are module attributes because the GPU lowering rebuilds the kernels. */
#include "kiln_mlir_internal.h"

/* The ops whose i32 results can be recomputed in i64 from widened operands. */
static bool widens_through(MlirOperation op) {
  return kiln_ir_op_is(op, "arith.addi") || kiln_ir_op_is(op, "arith.subi") ||
         kiln_ir_op_is(op, "arith.muli") || kiln_ir_op_is(op, KILN_OP_NAME_SPLAT) ||
         kiln_ir_op_is(op, KILN_OP_NAME_BROADCAST) || kiln_ir_op_is(op, KILN_OP_NAME_EXPAND_DIMS);
}

/* t (an integer scalar or tile) with i64 elements. */
static MlirType as_i64(MlirContext ctx, MlirType t) {
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  if (!mlirTypeIsARankedTensor(t)) return i64;
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t shape[16];
  KILN_ASSERT(rank <= 16);
  for (intptr_t d = 0; d < rank; d++) shape[d] = mlirShapedTypeGetDimSize(t, d);
  return mlirRankedTensorTypeGet(rank, shape, i64, mlirRankedTensorTypeGetEncoding(t));
}

typedef struct Widen {
  KilnIRBuilder
      b; /* before the kiln.addptr being rewritten: every value of its offset dominates it */
  MlirLocation loc;
  KilnPtrMap done; /* old value -> its i64 copy, for this addptr only (a DAG is widened once) */
} Widen;

/* v's value in i64, built at w->b. */
static MlirValue widen(Widen *w, MlirValue v) {
  MlirType t = mlirValueGetType(v), et = kiln_ir_elem_type(t);
  MlirContext ctx = mlirTypeGetContext(t);
  if (!mlirTypeIsAInteger(et) || mlirIntegerTypeGetWidth(et) >= 64) return v;
  void *seen = kiln_ptr_map_get(&w->done, v.ptr);
  if (seen) return (MlirValue){seen};
  MlirType wt = as_i64(ctx, t);
  MlirValue out;
  MlirOperation def = mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
  if (!mlirOperationIsNull(def) && widens_through(def)) {
    intptr_t n = mlirOperationGetNumOperands(def), na = mlirOperationGetNumAttributes(def);
    MlirValue ops[2];
    MlirNamedAttribute attrs[8];
    KILN_ASSERT(n <= 2 && na <= 8);
    for (intptr_t i = 0; i < n; i++) ops[i] = widen(w, mlirOperationGetOperand(def, i));
    for (intptr_t i = 0; i < na; i++)
      attrs[i] = mlirOperationGetAttribute(def, i); /* overflow flags, axes, user hints */
    char name[64];
    kiln_ir_op_name(def, name, sizeof name);
    out = kiln_ir_make1(&w->b, mlirOperationGetLocation(def), name, ops, (size_t)n, wt, attrs,
                        (size_t)na);
  } else {
    out = kiln_ir_build_cast(&w->b, w->loc, "arith.extsi", v, wt);
  }
  kiln_ptr_map_put(&w->done, v.ptr, (void *)(uintptr_t)out.ptr); /* the map stores void * */
  return out;
}

static MlirWalkResult collect_addptr(MlirOperation op, void *user) {
  if (kiln_ir_op_is(op, KILN_OP_NAME_ADDPTR)) kiln_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

static void widen_addptr(MlirContext ctx, MlirOperation addptr) {
  Widen w = {.loc = mlirOperationGetLocation(addptr)};
  kiln_ir_builder_init(&w.b, ctx, mlirOperationGetBlock(addptr));
  kiln_ir_builder_set_before(&w.b, addptr);
  MlirValue off = mlirOperationGetOperand(addptr, 1);
  MlirValue wide = widen(&w, off);
  if (wide.ptr != off.ptr) mlirOperationSetOperand(addptr, 1, wide);
  kiln_ptr_map_free(&w.done);
}

/* {NAME = array<i32: element bytes of each pointer parameter, 0 for a scalar>} of every kernel. */
static MlirAttribute arg_elem_bytes(MlirOperation module) {
  MlirContext ctx = mlirOperationGetContext(module);
  KilnOpList ks = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  MlirNamedAttribute *entries = calloc(ks.n ? ks.n : 1, sizeof *entries);
  KILN_ASSERT(entries != NULL);
  for (size_t k = 0; k < ks.n; k++) {
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(ks.ops[k], 0));
    intptr_t n = mlirBlockGetNumArguments(body);
    int32_t *bytes = calloc((size_t)(n ? n : 1), sizeof *bytes);
    KILN_ASSERT(bytes != NULL);
    for (intptr_t i = 0; i < n; i++) {
      MlirType pointee = kiln_ir_ptr_elem(mlirValueGetType(mlirBlockGetArgument(body, i)));
      bytes[i] = mlirTypeIsNull(pointee) ? 0 : (int32_t)kiln_ir_elem_bytes(pointee);
    }
    MlirAttribute sym =
        mlirOperationGetAttributeByName(ks.ops[k], mlirStringRefCreateFromCString("sym_name"));
    entries[k] = mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringAttrGetValue(sym)),
                                       mlirDenseI32ArrayGet(ctx, n, bytes));
    free(bytes);
  }
  MlirAttribute dict = mlirDictionaryAttrGet(ctx, (intptr_t)ks.n, entries);
  free(entries);
  kiln_op_list_free(&ks);
  return dict;
}

MlirLogicalResult kiln_widen_offsets_module(MlirOperation module, void *opts) {
  const KilnStageOptions *o = opts;
  int bits = o && o->index_bits == 64 ? 64 : 32;
  MlirContext ctx = mlirOperationGetContext(module);
  mlirOperationSetAttributeByName(module, mlirStringRefCreateFromCString("kiln.index_bits"),
                                  kiln_ir_attr_i32(ctx, bits));
  mlirOperationSetAttributeByName(module, mlirStringRefCreateFromCString("kiln.arg_elem_bytes"),
                                  arg_elem_bytes(module));
  if (bits == 32) return mlirLogicalResultSuccess();
  KilnOpList adds = {0};
  mlirOperationWalk(module, collect_addptr, &adds, MlirWalkPreOrder);
  for (size_t i = 0; i < adds.n; i++) widen_addptr(ctx, adds.ops[i]);
  kiln_op_list_free(&adds);
  return mlirLogicalResultSuccess();
}
