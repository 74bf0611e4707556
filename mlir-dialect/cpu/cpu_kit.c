/* cpu_kit.c - the CPU lowering's toolkit (convert-kiln-to-cpu): what every op's lowering calls,
 * apart from the dispatcher (cpu_lower.c) and the kiln op families (cpu_ops.c), so that the
 * lowering files depend one way: cpu_lower.c -> cpu_ops.c -> cpu_kit.c.
 *
 * A map records what each old SSA value became (CpuVal): scalars and splat tiles stay scalars;
 * other tiles are deferred (see "Deferred tiles" below) or get a static memref alloca'd in the
 * entry block (so loops do not grow the stack), read and written element by element in loop
 * nests. */
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

static bool is_i1(MlirType t) { return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 1; }

/* A tile's buffer.  Bools are kept as bytes, 0 or 1: a buffer of i1 is bytes in memory but a
 * vector of i1 is bits, so LLVM could neither store a vector compare's lanes at once (it
 * extracted each) nor read a mask back as a vector (loads and stores of contiguous rows,
 * cpu_ops.c); bytes are one vector store and one vector load compared with zero.  Element
 * accesses convert (kiln_cpu_store_elem, kiln_cpu_elem). */
static MlirType memref_type(MlirType tile) {
  int rank = kiln_ir_rank(tile);
  int64_t shape[16];
  for (int i = 0; i < rank; i++) shape[i] = kiln_ir_dim(tile, i);
  MlirType elem = kiln_cpu_scalar_type(tile);
  if (is_i1(elem)) elem = mlirIntegerTypeGet(mlirTypeGetContext(tile), 8);
  return mlirMemRefTypeContiguousGet(elem, rank, shape, mlirAttributeGetNull());
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
  if (is_i1(mlirValueGetType(v))) /* a bool's buffer holds bytes (memref_type) */
    v = kiln_ir_build_cast(&c->b, c->loc, "arith.extui", v, mlirIntegerTypeGet(c->ctx, 8));
  ops[0] = v;
  ops[1] = buf;
  for (int i = 0; i < rank; i++) ops[2 + i] = idx[i];
  kiln_cpu_op(c, "memref.store", ops, (size_t)rank + 2, (MlirType){NULL});
}

bool kiln_cpu_is_deferred(const CpuVal *v) {
  return mlirValueIsNull(v->scalar) && mlirValueIsNull(v->buf);
}

MlirValue kiln_cpu_elem(Cpu *c, CpuVal *v, const MlirValue *idx) {
  if (!mlirValueIsNull(v->scalar)) return v->scalar;
  if (!mlirValueIsNull(v->buf)) {
    MlirValue e = kiln_cpu_load_elem(c, v->buf, idx, kiln_ir_rank(mlirValueGetType(v->buf)));
    if (!mlirValueIsNull(v->old) && is_i1(kiln_ir_elem_type(mlirValueGetType(v->old))))
      e = kiln_ir_build_cmpi(&c->b, c->loc, "ne", e, kiln_cpu_int_const(c, mlirValueGetType(e), 0));
    return e;
  }
  return v->elem(c, v, idx);
}

/* ---------------------------------------------------------------- loop nests */

/* An outer loop of a nest is never fully unrolled by LLVM.  LLVM unrolls the innermost loop of a
 * tile's nest (a row of up to 64 elements) and then, when the tile is short, the loop around it
 * too: a 16x64 tile became 1024 straight-line element copies per op (attn_fwd at BN=16: 60 such
 * nests), which took LLVM's dead-store elimination and code generation 1.1 s where BN=32, whose
 * outer loops stay loops, took 0.3 s; the unrolled rows already give straight-line work.  The
 * mark (an llvm.loop annotation) rides from scf.for to the branch that closes the loop. */
void kiln_cpu_no_full_unroll(MlirOperation loop) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirAttribute a = mlirAttributeParseGet(
      ctx, mlirStringRefCreateFromCString("#llvm.loop_annotation<unroll = <disable = true>>"));
  KILN_ASSERT(!mlirAttributeIsNull(a));
  mlirOperationSetAttributeByName(loop, mlirStringRefCreateFromCString("loop_annotation"), a);
}

/* The innermost loop of a memory op's nest (loads, stores, atomics: an scf.if per element
 * around an access through an address computed as an integer) is not vectorized.  LLVM cannot
 * see such addresses as consecutive, so a vectorized nest gathers and scatters: on an AVX-512
 * host (znver4, `--cpu native`) the f32 gemm's tile loads made it 2 to 3 times slower than the
 * same nest element by element (44-79 ms against 22-26 at 256x3072x768, 64x128x32 tiles, on a
 * loaded 2-core share); as AVX2 code LLVM already declines the gathers (no change). */
static void no_vectorize(MlirOperation loop) {
  MlirContext ctx = mlirOperationGetContext(loop);
  MlirAttribute a = mlirAttributeParseGet(
      ctx, mlirStringRefCreateFromCString("#llvm.loop_annotation<vectorize = <disable = true>>"));
  KILN_ASSERT(!mlirAttributeIsNull(a));
  mlirOperationSetAttributeByName(loop, mlirStringRefCreateFromCString("loop_annotation"), a);
}

static void nest_rec(Cpu *c, const int64_t *shape, int rank, int d, MlirValue *idx, CpuNestFn fn,
                     void *user, bool scalar_inner) {
  if (d == rank) {
    fn(c, idx, user);
    return;
  }
  KilnIRFor f = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, shape[d]),
                                  kiln_cpu_cidx(c, 1), NULL, 0);
  if (d < rank - 1)
    kiln_cpu_no_full_unroll(f.op);
  else if (scalar_inner)
    no_vectorize(f.op);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.body);
  idx[d] = f.iv;
  nest_rec(c, shape, rank, d + 1, idx, fn, user, scalar_inner);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  c->b = saved;
}

void kiln_cpu_nest(Cpu *c, const int64_t *shape, int rank, CpuNestFn fn, void *user) {
  MlirValue idx[16] = {{NULL}};
  KILN_ASSERT(rank <= 16);
  nest_rec(c, shape, rank, 0, idx, fn, user, false);
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

/* ---------------------------------------------------------------- deferred tiles */

/* Why.  A loop nest per tile op made a bitonic sort of 256 lanes over a thousand sequential loops
 * in one function, and LLVM's loop passes take time in the square of that number.  So index
 * remaps (broadcast, expand_dims, reshape, flip, trans, range) and pure elementwise ops lower to
 * no loop at all: their CpuVal is deferred and computes element idx inside whichever loop nest
 * consumes it (kiln_cpu_elem), so a chain of them becomes one nest at its consumer.
 *
 * When a deferred tile is materialized.  Deferred views only re-compute indices, so they stay
 * deferred whatever reads them.  A tile that costs arithmetic is materialized where it is
 * defined when it is read twice or more (re-computing it per read could grow without bound),
 * when its reader sits in another block (a loop body would re-compute it per iteration), or when
 * its expression holds more than MAX_DEFERRED_COST ops.  So a tile that is still deferred and
 * costs arithmetic has exactly one reader, later in its own block, and that reader may
 * materialize it in place (kiln_cpu_buf: broadcast, resize, which read elements repeatedly).
 *
 * Where arithmetic is not fused.  LLVM vectorizes a nest of pure arithmetic over buffers, but not
 * one with an scf.if per element (loads, stores, atomics) or a running value (reductions, scans):
 * deferred into those, the arithmetic ran one element at a time (the BERT trainer's AdamW step
 * took twice as long).  So those consumers compute operands that cost arithmetic into buffers
 * first (kiln_cpu_compute_operands), one fused nest of their own; views still fuse into them.
 * Loads and stores of contiguous rows (cpu_ops.c) read their operands from buffers as vectors,
 * and compute a deferred pointer tile only at each vector's first element.
 *
 * Why this keeps the order of memory effects.  A deferred tile reads only scalars and the
 * kernel's private buffers, never memory (loads and atomics are loop nests, kiln_cpu_map), and
 * a buffer is written only where its value is defined, except a carried buffer of an scf.for,
 * which the loop's yield overwrites; a yield therefore reads deferred tiles through a fresh
 * buffer (kiln_cpu_stored) before it copies anything into the carried ones. */
enum { MAX_DEFERRED_COST = 24 };

/* Whether old is read by exactly one operand of one op, in old's own block. */
static bool read_once_in_block(MlirValue old) {
  MlirOpOperand u = mlirValueGetFirstUse(old);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u))) return false;
  MlirBlock def = mlirOperationGetBlock(mlirOpResultGetOwner(old));
  return mlirOperationGetBlock(mlirOpOperandGetOwner(u)).ptr == def.ptr;
}

static bool is_unused(MlirValue old) { return mlirOpOperandIsNull(mlirValueGetFirstUse(old)); }

/* Copies the lowered tile v into a fresh buffer of its type. */
static MlirValue copy_to_new_buf(Cpu *c, CpuVal *v) {
  MlirValue buf = kiln_cpu_alloc(c, mlirValueGetType(v->old));
  kiln_cpu_copy(c, v, buf);
  return buf;
}

MlirValue kiln_cpu_buf(Cpu *c, CpuVal *v) {
  if (!mlirValueIsNull(v->buf)) return v->buf;
  v->buf = copy_to_new_buf(c, v);
  v->scalar = (MlirValue){NULL};
  v->cost = 0;
  return v->buf;
}

CpuVal kiln_cpu_stored(Cpu *c, CpuVal *v) {
  if (!kiln_cpu_is_deferred(v)) return *v;
  return (CpuVal){.old = v->old, .buf = copy_to_new_buf(c, v)};
}

void kiln_cpu_compute_operands(Cpu *c, MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
    CpuVal *v = kiln_cpu_get(c, mlirOperationGetOperand(op, i));
    if (kiln_cpu_is_deferred(v) && v->cost > 0) kiln_cpu_buf(c, v);
  }
}

static CpuVal *defer_put(Cpu *c, MlirValue old, MlirOperation op, CpuElemFn elem, int cost) {
  CpuVal *v = map_put(c, old);
  v->op = op;
  v->elem = elem;
  v->cost = cost;
  return v;
}

/* Materializes a deferred v now when the file comment says so. */
static void settle(Cpu *c, CpuVal *v) {
  bool now = v->cost > MAX_DEFERRED_COST ||
             (v->cost > 0 && !is_unused(v->old) && !read_once_in_block(v->old));
  if (now) kiln_cpu_buf(c, v);
}

CpuVal *kiln_cpu_defer(Cpu *c, MlirValue old, MlirOperation op, CpuElemFn elem, int cost) {
  CpuVal *v = defer_put(c, old, op, elem, cost);
  settle(c, v);
  return v;
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

/* When op's result is not a tile, or every operand is a scalar/splat and splat_ok: runs fn once
 * on the scalars (and records the result); returns whether it did. */
static bool map_scalars(Cpu *c, MlirOperation op, int result, CpuScalarFn fn, void *user,
                        bool splat_ok) {
  bool all_scalar = true;
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < n; i++)
    all_scalar &= !mlirValueIsNull(kiln_cpu_get(c, mlirOperationGetOperand(op, i))->scalar);
  bool has_result = mlirOperationGetNumResults(op) > 0;
  MlirValue res = has_result ? mlirOperationGetResult(op, result) : (MlirValue){NULL};
  /* the shape comes from the result, or from the first operand for ops without one */
  MlirType shape_t =
      has_result ? mlirValueGetType(res) : mlirValueGetType(mlirOperationGetOperand(op, 0));
  if (kiln_ir_type_is_tile(shape_t) && !(all_scalar && splat_ok)) return false;
  MlirValue elems[8];
  KILN_ASSERT(n <= 8);
  for (intptr_t i = 0; i < n; i++)
    elems[i] = kiln_cpu_get(c, mlirOperationGetOperand(op, i))->scalar;
  MlirValue r = fn(c, elems, user);
  if (has_result) kiln_cpu_set_scalar(c, res, r);
  return true;
}

void kiln_cpu_map(Cpu *c, MlirOperation op, CpuScalarFn fn, void *user, bool splat_ok) {
  if (map_scalars(c, op, 0, fn, user, splat_ok)) return;
  bool has_result = mlirOperationGetNumResults(op) > 0;
  MlirValue res = has_result ? mlirOperationGetResult(op, 0) : (MlirValue){NULL};
  MlirType shape_t =
      has_result ? mlirValueGetType(res) : mlirValueGetType(mlirOperationGetOperand(op, 0));
  MapCtx m = {op, fn, user, {NULL}, kiln_ir_rank(shape_t)};
  if (has_result) {
    m.dst = kiln_cpu_alloc(c, shape_t);
    kiln_cpu_set_buf(c, res, m.dst);
  }
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(shape_t, shape, &rank);
  MlirValue idx[16] = {{NULL}};
  KILN_ASSERT(rank <= 16);
  nest_rec(c, shape, rank, 0, idx, map_body, &m, true);
}

/* Element idx of a deferred elementwise tile: fn on its operands' elements. */
static MlirValue map_elem(Cpu *c, CpuVal *v, const MlirValue *idx) {
  MlirValue elems[8];
  intptr_t n = mlirOperationGetNumOperands(v->op);
  KILN_ASSERT(n <= 8);
  for (intptr_t i = 0; i < n; i++)
    elems[i] = kiln_cpu_elem(c, kiln_cpu_get(c, mlirOperationGetOperand(v->op, i)), idx);
  return v->fn(c, elems, v->user);
}

void kiln_cpu_map_pure(Cpu *c, MlirOperation op, CpuScalarFn fn, const void *user,
                       size_t user_size) {
  KILN_ASSERT(mlirOperationGetNumResults(op) == 1);
  kiln_cpu_map_pure_result(c, op, 0, fn, user, user_size);
}

void kiln_cpu_map_pure_result(Cpu *c, MlirOperation op, int result, CpuScalarFn fn,
                              const void *user, size_t user_size) {
  CpuVal tmp;
  KILN_ASSERT(user_size <= sizeof tmp.user_data && result < mlirOperationGetNumResults(op));
  memcpy(tmp.user_data, user, user_size);
  if (map_scalars(c, op, result, fn, tmp.user_data, true)) return;
  int cost = 1;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++)
    cost += kiln_cpu_get(c, mlirOperationGetOperand(op, i))->cost;
  CpuVal *v = defer_put(c, mlirOperationGetResult(op, result), op, map_elem, cost);
  v->fn = fn;
  memcpy(v->user_data, user, user_size);
  v->user = v->user_data;
  settle(c, v); /* after fn and user: materializing calls them */
}
