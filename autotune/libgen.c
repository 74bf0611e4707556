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
 * each carries three masks of parameters (must equal 1, be divisible by 16, by 8) and the call
 * computes the same three masks of its arguments, so the check is a few integer operations. A
 * variant compiled for "sak = 1" would compute garbage with sak = 64, so correctness rests on
 * this check; every library has a generic variant (no promises) that any call keeps. Variants
 * with more promises come first (they win ties), and an untuned default only runs when no
 * tuned variant fits.
 *
 * The C is built from parsed, checked values only: grid rules and conditions from their trees,
 * names that cannot meet the user's, escaped comments and strings (libgen_names.c says how). */
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
  case KILN_SCALAR_F64: return q->is_ptr ? "double *" : "double ";
  case KILN_SCALAR_U64: return q->is_ptr ? "uint64_t *" : "uint64_t ";
  case KILN_SCALAR_U32: return q->is_ptr ? "uint32_t *" : "uint32_t ";
  case KILN_SCALAR_U16: return q->is_ptr ? "uint16_t *" : "uint16_t ";
  case KILN_SCALAR_U8: return q->is_ptr ? "uint8_t *" : "uint8_t ";
  default: return q->is_ptr ? "int8_t *" : "int8_t ";
  }
}

static void params_decl(FILE *f, const char *L, const LibKernel *k, bool header) {
  for (int i = 0; i < k->nparams; i++) {
    char name[80];
    libgen_c_name(L, k->params[i].name, name, sizeof name);
    if (header)
      fprintf(f, ", %s%s", c_type(&k->params[i]), name);
    else
      fprintf(f, ", %sp%d /* %s */", c_type(&k->params[i]), i, k->params[i].name);
  }
}

/* The integer scalars: what dispatch looks at (the keys and the signatures' parameters). */
static bool is_dispatch_param(const TuneParam *q) {
  return !q->is_ptr && !kiln_scalar_is_float(q->scalar);
}

/* "int64_t p2, int64_t p3" (decl) or "p2, p3" over the dispatch parameters; "void" when none. */
static void dispatch_params(FILE *f, const LibKernel *k, bool decl) {
  int n = 0;
  for (int i = 0; i < k->nparams; i++)
    if (is_dispatch_param(&k->params[i]))
      fprintf(f, "%s%sp%d", n++ ? ", " : "", decl ? "int64_t " : "", i);
  if (n == 0 && decl) fputs("void", f);
}

/* The same with the names the header shows ("int64_t M, int64_t N"). */
static void dispatch_params_header(FILE *f, const char *L, const LibKernel *k) {
  int n = 0;
  for (int i = 0; i < k->nparams; i++)
    if (is_dispatch_param(&k->params[i])) {
      char name[80];
      libgen_c_name(L, k->params[i].name, name, sizeof name);
      fprintf(f, "%sint64_t %s", n++ ? ", " : "", name);
    }
  if (n == 0) fputs("void", f);
}

/* Axis a of k's grid rule, parsed; -1 with the reason on err (nothing of it is written). */
static int grid_axis(const LibKernel *k, int a, TuneExpr *e, FILE *err) {
  char why[256];
  if (tune_expr_parse(k->h.grid[a], e, why, sizeof why)) {
    fprintf(err, "kiln: error: the grid rule of '%s' (axis %d) does not parse: %s\n", k->name, a,
            why);
    return -1;
  }
  for (int i = 0; i < e->count; i++) {
    const char *name = e->n[i].name;
    if (e->n[i].op != TX_NAME || !strcmp(name, "num_warps") || !strcmp(name, "num_stages"))
      continue;
    bool known = false;
    for (int c = 0; c < k->nconsts; c++) known |= !strcmp(name, k->consts[c]);
    for (int p = 0; p < k->nparams; p++)
      known |= !strcmp(name, k->params[p].name) && is_dispatch_param(&k->params[p]);
    if (!known) {
      fprintf(err,
              "kiln: error: the grid rule of '%s' (axis %d) names '%s', which is neither an "
              "integer parameter nor a const of the kernel\n",
              k->name, a, name);
      return -1;
    }
  }
  return 0;
}

/* The grid rule in the harness syntax, printed from its trees, for comments and messages. */
static char *grid_text(const LibKernel *k) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  TuneExpr *e = malloc(sizeof *e);
  if (!m || !e) {
    if (m) fclose(m);
    free(e);
    free(text);
    return NULL;
  }
  for (int a = 0; a < k->h.ngrid; a++) {
    if (a) fputs(", ", m);
    if (tune_expr_parse(k->h.grid[a], e, NULL, 0) == 0) tune_expr_print(e, m);
  }
  fclose(m);
  free(e);
  return text;
}

/* ---------------------------------------------------------------- header */

static void header_kernel(FILE *f, const char *L, const LibKernel *k) {
  const char *base = strrchr(k->path, '/');
  fprintf(f, "\n/* kernel %s (", k->name);
  libgen_comment(f, base ? base + 1 : k->path);
  fprintf(f, ") */\n");
  fprintf(f, "typedef struct %s_%s_config {\n", L, k->name);
  for (int i = 0; i < k->nconsts; i++) {
    char name[80];
    libgen_c_name(L, k->consts[i], name, sizeof name);
    fprintf(f, "  int64_t %s;\n", name);
  }
  fprintf(
      f,
      "  int num_warps, num_stages;\n"
      "  const char *signature; /* the variant's promises, e.g. \"sak=1,K%%16\" (\"\": none) */\n"
      "} %s_%s_config;\n",
      L, k->name);
  fprintf(f, "/* Computes the grid for the config the library picked. */\n");
  fprintf(f,
          "typedef void (*%s_%s_grid_fn)(const %s_%s_config *cfg, void *user, uint32_t grid[3]);\n",
          L, k->name, L, k->name);
  fprintf(f,
          "/* Launches %s with the variant tuned for the nearest key bucket among those whose\n"
          " * promises (integer arguments equal to 1 / divisible by 16 or 8) the call keeps; a "
          "generic\n"
          " * variant serves the others. Loads the variant's module on first use. A refused call\n"
          " * (no variant fits, a grid out of range) says why in kiln_rt_last_error().\n"
          " * grid NULL: the rule it was tuned with, ",
          k->name);
  char *grid = grid_text(k);
  libgen_comment(f, grid ? grid : "");
  free(grid);
  fprintf(f, " */\n");
  fprintf(f, "KilnRtStatus %s_%s(%s *lib", L, k->name, L);
  params_decl(f, L, k, true);
  fprintf(f, ",\n    %s_%s_grid_fn grid, void *grid_user, KilnRtStream *stream);\n", L, k->name);
  if (libgen_has_call_conditions(k)) {
    fprintf(
        f,
        "/* Conditions on the call (variants that break them never run; when none fits, the\n"
        " * launch returns KILN_RT_ERROR_INVALID_ARGUMENT and _pick a config with num_warps 0):");
    for (int i = 0; i < k->tune->nwheres; i++)
      if (kiln_tune_where_is_call(k->tune, i)) {
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (m) {
          libgen_print_where(m, k->tune->wheres[i], true);
          fclose(m);
        }
        fprintf(f, "\n *   where ");
        libgen_comment(f, text ? text : "...");
        free(text);
      }
    fprintf(f, " */\n");
  }
  fprintf(f, "/* The config a launch with these integer arguments uses. */\n");
  fprintf(f, "%s_%s_config %s_%s_pick(", L, k->name, L, k->name);
  dispatch_params_header(f, L, k);
  fprintf(f, ");\n");
}

static void write_header(FILE *f, const char *L, const LibKernel *ks, int nk, int index_bits) {
  fprintf(f,
          "/* %s.h — generated by kiln (kiln tune --emit-lib / kiln lib); do not edit.\n"
          " * Create one library handle per device; it owns the modules it loads.\n",
          L);
  if (index_bits == 64)
    fprintf(f, " * Offsets: 64-bit (--index-bits 64): buffers may hold 2^31 elements or more.\n");
  else
    fprintf(
        f,
        " * Offsets: 32-bit (--index-bits 32): a call whose buffer reaches 2^31 elements to the\n"
        " * end of its allocation is refused (KILN_RT_ERROR_INVALID_ARGUMENT); build with\n"
        " * --index-bits 64 for such buffers.\n");
  fprintf(
      f,
      " * Every call refuses (KILN_RT_ERROR_INVALID_ARGUMENT, with kiln_rt_last_error()) a NULL\n"
      " * pointer, a negative integer that sizes a buffer and a buffer whose size rule (its count\n"
      " * in the tuning arguments, over the call's integers) is below 1. Compiled with\n"
      " * -DKILN_LIB_CHECKED, the .c also refuses a pointer in no live allocation of the\n"
      " * library's device, or whose allocation (or part of one, kiln_rt_mem_set_parts) has no\n"
      " * room for its size rule from it on. */\n");
  fprintf(f, "#ifndef KILN_LIB_%s_H\n#define KILN_LIB_%s_H\n\n", L, L);
  fprintf(f, "#include <stdint.h>\n\n#include <kiln/kilnrt.h>\n\n#ifdef __cplusplus\nextern \"C\" "
             "{\n#endif\n\n");
  fprintf(f, "typedef struct %s %s;\n\n", L, L);
  fprintf(f, "/* A library handle on dev (which must outlive it); owned by the caller. */\n");
  fprintf(f, "KilnRtStatus %s_create(KilnRtDevice *dev, %s **out);\n", L, L);
  fprintf(f, "/* Unloads every module the handle loaded. NULL is a no-op. */\n");
  fprintf(f, "void %s_destroy(%s *lib);\n", L, L);
  for (int i = 0; i < nk; i++) header_kernel(f, L, &ks[i]);
  fprintf(f, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
}

/* ---------------------------------------------------------------- source
 *
 * The source names nothing after the user: parameters are p<i>, the file's statics kiln_gen_*
 * with kernels by index (libgen_names.c), and the handle is `struct NAME`, which no local can
 * hide. */

/* Axis of the grid that `name` stands for in a size rule (grid0, grid1, grid2 below the rule's
 * axis count, and no parameter of that name), else -1. */
static int grid_axis_name(const LibKernel *k, const char *name) {
  if (strncmp(name, "grid", 4) || name[4] < '0' || name[4] > '2' || name[5]) return -1;
  for (int p = 0; p < k->nparams; p++)
    if (!strcmp(name, k->params[p].name)) return -1;
  int a = name[4] - '0';
  return a < k->h.ngrid ? a : -1;
}

/* Node i of a grid tree as C over the launch's parameters and the picked config, in the
 * checked arithmetic (bad: an int * in scope). */
static void grid_node_c(FILE *f, const char *L, const LibKernel *k, const TuneExpr *e, int i) {
  static const char *const ck[] = {[TX_ADD] = "ADD", [TX_SUB] = "SUB", [TX_MUL] = "MUL",
                                   [TX_DIV] = "DIV", [TX_MOD] = "MOD", [TX_CDIV] = "CDIV"};
  const TuneExprNode *x = &e->n[i];
  switch (x->op) {
  case TX_INT: fprintf(f, "INT64_C(%lld)", (long long)x->ival); return;
  case TX_NAME:
    if (!strcmp(x->name, "num_warps") || !strcmp(x->name, "num_stages")) {
      fprintf(f, "(int64_t)cfg->%s", x->name);
      return;
    }
    for (int c = 0; c < k->nconsts; c++)
      if (!strcmp(x->name, k->consts[c])) {
        char name[80];
        libgen_c_name(L, k->consts[c], name, sizeof name);
        fprintf(f, "cfg->%s", name);
        return;
      }
    for (int p = 0; p < k->nparams; p++)
      if (!strcmp(x->name, k->params[p].name)) {
        fprintf(f, "(int64_t)p%d", p);
        return;
      }
    if (grid_axis_name(k, x->name) >= 0) { /* a size rule's grid axis, after the grid */
      fprintf(f, "(int64_t)g[%d]", grid_axis_name(k, x->name));
      return;
    }
    fputs("INT64_C(0)", f); /* grid_axis and size_rule refused every other name */
    return;
  case TX_NEG:
    fputs("kiln_gen_ck(KILN_GEN_CK_SUB, 0, ", f);
    grid_node_c(f, L, k, e, x->lhs);
    fputs(", bad)", f);
    return;
  case TX_MIN:
  case TX_MAX:
    fputs(x->op == TX_MIN ? "kiln_gen_min(" : "kiln_gen_max(", f);
    grid_node_c(f, L, k, e, x->lhs);
    fputs(", ", f);
    grid_node_c(f, L, k, e, x->rhs);
    fputs(")", f);
    return;
  default:
    fprintf(f, "kiln_gen_ck(KILN_GEN_CK_%s, ", ck[x->op]);
    grid_node_c(f, L, k, e, x->lhs);
    fputs(", ", f);
    grid_node_c(f, L, k, e, x->rhs);
    fputs(", bad)", f);
    return;
  }
}

static void write_image(FILE *f, int i, const KilnBuffer *b) {
  fprintf(f, "static const unsigned char kiln_gen_img%d[%zu] = {", i, b->size);
  for (size_t j = 0; j < b->size; j++)
    fprintf(f, "%s%u,", j % 24 ? "" : "\n  ", (unsigned char)b->data[j]);
  fprintf(f, "\n};\n");
}

/* The rows kiln-tune-runner --tuned-libs adds (autotune/bundle_lib.c): NAME.tuned.h beside this
 * file, compiled in with -DKILN_GEN_TUNED (KilnLibrary.cmake defines it when the file exists).
 * Its variants come after the library's own (their modules, images and table rows), so the
 * indices of the library's own never move; plan_id ties the file to this very source. Without
 * it every count is 0 and the library is what kiln made. */
static void source_tuned_hook(FILE *f, const char *L, const LibKernel *ks, int nk,
                              uint64_t plan_id) {
  fprintf(
      f,
      "/* Variants timed on a device by kiln-tune-runner --tuned-libs (docs/library.md, \"Tuned\n"
      " * on the device\"), in %s.tuned.h when compiled with -DKILN_GEN_TUNED. */\n"
      "#ifdef KILN_GEN_TUNED\n#include \"%s.tuned.h\"\n"
      "#if KILN_GEN_TUNED_PLAN != 0x%016llxULL\n"
      "#error \"%s.tuned.h was written for another build of this library: run kiln-tune-runner "
      "--tuned-libs again\"\n#endif\n#else\n"
      "#define KILN_GEN_TUNED_NMOD 0\n#define KILN_GEN_TUNED_NIMG 0\n"
      "#define KILN_GEN_TUNED_IMAGES\n#define KILN_GEN_TUNED_MODULES\n",
      L, L, (unsigned long long)plan_id, L);
  for (int i = 0; i < nk; i++)
    fprintf(f, "#define KILN_GEN_TUNED_N%d 0 /* %s */\n#define KILN_GEN_TUNED_ROWS%d\n", i,
            ks[i].name, i);
  fprintf(f, "#endif\n\n");
}

static void source_prelude(FILE *f, const char *L, int nmod, const LibKernel *ks, int nk,
                           uint64_t plan_id) {
  fprintf(f, "/* %s.c — generated by kiln; do not edit. */\n#include \"%s.h\"\n\n", L, L);
  fprintf(f, "#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n");
  source_tuned_hook(f, L, ks, nk, plan_id);
  fprintf(f,
          "struct %s {\n  KilnRtDevice *dev;\n  pthread_mutex_t mu;\n"
          "  KilnRtModule *mods[%d + KILN_GEN_TUNED_NMOD];\n"
          "  KilnRtFunction *fns[%d + KILN_GEN_TUNED_NMOD];\n};\n\n",
          L, nmod, nmod);
  fprintf(f, "#if defined(__GNUC__)\n#define KILN_GEN_UNUSED __attribute__((unused))\n#else\n"
             "#define KILN_GEN_UNUSED\n#endif\n");
  fprintf(f, "KILN_GEN_UNUSED static inline int64_t kiln_gen_min(int64_t a, int64_t b) { return a "
             "< b ? a : b; }\n");
  fprintf(f, "KILN_GEN_UNUSED static inline int64_t kiln_gen_max(int64_t a, int64_t b) { return a "
             "> b ? a : b; }\n");
  fprintf(
      f,
      "/* The tuner's key buckets: the smallest power of two >= v (0 for v <= 0), as log2+1. */\n"
      "KILN_GEN_UNUSED static inline int kiln_gen_lbucket(int64_t v) {\n  int l = 0;\n"
      "  while (l < 62 && ((int64_t)1 << l) < v) l++;\n  return v <= 0 ? 0 : l + 1;\n}\n\n");
}

/* Variant v's config and promises, and where it comes from ("untuned", "generic copy", tuned
 * when neither), as text; with its key buckets first when `keys`. What a refused call's message
 * says of a table row, and (without the keys) what a module tells kiln_rt_function_set_about. */
static void variant_text(FILE *m, const LibKernel *k, const LibVariant *var, bool keys) {
  for (int j = 0; keys && j < k->nkeys; j++)
    fprintf(m, "%s=%lld, ", k->keys[j], (long long)var->keyvals[j]);
  char cfg[256], text[256];
  tune_config_string(&var->cfg, cfg, sizeof cfg);
  tune_config_text(cfg, k->tune ? k->tune->kernel : NULL, text, sizeof text);
  fprintf(m, "%s%s%s%s", text, var->sig.n ? ", promises " : "", var->sig.text,
          var->untuned        ? ", untuned"
          : var->generic_copy ? ", generic copy"
          : keys              ? ""
                              : ", tuned");
}

/* variant_text as a C string literal. */
static void variant_about(FILE *f, const LibKernel *k, const LibVariant *var, bool keys) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (m) {
    variant_text(m, k, var, keys);
    fclose(m);
  }
  libgen_c_string(f, text ? text : "");
  free(text);
}

/* One module: the variant it was compiled from (the first of those that share it), of kernel k. */
typedef struct LibModule {
  const LibKernel *k;
  const LibVariant *var;
} LibModule;

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

/* Images of one module are contiguous: modules[m] = {kernel, first image, count, about}. */
/* Host images carry the CPU target they were built for and its features (names of letters,
 * digits, '.', '-' and ',' only: kiln_rt_host_cpu_target's, printed as they are). */
static void source_images(FILE *f, const char *L, const LibModule *mods, int nmod,
                          const LibImage *im, int nimg, const char *cpu, const char *features) {
  fprintf(f, "static const KilnRtImage kiln_gen_images[%d + KILN_GEN_TUNED_NIMG] = {\n",
          nimg ? nimg : 1);
  for (int i = 0; i < nimg; i++) {
    fprintf(f, "  {%s, %d, kiln_gen_img%d, sizeof kiln_gen_img%d, ", format_name(im[i].format),
            im[i].arch, i, i);
    if (is_host_format(im[i].format))
      fprintf(f, "\"%s\", \"%s\"},\n", cpu, features);
    else
      fprintf(f, "NULL, NULL},\n");
  }
  fprintf(f,
          "  KILN_GEN_TUNED_IMAGES\n};\n\nstatic const struct {\n  const char *kernel;\n"
          "  int first, count;\n"
          "  const char *about; /* the variant's config and promises (kiln_rt_function_about) */\n"
          "} kiln_gen_modules[%d + KILN_GEN_TUNED_NMOD] = {\n",
          nmod ? nmod : 1);
  for (int m = 0, i = 0; m < nmod; m++) {
    int first = i;
    while (i < nimg && im[i].module == m) i++;
    fprintf(f, "  {\"%s\", %d, %d, ", mods[m].k->name, first, i - first);
    variant_about(f, mods[m].k, mods[m].var, false);
    fprintf(f, "},\n");
  }
  fprintf(f, "  KILN_GEN_TUNED_MODULES\n};\n\n");
  fprintf(f,
          "KilnRtStatus %s_create(KilnRtDevice *dev, struct %s **out) {\n"
          "  if (!dev || !out)\n"
          "    return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%s_create: NULL %%s\", "
          "dev ? \"out\" : \"dev\");\n"
          "  struct %s *lib = calloc(1, sizeof *lib);\n"
          "  if (!lib) return kiln_rt_set_error(KILN_RT_ERROR_OUT_OF_MEMORY, \"%s_create: out of "
          "memory\");\n"
          "  lib->dev = dev;\n  pthread_mutex_init(&lib->mu, NULL);\n"
          "  *out = lib;\n  return KILN_RT_OK;\n}\n\n",
          L, L, L, L, L);
  fprintf(
      f,
      "void %s_destroy(struct %s *lib) {\n  if (!lib) return;\n"
      "  for (int i = 0; i < %d + KILN_GEN_TUNED_NMOD; i++) kiln_rt_module_destroy(lib->mods[i]);\n"
      "  pthread_mutex_destroy(&lib->mu);\n  free(lib);\n}\n\n",
      L, L, nmod);
  fprintf(
      f,
      "/* Loads module i on first use (the image that fits the device: a cubin of its arch, else\n"
      " * PTX) and gives its kernel the byte sizes of its n arguments (what a launch captured\n"
      " * into a graph on cpu copies); later calls only read the cached function. */\n"
      "static KilnRtStatus kiln_gen_function(struct %s *lib, int i, const size_t *sizes, size_t "
      "n,\n"
      "                                      KilnRtFunction **fn) {\n"
      "  KilnRtStatus st = KILN_RT_OK;\n  pthread_mutex_lock(&lib->mu);\n"
      "  if (!lib->fns[i]) {\n"
      "    KilnRtFunction *got = NULL;\n"
      "    if (!lib->mods[i])\n"
      "      st = kiln_rt_module_load_best(lib->dev, &kiln_gen_images[kiln_gen_modules[i].first],\n"
      "                                    (size_t)kiln_gen_modules[i].count, NULL, "
      "&lib->mods[i]);\n"
      "    if (st == KILN_RT_OK)\n"
      "      st = kiln_rt_module_get_function(lib->mods[i], kiln_gen_modules[i].kernel, &got);\n"
      "    if (st == KILN_RT_OK && n) st = kiln_rt_function_set_arg_sizes(got, sizes, n);\n"
      "    if (st == KILN_RT_OK) st = kiln_rt_function_set_about(got, kiln_gen_modules[i].about);\n"
      "    if (st == KILN_RT_OK) lib->fns[i] = got;\n"
      "  }\n  *fn = lib->fns[i];\n  pthread_mutex_unlock(&lib->mu);\n  return st;\n}\n",
      L);
}

/* Bit i set for each parameter i the signature requires to be 1 (mod 0) or a multiple of mod
 * (16 or 8). */
static unsigned long long sig_mask(const TuneSig *s, int mod) {
  unsigned long long m = 0;
  for (int e = 0; e < s->n; e++)
    if (s->e[e].mod == mod) m |= 1ULL << s->e[e].param;
  return m;
}

static void source_table(FILE *f, const char *L, const LibKernel *k, int ki, const int *module_of) {
  fprintf(f,
          "\n/* ---- kernel %s */\nstatic const struct {\n  int64_t keys[%d];\n  int module;\n"
          "  uint64_t one, d16, d8; /* parameters promised to be 1 / multiples of 16 / of 8 (bit "
          "i: param i) */\n"
          "  int untuned;\n  %s_%s_config cfg;\n  const char *about; /* for a refused call's "
          "message */\n"
          "} kiln_gen_table%d[%d + KILN_GEN_TUNED_N%d] = {\n",
          k->name, k->nkeys ? k->nkeys : 1, L, k->name, ki, k->nvariants, ki);
  for (int v = 0; v < k->nvariants; v++) {
    const LibVariant *var = &k->variants[v];
    fprintf(f, "  {{");
    for (int j = 0; j < (k->nkeys ? k->nkeys : 1); j++)
      fprintf(f, "%s%lldLL", j ? ", " : "", (long long)(k->nkeys ? var->keyvals[j] : 0));
    fprintf(f, "}, %d, 0x%llxULL, 0x%llxULL, 0x%llxULL, %d, {", module_of[v],
            sig_mask(&var->sig, 0), sig_mask(&var->sig, 16), sig_mask(&var->sig, 8), var->untuned);
    for (int c = 0; c < k->nconsts; c++) {
      long long val = 0;
      for (int b = 0; b < var->cfg.nbindings; b++)
        if (!strcmp(var->cfg.bindings[b].name, k->consts[c])) val = var->cfg.bindings[b].value;
      fprintf(f, "%lldLL, ", val);
    }
    fprintf(f, "%d, %d, ", var->cfg.num_warps, var->cfg.num_stages);
    libgen_c_string(f, var->sig.text);
    fprintf(f, "},\n   ");
    variant_about(f, k, var, true);
    fprintf(f, "}, /* %s median %.4f ms */\n",
            var->untuned        ? "untuned"
            : var->generic_copy ? "generic copy of the winner with"
                                : "tuned",
            var->median_ms);
  }
  fprintf(f, "  KILN_GEN_TUNED_ROWS%d\n};\n", ki);
  /* the parameters' names, for the message of a call that breaks a promise */
  fprintf(f, "KILN_GEN_UNUSED static const char *const kiln_gen_params%d[%d] = {", ki,
          k->nparams ? k->nparams : 1);
  for (int i = 0; i < k->nparams; i++) {
    fputs(i ? ", " : "", f);
    libgen_c_string(f, k->params[i].name);
  }
  fprintf(f, "%s};\n\n", k->nparams ? "" : "\"\"");
}

/* Whether a variant may promise something of parameter q (sig.c: the integers, not i1). */
static bool is_promisable(const TuneParam *q) {
  return is_dispatch_param(q) && q->scalar != KILN_SCALAR_I1;
}

/* "(uint64_t)(p0 == 1) << 0 | ..." (mod 0) or "(uint64_t)(p0 % 16 == 0) << 0 | ..." over every
 * parameter a variant may promise that of: the rows kiln-tune-runner adds later (NAME.tuned.h)
 * may promise what none of the library's own does. */
static void call_mask(FILE *f, const LibKernel *k, int mod) {
  unsigned long long any = 0;
  for (int v = 0; v < k->nvariants; v++) any |= sig_mask(&k->variants[v].sig, mod);
  for (int i = 0; i < k->nparams && i < 64; i++)
    if (is_promisable(&k->params[i])) any |= 1ULL << i;
  int n = 0;
  for (int i = 0; i < k->nparams; i++) {
    if (!(any >> i & 1)) continue;
    fprintf(f, "%s(uint64_t)(p%d ", n++ ? " |\n      " : "", i);
    if (mod)
      fprintf(f, "%% %d == 0) << %d", mod, i);
    else
      fprintf(f, "== 1) << %d", i);
  }
  if (n == 0) fputs("0", f);
}

/* The promises a call keeps, as locals one, d16 and d8. */
static void call_masks(FILE *f, const LibKernel *k) {
  for (int i = 0; i < k->nparams; i++)
    if (is_dispatch_param(&k->params[i])) fprintf(f, "  (void)p%d;\n", i);
  fprintf(f, "  /* the promises this call keeps */\n  const uint64_t one = ");
  call_mask(f, k, 0);
  fprintf(f, ";\n  const uint64_t d16 = ");
  call_mask(f, k, 16);
  fprintf(f, ";\n  const uint64_t d8 = ");
  call_mask(f, k, 8);
  fprintf(f, ";\n");
}

static void source_choose(FILE *f, const char *L, const LibKernel *k, int ki, int generic) {
  bool conditions = libgen_has_call_conditions(k);
  if (conditions) libgen_emit_fits(f, L, k, ki, dispatch_params);
  fprintf(f, "static int kiln_gen_choose%d(", ki);
  dispatch_params(f, k, true);
  fprintf(f, ") {\n");
  call_masks(f, k);
  if (conditions)
    fprintf(f, "  int best = -1; /* none, unless some variant's conditions on the call hold */\n"
               "  long long best_d = -1;\n  const char *why;\n");
  else
    fprintf(f,
            "  int best = %d; /* generic: every call keeps its (no) promises */\n"
            "  long long best_d = -1;\n",
            generic);
  fprintf(f, "  for (int v = 0; v < %d + KILN_GEN_TUNED_N%d; v++) {\n", k->nvariants, ki);
  fprintf(f,
          "    if ((kiln_gen_table%d[v].one & ~one) | (kiln_gen_table%d[v].d16 & ~d16) |\n"
          "        (kiln_gen_table%d[v].d8 & ~d8))\n"
          "      continue; /* compiled for arguments this call does not have */\n",
          ki, ki, ki);
  if (conditions) {
    fprintf(f, "    if (!kiln_gen_fits%d(v, ", ki);
    dispatch_params(f, k, false);
    fprintf(f, ", &why))\n      continue; /* the tune block's conditions on the call fail */\n");
  }
  fprintf(f, "    long long d = kiln_gen_table%d[v].untuned ? 1LL << 40 : 0, t = 0;\n", ki);
  for (int j = 0; j < k->nkeys; j++)
    fprintf(f,
            "    t = kiln_gen_lbucket(p%d) - kiln_gen_lbucket(kiln_gen_table%d[v].keys[%d]);\n"
            "    d += t < 0 ? -t : t;\n",
            k->keyidx[j], ki, j);
  fprintf(f,
          "    (void)t;\n    if (best_d < 0 || d < best_d) {\n      best = v;\n      best_d = d;\n"
          "    }\n  }\n  return best;\n}\n\n");
  if (conditions) {
    /* why a call was refused: every variant's broken promise or failed condition */
    fprintf(f,
            "/* The last error of a call no variant fits: what each variant needed. */\n"
            "static KilnRtStatus kiln_gen_refuse%d(",
            ki);
    dispatch_params(f, k, true);
    fprintf(f, ") {\n");
    call_masks(f, k);
    fprintf(f,
            "  char msg[2048];\n  size_t n = 0;\n  int w = snprintf(msg, sizeof msg, \"%s_%s: no "
            "variant fits the call (",
            L, k->name);
    int nd = 0;
    for (int i = 0; i < k->nparams; i++)
      if (is_dispatch_param(&k->params[i]))
        fprintf(f, "%s%s=%%lld", nd++ ? ", " : "", k->params[i].name);
    fprintf(f, ")\"");
    for (int i = 0; i < k->nparams; i++)
      if (is_dispatch_param(&k->params[i])) fprintf(f, ", (long long)p%d", i);
    fprintf(f, ");\n");
    fprintf(
        f,
        "  for (int v = 0; v < %d + KILN_GEN_TUNED_N%d && w >= 0 && (n += (size_t)w) < sizeof "
        "msg;\n"
        "       v++) {\n"
        "    uint64_t broken = kiln_gen_table%d[v].one & ~one, broken16 = kiln_gen_table%d[v].d16 "
        "& ~d16;\n"
        "    uint64_t broken8 = kiln_gen_table%d[v].d8 & ~d8;\n"
        "    int i = 0;\n    while (i < 63 && !((broken | broken16 | broken8) >> i & 1)) i++;\n"
        "    const char *why = \"\";\n"
        "    if (broken | broken16 | broken8)\n"
        "      w = snprintf(msg + n, sizeof msg - n, \"; variant %%d (%%s): promise %%s%%s not "
        "kept\", v,\n"
        "                   kiln_gen_table%d[v].about, kiln_gen_params%d[i],\n"
        "                   broken >> i & 1 ? \"=1\" : broken16 >> i & 1 ? \"%%16\" : \"%%8\");\n"
        "    else if (!kiln_gen_fits%d(v, ",
        k->nvariants, ki, ki, ki, ki, ki, ki, ki);
    dispatch_params(f, k, false);
    fprintf(f,
            ", &why))\n"
            "      w = snprintf(msg + n, sizeof msg - n, \"; variant %%d (%%s): %%s fails\", v,\n"
            "                   kiln_gen_table%d[v].about, why);\n"
            "    else\n      w = 0;\n  }\n"
            "  return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%%s\", msg);\n}\n\n",
            ki);
  }
  fprintf(f, "%s_%s_config %s_%s_pick(", L, k->name, L, k->name);
  dispatch_params(f, k, true);
  fprintf(f, ") {\n  int v = kiln_gen_choose%d(", ki);
  dispatch_params(f, k, false);
  fprintf(f,
          ");\n  if (v < 0) {\n    %s_%s_config none = {0};\n    none.signature = \"\";\n"
          "    return none; /* num_warps 0: no variant fits */\n  }\n"
          "  return kiln_gen_table%d[v].cfg;\n}\n\n",
          L, k->name, ki);
}

/* GPU code (cuda and emu) was compiled on the promise that every pointer argument is 16-byte
 * aligned (vector loads and stores); a view into a buffer at another offset would fault on the
 * GPU with a sticky misaligned-address error, or on emu with a host SIGSEGV. The call refuses it
 * first, with the parameter named. */
static void source_pointer_checks(FILE *f, const char *L, const LibKernel *k) {
  for (int i = 0; i < k->nparams; i++) {
    if (!k->params[i].is_ptr) continue;
    fprintf(
        f,
        "  if ((uintptr_t)p%d %% 16 != 0)\n"
        "    return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%s_%s: pointer %s = %%p is "
        "not 16-byte aligned (the GPU code assumes it)\", (void *)p%d);\n",
        i, L, k->name, k->params[i].name, i);
  }
}

/* The argument spec of parameter i in the tuning harness (a buffer's size rule), or NULL. */
static const TuneArgSpec *harness_spec(const LibKernel *k, int i) {
  for (int a = 0; a < k->h.nargs; a++)
    if (!strcmp(k->h.args[a].name, k->params[i].name)) return &k->h.args[a];
  return NULL;
}

/* Pointer i's size rule parsed into e (names: integer parameters, as the tuner evaluated it,
 * and the grid's axes grid0..grid2); false when it has none. *on_grid: it names an axis, so
 * it is checked once the call's grid is known (a kernel whose rows are its programs). */
static bool size_rule(const LibKernel *k, int i, TuneExpr *e, bool *on_grid) {
  const TuneArgSpec *a = harness_spec(k, i);
  *on_grid = false;
  if (!a || !a->is_buffer || tune_expr_parse(a->expr, e, NULL, 0)) return false;
  for (int n = 0; n < e->count; n++) {
    if (e->n[n].op != TX_NAME) continue;
    bool known = false;
    for (int p = 0; p < k->nparams; p++)
      known |= !strcmp(e->n[n].name, k->params[p].name) && is_dispatch_param(&k->params[p]);
    if (!known && grid_axis_name(k, e->n[n].name) >= 0) known = *on_grid = true;
    if (!known) return false;
  }
  return true;
}

static void c_string_of_expr(FILE *f, const TuneExpr *e) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (m) {
    tune_expr_print(e, m);
    fclose(m);
  }
  libgen_c_string(f, text ? text : "");
  free(text);
}

/* KILN_LIB_CHECKED: the pointer lies in a live allocation of the library's device (the runtime's
 * allocator registers each allocation's size) with room for the extent the call touches from
 * it on: kiln_n elements, the buffer's size rule evaluated over this call's integers (its
 * sizes and strides: `x: f32[(rows - 1) * ld + cols]` for padded rows). Room is counted to the
 * end of the pointer's part where the allocation was carved into tensors
 * (kiln_rt_mem_set_parts: one arena of many tensors, as the BERT trainer's, is judged tensor
 * by tensor), else to the end of the allocation. The refusal names the buffer, the bytes the
 * call needs and the bytes registered from the pointer to that end. */
static void source_checked_room(FILE *f, const char *L, const LibKernel *k, int i,
                                const TuneExpr *e) {
  const TuneParam *q = &k->params[i];
  size_t elem = tune_scalar_bytes(q->scalar);
  fprintf(
      f,
      "#ifdef KILN_LIB_CHECKED\n"
      "    if (p%d) { /* NULL only where the spec allows it ('?'): nothing to check */\n"
      "      void *kiln_base;\n      size_t kiln_have;\n"
      "      if (kiln_rt_mem_find_part(lib->dev, p%d, &kiln_base, &kiln_have) != KILN_RT_OK)\n"
      "        return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%s_%s: pointer %s = %%p "
      "is in no allocation of the library's device (KILN_LIB_CHECKED)\", (void *)p%d);\n"
      "      kiln_have -= (size_t)((const char *)p%d - (const char *)kiln_base);\n"
      "      if ((uint64_t)kiln_n > kiln_have / %zu)\n"
      "        return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%s_%s: buffer %s needs "
      "%%llu bytes (%%s = %%lld elements of %zu bytes) but %%zu bytes are registered from %s "
      "to the end of its allocation or part (KILN_LIB_CHECKED)\",\n"
      "                                 (uint64_t)kiln_n > UINT64_MAX / %zu ? (unsigned long "
      "long)UINT64_MAX "
      ": (unsigned long long)kiln_n * %zuu, ",
      i, i, L, k->name, q->name, i, i, elem, L, k->name, q->name, elem, q->name, elem, elem);
  c_string_of_expr(f, e);
  fprintf(f, ", (long long)kiln_n, kiln_have);\n    }\n#endif\n");
}

/* Each buffer's size rule whose naming the grid is `on_grid`: its count below 1 or past int64
 * refused, and under KILN_LIB_CHECKED its room (source_checked_room). Rules over the integers
 * alone are checked first; those that name the grid's axes after the grid is computed (g[]). */
static void source_size_rules(FILE *f, const char *L, const LibKernel *k, TuneExpr *e,
                              bool on_grid) {
  for (int i = 0; i < k->nparams; i++) {
    bool grid_rule;
    if (!k->params[i].is_ptr || !size_rule(k, i, e, &grid_rule) || grid_rule != on_grid) continue;
    fprintf(f, "  {\n    int ck = 0, *bad = &ck;\n    (void)bad;\n    int64_t kiln_n = ");
    grid_node_c(f, L, k, e, e->root);
    fprintf(f,
            ";\n    if (ck || kiln_n < 1)\n"
            "      return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%s_%s: buffer %s "
            "of %%s = %%lld elements (%%s): a buffer needs 1 or more\",\n                          "
            "     ",
            L, k->name, k->params[i].name);
    c_string_of_expr(f, e);
    fprintf(f, ", (long long)kiln_n, ck ? \"out of range of int64\" : \"its size rule\");\n");
    source_checked_room(f, L, k, i, e);
    fprintf(f, "  }\n");
  }
}

/* Every call, on every device, refuses what would make the kernel touch memory it was not given:
 * a NULL pointer, a negative integer that sizes a buffer, a buffer whose size rule (its `--args`
 * count, over the call's integers) is below 1 or overflows int64. What cannot be checked
 * without the allocator (a count larger than the buffer) is checked under KILN_LIB_CHECKED. */
static void source_argument_checks(FILE *f, const char *L, const LibKernel *k, TuneExpr *e) {
  bool extent[TUNE_MAX_PARAMS] = {false};
  for (int i = 0; i < k->nparams; i++) {
    if (!k->params[i].is_ptr) continue;
    const TuneArgSpec *a = harness_spec(k, i);
    if (!a || !a->nullable)
      fprintf(f,
              "  if (!p%d)\n    return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, "
              "\"%s_%s: pointer %s is NULL\");\n",
              i, L, k->name, k->params[i].name);
    bool grid_rule;
    if (!size_rule(k, i, e, &grid_rule)) continue;
    for (int n = 0; n < e->count; n++)
      for (int p = 0; p < k->nparams; p++)
        extent[p] |= e->n[n].op == TX_NAME && !strcmp(e->n[n].name, k->params[p].name);
  }
  for (int p = 0; p < k->nparams; p++)
    if (extent[p])
      fprintf(
          f,
          "  if ((int64_t)p%d < 0)\n    return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, "
          "\"%s_%s: %s = %%lld sizes a buffer and must not be negative\", (long long)p%d);\n",
          p, L, k->name, k->params[p].name, p);
  source_size_rules(f, L, k, e, false);
}

static void source_launch(FILE *f, const char *L, const LibKernel *k, int ki, TuneExpr *e,
                          bool gpu_code) {
  fprintf(f, "KilnRtStatus %s_%s(struct %s *lib", L, k->name, L);
  params_decl(f, L, k, false);
  fprintf(f, ",\n    %s_%s_grid_fn grid, void *grid_user, KilnRtStream *stream) {\n", L, k->name);
  fprintf(f,
          "  if (!lib) return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT, \"%s_%s: NULL "
          "library\");\n",
          L, k->name);
  source_argument_checks(f, L, k, e);
  if (gpu_code) source_pointer_checks(f, L, k);
  fprintf(f, "  int v = kiln_gen_choose%d(", ki);
  dispatch_params(f, k, false);
  fprintf(f, ");\n");
  if (libgen_has_call_conditions(k)) {
    fprintf(f, "  if (v < 0) return kiln_gen_refuse%d(", ki);
    dispatch_params(f, k, false);
    fprintf(f, ");\n");
  }
  fprintf(f, "  const %s_%s_config *cfg = &kiln_gen_table%d[v].cfg;\n", L, k->name, ki);
  fprintf(f,
          "  uint32_t g[3] = {1, 1, 1};\n  if (grid) {\n    grid(cfg, grid_user, g);\n  } else {\n"
          "    int ck = 0, *bad = &ck;\n    (void)bad;\n");
  for (int a = 0; a < k->h.ngrid; a++) {
    tune_expr_parse(k->h.grid[a], e, NULL, 0); /* checked by grid_axis */
    fprintf(f, "    int64_t g%d = ", a);
    grid_node_c(f, L, k, e, e->root);
    fprintf(f,
            ";\n    if (ck || g%d < 1 || g%d > INT32_MAX)\n"
            "      return kiln_rt_set_error(KILN_RT_ERROR_INVALID_ARGUMENT,\n"
            "                               \"%s_%s: grid axis %d, %%s, is %%s (1 .. 2^31-1 "
            "programs)\", ",
            a, a, L, k->name, a);
    c_string_of_expr(f, e);
    fprintf(f,
            ",\n                               ck ? \"out of range of int64\" : g%d < 1 ? \"< 1\" "
            ": \"too large\");\n"
            "    g[%d] = (uint32_t)g%d;\n",
            a, a, a);
  }
  fprintf(f, "  }\n");
  source_size_rules(f, L, k, e, true);
  fprintf(f, "  static const size_t sizes[] = {");
  for (int i = 0; i < k->nparams; i++) fprintf(f, "%ssizeof p%d", i ? ", " : "", i);
  fprintf(
      f,
      "%s};\n  KilnRtFunction *fn;\n"
      "  KilnRtStatus st = kiln_gen_function(lib, kiln_gen_table%d[v].module, sizes, %d, &fn);\n"
      "  if (st != KILN_RT_OK) return st;\n  void *args[] = {",
      k->nparams ? "" : "0", ki, k->nparams);
  for (int i = 0; i < k->nparams; i++) fprintf(f, "%s&p%d", i ? ", " : "", i);
  fprintf(f, "%s};\n", k->nparams ? "" : "0");
  fprintf(f, "  KilnRtLaunchConfig lc = {{g[0], g[1], g[2]}, (uint32_t)cfg->num_warps * 32, 0};\n"
             "  return kiln_rt_launch(fn, &lc, args, stream);\n}\n");
}

/* Variants with more promises first (stable; of as many, the one with more %16 over %8): on
 * equal distance the call that keeps them runs the most specialized code. Returns the index of
 * the first generic variant, -1 if there is none. */
static int order_variants(LibKernel *k) {
  for (int i = 1; i < k->nvariants; i++)
    for (int j = i; j > 0 && tune_sig_before(&k->variants[j].sig, &k->variants[j - 1].sig); j--) {
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
                           const char *cpu, int index_bits, KilnEmit emit, KilnBuffer *out,
                           FILE *err) {
  KilnDefine defs[32];
  int nd = 0;
  for (int i = 0; i < v->cfg.nbindings && i < 32; i++)
    defs[nd++] = (KilnDefine){v->cfg.bindings[i].name, v->cfg.bindings[i].value};
  KilnDefine spec[TUNE_MAX_PARAMS], mult[TUNE_MAX_PARAMS];
  size_t nspec = 0, nmult = 0;
  tune_sig_defines(&v->sig, spec, &nspec, mult, &nmult);
  KilnCompileOptions o = {.path = k->path,
                          .source = k->src,
                          .source_len = k->srclen,
                          .kernel = k->name,
                          .defines = defs,
                          .num_defines = (size_t)nd,
                          .specialize = spec,
                          .num_specialize = nspec,
                          .multiple_of = mult,
                          .num_multiple_of = nmult,
                          .target = target,
                          .cpu = cpu,
                          .num_warps = v->cfg.num_warps,
                          .num_stages = v->cfg.num_stages,
                          .index_bits = index_bits,
                          .diag = err};
  return (int)kiln_driver_compile(&o, emit, out);
}

static int arch_of(KilnTarget t) {
  return t == KILN_TARGET_SM90 ? 90 : t == KILN_TARGET_SM80 ? 80 : 0;
}

/* What one variant's module holds: host targets one object; GPU targets a cubin per arch
 * (unless ptx_only) and the PTX of the first (oldest) arch, which the driver can JIT for any
 * newer GPU. */
typedef struct LibBuild {
  const LibGpuArchs *gpu; /* NULL: a host target */
  KilnTarget host;
  const char *cpu;     /* host: the CPU target */
  int index_bits;      /* every variant's offsets: 32 or 64 */
  char features[1024]; /* host: the CPU features its code may use */
  FILE *img;
  LibImage *images;
  int nimages;
} LibBuild;

static int add_image(LibBuild *B, int module, KilnRtModuleFormat fmt, int arch,
                     const KilnBuffer *b) {
  LibImage *ni = realloc(B->images, (size_t)(B->nimages + 1) * sizeof *ni);
  if (!ni) return 2;
  B->images = ni;
  ni[B->nimages] = (LibImage){module, fmt, arch};
  write_image(B->img, B->nimages++, b);
  return 0;
}

static int build_module(LibBuild *B, int module, const LibKernel *k, const LibVariant *v,
                        FILE *err) {
  KilnBuffer b = {0};
  int rc = 0;
  if (!B->gpu) {
    rc = compile_variant(k, v, B->host, B->cpu, B->index_bits, KILN_EMIT_OBJ, &b, err);
    /* linked into a shared object now: the program that loads it needs no C compiler */
    void *so = NULL;
    size_t so_size = 0;
    if (rc == 0 && kiln_rt_host_object_link(b.data, b.size, &so, &so_size) != KILN_RT_OK) {
      fprintf(err, "kiln: error: linking the host object of '%s': %s\n", k->name,
              kiln_rt_last_error());
      rc = 2;
    }
    if (rc == 0)
      rc = add_image(B, module, KILN_RT_MODULE_HOST_SHARED, 0, &(KilnBuffer){so, so_size});
    free(so);
    kiln_buffer_free(&b);
    return rc;
  }
  for (int a = 0; a < B->gpu->narchs && rc == 0 && !B->gpu->ptx_only; a++) {
    rc = compile_variant(k, v, B->gpu->archs[a], NULL, B->index_bits, KILN_EMIT_CUBIN, &b, err);
    if (rc == 0) rc = add_image(B, module, KILN_RT_MODULE_CUBIN, arch_of(B->gpu->archs[a]), &b);
    kiln_buffer_free(&b);
  }
  if (rc == 0)
    rc = compile_variant(k, v, B->gpu->archs[0], NULL, B->index_bits, KILN_EMIT_PTX, &b, err);
  /* PTX is text: embed it with its NUL so that a reader may treat it as a C string */
  if (rc == 0 && b.size && b.data[b.size - 1] != '\0') {
    char *nd = realloc(b.data, b.size + 1);
    if (!nd)
      rc = 2;
    else
      (b.data = nd)[b.size++] = '\0';
  }
  if (rc == 0) rc = add_image(B, module, KILN_RT_MODULE_PTX, arch_of(B->gpu->archs[0]), &b);
  kiln_buffer_free(&b);
  return rc;
}

/* NAME.plan: what kiln-tune-runner --tuned-libs needs to add rows to this library without the
 * compiler (autotune/bundle_lib.c reads it; docs/library.md, "Tuned on the device"): per kernel
 * the identity its records carry (hash, tune block hash, pins), its parameters (which may
 * carry promises), its consts in the config struct's order and its keys; the counts the rows
 * are numbered after. Its FNV-1a hash is the plan id the source checks. */
static void write_plan(FILE *f, const char *L, const char *device, int nmod, int nimg,
                       const LibKernel *ks, int nk) {
  fprintf(f, "kiln-lib-plan 1\nlibrary %s\ndevice %s\nmodules %d\nimages %d\n", L, device, nmod,
          nimg);
  for (int i = 0; i < nk; i++) {
    const LibKernel *k = &ks[i];
    fprintf(f, "kernel %s\nhash %s\ntunehash %s\nvariants %d\nrows %s\n", k->name,
            k->source_hash[0] ? k->source_hash : "-", k->tune_hash[0] ? k->tune_hash : "-",
            k->nvariants, libgen_conditions_read_rows(k) ? "checked" : "never");
    for (int p = 0; k->pins && p < k->pins->n; p++) {
      const TunePin *q = &k->pins->pins[p];
      /* a type's name after its number, so that kiln-tune-runner's texts can say T=f16 */
      fprintf(f, "pin %s %lld%s%s\n", q->name, (long long)q->value, q->is_type ? " " : "",
              q->is_type ? kiln_scalar_name((KilnScalarKind)q->value) : "");
    }
    for (int p = 0; p < k->nparams; p++)
      fprintf(f, "param %d %s %s\n", p, k->params[p].name,
              is_promisable(&k->params[p]) ? "int" : "other");
    for (int c = 0; c < k->nconsts; c++) fprintf(f, "const %s\n", k->consts[c]);
    for (int j = 0; j < k->nkeys; j++) fprintf(f, "key %s\n", k->keys[j]);
  }
  fprintf(f, "end\n");
}

static int save(FILE *mem, char **buf, const char *dir, const char *L, const char *ext, FILE *err) {
  char path[4200];
  size_t len = 0;
  (void)len;
  if (fflush(mem) != 0) return 2;
  snprintf(path, sizeof path, "%s/%s.%s", dir, L, ext);
  if (kiln_file_write_atomic(path, *buf, strlen(*buf)) != 0) {
    fprintf(err, "kiln: error: cannot write '%s': %s\n", path, strerror(errno));
    return 2;
  }
  return 0;
}

int kiln_libgen_check_grids(const LibKernel *ks, int nk, FILE *err) {
  TuneExpr *grid = malloc(sizeof *grid);
  if (!grid) return 2;
  for (int i = 0; i < nk; i++)
    for (int a = 0; a < ks[i].h.ngrid; a++)
      if (grid_axis(&ks[i], a, grid, err)) {
        free(grid);
        return 1;
      }
  free(grid);
  return 0;
}

int kiln_libgen_emit(const char *dir, const char *L, KilnTarget target, const char *cpu,
                     int index_bits, const LibGpuArchs *gpu, LibKernel *ks, int nk, FILE *err) {
  int checked = libgen_check_names(L, ks, nk, err);
  if (checked == 0) checked = kiln_libgen_check_grids(ks, nk, err);
  if (checked) return checked;
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
  LibBuild B = {.gpu = gpu,
                .host = target,
                .cpu = cpu ? cpu : "native",
                .index_bits = index_bits == 64 ? 64 : 32,
                .img = open_memstream(&ibuf, &ilen)};
  int rc = h && c && B.img ? 0 : 2, nmod = 0;
  if (rc == 0 && !gpu &&
      kiln_rt_host_cpu_target(B.cpu, NULL, 0, B.features, sizeof B.features) != KILN_RT_OK) {
    fprintf(err, "kiln: error: --cpu: %s\n", kiln_rt_last_error());
    rc = 64;
  }
  LibModule *mods = NULL;
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
      while (same < v &&
             (memcmp(&ks[i].variants[same].cfg, &ks[i].variants[v].cfg, sizeof(KilnTuneConfig)) ||
              strcmp(ks[i].variants[same].sig.text, ks[i].variants[v].sig.text)))
        same++;
      if (same < v) {
        module_of[i][v] = module_of[i][same];
        continue;
      }
      rc = build_module(&B, nmod, &ks[i], &ks[i].variants[v], err);
      if (rc) break;
      LibModule *nmods = realloc(mods, (size_t)(nmod + 1) * sizeof *mods);
      if (!nmods)
        rc = 2;
      else
        (mods = nmods)[nmod] = (LibModule){&ks[i], &ks[i].variants[v]};
      module_of[i][v] = nmod++;
    }
  }
  char *pbuf = NULL;
  size_t plen = 0;
  FILE *plan = rc == 0 ? open_memstream(&pbuf, &plen) : NULL;
  if (rc == 0 && !plan) rc = 2;
  uint64_t plan_id = 0;
  if (rc == 0) {
    write_plan(plan, L, gpu ? "cuda" : kiln_target_name(target), nmod, B.nimages, ks, nk);
    if (fflush(plan) != 0) rc = 2;
    plan_id = tune_fnv1a(pbuf, strlen(pbuf));
  }
  if (rc == 0) {
    write_header(h, L, ks, nk, index_bits);
    source_prelude(c, L, nmod ? nmod : 1, ks, nk, plan_id);
    libgen_emit_checked_ops(c);
    fflush(B.img);
    fputs(ibuf, c);
    source_images(c, L, mods, nmod, B.images, B.nimages, B.cpu, B.features);
    TuneExpr *e = malloc(sizeof *e);
    if (!e) rc = 2;
    for (int i = 0; i < nk && e; i++) {
      source_table(c, L, &ks[i], i, module_of[i]);
      source_choose(c, L, &ks[i], i, generic[i]);
      source_launch(c, L, &ks[i], i, e, gpu || target == KILN_TARGET_EMU);
    }
    free(e);
    if (rc == 0) rc = save(h, &hbuf, dir, L, "h", err);
    if (rc == 0) rc = save(c, &cbuf, dir, L, "c", err);
    if (rc == 0) rc = save(plan, &pbuf, dir, L, "plan", err);
  }
  if (plan) fclose(plan);
  free(pbuf);
  for (int i = 0; i < nk && module_of; i++) free(module_of[i]);
  free(module_of);
  free(generic);
  free(mods);
  free(B.images);
  if (h) fclose(h);
  if (c) fclose(c);
  if (B.img) fclose(B.img);
  free(hbuf);
  free(cbuf);
  free(ibuf);
  return rc;
}
