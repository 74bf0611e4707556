/* harness.c — how the tuner calls a kernel: the `--args` spec.
 *
 *   spec  := entry (';' entry)*
 *   entry := 'kernel' '=' NAME          which kernel the spec is for (optional)
 *          | 'seed' '=' INT             seed of the random inputs (default 1)
 *          | 'grid' '=' EXPR (',' EXPR)*  programs per axis; may use consts and num_warps
 *          | NAME '=' EXPR              a scalar parameter (a float literal for float params)
 *          | NAME ':' TYPE? '[' EXPR ']' ('=' FILL)?   a buffer of EXPR elements
 *   FILL  := NUMBER | 'iota' | 'rand' '(' NUMBER ',' NUMBER ')'
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

/* ---------------------------------------------------------------- the spec */

static void trim(char *s) {
  size_t n = strlen(s), i = 0;
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  while (isspace((unsigned char)s[i])) i++;
  memmove(s, s + i, n - i + 1);
}

static bool scalar_from_name(const char *s, KilnScalarKind *out) {
  for (int k = 0; k < KILN_SCALAR_COUNT; k++)
    if (!strcmp(s, kiln_scalar_name((KilnScalarKind)k))) {
      *out = (KilnScalarKind)k;
      return true;
    }
  return false;
}

static int parse_fill(TuneArgSpec *a, char *fill, char *err, size_t cap) {
  trim(fill);
  double lo, hi;
  char tail;
  if (!strcmp(fill, "iota")) a->fill = FILL_IOTA;
  else if (sscanf(fill, "rand ( %lf , %lf %c", &lo, &hi, &tail) == 3 && tail == ')' && lo < hi) {
    a->fill = FILL_RAND;
    a->fill_a = lo;
    a->fill_b = hi;
    a->has_fill_range = true;
  } else {
    char *end;
    a->fill_a = strtod(fill, &end);
    if (end == fill || *end) {
      snprintf(err, cap, "bad fill '%s' for '%s' (a number, iota or rand(lo, hi))", fill, a->name);
      return -1;
    }
    a->fill = FILL_CONST;
  }
  return 0;
}

/* NAME ':' TYPE? '[' EXPR ']' ('=' FILL)? ; `rest` is the text after ':'. */
static int parse_buffer(TuneArgSpec *a, char *rest, char *err, size_t cap) {
  char *lb = strchr(rest, '['), *rb = lb ? strchr(lb, ']') : NULL;
  if (!lb || !rb) {
    snprintf(err, cap, "buffer '%s' needs a size: %s: f32[n]", a->name, a->name);
    return -1;
  }
  *lb = '\0';
  *rb = '\0';
  trim(rest);
  if (*rest) {
    if (!scalar_from_name(rest, &a->type)) {
      snprintf(err, cap, "unknown element type '%s' for buffer '%s'", rest, a->name);
      return -1;
    }
    a->has_type = true;
  }
  snprintf(a->expr, sizeof a->expr, "%s", lb + 1);
  trim(a->expr);
  char *after = rb + 1;
  trim(after);
  a->is_buffer = true;
  if (!*after) return 0;
  if (*after != '=') {
    snprintf(err, cap, "unexpected '%s' after buffer '%s'", after, a->name);
    return -1;
  }
  return parse_fill(a, after + 1, err, cap);
}

/* grid=EXPR(,EXPR)*: split at the commas outside parentheses (cdiv(n, BLOCK) has one). */
static int parse_grid(TuneHarness *h, const char *s, char *err, size_t cap) {
  h->ngrid = 0;
  for (;;) {
    int depth = 0;
    size_t n = 0;
    while (s[n] && (depth > 0 || s[n] != ',')) depth += (s[n] == '(') - (s[n] == ')'), n++;
    if (h->ngrid == 3 || n >= sizeof h->grid[0]) {
      snprintf(err, cap, "grid has at most 3 axes of at most 255 characters");
      return -1;
    }
    memcpy(h->grid[h->ngrid], s, n);
    h->grid[h->ngrid][n] = '\0';
    trim(h->grid[h->ngrid++]);
    if (!s[n]) return 0;
    s += n + 1;
  }
}

static int parse_entry(TuneHarness *h, char *ent, char *err, size_t cap) {
  trim(ent);
  if (!*ent) return 0;
  size_t nl = 0;
  while (isalnum((unsigned char)ent[nl]) || ent[nl] == '_') nl++;
  char *rest = ent + nl;
  while (isspace((unsigned char)*rest)) rest++;
  if (nl == 0 || nl >= 64 || (*rest != '=' && *rest != ':')) {
    snprintf(err, cap, "bad --args entry '%s' (NAME=EXPR, NAME: TYPE[EXPR], grid=..., kernel=...)", ent);
    return -1;
  }
  char name[64];
  memcpy(name, ent, nl);
  name[nl] = '\0';
  char op = *rest++;
  if (op == '=' && !strcmp(name, "kernel")) {
    snprintf(h->kernel, sizeof h->kernel, "%s", rest);
    trim(h->kernel);
    return 0;
  }
  if (op == '=' && !strcmp(name, "seed")) {
    h->seed = strtoull(rest, NULL, 0);
    return 0;
  }
  if (op == '=' && !strcmp(name, "grid")) return parse_grid(h, rest, err, cap);
  if (h->nargs == TUNE_MAX_PARAMS) {
    snprintf(err, cap, "too many --args entries");
    return -1;
  }
  TuneArgSpec *a = &h->args[h->nargs++];
  memset(a, 0, sizeof *a);
  snprintf(a->name, sizeof a->name, "%s", name);
  if (op == ':') return parse_buffer(a, rest, err, cap);
  snprintf(a->expr, sizeof a->expr, "%s", rest);
  trim(a->expr);
  return 0;
}

int tune_harness_parse(const char *spec, TuneHarness *h, char *err, size_t cap) {
  memset(h, 0, sizeof *h);
  h->seed = 1;
  char *copy = strdup(spec);
  if (!copy) {
    snprintf(err, cap, "out of memory");
    return -1;
  }
  int rc = 0;
  for (char *save = NULL, *ent = strtok_r(copy, ";", &save); ent && rc == 0;
       ent = strtok_r(NULL, ";", &save))
    rc = parse_entry(h, ent, err, cap);
  free(copy);
  if (rc == 0 && h->ngrid == 0) {
    snprintf(err, cap, "the --args spec has no grid=... entry");
    rc = -1;
  }
  return rc;
}

/* ---------------------------------------------------------------- values and buffers */

size_t tune_scalar_bytes(KilnScalarKind k) {
  int bits = kiln_scalar_bits(k);
  return bits <= 8 ? 1 : (size_t)bits / 8;
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
  bool is_float = kiln_scalar_is_float(k);
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

static const TuneArgSpec *find_arg(const TuneHarness *h, const char *name) {
  for (int i = 0; i < h->nargs; i++)
    if (!strcmp(h->args[i].name, name)) return &h->args[i];
  return NULL;
}

/* Names and values of the integer scalars set so far (for size and grid expressions). */
static int int_env(const TuneProblem *p, int upto, const char **names, int64_t *vals) {
  int n = 0;
  for (int i = 0; i < upto; i++)
    if (!p->params[i].is_ptr && !kiln_scalar_is_float(p->params[i].scalar)) {
      names[n] = p->params[i].name;
      vals[n++] = p->ival[i];
    }
  return n;
}

static int init_scalar(TuneProblem *p, int i, const TuneArgSpec *a, char *err, size_t cap) {
  TuneParam *q = &p->params[i];
  if (a->is_buffer) {
    snprintf(err, cap, "'%s' is a scalar parameter; give it as %s=VALUE", q->name, q->name);
    return -1;
  }
  if (kiln_scalar_is_float(q->scalar)) {
    char *end;
    p->fval[i] = strtod(a->expr, &end);
    if (end == a->expr || *end) {
      snprintf(err, cap, "'%s' is a float parameter; '%s' is not a number", q->name, a->expr);
      return -1;
    }
    return 0;
  }
  const char *names[TUNE_MAX_PARAMS];
  int64_t vals[TUNE_MAX_PARAMS];
  int n = int_env(p, i, names, vals); /* earlier scalars only */
  char e[200];
  if (!kiln_tune_expr_eval(a->expr, names, vals, n, &p->ival[i], e, sizeof e)) {
    snprintf(err, cap, "value of '%s': %s", q->name, e);
    return -1;
  }
  return 0;
}

static int init_buffer(TuneProblem *p, int i, const TuneArgSpec *a, char *err, size_t cap) {
  TuneParam *q = &p->params[i];
  if (!a->is_buffer) {
    snprintf(err, cap, "'%s' is a pointer parameter; give it as %s: %s[COUNT]", q->name, q->name,
             kiln_scalar_name(q->scalar));
    return -1;
  }
  if (a->has_type && a->type != q->scalar) {
    snprintf(err, cap, "buffer '%s' is declared %s but the parameter points to %s", q->name,
             kiln_scalar_name(a->type), kiln_scalar_name(q->scalar));
    return -1;
  }
  const char *names[TUNE_MAX_PARAMS];
  int64_t vals[TUNE_MAX_PARAMS];
  int n = int_env(p, p->nparams, names, vals);
  int64_t count;
  char e[200];
  if (!kiln_tune_expr_eval(a->expr, names, vals, n, &count, e, sizeof e)) {
    snprintf(err, cap, "size of '%s': %s", q->name, e);
    return -1;
  }
  if (count < 1 || count > ((int64_t)1 << 34)) {
    snprintf(err, cap, "size of '%s' is %lld elements (1 .. 2^34)", q->name, (long long)count);
    return -1;
  }
  p->elems[i] = (size_t)count;
  p->bytes[i] = (size_t)count * tune_scalar_bytes(q->scalar);
  p->init[i] = malloc(p->bytes[i]);
  if (!p->init[i]) {
    snprintf(err, cap, "out of memory for buffer '%s'", q->name);
    return -1;
  }
  fill_buffer(p->init[i], p->elems[i], q->scalar, a, p->h->seed * 1000003u + (uint64_t)i);
  return 0;
}

static int init_params(TuneProblem *p, const KilnKernel *k, char *err, size_t cap) {
  for (int i = 0; i < k->nparams; i++) {
    const KilnDecl *d = k->params[i];
    if (d->kind != KILN_DECL_PARAM) continue;
    if (p->nparams == TUNE_MAX_PARAMS) {
      snprintf(err, cap, "kernel has more than %d parameters", TUNE_MAX_PARAMS);
      return -1;
    }
    TuneParam *q = &p->params[p->nparams++];
    snprintf(q->name, sizeof q->name, "%s", d->name);
    q->is_ptr = d->annot.kind == KILN_TYPE_PTR;
    q->scalar = d->annot.scalar;
  }
  return 0;
}

static int init_key(TuneProblem *p, const KilnTune *t, char *err, size_t cap) {
  size_t used = 0;
  for (int j = 0; j < t->nkeys; j++) {
    int i = 0;
    while (i < p->nparams && strcmp(p->params[i].name, t->keys[j])) i++;
    if (i == p->nparams || p->params[i].is_ptr || kiln_scalar_is_float(p->params[i].scalar)) {
      snprintf(err, cap, "key '%s' is not an integer scalar parameter", t->keys[j]);
      return -1;
    }
    int w = snprintf(p->key + used, sizeof p->key - used, "%s%s=%lld", j ? "," : "", t->keys[j],
                     (long long)kiln_tune_bucket(p->ival[i]));
    if (w < 0 || (size_t)w >= sizeof p->key - used) return -1;
    used += (size_t)w;
  }
  return 0;
}

int tune_problem_init(TuneProblem *p, const TuneHarness *h, const KilnKernel *k,
                      const KilnTune *t, char *err, size_t cap) {
  memset(p, 0, sizeof *p);
  p->h = h;
  if (init_params(p, k, err, cap)) return -1;
  /* Scalars first (in parameter order: a value may use earlier ones), then buffers (a size may
   * use any scalar). */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < p->nparams; i++) {
      if (p->params[i].is_ptr != (pass == 1)) continue;
      const TuneArgSpec *a = find_arg(h, p->params[i].name);
      if (!a) {
        snprintf(err, cap, "--args gives no value for parameter '%s' of '%s'", p->params[i].name,
                 k->name);
        return -1;
      }
      int rc = pass == 0 ? init_scalar(p, i, a, err, cap) : init_buffer(p, i, a, err, cap);
      if (rc) return -1;
    }
  for (int i = 0; i < h->nargs; i++) {
    int j = 0;
    while (j < p->nparams && strcmp(p->params[j].name, h->args[i].name)) j++;
    if (j == p->nparams) {
      snprintf(err, cap, "--args names '%s', which is not a parameter of '%s'", h->args[i].name,
               k->name);
      return -1;
    }
  }
  return t ? init_key(p, t, err, cap) : 0;
}

void tune_problem_free(TuneProblem *p) {
  for (int i = 0; i < TUNE_MAX_PARAMS; i++) free(p->init[i]);
  memset(p, 0, sizeof *p);
}

int tune_problem_grid(const TuneProblem *p, const KilnTuneConfig *cfg, uint32_t grid[3],
                      char *err, size_t cap) {
  const char *names[TUNE_MAX_PARAMS + 40];
  int64_t vals[TUNE_MAX_PARAMS + 40];
  int n = int_env(p, p->nparams, names, vals);
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
