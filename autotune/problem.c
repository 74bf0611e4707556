/* problem.c — the values a kernel is called with: integer expressions (sizes, grids), buffer
 * contents and grids. No frontend and no MLIR: the bundle runner (runtime-only builds) shares
 * this file with `kiln tune`, so a kernel gets the same inputs on both paths.
 *
 * Buffers are filled from a splitmix64 stream seeded by (seed, parameter position), so every
 * child and every run sees the same inputs. Default fill: floats uniform in [-1, 1), integers
 * uniform in [0, 16). */
#include "tune_core.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- integer expressions
 *
 * An expression is parsed into a tree first and evaluated from it, so that the generated
 * library can print the same tree as C (libgen.c): code is only ever made from what parsed,
 * never from the text the user wrote. */

typedef struct Parse {
  const char *s;
  TuneExpr *e;
  int depth;
  char *err;
  size_t cap;
  bool failed;
} Parse;

static int parse_expr(Parse *p);

static void skip_ws(Parse *p) {
  while (isspace((unsigned char)*p->s)) p->s++;
}

static int parse_fail(Parse *p, const char *msg, const char *what) {
  if (!p->failed) snprintf(p->err, p->cap, "%s%s%s", msg, what ? " " : "", what ? what : "");
  p->failed = true;
  return -1;
}

/* A new node over operands lhs and rhs (-1: none); -1 (reported) when the expression has more
 * than TUNE_EXPR_MAX_NODES nodes. */
static int node(Parse *p, TuneExprOp op, int lhs, int rhs) {
  if (p->e->count == TUNE_EXPR_MAX_NODES)
    return parse_fail(p, "expression too long (more than 256 terms)", NULL);
  TuneExprNode *n = &p->e->n[p->e->count];
  memset(n, 0, sizeof *n);
  n->op = op;
  n->lhs = lhs;
  n->rhs = rhs;
  return p->e->count++;
}

/* call := ('cdiv' | 'min' | 'max') '(' expr ',' expr ')' */
static int parse_call(Parse *p, const char *fn) {
  TuneExprOp op = !strcmp(fn, "cdiv")  ? TX_CDIV
                  : !strcmp(fn, "min") ? TX_MIN
                  : !strcmp(fn, "max") ? TX_MAX
                                       : TX_INT;
  if (op == TX_INT) return parse_fail(p, "unknown function", fn);
  p->s++; /* '(' */
  int a = parse_expr(p);
  if (a < 0) return -1;
  skip_ws(p);
  if (*p->s != ',') return parse_fail(p, "expected ',' in call of", fn);
  p->s++;
  int b = parse_expr(p);
  if (b < 0) return -1;
  skip_ws(p);
  if (*p->s != ')') return parse_fail(p, "expected ')' after arguments of", fn);
  p->s++;
  return node(p, op, a, b);
}

/* primary := INT | NAME | call | '(' expr ')' | '-' primary */
static int parse_primary(Parse *p) {
  skip_ws(p);
  if (++p->depth > TUNE_EXPR_MAX_DEPTH) return parse_fail(p, "expression nested too deeply", NULL);
  int r;
  if (*p->s == '(') {
    p->s++;
    r = parse_expr(p);
    skip_ws(p);
    if (r >= 0 && *p->s != ')')
      r = parse_fail(p, "expected ')'", NULL);
    else if (r >= 0)
      p->s++;
  } else if (*p->s == '-') {
    p->s++;
    r = parse_primary(p);
    if (r >= 0) r = node(p, TX_NEG, r, -1);
  } else if (isdigit((unsigned char)*p->s)) {
    char *end;
    errno = 0;
    long long v = strtoll(p->s, &end, 0);
    if (errno) return parse_fail(p, "integer literal out of range", NULL);
    p->s = end;
    if ((r = node(p, TX_INT, 0, -1)) >= 0) p->e->n[r].ival = v;
  } else if (isalpha((unsigned char)*p->s) || *p->s == '_') {
    char name[64];
    size_t len = 0;
    while (isalnum((unsigned char)p->s[len]) || p->s[len] == '_') len++;
    if (len >= sizeof name) return parse_fail(p, "name too long:", p->s);
    memcpy(name, p->s, len);
    name[len] = '\0';
    p->s += len;
    skip_ws(p);
    if (*p->s == '(') {
      r = parse_call(p, name);
    } else if ((r = node(p, TX_NAME, 0, -1)) >= 0) {
      memcpy(p->e->n[r].name, name, len + 1);
    }
  } else {
    r = parse_fail(p, "expected a number, a name or '('", NULL);
  }
  p->depth--;
  return r;
}

/* term := primary (('*' | '/' | '%') primary)* */
static int parse_term(Parse *p) {
  int l = parse_primary(p);
  for (;;) {
    if (l < 0) return -1;
    skip_ws(p);
    char op = *p->s;
    if (op != '*' && op != '/' && op != '%') return l;
    p->s++;
    int r = parse_primary(p);
    l = r < 0 ? -1 : node(p, op == '*' ? TX_MUL : op == '/' ? TX_DIV : TX_MOD, l, r);
  }
}

/* expr := term (('+' | '-') term)* */
static int parse_expr(Parse *p) {
  int l = parse_term(p);
  for (;;) {
    if (l < 0) return -1;
    skip_ws(p);
    char op = *p->s;
    if (op != '+' && op != '-') return l;
    p->s++;
    int r = parse_term(p);
    l = r < 0 ? -1 : node(p, op == '+' ? TX_ADD : TX_SUB, l, r);
  }
}

int tune_expr_parse(const char *text, TuneExpr *e, char *err, size_t cap) {
  char dummy[8];
  Parse p = {text, e, 0, err ? err : dummy, err ? cap : sizeof dummy, false};
  e->count = 0;
  e->root = parse_expr(&p);
  if (e->root >= 0) skip_ws(&p);
  if (e->root >= 0 && *p.s) e->root = parse_fail(&p, "unexpected text:", p.s);
  return e->root < 0 ? -1 : 0;
}

typedef struct Eval {
  const TuneExpr *e;
  const char *const *names;
  const int64_t *values;
  int n;
  char *err;
  size_t cap;
} Eval;

static bool eval_fail(Eval *v, const char *msg, const char *what) {
  snprintf(v->err, v->cap, "%s%s%s", msg, what ? " " : "", what ? what : "");
  return false;
}

static bool eval_node(Eval *v, int i, int64_t *out) {
  const TuneExprNode *x = &v->e->n[i];
  int64_t a = 0, b = 0;
  if (x->op == TX_INT) return *out = x->ival, true;
  if (x->op == TX_NAME) {
    for (int j = 0; j < v->n; j++)
      if (!strcmp(v->names[j], x->name)) return *out = v->values[j], true;
    return eval_fail(v, "unknown name", x->name);
  }
  if (!eval_node(v, x->lhs, &a) || (x->rhs >= 0 && !eval_node(v, x->rhs, &b))) return false;
  switch (x->op) {
  case TX_NEG:
    if (a == INT64_MIN) return eval_fail(v, "overflow", NULL);
    return *out = -a, true;
  case TX_ADD: return __builtin_add_overflow(a, b, out) ? eval_fail(v, "overflow", NULL) : true;
  case TX_SUB: return __builtin_sub_overflow(a, b, out) ? eval_fail(v, "overflow", NULL) : true;
  case TX_MUL: return __builtin_mul_overflow(a, b, out) ? eval_fail(v, "overflow", NULL) : true;
  case TX_DIV:
  case TX_MOD:
    if (b == 0) return eval_fail(v, "division by zero", NULL);
    if (a == INT64_MIN && b == -1) return eval_fail(v, "overflow", NULL);
    return *out = x->op == TX_DIV ? a / b : a % b, true;
  case TX_CDIV:
    if (b <= 0) return eval_fail(v, "cdiv by a non-positive divisor", NULL);
    if (a > INT64_MAX - (b - 1)) return eval_fail(v, "overflow in", "cdiv");
    return *out = (a + b - 1) / b, true;
  case TX_MIN: return *out = a < b ? a : b, true;
  case TX_MAX: return *out = a > b ? a : b, true;
  default: return eval_fail(v, "internal error: an expression node of no known kind", NULL);
  }
}

bool tune_expr_eval(const TuneExpr *e, const char *const *names, const int64_t *values, int n,
                    int64_t *out, char *err, size_t errcap) {
  char dummy[8];
  Eval v = {e, names, values, n, err ? err : dummy, err ? errcap : sizeof dummy};
  return eval_node(&v, e->root, out);
}

bool kiln_tune_expr_eval(const char *expr, const char *const *names, const int64_t *values, int n,
                         int64_t *out, char *err, size_t errcap) {
  TuneExpr *e = malloc(sizeof *e);
  if (!e) {
    if (err && errcap) snprintf(err, errcap, "out of memory");
    return false;
  }
  bool ok = tune_expr_parse(expr, e, err, errcap) == 0 &&
            tune_expr_eval(e, names, values, n, out, err, errcap);
  free(e);
  return ok;
}

/* Binding strength of a node as an operand: primaries 3, terms 2, sums 1. */
static int expr_level(const TuneExprNode *x) {
  switch (x->op) {
  case TX_ADD:
  case TX_SUB: return 1;
  case TX_MUL:
  case TX_DIV:
  case TX_MOD: return 2;
  default: return 3;
  }
}

static void print_node(const TuneExpr *e, int i, int need, FILE *f) {
  static const char *const sym[] = {
      [TX_ADD] = "+", [TX_SUB] = "-", [TX_MUL] = "*", [TX_DIV] = "/", [TX_MOD] = "%"};
  const TuneExprNode *x = &e->n[i];
  bool paren = expr_level(x) < need;
  if (paren) fputc('(', f);
  switch (x->op) {
  case TX_INT: fprintf(f, "%lld", (long long)x->ival); break;
  case TX_NAME: fputs(x->name, f); break;
  case TX_NEG: /* "- -n", never "--n"; no parentheses, which would nest deeper than the text */
    fputs(e->n[x->lhs].op == TX_NEG ? "- " : "-", f);
    print_node(e, x->lhs, 3, f);
    break;
  case TX_CDIV:
  case TX_MIN:
  case TX_MAX:
    fputs(x->op == TX_CDIV ? "cdiv(" : x->op == TX_MIN ? "min(" : "max(", f);
    print_node(e, x->lhs, 0, f);
    fputs(", ", f);
    print_node(e, x->rhs, 0, f);
    fputc(')', f);
    break;
  default:
    print_node(e, x->lhs, expr_level(x), f);
    fprintf(f, " %s ", sym[x->op]);
    print_node(e, x->rhs, expr_level(x) + 1, f);
    break;
  }
  if (paren) fputc(')', f);
}

void tune_expr_print(const TuneExpr *e, FILE *f) { print_node(e, e->root, 0, f); }

int64_t kiln_tune_bucket(int64_t v) {
  if (v <= 0) return 0;
  int64_t b = 1;
  while (b < v && b <= INT64_MAX / 2) b *= 2;
  return b;
}

/* ---------------------------------------------------------------- values and buffers */

size_t tune_scalar_bytes(KilnScalarKind k) {
  switch (k) {
  case KILN_SCALAR_I64:
  case KILN_SCALAR_U64:
  case KILN_SCALAR_F64: return 8;
  case KILN_SCALAR_I32:
  case KILN_SCALAR_U32:
  case KILN_SCALAR_F32: return 4;
  case KILN_SCALAR_I16:
  case KILN_SCALAR_U16:
  case KILN_SCALAR_F16:
  case KILN_SCALAR_BF16: return 2;
  default: return 1;
  }
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void store_value(void *buf, size_t i, KilnScalarKind k, double v) {
  switch (k) {
  case KILN_SCALAR_F32: ((float *)buf)[i] = (float)v; break;
  case KILN_SCALAR_F16: ((uint16_t *)buf)[i] = kiln_f32_to_f16((float)v); break;
  case KILN_SCALAR_BF16: ((uint16_t *)buf)[i] = kiln_f32_to_bf16((float)v); break;
  case KILN_SCALAR_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case KILN_SCALAR_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case KILN_SCALAR_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
  case KILN_SCALAR_F64: ((double *)buf)[i] = v; break;
  case KILN_SCALAR_U64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
  case KILN_SCALAR_U32: ((uint32_t *)buf)[i] = (uint32_t)(int64_t)v; break;
  case KILN_SCALAR_U16: ((uint16_t *)buf)[i] = (uint16_t)(int64_t)v; break;
  case KILN_SCALAR_U8: ((uint8_t *)buf)[i] = (uint8_t)(int64_t)v; break;
  default:
    ((int8_t *)buf)[i] = (int8_t)(k == KILN_SCALAR_I1 ? ((int64_t)v & 1) : (int64_t)v);
    break;
  }
}

static void fill_buffer(void *buf, size_t n, KilnScalarKind k, const TuneArgSpec *a,
                        uint64_t seed) {
  bool is_float = kiln_scalar_is_float(k);
  double lo = a->has_fill_range ? a->fill_a : is_float ? -1.0 : 0.0;
  double hi = a->has_fill_range ? a->fill_b : is_float ? 1.0 : 16.0;
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    double v;
    if (a->fill == FILL_CONST)
      v = a->fill_a;
    else if (a->fill == FILL_IOTA)
      v = (double)i;
    else {
      double u = (double)(splitmix(&s) >> 11) * 0x1.0p-53;
      v = lo + u * (hi - lo);
      if (!is_float) v = floor(v);
    }
    store_value(buf, i, k, v);
  }
}

void tune_problem_fill(TuneProblem *p, int i, const TuneArgSpec *a, uint64_t seed) {
  fill_buffer(p->init[i], p->elems[i], p->params[i].scalar, a, seed * 1000003u + (uint64_t)i);
}

/* Names and values of the integer scalars set so far (for size and grid expressions). */
int tune_problem_int_env(const TuneProblem *p, int upto, const char **names, int64_t *vals) {
  int n = 0;
  for (int i = 0; i < upto; i++)
    if (!p->params[i].is_ptr && !kiln_scalar_is_float(p->params[i].scalar)) {
      names[n] = p->params[i].name;
      vals[n++] = p->ival[i];
    }
  return n;
}

/* ---------------------------------------------------------------- the memory a call may take */

int tune_arg_budget(const TuneTarget *t, TuneArgBudget *b, char *err, size_t cap) {
  char a[32], c[32];
  b->bytes = TUNE_MAX_ARG_BYTES;
  snprintf(b->why, sizeof b->why, "TUNE_MAX_ARG_BYTES (%s)",
           kiln_bytes_text(b->bytes, a, sizeof a));
  size_t host = kiln_host_memory_bytes();
  if (host != SIZE_MAX && host / TUNE_HOST_COPIES < b->bytes) {
    b->bytes = host / TUNE_HOST_COPIES;
    snprintf(b->why, sizeof b->why,
             "the host's memory (%s) over the %d copies the tuner holds "
             "(TUNE_HOST_COPIES)",
             kiln_bytes_text(host, a, sizeof a), TUNE_HOST_COPIES);
  }
  size_t dev = t ? t->device_mem : 0;
  const char *from = "the device's memory";
  const char *env = getenv("KILN_DEVICE_MEMORY");
  if (env && *env) {
    if (kiln_parse_bytes(env, &dev)) {
      snprintf(err, cap,
               "KILN_DEVICE_MEMORY=%.60s: expected a positive number of bytes, "
               "optionally with K, M, G or T (KiB, MiB, ...)",
               env);
      return -1;
    }
    from = "KILN_DEVICE_MEMORY";
  }
  size_t flush = t ? t->flush_bytes : 0;
  if (dev && (dev <= flush ? 0 : dev - flush) < b->bytes) {
    b->bytes = dev <= flush ? 0 : dev - flush;
    if (flush)
      snprintf(b->why, sizeof b->why, "%s (%s) less the %s L2 flush buffer", from,
               kiln_bytes_text(dev, a, sizeof a), kiln_bytes_text(flush, c, sizeof c));
    else
      snprintf(b->why, sizeof b->why, "%s (%s)", from, kiln_bytes_text(dev, a, sizeof a));
  }
  return 0;
}

int tune_arg_buffer_fits(const TuneArgBudget *b, const char *name, int64_t count, KilnScalarKind k,
                         size_t used, size_t *bytes, char *err, size_t cap) {
  if (count < 1 || count > ((int64_t)1 << 34)) {
    snprintf(err, cap, "size of '%s' is %lld elements (1 .. 2^34)", name, (long long)count);
    return -1;
  }
  *bytes = (size_t)count * tune_scalar_bytes(k); /* at most 2^37: no overflow */
  if (used > b->bytes || *bytes > b->bytes - used) {
    char a[32], c[32];
    snprintf(err, cap,
             "buffer '%s' (%lld %s elements, %s) brings the call's buffers to %s, "
             "more than %s",
             name, (long long)count, kiln_scalar_name(k), kiln_bytes_text(*bytes, a, sizeof a),
             kiln_bytes_text(used + *bytes, c, sizeof c), b->why);
    return -1;
  }
  return 0;
}

size_t tune_problem_buffer_bytes(const TuneProblem *p) {
  size_t n = 0;
  for (int i = 0; i < p->nparams; i++) n += p->bytes[i];
  return n;
}

void tune_problem_free(TuneProblem *p) {
  for (int i = 0; i < TUNE_MAX_PARAMS; i++) free(p->init[i]);
  memset(p, 0, sizeof *p);
}

int tune_problem_grid(const TuneProblem *p, const KilnTuneConfig *cfg, uint32_t grid[3], char *err,
                      size_t cap) {
  const char *names[TUNE_MAX_PARAMS + 40];
  int64_t vals[TUNE_MAX_PARAMS + 40];
  int n = tune_problem_int_env(p, p->nparams, names, vals);
  for (int i = 0; i < cfg->nbindings; i++) {
    names[n] = cfg->bindings[i].name;
    vals[n++] = cfg->bindings[i].value;
  }
  names[n] = "num_warps";
  vals[n++] = cfg->num_warps;
  names[n] = "num_stages";
  vals[n++] = cfg->num_stages;
  for (int a = 0; a < 3; a++) {
    int64_t v = 1;
    char e[200];
    if (a < p->h->ngrid && !kiln_tune_expr_eval(p->h->grid[a], names, vals, n, &v, e, sizeof e)) {
      snprintf(err, cap, "grid axis %d: %s", a, e);
      return -1;
    }
    if (v < 1 || v > INT32_MAX) {
      snprintf(err, cap, "grid axis %d is %lld programs (1 .. 2^31-1)", a, (long long)v);
      return -1;
    }
    grid[a] = (uint32_t)v;
  }
  return 0;
}
