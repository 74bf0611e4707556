/* tune_core.h — the runtime-only tuner core (kiln_tune_core): what the tuner's runner stage
 * shares with the rest of autotune/, with no compiler header behind it.
 *
 * The core turns an argument spec into seeded inputs and grids (problem.c), times built
 * candidates in fork()ed children (run.c, probe.c), picks the winner (plan_pick.c), keeps the
 * cache's records (cache_records.c) and runs a bundle made elsewhere (bundle_run.c,
 * kiln-tune-runner). It is built where only the runtime builds (KILN_RUNTIME_ONLY: no LLVM, no
 * frontend, no cJSON), so it includes the runtime's vocabulary (kiln_base.h: targets, scalar
 * kinds, tune configs, ptxas usage) and autotune's public header, never the frontend's or the
 * driver's; internal.h adds what needs the compiler. */
#ifndef KILN_AUTOTUNE_TUNE_CORE_H
#define KILN_AUTOTUNE_TUNE_CORE_H

#include "kiln_autotune.h"
#include "kiln_base.h"

#include <kiln/kilnrt.h>

#include <stdio.h>
#include <sys/types.h>

#define TUNE_MAX_PARAMS 32
#define TUNE_MAX_KEYS   8

/* The most bytes the tuner reads from one file a user names: a Kiln source, a tuning cache,
 * a bundle manifest. Past the limit the file is refused with its name and the limit's, so
 * `kiln tune /dev/zero` or a runaway file costs at most that much memory instead of all of
 * it. Sized far above real inputs: the BERT kernels are a few KiB each, and a cache record is
 * about 400 bytes (TUNE_MAX_CACHE_BYTES holds about 600,000 of them). */
#define TUNE_MAX_SOURCE_BYTES   KILN_MAX_SOURCE_BYTES /* the one limit of every source reader */
#define TUNE_MAX_CACHE_BYTES    ((size_t)256 << 20)
#define TUNE_MAX_MANIFEST_BYTES ((size_t)64 << 20)
/* Builder workers per online CPU (--jobs): more only thrash, each worker holds a compiler. */
#define TUNE_MAX_JOBS_PER_CPU 4

/* The message for a file that could not be read whole (errno from kiln_file_read_max): names
 * the limit when the file is too large. */
void tune_report_read_error(FILE *err, const char *who, const char *what, const char *path,
                            const char *limit_name, size_t limit);

/* A line-based text file of kiln-tune-runner's (a bundle's manifest, a library's plan): the file
 * at most `max` bytes (`limit_name` names the limit), its first line `version` ("kiln-tune-bundle
 * 3"), each later line given to line(ctx, text) until one returns nonzero. *hash (when not
 * NULL) gets the FNV-1a hash of the whole file. 0, or -1 with the message on log: the file
 * unreadable or too large, another version of the format (the first word matches, the rest
 * not), another first line, or "PATH:N: not a WHAT line". */
int tune_read_versioned_lines(const char *path, size_t max, const char *limit_name,
                              const char *what, const char *version,
                              int (*line)(void *ctx, char *text), void *ctx, uint64_t *hash,
                              FILE *log);

/* ---------------------------------------------------------------- problem.c: calls and inputs */

typedef enum TuneFill { FILL_RAND, FILL_CONST, FILL_IOTA } TuneFill;

typedef struct TuneArgSpec {
  char name[64];
  bool is_buffer;
  bool has_type;
  KilnScalarKind type; /* buffers: element type when written (must match the pointee) */
  char expr[256];      /* scalar value, or the buffer's element count */
  TuneFill fill;
  double fill_a, fill_b; /* CONST: a; RAND: [a, b) */
  bool has_fill_range;
  bool if_param; /* `seed=`: binds a parameter named seed when the kernel has one */
  bool nullable; /* `x: f32[n]?`: a library call may pass NULL for this buffer */
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
 * divisible by `mod` (16, or 8 for the library's second tier). */
typedef struct TuneSigEntry {
  int param; /* index among the non-const parameters */
  bool multiple;
  int mod; /* 16 or 8 when multiple; 0 otherwise */
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
  TX_INT,
  TX_NAME,
  TX_NEG,
  TX_ADD,
  TX_SUB,
  TX_MUL,
  TX_DIV,
  TX_MOD,
  TX_CDIV,
  TX_MIN,
  TX_MAX
} TuneExprOp;

typedef struct TuneExprNode {
  TuneExprOp op;
  int64_t ival;  /* TX_INT (a literal: never negative) */
  char name[64]; /* TX_NAME: letters, digits, '_' */
  int lhs, rhs;  /* operands (node indexes; rhs -1 for TX_NEG) */
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

/* (tune_problem_init, which reads a kernel's AST, is harness.c's: internal.h) */
void tune_problem_free(TuneProblem *p);
/* Grid of one config. 0 or -1 with err (a bad expression or a size outside 1..INT32_MAX). */
int tune_problem_grid(const TuneProblem *p, const KilnTuneConfig *cfg, uint32_t grid[3], char *err,
                      size_t cap);
size_t tune_scalar_bytes(KilnScalarKind k);
/* Fills p->init[i] (p->elems[i] elements of the parameter's type) as spec a says, from the
 * stream of (seed, i). */
void tune_problem_fill(TuneProblem *p, int i, const TuneArgSpec *a, uint64_t seed);
/* Names and values of the integer scalars among the first `upto` parameters. */
int tune_problem_int_env(const TuneProblem *p, int upto, const char **names, int64_t *vals);

/* ---------------------------------------------------------------- candidates and their states */

typedef enum TuneState {
  ST_PRUNED,
  ST_PENDING, /* to be built and timed */
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
  int order; /* position in the space (presets after it) */
  KilnTuneConfig cfg;
  char config[256];
  char preset[64];
  TuneState state;
  char detail[256]; /* pruning or failure reason */
  bool from_cache;
  uint32_t grid[3];
  double resources; /* num_warps * product of consts: the tie-break */
  double *samples;  /* ms, from every timing of this run */
  int nsamples;
  double median_ms, p25_ms, p75_ms, min_ms;
  int reps;
  double compile_ms;
  int timings;        /* timing children run for it */
  char obj_path[512]; /* the built module: DIR/v<order>, a bundle image (tune_image_path) */
  KilnGpuUsage usage; /* GPU targets: ptxas -v of the built cubin */
} TuneCand;

typedef struct TuneDeviceLimits {
  int max_threads;       /* threads per program */
  size_t max_tile_bytes; /* largest single tile value one program holds */
} TuneDeviceLimits;

void tune_cands_free(TuneCand *c, int n);

/* ---------------------------------------------------------------- run.c, probe.c, util.c: timing */

typedef struct TuneTarget {
  char spec[64];       /* runtime device spec: "cpu", "emu", "cuda:0" */
  KilnTarget target;   /* compiler target for the variants */
  char cpu[32];        /* cpu/emu: the CPU target of host code ("" = "native"), part of
                           device_id so that timings of other CPU targets are not reused */
  int index_bits;      /* offsets of every variant: 32 or 64 (--index-bits; 0 reads as 32); 64
                           is part of device_id (":index_bits=64"), so that 32- and 64-bit
                           timings never mix */
  char device_id[256]; /* cache identity of the device */
  TuneDeviceLimits limits;
  size_t flush_bytes; /* GPUs: a buffer this big is overwritten before every timed run, so
                           that no kernel starts with its inputs in L2; 0 on cpu/emu */
  size_t device_mem;  /* the device's memory (probed; the host's on cpu/emu); 0: unknown
                           (a library built without opening the device) */
} TuneTarget;

/* The most bytes the buffers of one call (`--args`, a bundle's params) may take together, and
 * what sets that bound.  The tuner holds about TUNE_HOST_COPIES copies of them in host memory
 * at once (the seeded inputs; the device buffers of cpu and emu; a timing child's outputs,
 * shared with the tuner; the reference outputs), so the bound is the smallest of
 * TUNE_MAX_ARG_BYTES, the host's memory over TUNE_HOST_COPIES, and the device's memory less
 * its L2 flush buffer; KILN_DEVICE_MEMORY (bytes, K/M/G/T) stands in for the device's memory,
 * as for kiln-bert.  Checked before anything is allocated: a size past it is a user error with
 * the sizes and the bound named, not a machine out of memory. */
#define TUNE_MAX_ARG_BYTES ((size_t)16 << 30)
#define TUNE_HOST_COPIES   4
typedef struct TuneArgBudget {
  size_t bytes;
  char why[192]; /* "TUNE_MAX_ARG_BYTES (16.0 GiB)", "the device's memory ..." */
} TuneArgBudget;
/* The budget of target t (device_mem as probed, or 0). 0, or -1 with err (a bad
 * KILN_DEVICE_MEMORY). */
int tune_arg_budget(const TuneTarget *t, TuneArgBudget *b, char *err, size_t cap);
/* Whether buffer `name` of `count` elements of kind k fits beside `used` bytes of earlier
 * buffers: 0 with its bytes in *bytes, or -1 with err (count outside 1 .. 2^34, or the total
 * past b). */
int tune_arg_buffer_fits(const TuneArgBudget *b, const char *name, int64_t count, KilnScalarKind k,
                         size_t used, size_t *bytes, char *err, size_t cap);
/* The bytes of every buffer of p. */
size_t tune_problem_buffer_bytes(const TuneProblem *p);

typedef struct TuneRunOpts {
  int jobs;
  double deadline;  /* monotonic seconds; 0 = none */
  double timeout_s; /* per run of the kernel (a child's runs each get it afresh) */
  int reps;         /* samples per child in the first pass */
  bool progress;
  FILE *log;           /* progress and notes (stderr) */
  bool retry_poisoned; /* time configs that crashed or hung before (--retry-poisoned) */
} TuneRunOpts;

double tune_now(void);
/* The default time limit of one run of a kernel on the device spec ("cpu", "emu", "cuda:0"):
 * scaled to how slow the device is, since a limit that fits a GPU kills correct variants on
 * the GPU emulator (about 1000 times slower): cuda 10 s, cpu 30 s, emu 300 s. */
double tune_default_timeout(const char *device_spec);
/* First thing in every child the tuner forks (builder workers, timing children, the probe): the
 * child is killed when the tuner dies, so a killed `kiln tune` leaves no spinning child behind;
 * it exits at once when the tuner is already gone. `parent` is getpid() before the fork. */
void tune_child_dies_with_parent(pid_t parent);
/* Probes the device in a child; fills t->device_id and limits. 0 or -1 with err. */
int tune_target_probe(TuneTarget *t, char *err, size_t cap);
/* The suffix a device identity of 64-bit variants carries (":index_bits=64"); 32-bit ones have
 * none, so caches from before --index-bits keep their meaning. */
#define TUNE_INDEX_BITS_64_ID ":index_bits=64"
/* Times the PENDING built candidates idx (ref: a candidate used only as the correctness
 * reference, or -1). Returns the number of timing children run. */
int tune_run(const TuneTarget *tg, const char *kernel, const TuneProblem *p, TuneCand *c,
             const int *idx, int nidx, int ref, const TuneRunOpts *o);

/* ---------------------------------------------------------------- plan_pick.c */

/* The tie-break's measure of a config: num_warps times every positive const other than
 * num_stages (block sizes), so that of two equally fast configs the smaller one wins. */
double tune_plan_resources(const KilnTuneConfig *cfg);
/* The winner among the ST_OK candidates: the smallest median; the candidates whose median is
 * within the noise of the fastest (2% of its median, or its p25..p75 spread when larger) tie,
 * and the tie goes to fewer resources, then to the earlier order. -1 when none is OK. */
int tune_plan_pick_winner(const TuneCand *c, int n);

/* ---------------------------------------------------------------- bundle_run.c */

/* The runner's command line (argv without the program name); an exit code. */
int tune_bundle_run_command(int argc, char **argv);

/* ---------------------------------------------------------------- cache_records.c */

/* The record a candidate's outcome leaves: false for what is not cached (builds and runtime
 * errors, results read from the cache). compiler: the identity of the compiler that built the
 * candidate (kiln_tune_compiler_id(), or a bundle's). */
bool tune_record_from_cand(const TuneCand *c, const char *kernel, const char *hash,
                           const char *tune_hash, const char *key, const char *device,
                           const char *compiler, KilnCacheRecord *r);
/* The cache file's text (malloc'ed; NULL when memory runs out). */
char *tune_cache_to_text(const KilnCache *c);
/* Writes c to path atomically, replacing the file (no lock, no merge). 0 or -1 (reported). */
int tune_cache_write(const char *path, const KilnCache *c, FILE *err);
void tune_json_string(FILE *f, const char *s);
void tune_json_number(FILE *f, double v);

/* ---------------------------------------------------------------- util.c */

uint64_t tune_fnv1a(const void *data, size_t n);

/* ---------------------------------------------------------------- sig.c */

/* The signature of a call with integer arguments ival (Triton's rule: an integer parameter
 * equal to 1 is specialized to 1, one divisible by 16 promised to be). Promises whose text would
 * not fit in `room` characters are left out (fewer promises are always correct). */
void tune_sig_compute(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                      TuneSig *s);
/* The same with divisibility by `mod` (8 or 16) promised instead of 16: the second tier of an
 * untuned library (flow.c), "cols%8", which keeps 16-byte vectors of 2-byte elements for rows
 * whose length is a multiple of 8 but not of 16. */
void tune_sig_compute_mod(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                          int mod, TuneSig *s);
/* The promises of one further layout of a library (a second --args of a kernel): per integer
 * argument the strongest it keeps, =1, else %16, else %8, in one signature. */
void tune_sig_compute_layout(const TuneParam *params, const int64_t *ival, int nparams, size_t room,
                             TuneSig *s);
/* Reads a signature's text back against the kernel's parameters. false (s empty) when an item
 * is malformed or names no integer parameter: a record that cannot be checked is not used. */
bool tune_sig_parse(const char *text, const TuneParam *params, int nparams, TuneSig *s);
/* Whether a call with these argument values keeps every promise of s (the generated library
 * makes the same check in C). */
bool tune_sig_holds(const TuneSig *s, const int64_t *ival);
/* The signature part of a record key ("" for a generic record). */
const char *tune_sig_of_key(const char *key);
/* Computes p->sig from p's argument values and sets p->record_key. Without it a problem is
 * generic (record_key == key). */
void tune_problem_specialize(TuneProblem *p);
/* Whether variant signature a goes before b in a library's table (more promises first; of as
 * many, more %16 over %8): on equal distance the call that keeps them runs the most
 * specialized code. */
bool tune_sig_before(const TuneSig *a, const TuneSig *b);
/* The bucket of key `name` in a record key ("M=4096,N=1024|sak=1"), 0 when it has none. */
int64_t tune_key_value(const char *record_key, const char *name);

/* ---------------------------------------------------------------- bundle_lib.c: rows for
 * libraries made elsewhere (kiln-tune-runner --tuned-libs) */

/* A candidate a runner timed, as much of it as a library row needs once its bundle is gone. */
typedef struct TuneTunedCand {
  char kernel[64], hash[20], tune_hash[20];
  char key[256];    /* the record key it was timed at (buckets|promises) */
  char config[256]; /* as in its record */
  char module[512]; /* its bundle module, DIR/v<order> */
  char cpu[32];     /* the bundle's CPU target (host images) */
  int order;        /* the tie-break's: place in the space, resources */
  double resources;
} TuneTunedCand;

typedef struct TuneTunedCands {
  TuneTunedCand *c;
  size_t n, cap;
} TuneTunedCands;

/* Keeps candidate c of a bundle kernel (its identity, record key and the bundle's CPU target).
 * 0, or -1 on memory failure. */
int tune_tuned_cands_add(TuneTunedCands *all, const char *kernel, const char *hash,
                         const char *tune_hash, const char *key, const char *cpu,
                         const TuneCand *c);
void tune_tuned_cands_free(TuneTunedCands *all);
/* For every library of dir whose plan (NAME.plan, written by `kiln lib`) is for this device
 * kind: per kernel and record key the winner among `records` (this run's, timed as `cands`),
 * written as NAME.tuned.h rows beside NAME.c, their images read from the bundle; a library with
 * no winner is left as it is. `device` (the device identity) goes into the rows' descriptions.
 * 0, 1 (a plan or bundle that cannot be read) or 2 (memory, a file not written); messages and
 * a line per library on log. */
int tune_tuned_libs_write(const char *dir, const KilnCache *records, const TuneTunedCands *cands,
                          KilnRtDeviceKind kind, const char *device, FILE *log);

/* ---------------------------------------------------------------- util.c: generated C text */

/* Whether s is a C identifier ([A-Za-z_][A-Za-z0-9_]*). */
bool libgen_is_ident(const char *s);
/* Writes text as a C string literal (quotes included; escaped). */
void libgen_c_string(FILE *f, const char *text);

#endif /* KILN_AUTOTUNE_TUNE_CORE_H */
