/* space.c — the configuration space of a tune block and why each config is kept or pruned.
 *
 * Every config of the cross product is checked before anything is built, cheapest test first:
 * each `where` clause (one at a time, so the report names the one that failed; a clause naming
 * a key is a condition on the call, evaluated with the tuned call's values), the device's
 * thread limit, sema with the consts bound (a config may make the kernel ill-typed), the
 * largest tile one program holds against the device's limit (read off the typed AST), and
 * the grid the harness computes for it. */
#include "plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void tune_config_string(const KilnTuneConfig *cfg, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < cfg->nbindings && used < cap; i++) {
    int w = snprintf(buf + used, cap - used, "%s%s=%lld", i ? "," : "", cfg->bindings[i].name,
                     (long long)cfg->bindings[i].value);
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* Whether `name` is a type parameter (`const T: type`) of kernel k. */
static bool is_type_param(const KilnKernel *k, const char *name) {
  for (int i = 0; k && i < k->nparams; i++)
    if (k->params[i]->kind == KILN_DECL_CONST_PARAM && k->params[i]->is_type_param &&
        !strcmp(k->params[i]->name, name))
      return true;
  return false;
}

void tune_config_text(const char *config, const KilnKernel *k, char *buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (const char *p = config; *p && used < cap;) {
    size_t len = strcspn(p, ","), name = strcspn(p, "=");
    char key[64];
    long long v = -1;
    int w;
    if (name + 1 < len && name < sizeof key) { /* NAME=NUMBER, the number the whole value */
      memcpy(key, p, name);
      key[name] = '\0';
      char *end;
      v = strtoll(p + name + 1, &end, 10);
      if (end != p + len) v = -1;
    }
    if (v >= 0 && v < KILN_SCALAR_COUNT && is_type_param(k, key))
      w = snprintf(buf + used, cap - used, "%s%s=%s", p == config ? "" : ",", key,
                   kiln_scalar_name((KilnScalarKind)v));
    else
      w = snprintf(buf + used, cap - used, "%s%.*s", p == config ? "" : ",", (int)len, p);
    if (w < 0) break;
    used += (size_t)w;
    p += len;
    if (*p == ',') p++;
  }
}

void tune_span_text(const char *src, KilnSpan sp, char *buf, size_t cap) {
  const char *p = src;
  for (int l = 1; l < sp.line && *p; p++)
    if (*p == '\n') l++;
  p += sp.col - 1;
  size_t n = sp.end_line == sp.line && sp.end_col >= sp.col ? (size_t)(sp.end_col - sp.col + 1)
                                                            : strcspn(p, ";\n");
  if (n >= cap) n = cap - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
}

/* The values of the block's keys in the tuned call, for `where` clauses that name them. */
static int call_keys(const KilnTune *t, const TuneProblem *p, KilnBinding *out) {
  int n = 0;
  for (int k = 0; k < t->nkeys && k < TUNE_MAX_KEYS; k++)
    for (int i = 0; i < p->nparams; i++)
      if (!strcmp(p->params[i].name, t->keys[k])) out[n++] = (KilnBinding){t->keys[k], p->ival[i]};
  return n;
}

static int failing_where(const KilnTune *t, const KilnTuneConfig *cfg, const TuneProblem *p,
                         bool calls) {
  KilnBinding keys[TUNE_MAX_KEYS];
  int nkeys = call_keys(t, p, keys);
  for (int i = 0; i < t->nwheres; i++) {
    if (!calls && kiln_tune_where_is_call(t, i)) continue;
    KilnTune one = *t;
    one.wheres = &t->wheres[i];
    one.nwheres = 1;
    if (!kiln_tune_where_ok_call(NULL, &one, cfg, keys, nkeys)) return i;
  }
  return -1;
}

/* ---------------------------------------------------------------- largest tile */

static size_t type_bytes(const KilnType *ty) {
  if (!ty || ty->kind != KILN_TYPE_TILE) return 0;
  size_t n = ty->elem_is_ptr ? 8 : tune_scalar_bytes(ty->scalar);
  for (int i = 0; i < ty->rank; i++) n *= (size_t)(ty->dims[i] > 0 ? ty->dims[i] : 1);
  return n;
}

static void expr_max(const KilnExpr *e, size_t *m) {
  if (!e) return;
  size_t b = type_bytes(e->type);
  if (b > *m) *m = b;
  expr_max(e->lhs, m);
  expr_max(e->rhs, m);
  for (int i = 0; i < e->nargs; i++) expr_max(e->args[i], m);
}

static void block_max(const KilnBlock *bl, size_t *m) {
  if (!bl) return;
  for (int i = 0; i < bl->nstmts; i++) {
    const KilnStmt *s = bl->stmts[i];
    expr_max(s->init, m);
    expr_max(s->value, m);
    expr_max(s->lo, m);
    expr_max(s->hi, m);
    expr_max(s->step, m);
    expr_max(s->cond, m);
    block_max(s->body, m);
    block_max(s->else_body, m);
  }
}

/* ---------------------------------------------------------------- after the build */

bool tune_gpu_usage_fits(const KilnGpuUsage *u, int num_warps, char *why, size_t cap) {
  enum { REGS_PER_PROGRAM = 65536, STATIC_SHARED = 48 * 1024 };
  long regs = (long)((u->registers + 7) / 8 * 8) * 32 * num_warps;
  if (regs > REGS_PER_PROGRAM) {
    snprintf(why, cap, "limit: ptxas: %d registers x %d threads = %ld > %d per program",
             u->registers, num_warps * 32, regs, REGS_PER_PROGRAM);
    return false;
  }
  if (u->shared_bytes > STATIC_SHARED) {
    snprintf(why, cap, "limit: ptxas: %d bytes of shared memory > %d per program", u->shared_bytes,
             STATIC_SHARED);
    return false;
  }
  return true;
}

/* ---------------------------------------------------------------- one config */

__attribute__((format(printf, 2, 3))) static void prune(TuneCand *cand, const char *fmt, ...) {
  cand->state = ST_PRUNED;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cand->detail, sizeof cand->detail, fmt, ap);
  va_end(ap);
}

static bool check_sema(TuneCand *cand, KilnCompilation *c, const KilnTune *t,
                       const TuneDeviceLimits *lim) {
  KilnKernel *k = NULL;
  if (!kiln_sema_check_kernel(c, t->kernel_name, cand->cfg.bindings, (size_t)cand->cfg.nbindings,
                              &k)) {
    const char *msg = "error";
    for (size_t i = 0; i < kiln_diag_count(c); i++)
      if (kiln_diag_get(c, i)->severity == KILN_SEV_ERROR) {
        msg = kiln_diag_get(c, i)->message;
        break;
      }
    prune(cand, "sema: %s", msg);
    return false;
  }
  size_t m = 0;
  block_max(k->body, &m);
  if (m > lim->max_tile_bytes) {
    prune(cand, "limit: largest tile is %zu bytes > %zu per program", m, lim->max_tile_bytes);
    return false;
  }
  return true;
}

/* tune_space_check, with the conditions on the call (`where BLOCK >= cols`) checked when calls
 * is true and skipped when false. */
static void space_check(TuneCand *cand, KilnCompilation *c, const char *src, const KilnTune *t,
                        const TuneProblem *p, const TuneDeviceLimits *lim, bool calls) {
  cand->state = ST_PENDING;
  cand->detail[0] = '\0';
  tune_config_string(&cand->cfg, cand->config, sizeof cand->config);
  cand->resources = tune_plan_resources(&cand->cfg);
  int w = failing_where(t, &cand->cfg, p, calls);
  if (w >= 0) {
    char text[160], keys[80] = "";
    tune_span_text(src, t->wheres[w]->span, text, sizeof text);
    if (kiln_tune_where_is_call(t, w)) { /* say which call it failed for */
      KilnBinding kb[TUNE_MAX_KEYS];
      int nk = call_keys(t, p, kb);
      size_t used = 0;
      for (int i = 0; i < nk && used < sizeof keys; i++) {
        int n = snprintf(keys + used, sizeof keys - used, "%s%s=%lld",
                         i ? "," : " (call: ", kb[i].name, (long long)kb[i].value);
        if (n < 0) break;
        used += (size_t)n;
      }
      if (used && used + 1 < sizeof keys) strcat(keys, ")");
    }
    prune(cand, "where #%d (line %d): %s%s", w + 1, t->wheres[w]->span.line, text, keys);
    return;
  }
  if (cand->cfg.num_warps * 32 > lim->max_threads) {
    prune(cand, "limit: num_warps*32 = %d threads > %d per program", cand->cfg.num_warps * 32,
          lim->max_threads);
    return;
  }
  if (!check_sema(cand, c, t, lim)) return;
  char err[200];
  if (tune_problem_grid(p, &cand->cfg, cand->grid, err, sizeof err)) prune(cand, "grid: %s", err);
}

void tune_space_check(TuneCand *cand, KilnCompilation *c, const char *src, const KilnTune *t,
                      const TuneProblem *p, const TuneDeviceLimits *lim) {
  space_check(cand, c, src, t, p, lim, true);
}

void tune_space_check_any_call(TuneCand *cand, KilnCompilation *c, const char *src,
                               const KilnTune *t, const TuneProblem *p,
                               const TuneDeviceLimits *lim) {
  space_check(cand, c, src, t, p, lim, false);
}

TuneCand *tune_space_build(KilnCompilation *c, const char *src, const KilnTune *t,
                           const TuneProblem *p, const TuneDeviceLimits *lim, int *n) {
  size_t count = kiln_tune_config_count(t);
  if (count > TUNE_MAX_SPACE) count = TUNE_MAX_SPACE; /* refused before (tune_plan_check_kernel) */
  TuneCand *cands = calloc(count ? count : 1, sizeof *cands);
  if (!cands) return NULL;
  for (size_t i = 0; i < count; i++) {
    cands[i].order = (int)i;
    if (!kiln_tune_config_get(t, i, &cands[i].cfg)) {
      cands[i].state = ST_PRUNED;
      snprintf(cands[i].detail, sizeof cands[i].detail, "the tune block has too many parameters");
      continue;
    }
    tune_space_check(&cands[i], c, src, t, p, lim);
  }
  *n = (int)count;
  return cands;
}

/* ---------------------------------------------------------------- the kernel as records see it */

/* Offset of the start of 1-based line `line`. */
static size_t line_start(const char *src, size_t len, int line) {
  size_t off = 0;
  for (int l = 1; l < line && off < len; off++)
    if (src[off] == '\n') l++;
  return off;
}

/* The kernel's text without its tune block: a config added to the block keeps the hash, so
 * its cached records stay valid and only the new configs are timed. */
void tune_kernel_hash(const char *src, size_t len, const KilnKernel *k, char out[20]) {
  size_t a = line_start(src, len, k->span.line);
  size_t b = k->body ? line_start(src, len, k->body->span.end_line + 1) : len;
  if (b < a) b = len;
  snprintf(out, 20, "%016llx", (unsigned long long)tune_fnv1a(src + a, b - a));
}

/* ---------------------------------------------------------------- the block as records see it */

static bool word_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_' || ch == '.';
}

/* The canonical text is the block's source from its name to its closing brace with comments
 * dropped and whitespace dropped, except one space between two word characters: layout and
 * comments do not change it, any token does. */
void tune_block_hash(const char *src, const KilnTune *t, char out[20]) {
  const char *p = src;
  for (int l = 1; l < t->span.line && *p; p++)
    if (*p == '\n') l++;
  for (int c = 1; c < t->span.col && *p && *p != '\n'; c++) p++;
  uint64_t h = 0xcbf29ce484222325ull;
  int depth = 0;
  char last = 0;
  bool space = false;
  for (; *p; p++) {
    if (p[0] == '/' && p[1] == '/') {
      p += strcspn(p, "\n");
      space = true;
      if (!*p) break;
      continue;
    }
    if (p[0] == '/' && p[1] == '*') {
      const char *end = strstr(p + 2, "*/");
      if (!end) break;
      p = end + 1;
      space = true;
      continue;
    }
    char ch = *p;
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      space = true;
      continue;
    }
    if (space && word_char(last) && word_char(ch)) h = (h ^ (unsigned char)' ') * 0x100000001b3ull;
    space = false;
    h = (h ^ (unsigned char)ch) * 0x100000001b3ull;
    last = ch;
    if (ch == '{') depth++;
    if (ch == '}' && --depth == 0) break;
  }
  snprintf(out, 20, "%016llx", (unsigned long long)h);
}

/* Whether v is among the values the block lists for parameter `name`; a parameter the block
 * does not list (num_warps / num_stages left at their defaults) takes only its default dflt. */
static bool value_listed(const KilnTune *t, const char *name, int64_t v, int64_t dflt) {
  for (int i = 0; i < t->nparams; i++) {
    if (strcmp(t->params[i].name, name)) continue;
    for (int j = 0; j < t->params[i].nvalues; j++)
      if (t->params[i].values[j] == v) return true;
    return false;
  }
  return v == dflt;
}

bool tune_config_listed(const KilnTune *t, const char *config, KilnTuneConfig *cfg) {
  char s[256];
  for (int i = 0; i < t->npresets; i++)
    if (kiln_tune_preset_get(t, t->presets[i].name, cfg) && kiln_tune_preset_applies(t, i, cfg)) {
      tune_config_string(cfg, s, sizeof s);
      if (!strcmp(s, config)) return true;
    }
  KilnTuneConfig dflt;
  if (!kiln_tune_config_get(t, 0, &dflt)) return false;
  *cfg = dflt;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", config);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '='), *end;
    if (!eq) return false;
    *eq = '\0';
    int i = 0;
    while (i < cfg->nbindings && strcmp(cfg->bindings[i].name, tok)) i++;
    if (i == cfg->nbindings) return false; /* a parameter the block no longer has */
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (errno || end == eq + 1 || *end || !value_listed(t, tok, v, dflt.bindings[i].value))
      return false;
    cfg->bindings[i].value = v;
    if (!strcmp(tok, "num_warps")) cfg->num_warps = (int)v;
    if (!strcmp(tok, "num_stages")) cfg->num_stages = (int)v;
  }
  tune_config_string(cfg, s, sizeof s); /* every binding once, in the block's order */
  return !strcmp(s, config) && kiln_tune_where_ok(NULL, t, cfg);
}
