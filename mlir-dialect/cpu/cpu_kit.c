/* cpu_kit.c - the CPU lowering's toolkit (convert-kiln-to-cpu): what every op's lowering calls,
 * apart from the dispatcher (cpu_lower.c) and the kiln op families (cpu_ops.c), so that the
 * lowering files depend one way: cpu_lower.c -> cpu_ops.c -> cpu_kit.c.
 *
 * A map records what each old SSA value became (CpuVal): scalars and splat tiles stay scalars;
 * every other tile gets a static memref alloca'd in the entry block (so loops do not grow the
 * stack) and is read and written element by element in loop nests. */
#include "cpu_kit.h"

/* ---------------------------------------------------------------- value map */

/* Values are allocated one by one, so a CpuVal* handed out stays valid while the map grows
 * (lowerings hold one across later inserts). */
static CpuVal *map_put(Cpu *c, MlirValue old) {
  CpuVal *v = kiln_ptr_map_get(&c->map, old.ptr);
  if (!v) {
    v = malloc(sizeof *v);
    KILN_ASSERT(v != NULL);
    kiln_ptr_map_put(&c->map, old.ptr, v);
  }
  *v = (CpuVal){.old = old};
  return v;
}

void kiln_cpu_map_free(Cpu *c) {
  for (size_t i = 0; i < c->map.cap; i++) /* an open-addressing table: every slot */
    free(c->map.vals[i]);
  kiln_ptr_map_free(&c->map);
}

CpuVal *kiln_cpu_get(Cpu *c, MlirValue old) {
  CpuVal *v = kiln_ptr_map_get(&c->map, old.ptr);
  KILN_ASSERT(v != NULL); /* ops are lowered in dominance order */
  return v;
}

void kiln_cpu_set_scalar(Cpu *c, MlirValue old, MlirValue v) { map_put(c, old)->scalar = v; }
void kiln_cpu_set_buf(Cpu *c, MlirValue old, MlirValue buf) { map_put(c, old)->buf = buf; }

/* ---------------------------------------------------------------- small builders */

MlirType kiln_cpu_scalar_type(MlirType t) {
  MlirType e = kiln_ir_elem_type(t);
  if (kiln_ir_type_is_ptr(e)) return mlirIntegerTypeGet(mlirTypeGetContext(t), 64);
  return e;
}

MlirValue kiln_cpu_op_attrs(Cpu *c, const char *name, const MlirValue *ops, size_t n, MlirType rt,
                            const MlirNamedAttribute *attrs, size_t n_attrs) {
  size_t nres = mlirTypeIsNull(rt) ? 0 : 1;
  MlirOperation op = kiln_ir_make(&c->b, c->loc, name, ops, n, &rt, nres, attrs, n_attrs);
  return nres ? mlirOperationGetResult(op, 0) : (MlirValue){NULL};
}

MlirValue kiln_cpu_op(Cpu *c, const char *name, const MlirValue *ops, size_t n, MlirType rt) {
  return kiln_cpu_op_attrs(c, name, ops, n, rt, NULL, 0);
}

MlirValue kiln_cpu_cidx(Cpu *c, int64_t v) { return kiln_ir_build_const_index(&c->b, c->loc, v); }

MlirValue kiln_cpu_int_const(Cpu *c, MlirType t, int64_t v) {
  return kiln_ir_build_const_int(&c->b, c->loc, t, v);
}

static MlirType memref_type(MlirType tile) {
  int rank = kiln_ir_rank(tile);
  int64_t shape[16];
  for (int i = 0; i < rank; i++) shape[i] = kiln_ir_dim(tile, i);
  return mlirMemRefTypeContiguousGet(kiln_cpu_scalar_type(tile), rank, shape,
                                     mlirAttributeGetNull());
}

MlirValue kiln_cpu_alloc(Cpu *c, MlirType tile) {
  KilnIRBuilder at = c->b;
  kiln_ir_builder_set_before(&at, c->alloca_at);
  int32_t seg[2] = {0, 0};
  MlirNamedAttribute a[2] = {
      kiln_ir_named(c->ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(c->ctx, 2, seg)),
      kiln_ir_named(c->ctx, "alignment", mlirIntegerAttrGet(mlirIntegerTypeGet(c->ctx, 64), 64))};
  MlirType mt = memref_type(tile);
  KilnOpSpec s = {.name = "memref.alloca",
                  .loc = c->loc,
                  .results = &mt,
                  .n_results = 1,
                  .attrs = a,
                  .n_attrs = 2};
  return mlirOperationGetResult(kiln_ir_create(&at, &s), 0);
}

MlirValue kiln_cpu_load_elem(Cpu *c, MlirValue buf, const MlirValue *idx, int rank) {
  MlirValue ops[17];
  ops[0] = buf;
  for (int i = 0; i < rank; i++) ops[1 + i] = idx[i];
  return kiln_cpu_op(c, "memref.load", ops, (size_t)rank + 1,
                     mlirShapedTypeGetElementType(mlirValueGetType(buf)));
}

void kiln_cpu_store_elem(Cpu *c, MlirValue buf, MlirValue v, const MlirValue *idx, int rank) {
  MlirValue ops[18];
  ops[0] = v;
  ops[1] = buf;
  for (int i = 0; i < rank; i++) ops[2 + i] = idx[i];
  kiln_cpu_op(c, "memref.store", ops, (size_t)rank + 2, (MlirType){NULL});
}

MlirValue kiln_cpu_elem(Cpu *c, CpuVal *v, const MlirValue *idx) {
  if (!mlirValueIsNull(v->scalar)) return v->scalar;
  return kiln_cpu_load_elem(c, v->buf, idx, kiln_ir_rank(mlirValueGetType(v->buf)));
}

/* ---------------------------------------------------------------- loop nests */

/* An outer loop of a nest is never fully unrolled by LLVM.  LLVM unrolls the innermost loop of a
 * tile's nest (a row of up to 64 elements) and then, when the tile is short, the loop around it
 * too: a 16x64 tile became 1024 straight-line element copies per op (attn_fwd at BN=16: 60 such
 * nests), which took LLVM's dead-store elimination and code generation 1.1 s where BN=32, whose
 * outer loops stay loops, took 0.3 s; the unrolled rows already give straight-line work.  The
 * mark (an llvm.loop annotation) rides from scf.for to the branch that closes the loop. */
static void no_full_unroll(MlirOperation loop) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirAttribute a = mlirAttributeParseGet(
      ctx, mlirStringRefCreateFromCString("#llvm.loop_annotation<unroll = <disable = true>>"));
  KILN_ASSERT(!mlirAttributeIsNull(a));
  mlirOperationSetAttributeByName(loop, mlirStringRefCreateFromCString("loop_annotation"), a);
}

static void nest_rec(Cpu *c, const int64_t *shape, int rank, int d, MlirValue *idx, CpuNestFn fn,
                     void *user) {
  if (d == rank) {
    fn(c, idx, user);
    return;
  }
  KilnIRFor f = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, shape[d]),
                                  kiln_cpu_cidx(c, 1), NULL, 0);
  if (d < rank - 1) no_full_unroll(f.op);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.body);
  idx[d] = f.iv;
  nest_rec(c, shape, rank, d + 1, idx, fn, user);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  c->b = saved;
}

void kiln_cpu_nest(Cpu *c, const int64_t *shape, int rank, CpuNestFn fn, void *user) {
  MlirValue idx[16] = {{NULL}};
  KILN_ASSERT(rank <= 16);
  nest_rec(c, shape, rank, 0, idx, fn, user);
}

void kiln_cpu_shape(MlirType t, int64_t *shape, int *rank) {
  *rank = kiln_ir_rank(t);
  for (int i = 0; i < *rank; i++) shape[i] = kiln_ir_dim(t, i);
}

typedef struct FillCtx {
  CpuVal *src;
  MlirValue dst;
  int rank;
} FillCtx;

static void fill_body(Cpu *c, const MlirValue *idx, void *user) {
  FillCtx *f = user;
  kiln_cpu_store_elem(c, f->dst, kiln_cpu_elem(c, f->src, idx), idx, f->rank);
}

/* Copies a lowered tile (scalar/splat or buffer) into dst. */
void kiln_cpu_copy(Cpu *c, CpuVal *src, MlirValue dst) {
  if (!mlirValueIsNull(src->buf) && src->buf.ptr == dst.ptr) return;
  MlirType t = mlirValueGetType(dst);
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(t, shape, &rank);
  FillCtx f = {src, dst, rank};
  kiln_cpu_nest(c, shape, rank, fill_body, &f);
}

MlirValue kiln_cpu_buf(Cpu *c, CpuVal *v, MlirType tile) {
  if (!mlirValueIsNull(v->buf)) return v->buf;
  MlirValue buf = kiln_cpu_alloc(c, tile);
  kiln_cpu_copy(c, v, buf);
  v->buf = buf;
  v->scalar = (MlirValue){NULL};
  return buf;
}

/* ---------------------------------------------------------------- per element */

typedef struct MapCtx {
  MlirOperation op;
  CpuScalarFn fn;
  void *user;
  MlirValue dst;
  int rank;
} MapCtx;

static void map_body(Cpu *c, const MlirValue *idx, void *user) {
  MapCtx *m = user;
  MlirValue elems[8];
  intptr_t n = mlirOperationGetNumOperands(m->op);
  KILN_ASSERT(n <= 8);
  for (intptr_t i = 0; i < n; i++)
    elems[i] = kiln_cpu_elem(c, kiln_cpu_get(c, mlirOperationGetOperand(m->op, i)), idx);
  MlirValue r = m->fn(c, elems, m->user);
  if (!mlirValueIsNull(m->dst)) kiln_cpu_store_elem(c, m->dst, r, idx, m->rank);
}

void kiln_cpu_map(Cpu *c, MlirOperation op, CpuScalarFn fn, void *user, bool splat_ok) {
  bool all_scalar = true;
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < n; i++)
    all_scalar &= !mlirValueIsNull(kiln_cpu_get(c, mlirOperationGetOperand(op, i))->scalar);
  bool has_result = mlirOperationGetNumResults(op) > 0;
  MlirValue res = has_result ? mlirOperationGetResult(op, 0) : (MlirValue){NULL};
  /* the shape comes from the result, or from the first operand for ops without one */
  MlirType shape_t =
      has_result ? mlirValueGetType(res) : mlirValueGetType(mlirOperationGetOperand(op, 0));
  if (!kiln_ir_type_is_tile(shape_t) || (all_scalar && splat_ok)) {
    MlirValue elems[8];
    KILN_ASSERT(n <= 8);
    for (intptr_t i = 0; i < n; i++)
      elems[i] = kiln_cpu_get(c, mlirOperationGetOperand(op, i))->scalar;
    MlirValue r = fn(c, elems, user);
    if (has_result) kiln_cpu_set_scalar(c, res, r);
    return;
  }
  MapCtx m = {op, fn, user, {NULL}, kiln_ir_rank(shape_t)};
  if (has_result) {
    m.dst = kiln_cpu_alloc(c, shape_t);
    kiln_cpu_set_buf(c, res, m.dst);
  }
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(shape_t, shape, &rank);
  kiln_cpu_nest(c, shape, rank, map_body, &m);
}
