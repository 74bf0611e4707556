/* problem.c — the values a kernel is called with: integer expressions (sizes, grids), buffer
 * contents and grids. No frontend and no MLIR: the bundle runner (runtime-only builds) shares
 * this file with `kiln tune`, so a kernel gets the same inputs on both paths.
 *
 * Buffers are filled from a splitmix64 stream seeded by (seed, parameter position), so every
 * child and every run sees the same inputs. Default fill: floats uniform in [-1, 1), integers
 * uniform in [0, 16). */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- integer expressions */

typedef struct Eval {
  const char *s;
  const char *const *names;
  const int64_t *values;
  int n;
  char *err;
  size_t cap;
  bool failed;
} Eval;

static bool eval_expr(Eval *e, int64_t *out);

static void skip_ws(Eval *e) {
  while (isspace((unsigned char)*e->s)) e->s++;
}

static bool eval_fail(Eval *e, const char *msg, const char *what) {
  if (!e->failed) snprintf(e->err, e->cap, "%s%s%s", msg, what ? " " : "", what ? what : "");
  e->failed = true;
  return false;
}

static bool eval_call(Eval *e, const char *fn, int64_t *out) {
  int64_t a, b;
  e->s++; /* '(' */
  if (!eval_expr(e, &a)) return false;
  skip_ws(e);
  if (*e->s != ',') return eval_fail(e, "expected ',' in call of", fn);
  e->s++;
  if (!eval_expr(e, &b)) return false;
  skip_ws(e);
  if (*e->s != ')') return eval_fail(e, "expected ')' after arguments of", fn);
  e->s++;
  if (!strcmp(fn, "min")) *out = a < b ? a : b;
  else if (!strcmp(fn, "max")) *out = a > b ? a : b;
  else if (!strcmp(fn, "cdiv")) {
    if (b <= 0) return eval_fail(e, "cdiv by a non-positive divisor", NULL);
    if (a > INT64_MAX - (b - 1)) return eval_fail(e, "overflow in", fn);
    *out = (a + b - 1) / b;
  } else return eval_fail(e, "unknown function", fn);
  return true;
}

/* primary := INT | NAME | NAME '(' expr ',' expr ')' | '(' expr ')' | '-' primary */
static bool eval_primary(Eval *e, int64_t *out) {
  skip_ws(e);
  if (*e->s == '(') {
    e->s++;
    if (!eval_expr(e, out)) return false;
    skip_ws(e);
    if (*e->s != ')') return eval_fail(e, "expected ')'", NULL);
    e->s++;
    return true;
  }
  if (*e->s == '-') {
    e->s++;
    if (!eval_primary(e, out)) return false;
    if (*out == INT64_MIN) return eval_fail(e, "overflow", NULL);
    *out = -*out;
    return true;
  }
  if (isdigit((unsigned char)*e->s)) {
    char *end;
    errno = 0;
    long long v = strtoll(e->s, &end, 0);
    if (errno) return eval_fail(e, "integer literal out of range", NULL);
    e->s = end;
    *out = v;
    return true;
  }
  if (isalpha((unsigned char)*e->s) || *e->s == '_') {
    char name[64];
    size_t len = 0;
    while ((isalnum((unsigned char)*e->s) || *e->s == '_') && len + 1 < sizeof name) name[len++] = *e->s++;
    name[len] = '\0';
    skip_ws(e);
    if (*e->s == '(') return eval_call(e, name, out);
    for (int i = 0; i < e->n; i++)
      if (!strcmp(e->names[i], name)) {
        *out = e->values[i];
        return true;
      }
    return eval_fail(e, "unknown name", name);
  }
  return eval_fail(e, "expected a number, a name or '('", NULL);
}

static bool eval_term(Eval *e, int64_t *out) {
  if (!eval_primary(e, out)) return false;
  for (;;) {
    skip_ws(e);
    char op = *e->s;
    if (op != '*' && op != '/' && op != '%') return true;
    e->s++;
    int64_t r;
    if (!eval_primary(e, &r)) return false;
    if (op == '*') {
      if (__builtin_mul_overflow(*out, r, out)) return eval_fail(e, "overflow", NULL);
    } else {
      if (r == 0) return eval_fail(e, "division by zero", NULL);
      if (*out == INT64_MIN && r == -1) return eval_fail(e, "overflow", NULL);
      *out = op == '/' ? *out / r : *out % r;
    }
  }
}

static bool eval_expr(Eval *e, int64_t *out) {
  if (!eval_term(e, out)) return false;
  for (;;) {
    skip_ws(e);
    char op = *e->s;
    if (op != '+' && op != '-') return true;
    e->s++;
    int64_t r;
    if (!eval_term(e, &r)) return false;
    bool ovf = op == '+' ? __builtin_add_overflow(*out, r, out) : __builtin_sub_overflow(*out, r, out);
    if (ovf) return eval_fail(e, "overflow", NULL);
  }
}

bool kiln_tune_expr_eval(const char *expr, const char *const *names, const int64_t *values, int n,
                    int64_t *out, char *err, size_t errcap) {
  char dummy[8];
  Eval e = {expr, names, values, n, err ? err : dummy, err ? errcap : sizeof dummy, false};
  int64_t v;
  if (!eval_expr(&e, &v)) return false;
  skip_ws(&e);
  if (*e.s) return eval_fail(&e, "unexpected text:", e.s);
  *out = v;
  return true;
}

int64_t kiln_tune_bucket(int64_t v) {
  if (v <= 0) return 0;
  int64_t b = 1;
  while (b < v && b <= INT64_MAX / 2) b *= 2;
  return b;
}

/* ---------------------------------------------------------------- values and buffers */

size_t tune_scalar_bytes(KilnScalarKind k) {
  switch (k) {
  case KILN_SCALAR_I64: return 8;
  case KILN_SCALAR_I32:
  case KILN_SCALAR_F32: return 4;
  case KILN_SCALAR_I16:
  case KILN_SCALAR_F16:
  case KILN_SCALAR_BF16: return 2;
  default: return 1;
  }
}

/* The frontend's kiln_scalar_is_float, restated here so that the runner needs no frontend. */
bool tune_scalar_is_float(KilnScalarKind k) {
  return k == KILN_SCALAR_F16 || k == KILN_SCALAR_BF16 || k == KILN_SCALAR_F32;
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (exp <= 0) return (uint16_t)sign; /* the tuner's inputs never need subnormals */
  if (exp >= 31) return (uint16_t)(sign | 0x7c00u);
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
  if ((mant & 0x1fffu) > 0x1000u || ((mant & 0x1fffu) == 0x1000u && (h & 1u))) h++;
  return (uint16_t)h;
}

float tune_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  float f;
  if (exp == 0) f = ldexpf((float)mant, -24);
  else if (exp == 31) f = mant ? NAN : INFINITY;
  else f = ldexpf((float)(mant | 0x400u), (int)exp - 25);
  return sign ? -f : f;
}

float tune_bf16_to_float(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
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
  case KILN_SCALAR_F16: ((uint16_t *)buf)[i] = float_to_half((float)v); break;
  case KILN_SCALAR_BF16: {
    float f = (float)v;
    uint32_t x;
    memcpy(&x, &f, 4);
    ((uint16_t *)buf)[i] = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    break;
  }
  case KILN_SCALAR_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case KILN_SCALAR_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case KILN_SCALAR_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
  default: ((int8_t *)buf)[i] = (int8_t)(k == KILN_SCALAR_I1 ? ((int64_t)v & 1) : (int64_t)v); break;
  }
}

static void fill_buffer(void *buf, size_t n, KilnScalarKind k, const TuneArgSpec *a, uint64_t seed) {
  bool is_float = tune_scalar_is_float(k);
  double lo = a->has_fill_range ? a->fill_a : is_float ? -1.0 : 0.0;
  double hi = a->has_fill_range ? a->fill_b : is_float ? 1.0 : 16.0;
  uint64_t s = seed;
  for (size_t i = 0; i < n; i++) {
    double v;
    if (a->fill == FILL_CONST) v = a->fill_a;
    else if (a->fill == FILL_IOTA) v = (double)i;
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
    if (!p->params[i].is_ptr && !tune_scalar_is_float(p->params[i].scalar)) {
      names[n] = p->params[i].name;
      vals[n++] = p->ival[i];
    }
  return n;
}

void tune_problem_free(TuneProblem *p) {
  for (int i = 0; i < TUNE_MAX_PARAMS; i++) free(p->init[i]);
  memset(p, 0, sizeof *p);
}

int tune_problem_grid(const TuneProblem *p, const KilnTuneConfig *cfg, uint32_t grid[3],
                      char *err, size_t cap) {
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
