/* cpu_lower.c - convert-kiln-to-cpu: kiln kernels become host functions.
 *
 * How this works.  Each kernel `@NAME` is rebuilt, op by op, into a new function
 * `@kiln_cpu_NAME(!llvm.ptr args, i32 pid_x, pid_y, pid_z, nprog_x, nprog_y, nprog_z)` (the
 * CPU kernel ABI of docs/internals.md) made of scf + memref + arith + math + llvm ops; the old
 * function is then erased.  A map records what each old SSA value became (CpuVal, cpu_kit.c):
 * scalars and splat tiles stay scalars; other tiles are deferred (computed element by element
 * inside the loop nest of whatever reads them, so that a chain of elementwise ops and index
 * remaps becomes one loop nest) or get a static memref alloca'd in the entry block, so loops do
 * not grow the stack.  Pointers are i64 addresses.
 *
 * Elementwise arith/math ops are lowered generically: a deferred tile whose element reads each
 * operand's element and re-creates the same op by name on scalars.  Kiln ops are in
 * cpu_ops.c.  scf.for / scf.if carrying tiles give each carried tile one buffer: the init is
 * copied in before the loop, yielded tiles are copied back at the end of the body (through a
 * temporary when a yield reads another carried buffer of the same loop); scalars stay
 * iter_args / results.
 *
 * Integer division or remainder by zero does not trap: x / 0 == 0 and x % 0 == x (so that
 * x == (x / y) * y + x % y still holds), and INT_MIN / -1 wraps to INT_MIN with remainder 0. */
#include "cpu_lower.h"

/* ---------------------------------------------------------------- scalar ops */

static bool name_is(const char *name, const char *const *list) {
  for (; *list; list++)
    if (strcmp(name, *list) == 0) return true;
  return false;
}

/* Integer division that cannot trap, see the file comment. */
static MlirValue safe_div(Cpu *c, const char *name, const MlirValue *ops, MlirType t,
                          const MlirNamedAttribute *attrs, size_t n_attrs) {
  static const char *const is_signed[] = {"arith.divsi", "arith.remsi", "arith.ceildivsi",
                                          "arith.floordivsi", NULL};
  bool is_rem = strstr(name, "rem") != NULL;
  MlirValue x = ops[0], d = ops[1];
  MlirValue zero = kiln_cpu_int_const(c, t, 0), one = kiln_cpu_int_const(c, t, 1);
  MlirValue is_zero = kiln_ir_build_cmpi(&c->b, c->loc, "eq", d, zero);
  MlirValue d1 = kiln_ir_build_select(&c->b, c->loc, is_zero, one, d);
  MlirValue is_m1 = {NULL};
  bool sgn = name_is(name, is_signed);
  if (sgn) {
    is_m1 = kiln_ir_build_cmpi(&c->b, c->loc, "eq", d, kiln_cpu_int_const(c, t, -1));
    d1 = kiln_ir_build_select(&c->b, c->loc, is_m1, one, d1);
  }
  MlirValue nops[2] = {x, d1};
  MlirValue r = kiln_cpu_op_attrs(c, name, nops, 2, t, attrs, n_attrs);
  if (sgn) { /* x / -1 == 0 - x (wrapping), x % -1 == 0 */
    MlirValue sub[2] = {zero, x};
    MlirValue m1 = is_rem ? zero : kiln_cpu_op(c, "arith.subi", sub, 2, t);
    r = kiln_ir_build_select(&c->b, c->loc, is_m1, m1, r);
  }
  return kiln_ir_build_select(&c->b, c->loc, is_zero, is_rem ? x : zero, r);
}

/* Re-creates `op` (an upstream, region-free op) on scalar operands with scalar results. */
static MlirOperation clone_scalar(Cpu *c, MlirOperation op, const MlirValue *ops, size_t n,
                                  MlirValue *out) {
  char name[64];
  kiln_ir_op_name(op, name, sizeof name);
  intptr_t nres = mlirOperationGetNumResults(op), nattr = mlirOperationGetNumAttributes(op);
  MlirType rts[8];
  MlirNamedAttribute attrs[16];
  KILN_ASSERT(nres <= 8 && nattr <= 16);
  for (intptr_t i = 0; i < nres; i++)
    rts[i] = kiln_cpu_scalar_type(mlirValueGetType(mlirOperationGetResult(op, i)));
  for (intptr_t i = 0; i < nattr; i++) attrs[i] = mlirOperationGetAttribute(op, i);
  static const char *const divs[] = {
      "arith.divsi",     "arith.divui",     "arith.remsi",      "arith.remui",
      "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi", NULL};
  if (name_is(name, divs) && nres == 1 && mlirTypeIsAInteger(rts[0])) {
    out[0] = safe_div(c, name, ops, rts[0], attrs, (size_t)nattr);
    return (MlirOperation){NULL};
  }
  KilnOpSpec s = {.name = name,
                  .loc = c->loc,
                  .operands = ops,
                  .n_operands = n,
                  .results = rts,
                  .n_results = (size_t)nres,
                  .attrs = attrs,
                  .n_attrs = (size_t)nattr};
  MlirOperation nop = kiln_ir_create(&c->b, &s);
  for (intptr_t i = 0; i < nres; i++) out[i] = mlirOperationGetResult(nop, i);
  return nop;
}

/* An element-wise op on tiles, one result of it per map: the op cloned on the elements.  An op
 * of several results (arith.mulsi_extended, which canonicalize makes of umulhi's widening
 * product) is cloned once per result that is read; LLVM merges the copies. */
typedef struct ElemResult {
  MlirOperation op;
  int result;
} ElemResult;

static MlirValue elementwise_fn(Cpu *c, const MlirValue *elems, void *user) {
  const ElemResult *r = user;
  MlirValue out[8];
  clone_scalar(c, r->op, elems, (size_t)mlirOperationGetNumOperands(r->op), out);
  return out[r->result];
}

/* arith.constant: splats stay scalars; other dense tiles are written element by element. */
static void lower_constant(Cpu *c, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType t = mlirValueGetType(res);
  MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  if (!kiln_ir_type_is_tile(t)) {
    MlirValue out[1];
    clone_scalar(c, op, NULL, 0, out);
    kiln_cpu_set_scalar(c, res, out[0]);
    return;
  }
  MlirType et = kiln_ir_elem_type(t);
  if (mlirAttributeIsADenseElements(v) && mlirDenseElementsAttrIsSplat(v)) {
    MlirNamedAttribute a = kiln_ir_named(c->ctx, "value", mlirDenseElementsAttrGetSplatValue(v));
    kiln_cpu_set_scalar(c, res, kiln_cpu_op_attrs(c, "arith.constant", NULL, 0, et, &a, 1));
    return;
  }
  MlirValue buf = kiln_cpu_alloc(c, t);
  kiln_cpu_set_buf(c, res, buf);
  int rank = kiln_ir_rank(t);
  int64_t numel = kiln_ir_type_numel(t);
  for (int64_t i = 0; i < numel; i++) {
    uint64_t pos[16];
    MlirValue idx[16];
    for (int d = rank - 1, rem = 0; d >= 0; d--) {
      (void)rem;
      int64_t stride = 1;
      for (int e = d + 1; e < rank; e++) stride *= kiln_ir_dim(t, e);
      pos[d] = (uint64_t)((i / stride) % kiln_ir_dim(t, d));
      idx[d] = kiln_cpu_cidx(c, (int64_t)pos[d]);
    }
    MlirNamedAttribute a = kiln_ir_named(c->ctx, "value", mlirElementsAttrGetValue(v, rank, pos));
    MlirValue e = kiln_cpu_op_attrs(c, "arith.constant", NULL, 0, et, &a, 1);
    kiln_cpu_store_elem(c, buf, e, idx, rank);
  }
}

/* ---------------------------------------------------------------- regions */

static void lower_block(Cpu *c, MlirBlock old);

/* Per-op arrays sized by a loop's or if's value count, which the source does not bound. */
static void *cpu_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  KILN_ASSERT(p != NULL);
  return p;
}

/* Terminators of lowered regions: copies tile values into `bufs` (null for scalar slots) and
 * yields the scalar ones. */
static void lower_yield(Cpu *c, MlirOperation yield, const MlirValue *bufs, size_t n) {
  MlirValue *src_tmp = cpu_calloc(n, sizeof *src_tmp), *scalars = cpu_calloc(n, sizeof *scalars);
  size_t ns = 0;
  /* first, move sources that are another slot's buffer, or deferred (which may read one), out
   * of the way */
  for (size_t i = 0; i < n; i++) {
    src_tmp[i] = (MlirValue){NULL};
    if (mlirValueIsNull(bufs[i])) continue;
    CpuVal *v = kiln_cpu_get(c, mlirOperationGetOperand(yield, (intptr_t)i));
    if (kiln_cpu_is_deferred(v)) {
      src_tmp[i] = kiln_cpu_stored(c, v).buf;
      continue;
    }
    for (size_t j = 0; j < n && !mlirValueIsNull(v->buf); j++)
      if (j != i && bufs[j].ptr == v->buf.ptr) {
        src_tmp[i] = kiln_cpu_alloc(c, mlirValueGetType(v->old));
        kiln_cpu_copy(c, v, src_tmp[i]);
        break;
      }
  }
  for (size_t i = 0; i < n; i++) {
    CpuVal *v = kiln_cpu_get(c, mlirOperationGetOperand(yield, (intptr_t)i));
    if (mlirValueIsNull(bufs[i])) {
      scalars[ns++] = v->scalar;
    } else if (!mlirValueIsNull(src_tmp[i])) {
      CpuVal t = {.buf = src_tmp[i]};
      kiln_cpu_copy(c, &t, bufs[i]);
    } else {
      kiln_cpu_copy(c, v, bufs[i]);
    }
  }
  kiln_ir_build_yield(&c->b, c->loc, scalars, ns);
  free(src_tmp);
  free(scalars);
}

static void lower_for(Cpu *c, MlirOperation op) {
  size_t n = (size_t)mlirOperationGetNumResults(op);
  MlirValue *bufs = cpu_calloc(n, sizeof *bufs), *inits = cpu_calloc(n, sizeof *inits);
  size_t ns = 0;
  for (size_t i = 0; i < n; i++) {
    MlirValue init = mlirOperationGetOperand(op, (intptr_t)(3 + i));
    bufs[i] = (MlirValue){NULL};
    if (kiln_ir_type_is_tile(mlirValueGetType(init))) {
      bufs[i] = kiln_cpu_alloc(c, mlirValueGetType(init));
      kiln_cpu_copy(c, kiln_cpu_get(c, init), bufs[i]);
    } else {
      inits[ns++] = kiln_cpu_get(c, init)->scalar;
    }
  }
  MlirValue lo = kiln_cpu_get(c, mlirOperationGetOperand(op, 0))->scalar;
  MlirValue hi = kiln_cpu_get(c, mlirOperationGetOperand(op, 1))->scalar;
  MlirValue st = kiln_cpu_get(c, mlirOperationGetOperand(op, 2))->scalar;
  MlirLocation loc = c->loc;
  KilnIRFor f = kiln_ir_build_for(&c->b, loc, lo, hi, st, inits, ns);
  kiln_ir_copy_loop_marks(op, f.op); /* a loop that may end early (its flag stays first) */
  MlirBlock old_body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  kiln_cpu_set_scalar(c, mlirBlockGetArgument(old_body, 0), f.iv);
  for (size_t i = 0, s = 0; i < n; i++) {
    MlirValue arg = mlirBlockGetArgument(old_body, (intptr_t)(i + 1));
    MlirValue res = mlirOperationGetResult(op, (intptr_t)i);
    if (mlirValueIsNull(bufs[i])) {
      kiln_cpu_set_scalar(c, arg, kiln_ir_for_iter_arg(&f, s));
      kiln_cpu_set_scalar(c, res, kiln_ir_for_result(&f, s));
      s++;
    } else {
      kiln_cpu_set_buf(c, arg, bufs[i]);
      kiln_cpu_set_buf(c, res, bufs[i]);
    }
  }
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.body);
  lower_block(c, old_body);
  c->loc = loc;
  lower_yield(c, mlirBlockGetTerminator(old_body), bufs, n);
  c->b = saved;
  free(bufs);
  free(inits);
}

static void lower_if(Cpu *c, MlirOperation op) {
  size_t n = (size_t)mlirOperationGetNumResults(op);
  MlirValue *bufs = cpu_calloc(n, sizeof *bufs);
  MlirType *rts = cpu_calloc(n, sizeof *rts);
  size_t ns = 0;
  for (size_t i = 0; i < n; i++) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, (intptr_t)i));
    bufs[i] = kiln_ir_type_is_tile(t) ? kiln_cpu_alloc(c, t) : (MlirValue){NULL};
    if (mlirValueIsNull(bufs[i])) rts[ns++] = kiln_cpu_scalar_type(t);
  }
  MlirLocation loc = c->loc;
  MlirValue cond = kiln_cpu_get(c, mlirOperationGetOperand(op, 0))->scalar;
  KilnIRIf f = kiln_ir_build_if(&c->b, loc, cond, rts, ns);
  KilnIRBuilder saved = c->b;
  MlirBlock new_blocks[2] = {f.then_block, f.else_block};
  for (int r = 0; r < 2; r++) {
    kiln_ir_builder_set_end(&c->b, new_blocks[r]);
    MlirBlock old = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
    if (mlirBlockIsNull(old)) {
      kiln_ir_build_yield(&c->b, loc, NULL, 0);
      continue;
    }
    lower_block(c, old);
    c->loc = loc;
    lower_yield(c, mlirBlockGetTerminator(old), bufs, n);
  }
  c->b = saved;
  for (size_t i = 0, s = 0; i < n; i++) {
    MlirValue res = mlirOperationGetResult(op, (intptr_t)i);
    if (mlirValueIsNull(bufs[i]))
      kiln_cpu_set_scalar(c, res, kiln_ir_if_result(&f, s++));
    else
      kiln_cpu_set_buf(c, res, bufs[i]);
  }
  free(bufs);
  free(rts);
}

static bool has_tile(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
    if (kiln_ir_type_is_tile(mlirValueGetType(mlirOperationGetResult(op, i)))) return true;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++)
    if (kiln_ir_type_is_tile(mlirValueGetType(mlirOperationGetOperand(op, i)))) return true;
  return false;
}

static void lower_op(Cpu *c, MlirOperation op) {
  c->loc = mlirOperationGetLocation(op);
  KilnOpId id = kiln_ir_op_id(op);
  if (id != KILN_OP_NONE) {
    if (!kiln_cpu_lower_kiln_op(c, op, id)) c->failed = true;
    return;
  }
  char name[64];
  kiln_ir_op_name(op, name, sizeof name);
  if (strcmp(name, "scf.for") == 0) {
    lower_for(c, op);
  } else if (strcmp(name, "scf.if") == 0) {
    lower_if(c, op);
  } else if (strcmp(name, "arith.constant") == 0) {
    lower_constant(c, op);
  } else if (strcmp(name, "func.return") == 0) {
    kiln_ir_build_return(&c->b, c->loc);
  } else if (mlirOperationGetNumRegions(op) != 0 || mlirOperationGetNumResults(op) > 8) {
    kiln_ir_error(c->loc, "the CPU backend cannot lower '%s'", name);
    c->failed = true;
  } else if (has_tile(op)) {
    int n = (int)mlirOperationGetNumResults(op);
    if (n != 1 && (n == 0 || strncmp(name, "arith.", 6) != 0)) {
      kiln_ir_error(c->loc, "the CPU backend cannot lower '%s' on tiles", name);
      c->failed = true;
      return;
    }
    for (int i = 0; i < n; i++) { /* a result never read is never materialized */
      ElemResult r = {op, i};
      kiln_cpu_map_pure_result(c, op, i, elementwise_fn, &r, sizeof r);
    }
  } else {
    MlirValue ops[16], out[8];
    intptr_t n = mlirOperationGetNumOperands(op);
    KILN_ASSERT(n <= 16);
    for (intptr_t i = 0; i < n; i++)
      ops[i] = kiln_cpu_get(c, mlirOperationGetOperand(op, i))->scalar;
    clone_scalar(c, op, ops, (size_t)n, out);
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++)
      kiln_cpu_set_scalar(c, mlirOperationGetResult(op, i), out[i]);
  }
}

/* Lowers every op of `old` except its terminator when it is an scf.yield (the caller handles
 * those, knowing where carried tiles live). */
static void lower_block(Cpu *c, MlirBlock old) {
  for (MlirOperation op = mlirBlockGetFirstOperation(old); !mlirOperationIsNull(op) && !c->failed;
       op = mlirOperationGetNextInBlock(op)) {
    if (kiln_ir_op_is(op, "scf.yield")) break;
    lower_op(c, op);
  }
}

/* ---------------------------------------------------------------- functions */

static MlirValue gep_load(Cpu *c, MlirValue base, int32_t i, MlirType rt) {
  MlirType ptr = mlirTypeParseGet(c->ctx, mlirStringRefCreateFromCString("!llvm.ptr"));
  MlirNamedAttribute ga[2] = {
      kiln_ir_named(c->ctx, "elem_type", mlirTypeAttrGet(ptr)),
      kiln_ir_named(c->ctx, "rawConstantIndices", mlirDenseI32ArrayGet(c->ctx, 1, &i))};
  MlirValue p = kiln_cpu_op_attrs(c, "llvm.getelementptr", &base, 1, ptr, ga, 2);
  MlirValue vp = kiln_cpu_op(c, "llvm.load", &p, 1, ptr);
  return kiln_cpu_op(c, "llvm.load", &vp, 1, rt);
}

static bool lower_kernel(MlirOperation fn, MlirBlock module_body) {
  MlirContext ctx = mlirOperationGetContext(fn);
  MlirAttribute sym =
      mlirOperationGetAttributeByName(fn, mlirStringRefCreateFromCString("sym_name"));
  MlirStringRef name = mlirStringAttrGetValue(sym);
  KilnStr new_name = {0};
  kiln_str_appendf(&new_name, "kiln_cpu_%.*s", (int)name.length, name.data);

  Cpu c = {.ctx = ctx, .loc = mlirOperationGetLocation(fn)};
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirType ptr = mlirTypeParseGet(ctx, mlirStringRefCreateFromCString("!llvm.ptr"));
  MlirType args[7] = {ptr, i32, i32, i32, i32, i32, i32};
  kiln_ir_builder_init(&c.b, ctx, module_body);
  kiln_ir_builder_set_before(&c.b, fn);
  KilnIRFunc nf = kiln_ir_build_kernel(&c.b, c.loc, new_name.data, args, 7, 0, 0);
  kiln_str_free(&new_name);
  /* the host function is not a kiln kernel any more: drop the kernel attributes */
  mlirOperationRemoveAttributeByName(nf.op, mlirStringRefCreateFromCString("kiln.kernel"));
  mlirOperationRemoveAttributeByName(nf.op, mlirStringRefCreateFromCString("kiln.num_warps"));
  mlirOperationRemoveAttributeByName(nf.op, mlirStringRefCreateFromCString("kiln.num_stages"));
  c.entry = nf.entry;
  kiln_ir_builder_set_end(&c.b, nf.entry);
  /* every alloca goes before this marker, so they all sit at the top of the entry block */
  c.alloca_at = mlirOpResultGetOwner(kiln_cpu_cidx(&c, 0));
  for (int i = 0; i < 3; i++) {
    c.pid[i] = kiln_ir_func_arg(&nf, (size_t)(1 + i));
    c.nprog[i] = kiln_ir_func_arg(&nf, (size_t)(4 + i));
  }
  MlirBlock old_entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0));
  for (intptr_t i = 0; i < mlirBlockGetNumArguments(old_entry); i++) {
    MlirValue a = mlirBlockGetArgument(old_entry, i);
    MlirType t = mlirValueGetType(a);
    if (kiln_ir_type_is_tile(t)) {
      kiln_ir_error(c.loc, "kernel parameter %d is a tile; kernels take scalars and pointers",
                    (int)i);
      c.failed = true;
      break;
    }
    kiln_cpu_set_scalar(
        &c, a, gep_load(&c, kiln_ir_func_arg(&nf, 0), (int32_t)i, kiln_cpu_scalar_type(t)));
  }
  c.axis = kiln_axis_analyze(fn);
  if (!c.failed) lower_block(&c, old_entry);
  kiln_axis_free(c.axis);
  kiln_cpu_map_free(&c);
  if (c.failed) {
    mlirOperationDestroy(nf.op);
    return false;
  }
  mlirOperationDestroy(fn);
  return true;
}

MlirLogicalResult kiln_cpu_lower_module(MlirOperation module, void *opts) {
  (void)opts;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  KilnOpList kernels = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  bool ok = true;
  for (size_t i = 0; i < kernels.n; i++) ok &= lower_kernel(kernels.ops[i], body);
  kiln_op_list_free(&kernels);
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}
