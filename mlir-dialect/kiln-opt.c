/* kiln-opt - runs kiln pipeline stages or upstream pass pipelines on an .mlir file and prints
 * the result; the driver of the lit tests.
 *
 *   kiln-opt [FILE|-] [--pass=STAGE]... [--pipeline=PIPELINE] [--full] [--target=T]
 *            [--dump-after=STAGE|all] [--emit=mlir|llvm] [--generic] [--list-stages]
 *            [--print-irdl]
 *
 * Passes run in command-line order.  Diagnostics go to stderr gcc-style; exit status 1 when
 * any stage failed. */
#include "kiln_mlir.h"

#include <stdlib.h>
#include <string.h>

static char *read_all(FILE *f) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  if (!buf)
    return NULL;
  for (size_t got; (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (cap - n < 2) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) {
        free(buf);
        return NULL;
      }
      buf = nb;
    }
  }
  buf[n] = '\0';
  return buf;
}

static void print_cb(MlirStringRef s, void *user) { fwrite(s.data, 1, s.length, user); }

static int usage(void) {
  fprintf(stderr, "usage: kiln-opt [FILE|-] [--pass=STAGE]... [--pipeline=P] [--full] "
                  "[--target=T] [--dump-after=STAGE|all] [--emit=mlir|llvm] [--generic] "
                  "[--list-stages] [--print-irdl]\n");
  return 2;
}

static bool starts(const char *s, const char *p, const char **rest) {
  size_t n = strlen(p);
  if (strncmp(s, p, n) != 0)
    return false;
  *rest = s + n;
  return true;
}

/* Runs the actions in argv order on m; returns false on the first failure. */
static bool run_actions(MlirModule m, int argc, char **argv, const char *target,
                        const char *dump_after) {
  for (int i = 1; i < argc; i++) {
    const char *v;
    KilnMlirStatus st = KILN_MLIR_OK;
    if (starts(argv[i], "--pass=", &v))
      st = kiln_pipeline_run_stage(m, v);
    else if (starts(argv[i], "--pipeline=", &v))
      st = kiln_pipeline_run_string(m, v);
    else if (strcmp(argv[i], "--full") == 0) {
      KilnPipelineOptions o = {.target = target, .dump_after = dump_after, .dump_file = stdout};
      st = kiln_pipeline_run(m, &o);
    }
    if (st != KILN_MLIR_OK)
      return false;
  }
  return true;
}

int main(int argc, char **argv) {
  const char *file = "-", *target = NULL, *dump_after = NULL, *emit = "mlir", *v;
  bool generic = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--list-stages") == 0) {
      for (size_t s = 0; kiln_pipeline_stage_name(s); s++)
        printf("%s\n", kiln_pipeline_stage_name(s));
      return 0;
    }
    if (strcmp(argv[i], "--print-irdl") == 0) {
      fputs(kiln_mlir_dialect_irdl(), stdout);
      return 0;
    }
    if (strcmp(argv[i], "--generic") == 0)
      generic = true;
    else if (starts(argv[i], "--target=", &v))
      target = v;
    else if (starts(argv[i], "--dump-after=", &v))
      dump_after = v;
    else if (starts(argv[i], "--emit=", &v))
      emit = v;
    else if (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)
      file = argv[i];
    else if (!starts(argv[i], "--pass=", &v) && !starts(argv[i], "--pipeline=", &v) &&
             strcmp(argv[i], "--full") != 0)
      return usage();
  }
  FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
  if (!in) {
    fprintf(stderr, "kiln-opt: cannot open %s\n", file);
    return 1;
  }
  char *text = read_all(in);
  if (in != stdin)
    fclose(in);
  KilnMlirContext *k = kiln_mlir_context_create();
  if (!text || !k) {
    fprintf(stderr, "kiln-opt: out of memory or dialect failed to load\n");
    free(text);
    kiln_mlir_context_destroy(k);
    return 1;
  }
  MlirModule m = kiln_mlir_parse(k, text);
  free(text);
  int rc = 1;
  if (!mlirModuleIsNull(m) && run_actions(m, argc, argv, target, dump_after)) {
    rc = 0;
    if (strcmp(emit, "llvm") == 0) {
      char *ir;
      size_t n;
      if (kiln_mlir_translate_to_llvm_ir(m, &ir, &n) == KILN_MLIR_OK) {
        fwrite(ir, 1, n, stdout);
        kiln_mlir_buffer_free(ir);
      } else {
        rc = 1;
      }
    } else {
      MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
      if (generic)
        mlirOpPrintingFlagsPrintGenericOpForm(flags);
      mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
      mlirOperationPrintWithFlags(mlirModuleGetOperation(m), flags, print_cb, stdout);
      fputc('\n', stdout);
      mlirOpPrintingFlagsDestroy(flags);
    }
  }
  kiln_mlir_diag_print(k, stderr);
  if (!mlirModuleIsNull(m))
    mlirModuleDestroy(m);
  kiln_mlir_context_destroy(k);
  return rc;
}
