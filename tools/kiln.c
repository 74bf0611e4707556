/* kiln.c — the `kiln` command: one binary, a subcommand per job.
 *
 * Exit codes (also in docs/cli.md): 0 success; 1 the input is wrong (diagnostics printed);
 * 2 the environment failed (I/O, LLVM, a missing tool); 64 the command line is wrong. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln_driver.h"
#include "kiln_frontend.h"
#include "kiln_gpu.h"
#include "ptx_stat.h"
#ifdef KILN_HAVE_AUTOTUNE
#include "kiln_autotune.h"
#endif

enum { EXIT_USAGE = 64 };

static const char *const usage_main =
    "usage: kiln <command> [options]\n"
    "\n"
    "Kiln compiles block-level GPU kernels written in the Kiln language (.kiln files).\n"
    "\n"
    "commands:\n"
    "  compile FILE --kernel NAME   compile one kernel to AST, MLIR, LLVM IR or an object\n"
    "  check FILE...                parse and type-check every kernel; diagnostics only\n"
    "  tune FILE...                 time each kernel's tune configs on a device; cache winners\n"
    "  lib FILE... --cache C -o D   generate a C kernel library from the cached winners\n"
    "  stat FILE --kernel NAME      static performance report of a kernel's PTX (sm_90/sm_80)\n"
    "  help [COMMAND]               show help for a command\n"
    "\n"
    "options:\n"
    "  -h, --help                   show this help\n"
    "  --version                    print the version\n"
    "\n"
    "exit codes: 0 success, 1 errors in the input, 2 environment or internal failure,\n"
    "64 bad command line.\n";

static const char *const usage_compile =
    "usage: kiln compile FILE --kernel NAME [options]\n"
    "\n"
    "Compiles kernel NAME of FILE. Const parameters are bound with -D; those not given take\n"
    "their first value from the kernel's tune block.\n"
    "\n"
    "options:\n"
    "  -k, --kernel NAME            the kernel to compile (required)\n"
    "  -D NAME=VALUE                bind a const parameter (repeatable); also num_warps,\n"
    "                               num_stages, min_blocks (GPU blocks per SM promised to\n"
    "                               ptxas: .minnctapersm), wgmma (1: warpgroup MMA on\n"
    "                               sm_90); a type parameter takes a type (-D T=bf16)\n"
    "  --specialize NAME=VALUE      compile the runtime integer parameter NAME as the constant\n"
    "                               VALUE (repeatable; the caller must pass that value); a\n"
    "                               unit stride lets loads vectorize and use cp.async\n"
    "  --multiple-of NAME=N         promise that runtime integer parameter NAME is a multiple\n"
    "                               of N (repeatable), like multiple_of(NAME, N) in the source\n"
    "  --target T                   cpu (default), emu, sm_80, sm_90\n"
    "  --emit E                     ast, mlir (kiln dialect, default), lowered-mlir, llvm,\n"
    "                               obj (cpu); gpu-mlir (with layouts), ptx, cubin (sm_80/sm_90)\n"
    "  --cpu CPU                    CPU target of host code (cpu, emu): native (default: this\n"
    "                               machine, fastest), or a portable baseline: generic,\n"
    "                               x86-64-v2, x86-64-v3, x86-64-v4 (x86-64)\n"
    "  --num-warps N                warps per program (GPU targets; default 4)\n"
    "  --num-stages N               software pipelining stages (GPU targets; default 2)\n"
    "  --index-bits 32|64           width of pointer offsets (default 32: each pointer argument\n"
    "                               must reach fewer than 2^31 elements; 64 for larger buffers)\n"
    "  --dump-after STAGE           print the IR after a pipeline stage (or 'all') to stderr\n"
    "  --time-passes[=json]         print the wall and CPU time of each step (parse, sema,\n"
    "                               mlirgen, every pipeline stage, LLVM, ptxas) to stderr,\n"
    "                               as a table or one JSON object\n"
    "  -o FILE                      write the output to FILE (atomically); default: stdout,\n"
    "                               or NAME.o / NAME.cubin for --emit obj / cubin\n"
    "  -h, --help                   show this help\n";

static const char *const usage_check =
    "usage: kiln check FILE... [-D NAME=VALUE]... [--target cpu|emu|sm_80|sm_90]\n"
    "\n"
    "Parses and type-checks every kernel and tune block of each FILE, binding const parameters\n"
    "from the first configuration of each tune block. Prints diagnostics; exit code 1 if any\n"
    "file has errors.\n"
    "\n"
    "options:\n"
    "  --target T                   also compile every kernel for T (PTX for sm_80/sm_90, no\n"
    "                               ptxas): what T cannot compile (a GPU tile that is not a\n"
    "                               power of two, a non-splat tile constant) is an error at its\n"
    "                               place in the source\n"
    "  -D NAME=VALUE                bind a const parameter (repeatable) in every kernel that\n"
    "                               has one, over its tune block's value; also num_warps,\n"
    "                               num_stages, min_blocks, wgmma; a type parameter takes a\n"
    "                               type (-D T=bf16);\n"
    "                               a NAME no kernel has is an error\n"
    "  -h, --help                   show this help\n";

static const char *const usage_stat =
    "usage: kiln stat FILE.kiln --kernel NAME [compile options] [stat options]\n"
    "       kiln stat FILE.ptx [stat options]\n"
    "\n"
    "Compiles the kernel to PTX (as 'kiln compile --emit ptx', default --target sm_90), runs\n"
    "ptxas -v on it (KILN_PTXAS, else ptxas on PATH; without it the report has no registers\n"
    "or spills) and reports per kernel and per loop: bar.sync, shared loads/stores, ldmatrix,\n"
    "cp.async, mma count and share of instructions, FMAs, global access widths, registers,\n"
    "spills, static/dynamic shared memory, occupancy, and with --flops/--bytes a roofline\n"
    "bound (device numbers: docs/gpu-lowering.md). Counts are static (instructions in the\n"
    "text, not executed).\n"
    "\n"
    "options (besides those of 'kiln compile'):\n"
    "  --json                       JSON instead of text\n"
    "  --flops N, --bytes N         the work of one call (floating-point ops, HBM bytes)\n"
    "  --tensor                     the flops are tensor-core ops (f16/bf16 dots)\n"
    "  --dyn-smem N                 dynamic shared bytes of the launch (PTX input)\n"
    "  -o FILE                      write the report to FILE (atomically)\n";

static int parse_int(const char *s, long long lo, long long hi, long long *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 0);
  if (errno || !end || *end || end == s || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

typedef struct CompileArgs {
  const char *file, *kernel, *target, *emit, *out, *dump_after, *cpu;
  KilnDefine defines[64];
  size_t ndefines;
  KilnDefine specialize[64], multiple_of[64];
  size_t nspecialize, nmultiple_of;
  int num_warps, num_stages, index_bits;
  enum { TIME_OFF, TIME_TABLE, TIME_JSON } time_passes;
} CompileArgs;

static int usage_error(const char *cmd, const char *fmt, const char *what) {
  fprintf(stderr, "kiln%s%s: ", cmd ? " " : "", cmd ? cmd : "");
  fprintf(stderr, fmt, what);
  if (cmd)
    fprintf(stderr, "\n(see 'kiln help %s')\n", cmd);
  else
    fputs("\n(see 'kiln --help')\n", stderr);
  return EXIT_USAGE;
}

/* Takes the value of an option: "--opt=value" or "--opt value". */
static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) == 0 && a[n] == '=') return a + n + 1;
  if (strcmp(a, name) == 0 && *i + 1 < argc) return argv[++*i];
  return NULL;
}

/* NAME=INTEGER into list[*n] (at most 64); `opt` names the option in messages. */
static int parse_binding(const char *cmd, const char *opt, const char *d, KilnDefine *list,
                         size_t *n) {
  const char *eq = strchr(d, '=');
  long long v;
  KilnScalarKind sk; /* a type parameter's value: -D T=bf16 */
  if (eq && kiln_scalar_from_name(eq + 1, &sk))
    v = (long long)sk;
  else if (!eq || eq == d || parse_int(eq + 1, INT64_MIN, INT64_MAX, &v) != 0) {
    fprintf(stderr,
            "kiln %s: %s expects NAME=INTEGER or NAME=TYPE, got '%s'\n(see 'kiln help %s')\n", cmd,
            opt, d, cmd);
    return EXIT_USAGE;
  }
  if (*n >= 64) {
    fprintf(stderr, "kiln %s: too many %s options (at most 64)\n", cmd, opt);
    return EXIT_USAGE;
  }
  char *name = strndup(d, (size_t)(eq - d));
  if (!name) return 2;
  list[(*n)++] = (KilnDefine){name, (int64_t)v};
  return 0;
}

static int parse_define(CompileArgs *ca, const char *d) {
  return parse_binding("compile", "-D", d, ca->defines, &ca->ndefines);
}

static int parse_compile_args(int argc, char **argv, CompileArgs *ca) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    long long n;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage_compile, stdout);
      return -1;
    } else if ((v = opt_value(argc, argv, &i, "--kernel")) ||
               (v = opt_value(argc, argv, &i, "-k"))) {
      ca->kernel = v;
    } else if ((v = opt_value(argc, argv, &i, "--target"))) {
      ca->target = v;
    } else if ((v = opt_value(argc, argv, &i, "--emit"))) {
      ca->emit = v;
    } else if ((v = opt_value(argc, argv, &i, "--cpu"))) {
      ca->cpu = v;
    } else if ((v = opt_value(argc, argv, &i, "--dump-after"))) {
      ca->dump_after = v;
    } else if (!strcmp(a, "--time-passes") || !strcmp(a, "--time-passes=text")) {
      ca->time_passes = TIME_TABLE;
    } else if (!strcmp(a, "--time-passes=json")) {
      ca->time_passes = TIME_JSON;
    } else if (!strncmp(a, "--time-passes=", 14)) {
      return usage_error("compile", "--time-passes takes =text or =json, got '%s'", a);
    } else if ((v = opt_value(argc, argv, &i, "-o"))) {
      ca->out = v;
    } else if ((v = opt_value(argc, argv, &i, "--num-warps"))) {
      if (parse_int(v, 1, 32, &n))
        return usage_error("compile", "--num-warps expects 1..32, got '%s'", v);
      ca->num_warps = (int)n;
    } else if ((v = opt_value(argc, argv, &i, "--num-stages"))) {
      if (parse_int(v, 1, 8, &n))
        return usage_error("compile", "--num-stages expects 1..8, got '%s'", v);
      ca->num_stages = (int)n;
    } else if ((v = opt_value(argc, argv, &i, "--index-bits"))) {
      if (parse_int(v, 32, 64, &n) || (n != 32 && n != 64))
        return usage_error("compile", "--index-bits expects 32 or 64, got '%s'", v);
      ca->index_bits = (int)n;
    } else if ((v = opt_value(argc, argv, &i, "--specialize"))) {
      int r = parse_binding("compile", "--specialize", v, ca->specialize, &ca->nspecialize);
      if (r) return r;
    } else if ((v = opt_value(argc, argv, &i, "--multiple-of"))) {
      int r = parse_binding("compile", "--multiple-of", v, ca->multiple_of, &ca->nmultiple_of);
      if (r) return r;
    } else if (!strcmp(a, "-D") && i + 1 < argc) {
      int r = parse_define(ca, argv[++i]);
      if (r) return r;
    } else if (!strncmp(a, "-D", 2) && a[2]) {
      int r = parse_define(ca, a + 2);
      if (r) return r;
    } else if (a[0] == '-' && a[1]) {
      return usage_error("compile", "unknown or incomplete option '%s'", a);
    } else if (!ca->file) {
      ca->file = a;
    } else {
      return usage_error("compile", "more than one input file ('%s')", a);
    }
  }
  if (!ca->file) return usage_error("compile", "%s", "no input file");
  if (!ca->kernel) return usage_error("compile", "%s", "--kernel NAME is required");
  return 0;
}

/* --time-passes: the steps of one compilation, to stderr (also after a failure: the steps
 * that ran). */
static void print_times(const CompileArgs *ca, const KilnTimes *t, const char *target,
                        const char *emit) {
  if (!ca->time_passes) return;
  char title[512];
  snprintf(title, sizeof title, "%s %s %s", ca->kernel, target, emit);
  if (ca->time_passes == TIME_JSON)
    kiln_times_print_json(t, title, stderr);
  else
    kiln_times_print(t, title, stderr);
}

/* The driver's options from the parsed command line (kiln compile and kiln stat); the step
 * times go to *times when --time-passes was given. */
static KilnCompileOptions compile_options(const CompileArgs *ca, KilnTarget target,
                                          KilnTimes *times) {
  return (KilnCompileOptions){.path = ca->file,
                              .kernel = ca->kernel,
                              .defines = ca->defines,
                              .num_defines = ca->ndefines,
                              .specialize = ca->specialize,
                              .num_specialize = ca->nspecialize,
                              .multiple_of = ca->multiple_of,
                              .num_multiple_of = ca->nmultiple_of,
                              .target = target,
                              .cpu = ca->cpu,
                              .num_warps = ca->num_warps,
                              .num_stages = ca->num_stages,
                              .index_bits = ca->index_bits,
                              .dump_after = ca->dump_after,
                              .times = ca->time_passes ? times : NULL,
                              .diag = stderr};
}

static int run_compile(CompileArgs *ca) {
  KilnTarget target = kiln_target_from_name(ca->target ? ca->target : "cpu");
  if (target == KILN_TARGET_COUNT)
    return usage_error("compile", "unknown target '%s' (cpu, emu, sm_80, sm_90)", ca->target);
  KilnEmit emit = kiln_emit_from_name(ca->emit ? ca->emit : "mlir");
  if (emit == KILN_EMIT_COUNT)
    return usage_error(
        "compile", "unknown --emit '%s' (ast, mlir, lowered-mlir, llvm, obj, gpu-mlir, ptx, cubin)",
        ca->emit);
  KilnTimes times = {0};
  KilnCompileOptions o = compile_options(ca, target, &times);
  char default_out[PATH_MAX];
  const char *path = ca->out;
  if (!path && (emit == KILN_EMIT_OBJ || emit == KILN_EMIT_CUBIN)) {
    snprintf(default_out, sizeof default_out, "%s.%s", ca->kernel,
             emit == KILN_EMIT_OBJ ? "o" : "cubin");
    path = default_out;
  }
  if (path && strcmp(path, "-") && kiln_file_same(path, ca->file)) {
    fprintf(stderr,
            "kiln compile: the output '%s' is the input file '%s'; refusing to replace "
            "it\n(see 'kiln help compile')\n",
            path, ca->file);
    return EXIT_USAGE;
  }
  KilnBuffer out = {0};
  KilnDriverStatus st = kiln_driver_compile(&o, emit, &out);
  print_times(ca, &times, kiln_target_name(target), kiln_emit_name(emit));
  kiln_times_free(&times);
  if (st != KILN_DRIVER_OK) return (int)st;
  int rc = 0;
  if (!path || !strcmp(path, "-")) {
    if (fwrite(out.data, 1, out.size, stdout) != out.size || fflush(stdout) != 0) rc = 2;
  } else if (kiln_file_write_atomic(path, out.data, out.size) != 0) {
    fprintf(stderr, "kiln: error: cannot write '%s': %s\n", path, strerror(errno));
    rc = 2;
  }
  kiln_buffer_free(&out);
  return rc;
}

static int cmd_compile(int argc, char **argv) {
  CompileArgs ca = {0};
  int r = parse_compile_args(argc, argv, &ca);
  if (r == 0)
    r = run_compile(&ca);
  else if (r < 0)
    r = 0;
  for (size_t i = 0; i < ca.ndefines; i++) free((char *)ca.defines[i].name);
  for (size_t i = 0; i < ca.nspecialize; i++) free((char *)ca.specialize[i].name);
  for (size_t i = 0; i < ca.nmultiple_of; i++) free((char *)ca.multiple_of[i].name);
  return r;
}

/* ---- kiln stat ---- */

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int parse_amount(const char *opt, const char *v, double *out) {
  char *end = NULL;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || !end || *end || end == v || !(d >= 0)) {
    fprintf(stderr, "kiln stat: %s expects a number >= 0, got '%s'\n(see 'kiln help stat')\n", opt,
            v);
    return EXIT_USAGE;
  }
  *out = d;
  return 0;
}

/* Takes the stat-only options out of argv (the rest are compile options). */
static int parse_stat_args(int argc, char **argv, KilnPtxReportOptions *ro, int *nrest) {
  int n = 0;
  for (int i = 0; i < argc; i++) {
    const char *v;
    int r = 0;
    long long d;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage_stat, stdout);
      return -1;
    } else if (!strcmp(argv[i], "--json")) {
      ro->json = true;
    } else if (!strcmp(argv[i], "--tensor")) {
      ro->tensor = true;
    } else if ((v = opt_value(argc, argv, &i, "--flops"))) {
      r = parse_amount("--flops", v, &ro->flops);
    } else if ((v = opt_value(argc, argv, &i, "--bytes"))) {
      r = parse_amount("--bytes", v, &ro->bytes);
    } else if ((v = opt_value(argc, argv, &i, "--dyn-smem"))) {
      if (parse_int(v, 0, 1 << 30, &d))
        return usage_error("stat", "--dyn-smem expects bytes, got '%s'", v);
      ro->dyn_smem = (int)d;
    } else {
      argv[n++] = argv[i];
    }
    if (r) return r;
  }
  *nrest = n;
  return 0;
}

/* The PTX to report on: the file itself, or the kernel compiled by the driver. */
static int stat_ptx(CompileArgs *ca, KilnTarget target, char **ptx) {
  if (ends_with(ca->file, ".ptx")) {
    *ptx = kiln_file_read_max(ca->file, NULL, KILN_MAX_PTX_BYTES);
    if (!*ptx) {
      int rc = errno == EFBIG ? 1 : 2; /* too large: the input's fault */
      char msg[PATH_MAX + 256];
      fprintf(stderr, "kiln stat: error: %s\n",
              kiln_file_read_error(msg, sizeof msg, "PTX file", ca->file, "KILN_MAX_PTX_BYTES",
                                   KILN_MAX_PTX_BYTES));
      return rc;
    }
    return 0;
  }
  if (!ca->kernel) return usage_error("stat", "%s", "--kernel NAME is required for a .kiln file");
  KilnTimes times = {0};
  KilnCompileOptions o = compile_options(ca, target, &times);
  KilnBuffer out = {0};
  KilnDriverStatus st = kiln_driver_compile(&o, KILN_EMIT_PTX, &out);
  print_times(ca, &times, kiln_target_name(target), "ptx");
  kiln_times_free(&times);
  *ptx = out.data;
  return (int)st;
}

static int stat_report(const CompileArgs *ca, const char *arch, const char *ptx,
                       KilnPtxReportOptions *ro) {
  KilnPtxStat s;
  char err[256];
  if (!kiln_ptx_stat_parse(ptx, &s, err, sizeof err)) {
    fprintf(stderr, "kiln stat: %s: %s\n", ca->file, err);
    return 1;
  }
  /* Without ptxas the PTX half of the report still stands; PTX ptxas rejects is an error. */
  char *log = NULL;
  bool assembled =
      kiln_gpu_ptxas(kiln_driver_ptxas_path(), ptx, arch, NULL, NULL, NULL, &log) == KILN_MLIR_OK;
  bool rejected = !assembled && log;
  if (!assembled && !log)
    fprintf(stderr, "kiln stat: warning: ptxas is not available (set KILN_PTXAS); the report "
                    "has no registers or spills\n");
  else if (!assembled)
    fprintf(stderr, "kiln stat: error: ptxas rejected the PTX for %s:\n%s", arch, log);
  if (log) kiln_ptx_stat_add_ptxas(&s, log);
  free(log);
  ro->device = kiln_ptx_device_find(arch);
  char *text = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&text, &size);
  int rc = mem ? 0 : 2;
  if (mem) {
    kiln_ptx_stat_print(&s, ro, mem);
    if (fclose(mem) != 0) rc = 2;
  }
  kiln_ptx_stat_free(&s);
  if (rc == 0 && (!ca->out || !strcmp(ca->out, "-"))) {
    if (fwrite(text, 1, size, stdout) != size || fflush(stdout) != 0) rc = 2;
  } else if (rc == 0 && kiln_file_write_atomic(ca->out, text, size) != 0) {
    fprintf(stderr, "kiln stat: cannot write '%s': %s\n", ca->out, strerror(errno));
    rc = 2;
  }
  free(text);
  return rc == 0 && rejected ? 1 : rc;
}

static int kiln_stat_command(int argc, char **argv) {
  KilnPtxReportOptions ro = {0};
  CompileArgs ca = {0};
  int nrest = 0;
  int r = parse_stat_args(argc, argv, &ro, &nrest);
  if (r == 0) {
    /* a .ptx file needs no --kernel: give the compile parser one so it does not insist */
    bool ptx_file = false;
    for (int i = 0; i < nrest; i++) ptx_file |= ends_with(argv[i], ".ptx");
    char *kernel_opt[] = {"--kernel", "-"};
    char *args[256];
    if (nrest + 2 > 256) return usage_error("stat", "%s", "too many arguments");
    memcpy(args, argv, (size_t)nrest * sizeof *args);
    if (ptx_file) memcpy(args + nrest, kernel_opt, sizeof kernel_opt), nrest += 2;
    r = parse_compile_args(nrest, args, &ca);
  }
  if (r == 0) {
    const char *arch = ca.target ? ca.target : "sm_90";
    KilnTarget target = kiln_target_from_name(arch);
    char *ptx = NULL;
    if (target != KILN_TARGET_SM80 && target != KILN_TARGET_SM90)
      r = usage_error("stat", "--target must be sm_80 or sm_90, got '%s'", arch);
    else if ((r = stat_ptx(&ca, target, &ptx)) == 0)
      r = stat_report(&ca, arch, ptx, &ro);
    free(ptx);
  } else if (r < 0) {
    r = 0;
  }
  for (size_t i = 0; i < ca.ndefines; i++) free((char *)ca.defines[i].name);
  for (size_t i = 0; i < ca.nspecialize; i++) free((char *)ca.specialize[i].name);
  for (size_t i = 0; i < ca.nmultiple_of; i++) free((char *)ca.multiple_of[i].name);
  return r;
}

static int cmd_check(int argc, char **argv) {
  int nfiles = 0, worst = 0;
  KilnDefine defines[64];
  size_t ndefines = 0;
  KilnTarget target = KILN_TARGET_COUNT; /* none: parse and type-check only */
  const char *v;
  char **files = argv; /* the file names, gathered in place (never ahead of i) */
  for (int i = 0; i < argc && worst == 0; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage_check, stdout);
      worst = -1;
    } else if ((v = opt_value(argc, argv, &i, "--target"))) {
      if ((target = kiln_target_from_name(v)) == KILN_TARGET_COUNT)
        worst = usage_error("check", "unknown target '%s' (cpu, emu, sm_80, sm_90)", v);
    } else if (!strcmp(argv[i], "-D") && i + 1 < argc) {
      worst = parse_binding("check", "-D", argv[++i], defines, &ndefines);
    } else if (!strncmp(argv[i], "-D", 2) && argv[i][2]) {
      worst = parse_binding("check", "-D", argv[i] + 2, defines, &ndefines);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      worst = usage_error("check", "unknown option '%s'", argv[i]);
    } else {
      files[nfiles++] = argv[i];
    }
  }
  if (worst == 0 && nfiles == 0) worst = usage_error("check", "%s", "no input file");
  for (int i = 0; i < nfiles && worst >= 0 && worst != EXIT_USAGE; i++) {
    int st = (int)(target == KILN_TARGET_COUNT
                       ? kiln_driver_check(files[i], defines, ndefines, stderr)
                       : kiln_driver_check_target(files[i], defines, ndefines, target, stderr));
    if (st > worst) worst = st;
  }
  for (size_t i = 0; i < ndefines; i++) free((char *)defines[i].name);
  return worst < 0 ? 0 : worst;
}

static int cmd_help(int argc, char **argv) {
  if (argc == 0) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (!strcmp(argv[0], "compile"))
    fputs(usage_compile, stdout);
  else if (!strcmp(argv[0], "check"))
    fputs(usage_check, stdout);
  else if (!strcmp(argv[0], "stat"))
    fputs(usage_stat, stdout);
#ifdef KILN_HAVE_AUTOTUNE
  else if (!strcmp(argv[0], "tune"))
    fputs(kiln_tune_usage, stdout);
  else if (!strcmp(argv[0], "lib"))
    fputs(kiln_lib_usage, stdout);
#endif
  else
    return usage_error(NULL, "no help for unknown command '%s'", argv[0]);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_main, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) return cmd_help(0, NULL);
  if (!strcmp(cmd, "--version")) {
    printf("kiln %s (compiler %s)\n", KILN_VERSION_STRING, kiln_tune_compiler_id());
    return 0;
  }
  if (!strcmp(cmd, "compile")) return cmd_compile(argc - 2, argv + 2);
  if (!strcmp(cmd, "check")) return cmd_check(argc - 2, argv + 2);
  if (!strcmp(cmd, "stat")) return kiln_stat_command(argc - 2, argv + 2);
  if (!strcmp(cmd, "help")) return cmd_help(argc - 2, argv + 2);
#ifdef KILN_HAVE_AUTOTUNE
  if (!strcmp(cmd, "tune")) return kiln_tune_command(argc - 2, argv + 2);
  if (!strcmp(cmd, "lib")) return kiln_lib_command(argc - 2, argv + 2);
#endif
  return usage_error(NULL, "unknown command '%s'", cmd);
}
