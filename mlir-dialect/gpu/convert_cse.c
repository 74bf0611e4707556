/* convert_cse.c - kiln-gpu-convert-cse: at most one kiln.convert_layout per value and layout.
 *
 * Why: kiln-gpu-layouts materializes a convert at every use whose required layout differs from
 * the value's, so a value read by two consumers in the same other layout gets two converts
 * (AdamW's m1 feeds both its store and the update of p).  Each convert is a round trip through
 * shared memory behind two barriers, so the duplicate costs as much as the first and buys
 * nothing.  Upstream `cse` cannot merge them: our IRDL ops have no traits, so MLIR must assume
 * they have side effects.
 *
 * How: the kernel is walked in program order with a scoped table of the converts seen so far
 * (those of the enclosing blocks stay visible inside nested regions, which they dominate; a
 * region's own entries are dropped when it ends).  A convert whose operand and result type
 * equal a visible one's is replaced by it and erased.  Nothing else changes, so the pass is
 * safe to run on any laid-out kernel, and running it twice changes nothing more. */
#include "gpu_internal.h"

typedef struct Seen {
  MlirOperation *ops;
  size_t n, cap;
} Seen;

static bool is_convert(MlirOperation op) { return kiln_ir_op_id(op) == KILN_OP_CONVERT_LAYOUT; }

/* A visible convert computing what `op` computes, or null. */
static MlirOperation find_same(const Seen *s, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  for (size_t i = 0; i < s->n; i++) {
    MlirOperation o = s->ops[i];
    if (mlirValueEqual(mlirOperationGetOperand(o, 0), src) &&
        mlirTypeEqual(mlirValueGetType(mlirOperationGetResult(o, 0)), rt))
      return o;
  }
  return (MlirOperation){NULL};
}

static void push(Seen *s, MlirOperation op) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 16;
    s->ops = realloc(s->ops, s->cap * sizeof *s->ops);
    KILN_ASSERT(s->ops != NULL);
  }
  s->ops[s->n++] = op;
}

static size_t cse_block(Seen *s, MlirBlock b);

/* The regions of op, each in its own scope. */
static size_t cse_regions(Seen *s, MlirOperation op) {
  size_t removed = 0;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++) {
    MlirRegion reg = mlirOperationGetRegion(op, r);
    for (MlirBlock b = mlirRegionGetFirstBlock(reg); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b)) {
      size_t mark = s->n;
      removed += cse_block(s, b);
      s->n = mark;
    }
  }
  return removed;
}

static size_t cse_block(Seen *s, MlirBlock b) {
  size_t removed = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (is_convert(op)) {
      MlirOperation same = find_same(s, op);
      if (!mlirOperationIsNull(same)) {
        mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0),
                                      mlirOperationGetResult(same, 0));
        mlirOperationDestroy(op);
        removed++;
      } else {
        push(s, op);
      }
    } else {
      removed += cse_regions(s, op);
    }
    op = next;
  }
  return removed;
}

MlirLogicalResult kiln_gpu_convert_cse_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList kernels = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  Seen s = {0};
  for (size_t i = 0; i < kernels.n; i++) {
    s.n = 0;
    cse_regions(&s, kernels.ops[i]);
  }
  free(s.ops);
  kiln_op_list_free(&kernels);
  return mlirLogicalResultSuccess();
}
