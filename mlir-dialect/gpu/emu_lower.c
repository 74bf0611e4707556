/* emu_lower.c - kiln-gpu-to-emu: a module lowered for the GPU (llvm + nvvm dialects, after the
 * whole sm_80 pipeline) becomes host code that runs on the GPU emulator (runtime/emu/kiln_emu.h,
 * specified in docs/emulator.md).
 *
 * How this works.  The pass walks the module once and collects what only a GPU understands:
 * every nvvm op, the llvm.inline_asm of PTX math approximations (lower_math.c), llvm.intr.trap
 * and the `llvm.mlir.addressof @kiln_smem` that names the static shared arena.  Each is then
 * replaced in place:
 *   - special registers, barriers, shfl/vote/redux, mma.sync, ldmatrix, cp.async (also its
 *     src-size form, a call of the llvm.nvvm.cp.async.*.s intrinsic) and its groups
 *     become llvm.call of the matching kiln_emu_* intrinsic (declared once per module); results
 *     returned through memory (mma, ldmatrix, shfl's predicate) go through an alloca made at the
 *     function's entry, so a loop does not grow the fiber's stack;
 *   - sm_90's wgmma (inline PTX, gpu/wgmma.c) becomes kiln_emu_wgmma(acc, n, type, trans_a,
 *     trans_b, desc_a, desc_b) (type 0 f16, 1 bf16, 2 tf32: KilnEmuWgmmaType), or
 *     kiln_emu_wgmma_rs(acc, n, bf16, trans_b, a0..a3, desc_b) when A comes from registers,
 *     with the accumulators through an entry alloca; its fences pass their registers through
 *     or vanish (the emulated MMA completes at once), its commit and
 *     wait become kiln_emu_wgmma_commit() and kiln_emu_wgmma_wait(n) (racecheck keeps the MMA's
 *     shared-memory reads pending until then), the wait passing its registers through;
 *   - PTX's system calls vprintf (device_print) and __assertfail (device_assert) become
 *     kiln_emu_vprintf and kiln_emu_assertfail with the same arguments;
 *   - PTX approximations become kiln_emu_approx_f32(op, x): host math by default (the emulator
 *     checks the lowering's logic), or the documented worst case in the pessimistic math mode;
 *   - @kiln_smem becomes the result of kiln_emu_shared_base(), called once at the entry of each
 *     function that uses it, so address-space-3 arithmetic (GEPs from the arena) is plain host
 *     pointer arithmetic from the block's arena;
 *   - every load, store and atomic through an address-space-1 or -3 pointer gets a call of
 *     kiln_emu_global_access / kiln_emu_shared_access just before it (bytes, the instruction's
 *     alignment, load/store/atomic): the emulator's sanitizers act there (runtime/emu/check.c).
 *     A masked access sits in the branch its mask guards, so its check only runs when it does.
 * Then every value of type !llvm.ptr<1> or !llvm.ptr<3> is retyped to the host's !llvm.ptr
 * (global memory is host memory), function types are rebuilt, and each kernel (llvm.func with
 * nvvm.kernel) becomes internal and gets two exported neighbours:
 *   void kiln_emu_entry_NAME(void **args)   args as CUDA's kernelParams (the CPU ABI's unpacking)
 *   const uint32_t kiln_emu_meta_NAME[7]   {KILN_GPU_EMU_META_VERSION, block threads
 *                                           (32 * num_warps), static shared bytes, parameters,
 *                                           dynamic shared bytes (an arena above 48 KiB),
 *                                           offset bits (kiln.index_bits), registers per
 *                                           thread (kiln.gpu.registers; 0 unknown)}
 *   const uint32_t kiln_emu_args_NAME[n]   per parameter the alignment its value needs (16 for
 *                                           pointers, 0 for scalars), checked at launch
 *   const uint32_t kiln_emu_elems_NAME[n]  per parameter the bytes of its pointee (0: a scalar
 *                                           or unknown), for the launch's 2^31-element check
 * which the runtime's emu device reads after dlopen.  Anything nvvm the pass does not know fails
 * the pass with a diagnostic naming the op, so a new GPU construct cannot slip through unchecked.
 */
#include "gpu_internal.h"

#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>

/* KILN_EMU_ACCESS_ELEM_SHIFT of runtime/emu/kiln_emu.h (the compiler does not include the
 * runtime's headers): a global access's element bytes sit above its kind. */
#define EMU_ACCESS_ELEM_SHIFT 8

typedef struct Emu {
  MlirContext ctx;
  MlirOperation module;
  MlirBlock mbody;
  MlirType i1, i32, f32, ptr, voidt;
  KilnPtrMap declared;    /* intrinsic name (interned string) -> non-NULL */
  KilnPtrMap shared_base; /* llvm.func op ptr -> MlirValue ptr of its kiln_emu_shared_base() */
  bool failed;
} Emu;

static void emu_error(Emu *E, MlirOperation op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void emu_error(Emu *E, MlirOperation op, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  mlirEmitError(mlirOperationGetLocation(op), buf);
  E->failed = true;
}

static MlirValue cst_i32(Emu *E, KilnIRBuilder *b, MlirLocation loc, int64_t v) {
  MlirNamedAttribute a = kiln_ir_named(E->ctx, "value", mlirIntegerAttrGet(E->i32, v));
  return kiln_ir_make1(b, loc, "llvm.mlir.constant", NULL, 0, E->i32, &a, 1);
}

static KilnStr type_text(MlirType t) { return kiln_print_type(t); }

/* The text of an attribute (for enum attributes such as #nvvm<shfl_kind bfly>, which the C API
 * cannot read). */
static KilnStr attr_text(MlirOperation op, const char *name) {
  KilnStr s = {0};
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (!mlirAttributeIsNull(a)) mlirAttributePrint(a, kiln_str_callback, &s);
  if (!s.data) kiln_str_append(&s, "", 0);
  return s;
}

/* Declares `llvm.func @name(args) -> ret` once per module (at its top). */
static void declare(Emu *E, const char *name, MlirType ret, const MlirType *args, size_t n) {
  MlirIdentifier id = mlirIdentifierGet(E->ctx, mlirStringRefCreateFromCString(name));
  const void *key = mlirIdentifierStr(id).data; /* interned: one pointer per name */
  if (kiln_ptr_map_get(&E->declared, key)) return;
  kiln_ptr_map_put(&E->declared, key, (void *)1);
  MlirType fty = mlirLLVMFunctionTypeGet(ret, (intptr_t)n, args, false);
  MlirNamedAttribute attrs[3] = {
      kiln_ir_named(E->ctx, "sym_name",
                    mlirStringAttrGet(E->ctx, mlirStringRefCreateFromCString(name))),
      kiln_ir_named(E->ctx, "function_type", mlirTypeAttrGet(fty)),
      kiln_ir_named(E->ctx, "linkage", kiln_gpu_parse_attr(E->ctx, "#llvm.linkage<external>")),
  };
  MlirRegion body = mlirRegionCreate();
  KilnIRBuilder mb;
  kiln_ir_builder_init(&mb, E->ctx, E->mbody);
  kiln_ir_builder_set_before(&mb, mlirBlockGetFirstOperation(E->mbody));
  KilnOpSpec s = {.name = "llvm.func",
                  .loc = mlirOperationGetLocation(E->module),
                  .attrs = attrs,
                  .n_attrs = 3,
                  .regions = &body,
                  .n_regions = 1};
  kiln_ir_create(&mb, &s);
}

static MlirType host_type(Emu *E, MlirType t) {
  return mlirTypeIsALLVMPointerType(t) && mlirLLVMPointerTypeGetAddressSpace(t) != 0 ? E->ptr : t;
}

/* llvm.call @name(ops) -> ret (ret = void type: no result; the returned value is then null). */
static MlirValue call(Emu *E, KilnIRBuilder *b, MlirLocation loc, const char *name, MlirType ret,
                      const MlirValue *ops, size_t n) {
  MlirType args[16] = {{NULL}};
  KILN_ASSERT(n <= 16);
  for (size_t i = 0; i < n; i++) /* operands in address spaces 1/3 are retyped later */
    args[i] = host_type(E, mlirValueGetType(ops[i]));
  declare(E, name, ret, args, n);
  MlirNamedAttribute a = kiln_ir_named(
      E->ctx, "callee", mlirFlatSymbolRefAttrGet(E->ctx, mlirStringRefCreateFromCString(name)));
  bool is_void = mlirTypeEqual(ret, E->voidt);
  MlirOperation c = kiln_ir_make(b, loc, "llvm.call", ops, n, &ret, is_void ? 0 : 1, &a, 1);
  return is_void ? (MlirValue){NULL} : mlirOperationGetResult(c, 0);
}

static MlirOperation parent_func(MlirOperation op) {
  MlirOperation p = mlirOperationGetParentOperation(op);
  while (!mlirOperationIsNull(p) && !kiln_ir_op_is(p, "llvm.func"))
    p = mlirOperationGetParentOperation(p);
  return p;
}

static MlirBlock entry_block(MlirOperation func) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
}

/* `count` elements of `elem` on the stack of op's function, allocated at its entry. */
static MlirValue entry_alloca(Emu *E, MlirOperation op, MlirType elem, int count) {
  MlirOperation func = parent_func(op);
  KILN_ASSERT(!mlirOperationIsNull(func));
  MlirBlock entry = entry_block(func);
  MlirLocation loc = mlirOperationGetLocation(op);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, E->ctx, entry);
  kiln_ir_builder_set_before(&b, mlirBlockGetFirstOperation(entry));
  MlirValue n = cst_i32(E, &b, loc, count);
  MlirNamedAttribute a[2] = {
      kiln_ir_named(E->ctx, "elem_type", mlirTypeAttrGet(elem)),
      kiln_ir_named(E->ctx, "alignment", mlirIntegerAttrGet(mlirIntegerTypeGet(E->ctx, 64), 16)),
  };
  return kiln_ir_make1(&b, loc, "llvm.alloca", &n, 1, E->ptr, a, 2);
}

static MlirValue gep_const(Emu *E, KilnIRBuilder *b, MlirLocation loc, MlirValue base, int i,
                           MlirType elem) {
  int32_t idx = i;
  MlirNamedAttribute a[2] = {
      kiln_ir_named(E->ctx, "elem_type", mlirTypeAttrGet(elem)),
      kiln_ir_named(E->ctx, "rawConstantIndices", mlirDenseI32ArrayGet(E->ctx, 1, &idx)),
  };
  return kiln_ir_make1(b, loc, "llvm.getelementptr", &base, 1, E->ptr, a, 2);
}

static MlirValue load(KilnIRBuilder *b, MlirLocation loc, MlirValue p, MlirType t) {
  return kiln_ir_make1(b, loc, "llvm.load", &p, 1, t, NULL, 0);
}

/* An llvm.struct value of type st from its fields. */
static MlirValue build_struct(Emu *E, KilnIRBuilder *b, MlirLocation loc, MlirType st,
                              const MlirValue *fields, int n) {
  MlirValue s = kiln_ir_make1(b, loc, "llvm.mlir.undef", NULL, 0, st, NULL, 0);
  for (int i = 0; i < n; i++) {
    int64_t pos = i;
    MlirNamedAttribute a = kiln_ir_named(E->ctx, "position", mlirDenseI64ArrayGet(E->ctx, 1, &pos));
    MlirValue o[2] = {s, fields[i]};
    s = kiln_ir_make1(b, loc, "llvm.insertvalue", o, 2, st, &a, 1);
  }
  return s;
}

/* v as an i32 register (i32 as is; f32 and 2 x 16-bit vectors bitcast). */
static MlirValue as_b32(Emu *E, KilnIRBuilder *b, MlirLocation loc, MlirValue v) {
  if (mlirTypeEqual(mlirValueGetType(v), E->i32)) return v;
  return kiln_ir_make1(b, loc, "llvm.bitcast", &v, 1, E->i32, NULL, 0);
}

static bool is_b32(Emu *E, MlirType t) {
  if (mlirTypeEqual(t, E->i32) || mlirTypeEqual(t, E->f32)) return true;
  if (mlirShapedTypeHasRank(t) && mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) == 1 &&
      mlirShapedTypeGetDimSize(t, 0) == 2) {
    MlirType e = mlirShapedTypeGetElementType(t);
    return mlirTypeIsAF16(e) || mlirTypeIsABF16(e) ||
           (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 16);
  }
  return false;
}

/* The word after `prefix` in text (e.g. "bfly" in "#nvvm<shfl_kind bfly>"), into buf. */
static void word_after(const char *text, const char *prefix, char *buf, size_t cap) {
  buf[0] = '\0';
  const char *p = text ? strstr(text, prefix) : NULL;
  if (!p) return;
  p += strlen(prefix);
  size_t n = 0;
  while (p[n] && p[n] != '>' && p[n] != ' ' && p[n] != ',' && n + 1 < cap) {
    buf[n] = p[n];
    n++;
  }
  buf[n] = '\0';
}

static int index_of(const char *w, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strcmp(w, names[i]) == 0) return i;
  return -1;
}

/* ---------------------------------------------------------------- one op each */

static void replace_results(MlirOperation op, const MlirValue *with, int n) {
  for (int i = 0; i < n; i++) mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, i), with[i]);
}

static void lower_sreg(Emu *E, KilnIRBuilder *b, MlirOperation op, const char *name) {
  static const char *const known[] = {"tid.x",    "tid.y",    "tid.z",   "ntid.x",  "ntid.y",
                                      "ntid.z",   "ctaid.x",  "ctaid.y", "ctaid.z", "nctaid.x",
                                      "nctaid.y", "nctaid.z", "laneid",  "warpid",  "warpsize"};
  const char *reg = name + strlen("nvvm.read.ptx.sreg.");
  if (index_of(reg, known, (int)(sizeof known / sizeof known[0])) < 0) {
    emu_error(E, op, "emu lowering: no emulator intrinsic for '%s'", name);
    return;
  }
  char fn[128];
  snprintf(fn, sizeof fn, "kiln_emu_%s", reg);
  for (char *p = fn; *p; p++)
    if (*p == '.') *p = '_';
  MlirValue r = call(E, b, mlirOperationGetLocation(op), fn, E->i32, NULL, 0);
  replace_results(op, &r, 1);
}

static void lower_barrier(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n == 0) {
    call(E, b, loc, "kiln_emu_barrier0", E->voidt, NULL, 0);
    return;
  }
  /* nvvm.barrier id = %a number_of_threads = %b: both optional; operandSegmentSizes tells which. */
  MlirAttribute seg =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("operandSegmentSizes"));
  int has_id = 1, has_n = 1;
  if (!mlirAttributeIsNull(seg)) {
    has_id = mlirDenseI32ArrayGetElement(seg, 0);
    has_n = mlirDenseI32ArrayGetElement(seg, 1);
  }
  MlirValue o[2];
  intptr_t k = 0;
  o[0] = has_id ? mlirOperationGetOperand(op, k++) : cst_i32(E, b, loc, 0);
  o[1] = has_n ? mlirOperationGetOperand(op, k++) : cst_i32(E, b, loc, 0);
  call(E, b, loc, "kiln_emu_barrier_sync", E->voidt, o, 2);
}

static void lower_shfl(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  static const char *const kinds[] = {"bfly", "up", "down", "idx"}; /* NVVM::ShflKind order */
  MlirLocation loc = mlirOperationGetLocation(op);
  KilnStr k = attr_text(op, "kind");
  char w[16];
  word_after(k.data, "shfl_kind ", w, sizeof w);
  kiln_str_free(&k);
  int mode = index_of(w, kinds, 4);
  MlirValue val = mlirOperationGetOperand(op, 1);
  MlirType vt = mlirValueGetType(val);
  if (mode < 0 || !is_b32(E, vt)) {
    emu_error(E, op, "emu lowering: unsupported nvvm.shfl.sync (kind '%s' or a value not 32 bits)",
              w);
    return;
  }
  bool with_pred = !mlirAttributeIsNull(mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("return_value_and_is_valid")));
  MlirValue pred = with_pred ? entry_alloca(E, op, E->i32, 1)
                             : kiln_ir_make1(b, loc, "llvm.mlir.zero", NULL, 0, E->ptr, NULL, 0);
  bool f = mlirTypeEqual(vt, E->f32);
  MlirValue a = f ? val : as_b32(E, b, loc, val);
  MlirValue o[6] = {cst_i32(E, b, loc, mode),       mlirOperationGetOperand(op, 0), a,
                    mlirOperationGetOperand(op, 2), mlirOperationGetOperand(op, 3), pred};
  MlirValue r = call(E, b, loc, f ? "kiln_emu_shfl_sync_f32" : "kiln_emu_shfl_sync_i32",
                     f ? E->f32 : E->i32, o, 6);
  if (!f && !mlirTypeEqual(vt, E->i32))
    r = kiln_ir_make1(b, loc, "llvm.bitcast", &r, 1, vt, NULL, 0);
  if (with_pred) {
    MlirValue p = load(b, loc, pred, E->i32);
    MlirValue zero = cst_i32(E, b, loc, 0);
    MlirValue cmp[2] = {p, zero};
    MlirNamedAttribute pa =
        kiln_ir_named(E->ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(E->ctx, 64), 1));
    MlirValue valid = kiln_ir_make1(b, loc, "llvm.icmp", cmp, 2, E->i1, &pa, 1); /* ne */
    MlirValue fields[2] = {r, valid};
    r = build_struct(E, b, loc, mlirValueGetType(mlirOperationGetResult(op, 0)), fields, 2);
  }
  replace_results(op, &r, 1);
}

static void lower_vote(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue p = mlirOperationGetOperand(op, 1);
  if (!mlirTypeEqual(mlirValueGetType(p), E->i32))
    p = kiln_ir_make1(b, loc, "llvm.zext", &p, 1, E->i32, NULL, 0);
  MlirValue o[3] = {cst_i32(E, b, loc, 3 /* ballot */), mlirOperationGetOperand(op, 0), p};
  MlirValue r = call(E, b, loc, "kiln_emu_vote_sync", E->i32, o, 3);
  replace_results(op, &r, 1);
}

static void lower_redux(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  static const char *const kinds[] = {"add", "min", "max", "umin", "umax", "and", "or", "xor"};
  MlirLocation loc = mlirOperationGetLocation(op);
  KilnStr k = attr_text(op, "kind");
  char w[16];
  word_after(k.data, "redux_kind ", w, sizeof w);
  kiln_str_free(&k);
  int kind = index_of(w, kinds, 8);
  if (kind < 0) {
    emu_error(E, op, "emu lowering: unsupported nvvm.redux.sync kind '%s'", w);
    return;
  }
  MlirValue o[3] = {cst_i32(E, b, loc, kind), mlirOperationGetOperand(op, 1),
                    mlirOperationGetOperand(op, 0)};
  MlirValue r = call(E, b, loc, "kiln_emu_redux_sync", E->i32, o, 3);
  replace_results(op, &r, 1);
}

static void emit_mma_call(Emu *E, KilnIRBuilder *b, MlirOperation op, const char *fn, MlirType rt,
                          MlirType acc);

static void lower_mma(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirAttribute seg =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("operandSegmentSizes"));
  KilnStr shape = attr_text(op, "shape"), ta = attr_text(op, "multiplicandAPtxType");
  int na = mlirAttributeIsNull(seg) ? 0 : mlirDenseI32ArrayGetElement(seg, 0);
  int nb = mlirAttributeIsNull(seg) ? 0 : mlirDenseI32ArrayGetElement(seg, 1);
  int nc = mlirAttributeIsNull(seg) ? 0 : mlirDenseI32ArrayGetElement(seg, 2);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  bool k16 = strstr(shape.data, "m = 16, n = 8, k = 16") != NULL;
  bool k8 = strstr(shape.data, "m = 16, n = 8, k = 8") != NULL;
  const char *fn = NULL;
  if (na == 4 && nb == 2 && nc == 4 &&
      mlirTypeEqual(mlirValueGetType(mlirOperationGetOperand(op, 6)), E->f32)) {
    MlirType a0 = mlirValueGetType(mlirOperationGetOperand(op, 0));
    bool bf16 = strstr(ta.data, "bf16") != NULL ||
                (mlirTypeIsAVector(a0) && mlirTypeIsABF16(mlirShapedTypeGetElementType(a0)));
    if (k16)
      fn = bf16 ? "kiln_emu_mma_m16n8k16_f32_bf16" : "kiln_emu_mma_m16n8k16_f32_f16";
    else if (k8 && (strstr(ta.data, "tf32") != NULL || ta.len == 0))
      fn = "kiln_emu_mma_m16n8k8_f32_tf32";
  }
  if (!fn) {
    emu_error(E, op,
              "emu lowering: unsupported nvvm.mma.sync (shape %s, A type %s): the emulator "
              "has m16n8k16 f16/bf16 and m16n8k8 tf32 with f32 accumulators",
              shape.data, ta.len ? ta.data : "unspecified");
    kiln_str_free(&shape);
    kiln_str_free(&ta);
    return;
  }
  kiln_str_free(&shape);
  kiln_str_free(&ta);
  emit_mma_call(E, b, op, fn, rt, E->f32);
}

/* A call to the emulator's mma `fn` for op (nvvm.mma.sync, or the inline PTX of a bf16 or s8
 * one): operands 0..5 the A and B registers, 6..9 the accumulators of type acc (f32, or i32 for
 * s8); one struct of 4 acc. */
static void emit_mma_call(Emu *E, KilnIRBuilder *b, MlirOperation op, const char *fn, MlirType rt,
                          MlirType acc) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue d = entry_alloca(E, op, acc, 4);
  MlirValue o[11];
  o[0] = d;
  for (int i = 0; i < 6; i++) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!is_b32(E, mlirValueGetType(v))) {
      emu_error(E, op, "emu lowering: nvvm.mma.sync operand %d is not a 32-bit register", i);
      return;
    }
    o[1 + i] = as_b32(E, b, loc, v);
  }
  for (int i = 0; i < 4; i++) o[7 + i] = mlirOperationGetOperand(op, 6 + i);
  call(E, b, loc, fn, E->voidt, o, 11);
  MlirValue f[4];
  for (int i = 0; i < 4; i++) f[i] = load(b, loc, i ? gep_const(E, b, loc, d, i, acc) : d, acc);
  MlirValue r = build_struct(E, b, loc, rt, f, 4);
  replace_results(op, &r, 1);
}

static void lower_ldmatrix(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  int num = (int)kiln_gpu_int_attr(op, "num", 0);
  KilnStr layout = attr_text(op, "layout");
  bool trans = strstr(layout.data, "col") != NULL; /* layout col = .trans */
  kiln_str_free(&layout);
  if (num != 1 && num != 2 && num != 4) {
    emu_error(E, op, "emu lowering: nvvm.ldmatrix with num = %d", num);
    return;
  }
  MlirValue d = entry_alloca(E, op, E->i32, 4);
  MlirValue o[4] = {d, cst_i32(E, b, loc, num), cst_i32(E, b, loc, trans),
                    mlirOperationGetOperand(op, 0)};
  call(E, b, loc, "kiln_emu_ldmatrix", E->voidt, o, 4);
  MlirValue f[4];
  for (int i = 0; i < num; i++)
    f[i] = load(b, loc, i ? gep_const(E, b, loc, d, i, E->i32) : d, E->i32);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  MlirValue r = num == 1 && mlirTypeEqual(rt, E->i32) ? f[0] : build_struct(E, b, loc, rt, f, num);
  replace_results(op, &r, 1);
}

static void lower_cp_async(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  int size = (int)kiln_gpu_int_attr(op, "size", 0);
  KilnStr mod = attr_text(op, "modifier");
  bool cg = strstr(mod.data, "cg") != NULL;
  kiln_str_free(&mod);
  MlirValue src_size = mlirOperationGetNumOperands(op) > 2 ? mlirOperationGetOperand(op, 2)
                                                           : cst_i32(E, b, loc, size);
  MlirValue o[5] = {mlirOperationGetOperand(op, 0), mlirOperationGetOperand(op, 1),
                    cst_i32(E, b, loc, size), src_size, cst_i32(E, b, loc, cg)};
  call(E, b, loc, "kiln_emu_cp_async", E->voidt, o, 5);
}

/* The src-size form of cp.async as the SIMT lowering writes it (lower_local.c): a call of
 * llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}.s (dst, src, src_size). */
static bool is_cp_async_intrinsic(MlirOperation op) {
  if (!kiln_ir_op_is(op, "llvm.call_intrinsic")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("intrin"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return false;
  MlirStringRef n = mlirStringAttrGetValue(a);
  return n.length > 18 && memcmp(n.data, "llvm.nvvm.cp.async", 18) == 0;
}

/* lower_math.c's mul.hi.u32 (KILN_GPU_MULHI), the high word of a 64-bit product: computed in
 * place as that product (zext, mul, lshr, trunc). */
static bool is_mulhi_intrinsic(MlirOperation op) {
  if (!kiln_ir_op_is(op, "llvm.call_intrinsic")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("intrin"));
  return !mlirAttributeIsNull(a) && mlirAttributeIsAString(a) &&
         mlirStringRefEqual(mlirStringAttrGetValue(a),
                            mlirStringRefCreateFromCString(KILN_GPU_MULHI));
}

static void lower_mulhi(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType i64 = mlirIntegerTypeGet(E->ctx, 64);
  MlirValue w[2];
  for (int i = 0; i < 2; i++) {
    MlirValue x = mlirOperationGetOperand(op, i);
    w[i] = kiln_ir_make1(b, loc, "llvm.zext", &x, 1, i64, NULL, 0);
  }
  MlirValue p = kiln_ir_make1(b, loc, "llvm.mul", w, 2, i64, NULL, 0);
  MlirNamedAttribute a = kiln_ir_named(E->ctx, "value", mlirIntegerAttrGet(i64, 32));
  MlirValue s[2] = {p, kiln_ir_make1(b, loc, "llvm.mlir.constant", NULL, 0, i64, &a, 1)};
  MlirValue hi = kiln_ir_make1(b, loc, "llvm.lshr", s, 2, i64, NULL, 0);
  MlirValue r = kiln_ir_make1(b, loc, "llvm.trunc", &hi, 1, E->i32, NULL, 0);
  replace_results(op, &r, 1);
}

/* cvt.rna.tf32.f32 (KILN_GPU_CVT_TF32_PTX) on the bits of an f32, computed in place as the cpu
 * target rounds: add half of the last kept bit (0x1000) to the bits and clear the 13 low ones
 * (to nearest, ties away from zero; a carry moves to the next binade, the largest finite values
 * to infinity); a NaN is kept as it is (its bits plus 0x1000 could carry into the sign). */
static void lower_cvt_tf32(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue x = mlirOperationGetOperand(op, 0);
  MlirValue up[2] = {x, cst_i32(E, b, loc, 0x1000)};
  MlirValue sum = kiln_ir_make1(b, loc, "llvm.add", up, 2, E->i32, NULL, 0);
  MlirValue keep[2] = {sum, cst_i32(E, b, loc, (int32_t)0xffffe000u)};
  MlirValue r = kiln_ir_make1(b, loc, "llvm.and", keep, 2, E->i32, NULL, 0);
  /* NaN: the magnitude's bits above those of infinity (0x7f800000), as unsigned */
  MlirValue mag[2] = {x, cst_i32(E, b, loc, 0x7fffffff)};
  MlirValue m = kiln_ir_make1(b, loc, "llvm.and", mag, 2, E->i32, NULL, 0);
  MlirNamedAttribute pred =
      kiln_ir_named(E->ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(E->ctx, 64), 8));
  MlirValue cmp[2] = {m, cst_i32(E, b, loc, 0x7f800000)};
  MlirValue nan = kiln_ir_make1(b, loc, "llvm.icmp", cmp, 2, E->i1, &pred, 1);
  MlirValue sel[3] = {nan, x, r};
  MlirValue out = kiln_ir_make1(b, loc, "llvm.select", sel, 3, E->i32, NULL, 0);
  replace_results(op, &out, 1);
}

/* cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 d, hi, lo (KILN_GPU_CVT_F16X2_PTX): each f32 rounded
 * to nearest even as the host's fptrunc does, lo in bits 0..15 of d, hi in 16..31. */
static void lower_cvt_x2(Emu *E, KilnIRBuilder *b, MlirOperation op, bool bf16) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType ht = bf16 ? mlirBF16TypeGet(E->ctx) : mlirF16TypeGet(E->ctx);
  MlirType i16 = mlirIntegerTypeGet(E->ctx, 16);
  MlirValue half[2];
  for (int i = 0; i < 2; i++) {
    MlirValue x = mlirOperationGetOperand(op, i);
    MlirValue h = kiln_ir_make1(b, loc, "llvm.fptrunc", &x, 1, ht, NULL, 0);
    MlirValue bits = kiln_ir_make1(b, loc, "llvm.bitcast", &h, 1, i16, NULL, 0);
    half[i] = kiln_ir_make1(b, loc, "llvm.zext", &bits, 1, E->i32, NULL, 0);
  }
  MlirValue up[2] = {half[0], cst_i32(E, b, loc, 16)};
  MlirValue hi = kiln_ir_make1(b, loc, "llvm.shl", up, 2, E->i32, NULL, 0);
  MlirValue both[2] = {hi, half[1]};
  MlirValue out = kiln_ir_make1(b, loc, "llvm.or", both, 2, E->i32, NULL, 0);
  replace_results(op, &out, 1);
}

static void lower_cp_async_intrinsic(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirStringRef n = mlirStringAttrGetValue(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("intrin")));
  char name[96];
  snprintf(name, sizeof name, "%.*s", (int)n.length, n.data);
  int size = 0;
  char kind[3] = "";
  if (sscanf(name, "llvm.nvvm.cp.async.%2[a-z].shared.global.%d.s", kind, &size) != 2 ||
      strcmp(name + strlen(name) - 2, ".s") != 0 || mlirOperationGetNumOperands(op) != 3) {
    emu_error(E, op, "emu lowering: no emulator intrinsic for '%s'", name);
    return;
  }
  MlirValue o[5] = {mlirOperationGetOperand(op, 0), mlirOperationGetOperand(op, 1),
                    cst_i32(E, b, loc, size), mlirOperationGetOperand(op, 2),
                    cst_i32(E, b, loc, strcmp(kind, "cg") == 0)};
  call(E, b, loc, "kiln_emu_cp_async", E->voidt, o, 5);
}

/* ---------------------------------------------------------------- predicated vector accesses
 *
 * lower_memory.c's `@p ld.global.v4.b32` / `@p st.global.v4.b32` (kiln_gpu_pred_access_ptx;
 * also `@p ld.global.b16`, a lone 16-bit element) become calls of a small function of this module, defined once per shape: it branches on the
 * predicate, and only where it holds checks the access (kiln_emu_global_access with the whole
 * vector's bytes and alignment, as the GPU instruction needs) and moves the words; a masked-off
 * load returns its `other` words and touches no memory, as on the GPU. */

/* The helper's text: (p, pred, words...) -> the words loaded (i32, i16 or a struct), or
 * nothing. */
static void pred_helper_text(KilnStr *t, const char *name, bool store, int words, int word_bits) {
  const char *wt = word_bits == 16 ? "i16" : "i32";
  int wbytes = word_bits / 8;
  char rt[64], vt[32];
  snprintf(rt, sizeof rt, "%s", wt);
  snprintf(vt, sizeof vt, "%s", wt);
  if (words > 1) {
    snprintf(rt, sizeof rt, "!llvm.struct<(i32");
    for (int w = 1; w < words; w++) snprintf(rt + strlen(rt), sizeof rt - strlen(rt), ", i32");
    snprintf(rt + strlen(rt), sizeof rt - strlen(rt), ")>");
    snprintf(vt, sizeof vt, "vector<%dxi32>", words);
  }
  kiln_str_appendf(t, "llvm.func internal @%s(%%p: !llvm.ptr, %%c: i1", name);
  for (int w = 0; w < words; w++) kiln_str_appendf(t, ", %%o%d: %s", w, wt);
  kiln_str_appendf(t, ")%s%s {\n  llvm.cond_br %%c, ^bb1, ^bb2\n^bb1:\n", store ? "" : " -> ",
                   store ? "" : rt);
  if (store) {
    char last[16] = "%o0";
    if (words > 1) {
      kiln_str_appendf(t, "  %%v = llvm.mlir.undef : %s\n", vt);
      for (int w = 0; w < words; w++) {
        char prev[16] = "%v";
        if (w) snprintf(prev, sizeof prev, "%%v%d", w - 1);
        kiln_str_appendf(t,
                         "  %%i%d = llvm.mlir.constant(%d : i32) : i32\n"
                         "  %%v%d = llvm.insertelement %%o%d, %s[%%i%d : i32] : %s\n",
                         w, w, w, w, prev, w, vt);
      }
      snprintf(last, sizeof last, "%%v%d", words - 1);
    }
    kiln_str_appendf(t, "  llvm.store %s, %%p {alignment = %d : i64} : %s, !llvm.ptr\n", last,
                     wbytes * words, vt);
    kiln_str_appendf(t, "  llvm.return\n^bb2:\n  llvm.return\n}\n");
    return;
  }
  kiln_str_appendf(t, "  %%v = llvm.load %%p {alignment = %d : i64} : !llvm.ptr -> %s\n",
                   wbytes * words, vt);
  if (words == 1) {
    kiln_str_appendf(t, "  llvm.return %%v : %s\n^bb2:\n  llvm.return %%o0 : %s\n}\n", wt, wt);
    return;
  }
  kiln_str_appendf(t, "  %%s = llvm.mlir.undef : %s\n", rt);
  for (int w = 0; w < words; w++) {
    char prev[16] = "%s";
    if (w) snprintf(prev, sizeof prev, "%%s%d", w - 1);
    kiln_str_appendf(t,
                     "  %%i%d = llvm.mlir.constant(%d : i32) : i32\n"
                     "  %%e%d = llvm.extractelement %%v[%%i%d : i32] : %s\n"
                     "  %%s%d = llvm.insertvalue %%e%d, %s[%d] : %s\n",
                     w, w, w, w, vt, w, w, prev, w, rt);
  }
  kiln_str_appendf(t, "  llvm.return %%s%d : %s\n^bb2:\n  %%u = llvm.mlir.undef : %s\n", words - 1,
                   rt, rt);
  for (int w = 0; w < words; w++) {
    char prev[16] = "%u";
    if (w) snprintf(prev, sizeof prev, "%%u%d", w - 1);
    kiln_str_appendf(t, "  %%u%d = llvm.insertvalue %%o%d, %s[%d] : %s\n", w, w, prev, w, rt);
  }
  kiln_str_appendf(t, "  llvm.return %%u%d : %s\n}\n", words - 1, rt);
}

/* Defines the helper once per module (E->declared keeps its name too). */
static void define_pred_helper(Emu *E, const char *name, bool store, int words, int word_bits) {
  MlirIdentifier id = mlirIdentifierGet(E->ctx, mlirStringRefCreateFromCString(name));
  const void *key = mlirIdentifierStr(id).data;
  if (kiln_ptr_map_get(&E->declared, key)) return;
  kiln_ptr_map_put(&E->declared, key, (void *)1);
  KilnStr t = {0};
  pred_helper_text(&t, name, store, words, word_bits);
  MlirOperation f = kiln_gpu_parse_op(E->ctx, t.data);
  kiln_str_free(&t);
  KILN_ASSERT(!mlirOperationIsNull(f));
  mlirBlockAppendOwnedOperation(E->mbody, f);
  /* the sanitizers' call goes in after parsing (the parser sees the function alone, where
   * kiln_emu_global_access does not resolve): before the one load or store of ^bb1 */
  MlirBlock bb1 = mlirBlockGetNextInRegion(entry_block(f));
  MlirOperation acc = mlirBlockGetFirstOperation(bb1);
  while (!kiln_ir_op_is(acc, store ? "llvm.store" : "llvm.load"))
    acc = mlirOperationGetNextInBlock(acc);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, E->ctx, bb1);
  kiln_ir_builder_set_before(&b, acc);
  MlirLocation loc = mlirOperationGetLocation(f);
  int wbytes = word_bits / 8;
  uint32_t kind = (store ? 1u : 0u) | (uint32_t)wbytes << EMU_ACCESS_ELEM_SHIFT;
  MlirValue o[4] = {mlirBlockGetArgument(entry_block(f), 0), cst_i32(E, &b, loc, wbytes * words),
                    cst_i32(E, &b, loc, wbytes * words), cst_i32(E, &b, loc, kind)};
  call(E, &b, loc, "kiln_emu_global_access", E->voidt, o, 4);
}

/* A predicated access of lower_memory.c (b32 words 1, 2, 4, or one b16; load or store): false
 * when text is none. */
static bool lower_pred_access(Emu *E, KilnIRBuilder *b, MlirOperation op, const char *text) {
  for (int shape = 0; shape < 4; shape++) {
    int words = shape < 3 ? 1 << shape : 1, bits = shape < 3 ? 32 : 16;
    for (int store = 0; store < 2; store++) {
      char want[256], cons[64];
      kiln_gpu_pred_access_ptx(store, words, bits, want, sizeof want, cons, sizeof cons);
      if (strcmp(text, want) != 0 || mlirOperationGetNumOperands(op) != 2 + words) continue;
      char name[64];
      snprintf(name, sizeof name, "kiln_emu_pred_%s_b%dx%d", store ? "st" : "ld", bits, words);
      define_pred_helper(E, name, store, words, bits);
      MlirValue ops[6];
      for (int i = 0; i < 2 + words; i++) ops[i] = mlirOperationGetOperand(op, i);
      MlirType rt = store ? E->voidt : mlirValueGetType(mlirOperationGetResult(op, 0));
      MlirValue r = call(E, b, mlirOperationGetLocation(op), name, rt, ops, (size_t)(2 + words));
      if (!store) replace_results(op, &r, 1);
      return true;
    }
  }
  return false;
}

/* The epilogue's stmatrix (KILN_GPU_STMATRIX_PTX, operands: the row address, then one b32 per
 * matrix) as kiln_emu_stmatrix(num, addr, r0, r1, r2, r3), the registers past num zero. */
static bool lower_stmatrix(Emu *E, KilnIRBuilder *b, MlirOperation op, const char *text) {
  size_t len = strlen(KILN_GPU_STMATRIX_PTX);
  if (strncmp(text, KILN_GPU_STMATRIX_PTX, len) != 0) return false;
  int num = text[len] - '0';
  MlirLocation loc = mlirOperationGetLocation(op);
  if ((num != 1 && num != 2 && num != 4) || mlirOperationGetNumOperands(op) != 1 + num) {
    emu_error(E, op, "emu lowering: unsupported inline PTX '%s'", text);
    return true;
  }
  MlirValue o[6] = {cst_i32(E, b, loc, num), mlirOperationGetOperand(op, 0)};
  for (int i = 0; i < 4; i++)
    o[2 + i] =
        i < num ? as_b32(E, b, loc, mlirOperationGetOperand(op, 1 + i)) : cst_i32(E, b, loc, 0);
  call(E, b, loc, "kiln_emu_stmatrix", E->voidt, o, 6);
  return true;
}

/* ---------------------------------------------------------------- wgmma (gpu/wgmma.c)
 *
 * The MMA runs at once on the emulator (kiln_emu_wgmma: each thread its own fragment), so the
 * accumulator it returns is final: the fence and the wait pass their registers through, the
 * async-proxy fence is nothing. The commit and the wait are calls all the same
 * (kiln_emu_wgmma_commit, kiln_emu_wgmma_wait(n)): racecheck holds the MMA's reads of shared
 * memory pending until the wait that retires them, as the GPU may read that late. */

/* The struct of op's operands as its result (the fence and the wait); nothing without results. */
static void pass_through(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  if (mlirOperationGetNumResults(op) == 0) return;
  intptr_t n = mlirOperationGetNumOperands(op);
  MlirValue *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  KILN_ASSERT(v != NULL);
  for (intptr_t i = 0; i < n; i++) v[i] = mlirOperationGetOperand(op, i);
  MlirValue r = build_struct(E, b, mlirOperationGetLocation(op),
                             mlirValueGetType(mlirOperationGetResult(op, 0)), v, (int)n);
  free(v);
  replace_results(op, &r, 1);
}

/* Whether op passes `regs` f32 operands and returns them as one struct (or neither). */
static bool tied_f32(Emu *E, MlirOperation op, intptr_t regs) {
  if (mlirOperationGetNumOperands(op) < regs) return false;
  for (intptr_t i = 0; i < regs; i++) {
    /* f32 accumulators; the fence before an RS wgmma also ties A's 32-bit registers */
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (!mlirTypeEqual(t, E->f32) && !mlirTypeEqual(t, E->i32)) return false;
  }
  if (regs == 0) return mlirOperationGetNumResults(op) == 0;
  if (mlirOperationGetNumResults(op) != 1) return false;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  return mlirTypeIsALLVMStructType(rt) && mlirLLVMStructTypeGetNumElementTypes(rt) == regs;
}

/* The accumulators of a wgmma op (its first regs operands) stored into a new entry alloca of
 * regs f32; the slots' pointers into slot[0 .. regs-1]; returns the alloca.  zero_d (the MMA's
 * scale-d false: D = A B) stores zeros instead, the operands being undefined. */
static MlirValue stage_accumulators(Emu *E, KilnIRBuilder *b, MlirOperation op, int regs,
                                    MlirValue *slot, bool zero_d) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue acc = entry_alloca(E, op, E->f32, regs);
  MlirValue zero = {NULL};
  if (zero_d) {
    MlirNamedAttribute a =
        kiln_ir_named(E->ctx, "value", mlirFloatAttrDoubleGet(E->ctx, E->f32, 0));
    zero = kiln_ir_make1(b, loc, "llvm.mlir.constant", NULL, 0, E->f32, &a, 1);
  }
  for (int i = 0; i < regs; i++) {
    slot[i] = i ? gep_const(E, b, loc, acc, i, E->f32) : acc;
    MlirValue st[2] = {zero_d ? zero : mlirOperationGetOperand(op, i), slot[i]};
    kiln_ir_make(b, loc, "llvm.store", st, 2, NULL, 0, NULL, 0);
  }
  return acc;
}

/* The slots loaded back into op's result struct, which replaces op's result. */
static void return_accumulators(Emu *E, KilnIRBuilder *b, MlirOperation op, int regs,
                                MlirValue *slot) {
  MlirLocation loc = mlirOperationGetLocation(op);
  for (int i = 0; i < regs; i++) slot[i] = load(b, loc, slot[i], E->f32);
  MlirValue r =
      build_struct(E, b, loc, mlirValueGetType(mlirOperationGetResult(op, 0)), slot, regs);
  replace_results(op, &r, 1);
}

/* kiln_emu_wgmma's operand types (runtime/emu/kiln_emu.h, KilnEmuWgmmaType). */
enum { EMU_WGMMA_F16, EMU_WGMMA_BF16, EMU_WGMMA_TF32 };

/* The MMA: R = n / 2 accumulators through an alloca, kiln_emu_wgmma(acc, n, type, trans_a,
 * trans_b, desc_a, desc_b), R loads into the result struct. */
static void lower_wgmma_mma(Emu *E, KilnIRBuilder *b, MlirOperation op, int n, int type,
                            int trans_a, int trans_b, bool zero_d) {
  MlirLocation loc = mlirOperationGetLocation(op);
  int regs = n / 2;
  MlirType i64 = mlirIntegerTypeGet(E->ctx, 64);
  bool shape = mlirOperationGetNumOperands(op) == regs + 2 && tied_f32(E, op, regs);
  for (int i = 0; shape && i < 2; i++)
    shape = mlirTypeEqual(mlirValueGetType(mlirOperationGetOperand(op, regs + i)), i64);
  if (!shape) {
    emu_error(E, op,
              "emu lowering: wgmma m64n%dk%d needs %d f32 accumulators and two i64 descriptors "
              "as operands and a struct of %d f32 as its result",
              n, type == EMU_WGMMA_TF32 ? 8 : 16, regs, regs);
    return;
  }
  MlirValue *slot = malloc((size_t)regs * sizeof *slot);
  KILN_ASSERT(slot != NULL);
  MlirValue o[7] = {stage_accumulators(E, b, op, regs, slot, zero_d),
                    cst_i32(E, b, loc, n),
                    cst_i32(E, b, loc, type),
                    cst_i32(E, b, loc, trans_a),
                    cst_i32(E, b, loc, trans_b),
                    mlirOperationGetOperand(op, regs),
                    mlirOperationGetOperand(op, regs + 1)};
  call(E, b, loc, "kiln_emu_wgmma", E->voidt, o, 7);
  return_accumulators(E, b, op, regs, slot);
  free(slot);
}

/* The RS form: R accumulators through an alloca as above, then kiln_emu_wgmma_rs(acc, n, bf16,
 * trans_b, a0, a1, a2, a3, desc_b) with the four i32 A registers and B's i64 descriptor. */
static void lower_wgmma_rs_mma(Emu *E, KilnIRBuilder *b, MlirOperation op, int n, bool bf16,
                               int trans_b, bool zero_d) {
  MlirLocation loc = mlirOperationGetLocation(op);
  int regs = n / 2;
  MlirType i32 = mlirIntegerTypeGet(E->ctx, 32), i64 = mlirIntegerTypeGet(E->ctx, 64);
  bool shape = mlirOperationGetNumOperands(op) == regs + 5 && tied_f32(E, op, regs);
  for (int i = 0; shape && i < 5; i++)
    shape =
        mlirTypeEqual(mlirValueGetType(mlirOperationGetOperand(op, regs + i)), i < 4 ? i32 : i64);
  if (!shape) {
    emu_error(E, op,
              "emu lowering: wgmma m64n%dk16 with A from registers needs %d f32 accumulators, "
              "four i32 A registers and an i64 descriptor as operands and a struct of %d f32 as "
              "its result",
              n, regs, regs);
    return;
  }
  MlirValue *slot = malloc((size_t)regs * sizeof *slot);
  KILN_ASSERT(slot != NULL);
  MlirValue o[9] = {stage_accumulators(E, b, op, regs, slot, zero_d), cst_i32(E, b, loc, n),
                    cst_i32(E, b, loc, bf16), cst_i32(E, b, loc, trans_b)};
  for (int i = 0; i < 5; i++) o[4 + i] = mlirOperationGetOperand(op, regs + i);
  call(E, b, loc, "kiln_emu_wgmma_rs", E->voidt, o, 9);
  return_accumulators(E, b, op, regs, slot);
  free(slot);
}

/* The seven wgmma texts (the MMA in its SS, RS and tf32 forms, each also with scale-d false);
 * false when text is none of them and names no wgmma (any other wgmma text fails the pass,
 * naming it). */
static bool lower_wgmma(Emu *E, KilnIRBuilder *b, MlirOperation op, const char *text) {
  int n = 0, ta = 0, tb = 0, k = 0;
  bool bf16 = false;
  intptr_t nops = mlirOperationGetNumOperands(op);
  char plain[2048]; /* the scale-d-false text as the parsers read it, with scale-d true */
  bool zero_d = kiln_gpu_wgmma_zero_d(text, plain, sizeof plain);
  const char *mma = zero_d ? plain : text;
  if (kiln_gpu_wgmma_parse(mma, &n, &bf16, &ta, &tb)) {
    lower_wgmma_mma(E, b, op, n, bf16 ? EMU_WGMMA_BF16 : EMU_WGMMA_F16, ta, tb, zero_d);
  } else if (kiln_gpu_wgmma_tf32_parse(mma, &n)) {
    lower_wgmma_mma(E, b, op, n, EMU_WGMMA_TF32, 0, 0, zero_d);
  } else if (kiln_gpu_wgmma_rs_parse(mma, &n, &bf16, &tb)) {
    lower_wgmma_rs_mma(E, b, op, n, bf16, tb, zero_d);
  } else if (strcmp(text, KILN_GPU_WGMMA_FENCE_PTX) == 0 || kiln_gpu_wgmma_wait_parse(text, &k)) {
    if (!tied_f32(E, op, nops)) {
      emu_error(E, op, "emu lowering: '%s' needs 32-bit operands returned as one struct", text);
      return true;
    }
    if (strcmp(text, KILN_GPU_WGMMA_FENCE_PTX) != 0) {
      MlirValue n = cst_i32(E, b, mlirOperationGetLocation(op), k);
      call(E, b, mlirOperationGetLocation(op), "kiln_emu_wgmma_wait", E->voidt, &n, 1);
    }
    pass_through(E, b, op);
  } else if (strcmp(text, KILN_GPU_WGMMA_COMMIT_PTX) == 0 ||
             strcmp(text, KILN_GPU_FENCE_PROXY_ASYNC_PTX) == 0) {
    if (nops != 0 || mlirOperationGetNumResults(op) != 0)
      emu_error(E, op, "emu lowering: '%s' takes no operands and has no results", text);
    else if (strcmp(text, KILN_GPU_WGMMA_COMMIT_PTX) == 0)
      call(E, b, mlirOperationGetLocation(op), "kiln_emu_wgmma_commit", E->voidt, NULL, 0);
  } else if (strstr(text, "wgmma") != NULL || strstr(text, "fence.proxy") != NULL) {
    emu_error(E, op, "emu lowering: unsupported wgmma inline PTX '%s'", text);
  } else {
    return false;
  }
  return true;
}

/* The PTX approximations of lower_math.c, as kiln_emu_approx_f32(op, x): host math, or the
 * GPU's worst case under the emulator's pessimistic math mode. op is the instruction's index in
 * kiln_gpu_approx_ptx, whose order is KilnEmuApprox's (runtime/emu/kiln_emu.h). */
static void lower_asm(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  char text[2048] = ""; /* the longest, wgmma m64n256k16, is about 760 characters */
  kiln_ir_get_str_attr(op, "asm_string", text, sizeof text);
  if (lower_wgmma(E, b, op, text)) return;
  if (lower_pred_access(E, b, op, text)) return;
  if (strcmp(text, KILN_GPU_FENCE_PTX) == 0) { /* atomic_cas's fence: the host's own */
    MlirNamedAttribute a =
        kiln_ir_named(E->ctx, "ordering", mlirIntegerAttrGet(mlirIntegerTypeGet(E->ctx, 64), 6));
    KilnOpSpec s = {.name = "llvm.fence", .loc = loc, .attrs = &a, .n_attrs = 1};
    kiln_ir_create(b, &s);
    return;
  }
  if (strncmp(text, KILN_GPU_MMA_BF16_PTX, strlen(KILN_GPU_MMA_BF16_PTX)) == 0 &&
      mlirOperationGetNumOperands(op) == 10 && mlirOperationGetNumResults(op) == 1) {
    emit_mma_call(E, b, op, "kiln_emu_mma_m16n8k16_f32_bf16",
                  mlirValueGetType(mlirOperationGetResult(op, 0)), E->f32);
    return;
  }
  if (strncmp(text, KILN_GPU_MMA_S8_PTX, strlen(KILN_GPU_MMA_S8_PTX)) == 0 &&
      mlirOperationGetNumOperands(op) == 10 && mlirOperationGetNumResults(op) == 1) {
    emit_mma_call(E, b, op, "kiln_emu_mma_m16n8k32_s32_s8",
                  mlirValueGetType(mlirOperationGetResult(op, 0)), E->i32);
    return;
  }
  if (strncmp(text, KILN_GPU_MMA_TF32_PTX, strlen(KILN_GPU_MMA_TF32_PTX)) == 0 &&
      mlirOperationGetNumOperands(op) == 10 && mlirOperationGetNumResults(op) == 1) {
    emit_mma_call(E, b, op, "kiln_emu_mma_m16n8k8_f32_tf32",
                  mlirValueGetType(mlirOperationGetResult(op, 0)), E->f32);
    return;
  }
  if (strncmp(text, KILN_GPU_CVT_TF32_PTX " ", strlen(KILN_GPU_CVT_TF32_PTX) + 1) == 0 &&
      mlirOperationGetNumOperands(op) == 1 && mlirOperationGetNumResults(op) == 1 &&
      mlirTypeEqual(mlirValueGetType(mlirOperationGetOperand(op, 0)), E->i32)) {
    lower_cvt_tf32(E, b, op);
    return;
  }
  bool bf16x2 =
      strncmp(text, KILN_GPU_CVT_BF16X2_PTX " ", strlen(KILN_GPU_CVT_BF16X2_PTX) + 1) == 0;
  if ((bf16x2 ||
       strncmp(text, KILN_GPU_CVT_F16X2_PTX " ", strlen(KILN_GPU_CVT_F16X2_PTX) + 1) == 0) &&
      mlirOperationGetNumOperands(op) == 2 && mlirOperationGetNumResults(op) == 1) {
    lower_cvt_x2(E, b, op, bf16x2);
    return;
  }
  if (lower_stmatrix(E, b, op, text)) return;
  int which = -1; /* lower_math.c writes "INSN $0, $1;" */
  for (int i = 0; i < KILN_GPU_APPROX_COUNT; i++) {
    size_t len = strlen(kiln_gpu_approx_ptx[i]);
    if (strncmp(text, kiln_gpu_approx_ptx[i], len) == 0 && text[len] == ' ') which = i;
  }
  if (which < 0 || mlirOperationGetNumOperands(op) != 1 || mlirOperationGetNumResults(op) != 1 ||
      !mlirTypeEqual(mlirValueGetType(mlirOperationGetResult(op, 0)), E->f32)) {
    emu_error(E, op, "emu lowering: no host equivalent for inline PTX '%s'", text);
    return;
  }
  MlirValue o[2] = {cst_i32(E, b, loc, which), mlirOperationGetOperand(op, 0)};
  MlirValue r = call(E, b, loc, "kiln_emu_approx_f32", E->f32, o, 2);
  replace_results(op, &r, 1);
}

static MlirValue shared_base_of(Emu *E, MlirOperation op) {
  MlirOperation func = parent_func(op);
  KILN_ASSERT(!mlirOperationIsNull(func));
  MlirValue *have = kiln_ptr_map_get(&E->shared_base, func.ptr);
  if (have) return *have;
  MlirBlock entry = entry_block(func);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, E->ctx, entry);
  kiln_ir_builder_set_before(&b, mlirBlockGetFirstOperation(entry));
  MlirValue *v = malloc(sizeof *v);
  KILN_ASSERT(v != NULL);
  *v = call(E, &b, mlirOperationGetLocation(func), "kiln_emu_shared_base", E->ptr, NULL, 0);
  kiln_ptr_map_put(&E->shared_base, func.ptr, v);
  return *v;
}

static bool is_smem_addressof(MlirOperation op) {
  if (!kiln_ir_op_is(op, "llvm.mlir.addressof")) return false;
  MlirAttribute n =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("global_name"));
  if (mlirAttributeIsNull(n)) return false;
  MlirStringRef s = mlirFlatSymbolRefAttrGetValue(n);
  return s.length == 9 && memcmp(s.data, "kiln_smem", 9) == 0;
}

/* ---------------------------------------------------------------- checked accesses */

/* Address space of a global (1) or shared (3) pointer type; -1 for anything else. */
static int gpu_space(MlirType t) {
  if (!mlirTypeIsALLVMPointerType(t)) return -1;
  unsigned as = mlirLLVMPointerTypeGetAddressSpace(t);
  return as == 1 || as == 3 ? (int)as : -1;
}

/* The pointer operand of a memory access the sanitizers check, and the type of the value moved;
 * false for other ops. */
static bool access_operands(MlirOperation op, MlirValue *ptr, MlirType *vt, uint32_t *kind) {
  if (kiln_ir_op_is(op, "llvm.load")) {
    *ptr = mlirOperationGetOperand(op, 0);
    *vt = mlirValueGetType(mlirOperationGetResult(op, 0));
    *kind = 0; /* KILN_EMU_ACCESS_LOAD */
  } else if (kiln_ir_op_is(op, "llvm.store")) {
    *ptr = mlirOperationGetOperand(op, 1);
    *vt = mlirValueGetType(mlirOperationGetOperand(op, 0));
    *kind = 1; /* STORE */
  } else if (kiln_ir_op_is(op, "llvm.atomicrmw") || kiln_ir_op_is(op, "llvm.cmpxchg")) {
    *ptr = mlirOperationGetOperand(op, 0);
    *vt = mlirValueGetType(mlirOperationGetOperand(op, 1));
    *kind = 2; /* ATOMIC */
  } else {
    return false;
  }
  return true;
}

static bool is_checked_access(MlirOperation op) {
  MlirValue p;
  MlirType t;
  uint32_t k;
  return access_operands(op, &p, &t, &k) && gpu_space(mlirValueGetType(p)) > 0;
}

/* Bytes of a value loaded or stored (scalars, pointers, vectors of them); 0 if unknown. */
static int64_t value_bytes(MlirType t) {
  if (mlirTypeIsAVector(t)) {
    int64_t e = value_bytes(mlirShapedTypeGetElementType(t));
    return mlirShapedTypeHasRank(t) && mlirShapedTypeGetRank(t) == 1
               ? e * mlirShapedTypeGetDimSize(t, 0)
               : 0;
  }
  return kiln_ir_elem_bytes(t);
}

/* kiln_emu_{global,shared}_access(p, bytes, align, kind) before a load, store or atomic of
 * address space 1 or 3: the emulator's memcheck, racecheck and initcheck act there. The
 * alignment is the instruction's (a vector access needs its whole size on a GPU); without the
 * attribute, the natural alignment LLVM would assume. */
static void lower_access(Emu *E, KilnIRBuilder *b, MlirOperation op) {
  MlirValue ptr;
  MlirType vt;
  uint32_t kind;
  access_operands(op, &ptr, &vt, &kind);
  int space = gpu_space(mlirValueGetType(ptr));
  int64_t bytes = value_bytes(vt);
  if (bytes <= 0) {
    KilnStr t = type_text(vt);
    emu_error(E, op, "emu lowering: cannot check an access of type %s", t.data);
    kiln_str_free(&t);
    return;
  }
  int64_t align = kiln_gpu_int_attr(op, "alignment", 0);
  if (align <= 0) {
    align = bytes <= 16 && (bytes & (bytes - 1)) == 0 ? bytes : 1;
    if (mlirTypeIsAVector(vt) && align == 1) align = value_bytes(mlirShapedTypeGetElementType(vt));
  }
  MlirLocation loc = mlirOperationGetLocation(op);
  /* a global access also says its element size, for memcheck's index limit (kiln_emu.h) */
  int64_t elem = mlirTypeIsAVector(vt) ? value_bytes(mlirShapedTypeGetElementType(vt)) : bytes;
  uint32_t op_word = space == 1 ? kind | (uint32_t)elem << EMU_ACCESS_ELEM_SHIFT : kind;
  MlirValue o[4] = {ptr, cst_i32(E, b, loc, bytes), cst_i32(E, b, loc, align),
                    cst_i32(E, b, loc, op_word)};
  call(E, b, loc, space == 1 ? "kiln_emu_global_access" : "kiln_emu_shared_access", E->voidt, o, 4);
  if (space == 3 && kind == 1) {
    /* and after a shared store (KILN_EMU_ACCESS_STORED): racecheck compares the value written
     * with another thread's, since replicated layouts store the same value from several lanes */
    KilnIRBuilder after;
    kiln_ir_builder_init(&after, E->ctx, mlirOperationGetBlock(op));
    kiln_ir_builder_set_before(&after,
                               mlirOperationGetNextInBlock(op)); /* a store never ends a block */
    o[3] = cst_i32(E, &after, loc, 3);
    call(E, &after, loc, "kiln_emu_shared_access", E->voidt, o, 4);
  }
}

/* A call of one of PTX's system calls: vprintf (device_print, lower_print.c), which
 * kiln_emu_vprintf takes with the same format and argument buffer (runtime/emu/print.c), or
 * __assertfail (device_assert), which kiln_emu_assertfail takes with the same five arguments. */
static bool is_syscall(MlirOperation op, const char *name) {
  if (!kiln_ir_op_is(op, "llvm.call")) return false;
  MlirAttribute c = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("callee"));
  if (mlirAttributeIsNull(c) || !mlirAttributeIsAFlatSymbolRef(c)) return false;
  MlirStringRef s = mlirFlatSymbolRefAttrGetValue(c);
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

static bool is_vprintf_call(MlirOperation op) { return is_syscall(op, "vprintf"); }
static bool is_assertfail_call(MlirOperation op) { return is_syscall(op, "__assertfail"); }

/* Replaces one collected op; returns whether the op is to be erased. */
static bool lower_one(Emu *E, MlirOperation op) {
  char name[96];
  kiln_ir_op_name(op, name, sizeof name);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, E->ctx, mlirOperationGetBlock(op));
  kiln_ir_builder_set_before(&b, op);
  MlirLocation loc = mlirOperationGetLocation(op);
  if (is_smem_addressof(op)) {
    MlirValue base = shared_base_of(E, op);
    replace_results(op, &base, 1);
  } else if (strncmp(name, "nvvm.read.ptx.sreg.", 19) == 0) {
    lower_sreg(E, &b, op, name);
  } else if (strcmp(name, "nvvm.barrier0") == 0 || strcmp(name, "nvvm.barrier") == 0) {
    lower_barrier(E, &b, op);
  } else if (strcmp(name, "nvvm.shfl.sync") == 0) {
    lower_shfl(E, &b, op);
  } else if (strcmp(name, "nvvm.vote.ballot.sync") == 0) {
    lower_vote(E, &b, op);
  } else if (strcmp(name, "nvvm.redux.sync") == 0) {
    lower_redux(E, &b, op);
  } else if (strcmp(name, "nvvm.mma.sync") == 0) {
    lower_mma(E, &b, op);
  } else if (strcmp(name, "nvvm.ldmatrix") == 0) {
    lower_ldmatrix(E, &b, op);
  } else if (strcmp(name, "nvvm.cp.async.shared.global") == 0) {
    lower_cp_async(E, &b, op);
  } else if (is_cp_async_intrinsic(op)) {
    lower_cp_async_intrinsic(E, &b, op);
  } else if (is_mulhi_intrinsic(op)) {
    lower_mulhi(E, &b, op);
  } else if (strcmp(name, "nvvm.cp.async.commit.group") == 0) {
    call(E, &b, loc, "kiln_emu_cp_async_commit_group", E->voidt, NULL, 0);
  } else if (strcmp(name, "nvvm.cp.async.wait.group") == 0) {
    MlirValue n = cst_i32(E, &b, loc, kiln_gpu_int_attr(op, "n", 0));
    call(E, &b, loc, "kiln_emu_cp_async_wait_group", E->voidt, &n, 1);
  } else if (strcmp(name, "llvm.intr.trap") == 0) {
    call(E, &b, loc, "kiln_emu_trap", E->voidt, NULL, 0);
  } else if (strcmp(name, "llvm.inline_asm") == 0) {
    lower_asm(E, &b, op);
  } else if (is_vprintf_call(op)) {
    MlirValue o[2] = {mlirOperationGetOperand(op, 0), mlirOperationGetOperand(op, 1)};
    MlirValue r = call(E, &b, loc, "kiln_emu_vprintf", E->i32, o, 2);
    replace_results(op, &r, 1);
  } else if (is_assertfail_call(op)) {
    MlirValue o[5];
    for (int i = 0; i < 5; i++) o[i] = mlirOperationGetOperand(op, i);
    call(E, &b, loc, "kiln_emu_assertfail", E->voidt, o, 5);
  } else if (strcmp(name, "llvm.addrspacecast") == 0) {
    /* Every address space is the host's: the cast is the identity. */
    MlirValue v = mlirOperationGetOperand(op, 0);
    replace_results(op, &v, 1);
  } else {
    emu_error(E, op, "emu lowering: no emulator intrinsic for '%s'", name);
    return false;
  }
  return true;
}

/* ---------------------------------------------------------------- collection and retyping */

/* What the walk collects: ops to replace, and accesses to check (kept apart because their
 * pointer's address space, which says global or shared, is only known before the rewrite). */
typedef struct Collected {
  KilnOpList replace, access;
} Collected;

static MlirWalkResult collect(MlirOperation op, void *u) {
  Collected *c = u;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if ((n.length > 5 && memcmp(n.data, "nvvm.", 5) == 0) || kiln_ir_op_is(op, "llvm.inline_asm") ||
      kiln_ir_op_is(op, "llvm.intr.trap") || kiln_ir_op_is(op, "llvm.addrspacecast") ||
      is_smem_addressof(op) || is_cp_async_intrinsic(op) || is_mulhi_intrinsic(op) ||
      is_vprintf_call(op) || is_assertfail_call(op))
    kiln_op_list_push(&c->replace, op);
  else if (is_checked_access(op))
    kiln_op_list_push(&c->access, op);
  return MlirWalkResultAdvance;
}

static MlirWalkResult retype(MlirOperation op, void *u) {
  Emu *E = u;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
    MlirValue v = mlirOperationGetResult(op, i);
    mlirValueSetType(v, host_type(E, mlirValueGetType(v)));
  }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock blk = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(blk); blk = mlirBlockGetNextInRegion(blk))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(blk); i++) {
        MlirValue v = mlirBlockGetArgument(blk, i);
        mlirBlockArgumentSetType(v, host_type(E, mlirValueGetType(v)));
      }
  return MlirWalkResultAdvance;
}

/* ---------------------------------------------------------------- kernels */

/* A `const uint32_t kiln_emu_<what>_NAME[max(n, 1)]` global (a zero-length array is not a
 * valid global). */
static MlirOperation u32_table(Emu *E, const char *what, MlirStringRef name, const uint32_t *v,
                               intptr_t n) {
  KilnStr t = {0};
  kiln_str_appendf(&t, "llvm.mlir.global external constant @kiln_emu_%s_%.*s(dense<[", what,
                   (int)name.length, name.data);
  for (intptr_t i = 0; i < n; i++) kiln_str_appendf(&t, "%s%u", i ? ", " : "", v[i]);
  if (n == 0) kiln_str_appendf(&t, "0");
  kiln_str_appendf(&t,
                   "]> : tensor<%ldxi32>) {addr_space = 0 : i32, alignment = 4 : i64} : "
                   "!llvm.array<%ld x i32>",
                   (long)(n ? n : 1), (long)(n ? n : 1));
  MlirOperation g = kiln_gpu_parse_op(E->ctx, t.data);
  kiln_str_free(&t);
  KILN_ASSERT(!mlirOperationIsNull(g));
  return g;
}

/* kiln_emu_args_NAME: per parameter the alignment its value must have at launch. After
 * retyping every pointer parameter is a host !llvm.ptr; all of them were global pointers, which
 * the lowering assumed KILN_GPU_EMU_POINTER_ALIGN-aligned. The runtime checks them before
 * running the kernel, so a misaligned view is a launch error rather than a host fault. */
static MlirOperation args_table(Emu *E, MlirStringRef name, const MlirType *types, intptr_t nargs) {
  uint32_t *align = calloc((size_t)(nargs ? nargs : 1), sizeof *align);
  KILN_ASSERT(align != NULL);
  for (intptr_t i = 0; i < nargs; i++)
    align[i] = mlirTypeIsALLVMPointerType(types[i]) ? KILN_GPU_EMU_POINTER_ALIGN : 0;
  MlirOperation g = u32_table(E, "args", name, align, nargs);
  free(align);
  return g;
}

/* kiln_emu_elems_NAME: the pointee sizes widen-offsets recorded for the kernel (module attribute
 * kiln.arg_elem_bytes, by kernel name); zeros where there is no record (hand-written IR). */
static MlirOperation elems_table(Emu *E, MlirStringRef name, intptr_t nargs) {
  uint32_t *bytes = calloc((size_t)(nargs ? nargs : 1), sizeof *bytes);
  KILN_ASSERT(bytes != NULL);
  MlirAttribute all = mlirOperationGetAttributeByName(
      E->module, mlirStringRefCreateFromCString("kiln.arg_elem_bytes"));
  MlirAttribute mine = !mlirAttributeIsNull(all) && mlirAttributeIsADictionary(all)
                           ? mlirDictionaryAttrGetElementByName(all, name)
                           : (MlirAttribute){NULL};
  if (!mlirAttributeIsNull(mine) && mlirAttributeIsADenseI32Array(mine) &&
      mlirDenseArrayGetNumElements(mine) == nargs)
    for (intptr_t i = 0; i < nargs; i++) bytes[i] = (uint32_t)mlirDenseI32ArrayGetElement(mine, i);
  MlirOperation g = u32_table(E, "elems", name, bytes, nargs);
  free(bytes);
  return g;
}

/* The entry wrapper and the metadata of one kernel, after retyping. */
static void wrap_kernel(Emu *E, MlirOperation f, int64_t smem_bytes, int64_t dyn_smem_bytes) {
  MlirAttribute sym =
      mlirOperationGetAttributeByName(f, mlirStringRefCreateFromCString("sym_name"));
  MlirStringRef name = mlirStringAttrGetValue(sym);
  MlirAttribute ntid =
      mlirOperationGetAttributeByName(f, mlirStringRefCreateFromCString("nvvm.maxntid"));
  int block = mlirAttributeIsNull(ntid) ? 128 : mlirDenseI32ArrayGetElement(ntid, 0);
  MlirBlock entry = entry_block(f);
  intptr_t nargs = mlirBlockGetNumArguments(entry);

  /* The kernel keeps its body, loses its GPU attributes and becomes internal: only the entry
   * and the metadata are the module's interface. */
  MlirType *types = malloc((size_t)(nargs ? nargs : 1) * sizeof *types);
  KILN_ASSERT(types != NULL);
  for (intptr_t i = 0; i < nargs; i++) types[i] = mlirValueGetType(mlirBlockGetArgument(entry, i));
  mlirOperationSetAttributeByName(
      f, mlirStringRefCreateFromCString("function_type"),
      mlirTypeAttrGet(mlirLLVMFunctionTypeGet(E->voidt, nargs, types, false)));
  mlirOperationSetAttributeByName(f, mlirStringRefCreateFromCString("linkage"),
                                  kiln_gpu_parse_attr(E->ctx, "#llvm.linkage<internal>"));
  mlirOperationRemoveAttributeByName(f, mlirStringRefCreateFromCString("nvvm.kernel"));
  mlirOperationRemoveAttributeByName(f, mlirStringRefCreateFromCString("nvvm.maxntid"));
  /* .minnctapersm only steers ptxas's register allocation: nothing to emulate */
  mlirOperationRemoveAttributeByName(f, mlirStringRefCreateFromCString("nvvm.minctasm"));

  /* Both neighbours are small and regular: written as IR text. */
  KilnStr t = {0};
  kiln_str_appendf(&t, "llvm.func @kiln_emu_entry_%.*s(%%args: !llvm.ptr) {\n", (int)name.length,
                   name.data);
  for (intptr_t i = 0; i < nargs; i++) {
    KilnStr ty = type_text(types[i]);
    kiln_str_appendf(
        &t,
        "  %%p%ld = llvm.getelementptr %%args[%ld] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr\n"
        "  %%q%ld = llvm.load %%p%ld : !llvm.ptr -> !llvm.ptr\n"
        "  %%v%ld = llvm.load %%q%ld : !llvm.ptr -> %s\n",
        (long)i, (long)i, (long)i, (long)i, (long)i, (long)i, ty.data);
    kiln_str_free(&ty);
  }
  kiln_str_appendf(&t, "  llvm.return\n}");
  MlirOperation w = kiln_gpu_parse_op(E->ctx, t.data);
  kiln_str_free(&t);
  KILN_ASSERT(!mlirOperationIsNull(w));
  /* The call goes in after parsing: the parser verifies the function alone, where the kernel's
   * symbol does not resolve.  Ops 3i+2 of the body are the parameter values. */
  MlirBlock wb = entry_block(w);
  MlirValue *vals = malloc((size_t)(nargs ? nargs : 1) * sizeof *vals);
  KILN_ASSERT(vals != NULL);
  MlirOperation o = mlirBlockGetFirstOperation(wb);
  for (intptr_t i = 0; i < 3 * nargs; i++, o = mlirOperationGetNextInBlock(o))
    if (i % 3 == 2) vals[i / 3] = mlirOperationGetResult(o, 0);
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, E->ctx, wb);
  kiln_ir_builder_set_before(&b, o); /* the llvm.return */
  MlirNamedAttribute callee =
      kiln_ir_named(E->ctx, "callee", mlirFlatSymbolRefAttrGet(E->ctx, name));
  kiln_ir_make(&b, mlirOperationGetLocation(f), "llvm.call", vals, (size_t)nargs, NULL, 0, &callee,
               1);
  free(vals);
  mlirBlockInsertOwnedOperationAfter(E->mbody, f, w);

  uint32_t meta[KILN_GPU_EMU_META_WORDS] = {
      KILN_GPU_EMU_META_VERSION,
      (uint32_t)block,
      (uint32_t)smem_bytes,
      (uint32_t)nargs,
      (uint32_t)dyn_smem_bytes,
      (uint32_t)kiln_gpu_int_attr(E->module, "kiln.index_bits", 0),
      (uint32_t)kiln_gpu_int_attr(E->module, "kiln.gpu.registers", 0)};
  MlirOperation g = u32_table(E, "meta", name, meta, KILN_GPU_EMU_META_WORDS);
  mlirBlockInsertOwnedOperationAfter(E->mbody, w, g);
  MlirOperation a = args_table(E, name, types, nargs);
  mlirBlockInsertOwnedOperationAfter(E->mbody, g, a);
  mlirBlockInsertOwnedOperationAfter(E->mbody, a, elems_table(E, name, nargs));
  free(types);
}

MlirLogicalResult kiln_gpu_to_emu_module(MlirOperation module, void *opts) {
  (void)opts;
  Emu E;
  memset(&E, 0, sizeof E);
  E.ctx = mlirOperationGetContext(module);
  E.module = module;
  E.mbody = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  E.i1 = mlirIntegerTypeGet(E.ctx, 1);
  E.i32 = mlirIntegerTypeGet(E.ctx, 32);
  E.f32 = mlirF32TypeGet(E.ctx);
  E.ptr = mlirLLVMPointerTypeGet(E.ctx, 0);
  E.voidt = mlirLLVMVoidTypeGet(E.ctx);

  Collected c = {{0}, {0}};
  mlirOperationWalk(module, collect, &c, MlirWalkPostOrder);
  for (size_t i = 0; i < c.access.n; i++) {
    KilnIRBuilder b;
    kiln_ir_builder_init(&b, E.ctx, mlirOperationGetBlock(c.access.ops[i]));
    kiln_ir_builder_set_before(&b, c.access.ops[i]);
    lower_access(&E, &b, c.access.ops[i]);
  }
  for (size_t i = 0; i < c.replace.n; i++)
    if (lower_one(&E, c.replace.ops[i])) mlirOperationDestroy(c.replace.ops[i]);
  kiln_op_list_free(&c.access);
  kiln_op_list_free(&c.replace);
  for (size_t i = 0; i < E.shared_base.cap; i++) /* an open-addressing table: every slot */
    free(E.shared_base.vals[i]);
  kiln_ptr_map_free(&E.shared_base);
  kiln_ptr_map_free(&E.declared);
  if (E.failed) return mlirLogicalResultFailure();

  mlirOperationWalk(module, retype, &E, MlirWalkPreOrder);

  /* The arena is the emulator's per-block allocation now; its size moves to the metadata: as
   * static bytes, or for an `.extern` arena (above 48 KiB) as the dynamic bytes every launch
   * needs, which the device adds as a GPU launch would pass them. */
  int64_t smem = 0, dyn_smem = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(E.mbody); !mlirOperationIsNull(o);) {
    MlirOperation next = mlirOperationGetNextInBlock(o);
    if (kiln_ir_op_is(o, "llvm.mlir.global")) {
      char gname[32] = "";
      kiln_ir_get_str_attr(o, "sym_name", gname, sizeof gname);
      if (strcmp(gname, "kiln_smem") == 0) {
        bool dynamic = !mlirAttributeIsNull(mlirOperationGetAttributeByName(
            module, mlirStringRefCreateFromCString("kiln.gpu.smem_dynamic")));
        *(dynamic ? &dyn_smem : &smem) = kiln_gpu_int_attr(module, "kiln.gpu.smem_bytes", 0);
        mlirOperationDestroy(o);
      }
    } else if (kiln_ir_op_is(o, "llvm.func")) {
      /* PTX's system calls: every call now calls the emulator's */
      char fname[16] = "";
      kiln_ir_get_str_attr(o, "sym_name", fname, sizeof fname);
      if (strcmp(fname, "vprintf") == 0 || strcmp(fname, "__assertfail") == 0)
        mlirOperationDestroy(o);
    }
    o = next;
  }
  KilnOpList kernels = kiln_ir_kernels(module, "llvm.func", "nvvm.kernel");
  for (size_t i = 0; i < kernels.n; i++) wrap_kernel(&E, kernels.ops[i], smem, dyn_smem);
  kiln_op_list_free(&kernels);
  return mlirLogicalResultSuccess();
}
