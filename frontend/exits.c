/* exits.c: `break`, `continue` and early `return` become flags and guarded blocks.
 *
 * Why.  Kernels lower to structured control flow (scf.for, scf.if) on every target, and neither
 * op can be left in the middle.  So an exit does not jump: it sets an i1 flag, and whatever would
 * have run after it runs only while the flag is clear.  This is done once per kernel, right after
 * parsing, as an AST rewrite into plain `var`s, assignments and `if`s, so sema checks and mlirgen
 * lowers nothing new: the flags are carried through loops and out of branches like any `var`,
 * and every target that runs `for` and `if` runs exits too.
 *
 * How.  Per kernel (and per function body, kiln_exits_lower_func) a flag `ret` (declared first
 * in the body, when some `return` is not the body's last statement); per loop a flag `brk` (declared just before the loop) and a flag `cont`
 * (declared first in the loop's body, so each iteration starts with it clear), each only when
 * used.  Their names contain a '#', so no program can name them.  In every block, after a
 * statement that may set a flag, the rest of the block moves into `if !flag && ... { rest }`;
 * that `if` is a guard (KilnStmt.guard) whose body continues the block's scope.  A loop whose
 * body may set `brk` or `ret` runs its body under `if !brk && !ret`.
 *
 * Leaving early.  A `return` inside loops also sets the `brk` of every loop around it, so one
 * flag per loop says "stop": KilnStmt.exit_name names it, and mlirgen marks the loop's scf.for
 * with it; after the backends, kiln-exit-loops turns each marked loop into an scf.while that
 * tests the flag before every iteration, so the loop really ends there (until then the guard
 * keeps the remaining iterations empty, and keeps the flag read, so no canonicalization drops it).
 *
 * `while COND { body }` is parsed (kiln_exits_while) into such a loop that only counts:
 * `for w# in range(0, 2^31 - 1) { if COND { body } else { break; } }`, marked unbounded, so
 * kiln-exit-loops drops its bound: a while loop may run any number of iterations.
 */
#include "frontend_internal.h"

#include <stdint.h>
#include <string.h>

/* Which flags a statement may set, as bits. */
enum { SETS_RET = 1, SETS_BRK = 2, SETS_CONT = 4 };
/* lower_stmt's answer for a statement that is dropped (an exit outside a loop, reported) */
enum { SETS_NOTHING_LEFT = 8 };

typedef struct Loop {
  KilnDecl *brk, *cont; /* created when the loop's body has a break (or return) / continue */
  struct Loop *outer;   /* the loop around this one, or NULL */
} Loop;

typedef struct Exits {
  KilnParseState *ps;
  const char *what; /* "kernel", "function" or "function with a value": which returns are legal */
  KilnDecl *ret;    /* the body's return flag, or NULL */
  int nflags;       /* for unique names */
  int guard_depth;  /* nested guards being built, bounded like any nesting */
} Exits;

static KilnArena *ar_of(Exits *X) { return &X->ps->c->ar; }

/* A new flag named `what#N` (an i1 var; flag_stmt declares it). */
static KilnDecl *new_flag(Exits *X, const char *what, KilnSpan span) {
  KilnDecl *d = kiln_arena_alloc(ar_of(X), sizeof *d);
  d->kind = KILN_DECL_VAR;
  d->name = kiln_arena_printf(ar_of(X), "%s#%d", what, ++X->nflags);
  d->span = span;
  return d;
}

/* `var FLAG = false;` */
static KilnStmt *flag_stmt(Exits *X, KilnDecl *d) {
  KilnStmt *s = kiln_ast_stmt(X->ps, KILN_STMT_VAR, d->span);
  s->decl = d;
  s->init = kiln_ast_expr(X->ps, KILN_EXPR_BOOL, d->span);
  s->init->ival = 0;
  return s;
}

static KilnExpr *flag_ref(Exits *X, const KilnDecl *d, KilnSpan span) {
  KilnExpr *e = kiln_ast_expr(X->ps, KILN_EXPR_NAME, span);
  e->name = d->name;
  return e;
}

/* `flag = true;` as a new statement at `span`. */
static KilnStmt *set_stmt(Exits *X, const KilnDecl *flag, KilnSpan span) {
  KilnStmt *s = kiln_ast_stmt(X->ps, KILN_STMT_ASSIGN, span);
  s->name_span = span;
  s->init = flag_ref(X, flag, span);
  s->value = kiln_ast_expr(X->ps, KILN_EXPR_BOOL, span);
  s->value->ival = 1;
  return s;
}

/* The break flag of `loop`, made when first needed (its loop declares it). */
static KilnDecl *break_flag(Exits *X, Loop *loop, KilnSpan span) {
  if (!loop->brk) loop->brk = new_flag(X, "break", span);
  return loop->brk;
}

/* `flag = true;` in place of the exit statement s (same span, so messages point at it). */
static void become_set(Exits *X, KilnStmt *s, const KilnDecl *flag) {
  s->kind = KILN_STMT_ASSIGN;
  s->name_span = s->span;
  s->init = flag_ref(X, flag, s->span);
  s->value = kiln_ast_expr(X->ps, KILN_EXPR_BOOL, s->span);
  s->value->ival = 1;
}

/* !f1 && !f2 ... over the flags in `sets` (at least one). */
static KilnExpr *none_set(Exits *X, int sets, const Loop *loop, KilnSpan span) {
  const KilnDecl *flags[3] = {(sets & SETS_RET) ? X->ret : NULL,
                              (sets & SETS_BRK) && loop ? loop->brk : NULL,
                              (sets & SETS_CONT) && loop ? loop->cont : NULL};
  KilnExpr *cond = NULL;
  for (int i = 0; i < 3; i++) {
    if (!flags[i]) continue;
    KilnExpr *clear = kiln_ast_unary(X->ps, KILN_UN_NOT, flag_ref(X, flags[i], span), span);
    cond = cond ? kiln_ast_binary(X->ps, KILN_BIN_AND, cond, clear) : clear;
    cond->span = span;
  }
  return cond;
}

static KilnBlock *block_of(Exits *X, KilnPtrVec *v, KilnSpan span) {
  return kiln_ast_block(X->ps, v, span);
}

/* `if cond { body }` marked as a guard. */
static KilnStmt *guard(Exits *X, KilnExpr *cond, KilnBlock *body, KilnSpan span) {
  KilnStmt *g = kiln_ast_stmt(X->ps, KILN_STMT_IF, span);
  g->cond = cond;
  g->body = body;
  g->guard = true;
  return g;
}

static int lower_block(Exits *X, KilnBlock *b, Loop *loop, bool top);

/* Rewrites one statement; statements to put before it (a loop's `brk` declaration) are pushed
 * on `before`.  Returns the flags it may set, as seen by the block that holds it. */
static int lower_stmt(Exits *X, KilnStmt *s, Loop *loop, KilnPtrVec *before) {
  switch (s->kind) {
  case KILN_STMT_RETURN:
    if (s->value || strcmp(X->what, "function with a value") == 0) {
      kiln_diag_error(X->ps->c, s->span,
                      strcmp(X->what, "kernel") == 0
                          ? "a kernel returns no value (it writes its results through pointers)"
                          : "a function returns a value only with its last statement, and "
                            "then has no other 'return'");
      return SETS_NOTHING_LEFT;
    }
    become_set(X, s, X->ret);
    /* every loop around the return stops too: its break flag is its only "stop" (see top) */
    for (Loop *l = loop; l; l = l->outer)
      kiln_vec_push(ar_of(X), before, set_stmt(X, break_flag(X, l, s->span), s->span));
    return loop ? SETS_RET | SETS_BRK : SETS_RET;
  case KILN_STMT_BREAK:
  case KILN_STMT_CONTINUE: {
    bool brk = s->kind == KILN_STMT_BREAK;
    if (!loop) {
      kiln_diag_error(X->ps->c, s->span, "'%s' outside a loop", brk ? "break" : "continue");
      return SETS_NOTHING_LEFT;
    }
    if (brk)
      break_flag(X, loop, s->span); /* declared by its loop */
    else if (!loop->cont)
      loop->cont = new_flag(X, "continue", s->span);
    become_set(X, s, brk ? loop->brk : loop->cont);
    return brk ? SETS_BRK : SETS_CONT;
  }
  case KILN_STMT_IF: {
    int sets = lower_block(X, s->body, loop, false);
    if (s->else_body) sets |= lower_block(X, s->else_body, loop, false);
    return sets;
  }
  case KILN_STMT_FOR: {
    Loop inner = {.outer = loop};
    int sets = lower_block(X, s->body, &inner, false);
    /* the loop's own break and continue end here; a return goes on out.  A return in a
         * loop nested in this one made this loop's break flag too: the guard reads it, so that
         * the flag stays a used loop value (exit_loops.c needs it first among them) */
    int stop = sets & (SETS_BRK | SETS_RET);
    if (inner.brk) stop |= SETS_BRK;
    KilnPtrVec body = {0};
    if (inner.cont) kiln_vec_push(ar_of(X), &body, flag_stmt(X, inner.cont));
    if (stop) {
      KilnStmt *g = guard(X, none_set(X, stop, &inner, s->span), s->body, s->body->span);
      kiln_vec_push(ar_of(X), &body, g);
    } else {
      for (int i = 0; i < s->body->nstmts; i++) kiln_vec_push(ar_of(X), &body, s->body->stmts[i]);
    }
    if (inner.cont || stop) s->body = block_of(X, &body, s->body->span);
    if (inner.brk) {
      kiln_vec_push(ar_of(X), before, flag_stmt(X, inner.brk));
      s->exit_name = inner.brk->name;
    }
    return sets & SETS_RET;
  }
  default: return 0;
  }
}

/* Rewrites a block in place; returns the flags it may set.  `top`: the kernel's body, whose last
 * statement may be a plain `return;`. */
static int lower_block(Exits *X, KilnBlock *b, Loop *loop, bool top) {
  KilnPtrVec out = {0};
  int sets = 0;
  for (int i = 0; i < b->nstmts; i++) {
    KilnStmt *s = b->stmts[i];
    if (top && i == b->nstmts - 1 && s->kind == KILN_STMT_RETURN && !s->value)
      break; /* the kernel's last statement: returning there changes nothing */
    KilnPtrVec before = {0};
    int here = lower_stmt(X, s, loop, &before);
    if (here == SETS_NOTHING_LEFT) continue;
    for (int j = 0; j < before.n; j++) kiln_vec_push(ar_of(X), &out, before.items[j]);
    kiln_vec_push(ar_of(X), &out, s);
    sets |= here;
    if (!here || i == b->nstmts - 1) continue;
    /* the rest of the block runs only while no flag this statement may set is set */
    if (++X->guard_depth > KILN_MAX_NESTING) {
      kiln_diag_error(X->ps->c, s->span,
                      "too many exits in one block (more than %d statements that may break, "
                      "continue or return)",
                      KILN_MAX_NESTING);
      break;
    }
    KilnSpan rest_span = kiln_span_join(b->stmts[i + 1]->span, b->stmts[b->nstmts - 1]->span);
    KilnBlock rest = {b->stmts + i + 1, b->nstmts - i - 1, rest_span};
    KilnBlock *rb = kiln_arena_alloc(ar_of(X), sizeof *rb);
    *rb = rest;
    sets |= lower_block(X, rb, loop, top);
    X->guard_depth--;
    kiln_vec_push(ar_of(X), &out, guard(X, none_set(X, here, loop, s->span), rb, rest_span));
    break;
  }
  b->stmts = (KilnStmt **)out.items;
  b->nstmts = out.n;
  return sets;
}

/* Whether a `return` other than the body's last statement occurs anywhere in b. */
static bool has_early_return(const KilnBlock *b, bool top) {
  for (int i = 0; b && i < b->nstmts; i++) {
    const KilnStmt *s = b->stmts[i];
    if (s->kind == KILN_STMT_RETURN && !s->value && !(top && i == b->nstmts - 1)) return true;
    if ((s->kind == KILN_STMT_IF || s->kind == KILN_STMT_FOR) &&
        (has_early_return(s->body, false) || has_early_return(s->else_body, false)))
      return true;
  }
  return false;
}

static void lower_body(KilnParseState *ps, KilnBlock *body, KilnSpan span, const char *what) {
  Exits X = {.ps = ps, .what = what};
  KilnStmt *ret_decl = NULL;
  if (has_early_return(body, true)) {
    X.ret = new_flag(&X, "return", span);
    ret_decl = flag_stmt(&X, X.ret);
  }
  lower_block(&X, body, NULL, true);
  if (ret_decl) {
    KilnPtrVec v = {0};
    kiln_vec_push(&ps->c->ar, &v, ret_decl);
    for (int i = 0; i < body->nstmts; i++) kiln_vec_push(&ps->c->ar, &v, body->stmts[i]);
    body->stmts = (KilnStmt **)v.items;
    body->nstmts = v.n;
  }
}

void kiln_exits_lower(KilnParseState *ps, KilnKernel *k) {
  lower_body(ps, k->body, k->span, "kernel");
}

/* A function's final `return e;` is its result (the value of the call): taken off the body
 * first, so that any other return (with a value or not) in a function that has one is refused
 * by the lowering, and a function without one may return early like a kernel. */
void kiln_exits_lower_func(KilnParseState *ps, KilnFunc *f) {
  KilnBlock *b = f->body;
  if (b->nstmts > 0 && b->stmts[b->nstmts - 1]->kind == KILN_STMT_RETURN &&
      b->stmts[b->nstmts - 1]->value) {
    f->result = b->stmts[b->nstmts - 1]->value;
    b->nstmts--;
  }
  lower_body(ps, b, f->span, f->result ? "function with a value" : "function");
}

/* `while COND { body }` as the counting loop described at the top; the parser calls this, and
 * the kernel's or function's exit lowering then lowers its break like any other. */
KilnStmt *kiln_exits_while(KilnParseState *ps, KilnExpr *cond, KilnBlock *body, KilnSpan span) {
  KilnStmt *brk = kiln_ast_stmt(ps, KILN_STMT_BREAK, cond->span);
  KilnPtrVec else_v = {0};
  kiln_vec_push(&ps->c->ar, &else_v, brk);
  KilnStmt *test = kiln_ast_stmt(ps, KILN_STMT_IF, span);
  test->cond = cond;
  test->body = body;
  test->else_body = kiln_ast_block(ps, &else_v, cond->span);
  test->while_test = true;
  KilnPtrVec body_v = {0};
  kiln_vec_push(&ps->c->ar, &body_v, test);

  KilnStmt *loop = kiln_ast_stmt(ps, KILN_STMT_FOR, span);
  KilnDecl *iv = kiln_arena_alloc(&ps->c->ar, sizeof *iv);
  iv->kind = KILN_DECL_LOOP_VAR;
  iv->name = kiln_arena_printf(&ps->c->ar, "while#%d:%d", span.line, span.col);
  iv->span = span;
  loop->decl = iv;
  loop->lo = kiln_ast_expr(ps, KILN_EXPR_INT, span);
  loop->lo->ival = 0;
  loop->hi = kiln_ast_expr(ps, KILN_EXPR_INT, span);
  loop->hi->ival = INT32_MAX;
  loop->body = kiln_ast_block(ps, &body_v, body->span);
  loop->unbounded = true;
  return loop;
}
