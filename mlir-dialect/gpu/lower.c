/* lower.c - convert-kiln-gpu-to-llvm: laid-out kiln kernels become SIMT llvm.func kernels.
 *
 * How this works.  For each kernel the pass creates an llvm.func (nvvm.kernel, nvvm.maxntid =
 * 32 * num_warps, nvvm.minctasm = the config's min_blocks when it has one; pointer parameters
 * are !llvm.ptr<1>) and walks the old body in order, building the new body op by op.  A tile value becomes the list of scalars its layout gives the running
 * thread (lower.h); every element-wise op is emitted once per scalar (as a clone of the op on
 * scalars, so arith keeps its predicates and flags and the upstream arith/math/cf-to-llvm passes
 * finish the job), shape ops (splat, broadcast, expand_dims) only re-index lists, and `range`
 * and thread coordinates become expressions of the lane and warp ids.  scf.for / scf.if are
 * rebuilt with every tile flattened into its scalars.  Memory, reductions, shared memory and math
 * live in their own files, and the toolkit they all build with in lower_kit.c, so that the
 * files depend one way: this dispatcher -> the op families -> lower_kit.c.  Software pipelining
 * is not done here: kiln-gpu-pipeline wrote it into the IR as shared buffers, async copies and
 * waits (lower_local.c lowers each of those ops like any other).  The old
 * func is erased at the end; a kernel that fails leaves a diagnostic and the pass fails. */
#include "lower.h"

#include "mlir-c/Dialect/LLVM.h"

#include <stdarg.h>
#include <stdio.h>

/* ---------------------------------------------------------------- generic ops */

static void lower_block(Low *L, MlirBlock old);

/* An element-wise op (arith, math ops left to upstream): one clone per scalar. */
static bool lower_elementwise(Low *L, MlirOperation op) {
  intptr_t nops = mlirOperationGetNumOperands(op);
  if (mlirOperationGetNumResults(op) != 1 || nops > 8) {
    low_error(L, "GPU lowering: unsupported op");
    return false;
  }
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  int64_t n = 1;
  Vals *ins[8];
  for (intptr_t i = 0; i < nops; i++) {
    ins[i] = low_get(L, mlirOperationGetOperand(op, i));
    if (ins[i]->n > n) n = ins[i]->n;
  }
  Vals *out = low_vals(L, n);
  MlirType st = low_scalar_type(L, rt);
  for (int64_t j = 0; j < n; j++) {
    MlirOperation c = mlirOperationClone(op);
    kiln_ir_builder_insert(&L->b, c);
    for (intptr_t i = 0; i < nops; i++)
      mlirOperationSetOperand(c, i, ins[i]->v[ins[i]->n == 1 ? 0 : j]);
    MlirValue r = mlirOperationGetResult(c, 0);
    mlirValueSetType(r, st);
    out->v[j] = r;
  }
  low_set(L, res, out);
  return true;
}

static bool lower_constant(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  KilnGpuOwn own = kiln_gpu_own_of_type(rt);
  Vals *out = low_vals(L, own.count);
  if (!mlirTypeIsARankedTensor(rt)) {
    out->v[0] = low_const(L, rt, v);
  } else if (mlirAttributeIsADenseElements(v) && mlirDenseElementsAttrIsSplat(v)) {
    MlirValue c =
        low_const(L, mlirShapedTypeGetElementType(rt), mlirDenseElementsAttrGetSplatValue(v));
    for (int64_t j = 0; j < own.count; j++) out->v[j] = c;
  } else {
    low_error(L, "GPU lowering: only splat tile constants are supported");
    return false;
  }
  low_set(L, res, out);
  return true;
}

static bool lower_range(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  KilnGpuOwn own = kiln_gpu_own_of_type(mlirValueGetType(res));
  int64_t start = kiln_gpu_int_attr(op, "start", 0);
  Vals *out = low_vals(L, own.count);
  MlirValue base = low_coord_base(L, &own, 0);
  for (int64_t j = 0; j < own.count; j++) {
    int local[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(&own, j, local);
    int64_t off = start + kiln_gpu_own_offset(&own, 0, local[0]);
    out->v[j] = mlirValueIsNull(base)
                    ? low_i32(L, off)
                    : (off ? low_bin(L, "arith.addi", base, low_i32(L, off)) : base);
  }
  low_set(L, res, out);
  return true;
}

static bool lower_splat(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  KilnGpuOwn own = kiln_gpu_own_of_type(mlirValueGetType(res));
  Vals *in = low_get(L, mlirOperationGetOperand(op, 0));
  Vals *out = low_vals(L, own.count);
  for (int64_t j = 0; j < own.count; j++) out->v[j] = in->v[0];
  low_set(L, res, out);
  return true;
}

/* broadcast and expand_dims: the operand's layout is the result's (or its slice), so only the
 * list is re-indexed. */
static bool lower_reshape(Low *L, MlirOperation op, bool expand) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  KilnGpuOwn so = kiln_gpu_own_of_type(mlirValueGetType(src)),
             ro = kiln_gpu_own_of_type(mlirValueGetType(res));
  Vals *in = low_get(L, src);
  Vals *out = low_vals(L, ro.count);
  int axis = expand ? (int)kiln_gpu_int_attr(op, "axis", 0) : -1;
  for (int64_t j = 0; j < ro.count; j++) {
    int local[KILN_GPU_MAX_RANK], sl[KILN_GPU_MAX_RANK];
    kiln_gpu_own_local(&ro, j, local);
    int k = 0;
    for (int d = 0; d < ro.rank; d++) {
      if (d == axis) continue;
      sl[k] = so.shape[k] == 1 && ro.shape[d] != 1 ? 0 : local[d];
      if (sl[k] >= so.dim[k].n) sl[k] = 0;
      k++;
    }
    out->v[j] = in->v[so.rank ? kiln_gpu_own_index(&so, sl) : 0];
  }
  low_set(L, res, out);
  return true;
}

static bool lower_addptr(Low *L, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  Vals *p = low_get(L, mlirOperationGetOperand(op, 0));
  Vals *o = low_get(L, mlirOperationGetOperand(op, 1));
  MlirType elem = kiln_ir_ptr_elem(kiln_ir_elem_type(mlirValueGetType(res)));
  int64_t n = p->n > o->n ? p->n : o->n;
  Vals *out = low_vals(L, n);
  for (int64_t j = 0; j < n; j++)
    out->v[j] = low_gep(L, p->v[p->n == 1 ? 0 : j], o->v[o->n == 1 ? 0 : j], elem);
  low_set(L, res, out);
  return true;
}

static bool lower_sreg(Low *L, MlirOperation op, const char *what) {
  static const char axes[] = "xyz";
  int axis = (int)kiln_gpu_int_attr(op, "axis", 0);
  char name[64];
  snprintf(name, sizeof name, "nvvm.read.ptx.sreg.%s.%c", what,
           axes[axis < 0 || axis > 2 ? 0 : axis]);
  Vals *out = low_vals(L, 1);
  out->v[0] = low_op1(L, name, NULL, 0, L->i32);
  low_set(L, mlirOperationGetResult(op, 0), out);
  return true;
}

/* ---------------------------------------------------------------- control flow */

static size_t flatten(Low *L, MlirOperation op, intptr_t first, MlirValue **out) {
  size_t n = 0;
  for (intptr_t i = first; i < mlirOperationGetNumOperands(op); i++)
    n += (size_t)low_get(L, mlirOperationGetOperand(op, i))->n;
  *out = low_alloc(L, (n ? n : 1) * sizeof **out);
  size_t k = 0;
  for (intptr_t i = first; i < mlirOperationGetNumOperands(op); i++) {
    Vals *v = low_get(L, mlirOperationGetOperand(op, i));
    for (int64_t j = 0; j < v->n; j++) (*out)[k++] = v->v[j];
  }
  return n;
}

/* scf.for with n iter args.  The shared builder keeps small fixed arrays; a lowered loop carries
 * every scalar of its tiles (an mma accumulator of a 128x128 tile over 4 warps is 128 floats),
 * so this one sizes them from the lowering's memory. */
static KilnIRFor build_for(Low *L, MlirValue lo, MlirValue hi, MlirValue step,
                           const MlirValue *inits, size_t n) {
  MlirValue *ops = low_alloc(L, (n + 3) * sizeof *ops);
  MlirType *types = low_alloc(L, (n + 1) * sizeof *types);
  MlirLocation *locs = low_alloc(L, (n + 1) * sizeof *locs);
  ops[0] = lo, ops[1] = hi, ops[2] = step;
  types[0] = mlirValueGetType(lo);
  locs[0] = L->loc;
  for (size_t i = 0; i < n; i++) {
    ops[3 + i] = inits[i];
    types[1 + i] = mlirValueGetType(inits[i]);
    locs[1 + i] = L->loc;
  }
  KilnIRFor f = {.n_iter = n};
  MlirRegion r = mlirRegionCreate();
  f.body = mlirBlockCreate((intptr_t)n + 1, types, locs);
  mlirRegionAppendOwnedBlock(r, f.body);
  KilnOpSpec s = {.name = "scf.for",
                  .loc = L->loc,
                  .operands = ops,
                  .n_operands = n + 3,
                  .results = types + 1,
                  .n_results = n,
                  .regions = &r,
                  .n_regions = 1};
  f.op = kiln_ir_create(&L->b, &s);
  f.iv = mlirBlockGetArgument(f.body, 0);
  return f;
}

static bool lower_for(Low *L, MlirOperation op) {
  MlirValue lo = low_get(L, mlirOperationGetOperand(op, 0))->v[0];
  MlirValue hi = low_get(L, mlirOperationGetOperand(op, 1))->v[0];
  MlirValue st = low_get(L, mlirOperationGetOperand(op, 2))->v[0];
  MlirValue *inits;
  size_t n = flatten(L, op, 3, &inits);
  KilnIRFor f = build_for(L, lo, hi, st, inits, n);
  kiln_ir_copy_loop_marks(op, f.op); /* a loop that may end early (its flag stays first) */
  MlirBlock old = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  Vals *iv = low_vals(L, 1);
  iv->v[0] = f.iv;
  low_set(L, mlirBlockGetArgument(old, 0), iv);
  size_t k = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
    MlirValue r = mlirOperationGetResult(op, i);
    int64_t cnt = low_get(L, mlirOperationGetOperand(op, 3 + i))->n;
    Vals *a = low_vals(L, cnt), *res = low_vals(L, cnt);
    for (int64_t j = 0; j < cnt; j++, k++) {
      a->v[j] = kiln_ir_for_iter_arg(&f, k);
      res->v[j] = kiln_ir_for_result(&f, k);
    }
    low_set(L, mlirBlockGetArgument(old, i + 1), a);
    low_set(L, r, res);
  }
  KilnIRBuilder saved = L->b;
  int64_t saved_base = L->smem_base;
  /* Shared buffers live across the loop: the allocator put the arena after them. */
  L->smem_base = kiln_gpu_int_attr(op, "kiln.arena_offset", L->smem_base);
  kiln_ir_builder_set_end(&L->b, f.body);
  lower_block(L, old);
  L->b = saved;
  L->smem_base = saved_base;
  return !L->failed;
}

static bool lower_if(Low *L, MlirOperation op) {
  MlirValue cond = low_get(L, mlirOperationGetOperand(op, 0))->v[0];
  intptr_t nres = mlirOperationGetNumResults(op);
  /* Result scalar types come from the then-yield's lowered operands, so lower the regions
   * into a probe first?  Simpler: a result's list length and types follow its layout. */
  size_t n = 0;
  for (intptr_t i = 0; i < nres; i++)
    n += (size_t)kiln_gpu_own_of_type(mlirValueGetType(mlirOperationGetResult(op, i))).count;
  MlirType *types = low_alloc(L, (n ? n : 1) * sizeof *types);
  size_t k = 0;
  for (intptr_t i = 0; i < nres; i++) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
    int64_t c = kiln_gpu_own_of_type(t).count;
    for (int64_t j = 0; j < c; j++) types[k++] = low_scalar_type(L, t);
  }
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, cond, types, n);
  KilnIRBuilder saved = L->b;
  for (int r = 0; r < 2; r++) {
    MlirBlock nb = r == 0 ? f.then_block : f.else_block;
    MlirBlock ob = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
    kiln_ir_builder_set_end(&L->b, nb);
    if (mlirBlockIsNull(ob))
      kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
    else
      lower_block(L, ob);
  }
  L->b = saved;
  k = 0;
  for (intptr_t i = 0; i < nres; i++) {
    int64_t c = kiln_gpu_own_of_type(mlirValueGetType(mlirOperationGetResult(op, i))).count;
    Vals *res = low_vals(L, c);
    for (int64_t j = 0; j < c; j++) res->v[j] = kiln_ir_if_result(&f, k++);
    low_set(L, mlirOperationGetResult(op, i), res);
  }
  return !L->failed;
}

bool low_lower_op(Low *L, MlirOperation op) {
  L->loc = mlirOperationGetLocation(op);
  switch (kiln_ir_op_id(op)) {
  case KILN_OP_PROGRAM_ID: return lower_sreg(L, op, "ctaid");
  case KILN_OP_NUM_PROGRAMS: return lower_sreg(L, op, "nctaid");
  case KILN_OP_RANGE: return lower_range(L, op);
  case KILN_OP_SPLAT: return lower_splat(L, op);
  case KILN_OP_BROADCAST: return lower_reshape(L, op, false);
  case KILN_OP_EXPAND_DIMS: return lower_reshape(L, op, true);
  case KILN_OP_FLIP:
  case KILN_OP_RESHAPE: return low_convert(L, op);
  case KILN_OP_SCAN: return low_scan(L, op);
  case KILN_OP_TRANS:
    /* Folded into the dot operand convert that reads it (lower_dot.c). */
    if (low_trans_feeds_operand(mlirOperationGetResult(op, 0))) return true;
    return low_convert(L, op);
  case KILN_OP_CONVERT_LAYOUT:
    if (kiln_gpu_layout_of_type(mlirValueGetType(mlirOperationGetResult(op, 0))).kind ==
        KILN_GPU_LAYOUT_DOT_OP) {
      return low_dot_operand(L, op);
    }
    return low_epilogue_convert(L, op) || low_convert(L, op);
  case KILN_OP_ADDPTR: return lower_addptr(L, op);
  case KILN_OP_LOAD: return low_load(L, op);
  case KILN_OP_LOCAL_ALLOC: return low_local_alloc(L, op);
  case KILN_OP_ASYNC_COPY: return low_async_copy(L, op);
  case KILN_OP_ASYNC_COMMIT: return low_async_commit(L, op);
  case KILN_OP_ASYNC_WAIT: return low_async_wait(L, op);
  case KILN_OP_BARRIER: low_barrier(L); return true;
  case KILN_OP_LOCAL_LOAD: return low_local_load(L, op);
  case KILN_OP_WGMMA_WAIT: return low_wgmma_wait(L, op);
  case KILN_OP_STORE: return low_store(L, op);
  case KILN_OP_DOT:
    if (kiln_gpu_layout_of_type(mlirValueGetType(mlirOperationGetResult(op, 0))).kind ==
        KILN_GPU_LAYOUT_MMA)
      return low_dot_is_wgmma(L, op) ? low_dot_wgmma(L, op) : low_dot_mma(L, op);
    return low_dot(L, op);
  case KILN_OP_REDUCE: return low_reduce(L, op);
  case KILN_OP_RAND: return low_rand(L, op);
  case KILN_OP_ATOMIC_RMW:
  case KILN_OP_ATOMIC_CAS: return low_atomic(L, op);
  case KILN_OP_PRINT: return low_print(L, op);
  case KILN_OP_ASSERT: return low_assert(L, op);
  default: break;
  }
  if (kiln_ir_op_is(op, "arith.constant")) return lower_constant(L, op);
  if (kiln_ir_op_is(op, "arith.cmpf") && low_rand_compare(L, op)) return true;
  if (kiln_ir_op_is(op, "scf.for")) return lower_for(L, op);
  if (kiln_ir_op_is(op, "scf.if")) return lower_if(L, op);
  if (kiln_ir_op_is(op, "scf.yield")) {
    MlirValue *vals;
    size_t n = flatten(L, op, 0, &vals);
    kiln_ir_build_yield(&L->b, L->loc, vals, n);
    return true;
  }
  if (kiln_ir_op_is(op, "func.return")) {
    low_op(L, "llvm.return", NULL, 0, NULL, 0, NULL, 0);
    return true;
  }
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  if (name.length > 5 && memcmp(name.data, "math.", 5) == 0) return low_math(L, op);
  if (name.length > 6 && memcmp(name.data, "arith.", 6) == 0) return lower_elementwise(L, op);
  low_error(L, "GPU lowering: unsupported op '%.*s'", (int)name.length, name.data);
  return false;
}

static void lower_block(Low *L, MlirBlock old) {
  for (MlirOperation o = mlirBlockGetFirstOperation(old); !mlirOperationIsNull(o) && !L->failed;
       o = mlirOperationGetNextInBlock(o))
    low_lower_op(L, o);
}

/* ---------------------------------------------------------------- kernels */

/* FP contraction: every float multiply, add and subtract of the lowered kernel may be fused
 * (`contract`), so LLVM's NVPTX backend turns a multiply feeding an add into one fma.rn (one
 * rounding instead of two: as accurate or more, and one instruction instead of two).  This is
 * what CUDA compilers do by default (-fmad=true); the memory-bound kernels' polynomials (erf,
 * GELU), normalizations and optimizer updates are chains of such pairs.  No other fast-math
 * flag: no reassociation, no infinities or NaNs assumed away. */
static MlirWalkResult allow_contraction(MlirOperation op, void *u) {
  MlirAttribute contract = *(MlirAttribute *)u;
  if (kiln_ir_op_is(op, "arith.mulf") || kiln_ir_op_is(op, "arith.addf") ||
      kiln_ir_op_is(op, "arith.subf"))
    mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("fastmath"), contract);
  return MlirWalkResultAdvance;
}

/* Sets *(bool *)u when op allocates a buffer that wgmma reads. */
static MlirWalkResult find_wgmma_buffer(MlirOperation op, void *u) {
  KilnGpuBuffer bf;
  if (kiln_ir_op_id(op) == KILN_OP_LOCAL_ALLOC &&
      kiln_gpu_buffer_parse(mlirValueGetType(mlirOperationGetResult(op, 0)), &bf) && bf.enc.wgmma)
    *(bool *)u = true;
  return MlirWalkResultAdvance;
}

/* The module's one shared arena `kiln_smem`, sized for the largest user of any kernel: a static
 * array up to 48 KiB, else an `.extern .shared` array (dynamic shared memory) whose size the
 * module records as kiln.gpu.smem_bytes with kiln.gpu.smem_dynamic (kiln_gpu.h). */
static void declare_arena(MlirOperation module, Low *L) {
  char text[320];
  int64_t bytes = (L->smem_bytes + 15) / 16 * 16;
  MlirBlock mbody = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation prev = {NULL};
  for (MlirOperation o = mlirBlockGetFirstOperation(mbody); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (kiln_ir_op_is(o, "llvm.mlir.global")) {
      MlirAttribute nm =
          mlirOperationGetAttributeByName(o, mlirStringRefCreateFromCString("sym_name"));
      MlirStringRef s = mlirStringAttrGetValue(nm);
      if (s.length == 9 && memcmp(s.data, "kiln_smem", 9) == 0) prev = o;
    }
  /* The C API cannot read an array type's size back: the arena's size rides along on the
   * module as kiln.gpu.smem_bytes. */
  int64_t have =
      mlirOperationIsNull(prev) ? 0 : kiln_gpu_int_attr(module, "kiln.gpu.smem_bytes", 0);
  /* wgmma's swizzle works on absolute shared addresses: its rings are placed 1024-aligned
   * within the arena, so the arena itself must be */
  bool had_wgmma = kiln_gpu_int_attr(module, KILN_GPU_WGMMA_MODULE_ATTR, 0) == 1;
  if (L->wgmma)
    mlirOperationSetAttributeByName(module,
                                    mlirStringRefCreateFromCString(KILN_GPU_WGMMA_MODULE_ATTR),
                                    kiln_ir_attr_i32(L->ctx, 1));
  if (bytes <= have && (had_wgmma || !L->wgmma)) return;
  if (bytes < have) bytes = have;
  int align = had_wgmma || L->wgmma ? KILN_GPU_WGMMA_ALIGN : 16;
  bool dynamic = bytes > KILN_GPU_STATIC_SMEM_LIMIT;
  mlirOperationSetAttributeByName(module, mlirStringRefCreateFromCString("kiln.gpu.smem_bytes"),
                                  mlirIntegerAttrGet(L->i64, bytes));
  if (dynamic)
    mlirOperationSetAttributeByName(module, mlirStringRefCreateFromCString("kiln.gpu.smem_dynamic"),
                                    mlirUnitAttrGet(L->ctx));
  if (!mlirOperationIsNull(prev)) mlirOperationDestroy(prev);
  if (dynamic) /* an external array of unknown size: PTX's `.extern .shared .b8 kiln_smem[]` */
    snprintf(text, sizeof text,
             "llvm.mlir.global external @kiln_smem() {addr_space = 3 : i32, alignment = %d : i64} "
             ": !llvm.array<0 x i8>",
             align);
  else
    snprintf(text, sizeof text,
             "llvm.mlir.global internal @kiln_smem() {addr_space = 3 : i32, alignment = %d : i64} "
             ": !llvm.array<%lld x i8> {\n %%0 = llvm.mlir.undef : !llvm.array<%lld x i8>\n"
             " llvm.return %%0 : !llvm.array<%lld x i8>\n}",
             align, (long long)bytes, (long long)bytes, (long long)bytes);
  MlirOperation g = kiln_gpu_parse_op(L->ctx, text);
  KILN_ASSERT(!mlirOperationIsNull(g));
  mlirBlockInsertOwnedOperationBefore(mbody, mlirBlockGetFirstOperation(mbody), g);
}

static bool lower_kernel(MlirOperation module, MlirOperation func) {
  Low L;
  memset(&L, 0, sizeof L);
  L.ctx = mlirOperationGetContext(func);
  L.loc = mlirOperationGetLocation(func);
  L.i1 = mlirIntegerTypeGet(L.ctx, 1);
  L.i8 = mlirIntegerTypeGet(L.ctx, 8);
  L.i32 = mlirIntegerTypeGet(L.ctx, 32);
  L.i64 = mlirIntegerTypeGet(L.ctx, 64);
  L.f32 = mlirF32TypeGet(L.ctx);
  L.ptr1 = mlirLLVMPointerTypeGet(L.ctx, 1);
  L.ptr3 = mlirLLVMPointerTypeGet(L.ctx, 3);
  L.num_warps = (int)kiln_gpu_int_attr(func, "kiln.num_warps", 4);
  L.smem_limit = kiln_gpu_int_attr(func, "kiln.smem_limit", KILN_GPU_SMEM_LIMIT_SM90);
  L.sm = (int)kiln_gpu_int_attr(func, "kiln.sm", 90);
  L.axis = kiln_axis_analyze(func);

  MlirBlock old_entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nargs = mlirBlockGetNumArguments(old_entry);
  MlirType *types = low_alloc(&L, (size_t)(nargs ? nargs : 1) * sizeof *types);
  MlirLocation *locs = low_alloc(&L, (size_t)(nargs ? nargs : 1) * sizeof *locs);
  for (intptr_t i = 0; i < nargs; i++) {
    types[i] = low_scalar_type(&L, mlirValueGetType(mlirBlockGetArgument(old_entry, i)));
    locs[i] = L.loc;
  }
  MlirType fty = mlirLLVMFunctionTypeGet(mlirLLVMVoidTypeGet(L.ctx), nargs, types, false);
  MlirAttribute sym =
      mlirOperationGetAttributeByName(func, mlirStringRefCreateFromCString("sym_name"));
  int32_t maxntid[3] = {32 * L.num_warps, 1, 1};
  int min_blocks = (int)kiln_gpu_int_attr(func, "kiln.min_blocks", 0);
  MlirNamedAttribute attrs[6] = {
      kiln_ir_named(L.ctx, "sym_name", sym),
      kiln_ir_named(L.ctx, "function_type", mlirTypeAttrGet(fty)),
      kiln_ir_named(L.ctx, "linkage", kiln_gpu_parse_attr(L.ctx, "#llvm.linkage<external>")),
      kiln_ir_named(L.ctx, "nvvm.kernel", mlirUnitAttrGet(L.ctx)),
      kiln_ir_named(L.ctx, "nvvm.maxntid", mlirDenseI32ArrayGet(L.ctx, 3, maxntid)),
      /* the config's min_blocks becomes .minnctapersm: with .maxntid it caps the registers at
       * what that many blocks per SM leave each thread, and ptxas allocates to that cap */
      kiln_ir_named(L.ctx, "nvvm.minctasm", kiln_ir_attr_i32(L.ctx, min_blocks)),
  };
  intptr_t nattrs = min_blocks > 0 ? 6 : 5;
  MlirRegion region = mlirRegionCreate();
  MlirBlock entry = mlirBlockCreate(nargs, types, locs);
  mlirRegionAppendOwnedBlock(region, entry);
  KilnIRBuilder mb;
  kiln_ir_builder_init(&mb, L.ctx, mlirOperationGetBlock(func));
  kiln_ir_builder_set_before(&mb, func);
  KilnOpSpec spec = {.name = "llvm.func",
                     .loc = L.loc,
                     .attrs = attrs,
                     .n_attrs = nattrs,
                     .regions = &region,
                     .n_regions = 1};
  MlirOperation nf = kiln_ir_create(&mb, &spec);
  for (intptr_t i = 0; i < nargs; i++) {
    Vals *v = low_vals(&L, 1);
    v->v[0] = mlirBlockGetArgument(entry, i);
    low_set(&L, mlirBlockGetArgument(old_entry, i), v);
  }
  kiln_ir_builder_init(&L.b, L.ctx, entry);
  mlirOperationWalk(func, find_wgmma_buffer, &L.wgmma_bufs, MlirWalkPreOrder);
  lower_block(&L, old_entry);
  if (!L.failed && L.smem_bytes > L.smem_limit) {
    L.loc = mlirOperationGetLocation(func);
    low_error(&L,
              "limit: shared memory: the kernel needs %lld bytes, more than the %lld a "
              "program may have on this target (fewer num_stages or smaller tiles)",
              (long long)L.smem_bytes, (long long)L.smem_limit);
  }
  bool ok = !L.failed;
  if (ok && L.smem_bytes > 0) declare_arena(module, &L);
  if (ok) {
    MlirAttribute contract = kiln_gpu_parse_attr(L.ctx, "#arith.fastmath<contract>");
    mlirOperationWalk(nf, allow_contraction, &contract, MlirWalkPreOrder);
  }
  if (ok)
    mlirOperationDestroy(func);
  else
    mlirOperationDestroy(nf);
  kiln_axis_free(L.axis);
  for (size_t i = 0; i < L.n_allocs; i++) free(L.allocs[i]);
  free(L.allocs);
  kiln_ptr_map_free(&L.vals);
  return ok;
}

MlirLogicalResult kiln_gpu_to_llvm_module(MlirOperation module, void *opts) {
  (void)opts;
  KilnOpList kernels = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  bool ok = true;
  for (size_t i = 0; i < kernels.n; i++) ok = lower_kernel(module, kernels.ops[i]) && ok;
  kiln_op_list_free(&kernels);
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}
