/* harness.c — how the tuner calls a kernel: the `--args` spec.
 *
 *   spec  := entry (';' entry)*
 *   entry := 'kernel' '=' NAME          which kernel the spec is for (optional)
 *          | 'seed' '=' INT             seed of the random inputs (default 1), and the value of
 *                                       a parameter named seed when the kernel has one
 *          | 'grid' '=' EXPR (',' EXPR)*  programs per axis; may use consts and num_warps
 *          | NAME '=' EXPR              a scalar parameter (a float literal for float params)
 *          | NAME ':' TYPE? '[' EXPR ']' '?'? ('=' FILL)?   a buffer of EXPR elements (EXPR may
 *                                       name consts and the grid's axes grid0..grid2); '?':
 *                                       a generated library's call may pass NULL for it (a
 *                                       buffer the kernel leaves alone under some consts, as
 *                                       gemm's bias with EPI=0); else NULL is refused
 *   FILL  := NUMBER | 'iota' | 'rand' '(' NUMBER ',' NUMBER ')'
 *
 * Expressions, buffer contents and grids are computed in problem.c, which the runtime-only
 * bundle runner shares. */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
  if (!strcmp(fill, "iota"))
    a->fill = FILL_IOTA;
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

/* NAME ':' TYPE? '[' EXPR ']' '?'? ('=' FILL)? ; `rest` is the text after ':'. */
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
  if (*after == '?') {
    a->nullable = true;
    after++;
    trim(after);
  }
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
    snprintf(err, cap, "bad --args entry '%s' (NAME=EXPR, NAME: TYPE[EXPR], grid=..., kernel=...)",
             ent);
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
  bool is_seed = op == '=' && !strcmp(name, "seed");
  if (is_seed) h->seed = strtoull(rest, NULL, 0);
  if (op == '=' && !strcmp(name, "grid")) return parse_grid(h, rest, err, cap);
  if (h->nargs == TUNE_MAX_PARAMS) {
    snprintf(err, cap, "too many --args entries");
    return -1;
  }
  TuneArgSpec *a = &h->args[h->nargs++];
  memset(a, 0, sizeof *a);
  snprintf(a->name, sizeof a->name, "%s", name);
  a->if_param = is_seed; /* dropout-style kernels take a `seed` of their own */
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

static const TuneArgSpec *find_arg(const TuneHarness *h, const char *name) {
  for (int i = 0; i < h->nargs; i++)
    if (!strcmp(h->args[i].name, name)) return &h->args[i];
  return NULL;
}

/* The integer names a spec's expressions may use: its scalar entries in the order written
 * (kernel parameters and helper names such as `M=256`), each evaluated over the ones before it;
 * buffer sizes also see the consts of a config (Env.n grows, then shrinks back). */
typedef struct Env {
  const char *names[2 * TUNE_MAX_PARAMS + 37]; /* + 32 config bindings, 2 meta, 3 grid axes */
  int64_t vals[2 * TUNE_MAX_PARAMS + 37];
  int n;
} Env;

static int param_index(const TuneProblem *p, const char *name) {
  for (int i = 0; i < p->nparams; i++)
    if (!strcmp(p->params[i].name, name)) return i;
  return -1;
}

static bool is_const_of(const KilnKernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i]->kind == KILN_DECL_CONST_PARAM && !strcmp(k->params[i]->name, name))
      return true;
  return kiln_meta_param_is(name);
}

/* Scalar entry a: a float parameter's number, or an integer expression over the entries written
 * before it, bound to parameter i (-1: a helper name) and added to env. */
static int eval_scalar(TuneProblem *p, int i, const TuneArgSpec *a, Env *env, char *err,
                       size_t cap) {
  if (i >= 0 && kiln_scalar_is_float(p->params[i].scalar)) {
    char *end;
    p->fval[i] = strtod(a->expr, &end);
    if (end == a->expr || *end) {
      snprintf(err, cap, "'%s' is a float parameter; '%s' is not a number", a->name, a->expr);
      return -1;
    }
    return 0;
  }
  for (int j = 0; j < env->n; j++)
    if (!strcmp(env->names[j], a->name)) {
      snprintf(err, cap, "'%s' is given twice", a->name);
      return -1;
    }
  int64_t v;
  char e[200];
  if (!kiln_tune_expr_eval(a->expr, env->names, env->vals, env->n, &v, e, sizeof e)) {
    snprintf(err, cap, "value of '%s': %s", a->name, e);
    return -1;
  }
  if (i >= 0) p->ival[i] = v;
  env->names[env->n] = a->name;
  env->vals[env->n++] = v;
  return 0;
}

/* Every scalar entry of the spec, in the order written. A name that is no parameter is a
 * helper (usable by later entries, sizes and grids), unless it names a const, which -D pins. */
static int eval_scalars(TuneProblem *p, const KilnKernel *k, Env *env, char *err, size_t cap) {
  const TuneHarness *h = p->h;
  for (int s = 0; s < h->nargs; s++) {
    const TuneArgSpec *a = &h->args[s];
    int i = param_index(p, a->name);
    if (a->is_buffer || (i >= 0 && p->params[i].is_ptr)) continue; /* checked with the buffers */
    if (i < 0 && a->if_param) continue; /* `seed=` of a kernel without one */
    if (i < 0 && is_const_of(k, a->name)) {
      snprintf(err, cap, "'%s' is a const parameter of '%s'; pin it with -D %s=%s", a->name,
               k->name, a->name, a->expr);
      return -1;
    }
    if (eval_scalar(p, i, a, env, err, cap)) return -1;
  }
  return 0;
}

/* The grid's axes as the names grid0, grid1, grid2, each where the spec's grid rule evaluates
 * over env (the scalar entries, and a config's consts where bound): a size rule may name them
 * (`x: f32[grid0 * cols]`, a kernel whose rows are its programs). A scalar entry or parameter
 * of the same name comes first in env and wins. */
static void bind_grid_axes(const TuneHarness *h, Env *env) {
  static const char *const axis[3] = {"grid0", "grid1", "grid2"};
  int n0 = env->n;
  for (int g = 0; g < h->ngrid && g < 3; g++) {
    int64_t v;
    if (!kiln_tune_expr_eval(h->grid[g], env->names, env->vals, n0, &v, NULL, 0)) continue;
    env->names[env->n] = axis[g];
    env->vals[env->n++] = v;
  }
}

/* A buffer's element count: its expression over the scalar entries and the grid's axes, and
 * when it names a const or an axis that depends on one (`x: f32[cdiv(n, BLOCK) * BLOCK]`), the
 * largest over the configs of t, so that one set of buffers serves every candidate. */
static int buffer_count(const TuneArgSpec *a, const TuneHarness *h, const KilnTune *t, Env *env,
                        int64_t *count, char *err, size_t cap) {
  char e[200];
  int base = env->n;
  bind_grid_axes(h, env);
  bool direct = kiln_tune_expr_eval(a->expr, env->names, env->vals, env->n, count, e, sizeof e);
  env->n = base;
  if (direct) return 0;
  size_t nconf = t ? kiln_tune_config_count(t) : 0;
  bool any = false, failed = false;
  for (size_t c = 0; c < nconf + (size_t)(t ? t->npresets : 0); c++) {
    KilnTuneConfig cfg;
    bool ok = c < nconf ? kiln_tune_config_get(t, c, &cfg)
                        : kiln_tune_preset_get(t, t->presets[c - nconf].name, &cfg);
    if (!ok) continue;
    int n0 = env->n;
    for (int b = 0; b < cfg.nbindings; b++) {
      env->names[env->n] = cfg.bindings[b].name;
      env->vals[env->n++] = cfg.bindings[b].value;
    }
    env->names[env->n] = "num_warps";
    env->vals[env->n++] = cfg.num_warps;
    env->names[env->n] = "num_stages";
    env->vals[env->n++] = cfg.num_stages;
    bind_grid_axes(h, env);
    int64_t v;
    ok = kiln_tune_expr_eval(a->expr, env->names, env->vals, env->n, &v, e, sizeof e);
    env->n = n0;
    if (!ok) {
      failed = true;
      break;
    }
    *count = any && *count > v ? *count : v;
    any = true;
  }
  if (any && !failed) return 0;
  snprintf(err, cap, "size of '%s': %s", a->name, e);
  return -1;
}

static int init_buffer(TuneProblem *p, int i, const TuneArgSpec *a, const KilnTune *t, Env *env,
                       const TuneArgBudget *budget, char *err, size_t cap) {
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
  int64_t count;
  if (buffer_count(a, p->h, t, env, &count, err, cap)) return -1;
  /* checked before the malloc: overcommit would grant 2^34 elements and the fill take them */
  if (tune_arg_buffer_fits(budget, q->name, count, q->scalar, tune_problem_buffer_bytes(p),
                           &p->bytes[i], err, cap))
    return -1;
  p->elems[i] = (size_t)count;
  p->init[i] = malloc(p->bytes[i]);
  if (!p->init[i]) {
    snprintf(err, cap, "out of memory for buffer '%s'", q->name);
    return -1;
  }
  tune_problem_fill(p, i, a, p->h->seed);
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
    /* `x: *T`: the type the last sema of k bound T to (the caller checked k with its config) */
    q->scalar = d->annot.param && d->type ? d->type->scalar : d->annot.scalar;
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

/* budget NULL: the scalars only (every parameter must still be given); no buffer is made. */
static int init_problem(TuneProblem *p, const TuneHarness *h, const KilnKernel *k,
                        const KilnTune *t, const TuneArgBudget *budget, char *err, size_t cap) {
  memset(p, 0, sizeof *p);
  p->h = h;
  if (init_params(p, k, err, cap)) return -1;
  /* Scalars first, in the order written (a value may use the entries before it, helpers
   * included), then buffers (a size may use any scalar entry and the consts). */
  Env env = {.n = 0};
  if (eval_scalars(p, k, &env, err, cap)) return -1;
  for (int i = 0; i < p->nparams; i++) {
    const TuneArgSpec *a = find_arg(h, p->params[i].name);
    if (!a) {
      snprintf(err, cap, "--args gives no value for parameter '%s' of '%s'", p->params[i].name,
               k->name);
      return -1;
    }
    if (!p->params[i].is_ptr && a->is_buffer) {
      snprintf(err, cap, "'%s' is a scalar parameter; give it as %s=VALUE", a->name, a->name);
      return -1;
    }
    if (p->params[i].is_ptr && budget && init_buffer(p, i, a, t, &env, budget, err, cap)) return -1;
  }
  for (int i = 0; i < h->nargs; i++)
    if (h->args[i].is_buffer && param_index(p, h->args[i].name) < 0) {
      snprintf(err, cap, "--args gives a buffer '%s', which is not a parameter of '%s'",
               h->args[i].name, k->name);
      return -1;
    }
  if (t && init_key(p, t, err, cap)) return -1;
  memcpy(p->record_key, p->key, sizeof p->record_key); /* generic until specialized (sig.c) */
  return 0;
}

int tune_problem_init(TuneProblem *p, const TuneHarness *h, const KilnKernel *k, const KilnTune *t,
                      const TuneArgBudget *budget, char *err, size_t cap) {
  return init_problem(p, h, k, t, budget, err, cap);
}

int tune_problem_init_scalars(TuneProblem *p, const TuneHarness *h, const KilnKernel *k, char *err,
                              size_t cap) {
  return init_problem(p, h, k, NULL, NULL, err, cap);
}
