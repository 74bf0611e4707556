/* sema.c: names, types, shapes and constants of one kernel under one binding of its consts.
 *
 * How this works.  One walk over the kernel's statements in order.  Declarations go on a
 * stack of visible names (a block pops what it pushed); every identifier use is pointed at
 * its KilnDecl.  Each expression is checked bottom-up and gets its type (scalar, pointer or
 * tile with a static shape), `is_const`/`ival` when it is a compile-time integer, and
 * `weak` when it is an untyped constant (a literal or a const param) that adopts the type of
 * the operand it meets, as Triton's constexprs do.  Binary ops and elementwise builtins
 * record the common operand type (element type + broadcast shape) so mlirgen knows which
 * casts and broadcasts to emit.  Assignments inside `for`/`if` are collected per statement
 * (vars declared outside it) as the loop-carried values / if results.
 *
 * All results go into the AST nodes and the scratch arena, which is reset per call: the
 * tuner re-checks a kernel per configuration.  A NULL type means "an error was already
 * reported here": callers stay quiet about it so one mistake yields one message. */
#include "frontend_internal.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

/* Functions are inlined per call: at most this deep, and this many calls per kernel (a function
 * calling another twice, ten levels deep, is already a thousand copies). */
#define MAX_INLINE_DEPTH  32
#define MAX_INLINED_CALLS 4096

/* No tile may hold more elements than this (shape arithmetic overflow guard). */
#define MAX_TILE_ELEMS ((int64_t)1 << 24)

typedef struct Ctl {
  KilnStmt *stmt;
  int first_id; /* decls with smaller ids were declared before this statement */
  KilnPtrVec carried;
} Ctl;

typedef struct Sema {
  KilnCompilation *c;
  KilnArena *ar;
  KilnKernel *k;
  KilnPtrVec names;    /* visible KilnDecl*, innermost last */
  KilnPtrVec shadowed; /* per entry of names: index of the declaration it hides, or -1 */
  KilnNameMap visible; /* name -> index in names of its innermost declaration (a map, not a
                            scan: kernels with tens of thousands of lets) */
  int scope_start;     /* index in names where the current block's scope begins */
  int next_id;
  Ctl *ctl; /* enclosing for/if statements, innermost last */
  int nctl, ctl_cap;
  bool from_tune; /* bindings come from the tune block, whose check reported bad names */
  const KilnFunc *calls[MAX_INLINE_DEPTH]; /* the functions being inlined, outermost first */
  int ncalls;
  int ninlined; /* calls inlined into this kernel, bounded so that nesting cannot explode */
} Sema;

#define ERR(S, span, ...) kiln_diag_error((S)->c, (span), __VA_ARGS__)

/* ---------------------------------------------------------------- type helpers */

static const char *tstr(Sema *S, const KilnType *t) {
  char buf[192];
  kiln_type_str(t, buf, sizeof buf);
  return kiln_arena_strndup(S->ar, buf, strlen(buf));
}

/* A written type (annotation, cast target) with a type parameter's name replaced by the scalar
 * bound to it; false (reported at span) when the name is no type parameter of the kernel. */
static bool resolve_written(Sema *S, const KilnType *w, KilnSpan span, KilnType *out) {
  *out = *w;
  out->param = NULL;
  if (!w->param) return true;
  for (int i = 0; i < S->k->nparams; i++) {
    const KilnDecl *p = S->k->params[i];
    if (p->is_type_param && strcmp(p->name, w->param) == 0) {
      if (!p->type) return false; /* its binding failed: already reported */
      out->scalar = p->type->scalar;
      return true;
    }
  }
  if (strcmp(w->param, "type") == 0)
    ERR(S, span, "'type' declares a type parameter: write 'const NAME: type'");
  else
    ERR(S, span, "unknown type '%s'", w->param);
  return false;
}

static const char *shstr(Sema *S, const int64_t *dims, int rank) {
  char buf[192];
  kiln_shape_str(dims, rank, buf, sizeof buf);
  return kiln_arena_strndup(S->ar, buf, strlen(buf));
}

static bool is_ptrish(const KilnType *t) {
  return t->kind == KILN_TYPE_PTR || (t->kind == KILN_TYPE_TILE && t->elem_is_ptr);
}

static bool is_numeric(const KilnType *t) {
  return (t->kind == KILN_TYPE_SCALAR || t->kind == KILN_TYPE_TILE) && !is_ptrish(t);
}

static int rank_of(const KilnType *t) { return t->kind == KILN_TYPE_TILE ? t->rank : 0; }

/* A scalar / pointer when rank is 0, else a tile of that element. */
static const KilnType *with_shape(Sema *S, KilnScalarKind s, bool ptr, int rank,
                                  const int64_t *dims) {
  if (rank == 0 && !ptr) return kiln_type_scalar(s);
  KilnType *t = kiln_type_new(S->ar, NULL);
  t->scalar = s;
  if (rank == 0) {
    t->kind = KILN_TYPE_PTR;
    return t;
  }
  t->kind = KILN_TYPE_TILE;
  t->elem_is_ptr = ptr;
  t->rank = rank;
  memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
  return t;
}

static const KilnType *like_shape(Sema *S, KilnScalarKind s, bool ptr, const KilnType *shape_of) {
  return with_shape(S, s, ptr, rank_of(shape_of), shape_of->dims);
}

/* Every tile a program builds stays within MAX_TILE_ELEMS elements, whichever way its shape
 * arose (a literal shape, arange, broadcasting, dot): the product is taken with overflow
 * checks, since dimensions of up to 2^24 each multiply past 2^63 in a few steps. */
static bool check_tile_elems(Sema *S, KilnSpan span, int rank, const int64_t *dims) {
  int64_t total = 1;
  for (int i = 0; i < rank; i++) {
    if (__builtin_mul_overflow(total, dims[i], &total) || total > MAX_TILE_ELEMS) {
      ERR(S, span, "tile shape %s is too large (more than %" PRId64 " elements)",
          shstr(S, dims, rank), MAX_TILE_ELEMS);
      return false;
    }
  }
  return true;
}

/* numpy broadcasting of two shapes (rank 0 = scalar).  Reports and returns false on mismatch. */
static bool broadcast(Sema *S, KilnSpan span, int ra, const int64_t *da, int rb, const int64_t *db,
                      int *rout, int64_t *dout) {
  int r = ra > rb ? ra : rb;
  int64_t out[KILN_MAX_RANK];
  for (int i = 0; i < r; i++) {
    int ia = ra - r + i, ib = rb - r + i;
    int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
    if (a != b && a != 1 && b != 1) {
      ERR(S, span, "tile shapes %s and %s do not broadcast", shstr(S, da, ra), shstr(S, db, rb));
      return false;
    }
    out[i] = a == 1 ? b : a;
  }
  if (!check_tile_elems(S, span, r, out)) return false;
  *rout = r;
  memcpy(dout, out, sizeof(int64_t) * (size_t)r);
  return true;
}

static bool broadcast_types(Sema *S, KilnSpan span, const KilnType *a, const KilnType *b, int *rout,
                            int64_t *dout) {
  return broadcast(S, span, rank_of(a), a->dims, rank_of(b), b->dims, rout, dout);
}

/* Element type two operands meet in: weak constants adopt the other side's type; otherwise
 * ints widen, int with float gives the float, f16 with bf16 gives f32, wider float wins. */
static KilnScalarKind common_elem(KilnScalarKind a, bool weak_a, KilnScalarKind b, bool weak_b) {
  bool fa = kiln_scalar_is_float(a), fb = kiln_scalar_is_float(b);
  if (weak_a != weak_b) {
    KilnScalarKind weak = weak_a ? a : b, strong = weak_a ? b : a;
    if (kiln_scalar_is_float(weak) && !kiln_scalar_is_float(strong)) return KILN_SCALAR_F32;
    return strong;
  }
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (a == b) return a;
  if (fa && fb) {
    if (kiln_scalar_bits(a) == kiln_scalar_bits(b)) return KILN_SCALAR_F32; /* f16 with bf16 */
    return kiln_scalar_bits(a) > kiln_scalar_bits(b) ? a : b;
  }
  return kiln_scalar_bits(a) >= kiln_scalar_bits(b) ? a : b;
}

static bool int_fits(int64_t v, KilnScalarKind k) {
  switch (k) {
  case KILN_SCALAR_I1: return v == 0 || v == 1;
  case KILN_SCALAR_I8: return v >= INT8_MIN && v <= INT8_MAX;
  case KILN_SCALAR_I16: return v >= INT16_MIN && v <= INT16_MAX;
  case KILN_SCALAR_I32: return v >= INT32_MIN && v <= INT32_MAX;
  case KILN_SCALAR_U8: return v >= 0 && v <= UINT8_MAX;
  case KILN_SCALAR_U16: return v >= 0 && v <= UINT16_MAX;
  case KILN_SCALAR_U32: return v >= 0 && v <= UINT32_MAX;
  case KILN_SCALAR_U64: return v >= 0; /* constants stop at 2^63 - 1 (they are int64_t) */
  default: return true;
  }
}

/* Signed and unsigned integers do not meet implicitly (u32 + i32 has no common type that holds
 * both ranges, and C's answer, unsigned, turns -1 into 4294967295): both operands non-weak
 * integers (i1 aside: it is 0 or 1 in either) of different signedness is an error asking for a
 * cast.  A weak constant adopts the other side's type as usual (and must fit it). */
static bool sign_mix(Sema *S, KilnSpan span, const char *what, KilnScalarKind a, bool weak_a,
                     KilnScalarKind b, bool weak_b) {
  if (weak_a || weak_b || !kiln_scalar_is_int(a) || !kiln_scalar_is_int(b) || a == KILN_SCALAR_I1 ||
      b == KILN_SCALAR_I1 || kiln_scalar_is_unsigned(a) == kiln_scalar_is_unsigned(b))
    return false;
  ERR(S, span, "%s mixes signed and unsigned integers (%s and %s): convert one with 'as'", what,
      kiln_scalar_name(a), kiln_scalar_name(b));
  return true;
}

/* The integer type that sums and scans of k run in: i32 for i1/i8/i16, u32 for u8/u16 (both
 * widened first, so a sum of 1024 ones is 1024), k itself otherwise. */
static KilnScalarKind accumulate_kind(KilnScalarKind k) {
  if (!kiln_scalar_is_int(k) || kiln_scalar_bits(k) >= 32) return k;
  return kiln_scalar_is_unsigned(k) ? KILN_SCALAR_U32 : KILN_SCALAR_I32;
}

/* Gives a weak literal (or a negated one) the type it was converted to, so mlirgen emits the
 * constant directly; checks that an integer literal fits its new integer type. */
static void retype_literal(Sema *S, KilnExpr *e, KilnScalarKind s) {
  if (!e->weak || !e->type || e->type->kind != KILN_TYPE_SCALAR) return;
  if (e->kind == KILN_EXPR_UNARY && e->unop == KILN_UN_NEG) {
    /* -128 is an i8: the range check is on the negated value, not on the 128 under it */
    KilnExpr *lit = e->lhs;
    if (lit->kind == KILN_EXPR_INT && kiln_scalar_is_int(s) && s != KILN_SCALAR_I1) {
      if (!int_fits(-lit->ival, s))
        ERR(S, e->span, "integer constant -%" PRId64 " does not fit in %s", lit->ival,
            kiln_scalar_name(s));
      else
        e->type = lit->type = kiln_type_scalar(s);
      e->operand_type = e->type;
      return;
    }
    retype_literal(S, e->lhs, s);
    e->type = e->lhs->type;
    e->operand_type = e->type;
    return;
  }
  if (e->kind != KILN_EXPR_INT && e->kind != KILN_EXPR_FLOAT) return;
  if (e->kind == KILN_EXPR_INT && kiln_scalar_is_int(s) && s != KILN_SCALAR_I1 &&
      !int_fits(e->ival, s)) {
    ERR(S, e->span, "integer constant %" PRId64 " does not fit in %s", e->ival,
        kiln_scalar_name(s));
    return;
  }
  if (kiln_scalar_is_float(s) || (e->kind == KILN_EXPR_INT && s != KILN_SCALAR_I1))
    e->type = kiln_type_scalar(s);
}

/* ---------------------------------------------------------------- names */

static KilnDecl *lookup(Sema *S, const char *name) {
  int i = kiln_names_get(&S->visible, name);
  return i >= 0 ? S->names.items[i] : NULL;
}

static void declare(Sema *S, KilnDecl *d) {
  int prev = kiln_names_get(&S->visible, d->name);
  if (prev >= S->scope_start) {
    KilnDecl *o = S->names.items[prev];
    ERR(S, d->span, "'%s' is already declared in this scope (line %d)", d->name, o->span.line);
  }
  d->id = S->next_id++;
  kiln_vec_push(S->ar, &S->names, d);
  kiln_vec_push(S->ar, &S->shadowed, (void *)(intptr_t)prev);
  kiln_names_set(S->ar, &S->visible, d->name, S->names.n - 1);
}

/* Leaves a block: its declarations go out of sight, the ones they hid come back. */
static void end_scope(Sema *S, int saved_n, int saved_start) {
  while (S->names.n > saved_n) {
    int i = --S->names.n;
    S->shadowed.n--;
    KilnDecl *d = S->names.items[i];
    kiln_names_set(S->ar, &S->visible, d->name, (int)(intptr_t)S->shadowed.items[i]);
  }
  S->scope_start = saved_start;
}

/* ---------------------------------------------------------------- expressions */

static const KilnType *check_expr(Sema *S, KilnExpr *e);

/* Values are scalars, pointers and tiles; reports type names, shapes and void results. */
static bool need_value(Sema *S, const KilnExpr *e) {
  switch (e->type->kind) {
  case KILN_TYPE_SCALAR:
  case KILN_TYPE_PTR:
  case KILN_TYPE_TILE: return true;
  case KILN_TYPE_VOID:
    ERR(S, e->span, "'%s' does not return a value", e->name ? e->name : "?");
    break;
  case KILN_TYPE_DTYPE:
    ERR(S, e->span, "type name '%s' used as a value", kiln_scalar_name(e->type->scalar));
    break;
  case KILN_TYPE_SHAPE: ERR(S, e->span, "a list can only be used as a shape argument"); break;
  case KILN_TYPE_STRING:
    ERR(S, e->span, "a string can only be static_assert's message or device_print's text");
    break;
  case KILN_TYPE_TUPLE:
    ERR(S, e->span, "'%s' returns %d values: unpack them, as in 'let a, b = %s(...);'",
        e->name ? e->name : "?", e->type->rank, e->name ? e->name : "f");
    break;
  case KILN_TYPE_DESC:
    ERR(S, e->span,
        "a tensor descriptor is not a value: bind it with 'let' and read or write it with "
        "load_tensor_descriptor and store_tensor_descriptor");
    break;
  case KILN_TYPE_COUNT: break;
  }
  return false;
}

/* Checks e and requires a value; NULL if not (reported). */
static const KilnType *value(Sema *S, KilnExpr *e) {
  const KilnType *t = check_expr(S, e);
  if (!t || !need_value(S, e)) return NULL;
  return t;
}

static const char *const binop_spelling[KILN_BIN_COUNT] = {
    "+",  "-",  "*",  "/", "%", "<<", ">>", "<",  "<=", ">",
    ">=", "==", "!=", "&", "|", "^",  "&&", "||", "**",
};

static bool is_compare(KilnBinOp op) { return op >= KILN_BIN_LT && op <= KILN_BIN_NE; }

/* Folds an integer binary op of constants; false (reported) on division by zero / overflow. */
static bool fold_binary(Sema *S, KilnExpr *e, KilnScalarKind s) {
  int64_t a = e->lhs->ival, b = e->rhs->ival, r = 0;
  bool ovf = false;
  switch (e->binop) {
  case KILN_BIN_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
  case KILN_BIN_SUB: ovf = __builtin_sub_overflow(a, b, &r); break;
  case KILN_BIN_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
  case KILN_BIN_DIV:
  case KILN_BIN_MOD:
    if (b == 0) {
      ERR(S, e->rhs->span, "division by zero in constant expression");
      return false;
    }
    if (a == INT64_MIN && b == -1)
      ovf = true;
    else
      r = e->binop == KILN_BIN_DIV ? a / b : a % b; /* C: truncates toward zero */
    break;
  case KILN_BIN_SHL:
  case KILN_BIN_SHR:
    if (b < 0 || b >= kiln_scalar_bits(s)) {
      ERR(S, e->rhs->span, "shift count %" PRId64 " is out of range for %s", b,
          kiln_scalar_name(s));
      return false;
    }
    if (e->binop == KILN_BIN_SHR)
      r = a >> b;
    else if (b >= 63) /* 1 << 63 does not fit in int64_t */
      ovf = a != 0;
    else
      ovf = __builtin_mul_overflow(a, (int64_t)1 << b, &r);
    break;
  case KILN_BIN_LT: r = a < b; break;
  case KILN_BIN_LE: r = a <= b; break;
  case KILN_BIN_GT: r = a > b; break;
  case KILN_BIN_GE: r = a >= b; break;
  case KILN_BIN_EQ: r = a == b; break;
  case KILN_BIN_NE: r = a != b; break;
  case KILN_BIN_BITAND: r = a & b; break;
  case KILN_BIN_BITOR: r = a | b; break;
  case KILN_BIN_BITXOR: r = a ^ b; break;
  case KILN_BIN_AND: r = a && b; break;
  case KILN_BIN_OR: r = a || b; break;
  case KILN_BIN_POW:
  case KILN_BIN_COUNT: KILN_ASSERT(!"bad binop"); /* ** is folded by check_pow */
  }
  if (ovf || (!is_compare(e->binop) && !int_fits(r, s))) {
    ERR(S, e->span, "integer overflow in constant expression (%s)", kiln_scalar_name(s));
    return false;
  }
  e->is_const = true;
  e->ival = r;
  return true;
}

/* b ** n in exact integer arithmetic; false on overflow of type s. */
static bool fold_pow(int64_t b, int64_t n, KilnScalarKind s, int64_t *out) {
  int64_t r = 1;
  for (int64_t i = 0; i < n; i++) {
    if (__builtin_mul_overflow(r, b, &r) || !int_fits(r, s)) return false;
    if (r == 0 || r == 1 || (r == -1 && b == -1 && (n - i - 1) % 2 == 0))
      break; /* the rest cannot change it (0, 1; or -1 with an even count of -1 to go) */
  }
  *out = r;
  return true;
}

/* pow = expr "**" expr.  The exponent is a compile-time integer constant: the power becomes
 * ceil(log2 n) to 2 log2 n multiplications in the base's type (mlirgen), and a negative exponent
 * the reciprocal of that, so only a float base may have one.  A non-constant exponent would need
 * the pow() builtin (C's pow: a negative x takes an integer y). */
static const KilnType *check_pow(Sema *S, KilnExpr *e, const KilnType *lt, const KilnType *rt) {
  KilnExpr *x = e->lhs, *n = e->rhs;
  if (!is_numeric(lt) || lt->scalar == KILN_SCALAR_I1) {
    ERR(S, x->span, "the base of '**' must be a number, got %s", tstr(S, lt));
    return NULL;
  }
  if (!n->is_const || rt->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(rt->scalar) ||
      rt->scalar == KILN_SCALAR_I1) {
    ERR(S, n->span,
        "the exponent of '**' must be a compile-time integer constant "
        "(for a run-time exponent write pow(x, y))");
    return NULL;
  }
  if (n->ival < 0 && !kiln_scalar_is_float(lt->scalar)) {
    ERR(S, n->span, "a negative exponent needs a floating-point base, got %s", tstr(S, lt));
    return NULL;
  }
  if (n->ival > INT32_MAX || n->ival < -INT32_MAX) {
    ERR(S, n->span, "exponent %" PRId64 " of '**' is out of range", n->ival);
    return NULL;
  }
  if (x->is_const && kiln_scalar_is_int(lt->scalar)) {
    if (!fold_pow(x->ival, n->ival, lt->scalar, &e->ival)) {
      ERR(S, e->span, "integer overflow in constant expression (%s)", kiln_scalar_name(lt->scalar));
      return NULL;
    }
    e->is_const = true;
  }
  e->operand_type = lt;
  e->weak = x->weak;
  return lt;
}

/* binary = expr OP expr */
static const KilnType *check_binary(Sema *S, KilnExpr *e) {
  const KilnType *lt = value(S, e->lhs), *rt = value(S, e->rhs);
  if (!lt || !rt) return NULL;
  if (e->binop == KILN_BIN_POW && !is_ptrish(lt) && !is_ptrish(rt)) return check_pow(S, e, lt, rt);
  const char *op = binop_spelling[e->binop];
  int rank;
  int64_t dims[KILN_MAX_RANK];
  bool lp = is_ptrish(lt), rp = is_ptrish(rt);
  if (lp || rp) {
    /* pointer arithmetic: ptr + int, int + ptr, ptr - int */
    const KilnType *pt = lp ? lt : rt, *it = lp ? rt : lt;
    KilnExpr *ie = lp ? e->rhs : e->lhs;
    bool ok = (e->binop == KILN_BIN_ADD && lp != rp) || (e->binop == KILN_BIN_SUB && lp && !rp);
    if (!ok) {
      ERR(S, e->span, "invalid operands to '%s': %s and %s", op, tstr(S, lt), tstr(S, rt));
      return NULL;
    }
    if (!kiln_scalar_is_int(it->scalar) || it->scalar == KILN_SCALAR_I1) {
      ERR(S, ie->span, "pointer offset must be an integer, got %s", tstr(S, it));
      return NULL;
    }
    if (!broadcast_types(S, e->span, lt, rt, &rank, dims)) return NULL;
    /* an unsigned offset is zero-extended to a signed type that holds it (u8/u16 to i32, u32
     * to i64; u64 reinterpreted as i64), since pointer offsets are signed in the IR */
    KilnScalarKind ok_kind = it->scalar;
    if (kiln_scalar_is_unsigned(ok_kind))
      ok_kind = kiln_scalar_bits(ok_kind) < 32 ? KILN_SCALAR_I32 : KILN_SCALAR_I64;
    e->operand_type = with_shape(S, ok_kind, false, rank, dims);
    return with_shape(S, pt->scalar, true, rank, dims);
  }
  if (!broadcast_types(S, e->span, lt, rt, &rank, dims)) return NULL;
  char what[64];
  snprintf(what, sizeof what, "operator '%s'", op);
  if (sign_mix(S, e->span, what, lt->scalar, e->lhs->weak, rt->scalar, e->rhs->weak)) return NULL;
  KilnScalarKind s = common_elem(lt->scalar, e->lhs->weak, rt->scalar, e->rhs->weak);
  switch (e->binop) {
  case KILN_BIN_AND:
  case KILN_BIN_OR:
    if (lt->scalar != KILN_SCALAR_I1 || rt->scalar != KILN_SCALAR_I1) {
      ERR(S, e->span, "operator '%s' needs i1 operands, got %s and %s", op, tstr(S, lt),
          tstr(S, rt));
      return NULL;
    }
    s = KILN_SCALAR_I1;
    break;
  case KILN_BIN_SHL:
  case KILN_BIN_SHR:
  case KILN_BIN_BITAND:
  case KILN_BIN_BITOR:
  case KILN_BIN_BITXOR:
    if (!kiln_scalar_is_int(lt->scalar) || !kiln_scalar_is_int(rt->scalar)) {
      ERR(S, e->span, "operator '%s' needs integer operands, got %s and %s", op, tstr(S, lt),
          tstr(S, rt));
      return NULL;
    }
    break;
  default: break;
  }
  retype_literal(S, e->lhs, s);
  retype_literal(S, e->rhs, s);
  e->operand_type = with_shape(S, s, false, rank, dims);
  const KilnType *t =
      is_compare(e->binop) ? with_shape(S, KILN_SCALAR_I1, false, rank, dims) : e->operand_type;
  if (e->lhs->is_const && e->rhs->is_const && kiln_scalar_is_int(s)) {
    if (!fold_binary(S, e, s)) return NULL;
  }
  e->weak = e->lhs->weak && e->rhs->weak && !is_compare(e->binop);
  return t;
}

/* unary = ("-" | "!" | "~") expr */
static const KilnType *check_unary(Sema *S, KilnExpr *e) {
  const KilnType *t = value(S, e->lhs);
  if (!t) return NULL;
  const KilnExpr *x = e->lhs;
  switch (e->unop) {
  case KILN_UN_NEG:
    if (!is_numeric(t) || t->scalar == KILN_SCALAR_I1) {
      ERR(S, e->span, "operator '-' needs a number, got %s", tstr(S, t));
      return NULL;
    }
    if (x->is_const) {
      if (x->ival == INT64_MIN || !int_fits(-x->ival, t->scalar)) {
        ERR(S, e->span, "integer overflow in constant expression (%s)",
            kiln_scalar_name(t->scalar));
        return NULL;
      }
      e->is_const = true;
      e->ival = -x->ival;
    }
    break;
  case KILN_UN_NOT:
    if (t->scalar != KILN_SCALAR_I1 || is_ptrish(t)) {
      ERR(S, e->span, "operator '!' needs an i1 operand, got %s", tstr(S, t));
      return NULL;
    }
    if (x->is_const) {
      e->is_const = true;
      e->ival = !x->ival;
    }
    break;
  case KILN_UN_BITNOT:
    if (!is_numeric(t) || !kiln_scalar_is_int(t->scalar)) {
      ERR(S, e->span, "operator '~' needs an integer operand, got %s", tstr(S, t));
      return NULL;
    }
    if (x->is_const && t->scalar == KILN_SCALAR_I1) {
      e->is_const = true;
      e->ival = !x->ival;
    } else if (x->is_const && kiln_scalar_is_unsigned(t->scalar) && t->scalar != KILN_SCALAR_U64) {
      /* the complement within the type's bits (~0 as u8 is 255); a u64 complement is folded
       * only by the backend, since constants stop at 2^63 - 1 */
      e->is_const = true;
      e->ival = ~x->ival & (int64_t)((UINT64_C(1) << kiln_scalar_bits(t->scalar)) - 1);
    } else if (x->is_const && !kiln_scalar_is_unsigned(t->scalar)) {
      e->is_const = true;
      e->ival = ~x->ival;
    }
    break;
  case KILN_UN_COUNT: KILN_ASSERT(!"bad unop");
  }
  e->weak = x->weak && e->unop == KILN_UN_NEG;
  e->operand_type = t;
  return t;
}

/* cast = expr "as" scalar */
static const KilnType *check_cast(Sema *S, KilnExpr *e) {
  const KilnType *t = value(S, e->lhs);
  KilnType to_type;
  if (!t || !resolve_written(S, e->cast_to, e->span, &to_type)) return NULL;
  if (to_type.kind != KILN_TYPE_SCALAR) {
    ERR(S, e->span, "cannot cast to pointer type %s", tstr(S, &to_type));
    return NULL;
  }
  if (is_ptrish(t)) {
    ERR(S, e->span, "cannot cast pointer type %s", tstr(S, t));
    return NULL;
  }
  KilnScalarKind to = to_type.scalar;
  if (e->lhs->is_const && kiln_scalar_is_int(to) && int_fits(e->lhs->ival, to)) {
    e->is_const = true;
    e->ival = e->lhs->ival;
  }
  return like_shape(S, to, false, t);
}

/* index = expr "[" (":" | "None") {"," ...} "]" */
static const KilnType *check_index(Sema *S, KilnExpr *e) {
  const KilnType *t = value(S, e->lhs);
  if (!t) return NULL;
  if (t->kind != KILN_TYPE_TILE) {
    ERR(S, e->span, "only tiles can be indexed, got %s", tstr(S, t));
    return NULL;
  }
  int slices = 0;
  for (int i = 0; i < e->nindex; i++) slices += e->index[i] == KILN_INDEX_SLICE;
  if (slices != t->rank) {
    ERR(S, e->span, "index has %d ':' but the tile has rank %d", slices, t->rank);
    return NULL;
  }
  if (e->nindex > KILN_MAX_RANK) {
    ERR(S, e->span, "tile rank %d exceeds the maximum of %d", e->nindex, KILN_MAX_RANK);
    return NULL;
  }
  int64_t dims[KILN_MAX_RANK];
  for (int i = 0, j = 0; i < e->nindex; i++)
    dims[i] = e->index[i] == KILN_INDEX_SLICE ? t->dims[j++] : 1;
  return with_shape(S, t->scalar, t->elem_is_ptr, e->nindex, dims);
}

/* list = "[" expr {"," expr} "]": only meaningful as a shape, so it is checked as one. */
static const KilnType *check_list(Sema *S, KilnExpr *e) {
  bool ok = true;
  KilnType *t = kiln_type_new(S->ar, NULL);
  t->kind = KILN_TYPE_SHAPE;
  if (e->nargs < 1 || e->nargs > KILN_MAX_RANK) {
    ERR(S, e->span, "a shape needs 1 to %d dimensions, got %d", KILN_MAX_RANK, e->nargs);
    return NULL;
  }
  int64_t total = 1;
  for (int i = 0; i < e->nargs; i++) {
    KilnExpr *d = e->args[i];
    if (d->kw) {
      ERR(S, d->kw_span, "a list holds values, not 'name = value' pairs");
      ok = false;
      continue;
    }
    const KilnType *dt = value(S, d);
    if (!dt) {
      ok = false;
      continue;
    }
    if (!d->is_const || dt->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(dt->scalar)) {
      ERR(S, d->span, "shape dimensions must be compile-time integer constants");
      ok = false;
    } else if (d->ival <= 0) {
      ERR(S, d->span, "shape dimension must be positive, got %" PRId64, d->ival);
      ok = false;
    } else {
      t->dims[i] = d->ival;
      if (__builtin_mul_overflow(total, d->ival, &total) || total > MAX_TILE_ELEMS) {
        ERR(S, e->span, "tile shape is too large (more than %" PRId64 " elements)", MAX_TILE_ELEMS);
        return NULL;
      }
    }
  }
  t->rank = e->nargs;
  return ok ? t : NULL;
}

static const KilnType *check_name(Sema *S, KilnExpr *e) {
  KilnDecl *d = e->part ? e->part : lookup(S, e->name);
  if (!d) {
    ERR(S, e->span, "use of undeclared name '%s'", e->name);
    return NULL;
  }
  e->decl = d;
  if (!d->type) return NULL; /* its declaration failed to check: already reported */
  if (d->is_const) {
    e->is_const = true;
    e->ival = d->value;
    e->weak = d->type->kind == KILN_TYPE_SCALAR && kiln_scalar_is_int(d->type->scalar);
  }
  return d->type;
}

/* ---------------------------------------------------------------- builtins */

typedef struct BuiltinInfo {
  const char *name;
  int min_args, max_args;
} BuiltinInfo;

static const BuiltinInfo builtin_info[KILN_BUILTIN_COUNT] = {
    {NULL, 0, 0},
#define KILN_BUILTIN(id, name, min_args, max_args, sig, doc) {name, min_args, max_args},
#include "builtins.def"
#undef KILN_BUILTIN
};

static KilnBuiltin find_builtin(const char *name) {
  for (int i = 1; i < KILN_BUILTIN_COUNT; i++)
    if (strcmp(builtin_info[i].name, name) == 0) return (KilnBuiltin)i;
  return KILN_BUILTIN_NONE;
}

/* A compile-time integer argument. */
static bool const_arg(Sema *S, KilnExpr *call, int i, const char *what, int64_t *out) {
  KilnExpr *a = call->args[i];
  if (!a->is_const || a->type->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(a->type->scalar)) {
    ERR(S, a->span, "%s must be a compile-time integer constant", what);
    return false;
  }
  *out = a->ival;
  return true;
}

static bool need_ptr(Sema *S, KilnExpr *call, const KilnExpr *a) {
  if (is_ptrish(a->type)) return true;
  ERR(S, a->span, "%s expects a pointer or a tile of pointers as argument 1, got %s", call->name,
      tstr(S, a->type));
  return false;
}

static bool need_mask(Sema *S, KilnExpr *call, const KilnExpr *a) {
  if (is_numeric(a->type) && a->type->scalar == KILN_SCALAR_I1) return true;
  ERR(S, a->span, "%s mask must be i1, got %s", call->name, tstr(S, a->type));
  return false;
}

static bool need_numeric(Sema *S, const char *what, const KilnExpr *a) {
  if (is_numeric(a->type)) return true;
  ERR(S, a->span, "%s must be a number or a tile of numbers, got %s", what, tstr(S, a->type));
  return false;
}

/* Broadcasts the shapes of args[0..n) together into rank/dims. */
static bool broadcast_args(Sema *S, KilnExpr *call, int from, int n, int *rank, int64_t *dims) {
  *rank = 0;
  for (int i = from; i < n; i++) {
    const KilnType *t = call->args[i]->type;
    if (!broadcast(S, call->span, *rank, dims, rank_of(t), t->dims, rank, dims)) return false;
  }
  return true;
}

/* load(ptr, mask?, other?), store(ptr, value, mask?), atomic_*(ptr, value, mask?) */
static const KilnType *check_memory(Sema *S, KilnExpr *e) {
  KilnExpr **a = e->args;
  bool is_load = e->builtin == KILN_BUILTIN_LOAD;
  if (!need_ptr(S, e, a[0])) return NULL;
  int mask_i = is_load ? 1 : 2, val_i = is_load ? 2 : 1;
  if (e->nargs > mask_i && !need_mask(S, e, a[mask_i])) return NULL;
  if (e->nargs > val_i) {
    char what[64];
    snprintf(what, sizeof what, "%s %s", e->name, is_load ? "other" : "value");
    if (!need_numeric(S, what, a[val_i])) return NULL;
  }
  int rank;
  int64_t dims[KILN_MAX_RANK];
  if (!broadcast_args(S, e, 0, e->nargs, &rank, dims)) return NULL;
  KilnScalarKind s = a[0]->type->scalar;
  bool atomic = !is_load && e->builtin != KILN_BUILTIN_STORE;
  if (atomic && s == KILN_SCALAR_I1) { /* a bool is a byte in memory, not a cell to update */
    ERR(S, a[0]->span, "%s needs a pointer to integers or floats (not i1), got %s", e->name,
        tstr(S, a[0]->type));
    return NULL;
  }
  if (e->nargs > val_i) retype_literal(S, a[val_i], s);
  e->operand_type = with_shape(S, s, false, rank, dims);
  return e->builtin == KILN_BUILTIN_STORE ? kiln_type_void() : e->operand_type;
}

/* atomic_cas(ptr, cmp, value, mask?): integer or float elements of 8 to 64 bits (a lock, a
 * counter, a float cell compared by its bits; the GPU targets swap an 8- or 16-bit cell with a
 * CAS of the 32-bit word that holds it), not i1; cmp and value are converted to the element type
 * and broadcast with the pointer and the mask.  operand_type is the element type of the
 * broadcast shape. */
static bool cas_elem_ok(KilnScalarKind k) { return k != KILN_SCALAR_I1 && k < KILN_SCALAR_COUNT; }

static const KilnType *check_cas(Sema *S, KilnExpr *e) {
  KilnExpr **a = e->args;
  if (!need_ptr(S, e, a[0])) return NULL;
  KilnScalarKind k = a[0]->type->scalar;
  if (!cas_elem_ok(k)) {
    ERR(S, a[0]->span, "atomic_cas needs a pointer to integers or floats (not i1), got %s",
        tstr(S, a[0]->type));
    return NULL;
  }
  /* a float cell compares bits (the lowerings bitcast to integers): cmp and value convert to it */
  bool fl = kiln_scalar_is_float(k);
  for (int i = 1; i < 3; i++) {
    const KilnType *t = a[i]->type;
    if (!is_numeric(t) || t->scalar == KILN_SCALAR_I1 || (!fl && !kiln_scalar_is_int(t->scalar))) {
      ERR(S, a[i]->span, "atomic_cas %s must be %s, got %s", i == 1 ? "cmp" : "value",
          fl ? "a number" : "an integer", tstr(S, t));
      return NULL;
    }
  }
  if (e->nargs > 3 && !need_mask(S, e, a[3])) return NULL;
  int rank;
  int64_t dims[KILN_MAX_RANK];
  if (!broadcast_args(S, e, 0, e->nargs, &rank, dims)) return NULL;
  retype_literal(S, a[1], k);
  retype_literal(S, a[2], k);
  e->operand_type = with_shape(S, k, false, rank, dims);
  return e->operand_type;
}

/* The element type of dot(a, b)'s result for operands of element type `op`: f32 for the 16- and
 * 32-bit float types, f64 for f64 (summed in doubles on every target), i32 for i8 (integer
 * products summed exactly, as Triton's int8 dot); KILN_SCALAR_I1 (no dot) for any other type. */
static KilnScalarKind dot_result_scalar(KilnScalarKind op) {
  if (op == KILN_SCALAR_F64) return KILN_SCALAR_F64;
  if (kiln_scalar_is_float(op)) return KILN_SCALAR_F32;
  return op == KILN_SCALAR_I8 ? KILN_SCALAR_I32 : KILN_SCALAR_I1;
}

/* Whether acc may accumulate a dot whose operands give result kind rk: i8 dots need i32, f64
 * dots f64 (a narrower accumulator would drop what the doubles computed), the others any float. */
static bool dot_acc_ok(KilnScalarKind rk, KilnScalarKind acc) {
  if (rk == KILN_SCALAR_I32 || rk == KILN_SCALAR_F64) return acc == rk;
  return kiln_scalar_is_float(acc);
}

static const char *dot_acc_want(KilnScalarKind rk) {
  if (rk == KILN_SCALAR_I32) return "i32 (the operands are i8)";
  return rk == KILN_SCALAR_F64 ? "f64 (the operands are f64)" : "floats";
}

/* dot's fourth argument, tf32: a constant flag (true or false), true only with f32 operands (it
 * says how to round f32 inputs; the 16-bit types are already exact on tensor cores, f64 and i8
 * have other instructions).  The flag is kept in e->ival for mlirgen. */
static bool check_dot_tf32(Sema *S, KilnExpr *e, KilnScalarKind op) {
  KilnExpr *f = e->args[3];
  if (!f->is_const || f->type->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(f->type->scalar)) {
    ERR(S, f->span, "dot's tf32 flag must be a constant (true or false), got %s", tstr(S, f->type));
    return false;
  }
  if (f->ival != 0 && op != KILN_SCALAR_F32) {
    ERR(S, f->span,
        "dot's tf32 flag rounds f32 operands to TF32: it needs f32 operands, got %s (give "
        "tf32 = false or convert the operands with `as f32`)",
        kiln_scalar_name(op));
    return false;
  }
  e->ival = f->ival != 0;
  return true;
}

/* dot(a: [M,K], b: [K,N], acc?: [M,N]): f16/bf16/f32 operands accumulate in a float tile (f32
 * without acc), f64 operands in an f64 tile, i8 operands in an i32 tile (i32 without acc).  f64
 * is never mixed with another operand type: the other operand is named and must be converted. */
static const KilnType *check_dot(Sema *S, KilnExpr *e) {
  const KilnType *a = e->args[0]->type, *b = e->args[1]->type;
  for (int i = 0; i < 2; i++) {
    const KilnType *t = e->args[i]->type;
    if (t->kind != KILN_TYPE_TILE || t->rank != 2 || t->elem_is_ptr) {
      ERR(S, e->args[i]->span, "dot operands must be 2-D tiles, got %s", tstr(S, t));
      return NULL;
    }
  }
  if ((a->scalar == KILN_SCALAR_F64) != (b->scalar == KILN_SCALAR_F64)) {
    int other = a->scalar == KILN_SCALAR_F64 ? 1 : 0;
    ERR(S, e->args[other]->span,
        "dot does not mix f64 with %s operands: convert one of them with `as` (f64 with f64 "
        "accumulates in f64)",
        kiln_scalar_name(e->args[other]->type->scalar));
    return NULL;
  }
  KilnScalarKind rk = dot_result_scalar(a->scalar);
  if (a->scalar != b->scalar || rk == KILN_SCALAR_I1) {
    ERR(S, e->span,
        "dot operands must have the same element type (f16, bf16 or f32; or i8, accumulated "
        "in i32), got %s and %s",
        kiln_scalar_name(a->scalar), kiln_scalar_name(b->scalar));
    return NULL;
  }
  if (a->dims[1] != b->dims[0]) {
    ERR(S, e->span, "dot inner dimensions do not match: %s and %s", shstr(S, a->dims, 2),
        shstr(S, b->dims, 2));
    return NULL;
  }
  int64_t mn[2] = {a->dims[0], b->dims[1]};
  if (!check_tile_elems(S, e->span, 2, mn)) return NULL;
  const KilnType *res = with_shape(S, rk, false, 2, mn);
  if (e->nargs == 3) {
    const KilnType *acc = e->args[2]->type;
    if (acc->kind != KILN_TYPE_TILE || acc->elem_is_ptr || acc->rank != 2 ||
        acc->dims[0] != mn[0] || acc->dims[1] != mn[1] || !dot_acc_ok(rk, acc->scalar)) {
      ERR(S, e->args[2]->span, "dot accumulator must be a %s tile of %s, got %s", shstr(S, mn, 2),
          dot_acc_want(rk), tstr(S, acc));
      return NULL;
    }
    res = acc;
  }
  if (e->nargs == 4 && !check_dot_tf32(S, e, a->scalar)) return NULL;
  e->operand_type = res;
  return res;
}

/* sum / max / min / argmax / argmin (x, axis)
 * Integers narrower than i32 (i1, i8, i16) are reduced in i32, as Triton does: operand_type is
 * then the input's shape in i32 (NULL otherwise), so mlirgen widens the tile first (i1
 * zero-extends, i8/i16 sign-extend).  A sum keeps the i32 result (1024 i8 ones sum to 1024, not
 * 0; a sum of an i1 mask counts its true lanes instead of giving the count's parity); max and
 * min are narrowed back to the element type, which holds their value exactly; in i1 that makes
 * max "any" and min "all" (in i1 itself a signed compare would order true, -1, below false). */
static const KilnType *check_reduce(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type;
  if (t->kind != KILN_TYPE_TILE || t->elem_is_ptr) {
    ERR(S, e->args[0]->span, "%s expects a tile of numbers, got %s", e->name, tstr(S, t));
    return NULL;
  }
  /* without an axis: every element, a scalar (mlirgen reduces axis by axis; argmax/argmin
     * index x's elements in row-major order) */
  int64_t axis = -1;
  if (kiln_call_has_axis(e)) {
    KilnExpr *a = e->args[1];
    bool is_int = a->type->kind == KILN_TYPE_SCALAR && kiln_scalar_is_int(a->type->scalar);
    if ((e->builtin == KILN_BUILTIN_MAX || e->builtin == KILN_BUILTIN_MIN) &&
        !(a->is_const && is_int)) {
      ERR(S, a->span,
          "%s(x, axis) reduces tile x along a constant axis, and %s(a, b) of two scalars "
          "takes the %s; for the element-wise %s of tiles use %s(a, b)",
          e->name, e->name, e->builtin == KILN_BUILTIN_MAX ? "larger" : "smaller",
          e->builtin == KILN_BUILTIN_MAX ? "maximum" : "minimum",
          e->builtin == KILN_BUILTIN_MAX ? "maximum" : "minimum");
      return NULL;
    }
    if (!const_arg(S, e, 1, "reduction axis", &axis)) return NULL;
    if (axis < 0 || axis >= t->rank) {
      ERR(S, a->span, "reduction axis %" PRId64 " is out of range for a rank-%d tile", axis,
          t->rank);
      return NULL;
    }
  }
  /* keep_dims: the reduced axis stays as a 1 (mlirgen expands the result back) */
  bool keep = false;
  if (e->nargs > 2) {
    KilnExpr *k = e->args[2];
    if (!k->is_const || k->type->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(k->type->scalar)) {
      ERR(S, k->span, "%s keep_dims must be a constant (true or false)", e->name);
      return NULL;
    }
    keep = k->ival != 0;
  }
  e->ival = keep;
  int64_t dims[KILN_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < t->rank && (axis >= 0 || keep); i++)
    if (i != axis || keep) dims[rank++] = i == axis || axis < 0 ? 1 : t->dims[i];
  KilnScalarKind acc = accumulate_kind(t->scalar);
  e->operand_type = acc != t->scalar ? like_shape(S, acc, false, t) : NULL;
  bool arg = e->builtin == KILN_BUILTIN_ARGMAX || e->builtin == KILN_BUILTIN_ARGMIN;
  KilnScalarKind rk = arg ? KILN_SCALAR_I32 : e->builtin == KILN_BUILTIN_SUM ? acc : t->scalar;
  return with_shape(S, rk, false, rank, dims);
}

static const KilnType *elementwise(Sema *S, KilnExpr *e, int from, bool float_only, bool int_only);

/* max(a, b) / min(a, b) of two scalars: the larger / smaller in their common type (as
 * maximum / minimum, which take tiles too); a tile in either place is the reduction form
 * max(x, axis), so a scalar beside a tile is a mistake that names both forms.  Two integer
 * constants fold (max(BLOCK, 16) is a constant, usable in shapes). */
static const KilnType *check_scalar_minmax(Sema *S, KilnExpr *e) {
  bool is_max = e->builtin == KILN_BUILTIN_MAX;
  e->ival = 0;
  if (e->nargs != 2 || e->args[1]->type->kind != KILN_TYPE_SCALAR) {
    ERR(S, e->span,
        "%s of a scalar takes two scalars, %s(a, b); %s(x, axis) reduces a tile, and "
        "%s(a, b) is the element-wise %s of tiles",
        e->name, e->name, e->name, is_max ? "maximum" : "minimum", is_max ? "maximum" : "minimum");
    return NULL;
  }
  const KilnType *t = elementwise(S, e, 0, false, false);
  if (!t) return NULL;
  KilnExpr *a = e->args[0], *b = e->args[1];
  if (a->is_const && b->is_const && kiln_scalar_is_int(t->scalar) && t->scalar != KILN_SCALAR_I1) {
    e->is_const = true;
    e->ival =
        is_max ? (a->ival > b->ival ? a->ival : b->ival) : (a->ival < b->ival ? a->ival : b->ival);
  }
  return t;
}

/* Elementwise builtins over value args [from, to): common element type, broadcast shape. */
static const KilnType *elementwise_args(Sema *S, KilnExpr *e, int from, int to, bool float_only,
                                        bool int_only) {
  KilnScalarKind s = KILN_SCALAR_I1;
  bool weak = true, first = true;
  for (int i = from; i < to; i++) {
    KilnExpr *a = e->args[i];
    char what[64];
    snprintf(what, sizeof what, "%s argument %d", e->name, i + 1);
    if (!need_numeric(S, what, a)) return NULL;
    if (!first && sign_mix(S, e->span, e->name, s, weak, a->type->scalar, a->weak)) return NULL;
    s = first ? a->type->scalar : common_elem(s, weak, a->type->scalar, a->weak);
    weak = first ? a->weak : weak && a->weak;
    first = false;
  }
  if (float_only && !kiln_scalar_is_float(s)) {
    if (!weak) {
      ERR(S, e->span, "%s needs a floating-point argument, got %s", e->name,
          tstr(S, e->args[from]->type));
      return NULL;
    }
    s = KILN_SCALAR_F32;
  }
  if (int_only && !kiln_scalar_is_int(s)) {
    ERR(S, e->span, "%s needs integer arguments, got %s", e->name, kiln_scalar_name(s));
    return NULL;
  }
  int rank;
  int64_t dims[KILN_MAX_RANK];
  if (!broadcast_args(S, e, from, to, &rank, dims)) return NULL;
  for (int i = from; i < to; i++) retype_literal(S, e->args[i], s);
  e->operand_type = with_shape(S, s, false, rank, dims);
  e->weak = weak;
  return e->operand_type;
}

/* Elementwise builtins over value args [from, nargs). */
static const KilnType *elementwise(Sema *S, KilnExpr *e, int from, bool float_only, bool int_only) {
  return elementwise_args(S, e, from, e->nargs, float_only, int_only);
}

static const KilnType *check_where(Sema *S, KilnExpr *e) {
  KilnExpr *c = e->args[0];
  if (!is_numeric(c->type) || c->type->scalar != KILN_SCALAR_I1) {
    ERR(S, c->span, "where condition must be i1, got %s", tstr(S, c->type));
    return NULL;
  }
  const KilnType *t = elementwise(S, e, 1, false, false);
  if (!t) return NULL;
  int rank;
  int64_t dims[KILN_MAX_RANK];
  if (!broadcast_args(S, e, 0, 3, &rank, dims)) return NULL;
  e->weak = false;
  e->operand_type = with_shape(S, t->scalar, false, rank, dims);
  return e->operand_type;
}

static const KilnType *check_cdiv(Sema *S, KilnExpr *e) {
  const KilnType *t = elementwise(S, e, 0, false, true);
  if (!t) return NULL;
  KilnExpr *a = e->args[0], *b = e->args[1];
  if (a->is_const && b->is_const) {
    int64_t r;
    if (b->ival == 0) {
      ERR(S, b->span, "division by zero in constant expression");
      return NULL;
    }
    if (__builtin_add_overflow(a->ival, b->ival - 1, &r) || !int_fits(r / b->ival, t->scalar)) {
      ERR(S, e->span, "integer overflow in constant expression (%s)", kiln_scalar_name(t->scalar));
      return NULL;
    }
    e->is_const = true;
    e->ival = r / b->ival;
  }
  return t;
}

static const KilnType *check_shape_ctor(Sema *S, KilnExpr *e) {
  bool full = e->builtin == KILN_BUILTIN_FULL;
  KilnExpr *shape = e->args[0], *ty = e->args[full ? 2 : 1];
  if (shape->type->kind != KILN_TYPE_SHAPE) {
    ERR(S, shape->span, "%s expects a shape list like [64, 32] as argument 1", e->name);
    return NULL;
  }
  if (ty->type->kind != KILN_TYPE_DTYPE) {
    ERR(S, ty->span, "%s expects an element type like f32 as argument %d", e->name, full ? 3 : 2);
    return NULL;
  }
  KilnScalarKind s = ty->type->scalar;
  if (full) {
    KilnExpr *v = e->args[1];
    if (!need_numeric(S, "full value", v)) return NULL;
    if (v->type->kind != KILN_TYPE_SCALAR) {
      ERR(S, v->span, "full value must be a scalar, got %s", tstr(S, v->type));
      return NULL;
    }
    retype_literal(S, v, s);
    e->operand_type = kiln_type_scalar(s);
  }
  return with_shape(S, s, false, shape->type->rank, shape->type->dims);
}

/* zeros_like(x), full_like(x, value): x's element type and shape; x a number or a tile of
 * numbers.  operand_type (full_like) is the scalar value's type, x's element type. */
static const KilnType *check_like(Sema *S, KilnExpr *e) {
  KilnExpr *x = e->args[0];
  char what[64];
  snprintf(what, sizeof what, "%s argument 1", e->name);
  if (!need_numeric(S, what, x)) return NULL;
  const KilnType *t = like_shape(S, x->type->scalar, false, x->type);
  if (e->builtin == KILN_BUILTIN_FULL_LIKE) {
    KilnExpr *v = e->args[1];
    if (!need_numeric(S, "full_like value", v)) return NULL;
    if (v->type->kind != KILN_TYPE_SCALAR) {
      ERR(S, v->span, "full_like value must be a scalar, got %s", tstr(S, v->type));
      return NULL;
    }
    retype_literal(S, v, t->scalar);
    e->operand_type = kiln_type_scalar(t->scalar);
  }
  return t;
}

/* expand_dims(x, axis): a size-1 axis inserted before `axis` (0..rank); a negative axis counts
 * from the end of the result (-1 appends), as in numpy.  The axis is normalized in place. */
static const KilnType *check_expand_dims(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type;
  if (t->kind != KILN_TYPE_TILE) {
    ERR(S, e->args[0]->span, "expand_dims expects a tile, got %s", tstr(S, t));
    return NULL;
  }
  int64_t axis;
  if (!const_arg(S, e, 1, "expand_dims axis", &axis)) return NULL;
  if (t->rank >= KILN_MAX_RANK) {
    ERR(S, e->span, "expand_dims of a rank-%d tile would exceed rank %d", t->rank, KILN_MAX_RANK);
    return NULL;
  }
  if (axis < -(t->rank + 1) || axis > t->rank) {
    ERR(S, e->args[1]->span,
        "expand_dims axis %" PRId64 " is out of range for a rank-%d tile (%d..%d)", axis, t->rank,
        -(t->rank + 1), t->rank);
    return NULL;
  }
  if (axis < 0) axis += t->rank + 1;
  e->ival = axis;
  int64_t dims[KILN_MAX_RANK];
  for (int i = 0, j = 0; i <= t->rank; i++) dims[i] = i == axis ? 1 : t->dims[j++];
  return with_shape(S, t->scalar, t->elem_is_ptr, t->rank + 1, dims);
}

/* broadcast_to(x, [shape]): x (scalar, pointer or tile) aligned on the right with shape, each
 * of its dimensions equal to shape's or 1; the result has exactly that shape. */
static const KilnType *check_broadcast_to(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type, *sh = e->args[1]->type;
  if (sh->kind != KILN_TYPE_SHAPE) {
    ERR(S, e->args[1]->span, "broadcast_to expects a shape list like [64, 32] as argument 2");
    return NULL;
  }
  int rank = rank_of(t);
  bool fits = rank <= sh->rank;
  for (int i = 0; i < rank && fits; i++) {
    int64_t d = t->dims[rank - 1 - i], w = sh->dims[sh->rank - 1 - i];
    fits = d == w || d == 1;
  }
  if (!fits) {
    ERR(S, e->span, "cannot broadcast %s to shape %s", tstr(S, t), shstr(S, sh->dims, sh->rank));
    return NULL;
  }
  return with_shape(S, t->scalar, is_ptrish(t), sh->rank, sh->dims);
}

/* A flag argument (reverse, keep_dims) of call e: a constant, true or false; mlirgen reads its
 * ival. */
static bool flag_arg(Sema *S, const KilnExpr *e, int i, const char *what) {
  const KilnExpr *k = e->args[i];
  if (!k->is_const || k->type->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(k->type->scalar)) {
    ERR(S, k->span, "%s %s must be a constant (true or false)", e->name, what);
    return false;
  }
  return true;
}

/* flip(x, axis), cumsum / cumprod(x, axis?): a tile of numbers and a constant axis in range
 * (scans default to 0, as Triton's).  The axis is kept in e->ival.  A scan of i1/i8/i16 runs in
 * i32, as a sum does (operand_type: the input's shape in i32), so it counts rather than wraps. */
static const KilnType *check_axis_op(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type;
  if (t->kind != KILN_TYPE_TILE || t->elem_is_ptr) {
    ERR(S, e->args[0]->span, "%s expects a tile of numbers, got %s", e->name, tstr(S, t));
    return NULL;
  }
  int64_t axis = 0;
  char what[64];
  snprintf(what, sizeof what, "%s axis", e->name);
  if (e->nargs > 1 && !const_arg(S, e, 1, what, &axis)) return NULL;
  if (axis < 0 || axis >= t->rank) {
    ERR(S, e->args[1]->span, "%s axis %" PRId64 " is out of range for a rank-%d tile", e->name,
        axis, t->rank);
    return NULL;
  }
  e->ival = axis;
  if (e->builtin == KILN_BUILTIN_FLIP) return t;
  if (e->nargs > 2 && !flag_arg(S, e, 2, "reverse")) return NULL;
  e->operand_type = like_shape(S, accumulate_kind(t->scalar), false, t);
  return e->operand_type;
}

/* sort(x, axis?, descending?): a tile of numbers sorted along an axis (the last when absent, as
 * Triton's), of any length (a bitonic network over the next power of two, mlirgen; the GPU
 * targets refuse tiles that are not powers of two themselves).  The descending flag is kept in
 * e->ival; mlirgen reads the axis from the call, as reductions do. */
static const KilnType *check_sort(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type;
  if (t->kind != KILN_TYPE_TILE || t->elem_is_ptr) {
    ERR(S, e->args[0]->span, "sort expects a tile of numbers, got %s", tstr(S, t));
    return NULL;
  }
  int64_t axis = t->rank - 1;
  if (kiln_call_has_axis(e) && !const_arg(S, e, 1, "sort axis", &axis)) return NULL;
  if (axis < 0 || axis >= t->rank) {
    ERR(S, e->args[1]->span, "sort axis %" PRId64 " is out of range for a rank-%d tile", axis,
        t->rank);
    return NULL;
  }
  e->ival = 0;
  if (e->nargs > 2) {
    KilnExpr *d = e->args[2];
    if (!d->is_const || d->type->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(d->type->scalar)) {
      ERR(S, d->span, "sort descending must be a constant (true or false)");
      return NULL;
    }
    e->ival = d->ival != 0;
  }
  return t;
}

static const KilnType *check_func_call(Sema *S, KilnExpr *e, const KilnFunc *f);

/* scan / reduce (x, axis, combine): combine names a def, which is inlined (check_func_call) on a
 * call of its own, combine(x, x), made here and kept in e->lhs: its body is checked with two
 * tiles of x's type, and mlirgen emits that body once per step of its network with the step's
 * tiles bound to the parameters (so a tile of x's shape is all it ever sees).  Its result must
 * be x's type.  x may be a list of k tiles of one shape, `[v, i]` (Triton's tuples): the combine
 * then takes 2k parameters (the earlier values, then the later ones) and returns k values, and
 * the call is unpacked (`let m, j = reduce([v, i], 1, f);`): its type is a tuple whose values
 * are in e->result, as a function's are.  The axis is kept in e->ival; it may have any length
 * (mlirgen runs the network over the next power of two). */
#define MAX_COMBINE_VALUES 8

static int combine_inputs(KilnExpr *e, KilnExpr ***xs) {
  KilnExpr *x = e->args[0];
  if (x->kind != KILN_EXPR_LIST) {
    *xs = e->args;
    return 1;
  }
  *xs = x->args;
  return x->nargs;
}

static KilnExpr *combine_call(Sema *S, KilnExpr *e, const KilnFunc *f, KilnExpr **xs, int k) {
  KilnExpr *c = kiln_arena_alloc(S->ar, sizeof *c);
  memset(c, 0, sizeof *c);
  c->kind = KILN_EXPR_CALL;
  c->span = e->args[2]->span;
  c->name = f->name;
  c->nargs = 2 * k;
  c->args = kiln_arena_alloc(S->ar, sizeof *c->args * (size_t)(2 * k));
  for (int i = 0; i < 2 * k; i++) c->args[i] = kiln_ast_clone_expr(S->ar, xs[i % k]);
  return c;
}

/* The inputs: k tiles of numbers of one shape, whose axis is in range. */
static bool check_combine_inputs(Sema *S, KilnExpr *e, KilnExpr **xs, int k, int64_t *axis) {
  if (k < 1 || k > MAX_COMBINE_VALUES) {
    ERR(S, e->args[0]->span, "%s takes 1 to %d tiles, got %d", e->name, MAX_COMBINE_VALUES, k);
    return false;
  }
  const KilnType *t = xs[0]->type;
  for (int i = 0; i < k; i++) {
    const KilnType *ti = xs[i]->type;
    if (ti->kind != KILN_TYPE_TILE || ti->elem_is_ptr) {
      ERR(S, xs[i]->span, "%s expects a tile of numbers, got %s", e->name, tstr(S, ti));
      return false;
    }
    if (ti->rank != t->rank || memcmp(ti->dims, t->dims, sizeof(int64_t) * (size_t)t->rank)) {
      ERR(S, xs[i]->span, "%s needs tiles of one shape, got %s and %s", e->name, tstr(S, t),
          tstr(S, ti));
      return false;
    }
  }
  if (e->builtin == KILN_BUILTIN_REDUCE && !kiln_call_has_axis(e)) {
    *axis = -1; /* every axis (combine given by keyword) */
    return true;
  }
  char what[64];
  snprintf(what, sizeof what, "%s axis", e->name);
  if (!const_arg(S, e, 1, what, axis)) return false;
  if (*axis < 0 || *axis >= t->rank) {
    ERR(S, e->args[1]->span, "%s axis %" PRId64 " is out of range for a rank-%d tile", e->name,
        *axis, t->rank);
    return false;
  }
  return true;
}

/* The combine's function: a def of 2k parameters returning k values. */
static const KilnFunc *combine_func(Sema *S, KilnExpr *e, KilnExpr **xs, int k) {
  KilnExpr *fn = e->args[2];
  const KilnFunc *f = fn->kind == KILN_EXPR_NAME ? kiln_func_find(S->c, fn->name) : NULL;
  if (!f) {
    ERR(S, fn->span, "%s combine must name a function (a def of %d parameters)%s", e->name, 2 * k,
        fn->kind == KILN_EXPR_NAME && find_builtin(fn->name) ? ", not a builtin" : "");
    return NULL;
  }
  if (f->nparams != 2 * k) {
    ERR(S, fn->span, "%s combine '%s' must take %d parameters, takes %d", e->name, f->name, 2 * k,
        f->nparams);
    return NULL;
  }
  int got = !f->result ? 0 : f->result->tuple ? f->result->nargs : 1;
  if (k == 1 && got != 1) {
    ERR(S, fn->span, "%s combine '%s' must return one value (x's type %s)", e->name, f->name,
        tstr(S, xs[0]->type));
    return NULL;
  }
  if (got != k) {
    ERR(S, fn->span, "%s combine '%s' must return %d values, one per tile, returns %d", e->name,
        f->name, k, got);
    return NULL;
  }
  return f;
}

/* x's type (or a tuple value's) as reduce leaves it: without the axis (axis -1: every axis, a
 * scalar), or with keep (keep_dims) the reduced axes as 1s. */
static const KilnType *without_axis(Sema *S, const KilnType *t, int64_t axis, bool keep) {
  int64_t dims[KILN_MAX_RANK];
  int rank = 0;
  for (int i = 0; i < t->rank; i++)
    if (keep)
      dims[rank++] = i == axis || axis < 0 ? 1 : t->dims[i];
    else if (i != axis && axis >= 0)
      dims[rank++] = t->dims[i];
  return with_shape(S, t->scalar, false, rank, dims);
}

/* e->result for a builtin's k values (scan/reduce of k tiles, split, swizzle2d): a tuple LIST
 * of placeholders of the result types (unpacking reads their types; mlirgen gives the values). */
static const KilnType *builtin_tuple(Sema *S, KilnExpr *e, int k, const KilnType **types) {
  KilnExpr *list = kiln_arena_alloc(S->ar, sizeof *list);
  memset(list, 0, sizeof *list);
  list->kind = KILN_EXPR_LIST;
  list->span = e->span;
  list->tuple = true;
  list->nargs = k;
  list->args = kiln_arena_alloc(S->ar, sizeof *list->args * (size_t)k);
  for (int i = 0; i < k; i++) {
    KilnExpr *v = kiln_arena_alloc(S->ar, sizeof *v);
    memset(v, 0, sizeof *v);
    v->kind = KILN_EXPR_INT;
    v->span = e->span;
    v->type = types[i];
    list->args[i] = v;
  }
  e->result = list;
  KilnType *t = kiln_arena_alloc(S->ar, sizeof *t);
  t->kind = KILN_TYPE_TUPLE;
  t->rank = k;
  list->type = t;
  return t;
}

static const KilnType *combine_tuple(Sema *S, KilnExpr *e, KilnExpr **xs, int k, int64_t axis,
                                     bool keep) {
  const KilnType *types[MAX_COMBINE_VALUES];
  for (int i = 0; i < k; i++)
    types[i] =
        e->builtin == KILN_BUILTIN_SCAN ? xs[i]->type : without_axis(S, xs[i]->type, axis, keep);
  return builtin_tuple(S, e, k, types);
}

static const KilnType *check_combine_op(Sema *S, KilnExpr *e) {
  KilnExpr **xs;
  int k = combine_inputs(e, &xs);
  int64_t axis = 0;
  if (!check_combine_inputs(S, e, xs, k, &axis)) return NULL;
  const KilnFunc *f = combine_func(S, e, xs, k);
  if (!f) return NULL;
  KilnExpr *call = combine_call(S, e, f, xs, k);
  const KilnType *r = check_func_call(S, call, f);
  if (!r) return NULL;
  for (int i = 0; i < k; i++) {
    const KilnType *ri = k == 1 ? r : call->result->args[i]->type, *ti = xs[i]->type;
    if (kiln_type_equal(ri, ti)) continue;
    if (k == 1)
      ERR(S, e->args[2]->span, "%s combine '%s' must return x's type %s, returns %s", e->name,
          f->name, tstr(S, ti), tstr(S, ri));
    else
      ERR(S, e->args[2]->span,
          "%s combine '%s' must return tile %d's type %s as value %d, returns %s", e->name, f->name,
          i, tstr(S, ti), i, tstr(S, ri));
    return NULL;
  }
  /* scan's reverse, reduce's keep_dims: mlirgen reads the flag from args[3] */
  bool flag = false;
  if (e->nargs > 3) {
    if (!flag_arg(S, e, 3, e->builtin == KILN_BUILTIN_SCAN ? "reverse" : "keep_dims")) return NULL;
    flag = e->args[3]->ival != 0;
  }
  e->lhs = call;
  e->ival = axis;
  bool keep = e->builtin == KILN_BUILTIN_REDUCE && flag;
  if (k > 1) return combine_tuple(S, e, xs, k, axis, keep);
  return e->builtin == KILN_BUILTIN_SCAN ? xs[0]->type : without_axis(S, xs[0]->type, axis, keep);
}

/* join(a, b) and interleave(a, b): two numbers or tiles of numbers broadcast together in their
 * common type (operand_type), then a new last axis of 2 (join) or the last axis twice as long
 * (interleave, of tiles).  mlirgen builds both from a select and, for interleave, a reshape. */
static const KilnType *check_join(Sema *S, KilnExpr *e) {
  const KilnType *t = elementwise(S, e, 0, false, false);
  if (!t) return NULL;
  bool join = e->builtin == KILN_BUILTIN_JOIN;
  int rank = rank_of(t);
  if (!join && rank == 0) {
    ERR(S, e->span, "interleave needs a tile, got two scalars (join makes a [2] tile of them)");
    return NULL;
  }
  if (join && rank >= KILN_MAX_RANK) {
    ERR(S, e->span, "join of rank-%d tiles would be rank %d; tiles have at most %d axes", rank,
        rank + 1, KILN_MAX_RANK);
    return NULL;
  }
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, t->dims, sizeof(int64_t) * (size_t)rank);
  if (join)
    dims[rank++] = 2;
  else
    dims[rank - 1] *= 2;
  if (!check_tile_elems(S, e->span, rank, dims)) return NULL;
  e->weak = false;
  return with_shape(S, t->scalar, false, rank, dims);
}

/* split(x): a tile of numbers whose last axis has length 2, taken apart into two values without
 * that axis (scalars of a [2] tile), which the call is unpacked into. */
static const KilnType *check_split(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type;
  if (t->kind != KILN_TYPE_TILE || t->elem_is_ptr || t->dims[t->rank - 1] != 2) {
    ERR(S, e->args[0]->span, "split expects a tile of numbers whose last axis is 2, got %s",
        tstr(S, t));
    return NULL;
  }
  const KilnType *half = with_shape(S, t->scalar, false, t->rank - 1, t->dims);
  const KilnType *types[2] = {half, half};
  return builtin_tuple(S, e, 2, types);
}

/* cat(a, b, axis?): two tiles of numbers of one shape in their common type (operand_type); the
 * axis (0 when absent, kept in e->ival) twice as long.  mlirgen joins them along a new axis
 * before `axis` and reshapes, so the rank is at most KILN_MAX_RANK - 1. */
static const KilnType *check_cat(Sema *S, KilnExpr *e) {
  const KilnType *ta = e->args[0]->type, *tb = e->args[1]->type;
  for (int i = 0; i < 2; i++) {
    const KilnType *ti = e->args[i]->type;
    if (ti->kind != KILN_TYPE_TILE || ti->elem_is_ptr) {
      ERR(S, e->args[i]->span, "cat expects tiles of numbers, got %s", tstr(S, ti));
      return NULL;
    }
  }
  if (ta->rank != tb->rank || memcmp(ta->dims, tb->dims, sizeof(int64_t) * (size_t)ta->rank)) {
    ERR(S, e->span, "cat needs tiles of one shape, got %s and %s", tstr(S, ta), tstr(S, tb));
    return NULL;
  }
  if (ta->rank >= KILN_MAX_RANK) {
    ERR(S, e->span, "cat of rank-%d tiles is not supported (at most rank %d)", ta->rank,
        KILN_MAX_RANK - 1);
    return NULL;
  }
  int64_t axis = 0;
  if (e->nargs > 2) {
    if (!const_arg(S, e, 2, "cat axis", &axis)) return NULL;
    if (axis < 0 || axis >= ta->rank) {
      ERR(S, e->args[2]->span, "cat axis %" PRId64 " is out of range for a rank-%d tile", axis,
          ta->rank);
      return NULL;
    }
  }
  const KilnType *t = elementwise_args(S, e, 0, 2, false, false);
  if (!t) return NULL;
  int64_t dims[KILN_MAX_RANK];
  memcpy(dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
  dims[axis] *= 2;
  if (!check_tile_elems(S, e->span, t->rank, dims)) return NULL;
  e->ival = axis;
  e->weak = false;
  return with_shape(S, t->scalar, false, t->rank, dims);
}

/* gather(src, index, axis): src a tile of numbers, index an integer tile of src's rank whose
 * shape is src's but along axis; the result is src's element type in index's shape.  The axis
 * stays in e->ival.  mlirgen compares each index with every position of src's axis (a tile one
 * rank higher), so the rank is at most KILN_MAX_RANK - 1. */
static const KilnType *check_gather(Sema *S, KilnExpr *e) {
  const KilnType *src = e->args[0]->type, *idx = e->args[1]->type;
  if (src->kind != KILN_TYPE_TILE || src->elem_is_ptr) {
    ERR(S, e->args[0]->span, "gather source must be a tile of numbers, got %s", tstr(S, src));
    return NULL;
  }
  if (idx->kind != KILN_TYPE_TILE || idx->elem_is_ptr || !kiln_scalar_is_int(idx->scalar) ||
      idx->scalar == KILN_SCALAR_I1) {
    ERR(S, e->args[1]->span, "gather index must be a tile of integers, got %s", tstr(S, idx));
    return NULL;
  }
  if (src->rank >= KILN_MAX_RANK) {
    ERR(S, e->span, "gather of rank-%d tiles is not supported (at most rank %d)", src->rank,
        KILN_MAX_RANK - 1);
    return NULL;
  }
  int64_t axis;
  if (!const_arg(S, e, 2, "gather axis", &axis)) return NULL;
  if (axis < 0 || axis >= src->rank) {
    ERR(S, e->args[2]->span, "gather axis %" PRId64 " is out of range for a rank-%d tile", axis,
        src->rank);
    return NULL;
  }
  bool fits = idx->rank == src->rank;
  for (int d = 0; fits && d < src->rank; d++) fits = d == axis || idx->dims[d] == src->dims[d];
  if (!fits) {
    ERR(S, e->span, "gather index %s must have source %s's shape but along axis %" PRId64,
        tstr(S, idx), tstr(S, src), axis);
    return NULL;
  }
  int64_t dims[KILN_MAX_RANK + 1];
  memcpy(dims, idx->dims, sizeof(int64_t) * (size_t)idx->rank);
  dims[idx->rank] = src->dims[axis];
  if (!check_tile_elems(S, e->span, idx->rank + 1, dims)) return NULL;
  e->ival = axis;
  return with_shape(S, src->scalar, false, idx->rank, idx->dims);
}

/* histogram(x, num_bins, mask?): x a rank-1 integer tile, num_bins a positive constant, mask
 * (i1) broadcast to x; an i32 tile of num_bins counts.  num_bins stays in e->ival. */
static const KilnType *check_histogram(Sema *S, KilnExpr *e) {
  const KilnType *x = e->args[0]->type;
  if (x->kind != KILN_TYPE_TILE || x->elem_is_ptr || x->rank != 1 ||
      !kiln_scalar_is_int(x->scalar) || x->scalar == KILN_SCALAR_I1) {
    ERR(S, e->args[0]->span, "histogram expects a rank-1 tile of integers, got %s", tstr(S, x));
    return NULL;
  }
  int64_t bins;
  if (!const_arg(S, e, 1, "histogram num_bins", &bins)) return NULL;
  if (bins < 1 || bins > MAX_TILE_ELEMS) {
    ERR(S, e->args[1]->span, "histogram num_bins must be 1 to %" PRId64 ", got %" PRId64,
        MAX_TILE_ELEMS, bins);
    return NULL;
  }
  int64_t dims[2] = {x->dims[0], bins};
  if (!check_tile_elems(S, e->span, 2, dims)) return NULL;
  if (e->nargs > 2) {
    const KilnType *m = e->args[2]->type;
    if (!is_numeric(m) || m->scalar != KILN_SCALAR_I1 || rank_of(m) > 1 ||
        (rank_of(m) == 1 && m->dims[0] != x->dims[0] && m->dims[0] != 1)) {
      ERR(S, e->args[2]->span, "histogram mask must be i1 of x's shape %s (or one value), got %s",
          tstr(S, x), tstr(S, m));
      return NULL;
    }
  }
  e->ival = bins;
  return with_shape(S, KILN_SCALAR_I32, false, 1, &bins);
}

/* umulhi(a, b): 32-bit integers (i32 signed, u32 unsigned) in their common type. */
static const KilnType *check_umulhi(Sema *S, KilnExpr *e) {
  const KilnType *t = elementwise(S, e, 0, false, true);
  if (!t) return NULL;
  if (t->scalar != KILN_SCALAR_I32 && t->scalar != KILN_SCALAR_U32) {
    ERR(S, e->span, "umulhi needs i32 or u32 arguments, got %s", kiln_scalar_name(t->scalar));
    return NULL;
  }
  return t;
}

/* swizzle2d(i, j, size_i, size_j, size_g): integers, scalars or tiles, in their common type and
 * shape; two values of it, which the call is unpacked into. */
static const KilnType *check_swizzle2d(Sema *S, KilnExpr *e) {
  const KilnType *t = elementwise(S, e, 0, false, true);
  if (!t) return NULL;
  if (t->scalar == KILN_SCALAR_I1) {
    ERR(S, e->span, "swizzle2d needs integer arguments, got i1");
    return NULL;
  }
  const KilnType *types[2] = {t, t};
  return builtin_tuple(S, e, 2, types);
}

/* reshape(x, [shape]): a tile (numbers) and a shape of as many elements; row-major order is kept. */
static const KilnType *check_reshape(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type, *sh = e->args[1]->type;
  if (t->kind != KILN_TYPE_TILE || t->elem_is_ptr) {
    ERR(S, e->args[0]->span, "reshape expects a tile of numbers, got %s", tstr(S, t));
    return NULL;
  }
  if (sh->kind != KILN_TYPE_SHAPE) {
    ERR(S, e->args[1]->span, "reshape expects a shape list like [64, 32] as argument 2");
    return NULL;
  }
  int64_t from = 1, to = 1;
  for (int i = 0; i < t->rank; i++) from *= t->dims[i];
  for (int i = 0; i < sh->rank; i++) to *= sh->dims[i];
  if (from != to) {
    ERR(S, e->span, "cannot reshape %s (%" PRId64 " elements) to %s (%" PRId64 ")", tstr(S, t),
        from, shstr(S, sh->dims, sh->rank), to);
    return NULL;
  }
  return with_shape(S, t->scalar, false, sh->rank, sh->dims);
}

/* static_assert(cond, "message"): cond must be a compile-time constant (checked per binding of
 * the consts, so `static_assert(BLOCK % 16 == 0, ...)` speaks for each configuration); false
 * is an error at the call that shows the message. */
static const KilnType *check_static_assert(Sema *S, KilnExpr *e) {
  KilnExpr *c = e->args[0];
  if (!c->is_const || c->type->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(c->type->scalar)) {
    ERR(S, c->span,
        "static_assert condition must be a compile-time constant (of consts and literals)");
    return NULL;
  }
  if (e->nargs > 1 && e->args[1]->kind != KILN_EXPR_STRING) {
    ERR(S, e->args[1]->span, "static_assert message must be a string literal");
    return NULL;
  }
  if (c->ival == 0) {
    if (e->nargs > 1)
      ERR(S, e->span, "static assertion failed: %s", e->args[1]->name);
    else
      ERR(S, e->span, "static assertion failed");
    return NULL;
  }
  return kiln_type_void();
}

/* The permutation list of trans(x, [p0, p1, ...]): constant integers, 0 included (a shape
 * list would refuse it).  Its type is a list type holding the values. */
static bool check_perm_list(Sema *S, KilnExpr *l) {
  KilnType *t = kiln_type_new(S->ar, NULL);
  t->kind = KILN_TYPE_SHAPE;
  if (l->nargs < 1 || l->nargs > KILN_MAX_RANK) {
    ERR(S, l->span, "a trans permutation needs 1 to %d axes, got %d", KILN_MAX_RANK, l->nargs);
    return false;
  }
  for (int i = 0; i < l->nargs; i++) {
    KilnExpr *d = l->args[i];
    const KilnType *dt = d->kw ? NULL : value(S, d);
    if (!dt || !d->is_const || dt->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(dt->scalar)) {
      ERR(S, d->span, "trans permutation entries must be compile-time integer constants");
      return false;
    }
    t->dims[i] = d->ival;
  }
  t->rank = l->nargs;
  l->type = t;
  return true;
}

/* trans(x, perm?): without perm a 2-D tile transposed; with perm (a permutation of x's axes, 2-D
 * or 3-D) result axis i is x's axis perm[i], as numpy's transpose.  The permutation is kept in
 * e->ival as digits (perm[0] * 100 + perm[1] * 10 + perm[2]) for mlirgen.  3-D tiles of pointers
 * are refused: an odd permutation is a masked max along an axis (mlirgen), which pointers lack. */
static const KilnType *check_trans(Sema *S, KilnExpr *e) {
  const KilnType *t = e->args[0]->type;
  if (t->kind != KILN_TYPE_TILE || t->rank < 2 || t->rank > 3) {
    ERR(S, e->args[0]->span, "trans expects a 2-D or 3-D tile, got %s", tstr(S, t));
    return NULL;
  }
  int64_t perm[3] = {1, 0, 2};
  if (e->nargs > 1) {
    const KilnType *p = e->args[1]->type;
    if (e->args[1]->kind != KILN_EXPR_LIST || p->kind != KILN_TYPE_SHAPE) {
      ERR(S, e->args[1]->span, "trans permutation must be a list of axes, like [0, 2, 1]");
      return NULL;
    }
    bool seen[3] = {false, false, false}, ok = p->rank == t->rank;
    for (int i = 0; ok && i < p->rank; i++) {
      ok = p->dims[i] >= 0 && p->dims[i] < t->rank && !seen[p->dims[i]];
      if (ok) seen[p->dims[i]] = true, perm[i] = p->dims[i];
    }
    if (!ok) {
      ERR(S, e->args[1]->span,
          "trans permutation must hold each axis of the rank-%d tile once (0 to %d)", t->rank,
          t->rank - 1);
      return NULL;
    }
  } else if (t->rank != 2) {
    ERR(S, e->span, "trans of a 3-D tile needs its permutation, like trans(x, [0, 2, 1])");
    return NULL;
  }
  if (t->rank == 3 && t->elem_is_ptr) {
    ERR(S, e->args[0]->span,
        "trans of a 3-D tile of pointers is not supported; permute the offsets instead");
    return NULL;
  }
  int64_t d[3];
  for (int i = 0; i < t->rank; i++) d[i] = t->dims[perm[i]];
  e->ival = perm[0] * 100 + perm[1] * 10 + (t->rank == 3 ? perm[2] : 0);
  return with_shape(S, t->scalar, t->elem_is_ptr, t->rank, d);
}

/* device_print("text", x): the text a string literal (it becomes part of a printf format, so
 * mlirgen escapes its '%'), x a number or a tile of numbers. */
static const KilnType *check_device_print(Sema *S, KilnExpr *e) {
  if (e->args[0]->kind != KILN_EXPR_STRING) {
    ERR(S, e->args[0]->span, "device_print text must be a string literal");
    return NULL;
  }
  if (!is_numeric(e->args[1]->type)) {
    ERR(S, e->args[1]->span, "device_print prints a number or a tile of numbers, got %s",
        tstr(S, e->args[1]->type));
    return NULL;
  }
  return kiln_type_void();
}

/* device_assert(cond, "msg"?): cond an i1 scalar or tile (a comparison), msg a string literal
 * (mlirgen puts the call's location before it). */
static const KilnType *check_device_assert(Sema *S, KilnExpr *e) {
  const KilnType *c = e->args[0]->type;
  if (!is_numeric(c) || c->scalar != KILN_SCALAR_I1) {
    ERR(S, e->args[0]->span,
        "device_assert condition must be i1 (a comparison, scalar or tile), got %s", tstr(S, c));
    return NULL;
  }
  if (e->nargs > 1 && e->args[1]->kind != KILN_EXPR_STRING) {
    ERR(S, e->args[1]->span, "device_assert message must be a string literal");
    return NULL;
  }
  return kiln_type_void();
}

/* ---------------------------------------------------------------- tensor descriptors */

static void check_binding(Sema *S, KilnStmt *s, bool init_checked);

/* A list argument of run-time integer scalars (a descriptor's shape, strides or offsets), each
 * element checked as a value: `rank` of them. */
static bool int_list(Sema *S, const KilnExpr *call, KilnExpr *list, const char *what, int rank) {
  if (list->kind != KILN_EXPR_LIST) {
    ERR(S, list->span, "%s's %s must be a list of %d integer%s, as in [M, N]", call->name, what,
        rank, rank == 1 ? "" : "s");
    return false;
  }
  bool ok = true;
  for (int i = 0; i < list->nargs; i++) {
    KilnExpr *x = list->args[i];
    if (x->kw) {
      ERR(S, x->kw_span, "a list holds values, not 'name = value' pairs");
      ok = false;
      continue;
    }
    const KilnType *t = value(S, x);
    if (t && (t->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(t->scalar) ||
              t->scalar == KILN_SCALAR_I1)) {
      ERR(S, x->span, "%s's %s must be integer scalars, got %s", call->name, what, tstr(S, t));
      t = NULL;
    }
    ok = t && ok;
  }
  if (ok && list->nargs != rank) {
    ERR(S, list->span, "%s's %s has %d entr%s where the block has %d dimension%s", call->name, what,
        list->nargs, list->nargs == 1 ? "y" : "ies", rank, rank == 1 ? "" : "s");
    ok = false;
  }
  KilnType *tt = kiln_arena_alloc(S->ar, sizeof *tt); /* typed, as every checked node is */
  tt->kind = KILN_TYPE_TUPLE;
  tt->rank = list->nargs;
  list->type = tt;
  return ok;
}

/* A `let` of sema's own, bound to init (checked already or not), appended to stmts; its name
 * cannot be spelled, and its uses are bound to it (part_ref in tensor_desc.c). */
static KilnDecl *hidden_let(Sema *S, KilnPtrVec *stmts, const char *what, KilnExpr *init,
                            bool checked) {
  KilnStmt *st = kiln_arena_alloc(S->ar, sizeof *st);
  st->kind = KILN_STMT_LET;
  st->span = init->span;
  KilnDecl *d = kiln_arena_alloc(S->ar, sizeof *d);
  d->kind = KILN_DECL_LET;
  d->name = kiln_arena_printf(S->ar, "%s#%d", what, S->next_id);
  d->span = init->span;
  st->decl = d;
  st->init = init;
  check_binding(S, st, checked);
  kiln_vec_push(S->ar, stmts, st);
  return d->type ? d : NULL;
}

static KilnStmt *hidden_stmt(Sema *S, KilnPtrVec *stmts, KilnExpr *x) {
  KilnStmt *st = kiln_arena_alloc(S->ar, sizeof *st);
  st->kind = KILN_STMT_EXPR;
  st->span = x->span;
  st->value = x;
  kiln_vec_push(S->ar, stmts, st);
  return st;
}

static void set_inlined(Sema *S, KilnExpr *e, KilnPtrVec *stmts) {
  e->inlined = kiln_arena_alloc(S->ar, sizeof *e->inlined);
  e->inlined->stmts = (KilnStmt **)stmts->items;
  e->inlined->nstmts = stmts->n;
  e->inlined->span = e->span;
}

/* make_tensor_descriptor(base, shape, strides, block_shape): the parts bound to hidden `let`s
 * (the call's inlined block, emitted where the descriptor is made), the descriptor in the type.
 * Its rules are Triton's (TMA's): the last stride is 1, the others multiples of 16 bytes, checked
 * here when constant and by a device_assert at run time otherwise, after which they are promised
 * (multiple_of), so that rows are moved by the widest accesses the target has. */
static const KilnType *check_make_desc(Sema *S, KilnExpr *e) {
  KilnExpr **a = e->args;
  if (a[0]->type->kind != KILN_TYPE_PTR) {
    ERR(S, a[0]->span, "make_tensor_descriptor's base must be a pointer, got %s",
        tstr(S, a[0]->type));
    return NULL;
  }
  if (a[3]->kind != KILN_EXPR_LIST) {
    ERR(S, a[3]->span,
        "make_tensor_descriptor's block_shape must be a list of compile-time "
        "constants, as in [BM, BK]");
    return NULL;
  }
  const KilnType *blk = check_expr(S, a[3]);
  if (!blk) return NULL;
  int rank = blk->rank;
  bool ok = int_list(S, e, a[1], "shape", rank);
  if (!int_list(S, e, a[2], "strides", rank) || !ok) return NULL;
  KilnExpr *last = a[2]->args[rank - 1];
  if (!last->is_const || last->ival != 1) {
    ERR(S, last->span,
        "a tensor descriptor's last stride must be the constant 1 (its rows are "
        "contiguous)");
    return NULL;
  }
  KilnScalarKind elem = a[0]->type->scalar;
  int bytes = kiln_scalar_bits(elem) < 8 ? 1 : kiln_scalar_bits(elem) / 8;
  int align = 16 / bytes;
  for (int k = 0; k + 1 < rank; k++) {
    KilnExpr *s = a[2]->args[k];
    if (s->is_const && s->ival % align != 0) {
      ERR(S, s->span,
          "a tensor descriptor's strides must be multiples of 16 bytes (%d %s elements), got "
          "%" PRId64,
          align, kiln_scalar_name(elem), s->ival);
      return NULL;
    }
  }

  KilnTensorDesc *d = kiln_arena_alloc(S->ar, sizeof *d);
  d->rank = rank;
  d->elem = elem;
  KilnPtrVec stmts = {0};
  ok = (d->base = hidden_let(S, &stmts, "base", a[0], true)) != NULL;
  for (int k = 0; k < rank; k++) {
    d->block[k] = blk->dims[k];
    ok = (d->shape[k] = hidden_let(S, &stmts, "shape", a[1]->args[k], true)) && ok;
  }
  for (int k = 0; k + 1 < rank && ok; k++) {
    KilnExpr *s = a[2]->args[k];
    KilnDecl *raw = hidden_let(S, &stmts, "stride", s, true);
    if (raw && !s->is_const) {
      check_expr(
          S,
          hidden_stmt(S, &stmts, kiln_tensor_desc_stride_check(S->ar, raw, align, s->span))->value);
      raw = hidden_let(S, &stmts, "stride",
                       kiln_tensor_desc_stride_hint(S->ar, raw, align, s->span), false);
    }
    ok = (d->strides[k] = raw) != NULL;
  }
  if (!ok) return NULL;
  set_inlined(S, e, &stmts);
  KilnType *t = kiln_type_new(S->ar, NULL);
  t->kind = KILN_TYPE_DESC;
  t->scalar = elem;
  t->rank = rank;
  memcpy(t->dims, d->block, sizeof d->block);
  t->desc = d;
  return t;
}

/* load_tensor_descriptor(desc, offsets) / store_tensor_descriptor(desc, offsets, value): the
 * offsets (and value) bound once, each dim's indices bound, then the masked load or store
 * (tensor_desc.c), checked like the user's own code at the call's span. */
static const KilnType *check_desc_access(Sema *S, KilnExpr *e) {
  KilnExpr **a = e->args;
  bool store = e->builtin == KILN_BUILTIN_STORE_TENSOR_DESCRIPTOR;
  if (a[0]->type->kind != KILN_TYPE_DESC) {
    ERR(S, a[0]->span,
        "%s expects a tensor descriptor (make_tensor_descriptor) as argument 1, "
        "got %s",
        e->name, tstr(S, a[0]->type));
    return NULL;
  }
  const KilnTensorDesc *d = a[0]->type->desc;
  if (!int_list(S, e, a[1], "offsets", d->rank)) return NULL;
  KilnPtrVec stmts = {0};
  KilnDecl *offs[KILN_MAX_RANK], *idx[KILN_MAX_RANK];
  bool ok = true;
  for (int k = 0; k < d->rank; k++)
    ok = (offs[k] = hidden_let(S, &stmts, "offset", a[1]->args[k], true)) && ok;
  for (int k = 0; k < d->rank && ok; k++)
    ok = (idx[k] = hidden_let(S, &stmts, "index",
                              kiln_tensor_desc_indices(S->ar, d, k, offs[k], a[1]->args[k]->span),
                              false)) != NULL;
  KilnDecl *v = store && ok ? hidden_let(S, &stmts, "value", a[2], true) : NULL;
  if (!ok || (store && !v)) return NULL;
  KilnExpr *access = kiln_tensor_desc_access(S->ar, d, idx, v, e->span);
  const KilnType *t;
  if (store) {
    t = check_expr(S, hidden_stmt(S, &stmts, access)->value);
  } else {
    t = value(S, access);
    e->result = access;
  }
  if (!t) return NULL;
  set_inlined(S, e, &stmts);
  return t;
}

static const KilnType *check_builtin(Sema *S, KilnExpr *e) {
  KilnExpr **a = e->args;
  int64_t v, w;
  switch (e->builtin) {
  case KILN_BUILTIN_PROGRAM_ID:
  case KILN_BUILTIN_NUM_PROGRAMS: {
    char what[64];
    snprintf(what, sizeof what, "%s axis", e->name);
    if (!const_arg(S, e, 0, what, &v)) return NULL;
    if (v < 0 || v > 2) {
      ERR(S, a[0]->span, "%s axis must be 0, 1 or 2, got %" PRId64, e->name, v);
      return NULL;
    }
    return kiln_type_scalar(KILN_SCALAR_I32);
  }
  case KILN_BUILTIN_ARANGE:
    if (!const_arg(S, e, 0, "arange start", &v) || !const_arg(S, e, 1, "arange end", &w))
      return NULL;
    if (v < INT32_MIN || w > INT32_MAX || w - v > MAX_TILE_ELEMS) {
      ERR(S, e->span, "arange(%" PRId64 ", %" PRId64 ") is out of range", v, w);
      return NULL;
    }
    if (w <= v) {
      ERR(S, e->span,
          "arange(%" PRId64 ", %" PRId64 ") is empty: the end must be greater than the start", v,
          w);
      return NULL;
    }
    {
      int64_t n = w - v;
      return with_shape(S, KILN_SCALAR_I32, false, 1, &n);
    }
  case KILN_BUILTIN_ZEROS:
  case KILN_BUILTIN_FULL: return check_shape_ctor(S, e);
  case KILN_BUILTIN_LOAD:
  case KILN_BUILTIN_STORE:
  case KILN_BUILTIN_ATOMIC_ADD:
  case KILN_BUILTIN_ATOMIC_MAX:
  case KILN_BUILTIN_ATOMIC_MIN:
  case KILN_BUILTIN_ATOMIC_XCHG: return check_memory(S, e);
  case KILN_BUILTIN_ATOMIC_CAS: return check_cas(S, e);
  case KILN_BUILTIN_DOT: return check_dot(S, e);
  case KILN_BUILTIN_MAX:
  case KILN_BUILTIN_MIN:
    if (a[0]->type->kind == KILN_TYPE_SCALAR) return check_scalar_minmax(S, e);
    return check_reduce(S, e);
  case KILN_BUILTIN_SUM:
  case KILN_BUILTIN_ARGMAX:
  case KILN_BUILTIN_ARGMIN: return check_reduce(S, e);
  case KILN_BUILTIN_WHERE: return check_where(S, e);
  case KILN_BUILTIN_MAXIMUM:
  case KILN_BUILTIN_MINIMUM: return elementwise(S, e, 0, false, false);
  case KILN_BUILTIN_FMA: {
    const KilnType *t = elementwise(S, e, 0, false, false);
    if (t && t->scalar == KILN_SCALAR_I1) { /* a product and a sum of booleans mean nothing */
      ERR(S, e->span, "fma needs integer or float arguments, got i1");
      return NULL;
    }
    return t;
  }
  case KILN_BUILTIN_POW: {
    const KilnType *t = elementwise(S, e, 0, true, false);
    if (t) e->weak = false;
    return t;
  }
  case KILN_BUILTIN_ZEROS_LIKE:
  case KILN_BUILTIN_FULL_LIKE: return check_like(S, e);
  case KILN_BUILTIN_EXPAND_DIMS: return check_expand_dims(S, e);
  case KILN_BUILTIN_BROADCAST_TO: return check_broadcast_to(S, e);
  case KILN_BUILTIN_STATIC_ASSERT: return check_static_assert(S, e);
  case KILN_BUILTIN_DEVICE_PRINT: return check_device_print(S, e);
  case KILN_BUILTIN_DEVICE_ASSERT: return check_device_assert(S, e);
  case KILN_BUILTIN_MAKE_TENSOR_DESCRIPTOR: return check_make_desc(S, e);
  case KILN_BUILTIN_LOAD_TENSOR_DESCRIPTOR:
  case KILN_BUILTIN_STORE_TENSOR_DESCRIPTOR: return check_desc_access(S, e);
  case KILN_BUILTIN_SORT: return check_sort(S, e);
  case KILN_BUILTIN_RESHAPE: return check_reshape(S, e);
  case KILN_BUILTIN_FLIP:
  case KILN_BUILTIN_CUMSUM:
  case KILN_BUILTIN_CUMPROD: return check_axis_op(S, e);
  case KILN_BUILTIN_SCAN:
  case KILN_BUILTIN_REDUCE: return check_combine_op(S, e);
  case KILN_BUILTIN_ABS: return elementwise(S, e, 0, false, false);
  case KILN_BUILTIN_EXP:
  case KILN_BUILTIN_EXP2:
  case KILN_BUILTIN_LOG:
  case KILN_BUILTIN_LOG2:
  case KILN_BUILTIN_SQRT:
  case KILN_BUILTIN_RSQRT:
  case KILN_BUILTIN_TANH:
  case KILN_BUILTIN_ERF:
  case KILN_BUILTIN_SIGMOID:
  case KILN_BUILTIN_SIN:
  case KILN_BUILTIN_COS:
  case KILN_BUILTIN_FLOOR:
  case KILN_BUILTIN_CEIL: {
    const KilnType *t = elementwise(S, e, 0, true, false);
    if (t) e->weak = false;
    return t;
  }
  case KILN_BUILTIN_TRANS: return check_trans(S, e);
  case KILN_BUILTIN_CDIV: return check_cdiv(S, e);
  case KILN_BUILTIN_JOIN:
  case KILN_BUILTIN_INTERLEAVE: return check_join(S, e);
  case KILN_BUILTIN_SPLIT: return check_split(S, e);
  case KILN_BUILTIN_CAT: return check_cat(S, e);
  case KILN_BUILTIN_CLAMP: {
    const KilnType *t = elementwise(S, e, 0, false, false);
    if (t && t->scalar == KILN_SCALAR_I1) {
      ERR(S, e->span, "clamp needs integer or float arguments, got i1");
      return NULL;
    }
    return t;
  }
  case KILN_BUILTIN_UMULHI: return check_umulhi(S, e);
  case KILN_BUILTIN_GATHER: return check_gather(S, e);
  case KILN_BUILTIN_HISTOGRAM: return check_histogram(S, e);
  case KILN_BUILTIN_SWIZZLE2D: return check_swizzle2d(S, e);
  case KILN_BUILTIN_RAND:
  case KILN_BUILTIN_RANDINT:
  case KILN_BUILTIN_RANDN: {
    const KilnType *seed = a[0]->type, *offs = a[1]->type;
    if (seed->kind != KILN_TYPE_SCALAR || !kiln_scalar_is_int(seed->scalar) ||
        (seed->scalar != KILN_SCALAR_I32 && !a[0]->weak)) {
      ERR(S, a[0]->span, "%s seed must be an i32 scalar, got %s", e->name, tstr(S, seed));
      return NULL;
    }
    if (offs->kind != KILN_TYPE_TILE || offs->elem_is_ptr || offs->scalar != KILN_SCALAR_I32) {
      ERR(S, a[1]->span, "%s offsets must be an i32 tile, got %s", e->name, tstr(S, offs));
      return NULL;
    }
    retype_literal(S, a[0], KILN_SCALAR_I32);
    return like_shape(S, e->builtin == KILN_BUILTIN_RANDINT ? KILN_SCALAR_I32 : KILN_SCALAR_F32,
                      false, offs);
  }
  case KILN_BUILTIN_MULTIPLE_OF:
  case KILN_BUILTIN_CONTIGUOUS:
  case KILN_BUILTIN_MAX_CONTIGUOUS: {
    const KilnType *t = a[0]->type;
    bool need_tile = e->builtin != KILN_BUILTIN_MULTIPLE_OF;
    if (!is_numeric(t) || !kiln_scalar_is_int(t->scalar) ||
        (need_tile && t->kind != KILN_TYPE_TILE)) {
      ERR(S, a[0]->span, "%s expects an integer %s, got %s", e->name,
          need_tile ? "tile" : "scalar or tile", tstr(S, t));
      return NULL;
    }
    char what[64];
    snprintf(what, sizeof what, "%s hint", e->name);
    if (!const_arg(S, e, 1, what, &v)) return NULL;
    if (v <= 0) {
      ERR(S, a[1]->span, "%s hint must be positive, got %" PRId64, e->name, v);
      return NULL;
    }
    e->is_const = a[0]->is_const;
    e->ival = a[0]->ival;
    return t;
  }
  case KILN_BUILTIN_NONE:
  case KILN_BUILTIN_COUNT: break;
  }
  KILN_ASSERT(!"unhandled builtin");
  return NULL;
}

/* ---------------------------------------------------------------- functions */

static void check_stmt(Sema *S, KilnStmt *s);
static void check_binding(Sema *S, KilnStmt *s, bool init_checked);

/* Matches a call's arguments to parameter names: positional ones in order, then `name = value`
 * ones by name.  bound[i] gets the argument of parameter i (NULL: not given).  False when an
 * argument fits no parameter (reported). */
static bool match_args(Sema *S, KilnExpr *e, const char *const *names, int nnames,
                       KilnExpr **bound) {
  bool ok = true, seen_kw = false;
  int pos = 0;
  for (int i = 0; i < nnames; i++) bound[i] = NULL;
  for (int i = 0; i < e->nargs; i++) {
    KilnExpr *a = e->args[i];
    int j = pos;
    if (a->kw) {
      seen_kw = true;
      for (j = 0; j < nnames && strcmp(names[j], a->kw) != 0; j++);
      if (j == nnames) {
        ERR(S, a->kw_span, "'%s' has no parameter named '%s'", e->name, a->kw);
        ok = false;
        continue;
      }
      if (bound[j]) {
        ERR(S, a->kw_span, "parameter '%s' of '%s' is given twice", a->kw, e->name);
        ok = false;
        continue;
      }
    } else if (seen_kw) {
      ERR(S, a->span, "a positional argument cannot follow a keyword argument");
      ok = false;
      continue;
    } else if (pos++ >= nnames) {
      ERR(S, e->span, "'%s' takes %d argument%s, got %d", e->name, nnames, nnames == 1 ? "" : "s",
          e->nargs);
      return false;
    }
    bound[j] = a;
  }
  return ok;
}

/* The `let` that binds a parameter of an inlined call (a copy per call). */
static KilnStmt *param_let(Sema *S, const KilnFuncParam *p, KilnExpr *init) {
  KilnStmt *st = kiln_arena_alloc(S->ar, sizeof *st);
  st->kind = KILN_STMT_LET;
  st->span = p->span;
  KilnDecl *d = kiln_arena_alloc(S->ar, sizeof *d);
  d->kind = KILN_DECL_LET;
  d->name = p->name;
  d->span = p->span;
  d->has_annot = p->has_annot;
  d->annot = p->annot;
  st->decl = d;
  st->init = init;
  return st;
}

/* `return a, b;`: each value checked; the type says how many (only unpacking takes it). */
static const KilnType *check_tuple(Sema *S, KilnExpr *list) {
  bool ok = true;
  for (int i = 0; i < list->nargs; i++) ok = value(S, list->args[i]) && ok;
  if (!ok) return NULL;
  KilnType *t = kiln_arena_alloc(S->ar, sizeof *t);
  t->kind = KILN_TYPE_TUPLE;
  t->rank = list->nargs;
  list->type = t;
  return t;
}

/* call = IDENT "(" args ")" of a function: the arguments are checked in the caller's scope; then,
 * in a scope of its own (the caller's names are out of sight), a copy of the function binds its
 * parameters as `let`s (defaults checked there, after the parameters before them) and checks its
 * body and result for these arguments.  mlirgen emits the copy in place of the call: the
 * function is inlined, once per call, with the types of that call. */
static const KilnType *check_func_call(Sema *S, KilnExpr *e, const KilnFunc *f) {
  for (int i = 0; i < S->ncalls; i++)
    if (S->calls[i] == f) {
      const KilnFunc *via = S->calls[S->ncalls - 1];
      if (via == f)
        ERR(S, e->span, "'%s' calls itself: functions are inlined, so recursion is not supported",
            f->name);
      else
        ERR(S, e->span,
            "'%s' calls itself (through %s): functions are inlined, so recursion is "
            "not supported",
            f->name, via->name);
      return NULL;
    }
  if (S->ncalls == MAX_INLINE_DEPTH || ++S->ninlined > MAX_INLINED_CALLS) {
    ERR(S, e->span,
        "too many nested function calls to inline (more than %d deep or %d in a kernel)",
        MAX_INLINE_DEPTH, MAX_INLINED_CALLS);
    return NULL;
  }
  const char **names = kiln_arena_alloc(S->ar, sizeof *names * (size_t)(f->nparams + 1));
  KilnExpr **bound = kiln_arena_alloc(S->ar, sizeof *bound * (size_t)(f->nparams + 1));
  for (int i = 0; i < f->nparams; i++) names[i] = f->params[i].name;
  bool ok = match_args(S, e, names, f->nparams, bound);
  for (int i = 0; i < f->nparams && ok; i++)
    if (!bound[i] && !f->params[i].def) {
      ERR(S, e->span, "missing argument '%s' of '%s'", f->params[i].name, f->name);
      ok = false;
    }
  for (int i = 0; i < e->nargs; i++) {
    /* a tensor descriptor passes as itself: the parameter's `let` takes it */
    const KilnType *t = check_expr(S, e->args[i]);
    if (!t || (t->kind != KILN_TYPE_DESC && !need_value(S, e->args[i]))) ok = false;
  }
  if (!ok) return NULL;

  KilnPtrVec names_saved = S->names, shadowed_saved = S->shadowed;
  KilnNameMap visible_saved = S->visible;
  int start_saved = S->scope_start;
  S->names = S->shadowed = (KilnPtrVec){0};
  S->visible = (KilnNameMap){0};
  S->scope_start = 0;
  S->calls[S->ncalls++] = f;

  KilnPtrVec stmts = {0};
  size_t errors_before = S->c->nerrors;
  for (int i = 0; i < f->nparams; i++) {
    bool given = bound[i] != NULL;
    KilnStmt *st = param_let(S, &f->params[i],
                             given ? bound[i] : kiln_ast_clone_expr(S->ar, f->params[i].def));
    check_binding(S, st, given);
    kiln_vec_push(S->ar, &stmts, st);
  }
  KilnBlock *body = kiln_ast_clone_block(S->ar, f->body);
  for (int i = 0; i < body->nstmts; i++) {
    check_stmt(S, body->stmts[i]);
    kiln_vec_push(S->ar, &stmts, body->stmts[i]);
  }
  KilnExpr *res = kiln_ast_clone_expr(S->ar, f->result);
  const KilnType *t = !res ? kiln_type_void() : res->tuple ? check_tuple(S, res) : value(S, res);

  S->ncalls--;
  S->names = names_saved;
  S->shadowed = shadowed_saved;
  S->visible = visible_saved;
  S->scope_start = start_saved;
  if (S->c->nerrors != errors_before) {
    /* say which call made the body's types what they were */
    kiln_diag_add(S->c, KILN_SEV_NOTE, e->span,
                  kiln_arena_printf(S->ar, "in this call of '%s'", f->name));
    return NULL;
  }
  e->inlined = kiln_arena_alloc(S->ar, sizeof *e->inlined);
  e->inlined->stmts = (KilnStmt **)stmts.items;
  e->inlined->nstmts = stmts.n;
  e->inlined->span = f->body->span;
  e->result = res;
  if (res && t) {
    e->is_const = res->is_const;
    e->ival = res->ival;
    e->weak = res->weak;
  }
  return t;
}

/* ---------------------------------------------------------------- calls */

/* The parameter names of builtin b, read from its signature in builtins.def ("load(ptr, mask?:
 * i1, other?) -> ..." gives ptr, mask, other), so keyword arguments need no second table. */
static int builtin_param_names(Sema *S, KilnBuiltin b, const char **names, int cap) {
  const char *p = strchr(kiln_builtin_signature(b), '(');
  int n = 0, depth = 0;
  bool want_name = true;
  for (p = p ? p + 1 : ""; *p && !(*p == ')' && depth == 0); p++) {
    if (*p == '[')
      depth++;
    else if (*p == ']')
      depth--;
    else if (*p == ',' && depth == 0)
      want_name = true;
    else if (want_name && (isalpha((unsigned char)*p) || *p == '_') && n < cap) {
      const char *q = p;
      while (isalnum((unsigned char)*q) || *q == '_') q++;
      names[n++] = kiln_arena_strndup(S->ar, p, (size_t)(q - p));
      want_name = false;
      p = q - 1;
    }
  }
  return n;
}

static bool has_optional_axis(KilnBuiltin b) {
  return b == KILN_BUILTIN_SUM || b == KILN_BUILTIN_MAX || b == KILN_BUILTIN_MIN ||
         b == KILN_BUILTIN_ARGMAX || b == KILN_BUILTIN_ARGMIN || b == KILN_BUILTIN_SORT ||
         b == KILN_BUILTIN_REDUCE;
}

/* The scans whose axis, when absent, is 0 (Triton's default), not "every axis". */
static bool has_default_axis(KilnBuiltin b) {
  return b == KILN_BUILTIN_CUMSUM || b == KILN_BUILTIN_CUMPROD;
}

/* `sum(x, keep_dims = true)` (a reduction over every axis that keeps them all as 1s), `sort(x,
 * descending = true)` (along the last axis), `reduce(x, combine = f)` (every element).  The one
 * gap the keywords may leave: the missing axis becomes the literal -1, which no source can write
 * (a written -1 is a negation), and which kiln_call_has_axis reads as "no axis"; for
 * `cumsum(x, reverse = true)` it becomes axis 0, the default. */
static void fill_axis(Sema *S, KilnExpr *e, KilnExpr **bound, int given) {
  bool dflt = has_default_axis(e->builtin);
  if (!(has_optional_axis(e->builtin) || dflt) || given < 3 || bound[1] || !bound[2]) return;
  KilnExpr *all = kiln_arena_alloc(&S->c->ar, sizeof *all);
  memset(all, 0, sizeof *all);
  all->kind = KILN_EXPR_INT;
  all->span = e->span;
  all->ival = dflt ? 0 : -1;
  bound[1] = all;
}

/* Builtins take keyword arguments by the names of their signatures (`load(p, mask = m, other =
 * 0.0)`); the arguments are put in positional order, which must leave no gap: an optional
 * argument is given only with the ones before it (load's `other` needs its `mask`). */
static bool builtin_keywords(Sema *S, KilnExpr *e) {
  bool any = false;
  for (int i = 0; i < e->nargs; i++) any |= e->args[i]->kw != NULL;
  if (!any) return true;
  const char *names[8] = {0};
  KilnExpr *bound[8] = {0};
  int n = builtin_param_names(S, e->builtin, names, 8);
  if (!match_args(S, e, names, n, bound)) return false;
  int given = 0;
  for (int i = 0; i < n; i++)
    if (bound[i]) given = i + 1;
  fill_axis(S, e, bound, given);
  for (int i = 0; i < given; i++)
    if (!bound[i]) {
      ERR(S, e->span, "'%s' needs its argument '%s' when a later one is given", e->name, names[i]);
      return false;
    }
  if (given == e->nargs && memcmp(bound, e->args, sizeof *bound * (size_t)given) == 0)
    return true; /* in order already (this node was checked before) */
  /* the order is the same under every binding, so it is fixed once, in the AST's arena */
  KilnExpr **args = kiln_arena_alloc(&S->c->ar, sizeof *args * (size_t)(given + 1));
  memcpy(args, bound, sizeof *args * (size_t)given);
  e->args = args;
  e->nargs = given;
  return true;
}

/* call = IDENT "(" [expr {"," expr}] ")" */
static const KilnType *check_call(Sema *S, KilnExpr *e) {
  e->builtin = find_builtin(e->name);
  if (!e->builtin) {
    const KilnFunc *f = kiln_func_find(S->c, e->name);
    if (f) return check_func_call(S, e, f);
    ERR(S, e->span, "unknown function '%s'", e->name);
    return NULL;
  }
  const BuiltinInfo *bi = &builtin_info[e->builtin];
  if (!builtin_keywords(S, e)) return NULL;
  if (e->nargs < bi->min_args || e->nargs > bi->max_args) {
    if (bi->min_args == bi->max_args)
      ERR(S, e->span, "'%s' takes %d argument%s, got %d", e->name, bi->min_args,
          bi->min_args == 1 ? "" : "s", e->nargs);
    else
      ERR(S, e->span, "'%s' takes %d to %d arguments, got %d", e->name, bi->min_args, bi->max_args,
          e->nargs);
    return NULL;
  }
  bool ok = true;
  for (int i = 0; i < e->nargs; i++) {
    KilnExpr *a = e->args[i];
    if ((e->builtin == KILN_BUILTIN_SCAN || e->builtin == KILN_BUILTIN_REDUCE) && i == 2)
      continue; /* a function's name, not a value: check_combine_op resolves it */
    if ((e->builtin == KILN_BUILTIN_SCAN || e->builtin == KILN_BUILTIN_REDUCE) && i == 0 &&
        a->kind == KILN_EXPR_LIST) { /* several tiles, each a value */
      for (int j = 0; j < a->nargs; j++) ok = value(S, a->args[j]) && ok;
      KilnType *tt = kiln_arena_alloc(S->ar, sizeof *tt); /* typed, as every checked node is */
      tt->kind = KILN_TYPE_TUPLE;
      tt->rank = a->nargs;
      a->type = tt;
      continue;
    }
    if (e->builtin == KILN_BUILTIN_TRANS && i == 1 && a->kind == KILN_EXPR_LIST) {
      ok &= check_perm_list(S, a);
      continue;
    }
    bool desc_access = e->builtin == KILN_BUILTIN_LOAD_TENSOR_DESCRIPTOR ||
                       e->builtin == KILN_BUILTIN_STORE_TENSOR_DESCRIPTOR;
    if (a->kind == KILN_EXPR_LIST &&
        ((e->builtin == KILN_BUILTIN_MAKE_TENSOR_DESCRIPTOR && i >= 1) || (desc_access && i == 1)))
      continue; /* lists of run-time values: check_make_desc and check_desc_access check them */
    const KilnType *t = check_expr(S, a);
    if (!t) {
      ok = false;
      continue;
    }
    /* shapes and type names are only legal where the builtin expects them */
    bool shape_ok =
        (i == 0 && (e->builtin == KILN_BUILTIN_ZEROS || e->builtin == KILN_BUILTIN_FULL)) ||
        (i == 1 && (e->builtin == KILN_BUILTIN_BROADCAST_TO || e->builtin == KILN_BUILTIN_RESHAPE));
    bool dtype_ok =
        (e->builtin == KILN_BUILTIN_ZEROS && i == 1) || (e->builtin == KILN_BUILTIN_FULL && i == 2);
    bool string_ok = (e->builtin == KILN_BUILTIN_STATIC_ASSERT && i == 1) ||
                     (e->builtin == KILN_BUILTIN_DEVICE_PRINT && i == 0) ||
                     (e->builtin == KILN_BUILTIN_DEVICE_ASSERT && i == 1);
    if ((t->kind == KILN_TYPE_SHAPE && shape_ok) || (t->kind == KILN_TYPE_DTYPE && dtype_ok) ||
        (t->kind == KILN_TYPE_STRING && string_ok) ||
        (t->kind == KILN_TYPE_DESC && desc_access && i == 0))
      continue;
    if (!need_value(S, a)) ok = false;
  }
  return ok ? check_builtin(S, e) : NULL;
}

static const KilnType *check_expr(Sema *S, KilnExpr *e) {
  /* results of an earlier sema call (another configuration) are stale */
  e->type = NULL;
  e->operand_type = NULL;
  e->is_const = false;
  e->weak = false;
  e->decl = NULL;
  e->inlined = NULL;
  e->result = NULL;
  const KilnType *t = NULL;
  switch (e->kind) {
  case KILN_EXPR_INT:
    t = kiln_type_scalar(KILN_SCALAR_I32);
    e->is_const = true;
    e->weak = true;
    if (!int_fits(e->ival, KILN_SCALAR_I32))
      t = kiln_type_scalar(KILN_SCALAR_I64); /* too big for i32: a weak i64 */
    break;
  case KILN_EXPR_FLOAT:
    t = kiln_type_scalar(KILN_SCALAR_F32);
    e->weak = true;
    break;
  case KILN_EXPR_BOOL:
    t = kiln_type_scalar(KILN_SCALAR_I1);
    e->is_const = true;
    break;
  case KILN_EXPR_NAME: t = check_name(S, e); break;
  case KILN_EXPR_UNARY: t = check_unary(S, e); break;
  case KILN_EXPR_BINARY: t = check_binary(S, e); break;
  case KILN_EXPR_CALL: t = check_call(S, e); break;
  case KILN_EXPR_INDEX: t = check_index(S, e); break;
  case KILN_EXPR_CAST: t = check_cast(S, e); break;
  case KILN_EXPR_LIST: t = check_list(S, e); break;
  case KILN_EXPR_TYPE: t = e->cast_to; break;
  case KILN_EXPR_STRING: {
    static const KilnType string_type = {.kind = KILN_TYPE_STRING};
    t = &string_type;
    break;
  }
  case KILN_EXPR_COUNT: KILN_ASSERT(!"bad expr kind");
  }
  if (!t) e->is_const = e->weak = false;
  e->type = t;
  return t;
}

/* ---------------------------------------------------------------- statements */

static void check_block(Sema *S, KilnBlock *b, bool top);

static void push_ctl(Sema *S, KilnStmt *s) {
  if (S->nctl == S->ctl_cap) {
    int cap = S->ctl_cap ? S->ctl_cap * 2 : 16;
    Ctl *n = kiln_arena_alloc(S->ar, sizeof(Ctl) * (size_t)cap);
    if (S->nctl) memcpy(n, S->ctl, sizeof(Ctl) * (size_t)S->nctl);
    S->ctl = n;
    S->ctl_cap = cap;
  }
  S->ctl[S->nctl++] = (Ctl){s, S->next_id, {0}};
}

static void pop_ctl(Sema *S) {
  Ctl *c = &S->ctl[--S->nctl];
  c->stmt->carried = (KilnDecl **)c->carried.items;
  c->stmt->ncarried = c->carried.n;
  /* a loop's exit flag is its first carried value: the one place where every backend's
     * rebuilt loop still has it, for kiln-exit-loops (the flag is a scalar, never flattened) */
  KilnDecl *flag = c->stmt->kind == KILN_STMT_FOR ? c->stmt->exit_flag : NULL;
  for (int i = 1; flag && i < c->stmt->ncarried; i++)
    if (c->stmt->carried[i] == flag) {
      memmove(c->stmt->carried + 1, c->stmt->carried, sizeof(KilnDecl *) * (size_t)i);
      c->stmt->carried[0] = flag;
    }
}

/* Records an assignment to `d` in every enclosing for/if that d was declared outside of. */
static void note_assignment(Sema *S, KilnDecl *d) {
  for (int i = 0; i < S->nctl; i++) {
    Ctl *c = &S->ctl[i];
    if (d->id >= c->first_id) continue;
    bool seen = false;
    for (int j = 0; j < c->carried.n && !seen; j++) seen = c->carried.items[j] == d;
    if (!seen) kiln_vec_push(S->ar, &c->carried, d);
  }
}

/* A value may go into a slot of type `to` if the types are equal, or if it is a weak constant
 * (converted), or an annotation asked only for another element type of the same shape. */
static bool assignable(Sema *S, KilnExpr *v, const KilnType *to, bool annotation) {
  const KilnType *t = v->type;
  if (kiln_type_equal(t, to)) return true;
  if (is_ptrish(t) || is_ptrish(to)) return false;
  if (v->weak && t->kind == KILN_TYPE_SCALAR && to->kind == KILN_TYPE_SCALAR) {
    retype_literal(S, v, to->scalar);
    return true;
  }
  return annotation && rank_of(t) == rank_of(to) &&
         memcmp(t->dims, to->dims, sizeof(int64_t) * (size_t)rank_of(t)) == 0;
}

/* let/var = ("let" | "var") IDENT [":" type] "=" expr ";" */
static void check_binding(Sema *S, KilnStmt *s, bool init_checked) {
  KilnDecl *d = s->decl;
  /* a function's parameter is bound to an argument already checked in the caller's scope */
  const KilnType *t = init_checked ? s->init->type : check_expr(S, s->init);
  if (t && t->kind == KILN_TYPE_DESC) { /* only a `let` names a tensor descriptor */
    d->type = NULL;
    d->is_const = false;
    if (s->kind != KILN_STMT_LET)
      ERR(S, d->span, "'%s' cannot be a var: a tensor descriptor is bound with 'let'", d->name);
    else if (d->has_annot)
      ERR(S, d->span, "'%s' is a tensor descriptor: it takes no type annotation", d->name);
    else
      d->type = t;
    declare(S, d);
    return;
  }
  if (t && !need_value(S, s->init)) t = NULL;
  d->type = NULL;
  d->is_const = false;
  if (t) {
    KilnType annot;
    if (d->has_annot && !resolve_written(S, &d->annot, d->span, &annot)) {
      t = NULL;
    } else if (d->has_annot) {
      const KilnType *want = annot.kind == KILN_TYPE_PTR ? like_shape(S, annot.scalar, true, t)
                                                         : like_shape(S, annot.scalar, false, t);
      if (!assignable(S, s->init, want, true))
        ERR(S, s->init->span, "initializer of type %s does not match the annotation %s", tstr(S, t),
            tstr(S, &annot));
      else
        t = want;
    }
  }
  if (t) {
    d->type = t;
    if (s->kind == KILN_STMT_LET && s->init->is_const && kiln_scalar_is_int(t->scalar) &&
        t->kind == KILN_TYPE_SCALAR) {
      d->is_const = true;
      d->value = s->init->ival;
    }
  }
  declare(S, d);
}

/* assign = IDENT "=" expr ";" */
static void check_assign(Sema *S, KilnStmt *s) {
  KilnDecl *d = lookup(S, s->init->name);
  s->target = NULL;
  if (!d) { /* reported once, also for x op= e, whose value reads the same name */
    ERR(S, s->name_span, "use of undeclared name '%s'", s->init->name);
    return;
  }
  const KilnType *t = value(S, s->value);
  s->init->decl = d;
  s->init->type = d->type;
  switch (d->kind) {
  case KILN_DECL_VAR: break;
  case KILN_DECL_LET:
    ERR(S, s->name_span, "cannot assign to '%s': it is declared with 'let' (use 'var')", d->name);
    return;
  case KILN_DECL_LOOP_VAR:
    ERR(S, s->name_span, "cannot assign to loop variable '%s'", d->name);
    return;
  default: ERR(S, s->name_span, "cannot assign to parameter '%s'", d->name); return;
  }
  s->target = d;
  if (!t || !d->type) return;
  if (!assignable(S, s->value, d->type, false)) {
    ERR(S, s->value->span, "cannot assign %s to '%s' of type %s (a var keeps its type and shape)",
        tstr(S, t), d->name, tstr(S, d->type));
    return;
  }
  note_assignment(S, d);
}

/* The value `v` into an assigned var (for `a, b = f(...)`): check_assign's rules. */
static KilnDecl *unpack_target(Sema *S, const KilnExpr *name, KilnExpr *v) {
  KilnDecl *d = lookup(S, name->name);
  if (!d) {
    ERR(S, name->span, "use of undeclared name '%s'", name->name);
    return NULL;
  }
  if (d->kind != KILN_DECL_VAR) {
    ERR(S, name->span, "cannot assign to '%s': only a 'var' can be assigned", d->name);
    return NULL;
  }
  if (v && d->type && !assignable(S, v, d->type, false)) {
    /* at the name: the value's own span is in the function's body */
    ERR(S, name->span, "cannot assign %s to '%s' of type %s (a var keeps its type and shape)",
        tstr(S, v->type), d->name, tstr(S, d->type));
    return NULL;
  }
  note_assignment(S, d);
  return d;
}

/* unpack = ("let" | "var") IDENT "," IDENT {"," IDENT} "=" call ";" | IDENT {"," IDENT} "=" call ";"
 * The call must be of a function that returns as many values (`return a, b;`).  The names are
 * declared (with no type, so no later error piles up) even when the call is wrong. */
static void check_unpack(Sema *S, KilnStmt *s) {
  const KilnType *t = check_expr(S, s->value);
  const KilnExpr *res = t ? s->value->result : NULL;
  if (t && t->kind != KILN_TYPE_TUPLE) {
    ERR(S, s->value->span,
        "%d names need a call of a function that returns %d values ('return a, b;'), got %s",
        s->nnames, s->nnames, tstr(S, t));
    res = NULL;
  } else if (t && t->rank != s->nnames) {
    ERR(S, s->value->span, "'%s' returns %d values, not %d", s->value->name, t->rank, s->nnames);
    res = NULL;
  }
  s->decls = kiln_arena_alloc(S->ar, sizeof *s->decls * (size_t)s->nnames);
  for (int i = 0; i < s->nnames; i++) {
    KilnExpr *v = res ? res->args[i] : NULL;
    if (s->assign) {
      s->decls[i] = unpack_target(S, s->names[i], v);
      continue;
    }
    KilnDecl *d = kiln_arena_alloc(S->ar, sizeof *d);
    d->kind = s->bind;
    d->name = s->names[i]->name;
    d->span = s->names[i]->span;
    d->type = v ? v->type : NULL;
    if (v && s->bind == KILN_DECL_LET && v->is_const && v->type->kind == KILN_TYPE_SCALAR &&
        kiln_scalar_is_int(v->type->scalar)) {
      d->is_const = true;
      d->value = v->ival;
    }
    s->decls[i] = d;
    declare(S, d);
  }
  if (!res) s->decls = NULL; /* nothing to lower: the errors above stop the kernel anyway */
}

static bool need_i32_scalar(Sema *S, KilnExpr *e, const char *what) {
  const KilnType *t = value(S, e);
  if (!t) return false;
  if (t->kind != KILN_TYPE_SCALAR || t->scalar != KILN_SCALAR_I32) {
    ERR(S, e->span, "%s must be an i32 scalar, got %s", what, tstr(S, t));
    return false;
  }
  return true;
}

static void check_scoped_block(Sema *S, KilnBlock *b, bool shared);

/* Most iterations a static_range may unroll into: each is a copy of the body to check and emit. */
enum { MAX_STATIC_RANGE = 1024 };

/* for = "for" IDENT "in" "static_range" "(" lo "," hi ["," step] ")" block: the bounds are
 * compile-time constants and the body is checked once per iteration, a copy of it after a `let`
 * of the loop variable as that iteration's constant (so the variable may size tiles and index
 * axes); mlirgen emits the copies in order, as straight-line code. Nothing may leave it early
 * (break, return), as in Triton. */
static void check_static_for(Sema *S, KilnStmt *s) {
  s->copies = NULL;
  s->ncopies = 0;
  if (!s->lo) return; /* the parser reported the arguments */
  int64_t b[3] = {0, 0, 1};
  KilnExpr *e[3] = {s->lo, s->hi, s->step};
  const char *what[3] = {"static_range start", "static_range end", "static_range step"};
  bool ok = true;
  for (int i = 0; i < 3; i++) {
    if (!e[i] || !need_i32_scalar(S, e[i], what[i])) {
      ok = ok && (e[i] == NULL);
      continue;
    }
    if (!e[i]->is_const) {
      ERR(S, e[i]->span, "%s must be a compile-time integer constant", what[i]);
      ok = false;
    } else {
      b[i] = e[i]->ival;
    }
  }
  if (!ok) return;
  if (b[2] == 0) {
    ERR(S, s->step->span, "static_range step must not be zero");
    return;
  }
  if (s->exit_name) {
    ERR(S, s->span, "a static_range loop is unrolled: break and return cannot leave it");
    return;
  }
  int64_t n = b[2] > 0 ? (b[1] > b[0] ? (b[1] - b[0] + b[2] - 1) / b[2] : 0)
                       : (b[0] > b[1] ? (b[0] - b[1] - b[2] - 1) / -b[2] : 0);
  if (n > MAX_STATIC_RANGE) {
    ERR(S, s->span, "static_range of %" PRId64 " iterations: at most %d are unrolled (use range)",
        n, MAX_STATIC_RANGE);
    return;
  }
  s->copies = kiln_arena_alloc(S->ar, sizeof *s->copies * (size_t)(n + 1));
  for (int64_t k = 0; k < n; k++) {
    KilnExpr *v = kiln_arena_alloc(S->ar, sizeof *v);
    v->kind = KILN_EXPR_INT;
    v->span = s->decl->span;
    v->ival = b[0] + k * b[2];
    KilnStmt *let = kiln_arena_alloc(S->ar, sizeof *let);
    let->kind = KILN_STMT_LET;
    let->span = s->decl->span;
    let->decl = kiln_arena_alloc(S->ar, sizeof *let->decl);
    let->decl->kind = KILN_DECL_LET;
    let->decl->name = s->decl->name;
    let->decl->span = s->decl->span;
    let->init = v;
    KilnBlock *body = kiln_ast_clone_block(S->ar, s->body);
    KilnBlock *copy = kiln_arena_alloc(S->ar, sizeof *copy);
    copy->stmts = kiln_arena_alloc(S->ar, sizeof *copy->stmts * (size_t)(body->nstmts + 2));
    copy->stmts[0] = let;
    for (int i = 0; i < body->nstmts; i++) copy->stmts[1 + i] = body->stmts[i];
    copy->nstmts = body->nstmts + 1;
    copy->span = body->span;
    size_t errors_before = S->c->nerrors;
    check_scoped_block(S, copy, false);
    s->copies[s->ncopies++] = copy;
    if (S->c->nerrors != errors_before) {
      kiln_diag_add(S->c, KILN_SEV_NOTE, s->decl->span,
                    kiln_arena_printf(S->ar, "in the static_range iteration %s = %" PRId64,
                                      s->decl->name, v->ival));
      return; /* one iteration's errors say it; the others would repeat them */
    }
  }
}

/* for = "for" IDENT "in" "range" "(" lo "," hi ["," step] ")" block */
static void check_for(Sema *S, KilnStmt *s) {
  if (s->unroll) {
    check_static_for(S, s);
    return;
  }
  if (s->lo) {
    need_i32_scalar(S, s->lo, "range start");
    need_i32_scalar(S, s->hi, "range end");
    /* A step may be negative (range(hi, lo, -1) counts down, mlirgen), also at run time; a
         * run-time step of zero runs no iteration (dsl/reference.md), a constant one is refused. */
    if (s->step && need_i32_scalar(S, s->step, "range step") && s->step->is_const) {
      if (s->step->ival == 0)
        ERR(S, s->step->span, "range step must not be zero");
      else if (s->step->ival == INT32_MIN)
        ERR(S, s->step->span, "range step %" PRId64 " is out of range", s->step->ival);
    }
  }
  /* the break flag is declared just before the loop (exits.c), so it is in sight here */
  s->exit_flag = s->exit_name ? lookup(S, s->exit_name) : NULL;
  KILN_ASSERT(!s->exit_name || s->exit_flag);
  int saved_n = S->names.n, saved_start = S->scope_start;
  S->scope_start = S->names.n;
  push_ctl(S, s);
  s->decl->type = kiln_type_scalar(KILN_SCALAR_I32);
  s->decl->is_const = false;
  declare(S, s->decl);
  check_block(S, s->body, false);
  pop_ctl(S);
  end_scope(S, saved_n, saved_start);
}

/* A block with its own scope; or, for a guard's body (`shared`), the rest of the enclosing
 * block, whose names are still checked against that block's (a redeclaration is an error). */
static void check_scoped_block(Sema *S, KilnBlock *b, bool shared) {
  int saved_n = S->names.n, saved_start = S->scope_start;
  if (!shared) S->scope_start = S->names.n;
  check_block(S, b, false);
  end_scope(S, saved_n, saved_start);
}

/* if = "if" expr block ["else" (block | if)] */
static void check_if(Sema *S, KilnStmt *s) {
  const KilnType *t = value(S, s->cond);
  if (t && (t->kind != KILN_TYPE_SCALAR || t->scalar != KILN_SCALAR_I1) && s->while_test)
    ERR(S, s->cond->span,
        "while condition must be an i1 scalar, got %s (every thread of a program runs the same "
        "iterations: reduce a tile first, e.g. max(t, 0) > 0)",
        tstr(S, t));
  else if (t && (t->kind != KILN_TYPE_SCALAR || t->scalar != KILN_SCALAR_I1))
    ERR(S, s->cond->span, "if condition must be an i1 scalar, got %s", tstr(S, t));
  push_ctl(S, s);
  check_scoped_block(S, s->body, s->guard);
  if (s->else_body) check_scoped_block(S, s->else_body, false);
  pop_ctl(S);
}

static void check_stmt(Sema *S, KilnStmt *s) {
  s->ncarried = 0;
  s->carried = NULL;
  switch (s->kind) {
  case KILN_STMT_LET:
  case KILN_STMT_VAR: check_binding(S, s, false); break;
  case KILN_STMT_ASSIGN: check_assign(S, s); break;
  case KILN_STMT_EXPR:
    if (check_expr(S, s->value) && s->value->kind != KILN_EXPR_CALL)
      kiln_diag_warning(S->c, s->value->span, "expression result is unused");
    break;
  case KILN_STMT_FOR: check_for(S, s); break;
  case KILN_STMT_IF: check_if(S, s); break;
  case KILN_STMT_RETURN: break;
  case KILN_STMT_UNPACK: check_unpack(S, s); break;
  case KILN_STMT_BREAK:
  case KILN_STMT_CONTINUE:
  case KILN_STMT_COUNT: KILN_ASSERT(!"bad stmt kind"); /* break/continue: lowered by exits.c */
  }
}

static void check_block(Sema *S, KilnBlock *b, bool top) {
  /* every return but a last one became a flag in the parser (exits.c) */
  for (int i = 0; i < b->nstmts; i++) {
    KilnStmt *s = b->stmts[i];
    KILN_ASSERT(s->kind != KILN_STMT_RETURN || (top && i == b->nstmts - 1));
    check_stmt(S, s);
  }
}

/* ---------------------------------------------------------------- kernels */

/* Binds params: types from annotations, const values from the bindings. */
/* The last binding of a name wins, like repeated -D options. */
static const KilnBinding *last_binding(const KilnBinding *b, size_t nb, const char *name) {
  const KilnBinding *found = NULL;
  for (size_t j = 0; j < nb; j++)
    if (b[j].name && strcmp(b[j].name, name) == 0) found = &b[j];
  return found;
}

/* `const T: type`: its binding is a scalar kind's number (kiln_scalar_from_name); its type is
 * that scalar as a type name (DTYPE), so `zeros(shape, T)` and `x as T` work like f16 would. */
static void bind_type_param(Sema *S, KilnDecl *p, const KilnBinding *b, size_t nb) {
  const KilnBinding *found = last_binding(b, nb, p->name);
  p->is_const = false;
  p->type = NULL;
  if (!found) {
    if (!S->from_tune)
      ERR(S, p->span, "type parameter '%s' has no value (bind it with -D%s=f16, for example)",
          p->name, p->name);
    return;
  }
  if (found->value < 0 || found->value >= KILN_SCALAR_COUNT || found->value == KILN_SCALAR_I1) {
    ERR(S, p->span, "value %" PRId64 " of type parameter '%s' names no element type", found->value,
        p->name);
    return;
  }
  KilnType *t = kiln_arena_alloc(S->ar, sizeof *t);
  memset(t, 0, sizeof *t);
  t->kind = KILN_TYPE_DTYPE;
  t->scalar = (KilnScalarKind)found->value;
  p->type = t;
}

/* The kernel's field of meta name `name` (kiln_meta_param_is) takes value. */
static void set_meta(KilnKernel *k, const char *name, int value) {
  if (strcmp(name, "num_warps") == 0)
    k->num_warps = value;
  else if (strcmp(name, "num_stages") == 0)
    k->num_stages = value;
  else if (strcmp(name, "min_blocks") == 0)
    k->min_blocks = value;
  else if (strcmp(name, "wgmma") == 0)
    k->wgmma = value;
  else
    KILN_ASSERT(!"a meta name without a kernel field");
}

static void bind_params(Sema *S, const KilnBinding *b, size_t nb) {
  KilnKernel *k = S->k;
  int nplain = 0, nconst = 0;
  for (size_t i = 0; i < nb; i++) {
    if (!b[i].name) {
      ERR(S, k->span, "binding %zu has no name", i);
      continue;
    }
    if (kiln_meta_param_is(b[i].name)) {
      int64_t lo = kiln_meta_param_min(b[i].name), hi = kiln_meta_param_max(b[i].name);
      if (b[i].value < lo || b[i].value > hi) {
        ERR(S, k->span, "%s = %" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")", b[i].name,
            b[i].value, lo, hi);
        continue;
      }
      set_meta(k, b[i].name, (int)b[i].value);
      continue;
    }
    int j = 0;
    while (j < k->nparams && strcmp(k->params[j]->name, b[i].name) != 0) j++;
    if ((j == k->nparams || k->params[j]->kind != KILN_DECL_CONST_PARAM) && !S->from_tune)
      ERR(S, k->span, "'%s' is not a const parameter of kernel '%s'", b[i].name, k->name);
  }
  /* Type parameters first: the other parameters' types may name them. */
  for (int i = 0; i < k->nparams; i++) {
    KilnDecl *p = k->params[i];
    p->is_type_param =
        p->kind == KILN_DECL_CONST_PARAM && p->annot.param && strcmp(p->annot.param, "type") == 0;
    if (p->is_type_param) bind_type_param(S, p, b, nb);
  }
  for (int i = 0; i < k->nparams; i++) {
    KilnDecl *p = k->params[i];
    p->param_pos = i;
    if (p->kind == KILN_DECL_PARAM) {
      p->is_const = false;
      p->index = nplain++;
      KilnType annot;
      if (!resolve_written(S, &p->annot, p->span, &annot))
        p->type = NULL;
      else
        p->type = annot.kind == KILN_TYPE_PTR ? with_shape(S, annot.scalar, true, 0, NULL)
                                              : kiln_type_scalar(annot.scalar);
      declare(S, p);
      continue;
    }
    p->index = nconst++;
    if (p->is_type_param) {
      declare(S, p);
      continue;
    }
    p->is_const = false;
    p->type = kiln_type_scalar(KILN_SCALAR_I32);
    if (p->annot.param || p->annot.kind != KILN_TYPE_SCALAR || p->annot.scalar != KILN_SCALAR_I32)
      ERR(S, p->span,
          "const parameter '%s' must have type i32 (or be a type parameter: 'const %s: type')",
          p->name, p->name);
    const KilnBinding *found = last_binding(b, nb, p->name);
    if (!found) {
      if (!S->from_tune)
        ERR(S, p->span, "const parameter '%s' has no value (bind it with -D%s=N)", p->name,
            p->name);
      p->type = NULL;
    } else if (!int_fits(found->value, KILN_SCALAR_I32)) {
      ERR(S, p->span, "value %" PRId64 " of const parameter '%s' does not fit in i32", found->value,
          p->name);
      p->type = NULL;
    } else {
      p->is_const = true;
      p->value = found->value;
    }
    declare(S, p);
  }
}

static void check_kernel(KilnCompilation *c, KilnKernel *k, const KilnBinding *b, size_t nb,
                         bool from_tune) {
  Sema S = {.c = c, .ar = &c->scratch, .k = k, .from_tune = from_tune};
  k->num_warps = 4;
  k->num_stages = 2;
  k->min_blocks = 0;
  k->wgmma = 0;
  bind_params(&S, b, nb);
  check_block(&S, k->body, true);
  k->ndecls = S.next_id;
}

/* Common entry: fresh scratch and sema diagnostics; out-of-memory lands back here. */
static bool begin_sema(KilnCompilation *c) {
  KILN_ASSERT(c->parsed);
  kiln_arena_reset(&c->scratch);
  kiln_diag_reset_sema(c);
  return c->parse_ok;
}

/* One sema request: a kernel found by name with its bindings, or every kernel with the -D
 * defines in bindings. */
typedef struct SemaRequest {
  const char *kernel_name;
  const KilnBinding *bindings;
  size_t nbindings;
  KilnKernel *kernel; /* the kernel of that name, or NULL */
} SemaRequest;

/* Runs check(c, req) with the scratch arena's out-of-memory jump point set, so that an allocation
 * failing anywhere in the checks lands here and is reported. False on out of memory. */
static bool run_sema(KilnCompilation *c, void (*check)(KilnCompilation *, SemaRequest *),
                     SemaRequest *req) {
  c->in_sema = true;
  jmp_buf oom;
  if (setjmp(oom)) {
    c->scratch.oom = NULL;
    kiln_diag_add(c, KILN_SEV_ERROR, kiln_span_none, "out of memory during type checking");
    c->in_sema = false;
    return false;
  }
  c->scratch.oom = &oom;
  check(c, req);
  c->scratch.oom = NULL;
  c->in_sema = false;
  return true;
}

static void check_named_kernel(KilnCompilation *c, SemaRequest *req) {
  if (!req->kernel)
    kiln_diag_error(c, kiln_span_none, "no kernel named '%s'", req->kernel_name);
  else
    check_kernel(c, req->kernel, req->bindings, req->nbindings, false);
}

bool kiln_sema_check_kernel(KilnCompilation *c, const char *kernel_name,
                            const KilnBinding *bindings, size_t nbindings, KilnKernel **out) {
  if (out) *out = NULL;
  if (!begin_sema(c)) return false;
  SemaRequest req = {kernel_name, bindings, nbindings, kiln_kernel_find(c, kernel_name)};
  if (!run_sema(c, check_named_kernel, &req)) return false;
  bool ok = c->nerrors == 0;
  if (ok && out) *out = req.kernel;
  return ok;
}

/* Whether kernel k has a const parameter (or a meta parameter) that binding name sets. */
static bool binds_kernel(const KilnKernel *k, const char *name) {
  if (kiln_meta_param_is(name)) return true;
  for (int j = 0; j < k->nparams; j++)
    if (k->params[j]->kind == KILN_DECL_CONST_PARAM && strcmp(k->params[j]->name, name) == 0)
      return true;
  return false;
}

bool kiln_sema_check_all(KilnCompilation *c) { return kiln_sema_check_all_bound(c, NULL, 0); }

/* Every tune block, then every kernel at its tune block's first configuration with the -D
 * defines it takes; a define no kernel takes is an error. */
static void check_every_kernel(KilnCompilation *c, SemaRequest *req) {
  const KilnBinding *defines = req->bindings;
  size_t ndefines = req->nbindings;
  for (int i = 0; i < c->tunes.n; i++) {
    KilnTune *t = c->tunes.items[i];
    if (t->kernel && t->kernel->tune == t) kiln_tune_check(c, t);
  }
  for (size_t d = 0; d < ndefines; d++) {
    bool used = false;
    for (int i = 0; i < c->kernels.n && !used; i++)
      used = binds_kernel(c->kernels.items[i], defines[d].name);
    if (!used)
      kiln_diag_error(c, kiln_span_none, "-D %s: no kernel has a const parameter '%s'",
                      defines[d].name, defines[d].name);
  }
  for (int i = 0; i < c->kernels.n; i++) {
    KilnKernel *k = c->kernels.items[i];
    KilnTuneConfig cfg = {0};
    if (k->tune) kiln_tune_config_get(k->tune, 0, &cfg);
    /* the tune block's first configuration, then the -D values this kernel takes (the
         * last binding of a name wins) */
    KilnBinding *b =
        kiln_arena_alloc(&c->scratch, sizeof *b * ((size_t)cfg.nbindings + ndefines + 1));
    size_t nb = 0;
    for (int j = 0; j < cfg.nbindings; j++) b[nb++] = cfg.bindings[j];
    for (size_t d = 0; d < ndefines; d++)
      if (binds_kernel(k, defines[d].name)) b[nb++] = defines[d];
    check_kernel(c, k, b, nb, k->tune != NULL);
  }
}

bool kiln_sema_check_all_bound(KilnCompilation *c, const KilnBinding *defines, size_t ndefines) {
  if (!begin_sema(c)) return false;
  SemaRequest req = {NULL, defines, ndefines, NULL};
  return run_sema(c, check_every_kernel, &req) && c->nerrors == 0;
}
