/* internal.h — what the autotune files share; not for other folders (they use kiln_autotune.h).
 *
 * Flow of one `kiln tune` run, per kernel (cli.c reads the command line, flow.c runs it, plan.h
 * makes its decisions):
 *   harness.c  the argument spec -> scalar values, seeded input buffers, key buckets, grid rule
 *   space.c    tune block -> every config, pruned by `where`, sema and static limits, with the
 *              reason; the default-mode subset
 *   build.c    fork()ed workers compile the variants that need timing into a temp dir
 *   run.c      one fork()ed child per timing (time limit, crash/hang/mismatch detection),
 *              successive halving, interleaved finals
 *   sig.c      the specialization signature of the call (integer arguments equal to 1 or
 *              divisible by 16), compiled into every variant and recorded in the cache key
 *   cache.c    the JSON cache; report.c the table, JSON and SVG; libgen.c the C library
 */
#ifndef KILN_AUTOTUNE_INTERNAL_H
#define KILN_AUTOTUNE_INTERNAL_H

#include "tune_core.h"
#include "kiln_driver.h"
#include "kiln_frontend.h"

/* ---------------------------------------------------------------- harness.c */

/* cache.c: a cache's text (len bytes, NUL-terminated; a NUL inside is not a cache) into out,
 * which is valid (maybe empty) on every return and the caller frees. 0; 1 not a cache of this
 * shape; 2 a format version newer than this Kiln's (*version). Notes on records left out go
 * to err, which names the cache `name`. */
int tune_cache_parse_text(const char *text, size_t len, const char *name, KilnCache *out,
                          int *version, FILE *err);

int tune_harness_parse(const char *spec, TuneHarness *h, char *err, size_t cap);
/* Fills p from h for kernel k (unchecked AST: parameter annotations), its buffers within
 * budget (checked before each is allocated). 0 or -1 with err. */
int tune_problem_init(TuneProblem *p, const TuneHarness *h, const KilnKernel *k, const KilnTune *t,
                      const TuneArgBudget *budget, char *err, size_t cap);
/* The scalars only (every parameter must be given; no buffer is made, no key): what a
 * library's further layout of a kernel needs. 0 or -1 with err. */
int tune_problem_init_scalars(TuneProblem *p, const TuneHarness *h, const KilnKernel *k, char *err,
                              size_t cap);

/* ---------------------------------------------------------------- build.c: a signature's
 * promises as the driver's options */

/* The driver's option lists for s (arrays of TUNE_MAX_PARAMS; names point into s). */
void tune_sig_defines(const TuneSig *s, KilnDefine *spec, size_t *nspec, KilnDefine *mult,
                      size_t *nmult);

/* ---------------------------------------------------------------- space.c */

/* Every config of t (cross product), each checked: `where`, sema, limits, grid. Pruned ones
 * keep their reason. Returns the array (count in *n), NULL on memory failure. */
TuneCand *tune_space_build(KilnCompilation *c, const char *src, const KilnTune *t,
                           const TuneProblem *p, const TuneDeviceLimits *lim, int *n);
/* The source text of a span on one line (a `where` clause, for reports and comments). */
void tune_span_text(const char *src, KilnSpan sp, char *buf, size_t cap);
/* Whether a cubin's resources (ptxas -v) fit one program of num_warps warps on sm_80/sm_90:
 * 65536 registers per program, allocated per warp in units of 256 (per thread rounded up to
 * 8), and 48 KiB of static shared memory. False with the reason in why. */
bool tune_gpu_usage_fits(const KilnGpuUsage *u, int num_warps, char *why, size_t cap);
/* Checks one config the same way; fills state/detail/grid/resources. */
void tune_space_check(TuneCand *cand, KilnCompilation *c, const char *src, const KilnTune *t,
                      const TuneProblem *p, const TuneDeviceLimits *lim);
/* The same without the conditions on the call: whether the config can run here for some call
 * (an untuned library's chain of defaults, plan.h). */
void tune_space_check_any_call(TuneCand *cand, KilnCompilation *c, const char *src,
                               const KilnTune *t, const TuneProblem *p,
                               const TuneDeviceLimits *lim);
/* "BLOCK=256,num_warps=4": a config's identity in caches and records (a type parameter's value
 * as its scalar kind's number). */
void tune_config_string(const KilnTuneConfig *cfg, char *buf, size_t cap);
/* A config string (tune_config_string's, a record's) for people (notes, a library's messages):
 * the value of a type parameter of kernel k (k may be NULL) by its type's name, "T=f16". */
void tune_config_text(const char *config, const KilnKernel *k, char *buf, size_t cap);
/* FNV hash (hex) of the tune block's canonical text: its keys, its parameters with their value
 * lists, its `where` clauses (whitespace dropped) and its presets, in source order; comments and
 * layout do not change it. Part of every record's identity: records of an edited block are
 * never used for the new one. */
void tune_block_hash(const char *src, const KilnTune *t, char out[20]);
/* Whether a record's config string is one the tune block t lists today: the config of a
 * preset, or a config of its cross product that passes the `where` clauses that do not name a
 * key (those are checked per call). cfg gets the parsed config. */
bool tune_config_listed(const KilnTune *t, const char *config, KilnTuneConfig *cfg);

/* ---------------------------------------------------------------- build.c / run.c */

/* Compiles the PENDING candidates listed in idx into tmpdir with fork()ed workers, each with
 * the promises of sig (NULL: none). Those that fail become ST_FAILED with the reason. */
void tune_build(const char *path, const char *src, size_t srclen, const char *kernel,
                const TuneSig *sig, const TuneTarget *tg, TuneCand *c, const int *idx, int nidx,
                const char *tmpdir, const TuneRunOpts *o);
/* The file of a candidate's image: module_path (DIR/v<order>, TuneCand.obj_path) as an image of
 * the one bundle format for target (kiln/bundle.h: DIR/v<order>.<target>.<o|cubin>). 0, or -1
 * when it does not fit in cap. */
int tune_image_path(const char *module_path, KilnTarget target, char *buf, size_t cap);

/* ---------------------------------------------------------------- report.c */

typedef struct TuneKernelReport {
  char kernel[64];
  char file[512];
  char source_hash[20];
  char tune_hash[20]; /* of the tune block as written (before -D pins): see tune_block_hash */
  char key[256];
  char signature[192]; /* the promises every candidate was compiled with ("" for none) */
  size_t space_size;
  TuneCand *space; /* the whole space (pruned ones with reasons) */
  int nspace;
  TuneCand *cands; /* what this run considered (timed, cached, poisoned, failed) */
  int ncands;
  int winner; /* index into cands or -1 */
  int timings;
  const KilnKernel *ast; /* borrowed, may be NULL: names type pins in the table (T=f16) */
} TuneKernelReport;

typedef struct TuneReport {
  const char *mode;
  char device[256];
  TuneKernelReport *kernels;
  int nkernels;
  int timings;
} TuneReport;

void tune_report_table(const TuneReport *r, FILE *out);
/* Returns a malloc'ed JSON text, or NULL. */
char *tune_report_json(const TuneReport *r);
int tune_report_svg(const TuneReport *r, const char *path, FILE *err);
const char *tune_state_name(TuneState s);

/* ---------------------------------------------------------------- tune.c */

typedef struct TuneJob {
  const char *path, *src;
  size_t srclen;
  KilnCompilation *c;
  const KilnTune *t;
  const TuneProblem *p;
  const TuneTarget *tg;
  const TuneRunOpts *run;
  const KilnCache *cache; /* records read at start (may be NULL) */
  KilnCache *fresh;       /* records this run adds */
  bool max_mode;
  const char *tmpdir;
  FILE *log;
  TuneKernelReport *rep; /* filled */
} TuneJob;

/* The candidates of j->max_mode's mode, copied out of the space (default: the presets, else up
 * to four spread kept configs). Returns their number (array in *out, owned), -1 on memory. */
int tune_select_cands(TuneJob *j, TuneCand *space, int nspace, TuneCand **out);
/* Tunes one kernel. 0, or 2 when memory ran out. */
int tune_kernel(TuneJob *j);

/* ---------------------------------------------------------------- bundle.c / bundle_run.c */

/* `kiln tune --emit-bundle DIR`: every candidate of both modes compiled into DIR with a
 * manifest, timed later by kiln-tune-runner on a machine that cannot build the compiler. */
typedef struct TuneBundle {
  const char *dir;
  FILE *mf; /* the manifest's text, written at the end */
  char *buf;
  size_t len;
} TuneBundle;

int tune_bundle_begin(TuneBundle *b, const char *dir, KilnTarget target, const char *cpu,
                      int index_bits, FILE *err);
/* Builds and describes one kernel (j as for tune_kernel; j->max_mode is changed): the
 * candidates of both modes, or of the default mode only when default_only. 0 or 2. */
int tune_bundle_kernel(TuneBundle *b, TuneJob *j, bool default_only);
/* Writes DIR/manifest.txt atomically when `write`; frees b either way. 0 or 2. */
int tune_bundle_end(TuneBundle *b, bool write, FILE *err);

/* ---------------------------------------------------------------- pin.c */

#define TUNE_MAX_PINS 16

typedef struct TunePin {
  char name[64];
  int64_t value; /* a type parameter's: the scalar kind's number */
  bool is_type;  /* given as a type name (-D T=bf16) */
  bool used;     /* some tuned kernel has this parameter */
} TunePin;

typedef struct TunePins {
  TunePin pins[TUNE_MAX_PINS];
  int n;
} TunePins;

/* A tune block with the pins applied (owns its arrays; `tune` points into the original's AST). */
typedef struct TunePinned {
  KilnTune tune;
  KilnTuneParam *params;
  int64_t *values;
  KilnTunePreset *presets;
  KilnTuneAssign *assigns;
} TunePinned;

/* Adds "NAME=VALUE" (an integer or a type name); -1 with a message in err. */
int tune_pins_add(TunePins *p, const char *arg, char *err, size_t cap);
/* Checks the pins against kernel k (see tune_pins_apply) and marks those it has as used;
 * the number it has, or -1 with a message. */
int tune_pins_check(TunePins *p, const KilnKernel *k, char *err, size_t cap);
/* t with every pin that names one of its kernel's const parameters (or num_warps/num_stages)
 * held at its value; marks those pins used. NULL with a message when a pin gives the wrong kind
 * of value (a type for an integer const, or the reverse) or memory runs out. */
TunePinned *tune_pins_apply(TunePins *p, const KilnTune *t, char *err, size_t cap);
void tune_pinned_free(TunePinned *pt);
/* False when cfg binds a pinned name to another value (a record of another variant). */
bool tune_pins_match(const TunePins *p, const KilnTuneConfig *cfg);
/* The name of a pin no tuned kernel has, or NULL. */
const char *tune_pins_unused(const TunePins *p);

/* ---------------------------------------------------------------- libgen.c */

typedef struct LibVariant {
  char kernel[64];
  KilnTuneConfig cfg;
  int64_t keyvals[TUNE_MAX_KEYS]; /* buckets */
  double median_ms, spread_ms;    /* of the record it came from */
  TuneSig sig;                    /* its promises: calls that break one never run it */
  bool untuned;                   /* a default config: chosen only when no tuned variant fits */
  bool generic_copy;              /* a specialized winner's config compiled without promises */
} LibVariant;

typedef struct LibKernel {
  char name[64];
  char path[512];
  const char *src;
  size_t srclen;
  TuneParam params[TUNE_MAX_PARAMS];
  int nparams;
  char consts[TUNE_MAX_PARAMS][64];
  int nconsts;
  char keys[TUNE_MAX_KEYS][64];
  int keyidx[TUNE_MAX_KEYS]; /* position among params */
  int nkeys;
  TuneHarness h;        /* for the default grid rule */
  const KilnTune *tune; /* its tune block (pins applied): the conditions on the call */
  /* what a record of it carries (the cache's identity) and the run's -D pins: the library's
   * plan (NAME.plan) repeats them so that kiln-tune-runner matches records to it */
  char source_hash[20], tune_hash[20];
  const TunePins *pins;
  LibVariant *variants;
  int nvariants;
} LibKernel;

/* The GPU images of a cuda library: a cubin per arch (oldest first) unless ptx_only, plus the
 * PTX of archs[0] as the JIT fallback. */
typedef struct LibGpuArchs {
  KilnTarget archs[4];
  int narchs;
  bool ptx_only;
} LibGpuArchs;

/* libgen_call.c: the tune block's conditions on the call (`where` naming a key) as C. */
bool libgen_has_call_conditions(const LibKernel *k);
/* The checked arithmetic of the conditions and grid rules (once per library; KILN_GEN_UNUSED):
 * kiln_gen_ck(KILN_GEN_CK_<op>, a, b, bad). */
void libgen_emit_checked_ops(FILE *f);
/* Prints a `where` condition in Kiln's syntax from its tree (top: without outer parentheses). */
void libgen_print_where(FILE *f, const KilnExpr *e, bool top);
/* static int kiln_gen_fits<ki>(int v, <the dispatch parameters>, const char **why): variant v's
 * conditions on the call, the text of the first that fails in *why; params prints those
 * parameters (decl: with their types). */
void libgen_emit_fits(FILE *f, const char *L, const LibKernel *k, int ki,
                      void (*params)(FILE *, const LibKernel *, bool));
/* Whether every condition on the call reads only parameters and the config struct's fields
 * (consts, num_warps, num_stages): then rows added to the library later (NAME.tuned.h) are
 * checked as its own are; otherwise such rows never run. */
bool libgen_conditions_read_rows(const LibKernel *k);

/* libgen_names.c: names and user text in a generated library (how collisions are ruled out;
 * libgen_is_ident and libgen_c_string, which kiln-tune-runner uses too, are in util.c). */
/* Whether name may appear as itself in the header of library L (L NULL: as a library name). */
bool libgen_name_is_safe(const char *L, const char *name);
/* The name the header shows for a parameter or const: name, or kiln_<name> when not safe. */
void libgen_c_name(const char *L, const char *name, char *out, size_t cap);
/* Refuses a library name that is not safe and kernels whose public names coincide: 0, or an
 * exit code with the message on err. */
int libgen_check_names(const char *L, const LibKernel *ks, int nk, FILE *err);
/* Writes text as the inside of a C comment that it cannot end (escaped). */
void libgen_comment(FILE *f, const char *text);

/* Writes DIR/<name>.h and DIR/<name>.c (atomically) for the kernels: host shared objects for
 * `target` built for the CPU target `cpu` (linked here, so that programs using the library need
 * no C compiler; the CPU features they use are recorded and checked at load) when gpu is NULL,
 * else the GPU images gpu lists. Each kernel must have a generic variant (no
 * promises: the fallback of calls that break the others'); its variants are reordered, more
 * promises first. 0 or an exit code. */
int kiln_libgen_emit(const char *dir, const char *name, KilnTarget target, const char *cpu,
                     int index_bits, const LibGpuArchs *gpu, LibKernel *k, int nk, FILE *err);
/* Each kernel's grid rule parses and names only its integer parameters, consts, num_warps and
 * num_stages (what a call has when the library computes the grid): 0, else 1 with the axis and
 * the name on err (2: out of memory). Run before any default config is chosen, whose pruning
 * would otherwise fail on a rule that names a helper of the spec, with no word of why. */
int kiln_libgen_check_grids(const LibKernel *k, int nk, FILE *err);

/* ---------------------------------------------------------------- space.c: identities */

/* FNV hash of kernel k's text from its first line to the end of its body. */
void tune_kernel_hash(const char *src, size_t len, const KilnKernel *k, char out[20]);

/* ---------------------------------------------------------------- cli.c / flow.c */

/* The three runs of the tuner's commands, each one function of flow.c built from the same
 * steps: `kiln tune` times candidates into the cache (and may emit a library), `kiln lib`
 * turns the cache into a library without timing, `kiln tune --emit-bundle` compiles the
 * candidates for a runner elsewhere. */
typedef enum TuneFlow { TUNE_FLOW_TUNE, TUNE_FLOW_LIB, TUNE_FLOW_BUNDLE } TuneFlow;

#define TUNE_MAX_ARGS 16 /* --args options of one command line (more is a usage error) */

/* A parsed command line (cli.c); strings point into argv. */
typedef struct TuneOpts {
  TuneFlow flow;
  const char **files; /* owned array; every FILE argument */
  int nfiles;
  const char *kernel, *device, *cache, *svg, *lib_dir, *lib_name, *tuned_on, *bundle_dir, *cpu;
  const char *args[TUNE_MAX_ARGS];
  int nargs;
  bool max_mode, json, require_tuned, no_specialize, retry_poisoned;
  bool mode_given; /* --mode was on the command line (a bundle then holds that mode only) */
  LibGpuArchs gpu; /* --arch / --no-cubin */
  TunePins pins;   /* -D NAME=VALUE */
  int jobs, reps;
  int index_bits; /* --index-bits: 32 (the default) or 64 */
  double budget, timeout;
} TuneOpts;

/* Creates the folders of o's outputs (--cache of kiln tune, --report-svg, --emit-lib / -o,
 * --emit-bundle) with their parents and checks that each takes a new file, before any work.
 * 0, or 2 with the output, the folder and the reason reported. outputs.c */
int tune_prepare_outputs(const TuneOpts *o);

/* The command a flow belongs to, for messages: "tune" or "lib". */
const char *tune_flow_command(TuneFlow f);
/* The generated library's name (and symbol prefix): --lib-name, else "kernels". */
const char *tune_flow_lib_name(const TuneOpts *o);
/* Runs o->flow (marking o's pins as used); the command's exit code (every failure reported on
 * stderr). */
int tune_flow_run(TuneOpts *o);

#endif
