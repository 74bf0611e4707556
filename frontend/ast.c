/* ast.c: AST node constructors used by the parser, and the readable tree dump
 * (`kiln compile --emit ast`). */
#include "frontend_internal.h"

#include <inttypes.h>
#include <string.h>

void kiln_ast_check_depth(KilnParseState *ps, int depth, KilnSpan span) {
  if (depth > KILN_MAX_NESTING && !ps->c->too_deep) {
    kiln_diag_error(ps->c, span, "nesting too deep (more than %d levels)", KILN_MAX_NESTING);
    ps->c->too_deep = true;
  }
}

KilnExpr *kiln_ast_expr(KilnParseState *ps, KilnExprKind kind, KilnSpan span) {
  KilnExpr *e = kiln_arena_alloc(&ps->c->ar, sizeof *e);
  e->kind = kind;
  e->span = span;
  e->depth = 1;
  return e;
}

KilnExpr *kiln_ast_unary(KilnParseState *ps, KilnUnOp op, KilnExpr *x, KilnSpan span) {
  KilnExpr *e = kiln_ast_expr(ps, KILN_EXPR_UNARY, span);
  e->unop = op;
  e->lhs = x;
  e->depth = x->depth + 1;
  kiln_ast_check_depth(ps, e->depth, span);
  return e;
}

KilnExpr *kiln_ast_binary(KilnParseState *ps, KilnBinOp op, KilnExpr *l, KilnExpr *r) {
  KilnExpr *e = kiln_ast_expr(ps, KILN_EXPR_BINARY, kiln_span_join(l->span, r->span));
  e->binop = op;
  e->lhs = l;
  e->rhs = r;
  e->depth = 1 + (l->depth > r->depth ? l->depth : r->depth);
  kiln_ast_check_depth(ps, e->depth, e->span);
  return e;
}

KilnExpr *kiln_ast_call(KilnParseState *ps, const char *name, KilnSpan name_span, KilnPtrVec *args,
                        KilnSpan span) {
  (void)name_span;
  KilnExpr *e = kiln_ast_expr(ps, KILN_EXPR_CALL, span);
  e->name = name;
  e->args = (KilnExpr **)args->items;
  e->nargs = args->n;
  for (int i = 0; i < e->nargs; i++)
    if (e->args[i]->depth + 1 > e->depth) e->depth = e->args[i]->depth + 1;
  kiln_ast_check_depth(ps, e->depth, span);
  return e;
}

KilnStmt *kiln_ast_stmt(KilnParseState *ps, KilnStmtKind kind, KilnSpan span) {
  KilnStmt *s = kiln_arena_alloc(&ps->c->ar, sizeof *s);
  s->kind = kind;
  s->span = span;
  s->depth = 1;
  return s;
}

KilnBlock *kiln_ast_block(KilnParseState *ps, KilnPtrVec *stmts, KilnSpan span) {
  KilnBlock *b = kiln_arena_alloc(&ps->c->ar, sizeof *b);
  b->stmts = (KilnStmt **)stmts->items;
  b->nstmts = stmts->n;
  b->span = span;
  return b;
}

KilnType *kiln_ast_type(KilnParseState *ps, KilnTypeKind kind, KilnScalarKind s) {
  KilnType *t = kiln_arena_alloc(&ps->c->ar, sizeof *t);
  t->kind = kind;
  t->scalar = s;
  return t;
}

/* ---------------------------------------------------------------- dump */

static const char *const binop_names[KILN_BIN_COUNT] = {
    "+",  "-",  "*",  "/", "%", "<<", ">>", "<",  "<=", ">",
    ">=", "==", "!=", "&", "|", "^",  "&&", "||", "**",
};
static const char *const unop_names[KILN_UN_COUNT] = {"-", "!", "~"};

static void indent(FILE *out, int n) { fprintf(out, "%*s", 2 * n, ""); }

static void dump_expr(const KilnExpr *e, FILE *out, int lvl);

static void dump_type_suffix(const KilnExpr *e, FILE *out) {
  char buf[160];
  fprintf(out, " : %s", kiln_type_str(e->type, buf, sizeof buf));
  if (e->is_const) fprintf(out, " = %" PRId64, e->ival);
  if (e->operand_type && !kiln_type_equal(e->operand_type, e->type))
    fprintf(out, " (operands %s)", kiln_type_str(e->operand_type, buf, sizeof buf));
  fprintf(out, "  @%d:%d\n", e->span.line, e->span.col);
}

static void dump_expr(const KilnExpr *e, FILE *out, int lvl) {
  indent(out, lvl);
  if (!e) {
    fprintf(out, "<missing>\n");
    return;
  }
  switch (e->kind) {
  case KILN_EXPR_INT: fprintf(out, "Int %" PRId64, e->ival); break;
  case KILN_EXPR_FLOAT: fprintf(out, "Float %g", e->fval); break;
  case KILN_EXPR_BOOL: fprintf(out, "Bool %s", e->ival ? "true" : "false"); break;
  case KILN_EXPR_NAME:
    fprintf(out, "Name %s", e->name);
    if (e->decl) fprintf(out, " -> #%d", e->decl->id);
    break;
  case KILN_EXPR_UNARY: fprintf(out, "Unary %s", unop_names[e->unop]); break;
  case KILN_EXPR_BINARY: fprintf(out, "Binary %s", binop_names[e->binop]); break;
  case KILN_EXPR_CALL: fprintf(out, "Call %s", e->name); break;
  case KILN_EXPR_INDEX:
    fprintf(out, "Index [");
    for (int i = 0; i < e->nindex; i++)
      fprintf(out, "%s%s", i ? ", " : "", e->index[i] == KILN_INDEX_SLICE ? ":" : "None");
    fprintf(out, "]");
    break;
  case KILN_EXPR_CAST: fprintf(out, "Cast %s", kiln_scalar_name(e->cast_to->scalar)); break;
  case KILN_EXPR_LIST: fprintf(out, "List"); break;
  case KILN_EXPR_TYPE: fprintf(out, "Type %s", kiln_scalar_name(e->cast_to->scalar)); break;
  case KILN_EXPR_STRING: fprintf(out, "String \"%s\"", e->name); break;
  case KILN_EXPR_COUNT: fprintf(out, "?"); break;
  }
  dump_type_suffix(e, out);
  if (e->lhs) dump_expr(e->lhs, out, lvl + 1);
  if (e->rhs) dump_expr(e->rhs, out, lvl + 1);
  for (int i = 0; i < e->nargs; i++) dump_expr(e->args[i], out, lvl + 1);
}

static void dump_decl(const KilnDecl *d, FILE *out) {
  char buf[160];
  fprintf(out, "%s #%d : %s", d->name, d->id, kiln_type_str(d->type, buf, sizeof buf));
  if (d->is_const) fprintf(out, " = %" PRId64, d->value);
}

static void dump_block(const KilnBlock *b, FILE *out, int lvl);

static void dump_carried(const KilnStmt *s, FILE *out, int lvl) {
  if (!s->ncarried) return;
  indent(out, lvl);
  fprintf(out, "carried:");
  for (int i = 0; i < s->ncarried; i++)
    fprintf(out, " %s#%d", s->carried[i]->name, s->carried[i]->id);
  fprintf(out, "\n");
}

static void dump_stmt(const KilnStmt *s, FILE *out, int lvl) {
  indent(out, lvl);
  switch (s->kind) {
  case KILN_STMT_LET:
  case KILN_STMT_VAR:
    fprintf(out, "%s ", s->kind == KILN_STMT_LET ? "Let" : "Var");
    dump_decl(s->decl, out);
    fprintf(out, "\n");
    dump_expr(s->init, out, lvl + 1);
    break;
  case KILN_STMT_ASSIGN:
    fprintf(out, "Assign %s", s->target ? s->target->name : s->init->name);
    if (s->target) fprintf(out, " #%d", s->target->id);
    fprintf(out, "\n");
    dump_expr(s->value, out, lvl + 1);
    break;
  case KILN_STMT_EXPR:
    fprintf(out, "Expr\n");
    dump_expr(s->value, out, lvl + 1);
    break;
  case KILN_STMT_FOR:
    fprintf(out, "For ");
    dump_decl(s->decl, out);
    fprintf(out, "\n");
    dump_carried(s, out, lvl + 1);
    dump_expr(s->lo, out, lvl + 1);
    dump_expr(s->hi, out, lvl + 1);
    if (s->step) dump_expr(s->step, out, lvl + 1);
    dump_block(s->body, out, lvl + 1);
    break;
  case KILN_STMT_IF:
    fprintf(out, "If\n");
    dump_carried(s, out, lvl + 1);
    dump_expr(s->cond, out, lvl + 1);
    dump_block(s->body, out, lvl + 1);
    if (s->else_body) {
      indent(out, lvl);
      fprintf(out, "Else\n");
      dump_block(s->else_body, out, lvl + 1);
    }
    break;
  case KILN_STMT_RETURN: fprintf(out, "Return\n"); break;
  case KILN_STMT_UNPACK:
    fprintf(out, "Unpack%s", s->assign ? " (assign)" : s->bind == KILN_DECL_LET ? " let" : " var");
    for (int i = 0; i < s->nnames; i++) {
      fprintf(out, " ");
      if (s->decls && s->decls[i])
        dump_decl(s->decls[i], out);
      else
        fprintf(out, "%s", s->names[i]->name);
    }
    fprintf(out, "\n");
    dump_expr(s->value, out, lvl + 1);
    break;
  case KILN_STMT_BREAK: fprintf(out, "Break\n"); break;
  case KILN_STMT_CONTINUE: fprintf(out, "Continue\n"); break;
  case KILN_STMT_COUNT: fprintf(out, "?\n"); break;
  }
}

static void dump_block(const KilnBlock *b, FILE *out, int lvl) {
  indent(out, lvl);
  fprintf(out, "Block\n");
  for (int i = 0; b && i < b->nstmts; i++) dump_stmt(b->stmts[i], out, lvl + 1);
}

void kiln_ast_dump(const KilnKernel *k, FILE *out) {
  fprintf(out, "Kernel %s num_warps=%d num_stages=%d\n", k->name, k->num_warps, k->num_stages);
  for (int i = 0; i < k->nparams; i++) {
    const KilnDecl *p = k->params[i];
    fprintf(out, "  Param%s ", p->kind == KILN_DECL_CONST_PARAM ? " const" : "");
    dump_decl(p, out);
    fprintf(out, "\n");
  }
  dump_block(k->body, out, 1);
}

/* An axis argument sema filled in for a later keyword alone is the literal -1 (sema.c,
 * fill_axis): a parsed literal is never negative. */
bool kiln_call_has_axis(const KilnExpr *e) {
  return e->nargs >= 2 && !(e->args[1]->kind == KILN_EXPR_INT && e->args[1]->ival < 0);
}

/* ---------------------------------------------------------------- copies (function inlining) */

static KilnDecl *clone_decl(KilnArena *ar, const KilnDecl *d) {
  if (!d) return NULL;
  KilnDecl *c = kiln_arena_alloc(ar, sizeof *c);
  *c = *d;
  return c;
}

KilnExpr *kiln_ast_clone_expr(KilnArena *ar, const KilnExpr *e) {
  if (!e) return NULL;
  KilnExpr *c = kiln_arena_alloc(ar, sizeof *c);
  *c = *e;
  c->lhs = kiln_ast_clone_expr(ar, e->lhs);
  c->rhs = kiln_ast_clone_expr(ar, e->rhs);
  if (e->nargs > 0) {
    c->args = kiln_arena_alloc(ar, sizeof *c->args * (size_t)e->nargs);
    for (int i = 0; i < e->nargs; i++) c->args[i] = kiln_ast_clone_expr(ar, e->args[i]);
  }
  /* index kinds and written types are never changed by sema: shared */
  return c;
}

static KilnStmt *clone_stmt(KilnArena *ar, const KilnStmt *s) {
  KilnStmt *c = kiln_arena_alloc(ar, sizeof *c);
  *c = *s;
  c->decl = clone_decl(ar, s->decl);
  c->init = kiln_ast_clone_expr(ar, s->init);
  c->value = kiln_ast_clone_expr(ar, s->value);
  c->lo = kiln_ast_clone_expr(ar, s->lo);
  c->hi = kiln_ast_clone_expr(ar, s->hi);
  c->step = kiln_ast_clone_expr(ar, s->step);
  c->cond = kiln_ast_clone_expr(ar, s->cond);
  c->body = kiln_ast_clone_block(ar, s->body);
  c->else_body = kiln_ast_clone_block(ar, s->else_body);
  if (s->nnames > 0) { /* sema writes decls into the names: each copy has its own */
    c->names = kiln_arena_alloc(ar, sizeof *c->names * (size_t)s->nnames);
    for (int i = 0; i < s->nnames; i++) c->names[i] = kiln_ast_clone_expr(ar, s->names[i]);
  }
  c->decls = NULL;
  c->copies = NULL; /* sema's unrolled copies: each check makes its own */
  c->ncopies = 0;
  return c;
}

KilnBlock *kiln_ast_clone_block(KilnArena *ar, const KilnBlock *b) {
  if (!b) return NULL;
  KilnBlock *c = kiln_arena_alloc(ar, sizeof *c);
  *c = *b;
  c->stmts = kiln_arena_alloc(ar, sizeof *c->stmts * (size_t)(b->nstmts + 1));
  for (int i = 0; i < b->nstmts; i++) c->stmts[i] = clone_stmt(ar, b->stmts[i]);
  return c;
}
