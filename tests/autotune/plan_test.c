/* plan_test.c — the tuner's decisions (autotune/plan.h) on small hand-made inputs: candidates
 * with chosen medians, a tune block parsed from a few lines of Kiln, caches of a handful of
 * records. Each check states the choice the rule must make and why; nothing is timed, built or
 * read from disk, so the expected answers are exact. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

/* A kernel with a key, three block sizes, two warp counts and two presets, after a preset for
 * cuda only (never the default). */
static const char src[] = "kernel k(x: *f32, n: i32, const BLOCK: i32) {\n"
                          "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
                          "    store(x + offs, load(x + offs, offs < n, 0.0) * 2.0, offs < n);\n"
                          "}\n"
                          "tune k {\n"
                          "    key n;\n"
                          "    BLOCK in [64, 256, 1024];\n"
                          "    num_warps in [1, 4];\n"
                          "    preset gpu for cuda { BLOCK = 1024; num_warps = 1; }\n"
                          "    preset small { BLOCK = 64; num_warps = 1; }\n"
                          "    preset big { BLOCK = 1024; num_warps = 4; }\n"
                          "}\n";

static KilnCompilation *compile(const char *text) {
  KilnCompilation *c = kiln_frontend_create("plan.kiln", text, strlen(text));
  bool ok = c && kiln_frontend_parse(c) && kiln_sema_check_all(c);
  if (!ok && c) kiln_diag_render(c, stdout);
  CHECK(ok, "the test's kernel does not compile");
  return ok ? c : NULL;
}

static TuneCand cand(double median, double spread, double resources, int order, TuneState st) {
  TuneCand c;
  memset(&c, 0, sizeof c);
  c.state = st;
  c.median_ms = median;
  c.p25_ms = median - spread / 2;
  c.p75_ms = median + spread / 2;
  c.resources = resources;
  c.order = order;
  return c;
}

/* The tie-break: within max(2% of the fastest median, its spread) the smaller config wins,
 * then the earlier one; beyond it the fastest wins; only OK candidates count. */
static void test_winner(void) {
  TuneCand a[] = {cand(1.00, 0.001, 256, 0, ST_OK), cand(1.015, 0.001, 64, 1, ST_OK),
                  cand(0.10, 0.001, 1, 2, ST_CRASH)};
  CHECK(tune_plan_pick_winner(a, 3) == 1, "1.5%% slower with 4x fewer resources must win");
  a[1].median_ms = 1.03; /* now beyond 2% */
  CHECK(tune_plan_pick_winner(a, 3) == 0, "3%% slower is not a tie");
  a[0].p25_ms = 0.95, a[0].p75_ms = 1.05; /* a noisy fastest: 0.1 ms spread makes 1.03 a tie */
  CHECK(tune_plan_pick_winner(a, 3) == 1, "within the fastest's spread is a tie");
  TuneCand b[] = {cand(1.0, 0, 64, 5, ST_OK), cand(1.0, 0, 64, 2, ST_OK)};
  CHECK(tune_plan_pick_winner(b, 2) == 1, "equal resources: the earlier order must win");
  TuneCand none[] = {cand(1.0, 0, 1, 0, ST_MISMATCH), cand(1.0, 0, 1, 1, ST_PRUNED)};
  CHECK(tune_plan_pick_winner(none, 2) == -1, "no OK candidate: no winner");
  KilnTuneConfig cfg = {.bindings = {{"BLOCK", 256}, {"num_warps", 4}, {"num_stages", 3}},
                        .nbindings = 3,
                        .num_warps = 4,
                        .num_stages = 3};
  CHECK(tune_plan_resources(&cfg) == 1024.0, "resources of BLOCK=256 x 4 warps: got %g",
        tune_plan_resources(&cfg));
  /* the other meta names are switches and promises, not sizes: min_blocks = 2 and wgmma = 1
     leave the count as it was */
  cfg.bindings[3] = (KilnBinding){"min_blocks", 2};
  cfg.bindings[4] = (KilnBinding){"wgmma", 1};
  cfg.bindings[5] = (KilnBinding){"BK", 2};
  cfg.nbindings = 6;
  CHECK(tune_plan_resources(&cfg) == 2048.0,
        "BLOCK=256 x BK=2 x 4 warps, min_blocks and wgmma "
        "not counted: got %g",
        tune_plan_resources(&cfg));
}

/* The named limits: a name of 64 characters and a space of 10^6 configs are refused. */
static void test_limits(void) {
  char text[2048], name[80], err[256];
  memset(name, 'x', 64);
  name[64] = '\0';
  snprintf(text, sizeof text,
           "kernel %s(x: *f32, const A: i32, const B: i32, const C: i32) {\n"
           "    store(x, load(x) + 1.0);\n}\ntune %s { A in [%s]; B in [%s]; C in [%s]; }\n",
           name, name, "1,2,3,4,5,6,7,8,9,10", "1,2,3,4,5,6,7,8,9,10", "1,2,3,4,5,6,7,8,9,10");
  KilnCompilation *c = compile(text);
  if (c) {
    CHECK(tune_plan_check_kernel(kiln_tune_get(c, 0), err, sizeof err) == -1 &&
              strstr(err, "TUNE_MAX_NAME") && strstr(err, "64 characters"),
          "a 64-character name must be refused: '%s'", err);
    kiln_frontend_destroy(c);
  }
  name[63] = '\0'; /* 63 characters fit; 1000 configs fit */
  snprintf(text, sizeof text,
           "kernel %s(x: *f32, const A: i32) {\n    store(x, load(x) + 1.0);\n}\n"
           "tune %s { A in [1, 2]; }\n",
           name, name);
  if ((c = compile(text))) {
    CHECK(tune_plan_check_kernel(kiln_tune_get(c, 0), err, sizeof err) == 0, "63 fit: %s", err);
    kiln_frontend_destroy(c);
  }
  char list[400] = "1";
  for (int i = 2; i <= 100; i++)
    snprintf(list + strlen(list), sizeof list - strlen(list), ",%d", i);
  snprintf(text, sizeof text,
           "kernel big(x: *f32, const A: i32, const B: i32, const C: i32) {\n"
           "    store(x, load(x) + 1.0);\n}\ntune big { A in [%s]; B in [%s]; C in [%s]; }\n",
           list, list, list);
  if ((c = compile(text))) {
    CHECK(tune_plan_check_kernel(kiln_tune_get(c, 0), err, sizeof err) == -1 &&
              strstr(err, "1000000 configs") && strstr(err, "TUNE_MAX_SPACE"),
          "10^6 configs must be refused: '%s'", err);
    kiln_frontend_destroy(c);
  }
}

/* Command line over file; a spec naming the kernel over a generic one within each. */
static void test_harness(void) {
  TuneHarness cl[2], file[2];
  memset(cl, 0, sizeof cl);
  memset(file, 0, sizeof file);
  snprintf(cl[0].kernel, sizeof cl[0].kernel, "other");
  snprintf(file[1].kernel, sizeof file[1].kernel, "k");
  CHECK(tune_plan_pick_harness(cl, 2, file, 2, "k") == &cl[1], "a generic --args beats the file");
  CHECK(tune_plan_pick_harness(cl, 1, file, 2, "k") == &file[1], "the file's named spec next");
  CHECK(tune_plan_pick_harness(cl, 1, file, 1, "k") == &file[0], "then the file's generic one");
  CHECK(tune_plan_pick_harness(cl, 1, NULL, 0, "k") == NULL, "no spec for k");
  snprintf(cl[1].kernel, sizeof cl[1].kernel, "k");
  CHECK(tune_plan_pick_harness(cl, 2, file, 2, "k") == &cl[1], "a named --args first");
}

/* A library's further layouts of a kernel: the later specs of the picked one's list that name
 * the same kernel, in order; none for a generic spec. */
static void test_layouts(void) {
  static TuneHarness cl[4], file[2];
  const TuneHarness *out[4];
  memset(cl, 0, sizeof cl);
  memset(file, 0, sizeof file);
  snprintf(cl[0].kernel, sizeof cl[0].kernel, "k");
  snprintf(cl[1].kernel, sizeof cl[1].kernel, "other");
  snprintf(cl[2].kernel, sizeof cl[2].kernel, "k");
  snprintf(cl[3].kernel, sizeof cl[3].kernel, "k");
  snprintf(file[0].kernel, sizeof file[0].kernel, "k");
  snprintf(file[1].kernel, sizeof file[1].kernel, "k");
  int n = tune_plan_more_layouts(cl, 4, file, 2, &cl[0], out, 4);
  CHECK(n == 2 && out[0] == &cl[2] && out[1] == &cl[3], "two more --args name k, in order");
  CHECK(tune_plan_more_layouts(cl, 4, file, 2, &cl[0], out, 1) == 1, "at most cap of them");
  n = tune_plan_more_layouts(cl, 1, file, 2, &file[0], out, 4);
  CHECK(n == 1 && out[0] == &file[1], "the file's own lines for a spec picked from the file");
  CHECK(tune_plan_more_layouts(cl, 4, file, 2, &cl[1], out, 4) == 0, "no other spec names 'other'");
  TuneHarness any = {0};
  CHECK(tune_plan_more_layouts(cl, 4, file, 2, &any, out, 4) == 0, "a generic spec has none");
}

/* A run without a device: the target from the spec and --arch; default library archs. */
static void test_targets(void) {
  TuneTarget t = {.spec = "cuda"};
  LibGpuArchs one = {{KILN_TARGET_SM80}, 1, false};
  tune_plan_offline_target(&t, &one);
  CHECK(t.target == KILN_TARGET_SM80 && t.limits.max_tile_bytes == 256 * 1024, "cuda --arch sm_80");
  tune_plan_offline_target(&t, NULL);
  CHECK(t.target == KILN_TARGET_SM90, "cuda without --arch is sm_90");
  snprintf(t.spec, sizeof t.spec, "emu");
  tune_plan_offline_target(&t, &one);
  CHECK(t.target == KILN_TARGET_EMU && t.limits.max_tile_bytes == 256 * 1024, "emu");
  snprintf(t.spec, sizeof t.spec, "cpu");
  tune_plan_offline_target(&t, NULL);
  CHECK(t.target == KILN_TARGET_CPU && t.limits.max_tile_bytes == 8u << 20, "cpu: 8 MiB tiles");
  LibGpuArchs none = {.ptx_only = true}, d = tune_plan_lib_archs(&none);
  CHECK(d.narchs == 2 && d.archs[0] == KILN_TARGET_SM80 && d.archs[1] == KILN_TARGET_SM90 &&
            d.ptx_only,
        "default archs: sm_80 then sm_90, --no-cubin kept");
  CHECK(tune_plan_lib_archs(&one).narchs == 1, "given archs are kept");
}

/* Config strings and record keys read back against the block. */
static void test_configs_and_keys(const KilnTune *t) {
  KilnTuneConfig cfg;
  char s[256];
  CHECK(kiln_tune_config_get(t, 3, &cfg), "config 3 exists");
  tune_config_string(&cfg, s, sizeof s);
  CHECK(tune_plan_config_order(t, s) == 3, "'%s' is config 3", s);
  CHECK(tune_plan_config_order(t, "BLOCK=128,num_warps=4,num_stages=2") == 6,
        "a config the block lacks comes after all 6");
  CHECK(tune_plan_parse_config(t, "BLOCK=1024,num_warps=1", &cfg) && cfg.num_warps == 1 &&
            cfg.bindings[0].value == 1024,
        "a record's config parsed");
  CHECK(!tune_plan_parse_config(t, "TILE=4", &cfg), "a parameter the block lacks");
  LibKernel lk = {.nkeys = 2, .keys = {"M", "N"}};
  int64_t v[2];
  tune_plan_key_values(&lk, "MM=7,M=1024,N=64|N%16", v);
  CHECK(v[0] == 1024 && v[1] == 64, "M=1024 (not MM), N=64: got %lld %lld", (long long)v[0],
        (long long)v[1]);
  tune_plan_key_values(&lk, "N=5", v);
  CHECK(v[0] == 0 && v[1] == 5, "a missing key is 0");
}

static KilnCacheRecord rec(const char *kernel, const char *tune_hash, const char *device,
                           const char *key, int block, double median) {
  KilnCacheRecord r;
  memset(&r, 0, sizeof r);
  snprintf(r.kernel, sizeof r.kernel, "%s", kernel);
  snprintf(r.source_hash, sizeof r.source_hash, "src1");
  snprintf(r.tune_hash, sizeof r.tune_hash, "%s", tune_hash);
  snprintf(r.config, sizeof r.config, "BLOCK=%d,num_warps=4,num_stages=2", block);
  snprintf(r.key, sizeof r.key, "%s", key);
  snprintf(r.device, sizeof r.device, "%s", device);
  snprintf(r.kiln_version, sizeof r.kiln_version, "%s", kiln_tune_compiler_id());
  r.status = KILN_CACHE_OK;
  r.median_ms = median;
  r.p25_ms = r.p75_ms = median;
  return r;
}

static LibKernel lib_kernel(void) {
  LibKernel lk;
  memset(&lk, 0, sizeof lk);
  snprintf(lk.name, sizeof lk.name, "k");
  lk.nparams = 1;
  lk.params[0] = (TuneParam){"n", false, KILN_SCALAR_I32};
  lk.nkeys = 1;
  snprintf(lk.keys[0], sizeof lk.keys[0], "n");
  return lk;
}

static const LibVariant *variant_of(const LibKernel *lk, int64_t n, int nsig) {
  for (int i = 0; i < lk->nvariants; i++)
    if (lk->variants[i].keyvals[0] == n && lk->variants[i].sig.n == nsig) return &lk->variants[i];
  return NULL;
}

static int64_t block_of(const LibVariant *v) { return v ? v->cfg.bindings[0].value : -1; }

/* A cache of hand-made records: per record key the bucket's winner; other kernels, devices,
 * blocks and -D values are not taken; what is left out is noted. */
static void test_lib_winners(const KilnTune *t) {
  const char *dev = "cpu:test";
  KilnCacheRecord rs[] = {
      rec("k", "tb", dev, "n=1024", 64, 1.0), /* bucket n=1024: 256 is faster */
      rec("k", "tb", dev, "n=1024", 256, 0.5),
      rec("k", "tb", dev, "n=64", 1024, 2.0), /* bucket n=64: a tie (1%), 64 is smaller */
      rec("k", "tb", dev, "n=64", 64, 2.02),
      rec("k", "tb", dev, "n=64", 128, 0.1),         /* unlisted: never shipped, though fastest */
      rec("k", "tb", dev, "n=1024|n%16", 1024, 0.4), /* a specialized bucket */
      rec("k", "tb", dev, "n=2|zz=1", 64, 0.4),      /* a signature naming no parameter */
      rec("k", "old", dev, "n=1024", 64, 0.01),      /* another version of the block */
      rec("k", "", dev, "n=1024", 64, 0.01),         /* a format-1 record */
      rec("k", "tb", "cpu:other", "n=1024", 64, 0.01),
      rec("j", "tb", dev, "n=1024", 64, 0.01),
  };
  KilnCache cache = {.records = rs, .count = sizeof rs / sizeof rs[0]};
  TunePins pins = {0};
  TunePlanQuery q = {t, &pins, "src1", "tb", dev, false};
  LibKernel lk = lib_kernel();
  TunePlanNotes notes;
  CHECK(tune_plan_lib_winners(&q, &cache, &lk, &notes) == 0, "winners");
  CHECK(lk.nvariants == 3, "3 record keys give 3 variants, got %d", lk.nvariants);
  CHECK(block_of(variant_of(&lk, 1024, 0)) == 256, "n=1024: the faster BLOCK=256");
  CHECK(block_of(variant_of(&lk, 64, 0)) == 64, "n=64: the tie goes to BLOCK=64");
  CHECK(block_of(variant_of(&lk, 1024, 1)) == 1024, "n=1024|n%%16: its only record");
  CHECK(notes.stale == 1 && notes.unhashed == 1, "stale %d, unhashed %d", notes.stale,
        notes.unhashed);
  CHECK(notes.nskips == 2 && notes.skips[0].why == TUNE_PLAN_SKIP_UNLISTED &&
            notes.skips[0].record == 4 && notes.skips[1].why == TUNE_PLAN_SKIP_BAD_SIG &&
            notes.skips[1].record == 6,
        "the unlisted record and the bad signature are noted");
  CHECK(tune_plan_fallback(&lk, true) == TUNE_PLAN_FALLBACK_NONE, "a generic variant exists");
  free(lk.variants);
  tune_plan_notes_free(&notes);

  /* --no-specialize and -D BLOCK=64: only generic records of BLOCK=64, without a note */
  char err[160];
  CHECK(tune_pins_add(&pins, "BLOCK=64", err, sizeof err) == 0, "pin: %s", err);
  q.without_sig = true;
  lk = lib_kernel();
  CHECK(tune_plan_lib_winners(&q, &cache, &lk, &notes) == 0, "pinned winners");
  CHECK(lk.nvariants == 2 && block_of(variant_of(&lk, 1024, 0)) == 64 &&
            block_of(variant_of(&lk, 64, 0)) == 64,
        "pinned: BLOCK=64 in both buckets, got %d", lk.nvariants);
  CHECK(notes.nskips == 0, "BLOCK=128 is another -D value's record: not noted, got %d",
        notes.nskips);
  free(lk.variants);
  tune_plan_notes_free(&notes);
}

/* The GPU a cuda library takes: the only one recorded, or the one --tuned-on names; and only
 * timings of variants with the library's offset bits (":index_bits=64" in the id for 64). */
static void test_recorded_gpu(void) {
  KilnCacheRecord rs[] = {rec("k", "tb", "cuda:A100:sm_80", "n=1", 64, 1),
                          rec("k", "tb", "cuda:H100:sm_90", "n=1", 64, 1),
                          rec("k", "tb", "cpu:test", "n=1", 64, 1),
                          rec("k", "tb", "cuda:H200:sm_90:index_bits=64", "n=1", 64, 1)};
  KilnCache cache = {.records = rs, .count = 4};
  char dev[256], other[256];
  CHECK(tune_plan_recorded_gpu(&cache, "k", "src1", NULL, 32, dev, sizeof dev, other,
                               sizeof other) == -1 &&
            !strcmp(dev, "cuda:A100:sm_80") && !strcmp(other, "cuda:H100:sm_90"),
        "two GPUs: ambiguous");
  CHECK(tune_plan_recorded_gpu(&cache, "k", "src1", "H100", 32, dev, sizeof dev, other,
                               sizeof other) == 0 &&
            !strcmp(dev, "cuda:H100:sm_90"),
        "--tuned-on H100");
  CHECK(tune_plan_recorded_gpu(&cache, "k", "src2", NULL, 32, dev, sizeof dev, other,
                               sizeof other) == 1,
        "no record of this text: none");
  CHECK(tune_plan_recorded_gpu(&cache, "k", "src1", NULL, 64, dev, sizeof dev, other,
                               sizeof other) == 0 &&
            !strcmp(dev, "cuda:H200:sm_90:index_bits=64"),
        "--index-bits 64: only the 64-bit timings, got %s", dev);
  CHECK(tune_plan_recorded_gpu(&cache, "k", "src1", "H200", 32, dev, sizeof dev, other,
                               sizeof other) == 1,
        "--index-bits 32 --tuned-on H200: the 64-bit timings are not taken");
}

/* Whether the default config is added: only without a generic variant; refused when nothing
 * was tuned and --require-tuned. */
static void test_fallback(void) {
  LibVariant spec = {.sig = {.n = 1}}, gen = {0};
  LibKernel lk = lib_kernel();
  CHECK(tune_plan_fallback(&lk, false) == TUNE_PLAN_FALLBACK_DEFAULT, "nothing tuned: default");
  CHECK(tune_plan_fallback(&lk, true) == TUNE_PLAN_FALLBACK_REFUSED, "--require-tuned refuses");
  lk.variants = &spec, lk.nvariants = 1;
  CHECK(tune_plan_fallback(&lk, true) == TUNE_PLAN_FALLBACK_DEFAULT, "only specialized: default");
  lk.variants = &gen;
  CHECK(tune_plan_fallback(&lk, true) == TUNE_PLAN_FALLBACK_NONE, "a generic one: none");
}

/* A specialized winner whose buckets have no generic winner gets a generic copy of its config
 * (the fallback of calls that break its promises, instead of the default config); a bucket
 * with a generic winner, or a copy already, gets none. */
static void test_generic_copies(void) {
  LibKernel lk = lib_kernel();
  lk.nkeys = 1;
  lk.variants = calloc(3, sizeof *lk.variants);
  lk.nvariants = 3;
  LibVariant *v = lk.variants;
  v[0].sig.n = 1, v[0].keyvals[0] = 1024, v[0].cfg.num_warps = 4, v[0].median_ms = 2.0;
  v[1].sig.n = 1, v[1].keyvals[0] = 64, v[1].cfg.num_warps = 1;
  v[2].sig.n = 0, v[2].keyvals[0] = 64, v[2].cfg.num_warps = 2; /* a generic winner at 64 */
  CHECK(tune_plan_generic_copies(&lk) == 1 && lk.nvariants == 4, "one copy (bucket 1024), got %d",
        lk.nvariants);
  v = lk.variants;
  CHECK(v[3].sig.n == 0 && v[3].generic_copy && v[3].keyvals[0] == 1024 &&
            v[3].cfg.num_warps == 4 && v[3].median_ms == 2.0 && !v[3].untuned,
        "the copy is the 1024 winner's config, generic");
  CHECK(tune_plan_generic_copies(&lk) == 0, "a second call adds nothing");
  CHECK(tune_plan_fallback(&lk, true) == TUNE_PLAN_FALLBACK_NONE, "with the copies: no default");
  free(lk.variants);
}

/* A check that prunes every config whose BLOCK is below ctx's minimum or above its maximum. */
static void prune_blocks(TuneCand *c, void *ctx) {
  const int64_t *range = ctx;
  int64_t b = c->cfg.bindings[0].value;
  c->state = b < range[0] || b > range[1] ? ST_PRUNED : ST_PENDING;
  tune_config_string(&c->cfg, c->config, sizeof c->config);
}

static void test_default_config(const KilnTune *t) {
  TuneCand c;
  int64_t any[2] = {0, 1 << 20}, no_small[2] = {128, 1 << 20}, mid[2] = {128, 512},
          none[2] = {0, 1};
  CHECK(tune_plan_default_config(t, "cpu", prune_blocks, any, &c) &&
            c.cfg.bindings[0].value == 64 && c.cfg.num_warps == 1,
        "the first preset, small: got %s", c.config);
  CHECK(tune_plan_default_config(t, "cpu", prune_blocks, no_small, &c) &&
            c.cfg.bindings[0].value == 1024,
        "small pruned: the next preset, big: got %s", c.config);
  CHECK(tune_plan_default_config(t, "cpu", prune_blocks, mid, &c) && c.cfg.bindings[0].value == 256,
        "both presets pruned: the first kept config, BLOCK=256: got %s", c.config);
  CHECK(!tune_plan_default_config(t, "cpu", prune_blocks, none, &c), "all pruned: none");
}

/* Presets with a condition on the pinned element type (dsl/reference.md, "Tune blocks"): the
 * default on a device is the first preset on it (for every device or for its kind) whose
 * `where` holds for the pins, so an f32 pin takes `fma` where f16 takes `tensor`; a preset for
 * cuda is the default on cuda only, and when the f32 preset is pruned the default is the first
 * kept config, not the f16 one. Conditions ignored (the old rule) would give `tensor` to every
 * pin. */
static const char typed_src[] =
    "kernel g(x: *T, n: i32, const T: type, const BLOCK: i32) {\n"
    "    let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "    store(x + offs, (load(x + offs, offs < n, 0.0) * 2.0) as T, offs < n);\n"
    "}\n"
    "tune g {\n"
    "    T in [f16];\n"
    "    BLOCK in [64, 256, 1024];\n"
    "    num_warps in [1, 4];\n"
    "    preset gpu for cuda where T == f32 { BLOCK = 64; num_warps = 4; }\n"
    "    preset tensor where T != f32 { BLOCK = 1024; num_warps = 4; }\n"
    "    preset fma where T == f32 && num_warps == 1 { BLOCK = 256; num_warps = 1; }\n"
    "}\n";

/* prune_blocks over the binding named BLOCK (T comes first in typed_src). */
static void prune_block_named(TuneCand *c, void *ctx) {
  const int64_t *range = ctx;
  int64_t b = -1;
  for (int i = 0; i < c->cfg.nbindings; i++)
    if (!strcmp(c->cfg.bindings[i].name, "BLOCK")) b = c->cfg.bindings[i].value;
  c->state = b < range[0] || b > range[1] ? ST_PRUNED : ST_PENDING;
  tune_config_string(&c->cfg, c->config, sizeof c->config);
}

/* The default config of t with T pinned to type (NULL: no pin), through check's range. */
static bool pinned_default(const KilnTune *t, const char *device, const char *type, int64_t *range,
                           TuneCand *out) {
  TunePins pins = {.n = 0};
  char arg[32], err[256];
  snprintf(arg, sizeof arg, "T=%s", type ? type : "");
  if (type && tune_pins_add(&pins, arg, err, sizeof err) < 0) return false;
  TunePinned *pt = tune_pins_apply(&pins, t, err, sizeof err);
  if (!pt) return false;
  bool ok = tune_plan_default_config(&pt->tune, device, prune_block_named, range, out);
  tune_pinned_free(pt);
  return ok;
}

static void test_default_by_pin(void) {
  KilnCompilation *c = compile(typed_src);
  if (!c) return;
  const KilnTune *t = kiln_tune_get(c, 0);
  TuneCand d;
  int64_t any[2] = {0, 1 << 20}, no_256[2] = {512, 1 << 20};
  /* On cuda the cuda preset, written first, is the f32 default; f16's is still tensor, since
   * gpu's condition fails for it, and on cuda:1 as on cuda. */
  const struct {
    const char *device, *type;
    int64_t *range;
    const char *want, *what;
  } cases[] = {
      {"cpu", NULL, any, "T=5,BLOCK=1024,num_warps=4,num_stages=2",
       "T as listed (f16): the tensor preset"},
      {"cpu", "bf16", any, "T=6,BLOCK=1024,num_warps=4,num_stages=2", "T=bf16: the tensor preset"},
      {"cpu", "f32", any, "T=7,BLOCK=256,num_warps=1,num_stages=2",
       "T=f32: the fma preset (tensor's condition fails, gpu is for cuda)"},
      {"cpu", "f32", no_256, "T=7,BLOCK=1024,num_warps=1,num_stages=2",
       "T=f32 with fma pruned: the first kept config, not tensor's 4 warps"},
      {"cuda:1", "f32", any, "T=7,BLOCK=64,num_warps=4,num_stages=2",
       "T=f32 on cuda: the gpu preset"},
      {"cuda", NULL, any, "T=5,BLOCK=1024,num_warps=4,num_stages=2",
       "T=f16 on cuda: the tensor preset"},
      {"emu", "f32", any, "T=7,BLOCK=256,num_warps=1,num_stages=2",
       "T=f32 on emu: the fma preset (gpu is for cuda)"},
      {"cudax", "f32", any, "T=7,BLOCK=256,num_warps=1,num_stages=2",
       "a device named cudax is not cuda: the fma preset"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    bool ok = pinned_default(t, cases[i].device, cases[i].type, cases[i].range, &d);
    CHECK(ok && !strcmp(d.config, cases[i].want), "%s, got %s", cases[i].what,
          ok ? d.config : "none");
  }
  KilnTuneConfig cfg;
  CHECK(kiln_tune_preset_get(t, "fma", &cfg) && !kiln_tune_preset_applies(t, 2, &cfg) &&
            kiln_tune_preset_get(t, "tensor", &cfg) && kiln_tune_preset_applies(t, 1, &cfg),
        "unpinned (T=f16): tensor applies, fma does not");
  kiln_frontend_destroy(c);
}

/* tune_plan_call_defaults: the presets on the device written before the default's, in order,
 * distinct, that the call-agnostic check keeps. chain_src's default (wide, 1024) stands for
 * the one a call of long rows gets; `again` repeats `small`'s config; `gpu` is for cuda only;
 * `late` comes after the default. */
static const char chain_src[] =
    "kernel r(x: *f32, n: i32, const BLOCK: i32) {\n"
    "    store(x + program_id(0) * n + arange(0, BLOCK), 1.0, arange(0, BLOCK) < n);\n"
    "}\n"
    "tune r {\n"
    "    key n;\n"
    "    BLOCK in [64, 128, 256, 512, 1024];\n"
    "    num_warps in [1];\n"
    "    where BLOCK >= n;\n"
    "    preset small for cpu { BLOCK = 64; }\n"
    "    preset gpu for cuda { BLOCK = 128; }\n"
    "    preset again for cpu { BLOCK = 64; }\n"
    "    preset mid { BLOCK = 256; }\n"
    "    preset wide { BLOCK = 1024; }\n"
    "    preset late for cpu { BLOCK = 512; }\n"
    "}\n";

/* The BLOCKs of the chain in front of preset `def`'s config on device, with check's range. */
static int chain_blocks(const KilnTune *t, const char *device, const char *def, int64_t *range,
                        int64_t *blocks) {
  TuneCand d, out[8];
  memset(&d, 0, sizeof d);
  if (!kiln_tune_preset_get(t, def, &d.cfg)) return -1;
  int n = tune_plan_call_defaults(t, device, &d, prune_block_named, range, out, 8);
  for (int i = 0; i < n; i++) blocks[i] = out[i].cfg.bindings[0].value;
  return n;
}

static void test_call_defaults(void) {
  KilnCompilation *c = compile(chain_src);
  if (!c) return;
  const KilnTune *t = kiln_tune_get(c, 0);
  int64_t any[2] = {0, 1 << 20}, no_64[2] = {100, 1 << 20}, b[8];
  int n = chain_blocks(t, "cpu", "wide", any, b);
  CHECK(n == 2 && b[0] == 64 && b[1] == 256, "cpu: chain 64, 256 (got %d: %lld ...)", n,
        n ? (long long)b[0] : -1LL);
  n = chain_blocks(t, "cuda:0", "wide", any, b);
  CHECK(n == 2 && b[0] == 128 && b[1] == 256, "cuda: chain 128, 256 (got %d)", n);
  n = chain_blocks(t, "cpu", "wide", no_64, b);
  CHECK(n == 1 && b[0] == 256, "cpu with 64 pruned by the device: chain 256 (got %d)", n);
  n = chain_blocks(t, "cpu", "mid", any, b);
  CHECK(n == 1 && b[0] == 64, "default mid: chain 64 (got %d)", n);
  n = chain_blocks(t, "cpu", "gpu", any, b);
  CHECK(n == 4 && b[0] == 64 && b[1] == 256 && b[2] == 1024 && b[3] == 512,
        "a default of no cpu preset (gpu's 128): every cpu preset, distinct (got %d)", n);
  kiln_frontend_destroy(c);
}

int main(void) {
  test_call_defaults();
  test_winner();
  test_limits();
  test_harness();
  test_layouts();
  test_targets();
  KilnCompilation *c = compile(src);
  if (c) {
    const KilnTune *t = kiln_tune_get(c, 0);
    test_configs_and_keys(t);
    test_lib_winners(t);
    test_default_config(t);
    kiln_frontend_destroy(c);
  }
  test_default_by_pin();
  test_recorded_gpu();
  test_fallback();
  test_generic_copies();
  if (failures)
    printf("%d check(s) failed\n", failures);
  else
    printf("ok\n");
  return failures != 0;
}
