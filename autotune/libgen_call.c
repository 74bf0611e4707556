/* libgen_call.c — a tune block's conditions on the call (`where` clauses naming a key, such as
 * `where BLOCK >= cols`) as C in a generated library.
 *
 * The tuner evaluated such a clause with the tuned call's values; a library serves other calls,
 * so it evaluates the clause again for every call and variant (the variant's consts are
 * literals, the keys are the call's arguments) and never runs a variant whose conditions fail.
 * The arithmetic is the tuner's (kiln_tune_eval): 64-bit, and an overflow, a division by zero
 * or a shift out of range makes the condition false; `&&` and `||` evaluate both sides, as the
 * tuner does, so that an error on either side counts. */
#include "internal.h"

#include <string.h>

bool libgen_has_call_conditions(const LibKernel *k) {
  for (int i = 0; k->tune && i < k->tune->nwheres; i++)
    if (kiln_tune_where_is_call(k->tune, i)) return true;
  return false;
}

void libgen_emit_checked_ops(FILE *f, const char *L) {
  fprintf(f, "/* Checked 64-bit arithmetic of the tune blocks' conditions on the call: an overflow, a\n"
             " * division by zero or a shift out of range sets *bad (the condition fails). */\n"
             "enum { %s_CK_ADD, %s_CK_SUB, %s_CK_MUL, %s_CK_DIV, %s_CK_MOD, %s_CK_SHL, %s_CK_SHR };\n",
          L, L, L, L, L, L, L);
  fprintf(f, "%s_KILN_UNUSED static int64_t %s_kiln_ck(int op, int64_t a, int64_t b, int *bad) {\n"
             "  int64_t r = 0;\n  switch (op) {\n"
             "  case %s_CK_ADD: *bad |= __builtin_add_overflow(a, b, &r); break;\n"
             "  case %s_CK_SUB: *bad |= __builtin_sub_overflow(a, b, &r); break;\n"
             "  case %s_CK_MUL: *bad |= __builtin_mul_overflow(a, b, &r); break;\n"
             "  case %s_CK_DIV:\n  case %s_CK_MOD:\n"
             "    if (b == 0 || (a == INT64_MIN && b == -1)) *bad = 1;\n"
             "    else r = op == %s_CK_DIV ? a / b : a %% b;\n    break;\n"
             "  case %s_CK_SHL:\n"
             "    if (b < 0 || b > 62 || a < 0 || a > (INT64_MAX >> b)) *bad = 1;\n"
             "    else r = a << b;\n    break;\n"
             "  default:\n    if (b < 0 || b > 62) *bad = 1;\n    else r = a >> b;\n    break;\n"
             "  }\n  return r;\n}\n\n", L, L, L, L, L, L, L, L, L);
}

static bool is_call_param(const LibKernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++)
    if (!strcmp(k->params[i].name, name)) return true;
  return false;
}

static int64_t binding(const KilnTuneConfig *cfg, const char *name) {
  for (int b = 0; b < cfg->nbindings; b++)
    if (!strcmp(cfg->bindings[b].name, name)) return cfg->bindings[b].value;
  return 0;
}

static void emit_expr(FILE *f, const char *L, const LibKernel *k, const KilnTuneConfig *cfg,
                      const KilnExpr *e) {
  static const char *const checked[] = {
      [KILN_BIN_ADD] = "ADD", [KILN_BIN_SUB] = "SUB", [KILN_BIN_MUL] = "MUL", [KILN_BIN_DIV] = "DIV",
      [KILN_BIN_MOD] = "MOD", [KILN_BIN_SHL] = "SHL", [KILN_BIN_SHR] = "SHR"};
  static const char *const plain[] = {
      [KILN_BIN_LT] = "<", [KILN_BIN_LE] = "<=", [KILN_BIN_GT] = ">", [KILN_BIN_GE] = ">=",
      [KILN_BIN_EQ] = "==", [KILN_BIN_NE] = "!=", [KILN_BIN_BITAND] = "&", [KILN_BIN_BITOR] = "|",
      [KILN_BIN_BITXOR] = "^"};
  switch (e->kind) {
  case KILN_EXPR_INT:
  case KILN_EXPR_BOOL: fprintf(f, "INT64_C(%lld)", (long long)e->ival); return;
  case KILN_EXPR_TYPE: fprintf(f, "INT64_C(%d)", (int)e->cast_to->scalar); return;
  case KILN_EXPR_NAME:
    if (is_call_param(k, e->name)) fprintf(f, "(int64_t)%s", e->name);
    else fprintf(f, "INT64_C(%lld)", (long long)binding(cfg, e->name));
    return;
  case KILN_EXPR_UNARY:
    if (e->unop == KILN_UN_NEG) fprintf(f, "%s_kiln_ck(%s_CK_SUB, 0, ", L, L);
    else fputs(e->unop == KILN_UN_NOT ? "(int64_t)!(" : "~(", f);
    emit_expr(f, L, k, cfg, e->lhs);
    fputs(e->unop == KILN_UN_NEG ? ", &kiln_bad)" : ")", f);
    return;
  case KILN_EXPR_BINARY: {
    int op = (int)e->binop;
    bool is_checked = op < (int)(sizeof checked / sizeof *checked) && checked[op];
    bool is_logic = e->binop == KILN_BIN_AND || e->binop == KILN_BIN_OR;
    if (is_checked) fprintf(f, "%s_kiln_ck(%s_CK_%s, ", L, L, checked[op]);
    else fputs(is_logic ? "(int64_t)(((" : "(int64_t)(", f);
    emit_expr(f, L, k, cfg, e->lhs);
    if (is_checked) fputs(", ", f);
    else if (is_logic) fprintf(f, ") != 0) %s ((", e->binop == KILN_BIN_AND ? "&" : "|");
    else fprintf(f, " %s ", plain[op]);
    emit_expr(f, L, k, cfg, e->rhs);
    fputs(is_checked ? ", &kiln_bad)" : is_logic ? ") != 0))" : ")", f);
    return;
  }
  default: fputs("INT64_C(0)", f); return; /* sema admits no other form (kiln_tune_check) */
  }
}

void libgen_emit_fits(FILE *f, const char *L, const LibKernel *k,
                      void (*params)(FILE *, const LibKernel *, bool)) {
  const KilnTune *t = k->tune;
  fprintf(f, "/* Whether variant kiln_v may run this call: the tune block's conditions on the call */\n"
             "static int %s_%s_fits(int kiln_v, ", L, k->name);
  params(f, k, true);
  fprintf(f, ") {\n  int kiln_bad = 0, kiln_ok = 1;\n");
  for (int i = 0; i < k->nparams; i++)
    if (!k->params[i].is_ptr && !tune_scalar_is_float(k->params[i].scalar))
      fprintf(f, "  (void)%s;\n", k->params[i].name);
  fprintf(f, "  switch (kiln_v) {\n");
  for (int v = 0; v < k->nvariants; v++) {
    fprintf(f, "  case %d:\n    kiln_ok = 1", v);
    for (int i = 0; i < t->nwheres; i++) {
      if (!kiln_tune_where_is_call(t, i)) continue;
      fputs(" &\n         (", f);
      emit_expr(f, L, k, &k->variants[v].cfg, t->wheres[i]);
      fputs(" != 0)", f);
    }
    fprintf(f, ";\n    break;\n");
  }
  fprintf(f, "  default:\n    break;\n  }\n  return kiln_ok && !kiln_bad;\n}\n\n");
}
