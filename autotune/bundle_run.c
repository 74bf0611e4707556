/* bundle_run.c — kiln-tune-runner: the runner stage of `kiln tune` for a bundle made elsewhere
 * (bundle.c), on a machine where only the runtime builds (KILN_RUNTIME_ONLY: no LLVM/MLIR, no
 * frontend, no cJSON).
 *
 * It is the tuner's own runner (run.c: a child per timing, warm-up, repetitions, successive
 * halving, interleaved finals, medians, an L2 flush on GPUs, crashes/hangs/failures recorded
 * and skipped, every result checked against the first correct one), fed from the manifest
 * instead of the compiler: inputs are rebuilt with problem.c from the same seeds, candidates
 * come with their grid and image. The winner is picked by tune_plan_pick_winner (plan.h), the
 * records go to a cache `kiln lib` reads (cache_records.c), and a JSON summary says how long
 * tuning took, who won and how fast. */
#include "tune_core.h"

#include <math.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const runner_usage =
    "usage: kiln-tune-runner BUNDLE... --device cpu|emu|cuda[:N] [--mode default|max-autotune]\n"
    "                        [--cache PATH] [--json PATH] [--kernel NAME] [--reps N]\n"
    "                        [--timeout SECONDS] [--budget SECONDS] [--tuned-libs DIR]\n"
    "(--timeout: the limit of one run of a kernel; default cuda 10, cpu 30, emu 300)\n"
    "\n"
    "Times the candidates of bundles made by `kiln tune --emit-bundle` (docs/tuning.md) on a\n"
    "device, one after the other under one --budget, writes all their records to a new cache\n"
    "file (an existing PATH is refused: this program cannot merge caches) and a summary as\n"
    "JSON. --tuned-libs DIR adds the winners to the kernel libraries `kiln lib` made in DIR\n"
    "for this device (NAME.plan beside NAME.c): NAME.tuned.h, which NAME.c compiled with\n"
    "-DKILN_GEN_TUNED includes, with the winners' images from the bundles.\n";

typedef struct BundleKernel {
  char name[64], hash[20], tune_hash[20];
  TuneHarness h; /* only the seed is used */
  TuneProblem p;
  TuneCand *cands;
  int ncands;
} BundleKernel;

typedef struct Bundle {
  char target[16];
  char compiler[32]; /* the compiler that built the images; "" (an older bundle): this build */
  char cpu[32];      /* cpu/emu bundles: the CPU target of the objects (the device identity's) */
  int index_bits;    /* the variants' offsets: 32 (no line) or 64, part of the device identity */
  BundleKernel *k;
  int nk;
} Bundle;

/* param NAME ptr KIND ELEMS FILL A B HAS_RANGE | param NAME val KIND IVAL FVAL */
static int parse_param(BundleKernel *k, const char *line) {
  TuneProblem *p = &k->p;
  if (p->nparams == TUNE_MAX_PARAMS) return -1;
  int i = p->nparams;
  TuneParam *q = &p->params[i];
  char how[8], kind[8], fill[8];
  long long iv = 0;
  unsigned long long elems = 0;
  double a = 0, b = 0;
  int range = 0;
  if (sscanf(line, "param %63s %7s %7s", q->name, how, kind) != 3 ||
      !kiln_scalar_from_name(kind, &q->scalar))
    return -1;
  q->is_ptr = !strcmp(how, "ptr");
  if (!q->is_ptr) {
    if (sscanf(line, "param %*s val %*s %lld %lf", &iv, &p->fval[i]) != 2) return -1;
    p->ival[i] = iv;
    p->nparams++;
    return 0;
  }
  if (sscanf(line, "param %*s ptr %*s %llu %7s %lf %lf %d", &elems, fill, &a, &b, &range) != 5 ||
      elems > (1ull << 34))
    return -1;
  /* the host's bound before the malloc; the device's once it is opened (device_fits) */
  TuneArgBudget budget;
  char err[256];
  if (tune_arg_budget(NULL, &budget, err, sizeof err) ||
      tune_arg_buffer_fits(&budget, q->name, (int64_t)elems, q->scalar,
                           tune_problem_buffer_bytes(p), &p->bytes[i], err, sizeof err)) {
    fprintf(stderr, "kiln-tune-runner: error: kernel '%s': %s\n", k->name, err);
    return -1;
  }
  TuneArgSpec spec = {.fill = !strcmp(fill, "const")  ? FILL_CONST
                              : !strcmp(fill, "iota") ? FILL_IOTA
                                                      : FILL_RAND,
                      .fill_a = a,
                      .fill_b = b,
                      .has_fill_range = range != 0};
  p->elems[i] = (size_t)elems;
  p->init[i] = malloc(p->bytes[i]);
  if (!p->init[i]) return -1;
  p->nparams++;
  tune_problem_fill(p, i, &spec, k->h.seed);
  return 0;
}

/* cand ORDER MODES WARPS G0 G1 G2 RESOURCES CONFIG FILE: kept when MODES lists `mode`. */
static int parse_cand(BundleKernel *k, const char *line, char mode, const char *dir) {
  TuneCand c = {0};
  char modes[4], file[256];
  if (sscanf(line, "cand %d %3s %d %u %u %u %lf %255s %255s", &c.order, modes, &c.cfg.num_warps,
             &c.grid[0], &c.grid[1], &c.grid[2], &c.resources, c.config, file) != 9 ||
      c.cfg.num_warps < 1 || c.cfg.num_warps > 32)
    return -1;
  if (!strchr(modes, mode)) return 0;
  snprintf(c.obj_path, sizeof c.obj_path, "%s/%s", dir, file);
  c.state = ST_PENDING;
  TuneCand *nc = realloc(k->cands, (size_t)(k->ncands + 1) * sizeof *nc);
  if (!nc) return -1;
  k->cands = nc;
  nc[k->ncands++] = c;
  return 0;
}

static void bundle_free(Bundle *b) {
  for (int i = 0; i < b->nk; i++) {
    tune_problem_free(&b->k[i].p);
    tune_cands_free(b->k[i].cands, b->k[i].ncands);
  }
  free(b->k);
  memset(b, 0, sizeof *b);
}

static int parse_line(Bundle *b, const char *line, char mode, const char *dir, const char *only) {
  BundleKernel *k = b->nk ? &b->k[b->nk - 1] : NULL;
  unsigned long long seed;
  if (!strncmp(line, "kernel ", 7)) {
    BundleKernel *nk = realloc(b->k, (size_t)(b->nk + 1) * sizeof *nk);
    if (!nk) return -1;
    b->k = nk;
    k = &nk[b->nk++];
    memset(k, 0, sizeof *k);
    return sscanf(line, "kernel %63s", k->name) == 1 ? 0 : -1;
  }
  if (!strncmp(line, "target ", 7)) return sscanf(line, "target %15s", b->target) == 1 ? 0 : -1;
  if (!strncmp(line, "cpu ", 4)) return sscanf(line, "cpu %31s", b->cpu) == 1 ? 0 : -1;
  if (!strncmp(line, "compiler ", 9))
    return sscanf(line, "compiler %31s", b->compiler) == 1 ? 0 : -1;
  if (!strncmp(line, "index_bits ", 11))
    return sscanf(line, "index_bits %d", &b->index_bits) == 1 &&
                   (b->index_bits == 32 || b->index_bits == 64)
               ? 0
               : -1;
  if (!k) return -1;
  if (only && strcmp(k->name, only)) return 0;
  if (!strncmp(line, "hash ", 5)) return sscanf(line, "hash %19s", k->hash) == 1 ? 0 : -1;
  if (!strncmp(line, "tunehash ", 9))
    return sscanf(line, "tunehash %19s", k->tune_hash) == 1 ? 0 : -1;
  if (!strncmp(line, "key ", 4)) {
    snprintf(k->p.key, sizeof k->p.key, "%s", strcmp(line + 4, "-") ? line + 4 : "");
    return 0;
  }
  if (!strncmp(line, "seed ", 5)) {
    if (sscanf(line, "seed %llu", &seed) != 1) return -1;
    k->h.seed = seed;
    return 0;
  }
  if (!strncmp(line, "param ", 6)) return parse_param(k, line);
  if (!strncmp(line, "cand ", 5)) return parse_cand(k, line, mode, dir);
  return !strcmp(line, "end") ? 0 : -1;
}

/* What parse_line needs besides the bundle: the mode, the folder, the one kernel wanted. */
typedef struct ManifestRead {
  Bundle *b;
  char mode;
  const char *dir, *only;
} ManifestRead;

static int manifest_line(void *ctx, char *line) {
  ManifestRead *m = ctx;
  return parse_line(m->b, line, m->mode, m->dir, m->only);
}

/* Reads DIR/manifest.txt; the candidates of `mode` ('d' or 'm') only. 0, or -1 (reported). */
static int bundle_read(Bundle *b, const char *dir, char mode, const char *only) {
  char path[4200];
  snprintf(path, sizeof path, "%s/manifest.txt", dir);
  ManifestRead m = {b, mode, dir, only};
  return tune_read_versioned_lines(path, TUNE_MAX_MANIFEST_BYTES, "TUNE_MAX_MANIFEST_BYTES",
                                   "bundle manifest", "kiln-tune-bundle 3", manifest_line, &m, NULL,
                                   stderr);
}

/* ---------------------------------------------------------------- the run */

#define RUNNER_MAX_BUNDLES 256 /* a whole model's calls (kiln-bert tune --emit-bundle) */

typedef struct RunnerOpts {
  const char *bundles[RUNNER_MAX_BUNDLES];
  int nbundles;
  const char *device, *cache, *json, *kernel, *tuned_libs;
  bool max_mode;
  int reps;
  double timeout, budget;
  double deadline; /* tune_now() seconds at which --budget ends; 0: none */
} RunnerOpts;

static int state_count(const BundleKernel *k, TuneState s) {
  int n = 0;
  for (int i = 0; i < k->ncands; i++) n += k->cands[i].state == s;
  return n;
}

static void summary_kernel(FILE *f, const BundleKernel *k, int win, int timings, double secs) {
  fprintf(f, "    {\"kernel\": ");
  tune_json_string(f, k->name);
  fprintf(f, ", \"key\": ");
  tune_json_string(f, k->p.key);
  fprintf(f,
          ", \"candidates\": %d, \"ok\": %d, \"failed\": %d, \"crash\": %d, \"hang\": %d, "
          "\"mismatch\": %d, \"timings\": %d, \"tune_seconds\": ",
          k->ncands, state_count(k, ST_OK), state_count(k, ST_FAILED), state_count(k, ST_CRASH),
          state_count(k, ST_HANG), state_count(k, ST_MISMATCH), timings);
  tune_json_number(f, secs);
  int first = -1, slow = -1; /* the first config that ran (what an untuned library uses) */
  for (int i = 0; i < k->ncands; i++)
    if (k->cands[i].state == ST_OK) {
      if (first < 0) first = i;
      if (slow < 0 || k->cands[i].median_ms > k->cands[slow].median_ms) slow = i;
    }
  fprintf(f, ", \"winner\": ");
  if (win < 0) {
    fprintf(f, "null}");
    return;
  }
  const TuneCand *w = &k->cands[win];
  tune_json_string(f, w->config);
  double v[] = {w->median_ms,
                w->p25_ms,
                w->p75_ms,
                w->min_ms,
                k->cands[first].median_ms,
                k->cands[slow].median_ms};
  const char *names[] = {"winner_median_ms", "winner_p25_ms",      "winner_p75_ms",
                         "winner_min_ms",    "first_ok_median_ms", "slowest_ok_median_ms"};
  for (int i = 0; i < 6; i++) {
    fprintf(f, ", \"%s\": ", names[i]);
    tune_json_number(f, v[i]);
  }
  fprintf(f, ", \"first_ok_config\": ");
  tune_json_string(f, k->cands[first].config);
  fprintf(f, ", \"speedup_vs_first_ok\": ");
  tune_json_number(f, w->median_ms > 0 ? k->cands[first].median_ms / w->median_ms : 0);
  fputc('}', f);
}

/* Every kernel's buffers within the opened device's budget (the host's was checked as the
 * manifest was read). 0, or -1 (reported). */
static int device_fits(const Bundle *b, const TuneTarget *tg) {
  TuneArgBudget budget;
  char err[256], a[32];
  if (tune_arg_budget(tg, &budget, err, sizeof err))
    return fprintf(stderr, "kiln-tune-runner: error: %s\n", err), -1;
  for (int i = 0; i < b->nk; i++) {
    size_t need = tune_problem_buffer_bytes(&b->k[i].p);
    if (need > budget.bytes)
      return fprintf(stderr,
                     "kiln-tune-runner: error: kernel '%s': its buffers take %s, more "
                     "than %s\n",
                     b->k[i].name, kiln_bytes_text(need, a, sizeof a), budget.why),
             -1;
  }
  return 0;
}

/* Times bundle b into out and appends its kernels to the summary sum (*nrun kernels so far: the
 * first bundle writes the summary's head). */
/* What --tuned-libs needs of a run: every candidate timed, the device that timed them. */
typedef struct RunnerKept {
  TuneTunedCands cands;
  KilnRtDeviceKind kind;
  char device[256];
} RunnerKept;

static KilnRtDeviceKind device_kind(KilnTarget t) {
  return t == KILN_TARGET_CPU   ? KILN_RT_DEVICE_CPU
         : t == KILN_TARGET_EMU ? KILN_RT_DEVICE_EMU
                                : KILN_RT_DEVICE_CUDA;
}

static int run_bundle(const RunnerOpts *o, Bundle *b, FILE *sum, int *nrun, KilnCache *out,
                      RunnerKept *kept) {
  TuneTarget tg = {0};
  char err[256];
  snprintf(tg.spec, sizeof tg.spec, "%s", o->device);
  snprintf(tg.cpu, sizeof tg.cpu, "%s", b->cpu[0] ? b->cpu : "native");
  tg.index_bits = b->index_bits == 64 ? 64 : 32;
  if (tune_target_probe(&tg, err, sizeof err))
    return fprintf(stderr, "kiln-tune-runner: error: %s\n", err), 2;
  if (strcmp(b->target, kiln_target_name(tg.target)))
    return fprintf(stderr,
                   "kiln-tune-runner: error: the bundle is built for %s; the device '%s' "
                   "needs %s\n",
                   b->target, tg.device_id, kiln_target_name(tg.target)),
           1;
  if (device_fits(b, &tg)) return 1;
  double timeout = o->timeout > 0 ? o->timeout : tune_default_timeout(o->device);
  TuneRunOpts ro = {1, o->deadline, timeout, o->reps, isatty(STDERR_FILENO) == 1, stderr, false};
  if (*nrun == 0) {
    fprintf(sum,
            "{\"format\": \"kiln-tune-runner\", \"kiln_version\": \"%s\", \"mode\": \"%s\", "
            "\"device\": ",
            KILN_VERSION_STRING, o->max_mode ? "max-autotune" : "default");
    tune_json_string(sum, tg.device_id);
    fprintf(sum, ", \"kernels\": [\n");
  }
  for (int i = 0; i < b->nk; i++) {
    BundleKernel *k = &b->k[i];
    if (o->kernel && strcmp(k->name, o->kernel)) continue;
    double t0 = tune_now();
    int *idx = malloc((size_t)(k->ncands + 1) * sizeof *idx);
    if (!idx) return 2;
    for (int c = 0; c < k->ncands; c++) idx[c] = c;
    int timings = tune_run(&tg, k->name, &k->p, k->cands, idx, k->ncands, -1, &ro);
    free(idx);
    int win = tune_plan_pick_winner(k->cands, k->ncands);
    for (int c = 0; c < k->ncands; c++) {
      KilnCacheRecord r;
      if (tune_record_from_cand(&k->cands[c], k->name, k->hash, k->tune_hash, k->p.key,
                                tg.device_id,
                                b->compiler[0] ? b->compiler : kiln_tune_compiler_id(), &r) &&
          kiln_cache_put(out, &r))
        return 2;
      if (o->tuned_libs && tune_tuned_cands_add(&kept->cands, k->name, k->hash, k->tune_hash,
                                                k->p.key, tg.cpu, &k->cands[c]))
        return 2;
    }
    kept->kind = device_kind(tg.target);
    snprintf(kept->device, sizeof kept->device, "%s", tg.device_id);
    printf("%-16s %-3d candidates, %d ok, winner %s (%.4f ms median), %.1f s\n", k->name, k->ncands,
           state_count(k, ST_OK), win >= 0 ? k->cands[win].config : "none",
           win >= 0 ? k->cands[win].median_ms : 0.0, tune_now() - t0);
    fputs((*nrun)++ ? ",\n" : "", sum);
    summary_kernel(sum, k, win, timings, tune_now() - t0);
  }
  return 0;
}

/* A number of seconds: finite and positive. */
static bool seconds(const char *s, double *out) {
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end || !isfinite(v) || !(v > 0)) return false;
  *out = v;
  return true;
}

static int parse_args(int argc, char **argv, RunnerOpts *o) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return fputs(runner_usage, stdout), -1;
    if (a[0] != '-') {
      if (o->nbundles == RUNNER_MAX_BUNDLES)
        return fprintf(stderr, "kiln-tune-runner: more than %d bundles\n", RUNNER_MAX_BUNDLES), 64;
      o->bundles[o->nbundles++] = a;
      continue;
    }
    if (!v) return fprintf(stderr, "kiln-tune-runner: '%s' needs a value\n%s", a, runner_usage), 64;
    i++;
    char *end = NULL;
    if (!strcmp(a, "--device"))
      o->device = v;
    else if (!strcmp(a, "--cache"))
      o->cache = v;
    else if (!strcmp(a, "--json"))
      o->json = v;
    else if (!strcmp(a, "--kernel"))
      o->kernel = v;
    else if (!strcmp(a, "--tuned-libs"))
      o->tuned_libs = v;
    else if (!strcmp(a, "--mode") && (!strcmp(v, "default") || !strcmp(v, "max-autotune")))
      o->max_mode = !strcmp(v, "max-autotune");
    else if (!strcmp(a, "--reps") && (o->reps = (int)strtol(v, &end, 10)) >= 1 && o->reps <= 64 &&
             !*end)
      continue;
    /* seconds: finite and positive (NaN or inf would switch the time limits off) */
    else if (!strcmp(a, "--timeout") && seconds(v, &o->timeout))
      continue;
    else if (!strcmp(a, "--budget") && seconds(v, &o->budget))
      continue;
    else
      return fprintf(stderr, "kiln-tune-runner: bad option '%s %s'\n%s", a, v, runner_usage), 64;
  }
  if (!o->nbundles || !o->device)
    return fprintf(stderr, "kiln-tune-runner: a bundle and --device are required\n%s",
                   runner_usage),
           64;
  return 0;
}

int tune_bundle_run_command(int argc, char **argv) {
  RunnerOpts o = {.reps = 5}; /* timeout 0: the device's default */
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc < 0 ? 0 : rc;
  /* the records of a whole run go to one new file: a cache of earlier work there would be
   * replaced, and merging needs the JSON reader this program does without */
  if (o.cache && access(o.cache, F_OK) == 0)
    return fprintf(stderr,
                   "kiln-tune-runner: error: '%s' exists; give a new --cache path (merge "
                   "caches where kiln is built: kiln tune --cache reads and extends one)\n",
                   o.cache),
           2;
  /* a folder that cannot take the libraries' rows is refused before any timing */
  if (o.tuned_libs && access(o.tuned_libs, W_OK | X_OK) != 0)
    return fprintf(stderr, "kiln-tune-runner: error: --tuned-libs '%s': %s\n", o.tuned_libs,
                   strerror(errno)),
           2;
  double start = tune_now();
  if (o.budget > 0) o.deadline = start + o.budget;
  KilnCache out = {0};
  char *sbuf = NULL;
  size_t slen = 0;
  FILE *sum = open_memstream(&sbuf, &slen);
  int nrun = 0;
  RunnerKept kept = {0};
  rc = sum ? 0 : 2;
  for (int i = 0; rc == 0 && i < o.nbundles; i++) {
    if (o.deadline > 0 && tune_now() > o.deadline) {
      fprintf(stderr, "kiln-tune-runner: note: --budget spent; %d of %d bundles not run\n",
              o.nbundles - i, o.nbundles);
      break;
    }
    Bundle b = {0};
    rc = bundle_read(&b, o.bundles[i], o.max_mode ? 'm' : 'd', o.kernel) ? 1 : 0;
    if (rc == 0) rc = run_bundle(&o, &b, sum, &nrun, &out, &kept);
    bundle_free(&b);
  }
  if (sum && rc == 0) {
    if (nrun == 0)
      fprintf(sum, "{\"format\": \"kiln-tune-runner\", \"kiln_version\": \"%s\", \"kernels\": [",
              KILN_VERSION_STRING);
    fprintf(sum, "\n  ], \"bundles\": %d, \"tune_seconds\": ", o.nbundles);
    tune_json_number(sum, tune_now() - start);
    fprintf(sum, "}\n");
  }
  if (sum && fclose(sum) != 0 && rc == 0) rc = 2;
  if (rc == 0 && o.cache && tune_cache_write(o.cache, &out, stderr)) rc = 2;
  if (rc == 0 && o.json && kiln_file_write_atomic(o.json, sbuf, slen) != 0) {
    fprintf(stderr, "kiln-tune-runner: error: cannot write '%s': %s\n", o.json, strerror(errno));
    rc = 2;
  }
  /* after the cache and the summary: a library that cannot be written loses no timing */
  if (rc == 0 && o.tuned_libs && nrun)
    rc = tune_tuned_libs_write(o.tuned_libs, &out, &kept.cands, kept.kind, kept.device, stderr);
  tune_tuned_cands_free(&kept.cands);
  free(sbuf);
  kiln_cache_free(&out);
  return rc;
}
