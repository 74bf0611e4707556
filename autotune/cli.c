/* cli.c — the `kiln tune` and `kiln lib` commands: options, files, the device probe, and the
 * hand-over from the cache to the library generator. */
#include "internal.h"

#include <kiln/kilnrt.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { EXIT_USAGE = 64 };

const char *const kiln_tune_usage =
    "usage: kiln tune FILE... [options]\n"
    "\n"
    "Times the configurations of each kernel's tune block on a device and reports the fastest\n"
    "correct one (docs/tuning.md).\n"
    "\n"
    "options:\n"
    "  --kernel NAME            only this kernel\n"
    "  -D NAME=VALUE            hold a const parameter at one value (repeatable): an element\n"
    "                           type (-D T=f16) or a choice of what the kernel computes\n"
    "                           (-D EPI=2); replaces the tune block's list for NAME\n"
    "  --args SPEC              how to call the kernel: 'n=4096; x: f32[n]; out: f32[n];\n"
    "                           grid=cdiv(n, BLOCK)' (else a '// kiln-tune-args:' line)\n"
    "  --mode default|max-autotune   presets / a few spread configs, or the whole space\n"
    "  --device cpu|emu|cuda:N  where to time (default cpu)\n"
    "  --cpu CPU                cpu/emu: CPU target of the host code, native (default: this\n"
    "                           machine) or a portable baseline (generic, x86-64-v2...); part\n"
    "                           of the cache's device identity (docs/cli.md)\n"
    "  --jobs N                 parallel builder workers (default 2)\n"
    "  --budget SECONDS         bound on the wall time of the run\n"
    "  --timeout SECONDS        limit of one timing child (default 10)\n"
    "  --reps N                 timed runs per child in the first pass (default 5)\n"
    "  --cache PATH             the JSON tuning cache to read and extend\n"
    "  --json                   print the report as JSON\n"
    "  --report-svg PATH        plot of time per config\n"
    "  --emit-lib DIR           generate the C library of the winners into DIR\n"
    "  --emit-bundle DIR        time nothing: compile every candidate of both modes into DIR\n"
    "                           with a manifest, for kiln-tune-runner on another machine\n"
    "                           (--device cpu|emu|cuda; cuda: --arch sm_80 or sm_90, default sm_90)\n"
    "  --lib-name NAME          name (and prefix) of the generated library (default kernels)\n"
    "  --arch LIST              cuda libraries: cubins for these archs (default sm_80,sm_90)\n"
    "  --no-cubin               cuda libraries: PTX only (no ptxas needed; JIT at load time)\n"
    "  --no-specialize          compile the variants without the promises of the --args values\n"
    "                           (by default integer arguments equal to 1 are specialized and\n"
    "                           those divisible by 16 promised to be, as Triton does)\n";

const char *const kiln_lib_usage =
    "usage: kiln lib FILE... -o DIR [--cache PATH] [--device cpu|emu|cuda] [--cpu CPU]\n"
    "                [--lib-name NAME]\n"
    "                [--args SPEC] [--arch LIST] [--no-cubin] [--tuned-on TEXT] [--require-tuned]\n"
    "                [--no-specialize] [-D NAME=VALUE]...\n"
    "\n"
    "Generates DIR/NAME.h and DIR/NAME.c from the winners recorded in the cache for each\n"
    "kernel (one per key bucket); no timing (docs/library.md). A kernel with no timing for\n"
    "the device gets its default config (a warning; an error with --require-tuned).\n"
    "--device cuda needs no GPU: it takes the timings of the GPU recorded in the cache\n"
    "(--tuned-on TEXT picks one when there are several) and embeds a cubin per --arch\n"
    "(default sm_80,sm_90) plus PTX. Winners tuned with a specialization signature run only\n"
    "on calls that keep its promises; the others get a generic variant (the default config\n"
    "when the cache has no generic timing). --no-specialize leaves specialized records out.\n"
    "-D NAME=VALUE holds a const parameter at one value, as in kiln tune: only the records\n"
    "of that value are taken (one library per element type or epilogue).\n";

typedef struct Opts {
  const char *files[64];
  int nfiles;
  const char *kernel, *device, *cache, *svg, *lib_dir, *lib_name, *tuned_on, *bundle_dir, *cpu;
  const char *args[16];
  int nargs;
  bool max_mode, json, is_lib, require_tuned, no_specialize;
  LibGpuArchs gpu; /* --arch / --no-cubin */
  TunePins pins;   /* -D NAME=VALUE */
  int jobs, reps;
  double budget, timeout;
} Opts;

/* The generated library's name (and symbol prefix): --lib-name, else "kernels". */
static const char *lib_name(const Opts *o) { return o->lib_name ? o->lib_name : "kernels"; }

static int usage(const Opts *o, const char *fmt, const char *what) {
  fprintf(stderr, "kiln %s: ", o->is_lib ? "lib" : "tune");
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\n(see 'kiln help %s')\n", o->is_lib ? "lib" : "tune");
  return EXIT_USAGE;
}

static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
  if (!strcmp(argv[*i], name) && *i + 1 < argc) return argv[++*i];
  return NULL;
}

/* "-D NAME=V" or "-DNAME=V": the NAME=V part, else NULL. */
static const char *define_value(int argc, char **argv, int *i) {
  const char *a = argv[*i];
  if (!strcmp(a, "-D")) return *i + 1 < argc ? argv[++*i] : NULL;
  return !strncmp(a, "-D", 2) && a[2] ? a + 2 : NULL;
}

/* A number in [lo, hi]: NaN is in no range (written so that its comparisons fail), so
 * `--timeout nan` cannot switch hang detection off. */
static bool num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

/* "sm_80,sm_90": oldest first, so that archs[0] is the PTX fallback every newer GPU can JIT. */
static int parse_archs(const char *s, LibGpuArchs *g) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s", s);
  g->narchs = 0;
  bool seen[KILN_TARGET_COUNT] = {0};
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    KilnTarget k = kiln_target_from_name(t);
    if (k != KILN_TARGET_SM80 && k != KILN_TARGET_SM90) return -1;
    seen[k] = true;
  }
  for (int k = KILN_TARGET_SM80; k <= KILN_TARGET_SM90; k++)
    if (seen[k]) g->archs[g->narchs++] = (KilnTarget)k;
  return g->narchs ? 0 : -1;
}

static int parse_opts(int argc, char **argv, Opts *o) {
  double v;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *s;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(o->is_lib ? kiln_lib_usage : kiln_tune_usage, stdout);
      return -1;
    } else if ((s = opt_value(argc, argv, &i, "--kernel"))) o->kernel = s;
    else if ((s = opt_value(argc, argv, &i, "--device"))) o->device = s;
    else if ((s = opt_value(argc, argv, &i, "--cpu"))) {
      char llvm_cpu[64], features[1024];
      if (kiln_rt_host_cpu_target(s, llvm_cpu, sizeof llvm_cpu, features, sizeof features))
        return usage(o, "--cpu: %s", kiln_rt_last_error());
      o->cpu = s;
    }
    else if ((s = opt_value(argc, argv, &i, "--cache"))) o->cache = s;
    else if ((s = opt_value(argc, argv, &i, "--report-svg"))) o->svg = s;
    else if ((s = opt_value(argc, argv, &i, "--emit-lib")) || (s = opt_value(argc, argv, &i, "-o")))
      o->lib_dir = s;
    else if ((s = opt_value(argc, argv, &i, "--lib-name"))) o->lib_name = s;
    else if ((s = opt_value(argc, argv, &i, "--tuned-on"))) o->tuned_on = s;
    else if ((s = opt_value(argc, argv, &i, "--emit-bundle"))) o->bundle_dir = s;
    else if ((s = opt_value(argc, argv, &i, "--arch"))) {
      if (parse_archs(s, &o->gpu)) return usage(o, "--arch expects sm_80 and/or sm_90 (comma-separated), got '%s'", s);
    } else if ((s = define_value(argc, argv, &i))) {
      char err[160];
      if (tune_pins_add(&o->pins, s, err, sizeof err)) return usage(o, "%s", err);
    } else if (!strcmp(a, "--no-cubin")) o->gpu.ptx_only = true;
    else if (!strcmp(a, "--require-tuned")) o->require_tuned = true;
    else if (!strcmp(a, "--no-specialize")) o->no_specialize = true;
    else if ((s = opt_value(argc, argv, &i, "--args"))) {
      if (o->nargs == 16) return usage(o, "%s", "too many --args");
      o->args[o->nargs++] = s;
    } else if ((s = opt_value(argc, argv, &i, "--mode"))) {
      if (strcmp(s, "default") && strcmp(s, "max-autotune"))
        return usage(o, "--mode is default or max-autotune, not '%s'", s);
      o->max_mode = !strcmp(s, "max-autotune");
    } else if ((s = opt_value(argc, argv, &i, "--jobs"))) {
      if (!num(s, 1, 256, &v)) return usage(o, "--jobs expects 1..256, got '%s'", s);
      o->jobs = (int)v;
    } else if ((s = opt_value(argc, argv, &i, "--reps"))) {
      if (!num(s, 1, 64, &v)) return usage(o, "--reps expects 1..64, got '%s'", s);
      o->reps = (int)v;
    } else if ((s = opt_value(argc, argv, &i, "--budget"))) {
      if (!num(s, 0.001, 1e7, &o->budget)) return usage(o, "--budget expects seconds, got '%s'", s);
    } else if ((s = opt_value(argc, argv, &i, "--timeout"))) {
      if (!num(s, 0.01, 1e5, &o->timeout)) return usage(o, "--timeout expects seconds, got '%s'", s);
    } else if (!strcmp(a, "--json")) o->json = true;
    else if (a[0] == '-' && a[1]) return usage(o, "unknown or incomplete option '%s'", a);
    else if (o->nfiles < 64) o->files[o->nfiles++] = a;
  }
  if (o->nfiles == 0) return usage(o, "%s", "no input file");
  if (o->is_lib && !o->lib_dir) return usage(o, "%s", "-o DIR is required");
  if (o->bundle_dir && (o->lib_dir || o->gpu.narchs > 1))
    return usage(o, "%s", "--emit-bundle takes one --arch and no --emit-lib");
  return 0;
}

/* ---------------------------------------------------------------- inputs */

typedef struct SourceFile {
  char *text;
  size_t len;
  KilnCompilation *c;
  TuneHarness specs[16]; /* from `// kiln-tune-args:` lines */
  int nspecs;
} SourceFile;

static void scan_spec_comments(SourceFile *f, FILE *err) {
  static const char tag[] = "kiln-tune-args:";
  for (const char *p = strstr(f->text, tag); p && f->nspecs < 16; p = strstr(p + 1, tag)) {
    char line[1024];
    size_t n = strcspn(p + sizeof tag - 1, "\n");
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, p + sizeof tag - 1, n);
    line[n] = '\0';
    char e[256];
    if (tune_harness_parse(line, &f->specs[f->nspecs], e, sizeof e) == 0) f->nspecs++;
    else fprintf(err, "kiln tune: warning: ignoring a kiln-tune-args line: %s\n", e);
  }
}

static int open_source(const char *path, SourceFile *f) {
  memset(f, 0, sizeof *f);
  f->text = kiln_file_read(path, &f->len);
  if (!f->text) {
    fprintf(stderr, "kiln: error: cannot read '%s': %s\n", path, strerror(errno));
    return 2;
  }
  f->c = kiln_frontend_create(path, f->text, f->len);
  if (!f->c) return 2;
  bool ok = kiln_frontend_parse(f->c) && kiln_sema_check_all(f->c);
  if (!ok) {
    kiln_diag_render(f->c, stderr);
    return 1;
  }
  scan_spec_comments(f, stderr);
  return 0;
}

static void close_source(SourceFile *f) {
  kiln_frontend_destroy(f->c);
  free(f->text);
}

/* Command-line specs win over the file's; a spec naming the kernel over a generic one. */
static const TuneHarness *pick_harness(const TuneHarness *cl, int ncl, const SourceFile *f,
                                       const char *kernel) {
  for (int pass = 0; pass < 4; pass++) {
    const TuneHarness *hs = pass < 2 ? cl : f->specs;
    int n = pass < 2 ? ncl : f->nspecs;
    for (int i = 0; i < n; i++)
      if (pass % 2 == 0 ? !strcmp(hs[i].kernel, kernel) : !hs[i].kernel[0]) return &hs[i];
  }
  return NULL;
}

/* ---------------------------------------------------------------- library hand-over */

static bool parse_config(const KilnTune *t, const char *s, KilnTuneConfig *cfg) {
  if (!kiln_tune_config_get(t, 0, cfg)) return false;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) return false;
    *eq = '\0';
    int i = 0;
    while (i < cfg->nbindings && strcmp(cfg->bindings[i].name, tok)) i++;
    if (i == cfg->nbindings) return false; /* a parameter the block no longer has */
    cfg->bindings[i].value = strtoll(eq + 1, NULL, 10);
    if (!strcmp(tok, "num_warps")) cfg->num_warps = (int)cfg->bindings[i].value;
    if (!strcmp(tok, "num_stages")) cfg->num_stages = (int)cfg->bindings[i].value;
  }
  return true;
}

/* The buckets of a record key ("M=1024,N=1024|sak=1": the part before the signature). */
static void parse_key(const LibKernel *lk, const char *record_key, int64_t *vals) {
  char key[256];
  snprintf(key, sizeof key, "%.*s", (int)strcspn(record_key, "|"), record_key);
  for (int k = 0; k < lk->nkeys; k++) {
    const char *p = strstr(key, lk->keys[k]);
    size_t n = strlen(lk->keys[k]);
    while (p && !(p[n] == '=' && (p == key || p[-1] == ','))) p = strstr(p + 1, lk->keys[k]);
    vals[k] = p ? strtoll(p + n + 1, NULL, 10) : 0;
  }
}

/* Position of a config in the block's cross product (the tie-break order); presets and
 * configs the block no longer lists come after. */
static int config_order(const KilnTune *t, const char *config) {
  size_t n = kiln_tune_config_count(t);
  for (size_t i = 0; i < n && i < 100000; i++) {
    KilnTuneConfig cfg;
    char s[256];
    if (!kiln_tune_config_get(t, i, &cfg)) break;
    tune_config_string(&cfg, s, sizeof s);
    if (!strcmp(s, config)) return (int)i;
  }
  return (int)n;
}

/* The winner among the OK records of one key bucket, by the rule `kiln tune` uses. */
static int add_bucket_winner(LibKernel *lk, const KilnTune *t, const TunePins *pins,
                             const KilnCache *cache, const size_t *rec, int nrec) {
  TuneCand *c = calloc((size_t)nrec, sizeof *c);
  if (!c) return -1;
  int n = 0;
  for (int i = 0; i < nrec; i++) {
    const KilnCacheRecord *r = &cache->records[rec[i]];
    TuneCand *x = &c[n];
    if (parse_config(t, r->config, &x->cfg) && !tune_pins_match(pins, &x->cfg))
      continue; /* a record of another -D variant */
    if (!tune_config_listed(t, r->config, &x->cfg)) { /* never shipped: it may not even build */
      fprintf(stderr, "kiln lib: note: ignoring the record of '%s' for %s at key '%s': the tune "
                      "block does not list that config (a value it lacks, or a where it fails)\n",
              lk->name, r->config, r->key);
      continue;
    }
    x->state = ST_OK;
    x->median_ms = r->median_ms;
    x->p25_ms = r->p25_ms;
    x->p75_ms = r->p75_ms;
    x->order = config_order(t, r->config);
    x->resources = x->cfg.num_warps;
    for (int b = 0; b < x->cfg.nbindings; b++)
      if (strcmp(x->cfg.bindings[b].name, "num_warps") && strcmp(x->cfg.bindings[b].name, "num_stages") &&
          x->cfg.bindings[b].value > 0)
        x->resources *= (double)x->cfg.bindings[b].value;
    n++;
  }
  TuneSig sig;
  const char *key = cache->records[rec[0]].key;
  if (!tune_sig_parse(tune_sig_of_key(key), lk->params, lk->nparams, &sig)) {
    fprintf(stderr, "kiln lib: warning: ignoring the records of '%s' for key '%s': a signature "
                    "that names no integer parameter\n", lk->name, key);
    n = 0;
  }
  int w = tune_pick_winner(c, n), rc = 0;
  LibVariant *nv = w >= 0 ? realloc(lk->variants, (size_t)(lk->nvariants + 1) * sizeof *nv) : NULL;
  if (w >= 0 && !nv) rc = -1;
  if (nv) {
    lk->variants = nv;
    LibVariant *v = &nv[lk->nvariants++];
    memset(v, 0, sizeof *v);
    parse_key(lk, key, v->keyvals);
    v->sig = sig;
    v->cfg = c[w].cfg;
    v->median_ms = c[w].median_ms;
    v->spread_ms = c[w].p75_ms - c[w].p25_ms;
  }
  free(c);
  return rc;
}

/* One variant per record key (key buckets and signature) recorded for this kernel text and
 * tune block on this device and compiler; without_sig leaves specialized records out. */
static int winners_from_cache(LibKernel *lk, const KilnTune *t, const TunePins *pins,
                              const char *hash, const char *tune_hash, const KilnCache *cache,
                              const char *device, bool without_sig) {
  size_t *rec = malloc((cache->count ? cache->count : 1) * sizeof *rec);
  bool *done = calloc(cache->count ? cache->count : 1, sizeof *done);
  int rc = rec && done ? 0 : -1, stale = 0, unhashed = 0;
  for (size_t i = 0; rc == 0 && i < cache->count; i++) {
    const KilnCacheRecord *r = &cache->records[i];
    if (done[i] || r->status != KILN_CACHE_OK || strcmp(r->kernel, lk->name) ||
        strcmp(r->source_hash, hash) || strcmp(r->device, device) ||
        strcmp(r->kiln_version, KILN_VERSION_STRING) || (without_sig && *tune_sig_of_key(r->key)))
      continue;
    if (strcmp(r->tune_hash, tune_hash)) {
      if (*r->tune_hash) stale++;
      else unhashed++;
      continue;
    }
    int nrec = 0;
    for (size_t j = i; j < cache->count; j++) {
      const KilnCacheRecord *q = &cache->records[j];
      if (!done[j] && q->status == KILN_CACHE_OK && !strcmp(q->kernel, r->kernel) &&
          !strcmp(q->source_hash, hash) && !strcmp(q->tune_hash, tune_hash) &&
          !strcmp(q->device, device) &&
          !strcmp(q->kiln_version, r->kiln_version) && !strcmp(q->key, r->key)) {
        done[j] = true;
        rec[nrec++] = j;
      }
    }
    rc = add_bucket_winner(lk, t, pins, cache, rec, nrec);
  }
  if (stale)
    fprintf(stderr, "kiln lib: note: %d timing(s) of '%s' were made with another version of its "
                    "tune block; not used (tune again to time the block as it is)\n",
            stale, lk->name);
  if (unhashed)
    fprintf(stderr, "kiln lib: note: %d timing(s) of '%s' come from a cache of format 1, which "
                    "does not say which tune block they timed; not used (tune again)\n",
            unhashed, lk->name);
  free(rec);
  free(done);
  return rc;
}

static int fill_lib_kernel(LibKernel *lk, const SourceFile *f, const char *path,
                           const KilnTune *t, const TuneHarness *h, const TuneProblem *p) {
  const KilnKernel *k = t->kernel;
  memset(lk, 0, sizeof *lk);
  snprintf(lk->name, sizeof lk->name, "%s", k->name);
  snprintf(lk->path, sizeof lk->path, "%s", path);
  lk->src = f->text;
  lk->srclen = f->len;
  lk->h = *h;
  lk->tune = t;
  for (int i = 0; i < k->nparams && i < TUNE_MAX_PARAMS; i++) {
    const KilnDecl *d = k->params[i];
    if (d->kind == KILN_DECL_CONST_PARAM) {
      snprintf(lk->consts[lk->nconsts++], 64, "%s", d->name);
      continue;
    }
    lk->params[lk->nparams] = p->params[lk->nparams]; /* with type parameters resolved */
    lk->nparams++;
  }
  for (int j = 0; j < t->nkeys && j < TUNE_MAX_KEYS; j++) {
    snprintf(lk->keys[lk->nkeys], 64, "%s", t->keys[j]);
    for (int i = 0; i < lk->nparams; i++)
      if (!strcmp(lk->params[i].name, t->keys[j])) lk->keyidx[lk->nkeys] = i;
    lk->nkeys++;
  }
  return 0;
}

/* ---------------------------------------------------------------- the run */

typedef struct Run {
  Opts o;
  TuneTarget tg;
  TuneRunOpts ro;
  KilnCache cache, fresh;
  TuneHarness cl[16];
  SourceFile files[64];
  int nopen;
  TuneReport rep;
  TuneBundle bundle;
  TuneProblem problems[64];
  int nproblems;
  LibKernel libk[64];
  TunePinned *pinned[64]; /* the tune block of libk[i] with the -D pins applied */
  int nlibk;
  char tmpdir[PATH_MAX];
} Run;

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static bool wanted(const Run *R, const KilnTune *t) {
  return t->kernel && (!R->o.kernel || !strcmp(R->o.kernel, t->kernel_name));
}

/* The tune block with the pins applied, its kernel re-checked with the first config that
 * passes sema so that parameter types written with a type parameter (`x: *T`) take the pinned
 * type. */
static const KilnTune *pinned_tune(Run *R, SourceFile *f, const KilnTune *t) {
  char err[256];
  TunePinned *pt = tune_pins_apply(&R->o.pins, t, err, sizeof err);
  if (!pt) {
    fprintf(stderr, "kiln %s: error: %s\n", R->o.is_lib ? "lib" : "tune", err);
    return NULL;
  }
  R->pinned[R->nlibk] = pt;
  size_t n = kiln_tune_config_count(&pt->tune);
  KilnKernel *k = NULL;
  for (size_t i = 0; i < n && i < 64 && !k; i++) {
    KilnTuneConfig cfg;
    if (kiln_tune_config_get(&pt->tune, i, &cfg) &&
        !kiln_sema_check_kernel(f->c, t->kernel_name, cfg.bindings, (size_t)cfg.nbindings, &k))
      k = NULL;
  }
  return &pt->tune;
}

static int tune_file(Run *R, int fi) {
  SourceFile *f = &R->files[fi];
  for (int ti = 0; ti < kiln_tune_count(f->c); ti++) {
    const KilnTune *t = kiln_tune_get(f->c, ti);
    if (!wanted(R, t)) continue;
    if (R->nproblems == 64 || R->nlibk == 64) return 1;
    char tune_hash[20];
    tune_block_hash(f->text, t, tune_hash); /* as written: records of every -D share it */
    if (!(t = pinned_tune(R, f, t))) return 1;
    const TuneHarness *h = pick_harness(R->cl, R->o.nargs, f, t->kernel_name);
    if (!h) {
      fprintf(stderr, "kiln tune: error: no --args for kernel '%s' (and no kiln-tune-args line "
                      "in %s)\n", t->kernel_name, R->o.files[fi]);
      return 1;
    }
    TuneProblem *p = &R->problems[R->nproblems++];
    char err[256];
    if (tune_problem_init(p, h, t->kernel, t, err, sizeof err)) {
      fprintf(stderr, "kiln tune: error: %s: %s\n", t->kernel_name, err);
      return 1;
    }
    /* a library's --args give its default grid rule and key only: its variants' promises come
     * from the records, and its fallback is generic */
    if (!R->o.is_lib && !R->o.no_specialize) tune_problem_specialize(p);
    TuneKernelReport *kr = realloc(R->rep.kernels, (size_t)(R->rep.nkernels + 1) * sizeof *kr);
    if (!kr) return 2;
    R->rep.kernels = kr;
    TuneKernelReport *rep = &kr[R->rep.nkernels++];
    memset(rep, 0, sizeof *rep);
    memcpy(rep->tune_hash, tune_hash, sizeof tune_hash);
    TuneJob j = {R->o.files[fi], f->text, f->len, f->c, t, p, &R->tg, &R->ro,
                 R->o.cache ? &R->cache : NULL, &R->fresh, R->o.max_mode, R->tmpdir,
                 stderr, rep};
    if (R->o.bundle_dir) {
      if (tune_bundle_kernel(&R->bundle, &j)) return 2;
    } else if (!R->o.is_lib) {
      size_t before = R->fresh.count;
      if (tune_kernel(&j) != 0) return 2;
      /* into the cache as soon as the kernel is done: a killed run loses at most the kernel it
       * was tuning */
      KilnCache done = {R->fresh.records + before, R->fresh.count - before, 0};
      int rc = R->o.cache && done.count ? kiln_cache_merge_save(R->o.cache, &done, stderr) : 0;
      if (rc) return rc > 0 ? 1 : 2;
    }
    if (R->o.is_lib) tune_kernel_hash(f->text, f->len, t->kernel, rep->source_hash);
    R->rep.timings += rep->timings;
    fill_lib_kernel(&R->libk[R->nlibk++], f, R->o.files[fi], t, h, p);
  }
  return 0;
}

static bool is_cuda_spec(const char *spec) { return !strncmp(spec, "cuda", 4); }

/* `kiln lib --device cuda` on a machine without a GPU: the GPU whose timings the library takes
 * is the one recorded in the cache for this kernel text and compiler (--tuned-on narrows it).
 * Returns 0 with its id in dev, 1 when the cache has no such timing, -1 when several GPUs are
 * recorded and --tuned-on does not tell them apart (reported). */
static int recorded_gpu(const Run *R, const LibKernel *lk, const char *hash, const KilnCache *all,
                        char *dev, size_t cap) {
  dev[0] = '\0';
  for (size_t i = 0; i < all->count; i++) {
    const KilnCacheRecord *r = &all->records[i];
    if (r->status != KILN_CACHE_OK || strcmp(r->kernel, lk->name) || strcmp(r->source_hash, hash) ||
        strcmp(r->kiln_version, KILN_VERSION_STRING) || strncmp(r->device, "cuda:", 5) ||
        (R->o.tuned_on && !strstr(r->device, R->o.tuned_on)) || !strcmp(r->device, dev))
      continue;
    if (dev[0]) {
      fprintf(stderr, "kiln lib: error: the cache has timings of '%s' from several GPUs ('%s', "
                      "'%s'); pick one with --tuned-on TEXT\n", lk->name, dev, r->device);
      return -1;
    }
    snprintf(dev, cap, "%s", r->device);
  }
  return dev[0] ? 0 : 1;
}

/* A kernel the cache has no generic timing of: the config `--mode default` would time first (its
 * first preset that survives pruning, else the first kept config), for the key of its --args,
 * compiled without promises. With specialized winners it is the fallback of the calls that
 * break their promises; the library chooses it only when no tuned variant fits a call. */
static int add_default_variant(Run *R, LibKernel *lk, const SourceFile *f, const KilnTune *t,
                               const TuneProblem *p) {
  TuneCand c;
  bool found = false;
  for (int i = 0; i < t->npresets && !found; i++) {
    memset(&c, 0, sizeof c);
    if (!kiln_tune_preset_get(t, t->presets[i].name, &c.cfg)) continue;
    tune_space_check(&c, f->c, f->text, t, p, &R->tg.limits);
    found = c.state != ST_PRUNED;
  }
  size_t n = kiln_tune_config_count(t);
  for (size_t i = 0; !found && i < n && i < 100000; i++) {
    memset(&c, 0, sizeof c);
    if (!kiln_tune_config_get(t, i, &c.cfg)) break;
    tune_space_check(&c, f->c, f->text, t, p, &R->tg.limits);
    found = c.state != ST_PRUNED;
  }
  if (!found) {
    fprintf(stderr, "kiln lib: error: every config of '%s' is pruned for this device\n", lk->name);
    return 1;
  }
  LibVariant *nv = realloc(lk->variants, (size_t)(lk->nvariants + 1) * sizeof *nv);
  if (!nv) return 2;
  lk->variants = nv;
  LibVariant *v = &nv[lk->nvariants++];
  memset(v, 0, sizeof *v);
  parse_key(lk, p->key, v->keyvals);
  v->cfg = c.cfg;
  v->untuned = true;
  if (lk->nvariants > 1)
    fprintf(stderr, "kiln %s: note: '%s' has only specialized timings; calls that break their "
                    "promises use its default config %s, unspecialized (untuned)\n",
            R->o.is_lib ? "lib" : "tune", lk->name, c.config);
  else
    fprintf(stderr, "kiln %s: warning: no timing of '%s' for this device in the cache; the library "
                    "uses its default config %s (untuned)\n", R->o.is_lib ? "lib" : "tune",
            lk->name, c.config);
  return 0;
}

static bool has_generic(const LibKernel *lk) {
  for (int v = 0; v < lk->nvariants; v++)
    if (lk->variants[v].sig.n == 0) return true;
  return false;
}

/* The variants of one kernel: the cache's winners, plus its default config when none of them
 * is generic (so that every call has a variant whose promises it keeps). */
static int lib_variants(Run *R, int fi, const KilnTune *t, int ki, const KilnCache *all) {
  LibKernel *lk = &R->libk[ki];
  const char *hash = R->rep.kernels[ki].source_hash;
  char dev[256];
  snprintf(dev, sizeof dev, "%s", R->tg.device_id);
  if (!dev[0]) { /* cuda without a probe */
    int found = recorded_gpu(R, lk, hash, all, dev, sizeof dev);
    if (found < 0) return 1;
    if (found == 0) fprintf(stderr, "kiln lib: note: '%s' as tuned on %s\n", lk->name, dev);
  }
  if (dev[0] && winners_from_cache(lk, t, &R->o.pins, hash, R->rep.kernels[ki].tune_hash, all,
                                   dev, R->o.no_specialize))
    return 2;
  if (has_generic(lk)) return 0;
  if (lk->nvariants == 0 && R->o.require_tuned) {
    fprintf(stderr, "kiln %s: error: no correct timing of '%s' for this device in the cache\n",
            R->o.is_lib ? "lib" : "tune", lk->name);
    return 1;
  }
  return add_default_variant(R, lk, &R->files[fi], t, &R->problems[ki]);
}

static int emit_library(Run *R) {
  KilnCache all = {0};
  for (size_t i = 0; i < R->cache.count; i++) kiln_cache_put(&all, &R->cache.records[i]);
  for (size_t i = 0; i < R->fresh.count; i++) kiln_cache_put(&all, &R->fresh.records[i]);
  int rc = 0, ki = 0;
  for (int fi = 0; fi < R->nopen && rc == 0; fi++)
    for (int ti = 0; ti < kiln_tune_count(R->files[fi].c) && rc == 0; ti++) {
      if (!wanted(R, kiln_tune_get(R->files[fi].c, ti))) continue;
      rc = lib_variants(R, fi, &R->pinned[ki]->tune, ki, &all);
      ki++;
    }
  LibGpuArchs gpu = R->o.gpu;
  if (gpu.narchs == 0) gpu = (LibGpuArchs){{KILN_TARGET_SM80, KILN_TARGET_SM90}, 2, gpu.ptx_only};
  bool cuda = is_cuda_spec(R->tg.spec);
  if (rc == 0)
    rc = kiln_libgen_emit(R->o.lib_dir, lib_name(&R->o), R->tg.target, R->tg.cpu,
                          cuda ? &gpu : NULL, R->libk, R->nlibk, stderr);
  kiln_cache_free(&all);
  return rc;
}

static int print_report(Run *R) {
  if (R->o.is_lib) return 0;
  if (R->o.json) {
    char *text = tune_report_json(&R->rep);
    if (!text) return 2;
    puts(text);
    free(text);
  } else {
    tune_report_table(&R->rep, stdout);
  }
  return R->o.svg && tune_report_svg(&R->rep, R->o.svg, stderr) ? 2 : 0;
}

/* --emit-bundle: the target comes from --device/--arch; no device is opened here. */
static void bundle_target(Run *R) {
  TuneTarget *t = &R->tg;
  if (is_cuda_spec(t->spec)) {
    t->target = R->o.gpu.narchs ? R->o.gpu.archs[0] : KILN_TARGET_SM90;
    t->limits = (TuneDeviceLimits){1024, 256 * 1024};
  } else {
    t->target = !strcmp(t->spec, "emu") ? KILN_TARGET_EMU : KILN_TARGET_CPU;
    t->limits = (TuneDeviceLimits){1024, t->target == KILN_TARGET_EMU ? 256 * 1024 : 8u << 20};
  }
}

/* Every -D must name a const parameter of some kernel to tune, with the right kind of value:
 * checked before anything is built. */
static int check_pins(Run *R) {
  const char *cmd = R->o.is_lib ? "lib" : "tune";
  char err[256];
  for (int fi = 0; fi < R->nopen; fi++)
    for (int ti = 0; ti < kiln_tune_count(R->files[fi].c); ti++) {
      const KilnTune *t = kiln_tune_get(R->files[fi].c, ti);
      if (wanted(R, t) && tune_pins_check(&R->o.pins, t->kernel, err, sizeof err) < 0)
        return fprintf(stderr, "kiln %s: error: %s\n", cmd, err), 1;
    }
  const char *unused = tune_pins_unused(&R->o.pins);
  if (unused)
    return fprintf(stderr, "kiln %s: error: -D %s: no kernel to tune has a const parameter '%s'\n",
                   cmd, unused, unused), 1;
  return 0;
}

static int run_all(Run *R) {
  char err[256];
  for (int i = 0; i < R->o.nargs; i++)
    if (tune_harness_parse(R->o.args[i], &R->cl[i], err, sizeof err))
      return fprintf(stderr, "kiln tune: error: --args: %s\n", err), 1;
  snprintf(R->tg.spec, sizeof R->tg.spec, "%s", R->o.device ? R->o.device : "cpu");
  const char *cpu = R->o.cpu ? R->o.cpu : getenv("KILN_CPU");
  snprintf(R->tg.cpu, sizeof R->tg.cpu, "%s", cpu && *cpu ? cpu : "native");
  char llvm_cpu[64], features[1024];
  if (kiln_rt_host_cpu_target(R->tg.cpu, llvm_cpu, sizeof llvm_cpu, features, sizeof features))
    return fprintf(stderr, "kiln %s: error: %s\n", R->o.is_lib ? "lib" : "tune", kiln_rt_last_error()), 64;
  if (R->o.bundle_dir) {
    bundle_target(R);
    if (tune_bundle_begin(&R->bundle, R->o.bundle_dir, R->tg.target, R->tg.cpu, stderr)) return 2;
  } else if (R->o.is_lib && is_cuda_spec(R->tg.spec)) {
    /* a library for GPUs is built anywhere: no device is opened, the cache says which GPU */
    R->tg.target = KILN_TARGET_SM90;
    R->tg.limits = (TuneDeviceLimits){1024, 256 * 1024};
  } else if (tune_target_probe(&R->tg, err, sizeof err)) {
    return fprintf(stderr, "kiln %s: error: %s\n", R->o.is_lib ? "lib" : "tune", err), 2;
  }
  snprintf(R->rep.device, sizeof R->rep.device, "%s", R->tg.device_id);
  if (R->o.cache) { /* `kiln lib` only reads: it never locks, moves or writes the cache */
    int rc = R->o.is_lib ? kiln_cache_read(R->o.cache, &R->cache, stderr)
                         : kiln_cache_load(R->o.cache, &R->cache, stderr);
    if (rc) return rc > 0 ? 1 : 2;
  }
  for (int i = 0; i < R->o.nfiles; i++, R->nopen++) {
    int rc = open_source(R->o.files[i], &R->files[i]);
    if (rc) {
      R->nopen++;
      return rc;
    }
  }
  const char *base = getenv("TMPDIR");
  snprintf(R->tmpdir, sizeof R->tmpdir, "%s/kiln-tune-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(R->tmpdir)) return fprintf(stderr, "kiln tune: error: mkdtemp: %s\n", strerror(errno)), 2;
  if (check_pins(R)) return 1;
  for (int i = 0; i < R->nopen; i++) {
    int rc = tune_file(R, i);
    if (rc) return rc;
  }
  if (R->o.bundle_dir) return tune_bundle_end(&R->bundle, true, stderr);
  int rc = print_report(R);
  if (rc == 0 && R->o.lib_dir) rc = emit_library(R);
  return rc;
}

static void run_free(Run *R) {
  if (R->bundle.mf) tune_bundle_end(&R->bundle, false, stderr);
  if (R->tmpdir[0]) nftw(R->tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  for (int i = 0; i < R->rep.nkernels; i++) {
    tune_cands_free(R->rep.kernels[i].space, R->rep.kernels[i].nspace);
    tune_cands_free(R->rep.kernels[i].cands, R->rep.kernels[i].ncands);
  }
  free(R->rep.kernels);
  for (int i = 0; i < R->nproblems; i++) tune_problem_free(&R->problems[i]);
  for (int i = 0; i < R->nlibk; i++) free(R->libk[i].variants);
  for (int i = 0; i < 64; i++) tune_pinned_free(R->pinned[i]);
  for (int i = 0; i < R->nopen; i++) close_source(&R->files[i]);
  kiln_cache_free(&R->cache);
  kiln_cache_free(&R->fresh);
}

typedef struct NamedPath {
  char path[PATH_MAX];
  const char *what; /* the option that names it */
  bool output;
} NamedPath;

static void name_path(NamedPath *n, int *count, const char *what, bool output, const char *fmt,
                      const char *a, const char *b) {
  NamedPath *p = &n[(*count)++];
  snprintf(p->path, sizeof p->path, fmt, a, b);
  p->what = what;
  p->output = output;
}

/* No output may be one of the inputs (compared as files, not names: a link or another spelling
 * of the path counts): writing it would replace a kernel source or a cache with generated text.
 * Checked before any work; the cache of `kiln tune` is both read and written, so it is only
 * compared with the rest. Returns 0 or the usage exit code (reported). */
static int check_outputs(const Opts *o) {
  NamedPath n[64 + 5];
  int count = 0;
  for (int i = 0; i < o->nfiles; i++) name_path(n, &count, "input file", false, "%s%s", o->files[i], "");
  if (o->cache) name_path(n, &count, "--cache", !o->is_lib, "%s%s", o->cache, "");
  if (o->svg) name_path(n, &count, "--report-svg", true, "%s%s", o->svg, "");
  const char *lib = lib_name(o), *opt = o->is_lib ? "-o" : "--emit-lib";
  if (o->lib_dir) {
    name_path(n, &count, opt, true, "%s/%s.h", o->lib_dir, lib);
    name_path(n, &count, opt, true, "%s/%s.c", o->lib_dir, lib);
  }
  if (o->bundle_dir) name_path(n, &count, "--emit-bundle", true, "%s/%s", o->bundle_dir, "manifest.txt");
  const char *cmd = o->is_lib ? "lib" : "tune";
  for (int a = 0; a < count; a++)
    for (int b = 0; b < count; b++)
      if (a != b && n[a].output && (b < a || !n[b].output) &&
          kiln_file_same(n[a].path, n[b].path)) {
        fprintf(stderr, "kiln %s: the output '%s' (%s) is the same file as '%s' (%s); refusing "
                        "to replace it\n(see 'kiln help %s')\n",
                cmd, n[a].path, n[a].what, n[b].path, n[b].what, cmd);
        return EXIT_USAGE;
      }
  return 0;
}

static int command(int argc, char **argv, bool is_lib) {
  Run *R = calloc(1, sizeof *R);
  if (!R) return 2;
  R->o = (Opts){.is_lib = is_lib, .jobs = 2, .reps = 5, .timeout = 10};
  int rc = parse_opts(argc, argv, &R->o);
  if (rc == 0) rc = check_outputs(&R->o);
  if (rc == 0) {
    R->rep.mode = R->o.max_mode ? "max-autotune" : "default";
    R->ro = (TuneRunOpts){R->o.jobs, R->o.budget > 0 ? tune_now() + R->o.budget : 0, R->o.timeout,
                          R->o.reps, isatty(STDERR_FILENO) == 1, stderr};
    rc = run_all(R);
  } else if (rc < 0) {
    rc = 0;
  }
  run_free(R);
  free(R);
  return rc;
}

int kiln_tune_command(int argc, char **argv) { return command(argc, argv, false); }
int kiln_lib_command(int argc, char **argv) { return command(argc, argv, true); }
