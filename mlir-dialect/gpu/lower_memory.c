/* lower_memory.c - kiln.load / kiln.store as predicated, vectorized global accesses.
 *
 * A thread's elements along the layout's fastest dim come in runs of sizePerThread; where the
 * axis analysis proves a run contiguous and aligned, `vec` consecutive elements (at most 128
 * bits) move with one vector access (ld.global.v4.b32 for 8 f16).  Masks are per element.  Where
 * the analysis proves the mask one value over each vector (its constancy along the dim, e.g.
 * `c < cols` with cols % 8 promised), the vector is one predicated instruction, `@p
 * ld.global.v4.b32` (inline PTX: LLVM splits a branch-guarded vector access into narrower pieces);
 * masked-off lanes touch no memory and a load yields `other`.  Otherwise a vector access runs only
 * when the whole vector's mask is true, and each element is loaded or stored alone under its own
 * mask (the tail of a tile).  An access of one 16-bit element a time (v = 1: nothing proven
 * aligned) under a mask is one predicated instruction too, `@p ld.global.b16`: as a branch each
 * was three blocks and a phi for LLVM (attn_bwd_dkdv 64x64 without promises: 192 a thread).  32-bit
 * elements keep the branch: as inline PTX, which LLVM does not move, the f32 attention's loads
 * (FMA dots) spilled 16 bytes on sm_90, and what they cost LLVM did not show in the time.  An i1 tile moves
 * as bytes, 0 or 1, as on the cpu target. */
#include "lower.h"

#include "mlir-c/Dialect/LLVM.h"

#include <string.h>

/* Elements per vector for the op's pointer operand: what the analysis proves, what the layout
 * keeps contiguous in one thread, and at most 128 bits. */
int low_vector_width(Low *L, MlirValue ptrs, const KilnGpuOwn *own) {
  return kiln_gpu_access_vec(L->axis, ptrs, own);
}

/* vector<N x iW> covering v elements of `bits` each (a single iW when N is 1). */
static MlirType chunk_type(Low *L, int v, int bits, int *nwords, int *wbits) {
  int total = v * bits;
  int w = total >= 32 ? 32 : total;
  int n = total / w;
  *nwords = n;
  *wbits = w;
  MlirType wt = mlirIntegerTypeGet(L->ctx, (unsigned)w);
  if (n == 1) return wt;
  int64_t shape = n;
  return mlirVectorTypeGet(1, &shape, wt);
}

static MlirNamedAttribute align_attr(Low *L, int64_t bytes) {
  return kiln_ir_named(L->ctx, "alignment", mlirIntegerAttrGet(L->i64, bytes));
}

static MlirValue load_scalar(Low *L, MlirValue p, MlirType t, int64_t align) {
  MlirNamedAttribute a = align_attr(L, align);
  return mlirOperationGetResult(low_op(L, "llvm.load", &p, 1, &t, 1, &a, 1), 0);
}

static void store_scalar(Low *L, MlirValue v, MlirValue p, int64_t align) {
  MlirValue o[2] = {v, p};
  MlirNamedAttribute a = align_attr(L, align);
  low_op(L, "llvm.store", o, 2, NULL, 0, &a, 1);
}

/* The v elements of one vector, loaded with a single access. */
static void load_vector(Low *L, MlirValue p, MlirType et, int v, int bits, MlirValue *out) {
  int nw, wb;
  MlirType ct = chunk_type(L, v, bits, &nw, &wb);
  MlirValue raw = load_scalar(L, p, ct, (int64_t)v * bits / 8);
  int64_t vs = v;
  MlirType vt = mlirVectorTypeGet(1, &vs, et);
  MlirValue vec = low_op1(L, "llvm.bitcast", &raw, 1, vt);
  for (int e = 0; e < v; e++) {
    MlirValue o[2] = {vec, low_i32(L, e)};
    out[e] = low_op1(L, "llvm.extractelement", o, 2, et);
  }
}

static void store_vector(Low *L, MlirValue p, MlirType et, int v, int bits, const MlirValue *vals) {
  int nw, wb;
  MlirType ct = chunk_type(L, v, bits, &nw, &wb);
  int64_t vs = v;
  MlirType vt = mlirVectorTypeGet(1, &vs, et);
  MlirValue vec = low_op1(L, "llvm.mlir.undef", NULL, 0, vt);
  for (int e = 0; e < v; e++) {
    MlirValue o[3] = {vec, vals[e], low_i32(L, e)};
    vec = low_op1(L, "llvm.insertelement", o, 3, vt);
  }
  MlirValue raw = low_op1(L, "llvm.bitcast", &vec, 1, ct);
  store_scalar(L, raw, p, (int64_t)v * bits / 8);
}

/* Whether the mask operand is provably one value over every vector of v elements along the
 * layout's fastest dim: a scalar, or constant in runs of at least v (runs start at multiples of
 * their length, and a vector starts at a multiple of v). */
bool low_mask_uniform(Low *L, MlirValue mask, const KilnGpuOwn *own, int v) {
  MlirType t = mlirValueGetType(mask);
  if (!mlirTypeIsARankedTensor(t)) return true;
  KilnAxisInfo a = kiln_axis_get(L->axis, mask);
  int d = own->order[0];
  return a.rank == own->rank && a.constancy[d] >= v;
}

/* Words (b32) of a vector of v elements of `bits` that one predicated instruction moves; 0 when
 * it is not 1, 2 or 4 whole words. */
static int pred_words(int v, int bits) {
  int total = v * bits;
  return total == 32 || total == 64 || total == 128 ? total / 32 : 0;
}

/* n values of type `from` as m values of type `to` with the same bits: inserted into a vector,
 * bitcast, and extracted again. */
static void repack(Low *L, const MlirValue *in, int n, MlirType from, int m, MlirType to,
                   MlirValue *out) {
  int64_t ns = n, ms = m;
  MlirType vin = mlirVectorTypeGet(1, &ns, from), vout = mlirVectorTypeGet(1, &ms, to);
  MlirValue vec = low_op1(L, "llvm.mlir.undef", NULL, 0, vin);
  for (int e = 0; e < n; e++) {
    MlirValue o[3] = {vec, in[e], low_i32(L, e)};
    vec = low_op1(L, "llvm.insertelement", o, 3, vin);
  }
  MlirValue cast = low_op1(L, "llvm.bitcast", &vec, 1, vout);
  for (int k = 0; k < m; k++) {
    MlirValue o[2] = {cast, low_i32(L, k)};
    out[k] = low_op1(L, "llvm.extractelement", o, 2, to);
  }
}

/* The v elements as `words` i32 values (a store's data, or a load's masked-off value). */
static void to_words(Low *L, const MlirValue *vals, MlirType et, int v, int words, MlirValue *out) {
  repack(L, vals, v, et, words, L->i32, out);
}

/* The inverse of to_words. */
static void from_words(Low *L, const MlirValue *words_in, int words, MlirType et, int v,
                       MlirValue *out) {
  repack(L, words_in, words, L->i32, v, et, out);
}

/* llvm.inline_asm with side effects (a load must not move across stores, nor be dropped). */
static MlirOperation pred_asm(Low *L, bool store, int words, int word_bits, const MlirValue *ops,
                              size_t n, const MlirType *res, size_t nres) {
  char text[256], cons[64];
  kiln_gpu_pred_access_ptx(store, words, word_bits, text, sizeof text, cons, sizeof cons);
  return low_asm_effects(L, text, cons, ops, n, res, nres);
}

/* One predicated vector load: `words` b32 registers start as `other` and are overwritten only
 * where pred holds. */
static void load_vector_pred(Low *L, MlirValue p, MlirValue pred, const MlirValue *other,
                             MlirType et, int v, int words, MlirValue *out) {
  MlirValue ops[2 + 4];
  ops[0] = p;
  ops[1] = pred;
  to_words(L, other, et, v, words, ops + 2);
  MlirType i32s[4] = {L->i32, L->i32, L->i32, L->i32};
  MlirType rt = words == 1 ? L->i32 : mlirLLVMStructTypeLiteralGet(L->ctx, words, i32s, false);
  MlirValue r =
      mlirOperationGetResult(pred_asm(L, false, words, 32, ops, (size_t)(2 + words), &rt, 1), 0);
  MlirValue w[4] = {r};
  for (int64_t k = 0; words > 1 && k < words; k++) {
    MlirNamedAttribute a = kiln_ir_named(L->ctx, "position", mlirDenseI64ArrayGet(L->ctx, 1, &k));
    w[k] = mlirOperationGetResult(low_op(L, "llvm.extractvalue", &r, 1, &L->i32, 1, &a, 1), 0);
  }
  from_words(L, w, words, et, v, out);
}

static void store_vector_pred(Low *L, MlirValue p, MlirValue pred, const MlirValue *vals,
                              MlirType et, int v, int words) {
  MlirValue ops[2 + 4];
  ops[0] = p;
  ops[1] = pred;
  to_words(L, vals, et, v, words, ops + 2);
  pred_asm(L, true, words, 32, ops, (size_t)(2 + words), NULL, 0);
}

/* x (of a 16- or 32-bit type) as the integer of its bits, or back (`to` the wanted type). */
static MlirValue same_bits(Low *L, MlirValue x, MlirType to) {
  if (mlirTypeEqual(mlirValueGetType(x), to)) return x;
  return low_op1(L, "llvm.bitcast", &x, 1, to);
}

/* The integer type of a lone predicated element of `bits` (16: i16); null where it keeps its
 * branch. */
static MlirType pred_scalar_type(Low *L, int bits) {
  return bits == 16 ? mlirIntegerTypeGet(L->ctx, 16) : (MlirType){NULL};
}

/* One element under mask m as one predicated instruction (`ws` its word type). */
static MlirValue load_scalar_pred(Low *L, MlirValue p, MlirValue m, MlirValue other, MlirType et,
                                  MlirType ws) {
  MlirValue ops[3] = {p, m, same_bits(L, other, ws)};
  int wb = (int)mlirIntegerTypeGetWidth(ws);
  return same_bits(L, mlirOperationGetResult(pred_asm(L, false, 1, wb, ops, 3, &ws, 1), 0), et);
}

static void store_scalar_pred(Low *L, MlirValue p, MlirValue m, MlirValue val, MlirType ws) {
  MlirValue ops[3] = {p, m, same_bits(L, val, ws)};
  pred_asm(L, true, 1, (int)mlirIntegerTypeGetWidth(ws), ops, 3, NULL, 0);
}

/* and of the masks of one vector; null when all are constant true. */
MlirValue low_all_true(Low *L, const MlirValue *m, int v) {
  MlirValue acc = {NULL};
  for (int e = 0; e < v; e++) {
    if (low_is_true(m[e])) continue;
    acc = mlirValueIsNull(acc) ? m[e] : low_bin(L, "arith.andi", acc, m[e]);
  }
  return acc;
}

/* One element under its own mask: the loaded value, or `other`. */
MlirValue low_load_masked(Low *L, MlirValue p, MlirValue m, MlirValue other, MlirType et,
                          int64_t align) {
  if (low_is_true(m)) return load_scalar(L, p, et, align);
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, m, &et, 1);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  MlirValue v = load_scalar(L, p, et, align);
  kiln_ir_build_yield(&L->b, L->loc, &v, 1);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  kiln_ir_build_yield(&L->b, L->loc, &other, 1);
  L->b = saved;
  return kiln_ir_if_result(&f, 0);
}

/* i1 tiles live in memory as one byte per element, as on the cpu target: a store writes the
 * bool zero-extended (0 or 1), a load reads the byte and tests it (`!= 0`, the cast to i1), so
 * any nonzero byte written elsewhere reads as true.  The accesses themselves are byte accesses,
 * vectorized as i8's are. */
static Vals *bools_as_bytes(Low *L, const Vals *b) {
  Vals *out = low_vals(L, b->n);
  for (int64_t j = 0; j < b->n; j++) out->v[j] = low_op1(L, "arith.extui", &b->v[j], 1, L->i8);
  return out;
}

static Vals *bytes_as_bools(Low *L, const Vals *bytes) {
  Vals *out = low_vals(L, bytes->n);
  MlirValue zero = low_const(L, L->i8, mlirIntegerAttrGet(L->i8, 0));
  for (int64_t j = 0; j < bytes->n; j++) out->v[j] = low_cmpi(L, "ne", bytes->v[j], zero);
  return out;
}

bool low_load(Low *L, MlirOperation op) {
  MlirValue ptrs = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  Vals *P = low_get(L, ptrs), *M = low_get(L, mlirOperationGetOperand(op, 1));
  Vals *O = low_get(L, mlirOperationGetOperand(op, 2));
  MlirType rt = mlirValueGetType(res);
  MlirType et = kiln_ir_elem_type(rt);
  bool bools = kiln_ir_elem_bits(et) == 1;
  if (bools) { /* bytes in memory: `other` as a byte, the bytes tested after */
    O = bools_as_bytes(L, O);
    et = L->i8;
  }
  int bits = kiln_ir_elem_bits(et);
  KilnGpuOwn own = kiln_gpu_own_of_type(rt);
  int v = low_vector_width(L, ptrs, &own);
  Vals *out = low_vals(L, own.count);
  int64_t ealign = bits / 8;
  MlirType ws = pred_scalar_type(L, bits);
  int words = v > 1 && low_mask_uniform(L, mlirOperationGetOperand(op, 1), &own, v)
                  ? pred_words(v, bits)
                  : 0;
  for (int64_t j = 0; j < own.count; j += v) {
    MlirValue m[16];
    for (int e = 0; e < v; e++) m[e] = M->v[M->n == 1 ? 0 : j + e];
    if (v == 1) {
      MlirValue p = P->v[P->n == 1 ? 0 : j], other = O->v[O->n == 1 ? 0 : j];
      out->v[j] = !low_is_true(m[0]) && !mlirTypeIsNull(ws)
                      ? load_scalar_pred(L, p, m[0], other, et, ws)
                      : low_load_masked(L, p, m[0], other, et, ealign);
      continue;
    }
    MlirValue all = low_all_true(L, m, v);
    if (mlirValueIsNull(all)) {
      load_vector(L, P->v[j], et, v, bits, &out->v[j]);
      continue;
    }
    if (words) {
      MlirValue other[16];
      for (int e = 0; e < v; e++) other[e] = O->v[O->n == 1 ? 0 : j + e];
      load_vector_pred(L, P->v[j], m[0], other, et, v, words, &out->v[j]);
      continue;
    }
    MlirType types[16];
    for (int e = 0; e < v; e++) types[e] = et;
    KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, all, types, (size_t)v);
    KilnIRBuilder saved = L->b;
    MlirValue got[16];
    kiln_ir_builder_set_end(&L->b, f.then_block);
    load_vector(L, P->v[j], et, v, bits, got);
    kiln_ir_build_yield(&L->b, L->loc, got, (size_t)v);
    kiln_ir_builder_set_end(&L->b, f.else_block);
    for (int e = 0; e < v; e++)
      got[e] = low_load_masked(L, P->v[j + e], m[e], O->v[O->n == 1 ? 0 : j + e], et, ealign);
    kiln_ir_build_yield(&L->b, L->loc, got, (size_t)v);
    L->b = saved;
    for (int e = 0; e < v; e++) out->v[j + e] = kiln_ir_if_result(&f, (intptr_t)e);
  }
  low_set(L, res, bools ? bytes_as_bools(L, out) : out);
  return true;
}

static void store_masked(Low *L, MlirValue p, MlirValue val, MlirValue m, int64_t align) {
  if (low_is_true(m)) {
    store_scalar(L, val, p, align);
    return;
  }
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, m, NULL, 0);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  store_scalar(L, val, p, align);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  L->b = saved;
}

bool low_store(Low *L, MlirOperation op) {
  MlirValue ptrs = mlirOperationGetOperand(op, 0);
  Vals *P = low_get(L, ptrs), *V = low_get(L, mlirOperationGetOperand(op, 1));
  Vals *M = low_get(L, mlirOperationGetOperand(op, 2));
  MlirType vt = mlirValueGetType(mlirOperationGetOperand(op, 1));
  MlirType et = kiln_ir_elem_type(vt);
  if (kiln_ir_elem_bits(et) == 1) { /* bytes in memory */
    V = bools_as_bytes(L, V);
    et = L->i8;
  }
  int bits = kiln_ir_elem_bits(et);
  KilnGpuOwn own = kiln_gpu_own_of_type(mlirValueGetType(ptrs));
  int v = low_vector_width(L, ptrs, &own);
  int64_t ealign = bits / 8;
  MlirType ws = pred_scalar_type(L, bits);
  int words = v > 1 && low_mask_uniform(L, mlirOperationGetOperand(op, 2), &own, v)
                  ? pred_words(v, bits)
                  : 0;
  for (int64_t j = 0; j < own.count; j += v) {
    MlirValue m[16];
    for (int e = 0; e < v; e++) m[e] = M->v[M->n == 1 ? 0 : j + e];
    if (v == 1) {
      MlirValue p = P->v[P->n == 1 ? 0 : j], val = V->v[V->n == 1 ? 0 : j];
      if (!low_is_true(m[0]) && !mlirTypeIsNull(ws))
        store_scalar_pred(L, p, m[0], val, ws);
      else
        store_masked(L, p, val, m[0], ealign);
      continue;
    }
    MlirValue all = low_all_true(L, m, v);
    if (mlirValueIsNull(all)) {
      store_vector(L, P->v[j], et, v, bits, &V->v[j]);
      continue;
    }
    if (words) {
      store_vector_pred(L, P->v[j], m[0], &V->v[j], et, v, words);
      continue;
    }
    KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, all, NULL, 0);
    KilnIRBuilder saved = L->b;
    kiln_ir_builder_set_end(&L->b, f.then_block);
    store_vector(L, P->v[j], et, v, bits, &V->v[j]);
    kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
    kiln_ir_builder_set_end(&L->b, f.else_block);
    for (int e = 0; e < v; e++) store_masked(L, P->v[j + e], V->v[j + e], m[e], ealign);
    kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
    L->b = saved;
  }
  return true;
}

/* ---------------------------------------------------------------- atomics
 *
 * kiln.atomic_rmw: one relaxed llvm.atomicrmw (NVPTX: atom.global.*, or a CAS loop on the word
 * for a narrow cell: atomic_elem) per element the thread owns,
 * under the element's mask.  A layout may give several threads the same element (a slice's removed
 * dim, a dim without thread bits, a tile smaller than the CTA's extent, a scalar): only one of them
 * may update memory, or the element is counted several times.  The owner is the thread whose lane
 * and warp bits that select no element are zero and whose unwrapped coordinate along every wrapped
 * dim is below the size.  Masked-off lanes get 0 as the old value; where elements are replicated
 * and the old values are used, the owners share theirs through shared memory (broadcast_old). */

/* The owner predicate of `own` (null when every thread owns its elements alone); *replicated
 * tells whether some element has several holders. */
MlirValue low_owner(Low *L, const KilnGpuOwn *own, bool *replicated) {
  uint32_t lane_used = 0, warp_used = 0;
  MlirValue pred = {NULL};
  *replicated = false;
  for (int d = 0; d < own->rank; d++) {
    const KilnGpuDimMap *m = &own->dim[d];
    if (!m->base_used) continue;
    lane_used |= ((1u << m->lane_bits) - 1u) << m->lane_shift;
    warp_used |= ((1u << m->warp_bits) - 1u) << m->warp_shift;
    if (m->size < m->extent) {
      /* raw chunk start = warp_field * warp_mul + lane_field * lane_mul; copies wrap past size */
      *replicated = true;
      MlirValue lf = low_bin(L, "arith.andi",
                             low_bin(L, "arith.shrui", low_lane(L), low_i32(L, m->lane_shift)),
                             low_i32(L, (1 << m->lane_bits) - 1));
      MlirValue wf = low_bin(L, "arith.andi",
                             low_bin(L, "arith.shrui", low_warp(L), low_i32(L, m->warp_shift)),
                             low_i32(L, (1 << m->warp_bits) - 1));
      MlirValue raw =
          low_bin(L, "arith.addi", low_bin(L, "arith.muli", wf, low_i32(L, m->warp_mul)),
                  low_bin(L, "arith.muli", lf, low_i32(L, m->lane_mul)));
      MlirValue c = low_cmpi(L, "ult", raw, low_i32(L, m->size));
      pred = mlirValueIsNull(pred) ? c : low_bin(L, "arith.andi", pred, c);
    }
  }
  uint32_t lane_free = (KILN_GPU_WARP - 1) & ~lane_used;
  uint32_t warp_free = (uint32_t)(L->num_warps - 1) & ~warp_used;
  if (lane_free) {
    MlirValue c = low_cmpi(L, "eq", low_bin(L, "arith.andi", low_lane(L), low_i32(L, lane_free)),
                           low_i32(L, 0));
    pred = mlirValueIsNull(pred) ? c : low_bin(L, "arith.andi", pred, c);
    *replicated = true;
  }
  if (warp_free) {
    MlirValue c = low_cmpi(L, "eq", low_bin(L, "arith.andi", low_warp(L), low_i32(L, warp_free)),
                           low_i32(L, 0));
    pred = mlirValueIsNull(pred) ? c : low_bin(L, "arith.andi", pred, c);
    *replicated = true;
  }
  return pred;
}

/* Row-major index of list position j of `own` in its tile (an i32 value). */
static MlirValue linear_index(Low *L, const KilnGpuOwn *own, int64_t j) {
  MlirValue idx = low_i32(L, 0);
  int64_t stride = 1;
  for (int d = own->rank - 1; d >= 0; d--) {
    MlirValue c = low_coord(L, own, j, d);
    idx = low_bin(L, "arith.addi", idx,
                  stride == 1 ? c : low_bin(L, "arith.muli", c, low_i32(L, stride)));
    stride *= own->shape[d];
  }
  return idx;
}

/* The old values of an atomic on a replicating layout: only the owner of each element ran the
 * atomic (the other holders got 0), so the owners publish theirs in shared memory, at the
 * element's row-major index, and every holder reads it back.  Masked-off elements publish 0. */
static void broadcast_old(Low *L, const KilnGpuOwn *own, MlirValue owner, MlirType et, Vals *out) {
  int64_t elems = 1, bytes = kiln_ir_elem_bytes(et);
  for (int d = 0; d < own->rank; d++) elems *= own->shape[d];
  low_barrier(L); /* warps may still be reading the arena for an earlier op */
  MlirValue base = low_smem(L, 0, elems * bytes);
  KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, owner, NULL, 0);
  KilnIRBuilder saved = L->b;
  kiln_ir_builder_set_end(&L->b, f.then_block);
  for (int64_t j = 0; j < own->count; j++)
    store_scalar(L, out->v[j], low_gep(L, base, linear_index(L, own, j), et), bytes);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  kiln_ir_builder_set_end(&L->b, f.else_block);
  kiln_ir_build_yield(&L->b, L->loc, NULL, 0);
  L->b = saved;
  low_barrier(L);
  for (int64_t j = 0; j < own->count; j++)
    out->v[j] = load_scalar(L, low_gep(L, base, linear_index(L, own, j), et), et, bytes);
}

/* One element's atomic: llvm.atomicrmw (relaxed) for kiln.atomic_rmw, llvm.cmpxchg for
 * kiln.atomic_cas (acq_rel where it succeeds, monotonic where it fails: atom.acq_rel.gpu.cas
 * on sm_70 and later), whose old value is the first of its {old, success} pair.  Every width
 * alike: for 32 and 64 bits NVPTX selects atom.global.{add,min,max}.{s,u}{32,64},
 * add.f{32,64} (sm_60 and later), exch.b{32,64} and cas.b{32,64}, and a float max/min is a CAS
 * loop on the bits.  8- and 16-bit cells: f16 add is atom.global.add.noftz.f16 (sm_70 and
 * later), bf16 add atom.global.add.noftz.bf16 on sm_90; everything else (bf16 add on sm_80
 * included) is LLVM's expansion of a narrow atomic, a loop of atom.global.cas.b32 on the
 * aligned word that holds the cell, which computes the new cell and keeps the word's other
 * bytes as they were found (a neighbour updated meanwhile makes the CAS fail and retry). */
static MlirValue atomic_elem(Low *L, bool cas, MlirValue p, MlirValue cmp, MlirValue v, MlirType et,
                             int64_t bin_op) {
  if (!cas) {
    MlirNamedAttribute a[2] = {
        kiln_ir_named(L->ctx, "bin_op", mlirIntegerAttrGet(L->i64, bin_op)),
        kiln_ir_named(L->ctx, "ordering", mlirIntegerAttrGet(L->i64, 2 /* monotonic */))};
    MlirValue o[2] = {p, v};
    return mlirOperationGetResult(low_op(L, "llvm.atomicrmw", o, 2, &et, 1, a, 2), 0);
  }
  /* a float cell is compared and swapped by its bits (cmpxchg takes integers) */
  bool fl = mlirTypeIsAFloat(et);
  MlirType bits = fl ? mlirIntegerTypeGet(L->ctx, (unsigned)kiln_ir_elem_bits(et)) : et;
  if (fl) {
    cmp = low_op1(L, "llvm.bitcast", &cmp, 1, bits);
    v = low_op1(L, "llvm.bitcast", &v, 1, bits);
  }
  MlirType pair[2] = {bits, mlirIntegerTypeGet(L->ctx, 1)};
  MlirType rt = mlirLLVMStructTypeLiteralGet(L->ctx, 2, pair, false);
  MlirNamedAttribute a[2] = {
      kiln_ir_named(L->ctx, "success_ordering", mlirIntegerAttrGet(L->i64, 6 /* acq_rel */)),
      kiln_ir_named(L->ctx, "failure_ordering", mlirIntegerAttrGet(L->i64, 2 /* monotonic */))};
  MlirValue o[3] = {p, cmp, v};
  MlirValue r = mlirOperationGetResult(low_op(L, "llvm.cmpxchg", o, 3, &rt, 1, a, 2), 0);
  int64_t zero = 0;
  MlirNamedAttribute pos =
      kiln_ir_named(L->ctx, "position", mlirDenseI64ArrayGet(L->ctx, 1, &zero));
  MlirValue old =
      mlirOperationGetResult(low_op(L, "llvm.extractvalue", &r, 1, &bits, 1, &pos, 1), 0);
  return fl ? low_op1(L, "llvm.bitcast", &old, 1, et) : old;
}

/* An acq_rel fence at GPU scope: NVPTX takes the ordering of a cmpxchg for relaxed (a plain
 * atom.cas), so atomic_cas brings its own fences, one before (release: what this program wrote
 * first is seen by whoever acquires next) and one after (acquire). */
static void acq_rel_fence(Low *L) { low_asm_effects(L, KILN_GPU_FENCE_PTX, "", NULL, 0, NULL, 0); }

bool low_atomic(Low *L, MlirOperation op) {
  bool cas = kiln_ir_op_id(op) == KILN_OP_ATOMIC_CAS;
  MlirValue ptrs = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  Vals *P = low_get(L, ptrs), *C = cas ? low_get(L, mlirOperationGetOperand(op, 1)) : NULL;
  Vals *V = low_get(L, mlirOperationGetOperand(op, cas ? 2 : 1));
  Vals *M = low_get(L, mlirOperationGetOperand(op, cas ? 3 : 2));
  if (L->failed) return false;
  MlirType rt = mlirValueGetType(res);
  MlirType et = kiln_ir_elem_type(rt);
  int bits = kiln_ir_elem_bits(et);
  if (bits < 8) {
    low_error(L, "GPU lowering: atomics on i1 are not supported");
    return false;
  }
  int64_t bin_op = 0;
  if (!cas && !kiln_ir_atomic_bin_op(op, et, &bin_op)) {
    low_error(L, "GPU lowering: unknown atomic kind");
    return false;
  }
  KilnGpuOwn own = kiln_gpu_own_of_type(mlirValueGetType(ptrs));
  bool replicated;
  MlirValue owner = low_owner(L, &own, &replicated);
  MlirValue zero = low_const(L, et,
                             mlirTypeIsAFloat(et) ? mlirFloatAttrDoubleGet(L->ctx, et, 0.0)
                                                  : mlirIntegerAttrGet(et, 0));
  if (cas) {
    /* every thread's earlier writes happen before the owners' CAS (a lock released by thread 0
     * releases what the whole program stored under it) */
    low_barrier(L);
    acq_rel_fence(L);
  }
  Vals *out = low_vals(L, own.count);
  for (int64_t j = 0; j < own.count; j++) {
    MlirValue m = M->v[M->n == 1 ? 0 : j];
    if (!mlirValueIsNull(owner)) m = low_is_true(m) ? owner : low_bin(L, "arith.andi", m, owner);
    MlirValue p = P->v[P->n == 1 ? 0 : j], v = V->v[V->n == 1 ? 0 : j];
    MlirValue cmp = cas ? C->v[C->n == 1 ? 0 : j] : (MlirValue){NULL};
    if (low_is_true(m)) {
      out->v[j] = atomic_elem(L, cas, p, cmp, v, et, bin_op);
      continue;
    }
    KilnIRIf f = kiln_ir_build_if(&L->b, L->loc, m, &et, 1);
    KilnIRBuilder saved = L->b;
    kiln_ir_builder_set_end(&L->b, f.then_block);
    MlirValue old = atomic_elem(L, cas, p, cmp, v, et, bin_op);
    kiln_ir_build_yield(&L->b, L->loc, &old, 1);
    kiln_ir_builder_set_end(&L->b, f.else_block);
    kiln_ir_build_yield(&L->b, L->loc, &zero, 1);
    L->b = saved;
    out->v[j] = kiln_ir_if_result(&f, 0);
  }
  if (cas) acq_rel_fence(L);
  if (replicated && !mlirOpOperandIsNull(mlirValueGetFirstUse(res)))
    broadcast_old(L, &own, owner, et, out);
  low_set(L, res, out);
  return true;
}
