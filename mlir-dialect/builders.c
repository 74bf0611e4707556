/* builders.c - every op Kiln creates goes through these builders; nothing else fills an
 * MlirOperationState.  Result types that follow from the operands are computed here so that
 * callers cannot get them wrong. */
#include "kiln_mlir_internal.h"

/* ---------------------------------------------------------------- generic */

void kiln_ir_builder_init(KilnIRBuilder *b, MlirContext ctx, MlirBlock block) {
  b->ctx = ctx;
  b->block = block;
  b->before = (MlirOperation){NULL};
}

void kiln_ir_builder_set_before(KilnIRBuilder *b, MlirOperation op) {
  b->block = mlirOperationGetBlock(op);
  b->before = op;
}

void kiln_ir_builder_set_end(KilnIRBuilder *b, MlirBlock block) {
  b->block = block;
  b->before = (MlirOperation){NULL};
}

void kiln_ir_builder_insert(KilnIRBuilder *b, MlirOperation op) {
  KILN_ASSERT(!mlirBlockIsNull(b->block));
  if (mlirOperationIsNull(b->before))
    mlirBlockAppendOwnedOperation(b->block, op);
  else
    mlirBlockInsertOwnedOperationBefore(b->block, b->before, op);
}

MlirOperation kiln_ir_create(KilnIRBuilder *b, const KilnOpSpec *s) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(s->name), s->loc);
  if (s->n_operands) mlirOperationStateAddOperands(&st, (intptr_t)s->n_operands, s->operands);
  if (s->n_results) mlirOperationStateAddResults(&st, (intptr_t)s->n_results, s->results);
  if (s->n_attrs) mlirOperationStateAddAttributes(&st, (intptr_t)s->n_attrs, s->attrs);
  if (s->n_regions) mlirOperationStateAddOwnedRegions(&st, (intptr_t)s->n_regions, s->regions);
  if (s->n_successors)
    mlirOperationStateAddSuccessors(&st, (intptr_t)s->n_successors, s->successors);
  MlirOperation op = mlirOperationCreate(&st);
  KILN_ASSERT(!mlirOperationIsNull(op));
  kiln_ir_builder_insert(b, op);
  return op;
}

MlirNamedAttribute kiln_ir_named(MlirContext ctx, const char *name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

MlirAttribute kiln_ir_attr_i32(MlirContext ctx, int32_t v) {
  return mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), v);
}

bool kiln_ir_get_int_attr(MlirOperation op, const char *name, int64_t *out) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

bool kiln_ir_get_str_attr(MlirOperation op, const char *name, char *buf, size_t cap) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a) || cap == 0) return false;
  MlirStringRef s = mlirStringAttrGetValue(a);
  size_t n = s.length < cap - 1 ? s.length : cap - 1;
  memcpy(buf, s.data, n);
  buf[n] = '\0';
  return true;
}

void kiln_ir_op_name(MlirOperation op, char *buf, size_t cap) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  size_t n = s.length < cap - 1 ? s.length : cap - 1;
  memcpy(buf, s.data, n);
  buf[n] = '\0';
}

bool kiln_ir_op_is(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && memcmp(s.data, name, s.length) == 0;
}

MlirLocation kiln_ir_loc(MlirContext ctx, const char *file, int line, int col) {
  return mlirLocationFileLineColGet(ctx, mlirStringRefCreateFromCString(file), (unsigned)line,
                                    (unsigned)col);
}

MlirBlock kiln_ir_module_body(MlirModule m) { return mlirModuleGetBody(m); }

static MlirValue one_result(KilnIRBuilder *b, const KilnOpSpec *s) {
  return mlirOperationGetResult(kiln_ir_create(b, s), 0);
}

static MlirValue build_simple(KilnIRBuilder *b, MlirLocation loc, const char *name,
                              const MlirValue *ops, size_t n, MlirType result,
                              const MlirNamedAttribute *attrs, size_t n_attrs) {
  KilnOpSpec s = {.name = name,
                  .loc = loc,
                  .operands = ops,
                  .n_operands = n,
                  .results = &result,
                  .n_results = 1,
                  .attrs = attrs,
                  .n_attrs = n_attrs};
  return one_result(b, &s);
}

/* ---------------------------------------------------------------- kiln ops */

static MlirValue build_axis_op(KilnIRBuilder *b, MlirLocation loc, const char *name, int axis) {
  MlirNamedAttribute a = kiln_ir_named(b->ctx, "axis", kiln_ir_attr_i32(b->ctx, axis));
  return build_simple(b, loc, name, NULL, 0, mlirIntegerTypeGet(b->ctx, 32), &a, 1);
}

MlirValue kiln_ir_build_program_id(KilnIRBuilder *b, MlirLocation loc, int axis) {
  return build_axis_op(b, loc, KILN_OP_NAME_PROGRAM_ID, axis);
}

MlirValue kiln_ir_build_num_programs(KilnIRBuilder *b, MlirLocation loc, int axis) {
  return build_axis_op(b, loc, KILN_OP_NAME_NUM_PROGRAMS, axis);
}

MlirValue kiln_ir_build_range(KilnIRBuilder *b, MlirLocation loc, int32_t start, int32_t end) {
  int64_t n = (int64_t)end - start;
  if (n < 1) n = 1; /* keeps the type valid; the verifier reports end <= start */
  MlirType t = kiln_ir_type_tensor(mlirIntegerTypeGet(b->ctx, 32), &n, 1);
  MlirNamedAttribute a[2] = {kiln_ir_named(b->ctx, "start", kiln_ir_attr_i32(b->ctx, start)),
                             kiln_ir_named(b->ctx, "end", kiln_ir_attr_i32(b->ctx, end))};
  return build_simple(b, loc, KILN_OP_NAME_RANGE, NULL, 0, t, a, 2);
}

MlirValue kiln_ir_build_splat(KilnIRBuilder *b, MlirLocation loc, MlirValue scalar,
                              MlirType result_type) {
  return build_simple(b, loc, KILN_OP_NAME_SPLAT, &scalar, 1, result_type, NULL, 0);
}

MlirValue kiln_ir_build_broadcast(KilnIRBuilder *b, MlirLocation loc, MlirValue tile,
                                  MlirType result_type) {
  return build_simple(b, loc, KILN_OP_NAME_BROADCAST, &tile, 1, result_type, NULL, 0);
}

MlirValue kiln_ir_build_expand_dims(KilnIRBuilder *b, MlirLocation loc, MlirValue tile, int axis) {
  MlirType t = mlirValueGetType(tile);
  int rank = kiln_ir_rank(t);
  KILN_ASSERT(rank < 15);
  int64_t shape[16];
  int r = 0;
  for (int i = 0; i <= rank; i++) {
    if (i == axis) shape[r++] = 1;
    if (i < rank) shape[r++] = kiln_ir_dim(t, i);
  }
  if (axis < 0 || axis > rank)
    shape[r++] = 1; /* bad axis: still a valid type, the verifier reports the axis */
  MlirType rt = kiln_ir_type_tensor(kiln_ir_elem_type(t), shape, rank + 1);
  MlirNamedAttribute a = kiln_ir_named(b->ctx, "axis", kiln_ir_attr_i32(b->ctx, axis));
  return build_simple(b, loc, KILN_OP_NAME_EXPAND_DIMS, &tile, 1, rt, &a, 1);
}

MlirValue kiln_ir_build_trans(KilnIRBuilder *b, MlirLocation loc, MlirValue tile) {
  MlirType t = mlirValueGetType(tile);
  int rank = kiln_ir_rank(t);
  int64_t shape[16];
  KILN_ASSERT(rank >= 1 && rank <= 16);
  for (int i = 0; i < rank; i++) shape[i] = kiln_ir_dim(t, rank - 1 - i);
  MlirType rt = kiln_ir_type_tensor(kiln_ir_elem_type(t), shape, rank);
  return build_simple(b, loc, KILN_OP_NAME_TRANS, &tile, 1, rt, NULL, 0);
}

MlirValue kiln_ir_build_addptr(KilnIRBuilder *b, MlirLocation loc, MlirValue ptr,
                               MlirValue offsets) {
  MlirValue ops[2] = {ptr, offsets};
  return build_simple(b, loc, KILN_OP_NAME_ADDPTR, ops, 2, mlirValueGetType(ptr), NULL, 0);
}

MlirValue kiln_ir_build_load(KilnIRBuilder *b, MlirLocation loc, MlirValue ptrs, MlirValue mask,
                             MlirValue other) {
  MlirType pt = mlirValueGetType(ptrs);
  MlirType elem = kiln_ir_ptr_elem(kiln_ir_elem_type(pt));
  MlirType rt = mlirTypeIsNull(elem) ? mlirValueGetType(other) : kiln_ir_type_like(pt, elem);
  MlirValue ops[3] = {ptrs, mask, other};
  return build_simple(b, loc, KILN_OP_NAME_LOAD, ops, 3, rt, NULL, 0);
}

MlirOperation kiln_ir_build_store(KilnIRBuilder *b, MlirLocation loc, MlirValue ptrs,
                                  MlirValue values, MlirValue mask) {
  MlirValue ops[3] = {ptrs, values, mask};
  KilnOpSpec s = {.name = KILN_OP_NAME_STORE, .loc = loc, .operands = ops, .n_operands = 3};
  return kiln_ir_create(b, &s);
}

MlirValue kiln_ir_build_atomic_rmw(KilnIRBuilder *b, MlirLocation loc, KilnRmwKind kind,
                                   MlirValue ptrs, MlirValue values, MlirValue mask) {
  MlirValue ops[3] = {ptrs, values, mask};
  MlirNamedAttribute a = kiln_ir_named(
      b->ctx, "kind",
      mlirStringAttrGet(b->ctx, mlirStringRefCreateFromCString(kiln_rmw_kind_name(kind))));
  return build_simple(b, loc, KILN_OP_NAME_ATOMIC_RMW, ops, 3, mlirValueGetType(values), &a, 1);
}

MlirValue kiln_ir_build_atomic_cas(KilnIRBuilder *b, MlirLocation loc, MlirValue ptrs,
                                   MlirValue cmp, MlirValue values, MlirValue mask) {
  MlirValue ops[4] = {ptrs, cmp, values, mask};
  return build_simple(b, loc, KILN_OP_NAME_ATOMIC_CAS, ops, 4, mlirValueGetType(values), NULL, 0);
}

/* An op of one operand and a string attribute `text`, no result (device_print, device_assert). */
static MlirOperation build_text_op(KilnIRBuilder *b, MlirLocation loc, const char *name,
                                   const char *text, MlirValue x) {
  MlirNamedAttribute a = kiln_ir_named(
      b->ctx, "text", mlirStringAttrGet(b->ctx, mlirStringRefCreateFromCString(text)));
  KilnOpSpec s = {
      .name = name, .loc = loc, .operands = &x, .n_operands = 1, .attrs = &a, .n_attrs = 1};
  return kiln_ir_create(b, &s);
}

MlirOperation kiln_ir_build_print(KilnIRBuilder *b, MlirLocation loc, const char *text,
                                  MlirValue x) {
  return build_text_op(b, loc, KILN_OP_NAME_PRINT, text, x);
}

MlirOperation kiln_ir_build_assert(KilnIRBuilder *b, MlirLocation loc, const char *text,
                                   MlirValue cond) {
  return build_text_op(b, loc, KILN_OP_NAME_ASSERT, text, cond);
}

MlirValue kiln_ir_build_reshape(KilnIRBuilder *b, MlirLocation loc, MlirValue x, MlirType result) {
  return build_simple(b, loc, KILN_OP_NAME_RESHAPE, &x, 1, result, NULL, 0);
}

MlirValue kiln_ir_build_resize(KilnIRBuilder *b, MlirLocation loc, MlirValue x, MlirType result) {
  return build_simple(b, loc, KILN_OP_NAME_RESIZE, &x, 1, result, NULL, 0);
}

MlirValue kiln_ir_build_flip(KilnIRBuilder *b, MlirLocation loc, MlirValue x, int axis) {
  MlirNamedAttribute a = kiln_ir_named(b->ctx, "axis", kiln_ir_attr_i32(b->ctx, axis));
  return build_simple(b, loc, KILN_OP_NAME_FLIP, &x, 1, mlirValueGetType(x), &a, 1);
}

MlirValue kiln_ir_build_scan(KilnIRBuilder *b, MlirLocation loc, const char *kind, int axis,
                             bool reverse, MlirValue x) {
  MlirNamedAttribute a[3] = {
      kiln_ir_named(b->ctx, "kind",
                    mlirStringAttrGet(b->ctx, mlirStringRefCreateFromCString(kind))),
      kiln_ir_named(b->ctx, "axis", kiln_ir_attr_i32(b->ctx, axis)),
      kiln_ir_named(b->ctx, KILN_IR_SCAN_REVERSE_ATTR, mlirUnitAttrGet(b->ctx))};
  return build_simple(b, loc, KILN_OP_NAME_SCAN, &x, 1, mlirValueGetType(x), a, reverse ? 3 : 2);
}

MlirValue kiln_ir_build_dot(KilnIRBuilder *b, MlirLocation loc, MlirValue a, MlirValue bm,
                            MlirValue acc) {
  MlirValue ops[3] = {a, bm, acc};
  return build_simple(b, loc, KILN_OP_NAME_DOT, ops, 3, mlirValueGetType(acc), NULL, 0);
}

bool kiln_ir_scan_is_reverse(MlirOperation scan) {
  return !mlirAttributeIsNull(mlirOperationGetAttributeByName(
      scan, mlirStringRefCreateFromCString(KILN_IR_SCAN_REVERSE_ATTR)));
}

bool kiln_ir_dot_is_tf32(MlirOperation dot) {
  return !mlirAttributeIsNull(
      mlirOperationGetAttributeByName(dot, mlirStringRefCreateFromCString(KILN_IR_DOT_TF32_ATTR)));
}

MlirValue kiln_ir_build_reduce(KilnIRBuilder *b, MlirLocation loc, KilnReduceKind kind, int axis,
                               MlirValue tile) {
  MlirType t = mlirValueGetType(tile);
  int rank = kiln_ir_rank(t);
  MlirType elem = kiln_ir_elem_type(t);
  if (kind == KILN_REDUCE_ARGMAX || kind == KILN_REDUCE_ARGMIN)
    elem = mlirIntegerTypeGet(b->ctx, 32);
  MlirType rt = elem;
  if (rank > 1) {
    int64_t shape[16];
    int r = 0;
    for (int i = 0; i < rank && r < 16; i++)
      if (i != axis) shape[r++] = kiln_ir_dim(t, i);
    if (r == rank) r--; /* bad axis: the verifier reports it */
    rt = kiln_ir_type_tensor(elem, shape, r);
  }
  MlirNamedAttribute at[2] = {
      kiln_ir_named(
          b->ctx, "kind",
          mlirStringAttrGet(b->ctx, mlirStringRefCreateFromCString(kiln_reduce_kind_name(kind)))),
      kiln_ir_named(b->ctx, "axis", kiln_ir_attr_i32(b->ctx, axis))};
  return build_simple(b, loc, KILN_OP_NAME_REDUCE, &tile, 1, rt, at, 2);
}

MlirValue kiln_ir_build_rand(KilnIRBuilder *b, MlirLocation loc, MlirValue seed,
                             MlirValue offsets) {
  MlirValue ops[2] = {seed, offsets};
  MlirType rt = kiln_ir_type_like(mlirValueGetType(offsets), mlirF32TypeGet(b->ctx));
  return build_simple(b, loc, KILN_OP_NAME_RAND, ops, 2, rt, NULL, 0);
}

MlirValue kiln_ir_build_randint(KilnIRBuilder *b, MlirLocation loc, MlirValue seed,
                                MlirValue offsets) {
  MlirValue ops[2] = {seed, offsets};
  MlirType rt = kiln_ir_type_like(mlirValueGetType(offsets), mlirIntegerTypeGet(b->ctx, 32));
  return build_simple(b, loc, KILN_OP_NAME_RAND, ops, 2, rt, NULL, 0);
}

/* ---------------------------------------------------------------- upstream helpers */

static MlirValue build_constant(KilnIRBuilder *b, MlirLocation loc, MlirType type,
                                MlirAttribute scalar) {
  MlirAttribute value = scalar;
  if (mlirTypeIsARankedTensor(type)) value = mlirDenseElementsAttrSplatGet(type, scalar);
  MlirNamedAttribute a = kiln_ir_named(b->ctx, "value", value);
  return build_simple(b, loc, "arith.constant", NULL, 0, type, &a, 1);
}

MlirValue kiln_ir_build_const_int(KilnIRBuilder *b, MlirLocation loc, MlirType type, int64_t v) {
  MlirType elem = kiln_ir_elem_type(type);
  if (mlirTypeIsAInteger(elem)) {
    unsigned w = mlirIntegerTypeGetWidth(elem);
    if (w < 64) { /* keep the value representable in w bits, sign-extended */
      uint64_t mask = (UINT64_C(1) << w) - 1, u = (uint64_t)v & mask;
      if (u >> (w - 1)) u |= ~mask;
      v = (int64_t)u;
    }
  }
  return build_constant(b, loc, type, mlirIntegerAttrGet(elem, v));
}

MlirValue kiln_ir_build_const_float(KilnIRBuilder *b, MlirLocation loc, MlirType type, double v) {
  MlirType elem = kiln_ir_elem_type(type);
  return build_constant(b, loc, type, mlirFloatAttrDoubleGet(b->ctx, elem, v));
}

MlirValue kiln_ir_build_const_index(KilnIRBuilder *b, MlirLocation loc, int64_t v) {
  MlirType t = mlirIndexTypeGet(b->ctx);
  return build_constant(b, loc, t, mlirIntegerAttrGet(t, v));
}

MlirValue kiln_ir_build_elementwise(KilnIRBuilder *b, MlirLocation loc, const char *op_name,
                                    const MlirValue *operands, size_t n, MlirType result_type) {
  return build_simple(b, loc, op_name, operands, n, result_type, NULL, 0);
}

static int pred_index(const char *const *names, int n, const char *pred) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], pred) == 0) return i;
  return -1;
}

static MlirValue build_cmp(KilnIRBuilder *b, MlirLocation loc, const char *name, int pred,
                           MlirValue lhs, MlirValue rhs) {
  MlirValue ops[2] = {lhs, rhs};
  MlirNamedAttribute a =
      kiln_ir_named(b->ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(b->ctx, 64), pred));
  MlirType rt = kiln_ir_type_like(mlirValueGetType(lhs), mlirIntegerTypeGet(b->ctx, 1));
  return build_simple(b, loc, name, ops, 2, rt, &a, 1);
}

MlirValue kiln_ir_build_cmpi(KilnIRBuilder *b, MlirLocation loc, const char *pred, MlirValue lhs,
                             MlirValue rhs) {
  static const char *const names[] = {"eq",  "ne",  "slt", "sle", "sgt",
                                      "sge", "ult", "ule", "ugt", "uge"};
  int p = pred_index(names, 10, pred);
  if (p < 0) return (MlirValue){NULL};
  return build_cmp(b, loc, "arith.cmpi", p, lhs, rhs);
}

MlirValue kiln_ir_build_cmpf(KilnIRBuilder *b, MlirLocation loc, const char *pred, MlirValue lhs,
                             MlirValue rhs) {
  static const char *const names[] = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                                      "ueq",   "ugt", "uge", "ult", "ule", "une", "uno", "true"};
  int p = pred_index(names, 16, pred);
  if (p < 0) return (MlirValue){NULL};
  return build_cmp(b, loc, "arith.cmpf", p, lhs, rhs);
}

MlirValue kiln_ir_build_select(KilnIRBuilder *b, MlirLocation loc, MlirValue cond, MlirValue a,
                               MlirValue bv) {
  MlirValue ops[3] = {cond, a, bv};
  return build_simple(b, loc, "arith.select", ops, 3, mlirValueGetType(a), NULL, 0);
}

MlirValue kiln_ir_build_cast(KilnIRBuilder *b, MlirLocation loc, const char *op_name, MlirValue v,
                             MlirType result_type) {
  return build_simple(b, loc, op_name, &v, 1, result_type, NULL, 0);
}

/* ---------------------------------------------------------------- control flow */

/* Region arrays are sized by the caller's counts (a kernel may carry any number of vars through
 * a loop), so they live on the heap; allocation failure is an environment failure we cannot
 * report from a builder, hence the assert. */
static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  KILN_ASSERT(p != NULL);
  return p;
}

static MlirRegion region_with_block(size_t n, const MlirType *types, MlirLocation loc,
                                    MlirBlock *out) {
  MlirLocation *locs = xcalloc(n, sizeof *locs);
  for (size_t i = 0; i < n; i++) locs[i] = loc;
  MlirRegion r = mlirRegionCreate();
  *out = mlirBlockCreate((intptr_t)n, types, locs);
  mlirRegionAppendOwnedBlock(r, *out);
  free(locs);
  return r;
}

KilnIRFor kiln_ir_build_for(KilnIRBuilder *b, MlirLocation loc, MlirValue lo, MlirValue hi,
                            MlirValue step, const MlirValue *inits, size_t n) {
  MlirValue *ops = xcalloc(n + 3, sizeof *ops);
  MlirType *arg_types = xcalloc(n + 1, sizeof *arg_types);
  ops[0] = lo, ops[1] = hi, ops[2] = step;
  arg_types[0] = mlirValueGetType(lo);
  for (size_t i = 0; i < n; i++) {
    ops[3 + i] = inits[i];
    arg_types[1 + i] = mlirValueGetType(inits[i]);
  }
  KilnIRFor f = {.n_iter = n};
  MlirRegion r = region_with_block(n + 1, arg_types, loc, &f.body);
  KilnOpSpec s = {.name = "scf.for",
                  .loc = loc,
                  .operands = ops,
                  .n_operands = n + 3,
                  .results = arg_types + 1,
                  .n_results = n,
                  .regions = &r,
                  .n_regions = 1};
  f.op = kiln_ir_create(b, &s);
  f.iv = mlirBlockGetArgument(f.body, 0);
  free(ops);
  free(arg_types);
  return f;
}

MlirValue kiln_ir_for_iter_arg(const KilnIRFor *f, size_t i) {
  KILN_ASSERT(i < f->n_iter);
  return mlirBlockGetArgument(f->body, (intptr_t)i + 1);
}

MlirValue kiln_ir_for_result(const KilnIRFor *f, size_t i) {
  KILN_ASSERT(i < f->n_iter);
  return mlirOperationGetResult(f->op, (intptr_t)i);
}

MlirOperation kiln_ir_build_yield(KilnIRBuilder *b, MlirLocation loc, const MlirValue *values,
                                  size_t n) {
  KilnOpSpec s = {.name = "scf.yield", .loc = loc, .operands = values, .n_operands = n};
  return kiln_ir_create(b, &s);
}

KilnIRIf kiln_ir_build_if(KilnIRBuilder *b, MlirLocation loc, MlirValue cond,
                          const MlirType *result_types, size_t n) {
  KilnIRIf f;
  MlirRegion r[2] = {region_with_block(0, NULL, loc, &f.then_block),
                     region_with_block(0, NULL, loc, &f.else_block)};
  KilnOpSpec s = {.name = "scf.if",
                  .loc = loc,
                  .operands = &cond,
                  .n_operands = 1,
                  .results = result_types,
                  .n_results = n,
                  .regions = r,
                  .n_regions = 2};
  f.op = kiln_ir_create(b, &s);
  return f;
}

MlirValue kiln_ir_if_result(const KilnIRIf *f, size_t i) {
  return mlirOperationGetResult(f->op, (intptr_t)i);
}

KilnIRFunc kiln_ir_build_kernel(KilnIRBuilder *b, MlirLocation loc, const char *name,
                                const MlirType *arg_types, size_t n, int num_warps,
                                int num_stages) {
  KilnIRFunc f;
  MlirRegion r = region_with_block(n, arg_types, loc, &f.entry);
  MlirType fty = mlirFunctionTypeGet(b->ctx, (intptr_t)n, arg_types, 0, NULL);
  MlirNamedAttribute a[5] = {
      kiln_ir_named(b->ctx, "sym_name",
                    mlirStringAttrGet(b->ctx, mlirStringRefCreateFromCString(name))),
      kiln_ir_named(b->ctx, "function_type", mlirTypeAttrGet(fty)),
      kiln_ir_named(b->ctx, "kiln.kernel", mlirUnitAttrGet(b->ctx)),
      kiln_ir_named(b->ctx, "kiln.num_warps", kiln_ir_attr_i32(b->ctx, num_warps)),
      kiln_ir_named(b->ctx, "kiln.num_stages", kiln_ir_attr_i32(b->ctx, num_stages))};
  KilnOpSpec s = {
      .name = "func.func", .loc = loc, .attrs = a, .n_attrs = 5, .regions = &r, .n_regions = 1};
  f.op = kiln_ir_create(b, &s);
  return f;
}

MlirValue kiln_ir_func_arg(const KilnIRFunc *f, size_t i) {
  return mlirBlockGetArgument(f->entry, (intptr_t)i);
}

MlirOperation kiln_ir_build_return(KilnIRBuilder *b, MlirLocation loc) {
  KilnOpSpec s = {.name = "func.return", .loc = loc};
  return kiln_ir_create(b, &s);
}
