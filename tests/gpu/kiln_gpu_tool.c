/* kiln_gpu_tool.c - test driver of the GPU lowering.
 *
 *   kiln_gpu_tool opt FILE.mlir [--num-warps N] [--stop-after STAGE]
 *       parses kiln IR, runs the GPU pipeline up to STAGE (default kiln-gpu-layouts), prints it
 *   kiln_gpu_tool compile FILE.kiln KERNEL [NAME=VALUE...] [--emit kiln|STAGE|ptx] [--arch A]
 *       compiles a kernel (bindings default to the first point of its tune block), prints the
 *       result
 *   kiln_gpu_tool check FILE.kiln KERNEL [NAME=VALUE...] --arch A --ptxas PATH
 *                 [--expect TEXT]... [--expect-not TEXT]...
 *   (compile and check also take --specialize NAME=VALUE and --multiple-of NAME=N, as kiln
 *   compile does)
 *       compiles to PTX, requires each TEXT in it, assembles it with ptxas -v and requires
 *       0 bytes of spill stores and loads.  Exit 77 (skip) when ptxas is absent.
 *
 * Exit status: 0 ok, 1 a check failed or compilation failed, 2 bad usage, 77 skipped. */
#include "kiln_frontend.h"
#include "kiln_gpu.h"
#include "kiln_mlir.h"
#include "kiln_mlirgen.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIST 32

typedef struct Args {
  const char *mode, *file, *kernel, *emit, *arch, *ptxas, *stop_after;
  KilnBinding bind[MAX_LIST];
  size_t nbind;
  KilnBinding promise[MAX_LIST]; /* --specialize / --multiple-of */
  bool promise_multiple[MAX_LIST];
  size_t npromise;
  const char *expect[MAX_LIST], *expect_not[MAX_LIST];
  size_t nexpect, nexpect_not;
  int num_warps, num_stages;
} Args;

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        buf = NULL;
      }
      buf = nb;
    }
  }
  fclose(f);
  if (buf)
    buf[n] = '\0';
  *len = n;
  return buf;
}

static int usage(void) {
  fprintf(stderr, "usage: kiln_gpu_tool opt FILE.mlir [--num-warps N] [--stop-after STAGE]\n"
                  "       kiln_gpu_tool compile FILE.kiln KERNEL [NAME=V...] [--emit E] [--arch A]\n"
                  "       kiln_gpu_tool check FILE.kiln KERNEL [NAME=V...] --arch A --ptxas P "
                  "[--expect T]...\n");
  return 2;
}

static bool parse_args(int argc, char **argv, Args *a) {
  memset(a, 0, sizeof *a);
  a->arch = "sm_80";
  if (argc < 3)
    return false;
  a->mode = argv[1];
  a->file = argv[2];
  int i = 3;
  if (strcmp(a->mode, "opt") != 0) {
    if (argc < 4)
      return false;
    a->kernel = argv[3];
    i = 4;
  }
  for (; i < argc; i++) {
    const char *s = argv[i];
    bool more = i + 1 < argc;
    if (strcmp(s, "--emit") == 0 && more)
      a->emit = argv[++i];
    else if (strcmp(s, "--arch") == 0 && more)
      a->arch = argv[++i];
    else if (strcmp(s, "--ptxas") == 0 && more)
      a->ptxas = argv[++i];
    else if (strcmp(s, "--stop-after") == 0 && more)
      a->stop_after = argv[++i];
    else if (strcmp(s, "--num-warps") == 0 && more)
      a->num_warps = atoi(argv[++i]);
    else if (strcmp(s, "--num-stages") == 0 && more)
      a->num_stages = atoi(argv[++i]);
    else if (strcmp(s, "--expect") == 0 && more && a->nexpect < MAX_LIST)
      a->expect[a->nexpect++] = argv[++i];
    else if (strcmp(s, "--expect-not") == 0 && more && a->nexpect_not < MAX_LIST)
      a->expect_not[a->nexpect_not++] = argv[++i];
    else if ((strcmp(s, "--specialize") == 0 || strcmp(s, "--multiple-of") == 0) && more &&
             strchr(argv[i + 1], '=') && a->npromise < MAX_LIST) {
      const char *v = argv[++i], *eq = strchr(v, '=');
      a->promise_multiple[a->npromise] = s[2] == 'm';
      a->promise[a->npromise].name = strndup(v, (size_t)(eq - v));
      a->promise[a->npromise].value = strtoll(eq + 1, NULL, 0);
      a->npromise++;
    } else if (strchr(s, '=') && s[0] != '-' && a->nbind < MAX_LIST) {
      const char *eq = strchr(s, '=');
      char *name = strndup(s, (size_t)(eq - s));
      a->bind[a->nbind].name = name;
      KilnScalarKind sk; /* a type parameter's value: T=bf16 */
      a->bind[a->nbind].value = kiln_scalar_from_name(eq + 1, &sk) ? (int64_t)sk : strtoll(eq + 1, NULL, 0);
      a->nbind++;
    } else {
      return false;
    }
  }
  return true;
}

static void free_args(Args *a) {
  for (size_t i = 0; i < a->nbind; i++)
    free((char *)a->bind[i].name);
  for (size_t i = 0; i < a->npromise; i++)
    free((char *)a->promise[i].name);
}

static void print_cb(MlirStringRef s, void *u) { fwrite(s.data, 1, s.length, (FILE *)u); }

/* Builds the kiln module of a kernel with the given (or the default) bindings. */
static MlirModule build_kernel(KilnMlirContext *kctx, const Args *a, KilnCompilation **out_c) {
  MlirModule none = {NULL};
  size_t len;
  char *text = read_file(a->file, &len);
  if (!text) {
    fprintf(stderr, "kiln_gpu_tool: cannot read %s\n", a->file);
    return none;
  }
  KilnCompilation *c = kiln_frontend_create(a->file, text, len);
  free(text);
  *out_c = c;
  if (!c || !kiln_frontend_parse(c)) {
    if (c)
      kiln_diag_render(c, stderr);
    return none;
  }
  KilnBinding bind[64];
  size_t nbind = 0;
  KilnKernel *k0 = kiln_kernel_find(c, a->kernel);
  KilnTuneConfig cfg;
  if (k0 && k0->tune && kiln_tune_config_get(k0->tune, 0, &cfg)) {
    for (int i = 0; i < cfg.nbindings; i++)
      bind[nbind++] = cfg.bindings[i];
  }
  /* Explicit bindings replace the default ones of the same name. */
  for (size_t i = 0; i < a->nbind; i++) {
    size_t j = 0;
    while (j < nbind && strcmp(bind[j].name, a->bind[i].name) != 0)
      j++;
    bind[j] = a->bind[i];
    if (j == nbind)
      nbind++;
  }
  KilnKernel *k;
  if (!kiln_sema_check_kernel(c, a->kernel, bind, nbind, &k)) {
    kiln_diag_render(c, stderr);
    return none;
  }
  MlirModule m = mlirModuleCreateEmpty(mlirLocationUnknownGet(kiln_mlir_context_get(kctx)));
  if (!kiln_mlirgen_kernel(c, k, kctx, m)) {
    kiln_diag_render(c, stderr);
    mlirModuleDestroy(m);
    return none;
  }
  for (size_t i = 0; i < a->npromise; i++) {
    char err[256];
    if (!kiln_mlirgen_specialize(m, k, a->promise[i].name, a->promise[i].value,
                                 a->promise_multiple[i], err, sizeof err)) {
      fprintf(stderr, "kiln_gpu_tool: %s: %s\n", a->promise[i].name, err);
      mlirModuleDestroy(m);
      return none;
    }
  }
  return m;
}

static bool run_pipeline(KilnMlirContext *kctx, MlirModule m, const Args *a, const char *stop) {
  KilnGpuOptions o = {.target = a->arch, .num_warps = a->num_warps, .num_stages = a->num_stages,
                      .stop_after = stop};
  if (kiln_gpu_pipeline_run(m, &o) != KILN_MLIR_OK) {
    kiln_mlir_diag_print(kctx, stderr);
    return false;
  }
  if (!mlirOperationVerify(mlirModuleGetOperation(m))) {
    kiln_mlir_diag_print(kctx, stderr);
    return false;
  }
  return true;
}

static int do_opt(KilnMlirContext *kctx, const Args *a) {
  size_t len;
  char *text = read_file(a->file, &len);
  if (!text) {
    fprintf(stderr, "kiln_gpu_tool: cannot read %s\n", a->file);
    return 1;
  }
  MlirModule m = kiln_mlir_parse(kctx, text);
  free(text);
  if (mlirModuleIsNull(m)) {
    kiln_mlir_diag_print(kctx, stderr);
    return 1;
  }
  int rc = 1;
  if (run_pipeline(kctx, m, a, a->stop_after ? a->stop_after : "kiln-gpu-layouts")) {
    mlirOperationPrint(mlirModuleGetOperation(m), print_cb, stdout);
    fputc('\n', stdout);
    rc = 0;
  }
  mlirModuleDestroy(m);
  return rc;
}

static int do_compile(KilnMlirContext *kctx, const Args *a, bool check) {
  if (check && (!a->ptxas || access(a->ptxas, X_OK) != 0)) {
    fprintf(stderr, "kiln_gpu_tool: no ptxas, skipping\n");
    return 77;
  }
  KilnCompilation *c = NULL;
  MlirModule m = build_kernel(kctx, a, &c);
  int rc = 1;
  if (mlirModuleIsNull(m))
    goto out;
  const char *emit = check ? "ptx" : (a->emit ? a->emit : "ptx");
  if (strcmp(emit, "kiln") == 0) {
    mlirOperationPrint(mlirModuleGetOperation(m), print_cb, stdout);
    fputc('\n', stdout);
    rc = 0;
    goto out;
  }
  if (!run_pipeline(kctx, m, a, strcmp(emit, "ptx") == 0 ? NULL : emit))
    goto out;
  if (strcmp(emit, "ptx") != 0) {
    mlirOperationPrint(mlirModuleGetOperation(m), print_cb, stdout);
    fputc('\n', stdout);
    rc = 0;
    goto out;
  }
  char *ptx = NULL;
  size_t plen = 0;
  if (kiln_gpu_emit_ptx(m, a->arch, &ptx, &plen) != KILN_MLIR_OK) {
    kiln_mlir_diag_print(kctx, stderr);
    goto out;
  }
  if (!check) {
    fwrite(ptx, 1, plen, stdout);
    free(ptx);
    rc = 0;
    goto out;
  }
  rc = 0;
  for (size_t i = 0; i < a->nexpect; i++)
    if (!strstr(ptx, a->expect[i])) {
      fprintf(stderr, "FAIL: %s %s: PTX lacks '%s'\n", a->kernel, a->arch, a->expect[i]);
      rc = 1;
    }
  for (size_t i = 0; i < a->nexpect_not; i++)
    if (strstr(ptx, a->expect_not[i])) {
      fprintf(stderr, "FAIL: %s %s: PTX contains '%s'\n", a->kernel, a->arch, a->expect_not[i]);
      rc = 1;
    }
  KilnGpuPtxasInfo info;
  char *log = NULL;
  if (kiln_gpu_ptxas(a->ptxas, ptx, a->arch, NULL, NULL, &info, &log) != KILN_MLIR_OK) {
    fprintf(stderr, "FAIL: %s %s: ptxas failed:\n%s\n", a->kernel, a->arch, log ? log : "");
    rc = 1;
  } else {
    printf("%s %s: %d registers, %d bytes spill stores, %d bytes spill loads, %d bytes smem\n",
           a->kernel, a->arch, info.registers, info.spill_stores, info.spill_loads,
           info.shared_bytes);
    if (info.entries < 1) {
      fprintf(stderr, "FAIL: %s %s: ptxas reported no kernel\n", a->kernel, a->arch);
      rc = 1;
    }
    if (info.spill_stores != 0 || info.spill_loads != 0) {
      fprintf(stderr, "FAIL: %s %s: register spills\n", a->kernel, a->arch);
      rc = 1;
    }
  }
  free(log);
  free(ptx);
out:
  if (!mlirModuleIsNull(m))
    mlirModuleDestroy(m);
  kiln_frontend_destroy(c);
  return rc;
}

int main(int argc, char **argv) {
  Args a;
  if (!parse_args(argc, argv, &a)) {
    free_args(&a);
    return usage();
  }
  KilnMlirContext *kctx = kiln_mlir_context_create();
  if (!kctx) {
    free_args(&a);
    return 1;
  }
  int rc;
  if (strcmp(a.mode, "opt") == 0)
    rc = do_opt(kctx, &a);
  else if (strcmp(a.mode, "compile") == 0)
    rc = do_compile(kctx, &a, false);
  else if (strcmp(a.mode, "check") == 0)
    rc = do_compile(kctx, &a, true);
  else
    rc = usage();
  kiln_mlir_context_destroy(kctx);
  free_args(&a);
  return rc;
}
