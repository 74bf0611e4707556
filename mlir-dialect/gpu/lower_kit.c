/* lower_kit.c - the SIMT lowering's toolkit (convert-kiln-gpu-to-llvm): the per-kernel state's
 * bookkeeping (what each kiln value became, memory freed with the kernel), op creation at the
 * insertion point, constants, inline PTX, thread ids and the coordinates a layout gives them,
 * and the shared-memory arena.  The dispatcher (lower.c) and every op family (lower_*.c) build
 * with it; it calls neither, so the lowering's files depend one way. */
#include "lower_kit.h"

#include "mlir-c/Dialect/LLVM.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* ---------------------------------------------------------------- bookkeeping */

void *low_alloc(Low *L, size_t size) {
  void *p = calloc(1, size ? size : 1);
  KILN_ASSERT(p != NULL);
  if (L->n_allocs == L->cap_allocs) {
    L->cap_allocs = L->cap_allocs ? L->cap_allocs * 2 : 256;
    L->allocs = realloc(L->allocs, L->cap_allocs * sizeof *L->allocs);
    KILN_ASSERT(L->allocs != NULL);
  }
  L->allocs[L->n_allocs++] = p;
  return p;
}

Vals *low_vals(Low *L, int64_t n) {
  Vals *v = low_alloc(L, sizeof *v);
  v->n = n;
  v->v = low_alloc(L, (size_t)(n ? n : 1) * sizeof *v->v);
  return v;
}

void low_set(Low *L, MlirValue old, Vals *v) { kiln_ptr_map_put(&L->vals, old.ptr, v); }

void low_error(Low *L, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (!L->failed) mlirEmitError(L->loc, buf);
  L->failed = true;
}

Vals *low_get(Low *L, MlirValue old) {
  Vals *v = kiln_ptr_map_get(&L->vals, old.ptr);
  if (!v) {
    low_error(L, "GPU lowering: a value was used before it was lowered");
    v = low_vals(L, 1);
    v->v[0] = low_i32(L, 0);
  }
  return v;
}

MlirType low_scalar_type(Low *L, MlirType t) {
  MlirType e = kiln_ir_elem_type(t);
  if (kiln_ir_type_is_ptr(e)) return L->ptr1;
  return e;
}

/* ---------------------------------------------------------------- op creation */

MlirOperation low_op(Low *L, const char *name, const MlirValue *ops, size_t n, const MlirType *res,
                     size_t nres, const MlirNamedAttribute *attrs, size_t nattrs) {
  return kiln_ir_make(&L->b, L->loc, name, ops, n, res, nres, attrs, nattrs);
}

MlirValue low_op1(Low *L, const char *name, const MlirValue *ops, size_t n, MlirType res) {
  return mlirOperationGetResult(low_op(L, name, ops, n, &res, 1, NULL, 0), 0);
}

MlirValue low_bin(Low *L, const char *name, MlirValue a, MlirValue b) {
  MlirValue o[2] = {a, b};
  return low_op1(L, name, o, 2, mlirValueGetType(a));
}

MlirValue low_const(Low *L, MlirType t, MlirAttribute value) {
  MlirNamedAttribute a = kiln_ir_named(L->ctx, "value", value);
  return mlirOperationGetResult(low_op(L, "arith.constant", NULL, 0, &t, 1, &a, 1), 0);
}

MlirValue low_i32(Low *L, int64_t v) { return low_const(L, L->i32, mlirIntegerAttrGet(L->i32, v)); }

MlirValue low_f32(Low *L, double v) {
  return low_const(L, L->f32, mlirFloatAttrDoubleGet(L->ctx, L->f32, v));
}

bool low_is_true(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation p = mlirOpResultGetOwner(v);
  if (!kiln_ir_op_is(p, "arith.constant")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(p, mlirStringRefCreateFromCString("value"));
  return mlirAttributeIsAInteger(a) && mlirIntegerAttrGetValueInt(a) != 0 &&
         mlirTypeIsAInteger(mlirValueGetType(v)) &&
         mlirIntegerTypeGetWidth(mlirValueGetType(v)) == 1;
}

bool low_is_zero(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation p = mlirOpResultGetOwner(v);
  if (!kiln_ir_op_is(p, "arith.constant") && !kiln_ir_op_is(p, "llvm.mlir.constant")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(p, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsAInteger(a)) return mlirIntegerAttrGetValueInt(a) == 0;
  if (mlirAttributeIsAFloat(a)) {
    double d = mlirFloatAttrGetValueDouble(a);
    return d == 0 && !signbit(d);
  }
  return false;
}

MlirValue low_cmpi(Low *L, const char *pred, MlirValue a, MlirValue b) {
  static const char *const preds[] = {"eq",  "ne",  "slt", "sle", "sgt",
                                      "sge", "ult", "ule", "ugt", "uge"};
  int p = 0;
  while (p < 10 && strcmp(preds[p], pred) != 0) p++;
  KILN_ASSERT(p < 10);
  MlirValue o[2] = {a, b};
  MlirNamedAttribute at = kiln_ir_named(L->ctx, "predicate", mlirIntegerAttrGet(L->i64, p));
  return mlirOperationGetResult(low_op(L, "arith.cmpi", o, 2, &L->i1, 1, &at, 1), 0);
}

MlirValue low_cmpf(Low *L, const char *pred, MlirValue a, MlirValue b) {
  static const char *const preds[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                      "ueq",   "ugt", "uge", "ult", "ule", "une", "uno", "true"};
  int p = 0;
  while (p < 16 && strcmp(preds[p], pred) != 0) p++;
  KILN_ASSERT(p < 16);
  MlirValue o[2] = {a, b};
  MlirNamedAttribute at = kiln_ir_named(L->ctx, "predicate", mlirIntegerAttrGet(L->i64, p));
  return mlirOperationGetResult(low_op(L, "arith.cmpf", o, 2, &L->i1, 1, &at, 1), 0);
}

MlirValue low_asm(Low *L, const char *text, const char *constraints, const MlirValue *ops, size_t n,
                  MlirType rt) {
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "asm_string",
                    mlirStringAttrGet(L->ctx, mlirStringRefCreateFromCString(text))),
      kiln_ir_named(L->ctx, "constraints",
                    mlirStringAttrGet(L->ctx, mlirStringRefCreateFromCString(constraints))),
  };
  return mlirOperationGetResult(low_op(L, "llvm.inline_asm", ops, n, &rt, 1, a, 2), 0);
}

MlirOperation low_asm_effects(Low *L, const char *text, const char *constraints,
                              const MlirValue *ops, size_t n, const MlirType *res, size_t nres) {
  MlirNamedAttribute a[3] = {
      kiln_ir_named(L->ctx, "asm_string",
                    mlirStringAttrGet(L->ctx, mlirStringRefCreateFromCString(text))),
      kiln_ir_named(L->ctx, "constraints",
                    mlirStringAttrGet(L->ctx, mlirStringRefCreateFromCString(constraints))),
      kiln_ir_named(L->ctx, "has_side_effects", mlirUnitAttrGet(L->ctx)),
  };
  return low_op(L, "llvm.inline_asm", ops, n, res, nres, a, 3);
}

MlirValue low_gep(Low *L, MlirValue base, MlirValue index, MlirType elem) {
  int32_t dyn = INT32_MIN; /* "this index is an operand" */
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "elem_type", mlirTypeAttrGet(elem)),
      kiln_ir_named(L->ctx, "rawConstantIndices", mlirDenseI32ArrayGet(L->ctx, 1, &dyn)),
  };
  MlirValue o[2] = {base, index};
  MlirType rt = mlirValueGetType(base);
  return mlirOperationGetResult(low_op(L, "llvm.getelementptr", o, 2, &rt, 1, a, 2), 0);
}

MlirValue low_barrier(Low *L) {
  low_op(L, "nvvm.barrier0", NULL, 0, NULL, 0, NULL, 0);
  return (MlirValue){NULL};
}

/* ---------------------------------------------------------------- thread coordinates */

static MlirValue tid(Low *L) { return low_op1(L, "nvvm.read.ptx.sreg.tid.x", NULL, 0, L->i32); }

MlirValue low_lane(Low *L) {
  return low_bin(L, "arith.andi", tid(L), low_i32(L, KILN_GPU_WARP - 1));
}
MlirValue low_warp(Low *L) { return low_bin(L, "arith.shrui", tid(L), low_i32(L, 5)); }

static MlirValue bits(Low *L, MlirValue id, int shift, int nbits) {
  if (nbits == 0) return low_i32(L, 0);
  MlirValue v = shift ? low_bin(L, "arith.shrui", id, low_i32(L, shift)) : id;
  return low_bin(L, "arith.andi", v, low_i32(L, (1 << nbits) - 1));
}

MlirValue low_coord_base(Low *L, const KilnGpuOwn *own, int d) {
  const KilnGpuDimMap *m = &own->dim[d];
  if (!m->base_used) return (MlirValue){NULL};
  MlirValue lane = bits(L, low_lane(L), m->lane_shift, m->lane_bits);
  MlirValue warp = bits(L, low_warp(L), m->warp_shift, m->warp_bits);
  MlirValue base = low_bin(L, "arith.addi", low_bin(L, "arith.muli", warp, low_i32(L, m->warp_mul)),
                           low_bin(L, "arith.muli", lane, low_i32(L, m->lane_mul)));
  if (m->size < m->extent) base = low_bin(L, "arith.andi", base, low_i32(L, m->size - 1));
  return base;
}

MlirValue low_coord(Low *L, const KilnGpuOwn *own, int64_t j, int d) {
  int local[KILN_GPU_MAX_RANK];
  kiln_gpu_own_local(own, j, local);
  int64_t off = kiln_gpu_own_offset(own, d, local[d]);
  MlirValue base = low_coord_base(L, own, d);
  if (mlirValueIsNull(base)) return low_i32(L, off);
  return off ? low_bin(L, "arith.addi", base, low_i32(L, off)) : base;
}

/* ---------------------------------------------------------------- shared memory */

MlirValue low_smem(Low *L, int64_t offset, int64_t bytes) {
  return low_smem_at(L, L->smem_base + offset, L->smem_base + bytes);
}

MlirValue low_smem_at(Low *L, int64_t offset, int64_t bytes) {
  if (bytes > L->smem_bytes) L->smem_bytes = bytes;
  MlirNamedAttribute a =
      kiln_ir_named(L->ctx, "global_name",
                    mlirFlatSymbolRefAttrGet(L->ctx, mlirStringRefCreateFromCString("kiln_smem")));
  MlirValue base =
      mlirOperationGetResult(low_op(L, "llvm.mlir.addressof", NULL, 0, &L->ptr3, 1, &a, 1), 0);
  if (offset == 0) return base;
  return low_gep(L, base, low_i32(L, offset), L->i8);
}
