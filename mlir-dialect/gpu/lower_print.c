/* lower_print.c - device_print and device_assert on the GPU targets: one vprintf per element
 * the thread owns; one __assertfail where an element the thread holds is false.
 *
 * How.  PTX's printf is the system call `vprintf(fmt, args)` (ptxas and the driver know it; a
 * call of an external `vprintf` becomes `.extern .func vprintf`).  fmt is a constant string of
 * the module, the format every target prints (kiln_ir_print_format, rewrite.c):
 * "pid (X, Y, Z) idx (I, J) TEXT: VALUE\n", no idx for a scalar.  args is a buffer on the thread's stack, allocated once at
 * the function's entry, holding the arguments as CUDA's printf ABI packs them: each at its
 * natural alignment, the program ids and indices as int, the value as int (i1 zero-extended,
 * i8/i16 sign-extended), long long (i64) or double (floats widened, printed with %.9g).
 *
 * Why the owner predicate: a layout may give several threads the same element (a tile smaller
 * than the CTA's extent, a scalar); like atomics (low_owner), only the element's one owner
 * prints it, so each element prints once per program, as on the cpu target.  On the emulator the
 * call becomes kiln_emu_vprintf (emu_lower.c).
 *
 * device_assert: PTX's other system call, `__assertfail(message, file, line, function,
 * char_size)`, which CUDA's assert() makes: the driver prints the message with the block and
 * the thread and the launch fails (the context with it, as for any device-side assertion).
 * Every thread that holds a false element calls it (no owner predicate: one is enough, and a
 * copy of the element is as false as the original); message is the op's text, "FILE:LINE:COL:
 * msg", file "device_assert", line 0, function the kernel's name.  On the emulator the call
 * becomes kiln_emu_assertfail, which fails the launch with that text. */
#include "lower.h"

#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MlirOperation enclosing(MlirBlock b, const char *name) {
  MlirOperation p = mlirBlockGetParentOperation(b);
  while (!mlirOperationIsNull(p) && !kiln_ir_op_is(p, name)) p = mlirOperationGetParentOperation(p);
  return p;
}

/* `bytes` bytes, 8-aligned, on the stack of the function being built, allocated at its entry
 * (an alloca in a loop body would grow the stack each iteration). */
static MlirValue entry_buffer(Low *L, int64_t bytes) {
  MlirOperation func = enclosing(L->b.block, "llvm.func");
  KILN_ASSERT(!mlirOperationIsNull(func));
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_init(&L->b, L->ctx, entry);
  kiln_ir_builder_set_before(&L->b, mlirBlockGetFirstOperation(entry));
  MlirValue one = low_i32(L, 1);
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "elem_type",
                    mlirTypeAttrGet(mlirLLVMArrayTypeGet(L->i8, (unsigned)bytes))),
      kiln_ir_named(L->ctx, "alignment", mlirIntegerAttrGet(L->i64, 8)),
  };
  MlirType ptr = mlirLLVMPointerTypeGet(L->ctx, 0);
  MlirValue buf = mlirOperationGetResult(low_op(L, "llvm.alloca", &one, 1, &ptr, 1, a, 2), 0);
  L->b = saved;
  return buf;
}

/* The value as the printf ABI passes it: double, long long, or int. */
static MlirValue abi_value(Low *L, MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (mlirTypeIsAFloat(t)) return low_op1(L, "arith.extf", &v, 1, mlirF64TypeGet(L->ctx));
  unsigned w = mlirIntegerTypeGetWidth(t);
  if (w >= 32) return v;
  return low_op1(L, w == 1 ? "arith.extui" : "arith.extsi", &v, 1, L->i32);
}

/* Stores the n arguments at their ABI offsets in buf and calls vprintf(fmt, buf). */
static void emit_vprintf(Low *L, MlirValue fmt, MlirValue buf, const MlirValue *args, size_t n) {
  int64_t off = 0;
  MlirType ptr = mlirLLVMPointerTypeGet(L->ctx, 0);
  for (size_t i = 0; i < n; i++) {
    MlirType t = mlirValueGetType(args[i]);
    bool wide = mlirTypeIsAF64(t) || (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 64);
    int64_t bytes = wide ? 8 : 4;
    off = (off + bytes - 1) / bytes * bytes;
    int32_t idx = (int32_t)off;
    MlirNamedAttribute g[2] = {
        kiln_ir_named(L->ctx, "elem_type", mlirTypeAttrGet(L->i8)),
        kiln_ir_named(L->ctx, "rawConstantIndices", mlirDenseI32ArrayGet(L->ctx, 1, &idx)),
    };
    MlirValue p =
        mlirOperationGetResult(low_op(L, "llvm.getelementptr", &buf, 1, &ptr, 1, g, 2), 0);
    MlirValue st[2] = {args[i], p};
    MlirNamedAttribute al = kiln_ir_named(L->ctx, "alignment", mlirIntegerAttrGet(L->i64, bytes));
    low_op(L, "llvm.store", st, 2, NULL, 0, &al, 1);
    off += bytes;
  }
  MlirValue ops[2] = {fmt, buf};
  MlirNamedAttribute c =
      kiln_ir_named(L->ctx, "callee",
                    mlirFlatSymbolRefAttrGet(L->ctx, mlirStringRefCreateFromCString("vprintf")));
  low_op(L, "llvm.call", ops, 2, &L->i32, 1, &c, 1);
}

bool low_print(Low *L, MlirOperation op) {
  MlirValue x = mlirOperationGetOperand(op, 0);
  Vals *X = low_get(L, x);
  if (L->failed) return false;
  MlirType t = mlirValueGetType(x);
  int rank = kiln_ir_rank(t);
  MlirType elem = kiln_ir_elem_type(t);
  if (mlirTypeIsAF64(elem)) {
    low_error(L, "GPU lowering: device_print of f64 (the GPU targets have no f64)");
    return false;
  }
  MlirOperation module = enclosing(L->b.block, "builtin.module");
  MlirStringRef text = mlirStringAttrGetValue(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("text")));
  char *fmt = kiln_ir_print_format(text, rank, elem);
  if (!fmt) {
    low_error(L, "out of memory");
    return false;
  }
  /* `llvm.func @vprintf(!llvm.ptr, !llvm.ptr) -> i32`, the one PTX knows */
  MlirType ptr = mlirLLVMPointerTypeGet(L->ctx, 0), vargs[2] = {ptr, ptr};
  kiln_ir_declare_external_func(module, L->loc, "vprintf",
                                mlirLLVMFunctionTypeGet(L->i32, 2, vargs, false));
  MlirValue f = kiln_ir_module_string(&L->b, L->loc, module, "kiln_print_fmt", fmt);
  free(fmt);
  MlirValue buf = entry_buffer(L, 8 * (4 + KILN_GPU_MAX_RANK));
  static const char *const ctaid[3] = {"nvvm.read.ptx.sreg.ctaid.x", "nvvm.read.ptx.sreg.ctaid.y",
                                       "nvvm.read.ptx.sreg.ctaid.z"};
  MlirValue args[4 + KILN_GPU_MAX_RANK];
  for (int i = 0; i < 3; i++) args[i] = low_op1(L, ctaid[i], NULL, 0, L->i32);
  KilnGpuOwn own = kiln_gpu_own_of_type(t);
  bool replicated;
  MlirValue owner = low_owner(L, &own, &replicated);
  for (int64_t j = 0; j < own.count; j++) {
    KilnIRBuilder saved = L->b;
    if (!mlirValueIsNull(owner)) {
      KilnIRIf c = kiln_ir_build_if(&L->b, L->loc, owner, NULL, 0);
      kiln_ir_builder_set_end(&L->b, c.else_block);
      kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
      kiln_ir_builder_set_end(&L->b, c.then_block);
    }
    size_t n = 3;
    for (int d = 0; d < rank; d++) args[n++] = low_coord(L, &own, j, d);
    args[n++] = abi_value(L, X->v[X->n == 1 ? 0 : j]);
    emit_vprintf(L, f, buf, args, n);
    if (!mlirValueIsNull(owner)) kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
    L->b = saved;
  }
  return true;
}

bool low_assert(Low *L, MlirOperation op) {
  MlirValue c = mlirOperationGetOperand(op, 0);
  Vals *C = low_get(L, c);
  if (L->failed) return false;
  MlirOperation module = enclosing(L->b.block, "builtin.module");
  MlirOperation func = enclosing(L->b.block, "llvm.func");
  KILN_ASSERT(!mlirOperationIsNull(func));
  char fname[256] = "kernel";
  kiln_ir_get_str_attr(func, "sym_name", fname, sizeof fname);
  MlirStringRef text = mlirStringAttrGetValue(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("text")));
  char *msg = strndup(text.data, text.length);
  if (!msg) {
    low_error(L, "out of memory");
    return false;
  }
  /* `llvm.func @__assertfail(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, i64)`, the one PTX knows */
  MlirType ptr = mlirLLVMPointerTypeGet(L->ctx, 0), params[5] = {ptr, ptr, L->i32, ptr, L->i64};
  kiln_ir_declare_external_func(
      module, L->loc, "__assertfail",
      mlirLLVMFunctionTypeGet(mlirLLVMVoidTypeGet(L->ctx), 5, params, false));
  MlirValue args[5] = {
      kiln_ir_module_string(&L->b, L->loc, module, "kiln_assert_text", msg),
      kiln_ir_module_string(&L->b, L->loc, module, "kiln_assert_file", "device_assert"),
      low_i32(L, 0), kiln_ir_module_string(&L->b, L->loc, module, "kiln_assert_func", fname),
      low_const(L, L->i64, mlirIntegerAttrGet(L->i64, 1))};
  free(msg);
  MlirNamedAttribute callee = kiln_ir_named(
      L->ctx, "callee",
      mlirFlatSymbolRefAttrGet(L->ctx, mlirStringRefCreateFromCString("__assertfail")));
  for (int64_t j = 0; j < C->n; j++) {
    KilnIRBuilder saved = L->b;
    KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, C->v[j], NULL, 0);
    kiln_ir_builder_set_end(&L->b, f.then_block);
    kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
    kiln_ir_builder_set_end(&L->b, f.else_block);
    low_op(L, "llvm.call", args, 5, NULL, 0, &callee, 1);
    kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
    L->b = saved;
  }
  return true;
}
