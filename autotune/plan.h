/* plan.h — the tuner's decisions, apart from its command line and its I/O.
 *
 * Every choice `kiln tune`, `kiln lib` and `kiln tune --emit-bundle` make that does not need a
 * device, a compiler run or a file is here, as a function of its inputs only: which candidate
 * wins (one tie-break, used by the tuner, the bundle runner and the library), which argument
 * spec calls a kernel, which cache records become a library's variants, which GPU's timings a
 * library takes, which config a kernel without timings falls back to, and the named limits a
 * kernel must fit. Nothing here prints, reads a file or forks: the flows (flow.c) report what
 * these functions return, and tests/autotune/plan_test.c checks the choices on hand-made
 * inputs.
 *
 * plan_pick.c (the winner rule, declared in tune_core.h) is part of the runtime-only tuner core,
 * which the bundle runner links without the compiler; plan.c (the rest) reads tune blocks and
 * lives with the compiler.
 */
#ifndef KILN_AUTOTUNE_PLAN_H
#define KILN_AUTOTUNE_PLAN_H

#include "internal.h"

/* Configs one tune block's cross product may have. A bigger space is almost surely a mistake
 * (a list typed with one zero too many), and the tuner checks each config with sema: refused
 * with a diagnostic rather than cut short. */
#define TUNE_MAX_SPACE 100000
/* Characters of a kernel name the tuner's records, reports and libraries hold (their name
 * fields are TUNE_MAX_NAME + 1 bytes): a longer name is refused, never truncated, since two
 * kernels cut to one name would share records. */
#define TUNE_MAX_NAME 63

/* ---------------------------------------------------------------- plan.c */

/* Whether kernel t can be tuned within the named limits: 0, or -1 with the reason in err (a
 * name longer than TUNE_MAX_NAME, a cross product of more than TUNE_MAX_SPACE configs). */
int tune_plan_check_kernel(const KilnTune *t, char *err, size_t cap);

/* The argument spec that calls `kernel`: the command line's (cl) win over the file's; among
 * each, one naming the kernel wins over a generic one (kernel ""). NULL when none fits. */
const TuneHarness *tune_plan_pick_harness(const TuneHarness *cl, int ncl, const TuneHarness *file,
                                          int nfile, const char *kernel);

/* A library's further layouts of a kernel: the specs after `first` (the one picked above) in
 * the same list that name the same kernel, in order, at most cap of them in out. A generic
 * spec (kernel "") has none. Each gives the untuned default config one more promised copy
 * (flow.c), so that calls with other unit strides (a GEMM's backward forms) keep vector loads. */
int tune_plan_more_layouts(const TuneHarness *cl, int ncl, const TuneHarness *file, int nfile,
                           const TuneHarness *first, const TuneHarness **out, int cap);

/* The target of a run that opens no device (`kiln lib --device cuda`, `--emit-bundle`): the
 * compiler target and the static limits of the device spec t->spec ("cpu", "emu", "cuda…");
 * a GPU is gpu->archs[0] when gpu lists archs, else sm_90. */
void tune_plan_offline_target(TuneTarget *t, const LibGpuArchs *gpu);
/* The archs of a cuda library: gpu's, or sm_80 and sm_90 when it lists none. */
LibGpuArchs tune_plan_lib_archs(const LibGpuArchs *gpu);

/* Position of a config string in t's cross product (the tie-break order); presets and configs
 * the block no longer lists come after every listed one. */
int tune_plan_config_order(const KilnTune *t, const char *config);
/* A record's config string ("BM=64,num_warps=4") over t's first config. False when it binds a
 * name the block does not have or is malformed. */
bool tune_plan_parse_config(const KilnTune *t, const char *s, KilnTuneConfig *cfg);
/* The key buckets of a record key ("M=1024,N=1024|sak=1", the part before '|') in lk's key
 * order; a key the text lacks is 0. */
void tune_plan_key_values(const LibKernel *lk, const char *record_key, int64_t *vals);

/* Which records a library may take for one kernel (every field must match a record's). */
typedef struct TunePlanQuery {
  const KilnTune *tune;    /* the tune block with the -D pins applied */
  const TunePins *pins;    /* records of another -D value are another library's */
  const char *source_hash; /* the kernel's text */
  const char *tune_hash;   /* its tune block as written */
  const char *device;      /* the device identity of the timings */
  bool without_sig;        /* leave specialized records out (--no-specialize) */
} TunePlanQuery;

typedef enum TunePlanSkipWhy {
  TUNE_PLAN_SKIP_UNLISTED, /* a config the block no longer lists: never shipped */
  TUNE_PLAN_SKIP_BAD_SIG,  /* a key whose signature names no integer parameter */
} TunePlanSkipWhy;

typedef struct TunePlanSkip {
  TunePlanSkipWhy why;
  size_t record; /* index into the cache */
} TunePlanSkip;

/* What the choice of variants left out and why, for the flow to report. */
typedef struct TunePlanNotes {
  int other_compiler;  /* records of code another build of Kiln compiled */
  int stale;           /* records of another version of the tune block */
  int unhashed;        /* records of a format-1 cache (no tune block hash) */
  TunePlanSkip *skips; /* owned; in cache order */
  int nskips;
} TunePlanNotes;

void tune_plan_notes_free(TunePlanNotes *n);

/* Appends to lk->variants one variant per record key (key buckets and signature) among the
 * OK records of cache that match q: the winner of the bucket by tune_plan_pick_winner. Skipped
 * records are listed in notes. 0, or -1 when memory ran out. */
int tune_plan_lib_winners(const TunePlanQuery *q, const KilnCache *cache, LibKernel *lk,
                          TunePlanNotes *notes);

/* The GPU whose timings a cuda library built without a GPU takes: the one device "cuda:…"
 * whose OK records of this kernel text and compiler the cache holds (its id containing
 * tuned_on when given), of variants with `index_bits` offsets (TUNE_INDEX_BITS_64_ID in the id
 * for 64, none for 32). 0 with it in dev; 1 when there is none; -1 when several remain, the
 * first two in dev and other. */
int tune_plan_recorded_gpu(const KilnCache *cache, const char *kernel, const char *source_hash,
                           const char *tuned_on, int index_bits, char *dev, size_t cap, char *other,
                           size_t ocap);

/* Appends to lk->variants, for each specialized winner whose key buckets have no generic
 * winner, the same config with no promises (its tuned median kept): a call that breaks the
 * promises then runs the nearest tuned config that fits it, generic, rather than a default
 * config tuned for nothing, which may fail the call's `where` conditions. Two winners of one
 * config and buckets give one copy. Returns how many were added, or -1 when memory ran out. */
int tune_plan_generic_copies(LibKernel *lk);
/* Whether two configs are the same (every binding, num_warps, num_stages). */
bool tune_plan_same_config(const KilnTuneConfig *a, const KilnTuneConfig *b);

/* Whether a kernel's variants need its default config added, and whether that is allowed. */
typedef enum TunePlanFallback {
  TUNE_PLAN_FALLBACK_NONE,    /* a generic variant exists: every call has one that fits */
  TUNE_PLAN_FALLBACK_DEFAULT, /* add the default config as the generic variant */
  TUNE_PLAN_FALLBACK_REFUSED, /* no variant at all, and --require-tuned */
} TunePlanFallback;

TunePlanFallback tune_plan_fallback(const LibKernel *lk, bool require_tuned);

/* Checks one config (fills c->state and c->config; ST_PRUNED when it cannot run here). */
typedef void TunePlanCheck(TuneCand *c, void *ctx);
/* Whether a preset is a candidate on the device of spec ("cpu", "emu", "cuda:0"): one without
 * `for DEVICE` everywhere, one with it on that device kind only. */
bool tune_preset_on_device(const KilnTunePreset *pr, const char *spec);

/* A kernel's default config on the device of spec, the one an untuned library runs: its first
 * preset in the order written that is on that device (for every device or `for` its kind),
 * whose `where` holds for its own config (t with its pins) and that check keeps, else the
 * first kept config of its cross product. So a `for cpu` preset written before the others is
 * the cpu's default (a row tile that the CPU does not mask away) and one written after them is
 * only a candidate of `--mode default` there. False when all are pruned. */
bool tune_plan_default_config(const KilnTune *t, const char *spec, TunePlanCheck *check, void *ctx,
                              TuneCand *out);

/* The chain of defaults in front of def (the default config) of an untuned library: the presets
 * written before def's on the device of spec whose `where` holds for their own config and that
 * check_any_call keeps (the check without the conditions on the call): those the spec's call
 * only skipped for failing a condition on the call (`where BLOCK >= cols`). The library
 * compiles each, and a call runs the first in this order whose conditions it meets, else the
 * default: `preset cpu_128 for cpu { BLOCK = 128; }` written before a default of BLOCK = 1024
 * serves the rows of 128 that it fits. Distinct configs, at most cap; returns the count. */
int tune_plan_call_defaults(const KilnTune *t, const char *spec, const TuneCand *def,
                            TunePlanCheck *check_any_call, void *ctx, TuneCand *out, int cap);

#endif /* KILN_AUTOTUNE_PLAN_H */
