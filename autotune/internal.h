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

#include "kiln_autotune.h"
#include "kiln_driver.h"
#include "kiln_frontend.h"

#include <sys/types.h>

#define TUNE_MAX_PARAMS 32
#define TUNE_MAX_KEYS 8

/* The most bytes the tuner reads from one file a user names: a Kiln source, a tuning cache,
 * a bundle manifest. Past the limit the file is refused with its name and the limit's, so
 * `kiln tune /dev/zero` or a runaway file costs at most that much memory instead of all of
 * it. Sized far above real inputs: the BERT kernels are a few KiB each, and a cache record is
 * about 400 bytes (TUNE_MAX_CACHE_BYTES holds about 600,000 of them). */
#define TUNE_MAX_SOURCE_BYTES ((size_t)64 << 20)
#define TUNE_MAX_CACHE_BYTES ((size_t)256 << 20)
#define TUNE_MAX_MANIFEST_BYTES ((size_t)64 << 20)
/* Builder workers per online CPU (--jobs): more only thrash, each worker holds a compiler. */
#define TUNE_MAX_JOBS_PER_CPU 4

/* The message for a file that could not be read whole (errno from kiln_file_read_max): names
 * the limit when the file is too large. */
void tune_report_read_error(FILE *err, const char *who, const char *what, const char *path,
                            const char *limit_name, size_t limit);

/* ---------------------------------------------------------------- harness.c */

typedef enum TuneFill { FILL_RAND, FILL_CONST, FILL_IOTA } TuneFill;

typedef struct TuneArgSpec {
  char name[64];
  bool is_buffer;
  bool has_type;
  KilnScalarKind type;  /* buffers: element type when written (must match the pointee) */
  char expr[256];       /* scalar value, or the buffer's element count */
  TuneFill fill;
  double fill_a, fill_b; /* CONST: a; RAND: [a, b) */
  bool has_fill_range;
  bool if_param;         /* `seed=`: binds a parameter named seed when the kernel has one */
} TuneArgSpec;

/* One `--args` spec (or `// kiln-tune-args:` line): how to call one kernel. */
typedef struct TuneHarness {
  char kernel[64]; /* "" applies to any kernel */
  TuneArgSpec args[TUNE_MAX_PARAMS];
  int nargs;
  char grid[3][256];
  int ngrid;
  uint64_t seed;
} TuneHarness;

typedef struct TuneParam {
  char name[64];
  bool is_ptr;
  KilnScalarKind scalar; /* value type, or pointee */
} TuneParam;

/* One promise of a specialization signature: parameter `param` equals 1, or (multiple) is
 * divisible by 16. */
typedef struct TuneSigEntry {
  int param;      /* index among the non-const parameters */
  bool multiple;
  char name[64];
} TuneSigEntry;

/* The promises a variant is compiled with (sig.c). n == 0: a generic variant. */
typedef struct TuneSig {
  TuneSigEntry e[TUNE_MAX_PARAMS];
  int n;
  char text[192]; /* "sak=1,sbn=1,M%16", in parameter order; "" for none */
} TuneSig;

/* A harness resolved against a kernel: the argument values every child uses. */
typedef struct TuneProblem {
  TuneParam params[TUNE_MAX_PARAMS]; /* non-const params, in order */
  int nparams;
  int64_t ival[TUNE_MAX_PARAMS];
  double fval[TUNE_MAX_PARAMS];
  size_t elems[TUNE_MAX_PARAMS];
  size_t bytes[TUNE_MAX_PARAMS]; /* buffer bytes (0 for scalars) */
  void *init[TUNE_MAX_PARAMS];   /* seeded initial contents (owned) */
  char key[256];                 /* "n=1048576" */
  TuneSig sig;                   /* promises the variants are compiled with (none by default) */
  char record_key[256];          /* key of the cache records: key, then "|" and sig.text if any */
  const TuneHarness *h;
} TuneProblem;

/* An integer expression of a harness (a size, a grid axis) as a tree: what kiln_tune_expr_eval
 * evaluates and what a generated library prints as C (only from the tree, never the text). */
typedef enum TuneExprOp {
  TX_INT, TX_NAME, TX_NEG, TX_ADD, TX_SUB, TX_MUL, TX_DIV, TX_MOD, TX_CDIV, TX_MIN, TX_MAX
} TuneExprOp;

typedef struct TuneExprNode {
  TuneExprOp op;
  int64_t ival;   /* TX_INT (a literal: never negative) */
  char name[64];  /* TX_NAME: letters, digits, '_' */
  int lhs, rhs;   /* operands (node indexes; rhs -1 for TX_NEG) */
} TuneExprNode;

#define TUNE_EXPR_MAX_NODES 256
#define TUNE_EXPR_MAX_DEPTH 64

typedef struct TuneExpr {
  TuneExprNode n[TUNE_EXPR_MAX_NODES];
  int count, root;
} TuneExpr;

/* Parses text (the grammar of kiln_tune_expr_eval; functions cdiv, min, max only). 0, or -1
 * with the reason in err: a syntax error, an unknown function, a name of 64 or more
 * characters, more than TUNE_EXPR_MAX_NODES nodes or TUNE_EXPR_MAX_DEPTH nested primaries. */
int tune_expr_parse(const char *text, TuneExpr *e, char *err, size_t cap);
/* Evaluates a parsed expression as kiln_tune_expr_eval does. */
bool tune_expr_eval(const TuneExpr *e, const char *const *names, const int64_t *values, int n,
                    int64_t *out, char *err, size_t errcap);
/* Prints e in the harness syntax, parenthesized where needed (never "--": "- -n"); what it
 * prints parses to the same tree. */
void tune_expr_print(const TuneExpr *e, FILE *f);

int tune_harness_parse(const char *spec, TuneHarness *h, char *err, size_t cap);
/* Fills p from h for kernel k (unchecked AST: parameter annotations). 0 or -1 with err. */
int tune_problem_init(TuneProblem *p, const TuneHarness *h, const KilnKernel *k,
                      const KilnTune *t, char *err, size_t cap);
void tune_problem_free(TuneProblem *p);
/* Grid of one config. 0 or -1 with err (a bad expression or a size outside 1..INT32_MAX). */
int tune_problem_grid(const TuneProblem *p, const KilnTuneConfig *cfg, uint32_t grid[3],
                      char *err, size_t cap);
/* problem.c (shared with the runtime-only bundle runner) */
size_t tune_scalar_bytes(KilnScalarKind k);
/* Fills p->init[i] (p->elems[i] elements of the parameter's type) as spec a says, from the
 * stream of (seed, i). */
void tune_problem_fill(TuneProblem *p, int i, const TuneArgSpec *a, uint64_t seed);
/* Names and values of the integer scalars among the first `upto` parameters. */
int tune_problem_int_env(const TuneProblem *p, int upto, const char **names, int64_t *vals);

/* ---------------------------------------------------------------- sig.c */

/* The signature of a call with integer arguments ival (Triton's rule: an integer parameter
 * equal to 1 is specialized to 1, one divisible by 16 promised to be). Promises whose text would
 * not fit in `room` characters are left out (fewer promises are always correct). */
void tune_sig_compute(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                      TuneSig *s);
/* Reads a signature's text back against the kernel's parameters. false (s empty) when an item
 * is malformed or names no integer parameter: a record that cannot be checked is not used. */
bool tune_sig_parse(const char *text, const TuneParam *params, int nparams, TuneSig *s);
/* Whether a call with these argument values keeps every promise of s (the generated library
 * makes the same check in C). */
bool tune_sig_holds(const TuneSig *s, const int64_t *ival);
/* The driver's option lists for s (arrays of TUNE_MAX_PARAMS; names point into s). */
void tune_sig_defines(const TuneSig *s, KilnDefine *spec, size_t *nspec, KilnDefine *mult,
                      size_t *nmult);
/* The signature part of a record key ("" for a generic record). */
const char *tune_sig_of_key(const char *key);
/* Computes p->sig from p's argument values and sets p->record_key. Without it a problem is
 * generic (record_key == key). */
void tune_problem_specialize(TuneProblem *p);

/* ---------------------------------------------------------------- space.c */

typedef enum TuneState {
  ST_PRUNED,
  ST_PENDING,  /* to be built and timed */
  ST_OK,
  ST_CRASH,
  ST_HANG,
  ST_MISMATCH,
  ST_FAILED,   /* build or runtime error */
  ST_POISONED, /* crashed or hung before on this device + compiler: not retried */
  ST_BUDGET,   /* not timed: the --budget ran out */
  ST_COUNT
} TuneState;

typedef struct TuneCand {
  int order;              /* position in the space (presets after it) */
  KilnTuneConfig cfg;
  char config[256];
  char preset[64];
  TuneState state;
  char detail[256];       /* pruning or failure reason */
  bool from_cache;
  uint32_t grid[3];
  double resources;       /* num_warps * product of consts: the tie-break */
  double *samples;        /* ms, from every timing of this run */
  int nsamples;
  double median_ms, p25_ms, p75_ms, min_ms;
  int reps;
  double compile_ms;
  int timings;            /* timing children run for it */
  char obj_path[512];     /* built object */
  KilnGpuUsage usage;     /* GPU targets: ptxas -v of the built cubin */
} TuneCand;

typedef struct TuneDeviceLimits {
  int max_threads;        /* threads per program */
  size_t max_tile_bytes;  /* largest single tile value one program holds */
} TuneDeviceLimits;

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
void tune_config_string(const KilnTuneConfig *cfg, char *buf, size_t cap);
/* FNV hash (hex) of the tune block's canonical text: its keys, its parameters with their value
 * lists, its `where` clauses (whitespace dropped) and its presets, in source order; comments and
 * layout do not change it. Part of every record's identity: records of an edited block are
 * never used for the new one. */
void tune_block_hash(const char *src, const KilnTune *t, char out[20]);
/* Whether a record's config string is one the tune block t lists today: the config of a
 * preset, or a config of its cross product that passes the `where` clauses that do not name a
 * key (those are checked per call). cfg gets the parsed config. */
bool tune_config_listed(const KilnTune *t, const char *config, KilnTuneConfig *cfg);
void tune_cands_free(TuneCand *c, int n);

/* ---------------------------------------------------------------- build.c / run.c */

typedef struct TuneTarget {
  char spec[64];        /* runtime device spec: "cpu", "emu", "cuda:0" */
  KilnTarget target;    /* compiler target for the variants */
  char cpu[32];         /* cpu/emu: the CPU target of host code ("" = "native"), part of
                           device_id so that timings of other CPU targets are not reused */
  char device_id[256];  /* cache identity of the device */
  TuneDeviceLimits limits;
  size_t flush_bytes;   /* GPUs: a buffer this big is overwritten before every timed run, so
                           that no kernel starts with its inputs in L2; 0 on cpu/emu */
} TuneTarget;

typedef struct TuneRunOpts {
  int jobs;
  double deadline;      /* monotonic seconds; 0 = none */
  double timeout_s;     /* per child */
  int reps;             /* samples per child in the first pass */
  bool progress;
  FILE *log;            /* progress and notes (stderr) */
} TuneRunOpts;

double tune_now(void);
/* First thing in every child the tuner forks (builder workers, timing children, the probe): the
 * child is killed when the tuner dies, so a killed `kiln tune` leaves no spinning child behind;
 * it exits at once when the tuner is already gone. `parent` is getpid() before the fork. */
void tune_child_dies_with_parent(pid_t parent);
/* Probes the device in a child; fills t->device_id and limits. 0 or -1 with err. */
int tune_target_probe(TuneTarget *t, char *err, size_t cap);
/* Compiles the PENDING candidates listed in idx into tmpdir with fork()ed workers, each with
 * the promises of sig (NULL: none). Those that fail become ST_FAILED with the reason. */
void tune_build(const char *path, const char *src, size_t srclen, const char *kernel,
                const TuneSig *sig, const TuneTarget *tg, TuneCand *c, const int *idx, int nidx,
                const char *tmpdir, const TuneRunOpts *o);
/* Times the PENDING built candidates idx (ref: a candidate used only as the correctness
 * reference, or -1). Returns the number of timing children run. */
int tune_run(const TuneTarget *tg, const char *kernel, const TuneProblem *p, TuneCand *c,
             const int *idx, int nidx, int ref, const TuneRunOpts *o);
/* (the winner among timed candidates: tune_plan_pick_winner, plan.h) */

/* ---------------------------------------------------------------- report.c */

typedef struct TuneKernelReport {
  char kernel[64];
  char file[512];
  char source_hash[20];
  char tune_hash[20];  /* of the tune block as written (before -D pins): see tune_block_hash */
  char key[256];
  char signature[192]; /* the promises every candidate was compiled with ("" for none) */
  size_t space_size;
  TuneCand *space;  /* the whole space (pruned ones with reasons) */
  int nspace;
  TuneCand *cands;  /* what this run considered (timed, cached, poisoned, failed) */
  int ncands;
  int winner;       /* index into cands or -1 */
  int timings;
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
  TuneKernelReport *rep;  /* filled */
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
                      FILE *err);
/* Builds and describes one kernel (j as for tune_kernel; j->max_mode is changed). 0 or 2. */
int tune_bundle_kernel(TuneBundle *b, TuneJob *j);
/* Writes DIR/manifest.txt atomically when `write`; frees b either way. 0 or 2. */
int tune_bundle_end(TuneBundle *b, bool write, FILE *err);
/* The runner's command line (argv without the program name); an exit code. */
int tune_bundle_run_command(int argc, char **argv);

/* ---------------------------------------------------------------- pin.c */

#define TUNE_MAX_PINS 16

typedef struct TunePin {
  char name[64];
  int64_t value;  /* a type parameter's: the scalar kind's number */
  bool is_type;   /* given as a type name (-D T=bf16) */
  bool used;      /* some tuned kernel has this parameter */
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
  TuneHarness h;             /* for the default grid rule */
  const KilnTune *tune;      /* its tune block (pins applied): the conditions on the call */
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
void libgen_emit_fits(FILE *f, const LibKernel *k, int ki,
                      void (*params)(FILE *, const LibKernel *, bool));

/* libgen_names.c: names and user text in a generated library (how collisions are ruled out). */
bool libgen_is_ident(const char *s);
/* Whether name may appear as itself in the header of library L (L NULL: as a library name). */
bool libgen_name_is_safe(const char *L, const char *name);
/* The name the header shows for a parameter or const: name, or kiln_<name> when not safe. */
void libgen_c_name(const char *L, const char *name, char *out, size_t cap);
/* Refuses a library name that is not safe and kernels whose public names coincide: 0, or an
 * exit code with the message on err. */
int libgen_check_names(const char *L, const LibKernel *ks, int nk, FILE *err);
/* Writes text as the inside of a C comment that it cannot end (escaped). */
void libgen_comment(FILE *f, const char *text);
/* Writes text as a C string literal (quotes included; escaped). */
void libgen_c_string(FILE *f, const char *text);

/* Writes DIR/<name>.h and DIR/<name>.c (atomically) for the kernels: host shared objects for
 * `target` built for the CPU target `cpu` (linked here, so that programs using the library need
 * no C compiler; the CPU features they use are recorded and checked at load) when gpu is NULL,
 * else the GPU images gpu lists. Each kernel must have a generic variant (no
 * promises: the fallback of calls that break the others'); its variants are reordered, more
 * promises first. 0 or an exit code. */
int kiln_libgen_emit(const char *dir, const char *name, KilnTarget target, const char *cpu,
                     const LibGpuArchs *gpu, LibKernel *k, int nk, FILE *err);

/* ---------------------------------------------------------------- cache_records.c */

/* The record a candidate's outcome leaves: false for what is not cached (builds and runtime
 * errors, results read from the cache). */
bool tune_record_from_cand(const TuneCand *c, const char *kernel, const char *hash,
                           const char *tune_hash, const char *key, const char *device,
                           KilnCacheRecord *r);
/* The cache file's text (malloc'ed; NULL when memory runs out). */
char *tune_cache_to_text(const KilnCache *c);
/* Writes c to path atomically, replacing the file (no lock, no merge). 0 or -1 (reported). */
int tune_cache_write(const char *path, const KilnCache *c, FILE *err);
void tune_json_string(FILE *f, const char *s);
void tune_json_number(FILE *f, double v);

/* ---------------------------------------------------------------- util */

uint64_t tune_fnv1a(const void *data, size_t n);
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
  bool max_mode, json, require_tuned, no_specialize;
  LibGpuArchs gpu; /* --arch / --no-cubin */
  TunePins pins;   /* -D NAME=VALUE */
  int jobs, reps;
  double budget, timeout;
} TuneOpts;

/* The command a flow belongs to, for messages: "tune" or "lib". */
const char *tune_flow_command(TuneFlow f);
/* The generated library's name (and symbol prefix): --lib-name, else "kernels". */
const char *tune_flow_lib_name(const TuneOpts *o);
/* Runs o->flow (marking o's pins as used); the command's exit code (every failure reported on
 * stderr). */
int tune_flow_run(TuneOpts *o);

#endif
