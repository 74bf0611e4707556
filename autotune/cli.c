/* cli.c — the `kiln tune` and `kiln lib` commands: options, files, the device probe, and the
 * hand-over from the cache to the library generator. */
#include "internal.h"

#include <kiln/kilnrt.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

enum { EXIT_USAGE = 64 };

const char *const kiln_tune_usage =
    "usage: kiln tune FILE... [options]\n"
    "\n"
    "Times the configurations of each kernel's tune block on a device and reports the fastest\n"
    "correct one (docs/tuning.md).\n"
    "\n"
    "options:\n"
    "  --kernel NAME            only this kernel\n"
    "  -D NAME=VALUE            hold a const parameter at one value (repeatable): an element\n"
    "                           type (-D T=f16) or a choice of what the kernel computes\n"
    "                           (-D EPI=2); replaces the tune block's list for NAME; also\n"
    "                           num_warps, num_stages, min_blocks, wgmma\n"
    "  --args SPEC              how to call the kernel: 'n=4096; x: f32[n]; out: f32[n];\n"
    "                           grid=cdiv(n, BLOCK)' (else a '// kiln-tune-args:' line)\n"
    "  --mode default|max-autotune   presets / a few spread configs, or the whole space\n"
    "  --device cpu|emu|cuda:N  where to time (default cpu)\n"
    "  --cpu CPU                cpu/emu: CPU target of the host code, native (default: this\n"
    "                           machine) or a portable baseline (generic, x86-64-v2...); part\n"
    "                           of the cache's device identity (docs/cli.md)\n"
    "  --index-bits 32|64       width of every variant's pointer offsets (default 32: each\n"
    "                           pointer argument must reach fewer than 2^31 elements); 64 is\n"
    "                           part of the cache's device identity (docs/tuning.md)\n"
    "  --jobs N                 parallel builder workers (default 2, at most 4 per CPU)\n"
    "  --budget SECONDS         bound on the wall time of the run\n"
    "  --timeout SECONDS        limit of one run of a kernel (default: cuda 10, cpu 30, emu\n"
    "                           300); a run past it is killed and its config poisoned for\n"
    "                           that key (not timed again, whatever --timeout later runs give)\n"
    "  --retry-poisoned         time the configs that crashed or hung before again (with a\n"
    "                           longer --timeout, a slow config may pass; one that hangs\n"
    "                           again is poisoned again, with the new limit)\n"
    "  --reps N                 timed runs per child in the first pass (default 5)\n"
    "  --cache PATH             the JSON tuning cache to read and extend\n"
    "  --json                   print the report as JSON\n"
    "  --report-svg PATH        plot of time per config\n"
    "  --emit-lib DIR           generate the C library of the winners into DIR\n"
    "  --emit-bundle DIR        time nothing: compile every candidate of both modes (of the\n"
    "                           default mode only with --mode default) into DIR\n"
    "                           with a manifest, for kiln-tune-runner on another machine\n"
    "                           (--device cpu|emu|cuda; cuda: --arch sm_80 or sm_90, default "
    "sm_90)\n"
    "  --lib-name NAME          name (and prefix) of the generated library (default kernels)\n"
    "  --arch LIST              cuda libraries: cubins for these archs (default sm_80,sm_90)\n"
    "  --no-cubin               cuda libraries: PTX only (no ptxas needed; JIT at load time)\n"
    "  --no-specialize          compile the variants without the promises of the --args values\n"
    "                           (by default integer arguments equal to 1 are specialized and\n"
    "                           those divisible by 16 promised to be, as Triton does)\n";

const char *const kiln_lib_usage =
    "usage: kiln lib FILE... -o DIR [--cache PATH] [--device cpu|emu|cuda] [--cpu CPU]\n"
    "                [--lib-name NAME] [--index-bits 32|64]\n"
    "                [--args SPEC] [--arch LIST] [--no-cubin] [--tuned-on TEXT] [--require-tuned]\n"
    "                [--no-specialize] [-D NAME=VALUE]...\n"
    "\n"
    "Generates DIR/NAME.h and DIR/NAME.c from the winners recorded in the cache for each\n"
    "kernel (one per key bucket); no timing (docs/library.md). A kernel with no timing for\n"
    "the device gets its default config (a warning; an error with --require-tuned).\n"
    "--device cuda needs no GPU: it takes the timings of the GPU recorded in the cache\n"
    "(--tuned-on TEXT picks one when there are several) and embeds a cubin per --arch\n"
    "(default sm_80,sm_90) plus PTX. Winners tuned with a specialization signature run only\n"
    "on calls that keep its promises; the others get a generic variant (the default config\n"
    "when the cache has no generic timing). --no-specialize leaves specialized records out.\n"
    "-D NAME=VALUE holds a const parameter at one value, as in kiln tune: only the records\n"
    "of that value are taken (one library per element type or epilogue).\n"
    "Several --args naming one kernel (kernel=NAME): the first is its spec; each later one is\n"
    "a further layout, whose promises give an untuned kernel one more copy of its default\n"
    "config (a GEMM's backward strides next to the forward's).\n"
    "--index-bits 64 compiles every variant with 64-bit pointer offsets (for buffers of 2^31\n"
    "elements or more) and takes only timings of 64-bit variants; the default, 32, only\n"
    "32-bit ones. The header says which.\n";

static int usage(const TuneOpts *o, const char *fmt, const char *what) {
  const char *cmd = tune_flow_command(o->flow);
  fprintf(stderr, "kiln %s: ", cmd);
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\n(see 'kiln help %s')\n", cmd);
  return EXIT_USAGE;
}

static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
  if (!strcmp(argv[*i], name) && *i + 1 < argc) return argv[++*i];
  return NULL;
}

/* "-D NAME=V" or "-DNAME=V": the NAME=V part, else NULL. */
static const char *define_value(int argc, char **argv, int *i) {
  const char *a = argv[*i];
  if (!strcmp(a, "-D")) return *i + 1 < argc ? argv[++*i] : NULL;
  return !strncmp(a, "-D", 2) && a[2] ? a + 2 : NULL;
}

/* A number in [lo, hi]: NaN is in no range (written so that its comparisons fail), so
 * `--timeout nan` cannot switch hang detection off. */
static bool num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

/* "sm_80,sm_90": oldest first, so that archs[0] is the PTX fallback every newer GPU can JIT. */
static int parse_archs(const char *s, LibGpuArchs *g) {
  char buf[64];
  if (strlen(s) >= sizeof buf) return -1; /* refused whole: a cut list could drop a bad name */
  snprintf(buf, sizeof buf, "%s", s);
  g->narchs = 0;
  bool seen[KILN_TARGET_COUNT] = {0};
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    KilnTarget k = kiln_target_from_name(t);
    if (k != KILN_TARGET_SM80 && k != KILN_TARGET_SM90) return -1;
    seen[k] = true;
  }
  for (int k = KILN_TARGET_SM80; k <= KILN_TARGET_SM90; k++)
    if (seen[k]) g->archs[g->narchs++] = (KilnTarget)k;
  return g->narchs ? 0 : -1;
}

static int parse_opts(int argc, char **argv, TuneOpts *o) {
  double v;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *s;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(o->flow == TUNE_FLOW_LIB ? kiln_lib_usage : kiln_tune_usage, stdout);
      return -1;
    } else if ((s = opt_value(argc, argv, &i, "--kernel")))
      o->kernel = s;
    else if ((s = opt_value(argc, argv, &i, "--device")))
      o->device = s;
    else if ((s = opt_value(argc, argv, &i, "--cpu"))) {
      char llvm_cpu[64], features[1024];
      if (kiln_rt_host_cpu_target(s, llvm_cpu, sizeof llvm_cpu, features, sizeof features))
        return usage(o, "--cpu: %s", kiln_rt_last_error());
      o->cpu = s;
    } else if ((s = opt_value(argc, argv, &i, "--index-bits"))) {
      if (strcmp(s, "32") && strcmp(s, "64"))
        return usage(o, "--index-bits is 32 or 64, not '%s'", s);
      o->index_bits = atoi(s);
    } else if ((s = opt_value(argc, argv, &i, "--cache")))
      o->cache = s;
    else if ((s = opt_value(argc, argv, &i, "--report-svg")))
      o->svg = s;
    else if ((s = opt_value(argc, argv, &i, "--emit-lib")) || (s = opt_value(argc, argv, &i, "-o")))
      o->lib_dir = s;
    else if ((s = opt_value(argc, argv, &i, "--lib-name")))
      o->lib_name = s;
    else if ((s = opt_value(argc, argv, &i, "--tuned-on")))
      o->tuned_on = s;
    else if ((s = opt_value(argc, argv, &i, "--emit-bundle")))
      o->bundle_dir = s;
    else if ((s = opt_value(argc, argv, &i, "--arch"))) {
      if (strlen(s) > 63)
        return usage(o, "--arch is longer than 63 characters, the most it holds; refused: '%s'", s);
      if (parse_archs(s, &o->gpu))
        return usage(o, "--arch expects sm_80 and/or sm_90 (comma-separated), got '%s'", s);
    } else if ((s = define_value(argc, argv, &i))) {
      char err[160];
      if (tune_pins_add(&o->pins, s, err, sizeof err)) return usage(o, "%s", err);
    } else if (!strcmp(a, "--no-cubin"))
      o->gpu.ptx_only = true;
    else if (!strcmp(a, "--require-tuned"))
      o->require_tuned = true;
    else if (!strcmp(a, "--no-specialize"))
      o->no_specialize = true;
    else if (!strcmp(a, "--retry-poisoned"))
      o->retry_poisoned = true;
    else if ((s = opt_value(argc, argv, &i, "--args"))) {
      if (o->nargs == TUNE_MAX_ARGS) return usage(o, "more than %s --args", "16 (TUNE_MAX_ARGS)");
      o->args[o->nargs++] = s;
    } else if ((s = opt_value(argc, argv, &i, "--mode"))) {
      if (strcmp(s, "default") && strcmp(s, "max-autotune"))
        return usage(o, "--mode is default or max-autotune, not '%s'", s);
      o->max_mode = !strcmp(s, "max-autotune");
      o->mode_given = true;
    } else if ((s = opt_value(argc, argv, &i, "--jobs"))) {
      if (!num(s, 1, 256, &v)) return usage(o, "--jobs expects 1..256, got '%s'", s);
      long cpus = sysconf(_SC_NPROCESSORS_ONLN),
           most = TUNE_MAX_JOBS_PER_CPU * (cpus > 0 ? cpus : 1);
      if (v > (double)most) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "--jobs %s is more than this machine's %ld CPU(s) can use: at "
                 "most %ld (TUNE_MAX_JOBS_PER_CPU = %d per CPU)",
                 s, cpus, most, TUNE_MAX_JOBS_PER_CPU);
        return usage(o, "%s", msg);
      }
      o->jobs = (int)v;
    } else if ((s = opt_value(argc, argv, &i, "--reps"))) {
      if (!num(s, 1, 64, &v)) return usage(o, "--reps expects 1..64, got '%s'", s);
      o->reps = (int)v;
    } else if ((s = opt_value(argc, argv, &i, "--budget"))) {
      if (!num(s, 0.001, 1e7, &o->budget)) return usage(o, "--budget expects seconds, got '%s'", s);
    } else if ((s = opt_value(argc, argv, &i, "--timeout"))) {
      if (!num(s, 0.01, 1e5, &o->timeout))
        return usage(o, "--timeout expects seconds, got '%s'", s);
    } else if (!strcmp(a, "--json"))
      o->json = true;
    else if (a[0] == '-' && a[1])
      return usage(o, "unknown or incomplete option '%s'", a);
    else
      o->files[o->nfiles++] = a; /* room for argc of them */
  }
  if (o->nfiles == 0) return usage(o, "%s", "no input file");
  if (o->flow == TUNE_FLOW_LIB && !o->lib_dir) return usage(o, "%s", "-o DIR is required");
  if (o->bundle_dir && (o->lib_dir || o->gpu.narchs > 1))
    return usage(o, "%s", "--emit-bundle takes one --arch and no --emit-lib");
  if (o->bundle_dir) o->flow = TUNE_FLOW_BUNDLE;
  return 0;
}

typedef struct NamedPath {
  char path[PATH_MAX];
  const char *what; /* the option that names it */
  bool output;
} NamedPath;

static void name_path(NamedPath *n, int *count, const char *what, bool output, const char *fmt,
                      const char *a, const char *b) {
  NamedPath *p = &n[(*count)++];
  snprintf(p->path, sizeof p->path, fmt, a, b);
  p->what = what;
  p->output = output;
}

/* No output may be one of the inputs (compared as files, not names: a link or another spelling
 * of the path counts): writing it would replace a kernel source or a cache with generated text.
 * Checked before any work; the cache of `kiln tune` is both read and written, so it is only
 * compared with the rest. Returns 0 or the usage exit code (reported). */
static int check_outputs(const TuneOpts *o) {
  NamedPath *n = calloc((size_t)o->nfiles + 5, sizeof *n); /* the inputs and at most 5 others */
  if (!n) return 2;
  int count = 0, rc = 0;
  bool lib = o->flow == TUNE_FLOW_LIB;
  for (int i = 0; i < o->nfiles; i++)
    name_path(n, &count, "input file", false, "%s%s", o->files[i], "");
  if (o->cache) name_path(n, &count, "--cache", !lib, "%s%s", o->cache, "");
  if (o->svg) name_path(n, &count, "--report-svg", true, "%s%s", o->svg, "");
  const char *name = tune_flow_lib_name(o), *opt = lib ? "-o" : "--emit-lib";
  if (o->lib_dir) {
    name_path(n, &count, opt, true, "%s/%s.h", o->lib_dir, name);
    name_path(n, &count, opt, true, "%s/%s.c", o->lib_dir, name);
  }
  if (o->bundle_dir)
    name_path(n, &count, "--emit-bundle", true, "%s/%s", o->bundle_dir, "manifest.txt");
  const char *cmd = tune_flow_command(o->flow);
  for (int a = 0; a < count && !rc; a++)
    for (int b = 0; b < count && !rc; b++)
      if (a != b && n[a].output && (b < a || !n[b].output) &&
          kiln_file_same(n[a].path, n[b].path)) {
        fprintf(stderr,
                "kiln %s: the output '%s' (%s) is the same file as '%s' (%s); refusing "
                "to replace it\n(see 'kiln help %s')\n",
                cmd, n[a].path, n[a].what, n[b].path, n[b].what, cmd);
        rc = EXIT_USAGE;
      }
  free(n);
  return rc;
}

/* Reads the command line of `kiln tune` (flow TUNE, or BUNDLE with --emit-bundle) or `kiln lib`
 * (flow LIB) and runs its flow (flow.c). */
static int command(int argc, char **argv, TuneFlow flow) {
  TuneOpts o = {.flow = flow, .jobs = 2, .reps = 5}; /* timeout 0: the device's default */
  o.files = calloc((size_t)argc + 1, sizeof *o.files);
  if (!o.files) return 2;
  int rc = parse_opts(argc, argv, &o);
  if (rc == 0) rc = check_outputs(&o);
  if (rc == 0) rc = tune_prepare_outputs(&o);
  if (rc == 0)
    rc = tune_flow_run(&o);
  else if (rc < 0)
    rc = 0; /* --help */
  free(o.files);
  return rc;
}

int kiln_tune_command(int argc, char **argv) { return command(argc, argv, TUNE_FLOW_TUNE); }
int kiln_lib_command(int argc, char **argv) { return command(argc, argv, TUNE_FLOW_LIB); }
