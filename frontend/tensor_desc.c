/* tensor_desc.c: what a tensor descriptor's load and store are, written as the Kiln a user
 * would write by hand.
 *
 * make_tensor_descriptor(base, shape, strides, block_shape) names a tensor in global memory
 * (Triton's tensor descriptors; on a GPU with a tensor memory accelerator the same facts make
 * a TMA descriptor).  Sema binds each run-time part to a hidden `let` (KilnTensorDesc); a load
 * or store at `offsets` is then, per dim k of rank R,
 *
 *     idx_k = o_k + arange(0, B_k)                       (a hidden `let` each)
 *     ptrs  = base + idx_0[:, None] * s_0 + idx_1[None, :]   (the last stride is 1)
 *     mask  = (idx_0 >= 0 & idx_0 < n_0)[:, None] & (idx_1 >= 0 & idx_1 < n_1)[None, :]
 *     load(ptrs, mask, 0)  /  store(ptrs, value, mask)
 *
 * so elements outside the tensor read zero and are not written, as a TMA copy does, and every
 * target lowers them with the machinery it has for loads and stores (the GPU's vectorized and
 * pipelined accesses included: the unit last stride makes rows contiguous).  The nodes built
 * here are unchecked AST; sema checks them like any other, with the call's span, so an error
 * in them points at the call. */
#include "frontend_internal.h"

static KilnExpr *node(KilnArena *ar, KilnExprKind kind, KilnSpan span) {
  KilnExpr *e = kiln_arena_alloc(ar, sizeof *e);
  e->kind = kind;
  e->span = span;
  e->depth = 1;
  return e;
}

/* A use of a hidden `let`: bound to its decl, not looked up (the user cannot spell its name). */
static KilnExpr *part_ref(KilnArena *ar, KilnDecl *d, KilnSpan span) {
  KilnExpr *e = node(ar, KILN_EXPR_NAME, span);
  e->name = d->name;
  e->part = d;
  return e;
}

static KilnExpr *int_lit(KilnArena *ar, int64_t v, KilnSpan span) {
  KilnExpr *e = node(ar, KILN_EXPR_INT, span);
  e->ival = v;
  return e;
}

static KilnExpr *binary(KilnArena *ar, KilnBinOp op, KilnExpr *l, KilnExpr *r) {
  KilnExpr *e = node(ar, KILN_EXPR_BINARY, l->span);
  e->binop = op;
  e->lhs = l;
  e->rhs = r;
  return e;
}

static KilnExpr *call(KilnArena *ar, const char *name, KilnSpan span, int n, KilnExpr **args) {
  KilnExpr *e = node(ar, KILN_EXPR_CALL, span);
  e->name = name;
  e->args = kiln_arena_alloc(ar, sizeof *e->args * (size_t)n);
  for (int i = 0; i < n; i++) e->args[i] = args[i];
  e->nargs = n;
  return e;
}

/* x (1-D) placed along dim k of a rank-R tile: x[None, .., :, .., None]. */
static KilnExpr *along(KilnArena *ar, KilnExpr *x, int k, int rank) {
  if (rank == 1) return x;
  KilnExpr *e = node(ar, KILN_EXPR_INDEX, x->span);
  e->lhs = x;
  e->nindex = rank;
  e->index = kiln_arena_alloc(ar, sizeof *e->index * (size_t)rank);
  for (int j = 0; j < rank; j++) e->index[j] = j == k ? KILN_INDEX_SLICE : KILN_INDEX_NONE;
  return e;
}

KilnExpr *kiln_tensor_desc_indices(KilnArena *ar, const KilnTensorDesc *d, int k, KilnDecl *offset,
                                   KilnSpan span) {
  KilnExpr *bounds[2] = {int_lit(ar, 0, span), int_lit(ar, d->block[k], span)};
  return binary(ar, KILN_BIN_ADD, part_ref(ar, offset, span), call(ar, "arange", span, 2, bounds));
}

KilnExpr *kiln_tensor_desc_access(KilnArena *ar, const KilnTensorDesc *d, KilnDecl *const *idx,
                                  KilnDecl *value, KilnSpan span) {
  KilnExpr *offsets = NULL, *mask = NULL;
  for (int k = 0; k < d->rank; k++) {
    KilnExpr *i = along(ar, part_ref(ar, idx[k], span), k, d->rank);
    KilnExpr *term =
        d->strides[k] ? binary(ar, KILN_BIN_MUL, i, part_ref(ar, d->strides[k], span)) : i;
    offsets = offsets ? binary(ar, KILN_BIN_ADD, offsets, term) : term;
    /* 0 <= idx < n, on the 1-D indices before they are spread over the block */
    KilnExpr *inside = binary(
        ar, KILN_BIN_BITAND,
        binary(ar, KILN_BIN_GE, part_ref(ar, idx[k], span), int_lit(ar, 0, span)),
        binary(ar, KILN_BIN_LT, part_ref(ar, idx[k], span), part_ref(ar, d->shape[k], span)));
    inside = along(ar, inside, k, d->rank);
    mask = mask ? binary(ar, KILN_BIN_BITAND, mask, inside) : inside;
  }
  KilnExpr *ptrs = binary(ar, KILN_BIN_ADD, part_ref(ar, d->base, span), offsets);
  if (value) {
    KilnExpr *args[3] = {ptrs, part_ref(ar, value, span), mask};
    return call(ar, "store", span, 3, args);
  }
  KilnExpr *args[3] = {ptrs, mask, int_lit(ar, 0, span)};
  return call(ar, "load", span, 3, args);
}

KilnExpr *kiln_tensor_desc_stride_check(KilnArena *ar, KilnDecl *stride, int align, KilnSpan span) {
  KilnExpr *rem = binary(ar, KILN_BIN_MOD, part_ref(ar, stride, span), int_lit(ar, align, span));
  KilnExpr *msg = node(ar, KILN_EXPR_STRING, span);
  msg->name = "a tensor descriptor's stride is not a multiple of 16 bytes";
  KilnExpr *args[2] = {binary(ar, KILN_BIN_EQ, rem, int_lit(ar, 0, span)), msg};
  return call(ar, "device_assert", span, 2, args);
}

KilnExpr *kiln_tensor_desc_stride_hint(KilnArena *ar, KilnDecl *stride, int align, KilnSpan span) {
  KilnExpr *args[2] = {part_ref(ar, stride, span), int_lit(ar, align, span)};
  return call(ar, "multiple_of", span, 2, args);
}
