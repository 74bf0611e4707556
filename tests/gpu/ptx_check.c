/* ptx_check.c - the gpu.ptx.* tests: a kernel compiled to PTX by the driver, checked, assembled.
 *
 *   ptx_check FILE.kiln KERNEL [NAME=VALUE...] --arch sm_80|sm_90 --ptxas PATH
 *             [--specialize NAME=VALUE]... [--multiple-of NAME=N]...
 *             [--expect TEXT]... [--expect-not TEXT]... [--expect-once TEXT]... [--default]
 *
 * The kernel goes through kiln_driver_compile (the pipeline `kiln compile --target ARCH --emit
 * ptx` runs, verify and kiln-dce included), with NAME=VALUE as its -D bindings (a type
 * parameter takes a scalar name: T=bf16; unbound consts take the first point of the kernel's
 * tune block).  The PTX must contain each --expect TEXT, no --expect-not TEXT and each
 * --expect-once TEXT exactly once (a scalar access the kernel makes once, as AdamW's norm); ptxas -v must
 * assemble it, report a kernel and 0 bytes of spill stores and loads.  --default binds the
 * other consts from the kernel's default on cuda: the first preset, in the order written, for
 * every device or `for cuda` whose `where` holds with NAME=VALUE in place of its values, as an
 * untuned cuda library picks it (docs/tuning.md), so that the test follows the tune block.
 *
 * Exit status: 0 ok, 1 a check or the compilation failed, 2 bad usage, 77 skipped (no ptxas:
 * checked first, so a machine without the CUDA toolkit spends no time compiling). */
#include "kiln_driver.h"
#include "kiln_frontend.h"
#include "kiln_gpu.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIST 32

typedef struct Args {
  const char *file, *kernel, *arch, *ptxas;
  KilnDefine defines[MAX_LIST], specialize[MAX_LIST], multiple_of[MAX_LIST];
  size_t ndefines, nspecialize, nmultiple_of;
  const char *expect[MAX_LIST], *expect_not[MAX_LIST], *expect_once[MAX_LIST];
  size_t nexpect, nexpect_not, nexpect_once;
  int max_spill;    /* bytes of spill stores/loads tolerated (0 unless --max-spill) */
  bool use_default; /* --default: the other consts from the default preset for the pins */
} Args;

static int usage(void) {
  fprintf(stderr, "usage: ptx_check FILE.kiln KERNEL [NAME=V...] --arch A --ptxas P "
                  "[--specialize N=V]... [--multiple-of N=V]... [--expect T]... "
                  "[--expect-not T]... [--expect-once T]... [--default]\n");
  return 2;
}

/* NAME=VALUE (an integer, or a scalar type name for a type parameter) into list[*n]. */
static bool add_binding(const char *s, KilnDefine *list, size_t *n) {
  const char *eq = strchr(s, '=');
  if (!eq || eq == s || *n >= MAX_LIST) return false;
  KilnScalarKind sk;
  int64_t v;
  if (kiln_scalar_from_name(eq + 1, &sk)) {
    v = (int64_t)sk;
  } else {
    char *end;
    v = strtoll(eq + 1, &end, 0);
    if (end == eq + 1 || *end) return false;
  }
  char *name = strndup(s, (size_t)(eq - s));
  if (!name) return false;
  list[(*n)++] = (KilnDefine){name, v};
  return true;
}

static bool add_text(const char *s, const char **list, size_t *n) {
  if (*n >= MAX_LIST) return false;
  list[(*n)++] = s;
  return true;
}

static bool parse_args(int argc, char **argv, Args *a) {
  if (argc < 3) return false;
  a->file = argv[1];
  a->kernel = argv[2];
  for (int i = 3; i < argc; i++) {
    const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    bool ok;
    if (strcmp(s, "--arch") == 0 && v)
      ok = (a->arch = v) != NULL;
    else if (strcmp(s, "--ptxas") == 0 && v)
      ok = (a->ptxas = v) != NULL;
    else if (strcmp(s, "--max-spill") == 0 && v)
      ok = (a->max_spill = atoi(v)) >= 0;
    else if (strcmp(s, "--default") == 0) {
      a->use_default = true;
      continue;
    } else if (strcmp(s, "--expect") == 0 && v)
      ok = add_text(v, a->expect, &a->nexpect);
    else if (strcmp(s, "--expect-not") == 0 && v)
      ok = add_text(v, a->expect_not, &a->nexpect_not);
    else if (strcmp(s, "--expect-once") == 0 && v)
      ok = add_text(v, a->expect_once, &a->nexpect_once);
    else if (strcmp(s, "--specialize") == 0 && v)
      ok = add_binding(v, a->specialize, &a->nspecialize);
    else if (strcmp(s, "--multiple-of") == 0 && v)
      ok = add_binding(v, a->multiple_of, &a->nmultiple_of);
    else if (s[0] != '-')
      ok = add_binding(s, a->defines, &a->ndefines);
    else
      return false;
    if (!ok) return false;
    if (s[0] == '-') i++;
  }
  return a->arch && a->ptxas;
}

static void free_args(Args *a) {
  for (size_t i = 0; i < a->ndefines; i++) free((char *)a->defines[i].name);
  for (size_t i = 0; i < a->nspecialize; i++) free((char *)a->specialize[i].name);
  for (size_t i = 0; i < a->nmultiple_of; i++) free((char *)a->multiple_of[i].name);
}

static size_t occurrences(const char *text, const char *what) {
  size_t n = 0, len = strlen(what);
  for (const char *p = strstr(text, what); p && len; p = strstr(p + len, what)) n++;
  return n;
}

/* Every --expect in the PTX, no --expect-not, each --expect-once once; false (said on stderr)
 * otherwise. */
static bool check_texts(const Args *a, const char *ptx) {
  bool ok = true;
  for (size_t i = 0; i < a->nexpect; i++)
    if (!strstr(ptx, a->expect[i])) {
      fprintf(stderr, "FAIL: %s %s: PTX lacks '%s'\n", a->kernel, a->arch, a->expect[i]);
      ok = false;
    }
  for (size_t i = 0; i < a->nexpect_not; i++)
    if (strstr(ptx, a->expect_not[i])) {
      fprintf(stderr, "FAIL: %s %s: PTX contains '%s'\n", a->kernel, a->arch, a->expect_not[i]);
      ok = false;
    }
  for (size_t i = 0; i < a->nexpect_once; i++) {
    size_t n = occurrences(ptx, a->expect_once[i]);
    if (n != 1) {
      fprintf(stderr, "FAIL: %s %s: PTX contains '%s' %zu times, not once\n", a->kernel, a->arch,
              a->expect_once[i], n);
      ok = false;
    }
  }
  return ok;
}

/* ptxas -v assembles it into one or more kernels without spilling registers (or, with
 * --max-spill N, at most N bytes: a known spill is pinned so that a larger one still fails). */
static bool check_assembly(const Args *a, const char *ptx) {
  KilnGpuPtxasInfo info;
  char *log = NULL;
  bool ok = true;
  if (kiln_gpu_ptxas(a->ptxas, ptx, a->arch, NULL, NULL, &info, &log) != KILN_MLIR_OK) {
    fprintf(stderr, "FAIL: %s %s: ptxas failed:\n%s\n", a->kernel, a->arch, log ? log : "");
    free(log);
    return false;
  }
  free(log);
  printf("%s %s: %d registers, %d bytes spill stores, %d bytes spill loads, %d bytes smem\n",
         a->kernel, a->arch, info.registers, info.spill_stores, info.spill_loads,
         info.shared_bytes);
  if (info.entries < 1) {
    fprintf(stderr, "FAIL: %s %s: ptxas reported no kernel\n", a->kernel, a->arch);
    ok = false;
  }
  if (info.spill_stores > a->max_spill || info.spill_loads > a->max_spill) {
    fprintf(stderr, "FAIL: %s %s: register spills over %d bytes\n", a->kernel, a->arch,
            a->max_spill);
    ok = false;
  }
  return ok;
}

/* The default preset's config for the pins in a->defines, read from kernel's tune block into
 * *out (pins in place of the preset's values); false when none applies (the default is then
 * the first point of the space, which the driver binds by itself). */
static bool default_config(const Args *a, KilnCompilation *c, KilnTuneConfig *out) {
  KilnKernel *k = kiln_kernel_find(c, a->kernel);
  const KilnTune *t = k ? k->tune : NULL;
  for (int i = 0; t && i < t->npresets; i++) {
    const char *dev = t->presets[i].device; /* a preset for cpu or emu is not cuda's */
    if ((dev && strcmp(dev, "cuda")) || !kiln_tune_preset_get(t, t->presets[i].name, out)) continue;
    for (int b = 0; b < out->nbindings; b++)
      for (size_t d = 0; d < a->ndefines; d++)
        if (!strcmp(out->bindings[b].name, a->defines[d].name))
          out->bindings[b].value = a->defines[d].value;
    if (kiln_tune_preset_applies(t, i, out)) {
      printf("%s: default preset %s\n", a->kernel, t->presets[i].name);
      return true;
    }
  }
  printf("%s: no preset on cuda applies: the first point of the space\n", a->kernel);
  return false;
}

/* --default: appends the default preset's bindings that no NAME=VALUE gives to a->defines. */
static bool bind_default(Args *a) {
  size_t len;
  char *text = kiln_file_read(a->file, &len);
  KilnCompilation *c = text ? kiln_frontend_create(a->file, text, len) : NULL;
  bool ok = c && kiln_frontend_parse(c);
  KilnTuneConfig cfg = {.nbindings = 0};
  if (ok && !default_config(a, c, &cfg)) cfg.nbindings = 0;
  for (int b = 0; ok && b < cfg.nbindings; b++) {
    bool given = false;
    for (size_t d = 0; d < a->ndefines && !given; d++)
      given = !strcmp(cfg.bindings[b].name, a->defines[d].name);
    if (given) continue;
    char *name = strdup(cfg.bindings[b].name);
    ok = name && a->ndefines < MAX_LIST;
    if (ok)
      a->defines[a->ndefines++] = (KilnDefine){name, cfg.bindings[b].value};
    else
      free(name);
  }
  if (!ok) fprintf(stderr, "FAIL: cannot read or parse %s\n", a->file);
  kiln_frontend_destroy(c);
  free(text);
  return ok;
}

static int run(Args *a) {
  KilnTarget target = kiln_target_from_name(a->arch);
  if (target != KILN_TARGET_SM80 && target != KILN_TARGET_SM90) {
    fprintf(stderr, "ptx_check: --arch wants sm_80 or sm_90, got '%s'\n", a->arch);
    return 2;
  }
  if (access(a->ptxas, X_OK) != 0) {
    fprintf(stderr, "ptx_check: no ptxas, skipping\n");
    return 77;
  }
  if (a->use_default && !bind_default(a)) return 1;
  KilnCompileOptions o = {.path = a->file,
                          .kernel = a->kernel,
                          .target = target,
                          .defines = a->defines,
                          .num_defines = a->ndefines,
                          .specialize = a->specialize,
                          .num_specialize = a->nspecialize,
                          .multiple_of = a->multiple_of,
                          .num_multiple_of = a->nmultiple_of};
  KilnBuffer ptx;
  if (kiln_driver_compile(&o, KILN_EMIT_PTX, &ptx) != KILN_DRIVER_OK) {
    fprintf(stderr, "FAIL: %s %s: compilation failed\n", a->kernel, a->arch);
    return 1;
  }
  bool ok = check_texts(a, ptx.data);
  ok = check_assembly(a, ptx.data) && ok;
  kiln_buffer_free(&ptx);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  Args a = {0};
  int rc = parse_args(argc, argv, &a) ? run(&a) : usage();
  free_args(&a);
  return rc;
}
