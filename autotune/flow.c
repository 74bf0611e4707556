/* flow.c — the three runs behind `kiln tune`, `kiln lib` and `kiln tune --emit-bundle`.
 *
 * Each flow is one function that reads top to bottom as the list of its steps, and the steps
 * are shared:
 *
 *   tune:    target (probe) → cache (locked) → sources → pins → per kernel: prepare, time,
 *            save → report → library (with --emit-lib)
 *   lib:     target (probe, or none for cuda) → cache (read only) → sources → pins → per
 *            kernel: prepare → library
 *   bundle:  target (none) → bundle → sources → pins → per kernel: prepare, compile → manifest
 *
 * "Prepare" is the same for all: the kernel must fit the tuner's named limits, its tune block
 * gets the -D pins, its argument spec is chosen and resolved into a problem. Decisions (which
 * spec, which records, which winner, which default) are plan.h's; this file does the I/O around
 * them and says what they left out. Arrays of kernels and files grow: no count is capped. */
#include "plan.h"

#include <kiln/kilnrt.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *tune_flow_command(TuneFlow f) { return f == TUNE_FLOW_LIB ? "lib" : "tune"; }

const char *tune_flow_lib_name(const TuneOpts *o) { return o->lib_name ? o->lib_name : "kernels"; }

/* ---------------------------------------------------------------- inputs */

#define MAX_SPEC_LINES 16 /* `// kiln-tune-args:` lines read from one file */

typedef struct SourceFile {
  const char *path;
  char *text;
  size_t len;
  KilnCompilation *c;
  TuneHarness specs[MAX_SPEC_LINES]; /* from `// kiln-tune-args:` lines */
  int nspecs;
} SourceFile;

static void read_one_spec(SourceFile *f, const char *p, FILE *err) {
  char line[1024], e[256];
  size_t n = strcspn(p, "\n");
  if (n >= sizeof line) { /* never cut: a cut spec would tune another problem */
    fprintf(err,
            "kiln tune: warning: %s: ignoring a kiln-tune-args line of %zu characters (the "
            "most is %zu)\n",
            f->path, n, sizeof line - 1);
    return;
  }
  memcpy(line, p, n);
  line[n] = '\0';
  if (tune_harness_parse(line, &f->specs[f->nspecs], e, sizeof e) == 0)
    f->nspecs++;
  else
    fprintf(err, "kiln tune: warning: ignoring a kiln-tune-args line: %s\n", e);
}

static void scan_spec_comments(SourceFile *f, FILE *err) {
  static const char tag[] = "kiln-tune-args:";
  for (const char *p = strstr(f->text, tag); p; p = strstr(p + 1, tag)) {
    if (f->nspecs == MAX_SPEC_LINES) {
      fprintf(err, "kiln tune: warning: %s: only the first %d kiln-tune-args lines are read\n",
              f->path, MAX_SPEC_LINES);
      return;
    }
    read_one_spec(f, p + sizeof tag - 1, err);
  }
}

static int open_source(const char *path, SourceFile *f) {
  memset(f, 0, sizeof *f);
  f->path = path;
  f->text = kiln_file_read_max(path, &f->len, TUNE_MAX_SOURCE_BYTES);
  if (!f->text) {
    int saved = errno;
    tune_report_read_error(stderr, "kiln", "source", path, "TUNE_MAX_SOURCE_BYTES",
                           TUNE_MAX_SOURCE_BYTES);
    return saved == EFBIG ? 1 : 2;
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

/* ---------------------------------------------------------------- the run's state */

/* One kernel of the run; kernel i is also rep.kernels[i] and libk[i] (those arrays are handed
 * whole to the report and the library generator). */
typedef struct RunKernel {
  int file;            /* index into files */
  TunePinned *pinned;  /* its tune block with the -D pins applied */
  TuneProblem problem; /* its argument spec resolved */
  bool has_problem;
  TuneSig *layouts; /* the promises of its further --args layouts (a library's copies) */
  int nlayouts;
} RunKernel;

typedef struct Run {
  TuneOpts *o;     /* its pins are marked as used */
  const char *cmd; /* "tune" or "lib", for messages */
  TuneTarget tg;
  TuneArgBudget budget; /* what --args buffers may take (set with the first kernel) */
  TuneRunOpts ro;
  KilnCache cache, fresh;
  TuneHarness cl[TUNE_MAX_ARGS];
  SourceFile *files;
  int nopen;
  TuneReport rep;
  TuneBundle bundle;
  RunKernel *ks;
  LibKernel *libk;
  int nks, nlibk, cap; /* cap: room of ks, libk and rep.kernels */
  char tmpdir[PATH_MAX];
  int tmpdir_cleanup; /* its kiln_cleanup_register id: removed if a signal ends the run */
  char *old_tmpdir;   /* TMPDIR before it was pointed at tmpdir (NULL: unset) */
  bool tmpdir_set;
} Run;

/* Room for one more kernel in ks, libk and rep.kernels (they grow together). 0 or -1. */
static int grow_kernels(Run *R) {
  if (R->nks < R->cap) return 0;
  int cap = R->cap ? 2 * R->cap : 8;
  RunKernel *ks = realloc(R->ks, (size_t)cap * sizeof *ks);
  if (ks) R->ks = ks;
  LibKernel *lk = realloc(R->libk, (size_t)cap * sizeof *lk);
  if (lk) R->libk = lk;
  TuneKernelReport *kr = realloc(R->rep.kernels, (size_t)cap * sizeof *kr);
  if (kr) R->rep.kernels = kr;
  if (!ks || !lk || !kr) return -1;
  R->cap = cap;
  return 0;
}

static bool wanted(const Run *R, const KilnTune *t) {
  return t->kernel && (!R->o->kernel || !strcmp(R->o->kernel, t->kernel_name));
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

/* ---------------------------------------------------------------- shared steps */

/* The --args specs and the CPU target of host code. 0 or an exit code (reported). */
static int read_cl_specs(Run *R) {
  char err[256];
  for (int i = 0; i < R->o->nargs; i++)
    if (tune_harness_parse(R->o->args[i], &R->cl[i], err, sizeof err))
      return fprintf(stderr, "kiln %s: error: --args: %s\n", R->cmd, err), 1;
  snprintf(R->tg.spec, sizeof R->tg.spec, "%s", R->o->device ? R->o->device : "cpu");
  const char *cpu = R->o->cpu ? R->o->cpu : getenv("KILN_CPU");
  snprintf(R->tg.cpu, sizeof R->tg.cpu, "%s", cpu && *cpu ? cpu : "native");
  R->tg.index_bits = R->o->index_bits == 64 ? 64 : 32;
  char llvm_cpu[64], features[1024];
  if (kiln_rt_host_cpu_target(R->tg.cpu, llvm_cpu, sizeof llvm_cpu, features, sizeof features))
    return fprintf(stderr, "kiln %s: error: %s\n", R->cmd, kiln_rt_last_error()), 64;
  return 0;
}

static int probe_target(Run *R) {
  char err[256];
  if (tune_target_probe(&R->tg, err, sizeof err))
    return fprintf(stderr, "kiln %s: error: %s\n", R->cmd, err), 2;
  snprintf(R->rep.device, sizeof R->rep.device, "%s", R->tg.device_id);
  return 0;
}

/* `locked`: `kiln tune` reads the cache it extends under its lock (a corrupt one is moved
 * aside); `kiln lib` only reads: it never locks, moves or writes the cache. */
static int load_cache(Run *R, bool locked) {
  if (!R->o->cache) return 0;
  int rc = locked ? kiln_cache_load(R->o->cache, &R->cache, stderr)
                  : kiln_cache_read(R->o->cache, &R->cache, stderr);
  return rc ? (rc > 0 ? 1 : 2) : 0;
}

static int open_sources(Run *R) {
  R->files = calloc((size_t)R->o->nfiles, sizeof *R->files);
  if (!R->files) return 2;
  for (; R->nopen < R->o->nfiles; R->nopen++) {
    int rc = open_source(R->o->files[R->nopen], &R->files[R->nopen]);
    if (rc) return R->nopen++, rc;
  }
  return 0;
}

static int make_tmpdir(Run *R) {
  const char *base = getenv("TMPDIR");
  snprintf(R->tmpdir, sizeof R->tmpdir, "%s/kiln-tune-XXXXXX", base && *base ? base : "/tmp");
  if (mkdtemp(R->tmpdir)) {
    R->tmpdir_cleanup = kiln_cleanup_register(R->tmpdir);
    /* The children's temp files (the compiler's, the runtime's module directories) go in
     * here too, so an interrupted run leaves nothing in the user's TMPDIR. */
    R->old_tmpdir = base ? strdup(base) : NULL;
    R->tmpdir_set = setenv("TMPDIR", R->tmpdir, 1) == 0;
    return 0;
  }
  fprintf(stderr, "kiln %s: error: mkdtemp: %s\n", R->cmd, strerror(errno));
  R->tmpdir[0] = '\0';
  return 2;
}

/* Every -D must name a const parameter of some kernel to tune, with the right kind of value:
 * checked before anything is built. */
static int check_pins(Run *R) {
  char err[256];
  TunePins *pins = &R->o->pins; /* marks which pins are used */
  for (int fi = 0; fi < R->nopen; fi++)
    for (int ti = 0; ti < kiln_tune_count(R->files[fi].c); ti++) {
      const KilnTune *t = kiln_tune_get(R->files[fi].c, ti);
      if (wanted(R, t) && tune_pins_check(pins, t->kernel, err, sizeof err) < 0)
        return fprintf(stderr, "kiln %s: error: %s\n", R->cmd, err), 1;
    }
  const char *unused = tune_pins_unused(pins);
  if (unused)
    return fprintf(stderr, "kiln %s: error: -D %s: no kernel to tune has a const parameter '%s'\n",
                   R->cmd, unused, unused),
           1;
  return 0;
}

/* The tune block with the pins applied, its kernel re-checked with the first config that
 * passes sema so that parameter types written with a type parameter (`x: *T`) take the pinned
 * type. */
static const KilnTune *pinned_tune(Run *R, RunKernel *k, SourceFile *f, const KilnTune *t) {
  char err[256];
  k->pinned = tune_pins_apply(&R->o->pins, t, err, sizeof err);
  if (!k->pinned) {
    fprintf(stderr, "kiln %s: error: %s\n", R->cmd, err);
    return NULL;
  }
  size_t n = kiln_tune_config_count(&k->pinned->tune);
  KilnKernel *kk = NULL;
  for (size_t i = 0; i < n && i < 64 && !kk; i++) {
    KilnTuneConfig cfg;
    if (kiln_tune_config_get(&k->pinned->tune, i, &cfg) &&
        !kiln_sema_check_kernel(f->c, t->kernel_name, cfg.bindings, (size_t)cfg.nbindings, &kk))
      kk = NULL;
  }
  return &k->pinned->tune;
}

/* The promises of kernel k's further layouts: every spec after h that names the same kernel
 * (plan.h), resolved (scalars only) and turned into a signature, so that a spec that does not
 * fit the kernel is an error in every flow, not only where a library is made. 0 or 1. */
static int read_layouts(Run *R, RunKernel *k, const TuneHarness *h, const KilnTune *t) {
  const SourceFile *f = &R->files[k->file];
  const TuneHarness *more[TUNE_MAX_ARGS + MAX_SPEC_LINES];
  int n = tune_plan_more_layouts(R->cl, R->o->nargs, f->specs, f->nspecs, h, more,
                                 TUNE_MAX_ARGS + MAX_SPEC_LINES);
  if (n == 0) return 0;
  k->layouts = calloc((size_t)n, sizeof *k->layouts);
  TuneProblem *p = malloc(sizeof *p);
  int rc = k->layouts && p ? 0 : 2;
  for (int i = 0; i < n && rc == 0; i++) {
    char err[256];
    if (tune_problem_init_scalars(p, more[i], t->kernel, err, sizeof err)) {
      fprintf(stderr, "kiln %s: error: '%s': its spec %d (a further layout): %s\n", R->cmd,
              t->kernel_name, i + 2, err);
      rc = 1;
      break;
    }
    tune_sig_compute_layout(p->params, p->ival, p->nparams, sizeof p->sig.text,
                            &k->layouts[k->nlayouts++]);
  }
  free(p);
  return rc;
}

/* The kernel of tune block t (file fi) made ready for any flow: pins applied, within the named
 * limits, its argument spec resolved (specialized when `specialize`), its report entry made.
 * Returns 0 with it as R->ks[R->nks - 1], or an exit code (reported). */
static int prepare_kernel(Run *R, int fi, const KilnTune *t, bool specialize) {
  SourceFile *f = &R->files[fi];
  char err[256];
  if (grow_kernels(R)) return 2;
  RunKernel *k = &R->ks[R->nks++];
  memset(k, 0, sizeof *k);
  k->file = fi;
  TuneKernelReport *rep = &R->rep.kernels[R->rep.nkernels++];
  memset(rep, 0, sizeof *rep);
  tune_block_hash(f->text, t, rep->tune_hash); /* as written: records of every -D share it */
  if (!(t = pinned_tune(R, k, f, t))) return 1;
  rep->ast = t->kernel;
  if (tune_plan_check_kernel(t, err, sizeof err)) /* the space as pinned: -D can shrink it */
    return fprintf(stderr, "kiln %s: error: %s: %s\n", R->cmd, f->path, err), 1;
  const TuneHarness *h =
      tune_plan_pick_harness(R->cl, R->o->nargs, f->specs, f->nspecs, t->kernel_name);
  if (!h)
    return fprintf(stderr,
                   "kiln %s: error: no --args for kernel '%s' (and no kiln-tune-args "
                   "line in %s)\n",
                   R->cmd, t->kernel_name, f->path),
           1;
  k->has_problem = true;
  if (!R->budget.bytes && tune_arg_budget(&R->tg, &R->budget, err, sizeof err))
    return fprintf(stderr, "kiln %s: error: %s\n", R->cmd, err), 64;
  if (tune_problem_init(&k->problem, h, t->kernel, t, &R->budget, err, sizeof err))
    return fprintf(stderr, "kiln %s: error: %s: %s\n", R->cmd, t->kernel_name, err), 1;
  if (specialize) tune_problem_specialize(&k->problem);
  return read_layouts(R, k, h, t);
}

static TuneJob job_of(Run *R, int ki) {
  RunKernel *k = &R->ks[ki];
  SourceFile *f = &R->files[k->file];
  return (TuneJob){f->path,
                   f->text,
                   f->len,
                   f->c,
                   &k->pinned->tune,
                   &k->problem,
                   &R->tg,
                   &R->ro,
                   R->o->cache ? &R->cache : NULL,
                   &R->fresh,
                   R->o->max_mode,
                   R->tmpdir,
                   stderr,
                   &R->rep.kernels[ki]};
}

/* What a library needs of kernel ki: its name, parameters, keys, default grid rule. */
static void add_lib_kernel(Run *R, int ki) {
  const RunKernel *k = &R->ks[ki];
  const SourceFile *f = &R->files[k->file];
  const KilnTune *t = &k->pinned->tune;
  const KilnKernel *kk = t->kernel;
  LibKernel *lk = &R->libk[R->nlibk++];
  memset(lk, 0, sizeof *lk);
  snprintf(lk->name, sizeof lk->name, "%s", kk->name);
  snprintf(lk->path, sizeof lk->path, "%s", f->path);
  lk->src = f->text;
  lk->srclen = f->len;
  lk->h = *k->problem.h;
  lk->tune = t;
  for (int i = 0; i < kk->nparams && i < TUNE_MAX_PARAMS; i++) {
    const KilnDecl *d = kk->params[i];
    if (d->kind == KILN_DECL_CONST_PARAM) {
      snprintf(lk->consts[lk->nconsts++], 64, "%s", d->name);
      continue;
    }
    lk->params[lk->nparams] = k->problem.params[lk->nparams]; /* type parameters resolved */
    lk->nparams++;
  }
  for (int j = 0; j < t->nkeys && j < TUNE_MAX_KEYS; j++) {
    snprintf(lk->keys[lk->nkeys], 64, "%s", t->keys[j]);
    for (int i = 0; i < lk->nparams; i++)
      if (!strcmp(lk->params[i].name, t->keys[j])) lk->keyidx[lk->nkeys] = i;
    lk->nkeys++;
  }
}

/* What a flow does with one prepared kernel (R->nks - 1): 0 or an exit code. */
typedef int KernelStep(Run *R, int ki);

/* Prepares every wanted kernel of every file, in order, and runs step on each. */
static int each_kernel(Run *R, bool specialize, KernelStep *step) {
  for (int fi = 0; fi < R->nopen; fi++)
    for (int ti = 0; ti < kiln_tune_count(R->files[fi].c); ti++) {
      const KilnTune *t = kiln_tune_get(R->files[fi].c, ti);
      if (!wanted(R, t)) continue;
      int rc = prepare_kernel(R, fi, t, specialize);
      if (rc == 0) rc = step(R, R->nks - 1);
      if (rc) return rc;
      R->rep.timings += R->rep.kernels[R->nks - 1].timings;
      add_lib_kernel(R, R->nks - 1);
    }
  return 0;
}

/* ---------------------------------------------------------------- the library hand-over */

static void report_notes(const Run *R, const LibKernel *lk, const KilnCache *all,
                         const TunePlanNotes *n) {
  for (int i = 0; i < n->nskips; i++) {
    const KilnCacheRecord *r = &all->records[n->skips[i].record];
    char text[256];
    tune_config_text(r->config, lk->tune ? lk->tune->kernel : NULL, text, sizeof text);
    if (n->skips[i].why == TUNE_PLAN_SKIP_UNLISTED)
      fprintf(stderr,
              "kiln %s: note: ignoring the record of '%s' for %s at key '%s': the tune "
              "block does not list that config (a value it lacks, or a where it fails)\n",
              R->cmd, lk->name, text, r->key);
    else
      fprintf(stderr,
              "kiln %s: warning: ignoring the records of '%s' for key '%s': a signature "
              "that names no integer parameter\n",
              R->cmd, lk->name, r->key);
  }
  if (n->other_compiler)
    fprintf(stderr,
            "kiln %s: note: %d timing(s) of '%s' were made with another build of Kiln (not "
            "%s), whose code may differ; not used (tune again to time this build's)\n",
            R->cmd, n->other_compiler, lk->name, kiln_tune_compiler_id());
  if (n->stale)
    fprintf(stderr,
            "kiln %s: note: %d timing(s) of '%s' were made with another version of its "
            "tune block; not used (tune again to time the block as it is)\n",
            R->cmd, n->stale, lk->name);
  if (n->unhashed)
    fprintf(stderr,
            "kiln %s: note: %d timing(s) of '%s' come from a cache of format 1, which "
            "does not say which tune block they timed; not used (tune again)\n",
            R->cmd, n->unhashed, lk->name);
}

typedef struct CheckCtx {
  const Run *R;
  const SourceFile *f;
  const KilnTune *t;
  const TuneProblem *p;
} CheckCtx;

static void check_on_target(TuneCand *c, void *ctx) {
  const CheckCtx *x = ctx;
  tune_space_check(c, x->f->c, x->f->text, x->t, x->p, &x->R->tg.limits);
}

/* Appends a copy of untuned variant `base` compiled with the promises of sig; false when out of
 * memory (the library stays correct without it). */
static bool add_promised_copy(const Run *R, LibKernel *lk, int base, const TuneSig *sig) {
  LibVariant *nv = realloc(lk->variants, (size_t)(lk->nvariants + 1) * sizeof *nv);
  if (!nv) return false;
  lk->variants = nv;
  nv[lk->nvariants] = nv[base];
  nv[lk->nvariants++].sig = *sig;
  fprintf(stderr,
          "kiln %s: note: '%s' also gets its default config specialized on %s (calls "
          "that break a promise take the generic copy)\n",
          R->cmd, lk->name, sig->text);
  return true;
}

/* Whether lk already has a copy of base's config compiled with exactly the promises of sig
 * (signatures are written in parameter order, so equal promises are equal text). */
static bool has_copy(const LibKernel *lk, int base, const TuneSig *sig) {
  for (int v = 0; v < lk->nvariants; v++)
    if (!strcmp(lk->variants[v].sig.text, sig->text) &&
        tune_plan_same_config(&lk->variants[v].cfg, &lk->variants[base].cfg))
      return true;
  return false;
}

/* A kernel without any timing also gets its default config compiled with the promises its
 * --args values keep (sig.c's rule: integer arguments equal to 1 and multiples of 16), next to
 * the generic copy: a library built before anything is tuned (BERT's, as bundled) runs its
 * calls with unit strides and aligned rows on vector loads and cp.async pipelines, and any
 * call that breaks a promise takes the generic copy, chosen per call by the dispatch. A second
 * tier promises multiples of 8 where the first promises 16 (or nothing, for a value that is a
 * multiple of 8 only): 8 f16/bf16 elements are one 16-byte vector, so a call whose row length
 * is 1000 (a multiple of 8, not of 16) still runs 128-bit row accesses instead of the generic
 * copy's scalar ones. The dispatch prefers %16 where a call keeps both. Each further layout
 * of the kernel (a later --args naming it: a GEMM's dX and dW forms, whose unit strides are
 * not the forward's) adds one copy with the strongest promises its values keep (=1, %16, else
 * %8), once per distinct signature: no %8 tier of its own, which would cost a compile that
 * its calls, all of whose sizes are multiples of 16, never use. Each config of a chain of
 * defaults (tune_plan_call_defaults) gets the same copies. */
static void add_default_specialized(const Run *R, LibKernel *lk, int base, const RunKernel *k) {
  TuneSig sig, sig8;
  const TuneProblem *p = &k->problem;
  tune_sig_compute(p->params, p->ival, p->nparams, sizeof sig.text, &sig);
  tune_sig_compute_mod(p->params, p->ival, p->nparams, sizeof sig8.text, 8, &sig8);
  if (sig.n > 0 && !add_promised_copy(R, lk, base, &sig)) return;
  bool has8 = false;
  for (int e = 0; e < sig8.n; e++) has8 |= sig8.e[e].mod == 8;
  if (has8 && !add_promised_copy(R, lk, base, &sig8)) return;
  for (int i = 0; i < k->nlayouts; i++)
    if (k->layouts[i].n > 0 && !has_copy(lk, base, &k->layouts[i]) &&
        !add_promised_copy(R, lk, base, &k->layouts[i]))
      return;
}

/* The generic copy of a default config that asks for min_blocks > 1 is compiled with
 * min_blocks = 1: the preset's cap (128 registers for 2 blocks of 8 warps) is made for the
 * promised copies' cp.async ring, and the generic copy, with no ring and scalar loads that need
 * registers for addresses, spills under it. The promised copies keep the preset's value. */
static void generic_min_blocks_one(const Run *R, const LibKernel *lk, LibVariant *v) {
  for (int i = 0; i < v->cfg.nbindings; i++)
    if (!strcmp(v->cfg.bindings[i].name, "min_blocks") && v->cfg.bindings[i].value > 1) {
      fprintf(stderr,
              "kiln %s: note: '%s': its generic copy is compiled with min_blocks = 1 "
              "(the default config's %lld caps the registers for the promised copies)\n",
              R->cmd, lk->name, (long long)v->cfg.bindings[i].value);
      v->cfg.bindings[i].value = 1;
    }
}

static void check_on_target_any_call(TuneCand *c, void *ctx) {
  const CheckCtx *x = ctx;
  tune_space_check_any_call(c, x->f->c, x->f->text, x->t, x->p, &x->R->tg.limits);
}

/* Appends config c as an untuned generic variant of kernel ki for the key of its --args, with
 * its promised copies when `specialize`; false when out of memory. */
static bool add_untuned(Run *R, int ki, const TuneCand *c, bool specialize) {
  LibKernel *lk = &R->libk[ki];
  const RunKernel *k = &R->ks[ki];
  LibVariant *nv = realloc(lk->variants, (size_t)(lk->nvariants + 1) * sizeof *nv);
  if (!nv) return false;
  lk->variants = nv;
  int gi = lk->nvariants; /* the generic moves when the promised copies grow the array */
  LibVariant *v = &nv[lk->nvariants++];
  memset(v, 0, sizeof *v);
  tune_plan_key_values(lk, k->problem.key, v->keyvals);
  v->cfg = c->cfg;
  v->untuned = true;
  if (specialize) add_default_specialized(R, lk, gi, k);
  generic_min_blocks_one(R, lk, &lk->variants[gi]);
  return true;
}

enum { CALL_DEFAULTS_MAX = 8 }; /* presets of a chain of defaults that a library compiles */

/* The default config as kernel ki's generic variant, for the key of its --args, compiled
 * without promises: the fallback of calls that break the tuned variants' promises, or the
 * whole library's choice when the cache has no timing. Then, with no timing at all, the chain
 * of defaults in front of it (tune_plan_call_defaults): presets for calls that meet their
 * conditions on the call, tried first in the order written. */
static int add_default_variant(Run *R, int ki) {
  LibKernel *lk = &R->libk[ki];
  const RunKernel *k = &R->ks[ki];
  CheckCtx ctx = {R, &R->files[k->file], &k->pinned->tune, &k->problem};
  TuneCand c;
  if (!tune_plan_default_config(ctx.t, R->tg.spec, check_on_target, &ctx, &c))
    return fprintf(stderr, "kiln %s: error: every config of '%s' is pruned for this device\n",
                   R->cmd, lk->name),
           1;
  bool untuned = lk->nvariants == 0, specialize = untuned && !R->o->no_specialize;
  TuneCand *chain = calloc(CALL_DEFAULTS_MAX, sizeof *chain);
  if (!chain) return 2;
  int nchain = untuned ? tune_plan_call_defaults(ctx.t, R->tg.spec, &c, check_on_target_any_call,
                                                 &ctx, chain, CALL_DEFAULTS_MAX)
                       : 0;
  bool ok = true;
  for (int i = 0; i < nchain && ok; i++) ok = add_untuned(R, ki, &chain[i], specialize);
  ok = ok && add_untuned(R, ki, &c, specialize);
  char text[256];
  tune_config_text(c.config, ctx.t->kernel, text, sizeof text);
  if (!untuned)
    fprintf(stderr,
            "kiln %s: note: '%s' has only specialized timings; calls that break their "
            "promises use its default config %s, unspecialized (untuned)\n",
            R->cmd, lk->name, text);
  else
    fprintf(stderr,
            "kiln %s: warning: no timing of '%s' for this device in the cache; the library "
            "uses its default config %s (untuned)\n",
            R->cmd, lk->name, text);
  for (int i = 0; i < nchain; i++) {
    char first[256];
    tune_config_text(chain[i].config, ctx.t->kernel, first, sizeof first);
    fprintf(stderr,
            "kiln %s: note: '%s': calls that meet its conditions on the call run %s first "
            "(a preset written before the default: chain of defaults %d of %d)\n",
            R->cmd, lk->name, first, i + 1, nchain);
  }
  free(chain);
  return ok ? 0 : 2;
}

/* The device whose timings kernel ki's variants come from: the probed one, else (cuda without
 * a GPU) the one the cache recorded. 0 with it in dev ("" for none), or an exit code. */
static int timing_device(const Run *R, int ki, const KilnCache *all, char *dev, size_t cap) {
  snprintf(dev, cap, "%s", R->tg.device_id);
  if (dev[0]) return 0;
  const LibKernel *lk = &R->libk[ki];
  char other[256];
  int found = tune_plan_recorded_gpu(all, lk->name, R->rep.kernels[ki].source_hash, R->o->tuned_on,
                                     R->tg.index_bits, dev, cap, other, sizeof other);
  if (found < 0)
    return fprintf(stderr,
                   "kiln %s: error: the cache has timings of '%s' from several GPUs "
                   "('%s', '%s'); pick one with --tuned-on TEXT\n",
                   R->cmd, lk->name, dev, other),
           1;
  if (found == 0)
    fprintf(stderr, "kiln %s: note: '%s' as tuned on %s\n", R->cmd, lk->name, dev);
  else
    dev[0] = '\0';
  return 0;
}

/* The variants of kernel ki: the cache's winners, a generic copy of each specialized winner
 * whose buckets have no generic one, and the default config when nothing was tuned (so that
 * every call has a variant whose promises it keeps). */
static int lib_variants(Run *R, int ki, const KilnCache *all) {
  LibKernel *lk = &R->libk[ki];
  char dev[256];
  int rc = timing_device(R, ki, all, dev, sizeof dev);
  if (rc) return rc;
  if (dev[0]) {
    TunePlanQuery q = {&R->ks[ki].pinned->tune,      &R->o->pins, R->rep.kernels[ki].source_hash,
                       R->rep.kernels[ki].tune_hash, dev,         R->o->no_specialize};
    TunePlanNotes notes;
    rc = tune_plan_lib_winners(&q, all, lk, &notes) ? 2 : 0;
    report_notes(R, lk, all, &notes);
    tune_plan_notes_free(&notes);
    if (rc) return rc;
  }
  int copies = tune_plan_generic_copies(lk);
  if (copies < 0) return 2;
  if (copies > 0)
    fprintf(stderr,
            "kiln %s: note: '%s': calls that break a tuned variant's promises run the "
            "nearest tuned config that fits them, compiled without promises (%d such "
            "cop%s)\n",
            R->cmd, lk->name, copies, copies == 1 ? "y" : "ies");
  switch (tune_plan_fallback(lk, R->o->require_tuned)) {
  case TUNE_PLAN_FALLBACK_NONE: return 0;
  case TUNE_PLAN_FALLBACK_REFUSED:
    return fprintf(stderr,
                   "kiln %s: error: no correct timing of '%s' for this device in the "
                   "cache\n",
                   R->cmd, lk->name),
           1;
  case TUNE_PLAN_FALLBACK_DEFAULT: break;
  }
  return add_default_variant(R, ki);
}

/* The library of every kernel, from the records read at start and those this run made. */
static int emit_library(Run *R) {
  KilnCache all = {0};
  for (size_t i = 0; i < R->cache.count; i++) kiln_cache_put(&all, &R->cache.records[i]);
  for (size_t i = 0; i < R->fresh.count; i++) kiln_cache_put(&all, &R->fresh.records[i]);
  int rc = kiln_libgen_check_grids(R->libk, R->nlibk, stderr);
  for (int ki = 0; ki < R->nlibk; ki++) {
    LibKernel *lk = &R->libk[ki];
    snprintf(lk->source_hash, sizeof lk->source_hash, "%s", R->rep.kernels[ki].source_hash);
    snprintf(lk->tune_hash, sizeof lk->tune_hash, "%s", R->rep.kernels[ki].tune_hash);
    lk->pins = &R->o->pins;
  }
  for (int ki = 0; ki < R->nlibk && rc == 0; ki++) rc = lib_variants(R, ki, &all);
  LibGpuArchs gpu = tune_plan_lib_archs(&R->o->gpu);
  bool cuda = !strncmp(R->tg.spec, "cuda", 4);
  if (rc == 0)
    rc = kiln_libgen_emit(R->o->lib_dir, tune_flow_lib_name(R->o), R->tg.target, R->tg.cpu,
                          R->tg.index_bits, cuda ? &gpu : NULL, R->libk, R->nlibk, stderr);
  kiln_cache_free(&all);
  return rc;
}

/* ---------------------------------------------------------------- tune */

/* Times one kernel; its records go into the cache as soon as it is done, so that a killed run
 * loses at most the kernel it was tuning. */
static int time_kernel(Run *R, int ki) {
  TuneJob j = job_of(R, ki);
  size_t before = R->fresh.count;
  if (tune_kernel(&j) != 0) return 2;
  KilnCache done = {.records = R->fresh.records + before, .count = R->fresh.count - before};
  int rc = R->o->cache && done.count ? kiln_cache_merge_save(R->o->cache, &done, stderr) : 0;
  return rc ? (rc > 0 ? 1 : 2) : 0;
}

static int print_report(Run *R) {
  if (R->o->json) {
    char *text = tune_report_json(&R->rep);
    if (!text) return 2;
    puts(text);
    free(text);
  } else {
    tune_report_table(&R->rep, stdout);
  }
  return R->o->svg && tune_report_svg(&R->rep, R->o->svg, stderr) ? 2 : 0;
}

static int flow_tune(Run *R) {
  int rc = read_cl_specs(R);
  if (rc == 0) rc = probe_target(R);
  if (rc == 0) rc = load_cache(R, true);
  if (rc == 0) rc = open_sources(R);
  if (rc == 0) rc = make_tmpdir(R);
  if (rc == 0) rc = check_pins(R);
  if (rc == 0) rc = each_kernel(R, !R->o->no_specialize, time_kernel);
  if (rc == 0) rc = print_report(R);
  if (rc == 0 && R->o->lib_dir) rc = emit_library(R);
  return rc;
}

/* ---------------------------------------------------------------- lib */

/* A library's --args give its default grid rule and key, and the promises of an untuned
 * kernel's specialized default copy (add_default_specialized): a tuned variant's promises come
 * from its record, and the fallback is always generic (so no specialization here). */
static int hash_kernel(Run *R, int ki) {
  const SourceFile *f = &R->files[R->ks[ki].file];
  tune_kernel_hash(f->text, f->len, R->ks[ki].pinned->tune.kernel, R->rep.kernels[ki].source_hash);
  return 0;
}

/* A library for GPUs is built anywhere: no device is opened, the cache says which GPU. */
static int lib_target(Run *R) {
  if (strncmp(R->tg.spec, "cuda", 4)) return probe_target(R);
  tune_plan_offline_target(&R->tg, NULL);
  return 0;
}

static int flow_lib(Run *R) {
  int rc = read_cl_specs(R);
  if (rc == 0) rc = lib_target(R);
  if (rc == 0) rc = load_cache(R, false);
  if (rc == 0) rc = open_sources(R);
  if (rc == 0) rc = check_pins(R);
  if (rc == 0) rc = each_kernel(R, false, hash_kernel);
  if (rc == 0) rc = emit_library(R);
  return rc;
}

/* ---------------------------------------------------------------- bundle */

static int bundle_kernel(Run *R, int ki) {
  TuneJob j = job_of(R, ki);
  return tune_bundle_kernel(&R->bundle, &j, R->o->mode_given && !R->o->max_mode) ? 2 : 0;
}

/* Compiles every candidate of both modes; the target comes from --device/--arch and no device
 * is opened here. The cache is not read: the runner writes its own. */
static int flow_bundle(Run *R) {
  int rc = read_cl_specs(R);
  if (rc == 0) {
    tune_plan_offline_target(&R->tg, &R->o->gpu);
    rc = tune_bundle_begin(&R->bundle, R->o->bundle_dir, R->tg.target, R->tg.cpu, R->tg.index_bits,
                           stderr)
             ? 2
             : 0;
  }
  if (rc == 0) rc = open_sources(R);
  if (rc == 0) rc = make_tmpdir(R);
  if (rc == 0) rc = check_pins(R);
  if (rc == 0) rc = each_kernel(R, !R->o->no_specialize, bundle_kernel);
  if (rc == 0) rc = tune_bundle_end(&R->bundle, true, stderr);
  return rc;
}

/* ---------------------------------------------------------------- entry */

static void run_free(Run *R) {
  if (R->bundle.mf) tune_bundle_end(&R->bundle, false, stderr);
  if (R->tmpdir[0]) {
    nftw(R->tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    kiln_cleanup_unregister(R->tmpdir_cleanup);
  }
  if (R->tmpdir_set) {
    if (R->old_tmpdir)
      setenv("TMPDIR", R->old_tmpdir, 1);
    else
      unsetenv("TMPDIR");
  }
  free(R->old_tmpdir);
  for (int i = 0; i < R->rep.nkernels; i++) {
    tune_cands_free(R->rep.kernels[i].space, R->rep.kernels[i].nspace);
    tune_cands_free(R->rep.kernels[i].cands, R->rep.kernels[i].ncands);
  }
  free(R->rep.kernels);
  for (int i = 0; i < R->nks; i++) {
    if (R->ks[i].has_problem) tune_problem_free(&R->ks[i].problem);
    free(R->ks[i].layouts);
    tune_pinned_free(R->ks[i].pinned);
  }
  free(R->ks);
  for (int i = 0; i < R->nlibk; i++) free(R->libk[i].variants);
  free(R->libk);
  for (int i = 0; i < R->nopen; i++) close_source(&R->files[i]);
  free(R->files);
  kiln_cache_free(&R->cache);
  kiln_cache_free(&R->fresh);
}

int tune_flow_run(TuneOpts *o) {
  Run *R = calloc(1, sizeof *R);
  if (!R) return 2;
  R->o = o;
  R->cmd = tune_flow_command(o->flow);
  R->rep.mode = o->max_mode ? "max-autotune" : "default";
  double timeout =
      o->timeout > 0 ? o->timeout : tune_default_timeout(o->device ? o->device : "cpu");
  R->ro = (TuneRunOpts){o->jobs,
                        o->budget > 0 ? tune_now() + o->budget : 0,
                        timeout,
                        o->reps,
                        isatty(STDERR_FILENO) == 1,
                        stderr,
                        o->retry_poisoned};
  int rc = 2;
  switch (o->flow) {
  case TUNE_FLOW_TUNE: rc = flow_tune(R); break;
  case TUNE_FLOW_LIB: rc = flow_lib(R); break;
  case TUNE_FLOW_BUNDLE: rc = flow_bundle(R); break;
  }
  run_free(R);
  free(R);
  return rc;
}
