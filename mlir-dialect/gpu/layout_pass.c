/* layout_pass.c - kiln-gpu-layouts: give every tile of every kernel a layout encoding.
 *
 * How this works.  Each tile value gets one "defined" layout (the layout its producer writes it
 * in); each use may "require" a layout (the layout the consumer reads it in).  Where the two
 * differ the pass inserts kiln.convert_layout, so the aim is to choose defined layouts that make
 * requirements agree:
 *   1. Anchors: every load and store whose pointer tile has a contiguous dim gets a blocked
 *      layout from the axis analysis: order = dims by contiguity (most contiguous first), the
 *      vector width (up to 128 bits) as sizePerThread along order[0], lanes then warps along
 *      `order` (coalescing: consecutive lanes touch consecutive vectors).  A load's result is
 *      defined by its anchor; a store requires its anchor on all operands.  Anchors of the same
 *      shape and order take the widest vector among them (one layout per elementwise chain).
 *   2. Propagation, to a fixpoint: backwards, an undefined operand takes the layout its
 *      consumer requires (elementwise ops require their result's layout of every tile operand,
 *      expand_dims the slice of it, a reduce whose result is a slice its parent, loops and ifs
 *      tie inits / iter args / yields / results together); forwards, an undefined result takes
 *      its operand's layout (elementwise), slice{axis, operand} (reduce), or the parent of a
 *      slice (expand_dims).  What is still undefined gets a plain row-major blocked layout and
 *      propagation runs again.
 *   Before propagation, a dot on f16/bf16 tiles with an f32 accumulator whose tile holds at least
 *   one 16x8 mma block per warp gets the mma layout for its result (and so, backwards, for its
 *   accumulator, loop-carried or a constant) and requires dot_op{0|1} of its a and b.  A dot
 *   whose result is reduced along rows or feeds another dot's A (attention's S), or whose A
 *   comes from a dot (O += P V), splits its warps along rows only, so row statistics stay inside
 *   a warp and S's accumulator registers are P's A registers.  A seeding round then propagates
 *   mma layouts (and slices of them) forwards only, through arithmetic, reductions, shape ops,
 *   loop yields and scf.if results, before any memory anchor propagates backwards: the online
 *   softmax stays in the fragments.  Only arithmetic, math, shape ops, range, reduce, rand,
 *   dots and loops/ifs take mma layouts; memory ops stay blocked.  Nothing produces a dot_op
 *   layout but a convert_layout (shared staging and ldmatrix, or registers from an mma
 *   accumulator of the same warps: lower_dot.c).
 *   3. Materialization: types get their encodings, convert_layout goes where a use disagrees,
 *      and avoidable converts are removed: a convert to the same layout disappears, converts of
 *      converts collapse, and a convert of a splat / range / constant becomes a copy of that
 *      cheap producer in the wanted layout.  A convert of a loop-invariant value goes before the
 *      loop (unless it makes dot fragments of more than 32 registers), and a trans of a
 *      loop-invariant tile is moved out of the loop first. */
#include "gpu_internal.h"

typedef struct LCtx {
  MlirContext ctx;
  int num_warps;
  KilnAxisMap *axis;
  KilnPtrMap defined; /* value ptr -> KilnGpuLayout* */
  KilnPtrMap anchor;  /* op ptr -> KilnGpuLayout* (strong memory anchors) */
  KilnGpuLayout **owned;
  size_t n_owned, cap_owned;
  MlirOperation *ops; /* every op of the kernel, pre-order */
  size_t n_ops, cap_ops;
  bool changed;
  bool mma_only; /* the seeding round: forward propagation of mma layouts only */
  bool wgmma;    /* the config asks for warpgroup MMA (kiln.wgmma) and the target is sm_90 */
} LCtx;

static KilnGpuLayout *keep(LCtx *c, const KilnGpuLayout *l) {
  KilnGpuLayout *p = malloc(sizeof *p);
  KILN_ASSERT(p != NULL);
  *p = *l;
  if (c->n_owned == c->cap_owned) {
    c->cap_owned = c->cap_owned ? c->cap_owned * 2 : 64;
    c->owned = realloc(c->owned, c->cap_owned * sizeof *c->owned);
    KILN_ASSERT(c->owned != NULL);
  }
  c->owned[c->n_owned++] = p;
  return p;
}

static bool is_tile(MlirValue v) { return mlirTypeIsARankedTensor(mlirValueGetType(v)); }

static const KilnGpuLayout *defined(LCtx *c, MlirValue v) {
  return kiln_ptr_map_get(&c->defined, v.ptr);
}

static int64_t shape_of(MlirValue v, int64_t *shape) {
  MlirType t = mlirValueGetType(v);
  int r = kiln_ir_rank(t);
  int64_t n = 1;
  for (int i = 0; i < r; i++) n *= (shape[i] = kiln_ir_dim(t, i));
  return n;
}

static KilnGpuLayout default_layout(LCtx *c, MlirValue v) {
  int64_t shape[KILN_GPU_MAX_RANK];
  shape_of(v, shape);
  return kiln_gpu_layout_blocked(kiln_ir_rank(mlirValueGetType(v)), shape, c->num_warps, 1, NULL);
}

/* The coalesced layout for a memory op through pointer tile `ptrs`; false when nothing is
 * contiguous (a gather: the op then follows its neighbours). */
static bool memory_anchor(LCtx *c, MlirValue ptrs, KilnGpuLayout *out) {
  if (!is_tile(ptrs)) return false;
  MlirType t = mlirValueGetType(ptrs);
  int rank = kiln_ir_rank(t);
  int64_t shape[KILN_GPU_MAX_RANK];
  int64_t numel = shape_of(ptrs, shape);
  KilnAxisInfo ai = kiln_axis_get(c->axis, ptrs);
  int order[KILN_GPU_MAX_RANK];
  for (int i = 0; i < rank; i++) order[i] = rank - 1 - i;
  /* Stable sort by contiguity, most contiguous first; ties keep row-major. */
  for (int i = 1; i < rank; i++)
    for (int j = i; j > 0 && ai.contig[order[j]] > ai.contig[order[j - 1]]; j--) {
      int tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  if (ai.contig[order[0]] <= 1) return false;
  int vec = kiln_axis_vec(c->axis, ptrs, order[0],
                          kiln_ir_elem_bits(kiln_ir_ptr_elem(kiln_ir_elem_type(t))));
  /* No wider than what keeps every thread busy with distinct elements. */
  int64_t per_thread = numel / ((int64_t)KILN_GPU_WARP * c->num_warps);
  if (per_thread < 1) per_thread = 1;
  while (vec > per_thread) vec /= 2;
  *out = kiln_gpu_layout_blocked(rank, shape, c->num_warps, vec, order);
  return true;
}

/* Whether two anchored pointer tiles have the same shape and blocked dim order. */
static bool same_shape_and_order(MlirValue pa, const KilnGpuLayout *a, MlirValue pb,
                                 const KilnGpuLayout *b) {
  if (a->kind != KILN_GPU_LAYOUT_BLOCKED || b->kind != KILN_GPU_LAYOUT_BLOCKED ||
      a->rank != b->rank)
    return false;
  int64_t sa[KILN_GPU_MAX_RANK], sb[KILN_GPU_MAX_RANK];
  shape_of(pa, sa);
  shape_of(pb, sb);
  for (int d = 0; d < a->rank; d++)
    if (sa[d] != sb[d] || a->order[d] != b->order[d]) return false;
  return true;
}

/* One layout per elementwise chain: memory anchors of the same tile shape and dim order that
 * differ only in their vector width (AdamW's f32 loads want 4 elements per thread, its f16 store
 * 8) all take the widest, so the loads, the math between them and the stores agree and no
 * convert_layout (a shared-memory round trip behind two barriers) goes between them.  An access
 * narrower than its layout's run simply issues several vectors per thread (the 16 bytes of each
 * stay one instruction).  Chains of other shapes (a row's [BLOCK] next to a tile's [R, C]) are
 * left to the converts. */
static void unify_anchors(LCtx *c) {
  for (size_t i = 0; i < c->n_ops; i++) {
    KilnGpuLayout *a = kiln_ptr_map_get(&c->anchor, c->ops[i].ptr);
    if (!a || a->kind != KILN_GPU_LAYOUT_BLOCKED) continue;
    MlirValue pa = mlirOperationGetOperand(c->ops[i], 0);
    int d = a->order[0], widest = a->spt[d];
    for (size_t j = 0; j < c->n_ops; j++) {
      const KilnGpuLayout *b = kiln_ptr_map_get(&c->anchor, c->ops[j].ptr);
      if (b && same_shape_and_order(pa, a, mlirOperationGetOperand(c->ops[j], 0), b) &&
          b->spt[d] > widest)
        widest = b->spt[d];
    }
    if (widest > a->spt[d]) {
      int64_t shape[KILN_GPU_MAX_RANK];
      shape_of(pa, shape);
      *a = kiln_gpu_layout_blocked(a->rank, shape, c->num_warps, widest, a->order);
    }
  }
}

static bool is_elementwise(MlirOperation op) {
  MlirStringRef nm = mlirIdentifierStr(mlirOperationGetName(op));
  return mlirOperationGetNumResults(op) == 1 &&
         ((nm.length > 6 && memcmp(nm.data, "arith.", 6) == 0) ||
          (nm.length > 5 && memcmp(nm.data, "math.", 5) == 0));
}

/* Whether v reaches, through element-wise ops (and the yields of an scf.if), a reduction along
 * rows (axis 1) or the A operand of a dot: then a warp should own whole rows of v. */
static bool feeds_row_use(MlirValue v, int depth) {
  if (depth > 12) return false;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    intptr_t at = mlirOpOperandGetOperandNumber(u);
    KilnOpId id = kiln_ir_op_id(user);
    if (id == KILN_OP_REDUCE && kiln_gpu_int_attr(user, "axis", 0) == 1) return true;
    if (id == KILN_OP_DOT && at == 0) return true;
    if (is_elementwise(user) && feeds_row_use(mlirOperationGetResult(user, 0), depth + 1))
      return true;
    if (kiln_ir_op_is(user, "scf.yield")) {
      MlirOperation parent = mlirOperationGetParentOperation(user);
      if (kiln_ir_op_is(parent, "scf.if") && at < mlirOperationGetNumResults(parent) &&
          feeds_row_use(mlirOperationGetResult(parent, at), depth + 1))
        return true;
    }
  }
  return false;
}

/* Whether v is computed, through element-wise ops (and scf.if results), from a dot's result. */
static bool from_dot(MlirValue v, int depth) {
  if (depth > 12 || mlirValueIsABlockArgument(v)) return false;
  MlirOperation p = mlirOpResultGetOwner(v);
  if (kiln_ir_op_id(p) == KILN_OP_DOT) return true;
  if (is_elementwise(p)) {
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(p); i++)
      if (from_dot(mlirOperationGetOperand(p, i), depth + 1)) return true;
    return false;
  }
  if (kiln_ir_op_is(p, "scf.if")) {
    intptr_t n = mlirOpResultGetResultNumber(v);
    for (intptr_t r = 0; r < mlirOperationGetNumRegions(p); r++) {
      MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(p, r));
      if (mlirBlockIsNull(b)) continue;
      MlirOperation y = mlirBlockGetTerminator(b);
      if (n < mlirOperationGetNumOperands(y) && from_dot(mlirOperationGetOperand(y, n), depth + 1))
        return true;
    }
  }
  return false;
}

/* Flash attention's rule: a dot whose result is reduced along rows or feeds the next dot as A
 * (S = Q K^T), or whose A operand is such a result (O += P V), splits its warps along rows
 * only.  Each warp then owns whole rows: the row max and sum need no exchange between warps,
 * and the accumulator fragments of S are, register for register, the A fragments of P. */
static bool wants_rows_only(MlirOperation dot) {
  return feeds_row_use(mlirOperationGetResult(dot, 0), 0) ||
         from_dot(mlirOperationGetOperand(dot, 0), 0);
}

/* Whether the dot's B is the transpose (kiln.trans) of a tile: the pipeliner stages the tile as
 * it is, so a descriptor reads B k-major (rows n of K elements: K^T of S = Q K^T). */
static bool b_through_view(MlirOperation dot) {
  MlirValue b = mlirOperationGetOperand(dot, 1);
  return !mlirValueIsABlockArgument(b) && kiln_ir_op_id(mlirOpResultGetOwner(b)) == KILN_OP_TRANS;
}

/* Whether a dot of M x N x K fits sm_90's wgmma (docs/gpu-lowering.md, "wgmma"): whole
 * warpgroups, each m64 instruction on 64 rows of one warpgroup (M a multiple of 16 x
 * num_warps), one instruction as wide as the tile (up to 256: N a multiple of 64, so an n-major
 * B stages in whole 128-byte swizzle panels; of 8 for an f16/bf16 B read k-major through a
 * view, whose staged rows are its n rows, 8 to a descriptor's row group), K in whole steps
 * within one 128-byte row of a k-major operand: 16, 32 or 64 of f16/bf16 (k16 steps), 8, 16 or
 * 32 of tf32 (k8 steps).  Others stay on mma.sync. */
static bool wgmma_fits(const LCtx *c, int64_t M, int64_t N, int64_t K, bool tf32, bool b_view) {
  int64_t k_row = tf32 ? 32 : 64; /* elements of a 128-byte row */
  int64_t n_step = b_view && !tf32 ? 8 : 64;
  return c->num_warps % 4 == 0 && M % (16 * c->num_warps) == 0 && N % n_step == 0 && N <= 256 &&
         (K == k_row / 4 || K == k_row / 2 || K == k_row);
}

/* The dim along which the load that v is reads memory contiguously (its anchor's order[0]),
 * through one kiln.trans view (which swaps it); -1 when v is neither. */
static int loaded_contiguous_dim(const LCtx *c, MlirValue v) {
  if (mlirValueIsABlockArgument(v)) return -1;
  MlirOperation def = mlirOpResultGetOwner(v);
  bool view = kiln_ir_op_id(def) == KILN_OP_TRANS;
  if (view) {
    MlirValue x = mlirOperationGetOperand(def, 0);
    if (mlirValueIsABlockArgument(x)) return -1;
    def = mlirOpResultGetOwner(x);
  }
  if (kiln_ir_op_id(def) != KILN_OP_LOAD) return -1;
  const KilnGpuLayout *a = kiln_ptr_map_get(&c->anchor, def.ptr);
  if (!a || a->kind != KILN_GPU_LAYOUT_BLOCKED || a->rank != 2) return -1;
  return view ? 1 - a->order[0] : a->order[0];
}

/* A tf32 wgmma reads both operands K-major (the PTX ISA has no transpose for tf32): A a load
 * contiguous along k (dim 1: x of y = x W^T), B one contiguous along k (dim 0: W^T read with
 * sbk = 1, or the transpose of a load with rows n).  The m- or n-major operands of dX and dW
 * stay on mma.sync, whose fragments are gathered by 32-bit loads. */
static bool tf32_k_major(const LCtx *c, MlirOperation dot) {
  return loaded_contiguous_dim(c, mlirOperationGetOperand(dot, 0)) == 1 &&
         loaded_contiguous_dim(c, mlirOperationGetOperand(dot, 1)) == 0;
}

/* The mma layout for a dot's result, when the dot can run on tensor cores: a and b f16 or bf16
 * (the same) with an f32 accumulator, both i8 with an i32 one (K a multiple of 32) or f32 ones
 * with the tf32 flag (K a multiple of 8), and a tile the warps can split into whole 16x8 blocks
 * (warps go to whichever of the rows / columns per warp is larger, so warp tiles stay near
 * square and each warp's ldmatrix loads are reused across more mma instructions). */
static bool mma_for_dot(LCtx *c, MlirOperation dot, KilnGpuLayout *out) {
  MlirType at = mlirValueGetType(mlirOperationGetOperand(dot, 0));
  MlirType bt = mlirValueGetType(mlirOperationGetOperand(dot, 1));
  MlirType ct = mlirValueGetType(mlirOperationGetResult(dot, 0));
  if (kiln_ir_rank(at) != 2 || kiln_ir_rank(bt) != 2 || kiln_ir_rank(ct) != 2) return false;
  MlirType ae = kiln_ir_elem_type(at), be = kiln_ir_elem_type(bt), ce = kiln_ir_elem_type(ct);
  bool f16 = mlirTypeIsAF16(ae) && mlirTypeIsAF16(be),
       bf16 = mlirTypeIsABF16(ae) && mlirTypeIsABF16(be);
  bool i8 = mlirTypeIsAInteger(ae) && mlirIntegerTypeGetWidth(ae) == 8 && mlirTypeEqual(ae, be) &&
            mlirTypeIsAInteger(ce) && mlirIntegerTypeGetWidth(ce) == 32;
  /* f32 only when the dot asks for tf32: without it an f32 dot keeps IEEE products (FMA path) */
  bool tf32 =
      mlirTypeIsAF32(ae) && mlirTypeIsAF32(be) && mlirTypeIsAF32(ce) && kiln_ir_dot_is_tf32(dot);
  if (!(((f16 || bf16) && mlirTypeIsAF32(ce)) || i8 || tf32)) return false;
  /* k blocks of 16 (m16n8k16) for the 16-bit types, of 32 (m16n8k32) for i8, of 8 (m16n8k8)
   * for tf32 */
  int64_t kblk = i8 ? 32 : tf32 ? 8 : 16;
  int64_t M = kiln_ir_dim(ct, 0), N = kiln_ir_dim(ct, 1), K = kiln_ir_dim(at, 1);
  if (M < 16 || N < 8 || K < kblk || M % 16 || N % 8 || K % kblk) return false;
  if (c->wgmma && (f16 || bf16 || (tf32 && tf32_k_major(c, dot))) &&
      wgmma_fits(c, M, N, K, tf32, b_through_view(dot))) {
    /* wgmma's accumulator is the mma layout with every warp on its own 16 rows: warp w of
     * warpgroup g holds rows 64 g + 16 (w % 4) of each m64 instruction, all N columns (the
     * layout flash attention's rows-only rule gives too) */
    *out = kiln_gpu_layout_mma(c->num_warps, 1);
    mlirOperationSetAttributeByName(dot, mlirStringRefCreateFromCString(KILN_GPU_WGMMA_DOT_ATTR),
                                    mlirUnitAttrGet(c->ctx));
    return true;
  }
  if (M >= 16 * (int64_t)c->num_warps && wants_rows_only(dot)) {
    *out = kiln_gpu_layout_mma(c->num_warps, 1);
    return true;
  }
  int wm = 1, wn = 1;
  while (wm * wn < c->num_warps) {
    bool can_m = M >= 32 * wm, can_n = N >= 16 * wn;
    if (can_m && (!can_n || M / wm >= N / wn))
      wm *= 2;
    else if (can_n)
      wn *= 2;
    else
      return false;
  }
  *out = kiln_gpu_layout_mma(wm, wn);
  return true;
}

/* A tf32 dot that stays on the FMA path (its tile does not fit mma.sync) still rounds its
 * operands: the rounding of cvt.rna.tf32.f32 (ties away from zero; NaN kept) as elementwise ops
 * on the tile, so every target computes the same products.  The flag then goes, and the FMA
 * path sees a plain f32 dot of rounded tiles. */
static MlirValue round_tf32_tile(KilnIRBuilder *b, MlirLocation loc, MlirValue x) {
  MlirType t = mlirValueGetType(x);
  int64_t shape[2] = {kiln_ir_dim(t, 0), kiln_ir_dim(t, 1)};
  MlirContext ctx = mlirTypeGetContext(t);
  MlirType it =
      mlirRankedTensorTypeGet(2, shape, mlirIntegerTypeGet(ctx, 32), mlirAttributeGetNull());
  MlirValue bits = kiln_ir_build_cast(b, loc, "arith.bitcast", x, it);
  MlirValue half[2] = {bits, kiln_ir_build_const_int(b, loc, it, 0x1000)};
  MlirValue up = kiln_ir_build_elementwise(b, loc, "arith.addi", half, 2, it);
  MlirValue keep[2] = {up, kiln_ir_build_const_int(b, loc, it, (int32_t)0xffffe000u)};
  MlirValue r = kiln_ir_build_elementwise(b, loc, "arith.andi", keep, 2, it);
  MlirValue rf = kiln_ir_build_cast(b, loc, "arith.bitcast", r, t);
  return kiln_ir_build_select(b, loc, kiln_ir_build_cmpf(b, loc, "uno", x, x), x, rf);
}

static MlirWalkResult round_fma_tf32_dot(MlirOperation op, void *user) {
  LCtx *c = user;
  KilnGpuLayout l;
  if (kiln_ir_op_id(op) != KILN_OP_DOT || !kiln_ir_dot_is_tf32(op) || mma_for_dot(c, op, &l))
    return MlirWalkResultAdvance;
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, c->ctx, mlirOperationGetBlock(op));
  kiln_ir_builder_set_before(&b, op);
  for (intptr_t i = 0; i < 2; i++)
    mlirOperationSetOperand(
        op, i, round_tf32_tile(&b, mlirOperationGetLocation(op), mlirOperationGetOperand(op, i)));
  mlirOperationRemoveAttributeByName(op, mlirStringRefCreateFromCString(KILN_IR_DOT_TF32_ATTR));
  return MlirWalkResultAdvance;
}

/* ---------------------------------------------------------------- requirements */

/* The layout op requires of its operand #i, if any. */
static bool requirement(LCtx *c, MlirOperation op, intptr_t i, KilnGpuLayout *out) {
  MlirValue v = mlirOperationGetOperand(op, i);
  if (!is_tile(v)) return false;
  KilnOpId id = kiln_ir_op_id(op);
  const KilnGpuLayout *anc = kiln_ptr_map_get(&c->anchor, op.ptr);
  if (anc) {
    *out = *anc;
    return true;
  }
  const KilnGpuLayout *r = NULL;
  if (mlirOperationGetNumResults(op) == 1) r = defined(c, mlirOperationGetResult(op, 0));
  switch (id) {
  case KILN_OP_STORE: {
    /* A store without an anchor follows its value, unless that is an mma fragment (the
     * pointer arithmetic cannot take it): then a plain blocked layout, and the epilogue converts
     * the value, already narrowed when the kernel casts before storing. */
    MlirValue val = mlirOperationGetOperand(op, 1);
    const KilnGpuLayout *vl = defined(c, val);
    if (!vl) return false;
    *out = vl->kind == KILN_GPU_LAYOUT_MMA ? default_layout(c, val) : *vl;
    return true;
  }
  case KILN_OP_REDUCE: {
    int axis = (int)kiln_gpu_int_attr(op, "axis", 0);
    const KilnGpuLayout *have = defined(c, v);
    if (!r && have && have->kind == KILN_GPU_LAYOUT_SLICE) {
      /* A scalar reduction of a slice (the last step of sum(x) over every axis of a 2-D tile,
       * or sum(sum(x, 1), 0)) goes through a blocked copy, as a tile result of one does. */
      *out = default_layout(c, v);
      return true;
    }
    if (!r || r->kind != KILN_GPU_LAYOUT_SLICE || r->slice_dim != axis) return false;
    *out = kiln_gpu_layout_slice_parent(r);
    return true;
  }
  case KILN_OP_EXPAND_DIMS:
    if (!r || (r->kind != KILN_GPU_LAYOUT_BLOCKED && r->kind != KILN_GPU_LAYOUT_MMA)) return false;
    *out = kiln_gpu_layout_slice(r, (int)kiln_gpu_int_attr(op, "axis", 0));
    return true;
  case KILN_OP_DOT:
    if (!r) return false;
    if (i != 2) {
      /* The FMA path reads a and b through shared memory in any layout; mma wants fragments. */
      if (r->kind != KILN_GPU_LAYOUT_MMA) return false;
      *out = kiln_gpu_layout_dot_op(r, (int)i,
                                    kiln_gpu_dot_k_width(kiln_ir_elem_type(
                                        mlirValueGetType(mlirOperationGetOperand(op, 0)))));
      return true;
    }
    *out = *r;
    return true;
  case KILN_OP_CONVERT_LAYOUT:
  case KILN_OP_TRANS:
  case KILN_OP_FLIP: /* through shared memory: any layout in, any out */
  case KILN_OP_RESHAPE:
  case KILN_OP_SCAN: return false;
  default: break;
  }
  if (kiln_ir_op_is(op, "scf.yield")) {
    MlirOperation parent = mlirOperationGetParentOperation(op);
    if (i >= mlirOperationGetNumResults(parent)) return false;
    r = defined(c, mlirOperationGetResult(parent, i));
  } else if (kiln_ir_op_is(op, "scf.for")) {
    if (i < 3) return false;
    r = defined(c, mlirOperationGetResult(op, i - 3));
  } else if (kiln_ir_op_is(op, "scf.if") || kiln_ir_op_is(op, "func.return")) {
    return false;
  }
  if (!r) return false;
  *out = *r;
  return true;
}

/* ---------------------------------------------------------------- defining */

static void define(LCtx *c, MlirValue v, const KilnGpuLayout *l) {
  kiln_ptr_map_put(&c->defined, v.ptr, keep(c, l));
  c->changed = true;
}

/* Defines v (and what is tied to it: loop results, iter args) as l, if v may take it. */
/* Whether op's result may be defined in an mma layout or a slice of one: the dot, arithmetic
 * and math on its fragments, loops carrying them, and the shape ops (splat, broadcast,
 * expand_dims, range) whose lowering only re-indexes lists, so masks and row statistics are
 * built in the fragments' layout instead of converted to it.  Memory ops stay blocked. */
static bool takes_mma(MlirOperation p) {
  MlirStringRef nm = mlirIdentifierStr(mlirOperationGetName(p));
  bool arith = (nm.length > 6 && memcmp(nm.data, "arith.", 6) == 0) ||
               (nm.length > 5 && memcmp(nm.data, "math.", 5) == 0);
  KilnOpId id = kiln_ir_op_id(p);
  return arith || id == KILN_OP_DOT || id == KILN_OP_SPLAT || id == KILN_OP_BROADCAST ||
         id == KILN_OP_EXPAND_DIMS || id == KILN_OP_RANGE || id == KILN_OP_REDUCE ||
         id == KILN_OP_RAND || kiln_ir_op_is(p, "scf.for") || kiln_ir_op_is(p, "scf.if");
}

static bool is_mma_family(const KilnGpuLayout *l) {
  return l->kind == KILN_GPU_LAYOUT_MMA ||
         (l->kind == KILN_GPU_LAYOUT_SLICE && l->parent == KILN_GPU_LAYOUT_MMA);
}

static void try_define(LCtx *c, MlirValue v, const KilnGpuLayout *l) {
  if (!is_tile(v) || defined(c, v) || l->kind == KILN_GPU_LAYOUT_DOT_OP) return;
  if (l->kind == KILN_GPU_LAYOUT_MMA) {
    int64_t shape[KILN_GPU_MAX_RANK];
    shape_of(v, shape);
    if (!kiln_gpu_mma_fits(l, kiln_ir_rank(mlirValueGetType(v)), shape)) return;
  }
  if (is_mma_family(l) && !mlirValueIsABlockArgument(v) && !takes_mma(mlirOpResultGetOwner(v)))
    return;
  if (mlirValueIsABlockArgument(v)) {
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    MlirOperation parent = mlirBlockGetParentOperation(b);
    intptr_t n = mlirBlockArgumentGetArgNumber(v);
    if (kiln_ir_op_is(parent, "scf.for") && n >= 1) {
      define(c, v, l);
      try_define(c, mlirOperationGetResult(parent, n - 1), l);
    }
    return;
  }
  MlirOperation p = mlirOpResultGetOwner(v);
  KilnOpId id = kiln_ir_op_id(p);
  if (id == KILN_OP_LOAD && kiln_ptr_map_get(&c->anchor, p.ptr)) return;
  if (id == KILN_OP_REDUCE) {
    int axis = (int)kiln_gpu_int_attr(p, "axis", 0);
    if (l->kind != KILN_GPU_LAYOUT_SLICE || l->slice_dim != axis) return;
  }
  if (id == KILN_OP_EXPAND_DIMS && l->kind != KILN_GPU_LAYOUT_BLOCKED &&
      l->kind != KILN_GPU_LAYOUT_MMA)
    return;
  define(c, v, l);
  if (kiln_ir_op_is(p, "scf.for")) {
    intptr_t n = mlirOpResultGetResultNumber(v);
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(p, 0));
    try_define(c, mlirBlockGetArgument(body, n + 1), l);
  }
}

/* The dot's result, its loop-carried accumulator and the narrowing casts of the loop's result
 * take the mma layout before anything else is decided: were a store's anchor to reach the loop
 * first, the accumulator would be converted twice per iteration, and converting after the cast
 * moves half the bytes through shared memory. */
static void define_mma_chain(LCtx *c, MlirOperation dot, const KilnGpuLayout *l) {
  define(c, mlirOperationGetResult(dot, 0), l);
  MlirValue acc = mlirOperationGetOperand(dot, 2);
  try_define(c, acc, l);
  if (!mlirValueIsABlockArgument(acc)) return;
  MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(acc));
  intptr_t n = mlirBlockArgumentGetArgNumber(acc);
  if (!kiln_ir_op_is(loop, "scf.for") || n < 1) return;
  MlirValue r = mlirOperationGetResult(loop, n - 1);
  for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (kiln_ir_op_is(user, "arith.truncf")) try_define(c, mlirOperationGetResult(user, 0), l);
  }
}

static void backward(LCtx *c) {
  for (size_t k = c->n_ops; k-- > 0;) {
    MlirOperation op = c->ops[k];
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
      KilnGpuLayout l;
      if (requirement(c, op, i, &l)) try_define(c, mlirOperationGetOperand(op, i), &l);
    }
  }
}

/* The layout forward propagation may take from operand v: any defined one, or in the mma
 * seeding round only an mma layout or a slice of one. */
static const KilnGpuLayout *fwd_src(LCtx *c, MlirValue v) {
  const KilnGpuLayout *l = defined(c, v);
  if (l && c->mma_only && !is_mma_family(l)) return NULL;
  return l;
}

/* Seeding round only: a loop's yielded mma value defines its iter arg and result, so the row
 * statistics of an online softmax (m, l) are carried in the fragments' slice before a store
 * after the loop can pull them into a blocked layout; an scf.if's result takes the layout of a
 * yielded mma value (the probabilities with or without dropout stay fragments). */
static void forward_yield(LCtx *c, MlirOperation yield) {
  MlirOperation loop = mlirOperationGetParentOperation(yield);
  if (kiln_ir_op_is(loop, "scf.if")) {
    for (intptr_t i = 0;
         i < mlirOperationGetNumOperands(yield) && i < mlirOperationGetNumResults(loop); i++) {
      const KilnGpuLayout *l = fwd_src(c, mlirOperationGetOperand(yield, i));
      if (l) try_define(c, mlirOperationGetResult(loop, i), l);
    }
    return;
  }
  if (!kiln_ir_op_is(loop, "scf.for")) return;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loop, 0));
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(yield); i++) {
    const KilnGpuLayout *l = fwd_src(c, mlirOperationGetOperand(yield, i));
    if (l) try_define(c, mlirBlockGetArgument(body, i + 1), l);
  }
}

static void forward(LCtx *c) {
  for (size_t k = 0; k < c->n_ops; k++) {
    MlirOperation op = c->ops[k];
    if (c->mma_only && kiln_ir_op_is(op, "scf.yield")) {
      forward_yield(c, op);
      continue;
    }
    if (mlirOperationGetNumResults(op) < 1) continue;
    KilnOpId id = kiln_ir_op_id(op);
    if (kiln_ir_op_is(op, "scf.for")) {
      for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
        const KilnGpuLayout *l = fwd_src(c, mlirOperationGetOperand(op, i + 3));
        if (l) try_define(c, mlirOperationGetResult(op, i), l);
      }
      continue;
    }
    if (mlirOperationGetNumResults(op) != 1) continue;
    MlirValue res = mlirOperationGetResult(op, 0);
    if (!is_tile(res) || defined(c, res)) continue;
    if (id == KILN_OP_REDUCE) {
      MlirValue x = mlirOperationGetOperand(op, 0);
      const KilnGpuLayout *l = defined(c, x);
      if (l && (l->kind == KILN_GPU_LAYOUT_BLOCKED || l->kind == KILN_GPU_LAYOUT_MMA)) {
        /* A reduction of a dot's result (flash attention's row max and sum) stays on the mma
         * fragments: in-thread, then two shfl.bfly (lower_reduce.c). */
        KilnGpuLayout s = kiln_gpu_layout_slice(l, (int)kiln_gpu_int_attr(op, "axis", 0));
        try_define(c, res, &s);
      } else if (l && l->kind == KILN_GPU_LAYOUT_SLICE && !c->mma_only) {
        /* A tile reduced again (sum(x) over every axis of a 3-D tile: axis 2, then 1 of that):
         * a slice has no slice, so the operand goes to a blocked copy (requirement) and the
         * result is that copy's slice. */
        KilnGpuLayout b = default_layout(c, x);
        KilnGpuLayout s = kiln_gpu_layout_slice(&b, (int)kiln_gpu_int_attr(op, "axis", 0));
        try_define(c, res, &s);
      }
      continue;
    }
    if (id == KILN_OP_EXPAND_DIMS) {
      const KilnGpuLayout *l = fwd_src(c, mlirOperationGetOperand(op, 0));
      int axis = (int)kiln_gpu_int_attr(op, "axis", 0);
      if (l && l->kind == KILN_GPU_LAYOUT_SLICE && l->slice_dim == axis) {
        KilnGpuLayout p = kiln_gpu_layout_slice_parent(l);
        try_define(c, res, &p);
      }
      continue;
    }
    if (id == KILN_OP_DOT) {
      const KilnGpuLayout *l = fwd_src(c, mlirOperationGetOperand(op, 2));
      if (l) try_define(c, res, l);
      continue;
    }
    if (id == KILN_OP_SCAN) {
      /* cumsum/cumprod scan in a blocked operand's own layout (lower_scan.c): the result keeps
       * it, so no convert comes before or after. */
      const KilnGpuLayout *l = fwd_src(c, mlirOperationGetOperand(op, 0));
      if (l && (l->kind == KILN_GPU_LAYOUT_BLOCKED ||
                (l->kind == KILN_GPU_LAYOUT_SLICE && l->parent == KILN_GPU_LAYOUT_BLOCKED)))
        try_define(c, res, l);
      continue;
    }
    if (id == KILN_OP_TRANS || id == KILN_OP_FLIP || id == KILN_OP_RESHAPE ||
        id == KILN_OP_CONVERT_LAYOUT || kiln_ir_op_is(op, "scf.if"))
      continue;
    int rank = kiln_ir_rank(mlirValueGetType(res));
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
      MlirValue o = mlirOperationGetOperand(op, i);
      const KilnGpuLayout *l = fwd_src(c, o);
      if (l && kiln_ir_rank(mlirValueGetType(o)) == rank) {
        try_define(c, res, l);
        break;
      }
    }
  }
}

/* The layout of a reduce's tile result when nothing propagated one (define_one_default). */
static KilnGpuLayout reduce_default(LCtx *c, MlirOperation op) {
  MlirValue x = mlirOperationGetOperand(op, 0);
  int axis = (int)kiln_gpu_int_attr(op, "axis", 0);
  const KilnGpuLayout *l = defined(c, x);
  if (l && (l->kind == KILN_GPU_LAYOUT_BLOCKED || l->kind == KILN_GPU_LAYOUT_MMA))
    return kiln_gpu_layout_slice(l, axis);
  KilnGpuLayout b = default_layout(c, x);
  return kiln_gpu_layout_slice(&b, axis);
}

/* The first undefined tile (result or iter arg) gets a default layout; false when none is left. */
static bool define_one_default(LCtx *c) {
  for (size_t k = 0; k < c->n_ops; k++) {
    MlirOperation op = c->ops[k];
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
      MlirValue v = mlirOperationGetResult(op, i);
      if (is_tile(v) && !defined(c, v)) {
        KilnGpuLayout l;
        KilnOpId id = kiln_ir_op_id(op);
        if (id == KILN_OP_LOAD || id == KILN_OP_STORE) {
          if (!memory_anchor(c, mlirOperationGetOperand(op, 0), &l)) l = default_layout(c, v);
        } else if (id == KILN_OP_REDUCE) {
          /* The lowering makes a reduce's result the slice of its operand's layout along the
           * axis (lower_reduce.c), so that is the only default it may take: the slice of the
           * operand's blocked or mma layout, or, for an operand that is itself a slice (a tile
           * reduced again) or not yet laid out, of its default blocked copy (requirement then
           * converts the operand).  Reached after propagation gives up too (the last sweep of
           * propagate), where a blocked default here made the result's elements the wrong
           * ones. */
          l = reduce_default(c, op);
        } else {
          l = default_layout(c, v);
        }
        define(c, v, &l);
        if (kiln_ir_op_is(op, "scf.for")) {
          MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
          try_define(c, mlirBlockGetArgument(body, i + 1), &l);
        }
        return true;
      }
    }
  }
  return false;
}

static void propagate(LCtx *c) {
  /* Seeding: what the dots' mma results flow into (scores, their row max and sum, the
   * probabilities, the rescaled accumulator) takes mma layouts forwards before any memory
   * anchor propagates backwards into it. */
  c->mma_only = true;
  do {
    c->changed = false;
    forward(c);
  } while (c->changed);
  c->mma_only = false;
  for (int round = 0; round < 64; round++) {
    do {
      c->changed = false;
      backward(c);
      forward(c);
    } while (c->changed);
    if (!define_one_default(c)) return;
  }
  while (define_one_default(c));
}

/* ---------------------------------------------------------------- materialization */

static MlirValue build_convert(LCtx *c, MlirOperation before, MlirValue v, const KilnGpuLayout *l) {
  KilnIRBuilder b;
  kiln_ir_builder_init(&b, c->ctx, mlirOperationGetBlock(before));
  kiln_ir_builder_set_before(&b, before);
  MlirType t = kiln_gpu_type_with_layout(mlirValueGetType(v), l);
  KilnOpSpec s = {.name = KILN_OP_NAME_CONVERT_LAYOUT,
                  .loc = mlirOperationGetLocation(before),
                  .operands = &v,
                  .n_operands = 1,
                  .results = &t,
                  .n_results = 1};
  return mlirOperationGetResult(kiln_ir_create(&b, &s), 0);
}

static void retype_constant(MlirOperation op) {
  MlirValue r = mlirOperationGetResult(op, 0);
  MlirType t = mlirValueGetType(r);
  MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  if (!mlirAttributeIsADenseElements(v)) return;
  MlirAttribute nv = mlirDenseElementsAttrIsSplat(v)
                         ? mlirDenseElementsAttrSplatGet(t, mlirDenseElementsAttrGetSplatValue(v))
                         : mlirDenseElementsAttrReshapeGet(v, t);
  mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("value"), nv);
}

static void set_types(LCtx *c) {
  for (size_t k = 0; k < c->n_ops; k++) {
    MlirOperation op = c->ops[k];
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); i++) {
      MlirValue v = mlirOperationGetResult(op, i);
      const KilnGpuLayout *l = defined(c, v);
      if (l) mlirValueSetType(v, kiln_gpu_type_with_layout(mlirValueGetType(v), l));
    }
    if (kiln_ir_op_is(op, "arith.constant") && mlirOperationGetNumResults(op) == 1 &&
        is_tile(mlirOperationGetResult(op, 0)))
      retype_constant(op);
    for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++) {
      MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
      for (; !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
        for (intptr_t a = 0; a < mlirBlockGetNumArguments(b); a++) {
          MlirValue v = mlirBlockGetArgument(b, a);
          const KilnGpuLayout *l = defined(c, v);
          if (l) mlirValueSetType(v, kiln_gpu_type_with_layout(mlirValueGetType(v), l));
        }
    }
  }
}

/* Whether op is an ancestor of (or is) the operation x. */
static bool encloses(MlirOperation op, MlirOperation x) {
  for (; !mlirOperationIsNull(x); x = mlirOperationGetParentOperation(x))
    if (mlirOperationEqual(x, op)) return true;
  return false;
}

/* Where a convert of v for `user` goes: before the outermost scf.for around the user that v is
 * invariant in (a loop-invariant operand, Q of attention, is staged once, not every
 * iteration), else right before the user. */
static MlirOperation hoist_point(MlirOperation user, MlirValue v) {
  MlirOperation def = mlirValueIsABlockArgument(v)
                          ? mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v))
                          : mlirOpResultGetOwner(v);
  MlirOperation at = user;
  for (MlirOperation p = mlirOperationGetParentOperation(user);
       !mlirOperationIsNull(p) && kiln_ir_op_is(p, "scf.for") && !encloses(p, def);
       p = mlirOperationGetParentOperation(p))
    at = p;
  return at;
}

/* Whether a convert of v to `want` may be hoisted out of loops: dot operand fragments only when
 * they take at most 32 registers a thread (a warp's A rows, Q in attention), since hoisted
 * fragments stay live through the loop; a B operand of warps split along rows is the whole
 * tile in every warp (K^T of 64x64 f16: 64 registers), cheaper to stage again each iteration. */
static bool fragments_fit(MlirValue v, const KilnGpuLayout *want) {
  if (want->kind != KILN_GPU_LAYOUT_DOT_OP) return true;
  int64_t shape[KILN_GPU_MAX_RANK];
  shape_of(v, shape);
  KilnGpuOwn o;
  kiln_gpu_own(want, 2, shape, &o);
  return o.count <= 32;
}

static void insert_converts(LCtx *c) {
  for (size_t k = 0; k < c->n_ops; k++) {
    MlirOperation op = c->ops[k];
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); i++) {
      KilnGpuLayout want;
      if (!requirement(c, op, i, &want)) continue;
      MlirValue v = mlirOperationGetOperand(op, i);
      KilnGpuLayout have = kiln_gpu_layout_of_type(mlirValueGetType(v));
      if (kiln_gpu_layout_equal(&have, &want)) continue;
      MlirOperation at = fragments_fit(v, &want) ? hoist_point(op, v) : op;
      mlirOperationSetOperand(op, i, build_convert(c, at, v, &want));
    }
  }
}

static void collect(LCtx *c, MlirOperation op) {
  if (c->n_ops == c->cap_ops) {
    c->cap_ops = c->cap_ops ? c->cap_ops * 2 : 256;
    c->ops = realloc(c->ops, c->cap_ops * sizeof *c->ops);
    KILN_ASSERT(c->ops != NULL);
  }
  c->ops[c->n_ops++] = op;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); r++)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        collect(c, o);
}

/* Whether op is inside an scf.for. */
static bool in_loop(MlirOperation op) {
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p))
    if (kiln_ir_op_is(p, "scf.for")) return true;
  return false;
}

/* Whether a load may be issued again in layout l instead of converting its result:
 *   - a 1-D load into the column slice of an mma layout (a row vector every row of the
 *     fragments uses, attention's lse and delta in the dK/dV program), whose elements a thread
 *     holds in contiguous pairs (the row slice's pairs are 8 apart, which a vector access would
 *     misread).  Each thread then reads its columns (the 8 lanes of a column group read the
 *     same addresses, from L1) instead of a trip through shared memory between two barriers.
 *   - a 2-D tile into an mma layout outside any loop: an epilogue's operand (the GEMM's
 *     residual, GELU's input), read in the accumulator's fragments.  Each thread loads its
 *     pairs (32 bits of f16; the 16 bytes four lanes read and the 16 the same lanes read for
 *     the next 8 columns share a 32-byte sector, so DRAM moves each byte once) and adds them as
 *     they come.  Converted, the whole blocked tile was staged through shared memory between
 *     two barriers and then held beside the accumulators: the BERT gemm's residual epilogue in
 *     the dX layout spilled 8 to 52 bytes in four of its presets (128 registers, or 255 at
 *     128 x 256); reloaded, none on sm_90, 12 bytes in one on sm_80, and the 128 x 256 tiles
 *     take 227-247 registers where they took 255.  In a loop the convert stays: a tile read
 *     again every iteration keeps its coalesced 128-bit loads. */
static bool reloadable(const KilnGpuLayout *l, int rank, MlirOperation load) {
  if (rank == 1)
    return l->kind == KILN_GPU_LAYOUT_SLICE && l->parent == KILN_GPU_LAYOUT_MMA &&
           l->slice_dim == 0;
  return rank == 2 && l->kind == KILN_GPU_LAYOUT_MMA && !in_loop(load);
}

/* A copy of v's computation producing layout l, built before `before`, when that computation is
 * cheap (splats, ranges, constants, integer arithmetic, pointer offsets, shape ops): recomputing
 * a few integer ops per element costs less than a trip through shared memory and two barriers.
 * A null value when it is not; copies made on the way are left for the dead-code sweep. */
static MlirValue remat(MlirValue v, const KilnGpuLayout *l, MlirOperation before, int depth) {
  MlirValue none = {NULL};
  MlirType t = mlirValueGetType(v);
  KilnGpuLayout have = kiln_gpu_layout_of_type(t);
  if (kiln_gpu_layout_equal(&have, l)) return v;
  if (depth > 8 || mlirValueIsABlockArgument(v) || l->kind == KILN_GPU_LAYOUT_DOT_OP) return none;
  MlirOperation p = mlirOpResultGetOwner(v);
  KilnOpId id = kiln_ir_op_id(p);
  /* A tile is rebuilt in an mma layout only where the layout covers it (whole 16x8 blocks, or
   * a dim of 1). */
  if (l->kind == KILN_GPU_LAYOUT_MMA) {
    int64_t shape[KILN_GPU_MAX_RANK];
    shape_of(v, shape);
    if (!kiln_gpu_mma_fits(l, kiln_ir_rank(t), shape)) return none;
  }
  if (id == KILN_OP_CONVERT_LAYOUT)
    return remat(mlirOperationGetOperand(p, 0), l, before, depth + 1);
  bool arith = false;
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(p));
  if (name.length > 6 && memcmp(name.data, "arith.", 6) == 0) arith = true;
  if (!(id == KILN_OP_SPLAT || id == KILN_OP_RANGE || id == KILN_OP_ADDPTR ||
        id == KILN_OP_BROADCAST || id == KILN_OP_EXPAND_DIMS || arith ||
        (id == KILN_OP_LOAD && reloadable(l, kiln_ir_rank(t), p))) ||
      mlirOperationGetNumResults(p) != 1 || mlirOperationGetNumRegions(p) != 0)
    return none;
  KilnGpuLayout ol = *l;
  if (id == KILN_OP_EXPAND_DIMS) {
    if (l->kind != KILN_GPU_LAYOUT_BLOCKED && l->kind != KILN_GPU_LAYOUT_MMA) return none;
    ol = kiln_gpu_layout_slice(l, (int)kiln_gpu_int_attr(p, "axis", 0));
  }
  intptr_t n = mlirOperationGetNumOperands(p);
  MlirValue ops[8];
  if (n > 8) return none;
  for (intptr_t i = 0; i < n; i++) {
    ops[i] = mlirOperationGetOperand(p, i);
    if (mlirTypeIsARankedTensor(mlirValueGetType(ops[i]))) {
      ops[i] = remat(ops[i], &ol, before, depth + 1);
      if (mlirValueIsNull(ops[i])) return none;
    }
  }
  MlirOperation copy = mlirOperationClone(p);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, copy);
  for (intptr_t i = 0; i < n; i++) mlirOperationSetOperand(copy, i, ops[i]);
  MlirValue r = mlirOperationGetResult(copy, 0);
  mlirValueSetType(r, kiln_gpu_type_with_layout(t, l));
  if (kiln_ir_op_is(copy, "arith.constant")) retype_constant(copy);
  return r;
}

/* Removes avoidable converts: identity ones, chains, and converts of cheap producers. */
static void cleanup_converts(MlirOperation func) {
  MlirOperation *list = NULL;
  size_t n = 0, cap = 0;
  LCtx tmp;
  memset(&tmp, 0, sizeof tmp);
  collect(&tmp, func);
  for (size_t k = 0; k < tmp.n_ops; k++)
    if (kiln_ir_op_id(tmp.ops[k]) == KILN_OP_CONVERT_LAYOUT) {
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        list = realloc(list, cap * sizeof *list);
        KILN_ASSERT(list != NULL);
      }
      list[n++] = tmp.ops[k];
    }
  free(tmp.ops);
  for (size_t k = 0; k < n; k++) {
    MlirOperation cv = list[k];
    MlirValue src = mlirOperationGetOperand(cv, 0);
    MlirValue res = mlirOperationGetResult(cv, 0);
    MlirType rt = mlirValueGetType(res);
    KilnGpuLayout have = kiln_gpu_layout_of_type(mlirValueGetType(src));
    KilnGpuLayout want = kiln_gpu_layout_of_type(rt);
    if (kiln_gpu_layout_equal(&have, &want)) {
      mlirValueReplaceAllUsesOfWith(res, src);
      mlirOperationDestroy(cv);
      continue;
    }
    MlirValue cr = remat(src, &want, cv, 0);
    if (mlirValueIsNull(cr)) continue;
    mlirValueReplaceAllUsesOfWith(res, cr);
    mlirOperationDestroy(cv);
    /* A load issued again in the wanted layout leaves the original unused: it goes (other dead
     * loads stay, as the source wrote them). */
    if (!mlirValueIsABlockArgument(src) &&
        kiln_ir_op_id(mlirOpResultGetOwner(src)) == KILN_OP_LOAD &&
        mlirOpOperandIsNull(mlirValueGetFirstUse(src)))
      mlirOperationDestroy(mlirOpResultGetOwner(src));
  }
  free(list);
  /* What the copies left unused goes (reverse order, so chains go in one sweep). */
  memset(&tmp, 0, sizeof tmp);
  collect(&tmp, func);
  for (size_t k = tmp.n_ops; k-- > 1;) {
    MlirOperation op = tmp.ops[k];
    KilnOpId id = kiln_ir_op_id(op);
    bool pure = id == KILN_OP_CONVERT_LAYOUT || id == KILN_OP_SPLAT || id == KILN_OP_RANGE ||
                id == KILN_OP_BROADCAST || id == KILN_OP_EXPAND_DIMS || id == KILN_OP_ADDPTR ||
                (mlirIdentifierStr(mlirOperationGetName(op)).length > 6 &&
                 memcmp(mlirIdentifierStr(mlirOperationGetName(op)).data, "arith.", 6) == 0);
    if (pure && mlirOperationGetNumResults(op) == 1 &&
        mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, 0))))
      mlirOperationDestroy(op);
  }
  free(tmp.ops);
}

/* Moves every kiln.trans whose operand is defined outside its loop before that loop (out of
 * every loop it is invariant in): the dot operand convert that reads it is then hoisted too
 * (insert_converts), so a loop-invariant K^T or V^T (attention's dK/dV program) is staged once. */
static void hoist_invariant_trans(MlirOperation func) {
  LCtx tmp;
  memset(&tmp, 0, sizeof tmp);
  collect(&tmp, func);
  for (size_t k = 0; k < tmp.n_ops; k++) {
    MlirOperation op = tmp.ops[k];
    if (kiln_ir_op_id(op) != KILN_OP_TRANS) continue;
    MlirOperation at = hoist_point(op, mlirOperationGetOperand(op, 0));
    if (!mlirOperationEqual(at, op)) mlirOperationMoveBefore(op, at);
  }
  free(tmp.ops);
}

static bool layout_kernel(MlirOperation func, int num_warps) {
  LCtx c;
  memset(&c, 0, sizeof c);
  c.ctx = mlirOperationGetContext(func);
  c.num_warps = num_warps > 0 ? num_warps : (int)kiln_gpu_int_attr(func, "kiln.num_warps", 4);
  if (c.num_warps < 1 || c.num_warps > 32 || (c.num_warps & (c.num_warps - 1))) {
    kiln_ir_error(mlirOperationGetLocation(func),
                  "num_warps must be a power of two in 1..32 (got %d)", c.num_warps);
    return false;
  }
  c.wgmma =
      kiln_gpu_int_attr(func, "kiln.wgmma", 0) == 1 && kiln_gpu_int_attr(func, "kiln.sm", 90) >= 90;
  hoist_invariant_trans(func);
  mlirOperationWalk(func, round_fma_tf32_dot, &c, MlirWalkPreOrder);
  c.axis = kiln_axis_analyze(func);
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  for (MlirOperation o = mlirBlockGetFirstOperation(entry); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    collect(&c, o);
  bool ok = true;
  /* Shapes must be powers of two (lanes and warps split them evenly), and no tile may give a
   * thread more than KILN_GPU_MAX_ELEMS_PER_THREAD elements. */
  for (size_t k = 0; k < c.n_ops && ok; k++)
    for (intptr_t i = 0; i < mlirOperationGetNumResults(c.ops[k]); i++) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(c.ops[k], i));
      int64_t numel = 1;
      for (int d = 0; d < kiln_ir_rank(t); d++) {
        int64_t s = kiln_ir_dim(t, d);
        if (s < 1 || (s & (s - 1))) {
          kiln_ir_error(mlirOperationGetLocation(c.ops[k]),
                        "the GPU target needs tile sizes that are powers of two (got %lld)",
                        (long long)s);
          ok = false;
        } else if (__builtin_mul_overflow(numel, s, &numel)) {
          numel = INT64_MAX;
        }
      }
      int64_t threads = (int64_t)KILN_GPU_WARP * c.num_warps;
      if (ok && numel / threads > KILN_GPU_MAX_ELEMS_PER_THREAD) {
        kiln_ir_error(
            mlirOperationGetLocation(c.ops[k]),
            "a tile of %lld elements gives each of the %lld threads (num_warps = %d) %lld "
            "elements; the GPU targets allow at most %d (a thread has 255 registers): "
            "use a smaller block or more warps",
            (long long)numel, (long long)threads, c.num_warps, (long long)(numel / threads),
            KILN_GPU_MAX_ELEMS_PER_THREAD);
        ok = false;
      }
    }
  if (ok) {
    for (size_t k = 0; k < c.n_ops; k++) {
      MlirOperation op = c.ops[k];
      KilnOpId id = kiln_ir_op_id(op);
      KilnGpuLayout l;
      if ((id == KILN_OP_LOAD || id == KILN_OP_STORE) &&
          memory_anchor(&c, mlirOperationGetOperand(op, 0), &l))
        kiln_ptr_map_put(&c.anchor, op.ptr, keep(&c, &l));
    }
    unify_anchors(&c);
    for (size_t k = 0; k < c.n_ops; k++) {
      MlirOperation op = c.ops[k];
      KilnOpId id = kiln_ir_op_id(op);
      KilnGpuLayout l;
      const KilnGpuLayout *a = id == KILN_OP_LOAD ? kiln_ptr_map_get(&c.anchor, op.ptr) : NULL;
      if (a) define(&c, mlirOperationGetResult(op, 0), a);
      if (id == KILN_OP_DOT && mma_for_dot(&c, op, &l)) define_mma_chain(&c, op, &l);
    }
    propagate(&c);
    set_types(&c);
    insert_converts(&c);
  }
  kiln_axis_free(c.axis);
  for (size_t i = 0; i < c.n_owned; i++) free(c.owned[i]);
  free(c.owned);
  free(c.ops);
  kiln_ptr_map_free(&c.defined);
  kiln_ptr_map_free(&c.anchor);
  if (ok) cleanup_converts(func);
  return ok;
}

MlirLogicalResult kiln_gpu_layouts_module(MlirOperation module, void *opts) {
  int num_warps = opts ? *(const int *)opts : 0;
  KilnOpList kernels = kiln_ir_kernels(module, "func.func", "kiln.kernel");
  bool ok = true;
  for (size_t i = 0; i < kernels.n; i++) ok = layout_kernel(kernels.ops[i], num_warps) && ok;
  kiln_op_list_free(&kernels);
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}
