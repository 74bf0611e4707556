/* gpu_util.c - helpers of the GPU lowering: external passes with options, parsing small pieces
 * of IR from text (the C API has no builders for attributes such as #nvvm<shfl_kind bfly>, and
 * text is the one stable way to make them), attribute reads, kernel lookup. */
#include "gpu_internal.h"

#include "mlir-c/Pass.h"

typedef struct PassData {
  MlirLogicalResult (*run)(MlirOperation module, void *opts);
  void *opts;
  size_t opts_size;
} PassData;

static PassData *data_copy(const PassData *d) {
  PassData *c = malloc(sizeof *c);
  KILN_ASSERT(c != NULL);
  *c = *d;
  c->opts = NULL;
  if (d->opts_size) {
    c->opts = malloc(d->opts_size);
    KILN_ASSERT(c->opts != NULL);
    memcpy(c->opts, d->opts, d->opts_size);
  }
  return c;
}

static void pass_construct(void *u) { (void)u; }
static void pass_destruct(void *u) {
  PassData *d = u;
  free(d->opts);
  free(d);
}
static MlirLogicalResult pass_initialize(MlirContext ctx, void *u) {
  (void)ctx;
  (void)u;
  return mlirLogicalResultSuccess();
}
static void *pass_clone(void *u) { return data_copy(u); }
static void pass_run(MlirOperation op, MlirExternalPass pass, void *u) {
  PassData *d = u;
  if (mlirLogicalResultIsFailure(d->run(op, d->opts)))
    mlirExternalPassSignalFailure(pass);
}

MlirPass kiln_gpu_pass_make(MlirTypeID id, const char *name, const char *arg, const char *desc,
                            MlirLogicalResult (*run)(MlirOperation module, void *opts),
                            const void *opts, size_t opts_size) {
  PassData tmpl = {run, (void *)opts, opts_size};
  PassData *d = data_copy(&tmpl);
  MlirExternalPassCallbacks cb = {pass_construct, pass_destruct, pass_initialize, pass_clone,
                                  pass_run};
  return mlirCreateExternalPass(id, mlirStringRefCreateFromCString(name),
                                mlirStringRefCreateFromCString(arg),
                                mlirStringRefCreateFromCString(desc),
                                mlirStringRefCreateFromCString("builtin.module"), 0, NULL, cb, d);
}

MlirOperation kiln_gpu_parse_op(MlirContext ctx, const char *text) {
  return mlirOperationCreateParse(ctx, mlirStringRefCreateFromCString(text),
                                  mlirStringRefCreateFromCString("kiln-gpu"));
}

MlirAttribute kiln_gpu_parse_attr(MlirContext ctx, const char *text) {
  MlirAttribute a = mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString(text));
  KILN_ASSERT(!mlirAttributeIsNull(a));
  return a;
}

MlirType kiln_gpu_parse_type(MlirContext ctx, const char *text) {
  MlirType t = mlirTypeParseGet(ctx, mlirStringRefCreateFromCString(text));
  KILN_ASSERT(!mlirTypeIsNull(t));
  return t;
}

int64_t kiln_gpu_int_attr(MlirOperation op, const char *name, int64_t dflt) {
  int64_t v;
  return kiln_ir_get_int_attr(op, name, &v) ? v : dflt;
}

size_t kiln_gpu_kernels(MlirOperation module, MlirOperation *out, size_t cap) {
  size_t n = 0;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    if (!kiln_ir_op_is(o, "func.func"))
      continue;
    MlirAttribute k = mlirOperationGetAttributeByName(o, mlirStringRefCreateFromCString("kiln.kernel"));
    if (mlirAttributeIsNull(k))
      continue;
    if (n < cap)
      out[n] = o;
    n++;
  }
  return n;
}
