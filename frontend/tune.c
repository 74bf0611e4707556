/* tune.c: tune blocks: the constant evaluator for their values and `where` clauses, the
 * enumeration of configurations (a mixed-radix counter over the value lists), presets, and
 * the check of a block against its kernel. */
#include "frontend_internal.h"

#include <stdint.h>
#include <string.h>

typedef struct Eval {
  KilnArena *ar;
  const KilnBinding *b;
  int nb;
  const char *err;
  KilnSpan err_span;
} Eval;

static bool fail(Eval *ev, KilnSpan span, const char *msg) {
  if (!ev->err) {
    ev->err = msg;
    ev->err_span = span;
  }
  return false;
}

static bool eval(Eval *ev, const KilnExpr *e, int64_t *out);

static bool eval_binary(Eval *ev, const KilnExpr *e, int64_t *out) {
  int64_t a, b;
  if (!eval(ev, e->lhs, &a) || !eval(ev, e->rhs, &b)) return false;
  switch (e->binop) {
  case KILN_BIN_ADD:
    if (__builtin_add_overflow(a, b, out))
      return fail(ev, e->span, "integer overflow in constant expression");
    return true;
  case KILN_BIN_SUB:
    if (__builtin_sub_overflow(a, b, out))
      return fail(ev, e->span, "integer overflow in constant expression");
    return true;
  case KILN_BIN_MUL:
    if (__builtin_mul_overflow(a, b, out))
      return fail(ev, e->span, "integer overflow in constant expression");
    return true;
  case KILN_BIN_DIV:
  case KILN_BIN_MOD:
    if (b == 0) return fail(ev, e->rhs->span, "division by zero in constant expression");
    if (a == INT64_MIN && b == -1)
      return fail(ev, e->span, "integer overflow in constant expression");
    *out = e->binop == KILN_BIN_DIV ? a / b : a % b;
    return true;
  case KILN_BIN_SHL:
  case KILN_BIN_SHR:
    if (b < 0 || b > 62)
      return fail(ev, e->rhs->span, "shift count out of range in constant expression");
    if (e->binop == KILN_BIN_SHR) {
      *out = a >> b;
      return true;
    }
    if (a < 0 || a > (INT64_MAX >> b))
      return fail(ev, e->span, "integer overflow in constant expression");
    *out = a << b;
    return true;
  case KILN_BIN_LT: *out = a < b; return true;
  case KILN_BIN_LE: *out = a <= b; return true;
  case KILN_BIN_GT: *out = a > b; return true;
  case KILN_BIN_GE: *out = a >= b; return true;
  case KILN_BIN_EQ: *out = a == b; return true;
  case KILN_BIN_NE: *out = a != b; return true;
  case KILN_BIN_BITAND: *out = a & b; return true;
  case KILN_BIN_BITOR: *out = a | b; return true;
  case KILN_BIN_BITXOR: *out = a ^ b; return true;
  case KILN_BIN_AND: *out = a && b; return true;
  case KILN_BIN_OR: *out = a || b; return true;
  case KILN_BIN_POW: return fail(ev, e->span, "'**' is not supported in tune blocks");
  case KILN_BIN_COUNT: break;
  }
  KILN_ASSERT(!"unknown binary operator");
  return false;
}

/* Evaluation recurses over the expression; the parser bounded its depth. */
static bool eval(Eval *ev, const KilnExpr *e, int64_t *out) {
  switch (e->kind) {
  case KILN_EXPR_INT:
  case KILN_EXPR_BOOL: *out = e->ival; return true;
  case KILN_EXPR_NAME:
    for (int i = 0; i < ev->nb; i++)
      if (strcmp(ev->b[i].name, e->name) == 0) {
        *out = ev->b[i].value;
        return true;
      }
    return fail(ev, e->span,
                kiln_arena_printf(ev->ar, "'%s' has no value in this tune block", e->name));
  case KILN_EXPR_UNARY: {
    int64_t v;
    if (!eval(ev, e->lhs, &v)) return false;
    if (e->unop == KILN_UN_NEG) {
      if (v == INT64_MIN) return fail(ev, e->span, "integer overflow in constant expression");
      *out = -v;
    } else {
      *out = e->unop == KILN_UN_NOT ? !v : ~v;
    }
    return true;
  }
  case KILN_EXPR_BINARY: return eval_binary(ev, e, out);
  case KILN_EXPR_TYPE: *out = e->cast_to->scalar; return true; /* a type parameter's value */
  case KILN_EXPR_FLOAT: return fail(ev, e->span, "tune values must be integer constants");
  default: return fail(ev, e->span, "expected an integer constant expression");
  }
}

bool kiln_tune_eval(KilnArena *ar, const KilnExpr *e, const KilnBinding *b, int nb, int64_t *out,
                    const char **err, KilnSpan *err_span) {
  Eval ev = {ar, b, nb, NULL, {0, 0, 0, 0}};
  if (eval(&ev, e, out)) return true;
  *err = ev.err ? ev.err : "bad constant expression";
  *err_span = ev.err_span;
  return false;
}

/* ---------------------------------------------------------------- configurations */

size_t kiln_tune_config_count(const KilnTune *t) {
  size_t n = 1;
  for (int i = 0; i < t->nparams; i++) {
    size_t v = (size_t)t->params[i].nvalues;
    if (v == 0) return 0;
    if (__builtin_mul_overflow(n, v, &n)) return SIZE_MAX;
  }
  return n;
}

/* Appends num_warps / num_stages when the block does not list them, and mirrors them into the
 * dedicated fields. */
static void finish_config(KilnTuneConfig *out) {
  bool has_w = false, has_s = false;
  out->num_warps = 4;
  out->num_stages = 2;
  for (int i = 0; i < out->nbindings; i++) {
    if (strcmp(out->bindings[i].name, "num_warps") == 0) {
      has_w = true;
      out->num_warps = (int)out->bindings[i].value;
    } else if (strcmp(out->bindings[i].name, "num_stages") == 0) {
      has_s = true;
      out->num_stages = (int)out->bindings[i].value;
    }
  }
  if (!has_w) out->bindings[out->nbindings++] = (KilnBinding){"num_warps", 4};
  if (!has_s) out->bindings[out->nbindings++] = (KilnBinding){"num_stages", 2};
}

bool kiln_tune_config_get(const KilnTune *t, size_t i, KilnTuneConfig *out) {
  memset(out, 0, sizeof *out);
  if (t->nparams > 30 || i >= kiln_tune_config_count(t)) return false;
  for (int p = t->nparams - 1; p >= 0; p--) {
    size_t nv = (size_t)t->params[p].nvalues;
    out->bindings[p] = (KilnBinding){t->params[p].name, t->params[p].values[i % nv]};
    i /= nv;
  }
  out->nbindings = t->nparams;
  finish_config(out);
  return true;
}

bool kiln_tune_preset_get(const KilnTune *t, const char *name, KilnTuneConfig *out) {
  const KilnTunePreset *pr = NULL;
  for (int i = 0; i < t->npresets; i++)
    if (strcmp(t->presets[i].name, name) == 0) pr = &t->presets[i];
  if (!pr || !kiln_tune_config_get(t, 0, out)) return false;
  out->nbindings = t->nparams; /* drop the appended defaults; finish_config redoes them */
  for (int a = 0; a < pr->nassigns; a++) {
    int j = 0;
    while (j < out->nbindings && strcmp(out->bindings[j].name, pr->assigns[a].name) != 0) j++;
    if (j == out->nbindings) {
      if (out->nbindings >= 30) return false;
      out->nbindings++;
    }
    out->bindings[j] = (KilnBinding){pr->assigns[a].name, pr->assigns[a].value};
  }
  finish_config(out);
  return true;
}

bool kiln_tune_preset_applies(const KilnTune *t, int i, const KilnTuneConfig *cfg) {
  KILN_ASSERT(i >= 0 && i < t->npresets);
  const KilnExpr *cond = t->presets[i].cond;
  if (!cond) return true;
  KilnArena ar;
  kiln_arena_init(&ar);
  int64_t v = 0;
  const char *err;
  KilnSpan sp;
  bool ok = kiln_tune_eval(&ar, cond, cfg->bindings, cfg->nbindings, &v, &err, &sp) && v != 0;
  kiln_arena_free(&ar);
  return ok;
}

static bool names_key(const KilnTune *t, const KilnExpr *e) {
  if (!e) return false;
  if (e->kind == KILN_EXPR_NAME)
    for (int k = 0; k < t->nkeys; k++)
      if (strcmp(t->keys[k], e->name) == 0) return true;
  return names_key(t, e->lhs) || names_key(t, e->rhs);
}

bool kiln_tune_where_is_call(const KilnTune *t, int i) {
  return i >= 0 && i < t->nwheres && names_key(t, t->wheres[i]);
}

/* Every `where` (with args: the conditions on the call too, their names bound after cfg's). */
static bool wheres_hold(KilnCompilation *c, const KilnTune *t, const KilnTuneConfig *cfg,
                        const KilnBinding *args, int nargs, bool with_call) {
  KilnBinding b[64];
  int nb = 0;
  for (int i = 0; i < cfg->nbindings && nb < 64; i++) b[nb++] = cfg->bindings[i];
  for (int i = 0; i < nargs && nb < 64; i++) b[nb++] = args[i];
  KilnArena ar;
  kiln_arena_init(&ar);
  bool ok = true;
  for (int i = 0; i < t->nwheres && ok; i++) {
    if (!with_call && kiln_tune_where_is_call(t, i)) continue;
    int64_t v;
    const char *err;
    KilnSpan sp;
    if (!kiln_tune_eval(&ar, t->wheres[i], b, nb, &v, &err, &sp)) {
      if (c) kiln_diag_add(c, KILN_SEV_ERROR, sp, err);
      ok = false;
    } else {
      ok = v != 0;
    }
  }
  kiln_arena_free(&ar);
  return ok;
}

bool kiln_tune_where_ok(KilnCompilation *c, const KilnTune *t, const KilnTuneConfig *cfg) {
  return wheres_hold(c, t, cfg, NULL, 0, false);
}

bool kiln_tune_where_ok_call(KilnCompilation *c, const KilnTune *t, const KilnTuneConfig *cfg,
                             const KilnBinding *args, int nargs) {
  return wheres_hold(c, t, cfg, args, nargs, true);
}

/* A condition on the call is checked by its form, having no values here: integer literals,
 * the block's parameters and keys, unary and binary operators. */
static void check_call_where(KilnCompilation *c, const KilnTune *t, const KilnExpr *e) {
  switch (e->kind) {
  case KILN_EXPR_INT:
  case KILN_EXPR_BOOL:
  case KILN_EXPR_TYPE: return;
  case KILN_EXPR_NAME: {
    bool known = kiln_meta_param_is(e->name);
    for (int i = 0; i < t->nparams && !known; i++) known = strcmp(t->params[i].name, e->name) == 0;
    for (int i = 0; i < t->nkeys && !known; i++) known = strcmp(t->keys[i], e->name) == 0;
    if (!known) kiln_diag_error(c, e->span, "'%s' has no value in this tune block", e->name);
    return;
  }
  case KILN_EXPR_UNARY: check_call_where(c, t, e->lhs); return;
  case KILN_EXPR_BINARY:
    check_call_where(c, t, e->lhs);
    check_call_where(c, t, e->rhs);
    return;
  case KILN_EXPR_FLOAT:
    kiln_diag_error(c, e->span, "tune values must be integer constants");
    return;
  default: kiln_diag_error(c, e->span, "expected an integer constant expression"); return;
  }
}

/* A preset's condition chooses between configurations of the block, so it may name what a
 * configuration binds: the block's parameters (a pinned type included) and the meta names
 * (num_warps, num_stages, min_blocks, wgmma). A key has a value per call, not per
 * configuration, and anything else none. */
static void check_preset_cond(KilnCompilation *c, const KilnTune *t, const KilnTunePreset *pr,
                              const KilnExpr *e) {
  if (!e) return;
  if (e->kind != KILN_EXPR_NAME) {
    check_preset_cond(c, t, pr, e->lhs);
    check_preset_cond(c, t, pr, e->rhs);
    return;
  }
  bool known = kiln_meta_param_is(e->name);
  for (int i = 0; i < t->nparams && !known; i++) known = strcmp(t->params[i].name, e->name) == 0;
  for (int i = 0; i < t->nkeys && !known; i++)
    if (strcmp(t->keys[i], e->name) == 0) {
      kiln_diag_error(c, e->span,
                      "the condition of preset '%s' names key '%s': a preset is chosen per "
                      "configuration, not per call (write a `where` clause of the block)",
                      pr->name, e->name);
      return;
    }
  if (!known)
    kiln_diag_error(c, e->span,
                    "the condition of preset '%s' names '%s', which is not a parameter of this "
                    "tune block",
                    pr->name, e->name);
}

/* The names of preset i's condition, then its value on the preset's own configuration: an
 * error there (a division by zero, min_blocks that nothing binds) is reported at its place. */
static void check_preset_where(KilnCompilation *c, const KilnTune *t, int i) {
  const KilnTunePreset *pr = &t->presets[i];
  if (!pr->cond) return;
  size_t before = kiln_diag_count_errors(c);
  check_preset_cond(c, t, pr, pr->cond);
  KilnTuneConfig cfg;
  if (kiln_diag_count_errors(c) != before || !kiln_tune_preset_get(t, pr->name, &cfg)) return;
  KilnArena ar;
  kiln_arena_init(&ar);
  int64_t v;
  const char *err;
  KilnSpan sp;
  if (!kiln_tune_eval(&ar, pr->cond, cfg.bindings, cfg.nbindings, &v, &err, &sp))
    kiln_diag_add(c, KILN_SEV_ERROR, sp, err);
  kiln_arena_free(&ar);
}

/* ---------------------------------------------------------------- checking */

static const KilnDecl *find_param(const KilnKernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++)
    if (strcmp(k->params[i]->name, name) == 0) return k->params[i];
  return NULL;
}

void kiln_tune_check(KilnCompilation *c, KilnTune *t) {
  const KilnKernel *k = t->kernel;
  KILN_ASSERT(k);
  for (int i = 0; i < t->nkeys; i++) {
    const KilnDecl *p = find_param(k, t->keys[i]);
    if (!p)
      kiln_diag_error(c, t->key_spans[i], "key '%s' is not a parameter of kernel '%s'", t->keys[i],
                      k->name);
    else if (p->kind == KILN_DECL_CONST_PARAM)
      kiln_diag_error(c, t->key_spans[i], "key '%s' must name a non-const parameter", t->keys[i]);
  }
  for (int i = 0; i < t->nparams; i++) {
    const KilnTuneParam *tp = &t->params[i];
    const KilnDecl *p = find_param(k, tp->name);
    if (!kiln_meta_param_is(tp->name) && (!p || p->kind != KILN_DECL_CONST_PARAM))
      kiln_diag_error(c, tp->span, "'%s' is not a const parameter of kernel '%s'", tp->name,
                      k->name);
    for (int j = 0; j < i; j++)
      if (strcmp(t->params[j].name, tp->name) == 0)
        kiln_diag_error(c, tp->span, "'%s' is listed twice in the tune block", tp->name);
    for (int v = 0; v < tp->nvalues; v++) {
      int64_t x = tp->values[v];
      bool meta = kiln_meta_param_is(tp->name);
      int64_t lo = meta ? kiln_meta_param_min(tp->name) : INT32_MIN;
      int64_t hi = meta ? kiln_meta_param_max(tp->name) : INT32_MAX;
      if (x < lo || x > hi) {
        kiln_diag_error(c, tp->span, "value %lld of '%s' is out of range (%lld..%lld)",
                        (long long)x, tp->name, (long long)lo, (long long)hi);
        break;
      }
    }
  }
  for (int i = 0; i < k->nparams; i++) {
    const KilnDecl *p = k->params[i];
    if (p->kind != KILN_DECL_CONST_PARAM) continue;
    int j = 0;
    while (j < t->nparams && strcmp(t->params[j].name, p->name) != 0) j++;
    if (j == t->nparams)
      kiln_diag_error(c, t->span, "const parameter '%s' has no values in the tune block", p->name);
  }
  for (int i = 0; i < t->npresets; i++) {
    const KilnTunePreset *pr = &t->presets[i];
    for (int a = 0; a < pr->nassigns; a++) {
      const KilnDecl *p = find_param(k, pr->assigns[a].name);
      if (!kiln_meta_param_is(pr->assigns[a].name) && (!p || p->kind != KILN_DECL_CONST_PARAM))
        kiln_diag_error(c, pr->assigns[a].span, "'%s' is not a const parameter of kernel '%s'",
                        pr->assigns[a].name, k->name);
    }
    for (int j = 0; j < i; j++)
      if (strcmp(t->presets[j].name, pr->name) == 0)
        kiln_diag_error(c, pr->span, "preset '%s' is defined twice", pr->name);
    check_preset_where(c, t, i);
  }
  /* `where` may only use the tuned names and the keys: evaluating the clauses without keys on
     * the first point finds the rest; those with keys are checked by their form. */
  KilnTuneConfig cfg;
  if (t->nwheres && kiln_tune_config_get(t, 0, &cfg)) kiln_tune_where_ok(c, t, &cfg);
  for (int i = 0; i < t->nwheres; i++)
    if (kiln_tune_where_is_call(t, i)) check_call_where(c, t, t->wheres[i]);
}
