/* kiln_mlir_internal.h - shared helpers inside mlir-dialect/ (not for other folders). */
#ifndef KILN_MLIR_INTERNAL_H
#define KILN_MLIR_INTERNAL_H

#include "kiln_mlir.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"
#include "llvm-c/Types.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Broken internal invariants: always on, never compiled out. */
#define KILN_ASSERT(cond)                                                                  \
  do {                                                                                     \
    if (!(cond))                                                                           \
      kiln_mlir_assert_fail(__FILE__, __LINE__, __func__, #cond);                          \
  } while (0)
_Noreturn void kiln_mlir_assert_fail(const char *file, int line, const char *func,
                                     const char *cond);

/* A growable string: printing MLIR objects into C strings. */
typedef struct KilnStr {
  char *data;
  size_t len, cap;
} KilnStr;
void kiln_str_append(KilnStr *s, const char *p, size_t n);
void kiln_str_appendf(KilnStr *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kiln_str_free(KilnStr *s);
/* MlirStringCallback appending to a KilnStr passed as userData. */
void kiln_str_callback(MlirStringRef ref, void *user);
/* Printed forms (caller frees .data). */
KilnStr kiln_print_type(MlirType t);
KilnStr kiln_print_loc(MlirLocation l);

/* Generic op creation: every op in mlir-dialect/ is created through here (or the typed
 * builders built on it). */
typedef struct KilnOpSpec {
  const char *name;
  MlirLocation loc;
  const MlirValue *operands;
  size_t n_operands;
  const MlirType *results;
  size_t n_results;
  const MlirNamedAttribute *attrs;
  size_t n_attrs;
  MlirRegion *regions; /* ownership moves to the op */
  size_t n_regions;
} KilnOpSpec;
MlirOperation kiln_ir_create(KilnIRBuilder *b, const KilnOpSpec *spec);
MlirNamedAttribute kiln_ir_named(MlirContext ctx, const char *name, MlirAttribute a);
MlirAttribute kiln_ir_attr_i32(MlirContext ctx, int32_t v);
/* Integer attribute value by name (returns false when missing or not an integer). */
bool kiln_ir_get_int_attr(MlirOperation op, const char *name, int64_t *out);
/* String attribute by name into buf; false when missing. */
bool kiln_ir_get_str_attr(MlirOperation op, const char *name, char *buf, size_t cap);
bool kiln_ir_op_is(MlirOperation op, const char *name);
/* Op name as a NUL-terminated copy into buf. */
void kiln_ir_op_name(MlirOperation op, char *buf, size_t cap);

/* Shape helpers on tensor types (rank 0 for scalars). */
int kiln_ir_rank(MlirType t);
int64_t kiln_ir_dim(MlirType t, int i);

/* Emits an error diagnostic at loc, printf-style. */
void kiln_ir_error(MlirLocation loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Helpers for external passes: one static MlirTypeID per pass, aligned as MLIR requires. */
MlirPass kiln_pass_make(MlirTypeID id, const char *name, const char *arg, const char *desc,
                        MlirLogicalResult (*run_module)(MlirOperation module));

/* The passes' bodies (module-level), also used by the pipeline directly. */
MlirLogicalResult kiln_verify_module(MlirOperation module);
MlirLogicalResult kiln_dce_module(MlirOperation module);

/* host_float16.c: defines, in a host module, the float conversions LLVM's code generator may
 * call a runtime library for (weak, hidden). false with a message in err on failure. */
bool kiln_host_builtins_link(LLVMModuleRef mod, char *err, size_t cap);
/* host_float16.c: every phi and select of f16/bf16 values becomes one of 16-bit integers, every
 * f32 -> bf16 conversion a call of __truncsfbf2 (run after LLVM's optimizations, before code
 * generation, on a module that kiln_host_builtins_link completed). */
void kiln_host_float16_fixup(LLVMModuleRef mod);

#endif
