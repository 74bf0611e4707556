/* libgen_call.c — a tune block's conditions on the call (`where` clauses naming a key, such as
 * `where BLOCK >= cols`) as C in a generated library.
 *
 * The tuner evaluated such a clause with the tuned call's values; a library serves other calls,
 * so it evaluates the clause again for every call and variant (the variant's consts are
 * literals, the keys are the call's arguments) and never runs a variant whose conditions fail.
 * The arithmetic is the tuner's (kiln_tune_eval): 64-bit, and an overflow, a division by zero
 * or a shift out of range makes the condition false; `&&` and `||` evaluate both sides, as the
 * tuner does, so that an error on either side counts. The conditions reach the C as their
 * trees only: evaluated in checked operations, and shown (in the header's comments and in the
 * message of a refused call) re-printed from the tree, never as the source text, whose comments
 * could end a C comment (libgen_names.c). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

bool libgen_has_call_conditions(const LibKernel *k) {
  for (int i = 0; k->tune && i < k->tune->nwheres; i++)
    if (kiln_tune_where_is_call(k->tune, i)) return true;
  return false;
}

void libgen_emit_checked_ops(FILE *f) {
  fprintf(f,
          "/* Checked 64-bit arithmetic of the conditions on the call and the grid rules: an\n"
          " * overflow, a division by zero, a shift out of range or a cdiv by a divisor < 1 sets\n"
          " * *bad (the condition fails, the grid is refused), as in the tuner. */\n"
          "enum { KILN_GEN_CK_ADD, KILN_GEN_CK_SUB, KILN_GEN_CK_MUL, KILN_GEN_CK_DIV, "
          "KILN_GEN_CK_MOD,\n       KILN_GEN_CK_SHL, KILN_GEN_CK_SHR, KILN_GEN_CK_CDIV };\n");
  fprintf(f,
          "KILN_GEN_UNUSED static int64_t kiln_gen_ck(int op, int64_t a, int64_t b, int *bad) {\n"
          "  int64_t r = 0;\n  switch (op) {\n"
          "  case KILN_GEN_CK_ADD: *bad |= __builtin_add_overflow(a, b, &r); break;\n"
          "  case KILN_GEN_CK_SUB: *bad |= __builtin_sub_overflow(a, b, &r); break;\n"
          "  case KILN_GEN_CK_MUL: *bad |= __builtin_mul_overflow(a, b, &r); break;\n"
          "  case KILN_GEN_CK_DIV:\n  case KILN_GEN_CK_MOD:\n"
          "    if (b == 0 || (a == INT64_MIN && b == -1)) *bad = 1;\n"
          "    else r = op == KILN_GEN_CK_DIV ? a / b : a %% b;\n    break;\n"
          "  case KILN_GEN_CK_SHL:\n"
          "    if (b < 0 || b > 62 || a < 0 || a > (INT64_MAX >> b)) *bad = 1;\n"
          "    else r = a << b;\n    break;\n"
          "  case KILN_GEN_CK_CDIV:\n"
          "    if (b <= 0 || a > INT64_MAX - (b - 1)) *bad = 1;\n"
          "    else r = (a + b - 1) / b;\n    break;\n"
          "  default:\n    if (b < 0 || b > 62) *bad = 1;\n    else r = a >> b;\n    break;\n"
          "  }\n  return r;\n}\n\n");
}

/* The position of an integer parameter among the kernel's parameters, or -1. */
static int param_index(const LibKernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++)
    if (!strcmp(k->params[i].name, name)) return i;
  return -1;
}

static int64_t binding(const KilnTuneConfig *cfg, const char *name) {
  for (int b = 0; b < cfg->nbindings; b++)
    if (!strcmp(cfg->bindings[b].name, name)) return cfg->bindings[b].value;
  return 0;
}

static const char *const bin_text[KILN_BIN_COUNT] = {
    [KILN_BIN_ADD] = "+",  [KILN_BIN_SUB] = "-",    [KILN_BIN_MUL] = "*",   [KILN_BIN_DIV] = "/",
    [KILN_BIN_MOD] = "%",  [KILN_BIN_SHL] = "<<",   [KILN_BIN_SHR] = ">>",  [KILN_BIN_LT] = "<",
    [KILN_BIN_LE] = "<=",  [KILN_BIN_GT] = ">",     [KILN_BIN_GE] = ">=",   [KILN_BIN_EQ] = "==",
    [KILN_BIN_NE] = "!=",  [KILN_BIN_BITAND] = "&", [KILN_BIN_BITOR] = "|", [KILN_BIN_BITXOR] = "^",
    [KILN_BIN_AND] = "&&", [KILN_BIN_OR] = "||"};

void libgen_print_where(FILE *f, const KilnExpr *e, bool top) {
  switch (e->kind) {
  case KILN_EXPR_INT: fprintf(f, "%lld", (long long)e->ival); return;
  case KILN_EXPR_BOOL: fputs(e->ival ? "true" : "false", f); return;
  case KILN_EXPR_TYPE: fputs(kiln_scalar_name(e->cast_to->scalar), f); return;
  case KILN_EXPR_NAME: fputs(e->name, f); return;
  case KILN_EXPR_UNARY:
    fputc(e->unop == KILN_UN_NEG ? '-' : e->unop == KILN_UN_NOT ? '!' : '~', f);
    if (e->lhs->kind == KILN_EXPR_UNARY) fputc(' ', f); /* "- -n", never "--n" */
    libgen_print_where(f, e->lhs, false);
    return;
  case KILN_EXPR_BINARY:
    if (!top) fputc('(', f);
    libgen_print_where(f, e->lhs, false);
    fprintf(f, " %s ",
            (unsigned)e->binop < KILN_BIN_COUNT && bin_text[e->binop] ? bin_text[e->binop] : "?");
    libgen_print_where(f, e->rhs, false);
    if (!top) fputc(')', f);
    return;
  default: fputs("?", f); return; /* sema admits no other form (kiln_tune_check) */
  }
}

/* The position of a const of k, or -1. */
static int const_index(const LibKernel *k, const char *name) {
  for (int i = 0; i < k->nconsts; i++)
    if (!strcmp(k->consts[i], name)) return i;
  return -1;
}

static bool is_row_field(const char *name) {
  return !strcmp(name, "num_warps") || !strcmp(name, "num_stages");
}

/* Whether every name of e is a parameter or a field of the config struct (a const, num_warps,
 * num_stages): then a row's config alone decides e, and rows added later can be checked. */
static bool expr_reads_rows(const LibKernel *k, const KilnExpr *e) {
  switch (e->kind) {
  case KILN_EXPR_NAME:
    return param_index(k, e->name) >= 0 || const_index(k, e->name) >= 0 || is_row_field(e->name);
  case KILN_EXPR_UNARY: return expr_reads_rows(k, e->lhs);
  case KILN_EXPR_BINARY: return expr_reads_rows(k, e->lhs) && expr_reads_rows(k, e->rhs);
  default: return true;
  }
}

bool libgen_conditions_read_rows(const LibKernel *k) {
  for (int i = 0; k->tune && i < k->tune->nwheres; i++)
    if (kiln_tune_where_is_call(k->tune, i) && !expr_reads_rows(k, k->tune->wheres[i]))
      return false;
  return true;
}

/* A name of a condition as C: a parameter p<i>; a const or num_warps/num_stages from cfg (a
 * variant's literal) or, with cfg NULL, from the row's config `c` (L: the library, for the
 * field's name). */
static void emit_name(FILE *f, const char *L, const LibKernel *k, const KilnTuneConfig *cfg,
                      const char *name) {
  int i = param_index(k, name);
  if (i >= 0) {
    fprintf(f, "(int64_t)p%d", i);
    return;
  }
  if (cfg) {
    fprintf(f, "INT64_C(%lld)", (long long)binding(cfg, name));
    return;
  }
  char field[80];
  if (is_row_field(name))
    snprintf(field, sizeof field, "%s", name);
  else
    libgen_c_name(L, name, field, sizeof field);
  fprintf(f, "(int64_t)c->%s", field);
}

static void emit_expr(FILE *f, const char *L, const LibKernel *k, const KilnTuneConfig *cfg,
                      const KilnExpr *e) {
  static const char *const checked[] = {
      [KILN_BIN_ADD] = "ADD", [KILN_BIN_SUB] = "SUB", [KILN_BIN_MUL] = "MUL",
      [KILN_BIN_DIV] = "DIV", [KILN_BIN_MOD] = "MOD", [KILN_BIN_SHL] = "SHL",
      [KILN_BIN_SHR] = "SHR"};
  switch (e->kind) {
  case KILN_EXPR_INT:
  case KILN_EXPR_BOOL: fprintf(f, "INT64_C(%lld)", (long long)e->ival); return;
  case KILN_EXPR_TYPE: fprintf(f, "INT64_C(%d)", (int)e->cast_to->scalar); return;
  case KILN_EXPR_NAME: emit_name(f, L, k, cfg, e->name); return;
  case KILN_EXPR_UNARY:
    if (e->unop == KILN_UN_NEG)
      fprintf(f, "kiln_gen_ck(KILN_GEN_CK_SUB, 0, ");
    else
      fputs(e->unop == KILN_UN_NOT ? "(int64_t)!(" : "~(", f);
    emit_expr(f, L, k, cfg, e->lhs);
    fputs(e->unop == KILN_UN_NEG ? ", bad)" : ")", f);
    return;
  case KILN_EXPR_BINARY: {
    int op = (int)e->binop;
    bool is_checked = op < (int)(sizeof checked / sizeof *checked) && checked[op];
    bool is_logic = e->binop == KILN_BIN_AND || e->binop == KILN_BIN_OR;
    if (is_checked)
      fprintf(f, "kiln_gen_ck(KILN_GEN_CK_%s, ", checked[op]);
    else
      fputs(is_logic ? "(int64_t)(((" : "(int64_t)(", f);
    emit_expr(f, L, k, cfg, e->lhs);
    if (is_checked)
      fputs(", ", f);
    else if (is_logic)
      fprintf(f, ") != 0) %s ((", e->binop == KILN_BIN_AND ? "&" : "|");
    else
      fprintf(f, " %s ", bin_text[op]);
    emit_expr(f, L, k, cfg, e->rhs);
    fputs(is_checked ? ", bad)" : is_logic ? ") != 0))" : ")", f);
    return;
  }
  default: fputs("INT64_C(0)", f); return; /* sema admits no other form (kiln_tune_check) */
  }
}

/* The checks of every condition on the call, cfg's values (NULL: the row's config c). */
static void emit_conditions(FILE *f, const char *L, const LibKernel *k, const KilnTuneConfig *cfg) {
  const KilnTune *t = k->tune;
  const char *in = cfg ? "" : "  "; /* a row's conditions sit in a block of their own */
  for (int i = 0; i < t->nwheres; i++) {
    if (!kiln_tune_where_is_call(t, i)) continue;
    fprintf(f, "%s    ck = 0;\n%s    if (!(", in, in);
    emit_expr(f, L, k, cfg, t->wheres[i]);
    fprintf(f, " != 0) || ck) {\n%s      *why = ", in);
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (m) {
      fputs("where ", m);
      libgen_print_where(m, t->wheres[i], true);
      fclose(m);
    }
    libgen_c_string(f, text ? text : "where ...");
    free(text);
    fprintf(f, ";\n%s      return 0;\n%s    }\n", in, in);
  }
}

void libgen_emit_fits(FILE *f, const char *L, const LibKernel *k, int ki,
                      void (*params)(FILE *, const LibKernel *, bool)) {
  fprintf(f,
          "/* Whether variant v may run this call: the tune block's conditions on the call; the\n"
          " * first that fails in *why. */\n"
          "static int kiln_gen_fits%d(int v, ",
          ki);
  params(f, k, true);
  fprintf(f, ", const char **why) {\n  int ck = 0, *bad = &ck;\n  (void)bad;\n");
  for (int i = 0; i < k->nparams; i++)
    if (!k->params[i].is_ptr && !kiln_scalar_is_float(k->params[i].scalar))
      fprintf(f, "  (void)p%d;\n", i);
  fprintf(f, "  switch (v) {\n");
  for (int v = 0; v < k->nvariants; v++) {
    fprintf(f, "  case %d:\n", v);
    emit_conditions(f, L, k, &k->variants[v].cfg);
    fprintf(f, "    return 1;\n");
  }
  /* rows added later (NAME.tuned.h): the same conditions over the row's own config */
  fprintf(f, "  default:\n");
  if (libgen_conditions_read_rows(k)) {
    fprintf(f, "    if (v >= %d + KILN_GEN_TUNED_N%d) return 0;\n", k->nvariants, ki);
    fprintf(f, "    {\n      const %s_%s_config *c = &kiln_gen_table%d[v].cfg;\n", L, k->name, ki);
    emit_conditions(f, L, k, NULL);
    fprintf(f, "      (void)c;\n    }\n    return 1;\n");
  } else {
    fprintf(f, "    return 0; /* a condition names what a row's config does not hold */\n");
  }
  fprintf(f, "  }\n}\n\n");
}
