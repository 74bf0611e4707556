/* cpu_ops.c - the kiln op families on the CPU: grid queries, range and shape ops, pointer
 * arithmetic and memory (load/store/atomics through llvm.inttoptr), dot, reductions and the
 * Philox random numbers.
 *
 * Reductions: sum starts from zero; max/min start from element 0 and use arith.maximumf /
 * minimumf (a NaN anywhere makes the result NaN) or maxsi/minsi; argmax/argmin compare with a
 * strict ordered `>` / `<`, so ties keep the first index and NaN elements never replace the
 * current best (a NaN at index 0 stays the answer only if no later element compares). */
#include "cpu_lower.h"

#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MlirType i32_t(Cpu *c) { return mlirIntegerTypeGet(c->ctx, 32); }
static MlirType i64_t(Cpu *c) { return mlirIntegerTypeGet(c->ctx, 64); }
static MlirType llvm_ptr(Cpu *c) {
  return mlirTypeParseGet(c->ctx, mlirStringRefCreateFromCString("!llvm.ptr"));
}

static MlirValue bin(Cpu *c, const char *name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return kiln_cpu_op(c, name, ops, 2, mlirValueGetType(a));
}

static MlirValue result_of(MlirOperation op) { return mlirOperationGetResult(op, 0); }
static MlirValue operand(MlirOperation op, int i) { return mlirOperationGetOperand(op, i); }

static int64_t attr_int(MlirOperation op, const char *name) {
  int64_t v = 0;
  KILN_ASSERT(kiln_ir_get_int_attr(op, name, &v)); /* the verifier ran first */
  return v;
}

/* ---------------------------------------------------------------- range and shape ops */

/* Element idx of a deferred range: start + idx. */
static MlirValue range_elem(Cpu *c, CpuVal *v, const MlirValue *idx) {
  MlirValue i = kiln_ir_build_cast(&c->b, c->loc, "arith.index_cast", idx[0], i32_t(c));
  return bin(c, "arith.addi", i, kiln_cpu_int_const(c, i32_t(c), attr_int(v->op, "start")));
}

/* broadcast / expand_dims / trans / flip / resize / reshape: the source's index sidx that the
 * result's element idx reads (resize: idx clamped into the source's shape). */
static void source_index(Cpu *c, MlirOperation op, const MlirValue *idx, MlirValue *sidx) {
  KilnOpId id = kiln_ir_op_id(op);
  MlirType st = mlirValueGetType(operand(op, 0));
  int srank = kiln_ir_rank(st);
  if (id == KILN_OP_BROADCAST) {
    for (int i = 0; i < srank; i++)
      sidx[i] = kiln_ir_dim(st, i) == 1 ? kiln_cpu_cidx(c, 0) : idx[i];
  } else if (id == KILN_OP_EXPAND_DIMS) {
    int64_t axis = attr_int(op, "axis");
    for (int i = 0, r = 0; i < srank + 1; i++)
      if (i != axis) sidx[r++] = idx[i];
  } else if (id == KILN_OP_RESHAPE) {
    /* the row-major position of idx in the result, as an index into the source's dims */
    MlirType rt = mlirValueGetType(result_of(op));
    MlirValue lin = kiln_cpu_cidx(c, 0);
    for (int i = 0; i < kiln_ir_rank(rt); i++)
      lin = bin(c, "arith.addi", bin(c, "arith.muli", lin, kiln_cpu_cidx(c, kiln_ir_dim(rt, i))),
                idx[i]);
    for (int i = srank - 1; i >= 0; i--) {
      MlirValue d = kiln_cpu_cidx(c, kiln_ir_dim(st, i));
      sidx[i] = bin(c, "arith.remui", lin, d);
      lin = bin(c, "arith.divui", lin, d);
    }
  } else if (id == KILN_OP_RESIZE) {
    for (int i = 0; i < srank; i++) {
      MlirValue last = kiln_cpu_cidx(c, kiln_ir_dim(st, i) - 1);
      sidx[i] = bin(c, "arith.minui", idx[i], last);
    }
  } else if (id == KILN_OP_FLIP) {
    int axis = (int)attr_int(op, "axis");
    for (int i = 0; i < srank; i++) sidx[i] = idx[i];
    MlirValue last = kiln_cpu_cidx(c, kiln_ir_dim(st, axis) - 1);
    sidx[axis] = bin(c, "arith.subi", last, idx[axis]);
  } else {
    for (int i = 0; i < srank; i++) sidx[i] = idx[srank - 1 - i];
  }
}

/* Element idx of a deferred index remap: the source's element at the mapped index. */
static MlirValue view_elem(Cpu *c, CpuVal *v, const MlirValue *idx) {
  MlirValue sidx[16];
  source_index(c, v->op, idx, sidx);
  return kiln_cpu_elem(c, kiln_cpu_get(c, operand(v->op, 0)), sidx);
}

/* Whether the index remap reads some source elements more than once. */
static bool repeats_source(MlirOperation op, KilnOpId id) {
  return (id == KILN_OP_BROADCAST || id == KILN_OP_RESIZE) &&
         kiln_ir_type_numel(mlirValueGetType(result_of(op))) >
             kiln_ir_type_numel(mlirValueGetType(operand(op, 0)));
}

/* range and the index remaps are deferred: no loop until something reads them.  A remap that
 * repeats elements of a source that costs arithmetic materializes the source first, so that
 * each of its elements is computed once. */
static void lower_view(Cpu *c, MlirOperation op, KilnOpId id) {
  MlirValue res = result_of(op);
  if (id == KILN_OP_RANGE) {
    kiln_cpu_defer(c, res, op, range_elem, 0);
    return;
  }
  CpuVal *src = kiln_cpu_get(c, operand(op, 0));
  if (!mlirValueIsNull(src->scalar)) { /* a splat stays a splat */
    kiln_cpu_set_scalar(c, res, src->scalar);
    return;
  }
  if (src->cost > 0 && repeats_source(op, id)) kiln_cpu_buf(c, src);
  kiln_cpu_defer(c, res, op, view_elem, src->cost);
}

/* ---------------------------------------------------------------- pointers and memory */

static MlirValue addptr_fn(Cpu *c, const MlirValue *e, void *user) {
  int64_t size = *(int64_t *)user;
  MlirValue off = e[1];
  if (mlirIntegerTypeGetWidth(mlirValueGetType(off)) < 64)
    off = kiln_ir_build_cast(&c->b, c->loc, "arith.extsi", off, i64_t(c));
  off = bin(c, "arith.muli", off, kiln_cpu_int_const(c, i64_t(c), size));
  return bin(c, "arith.addi", e[0], off);
}

static MlirValue to_ptr(Cpu *c, MlirValue addr) {
  return kiln_cpu_op(c, "llvm.inttoptr", &addr, 1, llvm_ptr(c));
}

typedef struct MemCtx {
  MlirType elem; /* the lowered value type */
  int64_t bin_op;
} MemCtx;

/* An i1 lives in memory as a byte, 0 or 1 (the GPU targets agree: gpu/lower_memory.c): a store
 * writes the bool zero-extended, a load tests the byte (`!= 0`), so any nonzero byte is true. */
static bool is_bool(MlirType t) { return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 1; }

static MlirValue load_fn(Cpu *c, const MlirValue *e, void *user) {
  MemCtx *m = user;
  KilnIRIf f = kiln_ir_build_if(&c->b, c->loc, e[1], &m->elem, 1);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.then_block);
  MlirValue p = to_ptr(c, e[0]);
  MlirValue v;
  if (is_bool(m->elem)) {
    MlirType i8 = mlirIntegerTypeGet(c->ctx, 8);
    MlirValue byte = kiln_cpu_op(c, "llvm.load", &p, 1, i8);
    v = kiln_ir_build_cmpi(&c->b, c->loc, "ne", byte, kiln_cpu_int_const(c, i8, 0));
  } else {
    v = kiln_cpu_op(c, "llvm.load", &p, 1, m->elem);
  }
  kiln_ir_build_yield(&c->b, c->loc, &v, 1);
  kiln_ir_builder_set_end(&c->b, f.else_block);
  kiln_ir_build_yield(&c->b, c->loc, &e[2], 1);
  c->b = saved;
  return kiln_ir_if_result(&f, 0);
}

static MlirValue store_fn(Cpu *c, const MlirValue *e, void *user) {
  (void)user;
  KilnIRIf f = kiln_ir_build_if(&c->b, c->loc, e[2], NULL, 0);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.then_block);
  MlirValue ops[2] = {e[1], to_ptr(c, e[0])};
  if (is_bool(mlirValueGetType(e[1])))
    ops[0] = kiln_ir_build_cast(&c->b, c->loc, "arith.extui", e[1], mlirIntegerTypeGet(c->ctx, 8));
  kiln_cpu_op(c, "llvm.store", ops, 2, (MlirType){NULL});
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  kiln_ir_builder_set_end(&c->b, f.else_block);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  c->b = saved;
  return (MlirValue){NULL};
}

/* Masked-off lanes of an atomic return zero. */
static MlirValue atomic_fn(Cpu *c, const MlirValue *e, void *user) {
  MemCtx *m = user;
  KilnIRIf f = kiln_ir_build_if(&c->b, c->loc, e[2], &m->elem, 1);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.then_block);
  MlirValue ops[2] = {to_ptr(c, e[0]), e[1]};
  MlirType i64 = i64_t(c);
  MlirNamedAttribute a[2] = {
      kiln_ir_named(c->ctx, "bin_op", mlirIntegerAttrGet(i64, m->bin_op)),
      kiln_ir_named(c->ctx, "ordering", mlirIntegerAttrGet(i64, 2 /* monotonic */))};
  MlirValue old = kiln_cpu_op_attrs(c, "llvm.atomicrmw", ops, 2, m->elem, a, 2);
  kiln_ir_build_yield(&c->b, c->loc, &old, 1);
  kiln_ir_builder_set_end(&c->b, f.else_block);
  MlirValue zero = mlirTypeIsAFloat(m->elem) ? kiln_ir_build_const_float(&c->b, c->loc, m->elem, 0)
                                             : kiln_cpu_int_const(c, m->elem, 0);
  kiln_ir_build_yield(&c->b, c->loc, &zero, 1);
  c->b = saved;
  return kiln_ir_if_result(&f, 0);
}

/* atomic_cas per element (ptr, cmp, value, mask): llvm.cmpxchg, acq_rel where it succeeds and
 * monotonic where it fails (a failed compare is only a read), its old value out of the
 * {old, success} pair; masked-off lanes return zero. */
static MlirValue cas_fn(Cpu *c, const MlirValue *e, void *user) {
  MemCtx *m = user;
  KilnIRIf f = kiln_ir_build_if(&c->b, c->loc, e[3], &m->elem, 1);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.then_block);
  /* a float cell is compared and swapped by its bits (cmpxchg takes integers) */
  bool fl = mlirTypeIsAFloat(m->elem);
  MlirType bits = fl ? mlirIntegerTypeGet(c->ctx, (unsigned)kiln_ir_elem_bits(m->elem)) : m->elem;
  MlirValue ops[3] = {to_ptr(c, e[0]), e[1], e[2]};
  if (fl)
    for (int i = 1; i < 3; i++)
      ops[i] = kiln_ir_build_cast(&c->b, c->loc, "arith.bitcast", ops[i], bits);
  MlirType i64 = i64_t(c), pair[2] = {bits, mlirIntegerTypeGet(c->ctx, 1)};
  MlirType rt = mlirLLVMStructTypeLiteralGet(c->ctx, 2, pair, false);
  MlirNamedAttribute a[2] = {
      kiln_ir_named(c->ctx, "success_ordering", mlirIntegerAttrGet(i64, 6 /* acq_rel */)),
      kiln_ir_named(c->ctx, "failure_ordering", mlirIntegerAttrGet(i64, 2 /* monotonic */))};
  MlirValue res = kiln_cpu_op_attrs(c, "llvm.cmpxchg", ops, 3, rt, a, 2);
  int64_t zero_pos = 0;
  MlirNamedAttribute pos =
      kiln_ir_named(c->ctx, "position", mlirDenseI64ArrayGet(c->ctx, 1, &zero_pos));
  MlirValue old = kiln_cpu_op_attrs(c, "llvm.extractvalue", &res, 1, bits, &pos, 1);
  if (fl) old = kiln_ir_build_cast(&c->b, c->loc, "arith.bitcast", old, m->elem);
  kiln_ir_build_yield(&c->b, c->loc, &old, 1);
  kiln_ir_builder_set_end(&c->b, f.else_block);
  MlirValue zero =
      fl ? kiln_ir_build_const_float(&c->b, c->loc, m->elem, 0) : kiln_cpu_int_const(c, m->elem, 0);
  kiln_ir_build_yield(&c->b, c->loc, &zero, 1);
  c->b = saved;
  return kiln_ir_if_result(&f, 0);
}

/* ------------------------------------------------ loads and stores of contiguous runs
 * A load or store whose pointer tile the contiguity analysis (axis_info.c) proves to be runs
 * of consecutive elements along its last dim moves VEC_LANES (or fewer) elements at a time with
 * one masked vector access: llvm.intr.masked.load / masked.store at the address of the chunk's
 * first element, lanes off where the mask is false (they neither touch memory nor fault).  The
 * element-by-element nest (an scf.if per element around an access through an integer address)
 * is what LLVM cannot vectorize: it cannot see those addresses as consecutive.  Only the
 * chunk's first address is computed.  A tile mask is read from its buffer (bools are bytes
 * there, cpu_kit.c) as a vector of bytes compared with zero: built lane by lane, a vector of i1
 * cost AVX-512 hosts a chain of mask-register shifts per lane (layernorm became slower than
 * element by element).  `other` and a store's value are scalars (broadcast) or buffers read
 * as vectors.  Loads and stores of bools (bytes in memory, i1 in registers) keep the element
 * path.
 * A load whose pointers run along another dim than the last (a gemm's transposed operand: the
 * forward's B = W^T, dW's A = X^T) moves a chunk of that dim the same way, one masked load at
 * the chunk's first address; its mask bytes and `other` are read lane by lane and its lanes
 * stored one by one into the result buffer's column (the nest's loads and branches per element
 * were what the transposed gemms spent their time on: BERT-mini's fp32 forward gemm
 * 1024x256x1024 5.2 -> 3.5 ms).  Stores along another dim keep the element path. */
enum { VEC_LANES = 16 };

/* The lanes of one access of op (load or store) along *dim, or 1 for the element path: along
 * the last dim where the pointers run along it, else (loads only) along the dim they run along
 * the furthest, when that is 4 elements or more (a gemm's transposed operand). */
static int64_t access_lanes(Cpu *c, MlirOperation op, KilnOpId id, MlirType elem, int *dim) {
  MlirType pt = mlirValueGetType(operand(op, 0));
  if (!c->axis || !kiln_ir_type_is_tile(pt) || is_bool(elem)) return 1;
  int bits = kiln_ir_elem_bits(elem);
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return 1;
  int rank = kiln_ir_rank(pt);
  KilnAxisInfo a = kiln_axis_get(c->axis, operand(op, 0));
  if (a.rank != rank) return 1;
  int d = rank - 1;
  if (a.contig[d] < 2 && id == KILN_OP_LOAD)
    for (int e = 0; e < rank - 1; e++)
      if (a.contig[e] >= 4 && a.contig[e] > a.contig[d]) d = e;
  int64_t n = kiln_ir_dim(pt, d), lanes = a.contig[d];
  if (lanes > VEC_LANES) lanes = VEC_LANES;
  if (lanes > n) lanes = n;
  int64_t p = 1; /* runs start at multiples of their length, and tile dims are powers of two */
  while (p * 2 <= lanes && n % (p * 2) == 0) p *= 2;
  *dim = d;
  return p;
}

/* The vector at idx .. idx + lanes - 1 along the last dim (rank dims) of a buffer. */
static MlirValue vec_load(Cpu *c, MlirValue buf, const MlirValue *idx, int rank, MlirType vt) {
  MlirValue ops[17];
  ops[0] = buf;
  for (int d = 0; d < rank; d++) ops[1 + d] = idx[d];
  return kiln_cpu_op(c, "vector.load", ops, (size_t)rank + 1, vt);
}

/* The same of a lowered tile that is a scalar (a broadcast) or a buffer. */
static MlirValue lanes_of(Cpu *c, const CpuVal *v, const MlirValue *idx, int rank, MlirType vt) {
  if (!mlirValueIsNull(v->scalar)) return kiln_cpu_op(c, "vector.broadcast", &v->scalar, 1, vt);
  KILN_ASSERT(!mlirValueIsNull(v->buf));
  return vec_load(c, v->buf, idx, rank, vt);
}

typedef struct VecAccess {
  MlirOperation op;
  KilnOpId id;
  MlirType elem, vt, mt; /* the element, its vector of `lanes`, the mask's vector of i1 */
  int64_t lanes;
  int dim;       /* the dim the lanes run along: the last, or (a load) another one */
  MlirValue dst; /* a load's result buffer */
  CpuVal mask;   /* the mask: a scalar, or a buffer (of bytes) */
  CpuVal val;    /* `other` or the stored value: a scalar or a buffer */
} VecAccess;

/* An operand as a scalar or a buffer: one that costs arithmetic is materialized in place (its
 * only reader is op), a view (cost 0, maybe read by others too) is copied. */
static CpuVal stored_operand(Cpu *c, MlirValue old) {
  CpuVal *v = kiln_cpu_get(c, old);
  if (kiln_cpu_is_deferred(v) && v->cost > 0) kiln_cpu_buf(c, v);
  return kiln_cpu_stored(c, v);
}

/* The indices of lane l of the chunk at idx along dim. */
static void lane_index(Cpu *c, const MlirValue *idx, int rank, int dim, int64_t l, MlirValue *out) {
  for (int d = 0; d < rank; d++) out[d] = idx[d];
  if (l > 0)
    out[dim] = kiln_cpu_op(c, "arith.addi", (MlirValue[]){idx[dim], kiln_cpu_cidx(c, l)}, 2,
                           mlirIndexTypeGet(c->ctx));
}

/* The vector of a buffer's elements at idx .. idx + lanes - 1 along dim (not the last: one
 * element at a time), or a scalar's broadcast. */
static MlirValue lanes_along(Cpu *c, const CpuVal *v, const MlirValue *idx, int rank, int dim,
                             MlirType vt) {
  if (!mlirValueIsNull(v->scalar)) return kiln_cpu_op(c, "vector.broadcast", &v->scalar, 1, vt);
  MlirValue vec = {NULL};
  int64_t lanes = mlirShapedTypeGetDimSize(vt, 0);
  for (int64_t l = 0; l < lanes; l++) {
    MlirValue li[16];
    lane_index(c, idx, rank, dim, l, li);
    MlirValue e = kiln_cpu_load_elem(c, v->buf, li, rank);
    vec = l == 0 ? kiln_cpu_op(c, "vector.broadcast", &e, 1, vt)
                 : kiln_cpu_op(c, "vector.insertelement",
                               (MlirValue[]){e, vec, kiln_cpu_cidx(c, l)}, 3, vt);
  }
  return vec;
}

/* A mask's lanes: a scalar broadcast, or bytes read from its buffer compared with zero. */
static MlirValue mask_lanes(Cpu *c, const VecAccess *a, const MlirValue *idx, int rank) {
  if (!mlirValueIsNull(a->mask.scalar)) return lanes_of(c, &a->mask, idx, rank, a->mt);
  MlirType bt = mlirVectorTypeGet(1, &a->lanes, mlirIntegerTypeGet(c->ctx, 8));
  MlirValue bytes = a->dim == rank - 1 ? vec_load(c, a->mask.buf, idx, rank, bt)
                                       : lanes_along(c, &a->mask, idx, rank, a->dim, bt);
  MlirValue zero = kiln_cpu_int_const(c, mlirIntegerTypeGet(c->ctx, 8), 0);
  zero = kiln_cpu_op(c, "vector.broadcast", &zero, 1, bt);
  MlirNamedAttribute ne =
      kiln_ir_named(c->ctx, "predicate", mlirIntegerAttrGet(i64_t(c), 1 /* ne */));
  return kiln_cpu_op_attrs(c, "arith.cmpi", (MlirValue[]){bytes, zero}, 2, a->mt, &ne, 1);
}

static void vec_access(Cpu *c, const VecAccess *a, MlirValue *idx, int rank) {
  bool load = a->id == KILN_OP_LOAD, last = a->dim == rank - 1;
  CpuVal *ptrs = kiln_cpu_get(c, operand(a->op, 0));
  MlirValue p = to_ptr(c, kiln_cpu_elem(c, ptrs, idx));
  MlirValue m = mask_lanes(c, a, idx, rank);
  MlirValue v = last ? lanes_of(c, &a->val, idx, rank, a->vt)
                     : lanes_along(c, &a->val, idx, rank, a->dim, a->vt);
  int32_t bytes = kiln_ir_elem_bits(a->elem) / 8;
  MlirNamedAttribute al = kiln_ir_named(c->ctx, "alignment", mlirIntegerAttrGet(i32_t(c), bytes));
  MlirValue ops[17];
  if (!load) {
    kiln_cpu_op_attrs(c, "llvm.intr.masked.store", (MlirValue[]){v, p, m}, 3, (MlirType){NULL}, &al,
                      1);
    return;
  }
  MlirValue r =
      kiln_cpu_op_attrs(c, "llvm.intr.masked.load", (MlirValue[]){p, m, v}, 3, a->vt, &al, 1);
  if (!last) { /* lane l is the element l further along dim: a column of the result buffer */
    for (int64_t l = 0; l < a->lanes; l++) {
      MlirValue li[16];
      lane_index(c, idx, rank, a->dim, l, li);
      MlirValue e = kiln_cpu_op(c, "vector.extractelement", (MlirValue[]){r, kiln_cpu_cidx(c, l)},
                                2, a->elem);
      kiln_cpu_store_elem(c, a->dst, e, li, rank);
    }
    return;
  }
  ops[0] = r;
  ops[1] = a->dst;
  for (int d = 0; d < rank; d++) ops[2 + d] = idx[d];
  kiln_cpu_op(c, "vector.store", ops, (size_t)rank + 2, (MlirType){NULL});
}

static void vec_nest(Cpu *c, const VecAccess *a, const int64_t *shape, int rank, int d,
                     MlirValue *idx) {
  if (d == rank) {
    vec_access(c, a, idx, rank);
    return;
  }
  int64_t step = d == a->dim ? a->lanes : 1;
  KilnIRFor f = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, shape[d]),
                                  kiln_cpu_cidx(c, step), NULL, 0);
  kiln_cpu_no_full_unroll(f.op);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.body);
  idx[d] = f.iv;
  vec_nest(c, a, shape, rank, d + 1, idx);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  c->b = saved;
}

/* A load or store by vectors of `lanes` along dim (see above). */
static void lower_vec_access(Cpu *c, MlirOperation op, KilnOpId id, MlirType elem, int64_t lanes,
                             int dim) {
  MlirType pt = mlirValueGetType(operand(op, 0));
  VecAccess a = {.op = op,
                 .id = id,
                 .elem = elem,
                 .vt = mlirVectorTypeGet(1, &lanes, elem),
                 .mt = mlirVectorTypeGet(1, &lanes, mlirIntegerTypeGet(c->ctx, 1)),
                 .lanes = lanes,
                 .dim = dim};
  /* a deferred pointer tile is computed at each chunk's first element only; the mask, `other`
   * and a store's value that are not scalars get buffers (a vectorizable nest of their own, or
   * a view's copy) read as vectors */
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(pt, shape, &rank);
  bool load = id == KILN_OP_LOAD;
  a.val = stored_operand(c, operand(op, load ? 2 : 1));
  a.mask = stored_operand(c, operand(op, load ? 1 : 2));
  if (load) {
    a.dst = kiln_cpu_alloc(c, mlirValueGetType(result_of(op)));
    kiln_cpu_set_buf(c, result_of(op), a.dst);
  }
  MlirValue idx[16] = {{NULL}};
  vec_nest(c, &a, shape, rank, 0, idx);
}

static bool lower_memory(Cpu *c, MlirOperation op, KilnOpId id) {
  if (id == KILN_OP_LOAD || id == KILN_OP_STORE) {
    MlirType et =
        kiln_cpu_scalar_type(kiln_ir_ptr_elem(kiln_ir_elem_type(mlirValueGetType(operand(op, 0)))));
    int dim = 0;
    int64_t lanes = access_lanes(c, op, id, et, &dim);
    if (lanes > 1) {
      lower_vec_access(c, op, id, et, lanes, dim);
      return true;
    }
  }
  kiln_cpu_compute_operands(c, op);
  MlirType pt = kiln_ir_elem_type(mlirValueGetType(operand(op, 0)));
  MemCtx m = {kiln_cpu_scalar_type(kiln_ir_ptr_elem(pt)), 0};
  if (id == KILN_OP_LOAD) {
    kiln_cpu_map(c, op, load_fn, &m, true);
  } else if (id == KILN_OP_STORE) {
    kiln_cpu_map(c, op, store_fn, &m, true);
  } else if (id == KILN_OP_ATOMIC_CAS) {
    kiln_cpu_map(c, op, cas_fn, &m, false);
  } else {
    if (!kiln_ir_atomic_bin_op(op, m.elem, &m.bin_op)) {
      kiln_ir_error(c->loc, "atomic: unknown kind");
      return false;
    }
    /* every lane performs its own atomic, even when all lanes are the same */
    kiln_cpu_map(c, op, atomic_fn, &m, false);
  }
  return true;
}

/* ---------------------------------------------------------------- dot */

typedef struct DotCtx {
  CpuVal *a, *b;
  MlirValue dst;
  MlirType acc;
  bool tf32; /* round a and b to TF32 before the products */
} DotCtx;

/* x rounded to TF32 as the GPU's cvt.rna.tf32.f32 does: to the nearest value with a 10-bit
 * mantissa, ties away from zero (add half of the last kept bit to the magnitude's bits, then
 * clear the 13 low bits; a carry into the exponent is the correct next binade, and the largest
 * finite values round to infinity as rna does).  A NaN stays a NaN (the add could carry its
 * bits into the sign): it is kept as it is. */
static MlirValue round_tf32(Cpu *c, MlirValue x) {
  MlirType i32 = i32_t(c);
  MlirValue bits = kiln_ir_build_cast(&c->b, c->loc, "arith.bitcast", x, i32);
  MlirValue up = bin(c, "arith.addi", bits, kiln_cpu_int_const(c, i32, 0x1000));
  MlirValue r = bin(c, "arith.andi", up, kiln_cpu_int_const(c, i32, (int64_t)(int32_t)0xffffe000u));
  MlirValue rf = kiln_ir_build_cast(&c->b, c->loc, "arith.bitcast", r, mlirValueGetType(x));
  MlirValue nan = kiln_ir_build_cmpf(&c->b, c->loc, "uno", x, x);
  return kiln_ir_build_select(&c->b, c->loc, nan, x, rf);
}

static MlirValue widen(Cpu *c, MlirValue v, MlirType to) {
  MlirType from = mlirValueGetType(v);
  if (mlirTypeEqual(from, to)) return v;
  if (mlirTypeIsAFloat(to)) return kiln_ir_build_cast(&c->b, c->loc, "arith.extf", v, to);
  return kiln_ir_build_cast(&c->b, c->loc, "arith.extsi", v, to);
}

/* One element of a dot operand in the accumulator's type: rounded to TF32 first when asked,
 * then widened (f16/bf16 -> f32, i8 -> i32). */
static MlirValue dot_operand_elem(Cpu *c, const DotCtx *d, MlirValue x) {
  if (d->tf32) x = round_tf32(c, x);
  return widen(c, x, d->acc);
}

typedef struct DotConvert {
  const DotCtx *d;
  CpuVal *src;
  MlirValue dst;
} DotConvert;

static void dot_convert_body(Cpu *c, const MlirValue *idx, void *user) {
  DotConvert *v = user;
  kiln_cpu_store_elem(c, v->dst, dot_operand_elem(c, v->d, kiln_cpu_elem(c, v->src, idx)), idx, 2);
}

/* Operand v (of tile type t) as the nest reads it: as it is where it already has the
 * accumulator's type, else converted once into a buffer of that type. In the nest each element
 * of a is read N times and each of b M times, and f16 and bf16 convert in software
 * (host_float16.c): converting per product made the cpu's f16 gemm 1.5 to 5 times slower than
 * the f32 one. The conversion is exact (and the TF32 rounding the same per element), so the
 * sums are the same bits. */
static CpuVal dot_operand(Cpu *c, const DotCtx *d, CpuVal v, MlirType t) {
  if (!d->tf32 && mlirTypeEqual(kiln_ir_elem_type(t), d->acc)) return v;
  CpuVal out = {0};
  out.buf = kiln_cpu_alloc(c, kiln_ir_type_like(t, d->acc));
  DotConvert conv = {d, &v, out.buf};
  int64_t shape[2] = {kiln_ir_dim(t, 0), kiln_ir_dim(t, 1)};
  kiln_cpu_nest(c, shape, 2, dot_convert_body, &conv);
  return out;
}

/* One product of the nest over (i, k, j): dst[i][j] += a[i][k] * b[k][j].  j innermost, so
 * that the loop LLVM vectorizes reads a row of b and a row of dst (contiguous buffers) where an
 * inner k loop read b down a column; each dst element still adds its K products in k order,
 * so the sums are the same bits.  a and b already have the accumulator's type. */
static void dot_body(Cpu *c, const MlirValue *idx, void *user) {
  DotCtx *d = user;
  MlirValue ij[2] = {idx[0], idx[2]}, ai[2] = {idx[0], idx[1]}, bi[2] = {idx[1], idx[2]};
  MlirValue x = kiln_cpu_elem(c, d->a, ai), y = kiln_cpu_elem(c, d->b, bi);
  bool fl = mlirTypeIsAFloat(d->acc);
  MlirValue p = bin(c, fl ? "arith.mulf" : "arith.muli", x, y);
  MlirValue sum = kiln_cpu_load_elem(c, d->dst, ij, 2);
  kiln_cpu_store_elem(c, d->dst, bin(c, fl ? "arith.addf" : "arith.addi", sum, p), ij, 2);
}

/* The register-blocked form of the nest.  The (i, k, j) nest loads and stores its dst row
 * segment once per product: LLVM vectorizes j but keeps dst in memory, so each vector of
 * products costs a load and a store of dst besides the load of b.  Blocked, the result is
 * taken DOT_BLOCK_ROWS rows by one DOT_BLOCK_BYTES segment at a time: those rows' segments
 * live in vector registers across the whole k loop (its iter_args), and each k loads one
 * segment of b and broadcasts one element of a per row.  Each dst element still gets
 * dst + a[i][k] * b[k][j] for k in order, a product rounded and then a sum rounded, as in the
 * nest: the same bits.  4 rows of 64 bytes are 8 of AVX2's 16 vector registers (4 of
 * AVX-512's), with b's segment and a broadcast beside them. */
#define DOT_BLOCK_ROWS  4
#define DOT_BLOCK_BYTES 64

static MlirValue add_idx(Cpu *c, MlirValue i, int64_t k) {
  return k ? kiln_cpu_op(c, "arith.addi", (MlirValue[]){i, kiln_cpu_cidx(c, k)}, 2,
                         mlirIndexTypeGet(c->ctx))
           : i;
}

/* Whether the blocked form fits: an accumulator of 32- or 64-bit elements (f32, f64, i32, i64:
 * vector arithmetic the host does natively), b in a buffer (its rows are loaded as vectors), and
 * M and N multiples of the block. */
static bool dot_blocks(const DotCtx *d, int64_t M, int64_t N) {
  int bits = kiln_ir_elem_bits(d->acc);
  if (bits != 32 && bits != 64) return false;
  int64_t w = DOT_BLOCK_BYTES / (bits / 8);
  return mlirValueIsNull(d->b->scalar) && !mlirValueIsNull(d->b->buf) && M % DOT_BLOCK_ROWS == 0 &&
         N % w == 0;
}

static void dot_blocked(Cpu *c, const DotCtx *d, int64_t M, int64_t K, int64_t N) {
  int64_t w = DOT_BLOCK_BYTES / (kiln_ir_elem_bits(d->acc) / 8);
  MlirType vt = mlirVectorTypeGet(1, &w, d->acc);
  bool fl = mlirTypeIsAFloat(d->acc);
  KilnIRBuilder saved = c->b;
  KilnIRFor fi = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, M),
                                   kiln_cpu_cidx(c, DOT_BLOCK_ROWS), NULL, 0);
  kiln_cpu_no_full_unroll(fi.op);
  kiln_ir_builder_set_end(&c->b, fi.body);
  KilnIRFor fj = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, N),
                                   kiln_cpu_cidx(c, w), NULL, 0);
  kiln_cpu_no_full_unroll(fj.op);
  kiln_ir_builder_set_end(&c->b, fj.body);
  MlirValue rows[DOT_BLOCK_ROWS], acc[DOT_BLOCK_ROWS];
  for (int r = 0; r < DOT_BLOCK_ROWS; r++) {
    rows[r] = add_idx(c, fi.iv, r);
    acc[r] = kiln_cpu_op(c, "vector.load", (MlirValue[]){d->dst, rows[r], fj.iv}, 3, vt);
  }
  KilnIRFor fk = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, K),
                                   kiln_cpu_cidx(c, 1), acc, DOT_BLOCK_ROWS);
  KilnIRBuilder outer = c->b;
  kiln_ir_builder_set_end(&c->b, fk.body);
  MlirValue bv = kiln_cpu_op(c, "vector.load", (MlirValue[]){d->b->buf, fk.iv, fj.iv}, 3, vt);
  MlirValue next[DOT_BLOCK_ROWS];
  for (int r = 0; r < DOT_BLOCK_ROWS; r++) {
    MlirValue x = kiln_cpu_elem(c, d->a, (MlirValue[]){rows[r], fk.iv});
    MlirValue xv = kiln_cpu_op(c, "vector.broadcast", &x, 1, vt);
    MlirValue p = bin(c, fl ? "arith.mulf" : "arith.muli", xv, bv);
    next[r] = bin(c, fl ? "arith.addf" : "arith.addi", kiln_ir_for_iter_arg(&fk, (size_t)r), p);
  }
  kiln_ir_build_yield(&c->b, c->loc, next, DOT_BLOCK_ROWS);
  c->b = outer;
  for (int r = 0; r < DOT_BLOCK_ROWS; r++)
    kiln_cpu_op(c, "vector.store",
                (MlirValue[]){kiln_ir_for_result(&fk, (size_t)r), d->dst, rows[r], fj.iv}, 4,
                (MlirType){NULL});
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  kiln_ir_builder_set_end(&c->b, fi.body);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  c->b = saved;
}

/* Whether op is v's only reader and runs once per definition of v: one use (SSA: nothing else
 * can read v's buffer after op; a view or an elementwise op of v would be a second use), in the
 * block that defines v (a dot in a loop over a tile defined before it runs once per iteration,
 * and each run must start from the same value). */
static bool only_reader(MlirValue v, MlirOperation op) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u))) return false;
  MlirBlock def = mlirValueIsABlockArgument(v) ? mlirBlockArgumentGetOwner(v)
                                               : mlirOperationGetBlock(mlirOpResultGetOwner(v));
  return mlirBlockEqual(def, mlirOperationGetBlock(op));
}

static void lower_dot(Cpu *c, MlirOperation op) {
  MlirType at = mlirValueGetType(operand(op, 0)), bt = mlirValueGetType(operand(op, 1));
  MlirType rt = mlirValueGetType(result_of(op));
  DotCtx d = {NULL, NULL, {NULL}, kiln_ir_elem_type(rt), kiln_ir_dot_is_tf32(op)};
  /* dot reads each element of a and b many times: deferred ones are computed into buffers,
   * and converted to the accumulator's type there */
  CpuVal a = dot_operand(c, &d, kiln_cpu_stored(c, kiln_cpu_get(c, operand(op, 0))), at);
  CpuVal b = dot_operand(c, &d, kiln_cpu_stored(c, kiln_cpu_get(c, operand(op, 1))), bt);
  d.a = &a;
  d.b = &b;
  d.tf32 = false; /* rounded in dot_operand */
  /* every product is added into the result: acc's own buffer when the dot is acc's only
   * reader (the K loop's carried accumulator: no copy in, and the yield's copy back is to the
   * same buffer, so none), else a copy of acc, which may still be read later */
  CpuVal *acc = kiln_cpu_get(c, operand(op, 2));
  if (!mlirValueIsNull(acc->buf) && only_reader(operand(op, 2), op)) {
    d.dst = acc->buf;
  } else {
    d.dst = kiln_cpu_alloc(c, rt);
    kiln_cpu_copy(c, acc, d.dst);
  }
  kiln_cpu_set_buf(c, result_of(op), d.dst);
  int64_t shape[3] = {kiln_ir_dim(rt, 0), kiln_ir_dim(at, 1), kiln_ir_dim(rt, 1)};
  if (dot_blocks(&d, shape[0], shape[2]))
    dot_blocked(c, &d, shape[0], shape[1], shape[2]);
  else
    kiln_cpu_nest(c, shape, 3, dot_body, &d);
}

/* ---------------------------------------------------------------- reduce */

typedef struct RedCtx {
  CpuVal *src;
  MlirValue dst; /* null for a scalar result */
  int axis, rank;
  int64_t n;
  const char *kind;
  MlirType elem;
  MlirValue scalar_out;
} RedCtx;

static MlirValue reduce_line(Cpu *c, RedCtx *r, const MlirValue *out_idx) {
  MlirValue idx[16];
  for (int i = 0, o = 0; i < r->rank; i++)
    idx[i] = i == r->axis ? kiln_cpu_cidx(c, 0) : out_idx[o++];
  bool fl = mlirTypeIsAFloat(r->elem);
  bool arg = strncmp(r->kind, "arg", 3) == 0, is_sum = strcmp(r->kind, "sum") == 0;
  bool is_max = strcmp(r->kind, "max") == 0 || strcmp(r->kind, "argmax") == 0;
  MlirValue inits[2];
  size_t ninit = 1;
  inits[0] = is_sum ? (fl ? kiln_ir_build_const_float(&c->b, c->loc, r->elem, 0)
                          : kiln_cpu_int_const(c, r->elem, 0))
                    : kiln_cpu_elem(c, r->src, idx);
  if (arg) inits[ninit++] = kiln_cpu_int_const(c, i32_t(c), 0);
  KilnIRFor f = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, is_sum ? 0 : 1),
                                  kiln_cpu_cidx(c, r->n), kiln_cpu_cidx(c, 1), inits, ninit);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.body);
  idx[r->axis] = f.iv;
  MlirValue v = kiln_cpu_elem(c, r->src, idx), best = kiln_ir_for_iter_arg(&f, 0);
  MlirValue ys[2];
  if (arg) {
    MlirValue better = fl ? kiln_ir_build_cmpf(&c->b, c->loc, is_max ? "ogt" : "olt", v, best)
                          : kiln_ir_build_cmpi(&c->b, c->loc, is_max ? "sgt" : "slt", v, best);
    MlirValue i = kiln_ir_build_cast(&c->b, c->loc, "arith.index_cast", f.iv, i32_t(c));
    ys[0] = kiln_ir_build_select(&c->b, c->loc, better, v, best);
    ys[1] = kiln_ir_build_select(&c->b, c->loc, better, i, kiln_ir_for_iter_arg(&f, 1));
  } else if (is_sum) {
    ys[0] = bin(c, fl ? "arith.addf" : "arith.addi", best, v);
  } else {
    const char *name = fl ? (is_max ? "arith.maximumf" : "arith.minimumf")
                          : (is_max ? "arith.maxsi" : "arith.minsi");
    ys[0] = bin(c, name, best, v);
  }
  kiln_ir_build_yield(&c->b, c->loc, ys, ninit);
  c->b = saved;
  return kiln_ir_for_result(&f, arg ? 1 : 0);
}

static void reduce_body(Cpu *c, const MlirValue *idx, void *user) {
  RedCtx *r = user;
  MlirValue v = reduce_line(c, r, idx);
  kiln_cpu_store_elem(c, r->dst, v, idx, r->rank - 1);
}

static bool lower_reduce(Cpu *c, MlirOperation op) {
  kiln_cpu_compute_operands(c, op);
  MlirType t = mlirValueGetType(operand(op, 0));
  char kind[16] = "";
  kiln_ir_get_str_attr(op, "kind", kind, sizeof kind);
  RedCtx r = {
      kiln_cpu_get(c, operand(op, 0)), {NULL}, (int)attr_int(op, "axis"), kiln_ir_rank(t), 0, kind,
      kiln_cpu_scalar_type(t),         {NULL}};
  r.n = kiln_ir_dim(t, r.axis);
  MlirValue res = result_of(op);
  if (r.rank == 1) {
    kiln_cpu_set_scalar(c, res, reduce_line(c, &r, NULL));
    return true;
  }
  MlirType rt = mlirValueGetType(res);
  r.dst = kiln_cpu_alloc(c, rt);
  kiln_cpu_set_buf(c, res, r.dst);
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(rt, shape, &rank);
  kiln_cpu_nest(c, shape, rank, reduce_body, &r);
  return true;
}

/* ---------------------------------------------------------------- scan */

/* kiln.scan: per line along the axis (a loop nest over the other dims), one loop that carries
 * the running sum or product and stores it at every position: the order is the axis's, or the
 * reverse of it (kiln.reverse: position n - 1 - i at step i). */
typedef struct ScanCtx {
  CpuVal *src;
  MlirValue dst;
  int axis, rank;
  int64_t n;
  bool is_sum;
  MlirType elem;
  bool reverse;
} ScanCtx;

static void scan_body(Cpu *c, const MlirValue *line, void *user) {
  ScanCtx *s = user;
  bool fl = mlirTypeIsAFloat(s->elem);
  MlirValue init = s->is_sum ? (fl ? kiln_ir_build_const_float(&c->b, c->loc, s->elem, 0)
                                   : kiln_cpu_int_const(c, s->elem, 0))
                             : (fl ? kiln_ir_build_const_float(&c->b, c->loc, s->elem, 1)
                                   : kiln_cpu_int_const(c, s->elem, 1));
  KilnIRFor f = kiln_ir_build_for(&c->b, c->loc, kiln_cpu_cidx(c, 0), kiln_cpu_cidx(c, s->n),
                                  kiln_cpu_cidx(c, 1), &init, 1);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.body);
  MlirValue idx[16];
  MlirValue at = f.iv;
  if (s->reverse) at = bin(c, "arith.subi", kiln_cpu_cidx(c, s->n - 1), f.iv);
  for (int i = 0; i < s->rank; i++) idx[i] = i == s->axis ? at : line[i];
  const char *op =
      s->is_sum ? (fl ? "arith.addf" : "arith.addi") : (fl ? "arith.mulf" : "arith.muli");
  MlirValue acc = bin(c, op, kiln_ir_for_iter_arg(&f, 0), kiln_cpu_elem(c, s->src, idx));
  kiln_cpu_store_elem(c, s->dst, acc, idx, s->rank);
  kiln_ir_build_yield(&c->b, c->loc, &acc, 1);
  c->b = saved;
}

static bool lower_scan(Cpu *c, MlirOperation op) {
  kiln_cpu_compute_operands(c, op);
  MlirType t = mlirValueGetType(operand(op, 0));
  char kind[16] = "";
  kiln_ir_get_str_attr(op, "kind", kind, sizeof kind);
  ScanCtx s = {kiln_cpu_get(c, operand(op, 0)),
               {NULL},
               (int)attr_int(op, "axis"),
               kiln_ir_rank(t),
               0,
               strcmp(kind, "sum") == 0,
               kiln_cpu_scalar_type(t),
               kiln_ir_scan_is_reverse(op)};
  s.n = kiln_ir_dim(t, s.axis);
  s.dst = kiln_cpu_alloc(c, t);
  kiln_cpu_set_buf(c, result_of(op), s.dst);
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(t, shape, &rank);
  shape[s.axis] = 1; /* one iteration per line; scan_body walks the axis */
  kiln_cpu_nest(c, shape, rank, scan_body, &s);
  return true;
}

/* ---------------------------------------------------------------- rand */

/* arith.select of a, b by the i1 c. */
static MlirValue select_i32(Cpu *c, MlirValue cond, MlirValue a, MlirValue b) {
  MlirValue o[3] = {cond, a, b};
  MlirType t = i32_t(c);
  KilnOpSpec s = {.name = "arith.select",
                  .loc = c->loc,
                  .operands = o,
                  .n_operands = 3,
                  .results = &t,
                  .n_results = 1};
  return mlirOperationGetResult(kiln_ir_create(&c->b, &s), 0);
}

/* Word (o & 3) of the block x[4]: two levels of selects on o's two low bits. */
static MlirValue pick_word(Cpu *c, MlirValue o, const MlirValue *x) {
  MlirType i1 = mlirIntegerTypeGet(c->ctx, 1);
  MlirValue b0 = kiln_ir_build_cast(&c->b, c->loc, "arith.trunci", o, i1);
  MlirValue o1 = bin(c, "arith.shrui", o, kiln_cpu_int_const(c, i32_t(c), 1));
  MlirValue b1 = kiln_ir_build_cast(&c->b, c->loc, "arith.trunci", o1, i1);
  MlirValue lo = select_i32(c, b0, x[1], x[0]), hi = select_i32(c, b0, x[3], x[2]);
  return select_i32(c, b1, hi, lo);
}

/* The Philox4x32-10 block with key (k0, 0) and counter (ctr, 0, 0, 0) into x[4]. */
static void philox_block(Cpu *c, MlirValue k0, MlirValue ctr, MlirValue x[4]) {
  MlirType i32 = i32_t(c);
  MlirValue k1 = kiln_cpu_int_const(c, i32, 0);
  x[0] = ctr, x[1] = x[2] = x[3] = k1;
  MlirValue m0 = kiln_cpu_int_const(c, i32, (int64_t)0xD2511F53u);
  MlirValue m1 = kiln_cpu_int_const(c, i32, (int64_t)0xCD9E8D57u);
  MlirValue w0 = kiln_cpu_int_const(c, i32, (int64_t)0x9E3779B9u);
  MlirValue w1 = kiln_cpu_int_const(c, i32, (int64_t)0xBB67AE85u);
  for (int round = 0; round < 10; round++) {
    MlirType two[2] = {i32, i32};
    MlirValue o0[2] = {m0, x[0]}, o1[2] = {m1, x[2]};
    KilnOpSpec s0 = {.name = "arith.mului_extended",
                     .loc = c->loc,
                     .operands = o0,
                     .n_operands = 2,
                     .results = two,
                     .n_results = 2};
    KilnOpSpec s1 = s0;
    s1.operands = o1;
    MlirOperation p0 = kiln_ir_create(&c->b, &s0), p1 = kiln_ir_create(&c->b, &s1);
    MlirValue lo0 = mlirOperationGetResult(p0, 0), hi0 = mlirOperationGetResult(p0, 1);
    MlirValue lo1 = mlirOperationGetResult(p1, 0), hi1 = mlirOperationGetResult(p1, 1);
    MlirValue n0 = bin(c, "arith.xori", bin(c, "arith.xori", hi1, x[1]), k0);
    MlirValue n2 = bin(c, "arith.xori", bin(c, "arith.xori", hi0, x[3]), k1);
    x[0] = n0, x[1] = lo1, x[2] = n2, x[3] = lo0;
    k0 = bin(c, "arith.addi", k0, w0);
    k1 = bin(c, "arith.addi", k1, w1);
  }
}

/* What rand makes of a word: the word itself (randint), or (word >> 8) 2^-24 in [0, 1). */
static MlirValue rand_value(Cpu *c, MlirValue word, bool raw) {
  if (raw) return word;
  MlirValue top = bin(c, "arith.shrui", word, kiln_cpu_int_const(c, i32_t(c), 8));
  MlirType f32 = mlirF32TypeGet(c->ctx);
  MlirValue f = kiln_ir_build_cast(&c->b, c->loc, "arith.uitofp", top, f32);
  return bin(c, "arith.mulf", f, kiln_ir_build_const_float(&c->b, c->loc, f32, 0x1p-24));
}

/* rand / randint of one offset o (docs/internals.md): word (o & 3) of the Philox4x32-10 block
 * with key (seed, 0) and counter (o >> 2 logical, 0, 0, 0); rand maps it to [0, 1).  One block
 * per element: what a tile gets whose elements share no block that the axis analysis can see
 * (else lower_rand_groups). */
static MlirValue rand_fn(Cpu *c, const MlirValue *e, void *user) {
  bool raw = *(const bool *)user; /* an i32 result: the word itself (randint) */
  MlirValue x[4];
  philox_block(c, e[0], bin(c, "arith.shrui", e[1], kiln_cpu_int_const(c, i32_t(c), 2)), x);
  return rand_value(c, pick_word(c, e[1], x), raw);
}

/* Why.  A Philox block is 4 words, and the kernels draw them so that elements share blocks:
 * dropout's consecutive offsets 4 a block, the attention keep mask's 16 elements (bits 0 and 3
 * of both positions).  One block per element computed each block 4 or 16 times over: a tenth of
 * BERT-mini's fp32 training step on the cpu went to dropout.  The axis analysis (axis_info.c,
 * shared with the GPU lowering, docs/gpu-lowering.md "Random numbers") proves which index bits
 * of each dim leave the counter (offset >> 2) unchanged, `ctr_bits`; elements whose indices
 * differ only there are a group with one counter.  So rand of such a tile is a loop nest over
 * the groups (each dim's index with its group bits clear): one block per group, from its first
 * element's offset, and each member's word picked by its own offset's low bits and stored in
 * place, the same numbers as rand_fn's.  Measured on the cpu (2 cores, f32, BERT-mini's
 * shapes): dropout_fwd 0.76-0.93 -> 0.30-0.34 ms a call, the Philox rounds vectorized across
 * groups of 4; the attention kernels with dropout 0-14% faster, with scalar rounds per group of
 * 16.  Two loops instead (blocks into a buffer, then each element's word gathered from it) did
 * not vectorize the attention's rounds either and were slower for dropout. */

#define RAND_GROUP_MAX 16 /* members of a group at most: the loop body is unrolled over them */

typedef struct RandGroups {
  CpuVal *seed, *offs;
  MlirValue buf; /* the result tile */
  int rank;
  int64_t size[KILN_AXIS_MAX_RANK];
  int64_t bits[KILN_AXIS_MAX_RANK]; /* the group bits of each dim's index */
  int members;
  bool raw;
} RandGroups;

/* The low bits of v placed at the set bits of mask, low to high (pdep of a constant). */
static int64_t deposit_const(int64_t v, int64_t mask) {
  int64_t r = 0;
  for (int b = 0, s = 0; b < 62; b++)
    if (mask >> b & 1) r |= (v >> s++ & 1) << b;
  return r;
}

/* The same for an index value v: a shift, a mask and a shift per run of mask's set bits. */
static MlirValue deposit_index(Cpu *c, MlirValue v, int64_t mask) {
  MlirValue r = kiln_cpu_cidx(c, 0);
  for (int b = 0, s = 0; b < 62;) {
    if (!(mask >> b & 1)) {
      b++;
      continue;
    }
    int e = b;
    while (e < 62 && (mask >> e & 1)) e++;
    /* bits [b, e) of the result are bits [s, s + e - b) of v */
    MlirValue t = bin(c, "arith.shrui", v, kiln_cpu_cidx(c, s));
    t = bin(c, "arith.andi", t, kiln_cpu_cidx(c, ((int64_t)1 << (e - b)) - 1));
    r = bin(c, "arith.ori", r, bin(c, "arith.shli", t, kiln_cpu_cidx(c, b)));
    s += e - b, b = e;
  }
  return r;
}

/* One group: cidx holds each dim's index bits outside its group bits, packed. */
static void rand_group_body(Cpu *c, const MlirValue *cidx, void *user) {
  RandGroups *g = user;
  MlirValue rep[KILN_AXIS_MAX_RANK], idx[KILN_AXIS_MAX_RANK];
  for (int d = 0; d < g->rank; d++)
    rep[d] = deposit_index(c, cidx[d], (g->size[d] - 1) & ~g->bits[d]);
  MlirValue ctr =
      bin(c, "arith.shrui", kiln_cpu_elem(c, g->offs, rep), kiln_cpu_int_const(c, i32_t(c), 2));
  MlirValue x[4];
  philox_block(c, g->seed->scalar, ctr, x);
  for (int m = 0; m < g->members; m++) {
    /* member m's bits spread over the dims' group bits, dim 0's lowest */
    int used = 0;
    for (int d = 0; d < g->rank; d++) {
      int k = __builtin_popcountll((unsigned long long)g->bits[d]);
      int64_t add = deposit_const((m >> used) & (((int64_t)1 << k) - 1), g->bits[d]);
      used += k;
      idx[d] = add ? bin(c, "arith.ori", rep[d], kiln_cpu_cidx(c, add)) : rep[d];
    }
    MlirValue word = pick_word(c, kiln_cpu_elem(c, g->offs, idx), x);
    kiln_cpu_store_elem(c, g->buf, rand_value(c, word, g->raw), idx, g->rank);
  }
}

/* rand of a tile by groups of elements that share a Philox block (the comment above); false
 * (nothing emitted) where the analysis sees no groups, the seed is not one value, or a dim is
 * not a power of two: rand_fn's per element then. */
static bool lower_rand_groups(Cpu *c, MlirOperation op, bool raw) {
  MlirValue res = result_of(op);
  MlirType t = mlirValueGetType(res);
  if (!c->axis || !kiln_ir_type_is_tile(t)) return false;
  CpuVal *seed = kiln_cpu_get(c, operand(op, 0));
  if (mlirValueIsNull(seed->scalar)) return false;
  RandGroups g = {.seed = seed, .offs = kiln_cpu_get(c, operand(op, 1)), .raw = raw};
  int64_t shape[16], cshape[KILN_AXIS_MAX_RANK];
  kiln_cpu_shape(t, shape, &g.rank);
  KilnAxisInfo a = kiln_axis_get(c->axis, operand(op, 1));
  if (g.rank > KILN_AXIS_MAX_RANK || a.rank != g.rank) return false;
  g.members = 1;
  for (int d = g.rank - 1; d >= 0; d--) { /* the last dim's bits first */
    int64_t n = shape[d];
    if (n < 1 || (n & (n - 1))) return false;
    g.size[d] = n;
    g.bits[d] = 0;
    for (int b = 0; ((int64_t)1 << b) < n; b++)
      if ((a.ctr_bits[d] >> b & 1) && g.members < RAND_GROUP_MAX) {
        g.bits[d] |= (int64_t)1 << b;
        g.members *= 2;
      }
    cshape[d] = n >> __builtin_popcountll((unsigned long long)g.bits[d]);
  }
  if (g.members < 2) return false;
  g.buf = kiln_cpu_alloc(c, t);
  kiln_cpu_nest(c, cshape, g.rank, rand_group_body, &g);
  kiln_cpu_set_buf(c, res, g.buf);
  return true;
}

/* ---------------------------------------------------------------- device_print */

/* device_print on the CPU: one printf call per element, "pid (X, Y, Z) idx (I, J) TEXT: VALUE\n"
 * (no idx for a scalar), from a loop nest over the tile.  The format is a private constant string
 * of the module (the text's '%' doubled); printf is declared once per module.  Integers print
 * with %d (i1 as 0/1, i8/i16 sign-extended) or %lld (i64), floats widened to double with %.9g,
 * which tells every f32 apart (9 significant digits round-trip). */

typedef struct PrintCtx {
  MlirValue fmt; /* !llvm.ptr to the format */
  CpuVal *x;
  MlirType elem; /* x's element type */
  MlirType fnty; /* i32 (ptr, ...) */
} PrintCtx;

static MlirOperation module_of(MlirOperation op) {
  MlirOperation p = op;
  while (!mlirOperationIsNull(p) && !kiln_ir_op_is(p, "builtin.module"))
    p = mlirOperationGetParentOperation(p);
  return p;
}

static MlirValue print_value(Cpu *c, MlirValue v, MlirType elem) {
  if (mlirTypeIsAFloat(elem))
    return kiln_ir_build_cast(&c->b, c->loc, "arith.extf", v, mlirF64TypeGet(c->ctx));
  unsigned w = mlirIntegerTypeGetWidth(elem);
  if (w >= 32) return v;
  return kiln_ir_build_cast(&c->b, c->loc, w == 1 ? "arith.extui" : "arith.extsi", v, i32_t(c));
}

static void print_body(Cpu *c, const MlirValue *idx, void *user) {
  PrintCtx *p = user;
  MlirValue args[24];
  size_t n = 0;
  args[n++] = p->fmt;
  for (int i = 0; i < 3; i++) args[n++] = c->pid[i];
  int rank = kiln_ir_rank(mlirValueGetType(p->x->old));
  for (int i = 0; idx && i < rank; i++)
    args[n++] = kiln_ir_build_cast(&c->b, c->loc, "arith.index_cast", idx[i], i32_t(c));
  MlirValue v = idx ? kiln_cpu_elem(c, p->x, idx) : p->x->scalar;
  args[n++] = print_value(c, v, p->elem);
  MlirNamedAttribute a[2] = {
      kiln_ir_named(c->ctx, "callee",
                    mlirFlatSymbolRefAttrGet(c->ctx, mlirStringRefCreateFromCString("printf"))),
      kiln_ir_named(c->ctx, "var_callee_type", mlirTypeAttrGet(p->fnty))};
  MlirType i32 = i32_t(c);
  kiln_ir_make(&c->b, c->loc, "llvm.call", args, n, &i32, 1, a, 2);
}

static bool lower_print(Cpu *c, MlirOperation op) {
  MlirValue x = operand(op, 0);
  MlirType t = mlirValueGetType(x);
  MlirStringRef text = mlirStringAttrGetValue(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("text")));
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(t, shape, &rank);
  PrintCtx p = {.x = kiln_cpu_get(c, x), .elem = kiln_cpu_scalar_type(t)};
  MlirType ptr = llvm_ptr(c);
  p.fnty = mlirLLVMFunctionTypeGet(i32_t(c), 1, &ptr, true);
  MlirOperation module = module_of(op);
  kiln_ir_declare_external_func(module, c->loc, "printf", p.fnty);
  char *fmt = kiln_ir_print_format(text, rank, p.elem);
  if (!fmt) {
    kiln_ir_error(c->loc, "out of memory");
    return false;
  }
  p.fmt = kiln_ir_module_string(&c->b, c->loc, module, "kiln_print_fmt", fmt);
  free(fmt);
  if (rank == 0)
    print_body(c, NULL, &p);
  else
    kiln_cpu_nest(c, shape, rank, print_body, &p);
  return true;
}

/* ---------------------------------------------------------------- device_assert */

/* device_assert on the CPU: where an element of c is false, a call of the runtime's hook
 * kiln_cpu_assert_fail(text, pid x, y, z, element) (runtime/cpu_pool.c), which records the first
 * failure of the launch (the launch then fails with it) and counts the rest; the program goes
 * on.  element is the row-major index of the element in c (0 for a scalar). */

typedef struct AssertCtx {
  MlirValue text; /* !llvm.ptr to "FILE:LINE:COL: message" */
  CpuVal *c;
  const int64_t *shape;
  int rank;
} AssertCtx;

static void assert_body(Cpu *c, const MlirValue *idx, void *user) {
  AssertCtx *a = user;
  MlirValue ok = idx ? kiln_cpu_elem(c, a->c, idx) : a->c->scalar;
  KilnIRIf f = kiln_ir_build_if(&c->b, c->loc, ok, NULL, 0);
  KilnIRBuilder saved = c->b;
  kiln_ir_builder_set_end(&c->b, f.then_block);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  kiln_ir_builder_set_end(&c->b, f.else_block);
  MlirValue lin = kiln_cpu_cidx(c, 0);
  for (int i = 0; idx && i < a->rank; i++) {
    MlirValue m[2] = {lin, kiln_cpu_cidx(c, a->shape[i])};
    MlirValue s[2] = {kiln_cpu_op(c, "arith.muli", m, 2, mlirIndexTypeGet(c->ctx)), idx[i]};
    lin = kiln_cpu_op(c, "arith.addi", s, 2, mlirIndexTypeGet(c->ctx));
  }
  MlirValue args[5] = {
      a->text, c->pid[0], c->pid[1], c->pid[2],
      kiln_ir_build_cast(&c->b, c->loc, "arith.index_cast", lin, mlirIntegerTypeGet(c->ctx, 64))};
  MlirNamedAttribute callee = kiln_ir_named(
      c->ctx, "callee",
      mlirFlatSymbolRefAttrGet(c->ctx, mlirStringRefCreateFromCString("kiln_cpu_assert_fail")));
  kiln_ir_make(&c->b, c->loc, "llvm.call", args, 5, NULL, 0, &callee, 1);
  kiln_ir_build_yield(&c->b, c->loc, NULL, 0);
  c->b = saved;
}

static bool lower_assert(Cpu *c, MlirOperation op) {
  MlirValue x = operand(op, 0);
  int64_t shape[16];
  int rank;
  kiln_cpu_shape(mlirValueGetType(x), shape, &rank);
  MlirStringRef text = mlirStringAttrGetValue(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("text")));
  MlirOperation module = module_of(op);
  MlirType ptr = llvm_ptr(c), i32 = i32_t(c), i64 = mlirIntegerTypeGet(c->ctx, 64);
  MlirType params[5] = {ptr, i32, i32, i32, i64};
  kiln_ir_declare_external_func(
      module, c->loc, "kiln_cpu_assert_fail",
      mlirLLVMFunctionTypeGet(mlirLLVMVoidTypeGet(c->ctx), 5, params, false));
  char *t = strndup(text.data, text.length);
  if (!t) {
    kiln_ir_error(c->loc, "out of memory");
    return false;
  }
  AssertCtx a = {.text = kiln_ir_module_string(&c->b, c->loc, module, "kiln_assert_text", t),
                 .c = kiln_cpu_get(c, x),
                 .shape = shape,
                 .rank = rank};
  free(t);
  if (rank == 0)
    assert_body(c, NULL, &a);
  else
    kiln_cpu_nest(c, shape, rank, assert_body, &a);
  return true;
}

/* ---------------------------------------------------------------- dispatch */

bool kiln_cpu_lower_kiln_op(Cpu *c, MlirOperation op, KilnOpId id) {
  switch (id) {
  case KILN_OP_PROGRAM_ID:
  case KILN_OP_NUM_PROGRAMS: {
    int64_t axis = attr_int(op, "axis");
    KILN_ASSERT(axis >= 0 && axis < 3);
    kiln_cpu_set_scalar(c, result_of(op), id == KILN_OP_PROGRAM_ID ? c->pid[axis] : c->nprog[axis]);
    return true;
  }
  case KILN_OP_SPLAT:
    kiln_cpu_set_scalar(c, result_of(op), kiln_cpu_get(c, operand(op, 0))->scalar);
    return true;
  case KILN_OP_RANGE:
  case KILN_OP_BROADCAST:
  case KILN_OP_EXPAND_DIMS:
  case KILN_OP_TRANS:
  case KILN_OP_FLIP:
  case KILN_OP_RESIZE:
  case KILN_OP_RESHAPE: lower_view(c, op, id); return true;
  case KILN_OP_SCAN: return lower_scan(c, op);
  case KILN_OP_ADDPTR: {
    int64_t size =
        kiln_ir_elem_bytes(kiln_ir_ptr_elem(kiln_ir_elem_type(mlirValueGetType(operand(op, 0)))));
    kiln_cpu_map_pure(c, op, addptr_fn, &size, sizeof size);
    return true;
  }
  case KILN_OP_LOAD:
  case KILN_OP_STORE:
  case KILN_OP_ATOMIC_RMW:
  case KILN_OP_ATOMIC_CAS: return lower_memory(c, op, id);
  case KILN_OP_DOT: lower_dot(c, op); return true;
  case KILN_OP_REDUCE: return lower_reduce(c, op);
  case KILN_OP_RAND: {
    bool raw = !mlirTypeIsAFloat(kiln_ir_elem_type(mlirValueGetType(result_of(op))));
    if (!lower_rand_groups(c, op, raw)) kiln_cpu_map_pure(c, op, rand_fn, &raw, sizeof raw);
    return true;
  }
  case KILN_OP_PRINT: return lower_print(c, op);
  case KILN_OP_ASSERT: return lower_assert(c, op);
  default: kiln_ir_error(c->loc, "the CPU backend cannot lower this kiln op"); return false;
  }
}
