/* tune.c — one kernel's tuning: space -> candidates -> cache lookups -> build -> run -> records.
 *
 * Candidates are the whole pruned space (max-autotune) or a small deterministic subset
 * (default: the block's presets, else up to four configs spread evenly over the kept ones).
 * A candidate with a record for this (kernel text, tune block, config, key bucket, device,
 * compiler) is not timed again; one that crashed or hung there is poisoned and never run again
 * for that key. Poison is per key and keeps its reason: a config may crash or hang only for some
 * sizes (an out-of-bounds tail, a loop bound), and the other keys must still time it. Failures
 * of the environment (build, link, load) are never recorded, so they poison nothing. A hang is
 * poisoned whatever --timeout a later run gives: a longer limit would spend that much more on
 * a config that loops forever, so a retry is asked for (--retry-poisoned), and a config that
 * hangs again is recorded again with the new limit. The record key carries the call's
 * specialization signature (sig.c): a variant compiled for "stride = 1" is a different program
 * from the generic one, so their timings never stand in for each other. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

static void record_identity(const TuneJob *j, const TuneCand *c, KilnCacheRecord *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->kernel, sizeof r->kernel, "%s", j->t->kernel_name);
  snprintf(r->source_hash, sizeof r->source_hash, "%s", j->rep->source_hash);
  snprintf(r->tune_hash, sizeof r->tune_hash, "%s", j->rep->tune_hash);
  snprintf(r->config, sizeof r->config, "%s", c->config);
  snprintf(r->key, sizeof r->key, "%s", j->p->record_key);
  snprintf(r->device, sizeof r->device, "%s", j->tg->device_id);
  snprintf(r->kiln_version, sizeof r->kiln_version, "%s", kiln_tune_compiler_id());
}

static void apply_cache(const TuneJob *j, TuneCand *c) {
  KilnCacheRecord id;
  record_identity(j, c, &id);
  const KilnCacheRecord *r = j->cache ? kiln_cache_find(j->cache, &id) : NULL;
  if (!r) return;
  bool poison = r->status == KILN_CACHE_CRASH || r->status == KILN_CACHE_HANG;
  if (poison && j->run->retry_poisoned) return; /* timed as if new; its record is replaced */
  if (poison) {
    c->state = ST_POISONED;
    c->from_cache = true;
    snprintf(c->detail, sizeof c->detail, "poisoned (%s): %.200s",
             kiln_cache_status_name(r->status), r->detail);
    return;
  }
  c->from_cache = true;
  static const TuneState map[KILN_CACHE_STATUS_COUNT] = {ST_OK, ST_CRASH, ST_HANG, ST_MISMATCH,
                                                         ST_FAILED};
  c->state = map[r->status];
  snprintf(c->detail, sizeof c->detail, "%s", r->detail);
  c->median_ms = r->median_ms;
  c->p25_ms = r->p25_ms;
  c->p75_ms = r->p75_ms;
  c->min_ms = r->min_ms;
  c->reps = r->reps;
}

/* Whether preset i is a candidate of this run: on its device and, with a `where`, for the
 * pinned values (`where T != f32` leaves an f32 run). A preset that cannot be built is one, so
 * that the report says so. */
static bool preset_is_candidate(const KilnTune *t, int i, const char *spec) {
  if (!tune_preset_on_device(&t->presets[i], spec)) return false;
  KilnTuneConfig cfg;
  return !kiln_tune_preset_get(t, t->presets[i].name, &cfg) || kiln_tune_preset_applies(t, i, &cfg);
}

/* The candidates of this run, copied out of the space (or from presets). */
int tune_select_cands(TuneJob *j, TuneCand *space, int nspace, TuneCand **out) {
  const KilnTune *t = j->t;
  int n = 0, cap = nspace + t->npresets + 1, presets = 0;
  TuneCand *c = calloc((size_t)cap, sizeof *c);
  if (!c) return -1;
  for (int i = 0; i < t->npresets; i++) presets += preset_is_candidate(t, i, j->tg->spec);
  if (!j->max_mode && presets > 0) {
    for (int i = 0; i < t->npresets; i++) {
      if (!preset_is_candidate(t, i, j->tg->spec)) continue;
      TuneCand *x = &c[n++];
      x->order = nspace + i;
      snprintf(x->preset, sizeof x->preset, "%s", t->presets[i].name);
      if (!kiln_tune_preset_get(t, t->presets[i].name, &x->cfg)) {
        x->state = ST_PRUNED;
        snprintf(x->detail, sizeof x->detail, "preset %s cannot be built", x->preset);
        continue;
      }
      tune_space_check(x, j->c, j->src, t, j->p, &j->tg->limits);
      if (x->state == ST_PRUNED) {
        fprintf(j->log, "kiln tune: note: preset '%s' of %s is pruned: %s\n", x->preset,
                t->kernel_name, x->detail);
        n--;
      }
    }
  } else {
    int kept = 0;
    for (int i = 0; i < nspace; i++) kept += space[i].state != ST_PRUNED;
    int want = j->max_mode ? kept : kept < 4 ? kept : 4, seen = 0, next = 0;
    for (int i = 0; i < nspace && n < want; i++) {
      if (space[i].state == ST_PRUNED) continue;
      /* spread: take kept configs number round(s * (kept-1) / (want-1)), s = 0..want-1 */
      int pick = want <= 1 ? 0 : (int)((2LL * next * (kept - 1) + (want - 1)) / (2LL * (want - 1)));
      if (seen++ == pick) {
        c[n] = space[i];
        c[n].samples = NULL;
        n++;
        next++;
      }
    }
  }
  *out = c;
  return n;
}

static void add_record(TuneJob *j, const TuneCand *c) {
  KilnCacheRecord r;
  if (tune_record_from_cand(c, j->t->kernel_name, j->rep->source_hash, j->rep->tune_hash,
                            j->p->record_key, j->tg->device_id, kiln_tune_compiler_id(), &r))
    kiln_cache_put(j->fresh, &r);
}

/* Builds and times the candidates that need it. */
static void measure(TuneJob *j, TuneCand *c, int n) {
  int *idx = malloc((size_t)(n + 1) * sizeof *idx), m = 0;
  if (!idx) return;
  for (int i = 0; i < n; i++)
    if (c[i].state == ST_PENDING && !c[i].from_cache) idx[m++] = i;
  if (m == 0) {
    free(idx);
    return;
  }
  int ref = tune_plan_pick_winner(c, n); /* a cached OK config: the reference for the new ones */
  TuneCand saved;
  if (ref >= 0) {
    saved = c[ref];
    c[ref].state = ST_PENDING;
    idx[m] = ref;
  }
  tune_build(j->path, j->src, j->srclen, j->t->kernel_name, &j->p->sig, j->tg, c, idx,
             m + (ref >= 0), j->tmpdir, j->run);
  if (ref >= 0) {
    bool built = c[ref].state == ST_PENDING;
    char obj[sizeof saved.obj_path];
    memcpy(obj, c[ref].obj_path, sizeof obj);
    c[ref] = saved;
    memcpy(c[ref].obj_path, obj, sizeof obj);
    if (!built) ref = -1;
  }
  j->rep->timings += tune_run(j->tg, j->t->kernel_name, j->p, c, idx, m, ref, j->run);
  free(idx);
}

int tune_kernel(TuneJob *j) {
  TuneKernelReport *rep = j->rep;
  snprintf(rep->kernel, sizeof rep->kernel, "%s", j->t->kernel_name);
  snprintf(rep->file, sizeof rep->file, "%s", j->path);
  snprintf(rep->key, sizeof rep->key, "%s", j->p->key);
  snprintf(rep->signature, sizeof rep->signature, "%s", j->p->sig.text);
  tune_kernel_hash(j->src, j->srclen, j->t->kernel, rep->source_hash);
  rep->space_size = kiln_tune_config_count(j->t);
  rep->winner = -1;
  rep->space = tune_space_build(j->c, j->src, j->t, j->p, &j->tg->limits, &rep->nspace);
  if (!rep->space) return 2;
  int n = tune_select_cands(j, rep->space, rep->nspace, &rep->cands);
  if (n < 0) return 2;
  rep->ncands = n;
  for (int i = 0; i < n; i++) apply_cache(j, &rep->cands[i]);
  measure(j, rep->cands, n);
  for (int i = 0; i < n; i++) add_record(j, &rep->cands[i]);
  rep->winner = tune_plan_pick_winner(rep->cands, n);
  return 0;
}
