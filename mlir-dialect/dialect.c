/* dialect.c - the kiln context: upstream registration, the IRDL dialect generated from
 * ops.def, and the diagnostic collector.
 *
 * The dialect text is assembled at compile time from ops.def (so op names, the op enum and the
 * dialect definition cannot drift apart) and parsed once per context with
 * mlirLoadIRDLDialects. */
#include "kiln_mlir_internal.h"

#include "mlir-c/Dialect/IRDL.h"
#include "mlir-c/RegisterEverything.h"

#include <pthread.h>
#include <stdio.h>

#define KILN_OP(ID, name, irdl) const char KILN_OP_NAME_##ID[] = "kiln." name;
#include "ops.def"
#undef KILN_OP

static const char *const op_names[KILN_OP_COUNT] = {
#define KILN_OP(ID, name, irdl) "kiln." name,
#include "ops.def"
#undef KILN_OP
};

static const char dialect_irdl[] = "irdl.dialect @kiln {\n"
                                   "irdl.type @ptr {\n%elem = irdl.any\nirdl.parameters(%elem)\n}\n"
#define KILN_OP(ID, name, irdl) "irdl.operation @" name " {\n" irdl "}\n"
#include "ops.def"
#undef KILN_OP
                                   "}\n";

const char *kiln_mlir_dialect_irdl(void) { return dialect_irdl; }

KilnOpId kiln_ir_op_id(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length < 5 || memcmp(n.data, "kiln.", 5) != 0) return KILN_OP_NONE;
  for (int i = 0; i < KILN_OP_COUNT; i++)
    if (strlen(op_names[i]) == n.length && memcmp(op_names[i], n.data, n.length) == 0)
      return (KilnOpId)i;
  return KILN_OP_NONE;
}

static const char *const reduce_names[KILN_REDUCE_COUNT] = {"sum", "max", "min", "argmax",
                                                            "argmin"};
static const char *const rmw_names[KILN_RMW_COUNT] = {"add", "max", "min", "xchg", "umax", "umin"};

const char *kiln_reduce_kind_name(KilnReduceKind k) {
  KILN_ASSERT(k >= 0 && k < KILN_REDUCE_COUNT);
  return reduce_names[k];
}

const char *kiln_rmw_kind_name(KilnRmwKind k) {
  KILN_ASSERT(k >= 0 && k < KILN_RMW_COUNT);
  return rmw_names[k];
}

/* ---------------------------------------------------------------- context */

struct KilnMlirContext {
  MlirContext ctx;
  MlirDiagnosticHandlerID handler;
  KilnMlirDiag *diags;
  size_t n_diags, cap_diags;
};

void kiln_types_forget_context(MlirContext ctx); /* types.c */

static char *dup_n(const char *p, size_t n) {
  char *s = malloc(n + 1);
  KILN_ASSERT(s != NULL);
  memcpy(s, p, n);
  s[n] = '\0';
  return s;
}

/* In MLIR 19 the only way back from a location to file/line/col is its printed form,
 * `loc("file":line:col)`; fused and call-site locations print the first one inside. */
static void split_location(MlirLocation loc, KilnMlirDiag *d) {
  KilnStr s = kiln_print_loc(loc);
  d->file = dup_n("", 0);
  const char *q = strstr(s.data, "(\"");
  if (q) {
    q += 2;
    const char *e = strstr(q, "\":");
    if (e) {
      int line = 0, col = 0;
      if (sscanf(e + 2, "%d:%d", &line, &col) == 2) {
        free((char *)d->file);
        d->file = dup_n(q, (size_t)(e - q));
        d->line = line;
        d->col = col;
      }
    }
  }
  kiln_str_free(&s);
}

static void push_diag(KilnMlirContext *k, MlirDiagnostic diag) {
  if (k->n_diags == k->cap_diags) {
    size_t cap = k->cap_diags ? k->cap_diags * 2 : 16;
    KilnMlirDiag *d = realloc(k->diags, cap * sizeof *d);
    KILN_ASSERT(d != NULL);
    k->diags = d;
    k->cap_diags = cap;
  }
  KilnMlirDiag *d = &k->diags[k->n_diags++];
  memset(d, 0, sizeof *d);
  switch (mlirDiagnosticGetSeverity(diag)) {
  case MlirDiagnosticError: d->severity = KILN_MLIR_SEV_ERROR; break;
  case MlirDiagnosticWarning: d->severity = KILN_MLIR_SEV_WARNING; break;
  case MlirDiagnosticNote: d->severity = KILN_MLIR_SEV_NOTE; break;
  default: d->severity = KILN_MLIR_SEV_REMARK; break;
  }
  split_location(mlirDiagnosticGetLocation(diag), d);
  KilnStr msg = {0};
  mlirDiagnosticPrint(diag, kiln_str_callback, &msg);
  d->message = msg.data ? msg.data : dup_n("", 0);
  intptr_t nn = mlirDiagnosticGetNumNotes(diag);
  for (intptr_t i = 0; i < nn; i++) {
    push_diag(k, mlirDiagnosticGetNote(diag, i));
    k->diags[k->n_diags - 1].severity = KILN_MLIR_SEV_NOTE;
  }
}

static MlirLogicalResult collect_diag(MlirDiagnostic diag, void *user) {
  push_diag((KilnMlirContext *)user, diag);
  return mlirLogicalResultSuccess();
}

static bool load_kiln_dialect(MlirContext ctx) {
  MlirModule irdl = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(dialect_irdl));
  if (mlirModuleIsNull(irdl)) return false;
  bool ok = mlirLogicalResultIsSuccess(mlirLoadIRDLDialects(irdl));
  mlirModuleDestroy(irdl);
  return ok;
}

static pthread_once_t passes_once = PTHREAD_ONCE_INIT;
static void register_passes_once(void) {
  /* Pass registration is process-global; doing it once also keeps it thread-safe. */
  mlirRegisterAllPasses();
}

KilnMlirContext *kiln_mlir_context_create(void) {
  KilnMlirContext *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  pthread_once(&passes_once, register_passes_once);
  MlirDialectRegistry reg = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(reg);
  k->ctx = mlirContextCreateWithRegistry(reg, false);
  mlirDialectRegistryDestroy(reg);
  mlirRegisterAllLLVMTranslations(k->ctx);
  mlirContextLoadAllAvailableDialects(k->ctx);
  k->handler = mlirContextAttachDiagnosticHandler(k->ctx, collect_diag, k, NULL);
  if (!load_kiln_dialect(k->ctx)) {
    kiln_mlir_diag_print(k, stderr);
    kiln_mlir_context_destroy(k);
    return NULL;
  }
  return k;
}

void kiln_mlir_context_destroy(KilnMlirContext *k) {
  if (!k) return;
  kiln_types_forget_context(k->ctx);
  mlirContextDetachDiagnosticHandler(k->ctx, k->handler);
  mlirContextDestroy(k->ctx);
  kiln_mlir_diag_clear(k);
  free(k->diags);
  free(k);
}

MlirContext kiln_mlir_context_get(KilnMlirContext *k) { return k->ctx; }

size_t kiln_mlir_diag_count(const KilnMlirContext *k) { return k->n_diags; }

const KilnMlirDiag *kiln_mlir_diag_get(const KilnMlirContext *k, size_t i) {
  return i < k->n_diags ? &k->diags[i] : NULL;
}

size_t kiln_mlir_diag_error_count(const KilnMlirContext *k) {
  size_t n = 0;
  for (size_t i = 0; i < k->n_diags; i++) n += k->diags[i].severity == KILN_MLIR_SEV_ERROR;
  return n;
}

void kiln_mlir_diag_clear(KilnMlirContext *k) {
  for (size_t i = 0; i < k->n_diags; i++) {
    free((char *)k->diags[i].file);
    free((char *)k->diags[i].message);
  }
  k->n_diags = 0;
}

void kiln_mlir_diag_print(const KilnMlirContext *k, FILE *f) {
  static const char *const sev[] = {"error", "warning", "note", "remark"};
  for (size_t i = 0; i < k->n_diags; i++) {
    const KilnMlirDiag *d = &k->diags[i];
    if (d->file[0])
      fprintf(f, "%s:%d:%d: %s: %s\n", d->file, d->line, d->col, sev[d->severity], d->message);
    else
      fprintf(f, "%s: %s\n", sev[d->severity], d->message);
  }
}

MlirModule kiln_mlir_parse(KilnMlirContext *k, const char *text) {
  return mlirModuleCreateParse(k->ctx, mlirStringRefCreateFromCString(text));
}
