/* mlirgen.c — typed AST → `kiln` dialect.
 *
 * How this works. Sema has already decided every type: each expression node carries its result
 * type and, for operators and builtins, the common operand type its inputs are converted and
 * broadcast to. mlirgen walks the kernel once, in order, keeping a map from declaration id to
 * the SSA value it currently holds (a `var` assignment just rebinds the id). Structured control
 * flow follows sema's `carried` lists: the current values of those vars become scf.for iter_args
 * or scf.if results, and the map is rebound to the op's results afterwards.
 *
 * Everything implicit in the source is made explicit here by `convert()`: element-type casts
 * (extf/truncf/sitofp/...), scalars splatted to tiles, lower-rank tiles given leading unit dims
 * (numpy alignment), and unit dims stretched by kiln.broadcast. Literals are emitted directly in
 * the type they are converted to, so `0.5 * x` on f16 costs no cast. */
#include "kiln_mlirgen.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Dialect/Func.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Gen {
  KilnCompilation *c;
  MlirContext ctx;
  KilnIRBuilder b;
  const char *path;
  MlirValue *vals; /* by decl id */
  int nvals;
  MlirValue *args; /* the function's arguments, by non-const param index */
  bool failed;
} Gen;

/* ------------------------------------------------------------------ errors, locations */

static void gen_error(Gen *g, KilnSpan span, const char *msg) {
  if (!g->failed) {
    char buf[256];
    snprintf(buf, sizeof buf, "cannot lower to IR: %s", msg);
    kiln_diag_add(g->c, KILN_SEV_ERROR, span, buf);
  }
  g->failed = true;
}

static MlirLocation loc_of(Gen *g, KilnSpan s) {
  return kiln_ir_loc(g->ctx, g->path, s.line > 0 ? s.line : 1, s.col > 0 ? s.col : 1);
}

/* ------------------------------------------------------------------ types */

static MlirType scalar_type(MlirContext ctx, KilnScalarKind k) {
  switch (k) {
  case KILN_SCALAR_I1: return mlirIntegerTypeGet(ctx, 1);
  case KILN_SCALAR_I8: return mlirIntegerTypeGet(ctx, 8);
  case KILN_SCALAR_I16: return mlirIntegerTypeGet(ctx, 16);
  case KILN_SCALAR_I32: return mlirIntegerTypeGet(ctx, 32);
  case KILN_SCALAR_I64: return mlirIntegerTypeGet(ctx, 64);
  case KILN_SCALAR_F16: return mlirF16TypeGet(ctx);
  case KILN_SCALAR_BF16: return mlirBF16TypeGet(ctx);
  case KILN_SCALAR_F32: return mlirF32TypeGet(ctx);
  case KILN_SCALAR_F64: return mlirF64TypeGet(ctx);
  /* unsigned kinds are the signless integers of their width: the ops chosen for them
   * (divui, shrui, cmpi ult, extui, uitofp, ...) carry the signedness */
  case KILN_SCALAR_U8: return mlirIntegerTypeGet(ctx, 8);
  case KILN_SCALAR_U16: return mlirIntegerTypeGet(ctx, 16);
  case KILN_SCALAR_U32: return mlirIntegerTypeGet(ctx, 32);
  case KILN_SCALAR_U64: return mlirIntegerTypeGet(ctx, 64);
  default: return (MlirType){NULL};
  }
}

MlirType kiln_mlirgen_type(MlirContext ctx, const KilnType *t) {
  if (!t) return (MlirType){NULL};
  switch (t->kind) {
  case KILN_TYPE_SCALAR: return scalar_type(ctx, t->scalar);
  case KILN_TYPE_PTR: return kiln_ir_type_ptr(ctx, scalar_type(ctx, t->scalar));
  case KILN_TYPE_TILE: {
    MlirType elem = scalar_type(ctx, t->scalar);
    if (t->elem_is_ptr) elem = kiln_ir_type_ptr(ctx, elem);
    return kiln_ir_type_tensor(elem, t->dims, t->rank);
  }
  default: return (MlirType){NULL};
  }
}

static bool is_tile(const KilnType *t) { return t && t->kind == KILN_TYPE_TILE; }
static bool is_ptrish(const KilnType *t) {
  return t && (t->kind == KILN_TYPE_PTR || (t->kind == KILN_TYPE_TILE && t->elem_is_ptr));
}

/* The same shape as `shape_of` (scalar or tile) with element `k` (never a pointer). */
static KilnType with_scalar(const KilnType *shape_of, KilnScalarKind k) {
  KilnType t = *shape_of;
  t.scalar = k;
  t.elem_is_ptr = false;
  if (t.kind != KILN_TYPE_TILE) t.kind = KILN_TYPE_SCALAR;
  return t;
}

static bool is_float_kind(KilnScalarKind k) { return kiln_scalar_is_float(k); }

/* Integers compared, divided, shifted and widened as unsigned: u8..u64, and i1 (0 or 1). */
static bool is_unsigned_kind(KilnScalarKind k) {
  return k == KILN_SCALAR_I1 || kiln_scalar_is_unsigned(k);
}

/* ------------------------------------------------------------------ conversions */

/* An element-type cast of v (scalar or tile) from kind `from` to kind `to`, same shape. */
static MlirValue cast_elem(Gen *g, MlirLocation loc, MlirValue v, KilnScalarKind from,
                           KilnScalarKind to, const KilnType *shape_of) {
  if (from == to) return v;
  KilnType tt = with_scalar(shape_of, to);
  MlirType rt = kiln_mlirgen_type(g->ctx, &tt);
  bool ff = is_float_kind(from), tf = is_float_kind(to);
  int fb = kiln_scalar_bits(from), tb = kiln_scalar_bits(to);
  if (to == KILN_SCALAR_I1) { /* truth value: nonzero */
    KilnType st = with_scalar(shape_of, from);
    MlirType ft = kiln_mlirgen_type(g->ctx, &st);
    if (ff) {
      MlirValue z = kiln_ir_build_const_float(&g->b, loc, ft, 0.0);
      return kiln_ir_build_cmpf(&g->b, loc, "une", v, z);
    }
    MlirValue z = kiln_ir_build_const_int(&g->b, loc, ft, 0);
    return kiln_ir_build_cmpi(&g->b, loc, "ne", v, z);
  }
  if (ff && tf) {
    if ((from == KILN_SCALAR_F16 && to == KILN_SCALAR_BF16) ||
        (from == KILN_SCALAR_BF16 && to == KILN_SCALAR_F16)) {
      MlirValue w = cast_elem(g, loc, v, from, KILN_SCALAR_F32, shape_of);
      return cast_elem(g, loc, w, KILN_SCALAR_F32, to, shape_of);
    }
    return kiln_ir_build_cast(&g->b, loc, fb < tb ? "arith.extf" : "arith.truncf", v, rt);
  }
  if (!ff && !tf) {
    /* widening extends by the source's signedness (C's rule: the value, modulo 2^bits); the
     * same width (i32 and u32) is the same bits */
    if (fb == tb) return v;
    if (fb < tb)
      return kiln_ir_build_cast(&g->b, loc, is_unsigned_kind(from) ? "arith.extui" : "arith.extsi",
                                v, rt);
    return kiln_ir_build_cast(&g->b, loc, "arith.trunci", v, rt);
  }
  if (!ff && tf)
    return kiln_ir_build_cast(&g->b, loc, is_unsigned_kind(from) ? "arith.uitofp" : "arith.sitofp",
                              v, rt);
  return kiln_ir_build_cast(&g->b, loc,
                            kiln_scalar_is_unsigned(to) ? "arith.fptoui" : "arith.fptosi", v, rt);
}

/* Reshapes v (of type `from`, same element as `to`) to the shape of `to`: splat a scalar,
 * prepend unit dims to a lower-rank tile, then stretch unit dims. */
static MlirValue broadcast_to(Gen *g, MlirLocation loc, MlirValue v, const KilnType *from,
                              const KilnType *to, KilnSpan span) {
  if (!is_tile(to)) {
    if (is_tile(from)) gen_error(g, span, "a tile is used where a scalar is required");
    return v;
  }
  MlirType rt = kiln_mlirgen_type(g->ctx, to);
  if (!is_tile(from)) return kiln_ir_build_splat(&g->b, loc, v, rt);
  if (from->rank > to->rank) {
    gen_error(g, span, "tile rank does not fit the expected shape");
    return v;
  }
  KilnType cur = *from;
  while (cur.rank < to->rank) {
    v = kiln_ir_build_expand_dims(&g->b, loc, v, 0);
    memmove(&cur.dims[1], &cur.dims[0], sizeof(int64_t) * (size_t)cur.rank);
    cur.dims[0] = 1;
    cur.rank++;
  }
  bool same = true;
  for (int i = 0; i < to->rank; i++) {
    if (cur.dims[i] == to->dims[i]) continue;
    if (cur.dims[i] != 1) {
      gen_error(g, span, "tile shapes do not broadcast");
      return v;
    }
    same = false;
  }
  if (same) return v;
  return kiln_ir_build_broadcast(&g->b, loc, v, rt);
}

/* Converts v of type `from` to type `to`: element cast (on the smaller shape) then broadcast.
 * Pointer types only broadcast. */
static MlirValue convert(Gen *g, MlirLocation loc, MlirValue v, const KilnType *from,
                         const KilnType *to, KilnSpan span) {
  if (!from || !to || mlirValueIsNull(v)) {
    gen_error(g, span, "missing type information");
    return v;
  }
  if (is_ptrish(from) != is_ptrish(to)) {
    gen_error(g, span, "pointer and non-pointer values mixed");
    return v;
  }
  if (!is_ptrish(from) && from->scalar != to->scalar)
    v = cast_elem(g, loc, v, from->scalar, to->scalar, from);
  KilnType mid = *from;
  mid.scalar = to->scalar;
  return broadcast_to(g, loc, v, &mid, to, span);
}

/* ------------------------------------------------------------------ expressions */

static MlirValue gen_expr(Gen *g, const KilnExpr *e);
static void gen_stmt(Gen *g, const KilnStmt *s);

static MlirValue const_of(Gen *g, MlirLocation loc, const KilnType *t, double fv, int64_t iv,
                          bool is_float_value) {
  MlirType mt = kiln_mlirgen_type(g->ctx, t);
  if (is_float_kind(t->scalar))
    return kiln_ir_build_const_float(&g->b, loc, mt, is_float_value ? fv : (double)iv);
  return kiln_ir_build_const_int(&g->b, loc, mt, is_float_value ? (int64_t)fv : iv);
}

/* Generates e converted to type `to`; literals are emitted directly in that type. */
static MlirValue gen_as(Gen *g, const KilnExpr *e, const KilnType *to) {
  if (!e || !to) return (MlirValue){NULL};
  MlirLocation loc = loc_of(g, e->span);
  if (!is_ptrish(to) && (to->kind == KILN_TYPE_SCALAR || to->kind == KILN_TYPE_TILE)) {
    if (e->kind == KILN_EXPR_INT || e->kind == KILN_EXPR_BOOL)
      return const_of(g, loc, to, 0.0, e->ival, false);
    if (e->kind == KILN_EXPR_FLOAT) return const_of(g, loc, to, e->fval, 0, true);
    /* a negated literal is one constant too (so -128 is an i8 constant, never 128 negated);
     * not for i1, where a conversion is a truth test (-2 is true) and not a truncation */
    bool neg_lit =
        e->kind == KILN_EXPR_UNARY && e->unop == KILN_UN_NEG && to->scalar != KILN_SCALAR_I1;
    if (neg_lit && e->lhs->kind == KILN_EXPR_INT)
      return const_of(g, loc, to, 0.0, -e->lhs->ival, false);
    if (neg_lit && e->lhs->kind == KILN_EXPR_FLOAT)
      return const_of(g, loc, to, -e->lhs->fval, 0, true);
  }
  MlirValue v = gen_expr(g, e);
  if (g->failed) return v;
  return convert(g, loc, v, e->type, to, e->span);
}

static MlirValue gen_name(Gen *g, const KilnExpr *e) {
  const KilnDecl *d = e->decl;
  if (!d) {
    gen_error(g, e->span, "unresolved name");
    return (MlirValue){NULL};
  }
  switch (d->kind) {
  case KILN_DECL_PARAM: return g->args[d->index];
  case KILN_DECL_CONST_PARAM: return const_of(g, loc_of(g, e->span), d->type, 0.0, d->value, false);
  default:
    if (d->id < 0 || d->id >= g->nvals || mlirValueIsNull(g->vals[d->id])) {
      gen_error(g, e->span, "name used before it has a value");
      return (MlirValue){NULL};
    }
    return g->vals[d->id];
  }
}

/* The comparison predicate of op on floats (ordered), signed integers, or unsigned ones (u8..u64
 * and i1: a boolean is 0 or 1, so false < true; in signed i1, true is -1 and would sort first). */
static const char *cmp_pred(KilnBinOp op, bool fl, bool u) {
  switch (op) {
  case KILN_BIN_LT: return fl ? "olt" : u ? "ult" : "slt";
  case KILN_BIN_LE: return fl ? "ole" : u ? "ule" : "sle";
  case KILN_BIN_GT: return fl ? "ogt" : u ? "ugt" : "sgt";
  case KILN_BIN_GE: return fl ? "oge" : u ? "uge" : "sge";
  case KILN_BIN_EQ: return fl ? "oeq" : "eq";
  case KILN_BIN_NE: return fl ? "une" : "ne";
  default: return NULL;
  }
}

/* The arith op name for an arithmetic/bitwise binary operator; u: unsigned division, remainder
 * and right shift (logical). */
static const char *arith_name(KilnBinOp op, bool fl, bool u) {
  switch (op) {
  case KILN_BIN_ADD: return fl ? "arith.addf" : "arith.addi";
  case KILN_BIN_SUB: return fl ? "arith.subf" : "arith.subi";
  case KILN_BIN_MUL: return fl ? "arith.mulf" : "arith.muli";
  case KILN_BIN_DIV: return fl ? "arith.divf" : u ? "arith.divui" : "arith.divsi";
  case KILN_BIN_MOD: return fl ? "arith.remf" : u ? "arith.remui" : "arith.remsi";
  case KILN_BIN_SHL: return fl ? NULL : "arith.shli";
  case KILN_BIN_SHR: return fl ? NULL : u ? "arith.shrui" : "arith.shrsi";
  case KILN_BIN_BITAND:
  case KILN_BIN_AND: return fl ? NULL : "arith.andi";
  case KILN_BIN_BITOR:
  case KILN_BIN_OR: return fl ? NULL : "arith.ori";
  case KILN_BIN_BITXOR: return fl ? NULL : "arith.xori";
  default: return NULL;
  }
}

/* ptr ± int: broadcast the pointer to the result's shape, the offset to operand_type. */
static MlirValue gen_ptr_arith(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  bool lhs_is_ptr = is_ptrish(e->lhs->type);
  const KilnExpr *pe = lhs_is_ptr ? e->lhs : e->rhs;
  const KilnExpr *oe = lhs_is_ptr ? e->rhs : e->lhs;
  if (e->binop != KILN_BIN_ADD && !(e->binop == KILN_BIN_SUB && lhs_is_ptr)) {
    gen_error(g, e->span, "only ptr + int and ptr - int are pointer arithmetic");
    return (MlirValue){NULL};
  }
  MlirValue p = gen_expr(g, pe);
  if (g->failed) return p;
  p = broadcast_to(g, loc, p, pe->type, e->type, pe->span);
  MlirValue off = gen_as(g, oe, e->operand_type);
  if (g->failed) return off;
  if (e->binop == KILN_BIN_SUB) {
    MlirType ot = kiln_mlirgen_type(g->ctx, e->operand_type);
    MlirValue zero = kiln_ir_build_const_int(&g->b, loc, ot, 0);
    MlirValue ops[2] = {zero, off};
    off = kiln_ir_build_elementwise(&g->b, loc, "arith.subi", ops, 2, ot);
  }
  return kiln_ir_build_addptr(&g->b, loc, p, off);
}

/* x ** n for a constant n (sema): square-and-multiply in x's type, so x ** 2 is x * x and
 * x ** 8 three squarings; x ** 0 is 1 and a negative n the reciprocal 1 / x ** -n (floats). */
static MlirValue gen_pow(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->type;
  MlirType t = kiln_mlirgen_type(g->ctx, ot);
  bool fl = is_float_kind(ot->scalar);
  int64_t n = e->rhs->ival, m = n < 0 ? -n : n;
  if (e->is_const) return const_of(g, loc, ot, 0.0, e->ival, false);
  MlirValue base = gen_as(g, e->lhs, ot);
  if (g->failed) return base;
  MlirValue acc = {NULL};
  const char *mul = fl ? "arith.mulf" : "arith.muli";
  while (m > 0) {
    if (m & 1) {
      MlirValue ops[2] = {acc, base};
      acc = mlirValueIsNull(acc) ? base : kiln_ir_build_elementwise(&g->b, loc, mul, ops, 2, t);
    }
    m >>= 1;
    if (m > 0) {
      MlirValue ops[2] = {base, base};
      base = kiln_ir_build_elementwise(&g->b, loc, mul, ops, 2, t);
    }
  }
  if (mlirValueIsNull(acc)) return const_of(g, loc, ot, 1.0, 1, fl);
  if (n < 0) {
    MlirValue ops[2] = {const_of(g, loc, ot, 1.0, 1, true), acc};
    acc = kiln_ir_build_elementwise(&g->b, loc, "arith.divf", ops, 2, t);
  }
  return acc;
}

static MlirValue gen_binary(Gen *g, const KilnExpr *e) {
  if (is_ptrish(e->type)) return gen_ptr_arith(g, e);
  if (e->binop == KILN_BIN_POW) return gen_pow(g, e);
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue l = gen_as(g, e->lhs, ot);
  MlirValue r = gen_as(g, e->rhs, ot);
  if (g->failed) return l;
  bool fl = is_float_kind(ot->scalar);
  bool u = is_unsigned_kind(ot->scalar);
  const char *pred = cmp_pred(e->binop, fl, u);
  if (pred)
    return fl ? kiln_ir_build_cmpf(&g->b, loc, pred, l, r)
              : kiln_ir_build_cmpi(&g->b, loc, pred, l, r);
  const char *name = arith_name(e->binop, fl, u);
  if (!name) {
    gen_error(g, e->span, "operator not defined on floating-point values");
    return (MlirValue){NULL};
  }
  MlirValue ops[2] = {l, r};
  return kiln_ir_build_elementwise(&g->b, loc, name, ops, 2, kiln_mlirgen_type(g->ctx, e->type));
}

static MlirValue gen_unary(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue v = gen_as(g, e->lhs, ot);
  if (g->failed) return v;
  MlirType t = kiln_mlirgen_type(g->ctx, ot);
  switch (e->unop) {
  case KILN_UN_NEG:
    if (is_float_kind(ot->scalar))
      return kiln_ir_build_elementwise(&g->b, loc, "arith.negf", &v, 1, t);
    {
      MlirValue ops[2] = {kiln_ir_build_const_int(&g->b, loc, t, 0), v};
      return kiln_ir_build_elementwise(&g->b, loc, "arith.subi", ops, 2, t);
    }
  case KILN_UN_NOT:
  case KILN_UN_BITNOT: {
    MlirValue ops[2] = {v, kiln_ir_build_const_int(&g->b, loc, t, -1)};
    return kiln_ir_build_elementwise(&g->b, loc, "arith.xori", ops, 2, t);
  }
  default: gen_error(g, e->span, "unknown unary operator"); return (MlirValue){NULL};
  }
}

static MlirValue gen_index(Gen *g, const KilnExpr *e) {
  MlirValue v = gen_expr(g, e->lhs);
  if (g->failed) return v;
  MlirLocation loc = loc_of(g, e->span);
  for (int i = 0; i < e->nindex; i++)
    if (e->index[i] == KILN_INDEX_NONE) v = kiln_ir_build_expand_dims(&g->b, loc, v, i);
  return v;
}

static MlirValue gen_cast(Gen *g, const KilnExpr *e) {
  MlirValue v = gen_expr(g, e->lhs);
  if (g->failed) return v;
  return convert(g, loc_of(g, e->span), v, e->lhs->type, e->type, e->span);
}

/* ---- builtins */

static MlirValue arg_as(Gen *g, const KilnExpr *e, int i, const KilnType *t) {
  return gen_as(g, e->args[i], t);
}

static MlirValue gen_math1(Gen *g, const KilnExpr *e, const char *fname, const char *iname) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue x = arg_as(g, e, 0, ot);
  if (g->failed) return x;
  const char *name = is_float_kind(ot->scalar) ? fname : iname;
  if (!name) {
    gen_error(g, e->span, "function not defined on integers");
    return x;
  }
  if (kiln_scalar_is_unsigned(ot->scalar) && strcmp(iname, "math.absi") == 0)
    return x; /* abs of an unsigned value is itself */
  /* Transcendentals on f16/bf16 are computed in f32 and rounded once: neither libm nor the
   * GPU has half-precision versions of most of them, and this is the accuracy users expect. */
  bool widen = (ot->scalar == KILN_SCALAR_F16 || ot->scalar == KILN_SCALAR_BF16) &&
               strcmp(fname, "math.absf") != 0;
  if (!widen)
    return kiln_ir_build_elementwise(&g->b, loc, name, &x, 1, kiln_mlirgen_type(g->ctx, ot));
  KilnType wide = with_scalar(ot, KILN_SCALAR_F32);
  MlirValue xw = cast_elem(g, loc, x, ot->scalar, KILN_SCALAR_F32, ot);
  MlirValue r =
      kiln_ir_build_elementwise(&g->b, loc, name, &xw, 1, kiln_mlirgen_type(g->ctx, &wide));
  return cast_elem(g, loc, r, KILN_SCALAR_F32, ot->scalar, ot);
}

static MlirValue gen_sigmoid(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue x = arg_as(g, e, 0, ot);
  if (g->failed) return x;
  bool half = ot->scalar == KILN_SCALAR_F16 || ot->scalar == KILN_SCALAR_BF16;
  KilnType ct = with_scalar(ot, half ? KILN_SCALAR_F32 : ot->scalar); /* as in gen_math1 */
  MlirType t = kiln_mlirgen_type(g->ctx, &ct);
  x = cast_elem(g, loc, x, ot->scalar, ct.scalar, ot);
  MlirValue nx = kiln_ir_build_elementwise(&g->b, loc, "arith.negf", &x, 1, t);
  MlirValue ex = kiln_ir_build_elementwise(&g->b, loc, "math.exp", &nx, 1, t);
  MlirValue one = kiln_ir_build_const_float(&g->b, loc, t, 1.0);
  MlirValue s[2] = {one, ex};
  MlirValue den = kiln_ir_build_elementwise(&g->b, loc, "arith.addf", s, 2, t);
  MlirValue q[2] = {one, den};
  MlirValue r = kiln_ir_build_elementwise(&g->b, loc, "arith.divf", q, 2, t);
  return cast_elem(g, loc, r, ct.scalar, ot->scalar, ot);
}

/* The element-wise maximum/minimum's op: NaN-propagating for floats, unsigned order for u8..u64
 * and i1 (0 or 1: maximum is "or", minimum "and"). */
static const char *minmax_op(KilnScalarKind k, bool is_max) {
  return is_float_kind(k)      ? (is_max ? "arith.maximumf" : "arith.minimumf")
         : is_unsigned_kind(k) ? (is_max ? "arith.maxui" : "arith.minui")
                               : (is_max ? "arith.maxsi" : "arith.minsi");
}

static MlirValue gen_minmax(Gen *g, const KilnExpr *e, bool is_max) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue ops[2] = {arg_as(g, e, 0, ot), arg_as(g, e, 1, ot)};
  if (g->failed) return ops[0];
  return kiln_ir_build_elementwise(&g->b, loc, minmax_op(ot->scalar, is_max), ops, 2,
                                   kiln_mlirgen_type(g->ctx, ot));
}

/* The mask of a memory builtin: written (as i1 of the pointer's shape) or all true. */
static MlirValue mem_mask(Gen *g, const KilnExpr *e, int idx, const KilnType *shape_of) {
  KilnType mt = with_scalar(shape_of, KILN_SCALAR_I1);
  if (idx < e->nargs) return gen_as(g, e->args[idx], &mt);
  return const_of(g, loc_of(g, e->span), &mt, 0.0, 1, false);
}

/* load/store/atomics: the pointer broadcast to operand_type's shape. */
static MlirValue mem_ptr(Gen *g, const KilnExpr *e, const KilnType *vt) {
  const KilnExpr *pe = e->args[0];
  MlirValue p = gen_expr(g, pe);
  if (g->failed) return p;
  KilnType pt = *vt;
  pt.elem_is_ptr = pt.kind == KILN_TYPE_TILE;
  if (pt.kind != KILN_TYPE_TILE) pt.kind = KILN_TYPE_PTR;
  pt.scalar = pe->type->scalar;
  return broadcast_to(g, loc_of(g, pe->span), p, pe->type, &pt, pe->span);
}

static MlirValue gen_load(Gen *g, const KilnExpr *e) {
  const KilnType *vt = e->operand_type ? e->operand_type : e->type;
  MlirValue p = mem_ptr(g, e, vt);
  MlirValue m = mem_mask(g, e, 1, vt);
  MlirValue other =
      e->nargs > 2 ? gen_as(g, e->args[2], vt) : const_of(g, loc_of(g, e->span), vt, 0.0, 0, false);
  if (g->failed) return p;
  MlirValue v = kiln_ir_build_load(&g->b, loc_of(g, e->span), p, m, other);
  return convert(g, loc_of(g, e->span), v, vt, e->type, e->span);
}

static MlirValue gen_store_like(Gen *g, const KilnExpr *e, int rmw_kind) {
  const KilnType *vt = e->operand_type;
  if (!vt) {
    gen_error(g, e->span, "memory operation without a value type");
    return (MlirValue){NULL};
  }
  MlirValue p = mem_ptr(g, e, vt);
  MlirValue v = gen_as(g, e->args[1], vt);
  MlirValue m = mem_mask(g, e, 2, vt);
  if (g->failed) return p;
  MlirLocation loc = loc_of(g, e->span);
  if (rmw_kind < 0) {
    kiln_ir_build_store(&g->b, loc, p, v, m);
    return (MlirValue){NULL};
  }
  /* the IR's integers are signless: an unsigned cell's max/min are kinds of their own */
  if (kiln_scalar_is_unsigned(vt->scalar) && (rmw_kind == KILN_RMW_MAX || rmw_kind == KILN_RMW_MIN))
    rmw_kind = rmw_kind == KILN_RMW_MAX ? KILN_RMW_UMAX : KILN_RMW_UMIN;
  return kiln_ir_build_atomic_rmw(&g->b, loc, (KilnRmwKind)rmw_kind, p, v, m);
}

/* atomic_cas(ptr, cmp, value, mask?): the pointer broadcast to operand_type's shape, cmp and
 * value converted to its element type, the mask as for the other atomics. */
static MlirValue gen_cas(Gen *g, const KilnExpr *e) {
  const KilnType *vt = e->operand_type;
  MlirValue p = mem_ptr(g, e, vt);
  MlirValue cmp = gen_as(g, e->args[1], vt);
  MlirValue v = gen_as(g, e->args[2], vt);
  MlirValue m = mem_mask(g, e, 3, vt);
  if (g->failed) return p;
  return kiln_ir_build_atomic_cas(&g->b, loc_of(g, e->span), p, cmp, v, m);
}

static MlirValue gen_dot(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  MlirValue a = gen_expr(g, e->args[0]);
  MlirValue bm = gen_expr(g, e->args[1]);
  MlirValue acc =
      e->nargs > 2 ? gen_as(g, e->args[2], e->type) : const_of(g, loc, e->type, 0.0, 0, false);
  if (g->failed) return a;
  MlirValue r = kiln_ir_build_dot(&g->b, loc, a, bm, acc);
  /* tf32 (sema: e->ival): a unit attribute the CPU and GPU lowerings read */
  if (e->nargs > 3 && e->ival)
    mlirOperationSetAttributeByName(mlirOpResultGetOwner(r),
                                    mlirStringRefCreateFromCString(KILN_IR_DOT_TF32_ATTR),
                                    mlirUnitAttrGet(g->ctx));
  return r;
}

/* x ^ the sign bit of t's integer width (t gives x's shape and element kind). */
static MlirValue flip_sign_bit(Gen *g, MlirLocation loc, MlirValue x, const KilnType *t) {
  MlirType mt = kiln_mlirgen_type(g->ctx, t);
  int bits = kiln_scalar_bits(t->scalar);
  MlirValue ops[2] = {x, kiln_ir_build_const_int(
                             &g->b, loc, mt, bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)))};
  return kiln_ir_build_elementwise(&g->b, loc, "arith.xori", ops, 2, mt);
}

/* A reduction of an i1/i8/i16 tile runs in i32, of a u8/u16 tile in u32 (operand_type, see
 * check_reduce): the input is widened first (extui for i1 and unsigned kinds, extsi otherwise)
 * and a max/min result narrowed back, so the kiln.reduce op and every lowering of it see only
 * 32 bits and wider. */
static MlirValue gen_reduce(Gen *g, const KilnExpr *e, KilnReduceKind kind) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *in = e->args[0]->type, *ot = e->operand_type ? e->operand_type : in;
  MlirValue x = gen_as(g, e->args[0], ot);
  if (g->failed) return x;
  MlirValue r;
  bool arg = kind == KILN_REDUCE_ARGMAX || kind == KILN_REDUCE_ARGMIN;
  /* kiln.reduce orders integers as signed; flipping the sign bit maps the unsigned order onto
   * the signed one (0 to the lowest, 2^n - 1 to the highest), and the same flip undoes it */
  bool flip = kind != KILN_REDUCE_SUM && kiln_scalar_is_unsigned(ot->scalar) &&
              kiln_scalar_bits(ot->scalar) >= 32;
  if (flip) x = flip_sign_bit(g, loc, x, ot);
  if (kiln_call_has_axis(e)) {
    r = kiln_ir_build_reduce(&g->b, loc, kind, (int)e->args[1]->ival, x);
  } else if (arg) {
    /* argmax/argmin of every element: x laid out as one row (row-major, a reshape), whose
     * index is then the row-major index, first on ties as along an axis */
    int64_t n = 1;
    for (int i = 0; i < in->rank; i++) n *= in->dims[i];
    if (in->rank > 1) {
      KilnType row = with_scalar(ot, ot->scalar);
      row.rank = 1;
      row.dims[0] = n;
      x = kiln_ir_build_reshape(&g->b, loc, x, kiln_mlirgen_type(g->ctx, &row));
    }
    r = kiln_ir_build_reduce(&g->b, loc, kind, 0, x);
  } else {
    /* every element (sum/max/min without an axis): the innermost axis first, as a row
     * reduction would, down to a scalar; a sum of sums, a max of maxes */
    r = x;
    for (int axis = in->rank - 1; axis >= 0; axis--)
      r = kiln_ir_build_reduce(&g->b, loc, kind, axis, r);
  }
  KilnScalarKind rs = arg ? KILN_SCALAR_I32 : ot->scalar;
  if (flip && !arg) {
    KilnType rt = *e->type;
    rt.scalar = ot->scalar;
    if (e->ival) { /* keep_dims: r has the reduced shape (scalar or rank - 1) */
      int axis = kiln_call_has_axis(e) ? (int)e->args[1]->ival : -1;
      if (axis < 0)
        rt.kind = KILN_TYPE_SCALAR;
      else {
        for (int i = axis; i + 1 < rt.rank; i++) rt.dims[i] = rt.dims[i + 1];
        if (--rt.rank == 0) rt.kind = KILN_TYPE_SCALAR;
      }
    }
    r = flip_sign_bit(g, loc, r, &rt);
  }
  if (!e->ival) return cast_elem(g, loc, r, rs, e->type->scalar, e->type);
  if (!kiln_call_has_axis(e)) { /* keep_dims of every axis: the scalar splatted to [1, ...] */
    KilnType sc = with_scalar(e->type, e->type->scalar);
    sc.kind = KILN_TYPE_SCALAR;
    r = cast_elem(g, loc, r, rs, e->type->scalar, &sc);
    return broadcast_to(g, loc, r, &sc, e->type, e->span);
  }
  /* keep_dims (sema: e->ival): the reduced shape, cast, then the axis put back as a 1 (a
   * scalar, from a rank-1 tile, splatted to [1]) */
  int axis = (int)e->args[1]->ival;
  KilnType red = *e->type;
  for (int i = axis; i + 1 < red.rank; i++) red.dims[i] = red.dims[i + 1];
  if (--red.rank == 0) red.kind = KILN_TYPE_SCALAR;
  r = cast_elem(g, loc, r, rs, e->type->scalar, &red);
  if (red.kind == KILN_TYPE_SCALAR) return broadcast_to(g, loc, r, &red, e->type, e->span);
  return kiln_ir_build_expand_dims(&g->b, loc, r, axis);
}

/* Networks along an axis of any length (sort, scan/reduce with a combine) run the steps of the
 * next power of two, N, through kiln.resize, which extends a tile along the axis (its last
 * element repeated) and cuts it back: sort extends the whole tile and keeps the extra lanes out
 * of every result that is used; scan/reduce extend only each step's partner exchange.  Only the
 * cpu target has such tiles (the GPU targets need power-of-two tiles); a power-of-two axis gets
 * no extra op. */
static int64_t next_pow2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

/* v's tile type with its axis `axis` of length len. */
static MlirType with_axis_len(MlirType tt, int axis, int64_t len) {
  int64_t shape[KILN_MAX_RANK];
  int rank = (int)mlirShapedTypeGetRank(tt);
  for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(tt, i);
  shape[axis] = len;
  return kiln_ir_type_tensor(kiln_ir_elem_type(tt), shape, rank);
}

/* v resized along axis to len (v itself when it has that length). */
static MlirValue resize_axis(Gen *g, MlirLocation loc, MlirValue v, int axis, int64_t len) {
  MlirType tt = mlirValueGetType(v);
  if (mlirShapedTypeGetDimSize(tt, axis) == len) return v;
  return kiln_ir_build_resize(&g->b, loc, v, with_axis_len(tt, axis, len));
}

/* The 1-D i1 mask m over the axis (of tt's length along it) spread to tt's shape. */
static MlirValue spread_axis_mask(Gen *g, MlirLocation loc, MlirValue m, MlirType tt, int axis) {
  MlirType i1 = mlirIntegerTypeGet(g->ctx, 1);
  int rank = (int)mlirShapedTypeGetRank(tt);
  int64_t shape[KILN_MAX_RANK];
  for (int i = 0; i < axis; i++) m = kiln_ir_build_expand_dims(&g->b, loc, m, 0);
  for (int i = axis + 1; i < rank; i++) m = kiln_ir_build_expand_dims(&g->b, loc, m, i);
  bool full = true;
  for (int i = 0; i < rank; i++) {
    shape[i] = mlirShapedTypeGetDimSize(tt, i);
    full &= i == axis || shape[i] == 1;
  }
  return full ? m : kiln_ir_build_broadcast(&g->b, loc, m, kiln_ir_type_tensor(i1, shape, rank));
}

/* The i1 tile of tt's shape that is true where the index along the axis, r, has
 * pred((r & and_mask) + add, than) ("eq", "slt", "sge"). */
static MlirValue axis_mask(Gen *g, MlirLocation loc, MlirType tt, int axis, int64_t and_mask,
                           int64_t add, const char *pred, int64_t than) {
  MlirType i32 = mlirIntegerTypeGet(g->ctx, 32);
  int64_t n = mlirShapedTypeGetDimSize(tt, axis);
  MlirType rt = kiln_ir_type_tensor(i32, &n, 1);
  MlirValue r = kiln_ir_build_range(&g->b, loc, 0, (int32_t)n);
  if (and_mask != -1) {
    MlirValue ops[2] = {r, kiln_ir_build_const_int(&g->b, loc, rt, and_mask)};
    r = kiln_ir_build_elementwise(&g->b, loc, "arith.andi", ops, 2, rt);
  }
  if (add != 0) {
    MlirValue ops[2] = {r, kiln_ir_build_const_int(&g->b, loc, rt, add)};
    r = kiln_ir_build_elementwise(&g->b, loc, "arith.addi", ops, 2, rt);
  }
  MlirValue m =
      kiln_ir_build_cmpi(&g->b, loc, pred, r, kiln_ir_build_const_int(&g->b, loc, rt, than));
  return spread_axis_mask(g, loc, m, tt, axis);
}

/* sort(x, axis, descending): a bitonic sorting network along the axis (any axis), built from
 * existing ops so that every target sorts the same way.  The network is the form whose
 * comparators all point the same way: merge phase k (2, 4, .., N) first compares element i of
 * each k-block with element k - 1 - i, then, for j = k/4 .. 1, i with i ^ j.  The tile is viewed
 * as [a, 2, j, post] (post: the elements after the axis, left out when 1; a: the rest, the lines'
 * pairs of j-runs one after the other, row-major), where the two entries of the second axis are
 * partners: flipping that axis gives every element its partner (the first step of a phase also
 * flips the j axis, which reverses the k-block).  The lower entry (index 0 of the second axis)
 * keeps the one that goes first of the pair (the smaller, or the larger for a descending sort):
 * it takes its partner when the partner goes before it, the upper one when it goes after, one
 * strict comparison seen from both sides, so a pair always swaps or stays whole and the result is
 * a permutation of x (ties, and NaN, which compares false, stay put).  A step costs a reshape, a
 * flip or two (on the GPU each a trip through shared memory), two compares and two selects; the
 * lower-entry mask is made once per j.
 *
 * An axis of a length n that is not a power of two (the cpu target) is extended to N, and a pair
 * with a lane past n (an i1 tile `pad` marks them) never swaps, whatever the values (NaN
 * included): the extra lanes stay where they are.  That is the network over x padded with
 * elements that go after every other (+inf ascending): in a pair of the network the upper lane
 * is the later one, so an extra lane is only ever paired with an earlier lane, which keeps the
 * one that goes first, its own.  The first n lanes are x sorted, cut back out. */
typedef struct SortNet {
  int64_t pre, n, post; /* elements before the axis, its (padded) length, after it */
  MlirType elem;
  bool fl, u, down, padded;
} SortNet;

static MlirValue sort_view(Gen *g, MlirLocation loc, const SortNet *s, MlirValue v, MlirType elem,
                           int64_t j) {
  int64_t view[4] = {s->pre * (s->n / (2 * j)), 2, j, s->post};
  MlirType vt = kiln_ir_type_tensor(elem, view, s->post > 1 ? 4 : 3);
  return mlirTypeEqual(mlirValueGetType(v), vt) ? v : kiln_ir_build_reshape(&g->b, loc, v, vt);
}

/* The view's i1 tile that is true at index 0 of its second axis. */
static MlirValue sort_lower(Gen *g, MlirLocation loc, const SortNet *s, int64_t j) {
  MlirType i1 = mlirIntegerTypeGet(g->ctx, 1);
  int64_t view[4] = {s->pre * (s->n / (2 * j)), 2, j, s->post};
  MlirType vt = kiln_ir_type_tensor(i1, view, s->post > 1 ? 4 : 3);
  return axis_mask(g, loc, vt, 1, -1, 0, "eq", 0);
}

/* One compare-and-swap step over the view v; pad (padded only): the view's i1 tile of the lanes
 * past the axis's length. */
static MlirValue sort_step(Gen *g, MlirLocation loc, const SortNet *s, MlirValue v, MlirValue pad,
                           MlirValue lower, bool reverse) {
  MlirValue p = kiln_ir_build_flip(&g->b, loc, v, 1);
  if (reverse) p = kiln_ir_build_flip(&g->b, loc, p, 2);
  MlirValue lt = s->fl ? kiln_ir_build_cmpf(&g->b, loc, "olt", p, v)
                       : kiln_ir_build_cmpi(&g->b, loc, s->u ? "ult" : "slt", p, v);
  MlirValue gt = s->fl ? kiln_ir_build_cmpf(&g->b, loc, "ogt", p, v)
                       : kiln_ir_build_cmpi(&g->b, loc, s->u ? "ugt" : "sgt", p, v);
  MlirValue take = kiln_ir_build_select(&g->b, loc, lower, s->down ? gt : lt, s->down ? lt : gt);
  if (s->padded) { /* a pair with a lane past the axis's end never swaps */
    MlirValue pp = kiln_ir_build_flip(&g->b, loc, pad, 1);
    if (reverse) pp = kiln_ir_build_flip(&g->b, loc, pp, 2);
    MlirValue either[2] = {pad, pp};
    MlirValue dead =
        kiln_ir_build_elementwise(&g->b, loc, "arith.ori", either, 2, mlirValueGetType(pad));
    take = kiln_ir_build_select(
        &g->b, loc, dead, kiln_ir_build_const_int(&g->b, loc, mlirValueGetType(pad), 0), take);
  }
  return kiln_ir_build_select(&g->b, loc, take, p, v);
}

static MlirValue gen_sort(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *t = e->args[0]->type;
  MlirValue x = gen_expr(g, e->args[0]);
  if (g->failed) return x;
  int axis = kiln_call_has_axis(e) ? (int)e->args[1]->ival : t->rank - 1;
  int64_t n = t->dims[axis];
  if (n == 1) return x;
  MlirType tt = mlirValueGetType(x);
  SortNet s = {.pre = 1,
               .n = next_pow2(n),
               .post = 1,
               .elem = kiln_ir_elem_type(tt),
               .fl = is_float_kind(t->scalar),
               .u = is_unsigned_kind(t->scalar),
               .down = e->ival != 0};
  for (int i = 0; i < axis; i++) s.pre *= t->dims[i];
  for (int i = axis + 1; i < t->rank; i++) s.post *= t->dims[i];
  s.padded = s.n != n;
  MlirValue v = resize_axis(g, loc, x, axis, s.n), pad = {NULL};
  MlirType pt = mlirValueGetType(v), i1 = mlirIntegerTypeGet(g->ctx, 1);
  if (s.padded) {
    int rank = (int)mlirShapedTypeGetRank(pt);
    int64_t shape[KILN_MAX_RANK];
    for (int i = 0; i < rank; i++) shape[i] = mlirShapedTypeGetDimSize(pt, i);
    pad = axis_mask(g, loc, kiln_ir_type_tensor(i1, shape, rank), axis, -1, 0, "sge", n);
  }
  MlirValue lower[64] = {{NULL}}; /* by log2(j) */
  for (int64_t k = 2; k <= s.n; k *= 2) {
    for (int64_t j = k / 2; j >= 1; j /= 2) {
      int lj = __builtin_ctzll((unsigned long long)j);
      v = sort_view(g, loc, &s, v, s.elem, j);
      if (s.padded) pad = sort_view(g, loc, &s, pad, i1, j);
      if (mlirValueIsNull(lower[lj])) lower[lj] = sort_lower(g, loc, &s, j);
      v = sort_step(g, loc, &s, v, pad, lower[lj], j == k / 2 && j > 1);
    }
  }
  v = kiln_ir_build_reshape(&g->b, loc, v, pt);
  return resize_axis(g, loc, v, axis, n);
}

/* scan / reduce (x, axis, combine) with a user's combine, built from existing ops as sort is, so
 * that every target runs the same network.  Along an axis of length n (a power of two), step
 * j = 1, 2, .., n/2 pairs each aligned j-block with its neighbour in the 2j-block, whose
 * elements are partners: a [A, 2, j, B] view (A = the lines times n / 2j, B = the elements
 * after the axis) flipped along its second axis.  Two tiles of x's shape are kept: v, the
 * inclusive scan within each element's j-block, and t, the combined total of that block (on
 * every element of it); both start as x.  A step makes, with p the partner's t:
 *   upper half:  v = combine(p, v)      (the lower block's total before it)
 *   every half:  t = combine(lower's t, upper's t)  (the 2j-block's total, in order)
 * so the combine only ever sees an earlier value on its left: associativity is all it needs,
 * not commutativity.  After the last step v is the scan and t the line's total on every
 * element; reduce takes t, one element per line (a max along the axis over equal values,
 * exact in every type).  Each step costs a reshape and a flip (on the GPU a trip through shared
 * memory), selects and the combine's inlined body once (reduce) or twice (scan) on whole tiles;
 * the combine also runs on elements whose result is discarded.
 *
 * An axis of a length n that is not a power of two (the cpu target) runs the steps of N, the
 * next power of two, on tiles of x's shape (the combine's body is typed for it): only the
 * partner exchange goes through N, the tile extended by kiln.resize (its last element repeated),
 * viewed, flipped and cut back.  A lane whose partner lies past n reads the line's last element
 * instead, which is in the same j-block when that block starts before n (t is one value over a
 * block), so every 2j-block whose upper half starts before n combines its two halves' totals
 * exactly, and one whose upper half starts at n or later keeps its lower half's total (a mask);
 * the scans only ever read a lower block, always within the line.  No identity is needed. */
static MlirValue combine_partner(Gen *g, MlirLocation loc, MlirValue t, int axis, int64_t j) {
  MlirType tt = mlirValueGetType(t), elem = kiln_ir_elem_type(tt);
  int rank = (int)mlirShapedTypeGetRank(tt);
  int64_t pre = 1, post = 1, n = mlirShapedTypeGetDimSize(tt, axis), np2 = next_pow2(n);
  for (int i = 0; i < axis; i++) pre *= mlirShapedTypeGetDimSize(tt, i);
  for (int i = axis + 1; i < rank; i++) post *= mlirShapedTypeGetDimSize(tt, i);
  int64_t view[4] = {pre * (np2 / (2 * j)), 2, j, post};
  MlirValue padded = resize_axis(g, loc, t, axis, np2);
  MlirValue v =
      kiln_ir_build_reshape(&g->b, loc, padded, kiln_ir_type_tensor(elem, view, post > 1 ? 4 : 3));
  v = kiln_ir_build_flip(&g->b, loc, v, 1);
  v = kiln_ir_build_reshape(&g->b, loc, v, mlirValueGetType(padded));
  return resize_axis(g, loc, v, axis, n);
}

/* One inlined combine(a.., b..) of k values each: sema checked the body (call->inlined) once for
 * tiles of x's types; its first 2k statements bind the parameters, which take a and b here
 * (converted, as the `let`s would, to a parameter's written type) instead of their never emitted
 * argument expressions.  The k results go to out. */
static void combine_apply(Gen *g, const KilnExpr *call, int k, const MlirValue *a,
                          const MlirValue *b, MlirValue *out) {
  const KilnBlock *blk = call->inlined;
  for (int i = 0; i < 2 * k; i++) {
    const KilnStmt *bind = blk->stmts[i];
    g->vals[bind->decl->id] = convert(g, loc_of(g, bind->span), i < k ? a[i] : b[i - k],
                                      bind->init->type, bind->decl->type, bind->span);
  }
  for (int i = 2 * k; i < blk->nstmts && !g->failed; i++) gen_stmt(g, blk->stmts[i]);
  for (int i = 0; i < k && !g->failed; i++)
    out[i] = gen_expr(g, k == 1 ? call->result : call->result->args[i]);
}

/* select(c, a, b) of k values. */
static void combine_select(Gen *g, MlirLocation loc, MlirValue c, int k, const MlirValue *a,
                           const MlirValue *b, MlirValue *out) {
  for (int i = 0; i < k; i++) out[i] = kiln_ir_build_select(&g->b, loc, c, a[i], b[i]);
}

#define MAX_COMBINE_VALUES 8

/* The network along `axis` over the k tiles v (each of x's shape), whose results go to out:
 * the scans, or the lines' totals for reduce (still of x's shape, every element of a line
 * holding its line's). */
static bool combine_network(Gen *g, const KilnExpr *e, int k, int axis, const MlirValue *v_in,
                            MlirValue *out) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnExpr *call = e->lhs;
  bool scan = e->builtin == KILN_BUILTIN_SCAN;
  MlirValue v[MAX_COMBINE_VALUES], t[MAX_COMBINE_VALUES], p[MAX_COMBINE_VALUES],
      c[MAX_COMBINE_VALUES], first[MAX_COMBINE_VALUES], second[MAX_COMBINE_VALUES];
  for (int i = 0; i < k; i++) v[i] = t[i] = v_in[i];
  MlirType tt = mlirValueGetType(v[0]);
  int64_t n = mlirShapedTypeGetDimSize(tt, axis), np2 = next_pow2(n);
  for (int64_t j = 1; j < np2 && !g->failed; j *= 2) {
    MlirValue lower = axis_mask(g, loc, tt, axis, j, 0, "eq", 0);
    for (int i = 0; i < k; i++) p[i] = combine_partner(g, loc, t[i], axis, j);
    if (scan) {
      combine_apply(g, call, k, p, v, c);
      if (g->failed) break;
      combine_select(g, loc, lower, k, v, c, v);
    }
    if (g->failed || (scan && 2 * j == np2)) break; /* the last total is not needed */
    combine_select(g, loc, lower, k, t, p, first);
    combine_select(g, loc, lower, k, p, t, second);
    combine_apply(g, call, k, first, second, t);
    if (np2 != n && !g->failed) { /* a 2j-block whose upper half is past n keeps the lower's */
      MlirValue upper_in = axis_mask(g, loc, tt, axis, -2 * j, j, "slt", n);
      combine_select(g, loc, upper_in, k, t, first, t);
    }
  }
  for (int i = 0; i < k; i++) out[i] = scan ? v[i] : t[i];
  return !g->failed;
}

/* The total t holds (in every element of the lines along `axis`, or of the whole tile when axis
 * is -1), as reduce's result of type rt: a max of equal values takes one exactly; narrow integers
 * and 16-bit floats go through i32 / f32, as reductions do.  keep_dims puts the reduced axes
 * back as 1s. */
static MlirValue combine_total(Gen *g, MlirLocation loc, MlirValue t, int axis, const KilnType *xt,
                               const KilnType *rt, bool keep, KilnSpan span) {
  KilnScalarKind k = xt->scalar, wide = k;
  if (kiln_scalar_is_int(k) && kiln_scalar_bits(k) < 32) wide = KILN_SCALAR_I32;
  if (k == KILN_SCALAR_F16 || k == KILN_SCALAR_BF16) wide = KILN_SCALAR_F32;
  t = cast_elem(g, loc, t, k, wide, xt);
  KilnType red = with_scalar(xt, k); /* the reduced shape: without the axis, or a scalar */
  if (axis < 0) {
    for (int a = xt->rank - 1; a >= 0; a--)
      t = kiln_ir_build_reduce(&g->b, loc, KILN_REDUCE_MAX, a, t);
    red.kind = KILN_TYPE_SCALAR;
    red.rank = 0;
  } else {
    t = kiln_ir_build_reduce(&g->b, loc, KILN_REDUCE_MAX, axis, t);
    for (int i = axis; i + 1 < red.rank; i++) red.dims[i] = red.dims[i + 1];
    if (--red.rank == 0) red.kind = KILN_TYPE_SCALAR;
  }
  t = cast_elem(g, loc, t, wide, k, &red);
  if (!keep) return t;
  if (red.kind == KILN_TYPE_SCALAR) return broadcast_to(g, loc, t, &red, rt, span);
  return kiln_ir_build_expand_dims(&g->b, loc, t, axis);
}

/* scan / reduce of k tiles: the k results in out (their types: e->type for one, else the
 * tuple's values, e->result).  scan's reverse runs the network on the tiles flipped along the
 * axis and flips the scans back, as Triton's reverse = True does: element i is
 * x[n-1] . x[n-2] . ... . x[i], the element nearer the end on the left of each combine.
 * reduce without an axis runs the network along the last axis, then each earlier one over the
 * lines' totals: every element in row-major order, as Triton's reduce of the flattened tile. */
static bool gen_combine_values(Gen *g, const KilnExpr *e, MlirValue *out) {
  KilnExpr *x = e->args[0];
  int k = x->kind == KILN_EXPR_LIST ? x->nargs : 1;
  KilnExpr **xs = x->kind == KILN_EXPR_LIST ? x->args : e->args;
  if (k > MAX_COMBINE_VALUES) {
    gen_error(g, e->span, "too many tiles");
    return false;
  }
  MlirLocation loc = loc_of(g, e->span);
  int axis = (int)e->ival;
  bool flag = e->nargs > 3 && e->args[3]->ival != 0; /* scan: reverse; reduce: keep_dims */
  MlirValue v[MAX_COMBINE_VALUES];
  for (int i = 0; i < k && !g->failed; i++) v[i] = gen_expr(g, xs[i]);
  if (g->failed) return false;
  if (e->builtin == KILN_BUILTIN_SCAN) {
    for (int i = 0; i < k && flag; i++) v[i] = kiln_ir_build_flip(&g->b, loc, v[i], axis);
    if (!combine_network(g, e, k, axis, v, out)) return false;
    for (int i = 0; i < k && flag; i++) out[i] = kiln_ir_build_flip(&g->b, loc, out[i], axis);
    return true;
  }
  if (axis >= 0) {
    if (!combine_network(g, e, k, axis, v, out)) return false;
  } else {
    for (int a = xs[0]->type->rank - 1; a >= 0; a--) {
      if (!combine_network(g, e, k, a, v, out)) return false;
      for (int i = 0; i < k; i++) v[i] = out[i];
    }
  }
  for (int i = 0; i < k && !g->failed; i++)
    out[i] = combine_total(g, loc, out[i], axis, xs[i]->type,
                           k == 1 ? e->type : e->result->args[i]->type, flag, e->span);
  return !g->failed;
}

/* trans(x, perm) of a 3-D tile [a, b, c] from existing ops.  The two rotations are a 2-D
 * transpose of a flat view: [a, b*c] transposed is [b*c, a], laid out as [b, c, a] (perm 1 2 0);
 * [a*b, c] transposed is [c, a*b], laid out as [c, a, b] (perm 2 0 1).  The odd permutations
 * start with the swap of the last two axes, which no reshape reaches: x is stretched to
 * [a, b, c, b] and each [.., j, .., i] entry kept where j == i, the rest set to the lowest value
 * (-inf, the integer minimum), and a max along axis 1 leaves [a, c, b] (exact: the max of one
 * value and lower ones; NaN stays NaN).  Narrow integers go through i32, as reductions do.  The
 * swap's [a, b, c, b] tile is b times x's size: on the GPU a large one exceeds a thread's share
 * and is refused there, with its location. */
static MlirValue trans_rotate(Gen *g, MlirLocation loc, MlirValue x, bool left) {
  MlirType t = mlirValueGetType(x), elem = kiln_ir_elem_type(t);
  int64_t a = mlirShapedTypeGetDimSize(t, 0), b = mlirShapedTypeGetDimSize(t, 1),
          c = mlirShapedTypeGetDimSize(t, 2);
  int64_t flat[2] = {left ? a : a * b, left ? b * c : c};
  int64_t out[3] = {left ? b : c, left ? c : a, left ? a : b};
  MlirValue v = kiln_ir_build_reshape(&g->b, loc, x, kiln_ir_type_tensor(elem, flat, 2));
  v = kiln_ir_build_trans(&g->b, loc, v);
  return kiln_ir_build_reshape(&g->b, loc, v, kiln_ir_type_tensor(elem, out, 3));
}

/* The max along axis of x where keep holds and of the lowest value of x's kind k elsewhere:
 * where keep holds at one position of the axis, that element exactly (the max of one value and
 * lower ones; NaN stays NaN), where it holds nowhere that lowest value (-inf; a signed integer's
 * minimum; 0 for unsigned ones and i1).  x is as the caller made it for kiln.reduce, which orders
 * integers as signed: integers narrower than 32 bits widened to i32 (sign- or zero-extended by
 * k), u32/u64 with their top bit flipped (flip_sign_bit, which maps 0 to the signed minimum). */
static MlirValue max_of_kept(Gen *g, MlirLocation loc, MlirValue keep, MlirValue x, int axis,
                             KilnScalarKind k) {
  MlirType t = mlirValueGetType(x);
  int bits = kiln_scalar_bits(k);
  int64_t low = bits == 64                           ? INT64_MIN
                : bits == 32 || !is_unsigned_kind(k) ? -((int64_t)1 << (bits - 1))
                                                     : 0;
  MlirValue lv = is_float_kind(k) ? kiln_ir_build_const_float(&g->b, loc, t, -INFINITY)
                                  : kiln_ir_build_const_int(&g->b, loc, t, low);
  return kiln_ir_build_reduce(&g->b, loc, KILN_REDUCE_MAX, axis,
                              kiln_ir_build_select(&g->b, loc, keep, x, lv));
}

static MlirValue trans_swap(Gen *g, MlirLocation loc, MlirValue x, KilnScalarKind k) {
  MlirType t = mlirValueGetType(x), elem = kiln_ir_elem_type(t);
  MlirType i32 = mlirIntegerTypeGet(g->ctx, 32), i1 = mlirIntegerTypeGet(g->ctx, 1);
  int64_t a = mlirShapedTypeGetDimSize(t, 0), b = mlirShapedTypeGetDimSize(t, 1),
          c = mlirShapedTypeGetDimSize(t, 2);
  int64_t d3[3] = {a, b, c}, d4[4] = {a, b, c, b}, m4[4] = {1, b, 1, b}, out[3] = {a, c, b};
  bool narrow = kiln_scalar_is_int(k) && kiln_scalar_bits(k) < 32;
  MlirType we = narrow ? i32 : elem;
  if (narrow) /* as max_of_kept's lowest value expects: zero-extended where unsigned */
    x = kiln_ir_build_cast(&g->b, loc, is_unsigned_kind(k) ? "arith.extui" : "arith.extsi", x,
                           kiln_ir_type_tensor(i32, d3, 3));
  MlirType t4 = kiln_ir_type_tensor(we, d4, 4);
  MlirValue xb = kiln_ir_build_expand_dims(&g->b, loc, x, 3);
  if (b > 1) xb = kiln_ir_build_broadcast(&g->b, loc, xb, t4);
  MlirValue r = kiln_ir_build_range(&g->b, loc, 0, (int32_t)b);
  MlirValue rj = kiln_ir_build_expand_dims(
      &g->b, loc,
      kiln_ir_build_expand_dims(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, r, 0), 2), 3);
  MlirValue ri = kiln_ir_build_expand_dims(
      &g->b, loc,
      kiln_ir_build_expand_dims(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, r, 0), 0), 0);
  MlirType mt = kiln_ir_type_tensor(i32, m4, 4);
  if (b > 1) {
    rj = kiln_ir_build_broadcast(&g->b, loc, rj, mt);
    ri = kiln_ir_build_broadcast(&g->b, loc, ri, mt);
  }
  MlirValue eq = kiln_ir_build_cmpi(&g->b, loc, "eq", rj, ri);
  if (a > 1 || c > 1) eq = kiln_ir_build_broadcast(&g->b, loc, eq, kiln_ir_type_tensor(i1, d4, 4));
  MlirValue v = max_of_kept(g, loc, eq, xb, 1, k);
  if (narrow)
    v = kiln_ir_build_cast(&g->b, loc, "arith.trunci", v, kiln_ir_type_tensor(elem, out, 3));
  return v;
}

static MlirValue gen_trans(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  MlirValue x = gen_expr(g, e->args[0]);
  if (g->failed) return x;
  int p0 = (int)(e->ival / 100), p1 = (int)(e->ival / 10 % 10); /* sema's digits; p2 follows */
  if (e->args[0]->type->rank == 2) return p0 == 0 ? x : kiln_ir_build_trans(&g->b, loc, x);
  KilnScalarKind k = e->args[0]->type->scalar;
  if (p0 == 0 && p1 == 1) return x;                              /* 0 1 2 */
  if (p0 == 1 && p1 == 2) return trans_rotate(g, loc, x, true);  /* 1 2 0 */
  if (p0 == 2 && p1 == 0) return trans_rotate(g, loc, x, false); /* 2 0 1 */
  MlirValue s = trans_swap(g, loc, x, k);                        /* 0 2 1 */
  if (p0 == 0) return s;
  return trans_rotate(g, loc, s, p0 == 2); /* 1 0 2: swap, then 2 0 1; 2 1 0: swap, then 1 2 0 */
}

/* ------------------------------------------------- join, split, interleave, cat */

/* range(0, n) as a tile of rank `rank` whose axis `axis` holds it (the other axes 1s),
 * stretched to dims. */
static MlirValue range_along(Gen *g, MlirLocation loc, int64_t n, int axis, int rank,
                             const int64_t *dims) {
  MlirValue r = kiln_ir_build_range(&g->b, loc, 0, (int32_t)n);
  for (int i = 0; i < axis; i++) r = kiln_ir_build_expand_dims(&g->b, loc, r, 0);
  for (int i = axis + 1; i < rank; i++) r = kiln_ir_build_expand_dims(&g->b, loc, r, i);
  bool stretch = false;
  for (int i = 0; i < rank; i++) stretch |= i != axis && dims[i] > 1;
  if (!stretch) return r;
  return kiln_ir_build_broadcast(&g->b, loc, r,
                                 kiln_ir_type_tensor(mlirIntegerTypeGet(g->ctx, 32), dims, rank));
}

/* a and b (of type t: a scalar, or a tile of rank r) side by side along a new axis `axis` (0..r)
 * of length 2: [.., 0, ..] is a, [.., 1, ..] is b.  One select between the two stretched along
 * the new axis, so every target lowers it as it lowers where(); join is the new last axis, cat
 * and interleave a reshape of it. */
static MlirValue stack_pair(Gen *g, MlirLocation loc, MlirValue a, MlirValue b, const KilnType *t,
                            int axis) {
  int rank = t->kind == KILN_TYPE_TILE ? t->rank : 0;
  int64_t dims[KILN_MAX_RANK];
  for (int i = 0, j = 0; i <= rank; i++) dims[i] = i == axis ? 2 : t->dims[j++];
  MlirType st =
      kiln_ir_type_tensor(kiln_ir_elem_type(kiln_mlirgen_type(g->ctx, t)), dims, rank + 1);
  if (rank == 0) {
    a = kiln_ir_build_splat(&g->b, loc, a, st);
    b = kiln_ir_build_splat(&g->b, loc, b, st);
  } else {
    a = kiln_ir_build_broadcast(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, a, axis), st);
    b = kiln_ir_build_broadcast(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, b, axis), st);
  }
  MlirValue r = range_along(g, loc, 2, axis, rank + 1, dims);
  MlirValue first = kiln_ir_build_cmpi(&g->b, loc, "eq", r,
                                       kiln_ir_build_const_int(&g->b, loc, mlirValueGetType(r), 0));
  return kiln_ir_build_select(&g->b, loc, first, a, b);
}

/* join(a, b), interleave(a, b), cat(a, b, axis): a and b in their common type and shape
 * (operand_type), stacked along a new axis (the last for join and interleave, before `axis`
 * for cat), then reshaped where the result merges it with its neighbour: row-major, element
 * t * n + i of the merged axis is the stacked pair's [t, i] (cat: a then b) and [i, t] of
 * [i, 2] (interleave: a0 b0 a1 b1 ...). */
static MlirValue gen_join(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type;
  MlirValue a = arg_as(g, e, 0, ot), b = arg_as(g, e, 1, ot);
  if (g->failed) return a;
  int rank = ot->kind == KILN_TYPE_TILE ? ot->rank : 0;
  int axis = e->builtin == KILN_BUILTIN_CAT ? (int)e->ival : rank;
  MlirValue v = stack_pair(g, loc, a, b, ot, axis);
  if (e->builtin == KILN_BUILTIN_JOIN) return v;
  return kiln_ir_build_reshape(&g->b, loc, v, kiln_mlirgen_type(g->ctx, e->type));
}

/* split(x): its last axis (of 2) taken apart: each half is the max along that axis of x kept at
 * one position and the lowest value at the other (max_of_kept: exact, any bits).  Integers
 * narrower than 32 bits go through i32, as reductions do. */
static bool gen_split_values(Gen *g, const KilnExpr *e, MlirValue *out) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *xt = e->args[0]->type, *ht = e->result->args[0]->type;
  MlirValue x = gen_expr(g, e->args[0]);
  if (g->failed) return false;
  KilnScalarKind k = xt->scalar;
  bool fl = is_float_kind(k), narrow = !fl && kiln_scalar_bits(k) < 32;
  KilnScalarKind wk = narrow ? KILN_SCALAR_I32 : k;
  if (narrow) x = cast_elem(g, loc, x, k, KILN_SCALAR_I32, xt);
  int axis = xt->rank - 1;
  MlirValue r = range_along(g, loc, 2, axis, xt->rank, xt->dims);
  for (int i = 0; i < 2; i++) {
    MlirValue keep = kiln_ir_build_cmpi(
        &g->b, loc, "eq", r, kiln_ir_build_const_int(&g->b, loc, mlirValueGetType(r), i));
    MlirValue v = max_of_kept(g, loc, keep, x, axis, k);
    out[i] = cast_elem(g, loc, v, wk, k, ht);
  }
  return !g->failed;
}

/* ------------------------------------------------- gather, histogram */

/* An integer tile v (of kind k) and a range r (i32) of one shape made comparable: the narrower
 * of the two widened to the other's width (v sign- or zero-extended by its kind), so an i64
 * index never aliases by truncation. */
static void comparable(Gen *g, MlirLocation loc, MlirValue *v, KilnScalarKind k,
                       const KilnType *shape_of, MlirValue *r) {
  if (kiln_scalar_bits(k) > 32)
    *r = kiln_ir_build_cast(
        &g->b, loc, "arith.extsi", *r,
        kiln_ir_type_tensor(mlirIntegerTypeGet(g->ctx, 64), shape_of->dims, shape_of->rank));
  else if (kiln_scalar_bits(k) < 32)
    *v = cast_elem(g, loc, *v, k, KILN_SCALAR_I32, shape_of);
}

/* gather(src, index, axis): every index compared with every position of src's axis, in a tile
 * one rank higher (index's shape with src's axis inserted after `axis`), and src kept where
 * they match: a max_of_kept along that axis, exact.  An index outside the axis matches nothing
 * and gives the lowest value.  Costs index's elements times the axis's length. */
static MlirValue gen_gather(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *st = e->args[0]->type, *it = e->args[1]->type;
  MlirValue src = gen_expr(g, e->args[0]), idx = gen_expr(g, e->args[1]);
  if (g->failed) return src;
  int axis = (int)e->ival, rank = it->rank;
  KilnType wide = *it; /* index's shape, src's axis after `axis` */
  wide.rank = rank + 1;
  for (int d = rank; d > axis + 1; d--) wide.dims[d] = it->dims[d - 1];
  wide.dims[axis + 1] = st->dims[axis];
  KilnScalarKind k = st->scalar, ik = it->scalar;
  bool fl = is_float_kind(k), narrow = !fl && kiln_scalar_bits(k) < 32;
  bool flip = !fl && !narrow && kiln_scalar_is_unsigned(k);
  KilnScalarKind wk = narrow ? KILN_SCALAR_I32 : k;
  if (narrow) src = cast_elem(g, loc, src, k, KILN_SCALAR_I32, st);
  if (flip) src = flip_sign_bit(g, loc, src, st);
  KilnType wi = with_scalar(&wide, ik), ws = with_scalar(&wide, wk);
  idx = kiln_ir_build_broadcast(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, idx, axis + 1),
                                kiln_mlirgen_type(g->ctx, &wi));
  src = kiln_ir_build_broadcast(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, src, axis),
                                kiln_mlirgen_type(g->ctx, &ws));
  MlirValue r = range_along(g, loc, st->dims[axis], axis + 1, wide.rank, wide.dims);
  comparable(g, loc, &idx, ik, &wide, &r);
  MlirValue keep = kiln_ir_build_cmpi(&g->b, loc, "eq", idx, r);
  MlirValue v = max_of_kept(g, loc, keep, src, axis + 1, k);
  if (flip) v = flip_sign_bit(g, loc, v, e->type);
  return cast_elem(g, loc, v, wk, k, e->type);
}

/* histogram(x, num_bins, mask?): x against every bin in an [n, num_bins] tile, the matches (and
 * the mask) as 0/1 summed down each bin's column.  Costs n times num_bins. */
static MlirValue gen_histogram(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *xt = e->args[0]->type;
  MlirValue x = gen_expr(g, e->args[0]);
  if (g->failed) return x;
  KilnType wide = with_scalar(xt, xt->scalar);
  wide.rank = 2;
  wide.dims[1] = e->ival;
  x = kiln_ir_build_broadcast(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, x, 1),
                              kiln_mlirgen_type(g->ctx, &wide));
  MlirValue r = range_along(g, loc, e->ival, 1, 2, wide.dims);
  comparable(g, loc, &x, xt->scalar, &wide, &r);
  MlirValue hit = kiln_ir_build_cmpi(&g->b, loc, "eq", x, r);
  if (e->nargs > 2) {
    KilnType mt = with_scalar(xt, KILN_SCALAR_I1);
    MlirValue m = gen_as(g, e->args[2], &mt);
    if (g->failed) return m;
    KilnType mw = with_scalar(&wide, KILN_SCALAR_I1);
    m = kiln_ir_build_broadcast(&g->b, loc, kiln_ir_build_expand_dims(&g->b, loc, m, 1),
                                kiln_mlirgen_type(g->ctx, &mw));
    MlirValue both[2] = {hit, m};
    hit = kiln_ir_build_elementwise(&g->b, loc, "arith.andi", both, 2, mlirValueGetType(hit));
  }
  KilnType counts = with_scalar(&wide, KILN_SCALAR_I32);
  MlirValue ones =
      kiln_ir_build_cast(&g->b, loc, "arith.extui", hit, kiln_mlirgen_type(g->ctx, &counts));
  return kiln_ir_build_reduce(&g->b, loc, KILN_REDUCE_SUM, 0, ones);
}

/* clamp(x, lo, hi) = minimum(maximum(x, lo), hi) in the common type (gen_minmax's ops). */
static MlirValue gen_clamp(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type;
  MlirType t = kiln_mlirgen_type(g->ctx, ot);
  MlirValue x = arg_as(g, e, 0, ot), lo = arg_as(g, e, 1, ot), hi = arg_as(g, e, 2, ot);
  if (g->failed) return x;
  MlirValue up[2] = {x, lo};
  MlirValue down[2] = {kiln_ir_build_elementwise(&g->b, loc, minmax_op(ot->scalar, true), up, 2, t),
                       hi};
  return kiln_ir_build_elementwise(&g->b, loc, minmax_op(ot->scalar, false), down, 2, t);
}

/* umulhi(a, b): the operands widened to 64 bits (sign- or zero-extended by their type), one
 * 64-bit product, its high word (the GPU targets' mul.hi, the cpu's widening multiply). */
static MlirValue gen_umulhi(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type;
  KilnScalarKind wk = kiln_scalar_is_unsigned(ot->scalar) ? KILN_SCALAR_U64 : KILN_SCALAR_I64;
  KilnType wt = with_scalar(ot, wk);
  MlirType w = kiln_mlirgen_type(g->ctx, &wt);
  MlirValue a = arg_as(g, e, 0, ot), b = arg_as(g, e, 1, ot);
  if (g->failed) return a;
  MlirValue p[2] = {cast_elem(g, loc, a, ot->scalar, wk, ot),
                    cast_elem(g, loc, b, ot->scalar, wk, ot)};
  MlirValue sh[2] = {kiln_ir_build_elementwise(&g->b, loc, "arith.muli", p, 2, w),
                     kiln_ir_build_const_int(&g->b, loc, w, 32)};
  MlirValue hi = kiln_ir_build_elementwise(&g->b, loc, "arith.shrui", sh, 2, w);
  return kiln_ir_build_cast(&g->b, loc, "arith.trunci", hi, kiln_mlirgen_type(g->ctx, ot));
}

/* swizzle2d(i, j, size_i, size_j, size_g): the grouped program order of gemm.kiln's GROUP_M as
 * a builtin.  With n = i * size_j + j (the row-major index) and per_group = size_g * size_j:
 * first = (n / per_group) * size_g, rows = min(size_i - first, size_g) (the last group has the
 * rows that are left), i2 = first + (n % per_group) % rows, j2 = (n % per_group) / rows. */
static bool gen_swizzle2d_values(Gen *g, const KilnExpr *e, MlirValue *out) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type;
  MlirType t = kiln_mlirgen_type(g->ctx, ot);
  MlirValue v[5];
  for (int i = 0; i < 5 && !g->failed; i++) v[i] = arg_as(g, e, i, ot);
  if (g->failed) return false;
  bool u = kiln_scalar_is_unsigned(ot->scalar);
  const char *div = u ? "arith.divui" : "arith.divsi", *rem = u ? "arith.remui" : "arith.remsi";
#define SWZ_OP(name, x, y) kiln_ir_build_elementwise(&g->b, loc, name, (MlirValue[2]){x, y}, 2, t)
  MlirValue n = SWZ_OP("arith.addi", SWZ_OP("arith.muli", v[0], v[3]), v[1]);
  MlirValue per_group = SWZ_OP("arith.muli", v[4], v[3]);
  MlirValue first = SWZ_OP("arith.muli", SWZ_OP(div, n, per_group), v[4]);
  MlirValue rows = SWZ_OP(minmax_op(ot->scalar, false), SWZ_OP("arith.subi", v[2], first), v[4]);
  MlirValue in_group = SWZ_OP(rem, n, per_group);
  out[0] = SWZ_OP("arith.addi", first, SWZ_OP(rem, in_group, rows));
  out[1] = SWZ_OP(div, in_group, rows);
#undef SWZ_OP
  return true;
}

/* The builtins of several values (scan/reduce of a list, split, swizzle2d): out gets them. */
static bool gen_builtin_values(Gen *g, const KilnExpr *e, MlirValue *out) {
  if (e->builtin == KILN_BUILTIN_SPLIT) return gen_split_values(g, e, out);
  if (e->builtin == KILN_BUILTIN_SWIZZLE2D) return gen_swizzle2d_values(g, e, out);
  return gen_combine_values(g, e, out);
}

static MlirValue gen_first_value(Gen *g, const KilnExpr *e) {
  MlirValue out[MAX_COMBINE_VALUES] = {{NULL}};
  gen_builtin_values(g, e, out);
  return out[0]; /* a call as a statement, whose values are dropped */
}

static MlirValue gen_where(Gen *g, const KilnExpr *e) {
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  KilnType ct = with_scalar(ot, KILN_SCALAR_I1);
  MlirValue c = gen_as(g, e->args[0], &ct);
  MlirValue a = gen_as(g, e->args[1], ot);
  MlirValue bv = gen_as(g, e->args[2], ot);
  if (g->failed) return c;
  return kiln_ir_build_select(&g->b, loc_of(g, e->span), c, a, bv);
}

static MlirValue gen_full(Gen *g, const KilnExpr *e, bool zeros) {
  MlirLocation loc = loc_of(g, e->span);
  if (zeros) return const_of(g, loc, e->type, 0.0, 0, false);
  const KilnExpr *v = e->args[1];
  KilnType st = with_scalar(e->type, e->type->scalar);
  st.kind = KILN_TYPE_SCALAR;
  if (v->kind == KILN_EXPR_INT || v->kind == KILN_EXPR_BOOL)
    return const_of(g, loc, e->type, 0.0, v->ival, false);
  if (v->kind == KILN_EXPR_FLOAT) return const_of(g, loc, e->type, v->fval, 0, true);
  MlirValue s = gen_as(g, v, &st);
  if (g->failed) return s;
  return kiln_ir_build_splat(&g->b, loc, s, kiln_mlirgen_type(g->ctx, e->type));
}

/* fma(a, b, c) = a * b + c: one math.fma for floats (rounded once: fma.rn on the GPU, the
 * fused instruction or libm's fmaf on the CPU), in f32 for f16/bf16 as the other math builtins;
 * for integers a multiply and an add, which wrap. */
static MlirValue gen_fma(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue x[3] = {arg_as(g, e, 0, ot), arg_as(g, e, 1, ot), arg_as(g, e, 2, ot)};
  if (g->failed) return x[0];
  MlirType t = kiln_mlirgen_type(g->ctx, ot);
  if (!is_float_kind(ot->scalar)) {
    MlirValue m = kiln_ir_build_elementwise(&g->b, loc, "arith.muli", x, 2, t);
    MlirValue s[2] = {m, x[2]};
    return kiln_ir_build_elementwise(&g->b, loc, "arith.addi", s, 2, t);
  }
  KilnScalarKind ck = ot->scalar == KILN_SCALAR_F64 ? KILN_SCALAR_F64 : KILN_SCALAR_F32;
  KilnType ct = with_scalar(ot, ck);
  for (int i = 0; i < 3; i++) x[i] = cast_elem(g, loc, x[i], ot->scalar, ck, ot);
  MlirValue r =
      kiln_ir_build_elementwise(&g->b, loc, "math.fma", x, 3, kiln_mlirgen_type(g->ctx, &ct));
  return cast_elem(g, loc, r, ck, ot->scalar, ot);
}

/* pow(x, y) as one math.powf in f32 (f16/bf16 widened and the result rounded once) or f64, with
 * C's special cases (pow(x, 0) = 1 for every x, x < 0 with an integer y signed by its parity, x < 0
 * with any other finite y NaN): the cpu target calls libm's pow/powf, the GPU targets their own
 * (lower_math_f64.c: double-double y log2 x in f64, f32 through f64). */
static MlirValue gen_powf(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirValue x[2] = {arg_as(g, e, 0, ot), arg_as(g, e, 1, ot)};
  if (g->failed) return x[0];
  KilnScalarKind ck = ot->scalar == KILN_SCALAR_F64 ? KILN_SCALAR_F64 : KILN_SCALAR_F32;
  KilnType ct = with_scalar(ot, ck);
  for (int i = 0; i < 2; i++) x[i] = cast_elem(g, loc, x[i], ot->scalar, ck, ot);
  MlirValue r =
      kiln_ir_build_elementwise(&g->b, loc, "math.powf", x, 2, kiln_mlirgen_type(g->ctx, &ct));
  return cast_elem(g, loc, r, ck, ot->scalar, ot);
}

/* zeros_like(x) / full_like(x, v): x is generated for what it may do (a load or an atomic
 * inside it), then a constant or a splat of v in x's type. */
static MlirValue gen_like(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  MlirValue x = gen_expr(g, e->args[0]);
  if (g->failed) return x;
  if (e->builtin == KILN_BUILTIN_ZEROS_LIKE) return const_of(g, loc, e->type, 0.0, 0, false);
  const KilnExpr *v = e->args[1];
  if (v->kind == KILN_EXPR_INT || v->kind == KILN_EXPR_BOOL)
    return const_of(g, loc, e->type, 0.0, v->ival, false);
  if (v->kind == KILN_EXPR_FLOAT) return const_of(g, loc, e->type, v->fval, 0, true);
  MlirValue s = gen_as(g, v, e->operand_type);
  if (g->failed || !is_tile(e->type)) return s;
  return kiln_ir_build_splat(&g->b, loc, s, kiln_mlirgen_type(g->ctx, e->type));
}

/* cdiv(a, b) = (a + b - 1) / b, for the non-negative sizes it is meant for. */
static MlirValue gen_cdiv(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  const KilnType *ot = e->operand_type ? e->operand_type : e->type;
  MlirType t = kiln_mlirgen_type(g->ctx, ot);
  MlirValue a = arg_as(g, e, 0, ot), bv = arg_as(g, e, 1, ot);
  if (g->failed) return a;
  MlirValue s1[2] = {a, bv};
  MlirValue sum = kiln_ir_build_elementwise(&g->b, loc, "arith.addi", s1, 2, t);
  MlirValue s2[2] = {sum, kiln_ir_build_const_int(&g->b, loc, t, 1)};
  MlirValue num = kiln_ir_build_elementwise(&g->b, loc, "arith.subi", s2, 2, t);
  MlirValue s3[2] = {num, bv};
  return kiln_ir_build_elementwise(
      &g->b, loc, kiln_scalar_is_unsigned(ot->scalar) ? "arith.divui" : "arith.divsi", s3, 2, t);
}

/* multiple_of / contiguous / max_contiguous: the value itself, with the promise recorded for the
 * GPU's axis analysis as an i32 attribute on the op that defines it, or on the kernel argument
 * (func arg attribute) when it is a parameter. A promise about a loop-carried value has nowhere
 * to live and is dropped: hints never change results. */
static MlirValue gen_hint(Gen *g, const KilnExpr *e, const char *attr) {
  MlirValue v = gen_as(g, e->args[0], e->type);
  if (g->failed) return v;
  MlirAttribute a = mlirIntegerAttrGet(mlirIntegerTypeGet(g->ctx, 32), e->args[1]->ival);
  MlirStringRef name = mlirStringRefCreateFromCString(attr);
  if (mlirValueIsAOpResult(v)) {
    mlirOperationSetAttributeByName(mlirOpResultGetOwner(v), name, a);
  } else if (mlirValueIsABlockArgument(v)) {
    MlirOperation parent = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    if (!mlirOperationIsNull(parent) &&
        mlirStringRefEqual(mlirIdentifierStr(mlirOperationGetName(parent)),
                           mlirStringRefCreateFromCString("func.func")))
      mlirFuncSetArgAttr(parent, mlirBlockArgumentGetArgNumber(v), name, a);
  }
  return v;
}

/* randint(seed, offs): kiln.rand with an i32 result (the Philox word).  randn(seed, offs): the
 * Box-Muller transform of two uniforms from existing ops, u1 = 1 - rand(seed, offs) in (0, 1]
 * (exact in f32, never 0, so the log is finite) and u2 = rand(seed ^ 0x6A09E667, offs) (a second
 * key: an independent stream), n = sqrt(-2 log u1) cos(2 pi u2). */
static MlirValue gen_rand_more(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  KilnType st = {.kind = KILN_TYPE_SCALAR, .scalar = KILN_SCALAR_I32};
  MlirValue seed = gen_as(g, e->args[0], &st);
  KilnType ot = with_scalar(e->args[1]->type, KILN_SCALAR_I32);
  MlirValue offs = gen_as(g, e->args[1], &ot);
  if (g->failed) return seed;
  if (e->builtin == KILN_BUILTIN_RANDINT) return kiln_ir_build_randint(&g->b, loc, seed, offs);
  MlirType t = kiln_mlirgen_type(g->ctx, e->type), i32 = mlirIntegerTypeGet(g->ctx, 32);
  MlirValue k[2] = {seed, kiln_ir_build_const_int(&g->b, loc, i32, 0x6A09E667)};
  MlirValue seed2 = kiln_ir_build_elementwise(&g->b, loc, "arith.xori", k, 2, i32);
  MlirValue one_minus[2] = {const_of(g, loc, e->type, 1.0, 0, true),
                            kiln_ir_build_rand(&g->b, loc, seed, offs)};
  MlirValue u1 = kiln_ir_build_elementwise(&g->b, loc, "arith.subf", one_minus, 2, t);
  MlirValue u2 = kiln_ir_build_rand(&g->b, loc, seed2, offs);
  MlirValue lg = kiln_ir_build_elementwise(&g->b, loc, "math.log", &u1, 1, t);
  MlirValue m2[2] = {lg, const_of(g, loc, e->type, -2.0, 0, true)};
  MlirValue r2 = kiln_ir_build_elementwise(&g->b, loc, "arith.mulf", m2, 2, t);
  MlirValue r = kiln_ir_build_elementwise(&g->b, loc, "math.sqrt", &r2, 1, t);
  MlirValue th[2] = {u2, const_of(g, loc, e->type, 6.283185307179586, 0, true)};
  MlirValue theta = kiln_ir_build_elementwise(&g->b, loc, "arith.mulf", th, 2, t);
  MlirValue c = kiln_ir_build_elementwise(&g->b, loc, "math.cos", &theta, 1, t);
  MlirValue rc[2] = {r, c};
  return kiln_ir_build_elementwise(&g->b, loc, "arith.mulf", rc, 2, t);
}

static void gen_block(Gen *g, const KilnBlock *blk);

/* A call of a function: sema bound its parameters as `let`s and checked a copy of its body for
 * this call (e->inlined); emitting that copy here inlines the function. Its result, if any, is
 * the call's value. */
static MlirValue gen_inlined(Gen *g, const KilnExpr *e) {
  gen_block(g, e->inlined);
  if (g->failed || !e->result) return (MlirValue){NULL};
  if (e->result->tuple) { /* several values, none taken (a call as a statement) */
    for (int i = 0; i < e->result->nargs && !g->failed; i++) (void)gen_expr(g, e->result->args[i]);
    return (MlirValue){NULL};
  }
  return gen_expr(g, e->result);
}

static MlirValue gen_call(Gen *g, const KilnExpr *e) {
  MlirLocation loc = loc_of(g, e->span);
  if (e->inlined) return gen_inlined(g, e);
  switch (e->builtin) {
  case KILN_BUILTIN_PROGRAM_ID: return kiln_ir_build_program_id(&g->b, loc, (int)e->args[0]->ival);
  case KILN_BUILTIN_NUM_PROGRAMS:
    return kiln_ir_build_num_programs(&g->b, loc, (int)e->args[0]->ival);
  case KILN_BUILTIN_ARANGE:
    return kiln_ir_build_range(&g->b, loc, (int32_t)e->args[0]->ival, (int32_t)e->args[1]->ival);
  case KILN_BUILTIN_ZEROS: return gen_full(g, e, true);
  case KILN_BUILTIN_FULL: return gen_full(g, e, false);
  case KILN_BUILTIN_LOAD: return gen_load(g, e);
  case KILN_BUILTIN_STORE: return gen_store_like(g, e, -1);
  case KILN_BUILTIN_ATOMIC_ADD: return gen_store_like(g, e, KILN_RMW_ADD);
  case KILN_BUILTIN_ATOMIC_MAX: return gen_store_like(g, e, KILN_RMW_MAX);
  case KILN_BUILTIN_ATOMIC_MIN: return gen_store_like(g, e, KILN_RMW_MIN);
  case KILN_BUILTIN_ATOMIC_XCHG: return gen_store_like(g, e, KILN_RMW_XCHG);
  case KILN_BUILTIN_ATOMIC_CAS: return gen_cas(g, e);
  case KILN_BUILTIN_DOT: return gen_dot(g, e);
  case KILN_BUILTIN_SUM: return gen_reduce(g, e, KILN_REDUCE_SUM);
  case KILN_BUILTIN_MAX:
    if (!is_tile(e->args[0]->type)) return gen_minmax(g, e, true); /* max(a, b) of scalars */
    return gen_reduce(g, e, KILN_REDUCE_MAX);
  case KILN_BUILTIN_MIN:
    if (!is_tile(e->args[0]->type)) return gen_minmax(g, e, false);
    return gen_reduce(g, e, KILN_REDUCE_MIN);
  case KILN_BUILTIN_FMA: return gen_fma(g, e);
  case KILN_BUILTIN_POW: return gen_powf(g, e);
  case KILN_BUILTIN_ZEROS_LIKE:
  case KILN_BUILTIN_FULL_LIKE: return gen_like(g, e);
  case KILN_BUILTIN_EXPAND_DIMS: {
    MlirValue x = gen_expr(g, e->args[0]);
    return g->failed ? x : kiln_ir_build_expand_dims(&g->b, loc, x, (int)e->ival);
  }
  case KILN_BUILTIN_BROADCAST_TO: {
    MlirValue x = gen_expr(g, e->args[0]);
    return g->failed ? x : broadcast_to(g, loc, x, e->args[0]->type, e->type, e->span);
  }
  case KILN_BUILTIN_STATIC_ASSERT: return (MlirValue){NULL}; /* checked by sema */
  case KILN_BUILTIN_DEVICE_PRINT: {
    MlirValue x = gen_expr(g, e->args[1]);
    if (!g->failed) kiln_ir_build_print(&g->b, loc, e->args[0]->name, x);
    return (MlirValue){NULL};
  }
  case KILN_BUILTIN_DEVICE_ASSERT: {
    /* the text every target reports: "FILE:LINE:COL: msg" (the call's place) */
    MlirValue c = gen_expr(g, e->args[0]);
    const char *msg = e->nargs > 1 ? e->args[1]->name : "device_assert";
    size_t cap = strlen(g->path) + strlen(msg) + 48;
    char *text = malloc(cap);
    if (!text) {
      gen_error(g, e->span, "out of memory");
      return (MlirValue){NULL};
    }
    snprintf(text, cap, "%s:%d:%d: %s", g->path, e->span.line, e->span.col, msg);
    if (!g->failed) kiln_ir_build_assert(&g->b, loc, text, c);
    free(text);
    return (MlirValue){NULL};
  }
  case KILN_BUILTIN_RESHAPE: {
    MlirValue x = gen_expr(g, e->args[0]);
    return g->failed ? x : kiln_ir_build_reshape(&g->b, loc, x, kiln_mlirgen_type(g->ctx, e->type));
  }
  case KILN_BUILTIN_FLIP: {
    MlirValue x = gen_expr(g, e->args[0]);
    return g->failed ? x : kiln_ir_build_flip(&g->b, loc, x, (int)e->ival);
  }
  case KILN_BUILTIN_SORT: return gen_sort(g, e);
  case KILN_BUILTIN_SCAN:
  case KILN_BUILTIN_REDUCE: return gen_first_value(g, e);
  case KILN_BUILTIN_CUMSUM:
  case KILN_BUILTIN_CUMPROD: {
    /* narrow integers widened to i32 first (operand_type), as for sum; reverse: suffix sums,
     * added from the end (the scan's own attribute: no flip around it) */
    MlirValue x = gen_as(g, e->args[0], e->operand_type);
    if (g->failed) return x;
    bool reverse = e->nargs > 2 && e->args[2]->ival != 0;
    return kiln_ir_build_scan(&g->b, loc, e->builtin == KILN_BUILTIN_CUMSUM ? "sum" : "prod",
                              (int)e->ival, reverse, x);
  }
  case KILN_BUILTIN_ARGMAX: return gen_reduce(g, e, KILN_REDUCE_ARGMAX);
  case KILN_BUILTIN_ARGMIN: return gen_reduce(g, e, KILN_REDUCE_ARGMIN);
  case KILN_BUILTIN_WHERE: return gen_where(g, e);
  case KILN_BUILTIN_MAXIMUM: return gen_minmax(g, e, true);
  case KILN_BUILTIN_MINIMUM: return gen_minmax(g, e, false);
  case KILN_BUILTIN_EXP: return gen_math1(g, e, "math.exp", NULL);
  case KILN_BUILTIN_EXP2: return gen_math1(g, e, "math.exp2", NULL);
  case KILN_BUILTIN_LOG: return gen_math1(g, e, "math.log", NULL);
  case KILN_BUILTIN_LOG2: return gen_math1(g, e, "math.log2", NULL);
  case KILN_BUILTIN_SQRT: return gen_math1(g, e, "math.sqrt", NULL);
  case KILN_BUILTIN_RSQRT: return gen_math1(g, e, "math.rsqrt", NULL);
  case KILN_BUILTIN_TANH: return gen_math1(g, e, "math.tanh", NULL);
  case KILN_BUILTIN_ERF: return gen_math1(g, e, "math.erf", NULL);
  case KILN_BUILTIN_SIN: return gen_math1(g, e, "math.sin", NULL);
  case KILN_BUILTIN_COS: return gen_math1(g, e, "math.cos", NULL);
  case KILN_BUILTIN_FLOOR: return gen_math1(g, e, "math.floor", NULL);
  case KILN_BUILTIN_CEIL: return gen_math1(g, e, "math.ceil", NULL);
  case KILN_BUILTIN_ABS: return gen_math1(g, e, "math.absf", "math.absi");
  case KILN_BUILTIN_SIGMOID: return gen_sigmoid(g, e);
  case KILN_BUILTIN_TRANS: return gen_trans(g, e);
  case KILN_BUILTIN_CDIV: return gen_cdiv(g, e);
  case KILN_BUILTIN_JOIN:
  case KILN_BUILTIN_INTERLEAVE:
  case KILN_BUILTIN_CAT: return gen_join(g, e);
  case KILN_BUILTIN_SPLIT:
  case KILN_BUILTIN_SWIZZLE2D: return gen_first_value(g, e);
  case KILN_BUILTIN_CLAMP: return gen_clamp(g, e);
  case KILN_BUILTIN_GATHER: return gen_gather(g, e);
  case KILN_BUILTIN_HISTOGRAM: return gen_histogram(g, e);
  case KILN_BUILTIN_UMULHI: return gen_umulhi(g, e);
  case KILN_BUILTIN_RAND: {
    KilnType st = {.kind = KILN_TYPE_SCALAR, .scalar = KILN_SCALAR_I32};
    MlirValue seed = gen_as(g, e->args[0], &st);
    KilnType ot = with_scalar(e->args[1]->type, KILN_SCALAR_I32);
    MlirValue offs = gen_as(g, e->args[1], &ot);
    return g->failed ? seed : kiln_ir_build_rand(&g->b, loc, seed, offs);
  }
  case KILN_BUILTIN_RANDINT:
  case KILN_BUILTIN_RANDN: return gen_rand_more(g, e);
  case KILN_BUILTIN_MULTIPLE_OF: return gen_hint(g, e, "kiln.multiple_of");
  case KILN_BUILTIN_CONTIGUOUS: return gen_hint(g, e, "kiln.contiguous");
  case KILN_BUILTIN_MAX_CONTIGUOUS: return gen_hint(g, e, "kiln.max_contiguous");
  default: gen_error(g, e->span, "builtin has no lowering"); return (MlirValue){NULL};
  }
}

static MlirValue gen_expr(Gen *g, const KilnExpr *e) {
  if (g->failed) return (MlirValue){NULL};
  if (!e->type) {
    gen_error(g, e->span, "expression was not type-checked");
    return (MlirValue){NULL};
  }
  switch (e->kind) {
  case KILN_EXPR_INT:
  case KILN_EXPR_BOOL: return const_of(g, loc_of(g, e->span), e->type, 0.0, e->ival, false);
  case KILN_EXPR_FLOAT: return const_of(g, loc_of(g, e->span), e->type, e->fval, 0, true);
  case KILN_EXPR_NAME: return gen_name(g, e);
  case KILN_EXPR_UNARY: return gen_unary(g, e);
  case KILN_EXPR_BINARY: return gen_binary(g, e);
  case KILN_EXPR_CALL: return gen_call(g, e);
  case KILN_EXPR_INDEX: return gen_index(g, e);
  case KILN_EXPR_CAST: return gen_cast(g, e);
  default:
    gen_error(g, e->span, "expression kind cannot be used as a value");
    return (MlirValue){NULL};
  }
}

/* ------------------------------------------------------------------ statements */

static void gen_block(Gen *g, const KilnBlock *blk);

static MlirValue current(Gen *g, const KilnDecl *d) { return g->vals[d->id]; }

static MlirValue i32_op(Gen *g, MlirLocation loc, const char *name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return kiln_ir_build_elementwise(&g->b, loc, name, ops, 2, mlirIntegerTypeGet(g->ctx, 32));
}

/* range(lo, hi, step) with a step that is negative or known only at run time.  scf.for only
 * counts up with a positive step, so the loop runs k = 0 .. trips and the body sees
 * i = lo + k * step, with trips the number of i in [lo, hi) for step > 0 (in (hi, lo] for
 * step < 0): (span - 1) / |step| + 1 when span = |hi - lo| on the step's side is > 0, else 0;
 * and 0 for step == 0 (dsl/reference.md: a zero step runs no iteration).  span and |step| are
 * unsigned, so every i32 lo, hi and step is exact; a count above 2^31 - 1 wraps (the same limit
 * as every trip count).  For a constant step the selects fold away. */
static MlirValue counted_trips(Gen *g, MlirLocation loc, MlirValue lo, MlirValue hi,
                               MlirValue step) {
  MlirType i32t = mlirIntegerTypeGet(g->ctx, 32);
  MlirValue zero = kiln_ir_build_const_int(&g->b, loc, i32t, 0);
  MlirValue one = kiln_ir_build_const_int(&g->b, loc, i32t, 1);
  MlirValue up = kiln_ir_build_cmpi(&g->b, loc, "sgt", step, zero);
  MlirValue span = kiln_ir_build_select(&g->b, loc, up, i32_op(g, loc, "arith.subi", hi, lo),
                                        i32_op(g, loc, "arith.subi", lo, hi));
  MlirValue any =
      kiln_ir_build_select(&g->b, loc, up, kiln_ir_build_cmpi(&g->b, loc, "slt", lo, hi),
                           kiln_ir_build_cmpi(&g->b, loc, "sgt", lo, hi));
  MlirValue nonzero = kiln_ir_build_cmpi(&g->b, loc, "ne", step, zero);
  MlirValue ops[2] = {any, nonzero};
  any = kiln_ir_build_elementwise(&g->b, loc, "arith.andi", ops, 2, mlirIntegerTypeGet(g->ctx, 1));
  MlirValue mag =
      kiln_ir_build_select(&g->b, loc, up, step, i32_op(g, loc, "arith.subi", zero, step));
  mag = kiln_ir_build_select(&g->b, loc, nonzero, mag, one); /* no division by zero */
  MlirValue q = i32_op(g, loc, "arith.divui", i32_op(g, loc, "arith.subi", span, one), mag);
  MlirValue trips = i32_op(g, loc, "arith.addi", q, one);
  return kiln_ir_build_select(&g->b, loc, any, trips, zero);
}

/* A step known to be positive is scf.for's own: none, a positive constant, or num_programs(axis)
 * (a grid-stride loop, `range(pid, n, num_programs(0))`, keeps its plain form); any other is
 * counted (counted_trips). */
static bool step_is_counted(const KilnStmt *s) {
  if (!s->step) return false;
  if (s->step->is_const) return s->step->ival <= 0;
  return !(s->step->kind == KILN_EXPR_CALL && s->step->builtin == KILN_BUILTIN_NUM_PROGRAMS);
}

static void gen_block(Gen *g, const KilnBlock *blk);

static void gen_for(Gen *g, const KilnStmt *s) {
  if (s->unroll) { /* static_range: sema's copies of the body, one per iteration, in order */
    for (int k = 0; k < s->ncopies && !g->failed; k++) gen_block(g, s->copies[k]);
    return;
  }
  MlirLocation loc = loc_of(g, s->span);
  KilnType i32 = {.kind = KILN_TYPE_SCALAR, .scalar = KILN_SCALAR_I32};
  MlirType i32t = mlirIntegerTypeGet(g->ctx, 32);
  MlirValue lo = gen_as(g, s->lo, &i32);
  MlirValue hi = gen_as(g, s->hi, &i32);
  bool counted = step_is_counted(s);
  MlirValue given =
      s->step ? gen_as(g, s->step, &i32) : kiln_ir_build_const_int(&g->b, loc, i32t, 1);
  MlirValue step = given;
  if (g->failed) return;
  MlirValue start = lo;
  if (counted) {
    hi = counted_trips(g, loc, lo, hi, given);
    lo = kiln_ir_build_const_int(&g->b, loc, i32t, 0);
    step = kiln_ir_build_const_int(&g->b, loc, i32t, 1);
  }
  size_t n = (size_t)s->ncarried;
  MlirValue *inits = calloc(n ? n : 1, sizeof *inits);
  if (!inits) {
    gen_error(g, s->span, "out of memory");
    return;
  }
  for (size_t i = 0; i < n; i++) inits[i] = current(g, s->carried[i]);
  KilnIRFor f = kiln_ir_build_for(&g->b, loc, lo, hi, step, inits, n);
  /* sema put the break flag first in `carried`: the loop ends when it is set (exit_loops.c) */
  if (s->exit_flag) kiln_ir_mark_exit_loop(f.op, s->unbounded);
  KilnIRBuilder outer = g->b;
  kiln_ir_builder_set_end(&g->b, f.body);
  g->vals[s->decl->id] = f.iv;
  if (counted)
    g->vals[s->decl->id] =
        i32_op(g, loc, "arith.addi", start, i32_op(g, loc, "arith.muli", f.iv, given));
  for (size_t i = 0; i < n; i++) g->vals[s->carried[i]->id] = kiln_ir_for_iter_arg(&f, i);
  gen_block(g, s->body);
  for (size_t i = 0; i < n; i++) inits[i] = current(g, s->carried[i]);
  kiln_ir_build_yield(&g->b, loc, inits, n);
  g->b = outer;
  for (size_t i = 0; i < n; i++) g->vals[s->carried[i]->id] = kiln_ir_for_result(&f, i);
  free(inits);
}

static void gen_if(Gen *g, const KilnStmt *s) {
  MlirLocation loc = loc_of(g, s->span);
  KilnType i1 = {.kind = KILN_TYPE_SCALAR, .scalar = KILN_SCALAR_I1};
  MlirValue cond = gen_as(g, s->cond, &i1);
  if (g->failed) return;
  size_t n = (size_t)s->ncarried;
  MlirType *types = calloc(n ? n : 1, sizeof *types);
  MlirValue *before = calloc(n ? n : 1, sizeof *before);
  MlirValue *outs = calloc(n ? n : 1, sizeof *outs);
  if (!types || !before || !outs) {
    gen_error(g, s->span, "out of memory");
    free(types);
    free(before);
    free(outs);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    types[i] = kiln_mlirgen_type(g->ctx, s->carried[i]->type);
    before[i] = current(g, s->carried[i]);
  }
  KilnIRIf f = kiln_ir_build_if(&g->b, loc, cond, types, n);
  KilnIRBuilder outer = g->b;
  const KilnBlock *branches[2] = {s->body, s->else_body};
  MlirBlock blocks[2] = {f.then_block, f.else_block};
  for (int br = 0; br < 2; br++) {
    kiln_ir_builder_set_end(&g->b, blocks[br]);
    for (size_t i = 0; i < n; i++) g->vals[s->carried[i]->id] = before[i];
    if (branches[br]) gen_block(g, branches[br]);
    for (size_t i = 0; i < n; i++) outs[i] = current(g, s->carried[i]);
    kiln_ir_build_yield(&g->b, loc, outs, n);
  }
  g->b = outer;
  for (size_t i = 0; i < n; i++) g->vals[s->carried[i]->id] = kiln_ir_if_result(&f, i);
  free(types);
  free(before);
  free(outs);
}

/* `let a, b = f(...);` (or var, or an assignment): the call's body, then each returned value
 * converted to its name's type.  All values are made before any name is rebound, so that
 * `a, b = swap(a, b)` reads the old a and b (the values are the callee's names anyway). */
/* `let m, i = reduce([v, idx], axis, f);`, `let a, b = split(x);`: a builtin's values. */
static void gen_unpack_builtin(Gen *g, const KilnStmt *s) {
  const KilnExpr *call = s->value;
  MlirValue out[MAX_COMBINE_VALUES] = {{NULL}};
  if (!gen_builtin_values(g, call, out)) return;
  for (int i = 0; i < s->nnames && !g->failed; i++) {
    const KilnExpr *v = call->result->args[i];
    out[i] = convert(g, loc_of(g, s->span), out[i], v->type, s->decls[i]->type, s->span);
  }
  for (int i = 0; i < s->nnames && !g->failed; i++) g->vals[s->decls[i]->id] = out[i];
}

static void gen_unpack(Gen *g, const KilnStmt *s) {
  const KilnExpr *call = s->value;
  if (s->decls &&
      (call->builtin == KILN_BUILTIN_SCAN || call->builtin == KILN_BUILTIN_REDUCE ||
       call->builtin == KILN_BUILTIN_SPLIT || call->builtin == KILN_BUILTIN_SWIZZLE2D)) {
    gen_unpack_builtin(g, s);
    return;
  }
  if (!s->decls || !call->inlined || !call->result || !call->result->tuple) {
    gen_error(g, s->span, "unpacking of a value that is not a function's values");
    return;
  }
  gen_block(g, call->inlined);
  MlirValue *vals = calloc((size_t)s->nnames, sizeof *vals);
  if (!vals) {
    gen_error(g, s->span, "out of memory");
    return;
  }
  for (int i = 0; i < s->nnames && !g->failed; i++)
    vals[i] = gen_as(g, call->result->args[i], s->decls[i]->type);
  for (int i = 0; i < s->nnames && !g->failed; i++) g->vals[s->decls[i]->id] = vals[i];
  free(vals);
}

static void gen_stmt(Gen *g, const KilnStmt *s) {
  switch (s->kind) {
  case KILN_STMT_LET:
    if (s->decl->type->kind == KILN_TYPE_DESC) {
      /* a tensor descriptor has no value of its own: making one binds its parts (the call's
       * inlined lets), naming one again binds nothing */
      if (s->init->kind == KILN_EXPR_CALL) (void)gen_expr(g, s->init);
      break;
    }
    g->vals[s->decl->id] = gen_as(g, s->init, s->decl->type);
    break;
  case KILN_STMT_VAR: g->vals[s->decl->id] = gen_as(g, s->init, s->decl->type); break;
  case KILN_STMT_ASSIGN: g->vals[s->target->id] = gen_as(g, s->value, s->target->type); break;
  case KILN_STMT_EXPR: (void)gen_expr(g, s->value); break;
  case KILN_STMT_FOR: gen_for(g, s); break;
  case KILN_STMT_IF: gen_if(g, s); break;
  case KILN_STMT_RETURN: break;
  case KILN_STMT_UNPACK: gen_unpack(g, s); break;
  default: gen_error(g, s->span, "unknown statement"); break;
  }
}

static void gen_block(Gen *g, const KilnBlock *blk) {
  for (int i = 0; i < blk->nstmts && !g->failed; i++) gen_stmt(g, blk->stmts[i]);
}

/* ------------------------------------------------------------------ kernel */

bool kiln_mlirgen_kernel(KilnCompilation *c, const KilnKernel *k, KilnMlirContext *kctx,
                         MlirModule module) {
  Gen g = {.c = c, .ctx = kiln_mlir_context_get(kctx), .path = kiln_frontend_path(c)};
  int nargs = 0;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i]->kind == KILN_DECL_PARAM) nargs++;
  MlirType *arg_types = calloc((size_t)(nargs ? nargs : 1), sizeof *arg_types);
  g.args = calloc((size_t)(nargs ? nargs : 1), sizeof *g.args);
  g.nvals = k->ndecls;
  g.vals = calloc((size_t)(k->ndecls > 0 ? k->ndecls : 1), sizeof *g.vals);
  if (!arg_types || !g.args || !g.vals) {
    free(arg_types);
    free(g.args);
    free(g.vals);
    kiln_diag_add(c, KILN_SEV_ERROR, k->span, "out of memory");
    return false;
  }
  for (int i = 0; i < k->nparams; i++) {
    const KilnDecl *d = k->params[i];
    if (d->kind != KILN_DECL_PARAM) continue;
    arg_types[d->index] = kiln_mlirgen_type(g.ctx, d->type);
    if (mlirTypeIsNull(arg_types[d->index]))
      gen_error(&g, d->span, "parameter type has no IR type");
  }
  if (!g.failed) {
    KilnIRBuilder mb;
    kiln_ir_builder_init(&mb, g.ctx, kiln_ir_module_body(module));
    KilnIRFunc f = kiln_ir_build_kernel(&mb, loc_of(&g, k->span), k->name, arg_types, (size_t)nargs,
                                        k->num_warps, k->num_stages);
    /* min_blocks only when the config sets it: without it ptxas chooses the registers alone */
    if (k->min_blocks > 0)
      mlirOperationSetAttributeByName(
          f.op, mlirStringRefCreateFromCString("kiln.min_blocks"),
          mlirIntegerAttrGet(mlirIntegerTypeGet(g.ctx, 32), k->min_blocks));
    /* wgmma only when the config asks for it: the sm_90 lowering reads it, other targets never */
    if (k->wgmma == 1)
      mlirOperationSetAttributeByName(f.op, mlirStringRefCreateFromCString("kiln.wgmma"),
                                      mlirIntegerAttrGet(mlirIntegerTypeGet(g.ctx, 32), 1));
    for (int i = 0; i < nargs; i++) g.args[i] = kiln_ir_func_arg(&f, (size_t)i);
    kiln_ir_builder_init(&g.b, g.ctx, f.entry);
    gen_block(&g, k->body);
    kiln_ir_build_return(&g.b, loc_of(&g, k->body->span));
  }
  free(arg_types);
  free(g.args);
  free(g.vals);
  return !g.failed;
}
