/* kiln_mlirgen.h — turns a typed kernel (the frontend's AST after sema) into `kiln` dialect IR.
 *
 * The one place where the frontend's world (KilnKernel, spans, types) meets MLIR's. It makes
 * every implicit step of the language explicit in the IR: literal typing, element-type
 * conversions, numpy broadcasting (splat / expand_dims / broadcast), default masks and `other`
 * values, loop-carried `var`s and `if` results. */
#ifndef KILN_MLIRGEN_H
#define KILN_MLIRGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* A promise of the caller about runtime integer parameter `name` of kernel k (already in
 * module by kiln_mlirgen_kernel), made per compilation.  multiple_of false (kiln compile
 * --specialize): every use of the parameter becomes the constant `value`; the parameter stays in
 * the signature, so launches do not change.  multiple_of true (--multiple-of): the promise
 * multiple_of(name, value) makes in the source, recorded on the argument for the GPU's axis
 * analysis.  False, with the reason in err[0..cap), when k has no runtime integer parameter of
 * that name or the value makes no sense. */
bool kiln_mlirgen_specialize(MlirModule module, const KilnKernel *k, const char *name,
                             int64_t value, bool multiple_of, char *err, size_t cap);

/* The MLIR type of a frontend type (scalars, !kiln.ptr<T>, tiles as tensors); a null type for
 * VOID/SHAPE/DTYPE. */
MlirType kiln_mlirgen_type(MlirContext ctx, const KilnType *t);

#ifdef __cplusplus
}
#endif
#endif
