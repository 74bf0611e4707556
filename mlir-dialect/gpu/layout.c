/* layout.c - layouts as tensor encodings, and which elements each thread owns.
 *
 * A layout is a builtin DictionaryAttr on the tensor type, so it prints in the IR:
 *   {kind = "blocked", sizePerThread = array<i32: 1, 4>, threadsPerWarp = array<i32: 4, 8>,
 *    warpsPerCTA = array<i32: 4, 1>, order = array<i32: 1, 0>}
 *   {kind = "slice", dim = 1 : i32, parent = {kind = "blocked", ...}}
 *
 * Blocked: along dim d a thread owns runs of sizePerThread[d] contiguous elements; the lanes of a
 * warp and then the warps of the CTA take consecutive runs (lane and warp ids are split over the
 * dims in `order`, fastest first).  A tile larger than the CTA's extent repeats the pattern (the
 * thread owns one run per repetition); a smaller one wraps, so several threads own the same
 * element (the lowering must not count those twice in reductions).  Tile sizes and layout
 * parameters are powers of two.
 *
 * Mma (version 2, the accumulator of mma.sync.m16n8k16 / m16n8k8):
 *   {kind = "mma", versionMajor = 2 : i32, warpsPerCTA = array<i32: WM, WN>,
 *    instrShape = array<i32: 16, 8>}
 * The tile is cut into 16x8 blocks; warp (wm_i, wn_i) (warp id = wm_i + WM * wn_i) owns the
 * blocks whose row block index is wm_i mod WM and column block index wn_i mod WN.  Inside a block
 * lane l (g = l >> 2, t = l & 3) owns (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1): the PTX ISA's
 * c0..c3.  So along rows the thread's coordinate is g + 16 wm_i + {0, 8} + 16 WM r, along columns
 * 2t + 8 wn_i + {0, 1} + 8 WN r: a DimMap with lane_mul/warp_mul/elem_stride.
 * A dim of size 1 is allowed (every thread holds the one row or column).  A slice may have an
 * mma parent: {kind = "slice", dim = D, parent = {kind = "mma", ...}}, the mma's rows (D = 1) or
 * columns (D = 0) with the same per-thread map, so a row statistic lines up with the fragments.
 * Dot operand: {kind = "dot_op", opIdx = 0|1 : i32, kWidth = 1|2|4 : i32, parent = {mma}}: the A
 * (opIdx 0) or B (opIdx 1) fragments of the same warps.  Its values are register lists the mma
 * lowering builds and consumes (lower_dot.c); nothing else reads them element by element, so
 * kiln_gpu_own only counts them. */
#include "gpu_internal.h"

#include "mlir-c/BuiltinAttributes.h"

static MlirNamedAttribute named(MlirContext ctx, const char *n, MlirAttribute a) {
  return kiln_ir_named(ctx, n, a);
}

static MlirAttribute blocked_attr(MlirContext ctx, const KilnGpuLayout *l) {
  MlirNamedAttribute e[5] = {
      named(ctx, "kind", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("blocked"))),
      named(ctx, "sizePerThread", mlirDenseI32ArrayGet(ctx, l->rank, l->spt)),
      named(ctx, "threadsPerWarp", mlirDenseI32ArrayGet(ctx, l->rank, l->tpw)),
      named(ctx, "warpsPerCTA", mlirDenseI32ArrayGet(ctx, l->rank, l->wpc)),
      named(ctx, "order", mlirDenseI32ArrayGet(ctx, l->rank, l->order)),
  };
  return mlirDictionaryAttrGet(ctx, 5, e);
}

static MlirAttribute mma_attr(MlirContext ctx, const KilnGpuLayout *l) {
  int32_t instr[2] = {16, 8};
  MlirNamedAttribute e[4] = {
      named(ctx, "kind", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("mma"))),
      named(ctx, "versionMajor", kiln_ir_attr_i32(ctx, 2)),
      named(ctx, "warpsPerCTA", mlirDenseI32ArrayGet(ctx, 2, l->wpc)),
      named(ctx, "instrShape", mlirDenseI32ArrayGet(ctx, 2, instr)),
  };
  return mlirDictionaryAttrGet(ctx, 4, e);
}

MlirAttribute kiln_gpu_layout_attr(MlirContext ctx, const KilnGpuLayout *l) {
  if (l->kind == KILN_GPU_LAYOUT_BLOCKED) return blocked_attr(ctx, l);
  if (l->kind == KILN_GPU_LAYOUT_MMA) return mma_attr(ctx, l);
  if (l->kind == KILN_GPU_LAYOUT_DOT_OP) {
    MlirNamedAttribute e[4] = {
        named(ctx, "kind", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("dot_op"))),
        named(ctx, "opIdx", kiln_ir_attr_i32(ctx, l->op_idx)),
        named(ctx, "kWidth", kiln_ir_attr_i32(ctx, l->k_width)),
        named(ctx, "parent", mma_attr(ctx, l)),
    };
    return mlirDictionaryAttrGet(ctx, 4, e);
  }
  KILN_ASSERT(l->kind == KILN_GPU_LAYOUT_SLICE);
  MlirNamedAttribute e[3] = {
      named(ctx, "kind", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("slice"))),
      named(ctx, "dim", kiln_ir_attr_i32(ctx, l->slice_dim)),
      named(ctx, "parent",
            l->parent == KILN_GPU_LAYOUT_MMA ? mma_attr(ctx, l) : blocked_attr(ctx, l)),
  };
  return mlirDictionaryAttrGet(ctx, 3, e);
}

static bool get_array(MlirAttribute dict, const char *name, int *out, int rank) {
  MlirAttribute a = mlirDictionaryAttrGetElementByName(dict, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI32Array(a) ||
      mlirDenseArrayGetNumElements(a) != rank)
    return false;
  for (int i = 0; i < rank; i++) out[i] = mlirDenseI32ArrayGetElement(a, i);
  return true;
}

static bool str_is(MlirAttribute a, const char *s) {
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return false;
  MlirStringRef r = mlirStringAttrGetValue(a);
  return r.length == strlen(s) && memcmp(r.data, s, r.length) == 0;
}

static bool parse_blocked(MlirAttribute d, KilnGpuLayout *l) {
  if (!mlirAttributeIsADictionary(d) ||
      !str_is(mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("kind")),
              "blocked"))
    return false;
  MlirAttribute o = mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("order"));
  if (mlirAttributeIsNull(o) || !mlirAttributeIsADenseI32Array(o)) return false;
  int rank = (int)mlirDenseArrayGetNumElements(o);
  if (rank < 1 || rank > KILN_GPU_MAX_RANK) return false;
  l->rank = rank;
  l->kind = KILN_GPU_LAYOUT_BLOCKED;
  return get_array(d, "sizePerThread", l->spt, rank) &&
         get_array(d, "threadsPerWarp", l->tpw, rank) &&
         get_array(d, "warpsPerCTA", l->wpc, rank) && get_array(d, "order", l->order, rank);
}

static MlirAttribute elem(MlirAttribute d, const char *name) {
  return mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString(name));
}

static int int_elem(MlirAttribute d, const char *name, int dflt) {
  MlirAttribute a = elem(d, name);
  return mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a) ? dflt
                                                               : (int)mlirIntegerAttrGetValueInt(a);
}

static bool parse_mma(MlirAttribute d, KilnGpuLayout *l) {
  if (!mlirAttributeIsADictionary(d) || !str_is(elem(d, "kind"), "mma") ||
      int_elem(d, "versionMajor", 0) != 2)
    return false;
  KilnGpuLayout m;
  memset(&m, 0, sizeof m);
  m.kind = KILN_GPU_LAYOUT_MMA;
  m.rank = 2;
  if (!get_array(d, "warpsPerCTA", m.wpc, 2) || m.wpc[0] < 1 || m.wpc[1] < 1) return false;
  m.order[0] = 1;
  m.order[1] = 0;
  *l = m;
  return true;
}

KilnGpuLayout kiln_gpu_layout_mma(int wm, int wn) {
  KilnGpuLayout l;
  memset(&l, 0, sizeof l);
  l.kind = KILN_GPU_LAYOUT_MMA;
  l.rank = 2;
  l.wpc[0] = wm;
  l.wpc[1] = wn;
  l.order[0] = 1;
  l.order[1] = 0;
  return l;
}

KilnGpuLayout kiln_gpu_layout_dot_op(const KilnGpuLayout *mma, int op_idx, int k_width) {
  KILN_ASSERT(mma->kind == KILN_GPU_LAYOUT_MMA);
  KilnGpuLayout l = *mma;
  l.kind = KILN_GPU_LAYOUT_DOT_OP;
  l.op_idx = op_idx;
  l.k_width = k_width;
  return l;
}

int kiln_gpu_dot_k_width(MlirType elem) {
  if (mlirTypeIsAF32(elem)) return 1;
  return mlirTypeIsAInteger(elem) && mlirIntegerTypeGetWidth(elem) == 8 ? 4 : 2;
}

bool kiln_gpu_layout_parse(MlirAttribute attr, KilnGpuLayout *l) {
  memset(l, 0, sizeof *l);
  if (mlirAttributeIsNull(attr) || !mlirAttributeIsADictionary(attr)) return false;
  MlirAttribute kind =
      mlirDictionaryAttrGetElementByName(attr, mlirStringRefCreateFromCString("kind"));
  if (str_is(kind, "blocked")) return parse_blocked(attr, l) || (memset(l, 0, sizeof *l), false);
  if (str_is(kind, "mma")) return parse_mma(attr, l) || (memset(l, 0, sizeof *l), false);
  if (str_is(kind, "dot_op")) {
    int op_idx = int_elem(attr, "opIdx", -1), k_width = int_elem(attr, "kWidth", 0);
    if (!parse_mma(elem(attr, "parent"), l) || (op_idx != 0 && op_idx != 1) || k_width < 1) {
      memset(l, 0, sizeof *l);
      return false;
    }
    l->kind = KILN_GPU_LAYOUT_DOT_OP;
    l->op_idx = op_idx;
    l->k_width = k_width;
    return true;
  }
  if (str_is(kind, "slice")) {
    MlirAttribute p =
        mlirDictionaryAttrGetElementByName(attr, mlirStringRefCreateFromCString("parent"));
    MlirAttribute dim =
        mlirDictionaryAttrGetElementByName(attr, mlirStringRefCreateFromCString("dim"));
    if (mlirAttributeIsNull(p) || mlirAttributeIsNull(dim) || !mlirAttributeIsAInteger(dim) ||
        !(parse_blocked(p, l) || parse_mma(p, l))) {
      memset(l, 0, sizeof *l);
      return false;
    }
    l->parent = l->kind;
    l->kind = KILN_GPU_LAYOUT_SLICE;
    l->slice_dim = (int)mlirIntegerAttrGetValueInt(dim);
    return l->slice_dim >= 0 && l->slice_dim < l->rank;
  }
  return false;
}

KilnGpuLayout kiln_gpu_layout_of_type(MlirType t) {
  KilnGpuLayout l;
  memset(&l, 0, sizeof l);
  if (mlirTypeIsARankedTensor(t)) kiln_gpu_layout_parse(mlirRankedTensorTypeGetEncoding(t), &l);
  return l;
}

bool kiln_gpu_layout_equal(const KilnGpuLayout *a, const KilnGpuLayout *b) {
  if (a->kind != b->kind || a->parent != b->parent) return false;
  if (a->kind == KILN_GPU_LAYOUT_NONE) return true;
  if (a->rank != b->rank || (a->kind == KILN_GPU_LAYOUT_SLICE && a->slice_dim != b->slice_dim))
    return false;
  if (a->kind == KILN_GPU_LAYOUT_DOT_OP && (a->op_idx != b->op_idx || a->k_width != b->k_width))
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->spt[i] != b->spt[i] || a->tpw[i] != b->tpw[i] || a->wpc[i] != b->wpc[i] ||
        a->order[i] != b->order[i])
      return false;
  return true;
}

MlirType kiln_gpu_type_with_layout(MlirType t, const KilnGpuLayout *l) {
  if (!mlirTypeIsARankedTensor(t)) return t;
  int rank = kiln_ir_rank(t);
  int64_t shape[KILN_GPU_MAX_RANK];
  KILN_ASSERT(rank <= KILN_GPU_MAX_RANK);
  for (int i = 0; i < rank; i++) shape[i] = kiln_ir_dim(t, i);
  MlirAttribute enc = l->kind == KILN_GPU_LAYOUT_NONE
                          ? mlirAttributeGetNull()
                          : kiln_gpu_layout_attr(mlirTypeGetContext(t), l);
  return mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(t), enc);
}

KilnGpuLayout kiln_gpu_layout_blocked(int rank, const int64_t *shape, int num_warps, int vec,
                                      const int *order) {
  KilnGpuLayout l;
  memset(&l, 0, sizeof l);
  KILN_ASSERT(rank >= 1 && rank <= KILN_GPU_MAX_RANK);
  l.kind = KILN_GPU_LAYOUT_BLOCKED;
  l.rank = rank;
  for (int i = 0; i < rank; i++) {
    l.order[i] = order ? order[i] : rank - 1 - i;
    l.spt[i] = l.tpw[i] = l.wpc[i] = 1;
  }
  int o0 = l.order[0];
  if (vec < 1) vec = 1;
  while (vec > 1 && vec > shape[o0]) vec /= 2;
  l.spt[o0] = vec;
  /* Lanes first along the fastest dims, as far as the tile reaches; leftovers on the slowest
   * dim (they then hold copies, which is harmless for elementwise code). */
  int lanes = KILN_GPU_WARP;
  for (int k = 0; k < rank && lanes > 1; k++) {
    int d = l.order[k];
    int64_t room = shape[d] / l.spt[d];
    while (lanes > 1 && l.tpw[d] < room) {
      l.tpw[d] *= 2;
      lanes /= 2;
    }
  }
  l.tpw[l.order[rank - 1]] *= lanes;
  /* Warps: along the slowest dims first (rows of a 2-D tile), so each warp covers whole
   * contiguous runs of the fast dim. */
  int warps = num_warps < 1 ? 1 : num_warps;
  for (int k = rank - 1; k >= 0 && warps > 1; k--) {
    int d = l.order[k];
    int64_t room = shape[d] / ((int64_t)l.spt[d] * l.tpw[d]);
    while (warps > 1 && l.wpc[d] < room) {
      l.wpc[d] *= 2;
      warps /= 2;
    }
  }
  l.wpc[l.order[0]] *= warps;
  return l;
}

KilnGpuLayout kiln_gpu_layout_slice(const KilnGpuLayout *parent, int dim) {
  KILN_ASSERT(parent->kind == KILN_GPU_LAYOUT_BLOCKED || parent->kind == KILN_GPU_LAYOUT_MMA);
  KilnGpuLayout l = *parent;
  l.parent = parent->kind;
  l.kind = KILN_GPU_LAYOUT_SLICE;
  l.slice_dim = dim;
  return l;
}

KilnGpuLayout kiln_gpu_layout_slice_parent(const KilnGpuLayout *slice) {
  KILN_ASSERT(slice->kind == KILN_GPU_LAYOUT_SLICE);
  KilnGpuLayout l = *slice;
  l.kind = slice->parent;
  l.parent = KILN_GPU_LAYOUT_NONE;
  l.slice_dim = 0;
  return l;
}

bool kiln_gpu_mma_fits(const KilnGpuLayout *l, int rank, const int64_t *shape) {
  if (l->kind != KILN_GPU_LAYOUT_MMA || rank != 2) return false;
  for (int d = 0; d < 2; d++)
    if (shape[d] != 1 && shape[d] < (int64_t)(d == 0 ? 16 : 8) * l->wpc[d]) return false;
  return true;
}

/* ---------------------------------------------------------------- ownership */

static void dim_map(const KilnGpuLayout *l, int d, int64_t size, KilnGpuDimMap *m) {
  memset(m, 0, sizeof *m);
  m->spt = l->spt[d];
  m->tpw = l->tpw[d];
  m->wpc = l->wpc[d];
  m->extent = (int64_t)m->spt * m->tpw * m->wpc;
  m->size = size;
  int lane_shift = 0, warp_shift = 0;
  for (int k = 0; k < l->rank && l->order[k] != d; k++) {
    lane_shift += kiln_gpu_ilog2(l->tpw[l->order[k]]);
    warp_shift += kiln_gpu_ilog2(l->wpc[l->order[k]]);
  }
  m->lane_shift = lane_shift;
  m->lane_bits = kiln_gpu_ilog2(m->tpw);
  m->warp_shift = warp_shift;
  m->warp_bits = kiln_gpu_ilog2(m->wpc);
  m->lane_mul = m->spt;
  m->warp_mul = m->tpw * m->spt;
  m->elem_stride = 1;
  if (size >= m->extent) {
    m->n = (int)(m->spt * (size / m->extent));
    m->base_used = m->tpw * m->wpc > 1;
  } else if (size >= m->spt) {
    m->n = m->spt;
    m->base_used = m->tpw * m->wpc > 1;
  } else {
    m->n = (int)size;
    m->base_used = false;
  }
}

/* Rows (d = 0) and columns (d = 1) of an mma layout; the layout pass only picks it for tiles of
 * at least one 16x8 block per warp, or of size 1 along the dim (a row or column every thread
 * holds: expand_dims of a reduction's result, before it is broadcast back). */
static void mma_dim_map(const KilnGpuLayout *l, int d, int64_t size, KilnGpuDimMap *m) {
  memset(m, 0, sizeof *m);
  int block = d == 0 ? 16 : 8;
  m->spt = 2;
  m->tpw = d == 0 ? 8 : 4;
  m->wpc = l->wpc[d];
  m->extent = (int64_t)block * m->wpc;
  m->size = size;
  m->lane_mul = d == 0 ? 1 : 2;
  m->warp_mul = block;
  m->elem_stride = d == 0 ? 8 : 1;
  if (size == 1) {
    m->n = 1; /* every thread holds the one element: no lane or warp bits select it */
    return;
  }
  KILN_ASSERT(size >= m->extent);
  m->n = (int)(2 * (size / m->extent));
  m->base_used = true;
  m->lane_shift = d == 0 ? 2 : 0;
  m->lane_bits = d == 0 ? 3 : 2;
  m->warp_shift = d == 0 ? 0 : kiln_gpu_ilog2(l->wpc[0]);
  m->warp_bits = kiln_gpu_ilog2(m->wpc);
}

void kiln_gpu_own(const KilnGpuLayout *l, int rank, const int64_t *shape, KilnGpuOwn *o) {
  memset(o, 0, sizeof *o);
  o->rank = rank;
  o->count = 1;
  if (l->kind == KILN_GPU_LAYOUT_NONE || rank == 0) return;
  if (l->kind == KILN_GPU_LAYOUT_MMA) {
    KILN_ASSERT(rank == 2);
    for (int d = 0; d < 2; d++) {
      o->shape[d] = shape[d];
      mma_dim_map(l, d, shape[d], &o->dim[d]);
    }
    o->order[0] = 1;
    o->order[1] = 0;
    o->count = (int64_t)o->dim[0].n * o->dim[1].n;
    return;
  }
  if (l->kind == KILN_GPU_LAYOUT_DOT_OP) {
    /* Only counted: 32-bit registers, 4 per 16 x 8kWidth A block, 2 per 8kWidth x 8 B block of
     * the warp (k blocks of 16 for f16/bf16, kWidth 2; of 32 for i8, kWidth 4; of 8 for tf32,
     * kWidth 1). */
    KILN_ASSERT(rank == 2);
    for (int d = 0; d < 2; d++) {
      o->shape[d] = shape[d];
      o->dim[d].n = 1;
      o->order[d] = 1 - d;
    }
    if (l->op_idx == 0)
      o->count = shape[0] / (16 * l->wpc[0]) * (shape[1] / (8 * l->k_width)) * 4;
    else
      o->count = shape[1] / (8 * l->wpc[1]) * (shape[0] / (8 * l->k_width)) * 2;
    return;
  }
  bool mma_parent = l->kind == KILN_GPU_LAYOUT_SLICE && l->parent == KILN_GPU_LAYOUT_MMA;
  int k = 0;
  for (int p = 0; p < l->rank; p++) {
    if (l->kind == KILN_GPU_LAYOUT_SLICE && p == l->slice_dim) continue;
    KILN_ASSERT(k < rank);
    o->shape[k] = shape[k];
    if (mma_parent)
      mma_dim_map(l, p, shape[k], &o->dim[k]);
    else
      dim_map(l, p, shape[k], &o->dim[k]);
    k++;
  }
  KILN_ASSERT(k == rank);
  int n = 0;
  for (int i = 0; i < l->rank; i++) {
    int p = l->order[i];
    if (l->kind == KILN_GPU_LAYOUT_SLICE) {
      if (p == l->slice_dim) continue;
      if (p > l->slice_dim) p--;
    }
    o->order[n++] = p;
  }
  for (int d = 0; d < rank; d++) o->count *= o->dim[d].n;
}

void kiln_gpu_own_local(const KilnGpuOwn *o, int64_t j, int *local) {
  for (int i = 0; i < o->rank; i++) {
    int d = o->order[i];
    local[d] = (int)(j % o->dim[d].n);
    j /= o->dim[d].n;
  }
}

int64_t kiln_gpu_own_index(const KilnGpuOwn *o, const int *local) {
  int64_t j = 0;
  for (int i = o->rank - 1; i >= 0; i--) {
    int d = o->order[i];
    j = j * o->dim[d].n + local[d];
  }
  return j;
}

KilnGpuOwn kiln_gpu_own_of_type(MlirType t) {
  KilnGpuLayout l = kiln_gpu_layout_of_type(t);
  int rank = kiln_ir_rank(t);
  int64_t shape[KILN_GPU_MAX_RANK] = {0};
  for (int i = 0; i < rank && i < KILN_GPU_MAX_RANK; i++) shape[i] = kiln_ir_dim(t, i);
  KilnGpuOwn o;
  kiln_gpu_own(&l, rank, shape, &o);
  return o;
}

int64_t kiln_gpu_own_offset(const KilnGpuOwn *o, int d, int i) {
  const KilnGpuDimMap *m = &o->dim[d];
  if (m->size >= m->extent)
    return (int64_t)(i / m->spt) * m->extent + (int64_t)(i % m->spt) * m->elem_stride;
  return i;
}
