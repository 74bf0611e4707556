/* kiln_mlirgen.h — turns a typed kernel (the frontend's AST after sema) into `kiln` dialect IR.
 *
 * The one place where the frontend's world (KilnKernel, spans, types) meets MLIR's. It makes
 * every implicit step of the language explicit in the IR: literal typing, element-type
 * conversions, numpy broadcasting (splat / expand_dims / broadcast), default masks and `other`
 * values, loop-carried `var`s and `if` results. */
#ifndef KILN_MLIRGEN_H
#define KILN_MLIRGEN_H

#include <stdbool.h>

#include "kiln_frontend.h"
#include "kiln_mlir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Appends a func.func for kernel `k` (typed by kiln_sema_check_kernel on compilation `c`) to the
 * body of `module`, which lives in kctx's context. Every op carries the source location of the
 * expression it came from (file path from c). Returns false when some construct could not be
 * lowered; the reason is added to c's diagnostics at its source span. Allocates nothing the
 * caller must free beyond the IR itself (owned by `module`). */
bool kiln_mlirgen_kernel(KilnCompilation *c, const KilnKernel *k, KilnMlirContext *kctx,
                         MlirModule module);

/* The MLIR type of a frontend type (scalars, !kiln.ptr<T>, tiles as tensors); a null type for
 * VOID/SHAPE/DTYPE. */
MlirType kiln_mlirgen_type(MlirContext ctx, const KilnType *t);

#ifdef __cplusplus
}
#endif
#endif
