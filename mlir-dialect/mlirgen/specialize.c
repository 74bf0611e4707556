/* specialize.c — per-compilation promises about runtime integer parameters (kiln compile
 * --specialize NAME=VALUE and --multiple-of NAME=N).
 *
 * Why: a kernel written with every stride a parameter serves row- and column-major operands
 * alike, but nothing about a runtime stride is known at compile time, so no access through it
 * may be vectorized (or copied with cp.async).  Compiling a variant for "this stride is 1" or
 * "this stride is a multiple of 8" gives the GPU's axis analysis what it needs, the way Triton
 * specializes arguments equal to 1 or divisible by 16.  The caller keeps the promise. */
#include "kiln_mlirgen.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Dialect/Func.h"

#include <stdio.h>
#include <string.h>

static MlirOperation find_func(MlirModule module, const char *name) {
  MlirBlock body = mlirModuleGetBody(module);
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    MlirAttribute sym =
        mlirOperationGetAttributeByName(o, mlirStringRefCreateFromCString("sym_name"));
    if (!mlirAttributeIsNull(sym) && mlirAttributeIsAString(sym) &&
        mlirStringRefEqual(mlirStringAttrGetValue(sym), mlirStringRefCreateFromCString(name)))
      return o;
  }
  return (MlirOperation){NULL};
}

/* The kernel's argument for runtime parameter `name`, or a null value with err filled. */
static MlirValue param_arg(MlirModule module, const KilnKernel *k, const char *name,
                           MlirOperation *func, char *err, size_t cap) {
  const KilnDecl *d = NULL;
  for (int p = 0; p < k->nparams && !d; p++)
    if (strcmp(k->params[p]->name, name) == 0) d = k->params[p];
  *func = find_func(module, k->name);
  if (!d || d->kind != KILN_DECL_PARAM || mlirOperationIsNull(*func)) {
    snprintf(err, cap, "kernel '%s' has no runtime parameter of that name%s", k->name,
             d ? " (const parameters are bound with -D)" : "");
    return (MlirValue){NULL};
  }
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(*func, 0));
  MlirValue arg = mlirBlockGetArgument(entry, d->index);
  MlirType t = mlirValueGetType(arg);
  if (!mlirTypeIsAInteger(t) || mlirIntegerTypeGetWidth(t) < 8) {
    snprintf(err, cap, "only integer parameters qualify");
    return (MlirValue){NULL};
  }
  return arg;
}

bool kiln_mlirgen_specialize(MlirModule module, const KilnKernel *k, const char *name,
                             int64_t value, bool multiple_of, char *err, size_t cap) {
  MlirOperation func;
  MlirValue arg = param_arg(module, k, name, &func, err, cap);
  if (mlirValueIsNull(arg)) return false;
  MlirContext ctx = mlirOperationGetContext(func);
  if (multiple_of) {
    if (value < 1 || value > (1 << 30)) {
      snprintf(err, cap, "expects a multiple in 1..2^30");
      return false;
    }
    mlirFuncSetArgAttr(func, mlirBlockArgumentGetArgNumber(arg),
                       mlirStringRefCreateFromCString("kiln.multiple_of"),
                       mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), value));
    return true;
  }
  MlirBlock entry = mlirBlockArgumentGetOwner(arg);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, ctx, entry);
  kiln_ir_builder_set_before(&b, mlirBlockGetFirstOperation(entry));
  MlirValue c =
      kiln_ir_build_const_int(&b, mlirOperationGetLocation(func), mlirValueGetType(arg), value);
  mlirValueReplaceAllUsesOfWith(arg, c);
  return true;
}
