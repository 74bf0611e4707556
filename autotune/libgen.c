/* libgen.c — the generated kernel library: NAME.h (typed launch functions) and NAME.c (the
 * winning variants embedded as byte arrays, dispatch by key bucket, lazy module loads).
 *
 * Every variant is one module with one or more images (KilnRtImage: format + arch): a host
 * object on cpu/emu; on cuda a cubin per requested arch plus the PTX of the oldest arch as a
 * fallback. At load time libkilnrt's kiln_rt_module_load_best picks the image the device runs
 * (a cubin of its arch, else PTX for the driver's JIT), so one library serves sm_80 and sm_90.
 * Dispatch picks the variant whose key buckets are nearest in log2 distance (sum over keys),
 * the first one on ties, so a size that was never tuned runs the variant tuned for the closest
 * size. Only variants whose specialization signature the call keeps are considered (sig.c):
 * each carries two masks of parameters (must equal 1, must be divisible by 16) and the call
 * computes the same two masks of its arguments, so the check is a few integer operations. A
 * variant compiled for "sak = 1" would compute garbage with sak = 64, so correctness rests on
 * this check; every library has a generic variant (no promises) that any call keeps. Variants
 * with more promises come first (they win ties), and an untuned default only runs when no
 * tuned variant fits. */
#include "internal.h"

#include <kiln/kilnrt.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *c_type(const TuneParam *q) {
  switch (q->scalar) {
  case KILN_SCALAR_F32: return q->is_ptr ? "float *" : "float ";
  case KILN_SCALAR_F16:
  case KILN_SCALAR_BF16: return q->is_ptr ? "uint16_t *" : "uint16_t ";
  case KILN_SCALAR_I64: return q->is_ptr ? "int64_t *" : "int64_t ";
  case KILN_SCALAR_I32: return q->is_ptr ? "int32_t *" : "int32_t ";
  case KILN_SCALAR_I16: return q->is_ptr ? "int16_t *" : "int16_t ";
  default: return q->is_ptr ? "int8_t *" : "int8_t ";
  }
}

static bool is_ident(const char *s) {
  if (!*s || isdigit((unsigned char)*s)) return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

static void params_decl(FILE *f, const LibKernel *k) {
  for (int i = 0; i < k->nparams; i++) fprintf(f, ", %s%s", c_type(&k->params[i]), k->params[i].name);
}

/* The integer scalars: what dispatch looks at (the keys and the signatures' parameters). */
static bool is_dispatch_param(const TuneParam *q) {
  return !q->is_ptr && !tune_scalar_is_float(q->scalar);
}

/* "int64_t M, int64_t N" (decl) or "M, N" over the dispatch parameters; "void" when none. */
static void dispatch_params(FILE *f, const LibKernel *k, bool decl) {
  int n = 0;
  for (int i = 0; i < k->nparams; i++)
    if (is_dispatch_param(&k->params[i]))
      fprintf(f, "%s%s%s", n++ ? ", " : "", decl ? "int64_t " : "", k->params[i].name);
  if (n == 0 && decl) fputs("void", f);
}

/* ---------------------------------------------------------------- header */

static void header_kernel(FILE *f, const char *L, const LibKernel *k) {
  const char *base = strrchr(k->path, '/');
  fprintf(f, "\n/* kernel %s (%s) */\n", k->name, base ? base + 1 : k->path);
  fprintf(f, "typedef struct %s_%s_config {\n", L, k->name);
  for (int i = 0; i < k->nconsts; i++) fprintf(f, "  int64_t %s;\n", k->consts[i]);
  fprintf(f, "  int num_warps, num_stages;\n"
             "  const char *signature; /* the variant's promises, e.g. \"sak=1,K%%16\" (\"\": none) */\n"
             "} %s_%s_config;\n", L, k->name);
  fprintf(f, "/* Computes the grid for the config the library picked. */\n");
  fprintf(f, "typedef void (*%s_%s_grid_fn)(const %s_%s_config *cfg, void *user, uint32_t grid[3]);\n",
          L, k->name, L, k->name);
  fprintf(f, "/* Launches %s with the variant tuned for the nearest key bucket among those whose\n"
             " * promises (integer arguments equal to 1 / divisible by 16) the call keeps; a generic\n"
             " * variant serves the others. grid NULL: the rule it was tuned with (", k->name);
  for (int a = 0; a < k->h.ngrid; a++) fprintf(f, "%s%s", a ? ", " : "", k->h.grid[a]);
  fprintf(f, "). Loads the variant's module on first use. */\n");
  fprintf(f, "KilnRtStatus %s_%s(%s *lib", L, k->name, L);
  params_decl(f, k);
  fprintf(f, ",\n    %s_%s_grid_fn grid, void *grid_user, KilnRtStream *stream);\n", L, k->name);
  if (libgen_has_call_conditions(k)) {
    fprintf(f, "/* Conditions on the call (variants that break them never run; when none fits, the\n"
               " * launch returns KILN_RT_ERROR_INVALID_ARGUMENT and _pick a config with num_warps 0):");
    for (int i = 0; i < k->tune->nwheres; i++)
      if (kiln_tune_where_is_call(k->tune, i)) {
        char text[200];
        tune_span_text(k->src, k->tune->wheres[i]->span, text, sizeof text);
        fprintf(f, "\n *   where %s", text);
      }
    fprintf(f, " */\n");
  }
  fprintf(f, "/* The config a launch with these integer arguments uses. */\n");
  fprintf(f, "%s_%s_config %s_%s_pick(", L, k->name, L, k->name);
  dispatch_params(f, k, true);
  fprintf(f, ");\n");
}

static void write_header(FILE *f, const char *L, const LibKernel *ks, int nk) {
  fprintf(f, "/* %s.h — generated by kiln (kiln tune --emit-lib / kiln lib); do not edit.\n"
             " * Create one library handle per device; it owns the modules it loads. */\n", L);
  fprintf(f, "#ifndef %s_KILN_LIB_H\n#define %s_KILN_LIB_H\n\n", L, L);
  fprintf(f, "#include <stdint.h>\n\n#include <kiln/kilnrt.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  fprintf(f, "typedef struct %s %s;\n\n", L, L);
  fprintf(f, "/* A library handle on dev (which must outlive it); owned by the caller. */\n");
  fprintf(f, "KilnRtStatus %s_create(KilnRtDevice *dev, %s **out);\n", L, L);
  fprintf(f, "/* Unloads every module the handle loaded. NULL is a no-op. */\n");
  fprintf(f, "void %s_destroy(%s *lib);\n", L, L);
  for (int i = 0; i < nk; i++) header_kernel(f, L, &ks[i]);
  fprintf(f, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

/* ---------------------------------------------------------------- source */

/* The harness grid expression as C over the launch's parameters and the picked config. */
static void grid_expr_c(FILE *f, const char *L, const LibKernel *k, const char *e) {
  while (*e) {
    if (isalpha((unsigned char)*e) || *e == '_') {
      char id[64];
      size_t n = 0;
      while ((isalnum((unsigned char)*e) || *e == '_') && n + 1 < sizeof id) id[n++] = *e++;
      id[n] = '\0';
      const char *after = e;
      while (*after == ' ') after++;
      bool is_const = !strcmp(id, "num_warps") || !strcmp(id, "num_stages");
      for (int i = 0; i < k->nconsts; i++) is_const |= !strcmp(id, k->consts[i]);
      if (*after == '(') fprintf(f, "%s_kiln_%s", L, id);
      else if (is_const) fprintf(f, "(int64_t)kiln_cfg->%s", id);
      else fprintf(f, "(int64_t)%s", id);
    } else {
      fputc(*e++, f);
    }
  }
}

static void write_image(FILE *f, const char *L, int i, const KilnBuffer *b) {
  fprintf(f, "static const unsigned char %s_img%d[%zu] = {", L, i, b->size);
  for (size_t j = 0; j < b->size; j++)
    fprintf(f, "%s%u,", j % 24 ? "" : "\n  ", (unsigned char)b->data[j]);
  fprintf(f, "\n};\n");
}

static void source_prelude(FILE *f, const char *L, int nimages) {
  fprintf(f, "/* %s.c — generated by kiln; do not edit. */\n#include \"%s.h\"\n\n", L, L);
  fprintf(f, "#include <pthread.h>\n#include <stdlib.h>\n\n");
  fprintf(f, "struct %s {\n  KilnRtDevice *dev;\n  pthread_mutex_t mu;\n"
             "  KilnRtModule *mods[%d];\n  KilnRtFunction *fns[%d];\n};\n\n", L, nimages, nimages);
  fprintf(f, "#if defined(__GNUC__)\n#define %s_KILN_UNUSED __attribute__((unused))\n#else\n"
             "#define %s_KILN_UNUSED\n#endif\n", L, L);
  fprintf(f, "%s_KILN_UNUSED ", L);
  fprintf(f, "static inline int64_t %s_kiln_cdiv(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }\n", L);
  fprintf(f, "%s_KILN_UNUSED ", L);
  fprintf(f, "static inline int64_t %s_kiln_min(int64_t a, int64_t b) { return a < b ? a : b; }\n", L);
  fprintf(f, "%s_KILN_UNUSED ", L);
  fprintf(f, "static inline int64_t %s_kiln_max(int64_t a, int64_t b) { return a > b ? a : b; }\n", L);
  fprintf(f, "/* The tuner's key buckets: the smallest power of two >= v (0 for v <= 0), as log2+1. */\n"
             "%s_KILN_UNUSED static inline int %s_kiln_lbucket(int64_t v) {\n  int l = 0;\n"
             "  while (l < 62 && ((int64_t)1 << l) < v) l++;\n  return v <= 0 ? 0 : l + 1;\n}\n\n", L, L);
}

/* One embedded image: which module (variant) it belongs to, its format and arch. */
typedef struct LibImage {
  int module;
  KilnRtModuleFormat format;
  int arch;
} LibImage;

static bool is_host_format(KilnRtModuleFormat f) {
  return f == KILN_RT_MODULE_HOST_OBJECT || f == KILN_RT_MODULE_HOST_SHARED;
}

static const char *format_name(KilnRtModuleFormat f) {
  switch (f) {
  case KILN_RT_MODULE_PTX: return "KILN_RT_MODULE_PTX";
  case KILN_RT_MODULE_CUBIN: return "KILN_RT_MODULE_CUBIN";
  case KILN_RT_MODULE_HOST_SHARED: return "KILN_RT_MODULE_HOST_SHARED";
  default: return "KILN_RT_MODULE_HOST_OBJECT";
  }
}

/* Images of one module are contiguous: modules[m] = {kernel, first image, count}. */
/* Host images carry the CPU target they were built for and its features (names of letters,
 * digits, '.', '-' and ',' only: kiln_rt_host_cpu_target's, printed as they are). */
static void source_images(FILE *f, const char *L, const char *const *kern, int nmod,
                          const LibImage *im, int nimg, const char *cpu, const char *features) {
  fprintf(f, "static const KilnRtImage %s_images[%d] = {\n", L, nimg ? nimg : 1);
  for (int i = 0; i < nimg; i++) {
    fprintf(f, "  {%s, %d, %s_img%d, sizeof %s_img%d, ", format_name(im[i].format), im[i].arch,
            L, i, L, i);
    if (is_host_format(im[i].format)) fprintf(f, "\"%s\", \"%s\"},\n", cpu, features);
    else fprintf(f, "NULL, NULL},\n");
  }
  fprintf(f, "};\n\nstatic const struct {\n  const char *kernel;\n  int first, count;\n} "
             "%s_modules[%d] = {\n", L, nmod ? nmod : 1);
  for (int m = 0, i = 0; m < nmod; m++) {
    int first = i;
    while (i < nimg && im[i].module == m) i++;
    fprintf(f, "  {\"%s\", %d, %d},\n", kern[m], first, i - first);
  }
  fprintf(f, "};\n\n");
  fprintf(f, "KilnRtStatus %s_create(KilnRtDevice *dev, %s **out) {\n"
             "  if (!dev || !out) return KILN_RT_ERROR_INVALID_ARGUMENT;\n"
             "  %s *lib = calloc(1, sizeof *lib);\n"
             "  if (!lib) return KILN_RT_ERROR_OUT_OF_MEMORY;\n"
             "  lib->dev = dev;\n  pthread_mutex_init(&lib->mu, NULL);\n"
             "  *out = lib;\n  return KILN_RT_OK;\n}\n\n", L, L, L);
  fprintf(f, "void %s_destroy(%s *lib) {\n  if (!lib) return;\n"
             "  for (int i = 0; i < %d; i++) kiln_rt_module_destroy(lib->mods[i]);\n"
             "  pthread_mutex_destroy(&lib->mu);\n  free(lib);\n}\n\n", L, L, nmod);
  fprintf(f, "/* Loads module i on first use (the image that fits the device: a cubin of its arch, else\n"
             " * PTX); later calls only read the cached function. */\n"
             "static KilnRtStatus %s_function(%s *lib, int i, KilnRtFunction **fn) {\n"
             "  KilnRtStatus st = KILN_RT_OK;\n  pthread_mutex_lock(&lib->mu);\n"
             "  if (!lib->fns[i]) {\n"
             "    if (!lib->mods[i])\n"
             "      st = kiln_rt_module_load_best(lib->dev, &%s_images[%s_modules[i].first],\n"
             "                                    (size_t)%s_modules[i].count, NULL, &lib->mods[i]);\n"
             "    if (st == KILN_RT_OK)\n"
             "      st = kiln_rt_module_get_function(lib->mods[i], %s_modules[i].kernel, &lib->fns[i]);\n"
             "  }\n  *fn = lib->fns[i];\n  pthread_mutex_unlock(&lib->mu);\n  return st;\n}\n",
          L, L, L, L, L, L);
}

/* Bit i set for each parameter i the signature requires to be 1 (multiple false) or a multiple
 * of 16 (multiple true). */
static unsigned long long sig_mask(const TuneSig *s, bool multiple) {
  unsigned long long m = 0;
  for (int e = 0; e < s->n; e++)
    if (s->e[e].multiple == multiple) m |= 1ULL << s->e[e].param;
  return m;
}

static void source_table(FILE *f, const char *L, const LibKernel *k, const int *module_of) {
  fprintf(f, "\n/* ---- %s */\nstatic const struct {\n  int64_t keys[%d];\n  int module;\n"
             "  uint64_t one, d16; /* parameters promised to be 1 / multiples of 16 (bit i: param i) */\n"
             "  int untuned;\n  %s_%s_config cfg;\n} %s_%s_table[%d] = {\n",
          k->name, k->nkeys ? k->nkeys : 1, L, k->name, L, k->name, k->nvariants);
  for (int v = 0; v < k->nvariants; v++) {
    const LibVariant *var = &k->variants[v];
    fprintf(f, "  {{");
    for (int j = 0; j < (k->nkeys ? k->nkeys : 1); j++)
      fprintf(f, "%s%lldLL", j ? ", " : "", (long long)(k->nkeys ? var->keyvals[j] : 0));
    fprintf(f, "}, %d, 0x%llxULL, 0x%llxULL, %d, {", module_of[v], sig_mask(&var->sig, false),
            sig_mask(&var->sig, true), var->untuned);
    for (int c = 0; c < k->nconsts; c++) {
      long long val = 0;
      for (int b = 0; b < var->cfg.nbindings; b++)
        if (!strcmp(var->cfg.bindings[b].name, k->consts[c])) val = var->cfg.bindings[b].value;
      fprintf(f, "%lldLL, ", val);
    }
    fprintf(f, "%d, %d, \"%s\"}}, /* %s median %.4f ms */\n", var->cfg.num_warps,
            var->cfg.num_stages, var->sig.text, var->untuned ? "untuned" : "tuned", var->median_ms);
  }
  fprintf(f, "};\n\n");
}

/* "(uint64_t)(x == 1) << 3 | ..." over the parameters some variant promises something of. */
static void call_mask(FILE *f, const LibKernel *k, bool multiple) {
  unsigned long long any = 0;
  for (int v = 0; v < k->nvariants; v++) any |= sig_mask(&k->variants[v].sig, multiple);
  int n = 0;
  for (int i = 0; i < k->nparams; i++)
    if (any >> i & 1)
      fprintf(f, "%s(uint64_t)(%s %s) << %d", n++ ? " |\n      " : "", k->params[i].name,
              multiple ? "% 16 == 0" : "== 1", i);
  if (n == 0) fputs("0", f);
}

static void source_choose(FILE *f, const char *L, const LibKernel *k, int generic) {
  bool conditions = libgen_has_call_conditions(k);
  if (conditions) libgen_emit_fits(f, L, k, dispatch_params);
  fprintf(f, "static int %s_%s_choose(", L, k->name);
  dispatch_params(f, k, true);
  fprintf(f, ") {\n");
  for (int i = 0; i < k->nparams; i++)
    if (is_dispatch_param(&k->params[i])) fprintf(f, "  (void)%s;\n", k->params[i].name);
  fprintf(f, "  /* the promises this call keeps */\n  const uint64_t kiln_one = ");
  call_mask(f, k, false);
  fprintf(f, ";\n  const uint64_t kiln_d16 = ");
  call_mask(f, k, true);
  if (conditions)
    fprintf(f, ";\n  int kiln_best = -1; /* none, unless some variant's conditions on the call hold */\n"
               "  long long kiln_best_d = -1;\n");
  else
    fprintf(f, ";\n  int kiln_best = %d; /* generic: every call keeps its (no) promises */\n"
               "  long long kiln_best_d = -1;\n", generic);
  fprintf(f, "  for (int kiln_v = 0; kiln_v < %d; kiln_v++) {\n", k->nvariants);
  fprintf(f, "    if ((%s_%s_table[kiln_v].one & ~kiln_one) | (%s_%s_table[kiln_v].d16 & ~kiln_d16))\n"
             "      continue; /* compiled for arguments this call does not have */\n",
          L, k->name, L, k->name);
  if (conditions) {
    fprintf(f, "    if (!%s_%s_fits(kiln_v, ", L, k->name);
    dispatch_params(f, k, false);
    fprintf(f, "))\n      continue; /* the tune block's conditions on the call fail */\n");
  }
  fprintf(f, "    long long kiln_d = %s_%s_table[kiln_v].untuned ? 1LL << 40 : 0, kiln_t = 0;\n", L, k->name);
  for (int j = 0; j < k->nkeys; j++)
    fprintf(f, "    kiln_t = %s_kiln_lbucket(%s) - %s_kiln_lbucket(%s_%s_table[kiln_v].keys[%d]);\n"
               "    kiln_d += kiln_t < 0 ? -kiln_t : kiln_t;\n", L, k->keys[j], L, L, k->name, j);
  fprintf(f, "    (void)kiln_t;\n    if (kiln_best_d < 0 || kiln_d < kiln_best_d) {\n      kiln_best = kiln_v;\n      kiln_best_d = kiln_d;\n"
             "    }\n  }\n  return kiln_best;\n}\n\n");
  fprintf(f, "%s_%s_config %s_%s_pick(", L, k->name, L, k->name);
  dispatch_params(f, k, true);
  fprintf(f, ") {\n  int kiln_v = %s_%s_choose(", L, k->name);
  dispatch_params(f, k, false);
  fprintf(f, ");\n  if (kiln_v < 0) {\n    %s_%s_config kiln_none = {0};\n    kiln_none.signature = \"\";\n"
             "    return kiln_none; /* num_warps 0: no variant fits */\n  }\n"
             "  return %s_%s_table[kiln_v].cfg;\n}\n\n", L, k->name, L, k->name);
}

static void source_launch(FILE *f, const char *L, const LibKernel *k) {
  fprintf(f, "KilnRtStatus %s_%s(%s *lib", L, k->name, L);
  params_decl(f, k);
  fprintf(f, ",\n    %s_%s_grid_fn grid, void *grid_user, KilnRtStream *stream) {\n", L, k->name);
  fprintf(f, "  if (!lib) return KILN_RT_ERROR_INVALID_ARGUMENT;\n");
  fprintf(f, "  int kiln_v = %s_%s_choose(", L, k->name);
  dispatch_params(f, k, false);
  fprintf(f, ");\n  if (kiln_v < 0) return KILN_RT_ERROR_INVALID_ARGUMENT; /* no variant fits the call */\n");
  fprintf(f, "  const %s_%s_config *kiln_cfg = &%s_%s_table[kiln_v].cfg;\n", L, k->name, L, k->name);
  fprintf(f, "  uint32_t kiln_g[3] = {1, 1, 1};\n  if (grid) {\n    grid(kiln_cfg, grid_user, kiln_g);\n  } else {\n");
  for (int a = 0; a < k->h.ngrid; a++) {
    fprintf(f, "    int64_t kiln_g%d = ", a);
    grid_expr_c(f, L, k, k->h.grid[a]);
    fprintf(f, ";\n    if (kiln_g%d < 1 || kiln_g%d > INT32_MAX) return KILN_RT_ERROR_INVALID_ARGUMENT;\n"
               "    kiln_g[%d] = (uint32_t)kiln_g%d;\n", a, a, a, a);
  }
  fprintf(f, "  }\n  KilnRtFunction *kiln_fn;\n  KilnRtStatus kiln_st = %s_function(lib, %s_%s_table[kiln_v].module, &kiln_fn);\n"
             "  if (kiln_st != KILN_RT_OK) return kiln_st;\n  void *kiln_args[] = {", L, L, k->name);
  for (int i = 0; i < k->nparams; i++) fprintf(f, "%s&%s", i ? ", " : "", k->params[i].name);
  fprintf(f, "%s};\n", k->nparams ? "" : "0");
  fprintf(f, "  KilnRtLaunchConfig kiln_lc = {{kiln_g[0], kiln_g[1], kiln_g[2]}, (uint32_t)kiln_cfg->num_warps * 32, 0};\n"
             "  return kiln_rt_launch(kiln_fn, &kiln_lc, kiln_args, stream);\n}\n");
}

/* Variants with more promises first (stable): on equal distance the call that keeps them runs
 * the specialized code. Returns the index of the first generic variant, -1 if there is none. */
static int order_variants(LibKernel *k) {
  for (int i = 1; i < k->nvariants; i++)
    for (int j = i; j > 0 && k->variants[j].sig.n > k->variants[j - 1].sig.n; j--) {
      LibVariant t = k->variants[j];
      k->variants[j] = k->variants[j - 1];
      k->variants[j - 1] = t;
    }
  for (int v = 0; v < k->nvariants; v++)
    if (k->variants[v].sig.n == 0) return v;
  return -1;
}

/* ---------------------------------------------------------------- images and files */

static int compile_variant(const LibKernel *k, const LibVariant *v, KilnTarget target,
                           const char *cpu, KilnEmit emit, KilnBuffer *out, FILE *err) {
  KilnDefine defs[32];
  int nd = 0;
  for (int i = 0; i < v->cfg.nbindings && i < 32; i++)
    defs[nd++] = (KilnDefine){v->cfg.bindings[i].name, v->cfg.bindings[i].value};
  KilnDefine spec[TUNE_MAX_PARAMS], mult[TUNE_MAX_PARAMS];
  size_t nspec = 0, nmult = 0;
  tune_sig_defines(&v->sig, spec, &nspec, mult, &nmult);
  KilnCompileOptions o = {.path = k->path, .source = k->src, .source_len = k->srclen,
                          .kernel = k->name, .defines = defs, .num_defines = (size_t)nd,
                          .specialize = spec, .num_specialize = nspec, .multiple_of = mult,
                          .num_multiple_of = nmult, .target = target, .cpu = cpu,
                          .num_warps = v->cfg.num_warps, .num_stages = v->cfg.num_stages,
                          .diag = err};
  return (int)kiln_driver_compile(&o, emit, out);
}

static int arch_of(KilnTarget t) { return t == KILN_TARGET_SM90 ? 90 : t == KILN_TARGET_SM80 ? 80 : 0; }

/* What one variant's module holds: host targets one object; GPU targets a cubin per arch
 * (unless ptx_only) and the PTX of the first (oldest) arch, which the driver can JIT for any
 * newer GPU. */
typedef struct LibBuild {
  const LibGpuArchs *gpu; /* NULL: a host target */
  KilnTarget host;
  const char *cpu;        /* host: the CPU target */
  char features[1024];    /* host: the CPU features its code may use */
  FILE *img;
  LibImage *images;
  int nimages;
} LibBuild;

static int add_image(LibBuild *B, const char *L, int module, KilnRtModuleFormat fmt, int arch,
                     const KilnBuffer *b) {
  LibImage *ni = realloc(B->images, (size_t)(B->nimages + 1) * sizeof *ni);
  if (!ni) return 2;
  B->images = ni;
  ni[B->nimages] = (LibImage){module, fmt, arch};
  write_image(B->img, L, B->nimages++, b);
  return 0;
}

static int build_module(LibBuild *B, const char *L, int module, const LibKernel *k,
                        const LibVariant *v, FILE *err) {
  KilnBuffer b = {0};
  int rc = 0;
  if (!B->gpu) {
    rc = compile_variant(k, v, B->host, B->cpu, KILN_EMIT_OBJ, &b, err);
    /* linked into a shared object now: the program that loads it needs no C compiler */
    void *so = NULL;
    size_t so_size = 0;
    if (rc == 0 && kiln_rt_host_object_link(b.data, b.size, &so, &so_size) != KILN_RT_OK) {
      fprintf(err, "kiln: error: linking the host object of '%s': %s\n", k->name,
              kiln_rt_last_error());
      rc = 2;
    }
    if (rc == 0) rc = add_image(B, L, module, KILN_RT_MODULE_HOST_SHARED, 0,
                                &(KilnBuffer){so, so_size});
    free(so);
    kiln_buffer_free(&b);
    return rc;
  }
  for (int a = 0; a < B->gpu->narchs && rc == 0 && !B->gpu->ptx_only; a++) {
    rc = compile_variant(k, v, B->gpu->archs[a], NULL, KILN_EMIT_CUBIN, &b, err);
    if (rc == 0) rc = add_image(B, L, module, KILN_RT_MODULE_CUBIN, arch_of(B->gpu->archs[a]), &b);
    kiln_buffer_free(&b);
  }
  if (rc == 0) rc = compile_variant(k, v, B->gpu->archs[0], NULL, KILN_EMIT_PTX, &b, err);
  /* PTX is text: embed it with its NUL so that a reader may treat it as a C string */
  if (rc == 0 && b.size && b.data[b.size - 1] != '\0') {
    char *nd = realloc(b.data, b.size + 1);
    if (!nd) rc = 2;
    else (b.data = nd)[b.size++] = '\0';
  }
  if (rc == 0) rc = add_image(B, L, module, KILN_RT_MODULE_PTX, arch_of(B->gpu->archs[0]), &b);
  kiln_buffer_free(&b);
  return rc;
}

static int save(FILE *mem, char **buf, const char *dir, const char *L, const char *ext, FILE *err) {
  char path[4200];
  size_t len = 0;
  (void)len;
  if (fflush(mem) != 0) return 2;
  snprintf(path, sizeof path, "%s/%s.%s", dir, L, ext);
  if (tune_write_atomic(path, *buf, strlen(*buf)) != 0) {
    fprintf(err, "kiln: error: cannot write '%s': %s\n", path, strerror(errno));
    return 2;
  }
  return 0;
}

int kiln_libgen_emit(const char *dir, const char *L, KilnTarget target, const char *cpu,
                     const LibGpuArchs *gpu, LibKernel *ks, int nk, FILE *err) {
  if (!is_ident(L)) {
    fprintf(err, "kiln: error: library name '%s' is not a C identifier\n", L);
    return 64;
  }
  if (gpu && gpu->narchs < 1) {
    fprintf(err, "kiln: error: a cuda library needs at least one arch\n");
    return 64;
  }
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    fprintf(err, "kiln: error: cannot create '%s': %s\n", dir, strerror(errno));
    return 2;
  }
  char *hbuf = NULL, *cbuf = NULL, *ibuf = NULL;
  size_t hlen = 0, clen = 0, ilen = 0;
  FILE *h = open_memstream(&hbuf, &hlen), *c = open_memstream(&cbuf, &clen);
  LibBuild B = {.gpu = gpu, .host = target, .cpu = cpu ? cpu : "native",
                .img = open_memstream(&ibuf, &ilen)};
  int rc = h && c && B.img ? 0 : 2, nmod = 0;
  if (rc == 0 && !gpu &&
      kiln_rt_host_cpu_target(B.cpu, NULL, 0, B.features, sizeof B.features) != KILN_RT_OK) {
    fprintf(err, "kiln: error: --cpu: %s\n", kiln_rt_last_error());
    rc = 64;
  }
  const char **kern = NULL;
  int **module_of = calloc((size_t)(nk ? nk : 1), sizeof *module_of);
  int *generic = calloc((size_t)(nk ? nk : 1), sizeof *generic);
  if (!module_of || !generic) rc = 2;
  for (int i = 0; i < nk && rc == 0; i++)
    if ((generic[i] = order_variants(&ks[i])) < 0) {
      fprintf(err, "kiln: error: internal: '%s' has no generic variant\n", ks[i].name);
      rc = 2;
    }
  for (int i = 0; i < nk && rc == 0; i++) {
    module_of[i] = calloc((size_t)(ks[i].nvariants ? ks[i].nvariants : 1), sizeof(int));
    if (!module_of[i]) rc = 2;
    for (int v = 0; v < ks[i].nvariants && rc == 0; v++) {
      int same = 0; /* variants with one config and one signature share a module */
      while (same < v && (memcmp(&ks[i].variants[same].cfg, &ks[i].variants[v].cfg, sizeof(KilnTuneConfig)) ||
                          strcmp(ks[i].variants[same].sig.text, ks[i].variants[v].sig.text)))
        same++;
      if (same < v) {
        module_of[i][v] = module_of[i][same];
        continue;
      }
      rc = build_module(&B, L, nmod, &ks[i], &ks[i].variants[v], err);
      if (rc) break;
      const char **nkern = realloc(kern, (size_t)(nmod + 1) * sizeof *kern);
      if (!nkern) rc = 2;
      else (kern = nkern)[nmod] = ks[i].name;
      module_of[i][v] = nmod++;
    }
  }
  if (rc == 0) {
    write_header(h, L, ks, nk);
    source_prelude(c, L, nmod ? nmod : 1);
    libgen_emit_checked_ops(c, L);
    fflush(B.img);
    fputs(ibuf, c);
    source_images(c, L, kern, nmod, B.images, B.nimages, B.cpu, B.features);
    for (int i = 0; i < nk; i++) {
      source_table(c, L, &ks[i], module_of[i]);
      source_choose(c, L, &ks[i], generic[i]);
      source_launch(c, L, &ks[i]);
    }
    rc = save(h, &hbuf, dir, L, "h", err);
    if (rc == 0) rc = save(c, &cbuf, dir, L, "c", err);
  }
  for (int i = 0; i < nk && module_of; i++) free(module_of[i]);
  free(module_of);
  free(generic);
  free(kern);
  free(B.images);
  if (h) fclose(h);
  if (c) fclose(c);
  if (B.img) fclose(B.img);
  free(hbuf);
  free(cbuf);
  free(ibuf);
  return rc;
}
