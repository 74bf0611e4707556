/* libFuzzer target: the tuning cache as `kiln lib` reads it (issue 17).
 *
 * A cache is a file anyone can edit, copy between machines or truncate, and `kiln lib` builds
 * shipped code from its records. The input is taken as a cache's JSON text and goes through
 * what `kiln lib` does with it, with these rules checked:
 *   - reading never crashes, hangs or leaks, whatever the text (tune_cache_parse_text);
 *   - a cache that reads writes back as text that reads as the same records, each found by its
 *     identity with the same status and times (tune_cache_to_text, the writer's path);
 *   - the library planner (tune_plan_lib_winners) ships only configs of the current tune block:
 *     listed in its space, its `where` holding, with a finite, non-negative median. To reach the
 *     planner at all, every record read is relabelled as the fixed kernel's (FUZZ_KERNEL below:
 *     its name, source and block hashes, one device, this Kiln's version), keeping its config,
 *     key, status and times, which are what an edited cache could make wrong.
 * A broken rule aborts (the fuzzer's finding). Seeds in tests/fuzz/cache-seeds/. */
#include "plan.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_KERNEL                                                                                \
  "kernel fz(x: *f32, out: *f32, n: i32, const BLOCK: i32, const SPLIT: i32) {\n"                  \
  "    let c = program_id(0) * BLOCK + arange(0, BLOCK);\n"                                        \
  "    store(out + c, load(x + c, c < n, 0.0) * 2.0, c < n);\n"                                    \
  "}\n"                                                                                            \
  "tune fz {\n    key n;\n    BLOCK in [64, 256, 1024];\n    SPLIT in [1, 2, 4];\n"                \
  "    num_warps in [1, 4];\n    where BLOCK * SPLIT <= 1024;\n}\n"

#define FUZZ_DEVICE "cpu:fuzz:threads=1:cpu=native"

static void require(bool ok, const char *what, const char *text) {
  if (ok) return;
  fprintf(stderr, "fuzz_cache: %s: '%s'\n", what, text);
  abort();
}

/* The fixed kernel, parsed and checked once (kept for the whole run). */
typedef struct Fixed {
  KilnCompilation *c;
  const KilnTune *t;
  char source_hash[20], tune_hash[20];
  LibKernel lk;
} Fixed;

static Fixed *fixed(void) {
  static Fixed f;
  static bool ready;
  if (ready) return f.t ? &f : NULL;
  ready = true;
  static const char src[] = FUZZ_KERNEL;
  f.c = kiln_frontend_create("fz.kiln", src, sizeof src - 1);
  if (!f.c || !kiln_frontend_parse(f.c) || !kiln_sema_check_all(f.c) || kiln_tune_count(f.c) != 1)
    return NULL;
  f.t = kiln_tune_get(f.c, 0);
  tune_kernel_hash(src, sizeof src - 1, f.t->kernel, f.source_hash);
  tune_block_hash(src, f.t, f.tune_hash);
  LibKernel *lk = &f.lk;
  snprintf(lk->name, sizeof lk->name, "fz");
  lk->params[0] = (TuneParam){"x", true, KILN_SCALAR_F32};
  lk->params[1] = (TuneParam){"out", true, KILN_SCALAR_F32};
  lk->params[2] = (TuneParam){"n", false, KILN_SCALAR_I32};
  lk->nparams = 3;
  snprintf(lk->consts[0], 64, "BLOCK");
  snprintf(lk->consts[1], 64, "SPLIT");
  lk->nconsts = 2;
  snprintf(lk->keys[0], 64, "n");
  lk->keyidx[0] = 2;
  lk->nkeys = 1;
  lk->tune = f.t;
  return &f;
}

/* What the writer makes of c reads back as the same records. */
static void check_round_trip(const KilnCache *c) {
  char *text = tune_cache_to_text(c);
  if (!text) return; /* out of memory: nothing to compare */
  KilnCache back;
  int version;
  int rc = tune_cache_parse_text(text, strlen(text), "round trip", &back, &version, stderr);
  require(rc == 0, "a written cache does not read back", text);
  require(back.count == c->count, "a written cache reads back another number of records", text);
  for (size_t i = 0; i < c->count; i++) {
    const KilnCacheRecord *r = &c->records[i], *b = kiln_cache_find(&back, r);
    require(b != NULL, "a written record is not found again", r->config);
    require(b->status == r->status && b->median_ms == r->median_ms && b->reps == r->reps,
            "a written record reads back with other values", r->config);
  }
  kiln_cache_free(&back);
  free(text);
}

/* The records relabelled as the fixed kernel's, through the planner: only sound configs ship. */
static void check_planner(Fixed *f, const KilnCache *c) {
  KilnCache mine = {0};
  for (size_t i = 0; i < c->count; i++) {
    KilnCacheRecord r = c->records[i];
    snprintf(r.kernel, sizeof r.kernel, "fz");
    memcpy(r.source_hash, f->source_hash, sizeof r.source_hash);
    memcpy(r.tune_hash, f->tune_hash, sizeof r.tune_hash);
    snprintf(r.device, sizeof r.device, FUZZ_DEVICE);
    snprintf(r.kiln_version, sizeof r.kiln_version, "%s", kiln_tune_compiler_id());
    if (kiln_cache_put(&mine, &r)) break;
  }
  TunePins pins = {0};
  TunePlanQuery q = {f->t, &pins, f->source_hash, f->tune_hash, FUZZ_DEVICE, false};
  LibKernel lk = f->lk;
  TunePlanNotes notes;
  if (tune_plan_lib_winners(&q, &mine, &lk, &notes) == 0) {
    size_t space = kiln_tune_config_count(f->t);
    for (int v = 0; v < lk.nvariants; v++) {
      char cfg[256];
      tune_config_string(&lk.variants[v].cfg, cfg, sizeof cfg);
      require((size_t)tune_plan_config_order(f->t, cfg) < space, "an unlisted config ships", cfg);
      require(kiln_tune_where_ok(f->c, f->t, &lk.variants[v].cfg),
              "a config its where excludes ships", cfg);
      require(isfinite(lk.variants[v].median_ms) && lk.variants[v].median_ms >= 0,
              "a winner with a bad median ships", cfg);
    }
  }
  free(lk.variants);
  tune_plan_notes_free(&notes);
  kiln_cache_free(&mine);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Fixed *f = fixed();
  if (!f) abort(); /* the fixed kernel must compile: a broken harness, not a finding */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  FILE *sink = fopen("/dev/null", "w");
  KilnCache c;
  int version;
  if (tune_cache_parse_text(text, size, "fuzz", &c, &version, sink ? sink : stderr) == 0) {
    check_round_trip(&c);
    check_planner(f, &c);
  }
  kiln_cache_free(&c);
  if (sink) fclose(sink);
  free(text);
  return 0;
}
