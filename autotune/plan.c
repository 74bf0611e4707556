/* plan.c — the tuner's decisions that read tune blocks and caches (plan.h), free of I/O.
 *
 * The library's choice of variants is the biggest: the cache may hold records of many kernels,
 * devices, compiler versions, tune block versions, -D values and calls. A library takes, for one
 * kernel, the OK records of its text, its tune block as written, its device and this compiler;
 * groups them by record key (the key buckets, then the specialization signature); drops those
 * whose config the block no longer lists (it may not even build) and those of another -D value;
 * and picks each group's winner with the tuner's own rule (plan_pick.c), so that a library
 * ships what `kiln tune` reported. What it drops is returned as notes, for the flow to say. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

int tune_plan_check_kernel(const KilnTune *t, char *err, size_t cap) {
  size_t len = strlen(t->kernel_name);
  if (len > TUNE_MAX_NAME) {
    snprintf(err, cap,
             "kernel name '%.20s...' has %zu characters; the tuner's records hold at "
             "most %d (TUNE_MAX_NAME): shorten the name",
             t->kernel_name, len, TUNE_MAX_NAME);
    return -1;
  }
  size_t n = kiln_tune_config_count(t);
  if (n > TUNE_MAX_SPACE) {
    snprintf(err, cap,
             "'%s': the tune block has %zu configs, more than the %d one run may "
             "check (TUNE_MAX_SPACE): shorten its value lists, or hold parameters "
             "with -D NAME=VALUE",
             t->kernel_name, n, TUNE_MAX_SPACE);
    return -1;
  }
  return 0;
}

static const TuneHarness *harness_named(const TuneHarness *hs, int n, const char *kernel) {
  for (int i = 0; i < n; i++)
    if (!strcmp(hs[i].kernel, kernel)) return &hs[i];
  return NULL;
}

const TuneHarness *tune_plan_pick_harness(const TuneHarness *cl, int ncl, const TuneHarness *file,
                                          int nfile, const char *kernel) {
  const TuneHarness *h = harness_named(cl, ncl, kernel);
  if (!h) h = harness_named(cl, ncl, "");
  if (!h) h = harness_named(file, nfile, kernel);
  if (!h) h = harness_named(file, nfile, "");
  return h;
}

/* The specs after `first` in its own list (the command line's or the file's) that name the
 * same kernel. */
int tune_plan_more_layouts(const TuneHarness *cl, int ncl, const TuneHarness *file, int nfile,
                           const TuneHarness *first, const TuneHarness **out, int cap) {
  if (!first || !first->kernel[0]) return 0; /* a generic spec serves any kernel: no layouts */
  const TuneHarness *list = file;
  int n = nfile, i0 = -1;
  for (int i = 0; i < ncl && i0 < 0; i++)
    if (&cl[i] == first) list = cl, n = ncl, i0 = i;
  for (int i = 0; i < nfile && i0 < 0; i++)
    if (&file[i] == first) i0 = i;
  int found = 0;
  for (int i = i0 + 1; i0 >= 0 && i < n && found < cap; i++)
    if (!strcmp(list[i].kernel, first->kernel)) out[found++] = &list[i];
  return found;
}

void tune_plan_offline_target(TuneTarget *t, const LibGpuArchs *gpu) {
  if (!strncmp(t->spec, "cuda", 4)) {
    t->target = gpu && gpu->narchs ? gpu->archs[0] : KILN_TARGET_SM90;
    t->limits = (TuneDeviceLimits){1024, 256 * 1024};
  } else {
    t->target = !strcmp(t->spec, "emu") ? KILN_TARGET_EMU : KILN_TARGET_CPU;
    t->limits = (TuneDeviceLimits){1024, t->target == KILN_TARGET_EMU ? 256 * 1024 : 8u << 20};
  }
}

LibGpuArchs tune_plan_lib_archs(const LibGpuArchs *gpu) {
  if (gpu->narchs) return *gpu;
  return (LibGpuArchs){{KILN_TARGET_SM80, KILN_TARGET_SM90}, 2, gpu->ptx_only};
}

int tune_plan_config_order(const KilnTune *t, const char *config) {
  size_t n = kiln_tune_config_count(t);
  for (size_t i = 0; i < n && i < TUNE_MAX_SPACE; i++) {
    KilnTuneConfig cfg;
    char s[256];
    if (!kiln_tune_config_get(t, i, &cfg)) break;
    tune_config_string(&cfg, s, sizeof s);
    if (!strcmp(s, config)) return (int)i;
  }
  return (int)(n < TUNE_MAX_SPACE ? n : TUNE_MAX_SPACE);
}

bool tune_plan_parse_config(const KilnTune *t, const char *s, KilnTuneConfig *cfg) {
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

void tune_plan_key_values(const LibKernel *lk, const char *record_key, int64_t *vals) {
  for (int k = 0; k < lk->nkeys; k++) vals[k] = tune_key_value(record_key, lk->keys[k]);
}

void tune_plan_notes_free(TunePlanNotes *n) {
  free(n->skips);
  memset(n, 0, sizeof *n);
}

static int note_skip(TunePlanNotes *notes, TunePlanSkipWhy why, size_t record) {
  TunePlanSkip *s = realloc(notes->skips, (size_t)(notes->nskips + 1) * sizeof *s);
  if (!s) return -1;
  notes->skips = s;
  s[notes->nskips++] = (TunePlanSkip){why, record};
  return 0;
}

/* A record of this kernel text and device that a library may consider at all (its compiler
 * and tune block are checked by the caller, which notes the others). */
static bool record_matches(const TunePlanQuery *q, const char *kernel, const KilnCacheRecord *r) {
  return r->status == KILN_CACHE_OK && !strcmp(r->kernel, kernel) &&
         !strcmp(r->source_hash, q->source_hash) && !strcmp(r->device, q->device) &&
         !(q->without_sig && *tune_sig_of_key(r->key));
}

typedef enum RecordUse { RECORD_CAND, RECORD_OTHER_PIN, RECORD_UNLISTED } RecordUse;

/* A record as a candidate of its bucket (x), unless it is another -D value's or names a config
 * the block no longer lists. */
static RecordUse record_cand(const TunePlanQuery *q, const KilnCacheRecord *r, TuneCand *x) {
  memset(x, 0, sizeof *x);
  if (tune_plan_parse_config(q->tune, r->config, &x->cfg) && !tune_pins_match(q->pins, &x->cfg))
    return RECORD_OTHER_PIN;
  if (!tune_config_listed(q->tune, r->config, &x->cfg)) return RECORD_UNLISTED;
  x->state = ST_OK;
  x->median_ms = r->median_ms;
  x->p25_ms = r->p25_ms;
  x->p75_ms = r->p75_ms;
  x->order = tune_plan_config_order(q->tune, r->config);
  x->resources = tune_plan_resources(&x->cfg);
  return RECORD_CAND;
}

static int add_variant(LibKernel *lk, const char *key, const TuneSig *sig, const TuneCand *w) {
  LibVariant *nv = realloc(lk->variants, (size_t)(lk->nvariants + 1) * sizeof *nv);
  if (!nv) return -1;
  lk->variants = nv;
  LibVariant *v = &nv[lk->nvariants++];
  memset(v, 0, sizeof *v);
  tune_plan_key_values(lk, key, v->keyvals);
  v->sig = *sig;
  v->cfg = w->cfg;
  v->median_ms = w->median_ms;
  v->spread_ms = w->p75_ms - w->p25_ms;
  return 0;
}

/* The winner among the records rec[0..nrec) of one record key, appended to lk. */
static int bucket_winner(const TunePlanQuery *q, const KilnCache *cache, const size_t *rec,
                         int nrec, LibKernel *lk, TunePlanNotes *notes) {
  TuneCand *c = calloc((size_t)nrec, sizeof *c);
  if (!c) return -1;
  int n = 0, rc = 0;
  for (int i = 0; i < nrec && rc == 0; i++) {
    const KilnCacheRecord *r = &cache->records[rec[i]];
    RecordUse use = record_cand(q, r, &c[n]);
    if (use == RECORD_CAND)
      n++;
    else if (use == RECORD_UNLISTED)
      rc = note_skip(notes, TUNE_PLAN_SKIP_UNLISTED, rec[i]);
  }
  TuneSig sig;
  const char *key = cache->records[rec[0]].key;
  if (rc == 0 && !tune_sig_parse(tune_sig_of_key(key), lk->params, lk->nparams, &sig)) {
    rc = note_skip(notes, TUNE_PLAN_SKIP_BAD_SIG, rec[0]);
    n = 0;
  }
  int w = rc == 0 ? tune_plan_pick_winner(c, n) : -1;
  if (w >= 0) rc = add_variant(lk, key, &sig, &c[w]);
  free(c);
  return rc;
}

/* A usable record of the kernel: its key and its place in the cache. */
typedef struct KeyedRec {
  const char *key;
  size_t idx;
} KeyedRec;

static int by_key_then_place(const void *a, const void *b) {
  const KeyedRec *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* A run of one key in the sorted records: [start, start + len); first is its earliest place. */
typedef struct KeyRun {
  size_t start, len, first;
} KeyRun;

static int by_first_place(const void *a, const void *b) {
  const KeyRun *x = a, *y = b;
  return (x->first > y->first) - (x->first < y->first);
}

/* The kernel's usable records grouped by key: sorted by (key, place), cut into runs, the runs
 * in the order their keys first appear (so the variants keep the cache's order). O(n log n)
 * where a scan per key was O(keys x n). Returns the number of runs, or -1 (memory). */
static long key_runs(const KeyedRec *sorted, size_t n, KeyRun **out) {
  KeyRun *runs = malloc((n ? n : 1) * sizeof *runs);
  if (!runs) return -1;
  size_t nruns = 0;
  for (size_t i = 0; i < n; i++)
    if (i == 0 || strcmp(sorted[i].key, sorted[i - 1].key))
      runs[nruns++] = (KeyRun){i, 1, sorted[i].idx};
    else
      runs[nruns - 1].len++;
  qsort(runs, nruns, sizeof *runs, by_first_place);
  *out = runs;
  return (long)nruns;
}

/* The records of lk's kernel timed with this compiler and tune block, with a note of those
 * timed with another compiler, another block (stale) or none (format 1). */
static size_t usable_records(const TunePlanQuery *q, const KilnCache *cache, const LibKernel *lk,
                             KeyedRec *out, TunePlanNotes *notes) {
  size_t n = 0;
  for (size_t i = 0; i < cache->count; i++) {
    const KilnCacheRecord *r = &cache->records[i];
    if (!record_matches(q, lk->name, r)) continue;
    if (strcmp(r->kiln_version, kiln_tune_compiler_id())) { /* another build timed other code */
      notes->other_compiler++;
      continue;
    }
    if (strcmp(r->tune_hash, q->tune_hash)) { /* timed with another block: never used */
      if (*r->tune_hash)
        notes->stale++;
      else
        notes->unhashed++;
      continue;
    }
    out[n++] = (KeyedRec){r->key, i};
  }
  return n;
}

int tune_plan_lib_winners(const TunePlanQuery *q, const KilnCache *cache, LibKernel *lk,
                          TunePlanNotes *notes) {
  memset(notes, 0, sizeof *notes);
  size_t room = cache->count ? cache->count : 1;
  KeyedRec *recs = malloc(room * sizeof *recs);
  size_t *rec = malloc(room * sizeof *rec);
  KeyRun *runs = NULL;
  long nruns = -1;
  if (recs && rec) {
    size_t n = usable_records(q, cache, lk, recs, notes);
    qsort(recs, n, sizeof *recs, by_key_then_place);
    nruns = key_runs(recs, n, &runs);
  }
  int rc = nruns < 0 ? -1 : 0;
  for (long g = 0; rc == 0 && g < nruns; g++) {
    for (size_t k = 0; k < runs[g].len; k++) rec[k] = recs[runs[g].start + k].idx;
    rc = bucket_winner(q, cache, rec, (int)runs[g].len, lk, notes);
  }
  free(runs);
  free(rec);
  free(recs);
  return rc;
}

int tune_plan_recorded_gpu(const KilnCache *cache, const char *kernel, const char *source_hash,
                           const char *tuned_on, int index_bits, char *dev, size_t cap, char *other,
                           size_t ocap) {
  dev[0] = '\0';
  if (ocap) other[0] = '\0';
  for (size_t i = 0; i < cache->count; i++) {
    const KilnCacheRecord *r = &cache->records[i];
    if (r->status != KILN_CACHE_OK || strcmp(r->kernel, kernel) ||
        strcmp(r->source_hash, source_hash) || strcmp(r->kiln_version, kiln_tune_compiler_id()) ||
        strncmp(r->device, "cuda:", 5) || (tuned_on && !strstr(r->device, tuned_on)) ||
        !strcmp(r->device, dev) ||
        (strstr(r->device, TUNE_INDEX_BITS_64_ID) != NULL) != (index_bits == 64))
      continue;
    if (dev[0]) {
      snprintf(other, ocap, "%s", r->device);
      return -1;
    }
    snprintf(dev, cap, "%s", r->device);
  }
  return dev[0] ? 0 : 1;
}

static bool same_keys(const LibKernel *lk, const LibVariant *a, const LibVariant *b) {
  for (int j = 0; j < lk->nkeys; j++)
    if (a->keyvals[j] != b->keyvals[j]) return false;
  return true;
}

bool tune_plan_same_config(const KilnTuneConfig *a, const KilnTuneConfig *b) {
  if (a->num_warps != b->num_warps || a->num_stages != b->num_stages ||
      a->nbindings != b->nbindings)
    return false;
  for (int i = 0; i < a->nbindings; i++)
    if (strcmp(a->bindings[i].name, b->bindings[i].name) ||
        a->bindings[i].value != b->bindings[i].value)
      return false;
  return true;
}

/* Whether variant v needs a generic copy: specialized, and no generic variant of its buckets
 * (a generic winner there, or a copy of an earlier winner of the same config). */
static bool needs_generic_copy(const LibKernel *lk, int v) {
  const LibVariant *x = &lk->variants[v];
  if (x->sig.n == 0 || x->untuned) return false;
  for (int u = 0; u < lk->nvariants; u++) {
    const LibVariant *g = &lk->variants[u];
    if (g->sig.n == 0 && same_keys(lk, g, x) &&
        (!g->generic_copy || tune_plan_same_config(&g->cfg, &x->cfg)))
      return false;
  }
  return true;
}

int tune_plan_generic_copies(LibKernel *lk) {
  int n = lk->nvariants, added = 0;
  for (int v = 0; v < n; v++) {
    if (!needs_generic_copy(lk, v)) continue;
    LibVariant *nv = realloc(lk->variants, (size_t)(lk->nvariants + 1) * sizeof *nv);
    if (!nv) return -1;
    lk->variants = nv;
    LibVariant *copy = &nv[lk->nvariants++];
    *copy = nv[v];
    memset(&copy->sig, 0, sizeof copy->sig);
    copy->generic_copy = true;
    added++;
  }
  return added;
}

TunePlanFallback tune_plan_fallback(const LibKernel *lk, bool require_tuned) {
  for (int v = 0; v < lk->nvariants; v++)
    if (lk->variants[v].sig.n == 0) return TUNE_PLAN_FALLBACK_NONE;
  if (lk->nvariants == 0 && require_tuned) return TUNE_PLAN_FALLBACK_REFUSED;
  return TUNE_PLAN_FALLBACK_DEFAULT;
}

bool tune_preset_on_device(const KilnTunePreset *pr, const char *spec) {
  if (!pr->device) return true;
  size_t n = strlen(pr->device);
  return !strncmp(spec, pr->device, n) && (spec[n] == '\0' || spec[n] == ':');
}

bool tune_plan_default_config(const KilnTune *t, const char *spec, TunePlanCheck *check, void *ctx,
                              TuneCand *out) {
  for (int i = 0; i < t->npresets; i++) {
    if (!tune_preset_on_device(&t->presets[i], spec)) continue;
    memset(out, 0, sizeof *out);
    if (!kiln_tune_preset_get(t, t->presets[i].name, &out->cfg)) continue;
    if (!kiln_tune_preset_applies(t, i, &out->cfg)) continue; /* `where T != f32`, T pinned f32 */
    check(out, ctx);
    if (out->state != ST_PRUNED) return true;
  }
  size_t n = kiln_tune_config_count(t);
  for (size_t i = 0; i < n && i < TUNE_MAX_SPACE; i++) {
    memset(out, 0, sizeof *out);
    if (!kiln_tune_config_get(t, i, &out->cfg)) break;
    check(out, ctx);
    if (out->state != ST_PRUNED) return true;
  }
  return false;
}

int tune_plan_call_defaults(const KilnTune *t, const char *spec, const TuneCand *def,
                            TunePlanCheck *check_any_call, void *ctx, TuneCand *out, int cap) {
  int n = 0;
  for (int i = 0; i < t->npresets && n < cap; i++) {
    if (!tune_preset_on_device(&t->presets[i], spec)) continue;
    TuneCand *c = &out[n];
    memset(c, 0, sizeof *c);
    if (!kiln_tune_preset_get(t, t->presets[i].name, &c->cfg)) continue;
    if (!kiln_tune_preset_applies(t, i, &c->cfg)) continue;
    if (tune_plan_same_config(&c->cfg, &def->cfg))
      break; /* the default's own preset: the chain ends */
    check_any_call(c, ctx);
    if (c->state == ST_PRUNED) continue;
    bool seen = false;
    for (int j = 0; j < n; j++) seen |= tune_plan_same_config(&out[j].cfg, &c->cfg);
    if (!seen) n++;
  }
  return n;
}
